//! SMB adapters.
//!
//! - [`ErrorFieldSmb`]: v1alpha1, v1beta1 — responses carry a legacy `error`.
//! - [`PlainSmb`]: v1beta2, v1.
//!
//! A host error that echoes the password has it replaced by `***`.

mod error_field_smb;
mod plain_smb;

pub(crate) use error_field_smb::ErrorFieldSmb;
pub(crate) use plain_smb::PlainSmb;

use super::fields::{AnswerField, LegacyError};
use crate::api::SmbMapping;
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::redact::redact;
use crate::wire::smb::{v1 as plain, v1beta1 as error_field};

/// The request is the same message in every version: the mapping, with
/// its password.
macro_rules! new_mapping_request {
    ($module:ident, $mapping:expr) => {
        $module::NewSmbGlobalMappingRequest {
            remote_path: $mapping.remote_path.to_string(),
            local_path: $mapping
                .local_path
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default(),
            username: $mapping.username.clone(),
            password: $mapping.password.expose().to_owned(),
        }
    };
}

impl ErrorFieldSmb {
    /// The password never shows in an error.
    async fn new_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let request = new_mapping_request!(error_field, mapping);
        let sent = self.wire.call(Op::NewSmbGlobalMapping, request).await;
        sent.and_then(|response: error_field::NewSmbGlobalMappingResponse| {
            LegacyError::from_answer(Op::NewSmbGlobalMapping, "error", response.error)
        })
        .map_err(|e| redact(e, &mapping.password))
    }
}

impl PlainSmb {
    /// The password never shows in an error.
    async fn new_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let request = new_mapping_request!(plain, mapping);
        let sent: Result<plain::NewSmbGlobalMappingResponse> =
            self.wire.call(Op::NewSmbGlobalMapping, request).await;
        sent.map(drop).map_err(|e| redact(e, &mapping.password))
    }
}
