/**
 * @file comet_kernels.h
 * @brief Fused and unfused compound kernels: GEMM-Softmax, GEMM-LayerNorm and
 *        self-attention, local (OpenMP threads) and distributed over MPI.
 *
 * Row-major float32 throughout. Every function returns 0 or a negative errno
 * code (-EINVAL bad argument, -EOVERFLOW size product overflows, -ENOMEM
 * workspace too small) and never exits or prints. The library depends only on
 * OpenBLAS, MPI, OpenMP and libm.
 *
 * Variants:
 *  - COMET_KERNELS_UNFUSED: the whole GEMM through OpenBLAS (threaded) into a
 *    full intermediate in the workspace, then the non-GEMM op as a separate
 *    vectorized pass over it (the "framework" baseline).
 *  - COMET_KERNELS_UNFUSED_SAME_GEMM: the fused variant's GEMM (own
 *    micro-kernel, B packed once, the same row blocks and threads; OpenBLAS
 *    per block where the fused one uses it) into a full intermediate, then
 *    the same separate passes: comparing FUSED with it measures what fusion
 *    buys, apart from which GEMM engine is faster.
 *  - COMET_KERNELS_FUSED: row blocks of tile_m rows; each block's GEMM goes
 *    straight into the output rows (a cache-resident tile) and the epilogue
 *    runs while the tile is hot; only the output is written. Small K uses an
 *    own AVX2/FMA register-blocked micro-kernel (B packed once), larger K
 *    OpenBLAS single-threaded per block. Attention: FlashAttention-2 style
 *    online softmax over KV tiles, 1/l applied at the end.
 *
 * Numerics: softmax subtracts the row max; a row whose max is -inf yields
 * zeros; a NaN anywhere in a row yields a NaN row; LayerNorm is two-pass
 * (mean, then sum of squared deviations) on the cache-resident row.
 */
#ifndef COMET_KERNELS_H
#define COMET_KERNELS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Compound operations. */
typedef enum comet_kernels_op {
    COMET_KERNELS_GEMM_SOFTMAX = 0, /**< Y = softmax_rows(scale * A B) */
    COMET_KERNELS_GEMM_LAYERNORM = 1, /**< Y = LayerNorm_rows(A B) * gamma + beta */
    COMET_KERNELS_ATTENTION = 2 /**< O = softmax(scale * Q K^T [+ mask]) V */
} comet_kernels_op;

/** Implementation variants. */
typedef enum comet_kernels_variant {
    COMET_KERNELS_UNFUSED = 0, /**< BLAS GEMM into a full intermediate, then passes */
    COMET_KERNELS_FUSED = 1, /**< row-block tiles, epilogue while hot */
    /** the fused variant's GEMM engine (same packing, blocking, threads) into
     *  a full intermediate, then the same passes as COMET_KERNELS_UNFUSED:
     *  fused against this one is the fusion effect alone */
    COMET_KERNELS_UNFUSED_SAME_GEMM = 2
} comet_kernels_variant;

/** Number of variants (for loops over them). */
#define COMET_KERNELS_NVARIANTS 3

/** Problem shape. GEMM ops use M, N, K; attention uses batch..d. */
typedef struct comet_kernels_shape {
    size_t M, N, K; /**< A is MxK, B is KxN, Y is MxN */
    size_t batch, heads; /**< attention: B x H independent heads */
    size_t lq, lk, d; /**< attention: query/key lengths, head dim */
} comet_kernels_shape;

/** Rows of the fused GEMM's register tile (own micro-kernel): the AVX2 and
 *  portable tile, also the AVX-512 path's edge tile for a block's last rows. */
#define COMET_KERNELS_TILE_ROWS 6
/** Rows of the AVX-512 register tile. A row block of m rows computes whole
 *  tiles plus one edge tile, so m = 8 costs as much as 12 (see the model's
 *  gemm.fused_micro_rows). */
#define COMET_KERNELS_TILE_ROWS_AVX512 12

/** Knobs. Zero fields take defaults (see comet_kernels_default_params()). */
typedef struct comet_kernels_params {
    int threads; /**< threads the kernel may use (>= 1) */
    size_t tile_m; /**< fused: rows per block (attention: query rows per block) */
    size_t tile_n; /**< attention fused: keys per KV tile */
    int ukernel; /**< fused GEMM engine: 0 auto, 1 own AVX2 micro-kernel, 2 OpenBLAS */
    float scale; /**< softmax/attention scale (0 means 1, or 1/sqrt(d) for attention) */
    float eps; /**< LayerNorm epsilon (> 0; 0 means 1e-5) */
    int causal; /**< attention: mask keys j > i (aligned at the end when lk > lq) */
    /** Measurement only: fused GEMM ops skip the epilogue, so a benchmark can
     *  time the GEMM work inside the fused kernel alone. 1: each row block's
     *  product lands in the L2-resident tile exactly as in the fused kernel and
     *  Y is not written; 2: the product (scaled A B) is written to Y, to check it. */
    int gemm_only;
} comet_kernels_params;

/**
 * Fills params with defaults derived from the cache sizes (bytes; 0 if
 * unknown): a fused tile of tile_m rows of N floats fits half of L2.
 */
void comet_kernels_default_params(comet_kernels_op op, const comet_kernels_shape *shape, size_t l1,
    size_t l2, size_t l3, int threads, comet_kernels_params *p);

/**
 * Bytes of workspace op/variant needs (so benchmarks allocate outside the
 * timed region). @return 0 or a negative errno (bad shape, overflow).
 */
int comet_kernels_workspace_size(comet_kernels_op op, comet_kernels_variant v,
    const comet_kernels_shape *shape, const comet_kernels_params *p, size_t *bytes);

/**
 * GEMM-Softmax: Y = softmax_rows(scale * A B). ws must hold
 * comet_kernels_workspace_size() bytes (NULL allowed when that is 0).
 */
int comet_kernels_gemm_softmax(comet_kernels_variant v, size_t M, size_t N, size_t K,
    const float *A, const float *B, float *Y, const comet_kernels_params *p, void *ws,
    size_t ws_bytes);

/** GEMM-LayerNorm: Y = (AB - mean) / sqrt(var + eps) * gamma + beta, per row. */
int comet_kernels_gemm_layernorm(comet_kernels_variant v, size_t M, size_t N, size_t K,
    const float *A, const float *B, const float *gamma, const float *beta, float *Y,
    const comet_kernels_params *p, void *ws, size_t ws_bytes);

/**
 * Self-attention over batch*heads heads: Q is [bh][lq][d], K and V are
 * [bh][lk][d], O is [bh][lq][d].
 */
int comet_kernels_attention(comet_kernels_variant v, const comet_kernels_shape *shape,
    const float *Q, const float *K, const float *V, float *O, const comet_kernels_params *p,
    void *ws, size_t ws_bytes);

/** Analytic floating-point operations of one call (GEMM 2MNK + epilogue). */
double comet_kernels_flops(comet_kernels_op op, const comet_kernels_shape *shape);
/**
 * Analytic compulsory DRAM bytes of one call of variant v: inputs read once,
 * output written once, plus (unfused) the intermediate written and read back.
 */
double comet_kernels_bytes(
    comet_kernels_op op, comet_kernels_variant v, const comet_kernels_shape *shape);

/**
 * 1 when a GEMM row op of this shape and params runs op by op in cache
 * rather than in row blocks (fused and unfused_same_gemm on auto settings,
 * ukernel 0 and not gemm_only, with the product at most 512 KiB per
 * thread: one BLAS GEMM, then the pass), else 0. Attention and the BLAS
 * baseline: 0. Records say which method ran, so the model predicts it.
 */
int comet_kernels_op_by_op(comet_kernels_op op, comet_kernels_variant v,
    const comet_kernels_shape *shape, const comet_kernels_params *p);

/** Short names: "gemm_softmax", ... and "unfused", "fused", "unfused_same_gemm". */
const char *comet_kernels_op_name(comet_kernels_op op);
/** Variant name. */
const char *comet_kernels_variant_name(comet_kernels_variant v);
/** Parses an op name; @return 0 or -EINVAL. */
int comet_kernels_op_parse(const char *name, comet_kernels_op *op);
/** Parses a variant name; @return 0 or -EINVAL. */
int comet_kernels_variant_parse(const char *name, comet_kernels_variant *v);

/**
 * Vectorized y[i] = exp(x[i]) (in place allowed). AVX2+FMA when the CPU has
 * it, else libm. Max relative error: see comet_kernels_exp_max_rel_error().
 */
void comet_kernels_vexp(const float *x, float *y, size_t n);

/**
 * Vectorized y[i] = exp(x[i] - shift) for x[i] <= shift (in place allowed):
 * softmax's exponential after its row max, through the same exp the row
 * passes and fused epilogues run (AVX-512 or AVX2+FMA when the CPU has it,
 * else libm). x[i] > shift gives 1 (the argument is clamped to 0); NaN
 * gives NaN. Error against exp(x - shift) of the exact difference: the
 * difference is not rounded to a float first (the vector paths keep its
 * rounding error by a two-sum and add it after the range reduction's exact
 * step; the scalar path subtracts in double), so the bound is the exp's own
 * over the whole range: comet_kernels_exp_shifted_max_rel_error().
 */
void comet_kernels_vexp_shifted(const float *x, float *y, size_t n, float shift);
/** The stated bound on the vectorized exp's relative error (normal results),
 *  for the float argument as given. */
double comet_kernels_exp_max_rel_error(void);
/** The bound on comet_kernels_vexp_shifted()'s relative error against
 *  exp(x - shift) computed exactly, at a difference of magnitude dist:
 *  the exp's own bound plus the two-sum's residue, dist x 2^-48. */
double comet_kernels_exp_shifted_max_rel_error(double dist);
/** Instruction-set paths of the kernels (BLIS-style: one portable frame,
 *  per-ISA kernels chosen at run time). Each level includes the one below. */
typedef enum comet_kernels_isa {
    COMET_KERNELS_ISA_PORTABLE = 0, /**< plain C (and OpenBLAS for the GEMMs) */
    COMET_KERNELS_ISA_AVX2 = 1, /**< AVX2 + FMA: 6x16 micro-kernel, 8-lane passes */
    COMET_KERNELS_ISA_AVX512 = 2 /**< AVX-512F: 12x32 micro-kernel, 16-lane passes */
} comet_kernels_isa;

/** The best path this CPU runs. */
comet_kernels_isa comet_kernels_isa_detected(void);
/**
 * The path in use: the detected one, or lower when asked, by
 * comet_kernels_set_isa() or, at first use, by the environment variable
 * COMET_KERNELS_ISA = portable | avx2 | avx512 (a value the CPU cannot run,
 * or an unknown one, leaves the detected path; COMET_KERNELS_NO_AVX512=1
 * is the older spelling of avx2).
 */
comet_kernels_isa comet_kernels_isa_active(void);
/** Selects a path (for tests and comparisons): 0, or -ENOTSUP when the CPU
 *  cannot run it. Not thread-safe against running kernels. */
int comet_kernels_set_isa(comet_kernels_isa isa);
/** "portable", "avx2", "avx512". */
const char *comet_kernels_isa_name(comet_kernels_isa isa);
/** Parses those names: 0 or -EINVAL. */
int comet_kernels_isa_parse(const char *name, comet_kernels_isa *isa);
/** 1 if the AVX2+FMA paths are in use (active ISA avx2 or avx512), else 0. */
int comet_kernels_have_avx2(void);
/** 1 if the AVX-512 paths are in use, else 0. */
int comet_kernels_have_avx512(void);
/** on: the portable path (comet_kernels_set_isa(PORTABLE)); off: back to
 *  the path chosen at first use. */
void comet_kernels_force_portable(int on);

/**
 * Row passes used by the unfused variants (also benchmarked on their own).
 * Each row is read from memory once and its output written once (softmax
 * keeps the exps in per-thread scratch rows it allocates; if that fails it
 * uses Y). Outputs of 16 MiB or more are written with non-temporal stores,
 * so they are not left in the caches. X == Y (in place, same ld) is allowed.
 */
int comet_kernels_softmax_rows(
    size_t M, size_t N, const float *X, size_t ldx, float *Y, size_t ldy, float scale, int threads);
/** LayerNorm over rows of X into Y (two-pass). */
int comet_kernels_layernorm_rows(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, const float *gamma, const float *beta, float eps, int threads);

/** How a row pass writes its output. */
typedef enum comet_kernels_stores {
    COMET_KERNELS_STORES_AUTO = 0, /**< non-temporal when the output is 16 MiB or more */
    COMET_KERNELS_STORES_CACHED = 1, /**< ordinary stores (the lines stay in the caches) */
    COMET_KERNELS_STORES_STREAM = 2, /**< non-temporal stores whatever the size */
} comet_kernels_stores;

/**
 * The row passes with the store policy stated: the benchmark of the fused
 * kernels' epilogue (rows from an L2-resident tile, results streamed out)
 * calls them on one tile at a time, which the size rule would keep cached.
 * Softmax streams only when its scratch rows could be allocated.
 * @return 0, or -EINVAL for bad arguments or an unknown policy.
 */
int comet_kernels_softmax_rows_ex(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, float scale, int threads, comet_kernels_stores stores);
/** LayerNorm rows with the store policy stated (see comet_kernels_softmax_rows_ex). */
int comet_kernels_layernorm_rows_ex(size_t M, size_t N, const float *X, size_t ldx, float *Y,
    size_t ldy, const float *gamma, const float *beta, float eps, int threads,
    comet_kernels_stores stores);

/* ------------------------------------------------------------------ */
/* Distributed variants (ranks are COMET's spatial clusters)           */
/* ------------------------------------------------------------------ */

/** Maximum distinct collectives recorded per call. */
#define COMET_KERNELS_MAX_COLL 8

/** One kind of collective a distributed call issued. */
typedef struct comet_kernels_coll {
    char kind[16]; /**< "allreduce", "allgather", "allgatherv" */
    char op[8]; /**< reduction: "max", "sum", or "" */
    size_t count; /**< elements per call (per rank contribution) */
    size_t bytes; /**< bytes per call (per rank contribution) */
    int calls; /**< how many calls of this kind/size */
} comet_kernels_coll;

/** The collectives of one distributed call. */
typedef struct comet_kernels_coll_log {
    int n; /**< entries used */
    comet_kernels_coll e[COMET_KERNELS_MAX_COLL]; /**< entries */
} comet_kernels_coll_log;

/**
 * The fused distributed LayerNorm's local passes over a rank's M x n slice
 * Y (row-major), as comet_kernels_dist_gemm_layernorm runs them between its
 * all-reduces: row sums into sum[M]; the sums of squared deviations from
 * mean[i] (in double, one dependent add per element) into sq[M]; Y
 * normalised in place, y = (y - mean[i]) x rstd[i] x gamma + beta (in
 * double; gamma, beta may be NULL). The bench times them on one slice
 * (vecop dist_layernorm_row), the model charges what it measured.
 */
void comet_kernels_dist_ln_sums(size_t M, size_t n, const float *Y, double *sum);
/** See comet_kernels_dist_ln_sums. */
void comet_kernels_dist_ln_sqdev(
    size_t M, size_t n, const float *Y, const double *mean, double *sq);
/** See comet_kernels_dist_ln_sums. */
void comet_kernels_dist_ln_apply(size_t M, size_t n, float *Y, const double *mean,
    const double *rstd, const float *gamma, const float *beta);

/**
 * Distributed GEMM-Softmax with N split across the ranks of comm: each rank
 * holds A (MxK, replicated), its column slice B_local (K x n_local) and
 * writes Y_local (M x n_local). Slices may differ in width and a rank may
 * hold none (n_local 0; B_local and Y_local may then be NULL): it still
 * takes part in the collectives. Fused: row statistics merged with two
 * all-reduces of M floats (max, then rescaled sums). Unfused: the slice
 * widths are all-gathered (one integer each), then the full intermediate
 * (MPI_Allgatherv). log (may be NULL) receives the collectives issued.
 * Every rank must pass the same M, K and variant; an argument error on one
 * rank only is returned there while the others wait in the collective.
 */
int comet_kernels_dist_gemm_softmax(MPI_Comm comm, comet_kernels_variant v, size_t M,
    size_t n_local, size_t K, const float *A, const float *B_local, float *Y_local,
    const comet_kernels_params *p, comet_kernels_coll_log *log);

/**
 * Distributed GEMM-LayerNorm, N split as for GEMM-Softmax: all-reduce of
 * the row sums and the slice width (M + 1 doubles: the row width N is the
 * sum of the widths), then of the sums of squared deviations from the
 * global mean (two-pass, in double). gamma_local and beta_local are the
 * rank's slices.
 */
int comet_kernels_dist_gemm_layernorm(MPI_Comm comm, comet_kernels_variant v, size_t M,
    size_t n_local, size_t K, const float *A, const float *B_local, const float *gamma_local,
    const float *beta_local, float *Y_local, const comet_kernels_params *p,
    comet_kernels_coll_log *log);

/**
 * Distributed attention with the KV sequence split: each rank holds Q (all
 * queries) and its lk_local keys/values; (max, sum, partial O) are merged
 * with all-reduces; every rank ends with the full O. shape->lk is the
 * per-rank lk_local, which may differ between ranks or be 0 (K_local and
 * V_local may then be NULL). Causal masking is not supported here
 * (-ENOTSUP).
 */
int comet_kernels_dist_attention(MPI_Comm comm, comet_kernels_variant v,
    const comet_kernels_shape *shape, const float *Q, const float *K_local, const float *V_local,
    float *O, const comet_kernels_params *p, comet_kernels_coll_log *log);

/* ------------------------------------------------------------------ */
/* Gather-GEMM-scatter (Efficient-GMS): out[dst] += in[src] x W_seg     */
/* ------------------------------------------------------------------ */

/** The four gather-GEMM-scatter dataflows. */
typedef enum comet_kernels_gms_dataflow {
    COMET_KERNELS_GMS_UNFUSED = 1, /**< gather to a buffer, GEMM to a buffer, scatter-add */
    COMET_KERNELS_GMS_GATHER_FUSED
    = 2, /**< gather per tile into the GEMM's A buffer; scatter separate */
    COMET_KERNELS_GMS_SCATTER_FUSED = 3, /**< gather separate; scatter-add in the GEMM epilogue */
    COMET_KERNELS_GMS_FUSED = 4 /**< gather, GEMM and scatter-add per tile */
} comet_kernels_gms_dataflow;

/**
 * One gather-GEMM-scatter problem. Segment s owns pairs seg_ptr[s] ..
 * seg_ptr[s+1]-1 and weight W + s*K*N (K x N, row-major); pair i adds
 * in[src[i]] (a K-row of in, rows_in x K) times W_s into out[dst[i]] (an
 * N-row of out, rows_out x N). out is accumulated into, not cleared.
 */
typedef struct comet_kernels_gms_input {
    size_t rows_in, rows_out, K, N, nseg;
    const size_t *seg_ptr; /**< nseg+1 nondecreasing offsets, seg_ptr[0] = 0 */
    const uint32_t *src, *dst; /**< seg_ptr[nseg] pairs */
    const float *W; /**< nseg weight matrices */
    const float *in; /**< rows_in x K */
    float *out; /**< rows_out x N */
} comet_kernels_gms_input;

/** Knobs (zero fields take defaults). */
typedef struct comet_kernels_gms_params {
    int threads; /**< threads (>= 1; 0 means 1) */
    size_t tile_m; /**< pairs per fused tile (dataflows 2-4; 0 means 48) */
} comet_kernels_gms_params;

/**
 * Bytes of workspace a call needs. @return 0, -EINVAL (bad input: an index
 * out of range, decreasing seg_ptr, bad dataflow) or -EOVERFLOW.
 */
int comet_kernels_gms_workspace_size(const comet_kernels_gms_input *in,
    comet_kernels_gms_dataflow df, const comet_kernels_gms_params *p, size_t *bytes);

/**
 * out[dst] += in[src] x W_seg for every pair, in dataflow df. Threads own
 * disjoint destination rows of out (blocks of comet_kernels_gms_own_rows
 * rows, dealt round-robin) and each takes the pairs whose destination it owns, in input
 * order, so the result is deterministic (bitwise identical for any thread
 * count), duplicate destinations are summed in pair order, and each pair is
 * gathered and scattered by one thread.
 * @return 0, -EINVAL, -EOVERFLOW, -ENOMEM (ws smaller than needed).
 */
int comet_kernels_gms(comet_kernels_gms_dataflow df, const comet_kernels_gms_input *in,
    const comet_kernels_gms_params *p, void *ws, size_t ws_bytes);

/**
 * Rows of out per ownership block of comet_kernels_gms with threads threads
 * (a power of two): blocks of 4-64 KiB of out, at least 8 a thread where out
 * is large enough (prefetch across an edge between two owners' blocks costs
 * the scatter; fewer, larger blocks balance worse). @return 0 when N is 0.
 */
size_t comet_kernels_gms_own_rows(size_t rows_out, size_t N, int threads);

/** 2 * pairs * K * N. */
double comet_kernels_gms_flops(const comet_kernels_gms_input *in);
/** "unfused", "gather_fused", "scatter_fused", "fused". */
const char *comet_kernels_gms_dataflow_name(comet_kernels_gms_dataflow d);
/** Parses a dataflow name; @return 0 or -EINVAL. */
int comet_kernels_gms_dataflow_parse(const char *name, comet_kernels_gms_dataflow *d);

/** Generated workloads (statistics documented in gms_inputs.c's header):
 *  rgcn (8*rows edges over nseg relations, share of relation r ~ (r+1)^-skew),
 *  spconv (27 offsets over rows voxels in a cube of density 0.5/(1+4 skew)),
 *  moe (rows tokens top-2 over nseg experts, popularity ~ (e+1)^-skew). */
typedef enum comet_kernels_gms_workload {
    COMET_KERNELS_GMS_RGCN = 0,
    COMET_KERNELS_GMS_SPCONV = 1,
    COMET_KERNELS_GMS_MOE = 2
} comet_kernels_gms_workload;

/** Index part of a problem (owned arrays; free with comet_kernels_gms_problem_free). */
typedef struct comet_kernels_gms_problem {
    size_t rows_in, rows_out, nseg;
    size_t *seg_ptr; /**< nseg+1 offsets */
    uint32_t *src, *dst; /**< grouped by segment */
} comet_kernels_gms_problem;

/** Input statistics the model and the records use. */
typedef struct comet_kernels_gms_stats {
    size_t rows, segments, nonempty, pairs, max_seg;
    double mean_seg;
} comet_kernels_gms_stats;

/** Generates workload w deterministically from seed. spconv ignores nseg
 *  (27). @return 0, -EINVAL (rows 0 or too large, skew outside [0,16]), -ENOMEM. */
int comet_kernels_gms_generate(comet_kernels_gms_workload w, size_t rows, size_t nseg, double skew,
    unsigned long long seed, comet_kernels_gms_problem *pr);
/** Reads a text input: a header line 'gms ROWS_IN ROWS_OUT SEGMENTS', then
 *  'SEGMENT SRC DST' per line ('#' comments). Errors name file:line in err.
 *  @return 0 or a negative errno. */
int comet_kernels_gms_read(
    const char *path, comet_kernels_gms_problem *pr, char *err, size_t errlen);
/** Frees a problem's arrays (NULL-safe). */
void comet_kernels_gms_problem_free(comet_kernels_gms_problem *pr);
/**
 * GEMM row blocks comet_kernels_gms runs for problem pr (N output columns)
 * in dataflows 2-4 with params p (threads, tile_m): over threads and
 * segments, ceil(owned pairs / tile_m). @return 0 or -EINVAL.
 */
int comet_kernels_gms_tiles(const comet_kernels_gms_problem *pr, size_t N,
    const comet_kernels_gms_params *p, size_t *tiles);
/** Computes the statistics of a problem. */
void comet_kernels_gms_stats_of(const comet_kernels_gms_problem *pr, comet_kernels_gms_stats *st);
/** "rgcn", "spconv", "moe". */
const char *comet_kernels_gms_workload_name(comet_kernels_gms_workload w);
/** Parses a workload name; @return 0 or -EINVAL. */
int comet_kernels_gms_workload_parse(const char *name, comet_kernels_gms_workload *w);

/* ------------------------------------------------------------------ */
/* Mixture-of-experts across ranks (expert parallelism)                 */
/* ------------------------------------------------------------------ */

/** One rank's part of a distributed MoE layer: its tokens, their top-k
 *  routing and the weights of the experts it owns. */
typedef struct comet_kernels_moe_input {
    size_t tokens; /**< this rank's tokens (may be 0) */
    size_t K, N; /**< token width in, expert output width */
    size_t experts; /**< experts over all ranks (E) */
    size_t topk; /**< experts per token */
    const uint32_t *expert; /**< tokens x topk global expert ids (< experts) */
    const float *gate; /**< tokens x topk gate weights */
    const float *x; /**< tokens x K */
    const float *W; /**< the rank's experts' K x N weights, in expert order
                         (comet_kernels_moe_owner; NULL when it owns none) */
    float *y; /**< tokens x N, overwritten: sum over k of gate x x W_expert */
} comet_kernels_moe_input;

/**
 * The experts rank r of `ranks` owns: a contiguous block starting at
 * *first, *count of them (E / P each, the first E % P ranks one more; a
 * rank owns none when E < P and r >= E).
 */
void comet_kernels_moe_owner(size_t experts, int ranks, int r, size_t *first, size_t *count);

/**
 * Top-2 routing of `tokens` tokens over `experts` experts from the moe
 * generator (comet_kernels_gms_generate, popularity ~ (e+1)^-skew): a
 * token's two experts in ascending order into expert[2t], expert[2t+1], and
 * gates g in [0.55, 0.95) and 1 - g from a hash of the token.
 * @return 0 or the generator's error.
 */
int comet_kernels_moe_route(size_t tokens, size_t experts, double skew, unsigned long long seed,
    uint32_t *expert, float *gate);

/** Buffers of comet_kernels_dist_moe kept across calls. */
#define COMET_KERNELS_MOE_WS_SLOTS 13

/** A distributed MoE call's buffers, grown on demand and kept across calls
 *  (fresh buffers every call cost the MPI transfers page faults and, in
 *  MPICH's shared-memory path, up to 40x: 3.5 ms instead of 75 us for a
 *  1 MiB all-to-all on this VM). Zero-initialise; release with
 *  comet_kernels_moe_ws_free. */
typedef struct comet_kernels_moe_ws {
    void *buf[COMET_KERNELS_MOE_WS_SLOTS]; /**< buffers (owned) */
    size_t cap[COMET_KERNELS_MOE_WS_SLOTS]; /**< their sizes */
} comet_kernels_moe_ws;

/** Frees a workspace's buffers (NULL-safe); it may be used again. */
void comet_kernels_moe_ws_free(comet_kernels_moe_ws *ws);

/**
 * Distributed MoE layer (expert parallelism) over the ranks of comm: the
 * rows each rank sends each peer per local expert are exchanged
 * (MPI_Alltoall, ceil(E/P) ints per peer), the routed token rows are
 * dispatched (MPI_Alltoallv), each rank runs its experts as one
 * gather-GEMM-scatter in dataflow df (one segment per local expert), the
 * outputs return (MPI_Alltoallv) and are summed into y weighted by the
 * gates, in a fixed order (peer, expert, token): deterministic. ws (may be
 * NULL: buffers allocated and freed in the call) keeps the buffers. log (may be
 * NULL) receives the three all-to-alls: op "counts", "tokens" (the bytes
 * this rank dispatches to other ranks) and "combine" (the bytes it returns
 * to other ranks); its own rows are copied inside MPI and not counted. Every rank must
 * pass the same K, N, experts, topk and df; an argument error on one rank
 * only is returned there while the others wait in the collective.
 * @return 0, -EINVAL, -EOVERFLOW, -ENOMEM, -EIO (MPI), or the gms kernel's error.
 */
int comet_kernels_dist_moe(MPI_Comm comm, const comet_kernels_moe_input *in,
    comet_kernels_gms_dataflow df, const comet_kernels_gms_params *p, comet_kernels_moe_ws *ws,
    comet_kernels_coll_log *log);

#ifdef __cplusplus
}
#endif
#endif /* COMET_KERNELS_H */
