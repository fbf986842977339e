/* Hardware descriptions with physical units: the edge preset restated in
 * schema comet.hw.v2 (units everywhere, a clock of 1 GHz) loads to the same
 * description and predicts the same; at 2 GHz the bandwidths stated in GB/s
 * stay GB/s (half the bytes per cycle); v2 refuses bare numbers for
 * dimensioned fields, v1 accepts units; errors name file:line and field. */
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

static const char *edge_v2(const char *clock, const char *dram_bw)
{
    static char buf[4096];
    snprintf(buf, sizeof buf,
        "schema: comet.hw.v2\n"
        "name: edge\n"
        "kind: accelerator\n"
        "clock: %s\n"
        "bytes_per_elem: 2\n"
        "io_bytes_per_elem: 1\n"
        "clusters:\n"
        "  count: 4\n"
        "  network: {topology: mesh2d, dims: [2, 2], link_bw: 64 GB/s, hop_latency: 5 ns,\n"
        "            startup: 0 ns, channel_bits: 512, flit_cycles: 2 ns, broadcast: true,\n"
        "            reduction: false, link_pj_per_byte: 0.349 pJ/B}\n"
        "cores:\n"
        "  count: 4\n"
        "  network: {topology: mesh2d, dims: [2, 2], link_bw: 64 GB/s, hop_latency: 5 ns,\n"
        "            startup: 0 ns, channel_bits: 512, flit_cycles: 2 ns, broadcast: true,\n"
        "            reduction: false, link_pj_per_byte: 0.349 pJ/B}\n"
        "memory:\n"
        "  dram: {capacity: 16 GiB, bw: %s, read_pj: 100 pJ/B, write_pj: 800 pJ,\n"
        "         access_bytes: 8 B}\n"
        "  global_buffer: {capacity: 2 MiB, bw: 2048 GB/s, read_pj: 474 pJ, write_pj: 532 pJ,\n"
        "                  access_bytes: 2 KiB}\n"
        "  local_buffer: {capacity: 192 KiB, bw: 4096 GB/s, read_pj: 47 pJ, write_pj: 129 pJ,\n"
        "                 access_bytes: 4096 B, input_bytes: 32 KiB, weight_bytes: 32 KiB,\n"
        "                 output_bytes: 128 KiB, input_bw: 4096 GB/s, weight_bw: 4096 GB/s,\n"
        "                 output_bw: 4096 GB/s}\n"
        "gemm: {engine: systolic, rows: 32, cols: 32, arrays: 64, mac_pj: 0.2296 pJ}\n"
        "vector:\n"
        "  width: 16\n"
        "  cycles: {add: 1, mul: 1, div: 1, exp: 3, max: 1, sqrt: 1}\n"
        "  energy_pj: {add: 0.11, mul: 0.64, div: 0.8, exp: 3.86, max: 0.0025, sqrt: 2.84}\n",
        clock, dram_bw);
    return buf;
}

static double best_fused_s(const comet_model_hw *hw)
{
    comet_model_problem pb;
    char err[256];
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    assert_int_equal(comet_model_problem_parse("M=1024,N=1024,K=256", &pb, err, sizeof err), 0);
    comet_model_search s;
    assert_true(comet_model_explore(hw, &pb, &s) >= 0);
    return s.r_fused.seconds;
}

static void test_v2_equals_v1(void **st)
{
    (void)st;
    char err[512];
    comet_model_hw v1, v2, fast;
    assert_int_equal(comet_model_hw_load("edge", &v1, err, sizeof err), 0);
    const char *t = edge_v2("1 GHz", "25 GB/s");
    if (comet_model_hw_parse("edge-v2.yaml", t, strlen(t), &v2, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(v2.schema_version, 2);
    assert_true(v2.clock_ghz == 1.0);
    assert_true(fabs(v2.dram.bw - v1.dram.bw) < 1e-9);
    assert_true(fabs(v2.dram.capacity - v1.dram.capacity) < 1e-3);
    assert_true(fabs(v2.dram.read_pj - v1.dram.read_pj) < 1e-9); /* 100 pJ/B x 8 B */
    assert_true(fabs(v2.gb.capacity - v1.gb.capacity) < 1e-6);
    assert_true(fabs(v2.cluster_net.hop_latency - v1.cluster_net.hop_latency) < 1e-9);
    assert_true(fabs(v2.mac_pj - v1.mac_pj) < 1e-12);
    double a = best_fused_s(&v1), b = best_fused_s(&v2);
    if (fabs(a - b) > 1e-12 * a)
        fail_msg("v1 %.9g s vs v2 %.9g s", a, b);
    /* at 2 GHz the same file's GB/s are half the bytes per cycle */
    t = edge_v2("2 GHz", "25 GB/s");
    assert_int_equal(
        comet_model_hw_parse("edge-2ghz.yaml", t, strlen(t), &fast, err, sizeof err), 0);
    assert_true(fabs(fast.dram.bw - 12.5) < 1e-9);
    assert_true(fabs(fast.cluster_net.hop_latency - 10) < 1e-9);
    comet_model_hw_free(&fast);
    comet_model_hw_free(&v1);
    comet_model_hw_free(&v2);
}

static void expect_error(const char *text, const char *want)
{
    comet_model_hw hw;
    char err[512] = "";
    if (comet_model_hw_parse("bad.yaml", text, strlen(text), &hw, err, sizeof err) == 0) {
        comet_model_hw_free(&hw);
        fail_msg("accepted; wanted an error with '%s'", want);
    }
    if (!strstr(err, want) || !strstr(err, "bad.yaml:"))
        fail_msg("error '%s' lacks '%s' or the file:line", err, want);
}

static void test_v2_rules(void **st)
{
    (void)st;
    /* a bare bandwidth in v2 */
    expect_error(edge_v2("1 GHz", "25"), "needs a unit");
    /* a unit of the wrong kind */
    expect_error(edge_v2("1 GHz", "25 MiB"), "is not a quantity like 300 GB/s");
    /* no clock, or a bad one */
    expect_error(edge_v2("fast", "25 GB/s"), "'clock' must be a frequency");
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", edge_v2("1 GHz", "25 GB/s"));
    char *c = strstr(buf, "clock: 1 GHz\n");
    memcpy(c, "clocx: 1 GHz\n", 13);
    expect_error(buf, "clocx");
    snprintf(buf, sizeof buf, "%s", edge_v2("1 GHz", "25 GB/s"));
    memcpy(strstr(buf, "comet.hw.v2"), "comet.hw.v9", 11);
    expect_error(buf, "comet.hw.v9");
    /* v1 accepts units beside bare numbers */
    comet_model_hw hw;
    char err[512];
    snprintf(buf, sizeof buf, "%s", edge_v2("1 GHz", "25 GB/s"));
    memcpy(strstr(buf, "comet.hw.v2"), "comet.hw.v1", 11);
    if (comet_model_hw_parse("v1.yaml", buf, strlen(buf), &hw, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(hw.schema_version, 1);
    comet_model_hw_free(&hw);
}

/* Efficiency tables (Calculon's): parsed in any order, refused when
 * malformed with file:line, and evaluated so that time (size / efficiency)
 * never drops as the size grows, over 20,000 generated tables and sizes. */
static void test_efficiency_tables(void **st)
{
    (void)st;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", edge_v2("1 GHz", "25 GB/s"));
    char *g = strstr(buf, "mac_pj: 0.2296 pJ}");
    assert_non_null(g);
    char tail[2048];
    snprintf(tail, sizeof tail, "%s", g + strlen("mac_pj: 0.2296 pJ}"));
    snprintf(g, sizeof buf - (size_t)(g - buf),
        "mac_pj: 0.2296 pJ,\n       efficiency_by_gflop: [[16, 0.9], [0, 0.1], [128, 0.99], "
        "[1, 0.6]]}%s",
        tail);
    comet_model_hw hw;
    char err[512];
    if (comet_model_hw_parse("t.yaml", buf, strlen(buf), &hw, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(hw.gemm_eff_by_gflop.n, 4);
    assert_true(hw.gemm_eff_by_gflop.at[0] == 0 && hw.gemm_eff_by_gflop.at[3] == 128);
    /* well inside a step: its value; a 2 GFLOP GEMM at 0.6 */
    assert_true(fabs(comet_model_steps_eval(&hw.gemm_eff_by_gflop, 200, 1) - 0.99) < 1e-12);
    assert_true(fabs(comet_model_steps_eval(&hw.gemm_eff_by_gflop, 12, 1) - 0.6) < 1e-12);
    /* just past a step up: held at the time of the previous step's end */
    const double e16 = comet_model_steps_eval(&hw.gemm_eff_by_gflop, 16, 1);
    assert_true(fabs(16 / e16 - 16 / 0.6) < 1e-9);
    /* without a grid the op model uses the table by 2MNK */
    assert_true(fabs(comet_model_gemm_eff(&hw, 1000, 1000, 100000, 1) - 0.99) < 1e-12);
    comet_model_hw_free(&hw);

    static const char *const bad[][2] = { { "[[0, 1.5]]", "efficiency in (0, 1]" },
        { "[[-1, 0.5]]", "size >= 0" }, { "[[1, 0.5], [1, 0.6]]", "repeats the size" },
        { "0.5", "must be a list" }, { "[[1, 0.5, 2]]", "entries must be" } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(buf, sizeof buf, "%s", edge_v2("1 GHz", "25 GB/s"));
        g = strstr(buf, "mac_pj: 0.2296 pJ}");
        snprintf(tail, sizeof tail, "%s", g + strlen("mac_pj: 0.2296 pJ}"));
        snprintf(g, sizeof buf - (size_t)(g - buf), "mac_pj: 0.2296 pJ, efficiency_by_gflop: %s}%s",
            bad[i][0], tail);
        expect_error(buf, bad[i][1]);
    }

    unsigned long long r = 0x9E3779B97F4A7C15ULL;
#define RND() (r ^= r << 13, r ^= r >> 7, r ^= r << 17, (double)(r >> 11) / 9007199254740992.0)
    for (int c = 0; c < 2000; c++) {
        comet_model_steps t = { 0 };
        t.n = 1 + (int)(RND() * 8);
        if (t.n > 8)
            t.n = 8;
        double at = 0;
        for (int i = 0; i < t.n; i++) {
            t.at[i] = at;
            at += 0.01 + RND() * 100;
            t.eff[i] = 0.01 + RND() * 0.99;
        }
        double prev_t = 0;
        for (int k = 0; k < 10; k++) {
            const double size = (k + RND()) * at / 8;
            const double e = comet_model_steps_eval(&t, size, 1);
            assert_true(e > 0 && e <= 1);
            const double time = size / e;
            if (time < prev_t * (1 - 1e-12))
                fail_msg("table %d: size %g takes %g, less than a smaller size (%g)", c, size, time,
                    prev_t);
            prev_t = time;
        }
    }
#undef RND
}

/* Named network compositions expand into the levels written out by hand;
 * per-level lists give each level its own value; malformed ones are
 * refused with file:line. */
static void test_compositions(void **st)
{
    (void)st;
    static const char *const head = "schema: comet.hw.v2\nname: c\nkind: accelerator\n"
                                    "clock: 1 GHz\nclusters_per_chip: 1\nclusters:\n";
    static const char *const tail
        = "cores:\n  count: 2\n  network: {topology: ring, dims: [2], link_bw: 1 TB/s}\n"
          "memory:\n  dram: {capacity: 16 GB, bw: 1 TB/s, shared_by: chip}\n"
          "  global_buffer: {capacity: 64 MiB, bw: 5 TB/s}\n"
          "  local_buffer: {capacity: 1 MiB, bw: 10 TB/s}\n"
          "gemm: {engine: systolic, rows: 32, cols: 32, arrays: 1}\nvector:\n  width: 32\n";
    static const struct {
        const char *composed, *explicit_;
    } same[] = {
        { "  count: 64\n  network: {composition: torus3d, dims: [4, 4, 4], link_bw: 24 GB/s}\n",
            "  count: 64\n  network:\n    - {topology: ring, dims: [4], link_bw: 24 GB/s}\n"
            "    - {topology: ring, dims: [4], link_bw: 24 GB/s}\n"
            "    - {topology: ring, dims: [4], link_bw: 24 GB/s}\n" },
        { "  count: 32\n  network: {composition: dgx1, dims: [8, 4], link_bw: [300 GB/s, 25 "
          "GB/s], startup: [10 us, 20 us], efficiency: [0.6, 0.9]}\n",
            "  count: 32\n  network:\n    - {topology: ring, dims: [8], link_bw: 300 GB/s, "
            "startup: 10 us, efficiency: 0.6}\n"
            "    - {topology: switch, dims: [4], link_bw: 25 GB/s, startup: 20 us, efficiency: "
            "0.9}\n" },
        { "  count: 16\n  network: {composition: dragonfly, dims: [4, 4], link_bw: 50 GB/s}\n",
            "  count: 16\n  network:\n    - {topology: full, dims: [4], link_bw: 50 GB/s}\n"
            "    - {topology: full, dims: [4], link_bw: 50 GB/s}\n" },
    };
    char a[4096], b[4096], err[512];
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        comet_model_hw x, y;
        snprintf(a, sizeof a, "%s%s%s", head, same[i].composed, tail);
        snprintf(b, sizeof b, "%s%s%s", head, same[i].explicit_, tail);
        if (comet_model_hw_parse("a.yaml", a, strlen(a), &x, err, sizeof err))
            fail_msg("%s", err);
        if (comet_model_hw_parse("b.yaml", b, strlen(b), &y, err, sizeof err))
            fail_msg("%s", err);
        assert_int_equal(x.n_outer, y.n_outer);
        for (int l = 0; l <= x.n_outer; l++) {
            const comet_model_net *p = l ? &x.outer_net[l - 1] : &x.cluster_net;
            const comet_model_net *q = l ? &y.outer_net[l - 1] : &y.cluster_net;
            assert_int_equal(p->topo, q->topo);
            assert_int_equal(p->dims[0], q->dims[0]);
            assert_true(p->link_bw == q->link_bw && p->startup == q->startup);
            assert_true(p->efficiency == q->efficiency);
        }
        comet_model_hw_free(&x);
        comet_model_hw_free(&y);
    }
    static const char *const bad[][2] = {
        { "  count: 16\n  network: {composition: hypercube, dims: [4, 4], link_bw: 1 GB/s}\n",
            "unknown composition" },
        { "  count: 16\n  network: {composition: torus3d, dims: [4, 4], link_bw: 1 GB/s}\n",
            "needs 'dims' of 3" },
        { "  count: 16\n  network: {composition: dgx2, dims: [4, 4], link_bw: [1 GB/s]}\n",
            "lists 1 values for 2 levels" },
        { "  count: 15\n  network: {composition: dgx2, dims: [4, 4], link_bw: 1 GB/s}\n",
            "do not match count" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(a, sizeof a, "%s%s%s", head, bad[i][0], tail);
        expect_error(a, bad[i][1]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_v2_equals_v1),
        cmocka_unit_test(test_v2_rules),
        cmocka_unit_test(test_efficiency_tables),
        cmocka_unit_test(test_compositions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
