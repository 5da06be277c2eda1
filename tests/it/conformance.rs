//! One conformance suite, three backends: the in-memory `FakeHost`
//! directly, and the `FakeProxy` at every one of the 23 wire versions, over
//! Unix sockets here and over named pipes when built for Windows (under
//! Wine, see `scripts/test-windows.sh`).

use std::collections::BTreeSet;

use crate::common::path;
use crate::common::scenario::{expected_unsupported, seeded_host, versions_with};
use crate::common::{every_version, TestNode};
use csi_proxy_client::testing::conformance::{self, Fixture};
use csi_proxy_client::testing::{FakeHost, FakeProxy, PathEntry};
use csi_proxy_client::{
    api::{FilesystemApi, Secret, SmbMapping, SmbRemotePath, VolumeId, WindowsPath},
    negotiate::VersionPolicy,
    ApiGroup, ApiVersion, CsiProxy, Error, Operation,
};

#[tokio::test]
async fn the_node_flow_runs_on_the_fake_host_directly() {
    let host = seeded_host();
    let report = conformance::all(&host.proxy(), &Fixture::default())
        .await
        .unwrap();
    assert!(report.unsupported.is_empty(), "{report:?}");
    assert_host_changed(&host);
    assert_eq!(report.succeeded, Operation::ALL, "every operation ran");
}

/// What the suite leaves on the host it ran on: the disks partitioned, the
/// volume formatted and unmounted, no SMB mapping, no iSCSI session.
fn assert_host_changed(host: &FakeHost) {
    let fixture = Fixture::default();
    assert!(host.disk(fixture.disk.number).unwrap().partitioned);
    let volumes = host.volumes();
    let on_disk: Vec<_> = volumes
        .values()
        .filter(|v| v.disk == fixture.volume.disk)
        .collect();
    assert_eq!(on_disk.len(), 1);
    assert!(on_disk[0].formatted && on_disk[0].mounts.is_empty());
    assert!(host.smb_mappings().is_empty());
    assert!(host.iscsi_sessions().is_empty());
    assert_eq!(
        host.entry(fixture.filesystem.root.as_str()),
        Some(PathEntry::Directory)
    );
}

/// `host` behind a fake proxy serving `group` at `version` (the other
/// groups at their newest), and a client that negotiated that version.
async fn serve_at(
    group: ApiGroup,
    version: ApiVersion,
    host: &FakeHost,
) -> (TestNode, FakeProxy, CsiProxy) {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), host);
    fake.serve_all(versions_with(group, version)).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .policy(VersionPolicy::default().allow_preview(version.is_preview()))
        .connect()
        .await
        .unwrap();
    assert_eq!(proxy.version(group), Some(version), "negotiated {group}");
    (node, fake, proxy)
}

#[tokio::test]
async fn the_node_flow_runs_over_the_wire_at_every_version() {
    let mut ran = 0;
    for (group, version) in every_version() {
        let host = seeded_host();
        let (_node, fake, proxy) = serve_at(group, version, &host).await;
        let report = conformance::all(&proxy, &Fixture::default())
            .await
            .unwrap_or_else(|violation| panic!("{group} {version}: {violation}"));
        assert_eq!(
            report.unsupported,
            expected_unsupported(&proxy),
            "{group} {version}"
        );
        assert_host_changed(&host);

        // Every call reached the version negotiated for its group.
        for call in fake.calls() {
            assert_eq!(Some(call.version), proxy.version(call.group), "{call:?}");
            assert!(
                call.operation.is_some(),
                "{call:?} is not an RPC of its version"
            );
        }
        fake.shutdown().await;
        ran += 1;
    }
    assert_eq!(ran, every_version().len());
}

#[tokio::test]
async fn the_oldest_versions_lack_exactly_what_the_table_says() {
    let node = TestNode::new();
    let host = seeded_host();
    let mut fake = FakeProxy::for_host(node.transport(), &host);
    let oldest: Vec<_> = ApiGroup::ALL
        .iter()
        .map(|&g| (g, ApiVersion::V1ALPHA1))
        .collect();
    fake.serve_all(oldest).await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .connect()
        .await
        .unwrap();
    let report = conformance::all(&proxy, &Fixture::default()).await.unwrap();
    // The table's word, which docs/versions.md shows too (both are generated
    // from the catalogue): the suite must find exactly these missing.
    let lacking: BTreeSet<Operation> = Operation::ALL
        .iter()
        .copied()
        .filter(|op| !op.support(ApiVersion::V1ALPHA1).is_available())
        .collect();
    assert!(!lacking.is_empty());
    let found: BTreeSet<Operation> = report.unsupported.iter().copied().collect();
    assert_eq!(found.len(), report.unsupported.len(), "each once");
    assert_eq!(found, lacking);
}

// ---- one behaviour, every backend -----------------------------------------

/// The outcome of `check` on a fresh `host()`: directly, then through the
/// fake proxy at every version of `group` (the other groups at their
/// newest). Each entry is labelled with where it ran; the check gets the
/// host too, to look at its state.
async fn on_every_backend<T, F, Fut>(
    group: ApiGroup,
    host: impl Fn() -> FakeHost,
    check: F,
) -> Vec<(String, T)>
where
    F: Fn(CsiProxy, FakeHost) -> Fut,
    Fut: std::future::Future<Output = T>,
{
    let direct = host();
    let mut outcomes = vec![("directly".to_owned(), check(direct.proxy(), direct).await)];
    for &version in group.versions() {
        let host = host();
        let (_node, fake, proxy) = serve_at(group, version, &host).await;
        outcomes.push((format!("{group} {version}"), check(proxy, host).await));
        fake.shutdown().await;
    }
    outcomes
}

/// Checks that every backend's outcome is `expected`.
fn assert_all<T: PartialEq + std::fmt::Debug>(outcomes: &[(String, T)], expected: T) {
    for (backend, outcome) in outcomes {
        assert_eq!(outcome, &expected, "{backend}");
    }
}

/// The error's kind and, for a host error, its code: what every backend
/// must agree on.
fn kind<T>(result: csi_proxy_client::Result<T>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(Error::Host { code, .. }) => format!("Host({code:?})"),
        Err(e) => format!("{:?}", e.kind()),
    }
}

#[tokio::test]
async fn an_unknown_page83_is_not_found_on_every_version() {
    let outcomes = on_every_backend(ApiGroup::Disk, seeded_host, |proxy, _| async move {
        kind(
            proxy
                .disk()
                .unwrap()
                .get_disk_number_by_name("no-such-disk")
                .await,
        )
    })
    .await;
    assert_all(&outcomes, "NotFound".to_owned());
}

/// Under the kubelet directory, the fake host's working directory.
const KUBELET: &str = r"C:\var\lib\kubelet";

#[tokio::test]
async fn a_forced_rmdir_of_a_missing_path_succeeds_an_unforced_one_fails() {
    let outcomes = on_every_backend(ApiGroup::Filesystem, seeded_host, |proxy, _| async move {
        let fs = proxy.filesystem().unwrap();
        let missing = path(&format!(r"{KUBELET}\missing"));
        (
            kind(fs.rmdir(&missing, true).await),
            kind(fs.rmdir(&missing, false).await),
        )
    })
    .await;
    assert_all(&outcomes, ("ok".into(), "Host(Unknown)".into()));
}

#[tokio::test]
async fn a_dangling_symlink_exists_but_is_no_mount_point() {
    let outcomes = on_every_backend(ApiGroup::Filesystem, seeded_host, |proxy, _| async move {
        let fs = proxy.filesystem().unwrap();
        let (target, link) = (
            path(&format!(r"{KUBELET}\target")),
            path(&format!(r"{KUBELET}\link")),
        );
        fs.mkdir(&target).await.unwrap();
        fs.create_symlink(&target, &link).await.unwrap();
        fs.rmdir(&target, false).await.unwrap();
        (
            fs.path_exists(&link).await.unwrap(),
            fs.is_symlink(&link).await.unwrap(),
        )
    })
    .await;
    assert_all(&outcomes, (true, false));
}

#[tokio::test]
async fn listing_the_volumes_of_a_missing_disk_is_an_empty_list() {
    let outcomes = on_every_backend(ApiGroup::Volume, seeded_host, |proxy, _| async move {
        proxy
            .volume()
            .unwrap()
            .list_volumes_on_disk(99, None)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert_all(&outcomes, Ok(Vec::new()));
}

/// Partitions disk 1 and formats its volume; returns the volume.
async fn formatted_volume(proxy: &CsiProxy) -> VolumeId {
    proxy.disk().unwrap().partition_disk(1).await.unwrap();
    let volume = proxy.volume().unwrap();
    let id = volume
        .list_volumes_on_disk(1, None)
        .await
        .unwrap()
        .remove(0);
    volume.format_volume(&id).await.unwrap();
    id
}

#[tokio::test]
async fn a_resize_to_less_than_100_mib_more_is_skipped_smaller_included() {
    let outcomes = on_every_backend(ApiGroup::Volume, seeded_host, |proxy, host| async move {
        let id = formatted_volume(&proxy).await;
        let volume = proxy.volume().unwrap();
        let size = || host.volume(&id).unwrap().size_bytes;
        let before = size();
        let shrink = kind(volume.resize_volume(&id, before / 2).await);
        let nudge = kind(volume.resize_volume(&id, before + (50 << 20)).await);
        let too_big = kind(volume.resize_volume(&id, before * 4).await);
        let after = size();
        (shrink, nudge, too_big, after == before)
    })
    .await;
    assert_all(
        &outcomes,
        ("ok".into(), "ok".into(), "Host(Unknown)".into(), true),
    );
}

#[tokio::test]
async fn unmounting_removes_the_mount_point_whichever_volume_it_holds() {
    let outcomes = on_every_backend(ApiGroup::Volume, seeded_host, |proxy, host| async move {
        let first = formatted_volume(&proxy).await;
        proxy.disk().unwrap().partition_disk(2).await.unwrap();
        let volume = proxy.volume().unwrap();
        let second = volume
            .list_volumes_on_disk(2, None)
            .await
            .unwrap()
            .remove(0);
        let target = path(&format!(r"{KUBELET}\mnt"));
        proxy.filesystem().unwrap().mkdir(&target).await.unwrap();
        volume.mount_volume(&first, &target).await.unwrap();
        // Named with the other volume: the proxy removes the mount point
        // at the path all the same.
        let unmounted = kind(volume.unmount_volume(&second, &target).await);
        let again = kind(volume.unmount_volume(&first, &target).await);
        (unmounted, again, host.entry(target.as_str()))
    })
    .await;
    assert_all(
        &outcomes,
        (
            "ok".into(),
            "Host(Unknown)".into(),
            Some(PathEntry::Directory),
        ),
    );
}

fn share() -> SmbRemotePath {
    SmbRemotePath::new(r"\\files\share").unwrap()
}

#[tokio::test]
async fn a_refused_local_path_leaves_the_global_mapping_made() {
    let outcomes = on_every_backend(ApiGroup::Smb, seeded_host, |proxy, host| async move {
        let outside = path(r"C:\Windows\Temp\share");
        let mapping = SmbMapping::new(share(), "smb-user", Secret::new("smb-pw"))
            .with_local_path(outside.clone());
        let refused = kind(proxy.smb().unwrap().new_smb_global_mapping(&mapping).await);
        (refused, host.smb_mappings(), host.entry(outside.as_str()))
    })
    .await;
    assert_all(
        &outcomes,
        (
            "Host(Unknown)".into(),
            vec![r"\\files\share".to_owned()],
            None,
        ),
    );
}

#[tokio::test]
async fn a_usable_mapping_is_kept_without_checking_credentials_again() {
    let outcomes = on_every_backend(ApiGroup::Smb, seeded_host, |proxy, host| async move {
        let smb = proxy.smb().unwrap();
        let wrong = SmbMapping::new(share(), "smb-user", Secret::new("wrong"));
        let before = kind(smb.new_smb_global_mapping(&wrong).await);
        let right = SmbMapping::new(share(), "smb-user", Secret::new("smb-pw"));
        smb.new_smb_global_mapping(&right).await.unwrap();
        let kept = kind(smb.new_smb_global_mapping(&wrong).await);
        // A mapping that went bad is made again, and then they count.
        host.invalidate_smb_mapping(r"\\files\share");
        let remade = kind(smb.new_smb_global_mapping(&wrong).await);
        (before, kept, remade)
    })
    .await;
    assert_all(
        &outcomes,
        ("Host(Unknown)".into(), "ok".into(), "Host(Unknown)".into()),
    );
}

#[tokio::test]
async fn a_local_path_that_exists_is_refused_even_as_the_same_link() {
    let outcomes = on_every_backend(ApiGroup::Smb, seeded_host, |proxy, _| async move {
        let link = path(&format!(r"{KUBELET}\share-link"));
        let mapping =
            SmbMapping::new(share(), "smb-user", Secret::new("smb-pw")).with_local_path(link);
        let smb = proxy.smb().unwrap();
        (
            kind(smb.new_smb_global_mapping(&mapping).await),
            kind(smb.new_smb_global_mapping(&mapping).await),
        )
    })
    .await;
    assert_all(&outcomes, ("ok".into(), "Host(Unknown)".into()));
}

// ---- the suite itself ------------------------------------------------------

/// The fake host's filesystem, except that `rmdir` always forces: the
/// mistake a hand-written mock makes.
struct AlwaysForces(FakeHost);

#[csi_proxy_client::async_trait]
impl FilesystemApi for AlwaysForces {
    async fn path_exists(&self, path: &WindowsPath) -> csi_proxy_client::Result<bool> {
        self.0.path_exists(path).await
    }
    async fn mkdir(&self, path: &WindowsPath) -> csi_proxy_client::Result<()> {
        self.0.mkdir(path).await
    }
    async fn rmdir(&self, path: &WindowsPath, _force: bool) -> csi_proxy_client::Result<()> {
        self.0.rmdir(path, true).await
    }
    async fn rmdir_contents(&self, path: &WindowsPath) -> csi_proxy_client::Result<()> {
        self.0.rmdir_contents(path).await
    }
    async fn create_symlink(
        &self,
        target: &WindowsPath,
        link: &WindowsPath,
    ) -> csi_proxy_client::Result<()> {
        self.0.create_symlink(target, link).await
    }
    async fn is_symlink(&self, path: &WindowsPath) -> csi_proxy_client::Result<bool> {
        self.0.is_symlink(path).await
    }
}

#[tokio::test]
async fn the_suite_names_the_rule_a_mock_breaks() {
    let fixture = Fixture::default();
    let violation =
        conformance::filesystem(&AlwaysForces(fixture.fake_host()), &fixture.filesystem)
            .await
            .unwrap_err();
    assert_eq!(violation.operation, Operation::Rmdir);
    assert!(
        violation
            .to_string()
            .contains("unforced rmdir of a missing path"),
        "{violation}"
    );

    // A mock that implements nothing fails at its first operation, with
    // the trait's `NotImplemented`.
    struct Nothing;
    impl FilesystemApi for Nothing {}
    let violation = conformance::filesystem(&Nothing, &fixture.filesystem)
        .await
        .unwrap_err();
    assert_eq!(violation.operation, Operation::PathExists);
    assert!(violation.detail.contains("not implemented"), "{violation}");
}

#[tokio::test]
async fn each_group_passes_alone_on_a_fresh_fake_host() {
    let fixture = Fixture::default();
    let host = || fixture.fake_host();
    let reports = [
        conformance::disk(&host(), &fixture.disk).await,
        conformance::filesystem(&host(), &fixture.filesystem).await,
        conformance::smb(&host(), &fixture.smb).await,
        conformance::volume(&host(), &fixture.volume).await,
        conformance::iscsi(&host(), &fixture.iscsi).await,
        conformance::system(&host(), &fixture.system).await,
    ];
    for (group, report) in ApiGroup::ALL.iter().zip(reports) {
        let report = report.unwrap_or_else(|violation| panic!("{violation}"));
        let ops: Vec<_> = Operation::of_group(*group).collect();
        assert!(report.unsupported.is_empty(), "{group}: {report:?}");
        for op in &report.succeeded {
            assert_eq!(op.group(), *group, "{op} ran in the {group} suite");
        }
        assert_eq!(report.succeeded.len(), ops.len(), "{group}: {report:?}");
    }
}
