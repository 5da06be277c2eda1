//! The endpoint and the state folder as a privileged service keeps them: a
//! second plugin instance (a DaemonSet surge, an operator's test) stops at
//! start and touches neither the live instance's socket nor its journal; a
//! socket is the owner's alone; `tcp://` stays on loopback unless asked.

use csi_proxy_client::csi::{Listener, ServeError};

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
    let mut holder = std::process::Command::new("flock")
        .arg("--nonblock")
        .arg(state.join("instance.lock"))
        .args(["sleep", "30"])
        .spawn()
        .expect("util-linux's flock, to hold the lock from another process");
    // Wait until it holds it.
    std::thread::sleep(std::time::Duration::from_millis(300));
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
