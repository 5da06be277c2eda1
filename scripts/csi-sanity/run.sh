#!/usr/bin/env bash
# Runs the CSI community's conformance suite, csi-sanity, against a node
# plugin on the library's node service (feature csi), with the library's
# test controller, on a fake CSI Proxy (csiproxyctl fake). By default the
# plugin is the example (examples/node_plugin); --plugin runs any other.
#
# usage: scripts/csi-sanity/run.sh [--wine] [--release vX.Y.Z]
#            [--kind disk|smb|disk,smb] [--volumes disk|smb]
#            [--restart-every MS [--alternate-release vX.Y.Z]] [--rounds N]
#            [--plugin BINARY [--plugin-arg ARG]...] [--csiproxyctl BINARY]
#            [-- csi-sanity flags]
#
# --kind: the kinds the example plugin serves. --volumes: the kind of the
# volumes csi-sanity makes (default: smb for --kind smb, else disk): for
# smb, a `share` parameter (csi-sanity's test-volume parameters), which
# has the test controller make a folder on the fake's share, and the
# secrets username/password.
#
# --plugin: a driver's own plugin, built with the library's features csi
# and testing (for --controller). It is started as
#   BINARY [ARG...] --endpoint E --socket-dir D|--pipe-prefix P --trust-current-user
#          --controller --state-dir S --node-id csi-sanity-node
# (the flags of csi_proxy_client::csi::NodePlugin::args), and must serve
# the kind --volumes names. Run from the driver's crate (any folder of
# it), everything the run makes goes under that crate's cargo target
# folder: csiproxyctl (built with the features cli,testing from the
# package this script came with, unless --csiproxyctl names one), the
# run's work folder (csi-sanity/) and, under --wine, the Wine prefix
# (wine-prefix/, unless WINEPREFIX is set). docs/testing.md says how to
# find this script in cargo's copy of the package.
#
# On Linux, the SDK talks to the fake proxy over Unix sockets and
# csi-sanity to the plugin over a Unix socket. --wine runs it all as
# Windows programs under Wine instead: csi-sanity.exe, the plugin's and
# csiproxyctl's Windows builds, the SDK on named pipes, and CSI over TCP on
# 127.0.0.1 (Wine has no AF_UNIX sockets). --rounds runs the whole suite N
# times against the same plugin and proxy (with --restart-every, so that
# many restarts land in the middle of calls).
#
# csi-sanity comes from $CSI_SANITY (else, in this repository,
# ../shared/tools/csi-sanity). The paths it uses are Windows paths under
# C:\var\lib\kubelet on the fake host, made, removed and checked through
# csiproxyctl (mkpath, rmpath, checkpath beside this script, and their
# .bat twins for Wine). docs/node-plugin.md says what runs and why each
# skipped spec is skipped.
set -euo pipefail
called_from="$PWD"
sdk="$(cd "$(dirname "$0")/../.." && pwd)"
here="$sdk/scripts/csi-sanity"

release="" kind=disk volumes="" restart=() rounds=1 wine=false plugin="" plugin_args=() csiproxyctl=""
while [ $# -gt 0 ]; do
    case "$1" in
        --plugin) plugin="$2"; shift 2 ;;
        --plugin-arg) plugin_args+=("$2"); shift 2 ;;
        --csiproxyctl) csiproxyctl="$2"; shift 2 ;;
        --release) release="$2"; shift 2 ;;
        --kind) kind="$2"; shift 2 ;;
        --volumes) volumes="$2"; shift 2 ;;
        --restart-every) restart+=(--restart-every "$2"); shift 2 ;;
        --alternate-release) restart+=(--alternate-release "$2"); shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --wine) wine=true; shift ;;
        --) shift; break ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$volumes" ] || volumes="$([ "$kind" = smb ] && echo smb || echo disk)"
case "$volumes" in disk | smb) ;; *) echo "run.sh: --volumes $volumes: disk or smb" >&2; exit 2 ;; esac
release_args=()
[ -z "$release" ] || release_args=(--release "$release")
# Binaries given relative to where the script was called from.
absolute() { case "$1" in /* | "") printf '%s' "$1" ;; *) printf '%s' "$called_from/$1" ;; esac; }
plugin="$(absolute "$plugin")" csiproxyctl="$(absolute "$csiproxyctl")"
# Cargo's target folder: the driver's (the crate it is called from) for a
# plugin of its own, else this package's. CARGO_TARGET_DIR, if set, is
# relative to where the script was called from.
case "${CARGO_TARGET_DIR:-}" in
    /*) cargo_target="$CARGO_TARGET_DIR" ;;
    ?*) cargo_target="$called_from/$CARGO_TARGET_DIR" ;;
    *)
        if [ -n "$plugin" ]; then
            metadata="$(cd "$called_from" && cargo metadata --format-version 1 --no-deps 2>/dev/null)" || {
                echo "run.sh: --plugin: run it from the driver's crate (cargo metadata failed in $called_from)" >&2
                exit 2
            }
            cargo_target="$(sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p' <<<"$metadata")"
        else
            cargo_target="$sdk/target"
        fi
        ;;
esac
if [ -z "$cargo_target" ]; then
    echo "run.sh: no cargo target folder found for $called_from" >&2
    exit 2
fi
[ -n "$plugin" ] || cd "$sdk"
# csiproxyctl from the package this script came with, into that folder.
# (--locked where the package has its lock: cargo's copy is left as it is.)
build_csiproxyctl() {
    local locked=()
    [ ! -e "$sdk/Cargo.lock" ] || locked=(--locked)
    cargo build --quiet "${locked[@]}" --manifest-path "$sdk/Cargo.toml" \
        --target-dir "$cargo_target" --features cli,testing --bin csiproxyctl "$@"
}

mkdir -p "$cargo_target/csi-sanity"
work="$(mktemp -d -p "$cargo_target/csi-sanity")"
# Unix sockets in a short folder of their own: a socket's path has at
# most 107 bytes, which a deep target folder would pass.
sockets="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if $wine; then wineserver -k >/dev/null 2>&1 || true; fi
    rm -rf "$work" "$sockets"
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

# Whether something listens on 127.0.0.1:$1.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Waits until process $1 (the plugin) has bound its endpoint: the socket
# file $2 is there, or port $3 listens. Any plugin binds first, then
# connects to the proxy; csi-sanity's calls wait in the backlog meanwhile.
await_endpoint() {
    local pid="$1" socket="$2" port="$3"
    for _ in $(seq 600); do
        if [ -n "$socket" ] && [ -S "$socket" ]; then return 0; fi
        if [ -n "$port" ] && listening "$port"; then return 0; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    echo "run.sh: the plugin did not serve its endpoint" >&2
    tail -n 50 "$work/plugin.err" >&2
    exit 1
}

trap cleanup EXIT

if $wine; then
    triple=x86_64-pc-windows-gnu
    export CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc
    export WINEPREFIX="${WINEPREFIX:-$cargo_target/wine-prefix}"
    target="$cargo_target/$triple/debug"
    [ -n "$csiproxyctl" ] || build_csiproxyctl --target "$triple"
    [ -n "$plugin" ] || cargo build --quiet --target-dir "$cargo_target" --target "$triple" --example node_plugin
    run=("$sdk/scripts/wine/runner.sh") exe=.exe
    sanity="${CSI_SANITY:-$sdk/../shared/tools/csi-sanity/csi-sanity.exe}"
    # The runner makes the prefix; then one wine server for the run (see
    # scripts/test-windows.sh).
    "${run[@]}" cmd /c exit >/dev/null 2>&1 || true
    wineserver -p || true
    # Pipes of this run's own, served by this user, whom the clients trust.
    pipes="\\\\.\\pipe\\csi-sanity-$$-"
    proxy_args=(--pipe-prefix "$pipes")
    plugin_proxy_args=(--pipe-prefix "$pipes" --trust-current-user)
    tool_args="--pipe-prefix $pipes --trust-owner me --wait 10"
    # Wine has no AF_UNIX: CSI over TCP, on a port nothing listens on.
    port=$((20000 + $$ % 20000))
    while listening "$port"; do port=$((port + 1)); done
    plugin_endpoint="tcp://127.0.0.1:$port" socket=""
    state="$(winepath -w "$work/state")"
else
    target="$cargo_target/debug"
    [ -n "$csiproxyctl" ] || build_csiproxyctl
    [ -n "$plugin" ] || cargo build --quiet --target-dir "$cargo_target" --example node_plugin
    run=() exe=""
    sanity="${CSI_SANITY:-$sdk/../shared/tools/csi-sanity/csi-sanity}"
    proxy_args=(--socket-dir "$sockets/proxy")
    plugin_proxy_args=(--socket-dir "$sockets/proxy")
    tool_args="--socket-dir $sockets/proxy --wait 10"
    socket="$sockets/csi.sock" port=""
    plugin_endpoint="unix://$socket"
    state="$work/state"
fi
csiproxyctl="${csiproxyctl:-$target/csiproxyctl$exe}"
if [ -z "$plugin" ]; then
    plugin="$target/examples/node_plugin$exe"
    plugin_args=(serve --kind "$kind")
fi
[ -e "$sanity" ] || { echo "run.sh: no csi-sanity at $sanity (set CSI_SANITY)" >&2; exit 2; }

# The fake node: spare raw disks for the test controller to claim (each
# volume csi-sanity makes takes one, and a disk once formatted is never
# claimed again), and the SMB share \\fileserver\data (csi / fake-password).
"${run[@]}" "$csiproxyctl" "${proxy_args[@]}" fake "${release_args[@]}" \
    --disks 250 --disk-size $((1 << 30)) "${restart[@]}" >"$work/fake.out" 2>"$work/fake.err" &
pids+=($!)
await "$!" "$work/fake.out" serving

"${run[@]}" "$plugin" "${plugin_args[@]}" --endpoint "$plugin_endpoint" \
    "${plugin_proxy_args[@]}" --controller \
    --state-dir "$state" --node-id csi-sanity-node 2>"$work/plugin.err" &
pids+=($!)
await_endpoint "$!" "$socket" "$port"
sanity_endpoint="${plugin_endpoint#tcp://}"

# The path commands work on the host the plugin talks to, through
# csiproxyctl; they wait for a restarting proxy, as kubelet (which makes
# these folders itself) never has to.
if $wine; then
    export CSIPROXYCTL="$(winepath -w "$csiproxyctl")"
    commands="$(winepath -w "$here")\\" suffix=.bat
else
    export CSIPROXYCTL="$csiproxyctl"
    commands="$here/" suffix=""
fi
export CSIPROXYCTL_ARGS="$tool_args"

volume_args=()
if [ "$volumes" = smb ]; then
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

# One run of csi-sanity; the arguments after `--` are added.
sanity_once() {
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
        --ginkgo.no-color "$@"
}

status=0
for round in $(seq "$rounds"); do
    echo "csi-sanity: ${release:-newest} ${volumes} volumes (plugin: ${plugin_args[*]:-$plugin}) ${restart[*]:-}$($wine && echo ' under Wine') (round $round of $rounds)"
    round_log="$work/sanity-round-$round.log"
    sanity_once "$@" 2>&1 | tee "$round_log" || status=$?
    # Wine now and then fails to start one of csi-sanity's path commands
    # (`fork/exec ...: Internal error`) before the plugin is asked
    # anything: Wine's, not the plugin's. The round is run once more.
    if [ "$status" -ne 0 ] && $wine && grep -q 'fork/exec .*: Internal error' "$round_log"; then
        echo "csi-sanity: Wine could not start a path command (fork/exec: Internal error); round $round once more" >&2
        status=0
        sanity_once "$@" || status=$?
    fi
    [ "$status" -eq 0 ] || break
done
echo "proxy restarts during the run: $(grep -c restarted "$work/fake.err" || true)"
if [ "$status" -ne 0 ]; then
    echo "--- the plugin's log" >&2; tail -n 50 "$work/plugin.err" >&2
    echo "--- the fake proxy's log" >&2; tail -n 20 "$work/fake.err" >&2
fi
exit "$status"
