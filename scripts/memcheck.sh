#!/bin/sh
# valgrind memcheck over the CLI paths: every subcommand on small inputs and
# the error paths of bad input. A path fails on any memory error or a
# definite leak (valgrind exit 99); a path must also exit as it should.
#
#   scripts/memcheck.sh [BUILD_DIR]      (default build/)
#
# MPI ranks of `bench collectives` are not traced (mpiexec starts them); the
# parent that launches them and parses their records is.
set -u
cd "$(dirname "$0")/.."
B=${1:-build}
case "$B" in /*) ;; *) B="$PWD/$B" ;; esac
C="$B/comet"
F="$PWD/tests/fixtures/report"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "memcheck: valgrind not found (apt-get install valgrind)" >&2
    exit 77
fi
[ -x "$C" ] || { echo "memcheck: $C not built" >&2; exit 2; }
T=$(mktemp -d "${TMPDIR:-/tmp}/comet-memcheck.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
cat >"$T/tiny.yaml" <<'EOF'
threads: [1]
ops:
  - op: gemm_softmax
    variants: [unfused, fused]
    shapes:
      - {M: 33, N: 65, K: 7}
  - op: attention
    variants: [fused]
    shapes:
      - {B: 1, H: 1, Lq: 17, Lk: 40, d: 16, causal: 1}
EOF
printf 'name: x\nkind: cpu\nclock_ghz: -1\n' >"$T/bad-hw.yaml"
head -c 300 "$F/results/kernels-"*.jsonl >"$T/trunc.jsonl"
mkdir -p "$T/rep" && cp -r "$F/results" "$T/rep/" && cp "$F/profile.json" "$T/rep/"

VG="valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
--show-leak-kinds=definite --track-origins=yes"
# OpenBLAS and OpenMP keep thread pools alive to exit: not our leaks
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
pass=0 fail=0
# run WANT_EXIT NAME ARGS...: WANT_EXIT is the status comet must return
run() {
    want=$1 name=$2
    shift 2
    $VG "$C" "$@" >"$T/out" 2>"$T/err"
    rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass=$((pass + 1))
        printf 'ok    %-28s exit %d\n' "$name" "$rc"
    else
        fail=$((fail + 1))
        printf 'FAIL  %-28s exit %d (want %d)\n' "$name" "$rc" "$want"
        sed 's/^/      /' "$T/err" | head -40
    fi
}
run 0 help --help
run 0 probe probe --json
run 0 predict-explain predict --hw edge --op gemm_softmax --shape M=1024,N=1024,K=256 --explain
run 0 predict-attention predict --hw cloud --op attention --shape heads=4,lq=512,lk=512,d=64 --json
run 0 explore explore --hw edge --op gemm_layernorm --shape M=256,N=256,K=64 --pareto "$T/p.csv"
run 0 calibrate-from calibrate --from "$F/results" --foreign-ok --out "$T/prof.json"
run 0 validate validate --profile "$F/profile.json" --results "$F/results" --foreign-ok
run 0 report report --from "$T/rep" --foreign-ok --out "$T/rep"
run 0 bench-kernels bench kernels --shapes "$T/tiny.yaml" --passes 1 --time-cap 0.01 \
    --gate-timeout 0 --out "$T/b"
run 0 bench-memory bench memory --quick --max-bytes 64K --threads 1 --time-cap 0.01 \
    --gate-timeout 0 --out "$T/b"
run 0 bench-export bench export "$T/b/results/"kernels-*.jsonl --csv "$T/b.csv"
run 2 err-missing-hw predict --hw "$T/nope.yaml" --op gemm_softmax --shape M=8,N=8,K=8
run 2 err-bad-hw predict --hw "$T/bad-hw.yaml" --op gemm_softmax --shape M=8,N=8,K=8
run 2 err-negative-shape predict --hw edge --op gemm_softmax --shape M=-1,N=8,K=8
run 2 err-oversized-shape predict --hw edge --op gemm_softmax --shape M=2199023255553,N=8,K=8
run 1 err-nothing-fits predict --hw edge --op gemm_softmax --shape M=99999999999,N=99999999999,K=99999999999
run 2 err-unknown-op predict --hw edge --op gemm_relu --shape M=8,N=8,K=8
run 2 err-truncated-results calibrate --from "$T/trunc.jsonl" --foreign-ok --out "$T/p2.json"
run 2 err-bad-shapes-file bench kernels --shapes "$T/bad-hw.yaml" --out "$T/b2"
echo "memcheck: $pass paths clean, $fail failed"
[ "$fail" -eq 0 ]
