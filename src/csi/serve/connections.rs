//! The cap on the connections served at once: past it, the next one is
//! not accepted, and waits in the listener's backlog until one closes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tokio_stream::Stream;

/// The connections an endpoint serves at once; the next one is not
/// accepted until one closes (it waits in the listener's backlog, and its
/// client sees a server slow to answer). kubelet dials a connection per
/// call and closes it with the answer (or at its deadline), so this is
/// room for [`MAX_CONCURRENT_CALLS`](super::MAX_CONCURRENT_CALLS) calls at
/// work, as many waiting for a place, and the sidecars' connections. A
/// client that holds this many open keeps others out: like a flood of
/// calls, that needs access to the endpoint, which has the node's
/// administrator rights anyway; the cap bounds what the plugin holds.
pub const MAX_CONNECTIONS: usize = 128;

/// The places of the connections served at once.
pub(super) fn places() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(MAX_CONNECTIONS))
}

/// What a served connection reads and writes.
trait Io: AsyncRead + AsyncWrite + Send + 'static {}

impl<T: AsyncRead + AsyncWrite + Send + 'static> Io for T {}

/// A connection being served, holding its place (for the Windows bridge,
/// its threads hold it instead: they outlive tonic's end).
pub(super) struct Connection {
    io: Pin<Box<dyn Io>>,
    _place: Option<OwnedSemaphorePermit>,
}

impl Connection {
    /// A connection whose place is held elsewhere.
    #[cfg(windows)]
    pub(super) fn placed(io: impl AsyncRead + AsyncWrite + Send + 'static) -> Self {
        Self {
            io: Box::pin(io),
            _place: None,
        }
    }
}

impl tonic::transport::server::Connected for Connection {
    type ConnectInfo = ();

    fn connect_info(&self) -> Self::ConnectInfo {}
}

impl AsyncRead for Connection {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_read(cx, buf)
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.io.as_mut().poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.io.as_mut().poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.io.as_mut().poll_shutdown(cx)
    }
}

type Waiting = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// The connections a tokio listener's stream accepts, each once it has a
/// place: the stream is not polled, so nothing is accepted, while every
/// place is taken.
pub(super) struct Limited<S> {
    accepted: S,
    places: Arc<Semaphore>,
    waiting: Option<Waiting>,
    place: Option<OwnedSemaphorePermit>,
}

impl<S> Limited<S> {
    pub(super) fn new(accepted: S, places: Arc<Semaphore>) -> Self {
        Self {
            accepted,
            places,
            waiting: None,
            place: None,
        }
    }
}

impl<S, T> Stream for Limited<S>
where
    S: Stream<Item = io::Result<T>> + Unpin,
    T: AsyncRead + AsyncWrite + Send + 'static,
{
    type Item = io::Result<Connection>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.place.is_none() {
            let places = &this.places;
            let waiting = this
                .waiting
                .get_or_insert_with(|| Box::pin(places.clone().acquire_owned()));
            let place = ready!(waiting.as_mut().poll(cx));
            this.waiting = None;
            // Never closed; were it, nothing more would be served.
            let Ok(place) = place else {
                return Poll::Ready(None);
            };
            this.place = Some(place);
        }
        let accepted = ready!(Pin::new(&mut this.accepted).poll_next(cx));
        // A failed accept keeps the place for the next one.
        Poll::Ready(accepted.map(|accepted| {
            accepted.map(|io| Connection {
                io: Box::pin(io),
                _place: this.place.take(),
            })
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio_stream::StreamExt;

    use super::*;

    /// A listener's stream of `count` in-memory connections, then none.
    fn accepting(count: usize) -> impl Stream<Item = io::Result<tokio::io::DuplexStream>> + Unpin {
        let connections = (0..count).map(|_| Ok(tokio::io::duplex(64).0));
        tokio_stream::iter(connections.collect::<Vec<_>>())
    }

    #[tokio::test]
    async fn a_connection_past_the_cap_is_accepted_once_one_closes() {
        let places = Arc::new(Semaphore::new(2));
        let mut incoming = Limited::new(accepting(3), places.clone());
        let first = incoming.next().await.unwrap().unwrap();
        let _second = incoming.next().await.unwrap().unwrap();
        let waited = tokio::time::timeout(Duration::from_millis(200), incoming.next()).await;
        assert!(waited.is_err(), "a third connection with two places");
        drop(first);
        let third = incoming.next().await.unwrap();
        assert!(third.is_ok());
        assert_eq!(places.available_permits(), 0);
    }

    #[tokio::test]
    async fn a_failed_accept_keeps_the_place() {
        let places = Arc::new(Semaphore::new(1));
        let failed = io::Error::from(io::ErrorKind::ConnectionAborted);
        let accepted = tokio_stream::iter(vec![Err(failed), Ok(tokio::io::duplex(64).0)]);
        let mut incoming = Limited::new(accepted, places);
        assert!(incoming.next().await.unwrap().is_err());
        assert!(incoming.next().await.unwrap().is_ok());
    }
}
