#!/bin/sh
# Two network namespaces joined by a veth pair shaped with tbf, and a hydra
# "ssh" launcher that starts MPI ranks inside them, for measuring a real TCP
# link on one machine (root, iproute2).
#
#   scripts/netns-veth.sh up RATE     e.g. RATE=1gbit: creates cometA/cometB
#   scripts/netns-veth.sh down        removes them
#   scripts/netns-veth.sh run CMD...  runs CMD inside cometA with the launcher
#                                     arguments in $COMET_NETNS_LAUNCHER
# Example:
#   scripts/netns-veth.sh up 1gbit
#   scripts/netns-veth.sh run build/comet bench collectives --colls pingpong \
#       --sizes 64K,1M,16M --launcher-args "$COMET_NETNS_LAUNCHER"   (quoted by run)
#   scripts/netns-veth.sh down
set -eu
A=cometA B=cometB IPA=10.77.0.1 IPB=10.77.0.2
wrapper=${TMPDIR:-/tmp}/comet-netns-launch

write_wrapper() {
    cat >"$wrapper" <<EOW
#!/bin/sh
# hydra calls: <wrapper> [-x ...] HOST COMMAND...; run COMMAND in HOST's namespace
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1; shift
case "\$host" in $IPA) ns=$A ;; $IPB) ns=$B ;; *) echo "comet-netns: unknown host \$host" >&2; exit 1 ;; esac
exec ip netns exec "\$ns" sh -c "\$*"
EOW
    chmod +x "$wrapper"
}

case "${1:-}" in
up)
    rate=${2:?rate, e.g. 1gbit}
    "$0" down 2>/dev/null || true
    ip netns add $A
    ip netns add $B
    ip link add cveth0 type veth peer name cveth1
    ip link set cveth0 netns $A
    ip link set cveth1 netns $B
    ip -n $A addr add $IPA/24 dev cveth0
    ip -n $B addr add $IPB/24 dev cveth1
    for ns in $A $B; do ip -n $ns link set lo up; done
    ip -n $A link set cveth0 up
    ip -n $B link set cveth1 up
    # shape both directions: a ping-pong crosses the link both ways
    ip netns exec $A tc qdisc add dev cveth0 root tbf rate "$rate" burst 256kb latency 50ms
    ip netns exec $B tc qdisc add dev cveth1 root tbf rate "$rate" burst 256kb latency 50ms
    write_wrapper
    ;;
down)
    ip netns del $A 2>/dev/null || true
    ip netns del $B 2>/dev/null || true
    rm -f "$wrapper"
    ;;
run)
    shift
    write_wrapper
    COMET_NETNS_LAUNCHER="-launcher ssh -launcher-exec $wrapper -hosts $IPA,$IPB -ppn 1 -genv UCX_TLS tcp,self -genv UCX_NET_DEVICES all"
    export COMET_NETNS_LAUNCHER
    UCX_TLS=tcp,self UCX_NET_DEVICES=all exec ip netns exec $A "$@"
    ;;
*)
    echo "usage: $0 up RATE | down | run CMD..." >&2
    exit 2
    ;;
esac
