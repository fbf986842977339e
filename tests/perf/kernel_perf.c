/* Side-by-side kernel performance (not a test): variants interleaved in one
 * run, medians reported, ratios computed within the run.
 *
 *   build/tests/kernel_perf [threads] [reps] [all|gemm|passes|attention]
 *
 * "passes" times the unfused softmax/LayerNorm row passes over a 64 MiB
 * intermediate interleaved with a STREAM triad on arrays of the same size,
 * and prints pass/triad side by side.
 */
#include "comet_kernels.h"
#include "comet_util.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

/* Large buffers as the bench's arena allocates them: 2 MiB aligned with a
 * transparent-huge-page hint. Without it the 64 MiB output streams through
 * 4 KiB pages, and in a VM (nested paging) the fused kernels' epilogue ran
 * ~1.6x slower here than in comet bench kernels on the same shape. */
static void *big_alloc(size_t n)
{
    size_t a = (size_t)2 << 20, r = (n + a - 1) / a * a;
    void *p = aligned_alloc(a, r);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, r, MADV_HUGEPAGE);
#endif
    return p;
}

/* STREAM triad a = b + s c with ordinary stores (the CPU reads each line of
 * a before writing it, which STREAM does not count), vectorized like
 * bench/memory.c's so the loop is not compute-bound. */
#if defined(__x86_64__)
__attribute__((target("avx2,fma")))
#endif
static void
triad(float *a, const float *b, const float *c, size_t n, float s, int threads)
{
#pragma omp parallel num_threads(threads)
    {
        extern int omp_get_thread_num(void), omp_get_num_threads(void);
        size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        size_t i0 = n / 8 * t / nt * 8, i1 = t + 1 == nt ? n : n / 8 * (t + 1) / nt * 8;
        size_t i = i0;
#if defined(__x86_64__)
        __m256 vs = _mm256_set1_ps(s);
        for (; i + 8 <= i1; i += 8)
            _mm256_store_ps(
                a + i, _mm256_fmadd_ps(vs, _mm256_load_ps(c + i), _mm256_load_ps(b + i)));
#endif
        for (; i < i1; i++)
            a[i] = b[i] + s * c[i];
    }
}

#if defined(__x86_64__)
/* The same with non-temporal stores (no read of a): the ceiling for a pass
 * that reads one stream and writes one. */
__attribute__((target("avx2"))) static void triad_nt(
    float *a, const float *b, const float *c, size_t n, float s, int threads)
{
#pragma omp parallel num_threads(threads)
    {
        extern int omp_get_thread_num(void), omp_get_num_threads(void);
        size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        size_t i0 = n / 8 * t / nt * 8, i1 = t + 1 == nt ? n : n / 8 * (t + 1) / nt * 8;
        __m256 vs = _mm256_set1_ps(s);
        size_t i = i0;
        for (; i + 8 <= i1; i += 8)
            _mm256_stream_ps(a + i,
                _mm256_add_ps(_mm256_load_ps(b + i), _mm256_mul_ps(vs, _mm256_load_ps(c + i))));
        for (; i < i1; i++)
            a[i] = b[i] + s * c[i];
    }
    _mm_sfence();
}

/* y = s x with non-temporal stores: one read stream and one write stream,
 * exactly the traffic of an unfused row pass with no compute. */
__attribute__((target("avx2"))) static void scale_nt(
    float *y, const float *x, size_t n, float s, int threads)
{
#pragma omp parallel num_threads(threads)
    {
        extern int omp_get_thread_num(void), omp_get_num_threads(void);
        size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
        size_t i0 = n / 8 * t / nt * 8, i1 = t + 1 == nt ? n : n / 8 * (t + 1) / nt * 8;
        __m256 vs = _mm256_set1_ps(s);
        size_t i = i0;
        for (; i + 8 <= i1; i += 8)
            _mm256_stream_ps(y + i, _mm256_mul_ps(vs, _mm256_load_ps(x + i)));
        for (; i < i1; i++)
            y[i] = s * x[i];
    }
    _mm_sfence();
}
#endif

/* Unfused pass bandwidth: softmax and LayerNorm over a M x N intermediate
 * (far beyond L3) interleaved with a triad over arrays of the same size. */
static void run_passes(
    size_t M, size_t N, size_t K, const float *A, const float *B, int threads, int reps)
{
    size_t n = M * N;
    float *X = big_alloc(n * 4), *Y = big_alloc(n * 4), *T = big_alloc(n * 4), *g = malloc(N * 4),
          *bt = malloc(N * 4);
    if (!X || !Y || !T || !g || !bt) {
        fprintf(stderr, "kernel_perf: out of memory\n");
        exit(1);
    }
    /* the intermediate the unfused GEMM op would hand the pass (untimed) */
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K,
        B, (int)N, 0.0f, X, (int)N);
    fill(g, N);
    fill(bt, N);
    memset(Y, 0, n * 4);
    memset(T, 0, n * 4);
    enum { TRIAD, TRIAD_NT, SCALE_NT, SOFTMAX, LAYERNORM, NP };
    const char *names[NP]
        = { "triad", "triad(nt stores)", "scale(nt stores)", "softmax pass", "layernorm pass" };
    /* STREAM counting for the triads (3 arrays), the minimum the passes must
     * move (read X once, write Y once) for the passes */
    double bytes[NP] = { 3.0 * n * 4, 3.0 * n * 4, 2.0 * n * 4, 2.0 * n * 4, 2.0 * n * 4 };
    double t[NP][64];
    for (int r = 0; r < reps + 1; r++)
        for (int k = 0; k < NP; k++) {
            int v = (k + r) % NP;
            double t0 = now();
            switch (v) {
            case TRIAD:
                triad(T, X, Y, n, 3.0f, threads);
                break;
            case TRIAD_NT:
#if defined(__x86_64__)
                triad_nt(T, X, Y, n, 3.0f, threads);
#else
                triad(T, X, Y, n, 3.0f, threads);
#endif
                break;
            case SCALE_NT:
#if defined(__x86_64__)
                scale_nt(T, X, n, 3.0f, threads);
#else
                triad(T, X, X, n, 0.0f, threads);
#endif
                break;
            case SOFTMAX:
                comet_kernels_softmax_rows(M, N, X, N, Y, N, 1.0f, threads);
                break;
            default:
                comet_kernels_layernorm_rows(M, N, X, N, Y, N, g, bt, 1e-5f, threads);
                break;
            }
            if (r > 0)
                t[v][r - 1] = now() - t0;
        }
    double gbs[NP], traw[NP][64];
    memcpy(traw, t, sizeof traw);
    printf("# passes over the %zux%zu (%.0f MiB) intermediate of K=%zu, threads=%d, median of %d "
           "interleaved rounds\n",
        M, N, n * 4.0 / (1 << 20), K, threads, reps);
    for (int v = 0; v < NP; v++) {
        double med = median(t[v], reps);
        gbs[v] = bytes[v] / med * 1e-9;
        printf("  %-18s %7.2f ms  %6.1f GB/s\n", names[v], med * 1e3, gbs[v]);
    }
    /* the bandwidth ratio pass/reference of each round (both timed within
     * ~30 ms of each other), then the median over rounds: steadier than a
     * ratio of medians when other tenants load the memory in bursts */
    for (int ref = TRIAD; ref <= SCALE_NT; ref++) {
        printf("ratio pass/%s (median of per-round ratios):", names[ref]);
        for (int v = SOFTMAX; v <= LAYERNORM; v++) {
            double q[64];
            for (int r = 0; r < reps; r++)
                q[r] = (bytes[v] / traw[v][r]) / (bytes[ref] / traw[ref][r]);
            printf(" %s %.2f", v == SOFTMAX ? "softmax" : "layernorm", median(q, reps));
        }
        printf("\n");
    }
    free(X);
    free(Y);
    free(T);
    free(g);
    free(bt);
}

int main(int argc, char **argv)
{
    /* the CLI's BLAS core choice: an inherited OPENBLAS_CORETYPE pin would
     * measure a slower OpenBLAS than this CPU runs (re-executes once) */
    comet_util_self_init(argv[0]);
    comet_util_blas_core_policy(argv);
    fprintf(stderr, "# BLAS core: %s\n", getenv("COMET_BLAS_CORE_POLICY"));
    int threads = argc > 1 ? atoi(argv[1]) : 1, reps = argc > 2 ? atoi(argv[2]) : 7;
    const char *mode = argc > 3 ? argv[3] : "all";
    if (threads < 1 || reps < 1 || reps > 63
        || (strcmp(mode, "all") && strcmp(mode, "gemm") && strcmp(mode, "passes")
            && strcmp(mode, "attention"))) {
        fprintf(
            stderr, "usage: kernel_perf [threads>=1] [reps 1..63] [all|gemm|passes|attention]\n");
        return 2;
    }
    int do_gemm = !strcmp(mode, "all") || !strcmp(mode, "gemm");
    int do_passes = !strcmp(mode, "all") || !strcmp(mode, "passes");
    int do_attn = !strcmp(mode, "all") || !strcmp(mode, "attention");
    size_t M = 4096, N = 4096;
    size_t Ks[3] = { 16, 64, 256 };
    /* Y and C 64-byte aligned: the triad uses aligned vector loads */
    float *A = big_alloc(M * 256 * 4), *B = big_alloc(256 * N * 4), *Y = big_alloc(M * N * 4),
          *C = big_alloc(M * N * 4), *g = malloc(N * 4), *bt = malloc(N * 4);
    void *ws = big_alloc(M * N * 4 + 256 * N * 4 + 4096);
    fill(A, M * 256);
    fill(B, 256 * N);
    fill(g, N);
    fill(bt, N);
    memset(Y, 0, M * N * 4);
    memset(C, 0, M * N * 4);
    printf("# M=N=%zu, threads=%d, %d interleaved rounds, median ms (GFLOP/s of the GEMM part)\n",
        M, threads, reps);
    for (int op = 0; op < 2 * do_gemm; op++)
        for (int ki = 0; ki < 3; ki++) {
            size_t K = Ks[ki];
            enum { SG, UNF, FUK, FBL, GUK, GBL, SAME, PLAIN, TRI, NV };
            const char *names[NV] = { "sgemm", "unfused", "fused(ukernel)", "fused(openblas)",
                "gemm-in-fused(ukernel)", "gemm-in-fused(openblas)", "unfused_same_gemm",
                "plain-ukernel-gemm", "triad(64MiB)" };
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
                    if (v == TRI) {
                        /* the bandwidth the bytes fusion saves would have cost */
                        triad(Y, C, Y, M * N, 0.5f, threads);
                    } else if (v == SG) {
                        openblas_set_num_threads(threads);
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N,
                            (int)K, 1.0f, A, (int)K, B, (int)N, 0.0f, C, (int)N);
                    } else {
                        comet_kernels_variant var = v == UNF ? COMET_KERNELS_UNFUSED
                            : v == SAME                      ? COMET_KERNELS_UNFUSED_SAME_GEMM
                                                             : COMET_KERNELS_FUSED;
                        q.ukernel = (v == FUK || v == GUK || v == SAME || v == PLAIN)
                            ? 1
                            : ((v == FBL || v == GBL) ? 2 : 0);
                        /* PLAIN: the same micro-kernel writing the whole product */
                        q.gemm_only = v == GUK || v == GBL ? 1 : v == PLAIN ? 2 : 0;
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
                if (v == TRI) /* not a GEMM: its bandwidth, STREAM counting */
                    printf("  %s %.2f (%.1f GB/s)", names[v], med[v] * 1e3,
                        3.0 * M * N * 4 / med[v] * 1e-9);
                else
                    printf("  %s %.2f (%.1f)", names[v], med[v] * 1e3, fl / med[v] * 1e-9);
            }
            printf("\n   speedup fused(ukernel)/unfused %.2fx, fused(openblas)/unfused %.2fx;"
                   " GEMM in fused vs sgemm: ukernel %.0f%%, openblas %.0f%%\n",
                med[UNF] / med[FUK], med[UNF] / med[FBL], 100 * med[SG] / med[GUK],
                100 * med[SG] / med[GBL]);
            /* the fusion effect against its roofline: fusion saves writing
             * and reading the M x N intermediate (2 x 4 MN bytes, STREAM
             * counting) at the triad's bandwidth measured in this run */
            double bw = 3.0 * M * N * 4 / med[TRI], saved = 2.0 * M * N * 4 / bw;
            double ideal = med[SAME] > saved ? med[SAME] / (med[SAME] - saved) : INFINITY;
            printf("   fusion effect (fused(ukernel) vs unfused_same_gemm) %.2fx; roofline from "
                   "the bytes saved %.2fx (triad %.1f GB/s): %.0f%% of it; GEMM in fused vs the "
                   "same micro-kernel's plain GEMM %.0f%%\n",
                med[SAME] / med[FUK], ideal, bw * 1e-9, 100 * (med[SAME] / med[FUK]) / ideal,
                100 * med[PLAIN] / med[GUK]);
        }
    if (do_passes)
        for (int ki = 0; ki < 3; ki++)
            run_passes(M, N, Ks[ki], A, B, threads, reps);
    /* attention Lq = Lk = 4096, d = 64 */
    if (do_attn) {
        comet_kernels_shape s = { .batch = 1, .heads = 1, .lq = 4096, .lk = 4096, .d = 64 };
        size_t n = 4096 * 64;
        float *Q = big_alloc(n * 4), *K = big_alloc(n * 4), *V = big_alloc(n * 4),
              *O = big_alloc(n * 4);
        fill(Q, n);
        fill(K, n);
        fill(V, n);
        double ta[COMET_KERNELS_NVARIANTS][64];
        comet_kernels_params p;
        comet_kernels_default_params(
            COMET_KERNELS_ATTENTION, &s, 32 << 10, 512 << 10, 32 << 20, threads, &p);
        for (int r = 0; r < reps; r++)
            for (int v = 0; v < COMET_KERNELS_NVARIANTS; v++) {
                int var = (v + r) % COMET_KERNELS_NVARIANTS;
                size_t wsb = 0;
                comet_kernels_workspace_size(COMET_KERNELS_ATTENTION, var, &s, &p, &wsb);
                double t0 = now();
                comet_kernels_attention(var, &s, Q, K, V, O, &p, ws, wsb);
                ta[var][r] = now() - t0;
            }
        double mu = median(ta[COMET_KERNELS_UNFUSED], reps),
               mf = median(ta[COMET_KERNELS_FUSED], reps),
               ms = median(ta[COMET_KERNELS_UNFUSED_SAME_GEMM], reps);
        printf("attention Lq=Lk=4096 d=64: unfused %.2f ms, unfused_same_gemm %.2f ms, fused %.2f "
               "ms; vs BLAS %.2fx, fusion effect %.2fx\n",
            mu * 1e3, ms * 1e3, mf * 1e3, mu / mf, ms / mf);
    }
    return 0;
}
