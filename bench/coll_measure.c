/* The collectives bench's measuring core, shared by the worker
 * (coll_worker.c) and the distributed kernels (coll_dist.c): the bench's
 * own agreement steps over point-to-point, timing a call the collective way
 * (max over ranks, calls per sample, samples until the cap), the fields
 * every MPI record carries, and the bus-bandwidth factors. Below both; calls
 * nothing of theirs. */
#include "coll_internal.h"
#include "comet_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Bookkeeping over point-to-point                                     */
/* ------------------------------------------------------------------ */

/* op: 0 min, 1 max, 2 sum */
static double p2p_reduce(double mine, int op)
{
    int rank, p;
    double v = mine;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (rank == 0) {
        for (int r = 1; r < p; r++) {
            double x;
            MPI_Recv(&x, 1, MPI_DOUBLE, r, TAG_UP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v = op == 2 ? v + x : op == 1 ? (x > v ? x : v) : (x < v ? x : v);
        }
        for (int r = 1; r < p; r++)
            MPI_Send(&v, 1, MPI_DOUBLE, r, TAG_DOWN, MPI_COMM_WORLD);
    } else {
        MPI_Send(&mine, 1, MPI_DOUBLE, 0, TAG_UP, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_DOUBLE, 0, TAG_DOWN, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    return v;
}

double comet_bench__coll_allmax(double mine)
{
    return p2p_reduce(mine, 1);
}

int comet_bench__coll_allmin(int mine)
{
    return (int)p2p_reduce((double)mine, 0);
}

int comet_bench__coll_bcast0(int v)
{
    /* rank 0's value everywhere: everyone else contributes -inf to a max */
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return (int)p2p_reduce(rank == 0 ? (double)v : -INFINITY, 1);
}

/* ------------------------------------------------------------------ */
/* Timing                                                              */
/* ------------------------------------------------------------------ */

/* One sample: iters calls; returns the max over ranks of the per-rank
 * mean seconds per call on every rank (allreduce, so all ranks agree).
 * prep (may be NULL) runs before every call's barrier, outside the timing. */
int comet_bench__coll_timed(int (*body)(void *), void (*prep)(void *), void *ctx, int iters,
    int barrier_each, double *out, double *avg)
{
    double acc = 0;
    int rc = MPI_SUCCESS;
    if (barrier_each) {
        for (int i = 0; i < iters && rc == MPI_SUCCESS; i++) {
            if (prep && barrier_each != COLL_PREP_AFTER_BARRIER)
                prep(ctx);
            MPI_Barrier(MPI_COMM_WORLD); /* every call starts together */
            if (prep && barrier_each == COLL_PREP_AFTER_BARRIER)
                prep(ctx);
            double t0 = MPI_Wtime();
            rc = body(ctx);
            acc += MPI_Wtime() - t0;
        }
    } else {
        /* IMB's loop: back-to-back calls after one barrier (OSU 5 instead
         * times each call between barriers, as barrier_each does) */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters && rc == MPI_SUCCESS; i++)
            rc = body(ctx);
        acc = MPI_Wtime() - t0;
    }
    *out = comet_bench__coll_allmax(acc / iters);
    if (avg) { /* OSU's figure: the mean over ranks of the per-rank means */
        int p;
        MPI_Comm_size(MPI_COMM_WORLD, &p);
        *avg = p2p_reduce(acc / iters, 2) / p;
    }
    return rc;
}

/* Calls per sample so that a sample lasts at least min_sample_s: it must
 * dwarf the timer and the barrier noise. */
int comet_bench__coll_calls_per_sample(int (*body)(void *ctx), void (*prep)(void *), void *ctx,
    int barrier_each, double min_sample_s, int *iters)
{
    int it = 1, rc;
    double t;
    for (;;) {
        if ((rc = comet_bench__coll_timed(body, prep, ctx, it, barrier_each, &t, NULL))
            != MPI_SUCCESS)
            return rc;
        if (t * it >= min_sample_s || it >= 1 << 20)
            break;
        it = t > 0 && min_sample_s / t < 2.0 * it ? (int)ceil(min_sample_s / t) : it * 2;
    }
    *iters = it;
    return MPI_SUCCESS;
}

int comet_bench__coll_measure(int (*body)(void *ctx), void *ctx, int barrier_each,
    double min_sample_s, int nmin, int nmax, double cap_s, double *samples, double *avg, int *n,
    int *iters)
{
    int it = 1, rc;
    double t;
    *n = 0;
    if ((rc = comet_bench__coll_calls_per_sample(body, NULL, ctx, barrier_each, min_sample_s, &it))
        != MPI_SUCCESS)
        return rc;
    double t0 = MPI_Wtime();
    for (int s = 0; s < nmax; s++) {
        if ((rc = comet_bench__coll_timed(
                 body, NULL, ctx, it, barrier_each, &t, avg ? avg + *n : NULL))
            != MPI_SUCCESS)
            return rc;
        samples[(*n)++] = t;
        /* every rank holds the same t, but elapsed times differ: rank 0 decides */
        if (comet_bench__coll_bcast0(*n >= nmin && MPI_Wtime() - t0 > cap_s))
            break;
    }
    *iters = it;
    return MPI_SUCCESS;
}

void comet_bench__coll_common(const coll_ctx *cx, json_t *rec, json_t *pa, const double *samples,
    size_t n, const comet_bench_stats *st, int valid, int iters)
{
    const char *gt = getenv("GLIBC_TUNABLES");
    int forced = strcmp(cx->job->alg, "auto") != 0;
    /* the caller's params first (where the dist kernels' records hold them);
     * threads: comet_bench_record_new() set 1 */
    if (pa)
        json_object_set_new(rec, "params", pa);
    json_object_set_new(rec, "ranks", json_integer(cx->p));
    json_object_set_new(rec, "stats", comet_bench_stats_json(st, samples, n));
    json_object_set_new(rec, "reps", json_integer(iters));
    json_object_set_new(rec, "launch", json_integer(cx->job->launch));
    json_object_set_new(rec, "link", json_string(cx->link));
    json_object_set_new(rec, "nodes", json_integer(cx->nodes));
    json_object_set_new(rec, "valid", json_boolean(valid));
    json_object_set_new(rec, "load", comet_bench_load_json(&cx->job->load));
    if (!pa) {
        pa = json_object();
        json_object_set_new(rec, "params", pa);
    }
    json_object_set_new(pa, "algorithm_forced", json_boolean(forced));
    json_object_set_new(pa, "device_collectives", json_string(forced ? "none" : "percoll"));
    json_object_set_new(
        pa, "malloc", json_string(gt && strstr(gt, "mmap_threshold") ? "no_trim" : "stock"));
    json_object_set_new(rec, "env", json_pack("{s:s}", "glibc_tunables", gt ? gt : ""));
}

double comet_bench_coll_busbw_factor(const char *c, int p)
{
    if (!c || p < 1)
        return 0;
    if (!strcmp(c, "allreduce"))
        return 2.0 * (p - 1) / p;
    if (!strcmp(c, "allgather") || !strcmp(c, "allgatherv") || !strcmp(c, "reduce_scatter")
        || !strcmp(c, "alltoall"))
        return (double)(p - 1) / p;
    if (!strcmp(c, "bcast") || !strcmp(c, "reduce") || !strcmp(c, "pingpong")
        || !strcmp(c, "exchange"))
        return 1;
    return 0;
}
