//! Server side of the disk layouts, made of the adapters' tables
//! (`src/adapter/disk.rs`).

use std::sync::Arc;

use tonic::Status;

use super::codec::{decode, reply, status, Answer};
use super::layout::wire_server;
use crate::adapter::disk::{numbered_disk, string_id_disk};
use crate::adapter::disk::{
    NumberedDiskIds, NumberedLocations, StringIdDiskIds, StringIdLocations,
};
use crate::adapter::fields::*;
use crate::api::{DiskApi, PROXY_NO_SUCH_PAGE83};
use crate::capability::DiskOperation as Op;
use crate::error::Error;
use crate::wire::disk::v1alpha1 as alpha;

pub(super) struct StringIdDisk {
    pub api: Arc<dyn DiskApi>,
}

string_id_disk!(wire_server StringIdDisk: DiskOperation);

impl StringIdDisk {
    /// v1alpha1's own RPC (the newer string-ID versions lack it: no route
    /// leads here from them).
    async fn disk_by_name(&self, _: Op, body: &[u8]) -> Answer {
        let request: alpha::GetDiskNumberByNameRequest = decode(body)?;
        let name = DiskName::from_request(request.disk_name)?;
        // The proxy's own words for an unknown identifier.
        let number = match self.api.get_disk_number_by_name(&name).await {
            Err(Error::NotFound { .. }) => {
                Err(Status::unknown(format!("{PROXY_NO_SUCH_PAGE83} {name}")))
            }
            other => other.map_err(status),
        }?;
        reply(alpha::GetDiskNumberByNameResponse {
            disk_number: DecimalDisk::to_answer(number),
        })
    }
}

pub(super) struct NumberedDisk {
    pub api: Arc<dyn DiskApi>,
}

numbered_disk!(wire_server NumberedDisk: DiskOperation);

impl NumberedDisk {
    /// Not in this layout: the client emulates it.
    async fn disk_by_name(&self, op: Op, _: &[u8]) -> Answer {
        Err(super::routing::not_in_layout(op))
    }
}
