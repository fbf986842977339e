/**
 * @file comet_kernels.h
 * @brief comet kernels library (being built).
 */
#ifndef COMET_KERNELS_H
#define COMET_KERNELS_H

#ifdef __cplusplus
extern "C" {
#endif

/** Library version string. */
const char *comet_kernels_version(void);

#ifdef __cplusplus
}
#endif
#endif
