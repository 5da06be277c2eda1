//! The squatters of the trust tests: servers at an endpoint owned by
//! someone else than the proxy, and where they and a proxy can meet.

#[cfg(windows)]
use std::sync::{Arc, Mutex};
#[cfg(unix)]
use std::time::Duration;

use csi_proxy_client::testing::FakeHost;
use csi_proxy_client::{
    api::{Secret, SmbMapping, SmbRemotePath},
    transport::Transport,
    ApiGroup, ApiVersion as V,
};
#[cfg(windows)]
use csi_proxy_client::{testing::LocalEndpoints, Error};

/// The user the squatters run as on Unix.
#[cfg(unix)]
pub(super) const NOBODY: u32 = 65534;

pub(super) const PASSWORD: &str = "squat-pa55";

/// A server at one endpoint that is not the proxy: it records every
/// byte it is sent.
pub(super) struct Squatter {
    #[cfg(windows)]
    received: Arc<Mutex<Vec<u8>>>,
    #[cfg(unix)]
    child: std::process::Child,
    #[cfg(unix)]
    log: std::path::PathBuf,
    #[cfg(windows)]
    _task: tokio::task::JoinHandle<()>,
}

impl Squatter {
    /// Everything sent to it so far.
    pub(super) fn received(&self) -> Vec<u8> {
        #[cfg(unix)]
        {
            std::fs::read(&self.log).unwrap_or_default()
        }
        #[cfg(windows)]
        {
            self.received.lock().unwrap().clone()
        }
    }
}

#[cfg(unix)]
impl Drop for Squatter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether this process may start processes as another user; the
/// tests that need it pass over (saying so) when it may not.
#[cfg(unix)]
pub(super) fn can_run_as_another_user() -> bool {
    let root = is_root();
    if !root {
        eprintln!("not root: no process of another user can be started; passed over");
    }
    root
}

/// Whether this process runs as root.
#[cfg(unix)]
pub(super) fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A command that runs the program `exe` as user `nobody`, from a copy
/// at `{at}.exe` in a folder every user may reach (the build's own
/// folders may be closed to `nobody`).
#[cfg(unix)]
pub(super) fn as_nobody(exe: &std::path::Path, at: &str) -> std::process::Command {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let copy = std::path::PathBuf::from(format!("{at}.exe"));
    std::fs::copy(exe, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut command = std::process::Command::new(copy);
    command
        .uid(NOBODY)
        .gid(NOBODY)
        .stdout(std::process::Stdio::null());
    command
}

/// Runs the ignored test `name` of this test binary again, as user
/// `nobody`, and fails unless it ran and passed: for the checks that
/// root, let in everywhere, would pass for the wrong reason.
#[cfg(unix)]
pub(super) fn pass_as_nobody(name: &str) {
    let place = shared_dir();
    let at = place.path().join("tests");
    let out = as_nobody(&std::env::current_exe().unwrap(), at.to_str().unwrap())
        .args(["--ignored", "--exact", name])
        // Its own temporary files go where `nobody` may write.
        .env("TMPDIR", place.path())
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let said = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, as nobody:\n{said}"
    );
}

/// A socket directory that user `nobody` may create sockets in.
#[cfg(unix)]
pub(super) fn shared_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

/// Starts a squatter at `group` `version` of `transport`: this test
/// binary again, as user `nobody`, running `squatter_process`. Always
/// there (`None` only on Windows, see there).
#[cfg(unix)]
pub(super) async fn squat(transport: &Transport, group: ApiGroup, version: V) -> Option<Squatter> {
    let address = transport.address(group, version);
    let log = std::path::PathBuf::from(format!("{address}.log"));
    let child = as_nobody(&std::env::current_exe().unwrap(), &address)
        .args([
            "--ignored",
            "--exact",
            "negotiation::trust::squatters::squatter_process",
        ])
        .env("CSI_SQUAT_AT", &address)
        .env("CSI_SQUAT_LOG", &log)
        .spawn()
        .unwrap();
    for _ in 0..500 {
        if std::path::Path::new(&address).exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        std::path::Path::new(&address).exists(),
        "no squatter at {address}"
    );
    Some(Squatter { child, log })
}

/// The squatter of [`squat`], in a process of its own: listens at
/// `CSI_SQUAT_AT` and appends what it reads to `CSI_SQUAT_LOG`.
#[cfg(unix)]
#[test]
#[ignore = "run by the squatter tests, as another user"]
fn squatter_process() {
    use std::io::{Read, Write};
    let at = std::env::var("CSI_SQUAT_AT").expect("CSI_SQUAT_AT");
    let log = std::env::var("CSI_SQUAT_LOG").expect("CSI_SQUAT_LOG");
    let listener = std::os::unix::net::UnixListener::bind(&at).unwrap();
    std::fs::File::create(&log).unwrap();
    for stream in listener.incoming() {
        let mut stream = stream.unwrap();
        let mut buffer = [0u8; 4096];
        while let Ok(n @ 1..) = stream.read(&mut buffer) {
            let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            file.write_all(&buffer[..n]).unwrap();
        }
    }
}

/// The owner a Windows squatter's pipe claims: a user of no one's.
#[cfg(windows)]
pub(super) const SQUATTER_SID: &str = "S-1-5-21-1-2-3-1001";

/// A squatter at `group` `version` of `transport`: a pipe that claims
/// a user of no one's as its owner. `None`, saying why, where the
/// system refuses that owner (Windows, without `SeRestorePrivilege`).
#[cfg(windows)]
pub(super) async fn squat(transport: &Transport, group: ApiGroup, version: V) -> Option<Squatter> {
    use tokio::io::AsyncReadExt;
    let mut incoming = listen_claiming(transport, group, version, SQUATTER_SID).await?;
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = received.clone();
    let task = tokio::spawn(async move {
        use tokio_stream::StreamExt;
        while let Some(Ok(mut stream)) = incoming.next().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(n @ 1..) = stream.read(&mut buffer).await {
                    log.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            });
        }
    });
    Some(Squatter {
        received,
        _task: task,
    })
}

/// `ERROR_INVALID_OWNER`: the owner named is not one the process may
/// give an object.
#[cfg(windows)]
pub(super) const ERROR_INVALID_OWNER: i32 = 1307;

/// Whether `error` is Windows refusing the owner a pipe was to have.
#[cfg(windows)]
pub(super) fn is_invalid_owner(error: &Error) -> bool {
    match error {
        Error::Transport { source, .. } => {
            let os = source.downcast_ref::<std::io::Error>();
            os.and_then(std::io::Error::raw_os_error) == Some(ERROR_INVALID_OWNER)
        }
        _ => false,
    }
}

/// Listens at `group` `version` with pipes that claim `sid` as their
/// owner: `None`, saying so, where the system refuses that owner.
#[cfg(windows)]
pub(super) async fn listen_claiming(
    transport: &Transport,
    group: ApiGroup,
    version: V,
    sid: &str,
) -> Option<csi_proxy_client::testing::Incoming> {
    match csi_proxy_client::testing::listen_owned_by(transport, group, version, sid).await {
        Ok(incoming) => Some(incoming),
        Err(e) if is_invalid_owner(&e) => {
            eprintln!(
                "Windows refuses a pipe owned by {sid} to this process (ERROR_INVALID_OWNER, \
                 1307: only Wine, or a process with SeRestorePrivilege enabled, may name \
                 that owner); passed over"
            );
            None
        }
        Err(e) => panic!("a pipe owned by {sid}: {e}"),
    }
}

/// Where a proxy and squatters can meet: a socket directory that user
/// `nobody` may use (Unix; `None` when no process of another user can
/// be started), or pipes under a prefix of their own (Windows). The
/// first value keeps the place.
#[cfg(unix)]
pub(super) fn place_for_squatters() -> Option<(tempfile::TempDir, Transport)> {
    if !can_run_as_another_user() {
        return None;
    }
    let dir = shared_dir();
    let transport = Transport::unix_sockets(dir.path()).unwrap();
    Some((dir, transport))
}

#[cfg(windows)]
pub(super) fn place_for_squatters() -> Option<(LocalEndpoints, Transport)> {
    let endpoints = LocalEndpoints::new().unwrap();
    let transport = endpoints.transport();
    Some((endpoints, transport))
}

pub(super) fn host() -> FakeHost {
    FakeHost::builder()
        .disk(1, "pd-1", 1 << 30)
        .smb_share(r"\\files\share", "user", PASSWORD)
        .build()
}

pub(super) fn mapping() -> SmbMapping {
    SmbMapping::new(
        SmbRemotePath::new(r"\\files\share").unwrap(),
        "user",
        Secret::new(PASSWORD),
    )
}

/// Kills a child process on drop.
#[cfg(unix)]
pub(super) struct ChildGuard(pub(super) std::process::Child);

#[cfg(unix)]
impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
