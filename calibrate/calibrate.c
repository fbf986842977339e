/* Calibration fits (GSL) and profile construction. */
#include "comet_calibrate.h"

#include "comet_util.h"

#include <errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int comet_calibrate_fit_line(const double *x, const double *y, size_t n, comet_calibrate_line *out)
{
    int rc = 0;
    double *w = NULL;
    memset(out, 0, sizeof *out);
    if (!x || !y || n < 2)
        return -EINVAL;
    w = malloc(n * sizeof(double));
    if (!w)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        if (!(y[i] > 0) || !isfinite(x[i])) {
            rc = -EINVAL;
            goto fail;
        }
        w[i] = 1.0 / (y[i] * y[i]);
    }
    double c0, c1, cov00, cov01, cov11, chisq;
    gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &chisq);
    if (c0 < 0) { /* active set: intercept pinned at 0, refit the slope */
        c0 = 0;
        gsl_fit_wmul(x, 1, w, 1, y, 1, n, &c1, &cov11, &chisq);
    }
    if (c1 < 0) { /* slope pinned at 0: weighted mean */
        c1 = 0;
        c0 = gsl_stats_wmean(w, 1, y, 1, n);
    }
    /* weighted R^2 */
    double ym = gsl_stats_wmean(w, 1, y, 1, n), ss = 0, sr = 0;
    for (size_t i = 0; i < n; i++) {
        double f = c0 + c1 * x[i];
        sr += w[i] * (y[i] - f) * (y[i] - f);
        ss += w[i] * (y[i] - ym) * (y[i] - ym);
    }
    out->a = c0;
    out->b = c1;
    out->r2 = ss > 0 ? 1 - sr / ss : 1;
    out->n = n;
fail:
    free(w);
    return rc;
}

static double line_err(const comet_calibrate_line *l, const double *x, const double *y, size_t n)
{
    double e = 0;
    for (size_t i = 0; i < n; i++) {
        double r = (l->a + l->b * x[i] - y[i]) / y[i];
        e += r * r;
    }
    return e;
}

int comet_calibrate_fit_hockney(
    const double *x, const double *y, size_t n, comet_calibrate_hockney *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    if ((rc = comet_calibrate_fit_line(x, y, n, &out->lo)) != 0)
        return rc;
    out->hi = out->lo;
    double best = line_err(&out->lo, x, y, n);
    /* a protocol switch shows as a second line: try every split with at
     * least 3 points per side and keep it if it halves the error */
    for (size_t s = 3; s + 3 <= n; s++) {
        comet_calibrate_line a, b;
        if (comet_calibrate_fit_line(x, y, s, &a)
            || comet_calibrate_fit_line(x + s, y + s, n - s, &b))
            continue;
        double e = line_err(&a, x, y, s) + line_err(&b, x + s, y + s, n - s);
        if (e < 0.5 * best) {
            best = e;
            out->lo = a;
            out->hi = b;
            out->breakpoint = x[s];
        }
    }
    return 0;
}

double comet_calibrate_hockney_eval(const comet_calibrate_hockney *h, double x)
{
    const comet_calibrate_line *l = (h->breakpoint > 0 && x >= h->breakpoint) ? &h->hi : &h->lo;
    return l->a + l->b * x;
}

int comet_calibrate_plateaus(
    const double *size, const double *bw, size_t n, double *level_bw, double *level_size, int max)
{
    int nl = 0;
    size_t start = 0;
    (void)size;
    if (!n || max < 1)
        return 0;
    for (size_t i = 1; i <= n; i++) {
        int split = i == n;
        if (!split) {
            /* running median of the current run */
            double tmp[256];
            size_t m = i - start < 256 ? i - start : 256;
            memcpy(tmp, bw + i - m, m * sizeof(double));
            gsl_sort(tmp, 1, m);
            double med = gsl_stats_median_from_sorted_data(tmp, 1, m);
            split = bw[i] * 1.25 <= med;
        }
        if (split) {
            double tmp[256];
            size_t m = i - start < 256 ? i - start : 256;
            memcpy(tmp, bw + start, m * sizeof(double));
            gsl_sort(tmp, 1, m);
            if (nl < max) {
                level_bw[nl] = gsl_stats_median_from_sorted_data(tmp, 1, m);
                level_size[nl] = size[i - 1];
                nl++;
            }
            start = i;
        }
    }
    return nl;
}

int comet_calibrate_fit_saturating(
    const double *F, const double *eff, size_t n, double *emax, double *f_half)
{
    double *x = malloc(n * sizeof(double)), *y = malloc(n * sizeof(double));
    comet_calibrate_line l;
    int rc = -ENOMEM;
    if (!x || !y)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        x[i] = 1.0 / F[i];
        y[i] = 1.0 / eff[i];
    }
    if ((rc = comet_calibrate_fit_line(x, y, n, &l)) != 0)
        goto fail;
    *emax = l.a > 0 ? 1.0 / l.a : 1.0;
    if (*emax > 1.0)
        *emax = 1.0;
    *f_half = l.b * *emax;
fail:
    free(x);
    free(y);
    return rc;
}

void comet_calibrate_err_stats(const double *err, size_t n, double *median, double *p90)
{
    *median = *p90 = NAN;
    if (!n)
        return;
    double *t = malloc(n * sizeof(double));
    if (!t)
        return;
    for (size_t i = 0; i < n; i++)
        t[i] = fabs(err[i]);
    gsl_sort(t, 1, n);
    *median = gsl_stats_median_from_sorted_data(t, 1, n);
    *p90 = gsl_stats_quantile_from_sorted_data(t, 1, n, 0.9);
    free(t);
}

/* ------------------------------------------------------------------ */
/* Profile                                                             */
/* ------------------------------------------------------------------ */

#define jnum comet_util_jnum

#define jstr comet_util_jstr

static int add_unique(double *ax, int *n, int max, double v)
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

static int axis_index(const double *ax, int n, double v)
{
    for (int i = 0; i < n; i++)
        if (ax[i] == v)
            return i;
    return -1;
}

static json_t *err_json(const double *e, size_t n)
{
    double med, p90;
    comet_calibrate_err_stats(e, n, &med, &p90);
    return json_pack("{s:I,s:f,s:f}", "points", (json_int_t)n, "median_rel_err",
        isnan(med) ? -1.0 : med, "p90_rel_err", isnan(p90) ? -1.0 : p90);
}

int comet_calibrate_build(
    json_t *const *recs, size_t n, comet_model_hw *hw, char *err, size_t errlen)
{
    const json_t *machine = NULL;
    json_t *fits = json_object(), *prov = json_object(), *runs = json_array();
    double *buf = NULL;
    int rc = 0;
    memset(hw, 0, sizeof *hw);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(jstr(recs[i], "kind"), "run")) {
            if (!machine)
                machine = json_object_get(recs[i], "machine");
            json_array_append_new(runs,
                json_pack("{s:s,s:s}", "run_id", jstr(recs[i], "run_id"), "cmdline",
                    jstr(recs[i], "cmdline")));
        }
    if (!machine) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "calibrate: no run record (machine) in the results");
        goto fail;
    }
    double mhz = jnum(machine, "mhz"), ghz = mhz > 0 ? mhz / 1000 : 1.0;
    int cores = (int)jnum(machine, "cores");
    if (cores < 1)
        cores = 1;
    double l2 = 0, l3 = 0;
    size_t ci;
    json_t *c;
    json_array_foreach(json_object_get(machine, "caches"), ci, c)
    {
        if (jnum(c, "level") == 2)
            l2 = jnum(c, "size");
        if (jnum(c, "level") == 3)
            l3 = jnum(c, "size");
    }
    const json_t *isa = json_object_get(machine, "isa");
    /* peak: FMA lanes x 2 flops x 2 FMA pipes (AVX2: 8 lanes); OpenBLAS's
     * sgemm kernels on this CPU are AVX2 (Haswell), so that is the roof */
    double peak = json_is_true(json_object_get(isa, "fma")) ? 32 : 8;

    snprintf(hw->name, sizeof hw->name, "local-%s", jstr(machine, "hostname"));
    snprintf(hw->kind, sizeof hw->kind, "cpu");
    hw->clock_ghz = ghz;
    hw->bytes_per_elem = 4;
    hw->clusters = 1;
    hw->cores = cores;
    hw->systolic = 0;
    hw->peak_flops = peak;
    hw->gemm_eff = 0.9;
    hw->simd_width = 1; /* vector costs are measured per element */
    hw->mac_pj = 0;
    hw->cluster_net = (comet_model_net) { COMET_MODEL_SWITCH, { 1, 1 }, 1, 0, 0, 0, 0, 0 };
    hw->core_net = (comet_model_net) { COMET_MODEL_FULL, { cores, 1 }, 64, 0, 0, 1, 0, 0 };

    /* ---- GEMM efficiency grid (sgemm records) ---- */
    comet_model_grid *g = &hw->grid;
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = recs[i];
        if (strcmp(jstr(r, "kind"), "kernel") || strcmp(jstr(r, "op"), "sgemm"))
            continue;
        const json_t *sh = json_object_get(r, "shape");
        if (add_unique(g->threads, &g->nt, 4, jnum(r, "threads"))
            || add_unique(g->M, &g->nm, COMET_MODEL_GRID_MAX, jnum(sh, "M"))
            || add_unique(g->N, &g->nn, COMET_MODEL_GRID_MAX, jnum(sh, "N"))
            || add_unique(g->K, &g->nk, COMET_MODEL_GRID_MAX, jnum(sh, "K")))
            continue;
        ng++;
    }
    if (!ng) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "calibrate: no sgemm records (run 'comet bench kernels')");
        goto fail;
    }
    size_t total = (size_t)g->nt * g->nm * g->nn * g->nk;
    g->values = calloc(total, sizeof(double));
    buf = malloc(4 * (ng + 1) * sizeof(double));
    if (!g->values || !buf) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
        goto fail;
    }
    double *F = buf, *E = buf + ng, *T = buf + 2 * ng, *held = buf + 3 * ng;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = recs[i];
        if (strcmp(jstr(r, "kind"), "kernel") || strcmp(jstr(r, "op"), "sgemm"))
            continue;
        const json_t *sh = json_object_get(r, "shape");
        double M = jnum(sh, "M"), N = jnum(sh, "N"), K = jnum(sh, "K"), th = jnum(r, "threads");
        double t = jnum(json_object_get(r, "stats"), "median_s");
        int it = axis_index(g->threads, g->nt, th), im = axis_index(g->M, g->nm, M),
            in = axis_index(g->N, g->nn, N), ik = axis_index(g->K, g->nk, K);
        if (it < 0 || im < 0 || in < 0 || ik < 0 || !(t > 0) || k >= ng)
            continue;
        double eff = 2 * M * N * K / t / (peak * th * ghz * 1e9);
        g->values[(((size_t)it * g->nm + im) * g->nn + in) * g->nk + ik] = eff;
        F[k] = 2 * M * N * K;
        E[k] = eff;
        T[k] = t;
        k++;
    }
    /* fill holes of an incomplete grid with the mean (flagged in quality) */
    size_t holes = 0;
    double mean = 0;
    for (size_t i = 0; i < k; i++)
        mean += E[i] / k;
    for (size_t i = 0; i < total; i++)
        if (!(g->values[i] > 0)) {
            g->values[i] = mean;
            holes++;
        }
    if ((rc = comet_calibrate_fit_saturating(F, E, k, &g->emax, &g->f_half)) != 0) {
        g->emax = mean;
        g->f_half = 0;
        rc = 0;
    }
    /* held-out: each grid point predicted with itself removed (its value
     * replaced by the saturating law), relative error of the time */
    for (size_t i = 0; i < k; i++) {
        double law = g->emax * F[i] / (F[i] + g->f_half);
        held[i] = (E[i] - law) / law; /* time ratio error = eff ratio error */
    }
    json_object_set_new(fits, "gemm",
        json_pack("{s:f,s:f,s:f,s:I,s:o,s:s}", "peak_flops_per_cycle_per_core", peak, "emax",
            g->emax, "f_half", g->f_half, "grid_holes", (json_int_t)holes, "heldout",
            err_json(held, k), "heldout_method",
            "leave-one-out: grid point predicted by the saturating law fitted on all points"));

    /* ---- memory plateaus (triad, 1 thread) ---- */
    double sz[128], bwv[128];
    size_t nm = 0;
    for (size_t i = 0; i < n && nm < 128; i++) {
        const json_t *r = recs[i];
        if (strcmp(jstr(r, "kind"), "memory") || strcmp(jstr(r, "op"), "triad")
            || jnum(r, "threads") != 1)
            continue;
        sz[nm] = jnum(json_object_get(r, "shape"), "bytes");
        bwv[nm] = jnum(r, "gbs");
        if (sz[nm] > 0 && bwv[nm] > 0)
            nm++;
    }
    if (nm < 2) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "calibrate: too few triad records (run 'comet bench memory')");
        goto fail;
    }
    /* sort by size */
    for (size_t i = 1; i < nm; i++)
        for (size_t j = i; j > 0 && sz[j - 1] > sz[j]; j--) {
            double t0 = sz[j];
            sz[j] = sz[j - 1];
            sz[j - 1] = t0;
            t0 = bwv[j];
            bwv[j] = bwv[j - 1];
            bwv[j - 1] = t0;
        }
    double lbw[8], lsz[8];
    int nl = comet_calibrate_plateaus(sz, bwv, nm, lbw, lsz, 8);
    double dram_gbs = lbw[nl - 1], gb_gbs = nl >= 2 ? lbw[nl - 2] : dram_gbs,
           lb_gbs = nl >= 3 ? lbw[nl - 3] : gb_gbs;
    hw->dram = (comet_model_mem) { 1e12, dram_gbs / ghz, 0, 0, 64 };
    hw->gb = (comet_model_mem) { l3 > 0 ? l3 : 32e6, gb_gbs / ghz, 0, 0, 64 };
    hw->lb = (comet_model_mem) { l2 > 0 ? l2 : 1e6, lb_gbs / ghz, 0, 0, 64 };
    json_t *lv = json_array();
    double mem_held[128];
    size_t nh = 0;
    for (int i = 0; i < nl; i++)
        json_array_append_new(lv, json_pack("{s:f,s:f}", "gbs", lbw[i], "up_to_bytes", lsz[i]));
    /* held-out: points not at a level boundary predicted by their level */
    for (size_t i = 0; i < nm; i++) {
        int l = 0;
        while (l < nl - 1 && sz[i] > lsz[l])
            l++;
        mem_held[nh++] = (bwv[i] - lbw[l]) / lbw[l];
    }
    json_object_set_new(fits, "memory",
        json_pack("{s:o,s:f,s:o,s:s}", "levels", lv, "dram_gbs", dram_gbs, "heldout",
            err_json(mem_held, nh), "heldout_method", "each sweep point predicted by its plateau"));

    /* ---- vector ops: cycles per element in cache ---- */
    static const char *const vn[COMET_MODEL_NVOP] = { "add", "mul", "div", "exp", "max", "sqrt" };
    static const char *const bn[COMET_MODEL_NVOP] = { "sum", "mul", "div", "exp", "max", "sqrt" };
    json_t *vj = json_object();
    for (int o = 0; o < COMET_MODEL_NVOP; o++) {
        hw->vop_cycles[o] = 0.25; /* replaced below when measured */
        for (size_t i = 0; i < n; i++) {
            const json_t *r = recs[i];
            if (strcmp(jstr(r, "kind"), "vecop") || strcmp(jstr(r, "op"), bn[o])
                || strcmp(jstr(json_object_get(r, "params"), "regime"), "cache"))
                continue;
            double ne = jnum(json_object_get(r, "shape"), "n");
            double t = jnum(json_object_get(r, "stats"), "median_s");
            if (ne > 0 && t > 0) {
                hw->vop_cycles[o] = t / ne * ghz * 1e9;
                json_object_set_new(vj, vn[o], json_real(hw->vop_cycles[o]));
            }
        }
    }
    json_object_set_new(fits, "vector_cycles_per_element", vj);

    /* ---- point-to-point and collectives ---- */
    double px[64], py[64];
    size_t np = 0;
    for (size_t i = 0; i < n && np < 64; i++) {
        const json_t *r = recs[i];
        if (strcmp(jstr(r, "kind"), "p2p"))
            continue;
        px[np] = jnum(json_object_get(r, "shape"), "bytes");
        py[np] = jnum(json_object_get(r, "stats"), "median_s");
        if (px[np] >= 0 && py[np] > 0)
            np++;
    }
    if (np >= 4) {
        for (size_t i = 1; i < np; i++)
            for (size_t j = i; j > 0 && px[j - 1] > px[j]; j--) {
                double t0 = px[j];
                px[j] = px[j - 1];
                px[j - 1] = t0;
                t0 = py[j];
                py[j] = py[j - 1];
                py[j - 1] = t0;
            }
        comet_calibrate_hockney h;
        comet_calibrate_fit_hockney(px, py, np, &h);
        double he[64];
        for (size_t i = 0; i < np; i++)
            he[i] = (comet_calibrate_hockney_eval(&h, px[i]) - py[i]) / py[i];
        hw->cluster_net.startup = h.lo.a * ghz * 1e9;
        hw->cluster_net.link_bw = h.hi.b > 0 ? 1.0 / (h.hi.b * ghz * 1e9) : 1e3;
        json_object_set_new(fits, "p2p",
            json_pack("{s:f,s:f,s:f,s:f,s:f,s:o}", "alpha_us", h.lo.a * 1e6, "beta_ns_per_byte",
                h.lo.b * 1e9, "breakpoint_bytes", h.breakpoint, "alpha_hi_us", h.hi.a * 1e6,
                "bandwidth_GBs", h.hi.b > 0 ? 1e-9 / h.hi.b : 0, "residuals", err_json(he, np)));
    } else {
        json_object_set_new(fits, "p2p", json_pack("{s:s}", "status", "no point-to-point records"));
    }
    json_object_set_new(prov, "machine_id", json_string(jstr(machine, "id")));
    json_object_set_new(prov, "commit", json_string(COMET_GIT_COMMIT));
    char now[32];
    json_object_set_new(prov, "date", json_string(comet_util_iso_time(now, sizeof now)));
    json_object_set_new(prov, "runs", runs);
    json_object_set_new(prov, "records", json_integer((json_int_t)n));
    runs = NULL;
    hw->calibration = json_pack("{s:o,s:o}", "fits", fits, "provenance", prov);
    fits = prov = NULL;
fail:
    json_decref(fits);
    json_decref(prov);
    json_decref(runs);
    free(buf);
    if (rc)
        comet_model_hw_free(hw);
    return rc;
}
