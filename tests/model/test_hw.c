/* hw.c: bad descriptions named by file:line, round trips through JSON, the
 * presets. */
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

static void expect_bad(const char *text, const char *needle)
{
    comet_model_hw hw;
    char err[COMET_ERRLEN] = "";
    assert_int_not_equal(
        comet_model_hw_parse("bad.yaml", text, strlen(text), &hw, err, sizeof err), 0);
    if (!strstr(err, needle))
        fail_msg("error '%s' lacks '%s'", err, needle);
}
static void test_bad_files(void **s)
{
    (void)s;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", mfix_tiny_hw());
    /* negative bandwidth, named with file:line */
    char *p = strstr(buf, "dram: {bw: 32");
    memcpy(p, "dram: {bw: -3", 13);
    char *t = strstr(buf, "TOPO");
    memcpy(t, "ring", 4);
    t = strstr(buf, "RED");
    memcpy(t, "no ", 3);
    expect_bad(buf, "bad.yaml:12");
    expect_bad("name: x\nclock_ghz: nan\n", "bad.yaml:2");
    expect_bad("name: x\nclock_ghz: 1\nfrobnicate: 3\n", "unknown field 'frobnicate'");
    expect_bad("name: [unclosed\n", "bad.yaml:");
    expect_bad("name: x\nkind: gpu\nclock_ghz: 1\n", "'kind'");
    /* gemm.mapping: shared or spatial, and only over a systolic array */
    cpu_hw_with_gemm(buf, sizeof buf, ", mapping: spatial");
    expect_bad(buf, "gemm 'mapping' needs engine systolic");
    char tiny[4096];
    const char *src = mfix_tiny_hw(), *g = strstr(src, "mac_pj: 0.5}");
    snprintf(tiny, sizeof tiny, "%.*smapping: diag}%s", (int)(g - src), src, g + 12);
    memcpy(strstr(tiny, "TOPO"), "ring", 4);
    memcpy(strstr(tiny, "RED"), "no ", 3);
    expect_bad(tiny, "gemm 'mapping' must be shared or spatial");
    snprintf(tiny, sizeof tiny, "%.*smapping: spatial}%s", (int)(g - src), src, g + 12);
    memcpy(strstr(tiny, "TOPO"), "ring", 4);
    memcpy(strstr(tiny, "RED"), "no ", 3);
    comet_model_hw hw;
    char err[COMET_ERRLEN];
    assert_int_equal(comet_model_hw_parse("ok.yaml", tiny, strlen(tiny), &hw, err, sizeof err), 0);
    assert_int_equal(hw.sa_spatial, 1);
    comet_model_hw_free(&hw);
    assert_int_not_equal(comet_model_hw_load("/nonexistent/hw.yaml", &hw, err, sizeof err), 0);
}
static void test_roundtrip_and_presets(void **s)
{
    (void)s;
    const char *names[] = { "edge", "cloud" };
    for (int i = 0; i < 2; i++) {
        comet_model_hw hw, back;
        char err[COMET_ERRLEN];
        if (comet_model_hw_load(names[i], &hw, err, sizeof err) != 0)
            fail_msg("%s", err);
        json_t *j = comet_model_hw_to_json(&hw);
        char *text = json_dumps(j, 0);
        assert_int_equal(
            comet_model_hw_parse("rt.json", text, strlen(text), &back, err, sizeof err), 0);
        assert_int_equal(back.clusters, hw.clusters);
        assert_true(back.dram.bw == hw.dram.bw);
        assert_true(back.gb.capacity == hw.gb.capacity);
        /* on both presets fused beats unfused for all three ops */
        comet_model_problem pbs[3]
            = { { .op = COMET_MODEL_GEMM_SOFTMAX, .M = 1024, .N = 1024, .K = 256 },
                  { .op = COMET_MODEL_GEMM_LAYERNORM, .M = 1024, .N = 1024, .K = 256 },
                  { .op = COMET_MODEL_ATTENTION, .heads = 8, .lq = 1024, .lk = 1024, .d = 64 } };
        for (int o = 0; o < 3; o++) {
            comet_model_search *se = calloc(1, sizeof *se);
            assert_int_equal(comet_model_explore(&hw, &pbs[o], se), 0);
            assert_true(se->r_fused.cycles < se->r_unfused.cycles);
            free(se);
        }
        free(text);
        json_decref(j);
        comet_model_hw_free(&hw);
        comet_model_hw_free(&back);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_roundtrip_and_presets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
