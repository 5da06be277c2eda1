#!/usr/bin/env bash
# Runs the benchmark (examples/bench.rs) with every part measured: builds a
# driver's build of the crate (tests/shipped-client: default features, a
# workspace of its own) in release mode first, for the memory figure.
#
#   scripts/bench.sh [--profile ...]   (arguments go to the benchmark)
set -euo pipefail
cd "$(dirname "$0")/.."
target="${CARGO_TARGET_DIR:-target}/shipped-client"
cargo build --quiet --locked --release \
    --manifest-path tests/shipped-client/Cargo.toml --target-dir "$target"
if [ "$#" -gt 0 ]; then
    exec cargo run --release --example bench -- "$@"
fi
exec cargo run --release --example bench -- --shipped-client "$target/release/shipped-client"
