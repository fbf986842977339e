/* bench gms's measurement race (bench_gms_race): after the first rounds a
 * configuration whose fastest round is beyond the margin of the best median
 * leaves the race; those within it, a configuration with one slow round
 * (others' load), and one with most rounds slow but one clean, stay; a
 * retired one stays retired. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bench_internal.h"

#include <errno.h>
#include <math.h>

static void test_race(void **st)
{
    (void)st;
    /* medians: 1.00, 1.08 (within 1.10), 1.25 (out), 1.02 with one round
     * 5x slow (a burst of load: the median ignores it), 2.0 (out) */
    const double a[4] = { 1.00, 1.01, 0.99, 1.00 }, b[4] = { 1.08, 1.07, 1.09, 1.08 },
                 c[4] = { 1.25, 1.26, 1.24, 1.25 }, d[4] = { 1.02, 5.0, 1.02, 1.03 },
                 e[4] = { 2.0, 2.0, 2.0, 2.0 };
    const double *figs[5] = { a, b, c, d, e };
    int nround[5] = { 4, 4, 4, 4, 4 }, active[5] = { 1, 1, 1, 1, 1 };
    assert_int_equal(bench_gms_race(figs, nround, active, 5, 1.10), 3);
    /* three rounds of four in others' bursts, one clean: median 2.95, but
     * the clean round is within reach of the best, so it stays */
    const double f[4] = { 3.0, 2.9, 1.01, 3.1 };
    const double *figs1[2] = { a, f };
    int act1[2] = { 1, 1 };
    assert_int_equal(bench_gms_race(figs1, nround, act1, 2, 1.10), 2);
    assert_int_equal(active[0], 1);
    assert_int_equal(active[1], 1);
    assert_int_equal(active[2], 0);
    assert_int_equal(active[3], 1);
    assert_int_equal(active[4], 0);
    /* a retired configuration is not judged again, even if its figures
     * would now pass; an active one that fell behind (2.0 against 1.02)
     * leaves */
    const double *figs2[5] = { e, b, a, d, e };
    assert_int_equal(bench_gms_race(figs2, nround, active, 5, 1.10), 2);
    assert_int_equal(active[0], 0);
    assert_int_equal(active[2], 0);
    /* margin 1: only the best (and exact ties) stay */
    int act2[5] = { 1, 1, 1, 1, 1 };
    const double *figs3[5] = { a, b, c, d, a };
    assert_int_equal(bench_gms_race(figs3, nround, act2, 5, 1.0), 2);
    assert_true(act2[0] && act2[4] && !act2[1] && !act2[3]);
}

static void test_race_bad(void **st)
{
    (void)st;
    const double a[2] = { 1, NAN };
    const double *figs[1] = { a };
    int nround[1] = { 2 }, active[1] = { 1 };
    assert_int_equal(bench_gms_race(figs, nround, active, 1, 0.9), -EINVAL);
    assert_int_equal(bench_gms_race(figs, nround, active, 65, 1.1), -EINVAL);
    assert_int_equal(bench_gms_race(NULL, nround, active, 1, 1.1), -EINVAL);
    assert_true(bench_gms_race(figs, nround, active, 1, 1.1) < 0); /* NaN figure */
    assert_int_equal(bench_gms_race(figs, nround, active, 0, 1.1), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_race),
        cmocka_unit_test(test_race_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
