/* The searches: every cluster and core split, temporal tile, fusion and
 * binding of a compound op, capacity-pruned, with the latency-energy Pareto
 * set; and every dataflow x tile x threads of a gather-GEMM-scatter. */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Search                                                              */
/* ------------------------------------------------------------------ */

/* energy for dominance: an unknown energy counts as equal everywhere, so
 * the set is then over latency alone (one point) */
static double pareto_e(const comet_model_result *r)
{
    return isfinite(r->energy_pj) ? r->energy_pj : 0;
}

/* Faster, or as fast for less energy (a mapping raised to its bound ties
 * with others at the bound: the best is the one that spends least). */
static int better(const comet_model_result *r, const comet_model_result *best)
{
    return r->cycles < best->cycles || (r->cycles == best->cycles && pareto_e(r) < pareto_e(best));
}

/* A split the search tries: a divisor of the count, or a power of two below it. */
static int split_ok(int s, int count)
{
    return s >= 1 && s <= count && (count % s == 0 || (s & (s - 1)) == 0);
}

static void pareto_add(
    comet_model_search *s, const comet_model_mapping *mp, const comet_model_result *r)
{
    for (size_t i = 0; i < s->npareto; i++)
        if (s->pareto_r[i].cycles <= r->cycles && pareto_e(&s->pareto_r[i]) <= pareto_e(r))
            return; /* dominated */
    size_t k = 0;
    for (size_t i = 0; i < s->npareto; i++)
        if (!(r->cycles <= s->pareto_r[i].cycles && pareto_e(r) <= pareto_e(&s->pareto_r[i]))) {
            s->pareto[k] = s->pareto[i];
            s->pareto_r[k++] = s->pareto_r[i];
        }
    s->npareto = k;
    if (k < 64) {
        s->pareto[k] = *mp;
        s->pareto_r[k] = *r;
        s->npareto++;
    }
}

/* A mapping whose step tile does not fit: the core-level temporal loop
 * (ct_m x ct_n sub-tiles, powers of two up to CT_MAX) relieves the output
 * buffer, which holds one sub-tile's accumulators at a time. Only tried
 * where the whole tile does not fit: sub-tiles add fill/drain and never
 * shorten anything (gemm_cycles_sub), so a mapping that fits without them
 * is never beaten by itself with them. ct_k relieves no buffer (the input
 * and weight buffers hold the step's tile): not searched. Leaves the
 * fastest valid variant in *mp / *r (r->valid 0 when none fits). */
#define CT_MAX 16
static void core_tiles(const comet_model_hw *hw, const comet_model_problem *pb,
    comet_model_mapping *mp, comet_model_result *r, comet_model_search *out)
{
    /* sub-tiles relieve the output buffer alone: a global buffer the step
     * overflows stays overflowed */
    if (!hw->systolic || r->gb_need > hw->gb.capacity)
        return;
    comet_model_mapping t = *mp, best = *mp;
    comet_model_result rt, rb;
    rb.valid = 0;
    /* the cost rises with each factor (more fills and drains, never fewer
     * folds) and so does the room: for each ct_m the smallest ct_n that
     * fits is its best, and once ct_n = 1 fits no larger ct_m can win */
    for (int cm = 1; cm <= CT_MAX && cm <= mp->tile_m; cm *= 2) {
        int fits_alone = 0;
        for (int cn = 1; cn <= (mp->fused ? 1 : CT_MAX); cn *= 2) {
            if (cm * cn == 1)
                continue;
            t.ct_m = cm, t.ct_n = cn;
            comet_model_eval_fast(hw, pb, &t, &rt);
            out->evaluated++;
            if (!rt.valid)
                continue;
            if (!rb.valid || better(&rt, &rb))
                best = t, rb = rt;
            fits_alone = cn == 1;
            break;
        }
        if (fits_alone)
            break;
    }
    if (rb.valid)
        *mp = best, *r = rb;
}

int comet_model_explore(
    const comet_model_hw *hw, const comet_model_problem *pb, comet_model_search *out)
{
    if (!hw || !pb || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    out->r_fused.cycles = out->r_unfused.cycles = INFINITY;
    double t0 = comet_util_now();
    comet_model_opdims od;
    comet_model_op_dims(pb, &od);
    if (!od.desc)
        return -EINVAL;
    const int att = od.desc->flash; /* head splits; tile_k tiles Lk; no K split */
    const double M = od.rows, N = od.N, K = od.K;
    if (!(M >= 1 && N >= 1 && K >= 1))
        return -EINVAL;
    const int P = hw->clusters, C = hw->cores, cpu = hw->kind[0] == 'c';
    comet_model_mapping mp;
    comet_model_result r;
    /* heads x M x N x K cluster splits whose product is at most P, and M x
     * N core splits within C: clusters and cores may stay idle (a small or
     * memory-bound problem can be fastest on fewer), each split a divisor
     * of the count or a power of two */
    for (int ch = 1; ch <= (att ? P : 1); ch++) {
        if (!split_ok(ch, P) || ch > od.groups)
            continue;
        const int P1 = P / ch;
        for (int cm = 1; cm <= P1; cm++) {
            if (!split_ok(cm, P) || cm * ch > M)
                continue;
            for (int cn = 1; cn <= P1 / cm; cn++) {
                if (!split_ok(cn, P) || cn > N)
                    continue;
                for (int ck = 1; ck <= P1 / cm / cn; ck++) {
                    if (!split_ok(ck, P) || ck > K || (att && ck > 1))
                        continue;
                    for (int km = 1; km <= C; km++) {
                        if (!split_ok(km, C))
                            continue;
                        for (int kn = 1; kn <= C / km; kn++) {
                            if (!split_ok(kn, C))
                                continue;
                            /* temporal tiles: rows per step, and K (attention: the
                             * KV tile) from the whole extent down by halves */
                            double Mc = ceil(M / (cm * ch)), Kc = att ? ceil(N / cn) : ceil(K / ck);
                            for (double tm = 1; tm <= Mc * 2; tm *= 2) {
                                double tmv = fmin(tm, Mc);
                                for (double tk = Kc; tk >= 1 && tk >= Kc / 64; tk = floor(tk / 2)) {
                                    /* unfused: one pass per row (a library
                                     * kernel) and op-by-op passes, the best
                                     * of both is the baseline */
                                    /* unfused on an accelerator: the
                                     * intermediate through DRAM, or kept
                                     * in the global buffer where it fits */
                                    for (int var = 0; var <= 2; var++)
                                        for (int igb = 0; igb <= (var < 2 && !cpu); igb++)
                                            for (int pipe = 0; pipe <= 1; pipe++) {
                                                const int fused = var == 2;
                                                memset(&mp, 0, sizeof mp);
                                                mp.fused = fused;
                                                mp.pipelined = pipe;
                                                mp.cs_m = cm, mp.cs_n = cn, mp.cs_k = ck,
                                                mp.cs_h = ch;
                                                mp.ks_m = km, mp.ks_n = kn;
                                                mp.tile_m = tmv, mp.tile_k = tk;
                                                mp.one_pass = var != 1;
                                                mp.inter_gb = igb;
                                                mp.streaming = -1;
                                                comet_model_eval_fast(hw, pb, &mp, &r);
                                                out->evaluated++;
                                                if (!r.valid)
                                                    core_tiles(hw, pb, &mp, &r, out);
                                                if (!r.valid) {
                                                    out->pruned++;
                                                    continue;
                                                }
                                                if (fused && better(&r, &out->r_fused)) {
                                                    out->best_fused = mp;
                                                    out->r_fused = r;
                                                }
                                                if (!fused && better(&r, &out->r_unfused)) {
                                                    out->best_unfused = mp;
                                                    out->r_unfused = r;
                                                }
                                                pareto_add(out, &mp, &r);
                                            }
                                    if (tk <= 1)
                                        break;
                                }
                                if (tmv >= Mc)
                                    break;
                            }
                        }
                    }
                }
            }
        }
    }
    /* descriptive strings for the winners */
    if (out->r_fused.valid)
        comet_model_eval(hw, pb, &out->best_fused, &out->r_fused);
    if (out->r_unfused.valid)
        comet_model_eval(hw, pb, &out->best_unfused, &out->r_unfused);
    out->seconds = comet_util_now() - t0;
    return out->r_fused.valid || out->r_unfused.valid ? 0 : -ENOSPC;
}

/* ------------------------------------------------------------------ */
/* Gather-GEMM-scatter: every dataflow x tile x threads               */
/* ------------------------------------------------------------------ */

int comet_model_gms_explore(const comet_model_hw *hw, const comet_model_gms *g, const double *tiles,
    int ntiles, int max_threads, int only,
    double (*tiles_of)(const void *ctx, double tile_m, int threads), const void *ctx,
    void (*each)(void *arg, const comet_model_gms_config *c, const comet_model_gms_cost *r),
    void *arg, comet_model_gms_search *out)
{
    if (!hw || !g || !tiles || ntiles < 1 || max_threads < 1 || only < 0 || only > 4 || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    for (int t = 1; t <= max_threads && t <= hw->cores; t++)
        for (int df = 1; df <= 4; df++) {
            if (only && df != only)
                continue;
            /* dataflow 1 runs whole segments: its tile does not matter */
            for (int k = 0; k < (df == 1 ? 1 : ntiles); k++) {
                comet_model_gms_config c = { df, tiles[k], t, 0 };
                if (tiles_of)
                    c.tiles = tiles_of(ctx, tiles[k], t);
                comet_model_gms_cost r;
                int rc = comet_model_gms_eval(hw, g, &c, &r);
                if (rc)
                    return rc;
                out->evaluated++;
                if (each)
                    each(arg, &c, &r);
                if (!out->have[df - 1] || r.seconds < out->cost[df - 1].seconds) {
                    out->best[df - 1] = c;
                    out->cost[df - 1] = r;
                    out->have[df - 1] = 1;
                }
            }
        }
    for (int d = 0; d < 4; d++)
        if (out->have[d] && (!out->win || out->cost[d].seconds < out->cost[out->win - 1].seconds))
            out->win = d + 1;
    return out->win ? out->evaluated : -EINVAL;
}
