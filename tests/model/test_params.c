/* Named hardware parameters: units, the clock keeping B/s, sensitivity ranking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static void load(const char *name, comet_model_hw *hw)
{
    char err[COMET_ERRLEN];
    memset(hw, 0, sizeof *hw);
    assert_int_equal(comet_model_hw_load(name, hw, err, sizeof err), 0);
}

static void test_get_set(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    for (int i = 0; i < comet_model_param_count(); i++) {
        const char *n = comet_model_param_name(i);
        double v, w;
        assert_non_null(comet_model_param_unit(n));
        assert_non_null(comet_model_param_what(n));
        assert_int_equal(comet_model_param_get(&hw, n, &v), 0);
        if (!(v > 0))
            continue;
        const int count = !strcmp(comet_model_param_unit(n), "") && strcmp(n, "gemm_eff");
        const double nv = count ? v + 1 : (strcmp(n, "gemm_eff") ? v * 1.1 : v * 0.9);
        comet_model_hw c = hw;
        assert_int_equal(comet_model_param_set(&c, n, nv), 0);
        assert_int_equal(comet_model_param_get(&c, n, &w), 0);
        assert_true(fabs(w - nv) <= 1e-9 * nv);
        assert_int_equal(comet_model_param_set(&c, n, -1), -ERANGE);
    }
    assert_int_equal(comet_model_param_set(&hw, "no_such", 1), -EINVAL);
    comet_model_hw_free(&hw);
}

static void test_clock_keeps_bandwidth(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("cloud", &hw);
    double bw0, bw1, f0, f1, v;
    assert_int_equal(comet_model_param_get(&hw, "dram_bw", &bw0), 0);
    assert_int_equal(comet_model_param_get(&hw, "peak_flops", &f0), 0);
    assert_int_equal(comet_model_param_get(&hw, "clock", &v), 0);
    assert_int_equal(comet_model_param_set(&hw, "clock", 2 * v), 0);
    assert_int_equal(comet_model_param_get(&hw, "dram_bw", &bw1), 0);
    assert_int_equal(comet_model_param_get(&hw, "peak_flops", &f1), 0);
    assert_true(fabs(bw1 - bw0) <= 1e-9 * bw0); /* B/s unchanged */
    assert_true(fabs(f1 - 2 * f0) <= 1e-9 * f0); /* FLOP/s with the clock */
    /* stores alone stay in B/s with the clock, and keep their ratio to the
     * level's bandwidth when that is set */
    hw.dram.write_bw = 2 * hw.dram.bw, hw.dram.core_write_bw = hw.dram.bw;
    const double w0 = hw.dram.write_bw * hw.clock_ghz;
    assert_int_equal(comet_model_param_set(&hw, "clock", v), 0);
    assert_true(fabs(hw.dram.write_bw * hw.clock_ghz - w0) <= 1e-9 * w0);
    assert_int_equal(comet_model_param_set(&hw, "dram_bw", 3 * bw0), 0);
    assert_true(fabs(hw.dram.write_bw - 2 * hw.dram.bw) <= 1e-9 * hw.dram.write_bw);
    assert_true(fabs(hw.dram.core_write_bw - hw.dram.bw) <= 1e-9 * hw.dram.bw);
    assert_int_equal(comet_model_param_parse("dram_bw", "25 GB/s", &v), 0);
    assert_true(v == 25e9);
    assert_int_equal(comet_model_param_parse("clusters", "4.5", &v), 0);
    assert_int_equal(comet_model_param_set(&hw, "clusters", v), -ERANGE);
    assert_int_equal(comet_model_param_parse("dram_bw", "25 GHz", &v), -EINVAL);
    comet_model_hw_free(&hw);
}

static void test_sensitivity(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    pb.M = 1024, pb.N = 1024, pb.K = 256;
    comet_model_sens_row rows[32];
    int n = comet_model_sensitivity(&hw, &pb, 0.1, rows, 32);
    assert_true(n >= 8);
    double prev = INFINITY;
    for (int i = 0; i < n; i++) {
        const double k = fmax(fabs(rows[i].elasticity_fused), fabs(rows[i].elasticity_unfused));
        assert_true(k <= prev + 1e-12); /* ranked by effect */
        prev = k;
        /* more bandwidth or compute never makes the best mapping slower */
        if (strstr(rows[i].name, "_bw") || !strcmp(rows[i].name, "peak_flops")) {
            assert_true(rows[i].elasticity_fused <= 1e-9);
            assert_true(rows[i].elasticity_unfused <= 1e-9);
        }
    }
    assert_int_equal(comet_model_sensitivity(&hw, &pb, 0, rows, 32), -EINVAL);
    comet_model_hw_free(&hw);
}

static void test_problem_dims(void **s)
{
    (void)s;
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_ATTENTION;
    assert_int_equal(comet_model_problem_dim_set(&pb, "lk", 4096), 0);
    assert_true(pb.lk == 4096);
    assert_int_equal(comet_model_problem_dim_set(&pb, "M", 4096), -ENOENT);
    assert_int_equal(comet_model_problem_dim_set(&pb, "d", 0.5), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_set),
        cmocka_unit_test(test_clock_keeps_bandwidth),
        cmocka_unit_test(test_sensitivity),
        cmocka_unit_test(test_problem_dims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
