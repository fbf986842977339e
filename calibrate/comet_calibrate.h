/**
 * @file comet_calibrate.h
 * @brief comet calibrate library (being built).
 */
#ifndef COMET_CALIBRATE_H
#define COMET_CALIBRATE_H

#ifdef __cplusplus
extern "C" {
#endif

/** Library version string. */
const char *comet_calibrate_version(void);

#ifdef __cplusplus
}
#endif
#endif
