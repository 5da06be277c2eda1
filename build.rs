//! Generates the wire types and tonic stubs from `proto/<group>/<version>/api.proto`.
//!
//! Every upstream group uses the bare version string as its proto package
//! (`package v1;`), so each (group, version) is compiled on its own into
//! `OUT_DIR/<group>/<version>.rs`; compiling them together would merge the
//! disk, filesystem, smb and volume `v1` packages into one module.
//! `protox` parses the files in Rust, so no `protoc` is needed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = Path::new("proto");
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    // Server stubs are only needed by the fake proxies of the `testing` feature.
    let with_servers = env::var_os("CARGO_FEATURE_TESTING").is_some();
    println!("cargo:rerun-if-changed={}", proto_root.display());

    let mut modules = String::new();
    for group in sorted_subdirs(proto_root)? {
        writeln!(modules, "pub mod {group} {{")?;
        for version in sorted_subdirs(&proto_root.join(&group))? {
            let dir = proto_root.join(&group).join(&version);
            let file = dir.join("api.proto");
            println!("cargo:rerun-if-changed={}", file.display());
            let descriptors = protox::compile([&file], [&dir])?;
            let group_out = out_dir.join(&group);
            fs::create_dir_all(&group_out)?;
            tonic_prost_build::configure()
                .build_client(true)
                // No `connect` constructors: they need tonic's own channel,
                // which this crate does not build.
                .build_transport(false)
                .build_server(with_servers)
                .generate_default_stubs(true)
                .out_dir(&group_out)
                .compile_fds(descriptors)?;
            writeln!(
                modules,
                "    #[doc = \"Generated messages and stubs of `{group}` `{version}`.\"]\n    \
                 pub mod {version} {{ include!(concat!(env!(\"OUT_DIR\"), \"/{group}/{version}.rs\")); }}"
            )?;
        }
        writeln!(modules, "}}")?;
    }
    fs::write(out_dir.join("wire_modules.rs"), modules)?;
    Ok(())
}

fn sorted_subdirs(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type()?.is_dir() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    Ok(names)
}
