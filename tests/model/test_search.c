/* search.c: capacity pruning, and the search's optimum against brute force. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_util.h"
#include "mfixture.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_capacity_pruning(void **s)
{
    (void)s;
    comet_model_hw hw;
    load_tiny(&hw, "mesh2d", "false");
    /* a 512-row fused tile of N=4096 fp32 accumulators is 8 MiB > 1 MiB GB */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 4096, .K = 64 };
    comet_model_mapping mp = map(1, 0, 1, 1, 1, 1, 1, 512, 64);
    comet_model_result r;
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_false(r.valid);
    mp.tile_m = 8;
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid);
    comet_model_hw_free(&hw);
}
/* explore's best equals the minimum over an independent brute force. */
static void test_explore_bruteforce(void **s)
{
    (void)s;
    comet_model_hw hw;
    load_tiny(&hw, "mesh2d", "false");
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 128, .N = 128, .K = 64 };
    comet_model_search *se = calloc(1, sizeof *se);
    assert_int_equal(comet_model_explore(&hw, &pb, se), 0);
    double best_f = INFINITY, best_u = INFINITY;
    int splits[6][3]
        = { { 4, 1, 1 }, { 1, 4, 1 }, { 1, 1, 4 }, { 2, 2, 1 }, { 2, 1, 2 }, { 1, 2, 2 } };
    for (int sp = 0; sp < 6; sp++)
        for (double tm = 1; tm <= 128; tm *= 2)
            for (double tk = 1; tk <= 64; tk *= 2)
                for (int f = 0; f <= 1; f++)
                    for (int pi = 0; pi <= 1; pi++)
                        /* unfused: the intermediate in DRAM or kept in the
                         * global buffer; every core-level temporal loop (the
                         * search tries them only where the whole tile does
                         * not fit: this says that loses nothing) */
                        for (int igb = 0; igb <= !f; igb++)
                            for (int ctm = 1; ctm <= 16; ctm *= 2)
                                for (int ctn = 1; ctn <= 16; ctn *= 2) {
                                    comet_model_mapping mp = map(f, pi, splits[sp][0],
                                        splits[sp][1], splits[sp][2], 1, 1, tm, tk);
                                    mp.inter_gb = igb;
                                    mp.ct_m = ctm, mp.ct_n = ctn;
                                    comet_model_result r;
                                    comet_model_eval(&hw, &pb, &mp, &r);
                                    if (!r.valid)
                                        continue;
                                    if (f && r.cycles < best_f)
                                        best_f = r.cycles;
                                    if (!f && r.cycles < best_u)
                                        best_u = r.cycles;
                                }
    assert_true(fabs(se->r_fused.cycles - best_f) < 1e-6 * best_f);
    assert_true(fabs(se->r_unfused.cycles - best_u) < 1e-6 * best_u);
    assert_true(se->evaluated > 0 && se->npareto > 0);
    free(se);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_capacity_pruning),
        cmocka_unit_test(test_explore_bruteforce),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
