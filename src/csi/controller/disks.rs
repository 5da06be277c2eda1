//! The disks a create could claim: online, with no volume on it, never
//! claimed before, and named so that the node would stage it. `CreateVolume` takes one, `GetCapacity` adds them up.

use crate::Status;

use super::naming::TestVolume;
use super::TestController;

/// A disk a create could claim: how it is told from others (`page83` or
/// `lun`, and the value), what the driver's naming is given, its size.
pub(super) type FreeDisk = ((String, String), TestVolume, i64);

impl TestController {
    /// The lowest-numbered disk whose size `fits` that is online, has no
    /// volume and was never claimed.
    pub(super) async fn free_disk(
        &self,
        fits: impl Fn(i64) -> bool + Sync,
    ) -> Result<FreeDisk, Status> {
        let found = self.free_disks_until(&fits).await?;
        found
            .into_iter()
            .find(|(_, _, size)| fits(*size))
            .ok_or_else(|| {
                Status::out_of_range("the node has no unused disk of the size asked for")
            })
    }

    /// Every disk a create could claim.
    pub(super) async fn free_disks(&self) -> Result<Vec<FreeDisk>, Status> {
        self.free_disks_until(&|_| false).await
    }

    /// The disks a create could claim, lowest number first, up to the
    /// first whose size `enough` accepts (that one included).
    async fn free_disks_until(
        &self,
        enough: &(dyn Fn(i64) -> bool + Sync),
    ) -> Result<Vec<FreeDisk>, Status> {
        let (disk, volume) = (self.proxy.disk()?, self.proxy.volume()?);
        let locations = disk.list_disk_locations().await?;
        let ids = disk.list_disk_ids().await.unwrap_or_default();
        let mut free = Vec::new();
        for (number, location) in locations {
            let page83 = ids.get(&number).map(|ids| ids.page83.clone());
            let made = TestVolume::disk(
                page83.unwrap_or_default(),
                &location.adapter,
                &location.target,
                &location.lun_id,
            );
            let (key, value) = made.identity();
            // A disk known only by its LUN is one the node never stages
            // on the boot adapter (`DiskSelector::lun`): never handed out.
            if key == "lun" && crate::mount::on_boot_adapter(&location.adapter) {
                continue;
            }
            let identity = (key.to_owned(), value);
            if self.was_claimed(&identity) {
                continue;
            }
            let online = !matches!(disk.get_disk_state(number).await, Ok(false));
            if !online || !volume.list_volumes_on_disk(number, None).await?.is_empty() {
                continue;
            }
            let size = i64::try_from(disk.get_disk_stats(number).await?).unwrap_or(i64::MAX);
            free.push((identity, made, size));
            if enough(size) {
                break;
            }
        }
        Ok(free)
    }
}
