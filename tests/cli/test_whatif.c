/* predict/explore what-ifs from the CLI: --sweep (shape dimensions and
 * hardware parameters with units) and --sensitivity; bad input exits 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Runs `comet ARGS` (stderr discarded); *out gets stdout as JSON (or NULL). */
static int run(const char *args, json_t **out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>/dev/null", getenv("COMET_BINARY"), args);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *buf = NULL;
    size_t cap = 0, len = 0;
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, p)) > 0) {
        buf = realloc(buf, cap = len + r + 1);
        assert_non_null(buf);
        memcpy(buf + len, chunk, r);
        len += r;
        buf[len] = '\0';
    }
    int st = pclose(p);
    if (out)
        *out = buf ? json_loads(buf, 0, NULL) : NULL;
    free(buf);
    (void)cap;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_sweep_bandwidth(void **s)
{
    (void)s;
    json_t *j = NULL;
    assert_int_equal(run("predict --hw edge --op gemm_softmax --shape M=1024,N=1024,K=256 "
                         "--sweep dram_bw=12.5GB/s,25GB/s,50GB/s,100GB/s --json",
                         &j),
        0);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "comet.sweep.v1");
    json_t *rows = json_object_get(j, "rows");
    assert_int_equal(json_array_size(rows), 4);
    double prev = INFINITY;
    for (size_t i = 0; i < 4; i++) {
        json_t *r = json_array_get(rows, i);
        const double f = json_number_value(json_object_get(r, "best_fused_s"));
        assert_true(f > 0 && f <= prev * (1 + 1e-12)); /* more bandwidth never slower */
        prev = f;
    }
    assert_true(json_number_value(json_object_get(json_array_get(rows, 1), "value")) == 25e9);
    json_decref(j);
}

static void test_sweep_shape_and_sensitivity(void **s)
{
    (void)s;
    json_t *j = NULL;
    assert_int_equal(run("explore --hw cloud --op attention --shape heads=4,lq=512,lk=512,d=64 "
                         "--sweep lk=256,1k,4k --json",
                         &j),
        0);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 3);
    json_decref(j);
    assert_int_equal(
        run("explore --hw edge --op gemm_layernorm --shape M=512,N=512,K=128 --sensitivity --json",
            &j),
        0);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "comet.sensitivity.v1");
    assert_true(json_array_size(json_object_get(j, "rows")) >= 8);
    json_decref(j);
}

static void test_bad_input(void **s)
{
    (void)s;
    const char *base = "predict --hw edge --op gemm_softmax --shape M=64,N=64,K=64 ";
    const char *bad[]
        = { "--sweep nosuch=1,2", "--sweep dram_bw=fast", "--sweep dram_bw=25GHz", "--sweep M=0",
              "--sweep clusters=2.5", "--sweep M=1 --sensitivity", "--sweep =3", "--sweep M" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char a[512];
        snprintf(a, sizeof a, "%s%s", base, bad[i]);
        assert_int_equal(run(a, NULL), 2);
    }
}

/* The system model's sweep as text: predict costs its pinned execution
 * only, so the other column and the speedup are dashes, never "nan". */
static void test_system_sweep_text(void **s)
{
    (void)s;
    char cmd[1024], out[4096] = "";
    snprintf(cmd, sizeof cmd,
        "'%s' predict --hw sn10x8-torus --workload gpt3-175b --phase forward --batch 64 "
        "--no-seq-parallel --execution dataflow --parallel tp=4,pp=1,dp=2,microbatch=8 "
        "--sweep dram_bw=100GB/s,300GB/s 2>/dev/null",
        getenv("COMET_BINARY"));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    const size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    assert_int_equal(pclose(p), 0);
    assert_non_null(strstr(out, "100GB/s"));
    assert_null(strstr(out, "nan"));
    const char *row = strstr(out, "300GB/s");
    assert_non_null(row);
    assert_non_null(strstr(row, " - "));
}

/* Options of another subcommand are refused, never silently ignored; -v on
 * predict says what the search did. */
static void test_no_ignored_options(void **s)
{
    (void)s;
    const char *base = "--hw edge --op gemm_softmax --shape M=64,N=64,K=64";
    char a[512];
    snprintf(a, sizeof a, "predict %s --pareto /tmp/comet-never.csv", base);
    assert_int_equal(run(a, NULL), 2);
    snprintf(a, sizeof a, "explore %s --mapping fused", base);
    assert_int_equal(run(a, NULL), 2);
    snprintf(a, sizeof a, "predict %s --out /tmp/comet-never", base);
    assert_int_equal(run(a, NULL), 2);
    assert_int_equal(run("report --json", NULL), 2);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' predict %s -v 2>&1 >/dev/null", getenv("COMET_BINARY"), base);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char line[512] = "";
    assert_non_null(fgets(line, sizeof line, p));
    pclose(p);
    assert_non_null(strstr(line, "searched"));
}

int main(void)
{
    if (!getenv("COMET_BINARY"))
        return 77;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep_bandwidth),
        cmocka_unit_test(test_sweep_shape_and_sensitivity),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_system_sweep_text),
        cmocka_unit_test(test_no_ignored_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
