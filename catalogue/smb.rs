//! The smb group's RPCs, one method each (the form: `catalogue/README.md`).

use crate::adapter::fields::{LegacyError, ShareText};
use crate::api::{SmbMapping, SmbRemotePath};

/// The SMB group: global mappings of remote shares.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use csi_proxy_client::{api::{Secret, SmbApi, SmbMapping, SmbRemotePath}, async_trait, Result};
///
/// /// Remembers the shares mapped.
/// #[derive(Default)]
/// struct Recorder(Mutex<Vec<String>>);
///
/// #[async_trait]
/// impl SmbApi for Recorder {
///     async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
///         self.0.lock().unwrap().push(mapping.remote_path.to_string());
///         Ok(())
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<()> {
/// let smb = Arc::new(Recorder::default());
/// let share = SmbRemotePath::new("//files/share")?;
/// smb.new_smb_global_mapping(&SmbMapping::new(share, "user", Secret::new("pw"))).await?;
/// assert_eq!(smb.0.lock().unwrap()[0], r"\\files\share");
/// # Ok(()) }
/// ```
#[group(Smb, operations = SmbOperation)]
#[layout(ErrorFieldSmb, wire = crate::wire::smb::v1beta1, doc = "v1alpha1, v1beta1: answers with an `error` field.")]
#[layout(PlainSmb, wire = crate::wire::smb::v1, doc = "v1beta2, v1: answers without the `error` field.")]
trait SmbApi {
    /// Maps the share of `mapping.remote_path` globally (its root from CSI
    /// Proxy v1.1.2, the path itself before; again, if an existing mapping
    /// is no longer valid), and links `mapping.local_path` to the remote
    /// path if given. The mapping is made before the link: when the link is
    /// refused, the mapping stays.
    #[operation(
        NewSmbGlobalMapping,
        name = "NewSmbGlobalMapping",
        effect = Mutates,
        doc = "Map an SMB share globally.",
        since(V1ALPHA1 = Native("NewSmbGlobalMapping"))
    )]
    #[check(mapping.validate())]
    #[wire(ErrorFieldSmb, by_hand = new_mapping)]
    #[wire(PlainSmb, by_hand = new_mapping)]
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()>;

    /// Removes the global mapping of the share that holds `remote_path` (of
    /// `remote_path` itself before CSI Proxy v1.1.2). A mapping that does
    /// not exist is an error.
    #[operation(
        RemoveSmbGlobalMapping,
        name = "RemoveSmbGlobalMapping",
        effect = Mutates,
        doc = "Remove a global SMB mapping.",
        since(V1ALPHA1 = Native("RemoveSmbGlobalMapping"))
    )]
    #[wire(
        ErrorFieldSmb,
        request = RemoveSmbGlobalMappingRequest { remote_path: ShareText(remote_path) },
        response = RemoveSmbGlobalMappingResponse { error: LegacyError }
    )]
    #[wire(
        PlainSmb,
        request = RemoveSmbGlobalMappingRequest { remote_path: ShareText(remote_path) },
        response = RemoveSmbGlobalMappingResponse {}
    )]
    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()>;
}
