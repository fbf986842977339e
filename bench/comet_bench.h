/**
 * @file comet_bench.h
 * @brief comet's measuring harness and benches: an idle gate, repeat-until-
 *        stable sampling with a nonparametric CI of the median, thread
 *        pinning, optional PAPI counters, the records the benches build
 *        (written and read through comet_results.h), and the benches behind
 *        `comet bench kernels|memory`.
 *
 * Record format: docs/FORMATS.md ("comet.record.v2"), owned by comet_results.h. Every results file
 * starts with a "run" record that embeds the probe's machine description;
 * measurement records follow, one complete line each, appended with
 * fflush+fsync so an interrupted run keeps what it measured.
 *
 * Everything returns 0 or a negative errno-style code with a one-line
 * message in (err, errlen); nothing here prints or exits, except progress
 * lines on stderr through comet_util_progress (bench drivers only).
 */
#ifndef COMET_BENCH_H
#define COMET_BENCH_H

#include "comet_results.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Library version string. */
const char *comet_bench_version(void);

/** The record schema tag every line carries (the results library's). */
#define COMET_BENCH_SCHEMA COMET_RESULTS_SCHEMA
/** The older schema the reader converts (docs/FORMATS.md, "Schema versions"). */
#define COMET_BENCH_SCHEMA_V1 COMET_RESULTS_SCHEMA_V1

/* ------------------------------------------------------------------ */
/* Statistics                                                         */
/* ------------------------------------------------------------------ */

/** Summary statistics of a set of per-call times (seconds). */
typedef struct comet_bench_stats {
    size_t n; /**< number of samples */
    double median; /**< sample median (mean of the two middle values for even n) */
    double ci_lo; /**< lower end of the 95% CI of the median (order statistic) */
    double ci_hi; /**< upper end of the 95% CI of the median (order statistic) */
    double ci_level; /**< actual coverage of [ci_lo, ci_hi] (>= 0.95 when n >= 6) */
    double min; /**< smallest sample */
    double max; /**< largest sample */
    double mean; /**< arithmetic mean */
    double p90; /**< 90th percentile (linear interpolation between order statistics) */
} comet_bench_stats;

/**
 * Computes median, the distribution-free 95% confidence interval of the
 * median, min, max, mean and p90 of samples[0..n-1] (the array is not
 * modified). The CI is [x(l), x(n-l+1)] with l the largest rank such that
 * P(Bin(n, 1/2) <= l-1) <= 0.025; for n < 6 no such rank exists and the CI
 * is [min, max] with its (lower) coverage stated in ci_level.
 * @return 0, -EINVAL (n == 0, NULL, or a non-finite sample) or -ENOMEM.
 */
int comet_bench_stats_compute(const double *samples, size_t n, comet_bench_stats *out);

/**
 * The 1-based ranks (lo, hi) of the order statistics that bound the 95% CI
 * of the median of n samples, and the exact coverage; exposed for tests.
 */
void comet_bench_median_ci_ranks(size_t n, size_t *lo, size_t *hi, double *coverage);

/* ------------------------------------------------------------------ */
/* Idle gate (/proc/stat)                                             */
/* ------------------------------------------------------------------ */

/** Aggregate CPU time counters from the "cpu" line of /proc/stat (jiffies). */
typedef struct comet_bench_cpustat {
    uint64_t busy; /**< user+nice+system+irq+softirq+steal */
    uint64_t total; /**< busy + idle + iowait */
    unsigned ncpu; /**< number of "cpuN" lines seen */
} comet_bench_cpustat;

/**
 * Parses the text of /proc/stat (the aggregate "cpu" line and the per-CPU
 * lines). Steal time counts as busy: on a VM it is other tenants' work.
 * @return 0 or -EINVAL (message names the line) when the text is not /proc/stat.
 */
int comet_bench_cpustat_parse(const char *text, comet_bench_cpustat *out, char *err, size_t errlen);

/** Fraction of the machine busy between two snapshots (0..1), or -1 if no time passed. */
double comet_bench_cpustat_busy(
    const comet_bench_cpustat *before, const comet_bench_cpustat *after);

/** Load seen before a sample set, as recorded in every measurement's "load". */
typedef struct comet_bench_load {
    double busy_others; /**< fraction of all CPUs busy in the last gate window (0..1) */
    double waited_s; /**< time spent waiting in the gate */
    int idle; /**< 1 if the gate opened on an idle machine, 0 on timeout */
    int skipped; /**< 1 if the gate was disabled (timeout 0) */
    int reused; /**< 1 if the gate took the previous set's figure (it ended idle < 0.5 s ago) */
    int spent; /**< 1 if the process's gate budget was spent: one window, no wait */
    double busy_during; /**< others' busy fraction while the samples ran (-1 unknown) */
} comet_bench_load;

/** Idle gate settings. */
typedef struct comet_bench_gate {
    double threshold; /**< open when others use less than this fraction (default 0.10) */
    double window_s; /**< length of one /proc/stat window (default 0.1 s) */
    double timeout_s; /**< give up and measure anyway after this (0 = no gate) */
    double budget_s; /**< all waits of this process together stop at this (<= 0: no
                          budget); once spent, a gate looks one window and measures,
                          so a busy machine costs one timeout, not one per set */
    const char *path; /**< file to read (default "/proc/stat"; tests use a recording) */
} comet_bench_gate;

/** Fills g with the defaults (10%, 0.1 s windows, 10 s timeout, /proc/stat). */
void comet_bench_gate_defaults(comet_bench_gate *g);

/** Seconds this process has waited in idle gates so far (all gates). */
double comet_bench_gate_waited_total(void);

/**
 * Waits (bounded by g->timeout_s and by what is left of g->budget_s) until
 * the machine is quiet. This process
 * sleeps while it looks, so whatever is busy belongs to others.
 * @return 0 (load filled, gate opened or timed out) or a negative errno
 *         when the stat file cannot be read or parsed.
 */
int comet_bench_gate_wait(
    const comet_bench_gate *g, comet_bench_load *load, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Sampling                                                           */
/* ------------------------------------------------------------------ */

/**
 * A measured body: runs the operation reps times back to back (so that
 * batching happens inside, e.g. inside one OpenMP region) and returns 0 or
 * a negative errno. Timing is done by the harness around the call.
 */
typedef int (*comet_bench_fn)(void *ctx, size_t reps);

/** Sampling settings (see comet_bench_config_defaults()). */
typedef struct comet_bench_config {
    double warmup_s; /**< warm-up time before sampling (at least one call) */
    int settled; /**< buffers touched and threads started by an earlier set: one warm-up batch */
    size_t settled_reps; /**< with settled: that batch's calls (the reps an earlier set of the same
                              call sampled with), and no warm-up time floor; 0: doubling batches up
                              to warmup_s */
    double min_sample_s; /**< each sample lasts at least this (reps batched), dwarfing timer cost */
    size_t min_samples; /**< never fewer samples than this */
    size_t max_samples; /**< stop at this many samples */
    double target_ci; /**< stop when the CI half-width / median <= this (e.g. 0.02) */
    double time_cap_s; /**< stop sampling after this much time even if not converged */
    comet_bench_gate gate; /**< idle gate before the sample set */
    int stop_on_signal; /**< end early (with >= min_samples) when comet_util_interrupted is set */
    struct comet_bench_counters *counters; /**< counted around the samples if enabled (or NULL) */
} comet_bench_config;

/** Defaults: 0.05 s warm-up, 2 ms samples, 10..200 samples, 2% CI, 2 s cap, gate defaults. */
void comet_bench_config_defaults(comet_bench_config *c);

/** The outcome of one sample set. */
typedef struct comet_bench_result {
    comet_bench_stats stats; /**< statistics of per-call seconds */
    double *samples; /**< per-call seconds of each sample (malloc'ed, n entries) */
    size_t n; /**< number of samples */
    size_t reps; /**< calls per sample */
    int converged; /**< 1 if the CI target was met */
    double elapsed_s; /**< wall time of warm-up + sampling */
    comet_bench_load load; /**< what the idle gate saw */
    double calls; /**< calls timed (n * reps): divide counter values by this */
    double clock_mhz; /**< core clock timed just before and after the samples (mean; 0
                           unknown): a VM's turbo moves it from run to run */
} comet_bench_result;

/**
 * One-way core-to-core latency in ns between threads 0 and 1 of an OpenMP
 * team of two (bound as the caller's pinning binds them): a cache line
 * handed back and forth `rounds` times, the median of `sets` timed sets.
 * A VM host moves its vCPUs between one shared cache (tens of ns) and two
 * (above 100 ns), and kernels whose threads exchange data follow.
 * @return the latency, or -1 without OpenMP or with fewer than two threads.
 */
double comet_bench_core_to_core_ns(int rounds, int sets);

/**
 * Measures fn: idle gate, warm-up, calibration of reps per sample, then
 * samples until the CI of the median is within target, or max_samples, or
 * the time cap. Times with CLOCK_MONOTONIC; each sample is one timed call
 * fn(ctx, reps), divided by reps.
 * @return 0 or the first error fn returned (or -ENOMEM, or the gate's error).
 */
int comet_bench_measure(const comet_bench_config *cfg, comet_bench_fn fn, void *ctx,
    comet_bench_result *res, char *err, size_t errlen);

/** Frees the samples of a result (the struct itself is the caller's). */
void comet_bench_result_free(comet_bench_result *res);

/* ------------------------------------------------------------------ */
/* Thread pinning (hwloc)                                             */
/* ------------------------------------------------------------------ */

/**
 * Binds the threads of the next OpenMP parallel regions of nthreads threads
 * one per core (thread i to core i mod cores) through hwloc_set_cpubind,
 * and the calling thread to core 0. nthreads <= 0 unbinds (whole machine).
 * @return 0, or a negative errno with the reason (the caller may go on unpinned).
 */
int comet_bench_pin(int nthreads, char *err, size_t errlen);

/** Number of physical cores hwloc sees (>= 1). */
int comet_bench_ncores(void);

/* ------------------------------------------------------------------ */
/* Optional hardware counters (PAPI)                                  */
/* ------------------------------------------------------------------ */

/** A counter backend; disabled with a reason when counting is impossible. */
typedef struct comet_bench_counters {
    int enabled; /**< 1 if the events could be added and started */
    char reason[192]; /**< why not, e.g. "PAPI_add_event(PAPI_TOT_CYC): ... (PAPI_ENOEVNT)" */
    int eventset; /**< PAPI event set */
    size_t nevents; /**< events in the set */
    char names[4][32]; /**< event names */
    long long values[4]; /**< counts of the last start/stop */
} comet_bench_counters;

/**
 * Tries to set up PAPI counting of the given events (NULL = PAPI_TOT_CYC,
 * PAPI_TOT_INS) on the calling thread, adding AND starting them. Never fails:
 * when counting is impossible, enabled = 0 and reason says why.
 */
void comet_bench_counters_init(comet_bench_counters *c, const char *const *events);
/** Starts counting (no-op when disabled). */
void comet_bench_counters_start(comet_bench_counters *c);
/** Stops counting into c->values (no-op when disabled). */
void comet_bench_counters_stop(comet_bench_counters *c);
/** Releases the event set. */
void comet_bench_counters_fini(comet_bench_counters *c);

/* ------------------------------------------------------------------ */
/* Records: building (writing and reading: comet_results.h)          */
/* ------------------------------------------------------------------ */

/** A run: its id, the machine it measures, and the "run" record. */
typedef struct comet_bench_run {
    char run_id[64]; /**< "YYYYMMDDTHHMMSSZ-<pid>" */
    char machine_id[32]; /**< probe id */
    char kind[32]; /**< bench kind, names the results file */
    json_t *machine; /**< machine object (owned) */
} comet_bench_run;

/**
 * Starts a run: fills run_id, takes a reference to machine (the object
 * comet_probe_to_json() returned; its "id" becomes machine_id).
 * @return 0 or -EINVAL (machine not an object).
 */
int comet_bench_run_init(
    comet_bench_run *run, const char *kind, json_t *machine, char *err, size_t errlen);
/** Releases the run's machine reference. */
void comet_bench_run_fini(comet_bench_run *run);

/**
 * The "run" record (docs/FORMATS.md): schema, kind "run", run_id, time,
 * cmdline, comet version/commit, machine, env (glibc tunables, OpenBLAS
 * threads, timer). extra (may be NULL, stolen) is merged in as "settings".
 */
json_t *comet_bench_run_record(const comet_bench_run *run, const char *cmdline, json_t *extra);

/**
 * A new measurement record with schema, kind, run_id, machine_id, time, op,
 * variant (may be NULL), shape (stolen; NULL -> {}) and threads (> 0 to set).
 */
json_t *comet_bench_record_new(const comet_bench_run *run, const char *kind, const char *op,
    const char *variant, json_t *shape, int threads);

/** The "stats" object: n, median_s, ci_lo_s, ci_hi_s, min_s, mean_s, p90_s, samples_s. */
json_t *comet_bench_stats_json(const comet_bench_stats *s, const double *samples, size_t n);

/** The "load" object of docs/FORMATS.md. */
json_t *comet_bench_load_json(const comet_bench_load *l);

/**
 * Adds stats, load, reps, converged, and (when > 0) flops, bytes, gflops
 * and gbs computed from the median to rec.
 * @return 0 or -ENOMEM.
 */
int comet_bench_record_set_result(
    json_t *rec, const comet_bench_result *r, double flops, double bytes);

/** Adds "counters" (enabled, per call = values / calls) or "counters_disabled". */
int comet_bench_record_set_counters(json_t *rec, const comet_bench_counters *c, double calls);

/**
 * This machine's identity for comet_results_load_opts: the probe's object
 * (comet_probe_to_json(); PAPI, MPI and the clock not queried, they are no
 * part of the machine's identity). @return 0 or a negative errno; *machine
 * is a new reference.
 */
int comet_bench_this_machine(json_t **machine, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Bench drivers (what `comet bench kernels|memory` runs)             */
/* ------------------------------------------------------------------ */

/** Options shared by the bench drivers. */
typedef struct comet_bench_opts {
    int full; /**< 1 = full set, 0 = quick */
    const char *out_dir; /**< results go to <out_dir>/results/ */
    const char
        *shapes_path; /**< kernels: shape set file (NULL = configs/shapes/<quick|full>.yaml) */
    int threads; /**< > 0: only this thread count; 0 = the set's list */
    uint64_t max_bytes; /**< memory: cap on the largest working set (0 = 4x LLC or more) */
    double per_octave; /**< memory: working-set points per doubling (0 = 0.5 quick, 2 full) */
    const char *cmdline; /**< recorded in the run record */
    int pin; /**< pin threads through hwloc */
    comet_bench_config cfg; /**< sampling settings */
    const char *csv_path; /**< also export the run's records as CSV here (NULL = no) */
    int passes; /**< kernels: passes over the whole set, samples merged (default 3 quick, 2 full) */
    double grid_time_cap_s; /**< kernels: sampling cap per sgemm-grid set (measured in the first
                                 pass only); 0 = the compound ops' per-pass cap */
} comet_bench_opts;

/** Fills o with the defaults for a quick (full = 0) or full run. */
void comet_bench_opts_defaults(comet_bench_opts *o, int full);

/** What a driver did, for the CLI's summary. */
typedef struct comet_bench_summary {
    char results_path[4096]; /**< the JSON Lines file written */
    size_t records; /**< measurement records written */
    size_t invalid; /**< records whose result check failed */
    int interrupted; /**< stopped by SIGINT/SIGTERM */
    double elapsed_s; /**< wall time */
    json_t *highlights; /**< a small JSON object of headline figures (owned by the caller) */
} comet_bench_summary;

/**
 * The memory bench: a working-set sweep from 4 KiB to >= 4x LLC of read,
 * copy and triad (double, vectorized AVX2 and scalar) on 1 thread and all
 * cores, then vector-op throughput (exp, max, sum, sub, div, mul, sqrt over
 * float32) in cache and streaming. machine is the probe JSON (borrowed).
 * @return 0, or a negative errno; an interruption returns 0 with
 *         sum->interrupted set.
 */
int comet_bench_memory_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen);

/**
 * The kernels bench: each compound op x variant x shape x threads of the
 * shape set, tile sweeps of the fused variants, and plain sgemm over a
 * log-spaced grid; every result checked against a reference on a few rows.
 * @return as comet_bench_memory_run().
 */
int comet_bench_kernels_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen);

/**
 * Rows of the fused kernels' GEMM micro-tile on an ISA ("avx512", "avx2",
 * "portable": the variant the vector-op records name), and of its edge tile
 * (*edge, may be NULL).
 */
int comet_bench_micro_tile_rows(const char *isa, int *edge);

/**
 * Loads and checks a kernel shape-set file (configs/shapes/NAME.yaml): the
 * ops it names, their shapes and tile sweeps. Errors name file:line.
 * @return 0 with the op and sweep counts (either pointer may be NULL), or a
 * negative errno.
 */
int comet_bench_shapeset_check(
    const char *path, size_t *nops, size_t *nsweeps, char *err, size_t errlen);

/**
 * The gather-GEMM-scatter bench: each dataflow x tile rows x threads for
 * RGCN, SpConv and MoE inputs at skews 0, 1, 2 (records kind "kernel", op
 * "gms", variant and "dataflow" the dataflow name, "workload", shape = input
 * statistics). @return as comet_bench_memory_run().
 */
int comet_bench_gms_run(
    const comet_bench_opts *o, json_t *machine, comet_bench_summary *sum, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

/* The collectives bench (bench/coll*.c) publishes its API here. */
#include "comet_bench_coll.h"

#endif /* COMET_BENCH_H */
