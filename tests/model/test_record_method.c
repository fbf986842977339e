/* A fused GEMM row op that ran op by op in cache (record params.method
 * "op_by_op", the kernels' choice by size) is predicted as what it ran: the
 * same as the unfused record of its shape; a blocked one as fused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "mfixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *rec(const char *variant, const char *method)
{
    json_t *r = json_pack("{s:s,s:s,s:s,s:{s:i,s:i,s:i},s:i,s:{s:f},s:{s:i}}", "kind", "kernel",
        "op", "gemm_softmax", "variant", variant, "shape", "M", 256, "N", 512, "K", 64, "threads",
        2, "stats", "median_s", 1e-4, "params", "tile_m", 36);
    if (method)
        json_object_set_new(json_object_get(r, "params"), "method", json_string(method));
    return r;
}

static void test_method(void **st)
{
    (void)st;
    comet_model_hw hw;
    assert_int_equal(mfix_profile(&hw), 0);
    json_t *r[3] = { rec("unfused", NULL), rec("fused", "op_by_op"), rec("fused", "blocked") };
    comet_model_vrow rows[3];
    assert_int_equal(comet_model_validate_records(&hw, r, 3, rows, 3), 3);
    assert_string_equal(rows[1].variant, "fused"); /* still the fused record */
    assert_true(rows[1].predicted_s == rows[0].predicted_s);
    assert_true(rows[2].predicted_s != rows[0].predicted_s);
    for (int i = 0; i < 3; i++)
        json_decref(r[i]);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_method) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
