/* files.c: workload and mapping files, and their errors. */
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

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}
static void expect_file_err(int rc, const char *err, const char *needle)
{
    assert_true(rc < 0);
    if (!strstr(err, needle))
        fail_msg("error '%s' lacks '%s'", err, needle);
}
static void test_workload_and_mapping_files(void **s)
{
    (void)s;
    char dir[] = "/tmp/comet_model_XXXXXX", p[256], err[COMET_ERRLEN];
    assert_non_null(mkdtemp(dir));
    comet_model_problem pb;
    comet_model_mapping mp;
    snprintf(p, sizeof p, "%s/w.yaml", dir);
    write_file(p,
        "op: attention\nshape: {batch: 2, heads: 8, lq: 512, lk: 512, d: 64, causal: "
        "true}\n");
    assert_int_equal(comet_model_workload_load(p, &pb, err, sizeof err), 0);
    assert_int_equal(pb.op, COMET_MODEL_ATTENTION);
    NEAR(pb.heads, 16);
    assert_true(pb.causal);
    write_file(p, "op: gemm_softmax\nshape:\n  M: 128\n  N: x\n  K: 64\n");
    expect_file_err(comet_model_workload_load(p, &pb, err, sizeof err), err, "w.yaml:4");
    write_file(p, "op: gemm_softmax\nshape: {M: 128, N: 64, Q: 3}\n");
    expect_file_err(comet_model_workload_load(p, &pb, err, sizeof err), err, "w.yaml:2");
    write_file(p, "op: conv\nshape: {M: 1}\n");
    expect_file_err(comet_model_workload_load(p, &pb, err, sizeof err), err, "w.yaml:1");
    /* shipped workloads load */
    assert_int_equal(comet_model_workload_load("edge_gemm_softmax", &pb, err, sizeof err), 0);

    /* a mapping as explore --json writes it round-trips */
    comet_model_mapping a = map(0, 1, 1, 4, 1, 2, 2, 32, 16);
    json_t *j = json_pack(
        "{s:o}", "best_fused", json_pack("{s:o}", "mapping", comet_model_mapping_json(&a)));
    snprintf(p, sizeof p, "%s/m.json", dir);
    assert_int_equal(json_dump_file(j, p, 0), 0);
    json_decref(j);
    assert_int_equal(comet_model_mapping_load(p, &mp, err, sizeof err), 0);
    assert_int_equal(mp.fused, 0);
    assert_int_equal(mp.cs_n, 4);
    assert_int_equal(mp.ks_n, 2);
    assert_int_equal(mp.one_pass, 1);
    NEAR(mp.tile_m, 32);
    snprintf(p, sizeof p, "%s/m.yaml", dir);
    write_file(p,
        "fused: true\nbinding: pipelined\ncluster_split: {M: 2, N: 1.5}\ntile_m: 8\n"
        "tile_k: 8\n");
    expect_file_err(comet_model_mapping_load(p, &mp, err, sizeof err), err, "m.yaml:3");
    write_file(p, "fused: true\nbinding: sometimes\ntile_m: 8\ntile_k: 8\n");
    expect_file_err(comet_model_mapping_load(p, &mp, err, sizeof err), err, "m.yaml:2");
    write_file(p, "fused: true\nbinding: pipelined\ntile_m: 8\n");
    expect_file_err(comet_model_mapping_load(p, &mp, err, sizeof err), err, "tile_k");
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workload_and_mapping_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
