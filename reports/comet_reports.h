/**
 * @file comet_reports.h
 * @brief comet reports library (being built).
 */
#ifndef COMET_REPORTS_H
#define COMET_REPORTS_H

#ifdef __cplusplus
extern "C" {
#endif

/** Library version string. */
const char *comet_reports_version(void);

#ifdef __cplusplus
}
#endif
#endif
