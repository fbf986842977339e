/* Internal to comet_bench: how an MPI bench worker ends (mpi_end.c). Not
 * installed. */
#ifndef COMET_BENCH_MPI_END_H
#define COMET_BENCH_MPI_END_H

/** Seconds a rank gives MPI_Finalize (and the barrier before it) before it
 * leaves without it: finalize takes well under a second over every link
 * comet emulates, and every record is written before it starts. */
#define COMET_BENCH_FINALIZE_GRACE_S 30.0

/** Exit status of a rank whose MPI_Finalize outlived the grace (mpiexec
 * passes it on: the parent names what timed out). */
#define COMET_BENCH_EXIT_FINALIZE 4

/**
 * @brief Ends MPI in a bench worker once every rank has written what it
 * writes: an out-of-band barrier, then MPI_Finalize under a watchdog.
 *
 * Collective: every rank calls it, after its last MPI call. The ranks first
 * meet in a barrier of the process manager (PMI-1 over PMI_FD, hydra's), in
 * which no rank makes MPI progress; only then does any rank call
 * MPI_Finalize. This avoids MPICH 4.0's finalize deadlock over UCX's TCP
 * transport (mpi_end.c). A watchdog thread bounds the barrier and the
 * finalize together: past the grace it prints one line naming `who`
 * ("bench collectives") and what did not return, and ends the job through
 * the process manager (PMI-1 abort: mpiexec ends every rank and exits with
 * COMET_BENCH_EXIT_FINALIZE), never a silent hang. The records written
 * before stay as they are.
 */
void comet_bench__mpi_end(const char *who);

/** @brief The grace comet_bench__mpi_end gives MPI_Finalize, in seconds
 * (COMET_BENCH_FINALIZE_GRACE_S; a test may shorten it). */
double comet_bench__finalize_grace_s(void);

#endif
