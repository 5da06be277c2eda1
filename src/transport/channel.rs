//! The SDK's own gRPC channel: one HTTP/2 client connection (h2, the
//! HTTP/2 engine under hyper) over the stream that negotiation opened, with
//! tonic's codec on top.
//!
//! tonic's `Channel` would add a buffer task, its own reconnect logic and
//! per-stream layers, and hyper's client dispatcher would add a task per
//! request and three channel hops; the SDK already negotiates again,
//! reconnects by negotiating and applies deadlines itself, so none of that
//! is needed here. A call is driven by the task that makes it: alone on the
//! connection, it also reads and writes the stream itself; beside other
//! calls, the connection's one task does (see [`super::driver`]). What
//! this layer adds is exact knowledge of the connection's state: the end of
//! the connection says that it broke, and a request that h2 did not take
//! was certainly not sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll, Waker};

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::body::Body;
use tonic::codegen::http::uri::{Authority, Scheme};
use tonic::codegen::http::{Request, Response, Uri};

use super::driver::{Caller, Driver};
use super::exchange::{BodyPipe, ResponseBody};
use super::failure::PeerStatus;
use crate::error::ConnectionError;

/// A gRPC channel to one CSI Proxy endpoint: a single HTTP/2 connection
/// over the pipe or socket that negotiation opened.
///
/// It implements tonic's `GrpcService` (through `tower::Service`), so the
/// generated clients in [`crate::wire`] run on it:
/// `wire::disk::v1::disk_client::DiskClient::new(connection.channel())`.
/// Clones share the connection and are cheap.
///
/// It never reconnects by itself: once the proxy closes the connection
/// (a restart, an upgrade), [`is_closed`](Self::is_closed) turns true and
/// every call fails at once without being sent. Negotiate again to reach
/// whatever the proxy serves now; [`CsiProxy`](crate::CsiProxy) does that
/// by itself.
///
/// A call alone on the connection does the connection's reading and
/// writing in the task that awaits it, so that its answer wakes that task
/// directly; calls side by side leave it to the connection's own task.
/// Like any future, a call that has started waiting is to be polled again
/// when woken, or dropped: one kept aside unpolled (say, the losing branch
/// of a `select!` held for later) delays what the connection reads until
/// it is polled or dropped, or another call starts.
#[derive(Clone)]
pub struct ProxyChannel {
    sender: SendRequest<Bytes>,
    driver: Arc<Driver>,
    /// The largest response message the SDK's calls accept on it.
    max_response_size: usize,
}

/// gRPC's conventional limit of a received message, and the default of
/// [`CsiProxyBuilder::max_response_size`](crate::CsiProxyBuilder::max_response_size).
pub const DEFAULT_MAX_RESPONSE_SIZE: usize = 4 << 20;

/// The `:authority` every request carries: the stream already decides where
/// bytes go, but HTTP/2 requires one.
const AUTHORITY: &str = "csi-proxy";

impl ProxyChannel {
    /// The HTTP/2 handshake over `stream`, with settings for a local pipe or
    /// socket (measured with the benchmark's `--profile` mode; see the
    /// docs/benchmarks.md):
    /// - Windows of 1 MiB per stream and 4 MiB per connection. For
    ///   `ListDiskIDs` they measured the same as HTTP/2's default 64 KiB
    ///   (p50 54–57 µs sequential, 36–45k calls/s with 16 callers, either
    ///   way): small answers only make a WINDOW_UPDATE go back now and then.
    ///   The larger windows let a large answer (a node with thousands of
    ///   volumes) arrive without waiting for WINDOW_UPDATE round trips, and
    ///   cost no memory until data is actually buffered.
    /// - The default 4 KiB header table: a gRPC client repeats the same
    ///   request headers, which are all indexed after the first call.
    /// - No keep-alive pings: a local pipe has no idle timeout to defeat, and
    ///   a broken pipe ends the connection at once, which is the signal this
    ///   type relies on.
    /// - No server push (gRPC never uses it), and a header list bound that
    ///   holds any error message the proxy sends in its trailers.
    /// - Up to 65,536 resets a connection's life for frames that arrive on
    ///   streams the client reset and has forgotten (h2 keeps 50, for a
    ///   second), not h2's 1,024: a proxy may send on a stream until the
    ///   reset reaches it, h2 answers each such frame with a reset of its
    ///   own, and at the limit h2 closes the connection with every call on
    ///   it. Under Wine, a burst of dropped calls reached 1,024 within a
    ///   second. The limit stays, against a proxy that never stops.
    pub(crate) async fn handshake<T>(stream: T, max_response_size: usize) -> Result<Self, h2::Error>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, connection) = h2::client::Builder::new()
            .initial_window_size(1 << 20)
            .initial_connection_window_size(4 << 20)
            .max_header_list_size(1 << 20)
            .enable_push(false)
            .max_local_error_reset_streams(Some(1 << 16))
            .handshake::<_, Bytes>(stream)
            .await?;
        let driver = Driver::new(Box::pin(connection));
        tokio::spawn(driver.clone().run());
        Ok(Self {
            sender,
            driver,
            max_response_size,
        })
    }

    /// The largest response message the SDK's calls accept on this channel.
    pub(crate) fn max_response_size(&self) -> usize {
        self.max_response_size
    }

    /// Whether the connection has ended (the proxy went away or closed it).
    /// A closed channel sends nothing again.
    pub fn is_closed(&self) -> bool {
        self.driver.is_closed()
    }

    /// Resolves when the connection task has ended. Unlike
    /// [`closed`](Self::closed) it borrows nothing: the future can be
    /// spawned.
    pub(crate) fn ended(&self) -> impl Future<Output = ()> + Send + 'static {
        let driver = self.driver.clone();
        async move { driver.ended().await }
    }

    /// Waits until the connection has ended.
    pub async fn closed(&self) {
        self.ended().await;
    }
}

impl std::fmt::Debug for ProxyChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyChannel")
            .field("closed", &self.is_closed())
            .finish()
    }
}

impl tower::Service<Request<Body>> for ProxyChannel {
    type Response = Response<ResponseBody>;
    type Error = ConnectionError;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Waits only while the proxy's limit of concurrent streams is
        // reached. A failed connection is reported per request, with the
        // certainty that it was not sent, rather than here, where tonic
        // would turn it into text.
        self.sender.poll_ready(cx).map(|_| Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        if self.is_closed() {
            return Box::pin(std::future::ready(Err(ConnectionError::ended())));
        }
        let (mut head, body) = request.into_parts();
        // tonic gives a path-only URI; HTTP/2 needs the scheme and authority.
        let mut uri = std::mem::take(&mut head.uri).into_parts();
        uri.scheme = Some(Scheme::HTTP);
        uri.authority = Some(Authority::from_static(AUTHORITY));
        if let Ok(uri) = Uri::from_parts(uri) {
            head.uri = uri;
        }
        let witness = head.extensions.get::<PeerStatus>().cloned();
        let head = Request::from_parts(head, ());
        let caller = self.driver.caller();
        // A sender that is not ready (its last request waits for a free
        // stream, and nobody called `poll_ready`) sends on a clone once
        // that is ready; otherwise the request starts here and now, and a
        // caller alone on the connection writes it at once.
        let ready = self
            .sender
            .poll_ready(&mut Context::from_waker(Waker::noop()));
        let (started, waiting) = match ready {
            Poll::Ready(Ok(())) => {
                match caller.hand_over(|| Started::begin(&mut self.sender, head, body)) {
                    Ok(started) => (Some(started), None),
                    Err(e) => return Box::pin(std::future::ready(Err(e))),
                }
            }
            Poll::Ready(Err(e)) => {
                return Box::pin(std::future::ready(Err(ConnectionError::not_sent(e))))
            }
            Poll::Pending => (None, Some((self.sender.clone(), head, body))),
        };
        Box::pin(Exchange {
            started,
            waiting,
            witness,
            caller: Some(caller),
        })
    }
}

/// A request handed to h2: its response to come, and the rest of its body
/// to send, if any.
struct Started {
    response: ResponseFuture,
    sending: Option<BodyPipe>,
}

impl Started {
    /// Starts `head` on a new stream and sends what its body has ready (a
    /// unary request's whole body), or says why it certainly was not sent.
    fn begin(
        sender: &mut SendRequest<Bytes>,
        head: Request<()>,
        body: Body,
    ) -> Result<Self, ConnectionError> {
        let end_of_stream = http_body::Body::is_end_stream(&body);
        let (response, stream) = sender
            .send_request(head, end_of_stream)
            .map_err(ConnectionError::not_sent)?;
        let mut sending = (!end_of_stream).then(|| BodyPipe::new(body, stream));
        // The body is polled again, with the caller's waker, if it is not
        // all here yet.
        if let Some(pipe) = &mut sending {
            if let Poll::Ready(sent) = pipe.poll_send(&mut Context::from_waker(Waker::noop())) {
                sending = None;
                sent?;
            }
        }
        Ok(Self { response, sending })
    }
}

/// One call: its request sent (or waiting for a free stream), until the
/// head of its response.
struct Exchange {
    /// `None` only while waiting for a free stream.
    started: Option<Started>,
    waiting: Option<(SendRequest<Bytes>, Request<()>, Body)>,
    witness: Option<PeerStatus>,
    /// Goes with the response body; dropped last.
    caller: Option<Caller>,
}

impl Future for Exchange {
    type Output = Result<Response<ResponseBody>, ConnectionError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let caller = this.caller.as_mut().expect("a call polled after it ended");
        // The waker for the call's stream; the rest waits on the task's own.
        let waker = caller.drive_if_alone(cx.waker());
        if let Some((sender, _, _)) = &mut this.waiting {
            let ready = ready!(sender.poll_ready(cx));
            let (mut sender, head, body) = this.waiting.take().expect("waiting");
            ready.map_err(ConnectionError::not_sent)?;
            this.started = Some(caller.hand_over(|| Started::begin(&mut sender, head, body))?);
        }
        let started = this.started.as_mut().expect("started or waiting");
        // Sends the body (if any) while waiting for the response head.
        if let Some(sending) = &mut started.sending {
            if let Poll::Ready(sent) = sending.poll_send(cx) {
                started.sending = None;
                sent?;
            }
        }
        let head = ready!(Pin::new(&mut started.response).poll(&mut Context::from_waker(&waker)));
        caller.returned();
        let sending = started.sending.take();
        let head = head.map_err(ConnectionError::during_call)?;
        check_grpc_head(&head)?;
        // A body that is still sending when a gRPC answer comes (the proxy
        // answered early) goes on in a task of its own.
        if let Some(mut sending) = sending {
            tokio::spawn(std::future::poll_fn(move |cx| {
                sending.poll_send(cx).map(drop)
            }));
        }
        if let Some(witness) = &this.witness {
            // A trailers-only answer carries its status in the head.
            witness.saw(head.headers());
        }
        let (witness, caller) = (this.witness.take(), this.caller.take());
        Poll::Ready(Ok(
            head.map(|stream| ResponseBody::new(stream, witness, caller))
        ))
    }
}

/// A gRPC answer is HTTP 200 with a `application/grpc` content type; what
/// else arrives (an error page, another protocol's answer) is no gRPC
/// answer, whatever tonic would make of it.
fn check_grpc_head<B>(head: &Response<B>) -> Result<(), ConnectionError> {
    let content_type = head
        .headers()
        .get(tonic::codegen::http::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let is_grpc = content_type.as_deref().is_some_and(|t| {
        t == "application/grpc"
            || t.starts_with("application/grpc+")
            || t.starts_with("application/grpc;")
    });
    if head.status() == tonic::codegen::http::StatusCode::OK && is_grpc {
        return Ok(());
    }
    Err(ConnectionError::not_grpc(
        head.status().as_u16(),
        content_type,
    ))
}
