/* The results library: every field written and read back, v1 conversion,
 * each bad input's message, absurd values skipped and counted, the loader's
 * file:line errors, and the micro-tile table against the kernels'. */
#include "comet_kernels.h"
#include "comet_results.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64];

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/comet-results-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

#define RUN_LINE                                                                                   \
    "{\"schema\":\"comet.record.v2\",\"kind\":\"run\",\"run_id\":\"r1\",\"bench\":\"kernels\","    \
    "\"time\":\"2026-11-25T10:00:00Z\",\"cmdline\":\"comet bench kernels\",\"comet\":{"            \
    "\"version\":\"0.1.0\",\"commit\":\"abc\"},\"machine\":{\"id\":\"m1\",\"hostname\":\"h\","     \
    "\"cpu_model\":\"cpu\",\"packages\":1,\"cores\":2,\"pus\":2,\"memory_bytes\":8000000000,"      \
    "\"mhz\":2600.0,\"mhz_measured\":3900.0,\"isa\":{\"fma\":true,\"avx\":true,\"avx2\":true,"     \
    "\"avx512f\":false},\"caches\":[{\"level\":2,\"type\":\"unified\",\"size\":1048576}],"         \
    "\"papi\":{\"status\":\"ok\"}},\"env\":{\"timer\":\"CLOCK_MONOTONIC\"}}"

#define STATS                                                                                      \
    "\"stats\":{\"n\":3,\"median_s\":0.002,\"ci_lo_s\":0.001,\"ci_hi_s\":0.003,\"min_s\":0.001,"   \
    "\"samples_s\":[0.001,0.002,0.003]}"

/* Every field of the schema set by hand, written, and read back. */
static void test_round_trip_every_field(void **s)
{
    (void)s;
    comet_results_record r, b;
    comet_results_coll_call calls[1] = { { "allreduce", "sum", 256, 1024, 2 } };
    double smp[3] = { 1e-3, 2e-3, 3e-3 };
    char err[COMET_ERRLEN];
    comet_results_record_init(&r, COMET_RESULTS_DIST_KERNEL);
    r.run_id = "r1";
    r.machine_id = "m1";
    r.time = "2026-11-25T10:00:00Z";
    r.op = "attention";
    r.variant = "fused";
    r.dataflow = "gather_fused";
    r.workload = "moe";
    comet_results_shape *sh = &r.shape;
    sh->M = 1, sh->N = 2, sh->K = 3, sh->B = 4, sh->H = 5, sh->Lq = 6, sh->Lk = 7, sh->d = 8;
    sh->causal = 1, sh->bytes = 9, sh->count = 10, sh->n = 11, sh->width = 12, sh->rows = 13;
    sh->segments = 14, sh->pairs = 15, sh->max_seg = 16, sh->mean_seg = 16.5, sh->skew = 1.5;
    sh->nonempty = 17.25;
    sh->hidden = 18, sh->ffn = 19, sh->layers = 20, sh->seq = 21, sh->microbatch = 22;
    sh->context = 23;
    comet_results_params *pa = &r.params;
    pa->tile_m = 64, pa->tile_n = 32, pa->tile_q = 16, pa->tile_k = 128, pa->tiles = 9.5;
    pa->rounds = 5;
    pa->ukernel = 1, pa->elements = 1024, pa->cold_bytes = 67108864, pa->lk_local = 512;
    pa->n_local = 256;
    pa->method = "blocked", pa->isa = "avx2", pa->peer = "3.4", pa->regime = "cache";
    pa->dtype = "f32", pa->swept = "tile_m", pa->split = "Lk", pa->device_collectives = "none";
    pa->malloc_mode = "stock", pa->algorithm_forced = 1;
    pa->phase = "train", pa->recompute = "full", pa->tp = 2, pa->pp = 1, pa->dp = 3;
    pa->seq_parallel = 1;
    r.timers = (comet_results_timers) { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
    r.loss = 0.75;
    r.threads = 2, r.ranks = 4;
    r.stats = (comet_results_stats) { 3, 2e-3, 1e-3, 3e-3, 0.95, 1e-3, 3e-3, 2e-3, 2.8e-3, smp, 3 };
    r.load = (comet_results_gate) { 0.05, 0.02, 0.1, "idle" };
    r.reps = 10, r.passes = 3, r.converged = 1, r.valid = 0, r.pinned = 1, r.wall_s = 1.25;
    r.c2c_ns[0] = 26.5, r.c2c_ns[1] = 161, r.nc2c = 2;
    r.flops = 1e9, r.bytes = 1e6, r.gflops = 500, r.gbs = 0.5, r.clock_mhz = 3900;
    r.median_cycles = 7.8e6;
    r.ncounters = 2;
    r.counter_names[0] = "PAPI_TOT_CYC", r.counter_values[0] = 1e6;
    r.counter_names[1] = "PAPI_TOT_INS", r.counter_values[1] = 2e6;
    r.ns_per_elem = 0.5, r.ns_per_row = 30;
    r.algbw_GBs = 1.5, r.busbw_GBs = 2.25, r.algbw_bytes = 4096;
    r.latency_us = 2000, r.min_latency_us = 1000, r.rank_avg_latency_us = 1900;
    r.timing = "barrier", r.sampling = "interleaved", r.link = "shm";
    r.launch = 0, r.nodes = 1, r.max_abs_err = 1e-6;
    r.collectives = calls, r.ncollectives = 1;
    json_t *j = comet_results_to_json(&r);
    assert_non_null(j);
    if (comet_results_parse(j, &b, err, sizeof err))
        fail_msg("%s", err);
    json_decref(j);
    assert_int_equal(b.kind, COMET_RESULTS_DIST_KERNEL);
    assert_string_equal(b.run_id, "r1");
    assert_string_equal(b.machine_id, "m1");
    assert_string_equal(b.time, r.time);
    assert_string_equal(b.op, "attention");
    assert_string_equal(b.variant, "fused");
    assert_string_equal(b.dataflow, "gather_fused");
    assert_string_equal(b.workload, "moe");
    const double *x = &r.shape.M, *y = &b.shape.M;
    for (size_t i = 0; i < offsetof(comet_results_shape, text) / sizeof(double); i++)
        assert_true(x[i] == y[i]);
    x = &r.params.tile_m, y = &b.params.tile_m;
    for (size_t i = 0; i < offsetof(comet_results_params, method) / sizeof(double); i++)
        assert_true(x[i] == y[i]);
    const char *const *p = &r.params.method, *const *q = &b.params.method;
    for (size_t i = 0; i < 9; i++)
        assert_string_equal(p[i], q[i]);
    assert_int_equal(b.params.algorithm_forced, 1);
    assert_string_equal(b.params.phase, "train");
    assert_string_equal(b.params.recompute, "full");
    assert_true(b.params.tp == 2 && b.params.pp == 1 && b.params.dp == 3);
    assert_int_equal(b.params.seq_parallel, 1);
    x = &r.timers.gemm_s, y = &b.timers.gemm_s;
    for (size_t i = 0; i < sizeof r.timers / sizeof(double); i++)
        assert_true(x[i] == y[i]);
    assert_true(b.loss == 0.75);
    assert_int_equal(b.threads, 2);
    assert_int_equal(b.ranks, 4);
    assert_int_equal(b.stats.n, 3);
    assert_true(b.stats.median_s == 2e-3 && b.stats.ci_lo_s == 1e-3 && b.stats.ci_hi_s == 3e-3);
    assert_true(b.stats.ci_level == 0.95 && b.stats.min_s == 1e-3 && b.stats.max_s == 3e-3);
    assert_true(b.stats.mean_s == 2e-3 && b.stats.p90_s == 2.8e-3);
    assert_int_equal(b.stats.nsamples, 3);
    assert_true(b.stats.samples_s[2] == 3e-3);
    assert_true(b.load.busy_others == 0.05 && b.load.busy_during == 0.02);
    assert_true(b.load.waited_s == 0.1);
    assert_string_equal(b.load.gate, "idle");
    assert_true(b.reps == 10 && b.passes == 3 && b.wall_s == 1.25);
    assert_true(b.nc2c == 2 && b.c2c_ns[0] == 26.5 && b.c2c_ns[1] == 161);
    assert_int_equal(b.converged, 1);
    assert_int_equal(b.valid, 0);
    assert_int_equal(b.pinned, 1);
    assert_true(b.flops == 1e9 && b.bytes == 1e6 && b.gflops == 500 && b.gbs == 0.5);
    assert_true(b.clock_mhz == 3900 && b.median_cycles == 7.8e6);
    assert_int_equal(b.ncounters, 2);
    assert_string_equal(b.counter_names[1], "PAPI_TOT_INS");
    assert_true(b.counter_values[1] == 2e6);
    assert_true(b.ns_per_elem == 0.5 && b.ns_per_row == 30);
    assert_true(b.algbw_GBs == 1.5 && b.busbw_GBs == 2.25 && b.algbw_bytes == 4096);
    assert_true(b.latency_us == 2000 && b.min_latency_us == 1000);
    assert_true(b.rank_avg_latency_us == 1900);
    assert_string_equal(b.timing, "barrier");
    assert_string_equal(b.sampling, "interleaved");
    assert_string_equal(b.link, "shm");
    assert_int_equal(b.launch, 0);
    assert_int_equal(b.nodes, 1);
    assert_true(b.max_abs_err == 1e-6);
    assert_int_equal(b.ncollectives, 1);
    assert_string_equal(b.collectives[0].kind, "allreduce");
    assert_string_equal(b.collectives[0].op, "sum");
    assert_true(b.collectives[0].count == 256 && b.collectives[0].bytes == 1024);
    assert_true(b.collectives[0].calls == 2);
    comet_results_record_free(&b);
}

/* A run record: its identity and the machine fields calibrate uses. */
static void test_run_record(void **s)
{
    (void)s;
    comet_results_record r, b;
    char err[COMET_ERRLEN];
    assert_int_equal(comet_results_parse_line(RUN_LINE, strlen(RUN_LINE), &r, err, sizeof err), 0);
    assert_int_equal(r.kind, COMET_RESULTS_RUN);
    assert_string_equal(r.bench, "kernels");
    assert_string_equal(r.cmdline, "comet bench kernels");
    assert_string_equal(r.comet_version, "0.1.0");
    assert_string_equal(r.comet_commit, "abc");
    assert_string_equal(r.machine.id, "m1");
    assert_string_equal(r.machine.cpu_model, "cpu");
    assert_true(r.machine.cores == 2 && r.machine.mhz_measured == 3900);
    assert_true(r.machine.memory_bytes == 8e9);
    assert_true(r.machine.fma && r.machine.avx2 && !r.machine.avx512f);
    assert_int_equal(r.machine.ncaches, 1);
    assert_int_equal(r.machine.caches[0].level, 2);
    assert_true(r.machine.caches[0].size == 1048576);
    assert_string_equal(r.machine.papi_status, "ok");
    json_t *j = comet_results_to_json(&r);
    assert_int_equal(comet_results_parse(j, &b, err, sizeof err), 0);
    assert_string_equal(b.cmdline, r.cmdline);
    assert_string_equal(b.machine.id, "m1");
    assert_int_equal(comet_results_machine_diff(r.machine.json, b.machine.json, NULL, 0), 0);
    json_decref(j);
    comet_results_record_free(&b);
    comet_results_record_free(&r);
}

/* v1 attention records named their tiles tile_m / tile_n: read as tile_q /
 * tile_k, counted and named in the warning. */
static void test_v1_conversion(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    snprintf(path, sizeof path, "%s/v1.jsonl", dir);
    write_text(path,
        "{\"schema\":\"comet.record.v1\",\"kind\":\"kernel\",\"run_id\":\"r1\",\"op\":"
        "\"attention\",\"variant\":\"fused\",\"shape\":{\"B\":1,\"H\":2,\"Lq\":64,\"Lk\":64,"
        "\"d\":16,\"causal\":0},\"threads\":1,\"params\":{\"tile_m\":32,\"tile_n\":48}," STATS
        "}\n");
    comet_results_set set = { 0 };
    comet_results_load_info info;
    assert_int_equal(comet_results_load(path, NULL, &set, &info, err, sizeof err), 0);
    assert_int_equal(set.n, 1);
    assert_int_equal(info.converted, 1);
    assert_int_equal(info.converted_line, 1);
    assert_non_null(strstr(err, "1 record(s) of schema comet.record.v1 converted"));
    assert_non_null(strstr(err, ":1:"));
    assert_int_equal(set.recs[0].converted, 1);
    assert_true(set.recs[0].params.tile_q == 32 && set.recs[0].params.tile_k == 48);
    assert_false(comet_results_has(set.recs[0].params.tile_m));
    comet_results_set_free(&set);
}

/* Each bad input: refused with a one-line message naming the field. */
static void test_bad_inputs(void **s)
{
    (void)s;
    static const struct {
        const char *line, *want;
    } cases[] = {
        { "nope", "not valid JSON" },
        { "[1]", "record is not a JSON object" },
        { "{\"kind\":\"run\"}", "field 'schema' missing" },
        { "{\"schema\":\"comet.record.v9\"}", "is newer than this comet reads" },
        { "{\"schema\":\"other\"}", "unknown schema 'other'" },
        { "{\"schema\":\"comet.record.v2\"}", "field 'kind' missing" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"x\"}", "unknown kind 'x'" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"run\"}", "field 'run_id' missing" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"run\",\"run_id\":\"r\"}",
            "run record without a 'machine' object" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\"}",
            "field 'op' missing" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\"}",
            "field 'shape' missing or not an object" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{}}",
            "neither 'threads' nor 'ranks' is set" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":0}",
            "'threads'/'ranks' must be integers >= 1" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1}",
            "field 'stats' missing or not an object" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1,\"stats\":{\"n\":0}}",
            "field 'stats.n' missing or < 1" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1,\"stats\":{\"n\":1}}",
            "field 'stats.median_s' missing or not a number" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1,\"stats\":{\"n\":1,\"median_s\":0,\"ci_lo_s\":0,"
          "\"ci_hi_s\":0,\"min_s\":0}}",
            "stats.median_s = 0 is not a time" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1,\"stats\":{\"n\":1,\"median_s\":1,\"ci_lo_s\":2,"
          "\"ci_hi_s\":3,\"min_s\":1}}",
            "do not fit together" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1,\"stats\":{\"n\":1,\"median_s\":1,\"ci_lo_s\":1,"
          "\"ci_hi_s\":1,\"min_s\":1}}",
            "field 'stats.samples_s' missing" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":1,\"stats\":{\"n\":1,\"median_s\":1,\"ci_lo_s\":1,"
          "\"ci_hi_s\":1,\"min_s\":1,\"samples_s\":[-1]}}",
            "stats.samples_s[0] is not a non-negative number" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":2,\"c2c_ns\":[25,0],\"stats\":{\"n\":1,\"median_s\":1,"
          "\"ci_lo_s\":1,\"ci_hi_s\":1,\"min_s\":1,\"samples_s\":[1]}}",
            "c2c_ns[1] is not a latency" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"kernel\",\"run_id\":\"r\",\"op\":\"x\","
          "\"shape\":{},\"threads\":2,\"c2c_ns\":25,\"stats\":{\"n\":1,\"median_s\":1,"
          "\"ci_lo_s\":1,\"ci_hi_s\":1,\"min_s\":1,\"samples_s\":[1]}}",
            "field 'c2c_ns' is not an array" },
        { "{\"schema\":\"comet.record.v2\",\"kind\":\"run\",\"run_id\":\"\x7f\",\"machine\":{}}",
            "holds a control character" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        comet_results_record r;
        char err[COMET_ERRLEN] = "";
        int rc
            = comet_results_parse_line(cases[i].line, strlen(cases[i].line), &r, err, sizeof err);
        if (rc != -EINVAL || !strstr(err, cases[i].want) || strchr(err, '\n'))
            fail_msg("case %zu: rc %d, message '%s' (want '%s')", i, rc, err, cases[i].want);
    }
}

/* The loader names file:line for a bad middle line, skips a torn last
 * line with a warning, and skips measurements with absurd values, counted. */
static void test_loader(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    comet_results_set set = { 0 };
    comet_results_load_info info;
    snprintf(path, sizeof path, "%s/a.jsonl", dir);
    write_text(path,
        RUN_LINE "\n{\"schema\":\"comet.record.v2\",\"kind\":\"memory\",\"run_id\":\"r1\",\"op\":"
                 "\"triad\",\"shape\":{\"bytes\":4096},\"threads\":1,\"gbs\":-3," STATS "}\n"
                 "{\"schema\":\"comet.record.v2\",\"kind\":\"memory\",\"run_id\":\"r1\",\"op\":"
                 "\"triad\",\"shape\":{\"bytes\":4096},\"threads\":1,\"gbs\":3," STATS "}\n"
                 "{\"schema\":\"comet.record.v2\",\"kind\":");
    assert_int_equal(comet_results_load(path, NULL, &set, &info, err, sizeof err), 0);
    assert_int_equal(set.n, 2);
    assert_int_equal(info.skipped, 1);
    assert_int_equal(info.skipped_line, 2);
    assert_int_equal(info.torn_line, 4);
    assert_non_null(
        strstr(err, ":2: 1 measurement(s) with absurd values skipped (first: gbs = -3"));
    assert_non_null(strstr(err, ":4: torn last line skipped"));
    assert_true(set.recs[1].gbs == 3);
    comet_results_set_free(&set);
    /* a bad middle line: an error naming file:line, the set untouched */
    write_text(path, RUN_LINE "\ngarbage\n" RUN_LINE "\n");
    assert_int_equal(comet_results_load(path, NULL, &set, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "a.jsonl:2: not valid JSON"));
    assert_int_equal(set.n, 0);
    /* the folder loader reads DIR/results/ *.jsonl */
    char sub[128], f2[160];
    snprintf(sub, sizeof sub, "%s/results", dir);
    assert_int_equal(comet_util_mkdir_p(sub, err, sizeof err), 0);
    snprintf(f2, sizeof f2, "%s/b.jsonl", sub);
    write_text(f2, RUN_LINE "\n");
    assert_int_equal(comet_results_load_path(dir, NULL, &set, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(set.n, 1);
    comet_results_set_free(&set);
}

/* The writer appends what the reader reads; an invalid record is refused. */
static void test_writer(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    comet_results_writer w;
    snprintf(path, sizeof path, "%s/w/out.jsonl", dir);
    assert_int_equal(comet_results_writer_open(&w, path, err, sizeof err), 0);
    json_t *run = json_loads(RUN_LINE, 0, NULL);
    assert_int_equal(comet_results_writer_append(&w, run, err, sizeof err), 0);
    json_t *bad = json_pack("{s:s}", "schema", COMET_RESULTS_SCHEMA);
    assert_int_equal(comet_results_writer_append(&w, bad, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "refusing invalid record"));
    /* a field the table does not know is refused, not dropped */
    json_t *odd = json_loads(RUN_LINE, 0, NULL);
    json_object_set_new(json_object_get(odd, "comet"), "extra", json_true());
    assert_int_equal(comet_results_writer_append(&w, odd, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "field 'comet.extra' is not in the results field table"));
    json_decref(odd);
    assert_int_equal(comet_results_writer_close(&w, err, sizeof err), 0);
    comet_results_set set = { 0 };
    assert_int_equal(comet_results_load(path, NULL, &set, NULL, err, sizeof err), 0);
    assert_int_equal(set.n, 1);
    assert_string_equal(set.recs[0].machine.id, "m1");
    comet_results_set_free(&set);
    json_decref(run);
    json_decref(bad);
}

/* The fixtures (written by the benches) go through the writer unchanged:
 * read, typed, written again, byte for byte. */
static void test_fixture_bytes(void **s)
{
    (void)s;
    static const char *const files[] = { "kernels-20261122T140635Z-28525.jsonl",
        "memory-20261122T140619Z-28522.jsonl", "collectives-20261122T140653Z-28528.jsonl" };
    const char *src = getenv("COMET_SOURCE_DIR");
    if (!src)
        skip();
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char in[1024], out[160], err[COMET_ERRLEN], *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;
        snprintf(in, sizeof in, "%s/tests/fixtures/report/results/%s", src, files[f]);
        snprintf(out, sizeof out, "%s/copy-%zu.jsonl", dir, f);
        assert_int_equal(comet_util_read_file(in, &a, &la, err, sizeof err), 0);
        /* written as v1 (no attention records: the same fields in v2) */
        for (char *v = a; (v = strstr(v, "comet.record.v1")) != NULL; v += 15)
            v[14] = '2';
        comet_results_writer w;
        assert_int_equal(comet_results_writer_open(&w, out, err, sizeof err), 0);
        size_t lines = 0;
        for (char *line = a; *line;) {
            char *nl = strchr(line, '\n');
            json_error_t je;
            json_t *j = json_loadb(line, nl ? (size_t)(nl - line) : strlen(line), 0, &je);
            assert_non_null(j);
            if (comet_results_writer_append(&w, j, err, sizeof err))
                fail_msg("%s line %zu: %s", files[f], lines + 1, err);
            json_decref(j);
            lines++;
            line = nl ? nl + 1 : line + strlen(line);
        }
        assert_int_equal(comet_results_writer_close(&w, err, sizeof err), 0);
        assert_int_equal(comet_util_read_file(out, &b, &lb, err, sizeof err), 0);
        if (la != lb || memcmp(a, b, la)) {
            size_t i = 0;
            while (i < la && i < lb && a[i] == b[i])
                i++;
            fail_msg("%s: differs at byte %zu: ...%.80s... vs ...%.80s...", files[f], i,
                a + (i > 20 ? i - 20 : 0), b + (i > 20 ? i - 20 : 0));
        }
        free(a);
        free(b);
    }
}

/* calibrate reads the micro-tile from results without the kernels: the
 * table must match comet_kernels.h. */
static void test_micro_tile(void **s)
{
    (void)s;
    int edge = 0;
    assert_int_equal(
        comet_results_micro_tile_rows("avx512", &edge), COMET_KERNELS_TILE_ROWS_AVX512);
    assert_int_equal(edge, COMET_KERNELS_TILE_ROWS);
    assert_int_equal(comet_results_micro_tile_rows("avx2", NULL), COMET_KERNELS_TILE_ROWS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_every_field),
        cmocka_unit_test(test_run_record),
        cmocka_unit_test(test_v1_conversion),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_loader),
        cmocka_unit_test(test_writer),
        cmocka_unit_test(test_fixture_bytes),
        cmocka_unit_test(test_micro_tile),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
