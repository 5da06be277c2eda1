//! The SMB group's checks.

use super::{is_host_error, Outcome, SmbFixture, Steps};
use crate::api::{Secret, SmbApi, SmbMapping};
use crate::capability::Operation as O;

/// Checks `api` against the SMB rules on the share `fixture` describes:
/// wrong credentials are refused; a mapping links the local path, and a
/// local path that exists is refused (even as the same link); a usable
/// mapping is kept without checking the credentials again; removing a
/// mapping twice fails the second time.
///
/// As on a real node, the link at `fixture.local_path` stays after the
/// mapping is removed: remove it before the suite runs again.
pub async fn smb(api: &dyn SmbApi, fixture: &SmbFixture) -> Outcome {
    let mut steps = Steps::default();
    let share = &fixture.share;
    let mapping =
        |password: &Secret| SmbMapping::new(share.clone(), &fixture.username, password.clone());
    let wrong = mapping(&Secret::new("conformance: a wrong password"));
    let linked = mapping(&fixture.password).with_local_path(fixture.local_path.clone());

    steps
        .fails(
            O::NewSmbGlobalMapping,
            api.new_smb_global_mapping(&wrong),
            is_host_error,
            "a wrong password is refused",
        )
        .await?;
    steps
        .ok(O::NewSmbGlobalMapping, api.new_smb_global_mapping(&linked))
        .await?;
    steps
        .fails(
            O::NewSmbGlobalMapping,
            api.new_smb_global_mapping(&linked),
            is_host_error,
            "a local path that exists is refused",
        )
        .await?;
    steps
        .ok(O::NewSmbGlobalMapping, api.new_smb_global_mapping(&wrong))
        .await?;
    steps
        .ok(
            O::RemoveSmbGlobalMapping,
            api.remove_smb_global_mapping(share),
        )
        .await?;
    steps
        .fails(
            O::RemoveSmbGlobalMapping,
            api.remove_smb_global_mapping(share),
            is_host_error,
            "removing a mapping that is gone fails",
        )
        .await?;
    steps.finish()
}
