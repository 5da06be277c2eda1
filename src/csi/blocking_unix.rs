//! Serving CSI on a `unix://` endpoint where tokio has no Unix sockets:
//! on Windows. kubelet gives Windows plugins a `unix://C:\...\csi.sock`
//! endpoint too (Windows 10 1803 and Server 2019 have AF_UNIX sockets),
//! and `uds_windows` listens on it, but blocking, as std does.
//!
//! So a thread accepts, and each connection is bridged to tokio: tonic gets
//! one end of an in-memory pipe (`tokio::io::duplex`), and two threads copy
//! between the other end and the socket, one per direction. The bridge only
//! needs a blocking listener and `Read + Write` streams, so the same code
//! runs on Unix with std's `UnixListener`, where the tests prove it
//! (tests/it/node_plugin/unix_bridge.rs, which includes this file: it
//! uses nothing of the crate's).

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};
use tokio::runtime::Handle;
use tokio::sync::{mpsc, Semaphore};
use tokio_stream::wrappers::ReceiverStream;

/// The bytes in flight each way between a socket and tonic.
const BUFFER: usize = 64 * 1024;

/// A blocking socket that two threads can share: one reads, one writes.
pub trait Stream: Read + Write + Send + Sized + 'static {
    /// Another handle to the same socket.
    fn try_clone(&self) -> io::Result<Self>;
    /// Shuts the socket down (for every handle of it).
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
}

/// A blocking listener of [`Stream`]s.
pub trait Listener: Send + 'static {
    /// What it accepts.
    type Stream: Stream;
    /// Waits for the next connection.
    fn accept(&self) -> io::Result<Self::Stream>;
}

/// The two traits for a listener and stream with std's Unix socket API.
macro_rules! unix_socket {
    ($listener:ty, $stream:ty) => {
        impl Stream for $stream {
            fn try_clone(&self) -> io::Result<Self> {
                <$stream>::try_clone(self)
            }
            fn shutdown(&self, how: Shutdown) -> io::Result<()> {
                <$stream>::shutdown(self, how)
            }
        }
        impl Listener for $listener {
            type Stream = $stream;
            fn accept(&self) -> io::Result<$stream> {
                <$listener>::accept(self).map(|(stream, _)| stream)
            }
        }
    };
}

#[cfg(unix)]
unix_socket!(
    std::os::unix::net::UnixListener,
    std::os::unix::net::UnixStream
);
#[cfg(windows)]
unix_socket!(uds_windows::UnixListener, uds_windows::UnixStream);

/// Winsock's "address family not supported".
#[cfg(windows)]
const WSAEAFNOSUPPORT: i32 = 10047;

/// Listens at `path` (kubelet's `unix://` endpoint without the scheme;
/// the caller clears a stale socket first); the error says what to do on
/// a Windows (or Wine) without AF_UNIX.
#[cfg(windows)]
pub fn bind(path: &str) -> Result<uds_windows::UnixListener, String> {
    uds_windows::UnixListener::bind(path).map_err(|error| {
        // Windows before 10 1803 / Server 2019, and Wine, whose text for
        // this code is no help.
        if error.raw_os_error() == Some(WSAEAFNOSUPPORT) {
            format!(
                "an AF_UNIX socket cannot be made \
                 (WSAEAFNOSUPPORT, os error {WSAEAFNOSUPPORT}): this Windows (or Wine) \
                 has no AF_UNIX sockets (Windows 10 1803 and Server 2019 have them); \
                 use the endpoint tcp://127.0.0.1:PORT instead"
            )
        } else {
            error.to_string()
        }
    })
}

/// The connections `listener` accepts, bridged to tokio, as the stream
/// tonic's `serve_with_incoming_shutdown` takes. Call it in a runtime.
///
/// Each bridged connection holds one of `places` while either of its two
/// threads runs; while none is free, nothing is accepted, so the next
/// connection waits in the listener's backlog until one ends.
///
/// The accept thread blocks in `accept`: it ends at the first connection
/// after tonic stops serving (or with the process).
pub fn incoming<L: Listener>(
    listener: L,
    places: Arc<Semaphore>,
) -> io::Result<ReceiverStream<io::Result<DuplexStream>>> {
    let runtime = Handle::current();
    let (sender, receiver) = mpsc::channel(1);
    thread::Builder::new()
        .name("csi-uds-accept".into())
        .spawn(move || loop {
            // Closed (never, in the crate): nothing more is served.
            let Ok(place) = runtime.block_on(places.clone().acquire_owned()) else {
                break;
            };
            // tonic stopped while every place was taken.
            if sender.is_closed() {
                break;
            }
            let connection = match listener.accept() {
                Ok(socket) => bridge(socket, &runtime, place),
                Err(error) => {
                    // tonic skips a failed accept; an error that lasts (no
                    // more handles, say) must not spin this thread.
                    drop(place);
                    thread::sleep(Duration::from_millis(100));
                    Err(error)
                }
            };
            // Closed: tonic stopped serving.
            if sender.blocking_send(connection).is_err() {
                break;
            }
        })?;
    Ok(ReceiverStream::new(receiver))
}

/// Bridges one connected socket to tokio: the returned end reads what the
/// peer sends and sends what is written to it. Both threads end when
/// either side closes: the peer's end of stream reaches tokio as one, and
/// tokio's (or a dropped end) shuts the socket down.
/// `place` is held until both threads end: the connection's place among
/// those bridged at once.
pub fn bridge<S: Stream, P: Send + Sync + 'static>(
    socket: S,
    runtime: &Handle,
    place: P,
) -> io::Result<DuplexStream> {
    let (theirs, ours) = tokio::io::duplex(BUFFER);
    let (from_tokio, to_tokio) = tokio::io::split(ours);
    let reader = socket.try_clone()?;
    // Shared by both threads: `place` goes with the last of them.
    let alive = Arc::new(place);
    // The writing thread first: should the reading one fail to start,
    // `theirs` is dropped, and the writing thread shuts the socket down.
    let (rt, held) = (runtime.clone(), alive.clone());
    thread::Builder::new()
        .name("csi-uds-out".into())
        .spawn(move || {
            tokio_to_socket(from_tokio, socket, &rt);
            drop(held);
        })?;
    let rt = runtime.clone();
    thread::Builder::new()
        .name("csi-uds-in".into())
        .spawn(move || {
            socket_to_tokio(reader, to_tokio, &rt);
            drop(alive);
        })?;
    Ok(theirs)
}

/// Copies until the peer stops sending (or tokio's end is gone), then
/// ends tokio's stream, as a socket's end would.
fn socket_to_tokio(mut socket: impl Read, mut tokio: WriteHalf<DuplexStream>, runtime: &Handle) {
    let mut buffer = vec![0; BUFFER];
    loop {
        let read = match socket.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if runtime.block_on(tokio.write_all(&buffer[..read])).is_err() {
            break;
        }
    }
    let _ = runtime.block_on(tokio.shutdown());
}

/// Copies until tokio closes its end (or the peer is gone), then shuts
/// the socket down both ways: the peer sees the end, and the other
/// thread's blocked read returns (on Unix at once; elsewhere when the
/// peer, seeing the end, closes).
fn tokio_to_socket<S: Stream>(mut tokio: ReadHalf<DuplexStream>, mut socket: S, runtime: &Handle) {
    let mut buffer = vec![0; BUFFER];
    // 0 bytes: tokio's end is closed or dropped.
    while let Ok(read @ 1..) = runtime.block_on(tokio.read(&mut buffer)) {
        if socket.write_all(&buffer[..read]).is_err() {
            break;
        }
    }
    let _ = socket.shutdown(Shutdown::Both);
}
