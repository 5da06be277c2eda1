//! csiproxyctl against a fake proxy it starts itself: over Unix sockets
//! here, and over named pipes when built for Windows.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_csiproxyctl");

/// `csiproxyctl fake` in the background, killed on drop.
struct Fake {
    child: Child,
    /// How the tool reaches it: `--socket-dir D` or `--pipe-prefix P`.
    endpoint: [String; 2],
    #[cfg(unix)]
    _dir: tempfile::TempDir,
}

impl Fake {
    /// A fake serving `versions` (`disk=v1,volume=v1beta2`).
    fn start(versions: &str) -> Fake {
        Self::serving(["--versions", versions])
    }

    /// A fake started with `what` (`--versions LIST` or `--release R`).
    #[cfg(unix)]
    fn serving(what: [&str; 2]) -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_str().unwrap().to_owned();
        let child = Self::spawn(&["--socket-dir", &path, "fake", what[0], what[1]]);
        Fake {
            child,
            endpoint: ["--socket-dir".into(), path],
            _dir: dir,
        }
    }

    #[cfg(windows)]
    fn serving(what: [&str; 2]) -> Fake {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let prefix = format!(
            r"\\.\pipe\csiproxyctl-test-{}-{}-",
            std::process::id(),
            STARTED.fetch_add(1, Ordering::Relaxed)
        );
        let child = Self::spawn(&["--pipe-prefix", &prefix, "fake", what[0], what[1]]);
        Fake {
            child,
            endpoint: ["--pipe-prefix".into(), prefix],
        }
    }

    /// The flags that reach the fake: its endpoints, and (on Windows,
    /// where its pipes are owned by the user running the tests) trust in
    /// that user.
    fn flags(&self) -> Vec<String> {
        let mut flags = self.endpoint.to_vec();
        if cfg!(windows) {
            flags.extend(["--trust-owner".into(), "me".into()]);
        }
        flags
    }

    /// Starts the fake and waits until it says it serves.
    fn spawn(args: &[&str]) -> Child {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("serving"), "{line}");
        child
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BIN);
        command.args(self.flags()).args(args);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs with `input` on standard input.
    fn run_with_input(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

fn failure(output: &Output, code: i32) -> String {
    assert_eq!(
        output.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
    stderr
}

/// `csiproxyctl fake` with bad `args`: refused as bad input; its message.
fn fake_refuses(args: &[&str]) -> String {
    // The endpoint is valid for the platform, so that only `args` is wrong.
    #[cfg(unix)]
    let endpoint = ["--socket-dir", "/tmp"];
    #[cfg(windows)]
    let endpoint = ["--pipe-prefix", r"\\.\pipe\csiproxyctl-refused-"];
    let output = Command::new(BIN)
        .args(endpoint)
        .arg("fake")
        .args(args)
        .output()
        .unwrap();
    failure(&output, 2)
}

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
    let first = &disks[0];
    assert_eq!(first["disk"], 1, "{disks}");
    for (part, value) in [("adapter", 1), ("bus", 0), ("target", 0), ("lun", 1)] {
        assert_eq!(first[part], value, "{part}: {disks}");
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

#[test]
fn errors_are_one_line_with_an_exit_code() {
    let fake = Fake::start("disk=v1beta1");
    let unsupported = failure(&fake.run(&["disk", "state", "1"]), 3);
    assert!(
        unsupported.contains("needs CSI Proxy API v1beta2"),
        "{unsupported}"
    );
    let not_served = failure(&fake.run(&["system", "bios-serial"]), 3);
    assert!(
        not_served.contains("does not serve the system API"),
        "{not_served}"
    );
    let bad_path = failure(&fake.run(&["fs", "exists", "relative"]), 3);
    assert!(bad_path.contains("filesystem"), "{bad_path}");
    let host = failure(&fake.run(&["disk", "stats", "9"]), 1);
    assert!(host.contains("disk 9 not found"), "{host}");
    let bad_version = fake_refuses(&["--versions", "disk=v9"]);
    assert!(bad_version.contains("disk v9"), "{bad_version}");
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

#[test]
fn usage_errors_are_one_json_document_under_json() {
    for args in [
        &["--json", "--bogus"][..],
        &["--json", "disk", "lst"],
        &["--json", "disk"],
    ] {
        let output = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let error: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {:?}", output.stdout));
        assert_eq!(error["error"]["kind"], "usage", "{error}");
        assert_eq!(error["error"]["exit_code"], 2, "{error}");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("--bogus") || message.contains("lst") || message.contains("missing"),
            "{message}"
        );
        // Without --json, clap's usage on standard error, nothing on stdout.
        let plain: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        let output = Command::new(BIN).args(&plain).output().unwrap();
        assert_eq!(output.status.code(), Some(2));
        assert!(output.stdout.is_empty());
        assert!(String::from_utf8_lossy(&output.stderr).contains("Usage:"));
    }
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

#[test]
fn failures_are_json_under_json() {
    let fake = Fake::start("disk=v1");
    let output = fake.run(&["--json", "disk", "stats", "9"]);
    assert_eq!(output.status.code(), Some(1));
    let error: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["error"]["kind"], "not_found");
    assert!(error["error"]["message"]
        .as_str()
        .unwrap()
        .contains("disk 9"));
}

/// Runs `args` with `--json`; the failure's `error` object, after checking
/// the exit code.
fn json_failure(fake: &Fake, args: &[&str], code: i32) -> serde_json::Value {
    let output = fake.run(&[&["--json"][..], args].concat());
    assert_eq!(output.status.code(), Some(code), "{args:?}");
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(document["error"]["exit_code"], code, "{document}");
    document["error"].clone()
}

#[test]
fn a_missing_thing_is_not_found_and_a_known_cause_is_named() {
    let fake = Fake::start("disk=v1,smb=v1,filesystem=v1");
    // A disk the node does not have: not_found, exit 1 as every failure
    // on the host; the text says so too.
    let missing = json_failure(&fake, &["disk", "state", "7"], 1);
    assert_eq!(missing["kind"], "not_found", "{missing}");
    assert!(missing.get("cause").is_none(), "no cause named: {missing}");
    let line = failure(&fake.run(&["disk", "state", "7"]), 1);
    assert!(line.contains("disk 7 not found"), "{line}");
    let missing = json_failure(&fake, &["disk", "partition", "7", "--yes"], 1);
    assert_eq!(missing["kind"], "not_found", "{missing}");

    // A share the server lacks is not found, with Windows' cause; a server
    // that does not answer is a host failure, not "not found".
    let map = |share: &'static str| {
        let output = fake
            .command(&["--json", "smb", "map", share, "--user", "csi", "--yes"])
            .env("CSIPROXYCTL_SMB_PASSWORD", "fake-password")
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{share}");
        let document: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        document["error"].clone()
    };
    let no_share = map(r"\\fileserver\nosuch");
    assert_eq!(no_share["kind"], "not_found", "{no_share}");
    assert_eq!(no_share["cause"], "network_name_not_found", "{no_share}");
    let no_server = map(r"\\otherserver\data");
    assert_eq!(no_server["kind"], "host", "{no_server}");
    assert_eq!(no_server["cause"], "network_path_not_found", "{no_server}");

    // A path that is not there.
    let no_path = json_failure(
        &fake,
        &["fs", "rmdir", r"C:\var\lib\kubelet\nothing", "--yes"],
        1,
    );
    assert_eq!(no_path["kind"], "not_found", "{no_path}");
    assert_eq!(no_path["cause"], "path_not_found", "{no_path}");

    // A host failure with no cause known stays `host`, without `cause`.
    stdout(&fake.run(&["disk", "offline", "1", "--yes"]));
    let offline = json_failure(&fake, &["disk", "partition", "1", "--yes"], 1);
    assert_eq!(offline["kind"], "host", "{offline}");
    assert!(offline.get("cause").is_none(), "{offline}");
    let line = failure(&fake.run(&["disk", "partition", "1", "--yes"]), 1);
    assert!(!line.contains("cause"), "{line}");
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
    let disk = &disks[0];
    assert_eq!(disk["disk"], 4, "{disks}");
    assert_eq!(disk["adapter"], "iscsi", "{disks}");
    assert_eq!(disk["bus"], "", "{disks}");
    assert_eq!(disk["target"], 3, "{disks}");
    assert_eq!(disk["lun"], "01", "a number written otherwise: {disks}");
    fake.stop_all().await;
}

#[cfg(unix)]
#[test]
fn without_a_socket_folder_the_tool_says_which_flag_to_give() {
    let output = Command::new(BIN).args(["probe"]).output().unwrap();
    let message = failure(&output, 2);
    assert!(message.contains("--socket-dir"), "{message}");
}
