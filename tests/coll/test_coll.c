/* comet bench collectives end to end with 2 ranks: complete, validated
 * records; a rank that dies ends the job with exit 1 and a clear message;
 * bad flags exit 2. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A path of this process's own under /tmp: two checkouts' suites at once
 * never share (nor trip over) each other's files. */
static const char *tmp(const char *name)
{
    static char buf[4][128];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "/tmp/comet-coll-%ld-%s", (long)getpid(), name);
    return b;
}

static int run(const char *args, char *errout, size_t errlen)
{
    char cmd[2048];
    const char *ef = tmp("test.err");
    snprintf(cmd, sizeof cmd, "%s %s 2>%s >/dev/null", getenv("COMET_BINARY"), args, ef);
    int st = system(cmd);
    FILE *fp = fopen(ef, "r");
    size_t n = fp ? fread(errout, 1, errlen - 1, fp) : 0;
    errout[n] = '\0';
    if (fp)
        fclose(fp);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void test_quick_records(void **s)
{
    (void)s;
    char dir[] = "/tmp/comet-coll-XXXXXX", err[8192], cmd[512];
    assert_non_null(mkdtemp(dir));
    snprintf(cmd, sizeof cmd,
        "bench collectives --np 2 --colls pingpong,allreduce,allgather,reduce_scatter,bcast,"
        "alltoall,reduce,dist_kernels --sizes 8,1K,64K --gate-timeout 0.3 --out %s -q",
        dir);
    int rc = run(cmd, err, sizeof err);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    snprintf(cmd, sizeof cmd, "cat %s/results/collectives-*.jsonl", dir);
    FILE *p = popen(cmd, "r");
    char *line = NULL;
    size_t cap = 0;
    int runs = 0, recs = 0, dist = 0, forced = 0, gatherv = 0;
    char run_id[128] = "";
    while (getline(&line, &cap, p) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        const char *kind = json_string_value(json_object_get(j, "kind"));
        const char *rid = json_string_value(json_object_get(j, "run_id"));
        assert_non_null(rid);
        if (!strcmp(kind, "run")) {
            runs++;
            snprintf(run_id, sizeof run_id, "%s", rid);
            /* the allocator setting the ranks ran with is recorded */
            const char *gt
                = json_string_value(json_object_get(json_object_get(j, "env"), "glibc_tunables"));
            assert_non_null(gt);
            assert_non_null(strstr(gt, "trim_threshold"));
        } else {
            recs++;
            assert_string_equal(rid, run_id); /* one run: every launch shares its id */
            assert_true(json_is_true(json_object_get(j, "valid")));
            assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 2);
            assert_true(
                json_number_value(json_object_get(json_object_get(j, "stats"), "median_s")) > 0);
            assert_non_null(json_object_get(j, "launch"));
            assert_string_equal(json_string_value(json_object_get(j, "link")), "shm");
            /* the core placement its samples ran in: readings in ns */
            json_t *cc = json_object_get(j, "c2c_ns");
            assert_true(json_array_size(cc) >= 1 && json_array_size(cc) <= 8);
            assert_true(json_number_value(json_array_get(cc, 0)) > 0);
            gatherv += !strcmp(json_string_value(json_object_get(j, "op")), "allgatherv");
            if (!strcmp(kind, "dist_kernel")) {
                /* the collectives the kernel issued are listed */
                json_t *cl = json_object_get(j, "collectives");
                assert_true(json_array_size(cl) >= 1);
                assert_true(
                    json_integer_value(json_object_get(json_array_get(cl, 0), "calls")) >= 1);
                assert_true(json_number_value(json_object_get(j, "flops")) > 0);
                dist++;
            } else {
                assert_non_null(json_object_get(j, "busbw_GBs"));
                assert_non_null(json_object_get(j, "latency_us"));
                /* collectives send freshly written data, as kernels do;
                 * ping-pong keeps OSU's unchanged buffer */
                assert_string_equal(json_string_value(json_object_get(j, "send_buffer")),
                    strcmp(kind, "p2p") ? "written" : "unchanged");
                const char *var = json_string_value(json_object_get(j, "variant"));
                forced += strcmp(var, "auto") != 0;
            }
        }
        json_decref(j);
    }
    free(line);
    pclose(p);
    assert_int_equal(runs, 1);
    /* every coll x size under auto, the forced allreduce algorithms, and
     * the distributed kernels (3 ops x fused/unfused, MoE x 2 dataflows) */
    assert_true(recs >= 7 * 3 + 3 * 3 + 8);
    assert_true(forced >= 3 * 3);
    assert_int_equal(dist, 8);
    /* not asked for: measured by the distributed kernels' launch, the
     * collectives they issue in the placement they ran in */
    assert_int_equal(gatherv, 3);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_dead_rank(void **s)
{
    (void)s;
    char err[8192];
    setenv("COMET_TEST_KILL_RANK", "1", 1);
    char args[512], cmd[512];
    snprintf(args, sizeof args,
        "bench collectives --np 2 --colls allreduce --sizes 8 --timeout 30 --gate-timeout 0 --out "
        "%s -q",
        tmp("dead"));
    int rc = run(args, err, sizeof err);
    unsetenv("COMET_TEST_KILL_RANK");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "comet: bench collectives:"));
    assert_non_null(strstr(err, "rank died"));
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp("dead"));
    assert_int_equal(system(cmd), 0);
}

static void test_wrong_result(void **s)
{
    (void)s;
    char err[8192];
    setenv("COMET_TEST_CORRUPT_RANK", "1", 1);
    char args[512], cmd[512];
    snprintf(args, sizeof args,
        "bench collectives --np 2 --colls allreduce --algs auto --sizes 64 --gate-timeout 0 "
        "--out %s -q",
        tmp("bad"));
    int rc = run(args, err, sizeof err);
    unsetenv("COMET_TEST_CORRUPT_RANK");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "wrong result"));
    /* the record is kept, marked invalid */
    snprintf(cmd, sizeof cmd, "cat %s/results/*.jsonl | grep -c '\"valid\":false'", tmp("bad"));
    FILE *p = popen(cmd, "r");
    int n = 0;
    assert_int_equal(fscanf(p, "%d", &n), 1);
    pclose(p);
    assert_int_equal(n, 1);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp("bad"));
    assert_int_equal(system(cmd), 0);
}

static void test_hung_rank(void **s)
{
    (void)s;
    char err[8192];
    setenv("COMET_TEST_HANG_RANK", "1", 1);
    char args[512], cmd[512];
    snprintf(args, sizeof args,
        "bench collectives --np 2 --colls allreduce --algs auto --sizes 8 --timeout 4 "
        "--gate-timeout 0 --out %s -q",
        tmp("hang"));
    int rc = run(args, err, sizeof err);
    unsetenv("COMET_TEST_HANG_RANK");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "deadline"));
    /* the killed job left no rank behind */
    assert_int_not_equal(
        system("pgrep -f '[c]ollectives --worker allreduce auto 8 ' >/dev/null"), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp("hang"));
    assert_int_equal(system(cmd), 0);
}

static void test_bad_flags(void **s)
{
    (void)s;
    char err[8192];
    assert_int_equal(run("bench collectives --np 0", err, sizeof err), 2);
    assert_int_equal(run("bench collectives --colls frobnicate", err, sizeof err), 2);
    assert_non_null(strstr(err, "frobnicate"));
    assert_int_equal(run("bench collectives --sizes -5", err, sizeof err), 2);
    assert_int_equal(run("bench collectives --np 64", err, sizeof err), 2);
    assert_int_equal(run("bench collectives --algs frob", err, sizeof err), 2);
    assert_non_null(strstr(err, "frob"));
    assert_int_equal(run("bench collectives --timeout 0", err, sizeof err), 2);
    assert_int_equal(run("bench collectives --launches x", err, sizeof err), 2);
    assert_int_equal(run("bench collectives --bogus", err, sizeof err), 2);
    assert_int_equal(run("bench collectives --launcher-args \"-f 'x\"", err, sizeof err), 2);
}

static int teardown(void **s)
{
    (void)s;
    remove(tmp("test.err"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quick_records),
        cmocka_unit_test(test_dead_rank),
        cmocka_unit_test(test_hung_rank),
        cmocka_unit_test(test_wrong_result),
        cmocka_unit_test(test_bad_flags),
    };
    return cmocka_run_group_tests(tests, NULL, teardown);
}
