//! Server side of both SMB layouts, made of the adapters' tables
//! (`src/adapter/smb.rs`). Their requests are the same messages; their
//! answers differ only by the legacy `error` field, which this server
//! (like CSI Proxy from v1.0) never fills, so the answers are the same
//! bytes too.

use std::sync::Arc;

use super::codec::{decode, host, reply, Answer};
use super::layout::wire_server;
use crate::adapter::fields::*;
use crate::adapter::smb::{error_field_smb, plain_smb};
use crate::api::{Secret, SmbApi, SmbMapping};
use crate::capability::SmbOperation as Op;
use crate::wire::smb::v1 as wire;

pub(super) struct ErrorFieldSmb {
    pub api: Arc<dyn SmbApi>,
}

error_field_smb!(wire_server ErrorFieldSmb: SmbOperation);

impl ErrorFieldSmb {
    async fn new_mapping(&self, _: Op, body: &[u8]) -> Answer {
        new_mapping(&*self.api, body).await
    }
}

pub(super) struct PlainSmb {
    pub api: Arc<dyn SmbApi>,
}

plain_smb!(wire_server PlainSmb: SmbOperation);

impl PlainSmb {
    async fn new_mapping(&self, _: Op, body: &[u8]) -> Answer {
        new_mapping(&*self.api, body).await
    }
}

/// One argument, four fields, in both layouts.
async fn new_mapping(api: &dyn SmbApi, body: &[u8]) -> Answer {
    let request: wire::NewSmbGlobalMappingRequest = decode(body)?;
    let local_path = match request.local_path.as_str() {
        "" => None,
        _ => Some(PathText::from_request(request.local_path)?),
    };
    let mapping = SmbMapping {
        remote_path: ShareText::from_request(request.remote_path)?,
        local_path,
        username: request.username,
        password: Secret::new(request.password),
    };
    host!(api.new_smb_global_mapping(&mapping));
    reply(wire::NewSmbGlobalMappingResponse {})
}
