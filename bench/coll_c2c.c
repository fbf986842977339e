/* The core-to-core reading of an MPI launch: ranks 0 and 1 hand one cache
 * line back and forth through a POSIX shared-memory page, the same reading
 * the threaded kernel records carry (comet_bench_core_to_core_ns).
 *
 * Why: on a shared VM the host places the two vCPUs on one shared cache or
 * on two, and keeps that placement while they stay busy. The shared-memory
 * transport between the rank processes moves its data through those caches,
 * so its speed follows the placement: on the Zen 4 VM, 42 ns core to core
 * went with a 0.17 us 8-byte ping-pong and a 28 us all-gather of 128 KiB per
 * rank, 165 ns with 0.63 us and 80 us. Every record says which placement
 * its samples ran in, and calibration fits each placement on its own.
 *
 * Only point-to-point MPI is used around the page: a launch may force a
 * collective algorithm that would not apply to the probe's own traffic. */
#include "coll_internal.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { TAG_C2C = 7101 };

/* The page: the line both ranks spin on, and rank 0's stop flag on its own
 * line (so that reading it does not disturb the measured one). */
typedef struct c2c_page {
    _Alignas(64) volatile long line;
    _Alignas(64) volatile int stop;
} c2c_page;

void comet_bench__coll_c2c_open(coll_ctx *cx)
{
    cx->c2c = NULL;
    if (cx->p < 2 || cx->nodes != 1 || cx->rank > 1)
        return;
    char name[64];
    int ok = 0;
    void *m = MAP_FAILED;
    if (cx->rank == 0) {
        static int seq;
        snprintf(name, sizeof name, "/comet-c2c-%ld-%d", (long)getpid(), seq++);
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd >= 0) {
            if (ftruncate(fd, sizeof(c2c_page)) == 0)
                m = mmap(NULL, sizeof(c2c_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        }
        ok = m != MAP_FAILED;
        if (!ok)
            name[0] = 0; /* rank 1 then knows there is nothing to open */
        MPI_Send(name, sizeof name, MPI_CHAR, 1, TAG_C2C, MPI_COMM_WORLD);
        int peer = 0;
        MPI_Recv(&peer, 1, MPI_INT, 1, TAG_C2C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (name[0])
            shm_unlink(name); /* both mapped (or rank 1 gave up): the name is done */
        ok = ok && peer;
    } else {
        MPI_Recv(name, sizeof name, MPI_CHAR, 0, TAG_C2C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (name[0]) {
            int fd = shm_open(name, O_RDWR, 0600);
            if (fd >= 0) {
                m = mmap(NULL, sizeof(c2c_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                close(fd);
            }
        }
        ok = m != MAP_FAILED;
        MPI_Send(&ok, 1, MPI_INT, 0, TAG_C2C, MPI_COMM_WORLD);
    }
    /* both ranks must agree, or one would wait for a peer that never spins */
    int both = ok;
    if (cx->rank == 0)
        MPI_Send(&both, 1, MPI_INT, 1, TAG_C2C, MPI_COMM_WORLD);
    else
        MPI_Recv(&both, 1, MPI_INT, 0, TAG_C2C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (both)
        cx->c2c = m;
    else if (m != MAP_FAILED)
        munmap(m, sizeof(c2c_page));
}

void comet_bench__coll_c2c_close(coll_ctx *cx)
{
    if (cx->c2c)
        munmap(cx->c2c, sizeof(c2c_page));
    cx->c2c = NULL;
}

/* One set of hand-overs; rank 0 returns ns per hand-over (or -1). */
static double c2c_set(coll_ctx *cx, c2c_page *pg, long rounds)
{
    int go = 1;
    long r = 0;
    if (cx->rank == 0) {
        pg->line = 0;
        pg->stop = 0;
        MPI_Send(&go, 1, MPI_INT, 1, TAG_C2C, MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (; r < rounds && !pg->stop; r++) {
            while (pg->line != 2 * r && !pg->stop) { }
            pg->line = 2 * r + 1;
            /* two processes on one CPU hand over once per time slice: a
             * set stops after 20 ms whatever it did */
            if ((r & 63) == 63 && MPI_Wtime() - t0 > 0.02)
                pg->stop = 1;
        }
        const double dt = MPI_Wtime() - t0;
        pg->stop = 1; /* releases rank 1 if it still waits for a round */
        MPI_Recv(&go, 1, MPI_INT, 1, TAG_C2C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return r > 0 ? dt / (2.0 * (double)r) * 1e9 : -1;
    }
    MPI_Recv(&go, 1, MPI_INT, 0, TAG_C2C, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (; r < rounds && !pg->stop; r++) {
        while (pg->line != 2 * r + 1 && !pg->stop) { }
        if (!pg->stop)
            pg->line = 2 * r + 2;
    }
    MPI_Send(&go, 1, MPI_INT, 0, TAG_C2C, MPI_COMM_WORLD);
    return -1;
}

double comet_bench__coll_c2c_ns(coll_ctx *cx)
{
    c2c_page *pg = cx->c2c;
    if (!pg || cx->rank > 1)
        return -1;
    /* three sets of 2000 rounds (0.2-0.7 ms each here), the median */
    double t[3];
    for (int s = 0; s < 3; s++)
        t[s] = c2c_set(cx, pg, 2000);
    comet_bench_stats st;
    if (cx->rank != 0 || comet_bench_stats_compute(t, 3, &st) != 0)
        return -1;
    return st.median > 0 ? st.median : -1;
}

void comet_bench__coll_c2c_json(json_t *rec, const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n && json_array_size(a) < COMET_RESULTS_C2C_MAX; i++)
        if (v[i] > 0)
            json_array_append_new(a, json_real(round(v[i] * 10) / 10));
    if (json_array_size(a))
        json_object_set_new(rec, "c2c_ns", a);
    else
        json_decref(a);
}
