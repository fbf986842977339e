/**
 * @file comet_calibrate.h
 * @brief Fits measured bench records into a machine profile: GEMM efficiency
 *        grid (with a saturating fallback), memory plateaus, vector-op costs,
 *        Hockney point-to-point with the eager/rendezvous breakpoint, and
 *        collectives as alpha + beta n per algorithm; each fit with R^2 and a
 *        held-out error. The profile is a comet_model_hw in the model's schema.
 */
#ifndef COMET_CALIBRATE_H
#define COMET_CALIBRATE_H

#include "comet_model.h"

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Result of a linear fit y = a + b x. */
typedef struct comet_calibrate_line {
    double a, b; /**< intercept and slope (non-negative) */
    double r2; /**< coefficient of determination (weighted) */
    size_t n; /**< points used */
} comet_calibrate_line;

/**
 * Weighted (1/y^2: relative error counts, so small messages matter)
 * non-negative least squares of y = a + b x with GSL. A negative coefficient
 * is clamped to 0 and the other refitted (active set of size 2).
 */
int comet_calibrate_fit_line(const double *x, const double *y, size_t n, comet_calibrate_line *out);

/** Piecewise Hockney fit: two lines split at the breakpoint that minimises error. */
typedef struct comet_calibrate_hockney {
    comet_calibrate_line lo, hi; /**< below / at-or-above the breakpoint */
    double breakpoint; /**< first x of the upper piece (0 if one piece) */
} comet_calibrate_hockney;

/** Fits a (possibly piecewise) Hockney model; x sorted ascending. */
int comet_calibrate_fit_hockney(
    const double *x, const double *y, size_t n, comet_calibrate_hockney *out);
/** Evaluates a Hockney fit at x. */
double comet_calibrate_hockney_eval(const comet_calibrate_hockney *h, double x);

/**
 * ERT-style plateaus on a working-set sweep (sizes ascending): a level is a
 * run of points within +-5% of its running median, a new level starts at a
 * >= 1.25x drop. Writes up to max levels (bandwidth, last size) and returns
 * the count.
 */
int comet_calibrate_plateaus(
    const double *size, const double *bw, size_t n, double *level_bw, double *level_size, int max);

/**
 * Fits eff = emax * F / (F + f_half) (linearised 1/eff = 1/emax + f_half/emax / F,
 * weighted least squares).
 */
int comet_calibrate_fit_saturating(
    const double *F, const double *eff, size_t n, double *emax, double *f_half);

/** Median and 90th percentile of |err| (copies and sorts). */
void comet_calibrate_err_stats(const double *err, size_t n, double *median, double *p90);

/**
 * Builds a profile from records (the run record's machine, sgemm, memory,
 * vecop, p2p and collective records). quality receives the calibration
 * section (fits, held-out errors, provenance). Needs at least memory and
 * sgemm records; collectives are optional (the profile says so).
 */
int comet_calibrate_build(
    json_t *const *recs, size_t n, comet_model_hw *hw, char *err, size_t errlen);

/**
 * Loads results files (JSON Lines) and directories (their results/ folder or
 * their *.jsonl files, in name order) into one array of records. Errors
 * (corrupt line, missing file) name the file and line.
 */
int comet_calibrate_load_results(
    const char *const *paths, size_t npaths, json_t ***recs, size_t *n, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
