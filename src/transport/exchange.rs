//! One request and its response on an HTTP/2 stream, driven by the task
//! that makes the call: the request body is written into the stream as it
//! comes, and the response body is read from it as tonic asks.
//!
//! Nothing here is spawned for a call that has its whole request at hand
//! (every unary call does): a call costs its own task, and the connection
//! task's polls only when other calls are under way beside it.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use h2::{RecvStream, SendStream};
use http_body::{Body as _, Frame};
use tonic::body::Body;

use super::driver::Caller;
use super::failure::PeerStatus;
use crate::error::ConnectionError;

/// Writes a request body into its stream. Done once the body has ended (or
/// the stream can take no more; the response then says why).
pub(crate) struct BodyPipe {
    body: Body,
    stream: SendStream<Bytes>,
    /// Data read but not yet sent: it goes with the end of the stream if
    /// the body ends right after it, so that a unary request is two frames
    /// (HEADERS, DATA) rather than three.
    held: Option<Bytes>,
}

impl BodyPipe {
    pub fn new(body: Body, stream: SendStream<Bytes>) -> Self {
        Self {
            body,
            stream,
            held: None,
        }
    }

    /// Sends what the body has ready. `Ready(Ok)` once all of it is sent,
    /// `Ready(Err)` if the body failed (the stream is then reset).
    ///
    /// Data goes without waiting for flow-control capacity: h2 holds what
    /// the proxy's window cannot take yet, and a CSI Proxy request is a few
    /// hundred bytes.
    pub fn poll_send(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ConnectionError>> {
        loop {
            let frame = match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Pending => {
                    // More is coming, later: send what is here now.
                    if !self.send_held(false) {
                        return Poll::Ready(Ok(()));
                    }
                    return Poll::Pending;
                }
                Poll::Ready(None) => {
                    self.send_held(true);
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Some(Ok(frame))) => frame,
                Poll::Ready(Some(Err(status))) => {
                    self.stream.send_reset(h2::Reason::CANCEL);
                    return Poll::Ready(Err(ConnectionError::request_body(status)));
                }
            };
            let more = match frame.into_data() {
                Ok(data) => {
                    let earlier = self.held.replace(data);
                    earlier.is_none_or(|data| self.stream.send_data(data, false).is_ok())
                }
                Err(frame) => match frame.into_trailers() {
                    Ok(trailers) => {
                        if self.send_held(false) {
                            let _ = self.stream.send_trailers(trailers);
                        }
                        false
                    }
                    // No other kind of frame exists in a request body.
                    Err(_) => true,
                },
            };
            if !more {
                return Poll::Ready(Ok(()));
            }
        }
    }

    /// Sends the held data (an empty frame if none, when it ends the
    /// stream). `false` if the stream takes no more: it was reset or its
    /// connection broke, which the response future reports, so sending
    /// stops there.
    fn send_held(&mut self, end_of_stream: bool) -> bool {
        match self.held.take() {
            Some(data) => self.stream.send_data(data, end_of_stream).is_ok(),
            None if end_of_stream => self.stream.send_data(Bytes::new(), true).is_ok(),
            None => true,
        }
    }
}

/// The body of a response: its DATA frames, then its trailers (where gRPC
/// puts the status).
pub struct ResponseBody {
    /// `None` once read to the end.
    stream: Option<RecvStream>,
    state: Reading,
    /// Where the proxy's own `grpc-status` is told, for the SDK's calls.
    witness: Option<PeerStatus>,
    /// The call's part in driving the connection; dropped after the stream.
    caller: Option<Caller>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Reading {
    Data,
    Trailers,
    Done,
}

impl ResponseBody {
    pub(crate) fn new(
        stream: RecvStream,
        witness: Option<PeerStatus>,
        caller: Option<Caller>,
    ) -> Self {
        Self {
            stream: Some(stream),
            state: Reading::Data,
            witness,
            caller,
        }
    }

    /// The next frame, as far as it has arrived.
    fn read(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ConnectionError>>> {
        let Some(stream) = &mut self.stream else {
            return Poll::Ready(None);
        };
        if self.state == Reading::Data {
            match ready!(stream.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Read, so the proxy may send as much again.
                    let _ = stream.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => {
                    self.state = Reading::Done;
                    return Poll::Ready(Some(Err(ConnectionError::during_call(e))));
                }
                None => self.state = Reading::Trailers,
            }
        }
        if self.state == Reading::Done {
            return Poll::Ready(None);
        }
        let trailers = ready!(stream.poll_trailers(cx));
        self.state = Reading::Done;
        Poll::Ready(match trailers {
            Ok(Some(trailers)) => {
                if let Some(witness) = &self.witness {
                    witness.saw(&trailers);
                }
                Some(Ok(Frame::trailers(trailers)))
            }
            Ok(None) => None,
            Err(e) => Some(Err(ConnectionError::during_call(e))),
        })
    }
}

impl std::fmt::Debug for ResponseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseBody")
            .field("end_stream", &self.is_end_stream())
            .finish()
    }
}

impl http_body::Body for ResponseBody {
    type Data = Bytes;
    type Error = ConnectionError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ConnectionError>>> {
        let this = &mut *self;
        let frame = match &mut this.caller {
            Some(caller) => {
                // The caller may be the one to read the rest.
                let waker = caller.drive_if_alone(cx.waker());
                this.read(&mut Context::from_waker(&waker))
            }
            None => this.read(cx),
        };
        if this.state == Reading::Done {
            // The call is over: its stream goes first, then its caller.
            let stream = this.stream.take();
            match this.caller.take() {
                Some(caller) => caller.hand_over(|| drop(stream)),
                None => drop(stream),
            }
        } else if let (Poll::Ready(_), Some(caller)) = (&frame, &this.caller) {
            caller.returned();
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.state == Reading::Done
    }
}
