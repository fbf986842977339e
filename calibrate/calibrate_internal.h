/* Internal to comet_calibrate: the state shared by the profile builders. */
#ifndef COMET_CALIBRATE_INTERNAL_H
#define COMET_CALIBRATE_INTERNAL_H

#include "comet_calibrate.h"

#include <jansson.h>
#include <stddef.h>

/* Held-out folds (k-fold over sizes / every k-th point). */
#define CAL_FOLDS 4

/* What the builders share while a profile is assembled. */
typedef struct cal_ctx {
    comet_model_hw *hw; /* profile being filled */
    json_t *fits; /* calibration.fits (owned) */
    comet_calibrate_summary sum; /* summary figures */
    double ghz, peak; /* clock and fp32 flop/cycle/core */
    int cores;
    double l1, l2, l3, dram_bytes; /* capacities from the probe (l1: data, 0 unknown) */
    double p2p_alpha, p2p_beta; /* seconds, seconds/byte */
    double *coll_err; /* pooled held-out errors of collectives */
    size_t ncoll_err;
    int collinear;
} cal_ctx;

/* JSON number, or null when not finite (JSON has no NaN). */
json_t *cal_jreal(double v);
/* A record's time for a fit: its median when its samples ran idle, its
 * best sample when others were busy beside them (another tenant can only
 * slow a compute kernel; the median of such a set is the tenant's, not the
 * machine's). */
double cal_record_time(const comet_results_record *r);
/* {points, median_rel_err, p90_rel_err, method} of held-out errors. */
json_t *cal_err_json(const double *e, size_t n, const char *method);
/* [[key, relative residual], ...] */
json_t *cal_residuals_json(const double *key, const double *res, size_t n);

/* Held-out error of a piecewise fit by CAL_FOLDS folds over distinct keys
 * (sw[0..nsw): ascending sizes no piece may straddle, the known switches;
 * beta_row: the link's ping-pong beta for a piece of one size, 0: none). */
int cal_pw_heldout(const double *key, const double *X, const double *y, size_t n, size_t p,
    int maxseg, size_t minpts, const double *sw, int nsw, double beta_row, double *errs,
    size_t *nerr);

/* The builders: each adds its section to cx->fits and fills cx->hw. */
int cal_fit_gemm(cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen);
int cal_fit_memory(
    cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen);
int cal_fit_vector(
    cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen);
int cal_fit_links(
    cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen);

#endif
