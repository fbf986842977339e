/* Full disk: every writer pointed at a tiny tmpfs (mounted in a private
 * mount namespace of this process, so nothing leaks to the host and it goes
 * away with the process) gives a one-line error naming the path and ENOSPC,
 * exits non-zero, leaves no temporary or half-written file, and leaves a
 * previous output byte for byte as it was. A results file that fills up
 * keeps only complete lines. Skips (exit 77) when not root or when the
 * namespace or the mount cannot be made. */
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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

/* The tmpfs: small enough to fill in a moment, large enough for a run
 * record (the machine object is a few KiB). */
#define FULL_SIZE "192k"

static char mnt[64];
static char work[64]; /* inputs and captured output, on the real disk */

static const char *src_dir(void)
{
    const char *s = getenv("COMET_SOURCE_DIR");
    return s ? s : COMET_SOURCE_DIR;
}

static const char *bin(void)
{
    const char *b = getenv("COMET_BINARY");
    return b ? b : "comet";
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

/* Fills the tmpfs until at most `leave` bytes are free (0: completely). */
static void fill(size_t leave)
{
    char path[128], buf[4096];
    snprintf(path, sizeof path, "%s/.fill", mnt);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    assert_true(fd >= 0);
    memset(buf, 0xa5, sizeof buf);
    for (;;) {
        struct statvfs sv;
        assert_int_equal(statvfs(mnt, &sv), 0);
        size_t avail = (size_t)sv.f_bavail * sv.f_frsize;
        if (avail <= leave)
            break;
        size_t chunk = avail - leave < sizeof buf ? avail - leave : sizeof buf;
        if (write(fd, buf, chunk) <= 0)
            break; /* ENOSPC: full */
    }
    close(fd);
}

/* Empties the tmpfs between tests. */
static int reset(void **s)
{
    (void)s;
    return shf("rm -rf %s/* %s/.fill", mnt, mnt) == 0 ? 0 : -1;
}

/* Runs a comet command line (after the binary), stderr into work/err.txt. */
static int comet(const char *fmt, ...)
{
    char args[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return shf("%s %s 2>%s/err.txt", bin(), args, work);
}

/* stderr held exactly one error line (warnings aside, e.g. an older
 * schema converted) and it holds each of the needles. */
static void one_line_error(const char *n1, const char *n2)
{
    char path[128];
    snprintf(path, sizeof path, "%s/err.txt", work);
    char *all = slurp(path), *e = all;
    assert_non_null(all);
    while (
        strstr(e, ": warning: ") && strchr(e, '\n') && strstr(e, ": warning: ") < strchr(e, '\n'))
        e = strchr(e, '\n') + 1;
    char *nl = strchr(e, '\n');
    if (!nl || nl[1] != 0)
        fail_msg("stderr is not one error line: '%s'", all);
    if ((n1 && !strstr(e, n1)) || (n2 && !strstr(e, n2)))
        fail_msg("stderr '%s' lacks '%s' / '%s'", e, n1 ? n1 : "", n2 ? n2 : "");
    if (!strstr(e, "comet: "))
        fail_msg("stderr '%s' lacks the 'comet: ' prefix", e);
    free(all);
}

/* No file under dir whose name holds ".tmp." (an atomic write's temp). */
static void no_temp_files(const char *dir)
{
    int found = shf("find %s -name '*.tmp.*' | grep -q .", dir);
    if (found == 0)
        fail_msg("a temporary file was left under %s", dir);
}

static const char nospc[] = "No space left on device";

/* The writer API directly: appends until the disk is full; the error names
 * the file and ENOSPC and the file reads back cleanly with every line that
 * was reported written. */
static void test_writer_append(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/results/r.jsonl", mnt);
    comet_results_writer w;
    comet_bench_run run;
    json_t *m = json_pack("{s:s,s:s,s:i}", "id", "m1", "cpu_model", "test", "cores", 2);
    assert_int_equal(comet_bench_run_init(&run, "memory", m, err, sizeof err), 0);
    json_decref(m);
    assert_int_equal(comet_results_writer_open(&w, path, err, sizeof err), 0);
    fill(10 * 1024);
    int rc = 0;
    size_t tries = 0;
    while (rc == 0 && tries++ < 100000) {
        json_t *rec = comet_bench_record_new(
            &run, "memory", "read", NULL, json_pack("{s:I}", "bytes", (json_int_t)4096), 1);
        comet_bench_result r;
        memset(&r, 0, sizeof r);
        double smp[1] = { 1e-6 };
        r.samples = smp;
        r.n = 1;
        r.stats.n = 1;
        r.stats.median = r.stats.ci_lo = r.stats.ci_hi = r.stats.min = 1e-6;
        comet_bench_record_set_result(rec, &r, 0, 4096);
        /* padding in a field the results table knows (the writer refuses others) */
        json_object_set_new(
            rec, "workload", json_string("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
        rc = comet_results_writer_append(&w, rec, err, sizeof err);
        json_decref(rec);
    }
    assert_int_equal(rc, -ENOSPC);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, nospc));
    size_t written = w.lines;
    assert_true(written > 0);
    comet_results_writer_close(&w, NULL, 0);
    comet_bench_run_fini(&run);
    json_t **recs = NULL;
    size_t n = 0;
    err[0] = 0;
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    if (err[0])
        fail_msg("reading the full file warned: %s", err);
    assert_int_equal(n, written);
    comet_results_json_free(recs, n);
}

/* util's atomic writer: a full disk fails with ENOSPC naming the path,
 * the previous file stays, the temporary is gone. */
static void test_atomic_util(void **s)
{
    (void)s;
    char path[128], err[COMET_ERRLEN] = "";
    snprintf(path, sizeof path, "%s/out.json", mnt);
    assert_int_equal(comet_util_write_atomic(path, "old\n", 4, err, sizeof err), 0);
    fill(0);
    size_t big = 256 * 1024;
    char *data = malloc(big);
    assert_non_null(data);
    memset(data, 'x', big);
    int rc = comet_util_write_atomic(path, data, big, err, sizeof err);
    free(data);
    assert_int_equal(rc, -ENOSPC);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, nospc));
    char *after = slurp(path);
    assert_non_null(after);
    assert_string_equal(after, "old\n");
    free(after);
    no_temp_files(mnt);
}

/* comet bench memory --out on a disk that fills during the run: exit 1,
 * one line naming the results file, every line kept reads back. */
static void test_bench_memory(void **s)
{
    (void)s;
    fill(12 * 1024);
    int rc = comet("bench memory --quick -q --no-pin --gate-timeout 0 --time-cap 0.02 "
                   "--max-bytes 64K --out %s/o",
        mnt);
    assert_int_equal(rc, 1);
    char rdir[128];
    snprintf(rdir, sizeof rdir, "%s/o/results/memory-", mnt);
    one_line_error(rdir, nospc);
    /* the one results file: complete lines only, the run record first */
    char cmd[256], path[512] = "";
    snprintf(cmd, sizeof cmd, "ls %s/o/results/*.jsonl", mnt);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    assert_non_null(fgets(path, sizeof path, p));
    pclose(p);
    path[strcspn(path, "\n")] = 0;
    json_t **recs = NULL;
    size_t n = 0;
    char err[COMET_ERRLEN] = "";
    assert_int_equal(comet_results_load_json(path, NULL, &recs, &n, NULL, err, sizeof err), 0);
    if (err[0])
        fail_msg("results file has a torn line: %s", err);
    assert_true(n >= 1);
    assert_string_equal(json_string_value(json_object_get(recs[0], "kind")), "run");
    comet_results_json_free(recs, n);
    no_temp_files(mnt);
}

/* comet calibrate --from FIXTURE --out on a full disk: exit 1, the
 * previous profile byte for byte intact. */
static void test_calibrate(void **s)
{
    (void)s;
    char prof[128];
    snprintf(prof, sizeof prof, "%s/profile.json", mnt);
    assert_int_equal(shf("cp %s/tests/fixtures/report/profile.json %s", src_dir(), prof), 0);
    char *before = slurp(prof);
    assert_non_null(before);
    fill(0);
    int rc = comet(
        "calibrate -q --foreign-ok --from %s/tests/fixtures/report --out %s", src_dir(), prof);
    assert_int_equal(rc, 1);
    one_line_error(prof, nospc);
    char *after = slurp(prof);
    assert_non_null(after);
    assert_string_equal(before, after);
    free(before);
    free(after);
    no_temp_files(mnt);
}

/* comet report on a full disk: exit 1 naming a report file; the previous
 * index.html stays as it was. */
static void test_report(void **s)
{
    (void)s;
    char rdir[128], idx[160];
    snprintf(rdir, sizeof rdir, "%s/report", mnt);
    snprintf(idx, sizeof idx, "%s/index.html", rdir);
    assert_int_equal(comet_util_mkdir_p(rdir, NULL, 0), 0);
    assert_int_equal(comet_util_write_atomic(idx, "<p>old</p>\n", 11, NULL, 0), 0);
    fill(0);
    int rc
        = comet("report -q --foreign-ok --from %s/tests/fixtures/report --out %s", src_dir(), rdir);
    assert_int_equal(rc, 1);
    one_line_error(rdir, nospc);
    char *after = slurp(idx);
    assert_non_null(after);
    assert_string_equal(after, "<p>old</p>\n");
    free(after);
    no_temp_files(mnt);
}

/* comet validate writes DIR/validate.json: a full disk is an error. */
static void test_validate(void **s)
{
    (void)s;
    fill(0);
    int rc = comet("validate -q --foreign-ok --profile %s/tests/fixtures/report/profile.json "
                   "--results %s/tests/fixtures/report --out %s/v >/dev/null",
        src_dir(), src_dir(), mnt);
    assert_int_equal(rc, 1);
    char want[128];
    snprintf(want, sizeof want, "%s/v/validate.json", mnt);
    one_line_error(want, nospc);
    struct stat st;
    assert_int_not_equal(stat(want, &st), 0);
    no_temp_files(mnt);
}

/* comet explore --pareto FILE and comet bench export --csv FILE. */
static void test_explore_export(void **s)
{
    (void)s;
    char out[128];
    snprintf(out, sizeof out, "%s/pareto.csv", mnt);
    fill(0);
    int rc = comet("explore -q --hw edge --op gemm_softmax --shape M=256,N=256,K=64 --pareto %s "
                   ">/dev/null",
        out);
    assert_int_equal(rc, 1);
    one_line_error(out, nospc);
    struct stat st;
    assert_int_not_equal(stat(out, &st), 0);
    snprintf(out, sizeof out, "%s/export.csv", mnt);
    rc = comet(
        "bench export -q %s/tests/fixtures/report/results/kernels-20261122T140635Z-28525.jsonl "
        "--csv %s",
        src_dir(), out);
    assert_int_not_equal(rc, 0);
    one_line_error(out, nospc);
    assert_int_not_equal(stat(out, &st), 0);
    no_temp_files(mnt);
}

/* comet predict --json > FILE on a full disk: the lost output is an
 * error, not exit 0 with a truncated file. */
static void test_predict_stdout(void **s)
{
    (void)s;
    fill(0);
    int rc = shf("%s predict -q --hw edge --op gemm_softmax --shape M=256,N=256,K=64 --json "
                 ">%s/pred.json 2>%s/err.txt",
        bin(), mnt, work);
    assert_int_equal(rc, 1);
    one_line_error("standard output", nospc);
}

/* comet probe --out DIR writes DIR/machine.json. */
static void test_probe(void **s)
{
    (void)s;
    fill(0);
    int rc = comet("probe -q --no-papi --out %s/p >/dev/null", mnt);
    assert_int_equal(rc, 1);
    char want[128];
    snprintf(want, sizeof want, "%s/p/machine.json", mnt);
    one_line_error(want, nospc);
    no_temp_files(mnt);
}

/* A private mount namespace with a tmpfs at mnt; 77 when impossible. */
static int mount_tmpfs(void)
{
    if (geteuid() != 0) {
        fprintf(stderr, "skip: not root (mounting a tmpfs needs CAP_SYS_ADMIN)\n");
        return 77;
    }
    if (unshare(CLONE_NEWNS) != 0) {
        fprintf(stderr, "skip: unshare(CLONE_NEWNS): %s\n", strerror(errno));
        return 77;
    }
    /* nothing mounted here propagates back to the host */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        fprintf(stderr, "skip: making / private: %s\n", strerror(errno));
        return 77;
    }
    snprintf(mnt, sizeof mnt, "/tmp/comet-full-XXXXXX");
    if (!mkdtemp(mnt))
        return 77;
    if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=" FULL_SIZE) != 0) {
        fprintf(stderr, "skip: mount tmpfs on %s: %s\n", mnt, strerror(errno));
        rmdir(mnt);
        return 77;
    }
    return 0;
}

int main(void)
{
    int rc = mount_tmpfs();
    if (rc)
        return rc;
    snprintf(work, sizeof work, "/tmp/comet-fullw-XXXXXX");
    if (!mkdtemp(work)) {
        umount2(mnt, MNT_DETACH);
        rmdir(mnt);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_writer_append, reset),
        cmocka_unit_test_teardown(test_atomic_util, reset),
        cmocka_unit_test_teardown(test_bench_memory, reset),
        cmocka_unit_test_teardown(test_calibrate, reset),
        cmocka_unit_test_teardown(test_report, reset),
        cmocka_unit_test_teardown(test_validate, reset),
        cmocka_unit_test_teardown(test_explore_export, reset),
        cmocka_unit_test_teardown(test_predict_stdout, reset),
        cmocka_unit_test_teardown(test_probe, reset),
    };
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    /* always clean up: the mount (it would vanish with the namespace
     * anyway), the mount point and the work folder */
    umount2(mnt, MNT_DETACH);
    rmdir(mnt);
    shf("rm -rf %s", work);
    return rc;
}
