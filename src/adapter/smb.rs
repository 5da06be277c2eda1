//! SMB adapters.
//!
//! - [`ErrorFieldSmb`]: v1alpha1, v1beta1 — responses carry a legacy `error`.
//! - [`PlainSmb`]: v1beta2, v1.
//!
//! A host error that echoes the password has it replaced by `***`.

use super::fields::{AnswerField, LegacyError, ShareText};
use super::layout::wire_adapter;
use crate::api::{SmbApi, SmbMapping, SmbRemotePath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::redact::redact;
use crate::wire::smb::{v1 as plain, v1beta1 as error_field};

/// The error-field layout's table (see `super::layout`).
macro_rules! error_field_smb {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1alpha1, v1beta1.
            ErrorFieldSmb: SmbApi in crate::wire::smb::v1beta1;

            fn new_smb_global_mapping(mapping: &SmbMapping) -> ()
                = by hand new_mapping: NewSmbGlobalMapping;
            fn remove_smb_global_mapping(remote_path: &SmbRemotePath) -> ()
                = RemoveSmbGlobalMapping: RemoveSmbGlobalMappingRequest {
                    remote_path: remote_path as ShareText
                }
                -> RemoveSmbGlobalMappingResponse {} with legacy error => ();
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use error_field_smb;

/// The plain layout's table (see `super::layout`).
macro_rules! plain_smb {
    ($then:ident $($carry:tt)*) => {
        $then! { $($carry)* {
            /// v1beta2, v1.
            PlainSmb: SmbApi in crate::wire::smb::v1;

            fn new_smb_global_mapping(mapping: &SmbMapping) -> ()
                = by hand new_mapping: NewSmbGlobalMapping;
            fn remove_smb_global_mapping(remote_path: &SmbRemotePath) -> ()
                = RemoveSmbGlobalMapping: RemoveSmbGlobalMappingRequest {
                    remote_path: remote_path as ShareText
                }
                -> RemoveSmbGlobalMappingResponse {} => ();
        } }
    };
}
#[cfg(feature = "testing")] // for the fake proxy
pub(crate) use plain_smb;

error_field_smb!(wire_adapter);
plain_smb!(wire_adapter);

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
