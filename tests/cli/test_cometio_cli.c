/* predict on COMET's four files from the CLI: detected by content, both
 * evaluations in the JSON (COMET's numbers match COMET 917af0d's run of the
 * same files, edge_c1: 63,768 cycles, 1.612398e7 pJ), every dropped field
 * listed; a malformed file exits 2 naming file:line and the field. */
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

/* Runs `comet ARGS`; *out gets stdout (or stderr with err_too) */
static int run(const char *args, int err_too, char **out)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s %s", getenv("COMET_BINARY"), args,
        err_too ? "2>&1 >/dev/null" : "2>/dev/null");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *buf = calloc(1, 1);
    size_t len = 0;
    char chunk[4096];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, p)) > 0) {
        buf = realloc(buf, len + r + 1);
        assert_non_null(buf);
        memcpy(buf + len, chunk, r);
        len += r;
        buf[len] = '\0';
    }
    int st = pclose(p);
    *out = buf;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char args[4096];

static const char *files(const char *consts, const char *extra)
{
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(args, sizeof args,
        "predict --hw %s/tests/fixtures/cometio/edge-arch.yaml "
        "--op %s/tests/fixtures/cometio/gemm-softmax-problem.yaml "
        "--mapping %s/tests/fixtures/cometio/gemm-softmax-mapping.yaml "
        "--constants %s/tests/fixtures/cometio/%s %s",
        src, src, src, src, consts, extra);
    return args;
}

static void test_json(void **s)
{
    (void)s;
    char *out;
    assert_int_equal(run(files("edge_c1-const.yaml", "--json"), 0, &out), 0);
    json_t *j = json_loads(out, 0, NULL);
    free(out);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "comet.cometio.v1");
    json_t *cc = json_object_get(j, "comet_compatible");
    assert_true(fabs(json_number_value(json_object_get(cc, "cycles")) - 63768) < 0.5);
    assert_true(fabs(json_number_value(json_object_get(cc, "energy_pj")) / 1.612398e7 - 1) < 1e-5);
    json_t *own = json_object_get(j, "comet");
    assert_string_equal(json_string_value(json_object_get(own, "op")), "gemm_softmax");
    double c = json_number_value(json_object_get(own, "cycles"));
    assert_true(c > 0);
    /* the collectives and the core-level tiles are dropped, and said so */
    json_t *dr = json_object_get(j, "dropped");
    int coll = 0, core = 0;
    for (size_t i = 0; i < json_array_size(dr); i++) {
        const char *d = json_string_value(json_array_get(dr, i));
        coll += strstr(d, "CollectiveOperation") != NULL;
        core += strstr(d, "core level") != NULL;
        assert_non_null(strstr(d, ".yaml:"));
    }
    assert_int_equal(coll, 2);
    assert_true(core >= 1);
    json_decref(j);
}

static void test_text_and_explain(void **s)
{
    (void)s;
    char *out;
    assert_int_equal(run(files("cloud_c1-const.yaml", "--explain"), 0, &out), 2);
    free(out);
    /* cloud constants on the edge architecture: a 4x4 split on a 2x2 mesh */
    const char *src = getenv("COMET_SOURCE_DIR");
    char a[4096];
    snprintf(a, sizeof a,
        "predict --hw %s/tests/fixtures/cometio/cloud-arch.yaml --op "
        "%s/tests/fixtures/cometio/gemm-softmax-problem.yaml --mapping "
        "%s/tests/fixtures/cometio/gemm-softmax-mapping.yaml --constants "
        "%s/tests/fixtures/cometio/cloud_c1-const.yaml --explain",
        src, src, src, src);
    assert_int_equal(run(a, 0, &out), 0);
    assert_non_null(strstr(out, "68898 cycles"));
    assert_non_null(strstr(out, "difference by term"));
    assert_non_null(strstr(out, "dropped by the translation"));
    assert_non_null(strstr(out, "translated description"));
    free(out);
}

static void test_errors(void **s)
{
    (void)s;
    char *err;
    /* no constants: the problem's M is a symbol */
    const char *src = getenv("COMET_SOURCE_DIR");
    char a[4096];
    snprintf(a, sizeof a,
        "predict --hw %s/tests/fixtures/cometio/edge-arch.yaml --op "
        "%s/tests/fixtures/cometio/gemm-softmax-problem.yaml --mapping "
        "%s/tests/fixtures/cometio/gemm-softmax-mapping.yaml",
        src, src, src);
    assert_int_equal(run(a, 1, &err), 2);
    assert_non_null(strstr(err, "comet: "));
    assert_non_null(strstr(err, "gemm-softmax-problem.yaml:"));
    free(err);
    /* a COMET problem with comet's own hardware */
    snprintf(a, sizeof a,
        "predict --hw edge --op %s/tests/fixtures/cometio/gemm-softmax-problem.yaml", src);
    assert_int_equal(run(a, 1, &err), 2);
    assert_non_null(strstr(err, "COMET problem file"));
    free(err);
    /* explore does not take COMET files */
    snprintf(a, sizeof a, "explore --hw %s/tests/fixtures/cometio/edge-arch.yaml --op x", src);
    assert_int_equal(run(a, 1, &err), 2);
    free(err);
    /* --constants alone */
    assert_int_equal(
        run("predict --hw edge --op gemm_softmax --shape M=64,N=64,K=64 --constants x", 1, &err),
        2);
    assert_non_null(strstr(err, "--constants"));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_text_and_explain),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
