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
usage: node_plugin serve --endpoint unix:///PATH | tcp://127.0.0.1:PORT [options]

  --endpoint E           where to serve CSI: unix:// (kubelet's) or tcp:// (loopback)
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
    // keeps every lease.
    let report = mounter.reconcile(|_| true).await?;
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
    if let Some(address) = options.endpoint.strip_prefix("tcp://") {
        let listener = tokio::net::TcpListener::bind(address).await?;
        eprintln!(
            "node_plugin: serving CSI on tcp://{}",
            listener.local_addr()?
        );
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        router
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await?;
        return Ok(());
    }
    #[cfg(unix)]
    if let Some(path) = options.endpoint.strip_prefix("unix://") {
        // A socket left by an earlier run would refuse the bind.
        let _ = std::fs::remove_file(path);
        let listener = tokio::net::UnixListener::bind(path)?;
        eprintln!("node_plugin: serving CSI on unix://{path}");
        let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
        router
            .serve_with_incoming_shutdown(incoming, shutdown)
            .await?;
        return Ok(());
    }
    Err(format!(
        "endpoint {}: this build serves unix:// (on Unix) and tcp://",
        options.endpoint
    )
    .into())
}
