#!/usr/bin/env bash
# Runs the CSI community's conformance suite, csi-sanity, against the
# example node plugin (examples/node_plugin, with its test controller) on a
# fake CSI Proxy (csiproxyctl fake) over Unix sockets.
#
# usage: scripts/csi-sanity/run.sh [--release vX.Y.Z] [--kind disk|smb]
#            [--restart-every MS [--alternate-release vX.Y.Z]] [--rounds N]
#            [-- csi-sanity flags]
#
# --rounds runs the whole suite N times against the same plugin and proxy
# (with --restart-every, so that many restarts land in the middle of calls).
#
# csi-sanity comes from ../shared/tools/csi-sanity (or $CSI_SANITY). The
# paths it uses are Windows paths under C:\var\lib\kubelet on the fake
# host, made, removed and checked through csiproxyctl (mkpath, rmpath,
# checkpath beside this script). docs/node-plugin.md says what runs and
# why each skipped spec is skipped.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=scripts/csi-sanity

release=LATEST kind=disk restart=() rounds=1
while [ $# -gt 0 ]; do
    case "$1" in
        --release) release="$2"; shift 2 ;;
        --kind) kind="$2"; shift 2 ;;
        --restart-every) restart+=(--restart-every "$2"); shift 2 ;;
        --alternate-release) restart+=(--alternate-release "$2"); shift 2 ;;
        --rounds) rounds="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ "$release" = LATEST ] && release_args=() || release_args=(--release "$release")

sanity="${CSI_SANITY:-../shared/tools/csi-sanity/csi-sanity}"
[ -x "$sanity" ] || { echo "run.sh: no csi-sanity at $sanity (set CSI_SANITY)" >&2; exit 2; }

cargo build --quiet --features cli,testing --bin csiproxyctl
cargo build --quiet --example node_plugin
target="${CARGO_TARGET_DIR:-target}/debug"

work="$(mktemp -d)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The fake node: spare raw disks for the test controller to claim (each
# volume csi-sanity makes takes one, and a disk once formatted is never
# claimed again), and the SMB share \\fileserver\data (csi / fake-password).
"$target/csiproxyctl" --socket-dir "$work/proxy" fake "${release_args[@]}" \
    --disks 250 --disk-size $((1 << 30)) "${restart[@]}" >"$work/fake.out" 2>"$work/fake.err" &
pids+=($!)
for _ in $(seq 100); do grep -q serving "$work/fake.out" 2>/dev/null && break; sleep 0.1; done
grep -q serving "$work/fake.out" || { cat "$work/fake.err" >&2; exit 1; }

"$target/examples/node_plugin" serve --endpoint "unix://$work/csi.sock" \
    --socket-dir "$work/proxy" --kind "$kind" --controller \
    --state-dir "$work/state" --node-id csi-sanity-node 2>"$work/plugin.err" &
pids+=($!)
for _ in $(seq 100); do [ -S "$work/csi.sock" ] && break; sleep 0.1; done
[ -S "$work/csi.sock" ] || { cat "$work/plugin.err" >&2; exit 1; }

# The path commands wait for a restarting proxy, as kubelet (which makes
# these folders itself) never has to.
export CSIPROXYCTL="$PWD/$target/csiproxyctl" CSIPROXYCTL_ARGS="--socket-dir $work/proxy --wait 10"
volume_args=()
if [ "$kind" = smb ]; then
    printf 'share: \\\\fileserver\\data\n' >"$work/parameters.yaml"
    printf 'NodeStageVolumeSecret:\n  username: csi\n  password: fake-password\n' >"$work/secrets.yaml"
    volume_args=(--csi.testvolumeparameters "$work/parameters.yaml" --csi.secrets "$work/secrets.yaml")
fi

status=0
for round in $(seq "$rounds"); do
echo "csi-sanity: ${release} ${kind} ${restart[*]:-} (round $round of $rounds)"
"$sanity" \
    --csi.endpoint "unix://$work/csi.sock" \
    --csi.mountdir 'C:\var\lib\kubelet\pods\csi-sanity\volumes\mount' \
    --csi.stagingdir 'C:\var\lib\kubelet\plugins\csi-sanity\staging' \
    --csi.createmountpathcmd "$PWD/$here/mkpath" \
    --csi.createstagingpathcmd "$PWD/$here/mkpath" \
    --csi.removemountpathcmd "$PWD/$here/rmpath" \
    --csi.removestagingpathcmd "$PWD/$here/rmpath" \
    --csi.checkpathcmd "$PWD/$here/checkpath" \
    --csi.testvolumesize $((1 << 30)) \
    --csi.testvolumeexpandsize $((1 << 30)) \
    "${volume_args[@]}" \
    --ginkgo.no-color "$@" || status=$?
[ "$status" -eq 0 ] || break
done
grep -c restarted "$work/fake.err" | sed 's/^/proxy restarts during the run: /' || true
if [ "$status" -ne 0 ]; then
    echo "--- the plugin's log" >&2; tail -n 50 "$work/plugin.err" >&2
    echo "--- the fake proxy's log" >&2; tail -n 20 "$work/fake.err" >&2
fi
exit "$status"
