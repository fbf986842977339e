/* Helpers shared by the tests (header only). */
#ifndef COMET_TEST_HELPERS_H
#define COMET_TEST_HELPERS_H

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/*
 * Waits until process pid has a handler for signal sig (the SigCgt mask of
 * /proc/PID/status), so that a test's signal tests the handler and not the
 * default action, however slowly a busy machine starts the process. Polls
 * every 10 ms for at most max_s seconds: a bound against a hang, never a
 * margin a loaded machine has to meet (600 s). @return 0 when caught, -1
 * when the process is gone or the bound passed.
 */
static inline int comet_test_wait_caught(pid_t pid, int sig, double max_s)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    const struct timespec tick = { 0, 10 * 1000 * 1000 };
    for (double waited = 0; waited < max_s; waited += 0.01) {
        FILE *f = fopen(path, "r");
        if (!f)
            return -1;
        unsigned long long mask = 0;
        int zombie = 0;
        while (fgets(line, sizeof line, f)) {
            if (!strncmp(line, "SigCgt:", 7))
                sscanf(line + 7, "%llx", &mask);
            if (!strncmp(line, "State:", 6) && strchr(line, 'Z'))
                zombie = 1;
        }
        fclose(f);
        if (zombie)
            return -1;
        if (mask & (1ull << (sig - 1)))
            return 0;
        nanosleep(&tick, NULL);
    }
    return -1;
}

/*
 * Marsaglia's xorshift64 (shifts 13, 7, 17): the generated cases of the
 * property tests, the same on every machine. *s is the generator's state
 * (never 0). @return a double in [0, 1).
 */
static inline double comet_test_urand(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/** |a - b| <= tol, with both printed when not (cmocka's fail_msg: include
 *  cmocka.h before using it). */
#define assert_near(a, b, tol)                                                                     \
    do {                                                                                           \
        const double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (tol)))                                                             \
            fail_msg("%.12g, expected %.12g", a_, b_);                                             \
    } while (0)

/** An integer in [lo, hi] (both included) from comet_test_urand(). */
static inline int comet_test_irand(unsigned long long *s, int lo, int hi)
{
    return lo + (int)(comet_test_urand(s) * (hi - lo + 1));
}

/**
 * Opens `rel` (a path inside the source tree: docs/validation/..., tests/
 * fixtures/...) for reading under COMET_SOURCE_DIR, which ctest sets (else
 * the working directory), and leaves its full path in path for messages.
 * @return the stream, or NULL when it cannot be opened.
 */
static inline FILE *comet_test_open_source(const char *rel, char *path, size_t n)
{
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, n, "%s/%s", src ? src : ".", rel);
    return fopen(path, "r");
}

#endif
