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
///   (`NUL.txt` is the null device);
/// - a component reads as an 8.3 short name (`PROGRA~1`, `GLOBAL~1.TXT`):
///   which folder it opens depends on the other names beside it, so two
///   paths could name one folder unseen (`kubernetes.io~csi` is a long
///   name, and passes).
///
/// The proxy additionally requires filesystem paths to lie under the
/// kubelet directory or one of its `--working-dir`s; the client cannot know
/// those, so that check stays with the proxy. Volume and `IsSymlink` paths
/// are not checked by the proxy; the SDK applies the same rules to them, as
/// a path failing them cannot name a mount point a driver should use.
///
/// ```
/// use csi_proxy_client::api::WindowsPath;
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
        let reject = |why: &str| {
            Err(Error::invalid_argument(
                "path",
                format!("{}: {why}", quoted(raw)),
            ))
        };
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
            if super::path_key::is_short_name(name) {
                return reject(&format!(
                    "{name:?} reads as an 8.3 short name, which may open another folder \
                     than its text says; give the long name"
                ));
            }
        }
        Ok(Self(path))
    }

    /// The normalized path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The folder that holds this path: `C:\a` for `C:\a\b` (and for
    /// `C:\a\b\`), `C:\` for `C:\a`; `None` for a drive root. A link's
    /// parent is the folder to make before the link.
    ///
    /// ```
    /// use csi_proxy_client::api::WindowsPath;
    ///
    /// let target = WindowsPath::new(r"\var\lib\kubelet\pods\p1\volumes\v\mount")?;
    /// assert_eq!(target.parent().unwrap().as_str(), r"C:\var\lib\kubelet\pods\p1\volumes\v");
    /// assert_eq!(WindowsPath::new(r"C:\var")?.parent().unwrap().as_str(), r"C:\");
    /// assert!(WindowsPath::new(r"C:\")?.parent().is_none());
    /// # Ok::<(), csi_proxy_client::Error>(())
    /// ```
    pub fn parent(&self) -> Option<WindowsPath> {
        let (folder, _) = self.split_last()?;
        // A prefix of a valid path is valid: no check to repeat.
        Some(Self(folder.to_owned()))
    }

    /// The last component: `mount` for `C:\pods\mount`; `None` for a
    /// drive root.
    pub fn file_name(&self) -> Option<&str> {
        self.split_last().map(|(_, name)| name)
    }

    /// This path with `relative` under it (one or more components,
    /// `\` or `/` between them), checked as [`WindowsPath::new`] checks a
    /// path.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] when `relative` is empty or absolute
    /// (starts with a separator or a drive), or when the joined path is
    /// not one `new` accepts (`..`, too long, a device name, ...).
    ///
    /// ```
    /// use csi_proxy_client::api::WindowsPath;
    ///
    /// let plugin = WindowsPath::new(r"C:\var\lib\kubelet\plugins\example")?;
    /// let staging = plugin.join("pv/pvc-1/globalmount")?;
    /// assert_eq!(staging.as_str(), r"C:\var\lib\kubelet\plugins\example\pv\pvc-1\globalmount");
    /// assert!(plugin.join(r"..\..\Windows").is_err());
    /// assert!(plugin.join(r"C:\Windows").is_err());
    /// # Ok::<(), csi_proxy_client::Error>(())
    /// ```
    pub fn join(&self, relative: impl AsRef<str>) -> Result<WindowsPath> {
        let relative = relative.as_ref();
        let rejected = |why: &str| {
            Err(Error::invalid_argument(
                "path",
                format!("{} under {}: {why}", quoted(relative), self.0),
            ))
        };
        if relative.is_empty() {
            return rejected("is empty");
        }
        if relative.starts_with(['\\', '/']) || relative.get(1..2) == Some(":") {
            return rejected("is not relative");
        }
        Self::new(format!("{}\\{relative}", self.0.trim_end_matches('\\')))
    }

    /// The folder and the last component, without the separators between
    /// them; `None` for a drive root.
    fn split_last(&self) -> Option<(&str, &str)> {
        let trimmed = self.0.trim_end_matches('\\');
        let at = trimmed.rfind('\\')?;
        let folder = trimmed[..at].trim_end_matches('\\');
        // A drive's root keeps its backslash: `C:\`, as `new` requires.
        let folder = if folder.len() == 2 {
            &trimmed[..3]
        } else {
            folder
        };
        Some((folder, &trimmed[at + 1..]))
    }

    /// The root of `share`'s share with its trailing separator,
    /// `\\server\share\` (lower-cased): the one UNC path a `WindowsPath`
    /// holds, made only here, never by [`new`](Self::new), which refuses
    /// UNC paths. The mounter asks `IsSymlink` of it once, before it first
    /// maps the share, to learn whether the share already answers on the
    /// node (see `FilesystemApi::is_symlink`). CSI Proxy checks no
    /// `IsSymlink` path on any release, so it takes it there; its other
    /// filesystem calls refuse it, and the SDK sends it in no other call.
    pub(crate) fn share_root_of(share: &super::SmbRemotePath) -> Option<WindowsPath> {
        let root = super::smb_types::share_root(share.as_str())?;
        Some(Self(format!("{root}\\")))
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

/// `text` in quotes for an error message, with control characters escaped
/// but backslashes as Windows writes them (`{:?}` would double them).
pub(crate) fn quoted(text: &str) -> String {
    let mut shown = String::with_capacity(text.len() + 2);
    shown.push('"');
    for c in text.chars() {
        match c {
            '"' => shown.push_str("\\\""),
            c if c.is_control() => shown.extend(c.escape_default()),
            c => shown.push(c),
        }
    }
    shown.push('"');
    shown
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

    #[test]
    fn parents_and_names() {
        let parent = |p: &str| WindowsPath::new(p).unwrap().parent().map(|p| p.0);
        assert_eq!(parent(r"C:\a\b").as_deref(), Some(r"C:\a"));
        assert_eq!(parent(r"C:\a\b\").as_deref(), Some(r"C:\a"));
        assert_eq!(parent(r"C:\a\\b").as_deref(), Some(r"C:\a"));
        assert_eq!(parent(r"C:\a").as_deref(), Some(r"C:\"));
        assert_eq!(parent(r"C:\\a").as_deref(), Some(r"C:\"));
        assert_eq!(parent(r"C:\"), None);
        assert_eq!(parent(r"C:\\"), None);
        let name = |p: &str| WindowsPath::new(p).unwrap().file_name().map(str::to_owned);
        assert_eq!(name(r"C:\a\mount\").as_deref(), Some("mount"));
        assert_eq!(name(r"C:\"), None);
    }

    #[test]
    fn joins_relative_parts_only() {
        let root = WindowsPath::new(r"C:\var\lib\kubelet\").unwrap();
        assert_eq!(
            root.join(r"pods\p/volumes").unwrap().as_str(),
            r"C:\var\lib\kubelet\pods\p\volumes"
        );
        for bad in [
            "",
            r"\abs",
            "/abs",
            r"D:\x",
            "D:x",
            r"a\..\..\x",
            "a\nb",
            "CON",
            "x.",
        ] {
            let error = root.join(bad).unwrap_err();
            assert!(
                matches!(error, Error::InvalidArgument { what: "path", .. }),
                "{bad:?}: {error}"
            );
        }
        let long = "x".repeat(MAX_PATH);
        assert!(root.join(long).is_err());
    }

    #[test]
    fn rejections_show_the_path_as_written() {
        let error = WindowsPath::new(r"C:\var\..\Windows")
            .unwrap_err()
            .to_string();
        assert!(error.contains(r#""C:\var\..\Windows""#), "{error}");
        let error = WindowsPath::new("C:\\x\ny").unwrap_err().to_string();
        assert!(
            error.contains(r#""C:\x\ny""#),
            "control characters escaped: {error}"
        );
    }
}
