/* Shared CLI conventions: global options, one-line errors, exit codes. */
#include "cli.h"

#include "comet_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *comet_cli_self = "comet";

int comet_cli_global_opt(comet_cli_global *g, int c, const char *optarg_)
{
    switch (c) {
    case 0x1001:
        g->json = 1;
        return 1;
    case 0x1002:
        g->out = optarg_;
        return 1;
    case 'q':
        g->quiet = 1;
        comet_util_verbosity = -1;
        return 1;
    case 'v':
        g->verbose = 1;
        comet_util_verbosity = 1;
        return 1;
    default:
        return 0;
    }
}

void comet_cli_error(const char *where, const char *fmt, ...)
{
    char msg[COMET_ERRLEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *p = msg; *p; p++)
        if (*p == '\n')
            *p = ' ';
    if (where && *where)
        fprintf(stderr, "comet: %s: %s\n", where, msg);
    else
        fprintf(stderr, "comet: %s\n", msg);
}

int comet_cli_bad_option(const char *sub, int argc, char **argv)
{
    /* optind points past the offending element (or at it for a missing value). */
    const char *arg = (optind - 1 >= 0 && optind - 1 < argc) ? argv[optind - 1] : "?";
    char where[64];
    snprintf(where, sizeof where, "%s", sub);
    if (optopt && optopt < 0x1000 && strchr("qvh", optopt) == NULL && arg[0] == '-'
        && arg[1] != '-')
        comet_cli_error(
            where, "option '-%c' is unknown or needs a value (see 'comet %s --help')", optopt, sub);
    else
        comet_cli_error(
            where, "option '%s' is unknown or needs a value (see 'comet %s --help')", arg, sub);
    return COMET_EXIT_USAGE;
}

int comet_cli_parse_pos(
    const char *sub, const char *flag, const char *val, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    int rc = comet_util_parse_u64(val, &v);
    if (rc == -EOVERFLOW || (rc == 0 && v > max)) {
        comet_cli_error(sub, "%s %s: too large (at most %llu)", flag, val, (unsigned long long)max);
        return COMET_EXIT_USAGE;
    }
    if (rc != 0 || v == 0) {
        comet_cli_error(sub, "%s '%s': expected a positive integer", flag, val);
        return COMET_EXIT_USAGE;
    }
    *out = v;
    return 0;
}

void comet_cli_getopt_reset(void)
{
    optind = 0; /* glibc: 0 fully reinitialises getopt */
    opterr = 0;
}

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int spawn(const char *const *args, const char *out_path);

int comet_cli_spawn_self(const char *const *args)
{
    return spawn(args, NULL);
}

int comet_cli_spawn_self_to(const char *const *args, const char *out_path)
{
    return spawn(args, out_path);
}

static int spawn(const char *const *args, const char *out_path)
{
    char tmp[4200];
    int fd = -1;
    if (out_path) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long)getpid());
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            return COMET_EXIT_FAIL;
    }
    char *argv[64];
    int n = 0;
    argv[n++] = (char *)"comet";
    for (int i = 0; args[i] && n < 63; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    fflush(stdout);
    fflush(stderr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        if (fd >= 0) {
            close(fd);
            unlink(tmp);
        }
        return COMET_EXIT_FAIL;
    }
    if (pid == 0) {
        /* its own process group: the stage and its children (mpiexec and
         * its ranks) are stopped together */
        setpgid(0, 0);
        if (comet_util_child_dies_with_parent(parent) == -ESRCH)
            _exit(127);
        if (fd >= 0)
            dup2(fd, 1);
        execv(comet_util_self_exe(), argv);
        execvp(comet_cli_self, argv);
        _exit(127);
    }
    setpgid(pid, pid); /* also from the parent: no race with the first kill */
    int st = 0, rc = COMET_EXIT_FAIL, sent = 0;
    double t_sig = 0;
    /* an interrupted comet passes the interruption on to its stage's whole
     * group (a kill of this process alone would leave the stage to finish
     * its work), and kills it if it has not ended 10 s later */
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid || (w < 0 && errno != EINTR))
            break;
        if (comet_util_interrupted && !sent) {
            kill(-pid, SIGTERM);
            sent = 1;
            t_sig = comet_util_now();
        } else if (sent && comet_util_now() - t_sig > 10) {
            kill(-pid, SIGKILL);
        }
        struct timespec ts = { 0, 20 * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
    if (WIFEXITED(st))
        rc = WEXITSTATUS(st) == 127 ? COMET_EXIT_FAIL : WEXITSTATUS(st);
    if (fd >= 0) {
        if (rc == 0 && fsync(fd) == 0 && close(fd) == 0) {
            if (rename(tmp, out_path) != 0)
                rc = COMET_EXIT_FAIL;
        } else {
            close(fd);
            unlink(tmp);
        }
    }
    return rc;
}

long comet_cli_spawn_ranks(const char *where, char *const *launcher_args, int nlauncher_args,
    int np, const char *const *tail, const char *const *env)
{
    /* mpiexec must start this binary: its path (comet_util_self_exe: not
     * valgrind's tool when run under it), /proc/self/exe resolved */
    static char self[4096];
    if (!self[0]) {
        const char *se = comet_util_self_exe();
        ssize_t sl = strcmp(se, "/proc/self/exe")
            ? (ssize_t)strlen(se)
            : readlink("/proc/self/exe", self, sizeof self - 1);
        if (sl <= 0 || (size_t)sl >= sizeof self) {
            comet_cli_error(where, "cannot resolve this program's path");
            self[0] = 0;
            return -ENOENT;
        }
        if (strcmp(se, "/proc/self/exe"))
            memcpy(self, se, (size_t)sl);
        self[sl] = '\0';
    }
    char nps[16];
    snprintf(nps, sizeof nps, "%d", np);
    /* mpiexec [launcher args] -n NP <this binary> <tail> */
    char *argv[128];
    int n = 0;
    argv[n++] = (char *)COMET_MPIEXEC;
    for (int i = 0; i < nlauncher_args && n < 64; i++)
        argv[n++] = launcher_args[i];
    argv[n++] = (char *)"-n";
    argv[n++] = nps;
    argv[n++] = self;
    for (int i = 0; tail[i] && n < 127; i++)
        argv[n++] = (char *)tail[i];
    argv[n] = NULL;
    fflush(NULL);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        setpgid(0, 0); /* its own group: the deadline kills mpiexec and every rank */
        /* mpiexec ends (and takes its ranks down) when this comet is killed */
        if (comet_util_child_dies_with_parent(parent) == -ESRCH)
            _exit(127);
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execvp(argv[0], argv);
        fprintf(stderr, "comet: %s: cannot run %s: %s\n", where, argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: no race with the parent's kill */
    return (long)pid;
}
