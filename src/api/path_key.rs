//! Which texts name the same file or folder on Windows: the key the
//! mounter's records and the fake host compare paths by, and the 8.3
//! aliases that no text rule can resolve.
//!
//! Windows opens one folder under many spellings: another case (NTFS
//! compares names through its upcase table), doubled separators, a
//! trailing separator, and the folder's 8.3 short name. Ownership kept by
//! a path's text would then miss a record made under another spelling,
//! and a volume staged at one spelling could be published from another
//! for a different volume. The first three are folded here; short names
//! depend on the folder's contents, so [`WindowsPath`](super::WindowsPath)
//! refuses them.

/// The key under which Windows resolves `text` to one object: each
/// character case-folded as NTFS's upcase table does (simple, one
/// character to one; characters outside the Basic Multilingual Plane, which
/// the table does not cover, are kept), `/` read as `\`, runs of
/// separators collapsed (a UNC path keeps its leading pair), and trailing
/// separators dropped.
///
/// ```text
/// C:\Var\\Lib\kubelet\  ->  c:\var\lib\kubelet
/// ```
pub(crate) fn same_object_key(text: &str) -> String {
    let (lead, rest) = match text.strip_prefix(r"\\") {
        Some(rest) => (r"\\", rest),
        None => ("", text),
    };
    let mut key = String::with_capacity(text.len());
    key.push_str(lead);
    let mut after_separator = false;
    for c in rest.chars() {
        let separator = c == '\\' || c == '/';
        if separator && after_separator {
            continue;
        }
        after_separator = separator;
        key.push(if separator { '\\' } else { fold(c) });
    }
    while key.len() > lead.len() && key.ends_with('\\') {
        key.pop();
    }
    key
}

/// One representative of `c`'s NTFS case class: its simple upper case,
/// written lower-case where that lower case maps back to it (so that keys
/// read as the paths do), else the upper case itself. Two characters get
/// the same representative exactly when their upper cases are equal.
fn fold(c: char) -> char {
    let upper = simple(c.to_uppercase()).filter(|u| is_bmp(c) && is_bmp(*u));
    let Some(upper) = upper else { return c };
    match simple(upper.to_lowercase()) {
        Some(lower) if simple(lower.to_uppercase()) == Some(upper) => lower,
        _ => upper,
    }
}

/// The one character a case mapping gives, `None` when it gives several
/// (`ß` upper-cases to `SS`: NTFS keeps `ß`).
fn simple(mut mapped: impl Iterator<Item = char>) -> Option<char> {
    match (mapped.next(), mapped.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn is_bmp(c: char) -> bool {
    u32::from(c) <= 0xFFFF
}

/// Whether path component `name` reads as an 8.3 short name Windows may
/// have given a longer name (`PROGRA~1`, `KUBERN~2.IO`): up to six
/// characters, a tilde and a number, in at most eight in all, and at most
/// a three-character extension. Which folder such a name opens depends on
/// what else is in its parent, so no key of its text can say.
pub(crate) fn is_short_name(name: &str) -> bool {
    let (stem, extension) = match name.rsplit_once('.') {
        Some((stem, extension)) => (stem, Some(extension)),
        None => (name, None),
    };
    let Some((base, number)) = stem.rsplit_once('~') else {
        return false;
    };
    let plain = |part: &str| !part.contains(['~', '.', ' ']);
    !base.is_empty()
        && plain(base)
        && !number.is_empty()
        && number.bytes().all(|b| b.is_ascii_digit())
        && stem.chars().count() <= 8
        && extension.is_none_or(|e| (1..=3).contains(&e.chars().count()) && plain(e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_folder_share_a_key() {
        let key = same_object_key(r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount");
        for alias in [
            r"c:\VAR\Lib\kubelet\plugins\pd\pv1\GLOBALMOUNT",
            r"C:\var\\lib\kubelet\plugins\\\pd\pv1\globalmount",
            r"C:\var\lib\kubelet\plugins\pd\pv1\globalmount\",
            r"C:/var/lib/kubelet/plugins/pd/pv1/globalmount//",
        ] {
            assert_eq!(same_object_key(alias), key, "{alias}");
        }
        assert_ne!(
            same_object_key(r"C:\var\lib\pv1"),
            same_object_key(r"C:\var\lib\pv2")
        );
    }

    #[test]
    fn a_unc_path_keeps_its_leading_pair_and_a_drive_root_its_separator_is_dropped() {
        assert_eq!(same_object_key(r"\\Files\Share\"), r"\\files\share");
        assert_eq!(same_object_key(r"\\files\\share"), r"\\files\share");
        assert_eq!(same_object_key(r"C:\"), "c:");
    }

    #[test]
    fn case_is_folded_by_upper_case_as_ntfs_does() {
        // Greek final and medial sigma upper-case alike: one name on NTFS.
        assert_eq!(same_object_key("C:\\ς"), same_object_key("C:\\Σ"));
        assert_eq!(same_object_key("C:\\σ"), same_object_key("C:\\Σ"));
        // The Kelvin sign lower-cases to k, but its upper case is itself:
        // NTFS keeps it apart from K.
        assert_ne!(same_object_key("C:\\\u{212A}"), same_object_key("C:\\k"));
        // ß has no one-character upper case: kept, and apart from SS.
        assert_eq!(same_object_key("C:\\ß"), "c:\\ß");
        assert_ne!(same_object_key("C:\\ß"), same_object_key("C:\\ss"));
        // Outside the Basic Multilingual Plane nothing is folded.
        assert_ne!(
            same_object_key("C:\\\u{10400}"),
            same_object_key("C:\\\u{10428}")
        );
    }

    #[test]
    fn short_names_are_told_from_long_names_with_a_tilde() {
        for short in ["PROGRA~1", "progr~12", "KUBERN~1.IO", "A~1", "GLOBAL~1.TXT"] {
            assert!(is_short_name(short), "{short}");
        }
        for long in [
            "kubernetes.io~csi",
            "globalmount",
            "~1",
            "a~",
            "abcdefg~1",
            "ab~x",
            "PROGRA~1.LONG",
            "progra~12",
            "a b~1",
        ] {
            assert!(!is_short_name(long), "{long}");
        }
    }
}
