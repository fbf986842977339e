#!/bin/sh
# Layers check (docs/ARCHITECTURE.md): every library includes only the public
# headers of the libraries it may depend on, and no one includes another
# library's private headers. Run by ctest (test "layers"); exit 1 with one
# line per violation (file:line: what it includes, and what it may include).
#
# Allowed arrows (an arrow = may include/call):
#   cli -> everything public; reports -> {model, calibrate, bench, results, util};
#   system -> {model, util}; calibrate -> {model, results, util};
#   bench -> {kernels, probe, results, util}; model -> {results, util};
#   cometio -> {model, results, util} (COMET's YAML files);
#   probe -> util; results -> util (a leaf beside util: the one reader and
#   writer of records); kernels -> nothing; util -> nothing;
#   fuzz -> public headers only.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
build=${2:-}
[ -z "$build" ] || build=$(cd "$build" && pwd) || exit 2
cd "$root" || exit 2

# public header -> owning library
owner() {
    case $1 in
    comet_util.h) echo util ;;
    comet_results.h) echo results ;;
    comet_kernels.h) echo kernels ;;
    comet_probe.h) echo probe ;;
    comet_bench.h | comet_bench_coll.h | comet_bench_llm.h) echo bench ;;
    comet_model.h | comet_model_hw.h | comet_model_validate.h) echo model ;;
    comet_cometio.h) echo cometio ;;
    comet_calibrate.h) echo calibrate ;;
    comet_reports.h) echo reports ;;
    comet_system.h) echo system ;;
    *) echo "" ;;
    esac
}
allowed() {
    case $1 in
    util) echo "util" ;;
    results) echo "results util" ;;
    kernels) echo "kernels" ;;
    probe) echo "probe util" ;;
    bench) echo "bench kernels probe results util" ;;
    model) echo "model results util" ;;
    cometio) echo "cometio model results util" ;;
    calibrate) echo "calibrate model results util" ;;
    system) echo "system model util" ;;
    reports) echo "reports model calibrate bench results system util" ;;
    cli | fuzz) echo "util results kernels probe bench model cometio calibrate system reports" ;;
    esac
}

tmp=$(mktemp) || exit 2
trap 'rm -f "$tmp"' EXIT
for lib in util results kernels probe bench model cometio calibrate system reports cli fuzz; do
    [ -d "$lib" ] || continue
    ok=$(allowed "$lib")
    for f in "$lib"/*.c "$lib"/*.h; do
        [ -f "$f" ] || continue
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
            n=${line%%:*}
            h=$(echo "$line" | sed 's/.*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/')
            h=${h##*/}
            o=$(owner "$h")
            if [ -z "$o" ]; then
                # a private header: only from its own folder
                if [ ! -f "$lib/$h" ]; then
                    echo "$f:$n: includes \"$h\", a private header of another folder (public headers only: comet_*.h)"
                    echo x >>"$tmp"
                fi
                continue
            fi
            case " $ok " in
            *" $o "*) ;;
            *)
                echo "$f:$n: includes \"$h\" ($o); $lib may use: $ok"
                echo x >>"$tmp"
                ;;
            esac
        done
    done
done
# CMake: a library links another comet library or a package PUBLIC only when
# its public header includes that one's header (the list below, with why).
#   comet_kernels -> MPI::MPI_C (comet_kernels.h includes mpi.h)
#   comet_calibrate -> comet_model (comet_calibrate.h includes comet_model_hw.h)
#   comet_system -> comet_model (comet_system.h includes comet_model.h)
#   comet_cometio -> comet_model (comet_cometio.h includes comet_model.h)
#   comet_bench, comet_model, comet_calibrate, comet_reports -> comet_results
#     (their public headers take typed records: they include comet_results.h;
#     the model's is comet_model_validate.h)
#   * -> PkgConfig::JANSSON (public headers take and return json_t)
for cm in */CMakeLists.txt; do
    awk -v f="$cm" '
        /target_link_libraries\(/ { inl = 1; pub = 0; tgt = $0; sub(/.*target_link_libraries\(/, "", tgt); sub(/[ )].*/, "", tgt) }
        inl {
            n = split($0, w, /[ \t()]+/)
            for (i = 1; i <= n; i++) {
                if (w[i] == "PUBLIC") pub = 1
                else if (w[i] == "PRIVATE" || w[i] == "INTERFACE") pub = 0
                else if (pub && w[i] != "" && w[i] != tgt && w[i] != "target_link_libraries") {
                    ok = (w[i] == "PkgConfig::JANSSON") ||
                         (tgt == "comet_kernels" && w[i] == "MPI::MPI_C") ||
                         (tgt == "comet_calibrate" && w[i] == "comet_model") ||
                         (tgt == "comet_system" && w[i] == "comet_model") ||
                         (tgt == "comet_cometio" && w[i] == "comet_model") ||
                         (w[i] == "comet_results" && (tgt == "comet_bench" || tgt == "comet_model" ||
                                                      tgt == "comet_calibrate" || tgt == "comet_reports"))
                    if (!ok) printf "%s:%d: %s links %s PUBLIC; its public header does not need it (link PRIVATE)\n", f, NR, tgt, w[i]
                }
            }
            if ($0 ~ /\)/) inl = 0
        }' "$cm" | while IFS= read -r l; do echo "$l"; echo x >>"$tmp"; done
done

# File-level layers: no circle of files inside one library (or the CLI).
# Each library's archive lists its objects' defined (T, D, B, R, C) and
# undefined (U) symbols; an arrow joins the object that uses a symbol to the
# one of the same library that defines it; the transitive closure finds the
# files that reach each other (a circle), each printed once with its arrows.
if [ -n "$build" ]; then
    set -- "$build"/*/libcomet_*.a
    if [ ! -f "$1" ]; then
        echo "$build: no libcomet_*.a: build the tree before the file-level check"
        echo x >>"$tmp"
    fi
    {
        for a in "$build"/*/libcomet_*.a; do nm -A "$a" 2>/dev/null; done
        for o in "$build"/cli/CMakeFiles/*/*.c.o; do [ -f "$o" ] && nm -A "$o" 2>/dev/null; done
    } | awk '
        {
            n = split($0, p, ":")
            if (n >= 3) { lib = p[1]; file = p[2] } else { lib = p[1]; file = p[1] }
            sub(/.*\//, "", file); sub(/\.o$/, "", file)
            if (lib ~ /libcomet_[a-z]*\.a$/) { g = lib; sub(/.*libcomet_/, "", g); sub(/\.a$/, "", g) }
            else g = "cli"
            m = split(p[n], w, " ")
            t = w[m - 1]; s = w[m]
            if (t == "U") { nu++; ug[nu] = g; uf[nu] = file; us[nu] = s }
            else if (t ~ /^[TDBRC]$/) def[g SUBSEP s] = file
            if (!((g SUBSEP file) in seenf)) { seenf[g SUBSEP file] = 1; nf[g]++; fl[g, nf[g]] = file }
        }
        END {
            for (i = 1; i <= nu; i++) {
                k = ug[i] SUBSEP us[i]
                if (!(k in def) || def[k] == uf[i]) continue
                e = ug[i] SUBSEP uf[i] SUBSEP def[k]
                if (!(e in edge)) edge[e] = us[i]
            }
            for (g in nf) {
                n = nf[g]
                for (i = 1; i <= n; i++)
                    for (j = 1; j <= n; j++) r[i, j] = ((g SUBSEP fl[g, i] SUBSEP fl[g, j]) in edge)
                for (k = 1; k <= n; k++)
                    for (i = 1; i <= n; i++)
                        if (r[i, k]) for (j = 1; j <= n; j++) if (r[k, j]) r[i, j] = 1
                for (i = 1; i <= n; i++) {
                    if (done[g, i] || !r[i, i]) continue
                    c = ""; cnt = 0; arrows = ""
                    for (j = 1; j <= n; j++)
                        if (r[i, j] && r[j, i]) { done[g, j] = 1; c = c " " fl[g, j]; cnt++; in_c[j] = 1 }
                    for (a = 1; a <= n; a++)
                        for (b = 1; b <= n; b++)
                            if (in_c[a] && in_c[b] && ((g SUBSEP fl[g, a] SUBSEP fl[g, b]) in edge))
                                arrows = arrows sprintf("\n    %s -> %s (%s)", fl[g, a], fl[g, b],
                                    edge[g SUBSEP fl[g, a] SUBSEP fl[g, b]])
                    printf "%s/: a circle of %d files:%s; its arrows:%s\n", g, cnt, c, arrows
                    delete in_c
                }
                delete r
            }
        }' | while IFS= read -r l; do
        echo "$l"
        case $l in *": a circle of "*) echo x >>"$tmp" ;; esac
    done
fi

bad=$(wc -l <"$tmp")
if [ "$bad" -gt 0 ]; then
    echo "layers: $bad violation(s) of the dependency arrows (includes, links, circles of files)"
    exit 1
fi
if [ -n "$build" ]; then
    echo "layers: every include follows the dependency arrows; no circle of files"
else
    echo "layers: every include follows the dependency arrows (file-level circles: give the build folder)"
fi
exit 0
