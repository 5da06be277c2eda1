#!/usr/bin/env bash
# Runs the CSI community's conformance suite, csi-sanity, against the
# example node plugin (examples/node_plugin, with its test controller) on a
# fake CSI Proxy (csiproxyctl fake).
#
# usage: scripts/csi-sanity/run.sh [--wine] [--release vX.Y.Z] [--kind disk|smb]
#            [--restart-every MS [--alternate-release vX.Y.Z]] [--rounds N]
#            [-- csi-sanity flags]
#
# On Linux, the SDK talks to the fake proxy over Unix sockets and
# csi-sanity to the plugin over a Unix socket. --wine runs it all as
# Windows programs under Wine instead: csi-sanity.exe, the plugin's and
# csiproxyctl's Windows builds, the SDK on named pipes, and CSI over TCP on
# 127.0.0.1 (Wine has no AF_UNIX sockets). --rounds runs the whole suite N
# times against the same plugin and proxy (with --restart-every, so that
# many restarts land in the middle of calls).
#
# csi-sanity comes from ../shared/tools/csi-sanity (or $CSI_SANITY). The
# paths it uses are Windows paths under C:\var\lib\kubelet on the fake
# host, made, removed and checked through csiproxyctl (mkpath, rmpath,
# checkpath beside this script, and their .bat twins for Wine).
# docs/node-plugin.md says what runs and why each skipped spec is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
here="$PWD/scripts/csi-sanity"

release="" kind=disk restart=() rounds=1 wine=false
while [ $# -gt 0 ]; do
    case "$1" in
        --release) release="$2"; shift 2 ;;
        --kind) kind="$2"; shift 2 ;;
        --restart-every) restart+=(--restart-every "$2"); shift 2 ;;
        --alternate-release) restart+=(--alternate-release "$2"); shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --wine) wine=true; shift ;;
        --) shift; break ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
release_args=()
[ -z "$release" ] || release_args=(--release "$release")

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if $wine; then wineserver -k >/dev/null 2>&1 || true; fi
    rm -rf "$work"
}

# Waits until $2 holds $3, while process $1 lives.
await() {
    local pid="$1" file="$2" text="$3"
    for _ in $(seq 600); do
        grep -q "$text" "$file" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q "$text" "$file" 2>/dev/null || { cat "${file%.*}.err" "$file" >&2 2>/dev/null; exit 1; }
}
trap cleanup EXIT

if $wine; then
    triple=x86_64-pc-windows-gnu
    export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
    export WINEPREFIX="${WINEPREFIX:-$PWD/target/wine-prefix}"
    cargo build --quiet --target "$triple" --features cli,testing --bin csiproxyctl --example node_plugin
    target="$PWD/${CARGO_TARGET_DIR:-target}/$triple/debug"
    run=("$PWD/scripts/wine/runner.sh") exe=.exe
    sanity="${CSI_SANITY:-../shared/tools/csi-sanity/csi-sanity.exe}"
    # The runner makes the prefix; then one wine server for the run (see
    # scripts/test-windows.sh).
    "${run[@]}" cmd /c exit >/dev/null 2>&1 || true
    wineserver -p || true
    # Pipes of this run's own, served by this user, whom the clients trust.
    pipes="\\\\.\\pipe\\csi-sanity-$$-"
    proxy_args=(--pipe-prefix "$pipes")
    plugin_proxy_args=(--pipe-prefix "$pipes" --trust-current-user)
    tool_args="--pipe-prefix $pipes --trust-owner me --wait 10"
    # Port 0: the system picks a free one, which the plugin prints.
    plugin_endpoint="tcp://127.0.0.1:0"
    state="$(winepath -w "$work/state")"
else
    cargo build --quiet --features cli,testing --bin csiproxyctl
    cargo build --quiet --example node_plugin
    target="$PWD/${CARGO_TARGET_DIR:-target}/debug"
    run=() exe=""
    sanity="${CSI_SANITY:-../shared/tools/csi-sanity/csi-sanity}"
    proxy_args=(--socket-dir "$work/proxy")
    plugin_proxy_args=(--socket-dir "$work/proxy")
    tool_args="--socket-dir $work/proxy --wait 10"
    plugin_endpoint="unix://$work/csi.sock"
    state="$work/state"
fi
[ -e "$sanity" ] || { echo "run.sh: no csi-sanity at $sanity (set CSI_SANITY)" >&2; exit 2; }

# The fake node: spare raw disks for the test controller to claim (each
# volume csi-sanity makes takes one, and a disk once formatted is never
# claimed again), and the SMB share \\fileserver\data (csi / fake-password).
"${run[@]}" "$target/csiproxyctl$exe" "${proxy_args[@]}" fake "${release_args[@]}" \
    --disks 250 --disk-size $((1 << 30)) "${restart[@]}" >"$work/fake.out" 2>"$work/fake.err" &
pids+=($!)
await "$!" "$work/fake.out" serving

"${run[@]}" "$target/examples/node_plugin$exe" serve --endpoint "$plugin_endpoint" \
    "${plugin_proxy_args[@]}" --kind "$kind" --controller \
    --state-dir "$state" --node-id csi-sanity-node 2>"$work/plugin.err" &
pids+=($!)
await "$!" "$work/plugin.err" "serving CSI"
# Where it serves: "serving CSI on unix:///path" or "on tcp://127.0.0.1:PORT".
sanity_endpoint="$(sed -n 's|.*serving CSI on \(.*\)|\1|p' "$work/plugin.err" | tr -d '\r' | head -n 1)"
sanity_endpoint="${sanity_endpoint#tcp://}"

# The path commands work on the host the plugin talks to, through
# csiproxyctl; they wait for a restarting proxy, as kubelet (which makes
# these folders itself) never has to.
if $wine; then
    export CSIPROXYCTL="$(winepath -w "$target/csiproxyctl.exe")"
    commands="$(winepath -w "$here")\\" suffix=.bat
else
    export CSIPROXYCTL="$target/csiproxyctl"
    commands="$here/" suffix=""
fi
export CSIPROXYCTL_ARGS="$tool_args"

volume_args=()
if [ "$kind" = smb ]; then
    printf 'share: \\\\fileserver\\data\n' >"$work/parameters.yaml"
    # The node stages the share with the node-stage secrets; the test
    # controller makes and removes each volume's folder on it with the
    # provisioner's and the deleter's (as csi-driver-smb's does).
    for secret in NodeStageVolumeSecret CreateVolumeSecret DeleteVolumeSecret; do
        printf '%s:\n  username: csi\n  password: fake-password\n' "$secret"
    done >"$work/secrets.yaml"
    files=("$work/parameters.yaml" "$work/secrets.yaml")
    if $wine; then files=("$(winepath -w "${files[0]}")" "$(winepath -w "${files[1]}")"); fi
    volume_args=(--csi.testvolumeparameters "${files[0]}" --csi.secrets "${files[1]}")
fi

status=0
for round in $(seq "$rounds"); do
    echo "csi-sanity: ${release:-newest} ${kind} ${restart[*]:-}$($wine && echo ' under Wine') (round $round of $rounds)"
    "${run[@]}" "$sanity" \
        --csi.endpoint "$sanity_endpoint" \
        --csi.mountdir 'C:\var\lib\kubelet\pods\csi-sanity\volumes\mount' \
        --csi.stagingdir 'C:\var\lib\kubelet\plugins\csi-sanity\staging' \
        --csi.createmountpathcmd "${commands}mkpath$suffix" \
        --csi.createstagingpathcmd "${commands}mkpath$suffix" \
        --csi.removemountpathcmd "${commands}rmpath$suffix" \
        --csi.removestagingpathcmd "${commands}rmpath$suffix" \
        --csi.checkpathcmd "${commands}checkpath$suffix" \
        --csi.testvolumesize $((1 << 30)) \
        --csi.testvolumeexpandsize $((1 << 30)) \
        "${volume_args[@]}" \
        --ginkgo.no-color "$@" || status=$?
    [ "$status" -eq 0 ] || break
done
echo "proxy restarts during the run: $(grep -c restarted "$work/fake.err" || true)"
if [ "$status" -ne 0 ]; then
    echo "--- the plugin's log" >&2; tail -n 50 "$work/plugin.err" >&2
    echo "--- the fake proxy's log" >&2; tail -n 20 "$work/fake.err" >&2
fi
exit "$status"
