/**
 * @file comet_model.h
 * @brief Analytical dataflow model of compound operations with explicit
 *        collectives (after COMET and DFModel): hardware descriptions,
 *        mappings, latency and energy with breakdowns, mapping search.
 *
 * Units: time in cycles of the description's clock (converted to seconds
 * with clock_ghz), sizes in bytes, bandwidths in bytes/cycle, energies in pJ.
 * Presets (configs/hw/NAME.yaml) and calibrated profiles share this schema
 * (docs/hardware.md). The model never measures.
 */
#ifndef COMET_MODEL_H
#define COMET_MODEL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Network topologies joining clusters (or cores inside a cluster). */
typedef enum comet_model_topo {
    COMET_MODEL_MESH2D = 0, /**< X x Y mesh */
    COMET_MODEL_TORUS2D, /**< X x Y torus */
    COMET_MODEL_RING, /**< ring of X*Y nodes */
    COMET_MODEL_SWITCH, /**< one switch, every node one hop away */
    COMET_MODEL_FULL /**< fully connected */
} comet_model_topo;

/** A network of nodes. */
typedef struct comet_model_net {
    comet_model_topo topo; /**< topology */
    int dims[2]; /**< X, Y (ring/switch/full use X*Y nodes) */
    double link_bw; /**< bytes/cycle per link and direction */
    double hop_latency; /**< cycles per hop */
    double startup; /**< cycles of software/injection overhead per message (alpha) */
    int broadcast; /**< network can broadcast */
    int reduction; /**< in-network reduction */
    double link_pj_per_byte; /**< energy per byte per hop */
} comet_model_net;

/** One memory level. */
typedef struct comet_model_mem {
    double capacity; /**< bytes per instance */
    double bw; /**< bytes/cycle per instance (DRAM: total) */
    double read_pj; /**< pJ per access */
    double write_pj; /**< pJ per access */
    double access_bytes; /**< bytes per access */
} comet_model_mem;

/** Vector-unit ops with per-op cycles and energy. */
enum {
    COMET_MODEL_VOP_ADD = 0,
    COMET_MODEL_VOP_MUL,
    COMET_MODEL_VOP_DIV,
    COMET_MODEL_VOP_EXP,
    COMET_MODEL_VOP_MAX,
    COMET_MODEL_VOP_SQRT,
    COMET_MODEL_NVOP
};

/** Maximum points per axis of a GEMM efficiency grid. */
#define COMET_MODEL_GRID_MAX 16

/**
 * Measured GEMM efficiency grid (calibrated profiles): values[t][i][j][k]
 * for threads[t], M[i], N[j], K[k], interpolated in log space; outside the
 * grid a saturating law eff = emax * F / (F + f_half) on the flop count F.
 */
typedef struct comet_model_grid {
    int nt, nm, nn, nk; /**< axis lengths (0 = no grid) */
    double threads[4]; /**< thread counts */
    double M[COMET_MODEL_GRID_MAX], N[COMET_MODEL_GRID_MAX], K[COMET_MODEL_GRID_MAX]; /**< axes */
    double *values; /**< nt*nm*nn*nk efficiencies in (0, 1] */
    double emax, f_half; /**< fallback law */
} comet_model_grid;

/** A hardware description. */
typedef struct comet_model_hw {
    char name[64]; /**< e.g. "edge" */
    char kind[16]; /**< "accelerator" or "cpu" */
    double clock_ghz; /**< cycles per ns */
    int clusters; /**< number of clusters (nodes / ranks) */
    comet_model_net cluster_net; /**< network between clusters */
    int cores; /**< cores per cluster */
    comet_model_net core_net; /**< network from global buffer to cores */
    comet_model_mem dram; /**< off-chip memory (shared by all clusters) */
    comet_model_mem gb; /**< global buffer per cluster (CPU: LLC share) */
    comet_model_mem lb; /**< local buffers per core (CPU: L2) */
    int systolic; /**< 1: systolic-array GEMM engine, 0: peak x efficiency */
    int sa_rows, sa_cols, sa_arrays; /**< systolic array R x C, arrays per core */
    double peak_flops; /**< FLOP/cycle per core (non-systolic) */
    double gemm_eff; /**< flat GEMM efficiency when no grid */
    comet_model_grid grid; /**< measured efficiency (calibrated) */
    comet_model_grid fused_grid; /**< efficiency of the GEMM inside the fused kernels (calibrated;
                                      values NULL when absent: fused mappings use grid) */
    double mac_pj; /**< pJ per MAC */
    int simd_width; /**< vector lanes */
    double vop_cycles[COMET_MODEL_NVOP]; /**< cycles per vector instruction */
    double vop_pj[COMET_MODEL_NVOP]; /**< pJ per element op */
    double bytes_per_elem; /**< on-chip datatype size */
    json_t *calibration; /**< optional fit quality/provenance (owned), ignored by the model */
} comet_model_hw;

/** Frees what a hardware description owns. */
void comet_model_hw_free(comet_model_hw *hw);
/**
 * Loads a description from YAML or JSON. Every error names file:line and the
 * field. name may be a path or a preset under configs/hw/ ("edge", "cloud").
 */
int comet_model_hw_load(const char *name, comet_model_hw *hw, char *err, size_t errlen);
/** Parses a description from text (file names the source in messages). */
int comet_model_hw_parse(
    const char *file, const char *text, size_t len, comet_model_hw *hw, char *err, size_t errlen);
/** The description as JSON in the same schema (round-trips through the loader). */
json_t *comet_model_hw_to_json(const comet_model_hw *hw);
/** Resolves a preset name to a path (configs dir from $COMET_CONFIGS or the source tree). */
int comet_model_preset_path(const char *name, char *path, size_t len);
/**
 * A scaled CPU system: `nodes` clusters of `cores_per_node` cores of the
 * calibrated machine `base`, joined by `net` (NULL keeps base's network).
 */
int comet_model_hw_scale(const comet_model_hw *base, int cores_per_node, int nodes,
    const comet_model_net *net, comet_model_hw *out);
/** GEMM efficiency at (M, N, K, threads) from the grid or the flat value. */
double comet_model_gemm_eff(const comet_model_hw *hw, double M, double N, double K, double threads);

/** Compound operations. */
typedef enum comet_model_op {
    COMET_MODEL_GEMM_SOFTMAX = 0,
    COMET_MODEL_GEMM_LAYERNORM = 1,
    COMET_MODEL_ATTENTION = 2
} comet_model_op;

/** A problem: GEMM ops use M, N, K; attention B*H heads of lq x lk x d. */
typedef struct comet_model_problem {
    comet_model_op op; /**< operation */
    double M, N, K; /**< GEMM dims */
    double heads, lq, lk, d; /**< attention (heads = batch*heads) */
    int causal; /**< attention mask */
} comet_model_problem;

/** A mapping (one point of the search space). */
typedef struct comet_model_mapping {
    int fused; /**< intermediates stay on chip */
    int pipelined; /**< double-buffered binding (else sequential) */
    int cs_m, cs_n, cs_k; /**< cluster split of M, N (attention: Lk), K */
    int ks_m, ks_n; /**< core split inside a cluster */
    double tile_m; /**< rows per global-buffer step */
    double tile_k; /**< K (attention: KV tile) per step */
} comet_model_mapping;

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
    char coll_desc[96]; /**< e.g. "allreduce(max)+allreduce(sum) of 64 floats x 16 steps" */
    char coll_alg[24]; /**< algorithm chosen */
} comet_model_result;

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

/** One validation row: a measured record against its prediction. */
typedef struct comet_model_vrow {
    char op[24], variant[12]; /**< record op and variant */
    double M, N, K; /**< shape (attention: lq, lk, d) */
    int threads, ranks; /**< parallelism */
    double measured_s, predicted_s, rel_err; /**< median time, prediction, |p-m|/m */
} comet_model_vrow;

/**
 * Predicts measured records (kind "kernel" for the compound ops, and
 * "dist_kernel") on a local-machine description; rows[] gets up to cap rows.
 * @return number of rows (>= 0) or a negative errno.
 */
int comet_model_validate_records(
    const comet_model_hw *hw, json_t *const *recs, size_t n, comet_model_vrow *rows, size_t cap);

/** The kernel-equivalent mapping for a local record (used by validate). */
void comet_model_local_mapping(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    double tile_m, int threads, int ranks, comet_model_mapping *mp);

#ifdef __cplusplus
}
#endif
#endif /* COMET_MODEL_H */
