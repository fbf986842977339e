#!/bin/sh
# Two network namespaces joined by a veth pair shaped with tbf, or by the
# userspace delay line tools/comet-delayline (a wire of RATE plus a one-way
# propagation delay: COMET_NETNS_DELAY), and a hydra "ssh" launcher that
# starts MPI ranks inside them, for measuring a real TCP link on one machine
# (needs root and iproute2; netem is not required).
#
#   scripts/netns-veth.sh up RATE     creates cometA/cometB, e.g. RATE=1gbit
#   scripts/netns-veth.sh down        removes them (always safe to run)
#   scripts/netns-veth.sh run CMD...  runs CMD inside cometA, with the mpiexec
#                                     arguments in $COMET_NETNS_LAUNCHER and
#                                     UCX restricted to TCP over the veth
#   scripts/netns-veth.sh with RATE CMD...
#                                     up, run, and down again (trap: also on
#                                     failure or interrupt)
# Example:
#   scripts/netns-veth.sh with 1gbit sh -c 'build/comet bench collectives \
#       --colls pingpong --sizes 64K,1M,16M --launcher-args "$COMET_NETNS_LAUNCHER"'
#
# Both ends of the veth are named comet0 (each in its own namespace), so one
# UCX_NET_DEVICES / -iface value fits both ranks and the records name the
# link "tcp:comet0".
#
# Environment (optional):
#   COMET_NETNS_NAME=NAME   namespaces NAMEA/NAMEB, launcher NAME-netns-launch
#                           (default comet; <= 12 characters): runs with
#                           different names do not touch each other's
#                           namespaces (a second session's test or script
#                           may be using the default ones)
#   COMET_NETNS_DEV=NAME    the veth's name at both ends instead of comet0
#                           (<= 15 characters): the records' link is
#                           "tcp:NAME", so links shaped differently keep
#                           their own fits in one profile
#   COMET_NETNS_BURST=SIZE  tbf's bucket (default 256kb). A bucket larger
#                           than a message lets that message through at veth
#                           speed after an idle gap; scripts/scale-out.sh
#                           uses a small one so the link is a wire of RATE
#   COMET_NETNS_DELAY=TIME  join the namespaces by comet-delayline instead of
#                           a veth and tbf: a wire of RATE (Ethernet framing,
#                           1000-packet queue) and TIME of one-way propagation
#                           (e.g. 100us; 0 for the wire alone). It runs in the
#                           background from up to down (pid file
#                           $TMPDIR/NAME-delayline.pid; its statistics go to
#                           COMET_NETNS_DELAYLINE_LOG, default
#                           $TMPDIR/NAME-delayline.log, at down)
#   COMET_NETNS_DELAYLINE_ARGS="..."
#                           further options of the delay line (e.g. "-g 0":
#                           no segmentation offload; see comet-delayline -h)
#   COMET_DELAYLINE=PATH    the delay line binary (default
#                           build/tools/comet-delayline beside this script)
#
# Bounded waits: up gives the delay line 10 s to create its devices; run
# (and with) stops CMD at once, with one line and exit 1, if the delay line
# ends while CMD runs (its packets would go nowhere and its TCP would retry
# until CMD's own deadline); with runs the delay line with -P, so it ends
# with this script even if the script is killed; down gives it 5 s to stop
# on SIGTERM, then kills it and says so.
set -eu
NAME=${COMET_NETNS_NAME:-comet}
A=${NAME}A B=${NAME}B IPA=10.77.0.1 IPB=10.77.0.2
DEV=${COMET_NETNS_DEV:-comet0}
BURST=${COMET_NETNS_BURST:-256kb}
wrapper=${TMPDIR:-/tmp}/$NAME-netns-launch
DELAY=${COMET_NETNS_DELAY:-}
dlpid=${TMPDIR:-/tmp}/$NAME-delayline.pid
dllog=${COMET_NETNS_DELAYLINE_LOG:-${TMPDIR:-/tmp}/$NAME-delayline.log}
self=$0
DELAYLINE=${COMET_DELAYLINE:-$(cd "$(dirname "$0")" && pwd)/../build/tools/comet-delayline}
owned=

write_wrapper() {
    cat >"$wrapper.tmp" <<EOW
#!/bin/sh
# hydra calls: <wrapper> [ssh options] HOST COMMAND...; run COMMAND in HOST's namespace
while [ "\${1#-}" != "\$1" ]; do
    case "\$1" in -l|-p|-i|-o|-F) shift ;; esac
    shift
done
host=\$1; shift
case "\$host" in
$IPA) ns=$A ;;
$IPB) ns=$B ;;
*) echo "comet-netns: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOW
    chmod +x "$wrapper.tmp"
    mv -f "$wrapper.tmp" "$wrapper"
}

# Is process $1 alive (a zombie is not)?
alive() {
    st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

down() {
    # the delay line we started (its pid file), then its namespaces
    if [ -f "$dlpid" ]; then
        pid=$(cat "$dlpid")
        if kill -TERM "$pid" 2>/dev/null; then
            i=0
            while alive "$pid" && [ $i -lt 50 ]; do
                sleep 0.1
                i=$((i + 1))
            done
            if alive "$pid"; then
                kill -KILL "$pid" 2>/dev/null || true
                echo "netns-veth: the delay line (pid $pid) did not stop within 5 s of SIGTERM; killed it (no statistics in $dllog)" >&2
            fi
        fi
        rm -f "$dlpid"
    fi
    ip netns del $A 2>/dev/null || true
    ip netns del $B 2>/dev/null || true
    rm -f "$wrapper"
}

up() {
    rate=$1
    down
    # a failure half-way leaves nothing behind
    trap 'down' EXIT INT TERM
    ip netns add $A
    ip netns add $B
    if [ -n "$DELAY" ]; then
        # a TUN device named $DEV in each namespace, held by the delay line
        # (the devices vanish with it); it is ready once it wrote its pid
        rm -f "$dlpid"
        # shellcheck disable=SC2086 # the options are words
        "$DELAYLINE" -a "$DEV@$A" -b "$DEV@$B" -r "$rate" -d "$DELAY" -w "$dlpid" \
            ${owned:+-P} ${COMET_NETNS_DELAYLINE_ARGS:-} </dev/null >/dev/null 2>"$dllog" &
        i=0
        while [ ! -f "$dlpid" ]; do
            if ! alive $! || [ $i -ge 100 ]; then
                # a line still starting would create its devices after
                # down removed the namespaces, and hold them
                kill -KILL $! 2>/dev/null || true
                echo "netns-veth: $DELAYLINE did not start within 10 s (see $dllog)" >&2
                exit 1
            fi
            sleep 0.1
            i=$((i + 1))
        done
    else
        ip link add ${A}0 type veth peer name ${B}0
        ip link set ${A}0 netns $A
        ip link set ${B}0 netns $B
        ip -n $A link set ${A}0 name $DEV
        ip -n $B link set ${B}0 name $DEV
    fi
    ip -n $A addr add $IPA/24 dev $DEV
    ip -n $B addr add $IPB/24 dev $DEV
    for ns in $A $B; do
        ip -n $ns link set lo up
        ip -n $ns link set $DEV up
        # shape both directions: a ping-pong crosses the link both ways
        [ -n "$DELAY" ] \
            || ip netns exec $ns tc qdisc add dev $DEV root tbf rate "$rate" burst "$BURST" latency 50ms
    done
    write_wrapper
    trap - EXIT INT TERM
}

run() {
    write_wrapper
    COMET_NETNS_LAUNCHER="-launcher ssh -launcher-exec $wrapper -hosts $IPA,$IPB -ppn 1 -iface $DEV -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES $DEV"
    export COMET_NETNS_LAUNCHER
    if [ -f "$dlpid" ]; then
        run_watched "$@"
    else
        UCX_TLS=tcp,self UCX_NET_DEVICES=$DEV ip netns exec $A "$@"
    fi
}

# run over the delay line: CMD in a session of its own (so that it can be
# stopped with everything it started), watched: if the line ends first, CMD
# is stopped (SIGTERM, after 10 s SIGKILL) and the run fails with one line.
# SIGINT/SIGTERM to this script go on to CMD.
run_watched() {
    line=$(cat "$dlpid")
    dead=${TMPDIR:-/tmp}/$NAME-delayline.dead
    rm -f "$dead"
    UCX_TLS=tcp,self UCX_NET_DEVICES=$DEV setsid ip netns exec "$A" "$@" &
    cmd=$!
    (
        trap - INT TERM
        while alive "$cmd"; do
            if ! alive "$line"; then
                : >"$dead"
                echo "netns-veth: the delay line (pid $line) ended while the command ran; stopping the command (see $dllog)" >&2
                kill -TERM "-$cmd" 2>/dev/null || true
                i=0
                while alive "$cmd" && [ $i -lt 100 ]; do
                    sleep 0.1
                    i=$((i + 1))
                done
                kill -KILL "-$cmd" 2>/dev/null || true
                exit 0
            fi
            sleep 0.2
        done
    ) &
    watcher=$!
    stopped=
    trap 'stopped=1; kill -TERM "-$cmd" 2>/dev/null || true' INT TERM
    rc=0
    wait "$cmd" || rc=$?
    # a trapped signal ends wait early: wait for CMD itself
    while alive "$cmd"; do
        rc=0
        wait "$cmd" || rc=$?
    done
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    trap - INT TERM
    if [ -f "$dead" ]; then
        rm -f "$dead"
        return 1
    fi
    [ -z "$stopped" ] || return 130
    return "$rc"
}

case "${1:-}" in
up)
    up "${2:?rate, e.g. 1gbit}"
    ;;
down)
    down
    ;;
run)
    shift
    run "$@"
    ;;
with)
    rate=${2:?rate, e.g. 1gbit}
    shift 2
    trap 'down' EXIT INT TERM
    # the delay line ends with this script, however it ends
    owned=1
    up "$rate"
    trap 'down' EXIT INT TERM
    run "$@"
    ;;
*)
    echo "usage: $self up RATE | down | run CMD... | with RATE CMD..." >&2
    exit 2
    ;;
esac
