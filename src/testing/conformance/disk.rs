//! The disk group's checks.

use super::{ensure, ensure_eq, DiskFixture, Outcome, Steps};
use crate::api::DiskApi;
use crate::capability::Operation as O;
use crate::error::Error;

/// Checks `api` against the disk rules on the disk `fixture` describes:
/// it is found by page83 (an unknown one is `NotFound`), by LUN and among
/// the disk IDs; it goes and stays online; its size is reported; a rescan
/// succeeds; partitioning it twice succeeds (the second time leaves it as
/// it is).
pub async fn disk(api: &dyn DiskApi, fixture: &DiskFixture) -> Outcome {
    let mut steps = Steps::default();
    let number = fixture.number;

    if let Some(found) = steps
        .ok(
            O::GetDiskNumberByName,
            api.get_disk_number_by_name(&fixture.page83),
        )
        .await?
    {
        ensure_eq(&found, &number, O::GetDiskNumberByName, "the disk number")?;
    }
    steps
        .fails(
            O::GetDiskNumberByName,
            api.get_disk_number_by_name("conformance: no such page83"),
            |e| matches!(e, Error::NotFound { .. }),
            "an unknown page83 is NotFound",
        )
        .await?;
    if let Some(locations) = steps
        .ok(O::ListDiskLocations, api.list_disk_locations())
        .await?
    {
        let lun = locations.get(&number).map(|l| l.lun_id.as_str());
        ensure_eq(
            &lun,
            &Some(fixture.lun.as_str()),
            O::ListDiskLocations,
            "the disk's LUN",
        )?;
    }
    if let Some(ids) = steps.ok(O::ListDiskIds, api.list_disk_ids()).await? {
        let page83 = ids.get(&number).map(|i| i.page83.as_str());
        ensure_eq(
            &page83,
            &Some(fixture.page83.as_str()),
            O::ListDiskIds,
            "the disk's page83",
        )?;
    }
    steps
        .ok(O::SetDiskState, api.set_disk_state(number, true))
        .await?;
    if let Some(online) = steps
        .ok(O::GetDiskState, api.get_disk_state(number))
        .await?
    {
        ensure(online, O::GetDiskState, || {
            "the disk set online is online".into()
        })?;
    }
    if let Some(size) = steps
        .ok(O::GetDiskStats, api.get_disk_stats(number))
        .await?
    {
        ensure_eq(
            &size,
            &fixture.size_bytes,
            O::GetDiskStats,
            "the disk's size",
        )?;
    }
    steps.ok(O::Rescan, api.rescan()).await?;
    steps
        .ok(O::PartitionDisk, api.partition_disk(number))
        .await?;
    steps
        .ok(O::PartitionDisk, api.partition_disk(number))
        .await?;
    steps.finish()
}
