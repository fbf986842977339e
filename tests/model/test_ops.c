/* ops.c: shapes parsed per op. */
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

static void test_shape_parse(void **s)
{
    (void)s;
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX };
    char err[COMET_ERRLEN];
    assert_int_equal(comet_model_problem_parse("M=1K,N=512,K=64", &pb, err, sizeof err), 0);
    assert_true(pb.M == 1024 && pb.N == 512 && pb.K == 64);
    assert_int_not_equal(comet_model_problem_parse("M=-1,N=2,K=3", &pb, err, sizeof err), 0);
    assert_int_not_equal(comet_model_problem_parse("M=1,N=2", &pb, err, sizeof err), 0);
    assert_int_not_equal(
        comet_model_problem_parse("M=1,N=2,K=99999999999999999999", &pb, err, sizeof err), 0);
    assert_int_not_equal(comet_model_problem_parse("Q=1", &pb, err, sizeof err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
