/**
 * @file comet_results.h
 * @brief comet's results library: one typed record for a line of a JSON
 *        Lines results file (schema comet.record.v2, docs/FORMATS.md), read
 *        and validated in one place, and the writer every bench appends
 *        through.
 *
 * The record is read once, by comet_results_parse(): the line is checked
 * against the schema (clear one-line messages naming the field), an older
 * schema (comet.record.v1) is converted, and every documented field lands in
 * a typed struct. Nothing outside this library reads a record by key: the
 * benches write through the same field names (comet_results_to_json(),
 * comet_results_record_new(), comet_results_stats_json()), calibrate, the
 * model, reports and the CLI read the struct.
 *
 * Depends on util and jansson only (no MPI, BLAS, hwloc, PAPI or kernels),
 * so anything that reads results can link it alone.
 *
 * Everything returns 0 or a negative errno-style code with a one-line
 * message in (err, errlen); nothing here prints or exits.
 */
#ifndef COMET_RESULTS_H
#define COMET_RESULTS_H

#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The record schema tag every line carries. */
#define COMET_RESULTS_SCHEMA "comet.record.v2"
/** The older schema the reader converts (docs/FORMATS.md, "Schema versions"). */
#define COMET_RESULTS_SCHEMA_V1 "comet.record.v1"

/** What a record describes ("kind"). */
typedef enum comet_results_kind {
    COMET_RESULTS_RUN = 0, /**< "run": the first line of a run, with the machine */
    COMET_RESULTS_KERNEL, /**< "kernel": a compound op, sgemm or gms */
    COMET_RESULTS_MEMORY, /**< "memory": read / copy / triad over a working set */
    COMET_RESULTS_VECOP, /**< "vecop": a vector op or a row pass */
    COMET_RESULTS_P2P, /**< "p2p": ping-pong */
    COMET_RESULTS_COLLECTIVE, /**< "collective": an MPI collective */
    COMET_RESULTS_DIST_KERNEL, /**< "dist_kernel": a kernel split over ranks */
    COMET_RESULTS_LLM, /**< "llm": a whole decoder-stack step over ranks (`comet bench llm`) */
    COMET_RESULTS_NKINDS
} comet_results_kind;

/** The name of a kind ("kernel"), or "?" out of range. */
const char *comet_results_kind_name(comet_results_kind k);
/** The kind named s. @return 0 or -EINVAL (unknown name). */
int comet_results_kind_parse(const char *s, comet_results_kind *out);

/** 1 if a number field of a record is present (absent fields are NaN). */
#define comet_results_has(x) (!isnan(x))

/**
 * "shape": the problem of one measurement. Absent dimensions are NaN
 * (comet_results_has()). text is the canonical compact JSON of the object
 * (keys sorted): two records have the same shape when their texts match.
 */
typedef struct comet_results_shape {
    double M, N, K; /**< GEMM-like ops (and gms: K, N) */
    double B, H, Lq, Lk, d, causal; /**< attention */
    double bytes; /**< memory: working set; p2p/collective: per-rank message bytes */
    double count; /**< p2p/collective: elements */
    double n; /**< vecop: elements */
    double width; /**< vecop row passes: row width */
    double rows, segments, pairs, max_seg, mean_seg, skew, nonempty; /**< gms input statistics */
    /** llm: model width, FFN width, layers, tokens per sequence, sequences per
     *  microbatch, decode's KV-cache tokens (B: the batch, H: heads, d: head dim) */
    double hidden, ffn, layers, seq, microbatch, context;
    char *text; /**< canonical JSON of the object (owned) */
} comet_results_shape;

/**
 * "params": tile sizes and knobs. Absent numbers are NaN, absent strings "",
 * absent flags -1. text is the canonical JSON of the whole object.
 */
typedef struct comet_results_params {
    double tile_m, tile_n, tile_q, tile_k; /**< tiles (attention: tile_q, tile_k) */
    double tiles; /**< gms: row tiles over the segments */
    double rounds; /**< gms: interleaved measurement rounds */
    double ukernel; /**< 0 auto, 1 own micro-kernel, 2 OpenBLAS */
    double elements; /**< memory: elements per array */
    double cold_bytes; /**< kernels, variants blas_cold / fused_cold: the span the operands
                            read once a call (B; K and V) cycle through (twice the LLC) */
    double lk_local, n_local; /**< dist_kernel: the local share of the split dimension */
    const char *method; /**< "blocked" | "op_by_op" */
    const char *isa; /**< the kernels' path */
    const char *peer; /**< variant onednn: the peer's version */
    const char *regime; /**< vecop: "cache" | "stream" */
    const char *dtype; /**< memory/vecop: "f64" | "f32" */
    const char *swept; /**< kernels: the tile parameter a sweep moved, "" when none */
    const char *split; /**< dist_kernel: the split dimension */
    const char *device_collectives; /**< collectives: "none" | "percoll" */
    const char *malloc_mode; /**< collectives: "no_trim" | "stock" (key "malloc") */
    int algorithm_forced; /**< collectives: 1 forced, 0 auto, -1 absent */
    const char *phase; /**< llm: "train", "prefill", "decode" */
    const char *recompute; /**< llm: "none", "full" */
    double tp, pp, dp; /**< llm: parallel degrees */
    int seq_parallel; /**< llm: sequence parallelism (1, 0; -1 absent: records before it, none) */
    char *text; /**< canonical JSON of the object (owned) */
} comet_results_params;

/** llm records' "timers": per step, the median over the samples of the mean
 *  over ranks of the seconds each term took (NaN absent). */
typedef struct comet_results_timers {
    double gemm_s; /**< the linear layers' GEMMs */
    double attention_s; /**< attention (forward kernel, backward) */
    double vector_s; /**< memory-bound kernels (LayerNorm, GELU, residuals, head reorders) */
    double tp_s, dp_s, pp_s; /**< tensor-, data-, pipeline-parallel communication (pp_s: the
                                  transfers; before the bubble was timed apart, the bubble too) */
    double bubble_s; /**< pipeline idle: receives' waits for their messages, the final sends'
                          completion and a stage's tail (0 in records before it was timed
                          apart, which have no tp_allreduce_s) */
    double optimizer_s; /**< the Adam update */
    double recompute_s; /**< the forward rerun in the backward */
    double loss_s; /**< the loss and its gradient */
    double tp_allreduce_s, tp_allgather_s, tp_reduce_scatter_s; /**< tp_s by collective kind
                                                                     (NaN in older records) */
} comet_results_timers;

/** "stats": seconds per call (95% nonparametric CI of the median). */
typedef struct comet_results_stats {
    size_t n; /**< samples */
    double median_s, ci_lo_s, ci_hi_s; /**< median and its CI */
    double ci_level; /**< actual coverage (NaN absent) */
    double min_s, max_s, mean_s, p90_s; /**< NaN when absent (min_s is required) */
    double *samples_s; /**< raw samples (owned), nsamples entries */
    size_t nsamples; /**< entries of samples_s */
} comet_results_stats;

/**
 * Others' busy fraction above which a record's samples ran beside other
 * tenants: the idle gate's default threshold (bench --gate-threshold), the
 * line validate counts "busy" records by, and beyond which calibration reads
 * a sample set's best sample instead of its median. The one definition.
 */
#define COMET_RESULTS_BUSY_MAX 0.10

/** "load": what the idle gate saw before the samples. */
typedef struct comet_results_gate {
    double busy_others; /**< others' busy fraction before sampling (NaN unknown) */
    double busy_during; /**< others' busy fraction while sampling (NaN unknown) */
    double waited_s; /**< idle-gate wait (NaN absent) */
    const char *gate; /**< "idle", "timeout", "off", "idle (previous set)" or "" */
} comet_results_gate;

/** One collective call of a dist_kernel record ("collectives" entries). */
typedef struct comet_results_coll_call {
    const char *kind; /**< "allreduce", ... */
    const char *op; /**< the reduction ("max", "sum"; "" when none) */
    double count, bytes, calls; /**< elements, bytes and calls per kernel call */
} comet_results_coll_call;

/** dist_kernel gms/moe records: one rank's load ("rank_loads" entries). */
typedef struct comet_results_rank_load {
    double tokens; /**< its own tokens */
    double sent; /**< routed rows it dispatched */
    double pairs; /**< routed rows its experts received */
    double segments; /**< its experts that received any row */
    double max_seg; /**< rows of its busiest expert */
    double remote_sent; /**< of sent, rows to other ranks */
    double remote_recv; /**< of pairs, rows from other ranks */
} comet_results_rank_load;

/** One cache of a machine (probe description). */
typedef struct comet_results_cache {
    int level; /**< 1, 2, 3 */
    const char *type; /**< "data", "unified", "instruction" */
    double size; /**< bytes (NaN absent) */
    double count; /**< instances (NaN absent) */
    double shared_by; /**< hardware threads sharing one instance (NaN absent) */
    int overridden; /**< the user overrode it (not compared) */
} comet_results_cache;

/** The machine of a run record: its identity and the fields calibrate uses. */
typedef struct comet_results_machine {
    const char *id; /**< the probe's id ("" absent) */
    const char *hostname, *cpu_model; /**< "" absent */
    double packages, cores, pus, numa_nodes; /**< NaN absent */
    double memory_bytes; /**< NaN absent */
    const char *memory_source, *memory_note; /**< where memory_bytes came from ("" absent) */
    const char *mpi, *compiler; /**< MPI library and compiler identity ("" absent) */
    const char *blas_config; /**< "blas": {"config"} */
    double blas_threads; /**< "blas": {"threads"} (NaN absent) */
    const char *papi_version; /**< "papi": {"version"} */
    double mhz, mhz_measured; /**< nominal and measured clock (NaN absent) */
    int fma, avx, avx2, avx512f; /**< ISA flags (0 absent) */
    const char *papi_status; /**< "papi": {"status"} ("not probed" by the collectives launcher) */
    comet_results_cache caches[16]; /**< the first 16 caches */
    size_t ncaches; /**< entries of caches */
    const json_t *json; /**< the whole probe object, for display (borrowed from the record) */
} comet_results_machine;

/** Core-to-core latencies a kernel record holds at most (one per pass, c2c_ns). */
#define COMET_RESULTS_C2C_MAX 8

/**
 * One record (a line of a results file). Strings point into json (owned by
 * the record) and are "" when absent; numbers are NaN when absent; flags are
 * -1 when absent. Release with comet_results_record_free().
 */
typedef struct comet_results_record {
    comet_results_kind kind; /**< kind */
    int converted; /**< 1 if read as comet.record.v1 and converted */
    const char *run_id, *machine_id, *time; /**< identity */
    /* run records */
    const char *bench; /**< the bench that made the run ("kernels", ...) */
    const char *cmdline; /**< the command line */
    const char *comet_version, *comet_commit; /**< "comet" object */
    comet_results_machine machine; /**< "machine" (run records) */
    /* measurements */
    const char *op, *variant; /**< op and variant (algorithm for collectives) */
    const char *dataflow, *workload; /**< gms records */
    comet_results_shape shape; /**< shape */
    int threads, ranks; /**< parallelism (0 when absent) */
    comet_results_params params; /**< params */
    comet_results_stats stats; /**< timing statistics */
    comet_results_gate load; /**< idle gate */
    double reps, passes; /**< calls per sample, interleaved passes (NaN absent) */
    int converged, valid, pinned; /**< flags (-1 absent) */
    double wall_s; /**< wall time spent on the configuration */
    double c2c_ns[COMET_RESULTS_C2C_MAX]; /**< kernels, threads > 1: core-to-core latency
                                               after each pass */
    size_t nc2c; /**< of them present (0: not measured) */
    double flops, bytes, gflops, gbs; /**< analytic work and rates */
    double clock_mhz, median_cycles; /**< measured core clock, median x clock */
    size_t ncounters; /**< PAPI counters per call */
    const char *counter_names[4]; /**< their names */
    double counter_values[4]; /**< their values per call */
    const char *counters_disabled; /**< why counters are absent ("" when present or unsaid) */
    double ns_per_elem, ns_per_row; /**< vecop */
    double algbw_GBs, busbw_GBs, algbw_bytes; /**< collectives (nccl-tests units) */
    double latency_us, min_latency_us, rank_avg_latency_us; /**< collectives */
    const char *timing, *sampling, *link; /**< collectives */
    /** collectives: "written" (every cache line of the send buffer written before
     *  each call) or "unchanged" (ping-pong, loop timing); "" in older records */
    const char *send_buffer;
    int launch, nodes; /**< collectives (-1 absent) */
    double max_abs_err; /**< dist_kernel: largest error against the reference */
    comet_results_coll_call *collectives; /**< dist_kernel (owned), ncollectives entries */
    size_t ncollectives; /**< entries of collectives */
    comet_results_timers timers; /**< llm: per-term step timers */
    double loss; /**< llm train: the last sample's loss (NaN absent) */
    comet_results_rank_load *rank_loads; /**< dist_kernel gms/moe: per rank (owned) */
    size_t nrank_loads; /**< entries of rank_loads */
    const json_t *env; /**< "env": free-form environment (tunables, thread variables, timer);
                            written as read, NULL absent */
    const json_t *settings; /**< run records: the bench's settings, free-form; written as read */
    json_t *json; /**< the record as read, after conversion (owned): for writers that
                       copy a record whole (CSV export); never read by key outside here */
} comet_results_record;

/**
 * Checks one record object against the schema: an object with "schema" ==
 * COMET_RESULTS_SCHEMA and a known "kind"; a run record has run_id and a
 * machine object; a measurement has run_id, op, shape (object), threads or
 * ranks, and stats with n >= 1, finite median_s/ci_lo_s/ci_hi_s/min_s that
 * fit together and samples_s. Message names the first offending field.
 * @return 0 or -EINVAL.
 */
int comet_results_check(const json_t *rec, char *err, size_t errlen);

/**
 * The one reader: converts rec (modified in place) from an older schema,
 * checks it (comet_results_check()) and fills out. out takes a reference to
 * rec. @return 0, or -EINVAL (message in err, no field named twice) or
 * -ENOMEM; on error out is zeroed.
 */
int comet_results_parse(json_t *rec, comet_results_record *out, char *err, size_t errlen);

/**
 * Reads one line of text (no newline needed) as a record:
 * JSON (duplicate keys refused), conversion, check, typed fields.
 * @return as comet_results_parse().
 */
int comet_results_parse_line(
    const char *line, size_t len, comet_results_record *out, char *err, size_t errlen);

/**
 * Sets every field of r to "absent" (numbers NaN, strings "", flags -1,
 * counts 0): the start of a record filled by hand (a writer, a test) before
 * comet_results_to_json(). Owns nothing.
 */
void comet_results_record_init(comet_results_record *r, comet_results_kind kind);

/** Releases what a record owns (safe on a zeroed record). */
void comet_results_record_free(comet_results_record *r);

/**
 * The writer's side of the field table: the record object of r, every
 * present field from the struct. A record that was read (r->json set) keeps
 * the order of its fields and its nulls, so a record written, read and
 * written again is the same bytes; fields the table does not know are not
 * written. comet_results_parse() of the result gives back r's fields.
 * @return a new object, or NULL (out of memory).
 */
json_t *comet_results_to_json(const comet_results_record *r);

/**
 * A record set: every record of one or more results files, in file order.
 * Free with comet_results_set_free().
 */
typedef struct comet_results_set {
    comet_results_record *recs; /**< records */
    size_t n; /**< records */
    size_t cap; /**< allocated */
} comet_results_set;

/** Releases a set (safe on a zeroed set). */
void comet_results_set_free(comet_results_set *s);

/** Outcome details of loading a results file. */
typedef struct comet_results_load_info {
    size_t lines; /**< lines read (including blank ones) */
    size_t torn_line; /**< 1-based line of a torn last line that was skipped, or 0 */
    size_t runs; /**< "run" records seen */
    size_t converted; /**< records converted from an older schema (COMET_RESULTS_SCHEMA_V1) */
    size_t converted_line; /**< line of the first converted record, or 0 */
    size_t foreign_line; /**< line of the first run record from another machine accepted */
    size_t skipped; /**< measurements skipped for absurd values */
    size_t skipped_line; /**< line of the first one, or 0 */
    char skipped_why[160]; /**< what the first one held ("gbs = -3 is not a rate") */
} comet_results_load_info;

/** How a results file is checked against this machine. */
typedef struct comet_results_load_opts {
    const json_t *machine; /**< this machine (the probe's object); NULL: no check */
    int foreign_ok; /**< load another machine's results anyway, with a warning */
} comet_results_load_opts;

/**
 * Loads every record of a JSON Lines results file into set (appending),
 * validating each line through comet_results_parse(). A torn last line (no
 * final newline and not a valid record) is skipped with a warning in err
 * ("file:line: torn last line skipped ..."): the call still returns 0, so
 * check err[0] for a warning. A measurement holding an absurd value (a
 * negative rate, FLOP or byte count, or clock) is skipped, counted in info
 * and named in the warning. Any other bad line is an error naming
 * file:line. With o->machine set, every run record's machine is compared
 * with it (comet_results_machine_diff()): a difference is an error
 * "file:line: measured on another machine: ..." unless o->foreign_ok.
 * o and info may be NULL. On error set is as it was.
 * @return 0 or a negative errno.
 */
int comet_results_load(const char *path, const comet_results_load_opts *o, comet_results_set *set,
    comet_results_load_info *info, char *err, size_t errlen);

/**
 * Loads every results file of a folder (FOLDER/results/ *.jsonl, or
 * FOLDER/ *.jsonl when it has no results/ subfolder), or a single file,
 * sorted by name, appending to set. Each file's warnings are joined in err
 * ("; "). per_file (may be NULL) is called after each file with its path
 * and the records it added.
 * @return 0 or the first file's error (set keeps the earlier files).
 */
int comet_results_load_path(const char *path, const comet_results_load_opts *o,
    comet_results_set *set,
    int (*per_file)(void *ctx, const char *file, size_t added, const comet_results_load_info *info),
    void *ctx, char *err, size_t errlen);

/**
 * Loads a results file as validated, converted JSON objects (the raw level
 * under comet_results_load(): for tools that copy records whole).
 * @return as comet_results_load(); *recs (free with
 *         comet_results_json_free()) holds *n objects.
 */
int comet_results_load_json(const char *path, const comet_results_load_opts *o, json_t ***recs,
    size_t *n, comet_results_load_info *info, char *err, size_t errlen);

/** Frees what comet_results_load_json() returned. */
void comet_results_json_free(json_t **recs, size_t n);

/** The typed machine of a probe object (strings borrowed from m). */
void comet_results_machine_from_json(const json_t *m, comet_results_machine *out);

/**
 * Compares two machines by their stable identity: CPU model, packages,
 * cores, PUs, memory (within 2%) and the size of each cache level
 * (overridden caches are skipped); the hostname is not compared. Fields
 * missing on either side are not compared; if none is left, the probe ids
 * must match. what (may be NULL) lists the differences, "cores 64 (this
 * machine: 2)". @return 0 same machine, > 0 number of differences.
 */
int comet_results_machine_diff(const json_t *here, const json_t *there, char *what, size_t whatlen);

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

/**
 * A new measurement record with schema, kind, run_id, machine_id, time, op,
 * variant (may be NULL), shape (stolen; NULL -> {}) and threads (> 0 to set).
 */
json_t *comet_results_record_new(const char *run_id, const char *machine_id, const char *kind,
    const char *op, const char *variant, json_t *shape, int threads);

/** The "stats" object of s (samples_s from s->samples_s). */
json_t *comet_results_stats_json(const comet_results_stats *s);

/** The "load" object of l (NaN busy fractions are written as null). */
json_t *comet_results_gate_json(const comet_results_gate *l);

/** An append-only JSON Lines results file. */
typedef struct comet_results_writer {
    int fd; /**< file descriptor (O_APPEND) */
    char *path; /**< path (owned) */
    size_t lines; /**< records appended through this writer */
    size_t repaired; /**< bytes of a torn last line dropped at open (0 normally) */
} comet_results_writer;

/**
 * Opens (creating directories as needed) path for appending records. A torn
 * last line (an earlier run killed mid-write) is cut off; w->repaired says
 * how many bytes were dropped. @return 0 or a negative errno.
 */
int comet_results_writer_open(comet_results_writer *w, const char *path, char *err, size_t errlen);

/**
 * Reads rec through comet_results_parse() (so nothing is written that the
 * reader would refuse) and writes what comet_results_to_json() makes of the
 * typed record: read and write share one field table. Appends it as one
 * compact line with a single write(), and fsyncs, so a crash leaves either
 * the whole line or a torn tail the reader recognises; a failed write is cut
 * back. @return 0, -EINVAL (invalid record) or -EIO/-errno.
 */
int comet_results_writer_append(
    comet_results_writer *w, const json_t *rec, char *err, size_t errlen);

/** Closes the writer (safe on a zeroed or closed writer). @return 0 or -EIO. */
int comet_results_writer_close(comet_results_writer *w, char *err, size_t errlen);

/**
 * Writes the measurement records (run records are skipped) as CSV, one row
 * per record and one column per field, the union over the records
 * (docs/FORMATS.md). Written atomically. @return 0 or a negative errno.
 */
int comet_results_export_csv(
    const comet_results_record *recs, size_t n, const char *path, char *err, size_t errlen);

/**
 * A human-readable shape ("M=1024 N=4096 K=64", "BH=2 Lq=256 Lk=256 d=64",
 * "4096 B", "n=1024"), as the report and the CLI print it.
 */
void comet_results_shape_str(const comet_results_shape *s, char *buf, size_t len);

/**
 * Rows of the fused kernels' GEMM micro-tile on the ISA a vecop record's
 * variant names ("avx512", "avx2", "portable"), and of its edge tile (*edge,
 * may be NULL): what calibrate reads from the records without linking the
 * kernels (a test holds these equal to comet_kernels.h's tile rows).
 */
int comet_results_micro_tile_rows(const char *isa, int *edge);

#ifdef __cplusplus
}
#endif

#endif /* COMET_RESULTS_H */
