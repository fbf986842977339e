/* Internal interface between the collectives bench's parent (coll.c), its
 * MPI worker (coll_worker.c), the distributed-kernel bench (coll_dist.c) and
 * the measuring core both stand on (coll_measure.c).
 * Not installed; the public API is comet_bench_coll.h. */
#ifndef COMET_BENCH_COLL_INTERNAL_H
#define COMET_BENCH_COLL_INTERNAL_H

#include "comet_bench.h"
#include "comet_bench_coll.h"

#include <jansson.h>
#include <mpi.h>

/** Pseudo-collective name that selects the distributed compound kernels. */
#define COLL_DIST "dist_kernels"

/* The bench's own agreement steps (all ranks usable? max time over ranks?
 * stop sampling?) must not run through a collective: with a forced
 * algorithm and fallback=error, MPI_Allreduce of one int fails under
 * e.g. reduce_scatter_allgather, and would time the forced algorithm
 * besides. So they go through rank 0 with sends and receives. */
enum { TAG_UP = 7001, TAG_DOWN = 7002 };

/** What one worker launch measures (argv of the hidden --worker mode). */
/** The worker's job: the public launch description (comet_bench_coll.h). */
typedef comet_bench_coll_job coll_job;

/** State shared by the record writers of a worker (valid on rank 0). */
typedef struct coll_ctx {
    const coll_job *job;
    int rank, p;
    comet_bench_run run; /**< run id/machine id for records */
    comet_results_writer w; /**< results writer (rank 0) */
    char link[96]; /**< link measured: "shm", "tcp:<dev>", ... */
    int nodes; /**< distinct hosts among the ranks */
    void *c2c; /**< ranks 0 and 1: their shared page for the core-to-core reading (or NULL) */
} coll_ctx;

/** Runs one worker job inside mpiexec; returns a process exit code. */
int comet_bench__coll_worker(const coll_job *job);

/**
 * Adds the fields every MPI record carries (ranks, launch, link, params with
 * the forcing/allocator settings, stats, valid) to rec. pa (stolen, may be
 * NULL) is the caller's params object, completed here.
 */
void comet_bench__coll_common(const coll_ctx *cx, json_t *rec, json_t *pa, const double *samples,
    size_t n, const comet_bench_stats *st, int valid, int iters);

/**
 * Measures the distributed compound kernels (GEMM-Softmax and GEMM-LayerNorm
 * with N split, attention with the KV sequence split; fused and unfused) and
 * appends "dist_kernel" records. Collective over MPI_COMM_WORLD.
 * @return 0, or 1 when a result was wrong or a record could not be written.
 */
int comet_bench__coll_dist(coll_ctx *cx);

/** comet_bench__coll_timed's barrier_each: prep after each call's barrier. */
#define COLL_PREP_AFTER_BARRIER 2

/**
 * One sample: iters calls of body; *out gets the max over ranks of the
 * per-rank mean seconds per call on every rank (all ranks agree), *avg (may
 * be NULL) the mean over ranks. prep (may be NULL) runs before every call,
 * outside the timing; barrier_each puts a barrier before every call (else
 * one before the loop, IMB's way; COLL_PREP_AFTER_BARRIER: a barrier before
 * every call and prep after it, the ranks leave it together). @return an
 * MPI code.
 */
int comet_bench__coll_timed(int (*body)(void *), void (*prep)(void *), void *ctx, int iters,
    int barrier_each, double *out, double *avg);

/** Calls per sample so that a sample lasts at least min_sample_s (into
 *  *iters; at most 2^20). @return an MPI code. */
int comet_bench__coll_calls_per_sample(int (*body)(void *ctx), void (*prep)(void *), void *ctx,
    int barrier_each, double min_sample_s, int *iters);

/**
 * Times body (one call of the measured operation; returns an MPI code) the
 * collective way: chooses the calls per sample so a sample lasts at least
 * min_sample_s, then takes up to nmax samples, each the max over ranks of
 * the per-rank mean per call; with barrier_each a barrier precedes every
 * call (outside the timed region). Sampling stops after nmin samples once
 * cap_s is spent. All ranks get the same *n and *iters; samples are valid
 * on rank 0. avg (may be NULL) receives per sample the mean over ranks
 * instead of the max (OSU's figure). @return 0 or the first MPI error code.
 */
int comet_bench__coll_measure(int (*body)(void *ctx), void *ctx, int barrier_each,
    double min_sample_s, int nmin, int nmax, double cap_s, double *samples, double *avg, int *n,
    int *iters);

/**
 * Sets up the core-to-core reading between ranks 0 and 1 (a POSIX
 * shared-memory page both map; point-to-point MPI only). Leaves cx->c2c NULL
 * when the ranks are not on one host, or the page cannot be shared.
 * Called by every rank.
 */
void comet_bench__coll_c2c_open(coll_ctx *cx);
/** Releases what comet_bench__coll_c2c_open() set up. */
void comet_bench__coll_c2c_close(coll_ctx *cx);
/**
 * One core-to-core reading: ranks 0 and 1 hand a cache line back and forth
 * (three sets of 2000 rounds, each capped at 20 ms), one-way ns per
 * hand-over, the median set. Called by every rank; ranks above 1 return at
 * once. @return the latency on rank 0, -1 elsewhere or without a page.
 */
double comet_bench__coll_c2c_ns(coll_ctx *cx);
/** Sets rec's "c2c_ns" to the n readings of v that are > 0 (none: unset). */
void comet_bench__coll_c2c_json(json_t *rec, const double *v, int n);

/** Max of mine over all ranks, on every rank (point-to-point through rank
 *  0, so that it never runs a forced collective algorithm). */
double comet_bench__coll_allmax(double mine);
/** Min of mine over all ranks, on every rank (point-to-point). */
int comet_bench__coll_allmin(int mine);
/** Rank 0's v on every rank (point-to-point). */
int comet_bench__coll_bcast0(int v);

#endif
