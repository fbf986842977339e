/* How an MPI bench worker ends (mpi_end.h).
 *
 * Why not MPI_Barrier then MPI_Finalize: with MPICH 4.0.2 ch4:ucx and
 * UCX 1.13 over TCP (Debian 12's packages, what comet runs its links on),
 * MPI_Finalize could hang for ever, one rank spinning in UCX progress and
 * the other blocked in the process manager's barrier (seen on 1 of 25
 * exchange launches over a 1 Gbit/s delay line, 1 of 2 at 100 Mbit/s +
 * 50 us; session 21 on the all-reduce launches). MPICH 4.0.2's finalize
 * (src/mpid/ch4/netmod/ucx/ucx_init.c) closes every UCX endpoint in flush
 * mode, progresses until the closes complete, then calls the PMI barrier,
 * which makes no MPI progress. UCX 1.13's TCP flush of an endpoint that sent
 * anything since its last flush (src/uct/tcp/tcp_ep.c, NEED_FLUSH) sends a
 * zero-length PUT and waits for the peer's PUT ACK. A rank still inside an
 * MPI call (the last barrier: its last message reaches the other rank half a
 * round trip after that rank left) reads the peer's zero PUT and acks it
 * there, so the peer completes its close and enters the PMI barrier; when
 * the first rank then sends its own zero PUT from MPI_Finalize, nobody reads
 * it (the hung rank's socket held exactly that unread 25-byte request,
 * addr 0, length 0). MPICH 4.2 moved the PMI barrier before the closes
 * (commits 08d8105b, d6c7cd5b).
 *
 * Here the ranks meet in the PMI barrier themselves before MPI_Finalize, so
 * no rank is inside MPI when another starts closing: each then sends its own
 * zero PUT before it progresses at all, and its ACK to a peer always follows
 * its PUT on the same connection, so a rank cannot see its close complete
 * before it has read (and acked) the peer's. The watchdog bounds what is
 * left (another process manager, a rank that never arrives). */
#include "mpi_end.h"

#include <errno.h>
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char note[320];
static size_t note_len;
static double grace_s = COMET_BENCH_FINALIZE_GRACE_S;
static int pmi_fd = -1; /* the process manager's socket (PMI_FD), or -1 */

/* The watchdog: past the grace, one line, then the job ends through the
 * process manager: PMI-1's abort makes mpiexec end every rank and exit with
 * its code (hydra's fn_abort), whatever the others are doing. A rank that
 * only left (with any status) while inside the PMI barrier left its proxy
 * writing the barrier's answer to a closed socket once the other rank got
 * there: mpiexec failed with 255 and a dozen lines, 1 time in 4. */
static void *watchdog(void *arg)
{
    (void)arg;
    struct timespec t = { (time_t)grace_s, (long)((grace_s - (double)(time_t)grace_s) * 1e9) };
    while (nanosleep(&t, &t) != 0 && errno == EINTR) { }
    if (write(STDERR_FILENO, note, note_len) < 0) { } /* nothing else to do */
    if (pmi_fd >= 0) {
        char ab[64];
        const int n = snprintf(ab, sizeof ab, "cmd=abort exitcode=%d\n", COMET_BENCH_EXIT_FINALIZE);
        if (write(pmi_fd, ab, (size_t)n) < 0) { } /* then the exit below alone */
        /* mpiexec ends this process with the others */
        struct timespec w = { 10, 0 };
        nanosleep(&w, NULL);
    }
    _exit(COMET_BENCH_EXIT_FINALIZE);
    return NULL;
}

/* The process manager's socket from PMI_FD (hydra's PMI-1), or -1. */
static int pmi_socket(void)
{
    const char *s = getenv("PMI_FD");
    if (!s || !*s)
        return -1;
    char *end = NULL;
    const long fd = strtol(s, &end, 10);
    return *end || fd < 0 || fd > 1 << 20 ? -1 : (int)fd;
}

/* The process manager's barrier, PMI-1's wire protocol on the socket hydra
 * hands every rank (PMI_FD): "cmd=barrier_in", answered "cmd=barrier_out"
 * once every rank sent it (what MPICH's own PMI_Barrier exchanges,
 * src/pmi/simple/simple_pmi.c). Blocking: the watchdog bounds it. Returns
 * 0, -ENOENT where there is no such socket (another process manager), or a
 * negative errno. */
static int pmi_barrier(void)
{
    const int fd = pmi_fd;
    if (fd < 0)
        return -ENOENT;
    static const char in[] = "cmd=barrier_in\n";
    for (size_t off = 0; off < sizeof in - 1;) {
        const ssize_t w = write(fd, in + off, sizeof in - 1 - off);
        if (w < 0 && errno != EINTR)
            return -errno;
        off += w > 0 ? (size_t)w : 0;
    }
    /* one line, read a byte at a time: nothing after it may be taken from
     * MPICH, whose own PMI calls read the same socket */
    char line[128];
    size_t n = 0;
    for (;;) {
        char c;
        const ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -EPIPE;
        if (c == '\n')
            break;
        if (n < sizeof line - 1)
            line[n++] = c;
    }
    line[n] = '\0';
    return strncmp(line, "cmd=barrier_out", 15) ? -EPROTO : 0;
}

double comet_bench__finalize_grace_s(void)
{
    const char *g = getenv("COMET_TEST_FINALIZE_GRACE_S");
    const double v = g ? atof(g) : 0;
    return v > 0 && v < 3600 ? v : COMET_BENCH_FINALIZE_GRACE_S;
}

void comet_bench__mpi_end(const char *who)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* test hooks: the grace, a rank still inside MPI (probing) when the
     * others end, and the plain MPI_Finalize without the barrier first */
    const char *late = getenv("COMET_TEST_LATE_END_RANK");
    grace_s = comet_bench__finalize_grace_s();
    pmi_fd = pmi_socket();
    note_len = (size_t)snprintf(note, sizeof note,
        "comet: %s: rank %d: MPI_Finalize did not return within %.0f s of the rank's last MPI "
        "call (its records are written); leaving without it\n",
        who, rank, grace_s);
    if (note_len >= sizeof note)
        note_len = sizeof note - 1;
    if (late && atoi(late) == rank) {
        const double t0 = MPI_Wtime();
        int flag;
        while (MPI_Wtime() - t0 < 1.0)
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    }
    pthread_t th;
    pthread_attr_t at;
    int e = pthread_attr_init(&at);
    if (!e) {
        e = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (!e)
            e = pthread_create(&th, &at, watchdog, NULL);
        pthread_attr_destroy(&at);
    }
    if (e)
        fprintf(stderr, "comet: %s: rank %d: no watchdog over MPI_Finalize (%s)\n", who, rank,
            strerror(e));
    if (!getenv("COMET_TEST_NO_PMI_BARRIER")) {
        const int rc = pmi_barrier();
        if (rc && rc != -ENOENT)
            fprintf(stderr, "comet: %s: rank %d: the barrier before MPI_Finalize failed (%s)\n",
                who, rank, strerror(-rc));
    }
    MPI_Finalize();
}
