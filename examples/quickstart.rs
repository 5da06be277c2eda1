//! Quickstart: the SDK end to end against an embedded fake CSI Proxy.
//!
//! It seeds an in-memory Windows host with a disk, an SMB share and an
//! iSCSI target, serves it with a `FakeProxy` that offers a mix of old and
//! new wire versions (on Unix sockets in a temporary directory, or on named
//! pipes on Windows), connects, prints what was negotiated per group, and
//! walks a CSI node plugin's flow, printing each step. On a real Windows
//! node, connect with `CsiProxy::builder().connect()` (named pipes) instead.
//!
//! Run it with `cargo run --example quickstart`; `RUST_LOG=debug` shows
//! every probe and call.

use csi_proxy_client::testing::{FakeHost, FakeProxy, LocalEndpoints};
use csi_proxy_client::{
    api::{
        IscsiAuth, Secret, ServiceStatus, SmbMapping, SmbRemotePath, StartType, TargetPortal,
        WindowsPath,
    },
    ApiGroup, ApiVersion as V, CsiProxy, Result,
};

/// A node whose proxy was upgraded for some groups only: disk and volume at
/// v1beta2 (CSI Proxy v0.2.2), filesystem and smb at v1, iscsi at v1alpha2.
const SERVED: [(ApiGroup, V); 9] = [
    (ApiGroup::Disk, V::V1BETA1),
    (ApiGroup::Disk, V::V1BETA2),
    (ApiGroup::Volume, V::V1BETA2),
    (ApiGroup::Filesystem, V::V1BETA1),
    (ApiGroup::Filesystem, V::V1),
    (ApiGroup::Smb, V::V1),
    (ApiGroup::Iscsi, V::V1ALPHA1),
    (ApiGroup::Iscsi, V::V1ALPHA2),
    (ApiGroup::System, V::V1ALPHA1),
];

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::result::Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .init();

    // Sockets in a temporary directory on Unix, named pipes on Windows.
    let endpoints = LocalEndpoints::new()?;
    let transport = endpoints.transport();
    let host = FakeHost::builder()
        .disk(1, "Google  pd-data", 10 << 30)
        .smb_share(r"\\files\share", "smb-user", "smb-pw")
        .share_folder(r"\\files\share\pv-2")
        .iscsi_target(
            TargetPortal::new("10.0.0.5"),
            "iqn.2026-11.example:t1",
            &[("lun-0", 2 << 30)],
            None,
            None,
        )
        .service(
            "csiproxy",
            "CSI Proxy",
            StartType::Automatic,
            ServiceStatus::Running,
        )
        .build();
    let mut fake = FakeProxy::for_host(transport.clone(), &host);
    fake.serve_all(SERVED).await?;
    println!(
        "Fake CSI Proxy serving {} pipes at {transport:?}\n",
        fake.served().len()
    );

    let proxy = CsiProxy::builder().transport(transport).connect().await?;
    println!("Negotiated:\n{}", proxy.report());

    node_flow(&proxy, &host).await?;

    println!("\nCalls the proxy received, by wire version:");
    for call in fake.calls() {
        println!("  {:<10} {:<9} {}", call.group, call.version, call.rpc);
    }
    fake.shutdown().await;
    Ok(())
}

/// What a node plugin does: stage a disk, publish it, expand it, map an
/// SMB share, log in to an iSCSI target, check a service. `host` stands in
/// for the controller, which grows the disk before the node expands.
async fn node_flow(proxy: &CsiProxy, host: &FakeHost) -> Result<()> {
    let (disk, volume, fs) = (proxy.disk()?, proxy.volume()?, proxy.filesystem()?);

    let number = disk.get_disk_number_by_name("Google  pd-data").await?;
    println!("disk with page83 'Google  pd-data' is number {number}");
    disk.set_disk_state(number, true).await?;
    disk.partition_disk(number).await?;
    let id = volume.list_volumes_on_disk(number, None).await?.remove(0);
    println!("partitioned; volume {id}");
    if !volume.is_volume_formatted(&id).await? {
        volume.format_volume(&id).await?;
        println!("formatted");
    }
    let staging = WindowsPath::new(r"\var\lib\kubelet\plugins\quickstart\pv-1\globalmount")?;
    fs.mkdir(&staging).await?;
    volume.mount_volume(&id, &staging).await?;
    println!("mounted at {staging}");
    let stats = volume.get_volume_stats(&id).await?;
    println!("{} of {} bytes used", stats.used_bytes, stats.total_bytes);
    // The controller grew the disk (a PVC expansion): the volume follows.
    host.set_disk_size(number, 2 * stats.total_bytes);
    volume.resize_volume(&id, 0).await?;
    println!(
        "disk grown; volume resized from {} to {} bytes",
        stats.total_bytes,
        volume.get_volume_stats(&id).await?.total_bytes
    );
    match volume
        .get_closest_volume_id_from_target_path(&staging)
        .await
    {
        Ok(found) => println!("closest volume: {found}"),
        Err(e) => println!("not on this node: {e}"),
    }

    let publish = WindowsPath::new(r"C:\var\lib\kubelet\pods\uid-1\volumes\quickstart\pv-1")?;
    fs.mkdir(&WindowsPath::new(
        r"C:\var\lib\kubelet\pods\uid-1\volumes\quickstart",
    )?)
    .await?;
    fs.create_symlink(&staging, &publish).await?;
    println!(
        "published to {publish} (symlink: {})",
        fs.is_symlink(&publish).await?
    );
    fs.rmdir(&publish, false).await?;
    volume.unmount_volume(&id, &staging).await?;
    fs.rmdir(&staging, false).await?;
    println!("unpublished, unmounted, cleaned up");

    let smb = proxy.smb()?;
    let share = SmbRemotePath::new("//files/share/pv-2")?;
    smb.new_smb_global_mapping(&SmbMapping::new(
        share.clone(),
        "smb-user",
        Secret::new("smb-pw"),
    ))
    .await?;
    smb.remove_smb_global_mapping(&share).await?;
    println!("mapped and unmapped {share}");

    let iscsi = proxy.iscsi()?;
    let portal = TargetPortal::new("10.0.0.5");
    iscsi.add_target_portal(&portal).await?;
    let iqn = iscsi.discover_target_portal(&portal).await?.remove(0);
    iscsi
        .connect_target(&portal, &iqn, &IscsiAuth::None)
        .await?;
    println!(
        "logged in to {iqn}; disks {:?}",
        iscsi.get_target_disks(&portal, &iqn).await?
    );
    iscsi.disconnect_target(&portal, &iqn).await?;
    iscsi.remove_target_portal(&portal).await?;

    let service = proxy.system()?.get_service("csiproxy").await?;
    println!(
        "service csiproxy: {:?}, {:?}",
        service.status, service.start_type
    );
    Ok(())
}
