#!/usr/bin/env bash
# Cargo's runner for x86_64-pc-windows-gnu: runs a Windows test binary (or
# doctest, or example) under Wine, so that a driver's tests talk over real
# named pipes from a Linux machine. Self-contained: copy this one file into
# a driver's repository and point cargo at it (docs/testing.md).
#
#   CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
#   CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER="$PWD/wine-runner.sh" \
#   cargo test --target x86_64-pc-windows-gnu
#
# Needs wine (8 or newer) and the mingw-w64 C compiler (the linker above).
# On first use it makes a Wine prefix of its own ($WINEPREFIX if set, else
# under ~/.cache, so that ~/.wine is left alone) and puts in it a small
# bcryptprimitives.dll: Rust's standard library asks that DLL for random
# bytes (ProcessPrng), which Wine 8 lacks; without it every test binary
# exits with code 53 and no message. Newer Wines are served by it too.
set -euo pipefail

if [ $# -eq 0 ]; then
    echo "usage: $0 PROGRAM.exe [ARGS...] (cargo's runner)" >&2
    exit 2
fi
for tool in wine wineserver x86_64-w64-mingw32-gcc; do
    if ! command -v "$tool" >/dev/null; then
        echo "$0: $tool is missing (Debian and Ubuntu: apt-get install wine wine64 gcc-mingw-w64-x86-64)" >&2
        exit 2
    fi
done

export WINEPREFIX="${WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/csi-proxy-client/wine-prefix}"
# -all also keeps Debian's wine command from printing "it looks like wine32
# is missing" (harmless: the test binaries are 64-bit).
export WINEDEBUG="${WINEDEBUG:--all}"
# Our bcryptprimitives.dll before Wine's own.
export WINEDLLOVERRIDES="bcryptprimitives=n,b${WINEDLLOVERRIDES:+;$WINEDLLOVERRIDES}"

# Doctests run in parallel, each through this runner: one sets up.
mkdir -p "$(dirname "$WINEPREFIX")"
exec 9>"$WINEPREFIX.lock"
flock 9
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    mkdir -p "$WINEPREFIX"
    wine wineboot --init >/dev/null 2>&1 || true
    wineserver -w || true
fi
dll="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$dll" ]; then
    source_file="$(mktemp --suffix .c)"
    trap 'rm -f "$source_file"' EXIT
    # ProcessPrng, answered from BCryptGenRandom, which Wine has.
    cat >"$source_file" <<'C'
#include <windows.h>
#include <bcrypt.h>

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
C
    mkdir -p "$(dirname "$dll")"
    x86_64-w64-mingw32-gcc -O2 -shared -o "$dll.tmp" "$source_file" -lbcrypt
    mv "$dll.tmp" "$dll"
    rm -f "$source_file"
fi
# A wine server that outlives this program for a while: the next test
# binary then finds it running, not exiting ("wine client error: recvmsg").
# (It does nothing when a server is already running.)
wineserver -p 30 >/dev/null 2>&1 || true
# Wine's own services (services.exe, winedevice.exe, ...) start with the
# first program of a session, inherit its standard output and error, and
# stay until `wineserver -k`. Started here by a quiet program, they hold
# /dev/null, not the test's output: `cargo test ... | tee log` ends when
# the tests do. (In a session already up, this only runs cmd.exe.)
wine cmd /c exit </dev/null >/dev/null 2>&1 || true
flock -u 9
exec 9>&-
exec wine "$@"
