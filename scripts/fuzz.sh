#!/bin/sh
# Builds the libFuzzer targets with clang (ASan + UBSan) into build-fuzz and
# runs each for a bounded number of executions (default 1000000) or time.
#   scripts/fuzz.sh [RUNS] [MAX_SECONDS_PER_TARGET]
# New crashes land in fuzz-out/<target>/; copy a fixed one into
# fuzz/corpus/<target>/ so ctest replays it from then on.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-1000000}
secs=${2:-600}
command -v clang >/dev/null || { echo "fuzz: needs clang and libclang-rt-14-dev (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
CC=clang cmake -S "$here" -B "$here/build-fuzz" -DCOMET_FUZZ=ON -DCOMET_BUILD_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$here/build-fuzz" -j "$(nproc)" --target fuzz_doc fuzz_hw fuzz_record fuzz_shape >&2
for t in doc hw record shape; do
    mkdir -p "$here/fuzz-out/$t" "$here/fuzz-out/corpus-$t"
    echo "fuzz: $t ($runs runs, at most $secs s)" >&2
    "$here/build-fuzz/fuzz/fuzz_$t" -runs="$runs" -max_total_time="$secs" -max_len=4096 \
        -artifact_prefix="$here/fuzz-out/$t/" "$here/fuzz-out/corpus-$t" "$here/fuzz/corpus/$t" 2>&1 |
        grep -E "^#[0-9]+ *DONE|Done [0-9]+ runs|ERROR|SUMMARY" >&2 || true
done
