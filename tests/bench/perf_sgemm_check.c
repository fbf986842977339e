/* Self-check of the harness against a bare cblas_sgemm loop, interleaved in
 * one run: prints median GFLOP/s of each and their ratio per round. Not a
 * ctest (no timing is asserted); run it by hand on an idle machine:
 *   build/tests/perf_sgemm_check [N] [rounds] [threads]                    */
#include "comet_bench.h"
#include "comet_util.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct g {
    int n;
    float *A, *B, *C;
} g_t;

static int call(void *ctx, size_t reps)
{
    g_t *g = ctx;
    for (size_t r = 0; r < reps; r++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, g->n, g->n, g->n, 1.0f, g->A, g->n,
            g->B, g->n, 0.0f, g->C, g->n);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    /* the CLI's BLAS core choice: an inherited OPENBLAS_CORETYPE pin would
     * measure a slower OpenBLAS than this CPU runs (re-executes once) */
    comet_util_self_init(argv[0]);
    comet_util_blas_core_policy(argv);
    fprintf(stderr, "# BLAS core: %s\n", getenv("COMET_BLAS_CORE_POLICY"));
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    char err[COMET_ERRLEN];
    if (n < 1 || rounds < 1 || threads < 1) {
        fprintf(stderr, "usage: perf_sgemm_check [N] [rounds] [threads]\n");
        return 2;
    }
    g_t g = { n, malloc(sizeof(float) * n * n), malloc(sizeof(float) * n * n),
        malloc(sizeof(float) * n * n) };
    if (!g.A || !g.B || !g.C)
        return 1;
    for (long i = 0; i < (long)n * n; i++) {
        g.A[i] = (float)(i % 13) * 0.01f;
        g.B[i] = (float)(i % 7) * 0.02f;
    }
    openblas_set_num_threads(threads);
    comet_bench_config cfg;
    comet_bench_config_defaults(&cfg);
    cfg.time_cap_s = 1.0;
    cfg.max_samples = 100;
    if (getenv("WARMUP"))
        cfg.warmup_s = atof(getenv("WARMUP"));
    if (getenv("NOGATE"))
        cfg.gate.timeout_s = 0;
    double flops = 2.0 * n * n * n;
    double ratios[64];
    if (rounds > 64)
        rounds = 64;
    printf("# sgemm %dx%dx%d, %d thread(s): bare loop vs comet harness (median GFLOP/s)\n", n, n, n,
        threads);
    for (int r = 0; r < rounds; r++) {
        /* Bare loop: one warm-up call, then 20 timed calls, median. */
        double t[20];
        call(&g, 1);
        for (int i = 0; i < 20; i++) {
            double t0 = comet_util_now();
            call(&g, 1);
            t[i] = comet_util_now() - t0;
        }
        qsort(t, 20, sizeof t[0], cmp);
        double bare = flops / (0.5 * (t[9] + t[10])) / 1e9;
        comet_bench_result res;
        if (comet_bench_measure(&cfg, call, &g, &res, err, sizeof err)) {
            fprintf(stderr, "perf_sgemm_check: %s\n", err);
            return 1;
        }
        double harn = flops / res.stats.median / 1e9;
        ratios[r] = harn / bare;
        printf("round %d: bare %.1f  harness %.1f  (n=%zu reps=%zu busy_others=%.3f)  ratio %.3f\n",
            r, bare, harn, res.n, res.reps, res.load.busy_others, ratios[r]);
        comet_bench_result_free(&res);
    }
    qsort(ratios, (size_t)rounds, sizeof ratios[0], cmp);
    printf("median ratio harness/bare: %.3f\n", ratios[rounds / 2]);
    free(g.A);
    free(g.B);
    free(g.C);
    return 0;
}
