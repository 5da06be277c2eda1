//! A fake node: a fake proxy (over a fake host, or over backends of a
//! test's own) on endpoints of its own, and clients of it built as each
//! test wants them.

use csi_proxy_client::testing::{FakeHost, FakeProxy, ProxyRelease};
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, CsiProxyBuilder};

use super::scenario::seeded_host;
use super::TestNode;

/// A node whose CSI Proxy is a [`FakeProxy`].
pub struct FakeNode {
    pub fake: FakeProxy,
    place: TestNode,
}

impl FakeNode {
    /// `host` behind a fake proxy that serves nothing yet.
    pub fn of(host: &FakeHost) -> FakeNode {
        let place = TestNode::new();
        let fake = FakeProxy::for_host(place.transport(), host);
        FakeNode::on(place, fake)
    }

    /// A node whose proxy is `fake`, serving on `place`'s transport.
    pub fn on(place: TestNode, fake: FakeProxy) -> FakeNode {
        FakeNode { fake, place }
    }

    /// The tests' seeded host ([`seeded_host`]) behind a fake proxy
    /// serving `versions`.
    pub async fn serving(versions: impl IntoIterator<Item = (ApiGroup, ApiVersion)>) -> FakeNode {
        let mut node = FakeNode::of(&seeded_host());
        node.fake.serve_all(versions).await.unwrap();
        node
    }

    /// `host` behind a fake proxy at `release` (its versions, its rules).
    pub async fn at(release: ProxyRelease, host: &FakeHost) -> FakeNode {
        let mut node = FakeNode::of(host);
        node.fake.serve_release(release).await.unwrap();
        node
    }

    /// A client of the node, to be set as the test wants.
    pub fn client_builder(&self) -> CsiProxyBuilder {
        self.place.client_builder()
    }

    /// A client of the node with every default, as drivers get it without
    /// tuning anything.
    pub async fn client(&self) -> CsiProxy {
        self.place.client().await
    }
}
