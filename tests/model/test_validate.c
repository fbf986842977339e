/* validate.c: the report fixture's records validated on its profile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_model_validate.h"
#include "comet_results.h"
#include "comet_util.h"
#include "mfixture.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* validate on the fixture records of a real quick run: every compound
 * record is predicted, fused/unfused pairs are counted. */
static void test_validate_fixture(void **s)
{
    (void)s;
    char prof[1024], res[1024], err[COMET_ERRLEN];
    const char *src = getenv("COMET_SOURCE_DIR") ? getenv("COMET_SOURCE_DIR") : COMET_SOURCE_DIR;
    snprintf(prof, sizeof prof, "%s/tests/fixtures/report/profile.json", src);
    snprintf(res, sizeof res, "%s/tests/fixtures/report/results", src);
    comet_model_hw hw;
    if (comet_model_hw_load(prof, &hw, err, sizeof err))
        fail_msg("%s", err);
    /* the profile's link fits are read from its calibration block */
    assert_true(hw.links.p2p_beta_s > 0);
    assert_true(hw.links.nfits > 0);
    comet_results_set set = { 0 };
    if (comet_results_load_path(res, NULL, &set, NULL, NULL, err, sizeof err))
        fail_msg("%s", err);
    const comet_results_record *recs = set.recs;
    const size_t n = set.n;
    size_t want = 0;
    for (size_t i = 0; i < n; i++) {
        const char *v = recs[i].variant;
        if ((recs[i].kind == COMET_RESULTS_KERNEL || recs[i].kind == COMET_RESULTS_DIST_KERNEL)
            && (!strcmp(v, "fused") || !strcmp(v, "unfused")))
            want++;
    }
    assert_true(want > 0);
    comet_model_vrow *rows = calloc(n, sizeof *rows);
    int nr = comet_model_validate_records(&hw, recs, n, rows, n);
    assert_int_equal(nr, (int)want);
    comet_model_vsum sum;
    comet_model_validate_summary(rows, nr, &sum);
    assert_int_equal(sum.rows, nr);
    assert_int_equal(sum.pairs, nr / 2); /* every record has its other variant */
    assert_true(sum.winner_agrees >= 0 && sum.winner_agrees <= sum.pairs);
    for (int i = 0; i < nr; i++)
        assert_true(rows[i].predicted_s > 0 && isfinite(rows[i].rel_err));
    assert_true(sum.median_rel_err <= sum.p90_rel_err);
    free(rows);
    comet_results_set_free(&set);
    comet_model_hw_free(&hw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
