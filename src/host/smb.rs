//! The SMB group on the host: global mappings through WMI's
//! `MSFT_SmbGlobalMapping` (namespace `Root\Microsoft\Windows\SMB`), as
//! CSI Proxy's host layer makes them since it left PowerShell, and the
//! local path as a directory symbolic link to the remote path.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;

use super::links::{Entry, Links};
use super::on_host::{host_error, io_error};
use super::wmi::{unsigned, wql_string, Requests, Wmi, WmiGroup, WmiObject, WmiValue};
use crate::api::{share_root, SmbApi, SmbMapping, SmbRemotePath};
use crate::capability::Operation as Op;
use crate::error::Result;
use crate::group::ApiGroup;
use crate::redact::redact;
use crate::working_dirs::Rule;

pub(super) const NAMESPACE: &str = r"Root\Microsoft\Windows\SMB";
pub(super) const CLASS: &str = "MSFT_SmbGlobalMapping";

/// The `Status` of a mapping that works ("OK"). The others, 1 to 6, are
/// paused, disconnected, network error, connecting, reconnecting and
/// unavailable.
const STATUS_OK: u64 = 0;

/// The statuses of a mapping on its way back by itself (paused,
/// connecting, reconnecting): every pod on the share uses it, so it is
/// left alone rather than removed under them.
const STATUS_RECOVERING: [u64; 3] = [1, 4, 5];

/// `ERROR_ALREADY_ASSIGNED`: the name a new mapping needs is taken, here
/// by a broken mapping of the share (the code the mounter reads as a stale
/// mapping).
const ERROR_ALREADY_ASSIGNED: i32 = 85;

/// Whether the share's root answers: a mapping whose status is OK may
/// still hold credentials that no longer work (a rotated password).
pub(crate) type Reachable = dyn Fn(&Path) -> bool + Send + Sync;

/// The SMB group, served by the host.
pub(crate) struct HostSmb {
    wmi: WmiGroup,
    links: Arc<dyn Links>,
    working_dirs: Arc<[String]>,
    reachable: Arc<Reachable>,
}

impl HostSmb {
    /// The group over `wmi` and `links`; local paths must lie under
    /// `working_dirs`.
    pub fn new(
        wmi: Arc<dyn Wmi>,
        links: Arc<dyn Links>,
        working_dirs: Vec<String>,
        reachable: Arc<Reachable>,
    ) -> Self {
        Self {
            wmi: WmiGroup::new(wmi, ApiGroup::Smb, NAMESPACE),
            links,
            working_dirs: working_dirs.into(),
            reachable,
        }
    }
}

/// Whether `root` answers on this host, as the proxy decides it: the path
/// is there (`GetFileAttributesW` through `std`). A failure other than
/// "not found" is logged, and counts as not answering.
pub(crate) fn share_answers(root: &Path) -> bool {
    match std::fs::metadata(root) {
        Ok(_) => true,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
        Err(error) => {
            tracing::warn!(share = %root.display(), %error, "the SMB share does not answer");
            false
        }
    }
}

/// The share's root of `remote`.
fn root_of(op: Op, remote: &SmbRemotePath) -> Result<String> {
    share_root(remote.as_str())
        .ok_or_else(|| host_error(op, format!("{remote} is not a share path"), None))
}

/// The global mapping of `root`, if there is one.
fn find_mapping(wmi: &Requests, root: &str) -> Result<Option<WmiObject>> {
    let query = format!(
        "SELECT * FROM {CLASS} WHERE RemotePath = {}",
        wql_string(root)
    );
    Ok(wmi.query(&query)?.into_iter().next())
}

/// Whether `mapping` is to be used as it is: its status is OK and its
/// share answers, or it is recovering by itself. A broken one (disconnected,
/// a network error, unavailable, a status not known, or OK with a share
/// that does not answer, as with a rotated password) is not.
fn is_kept(mapping: &WmiObject, root: &str, reachable: &Reachable) -> bool {
    match mapping.get("Status").and_then(unsigned) {
        Some(STATUS_OK) => reachable(Path::new(root)),
        Some(status) => STATUS_RECOVERING.contains(&status),
        None => false,
    }
}

/// The refusal of a new mapping over `broken`, which is left as it is:
/// the group cannot tell who made it, so only its owner may remove it
/// (the mounter does, for a mapping it recorded as its own) before it is
/// made again.
fn broken_mapping(op: Op, root: &str, broken: &WmiObject) -> crate::error::Error {
    let status = match broken.get("Status").and_then(unsigned) {
        Some(STATUS_OK) => "OK, but its share does not answer".to_owned(),
        Some(status) => format!("status {status}"),
        None => "status unknown".to_owned(),
    };
    host_error(
        op,
        format!(
            "the global mapping of {root} does not work ({status}); it was left as it is: \
             remove it (RemoveSmbGlobalMapping) to make it again"
        ),
        Some(ERROR_ALREADY_ASSIGNED),
    )
}

/// Whether `root` has a global mapping, whatever its status: the look
/// before a share's first mapping, in-process (see
/// `HostFilesystem::is_symlink`).
pub(crate) struct MappingLook {
    wmi: WmiGroup,
}

impl MappingLook {
    /// The look over `wmi`.
    pub fn new(wmi: Arc<dyn Wmi>) -> Self {
        Self {
            wmi: WmiGroup::new(wmi, ApiGroup::Smb, NAMESPACE),
        }
    }

    /// Whether the share of `share_root` (`\\server\share\`) has a
    /// global mapping.
    pub async fn is_mapped(&self, op: Op, share_root: &str) -> Result<bool> {
        let root = share_root.trim_end_matches('\\').to_lowercase();
        self.wmi
            .run(op, root.clone(), move |wmi| {
                Ok(find_mapping(&wmi, &root)?.is_some())
            })
            .await
    }
}

/// Removes `mapping`, even while files on it are open (`Force`).
fn remove(wmi: &Requests, mapping: &WmiObject) -> Result<()> {
    let params = vec![("Force", WmiValue::Bool(true))];
    wmi.call(CLASS, wmi.path_of(mapping)?, "Remove", params)
}

/// Creates the global mapping of `root` with the caller's credentials,
/// requiring encryption (as CSI Proxy does by default).
fn create(wmi: &Requests, root: &str, mapping: &SmbMapping) -> Result<()> {
    // The user name is never empty here: the handle checked the mapping
    // (`SmbMapping::validate`, in the SMB group's catalogue entry).
    let credential = credential(&mapping.username, mapping.password.expose());
    let params = vec![
        ("RemotePath", WmiValue::String(root.to_owned())),
        ("RequirePrivacy", WmiValue::Bool(true)),
        ("Credential", WmiValue::String(credential)),
    ];
    wmi.call(CLASS, CLASS, "Create", params)
}

/// The credential as the method takes it in a string: the user name with
/// `\` and `:` escaped by a backslash, a `:`, then the password.
fn credential(username: &str, password: &str) -> String {
    let mut credential = String::with_capacity(username.len() + password.len() + 2);
    for c in username.chars() {
        if matches!(c, '\\' | ':') {
            credential.push('\\');
        }
        credential.push(c);
    }
    credential.push(':');
    credential.push_str(password);
    credential
}

#[async_trait]
#[deny(clippy::missing_trait_methods)]
impl SmbApi for HostSmb {
    /// A usable mapping is kept (credentials unchecked), and so is one
    /// that is recovering by itself (paused, connecting, reconnecting).
    /// A broken one (disconnected, a network error, unavailable), or an OK
    /// one whose share does not answer, is left as it is and the call
    /// fails (Windows error 85, the name in use): nothing here tells who
    /// made it, so it is never removed here; its owner removes it, and
    /// maps again. A local path outside the working directories is
    /// refused before anything is done (the proxy checks it only after
    /// mapping).
    async fn new_smb_global_mapping(&self, mapping: &SmbMapping) -> Result<()> {
        let op = Op::NewSmbGlobalMapping;
        if let Some(local) = &mapping.local_path {
            crate::working_dirs::check(&self.working_dirs, Rule::Components, op, local)?;
        }
        let mapping = mapping.clone();
        let root = root_of(op, &mapping.remote_path)?;
        let (links, reachable) = (self.links.clone(), self.reachable.clone());
        // The provider's words join errors, and may echo the credential.
        let password = mapping.password.clone();
        self.wmi
            .run(op, root.clone(), move |wmi| {
                let remote = mapping.remote_path.as_str();
                match find_mapping(&wmi, &root)? {
                    Some(found) if is_kept(&found, &root, &*reachable) => {}
                    Some(broken) => return Err(broken_mapping(op, &root, &broken)),
                    None => create(&wmi, &root, &mapping)?,
                }
                let Some(local) = &mapping.local_path else {
                    return Ok(());
                };
                let link = Path::new(local.as_str());
                if links.entry(link).map_err(|e| io_error(op, local, e))? != Entry::Missing {
                    let why = format!("creating link {local} to {remote} failed: {local} exists");
                    return Err(wmi.error(why));
                }
                // The link leads into the share's folder, so it ends with `\`.
                let target = format!("{}\\", remote.trim_end_matches('\\'));
                links
                    .create_dir_link(Path::new(&target), link)
                    .map_err(|e| io_error(op, format!("creating link {local} to {target}"), e))
            })
            .await
            .map_err(|e| redact(e, &password))
    }

    /// Removes the mapping of the share that holds `remote_path`; its
    /// local link, if any, is left (as the proxy leaves it).
    async fn remove_smb_global_mapping(&self, remote_path: &SmbRemotePath) -> Result<()> {
        let op = Op::RemoveSmbGlobalMapping;
        let root = root_of(op, remote_path)?;
        self.wmi
            .run(op, root.clone(), move |wmi| {
                match find_mapping(&wmi, &root)? {
                    Some(mapping) => remove(&wmi, &mapping),
                    None => Err(wmi.error(format!("{root}: no global mapping exists"))),
                }
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credential_escapes_the_user_name_only() {
        assert_eq!(credential("user", "p:w\\d"), "user:p:w\\d");
        assert_eq!(
            credential(r"DOMAIN\user:x", "secret"),
            r"DOMAIN\\user\:x:secret"
        );
    }
}
