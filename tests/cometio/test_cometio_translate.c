/* The translation of COMET's files into comet's own description, problem
 * and mapping: COMET's edge architecture becomes comet's edge preset (the
 * round trip: the same description field by field the model reads, the same
 * prediction for the translated mapping); the problem is GEMM-Softmax of the
 * constants' shape; the mapping keeps fusion, splits and the step tile; the
 * dropped fields are listed with file:line; an op chain comet cannot
 * express is refused naming the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_cometio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fixture(const char *name)
{
    static char buf[4][1200];
    static int k;
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(buf[k & 3], sizeof buf[0], "%s/tests/fixtures/cometio/%s", src ? src : ".", name);
    return buf[k++ & 3];
}

static void translate(
    const char *arch, const char *consts, comet_cometio_translation *tr, comet_model_hw *hw)
{
    comet_cometio_inputs in;
    char err[512] = "";
    int rc = comet_cometio_load(fixture(arch), fixture("gemm-softmax-problem.yaml"),
        fixture("gemm-softmax-mapping.yaml"), fixture(consts), &in, err, sizeof err);
    if (rc)
        fail_msg("load: %s", err);
    rc = comet_cometio_translate(&in, tr, err, sizeof err);
    comet_cometio_free(&in);
    if (rc)
        fail_msg("translate: %s", err);
    rc = comet_model_hw_parse("translated", tr->hw_yaml, strlen(tr->hw_yaml), hw, err, sizeof err);
    if (rc)
        fail_msg("parse: %s\n%s", err, tr->hw_yaml);
}

static void same(double a, double b, const char *what)
{
    if (fabs(a - b) > 2e-3 * fmax(fabs(a), fabs(b)))
        fail_msg("%s: translated %.8g, preset %.8g", what, a, b);
}

static void test_round_trip(void **state)
{
    (void)state;
    static const char *const arch[2] = { "edge-arch.yaml", "cloud-arch.yaml" };
    static const char *const consts[2] = { "edge_c1-const.yaml", "cloud_decode-const.yaml" };
    static const char *const preset[2] = { "edge", "cloud" };
    for (int k = 0; k < 2; k++) {
        comet_cometio_translation *tr = calloc(1, sizeof *tr);
        comet_model_hw hw, pre;
        char err[512];
        assert_non_null(tr);
        translate(arch[k], consts[k], tr, &hw);
        assert_int_equal(comet_model_hw_load(preset[k], &pre, err, sizeof err), 0);
        assert_int_equal(hw.clusters, pre.clusters);
        assert_int_equal(hw.cores, pre.cores);
        same(hw.bytes_per_elem, pre.bytes_per_elem, "bytes_per_elem");
        same(hw.io_bytes_per_elem, pre.io_bytes_per_elem, "io_bytes_per_elem");
        same(hw.dram.bw, pre.dram.bw, "dram bw");
        same(hw.dram.read_pj, pre.dram.read_pj, "dram read pJ");
        same(hw.gb.capacity, pre.gb.capacity, "gb capacity");
        same(hw.gb.bw, pre.gb.bw, "gb bw");
        same(hw.gb.read_pj, pre.gb.read_pj, "gb read pJ");
        same(hw.gb.write_pj, pre.gb.write_pj, "gb write pJ");
        same(hw.lb.capacity, pre.lb.capacity, "lb capacity");
        same(hw.lb_input, pre.lb_input, "input_bytes");
        same(hw.lb_weight, pre.lb_weight, "weight_bytes");
        same(hw.lb_output, pre.lb_output, "output_bytes");
        same(hw.cluster_net.link_bw, pre.cluster_net.link_bw, "cluster link_bw");
        same(hw.cluster_net.hop_latency, pre.cluster_net.hop_latency, "hop latency");
        same(hw.cluster_net.link_pj_per_byte, pre.cluster_net.link_pj_per_byte, "link pJ/B");
        same(hw.core_net.link_bw, pre.core_net.link_bw, "core link_bw");
        same(hw.sa_rows, pre.sa_rows, "systolic rows");
        same(hw.sa_arrays, pre.sa_arrays, "systolic arrays");
        same(hw.mac_pj, pre.mac_pj, "mac pJ");
        same(hw.simd_width, pre.simd_width, "simd width");
        /* the same prediction on both descriptions */
        comet_model_result a, b;
        comet_model_eval(&hw, &tr->pb, &tr->mp, &a);
        comet_model_eval(&pre, &tr->pb, &tr->mp, &b);
        assert_int_equal(a.valid, b.valid);
        same(a.cycles, b.cycles, "cycles");
        same(a.energy_pj, b.energy_pj, "energy");
        comet_model_hw_free(&hw);
        comet_model_hw_free(&pre);
        free(tr);
    }
}

static void test_problem_and_mapping(void **state)
{
    (void)state;
    comet_cometio_translation *tr = calloc(1, sizeof *tr);
    comet_model_hw hw;
    assert_non_null(tr);
    translate("edge-arch.yaml", "edge_c1-const.yaml", tr, &hw);
    assert_int_equal(tr->pb.op, COMET_MODEL_GEMM_SOFTMAX);
    assert_true(tr->pb.M == 256 && tr->pb.N == 256 && tr->pb.K == 128);
    /* N over the 2x2 clusters and again over the 2x2 cores; M in 4 steps */
    assert_int_equal(tr->mp.fused, 1);
    assert_int_equal(tr->mp.cs_n, 4);
    assert_int_equal(tr->mp.cs_m, 1);
    assert_int_equal(tr->mp.ks_n, 4);
    assert_true(tr->mp.tile_m == 64 && tr->mp.tile_k == 128);
    /* the core-level loop kept: M_Core_temporal 4, N_Core_temporal 4 */
    assert_true(tr->mp.ct_m == 4 && tr->mp.ct_n == 4 && tr->mp.ct_k == 1);
    int coll = 0, core = 0, simd = 0;
    for (int i = 0; i < tr->n_dropped; i++) {
        assert_non_null(strstr(tr->dropped[i], ".yaml:"));
        coll += strstr(tr->dropped[i], "CollectiveOperation") != NULL;
        core += strstr(tr->dropped[i], "core level") != NULL;
        simd += strstr(tr->dropped[i], "TilePrimitive") != NULL;
    }
    assert_int_equal(coll, 2);
    assert_int_equal(core, 6); /* the GEMM's core-level order and the five SIMD ops' tiles */
    assert_int_equal(simd, 5);
    comet_model_hw_free(&hw);
    free(tr);
}

/* #37: with the core-level temporal loop carried, comet's own GEMM term on
 * the translated mapping is COMET's (its GEMM compute, TMW, of the five
 * reference runs: COMET 917af0d, docs/comet-compat.md), and cloud_c1, whose
 * 64 x 512 tile of 8-bit A fills COMET's 32 KiB input buffer exactly, fits */
static void test_core_level_gemm(void **state)
{
    (void)state;
    static const struct {
        const char *arch, *consts;
        double gemm;
    } run[] = {
        { "edge-arch.yaml", "edge_c1-const.yaml", 7040 },
        { "edge-arch.yaml", "edge_c2-const.yaml", 7040 },
        { "edge-arch.yaml", "edge_decode-const.yaml", 380 },
        { "cloud-arch.yaml", "cloud_c1-const.yaml", 3520 },
        { "cloud-arch.yaml", "cloud_decode-const.yaml", 380 },
    };
    for (size_t i = 0; i < sizeof run / sizeof run[0]; i++) {
        comet_cometio_translation *tr = calloc(1, sizeof *tr);
        comet_model_hw hw;
        assert_non_null(tr);
        translate(run[i].arch, run[i].consts, tr, &hw);
        comet_model_result r;
        comet_model_eval(&hw, &tr->pb, &tr->mp, &r);
        if (!r.valid)
            fail_msg("%s: the translated mapping does not fit", run[i].consts);
        if (r.t_gemm != run[i].gemm)
            fail_msg("%s: GEMM %g cycles, COMET %g", run[i].consts, r.t_gemm, run[i].gemm);
        /* without the core-level loop the fill and drain are paid per step:
         * fewer cycles than COMET wherever the loop has more than one tile */
        comet_model_mapping one = tr->mp;
        one.ct_m = one.ct_n = one.ct_k = 1;
        comet_model_result r1;
        comet_model_eval(&hw, &tr->pb, &one, &r1);
        assert_true(r1.valid);
        if (tr->mp.ct_m * tr->mp.ct_n * tr->mp.ct_k > 1)
            assert_true(r1.t_gemm < r.t_gemm);
        comet_model_hw_free(&hw);
        free(tr);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_problem_and_mapping),
        cmocka_unit_test(test_core_level_gemm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
