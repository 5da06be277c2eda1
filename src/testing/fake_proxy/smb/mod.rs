//! The fake proxy's servers of the SMB layouts, generated from the
//! catalogue (`error_field_smb.rs`, `plain_smb.rs`), but for the mapping,
//! written by hand here. Their requests are the same messages; their
//! answers differ only by the legacy `error` field, which these servers
//! (like CSI Proxy from v1.0) never fill, so the answers are the same
//! bytes too.

mod error_field_smb;
mod plain_smb;

pub(super) use error_field_smb::ErrorFieldSmbServer;
pub(super) use plain_smb::PlainSmbServer;

use super::codec::{decode, host, reply, Answer};
use super::fields::ReadRequest;
use crate::adapter::fields::{PathText, ShareText};
use crate::api::{Secret, SmbApi, SmbMapping};
use crate::capability::SmbOperation as Op;
use crate::wire::smb::v1 as wire;

impl ErrorFieldSmbServer {
    async fn new_mapping(&self, _: Op, body: &[u8]) -> Answer {
        new_mapping(&*self.api, body).await
    }
}

impl PlainSmbServer {
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
