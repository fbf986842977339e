/**
 * @file comet_calibrate.h
 * @brief Fits measured bench records (docs/FORMATS.md) into a machine
 *        profile in the model's hardware schema (docs/hardware.md):
 *        - GEMM efficiency as a measured (threads, M, N, K) grid, evaluated by
 *          the model in log space, with a saturating law outside the grid;
 *        - memory plateaus (ERT rule) and their bandwidths, capacities from
 *          the probe;
 *        - per-element cost of each vector op in cache and streaming;
 *        - piecewise Hockney alpha + beta m for point-to-point (the eager ->
 *          rendezvous breakpoint found by minimum weighted error);
 *        - per collective and algorithm alpha, beta, gamma by weighted (1/T^2)
 *          non-negative least squares on the Thakur-Rabenseifner-Gropp cost
 *          formulas, with collinear terms detected and merged.
 *        Every fit states R^2, residuals and a held-out error (a deterministic
 *        share of points kept out of the fit and predicted).
 *
 * All solvers are GSL's (weighted least squares, SVD); non-negativity is an
 * active set (Lawson-Hanson) over GSL's weighted least squares. Functions
 * return 0 or a negative errno and print nothing (the measuring that feeds
 * them is the CLI's: cli/calibrate_measure.c).
 */
#ifndef COMET_CALIBRATE_H
#define COMET_CALIBRATE_H

#include "comet_model_hw.h"
#include "comet_results.h"

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Weighted non-negative least squares                                */
/* ------------------------------------------------------------------ */

/** Largest number of parameters of one linear model (alpha, beta, gamma). */
#define COMET_CALIBRATE_MAXP 3

/** State of one parameter after a fit. */
typedef enum comet_calibrate_pstate {
    COMET_CALIBRATE_FITTED = 0, /**< estimated (>= 0) */
    COMET_CALIBRATE_ABSENT, /**< its column is zero: not part of this model */
    COMET_CALIBRATE_MERGED /**< column proportional to another: only the sum is identifiable */
} comet_calibrate_pstate;

/** A weighted non-negative least-squares fit y ~ X theta. */
typedef struct comet_calibrate_lsq {
    size_t p; /**< parameters */
    size_t n; /**< points used */
    double coef[COMET_CALIBRATE_MAXP]; /**< theta (merged: 0; its owner holds the combination) */
    comet_calibrate_pstate state[COMET_CALIBRATE_MAXP]; /**< per parameter */
    int owner[COMET_CALIBRATE_MAXP]; /**< MERGED: index of the column it is proportional to */
    double ratio[COMET_CALIBRATE_MAXP]; /**< MERGED: column = ratio x owner's column */
    int pinned[COMET_CALIBRATE_MAXP]; /**< 1 if the non-negativity bound is active */
    int rank; /**< numerical rank of the weighted design (SVD) */
    double r2; /**< weighted coefficient of determination */
    double chisq; /**< weighted residual sum of squares */
} comet_calibrate_lsq;

/**
 * Weighted non-negative least squares with GSL: min sum w_i (y_i - x_i.theta)^2,
 * theta >= 0, by an active set (Lawson-Hanson) whose unconstrained steps are
 * gsl_multifit_wlinear on column-scaled data. Zero columns are ABSENT;
 * columns proportional to an earlier one are MERGED into it (the fit then
 * holds owner + ratio x merged in the owner's coef), which is how collinear
 * cost terms (e.g. beta and gamma at p = 2) are detected and reported.
 * @param X n x p design, row-major
 * @param w weights, or NULL for 1/y^2 (relative error: small messages count)
 * @return 0, -EINVAL (n < 1, p out of range, non-finite or y <= 0 with
 *         w == NULL) or -ENOMEM
 */
int comet_calibrate_nnls(const double *X, const double *y, const double *w, size_t n, size_t p,
    comet_calibrate_lsq *out);

/** x . coef for one design row (a merged column's share is in its owner). */
double comet_calibrate_lsq_eval(const comet_calibrate_lsq *f, const double *xrow);

/** Result of a linear fit y = a + b x. */
typedef struct comet_calibrate_line {
    double a, b; /**< intercept and slope (non-negative) */
    double r2; /**< coefficient of determination (weighted) */
    size_t n; /**< points used */
} comet_calibrate_line;

/** Weighted (1/y^2) non-negative fit of y = a + b x (comet_calibrate_nnls). */
int comet_calibrate_fit_line(const double *x, const double *y, size_t n, comet_calibrate_line *out);

/* ------------------------------------------------------------------ */
/* Piecewise fits (protocol switches)                                 */
/* ------------------------------------------------------------------ */

/** Largest number of pieces of a piecewise fit. */
#define COMET_CALIBRATE_MAXSEG 3

/** A piecewise linear model over a sorted key (message size). */
typedef struct comet_calibrate_piecewise {
    int nseg; /**< pieces (>= 1) */
    double from[COMET_CALIBRATE_MAXSEG]; /**< piece j applies for key >= from[j] (from[0] = 0) */
    comet_calibrate_lsq seg[COMET_CALIBRATE_MAXSEG]; /**< fit of each piece */
    double r2; /**< weighted R^2 of the whole */
} comet_calibrate_piecewise;

/**
 * Fits up to maxseg pieces of y ~ X theta (weighted 1/y^2, non-negative)
 * over points sorted by key ascending. Every split between distinct keys
 * with at least minpts points per piece is tried; the piece count is chosen
 * by BIC on the weighted error, the breakpoints by minimum weighted error.
 * @return 0, -EINVAL (unsorted keys, too few points) or -ENOMEM
 */
int comet_calibrate_fit_piecewise(const double *key, const double *X, const double *y, size_t n,
    size_t p, int maxseg, size_t minpts, comet_calibrate_piecewise *out);

/** Evaluates a piecewise fit at key with design row xrow. */
double comet_calibrate_piecewise_eval(
    const comet_calibrate_piecewise *f, double key, const double *xrow);

/** Piecewise Hockney fit (two pieces at most): T = alpha + beta m. */
typedef struct comet_calibrate_hockney {
    comet_calibrate_line lo, hi; /**< below / at-or-above the breakpoint (hi = lo if one piece) */
    double breakpoint; /**< first size of the upper piece (0 if one piece) */
} comet_calibrate_hockney;

/** Fits a (possibly piecewise) Hockney model; x sorted ascending. */
int comet_calibrate_fit_hockney(
    const double *x, const double *y, size_t n, comet_calibrate_hockney *out);
/** Evaluates a Hockney fit at x. */
double comet_calibrate_hockney_eval(const comet_calibrate_hockney *h, double x);

/* ------------------------------------------------------------------ */
/* Collective cost formulas                                           */
/* ------------------------------------------------------------------ */

/**
 * The Thakur-Rabenseifner-Gropp design row T = row[0] alpha + row[1] beta +
 * row[2] gamma of collective coll under MPICH algorithm alg at p ranks.
 * bytes is the record's shape.bytes (per-rank message; allgather: each
 * rank's contribution, turned into the gathered total n = p x bytes).
 * formula (may be NULL) receives the formula as text.
 * @return 1 when the algorithm has a TRG formula, 0 when not (auto, nb,
 *         smp: the row is the generic alpha + n beta), -EINVAL for an
 *         unknown collective or p < 1.
 */
int comet_calibrate_trg_row(
    const char *coll, const char *alg, double bytes, int p, double row[3], const char **formula);

/* ------------------------------------------------------------------ */
/* Memory plateaus                                                    */
/* ------------------------------------------------------------------ */

/** One bandwidth plateau of a working-set sweep. */
typedef struct comet_calibrate_plateau {
    double gbs; /**< bandwidth (median of the level's in-band points) */
    double from_bytes, to_bytes; /**< working sets covered */
    size_t points; /**< points in the level */
} comet_calibrate_plateau;

/**
 * ERT-style plateaus on a working-set sweep (sizes ascending): a new level
 * starts where the bandwidth drops >= 1.25x below the running median of the
 * current level; a level's bandwidth is the median of its points within
 * +-5% of that median (all its points if none are). A level of one point
 * is kept (a coarse sweep may cross a cache in one step). Writes up to max
 * levels.
 * @return the number of levels (>= 1 when n >= 1), or -EINVAL
 */
int comet_calibrate_plateaus(
    const double *size, const double *gbs, size_t n, comet_calibrate_plateau *lv, int max);

/**
 * Bandwidth the plateaus predict at a working set: the level's value inside
 * a level, log-linear in size between two levels, the end levels beyond.
 */
double comet_calibrate_plateau_predict(const comet_calibrate_plateau *lv, int nl, double bytes);

/* ------------------------------------------------------------------ */
/* GEMM                                                               */
/* ------------------------------------------------------------------ */

/**
 * Fits eff = emax F / (F + f_half) by GSL weighted least squares on the
 * linear form 1/eff = 1/emax + (f_half/emax)/F (weights 1/(1/eff)^2,
 * non-negative).
 */
int comet_calibrate_fit_saturating(
    const double *F, const double *eff, size_t n, double *emax, double *f_half);

/* ------------------------------------------------------------------ */
/* Held-out statistics                                                */
/* ------------------------------------------------------------------ */

/** Median and 90th percentile of |err| (NaN when n == 0). */
void comet_calibrate_err_stats(const double *err, size_t n, double *median, double *p90);

/* ------------------------------------------------------------------ */
/* Profiles                                                           */
/* ------------------------------------------------------------------ */

/** Summary figures of a calibration (also in hw->calibration). */
typedef struct comet_calibrate_summary {
    size_t gemm_points, gemm_heldout; /**< sgemm grid points, held-out predictions */
    /** sgemm records at more than one thread timed while others kept the CPUs
     *  busy (load.busy_during above COMET_RESULTS_BUSY_MAX), when they are
     *  most of those records (else 0): the grid's per-core share of several
     *  busy cores (co-located ranks) reads low */
    size_t gemm_loaded_multi;
    double gemm_core_share; /**< that share at the grid's most threads (1: one thread) */
    double gemm_med, gemm_p90; /**< held-out relative error of sgemm time */
    size_t mem_points, mem_heldout; /**< memory sweep points, held-out predictions */
    double mem_med, mem_p90; /**< held-out relative error of memory-pass time */
    size_t coll_fits, coll_heldout; /**< collective fits, held-out predictions */
    double coll_med, coll_p90; /**< held-out relative error of collective time */
    size_t p2p_fits; /**< point-to-point fits */
    double p2p_alpha_us, p2p_bw_gbs, p2p_breakpoint; /**< first link's figures */
    int collinear; /**< 1 if some collective terms were not separately identifiable */
} comet_calibrate_summary;

/**
 * Fits the links alone (no GEMM or memory records needed): piecewise Hockney
 * point-to-point fits with their breakpoints and the per-collective and joint
 * alpha/beta/gamma fits, each with R^2, residuals and held-out errors, as
 * comet_calibrate_build() does for a whole profile. *fits receives
 * {"p2p", "collectives", "link_joint", "heldout_summary"} (caller frees);
 * sum gets the link figures. Fails when the records hold neither ping-pong
 * nor collective measurements.
 */
int comet_calibrate_links(const comet_results_record *recs, size_t n, json_t **fits,
    comet_calibrate_summary *sum, char *err, size_t errlen);

/** Provenance of the records given to comet_calibrate_build(). */
typedef struct comet_calibrate_source {
    const char *path; /**< results file */
    size_t records; /**< records it held */
} comet_calibrate_source;

/**
 * Builds a profile from records: the run record's machine (clock, cores,
 * caches), sgemm grid, memory sweeps, vector ops, point-to-point and
 * collectives. hw->calibration receives the fits (R^2, residuals, held-out
 * errors per fit) and provenance (machine, date, commit, files, run ids,
 * record counts). Needs a run record, sgemm and memory records; links are
 * optional (the profile says so). sum and src may be NULL.
 */
int comet_calibrate_build(const comet_results_record *recs, size_t n,
    const comet_calibrate_source *src, size_t nsrc, comet_model_hw *hw,
    comet_calibrate_summary *sum, char *err, size_t errlen);

/**
 * Loads results files (JSON Lines) and directories (their results/ folder or
 * their *.jsonl files, in name order) into one set of typed records
 * (comet_results_load_path(); free with comet_results_set_free()). A corrupt
 * line is an error naming file:line; a torn last line
 * (an interrupted bench) is skipped and, on success, err holds that warning
 * (err[0] == 0 when there is none).
 * src/nsrc (may be NULL) receive one entry per file read (paths owned by
 * the array; free with comet_calibrate_sources_free()).
 */
int comet_calibrate_load_results(
    const char *const *paths, size_t npaths, comet_results_set *set, char *err, size_t errlen);

/** Same as comet_calibrate_load_results(), also listing the files read. */
int comet_calibrate_load_results_src(const char *const *paths, size_t npaths,
    comet_results_set *set, comet_calibrate_source **src, size_t *nsrc, char *err, size_t errlen);

/**
 * Same as comet_calibrate_load_results_src(), loading each file with
 * comet_results_load(opts): with opts->machine set, results of
 * another machine are refused (file:line and what differs) unless
 * opts->foreign_ok. opts may be NULL (no machine check).
 */
int comet_calibrate_load_results_opts(const char *const *paths, size_t npaths,
    const comet_results_load_opts *opts, comet_results_set *set, comet_calibrate_source **src,
    size_t *nsrc, char *err, size_t errlen);

/** Frees a file list from comet_calibrate_load_results_src(). */
void comet_calibrate_sources_free(comet_calibrate_source *src, size_t nsrc);

/* ------------------------------------------------------------------ */
/* Measuring                                                          */
/* ------------------------------------------------------------------ */

/** Writes hw as JSON to path atomically (temp file, fsync, rename). */
int comet_calibrate_write_profile(
    const comet_model_hw *hw, const char *path, char *err, size_t errlen);

/** Writes doc (indented, ending in a newline) to path atomically, as
 *  comet_calibrate_write_profile() does for a profile (e.g. link fits). */
int comet_calibrate_write_json(const json_t *doc, const char *path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
