/* One fast end-to-end pass of the main job's chain on tiny inputs: bench
 * memory, kernels and collectives -> calibrate -> validate -> predict on the
 * profile (with its interval) -> report. It checks that each stage's output
 * exists, parses and names what it should; no timing or accuracy is
 * asserted (the inputs are far too small for the fits to be good). */
/* cmocka needs these first, in this order */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];
static const char *bin;

static int setup(void **s)
{
    (void)s;
    bin = getenv("COMET_BINARY");
    snprintf(dir, sizeof dir, "/tmp/comet_e2e_XXXXXX");
    return bin && mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs fmt (%1$s: the binary, %2$s: the test's folder) with stdout to out
 * (or /dev/null); the exit code. */
static int sh(const char *out, const char *fmt)
{
    char cmd[2048], full[2300];
    snprintf(cmd, sizeof cmd, fmt, bin, dir);
    snprintf(full, sizeof full, "%s > %s", cmd, out ? out : "/dev/null");
    int st = system(full);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        print_error("failed (%d): %s\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_t *load(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    json_error_t e;
    json_t *j = json_load_file(p, 0, &e);
    if (!j)
        print_error("%s: %s (line %d)\n", p, e.text, e.line);
    return j;
}

static void test_chain(void **s)
{
    (void)s;
    char shapes[128], out[128];
    snprintf(shapes, sizeof shapes, "%s/tiny.yaml", dir);
    FILE *f = fopen(shapes, "w");
    assert_non_null(f);
    fputs("threads: [1, all]\n"
          "ops:\n"
          "  - op: gemm_softmax\n"
          "    variants: [unfused, fused, unfused_same_gemm]\n"
          "    shapes:\n"
          "      - {M: 64, N: 128, K: 32}\n"
          "  - op: gemm_layernorm\n"
          "    variants: [unfused, fused]\n"
          "    shapes:\n"
          "      - {M: 64, N: 128, K: 32}\n"
          "  - op: attention\n"
          "    variants: [unfused, fused]\n"
          "    shapes:\n"
          "      - {B: 1, H: 1, Lq: 64, Lk: 64, d: 32, causal: 0}\n"
          "sgemm:\n"
          "  threads: [1, all]\n"
          "  min: 32\n"
          "  max: 128\n"
          "  points: 2\n"
          "  fused_gemm: 1\n",
        f);
    fclose(f);
    assert_int_equal(sh(NULL,
                         "%1$s bench memory --quick --max-bytes 2M --gate-timeout 0 --time-cap "
                         "0.02 --out %2$s -q"),
        0);
    assert_int_equal(sh(NULL,
                         "%1$s bench kernels --shapes %2$s/tiny.yaml --passes 2 --gate-timeout 0 "
                         "--time-cap 0.02 --out %2$s -q"),
        0);
    assert_int_equal(sh(NULL,
                         "%1$s bench collectives --quick --np 2 --colls pingpong,allreduce "
                         "--sizes 8,64K --launches 1 --timeout 120 --out %2$s -q"),
        0);
    assert_int_equal(sh(NULL, "%1$s calibrate --from %2$s/results --out %2$s/profile.json -q"), 0);
    json_t *prof = load("profile.json");
    assert_non_null(prof);
    json_decref(prof);
    snprintf(out, sizeof out, "%s/validate.json", dir);
    assert_int_equal(
        sh(out, "%1$s validate --profile %2$s/profile.json --results %2$s/results --json"), 0);
    json_t *v = load("validate.json");
    assert_non_null(v);
    assert_non_null(json_object_get(v, "schema"));
    json_decref(v);
    /* a prediction on the calibrated profile carries this machine's interval */
    snprintf(out, sizeof out, "%s/predict.json", dir);
    assert_int_equal(sh(out,
                         "%1$s predict --hw %2$s/profile.json --op gemm_softmax --shape "
                         "M=64,N=128,K=32 --json"),
        0);
    json_t *p = load("predict.json");
    assert_non_null(p);
    assert_non_null(json_object_get(p, "result"));
    const json_t *iv = json_object_get(p, "interval");
    assert_true(json_is_object(iv)); /* 12+ validated records: a band */
    assert_true(json_real_value(json_object_get(iv, "lo_s"))
        <= json_real_value(json_object_get(iv, "hi_s")));
    json_decref(p);
    assert_int_equal(sh(NULL, "%1$s report --from %2$s -q"), 0);
    char idx[128];
    snprintf(idx, sizeof idx, "%s/report/index.html", dir);
    assert_int_equal(access(idx, R_OK), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_chain) };
    return cmocka_run_group_tests(tests, setup, teardown);
}
