//! Pieces for test harnesses that serve the CSI Proxy wire API themselves.
//!
//! Enabled by the `testing` cargo feature; put it in `dev-dependencies`.
//! With it, [`crate::wire`] also contains the generated tonic servers.
//!
//! - [`listen`] accepts connections on the endpoint of one group-version,
//!   over Unix sockets or Windows named pipes, as a stream for tonic's
//!   server.
//! - [`StubProxy`] serves any chosen set of group-versions with stub
//!   services, for negotiation tests.

mod endpoints;
mod fake_host;
mod fake_proxy;
mod listener;
mod raw_codec;
mod release;
mod stub;

pub use fake_host::{FakeDisk, FakeHost, FakeHostBuilder, FakeVolume, PathEntry};
pub use fake_proxy::{Call, FakeProxy};
pub use listener::{listen, Incoming, ServerStream};
pub use raw_codec::RawCodec;
pub use release::ProxyRelease;
pub use stub::{StubProxy, STUB_MESSAGE};
