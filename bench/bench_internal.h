/* Internal to comet_bench: the session every bench driver runs inside
 * (results file, progress, pinning, interruption) and the vector ops the
 * memory bench times. Not a public header. */
#ifndef COMET_BENCH_INTERNAL_H
#define COMET_BENCH_INTERNAL_H

#include "comet_bench.h"
#include "comet_util.h"

/** Vector ops timed by the memory bench (order matches memory.c). */
enum bench_vop {
    BENCH_VEXP,
    BENCH_VMAX,
    BENCH_VSUM,
    BENCH_VSUB,
    BENCH_VDIV,
    BENCH_VMUL,
    BENCH_VSQRT
};

/**
 * y = f(x) elementwise (exp, sub/div/mul by s, sqrt) or *red = max/sum of x,
 * float32, AVX2 when the CPU has it. @return 0 or -EINVAL.
 */
int bench_vecop(int op, const float *x, float *y, size_t n, float s, float *red);
/** "avx2" or "scalar": which implementation bench_vecop() uses here. */
const char *bench_vecop_impl(void);

/** State of one bench run. */
typedef struct bench_session {
    const comet_bench_opts *o; /* options (borrowed) */
    comet_bench_summary *sum; /* filled as we go (borrowed) */
    comet_bench_run run; /* run id, machine */
    comet_results_writer w; /* results file */
    comet_bench_counters counters; /* PAPI, usually disabled on VMs */
    comet_bench_config cfg; /* o->cfg with counters attached */
    comet_util_progress prog; /* stderr progress */
    int progress_on; /* prog started */
    int pinned; /* last pin request succeeded */
    int pin_warned; /* a pin failure was reported once */
    int stop; /* interrupted: stop after the current set */
    uint64_t llc, l2, l1; /* cache sizes from the machine description */
    double t0; /* start time */
} bench_session;

/**
 * gms measurement race: of nc configurations, those still active (active[k]
 * nonzero, figs[k] their nround[k] round figures) whose fastest round exceeds
 * margin x the best active median are retired (active[k] = 0).
 * @return configurations still active, or a negative errno (nc > 64, a
 *         figure not finite, margin < 1).
 */
int bench_gms_race(
    const double *const *figs, const int *nround, int *active, int nc, double margin);

/** Opens <out>/results/<kind>-<run_id>.jsonl and writes the run record. */
int bench_session_open(bench_session *s, const comet_bench_opts *o, const char *kind,
    json_t *machine, comet_bench_summary *sum, char *err, size_t errlen);
/** Appends rec (adds "pinned"), counting it and whether it was valid. */
int bench_session_write(bench_session *s, json_t *rec, int valid, char *err, size_t errlen);
/** Starts the progress line. */
void bench_session_progress(bench_session *s, const char *label, size_t total);
/** One step done; notices SIGINT/SIGTERM (sets s->stop). */
void bench_session_step(bench_session *s, const char *note);
/** Pins for T threads when asked to (failure is reported once, then ignored). */
void bench_session_pin(bench_session *s, int T);
/** Closes the file, exports CSV if asked, fills the summary (takes highlights). */
int bench_session_close(bench_session *s, json_t *highlights, char *err, size_t errlen);
/** Closes after an error, keeping what was written. */
void bench_session_abort(bench_session *s);

/* ------------------------------------------------------------------ */
/* Shape sets (configs/shapes/NAME.yaml)                                 */
/* ------------------------------------------------------------------ */

#define BENCH_MAX_LIST 16

/** One problem shape: GEMM-like {M,N,K} or attention {B,H,Lq,Lk,d,causal}. */
typedef struct bench_shape {
    int attn; /* 1 for attention shapes */
    long M, N, K; /* GEMM-like */
    long B, H, Lq, Lk, d; /* attention */
    int causal; /* attention */
    int cold; /* operands cycled through twice the LLC: read from DRAM every call */
    int line; /* source line */
} bench_shape;

/** An op entry of a shape set. */
typedef struct bench_opset {
    char op[32];
    size_t nvariants;
    char variants[4][24];
    size_t nshapes;
    bench_shape *shapes;
    int line;
} bench_opset;

/** A tile sweep of a fused variant. */
typedef struct bench_tilesweep {
    char op[32];
    char param[32];
    size_t nvalues;
    long values[BENCH_MAX_LIST];
    int line;
} bench_tilesweep;

/** A parsed shape set. Thread count 0 means "all cores". */
typedef struct bench_shapeset {
    size_t nthreads;
    int threads[BENCH_MAX_LIST];
    size_t nops;
    bench_opset ops[8];
    size_t nsweeps;
    bench_tilesweep sweeps[16];
    int have_sgemm;
    size_t sg_nthreads;
    int sg_threads[BENCH_MAX_LIST];
    long sg_min, sg_max;
    long sg_small_m[4]; /* M values below sg_min (plain sgemm only) */
    int sg_n_small_m;
    int sg_points;
    int sg_fused; /* also the fused kernels' GEMM (gemm_only) on the grid */
    double sg_max_gflop; /* grid points above 2MNK = this x 1e9 are skipped (0: none) */
    long sg_fused_max_k; /* the fused GEMM's grid stops at this K (0: the grid's max) */
    size_t sg_fused_nthreads; /* thread counts of the fused GEMM's grid (default sg_threads) */
    int sg_fused_threads[BENCH_MAX_LIST];
    int sg_small_m_cold; /* the small rows again with B cold (variant blas_cold) */
    size_t ndecode; /* decode_attention: one-query fused attention, K and V cold */
    bench_shape decode[4];
} bench_shapeset;

/**
 * Loads a shape set; errors name file:line. ops_known (NULL-terminated)
 * lists the op names accepted.
 */
int bench_shapeset_load(
    const char *path, const char *const *ops_known, bench_shapeset *set, char *err, size_t errlen);
/** Frees the shapes of a set. */
void bench_shapeset_free(bench_shapeset *set);

/* Buffers laid out the same in every run: one mapping aligned to 2 MiB and
 * backed by huge pages where the kernel grants them (THP "madvise" or
 * "always"), each buffer at a page boundary plus its own 256-byte stagger.
 * The virtual layout and, inside a huge page, the physical one repeat from
 * run to run, so the cache sets the buffers share do too. Separate mallocs
 * put them wherever the heap had room: two quick kernel runs differed by up
 * to 16% on one shape while each run's CI was within 2%. */
typedef struct bench_arena {
    void *map; /* the whole mapping (NULL when none) */
    size_t len;
} bench_arena;

/* Maps an arena and carves n buffers of sizes[i] bytes (out[i] NULL for a
 * size 0). Returns 0, -ENOMEM or -EOVERFLOW. */
int bench_arena_carve(bench_arena *ar, const size_t *sizes, void *out[], int n);
/* Unmaps the arena (a zeroed or freed one is a no-op). */
void bench_arena_free(bench_arena *ar);

#endif
