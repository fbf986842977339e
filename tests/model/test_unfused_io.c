/* #37 defect 3, two parts. An accelerator's unfused pass writes the op's result to DRAM
 * at io_bytes_per_elem, as the fused path does (it wrote it at
 * bytes_per_elem). Property: raising io_bytes_per_elem from 1 to 2 adds the
 * same DRAM bytes to a fused and an unfused mapping with the same splits and
 * tiles (A, B and the result, one byte each more per element), over many
 * shapes and mappings on both COMET presets. And tile_k is not free: a K
 * step shorter than the cluster's K reads and writes the partial sums in
 * the local buffer, so halving tile_k raises the local buffer's energy and
 * never shortens the GEMM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_result_at_io_bytes(void **state)
{
    (void)state;
    static const char *const presets[2] = { "edge", "cloud" };
    int checked = 0;
    for (int k = 0; k < 2; k++) {
        comet_model_hw hw;
        char err[512];
        assert_int_equal(comet_model_hw_load(presets[k], &hw, err, sizeof err), 0);
        assert_true(hw.io_bytes_per_elem == 1 && hw.bytes_per_elem == 2);
        for (int op = 0; op < 2; op++)
            for (int m = 64; m <= 1024; m *= 4)
                for (int n = 64; n <= 1024; n *= 4)
                    for (int tm = 1; tm <= 64; tm *= 8) {
                        comet_model_problem pb
                            = { .op = op ? COMET_MODEL_GEMM_LAYERNORM : COMET_MODEL_GEMM_SOFTMAX,
                                  .M = m,
                                  .N = n,
                                  .K = 128 };
                        comet_model_mapping mp = { .fused = 1,
                            .cs_m = hw.clusters,
                            .cs_n = 1,
                            .cs_k = 1,
                            .ks_m = 1,
                            .ks_n = hw.cores,
                            .tile_m = tm,
                            .tile_k = 128,
                            .one_pass = 1,
                            .streaming = -1 };
                        double d[2];
                        int valid = 1;
                        for (int f = 0; f < 2; f++) {
                            comet_model_result r1, r2;
                            mp.fused = f;
                            hw.io_bytes_per_elem = 1;
                            comet_model_eval(&hw, &pb, &mp, &r1);
                            hw.io_bytes_per_elem = 2;
                            comet_model_eval(&hw, &pb, &mp, &r2);
                            valid &= r1.valid && r2.valid;
                            d[f] = r2.dram_bytes - r1.dram_bytes;
                        }
                        hw.io_bytes_per_elem = 1;
                        if (!valid)
                            continue;
                        checked++;
                        if (fabs(d[0] - d[1]) > 1e-9 * fmax(d[0], d[1]))
                            fail_msg("%s op %d M=%d N=%d tile_m %d: one more io byte adds %.0f B "
                                     "unfused, %.0f B fused",
                                presets[k], op, m, n, tm, d[0], d[1]);
                        /* the result's bytes are part of it */
                        assert_true(d[0] >= (double)m * n);
                    }
        comet_model_hw_free(&hw);
    }
    assert_true(checked >= 20);
}

static void test_tile_k_partial_sums(void **state)
{
    (void)state;
    static const char *const presets[2] = { "edge", "cloud" };
    int checked = 0;
    for (int k = 0; k < 2; k++) {
        comet_model_hw hw;
        char err[512];
        assert_int_equal(comet_model_hw_load(presets[k], &hw, err, sizeof err), 0);
        for (int fused = 0; fused < 2; fused++)
            for (int m = 64; m <= 1024; m *= 4)
                for (int kk = 128; kk <= 1024; kk *= 2)
                    for (int tm = 1; tm <= 16; tm *= 4) {
                        comet_model_problem pb
                            = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = m, .N = 256, .K = kk };
                        comet_model_mapping mp = { .fused = fused,
                            .cs_m = hw.clusters,
                            .cs_n = 1,
                            .cs_k = 1,
                            .ks_m = 1,
                            .ks_n = hw.cores,
                            .tile_m = tm,
                            .tile_k = kk,
                            .one_pass = 1,
                            .streaming = -1 };
                        comet_model_result whole, half;
                        comet_model_eval(&hw, &pb, &mp, &whole);
                        mp.tile_k = kk / 2;
                        comet_model_eval(&hw, &pb, &mp, &half);
                        if (!whole.valid || !half.valid)
                            continue;
                        checked++;
                        if (!(half.e_lb > whole.e_lb) || half.t_gemm < whole.t_gemm)
                            fail_msg("%s fused %d M=%d K=%d tile_m %d: tile_k %d -> %d: local "
                                     "energy %.6g -> %.6g pJ, GEMM %.0f -> %.0f cycles",
                                presets[k], fused, m, kk, tm, kk, kk / 2, whole.e_lb, half.e_lb,
                                whole.t_gemm, half.t_gemm);
                    }
        comet_model_hw_free(&hw);
    }
    assert_true(checked >= 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_result_at_io_bytes),
        cmocka_unit_test(test_tile_k_partial_sums),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
