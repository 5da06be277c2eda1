//! csiproxyctl against a fake proxy it starts itself: over Unix sockets
//! here, and over named pipes when built for Windows.

mod commands;
mod errors;
mod probe;

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
