//! Windows paths as CSI Proxy accepts them.

use std::fmt;

use crate::error::{Error, Result};

/// The longest path CSI Proxy accepts (Windows' `MAX_PATH`).
pub const MAX_PATH: usize = 260;

/// Characters CSI Proxy rejects anywhere after the drive prefix.
const FORBIDDEN: [char; 6] = ['"', '/', ':', '?', '*', '|'];

/// Characters Windows never allows in a file name, beyond [`FORBIDDEN`] and
/// the control characters.
const NOT_IN_NAMES: [char; 2] = ['<', '>'];

/// The kubelet's pods directory: paths under it are pod paths for the old
/// filesystem versions' `PathContext`.
const KUBELET_PODS_DIR: &str = r"C:\var\lib\kubelet\pods\";

/// An absolute local Windows path, normalized the way CSI drivers do it and
/// checked the way CSI Proxy checks paths, so that a path the proxy would
/// reject is rejected here, before anything is sent.
///
/// Normalization:
/// - `/` becomes `\`;
/// - a path that starts with a single `\` gets the system drive `C:`, so
///   kubelet's `\var\lib\kubelet\...` works.
///
/// Then, as CSI Proxy's filesystem group checks paths, the path is rejected
/// with [`Error::InvalidArgument`] when it
/// - is longer than 260 bytes ([`MAX_PATH`]);
/// - is a UNC or device path (`\\server\share`, `\\?\...`);
/// - does not start with a drive letter, colon and backslash (`C:\`);
/// - contains `..`, or any of `" / : ? * |` after the drive prefix, or a NUL;
///
/// and, because Windows would open something other than what the path
/// reads, when
/// - it contains a control character (`\u{1}`, a line break) or `<`, `>`;
/// - a component ends with a dot or a space (Windows drops them: `x.` is
///   `x`);
/// - a component is a device name (`CON`, `PRN`, `AUX`, `NUL`, `COM0`-`COM9`,
///   `LPT0`-`LPT9`, `CONIN$`, `CONOUT$`), with or without an extension
///   (`NUL.txt` is the null device).
///
/// The proxy additionally requires filesystem paths to lie under the
/// kubelet directory or one of its `--working-dir`s; the client cannot know
/// those, so that check stays with the proxy. Volume and `IsSymlink` paths
/// are not checked by the proxy; the SDK applies the same rules to them, as
/// a path failing them cannot name a mount point a driver should use.
///
/// ```
/// use csi_proxy_client::WindowsPath;
///
/// let p = WindowsPath::new("/var/lib/kubelet/pods/x")?;
/// assert_eq!(p.as_str(), r"C:\var\lib\kubelet\pods\x");
/// assert!(WindowsPath::new(r"C:\var\..\Windows").is_err());
/// assert!(WindowsPath::new(r"\\server\share").is_err());
/// # Ok::<(), csi_proxy_client::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WindowsPath(String);

impl WindowsPath {
    /// Normalizes and checks `path`.
    pub fn new(path: impl AsRef<str>) -> Result<Self> {
        let raw = path.as_ref();
        let mut path = raw.replace('/', "\\");
        if path.starts_with('\\') && !path.starts_with("\\\\") {
            path.insert_str(0, "C:");
        }
        let reject = |why: &str| Err(Error::invalid_argument("path", format!("{raw:?}: {why}")));
        if path.is_empty() {
            return reject("is empty");
        }
        if path.len() > MAX_PATH {
            return reject("is longer than 260 bytes");
        }
        if path.starts_with("\\\\") {
            return reject(r"UNC and device paths (\\...) are not accepted");
        }
        let bytes = path.as_bytes();
        let has_drive = bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && bytes[2] == b'\\';
        if !has_drive {
            return reject(r"must start with a drive letter, such as C:\");
        }
        if path.contains("..") {
            return reject("must not contain '..'");
        }
        if let Some(c) = path[3..]
            .chars()
            .find(|c| FORBIDDEN.contains(c) || NOT_IN_NAMES.contains(c) || (*c as u32) < 0x20)
        {
            return reject(&format!("must not contain {c:?}"));
        }
        for name in path[3..].split('\\').filter(|name| !name.is_empty()) {
            if name.ends_with(['.', ' ']) {
                return reject(&format!(
                    "{name:?} ends with a dot or space, which Windows drops"
                ));
            }
            if is_device_name(name) {
                return reject(&format!("{name:?} is a device name on Windows"));
            }
        }
        Ok(Self(path))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the path lies under the kubelet's pods directory
    /// (`C:\var\lib\kubelet\pods\`, in any case): a pod's volume path, as
    /// opposed to a plugin's staging path. Old wire versions need to know
    /// which (see `FilesystemApi`).
    pub(crate) fn is_under_pods(&self) -> bool {
        self.0
            .get(..KUBELET_PODS_DIR.len())
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(KUBELET_PODS_DIR))
    }
}

/// Whether Windows opens a file `name` as a device: `CON`, `PRN`, `AUX`,
/// `NUL`, `CONIN$`, `CONOUT$`, `COM0`-`COM9` and `LPT0`-`LPT9` (with the
/// superscript digits too), in any case, with or without an extension.
fn is_device_name(name: &str) -> bool {
    let stem = name
        .split('.')
        .next()
        .unwrap_or_default()
        .trim_end_matches(' ');
    let stem = stem.to_ascii_uppercase();
    let numbered = |prefix: &str| {
        stem.strip_prefix(prefix).is_some_and(|n| {
            let mut digits = n.chars();
            matches!(
                (digits.next(), digits.next()),
                (Some('0'..='9' | '\u{b9}' | '\u{b2}' | '\u{b3}'), None)
            )
        })
    };
    matches!(
        stem.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) || numbered("COM")
        || numbered("LPT")
}

impl fmt::Debug for WindowsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for WindowsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl AsRef<str> for WindowsPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl TryFrom<&str> for WindowsPath {
    type Error = Error;

    fn try_from(path: &str) -> Result<Self> {
        Self::new(path)
    }
}

impl TryFrom<String> for WindowsPath {
    type Error = Error;

    fn try_from(path: String) -> Result<Self> {
        Self::new(path)
    }
}

impl std::str::FromStr for WindowsPath {
    type Err = Error;

    fn from_str(path: &str) -> Result<Self> {
        Self::new(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_drivers() {
        let cases = [
            (r"c:\var\lib\kubelet", r"c:\var\lib\kubelet"),
            (
                "/var/lib/kubelet/plugins/x/globalmount",
                r"C:\var\lib\kubelet\plugins\x\globalmount",
            ),
            (
                r"\var\lib\kubelet\pods\uid\volumes",
                r"C:\var\lib\kubelet\pods\uid\volumes",
            ),
            ("D:/data", r"D:\data"),
            (r"C:\", r"C:\"),
        ];
        for (input, normalized) in cases {
            assert_eq!(
                WindowsPath::new(input).unwrap().as_str(),
                normalized,
                "{input}"
            );
        }
    }

    #[test]
    fn rejects_what_the_proxy_rejects() {
        let long = format!(r"C:\{}", "a".repeat(258));
        for bad in [
            "",
            "relative\\path",
            "C:",
            "C:relative",
            r"\\server\share",
            r"\\?\Volume{x}\",
            "//server/share",
            r"C:\a\..\b",
            r"C:\a..b",
            r"C:\a:b",
            r"C:\a?",
            r"C:\a*",
            r"C:\a|b",
            "C:\\a\"b",
            "C:\\a\0b",
            "1:\\a",
            &long,
            "C:\\a\u{1}b",
            "C:\\a\nb",
            r"C:\a<b",
            r"C:\a>b",
            r"C:\dir.\x",
            r"C:\dir \x",
            r"C:\x\.",
            r"C:\x\NUL",
            r"C:\x\nul.txt",
            r"C:\x\Com1\y",
            r"C:\x\LPT9.log",
            "C:\\x\\COM\u{b9}",
            r"C:\x\CON .txt",
            r"C:\x\conout$",
        ] {
            let err = WindowsPath::new(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { what: "path", .. }),
                "{bad:?}"
            );
        }
        assert!(WindowsPath::new(format!(r"C:\{}", "a".repeat(257))).is_ok());
        // Near device names, and dots inside names, are ordinary names.
        for good in [
            r"C:\x\CONSOLE",
            r"C:\x\COM10",
            r"C:\x\nullable",
            r"C:\x\my.NUL",
            r"C:\x\.hidden",
            r"C:\x\a.b\c d",
            r"C:\x\",
        ] {
            assert!(WindowsPath::new(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn knows_pod_paths() {
        assert!(WindowsPath::new(r"C:\var\lib\kubelet\pods\u\v")
            .unwrap()
            .is_under_pods());
        assert!(WindowsPath::new(r"c:\VAR\lib\kubelet\Pods\u\v")
            .unwrap()
            .is_under_pods());
        for elsewhere in [
            r"C:\var\lib\kubelet\plugins\p",
            // A static volume named `pods` under the plugins directory.
            r"C:\var\lib\kubelet\plugins\x\pods\v",
            r"C:\var\lib\kubelet\pods",
            r"C:\var\lib\kubelet\podsx\v",
            r"D:\var\lib\kubelet\pods\u",
        ] {
            let path = WindowsPath::new(elsewhere).unwrap();
            assert!(!path.is_under_pods(), "{elsewhere}");
        }
    }
}
