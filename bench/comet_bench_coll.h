/**
 * @file comet_bench_coll.h
 * @brief MPI point-to-point and collectives benchmark (`comet bench
 *        collectives`): launches itself under mpiexec with one timeout on the
 *        whole job, forces each MPICH algorithm per launch, validates every
 *        collective's result, reports latency, algbw and busbw; also times
 *        the distributed compound kernels.
 *
 * Records (docs/FORMATS.md) go to <out>/results/collectives-<run_id>.jsonl:
 * one "run" record (written by the parent; env.glibc_tunables names the
 * allocator setting every rank ran with), then "p2p" (ping-pong),
 * "collective" and "dist_kernel" records appended by rank 0 of each
 * launch. Besides the common fields they carry latency_us (median),
 * min_latency_us, algbw_GBs, busbw_GBs, algbw_bytes, launch, link ("shm",
 * "tcp:<dev>", "net:<tls>"), nodes (distinct host names), load (the idle
 * gate before the launch) and params {algorithm_forced,
 * device_collectives, malloc}; dist_kernel records add flops, bytes,
 * gflops, gbs, max_abs_err and collectives [{kind, op, count, bytes,
 * calls}].
 */
#ifndef COMET_BENCH_COLL_H
#define COMET_BENCH_COLL_H

#include "comet_bench.h"

#include <stddef.h>

/**
 * One launch of ranks: what every rank measures (the worker's job) and how
 * the ranks are started. The library describes it; the CLI owns the command
 * line that carries it to the ranks and the exec (comet_bench_coll_spawn).
 */
typedef struct comet_bench_coll_job {
    const char *coll; /**< collective, "pingpong" or "dist_kernels" */
    const char *alg; /**< MPICH algorithm forced for this launch, or "auto" */
    const char *sizes; /**< comma-separated message sizes in bytes */
    int launch; /**< launch index within the configuration */
    const char *outpath; /**< results file (rank 0 appends) */
    const char *run_id; /**< run id of the parent's run record */
    const char *machine_id; /**< machine id of the parent's probe */
    int full; /**< full set (more samples, bigger dist shapes) */
    double sample_cap_s; /**< per-size time cap for sampling */
    comet_bench_load load; /**< what the parent's idle gate saw before this launch */
    int loop; /**< OSU timing (back-to-back calls) instead of a barrier per call */
    /* --- how the launch starts (the spawner's; the ranks do not need them) --- */
    int np; /**< ranks */
    char *const *launcher_args; /**< words for mpiexec before -n */
    int nlauncher_args; /**< their count */
    const char *env[8]; /**< NAME=VALUE the ranks need (the forced algorithm), NULL-ended */
    /* --- appended --- */
    double min_sample_s; /**< shortest sample (0: 2 ms collectives, 5 ms distributed kernels) */
} comet_bench_coll_job;

/**
 * Starts a launch's ranks under mpiexec: returns the pid of a child that
 * leads its own process group (the run kills the group at its deadline and
 * waits for it), or a negative errno.
 */
typedef long (*comet_bench_coll_spawn)(const comet_bench_coll_job *job, void *ctx);

/** Settings of one `comet bench collectives` run (the CLI parses them). */
typedef struct comet_bench_coll_opts {
    int full; /**< full set (sizes to 64 MiB, every algorithm, 3 launches) */
    int np; /**< ranks */
    int launches; /**< mpiexec launches per configuration (0: 1 quick, 3 full) */
    int oversubscribe; /**< allow more ranks than cores */
    int json; /**< summary as JSON on stdout */
    int stock_malloc; /**< leave GLIBC_TUNABLES alone */
    int loop; /**< IMB-style back-to-back timing instead of a barrier per call */
    double timeout_s; /**< one deadline for the whole job (0: 300 s quick, 3600 s full) */
    double gate_timeout_s; /**< idle gate before each launch (-1: 2 s quick, 10 s full) */
    const char *sizes; /**< message bytes per rank, "8,1K,64K" (NULL: the set's) */
    const char *colls; /**< subset of the collectives and dist_kernels (NULL: all) */
    const char *algs; /**< "auto", "all" or names (NULL: the set's default) */
    const char *launcher_args; /**< passed to mpiexec before -n (NULL: none) */
    const char *out; /**< results folder root (results in out/results) */
    const char *command_line; /**< as the user typed it, for the run record (NULL: none) */
    comet_bench_coll_spawn spawn; /**< starts each launch's ranks (required) */
    void *spawn_ctx; /**< passed to spawn */
    /* --- appended --- */
    double min_sample_s; /**< shortest sample (0: 2 ms collectives, 5 ms distributed kernels);
                              longer drains a shaped link's token bucket within each sample */
} comet_bench_coll_opts;

/** Defaults: 2 ranks, quick, out "comet-out". */
void comet_bench_coll_defaults(comet_bench_coll_opts *o);

/**
 * One run: probes, launches every configuration under mpiexec with one
 * deadline, writes the records. A bad list in o (sizes, colls, algs,
 * launcher args) is a usage error printed as one line.
 * @return a CLI exit code (0 ok, 1 failure, 2 usage).
 */
int comet_bench_coll_run(const comet_bench_coll_opts *o);

/**
 * One rank of a launch: runs the job (every rank calls it with the same job;
 * the CLI parses it from the command line its spawner wrote). @return 0, 1,
 * 2, or 3 (the MPI library cannot run this job).
 */
int comet_bench_coll_worker(const comet_bench_coll_job *job);

/**
 * nccl-tests bus-bandwidth factor of a collective over p ranks: allreduce
 * 2(p-1)/p; allgather, reduce_scatter, alltoall (p-1)/p; bcast, reduce,
 * pingpong 1. @return 0 for an unknown name (or p < 1).
 */
double comet_bench_coll_busbw_factor(const char *coll, int p);

/**
 * The MPICH 4.0.2 algorithms that can be forced for coll (NULL-terminated,
 * "auto" first; "pingpong" and "dist_kernels" have only "auto"), or NULL for
 * an unknown name. Allreduce "ring" is MPICH's nonblocking path with the
 * tsp_ring schedule (4.0 has no blocking ring).
 */
const char *const *comet_bench_coll_algorithms(const char *coll);

#endif
