/* bench: shape-set files (configs/shapes) parse, and bad ones are refused
 * with file:line. Uses the library's internal header. */
/* cmocka needs these first, in this order */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "bench_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const ops[] = { "gemm_softmax", "gemm_layernorm", "attention", NULL };

static int load_text(const char *text, bench_shapeset *set, char *err)
{
    char path[] = "/tmp/comet_shapes_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    int rc = bench_shapeset_load(path, ops, set, err, COMET_ERRLEN);
    unlink(path);
    return rc;
}

static void test_shipped_sets(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], path[512];
    const char *src = getenv("COMET_SOURCE_DIR");
    assert_non_null(src);
    static const char *const names[] = { "quick", "full", "fusion" };
    for (int i = 0; i < 3; i++) {
        bench_shapeset set;
        snprintf(path, sizeof path, "%s/configs/shapes/%s.yaml", src, names[i]);
        assert_int_equal(bench_shapeset_load(path, ops, &set, err, sizeof err), 0);
        assert_int_equal(set.nops, 3);
        /* the fusion set compares variants only; the others feed calibration */
        assert_true(set.have_sgemm == (i < 2));
        assert_true(i == 2 || (set.sg_min >= 1 && set.sg_max >= set.sg_min));
        for (size_t k = 0; k < set.nops; k++) {
            assert_true(set.ops[k].nshapes >= 1);
            /* the BLAS baseline, fused, the same-GEMM baseline, the oneDNN peer */
            assert_int_equal(set.ops[k].nvariants, 4);
            assert_string_equal(set.ops[k].variants[2], "unfused_same_gemm");
            assert_string_equal(set.ops[k].variants[3], "onednn");
        }
        assert_true(set.ops[2].shapes[0].attn);
        /* decode's rows below the grid (one token a sequence, 8 sequences) */
        assert_true(i == 2 || (set.sg_n_small_m == 1 && set.sg_small_m[0] == 8));
        /* ... again with their weights cold, and a decode step's attention
         * over a cold KV cache (one query a head) */
        assert_true(i == 2 || (set.sg_small_m_cold == 1 && set.ndecode >= 1));
        for (size_t k = 0; k < set.ndecode; k++)
            assert_true(set.decode[k].attn && set.decode[k].Lq == 1 && set.decode[k].cold);
        bench_shapeset_free(&set);
    }
}

static void test_parse_values(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    bench_shapeset set;
    assert_int_equal(load_text("threads: [2, all]\n"
                               "ops:\n"
                               "  - op: gemm_softmax\n"
                               "    variants: [fused]\n"
                               "    shapes:\n"
                               "      - {M: 7, N: 13, K: 1}\n"
                               "tile_sweep:\n"
                               "  - {op: gemm_softmax, param: tile_m, values: [8, 16]}\n",
                         &set, err),
        0);
    assert_int_equal(set.nthreads, 2);
    assert_int_equal(set.threads[0], 2);
    assert_int_equal(set.threads[1], 0); /* all */
    assert_int_equal(set.ops[0].shapes[0].M, 7);
    assert_int_equal(set.ops[0].shapes[0].N, 13);
    assert_int_equal(set.ops[0].shapes[0].K, 1);
    assert_int_equal(set.ops[0].shapes[0].line, 6);
    assert_int_equal(set.nsweeps, 1);
    assert_int_equal(set.sweeps[0].values[1], 16);
    assert_false(set.have_sgemm);
    bench_shapeset_free(&set);
}

static void expect_error(const char *text, const char *where, const char *what)
{
    char err[COMET_ERRLEN];
    bench_shapeset set;
    assert_true(load_text(text, &set, err) < 0);
    if (!strstr(err, where) || !strstr(err, what))
        fail_msg("error '%s' lacks '%s' or '%s'", err, where, what);
}

static void test_errors(void **s)
{
    (void)s;
    expect_error("ops:\n  - op: gemm_softmax\n    variants: [fused]\n    shapes:\n"
                 "      - {M: 0, N: 4, K: 4}\n",
        ":5", "'M'");
    expect_error("ops:\n  - op: gemm_sofmax\n    variants: [fused]\n    shapes:\n"
                 "      - {M: 4, N: 4, K: 4}\n",
        ":2", "unknown op gemm_sofmax");
    expect_error("ops:\n  - op: attention\n    variants: [fused]\n    shapes:\n"
                 "      - {B: 1, H: 1, Lq: 4, Lk: 4}\n",
        ":5", "'d'");
    expect_error("ops:\n  - op: gemm_softmax\n    variants: [fast]\n    shapes:\n"
                 "      - {M: 4, N: 4, K: 4}\n",
        ":3", "variant");
    expect_error("threads: [1, 0]\nsgemm: {min: 4, max: 8}\n", ":1", "thread count");
    expect_error("sgemm: {min: 64, max: 8}\n", ":1", "max must be >= min");
    expect_error("sgemm: {min: 4, max: 8, pionts: 2}\n", ":1", "pionts");
    expect_error("threads: [1]\n", ":1", "neither");
    expect_error("sgemm:\n  min: 16\n  max: 64\n  small_m: [1, 16]\n", ":4", "below min");
    expect_error("sgemm:\n  min: 16\n  max: 64\n  small_m: [8, 1]\n", ":4", "increasing");
    expect_error("sgemm:\n  min: 16\n  max: 64\n  small_m: 8\n", ":4", "list");
    expect_error("sgemm:\n  min: 16\n  max: 64\n  small_m_cold: 1\n", ":2", "needs 'small_m'");
    expect_error(
        "sgemm:\n  min: 16\n  max: 64\n  small_m: [8]\n  small_m_cold: 2\n", ":5", "small_m_cold");
    expect_error("sgemm: {min: 4, max: 8}\ndecode_attention:\n"
                 "  - {B: 1, H: 2, Lq: 4, Lk: 64, d: 64}\n",
        ":3", "Lq: 1");
    expect_error("sgemm: {min: 4, max: 8}\ndecode_attention: {B: 1}\n", ":2", "list");
    expect_error("ops:\n  - op: gemm_softmax\n    variants: [fused]\n    shapes:\n"
                 "      - {M: 4.5, N: 4, K: 4}\n",
        ":5", "integer");
    expect_error("ops:\n  - op: gemm_softmax\n    variants: [fused, onednn, fused]\n    shapes:\n"
                 "      - {M: 4, N: 4, K: 4}\n",
        ":3", "variant listed twice: fused");
    expect_error("ops:\n  - op: gemm_softmax\n    variants: [unfused_same]\n    shapes:\n"
                 "      - {M: 4, N: 4, K: 4}\n",
        ":3", "'unfused_same_gemm'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_sets),
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
