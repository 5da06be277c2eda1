//! `csiproxyctl smb ...`.

use std::io::BufRead;

use clap::Subcommand;
use csi_proxy_client::{
    api::{Secret, SmbMapping, SmbRemotePath},
    CsiProxy,
};

use crate::cli::Confirm;
use crate::failure::{confirmed, Failure, Outcome};
use crate::output::Records;
use crate::{done, path};

/// Where `smb map` reads the password from when not told otherwise. Never
/// an argument: other users of the node can read a process's arguments.
const SMB_PASSWORD_VARIABLE: &str = "CSIPROXYCTL_SMB_PASSWORD";

#[derive(Subcommand)]
pub enum SmbCommand {
    /// Map a share for the whole node. The password comes from the
    /// CSIPROXYCTL_SMB_PASSWORD environment variable, or with
    /// --password-stdin from the first line of standard input.
    Map {
        /// The share, `\\server\share`.
        remote: String,
        /// The user to connect as.
        #[arg(long)]
        user: String,
        /// Also link this local path to the share.
        #[arg(long, value_name = "PATH")]
        link: Option<String>,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        #[command(flatten)]
        confirm: Confirm,
    },
    /// Remove a share's global mapping.
    Unmap {
        /// The share, `\\server\share`.
        remote: String,
        #[command(flatten)]
        confirm: Confirm,
    },
}

/// Runs `command` on the SMB group.
pub async fn run(proxy: &CsiProxy, command: &SmbCommand) -> Outcome<Records> {
    let smb = proxy.smb()?;
    Ok(match command {
        SmbCommand::Map {
            remote,
            user,
            link,
            password_stdin,
            confirm,
        } => {
            confirmed(confirm, "smb map")?;
            let mut mapping = SmbMapping::new(
                SmbRemotePath::new(remote)?,
                user.as_str(),
                password(*password_stdin)?,
            );
            if let Some(link) = link {
                mapping = mapping.with_local_path(path(link)?);
            }
            smb.new_smb_global_mapping(&mapping).await?;
            done(format!("mapped {remote}"))
        }
        SmbCommand::Unmap { remote, confirm } => {
            confirmed(confirm, "smb unmap")?;
            smb.remove_smb_global_mapping(&SmbRemotePath::new(remote)?)
                .await?;
            done(format!("unmapped {remote}"))
        }
    })
}

/// The SMB password, from standard input or the environment.
fn password(from_stdin: bool) -> Outcome<Secret> {
    let password = if from_stdin {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).map_err(|e| {
            Failure::usage(format!("reading the password from standard input: {e}"))
        })?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    } else {
        std::env::var(SMB_PASSWORD_VARIABLE).map_err(|_| {
            Failure::usage(format!(
                "smb map needs a password: set {SMB_PASSWORD_VARIABLE} or pass --password-stdin"
            ))
        })?
    };
    if password.is_empty() {
        return Err(Failure::usage("the SMB password is empty"));
    }
    Ok(Secret::new(password))
}
