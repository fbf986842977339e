/* 2-rank distributed kernels equal the local ones, and log the collectives
 * the model expects (M-vectors for the fused variants). Run under mpiexec -n 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_kernels.h"
#include "kref.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

/* Full B (K x N) -> this rank's column slice. */
static void slice_cols(const float *B, size_t K, size_t N, size_t n, int r, float *Bl)
{
    for (size_t k = 0; k < K; k++)
        memcpy(Bl + k * n, B + k * N + (size_t)r * n, n * sizeof(float));
}

static void check_gemm(int layernorm, comet_kernels_variant v)
{
    size_t M = 23, n = 37, K = 19, N = n * (size_t)nranks;
    float *A = malloc(M * K * 4), *B = malloc(K * N * 4), *Bl = malloc(K * n * 4),
          *Yl = malloc(M * n * 4), *Y = malloc(M * N * 4), *g = malloc(N * 4), *b = malloc(N * 4);
    kref_fill(A, M * K, 1, -1, 1);
    kref_fill(B, K * N, 2, -1, 1);
    kref_fill(g, N, 3, 0.5f, 1.5f);
    kref_fill(b, N, 4, -1, 1);
    A[5 * K + 1] = layernorm ? A[5 * K + 1] : NAN; /* one NaN row for softmax */
    slice_cols(B, K, N, n, rank, Bl);
    comet_kernels_params p = { .threads = 1, .scale = 0.5f, .eps = 1e-5f };
    comet_kernels_coll_log log;
    int rc = layernorm
        ? comet_kernels_dist_gemm_layernorm(MPI_COMM_WORLD, v, M, n, K, A, Bl, g + (size_t)rank * n,
            b + (size_t)rank * n, Yl, &p, &log)
        : comet_kernels_dist_gemm_softmax(MPI_COMM_WORLD, v, M, n, K, A, Bl, Yl, &p, &log);
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
            float want = Y[i * N + (size_t)rank * n + j], got = Yl[i * n + j];
            if (isnan(want)) {
                assert_true(isnan(got));
                continue;
            }
            if (!(fabsf(got - want) <= 2e-5f * fabsf(want) + 2e-5f))
                fail_msg("rank %d %s %s (%zu,%zu): got %.8g want %.8g", rank,
                    layernorm ? "layernorm" : "softmax", comet_kernels_variant_name(v), i, j, got,
                    want);
        }
    if (v == COMET_KERNELS_FUSED) {
        /* two all-reduces of M-vectors, never whole tiles */
        int calls = 0;
        for (int e = 0; e < log.n; e++) {
            assert_string_equal(log.e[e].kind, "allreduce");
            assert_int_equal(log.e[e].count, M);
            calls += log.e[e].calls;
        }
        assert_int_equal(calls, 2);
    } else {
        assert_string_equal(log.e[0].kind, "allgather");
        assert_int_equal(log.e[0].count, M * n);
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

static void test_dist_softmax(void **st)
{
    (void)st;
    check_gemm(0, COMET_KERNELS_FUSED);
    check_gemm(0, COMET_KERNELS_UNFUSED);
}

static void test_dist_layernorm(void **st)
{
    (void)st;
    check_gemm(1, COMET_KERNELS_FUSED);
    check_gemm(1, COMET_KERNELS_UNFUSED);
}

static void test_dist_attention(void **st)
{
    (void)st;
    size_t bh = 2, lq = 13, lkl = 21, d = 8, lk = lkl * (size_t)nranks;
    float *Q = malloc(bh * lq * d * 4), *K = malloc(bh * lk * d * 4), *V = malloc(bh * lk * d * 4),
          *Kl = malloc(bh * lkl * d * 4), *Vl = malloc(bh * lkl * d * 4),
          *O = malloc(bh * lq * d * 4), *Ol = malloc(bh * lq * d * 4);
    kref_fill(Q, bh * lq * d, 1, -1, 1);
    kref_fill(K, bh * lk * d, 2, -1, 1);
    kref_fill(V, bh * lk * d, 3, -1, 1);
    for (size_t h = 0; h < bh; h++) {
        memcpy(Kl + h * lkl * d, K + (h * lk + (size_t)rank * lkl) * d, lkl * d * 4);
        memcpy(Vl + h * lkl * d, V + (h * lk + (size_t)rank * lkl) * d, lkl * d * 4);
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
                             &loc, Q, Kl, Vl, Ol, &p, &log),
            0);
        for (size_t i = 0; i < bh * lq * d; i++)
            if (!(fabsf(Ol[i] - O[i]) <= 1e-5f * fabsf(O[i]) + 1e-5f))
                fail_msg("rank %d attention v=%d at %zu: %.8g vs %.8g", rank, v, i, Ol[i], O[i]);
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dist_softmax),
        cmocka_unit_test(test_dist_layernorm),
        cmocka_unit_test(test_dist_attention),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    int all = 0;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return all;
}
