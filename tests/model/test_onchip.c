/* #37 on the COMET presets: the unfused baseline may keep its intermediate
 * in the global buffer (intermediate: global_buffer), the fused space is
 * not narrower than the unfused one (a single KV tile is a plain softmax;
 * clusters sharing a head read its K and V once; a core keeps its share of
 * the keys), and the core-level temporal loop pays its fill and drain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_util.h"
#include "mfixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void load(const char *name, comet_model_hw *hw)
{
    char err[COMET_ERRLEN];
    if (comet_model_hw_load(name, hw, err, sizeof err) != 0)
        fail_msg("%s", err);
}

/* An unfused mapping that keeps its intermediate on chip sends DRAM only the
 * compulsory bytes (A, B, the result at io_bytes_per_elem); through DRAM it
 * sends the 16-bit intermediate out and back as well. One that does not fit
 * the global buffer, or any on a CPU, is refused. */
static void test_intermediate_in_gb(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    const double M = 256, N = 256, K = 128;
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = M, .N = N, .K = K };
    comet_model_mapping mp = map(0, 1, 4, 1, 1, 4, 1, 8, 64);
    comet_model_result rd, rg;
    comet_model_eval(&hw, &pb, &mp, &rd);
    mp.inter_gb = 1;
    comet_model_eval(&hw, &pb, &mp, &rg);
    assert_true(rd.valid && rg.valid);
    const double io = hw.io_bytes_per_elem, b = hw.bytes_per_elem;
    const double compulsory = (M * K + K * N + M * N) * io;
    if (fabs(rg.dram_bytes - compulsory) > 1e-9 * compulsory)
        fail_msg("on-chip intermediate: %g DRAM bytes, compulsory %g", rg.dram_bytes, compulsory);
    if (fabs(rd.dram_bytes - (compulsory + 2 * M * N * b)) > 1e-9 * compulsory)
        fail_msg("through DRAM: %g bytes, expected %g", rd.dram_bytes, compulsory + 2 * M * N * b);
    assert_true(rg.cycles < rd.cycles && rg.energy_pj < rd.energy_pj);
    /* the bound of the on-chip variant: its DRAM bytes, not the round trip */
    assert_true(rg.bound_dram < rd.bound_dram && rg.cycles >= rg.bound_cycles);
    /* 4096 x 4096 x 2 B per cluster (32 MiB) does not fit a 2 MiB buffer */
    comet_model_problem big = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 4096, .N = 4096, .K = 128 };
    comet_model_eval(&hw, &big, &mp, &rg);
    assert_false(rg.valid);
    mp.inter_gb = 0;
    comet_model_eval(&hw, &big, &mp, &rd);
    assert_true(rd.valid);
    comet_model_hw_free(&hw);
    /* a CPU's caches place the intermediate themselves */
    comet_model_hw cpu;
    assert_int_equal(mfix_profile(&cpu), 0);
    comet_model_mapping cm = map(0, 1, 1, 1, 1, 1, 1, 64, 128);
    cm.inter_gb = 1;
    comet_model_eval(&cpu, &pb, &cm, &rg);
    assert_false(rg.valid);
    comet_model_hw_free(&cpu);
}

/* A fused attention mapping with one KV tile runs a plain softmax: each KV
 * tile after the first rescales O (d multiplies and adds at the vector width)
 * and the running sum (one exp) per row, the first does not. */
static void test_first_kv_tile(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    const double heads = 2, lq = 64, lk = 256, d = 64;
    comet_model_problem pb
        = { .op = COMET_MODEL_ATTENTION, .heads = heads, .lq = lq, .lk = lk, .d = d };
    comet_model_result r1, r2;
    /* the four cores take 8 rows each of a 32-row step */
    comet_model_mapping one = map(1, 0, 1, 1, 1, 4, 1, 32, lk);
    comet_model_mapping two = map(1, 0, 1, 1, 1, 4, 1, 32, lk / 2);
    comet_model_eval(&hw, &pb, &one, &r1);
    comet_model_eval(&hw, &pb, &two, &r2);
    assert_true(r1.valid && r2.valid);
    const double *c = hw.vop_cycles;
    const double rescale = d * (c[COMET_MODEL_VOP_MUL] + c[COMET_MODEL_VOP_ADD]) / hw.simd_width
        + c[COMET_MODEL_VOP_EXP];
    const double want = heads * lq / 4 * rescale; /* every row, one rescale more */
    if (fabs((r2.t_vec - r1.t_vec) - want) > 1e-9 * want)
        fail_msg(
            "two KV tiles cost %g vector cycles more than one, want %g", r2.t_vec - r1.t_vec, want);
    /* one tile is the unfused passes' softmax over the same rows, plus the
     * scaling of O by 1 / sum (d multiplies a row) that attention's fused
     * graph does on O instead of on P: no rescale (it cost one before) */
    comet_model_mapping un = map(0, 0, 1, 1, 1, 1, 1, 32, lk);
    comet_model_result ru;
    comet_model_eval(&hw, &pb, &un, &ru);
    assert_true(ru.valid);
    const double o_scale = heads * lq / 4 * d * c[COMET_MODEL_VOP_MUL] / hw.simd_width;
    if (fabs(r1.t_vec - (ru.t_vec + o_scale)) > 1e-9 * r1.t_vec)
        fail_msg("one KV tile: %g vector cycles, the unfused softmax %g + O's scaling %g", r1.t_vec,
            ru.t_vec, o_scale);
    comet_model_hw_free(&hw);
}

/* On both presets the best fused mapping is no slower and spends no more
 * than the best unfused one, which keeps its intermediate in the global
 * buffer where it fits (the baseline explore states). Before #37's fixes
 * fused attention was 0.72-0.97x of such a baseline. */
static void test_fused_not_narrower(void **s)
{
    (void)s;
    static const char *const presets[2] = { "edge", "cloud" };
    const comet_model_problem pbs[4]
        = { { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 256 },
              { .op = COMET_MODEL_GEMM_LAYERNORM, .M = 256, .N = 256, .K = 128 },
              { .op = COMET_MODEL_ATTENTION, .heads = 16, .lq = 512, .lk = 512, .d = 64 },
              { .op = COMET_MODEL_ATTENTION, .heads = 8, .lq = 1024, .lk = 1024, .d = 64 } };
    comet_model_search *se = calloc(1, sizeof *se);
    assert_non_null(se);
    for (int h = 0; h < 2; h++) {
        comet_model_hw hw;
        load(presets[h], &hw);
        for (int o = 0; o < 4; o++) {
            assert_int_equal(comet_model_explore(&hw, &pbs[o], se), 0);
            if (!(se->r_fused.cycles <= se->r_unfused.cycles
                    && se->r_fused.energy_pj <= se->r_unfused.energy_pj))
                fail_msg("%s on %s: fused %g cycles %g pJ, unfused %g cycles %g pJ",
                    comet_model_op_name(pbs[o].op), presets[h], se->r_fused.cycles,
                    se->r_fused.energy_pj, se->r_unfused.cycles, se->r_unfused.energy_pj);
            /* these intermediates fit a cluster's buffer: the baseline keeps them */
            if (!se->best_unfused.inter_gb)
                fail_msg("%s on %s: the best unfused mapping streams its intermediate",
                    comet_model_op_name(pbs[o].op), presets[h]);
        }
        comet_model_hw_free(&hw);
    }
    free(se);
}

/* Clusters that split one head's queries read its K and V once when the
 * cluster network broadcasts, once each when it does not. */
static void test_kv_broadcast(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("cloud", &hw);
    const double heads = 8, lq = 1024, lk = 1024, d = 64;
    comet_model_problem pb
        = { .op = COMET_MODEL_ATTENTION, .heads = heads, .lq = lq, .lk = lk, .d = d };
    comet_model_mapping mp = map(1, 1, 16, 1, 1, 4, 4, 16, 1024); /* two clusters a head */
    comet_model_result rb, rn;
    comet_model_eval(&hw, &pb, &mp, &rb);
    hw.cluster_net.broadcast = 0;
    comet_model_eval(&hw, &pb, &mp, &rn);
    assert_true(rb.valid && rn.valid);
    const double io = hw.io_bytes_per_elem, kv = heads * 2 * lk * d * io;
    if (fabs((rn.dram_bytes - rb.dram_bytes) - kv) > 1e-9 * kv)
        fail_msg("broadcast saves %g DRAM bytes, want one copy of every K and V (%g)",
            rn.dram_bytes - rb.dram_bytes, kv);
    comet_model_hw_free(&hw);
}

/* The core-level temporal loop: ct_m x ct_n sub-tiles each fill and drain
 * the arrays (2R + C + rows - 2 per fold); an unfused step tile whose
 * accumulators exceed the output buffer fits with row sub-tiles. */
static void test_core_temporal(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 256, .N = 256, .K = 128 };
    comet_model_mapping mp = map(1, 0, 1, 4, 1, 1, 4, 64, 128);
    comet_model_result r1, r4;
    comet_model_eval(&hw, &pb, &mp, &r1);
    mp.ct_m = 4, mp.ct_n = 4;
    comet_model_eval(&hw, &pb, &mp, &r4);
    assert_true(r1.valid && r4.valid);
    const double R = hw.sa_rows, C = hw.sa_cols, steps = 4;
    /* a core's step tile: 64 rows x 16 columns x K 128, one fold */
    assert_true(r1.t_gemm == steps * (2 * R + C + 64 - 2));
    assert_true(r4.t_gemm == steps * 16 * (2 * R + C + 16 - 2));
    /* unfused, 256-row steps on one core: 256 x 256 fp32 = 256 KiB of
     * accumulators against a 128 KiB output buffer */
    comet_model_mapping u = map(0, 0, 1, 1, 1, 1, 1, 256, 64);
    comet_model_eval(&hw, &pb, &u, &r1);
    assert_false(r1.valid);
    u.ct_m = 2;
    comet_model_eval(&hw, &pb, &u, &r4);
    assert_true(r4.valid);
    comet_model_hw_free(&hw);
}

/* A channel that serialises W-bit flits every t_enq cycles carries at most
 * W / 8 / t_enq bytes a cycle (edge: 512 / 8 / 2 = 32 of its 64 B/cycle
 * port): the core network's transfers and the collectives take longer than
 * at the port's rate, never shorter. */
static void test_channel(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    assert_true(comet_model_net_bw(&hw.core_net) == 32);
    assert_true(comet_model_net_bw(&hw.cluster_net) == 32);
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 256 };
    comet_model_mapping mp = map(1, 1, 1, 4, 1, 1, 4, 64, 256);
    comet_model_result rc, rw;
    comet_model_eval(&hw, &pb, &mp, &rc);
    comet_model_hw wide = hw;
    wide.core_net.channel_bits = wide.cluster_net.channel_bits = 0;
    assert_true(comet_model_net_bw(&wide.core_net) == 64);
    comet_model_eval(&wide, &pb, &mp, &rw);
    assert_true(rc.valid && rw.valid);
    assert_true(rc.t_noc > rw.t_noc && rc.t_coll > rw.t_coll && rc.cycles >= rw.cycles);
    comet_model_hw_free(&hw);
}

/* The local buffer's input, weight and output parts with their own ports
 * take a step's bytes side by side; one shared port takes them in turn. The
 * partial sums of K sub-tiles go through the output port. */
static void test_buffer_ports(void **s)
{
    (void)s;
    comet_model_hw hw;
    load("edge", &hw);
    /* slow ports, so that they bind */
    hw.lb.bw = 8;
    hw.lb_input_bw = hw.lb_weight_bw = hw.lb_output_bw = 8;
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 256, .N = 256, .K = 128 };
    comet_model_mapping mp = map(1, 1, 1, 4, 1, 1, 4, 64, 128);
    comet_model_result rp, r1;
    comet_model_eval(&hw, &pb, &mp, &rp);
    comet_model_hw shared = hw;
    shared.lb_input_bw = shared.lb_weight_bw = shared.lb_output_bw = 0;
    comet_model_eval(&shared, &pb, &mp, &r1);
    assert_true(rp.valid && r1.valid);
    assert_true(r1.t_noc > rp.t_noc);
    /* partial sums: two K sub-tiles read and write a 64 x 16 fp32 tile once
     * more per step, at the output port */
    comet_model_mapping k2 = mp;
    k2.ct_k = 2;
    comet_model_result rk;
    comet_model_eval(&hw, &pb, &k2, &rk);
    assert_true(rk.valid);
    const double R = hw.sa_rows, C = hw.sa_cols;
    const double fill = 4 * 2 * (2 * R + C + 64 - 2); /* 4 steps x 2 sub-tiles, one fold */
    const double psum = 4 * 2 * 64 * 16 * 4 / hw.lb_output_bw;
    if (fabs(rk.t_gemm - (fill + psum)) > 1e-9 * rk.t_gemm)
        fail_msg("K sub-tiles: gemm %g cycles, want %g fill/drain + %g partial sums", rk.t_gemm,
            fill, psum);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intermediate_in_gb),
        cmocka_unit_test(test_first_kv_tile),
        cmocka_unit_test(test_fused_not_narrower),
        cmocka_unit_test(test_kv_broadcast),
        cmocka_unit_test(test_core_temporal),
        cmocka_unit_test(test_channel),
        cmocka_unit_test(test_buffer_ports),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
