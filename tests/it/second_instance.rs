//! The endpoint and the state folder as a privileged service keeps them: a
//! second plugin instance (a DaemonSet surge, an operator's test) stops at
//! start and touches neither the live instance's socket nor its journal; a
//! socket is the owner's alone; `tcp://` stays on loopback unless asked.

use csi_proxy_client::csi::{Listener, ServeError};

/// Held by the test whose sockets must close when dropped, and by the
/// tests that spawn a process: a child has a copy of every descriptor
/// until it runs its program, and answers on a listener meanwhile.
#[cfg(unix)]
static SPAWNS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn tcp_stays_on_loopback_unless_the_driver_opts_in() {
    let error = Listener::bind("tcp://0.0.0.0:0").await.unwrap_err();
    assert!(matches!(error, ServeError::Endpoint { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("not a loopback address"), "{text}");
    assert!(text.contains("Listener::bind_on_network"), "{text}");
    let local = Listener::bind("tcp://127.0.0.1:0").await.unwrap();
    assert!(local.endpoint().starts_with("tcp://127.0.0.1:"));
    let open = Listener::bind_on_network("tcp://0.0.0.0:0").await.unwrap();
    assert!(open.endpoint().starts_with("tcp://0.0.0.0:"));
}

#[cfg(unix)]
#[tokio::test]
async fn a_live_instances_socket_is_neither_taken_nor_removed() {
    let _alone = SPAWNS.lock().await;
    use csi_proxy_client::csi::{serve, Services};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("csi.sock");
    let endpoint = format!("unix://{}", socket.display());
    // A file someone put at the endpoint is neither replaced nor removed.
    std::fs::write(&socket, "not a socket").unwrap();
    let error = Listener::bind(&endpoint).await.unwrap_err();
    assert!(matches!(error, ServeError::Endpoint { .. }), "{error}");
    assert_eq!(std::fs::read(&socket).unwrap(), b"not a socket");
    std::fs::remove_file(&socket).unwrap();

    // The socket is made in a folder of its own (0700) and named with a
    // link once it is owner-only: no moment when others could reach it.
    let first = Listener::bind(&endpoint).await.unwrap();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the socket is the owner's alone");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "only the socket: {left:?}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve(first, Services::new(), async {
        let _ = stopped.await;
    }));

    // A second instance on the same endpoint stops, and says why.
    let inode = std::fs::metadata(&socket).unwrap().ino();
    let error = Listener::bind(&endpoint).await.unwrap_err().to_string();
    assert!(
        error.contains("another instance of the plugin serves"),
        "{error}"
    );
    assert_eq!(std::fs::metadata(&socket).unwrap().ino(), inode);
    assert!(std::os::unix::net::UnixStream::connect(&socket).is_ok());

    // A newer instance's socket (made after the first one's was removed
    // by hand) outlives the first instance's exit.
    std::fs::remove_file(&socket).unwrap();
    let newer = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    assert!(socket.exists(), "the newer instance's socket stays");
    drop(newer);

    // A stale socket (its server gone) is replaced, and removed at exit.
    let stale = Listener::bind(&endpoint).await.unwrap();
    serve(stale, Services::new(), async {}).await.unwrap();
    assert!(!socket.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn a_state_folder_another_process_holds_is_refused_untouched() {
    use csi_proxy_client::mount::Mounter;
    use csi_proxy_client::testing::{FakeHost, ProxyRelease};

    let host = FakeHost::builder().build();
    let node = crate::common::node::FakeNode::at(ProxyRelease::LATEST, &host).await;
    let proxy = node.client().await;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("instance.lock"), "4242\n").unwrap();
    // Another process (util-linux's flock) holds the folder's lock.
    let spawning = SPAWNS.lock().await;
    let mut holder = std::process::Command::new("flock")
        .arg("--nonblock")
        .arg(state.join("instance.lock"))
        .args(["sleep", "30"])
        .spawn()
        .expect("util-linux's flock, to hold the lock from another process");
    drop(spawning);
    // Wait until it holds it: the kernel's list of locks names the file's
    // inode.
    let inode = std::os::unix::fs::MetadataExt::ino(
        &std::fs::metadata(state.join("instance.lock")).unwrap(),
    );
    crate::common::wait_until("flock holds the folder's lock", || {
        let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
        locks
            .lines()
            .any(|lock| lock.contains("FLOCK") && lock.contains(&format!(":{inode} ")))
    })
    .await;
    let error = Mounter::builder(proxy, &state).build().unwrap_err();
    let _ = holder.kill();
    let _ = holder.wait();
    let text = error.to_string();
    assert!(
        matches!(error, csi_proxy_client::Error::Configuration { .. }),
        "{text}"
    );
    assert!(text.contains("in use by process 4242"), "{text}");
    assert!(text.contains(&state.display().to_string()), "{text}");
    // Nothing was written: no journal beside the lock.
    let names: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names, ["instance.lock"]);
}

/// A plugin of the tests' driver whose proxy (never there) is not waited
/// for: on Linux a fake proxy's sockets in an empty folder of `dir`.
fn plugin_on(
    dir: &std::path::Path,
) -> csi_proxy_client::csi::NodePlugin<crate::csi_service::TestDriver> {
    use crate::csi_service::TestDriver;
    use csi_proxy_client::csi::{NodePlugin, VolumeKind};
    let plugin = NodePlugin::new(TestDriver::of(&[VolumeKind::Disk]));
    #[cfg(unix)]
    let plugin = {
        let proxy = dir.join("proxy");
        std::fs::create_dir(&proxy).unwrap();
        let transport = csi_proxy_client::transport::Transport::unix_sockets(&proxy).unwrap();
        plugin.proxy(|proxy| proxy.transport(transport))
    };
    #[cfg(not(unix))]
    let _ = dir;
    plugin
}

/// A plugin whose state folder will not do (here a file is in its place;
/// another instance's lock does the same) stops there, before it makes
/// its socket or the socket's folder: nothing is left at the endpoint.
#[tokio::test]
async fn a_plugin_stops_at_its_state_folder_before_it_touches_the_socket() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::write(&state, "not a folder").unwrap();
    let socket = dir.path().join("csi.sock");
    let error = plugin_on(dir.path())
        .endpoint(format!("unix://{}", socket.display()))
        .state_dir(&state)
        .run()
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ServeError::Client(csi_proxy_client::Error::Configuration { .. })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("state"), "{error}");
    assert!(!socket.exists(), "a socket was made");
}

/// A second instance whose state folder another process holds stops at
/// the lock: it neither binds its own socket nor leaves one behind.
#[cfg(unix)]
#[tokio::test]
async fn a_second_instance_stops_at_the_lock_before_its_socket() {
    use std::io::BufRead;

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("instance.lock"), "4242\n").unwrap();
    // Another process (util-linux's flock) holds the lock, and says so.
    let spawning = SPAWNS.lock().await;
    let mut holder = std::process::Command::new("flock")
        .arg("--nonblock")
        .arg(state.join("instance.lock"))
        .args(["-c", "echo held; exec sleep 30"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux's flock, to hold the lock from another process");
    drop(spawning);
    let mut said = String::new();
    let out = holder.stdout.take().unwrap();
    std::io::BufReader::new(out).read_line(&mut said).unwrap();
    assert_eq!(said.trim(), "held");
    let socket = dir.path().join("csi.sock");
    let error = plugin_on(dir.path())
        .endpoint(format!("unix://{}", socket.display()))
        .state_dir(&state)
        .run()
        .await
        .unwrap_err();
    let _ = holder.kill();
    let _ = holder.wait();
    let text = error.to_string();
    assert!(text.contains("in use by process 4242"), "{text}");
    assert!(!socket.exists(), "the second instance made a socket");
}

/// kubelet's plugin folder is missing on a fresh node: the plugin makes
/// it (owner-only) and serves in it. One others may write to is refused;
/// kubelet's own (0755) will do.
#[cfg(unix)]
#[tokio::test]
async fn the_sockets_missing_folder_is_made_owner_only_and_a_shared_one_refused() {
    use csi_proxy_client::csi::{serve, Services};
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("plugins").join("test.csi");
    let socket = folder.join("csi.sock");
    let listener = Listener::bind(&format!("unix://{}", socket.display()))
        .await
        .unwrap();
    for made in [&folder, &dir.path().join("plugins")] {
        let mode = std::fs::metadata(made).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", made.display());
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve(listener, Services::new(), async {
        let _ = stopped.await;
    }));
    tokio::net::UnixStream::connect(&socket).await.unwrap();
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();

    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let endpoint = format!("unix://{}", shared.join("csi.sock").display());
    let error = Listener::bind(&endpoint).await.unwrap_err();
    assert!(matches!(error, ServeError::Endpoint { .. }), "{error}");
    let text = error.to_string();
    assert!(text.contains("the socket's folder"), "{text}");
    assert!(text.contains("others may write to it (mode 777)"), "{text}");
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);

    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
    Listener::bind(&endpoint).await.unwrap();
}

/// On Windows, only an AF_UNIX socket's reparse point at the endpoint is
/// taken for an earlier run's socket: a file or a link is left as it is.
#[cfg(windows)]
#[tokio::test]
async fn what_is_not_a_socket_at_the_endpoint_is_never_removed() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("csi.sock");
    let endpoint = format!("unix://{}", socket.display());
    std::fs::write(&socket, "a file").unwrap();
    let error = Listener::bind(&endpoint).await.unwrap_err().to_string();
    assert!(
        error.contains("is not a socket an earlier run left"),
        "{error}"
    );
    assert_eq!(std::fs::read(&socket).unwrap(), b"a file");
    std::fs::remove_file(&socket).unwrap();

    // A link (to a file of the test's) is a reparse point of another tag.
    let target = dir.path().join("target");
    std::fs::write(&target, "kept").unwrap();
    let linked = std::os::windows::fs::symlink_file(&target, &socket).and_then(|()| {
        let meta = std::fs::symlink_metadata(&socket)?;
        match meta.file_type().is_symlink() {
            true => Ok(()),
            false => Err(std::io::Error::other("it reads back as no link")),
        }
    });
    match linked {
        Ok(()) => {
            let error = Listener::bind(&endpoint).await.unwrap_err().to_string();
            assert!(
                error.contains("is not a socket an earlier run left"),
                "{error}"
            );
            assert!(
                std::fs::symlink_metadata(&socket).is_ok(),
                "the link was removed"
            );
        }
        // Links need a privilege Windows may not give the test (and Wine
        // makes Unix links, which do not read back as reparse points).
        Err(e) => eprintln!("no link could be made ({e}): the file's case alone"),
    }
}
