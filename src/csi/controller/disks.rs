//! The disks a create could claim: online, with no volume on it, never
//! claimed before. `CreateVolume` takes one, `GetCapacity` adds them up.

use crate::Status;

use super::TestController;

impl TestController {
    /// The lowest-numbered disk whose size `fits` that is online, has no
    /// volume and was never claimed: its identity (`page83` or `lun`, and
    /// the value) and size.
    pub(super) async fn free_disk(
        &self,
        fits: impl Fn(i64) -> bool + Sync,
    ) -> Result<((String, String), i64), Status> {
        let found = self.free_disks_until(&fits).await?;
        found
            .into_iter()
            .find(|(_, size)| fits(*size))
            .ok_or_else(|| {
                Status::out_of_range("the node has no unused disk of the size asked for")
            })
    }

    /// Every disk a create could claim.
    pub(super) async fn free_disks(&self) -> Result<Vec<((String, String), i64)>, Status> {
        self.free_disks_until(&|_| false).await
    }

    /// The disks a create could claim, lowest number first, up to the
    /// first whose size `enough` accepts (that one included).
    async fn free_disks_until(
        &self,
        enough: &(dyn Fn(i64) -> bool + Sync),
    ) -> Result<Vec<((String, String), i64)>, Status> {
        let (disk, volume) = (self.proxy.disk()?, self.proxy.volume()?);
        let locations = disk.list_disk_locations().await?;
        let ids = disk.list_disk_ids().await.unwrap_or_default();
        let mut free = Vec::new();
        for (number, location) in locations {
            // A LUN may repeat across adapters; a page 0x83 ID does not.
            let identity = match ids.get(&number).map(|ids| ids.page83.clone()) {
                Some(page83) if !page83.is_empty() => ("page83".to_owned(), page83),
                _ => ("lun".to_owned(), location.lun_id.clone()),
            };
            if self.was_claimed(&identity) {
                continue;
            }
            let online = !matches!(disk.get_disk_state(number).await, Ok(false));
            if !online || !volume.list_volumes_on_disk(number, None).await?.is_empty() {
                continue;
            }
            let size = i64::try_from(disk.get_disk_stats(number).await?).unwrap_or(i64::MAX);
            free.push((identity, size));
            if enough(size) {
                break;
            }
        }
        Ok(free)
    }
}
