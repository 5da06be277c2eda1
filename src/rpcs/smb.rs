//! The smb group's RPCs (see [the module](super)).

/// The smb group's RPCs, each defined once (see [the module](super)).
macro_rules! smb_rpcs {
    ($then:ident $($carry:tt)*) => {
        $then! {
            $($carry)*
            {
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
            trait SmbApi: Smb => SmbOperation;

            /// Maps the share of `mapping.remote_path` globally (its root from CSI
            /// Proxy v1.1.2, the path itself before; again, if an existing mapping
            /// is no longer valid), and links `mapping.local_path` to the remote
            /// path if given. The mapping is made before the link: when the link is
            /// refused, the mapping stays.
            fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> () = {
                /// Map an SMB share globally.
                NewSmbGlobalMapping = "NewSmbGlobalMapping", Mutates,
                    [V1ALPHA1 => Native("NewSmbGlobalMapping")]
            }
            check { mapping.validate() };

            /// Removes the global mapping of the share that holds `remote_path` (of
            /// `remote_path` itself before CSI Proxy v1.1.2). A mapping that does
            /// not exist is an error.
            fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> () = {
                /// Remove a global SMB mapping.
                RemoveSmbGlobalMapping = "RemoveSmbGlobalMapping", Mutates,
                    [V1ALPHA1 => Native("RemoveSmbGlobalMapping")]
            };
            }
        }
    };
}
pub(crate) use smb_rpcs;
