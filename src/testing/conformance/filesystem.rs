//! The filesystem group's checks.

use super::{is_host_error, violation, FilesystemFixture, Outcome, Steps};
use crate::api::{FilesystemApi, WindowsPath};
use crate::capability::Operation as O;

/// Checks `api` against the filesystem rules inside `fixture.root`, and
/// leaves it empty: `mkdir` makes parents and may repeat; a path exists by
/// `Lstat` (a dangling link exists); a link is a mount point only while it
/// leads somewhere, a directory never is, and a missing path is an error;
/// a link is not made over an existing path; `rmdir` refuses a non-empty
/// directory unless forced, and a missing path unless forced;
/// `rmdir_contents` empties a directory and keeps it.
pub async fn filesystem(api: &dyn FilesystemApi, fixture: &FilesystemFixture) -> Outcome {
    let mut steps = Steps::default();
    let under = |name: &str| {
        WindowsPath::new(format!(r"{}\{name}", fixture.root.as_str()))
            .map_err(|e| violation(O::Mkdir, format!("the fixture's root: {e}")))
    };
    let (dir, nested, link, dangling, missing) = (
        under("dir")?,
        under(r"dir\nested")?,
        under("link")?,
        under("dangling")?,
        under("missing")?,
    );
    // Directories.
    steps
        .answers(
            O::PathExists,
            api.path_exists(&dir),
            false,
            "dir exists before mkdir",
        )
        .await?;
    steps.ok(O::Mkdir, api.mkdir(&nested)).await?;
    steps.ok(O::Mkdir, api.mkdir(&nested)).await?;
    steps
        .answers(
            O::PathExists,
            api.path_exists(&nested),
            true,
            "nested exists after mkdir",
        )
        .await?;
    steps
        .answers(
            O::IsSymlink,
            api.is_symlink(&dir),
            false,
            "dir is a mount point: it is a directory",
        )
        .await?;
    steps
        .fails(
            O::IsSymlink,
            api.is_symlink(&missing),
            is_host_error,
            "a missing path is an error",
        )
        .await?;

    // Links.
    steps
        .ok(O::CreateSymlink, api.create_symlink(&nested, &link))
        .await?;
    steps
        .answers(
            O::PathExists,
            api.path_exists(&link),
            true,
            "link exists after linking",
        )
        .await?;
    steps
        .answers(
            O::IsSymlink,
            api.is_symlink(&link),
            true,
            "link is a mount point: it leads to a directory",
        )
        .await?;
    steps
        .fails(
            O::CreateSymlink,
            api.create_symlink(&nested, &link),
            is_host_error,
            "a link over an existing path is refused",
        )
        .await?;
    steps.ok(O::Rmdir, api.rmdir(&link, false)).await?;
    steps
        .answers(
            O::PathExists,
            api.path_exists(&link),
            false,
            "link exists after rmdir",
        )
        .await?;
    steps
        .answers(
            O::PathExists,
            api.path_exists(&nested),
            true,
            "nested exists after rmdir of a link to it",
        )
        .await?;

    steps
        .ok(O::CreateSymlink, api.create_symlink(&nested, &dangling))
        .await?;
    steps.ok(O::Rmdir, api.rmdir(&nested, false)).await?;
    steps
        .answers(
            O::PathExists,
            api.path_exists(&dangling),
            true,
            "dangling exists leads nowhere but is there",
        )
        .await?;
    steps
        .answers(
            O::IsSymlink,
            api.is_symlink(&dangling),
            false,
            "dangling is a mount point: it leads nowhere",
        )
        .await?;
    steps.ok(O::Rmdir, api.rmdir(&dangling, false)).await?;

    // Removing.
    steps.ok(O::Rmdir, api.rmdir(&missing, true)).await?;
    steps
        .fails(
            O::Rmdir,
            api.rmdir(&missing, false),
            is_host_error,
            "an unforced rmdir of a missing path fails",
        )
        .await?;
    steps.ok(O::Mkdir, api.mkdir(&nested)).await?;
    steps
        .fails(
            O::Rmdir,
            api.rmdir(&dir, false),
            is_host_error,
            "an unforced rmdir of a non-empty directory fails",
        )
        .await?;
    if steps
        .ok(O::RmdirContents, api.rmdir_contents(&dir))
        .await?
        .is_some()
    {
        steps
            .answers(
                O::PathExists,
                api.path_exists(&nested),
                false,
                "nested exists after rmdir_contents of its parent",
            )
            .await?;
        steps
            .answers(
                O::PathExists,
                api.path_exists(&dir),
                true,
                "dir exists after rmdir_contents",
            )
            .await?;
    }
    steps.ok(O::Rmdir, api.rmdir(&dir, true)).await?;
    steps
        .answers(
            O::PathExists,
            api.path_exists(&dir),
            false,
            "dir exists after a forced rmdir",
        )
        .await?;
    steps.finish()
}
