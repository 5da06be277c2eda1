//! Where a link leads, as a path: the path arithmetic of the searches
//! for the volume mounted at, or closest to, a path.

/// Where a link leads, for the closest volume's search.
#[derive(Debug, PartialEq)]
pub(super) enum Followed {
    /// Straight to a volume (`\\?\Volume{guid}\`): the answer.
    Volume(String),
    /// To a path, absolute.
    Path(String),
}

/// Where the link whose folder is `parent` leads when its target is
/// `target`: a volume, or a path made absolute (a relative target is
/// taken from the link's folder; `\\?\C:\...` is `C:\...`).
pub(super) fn link_target(target: &str, parent: Option<&str>) -> Followed {
    if target.starts_with(r"\\?\Volume{") {
        return Followed::Volume(format!("{}\\", target.trim_end_matches('\\')));
    }
    let target = target.strip_prefix(r"\\?\").unwrap_or(target);
    let absolute = target.get(1..3) == Some(":\\") || target.starts_with(r"\\");
    match parent {
        Some(parent) if !absolute => Followed::Path(joined(parent, target)),
        _ => Followed::Path(target.to_owned()),
    }
}

/// `relative` taken from the folder `base`, with its `.` and `..` resolved
/// (never above the drive's root).
fn joined(base: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = base.trim_end_matches('\\').split('\\').collect();
    for part in relative.split('\\') {
        match part {
            "" | "." => {}
            ".." if parts.len() > 1 => drop(parts.pop()),
            ".." => {}
            part => parts.push(part),
        }
    }
    let path = parts.join("\\");
    // A drive's root keeps its `\`.
    if parts.len() == 1 {
        format!("{path}\\")
    } else {
        path
    }
}

/// The folder that holds `path`; `None` at a drive's root (`C:\`).
pub(super) fn parent_of(path: &str) -> Option<&str> {
    let trimmed = path.trim_end_matches('\\');
    let (parent, _) = trimmed.rsplit_once('\\')?;
    // `C:` alone is the root, written `C:\`.
    Some(if parent.ends_with(':') {
        &path[..parent.len() + 1]
    } else {
        parent
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_leads_to_a_volume_or_an_absolute_path() {
        let path = |p: &str| Followed::Path(p.to_owned());
        let volume = r"\\?\Volume{0a1b}\";
        assert_eq!(
            link_target(volume, Some(r"C:\x")),
            Followed::Volume(volume.to_owned())
        );
        assert_eq!(
            link_target(r"\\?\Volume{0a1b}", None),
            Followed::Volume(volume.to_owned())
        );
        assert_eq!(link_target(r"\\?\D:\data", Some(r"C:\x")), path(r"D:\data"));
        assert_eq!(link_target(r"D:\data", Some(r"C:\x")), path(r"D:\data"));
        assert_eq!(link_target(r"..\data", Some(r"C:\x\")), path(r"C:\data"));
        assert_eq!(link_target(r"..\..\..", Some(r"C:\x")), path(r"C:\"));
        assert_eq!(link_target(r"sub", Some(r"C:\x")), path(r"C:\x\sub"));
    }

    #[test]
    fn parents_end_at_the_drive_root() {
        assert_eq!(parent_of(r"C:\var\lib\kubelet"), Some(r"C:\var\lib"));
        assert_eq!(parent_of(r"C:\var\"), Some(r"C:\"));
        assert_eq!(parent_of(r"C:\var"), Some(r"C:\"));
        assert_eq!(parent_of(r"C:\"), None);
    }
}
