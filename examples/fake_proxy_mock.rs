//! A harness that injects its own mock behind a `FakeProxy`, so the driver
//! code runs through the real wire path and version negotiation: here the
//! node serves volume v1beta1 (CSI Proxy v0.2.0), and the same driver code
//! is then run against v1.
//!
//! Run it with `cargo run --example fake_proxy_mock`.

use std::sync::{Arc, Mutex};

use csi_proxy_client::testing::{FakeProxy, LocalEndpoints};
use csi_proxy_client::{
    api::{VolumeApi, VolumeId, VolumeStats},
    async_trait, ApiGroup, ApiVersion, Backends, CsiProxy, Result,
};

/// Driver code under test: how full is the volume mounted at a path?
async fn usage_percent(proxy: &CsiProxy, volume: &VolumeId) -> Result<u64> {
    let stats = proxy.volume()?.get_volume_stats(volume).await?;
    Ok(stats.used_bytes * 100 / stats.total_bytes.max(1))
}

/// The mock: a quarter-full volume, and the IDs it was asked about.
#[derive(Default)]
struct QuarterFull {
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl VolumeApi for QuarterFull {
    async fn get_volume_stats(&self, volume: &VolumeId) -> Result<VolumeStats> {
        self.asked.lock().unwrap().push(volume.to_string());
        Ok(VolumeStats {
            total_bytes: 4 << 30,
            used_bytes: 1 << 30,
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    // Sockets in a temporary directory on Unix, named pipes on Windows.
    let endpoints = LocalEndpoints::new()?;
    let transport = endpoints.transport();
    let mock = Arc::new(QuarterFull::default());
    let backends = Backends {
        volume: Some(mock.clone()),
        ..Default::default()
    };
    let volume = VolumeId::new(r"\\?\Volume{5b0d2a4e-0000-4000-8000-000000000001}\")?;

    for version in [ApiVersion::V1BETA1, ApiVersion::V1] {
        let mut fake = FakeProxy::new(transport.clone(), backends.clone());
        fake.serve(ApiGroup::Volume, version).await?;
        let proxy = CsiProxy::builder()
            .transport(transport.clone())
            .require(ApiGroup::Volume)
            .connect()
            .await?;
        println!(
            "volume {version}: {}% used, sent as {:?}",
            usage_percent(&proxy, &volume).await?,
            fake.calls()
                .iter()
                .map(|c| c.rpc.as_str())
                .collect::<Vec<_>>()
        );
        fake.shutdown().await;
    }
    assert_eq!(mock.asked.lock().unwrap().len(), 2);
    Ok(())
}
