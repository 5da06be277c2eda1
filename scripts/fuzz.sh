#!/usr/bin/env bash
# Runs the cargo-fuzz targets in fuzz/ for a bounded time each and prints a
# summary line per target: inputs tried, and crashes found.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60)
#
# cargo-fuzz drives libFuzzer through compiler flags that stable Rust only
# accepts with RUSTC_BOOTSTRAP=1; no nightly toolchain is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1

status=0
for target in paths responses; do
    log="fuzz/last-run-$target.log"
    mkdir -p "fuzz/corpus/$target"
    if cargo fuzz run --sanitizer none "$target" "fuzz/corpus/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 >"$log" 2>&1; then
        crashes=0
    else
        crashes=1
        status=1
    fi
    runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' | tail -n 1)
    echo "fuzz: target=$target seconds=$seconds inputs=${runs:-0} crashes=$crashes"
    if [ "$crashes" -ne 0 ]; then
        tail -n 40 "$log"
    fi
done
exit "$status"
