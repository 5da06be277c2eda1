//! Failures as scripts read them: one line and an exit code, or one JSON
//! document under `--json`, with the kind and any cause Windows gave.

use std::process::Command;

use super::{failure, fake_refuses, stdout, Fake, BIN};

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
