/* bench: records round trip through writer and reader, damaged files
 * (torn last line, corrupted middle line), repair on reopen, CSV export. */
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
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **s)
{
    (void)s;
    snprintf(dir, sizeof dir, "/tmp/comet_rec_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void make_run(comet_bench_run *run)
{
    char err[COMET_ERRLEN];
    json_t *m = json_pack("{s:s,s:i}", "id", "abc123", "cores", 2);
    assert_int_equal(comet_bench_run_init(run, "test", m, err, sizeof err), 0);
    json_decref(m);
    assert_string_equal(run->machine_id, "abc123");
}

static json_t *make_rec(const comet_bench_run *run, int i)
{
    double samples[5] = { 1e-3, 1.1e-3, 0.9e-3, 1.05e-3, 1.2e-3 + i * 1e-6 };
    comet_bench_result r;
    memset(&r, 0, sizeof r);
    r.samples = samples;
    r.n = 5;
    r.reps = 3;
    r.load.busy_others = 0.05;
    r.load.idle = 1;
    assert_int_equal(comet_bench_stats_compute(samples, 5, &r.stats), 0);
    json_t *rec = comet_bench_record_new(run, "kernel", "sgemm", "blas",
        json_pack("{s:i,s:i,s:i}", "M", 64 + i, "N", 64, "K", 64), 1);
    assert_non_null(rec);
    assert_int_equal(
        comet_bench_record_set_result(rec, &r, 2.0 * 64 * 64 * 64, 3 * 64 * 64 * 4), 0);
    json_object_set_new(rec, "valid", json_true());
    return rec;
}

/* Writes a run record and n measurements to path. */
static void write_file(const char *path, int n)
{
    char err[COMET_ERRLEN];
    comet_bench_run run;
    comet_results_writer w;
    make_run(&run);
    assert_int_equal(comet_results_writer_open(&w, path, err, sizeof err), 0);
    json_t *rr = comet_bench_run_record(&run, "comet bench test", NULL);
    assert_int_equal(comet_results_writer_append(&w, rr, err, sizeof err), 0);
    json_decref(rr);
    for (int i = 0; i < n; i++) {
        json_t *rec = make_rec(&run, i);
        assert_int_equal(comet_results_writer_append(&w, rec, err, sizeof err), 0);
        json_decref(rec);
    }
    assert_int_equal(w.lines, (size_t)n + 1);
    assert_int_equal(comet_results_writer_close(&w, err, sizeof err), 0);
    comet_bench_run_fini(&run);
}

static void test_round_trip(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    snprintf(path, sizeof path, "%s/sub/dir/r.jsonl", dir);
    write_file(path, 3);
    json_t **recs;
    size_t n;
    comet_results_load_info info;
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, &info, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(n, 4);
    assert_int_equal(info.runs, 1);
    assert_int_equal(info.torn_line, 0);
    assert_string_equal(json_string_value(json_object_get(recs[0], "kind")), "run");
    assert_string_equal(json_string_value(json_object_get(recs[0], "cmdline")), "comet bench test");
    json_t *r2 = recs[2];
    assert_int_equal(json_integer_value(json_object_get(json_object_get(r2, "shape"), "M")), 65);
    json_t *st = json_object_get(r2, "stats");
    assert_int_equal(json_integer_value(json_object_get(st, "n")), 5);
    assert_true(json_real_value(json_object_get(st, "median_s")) == 1.05e-3);
    assert_int_equal(json_array_size(json_object_get(st, "samples_s")), 5);
    assert_true(json_real_value(json_array_get(json_object_get(st, "samples_s"), 2)) == 0.9e-3);
    double gf = json_real_value(json_object_get(r2, "gflops"));
    assert_true(gf > 0.499 && gf < 0.5);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(r2, "load"), "gate")), "idle");
    /* the same file again adds records after the first run's */
    char csv[160];
    snprintf(csv, sizeof csv, "%s/out.csv", dir);
    comet_results_json_free(recs, n);
    comet_results_set set = { 0 };
    assert_int_equal(comet_results_load(path, NULL, &set, NULL, err, sizeof err), 0);
    assert_int_equal(comet_results_export_csv(set.recs, set.n, csv, err, sizeof err), 0);
    comet_results_set_free(&set);
    FILE *fp = fopen(csv, "r");
    assert_non_null(fp);
    char line[1024];
    int rows = 0;
    assert_non_null(fgets(line, sizeof line, fp));
    /* every numeric field in a column of its own, grouped fields prefixed */
    assert_non_null(strstr(line, "stats_median_s"));
    assert_non_null(strstr(line, "stats_ci_lo_s"));
    assert_non_null(strstr(line, "shape_M"));
    assert_non_null(strstr(line, "gflops"));
    assert_null(strstr(line, "samples_s")); /* raw samples stay in the JSON */
    while (fgets(line, sizeof line, fp)) {
        rows++;
        assert_non_null(strstr(line, ",sgemm,blas,"));
        assert_null(strstr(line, "M=")); /* no packed k=v cells */
    }
    fclose(fp);
    assert_int_equal(rows, 3);
}

/* Measurements without a run record are of unknown origin: refused by the
 * machine check unless --foreign-ok, and then named in a warning. */
static void test_unknown_origin(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    snprintf(path, sizeof path, "%s/norun.jsonl", dir);
    comet_bench_run run;
    make_run(&run);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    for (int i = 0; i < 2; i++) {
        json_t *rec = make_rec(&run, i);
        char *t = json_dumps(rec, JSON_COMPACT);
        fprintf(fp, "%s\n", t);
        free(t);
        json_decref(rec);
    }
    fclose(fp);
    comet_bench_run_fini(&run);
    json_t *machine = json_pack("{s:s,s:i}", "id", "abc123", "cores", 2);
    comet_results_load_opts lo = { machine, 0 };
    json_t **recs = NULL;
    size_t n = 0;
    comet_results_load_info info;
    assert_int_equal(
        comet_results_load_json(path, &lo, &recs, &n, &info, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "no run record"));
    assert_non_null(strstr(err, "norun.jsonl:1"));
    lo.foreign_ok = 1;
    assert_int_equal(comet_results_load_json(path, &lo, &recs, &n, &info, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(info.foreign_line, 1);
    comet_results_json_free(recs, n);
    /* without a machine check (export, compare) the file loads as it is */
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    comet_results_json_free(recs, n);
    json_decref(machine);
}

/* Absurd times (zero, negative, a CI that does not hold the median) are
 * refused with the reason, never silently used or dropped. */
static void test_absurd_times(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_bench_run run;
    make_run(&run);
    const struct {
        const char *key;
        double v;
    } bad[] = { { "median_s", 0 }, { "median_s", -1e-3 }, { "min_s", 5e-3 }, { "ci_lo_s", 2e-3 },
        { "ci_hi_s", 1e-4 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *rec = make_rec(&run, 0);
        assert_int_equal(comet_results_check(rec, err, sizeof err), 0);
        json_object_set_new(json_object_get(rec, "stats"), bad[i].key, json_real(bad[i].v));
        assert_int_equal(comet_results_check(rec, err, sizeof err), -EINVAL);
        assert_non_null(strstr(err, "stats"));
        json_decref(rec);
    }
    comet_bench_run_fini(&run);
}

static void test_invalid_refused(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    comet_bench_run run;
    comet_results_writer w;
    snprintf(path, sizeof path, "%s/inv.jsonl", dir);
    make_run(&run);
    assert_int_equal(comet_results_writer_open(&w, path, err, sizeof err), 0);
    json_t *rec = make_rec(&run, 0);
    json_object_del(rec, "stats");
    assert_int_equal(comet_results_writer_append(&w, rec, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "stats"));
    json_decref(rec);
    rec = make_rec(&run, 0);
    json_object_set_new(rec, "kind", json_string("bogus"));
    assert_int_equal(comet_results_writer_append(&w, rec, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "bogus"));
    json_decref(rec);
    rec = make_rec(&run, 0);
    json_object_set_new(rec, "threads", json_integer(0));
    assert_int_equal(comet_results_writer_append(&w, rec, err, sizeof err), -EINVAL);
    json_decref(rec);
    assert_int_equal(w.lines, 0);
    comet_results_writer_close(&w, err, sizeof err);
    comet_bench_run_fini(&run);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_size, 0);
}

/* An interrupted run: the last line cut part-way. */
static void test_torn_tail(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    snprintf(path, sizeof path, "%s/torn.jsonl", dir);
    write_file(path, 4);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(truncate(path, sb.st_size - 40), 0);
    json_t **recs;
    size_t n;
    comet_results_load_info info;
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, &info, err, sizeof err), 0);
    assert_int_equal(n, 4); /* run + 3 whole measurements */
    assert_int_equal(info.torn_line, 5);
    assert_non_null(strstr(err, "torn.jsonl:5:"));
    assert_non_null(strstr(err, "torn"));
    comet_results_json_free(recs, n);

    /* Reopening for append cuts the torn tail so new lines stay readable. */
    comet_results_writer w;
    comet_bench_run run;
    make_run(&run);
    assert_int_equal(comet_results_writer_open(&w, path, err, sizeof err), 0);
    assert_true(w.repaired > 0);
    json_t *rec = make_rec(&run, 9);
    assert_int_equal(comet_results_writer_append(&w, rec, err, sizeof err), 0);
    json_decref(rec);
    comet_results_writer_close(&w, err, sizeof err);
    comet_bench_run_fini(&run);
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, &info, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(n, 5);
    comet_results_json_free(recs, n);
}

static void corrupt_line(const char *path, int line, const char *with)
{
    char *data;
    size_t len;
    char err[COMET_ERRLEN];
    assert_int_equal(comet_util_read_file(path, &data, &len, err, sizeof err), 0);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    int ln = 1;
    for (char *p = data; *p;) {
        char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) + 1 : strlen(p);
        if (ln == line)
            fputs(with, fp);
        else
            fwrite(p, 1, l, fp);
        p += l;
        ln++;
    }
    fclose(fp);
    free(data);
}

static void test_corrupt_middle(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN];
    json_t **recs;
    size_t n;
    snprintf(path, sizeof path, "%s/bad.jsonl", dir);
    write_file(path, 4);
    corrupt_line(path, 3, "{\"schema\":\"comet.record.v1\",\"kind\":\"kern\n");
    assert_int_equal(
        comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "bad.jsonl:3:"));
    assert_null(recs);

    write_file(path, 2);
    unlink(path);
    write_file(path, 2);
    corrupt_line(path, 2, "{\"schema\":\"other.v9\",\"kind\":\"kernel\"}\n");
    assert_int_equal(
        comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "bad.jsonl:2:"));
    assert_non_null(strstr(err, "schema"));

    /* blank lines are fine */
    unlink(path);
    write_file(path, 2);
    FILE *fp = fopen(path, "a");
    fputs("\n   \n", fp);
    fclose(fp);
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 3);
    comet_results_json_free(recs, n);

    assert_int_equal(
        comet_results_load_json("/nonexistent/x.jsonl", NULL, &recs, &n, NULL, err, sizeof err),
        -ENOENT);
    assert_non_null(strstr(err, "/nonexistent/x.jsonl"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_invalid_refused),
        cmocka_unit_test(test_unknown_origin),
        cmocka_unit_test(test_absurd_times),
        cmocka_unit_test(test_torn_tail),
        cmocka_unit_test(test_corrupt_middle),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
