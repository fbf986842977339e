/* GEMM efficiency grid of a profile: measured sgemm efficiency on the
 * (threads, M, N, K) grid the bench swept, a saturating law for outside
 * it, and held-out error from coarser sub-grids predicted by the model's
 * own evaluator (comet_model_gemm_eff). */
#include "calibrate_internal.h"
#include "comet_model.h"
#include "comet_results.h"

#include "comet_util.h"

#include <errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Adds v to the sorted axis ax (n entries, at most max). -1 when full. */
static int axis_add(double *ax, int *n, int max, double v)
{
    for (int i = 0; i < *n; i++)
        if (ax[i] == v)
            return 0;
    if (*n >= max)
        return -1;
    int i = *n;
    while (i > 0 && ax[i - 1] > v) {
        ax[i] = ax[i - 1];
        i--;
    }
    ax[i] = v;
    (*n)++;
    return 0;
}

/* A valid sgemm record of variant "blas" (OpenBLAS) or "fused" (the GEMM
 * inside the fused kernels, timed with their gemm_only knob). */
static int is_sgemm(const comet_results_record *r, const char *variant)
{
    return r->kind == COMET_RESULTS_KERNEL && !strcmp(r->op, "sgemm")
        && !strcmp(r->variant, variant) && r->valid != 0;
}

#define IDX(g, t, i, j, k) ((((size_t)(t) * (g)->nm + (i)) * (g)->nn + (j)) * (g)->nk + (k))

/* Predicted seconds of a GEMM at efficiency eff. */
static double gemm_time(const cal_ctx *cx, double M, double N, double K, double th, double eff)
{
    return 2 * M * N * K / (eff * cx->peak * th * cx->ghz * 1e9);
}

/* Held-out along one axis of one thread count: the sub-grid keeps the even
 * indices and the last; the others are predicted by interpolating it. */
static size_t heldout_axis(
    const cal_ctx *cx, const comet_model_grid *g, const double *meas, int t, int axis, double *errs)
{
    const int na = axis == 0 ? g->nm : axis == 1 ? g->nn : g->nk;
    const double *ax = axis == 0 ? g->M : axis == 1 ? g->N : g->K;
    int keep[COMET_MODEL_GRID_MAX], nk = 0;
    size_t ne = 0;
    if (na < 3)
        return 0;
    for (int i = 0; i < na; i++)
        if (i % 2 == 0 || i == na - 1)
            keep[nk++] = i;
    comet_model_hw tmp;
    memset(&tmp, 0, sizeof tmp);
    comet_model_grid *s = &tmp.grid;
    tmp.gemm_eff = 1;
    s->nt = 1;
    s->threads[0] = g->threads[t];
    s->nm = axis == 0 ? nk : g->nm;
    s->nn = axis == 1 ? nk : g->nn;
    s->nk = axis == 2 ? nk : g->nk;
    memcpy(s->M, g->M, sizeof g->M);
    memcpy(s->N, g->N, sizeof g->N);
    memcpy(s->K, g->K, sizeof g->K);
    double *sub = axis == 0 ? s->M : axis == 1 ? s->N : s->K;
    for (int i = 0; i < nk; i++)
        sub[i] = ax[keep[i]];
    s->emax = g->emax;
    s->f_half = 0; /* inside the sub-grid: interpolation only */
    s->values = malloc((size_t)s->nm * s->nn * s->nk * sizeof(double));
    if (!s->values)
        return 0;
    for (int i = 0; i < s->nm; i++)
        for (int j = 0; j < s->nn; j++)
            for (int k = 0; k < s->nk; k++) {
                int fi = axis == 0 ? keep[i] : i, fj = axis == 1 ? keep[j] : j,
                    fk = axis == 2 ? keep[k] : k;
                s->values[IDX(s, 0, i, j, k)] = g->values[IDX(g, t, fi, fj, fk)];
            }
    for (int h = 1; h < na - 1; h++) {
        if (h % 2 == 0)
            continue; /* kept */
        for (int i = 0; i < (axis == 0 ? 1 : g->nm); i++)
            for (int j = 0; j < (axis == 1 ? 1 : g->nn); j++)
                for (int k = 0; k < (axis == 2 ? 1 : g->nk); k++) {
                    int fi = axis == 0 ? h : i, fj = axis == 1 ? h : j, fk = axis == 2 ? h : k;
                    double m = meas[IDX(g, t, fi, fj, fk)];
                    if (!(m > 0))
                        continue; /* a hole: nothing measured to compare with */
                    double M = g->M[fi], N = g->N[fj], K = g->K[fk], th = g->threads[t];
                    double e = comet_model_gemm_eff(&tmp, M, N, K, th);
                    errs[ne++] = (gemm_time(cx, M, N, K, th, e) - m) / m;
                }
    }
    free(s->values);
    return ne;
}

/* A grid point the bench did not time (a set's max_gflop skips the cube's
 * far corner): the efficiency of the largest measured GEMM (by flops) that
 * is no larger on every axis at the same thread count, the plateau a GEMM
 * past the measured ones stays on (model/hw.c holds the grid's edge value
 * above it for the same reason). 0 when none is below it. */
static double plateau_value(
    const comet_model_grid *g, const double *meas, int t, int a, int b, int c)
{
    double best_f = 0, sum = 0;
    int n = 0;
    for (int i = 0; i <= a; i++)
        for (int j = 0; j <= b; j++)
            for (int k = 0; k <= c; k++) {
                const size_t x = IDX(g, t, i, j, k);
                const double f = g->M[i] * g->N[j] * g->K[k];
                if (!(meas[x] > 0) || f < best_f * (1 - 1e-12)) /* measured: values[x] set */
                    continue;
                if (f > best_f * (1 + 1e-12)) { /* larger: starts the set again */
                    best_f = f;
                    sum = 0;
                    n = 0;
                }
                sum += g->values[x]; /* equal flops (1024^3, 4096^2 x 64): their mean */
                n++;
            }
    return n ? sum / n : 0;
}

/* One efficiency grid from the records of one variant into g, its fit
 * section under key in cx->fits. fused: absent records are not an error and
 * the summary figures are not touched. */
static int fit_grid(
    cal_ctx *cx, const comet_results_record *recs, size_t n, int fused, char *err, size_t errlen)
{
    comet_model_grid *g = fused ? &cx->hw->fused_grid : &cx->hw->grid;
    const char *variant = fused ? "fused" : "blas";
    const double lim = fused ? 4.0 : 1.5; /* the loader's bounds (model/hw.c) */
    double *meas = NULL, *F = NULL, *E = NULL, *he = NULL, *tmp = NULL;
    size_t ng = 0;
    int rc = 0;
    memset(g, 0, sizeof *g);
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (!is_sgemm(r, variant))
            continue;
        double th = r->threads, M = r->shape.M, N = r->shape.N, K = r->shape.K;
        if (!(th >= 1) || !(M >= 1) || !(N >= 1) || !(K >= 1))
            continue;
        if (axis_add(g->threads, &g->nt, 4, th) || axis_add(g->M, &g->nm, COMET_MODEL_GRID_MAX, M)
            || axis_add(g->N, &g->nn, COMET_MODEL_GRID_MAX, N)
            || axis_add(g->K, &g->nk, COMET_MODEL_GRID_MAX, K)) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "calibrate: the sgemm records span more than %d values on an axis (or more "
                "than 4 thread counts); calibrate from one grid sweep",
                COMET_MODEL_GRID_MAX);
            goto fail;
        }
        ng++;
    }
    if (!ng && fused)
        goto fail; /* optional: fused mappings then use the sgemm grid */
    if (!ng) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "calibrate: no sgemm records in the results (run 'comet bench kernels' or "
            "'comet calibrate' without --from)");
        goto fail;
    }
    const size_t total = (size_t)g->nt * g->nm * g->nn * g->nk;
    g->values = calloc(total, sizeof(double));
    meas = calloc(total, sizeof(double));
    F = malloc(total * sizeof(double));
    E = malloc(total * sizeof(double));
    he = malloc(3 * total * sizeof(double) + 1);
    tmp = malloc(ng * sizeof(double));
    if (!g->values || !meas || !F || !E || !he || !tmp) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    /* one value per grid point: the median of the times measured there
     * (several passes or runs; each its median, or its best sample where
     * other tenants were busy beside it: cal_record_time) */
    size_t nmeas = 0;
    for (int t = 0; t < g->nt; t++)
        for (int a = 0; a < g->nm; a++)
            for (int b = 0; b < g->nn; b++)
                for (int c = 0; c < g->nk; c++) {
                    size_t m = 0;
                    for (size_t i = 0; i < n; i++) {
                        const comet_results_record *r = &recs[i];
                        if (!is_sgemm(r, variant) || r->threads != g->threads[t]
                            || r->shape.M != g->M[a] || r->shape.N != g->N[b]
                            || r->shape.K != g->K[c])
                            continue;
                        double s = cal_record_time(r);
                        if (s > 0)
                            tmp[m++] = s;
                    }
                    if (!m)
                        continue;
                    gsl_sort(tmp, 1, m);
                    double t_med = gsl_stats_median_from_sorted_data(tmp, 1, m);
                    size_t k = IDX(g, t, a, b, c);
                    meas[k] = t_med;
                    g->values[k] = 2 * g->M[a] * g->N[b] * g->K[c]
                        / (t_med * cx->peak * g->threads[t] * cx->ghz * 1e9);
                    F[nmeas] = 2 * g->M[a] * g->N[b] * g->K[c];
                    E[nmeas++] = g->values[k];
                }
    /* the saturating law for outside the grid (and for holes in it) */
    int law_ok = comet_calibrate_fit_saturating(F, E, nmeas, &g->emax, &g->f_half) == 0;
    double law_r2 = NAN;
    if (!law_ok) { /* no saturation visible: flat at the median efficiency */
        memcpy(tmp, E, nmeas * sizeof(double));
        gsl_sort(tmp, 1, nmeas);
        g->emax = gsl_stats_median_from_sorted_data(tmp, 1, nmeas);
        g->f_half = 0;
    } else {
        double ss = 0, sr = 0, mean = 0;
        for (size_t i = 0; i < nmeas; i++)
            mean += E[i] / (double)nmeas;
        for (size_t i = 0; i < nmeas; i++) {
            double f = g->emax * F[i] / (F[i] + g->f_half);
            sr += (E[i] - f) * (E[i] - f);
            ss += (E[i] - mean) * (E[i] - mean);
        }
        law_r2 = ss > 0 ? 1 - sr / ss : 1;
    }
    size_t holes = 0, plateau = 0, clamped = 0;
    /* Rows the bench times at one thread only (small_m: M below the cube):
     * at T threads, the 1-thread value times what T threads deliver against
     * one at the smallest row both measured, same N and K (the rank's threads
     * split such a GEMM by columns, each at one thread's rate, on the share
     * of a core the host gives each). */
    int t1 = -1;
    for (int t = 0; t < g->nt; t++)
        if (g->threads[t] == 1)
            t1 = t;
    for (int t = 0; t < g->nt && t1 >= 0; t++)
        for (int b = 0; b < g->nn; b++)
            for (int c = 0; c < g->nk; c++) {
                int ar = -1; /* the smallest row measured at both */
                for (int a = 0; a < g->nm && ar < 0; a++)
                    if (meas[IDX(g, t, a, b, c)] > 0 && meas[IDX(g, t1, a, b, c)] > 0)
                        ar = a;
                for (int a = 0; ar > 0 && t != t1 && a < ar; a++) {
                    const size_t k = IDX(g, t, a, b, c), k1 = IDX(g, t1, a, b, c);
                    if (!(g->values[k] > 0) && meas[k1] > 0)
                        g->values[k] = g->values[k1] * g->values[IDX(g, t, ar, b, c)]
                            / g->values[IDX(g, t1, ar, b, c)];
                }
            }
    for (int t = 0; t < g->nt; t++)
        for (int a = 0; a < g->nm; a++)
            for (int b = 0; b < g->nn; b++)
                for (int c = 0; c < g->nk; c++) {
                    size_t k = IDX(g, t, a, b, c);
                    if (!(g->values[k] > 0)) {
                        const double fill = plateau_value(g, meas, t, a, b, c);
                        const double Fk = 2 * g->M[a] * g->N[b] * g->K[c];
                        const double law
                            = g->f_half > 0 ? g->emax * Fk / (Fk + g->f_half) : g->emax;
                        g->values[k] = fill > 0 ? fill : law;
                        plateau += fill > 0;
                        holes += !(fill > 0);
                    }
                    if (g->values[k] > lim) { /* the schema's bound: clock under-reported */
                        g->values[k] = lim;
                        clamped++;
                    }
                }
    if (g->emax > lim)
        g->emax = lim;
    /* flat efficiency for consumers without the grid: the median */
    memcpy(tmp, E, nmeas * sizeof(double));
    gsl_sort(tmp, 1, nmeas);
    if (!fused)
        cx->hw->gemm_eff = fmin(1.0, gsl_stats_median_from_sorted_data(tmp, 1, nmeas));

    /* held-out: coarser sub-grids along each axis with >= 3 points */
    size_t nh = 0;
    const char *method
        = "per thread count and axis with >= 3 points: the sub-grid of even-indexed points "
          "(and the last) is interpolated by the model's evaluator at the odd interior points";
    for (int t = 0; t < g->nt; t++)
        for (int axis = 0; axis < 3; axis++)
            nh += heldout_axis(cx, g, meas, t, axis, he + nh);
    if (nh == 0) {
        /* too coarse a grid: leave-one-out of the saturating law instead */
        method = "grid has < 3 points per axis: leave-one-out, each point predicted by the "
                 "saturating law fitted on the others";
        double *F2 = malloc(nmeas * sizeof(double)), *E2 = malloc(nmeas * sizeof(double));
        if (!F2 || !E2) {
            free(F2);
            free(E2);
            rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
            goto fail;
        }
        for (size_t i = 0; i < nmeas && nmeas > 2; i++) {
            size_t m = 0;
            for (size_t j = 0; j < nmeas; j++)
                if (j != i) {
                    F2[m] = F[j];
                    E2[m++] = E[j];
                }
            double em, fh;
            if (comet_calibrate_fit_saturating(F2, E2, m, &em, &fh) != 0)
                continue;
            double e = em * F[i] / (F[i] + fh);
            he[nh++] = E[i] / e - 1; /* time ratio error = inverse efficiency ratio */
        }
        free(F2);
        free(E2);
    }
    /* the grid's several-thread points timed beside other work: co-located
     * ranks' share of a core (comet_model_gms_core_share) reads them */
    size_t loaded = 0, multi = 0;
    for (size_t i = 0; i < n; i++)
        if (is_sgemm(&recs[i], variant) && recs[i].threads > 1) {
            multi++;
            loaded += recs[i].load.busy_during > COMET_RESULTS_BUSY_MAX;
        }
    if (!fused) {
        /* flagged when most of them were (a quiet machine's own daemons
         * touch a few) */
        cx->sum.gemm_loaded_multi = 2 * loaded > multi ? loaded : 0;
        cx->sum.gemm_core_share
            = g->nt >= 2 ? comet_model_gms_core_share(cx->hw, g->threads[g->nt - 1]) : 1;
        cx->sum.gemm_points = nmeas;
        cx->sum.gemm_heldout = nh;
        comet_calibrate_err_stats(he, nh, &cx->sum.gemm_med, &cx->sum.gemm_p90);
    }
    json_t *gj = json_object();
    json_object_set_new(gj, "records", json_integer((json_int_t)ng));
    json_object_set_new(gj, "grid_points", json_integer((json_int_t)nmeas));
    json_object_set_new(gj, "multi_thread_records", json_integer((json_int_t)multi));
    json_object_set_new(gj, "multi_thread_records_loaded", json_integer((json_int_t)loaded));
    json_object_set_new(gj, "grid_holes_filled_by_law", json_integer((json_int_t)holes));
    json_object_set_new(gj, "grid_holes_filled_by_plateau", json_integer((json_int_t)plateau));
    json_object_set_new(gj, "clamped_to_bound", json_integer((json_int_t)clamped));
    json_object_set_new(gj, "peak_flops_per_cycle_per_core", json_real(cx->peak));
    json_object_set_new(gj, "efficiency_definition",
        json_string("2MNK / (median time x peak_flops_per_cycle x threads x clock)"));
    json_object_set_new(gj, "interpolation",
        json_string("model: trilinear in log M, log N, log K at the nearest thread count; "
                    "exact at grid points, monotone between"));
    json_object_set_new(gj, "law",
        json_pack("{s:s,s:o,s:o,s:o,s:b}", "form", "eff = emax F / (F + f_half), F = 2MNK", "emax",
            cal_jreal(g->emax), "f_half", cal_jreal(g->f_half), "r2", cal_jreal(law_r2), "fitted",
            law_ok));
    json_object_set_new(gj, "heldout", cal_err_json(he, nh, method));
    json_object_set_new(gj, "variant",
        json_string(fused ? "fused: the GEMM inside the fused kernels (gemm_only: row blocks "
                            "into the L2 tile, no epilogue), used by fused mappings of this machine"
                          : "blas: OpenBLAS cblas_sgemm"));
    json_object_set_new(cx->fits, fused ? "fused_gemm" : "gemm", gj);
fail:
    free(meas);
    free(F);
    free(E);
    free(he);
    free(tmp);
    return rc;
}

/* A parallel region's fork and join at the fused grid's largest thread
 * count T: each grid point at T threads against the same point at one
 * thread over the busiest thread's rows (the kernel's own row blocks and
 * schedule), t_T = slope x t_1 x rows_T / M + region, by non-negative
 * least squares weighted 1/t^2 (the small points, where the region is a
 * large share, fix the intercept; the slope takes the large ones' shared
 * caches and memory). The gemm_only call opens one region. */
static void fit_parallel_region(cal_ctx *cx, const comet_results_record *recs, size_t n)
{
    const comet_model_grid *g = &cx->hw->fused_grid;
    if (!g->values || g->nt < 2 || !(g->threads[g->nt - 1] > 1))
        return;
    const double T = g->threads[g->nt - 1];
    double *X = malloc(2 * n * sizeof(double) + 1), *y = malloc(n * sizeof(double) + 1);
    size_t m = 0;
    for (size_t i = 0; X && y && i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (!is_sgemm(r, "fused") || r->threads != T || !(r->params.tile_m >= 1))
            continue;
        double t1 = 0;
        for (size_t j = 0; j < n && !(t1 > 0); j++) {
            const comet_results_record *q = &recs[j];
            if (is_sgemm(q, "fused") && q->threads == 1 && q->shape.M == r->shape.M
                && q->shape.N == r->shape.N && q->shape.K == r->shape.K)
                t1 = cal_record_time(q);
        }
        const double tT = cal_record_time(r), M = r->shape.M;
        if (!(t1 > 0) || !(tT > 0) || !(M >= 1))
            continue;
        X[2 * m] = 1;
        /* the busiest thread's own rows: a contiguous share of M
         * (the kernels' kern_thread_rows), ceil(M / T) at most */
        X[2 * m + 1] = t1 * ceil(M / T) / M;
        y[m++] = tT;
    }
    comet_calibrate_lsq f;
    if (m >= 4 && comet_calibrate_nnls(X, y, NULL, m, 2, &f) == 0
        && f.state[0] == COMET_CALIBRATE_FITTED && f.coef[0] > 0) {
        cx->hw->par_region_cycles = f.coef[0] * cx->ghz * 1e9;
        json_t *fg = json_object_get(cx->fits, "fused_gemm");
        if (json_is_object(fg))
            json_object_set_new(fg, "parallel_region",
                json_pack("{s:f,s:f,s:f,s:f,s:i,s:f,s:s}", "threads", T, "seconds", f.coef[0],
                    "cycles", cx->hw->par_region_cycles, "slope",
                    f.state[1] == COMET_CALIBRATE_FITTED ? f.coef[1] : 0.0, "points", (int)m, "r2",
                    f.r2, "model",
                    "t_T = slope x t_1 x busiest thread's rows / M + region (weights 1/t^2)"));
    }
    free(X);
    free(y);
}

/* The hot sgemm record (variant blas) at r's shape and thread count. */
static const comet_results_record *hot_twin(
    const comet_results_record *recs, size_t n, const comet_results_record *r)
{
    for (size_t j = 0; j < n; j++)
        if (is_sgemm(&recs[j], "blas") && recs[j].threads == r->threads
            && recs[j].shape.M == r->shape.M && recs[j].shape.N == r->shape.N
            && recs[j].shape.K == r->shape.K)
            return &recs[j];
    return NULL;
}

/* Index of v on the axis (exact), or -1. */
static int axis_find(const double *ax, int n, double v)
{
    for (int i = 0; i < n; i++)
        if (ax[i] == v)
            return i;
    return -1;
}

/* The cold reads: what reading B from DRAM adds to the hot grid at the
 * small rows (blas_cold less blas, one thread), per byte of B, on the
 * (N, K) points both measured; a point neither measured takes the nearest
 * measured one's (log N, log K). Held out: each measured point predicted
 * from the mean of its measured neighbours along N and K. */
static void fit_cold_read(cal_ctx *cx, const comet_results_record *recs, size_t n)
{
    comet_model_hw *hw = cx->hw;
    double rows = INFINITY, clk = cx->ghz * 1e9;
    hw->cold_nn = hw->cold_nk = 0;
    for (size_t i = 0; i < n; i++)
        if (is_sgemm(&recs[i], "blas_cold") && recs[i].threads == 1 && recs[i].shape.M < rows)
            rows = recs[i].shape.M;
    if (!isfinite(rows) || !(clk > 0))
        return;
    int nn = 0, nk = 0;
    double N[COMET_MODEL_GRID_MAX], K[COMET_MODEL_GRID_MAX];
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (!is_sgemm(r, "blas_cold") || r->threads != 1 || r->shape.M != rows
            || !hot_twin(recs, n, r))
            continue;
        if (axis_add(N, &nn, COMET_MODEL_GRID_MAX, r->shape.N)
            || axis_add(K, &nk, COMET_MODEL_GRID_MAX, r->shape.K))
            return; /* more than one sweep's axes: not a table */
    }
    if (nn < 1 || nk < 1)
        return;
    double v[COMET_MODEL_GRID_MAX * COMET_MODEL_GRID_MAX];
    double tc[COMET_MODEL_GRID_MAX * COMET_MODEL_GRID_MAX],
        th[COMET_MODEL_GRID_MAX * COMET_MODEL_GRID_MAX];
    int have[COMET_MODEL_GRID_MAX * COMET_MODEL_GRID_MAX] = { 0 }, measured = 0, filled = 0;
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i], *h;
        if (!is_sgemm(r, "blas_cold") || r->threads != 1 || r->shape.M != rows
            || !(h = hot_twin(recs, n, r)))
            continue;
        const int a = axis_find(N, nn, r->shape.N), b = axis_find(K, nk, r->shape.K);
        const double t_c = cal_record_time(r), t_h = cal_record_time(h);
        if (a < 0 || b < 0 || !(t_c > 0) || !(t_h > 0))
            continue;
        /* faster cold than hot is the two records' noise: nothing added */
        v[a * nk + b] = fmax(0, t_c - t_h) * clk / (4.0 * r->shape.N * r->shape.K);
        tc[a * nk + b] = t_c;
        th[a * nk + b] = t_h;
        have[a * nk + b] = 1;
        measured++;
    }
    if (!measured)
        return;
    for (int a = 0; a < nn; a++)
        for (int b = 0; b < nk; b++) {
            if (have[a * nk + b])
                continue;
            double best = INFINITY;
            for (int c = 0; c < nn * nk; c++) {
                if (have[c] != 1)
                    continue;
                const double dn = log(N[c / nk] / N[a]), dk = log(K[c % nk] / K[b]),
                             d2 = dn * dn + dk * dk;
                if (d2 < best) {
                    best = d2;
                    v[a * nk + b] = v[c];
                }
            }
            have[a * nk + b] = 2;
            filled++;
        }
    double he[COMET_MODEL_GRID_MAX * COMET_MODEL_GRID_MAX];
    size_t nh = 0;
    for (int a = 0; a < nn; a++)
        for (int b = 0; b < nk; b++) {
            if (have[a * nk + b] != 1)
                continue;
            double sum = 0;
            int m = 0;
            const int nb[4][2] = { { a - 1, b }, { a + 1, b }, { a, b - 1 }, { a, b + 1 } };
            for (int q = 0; q < 4; q++) {
                const int x = nb[q][0], y = nb[q][1];
                if (x >= 0 && x < nn && y >= 0 && y < nk && have[x * nk + y] == 1) {
                    sum += v[x * nk + y];
                    m++;
                }
            }
            if (!m)
                continue;
            const double pred = th[a * nk + b] + sum / m * 4.0 * N[a] * K[b] / clk;
            he[nh++] = fabs(pred - tc[a * nk + b]) / tc[a * nk + b];
        }
    hw->cold_rows = rows;
    hw->cold_nn = nn;
    hw->cold_nk = nk;
    memcpy(hw->cold_N, N, sizeof N);
    memcpy(hw->cold_K, K, sizeof K);
    memcpy(hw->cold_cpb, v, (size_t)nn * nk * sizeof *v);
    json_t *j = json_pack("{s:f,s:i,s:i,s:s,s:s}", "rows", rows, "points", measured,
        "holes_filled_by_nearest", filled, "method",
        "(blas_cold - blas) x clock / (4 N K): the cycles per byte of B that reading it from "
        "DRAM adds to the hot grid, one thread (negative: 0)",
        "model",
        "a CPU rank's GEMM adds its weights' bytes x this, bilinear in log N, log K "
        "(clamped), where the DRAM rate stood");
    json_object_set_new(j, "heldout",
        cal_err_json(he, nh,
            "each measured point's cold time from the mean of its measured "
            "neighbours along N and K"));
    json_object_set_new(cx->fits, "gemm_cold_read", j);
}

/* A decode step's attention with its KV cache in DRAM: the fused_cold
 * attention records (one query a head, one thread), cycles per byte of K
 * and V over all of them (total time / total bytes). Held out: each
 * record from the others'. */
static void fit_cold_gemv(cal_ctx *cx, const comet_results_record *recs, size_t n)
{
    double T = 0, B = 0, t[64], b[64], clk = cx->ghz * 1e9;
    size_t m = 0;
    cx->hw->cold_gemv_cpb = 0;
    for (size_t i = 0; i < n && m < 64; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_KERNEL || strcmp(r->op, "attention")
            || strcmp(r->variant, "fused_cold") || r->valid == 0 || r->threads != 1
            || r->shape.Lq != 1)
            continue;
        const double by = 2.0 * 4.0 * r->shape.B * r->shape.H * r->shape.Lk * r->shape.d,
                     tt = cal_record_time(r);
        if (!(by > 0) || !(tt > 0))
            continue;
        t[m] = tt;
        b[m++] = by;
        T += tt;
        B += by;
    }
    if (!m || !(clk > 0))
        return;
    double he[64];
    size_t nh = 0;
    for (size_t i = 0; m > 1 && i < m; i++)
        he[nh++] = fabs((T - t[i]) / (B - b[i]) * b[i] - t[i]) / t[i];
    cx->hw->cold_gemv_cpb = T / B * clk;
    json_t *j = json_pack("{s:f,s:f,s:i,s:s}", "cycles_per_byte", cx->hw->cold_gemv_cpb, "gbs",
        B / T / 1e9, "records", (int)m, "method",
        "fused attention of one query a head (its GEMV path), K and V cycled through twice the "
        "LLC, one thread: total time / total bytes of K and V");
    json_object_set_new(
        j, "heldout", cal_err_json(he, nh, "each record's time from the other records' rate"));
    json_object_set_new(cx->fits, "gemv_cold", j);
}

int cal_fit_gemm(cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen)
{
    int rc = fit_grid(cx, recs, n, 0, err, errlen);
    if (rc)
        return rc;
    fit_cold_read(cx, recs, n);
    fit_cold_gemv(cx, recs, n);
    if ((rc = fit_grid(cx, recs, n, 1, err, errlen)) || !cx->hw->fused_grid.nt)
        return rc;
    /* The fused kernels' micro-tile (comet_results_micro_tile_rows): the AVX-512 tile
     * with the AVX2 tile as its edge where they ran AVX-512, else the AVX2
     * tile. Which ISA they ran is the
     * vector-op records' variant (the kernels' own switch, so
     * COMET_KERNELS_NO_AVX512 at measuring time is seen). */
    int avx512 = 0, seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind == COMET_RESULTS_VECOP) {
            seen = 1;
            avx512 |= !strcmp(recs[i].variant, "avx512");
        }
    }
    int edge = 0;
    const int rows = comet_results_micro_tile_rows(avx512 ? "avx512" : "avx2", &edge);
    cx->hw->fused_micro_rows = rows;
    cx->hw->fused_micro_edge = edge;
    fit_parallel_region(cx, recs, n);
    json_t *fg = json_object_get(cx->fits, "fused_gemm");
    if (json_is_object(fg))
        json_object_set_new(fg, "micro_tile",
            json_pack("{s:i,s:i,s:s}", "rows", rows, "edge", edge, "source",
                seen ? "the vector-op records' ISA (comet_kernels.h tile rows for it)"
                     : "no vector-op records: the AVX2 tile assumed"));
    return 0;
}
