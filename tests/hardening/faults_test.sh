#!/bin/sh
# Fault injection on real processes (ctest "faults"):
#  1. kill -9 and SIGINT of `comet calibrate` (which runs benches) at several
#     points: no child outlives it, the previous profile and the results stay
#     intact and readable;
#  2. the same for `comet run`;
#  3. concurrent comets on one output folder: the second refuses with one
#     line naming the holder; after a kill -9 the next one says the earlier
#     one ended without finishing;
#  4. a read-only output folder (a read-only bind mount in a private mount
#     namespace, as root; skipped otherwise): a one-line error, exit 1.
# (Full disk: test_fulldisk; a rank that dies or hangs: test_coll.)
#   faults_test.sh COMET SOURCE_DIR
set -u
comet=$1
src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/comet-faults.XXXXXX") || exit 1
cleanup() {
    pkill -9 -f "$work" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
# failures are counted in a file: checks also run in subshells
fail() {
    echo "FAIL: $*" >&2
    echo x >>"$work/failures"
}
# no comet working in $1 within 120 s (children die with their parent; the
# bound only ends a hang: a loaded machine reaps slowly)
no_orphans() {
    i=0
    while pgrep -f "out $1" >/dev/null 2>&1; do
        i=$((i + 1))
        if [ $i -gt 1200 ]; then
            fail "$2: a child outlived its comet: $(pgrep -fa "out $1" | head -n 2 | tr '\n' ' ')"
            pkill -9 -f "out $1"
            return
        fi
        sleep 0.1
    done
}
profile_ok() { # the profile loads and predicts
    "$comet" predict --hw "$1" --op gemm_softmax --shape M=64,N=64,K=64 >/dev/null 2>"$work/p.err" ||
        fail "$2: profile unreadable: $(head -n 1 "$work/p.err")"
}
results_ok() { # every results file still loads (a torn last line is allowed)
    for f in "$1"/results/*.jsonl; do
        [ -f "$f" ] || continue
        "$comet" bench export "$f" --csv "$work/x.csv" -q 2>"$work/x.err" ||
            fail "$2: $f unreadable: $(head -n 1 "$work/x.err")"
    done
}

# interrupt DIR WHAT "DELAYS" ARGS...: runs comet ARGS, sends SIGKILL and
# SIGINT after each delay, checks no orphan is left and the profile and the
# results stay readable; prints the number of interruptions
interrupt() {
    dir=$1 what=$2 delays=$3
    shift 3
    k=0
    for delay in $delays; do
        for sig in KILL INT; do
            "$comet" "$@" >/dev/null 2>&1 &
            pid=$!
            sleep "$delay"
            kill -"$sig" "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            no_orphans "$dir" "$what, SIG$sig at $delay s" >&2
            profile_ok "$dir/profile.json" "$what, SIG$sig at $delay s" >&2
            results_ok "$dir" "$what, SIG$sig at $delay s" >&2
            k=$((k + 1))
        done
    done
    echo "$k"
}

D="$work/cal"
cp -r "$src/tests/fixtures/report" "$D" || exit 1
"$comet" calibrate --from "$D/results" --foreign-ok --out "$D/profile.json" -q ||
    { echo "could not make the starting profile"; exit 1; }
n=$(interrupt "$D" "calibrate" "0.3 1.0 2.5" calibrate --quick --out "$D/profile.json" -q)
echo "calibrate: $n interruptions (SIGKILL and SIGINT at 0.3-2.5 s): no orphan, profile and results intact"

R="$work/run"
cp -r "$src/tests/fixtures/report" "$R" || exit 1
"$comet" calibrate --from "$R/results" --foreign-ok --out "$R/profile.json" -q || exit 1
n=$(interrupt "$R" "run" "0.5 2.0" run --quick --out "$R" -q)
echo "run: $n interruptions: no orphan, profile and results intact"

C="$work/conc"
"$comet" bench memory --quick --out "$C" -q >/dev/null 2>&1 &
first=$!
i=0
while [ ! -s "$C/.comet.lock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
if "$comet" bench memory --quick --out "$C" -q >/dev/null 2>"$work/c.err"; then
    fail "a second comet ran in a folder in use"
elif ! grep -q "in use by another comet (pid $first" "$work/c.err" || [ "$(wc -l <"$work/c.err")" -ne 1 ]; then
    fail "the refusal does not name the holder in one line: $(cat "$work/c.err")"
fi
if "$comet" run --quick --out "$C" -q >/dev/null 2>"$work/c2.err"; then
    fail "comet run ran in a folder in use"
fi
kill -9 "$first"
wait "$first" 2>/dev/null
no_orphans "$C" "bench after SIGKILL"
"$comet" bench memory --quick --out "$C" -q >/dev/null 2>"$work/c3.err" &
third=$!
sleep 1
kill -INT "$third" 2>/dev/null
wait "$third" 2>/dev/null
grep -q "earlier comet (pid $first) ended" "$work/c3.err" ||
    fail "the next comet does not notice the killed one: $(head -n 2 "$work/c3.err")"
echo "concurrent: the second comet refused naming pid $first; the next one noticed it was killed"

if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
    RO="$work/ro"
    mkdir -p "$RO"
    if unshare -m sh -c "mount --bind '$RO' '$RO' && mount -o remount,bind,ro '$RO' &&
        '$comet' bench memory --quick --out '$RO/out' -q" >/dev/null 2>"$work/ro.err"; then
        fail "a read-only output folder was accepted"
    elif [ "$(wc -l <"$work/ro.err")" -ne 1 ] || ! grep -q "^comet: " "$work/ro.err"; then
        fail "read-only folder: not a one-line error: $(cat "$work/ro.err")"
    else
        echo "read-only folder: $(cat "$work/ro.err")"
    fi
else
    echo "read-only folder: skipped (needs root and unshare)"
fi
fails=$(cat "$work/failures" 2>/dev/null | wc -l)
[ "$fails" -eq 0 ] || { echo "faults: $fails failure(s)"; exit 1; }
echo "faults: all passed"
