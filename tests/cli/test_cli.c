/* CLI conventions: usage errors exit 2 with one line "comet: <where>: <what>". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs the comet binary with args; returns exit status, stdout/stderr in buffers. */
static int run(char *const args[], char *out, size_t outlen, char *errb, size_t errlen)
{
    const char *bin = getenv("COMET_BINARY");
    int po[2], pe[2];
    assert_non_null(bin);
    assert_int_equal(pipe(po), 0);
    assert_int_equal(pipe(pe), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]);
        close(pe[0]);
        char *argv[32];
        int n = 0;
        argv[n++] = (char *)bin;
        for (int i = 0; args[i] && n < 31; i++)
            argv[n++] = args[i];
        argv[n] = NULL;
        execv(bin, argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    size_t no = 0, ne = 0;
    ssize_t r;
    /* Both pipes are small for these commands; drain stderr after stdout. */
    while ((r = read(po[0], out + no, outlen - 1 - no)) > 0)
        no += (size_t)r;
    while ((r = read(pe[0], errb + ne, errlen - 1 - ne)) > 0)
        ne += (size_t)r;
    out[no] = errb[ne] = '\0';
    close(po[0]);
    close(pe[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void expect_usage_error(char *const args[], const char *must_contain)
{
    char out[65536], err[65536];
    int st = run(args, out, sizeof out, err, sizeof err);
    assert_int_equal(st, 2);
    assert_int_equal(count_lines(err), 1);
    assert_true(strncmp(err, "comet: ", 7) == 0);
    if (must_contain && !strstr(err, must_contain))
        fail_msg("stderr '%s' lacks '%s'", err, must_contain);
}

static void test_unknown_subcommand(void **s)
{
    (void)s;
    char *a[] = { "frobnicate", NULL };
    expect_usage_error(a, "frobnicate");
}

static void test_unknown_flag(void **s)
{
    (void)s;
    char *a[] = { "probe", "--no-such-flag", NULL };
    expect_usage_error(a, "--no-such-flag");
}

static void test_missing_value(void **s)
{
    (void)s;
    char *a[] = { "probe", "--l2", NULL };
    expect_usage_error(a, "--l2");
}

static void test_bad_value(void **s)
{
    (void)s;
    char *a[] = { "probe", "--l2", "-5", NULL };
    expect_usage_error(a, "--l2");
    char *b[] = { "probe", "--l3", "99999999999999999999999", NULL };
    expect_usage_error(b, "--l3");
}

/* predict / explore --op gms: bad statistics, inputs and options are one-line
 * usage errors naming what is wrong; a good input prints the four dataflows
 * and the choice; a gms input file counts its tiles. */
static void test_gms_cli(void **s)
{
    (void)s;
    char prof[600], file[600], out[65536], err[65536];
    snprintf(
        prof, sizeof prof, "%s/tests/fixtures/report/profile.json", getenv("COMET_SOURCE_DIR"));
    char *a[] = { "predict", "--hw", prof, "--op", "gms", "--shape",
        "rows=100,pairs=10,segments=20,K=8,N=8", NULL };
    expect_usage_error(a, "more non-empty segments than pairs");
    char *b[] = { "predict", "--hw", prof, "--op", "gms", "--shape",
        "rows=100,pairs=10,K=8,N=8,M=3", NULL };
    expect_usage_error(b, "unknown key 'M'");
    char *c[] = { "predict", "--hw", "edge", "--op", "gms", "--shape",
        "rows=100,pairs=10,segments=2,K=8,N=8", NULL };
    expect_usage_error(c, "CPU");
    char *d[] = { "predict", "--hw", prof, "--op", "gms", "--shape",
        "rows=100,pairs=10,segments=2,K=8,N=8", "--mapping", "fastest", NULL };
    expect_usage_error(d, "--mapping 'fastest'");
    char *e[] = { "predict", "--hw", prof, "--op", "gms", "--shape", "rows=100,pairs=10.5", NULL };
    expect_usage_error(e, "pairs=10.5");
    char *f[] = { "predict", "--hw", prof, "--op", "gemm_softmax", "--shape", "M=4,N=4,K=4",
        "--input", "/dev/null", NULL };
    expect_usage_error(f, "--input is for --op gms");
    char *g[] = { "explore", "--hw", prof, "--op", "gms", "--shape",
        "rows=4096,pairs=32768,segments=16,K=64,N=64", NULL };
    assert_int_equal(run(g, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "gather_fused"));
    assert_non_null(strstr(out, "scatter_fused"));
    assert_non_null(strstr(out, "model's choice:"));
    assert_non_null(strstr(out, "configurations"));
    /* an input file: 3 segments of 5, 0 and 2 pairs */
    snprintf(file, sizeof file, "/tmp/comet-gms-cli-%d.txt", (int)getpid());
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fprintf(fp, "gms 10 10 3\n");
    for (int i = 0; i < 5; i++)
        fprintf(fp, "0 %d %d\n", i, 9 - i);
    fprintf(fp, "2 1 1\n2 3 3\n");
    fclose(fp);
    char *h[] = { "predict", "--hw", prof, "--op", "gms", "--input", file, "--shape", "K=16,N=32",
        "--json", NULL };
    assert_int_equal(run(h, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "\"comet.gms.v1\""));
    assert_non_null(strstr(out, "\"pairs\": 7"));
    char *k[] = { "predict", "--hw", prof, "--op", "gms", "--input", file, "--shape",
        "K=16,N=32,pairs=7", NULL };
    expect_usage_error(k, "widths only");
    fp = fopen(file, "w");
    fprintf(fp, "gms 10 10 3\n0 10 1\n");
    fclose(fp);
    char *m[]
        = { "predict", "--hw", prof, "--op", "gms", "--input", file, "--shape", "K=16,N=32", NULL };
    expect_usage_error(m, ":2");
    unlink(file);
}

/* The system model's bad inputs: one line naming the flag or field, exit 2 */
static void test_system_cli(void **s)
{
    (void)s;
    char out[65536], err[65536];
    char *a[] = { "predict", "--hw", "dgx-a100", "--workload", "gpt3-175b", "--parallel",
        "tp=5,pp=1,dp=1", NULL };
    expect_usage_error(a, "does not divide the 96 attention heads");
    char *b[] = { "predict", "--hw", "sn10x8-ring", "--workload", "gpt3-175b", "--parallel",
        "tp=8,pp=2,dp=1", NULL };
    expect_usage_error(b, "the system has 8");
    char *c[] = { "predict", "--hw", "dgx-a100", "--workload", "gpt3-175b", NULL };
    expect_usage_error(c, "--parallel");
    char *d[] = { "explore", "--hw", "dgx-a100", "--workload", "gpt3-175b", "--chips", "12", NULL };
    expect_usage_error(d, "--chips 12");
    char *e[]
        = { "explore", "--hw", "dgx-a100", "--workload", "gpt3-175b", "--phase", "infer", NULL };
    expect_usage_error(e, "--phase 'infer'");
    char *f[] = { "predict", "--hw", "dgx-a100", "--workload", "gpt3-175b", "--parallel",
        "tp=8,pp=1,dp=1", NULL };
    expect_usage_error(f, "memory");
    char *g[] = { "explore", "--hw", "dgx-a100", "--chips", "8", "--workload", "gpt3-175b", NULL };
    assert_int_equal(run(g, out, sizeof out, err, sizeof err), 1); /* fits nowhere: 8 x 80 GB */
    assert_non_null(strstr(err, "fits nowhere"));
    char *h[] = { "explore", "--hw", "sn10x8-torus", "--workload", "llama2-70b", "--phase",
        "decode", "-q", NULL };
    assert_int_equal(run(h, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "tokens/s"));
    /* what-ifs on the system model: a sweep of DDR bandwidth (DFModel's
     * Fig. 19 axis): the kernel-by-kernel step never grows with it */
    char *w[] = { "explore", "--hw", "sn10x8-ring-dfmodel", "--workload", "gpt3-175b", "--phase",
        "forward", "--batch", "2304", "--no-seq-parallel", "--parallel", "tp=8,pp=1,dp=1",
        "--sweep", "dram_bw=50GB/s,100GB/s,200GB/s", "-q", NULL };
    assert_int_equal(run(w, out, sizeof out, err, sizeof err), 0);
    double kb[3], dfs[3];
    const char *line = strstr(out, "\n50GB/s");
    for (int i = 0; i < 3; i++) {
        assert_non_null(line);
        char v[32];
        assert_int_equal(sscanf(line + 1, "%31s %lf s %lf s", v, &kb[i], &dfs[i]), 3);
        assert_true(dfs[i] > 0 && dfs[i] <= kb[i]); /* dataflow: never slower here */
        if (i)
            assert_true(kb[i] <= kb[i - 1]);
        line = strchr(line + 1, '\n');
    }
    char *wj[] = { "explore", "--hw", "sn10x8-ring-dfmodel", "--workload", "gpt3-175b", "--phase",
        "forward", "--batch", "2304", "--no-seq-parallel", "--parallel", "tp=8,pp=1,dp=1",
        "--sweep", "dram_bw=100GB/s", "--json", "-q", NULL };
    assert_int_equal(run(wj, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "\"comet.system-sweep.v1\""));
    char *x[]
        = { "explore", "--hw", "dgx-a100", "--workload", "gpt3-175b", "--sweep", "warp=1,2", NULL };
    expect_usage_error(x, "--sweep: unknown hardware parameter 'warp'");
    char *y[] = { "explore", "--hw", "dgx-a100", "--chips", "64", "--workload", "gpt3-175b",
        "--batch", "64", "--parallel", "tp=8,pp=8,dp=1", "--sensitivity", "-q", NULL };
    assert_int_equal(run(y, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "dram_bw"));
}

/* comet bench llm: bad configurations are one-line usage errors; one tiny
 * configuration runs under mpiexec, writes its llm record, and validate
 * --system predicts it with a profile. */
static void test_llm_cli(void **s)
{
    (void)s;
    char out[65536], err[65536];
    char *a[] = { "bench", "llm", "--phase", "infer", NULL };
    expect_usage_error(a, "--phase 'infer'");
    char *b[] = { "bench", "llm", "--quick", "--tp", "2", NULL };
    expect_usage_error(b, "one or the other");
    char *c[] = { "bench", "llm", "--batch", "3", "--dp", "2", NULL };
    expect_usage_error(c, "does not divide the batch");
    char *d[] = { "bench", "llm", "--phase", "prefill", "--recompute", "full", NULL };
    expect_usage_error(d, "train only");
    char *e[] = { "bench", "llm", "--hidden", "30", "--heads", "4", NULL };
    expect_usage_error(e, "not a multiple of heads");
    char *e2[] = { "bench", "llm", "--seq-parallel", NULL };
    expect_usage_error(e2, "sequence parallelism needs tp >= 2");
    char dir[] = "/tmp/comet-llm-cli-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *f[] = { "bench", "llm", "--hidden", "32", "--heads", "2", "--ffn", "64", "--seq", "16",
        "--batch", "2", "--samples", "3", "--gate-timeout", "0", "--out", dir, "--json", "-q",
        NULL };
    int st = run(f, out, sizeof out, err, sizeof err);
    if (st != 0)
        fail_msg("bench llm exited %d: %s", st, err);
    assert_non_null(strstr(out, "\"kind\": \"llm\""));
    assert_non_null(strstr(out, "\"gemm_s\""));
    char prof[4096], res[4200];
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(prof, sizeof prof, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    snprintf(res, sizeof res, "%s/results", dir);
    char *g[] = { "validate", "--system", "--profile", prof, "--results", res, "--foreign-ok",
        "--json", NULL };
    st = run(g, out, sizeof out, err, sizeof err);
    if (st != 0)
        fail_msg("validate --system exited %d: %s", st, err);
    assert_non_null(strstr(out, "comet.validate_system.v1"));
    assert_non_null(strstr(out, "\"records\": 1"));
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_help_everywhere(void **s)
{
    (void)s;
    const char *subs[]
        = { "probe", "bench", "calibrate", "predict", "explore", "validate", "report", "run" };
    char out[65536], err[65536];
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char *a[] = { (char *)subs[i], "--help", NULL };
        int st = run(a, out, sizeof out, err, sizeof err);
        if (st != 0)
            fail_msg("comet %s --help exited %d", subs[i], st);
        assert_non_null(strstr(out, "usage: comet"));
        /* predict and explore show the system model's options without a
         * --workload too */
        if (!strcmp(subs[i], "predict") || !strcmp(subs[i], "explore"))
            assert_non_null(strstr(out, "--recompute R"));
    }
    char *a[] = { "--help", NULL };
    assert_int_equal(run(a, out, sizeof out, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
        assert_non_null(strstr(out, subs[i]));
}

/* --pipe-engine: a name the system model knows, else one usage line and
 * exit 2; deepspeed without interleaving costs more pipeline time than
 * megatron on the same configuration (its four blocking transfers) */
static void test_pipe_engine_flag(void **s)
{
    (void)s;
    char out[65536], err[65536];
    char *bad[] = { "predict", "--hw", "dgx-a100", "--chips", "64", "--workload", "gpt3-175b",
        "--parallel", "tp=8,pp=8,dp=1", "--pipe-engine", "pipedream", NULL };
    assert_int_equal(run(bad, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "comet: predict: --pipe-engine 'pipedream'"));
    double t[2];
    const char *eng[] = { "megatron", "deepspeed" };
    for (int i = 0; i < 2; i++) {
        char *a[] = { "predict", "--hw", "dgx-a100", "--chips", "64", "--workload", "gpt3-175b",
            "--batch", "64", "--recompute", "full", "--no-seq-parallel", "--execution", "kernel",
            "--parallel", "tp=8,pp=8,dp=1,microbatch=1", "--pipe-engine", (char *)eng[i], "--json",
            "-q", NULL };
        assert_int_equal(run(a, out, sizeof out, err, sizeof err), 0);
        const char *p = strstr(out, "\"pp_network\"");
        assert_non_null(p);
        t[i] = strtod(strchr(p, ':') + 1, NULL);
    }
    assert_true(t[1] > t[0] && t[0] > 0);
}

/* --cuts: a malformed list or names that are not the pass's kernels give one
 * line and exit 2 (the second lists the kernels); a valid assignment is
 * costed as given: never faster than the searched cut, which it names */
static void test_cuts_flag(void **s)
{
    (void)s;
    char out[65536], err[65536];
    const char *base[] = { "predict", "--hw", "sn10x8-ring-dfmodel", "--workload", "gpt3-175b",
        "--phase", "forward", "--batch", "64", "--no-seq-parallel", "--execution", "dataflow",
        "--parallel", "tp=8,pp=1,dp=1,microbatch=1", "-q" };
    enum { NB = sizeof base / sizeof base[0] };
    const char *spec[] = { "ln1++q", "ln1+qkv,score",
        "ln1+q+k+v,score+softmax+attn_drop+context+"
        "proj,res1+ln2+ffn_in,act+ffn_out+res2" };
    const char *want[] = { "comet: predict: --cuts 'ln1++q': a kernel name expected",
        "--cuts: the partitions do not name the forward pass's kernels in order, each once: ln1 "
        "qkv score",
        NULL };
    char *a[NB + 3];
    for (int i = 0; i < NB; i++)
        a[i] = (char *)base[i];
    a[NB] = "--cuts";
    a[NB + 2] = NULL;
    for (int i = 0; i < 2; i++) {
        a[NB + 1] = (char *)spec[i];
        assert_int_equal(run(a, out, sizeof out, err, sizeof err), 2);
        assert_non_null(strstr(err, want[i]));
        assert_null(strchr(strchr(err, '\n') + 1, '\n')); /* one line */
    }
    a[NB + 1] = (char *)spec[2];
    assert_int_equal(run(a, out, sizeof out, err, sizeof err), 0);
    const double given = strtod(strstr(out, "step") + 4, NULL);
    a[NB] = NULL;
    assert_int_equal(run(a, out, sizeof out, err, sizeof err), 0);
    const double best = strtod(strstr(out, "step") + 4, NULL);
    assert_true(given >= best && best > 0);
    char *k[] = { "predict", "--hw", "sn10x8-ring-dfmodel", "--workload", "gpt3-175b",
        "--execution", "kernel", "--parallel", "tp=8,pp=1,dp=1", "--cuts", "ln1+qkv", NULL };
    assert_int_equal(run(k, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "--execution kernel has none"));
    char *both[] = { "predict", "--hw", "sn10x8-ring-dfmodel", "--workload", "gpt3-175b",
        "--parallel", "tp=8,pp=1,dp=1", "--partitions", "2", "--cuts", "ln1+qkv", NULL };
    assert_int_equal(run(both, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "one or the other"));
}

static void test_no_args(void **s)
{
    (void)s;
    char out[65536], err[65536];
    char *a[] = { NULL };
    assert_int_equal(run(a, out, sizeof out, err, sizeof err), 2);
}

static void test_probe_json(void **s)
{
    (void)s;
    char out[65536], err[65536];
    char *a[] = { "probe", "--json", "--no-papi", NULL };
    assert_int_equal(run(a, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "\"cores\""));
    assert_non_null(strstr(out, "\"caches\""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_subcommand),
        cmocka_unit_test(test_unknown_flag),
        cmocka_unit_test(test_missing_value),
        cmocka_unit_test(test_bad_value),
        cmocka_unit_test(test_help_everywhere),
        cmocka_unit_test(test_gms_cli),
        cmocka_unit_test(test_system_cli),
        cmocka_unit_test(test_llm_cli),
        cmocka_unit_test(test_no_args),
        cmocka_unit_test(test_pipe_engine_flag),
        cmocka_unit_test(test_cuts_flag),
        cmocka_unit_test(test_probe_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
