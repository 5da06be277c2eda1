//! Owner-only by owner and DACL: made with a protected DACL (nothing
//! inherited from the parent, whose ACEs on a stock `C:\` let Users add
//! files and folders) for SYSTEM, the Administrators and this process's
//! user; refused when another SID owns the object or an ACE lets one
//! change it.
//!
//! The walk over a descriptor's ACEs ([`fault`]) reads no file, so that it
//! can be tried on descriptors made from SDDL text.

use std::ffi::c_void;
use std::fmt;
use std::fs;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;
use std::ptr;

use windows_sys::Win32::Foundation::LocalFree;
use windows_sys::Win32::Security::Authorization::{
    GetNamedSecurityInfoW, GetSecurityInfo, SE_FILE_OBJECT,
};
use windows_sys::Win32::Security::{
    GetAce, GetSecurityDescriptorDacl, GetSecurityDescriptorOwner, ACCESS_ALLOWED_ACE, ACL,
    DACL_SECURITY_INFORMATION, INHERIT_ONLY_ACE, OBJECT_INHERIT_ACE, OWNER_SECURITY_INFORMATION,
    PSECURITY_DESCRIPTOR, PSID,
};
use windows_sys::Win32::Storage::FileSystem::CreateDirectoryW;

use crate::transport::{current_user_sid, sid_text, SecurityAttributes};

const SYSTEM: &str = "S-1-5-18";
const ADMINISTRATORS: &str = "S-1-5-32-544";
/// CREATOR OWNER and OWNER RIGHTS: in an inheritable ACE, the owner of
/// what is made in the folder (who could make it, and whose ownership
/// is checked); as an effective ACE, no one but the owner.
const OWNER_STAND_INS: [&str; 2] = ["S-1-3-0", "S-1-3-4"];

/// The rights that let their holder change an object or what it holds:
/// write data (add a file), append (add a folder), write extended
/// attributes, delete a child, write attributes, delete, write the DACL,
/// take ownership, and the generic write and all.
pub(crate) const WRITE: u32 = 0x2 | 0x4 | 0x10 | 0x40 | 0x100 | 0x1_0000 // DELETE
    | 0x4_0000 // WRITE_DAC
    | 0x8_0000 // WRITE_OWNER
    | 0x4000_0000 // GENERIC_WRITE
    | 0x1000_0000; // GENERIC_ALL
/// The rights that let their holder read a file's data: read data, and
/// the generic read and all.
pub(crate) const READ: u32 = 0x1 | 0x8000_0000 | 0x1000_0000;

/// ACE types that grant: allowed, and allowed with a callback (the same
/// layout, with data after the SID).
const ALLOWED: [u8; 2] = [0x0, 0x9];
/// ACE types that grant whose SID this walk does not read (compound,
/// object, callback object): refused rather than guessed at.
const ALLOWED_UNREAD: [u8; 3] = [0x4, 0x5, 0xB];

/// What makes an object not owner-only.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Fault {
    /// The descriptor names no owner.
    NoOwner,
    /// Its owner is not trusted.
    Owner(String),
    /// It has no DACL: everyone may do anything.
    NullDacl,
    /// An ACE grants `sid` rights asked about (`mask`); `to_files`: only
    /// through the files made in the folder, which inherit it.
    Grant {
        /// The SID.
        sid: String,
        /// The ACE's access mask.
        mask: u32,
        /// Whether it reaches the folder's files only, not the folder.
        to_files: bool,
    },
    /// An ACE that grants, of a type whose SID is not read.
    Unread(u8),
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoOwner => write!(f, "it has no owner"),
            Self::Owner(sid) => write!(
                f,
                "its owner is {sid}, not SYSTEM ({SYSTEM}), the Administrators \
                 ({ADMINISTRATORS}) or this process's user"
            ),
            Self::NullDacl => write!(f, "it has no DACL, so everyone may change it"),
            Self::Grant {
                sid,
                mask,
                to_files,
            } => {
                let may = if mask & WRITE != 0 { "change" } else { "read" };
                match to_files {
                    false => write!(f, "{sid} may {may} it (an ACE grants it {mask:#x})"),
                    true => write!(
                        f,
                        "{sid} may {may} the files made in it (an inheritable ACE grants it \
                         {mask:#x})"
                    ),
                }
            }
            Self::Unread(kind) => write!(
                f,
                "an ACE of type {kind:#x} grants access to a SID this check does not read"
            ),
        }
    }
}

/// The first thing in `descriptor` that lets a SID not in `trusted` (nor
/// standing in for the owner) have any of `rights` on the object, for a
/// folder (`folder`) or a file; `None` when there is none.
///
/// Deny ACEs are passed over (they grant nothing); an inherit-only ACE
/// counts on a folder when files made in it inherit it (object-inherit),
/// since the journal and the key are such files, and is passed over when
/// it reaches subfolders only: the plugin makes none but with their own
/// protected DACL, and another SID could add one only with rights that
/// are refused on the folder itself.
///
/// # Safety
///
/// `descriptor` must point to a valid security descriptor, alive for the
/// call.
pub(crate) unsafe fn fault(
    descriptor: PSECURITY_DESCRIPTOR,
    trusted: &[&str],
    rights: u32,
    folder: bool,
) -> io::Result<Option<Fault>> {
    let is_trusted = |sid: &str| trusted.iter().any(|t| t.eq_ignore_ascii_case(sid));
    let mut owner: PSID = ptr::null_mut();
    let mut defaulted = 0;
    // SAFETY: the descriptor is valid (the caller's word); the out
    // pointers are.
    if unsafe { GetSecurityDescriptorOwner(descriptor, &mut owner, &mut defaulted) } == 0 {
        return Err(io::Error::last_os_error());
    }
    if owner.is_null() {
        return Ok(Some(Fault::NoOwner));
    }
    let owner = sid_text(owner)?;
    if !is_trusted(&owner) {
        return Ok(Some(Fault::Owner(owner)));
    }
    let (mut present, mut dacl): (_, *mut ACL) = (0, ptr::null_mut());
    // SAFETY: as above; `dacl` points into the descriptor.
    let read =
        unsafe { GetSecurityDescriptorDacl(descriptor, &mut present, &mut dacl, &mut defaulted) };
    if read == 0 {
        return Err(io::Error::last_os_error());
    }
    if present == 0 || dacl.is_null() {
        return Ok(Some(Fault::NullDacl));
    }
    // SAFETY: a present DACL is a valid ACL inside the descriptor.
    let count = unsafe { (*dacl).AceCount };
    for index in 0..u32::from(count) {
        let mut ace: *mut c_void = ptr::null_mut();
        // SAFETY: `index` is below the ACL's count; `ace` points into it.
        if unsafe { GetAce(dacl, index, &mut ace) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: every ACE starts with its header, and those of the
        // allowed types read below have the layout of ACCESS_ALLOWED_ACE.
        let ace = unsafe { &*ace.cast::<ACCESS_ALLOWED_ACE>() };
        let (kind, flags) = (ace.Header.AceType, u32::from(ace.Header.AceFlags));
        if ALLOWED_UNREAD.contains(&kind) {
            return Ok(Some(Fault::Unread(kind)));
        }
        if !ALLOWED.contains(&kind) || ace.Mask & rights == 0 {
            continue;
        }
        let here = flags & INHERIT_ONLY_ACE == 0;
        let to_files = folder && flags & OBJECT_INHERIT_ACE != 0;
        if !here && !to_files {
            continue;
        }
        let sid = sid_text(std::ptr::from_ref(&ace.SidStart).cast_mut().cast())?;
        if is_trusted(&sid) || OWNER_STAND_INS.contains(&sid.as_str()) {
            continue;
        }
        return Ok(Some(Fault::Grant {
            sid,
            mask: ace.Mask,
            to_files: !here,
        }));
    }
    Ok(None)
}

/// SYSTEM, the Administrators and this process's user.
fn trusted() -> io::Result<[String; 3]> {
    Ok([SYSTEM.into(), ADMINISTRATORS.into(), current_user_sid()?])
}

/// The owner-only DACL, protected from inheritance; its ACEs are
/// inherited by what is made in the folder.
pub(crate) fn owner_only_sddl(me: &str) -> String {
    format!("D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;{me})")
}

pub(super) fn make_folder(dir: &Path) -> io::Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(folder) = at.filter(|f| !f.as_os_str().is_empty() && !f.exists()) {
        missing.push(folder);
        at = folder.parent();
    }
    if missing.is_empty() {
        return Ok(());
    }
    let attributes = SecurityAttributes::from_sddl(&owner_only_sddl(&current_user_sid()?))?;
    for folder in missing.iter().rev() {
        let wide = wide(folder);
        // SAFETY: `wide` is NUL-terminated; the attributes outlive the
        // call.
        let made = unsafe { CreateDirectoryW(wide.as_ptr(), attributes.as_ptr().cast()) };
        if made == 0 {
            let error = io::Error::last_os_error();
            // Made meanwhile: checked as any folder that exists.
            if error.kind() != io::ErrorKind::AlreadyExists {
                return Err(error);
            }
        }
    }
    Ok(())
}

pub(super) fn create_secret(path: &Path) -> io::Result<fs::File> {
    use std::os::windows::io::FromRawHandle;
    use windows_sys::Win32::Foundation::{GENERIC_READ, GENERIC_WRITE, INVALID_HANDLE_VALUE};
    use windows_sys::Win32::Storage::FileSystem::{CreateFileW, CREATE_NEW, FILE_ATTRIBUTE_NORMAL};
    let me = current_user_sid()?;
    let sddl = format!("D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;FA;;;{me})");
    let attributes = SecurityAttributes::from_sddl(&sddl)?;
    let name = wide(path);
    // SAFETY: `name` is NUL-terminated; the attributes outlive the call;
    // the handle returned is owned by the File made of it.
    unsafe {
        let handle = CreateFileW(
            name.as_ptr(),
            GENERIC_READ | GENERIC_WRITE,
            0,
            attributes.as_ptr().cast(),
            CREATE_NEW,
            FILE_ATTRIBUTE_NORMAL,
            ptr::null_mut(),
        );
        if handle == INVALID_HANDLE_VALUE {
            return Err(io::Error::last_os_error());
        }
        Ok(fs::File::from_raw_handle(handle))
    }
}

pub(super) fn check_folder(dir: &Path) -> Result<(), String> {
    if !dir.is_dir() {
        return Err("it is not a folder (or cannot be read)".into());
    }
    let wide = wide(dir);
    let read = |owner: &mut PSID, dacl: &mut *mut ACL, descriptor: &mut PSECURITY_DESCRIPTOR| {
        // SAFETY: `wide` is NUL-terminated; the out pointers are valid.
        unsafe {
            GetNamedSecurityInfoW(
                wide.as_ptr(),
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                owner,
                ptr::null_mut(),
                dacl,
                ptr::null_mut(),
                descriptor,
            )
        }
    };
    judge(read, WRITE, true).map_err(|why| {
        format!(
            "{why}; make it owner-only: icacls \"{0}\" /inheritance:r /grant:r \
             *S-1-5-18:(OI)(CI)F *S-1-5-32-544:(OI)(CI)F, remove the ACEs of others \
             (icacls \"{0}\" /remove:g *SID) and give it to the Administrators \
             (icacls \"{0}\" /setowner *S-1-5-32-544), see docs/security.md",
            dir.display()
        )
    })
}

pub(super) fn check_file(file: &fs::File, path: &Path, secret: bool) -> Result<(), String> {
    let handle = file.as_raw_handle();
    let read = |owner: &mut PSID, dacl: &mut *mut ACL, descriptor: &mut PSECURITY_DESCRIPTOR| {
        // SAFETY: the handle is open (with READ_CONTROL: opened to read);
        // the out pointers are valid.
        unsafe {
            GetSecurityInfo(
                handle,
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                owner,
                ptr::null_mut(),
                dacl,
                ptr::null_mut(),
                descriptor,
            )
        }
    };
    let rights = if secret { WRITE | READ } else { WRITE };
    judge(read, rights, false).map_err(|why| {
        format!(
            "{why}; it was not made by the plugin: move it away (or make it owner-only: \
             icacls \"{0}\" /inheritance:r /grant:r *S-1-5-18:F *S-1-5-32-544:F and \
             icacls \"{0}\" /setowner *S-1-5-32-544), see docs/security.md",
            path.display()
        )
    })
}

/// Reads a descriptor with `read` (GetSecurityInfo's arguments) and
/// judges it: why it will not do.
fn judge(
    read: impl FnOnce(&mut PSID, &mut *mut ACL, &mut PSECURITY_DESCRIPTOR) -> u32,
    rights: u32,
    folder: bool,
) -> Result<(), String> {
    let trusted = trusted().map_err(|e| format!("this process's user cannot be read: {e}"))?;
    let trusted = trusted.each_ref().map(String::as_str);
    let (mut owner, mut dacl, mut descriptor) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
    let status = read(&mut owner, &mut dacl, &mut descriptor);
    if status != 0 {
        let error = io::Error::from_raw_os_error(status as i32);
        return Err(format!("its owner and DACL cannot be read: {error}"));
    }
    // SAFETY: the call succeeded, so the descriptor it allocated is valid;
    // freed below, once.
    let found = unsafe { fault(descriptor, &trusted, rights, folder) };
    // SAFETY: allocated by the call, freed once.
    unsafe { LocalFree(descriptor) };
    match found {
        Ok(None) => Ok(()),
        Ok(Some(fault)) => Err(fault.to_string()),
        Err(e) => Err(format!("its DACL cannot be read: {e}")),
    }
}

/// Gives `path` the DACL of `sddl` (protected from inheritance when the
/// SDDL says `D:P`).
pub(crate) fn set_dacl(path: &Path, sddl: &str) -> io::Result<()> {
    use windows_sys::Win32::Security::Authorization::SetNamedSecurityInfoW;
    use windows_sys::Win32::Security::PROTECTED_DACL_SECURITY_INFORMATION;
    let attributes = SecurityAttributes::from_sddl(sddl)?;
    let name = wide(path);
    let protected = match sddl.starts_with("D:P") {
        true => PROTECTED_DACL_SECURITY_INFORMATION,
        false => 0,
    };
    // SAFETY: the descriptor made from the SDDL holds the DACL and lives
    // for the calls; `name` is NUL-terminated.
    let status = unsafe {
        let (mut present, mut dacl, mut defaulted) = (0, ptr::null_mut(), 0);
        let descriptor = attributes.descriptor();
        if GetSecurityDescriptorDacl(descriptor, &mut present, &mut dacl, &mut defaulted) == 0 {
            return Err(io::Error::last_os_error());
        }
        SetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION | protected,
            ptr::null_mut(),
            ptr::null_mut(),
            dacl,
            ptr::null_mut(),
        )
    };
    match status {
        0 => Ok(()),
        status => Err(io::Error::from_raw_os_error(status as i32)),
    }
}

/// Gives the existing folder `dir` the owner-only DACL, protected.
pub(super) fn protect_folder(dir: &Path) -> io::Result<()> {
    set_dacl(dir, &owner_only_sddl(&current_user_sid()?))
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain([0]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "S-1-5-21-1-2-3-1001";
    const TRUSTED: [&str; 3] = [SYSTEM, ADMINISTRATORS, ME];

    /// The fault of the descriptor of `sddl`, for a folder.
    fn folder_fault(sddl: &str) -> Option<Fault> {
        let attributes = SecurityAttributes::from_sddl(sddl).unwrap();
        // SAFETY: made from the SDDL, alive for the call.
        unsafe { fault(attributes.descriptor(), &TRUSTED, WRITE, true) }.unwrap()
    }

    fn grant(sid: &str, mask: u32, to_files: bool) -> Option<Fault> {
        Some(Fault::Grant {
            sid: sid.into(),
            mask,
            to_files,
        })
    }

    #[test]
    fn a_folder_with_a_stock_c_drives_inherited_acl_is_refused_for_users() {
        // What a folder made under a stock Windows Server's C:\ inherits.
        let inherited = "O:BAD:AI(A;ID;FA;;;SY)(A;OICIIOID;GA;;;SY)(A;ID;FA;;;BA)\
                         (A;OICIIOID;GA;;;BA)(A;OICIID;0x1200a9;;;BU)(A;CIID;LC;;;BU)\
                         (A;CIID;DC;;;BU)(A;OICIIOID;GA;;;CO)";
        // LC is FILE_ADD_SUBDIRECTORY (4).
        assert_eq!(folder_fault(inherited), grant("S-1-5-32-545", 0x4, false));
    }

    #[test]
    fn a_protected_folder_of_system_administrators_and_the_user_is_accepted() {
        let sddl = format!("O:{ME}{}", owner_only_sddl(ME));
        assert_eq!(folder_fault(&sddl), None);
        assert_eq!(folder_fault(&format!("O:SY{}", owner_only_sddl(ME))), None);
        // Users may read and list: no change.
        let readable = format!("O:BA{}(A;OICI;0x1200a9;;;BU)", owner_only_sddl(ME));
        assert_eq!(folder_fault(&readable), None);
        // CREATOR OWNER stands for the maker of each file, checked itself.
        let creator = format!("O:BA{}(A;OICIIO;GA;;;CO)", owner_only_sddl(ME));
        assert_eq!(folder_fault(&creator), None);
    }

    #[test]
    fn everyone_with_generic_all_is_refused() {
        let sddl = "O:BAD:(A;;FA;;;SY)(A;;GA;;;WD)";
        assert_eq!(folder_fault(sddl), grant("S-1-1-0", 0x1000_0000, false));
    }

    #[test]
    fn a_deny_ace_grants_nothing() {
        let sddl = format!("O:BA{}(D;OICI;FA;;;BU)(D;;GA;;;WD)", owner_only_sddl(ME));
        assert_eq!(folder_fault(&sddl), None);
    }

    #[test]
    fn an_inherit_only_ace_counts_when_the_folders_files_inherit_it() {
        // Files made in the folder (the journal, the key) would be the
        // Users' to change.
        let to_files = format!("O:BA{}(A;OIIO;GW;;;BU)", owner_only_sddl(ME));
        assert_eq!(
            folder_fault(&to_files),
            grant("S-1-5-32-545", 0x4000_0000, true)
        );
        // Subfolders alone: the plugin makes none but owner-only ones.
        let to_folders = format!("O:BA{}(A;CIIO;GA;;;BU)", owner_only_sddl(ME));
        assert_eq!(folder_fault(&to_folders), None);
        // On a file, inheritance means nothing: only effective ACEs count.
        let attributes = SecurityAttributes::from_sddl(&to_files).unwrap();
        // SAFETY: made from the SDDL, alive for the call.
        let on_file = unsafe { fault(attributes.descriptor(), &TRUSTED, WRITE, false) };
        assert_eq!(on_file.unwrap(), None);
    }

    #[test]
    fn an_untrusted_owner_is_refused_whatever_the_dacl() {
        let other = "S-1-5-21-1-2-3-1002";
        let sddl = format!("O:{other}{}", owner_only_sddl(ME));
        assert_eq!(folder_fault(&sddl), Some(Fault::Owner(other.into())));
    }

    #[test]
    fn a_null_dacl_lets_everyone_write() {
        use windows_sys::Win32::Security::{
            InitializeSecurityDescriptor, SetSecurityDescriptorDacl, SetSecurityDescriptorOwner,
            SECURITY_DESCRIPTOR,
        };
        // No DACL at all.
        assert_eq!(folder_fault("O:BA"), Some(Fault::NullDacl));
        // A DACL present and NULL, built by hand (Wine reads
        // D:NO_ACCESS_CONTROL as an empty DACL).
        let administrators = SecurityAttributes::from_sddl("O:BA").unwrap();
        // SAFETY: all-zero is a valid SECURITY_DESCRIPTOR to initialize;
        // the owner SID lives in `administrators`, alive for the calls.
        let found = unsafe {
            let mut owner: PSID = ptr::null_mut();
            let mut defaulted = 0;
            GetSecurityDescriptorOwner(administrators.descriptor(), &mut owner, &mut defaulted);
            let mut descriptor: SECURITY_DESCRIPTOR = std::mem::zeroed();
            let at: PSECURITY_DESCRIPTOR = std::ptr::from_mut(&mut descriptor).cast();
            assert_ne!(InitializeSecurityDescriptor(at, 1), 0);
            assert_ne!(SetSecurityDescriptorOwner(at, owner, 0), 0);
            assert_ne!(SetSecurityDescriptorDacl(at, 1, ptr::null(), 0), 0);
            fault(at, &TRUSTED, WRITE, true).unwrap()
        };
        assert_eq!(found, Some(Fault::NullDacl));
    }

    #[test]
    fn a_secret_is_refused_when_others_may_read_it() {
        let sddl = format!("O:BA{}(A;;FR;;;BU)", owner_only_sddl(ME));
        let attributes = SecurityAttributes::from_sddl(&sddl).unwrap();
        let descriptor = attributes.descriptor();
        // SAFETY: made from the SDDL, alive for the calls.
        let (write, read) = unsafe {
            (
                fault(descriptor, &TRUSTED, WRITE, false).unwrap(),
                fault(descriptor, &TRUSTED, WRITE | READ, false).unwrap(),
            )
        };
        assert_eq!(write, None);
        assert!(
            matches!(read, Some(Fault::Grant { ref sid, .. }) if sid == "S-1-5-32-545"),
            "{read:?}"
        );
    }

    /// Under Wine too: a folder made reads back owner-only; one made with
    /// a permissive DACL is refused, naming the SID at fault.
    #[test]
    fn a_made_folder_reads_back_owner_only_and_a_permissive_one_is_refused() {
        use windows_sys::Win32::Security::{GetSecurityDescriptorControl, SE_DACL_PROTECTED};

        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("a").join("state");
        make_folder(&made).unwrap();
        check_folder(&made).unwrap();
        let (mut control, mut revision) = (0u16, 0u32);
        let path = wide(&made);
        let mut descriptor = ptr::null_mut();
        // SAFETY: `path` is NUL-terminated; the descriptor is freed once.
        unsafe {
            let status = GetNamedSecurityInfoW(
                path.as_ptr(),
                SE_FILE_OBJECT,
                OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                ptr::null_mut(),
                &mut descriptor,
            );
            assert_eq!(status, 0);
            let me = current_user_sid().unwrap();
            let trusted = [SYSTEM, ADMINISTRATORS, me.as_str()];
            // Nothing for anyone else, not even to read.
            let found = fault(descriptor, &trusted, u32::MAX, true).unwrap();
            assert_eq!(found, None);
            assert_ne!(
                GetSecurityDescriptorControl(descriptor, &mut control, &mut revision),
                0
            );
            LocalFree(descriptor);
        }
        // Wine keeps a DACL as mode bits, and reads back what they say:
        // owner-only still, but no longer marked protected.
        if !under_wine() {
            assert_ne!(control & SE_DACL_PROTECTED, 0, "protected: {control:#x}");
        }

        // A folder whose DACL lets Everyone do anything (set once made:
        // Wine masks what a new folder's DACL grants with the umask).
        let open = dir.path().join("open");
        fs::create_dir(&open).unwrap();
        set_dacl(&open, "D:(A;OICI;FA;;;WD)").unwrap();
        let error = check_folder(&open).unwrap_err();
        assert!(error.contains("S-1-1-0 may change it"), "{error}");
        assert!(error.contains("icacls"), "{error}");

        // As kubelet's `DirectoryOrCreate` leaves a plugin's folder: empty,
        // made owner-only when the plugin takes it; one with something in
        // it is refused, and what is in it stays.
        super::super::own_folder(&open).unwrap();
        check_folder(&open).unwrap();
        let full = dir.path().join("full");
        fs::create_dir(&full).unwrap();
        fs::write(full.join("planted"), b"x").unwrap();
        set_dacl(&full, "D:(A;OICI;FA;;;WD)").unwrap();
        let error = super::super::own_folder(&full).unwrap_err();
        assert!(error.contains("S-1-1-0 may change it"), "{error}");
        assert!(full.join("planted").exists());
    }

    /// Whether this runs under Wine, whose ntdll alone has
    /// `wine_get_version`.
    fn under_wine() -> bool {
        #[link(name = "kernel32")]
        extern "system" {
            fn GetModuleHandleA(name: *const u8) -> *mut c_void;
            fn GetProcAddress(module: *mut c_void, name: *const u8) -> *mut c_void;
        }
        // SAFETY: both names are NUL-terminated; ntdll is in every process.
        unsafe {
            let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
            !ntdll.is_null()
                && !GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_null()
        }
    }
}
