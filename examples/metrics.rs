//! Metrics: the SDK's counters, histogram and gauges in Prometheus' text
//! format, after a few calls against an embedded fake CSI Proxy.
//!
//! A driver installs the exporter it wants once, at startup, before
//! connecting; the SDK only records (cargo feature `metrics`). Here the
//! Prometheus recorder renders its scrape text directly; a driver would
//! serve it on its metrics port instead (the exporter's `http-listener`
//! feature, or its own HTTP server calling `PrometheusHandle::render`).
//!
//! Run it with `cargo run --example metrics`.

use csi_proxy_client::metrics::CALL_DURATION_SECONDS;
use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints};
use csi_proxy_client::{api::WindowsPath, ApiGroup, ApiVersion as V, CsiProxy};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};

/// Histogram buckets for call durations, in seconds: local calls take a
/// fraction of a millisecond, formatting a volume may take minutes.
const DURATION_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0, 120.0, 600.0,
];

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let prometheus = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(CALL_DURATION_SECONDS.to_owned()),
            &DURATION_BUCKETS,
        )?
        .install_recorder()?;

    // Sockets in a temporary directory on Unix, named pipes on Windows.
    let endpoints = LocalEndpoints::new()?;
    let transport = endpoints.transport();
    let host = FakeHost::builder()
        .disk(1, "Google  pd-data", 10 << 30)
        .build();
    let mut fake = FakeProxy::for_host(transport.clone(), &host);
    // A node on CSI Proxy v0.2.2: disk and volume at v1beta2, filesystem at
    // v1beta1.
    let others = [
        (ApiGroup::Volume, V::V1BETA2),
        (ApiGroup::Filesystem, V::V1BETA1),
    ];
    fake.serve_all([(ApiGroup::Disk, V::V1BETA2)].into_iter().chain(others))
        .await?;

    let proxy = CsiProxy::builder()
        .transport(transport)
        .groups([ApiGroup::Disk, ApiGroup::Volume, ApiGroup::Filesystem])
        .require(ApiGroup::Disk)
        .connect()
        .await?;
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\example\globalmount")?;
    proxy.disk()?.list_disk_locations().await?;
    proxy.filesystem()?.mkdir(&staging).await?;
    proxy.filesystem()?.path_exists(&staging).await?;
    // A failure on the host: removing a directory that is not there.
    let missing = WindowsPath::new(r"C:\var\lib\kubelet\plugins\example\missing")?;
    let _ = proxy.filesystem()?.rmdir(&missing, false).await;

    // The proxy restarts with disk at v1. Its connections end, and the
    // `group_served` gauges drop to 0 at once; the client looks for the
    // proxy in the background, and the first look to find it (that, or
    // this call's, or `renegotiate`'s) counts the version change.
    fake.restart([(ApiGroup::Disk, V::V1)].into_iter().chain(others))
        .await?;
    proxy.disk()?.list_disk_locations().await?;
    proxy.renegotiate().await?;

    print!("{}", prometheus.render());
    fake.shutdown().await;
    Ok(())
}
