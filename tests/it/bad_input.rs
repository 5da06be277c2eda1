//! A sweep of malformed input across all groups: each is refused with
//! `InvalidArgument` before anything is sent, and nothing reaches the fake
//! proxy.

use crate::common::scenario::seeded_host;
use crate::common::TestNode;
use csi_proxy_client::testing::sample::{portal, share, volume, IQN};
use csi_proxy_client::testing::FakeProxy;
use csi_proxy_client::{
    api::{IscsiAuth, Secret, SmbMapping, SmbRemotePath, TargetPortal, VolumeId, WindowsPath},
    negotiate::VersionPolicy,
    transport::Transport,
    ApiGroup, ApiVersion, CsiProxy, Error, Result,
};

const MALFORMED_PATHS: &[&str] = &[
    "",
    " ",
    "relative",
    r"relative\dir",
    "var/lib",
    "C:",
    "C:relative",
    "CC:\\x",
    "1:\\x",
    ":\\x",
    r"\\server\share",
    r"\\server\share\dir",
    r"\\?\C:\x",
    r"\\.\pipe\x",
    r"\\?\Volume{1}\",
    "//server/share",
    r"C:\a\..\b",
    r"C:\..",
    r"C:\a..b",
    r"C:\a\b..",
    r"C:\a:b",
    r"C:\a?",
    r"C:\a*",
    r"C:\a|b",
    "C:\\a\"b",
    "C:\\a\0b",
    "C:/a/../b",
    r"\var\..\etc",
    "/var/lib/kubelet/../..",
    "C:\\x\\*\\y",
];

fn invalid<T: std::fmt::Debug>(what: &str, result: Result<T>) {
    match result {
        Err(Error::InvalidArgument { .. }) => {}
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_input_is_refused_and_nothing_is_sent() {
    let node = TestNode::new();
    let mut fake = FakeProxy::for_host(node.transport(), &seeded_host());
    fake.serve_everything().await.unwrap();
    let proxy = CsiProxy::builder()
        .transport(node.transport())
        .connect()
        .await
        .unwrap();
    let mut refused = 0;
    let mut check = |what: String, result: Result<()>| {
        invalid(&what, result);
        refused += 1;
    };

    // Paths, long ones too; every path-taking call gets them all, but
    // they cannot even be constructed.
    let long = format!(r"C:\{}", "x".repeat(258));
    let long_nested = format!(r"C:\var\lib\kubelet\{}", "d\\".repeat(125));
    for raw in MALFORMED_PATHS
        .iter()
        .copied()
        .chain([long.as_str(), long_nested.as_str()])
    {
        check(format!("path {raw:?}"), WindowsPath::new(raw).map(drop));
    }

    // Volume IDs, SMB shares.
    for raw in ["", "  ", "\t", "id\0", "id\nx", "\r"] {
        check(format!("volume ID {raw:?}"), VolumeId::new(raw).map(drop));
    }
    for raw in [
        "",
        "share",
        r"C:\share",
        r"\\",
        r"\\server",
        r"\\server\",
        r"\\?\x",
        r"\\.\x",
        "\\\\srv\\sh\0",
        r"\\srv\share\..\other",
        r"\\srv\..\share",
        r"\\srv\share\.\pv",
    ] {
        check(
            format!("SMB path {raw:?}"),
            SmbRemotePath::new(raw).map(drop),
        );
    }

    // Values that construct but fail the call.
    let smb = proxy.smb().unwrap();
    for user in ["", " ", "\t", "user\n", "us\0er"] {
        let mapping = SmbMapping::new(share(), user, Secret::new("pw"));
        check(
            format!("SMB user {user:?}"),
            smb.new_smb_global_mapping(&mapping).await,
        );
    }
    let iscsi = proxy.iscsi().unwrap();
    let bad_portals = [
        TargetPortal::new(""),
        TargetPortal::new(" "),
        TargetPortal::new("10.0.0.5\n"),
        TargetPortal::new("10.0.0.5").with_port(0),
        TargetPortal::new("\0"),
    ];
    for bad in &bad_portals {
        check(
            format!("add portal {bad:?}"),
            iscsi.add_target_portal(bad).await,
        );
        check(
            format!("discover portal {bad:?}"),
            iscsi.discover_target_portal(bad).await.map(drop),
        );
        check(
            format!("remove portal {bad:?}"),
            iscsi.remove_target_portal(bad).await,
        );
        check(
            format!("connect via {bad:?}"),
            iscsi.connect_target(bad, IQN, &IscsiAuth::None).await,
        );
        check(
            format!("disconnect via {bad:?}"),
            iscsi.disconnect_target(bad, IQN).await,
        );
        check(
            format!("disks via {bad:?}"),
            iscsi.get_target_disks(bad, IQN).await.map(drop),
        );
    }
    for iqn in ["", " ", "iqn\n", "iqn\0x"] {
        check(
            format!("connect {iqn:?}"),
            iscsi.connect_target(&portal(), iqn, &IscsiAuth::None).await,
        );
        check(
            format!("disconnect {iqn:?}"),
            iscsi.disconnect_target(&portal(), iqn).await,
        );
        check(
            format!("disks {iqn:?}"),
            iscsi.get_target_disks(&portal(), iqn).await.map(drop),
        );
    }
    let chap = |user: &str, secret: &str| IscsiAuth::OneWayChap {
        username: user.into(),
        secret: Secret::new(secret),
    };
    let mutual = |user: &str, secret: &str| IscsiAuth::MutualChap {
        username: user.into(),
        secret: Secret::new(secret),
    };
    for auth in [
        chap("", "s"),
        chap("u", ""),
        chap("u\n", "s"),
        mutual("", "s"),
        mutual("u", ""),
        mutual(" ", "s"),
    ] {
        check(
            format!("auth {auth:?}"),
            iscsi.connect_target(&portal(), IQN, &auth).await,
        );
    }
    let system = proxy.system().unwrap();
    for name in ["", " ", "svc\n", "svc\r", "s\0", "\t"] {
        check(format!("start {name:?}"), system.start_service(name).await);
        check(
            format!("stop {name:?}"),
            system.stop_service(name, true).await,
        );
        check(
            format!("get {name:?}"),
            system.get_service(name).await.map(drop),
        );
    }
    let disk = proxy.disk().unwrap();
    for name in ["", " ", "pd\n"] {
        check(
            format!("disk name {name:?}"),
            disk.get_disk_number_by_name(name).await.map(drop),
        );
    }
    let volumes = proxy.volume().unwrap();
    for size in [u64::MAX, (i64::MAX as u64) + 1] {
        check(
            format!("resize to {size}"),
            volumes.resize_volume(&volume(), size).await,
        );
    }

    // Configuration: versions, groups, pipe names, policies, directories.
    for raw in [
        "",
        "1",
        "v",
        "v0",
        "V1",
        "v1beta",
        "v1beta0",
        "v1gamma1",
        "v01",
        "v1 ",
        "v1alpha-1",
        "vbeta1",
    ] {
        check(
            format!("version {raw:?}"),
            raw.parse::<ApiVersion>().map(drop),
        );
    }
    for raw in ["", "Disk", "disks", "fs", "iSCSI"] {
        check(format!("group {raw:?}"), raw.parse::<ApiGroup>().map(drop));
    }
    for raw in [
        r"\\host\pipe\",
        r"\\10.1.1.1\pipe\x-",
        r"\\?\pipe\",
        "//./pipe/",
        r"\\.\pipe\a\b",
        r"C:\pipe\",
        "",
    ] {
        check(
            format!("pipe prefix {raw:?}"),
            Transport::named_pipes_with_prefix(raw).map(drop),
        );
    }
    #[cfg(unix)]
    for dir in ["/nonexistent/dir", "/etc/hostname"] {
        check(
            format!("socket dir {dir:?}"),
            Transport::unix_sockets(dir).map(drop),
        );
    }
    for policy in [
        VersionPolicy::default().pin(ApiGroup::Disk, ApiVersion::V2ALPHA1),
        VersionPolicy::default().pin(ApiGroup::System, ApiVersion::V1),
        VersionPolicy::default().minimum(ApiGroup::Iscsi, ApiVersion::V1),
        VersionPolicy::default().allow_only(ApiGroup::Smb, []),
    ] {
        let connected = CsiProxy::builder()
            .transport(node.transport())
            .policy(policy)
            .connect()
            .await;
        check("policy".into(), connected.map(drop));
    }

    assert!(refused >= 100, "only {refused} malformed inputs");
    eprintln!("bad input: {refused} malformed inputs refused, none sent");
    assert!(
        fake.calls().is_empty(),
        "something reached the proxy: {:?}",
        fake.calls()
    );
}
