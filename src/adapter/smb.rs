//! SMB adapters.
//!
//! - [`ErrorFieldSmb`]: v1alpha1, v1beta1 — responses carry a legacy `error`.
//! - [`PlainSmb`]: v1beta2, v1.
//!
//! A host error that echoes the password has it replaced by `***`.

use async_trait::async_trait;

use super::convert::legacy_error;
use super::WireClient;
use crate::api::{SmbApi, SmbMapping, SmbRemotePath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::redact::redact;
use crate::wire::smb::{v1 as plain, v1beta1 as error_field};

/// The request is the same message in every version.
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

pub(super) struct ErrorFieldSmb {
    wire: WireClient,
}

impl ErrorFieldSmb {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SmbApi for ErrorFieldSmb {
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let request = new_mapping_request!(error_field, mapping);
        let sent = self.wire.call(Op::NewSmbGlobalMapping, request).await;
        sent.and_then(|response: error_field::NewSmbGlobalMappingResponse| {
            legacy_error(Op::NewSmbGlobalMapping, response.error)
        })
        .map_err(|e| redact(e, &mapping.password))
    }

    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()> {
        let request = error_field::RemoveSmbGlobalMappingRequest {
            remote_path: remote_path.to_string(),
        };
        let response: error_field::RemoveSmbGlobalMappingResponse =
            self.wire.call(Op::RemoveSmbGlobalMapping, request).await?;
        legacy_error(Op::RemoveSmbGlobalMapping, response.error)
    }
}

pub(super) struct PlainSmb {
    wire: WireClient,
}

impl PlainSmb {
    pub fn new(wire: WireClient) -> Self {
        Self { wire }
    }
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SmbApi for PlainSmb {
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let request = new_mapping_request!(plain, mapping);
        let sent: Result<plain::NewSmbGlobalMappingResponse> =
            self.wire.call(Op::NewSmbGlobalMapping, request).await;
        sent.map(drop).map_err(|e| redact(e, &mapping.password))
    }

    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()> {
        let request = plain::RemoveSmbGlobalMappingRequest {
            remote_path: remote_path.to_string(),
        };
        let _: plain::RemoveSmbGlobalMappingResponse =
            self.wire.call(Op::RemoveSmbGlobalMapping, request).await?;
        Ok(())
    }
}
