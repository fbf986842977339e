/* Distributed MoE (expert parallelism, kernels/moe_dist.c) against a
 * single-process double-precision reference of the whole layer: every
 * dataflow, even and uneven expert splits (3 experts on 2 ranks; at 3
 * ranks, 2 experts leave one rank without any), skewed routing, bitwise
 * equal results at 1 and 2 threads, and the all-to-alls the model costs
 * (comet_model_moe_colls) equal to the kernel's log. Run under mpiexec with
 * 2 and 3 ranks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_kernels.h"
#include "comet_model.h"
#include "kref.h"

#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

typedef struct moe_case {
    size_t tokens, experts, K, N;
    double skew;
} moe_case;

static void run_case(const moe_case *c)
{
    const size_t T = c->tokens, E = c->experts, K = c->K, N = c->N, k2 = 2;
    uint32_t *ex = malloc(T * k2 * sizeof *ex);
    float *gate = malloc(T * k2 * sizeof *gate), *x = malloc(T * K * 4), *W = malloc(E * K * N * 4);
    assert_non_null(ex);
    assert_non_null(gate);
    assert_non_null(x);
    assert_non_null(W);
    assert_int_equal(comet_kernels_moe_route(T, E, c->skew, 7, ex, gate), 0);
    kref_fill(x, T * K, 11, -1, 1);
    kref_fill(W, E * K * N, 12, -0.5f, 0.5f);
    /* this rank's tokens and experts */
    size_t t0 = T * (size_t)rank / (size_t)nranks, t1 = T * (size_t)(rank + 1) / (size_t)nranks;
    size_t e0, ne;
    comet_kernels_moe_owner(E, nranks, rank, &e0, &ne);
    float *y = malloc(((t1 - t0) ? (t1 - t0) : 1) * N * 4),
          *y2 = malloc(((t1 - t0) ? (t1 - t0) : 1) * N * 4);
    comet_kernels_moe_input in = { .tokens = t1 - t0,
        .K = K,
        .N = N,
        .experts = E,
        .topk = k2,
        .expert = ex + t0 * k2,
        .gate = gate + t0 * k2,
        .x = x + t0 * K,
        .W = ne ? W + e0 * K * N : NULL,
        .y = y };
    /* the loads the model takes, from the global routing */
    comet_model_moe_rank *ld = calloc((size_t)nranks, sizeof *ld);
    size_t *per = calloc(E, sizeof *per);
    for (int q = 0; q < nranks; q++) {
        size_t a = T * (size_t)q / (size_t)nranks, b = T * (size_t)(q + 1) / (size_t)nranks;
        ld[q].tokens = (double)(b - a);
        ld[q].sent = (double)((b - a) * k2);
    }
    for (size_t i = 0; i < T * k2; i++) {
        per[ex[i]]++;
        int from = 0, to = 0;
        while (from + 1 < nranks && T * (size_t)(from + 1) / (size_t)nranks <= i / k2)
            from++;
        for (;; to++) {
            size_t f, n;
            comet_kernels_moe_owner(E, nranks, to, &f, &n);
            if (ex[i] >= f && ex[i] < f + n)
                break;
        }
        if (from != to) {
            ld[from].remote_sent++;
            ld[to].remote_recv++;
        }
    }
    for (int q = 0; q < nranks; q++) {
        size_t f, n;
        comet_kernels_moe_owner(E, nranks, q, &f, &n);
        for (size_t e = f; e < f + n; e++) {
            ld[q].pairs += (double)per[e];
            ld[q].segments += per[e] > 0;
            ld[q].max_seg = fmax(ld[q].max_seg, (double)per[e]);
        }
    }
    comet_model_moe mm
        = { .ranks = nranks, .K = (double)K, .N = (double)N, .experts = (double)E, .rank = ld };
    comet_kernels_moe_ws ws = { { 0 }, { 0 } };
    for (int df = 1; df <= 4; df++) {
        comet_kernels_gms_params p = { .threads = 1, .tile_m = 8 };
        comet_kernels_coll_log log;
        in.y = y;
        assert_int_equal(comet_kernels_dist_moe(
                             MPI_COMM_WORLD, &in, (comet_kernels_gms_dataflow)df, &p, &ws, &log),
            0);
        p.threads = 2;
        in.y = y2;
        assert_int_equal(comet_kernels_dist_moe(
                             MPI_COMM_WORLD, &in, (comet_kernels_gms_dataflow)df, &p, NULL, NULL),
            0);
        assert_memory_equal(y, y2, (t1 - t0) * N * 4);
        for (size_t t = t0; t < t1; t++)
            for (size_t j = 0; j < N; j++) {
                double want = 0;
                for (size_t s = 0; s < k2; s++) {
                    const float *w = W + ex[t * k2 + s] * K * N;
                    double d = 0;
                    for (size_t kk = 0; kk < K; kk++)
                        d += (double)x[t * K + kk] * w[kk * N + j];
                    want += gate[t * k2 + s] * d;
                }
                double got = y[(t - t0) * N + j];
                if (!(fabs(got - want) <= 1e-5 + 1e-4 * fabs(want)))
                    fail_msg(
                        "rank %d df %d token %zu col %zu: %g, want %g", rank, df, t, j, got, want);
            }
        /* the model's program: the log's bytes, largest over ranks */
        unsigned long long b[COMET_KERNELS_MAX_COLL] = { 0 };
        assert_int_equal(log.n, 3);
        for (int i = 0; i < log.n; i++)
            b[i] = log.e[i].bytes;
        MPI_Allreduce(MPI_IN_PLACE, b, log.n, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
        comet_model_dist_call cl[COMET_MODEL_DIST_MAXCALLS];
        int nc = comet_model_moe_colls(&mm, cl, COMET_MODEL_DIST_MAXCALLS);
        assert_int_equal(nc, nranks > 1 ? 3 : 0);
        for (int i = 0; i < nc; i++) {
            assert_string_equal(log.e[i].kind, "alltoall");
            assert_string_equal(cl[i].op, log.e[i].op);
            assert_true(cl[i].bytes == (double)b[i]);
            assert_int_equal(log.e[i].calls, 1);
        }
    }
    comet_kernels_moe_ws_free(&ws);
    free(ld);
    free(per);
    free(ex);
    free(gate);
    free(x);
    free(W);
    free(y);
    free(y2);
}

static void test_moe_even(void **st)
{
    (void)st;
    moe_case c = { 61, 8, 19, 23, 1.0 };
    run_case(&c);
}

static void test_moe_uneven(void **st)
{
    (void)st;
    moe_case c = { 40, 3, 16, 12, 0.0 }; /* 3 experts over 2 (or 3) ranks */
    run_case(&c);
}

static void test_moe_skewed_few(void **st)
{
    (void)st;
    moe_case c = { 30, 2, 8, 8, 2.0 }; /* at 3 ranks, one owns no expert */
    run_case(&c);
}

static void test_moe_owner(void **st)
{
    (void)st;
    size_t f, n, tot = 0;
    for (int r = 0; r < 3; r++) {
        comet_kernels_moe_owner(7, 3, r, &f, &n);
        assert_int_equal(f, tot);
        assert_int_equal(n, r == 0 ? 3 : 2);
        tot += n;
    }
    comet_kernels_moe_owner(2, 3, 2, &f, &n);
    assert_int_equal(n, 0);
    comet_kernels_gms_params p = { .threads = 1 };
    comet_kernels_moe_input bad = { .tokens = 1, .K = 0, .N = 1, .experts = 1, .topk = 1 };
    assert_int_equal(
        comet_kernels_dist_moe(MPI_COMM_WORLD, &bad, COMET_KERNELS_GMS_FUSED, &p, NULL, NULL),
        -EINVAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_owner),
        cmocka_unit_test(test_moe_even),
        cmocka_unit_test(test_moe_uneven),
        cmocka_unit_test(test_moe_skewed_few),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    int all = 0;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return all;
}
