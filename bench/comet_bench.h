/**
 * @file comet_bench.h
 * @brief comet bench library (being built).
 */
#ifndef COMET_BENCH_H
#define COMET_BENCH_H

#ifdef __cplusplus
extern "C" {
#endif

/** Library version string. */
const char *comet_bench_version(void);

#ifdef __cplusplus
}
#endif
#endif
