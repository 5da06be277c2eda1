//! Builds `tests/shipped-client` (a driver's build of the crate: default
//! features, a workspace of its own) with a nested `cargo build`, for the
//! shipped-build test and the benchmark's memory figure.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds the shipped client, in release mode or not; returns its
/// executable. Its target directory is its own: the outer cargo holds the
/// lock on the main one while tests run.
pub fn build_shipped_client(release: bool) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("shipped-client");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "--locked", "--manifest-path"]);
    command.arg(root.join("tests/shipped-client/Cargo.toml"));
    command.arg("--target-dir").arg(&target);
    if release {
        command.arg("--release");
    }
    let manifest = root.join("tests/shipped-client/Cargo.toml");
    assert!(
        manifest.exists(),
        "{} is missing: the shipped-build test runs from the repository, \
         not from the published package (which leaves nested crates out)",
        manifest.display()
    );
    let status = command.status().expect("run cargo");
    assert!(
        status.success(),
        "building tests/shipped-client failed; after a dependency change, \
         refresh its Cargo.lock with `cargo update --workspace` there"
    );
    target
        .join(if release { "release" } else { "debug" })
        .join("shipped-client")
}
