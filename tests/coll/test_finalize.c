/* How the MPI bench workers end (bench/mpi_end.c), made deterministic: two
 * ranks over UCX's TCP transport on the loopback (MPIR_CVAR_NOLOCAL: no
 * shared memory between them), one rank still inside MPI (probing, 1 s)
 * when the other ends.
 *
 * - With the ranks' out-of-band barrier first (what the workers do): the
 *   launch ends and its records are complete and valid.
 * - Without it (MPICH 4.0.2's own order: its finalize closes the UCX
 *   endpoints, then waits in the process manager's barrier) the late rank's
 *   close waits for an acknowledgement from a rank that no longer makes
 *   progress: MPI_Finalize never returns. The watchdog ends the launch
 *   after its grace with one line naming what timed out and exit 1, and the
 *   records written before stay intact. The same for bench llm.
 * No timing is asserted: a hang would end in ctest's timeout. */
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

static char dir[64];

/* Runs comet with args; stderr into err. Returns the exit status. */
static int run(const char *args, char *err, size_t errlen)
{
    char cmd[2048], ef[128];
    snprintf(ef, sizeof ef, "%s/err", dir);
    snprintf(cmd, sizeof cmd, "%s %s 2>%s >/dev/null", getenv("COMET_BINARY"), args, ef);
    const int st = system(cmd);
    FILE *f = fopen(ef, "r");
    const size_t n = f ? fread(err, 1, errlen - 1, f) : 0;
    err[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Counts the records of kind in out/results and checks each is valid and
 * whole (one JSON object a line). */
static int records(const char *out, const char *kind)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cat %s/results/*.jsonl", out);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *line = NULL;
    size_t cap = 0;
    int n = 0;
    while (getline(&line, &cap, p) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        if (!strcmp(json_string_value(json_object_get(j, "kind")), kind)) {
            assert_true(json_is_true(json_object_get(j, "valid")));
            n++;
        }
        json_decref(j);
    }
    free(line);
    pclose(p);
    return n;
}

static const char coll_args[] = "bench collectives --np 2 --colls pingpong --algs auto --sizes "
                                "8,64K --timeout 120 --gate-timeout 0 --out %s/%s -q";

static void test_barrier_first(void **s)
{
    (void)s;
    char args[512], err[8192], out[128];
    for (int late = 0; late < 2; late++) {
        char sub[8];
        snprintf(sub, sizeof sub, "ok%d", late);
        snprintf(args, sizeof args, coll_args, dir, sub);
        setenv("COMET_TEST_LATE_END_RANK", late ? "1" : "0", 1);
        const int rc = run(args, err, sizeof err);
        if (rc != 0)
            fail_msg("late rank %d: exit %d: %s", late, rc, err);
        assert_null(strstr(err, "did not return"));
        snprintf(out, sizeof out, "%s/%s", dir, sub);
        assert_int_equal(records(out, "p2p"), 2);
    }
    unsetenv("COMET_TEST_LATE_END_RANK");
}

static void test_mpich_order(void **s)
{
    (void)s;
    char args[512], err[8192], out[128];
    setenv("COMET_TEST_LATE_END_RANK", "0", 1);
    setenv("COMET_TEST_NO_PMI_BARRIER", "1", 1);
    setenv("COMET_TEST_FINALIZE_GRACE_S", "2", 1);
    snprintf(args, sizeof args, coll_args, dir, "hang");
    const int rc = run(args, err, sizeof err);
    assert_int_equal(rc, 1);
    /* the rank's line and the parent's, each naming what timed out */
    assert_non_null(strstr(err, "MPI_Finalize did not return within 2 s of the rank's last MPI"));
    assert_non_null(strstr(err,
        "comet: bench collectives: pingpong/auto launch 0: MPI_Finalize "
        "did not return within 2 s on a rank (its records are kept)"));
    snprintf(out, sizeof out, "%s/hang", dir);
    assert_int_equal(records(out, "p2p"), 2);

    /* bench llm ends its ranks the same way: two data-parallel ranks */
    snprintf(args, sizeof args,
        "bench llm --hidden 32 --heads 2 --ffn 64 --seq 16 --batch 2 --dp 2 --samples 3 "
        "--gate-timeout 0 --timeout 120 --out %s/llm -q",
        dir);
    const int rl = run(args, err, sizeof err);
    assert_int_equal(rl, 1);
    assert_non_null(strstr(err, "comet: bench llm: rank "));
    assert_non_null(strstr(err, ": MPI_Finalize did not return within 2 s"));
    assert_non_null(strstr(err, "MPI_Finalize did not return on a rank within its grace"));
    snprintf(out, sizeof out, "%s/llm", dir);
    assert_int_equal(records(out, "llm"), 1);
    unsetenv("COMET_TEST_LATE_END_RANK");
    unsetenv("COMET_TEST_NO_PMI_BARRIER");
    unsetenv("COMET_TEST_FINALIZE_GRACE_S");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/comet-fin-%ld", (long)getpid());
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
    if (system(cmd) != 0)
        return 1;
    /* two ranks on this host talking over UCX's TCP on the loopback */
    setenv("UCX_TLS", "tcp,self", 1);
    setenv("UCX_NET_DEVICES", "lo", 1);
    setenv("MPIR_CVAR_NOLOCAL", "1", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_barrier_first),
        cmocka_unit_test(test_mpich_order),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)system(cmd);
    return rc;
}
