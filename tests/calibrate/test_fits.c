/* Calibration fits recover known parameters from noisy synthetic data. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_calibrate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* deterministic multiplicative noise in [1-a, 1+a] */
static double noise(unsigned *s, double a)
{
    *s = *s * 1664525u + 1013904223u;
    return 1.0 + a * (2.0 * ((*s >> 8) & 0xFFFF) / 65535.0 - 1.0);
}

static int near(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fabs(want);
}

static void test_line_recovers_alpha_beta(void **st)
{
    (void)st;
    double x[40], y[40], alpha = 1.5e-6, beta = 2.0e-10;
    unsigned s = 7;
    for (int i = 0; i < 40; i++) {
        x[i] = pow(2, i % 26 + 2);
        y[i] = (alpha + beta * x[i]) * noise(&s, 0.03);
    }
    comet_calibrate_line l;
    assert_int_equal(comet_calibrate_fit_line(x, y, 40, &l), 0);
    assert_true(near(l.a, alpha, 0.05));
    assert_true(near(l.b, beta, 0.05));
    assert_true(l.r2 > 0.9);
    assert_int_not_equal(comet_calibrate_fit_line(x, y, 1, &l), 0);
}

static void test_nnls_nonnegative(void **st)
{
    (void)st;
    /* the unconstrained intercept is negative: NNLS pins it at 0 */
    double X[20], y[10];
    for (int i = 0; i < 10; i++) {
        X[2 * i] = 1;
        X[2 * i + 1] = i + 1;
        y[i] = 2.0 * (i + 1) - 0.5 + 0.01 * i;
    }
    comet_calibrate_lsq f;
    assert_int_equal(comet_calibrate_nnls(X, y, NULL, 10, 2, &f), 0);
    assert_true(f.coef[0] == 0 && f.pinned[0]);
    assert_true(f.coef[1] > 1.8 && f.coef[1] < 2.1);
    /* bad input is refused, not crashed on */
    y[3] = NAN;
    assert_int_equal(comet_calibrate_nnls(X, y, NULL, 10, 2, &f), -EINVAL);
    y[3] = -1;
    assert_int_equal(comet_calibrate_nnls(X, y, NULL, 10, 2, &f), -EINVAL);
    assert_int_equal(comet_calibrate_nnls(X, y, NULL, 10, 4, &f), -EINVAL);
}

/* alpha, beta, gamma of the TRG formulas from several algorithms and rank
 * counts (identifiable), weighted 1/T^2, 2% noise: within 5%. */
static void test_trg_recovers_alpha_beta_gamma(void **st)
{
    (void)st;
    const double alpha = 2e-6, beta = 4e-10, gamma = 1.5e-10;
    const char *algs[3][2] = { { "allreduce", "recursive_doubling" },
        { "allreduce", "reduce_scatter_allgather" }, { "allgather", "ring" } };
    const int ps[3] = { 2, 4, 8 };
    double X[3 * 200], y[200];
    size_t n = 0;
    unsigned s = 42;
    for (int a = 0; a < 3; a++)
        for (int pi = 0; pi < 3; pi++)
            for (int e = 3; e <= 22; e += 2) {
                double row[3];
                assert_int_equal(
                    comet_calibrate_trg_row(algs[a][0], algs[a][1], pow(2, e), ps[pi], row, NULL),
                    1);
                memcpy(X + 3 * n, row, sizeof row);
                y[n++] = (row[0] * alpha + row[1] * beta + row[2] * gamma) * noise(&s, 0.02);
            }
    comet_calibrate_lsq f;
    assert_int_equal(comet_calibrate_nnls(X, y, NULL, n, 3, &f), 0);
    for (int j = 0; j < 3; j++)
        assert_int_equal(f.state[j], COMET_CALIBRATE_FITTED);
    assert_int_equal(f.rank, 3);
    assert_true(near(f.coef[0], alpha, 0.05));
    assert_true(near(f.coef[1], beta, 0.05));
    assert_true(near(f.coef[2], gamma, 0.05));
    assert_true(f.r2 > 0.99);
}

/* At p = 2 recursive doubling is alpha + n (beta + gamma): collinear. The
 * fit says so and fits the identifiable sum. */
static void test_trg_collinear_at_p2(void **st)
{
    (void)st;
    const double alpha = 1e-6, beta = 3e-10, gamma = 1e-10;
    double X[3 * 20], y[20];
    unsigned s = 9;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(comet_calibrate_trg_row(
                             "allreduce", "recursive_doubling", pow(2, i + 2), 2, X + 3 * i, NULL),
            1);
        y[i] = (alpha + X[3 * i + 1] * (beta + gamma)) * noise(&s, 0.02);
    }
    comet_calibrate_lsq f;
    assert_int_equal(comet_calibrate_nnls(X, y, NULL, 20, 3, &f), 0);
    assert_int_equal(f.state[2], COMET_CALIBRATE_MERGED);
    assert_int_equal(f.owner[2], 1);
    assert_true(near(f.ratio[2], 1.0, 1e-9));
    assert_int_equal(f.rank, 2);
    assert_true(near(f.coef[0], alpha, 0.05));
    assert_true(near(f.coef[1], beta + gamma, 0.05));
    /* allgather has no reduction term: gamma is absent, not zero-fitted */
    double row[3];
    assert_int_equal(comet_calibrate_trg_row("allgather", "ring", 1024, 2, row, NULL), 1);
    assert_true(row[0] == 1 && row[1] == 1024 && row[2] == 0); /* n = 2048, (p-1)/p n = 1024 */
}

static void test_trg_rows(void **st)
{
    (void)st;
    double r[3];
    const char *f;
    /* Rabenseifner, p = 4, n = 1000: 2 lg p = 4, 2 (3/4) n = 1500, (3/4) n = 750 */
    assert_int_equal(
        comet_calibrate_trg_row("allreduce", "reduce_scatter_allgather", 1000, 4, r, &f), 1);
    assert_true(r[0] == 4 && r[1] == 1500 && r[2] == 750);
    /* bcast scatter + ring allgather, p = 8: (3 + 7) alpha + 2 (7/8) n beta */
    assert_int_equal(comet_calibrate_trg_row("bcast", "scatter_ring_allgather", 800, 8, r, &f), 1);
    assert_true(r[0] == 10 && r[1] == 1400 && r[2] == 0);
    /* MPICH's own choice has no formula: generic alpha + n beta */
    assert_int_equal(comet_calibrate_trg_row("allreduce", "auto", 64, 2, r, &f), 0);
    assert_true(r[0] == 1 && r[1] == 64 && r[2] == 0);
    assert_int_equal(comet_calibrate_trg_row("gather", "x", 64, 2, r, &f), -EINVAL);
    assert_int_equal(comet_calibrate_trg_row("allreduce", "auto", 64, 0, r, &f), -EINVAL);
}

static void test_hockney_breakpoint(void **st)
{
    (void)st;
    /* eager below 16 KiB: 0.8 us + m / 10 GB/s; rendezvous: 5 us + m / 9 GB/s */
    double x[24], y[24];
    unsigned s = 3;
    int n = 0;
    for (int e = 2; e <= 25; e++, n++) {
        x[n] = pow(2, e);
        double t = x[n] < 16384 ? 0.8e-6 + x[n] / 10e9 : 5e-6 + x[n] / 9e9;
        y[n] = t * noise(&s, 0.02);
    }
    comet_calibrate_hockney h;
    assert_int_equal(comet_calibrate_fit_hockney(x, y, (size_t)n, &h), 0);
    assert_true(h.breakpoint == 16384);
    assert_true(near(h.lo.a, 0.8e-6, 0.05));
    assert_true(near(h.hi.a, 5e-6, 0.05));
    assert_true(near(1 / h.hi.b, 9e9, 0.05));
    assert_true(near(comet_calibrate_hockney_eval(&h, 1 << 20), 5e-6 + (1 << 20) / 9e9, 0.05));
}

/* Three protocols (shm tiny, eager, rendezvous), repeated sizes as from
 * several launches: both breakpoints found, one piece when there is none. */
static void test_piecewise_three(void **st)
{
    (void)st;
    double key[96], X[192], y[96];
    unsigned s = 5;
    size_t n = 0;
    for (int e = 2; e <= 23; e++)
        for (int rep = 0; rep < 3; rep++, n++) {
            double m = pow(2, e);
            double t = m < 256 ? 0.25e-6 + m * 1e-10
                : m < 32768    ? 0.7e-6 + m * 2e-10
                               : 6e-6 + m * 1.5e-10;
            key[n] = m;
            X[2 * n] = 1;
            X[2 * n + 1] = m;
            y[n] = t * noise(&s, 0.02);
        }
    comet_calibrate_piecewise pw;
    assert_int_equal(comet_calibrate_fit_piecewise(key, X, y, n, 2, 3, 3, &pw), 0);
    assert_int_equal(pw.nseg, 3);
    assert_true(pw.from[1] == 256 && pw.from[2] == 32768);
    assert_true(near(pw.seg[2].coef[0], 6e-6, 0.05));
    /* a single line stays one piece */
    for (size_t i = 0; i < n; i++)
        y[i] = (1e-6 + key[i] * 1e-10) * noise(&s, 0.02);
    assert_int_equal(comet_calibrate_fit_piecewise(key, X, y, n, 2, 3, 3, &pw), 0);
    assert_int_equal(pw.nseg, 1);
    /* unsorted keys are refused */
    key[5] = 1;
    assert_int_equal(comet_calibrate_fit_piecewise(key, X, y, n, 2, 3, 3, &pw), -EINVAL);
}

static void test_plateaus(void **st)
{
    (void)st;
    /* 3 levels: 200 GB/s to 1 MiB, 90 GB/s to 32 MiB, 30 GB/s beyond; sqrt(2) steps */
    double sz[64], bw[64];
    comet_calibrate_plateau lv[8];
    unsigned s = 11;
    int n = 0;
    for (int k = 0; k <= 34; k++, n++) {
        double w = pow(2, 12 + k / 2.0);
        sz[n] = w;
        bw[n] = (w <= (1 << 20) ? 200 : w <= (32 << 20) ? 90 : 30) * noise(&s, 0.03);
    }
    int nl = comet_calibrate_plateaus(sz, bw, (size_t)n, lv, 8);
    assert_int_equal(nl, 3);
    assert_true(
        near(lv[0].gbs, 200, 0.03) && near(lv[1].gbs, 90, 0.03) && near(lv[2].gbs, 30, 0.03));
    assert_true(near(lv[0].to_bytes, 1 << 20, 0.01) && near(lv[1].to_bytes, 32 << 20, 0.01));
    /* inside a level its value, between levels log-linear, beyond the ends flat */
    assert_true(comet_calibrate_plateau_predict(lv, nl, 8192) == lv[0].gbs);
    double mid = comet_calibrate_plateau_predict(lv, nl, 1.2 * (1 << 20));
    assert_true(mid < lv[0].gbs && mid > lv[1].gbs);
    assert_true(comet_calibrate_plateau_predict(lv, nl, 1e12) == lv[2].gbs);
    assert_int_equal(comet_calibrate_plateaus(sz, bw, 0, lv, 8), 0);
    assert_int_equal(comet_calibrate_plateaus(sz, bw, 4, lv, 0), -EINVAL);
}

static void test_saturating(void **st)
{
    (void)st;
    double F[20], E[20], emax, fh;
    unsigned s = 5;
    for (int i = 0; i < 20; i++) {
        F[i] = pow(10, 5 + i * 0.3);
        E[i] = 0.9 * F[i] / (F[i] + 3e7) * noise(&s, 0.02);
    }
    assert_int_equal(comet_calibrate_fit_saturating(F, E, 20, &emax, &fh), 0);
    assert_true(near(emax, 0.9, 0.05));
    assert_true(near(fh, 3e7, 0.1));
}

static void test_err_stats(void **st)
{
    (void)st;
    double e[5] = { 0.1, -0.3, 0.2, 0.05, -0.5 }, med, p90;
    comet_calibrate_err_stats(e, 5, &med, &p90);
    assert_true(fabs(med - 0.2) < 1e-12);
    assert_true(p90 > 0.3 && p90 <= 0.5);
    comet_calibrate_err_stats(e, 0, &med, &p90);
    assert_true(isnan(med) && isnan(p90));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_line_recovers_alpha_beta),
        cmocka_unit_test(test_nnls_nonnegative),
        cmocka_unit_test(test_trg_recovers_alpha_beta_gamma),
        cmocka_unit_test(test_trg_collinear_at_p2),
        cmocka_unit_test(test_trg_rows),
        cmocka_unit_test(test_hockney_breakpoint),
        cmocka_unit_test(test_piecewise_three),
        cmocka_unit_test(test_plateaus),
        cmocka_unit_test(test_saturating),
        cmocka_unit_test(test_err_stats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
