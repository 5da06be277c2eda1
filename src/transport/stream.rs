//! One byte stream type over every transport, so that the channel code is
//! written once.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connected stream: a Unix socket or a Windows named pipe.
#[derive(Debug)]
pub struct IoStream(pub(crate) Inner);

#[derive(Debug)]
pub(crate) enum Inner {
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
    #[cfg(windows)]
    Pipe(tokio::net::windows::named_pipe::NamedPipeClient),
    /// The server end of a pipe, for the fake proxies of the test harness.
    #[cfg(all(windows, feature = "testing"))]
    PipeServer(tokio::net::windows::named_pipe::NamedPipeServer),
}

impl IoStream {
    /// Who serves the other end: the owner of a pipe (its security
    /// descriptor, read through the open handle), or the user of a Unix
    /// socket's peer (`SO_PEERCRED`). An error when it could not be read.
    pub(crate) fn server_owner(&self) -> io::Result<super::ServerOwner> {
        match &self.0 {
            #[cfg(unix)]
            Inner::Unix(s) => (s.peer_cred()).map(|cred| super::ServerOwner::Uid(cred.uid())),
            #[cfg(windows)]
            Inner::Pipe(p) => {
                use std::os::windows::io::AsRawHandle;
                super::owner_of_handle(p.as_raw_handle())
            }
            #[cfg(all(windows, feature = "testing"))]
            Inner::PipeServer(_) => Ok(super::ServerOwner::Unknown(
                "the server end of a pipe".into(),
            )),
        }
    }
}

/// Forwards a call to whichever stream is inside.
macro_rules! delegate {
    ($self:ident, $s:ident => $call:expr) => {
        match &mut $self.get_mut().0 {
            #[cfg(unix)]
            Inner::Unix($s) => $call,
            #[cfg(windows)]
            Inner::Pipe($s) => $call,
            #[cfg(all(windows, feature = "testing"))]
            Inner::PipeServer($s) => $call,
        }
    };
}

impl AsyncRead for IoStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_read(cx, buf))
    }
}

impl AsyncWrite for IoStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, s => Pin::new(s).poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        delegate!(self, s => Pin::new(s).poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match &self.0 {
            #[cfg(unix)]
            Inner::Unix(s) => s.is_write_vectored(),
            #[cfg(windows)]
            Inner::Pipe(s) => s.is_write_vectored(),
            #[cfg(all(windows, feature = "testing"))]
            Inner::PipeServer(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        delegate!(self, s => Pin::new(s).poll_shutdown(cx))
    }
}
