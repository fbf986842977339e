/* comet compare: matching, ratios, intervals and verdicts on results
 * folders; parameters and model latencies on hardware descriptions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fixture[1024];

static json_t *run_compare(const char *a, const char *b, int *rc)
{
    char err[COMET_ERRLEN] = "";
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    assert_non_null(fp);
    *rc = comet_reports_compare(a, b, 1, fp, err, sizeof err);
    fclose(fp);
    json_t *j = *rc == 0 ? json_loads(buf, 0, NULL) : NULL;
    if (*rc)
        assert_true(err[0] != '\0');
    free(buf);
    return j;
}

/* A copy of the fixture whose kernel records run 2x slower (median and CI). */
static void slow_copy(const char *dst)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf %s && cp -r %s %s", dst, fixture, dst);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/results", dst);
    char path[4200];
    snprintf(cmd, sizeof cmd, "ls %s/results/kernels-*.jsonl", dst);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = '\0';
    FILE *in = fopen(path, "r");
    assert_non_null(in);
    char *out = NULL;
    size_t olen = 0;
    FILE *o = open_memstream(&out, &olen);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        json_t *r = json_loads(line, 0, NULL);
        json_t *st = r ? json_object_get(r, "stats") : NULL;
        if (st && json_object_get(st, "median_s")) {
            const char *keys[] = { "median_s", "ci_lo_s", "ci_hi_s" };
            for (int k = 0; k < 3; k++) {
                json_t *v = json_object_get(st, keys[k]);
                if (json_is_number(v))
                    json_object_set_new(st, keys[k], json_real(2 * json_number_value(v)));
            }
        }
        char *t = r ? json_dumps(r, JSON_COMPACT) : NULL;
        fprintf(o, "%s\n", t ? t : line);
        free(t);
        json_decref(r);
    }
    free(line);
    fclose(in);
    fclose(o);
    in = fopen(path, "w");
    assert_non_null(in);
    fwrite(out, 1, olen, in);
    fclose(in);
    free(out);
}

static void test_results_self(void **s)
{
    (void)s;
    int rc;
    json_t *j = run_compare(fixture, fixture, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "comet.compare.v1");
    json_t *sum = json_object_get(j, "summary");
    assert_true(json_integer_value(json_object_get(sum, "matched")) > 10);
    assert_int_equal(json_integer_value(json_object_get(sum, "b_faster")), 0);
    assert_int_equal(json_integer_value(json_object_get(sum, "b_slower")), 0);
    assert_int_equal(json_integer_value(json_object_get(sum, "only_in_a")), 0);
    assert_true(
        fabs(json_number_value(json_object_get(sum, "geomean_ratio_b_over_a")) - 1) < 1e-12);
    json_decref(j);
}

static void test_results_slower(void **s)
{
    (void)s;
    char dst[256];
    snprintf(dst, sizeof dst, "/tmp/comet-compare-%ld", (long)getpid());
    slow_copy(dst);
    int rc;
    json_t *j = run_compare(fixture, dst, &rc);
    assert_int_equal(rc, 0);
    size_t i, kernels = 0;
    json_t *row;
    json_array_foreach(json_object_get(j, "rows"), i, row)
    {
        const char *m = json_string_value(json_object_get(row, "measurement"));
        if (strncmp(m, "kernel ", 7))
            continue;
        kernels++;
        assert_true(fabs(json_number_value(json_object_get(row, "ratio_b_over_a")) - 2) < 1e-9);
        if (json_is_number(json_object_get(row, "ratio_lo"))) {
            assert_true(json_number_value(json_object_get(row, "ratio_lo")) <= 2);
            assert_true(json_number_value(json_object_get(row, "ratio_hi")) >= 2);
        }
    }
    assert_true(kernels > 0);
    assert_true(json_integer_value(json_object_get(json_object_get(j, "summary"), "b_slower")) > 0);
    json_decref(j);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dst);
    assert_int_equal(system(cmd), 0);
}

static void test_hardware_and_bad_input(void **s)
{
    (void)s;
    int rc;
    json_t *j = run_compare("edge", "edge", &rc);
    assert_int_equal(rc, 0);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(j, "rows"), i, row)
        assert_true(fabs(json_number_value(json_object_get(row, "ratio_b_over_a")) - 1) < 1e-12);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 6);
    json_decref(j);
    /* a results folder against a hardware description: refused, named */
    j = run_compare(fixture, "edge", &rc);
    assert_null(j);
    assert_int_equal(rc, -EINVAL);
    j = run_compare("/nonexistent-hw.yaml", "edge", &rc);
    assert_null(j);
    assert_true(rc < 0);
}

int main(void)
{
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(fixture, sizeof fixture, "%s/tests/fixtures/report", src ? src : ".");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_results_self),
        cmocka_unit_test(test_results_slower),
        cmocka_unit_test(test_hardware_and_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
