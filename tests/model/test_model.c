/* Model: hand-computed formula cases, collectives per topology, capacity
 * pruning, collective insertion rules, brute-force optimum, bad files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model.h"
#include "comet_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A mapping as explore builds it (library one-pass baseline for unfused). */
static comet_model_mapping map(
    int fused, int pipe, int cm, int cn, int ck, int km, int kn, double tm, double tk)
{
    comet_model_mapping mp;
    memset(&mp, 0, sizeof mp);
    mp.fused = fused, mp.pipelined = pipe;
    mp.cs_m = cm, mp.cs_n = cn, mp.cs_k = ck, mp.ks_m = km, mp.ks_n = kn;
    mp.tile_m = tm, mp.tile_k = tk;
    mp.one_pass = 1;
    mp.streaming = -1;
    return mp;
}

static const char *tiny_hw
    = "name: tiny\nkind: accelerator\nclock_ghz: 1.0\nbytes_per_elem: 2\n"
      "clusters:\n  count: 4\n  network: {topology: TOPO, dims: [2, 2], link_bw: 64, hop_latency: "
      "5, "
      "startup: 2, broadcast: true, reduction: RED}\n"
      "cores:\n  count: 1\n  network: {topology: mesh2d, dims: [1, 1], link_bw: 64, hop_latency: "
      "0}\n"
      "memory:\n  dram: {bw: 32, read_pj: 800, write_pj: 800, access_bytes: 8}\n"
      "  global_buffer: {capacity: 1048576, bw: 1024, read_pj: 100, write_pj: 100, access_bytes: "
      "64}\n"
      "  local_buffer: {capacity: 262144, bw: 1024, read_pj: 10, write_pj: 10, access_bytes: 64}\n"
      "gemm: {engine: systolic, rows: 32, cols: 32, arrays: 1, mac_pj: 0.5}\n"
      "vector:\n  width: 16\n  cycles: {add: 1, mul: 1, div: 1, exp: 3, max: 1, sqrt: 1}\n"
      "  energy_pj: {add: 0.1, mul: 0.5, div: 1, exp: 4, max: 0.01, sqrt: 3}\n";

static void load_tiny(comet_model_hw *hw, const char *topo, const char *red)
{
    char text[4096], err[COMET_ERRLEN];
    const char *p = tiny_hw;
    size_t o = 0;
    while (*p && o < sizeof text - 32) {
        if (!strncmp(p, "TOPO", 4)) {
            o += (size_t)sprintf(text + o, "%s", topo);
            p += 4;
        } else if (!strncmp(p, "RED", 3)) {
            o += (size_t)sprintf(text + o, "%s", red);
            p += 3;
        } else {
            text[o++] = *p++;
        }
    }
    text[o] = '\0';
    if (comet_model_hw_parse("tiny.yaml", text, o, hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
}

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
    /* vector per step: 16x32 elems / 16 lanes x (max 1 + sub 1 + exp 3 + sum 1 + mul 1 = 7)
     * + 16 rows x (max tree 4 + sum tree 4 + one reciprocal 1) */
    if (fabs(r.t_vec - 4 * (32 * 7.0 + 16 * 9.0)) > 1e-9) /* cppcheck-suppress */
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

/* All-reduce of n bytes over 2 and 4 nodes, checked against the alpha-beta
 * formulas of each algorithm on each topology. */
static void test_collectives_topologies(void **s)
{
    (void)s;
    const char *topos[] = { "mesh2d", "torus2d", "ring", "switch", "full" };
    double prev = -1;
    for (int t = 0; t < 5; t++) {
        comet_model_hw hw;
        load_tiny(&hw, topos[t], "false");
        comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 64, .N = 256, .K = 32 };
        comet_model_mapping mp = map(1, 0, 1, 4, 1, 1, 1, 16, 32);
        comet_model_result r;
        comet_model_eval(&hw, &pb, &mp, &r);
        assert_true(r.valid);
        /* the split N dimension gets exactly 2 all-reduces of row statistics per step:
         * 16 rows x 4 bytes each, never the 16 x 64 tile */
        assert_int_equal(r.coll_calls, 2 * 4);
        assert_true(fabs(r.coll_bytes - 4 * (64 + 64)) < 1e-9);
        assert_true(r.t_coll > 0);
        /* ring formula bound: 2(p-1)(a + h) + 2(p-1)/p n beta + red, p=4, n=64 */
        double ring = 2 * 3 * (2 + 5 * (t == 3 ? 2 : 1)) + 2.0 * 3 / 4 * 64 / 64 + 64.0 / 4 / 16;
        assert_true(r.t_coll / 8 <= ring + 1e-9); /* the chosen algorithm is never worse */
        (void)prev;
        comet_model_hw_free(&hw);
    }
    /* in-network reduction makes it cheaper still on a mesh */
    comet_model_hw a, b;
    load_tiny(&a, "mesh2d", "false");
    load_tiny(&b, "mesh2d", "true");
    comet_model_problem pb = { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 64, .N = 256, .K = 32 };
    comet_model_mapping mp = map(1, 0, 1, 4, 1, 1, 1, 16, 32);
    comet_model_result ra, rb;
    comet_model_eval(&a, &pb, &mp, &ra);
    comet_model_eval(&b, &pb, &mp, &rb);
    assert_true(rb.t_coll <= ra.t_coll);
    comet_model_hw_free(&a);
    comet_model_hw_free(&b);
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
                    for (int pi = 0; pi <= 1; pi++) {
                        comet_model_mapping mp
                            = map(f, pi, splits[sp][0], splits[sp][1], splits[sp][2], 1, 1, tm, tk);
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

static void expect_bad(const char *text, const char *needle)
{
    comet_model_hw hw;
    char err[COMET_ERRLEN] = "";
    assert_int_not_equal(
        comet_model_hw_parse("bad.yaml", text, strlen(text), &hw, err, sizeof err), 0);
    if (!strstr(err, needle))
        fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_bad_files(void **s)
{
    (void)s;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", tiny_hw);
    /* negative bandwidth, named with file:line */
    char *p = strstr(buf, "dram: {bw: 32");
    memcpy(p, "dram: {bw: -3", 13);
    char *t = strstr(buf, "TOPO");
    memcpy(t, "ring", 4);
    t = strstr(buf, "RED");
    memcpy(t, "no ", 3);
    expect_bad(buf, "bad.yaml:12");
    expect_bad("name: x\nclock_ghz: nan\n", "bad.yaml:2");
    expect_bad("name: x\nclock_ghz: 1\nfrobnicate: 3\n", "unknown field 'frobnicate'");
    expect_bad("name: [unclosed\n", "bad.yaml:");
    expect_bad("name: x\nkind: gpu\nclock_ghz: 1\n", "'kind'");
    comet_model_hw hw;
    char err[COMET_ERRLEN];
    assert_int_not_equal(comet_model_hw_load("/nonexistent/hw.yaml", &hw, err, sizeof err), 0);
}

static void test_roundtrip_and_presets(void **s)
{
    (void)s;
    const char *names[] = { "edge", "cloud" };
    for (int i = 0; i < 2; i++) {
        comet_model_hw hw, back;
        char err[COMET_ERRLEN];
        if (comet_model_hw_load(names[i], &hw, err, sizeof err) != 0)
            fail_msg("%s", err);
        json_t *j = comet_model_hw_to_json(&hw);
        char *text = json_dumps(j, 0);
        assert_int_equal(
            comet_model_hw_parse("rt.json", text, strlen(text), &back, err, sizeof err), 0);
        assert_int_equal(back.clusters, hw.clusters);
        assert_true(back.dram.bw == hw.dram.bw);
        assert_true(back.gb.capacity == hw.gb.capacity);
        /* on both presets fused beats unfused for all three ops */
        comet_model_problem pbs[3]
            = { { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 256 },
                  { .op = COMET_MODEL_GEMM_LAYERNORM, .M = 1024, .N = 1024, .K = 256 },
                  { .op = COMET_MODEL_ATTENTION, .heads = 8, .lq = 1024, .lk = 1024, .d = 64 } };
        for (int o = 0; o < 3; o++) {
            comet_model_search *se = calloc(1, sizeof *se);
            assert_int_equal(comet_model_explore(&hw, &pbs[o], se), 0);
            assert_true(se->r_fused.cycles < se->r_unfused.cycles);
            free(se);
        }
        free(text);
        json_decref(j);
        comet_model_hw_free(&hw);
        comet_model_hw_free(&back);
    }
}

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
        cmocka_unit_test(test_gemm_cycles),
        cmocka_unit_test(test_collectives_topologies),
        cmocka_unit_test(test_collective_insertion),
        cmocka_unit_test(test_capacity_pruning),
        cmocka_unit_test(test_explore_bruteforce),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_roundtrip_and_presets),
        cmocka_unit_test(test_shape_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
