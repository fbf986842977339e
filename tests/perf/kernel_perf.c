/* Side-by-side kernel performance (not a test): variants interleaved in one
 * run, medians reported, ratios computed within the run.
 *
 *   build/tests/kernel_perf [threads] [reps]
 */
#include "comet_kernels.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
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

static void fill(float *x, size_t n)
{
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) & 0xFFFF) / 65536.0f - 0.5f;
    }
}

void openblas_set_num_threads(int);

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1, reps = argc > 2 ? atoi(argv[2]) : 7;
    size_t M = 4096, N = 4096;
    size_t Ks[3] = { 16, 64, 256 };
    float *A = malloc(M * 256 * 4), *B = malloc(256 * N * 4), *Y = malloc(M * N * 4),
          *C = malloc(M * N * 4), *g = malloc(N * 4), *bt = malloc(N * 4);
    void *ws = malloc(M * N * 4 + 256 * N * 4 + 4096);
    fill(A, M * 256);
    fill(B, 256 * N);
    fill(g, N);
    fill(bt, N);
    memset(Y, 0, M * N * 4);
    memset(C, 0, M * N * 4);
    printf("# M=N=%zu, threads=%d, %d interleaved rounds, median ms (GFLOP/s of the GEMM part)\n",
        M, threads, reps);
    for (int op = 0; op < 2; op++)
        for (int ki = 0; ki < 3; ki++) {
            size_t K = Ks[ki];
            enum { SG, UNF, FUK, FBL, GUK, GBL, NV };
            const char *names[NV] = { "sgemm", "unfused", "fused(ukernel)", "fused(openblas)",
                "gemm-in-fused(ukernel)", "gemm-in-fused(openblas)" };
            double t[NV][64];
            comet_kernels_params p = { .threads = threads, .scale = 1.0f, .eps = 1e-5f };
            comet_kernels_shape s = { .M = M, .N = N, .K = K };
            comet_kernels_default_params(
                op ? COMET_KERNELS_GEMM_LAYERNORM : COMET_KERNELS_GEMM_SOFTMAX, &s, 48 << 10,
                1 << 20, 32 << 20, threads, &p);
            for (int r = 0; r < reps + 1; r++)
                for (int vv = 0; vv < NV; vv++) {
                    int v = (vv + r) % NV; /* rotate the order every round */
                    comet_kernels_params q = p;
                    double t0 = now();
                    if (v == SG) {
                        openblas_set_num_threads(threads);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N,
                            (int)K, 1.0f, A, (int)K, B, (int)N, 0.0f, C, (int)N);
                    } else {
                        comet_kernels_variant var
                            = v == UNF ? COMET_KERNELS_UNFUSED : COMET_KERNELS_FUSED;
                        q.ukernel = (v == FUK || v == GUK) ? 1 : ((v == FBL || v == GBL) ? 2 : 0);
                        q.gemm_only = v == GUK || v == GBL;
                        if (q.ukernel == 2) { /* taller blocks amortise OpenBLAS's B packing */
                            q.tile_m = 64;
                        }
                        size_t wsb = 0;
                        comet_kernels_workspace_size(
                            op ? COMET_KERNELS_GEMM_LAYERNORM : COMET_KERNELS_GEMM_SOFTMAX, var, &s,
                            &q, &wsb);
                        int rc = op
                            ? comet_kernels_gemm_layernorm(
                                var, M, N, K, A, B, g, bt, Y, &q, ws, wsb)
                            : comet_kernels_gemm_softmax(var, M, N, K, A, B, Y, &q, ws, wsb);
                        if (rc) {
                            fprintf(stderr, "kernel failed: %d\n", rc);
                            return 1;
                        }
                    }
                    if (r > 0)
                        t[v][r - 1] = now() - t0;
                }
            double med[NV];
            double fl = 2.0 * M * N * K;
            printf("%s K=%zu:", op ? "gemm_layernorm" : "gemm_softmax", K);
            for (int v = 0; v < NV; v++) {
                med[v] = median(t[v], reps);
                printf("  %s %.2f (%.1f)", names[v], med[v] * 1e3, fl / med[v] * 1e-9);
            }
            printf("\n   speedup fused(ukernel)/unfused %.2fx, fused(openblas)/unfused %.2fx;"
                   " GEMM in fused vs sgemm: ukernel %.0f%%, openblas %.0f%%\n",
                med[UNF] / med[FUK], med[UNF] / med[FBL], 100 * med[SG] / med[GUK],
                100 * med[SG] / med[GBL]);
        }
    /* unfused pass bandwidth: softmax/layernorm over a 64 MiB intermediate */
    {
        double ts[64], tl[64];
        for (int r = 0; r < reps; r++) {
            double t0 = now();
            comet_kernels_softmax_rows(M, N, C, N, Y, N, 1.0f, threads);
            ts[r] = now() - t0;
            t0 = now();
            comet_kernels_layernorm_rows(M, N, C, N, Y, N, g, bt, 1e-5f, threads);
            tl[r] = now() - t0;
        }
        double bytes = 2.0 * M * N * 4;
        printf("passes: softmax %.1f GB/s, layernorm %.1f GB/s (read + write of %zux%zu floats)\n",
            bytes / median(ts, reps) * 1e-9, bytes / median(tl, reps) * 1e-9, M, N);
    }
    /* attention Lq = Lk = 4096, d = 64 */
    {
        comet_kernels_shape s = { .batch = 1, .heads = 1, .lq = 4096, .lk = 4096, .d = 64 };
        size_t n = 4096 * 64;
        float *Q = malloc(n * 4), *K = malloc(n * 4), *V = malloc(n * 4), *O = malloc(n * 4);
        fill(Q, n);
        fill(K, n);
        fill(V, n);
        double tu[64], tf[64];
        comet_kernels_params p;
        comet_kernels_default_params(
            COMET_KERNELS_ATTENTION, &s, 32 << 10, 512 << 10, 32 << 20, threads, &p);
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < 2; v++) {
                int var = (v + r) % 2;
                size_t wsb = 0;
                comet_kernels_workspace_size(COMET_KERNELS_ATTENTION, var, &s, &p, &wsb);
                double t0 = now();
                comet_kernels_attention(var, &s, Q, K, V, O, &p, ws, wsb);
                (var ? tf : tu)[r] = now() - t0;
            }
        double mu = median(tu, reps), mf = median(tf, reps);
        printf("attention Lq=Lk=4096 d=64: unfused %.2f ms, fused %.2f ms, speedup %.2fx\n",
            mu * 1e3, mf * 1e3, mu / mf);
    }
    return 0;
}
