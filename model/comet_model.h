/**
 * @file comet_model.h
 * @brief Analytical dataflow model of compound operations with explicit
 *        collectives (after COMET and DFModel): compound ops and mappings,
 *        latency and energy with breakdowns, the mapping search, --explain,
 *        what-if parameters, gather-GEMM-scatter, the distributed kernels.
 *
 * The hardware a prediction runs on is comet_model_hw.h's description
 * (included); validation against measured records is
 * comet_model_validate.h. Units: time in cycles of the description's clock
 * (converted to seconds with clock_ghz), sizes in bytes, bandwidths in
 * bytes/cycle, energies in pJ. The model never measures.
 */
#ifndef COMET_MODEL_H
#define COMET_MODEL_H

#include "comet_model_hw.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Collective cost on one network level. */
typedef struct comet_model_coll_cost {
    double cycles; /**< latency */
    double link_bytes; /**< bytes x hops crossing links (energy) */
    comet_model_alg alg; /**< algorithm used */
} comet_model_coll_cost;

/**
 * Cost of collective `coll` of `bytes` (per participant; all-gather: the
 * gathered total) among p nodes of the cluster network (all levels; p may be
 * smaller than the node count: a sub-group of consecutive nodes). With
 * force != COMET_MODEL_ALG_NONE only that algorithm is costed (INFINITY if it
 * does not apply); else the cheapest applicable one. Calibrated fits (hw->links)
 * are used when present. Reductions add the vector unit's add/max time.
 */
comet_model_coll_cost comet_model_coll_time(
    const comet_model_hw *hw, comet_model_coll coll, int p, double bytes, comet_model_alg force);
/** Bandwidth (bytes/cycle) of the level a working set of `bytes` lives in on
 *  a CPU node (caches are transparent): private L2s, the LLC, or DRAM. */
double comet_model_cpu_level_bw(const comet_model_hw *hw, double bytes, double cores);
/** GEMM efficiency at (M, N, K, threads) from the grid or the flat value. */
double comet_model_gemm_eff(const comet_model_hw *hw, double M, double N, double K, double threads);

/**
 * Tile and wave quantization of a GPU GEMM (gemm.tiles): `batch` GEMMs of M x N
 * outputs run as batch x ceil(M/tm) x ceil(N/tn) output tiles in waves of hw->cores
 * (one tile per SM at a time; NVIDIA, "Matrix Multiplication Background User's
 * Guide", DU-09799-001, Sec. 3.1-3.2). Returns the useful fraction of the SM time,
 * M N batch / (waves x cores x tm x tn), in (0, 1], with the candidate tile that
 * makes it largest (each candidate credited with the same rate per SM: the least the
 * quantization costs); 0 when the description states no tiles or M or N is below
 * every candidate's (such GEMMs run other kernels: GEMV, split-K), i.e. the term
 * does not apply.
 */
double comet_model_gemm_wave_eff(const comet_model_hw *hw, double M, double N, double batch);
/**
 * Work factor of the fused kernels' GEMM on a row block of m rows (>= 1):
 * rows the micro-tiles compute over m (gemm.fused_micro_rows / _edge; 1
 * when not modelled). E.g. 12-row tiles with a 6-row edge: m = 8 -> 1.5,
 * m = 16 -> 1.125, m = 60 or 66 -> 1.
 */
double comet_model_micro_tile_factor(const comet_model_hw *hw, double m);

/** The share of a causal attention head's lq x lk scores a fused kernel
 *  computes with blocks of blk query rows: each block against every key its
 *  last query sees (the mask aligned at the end of the keys). 1/2 + 1/(2 lk)
 *  per row at blk 1, 1 at blk >= lq. */
double comet_model_causal_computed(double lq, double lk, double blk);

/** The share of the GEMM grid's interpolation weight at (M, N) that comes from
 *  grid points whose C (M x N fp32) is at most c_bytes: those measured BLAS's
 *  clearing of C (beta = 0) with C in the caches; the others measured it at
 *  memory bandwidth already. 1 without a grid. */
double comet_model_gemm_grid_c_share(const comet_model_hw *hw, double M, double N, double c_bytes);

/** Cycles a CPU row pass takes over one row of `width` elements from the
 *  measured table (vector.row_pass_widths; ln_rows: LayerNorm's, else
 *  softmax's), interpolated piecewise-linearly; NAN when not measured. */
double comet_model_row_pass_cycles(const comet_model_hw *hw, int ln_rows, double width);

/**
 * Efficiency of the fused kernels' own GEMM at the whole problem's (M, N, K,
 * threads): gemm.fused_grid when the description has one, else as
 * comet_model_gemm_eff().
 */
double comet_model_fused_gemm_eff(
    const comet_model_hw *hw, double M, double N, double K, double threads);

/** Compound operations. */
typedef enum comet_model_op {
    COMET_MODEL_GEMM_SOFTMAX = 0,
    COMET_MODEL_GEMM_LAYERNORM = 1,
    COMET_MODEL_ATTENTION = 2,
    COMET_MODEL_GEMM_RMSNORM = 3 /**< GEMM then RMSNorm (model only: no kernel measures it yet) */
} comet_model_op;

/** A problem: GEMM ops use M, N, K; attention B*H heads of lq x lk x d. */
typedef struct comet_model_problem {
    comet_model_op op; /**< operation */
    double M, N, K; /**< GEMM dims */
    double heads, lq, lk, d; /**< attention (heads = batch*heads) */
    int causal; /**< attention mask */
} comet_model_problem;

/** Basic operations of a compound op (docs/ARCHITECTURE.md). */
typedef enum comet_model_bop {
    COMET_MODEL_BOP_GEMM = 0, /**< out[M,N] = in0[M,K] x in1[K,N] */
    COMET_MODEL_BOP_ROWMAX, /**< out[M] = max over N of in0[M,N] */
    COMET_MODEL_BOP_SUB, /**< out = in0 - in1 (in1 may be a row vector) */
    COMET_MODEL_BOP_EXP, /**< out = exp(in0) */
    COMET_MODEL_BOP_ROWSUM, /**< out[M] = sum over N of in0[M,N] */
    COMET_MODEL_BOP_DIV, /**< out = in0 / in1 */
    COMET_MODEL_BOP_MEAN, /**< out[M] = rowsum / N */
    COMET_MODEL_BOP_VAR, /**< out[M] = rowsum of squared deviations / N */
    COMET_MODEL_BOP_MUL, /**< out = in0 * in1 */
    COMET_MODEL_BOP_ADD, /**< out = in0 + in1 */
    COMET_MODEL_BOP_SQRT, /**< out = sqrt(in0) */
    COMET_MODEL_NBOP
} comet_model_bop;

/** Shape class of a tensor in a compound op. */
typedef enum comet_model_tshape {
    COMET_MODEL_T_MK = 0, /**< GEMM left operand (rows x K) */
    COMET_MODEL_T_KN, /**< GEMM right operand (K x N), weights / K and V */
    COMET_MODEL_T_MN, /**< rows x N: the intermediate (attention: scores) */
    COMET_MODEL_T_ROW, /**< rows: a row statistic */
    COMET_MODEL_T_MD, /**< rows x d: attention output */
    COMET_MODEL_T_VEC /**< N: per-column parameters (LayerNorm gamma/beta) */
} comet_model_tshape;

/** A node of a compound op: one basic op over named tensors. */
typedef struct comet_model_node {
    comet_model_bop kind; /**< basic op */
    char out[8], in0[8], in1[8]; /**< tensor names (in1 "" when unary) */
    comet_model_tshape out_shape; /**< shape of out */
    int reduces_n; /**< reduces over N (row statistic): a split N needs a collective */
} comet_model_node;

/** A compound operation as a graph of basic ops (in dependency order). */
typedef struct comet_model_graph {
    int n; /**< nodes */
    comet_model_node node[16]; /**< nodes */
    char output[8]; /**< final tensor (leaves the chip) */
} comet_model_graph;

/** Builds the graph of pb's compound op. */
int comet_model_graph_build(const comet_model_problem *pb, comet_model_graph *g);

/** How an op's shape is written: GEMM ops M, N, K; attention heads, lq, lk, d. */
typedef enum comet_model_shape_class {
    COMET_MODEL_SHAPE_GEMM = 0, /**< M, N, K */
    COMET_MODEL_SHAPE_ATTENTION /**< heads (batch x heads), lq, lk, d; optional causal mask */
} comet_model_shape_class;

/**
 * One compound op of the vocabulary (model/ops.c): everything the parser,
 * the cost, the search, explain, validate and the CLI need to know about it.
 * Adding an op is one descriptor and its graph.
 */
typedef struct comet_model_opdesc {
    comet_model_op op; /**< its enum */
    const char *name; /**< CLI and record name */
    const char *what; /**< one line for help and reports */
    comet_model_shape_class shape; /**< shape keys and their projection (comet_model_op_dims) */
    const comet_model_graph *graph; /**< basic ops over named tensors */
    int flash; /**< a second GEMM (P V) accumulates each row's output of width Nout with an
                    online softmax: per group of rows (a head) its own stationary K and V, the
                    reduction dimension K cannot be split, groups may be split over clusters */
    const char *split_name; /**< the N dimension's name in collective nodes ("N", "Lk") */
    double pass_reads, pass_writes; /**< unfused: reads and writes of the intermediate after
                                         the GEMM (comet_model_unfused_passes) */
    int pass_streams; /**< unfused writes stream (non-temporal) at or above 16 MiB */
    int ln_rows; /**< its row pass is LayerNorm's (vector.ln_row_cycles) */
    int row_pass; /**< its rows run through a calibrated row pass (vector.row_elem_cycles or,
                       with ln_rows, ln_row_elem_cycles): the unfused passes, and the fused
                       epilogue unless flash (an online softmax is another loop) */
} comet_model_opdesc;

/** The shape projected onto the model's dimensions. */
typedef struct comet_model_opdims {
    const comet_model_opdesc *desc; /**< the op */
    double rows; /**< rows of the intermediate (M; attention heads x lq) */
    double N; /**< its width (N; attention lk) */
    double K; /**< the GEMM's reduction (K; attention d) */
    double Nout; /**< width of the result (N; attention d) */
    double group; /**< rows sharing one stationary operand (M; attention lq) */
    double groups; /**< such groups (1; attention heads) */
} comet_model_opdims;

/** The descriptor of an op (NULL if unknown). */
const comet_model_opdesc *comet_model_op_desc(comet_model_op op);
/** Ops in the vocabulary; comet_model_op_at(i) is the i-th (NULL past the end). */
int comet_model_op_count(void);
/** The i-th descriptor of the vocabulary. */
const comet_model_opdesc *comet_model_op_at(int i);
/** "gemm_softmax, gemm_layernorm, attention": the names, for messages. */
const char *comet_model_op_list(void);
/** Projects a problem's shape onto rows x N x K (and the second GEMM's width). */
void comet_model_op_dims(const comet_model_problem *pb, comet_model_opdims *x);
/** "M, N and K" or "heads, lq, lk and d": the shape keys an op needs. */
const char *comet_model_shape_keys(comet_model_op op);
/** Where a shape key of pb's op is stored (NULL: not a key of that op). */
double *comet_model_problem_dim(comet_model_problem *pb, const char *name);
/** Name of a basic op. */
const char *comet_model_bop_name(comet_model_bop b);

/** A mapping (one point of the search space). */
typedef struct comet_model_mapping {
    int fused; /**< intermediates stay on chip */
    int pipelined; /**< double-buffered binding (else sequential) */
    int cs_m, cs_n, cs_k; /**< cluster split of M, N (attention: Lk), K */
    int ks_m, ks_n; /**< core split inside a cluster */
    double tile_m; /**< rows per global-buffer step */
    double tile_k; /**< K (attention: KV tile) per step */
    /* --- appended --- */
    int one_pass; /**< unfused only: non-GEMM ops as one pass per row over the intermediate
                       (library kernel) instead of one pass per basic op */
    int cs_h; /**< attention: cluster split of heads (0 or 1 = none) */
    double pass_reads; /**< unfused: full reads of the intermediate after the GEMM wrote it
                            (0: the op's default, comet_model_unfused_passes) */
    double pass_writes; /**< unfused: full writes of intermediate-sized data by the passes */
    int streaming; /**< unfused: passes write with streaming stores (no write-allocate read);
                        -1 default */
    int blas_gemm; /**< fused on a CPU: the GEMM is the library's sgemm (gemm.grid), not the
                        fused kernels' own micro-kernel (gemm.fused_grid) */
    int in_place; /**< unfused on a CPU: the pass writes its result over the intermediate it
                       reads (lines it already owns: no read for ownership), as the fused
                       kernels' small-shape method does (params.method op_by_op) */
    double pv_rows; /**< unfused causal attention: P V runs in blocks of this many query rows,
                         each over the keys its last row sees (the CPU kernels: 64); 0: one
                         plain GEMM over every key, as an unfused mapping's by default */
    /** The core-level temporal loop (#37): a core runs its step tile (rows x its columns x
     *  the step's K) through its GEMM engine as ct_m x ct_n x ct_k sub-tiles, one after
     *  another, as COMET's `Core temporal` level does (0 or 1: one tile). A systolic array
     *  pays its fill and drain (2R + C - 2 per fold) on every sub-tile; each K sub-tile
     *  after the first reads and writes the sub-tile's fp32 partial sums in the output
     *  buffer. What it buys: only a sub-tile's accumulators live in the output buffer at a
     *  time (fused: a row sub-tile, ct_n = 1, runs its epilogue before the next: rows are
     *  whole within it). */
    int ct_m, ct_n, ct_k;
    /** Unfused on an accelerator: the intermediate stays in each cluster's global buffer
     *  between the GEMM and the passes (it must fit there beside the step's tiles and the
     *  stationary operand) instead of going to DRAM and back (#37: the best unfused
     *  mapping under the same constraints, not one that streams it through DRAM). */
    int inter_gb;
} comet_model_mapping;

/** An explicit collective node inserted by a mapping. */
typedef struct comet_model_coll_node {
    comet_model_coll type; /**< collective */
    char reduce_op[8]; /**< max, sum ("" for gathers) */
    char tensor[8]; /**< tensor it moves (a row statistic, not a tile) */
    char dim[4]; /**< the split dimension that required it */
    double bytes; /**< per participant per call */
    int participants; /**< nodes */
    comet_model_alg alg; /**< algorithm chosen for the topology */
    double cycles; /**< per call */
    double calls; /**< calls over the whole op */
} comet_model_coll_node;

/** Breakdown of a prediction (cycles unless noted). */
typedef struct comet_model_result {
    int valid; /**< fits capacities */
    double cycles; /**< total latency */
    double seconds; /**< cycles / clock */
    double t_gemm, t_vec, t_dram, t_noc, t_coll, t_ramp; /**< component totals */
    double t_stall; /**< memory time not hidden behind compute */
    double e_dram, e_gb, e_lb, e_mac, e_vec, e_link; /**< pJ */
    double energy_pj; /**< total */
    double dram_bytes; /**< off-chip traffic */
    double coll_bytes; /**< bytes each participant sends in collectives */
    int coll_calls; /**< collective invocations */
    char coll_desc[256]; /**< e.g. "allreduce(max)+allreduce(sum) of 64 floats x 16 steps" */
    char coll_alg[24]; /**< algorithm chosen */
    /* --- appended --- */
    double t_pass; /**< unfused: the separate non-GEMM passes */
    double t_beta; /**< unfused on a CPU: BLAS's clearing pass over an intermediate beyond
                        the LLC (beta = 0), at memory rather than LLC bandwidth */
    double t_reload; /**< fused on a CPU: the stationary operand read again from the LLC
                          every block, where it leaves L2 between blocks (all steps) */
    double macs; /**< MACs */
    double vec_ops; /**< vector element-ops */
    double gb_need, lb_need; /**< bytes needed per global / local buffer */
    int ncoll; /**< explicit collective nodes */
    comet_model_coll_node coll[4]; /**< the nodes */
    double micro_factor; /**< fused CPU kernels: micro-tile rows computed / rows (1: none) */
    double m_cluster, tile_rows, steps; /**< the geometry the terms are priced on: rows per
                                             cluster, a step's rows (tile_m within them),
                                             steps (what --explain prints) */
    /* bounds (cycles): no mapping runs faster than its compute or its
     * compulsory traffic on this hardware; cycles >= bound_cycles always */
    double bound_cycles; /**< the largest of the bounds below */
    double bound_compute; /**< MACs / (MACs per cycle of every core of every cluster) */
    double bound_vector; /**< vector element-ops / (lanes of every core), one per lane-cycle */
    double bound_dram; /**< compulsory bytes (A, B or K/V, result; unfused accelerators: the
                            intermediate written and read once) / every DRAM's bandwidth; CPU:
                            from the cache level that holds them */
    double bound_inter; /**< CPU unfused: the intermediate written and read once / the
                             bandwidth of the level it lives in */
    double bound_raised; /**< cycles the composition fell short of the bound by (the latency
                              was raised to it; 0: the composition was above) */
    double t_sync; /**< CPU, T > 1 threads: the parallel regions' fork and join
                        (regions x hw par_region_cycles) */
    int b_resident; /**< the stationary operand (B; attention: K and V) stays in the global
                         buffer for every step (else it streams each step) */
} comet_model_result;

/**
 * Rows of the busiest of T cores taking blocks of blk rows, laid along
 * segments of seg rows (each segment's last block may be shorter), over rows
 * in all, as they come free: ceil(blocks / T) blocks, full ones first.
 */
double comet_model_busiest_rows(double blk, double seg, double rows, double T);

/**
 * OpenMP parallel regions one call of comet's CPU kernels opens with a team
 * of T > 1 threads for a mapping (kernels/kernels.c): the fused kernels one
 * (each thread packs its own B, or the K and V of the heads it reaches,
 * then runs its row or query blocks), the unfused row ops two (the
 * row-slab GEMM, then the row pass), unfused attention three per head (QK^T,
 * softmax, PV) and one more per head when causal (the mask). 0 at one thread.
 */
double comet_model_parallel_regions(
    const comet_model_problem *pb, const comet_model_mapping *mp, int threads);

/** Evaluates one mapping. Allocation-free. */
void comet_model_eval(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, comet_model_result *r);

/** Prints each term of a prediction with its formula and numbers. */
void comet_model_explain(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, FILE *fp);

/** Search output. */
typedef struct comet_model_search {
    comet_model_mapping best_fused, best_unfused; /**< best by latency */
    comet_model_result r_fused, r_unfused; /**< their results */
    size_t evaluated; /**< mappings evaluated */
    size_t pruned; /**< rejected by capacity before evaluation */
    double seconds; /**< search wall time */
    size_t npareto; /**< Pareto points stored */
    comet_model_mapping pareto[64]; /**< latency-energy Pareto set (up to 64) */
    comet_model_result pareto_r[64]; /**< their results */
} comet_model_search;

/** Enumerates the mapping space (capacity pruning first). */
int comet_model_explore(
    const comet_model_hw *hw, const comet_model_problem *pb, comet_model_search *out);

/** Describes a mapping on one line. */
const char *comet_model_mapping_str(const comet_model_mapping *mp, char *buf, size_t len);
/** Result as JSON. */
json_t *comet_model_result_json(const comet_model_result *r);
/** Mapping as JSON. */
json_t *comet_model_mapping_json(const comet_model_mapping *mp);
/** Parses "gemm_softmax"/"gemm_layernorm"/"attention". */
int comet_model_op_parse(const char *s, comet_model_op *op);
/** Op name. */
const char *comet_model_op_name(comet_model_op op);

/**
 * Parses a shape "M=1024,N=1024,K=256" (attention: "heads=16,lq=4096,lk=4096,d=64";
 * sizes accept k/M suffixes) into pb->op's dimensions. Errors name the field.
 */
int comet_model_problem_parse(const char *shape, comet_model_problem *pb, char *err, size_t errlen);

/**
 * Loads a workload file (configs/workloads/NAME.yaml or a path):
 * {op: gemm_softmax, shape: {M: .., N: .., K: ..}} or attention with
 * {heads, lq, lk, d, causal}. Errors name file:line and field.
 */
int comet_model_workload_load(const char *name, comet_model_problem *pb, char *err, size_t errlen);

/**
 * Loads a mapping file ({fused: true, binding: pipelined, cluster_split:
 * {M, N, K, H}, core_split: {M, N}, tile_m, tile_k, one_pass; optional
 * core_temporal: {M, N, K} and, unfused, intermediate: dram | global_buffer})
 * as written by comet_model_mapping_json().
 */
int comet_model_mapping_load(const char *path, comet_model_mapping *mp, char *err, size_t errlen);

/**
 * comet_model_mapping_load(), refusing a mapping the file says was searched
 * for another op or hardware (explore/predict --json: top-level "op" and
 * "hw"; a mapping object: "op" and "hardware"). op and hwname may be NULL.
 */
int comet_model_mapping_load_for(const char *path, const char *op, const char *hwname,
    comet_model_mapping *mp, char *err, size_t errlen);

/**
 * Whether a mapping can run pb on hw at all: heads split only for
 * attention, no K split for attention, cluster and core splits within the
 * hardware. @return 0 or -EINVAL with a message naming what does not fit.
 */
int comet_model_mapping_check(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, char *err, size_t errlen);

/** Evaluates one mapping without descriptive strings (the search's inner loop). */
void comet_model_eval_fast(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, comet_model_result *r);

/**
 * Default unfused pass structure of an op: reads and writes of the
 * intermediate (each |intermediate| bytes) after the GEMM wrote it, and
 * whether the writes stream (no write-allocate read). Follows kernels/.
 */
void comet_model_unfused_passes(comet_model_op op, double *reads, double *writes, int *streaming);

/** The kernel-equivalent mapping for a local record (used by validate). */
void comet_model_local_mapping(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    double tile_m, int threads, int ranks, comet_model_mapping *mp);

/* ------------------------------------------------------------------ */
/* Named hardware parameters (what-ifs: sweeps and sensitivity)         */
/* ------------------------------------------------------------------ */

/** Number of named hardware parameters (comet_model_param_name(0..n-1)). */
int comet_model_param_count(void);
/** Name of parameter i ("clock", "dram_bw", ...), or NULL. */
const char *comet_model_param_name(int i);
/** SI unit of a parameter ("Hz", "B/s", "B", "FLOP/s", "s", "" for counts). */
const char *comet_model_param_unit(const char *name);
/** One-line description of a parameter. */
const char *comet_model_param_what(const char *name);
/** A parameter's value in its SI unit. @return 0 or -EINVAL (unknown name). */
int comet_model_param_get(const comet_model_hw *hw, const char *name, double *v);
/**
 * Sets a parameter (SI unit). Setting the clock keeps every bandwidth in B/s
 * (bytes per cycle scale by old/new clock); clusters and cores reshape their
 * network (near-square for meshes and tori).
 * @return 0, -EINVAL (unknown name) or -ERANGE (not positive, not an integer count).
 */
int comet_model_param_set(comet_model_hw *hw, const char *name, double v);
/** Parses a value of parameter name ("25 GB/s", "1.4 GHz", "2 MiB"; bare numbers in SI units). */
int comet_model_param_parse(const char *name, const char *text, double *v);
/** Sets a shape dimension of pb (M, N, K; attention heads, lq, lk, d). @return 0, -ENOENT, -EINVAL.
 */
int comet_model_problem_dim_set(comet_model_problem *pb, const char *name, double v);

/** One row of a sensitivity analysis. */
typedef struct comet_model_sens_row {
    char name[24]; /**< parameter */
    double base, lo_val, hi_val; /**< value and the two perturbed values (SI unit) */
    double base_fused_s, base_unfused_s; /**< best latencies at base */
    double fused_lo_s, fused_hi_s; /**< best fused latency at lo_val and hi_val (NaN: none fits) */
    double unfused_lo_s, unfused_hi_s; /**< best unfused latency at lo_val and hi_val */
    double elasticity_fused, elasticity_unfused; /**< d ln latency / d ln parameter between them */
} comet_model_sens_row;

/**
 * Sensitivity of the best fused and unfused mappings' latency to each
 * hardware parameter the description has, moved by -frac and +frac (counts
 * by at least one), ranked by the larger |elasticity| (most effect first).
 * @return rows written (<= cap) or a negative errno.
 */
int comet_model_sensitivity(const comet_model_hw *hw, const comet_model_problem *pb, double frac,
    comet_model_sens_row *rows, int cap);

/* ------------------------------------------------------------------ */
/* Gather-GEMM-scatter (Efficient-GMS): out[dst] += in[src] x W_seg     */
/* ------------------------------------------------------------------ */

/** What the model needs of one gather-GEMM-scatter input. */
typedef struct comet_model_gms {
    double rows_in, rows_out; /**< rows of in (x K) and out (x N) */
    double K, N; /**< feature widths */
    double pairs; /**< (src, dst) pairs over all segments */
    double segments; /**< non-empty segments (each has its own K x N weights) */
    double max_seg; /**< pairs of the largest segment (0: unknown) */
} comet_model_gms;

/** One configuration of the kernel (kernels/gms.c). */
typedef struct comet_model_gms_config {
    int dataflow; /**< 1 unfused, 2 gather fused, 3 scatter fused, 4 fused */
    double tile_m; /**< pairs per tile (dataflows 2-4) */
    int threads; /**< threads (>= 1) */
    double tiles; /**< row tiles over all threads and segments, sum of
                       ceil(owned pairs of s / tile_m) (comet_kernels_gms_tiles;
                       0: estimated as pairs / tile_m + min(segments x threads,
                       pairs) / 2) */
} comet_model_gms_config;

/** The model's cost of one configuration (seconds). */
typedef struct comet_model_gms_cost {
    double seconds; /**< predicted latency (>= bound_s) */
    double bound_s; /**< no configuration runs faster: compute at peak, or the
                         compulsory traffic (W, in, out once) at DRAM bandwidth */
    double pack_s, gather_s, main_s, scatter_s; /**< phases, in series */
    double bytes; /**< modelled memory traffic of all phases */
    int bound_raised; /**< 1 if the phases summed below the bound */
} comet_model_gms_cost;

/**
 * Cost of config c on input g on a CPU description (calibrated profile or
 * scaled node): weights packed once; a separate gather (dataflows 1 and 3)
 * writes the gathered rows and the main loop reads them back; a fused
 * gather (2 and 4) fetches each tile's rows from `in`; the GEMM at the fused
 * kernels' efficiency for row blocks of the tile (or a thread's part of a
 * whole segment in dataflow 1); a separate scatter (1 and 2) writes the
 * product and reads it back; every scatter reads and writes the destination
 * rows. Threads own destination rows (the kernel's deterministic
 * partitioning): each thread runs P/T pairs over all N columns.
 * @return 0, -EINVAL (bad input or config), -ENOTSUP (not a CPU description).
 */
int comet_model_gms_eval(const comet_model_hw *hw, const comet_model_gms *g,
    const comet_model_gms_config *c, comet_model_gms_cost *out);

/**
 * What each of T cores delivers when all T run at once, against one core
 * alone (the gms model divides every phase at T threads by it): the median
 * over the GEMM grid's (fused, else sgemm) N, K points at its largest M of
 * the efficiency at T threads over that at 1, at most 1; 1 for T <= 1,
 * without a grid or with one thread count only.
 */
double comet_model_gms_core_share(const comet_model_hw *hw, double T);

/** The result of a gms search: the best configuration of each dataflow. */
typedef struct comet_model_gms_search {
    comet_model_gms_config best[4]; /**< per dataflow 1-4 (index dataflow - 1) */
    comet_model_gms_cost cost[4]; /**< their costs */
    int have[4]; /**< 1 where that dataflow was searched */
    int win; /**< the fastest dataflow (1-4) */
    int evaluated; /**< configurations evaluated */
} comet_model_gms_search;

/**
 * Every dataflow (only: 1-4, or 0 for all) x tile_m (of tiles[0..ntiles);
 * dataflow 1 once, at tiles[0]: it runs whole segments) x threads
 * (1..max_threads) configuration. tiles_of (may be NULL) gives the exact
 * tile count of a tile_m at a thread count for the input (e.g. from
 * comet_kernels_gms_tiles), else it is estimated; each (may be
 * NULL) sees every configuration and its cost.
 * @return the number of configurations evaluated, or a negative errno.
 */
int comet_model_gms_explore(const comet_model_hw *hw, const comet_model_gms *g, const double *tiles,
    int ntiles, int max_threads, int only,
    double (*tiles_of)(const void *ctx, double tile_m, int threads), const void *ctx,
    void (*each)(void *arg, const comet_model_gms_config *c, const comet_model_gms_cost *r),
    void *arg, comet_model_gms_search *out);

/** "unfused", "gather_fused", "scatter_fused", "fused" (1-4), else "?". */
const char *comet_model_gms_dataflow_name(int dataflow);
/** Parses those names into 1-4: 0 or -EINVAL. */
int comet_model_gms_dataflow_parse(const char *name, int *dataflow);

/* ------------------------------------------------------------------ */
/* Scale-out: the distributed kernels over a link (model/dist.c)        */
/* ------------------------------------------------------------------ */

/** Most collective calls one distributed kernel issues. */
#define COMET_MODEL_DIST_MAXCALLS 4

/** One explicit collective of a distributed kernel (per kernel call). */
typedef struct comet_model_dist_call {
    comet_model_coll kind; /**< allreduce or allgather */
    char op[8]; /**< reduction ("max", "sum"), "widths" for the slice-width gather, "" */
    double count; /**< elements per rank */
    double bytes; /**< bytes per rank (all-gather: each rank's contribution) */
    double calls; /**< calls per kernel call */
    double seconds; /**< predicted time of one call over the link */
} comet_model_dist_call;

/**
 * Appends one collective call to out (at index n, if n < cap).
 * @return the new count (n + 1, or n when out is full).
 */
int comet_model_dist_call_add(comet_model_dist_call *out, int cap, int n, comet_model_coll kind,
    const char *op, double count, double bytes, double calls);

/** A distributed kernel's prediction: local compute plus its collectives. */
typedef struct comet_model_dist_pred {
    double seconds; /**< local_s + coll_s */
    double local_s; /**< the rank's compute at the local profile's rates */
    double coll_s; /**< sum of calls x seconds of the collectives */
    char link[32]; /**< link whose fits costed the collectives ("": the profile's own) */
    int ncall; /**< entries of call */
    comet_model_dist_call call[COMET_MODEL_DIST_MAXCALLS]; /**< in the order issued */
} comet_model_dist_pred;

/**
 * Prints comet_model_dist_predict term by term: the rank's slice explained
 * (comet_model_explain), the local time with its adjustments, each
 * collective over the link, the total (the number validate compares).
 * @return 0, or what comet_model_dist_predict returns.
 */
int comet_model_dist_explain(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    int threads, int p, const char *link, FILE *fp);

/**
 * The collectives kernels/dist.c issues for one call of a distributed kernel
 * over p ranks holding equal slices (N split; attention: Lk split), in the
 * order it issues them. The kernels' program, not a measurement.
 * @return entries written (0 at p = 1), -EINVAL, -ENOTSUP (op not distributed).
 */
int comet_model_dist_colls(
    const comet_model_problem *pb, int fused, int p, comet_model_dist_call *out, int cap);

/**
 * Predicts a distributed kernel over p ranks of this machine: the rank's
 * slice computed as the local kernels run it (BLAS GEMM, then row passes;
 * unfused: the row pass over whole rows) on hw's rates with the memory
 * shared by the ranks, plus its collectives costed by the fits of `link`
 * (the record's link, e.g. "tcp:comet0"; NULL or "": hw's own links).
 * @return 0, -EINVAL, -ENOENT (no fit of that link), -ERANGE (no finite time).
 */
int comet_model_dist_predict(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    int threads, int p, const char *link, comet_model_dist_pred *out);

/* ------------------------------------------------------------------ */
/* Mixture-of-experts across ranks (model/moe.c, kernels/moe_dist.c)    */
/* ------------------------------------------------------------------ */

/** Most ranks a distributed MoE record is predicted at. */
#define COMET_MODEL_MOE_MAXRANKS 256

/** One rank's load in a distributed MoE layer. */
typedef struct comet_model_moe_rank {
    double tokens; /**< its own tokens */
    double sent; /**< routed rows it dispatches (tokens x topk) */
    double pairs; /**< routed rows its experts receive, from every rank */
    double segments; /**< its experts that receive any row */
    double max_seg; /**< rows of its busiest expert */
    double remote_sent; /**< of sent, rows to other ranks' experts */
    double remote_recv; /**< of pairs, rows from other ranks' tokens */
} comet_model_moe_rank;

/** A distributed MoE layer: experts split over ranks, per-rank loads. */
typedef struct comet_model_moe {
    int ranks; /**< ranks (P) */
    double K, N; /**< token width in, expert output width */
    double experts; /**< experts over all ranks (E) */
    const comet_model_moe_rank *rank; /**< ranks entries */
} comet_model_moe;

/**
 * The all-to-alls kernels/moe_dist.c issues, in order: "counts" (P x
 * ceil(E/P) ints a rank), "tokens" (rows dispatched to other ranks x K
 * floats), "combine" (rows returned to other ranks x N floats); bytes per
 * rank, the largest rank's (the kernel logs its own; the bench records the
 * maximum over ranks). @return entries (0 at one rank) or -EINVAL.
 */
int comet_model_moe_colls(const comet_model_moe *m, comet_model_dist_call *out, int cap);

/**
 * Predicts the distributed MoE layer: local = the maximum over ranks of
 * (packing its rows + its experts' gather-GEMM-scatter in `dataflow` at
 * tile_m and threads, comet_model_gms_eval, + the weighted combine) with the
 * memory shared by the ranks, its own rows copied through MPI as local
 * memory work); plus the three all-to-alls, each costed by the fitted
 * alltoall of `link` (NULL or "": hw's own links) at the uniform size whose
 * (P-1)/P off-rank share is the largest rank's off-rank bytes.
 * @return 0, -EINVAL, -ENOENT (no fit of that link), -ERANGE, or gms_eval's error.
 */
int comet_model_moe_predict(const comet_model_hw *hw, const comet_model_moe *m, int dataflow,
    double tile_m, int threads, const char *link, comet_model_dist_pred *out);

#ifdef __cplusplus
}
#endif
#endif /* COMET_MODEL_H */
