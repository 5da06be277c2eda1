#!/usr/bin/env bash
# Runs the crate's tests as Windows binaries under Wine, so that the named
# pipe transport is exercised for real: real pipes, real overlapped I/O.
#
# Installs what it needs (the mingw-w64 linker, Wine, the Rust target) and
# runs `cargo test` for x86_64-pc-windows-gnu through scripts/wine/runner.sh
# (the runner drivers use too: it makes the Wine prefix and the small
# bcryptprimitives.dll that Wine 8 lacks), with the host backend (feature
# host-process), whose tests need a Windows host. Extra arguments go to
# cargo test, e.g. `scripts/test-windows.sh --test it negotiation`; with `run`
# first, to cargo run instead, e.g. `scripts/test-windows.sh run --example
# host_process -- --host`.
set -euo pipefail

cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu

need_apt=()
command -v x86_64-w64-mingw32-gcc >/dev/null || need_apt+=(gcc-mingw-w64-x86-64)
command -v wine >/dev/null || need_apt+=(wine wine64)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "test-windows: installing ${need_apt[*]}"
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
        "${need_apt[@]}" >/dev/null
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

# A Wine prefix of our own, so that the user's ~/.wine is left alone. It
# is made here, before the wine server below that outlives the run: the
# runner makes a missing prefix too, but waits for the server to end
# after it, which that one never would.
export WINEPREFIX="${WINEPREFIX:-$PWD/target/wine-prefix}"
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    mkdir -p "$WINEPREFIX"
    wine wineboot --init >/dev/null 2>&1 || true
    wineserver -w || true
fi

export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$PWD/scripts/wine/runner.sh"
# One wineserver for the whole run. Otherwise each test binary's server
# exits a moment after it, and the next binary can connect to one that is
# exiting ("wine client error: recvmsg: Connection reset by peer").
wineserver -p
trap 'wineserver -k >/dev/null 2>&1 || true' EXIT
if [ "${1:-}" = run ]; then
    shift
    cargo run --target "$target" --features testing,host-process "$@"
else
    cargo test --target "$target" --features testing,host-process "$@"
fi
