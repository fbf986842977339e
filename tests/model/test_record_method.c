/* A fused GEMM row op that ran op by op in cache (record params.method
 * "op_by_op", the kernels' choice by size) is predicted as what it ran: the
 * unfused mapping of its shape with its pass in place (no read for
 * ownership of a separate output: never slower than the unfused record);
 * a blocked one as fused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model_validate.h"
#include "mfixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static comet_results_record rec(const char *variant, const char *method)
{
    comet_results_record r;
    comet_results_record_init(&r, COMET_RESULTS_KERNEL);
    r.op = "gemm_softmax";
    r.variant = variant;
    r.shape.M = 256;
    r.shape.N = 512;
    r.shape.K = 64;
    r.threads = 2;
    r.stats.median_s = 1e-4;
    r.params.tile_m = 36;
    if (method)
        r.params.method = method;
    return r;
}

static void test_method(void **st)
{
    (void)st;
    comet_model_hw hw;
    assert_int_equal(mfix_profile(&hw), 0);
    comet_results_record r[3]
        = { rec("unfused", NULL), rec("fused", "op_by_op"), rec("fused", "blocked") };
    comet_model_vrow rows[3];
    assert_int_equal(comet_model_validate_records(&hw, r, 3, rows, 3), 3);
    assert_string_equal(rows[1].variant, "fused"); /* still the fused record */
    assert_true(rows[1].predicted_s <= rows[0].predicted_s);
    assert_true(rows[1].predicted_s > 0.8 * rows[0].predicted_s); /* the same GEMM and pass */
    assert_true(rows[2].predicted_s != rows[0].predicted_s);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_method) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
