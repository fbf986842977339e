/* coll.c and coll_algs.c: collectives per topology and level, by hand,
 * and calibrated fits (all-gatherv). */
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
static void test_collectives_by_hand(void **s)
{
    (void)s;
    const double b = 1.0 / 64, g = 1.0 / 64; /* beta, gamma per byte */
    /* ring all-reduce on a ring: 6 steps of (2 + 5) + 3 x 16 B x (b + g) + 3 x 16 B x b */
    NEAR(coll("ring", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_RING),
        42 + 48 * (b + g) + 48 * b);
    /* on a switch every ring edge is 2 hops */
    NEAR(coll("switch", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_RING),
        6 * 12 + 48 * (b + g) + 48 * b);
    /* recursive doubling on the 2x2 mesh: one round per dimension, whole vector */
    NEAR(coll("mesh2d", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_TREE),
        2 * (7 + 64 * (b + g)));
    /* reduce-scatter by halving on the torus: 32 B then 16 B */
    NEAR(coll("torus2d", "false", COMET_MODEL_REDUCE_SCATTER, 64, COMET_MODEL_ALG_TREE),
        7 + 32 * (b + g) + 7 + 16 * (b + g));
    /* all-gather by doubling of a 64 B total: 16 B then 32 B */
    NEAR(coll("torus2d", "false", COMET_MODEL_ALLGATHER, 64, COMET_MODEL_ALG_TREE),
        7 + 16 * b + 7 + 32 * b);
    /* mesh row-then-column: row reduce-scatter (64 B over 2), column all-reduce
     * of 32 B over 2, row all-gather */
    NEAR(coll("mesh2d", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_MESH),
        (7 + 32 * (b + g)) + (7 + 16 * (b + g)) + (7 + 16 * b) + (7 + 32 * b));
    /* direct on a switch: reduce-scatter and all-gather, the port serialises 3/4 n */
    NEAR(coll("switch", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_DIRECT),
        (12 + 64 * (0.75 * b + 0.75 * g)) + (12 + 64 * 0.75 * b));
    /* fully connected: the peers' shares travel on separate links */
    NEAR(coll("full", "false", COMET_MODEL_ALLGATHER, 64, COMET_MODEL_ALG_DIRECT), 7 + 64 * b / 4);
    /* in-network reduction: up and down the switch (diameter 2) once, n beta */
    NEAR(coll("switch", "true", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_IN_NETWORK),
        2 + 2 * 2 * 5 + 64 * b);
    /* algorithms that do not apply */
    assert_true(isinf(coll("switch", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_MESH)));
    assert_true(isinf(coll("mesh2d", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_DIRECT)));
    assert_true(
        isinf(coll("mesh2d", "false", COMET_MODEL_ALLREDUCE, 64, COMET_MODEL_ALG_IN_NETWORK)));
    /* unforced: the cheapest applicable one; nothing for one node */
    comet_model_hw hw;
    load_tiny(&hw, "mesh2d", "true");
    comet_model_coll_cost c = comet_model_coll_time(&hw, COMET_MODEL_ALLREDUCE, 4, 64, 0);
    double best = INFINITY;
    for (int a = COMET_MODEL_ALG_RING; a <= COMET_MODEL_ALG_IN_NETWORK; a++)
        best = fmin(best, coll("mesh2d", "true", COMET_MODEL_ALLREDUCE, 64, (comet_model_alg)a));
    NEAR(c.cycles, best);
    /* on 2x2, two short tree rounds (18) beat the in-network trip (2 + 2x2x5 + 1 = 23) */
    assert_int_equal(c.alg, COMET_MODEL_ALG_TREE);
    assert_int_equal(comet_model_coll_time(&hw, COMET_MODEL_ALLREDUCE, 1, 64, 0).alg, 0);
    /* calibrated fits (CPU): T = TRG row . (alpha, beta, gamma), in cycles */
    hw.links.nfits = 1;
    hw.links.fits[0] = (comet_model_coll_fit) {
        .coll = COMET_MODEL_ALLREDUCE, .alg = "ring", .alpha_s = 1e-6, .beta_s = 1e-9
    };
    c = comet_model_coll_time(&hw, COMET_MODEL_ALLREDUCE, 4, 64, COMET_MODEL_ALG_RING);
    NEAR(c.cycles, (6 * 1e-6 + 2 * 0.75 * 64 * 1e-9) * 1e9); /* clock 1 GHz */
    c = comet_model_coll_time(&hw, COMET_MODEL_ALLREDUCE, 4, 64, 0);
    assert_int_equal(c.alg, COMET_MODEL_ALG_FIT);
    comet_model_hw_free(&hw);
}
/* MPI_Allgatherv is costed by its own calibrated fit (MPICH runs it by
 * other code than MPI_Allgather: 2x slower at 128 KiB per rank on the Zen 5
 * VM); without one by the all-gather's; the distributed unfused kernels'
 * slices travel by it (kernels/dist.c), their widths by an all-gather. */
static void test_allgatherv_fit(void **s)
{
    (void)s;
    comet_model_hw hw;
    load_tiny(&hw, "mesh2d", "true");
    hw.links.nfits = 2;
    hw.links.fits[0] = (comet_model_coll_fit) {
        .coll = COMET_MODEL_ALLGATHER, .alg = "auto", .alpha_s = 1e-6, .beta_s = 1e-10
    };
    hw.links.fits[1] = (comet_model_coll_fit) {
        .coll = COMET_MODEL_ALLGATHERV, .alg = "auto", .alpha_s = 2e-6, .beta_s = 3e-10
    };
    /* gathered total 256 KiB over 2 ranks: alpha + total x beta (1 GHz) */
    const double tot = 262144;
    comet_model_coll_cost g = comet_model_coll_time(&hw, COMET_MODEL_ALLGATHER, 2, tot, 0);
    comet_model_coll_cost v = comet_model_coll_time(&hw, COMET_MODEL_ALLGATHERV, 2, tot, 0);
    NEAR(g.cycles, (1e-6 + tot * 1e-10) * 1e9);
    NEAR(v.cycles, (2e-6 + tot * 3e-10) * 1e9);
    assert_int_equal(v.alg, COMET_MODEL_ALG_FIT);
    /* no allgatherv fit: the all-gather's */
    hw.links.nfits = 1;
    v = comet_model_coll_time(&hw, COMET_MODEL_ALLGATHERV, 2, tot, 0);
    NEAR(v.cycles, g.cycles);
    assert_string_equal(comet_model_coll_name(COMET_MODEL_ALLGATHERV), "allgatherv");
    comet_model_coll c;
    assert_int_equal(comet_model_coll_parse("allgatherv", &c), 0);
    assert_int_equal(c, COMET_MODEL_ALLGATHERV);
    /* the unfused distributed kernels: widths by all-gather, slices by
     * all-gatherv (GEMM rows and attention's score slices alike) */
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_GEMM_SOFTMAX;
    pb.M = 128, pb.N = 512, pb.K = 64;
    comet_model_dist_call call[COMET_MODEL_DIST_MAXCALLS];
    assert_int_equal(comet_model_dist_colls(&pb, 0, 2, call, COMET_MODEL_DIST_MAXCALLS), 2);
    assert_int_equal(call[0].kind, COMET_MODEL_ALLGATHER);
    assert_int_equal(call[1].kind, COMET_MODEL_ALLGATHERV);
    memset(&pb, 0, sizeof pb);
    pb.op = COMET_MODEL_ATTENTION;
    pb.heads = 2, pb.lq = 128, pb.lk = 512, pb.d = 64;
    assert_int_equal(comet_model_dist_colls(&pb, 0, 2, call, COMET_MODEL_DIST_MAXCALLS), 3);
    assert_int_equal(call[1].kind, COMET_MODEL_ALLGATHERV);
    comet_model_hw_free(&hw);
}
/* Two network levels: a ring of 2 inside, a switch of 2 outside; an
 * all-reduce over 4 costs one on each level. */
static void test_collectives_levels(void **s)
{
    (void)s;
    const char *text
        = "name: two\nclock_ghz: 1\nclusters:\n  count: 4\n  network:\n"
          "    - {topology: ring, dims: [2], link_bw: 64, hop_latency: 5, startup: 2}\n"
          "    - {topology: switch, dims: [2], link_bw: 8, hop_latency: 100, startup: 50}\n"
          "cores:\n  count: 1\n  network: {topology: full, dims: [1], link_bw: 64}\n"
          "memory:\n  dram: {bw: 32}\n  global_buffer: {capacity: 1048576, bw: 1024}\n"
          "  local_buffer: {capacity: 262144, bw: 1024}\n"
          "gemm: {engine: systolic, rows: 32, cols: 32}\nvector: {width: 16}\n";
    comet_model_hw hw;
    char err[COMET_ERRLEN];
    if (comet_model_hw_parse("two.yaml", text, strlen(text), &hw, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(hw.n_outer, 1);
    const double g = 1.0 / 64;
    /* p = 2 on each level: one exchange of the whole vector (recursive
     * doubling) beats two half-size ring steps: 7 + 64 (1/64 + g) = 9 inside,
     * 50 + 2 hops x 100 + 64 (1/8 + g) = 259 across the switch */
    double inner = 2 + 5 + 64 * (1.0 / 64 + g);
    double outer = 50 + 200 + 64 * (1.0 / 8 + g);
    comet_model_coll_cost c = comet_model_coll_time(&hw, COMET_MODEL_ALLREDUCE, 4, 64, 0);
    NEAR(c.cycles, inner + outer);
    assert_int_equal(c.alg, COMET_MODEL_ALG_TREE);
    /* a group inside the first level never crosses the switch */
    NEAR(comet_model_coll_time(&hw, COMET_MODEL_ALLREDUCE, 2, 64, 0).cycles, inner);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collectives_by_hand),
        cmocka_unit_test(test_collectives_levels),
        cmocka_unit_test(test_allgatherv_fit),
        cmocka_unit_test(test_collectives_topologies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
