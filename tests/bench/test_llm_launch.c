/* comet bench llm's launch options, end to end on this host: --ranks N
 * keeps the set's configurations of N ranks (the ones scripts/scale-out.sh
 * -w steps runs across a link), --launcher-args reaches mpiexec (hydra's
 * fork launcher here; the namespaces' ssh wrapper in the scale-out job) and
 * the run record, and bad values are one-line usage errors (exit 2). No
 * timing is asserted. */
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

static char out[256];

static int run(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s bench llm %s 2>%s.err", getenv("COMET_BINARY"), args, out);
    const int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* the first line of the last command's stderr */
static void err_line(char *buf, size_t len)
{
    char path[300];
    snprintf(path, sizeof path, "%s.err", out);
    FILE *fp = fopen(path, "r");
    buf[0] = 0;
    if (fp) {
        if (!fgets(buf, (int)len, fp))
            buf[0] = 0;
        fclose(fp);
    }
}

static void test_two_rank_set(void **s)
{
    (void)s;
    char args[1024];
    snprintf(args, sizeof args,
        "--quick --ranks 2 --samples 3 --gate-timeout 0 --launcher-args '-launcher fork' --out %s "
        "-q",
        out);
    assert_int_equal(run(args), 0);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cat %s/results/llm-*.jsonl", out);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    char *line = NULL;
    size_t cap = 0;
    int recs = 0, runs = 0, phase[3] = { 0 }, grid[3] = { 0 };
    while (getline(&line, &cap, p) > 0) {
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        const char *kind = json_string_value(json_object_get(j, "kind"));
        if (!strcmp(kind, "run")) {
            runs++;
            json_t *st = json_object_get(j, "settings");
            assert_string_equal(
                json_string_value(json_object_get(st, "launcher_args")), "-launcher fork");
            assert_int_equal(json_integer_value(json_object_get(st, "ranks")), 2);
            assert_int_equal(json_integer_value(json_object_get(st, "configurations")), 9);
        } else {
            recs++;
            assert_string_equal(kind, "llm");
            assert_true(json_is_true(json_object_get(j, "valid")));
            assert_int_equal(json_integer_value(json_object_get(j, "ranks")), 2);
            assert_string_equal(json_string_value(json_object_get(j, "link")), "shm");
            json_t *pa = json_object_get(j, "params");
            const int tp = (int)json_integer_value(json_object_get(pa, "tp")),
                      pp = (int)json_integer_value(json_object_get(pa, "pp")),
                      dp = (int)json_integer_value(json_object_get(pa, "dp"));
            assert_int_equal(tp * pp * dp, 2);
            grid[tp == 2 ? 0 : dp == 2 ? 1 : 2]++;
            const char *ph = json_string_value(json_object_get(pa, "phase"));
            phase[!strcmp(ph, "train") ? 0 : !strcmp(ph, "prefill") ? 1 : 2]++;
        }
        json_decref(j);
    }
    free(line);
    pclose(p);
    assert_int_equal(runs, 1);
    /* train, prefill, decode at tp=2, dp=2 and pp=2 */
    assert_int_equal(recs, 9);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(phase[i], 3);
        assert_int_equal(grid[i], 3);
    }
}

static void test_bad_values(void **s)
{
    (void)s;
    char e[512];
    assert_int_equal(run("--ranks 3 -q"), 2);
    err_line(e, sizeof e);
    assert_non_null(strstr(e, "comet: --ranks 3: no configuration"));
    assert_int_equal(run("--ranks 2 --tp 2 -q"), 2);
    err_line(e, sizeof e);
    assert_non_null(strstr(e, "--ranks selects from a set"));
    assert_int_equal(run("--tp 2 --launcher-args \"'x\" -q"), 2);
    err_line(e, sizeof e);
    assert_non_null(strstr(e, "comet: --launcher-args ''x': unbalanced quote"));
    assert_int_equal(run("--ranks 0 -q"), 2);
}

int main(void)
{
    snprintf(out, sizeof out, "/tmp/test_llm_launch_%ld", (long)getpid());
    const struct CMUnitTest tests[]
        = { cmocka_unit_test(test_two_rank_set), cmocka_unit_test(test_bad_values) };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s.err", out, out);
    (void)system(cmd);
    return rc;
}
