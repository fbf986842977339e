/**
 * @file comet_model_validate.h
 * @brief Validation of the model against measured records (comet_results.h):
 *        compound-kernel, gather-GEMM-scatter and distributed-kernel records
 *        set up as problems and predicted, and every error statistic and
 *        prediction interval validate and the report print.
 *
 * The one model header that includes the results header: predicting needs
 * only comet_model.h.
 */
#ifndef COMET_MODEL_VALIDATE_H
#define COMET_MODEL_VALIDATE_H

#include "comet_model.h"
#include "comet_results.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ */
/* Compound-kernel records                                              */
/* ------------------------------------------------------------------ */

/** One validation row: a measured record against its prediction. */
typedef struct comet_model_vrow {
    char op[24], variant[12]; /**< record op and variant */
    double M, N, K; /**< shape (attention: lq, lk, d) */
    double heads; /**< attention heads (batch x heads); 0 for the GEMM ops */
    int causal; /**< attention with a causal mask */
    int threads, ranks; /**< parallelism */
    double tile_m, tile_k; /**< fused tiles the kernel ran (tile_m / tile_q, tile_k); 0 if none */
    int swept; /**< the record belongs to a tile-size sweep (not the kernel's default tiles) */
    double measured_s, predicted_s, rel_err; /**< median time, prediction, |p-m|/m */
    double ci_lo_s, ci_hi_s; /**< the measured median's 95% CI (0 when the record has none) */
    double busy; /**< others' busy fraction while the record sampled (NaN: unknown) */
    int launches; /**< records of this configuration merged into the row (several runs or
                       MPI launches: measured_s is the median of their medians, the CI
                       their CIs' span); 1 for one record */
    char link[32]; /**< the link a distributed record ran on, with its placement ("" local) */
    double c2c_lo_ns, c2c_hi_ns; /**< threads > 1: the lowest and highest core-to-core latency
                                      the record's passes saw (c2c_ns; NaN or 0: not
                                      measured) */
} comet_model_vrow;

/**
 * The problem of op at a record's shape: the keys of the op's shape class
 * (attention: heads = B x H, lq, lk, d, causal; else M, N, K), every other
 * field 0. The one conversion from a record to a problem (validation,
 * distributed validation, the report's local predictions).
 */
void comet_model_record_problem(
    comet_model_op op, const comet_results_shape *sh, comet_model_problem *pb);

/**
 * The local description, problem and mapping of one measured compound-kernel
 * record (kind "kernel" or "dist_kernel"): the record's threads and ranks on
 * this machine, its shape, and the mapping the kernel ran (its tiles).
 * @return 0, -ENOENT when the record is not a predictable kernel record, or
 * -EINVAL.
 */
int comet_model_record_setup(const comet_model_hw *hw, const comet_results_record *rec,
    comet_model_hw *local, comet_model_problem *pb, comet_model_mapping *mp);

/**
 * The share of the machine other tenants took while a record sampled, as
 * validate counts it (beyond COMET_RESULTS_BUSY_MAX: "busy"): load.busy_during;
 * where that was not measured (null: the distributed kernels' ranks
 * busy-poll every core) or the idle gate timed out, at least the gate's
 * reading right before (load.busy_others).
 */
double comet_model_record_busy(const comet_results_record *rec);

/**
 * Predicts measured records (kind "kernel" for the compound ops, and
 * "dist_kernel") on a local-machine description; rows[] gets up to cap rows.
 * Records of one configuration (several runs, or the distributed kernels'
 * MPI launches) make one row at the median of their medians (vrow.launches).
 * @return number of rows (>= 0) or a negative errno.
 */
int comet_model_validate_records(const comet_model_hw *hw, const comet_results_record *recs,
    size_t n, comet_model_vrow *rows, size_t cap);

/** Validation summary (comet_model_validate_summary). */
typedef struct comet_model_vsum {
    int rows; /**< predicted records */
    double median_rel_err, p90_rel_err; /**< over all rows */
    int pairs, winner_agrees; /**< fused/unfused pairs of one shape; predicted winner right */
    int decided, decided_agrees; /**< pairs whose measured CIs do not overlap (a clear measured
                                      winner); of those, predicted right */
    int shapes, shape_agrees; /**< pairs at the kernels' default tiles: one per shape */
    int shape_decided, shape_decided_agrees; /**< of those, with a clear measured winner */
    int busy_rows; /**< rows measured beside busy tenants (busy > COMET_RESULTS_BUSY_MAX) */
    double quiet_median_rel_err, quiet_p90_rel_err; /**< over the other rows (NaN: none) */
    double c2c_floor_ns; /**< the lowest core-to-core latency any row saw (NaN: none measured) */
    int c2c_rows, across_rows; /**< rows with c2c measured; of them, rows where some pass saw
                                    more than twice the floor (threads two caches apart) */
    double across_median_rel_err, across_p90_rel_err; /**< over the across rows (NaN: none) */
    double near_median_rel_err, near_p90_rel_err; /**< over the other c2c rows (NaN: none) */
} comet_model_vsum;

/** One fused/unfused pair found by comet_model_validate_pairs(). */
typedef struct comet_model_vpair {
    int fused, unfused; /**< row indices */
    double measured_speedup, predicted_speedup; /**< unfused / fused times */
    int decided; /**< the measured medians' CIs do not overlap */
    int agrees; /**< predicted winner is the measured one */
    int swept; /**< the fused row is a tile-sweep point, not the shape's default tiles */
} comet_model_vpair;

/**
 * Pairs fused and unfused rows of one op, shape (with heads and mask), threads
 * and ranks: every fused row, tile sweeps included, against its unfused row.
 * @return pairs written (<= cap).
 */
int comet_model_validate_pairs(
    const comet_model_vrow *rows, int n, comet_model_vpair *pairs, int cap);

/**
 * Median/p90 error and winner agreement of validation rows. A pair whose
 * measured 95% CIs overlap has no clear measured winner (a tie at this
 * machine's noise): it counts in pairs but not in decided. Agreement is
 * given twice: per shape (the fused kernel at its default tiles against the
 * unfused one) and over all pairs (every tile-sweep point as well).
 */
void comet_model_validate_summary(const comet_model_vrow *rows, int n, comet_model_vsum *out);

/* ------------------------------------------------------------------ */
/* Validation statistics and prediction intervals                       */
/* ------------------------------------------------------------------ */

/** Error statistics of one op and variant over validation rows. */
typedef struct comet_model_vgroup {
    char op[24], variant[24]; /**< group */
    int n; /**< rows */
    double median_rel_err, p90_rel_err; /**< of |predicted - measured| / measured */
    double bias; /**< median of predicted / measured - 1 (positive: pessimistic) */
} comet_model_vgroup;

/**
 * Per op and variant (in order of first appearance) error statistics of
 * validation rows, with comet_util_quantile's convention: what validate and
 * the report both print. @return groups written (<= cap) or a negative errno.
 */
int comet_model_validate_groups(
    const comet_model_vrow *rows, int n, comet_model_vgroup *groups, int cap);

/** An error band: quantiles of measured / predicted over validated records. */
typedef struct comet_model_band {
    int records; /**< records the band rests on */
    double level; /**< central coverage of the band (e.g. 0.9: 5% to 95%) */
    double lo, hi; /**< quantiles of measured / predicted: interval = [lo x pred, hi x pred] */
    int scope; /**< 0: same op and variant, 1: same op, 2: every record */
} comet_model_band;

/**
 * The band of measured / predicted for predictions of op and variant, from
 * validation rows of this machine: the narrowest scope (op and variant, then
 * the op, then all rows) with at least 5 records.
 * @return 0, -ENOENT (too few records), -EINVAL, -ENOMEM.
 */
int comet_model_interval(const comet_model_vrow *rows, int n, const char *op, const char *variant,
    double level, comet_model_band *band);

/* ------------------------------------------------------------------ */
/* Gather-GEMM-scatter records                                          */
/* ------------------------------------------------------------------ */

/** One measured gather-GEMM-scatter record (kind "kernel", op "gms") and
 *  the model's prediction of it. */
typedef struct comet_model_gms_vrow {
    char workload[16]; /**< rgcn, spconv, moe, or the record's name */
    double skew; /**< the generator's skew knob */
    comet_model_gms input; /**< the input's statistics */
    comet_model_gms_config config; /**< what the kernel ran */
    double measured_s, predicted_s, rel_err; /**< median time, prediction, |p-m|/m */
    double ci_lo_s, ci_hi_s; /**< the measured median's 95% CI */
} comet_model_gms_vrow;

/**
 * Reads the gms records of recs (others are skipped) and predicts each on hw
 * (the calibrated profile of the machine that measured them).
 * @return rows written (<= cap) or a negative errno.
 */
int comet_model_gms_validate(const comet_model_hw *hw, const comet_results_record *recs, size_t n,
    comet_model_gms_vrow *rows, int cap);

/** Per measured input (workload, skew, threads): what the model chose and
 *  how it fared against every configuration measured. */
typedef struct comet_model_gms_vinput {
    char workload[16]; /**< the input's workload */
    double skew; /**< its skew */
    int threads; /**< threads */
    int configs; /**< configurations measured (dataflow x tile) */
    double best_s; /**< the measured best */
    int best_df; /**< its dataflow */
    double best_tile; /**< its tile_m */
    double chosen_s; /**< measured time of the model's choice (its lowest prediction) */
    int chosen_df; /**< the model's dataflow */
    double chosen_tile; /**< the model's tile_m */
    double df_best_s[4]; /**< the measured best of each dataflow (0: not measured) */
    double best_ci_hi_s; /**< upper end of the best's CI */
    double chosen_ci_lo_s; /**< lower end of the model's choice's CI */
} comet_model_gms_vinput;

/** Groups rows by input (in order of first appearance). @return inputs (<= cap). */
int comet_model_gms_inputs(
    const comet_model_gms_vrow *rows, int n, comet_model_gms_vinput *out, int cap);

/** The gms validation figures validate and the report print (one function). */
typedef struct comet_model_gms_vsum {
    int records; /**< records predicted */
    double median_rel_err, p90_rel_err; /**< of |predicted - measured| / measured */
    int inputs; /**< workload x skew x threads */
    int within_5pct; /**< inputs whose model choice measured within 5% of the best */
    int within_noise; /**< inputs whose model choice's CI reaches the best's (measured
                           apart from the best by no more than the noise shows) */
    int configs; /**< configurations measured in all */
    double worst_loss[4]; /**< per dataflow: the largest ratio, over inputs, of its best
                               measured time to the input's best (0: never measured) */
} comet_model_gms_vsum;

/** Sums up rows (and their inputs, comet_model_gms_inputs) into *out. */
void comet_model_gms_summary(const comet_model_gms_vrow *rows, int n,
    const comet_model_gms_vinput *in, int ninputs, comet_model_gms_vsum *out);

/* ------------------------------------------------------------------ */
/* Distributed-kernel records (model/dist.c, model/moe.c)               */
/* ------------------------------------------------------------------ */

/**
 * Whether a prediction's collectives are the ones a dist_kernel record
 * says its call issued (kind, reduction, bytes, calls, in order).
 * @return 1 same, 0 different, -EINVAL.
 */
int comet_model_dist_matches(const comet_model_dist_pred *pred, const comet_results_record *rec);

/** One distributed-kernel record predicted over its own link. */
typedef struct comet_model_drow {
    char op[24], variant[16]; /**< op, fused | unfused */
    char link[32]; /**< the record's link */
    double M, N, K; /**< GEMM dims; attention: Lq, Lk, d */
    double heads; /**< attention: batch x heads (0 otherwise) */
    int threads, ranks; /**< per rank, ranks */
    double measured_s, ci_lo_s, ci_hi_s; /**< measured median and its CI */
    double load_others; /**< others' share of the CPUs seen by the idle gate (NaN absent) */
    comet_model_dist_pred pred; /**< the prediction and its parts */
    double rel_err; /**< |predicted - measured| / measured */
    int colls_match; /**< the model's collectives are the record's (comet_model_dist_matches) */
} comet_model_drow;

/**
 * Predicts every valid dist_kernel record with ranks > 1 over its own link
 * (comet_model_dist_predict; op "gms" with workload "moe" and per-rank
 * rank_loads: comet_model_moe_predict, row op "gms:moe", variant the
 * dataflow, M the tokens). Records whose link has no fit are skipped.
 * @return rows written (<= cap) or -EINVAL.
 */
int comet_model_dist_validate(const comet_model_hw *hw, const comet_results_record *recs, size_t n,
    comet_model_drow *rows, int cap);

#ifdef __cplusplus
}
#endif
#endif /* COMET_MODEL_VALIDATE_H */
