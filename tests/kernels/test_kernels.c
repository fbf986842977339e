/* Kernels against a double-precision reference: every variant, edge shapes,
 * extreme inputs, masks, NaN, the exp's error, invalid arguments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_kernels.h"
#include "kernels_internal.h"
#include "kref.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GEMM error grows ~ K * 2^-24 relative to sum |a||b|; softmax/LayerNorm
 * outputs add a few ulps. Inputs are O(1) so an absolute floor scaled by K
 * covers cancellation. */
static double tol_for_k(size_t K)
{
    return 8.0 * (double)(K + 8) * 5.96e-8;
}

typedef struct case_t {
    size_t M, N, K;
} case_t;

static void run_gemm_op(int layernorm, comet_kernels_variant v, size_t M, size_t N, size_t K,
    int threads, int ukernel, size_t tile_m, float lo, float hi)
{
    float *A = malloc(M * K * sizeof(float)), *B = malloc(K * N * sizeof(float));
    float *Y = malloc(M * N * sizeof(float)), *g = malloc(N * sizeof(float)),
          *b = malloc(N * sizeof(float));
    double *R = malloc(M * N * sizeof(double));
    kref_fill(A, M * K, (unsigned)(M + 3 * N + 7 * K), lo, hi);
    kref_fill(B, K * N, (unsigned)(5 * M + N + K), -1, 1);
    kref_fill(g, N, 11, 0.5f, 1.5f);
    kref_fill(b, N, 12, -0.5f, 0.5f);
    comet_kernels_params p;
    memset(&p, 0, sizeof p);
    p.threads = threads;
    p.ukernel = ukernel;
    p.tile_m = tile_m;
    p.scale = layernorm ? 0 : 0.125f;
    p.eps = 1e-5f;
    comet_kernels_shape s = { .M = M, .N = N, .K = K };
    comet_kernels_op op = layernorm ? COMET_KERNELS_GEMM_LAYERNORM : COMET_KERNELS_GEMM_SOFTMAX;
    size_t ws = 0;
    assert_int_equal(comet_kernels_workspace_size(op, v, &s, &p, &ws), 0);
    void *w = ws ? malloc(ws) : NULL;
    int rc = layernorm ? comet_kernels_gemm_layernorm(v, M, N, K, A, B, g, b, Y, &p, w, ws)
                       : comet_kernels_gemm_softmax(v, M, N, K, A, B, Y, &p, w, ws);
    assert_int_equal(rc, 0);
    kref_gemm(M, N, K, layernorm ? 1.0 : 0.125, A, B, R);
    for (size_t i = 0; i < M; i++) {
        if (layernorm)
            kref_layernorm_row(R + i * N, N, g, b, 1e-5);
        else
            kref_softmax_row(R + i * N, N);
    }
    size_t worst = 0;
    double tol = tol_for_k(K) * (hi > 2 ? 64 : 1); /* large inputs amplify exp's error */
    /* LayerNorm divides by the row's std: relative error scales with 1/std */
    double e
        = kref_compare(Y, R, M * N, tol * (layernorm ? 16 : 1), layernorm ? 1e-4 : 1e-9, &worst);
    if (e > 1.0)
        fail_msg("%s %s M=%zu N=%zu K=%zu thr=%d uk=%d tile=%zu: err ratio %.3g at %zu "
                 "(got %.9g want %.9g)",
            layernorm ? "layernorm" : "softmax", comet_kernels_variant_name(v), M, N, K, threads,
            ukernel, tile_m, e, worst, Y[worst], R[worst]);
    free(A);
    free(B);
    free(Y);
    free(g);
    free(b);
    free(R);
    free(w);
}

static const case_t shapes[]
    = { { 1, 1, 1 }, { 1, 17, 3 }, { 7, 1, 5 }, { 13, 31, 1 }, { 6, 16, 16 }, { 37, 53, 29 },
          { 64, 100, 64 }, { 97, 257, 96 }, { 50, 70, 200 }, { 128, 1000, 16 } };

static void test_gemm_softmax_all(void **st)
{
    (void)st;
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
        for (int v = 0; v < COMET_KERNELS_NVARIANTS; v++)
            for (int uk = 0; uk <= 2; uk++)
                for (int thr = 1; thr <= 3; thr++) /* 3: blocks shared unevenly */
                    run_gemm_op(0, (comet_kernels_variant)v, shapes[c].M, shapes[c].N, shapes[c].K,
                        thr, uk, c % 2 ? 7 : 0, -1, 1);
}

static void test_gemm_layernorm_all(void **st)
{
    (void)st;
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++)
        for (int v = 0; v < COMET_KERNELS_NVARIANTS; v++)
            for (int uk = 0; uk <= 2; uk++)
                run_gemm_op(1, (comet_kernels_variant)v, shapes[c].M, shapes[c].N, shapes[c].K,
                    1 + (int)(c % 2), uk, c % 3 ? 5 : 0, -1, 1);
}

/* Inputs whose logits approach expf's overflow (|x| near 88). */
static void test_softmax_large_logits(void **st)
{
    (void)st;
    size_t M = 9, N = 300;
    float *X = malloc(M * N * sizeof(float)), *Y = malloc(M * N * sizeof(float));
    double *R = malloc(M * N * sizeof(double));
    kref_fill(X, M * N, 5, -88.0f, 88.0f);
    X[3] = 88.7f;
    X[N + 5] = -88.7f;
    for (size_t i = 0; i < M * N; i++)
        R[i] = X[i];
    for (size_t i = 0; i < M; i++)
        kref_softmax_row(R + i * N, N);
    assert_int_equal(comet_kernels_softmax_rows(M, N, X, N, Y, N, 1.0f, 2), 0);
    size_t w = 0;
    assert_true(kref_compare(Y, R, M * N, 1e-5, 1e-30, &w) <= 1.0);
    free(X);
    free(Y);
    free(R);
}

/* The row passes with the store policy stated: cached and streamed stores
 * (a tile well below the size rule's 16 MiB, with odd widths and an ld
 * beyond N) give the reference's rows, at 1 and 2 threads, on every ISA
 * path; an unknown policy is refused. */
static void test_rows_store_policy(void **st)
{
    (void)st;
    const size_t M = 13, N = 301, ld = 320;
    float *X = malloc(M * ld * sizeof(float)), *Y = aligned_alloc(64, M * ld * sizeof(float)),
          g[301], b[301];
    double *R = malloc(M * N * sizeof(double)), *L = malloc(M * N * sizeof(double));
    assert_true(X && Y && R && L);
    kref_fill(X, M * ld, 21, -4, 4);
    kref_fill(g, N, 22, 0.5f, 2);
    kref_fill(b, N, 23, -1, 1);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            R[i * N + j] = L[i * N + j] = X[i * ld + j];
    for (size_t i = 0; i < M; i++) {
        kref_softmax_row(R + i * N, N);
        kref_layernorm_row(L + i * N, N, g, b, 1e-5);
    }
    for (int portable = 0; portable <= 1; portable++) {
        comet_kernels_force_portable(portable);
        for (int pol = 0; pol < 3; pol++)
            for (int T = 1; T <= 2; T++) {
                double worst = 0;
                memset(Y, 0, M * ld * sizeof(float));
                assert_int_equal(comet_kernels_softmax_rows_ex(
                                     M, N, X, ld, Y, ld, 1.0f, T, (comet_kernels_stores)pol),
                    0);
                for (size_t i = 0; i < M; i++) {
                    size_t w = 0;
                    worst = fmax(worst, kref_compare(Y + i * ld, R + i * N, N, 1e-5, 1e-30, &w));
                }
                assert_true(worst <= 1.0);
                assert_int_equal(comet_kernels_layernorm_rows_ex(
                                     M, N, X, ld, Y, ld, g, b, 1e-5f, T, (comet_kernels_stores)pol),
                    0);
                for (size_t i = 0; i < M; i++) {
                    size_t w = 0;
                    worst = fmax(worst, kref_compare(Y + i * ld, L + i * N, N, 1e-4, 1e-6, &w));
                }
                assert_true(worst <= 1.0);
            }
    }
    comet_kernels_force_portable(0);
    assert_int_equal(
        comet_kernels_softmax_rows_ex(M, N, X, ld, Y, ld, 1.0f, 1, (comet_kernels_stores)7),
        -EINVAL);
    assert_int_equal(comet_kernels_layernorm_rows_ex(
                         M, N, X, ld, Y, ld, g, b, 1e-5f, 1, (comet_kernels_stores)-1),
        -EINVAL);
    free(X);
    free(Y);
    free(R);
    free(L);
}

static void test_softmax_masks_and_nan(void **st)
{
    (void)st;
    for (int portable = 0; portable <= 1; portable++) {
        comet_kernels_force_portable(portable);
        size_t N = 37;
        float X[4 * 37], Y[4 * 37];
        kref_fill(X, 4 * N, 9, -3, 3);
        for (size_t j = 0; j < N; j++)
            X[j] = -INFINITY; /* row 0 fully masked -> zeros */
        for (size_t j = 0; j < N; j += 2)
            X[N + j] = -INFINITY; /* row 1 half masked */
        X[2 * N + 36] = NAN; /* row 2: NaN in the tail */
        X[3 * N + 0] = NAN; /* row 3: NaN first (order-dependent max drops it) */
        assert_int_equal(comet_kernels_softmax_rows(4, N, X, N, Y, N, 1.0f, 1), 0);
        for (size_t j = 0; j < N; j++) {
            assert_true(Y[j] == 0.0f);
            if (j % 2 == 0)
                assert_true(Y[N + j] == 0.0f);
            else
                assert_true(Y[N + j] > 0.0f);
            assert_true(isnan(Y[2 * N + j]));
            assert_true(isnan(Y[3 * N + j]));
        }
        double s = 0;
        for (size_t j = 0; j < N; j++)
            s += Y[N + j];
        assert_true(fabs(s - 1.0) < 1e-5);
    }
    comet_kernels_force_portable(0);
}

static void test_layernorm_rows_edge(void **st)
{
    (void)st;
    /* constant row: variance 0 -> output beta; large offset: two-pass keeps precision */
    size_t N = 1000;
    float *X = malloc(2 * N * sizeof(float)), *Y = malloc(2 * N * sizeof(float));
    double *R = malloc(2 * N * sizeof(double));
    for (size_t j = 0; j < N; j++) {
        X[j] = 3.0f;
        X[N + j] = 10000.0f + (float)(j % 7) * 0.25f;
    }
    for (size_t i = 0; i < 2 * N; i++)
        R[i] = X[i];
    kref_layernorm_row(R, N, NULL, NULL, 1e-5);
    kref_layernorm_row(R + N, N, NULL, NULL, 1e-5);
    assert_int_equal(comet_kernels_layernorm_rows(2, N, X, N, Y, N, NULL, NULL, 1e-5f, 1), 0);
    for (size_t j = 0; j < N; j++)
        assert_true(Y[j] == 0.0f);
    size_t w = 0;
    /* E[x^2]-E[x]^2 in float would be off by O(1) here */
    assert_true(kref_compare(Y + N, R + N, N, 1e-3, 1e-3, &w) <= 1.0);
    X[5] = NAN;
    assert_int_equal(comet_kernels_layernorm_rows(1, N, X, N, Y, N, NULL, NULL, 1e-5f, 1), 0);
    assert_true(isnan(Y[0]) && isnan(Y[N - 1]));
    free(X);
    free(Y);
    free(R);
}

/* Rows whose spread float squares cannot hold (#19 bug 1: beyond ~1e19
 * every output became beta) and whose sum float cannot hold (values near
 * FLT_MAX), on every path: portable, AVX2, AVX-512, rows and the fused
 * epilogue; against a double reference of the float inputs. */
static void test_layernorm_huge_spread(void **st)
{
    (void)st;
    const size_t N = 203; /* vector tails on every path */
    const float spreads[] = { 1e18f, 1e19f, 1e20f, 1e30f, 1.5e38f, 3.4e38f };
    const size_t R = sizeof spreads / sizeof spreads[0];
    float *X = malloc(R * N * sizeof(float)), *Y = malloc(R * N * sizeof(float)),
          *g = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
    double *Rf = malloc(R * N * sizeof(double));
    kref_fill(g, N, 21, 0.5f, 1.5f);
    kref_fill(b, N, 22, -0.5f, 0.5f);
    for (size_t r = 0; r < R; r++) {
        kref_fill(X + r * N, N, (unsigned)(31 + r), -1, 1);
        for (size_t j = 0; j < N; j++)
            X[r * N + j] *= spreads[r];
    }
    for (size_t i = 0; i < R * N; i++)
        Rf[i] = X[i];
    for (size_t r = 0; r < R; r++)
        kref_layernorm_row(Rf + r * N, N, g, b, 1e-5);
    for (int portable = 0; portable <= 1; portable++) {
        comet_kernels_force_portable(portable);
        for (int thr = 1; thr <= 2; thr++) {
            memset(Y, 0, R * N * sizeof(float));
            assert_int_equal(comet_kernels_layernorm_rows(R, N, X, N, Y, N, g, b, 1e-5f, thr), 0);
            size_t w = 0;
            double e = kref_compare(Y, Rf, R * N, 1e-5, 1e-5, &w);
            if (e > 1.0)
                fail_msg("layernorm rows portable=%d avx512=%d thr=%d: ratio %.3g at row %zu "
                         "(got %.8g want %.8g)",
                    portable, comet_kernels_have_avx512(), thr, e, w / N, Y[w], Rf[w]);
        }
        /* the fused epilogue: A = the rows, B = identity */
        float *I = calloc(N * N, sizeof(float));
        for (size_t j = 0; j < N; j++)
            I[j * N + j] = 1.0f;
        comet_kernels_params p = { .threads = 1, .eps = 1e-5f, .ukernel = 1 };
        comet_kernels_shape sh = { .M = R, .N = N, .K = N };
        for (int v = 0; v < COMET_KERNELS_NVARIANTS; v++) {
            size_t ws = 0;
            assert_int_equal(comet_kernels_workspace_size(COMET_KERNELS_GEMM_LAYERNORM,
                                 (comet_kernels_variant)v, &sh, &p, &ws),
                0);
            void *wk = malloc(ws);
            assert_int_equal(comet_kernels_gemm_layernorm(
                                 (comet_kernels_variant)v, R, N, N, X, I, g, b, Y, &p, wk, ws),
                0);
            size_t w = 0;
            double e = kref_compare(Y, Rf, R * N, 1e-5, 1e-5, &w);
            if (e > 1.0)
                fail_msg("gemm_layernorm %s portable=%d: ratio %.3g at row %zu (got %.8g want "
                         "%.8g)",
                    comet_kernels_variant_name((comet_kernels_variant)v), portable, e, w / N, Y[w],
                    Rf[w]);
            free(wk);
        }
        free(I);
    }
    comet_kernels_force_portable(0);
    free(X);
    free(Y);
    free(g);
    free(b);
    free(Rf);
}

static void ref_attention(const comet_kernels_shape *s, int causal, float scale, const float *Q,
    const float *K, const float *V, double *O)
{
    size_t lq = s->lq, lk = s->lk, d = s->d;
    double *S = malloc(lk * sizeof(double));
    for (size_t h = 0; h < s->batch * s->heads; h++)
        for (size_t i = 0; i < lq; i++) {
            for (size_t j = 0; j < lk; j++) {
                double a = 0;
                for (size_t c = 0; c < d; c++)
                    a += (double)Q[(h * lq + i) * d + c] * K[(h * lk + j) * d + c];
                S[j] = a * scale;
                long lim = (long)i + (long)lk - (long)lq;
                if (causal && (long)j > lim)
                    S[j] = -INFINITY;
            }
            kref_softmax_row(S, lk);
            for (size_t c = 0; c < d; c++) {
                double a = 0;
                /* a masked key contributes nothing, whatever its value */
                long lim = (long)i + (long)lk - (long)lq;
                for (size_t j = 0; j < lk; j++)
                    if (!causal || (long)j <= lim)
                        a += S[j] * V[(h * lk + j) * d + c];
                O[(h * lq + i) * d + c] = a;
            }
        }
    free(S);
}

static void run_attention(comet_kernels_variant v, size_t B, size_t H, size_t lq, size_t lk,
    size_t d, int causal, int threads, size_t tm, size_t tn, int nan_row)
{
    comet_kernels_shape s = { .batch = B, .heads = H, .lq = lq, .lk = lk, .d = d };
    size_t bh = B * H;
    float *Q = malloc(bh * lq * d * 4), *K = malloc(bh * lk * d * 4), *V = malloc(bh * lk * d * 4),
          *O = malloc(bh * lq * d * 4);
    double *R = malloc(bh * lq * d * sizeof(double));
    kref_fill(Q, bh * lq * d, 1, -1, 1);
    kref_fill(K, bh * lk * d, 2, -1, 1);
    kref_fill(V, bh * lk * d, 3, -1, 1);
    if (nan_row == 1)
        Q[1 * d + 2] = NAN; /* query row 1 of head 0 */
    if (nan_row == 2) /* the last key's value, which a causal mask hides from
                       * every query row but the last (a masked key must
                       * contribute nothing, NaN included) */
        V[(lk - 1) * d] = NAN;
    comet_kernels_params p;
    memset(&p, 0, sizeof p);
    p.threads = threads;
    p.causal = causal;
    p.tile_m = tm;
    p.tile_n = tn;
    float scale = (float)(1.0 / sqrt((double)d));
    size_t ws = 0;
    assert_int_equal(comet_kernels_workspace_size(COMET_KERNELS_ATTENTION, v, &s, &p, &ws), 0);
    void *w = malloc(ws ? ws : 1);
    assert_int_equal(comet_kernels_attention(v, &s, Q, K, V, O, &p, w, ws), 0);
    ref_attention(&s, causal, scale, Q, K, V, R);
    size_t worst = 0;
    double e = kref_compare(O, R, bh * lq * d, tol_for_k(lk + d) * 4, 1e-5, &worst);
    if (e > 1.0)
        fail_msg("attention %s lq=%zu lk=%zu d=%zu causal=%d tiles %zu/%zu: ratio %.3g at %zu "
                 "(got %.8g want %.8g)",
            comet_kernels_variant_name(v), lq, lk, d, causal, tm, tn, e, worst, O[worst], R[worst]);
    free(Q);
    free(K);
    free(V);
    free(O);
    free(R);
    free(w);
}

static void test_attention_all(void **st)
{
    (void)st;
    for (int v = 0; v < COMET_KERNELS_NVARIANTS; v++)
        for (int causal = 0; causal <= 1; causal++) {
            run_attention((comet_kernels_variant)v, 1, 1, 1, 1, 1, causal, 1, 0, 0, 0);
            /* one query row a head (decode): 2 x 3 heads over 2 threads, a
             * NaN query in head 1, a NaN value in the last key */
            run_attention((comet_kernels_variant)v, 2, 3, 1, 257, 64, causal, 2, 0, 0, 0);
            run_attention((comet_kernels_variant)v, 1, 3, 1, 300, 24, causal, 3, 0, 0, 1);
            run_attention((comet_kernels_variant)v, 2, 2, 1, 65, 16, causal, 1, 0, 0, 2);
            run_attention((comet_kernels_variant)v, 2, 3, 37, 53, 16, causal, 2, 8, 16, 0);
            run_attention((comet_kernels_variant)v, 1, 2, 64, 64, 64, causal, 1, 0, 0, 0);
            run_attention((comet_kernels_variant)v, 1, 1, 53, 29, 8, causal, 2, 7, 5, 0);
            run_attention((comet_kernels_variant)v, 1, 1, 20, 300, 32, causal, 1, 6, 64, 1);
            run_attention((comet_kernels_variant)v, 1, 2, 70, 70, 16, causal, 2, 16, 32, 2);
            run_attention((comet_kernels_variant)v, 1, 1, 130, 130, 64, causal, 1, 0, 0, 2);
            /* one head (K^T and V panels 10 and 2, both partial) over 3 threads,
             * each packing its own copy */
            run_attention((comet_kernels_variant)v, 1, 1, 45, 150, 24, causal, 3, 16, 32, 0);
            /* 2 x 5 heads of 5 query blocks over 3 threads: shares that end
             * inside a head (both threads pack it), causal zig-zag order */
            run_attention((comet_kernels_variant)v, 2, 5, 40, 61, 16, causal, 3, 8, 16, 0);
            run_attention((comet_kernels_variant)v, 1, 3, 33, 33, 32, causal, 2, 4, 16, 2);
            /* d = 20: K^T's panels in 8 x 8 register transposes for 16 of
             * d's columns, the last 4 and the partial last panel (lk = 53)
             * element by element */
            run_attention((comet_kernels_variant)v, 1, 2, 29, 53, 20, causal, 2, 8, 16, 0);
        }
}

/* Called where OpenMP gives its team fewer threads than asked (inside a
 * caller's parallel region, nesting off: a team of one), every variant of
 * attention still computes every head and block, as with one thread. */
static void test_attention_smaller_team(void **st)
{
    (void)st;
    comet_kernels_shape s = { .batch = 1, .heads = 3, .lq = 40, .lk = 61, .d = 16 };
    const size_t n = 3 * 40 * 16, nk = 3 * 61 * 16;
    float *Q = malloc(n * 4), *K = malloc(nk * 4), *V = malloc(nk * 4), *O1 = malloc(n * 4),
          *O3 = malloc(n * 4);
    assert_non_null(Q && K && V && O1 && O3);
    kref_fill(Q, n, 3, -1, 1);
    kref_fill(K, nk, 4, -1, 1);
    kref_fill(V, nk, 5, -1, 1);
    const int saved = omp_get_max_active_levels();
    omp_set_max_active_levels(1);
    for (int v = 0; v < COMET_KERNELS_NVARIANTS; v++)
        for (int causal = 0; causal <= 1; causal++) {
            comet_kernels_params one
                = { .threads = 1, .tile_m = 8, .tile_n = 16, .causal = causal },
                three = one;
            three.threads = 3;
            size_t w1 = 0, w3 = 0;
            assert_int_equal(comet_kernels_workspace_size(
                                 COMET_KERNELS_ATTENTION, (comet_kernels_variant)v, &s, &one, &w1),
                0);
            assert_int_equal(comet_kernels_workspace_size(COMET_KERNELS_ATTENTION,
                                 (comet_kernels_variant)v, &s, &three, &w3),
                0);
            void *ws1 = malloc(w1 + 1), *ws3 = malloc(w3 + 1);
            assert_non_null(ws1 && ws3);
            memset(O3, 0, n * 4);
            int rc1 = comet_kernels_attention(
                (comet_kernels_variant)v, &s, Q, K, V, O1, &one, ws1, w1 + 1);
            int rc3 = -1;
#pragma omp parallel num_threads(2)
            {
#pragma omp master
                rc3 = comet_kernels_attention(
                    (comet_kernels_variant)v, &s, Q, K, V, O3, &three, ws3, w3 + 1);
            }
            free(ws1);
            free(ws3);
            assert_int_equal(rc1, 0);
            assert_int_equal(rc3, 0);
            /* the same blocks computed the same way: equal to the bit */
            for (size_t i = 0; i < n; i++)
                if (memcmp(&O3[i], &O1[i], sizeof(float)))
                    fail_msg("%s causal %d: a team of one left O[%zu] = %g, want %g",
                        comet_kernels_variant_name((comet_kernels_variant)v), causal, i,
                        (double)O3[i], (double)O1[i]);
        }
    omp_set_max_active_levels(saved);
    free(Q);
    free(K);
    free(V);
    free(O1);
    free(O3);
}

/* A dimension of 2^31 or more is refused, never truncated into BLAS's ints. */
static void test_huge_dims_refused(void **st)
{
    (void)st;
    const size_t big = (size_t)1 << 31;
    comet_kernels_params p = { .threads = 1 };
    comet_kernels_shape s = { .M = 4, .N = 4, .K = big };
    size_t ws = 0;
    assert_int_equal(
        comet_kernels_workspace_size(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &s, &p, &ws),
        -EOVERFLOW);
    float dummy[16] = { 0 };
    char w[64];
    assert_int_equal(comet_kernels_gemm_softmax(
                         COMET_KERNELS_UNFUSED, 4, 4, big, dummy, dummy, dummy, &p, w, sizeof w),
        -EOVERFLOW);
    comet_kernels_shape a = { .batch = 1, .heads = 1, .lq = 4, .lk = big, .d = 4 };
    assert_int_equal(
        comet_kernels_workspace_size(COMET_KERNELS_ATTENTION, COMET_KERNELS_FUSED, &a, &p, &ws),
        -EOVERFLOW);
}

static void test_fused_equals_unfused(void **st)
{
    (void)st;
    size_t M = 67, N = 129, K = 48;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *Y0 = malloc(M * N * 4),
          *Y1 = malloc(M * N * 4);
    kref_fill(A, M * K, 1, -2, 2);
    kref_fill(B, K * N, 2, -2, 2);
    comet_kernels_params p = { .threads = 2 };
    comet_kernels_shape s = { .M = M, .N = N, .K = K };
    size_t w0, w1;
    comet_kernels_workspace_size(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_UNFUSED, &s, &p, &w0);
    comet_kernels_workspace_size(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &s, &p, &w1);
    void *ws = malloc(w0 > w1 ? w0 : w1);
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_UNFUSED, M, N, K, A, B, Y0, &p, ws, w0), 0);
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_FUSED, M, N, K, A, B, Y1, &p, ws, w1), 0);
    for (size_t i = 0; i < M * N; i++)
        assert_true(fabsf(Y0[i] - Y1[i]) <= 1e-5f * fabsf(Y0[i]) + 1e-7f);
    free(A);
    free(B);
    free(Y0);
    free(Y1);
    free(ws);
}

/* gemm_only: 1 leaves Y untouched (the product stays in the tile), 2 writes
 * the scaled product, through both GEMM engines and tile edges */
static void test_gemm_only(void **st)
{
    (void)st;
    size_t M = 37, N = 53, K = 29;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *Y = malloc(M * N * 4);
    double *R = malloc(M * N * sizeof(double));
    kref_fill(A, M * K, 3, -1, 1);
    kref_fill(B, K * N, 4, -1, 1);
    kref_gemm(M, N, K, 0.125, A, B, R);
    comet_kernels_shape s = { .M = M, .N = N, .K = K };
    for (int uk = 1; uk <= 2; uk++)
        for (int mode = 1; mode <= 2; mode++) {
            comet_kernels_params p = { .threads = 2, .ukernel = uk, .tile_m = 8, .scale = 0.125f };
            p.gemm_only = mode;
            size_t wsb = 0;
            assert_int_equal(comet_kernels_workspace_size(
                                 COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &s, &p, &wsb),
                0);
            void *ws = malloc(wsb);
            for (size_t i = 0; i < M * N; i++)
                Y[i] = -7.0f;
            assert_int_equal(
                comet_kernels_gemm_softmax(COMET_KERNELS_FUSED, M, N, K, A, B, Y, &p, ws, wsb), 0);
            size_t worst = 0;
            /* products cancel towards 0: the absolute floor is the error
             * bound on sum |a b| <= 0.125 K */
            double e = kref_compare(Y, R, M * N, tol_for_k(K), tol_for_k(K) * 0.125 * K, &worst);
            if (mode == 2 && e > 1.0)
                fail_msg("gemm_only 2 uk=%d: err ratio %.3g at %zu (got %.9g want %.9g)", uk, e,
                    worst, Y[worst], R[worst]);
            if (mode == 1)
                for (size_t i = 0; i < M * N; i++)
                    assert_true(Y[i] == -7.0f);
            free(ws);
        }
    free(A);
    free(B);
    free(Y);
    free(R);
}

static void test_exp_error(void **st)
{
    (void)st;
    double worst = 0;
    size_t n = 1 << 20;
    float *x = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = -87.3f + (88.7f + 87.3f) * (float)i / (float)(n - 1);
    comet_kernels_vexp(x, y, n);
    for (size_t i = 0; i < n; i++) {
        double r = exp((double)x[i]);
        double e = fabs(y[i] - r) / r;
        if (e > worst)
            worst = e;
    }
    printf("# vexp max relative error over [-87.3, 88.7]: %.3g (stated bound %.3g, avx2 %d)\n",
        worst, comet_kernels_exp_max_rel_error(), comet_kernels_have_avx2());
    assert_true(worst <= comet_kernels_exp_max_rel_error());
    float sp[6] = { NAN, INFINITY, -INFINITY, 89.0f, -200.0f, 0.0f }, so[6];
    comet_kernels_vexp(sp, so, 6);
    assert_true(isnan(so[0]));
    assert_true(isinf(so[1]) && so[1] > 0);
    assert_true(so[2] == 0.0f);
    assert_true(isinf(so[3]));
    assert_true(so[4] == 0.0f);
    assert_true(so[5] == 1.0f);
    free(x);
    free(y);
}

/* exp(x - shift), the softmax form: against exp() of the exact difference
 * (double subtraction, as an independent oracle computes it) over the whole
 * non-positive range, for shifts whose float differences round (a float
 * subtraction alone is 65 ulp off near -87 with shift -40.7), above-shift
 * clamp, NaN, a tail shorter than a vector */
static void test_exp_shifted(void **st)
{
    (void)st;
    size_t n = (1 << 19) + 5;
    const float shifts[] = { 0.0f, 1.5f, 7.3141f, -3.3f, 80.1f, -40.7f, 1e-3f, 3.0e4f };
    float *x = malloc(n * 4), *y = malloc(n * 4);
    uint64_t st2 = 12345;
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
        const float shift = shifts[s];
        double worst = 0, worst_at = 0;
        for (size_t i = 0; i < n; i++) {
            st2 = st2 * 6364136223846793005ull + 1442695040888963407ull;
            /* every other point on an even grid, the rest random */
            const double u = i % 2 ? (double)(st2 >> 40) / 16777216.0 : (double)i / (double)(n - 1);
            x[i] = shift - (float)(87.3 * u);
        }
        comet_kernels_vexp_shifted(x, y, n, shift);
        for (size_t i = 0; i < n; i++) {
            const double a = (double)x[i] - (double)shift;
            const double r = exp(a);
            if (a > 0 || r < 1.1754944e-38) /* clamped to 1; below the smallest normal */
                continue;
            const double e = fabs(y[i] - r) / r;
            if (e > worst) {
                worst = e;
                worst_at = a;
            }
        }
        printf(
            "# vexp_shifted shift %g: max relative error %.3g at x - shift = %.3f (bound %.3g)\n",
            (double)shift, worst, worst_at, comet_kernels_exp_shifted_max_rel_error(87.3));
        assert_true(worst <= comet_kernels_exp_shifted_max_rel_error(87.3));
    }
    float sp[19] = { NAN, 3.0f, 1.5f, -INFINITY, 0.5f }, so[19];
    for (int i = 5; i < 19; i++)
        sp[i] = i % 2 ? NAN : 2.0f; /* the vector path and the tail */
    comet_kernels_vexp_shifted(sp, so, 19, 1.5f);
    assert_true(isnan(so[0]) && so[1] == 1.0f && so[2] == 1.0f && so[3] == 0.0f);
    assert_true(fabs(so[4] - exp(-1.0)) <= 1e-6);
    for (int i = 5; i < 19; i++)
        assert_true(i % 2 ? isnan(so[i]) : so[i] == 1.0f);
    free(x);
    free(y);
}

/* The softmax epilogue's exp (arguments <= 0, flush below the smallest
 * normal): relative error on normal results, exact 0 for -inf, and the sum. */
static void test_softmax_exp_error(void **st)
{
    (void)st;
    for (int portable = 0; portable <= 1; portable++) {
        comet_kernels_force_portable(portable);
        size_t n = (1 << 20) + 5; /* odd length: the vector tail is checked too */
        float *x = malloc(n * 4), *y = malloc(n * 4);
        for (size_t i = 0; i < n; i++)
            x[i] = -87.33f + (87.33f + 1e-3f) * (float)i / (float)(n - 1);
        double sum = kern_exp_shift_sum(x, y, n, 0.0f), rsum = 0, worst = 0;
        for (size_t i = 0; i < n; i++) {
            double r = exp((double)x[i]);
            rsum += r;
            double e = fabs(y[i] - r) / r;
            if (e > worst)
                worst = e;
        }
        printf("# softmax exp max relative error over [-87.33, 0] (portable %d, avx512 %d): %.3g\n",
            portable, kern_use_avx512(), worst);
        assert_true(worst <= comet_kernels_exp_max_rel_error());
        assert_true(fabs(sum - rsum) <= 1e-6 * rsum);
        float sp[11] = { -INFINITY, -88.0f, -1e30f, 0.0f, -0.5f, -1.0f, -2.0f, -3.0f, -4.0f, -5.0f,
            -INFINITY };
        float so[11];
        kern_exp_shift_sum(sp, so, 11, 0.0f);
        assert_true(so[0] == 0.0f && so[10] == 0.0f && so[2] == 0.0f);
        assert_true(so[1] >= 0.0f && so[1] < 1.2e-38f);
        assert_true(so[3] == 1.0f);
        free(x);
        free(y);
    }
    comet_kernels_force_portable(0);
}

/* The unfused row passes on every path the run selects (AVX-512 here, AVX2
 * under test_kernels_avx2, portable when forced), with ordinary and NT
 * stores, out of place and in place, rows whose starts are not aligned
 * (ld = N + 3), lengths around the vector widths, and the padding between
 * rows left untouched. */
static void check_rows(
    int layernorm, size_t M, size_t N, int threads, int inplace, float lo, float hi, int special)
{
    size_t ld = N + 3;
    float *X = malloc(M * ld * sizeof(float)), *Y = malloc(M * ld * sizeof(float));
    float *g = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float));
    double *R = malloc(M * N * sizeof(double));
    float *got = malloc(M * N * sizeof(float));
    kref_fill(X, M * ld, (unsigned)(N * 31 + M), lo, hi);
    kref_fill(g, N, 21, 0.5f, 1.5f);
    kref_fill(b, N, 22, -0.5f, 0.5f);
    /* gamma and beta are optional: cover each combination */
    const float *gg = (N & 1) ? NULL : g, *bb = (N & 2) ? NULL : b;
    if (special && M >= 4) {
        for (size_t j = 0; j < N; j++)
            X[j] = -INFINITY; /* row 0 fully masked */
        X[ld + N - 1] = NAN; /* row 1: NaN in the vector tail */
        X[2 * ld] = NAN; /* row 2: NaN first */
        for (size_t j = 0; j < N; j += 3)
            X[3 * ld + j] = -INFINITY; /* row 3 partly masked */
    }
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            R[i * N + j] = (double)X[i * ld + j] * (layernorm ? 1.0 : 0.5);
    for (size_t i = 0; i < M; i++) {
        if (layernorm)
            kref_layernorm_row(R + i * N, N, gg, bb, 1e-5);
        else
            kref_softmax_row(R + i * N, N);
    }
    const float sentinel = 12345.0f;
    float *out = inplace ? X : Y;
    if (!inplace)
        for (size_t i = 0; i < M * ld; i++)
            Y[i] = sentinel;
    if (layernorm)
        assert_int_equal(
            comet_kernels_layernorm_rows(M, N, X, ld, out, ld, gg, bb, 1e-5f, threads), 0);
    else
        assert_int_equal(comet_kernels_softmax_rows(M, N, X, ld, out, ld, 0.5f, threads), 0);
    for (size_t i = 0; i < M; i++) {
        for (size_t j = 0; j < N; j++)
            got[i * N + j] = out[i * ld + j];
        if (!inplace)
            for (size_t j = N; j < ld; j++)
                assert_true(Y[i * ld + j] == sentinel);
    }
    size_t w = 0;
    /* softmax: exp's 3.6e-7 plus the rounding of x*s - max, which grows with
     * |max| (ulp(88) is 7.6e-6); LayerNorm: a few ulps of (x - mean)/std */
    double big = hi > 8 ? 1e-5 : 2e-6;
    double e = layernorm ? kref_compare(got, R, M * N, 1e-5, 1e-5, &w)
                         : kref_compare(got, R, M * N, big, 1e-30, &w);
    if (e > 1.0)
        fail_msg("%s rows M=%zu N=%zu thr=%d inplace=%d [%g,%g] special=%d avx512=%d avx2=%d: err "
                 "ratio %.3g at %zu (got %.9g want %.9g)",
            layernorm ? "layernorm" : "softmax", M, N, threads, inplace, lo, hi, special,
            kern_use_avx512(), kern_use_avx2(), e, w, got[w], R[w]);
    if (special && M >= 4 && !layernorm)
        for (size_t j = 0; j < N; j++)
            assert_true(got[j] == 0.0f && isnan(got[N + j]) && isnan(got[2 * N + j]));
    free(X);
    free(Y);
    free(g);
    free(b);
    free(R);
    free(got);
}

static void test_row_passes_paths(void **st)
{
    (void)st;
    static const size_t ns[]
        = { 1, 2, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 97, 127, 257, 1000, 4099 };
    /* stream 0/1: ordinary/NT stores; 2: NT stores without scratch rows */
    for (int portable = 0; portable <= 1; portable++)
        for (int stream = 0; stream <= 2; stream++) {
            comet_kernels_force_portable(portable);
            kern_set_stream_min_bytes(stream ? 0 : SIZE_MAX);
            kern_set_row_scratch(stream != 2);
            for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++)
                for (int ln = 0; ln <= 1; ln++) {
                    int thr = 1 + (int)(c % 2);
                    check_rows(ln, 5, ns[c], thr, 0, -3, 3, 0);
                    check_rows(ln, 4, ns[c], thr, 1, -3, 3, 0);
                    check_rows(ln, 7, ns[c], thr, (int)(c % 2), -88, 88, 0);
                    check_rows(ln, 6, ns[c], thr, 0, -2, 2, 1);
                }
        }
    kern_set_stream_min_bytes((size_t)16 << 20);
    kern_set_row_scratch(1);
    comet_kernels_force_portable(0);
}

static void test_invalid_args(void **st)
{
    (void)st;
    float a[4] = { 0 }, b[4] = { 0 }, y[4];
    comet_kernels_params p = { .threads = 1 };
    comet_kernels_shape s = { .M = SIZE_MAX / 2, .N = 4, .K = 4 };
    size_t ws;
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_FUSED, 0, 2, 2, a, b, y, &p, NULL, 0), -EINVAL);
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_FUSED, 2, 2, 2, NULL, b, y, &p, NULL, 0), -EINVAL);
    assert_int_equal(comet_kernels_workspace_size(
                         COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_UNFUSED, &s, &p, &ws),
        -EOVERFLOW);
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_UNFUSED, SIZE_MAX / 2, 4, 4, a, b, y, &p, NULL, 0),
        -EOVERFLOW);
    /* workspace too small */
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_UNFUSED, 2, 2, 1, a, b, y, &p, NULL, 0), -ENOMEM);
    comet_kernels_params bad = { .threads = 0 };
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_FUSED, 2, 2, 1, a, b, y, &bad, a, 16), -EINVAL);
    comet_kernels_params neg = { .threads = 1, .eps = -1.0f };
    assert_int_equal(comet_kernels_gemm_layernorm(
                         COMET_KERNELS_FUSED, 2, 2, 1, a, b, NULL, NULL, y, &neg, a, 16),
        -EINVAL);
    assert_int_equal(comet_kernels_softmax_rows(2, 2, a, 1, y, 2, 1.0f, 1), -EINVAL);
    comet_kernels_op op;
    assert_int_equal(comet_kernels_op_parse("gemm_frob", &op), -EINVAL);
    assert_int_equal(comet_kernels_op_parse("attention", &op), 0);
    assert_int_equal(op, COMET_KERNELS_ATTENTION);
    comet_kernels_variant v;
    for (int i = 0; i < COMET_KERNELS_NVARIANTS; i++) {
        assert_int_equal(
            comet_kernels_variant_parse(comet_kernels_variant_name((comet_kernels_variant)i), &v),
            0);
        assert_int_equal(v, i);
    }
    assert_int_equal(comet_kernels_variant_parse("unfused_same", &v), -EINVAL);
    comet_kernels_shape ok = { .M = 4, .N = 4, .K = 4 };
    assert_int_equal(comet_kernels_workspace_size(COMET_KERNELS_GEMM_SOFTMAX,
                         (comet_kernels_variant)COMET_KERNELS_NVARIANTS, &ok, &p, &ws),
        -EINVAL);
    /* the method by size: small GEMM row ops run op by op on auto settings */
    comet_kernels_shape sm = { .M = 64, .N = 128, .K = 16 },
                        big = { .M = 4096, .N = 4096, .K = 16 };
    comet_kernels_params one = { .threads = 1 }, uk = { .threads = 1, .ukernel = 1 };
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &sm, &one), 1);
    assert_int_equal(comet_kernels_op_by_op(
                         COMET_KERNELS_GEMM_LAYERNORM, COMET_KERNELS_UNFUSED_SAME_GEMM, &sm, &one),
        1);
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &big, &one), 0);
    /* the boundary: 128 KiB of product a thread */
    comet_kernels_shape at = { .M = 128, .N = 256, .K = 64 },
                        past = { .M = 256, .N = 256, .K = 64 };
    comet_kernels_params two = { .threads = 2 };
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &at, &one), 1);
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &past, &one), 0);
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &past, &two), 1);
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &sm, &uk), 0);
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_UNFUSED, &sm, &one), 0);
    assert_int_equal(
        comet_kernels_op_by_op(COMET_KERNELS_ATTENTION, COMET_KERNELS_FUSED, &sm, &one), 0);
    /* the same-GEMM baseline needs the intermediate: too small a workspace */
    assert_int_equal(
        comet_kernels_gemm_softmax(COMET_KERNELS_UNFUSED_SAME_GEMM, 2, 2, 1, a, b, y, &p, NULL, 0),
        -ENOMEM);
}

/* The ISA paths: names round-trip, a path above the detected one is
 * refused, each one at or below it can be selected and reports itself, and
 * force_portable(0) returns to the path chosen at start. */
static void test_isa_paths(void **st)
{
    (void)st;
    comet_kernels_isa det = comet_kernels_isa_detected(), start = comet_kernels_isa_active(), x;
    assert_true(start <= det);
    for (int i = 0; i <= COMET_KERNELS_ISA_AVX512; i++) {
        assert_int_equal(
            comet_kernels_isa_parse(comet_kernels_isa_name((comet_kernels_isa)i), &x), 0);
        assert_int_equal(x, i);
        int rc = comet_kernels_set_isa((comet_kernels_isa)i);
        if (i > (int)det) {
            assert_int_equal(rc, -ENOTSUP);
            continue;
        }
        assert_int_equal(rc, 0);
        assert_int_equal(comet_kernels_isa_active(), i);
        assert_int_equal(comet_kernels_have_avx2(), i >= COMET_KERNELS_ISA_AVX2);
        assert_int_equal(comet_kernels_have_avx512(), i >= COMET_KERNELS_ISA_AVX512);
        /* a small case through every variant on this path */
        run_gemm_op(0, COMET_KERNELS_FUSED, 37, 53, 29, 1, 0, 0, -1, 1);
        run_gemm_op(1, COMET_KERNELS_UNFUSED_SAME_GEMM, 37, 53, 29, 2, 0, 0, -1, 1);
    }
    assert_int_equal(comet_kernels_isa_parse("avx1024", &x), -EINVAL);
    assert_int_equal(comet_kernels_set_isa((comet_kernels_isa)7), -ENOTSUP);
    comet_kernels_force_portable(1);
    assert_int_equal(comet_kernels_isa_active(), COMET_KERNELS_ISA_PORTABLE);
    comet_kernels_force_portable(0);
    assert_int_equal(comet_kernels_isa_active(), start);
    print_message("# kernels ISA: detected %s, running %s\n", comet_kernels_isa_name(det),
        comet_kernels_isa_name(start));
}

static void test_analytic_counts(void **st)
{
    (void)st;
    comet_kernels_shape s = { .M = 4096, .N = 4096, .K = 64 };
    double f = comet_kernels_flops(COMET_KERNELS_GEMM_SOFTMAX, &s);
    assert_true(f == 2.0 * 4096 * 4096 * 64 + 5.0 * 4096 * 4096);
    double bf = comet_kernels_bytes(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_FUSED, &s);
    double bu = comet_kernels_bytes(COMET_KERNELS_GEMM_SOFTMAX, COMET_KERNELS_UNFUSED, &s);
    assert_true(bu - bf == 2.0 * 4 * 4096 * 4096);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_softmax_all),
        cmocka_unit_test(test_gemm_layernorm_all),
        cmocka_unit_test(test_softmax_large_logits),
        cmocka_unit_test(test_rows_store_policy),
        cmocka_unit_test(test_softmax_masks_and_nan),
        cmocka_unit_test(test_layernorm_rows_edge),
        cmocka_unit_test(test_layernorm_huge_spread),
        cmocka_unit_test(test_attention_all),
        cmocka_unit_test(test_attention_smaller_team),
        cmocka_unit_test(test_huge_dims_refused),
        cmocka_unit_test(test_fused_equals_unfused),
        cmocka_unit_test(test_gemm_only),
        cmocka_unit_test(test_exp_error),
        cmocka_unit_test(test_exp_shifted),
        cmocka_unit_test(test_softmax_exp_error),
        cmocka_unit_test(test_row_passes_paths),
        cmocka_unit_test(test_invalid_args),
        cmocka_unit_test(test_analytic_counts),
        cmocka_unit_test(test_isa_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
