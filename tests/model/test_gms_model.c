/* The gather-GEMM-scatter model: invariants over thousands of generated
 * inputs and configurations on the fixture's calibrated profile (latency
 * never below its bound, phases that exist only where the dataflow has
 * them, the search returns the minimum of what it evaluated), bad inputs
 * refused, and validation on synthetic records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model_validate.h"
#include "mfixture.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static comet_model_hw hw;

static int setup(void **s)
{
    (void)s;
    return mfix_profile(&hw) == 0 ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    comet_model_hw_free(&hw);
    return 0;
}

static double rnd(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / 16777216.0;
}

static void test_invariants(void **st)
{
    (void)st;
    unsigned s = 7;
    int checked = 0;
    for (int i = 0; i < 4000; i++) {
        comet_model_gms g = { 0 };
        g.rows_in = floor(1 + rnd(&s) * 1e5);
        g.rows_out = floor(1 + rnd(&s) * 1e5);
        g.K = floor(1 + rnd(&s) * 512);
        g.N = floor(1 + rnd(&s) * 512);
        g.segments = floor(1 + rnd(&s) * 64);
        g.pairs = g.segments + floor(rnd(&s) * 2e5);
        comet_model_gms_config c = { 1 + (int)(rnd(&s) * 4), floor(1 + rnd(&s) * 300),
            1 + (int)(rnd(&s) * hw.cores), 0 };
        comet_model_gms_cost r;
        assert_int_equal(comet_model_gms_eval(&hw, &g, &c, &r), 0);
        if (!(r.seconds >= r.bound_s && r.bound_s > 0 && isfinite(r.seconds)))
            fail_msg("case %d: latency %.6g below its bound %.6g", i, r.seconds, r.bound_s);
        assert_true(r.pack_s > 0 && r.main_s > 0);
        /* a phase exists exactly where the dataflow has it */
        int gather_sep = c.dataflow == 1 || c.dataflow == 3,
            scatter_sep = c.dataflow == 1 || c.dataflow == 2;
        assert_int_equal(r.gather_s > 0, gather_sep);
        assert_int_equal(r.scatter_s > 0, scatter_sep);
        /* the traffic modelled is at least the weights read and written
         * (packing) and every pair's product written or scattered */
        assert_true(r.bytes >= 2 * g.segments * g.K * g.N * 4 + g.pairs * g.N * 4);
        /* more bytes per pair make no dataflow faster */
        comet_model_gms g2 = g;
        g2.N = g.N * 2;
        comet_model_gms_cost r2;
        assert_int_equal(comet_model_gms_eval(&hw, &g2, &c, &r2), 0);
        if (!(r2.seconds >= r.seconds * (1 - 1e-12)))
            fail_msg("case %d: doubling N made dataflow %d faster (%.6g -> %.6g)", i, c.dataflow,
                r.seconds, r2.seconds);
        checked++;
    }
    assert_int_equal(checked, 4000);
}

static double exact_tiles(const void *ctx, double tile_m, int threads)
{
    const double *sizes = ctx;
    double t = 0;
    for (int i = 0; i < 4; i++) /* each thread's even share of a segment */
        t += threads * ceil(sizes[i] / threads / tile_m);
    return t;
}

static void test_explore_min(void **st)
{
    (void)st;
    const double sizes[4] = { 1000, 10, 1, 333 }, tiles[3] = { 16, 48, 128 };
    comet_model_gms g = { 2000, 2000, 64, 64, 1344, 4, 1000 };
    comet_model_gms_search sr;
    int n = comet_model_gms_explore(
        &hw, &g, tiles, 3, hw.cores, 0, exact_tiles, sizes, NULL, NULL, &sr);
    /* dataflow 1 once per thread count, the others at every tile */
    assert_int_equal(n, hw.cores * (1 + 3 * 3));
    assert_true(sr.win >= 1 && sr.win <= 4);
    const comet_model_gms_cost cost = sr.cost[sr.win - 1];
    /* one dataflow alone: its best is the full search's best of it */
    comet_model_gms_search one;
    assert_int_equal(comet_model_gms_explore(
                         &hw, &g, tiles, 3, hw.cores, 3, exact_tiles, sizes, NULL, NULL, &one),
        hw.cores * 3);
    assert_true(one.win == 3 && !one.have[0] && one.cost[2].seconds == sr.cost[2].seconds);
    for (int t = 1; t <= hw.cores; t++)
        for (int df = 1; df <= 4; df++)
            for (int k = 0; k < 3; k++) {
                comet_model_gms_config c = { df, tiles[k], t, exact_tiles(sizes, tiles[k], t) };
                comet_model_gms_cost r;
                assert_int_equal(comet_model_gms_eval(&hw, &g, &c, &r), 0);
                assert_true(r.seconds >= cost.seconds * (1 - 1e-12));
                assert_true(r.seconds >= sr.cost[df - 1].seconds * (1 - 1e-12));
            }
    assert_true(exact_tiles(sizes, 16, 1) == 63 + 1 + 1 + 21);
}

/* The kernel's threads own destination rows (kernels/gms.c): each pair's
 * row is gathered and scattered once whatever the thread count, so the
 * modelled traffic does not grow with threads, and each thread's main loop
 * runs half the pairs at 2 threads. With the gather and the scatter fused
 * (dataflow 4) no product round-trips through memory: at every thread
 * count it costs no more than gather-fused dataflow 2 at the same tile. */
static void test_threads_own_rows(void **st)
{
    (void)st;
    const comet_model_gms g = { 4096, 4096, 64, 64, 32768, 16, 8192 };
    for (double tm = 16; tm <= 256; tm *= 2)
        for (int df = 1; df <= 4; df++) {
            comet_model_gms_config c1 = { df, tm, 1, 0 }, c2 = { df, tm, 2, 0 };
            comet_model_gms_cost r1, r2;
            assert_int_equal(comet_model_gms_eval(&hw, &g, &c1, &r1), 0);
            assert_int_equal(comet_model_gms_eval(&hw, &g, &c2, &r2), 0);
            /* the weights' stream grows only with the blocks (each thread
             * runs its part of every segment: more, shorter blocks at 2
             * threads); the rows of in, the products and out move once */
            double tiles1 = g.pairs / tm + g.segments / 2, tiles2 = g.pairs / tm + g.segments;
            double w = (df == 1 ? g.segments : tiles2 - tiles1) * g.K * g.N * 4;
            assert_true(fabs(r2.bytes - r1.bytes - w) <= 1e-9 * r1.bytes);
            assert_true(r2.main_s < 0.75 * r1.main_s);
        }
    for (int t = 1; t <= 2; t++)
        for (double tm = 16; tm <= 256; tm *= 2) {
            comet_model_gms_config c2 = { 2, tm, t, 0 }, c4 = { 4, tm, t, 0 };
            comet_model_gms_cost r2, r4;
            assert_int_equal(comet_model_gms_eval(&hw, &g, &c2, &r2), 0);
            assert_int_equal(comet_model_gms_eval(&hw, &g, &c4, &r4), 0);
            assert_true(r4.seconds <= r2.seconds);
        }
}

/* A profile calibrated at a clock measured low (a loaded host) holds GEMM
 * efficiencies above 1: the bound then uses the fastest measured rate, so
 * it does not rise above every dataflow's cost and hide their order. */
static void test_bound_low_clock(void **st)
{
    (void)st;
    comet_model_hw h = hw;
    /* the grid the fused GEMM reads: its own, else the BLAS grid */
    comet_model_grid *gr = hw.fused_grid.values ? &h.fused_grid : &h.grid;
    size_t n = (size_t)gr->nt * gr->nm * gr->nn * gr->nk;
    assert_true(n > 0 && gr->values);
    double *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = gr->values[i] * 1.6;
    gr->values = v;
    const comet_model_gms g = { 4096, 4096, 64, 64, 32768, 16, 8192 };
    comet_model_gms_cost r[4];
    for (int df = 1; df <= 4; df++) {
        comet_model_gms_config c = { df, 48, 1, 0 };
        assert_int_equal(comet_model_gms_eval(&h, &g, &c, &r[df - 1]), 0);
        assert_true(r[df - 1].seconds >= r[df - 1].bound_s);
    }
    assert_false(r[3].bound_raised);
    assert_true(r[3].seconds < r[1].seconds && r[3].seconds < r[0].seconds);
    free(v);
}

/* The GEMM rate of the gms main loop is the micro-kernel's steady state:
 * the best the grid measured along M at the input's N and K on one thread.
 * Lowering any other point along M (a sample set disturbed by others' load)
 * leaves the cost as it was; raising the best point makes the compute-bound
 * configuration faster in proportion. */
static void test_steady_rate(void **st)
{
    (void)st;
    comet_model_hw h = hw;
    comet_model_grid *gr = hw.fused_grid.values ? &h.fused_grid : &h.grid;
    size_t n = (size_t)gr->nt * gr->nm * gr->nn * gr->nk;
    assert_true(n > 0 && gr->values && gr->nm >= 2);
    double *v = malloc(n * sizeof *v);
    assert_non_null(v);
    /* one thread, the grid's N and K axes' first points: 0.8 at the first M
     * (the best), 0.5 at every other */
    const double N = gr->N[0], K = gr->K[0];
    for (size_t i = 0; i < n; i++)
        v[i] = gr->values[i];
    const size_t sm = (size_t)gr->nn * gr->nk;
    for (int m = 0; m < gr->nm; m++)
        v[m * sm] = m == 0 ? 0.8 : 0.5;
    gr->values = v;
    /* compute-bound: few rows, every row used many times (pairs >> rows),
     * pairs per thread far beyond the grid's largest M */
    const comet_model_gms g = { 64, 64, K, N, 1e6, 1, 1e6 };
    comet_model_gms_config c = { 4, 48, 1, 0 };
    comet_model_gms_cost r0, r1, r2;
    assert_int_equal(comet_model_gms_eval(&h, &g, &c, &r0), 0);
    for (int m = 1; m < gr->nm; m++)
        v[m * sm] = 0.3; /* the other points along M drop, the largest M's too */
    assert_int_equal(comet_model_gms_eval(&h, &g, &c, &r1), 0);
    assert_true(fabs(r1.seconds - r0.seconds) <= r0.seconds * 1e-12);
    v[0] = 0.1; /* the best point drops: 0.3 is the best now */
    assert_int_equal(comet_model_gms_eval(&h, &g, &c, &r2), 0);
    /* the compute-bound main loop slows by 0.8 / 0.3 (a little less: its
     * traffic terms stay) */
    assert_true(r2.main_s > r0.main_s * 0.9 * 0.8 / 0.3 && r2.main_s <= r0.main_s * 0.8 / 0.3);
    free(v);
}

/* At T threads every phase runs at the share of a core each of T cores
 * delivers running together: the median over the GEMM grid's N, K points at
 * its largest M of the efficiency at T threads over that at 1 (at most 1).
 * A grid whose 2-thread points read 0.8 of the 1-thread ones there makes
 * every 2-thread configuration 1/0.8 slower than a grid at 1.0, in every
 * phase (the order of the configurations stays), and one thread pays
 * nothing; other points of the grid and an outlier among the N, K points do
 * not move the share. */
static void test_core_share(void **st)
{
    (void)st;
    comet_model_hw a = hw, b = hw;
    comet_model_grid *ga = hw.fused_grid.values ? &a.fused_grid : &a.grid,
                     *gb = hw.fused_grid.values ? &b.fused_grid : &b.grid;
    assert_true(ga->values && ga->nt >= 2 && ga->threads[0] == 1 && ga->threads[1] == 2);
    const size_t sm = (size_t)ga->nn * ga->nk, n = (size_t)ga->nt * ga->nm * sm;
    double *va = malloc(n * sizeof *va), *vb = malloc(n * sizeof *vb);
    assert_non_null(va);
    assert_non_null(vb);
    for (size_t i = 0; i < n; i++)
        va[i] = vb[i] = ga->values[i];
    const size_t top1 = (size_t)(ga->nm - 1) * sm, top2 = ((size_t)ga->nm + ga->nm - 1) * sm;
    for (size_t j = 0; j < sm; j++) {
        va[top2 + j] = va[top1 + j]; /* 2 threads as fast a core: 1 */
        vb[top2 + j] = 0.8 * vb[top1 + j]; /* 0.8 a core */
    }
    vb[top2] = 0.1 * vb[top1]; /* one outlier: the median holds */
    for (size_t j = (size_t)ga->nm * sm; j < top2; j++)
        va[j] = 0.2, vb[j] = 0.6; /* smaller M at 2 threads: no say */
    ga->values = va;
    gb->values = vb;
    assert_true(fabs(comet_model_gms_core_share(&a, 2) - 1) < 1e-12);
    assert_true(fabs(comet_model_gms_core_share(&b, 2) - 0.8) < 1e-12);
    assert_true(comet_model_gms_core_share(&b, 1) == 1);
    const comet_model_gms g = { 4096, 4096, 64, 64, 32768, 16, 2048 };
    for (int df = 1; df <= 4; df++)
        for (int T = 1; T <= 2 && T <= hw.cores; T++) {
            comet_model_gms_config c = { df, 48, T, 0 };
            comet_model_gms_cost ra, rb;
            assert_int_equal(comet_model_gms_eval(&a, &g, &c, &ra), 0);
            assert_int_equal(comet_model_gms_eval(&b, &g, &c, &rb), 0);
            const double f = T == 2 ? 1 / 0.8 : 1;
            assert_true(fabs(rb.seconds - f * ra.seconds) <= 1e-9 * ra.seconds);
            assert_true(fabs(rb.main_s - f * ra.main_s) <= 1e-9 * ra.main_s);
            assert_true(fabs(rb.gather_s - f * ra.gather_s) <= 1e-9 * ra.seconds);
            assert_true(fabs(rb.scatter_s - f * ra.scatter_s) <= 1e-9 * ra.seconds);
        }
    /* two ranks of a distributed kernel on this machine run at once, on two
     * cores: their local passes at the same share (the collectives not) */
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    pb.M = 256, pb.N = 1024, pb.K = 64;
    for (int fused = 0; fused <= 1; fused++) {
        comet_model_dist_pred da, db;
        assert_int_equal(comet_model_dist_predict(&a, &pb, fused, 1, 2, NULL, &da), 0);
        assert_int_equal(comet_model_dist_predict(&b, &pb, fused, 1, 2, NULL, &db), 0);
        assert_true(fabs(db.local_s - da.local_s / 0.8) <= 1e-9 * db.local_s);
        assert_true(fabs(db.coll_s - da.coll_s) <= 1e-12 * (da.coll_s + 1e-30));
    }
    /* one thread count in the grid: nothing to compare, a whole core */
    comet_model_hw c1 = b;
    comet_model_grid *g1 = hw.fused_grid.values ? &c1.fused_grid : &c1.grid;
    g1->nt = 1;
    assert_true(comet_model_gms_core_share(&c1, 2) == 1);
    free(va);
    free(vb);
}

/* A fused tile whose buffers and the segment's weights outgrow the core's
 * L1 (hw.l1_bytes) pays the fused gather's writes and the fused scatter's
 * reads at the local buffer's bandwidth; a tile that fits pays nothing more,
 * nor does dataflow 1 (no tile buffers), nor a description without L1. The
 * L1 survives a round trip through the JSON writer and loader, and one
 * larger than the local buffer is refused. */
static void test_l1_spill(void **st)
{
    (void)st;
    comet_model_hw h = hw;
    h.l1_bytes = 48 * 1024.0;
    const comet_model_gms g = { 4096, 4096, 64, 64, 32768, 16, 2048 };
    for (int df = 1; df <= 4; df++)
        for (int T = 1; T <= hw.cores && T <= 2; T++) {
            comet_model_gms_config small = { df, 48, T, 0 }, big = { df, 256, T, 0 };
            comet_model_gms_cost a0, a1, b0, b1;
            assert_int_equal(comet_model_gms_eval(&hw, &g, &small, &a0), 0);
            assert_int_equal(comet_model_gms_eval(&h, &g, &small, &a1), 0);
            assert_int_equal(comet_model_gms_eval(&hw, &g, &big, &b0), 0);
            assert_int_equal(comet_model_gms_eval(&h, &g, &big, &b1), 0);
            /* 48 rows x (64 + 64) x 4 B + 64 x 64 x 4 B = 40 KB at most: fits */
            assert_true(a1.main_s == a0.main_s);
            if (df == 1) {
                assert_true(b1.main_s == b0.main_s);
                continue;
            }
            /* ~240 rows: 76 KB (gather or scatter fused) or 136 KB (both):
             * spills, the fused steps' bytes at L2 */
            const double bytes = 32768.0 * 64 * 4 * ((df == 2 || df == 4) + (df == 3 || df == 4));
            /* at the share of a core T threads running together get each */
            const double want = bytes / comet_model_cpu_level_bw(&h, h.l1_bytes, T)
                / (h.clock_ghz * 1e9) / comet_model_gms_core_share(&h, T);
            assert_true(fabs((b1.main_s - b0.main_s) - want) <= 1e-9 * b0.main_s);
            assert_true(b1.bytes == b0.bytes + bytes);
        }
    /* written and read back; refused above the local buffer's capacity */
    char path[64], err[256];
    snprintf(path, sizeof path, "/tmp/comet-gms-l1-%d.json", (int)getpid());
    json_t *j = comet_model_hw_to_json(&h);
    assert_non_null(j);
    assert_int_equal(json_dump_file(j, path, 0), 0);
    comet_model_hw back;
    assert_int_equal(comet_model_hw_load(path, &back, err, sizeof err), 0);
    assert_true(back.l1_bytes == h.l1_bytes);
    comet_model_hw_free(&back);
    json_object_set_new(json_object_get(json_object_get(j, "memory"), "local_buffer"), "l1_bytes",
        json_real(2 * hw.lb.capacity));
    assert_int_equal(json_dump_file(j, path, 0), 0);
    assert_int_equal(comet_model_hw_load(path, &back, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "l1_bytes"));
    json_decref(j);
    remove(path);
}

/* The L1 check counts a full tile's rows (tile_m), not the mean over the
 * short last tiles too, unless no thread's part of the largest segment fills
 * one; an operand streamed from or to a separate pass holds one micro-tile's
 * rows. Scatter fused, gather separate, tile 128 on spconv skew 1 at 2
 * threads (13694 pairs, 136 tiles: 101 rows a tile on average): 128 x 64 x 4
 * of products + 16 KB of weights + 12 rows of A = 51 KB spills a 48 KB L1
 * (the mean, 42 KB, did not); with the largest segment at 150 pairs (75 a
 * thread) no tile fills and nothing spills; tile 48 (31 KB) never does. */
static void test_l1_full_tile(void **st)
{
    (void)st;
    comet_model_hw h = hw, h0 = hw;
    h.l1_bytes = 48 * 1024.0;
    h.fused_micro_rows = h0.fused_micro_rows = 12;
    h0.l1_bytes = 0;
    comet_model_gms g = { 4096, 4096, 64, 64, 13694, 27, 600 };
    comet_model_gms_config c = { 3, 128, 2, 136 };
    comet_model_gms_cost a, b;
    assert_int_equal(comet_model_gms_eval(&h0, &g, &c, &a), 0);
    assert_int_equal(comet_model_gms_eval(&h, &g, &c, &b), 0);
    const double tp = 13694.0 * 64 * 4;
    const double want = tp / comet_model_cpu_level_bw(&h, h.l1_bytes, 2) / (h.clock_ghz * 1e9)
        / comet_model_gms_core_share(&h, 2);
    assert_true(fabs((b.main_s - a.main_s) - want) <= 1e-9 * a.main_s);
    assert_true(b.bytes == a.bytes + tp);
    g.max_seg = 150; /* 75 rows a thread at most: the mean stands, 42 KB */
    assert_int_equal(comet_model_gms_eval(&h0, &g, &c, &a), 0);
    assert_int_equal(comet_model_gms_eval(&h, &g, &c, &b), 0);
    assert_true(b.main_s == a.main_s);
    g.max_seg = 600;
    c.tile_m = 48;
    c.tiles = 310;
    assert_int_equal(comet_model_gms_eval(&h0, &g, &c, &a), 0);
    assert_int_equal(comet_model_gms_eval(&h, &g, &c, &b), 0);
    assert_true(b.main_s == a.main_s);
}

static void test_bad_inputs(void **st)
{
    (void)st;
    comet_model_gms ok = { 100, 100, 8, 8, 50, 2, 40 }, g;
    comet_model_gms_config c = { 4, 16, 1, 0 }, b;
    comet_model_gms_cost r;
    assert_int_equal(comet_model_gms_eval(&hw, &ok, &c, &r), 0);
    g = ok;
    g.K = 0;
    assert_int_equal(comet_model_gms_eval(&hw, &g, &c, &r), -EINVAL);
    g = ok;
    g.segments = 0; /* pairs without a segment */
    assert_int_equal(comet_model_gms_eval(&hw, &g, &c, &r), -EINVAL);
    b = c;
    b.dataflow = 5;
    assert_int_equal(comet_model_gms_eval(&hw, &ok, &b, &r), -EINVAL);
    b = c;
    b.threads = hw.cores + 1;
    assert_int_equal(comet_model_gms_eval(&hw, &ok, &b, &r), -EINVAL);
    b = c;
    b.tile_m = 0;
    assert_int_equal(comet_model_gms_eval(&hw, &ok, &b, &r), -EINVAL);
    /* no pairs: nothing to do, and nothing charged */
    g = ok;
    g.pairs = 0;
    g.segments = 0;
    assert_int_equal(comet_model_gms_eval(&hw, &g, &c, &r), 0);
    assert_true(r.seconds == 0 && r.bound_s == 0);
    /* an accelerator description is not this kernel's */
    comet_model_hw edge;
    char err[256];
    assert_int_equal(comet_model_hw_load("edge", &edge, err, sizeof err), 0);
    assert_int_equal(comet_model_gms_eval(&edge, &ok, &c, &r), -ENOTSUP);
    comet_model_hw_free(&edge);
    int df;
    assert_int_equal(comet_model_gms_dataflow_parse("scatter_fused", &df), 0);
    assert_int_equal(df, 3);
    assert_int_equal(comet_model_gms_dataflow_parse("scatter", &df), -EINVAL);
}

static comet_results_record grec(const char *df, double tile, int threads, double median)
{
    comet_results_record r;
    comet_results_record_init(&r, COMET_RESULTS_KERNEL);
    r.op = "gms";
    r.variant = r.dataflow = df;
    r.workload = "moe";
    r.shape.rows = 4096;
    r.shape.segments = 8;
    r.shape.pairs = 8192;
    r.shape.K = 64;
    r.shape.N = 64;
    r.shape.max_seg = 3000;
    r.shape.mean_seg = 1024.0;
    r.shape.skew = 1.0;
    r.shape.nonempty = 8.0;
    r.params.tile_m = tile;
    r.params.tiles = ceil(8192 / tile) + 4;
    r.threads = threads;
    r.stats.median_s = median;
    r.stats.ci_lo_s = median * 0.9; /* +-10%: a noisy measurement */
    r.stats.ci_hi_s = median * 1.1;
    return r;
}

/* Validation pairs each record with its prediction, groups inputs, and the
 * model's choice is its lowest prediction among what was measured. */
static void test_validate_synthetic(void **st)
{
    (void)st;
    comet_results_record r[5] = { grec("unfused", 48, 1, 2e-3), grec("fused", 16, 1, 1e-3),
        grec("fused", 128, 1, 1.2e-3), grec("gather_fused", 48, 1, 0.9e-3), { 0 } };
    comet_results_record_init(&r[4], COMET_RESULTS_KERNEL);
    r[4].op = "gemm_softmax";
    comet_model_gms_vrow rows[5];
    int n = comet_model_gms_validate(&hw, r, 5, rows, 5);
    assert_int_equal(n, 4);
    int lo = 0;
    for (int i = 0; i < n; i++) {
        comet_model_gms_cost c;
        assert_int_equal(comet_model_gms_eval(&hw, &rows[i].input, &rows[i].config, &c), 0);
        assert_true(c.seconds == rows[i].predicted_s);
        assert_true(
            fabs(rows[i].rel_err - fabs(c.seconds - rows[i].measured_s) / rows[i].measured_s)
            < 1e-12);
        if (rows[i].predicted_s < rows[lo].predicted_s)
            lo = i;
    }
    comet_model_gms_vinput in[4];
    assert_int_equal(comet_model_gms_inputs(rows, n, in, 4), 1);
    assert_int_equal(in[0].configs, 4);
    assert_true(in[0].best_s == 0.9e-3 && in[0].best_df == 2);
    assert_true(in[0].chosen_s == rows[lo].measured_s);
    assert_true(in[0].df_best_s[0] == 2e-3 && in[0].df_best_s[3] == 1e-3);
    assert_true(in[0].df_best_s[2] == 0); /* scatter_fused not measured */
    comet_model_gms_vsum vs;
    comet_model_gms_summary(rows, n, in, 1, &vs);
    assert_int_equal(vs.records, 4);
    assert_int_equal(vs.inputs, 1);
    assert_int_equal(vs.configs, 4);
    assert_int_equal(vs.within_5pct, rows[lo].measured_s <= 1.05 * 0.9e-3);
    /* within the noise: the choice's CI (+-10%) reaches the best's */
    assert_int_equal(vs.within_noise, rows[lo].measured_s * 0.9 <= 0.9e-3 * 1.1);
    /* a choice measured far from the best is outside the noise */
    comet_model_gms_vinput far = in[0];
    far.chosen_s = 2e-3, far.chosen_ci_lo_s = 1.8e-3;
    comet_model_gms_summary(rows, n, &far, 1, &vs);
    assert_int_equal(vs.within_noise, 0);
    assert_int_equal(vs.within_5pct, 0);
    assert_true(fabs(vs.worst_loss[0] - 2e-3 / 0.9e-3) < 1e-12);
    assert_true(vs.worst_loss[1] == 1.0 && vs.worst_loss[2] == 0);
    assert_true(vs.median_rel_err <= vs.p90_rel_err);
}

/* Distributed MoE (model/moe.c): predicted = local + the three all-to-alls,
 * local = the slowest rank's, and a dist_kernel gms/moe record (with its
 * rank_loads) is predicted by validate --distributed with the collectives
 * it logged. */
static void test_moe_dist_model(void **st)
{
    (void)st;
    comet_model_moe_rank ld[2]
        = { { 2048, 4096, 6010, 4, 2539, 1091, 3005 }, { 2048, 4096, 2182, 4, 674, 3005, 1091 } };
    comet_model_moe m = { .ranks = 2, .K = 64, .N = 64, .experts = 8, .rank = ld };
    comet_model_dist_pred a, b;
    for (int df = 1; df <= 4; df++) {
        assert_int_equal(comet_model_moe_predict(&hw, &m, df, 48, 1, NULL, &a), 0);
        assert_int_equal(a.ncall, 3);
        double c = 0;
        for (int i = 0; i < 3; i++) {
            assert_int_equal(a.call[i].kind, COMET_MODEL_ALLTOALL);
            assert_true(a.call[i].seconds > 0);
            c += a.call[i].seconds;
        }
        assert_true(fabs(a.coll_s - c) <= 1e-15 && fabs(a.seconds - a.local_s - a.coll_s) <= 1e-15);
        assert_true(a.call[1].bytes == 3005.0 * 64 * 4 && a.call[2].bytes == 3005.0 * 64 * 4);
        /* the light rank does not set the time; both heavy does not change it */
        comet_model_moe_rank h[2] = { ld[0], ld[0] };
        comet_model_moe mh = m;
        mh.rank = h;
        assert_int_equal(comet_model_moe_predict(&hw, &mh, df, 48, 1, NULL, &b), 0);
        assert_true(fabs(b.local_s - a.local_s) <= 1e-12 * a.local_s);
        h[1].pairs = 9000, h[1].max_seg = 4000;
        assert_int_equal(comet_model_moe_predict(&hw, &mh, df, 48, 1, NULL, &b), 0);
        assert_true(b.local_s > a.local_s);
    }
    comet_model_moe one = m;
    one.ranks = 1;
    assert_int_equal(comet_model_moe_predict(&hw, &one, 4, 48, 1, NULL, &a), 0);
    assert_int_equal(a.ncall, 0);
    assert_int_equal(comet_model_moe_predict(&hw, &m, 5, 48, 1, NULL, &a), -EINVAL);
    ld[1].pairs = -1;
    assert_int_equal(comet_model_moe_predict(&hw, &m, 4, 48, 1, NULL, &a), -EINVAL);

    static const char line[]
        = "{\"schema\":\"comet.record.v2\",\"kind\":\"dist_kernel\",\"run_id\":\"t\",\"op\":"
          "\"gms\","
          "\"variant\":\"fused\",\"dataflow\":\"fused\",\"workload\":\"moe\",\"shape\":{\"rows\":"
          "4096,\"segments\":8,\"pairs\":8192,\"max_seg\":2539,\"K\":64,\"N\":64,\"skew\":1.0},"
          "\"threads\":1,\"ranks\":2,\"params\":{\"split\":\"experts\",\"tile_m\":48},\"stats\":{"
          "\"n\":3,\"median_s\":0.00093,\"ci_lo_s\":0.00092,\"ci_hi_s\":0.00096,\"min_s\":0.00092,"
          "\"samples_s\":[0.00092,0.00093,0.00096]},\"valid\":true,\"collectives\":[{\"kind\":"
          "\"alltoall\",\"count\":8,\"bytes\":32,\"calls\":1,\"op\":\"counts\"},{\"kind\":"
          "\"alltoall\",\"count\":192320,\"bytes\":769280,\"calls\":1,\"op\":\"tokens\"},{"
          "\"kind\":\"alltoall\",\"count\":192320,\"bytes\":769280,\"calls\":1,\"op\":"
          "\"combine\"}],\"rank_loads\":[{\"tokens\":2048,\"sent\":4096,\"pairs\":6010,"
          "\"segments\":4,\"max_seg\":2539,\"remote_sent\":1091,\"remote_recv\":3005},{\"tokens\":"
          "2048,\"sent\":4096,\"pairs\":2182,"
          "\"segments\":4,\"max_seg\":674,\"remote_sent\":3005,\"remote_recv\":1091}]}";
    comet_results_record rec;
    char err[256];
    assert_int_equal(comet_results_parse_line(line, strlen(line), &rec, err, sizeof err), 0);
    assert_int_equal((int)rec.nrank_loads, 2);
    assert_true(rec.rank_loads[0].pairs == 6010 && rec.rank_loads[1].max_seg == 674);
    comet_model_drow row;
    assert_int_equal(comet_model_dist_validate(&hw, &rec, 1, &row, 1), 1);
    assert_string_equal(row.op, "gms:moe");
    assert_string_equal(row.variant, "fused");
    assert_int_equal(row.colls_match, 1);
    assert_true(row.M == 4096 && row.pred.ncall == 3);
    comet_results_record_free(&rec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_explore_min),
        cmocka_unit_test(test_threads_own_rows),
        cmocka_unit_test(test_bound_low_clock),
        cmocka_unit_test(test_steady_rate),
        cmocka_unit_test(test_core_share),
        cmocka_unit_test(test_l1_spill),
        cmocka_unit_test(test_l1_full_tile),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_validate_synthetic),
        cmocka_unit_test(test_moe_dist_model),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
