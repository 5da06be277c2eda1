//! A volume backend that answers slowly, for deadlines and for cutting a
//! call off in flight.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{
    api::{VolumeApi, VolumeId, VolumeStats},
    async_trait,
    transport::Transport,
    ApiGroup, ApiVersion, Backends, Result,
};

use super::{node::FakeNode, TestNode};

/// A volume backend that takes its time and counts what it was asked.
#[derive(Default)]
pub struct SlowVolumes {
    pub formats: AtomicUsize,
    pub stats: AtomicUsize,
    pub delay_ms: u64,
}

#[async_trait]
impl VolumeApi for SlowVolumes {
    async fn format_volume(&self, _volume: &VolumeId) -> Result<()> {
        self.formats.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Ok(())
    }

    async fn list_volumes_on_disk(
        &self,
        _disk: u32,
        _partition: Option<u32>,
    ) -> Result<Vec<VolumeId>> {
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Ok(Vec::new())
    }

    async fn get_volume_stats(&self, _volume: &VolumeId) -> Result<VolumeStats> {
        self.stats.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(self.delay_ms)).await;
        Ok(VolumeStats {
            total_bytes: 10,
            used_bytes: 1,
        })
    }
}

/// A fake proxy serving volume v1 from a [`SlowVolumes`] backend that
/// takes `delay_ms` per call.
pub async fn serve_slow_volumes(
    transport: Transport,
    delay_ms: u64,
) -> (Arc<SlowVolumes>, FakeProxy) {
    let backend = Arc::new(SlowVolumes {
        delay_ms,
        ..Default::default()
    });
    let backends = Backends {
        volume: Some(backend.clone()),
        ..Default::default()
    };
    let mut fake = FakeProxy::new(transport, backends);
    fake.serve(ApiGroup::Volume, ApiVersion::V1).await.unwrap();
    (backend, fake)
}

/// A node whose fake proxy is [`serve_slow_volumes`]'s.
pub async fn slow_volume_node(delay_ms: u64) -> (Arc<SlowVolumes>, FakeNode) {
    let place = TestNode::new();
    let (backend, fake) = serve_slow_volumes(place.transport(), delay_ms).await;
    (backend, FakeNode::on(place, fake))
}
