//! Disks that come offline or read-only, and volumes that show late.

use super::{host_failure, path};
use csi_proxy_client::api::{DiskApi, VolumeApi};
use csi_proxy_client::testing::{FakeDisk, FakeHost, WindowsError};
use csi_proxy_client::{api::DiskLocation, Operation};

#[tokio::test]
async fn an_offline_disk_lists_no_volumes_and_cannot_be_used() {
    let host = FakeHost::builder()
        .partitioned_disk(1, "d1", 10 << 30)
        .disk(2, "d2", 10 << 30)
        .offline(1)
        .offline(2)
        .dir(r"C:\var\lib\kubelet\staging")
        .build();
    let id = host.volumes_on(1).remove(0);
    assert!(!host.get_disk_state(1).await.unwrap());
    assert!(host.list_volumes_on_disk(1, None).await.unwrap().is_empty());
    let (_, message, _) = host_failure(host.partition_disk(2).await);
    assert_eq!(message, "disk 2 is offline");
    assert!(!host.disk(2).unwrap().partitioned);
    let staging = path(r"C:\var\lib\kubelet\staging");
    host_failure(host.format_volume(&id).await);
    host_failure(host.mount_volume(&id, &staging).await);
    assert!(!host.volume(&id).unwrap().formatted);

    // Online (as a driver brings it): everything works.
    host.set_disk_state(1, true).await.unwrap();
    assert_eq!(
        host.list_volumes_on_disk(1, None).await.unwrap(),
        std::slice::from_ref(&id)
    );
    host.format_volume(&id).await.unwrap();
    host.mount_volume(&id, &staging).await.unwrap();

    // Offline again behind the driver's back.
    host.set_disk_online(1, false);
    assert!(!host.get_disk_state(1).await.unwrap());
    assert!(host.list_volumes_on_disk(1, None).await.unwrap().is_empty());
    host_failure(host.get_volume_stats(&id).await);
}

#[tokio::test]
async fn a_read_only_disk_refuses_writes_and_stays_read_only_when_onlined() {
    let host = FakeHost::builder()
        .disk(1, "d1", 10 << 30)
        .read_only(1)
        .offline(1)
        .dir(r"C:\var\lib\kubelet\staging")
        .build();
    assert!(host.disk(1).unwrap().read_only);
    host.set_disk_state(1, true).await.unwrap();
    assert!(host.disk(1).unwrap().read_only, "SetDiskState leaves it");

    let (operation, message, os_code) = host_failure(host.partition_disk(1).await);
    assert_eq!(operation, Operation::PartitionDisk);
    assert_eq!(message, "The media is write protected.");
    assert_eq!(
        os_code,
        Some(i32::try_from(WindowsError::WRITE_PROTECT).unwrap())
    );
    assert!(!host.disk(1).unwrap().partitioned);

    host.set_disk_read_only(1, false);
    host.partition_disk(1).await.unwrap();
    let id = host.list_volumes_on_disk(1, None).await.unwrap().remove(0);
    host.set_disk_read_only(1, true);
    let (_, _, os_code) = host_failure(host.format_volume(&id).await);
    assert_eq!(os_code, Some(19));
    assert!(!host.volume(&id).unwrap().formatted);
    // What writes nothing still works: partitioning a partitioned disk,
    // mounting, a resize with nothing to grow.
    host.partition_disk(1).await.unwrap();
    host.mount_volume(&id, &path(r"C:\var\lib\kubelet\staging"))
        .await
        .unwrap();
    host.resize_volume(&id, 0).await.unwrap();
    assert!(host.set_disk_size(1, 20 << 30));
    let (_, _, os_code) = host_failure(host.resize_volume(&id, 0).await);
    assert_eq!(os_code, Some(19));

    // A custom disk may come read-only too.
    let location = DiskLocation {
        adapter: "0".into(),
        bus: "0".into(),
        target: "0".into(),
        lun_id: "7".into(),
    };
    let disk = FakeDisk {
        read_only: true,
        ..FakeDisk::new("d7", 1 << 30, location)
    };
    let custom = FakeHost::builder().custom_disk(7, disk).build();
    host_failure(custom.partition_disk(7).await);
}

#[test]
#[should_panic(expected = "no disk 3")]
fn the_builder_names_a_disk_it_does_not_have() {
    let _ = FakeHost::builder().disk(1, "d1", 1 << 30).read_only(3);
}

#[tokio::test]
async fn a_new_partitions_volume_shows_only_on_a_later_listing() {
    let host = FakeHost::builder()
        .disk(1, "d1", 10 << 30)
        .partitioned_disk(2, "d2", 10 << 30)
        .build();
    host.hide_new_volumes(1, 2);
    host.hide_new_volumes(2, 2);
    // The builder's volume is not new; a listing before the partition
    // exists does not count.
    assert_eq!(host.list_volumes_on_disk(2, None).await.unwrap().len(), 1);
    assert!(host.list_volumes_on_disk(1, None).await.unwrap().is_empty());
    host.partition_disk(1).await.unwrap();
    assert!(host.list_volumes_on_disk(1, None).await.unwrap().is_empty());
    // Partitioning again changes nothing, and the volume stays hidden.
    host.partition_disk(1).await.unwrap();
    assert!(host
        .list_volumes_on_disk(1, Some(2))
        .await
        .unwrap()
        .is_empty());
    let listed = host.list_volumes_on_disk(1, None).await.unwrap();
    assert_eq!(listed.len(), 1, "the third listing after the partition");
    assert!(!host.is_volume_formatted(&listed[0]).await.unwrap());
    assert_eq!(
        host.calls_of(Operation::ListVolumesOnDisk)
            + host.calls_of(Operation::ListVolumesOnPartition),
        5
    );
}

#[tokio::test]
async fn partitioning_gives_a_raw_disk_a_gpt_and_keeps_an_empty_mbr_disks_style() {
    use csi_proxy_client::testing::PartitionStyle;

    let mut mbr = FakeDisk::new("empty-mbr", 10 << 30, DiskLocation::default());
    mbr.partition_style = PartitionStyle::Mbr;
    let host = FakeHost::builder()
        .disk(2, "raw", 10 << 30)
        .custom_disk(3, mbr)
        .build();
    // The node's own disks: the OS disk's GPT, the temporary disk's MBR.
    let style = |n: u32| host.disk(n).unwrap().partition_style;
    assert_eq!(
        (style(0), style(1)),
        (PartitionStyle::Gpt, PartitionStyle::Mbr)
    );
    assert!(host.disk(0).unwrap().partitioned && host.disk(1).unwrap().partitioned);
    for (number, was, now) in [
        (2, PartitionStyle::Raw, PartitionStyle::Gpt),
        (3, PartitionStyle::Mbr, PartitionStyle::Mbr),
    ] {
        assert_eq!(style(number), was);
        host.partition_disk(number).await.unwrap();
        assert_eq!(style(number), now, "disk {number}");
        assert_eq!(host.volumes_on(number).len(), 1, "disk {number}");
    }
    // The node's own disks are left as they are: a partition is there.
    host.partition_disk(1).await.unwrap();
    assert_eq!(host.volumes_on(1).len(), 1);
}
