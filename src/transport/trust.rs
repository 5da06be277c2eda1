//! Who may serve the endpoints: after an endpoint is opened and before the
//! first byte is sent, the owner of its server is checked against a
//! [`ServerTrust`].
//!
//! Negotiation opens the names of versions a node may not serve, and on
//! Windows any local process may create a named pipe under a free name. A
//! process that created `\\.\pipe\csi-proxy-smb-v1` on a node whose proxy
//! serves only older versions would receive every SMB mapping call, with
//! its password. CSI Proxy runs as `LocalSystem`, so its pipes are owned by
//! SYSTEM (or by the Administrators group); an unprivileged process cannot
//! create an object owned by either.

use std::collections::HashSet;
use std::sync::{LazyLock, Mutex, PoisonError};

use crate::error::{Error, Result};
use crate::server_owner::ServerOwner;

/// Whom a client trusts to serve CSI Proxy's endpoints: the owners a
/// named pipe's server (on Windows) or a Unix socket's peer may have.
///
/// By default a pipe must be owned by SYSTEM (`S-1-5-18`) or the
/// Administrators group (`S-1-5-32-544`), as CSI Proxy's are, whether it
/// runs as a Windows service or in a HostProcess container; a Unix socket's
/// peer must be root or the client's own user. Widen it for a deployment
/// that runs the proxy under another account, or narrow it to SYSTEM alone
/// with [`ServerTrust::system_only`]; see `docs/security.md`.
///
/// ```
/// use csi_proxy_client::{transport::{ServerTrust, Transport}, CsiProxy};
///
/// let trust = ServerTrust::default().trust_sid("S-1-5-80-1234-5678")?; // a service account
/// let builder = CsiProxy::builder().transport(Transport::named_pipes().trusting(trust));
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTrust {
    sids: Vec<String>,
    uids: Vec<u32>,
    /// Whether a Unix socket's peer may be the client's own user.
    own_user: bool,
}

impl Default for ServerTrust {
    fn default() -> Self {
        Self {
            sids: vec![Self::SYSTEM.to_owned(), Self::ADMINISTRATORS.to_owned()],
            uids: Vec::new(),
            own_user: true,
        }
    }
}

impl ServerTrust {
    /// The SID of `LocalSystem`, which CSI Proxy runs as.
    pub const SYSTEM: &'static str = "S-1-5-18";
    /// The SID of the built-in Administrators group, the owner of objects
    /// that an elevated administrator's process creates.
    pub const ADMINISTRATORS: &'static str = "S-1-5-32-544";

    /// Trusts SYSTEM alone: a pipe must be owned by `S-1-5-18`, a Unix
    /// socket's peer must be root (not the client's own user).
    ///
    /// For nodes where CSI Proxy runs as `NT AUTHORITY\SYSTEM`, as a
    /// Windows service or in a HostProcess container: a pipe owned by the
    /// Administrators group, such as one that a process an administrator
    /// started elevated creates on Windows Server, is then refused too. (A
    /// process with `SeRestorePrivilege` enabled may still name SYSTEM as
    /// its pipe's owner; see `docs/security.md`.) The `trust_*` methods
    /// widen it again from there.
    ///
    /// ```
    /// use csi_proxy_client::transport::ServerTrust;
    ///
    /// let trust = ServerTrust::system_only();
    /// assert_eq!(trust.sids(), [ServerTrust::SYSTEM]);
    /// assert_ne!(trust, ServerTrust::default());
    /// ```
    pub fn system_only() -> Self {
        Self {
            sids: vec![Self::SYSTEM.to_owned()],
            uids: Vec::new(),
            own_user: false,
        }
    }

    /// Also trusts pipes owned by `sid` (`S-1-5-...`). Fails with
    /// [`Error::InvalidArgument`] for text that is not a SID.
    pub fn trust_sid(mut self, sid: &str) -> Result<Self> {
        let sid = sid.trim();
        let mut parts = sid.split('-');
        let well_formed = parts.next().is_some_and(|s| s.eq_ignore_ascii_case("S"))
            && parts.next() == Some("1")
            && {
                let rest: Vec<&str> = parts.collect();
                !rest.is_empty()
                    && rest
                        .iter()
                        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            };
        if !well_formed {
            return Err(Error::invalid_argument(
                "trusted owner",
                format!("{sid:?} is not a SID such as S-1-5-18"),
            ));
        }
        let sid = sid.to_ascii_uppercase();
        if !self.sids.contains(&sid) {
            self.sids.push(sid);
        }
        Ok(self)
    }

    /// Also trusts Unix sockets whose peer is the user `uid` (root always
    /// is, and the client's own user unless [`system_only`](Self::system_only)).
    pub fn trust_uid(mut self, uid: u32) -> Self {
        if !self.uids.contains(&uid) {
            self.uids.push(uid);
        }
        self
    }

    /// Also trusts the user this process runs as: for a fake or
    /// development proxy started by that user (tests), never for a node.
    /// On Unix the own user is trusted already, unless
    /// [`system_only`](Self::system_only).
    pub fn trust_current_user(mut self) -> Result<Self> {
        #[cfg(windows)]
        {
            let sid = os::current_user_sid()
                .map_err(|e| Error::invalid_argument("trusted owner", format!("{e}")))?;
            self.own_user = true;
            self.trust_sid(&sid)
        }
        #[cfg(not(windows))]
        {
            self.own_user = true;
            Ok(self)
        }
    }

    /// The trusted owners of pipes, as SIDs.
    pub fn sids(&self) -> &[String] {
        &self.sids
    }

    /// The trusted peers of Unix sockets besides root and (unless
    /// [`system_only`](Self::system_only)) the client's own user.
    pub fn uids(&self) -> &[u32] {
        &self.uids
    }

    /// Whether a server owned by `owner` may serve the client.
    pub fn admits(&self, owner: &ServerOwner) -> bool {
        match owner {
            ServerOwner::Sid(sid) => self.sids.iter().any(|s| s.eq_ignore_ascii_case(sid)),
            ServerOwner::Uid(uid) => {
                *uid == 0 || (self.own_user && Some(*uid) == own_uid()) || self.uids.contains(uid)
            }
            ServerOwner::Unknown(_) => false,
        }
    }
}

/// The user this process runs as, on Unix.
fn own_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions and cannot fail.
        Some(unsafe { libc::geteuid() })
    }
    #[cfg(not(unix))]
    None
}

/// Logs an untrusted server at error level, once per endpoint and owner
/// for the life of the process: looks repeat, the warning need not.
pub(crate) fn report_untrusted(address: &str, owner: &ServerOwner) {
    static REPORTED: LazyLock<Mutex<HashSet<(String, ServerOwner)>>> =
        LazyLock::new(Mutex::default);
    let first = REPORTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert((address.to_owned(), owner.clone()));
    if first {
        tracing::error!(
            %address,
            %owner,
            "an endpoint of CSI Proxy's is served by an untrusted owner; passed over, nothing sent \
             (see ServerTrust to widen the trusted set)"
        );
    }
}

/// Logs an endpoint passed over as suspect at warn level, once per
/// endpoint for the life of the process: it exists but failed (`why`:
/// busy for the whole connect timeout, access denied, not a socket),
/// while an older version of its group is served by a trusted owner. A
/// process that keeps a newer version's pipe busy, or closed to the
/// client, looks so; so does a proxy whose newest pipe is in trouble.
pub(crate) fn report_suspect(address: &str, why: &str) {
    static REPORTED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);
    let first = REPORTED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(address.to_owned());
    if first {
        tracing::warn!(
            %address,
            error = %why,
            "an endpoint of CSI Proxy's failed while an older version is served by a trusted \
             owner; passed over as suspect (a squatter may keep it busy or closed)"
        );
    }
}

#[cfg(windows)]
pub(crate) use os::owner_of_handle;
// Also the owner-only state folders' (src/owner_only).
#[cfg(windows)]
pub(crate) use os::{current_user_sid, sid_text, SecurityAttributes};

#[cfg(windows)]
mod os {
    //! The Windows calls: a handle's owner, the current user, and security
    //! attributes from SDDL text (for the test harness's pipes, and the
    //! owner-only state folders).

    use std::ffi::c_void;
    use std::io;
    use std::ptr;

    use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
    use windows_sys::Win32::Security::Authorization::{
        ConvertSidToStringSidW, GetSecurityInfo, SE_KERNEL_OBJECT,
    };
    use windows_sys::Win32::Security::Authorization::{
        ConvertStringSecurityDescriptorToSecurityDescriptorW, SDDL_REVISION_1,
    };
    use windows_sys::Win32::Security::SECURITY_ATTRIBUTES;
    use windows_sys::Win32::Security::{
        GetTokenInformation, TokenUser, OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
        TOKEN_QUERY, TOKEN_USER,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    use super::ServerOwner;

    /// The owner of the object behind `handle`, which must have been
    /// opened with `READ_CONTROL` (a pipe opened for reading has it). A
    /// call that fails is an error, not an owner: a server that
    /// disconnected meanwhile (`ERROR_PIPE_NOT_CONNECTED`, 233) says
    /// nothing about who it was.
    pub fn owner_of_handle(handle: HANDLE) -> io::Result<ServerOwner> {
        let mut owner: PSID = ptr::null_mut();
        let mut descriptor: PSECURITY_DESCRIPTOR = ptr::null_mut();
        // SAFETY: `handle` is open for the call; the out pointers are
        // valid; the descriptor the call allocates is freed below, and
        // `owner` points into it.
        let status = unsafe {
            GetSecurityInfo(
                handle,
                SE_KERNEL_OBJECT,
                OWNER_SECURITY_INFORMATION,
                &mut owner,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut descriptor,
            )
        };
        let found = if status != 0 {
            Err(io::Error::from_raw_os_error(status as i32))
        } else if owner.is_null() {
            Ok(ServerOwner::Unknown("the pipe has no owner".into()))
        } else {
            sid_text(owner).map(ServerOwner::Sid)
        };
        if !descriptor.is_null() {
            // SAFETY: allocated by GetSecurityInfo, freed once.
            unsafe { LocalFree(descriptor) };
        }
        found
    }

    /// `S-1-...` for a SID.
    pub fn sid_text(sid: PSID) -> io::Result<String> {
        let mut text: *mut u16 = ptr::null_mut();
        // SAFETY: `sid` is a valid SID; the string the call allocates is
        // read up to its NUL and freed once.
        unsafe {
            if ConvertSidToStringSidW(sid, &mut text) == 0 {
                return Err(io::Error::last_os_error());
            }
            let len = (0..).take_while(|&i| *text.add(i) != 0).count();
            let sid = String::from_utf16_lossy(std::slice::from_raw_parts(text, len));
            LocalFree(text.cast());
            Ok(sid)
        }
    }

    /// The SID of the user this process runs as.
    pub fn current_user_sid() -> io::Result<String> {
        let mut token: HANDLE = ptr::null_mut();
        // SAFETY: the pseudo-handle of the current process needs no
        // closing; the token is closed below.
        if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buffer = vec![0u64; 64]; // 512 bytes, aligned for TOKEN_USER
        let mut needed = 0u32;
        // SAFETY: the buffer is writable for its length in bytes.
        let ok = unsafe {
            GetTokenInformation(
                token,
                TokenUser,
                buffer.as_mut_ptr().cast::<c_void>(),
                (buffer.len() * 8) as u32,
                &mut needed,
            )
        };
        let result = if ok == 0 {
            Err(io::Error::last_os_error())
        } else {
            // SAFETY: filled by the call with a TOKEN_USER whose SID points
            // into the buffer, which lives until the end of this block.
            let user = unsafe { &*buffer.as_ptr().cast::<TOKEN_USER>() };
            sid_text(user.User.Sid)
        };
        // SAFETY: opened above, closed once.
        unsafe { CloseHandle(token) };
        result
    }

    /// Security attributes made from an SDDL string, freed on drop.
    pub struct SecurityAttributes {
        attributes: SECURITY_ATTRIBUTES,
    }

    impl SecurityAttributes {
        /// The attributes of `sddl`, such as `O:S-1-5-18D:(A;;GA;;;WD)`.
        pub fn from_sddl(sddl: &str) -> io::Result<Self> {
            let wide: Vec<u16> = sddl.encode_utf16().chain([0]).collect();
            let mut descriptor: PSECURITY_DESCRIPTOR = ptr::null_mut();
            // SAFETY: `wide` is NUL-terminated; the descriptor the call
            // allocates is freed on drop.
            let ok = unsafe {
                ConvertStringSecurityDescriptorToSecurityDescriptorW(
                    wide.as_ptr(),
                    SDDL_REVISION_1,
                    &mut descriptor,
                    ptr::null_mut(),
                )
            };
            if ok == 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Self {
                attributes: SECURITY_ATTRIBUTES {
                    nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
                    lpSecurityDescriptor: descriptor,
                    bInheritHandle: 0,
                },
            })
        }

        /// The pointer the Win32 calls take; valid while `self` lives.
        pub fn as_ptr(&self) -> *mut c_void {
            std::ptr::from_ref(&self.attributes).cast_mut().cast()
        }

        /// The security descriptor; valid while `self` lives.
        pub fn descriptor(&self) -> PSECURITY_DESCRIPTOR {
            self.attributes.lpSecurityDescriptor
        }
    }

    impl Drop for SecurityAttributes {
        fn drop(&mut self) {
            // SAFETY: allocated in from_sddl, freed once.
            unsafe { LocalFree(self.attributes.lpSecurityDescriptor) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_only_system_and_administrators_own_pipes_we_trust() {
        let trust = ServerTrust::default();
        assert!(trust.admits(&ServerOwner::Sid("S-1-5-18".into())));
        assert!(trust.admits(&ServerOwner::Sid("s-1-5-32-544".into())));
        for untrusted in ["S-1-5-21-0-0-0-1000", "S-1-1-0", "S-1-5-32-545"] {
            assert!(
                !trust.admits(&ServerOwner::Sid(untrusted.into())),
                "{untrusted}"
            );
        }
    }

    #[test]
    fn an_owner_that_cannot_be_checked_is_never_trusted() {
        let wide = ServerTrust::default().trust_uid(1000);
        assert!(!wide.admits(&ServerOwner::Unknown("no owner".into())));
    }

    #[test]
    fn a_named_sid_widens_the_set() {
        let user = "S-1-5-21-0-0-0-1000";
        let trust = ServerTrust::default().trust_sid(user).unwrap();
        assert!(trust.admits(&ServerOwner::Sid(user.into())));
        assert_eq!(trust.sids().len(), 3);
        // Named twice, kept once.
        assert_eq!(trust.trust_sid(user).unwrap().sids().len(), 3);
    }

    #[test]
    fn text_that_is_no_sid_is_refused() {
        for bad in [
            "",
            "S-1",
            "S-1-",
            "S-2-5-18",
            "X-1-5-18",
            "S-1-5-18-",
            "S-1-5-a",
            "SYSTEM",
        ] {
            let err = ServerTrust::default().trust_sid(bad).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument { .. }), "{bad}: {err}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_socket_peer_must_be_root_the_own_user_or_named() {
        let me = own_uid().unwrap();
        let trust = ServerTrust::default();
        assert!(trust.admits(&ServerOwner::Uid(0)));
        assert!(trust.admits(&ServerOwner::Uid(me)));
        let stranger = if me == 4242 { 4343 } else { 4242 };
        assert!(!trust.admits(&ServerOwner::Uid(stranger)));
        assert!(trust
            .trust_uid(stranger)
            .admits(&ServerOwner::Uid(stranger)));
    }

    #[test]
    fn system_only_trusts_system_and_root_alone_until_widened() {
        let trust = ServerTrust::system_only();
        assert!(trust.admits(&ServerOwner::Sid(ServerTrust::SYSTEM.into())));
        assert!(!trust.admits(&ServerOwner::Sid(ServerTrust::ADMINISTRATORS.into())));
        assert!(!trust.admits(&ServerOwner::Sid("S-1-5-21-0-0-0-1000".into())));
        assert!(trust.admits(&ServerOwner::Uid(0)));
        assert!(!trust.admits(&ServerOwner::Uid(4242)));
        assert!(trust.uids().is_empty());
        // Widened from there, as the default is.
        let administrators = trust.clone().trust_sid("S-1-5-32-544").unwrap();
        assert!(administrators.admits(&ServerOwner::Sid(ServerTrust::ADMINISTRATORS.into())));
        assert_eq!(administrators.sids(), ServerTrust::default().sids());
        assert!(trust
            .clone()
            .trust_uid(4242)
            .admits(&ServerOwner::Uid(4242)));
        let me = trust.trust_current_user().unwrap();
        #[cfg(windows)]
        assert!(me.admits(&ServerOwner::Sid(current_user_sid().unwrap())));
        #[cfg(unix)]
        assert!(me.admits(&ServerOwner::Uid(own_uid().unwrap())));
    }

    /// The client's own user is trusted by default on Unix. That
    /// `system_only` leaves it out is checked over a socket, as user
    /// `nobody` when the tests run as root, whom it does trust
    /// (tests/it/negotiation/trust.rs).
    #[cfg(unix)]
    #[test]
    fn the_default_trusts_the_own_user_on_unix() {
        let me = own_uid().unwrap();
        assert!(ServerTrust::default().admits(&ServerOwner::Uid(me)));
    }

    /// A server that disconnected between the client's open and the read
    /// of its owner: on Windows the read fails (`ERROR_PIPE_NOT_CONNECTED`,
    /// 233), and that is an error, not an owner that could be judged.
    #[cfg(windows)]
    #[tokio::test]
    async fn the_owner_of_a_pipe_whose_server_disconnected_is_an_error_not_an_owner() {
        use std::os::windows::io::AsRawHandle;
        use tokio::net::windows::named_pipe::{ClientOptions, ServerOptions};

        let name = format!(r"\\.\pipe\csi-proxy-trust-test-{}", std::process::id());
        let me = current_user_sid().unwrap();
        let attributes = SecurityAttributes::from_sddl(&format!("O:{me}D:(A;;GA;;;{me})")).unwrap();
        // SAFETY: the attributes outlive the call, which copies them.
        let server = unsafe {
            ServerOptions::new()
                .first_pipe_instance(true)
                .create_with_security_attributes_raw(&name, attributes.as_ptr())
        }
        .unwrap();
        let client = ClientOptions::new().open(&name).unwrap();
        server.connect().await.unwrap();
        let connected = owner_of_handle(client.as_raw_handle());
        assert!(
            matches!(connected, Ok(ServerOwner::Sid(_))),
            "{connected:?}"
        );
        server.disconnect().unwrap();
        match owner_of_handle(client.as_raw_handle()) {
            Err(e) => assert_eq!(e.raw_os_error(), Some(233), "{e}"),
            Ok(owner) => panic!("read after the server disconnected: {owner}"),
        }
    }
}
