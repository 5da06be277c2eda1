//! The driver's tests: its code against a fake CSI Proxy at an old and the
//! newest release, over Unix sockets on Linux and real named pipes under
//! Wine (docs/testing.md of the SDK).

use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, PathEntry, ProxyRelease};
use csi_proxy_client::{api::WindowsPath, CsiProxy};

const STAGING: &str = r"\var\lib\kubelet\plugins\example\pv\pvc-1\globalmount";

#[tokio::test]
async fn stages_a_new_disk_once_on_every_release() {
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let endpoints = LocalEndpoints::new().unwrap();
        let host = FakeHost::builder()
            .disk(1, "Google  pvc-1", 10 << 30)
            .dir(STAGING)
            .build();
        let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
        fake.serve_release(release).await.unwrap();
        let proxy = CsiProxy::builder()
            .transport(endpoints.transport())
            .connect()
            .await
            .unwrap();
        let staging = WindowsPath::new(STAGING).unwrap();

        wine_driver::stage(&proxy, "Google  pvc-1", &staging)
            .await
            .unwrap_or_else(|e| panic!("{release}: {e}"));
        let Some(PathEntry::MountPoint(id)) = host.entry(STAGING) else {
            panic!("{release}: nothing mounted at {STAGING}");
        };
        assert!(host.volume(&id).unwrap().formatted, "{release}");

        // kubelet's retry changes nothing: no second partition or format.
        let calls = fake.calls().len();
        wine_driver::stage(&proxy, "Google  pvc-1", &staging)
            .await
            .unwrap();
        let again: Vec<String> = fake.calls()[calls..]
            .iter()
            .map(|c| c.rpc.clone())
            .collect();
        assert!(
            !again
                .iter()
                .any(|rpc| rpc == "PartitionDisk" || rpc == "FormatVolume"),
            "{release}: {again:?}"
        );
        fake.shutdown().await;
    }
}
