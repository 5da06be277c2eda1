//! The group commands: reads print tables or JSON, mutations need `--yes`,
//! and an SMB password comes from the environment or standard input only,
//! never from the command line.

#[cfg(unix)]
use std::process::Command;

#[cfg(unix)]
use super::BIN;
use super::{failure, stdout, Fake};

#[test]
fn reads_print_tables_and_json() {
    let fake = Fake::start("disk=v1,volume=v1beta2,filesystem=v1,system=v1alpha1,iscsi=v1alpha2");
    let out = stdout(&fake.run(&["disk", "list"]));
    let header = out.lines().next().unwrap();
    assert!(
        header.starts_with("DISK") && header.contains("PAGE83"),
        "{out}"
    );
    assert!(out.contains("Google  pd-data"), "{out}");
    // Numbers are numbers in JSON, the location's parts as the disk's.
    let disks: serde_json::Value =
        serde_json::from_str(&stdout(&fake.run(&["--json", "disk", "list"]))).unwrap();
    let numbered = |n: u32| {
        let all = disks.as_array().expect("a list");
        all.iter().find(|disk| disk["disk"] == n).cloned()
    };
    // The node's OS disk first, on the boot adapter; then the data disks.
    let os = numbered(0).expect("the OS disk");
    assert_eq!(
        (&os["page83"], &os["adapter"]),
        (&"node-os-disk".into(), &0.into())
    );
    let data = numbered(1).expect("disk 1");
    for (part, value) in [("adapter", 1), ("bus", 0), ("target", 0), ("lun", 1)] {
        assert_eq!(data[part], value, "{part}: {disks}");
    }
    let stats: serde_json::Value =
        serde_json::from_str(&stdout(&fake.run(&["--json", "disk", "stats", "2"]))).unwrap();
    assert_eq!(stats["total_bytes"], 20u64 << 30);
    assert!(stdout(&fake.run(&["disk", "state", "1"])).contains("true"));
    assert!(stdout(&fake.run(&["system", "bios-serial"])).contains("FAKE-BIOS"));
    let service = stdout(&fake.run(&["system", "service", "csiproxy"]));
    assert!(
        service.contains("Running") && service.contains("Automatic"),
        "{service}"
    );
    assert!(stdout(&fake.run(&["fs", "exists", r"C:\var\lib\kubelet"])).contains("true"));
    assert!(stdout(&fake.run(&["iscsi", "portals"])).starts_with("ADDRESS"));
    assert_eq!(
        stdout(&fake.run(&["volume", "list", "--disk", "1"])).trim(),
        "VOLUME"
    );
}

#[test]
fn mutations_need_yes_and_then_change_the_host() {
    let fake = Fake::start("disk=v1,volume=v1,filesystem=v1");
    let refused = failure(&fake.run(&["disk", "partition", "1"]), 2);
    assert!(refused.contains("--yes"), "{refused}");
    assert_eq!(
        stdout(&fake.run(&["volume", "list", "--disk", "1"]))
            .lines()
            .count(),
        1,
        "nothing changed"
    );

    // A change says what it did in one line, with no header above it.
    assert_eq!(
        stdout(&fake.run(&["disk", "partition", "1", "--yes"])),
        "disk 1 partitioned\n"
    );
    let done: serde_json::Value = serde_json::from_str(&stdout(
        &fake.run(&["--json", "disk", "online", "1", "--yes"]),
    ))
    .unwrap();
    assert_eq!(done, serde_json::json!({ "done": "disk 1 online" }));
    let volumes: Vec<String> = serde_json::from_str(&stdout(
        &fake.run(&["--json", "volume", "list", "--disk", "1"]),
    ))
    .unwrap();
    assert_eq!(volumes.len(), 1);
    stdout(&fake.run(&["volume", "format", &volumes[0], "--yes"]));
    stdout(&fake.run(&["fs", "mkdir", r"C:\var\lib\kubelet\mnt", "--yes"]));
    stdout(&fake.run(&[
        "volume",
        "mount",
        &volumes[0],
        r"C:\var\lib\kubelet\mnt",
        "--yes",
    ]));
    assert!(stdout(&fake.run(&["fs", "is-symlink", r"C:\var\lib\kubelet\mnt"])).contains("true"));
    let stats = stdout(&fake.run(&["volume", "stats", &volumes[0]]));
    assert!(stats.contains("true"), "formatted: {stats}");
}

#[test]
fn smb_map_takes_the_password_from_the_environment_or_stdin_only() {
    let fake = Fake::start("smb=v1,filesystem=v1");
    let share = r"\\fileserver\data";
    let link = r"C:\var\lib\kubelet\smb";
    let map = ["smb", "map", share, "--user", "csi", "--yes"];

    let refused = failure(&fake.run(&["smb", "map", share, "--user", "csi"]), 2);
    assert!(refused.contains("--yes"), "{refused}");
    let no_password = failure(
        &fake
            .command(&map)
            .env_remove("CSIPROXYCTL_SMB_PASSWORD")
            .output()
            .unwrap(),
        2,
    );
    assert!(
        no_password.contains("CSIPROXYCTL_SMB_PASSWORD"),
        "{no_password}"
    );
    let denied = failure(
        &fake
            .command(&map)
            .env("CSIPROXYCTL_SMB_PASSWORD", "wrong-password")
            .output()
            .unwrap(),
        1,
    );
    assert!(
        denied.contains("user name or password is incorrect") && !denied.contains("wrong-password"),
        "{denied}"
    );
    assert!(
        denied.trim_end().ends_with("(cause: logon_failure)"),
        "{denied}"
    );
    // With --json, the cause a script acts on: the secret must change.
    let output = fake
        .command(&[&["--json"][..], &map].concat())
        .env("CSIPROXYCTL_SMB_PASSWORD", "wrong-password")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["error"]["kind"], "host", "{error}");
    assert_eq!(error["error"]["cause"], "logon_failure", "{error}");
    assert_eq!(error["error"]["exit_code"], 1, "{error}");

    let mut with_link = map.to_vec();
    with_link.extend(["--link", link, "--password-stdin"]);
    stdout(&fake.run_with_input(&with_link, "fake-password\n"));
    assert!(stdout(&fake.run(&["fs", "is-symlink", link])).contains("true"));
    stdout(
        &fake
            .command(&map)
            .env("CSIPROXYCTL_SMB_PASSWORD", "fake-password")
            .output()
            .unwrap(),
    );

    stdout(&fake.run(&["smb", "unmap", share, "--yes"]));
    let gone = failure(&fake.run(&["smb", "unmap", share, "--yes"]), 1);
    assert!(gone.contains("not found"), "{gone}");
    let gone: serde_json::Value =
        serde_json::from_slice(&fake.run(&["--json", "smb", "unmap", share, "--yes"]).stdout)
            .unwrap();
    assert_eq!(gone["error"]["kind"], "not_found", "{gone}");
}

/// A proxy that reports a disk's location in words keeps them: strings
/// where it wrote no number, numbers where it did.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disk_locations_keep_text_the_proxy_wrote() {
    use csi_proxy_client::api::DiskLocation;
    use csi_proxy_client::testing::{FakeDisk, FakeHost, FakeProxy};
    use csi_proxy_client::{transport::Transport, ApiGroup, ApiVersion};

    let dir = tempfile::tempdir().unwrap();
    let location = DiskLocation {
        adapter: "iscsi".into(),
        bus: String::new(),
        target: "3".into(),
        lun_id: "01".into(),
    };
    let host = FakeHost::builder()
        .custom_disk(4, FakeDisk::new("iscsi  lun-1", 1 << 30, location))
        .build();
    let mut fake = FakeProxy::for_host(Transport::unix_sockets(dir.path()).unwrap(), &host);
    fake.serve_all([(ApiGroup::Disk, ApiVersion::V1)])
        .await
        .unwrap();
    let socket_dir = dir.path().to_str().unwrap().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(["--socket-dir", &socket_dir, "--json", "disk", "list"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let disks: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    let disk = (disks.as_array().unwrap().iter())
        .find(|disk| disk["disk"] == 4)
        .expect("disk 4");
    assert_eq!(disk["adapter"], "iscsi", "{disks}");
    assert_eq!(disk["bus"], "", "{disks}");
    assert_eq!(disk["target"], 3, "{disks}");
    assert_eq!(disk["lun"], "01", "a number written otherwise: {disks}");
    fake.stop_all().await;
}
