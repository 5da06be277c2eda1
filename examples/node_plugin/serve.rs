//! `node_plugin serve ...`: the plugin as kubelet runs it, serving CSI on
//! the endpoint kubelet gives and talking to CSI Proxy (or a fake one, or
//! the host itself) through the SDK.

use std::path::PathBuf;
use std::time::Duration;

use csi_proxy_client::mount::Mounter;
use csi_proxy_client::transport::{ServerTrust, Transport};
use csi_proxy_client::{Backend, CsiProxy};
use tonic::transport::Server;

use crate::controller::TestController;
use crate::csi::{
    controller_server::ControllerServer, identity_server::IdentityServer, node_server::NodeServer,
};
use crate::plugin::{Kind, Plugin};

const USAGE: &str = "\
usage: node_plugin serve --endpoint unix://PATH | tcp://127.0.0.1:PORT [options]

  --endpoint E           where to serve CSI: unix:// (kubelet's, Unix or Windows) or tcp:// (loopback)
  --node-id ID           this node's ID (default: the host's name)
  --kind disk|smb        the volumes served (default: disk)
  --state-dir DIR        the mounter's journal (default: C:\\var\\lib\\kubelet\\plugins\\<driver>\\mounter)
  --controller           also serve the test controller (csi-sanity)
  --socket-dir DIR       CSI Proxy's endpoints as Unix sockets in DIR (a fake proxy)
  --pipe-prefix PREFIX   CSI Proxy's pipes under another prefix (a fake proxy on Windows)
  --trust-current-user   trust a proxy run by this user (a fake proxy)
  --host                 no CSI Proxy: do the work in-process (HostProcess, feature host-process)";

/// What `serve` was told.
struct Options {
    endpoint: String,
    node_id: String,
    kind: Kind,
    state_dir: PathBuf,
    controller: bool,
    socket_dir: Option<PathBuf>,
    pipe_prefix: Option<String>,
    trust_current_user: bool,
    host: bool,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        endpoint: String::new(),
        node_id: hostname(),
        kind: Kind::Disk,
        state_dir: PathBuf::from(format!(
            r"C:\var\lib\kubelet\plugins\{}\mounter",
            crate::plugin::DRIVER_NAME
        )),
        controller: false,
        socket_dir: None,
        pipe_prefix: None,
        trust_current_user: false,
        host: false,
    };
    let mut args = args.iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().cloned().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--help" | "-h" => return Err(String::new()),
            "--endpoint" => options.endpoint = value()?,
            "--node-id" => options.node_id = value()?,
            "--kind" => {
                options.kind = match value()?.as_str() {
                    "disk" => Kind::Disk,
                    "smb" => Kind::Smb,
                    other => return Err(format!("--kind {other}: disk or smb")),
                }
            }
            "--state-dir" => options.state_dir = value()?.into(),
            "--controller" => options.controller = true,
            "--socket-dir" => options.socket_dir = Some(value()?.into()),
            "--pipe-prefix" => options.pipe_prefix = Some(value()?),
            "--trust-current-user" => options.trust_current_user = true,
            "--host" => options.host = true,
            other => return Err(format!("unknown option {other}")),
        }
    }
    if options.endpoint.is_empty() {
        return Err("--endpoint is missing".into());
    }
    Ok(options)
}

fn hostname() -> String {
    std::env::var("COMPUTERNAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| "node-1".to_owned())
}

/// The SDK's way to the proxy the options name.
fn transport(options: &Options) -> Result<Transport, Box<dyn std::error::Error>> {
    let transport = match (&options.socket_dir, &options.pipe_prefix) {
        #[cfg(unix)]
        (Some(dir), _) => Transport::unix_sockets(dir)?,
        #[cfg(not(unix))]
        (Some(_), _) => return Err("--socket-dir needs Unix sockets; use --pipe-prefix".into()),
        (None, Some(prefix)) => Transport::named_pipes_with_prefix(prefix)?,
        (None, None) => Transport::named_pipes(),
    };
    let mut trust = ServerTrust::default();
    if options.trust_current_user {
        trust = trust.trust_current_user()?;
    }
    Ok(transport.trusting(trust))
}

pub async fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let options = match options(args) {
        Ok(options) => options,
        Err(why) if why.is_empty() => {
            println!("{USAGE}");
            return Ok(());
        }
        Err(why) => return Err(format!("{why}\n{USAGE}").into()),
    };
    // Bound first: an endpoint that cannot be served stops the start at
    // once, before the proxy and the journal. kubelet's connections wait
    // in the backlog until serving starts.
    let listener = Listener::bind(&options.endpoint).await?;
    let mut builder = CsiProxy::builder()
        .transport(transport(&options)?)
        // The proxy may start after the plugin; calls wait for it within
        // their deadlines, and Probe says whether it is there.
        .wait_for_proxy(Duration::ZERO);
    if options.host {
        builder = builder.backend(Backend::Host);
    }
    let proxy = builder.connect().await?;
    let mounter = Mounter::builder(proxy.clone(), &options.state_dir).build()?;
    // Before serving kubelet: finish what a crash or a reboot left half
    // done. Which volumes are live is the cloud's to say; this example
    // keeps every lease but those of the test controller's work on a share
    // (a stage left behind by a crash), which it drops.
    let report = mounter
        .reconcile(|volume| !crate::controller::is_work_volume(volume))
        .await?;
    eprintln!("node_plugin: reconciled: {report:?}");

    let plugin = || Plugin {
        mounter: mounter.clone(),
        node_id: options.node_id.clone(),
        kind: options.kind,
        with_controller: options.controller,
    };
    let controller = options.controller.then(|| {
        ControllerServer::new(TestController::new(
            proxy.clone(),
            mounter.clone(),
            options.node_id.clone(),
            options.kind,
        ))
    });
    let router = Server::builder()
        .add_service(IdentityServer::new(plugin()))
        .add_service(NodeServer::new(plugin()))
        .add_optional_service(controller);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let serving_on = match &listener {
        // With the port the system chose for `tcp://...:0`.
        Listener::Tcp(listener) => format!("tcp://{}", listener.local_addr()?),
        _ => options.endpoint.clone(),
    };
    eprintln!("node_plugin: serving CSI on {serving_on}");
    match listener {
        Listener::Tcp(listener) => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await?
        }
        #[cfg(unix)]
        Listener::Unix(listener) => {
            let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await?
        }
        #[cfg(windows)]
        Listener::WindowsUnix(listener) => {
            let incoming = crate::blocking_unix::incoming(listener)?;
            router
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await?
        }
    }
    Ok(())
}

/// Where CSI is served.
enum Listener {
    Tcp(tokio::net::TcpListener),
    #[cfg(unix)]
    Unix(tokio::net::UnixListener),
    /// tokio has no AF_UNIX on Windows: a blocking listener, bridged to it.
    #[cfg(windows)]
    WindowsUnix(uds_windows::UnixListener),
}

impl Listener {
    /// Listens on `endpoint`, `tcp://ADDRESS` or `unix://PATH`, in place of
    /// a socket an earlier run left at PATH (it would refuse the bind).
    async fn bind(endpoint: &str) -> Result<Self, Box<dyn std::error::Error>> {
        let failed = |error| format!("cannot serve CSI on {endpoint}: {error}");
        if let Some(address) = endpoint.strip_prefix("tcp://") {
            let listener = tokio::net::TcpListener::bind(address).await;
            return Ok(Listener::Tcp(listener.map_err(failed)?));
        }
        #[cfg(unix)]
        if let Some(path) = endpoint.strip_prefix("unix://") {
            let _ = std::fs::remove_file(path);
            let listener = tokio::net::UnixListener::bind(path).map_err(failed)?;
            return Ok(Listener::Unix(listener));
        }
        #[cfg(windows)]
        if let Some(path) = endpoint.strip_prefix("unix://") {
            return Ok(Listener::WindowsUnix(crate::blocking_unix::bind(path)?));
        }
        Err(format!("endpoint {endpoint}: unix://PATH or tcp://127.0.0.1:PORT").into())
    }
}
