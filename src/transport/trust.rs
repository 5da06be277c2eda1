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
use std::fmt;
use std::sync::{LazyLock, Mutex, PoisonError};

use crate::error::{Error, Result};

/// Whom a client trusts to serve CSI Proxy's endpoints: the owners a
/// named pipe's server (on Windows) or a Unix socket's peer may have.
///
/// By default a pipe must be owned by SYSTEM (`S-1-5-18`) or the
/// Administrators group (`S-1-5-32-544`), as CSI Proxy's are, whether it
/// runs as a Windows service or in a HostProcess container; a Unix socket's
/// peer must be root or the client's own user. Widen it for a deployment
/// that runs the proxy under another account; see `docs/security.md`.
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
}

impl Default for ServerTrust {
    fn default() -> Self {
        Self {
            sids: vec![Self::SYSTEM.to_owned(), Self::ADMINISTRATORS.to_owned()],
            uids: Vec::new(),
        }
    }
}

impl ServerTrust {
    /// The SID of `LocalSystem`, which CSI Proxy runs as.
    pub const SYSTEM: &'static str = "S-1-5-18";
    /// The SID of the built-in Administrators group, the owner of objects
    /// that an elevated administrator's process creates.
    pub const ADMINISTRATORS: &'static str = "S-1-5-32-544";

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

    /// Also trusts Unix sockets whose peer is the user `uid` (root and the
    /// client's own user always are).
    pub fn trust_uid(mut self, uid: u32) -> Self {
        if !self.uids.contains(&uid) {
            self.uids.push(uid);
        }
        self
    }

    /// Also trusts the user this process runs as: for a fake or
    /// development proxy started by that user (tests), never for a node.
    /// On Unix the own user is always trusted already.
    pub fn trust_current_user(self) -> Result<Self> {
        #[cfg(windows)]
        {
            let sid = os::current_user_sid()
                .map_err(|e| Error::invalid_argument("trusted owner", format!("{e}")))?;
            self.trust_sid(&sid)
        }
        #[cfg(not(windows))]
        Ok(self)
    }

    /// The trusted owners of pipes, as SIDs.
    pub fn sids(&self) -> &[String] {
        &self.sids
    }

    /// The trusted peers of Unix sockets besides root and the client's own
    /// user.
    pub fn uids(&self) -> &[u32] {
        &self.uids
    }

    /// Whether a server owned by `owner` may serve the client.
    pub fn admits(&self, owner: &ServerOwner) -> bool {
        match owner {
            ServerOwner::Sid(sid) => self.sids.iter().any(|s| s.eq_ignore_ascii_case(sid)),
            ServerOwner::Uid(uid) => {
                *uid == 0 || Some(*uid) == own_uid() || self.uids.contains(uid)
            }
            ServerOwner::Unknown(_) => false,
        }
    }
}

/// Who serves an endpoint, as the operating system tells.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerOwner {
    /// The owner of a named pipe, as a SID.
    Sid(String),
    /// The user of a Unix socket's peer.
    Uid(u32),
    /// The owner could not be read (why): never trusted.
    Unknown(String),
}

impl fmt::Display for ServerOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sid(sid) => write!(f, "owner {sid}"),
            Self::Uid(uid) => write!(f, "user {uid}"),
            Self::Unknown(why) => write!(f, "an owner that cannot be read ({why})"),
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

#[cfg(windows)]
pub(crate) use os::{current_user_sid, owner_of_handle, SecurityAttributes};

#[cfg(windows)]
mod os {
    //! The Windows calls: a handle's owner, the current user, and security
    //! attributes from SDDL text (for the test harness's pipes).

    use std::ffi::c_void;
    use std::io;
    use std::ptr;

    use windows_sys::Win32::Foundation::{CloseHandle, LocalFree, HANDLE};
    use windows_sys::Win32::Security::Authorization::{
        ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
        GetSecurityInfo, SDDL_REVISION_1, SE_KERNEL_OBJECT,
    };
    use windows_sys::Win32::Security::{
        GetTokenInformation, TokenUser, OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
        SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

    use super::ServerOwner;

    /// The owner of the object behind `handle`, which must have been
    /// opened with `READ_CONTROL` (a pipe opened for reading has it).
    pub fn owner_of_handle(handle: HANDLE) -> ServerOwner {
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
            ServerOwner::Unknown(io::Error::from_raw_os_error(status as i32).to_string())
        } else if owner.is_null() {
            ServerOwner::Unknown("the pipe has no owner".into())
        } else {
            match sid_text(owner) {
                Ok(sid) => ServerOwner::Sid(sid),
                Err(e) => ServerOwner::Unknown(e.to_string()),
            }
        };
        if !descriptor.is_null() {
            // SAFETY: allocated by GetSecurityInfo, freed once.
            unsafe { LocalFree(descriptor) };
        }
        found
    }

    /// `S-1-...` for a SID.
    fn sid_text(sid: PSID) -> io::Result<String> {
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
    fn an_owner_that_cannot_be_read_is_never_trusted() {
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
    fn owners_say_who_they_are() {
        assert_eq!(
            ServerOwner::Sid("S-1-5-18".into()).to_string(),
            "owner S-1-5-18"
        );
        assert_eq!(ServerOwner::Uid(7).to_string(), "user 7");
    }
}
