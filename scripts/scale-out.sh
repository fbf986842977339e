#!/bin/sh
# Scale-out validation on real processes (issue #17): two ranks in two
# network namespaces joined by a tbf-shaped veth (scripts/netns-veth.sh), at
# one or more rates, or (-d) by the userspace delay line tools/comet-delayline
# at every rate and one-way propagation delay given. For each rate it measures the link's own collectives
# (ping-pong, all-reduce, all-gather, all-to-all over the message sizes the distributed
# kernels send) and the distributed fused and unfused kernels (N-split
# GEMM-Softmax / GEMM-LayerNorm, KV-split attention) over that link; then it
# fits every link from its own collectives only (one profile, each link
# under its own name tcp:so<rate>), predicts each distributed kernel as its
# local compute at this machine's profile rates plus the collectives it
# issues over its link's fit, and prints and writes per record predicted
# vs measured and the median error (comet validate --distributed:
# OUT/scale-out.json, OUT/scale-out.csv, OUT/scale-out.txt; docs/FORMATS.md).
# With -w steps it runs whole transformer steps instead (or as well): the
# two-rank configurations of `comet bench llm --quick` (the small model;
# train, prefill, decode at tp=2, dp=2, pp=2) with one rank in each
# namespace, after the link's own ping-pong, all-reduce and paired exchange
# (1F1B's, bench collectives --colls exchange) over the sizes a step sends; each step is predicted by `comet validate --system` over its
# link's fits (per link: OUT/<link>/steps.txt and steps.json; over all:
# OUT/steps.txt, OUT/steps.json, schema comet.validate_system.v1) and the
# median / p90 error per link is printed last (OUT/steps-links.txt).
#
#   scripts/scale-out.sh [-o OUT] [-r RATES] [-d DELAYS] [-l LOCAL]
#                        [-s quick|full] [-w WHAT] [-b BURST] [-m SECONDS]
#                        [-n NICE] [-t TIMEOUT]
#     -o OUT     output folder (default comet-out/scale-out)
#     -r RATES   comma-separated tbf rates, each optionally RATE:S with its
#                own -m (default 1gbit:0.05,200mbit:0.002)
#     -d DELAYS  comma-separated one-way delays (e.g. 0,50us,200us): every
#                rate is run once per delay over comet-delayline (a wire of
#                the rate with Ethernet framing and a 1000-packet queue, then
#                the delay; no bucket, so -b does not apply) as the link
#                tcp:so<rate>d<delay>; its statistics (packets, drops,
#                lateness) in OUT/<link>/delayline.log. Without -d: tbf.
#     -l LOCAL   results folder with this machine's memory and kernel records
#                (default: measured into OUT/local with the quick benches)
#     -s SET     distributed kernel shapes: quick (default; 64-128 KiB
#                messages and row statistics) or full (0.5-4 MiB messages;
#                minutes per rate below 1 Gbit/s)
#     -w WHAT    kernels (default: the distributed kernels and the MoE layer,
#                validate --distributed), steps (whole steps, validate
#                --system), or kernels,steps
#     -b BURST   tbf bucket (default 64kb: near a wire of the rate; see docs)
#     -m S       shortest sample of the link's collectives (default 0.05 s):
#                each sample then moves far more than the bucket, so they
#                are timed in the link's sustained regime (after half a
#                sample of warm-up calls), as the kernels' loops run
#     -n NICE    niceness of the ranks (default 0; e.g. -10 on a machine
#                shared with other work: the busy-polling ranks lose fewer
#                scheduler slices; needs root like the rest)
#     -t S       deadline of one collectives job (default 900 s)
# Environment: COMET (the comet binary; default build/comet beside this
# script's folder); COMET_NETNS_NAME (default so<pid>: namespaces of their
# own, so a concurrent test_netns or a second run is not disturbed). Needs root, iproute2 and tc; exits 77 where network
# namespaces cannot be made (the ctest skip code). The namespaces are always
# removed on exit (trap).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/netns-veth.sh
COMET=${COMET:-$here/../build/comet}
out=comet-out/scale-out rates=1gbit:0.05,200mbit:0.002 delays= local= set=quick burst=64kb nice=0 tmo=900 minsample=0.05
what=kernels
COMET_NETNS_NAME=${COMET_NETNS_NAME:-so$$}
export COMET_NETNS_NAME

while getopts o:r:d:l:s:w:b:m:n:t:h opt; do
    case $opt in
    o) out=$OPTARG ;;
    r) rates=$OPTARG ;;
    d) delays=$OPTARG ;;
    l) local=$OPTARG ;;
    s) set=$OPTARG ;;
    w) what=$OPTARG ;;
    b) burst=$OPTARG ;;
    m) minsample=$OPTARG ;;
    n) nice=$OPTARG ;;
    t) tmo=$OPTARG ;;
    h)
        sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//;/^set -eu/d'
        exit 0
        ;;
    *) exit 2 ;;
    esac
done
case $set in quick | full) ;; *)
    echo "scale-out: -s must be quick or full" >&2
    exit 2
    ;;
esac
kernels='' steps=''
case $what in
kernels) kernels=1 ;;
steps) steps=1 ;;
kernels,steps | steps,kernels) kernels=1 steps=1 ;;
*)
    echo "scale-out: -w must be kernels, steps or kernels,steps" >&2
    exit 2
    ;;
esac

if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
    echo "scale-out: skipped: needs root, ip and tc" >&2
    exit 77
fi
trap '"$netns" down >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
if ! "$netns" up 1gbit >/dev/null 2>&1; then
    echo "scale-out: skipped: network namespaces cannot be made here" >&2
    exit 77
fi
"$netns" down

mkdir -p "$out"
if [ -z "$local" ]; then
    local=$out/local
    "$COMET" bench memory --quick --out "$local" -q
    "$COMET" bench kernels --quick --out "$local" -q
fi

# message sizes per rank (the link launch measures allgatherv too: the
# unfused kernels gather their slices with it, and MPICH runs it by other
# code than allgather): the kernels' row statistics (0.5-4 KiB), their
# all-gathered slices and attention's partial outputs (64 KiB - 2 MiB), the
# slice-width exchange (8 B); the MoE layer's all-to-alls (32 B counts,
# 0.5-1 MiB of token rows to the other rank, 1.5 MiB a rank with its own)
if [ "$set" = full ]; then
    sizes=8,64,512,2K,4K,16K,64K,256K,512K,1M,2M,4M
    full=--full
else
    sizes=8,64,512,1K,4K,16K,64K,128K,256K,1M,2M
    full=
fi
# (the exchange over four launches: whether its two messages move at once
# or in turn changes between launches over a line without delay)
# the whole steps' messages (the small model, -w steps): the loss's 8 B
# all-reduce; the TP all-reduces of a microbatch's activations (decode 8
# tokens: 8 KiB; train and prefill 512 tokens: 512 KiB); the pipeline's
# point-to-point activations and gradients (decode 4 KiB, a sequence 128
# KiB); the DP gradient all-reduce of the whole model (6.3 MB); and the
# sizes between, so no piece of a fit is read off sizes never measured
step_sizes=8,64,512,1K,4K,8K,16K,64K,128K,256K,512K,1M,2M,4M,8M

# every rate, once per delay (-d) or once over tbf
links=
old_ifs=$IFS
IFS=,
for spec in $rates; do
    if [ -n "$delays" ]; then
        for d in $delays; do links="$links $spec@$d"; done
    else
        links="$links $spec"
    fi
done
IFS=$old_ifs

froms= results=
for link in $links; do
    spec=${link%@*} delay=
    [ "$spec" = "$link" ] || delay=${link#*@}
    rate=${spec%%:*} ms=$minsample
    [ "$rate" = "$spec" ] || ms=${spec#*:}
    # the link's name in the records: tcp:so<rate>[d<delay>] (<= 15 characters)
    dev=$(printf 'so%s%s' "$rate" "${delay:+d$delay}" | tr -cd 'A-Za-z0-9.' | tr . p)
    if [ ${#dev} -gt 15 ]; then
        echo "scale-out: link name $dev is longer than 15 characters (write 1gbit, not 1000mbit)" >&2
        exit 2
    fi
    dir=$out/$dev
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ -n "$delay" ]; then
        COMET_NETNS_DELAY=$delay COMET_NETNS_DELAYLINE_LOG=$dir/delayline.log
        export COMET_NETNS_DELAY COMET_NETNS_DELAYLINE_LOG
        echo "scale-out: $rate, $delay each way (comet-delayline; collectives' samples >= $ms s): link tcp:$dev -> $dir" >&2
    else
        unset COMET_NETNS_DELAY
        echo "scale-out: $rate (tbf burst $burst, collectives' samples >= $ms s): link tcp:$dev -> $dir" >&2
    fi
    # the link's collectives with long samples (sustained regime); the
    # kernels with the default short ones, whose median rejects the slices
    # other work takes from a long sample (a kernel loop moving more than
    # the bucket is in the sustained regime after its warm-up calls anyway)
    # whole steps (-w steps): the link's ping-pong and all-reduce over the
    # steps' sizes, then the two-rank steps of the quick set, one rank in
    # each namespace (the records name the link tcp:<dev>)
    job=
    if [ -n "$kernels" ]; then
        job="\"$COMET\" bench collectives $full --colls pingpong,allreduce,allgather,allgatherv,alltoall \
            --algs auto --launches 1 --sizes $sizes --timeout $tmo --min-sample $ms \
            --launcher-args \"\$COMET_NETNS_LAUNCHER\" --out \"$dir\" -q && \
            \"$COMET\" bench collectives $full --colls dist_kernels --timeout $tmo \
            --launcher-args \"\$COMET_NETNS_LAUNCHER\" --out \"$dir\" -q"
    fi
    if [ -n "$steps" ]; then
        job="${job:+$job && }\"$COMET\" bench collectives --colls pingpong,allreduce \
            --algs auto --launches 1 --sizes $step_sizes --timeout $tmo --min-sample $ms \
            --launcher-args \"\$COMET_NETNS_LAUNCHER\" --out \"$dir\" -q && \
            \"$COMET\" bench collectives --colls exchange --algs auto --launches 4 \
            --sizes $step_sizes --timeout $tmo \
            --launcher-args \"\$COMET_NETNS_LAUNCHER\" --out \"$dir\" -q && \
            \"$COMET\" bench llm --quick --ranks 2 --timeout $tmo \
            --launcher-args \"\$COMET_NETNS_LAUNCHER\" --out \"$dir\" -q"
    fi
    COMET_NETNS_DEV=$dev COMET_NETNS_BURST=$burst nice -n "$nice" "$netns" with "$rate" sh -c "$job"
    # the link's own fits alone, for reading (the profile below holds them too)
    "$COMET" calibrate --links-only --from "$dir" --out "$dir/links.json" -q
    froms="$froms --from $dir"
    results="$results --results $dir"
done

# one profile: this machine's rates from LOCAL, each link fitted from its
# own collectives only (a fit applies to the link named in its records)
# shellcheck disable=SC2086
"$COMET" calibrate --from "$local" $froms --out "$out/profile.json" -q
if [ -n "$kernels" ]; then
    # shellcheck disable=SC2086
    "$COMET" validate --distributed --profile "$out/profile.json" $results --out "$out" \
        | tee "$out/scale-out.txt"
fi
[ -n "$steps" ] || exit 0

# whole steps: each link's records alone (its error and each term's), then
# all of them; a record is predicted over the fits of the link it names
: >"$out/steps-links.txt.tmp"
for link in $links; do
    spec=${link%@*} delay=
    [ "$spec" = "$link" ] || delay=${link#*@}
    rate=${spec%%:*}
    dev=$(printf 'so%s%s' "$rate" "${delay:+d$delay}" | tr -cd 'A-Za-z0-9.' | tr . p)
    dir=$out/$dev
    "$COMET" validate --system --profile "$out/profile.json" --results "$dir" >"$dir/steps.txt"
    "$COMET" validate --system --profile "$out/profile.json" --results "$dir" --json \
        >"$dir/steps.json.tmp"
    mv -f "$dir/steps.json.tmp" "$dir/steps.json"
    sed -n "s|^step: median |tcp:$dev: step median |p" "$dir/steps.txt" >>"$out/steps-links.txt.tmp"
done
# shellcheck disable=SC2086
"$COMET" validate --system --profile "$out/profile.json" $results >"$out/steps.txt.tmp"
# shellcheck disable=SC2086
"$COMET" validate --system --profile "$out/profile.json" $results --json >"$out/steps.json.tmp"
mv -f "$out/steps.txt.tmp" "$out/steps.txt"
mv -f "$out/steps.json.tmp" "$out/steps.json"
mv -f "$out/steps-links.txt.tmp" "$out/steps-links.txt"
cat "$out/steps.txt"
echo "whole steps per link (comet validate --system over each link's records):"
cat "$out/steps-links.txt"
