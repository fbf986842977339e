#!/bin/sh
# comet set-up: installs missing Debian packages (as root; otherwise prints the
# apt-get command), configures and builds into build/. Idempotent and quick
# when everything is present.
#
#   scripts/setup.sh            set up only
#   scripts/setup.sh run [ARGS] set up, then the main job: build/comet run --quick ARGS
#   scripts/setup.sh test       set up, then the test suite (ctest -LE long: unit,
#                               property, fuzz replays, one fast end-to-end)
#   scripts/setup.sh test-long  set up, then the long integration tests
#                               (ctest -L long -LE scaleout: links between namespaces, memcheck,
#                               browser, fault injection)
#   scripts/setup.sh test-scaleout  set up, then the whole scale-out jobs between
#                               network namespaces (ctest -L scaleout: 20+ minutes)
#   scripts/setup.sh fuzz [ARGS] set up (plus clang), then scripts/fuzz.sh ARGS
#
# Environment: COMET_BUILD_DIR (default build), COMET_CMAKE_ARGS (extra
# configure flags, e.g. -DCOMET_SANITIZE=ON), COMET_JOBS (default nproc).
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
build=${COMET_BUILD_DIR:-$here/build}
jobs=${COMET_JOBS:-$(nproc 2>/dev/null || echo 2)}

packages="build-essential cmake pkg-config git libopenblas-dev libhwloc-dev hwloc
libpapi-dev libmpich-dev mpich libcmocka-dev libgsl-dev libjansson-dev libyaml-dev
gnuplot-nox iproute2 valgrind chromium"
# libFuzzer comes with clang's compiler-rt; only the fuzz action needs it.
[ "${1:-}" = fuzz ] && packages="$packages clang libclang-rt-14-dev"

missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then
        echo "comet setup: installing:$missing" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >&2 || { echo "comet setup: apt-get update failed" >&2; exit 1; }
        # shellcheck disable=SC2086
        apt-get install -y -q --no-install-recommends $missing >&2 ||
            { echo "comet setup: apt-get install failed" >&2; exit 1; }
    else
        echo "comet setup: missing Debian packages; run as root:" >&2
        echo "  apt-get install -y$missing" >&2
        exit 1
    fi
fi

# Optional peers: baselines to beat where present, never requirements. As
# root the set-up tries to install them; if that fails comet builds without
# them and says so ("oneDNN not found").
optional="libdnnl-dev"
for p in $optional; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" &&
        [ "$(id -u)" = 0 ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$p" >&2 ||
            echo "comet setup: optional $p not installed; comet builds without it" >&2
    fi
done

if [ ! -f "$build/CMakeCache.txt" ]; then
    # shellcheck disable=SC2086
    cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release ${COMET_CMAKE_ARGS:-} >&2
fi
cmake --build "$build" -j "$jobs" >&2

what=${1:-}
[ $# -gt 0 ] && shift
case "$what" in
"") ;;
run) exec "$build/comet" run --quick "$@" ;;
test) cd "$build" && exec ctest --output-on-failure -j 1 -LE long "$@" ;;
test-long) cd "$build" && exec ctest --output-on-failure -j 1 -L long -LE scaleout "$@" ;;
test-scaleout) cd "$build" && exec ctest --output-on-failure -j 1 -L scaleout "$@" ;;
fuzz) exec "$here/scripts/fuzz.sh" "$@" ;;
*) echo "comet setup: unknown action '$what' (expected run, test, test-long, test-scaleout or fuzz)" >&2; exit 2 ;;
esac
