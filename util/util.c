/* Shared support: errors, atomic output, clocks, logging, progress. */
#include "comet_util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

int comet_util_verbosity = 0;
volatile int comet_util_interrupted = 0;

const char *comet_util_strerror(int rc)
{
    if (rc == 0)
        return "success";
    if (rc < 0)
        return strerror(-rc);
    return "unknown error";
}

int comet_util_seterr(char *err, size_t errlen, int rc, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
        /* one line: messages never carry a newline */
        for (char *p = err; *p; p++)
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    return rc;
}

static int fsync_dir_of(const char *path)
{
    char *copy = strdup(path);
    int rc = 0;
    if (!copy)
        return -ENOMEM;
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        if (fsync(fd) != 0 && errno != EINVAL)
            rc = -errno;
        close(fd);
    }
    free(copy);
    return rc;
}

int comet_util_atomic_open(comet_util_atomic *a, const char *path, char *err, size_t errlen)
{
    int rc = 0;
    memset(a, 0, sizeof(*a));
    size_t n = strlen(path) + 32;
    a->path = strdup(path);
    a->tmp_path = malloc(n);
    if (!a->path || !a->tmp_path) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", path);
        goto fail;
    }
    snprintf(a->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(a->tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        rc = comet_util_seterr(err, errlen, -errno, "%s: cannot write: %s", path, strerror(errno));
        goto fail;
    }
    a->fp = fdopen(fd, "w");
    if (!a->fp) {
        rc = comet_util_seterr(err, errlen, -errno, "%s: %s", path, strerror(errno));
        close(fd);
        unlink(a->tmp_path);
        goto fail;
    }
    return 0;
fail:
    free(a->path);
    free(a->tmp_path);
    memset(a, 0, sizeof(*a));
    return rc;
}

void comet_util_atomic_abort(comet_util_atomic *a)
{
    if (a->fp) {
        fclose(a->fp);
        a->fp = NULL;
    }
    if (a->tmp_path)
        unlink(a->tmp_path);
    free(a->path);
    free(a->tmp_path);
    a->path = a->tmp_path = NULL;
}

int comet_util_atomic_commit(comet_util_atomic *a, char *err, size_t errlen)
{
    int rc = 0;
    if (!a->fp)
        return comet_util_seterr(err, errlen, -EINVAL, "atomic write not open");
    if (fflush(a->fp) != 0 || ferror(a->fp) || fsync(fileno(a->fp)) != 0) {
        rc = comet_util_seterr(err, errlen, -(errno ? errno : EIO), "%s: write failed: %s", a->path,
            strerror(errno ? errno : EIO));
        goto fail;
    }
    if (fclose(a->fp) != 0) {
        a->fp = NULL;
        rc = comet_util_seterr(
            err, errlen, -errno, "%s: write failed: %s", a->path, strerror(errno));
        goto fail;
    }
    a->fp = NULL;
    if (rename(a->tmp_path, a->path) != 0) {
        rc = comet_util_seterr(
            err, errlen, -errno, "%s: cannot rename into place: %s", a->path, strerror(errno));
        goto fail;
    }
    fsync_dir_of(a->path);
    free(a->path);
    free(a->tmp_path);
    a->path = a->tmp_path = NULL;
    return 0;
fail:
    comet_util_atomic_abort(a);
    return rc;
}

int comet_util_write_atomic(
    const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    comet_util_atomic a;
    int rc = comet_util_atomic_open(&a, path, err, errlen);
    if (rc)
        return rc;
    if (len && fwrite(data, 1, len, a.fp) != len) {
        rc = comet_util_seterr(err, errlen, -(errno ? errno : EIO), "%s: write failed: %s", path,
            strerror(errno ? errno : EIO));
        comet_util_atomic_abort(&a);
        return rc;
    }
    return comet_util_atomic_commit(&a, err, errlen);
}

int comet_util_mkdir_p(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    if (!path || !*path || strlen(path) >= sizeof(buf))
        return comet_util_seterr(err, errlen, -EINVAL, "invalid directory path");
    strcpy(buf, path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return comet_util_seterr(
                err, errlen, -errno, "%s: cannot create directory: %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return comet_util_seterr(
            err, errlen, -errno, "%s: cannot create directory: %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return comet_util_seterr(err, errlen, -ENOTDIR, "%s: not a directory", buf);
    if (access(buf, W_OK) != 0)
        return comet_util_seterr(err, errlen, -errno, "%s: not writable: %s", buf, strerror(errno));
    return 0;
}

int comet_util_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    int rc = 0;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return comet_util_seterr(err, errlen, -errno, "%s: %s", path, strerror(errno));
    for (;;) {
        /* every input is bounded: a device or an endless stream (--hw
         * /dev/zero) ends in a clear error, not a hang that eats memory */
        if (n > COMET_UTIL_READ_MAX) {
            rc = comet_util_seterr(err, errlen, -EFBIG,
                "%s: larger than %d MiB: not a comet input (a device or an endless stream?)", path,
                COMET_UTIL_READ_MAX >> 20);
            goto fail;
        }
        if (n + 4096 + 1 > cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                rc = comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, fp);
        n += got;
        if (got == 0)
            break;
    }
    if (ferror(fp)) {
        rc = comet_util_seterr(err, errlen, -EIO, "%s: read error", path);
        goto fail;
    }
    fclose(fp);
    buf[n] = '\0';
    *data = buf;
    if (len)
        *len = n;
    return 0;
fail:
    fclose(fp);
    free(buf);
    return rc;
}

int comet_util_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return -EINVAL;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -EOVERFLOW;
    if (end == s)
        return -EINVAL;
    uint64_t mult = 1;
    if (*end) {
        if (!strcmp(end, "k") || !strcmp(end, "K") || !strcmp(end, "KiB"))
            mult = 1ull << 10;
        else if (!strcmp(end, "M") || !strcmp(end, "MiB"))
            mult = 1ull << 20;
        else if (!strcmp(end, "G") || !strcmp(end, "GiB"))
            mult = 1ull << 30;
        else
            return -EINVAL;
    }
    if (v > UINT64_MAX / mult)
        return -EOVERFLOW;
    *out = (uint64_t)v * mult;
    return 0;
}

int comet_util_split_words(char *s, char **argv, int max)
{
    int n = 0;
    char *r = s, *w = s;
    while (*r) {
        while (*r == ' ' || *r == '\t')
            r++;
        if (!*r)
            break;
        if (n >= max)
            return -1;
        argv[n++] = w;
        char q = 0;
        while (*r && (q || (*r != ' ' && *r != '\t'))) {
            if (!q && (*r == '\'' || *r == '"'))
                q = *r++;
            else if (q && *r == q) {
                q = 0;
                r++;
            } else
                *w++ = *r++;
        }
        if (q)
            return -1;
        if (*r)
            r++;
        *w++ = '\0';
    }
    return n;
}

int comet_util_parse_double(const char *s, double *out)
{
    if (!s || !*s)
        return -EINVAL;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end)
        return -EINVAL;
    if (errno == ERANGE || !isfinite(v))
        return -ERANGE;
    *out = v;
    return 0;
}

int comet_util_mul_size(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return -EOVERFLOW;
    *out = a * b;
    return 0;
}

double comet_util_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *comet_util_iso_time(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

void comet_util_info(const char *fmt, ...)
{
    if (comet_util_verbosity < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void comet_util_debug(const char *fmt, ...)
{
    if (comet_util_verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void comet_util_progress_start(comet_util_progress *p, const char *label, size_t total)
{
    p->label = label;
    p->total = total;
    p->done = 0;
    p->t0 = p->last = comet_util_now();
    /* a line rewritten in place only on a terminal that can do it; a log
     * file or a pipe gets plain lines, fewer of them */
    const char *term = getenv("TERM");
    p->tty = isatty(2) && !(term && !strcmp(term, "dumb"));
    if (comet_util_verbosity >= 0)
        fprintf(stderr, "%s: starting (%zu steps)\n", label, total);
}

void comet_util_progress_step(comet_util_progress *p, size_t steps, const char *note)
{
    p->done += steps;
    double now = comet_util_now();
    const double every = p->tty ? 0.5 : 5.0;
    if (comet_util_verbosity < 0 || (now - p->last < every && p->done < p->total))
        return;
    if (!p->tty && p->done >= p->total && p->total)
        return; /* the end line says it */
    p->last = now;
    double el = now - p->t0;
    const char *pre = p->tty ? "\r" : "", *post = p->tty ? "\033[K" : "\n";
    if (p->total) {
        double frac = (double)p->done / (double)p->total;
        double eta = frac > 0 ? el * (1.0 / frac - 1.0) : 0.0;
        fprintf(stderr, "%s%s: %zu/%zu (%3.0f%%) %6.1fs elapsed, ETA %5.1fs %s%s", pre, p->label,
            p->done, p->total, 100.0 * frac, el, eta, note ? note : "", post);
    } else {
        fprintf(stderr, "%s%s: %zu done %6.1fs %s%s", pre, p->label, p->done, el, note ? note : "",
            post);
    }
    fflush(stderr);
}

void comet_util_progress_end(comet_util_progress *p)
{
    if (comet_util_verbosity >= 0)
        fprintf(stderr, "%s%s: %zu steps in %.1fs%s\n", p->tty ? "\r" : "", p->label, p->done,
            comet_util_now() - p->t0, p->tty ? "\033[K" : "");
}

static void on_signal(int sig)
{
    (void)sig;
    comet_util_interrupted = 1;
}

void comet_util_install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double comet_util_quantile(double *v, size_t n, double q)
{
    if (!v || n == 0 || !(q >= 0 && q <= 1))
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    const double pos = q * (double)(n - 1);
    const size_t i = (size_t)floor(pos);
    return i + 1 >= n ? v[n - 1] : v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

double comet_util_jnum(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

const char *comet_util_jstr(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* ------------------------------------------------------------------ */
/* The program's own executable, for re-executing comet                 */
/* ------------------------------------------------------------------ */

static char self_path[4096];
static int self_hosted;

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define COMET_HAVE_VALGRIND_H 1
#endif
#endif

/* Run under valgrind? Its client request where the header exists (free
 * natively), else its preload libraries. valgrind answers readlink on
 * /proc/self/exe with comet's path, but an exec of /proc/self/exe starts
 * its tool, which refuses to run on its own. */
static int under_valgrind(void)
{
#ifdef COMET_HAVE_VALGRIND_H
    if (RUNNING_ON_VALGRIND)
        return 1;
#endif
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload") != NULL;
}

void comet_util_self_init(const char *argv0)
{
    char img[4096], prog[4096] = "";
    ssize_t n = readlink("/proc/self/exe", img, sizeof img - 1);
    img[n > 0 ? n : 0] = '\0';
    self_hosted = 0;
    snprintf(self_path, sizeof self_path, "/proc/self/exe");
    if (!argv0 || !*argv0 || n <= 0)
        return;
    /* the program path: argv0 with a slash, else the first match on PATH */
    if (strchr(argv0, '/')) {
        if (!realpath(argv0, prog))
            prog[0] = '\0';
    } else {
        const char *path = getenv("PATH");
        char dir[4096], cand[8200];
        while (path && *path && !prog[0]) {
            size_t l = strcspn(path, ":");
            snprintf(dir, sizeof dir, "%.*s", (int)(l < sizeof dir ? l : sizeof dir - 1), path);
            snprintf(cand, sizeof cand, "%s/%s", l ? dir : ".", argv0);
            if (access(cand, X_OK) == 0 && !realpath(cand, prog))
                prog[0] = '\0';
            path += l + (path[l] == ':');
        }
    }
    /* a process image that is not the program (valgrind's tool, qemu-user):
     * /proc/self/exe would start that tool, not comet */
    if (prog[0] && (strcmp(prog, img) || under_valgrind())) {
        self_hosted = 1;
        snprintf(self_path, sizeof self_path, "%s", prog);
    }
}

const char *comet_util_self_exe(void)
{
    return self_path[0] ? self_path : "/proc/self/exe";
}

int comet_util_self_hosted(void)
{
    return self_hosted;
}

/* ------------------------------------------------------------------ */
/* Output folder lock                                                  */
/* ------------------------------------------------------------------ */

#include <sys/file.h>

int comet_util_lock_dir(const char *dir, const char *what, comet_util_lock *lk, int *stale_pid,
    char *err, size_t errlen)
{
    char real[4096];
    int rc;
    lk->fd = -1;
    lk->path[0] = '\0';
    if (stale_pid)
        *stale_pid = 0;
    if ((rc = comet_util_mkdir_p(dir, err, errlen)))
        return rc;
    if (!realpath(dir, real))
        return comet_util_seterr(err, errlen, -errno, "%s: %s", dir, strerror(errno));
    /* a comet started by the holder for this folder (run's stages) works under its lock */
    const char *held = getenv("COMET_LOCKED_DIR");
    if (held && !strcmp(held, real))
        return 0;
    if (strlen(real) + sizeof "/.comet.lock" > sizeof lk->path)
        return comet_util_seterr(err, errlen, -ENAMETOOLONG, "%s: path too long", dir);
    memcpy(lk->path, real, strlen(real));
    memcpy(lk->path + strlen(real), "/.comet.lock", sizeof "/.comet.lock");
    int fd = open(lk->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return comet_util_seterr(err, errlen, -errno, "%s: %s", lk->path, strerror(errno));
    char prev[512] = "";
    ssize_t n = pread(fd, prev, sizeof prev - 1, 0);
    prev[n > 0 ? n : 0] = '\0';
    prev[strcspn(prev, "\n")] = '\0';
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return comet_util_seterr(err, errlen, -EBUSY,
                "%s is in use by another comet (%s); wait for it or use another --out", dir,
                prev[0] ? prev : "holder unknown");
        return comet_util_seterr(err, errlen, -e, "%s: %s", lk->path, strerror(e));
    }
    /* the lock was free but the file still names a holder: that comet ended
     * without releasing it (killed), its work in this folder may be partial */
    if (prev[0] && stale_pid) {
        const char *p = strstr(prev, "pid ");
        *stale_pid = p ? atoi(p + 4) : -1;
    }
    char now[40], line[600];
    int len = snprintf(line, sizeof line, "pid %ld: %s, since %s\n", (long)getpid(),
        what ? what : "comet", comet_util_iso_time(now, sizeof now));
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len) {
        int e = errno ? errno : EIO;
        close(fd);
        return comet_util_seterr(err, errlen, -e, "%s: %s", lk->path, strerror(e));
    }
    lk->fd = fd;
    setenv("COMET_LOCKED_DIR", real, 1);
    return 0;
}

void comet_util_unlock_dir(comet_util_lock *lk)
{
    if (!lk || lk->fd < 0)
        return;
    /* an empty lock file: the last holder finished cleanly */
    if (ftruncate(lk->fd, 0) != 0) {
        /* nothing more to do: the lock itself goes with the descriptor */
    }
    close(lk->fd);
    lk->fd = -1;
    unsetenv("COMET_LOCKED_DIR");
}

#include <sys/prctl.h>

int comet_util_child_dies_with_parent(int parent)
{
    /* the kernel sends SIGKILL when the parent thread ends (a parent killed
     * with SIGKILL included): nobody is left to read what the child makes,
     * and a child finishing a step first (a memory sweep touching GiBs on a
     * loaded host) outlived its parent by seconds; the next run notices the
     * stale lock. A parent that already ended before this call is caught by
     * getppid. (A parent that is interrupted, not killed, forwards SIGTERM
     * and waits: cli_common.c.) */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0)
        return -errno;
    return getppid() == (pid_t)parent ? 0 : -ESRCH;
}

/*
 * OpenBLAS picks its kernels in a load-time constructor, before main, from
 * OPENBLAS_CORETYPE when set. An environment that pins an older core type
 * (e.g. Haswell on an AVX-512 machine) would make the unfused baseline slower
 * than OpenBLAS can be here, so by default (COMET_BLAS_CORE=auto) comet drops
 * the pin and re-executes itself once, letting OpenBLAS detect the CPU.
 * COMET_BLAS_CORE=keep keeps the environment; any other value is passed as the
 * core type. What was done is recorded in every record's machine object.
 */
void comet_util_blas_core_policy(char **argv)
{
    if (getenv("COMET_BLAS_CORE_POLICY"))
        return; /* already decided (this process or a parent comet) */
    const char *want = getenv("COMET_BLAS_CORE");
    const char *env = getenv("OPENBLAS_CORETYPE");
    char policy[128];
    if (!want || !*want)
        want = "auto";
    if (!strcmp(want, "keep") || (!strcmp(want, "auto") && (!env || !*env))
        || (env && !strcmp(want, env))) {
        snprintf(policy, sizeof policy, "%s: OPENBLAS_CORETYPE=%s", want,
            env && *env ? env : "(unset, detected)");
        setenv("COMET_BLAS_CORE_POLICY", policy, 1);
        return;
    }
    if (comet_util_self_hosted()) {
        /* under valgrind (or another tool that is the process image) a
         * re-exec would leave the tool: keep the core type as given */
        snprintf(policy, sizeof policy,
            "as given: run under a tool, no re-exec; "
            "OPENBLAS_CORETYPE=%.40s",
            env && *env ? env : "unset");
        setenv("COMET_BLAS_CORE_POLICY", policy, 1);
        return;
    }
    if (!strcmp(want, "auto")) {
        snprintf(policy, sizeof policy, "auto: dropped OPENBLAS_CORETYPE=%.40s, detected", env);
        unsetenv("OPENBLAS_CORETYPE");
    } else {
        snprintf(policy, sizeof policy, "set: OPENBLAS_CORETYPE=%.40s (was %.30s)", want,
            env && *env ? env : "unset");
        setenv("OPENBLAS_CORETYPE", want, 1);
    }
    setenv("COMET_BLAS_CORE_POLICY", policy, 1);
    execv(comet_util_self_exe(), argv);
    /* exec failed: carry on with the core type already loaded, and say so */
    snprintf(policy, sizeof policy, "as given: re-exec failed, OPENBLAS_CORETYPE=%.40s",
        env && *env ? env : "unset");
    setenv("COMET_BLAS_CORE_POLICY", policy, 1);
}

void comet_util_csv_field(FILE *fp, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

int comet_util_config_path(const char *kind, const char *name, char *path, size_t len)
{
    if (!kind || !name || !*name || !path || !len)
        return -EINVAL;
    size_t n = strlen(name);
    const int ext = (n > 5 && !strcmp(name + n - 5, ".yaml"))
        || (n > 4 && !strcmp(name + n - 4, ".yml")) || (n > 5 && !strcmp(name + n - 5, ".json"));
    /* an existing file is a file, whatever its name ("edge.txt", "myhw") */
    if (strchr(name, '/') || ext || access(name, F_OK) == 0) {
        if ((size_t)snprintf(path, len, "%s", name) >= len)
            return -ENAMETOOLONG;
        return 0;
    }
    /* a user's folder first, then the presets of the source tree */
    const char *env = getenv("COMET_CONFIGS");
    const char *dirs[2] = { env && *env ? env : NULL, COMET_SOURCE_DIR "/configs" };
    for (int i = 0; i < 2; i++) {
        if (!dirs[i])
            continue;
        if ((size_t)snprintf(path, len, "%s/%s/%s.yaml", dirs[i], kind, name) >= len)
            return -ENAMETOOLONG;
        if (access(path, R_OK) == 0)
            return 0;
    }
    return -ENOENT;
}
