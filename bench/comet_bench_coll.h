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

#include <stddef.h>

/**
 * `comet bench collectives` entry point: argv[0] is "collectives", the rest
 * are its options (see --help). With argv[1] == "--worker" it is one rank
 * of a launch (the hidden mode the parent starts under mpiexec).
 * @return a CLI exit code (0 ok, 1 failure, 2 usage).
 */
int comet_bench_coll_main(int argc, char **argv);

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
