/* bench: statistics against known values, the /proc/stat parser on recorded
 * text, the idle gate, and the sampling loop. */
/* cmocka needs these first, in this order */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */

#include "bench_internal.h"
#include "comet_bench.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_ci_ranks(void **s)
{
    (void)s;
    /* Distribution-free CI of the median: the textbook ranks. */
    static const size_t n[] = { 6, 10, 20, 50, 100 };
    static const size_t lo[] = { 1, 2, 6, 18, 40 };
    static const size_t hi[] = { 6, 9, 15, 33, 61 };
    for (size_t i = 0; i < 5; i++) {
        size_t l, h;
        double cov;
        comet_bench_median_ci_ranks(n[i], &l, &h, &cov);
        assert_int_equal(l, lo[i]);
        assert_int_equal(h, hi[i]);
        assert_true(cov >= 0.95 && cov < 1.0);
    }
    /* n = 10: 1 - 2*11/1024 */
    size_t l, h;
    double cov;
    comet_bench_median_ci_ranks(10, &l, &h, &cov);
    assert_true(fabs(cov - (1.0 - 22.0 / 1024)) < 1e-12);
    /* Too few samples for 95%: widest interval, lower coverage stated. */
    comet_bench_median_ci_ranks(5, &l, &h, &cov);
    assert_int_equal(l, 1);
    assert_int_equal(h, 5);
    assert_true(fabs(cov - (1.0 - 2.0 / 32)) < 1e-12);
}

static void test_stats_known(void **s)
{
    (void)s;
    comet_bench_stats st;
    /* 20 values 1..20 in a scrambled order. */
    double x[20];
    for (int i = 0; i < 20; i++)
        x[i] = (double)((i * 7) % 20 + 1);
    assert_int_equal(comet_bench_stats_compute(x, 20, &st), 0);
    assert_int_equal(st.n, 20);
    assert_true(st.median == 10.5);
    assert_true(st.ci_lo == 6 && st.ci_hi == 15);
    assert_true(st.min == 1 && st.max == 20);
    assert_true(fabs(st.mean - 10.5) < 1e-12);
    /* type-7 p90 of 1..20: 1 + 0.9*19 = 18.1 */
    assert_true(fabs(st.p90 - 18.1) < 1e-12);
    /* input untouched */
    assert_true(x[1] == 8);

    double odd[] = { 5, 1, 3 };
    assert_int_equal(comet_bench_stats_compute(odd, 3, &st), 0);
    assert_true(st.median == 3 && st.ci_lo == 1 && st.ci_hi == 5);
    double one = 2.5;
    assert_int_equal(comet_bench_stats_compute(&one, 1, &st), 0);
    assert_true(st.median == 2.5 && st.p90 == 2.5 && st.ci_lo == 2.5);

    double bad[] = { 1, NAN, 2 };
    assert_int_equal(comet_bench_stats_compute(bad, 3, &st), -EINVAL);
    assert_int_equal(comet_bench_stats_compute(odd, 0, &st), -EINVAL);
}

/* The interval's real coverage on skewed (exponential) samples is >= 95%. */
static void test_ci_coverage(void **s)
{
    (void)s;
    unsigned long long state = 12345;
    int covered = 0, trials = 4000;
    const double true_median = log(2.0);
    double x[25];
    for (int t = 0; t < trials; t++) {
        for (int i = 0; i < 25; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            double u = ((double)(state >> 11) + 0.5) / 9007199254740992.0;
            x[i] = -log(u);
        }
        comet_bench_stats st;
        assert_int_equal(comet_bench_stats_compute(x, 25, &st), 0);
        covered += st.ci_lo <= true_median && true_median <= st.ci_hi;
    }
    double cov = (double)covered / trials;
    /* exact coverage for n = 25 is 0.9567; allow Monte Carlo noise */
    assert_true(cov > 0.94 && cov < 0.975);
}

/* Recorded from this VM's /proc/stat. */
static const char stat_a[] = "cpu  3467 0 5530 798391 802 0 69 36 0 0\n"
                             "cpu0 1226 0 1982 400912 49 0 14 16 0 0\n"
                             "cpu1 2240 0 3547 397479 752 0 55 20 0 0\n"
                             "intr 1234 0 0\nctxt 99\nbtime 1763800000\n";
static const char stat_b[] = "cpu  3567 0 5550 798461 802 0 69 46 0 0\n"
                             "cpu0 1276 0 1992 400947 49 0 14 21 0 0\n"
                             "cpu1 2290 0 3557 397514 752 0 55 25 0 0\n";

static void test_cpustat_parse(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_bench_cpustat a, b;
    assert_int_equal(comet_bench_cpustat_parse(stat_a, &a, err, sizeof err), 0);
    assert_int_equal(a.ncpu, 2);
    /* busy = user+nice+system+irq+softirq+steal */
    assert_int_equal(a.busy, 3467 + 0 + 5530 + 0 + 69 + 36);
    assert_int_equal(a.total, a.busy + 798391 + 802);
    assert_int_equal(comet_bench_cpustat_parse(stat_b, &b, err, sizeof err), 0);
    /* delta: busy 100+20+10 = 130 of 130+70 = 200 */
    assert_true(fabs(comet_bench_cpustat_busy(&a, &b) - 0.65) < 1e-12);
    assert_true(comet_bench_cpustat_busy(&a, &a) < 0);

    assert_int_equal(comet_bench_cpustat_parse("intr 1\nctxt 2\n", &a, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "no aggregate"));
    assert_int_equal(
        comet_bench_cpustat_parse("cpu0 1 2\ncpu  12 x\n", &a, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, ":2:"));
}

static void test_gate(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_bench_gate g;
    comet_bench_load l;
    comet_bench_gate_defaults(&g);
    /* A frozen recording never shows time passing: the gate must time out. */
    char path[] = "/tmp/comet_gate_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, stat_a, strlen(stat_a)), (ssize_t)strlen(stat_a));
    close(fd);
    g.path = path;
    g.window_s = 0.02;
    g.timeout_s = 0.1;
    assert_int_equal(comet_bench_gate_wait(&g, &l, err, sizeof err), 0);
    assert_int_equal(l.idle, 0);
    assert_true(l.waited_s >= 0.1);
    assert_int_equal(l.spent, 0);
    /* A budget over all waits: the wait that reaches it stops there, and
     * every later one looks once and measures ("budget spent"). */
    g.timeout_s = 3600;
    g.budget_s = comet_bench_gate_waited_total() + 0.1;
    assert_int_equal(comet_bench_gate_wait(&g, &l, err, sizeof err), 0);
    assert_int_equal(l.idle, 0);
    assert_int_equal(l.spent, 0);
    assert_true(comet_bench_gate_waited_total() >= g.budget_s);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(comet_bench_gate_wait(&g, &l, err, sizeof err), 0);
        assert_int_equal(l.spent, 1);
        assert_int_equal(l.idle, 0);
    }
    json_t *lj = comet_bench_load_json(&l);
    assert_string_equal(json_string_value(json_object_get(lj, "gate")), "budget spent");
    json_decref(lj);
    g.budget_s = 0;
    g.timeout_s = 0.1;
    unlink(path);
    /* A missing file is an error naming it. */
    g.path = "/nonexistent/stat";
    assert_true(comet_bench_gate_wait(&g, &l, err, sizeof err) < 0);
    assert_non_null(strstr(err, "/nonexistent/stat"));
    /* Threshold above 100%: the real machine always counts as idle. */
    g.path = NULL;
    g.threshold = 1.01;
    assert_int_equal(comet_bench_gate_wait(&g, &l, err, sizeof err), 0);
    assert_int_equal(l.idle, 1);
    assert_true(l.busy_others >= 0 && l.busy_others <= 1);
    /* Timeout 0 disables the gate. */
    g.timeout_s = 0;
    assert_int_equal(comet_bench_gate_wait(&g, &l, err, sizeof err), 0);
    assert_int_equal(l.skipped, 1);
}

typedef struct spin_ctx {
    size_t calls;
    size_t fail_after;
    volatile double acc;
    size_t batches, first_reps; /* calls of the body, and the first one's reps */
} spin_ctx;

static int spin(void *ctx, size_t reps)
{
    spin_ctx *c = ctx;
    if (c->batches++ == 0)
        c->first_reps = reps;
    for (size_t r = 0; r < reps; r++) {
        if (c->fail_after && ++c->calls > c->fail_after)
            return -EIO;
        for (int i = 0; i < 2000; i++)
            c->acc += 1e-9 * i;
    }
    return 0;
}

static void test_measure(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    comet_bench_config cfg;
    comet_bench_result r;
    comet_bench_config_defaults(&cfg);
    cfg.gate.timeout_s = 0;
    cfg.warmup_s = 0.01;
    cfg.min_sample_s = 0.001;
    cfg.min_samples = 8;
    cfg.max_samples = 30;
    cfg.time_cap_s = 0.2;
    spin_ctx c = { 0 };
    assert_int_equal(comet_bench_measure(&cfg, spin, &c, &r, err, sizeof err), 0);
    assert_true(r.n >= 8 && r.n <= 30);
    assert_true(r.reps >= 1);
    assert_int_equal(r.stats.n, r.n);
    for (size_t i = 0; i < r.n; i++)
        assert_true(r.samples[i] > 0 && r.samples[i] >= r.stats.min);
    assert_true(r.stats.ci_lo <= r.stats.median && r.stats.median <= r.stats.ci_hi);
    /* Converged means the CI target really holds. */
    if (r.converged)
        assert_true((r.stats.ci_hi - r.stats.ci_lo) / 2 <= cfg.target_ci * r.stats.median);
#if defined(__x86_64__)
    /* the clock timed around the samples: a real core runs at 0.2-10 GHz */
    if (!(r.clock_mhz > 200 && r.clock_mhz < 10000))
        fail_msg("clock %g MHz", r.clock_mhz);
#endif
    comet_bench_result_free(&r);

    /* A settled set with known reps warms up with exactly one batch of
     * them, whatever the warm-up time: the body runs once more than the
     * samples, its first call with those reps. Without the reps a settled
     * set still starts its doubling batches at one call. */
    for (size_t k = 1; k <= 64; k *= 4) {
        spin_ctx w = { 0 };
        cfg.settled = 1;
        cfg.settled_reps = k;
        cfg.warmup_s = 10.0; /* would never end as a time floor */
        assert_int_equal(comet_bench_measure(&cfg, spin, &w, &r, err, sizeof err), 0);
        assert_int_equal(w.first_reps, k);
        assert_int_equal(w.batches, r.n + 1);
        comet_bench_result_free(&r);
    }
    {
        spin_ctx w = { 0 };
        cfg.settled_reps = 0;
        cfg.warmup_s = 0.02;
        assert_int_equal(comet_bench_measure(&cfg, spin, &w, &r, err, sizeof err), 0);
        /* the doubling starts at one call; how many batches fit in the
         * time floor depends on the machine's load, so only "at least one" */
        assert_int_equal(w.first_reps, 1);
        assert_true(w.batches >= r.n + 1);
        comet_bench_result_free(&r);
    }
    cfg.settled = 0;
    cfg.warmup_s = 0.01;

    /* An error from the body surfaces, nothing leaks. */
    spin_ctx f = { 0 };
    f.fail_after = 5;
    assert_int_equal(comet_bench_measure(&cfg, spin, &f, &r, err, sizeof err), -EIO);
    assert_null(r.samples);
    cfg.max_samples = 0;
    assert_int_equal(comet_bench_measure(&cfg, spin, &c, &r, err, sizeof err), -EINVAL);
}

static void test_counters(void **s)
{
    (void)s;
    comet_bench_counters c;
    comet_bench_counters_init(&c, NULL);
    /* Either counting works, or it says why not (this VM has no PMU). */
    if (!c.enabled)
        assert_true(strlen(c.reason) > 0);
    else
        assert_true(c.nevents > 0);
    comet_bench_counters_start(&c);
    comet_bench_counters_stop(&c);
    comet_bench_counters_fini(&c);
}

static void test_pin(void **s)
{
    (void)s;
    char err[COMET_ERRLEN];
    assert_true(comet_bench_ncores() >= 1);
    int rc = comet_bench_pin(1, err, sizeof err);
    if (rc)
        assert_true(strlen(err) > 0);
    assert_int_equal(comet_bench_pin(0, err, sizeof err), 0);
}

/* The arena: a 2 MiB-aligned first buffer, the others at page + i x 256
 * bytes, NULL for an empty one, writable, the same offsets in every arena,
 * an overflowing request refused, and a second free harmless. */
static void test_arena(void **st)
{
    (void)st;
    bench_arena a = { NULL, 0 }, b = { NULL, 0 };
    const size_t sizes[4] = { 5000, 0, 100, 1 << 20 };
    void *p[4], *q[4];
    assert_int_equal(bench_arena_carve(&a, sizes, p, 4), 0);
    assert_int_equal(bench_arena_carve(&b, sizes, q, 4), 0);
    assert_int_equal((uintptr_t)p[0] % (2u << 20), 0);
    assert_null(p[1]);
    for (int i = 0; i < 4; i++) {
        if (!p[i])
            continue;
        assert_int_equal((uintptr_t)p[i] % 4096, (size_t)i * 256 % 4096);
        assert_int_equal((char *)p[i] - (char *)p[0], (char *)q[i] - (char *)q[0]);
        memset(p[i], 0x5a, sizes[i]);
    }
    /* buffers do not overlap: each starts past the previous one's end */
    assert_true((char *)p[2] >= (char *)p[0] + sizes[0]);
    assert_true((char *)p[3] >= (char *)p[2] + sizes[2]);
    const size_t huge[2] = { SIZE_MAX / 2, SIZE_MAX / 2 };
    void *r[2];
    bench_arena c = { NULL, 0 };
    assert_int_equal(bench_arena_carve(&c, huge, r, 2), -EOVERFLOW);
    assert_null(c.map);
    bench_arena_free(&a);
    bench_arena_free(&a);
    bench_arena_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ci_ranks),
        cmocka_unit_test(test_stats_known),
        cmocka_unit_test(test_ci_coverage),
        cmocka_unit_test(test_cpustat_parse),
        cmocka_unit_test(test_gate),
        cmocka_unit_test(test_measure),
        cmocka_unit_test(test_counters),
        cmocka_unit_test(test_pin),
        cmocka_unit_test(test_arena),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
