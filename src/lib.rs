//! A Rust client for [Kubernetes CSI Proxy](https://github.com/kubernetes-csi/csi-proxy).
//!
//! CSI node plugins on Windows nodes ask CSI Proxy, a privileged service on
//! the host, to do their storage work, over gRPC on one named pipe per API
//! group and wire version: `\\.\pipe\csi-proxy-<group>-<version>`. Which
//! versions exist depends on the proxy release the node runs (v0.1 to v1.3
//! serve between 4 and 23 of them). This crate finds, per group, the newest
//! version the node serves and connects to it.
//!
//! # Example
//!
//! ```
//! use csi_proxy_client::{api::WindowsPath, ApiGroup, CsiProxy};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), csi_proxy_client::Error> {
//! # // A fake node, so that the example runs as a test.
//! # use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
//! # let endpoints = LocalEndpoints::new()?;
//! # let host = FakeHost::builder()
//! #     .partitioned_disk(1, "Google  pvc-1", 10 << 30)
//! #     .dir(r"\var\lib\kubelet\staging")
//! #     .build();
//! # let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
//! # fake.serve_release(ProxyRelease::LATEST).await?;
//! let proxy = CsiProxy::builder()
//! #   .transport(endpoints.transport())
//!     .require(ApiGroup::Volume)
//!     .connect()
//!     .await?;
//! print!("{}", proxy.report()); // what was tried and chosen, per group
//!
//! // The same calls work whatever version each group negotiated.
//! let volume = proxy.volume()?;
//! # let staged = volume.list_volumes_on_disk(1, None).await?.remove(0);
//! # volume.format_volume(&staged).await?;
//! # volume.mount_volume(&staged, &WindowsPath::new(r"\var\lib\kubelet\staging")?).await?;
//! let id = volume.get_volume_id_from_target_path(&WindowsPath::new(r"\var\lib\kubelet\staging")?).await?;
//! let stats = volume.get_volume_stats(&id).await?;
//! println!("{} of {} bytes used", stats.used_bytes, stats.total_bytes);
//! # Ok(()) }
//! ```
//!
//! # Where things are
//!
//! At the root, what a driver uses every day: [`CsiProxy`] (connect once,
//! get one handle per group; cheap to clone; it negotiates again when a
//! connection breaks, applies deadlines and retries) and its
//! [`CsiProxyBuilder`], [`Backend`], [`Backends`] (mocks instead of a
//! proxy), [`CallOptions`] and [`RetryPolicy`]; [`Error`], its
//! [`ErrorKind`] and its [`Delivery`] (was the request sent, may it have
//! run), [`Result`], and the gRPC [`Code`] and [`Status`] a CSI service
//! answers; [`ApiGroup`], [`ApiVersion`], [`Operation`] and its
//! [`Support`] per version; and [`macro@async_trait`] for mocks. Then, by topic:
//!
//! - [`api`]: one stable trait per group ([`api::DiskApi`],
//!   [`api::FilesystemApi`], [`api::SmbApi`], [`api::VolumeApi`],
//!   [`api::IscsiApi`], [`api::SystemApi`]) in version-agnostic types
//!   ([`api::WindowsPath`], [`api::VolumeId`], [`api::Secret`], ...). Mocks
//!   implement these; adapters (private) translate each to each wire
//!   version, as [`Operation::support`] says.
//! - [`health`]: what a client stands on now, and the changes of version.
//! - [`mount`]: the node's volume operations on top of the traits
//!   ([`mount::Mounter`]): stage, publish, expand, stats, SMB leases,
//!   reconcile; idempotent, serialised per path, and right on every proxy
//!   release.
//! - [`negotiate`]: the [`negotiate::Negotiator`] probes each group's
//!   candidate versions in the order of its [`negotiate::VersionPolicy`],
//!   keeps the first endpoint that opens (and uses that very connection),
//!   and reports what it tried.
//! - [`transport`]: Windows named pipes, or Unix domain sockets named the
//!   same way in a directory (for tests and Linux development), and who
//!   may serve them ([`transport::ServerTrust`]).
//! - [`wire`]: the generated messages and tonic clients of all 23
//!   group-versions, for direct calls on a negotiated
//!   [`negotiate::Connection`].
//! - `csi` (feature `csi`): the CSI node service on the mounter. A
//!   driver implements one small trait, `csi::NodeDriver` (what a volume
//!   ID names on the node), and `csi::NodePlugin` serves Identity and Node
//!   on kubelet's endpoint; the CSI spec's generated code is in `csi::v1`.
//! - [`metrics`] (feature `metrics`) and `testing` (feature `testing`).
//!
//! # Cargo features
//!
//! - `testing`: the harness for drivers' tests: `testing::FakeHost` (an
//!   in-memory Windows host), `testing::FakeProxy` (serves any set of
//!   versions over a real transport, backed by any trait implementation),
//!   `testing::LocalEndpoints` (the same test code over sockets on Unix and
//!   pipes on Windows), and the generated servers in [`wire`]. Enable it in
//!   dev-dependencies.
//! - `metrics`: counters, histograms and gauges of the calls, negotiations
//!   and versions, through the `metrics` facade (see [`metrics`]).
//! - `csi`: the CSI node service (`csi` module): a node plugin is a
//!   driver's `csi::NodeDriver` and a `main`. With `testing` too, the test
//!   controller for csi-sanity (`csi::TestController`).
//! - `cli`: the `csiproxyctl` command-line tool.
//! - `host-process`: on Windows, the six groups served in-process with no
//!   CSI Proxy, for drivers that run as HostProcess containers
//!   ([`Backend::Host`], [`Backend::Automatic`]); nothing on other
//!   platforms.
//!
//! A driver's own `cargo doc` shows only the features it enables; to read
//! the `testing` items there, `cargo doc --features
//! csi-proxy-client/testing` in the driver's crate (docs.rs shows every feature).
//!
//! Items that need a feature, or a platform (Unix sockets), say so in
//! their documentation.
//!
//! # Errors in a CSI node service
//!
//! Every [`Error`] converts into the `tonic::Status` a CSI node service
//! answers (`tonic::Status::from(error)`, or `?` in a handler), with the
//! code chosen by [`Error::csi_code`]; [`Error::is_retryable`] says whether
//! the same call may succeed later. The table of codes is on the
//! `From<Error> for tonic::Status` implementation of [`Error`].

#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod adapter;
pub mod api;
mod availability;
mod capability;
mod client;
#[cfg(feature = "csi")]
#[cfg_attr(docsrs, doc(cfg(feature = "csi")))]
pub mod csi;
mod csi_status;
mod error;
mod group;
#[cfg(all(windows, feature = "host-process"))]
mod host;
mod host_cause;
pub mod metrics;
pub mod mount;
pub mod negotiate;
mod owner_only;
mod redact;
mod registry;
mod retry;
mod served_by;
mod server_owner;
pub mod transport;
mod version;
mod working_dirs;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub mod testing;

/// The attribute for implementing the group traits (for mocks).
pub use async_trait::async_trait;
pub use capability::{Operation, Support};
pub use client::{Backend, Backends, CallOptions, CsiProxy, CsiProxyBuilder};
pub use csi_status::CsiNodeCall;
pub use error::{Code, Delivery, Error, ErrorKind, Result, Status};
pub use group::ApiGroup;
pub use host_cause::HostCause;
pub use retry::RetryPolicy;
pub use version::ApiVersion;

/// How a client stands now, and how it changed: what a node plugin answers
/// CSI `Probe` with ([`CsiProxy::health`]) and the events of
/// [`CsiProxy::version_changes`].
pub mod health {
    pub use crate::client::{GroupHealth, GroupStatus, Health, ServedBy, VersionChange};
}

/// The generated wire types and tonic clients (and, with the `testing`
/// feature, servers) of every group-version: `wire::<group>::<version>`.
///
/// Each module is generated from `proto/<group>/<version>/api.proto`, whose
/// names, field numbers and types are CSI Proxy's wire contract. Field names
/// are snake-cased by prost (`diskIDs` becomes `disk_i_ds`).
///
/// The code is generated by `tests/generated_code.rs` and shipped in the
/// crate, so that building it needs neither `protoc` nor a build script.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod wire;

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The guides' examples, compiled as doctests too.
#[cfg(doctest)]
#[doc = include_str!("../docs/porting.md")]
struct PortingGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/availability.md")]
struct AvailabilityGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/negotiation.md")]
struct NegotiationGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/security.md")]
struct SecurityGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/testing.md")]
struct TestingGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/host-process.md")]
struct HostProcessGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/mounting.md")]
struct MountingGuideDoctests;

#[cfg(doctest)]
#[doc = include_str!("../docs/node-plugin.md")]
struct NodePluginGuideDoctests;
