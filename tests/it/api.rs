//! The stable API as a driver sees it: the facade, bad input, secrets, mocks.

use std::sync::Arc;
use std::time::Duration;

use crate::common::TestNode;
use csi_proxy_client::testing::sample::{path, portal, share, volume, IQN};
use csi_proxy_client::{
    api::{
        DiskApi, DiskIds, IscsiAuth, Secret, SmbMapping, SmbRemotePath, TargetPortal, VolumeId,
        WindowsPath,
    },
    async_trait,
    health::GroupStatus,
    ApiGroup, ApiVersion, Backends, CallOptions, CsiProxy, Error, Operation,
};
use ApiVersion as V;

#[tokio::test]
async fn groups_that_are_not_served_are_reported_not_fatal() {
    let node = TestNode::serving(&[(ApiGroup::Disk, V::V1), (ApiGroup::Volume, V::V1BETA2)]).await;
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .connect()
        .await
        .unwrap();
    assert_eq!(proxy.version(ApiGroup::Disk), Some(V::V1));
    assert_eq!(proxy.version(ApiGroup::Volume), Some(V::V1BETA2));
    assert!(proxy.disk().is_ok() && proxy.volume().is_ok());
    assert!(!proxy.is_served(ApiGroup::Smb));
    assert_eq!(proxy.version(ApiGroup::Smb), None);
    // Health says why, without waiting.
    let health = proxy.health();
    assert!(health.is_ready(&[ApiGroup::Disk, ApiGroup::Volume]));
    assert!(!health.is_ready(&[ApiGroup::Smb]));
    match &health.group(ApiGroup::Smb).unwrap().status {
        GroupStatus::NotServed {
            since: Some(_),
            last_error: Some(Error::NotServed { group, tried }),
        } => {
            assert_eq!(*group, ApiGroup::Smb);
            assert_eq!(tried.len(), 4);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(proxy.report().chosen(ApiGroup::Smb), None);
    // The handle exists; its calls wait for the group within their deadline.
    let hasty =
        proxy.with_call_options(CallOptions::default().deadline(Duration::from_millis(300)));
    let share = SmbRemotePath::new(r"\\srv\share").unwrap();
    let started = std::time::Instant::now();
    let err = hasty
        .smb()
        .unwrap()
        .remove_smb_global_mapping(&share)
        .await
        .unwrap_err();
    // What it waited through: the group was not there.
    assert!(
        matches!(
            err,
            Error::NotServed {
                group: ApiGroup::Smb,
                ..
            }
        ),
        "{err}"
    );
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn required_groups_must_be_served() {
    let node = TestNode::serving(&[(ApiGroup::Disk, V::V1)]).await;
    let err = CsiProxy::builder()
        .transport(node.transport())
        .require(ApiGroup::Disk)
        .require(ApiGroup::Filesystem)
        .wait_for_proxy(Duration::ZERO)
        .connect()
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotServed {
                group: ApiGroup::Filesystem,
                ..
            }
        ),
        "{err}"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn a_missing_socket_directory_is_an_invalid_argument() {
    let err = CsiProxy::builder()
        .socket_dir("/nonexistent/csi-proxy")
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}

#[tokio::test]
async fn one_client_serves_many_tasks() {
    let node = TestNode::serving_everything().await;
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .connect()
        .await
        .unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..32 {
        let proxy = proxy.clone();
        tasks.spawn(async move {
            // The stub answers Unimplemented: a host error, over the real wire.
            let err = proxy.disk().unwrap().get_disk_stats(i).await.unwrap_err();
            assert!(matches!(err, Error::Host { .. }), "{err}");
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    assert_eq!(node.paths().len(), 32);
}

/// A driver-side mock: two disks.
struct TwoDisks;

#[async_trait]
impl DiskApi for TwoDisks {
    async fn list_disk_ids(
        &self,
    ) -> csi_proxy_client::Result<std::collections::BTreeMap<u32, DiskIds>> {
        let ids = |p: &str| DiskIds {
            page83: p.into(),
            serial_number: String::new(),
        };
        Ok([(1, ids("a")), (2, ids("b"))].into())
    }
}

#[tokio::test]
async fn mocks_stand_in_for_groups() {
    let proxy = CsiProxy::from_backends(Backends {
        disk: Some(Arc::new(TwoDisks)),
        ..Default::default()
    });
    let disk = proxy.disk().unwrap();
    assert_eq!(disk.get_disk_number_by_name("b").await.unwrap(), 2);
    assert!(matches!(
        disk.rescan().await,
        Err(Error::NotImplemented {
            operation: Operation::Rescan
        })
    ));
    assert!(matches!(proxy.volume(), Err(Error::NotServed { .. })));
    assert_eq!(proxy.version(ApiGroup::Disk), None);
}

#[test]
fn handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CsiProxy>();
    assert_send_sync::<Arc<dyn DiskApi>>();
    assert_send_sync::<Error>();
}

#[tokio::test]
async fn bad_input_is_rejected_before_anything_is_sent() {
    // Constructors refuse malformed values outright.
    assert!(WindowsPath::new(r"C:\a\..\b").is_err());
    // An 8.3 short name may open another folder than it reads.
    assert!(WindowsPath::new(r"C:\var\lib\kubelet\plugins\PD~1\pv").is_err());
    assert!(WindowsPath::new(r"C:\var\lib\kubelet\pods\p\volumes\kubernetes.io~csi").is_ok());
    assert!(VolumeId::new("").is_err());
    assert!(SmbRemotePath::new(r"C:\share").is_err());
    assert!(SmbRemotePath::new(r"\\server").is_err());

    // Values that pass their constructor but not the call.
    let versions = [
        (ApiGroup::Disk, V::V1),
        (ApiGroup::Smb, V::V1),
        (ApiGroup::Volume, V::V1),
        (ApiGroup::Iscsi, V::V1ALPHA2),
        (ApiGroup::System, V::V1ALPHA1),
    ];
    for (group, version) in versions {
        let node = TestNode::new();
        let raw = node.raw(group, version).await;
        let proxy = node.connect(group, version).await;
        let results: Vec<csi_proxy_client::Result<()>> = match group {
            ApiGroup::Disk => vec![proxy
                .disk()
                .unwrap()
                .get_disk_number_by_name(" ")
                .await
                .map(drop)],
            ApiGroup::Smb => vec![
                proxy
                    .smb()
                    .unwrap()
                    .new_smb_global_mapping(&SmbMapping::new(share(), "", Secret::new("p")))
                    .await,
                proxy
                    .smb()
                    .unwrap()
                    .new_smb_global_mapping(&SmbMapping::new(share(), "u\n", Secret::new("p")))
                    .await,
            ],
            ApiGroup::Volume => vec![
                proxy
                    .volume()
                    .unwrap()
                    .resize_volume(&volume(), u64::MAX)
                    .await,
            ],
            ApiGroup::Iscsi => {
                let iscsi = proxy.iscsi().unwrap();
                let chap = |user: &str, secret: &str| IscsiAuth::OneWayChap {
                    username: user.into(),
                    secret: Secret::new(secret),
                };
                vec![
                    iscsi.add_target_portal(&TargetPortal::new("")).await,
                    iscsi.add_target_portal(&portal().with_port(0)).await,
                    iscsi.connect_target(&portal(), "", &IscsiAuth::None).await,
                    iscsi.connect_target(&portal(), IQN, &chap("", "s")).await,
                    iscsi.connect_target(&portal(), IQN, &chap("u", "")).await,
                    iscsi.disconnect_target(&portal(), "\0").await,
                    iscsi.get_target_disks(&portal(), " ").await.map(drop),
                ]
            }
            ApiGroup::System => vec![
                proxy.system().unwrap().start_service("").await,
                proxy.system().unwrap().stop_service("svc\r\n", true).await,
                proxy.system().unwrap().get_service(" ").await.map(drop),
            ],
            ApiGroup::Filesystem => unreachable!(),
        };
        for (i, result) in results.into_iter().enumerate() {
            assert!(
                matches!(result, Err(Error::InvalidArgument { .. })),
                "{group} case {i}: {result:?}"
            );
        }
        assert!(raw.requests().is_empty(), "{group}: {:?}", raw.requests());
    }
}

#[test]
fn secrets_never_show_in_debug_output() {
    let mapping = SmbMapping::new(share(), "user", Secret::new("smb-pa55")).with_local_path(path());
    let auth = IscsiAuth::MutualChap {
        username: "u".into(),
        secret: Secret::new("chap-pa55"),
    };
    let shown = format!("{mapping:?} {mapping:#?} {auth:?} {auth:#?}");
    assert!(
        !shown.contains("smb-pa55") && !shown.contains("chap-pa55"),
        "{shown}"
    );
    assert!(shown.contains("Secret(***)"));
}

/// Every Rust example in the README and the guides runs as a doctest:
/// none is `no_run` or `ignore`, and every file that has one is among the
/// doctests of `src/lib.rs`, so an example that stops working fails CI.
#[test]
fn every_example_in_the_readme_and_the_guides_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let mut files = vec!["README.md".to_owned()];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    let mut with_examples = 0;
    for file in &files {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let fences: Vec<&str> = text
            .lines()
            .map(str::trim_start)
            .filter(|line| line.starts_with("```rust"))
            .collect();
        for fence in &fences {
            assert!(
                !fence.contains("no_run") && !fence.contains("ignore"),
                "{file}: an example that does not run: {fence}"
            );
        }
        if !fences.is_empty() {
            with_examples += 1;
            let included = format!("include_str!(\"../{file}\")");
            assert!(
                lib.contains(&included),
                "{file} has examples, but src/lib.rs does not run them ({included})"
            );
        }
    }
    assert!(with_examples >= 7, "{with_examples} files with examples");
}

/// The lists of `ErrorKind` words (metric labels, csiproxyctl's JSON
/// `kind`) name every kind: the words are read from `ErrorKind::as_str`
/// itself, so a new kind fails here until the docs list it.
#[test]
fn every_error_kind_word_is_in_the_docs_that_list_them() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/error/kind.rs")).unwrap();
    let as_str = source
        .split("pub fn as_str(self) -> &'static str {")
        .nth(1)
        .and_then(|rest| rest.split("\n    }\n").next())
        .expect("ErrorKind::as_str in src/error/kind.rs");
    let words: Vec<&str> = as_str
        .lines()
        .filter_map(|line| line.trim().strip_prefix("ErrorKind::"))
        .filter_map(|arm| arm.split('"').nth(1))
        .collect();
    assert!(
        words.len() >= 16 && words.contains(&"host_busy"),
        "{words:?}"
    );
    for file in ["docs/cli.md", "docs/metrics.md", "src/metrics/mod.rs"] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for word in &words {
            assert!(
                text.contains(&format!("`{word}`")),
                "{file} does not list `{word}`"
            );
        }
    }
}

/// A mock that implements nothing: every method is its trait's default.
struct Nothing;

#[async_trait]
impl DiskApi for Nothing {}
#[async_trait]
impl csi_proxy_client::api::VolumeApi for Nothing {}
#[async_trait]
impl csi_proxy_client::api::FilesystemApi for Nothing {}
#[async_trait]
impl csi_proxy_client::api::SmbApi for Nothing {}
#[async_trait]
impl csi_proxy_client::api::IscsiApi for Nothing {}
#[async_trait]
impl csi_proxy_client::api::SystemApi for Nothing {}

#[tokio::test]
async fn a_mock_that_implements_nothing_names_each_operation_it_lacks() {
    let nothing = Arc::new(Nothing);
    let proxy = CsiProxy::from_backends(Backends {
        disk: Some(nothing.clone()),
        volume: Some(nothing.clone()),
        filesystem: Some(nothing.clone()),
        smb: Some(nothing.clone()),
        iscsi: Some(nothing.clone()),
        system: Some(nothing),
    });
    for &op in Operation::ALL {
        // The one default with a body: the proxy's own emulation.
        let lacking = match op {
            Operation::GetDiskNumberByName => Operation::ListDiskIds,
            op => op,
        };
        match csi_proxy_client::testing::sample::call(&proxy, op).await {
            Err(Error::NotImplemented { operation }) => assert_eq!(operation, lacking, "{op:?}"),
            other => panic!("{op:?}: {other:?}"),
        }
    }
}
