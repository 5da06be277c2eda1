//! The tests' node: the host the exported conformance suite
//! (`csi_proxy_client::testing::conformance`) expects, and what the suite
//! should find unsupported at the versions a client negotiated.

use csi_proxy_client::testing::conformance::Fixture;
use csi_proxy_client::testing::FakeHost;
use csi_proxy_client::{ApiGroup, ApiVersion, CsiProxy, Operation};

/// The node the conformance suite expects (its default fixture).
pub fn seeded_host() -> FakeHost {
    Fixture::default().fake_host()
}

/// The operations the suite cannot do at the versions `proxy` negotiated.
pub fn expected_unsupported(proxy: &CsiProxy) -> Vec<Operation> {
    let mut ops: Vec<_> = Operation::ALL
        .iter()
        .copied()
        .filter(|op| {
            proxy
                .version(op.group())
                .is_some_and(|v| !op.support(v).is_available())
        })
        .collect();
    ops.sort();
    ops
}

/// Every group at its newest stable version, except `group` at `version`.
pub fn versions_with(group: ApiGroup, version: ApiVersion) -> Vec<(ApiGroup, ApiVersion)> {
    ApiGroup::ALL
        .iter()
        .map(|&g| {
            if g == group {
                (g, version)
            } else {
                let newest = *g
                    .versions()
                    .iter()
                    .filter(|v| !v.is_preview())
                    .max()
                    .unwrap();
                (g, newest)
            }
        })
        .collect()
}
