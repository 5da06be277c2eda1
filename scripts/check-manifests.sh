#!/usr/bin/env bash
# Checks the node plugin's manifests, as an operator edited them, before
# `kubectl apply`:
#
#   scripts/check-manifests.sh deploy/*.yaml
#   node_plugin manifests --kind smb > mine.yaml && scripts/check-manifests.sh mine.yaml
#
# 1. The kit's own checks (`node_plugin check-manifests`), what a schema
#    cannot see: the socket's folder is made, the registration path names
#    the plugin's driver, every pipe the plugin's kinds need from the
#    fleet's oldest CSI Proxy is mounted (and no other), and every
#    container has CPU and memory requests.
# 2. Kubernetes' schemas, offline (kubernetes-validate --strict), at the
#    oldest and the newest Kubernetes release the kit is tested on.
#
# NODE_PLUGIN: the plugin's program (default: the example's debug build,
# built when missing). KUBERNETES_VALIDATE: the validator's program
# (default: kubernetes-validate on PATH, else one installed with pip into
# target/kubernetes-validate). KUBERNETES_VERSIONS: the releases to check
# (default: 1.30.0 1.37.0).
set -euo pipefail
if [ "$#" -eq 0 ]; then
    echo "usage: $0 FILE..." >&2
    exit 2
fi
repo="$(cd "$(dirname "$0")/.." && pwd)"

plugin="${NODE_PLUGIN:-}"
if [ -z "$plugin" ]; then
    target="${CARGO_TARGET_DIR:-$repo/target}"
    plugin="$target/debug/examples/node_plugin"
    if [ ! -x "$plugin" ]; then
        (cd "$repo" && cargo build --quiet --example node_plugin)
    fi
fi
"$plugin" check-manifests "$@"

validate="${KUBERNETES_VALIDATE:-}"
if [ -z "$validate" ]; then
    if command -v kubernetes-validate >/dev/null; then
        validate=kubernetes-validate
    else
        venv="$repo/target/kubernetes-validate"
        [ -x "$venv/bin/kubernetes-validate" ] || {
            python3 -m venv "$venv"
            "$venv/bin/pip" install --quiet kubernetes-validate
        }
        validate="$venv/bin/kubernetes-validate"
    fi
fi
for version in ${KUBERNETES_VERSIONS:-1.30.0 1.37.0}; do
    "$validate" --strict -k "$version" "$@"
done
echo "the manifests pass the kit's checks and Kubernetes' schemas"
