/* Memory levels and vector-op costs of a profile. */
#include "calibrate_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXLV 8

/* A working-set sweep: (bytes, GB/s) sorted by bytes, one point per size. */
typedef struct sweep {
    size_t n;
    double *bytes, *gbs;
} sweep;

/* Collects the sweep of memory op `op` at `threads` (median over repeats).
 * Each record's rate is its best sample's (STREAM's "Best Rate"): another
 * tenant can only slow a pass, and on this shared VM the median of a set
 * taken while others ran fell 2-3x below the same size measured idle (a
 * Zen 5 VM, 1-thread copy at 64 MiB: median 10.8 GB/s at 37% busy from
 * others, best 33.7; idle 39.9 and 41.7). */
static int collect(
    const comet_results_record *recs, size_t n, const char *op, int threads, sweep *s)
{
    double *b = malloc((n + 1) * sizeof(double)), *g = malloc((n + 1) * sizeof(double));
    size_t m = 0;
    s->n = 0;
    s->bytes = b;
    s->gbs = g;
    if (!b || !g)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_MEMORY || strcmp(r->op, op) || r->threads != threads
            || r->valid == 0)
            continue;
        double by = r->shape.bytes, t = r->stats.min_s > 0 ? r->stats.min_s : r->stats.median_s;
        if (!(by > 0) || !(t > 0))
            continue;
        b[m] = by;
        g[m++] = by / t * 1e-9;
    }
    /* sort by size (insertion: sweeps are short) */
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0 && b[j - 1] > b[j]; j--) {
            double t = b[j];
            b[j] = b[j - 1];
            b[j - 1] = t;
            t = g[j];
            g[j] = g[j - 1];
            g[j - 1] = t;
        }
    /* repeated sizes: keep their median */
    size_t o = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i;
        while (j < m && b[j] == b[i])
            j++;
        gsl_sort(g + i, 1, j - i);
        double med = gsl_stats_median_from_sorted_data(g + i, 1, j - i);
        b[o] = b[i];
        g[o++] = med;
        i = j;
    }
    s->n = o;
    return 0;
}

static void sweep_free(sweep *s)
{
    free(s->bytes);
    free(s->gbs);
}

static json_t *levels_json(const comet_calibrate_plateau *lv, int nl)
{
    json_t *a = json_array();
    for (int i = 0; i < nl; i++)
        json_array_append_new(a,
            json_pack("{s:f,s:f,s:f,s:I}", "gbs", lv[i].gbs, "from_bytes", lv[i].from_bytes,
                "to_bytes", lv[i].to_bytes, "points", (json_int_t)lv[i].points));
    return a;
}

/* Held-out of a sweep: every CAL_FOLDS-th point (by size) predicted by the
 * plateaus of the others; the error is that of the pass's time. */
static size_t sweep_heldout(const sweep *s, double *errs)
{
    size_t ne = 0;
    double *b = malloc(s->n * sizeof(double) + 1), *g = malloc(s->n * sizeof(double) + 1);
    if (!b || !g)
        goto out;
    for (size_t f = 0; f < CAL_FOLDS; f++) {
        size_t m = 0;
        for (size_t i = 0; i < s->n; i++)
            if (i % CAL_FOLDS != f) {
                b[m] = s->bytes[i];
                g[m++] = s->gbs[i];
            }
        comet_calibrate_plateau lv[MAXLV];
        int nl = comet_calibrate_plateaus(b, g, m, lv, MAXLV);
        if (nl < 1 || m == s->n)
            continue;
        for (size_t i = f; i < s->n; i += CAL_FOLDS) {
            double pred = comet_calibrate_plateau_predict(lv, nl, s->bytes[i]);
            errs[ne++] = s->gbs[i] / pred - 1; /* t_pred / t_meas - 1 */
        }
    }
out:
    free(b);
    free(g);
    return ne;
}

/* What every core (out[l][0]) and one core (out[l][1]; 0: no per-core
 * limit) draw from the LLC (l = 0, at llc / 2) and from DRAM (l = 1, the
 * last plateau), from one op's 1-thread (lv[0]) and all-core (lv[1])
 * plateaus; all 0 without the all-core sweep. Every core draws at least what
 * one core draws (an all-core sweep below the 1-thread one ran beside other
 * tenants); a per-core limit only where one core draws less than all. */
static void shared_level_rates(const comet_calibrate_plateau lv[2][MAXLV], const int nl[2],
    int cores, double llc, double out[2][2])
{
    const int a = cores > 1 && nl[1] ? 1 : 0;
    double one[2] = { 0, 0 }, all[2] = { 0, 0 };
    if (nl[0] >= 1) {
        one[0] = comet_calibrate_plateau_predict(lv[0], nl[0], llc / 2);
        one[1] = lv[0][nl[0] - 1].gbs;
    }
    if (nl[a] >= 1 && (a == 1 || cores == 1)) {
        all[0] = comet_calibrate_plateau_predict(lv[a], nl[a], llc / 2);
        all[1] = lv[a][nl[a] - 1].gbs;
    }
    for (int l = 0; l < 2; l++) {
        out[l][0] = all[l] > 0 ? fmax(all[l], one[l]) : 0;
        out[l][1] = out[l][0] > 0 && cores > 1 && one[l] > 0 && one[l] < out[l][0] ? one[l] : 0;
    }
}

int cal_fit_memory(
    cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen)
{
    static const char *const ops[] = { "read", "copy", "triad", "fill" };
    int rc = 0, thr[2] = { 1, cx->cores };
    double *he = malloc((n + 1) * sizeof(double)), *res = malloc((n + 1) * sizeof(double));
    size_t nh = 0, npts = 0;
    json_t *series = json_array();
    comet_calibrate_plateau tri_lv[2][MAXLV], fill_lv[2][MAXLV];
    int tri_nl[2] = { 0, 0 }, fill_nl[2] = { 0, 0 };
    double lb_gbs = NAN;
    if (!he || !res) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    for (int o = 0; o < 4; o++)
        for (int ti = 0; ti < (cx->cores > 1 ? 2 : 1); ti++) {
            sweep s;
            if ((rc = collect(recs, n, ops[o], thr[ti], &s)) != 0) {
                sweep_free(&s);
                rc = comet_util_seterr(err, errlen, rc, "calibrate: out of memory");
                goto fail;
            }
            if (s.n < 2) {
                sweep_free(&s);
                continue;
            }
            comet_calibrate_plateau lv[MAXLV];
            int nl = comet_calibrate_plateaus(s.bytes, s.gbs, s.n, lv, MAXLV);
            size_t h = sweep_heldout(&s, he + nh);
            double med, p90;
            comet_calibrate_err_stats(he + nh, h, &med, &p90);
            for (size_t i = 0; i < s.n; i++)
                res[i] = s.gbs[i] / comet_calibrate_plateau_predict(lv, nl, s.bytes[i]) - 1;
            json_array_append_new(series,
                json_pack("{s:s,s:i,s:I,s:o,s:o,s:o}", "op", ops[o], "threads", thr[ti], "points",
                    (json_int_t)s.n, "levels", levels_json(lv, nl), "residuals",
                    cal_residuals_json(s.bytes, res, s.n), "heldout",
                    cal_err_json(he + nh, h, "every 4th size (4 folds) predicted by the others")));
            nh += h;
            npts += s.n;
            /* the model's levels (STREAM convention: triad): local buffer =
             * one core's L2, global buffer = the LLC with every core, DRAM =
             * the last plateau with every core */
            if (!strcmp(ops[o], "triad")) {
                memcpy(tri_lv[ti], lv, sizeof lv);
                tri_nl[ti] = nl;
            } else if (!strcmp(ops[o], "fill")) {
                memcpy(fill_lv[ti], lv, sizeof lv);
                fill_nl[ti] = nl;
            }
            sweep_free(&s);
        }
    /* The LLC the model sees: the probe's, unless the sweep says otherwise.
     * VMs report the host socket's L3 (480 MiB on one cloud Xeon, 508 MiB on
     * a Zen 5 VM whose L3 plateau ends at 16 MiB) while their share ends far
     * lower. First: the 1-thread triad's first level past L2, ending
     * between it and the next level (one core's reach into the LLC), where
     * the probe's LLC is more than two sweep octaves above that edge. The
     * all-core sweep is not used for it: on a Zen 5 VM (AMD EPYC, 2 vCPUs)
     * its edge came out at 22.6, 45 and 90 MiB in three runs (other tenants
     * beside its largest sizes; two vCPUs that may sit on two L3s), the
     * 1-thread edge at 22.6 MiB in all three. */
    const int ta = cx->cores > 1 && tri_nl[1] ? 1 : 0;
    double llc = cx->l3;
    const char *llc_src = "probe LLC";
    if (tri_nl[0] >= 2) {
        for (int i = 0; i + 1 < tri_nl[0]; i++) {
            const comet_calibrate_plateau *u = &tri_lv[0][i], *d = u + 1;
            /* past L2 by more than the full sweep's half-octave step (the
             * L2 level itself ends at L2, give or take the sizes' rounding) */
            if (!(u->to_bytes > M_SQRT2 * cx->l2))
                continue;
            double edge = sqrt(u->to_bytes * d->from_bytes);
            if (edge > cx->l2 && 4 * edge < cx->l3) {
                llc = edge;
                llc_src = "measured: the end of the 1-thread triad's first level past L2, far "
                          "below the probe's LLC";
            }
            break;
        }
    }
    /* Else, where the all-core triad already sits on its last (DRAM)
     * plateau below the probe's LLC, the edge between the last two plateaus
     * (geometric mean). */
    if (llc == cx->l3 && tri_nl[ta] >= 2 && tri_lv[ta][tri_nl[ta] - 1].from_bytes < cx->l3) {
        const comet_calibrate_plateau *d = &tri_lv[ta][tri_nl[ta] - 1], *u = d - 1;
        double edge = sqrt(u->to_bytes * d->from_bytes);
        if (edge > cx->l2) {
            llc = edge;
            llc_src = "measured: where the all-core triad reaches its DRAM plateau, below the "
                      "probe's LLC";
        }
    }
    if (tri_nl[0] >= 1)
        lb_gbs = comet_calibrate_plateau_predict(tri_lv[0], tri_nl[0], cx->l2 / 2);
    /* the shared levels: the triad's (loads and stores), and the fill's
     * (stores alone: a pass that only writes, as BLAS clearing C; without a
     * fill sweep, older results, the model takes half the triad's: each
     * line read for ownership, then written) */
    double t[2][2], w[2][2]; /* [LLC, DRAM][every core, one core] */
    shared_level_rates(tri_lv, tri_nl, cx->cores, llc, t);
    shared_level_rates(fill_lv, fill_nl, cx->cores, llc, w);
    const double gb_gbs = t[0][0], gb1_gbs = t[0][1], dram_gbs = t[1][0], dram1_gbs = t[1][1];
    if (!(dram_gbs > 0) || !(lb_gbs > 0)) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "calibrate: no triad sweep at 1 and %d threads in the results (run 'comet bench "
            "memory')",
            cx->cores);
        goto fail;
    }
    cx->sum.mem_points = npts;
    cx->sum.mem_heldout = nh;
    comet_calibrate_err_stats(he, nh, &cx->sum.mem_med, &cx->sum.mem_p90);
    const double g = cx->ghz;
    cx->hw->dram = (comet_model_mem) { .capacity = cx->dram_bytes,
        .bw = dram_gbs / g,
        .access_bytes = 64,
        .core_bw = dram1_gbs / g,
        .write_bw = w[1][0] / g,
        .core_write_bw = w[1][1] / g };
    cx->hw->gb = (comet_model_mem) { .capacity = llc,
        .bw = gb_gbs / g,
        .access_bytes = 64,
        .core_bw = gb1_gbs / g,
        .write_bw = w[0][0] / g,
        .core_write_bw = w[0][1] / g };
    cx->hw->lb = (comet_model_mem) { .capacity = cx->l2, .bw = lb_gbs / g, .access_bytes = 64 };
    cx->hw->l1_bytes = cx->l1 > 0 && cx->l1 <= cx->l2 ? cx->l1 : 0; /* the probe's L1d */
    json_object_set_new(cx->fits, "memory",
        json_pack("{s:s,s:o,s:{s:{s:f,s:f,s:s},s:{s:f,s:f,s:s},s:{s:f,s:f,s:s}},s:o}", "method",
            "ERT plateaus: a new level at a >= 1.25x drop below the running median, a level's "
            "bandwidth the median of its points within +-5%; log-linear between levels",
            "series", series, "model_levels", "local_buffer", "gbs", lb_gbs, "capacity", cx->l2,
            "source", "1-thread triad at L2/2; capacity: probe L2", "global_buffer", "gbs", gb_gbs,
            "capacity", llc, "source",
            "all-core triad at LLC/2 (core_bw: 1-thread); capacity: see capacity_source", "dram",
            "gbs", dram_gbs, "capacity", cx->dram_bytes, "source",
            "all-core triad, last plateau (core_bw: 1-thread triad, last plateau); capacity: "
            "probe memory",
            "heldout", cal_err_json(he, nh, "pooled over the sweeps (time of one pass)")));
    series = NULL;
    {
        json_t *ml = json_object_get(json_object_get(cx->fits, "memory"), "model_levels");
        json_t *gbj = json_object_get(ml, "global_buffer");
        json_object_set_new(gbj, "capacity_source", json_string(llc_src));
        json_object_set_new(gbj, "probe_capacity", json_real(cx->l3));
        if (gb1_gbs > 0)
            json_object_set_new(
                json_object_get(ml, "global_buffer"), "core_gbs", json_real(gb1_gbs));
        if (dram1_gbs > 0)
            json_object_set_new(json_object_get(ml, "dram"), "core_gbs", json_real(dram1_gbs));
        static const char *const lvn[2] = { "global_buffer", "dram" };
        for (int l = 0; l < 2; l++) {
            json_t *o = json_object_get(ml, lvn[l]);
            if (w[l][0] > 0)
                json_object_set_new(o, "write_gbs", json_real(w[l][0]));
            if (w[l][1] > 0)
                json_object_set_new(o, "core_write_gbs", json_real(w[l][1]));
            json_object_set_new(o, "write_source",
                json_string(w[l][0] > 0 ? (l ? "all-core fill, last plateau (core: 1-thread fill)"
                                             : "all-core fill at LLC/2 (core: 1-thread fill)")
                                        : "no fill sweep: half the triad's (read for "
                                          "ownership, then write)"));
        }
    }
fail:
    json_decref(series);
    free(he);
    free(res);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Vector ops                                                         */
/* ------------------------------------------------------------------ */

/* Seconds per row of a row-pass record, rescaled where others were busy. */
static double row_seconds(const comet_results_record *r)
{
    const double med = r->stats.median_s;
    return med > 0 && r->ns_per_row > 0 ? r->ns_per_row * 1e-9 * cal_record_time(r) / med : NAN;
}

/* The median of the matching records' seconds per row at one width (NAN: none). */
static double row_median(
    const comet_results_record *recs, size_t n, const char *op, const char *regime, double width)
{
    double v[16];
    size_t m = 0;
    for (size_t i = 0; i < n && m < 16; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_VECOP || !r->valid || strcmp(r->op, op) || !r->params.regime
            || strcmp(r->params.regime, regime) || r->shape.width != width)
            continue;
        const double t = row_seconds(r);
        if (t > 0)
            v[m++] = t;
    }
    if (!m)
        return NAN;
    gsl_sort(v, 1, m);
    return gsl_stats_median_from_sorted_data(v, 1, m);
}

/* The row passes at every measured width, in cache (the narrow rows of
 * softmax_row / layernorm_row and the epilogue's wide rows from an L2 tile,
 * *_row_store cache), as a table the model interpolates; and the share of
 * the streamed stores the row loop hides: per width, 1 - (streamed - cached)
 * / (the row's bytes at the 1-thread DRAM bandwidth), the median over
 * widths and both ops, within [0, 1]. */
static int fit_row_widths(
    cal_ctx *cx, const comet_results_record *recs, size_t n, json_t *vj, char *err, size_t errlen)
{
    static const char *const narrow[2] = { "softmax_row", "layernorm_row" },
                             *const wide[2] = { "softmax_row_store", "layernorm_row_store" },
                             *const key[2] = { "softmax", "layernorm" };
    const double hz = cx->ghz * 1e9;
    json_t *tab = json_object(), *hid = json_array();
    double hidden[2 * COMET_MODEL_ROW_TAB];
    size_t nh = 0;
    if (!tab || !hid)
        goto nomem;
    for (int o = 0; o < 2; o++) {
        double w[COMET_MODEL_ROW_TAB], c[COMET_MODEL_ROW_TAB];
        int m = 0;
        /* the distinct widths of both record kinds, increasing */
        for (size_t i = 0; i < n; i++) {
            const comet_results_record *r = &recs[i];
            if (r->kind != COMET_RESULTS_VECOP || !r->valid || !r->params.regime
                || strcmp(r->params.regime, "cache")
                || (strcmp(r->op, narrow[o]) && strcmp(r->op, wide[o])) || !(r->shape.width > 0))
                continue;
            int k = 0, dup = 0;
            for (k = 0; k < m; k++)
                dup |= w[k] == r->shape.width;
            if (dup || m == COMET_MODEL_ROW_TAB)
                continue;
            for (k = m; k > 0 && w[k - 1] > r->shape.width; k--)
                w[k] = w[k - 1];
            w[k] = r->shape.width;
            m++;
        }
        for (int k = 0; k < m; k++) {
            double t = row_median(recs, n, narrow[o], "cache", w[k]);
            if (!(t > 0))
                t = row_median(recs, n, wide[o], "cache", w[k]);
            c[k] = t * hz;
            /* a wider row never costs less (noise between two widths) */
            if (k > 0 && !(c[k] > c[k - 1]))
                c[k] = c[k - 1] * (1 + 1e-6);
            const double ts = row_median(recs, n, wide[o], "stream", w[k]),
                         tc = row_median(recs, n, wide[o], "cache", w[k]);
            const double bw = cx->hw->dram.core_bw * hz; /* bytes/s, 1 thread */
            if (ts > 0 && tc > 0 && bw > 0 && nh < 2 * COMET_MODEL_ROW_TAB) {
                const double store = w[k] * sizeof(float) / bw;
                const double h = fmin(fmax(1 - (ts - tc) / store, 0), 1);
                hidden[nh++] = h;
                json_array_append_new(hid,
                    json_pack("{s:s,s:f,s:f,s:f,s:f,s:f}", "op", key[o], "width", w[k],
                        "cached_ns_per_row", tc * 1e9, "streamed_ns_per_row", ts * 1e9,
                        "stores_ns_per_row", store * 1e9, "hidden", h));
            }
        }
        if (m < 2)
            continue;
        for (int k = 0; k < m; k++) {
            cx->hw->row_tab_w[o][k] = w[k];
            cx->hw->row_tab_cycles[o][k] = c[k];
        }
        cx->hw->row_tab_n[o] = m;
        json_t *ws = json_array(), *cs = json_array();
        for (int k = 0; k < m; k++) {
            json_array_append_new(ws, json_real(w[k]));
            json_array_append_new(cs, json_real(c[k]));
        }
        json_object_set_new(
            tab, key[o], json_pack("{s:o,s:o}", "widths", ws, "cycles_per_row", cs));
    }
    json_object_set_new(tab, "method",
        json_string("cycles per row at each width, in cache (softmax_row / layernorm_row, and "
                    "*_row_store from an L2-resident tile into one); the model interpolates "
                    "piecewise-linearly, past the widest point along its last segment"));
    json_object_set_new(vj, "row_pass_widths", tab);
    tab = NULL;
    if (nh) {
        gsl_sort(hidden, 1, nh);
        cx->hw->store_hidden = gsl_stats_median_from_sorted_data(hidden, 1, nh);
        json_object_set_new(vj, "store_hidden",
            json_pack("{s:f,s:o,s:s}", "value", cx->hw->store_hidden, "points", hid, "method",
                "per width: 1 - (streamed - cached) / (the row's bytes at the 1-thread DRAM "
                "bandwidth), within [0, 1]; the median over widths and ops"));
    } else {
        json_decref(hid);
        json_object_set_new(vj, "store_hidden",
            json_string("not measured (softmax_row_store / layernorm_row_store records, cached "
                        "and streamed)"));
    }
    return 0;
nomem:
    json_decref(tab);
    json_decref(hid);
    return comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
}

int cal_fit_vector(
    cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen)
{
    static const char *const bench_ops[] = { "exp", "max", "sum", "sub", "div", "mul", "sqrt" };
    static const char *const regimes[] = { "cache", "stream" };
    int rc = 0;
    double *x = malloc((n + 1) * sizeof(double)), *y = malloc((n + 1) * sizeof(double));
    double cost[7][2];
    json_t *vj = json_object();
    if (!x || !y) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    for (int o = 0; o < 7; o++) {
        json_t *oj = json_object();
        for (int g = 0; g < 2; g++) {
            size_t m = 0;
            double gbs = NAN;
            cost[o][g] = NAN;
            for (size_t i = 0; i < n; i++) {
                const comet_results_record *r = &recs[i];
                if (r->kind != COMET_RESULTS_VECOP || strcmp(r->op, bench_ops[o])
                    || strcmp(r->params.regime, regimes[g]) || r->valid == 0)
                    continue;
                double ne = r->shape.n, t = cal_record_time(r);
                if (ne > 0 && t > 0) {
                    x[m] = ne;
                    y[m++] = t;
                    gbs = r->gbs;
                }
            }
            if (!m)
                continue;
            /* several sizes: the slope of t = t0 + c n; one size: t / n */
            int distinct = 0;
            for (size_t i = 1; i < m; i++)
                distinct |= x[i] != x[0];
            comet_calibrate_line l;
            const char *how = "median time / elements (one size)";
            if (distinct && comet_calibrate_fit_line(x, y, m, &l) == 0 && l.b > 0) {
                cost[o][g] = l.b;
                how = "slope of t = t0 + c n (weighted NNLS)";
            } else {
                for (size_t i = 0; i < m; i++)
                    y[i] /= x[i];
                gsl_sort(y, 1, m);
                cost[o][g] = gsl_stats_median_from_sorted_data(y, 1, m);
            }
            json_object_set_new(oj, regimes[g],
                json_pack("{s:f,s:f,s:o,s:s,s:I}", "ns_per_element", cost[o][g] * 1e9,
                    "cycles_per_element", cost[o][g] * cx->ghz * 1e9, "gbs", cal_jreal(gbs),
                    "method", how, "records", (json_int_t)m));
        }
        json_object_set_new(vj, bench_ops[o], oj);
    }
    /* the model's per-element cycles (in cache: memory traffic is modelled
     * separately); add <- sub (elementwise, like the epilogue), else sum */
    static const int map[COMET_MODEL_NVOP] = { 3, 5, 4, 0, 1, 6 };
    json_t *missing = json_array();
    for (int v = 0; v < COMET_MODEL_NVOP; v++) {
        double c = cost[map[v]][0];
        if (v == COMET_MODEL_VOP_ADD && !(c > 0))
            c = cost[2][0];
        if (c > 0)
            cx->hw->vop_cycles[v] = fmax(c * cx->ghz * 1e9, 1e-6);
        else {
            cx->hw->vop_cycles[v] = 1;
            json_array_append_new(missing, json_string(bench_ops[map[v]]));
        }
    }
    json_object_set_new(vj, "model_mapping",
        json_string("vector.cycles = in-cache cycles per element: add<-sub (sum if absent), "
                    "mul, div, exp, max, sqrt; width 1"));
    json_object_set_new(vj, "not_measured", missing);
    /* The kernels' row passes (softmax and LayerNorm rows of several widths):
     * time per row against width; the intercept is a row's fixed cost, the
     * slope the whole row loop per element in cache. The model charges the
     * slope in place of the sum of the per-op costs for the ops whose rows
     * run these loops; what the per-op sum used to stand in for beside it
     * (the GEMM operands the epilogue evicts) is a term of its own. */
    static const char *const rop[3] = { "softmax_row", "layernorm_row", "dist_layernorm_row" };
    for (int o = 0; o < 3; o++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++) {
            const comet_results_record *r = &recs[i];
            if (r->kind != COMET_RESULTS_VECOP || strcmp(r->op, rop[o]) || r->valid == 0)
                continue;
            /* ns per row of the median, rescaled where others were busy */
            const double med = r->stats.median_s;
            double w = r->shape.width, t = med > 0 ? r->ns_per_row * cal_record_time(r) / med : 0;
            if (w > 0 && t > 0) {
                x[m] = w;
                y[m++] = t * 1e-9;
            }
        }
        comet_calibrate_line rl;
        int distinct = 0;
        for (size_t i = 1; i < m; i++)
            distinct |= x[i] != x[0];
        const char *key = o == 2 ? "dist_layernorm_row_pass"
            : o                  ? "layernorm_row_pass"
                                 : "row_overhead";
        if (!distinct || comet_calibrate_fit_line(x, y, m, &rl) != 0) {
            json_object_set_new(
                vj, key, json_sprintf("not measured (%s records at two or more widths)", rop[o]));
            continue;
        }
        const double per_row = fmax(rl.a, 0) * cx->ghz * 1e9,
                     per_elem = fmax(rl.b, 0) * cx->ghz * 1e9;
        *(o == 2    ? &cx->hw->dist_ln_row_cycles
                : o ? &cx->hw->ln_row_cycles
                    : &cx->hw->row_cycles)
            = per_row;
        *(o == 2    ? &cx->hw->dist_ln_elem_cycles
                : o ? &cx->hw->ln_row_elem_cycles
                    : &cx->hw->row_elem_cycles)
            = per_elem;
        json_object_set_new(vj, key,
            json_pack("{s:s,s:f,s:f,s:f,s:f,s:I,s:s}", "records", rop[o], "cycles_per_row", per_row,
                "cycles_per_element", per_elem, "ns_per_row", fmax(rl.a, 0) * 1e9, "ns_per_element",
                fmax(rl.b, 0) * 1e9, "points", (json_int_t)m, "method",
                "time per row against row width (weighted NNLS): the intercept is charged per "
                "row (fused attention: per row per KV tile), the slope per element of the ops "
                "whose rows run this loop (vector.row_elem_cycles / ln_row_elem_cycles; "
                "dist_ln_*: the fused distributed LayerNorm's local passes)"));
    }
    if ((rc = fit_row_widths(cx, recs, n, vj, err, errlen)))
        goto fail;
    json_object_set_new(cx->fits, "vector", vj);
    vj = NULL;
fail:
    json_decref(vj);
    free(x);
    free(y);
    return rc;
}
