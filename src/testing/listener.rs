//! The server side of a [`Transport`]: accepting connections on the
//! endpoint of one group-version, as CSI Proxy does.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::future::Future;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;
use tokio_stream::Stream;

use crate::error::{Error, Result};
use crate::group::ApiGroup;
use crate::transport::{IoStream, StreamInner, Transport};
use crate::version::ApiVersion;

/// A connection accepted by [`Incoming`]. It implements tokio's
/// `AsyncRead`/`AsyncWrite` and tonic's `Connected`, so [`Incoming`] can be
/// handed to `tonic::transport::Server::serve_with_incoming`.
///
/// It lives no longer than its [`Incoming`]: once that is dropped, reads
/// and writes fail, as the connections of a proxy process that died would.
pub struct ServerStream {
    inner: IoStream,
    /// Ready once the listener is gone.
    listener_gone: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl std::fmt::Debug for ServerStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ServerStream").field(&self.inner).finish()
    }
}

impl ServerStream {
    fn new(inner: IoStream, alive: &watch::Sender<()>) -> Self {
        let mut alive = alive.subscribe();
        Self {
            inner,
            listener_gone: Box::pin(async move { while alive.changed().await.is_ok() {} }),
        }
    }

    /// Fails once the listener is gone.
    fn check_alive(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        match self.listener_gone.as_mut().poll(cx) {
            Poll::Ready(()) => Err(io::ErrorKind::ConnectionReset.into()),
            Poll::Pending => Ok(()),
        }
    }
}

impl AsyncRead for ServerStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.check_alive(cx)?;
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check_alive(cx)?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check_alive(cx)?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// tonic's server needs to know what it may learn about the peer: nothing,
/// for a local pipe or socket.
impl tonic::transport::server::Connected for ServerStream {
    type ConnectInfo = ();

    fn connect_info(&self) -> Self::ConnectInfo {}
}

/// How many accepted connections may wait for the server to pick them up.
const BACKLOG: usize = 16;

/// Accepted connections on one endpoint, as a stream for tonic's server.
///
/// Dropping it stops accepting; for a socket transport it also removes the
/// socket file.
#[derive(Debug)]
pub struct Incoming {
    accepted: mpsc::Receiver<io::Result<IoStream>>,
    accept_loop: AbortHandle,
    /// Dropped with the listener, which ends every accepted connection.
    _alive: watch::Sender<()>,
    #[cfg(unix)]
    socket_path: Option<std::path::PathBuf>,
}

impl Stream for Incoming {
    type Item = io::Result<ServerStream>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        this.accepted.poll_recv(cx).map(|next| {
            next.map(|accepted| accepted.map(|stream| ServerStream::new(stream, &this._alive)))
        })
    }
}

impl Drop for Incoming {
    fn drop(&mut self) {
        self.accept_loop.abort();
        #[cfg(unix)]
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Starts accepting connections on the endpoint of `group` `version`.
///
/// For Unix sockets, a socket file that nobody listens on any more (left
/// behind by a crash) is replaced; one that is in use is an error. For
/// named pipes, the first instance is created exclusively, so a second
/// server on the same name is an error too, as for CSI Proxy itself.
///
/// A pipe is owned by the user this process runs as (so a client's
/// transport must trust that user: [`LocalEndpoints`](super::LocalEndpoints)
/// does); a socket's peer is this process's user.
pub async fn listen(
    transport: &Transport,
    group: ApiGroup,
    version: ApiVersion,
) -> Result<Incoming> {
    listen_owned(transport, group, version, None).await
}

/// Like [`listen`], with pipes that claim `sid` as their owner: a server
/// that the client's [`ServerTrust`](crate::transport::ServerTrust) may refuse, such
/// as a squatter. Windows only; Windows lets a process name as owner only
/// itself or a group it may stand for, while Wine takes any SID.
#[cfg(windows)]
#[cfg_attr(docsrs, doc(cfg(windows)))]
pub async fn listen_owned_by(
    transport: &Transport,
    group: ApiGroup,
    version: ApiVersion,
    sid: &str,
) -> Result<Incoming> {
    listen_owned(transport, group, version, Some(sid)).await
}

async fn listen_owned(
    transport: &Transport,
    group: ApiGroup,
    version: ApiVersion,
    #[cfg_attr(not(windows), allow(unused_variables))] owner: Option<&str>,
) -> Result<Incoming> {
    let address = transport.address(group, version);
    let (sender, accepted) = mpsc::channel(BACKLOG);
    #[cfg(unix)]
    if transport.socket_dir().is_some() {
        let listener = bind_socket(&address)
            .await
            .map_err(|e| Error::connect_failed(&address, e))?;
        let accept_loop = tokio::spawn(accept_sockets(listener, sender)).abort_handle();
        return Ok(Incoming {
            accepted,
            accept_loop,
            _alive: watch::channel(()).0,
            socket_path: Some(address.into()),
        });
    }
    #[cfg(windows)]
    {
        let owner = match owner {
            Some(sid) => sid.to_owned(),
            None => crate::transport::current_user_sid()
                .map_err(|e| Error::connect_failed(&address, e))?,
        };
        let first =
            pipe::create(&address, &owner, true).map_err(|e| Error::connect_failed(&address, e))?;
        let accept_loop = tokio::spawn(pipe::accept(address, owner, first, sender)).abort_handle();
        Ok(Incoming {
            accepted,
            accept_loop,
            _alive: watch::channel(()).0,
            #[cfg(unix)]
            socket_path: None,
        })
    }
    #[cfg(not(windows))]
    {
        drop((sender, accepted));
        Err(Error::connect_failed(
            address,
            io::Error::new(
                io::ErrorKind::Unsupported,
                "named pipes are only available on Windows",
            ),
        ))
    }
}

#[cfg(unix)]
async fn bind_socket(path: &str) -> io::Result<tokio::net::UnixListener> {
    match tokio::net::UnixListener::bind(path) {
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            if tokio::net::UnixStream::connect(path).await.is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!("{path} is in use by another server"),
                ));
            }
            std::fs::remove_file(path)?;
            tokio::net::UnixListener::bind(path)
        }
        other => other,
    }
}

#[cfg(unix)]
async fn accept_sockets(
    listener: tokio::net::UnixListener,
    sender: mpsc::Sender<io::Result<IoStream>>,
) {
    loop {
        let accepted = listener
            .accept()
            .await
            .map(|(s, _)| IoStream(StreamInner::Unix(s)));
        if sender.send(accepted).await.is_err() {
            return;
        }
    }
}

#[cfg(windows)]
mod pipe {
    use super::*;
    use tokio::net::windows::named_pipe::{NamedPipeServer, ServerOptions};

    use crate::transport::SecurityAttributes;

    /// An instance of pipe `name` owned by `owner` (a SID), which it and
    /// the local system may open.
    pub(super) fn create(name: &str, owner: &str, first: bool) -> io::Result<NamedPipeServer> {
        let attributes = SecurityAttributes::from_sddl(&format!(
            "O:{owner}D:(A;;GA;;;{owner})(A;;GA;;;SY)(A;;GA;;;BA)(A;;GA;;;OW)"
        ))?;
        // SAFETY: the attributes outlive the call, which copies them.
        unsafe {
            ServerOptions::new()
                .first_pipe_instance(first)
                .reject_remote_clients(true)
                .create_with_security_attributes_raw(name, attributes.as_ptr())
        }
    }

    pub(super) async fn accept(
        name: String,
        owner: String,
        mut listening: NamedPipeServer,
        sender: mpsc::Sender<io::Result<IoStream>>,
    ) {
        loop {
            let accepted = match listening.connect().await {
                // Create the next instance before handing this one off, so
                // that a client arriving meanwhile finds a pipe to open
                // instead of "not found".
                Ok(()) => match create(&name, &owner, false) {
                    Ok(next) => Ok(IoStream(StreamInner::PipeServer(std::mem::replace(
                        &mut listening,
                        next,
                    )))),
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
            let failed = accepted.is_err();
            if sender.send(accepted).await.is_err() || failed {
                return;
            }
        }
    }
}
