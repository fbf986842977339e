/**
 * @file comet_bench_coll.h
 * @brief MPI point-to-point and collectives benchmark (`comet bench
 *        collectives`): launches itself under mpiexec with one timeout on the
 *        whole job, forces each MPICH algorithm per launch, validates every
 *        collective's result, reports latency, algbw and busbw.
 */
#ifndef COMET_BENCH_COLL_H
#define COMET_BENCH_COLL_H

#include <stddef.h>

/**
 * `comet bench collectives` entry point: argv[0] is "collectives", the rest
 * are its options. @return a CLI exit code (0 ok, 1 failure, 2 usage).
 */
int comet_bench_coll_main(int argc, char **argv);

/**
 * nccl-tests bus-bandwidth factor of a collective over p ranks: allreduce
 * 2(p-1)/p; allgather, reduce_scatter, alltoall (p-1)/p; bcast, reduce,
 * pingpong 1. @return 0 for an unknown name.
 */
double comet_bench_coll_busbw_factor(const char *coll, int p);

/**
 * The MPICH 4.0 algorithms that can be forced for coll (NULL-terminated,
 * "auto" first), or NULL for an unknown collective.
 */
const char *const *comet_bench_coll_algorithms(const char *coll);

#endif
