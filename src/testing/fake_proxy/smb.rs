//! Server side of both SMB layouts. Their requests are the same messages;
//! their answers differ only by the legacy `error` field, which this server
//! (like CSI Proxy from v1.0) never fills, so the answers are the same
//! bytes too.

use std::sync::Arc;

use async_trait::async_trait;

use super::codec::{decode, host, optional_path, reply, share, Answer};
use super::routing::WireServer;
use crate::api::{Secret, SmbApi, SmbMapping};
use crate::capability::SmbOperation as Op;
use crate::wire::smb::v1 as wire;

pub(super) struct Smb(pub Arc<dyn SmbApi>);

#[async_trait]
impl WireServer<Op> for Smb {
    async fn handle(&self, op: Op, body: &[u8]) -> Answer {
        match op {
            Op::NewSmbGlobalMapping => {
                let request: wire::NewSmbGlobalMappingRequest = decode(body)?;
                let mapping = SmbMapping {
                    remote_path: share(&request.remote_path)?,
                    local_path: optional_path(&request.local_path)?,
                    username: request.username,
                    password: Secret::new(request.password),
                };
                host!(self.0.new_smb_global_mapping(&mapping));
                reply(wire::NewSmbGlobalMappingResponse {})
            }
            Op::RemoveSmbGlobalMapping => {
                let request: wire::RemoveSmbGlobalMappingRequest = decode(body)?;
                host!(self
                    .0
                    .remove_smb_global_mapping(&share(&request.remote_path)?));
                reply(wire::RemoveSmbGlobalMappingResponse {})
            }
        }
    }
}
