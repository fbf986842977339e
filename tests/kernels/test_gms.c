/* Gather-GEMM-scatter against a double-precision reference: the four
 * dataflows agree, empty segments, duplicate destinations, one giant
 * segment, K/N off the tile, 1 and 2 threads, bitwise determinism across
 * thread counts, generators' statistics, the reader's errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_kernels.h"
#include "kref.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs every dataflow at threads 1, 2 and 3 (destination-row blocks dealt
 * by a mask, then by a remainder) against the reference; outputs of the
 * same dataflow must be bitwise equal across thread counts. */
static void check_problem(const comet_kernels_gms_problem *pr, size_t K, size_t N, size_t tile)
{
    size_t np = pr->nseg ? pr->seg_ptr[pr->nseg] : 0;
    float *X = malloc(pr->rows_in * K * sizeof(float)), *W = malloc((pr->nseg + 1) * K * N * 4);
    float *O0 = malloc(pr->rows_out * N * 4), *O = malloc(pr->rows_out * N * 4),
          *O1 = malloc(pr->rows_out * N * 4);
    double *R = calloc(pr->rows_out * N, sizeof(double)), *Ab = calloc(pr->rows_out * N, 8);
    kref_fill(X, pr->rows_in * K, 3, -1, 1);
    kref_fill(W, pr->nseg * K * N + 1, 5, -1, 1);
    kref_fill(O0, pr->rows_out * N, 7, -1, 1);
    for (size_t i = 0; i < pr->rows_out * N; i++)
        R[i] = O0[i], Ab[i] = fabs(O0[i]);
    for (size_t s = 0; s < pr->nseg; s++)
        for (size_t q = pr->seg_ptr[s]; q < pr->seg_ptr[s + 1]; q++)
            for (size_t j = 0; j < N; j++) {
                double acc = 0, ab = 0;
                for (size_t k = 0; k < K; k++) {
                    double t = (double)X[pr->src[q] * K + k] * W[s * K * N + k * N + j];
                    acc += t;
                    ab += fabs(t);
                }
                R[pr->dst[q] * N + j] += acc;
                Ab[pr->dst[q] * N + j] += ab;
            }
    (void)np;
    for (int df = 1; df <= 4; df++)
        for (int th = 1; th <= 3; th++) {
            comet_kernels_gms_input in = { .rows_in = pr->rows_in,
                .rows_out = pr->rows_out,
                .K = K,
                .N = N,
                .nseg = pr->nseg,
                .seg_ptr = pr->seg_ptr,
                .src = pr->src,
                .dst = pr->dst,
                .W = W,
                .in = X,
                .out = O };
            comet_kernels_gms_params p = { .threads = th, .tile_m = tile };
            size_t ws = 0;
            memcpy(O, O0, pr->rows_out * N * 4);
            assert_int_equal(
                comet_kernels_gms_workspace_size(&in, (comet_kernels_gms_dataflow)df, &p, &ws), 0);
            void *w = malloc(ws);
            assert_int_equal(comet_kernels_gms((comet_kernels_gms_dataflow)df, &in, &p, w, ws), 0);
            assert_int_equal(
                comet_kernels_gms((comet_kernels_gms_dataflow)df, &in, &p, w, ws - 1), -ENOMEM);
            free(w);
            for (size_t i = 0; i < pr->rows_out * N; i++) {
                double tol = 4.0 * (double)(K + 8) * 5.96e-8 * (Ab[i] + 1.0);
                if (fabs(O[i] - R[i]) > tol)
                    fail_msg("df %d th %d elem %zu: %g vs %g", df, th, i, (double)O[i], R[i]);
            }
            if (th == 1)
                memcpy(O1, O, pr->rows_out * N * 4);
            else
                assert_memory_equal(O1, O, pr->rows_out * N * 4);
        }
    free(X), free(W), free(O0), free(O), free(O1), free(R), free(Ab);
}

/* Builds a problem from explicit triples. */
static void make(comet_kernels_gms_problem *pr, size_t rin, size_t rout, size_t nseg,
    const size_t *counts, unsigned seed, int dup)
{
    memset(pr, 0, sizeof *pr);
    pr->rows_in = rin, pr->rows_out = rout, pr->nseg = nseg;
    pr->seg_ptr = calloc(nseg + 1, sizeof(size_t));
    for (size_t s = 0; s < nseg; s++)
        pr->seg_ptr[s + 1] = pr->seg_ptr[s] + counts[s];
    size_t n = pr->seg_ptr[nseg];
    pr->src = malloc((n + 1) * 4), pr->dst = malloc((n + 1) * 4);
    unsigned st = seed;
    for (size_t i = 0; i < n; i++) {
        st = st * 1664525u + 1013904223u;
        pr->src[i] = (st >> 8) % rin;
        st = st * 1664525u + 1013904223u;
        pr->dst[i] = dup ? (uint32_t)(i % 3) : (st >> 8) % rout;
    }
}

static void test_mixed(void **state)
{
    (void)state;
    comet_kernels_gms_problem pr;
    size_t counts[] = { 0, 1, 7, 0, 50, 13, 0 };
    make(&pr, 40, 30, 7, counts, 1, 0);
    check_problem(&pr, 37, 45, 8); /* K, N off the 16-column tile; tile_m 8 */
    check_problem(&pr, 16, 32, 0);
    check_problem(&pr, 5, 3, 6);
    comet_kernels_gms_problem_free(&pr);
}

static void test_duplicates(void **state)
{
    (void)state;
    comet_kernels_gms_problem pr;
    size_t counts[] = { 20, 17, 9 };
    make(&pr, 25, 3, 3, counts, 2, 1); /* every pair lands in rows 0..2 */
    check_problem(&pr, 19, 33, 5);
    comet_kernels_gms_problem_free(&pr);
}

static void test_giant(void **state)
{
    (void)state;
    comet_kernels_gms_problem pr;
    size_t counts[] = { 1, 700, 0, 2 };
    make(&pr, 300, 200, 4, counts, 3, 0);
    check_problem(&pr, 24, 70, 0);
    comet_kernels_gms_problem_free(&pr);
}

static void test_empty(void **state)
{
    (void)state;
    comet_kernels_gms_problem pr;
    size_t counts[] = { 0, 0 };
    make(&pr, 4, 4, 2, counts, 4, 0);
    check_problem(&pr, 8, 8, 0);
    comet_kernels_gms_problem_free(&pr);
}

/* comet_kernels_gms_tiles: one thread runs ceil(n_s / tile_m) blocks per
 * segment; more threads split each segment by owned destinations (never
 * fewer blocks, at most one more per thread and segment); bad arguments. */
static void test_tiles(void **state)
{
    (void)state;
    comet_kernels_gms_problem pr;
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_RGCN, 4096, 16, 1.0, 42, &pr), 0);
    size_t one = 0, t1 = 0, t2 = 0, t3 = 0;
    for (size_t s = 0; s < pr.nseg; s++)
        one += (pr.seg_ptr[s + 1] - pr.seg_ptr[s] + 47) / 48;
    comet_kernels_gms_params p = { .threads = 1, .tile_m = 48 };
    assert_int_equal(comet_kernels_gms_tiles(&pr, 64, &p, &t1), 0);
    assert_int_equal(t1, one);
    p.threads = 2;
    assert_int_equal(comet_kernels_gms_tiles(&pr, 64, &p, &t2), 0);
    p.threads = 3;
    assert_int_equal(comet_kernels_gms_tiles(&pr, 64, &p, &t3), 0);
    assert_true(t2 >= t1 && t2 <= t1 + 2 * pr.nseg);
    assert_true(t3 >= t1 && t3 <= t1 + 3 * pr.nseg);
    assert_int_equal(comet_kernels_gms_tiles(NULL, 64, &p, &t3), -EINVAL);
    assert_int_equal(comet_kernels_gms_tiles(&pr, 0, &p, &t3), -EINVAL);
    p.threads = -1;
    assert_int_equal(comet_kernels_gms_tiles(&pr, 64, &p, &t3), -EINVAL);
    comet_kernels_gms_problem_free(&pr);
}

/* Ownership blocks: 4-64 KiB of out, at least 8 a thread where out allows
 * (a 4 KiB block, the first version, cost the 2-thread scatter 2-3x per row:
 * kernels/gms.c); the tile count follows the blocks; owned pairs balanced. */
static void test_own_rows(void **state)
{
    (void)state;
    /* 4096 rows of 256 B: 64 KiB blocks (16 of them, 8 a thread at 2) */
    assert_int_equal(comet_kernels_gms_own_rows(4096, 64, 2), 256);
    assert_int_equal(comet_kernels_gms_own_rows(4096, 64, 1), 256);
    assert_int_equal(comet_kernels_gms_own_rows(16384, 64, 2), 256);
    /* 3 threads: at most 4096 / 24 = 170 rows, a power of two: 128 */
    assert_int_equal(comet_kernels_gms_own_rows(4096, 64, 3), 128);
    /* a small out: never below 4 KiB */
    assert_int_equal(comet_kernels_gms_own_rows(256, 64, 2), 16);
    assert_int_equal(comet_kernels_gms_own_rows(1, 64, 4), 16);
    /* rows wider than the largest block: one row a block */
    assert_int_equal(comet_kernels_gms_own_rows(4096, 32768, 2), 1);
    assert_int_equal(comet_kernels_gms_own_rows(4096, 0, 2), 0);

    comet_kernels_gms_problem pr;
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_RGCN, 4096, 16, 1.0, 42, &pr), 0);
    for (int nt = 2; nt <= 3; nt++) {
        const size_t b = comet_kernels_gms_own_rows(pr.rows_out, 64, nt);
        size_t want = 0, tot[3] = { 0, 0, 0 };
        for (size_t s = 0; s < pr.nseg; s++) {
            size_t cnt[3] = { 0, 0, 0 };
            for (size_t i = pr.seg_ptr[s]; i < pr.seg_ptr[s + 1]; i++)
                cnt[pr.dst[i] / b % (size_t)nt]++;
            for (int t = 0; t < nt; t++)
                want += (cnt[t] + 47) / 48, tot[t] += cnt[t];
        }
        comet_kernels_gms_params p = { .threads = nt, .tile_m = 48 };
        size_t got = 0;
        assert_int_equal(comet_kernels_gms_tiles(&pr, 64, &p, &got), 0);
        assert_int_equal(got, want);
        /* uniform destinations: every thread within 15% of an even share */
        const double even = (double)pr.seg_ptr[pr.nseg] / nt;
        for (int t = 0; t < nt; t++)
            assert_true(fabs((double)tot[t] - even) <= 0.15 * even);
    }
    comet_kernels_gms_problem_free(&pr);
}

/* At 2+ threads each thread's tile buffers sit 16 KiB past the previous
 * thread's (packed back to back, the second thread's fused gather ran 3x
 * slower: kernels/gms.c); one thread needs no gap. */
static void test_thread_gap(void **state)
{
    (void)state;
    comet_kernels_gms_problem pr;
    float dummy = 0;
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_MOE, 512, 8, 1.0, 42, &pr), 0);
    comet_kernels_gms_input in = { .rows_in = pr.rows_in,
        .rows_out = pr.rows_out,
        .K = 64,
        .N = 64,
        .nseg = pr.nseg,
        .seg_ptr = pr.seg_ptr,
        .src = pr.src,
        .dst = pr.dst,
        .W = &dummy,
        .in = &dummy,
        .out = &dummy }; /* not read: sizes only */
    const size_t buf = 48 * (64 + 64 + 2) * sizeof(float);
    for (int df = 1; df <= 4; df++) {
        size_t w1 = 0, w2 = 0, w3 = 0;
        comet_kernels_gms_params p = { .threads = 1, .tile_m = 48 };
        assert_int_equal(comet_kernels_gms_workspace_size(&in, df, &p, &w1), 0);
        p.threads = 2;
        assert_int_equal(comet_kernels_gms_workspace_size(&in, df, &p, &w2), 0);
        p.threads = 3;
        assert_int_equal(comet_kernels_gms_workspace_size(&in, df, &p, &w3), 0);
        /* 1 thread: one buffer; 2: two, each with its gap */
        assert_true(w2 >= w1 + buf + 2 * 16384);
        assert_true(w3 >= w2 + buf + 16384);
        assert_true(w1 < (size_t)pr.nseg * 64 * 64 * sizeof(float) + 2 * buf
                + (size_t)pr.seg_ptr[pr.nseg] * 128 * sizeof(float) + 4096);
    }
    comet_kernels_gms_problem_free(&pr);
}

static void test_generators(void **state)
{
    (void)state;
    for (int w = 0; w < 3; w++)
        for (int sk = 0; sk < 3; sk++) {
            comet_kernels_gms_problem a, b;
            double skew = sk * 1.0;
            assert_int_equal(
                comet_kernels_gms_generate((comet_kernels_gms_workload)w, 300, 8, skew, 9, &a), 0);
            assert_int_equal(
                comet_kernels_gms_generate((comet_kernels_gms_workload)w, 300, 8, skew, 9, &b), 0);
            assert_int_equal(a.nseg, b.nseg);
            assert_memory_equal(a.seg_ptr, b.seg_ptr, (a.nseg + 1) * sizeof(size_t));
            size_t n = a.seg_ptr[a.nseg];
            assert_memory_equal(a.src, b.src, n * 4);
            comet_kernels_gms_stats st;
            comet_kernels_gms_stats_of(&a, &st);
            assert_int_equal(st.pairs, n);
            if (w == COMET_KERNELS_GMS_RGCN)
                assert_int_equal(n, 8 * 300);
            if (w == COMET_KERNELS_GMS_MOE)
                assert_int_equal(n, 2 * 300);
            if (w == COMET_KERNELS_GMS_SPCONV) {
                assert_int_equal(a.nseg, 27);
                assert_int_equal(a.seg_ptr[14] - a.seg_ptr[13], 300); /* centre offset */
            }
            for (size_t i = 0; i < n; i++) {
                assert_true(a.src[i] < a.rows_in);
                assert_true(a.dst[i] < a.rows_out);
            }
            if (sk == 0)
                check_problem(&a, 16, 24, 0);
            comet_kernels_gms_problem_free(&a);
            comet_kernels_gms_problem_free(&b);
        }
    /* skew concentrates rgcn's largest relation */
    comet_kernels_gms_problem a, b;
    comet_kernels_gms_stats s0, s2;
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_RGCN, 1000, 16, 0, 1, &a), 0);
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_RGCN, 1000, 16, 2, 1, &b), 0);
    comet_kernels_gms_stats_of(&a, &s0);
    comet_kernels_gms_stats_of(&b, &s2);
    assert_true(s2.max_seg > 3 * s0.max_seg);
    comet_kernels_gms_problem_free(&a);
    comet_kernels_gms_problem_free(&b);
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_RGCN, 0, 16, 0, 1, &a), -EINVAL);
    assert_int_equal(comet_kernels_gms_generate(COMET_KERNELS_GMS_MOE, 10, 1, 0, 1, &a), -EINVAL);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_reader(void **state)
{
    (void)state;
    char path[] = "/tmp/comet_gms_XXXXXX", err[256];
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    comet_kernels_gms_problem pr;
    write_file(path, "# comment\ngms 4 3 2\n1 0 2\n0 3 0\n\n1 1 1\n");
    assert_int_equal(comet_kernels_gms_read(path, &pr, err, sizeof err), 0);
    assert_int_equal(pr.nseg, 2);
    assert_int_equal(pr.seg_ptr[1], 1);
    assert_int_equal(pr.seg_ptr[2], 3);
    assert_int_equal(pr.src[0], 3);
    check_problem(&pr, 9, 17, 0);
    comet_kernels_gms_problem_free(&pr);
    write_file(path, "gms 4 3 2\n1 0 2\n0 4 0\n");
    assert_int_equal(comet_kernels_gms_read(path, &pr, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":3: index out of range"));
    write_file(path, "gms 4 3 2\n1 0 x\n");
    assert_int_equal(comet_kernels_gms_read(path, &pr, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":2: expected"));
    write_file(path, "1 0 2\n");
    assert_int_equal(comet_kernels_gms_read(path, &pr, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":1: expected header"));
    write_file(path, "gms 4 3 2\n-1 0 1\n");
    assert_int_equal(comet_kernels_gms_read(path, &pr, err, sizeof err), -EINVAL);
    remove(path);
    assert_true(comet_kernels_gms_read("/nonexistent/x", &pr, err, sizeof err) < 0);
}

static void test_invalid(void **state)
{
    (void)state;
    size_t sp[] = { 0, 2 };
    uint32_t src[] = { 0, 5 }, dst[] = { 0, 0 };
    float X[8] = { 0 }, W[4] = { 0 }, O[2] = { 0 };
    comet_kernels_gms_input in = { .rows_in = 4,
        .rows_out = 1,
        .K = 2,
        .N = 2,
        .nseg = 1,
        .seg_ptr = sp,
        .src = src,
        .dst = dst,
        .W = W,
        .in = X,
        .out = O };
    size_t ws;
    assert_int_equal(comet_kernels_gms_workspace_size(&in, COMET_KERNELS_GMS_FUSED, NULL, &ws),
        -EINVAL); /* src 5 >= rows_in 4 */
    src[1] = 1;
    assert_int_equal(comet_kernels_gms_workspace_size(&in, COMET_KERNELS_GMS_FUSED, NULL, &ws), 0);
    assert_int_equal(
        comet_kernels_gms_workspace_size(&in, (comet_kernels_gms_dataflow)5, NULL, &ws), -EINVAL);
    in.K = 0;
    assert_int_equal(
        comet_kernels_gms_workspace_size(&in, COMET_KERNELS_GMS_FUSED, NULL, &ws), -EINVAL);
    comet_kernels_gms_dataflow d;
    assert_int_equal(comet_kernels_gms_dataflow_parse("scatter_fused", &d), 0);
    assert_int_equal(d, COMET_KERNELS_GMS_SCATTER_FUSED);
    assert_int_equal(comet_kernels_gms_dataflow_parse("x", &d), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_giant),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_tiles),
        cmocka_unit_test(test_own_rows),
        cmocka_unit_test(test_thread_gap),
        cmocka_unit_test(test_generators),
        cmocka_unit_test(test_reader),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
