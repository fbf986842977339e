/* The delay line's link arithmetic (tools/delayline.h) over thousands of
 * generated arrival sequences: a packet never arrives before its
 * serialisation plus the delay, order is kept, the wire never carries more
 * than its rate, it never idles while a packet waits, and a packet is
 * dropped exactly when the queue is full. Plus the parsers and the
 * program's bad-input exits (no root needed: nothing here opens a TUN).
 * With argv[1] "netns" (ctest test_delayline_netns, root, label long) the
 * program's own ends between two namespaces instead: its deadline (-t), the
 * end of the process that started it (-P), SIGTERM on an idle line, one end
 * deleted under it, no descriptor of its starter kept open, and
 * scripts/netns-veth.sh stopping its command when the line dies and the
 * line ending when the script is killed. Each ends with its one line; the
 * waits are bounds against a hang, never timings asserted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_helpers.h"

#include "delayline.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long long rng = 88172645463325252ULL;
#define unif() comet_test_urand(&rng)

static void test_properties(void **s)
{
    (void)s;
    int drops_seen = 0;
    for (int c = 0; c < 3000; c++) {
        const double rate = 1e6 * pow(10, 4 * unif()); /* 1 Mbit/s .. 10 Gbit/s */
        const double delay = c % 5 == 0 ? 0 : 1e3 * pow(10, 4 * unif()); /* 1 us .. 10 ms */
        const unsigned oh = c % 3 ? 38 : 0;
        const size_t queue = 1 + (size_t)(200 * unif());
        comet_delayline_dir d;
        assert_int_equal(comet_delayline_dir_init(&d, rate, delay, oh, queue), 0);
        const double nspb = 8e9 / rate;
        /* arrivals: bursts and gaps around the serialisation time */
        double t = 1e9 * unif(), prev_due = -INFINITY, prev_end = -INFINITY;
        double *ends = malloc(4000 * sizeof(double)); /* serialisation ends of admitted */
        size_t na = 0;
        const double load = 0.3 + 2 * unif(); /* offered load over the rate */
        for (int k = 0; k < 4000; k++) {
            const size_t len = 20 + (size_t)(1480 * unif());
            const double ser = (double)(len + oh) * nspb;
            t += unif() < 0.3 ? 0 : 2 * unif() * ser / load;
            /* packets queued or on the wire when this one arrives */
            size_t busy = 0;
            for (size_t i = na; i > 0 && ends[i - 1] > t; i--)
                busy++;
            const double due = comet_delayline_admit(&d, t, len);
            if (due < 0) {
                /* dropped only when the queue is full */
                assert_int_equal(busy, queue);
                drops_seen++;
                continue;
            }
            assert_true(busy < queue);
            const double end = due - delay;
            const double eps = 1e-6 * fabs(end) + 1e-3;
            /* no earlier than its own serialisation and the delay */
            assert_true(due >= t + ser + delay - eps);
            /* FIFO, and the wire carries one packet at a time at the rate */
            assert_true(due >= prev_due - eps);
            assert_true(end >= prev_end + ser - eps);
            /* work-conserving: it starts when it arrives or when the wire frees */
            assert_true(fabs(end - (fmax(t, prev_end) + ser)) <= eps);
            prev_due = due;
            prev_end = end;
            ends[na++] = end;
        }
        assert_int_equal(d.admitted + d.dropped, 4000);
        assert_int_equal(d.admitted, na);
        free(ends);
        comet_delayline_dir_free(&d);
    }
    /* the generated loads exceed the rate often enough to test the drops */
    assert_true(drops_seen > 0);
}

/* A TSO burst over thousands of generated cases: it takes the wire exactly
 * as long as its segments sent one by one (each repeating the headers and
 * paying the framing), it lands when its last segment would, it is never
 * earlier than its bytes at the rate plus the delay, and it is dropped
 * whole exactly when the queue cannot hold all its segments. */
static void test_bursts(void **s)
{
    (void)s;
    int drops = 0;
    for (int c = 0; c < 3000; c++) {
        const double rate = 1e6 * pow(10, 4 * unif());
        const double delay = c % 4 == 0 ? 0 : 1e3 * pow(10, 3 * unif());
        const unsigned oh = c % 3 ? 38 : 0;
        const size_t queue = 1 + (size_t)(300 * unif());
        comet_delayline_dir a, b; /* a: bursts; b: the same segments one by one */
        assert_int_equal(comet_delayline_dir_init(&a, rate, delay, oh, queue), 0);
        /* the reference times only: room for what rounding may keep queued */
        assert_int_equal(comet_delayline_dir_init(&b, rate, delay, oh, queue + 64), 0);
        const double nspb = 8e9 / rate;
        double t = 1e9 * unif();
        for (int k = 0; k < 300; k++) {
            const size_t segs = 1 + (size_t)(44 * unif() * unif());
            const size_t hdr = segs > 1 ? 40 + (size_t)(40 * unif()) : 0;
            const size_t payload = segs == 1 ? 20 + (size_t)(1480 * unif())
                                             : (segs - 1) * 1448 + 1 + (size_t)(1447 * unif());
            const size_t len = hdr + payload;
            t += unif() < 0.4 ? 0 : 2 * unif() * (double)(len + segs * oh) * nspb;
            const double free_before = a.wire_free;
            /* queue occupancy: the segments not yet fully serialised */
            size_t busy = 0;
            for (size_t i = 0; i < a.n; i++)
                busy += a.ser_end[(a.head + i) % a.queue_pkts] > t;
            const double due = comet_delayline_admit_burst(&a, t, len, segs, hdr);
            if (due < 0) {
                assert_true(busy + segs > queue);
                drops++;
                /* keep the reference in step: it drops the same burst */
                continue;
            }
            assert_true(busy + segs <= queue);
            /* the reference: segs packets of the same total bytes, one by one */
            const size_t wbytes = len + (segs - 1) * hdr;
            const double wire = (double)wbytes;
            double ref = -1;
            for (size_t g = 0; g < segs; g++)
                ref = comet_delayline_admit(&b, t, wbytes / segs + (g < wbytes % segs));
            const double ser = (wire + (double)(segs * oh)) * nspb;
            const double start = free_before > t ? free_before : t;
            const double eps = 1e-9 * fabs(due) + 1e-3;
            /* exactly the wire time of its segments, from when the wire frees */
            assert_true(fabs(due - (start + ser + delay)) <= 1e-6 * fabs(due) + 1e-3);
            /* as the segments sent one by one (to the bytes' rounding) */
            if (!(fabs(due - ref) <= eps))
                fail_msg("c %d k %d segs %zu due %.6f ref %.6f", c, k, segs, due, ref);
            /* never earlier than its bytes at the rate and the delay */
            assert_true(due >= t + ser + delay - 1e-6 * fabs(due) - 1e-3);
        }
        assert_int_equal(a.admitted, b.admitted);
        comet_delayline_dir_free(&a);
        comet_delayline_dir_free(&b);
    }
    assert_true(drops > 0);
}

static void test_parse(void **s)
{
    (void)s;
    double v;
    assert_int_equal(comet_delayline_parse_time("100us", &v), 0);
    assert_true(fabs(v - 1e5) < 1e-6);
    assert_int_equal(comet_delayline_parse_time("0.2ms", &v), 0);
    assert_true(fabs(v - 2e5) < 1e-6);
    assert_int_equal(comet_delayline_parse_time("0", &v), 0);
    assert_true(v == 0);
    assert_int_equal(comet_delayline_parse_time("50", &v), 0); /* tc: bare = us */
    assert_true(fabs(v - 5e4) < 1e-6);
    assert_int_equal(comet_delayline_parse_time("5parsecs", &v), -22);
    assert_int_equal(comet_delayline_parse_time("-1us", &v), -22);
    assert_int_equal(comet_delayline_parse_time("", &v), -22);
    assert_int_equal(comet_delayline_parse_rate("500mbit", &v), 0);
    assert_true(fabs(v - 5e8) < 1e-3);
    assert_int_equal(comet_delayline_parse_rate("1gbit", &v), 0);
    assert_true(fabs(v - 1e9) < 1e-3);
    assert_int_equal(comet_delayline_parse_rate("12500kbps", &v), 0); /* bytes */
    assert_true(fabs(v - 1e8) < 1e-3);
    assert_int_equal(comet_delayline_parse_rate("0mbit", &v), -22);
    assert_int_equal(comet_delayline_parse_rate("fast", &v), -22);
    comet_delayline_dir d;
    assert_int_equal(comet_delayline_dir_init(&d, 0, 0, 0, 1), -22);
    assert_int_equal(comet_delayline_dir_init(&d, 1e9, -1, 0, 1), -22);
    assert_int_equal(comet_delayline_dir_init(&d, 1e9, 0, 0, 0), -22);
}

/* bad input: one line on stderr, exit 2, before any device is made */
static void test_cli(void **s)
{
    (void)s;
    const char *bin = getenv("COMET_DELAYLINE");
    assert_non_null(bin);
    static const char *const bad[] = {
        "-a x -b y", /* no rate */
        "-a x -b y -r 5zbit", "-a x -b y -r 1gbit -d soon", "-a x -r 1gbit", /* one end */
        "-a @ns -b y -r 1gbit", /* no device */
        "-a x -b y@ -r 1gbit", /* no namespace */
        "-a x -b y -r 1gbit -m 10", "-a x -b y -r 1gbit -q 0", "-a x -b y -r 1gbit extra",
        "-a x -b y -r 1gbit -z", "-a x -b y -r", "-a x -b y -r 1gbit -g 65",
        "-a x -b y -r 1gbit -g -1", "-a x -b y -r 1gbit -t 0", "-a x -b y -r 1gbit -t soon",
        "-a x -b y -r 1gbit -t", /* a flag without its value */
    };
    char cmd[1024];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s %s 2>/dev/null", bin, bad[i]);
        const int st = system(cmd);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) != 2)
            fail_msg("'%s' exited %d, not 2", bad[i], WEXITSTATUS(st));
        /* exactly one line of error */
        snprintf(cmd, sizeof cmd, "%s %s 2>&1 >/dev/null | wc -l", bin, bad[i]);
        FILE *p = popen(cmd, "r");
        int lines = -1;
        assert_int_equal(fscanf(p, "%d", &lines), 1);
        pclose(p);
        assert_int_equal(lines, 1);
    }
    snprintf(cmd, sizeof cmd, "%s -h >/dev/null", bin);
    assert_int_equal(system(cmd), 0);
}

/* ---- between two namespaces (root) ---- */

static char ns[24], tmpd[64];

/* Runs cmd through the shell; returns its exit status (128 + signal). */
static int sh(const char *cmd)
{
    const int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* Does file f hold text? */
static int holds(const char *f, const char *text)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "grep -qF -- '%s' %s", text, f);
    return sh(cmd) == 0;
}

/* Waits (bounded: 60 s) until process pid is gone or a zombie. */
static int gone(pid_t pid)
{
    char path[64], line[128];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    for (int i = 0; i < 6000; i++) {
        FILE *f = fopen(path, "r");
        if (!f)
            return 1;
        int z = 0;
        while (fgets(line, sizeof line, f))
            z |= !strncmp(line, "State:", 6) && strchr(line, 'Z') != NULL;
        fclose(f);
        if (z)
            return 1;
        usleep(10000);
    }
    return 0;
}

/* Reads a pid from file (bounded wait for it to appear: 60 s). */
static pid_t pid_in(const char *file)
{
    for (int i = 0; i < 6000; i++) {
        FILE *f = fopen(file, "r");
        long v = 0;
        if (f) {
            const int ok = fscanf(f, "%ld", &v) == 1;
            fclose(f);
            if (ok && v > 0)
                return (pid_t)v;
        }
        usleep(10000);
    }
    return -1;
}

static void test_deadline(void **s)
{
    (void)s;
    char cmd[1024], err[128];
    snprintf(err, sizeof err, "%s/t.err", tmpd);
    snprintf(cmd, sizeof cmd, "%s -a dl0@%sA -b dl0@%sB -r 1gbit -d 50us -t 1 2>%s",
        getenv("COMET_DELAYLINE"), ns, ns, err);
    assert_int_equal(sh(cmd), 1);
    assert_true(holds(err, "comet-delayline: -t: its 1 s deadline passed; stopping"));
    /* its account still follows */
    assert_true(holds(err, "a->b: 0 packets"));
}

static void test_parent_ends(void **s)
{
    (void)s;
    char cmd[1024], err[128], pidf[128];
    snprintf(err, sizeof err, "%s/p.err", tmpd);
    snprintf(pidf, sizeof pidf, "%s/p.pid", tmpd);
    /* a shell starts it and leaves once it is up */
    snprintf(cmd, sizeof cmd,
        "sh -c '%s -a dl0@%sA -b dl0@%sB -r 1gbit -P -w %s 2>%s & "
        "while [ ! -f %s ]; do sleep 0.05; done'",
        getenv("COMET_DELAYLINE"), ns, ns, pidf, err, pidf);
    assert_int_equal(sh(cmd), 0);
    const pid_t pid = pid_in(pidf);
    assert_true(pid > 0);
    assert_true(gone(pid));
    assert_true(holds(err, "comet-delayline: -P: the process that started it"));
}

/* starts a 1 Gbit/s line between the test's namespaces, its stderr to
 * err and its pid to pidf; returns once it runs */
static pid_t start_line(const char *err, const char *pidf)
{
    char a[64], b[64];
    snprintf(a, sizeof a, "dl0@%sA", ns);
    snprintf(b, sizeof b, "dl0@%sB", ns);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        if (!freopen(err, "w", stderr))
            _exit(127);
        execl(getenv("COMET_DELAYLINE"), "comet-delayline", "-a", a, "-b", b, "-r", "1gbit", "-w",
            pidf, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(pid_in(pidf), child);
    return child;
}

static void test_sigterm_idle(void **s)
{
    (void)s;
    char err[128], pidf[128];
    snprintf(err, sizeof err, "%s/s.err", tmpd);
    snprintf(pidf, sizeof pidf, "%s/s.pid", tmpd);
    const pid_t child = start_line(err, pidf);
    /* idle: it waits in ppoll with no timeout; SIGTERM must end it there */
    assert_int_equal(kill(child, SIGTERM), 0);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_true(holds(err, "forwarding used"));
}

/* it keeps no descriptor of its starter open: a reader of a pipe the
 * starting shell held (here on fd 5) sees its end when the shell leaves,
 * while the line still runs */
static void test_no_inherited_fd(void **s)
{
    (void)s;
    char cmd[1024], pidf[128], buf[64];
    snprintf(pidf, sizeof pidf, "%s/f.pid", tmpd);
    snprintf(cmd, sizeof cmd,
        "sh -c 'exec 5>&1; %s -a dl0@%sA -b dl0@%sB -r 1gbit -w %s </dev/null >/dev/null "
        "2>&1 & while [ ! -f %s ]; do sleep 0.05; done; echo up'",
        getenv("COMET_DELAYLINE"), ns, ns, pidf, pidf);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    /* to the pipe's end: for ever if the line held fd 5 */
    while (fread(buf, 1, sizeof buf, p) > 0)
        n++;
    assert_true(n > 0);
    pclose(p);
    const pid_t line = pid_in(pidf);
    assert_true(line > 0);
    assert_int_equal(kill(line, SIGTERM), 0);
    assert_true(gone(line));
}

/* one end deleted under it (ip link del): it stops with one line, exit 1 */
static void test_end_deleted(void **s)
{
    (void)s;
    char err[128], pidf[128], cmd[256];
    snprintf(err, sizeof err, "%s/d.err", tmpd);
    snprintf(pidf, sizeof pidf, "%s/d.pid", tmpd);
    const pid_t child = start_line(err, pidf);
    snprintf(cmd, sizeof cmd, "ip -n %sB link del dl0", ns);
    assert_int_equal(sh(cmd), 0);
    int st = 0;
    assert_int_equal(waitpid(child, &st, 0), child);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 1);
    assert_true(holds(err, "comet-delayline: -b: the device went away"));
}

/* netns-veth.sh with a delay line: the line killed while the command runs
 * stops the command (exit 1, one line); the script killed ends the line
 * (-P) and its watcher stops the command. */
static void test_netns_veth(void **s)
{
    (void)s;
    const char *src = getenv("COMET_SOURCE_DIR");
    char script[1024], cmd[4096], err[128], pidf[128], log[128];
    snprintf(script, sizeof script, "%s/scripts/netns-veth.sh", src ? src : "..");
    snprintf(err, sizeof err, "%s/v.err", tmpd);
    snprintf(pidf, sizeof pidf, "%s/%sv-delayline.pid", tmpd, ns);
    snprintf(log, sizeof log, "%s/v.log", tmpd);
    /* the command kills the line, then would sleep a minute */
    snprintf(cmd, sizeof cmd,
        "TMPDIR=%s COMET_NETNS_NAME=%sv COMET_NETNS_DELAY=50us COMET_NETNS_DELAYLINE_LOG=%s "
        "%s with 1gbit sh -c 'kill -KILL $(cat %s); exec sleep 60' 2>%s",
        tmpd, ns, log, script, pidf, err);
    assert_int_equal(sh(cmd), 1);
    assert_true(holds(err, "netns-veth: the delay line (pid"));
    assert_true(holds(err, "ended while the command ran; stopping the command"));

    /* the script killed: the line ends with it, the command is stopped */
    snprintf(cmd, sizeof cmd,
        "TMPDIR=%s COMET_NETNS_NAME=%sv COMET_NETNS_DELAY=50us COMET_NETNS_DELAYLINE_LOG=%s "
        "exec %s with 1gbit sleep 60",
        tmpd, ns, log, script);
    const pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    const pid_t line = pid_in(pidf);
    assert_true(line > 0);
    assert_int_equal(kill(child, SIGKILL), 0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_true(gone(line));
    assert_true(holds(log, "comet-delayline: -P: the process that started it"));
    snprintf(cmd, sizeof cmd, "TMPDIR=%s COMET_NETNS_NAME=%sv %s down", tmpd, ns, script);
    assert_int_equal(sh(cmd), 0);
}

static int netns_main(void)
{
    if (geteuid() != 0 || sh("command -v ip >/dev/null 2>&1") != 0) {
        printf("# skipped: needs root and ip\n");
        return 77;
    }
    snprintf(ns, sizeof ns, "ctdl%ld", (long)getpid() % 1000000);
    snprintf(tmpd, sizeof tmpd, "/tmp/%s", ns);
    char cmd[512];
    snprintf(cmd, sizeof cmd,
        "rm -rf %s && mkdir -p %s && ip netns add %sA && ip netns add %sB 2>/dev/null", tmpd, tmpd,
        ns, ns);
    if (sh(cmd) != 0) {
        printf("# skipped: network namespaces cannot be made here\n");
        snprintf(cmd, sizeof cmd, "ip netns del %sA 2>/dev/null; rm -rf %s", ns, tmpd);
        (void)sh(cmd);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deadline),
        cmocka_unit_test(test_parent_ends),
        cmocka_unit_test(test_sigterm_idle),
        cmocka_unit_test(test_end_deleted),
        cmocka_unit_test(test_no_inherited_fd),
        cmocka_unit_test(test_netns_veth),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "ip netns del %sA; ip netns del %sB; rm -rf %s", ns, ns, tmpd);
    (void)sh(cmd);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "netns"))
        return netns_main();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_properties),
        cmocka_unit_test(test_bursts),
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
