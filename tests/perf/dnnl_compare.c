/* Side-by-side comparison with what a user would pick instead (not a test):
 * oneDNN's matmul primitive followed by its softmax or layer_normalization
 * primitive, against comet's fused and unfused kernels, same shapes and
 * threads, interleaved in one run, medians. Built only when oneDNN
 * (libdnnl-dev) is found.
 *
 *   build/tests/dnnl_compare [threads] [reps] [M] [N]
 */
#include "comet_kernels.h"
#include "comet_util.h"

#include <dnnl.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        dnnl_status_t s_ = (x);                                                                    \
        if (s_ != dnnl_success) {                                                                  \
            fprintf(                                                                               \
                stderr, "dnnl_compare: %s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, (int)s_); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void fill(float *x, size_t n, unsigned s)
{
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
    }
}

static dnnl_memory_t mem2(dnnl_engine_t eng, dnnl_dim_t r, dnnl_dim_t c, void *p)
{
    dnnl_memory_desc_t md;
    dnnl_memory_t m;
    dnnl_dims_t d = { r, c };
    CHECK(dnnl_memory_desc_init_by_tag(&md, 2, d, dnnl_f32, dnnl_ab));
    CHECK(dnnl_memory_create(&m, &md, eng, p));
    return m;
}

static dnnl_memory_t mem1(dnnl_engine_t eng, dnnl_dim_t n, void *p)
{
    dnnl_memory_desc_t md;
    dnnl_memory_t m;
    dnnl_dims_t d = { n };
    CHECK(dnnl_memory_desc_init_by_tag(&md, 1, d, dnnl_f32, dnnl_a));
    CHECK(dnnl_memory_create(&m, &md, eng, p));
    return m;
}

static dnnl_primitive_t make(dnnl_engine_t eng, const void *desc, dnnl_primitive_desc_t *pdo)
{
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_primitive_desc_create(&pd, desc, NULL, eng, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    if (pdo)
        *pdo = pd;
    else
        dnnl_primitive_desc_destroy(pd);
    return p;
}

static double maxdiff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m))
            m = d;
    }
    return m;
}

int main(int argc, char **argv)
{
    /* the CLI's BLAS core choice: an inherited OPENBLAS_CORETYPE pin would
     * measure a slower OpenBLAS than this CPU runs (re-executes once) */
    comet_util_self_init(argv[0]);
    comet_util_blas_core_policy(argv);
    fprintf(stderr, "# BLAS core: %s\n", getenv("COMET_BLAS_CORE_POLICY"));
    int threads = argc > 1 ? atoi(argv[1]) : 1, reps = argc > 2 ? atoi(argv[2]) : 7;
    size_t M = argc > 3 ? (size_t)atol(argv[3]) : 4096, N = argc > 4 ? (size_t)atol(argv[4]) : 4096;
    if (threads < 1 || reps < 1 || reps > 64 || M < 1 || N < 1) {
        fprintf(stderr, "usage: dnnl_compare [threads>=1] [reps 1..64] [M] [N]\n");
        return 2;
    }
    size_t Ks[3] = { 16, 64, 256 }, Kmax = 256;
    omp_set_num_threads(threads); /* oneDNN's CPU runtime is OpenMP */
    dnnl_engine_t eng;
    dnnl_stream_t st;
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&st, eng, dnnl_stream_default_flags));

    float *A = malloc(M * Kmax * 4), *B = malloc(Kmax * N * 4), *C = malloc(M * N * 4),
          *Yd = malloc(M * N * 4), *Yc = malloc(M * N * 4), *g = malloc(N * 4), *bt = malloc(N * 4);
    void *ws = malloc(M * N * 4 + Kmax * N * 4 + 4096);
    if (!A || !B || !C || !Yd || !Yc || !g || !bt || !ws) {
        fprintf(stderr, "dnnl_compare: out of memory\n");
        return 1;
    }
    fill(A, M * Kmax, 1);
    fill(B, Kmax * N, 2);
    fill(g, N, 3);
    fill(bt, N, 4);
    for (size_t j = 0; j < N; j++)
        g[j] += 1.0f;
    memset(C, 0, M * N * 4);
    memset(Yd, 0, M * N * 4);
    memset(Yc, 0, M * N * 4);

    printf("# M=N=%zux%zu, threads=%d, %d interleaved rounds, median ms; oneDNN %d.%d.%d\n", M, N,
        threads, reps, dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch);
    for (size_t ki = 0; ki < 3; ki++) {
        size_t K = Ks[ki];
        dnnl_memory_t mA = mem2(eng, (dnnl_dim_t)M, (dnnl_dim_t)K, A);
        dnnl_memory_t mB = mem2(eng, (dnnl_dim_t)K, (dnnl_dim_t)N, B);
        dnnl_memory_t mC = mem2(eng, (dnnl_dim_t)M, (dnnl_dim_t)N, C);
        dnnl_memory_t mY = mem2(eng, (dnnl_dim_t)M, (dnnl_dim_t)N, Yd);
        dnnl_memory_t mg = mem1(eng, (dnnl_dim_t)N, g), mb = mem1(eng, (dnnl_dim_t)N, bt);
        const dnnl_memory_desc_t *amd, *bmd, *cmd;
        CHECK(dnnl_memory_get_memory_desc(mA, &amd));
        CHECK(dnnl_memory_get_memory_desc(mB, &bmd));
        CHECK(dnnl_memory_get_memory_desc(mC, &cmd));
        dnnl_matmul_desc_t mmd;
        CHECK(dnnl_matmul_desc_init(&mmd, amd, bmd, NULL, cmd));
        dnnl_primitive_t pmm = make(eng, &mmd, NULL);
        dnnl_softmax_desc_t smd;
        CHECK(dnnl_softmax_forward_desc_init(&smd, dnnl_forward_inference, cmd, 1));
        dnnl_primitive_t psm = make(eng, &smd, NULL);
        dnnl_layer_normalization_desc_t lnd;
        CHECK(dnnl_layer_normalization_forward_desc_init(
            &lnd, dnnl_forward_inference, cmd, NULL, 1e-5f, dnnl_use_scale | dnnl_use_shift));
        dnnl_primitive_desc_t lnpd;
        dnnl_primitive_t pln = make(eng, &lnd, &lnpd);
        /* inference may still want stats buffers: allocate what it asks for */
        dnnl_memory_t mmean = NULL, mvar = NULL;
        const dnnl_memory_desc_t *smean
            = dnnl_primitive_desc_query_md(lnpd, dnnl_query_exec_arg_md, DNNL_ARG_MEAN);
        if (smean && dnnl_memory_desc_get_size(smean) > 0) {
            CHECK(dnnl_memory_create(&mmean, smean, eng, DNNL_MEMORY_ALLOCATE));
            CHECK(dnnl_memory_create(&mvar, smean, eng, DNNL_MEMORY_ALLOCATE));
        }
        dnnl_exec_arg_t amm[3]
            = { { DNNL_ARG_SRC, mA }, { DNNL_ARG_WEIGHTS, mB }, { DNNL_ARG_DST, mC } };
        dnnl_exec_arg_t asm_[2] = { { DNNL_ARG_SRC, mC }, { DNNL_ARG_DST, mY } };
        dnnl_exec_arg_t aln[6]
            = { { DNNL_ARG_SRC, mC }, { DNNL_ARG_DST, mY }, { DNNL_ARG_SCALE, mg },
                  { DNNL_ARG_SHIFT, mb }, { DNNL_ARG_MEAN, mmean }, { DNNL_ARG_VARIANCE, mvar } };
        int nln = mmean ? 6 : 4;

        enum { DSM, CFSM, CUSM, DLN, CFLN, CULN, NV };
        static const char *names[NV] = { "onednn matmul+softmax", "comet fused", "comet unfused",
            "onednn matmul+layer_norm", "comet fused", "comet unfused" };
        double t[NV][64];
        double dsm = 0, dln = 0;
        comet_kernels_shape s = { .M = M, .N = N, .K = K };
        comet_kernels_params p;
        comet_kernels_default_params(
            COMET_KERNELS_GEMM_SOFTMAX, &s, 32 << 10, 512 << 10, 32 << 20, threads, &p);
        for (int r = 0; r < reps + 1; r++)
            for (int vv = 0; vv < NV; vv++) {
                int v = (vv + r) % NV; /* rotate the order every round */
                size_t wsb = 0;
                int rc = 0;
                comet_kernels_variant var
                    = (v == CFSM || v == CFLN) ? COMET_KERNELS_FUSED : COMET_KERNELS_UNFUSED;
                comet_kernels_op op
                    = v < DLN ? COMET_KERNELS_GEMM_SOFTMAX : COMET_KERNELS_GEMM_LAYERNORM;
                if (v != DSM && v != DLN)
                    comet_kernels_workspace_size(op, var, &s, &p, &wsb);
                double t0 = now();
                if (v == DSM || v == DLN) {
                    CHECK(dnnl_primitive_execute(pmm, st, 3, amm));
                    if (v == DSM)
                        CHECK(dnnl_primitive_execute(psm, st, 2, asm_));
                    else
                        CHECK(dnnl_primitive_execute(pln, st, nln, aln));
                    CHECK(dnnl_stream_wait(st));
                } else if (op == COMET_KERNELS_GEMM_SOFTMAX) {
                    rc = comet_kernels_gemm_softmax(var, M, N, K, A, B, Yc, &p, ws, wsb);
                } else {
                    rc = comet_kernels_gemm_layernorm(var, M, N, K, A, B, g, bt, Yc, &p, ws, wsb);
                }
                double dt = now() - t0;
                if (rc) {
                    fprintf(stderr, "dnnl_compare: comet kernel failed: %d\n", rc);
                    return 1;
                }
                if (r > 0) /* round 0 is the warm-up */
                    t[v][r - 1] = dt;
            }
        /* agreement: one more call of each, compared elementwise */
        size_t wsb = 0;
        CHECK(dnnl_primitive_execute(pmm, st, 3, amm));
        CHECK(dnnl_primitive_execute(psm, st, 2, asm_));
        CHECK(dnnl_stream_wait(st));
        comet_kernels_workspace_size(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &s, &p, &wsb);
        comet_kernels_gemm_softmax(COMET_KERNELS_FUSED, M, N, K, A, B, Yc, &p, ws, wsb);
        dsm = maxdiff(Yd, Yc, M * N);
        CHECK(dnnl_primitive_execute(pmm, st, 3, amm));
        CHECK(dnnl_primitive_execute(pln, st, nln, aln));
        CHECK(dnnl_stream_wait(st));
        comet_kernels_workspace_size(
            COMET_KERNELS_GEMM_LAYERNORM, COMET_KERNELS_FUSED, &s, &p, &wsb);
        comet_kernels_gemm_layernorm(COMET_KERNELS_FUSED, M, N, K, A, B, g, bt, Yc, &p, ws, wsb);
        dln = maxdiff(Yd, Yc, M * N);

        double med[NV];
        for (int v = 0; v < NV; v++)
            med[v] = median(t[v], reps);
        printf("K=%zu  %s %.2f | %s %.2f (%.2fx) | %s %.2f (%.2fx)   max|diff| %.2g\n", K,
            names[DSM], med[DSM] * 1e3, names[CFSM], med[CFSM] * 1e3, med[DSM] / med[CFSM],
            names[CUSM], med[CUSM] * 1e3, med[DSM] / med[CUSM], dsm);
        printf("K=%zu  %s %.2f | %s %.2f (%.2fx) | %s %.2f (%.2fx)   max|diff| %.2g\n", K,
            names[DLN], med[DLN] * 1e3, names[CFLN], med[CFLN] * 1e3, med[DLN] / med[CFLN],
            names[CULN], med[CULN] * 1e3, med[DLN] / med[CULN], dln);
        if (ki == 0) {
            /* the non-GEMM passes alone over the same 64 MiB intermediate C
             * (read C, write Y: 8 bytes per element at least) */
            enum { DS, CS, DL, CL, NP };
            static const char *pn[NP] = { "onednn softmax", "comet softmax_rows",
                "onednn layer_norm", "comet layernorm_rows" };
            double tp[NP][64];
            CHECK(dnnl_primitive_execute(pmm, st, 3, amm));
            CHECK(dnnl_stream_wait(st));
            for (int r = 0; r < reps + 1; r++)
                for (int vv = 0; vv < NP; vv++) {
                    int v = (vv + r) % NP;
                    double t0 = now();
                    if (v == DS)
                        CHECK(dnnl_primitive_execute(psm, st, 2, asm_));
                    else if (v == DL)
                        CHECK(dnnl_primitive_execute(pln, st, nln, aln));
                    else if (v == CS)
                        comet_kernels_softmax_rows(M, N, C, N, Yc, N, 1.0f, threads);
                    else
                        comet_kernels_layernorm_rows(M, N, C, N, Yc, N, g, bt, 1e-5f, threads);
                    CHECK(dnnl_stream_wait(st));
                    if (r > 0)
                        tp[v][r - 1] = now() - t0;
                }
            printf(
                "passes alone over the %zux%zu intermediate (GB/s = 8 bytes per element):", M, N);
            for (int v = 0; v < NP; v++) {
                double m = median(tp[v], reps);
                printf("%s %s %.2f ms %.1f GB/s", v ? "," : "", pn[v], m * 1e3,
                    8.0 * (double)M * (double)N / m * 1e-9);
            }
            printf("\n");
        }
        dnnl_primitive_destroy(pmm);
        dnnl_primitive_destroy(psm);
        dnnl_primitive_destroy(pln);
        dnnl_primitive_desc_destroy(lnpd);
        dnnl_memory_destroy(mA);
        dnnl_memory_destroy(mB);
        dnnl_memory_destroy(mC);
        dnnl_memory_destroy(mY);
        dnnl_memory_destroy(mg);
        dnnl_memory_destroy(mb);
        if (mmean) {
            dnnl_memory_destroy(mmean);
            dnnl_memory_destroy(mvar);
        }
    }
    dnnl_stream_destroy(st);
    dnnl_engine_destroy(eng);
    free(A);
    free(B);
    free(C);
    free(Yd);
    free(Yc);
    free(g);
    free(bt);
    free(ws);
    return 0;
}
