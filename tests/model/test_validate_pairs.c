/* Validation winners: fused/unfused pairing and the clear-winner rule
 * (measured medians' 95% CIs apart), on hand-built rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model_validate.h"

#include <math.h>
#include <string.h>

static comet_model_vrow row(const char *op, const char *var, double M, int thr, double meas,
    double lo, double hi, double pred)
{
    comet_model_vrow r;
    memset(&r, 0, sizeof r);
    strcpy(r.op, op);
    strcpy(r.variant, var);
    r.M = M;
    r.N = 512;
    r.K = 64;
    r.threads = thr;
    r.ranks = 1;
    r.measured_s = meas;
    r.ci_lo_s = lo;
    r.ci_hi_s = hi;
    r.predicted_s = pred;
    r.rel_err = pred > meas ? (pred - meas) / meas : (meas - pred) / meas;
    return r;
}

/* Records sampled beside busy tenants are counted, and the error is also
 * given over the others (unknown load counts as quiet). */
static void test_busy_rows(void **s)
{
    (void)s;
    comet_model_vrow rows[] = {
        row("gemm_softmax", "fused", 256, 1, 1.0, 0.98, 1.02, 1.1), /* 10% */
        row("gemm_softmax", "unfused", 256, 1, 2.0, 1.9, 2.1, 2.4), /* 20% */
        row("gemm_softmax", "fused", 512, 1, 2.0, 1.9, 2.1, 1.0), /* 50%, busy */
        row("gemm_softmax", "unfused", 512, 1, 1.0, 0.9, 1.1, 1.3), /* 30%, unknown */
    };
    rows[0].busy = 0.05;
    rows[1].busy = COMET_RESULTS_BUSY_MAX;
    rows[2].busy = 0.6;
    rows[3].busy = NAN;
    comet_model_vsum v;
    comet_model_validate_summary(rows, 4, &v);
    assert_int_equal(v.busy_rows, 1);
    assert_true(fabs(v.quiet_median_rel_err - 0.2) < 1e-9);
    assert_true(fabs(v.median_rel_err - 0.25) < 1e-9);
}

/* Multi-thread rows by where their threads sat: across when some pass saw
 * more than twice the lowest core-to-core latency of the set; rows without
 * the measurement (0 or NaN) are in neither group. */
static void test_core_to_core_rows(void **s)
{
    (void)s;
    comet_model_vrow rows[] = {
        row("attention", "fused", 256, 2, 1.0, 0.98, 1.02, 1.1), /* 10%, one cache */
        row("attention", "fused", 512, 2, 1.0, 0.98, 1.02, 1.3), /* 30%, both */
        row("attention", "unfused", 512, 2, 1.0, 0.98, 1.02, 1.5), /* 50%, across */
        row("attention", "unfused", 256, 1, 1.0, 0.98, 1.02, 1.9), /* 90%, 1 thread */
        row("attention", "fused", 128, 2, 1.0, 0.98, 1.02, 1.7), /* 70%, unknown */
    };
    rows[0].c2c_lo_ns = 24, rows[0].c2c_hi_ns = 40; /* < 2 x 24: one cache */
    rows[1].c2c_lo_ns = 26, rows[1].c2c_hi_ns = 160;
    rows[2].c2c_lo_ns = 150, rows[2].c2c_hi_ns = 170;
    rows[4].c2c_lo_ns = rows[4].c2c_hi_ns = NAN;
    comet_model_vsum v;
    comet_model_validate_summary(rows, 5, &v);
    assert_true(v.c2c_floor_ns == 24);
    assert_int_equal(v.c2c_rows, 3);
    assert_int_equal(v.across_rows, 2);
    assert_true(fabs(v.across_median_rel_err - 0.4) < 1e-9);
    assert_true(fabs(v.near_median_rel_err - 0.1) < 1e-9);
    /* no row measured: no floor, no groups */
    comet_model_validate_summary(rows + 3, 2, &v);
    assert_true(isnan(v.c2c_floor_ns));
    assert_int_equal(v.c2c_rows, 0);
    assert_true(isnan(v.across_median_rel_err) && isnan(v.near_median_rel_err));
}

/* Which records count as sampled beside busy tenants: others' share while
 * sampling; where it was not measured (null: the distributed kernels'
 * busy-polling ranks) or the idle gate timed out (older distributed records
 * wrote 0 for the unmeasured share), at least the gate's reading before. */
static void test_record_busy(void **s)
{
    (void)s;
    comet_results_record r;
    memset(&r, 0, sizeof r);
    r.load.busy_others = 0.5;
    r.load.busy_during = 0.05;
    r.load.gate = "idle (previous set)";
    assert_true(comet_model_record_busy(&r) == 0.05); /* measured, gate passed */
    r.load.gate = "timeout";
    r.load.busy_during = 0;
    r.load.busy_others = 1.0;
    assert_true(comet_model_record_busy(&r) == 1.0); /* the gate gave up: busy */
    r.load.gate = "idle";
    r.load.busy_during = NAN;
    r.load.busy_others = 0.02;
    assert_true(comet_model_record_busy(&r) == 0.02); /* not measured: the gate's */
    r.load.busy_others = NAN;
    assert_true(comet_model_record_busy(&r) == 0);
    r.load.busy_during = 0.3;
    r.load.gate = "timeout";
    assert_true(comet_model_record_busy(&r) == 0.3);
}

static void test_pairs_and_clear_winners(void **s)
{
    (void)s;
    comet_model_vrow rows[] = {
        /* clear: fused 1.0 [0.98,1.02] vs unfused 2.0 [1.9,2.1]; predicted right */
        row("gemm_softmax", "fused", 256, 1, 1.0, 0.98, 1.02, 1.1),
        row("gemm_softmax", "unfused", 256, 1, 2.0, 1.9, 2.1, 2.2),
        /* tie: CIs overlap; predicted wrong, but it does not count as decided */
        row("gemm_softmax", "fused", 1024, 1, 1.00, 0.95, 1.05, 1.2),
        row("gemm_softmax", "unfused", 1024, 1, 1.02, 0.97, 1.07, 1.1),
        /* clear and predicted wrong */
        row("gemm_layernorm", "fused", 256, 1, 3.0, 2.9, 3.1, 2.0),
        row("gemm_layernorm", "unfused", 256, 1, 1.0, 0.99, 1.01, 2.5),
        /* no partner (other thread count): not a pair */
        row("gemm_layernorm", "fused", 256, 2, 1.0, 0.9, 1.1, 1.0),
    };
    const int n = (int)(sizeof rows / sizeof rows[0]);
    comet_model_vpair p[8];
    int np = comet_model_validate_pairs(rows, n, p, 8);
    assert_int_equal(np, 3);
    assert_int_equal(p[0].fused, 0);
    assert_int_equal(p[0].unfused, 1);
    assert_true(p[0].decided && p[0].agrees);
    assert_true(p[0].measured_speedup == 2.0);
    assert_false(p[1].decided);
    assert_false(p[1].agrees);
    assert_true(p[2].decided);
    assert_false(p[2].agrees);
    /* cap respected */
    assert_int_equal(comet_model_validate_pairs(rows, n, p, 1), 1);

    comet_model_vsum v;
    comet_model_validate_summary(rows, n, &v);
    assert_int_equal(v.rows, n);
    assert_int_equal(v.pairs, 3);
    assert_int_equal(v.winner_agrees, 1);
    assert_int_equal(v.decided, 2);
    assert_int_equal(v.decided_agrees, 1);
}

static void test_rows_without_ci_count_as_decided(void **s)
{
    (void)s;
    comet_model_vrow rows[] = {
        row("attention", "fused", 256, 1, 1.0, 0, 0, 1.0),
        row("attention", "unfused", 256, 1, 1.01, 0, 0, 1.2),
    };
    comet_model_vsum v;
    comet_model_validate_summary(rows, 2, &v);
    assert_int_equal(v.pairs, 1);
    assert_int_equal(v.decided, 1);
    assert_int_equal(v.decided_agrees, 1);
}

/* Attention rows pair only with the same heads and mask; the per-shape
 * figures count the fused kernel at its default tiles, not tile sweeps. */
static void test_heads_mask_and_sweeps(void **s)
{
    (void)s;
    comet_model_vrow rows[] = {
        row("attention", "unfused", 1024, 1, 10.0, 9.9, 10.1, 6.0),
        row("attention", "unfused", 1024, 1, 9.0, 8.9, 9.1, 9.0),
        row("attention", "fused", 1024, 1, 5.0, 4.9, 5.1, 4.5),
        row("attention", "fused", 1024, 1, 8.0, 7.9, 8.1, 8.5),
        row("attention", "fused", 1024, 1, 9.5, 9.4, 9.6, 8.8),
    };
    rows[0].causal = rows[2].causal = 1;
    for (int i = 0; i < 5; i++)
        rows[i].heads = 4;
    rows[4].swept = 1; /* a tile-sweep point, predicted wrong */
    comet_model_vpair p[8];
    int np = comet_model_validate_pairs(rows, 5, p, 8);
    assert_int_equal(np, 3);
    assert_int_equal(p[0].unfused, 0); /* causal with causal */
    assert_int_equal(p[1].unfused, 1);
    assert_int_equal(p[2].unfused, 1);
    assert_true(p[2].swept && !p[0].swept);
    comet_model_vsum v;
    comet_model_validate_summary(rows, 5, &v);
    assert_int_equal(v.pairs, 3);
    assert_int_equal(v.decided_agrees, 2);
    assert_int_equal(v.shapes, 2);
    assert_int_equal(v.shape_decided, 2);
    assert_int_equal(v.shape_decided_agrees, 2);
    /* other heads: no partner */
    rows[3].heads = 8;
    assert_int_equal(comet_model_validate_pairs(rows, 5, p, 8), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pairs_and_clear_winners),
        cmocka_unit_test(test_busy_rows),
        cmocka_unit_test(test_core_to_core_rows),
        cmocka_unit_test(test_record_busy),
        cmocka_unit_test(test_rows_without_ci_count_as_decided),
        cmocka_unit_test(test_heads_mask_and_sweeps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
