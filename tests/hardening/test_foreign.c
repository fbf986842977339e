/* Results from another machine or an older schema: the machine comparison,
 * the loader's refusal (file:line and what differs) and --foreign-ok, the
 * v1 -> v2 conversion and the refusal of newer or unknown schemas, and the
 * three CLI readers (calibrate --from, validate, report) on a fixture copy
 * re-labelled as this machine or as a foreign one. */
/* cmocka needs these first, in this order */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "comet_bench.h"
#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static const char *src_dir(void)
{
    const char *s = getenv("COMET_SOURCE_DIR");
    return s ? s : COMET_SOURCE_DIR;
}

static int shf(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *slurp(const char *path)
{
    char *d = NULL;
    size_t n = 0;
    return comet_util_read_file(path, &d, &n, NULL, 0) == 0 ? d : NULL;
}

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/comet-foreign-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    return shf("rm -rf '%s'", dir) == 0 ? 0 : -1;
}

static json_t *machine(void)
{
    return json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:I,s:[{s:i,s:s,s:I,s:b},{s:i,s:s,s:I,s:b}]}", "id",
        "aaaa", "hostname", "node1", "cpu_model", "AMD EPYC", "packages", 1, "cores", 2, "pus", 2,
        "memory_bytes", (json_int_t)23314255872, "caches", "level", 2, "type", "unified", "size",
        (json_int_t)1048576, "overridden", 0, "level", 3, "type", "unified", "size",
        (json_int_t)33554432, "overridden", 0);
}

static void test_machine_diff(void **s)
{
    (void)s;
    char what[COMET_ERRLEN];
    json_t *a = machine(), *b = json_deep_copy(a);
    assert_int_equal(comet_results_machine_diff(a, b, what, sizeof what), 0);
    /* another hostname (and so another id): an identical node */
    json_object_set_new(b, "hostname", json_string("node2"));
    json_object_set_new(b, "id", json_string("bbbb"));
    assert_int_equal(comet_results_machine_diff(a, b, what, sizeof what), 0);
    /* memory within 2%: MemTotal moves between boots */
    json_object_set_new(b, "memory_bytes", json_integer(23314255872 - 200000000));
    assert_int_equal(comet_results_machine_diff(a, b, what, sizeof what), 0);
    /* what differs is named, with this machine's value */
    json_object_set_new(b, "cores", json_integer(64));
    json_object_set_new(b, "memory_bytes", json_integer(8589934592));
    json_object_set_new(
        json_array_get(json_object_get(b, "caches"), 0), "size", json_integer(524288));
    assert_int_equal(comet_results_machine_diff(a, b, what, sizeof what), 3);
    assert_non_null(strstr(what, "cores 64 (this machine: 2)"));
    assert_non_null(strstr(what, "memory 8.0 GiB (this machine: 21.7 GiB)"));
    assert_non_null(strstr(what, "L2 512 KiB (this machine: 1 MiB)"));
    assert_null(strchr(what, '\n'));
    /* an overridden cache is not the hardware's: skipped */
    json_object_set_new(json_array_get(json_object_get(b, "caches"), 0), "overridden", json_true());
    assert_int_equal(comet_results_machine_diff(a, b, NULL, 0), 2);
    json_decref(b);
    /* only an id (the collectives worker's run record): ids compared */
    b = json_pack("{s:s}", "id", "aaaa");
    assert_int_equal(comet_results_machine_diff(a, b, what, sizeof what), 0);
    json_object_set_new(b, "id", json_string("cccc"));
    assert_int_equal(comet_results_machine_diff(a, b, what, sizeof what), 1);
    assert_non_null(strstr(what, "cccc"));
    json_decref(b);
    b = json_object();
    assert_int_equal(comet_results_machine_diff(a, b, NULL, 0), 1);
    json_decref(b);
    json_decref(a);
}

/* Writes lines to dir/name and returns the path. */
static const char *put(const char *name, const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    return path;
}

static const char stats[]
    = "\"stats\":{\"n\":1,\"median_s\":1e-3,\"ci_lo_s\":1e-3,\"ci_hi_s\":1e-3,"
      "\"min_s\":1e-3,\"samples_s\":[1e-3]}";

static void test_load_foreign(void **s)
{
    (void)s;
    char text[2048], err[COMET_ERRLEN], want[160];
    snprintf(text, sizeof text,
        "\n{\"schema\":\"comet.record.v2\",\"kind\":\"run\",\"run_id\":\"r\",\"machine\":{\"id\":"
        "\"x\",\"cpu_model\":\"Foreign CPU 9000\",\"cores\":64}}\n"
        "{\"schema\":\"comet.record.v2\",\"kind\":\"memory\",\"run_id\":\"r\",\"op\":\"read\","
        "\"shape\":{\"bytes\":4096},\"threads\":1,%s}\n",
        stats);
    const char *path = put("foreign.jsonl", text);
    json_t *here = machine(), **recs = NULL;
    size_t n = 0;
    comet_results_load_info info;
    comet_results_load_opts strict = { here, 0 }, ok = { here, 1 };
    assert_int_equal(
        comet_results_load_json(path, &strict, &recs, &n, &info, err, sizeof err), -EINVAL);
    snprintf(want, sizeof want, "%s:2: measured on another machine", path);
    if (!strstr(err, want)
        || !strstr(err, "cpu_model 'Foreign CPU 9000' (this machine: 'AMD EPYC')")
        || !strstr(err, "cores 64 (this machine: 2)") || !strstr(err, "--foreign-ok"))
        fail_msg("message '%s'", err);
    assert_null(recs);
    assert_int_equal(comet_results_load_json(path, &ok, &recs, &n, &info, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(info.foreign_line, 2);
    snprintf(want, sizeof want, "%s:2: from another machine", path);
    assert_non_null(strstr(err, want));
    comet_results_json_free(recs, n);
    /* no machine given: not checked, no warning */
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, &info, err, sizeof err), 0);
    assert_string_equal(err, "");
    comet_results_json_free(recs, n);
    json_decref(here);
}

static void test_schema_versions(void **s)
{
    (void)s;
    char text[2048], err[COMET_ERRLEN], want[160];
    json_t **recs = NULL;
    size_t n = 0;
    comet_results_load_info info;
    /* v1: attention tiles renamed, everything else as it was */
    snprintf(text, sizeof text,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"run\",\"run_id\":\"r\",\"machine\":{\"id\":"
        "\"x\"}}\n"
        "{\"schema\":\"comet.record.v1\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":"
        "\"attention\",\"variant\":\"fused\",\"shape\":{\"B\":1,\"H\":2,\"Lq\":256,\"Lk\":256,"
        "\"d\":64},\"threads\":1,\"params\":{\"tile_m\":64,\"tile_n\":256,\"avx2\":true},%s}\n",
        stats);
    const char *path = put("v1.jsonl", text);
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, &info, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(info.converted, 2);
    assert_int_equal(info.converted_line, 1);
    snprintf(want, sizeof want,
        "%s:1: 2 record(s) of schema comet.record.v1 converted to "
        "comet.record.v2",
        path);
    if (!strstr(err, want))
        fail_msg("warning '%s' lacks '%s'", err, want);
    json_t *pa = json_object_get(recs[1], "params");
    assert_int_equal(json_integer_value(json_object_get(pa, "tile_q")), 64);
    assert_int_equal(json_integer_value(json_object_get(pa, "tile_k")), 256);
    assert_null(json_object_get(pa, "tile_m"));
    assert_null(json_object_get(pa, "tile_n"));
    assert_true(json_is_true(json_object_get(pa, "avx2")));
    assert_string_equal(json_string_value(json_object_get(recs[1], "schema")), COMET_BENCH_SCHEMA);
    assert_int_equal(comet_results_check(recs[1], err, sizeof err), 0);
    comet_results_json_free(recs, n);
    /* a v1 GEMM record keeps tile_m (only attention's were renamed) */
    snprintf(text, sizeof text,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":"
        "\"gemm_softmax\",\"variant\":\"fused\",\"shape\":{\"M\":64,\"N\":64,\"K\":64},"
        "\"threads\":1,\"params\":{\"tile_m\":64},%s}\n",
        stats);
    path = put("v1gemm.jsonl", text);
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(recs[0], "params"), "tile_m")), 64);
    comet_results_json_free(recs, n);
    /* newer and unknown schemas: refused, file:line named */
    path = put("v3.jsonl",
        "\n\n{\"schema\":\"comet.record.v3\",\"kind\":\"run\",\"run_id\":\"r\",\"machine\":{}}\n");
    assert_int_equal(
        comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), -EINVAL);
    snprintf(want, sizeof want, "%s:3: schema 'comet.record.v3' is newer", path);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
    path = put("unk.jsonl", "{\"schema\":\"nvbench.v1\",\"kind\":\"run\",\"run_id\":\"r\"}\n");
    assert_int_equal(
        comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), -EINVAL);
    snprintf(want, sizeof want, "%s:1: unknown schema 'nvbench.v1'", path);
    if (!strstr(err, want))
        fail_msg("error '%s' lacks '%s'", err, want);
    /* the writer writes the current schema only */
    json_t *old = json_pack(
        "{s:s,s:s,s:s,s:{}}", "schema", "comet.record.v1", "kind", "run", "run_id", "r", "machine");
    assert_int_not_equal(comet_results_check(old, err, sizeof err), 0);
    json_decref(old);
}

/* Copies the report fixture to dir/NAME with every run record's machine
 * replaced by m (records re-written in the current schema). */
static void relabel(const char *name, const json_t *m)
{
    char out[160], cmd[512];
    snprintf(out, sizeof out, "%s/%s/results", dir, name);
    assert_int_equal(comet_util_mkdir_p(out, NULL, 0), 0);
    snprintf(
        cmd, sizeof cmd, "cp %s/tests/fixtures/report/profile.json %s/%s/", src_dir(), dir, name);
    assert_int_equal(shf("%s", cmd), 0);
    snprintf(cmd, sizeof cmd, "ls %s/tests/fixtures/report/results/*.jsonl", src_dir());
    FILE *p = popen(cmd, "r");
    char in[512];
    while (fgets(in, sizeof in, p)) {
        in[strcspn(in, "\n")] = 0;
        json_t **recs = NULL;
        size_t n = 0;
        char err[COMET_ERRLEN], path[700];
        assert_int_equal(comet_results_load_json(in, NULL, &recs, &n, NULL, err, sizeof err), 0);
        snprintf(path, sizeof path, "%s/%s", out, strrchr(in, '/') + 1);
        FILE *fp = fopen(path, "w");
        for (size_t i = 0; i < n; i++) {
            if (!strcmp(json_string_value(json_object_get(recs[i], "kind")), "run"))
                json_object_set(recs[i], "machine", (json_t *)m);
            char *t = json_dumps(recs[i], JSON_COMPACT);
            fprintf(fp, "%s\n", t);
            free(t);
        }
        fclose(fp);
        comet_results_json_free(recs, n);
    }
    pclose(p);
}

/* Runs comet ARGS, stderr into dir/err.txt; *rc the exit status. */
static void cli(const char *args, int *rc)
{
    *rc = shf("%s %s >/dev/null 2>%s/err.txt", getenv("COMET_BINARY"), args, dir);
}

/* comet ARGS exits 0; otherwise the failure shows its stderr. */
static void expect_ok(const char *args)
{
    int rc;
    char path[128];
    cli(args, &rc);
    if (rc != 0) {
        snprintf(path, sizeof path, "%s/err.txt", dir);
        char *e = slurp(path);
        fail_msg("'%s' exited %d: %s", args, rc, e ? e : "");
    }
}

static void expect_refusal(const char *args, const char *file_part)
{
    int rc;
    char path[128];
    cli(args, &rc);
    assert_int_equal(rc, 2);
    snprintf(path, sizeof path, "%s/err.txt", dir);
    char *e = slurp(path);
    assert_non_null(e);
    char *nl = strchr(e, '\n');
    if (!nl || nl[1] || !strstr(e, "measured on another machine") || !strstr(e, file_part)
        || !strstr(e, "cpu_model 'Foreign CPU 9000'") || !strstr(e, "--foreign-ok"))
        fail_msg("'%s': stderr '%s'", args, e);
    free(e);
}

static void test_cli(void **s)
{
    (void)s;
    if (!getenv("COMET_BINARY"))
        skip();
    char err[COMET_ERRLEN], args[1024];
    json_t *here = NULL;
    assert_int_equal(comet_bench_this_machine(&here, err, sizeof err), 0);
    relabel("mine", here);
    json_t *other = json_deep_copy(here);
    json_object_set_new(other, "cpu_model", json_string("Foreign CPU 9000"));
    /* only the CPU model: the fits themselves read cores and caches */
    relabel("theirs", other);
    /* this machine's: accepted by all three */
    snprintf(args, sizeof args, "calibrate -q --from %s/mine --out %s/mine/p.json", dir, dir);
    expect_ok(args);
    snprintf(args, sizeof args, "validate -q --profile %s/mine/profile.json --results %s/mine", dir,
        dir);
    expect_ok(args);
    snprintf(args, sizeof args, "report -q --from %s/mine", dir);
    expect_ok(args);
    /* another machine's: refused, one line naming file:line and what differs */
    snprintf(args, sizeof args, "calibrate -q --from %s/theirs --out %s/theirs/p.json", dir, dir);
    expect_refusal(args, "/theirs/results/");
    snprintf(args, sizeof args, "validate -q --profile %s/theirs/profile.json --results %s/theirs",
        dir, dir);
    expect_refusal(args, "/theirs/results/");
    snprintf(args, sizeof args, "report -q --from %s/theirs", dir);
    expect_refusal(args, "/theirs/results/");
    /* ... and taken with --foreign-ok */
    snprintf(args, sizeof args, "calibrate -q --foreign-ok --from %s/theirs --out %s/theirs/p.json",
        dir, dir);
    expect_ok(args);
    snprintf(args, sizeof args,
        "validate -q --foreign-ok --profile %s/theirs/profile.json --results %s/theirs", dir, dir);
    expect_ok(args);
    snprintf(args, sizeof args, "report -q --foreign-ok --from %s/theirs", dir);
    expect_ok(args);
    char path[160];
    snprintf(path, sizeof path, "%s/theirs/report/summary.md", dir);
    char *md = slurp(path);
    assert_non_null(md);
    free(md);
    json_decref(other);
    json_decref(here);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_machine_diff),
        cmocka_unit_test_setup_teardown(test_load_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_schema_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cli, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
