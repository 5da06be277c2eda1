//! The recipes of docs/testing.md ("Recipes"), one test each, with the
//! guide's code: a driver copies them from there, and these keep them
//! true, here over Unix sockets and with `scripts/test-windows.sh` over
//! named pipes under Wine. Change one, change the other.

use std::future::Future;
use std::time::{Duration, Instant};

use std::collections::HashMap;

use csi_proxy_client::api::WindowsPath;
use csi_proxy_client::csi::v1::volume_capability::{access_mode::Mode, AccessMode, AccessType};
use csi_proxy_client::csi::v1::*;
use csi_proxy_client::csi::{
    Node, NodeDriver, NodeService, Request, Volume, VolumeKind, VolumeRequest,
};
use csi_proxy_client::mount::{DiskSelector, Mounter, Staged};
use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints, PathEntry, ProxyRelease};
use csi_proxy_client::{Code, CsiProxy, Error, Operation, Status};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// The driver's code under test: its NodeStageVolume.
async fn node_stage(mounter: &Mounter, staging: &WindowsPath) -> Result<Staged, Error> {
    let disk = DiskSelector::page83("Google  pvc-1");
    mounter.stage_disk(&disk, staging).await
}

/// kubelet's retries: the call again after any error, 50 ms later,
/// then 100 ms, ..., six tries in all (kubelet itself starts at 500 ms
/// and goes on for minutes).
async fn as_kubelet<T, F, Fut>(mut call: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Error>>,
{
    let mut wait = Duration::from_millis(50);
    let mut outcome = call().await;
    for _ in 1..6 {
        if outcome.is_ok() {
            break;
        }
        tokio::time::sleep(wait).await;
        wait *= 2;
        outcome = call().await;
    }
    outcome
}

/// "The proxy restarts in the middle of my operation": the host formats
/// the volume, the proxy restarts before the answer reaches the driver,
/// and kubelet's retries finish the stage with no second format.
#[tokio::test]
async fn the_proxy_restarts_in_the_middle_of_my_operation() -> TestResult {
    let release = ProxyRelease::V1_1_0;
    let endpoints = LocalEndpoints::new()?;
    let host = FakeHost::builder()
        .disk(1, "Google  pvc-1", 10 << 30)
        .dir(r"C:\var\lib\kubelet\plugins\pd.csi.example\pv-1")
        .build();
    let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    fake.serve_release(release).await?;
    let proxy = CsiProxy::builder()
        .transport(endpoints.transport())
        .connect()
        .await?;
    let state = tempfile::tempdir()?;
    let mounter = Mounter::builder(proxy, state.path()).build()?;
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd.csi.example\pv-1\globalmount")?;

    // Hold the answer of the host's next call, whatever it is...
    let mut held = host.hold_answer(1);
    let first = tokio::spawn({
        let (mounter, staging) = (mounter.clone(), staging.clone());
        async move { node_stage(&mounter, &staging).await }
    });
    // ...and let the answers go, one by one, up to the format's: the volume
    // is formatted now, and the driver does not know it yet.
    let format_answer = loop {
        let (operation, answer) = held.await?;
        if operation == Operation::FormatVolume {
            break answer;
        }
        held = host.hold_answer(1); // the next call's, before this one answers
        drop(answer);
    };
    // The proxy restarts: its connections break, the answer is lost.
    fake.restart(release.served()).await?;
    drop(format_answer);

    // The format's answer was lost; the mounter looked at the volume, found
    // it formatted, and went on: the first call ends the stage by itself.
    // (Had the format not been done, the call would fail, retryable, until
    // the format's wait has passed: the retries are kubelet's.)
    first.await??;
    // kubelet calls again: nothing changes, nothing is formatted twice.
    let staged = as_kubelet(|| node_stage(&mounter, &staging)).await?;
    assert_eq!(host.calls_of(Operation::FormatVolume), 1, "formatted once");
    assert_eq!(
        host.entry(staging.as_str()),
        Some(PathEntry::MountPoint(staged.volume))
    );
    Ok(())
}

/// The recipe's second cut: the proxy restarts while the format is held
/// before the host's work, so the format never happens. The mounter takes
/// it as possibly running (`InProgress`) until its deadline and grace,
/// short here, have passed; then a retry formats, and the stage converges.
#[tokio::test]
async fn the_proxy_restarts_before_the_host_formats() -> TestResult {
    let release = ProxyRelease::V1_1_0;
    let endpoints = LocalEndpoints::new()?;
    let host = FakeHost::builder()
        .disk(1, "Google  pvc-1", 10 << 30)
        .dir(r"C:\var\lib\kubelet\plugins\pd.csi.example\pv-1")
        .build();
    let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    fake.serve_release(release).await?;
    let proxy = CsiProxy::builder()
        .transport(endpoints.transport())
        .connect()
        .await?;
    let state = tempfile::tempdir()?;
    let mounter = Mounter::builder(proxy, state.path())
        .format_deadline(Duration::from_millis(400))
        .format_grace(Duration::from_millis(400))
        .build()?;
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd.csi.example\pv-1\globalmount")?;

    let mut held = host.hold_call(1);
    let first = tokio::spawn({
        let (mounter, staging) = (mounter.clone(), staging.clone());
        async move { node_stage(&mounter, &staging).await }
    });
    let format = loop {
        let (operation, go) = held.await?;
        if operation == Operation::FormatVolume {
            break go;
        }
        held = host.hold_call(1); // the next call's, before this one goes on
        go.send(()).expect("the held call waits for its go-ahead");
    };
    fake.restart(release.served()).await?;
    drop(format); // its caller is gone: the format is never done

    let error = first.await?.unwrap_err();
    let Error::Transport { maybe_sent, .. } = &error else {
        panic!("{error}");
    };
    assert!(*maybe_sent, "the format may have been done: {error}");
    // At once, the format may still be running as far as the driver knows.
    let error = node_stage(&mounter, &staging).await.unwrap_err();
    assert!(matches!(error, Error::InProgress { .. }), "{error}");
    assert_eq!(
        (error.csi_code(), error.is_retryable()),
        (Code::Aborted, true)
    );
    // Past the format's deadline and grace, a retry formats.
    let staged = as_kubelet(|| node_stage(&mounter, &staging)).await?;
    assert!(staged.formatted, "{staged:?}");
    assert_eq!(
        host.calls_of(Operation::FormatVolume),
        2,
        "the cut format, counted without its work, and the retry's"
    );
    assert_eq!(
        host.entry(staging.as_str()),
        Some(PathEntry::MountPoint(staged.volume))
    );
    Ok(())
}

/// "The disk is not attached": the stage gives up after a short
/// `disk_wait` with `NotFound`, and makes nothing at the staging path.
#[tokio::test]
async fn the_disk_is_not_attached() -> TestResult {
    let endpoints = LocalEndpoints::new()?;
    // The node has its boot disk, not the volume's.
    let host = FakeHost::builder()
        .system_disk(0, "Google  persistent-disk-0", 50 << 30)
        .dir(r"C:\var\lib\kubelet\plugins\pd.csi.example\pv-1")
        .build();
    let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
    fake.serve_release(ProxyRelease::LATEST).await?;
    let proxy = CsiProxy::builder()
        .transport(endpoints.transport())
        .connect()
        .await?;
    let state = tempfile::tempdir()?;
    // Not the default 2 minutes of looking, once a second.
    let mounter = Mounter::builder(proxy, state.path())
        .disk_wait(Duration::from_millis(300))
        .poll_interval(Duration::from_millis(20))
        .build()?;
    let staging = WindowsPath::new(r"C:\var\lib\kubelet\plugins\pd.csi.example\pv-1\globalmount")?;

    let started = Instant::now();
    let error = node_stage(&mounter, &staging).await.unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error}");
    assert_eq!(error.csi_code(), Code::NotFound); // what kubelet is answered
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        host.calls_of(Operation::Rescan) > 0,
        "looked again, rescanned"
    );
    assert_eq!(host.entry(staging.as_str()), None, "nothing made");
    Ok(())
}

/// The driver under test: its disks at the LUN its controller's attach
/// reports in the publish context.
struct LunDriver;

impl NodeDriver for LunDriver {
    fn name(&self) -> &str {
        "disk.csi.example.com"
    }
    fn version(&self) -> &str {
        "1.0.0"
    }
    fn kinds(&self) -> &[VolumeKind] {
        &[VolumeKind::Disk]
    }
    fn volume(&self, request: &VolumeRequest<'_>) -> Result<Volume, Status> {
        match request.publish_context.get("lun") {
            Some(lun) => Ok(Volume::Disk(DiskSelector::lun(lun))),
            None => Err(Status::not_found(format!(
                "no volume {}",
                request.volume_id
            ))),
        }
    }
}

/// "Testing your NodeDriver": kubelet's calls of one volume's life
/// through the driver's node service, on a node of CSI Proxy v0.2.2 and
/// one of the newest release.
#[tokio::test]
async fn testing_your_node_driver() -> TestResult {
    let volume = "pv-1";
    let staging = r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pv-1\globalmount";
    let target = r"C:\var\lib\kubelet\pods\p1\volumes\kubernetes.io~csi\pv-1\mount";
    let mount = VolumeCapability {
        access_type: Some(AccessType::Mount(Default::default())),
        access_mode: Some(AccessMode {
            mode: Mode::SingleNodeWriter as i32,
        }),
    };
    // The fake's data disk 1 is at adapter 1, target 0, LUN 1.
    let attached = HashMap::from([("lun".to_owned(), "1".to_owned())]);
    for release in [ProxyRelease::V0_2_2, ProxyRelease::LATEST] {
        let endpoints = LocalEndpoints::new()?;
        let host = FakeHost::builder()
            .disk(1, "", 10 << 30)
            // The parents kubelet makes.
            .dir(r"C:\var\lib\kubelet\plugins\kubernetes.io\csi\pv-1")
            .dir(r"C:\var\lib\kubelet\pods\p1\volumes\kubernetes.io~csi\pv-1")
            .build();
        let mut fake = FakeProxy::for_host(endpoints.transport(), &host);
        fake.serve_release(release).await?;
        let proxy = CsiProxy::builder()
            .transport(endpoints.transport())
            .connect()
            .await?;
        let state = tempfile::tempdir()?;
        let mounter = Mounter::builder(proxy, state.path()).build()?;
        let node = NodeService::new(LunDriver, mounter, "node-1", state.path())?;

        let stage = NodeStageVolumeRequest {
            volume_id: volume.into(),
            publish_context: attached.clone(),
            staging_target_path: staging.into(),
            volume_capability: Some(mount.clone()),
            ..Default::default()
        };
        node.node_stage_volume(Request::new(stage)).await?;
        let publish = NodePublishVolumeRequest {
            volume_id: volume.into(),
            publish_context: attached.clone(),
            staging_target_path: staging.into(),
            target_path: target.into(),
            volume_capability: Some(mount.clone()),
            ..Default::default()
        };
        node.node_publish_volume(Request::new(publish)).await?;
        assert!(matches!(host.entry(target), Some(PathEntry::Symlink(_))));

        let stats = NodeGetVolumeStatsRequest {
            volume_id: volume.into(),
            volume_path: target.into(),
            ..Default::default()
        };
        let stats = node.node_get_volume_stats(Request::new(stats)).await?;
        assert!(stats.into_inner().usage[0].total > 9 << 30, "{release}");
        // The controller grew the disk; kubelet has the node grow the volume.
        assert!(host.set_disk_size(1, 20 << 30));
        let expand = NodeExpandVolumeRequest {
            volume_id: volume.into(),
            volume_path: target.into(),
            ..Default::default()
        };
        let grown = node.node_expand_volume(Request::new(expand)).await?;
        assert!(grown.into_inner().capacity_bytes > 19 << 30, "{release}");

        let unpublish = NodeUnpublishVolumeRequest {
            volume_id: volume.into(),
            target_path: target.into(),
        };
        node.node_unpublish_volume(Request::new(unpublish)).await?;
        let unstage = NodeUnstageVolumeRequest {
            volume_id: volume.into(),
            staging_target_path: staging.into(),
        };
        node.node_unstage_volume(Request::new(unstage)).await?;
        assert_eq!(host.entry(target), None);
        assert_eq!(host.entry(staging), None);
        assert!(!host.disk(1).unwrap().online, "taken offline");
    }
    Ok(())
}

/// The guide shows these tests' code: each recipe test's body, and the
/// driver's functions, appear in docs/testing.md as they are here (the
/// guide's `#` lines, hidden in its rendering, set up `main`).
#[test]
fn the_guide_shows_the_code_these_tests_run() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let guide = std::fs::read_to_string(root.join("docs/testing.md")).unwrap();
    let shown: String = guide
        .lines()
        .filter(|line| !(line.starts_with("# ") || *line == "#"))
        .map(|line| format!("{line}\n"))
        .collect();
    let source = std::fs::read_to_string(root.join("tests/it/recipes.rs")).unwrap();
    let mut pieces = Vec::new();
    for recipe in [
        "the_proxy_restarts_in_the_middle_of_my_operation",
        "the_disk_is_not_attached",
        "testing_your_node_driver",
    ] {
        let start = source.find(&format!("async fn {recipe}() -> TestResult {{\n"));
        let body = &source[start.expect(recipe)..];
        let body = &body[body.find('\n').unwrap() + 1..body.find("\n    Ok(())\n}").unwrap()];
        let body: String = body
            .lines()
            .map(|line| format!("{}\n", line.strip_prefix("    ").unwrap_or(line)))
            .collect();
        pieces.push((recipe, body));
    }
    for function in [
        "async fn node_stage(",
        "async fn as_kubelet<",
        "struct LunDriver;",
        "impl NodeDriver for LunDriver {",
    ] {
        let start = source.find(function).expect(function);
        let start = source[..start].rfind("\n\n").unwrap() + 2;
        let end = start + source[start..].find("\n}\n").unwrap() + 3;
        pieces.push((function, source[start..end].to_owned()));
    }
    for (name, piece) in pieces {
        assert!(
            shown.contains(&piece),
            "docs/testing.md does not show {name} as tests/it/recipes.rs has it:\n{piece}"
        );
    }
}
