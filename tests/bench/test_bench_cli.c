/* bench: `comet bench memory` end to end on a tiny sweep (records valid and
 * complete), usage errors, export, and an interrupted run keeping a readable
 * file. No timing is asserted. */
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
#include "test_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
    snprintf(dir, sizeof dir, "/tmp/comet_bcli_XXXXXX");
    return bin && mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **s)
{
    (void)s;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Runs a shell command, captures stdout into out; returns the exit code. */
static int run(const char *cmd, char *out, size_t outlen)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, outlen - 1, p);
    out[got] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_memory_tiny(void **s)
{
    (void)s;
    char cmd[1024], out[8192], err[COMET_ERRLEN];
    snprintf(cmd, sizeof cmd,
        "%s bench memory --quick --max-bytes 64K --gate-timeout 0 --time-cap 0.02 "
        "--out %s/o --csv %s/m.csv --json -q",
        bin, dir, dir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    json_error_t je;
    json_t *sum = json_loads(out, 0, &je);
    assert_non_null(sum);
    const char *path = json_string_value(json_object_get(sum, "results"));
    assert_non_null(path);
    assert_int_equal(json_integer_value(json_object_get(sum, "invalid")), 0);
    size_t nrec = (size_t)json_integer_value(json_object_get(sum, "records"));
    assert_true(nrec > 10);

    json_t **recs;
    size_t n;
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    assert_string_equal(err, "");
    assert_int_equal(n, nrec + 1);
    assert_string_equal(json_string_value(json_object_get(recs[0], "kind")), "run");
    assert_true(json_is_object(json_object_get(recs[0], "machine")));
    const char *run_id = json_string_value(json_object_get(recs[0], "run_id"));
    int seen_triad = 0, seen_exp = 0, seen_fill = 0;
    for (size_t i = 1; i < n; i++) {
        json_t *r = recs[i];
        assert_string_equal(json_string_value(json_object_get(r, "run_id")), run_id);
        assert_true(json_is_true(json_object_get(r, "valid")));
        const char *kind = json_string_value(json_object_get(r, "kind"));
        const char *op = json_string_value(json_object_get(r, "op"));
        if (!strcmp(kind, "memory") && !strcmp(op, "triad")) {
            seen_triad++;
            assert_true(json_real_value(json_object_get(r, "gbs")) > 0);
            assert_true(
                json_integer_value(json_object_get(json_object_get(r, "shape"), "bytes")) <= 65536);
        }
        if (!strcmp(kind, "memory") && !strcmp(op, "fill")) {
            seen_fill++; /* the BLAS clearing the array: valid means zeroed */
            assert_string_equal(json_string_value(json_object_get(r, "variant")), "blas");
            assert_true(json_real_value(json_object_get(r, "gbs")) > 0);
        }
        if (!strcmp(kind, "vecop") && !strcmp(op, "exp")) {
            seen_exp++;
            assert_true(json_real_value(json_object_get(r, "ns_per_elem")) > 0);
        }
        assert_true(json_is_string(json_object_get(r, "counters_disabled"))
            || json_is_object(json_object_get(r, "counters")));
    }
    assert_true(seen_triad >= 2 && seen_fill >= 2);
    assert_int_equal(seen_exp, 2); /* cache and stream */
    comet_results_json_free(recs, n);

    /* the CSV has a header and one row per measurement */
    char csv[128];
    snprintf(csv, sizeof csv, "%s/m.csv", dir);
    FILE *fp = fopen(csv, "r");
    assert_non_null(fp);
    size_t lines = 0;
    int ch;
    while ((ch = fgetc(fp)) != EOF)
        lines += ch == '\n';
    fclose(fp);
    assert_int_equal(lines, nrec + 1);

    /* export of the same file gives the same rows */
    snprintf(cmd, sizeof cmd, "%s bench export %s --csv %s/e.csv -q", bin, path, dir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    json_decref(sum);
}

/* A tiny kernels run from a shape set holding only an sgemm grid. */
static void test_kernels_sgemm_tiny(void **s)
{
    (void)s;
    char cmd[1024], out[8192], err[COMET_ERRLEN], shapes[128];
    snprintf(shapes, sizeof shapes, "%s/tiny.yaml", dir);
    FILE *fp = fopen(shapes, "w");
    assert_non_null(fp);
    fputs("threads: [1]\nsgemm: {min: 16, max: 48, points: 2, fused_gemm: 1}\n", fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd,
        "%s bench kernels --shapes %s --passes 2 --gate-timeout 0 --time-cap 0.02 --out %s/k "
        "--json -q",
        bin, shapes, dir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    json_t *sum = json_loads(out, 0, NULL);
    assert_non_null(sum);
    const char *path = json_string_value(json_object_get(sum, "results"));
    assert_non_null(path);
    json_t **recs;
    size_t n;
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    assert_int_equal(n, 1 + 16); /* run + 2^3 grid shapes x (OpenBLAS, fused kernels' GEMM) */
    int nfused = 0;
    for (size_t i = 1; i < n; i++) {
        json_t *r = recs[i];
        assert_string_equal(json_string_value(json_object_get(r, "op")), "sgemm");
        const char *v = json_string_value(json_object_get(r, "variant"));
        assert_true(!strcmp(v, "blas") || !strcmp(v, "fused"));
        nfused += !strcmp(v, "fused");
        assert_true(json_is_true(json_object_get(r, "valid")));
        /* the grid runs in every pass, its samples merged as the compound ops' */
        assert_int_equal(json_integer_value(json_object_get(r, "passes")), 2);
        json_t *sh = json_object_get(r, "shape");
        long M = (long)json_integer_value(json_object_get(sh, "M"));
        assert_true(M == 16 || M == 48);
        double f = json_real_value(json_object_get(r, "flops"));
        long N = (long)json_integer_value(json_object_get(sh, "N"));
        long K = (long)json_integer_value(json_object_get(sh, "K"));
        assert_true(f == 2.0 * M * N * K);
    }
    assert_int_equal(nfused, 8);
    comet_results_json_free(recs, n);
    json_decref(sum);
    /* a shape-set error names the file and line */
    fp = fopen(shapes, "w");
    fputs("threads: [1]\nsgemm: {min: 16, max: 8}\n", fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "%s bench kernels --shapes %s --out %s/k 2>&1", bin, shapes, dir);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "tiny.yaml:2"));
}

static void test_usage_errors(void **s)
{
    (void)s;
    char cmd[512], out[4096];
    snprintf(cmd, sizeof cmd, "%s bench frobnicate 2>/dev/null", bin);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s bench memory --threads 0 2>/dev/null", bin);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s bench memory --target-ci abc 2>/dev/null", bin);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s bench memory --bogus 2>/dev/null", bin);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s bench memory --quick --full 2>/dev/null", bin);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s bench export /nonexistent.jsonl --csv %s/x.csv 2>&1", bin, dir);
    assert_int_not_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "/nonexistent.jsonl"));
    snprintf(
        cmd, sizeof cmd, "%s bench kernels --shapes %s/none.yaml --out %s/o2 2>&1", bin, dir, dir);
    assert_int_equal(run(cmd, out, sizeof out), 2);
    assert_non_null(strstr(out, "none.yaml"));
    snprintf(cmd, sizeof cmd, "%s bench --help", bin);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "usage: comet bench"));
}

/* SIGINT part-way: exit 1, the file holds whole records only. */
static void test_interrupted(void **s)
{
    (void)s;
    char outdir[128], err[COMET_ERRLEN];
    snprintf(outdir, sizeof outdir, "%s/int", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", 1);
        dup2(fd, 2);
        execl(bin, bin, "bench", "memory", "--quick", "--max-bytes", "8M", "--gate-timeout", "0",
            "--time-cap", "0.05", "--out", outdir, (char *)NULL);
        _exit(127);
    }
    /* the signal once its handler is in place and the run record is on
     * disk (a loaded machine may take long to get there; the sweep's
     * points take longer still) */
    assert_int_equal(comet_test_wait_caught(pid, SIGINT, 600), 0);
    char rpath[256];
    snprintf(rpath, sizeof rpath, "ls %s/results/memory-*.jsonl >/dev/null 2>&1", outdir);
    for (int i = 0; i < 60000 && system(rpath) != 0; i++)
        usleep(10 * 1000);
    kill(pid, SIGINT);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    /* 1 = interrupted; 0 only if the machine finished the sweep first */
    assert_true(WEXITSTATUS(st) == 1 || WEXITSTATUS(st) == 0);

    char cmd[256], out[1024];
    snprintf(cmd, sizeof cmd, "ls %s/results/memory-*.jsonl", outdir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    out[strcspn(out, "\n")] = 0;
    json_t **recs;
    size_t n;
    assert_int_equal(comet_results_load_json(out, NULL, &recs, &n, NULL, err, sizeof err), 0);
    assert_true(n >= 1);
    assert_string_equal(json_string_value(json_object_get(recs[0], "kind")), "run");
    comet_results_json_free(recs, n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memory_tiny),
        cmocka_unit_test(test_kernels_sgemm_tiny),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_interrupted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
