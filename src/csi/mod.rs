//! The CSI node service, on the [`Mounter`](crate::mount::Mounter)
//! (feature `csi`): a Windows node plugin is a driver's [`NodeDriver`]
//! implementation, what is its own, and a `main`.
//!
//! | the driver decides ([`NodeDriver`]) | the service does |
//! |---|---|
//! | its name and version; the kinds of volumes it serves (disks, shares, iSCSI) | Identity: `GetPluginInfo`, `GetPluginCapabilities`, `Probe` from the client's health |
//! | what a volume ID and its contexts name on the node: a [`DiskSelector`](crate::mount::DiskSelector), a share and its credentials, an [`IscsiVolume`](crate::mount::IscsiVolume) | Node: stage, unstage, publish, unpublish, stats and expand on the mounter; capabilities; info |
//! | the node's ID, topology and volume limit (default: the ID given) | the checks of each request, with the spec's codes (missing fields, raw block, multi-node access to a disk, read-only) |
//! | per volume: offline at unstage (default: yes); whether a volume left staged is live (default: yes) | stats and expand answered only for the volume the driver names for that ID (with the stage's contexts, kept across restarts) |
//! | hooks before and after a stage (default: none) | every SDK error mapped to the code the spec gives it in that call ([`Error::csi_status_for`](crate::Error::csi_status_for)); kubelet's retries joined |
//! | | a tracing span per call (`method`, `code`, `duration_ms`), metrics with the `metrics` feature |
//! | | serving `unix://` (Linux and Windows) and `tcp://`; bound before the proxy is dialled; stopped by SIGTERM or Ctrl-Break with the calls under way answered |
//!
//! A driver's `main` is [`NodePlugin`] (docs/node-plugin.md starts from
//! `cargo new`); a driver that has a gRPC server of its own serves
//! [`NodeService`]'s `identity_server()` and `node_server()` there; one
//! that only wants the node's volume work uses the mounter alone. The
//! CSI spec's messages, clients and servers (v1.12) are in [`v1`],
//! generated and shipped in the crate: no `protoc`, no build script.
//!
//! ```
//! use std::collections::HashMap;
//!
//! use csi_proxy_client::csi::v1::node_server::Node;
//! use csi_proxy_client::csi::v1::{volume_capability, NodeStageVolumeRequest, VolumeCapability};
//! use csi_proxy_client::csi::{NodeDriver, NodeService, Volume, VolumeKind, VolumeRequest};
//! use csi_proxy_client::mount::{DiskSelector, Mounter};
//! use csi_proxy_client::{Code, CsiProxy, Status};
//!
//! /// The driver's own rules: a volume ID is `pv-<LUN>`.
//! struct LunDriver;
//!
//! impl NodeDriver for LunDriver {
//!     fn name(&self) -> &str {
//!         "lun.csi.example.com"
//!     }
//!     fn version(&self) -> &str {
//!         "1.0.0"
//!     }
//!     fn kinds(&self) -> &[VolumeKind] {
//!         &[VolumeKind::Disk]
//!     }
//!     fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
//!         match request.volume_id.strip_prefix("pv-") {
//!             Some(lun) => Ok(Volume::Disk(DiskSelector::lun(lun))),
//!             None => Err(Status::not_found(format!("no volume {}", request.volume_id))),
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, ProxyRelease};
//! # let endpoints = LocalEndpoints::new()?;
//! # let host = FakeHost::builder().disk(1, "", 10 << 30)
//! #     .dir(r"C:\var\lib\kubelet\plugins\lun.csi.example.com\pv-1").build();
//! # let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
//! # fake.serve_release(ProxyRelease::LATEST).await?;
//! # let state = tempfile::tempdir()?;
//! # let state_dir = state.path();
//! let proxy = CsiProxy::builder()
//! #   .transport(endpoints.transport())
//!     .connect()
//!     .await?;
//! let mounter = Mounter::builder(proxy, state_dir).build()?;
//! let service = NodeService::new(LunDriver, mounter, "node-1", state_dir)?;
//!
//! // kubelet's NodeStageVolume, straight to the service (a plugin serves
//! // it on kubelet's endpoint: `NodePlugin`, or `serve`).
//! let mount = VolumeCapability {
//!     access_type: Some(volume_capability::AccessType::Mount(Default::default())),
//!     access_mode: Some(volume_capability::AccessMode {
//!         mode: volume_capability::access_mode::Mode::SingleNodeWriter as i32,
//!     }),
//! };
//! let stage = |volume_id: &str| NodeStageVolumeRequest {
//!     volume_id: volume_id.into(),
//!     staging_target_path: r"C:\var\lib\kubelet\plugins\lun.csi.example.com\pv-1\globalmount".into(),
//!     volume_capability: Some(mount.clone()),
//!     ..Default::default()
//! };
//! service.node_stage_volume(tonic::Request::new(stage("pv-1"))).await?;
//! let unknown = service.node_stage_volume(tonic::Request::new(stage("vol-9"))).await;
//! assert_eq!(unknown.unwrap_err().code(), Code::NotFound);
//! # Ok(()) }
//! ```
//!
//! With the `testing` feature too, [`TestController`] is a Controller for
//! csi-sanity, so that a driver holds its own plugin to the CSI
//! community's conformance suite (docs/node-plugin.md).

#[cfg(windows)]
mod blocking_unix;
mod checks;
#[cfg(feature = "testing")]
mod controller;
mod deployment;
mod driver;
mod manifests;
mod observe;
mod plugin;
mod recorded;
mod serve;
mod service;

/// The CSI spec's wire types (package `csi.v1`, spec v1.12), its tonic
/// clients, and the servers [`NodeService`] implements, generated from
/// this crate's own rendering of the spec's proto by
/// `tests/generated_code.rs` and shipped in the crate.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
#[rustfmt::skip]
pub mod v1;

#[cfg(feature = "testing")]
#[cfg_attr(docsrs, doc(cfg(feature = "testing")))]
pub use controller::{ControllerVolume, TestController, TestVolume};
pub use deployment::proxy_pipes;
pub use driver::{NodeDriver, NodeInfo, Volume, VolumeKind, VolumeRequest};
pub use manifests::{
    render_manifests, ManifestOptions, Manifests, ProbeTimings, Resources, Toleration,
    DEFAULT_HEALTH_PORT, LIVENESSPROBE_IMAGE, NODE_DRIVER_REGISTRAR_IMAGE,
};
pub use observe::{CSI_CALLS_TOTAL, CSI_CALL_DURATION_SECONDS};
pub use plugin::{NodePlugin, USAGE};
pub use serve::{
    serve, stop_signal, Listener, ServeError, Services, MAX_CONCURRENT_CALLS, MAX_CONNECTIONS,
    MAX_IDENTITY_CALLS, MAX_STREAMS_PER_CONNECTION, SHUTDOWN_DEADLINE,
};
pub use service::NodeService;
/// tonic's request and response, as the services' methods take and give
/// them: a driver's test calls a [`NodeService`] with these and needs no
/// tonic of its own (nor the right version of it).
pub use tonic::{Request, Response};
/// The Identity service's calls: in scope, they are methods of a
/// [`NodeService`].
pub use v1::identity_server::Identity;
/// The Node service's calls (`node_stage_volume`, ...): in scope, they
/// are methods of a [`NodeService`].
pub use v1::node_server::Node;
