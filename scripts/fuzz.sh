#!/bin/sh
# Builds the libFuzzer targets with clang (ASan + UBSan) into build-fuzz and
# runs each for a bounded number of executions and time.
#
#   scripts/fuzz.sh [RUNS] [MAX_SECONDS_PER_TARGET] [TARGET...]
#
# Defaults: 1000000 runs, at most 900 s per target, every target
# (doc hw record results shape shapeset overrides mapping workload llm). Needs clang and
# libclang-rt-14-dev: `scripts/setup.sh fuzz` installs them.
# Each target starts from the committed corpus fuzz/corpus/<target>/ and
# keeps what it discovers in fuzz-out/corpus-<target>/ (git-ignored). A crash
# or property failure lands in fuzz-out/<target>/crash-*; once fixed, copy it
# into fuzz/corpus/<target>/ so ctest (label "fuzz") replays it from then on.
# Prints one line per target: executions, seconds, exec/s, and the outcome;
# exits 1 if any target found a crash.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-1000000}
secs=${2:-900}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
targets=${*:-doc hw record results shape shapeset overrides mapping workload llm}
build=${COMET_FUZZ_BUILD:-$here/build-fuzz}

command -v clang >/dev/null || {
    echo "fuzz: needs clang and libclang-rt-14-dev (scripts/setup.sh fuzz)" >&2
    exit 1
}
if [ ! -f "$build/CMakeCache.txt" ]; then
    CC=clang CXX=clang++ cmake -S "$here" -B "$build" -DCOMET_FUZZ=ON -DCOMET_BUILD_TESTS=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
tlist=""
for t in $targets; do tlist="$tlist fuzz_$t"; done
# shellcheck disable=SC2086
cmake --build "$build" -j "$(nproc)" --target $tlist >&2

status=0
printf '%-10s %10s %8s %8s  %s\n' target execs seconds exec/s outcome
for t in $targets; do
    out="$here/fuzz-out/$t"
    mkdir -p "$out" "$here/fuzz-out/corpus-$t"
    case $t in
    results | hw | doc) maxlen=32768 ;;
    *) maxlen=4096 ;;
    esac
    log="$out/fuzz.log"
    t0=$(date +%s)
    # OpenBLAS threads would only add noise to a single-input loop.
    rc=0
    OPENBLAS_NUM_THREADS=1 COMET_SOURCE_DIR="$here" \
        "$build/fuzz/fuzz_$t" -runs="$runs" -max_total_time="$secs" -max_len="$maxlen" \
        -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/" \
        "$here/fuzz-out/corpus-$t" "$here/fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
    t1=$(date +%s)
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    if [ "$rc" = 0 ]; then
        outcome="ok (no crash)"
    else
        outcome="FAILED rc=$rc: $(grep -m1 -E 'ERROR|property failed|SUMMARY' "$log" || true) (see $log)"
        status=1
    fi
    printf '%-10s %10s %8s %8s  %s\n' "$t" "${execs:-?}" "$((t1 - t0))" "${rate:-?}" "$outcome"
done
exit $status
