/* Distributed kernels equal the local ones with equal, unequal and empty
 * slices, and log the collectives the model expects (M-vectors for the
 * fused variants). Run under mpiexec with 2 and 3 ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_kernels.h"
#include "comet_model.h"
#include "kref.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

/* Column splits the tests run: equal widths, unequal widths (the last
 * rank wider by 11 per rank), and the first rank holding no columns. */
enum split { SPLIT_EQUAL, SPLIT_UNEVEN, SPLIT_EMPTY };
static const char *const split_names[] = { "equal", "uneven", "empty" };

/* Width and first column of rank r's slice of `base` columns per rank. */
static void split_of(enum split sp, size_t base, int r, size_t *w, size_t *off)
{
    *off = 0;
    *w = 0;
    for (int q = 0; q <= r; q++) {
        size_t wq = sp == SPLIT_EQUAL ? base
            : sp == SPLIT_UNEVEN      ? base + 11 * (size_t)q
                                      : (q == 0 ? 0 : base);
        if (q == r)
            *w = wq;
        else
            *off += wq;
    }
}

static size_t split_total(enum split sp, size_t base)
{
    size_t w, off;
    split_of(sp, base, nranks - 1, &w, &off);
    return off + w;
}

/* Full B (K x N) -> columns off..off+n-1. */
static void slice_cols(const float *B, size_t K, size_t N, size_t n, size_t off, float *Bl)
{
    for (size_t k = 0; k < K; k++)
        memcpy(Bl + k * n, B + k * N + off, n * sizeof(float));
}

/* base: slice width; from about 1000 columns per rank the unfused baselines
 * stage their whole rows in several blocks, the last one partial */
static void check_gemm_w(int layernorm, comet_kernels_variant v, enum split sp, size_t base)
{
    size_t M = 23, K = 19, n, off, N = split_total(sp, base);
    split_of(sp, base, rank, &n, &off);
    size_t n1 = n ? n : 1;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *Bl = malloc(K * n1 * 4),
          *Yl = malloc(M * n1 * 4), *Y = malloc(M * N * 4), *g = malloc(N * 4), *b = malloc(N * 4);
    kref_fill(A, M * K, 1, -1, 1);
    kref_fill(B, K * N, 2, -1, 1);
    kref_fill(g, N, 3, 0.5f, 1.5f);
    kref_fill(b, N, 4, -1, 1);
    A[5 * K + 1] = layernorm ? A[5 * K + 1] : NAN; /* one NaN row for softmax */
    slice_cols(B, K, N, n, off, Bl);
    comet_kernels_params p = { .threads = 1, .scale = 0.5f, .eps = 1e-5f };
    comet_kernels_coll_log log;
    /* a rank without columns may pass NULL slices */
    float *Bp = n ? Bl : NULL, *Yp = n ? Yl : NULL;
    int rc = layernorm
        ? comet_kernels_dist_gemm_layernorm(
            MPI_COMM_WORLD, v, M, n, K, A, Bp, n ? g + off : NULL, n ? b + off : NULL, Yp, &p, &log)
        : comet_kernels_dist_gemm_softmax(MPI_COMM_WORLD, v, M, n, K, A, Bp, Yp, &p, &log);
    assert_int_equal(rc, 0);
    comet_kernels_shape s = { .M = M, .N = N, .K = K };
    size_t ws = 0;
    comet_kernels_op op = layernorm ? COMET_KERNELS_GEMM_LAYERNORM : COMET_KERNELS_GEMM_SOFTMAX;
    comet_kernels_workspace_size(op, COMET_KERNELS_UNFUSED, &s, &p, &ws);
    void *w = malloc(ws);
    rc = layernorm
        ? comet_kernels_gemm_layernorm(COMET_KERNELS_UNFUSED, M, N, K, A, B, g, b, Y, &p, w, ws)
        : comet_kernels_gemm_softmax(COMET_KERNELS_UNFUSED, M, N, K, A, B, Y, &p, w, ws);
    assert_int_equal(rc, 0);
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < n; j++) {
            float want = Y[i * N + off + j], got = Yl[i * n + j];
            if (isnan(want)) {
                assert_true(isnan(got));
                continue;
            }
            if (!(fabsf(got - want) <= 2e-5f * fabsf(want) + 2e-5f))
                fail_msg("rank %d of %d %s %s %s split (%zu,%zu): got %.8g want %.8g", rank, nranks,
                    layernorm ? "layernorm" : "softmax", comet_kernels_variant_name(v),
                    split_names[sp], i, j, got, want);
        }
    if (v == COMET_KERNELS_FUSED) {
        /* two all-reduces of M-vectors, never whole tiles (LayerNorm's
         * first carries the slice width as one more element) */
        int calls = 0;
        for (int e = 0; e < log.n; e++) {
            assert_string_equal(log.e[e].kind, "allreduce");
            assert_true(log.e[e].count == M || (layernorm && log.e[e].count == M + 1));
            calls += log.e[e].calls;
        }
        assert_int_equal(calls, 2);
    } else {
        /* the widths (one integer each), then the intermediate (slices
         * of any width: MPI_Allgatherv, logged as such) */
        assert_int_equal(log.n, 2);
        assert_string_equal(log.e[0].kind, "allgather");
        assert_int_equal(log.e[0].count, 1);
        assert_string_equal(log.e[1].kind, "allgatherv");
        assert_int_equal(log.e[1].count, M * n);
    }
    free(A);
    free(B);
    free(Bl);
    free(Yl);
    free(Y);
    free(g);
    free(b);
    free(w);
}

static void check_gemm(int layernorm, comet_kernels_variant v, enum split sp)
{
    check_gemm_w(layernorm, v, sp, 37);
    if (v == COMET_KERNELS_UNFUSED)
        check_gemm_w(layernorm, v, sp, 1500);
}

static void test_dist_softmax(void **st)
{
    (void)st;
    for (int sp = SPLIT_EQUAL; sp <= SPLIT_EMPTY; sp++) {
        check_gemm(0, COMET_KERNELS_FUSED, (enum split)sp);
        check_gemm(0, COMET_KERNELS_UNFUSED, (enum split)sp);
    }
}

static void test_dist_layernorm(void **st)
{
    (void)st;
    for (int sp = SPLIT_EQUAL; sp <= SPLIT_EMPTY; sp++) {
        check_gemm(1, COMET_KERNELS_FUSED, (enum split)sp);
        check_gemm(1, COMET_KERNELS_UNFUSED, (enum split)sp);
    }
}

/* Rows whose spread is beyond what float squares hold (1e20) and beyond
 * FLT_MAX itself: the fused statistics are in double. */
static void test_dist_layernorm_huge(void **st)
{
    (void)st;
    size_t M = 3, K = 2, n = 5, N = n * (size_t)nranks;
    float A[6] = { 1e19f, 0, 0, 3e38f, 1, 1 }, B[2 * 64], Bl[2 * 5], Yl[3 * 5];
    for (size_t j = 0; j < N; j++) {
        B[j] = (float)((j % 3) - 1.0); /* row 0: -1e19 .. 1e19 */
        B[N + j] = j & 1 ? 1.0f : -1.0f; /* row 1: +-3e38 */
    }
    for (size_t k = 0; k < K; k++)
        memcpy(Bl + k * n, B + k * N + (size_t)rank * n, n * sizeof(float));
    comet_kernels_params p = { .threads = 1, .eps = 1e-5f };
    for (int v = 0; v < 2; v++) {
        assert_int_equal(comet_kernels_dist_gemm_layernorm(MPI_COMM_WORLD, (comet_kernels_variant)v,
                             M, n, K, A, Bl, NULL, NULL, Yl, &p, NULL),
            0);
        for (size_t i = 0; i < M; i++) {
            double x[64], mean = 0, var = 0;
            for (size_t j = 0; j < N; j++) {
                x[j] = (double)A[i * K] * B[j] + (double)A[i * K + 1] * B[N + j];
                x[j] = (float)x[j];
                mean += x[j] / (double)N;
            }
            for (size_t j = 0; j < N; j++)
                var += (x[j] - mean) * (x[j] - mean) / (double)N;
            for (size_t j = 0; j < n; j++) {
                double want = (x[(size_t)rank * n + j] - mean) / sqrt(var + 1e-5);
                float got = Yl[i * n + j];
                if (!(fabs(got - want) <= 1e-5 * fabs(want) + 1e-5))
                    fail_msg("rank %d v=%d row %zu col %zu: got %.8g want %.8g", rank, v, i, j, got,
                        want);
            }
        }
    }
}

static void check_attention(enum split sp)
{
    size_t bh = 2, lq = 13, lkl, koff, d = 8, lk = split_total(sp, 21);
    split_of(sp, 21, rank, &lkl, &koff);
    size_t l1 = lkl ? lkl : 1;
    float *Q = malloc(bh * lq * d * 4), *K = malloc(bh * lk * d * 4), *V = malloc(bh * lk * d * 4),
          *Kl = malloc(bh * l1 * d * 4), *Vl = malloc(bh * l1 * d * 4),
          *O = malloc(bh * lq * d * 4), *Ol = malloc(bh * lq * d * 4);
    kref_fill(Q, bh * lq * d, 1, -1, 1);
    kref_fill(K, bh * lk * d, 2, -1, 1);
    kref_fill(V, bh * lk * d, 3, -1, 1);
    for (size_t h = 0; h < bh; h++) {
        memcpy(Kl + h * lkl * d, K + (h * lk + koff) * d, lkl * d * 4);
        memcpy(Vl + h * lkl * d, V + (h * lk + koff) * d, lkl * d * 4);
    }
    comet_kernels_shape full = { .batch = 1, .heads = bh, .lq = lq, .lk = lk, .d = d };
    comet_kernels_shape loc = full;
    loc.lk = lkl;
    comet_kernels_params p = { .threads = 1 };
    size_t ws = 0;
    comet_kernels_workspace_size(COMET_KERNELS_ATTENTION, COMET_KERNELS_UNFUSED, &full, &p, &ws);
    void *w = malloc(ws);
    assert_int_equal(
        comet_kernels_attention(COMET_KERNELS_UNFUSED, &full, Q, K, V, O, &p, w, ws), 0);
    for (int v = 0; v < 2; v++) {
        comet_kernels_coll_log log;
        assert_int_equal(comet_kernels_dist_attention(MPI_COMM_WORLD, (comet_kernels_variant)v,
                             &loc, Q, lkl ? Kl : NULL, lkl ? Vl : NULL, Ol, &p, &log),
            0);
        for (size_t i = 0; i < bh * lq * d; i++)
            if (!(fabsf(Ol[i] - O[i]) <= 1e-5f * fabsf(O[i]) + 1e-5f))
                fail_msg("rank %d of %d attention v=%d %s split at %zu: %.8g vs %.8g", rank, nranks,
                    v, split_names[sp], i, Ol[i], O[i]);
        assert_true(log.n >= 1);
    }
    free(Q);
    free(K);
    free(V);
    free(Kl);
    free(Vl);
    free(O);
    free(Ol);
    free(w);
}

static void test_dist_attention(void **st)
{
    (void)st;
    for (int sp = SPLIT_EQUAL; sp <= SPLIT_EMPTY; sp++)
        check_attention((enum split)sp);
}

/* The model's scale-out prediction costs the collectives it says the
 * distributed kernels issue (model/dist.c): they must be the ones the
 * kernels log, in order, with their bytes and calls, for every op and
 * variant at this rank count (equal slices). */
static void check_model_program(
    comet_model_problem *pb, int fused, const comet_kernels_coll_log *log)
{
    comet_model_dist_call c[COMET_MODEL_DIST_MAXCALLS];
    int n = comet_model_dist_colls(pb, fused, nranks, c, COMET_MODEL_DIST_MAXCALLS);
    assert_int_equal(n, log->n);
    for (int i = 0; i < n; i++) {
        assert_string_equal(comet_model_coll_name(c[i].kind), log->e[i].kind);
        assert_string_equal(c[i].op, log->e[i].op);
        assert_true(c[i].bytes == (double)log->e[i].bytes);
        assert_true(c[i].count == (double)log->e[i].count);
        assert_true(c[i].calls == (double)log->e[i].calls);
    }
}

static void test_dist_model_program(void **st)
{
    (void)st;
    const size_t M = 9, n = 13, K = 7, N = n * (size_t)nranks;
    float *A = malloc(M * K * 4), *B = malloc(K * n * 4), *g = malloc(n * 4), *b = malloc(n * 4),
          *Y = malloc(M * n * 4);
    kref_fill(A, M * K, 1, -1, 1);
    kref_fill(B, K * n, 2 + (unsigned)rank, -1, 1);
    kref_fill(g, n, 3, 0.5f, 1.5f);
    kref_fill(b, n, 4, -0.1f, 0.1f);
    comet_kernels_params p = { .threads = 1 };
    for (int ln = 0; ln < 2; ln++)
        for (int v = 0; v < 2; v++) {
            comet_kernels_coll_log log;
            int rc = ln ? comet_kernels_dist_gemm_layernorm(
                         MPI_COMM_WORLD, (comet_kernels_variant)v, M, n, K, A, B, g, b, Y, &p, &log)
                        : comet_kernels_dist_gemm_softmax(
                            MPI_COMM_WORLD, (comet_kernels_variant)v, M, n, K, A, B, Y, &p, &log);
            assert_int_equal(rc, 0);
            comet_model_problem pb
                = { .op = ln ? COMET_MODEL_GEMM_LAYERNORM : COMET_MODEL_GEMM_SOFTMAX,
                      .M = (double)M,
                      .N = (double)N,
                      .K = (double)K };
            check_model_program(&pb, v == COMET_KERNELS_FUSED, &log);
        }
    const size_t bh = 3, lq = 5, lkl = 6, d = 4;
    float *Q = malloc(bh * lq * d * 4), *Kl = malloc(bh * lkl * d * 4),
          *Vl = malloc(bh * lkl * d * 4), *O = malloc(bh * lq * d * 4);
    kref_fill(Q, bh * lq * d, 1, -1, 1);
    kref_fill(Kl, bh * lkl * d, 5 + (unsigned)rank, -1, 1);
    kref_fill(Vl, bh * lkl * d, 7 + (unsigned)rank, -1, 1);
    comet_kernels_shape loc = { .batch = 1, .heads = bh, .lq = lq, .lk = lkl, .d = d };
    for (int v = 0; v < 2; v++) {
        comet_kernels_coll_log log;
        assert_int_equal(comet_kernels_dist_attention(MPI_COMM_WORLD, (comet_kernels_variant)v,
                             &loc, Q, Kl, Vl, O, &p, &log),
            0);
        comet_model_problem pb = { .op = COMET_MODEL_ATTENTION,
            .heads = (double)bh,
            .lq = (double)lq,
            .lk = (double)(lkl * (size_t)nranks),
            .d = (double)d };
        check_model_program(&pb, v == COMET_KERNELS_FUSED, &log);
    }
    free(A);
    free(B);
    free(g);
    free(b);
    free(Y);
    free(Q);
    free(Kl);
    free(Vl);
    free(O);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_softmax),
        cmocka_unit_test(test_dist_layernorm),
        cmocka_unit_test(test_dist_layernorm_huge),
        cmocka_unit_test(test_dist_attention),
        cmocka_unit_test(test_dist_model_program),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    int all = 0;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return all;
}
