//! Windows paths as CSI Proxy accepts them.

use std::fmt;

use crate::error::{Error, Result};

/// The longest path CSI Proxy accepts (Windows' `MAX_PATH`).
pub const MAX_PATH: usize = 260;

/// Characters CSI Proxy rejects anywhere after the drive prefix.
const FORBIDDEN: [char; 6] = ['"', '/', ':', '?', '*', '|'];

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
/// - contains `..`, or any of `" / : ? * |` after the drive prefix, or a NUL.
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
            .find(|c| FORBIDDEN.contains(c) || *c == '\0')
        {
            return reject(&format!("must not contain {c:?}"));
        }
        Ok(Self(path))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether a path component is `pods`: a pod's volume path under the
    /// kubelet directory, as opposed to a plugin's staging path. Old wire
    /// versions need to know which (see `FilesystemApi`).
    pub(crate) fn is_under_pods(&self) -> bool {
        self.0.split('\\').any(|c| c.eq_ignore_ascii_case("pods"))
    }
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
        ] {
            let err = WindowsPath::new(bad).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { what: "path", .. }),
                "{bad:?}"
            );
        }
        assert!(WindowsPath::new(format!(r"C:\{}", "a".repeat(257))).is_ok());
    }

    #[test]
    fn knows_pod_paths() {
        assert!(WindowsPath::new(r"C:\var\lib\kubelet\pods\u\v")
            .unwrap()
            .is_under_pods());
        assert!(!WindowsPath::new(r"C:\var\lib\kubelet\plugins\p")
            .unwrap()
            .is_under_pods());
    }
}
