//! `probe` and `fake`: what the tool finds on a node and how it waits for
//! a proxy that starts later, and the fake that stands in for a proxy or a
//! release of one, telling where it serves.

#[cfg(unix)]
use std::io::{BufRead, BufReader};
#[cfg(unix)]
use std::process::{Command, Stdio};

#[cfg(unix)]
use super::BIN;
use super::{failure, fake_refuses, stdout, Fake};

#[test]
fn probe_shows_pipes_versions_and_operations() {
    let fake = Fake::start("disk=v1beta2,disk=v1beta1,volume=v1,system=v1alpha1");
    let out = stdout(&fake.run(&["probe"]));
    // The column is named by what the endpoints are.
    let header = out.lines().next().unwrap();
    let column = if cfg!(windows) { "PIPE" } else { "SOCKET" };
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["GROUP", column, "RESULT"],
        "{out}"
    );
    assert!(
        out.contains("csi-proxy-disk-v1 ") && out.contains("absent"),
        "{out}"
    );
    assert!(
        out.contains("csi-proxy-disk-v1beta2") && out.contains("connected"),
        "{out}"
    );
    assert!(
        out.contains("GetDiskNumberByName (emulated)"),
        "emulated on v1beta2: {out}"
    );
    assert!(out.contains("SetDiskState"), "{out}");
    let smb_line = out.lines().rev().find(|l| l.starts_with("smb")).unwrap();
    assert!(smb_line.contains("not served"), "{smb_line}");

    let json: serde_json::Value =
        serde_json::from_str(&stdout(&fake.run(&["probe", "--json"]))).unwrap();
    let disk = &json["groups"][0];
    assert_eq!(disk["group"], "disk");
    assert_eq!(disk["chosen"], "v1beta2");
    assert_eq!(disk["attempts"].as_array().unwrap().len(), 3);
    let ops = disk["operations"].as_array().unwrap();
    let stats = ops.iter().find(|o| o["name"] == "GetDiskStats").unwrap();
    assert_eq!(stats["rpc"], "DiskStats");
    assert_eq!(json["groups"][2]["chosen"], serde_json::Value::Null);
}

#[test]
fn a_fake_stands_in_for_a_release() {
    let fake = Fake::serving(["--release", "v0.2.2"]);
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&fake.run(&["probe", "--json"]))).unwrap();
    let chosen: Vec<(String, String)> = json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["group"].to_string(), g["chosen"].to_string()))
        .collect();
    let expected = [
        ("disk", "v1beta2"),
        ("filesystem", "v1beta1"),
        ("smb", "v1beta1"),
        ("volume", "v1beta2"),
        ("iscsi", "v1alpha1"),
        ("system", "v1alpha1"),
    ]
    .map(|(g, v)| (format!("{g:?}"), format!("{v:?}")));
    assert_eq!(chosen, expected);

    for unknown in ["v0.x", "v9.9.9", "v0.0.1"] {
        let bad = fake_refuses(&["--release", unknown]);
        assert!(bad.contains("release"), "{unknown}: {bad}");
    }
}

#[cfg(unix)]
#[test]
fn probe_waits_for_a_proxy_that_starts_later() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap().to_owned();
    let probe = Command::new(BIN)
        .args(["--socket-dir", &path, "--wait", "20", "probe", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let mut fake = Fake::spawn(&["--socket-dir", &path, "fake", "--versions", "disk=v1"]);
    let out = probe.wait_with_output().unwrap();
    let _ = fake.kill();
    let _ = fake.wait();
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let disk = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "disk")
        .unwrap();
    assert_eq!(disk["chosen"], "v1", "{report}");
}

#[test]
fn probe_exits_with_what_scripts_need() {
    let fake = Fake::start("disk=v1,volume=v1");
    stdout(&fake.run(&["probe", "disk", "volume"]));
    let missing = failure(&fake.run(&["probe", "disk", "smb"]), 3);
    assert!(missing.contains("smb"), "{missing}");

    // Under --json, one document: the report, with the error in it.
    let output = fake.run(&["--json", "probe", "iscsi"]);
    assert_eq!(output.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["transport"]["kind"].is_string(), "{report}");
    assert_eq!(report["groups"][0]["chosen"], "v1", "{report}");
    assert_eq!(report["error"]["kind"], "not_served");
    assert_eq!(report["error"]["exit_code"], 3);
}

#[cfg(unix)]
#[test]
fn the_fake_makes_its_socket_folder_and_says_where_it_serves() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("not").join("yet");
    let path = missing.to_str().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "--socket-dir",
            path,
            "--json",
            "fake",
            "--versions",
            "disk=v1",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    // With --json, the banner is one JSON document.
    let banner: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        banner["serving"],
        serde_json::json!(["disk=v1"]),
        "{banner}"
    );
    assert_eq!(banner["transport"]["dir"], path, "{banner}");
    assert!(missing.join("csi-proxy-disk-v1").exists());
}

#[cfg(unix)]
#[test]
fn without_a_socket_folder_the_tool_says_which_flag_to_give() {
    let output = Command::new(BIN).args(["probe"]).output().unwrap();
    let message = failure(&output, 2);
    assert!(message.contains("--socket-dir"), "{message}");
}
