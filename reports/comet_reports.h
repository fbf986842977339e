/**
 * @file comet_reports.h
 * @brief Joins measured and predicted results into a report a performance
 *        architect can read: DIR/report/index.html (self-contained, offline:
 *        inline CSS, SVG plots beside it referenced relatively) and
 *        DIR/report/summary.md, with gnuplot SVG plots whose data sit beside
 *        them as CSV and JSON. Also the pieces of `comet run` that live
 *        below the CLI: the prediction stage and the freshness test of stored
 *        results.
 *
 * Inputs in DIR:
 *  - results/NAME.jsonl   bench records (docs/FORMATS.md), required;
 *  - profile.json         calibrated machine profile (calibrate), optional;
 *  - predictions.json     written by comet_reports_predict(), optional.
 * The model's error on this machine is computed while the report is built
 * (comet_model_validate_records() on the profile and the kernel records), so
 * it never goes stale. A missing optional input leaves its section saying
 * so; a corrupt input (any file) is an error naming the file.
 *
 * Every function returns 0 or a negative errno-style code with a one-line
 * message "where: what" in (err, errlen). Input problems (missing results,
 * unreadable or corrupt files) are -ENOENT or -EINVAL; anything else
 * (cannot write the report) is another negative code.
 */
#ifndef COMET_REPORTS_H
#define COMET_REPORTS_H

#include "comet_results.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * One measured fused-vs-unfused comparison. The interval combines the two
 * medians' distribution-free 95% CIs conservatively: [unfused lo / fused hi,
 * unfused hi / fused lo]. If both CIs cover their true medians, the ratio of
 * the true medians lies inside, so by Bonferroni the coverage is at least
 * 1 - (1 - level_f) - (1 - level_u) (>= 90% for two 95% CIs).
 */
/** The baselines a fused kernel is compared with. */
typedef enum comet_reports_baseline {
    /** the same GEMM engine unfused: fused against it is the fusion effect */
    COMET_REPORTS_VS_SAME_GEMM = 0,
    /** the BLAS baseline (OpenBLAS GEMM, then the passes) */
    COMET_REPORTS_VS_BLAS = 1,
    /** the best peer: oneDNN's matmul then its softmax / layer_norm */
    COMET_REPORTS_VS_ONEDNN = 2,
    COMET_REPORTS_NBASELINES = 3
} comet_reports_baseline;

/** Record variant of each baseline ("unfused_same_gemm", "unfused", "onednn"). */
extern const char *const comet_reports_baseline_variant[COMET_REPORTS_NBASELINES];

/** One measured ratio, baseline median time / fused median time. */
typedef struct comet_reports_ratio {
    double base_s; /**< the baseline's median seconds; 0 when not measured */
    double speedup; /**< base_s / fused median */
    double lo, hi; /**< conservative interval from the medians' CIs */
    double coverage; /**< lower bound of the interval's coverage (Bonferroni) */
} comet_reports_ratio;

/** A fused kernel case and its speedups over each measured baseline. */
typedef struct comet_reports_speedup {
    char op[24]; /**< compound op */
    char shape[64]; /**< "M=..,N=..,K=.." or attention dims */
    int threads; /**< threads */
    double flops; /**< analytic FLOPs of one call */
    double fused_s; /**< median seconds of the fused kernel */
    comet_reports_ratio vs[COMET_REPORTS_NBASELINES]; /**< per baseline */
    /* the BLAS baseline's ratio again, by its historical names */
    double unfused_s; /**< = vs[COMET_REPORTS_VS_BLAS].base_s */
    double speedup; /**< = vs[COMET_REPORTS_VS_BLAS].speedup */
    double lo, hi; /**< = vs[COMET_REPORTS_VS_BLAS].lo, .hi */
    double coverage; /**< = vs[COMET_REPORTS_VS_BLAS].coverage */
} comet_reports_speedup;

/**
 * For every fused kernel case (op, shape, threads; the first fused record
 * in file order: the default tiles, later ones are tile sweeps), the
 * speedup over each baseline measured in the same results: the fusion
 * effect (same GEMM engine), the BLAS baseline, oneDNN. A case is listed
 * when at least one baseline was measured. @return cases written (<= cap).
 */
size_t comet_reports_speedups(
    const comet_results_record *recs, size_t n, comet_reports_speedup *out, size_t cap);

struct comet_model_vrow;
/**
 * The 90% interval of a prediction pred_s of op (fused or unfused) from
 * this machine's validation rows (comet_model_interval): {lo_s, hi_s, level,
 * records, basis}, or JSON null when rows is NULL or too few records; line
 * (may be NULL) gets a one-line text form ("" when null). One builder for
 * predict --json, explore --json and comet run's predictions.json.
 */
json_t *comet_reports_interval_json(const struct comet_model_vrow *rows, int n, const char *op,
    int fused, double pred_s, char *line, size_t linelen);

/** Settings of the prediction stage. */
typedef struct comet_reports_predict_opts {
    int scale_cores; /**< cores per node of the scaled CPU system (>= 1) */
    int scale_nodes; /**< nodes of the scaled CPU system (>= 1) */
} comet_reports_predict_opts;

/**
 * The prediction stage of `comet run`: for GEMM-Softmax, GEMM-LayerNorm and
 * self-attention, searches the best fused and best unfused mapping
 * (comet_model_explore) on this machine (DIR/profile.json, at the largest
 * shape measured here), on a scaled CPU system of it (comet_model_hw_scale),
 * and on the COMET edge and cloud presets. Writes DIR/predictions.json
 * atomically (docs/FORMATS.md); this machine's predictions carry the 90%
 * interval of its own validation over DIR/results. A missing profile leaves out the two CPU systems
 * (the file says why). @return 0 or a negative errno.
 */
int comet_reports_predict(
    const char *dir, const comet_reports_predict_opts *opts, char *err, size_t errlen);

/**
 * Whether DIR/results holds a fresh, complete results file of bench kind
 * ("memory", "kernels", "collectives"): one that comet_reports_results_mark()
 * marked complete, whose run record names machine_id, younger than
 * max_age_s, with at least one measurement and no torn or corrupt line.
 * why (may be NULL) says what disqualified it.
 * @return 1 fresh, 0 not.
 */
int comet_reports_results_fresh(const char *dir, const char *kind, const char *machine_id,
    double max_age_s, char *why, size_t whylen);

/**
 * Marks the newest DIR/results/KIND-*.jsonl complete (a bench of that kind
 * just finished successfully) in DIR/results/KIND.complete, atomically.
 * @return 0 or a negative errno (-ENOENT: no such results file).
 */
int comet_reports_results_mark(const char *dir, const char *kind, char *err, size_t errlen);

/**
 * Moves DIR/results/KIND-*.jsonl (every kind when kind is NULL) and its
 * completion mark into DIR/archive/STAMP/, so that calibration and the
 * report never mix a re-measured kind with stale or partial files.
 * @return number of files moved (>= 0) or a negative errno.
 */
int comet_reports_results_archive(const char *dir, const char *kind, char *err, size_t errlen);

/**
 * Builds the report from the inputs in dir into outdir (NULL: dir/report).
 * gnuplot (a child process under a timeout) draws the SVGs; a plot that
 * cannot be drawn is named in the report with the reason. Every file is
 * written atomically. @return 0, -ENOENT/-EINVAL (input: message names the
 * file) or another negative errno (output).
 */
int comet_reports_build(const char *dir, const char *outdir, char *err, size_t errlen);

/**
 * Same as comet_reports_build(), loading the results with
 * comet_results_load(lo): with lo->machine set, results of
 * another machine are an input error (-EINVAL naming file:line and what
 * differs) unless lo->foreign_ok. lo may be NULL (no machine check).
 */
int comet_reports_build_ex(const char *dir, const char *outdir, const comet_results_load_opts *lo,
    char *err, size_t errlen);

/**
 * Compares two inputs side by side on `out` (text, or JSON with schema
 * "comet.compare.v1" when json): two results folders (every measurement
 * both hold, matched on kind, op, variant, shape, threads, ranks, link and
 * parameters: the medians, B/A and its interval from the medians' 95% CIs,
 * a verdict, and a summary), or two hardware descriptions (presets, files,
 * calibrated profiles: their parameters and the model's best fused and
 * unfused latency of the same ops and shapes). Results are compared across
 * machines on purpose (no machine check).
 * @return 0, or a negative errno with err naming the input.
 */
int comet_reports_compare(
    const char *a, const char *b, int json, FILE *out, char *err, size_t errlen);

/**
 * Draws a sweep's figure into dir: NAME.svg (best fused and unfused latency
 * against the swept value, log y; log x over a wide range), NAME.csv,
 * NAME.json (schema comet.sweep.v1) and NAME.gp, atomically.
 * @return 0, or a negative errno (-EIO: gnuplot could not draw; err says why).
 */
int comet_reports_sweep_plot(const char *dir, const char *name, const char *xlabel, const double *x,
    const double *fused_s, const double *unfused_s, size_t n, char *err, size_t errlen);

/** Terms of a whole step (`comet validate --system`). */
#define COMET_REPORTS_SYSV_NTERMS 9
/** Their names: gemm, attention, vector, tp, dp, pp, bubble, optimizer, recompute. */
extern const char *const comet_reports_sysv_terms[COMET_REPORTS_SYSV_NTERMS];

/** One llm record against the system model's prediction of its configuration. */
typedef struct comet_reports_sysv_row {
    const comet_results_record *rec; /**< the record (borrowed) */
    double measured_s, predicted_s; /**< the step */
    double measured[COMET_REPORTS_SYSV_NTERMS]; /**< the bench's timers (s) */
    double predicted[COMET_REPORTS_SYSV_NTERMS]; /**< the model's terms (s) */
    double other_s; /**< the measured step beyond its timed terms */
} comet_reports_sysv_row;

struct comet_model_hw;
/**
 * Every valid "llm" record of recs predicted by the system model with its
 * own configuration on the profile hw (comet_system_from_profile: one rank
 * of the record's threads per chip, the fits of the record's link). At most
 * cap rows; *skipped (may be NULL) counts llm records that could not be
 * predicted, why the first one's reason. @return rows written.
 */
int comet_reports_system_validate(const struct comet_model_hw *hw, const comet_results_record *recs,
    size_t n, comet_reports_sysv_row *rows, size_t cap, int *skipped, char *why, size_t whylen);

#ifdef __cplusplus
}
#endif
#endif
