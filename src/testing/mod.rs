//! What a driver's tests need: a fake Windows host, a fake proxy that
//! serves it (or any mock) over a real transport, and the pieces to build
//! servers of one's own.
//!
//! Enabled by the `testing` cargo feature; put it in `dev-dependencies`.
//! With it, [`crate::wire`] also contains the generated tonic servers.
//!
//! - [`LocalEndpoints`]: a private place for one test's endpoints, Unix
//!   sockets on Unix and named pipes on Windows, so that the same test code
//!   runs on both.
//! - [`FakeHost`]: an in-memory Windows host (disks, partitions, volumes,
//!   mounts, symbolic links, SMB mappings, iSCSI portals and targets,
//!   services) that implements every group trait with the proxy's rules,
//!   those of older releases too, and misbehaves on demand: failed or
//!   delayed calls ([`WindowsError`]), offline or read-only disks, broken
//!   SMB mappings ([`SmbMappingStatus`]), reboots.
//! - [`FakeProxy`]: serves any chosen set of group-versions, backed by a
//!   [`FakeHost`] or by any implementation of the traits (a mock), and
//!   records every call; [`ProxyRelease`] names the set a CSI Proxy
//!   release served.
//! - [`listen`] accepts connections on the endpoint of one group-version,
//!   as a stream for tonic's server; [`RawCodec`] passes messages through
//!   as bytes, for servers that answer anything at all.
//! - [`conformance`]: one check per group of any implementation of its
//!   trait against the rules the fake host follows, to hold mocks (and
//!   every backend of the crate) to the same rules.
//! - [`ScriptedServer`] answers any request to one group-version with
//!   scripted bytes or a status, and records the requests; [`sample`]
//!   calls any operation with fixed arguments, to sweep them all.
//! - [`StubProxy`] serves any chosen set of group-versions with stub
//!   services, for negotiation tests.

pub mod conformance;
mod endpoints;
mod fake_host;
mod fake_proxy;
mod listener;
mod local;
mod raw_codec;
mod release;
pub mod sample;
mod scripted;
mod startup;
mod stub;

pub use fake_host::{
    FakeDisk, FakeHost, FakeHostBuilder, FakeVolume, LinkReading, PartitionStyle, PathEntry,
    SmbMappingStatus, WindowsError, NODE_OS_DISK, NODE_TEMP_DISK,
};
pub use fake_proxy::{Call, FakeProxy, Span};
#[cfg(windows)]
pub use listener::listen_owned_by;
pub use listener::{listen, Incoming, ServerStream};
pub use local::LocalEndpoints;
pub use raw_codec::RawCodec;
pub use release::ProxyRelease;
pub use scripted::{RecordedRequest, Script, ScriptedServer};
pub use startup::{StartOrder, Startup};
pub use stub::{StubProxy, STUB_MESSAGE};
