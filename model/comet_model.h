/**
 * @file comet_model.h
 * @brief comet model library (being built).
 */
#ifndef COMET_MODEL_H
#define COMET_MODEL_H

#ifdef __cplusplus
extern "C" {
#endif

/** Library version string. */
const char *comet_model_version(void);

#ifdef __cplusplus
}
#endif
#endif
