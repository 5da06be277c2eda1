//! What a Windows test needs to know of where it runs.

use std::ffi::{c_char, c_void, CStr};

#[link(name = "kernel32")]
extern "system" {
    fn GetModuleHandleA(name: *const c_char) -> *mut c_void;
    fn GetProcAddress(module: *mut c_void, name: *const c_char) -> *mut c_void;
}

/// Wine's version, under Wine: its ntdll alone has
/// `wine_get_version`.
pub fn wine_version() -> Option<String> {
    // SAFETY: both names are C strings; ntdll is loaded in
    // every process, and the function, where it exists, takes
    // nothing and returns a static NUL-terminated string.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr());
        if ntdll.is_null() {
            return None;
        }
        let found = GetProcAddress(ntdll, c"wine_get_version".as_ptr());
        if found.is_null() {
            return None;
        }
        let version: extern "C" fn() -> *const c_char = std::mem::transmute(found);
        Some(CStr::from_ptr(version()).to_string_lossy().into_owned())
    }
}

/// Whether this process's token is elevated.
pub fn elevated() -> bool {
    use windows_sys::Win32::Foundation::{CloseHandle, HANDLE};
    use windows_sys::Win32::Security::{
        GetTokenInformation, TokenElevation, TOKEN_ELEVATION, TOKEN_QUERY,
    };
    use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};
    let mut token: HANDLE = std::ptr::null_mut();
    let mut elevation = TOKEN_ELEVATION { TokenIsElevated: 0 };
    let mut needed = 0u32;
    // SAFETY: the token is closed below; the out buffer is a
    // TOKEN_ELEVATION of the size given.
    unsafe {
        assert_ne!(
            OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token),
            0,
            "{}",
            std::io::Error::last_os_error()
        );
        let ok = GetTokenInformation(
            token,
            TokenElevation,
            std::ptr::from_mut(&mut elevation).cast(),
            std::mem::size_of::<TOKEN_ELEVATION>() as u32,
            &mut needed,
        );
        let error = std::io::Error::last_os_error();
        CloseHandle(token);
        assert_ne!(ok, 0, "{error}");
    }
    elevation.TokenIsElevated != 0
}
