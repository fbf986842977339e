/**
 * @file comet_bench_coll.h
 * @brief Placeholder for the collectives bench API, owned by the collectives
 *        bench (bench/coll*.c), which replaces this file. The replacement
 *        must declare comet_bench_coll_main() and must NOT define
 *        COMET_BENCH_COLL_NOT_BUILT (cli/cmd_bench.c dispatches to it then).
 */
#ifndef COMET_BENCH_COLL_H
#define COMET_BENCH_COLL_H

/** Set while only this placeholder exists. */
#define COMET_BENCH_COLL_NOT_BUILT 1

/**
 * `comet bench collectives` entry point: argv[0] is "collectives", the rest
 * are its options. @return a CLI exit code (0 ok, 1 failure, 2 usage).
 */
int comet_bench_coll_main(int argc, char **argv);

#endif
