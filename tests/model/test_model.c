/* model.c: the cost of one mapping, by hand and by its invariants: GEMM
 * cycles on a systolic array, collective insertion and nodes, CPU memory
 * levels and stores, micro-tiles, row passes, attention tiles, B reloads,
 * causal and unfused passes, core splits. */
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

/* GEMM cycles on the systolic array, by hand: one fold of (K=32, N=32) onto a
 * 32x32 array streaming m=16 rows: 2*32 + 32 + 16 - 2 = 110 cycles per step. */
static void test_gemm_cycles(void **s)
{
    (void)s;
    comet_model_hw hw;
    load_tiny(&hw, "mesh2d", "false");
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 64, .N = 32, .K = 32 };
    comet_model_mapping mp = map(1, 0, 1, 1, 1, 1, 1, 16, 32);
    comet_model_result r;
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid);
    assert_true(fabs(r.t_gemm - 4 * 110.0) < 1e-9); /* 4 steps */
    /* vector per step: 16x32 elems / 16 lanes x [max 1] [sub 1 + exp 3 + sum 1] [mul 1]
     * = 7 (an accelerator issues every op's instructions, in one loop or not), + 16 rows x
     * (max tree 4 + sum tree 4 + one reciprocal 1) */
    if (fabs(r.t_vec - 4 * (32 * 7.0 + 16 * 9.0)) > 1e-9)
        fail_msg("t_vec %g", r.t_vec);
    /* MAC energy = M N K x 0.5 pJ */
    assert_true(fabs(r.e_mac - 64.0 * 32 * 32 * 0.5) < 1e-6);
    /* DRAM bytes: B once (32x32x2) + A (64x32x2) + Y (64x32x2) */
    assert_true(fabs(r.dram_bytes - (2048 + 4096 + 4096)) < 1e-9);
    assert_true(fabs(r.e_dram - r.dram_bytes / 8 * 800) < 1e-6);
    /* sequential: total = ramp + steps x (compute + dram + noc) + ramp-down */
    assert_true(r.cycles > r.t_gemm + r.t_vec);
    comet_model_hw_free(&hw);
}
static void test_collective_insertion(void **s)
{
    (void)s;
    comet_model_hw hw;
    load_tiny(&hw, "mesh2d", "false");
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_LAYERNORM, .M = 64, .N = 256, .K = 128 };
    comet_model_result r;
    comet_model_mapping unsplit = map(1, 1, 4, 1, 1, 1, 1, 16, 128);
    comet_model_eval(&hw, &pb, &unsplit, &r);
    assert_int_equal(r.coll_calls, 0); /* M split: rows independent, no collective */
    comet_model_mapping ksplit = map(1, 1, 1, 1, 4, 1, 1, 16, 32);
    comet_model_eval(&hw, &pb, &ksplit, &r);
    assert_true(r.valid);
    assert_true(r.coll_calls > 0); /* K is a reduction dimension: partial sums merged */
    assert_non_null(strstr(r.coll_desc, "reduce_scatter(sum S)"));
    comet_model_mapping unfused = map(0, 1, 1, 4, 1, 1, 1, 16, 128);
    comet_model_eval(&hw, &pb, &unfused, &r);
    assert_int_equal(r.coll_calls, 0); /* intermediate goes through DRAM instead */
    comet_model_hw_free(&hw);
}
static void test_collective_nodes(void **s)
{
    (void)s;
    comet_model_hw hw;
    comet_model_result r;
    load_tiny(&hw, "mesh2d", "false");
    /* softmax, N split over 4: all-reduce(max) of m and all-reduce(sum) of l,
     * each 16 rows x 4 B, 4 steps */
    comet_model_problem sm = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 64, .N = 256, .K = 32 };
    comet_model_mapping mp = map(1, 0, 1, 4, 1, 1, 1, 16, 32);
    comet_model_eval(&hw, &sm, &mp, &r);
    assert_int_equal(r.ncoll, 2);
    assert_int_equal(r.coll[0].type, COMET_MODEL_ALLREDUCE);
    assert_string_equal(r.coll[0].reduce_op, "max");
    assert_string_equal(r.coll[0].tensor, "m");
    assert_string_equal(r.coll[1].reduce_op, "sum");
    assert_string_equal(r.coll[1].tensor, "l");
    NEAR(r.coll[0].bytes, 16 * 4);
    assert_int_equal(r.coll[0].participants, 4);
    NEAR(r.coll[0].calls, 4);
    /* unsplit reduction dimension: none */
    mp = map(1, 0, 4, 1, 1, 1, 1, 16, 32);
    comet_model_eval(&hw, &sm, &mp, &r);
    assert_true(r.valid);
    assert_int_equal(r.ncoll, 0);
    /* K split: reduce-scatter of the partial 16 x 256 fp32 tile, then the
     * row statistics among the 4 holders of N shares */
    mp = map(1, 0, 1, 1, 4, 1, 1, 16, 8);
    comet_model_eval(&hw, &sm, &mp, &r);
    assert_int_equal(r.ncoll, 3);
    assert_int_equal(r.coll[0].type, COMET_MODEL_REDUCE_SCATTER);
    assert_string_equal(r.coll[0].dim, "K");
    NEAR(r.coll[0].bytes, 16 * 256 * 4);
    /* attention, Lk split: the (max, sum, partial O) merge */
    comet_model_problem at
        = { .op = COMET_MODEL_ATTENTION, .heads = 2, .lq = 64, .lk = 256, .d = 32 };
    mp = map(1, 0, 1, 4, 1, 1, 1, 16, 64);
    comet_model_eval(&hw, &at, &mp, &r);
    assert_true(r.valid);
    assert_int_equal(r.ncoll, 3);
    assert_string_equal(r.coll[2].tensor, "U");
    NEAR(r.coll[2].bytes, 16 * 32 * 4);
    /* heads split: independent */
    mp = map(1, 0, 1, 1, 1, 1, 1, 16, 64);
    mp.cs_h = 2;
    comet_model_eval(&hw, &at, &mp, &r);
    assert_true(r.valid);
    assert_int_equal(r.ncoll, 0);
    /* unfused on shared DRAM: the intermediate goes through memory */
    mp = map(0, 0, 1, 4, 1, 1, 1, 16, 32);
    comet_model_eval(&hw, &sm, &mp, &r);
    assert_int_equal(r.ncoll, 0);
    comet_model_hw_free(&hw);
}
static void test_cpu_levels_and_beta(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_model_hw hw;
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &hw, err, sizeof err)
        != 0)
        fail_msg("load: %s", err);
    /* min(total, cores x per-core) */
    assert_true(fabs(comet_model_level_bw(&hw.dram, 1) - 4) < 1e-12);
    assert_true(fabs(comet_model_level_bw(&hw.dram, 2) - 8) < 1e-12);
    assert_true(fabs(comet_model_level_bw(&hw.dram, 3) - 10) < 1e-12);
    assert_true(fabs(comet_model_level_bw(&hw.lb, 1) - 30) < 1e-12); /* no limit given */
    /* 1024 x 1024 x 16 on one core: a 4 MiB intermediate, beyond the 1 MiB LLC */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 16 };
    comet_model_mapping mp;
    comet_model_local_mapping(&hw, &pb, 0, 0, 1, 1, &mp);
    comet_model_result r;
    hw.cores = 1; /* as validate describes a 1-thread run: the passes use its cores */
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid);
    const double inter = 1024.0 * 1024 * 4;
    /* clearing pass: 2 x inter x (1/4 - 1/25) cycles at one core */
    if (fabs(r.t_beta - 2 * inter * (1.0 / 4 - 1.0 / 25)) > 1e-6 * r.t_beta)
        fail_msg("t_beta %g", r.t_beta);
    /* the row pass: read once, write once (streamed from 16 MiB only: here
     * an ordinary store, read for ownership) at one core's DRAM share */
    if (fabs(r.t_pass - inter * 3 / 4) > 1e-6 * r.t_pass)
        fail_msg("t_pass %g", r.t_pass);
    /* with both cores the DRAM total (8 of 10) and LLC (40 of 50) caps apply */
    comet_model_local_mapping(&hw, &pb, 0, 0, 2, 1, &mp);
    hw.cores = 2;
    comet_model_eval(&hw, &pb, &mp, &r);
    if (fabs(r.t_beta - 2 * inter * (1.0 / 8 - 1.0 / 40)) > 1e-6 * r.t_beta)
        fail_msg("t_beta(2) %g", r.t_beta);
    /* with the stores alone measured (a fill: DRAM 6, one core 5; LLC 30,
     * one core 20) the pass costs inter / store bandwidth at each level */
    {
        comet_model_hw w = hw;
        w.dram.write_bw = 6, w.dram.core_write_bw = 5;
        w.gb.write_bw = 30, w.gb.core_write_bw = 20;
        assert_true(fabs(comet_model_level_write_bw(&w.dram, 1) - 5) < 1e-12);
        assert_true(fabs(comet_model_level_write_bw(&w.dram, 2) - 6) < 1e-12);
        assert_true(fabs(comet_model_level_write_bw(&hw.dram, 2) - 4) < 1e-12); /* 8 / 2 */
        comet_model_eval(&w, &pb, &mp, &r);
        if (fabs(r.t_beta - inter * (1.0 / 6 - 1.0 / 30)) > 1e-6 * r.t_beta)
            fail_msg("t_beta(fill) %g", r.t_beta);
        /* stores that reach DRAM as fast as the LLC: no extra pass */
        w.gb.write_bw = 6, w.gb.core_write_bw = 5;
        comet_model_eval(&w, &pb, &mp, &r);
        assert_true(r.valid && r.t_beta == 0);
    }
    /* an intermediate inside the LLC: no extra pass (the grid measured it) */
    comet_model_problem small = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 256, .N = 256, .K = 16 };
    comet_model_local_mapping(&hw, &small, 0, 0, 1, 1, &mp);
    comet_model_eval(&hw, &small, &mp, &r);
    assert_true(r.valid && r.t_beta == 0);
    /* fused: never */
    comet_model_local_mapping(&hw, &pb, 1, 0, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid && r.t_beta == 0);
    /* with a GEMM grid the clearing pass counts only as far as the efficiency
     * comes from grid points whose C was in the LLC: a 2048 x 2048 point (16
     * MiB) measured it at memory bandwidth already */
    {
        comet_model_hw g = hw;
        memset(&g.grid, 0, sizeof g.grid);
        double vals[4] = { 0.5, 0.5, 0.5, 0.5 };
        g.grid.nt = 1, g.grid.threads[0] = 1;
        g.grid.nm = g.grid.nn = 2, g.grid.nk = 1;
        g.grid.M[0] = g.grid.N[0] = 64, g.grid.M[1] = g.grid.N[1] = 2048, g.grid.K[0] = 16;
        g.grid.values = vals;
        g.cores = 1;
        assert_true(fabs(comet_model_gemm_grid_c_share(&g, 2048, 2048, 1 << 20)) < 1e-12);
        /* at 1024 x 1024: 4/5 of the way in log on each axis, 0.64 on the far corner */
        assert_true(fabs(comet_model_gemm_grid_c_share(&g, 1024, 1024, 1 << 20) - 0.36) < 1e-12);
        comet_model_local_mapping(&g, &pb, 0, 0, 1, 1, &mp);
        comet_model_eval(&g, &pb, &mp, &r);
        if (fabs(r.t_beta - 0.36 * 2 * inter * (1.0 / 4 - 1.0 / 25)) > 1e-6 * r.t_beta)
            fail_msg("t_beta with a grid %g", r.t_beta);
        /* a pass that streams its output (16 MiB) writes it to DRAM even when
         * its input sits in a 64 MiB LLC: reads at the LLC's 25, writes at
         * DRAM's 4 bytes a cycle */
        g.gb.capacity = 64.0 * 1024 * 1024;
        comet_model_problem big = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 2048, .N = 2048, .K = 16 };
        comet_model_local_mapping(&g, &big, 0, 0, 1, 1, &mp);
        comet_model_eval(&g, &big, &mp, &r);
        const double i2 = 2048.0 * 2048 * 4;
        if (fabs(r.t_pass - (i2 / 25 + i2 / 4)) > 1e-6 * r.t_pass)
            fail_msg("streamed pass %g, want %g", r.t_pass, i2 / 25 + i2 / 4);
        assert_true(r.dram_bytes >= i2);
    }
    /* a negative per-core figure is refused, naming the field */
    char bad[2048];
    snprintf(bad, sizeof bad, "%s", mfix_cpu_hw());
    char *at = strstr(bad, "core_bw: 4");
    memcpy(at, "core_bw:-4", 10);
    comet_model_hw bh;
    assert_true(comet_model_hw_parse("bad.yaml", bad, strlen(bad), &bh, err, sizeof err) != 0);
    if (!strstr(err, "core_bw") || !strstr(err, "bad.yaml:"))
        fail_msg("error does not name the field and file: %s", err);
    /* stores alone, stated with a unit (at 1 GHz: 6 GB/s = 6 bytes/cycle),
     * survive the description's JSON round trip */
    snprintf(bad, sizeof bad, "%s", mfix_cpu_hw());
    at = strstr(bad, "{bw: 10, core_bw: 4}");
    assert_non_null(at);
    char wr[2048];
    snprintf(wr, sizeof wr, "%.*s{bw: 10, core_bw: 4, write_bw: 6 GB/s, core_write_bw: 5}%s",
        (int)(at - bad), bad, at + strlen("{bw: 10, core_bw: 4}"));
    if (comet_model_hw_parse("w.yaml", wr, strlen(wr), &bh, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    assert_true(fabs(bh.dram.write_bw - 6) < 1e-9 && fabs(bh.dram.core_write_bw - 5) < 1e-9);
    json_t *j = comet_model_hw_to_json(&bh);
    assert_non_null(j);
    json_t *dj = json_object_get(json_object_get(j, "memory"), "dram");
    assert_true(fabs(json_real_value(json_object_get(dj, "write_bw")) - 6) < 1e-9);
    assert_true(fabs(json_real_value(json_object_get(dj, "core_write_bw")) - 5) < 1e-9);
    json_decref(j);
    comet_model_hw_free(&bh);
    comet_model_hw_free(&hw);
}
/* The fused kernels' micro-tile: hand-computed factors, the fused GEMM term
 * scaled by it (and the unfused one not), and the loader's checks. */
static void test_micro_tile(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw hw;
    cpu_hw_with_gemm(buf, sizeof buf, ", fused_micro_rows: 12, fused_micro_edge: 6");
    if (comet_model_hw_parse("mt.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    /* 12-row tiles, 6-row edge: 8 -> 12/8, 16 -> 18/16, 31 -> 36/31, 30, 60, 66 -> 1 */
    assert_true(fabs(comet_model_micro_tile_factor(&hw, 8) - 1.5) < 1e-12);
    assert_true(fabs(comet_model_micro_tile_factor(&hw, 16) - 18.0 / 16) < 1e-12);
    assert_true(fabs(comet_model_micro_tile_factor(&hw, 31) - 36.0 / 31) < 1e-12);
    assert_true(
        comet_model_micro_tile_factor(&hw, 60) == 1 && comet_model_micro_tile_factor(&hw, 66) == 1);
    assert_true(fabs(comet_model_micro_tile_factor(&hw, 4) - 1.5) < 1e-12);
    /* the fused GEMM term at 8-row blocks is 1.5x that at 12-row blocks per row */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 96, .N = 64, .K = 16 };
    comet_model_mapping mp;
    comet_model_result r8, r12;
    comet_model_local_mapping(&hw, &pb, 1, 8, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r8);
    comet_model_local_mapping(&hw, &pb, 1, 12, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r12);
    assert_true(r8.valid && r12.valid);
    if (fabs(r8.t_gemm - 1.5 * r12.t_gemm) > 1e-9 * r8.t_gemm)
        fail_msg("t_gemm %g vs %g", r8.t_gemm, r12.t_gemm);
    /* a shorter last block computes only its rows: M = 100 in blocks of 64
     * is 64 rows at 66/64 and 36 rows at 36/36, against 128 rows at 66/64 */
    comet_model_problem p100 = pb, p128 = pb;
    p100.M = 100;
    p128.M = 128;
    comet_model_result a, b;
    comet_model_local_mapping(&hw, &p100, 1, 64, 1, 1, &mp);
    comet_model_eval(&hw, &p100, &mp, &a);
    comet_model_local_mapping(&hw, &p128, 1, 64, 1, 1, &mp);
    comet_model_eval(&hw, &p128, &mp, &b);
    const double want = (66.0 + 36.0) / 132.0;
    if (fabs(a.t_gemm / b.t_gemm - want) > 1e-9)
        fail_msg("partial block: t_gemm ratio %g, want %g", a.t_gemm / b.t_gemm, want);
    /* the factor applied, as explain prints it: 64 rows at 66/64, 36 at 1 */
    assert_true(fabs(a.micro_factor - (66.0 + 36.0) / 100) < 1e-12);
    /* two cores, each its own contiguous rows in blocks of 36 (the CPU
     * kernels' own_rows): M = 256 is 128 rows a core (36, 36, 36, 20), M =
     * 288 is 144 (four full blocks); taking blocks as they came free, the
     * busiest core had 4 full blocks of 256 too. One core computes 256 of
     * 288 rows */
    {
        comet_model_hw h2;
        char b2[2048];
        cpu_hw_with_gemm(b2, sizeof b2, "");
        if (comet_model_hw_parse("t2.yaml", b2, strlen(b2), &h2, err, sizeof err) != 0)
            fail_msg("load: %s", err);
        comet_model_problem q256 = pb, q288 = pb;
        q256.M = 256;
        q288.M = 288;
        comet_model_result c256, c288;
        comet_model_local_mapping(&h2, &q256, 1, 36, 2, 1, &mp);
        comet_model_eval(&h2, &q256, &mp, &c256);
        comet_model_local_mapping(&h2, &q288, 1, 36, 2, 1, &mp);
        comet_model_eval(&h2, &q288, &mp, &c288);
        if (fabs(c256.t_gemm / c288.t_gemm - 128.0 / 144) > 1e-9)
            fail_msg("busiest core: %g vs %g", c256.t_gemm, c288.t_gemm);
        h2.cores = 1;
        comet_model_local_mapping(&h2, &q256, 1, 36, 1, 1, &mp);
        comet_model_eval(&h2, &q256, &mp, &c256);
        comet_model_local_mapping(&h2, &q288, 1, 36, 1, 1, &mp);
        comet_model_eval(&h2, &q288, &mp, &c288);
        if (fabs(c256.t_gemm / c288.t_gemm - 256.0 / 288) > 1e-9)
            fail_msg("one core: ratio %g", c256.t_gemm / c288.t_gemm);
        comet_model_hw_free(&h2);
    }
    /* unfused: one BLAS GEMM, no micro-tile factor */
    comet_model_hw plain;
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &plain, err, sizeof err)
        != 0)
        fail_msg("load: %s", err);
    comet_model_result u1, u2;
    comet_model_local_mapping(&hw, &pb, 0, 8, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &u1);
    comet_model_eval(&plain, &pb, &mp, &u2);
    assert_true(u1.valid && fabs(u1.t_gemm - u2.t_gemm) < 1e-9 * u2.t_gemm);
    comet_model_hw_free(&plain);
    comet_model_hw_free(&hw);
    /* an edge taller than the tile is refused, naming file:line and field */
    char *e = strstr(buf, "fused_micro_edge: 6");
    memcpy(e, "fused_micro_edge:16", 19);
    assert_true(comet_model_hw_parse("mt.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0);
    if (!strstr(err, "fused_micro_edge") || !strstr(err, "mt.yaml:"))
        fail_msg("error does not name the field and file: %s", err);
}
/* The row's fixed cost: once per row, and in fused attention once per row
 * per KV tile; the loader keeps it and refuses a negative one. */
static void test_row_cycles(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw h0, h1;
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &h0, err, sizeof err)
        != 0)
        fail_msg("load: %s", err);
    snprintf(buf, sizeof buf, "%s  row_cycles: 100\n", mfix_cpu_hw());
    if (comet_model_hw_parse("rc.yaml", buf, strlen(buf), &h1, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    assert_true(h1.row_cycles == 100 && h0.row_cycles == 0);
    /* attention, 2 heads x 64 query rows, 256 keys in KV tiles of 64: 4 tiles a row */
    comet_model_problem pa
        = { .op = COMET_MODEL_ATTENTION, .heads = 2, .lq = 64, .lk = 256, .d = 16 };
    comet_model_mapping mp;
    comet_model_result r0, r1;
    comet_model_local_mapping(&h0, &pa, 1, 16, 1, 1, &mp);
    mp.tile_k = 64;
    comet_model_eval(&h0, &pa, &mp, &r0);
    comet_model_eval(&h1, &pa, &mp, &r1);
    assert_true(r0.valid && r1.valid);
    const double want = 100.0 * 2 * 64 * 4;
    if (fabs((r1.t_vec - r0.t_vec) - want) > 1e-9 * want)
        fail_msg("attention row cost %g, want %g", r1.t_vec - r0.t_vec, want);
    /* GEMM-Softmax unfused on one core (as validate describes a 1-thread
     * run): once per row of M */
    h0.cores = h1.cores = 1;
    comet_model_problem pg = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 96, .N = 64, .K = 16 };
    comet_model_local_mapping(&h0, &pg, 0, 0, 1, 1, &mp);
    comet_model_eval(&h0, &pg, &mp, &r0);
    comet_model_eval(&h1, &pg, &mp, &r1);
    if (fabs((r1.t_vec - r0.t_vec) - 100.0 * 96) > 1e-9 * 9600)
        fail_msg("softmax row cost %g, want %g", r1.t_vec - r0.t_vec, 9600.0);
    /* LayerNorm pays its own fixed cost where one is given, softmax stays */
    comet_model_hw h2 = h1;
    h2.ln_row_cycles = 250;
    comet_model_problem pl = { .op = COMET_MODEL_GEMM_LAYERNORM, .M = 96, .N = 64, .K = 16 };
    comet_model_result r2;
    comet_model_local_mapping(&h0, &pl, 0, 0, 1, 1, &mp);
    comet_model_eval(&h0, &pl, &mp, &r0);
    comet_model_eval(&h2, &pl, &mp, &r2);
    if (fabs((r2.t_vec - r0.t_vec) - 250.0 * 96) > 1e-9 * 24000)
        fail_msg("layernorm row cost %g, want %g", r2.t_vec - r0.t_vec, 24000.0);
    comet_model_local_mapping(&h0, &pg, 0, 0, 1, 1, &mp);
    comet_model_eval(&h2, &pg, &mp, &r2);
    comet_model_eval(&h1, &pg, &mp, &r1);
    assert_true(r2.t_vec == r1.t_vec);
    comet_model_hw_free(&h0);
    comet_model_hw_free(&h1);
    snprintf(buf, sizeof buf, "%s  row_cycles: -1\n", mfix_cpu_hw());
    assert_true(comet_model_hw_parse("rc.yaml", buf, strlen(buf), &h1, err, sizeof err) != 0);
    if (!strstr(err, "row_cycles") || !strstr(err, "rc.yaml:"))
        fail_msg("error does not name the field and file: %s", err);
}
/* The measured row passes' slope per element replaces the per-op sum for
 * the ops whose rows run those loops: softmax and LayerNorm (fused and
 * unfused) and attention's unfused softmax over S; fused attention's online
 * softmax and RMSNorm keep the per-op sum. */
static void test_row_pass_slope(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw h0, h1;
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &h0, err, sizeof err)
        != 0)
        fail_msg("load: %s", err);
    snprintf(buf, sizeof buf, "%s  row_elem_cycles: 3\n  ln_row_elem_cycles: 2\n", mfix_cpu_hw());
    if (comet_model_hw_parse("rs.yaml", buf, strlen(buf), &h1, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    assert_true(h1.row_elem_cycles == 3 && h1.ln_row_elem_cycles == 2 && h0.row_elem_cycles == 0);
    h0.cores = h1.cores = 1;
    comet_model_mapping mp;
    comet_model_result r0, r1;
    static const struct {
        comet_model_op op;
        int fused;
        double slope; /* 0: unchanged */
    } cases[] = {
        { COMET_MODEL_GEMM_SOFTMAX, 0, 3 },
        { COMET_MODEL_GEMM_SOFTMAX, 1, 3 },
        { COMET_MODEL_GEMM_LAYERNORM, 0, 2 },
        { COMET_MODEL_GEMM_LAYERNORM, 1, 2 },
        { COMET_MODEL_GEMM_RMSNORM, 0, 0 },
        { COMET_MODEL_ATTENTION, 0, 3 },
        { COMET_MODEL_ATTENTION, 1, 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        comet_model_problem pb = { .op = cases[i].op };
        if (cases[i].op == COMET_MODEL_ATTENTION)
            pb.heads = 1, pb.lq = 96, pb.lk = 64, pb.d = 16;
        else
            pb.M = 96, pb.N = 64, pb.K = 16;
        comet_model_local_mapping(&h0, &pb, cases[i].fused, 96, 1, 1, &mp);
        comet_model_eval(&h0, &pb, &mp, &r0);
        comet_model_eval(&h1, &pb, &mp, &r1);
        assert_true(r0.valid && r1.valid);
        /* the per-op costs are 1e-6 cycles: the slope is nearly all of it */
        const double want = cases[i].slope > 0 ? 96.0 * 64 * cases[i].slope : r0.t_vec;
        if (fabs(r1.t_vec - want) > 1e-3 * want + 1e-6)
            fail_msg("case %zu: t_vec %g, want %g", i, r1.t_vec, want);
    }
    comet_model_hw_free(&h0);
    comet_model_hw_free(&h1);
}
/* A CPU core's row loop and its stores beyond the caches add up (write-
 * combining buffers drain while the loop waits), and so do the loads of a
 * row pass over an intermediate beyond L2 (the later sweeps run from L1,
 * nothing hides the next row's loads; the row costs hold L2's part).
 * Unfused: the pass is max(loop + loads + stores, all its traffic); op by
 * op, each sweep's loads overlap it; fused: each block's epilogue is its
 * loop plus its result's stores. */
static void test_cpu_stores_serial(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw hw;
    snprintf(buf, sizeof buf, "%s  row_elem_cycles: 2\n", mfix_cpu_hw());
    if (comet_model_hw_parse("st.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    hw.cores = 1;
    /* 1024 x 1024 x 16: a 4 MiB intermediate beyond the 1 MiB LLC, at one
     * core's 4 B/cycle of DRAM; ordinary stores (below 16 MiB) read for
     * ownership: the pass stores 2 x 4 MiB and moves 3 x 4 MiB */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 16 };
    comet_model_mapping mp;
    comet_model_result r;
    comet_model_local_mapping(&hw, &pb, 0, 0, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid);
    const double inter = 1024.0 * 1024 * 4, loop = 1024.0 * 1024 * 2;
    assert_true(fabs(r.t_vec - loop) < 1e-3 * loop);
    /* the loads: 4 MiB at one core's 4 B/cycle of DRAM, less L2's 30 */
    const double loads = inter / 4 - inter / 30;
    if (fabs(r.t_pass - (r.t_vec + loads + 2 * inter / 4)) > 1e-6 * r.t_pass)
        fail_msg("t_pass %g, want loop %g + loads %g + stores %g", r.t_pass, r.t_vec, loads,
            2 * inter / 4);
    /* in place (the fused kernels' small-shape method): the pass writes lines
     * it owns, no read for ownership: one write of 4 MiB, 2 x 4 MiB moved */
    mp.in_place = 1;
    comet_model_eval(&hw, &pb, &mp, &r);
    if (fabs(r.t_pass - fmax(r.t_vec + loads + inter / 4, 2 * inter / 4)) > 1e-6 * r.t_pass)
        fail_msg("in place: t_pass %g, want %g", r.t_pass,
            fmax(r.t_vec + loads + inter / 4, 2 * inter / 4));
    mp.in_place = 0;
    /* op by op (one sweep per basic op, whose loads overlap it), held to the
     * same one read and one write: loop plus stores, no loads */
    {
        comet_model_mapping ob = mp;
        ob.one_pass = 0, ob.pass_reads = 1, ob.pass_writes = 1;
        comet_model_eval(&hw, &pb, &ob, &r);
        assert_true(r.valid);
        const double want = fmax(r.t_vec + 2 * inter / 4, 3 * inter / 4);
        if (fabs(r.t_pass - want) > 1e-6 * r.t_pass)
            fail_msg("op by op: t_pass %g, want %g", r.t_pass, want);
    }
    /* a cheap loop: the traffic bounds the pass */
    hw.row_elem_cycles = 0.01;
    comet_model_eval(&hw, &pb, &mp, &r);
    if (fabs(r.t_pass - 3 * inter / 4) > 1e-6 * r.t_pass)
        fail_msg("t_pass %g, want %g", r.t_pass, 3 * inter / 4);
    /* fused: the GEMM, then every block's loop and its result's stores (a
     * 4 MiB result, in DRAM at one core's 4 B/cycle) */
    hw.row_elem_cycles = 2;
    comet_model_local_mapping(&hw, &pb, 1, 64, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid);
    if (r.cycles < r.t_gemm + r.t_vec + inter / 4 - 1e-6 * r.cycles)
        fail_msg(
            "fused %g < gemm %g + loop %g + stores %g", r.cycles, r.t_gemm, r.t_vec, inter / 4);
    comet_model_hw_free(&hw);
}
/* Measured row passes (vector.row_pass_widths) and the share of the
 * streamed stores a fused epilogue hides (vector.store_hidden): a block's
 * epilogue is max(loop + the unhidden stores, the stores); a result or an
 * intermediate in L2 is the regime the table was measured in. */
static void test_cpu_stores_hidden(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw hw;
    snprintf(buf, sizeof buf,
        "%s  row_elem_cycles: 2\n  store_hidden: 1\n"
        "  row_pass_widths: {softmax: {widths: [16, 1024], cycles: [40, 4096]}}\n",
        mfix_cpu_hw());
    if (comet_model_hw_parse("sh.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    hw.cores = 1;
    assert_true(fabs(comet_model_row_pass_cycles(&hw, 0, 1024) - 4096) < 1e-9);
    assert_true(
        fabs(comet_model_row_pass_cycles(&hw, 0, 2048) - (4096 + 1024 * 4056.0 / 1008)) < 1e-6);
    assert_true(isnan(comet_model_row_pass_cycles(&hw, 1, 1024))); /* no LayerNorm rows */
    /* fused 1024 x 1024 x 16, blocks of 64 rows: a 4 MiB result beyond the
     * 64 KiB L2, stored at one core's 4 B/cycle of DRAM: 1 Mcycles of stores
     * under 4 Mcycles of row loop */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 16 };
    comet_model_mapping mp;
    comet_model_result r1, rh, r0;
    comet_model_local_mapping(&hw, &pb, 1, 64, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r1);
    assert_true(r1.valid);
    assert_true(fabs(r1.t_vec - 1024.0 * 4096) < 1e-3 * r1.t_vec);
    hw.store_hidden = 0.5;
    comet_model_eval(&hw, &pb, &mp, &rh);
    hw.store_hidden = 0;
    comet_model_eval(&hw, &pb, &mp, &r0);
    const double stores = 1024.0 * 1024 * 4 / 4;
    if (fabs(r0.cycles - r1.cycles - stores) > 1e-6 * r0.cycles
        || fabs(rh.cycles - r1.cycles - stores / 2) > 1e-6 * r0.cycles)
        fail_msg("hidden 1 / 0.5 / 0: %g / %g / %g cycles, want steps of %g", r1.cycles, rh.cycles,
            r0.cycles, stores / 2);
    /* a result within L2 (8 rows, 32 KiB): the table's own regime, the
     * hidden share does not matter */
    pb.M = 8;
    comet_model_local_mapping(&hw, &pb, 1, 8, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r0);
    hw.store_hidden = 1;
    comet_model_eval(&hw, &pb, &mp, &r1);
    assert_true(r0.valid && fabs(r0.cycles - r1.cycles) < 1e-9 * r0.cycles);
    /* unfused over an intermediate in L2: the pass is its loop alone */
    comet_model_local_mapping(&hw, &pb, 0, 0, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r0);
    if (fabs(r0.t_pass - r0.t_vec) > 1e-6 * r0.t_pass)
        fail_msg("unfused in L2: pass %g, loop %g", r0.t_pass, r0.t_vec);
    comet_model_hw_free(&hw);
    /* a table with fewer cycles than widths, or widths out of order: refused */
    static const char *const bad[2] = { "{softmax: {widths: [16, 64], cycles: [40]}}",
        "{softmax: {widths: [64, 16], cycles: [40, 50]}}" };
    for (int i = 0; i < 2; i++) {
        snprintf(buf, sizeof buf, "%s  row_pass_widths: %s\n", mfix_cpu_hw(), bad[i]);
        assert_int_equal(
            comet_model_hw_parse("bad.yaml", buf, strlen(buf), &hw, err, sizeof err), -EINVAL);
        assert_non_null(strstr(err, "bad.yaml"));
    }
}
/* Fused attention on a CPU with measured row passes: each row of each KV
 * tile costs the measured softmax row of the tile's width less that width's
 * multiply loop (the kernel defers 1 / sum to O); without the table, the
 * composed ops. Op costs of 1e-6 cycles: the table is nearly all of it. */
static void test_attention_row_tiles(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw hw;
    snprintf(buf, sizeof buf,
        "%s  row_pass_widths: {softmax: {widths: [16, 1024], cycles: [40, 4096]}}\n",
        mfix_cpu_hw());
    if (comet_model_hw_parse("at.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    hw.cores = 1;
    comet_model_problem pb
        = { .op = COMET_MODEL_ATTENTION, .heads = 1, .lq = 96, .lk = 1024, .d = 16 };
    comet_model_mapping mp;
    comet_model_result r, r0;
    comet_model_local_mapping(&hw, &pb, 1, 96, 1, 1, &mp);
    static const double tiles[3] = { 256, 1024, 100 };
    for (int i = 0; i < 3; i++) {
        mp.tile_k = tiles[i];
        comet_model_eval(&hw, &pb, &mp, &r);
        assert_true(r.valid);
        /* 1024 keys in ceil(1024 / tile) tiles of 1024 / that many keys a row */
        const double nt = ceil(1024 / tiles[i]), w = 1024 / nt;
        const double want = nt * 96 * (40 + (w - 16) * 4056.0 / 1008);
        if (fabs(r.t_vec - want) > 1e-3 * want)
            fail_msg("tile %g: t_vec %g, want %g", tiles[i], r.t_vec, want);
    }
    /* causal, lq = lk = 1024 in blocks of 128 rows: a row visits the tiles
     * up to its block's last key (kv on average, half a tile more than its
     * whole tiles), not all of them; smaller tiles, more visits, never
     * fewer than one (a table whose rows have a fixed part: 100 cycles at 16) */
    hw.row_tab_cycles[0][0] = 100;
    comet_model_problem pc
        = { .op = COMET_MODEL_ATTENTION, .heads = 1, .lq = 1024, .lk = 1024, .d = 16, .causal = 1 };
    comet_model_local_mapping(&hw, &pc, 1, 128, 1, 1, &mp);
    double prev = 0;
    static const double ctiles[4] = { 1024, 256, 64, 16 };
    for (int i = 0; i < 4; i++) {
        mp.tile_k = ctiles[i];
        comet_model_eval(&hw, &pc, &mp, &r);
        assert_true(r.valid);
        const double kv = 1024 * comet_model_causal_computed(1024, 1024, 128);
        const double nt = fmax(1, fmin(1024 / ctiles[i], kv / ctiles[i] + 0.5)), w = kv / nt;
        const double want = nt * 1024 * (100 + (w - 16) * 3996.0 / 1008);
        if (fabs(r.t_vec - want) > 1e-3 * want)
            fail_msg("causal tile %g: t_vec %g, want %g", ctiles[i], r.t_vec, want);
        assert_true(r.t_vec > prev);
        prev = r.t_vec;
    }
    /* no table: the composed ops (here almost free) and the row's fixed cost */
    hw.row_tab_n[0] = 0;
    mp.tile_k = 256;
    comet_model_local_mapping(&hw, &pb, 1, 96, 1, 1, &mp);
    mp.tile_k = 256;
    comet_model_eval(&hw, &pb, &mp, &r0);
    assert_true(r0.valid && r0.t_vec < 1e-2 * r.t_vec);
    comet_model_hw_free(&hw);
}
/* A fused CPU block's packed B leaves L2 between blocks when it does not fit
 * beside the block's tile and its cached result: every block reads it again
 * at the LLC's per-core rate instead of L2's (here 25 and 30 B/cycle). A
 * small B stays; the unfused mapping has no such term. */
static void test_cpu_b_reload(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_model_hw hw;
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &hw, err, sizeof err)
        != 0)
        fail_msg("load: %s", err);
    hw.cores = 1;
    /* B 16 x 1024 floats = 64 KiB, a 16-row tile 64 KiB, the 1 MiB result
     * through the caches 64 KiB a block: 192 KiB in a 64 KiB L2 */
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 256, .N = 1024, .K = 16 };
    comet_model_mapping mp;
    comet_model_result r, r0;
    comet_model_local_mapping(&hw, &pb, 1, 16, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r);
    assert_true(r.valid);
    const double want = 16 * 65536.0 * (1.0 / 25 - 1.0 / 30);
    if (fabs(r.t_reload - want) > 1e-9 * want)
        fail_msg("t_reload %g, want %g", r.t_reload, want);
    /* the latency holds it: each block's GEMM, its reload, then its epilogue */
    if (r.cycles < r.t_gemm + r.t_reload + r.t_vec - 1e-9 * r.cycles)
        fail_msg("latency %g < gemm %g + reload %g + vector %g", r.cycles, r.t_gemm, r.t_reload,
            r.t_vec);
    /* a small B stays in L2 */
    comet_model_problem sm = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 256, .N = 64, .K = 4 };
    comet_model_eval(&hw, &sm, &mp, &r0);
    assert_true(r0.valid && r0.t_reload == 0);
    /* unfused: the BLAS GEMM's own blocking (its grid) */
    comet_model_local_mapping(&hw, &pb, 0, 0, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r0);
    assert_true(r0.valid && r0.t_reload == 0);
    comet_model_hw_free(&hw);
}
/* Causal attention: the fused kernel skips the keys a block's rows do not
 * see; the unfused
 * mapping's plain GEMMs compute all of S and a pass masks it, so its GEMM
 * time is the unmasked one's and its passes move more bytes. */
static void test_causal_unfused_full(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_model_hw hw;
    if (comet_model_hw_parse(
            "cpu2.yaml", mfix_cpu_hw(), strlen(mfix_cpu_hw()), &hw, err, sizeof err)
        != 0)
        fail_msg("load: %s", err);
    comet_model_problem pn
        = { .op = COMET_MODEL_ATTENTION, .heads = 2, .lq = 256, .lk = 256, .d = 64 };
    comet_model_problem pc = pn;
    pc.causal = 1;
    comet_model_mapping mp;
    comet_model_result rn, rc;
    comet_model_local_mapping(&hw, &pn, 0, 0, 1, 1, &mp);
    /* a plain unfused mapping: both GEMMs over all of S */
    mp.pv_rows = 0;
    comet_model_eval(&hw, &pn, &mp, &rn);
    comet_model_eval(&hw, &pc, &mp, &rc);
    assert_true(rn.valid && rc.valid);
    assert_true(rc.t_gemm == rn.t_gemm);
    assert_true(rc.t_pass > rn.t_pass);
    /* the CPU kernels' (pv_rows 64): Q K^T whole, P V per block of 64
     * queries over the keys it sees, 0.625 of them (both GEMMs cost the
     * same here: the peak engine at efficiency 1) */
    comet_model_local_mapping(&hw, &pn, 0, 0, 1, 1, &mp);
    assert_true(mp.pv_rows == 64);
    comet_model_eval(&hw, &pc, &mp, &rc);
    if (fabs(rc.t_gemm - rn.t_gemm * (1 + 0.625) / 2) > 1e-9 * rn.t_gemm)
        fail_msg("unfused causal gemm %g, want %g", rc.t_gemm, rn.t_gemm * (1 + 0.625) / 2);
    comet_model_local_mapping(&hw, &pn, 1, 64, 1, 1, &mp);
    comet_model_eval(&hw, &pn, &mp, &rn);
    comet_model_eval(&hw, &pc, &mp, &rc);
    /* blocks of 64 queries, each against every key its last query sees:
     * 64 x (64 + 128 + 192 + 256) of 256 x 256 = 0.625 (the visible pairs
     * alone would be 1/2 + 1/512) */
    const double cf = 0.625;
    assert_true(fabs(comet_model_causal_computed(256, 256, 64) - cf) < 1e-12);
    assert_true(fabs(comet_model_causal_computed(256, 256, 1) - (0.5 + 0.5 / 256)) < 1e-12);
    if (fabs(rc.t_gemm - cf * rn.t_gemm) > 1e-9 * rn.t_gemm)
        fail_msg("fused causal gemm %g, want %g", rc.t_gemm, cf * rn.t_gemm);
    comet_model_hw_free(&hw);
}
/* The unfused CPU kernels run their GEMM as one row slab per thread through
 * 1-thread BLAS: with 2 threads each core runs at the 1-thread grid's
 * efficiency on half the rows (here 0.8), not at the 2-thread grid's (0.4). */
static void test_unfused_slabs(void **s)
{
    (void)s;
    char err[COMET_ERRLEN], buf[2048];
    comet_model_hw hw;
    cpu_hw_with_gemm(buf, sizeof buf,
        ",\n  grid: {threads: [1, 2], M: [16, 4096], N: [16, 4096], K: [16, 4096],\n"
        "    values: [0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, "
        "0.4],\n    emax: 0.8, f_half: 0}");
    if (comet_model_hw_parse("slab.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 512, .N = 256, .K = 64 };
    comet_model_mapping mp;
    comet_model_result r1, r2;
    comet_model_local_mapping(&hw, &pb, 0, 0, 1, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r1);
    comet_model_local_mapping(&hw, &pb, 0, 0, 2, 1, &mp);
    comet_model_eval(&hw, &pb, &mp, &r2);
    assert_true(r1.valid && r2.valid);
    /* 2 M N K / (32 flop/cycle x 0.8), on one core, then on each of two */
    const double one = 2.0 * 512 * 256 * 64 / (32 * 0.8);
    if (fabs(r1.t_gemm - one) > 1e-9 * one || fabs(r2.t_gemm - one / 2) > 1e-9 * one)
        fail_msg("t_gemm %g and %g, want %g and %g", r1.t_gemm, r2.t_gemm, one, one / 2);
    comet_model_hw_free(&hw);
}
/* #17 defect 14: cores that split N combine each row statistic through the
 * core network every step: ceil(log2 ks_n) hops per reducing node (softmax:
 * max and sum), visible as the NoC time's dependence on the hop latency. */
static void test_core_split_combine(void **st)
{
    (void)st;
    char err[256];
    comet_model_hw hw, slow;
    assert_int_equal(comet_model_hw_load("edge", &hw, err, sizeof err), 0);
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    assert_int_equal(comet_model_problem_parse("M=256,N=1024,K=64", &pb, err, sizeof err), 0);
    comet_model_search sr;
    assert_true(comet_model_explore(&hw, &pb, &sr) >= 0);
    slow = hw;
    slow.core_net.hop_latency += 100;
    double dn[2];
    for (int split = 0; split < 2; split++) {
        comet_model_mapping mp = sr.best_fused;
        mp.cs_m = mp.cs_n = mp.cs_k = 1;
        mp.ks_m = split ? 1 : 4;
        mp.ks_n = split ? 4 : 1;
        mp.tile_m = 16;
        comet_model_result a, b;
        comet_model_eval(&hw, &pb, &mp, &a);
        comet_model_eval(&slow, &pb, &mp, &b);
        assert_true(a.valid && b.valid);
        dn[split] = b.t_noc - a.t_noc;
    }
    /* steps = 256 / 16; two reducing nodes x ceil(log2 4) hops x 100 cycles */
    const double steps = 256 / 16;
    if (fabs((dn[1] - dn[0]) - steps * 2 * 2 * 100) > 1e-6)
        fail_msg("combine: %g extra NoC cycles, want %g", dn[1] - dn[0], steps * 400);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemm_cycles),
        cmocka_unit_test(test_core_split_combine),
        cmocka_unit_test(test_collective_nodes),
        cmocka_unit_test(test_cpu_levels_and_beta),
        cmocka_unit_test(test_micro_tile),
        cmocka_unit_test(test_row_cycles),
        cmocka_unit_test(test_row_pass_slope),
        cmocka_unit_test(test_cpu_stores_serial),
        cmocka_unit_test(test_cpu_stores_hidden),
        cmocka_unit_test(test_attention_row_tiles),
        cmocka_unit_test(test_cpu_b_reload),
        cmocka_unit_test(test_causal_unfused_full),
        cmocka_unit_test(test_unfused_slabs),
        cmocka_unit_test(test_collective_insertion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
