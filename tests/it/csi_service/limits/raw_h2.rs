//! HTTP/2 frames by hand, for what a well-behaved client never does:
//! open more streams on one connection than the server allows (tonic's
//! client waits for room instead).

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub const HEADERS: u8 = 0x1;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
const DATA: u8 = 0x0;
const PING: u8 = 0x6;
const GOAWAY: u8 = 0x7;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const ACK: u8 = 0x1;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const REFUSED_STREAM: u32 = 0x7;
const CANCEL: u32 = 0x8;

/// One frame the server sent.
#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The value of `setting` in a SETTINGS frame.
    pub fn setting(&self, setting: u16) -> Option<u32> {
        self.payload.chunks_exact(6).find_map(|entry| {
            let id = u16::from_be_bytes([entry[0], entry[1]]);
            let value = u32::from_be_bytes([entry[2], entry[3], entry[4], entry[5]]);
            (id == setting).then_some(value)
        })
    }

    /// The error code of a RST_STREAM frame.
    pub fn error_code(&self) -> u32 {
        u32::from_be_bytes(self.payload[..4].try_into().unwrap())
    }
}

/// A client connection that writes its frames itself.
pub struct RawConnection {
    socket: TcpStream,
}

impl RawConnection {
    /// Connects to `address` and sends the preface, with no settings.
    pub async fn open(address: &str) -> Self {
        let mut socket = TcpStream::connect(address).await.unwrap();
        socket
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .await
            .unwrap();
        let mut connection = Self { socket };
        connection.send(SETTINGS, 0, 0, &[]).await;
        connection
    }

    async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let length = u32::try_from(payload.len()).unwrap().to_be_bytes();
        let mut frame = length[1..].to_vec();
        frame.extend([kind, flags]);
        frame.extend(stream.to_be_bytes());
        frame.extend(payload);
        self.socket.write_all(&frame).await.unwrap();
    }

    /// Opens stream `id` with a gRPC call to `path`, whose request is not
    /// sent yet: the stream stays open.
    pub async fn open_stream(&mut self, id: u32, path: &str) {
        self.send(HEADERS, END_HEADERS, id, &grpc_headers(path))
            .await;
    }

    /// A whole gRPC call to `path` on stream `id`, with an empty request.
    pub async fn call(&mut self, id: u32, path: &str) {
        self.open_stream(id, path).await;
        // Not compressed, zero bytes long.
        self.send(DATA, END_STREAM, id, &[0, 0, 0, 0, 0]).await;
    }

    /// Ends stream `id`: the client gives up on it.
    pub async fn reset(&mut self, id: u32) {
        self.send(RST_STREAM, 0, id, &CANCEL.to_be_bytes()).await;
    }

    /// The next frame the server sends, once the SETTINGS and PING frames
    /// before it are acknowledged, as a client must.
    pub async fn next(&mut self) -> Frame {
        let mut head = [0; 9];
        self.socket.read_exact(&mut head).await.unwrap();
        let length = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let stream = u32::from_be_bytes(head[5..9].try_into().unwrap()) & 0x7fff_ffff;
        let mut payload = vec![0; length];
        self.socket.read_exact(&mut payload).await.unwrap();
        let frame = Frame {
            kind: head[3],
            flags: head[4],
            stream,
            payload,
        };
        let unacknowledged = frame.flags & ACK == 0;
        if frame.kind == SETTINGS && unacknowledged {
            self.send(SETTINGS, ACK, 0, &[]).await;
        }
        if frame.kind == PING && unacknowledged {
            let payload = frame.payload.clone();
            self.send(PING, ACK, 0, &payload).await;
        }
        assert_ne!(frame.kind, GOAWAY, "the server closed the connection");
        frame
    }

    /// The first frame the server sends on `stream`.
    pub async fn next_on(&mut self, stream: u32) -> Frame {
        loop {
            let frame = self.next().await;
            if frame.stream == stream {
                return frame;
            }
        }
    }
}

/// A gRPC request's headers, HPACK-encoded as literals never indexed
/// (no table, no Huffman code: the simplest a decoder takes).
fn grpc_headers(path: &str) -> Vec<u8> {
    let fields = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "csi"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ];
    let mut block = Vec::new();
    for (name, value) in fields {
        block.push(0x10);
        for text in [name, value] {
            // Short enough for a one-byte length.
            block.push(u8::try_from(text.len()).unwrap());
            block.extend(text.as_bytes());
        }
    }
    block
}
