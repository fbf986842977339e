/* comet bench kernels: compound ops x variant x shape x threads from a shape
 * set, tile sweeps of the fused variants, and plain sgemm over a log-spaced
 * (M, N, K) grid. Every result is spot-checked against a double-precision
 * reference on a few rows. */
#include "bench_internal.h"
#include "kernels_ops.h"

#include <cblas.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Plain sgemm (op "sgemm", variant "blas")                           */
/* ------------------------------------------------------------------ */

typedef struct sgemm_ctx {
    int M, N, K;
    float *A, *B, *C;
} sgemm_ctx;

static int sgemm_fn(void *ctx, size_t reps)
{
    sgemm_ctx *g = ctx;
    for (size_t r = 0; r < reps; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->M, g->N, g->K, 1.0f, g->A, g->K,
            g->B, g->N, 0.0f, g->C, g->N);
    return 0;
}

/* Pseudo-random values in [-1, 1) from a fixed seed (reproducible runs). */
void bench_fill(float *x, size_t n, unsigned seed)
{
    unsigned long long s = 0x9E3779B97F4A7C15ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) / 8388608.0 - 1.0);
    }
}

/* C rows {0, M/2, M-1} against a double reference; tolerance grows with K. */
static int sgemm_valid(const sgemm_ctx *g)
{
    int rows[3] = { 0, g->M / 2, g->M - 1 };
    for (int k = 0; k < 3; k++) {
        int i = rows[k];
        for (int j = 0; j < g->N; j++) {
            double ref = 0, mag = 0;
            for (int p = 0; p < g->K; p++) {
                double t = (double)g->A[(size_t)i * g->K + p] * g->B[(size_t)p * g->N + j];
                ref += t;
                mag += fabs(t);
            }
            double tol = 2.0 * g->K * FLT_EPSILON * mag + 1e-6;
            if (!(fabs(g->C[(size_t)i * g->N + j] - ref) <= tol))
                return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------------ */
/* Driver                                                             */
/* ------------------------------------------------------------------ */

static int resolve_threads(int t, int ncores)
{
    return t == 0 ? ncores : t;
}

static int emit(bench_session *s, json_t *rec, const comet_bench_result *r, double flops,
    double bytes, int valid, char *err, size_t errlen)
{
    int rc;
    if (!rec)
        return comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
    if ((rc = comet_bench_record_set_result(rec, r, flops, bytes)) == 0) {
        json_object_set_new(rec, "valid", json_boolean(valid));
        comet_bench_record_set_counters(rec, &s->counters, r->calls);
        rc = bench_session_write(s, rec, valid, err, errlen);
    }
    json_decref(rec);
    return rc;
}

/* Log-spaced integer grid from lo to hi with n points (deduplicated). */
static size_t log_grid(long lo, long hi, int n, long *out)
{
    size_t m = 0;
    for (int i = 0; i < n; i++) {
        double f = n == 1 ? 0 : (double)i / (n - 1);
        long v = lround(exp(log((double)lo) + f * (log((double)hi) - log((double)lo))));
        if (m == 0 || v != out[m - 1])
            out[m++] = v;
    }
    return m;
}

static int run_sgemm(bench_session *s, const comet_bench_opts *o, const bench_shapeset *set,
    int ncores, double *hl_gflops, char *err, size_t errlen)
{
    long grid[16];
    size_t ng = log_grid(set->sg_min, set->sg_max, set->sg_points, grid);
    size_t maxd = (size_t)grid[ng - 1];
    sgemm_ctx g = { 0 };
    comet_bench_result res = { 0 };
    int rc = 0;
    g.A = malloc(maxd * maxd * sizeof(float));
    g.B = malloc(maxd * maxd * sizeof(float));
    g.C = malloc(maxd * maxd * sizeof(float));
    if (!g.A || !g.B || !g.C) {
        rc = comet_util_seterr(
            err, errlen, -ENOMEM, "bench sgemm: cannot allocate %zux%zu", maxd, maxd);
        goto done;
    }
    bench_fill(g.A, maxd * maxd, 1);
    bench_fill(g.B, maxd * maxd, 2);
    for (size_t ti = 0; ti < set->sg_nthreads && !s->stop; ti++) {
        int T = o->threads > 0 ? o->threads : resolve_threads(set->sg_threads[ti], ncores);
        if (o->threads > 0 && ti > 0)
            break;
        if (T > ncores) {
            comet_util_info("bench sgemm: skipping %d threads (only %d cores)", T, ncores);
            continue;
        }
        bench_session_pin(s, T);
        openblas_set_num_threads(T);
        for (size_t a = 0; a < ng && !s->stop; a++)
            for (size_t b = 0; b < ng && !s->stop; b++)
                for (size_t c = 0; c < ng && !s->stop; c++) {
                    g.M = (int)grid[a];
                    g.N = (int)grid[b];
                    g.K = (int)grid[c];
                    if ((rc = comet_bench_measure(&s->cfg, sgemm_fn, &g, &res, err, errlen)))
                        goto done;
                    int valid = sgemm_valid(&g);
                    double flops = 2.0 * g.M * g.N * g.K;
                    double bytes
                        = 4.0 * ((double)g.M * g.K + (double)g.K * g.N + (double)g.M * g.N);
                    json_t *rec = comet_bench_record_new(&s->run, "kernel", "sgemm", "blas",
                        json_pack("{s:i,s:i,s:i}", "M", g.M, "N", g.N, "K", g.K), T);
                    double gf = res.stats.median > 0 ? flops / res.stats.median / 1e9 : 0;
                    if (gf > hl_gflops[T > 1])
                        hl_gflops[T > 1] = gf;
                    char note[96];
                    snprintf(note, sizeof note, "sgemm %dx%dx%d T=%d: %.1f GFLOP/s", g.M, g.N, g.K,
                        T, gf);
                    rc = emit(s, rec, &res, flops, bytes, valid, err, errlen);
                    comet_bench_result_free(&res);
                    if (rc)
                        goto done;
                    bench_session_step(s, note);
                }
    }
done:
    openblas_set_num_threads(ncores);
    comet_bench_result_free(&res);
    free(g.A);
    free(g.B);
    free(g.C);
    return rc;
}

/* One compound op, variant, shape, thread count and parameter setting. */
static int run_compound(bench_session *s, const char *op, const char *variant,
    const bench_shape *sh, int T, const char *param, long pval, char *err, size_t errlen)
{
    bench_kop k;
    comet_bench_result res = { 0 };
    if (!bench_kop_available(op)) {
        bench_session_step(s, "skipped: not in the kernels library");
        return 0;
    }
    int rc = bench_kop_init(&k, op, variant, sh, T, param, pval, err, errlen);
    if (rc)
        return rc;
    if ((rc = comet_bench_measure(&s->cfg, bench_kop_fn, &k, &res, err, errlen)))
        goto done;
    int valid = bench_kop_check(&k);
    json_t *shape = sh->attn
        ? json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}", "B", (int)sh->B, "H", (int)sh->H, "Lq",
            (int)sh->Lq, "Lk", (int)sh->Lk, "d", (int)sh->d, "causal", sh->causal)
        : json_pack("{s:i,s:i,s:i}", "M", (int)sh->M, "N", (int)sh->N, "K", (int)sh->K);
    json_t *rec = comet_bench_record_new(&s->run, "kernel", op, variant, shape, T);
    if (rec)
        json_object_set_new(rec, "params", bench_kop_params(&k));
    double gf = res.stats.median > 0 ? k.flops / res.stats.median / 1e9 : 0;
    rc = emit(s, rec, &res, k.flops, k.bytes, valid, err, errlen);
    if (rc)
        goto done;
    char note[128];
    snprintf(note, sizeof note, "%s %s T=%d%s%s: %.1f GFLOP/s%s", op, variant, T, param ? " " : "",
        param ? param : "", gf, valid ? "" : " INVALID");
    bench_session_step(s, note);
done:
    comet_bench_result_free(&res);
    bench_kop_fini(&k);
    return rc;
}

int comet_bench_kernels_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen)
{
    bench_shapeset set;
    bench_session s;
    char path[4096];
    int rc;
    const char *sp = o->shapes_path;
    if (!sp) {
        snprintf(path, sizeof path, "%s/configs/shapes/%s.yaml", COMET_SOURCE_DIR,
            o->full ? "full" : "quick");
        sp = path;
    }
    if ((rc = bench_shapeset_load(sp, bench_kop_names, &set, err, errlen)))
        return rc == -ENOMEM ? rc : (rc == -ENOENT ? rc : -EINVAL);
    if ((rc = bench_session_open(&s, o, "kernels", machine, sum, err, errlen))) {
        bench_shapeset_free(&set);
        return rc;
    }
    int ncores = comet_bench_ncores();

    /* Count the steps for the progress line and ETA. */
    size_t nthr = o->threads > 0 ? 1 : set.nthreads, total = 0;
    for (size_t i = 0; i < set.nops; i++) {
        size_t per = set.ops[i].nvariants;
        for (size_t w = 0; w < set.nsweeps; w++)
            if (!strcmp(set.sweeps[w].op, set.ops[i].op))
                for (size_t v = 0; v < set.ops[i].nvariants; v++)
                    if (!strcmp(set.ops[i].variants[v], "fused"))
                        per += set.sweeps[w].nvalues;
        total += per * set.ops[i].nshapes * nthr;
    }
    if (set.have_sgemm) {
        long grid[16];
        size_t ng = log_grid(set.sg_min, set.sg_max, set.sg_points, grid);
        total += ng * ng * ng * (o->threads > 0 ? 1 : set.sg_nthreads);
    }
    bench_session_progress(&s, "bench kernels", total);

    for (size_t ti = 0; ti < nthr && !s.stop; ti++) {
        int T = o->threads > 0 ? o->threads : resolve_threads(set.threads[ti], ncores);
        if (T > ncores) {
            comet_util_info("bench kernels: skipping %d threads (only %d cores)", T, ncores);
            continue;
        }
        bench_session_pin(&s, T);
        for (size_t i = 0; i < set.nops && !s.stop; i++) {
            const bench_opset *os = &set.ops[i];
            for (size_t h = 0; h < os->nshapes && !s.stop; h++) {
                for (size_t v = 0; v < os->nvariants && !s.stop; v++) {
                    if ((rc = run_compound(
                             &s, os->op, os->variants[v], &os->shapes[h], T, NULL, 0, err, errlen)))
                        goto fail;
                    if (strcmp(os->variants[v], "fused"))
                        continue;
                    for (size_t w = 0; w < set.nsweeps && !s.stop; w++) {
                        const bench_tilesweep *ts = &set.sweeps[w];
                        if (strcmp(ts->op, os->op))
                            continue;
                        for (size_t q = 0; q < ts->nvalues && !s.stop; q++)
                            if ((rc = run_compound(&s, os->op, "fused", &os->shapes[h], T,
                                     ts->param, ts->values[q], err, errlen)))
                                goto fail;
                    }
                }
            }
        }
    }
    double hl[2] = { 0, 0 };
    if (set.have_sgemm && !s.stop && (rc = run_sgemm(&s, o, &set, ncores, hl, err, errlen)))
        goto fail;
    bench_shapeset_free(&set);
    return bench_session_close(&s,
        json_pack("{s:f,s:f}", "sgemm_best_gflops_1thread", hl[0], "sgemm_best_gflops_multithread",
            hl[1]),
        err, errlen);
fail:
    bench_session_abort(&s);
    bench_shapeset_free(&set);
    return rc;
}
