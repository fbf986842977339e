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

#include "comet_results.h"

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
    /* --- schema v2 --- */
    char name[16]; /**< dimension name ("nvlink", "ib", "noc"; "" when unnamed) */
    double efficiency; /**< share of link_bw collectives reach (0 or absent: 1) */
    /** per collective (comet_model_coll index): the share of link_bw it reaches, where
     *  stated (collective_efficiency: {allgather: 0.43}); 0: efficiency */
    double coll_eff[8];
} comet_model_net;

/** Efficiency as a step function of a transfer's or an operation's size
 *  (Calculon's tables): the value of the largest threshold at or below the
 *  size (below every threshold, the smallest's value), held where a step up
 *  would make a bigger size finish sooner than a smaller one. n == 0: none. */
typedef struct comet_model_steps {
    int n; /**< entries, thresholds ascending */
    double at[8]; /**< thresholds (GFLOP or MB) */
    double eff[8]; /**< efficiencies in (0, 1] */
} comet_model_steps;

/** The efficiency of `steps` at `size`; dflt when the table is empty. */
double comet_model_steps_eval(const comet_model_steps *steps, double size, double dflt);

/** Maximum network levels joining clusters (innermost first). */
#define COMET_MODEL_NET_LEVELS 4

/** Collective types. */
typedef enum comet_model_coll {
    COMET_MODEL_ALLREDUCE = 0, /**< all-reduce */
    COMET_MODEL_ALLGATHER, /**< all-gather (bytes = gathered total) */
    COMET_MODEL_REDUCE_SCATTER, /**< reduce-scatter (bytes = per-node input) */
    COMET_MODEL_REDUCE, /**< reduce to one node */
    COMET_MODEL_BCAST, /**< broadcast from one node */
    COMET_MODEL_ALLTOALL, /**< all-to-all (calibration rows only) */
    /** all-gather of per-rank counts (MPI_Allgatherv; bytes = gathered
     *  total): its own calibrated fit where measured, else the all-gather */
    COMET_MODEL_ALLGATHERV,
    COMET_MODEL_NCOLL
} comet_model_coll;

/** Collective algorithms (chosen per topology: the cheapest applicable). */
typedef enum comet_model_alg {
    COMET_MODEL_ALG_NONE = 0, /**< p = 1 or nothing to move */
    COMET_MODEL_ALG_RING, /**< ring: 2(p-1) steps of n/p (all-reduce) */
    COMET_MODEL_ALG_TREE, /**< recursive doubling / halving (binomial tree) */
    COMET_MODEL_ALG_RABENSEIFNER, /**< reduce-scatter + all-gather, halving-doubling */
    COMET_MODEL_ALG_MESH, /**< 2-D mesh/torus: row phase then column phase */
    COMET_MODEL_ALG_DIRECT, /**< switch / fully connected: one exchange of n/p with every peer */
    COMET_MODEL_ALG_IN_NETWORK, /**< in-network reduction (switch or NoC routers) */
    COMET_MODEL_ALG_FIT, /**< calibrated alpha/beta/gamma fit (CPU systems) */
    COMET_MODEL_NALG
} comet_model_alg;

/** Maximum calibrated collective fits in a description. */
#define COMET_MODEL_MAX_FITS 48

/**
 * One calibrated collective: T = a alpha + b beta + c gamma with the
 * algorithm's structure coefficients (comet_model_coll_row), in seconds.
 */
typedef struct comet_model_coll_fit {
    comet_model_coll coll; /**< collective */
    char alg[40]; /**< algorithm name (MPICH's, e.g. recursive_doubling) */
    double alpha_s; /**< latency per message (s) */
    double beta_s; /**< seconds per byte moved */
    double gamma_s; /**< seconds per byte reduced */
    double from_bytes; /**< message size from which this segment applies */
    /* --- appended --- */
    char transport[32]; /**< link the fit was measured on ("shm", "tcp:dl0"; "" = shm) */
    int ranks; /**< rank count it was measured with (0: unknown) */
} comet_model_coll_fit;

/** Calibrated link parameters of a CPU system (all optional; 0 = absent). */
typedef struct comet_model_links {
    double p2p_alpha_s; /**< Hockney point-to-point latency (s) */
    double p2p_beta_s; /**< Hockney seconds per byte */
    int nfits; /**< collective fits */
    comet_model_coll_fit fits[COMET_MODEL_MAX_FITS]; /**< per collective and algorithm */
} comet_model_links;

/**
 * What one instance of a memory level is shared by (schema v2 `shared_by`).
 * DEFAULT keeps the v1 reading: DRAM shared by all clusters on an
 * accelerator and per node on a CPU, the global buffer per cluster, the
 * local buffer per core.
 */
typedef enum comet_model_share {
    COMET_MODEL_SHARE_DEFAULT = 0, /**< v1 reading (see above) */
    COMET_MODEL_SHARE_CORE, /**< one instance per core */
    COMET_MODEL_SHARE_CLUSTER, /**< one per cluster */
    COMET_MODEL_SHARE_CHIP, /**< one per chip (all its clusters) */
    COMET_MODEL_SHARE_NODE, /**< one per node (all chips of a node) */
    COMET_MODEL_SHARE_SYSTEM /**< one for the whole system */
} comet_model_share;

/** Data types with their own compute rate (schema v2 `compute`). */
typedef enum comet_model_dtype {
    COMET_MODEL_FP32 = 0,
    COMET_MODEL_TF32,
    COMET_MODEL_FP16,
    COMET_MODEL_BF16,
    COMET_MODEL_FP8,
    COMET_MODEL_INT8,
    COMET_MODEL_NDTYPE
} comet_model_dtype;

/** Engines of a chip, as bits of comet_model_hw.overlap. */
enum {
    COMET_MODEL_ENGINE_GEMM = 1, /**< GEMM engine (systolic array, tensor cores, FMA units) */
    COMET_MODEL_ENGINE_VECTOR = 2, /**< vector / SIMD unit */
    COMET_MODEL_ENGINE_MEMORY = 4, /**< DMA / memory transfers */
    COMET_MODEL_ENGINE_NETWORK = 8, /**< inter-cluster / inter-chip links */
    COMET_MODEL_ENGINE_STATED = 16 /**< the description states its overlap (an empty list or
                                      `none`: every engine in series) */
};

/** One memory level. */
typedef struct comet_model_mem {
    double capacity; /**< bytes per instance */
    double bw; /**< bytes/cycle per instance (DRAM: total) */
    double read_pj; /**< pJ per access */
    double write_pj; /**< pJ per access */
    double access_bytes; /**< bytes per access */
    double core_bw; /**< bytes/cycle one core can draw from this level (0: no per-core limit):
                         on a CPU a single core reaches far less DRAM bandwidth than all */
    double write_bw; /**< bytes/cycle of stores alone (a fill, as BLAS clearing C; 0: unknown,
                          taken as half of bw: a read for ownership and a write per line) */
    double core_write_bw; /**< bytes/cycle of stores alone one core reaches (0: no limit) */
    /* --- schema v2 --- */
    comet_model_share shared_by; /**< what one instance serves (DEFAULT: v1 reading) */
    comet_model_steps eff_by_mb; /**< bandwidth efficiency by transfer size in MB (system model) */
} comet_model_mem;

/** Bandwidth (bytes/cycle) a level serves to `cores` cores: its bw, capped
 *  at cores x core_bw when a per-core limit is given. */
double comet_model_level_bw(const comet_model_mem *m, double cores);

/** Bandwidth (bytes/cycle) of stores alone a level serves to `cores` cores:
 *  write_bw capped at cores x core_write_bw; where write_bw is not given,
 *  half of comet_model_level_bw (each line read for ownership, then written). */
double comet_model_level_write_bw(const comet_model_mem *m, double cores);

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

/** Most row widths a row-pass table holds (comet_model_hw.row_tab_w). */
#define COMET_MODEL_ROW_TAB 8

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
    comet_model_steps gemm_eff_by_gflop; /**< GEMM efficiency by a GEMM's GFLOP (no grid) */
    comet_model_grid grid; /**< measured efficiency (calibrated) */
    comet_model_grid fused_grid; /**< efficiency of the fused kernels' own GEMM (gemm.fused_grid;
                                      nt == 0: absent, fused mappings use grid) */
    double mac_pj; /**< pJ per MAC */
    /** Fused CPU kernels: rows of the GEMM micro-tile (gemm.fused_micro_rows; 0 =
     *  not modelled) and of its edge tile (gemm.fused_micro_edge; 0 = the same).
     *  A row block of m rows computes floor(m/rows) tiles plus one edge tile
     *  (edge rows if the rest fits, else rows): a short block wastes lanes. */
    double fused_micro_rows, fused_micro_edge;
    int simd_width; /**< vector lanes */
    double vop_cycles[COMET_MODEL_NVOP]; /**< cycles per vector instruction */
    double vop_pj[COMET_MODEL_NVOP]; /**< pJ per element op */
    /** Fixed cycles per row of a row-reduction chain (vector.row_cycles; 0 = none):
     *  calls, horizontal reductions, the row's scalar work. Charged once per
     *  row, and once per row per KV tile in fused attention. */
    double row_cycles;
    double bytes_per_elem; /**< on-chip datatype size */
    json_t *calibration; /**< optional fit quality/provenance (owned), ignored by the model */
    /* --- appended fields (schema v1 extensions; zero = default) --- */
    double io_bytes_per_elem; /**< bytes per element of DRAM operands/results (0: bytes_per_elem) */
    double lb_input, lb_weight, lb_output; /**< local buffer partition in bytes (0: shared) */
    int n_outer; /**< extra network levels above cluster_net (clusters = product of levels) */
    comet_model_net outer_net[COMET_MODEL_NET_LEVELS - 1]; /**< outer levels, innermost first */
    comet_model_links links; /**< calibrated p2p/collective parameters (CPU systems) */
    double ln_row_cycles; /**< LayerNorm's fixed cycles per row (vector.ln_row_cycles; 0:
                               row_cycles, which is softmax's) */
    /** The measured row passes' cycles per element, in cache (vector.row_elem_cycles:
     *  softmax's max, exp-sum and scale loops; vector.ln_row_elem_cycles: LayerNorm's
     *  mean, deviation and apply loops; 0: not measured, the per-op sum stands). Charged
     *  per element in place of the sum of the per-op costs for an op whose row pass is
     *  that kernel's (comet_model_opdesc.row_pass). */
    double row_elem_cycles, ln_row_elem_cycles;
    /* --- schema v2 (docs/hardware.md; a v1 file loads with these at their
     *     defaults, which reproduce the v1 reading) --- */
    int schema_version; /**< 1 or 2: the schema the description was written in */
    int chips; /**< chips in the system (0 or 1: one); clusters counts all chips' clusters */
    int clusters_per_chip; /**< clusters of one chip (0: clusters, i.e. one chip) */
    comet_model_mem mem2; /**< optional second off-chip tier (DDR beside HBM; capacity 0: none) */
    double peak_flops_dtype[COMET_MODEL_NDTYPE]; /**< peak FLOP/s of one chip per data type (0:
                                                      not given) */
    comet_model_dtype dtype; /**< data type the compound ops run in (bytes_per_elem matches) */
    double acc_bytes; /**< accumulator / statistics width in bytes (0: 4, fp32) */
    int execution; /**< system model: execution styles the chip runs, bit 0 kernel by kernel,
                        bit 1 dataflow (fused partitions); 0: not stated (both) */
    int overlap; /**< COMET_MODEL_ENGINE_* bits of the engines that run concurrently
                      (0: not stated; the v1 reading: GEMM and vector in series,
                      memory overlapped when a mapping double-buffers) */
    int energy_known; /**< per-access / per-op energies were given (0: energy is unknown,
                           reported as null / "n/a", never 0) */
    /** Capital cost (DFModel's cost model; 0: not given): a chip, a link per GB/s of its
     *  bandwidth, a switch port per GB/s, off-chip memory per GB/s of its bandwidth. */
    double cost_chip_usd, cost_link_usd_per_gbps, cost_switch_port_usd_per_gbps,
        cost_mem_usd_per_gbps;
    /** Provisioned power (DFModel's power model; 0: not given): a chip's TDP, and joules per
     *  GB moved times the provisioned GB/s for links, switch ports and memory. */
    double power_chip_w, power_link_j_per_gb, power_switch_port_j_per_gb, power_mem_j_per_gb;
    /** CPU: each core's first-level data cache inside the local buffer, bytes
     *  (memory.local_buffer.l1_bytes; 0: not given). The gms model asks whether a
     *  tile's buffers stay in it between the fused gather, the GEMM and the scatter. */
    double l1_bytes;
    /** CPU: cycles one OpenMP parallel region of T > 1 threads costs beyond its work
     *  (the team's fork and the join barrier; gemm.parallel_region_cycles, 0: none).
     *  calibrate fits it as the intercept of the fused grid's T-thread times against
     *  its 1-thread times over the busiest thread's rows. Charged per region the CPU
     *  kernels open at T > 1 (comet_model_parallel_regions). */
    double par_region_cycles;
    /** CPU: the fused distributed LayerNorm's local passes (kernels/dist.c: row sums,
     *  squared deviations in double with one dependent add per element, the apply in
     *  double) per row and per element in cache (vector.dist_ln_row_cycles,
     *  vector.dist_ln_elem_cycles; 0: not measured, the LayerNorm row pass stands). */
    double dist_ln_row_cycles, dist_ln_elem_cycles;
    /** CPU: the row passes' measured cycles per row at several row widths
     *  (vector.row_pass_widths; [0] softmax, [1] LayerNorm; n 0: not measured, the
     *  line row_cycles + row_elem_cycles x width stands). A row of width w costs the
     *  piecewise-linear interpolation of these points (beyond the widest, its last
     *  segment's slope): rows wider than L1 cost more per element than the narrow
     *  rows the line is fitted on (Zen 4, softmax: 0.81 cycles per element fitted on
     *  16-256, 0.97 measured at 4096). */
    int row_tab_n[2];
    double row_tab_w[2][COMET_MODEL_ROW_TAB], row_tab_cycles[2][COMET_MODEL_ROW_TAB];
    /** CPU: the fraction of a fused epilogue's streamed result stores hidden under its
     *  row loop (vector.store_hidden, 0..1; 0: not measured, the loop waits for every
     *  store, the reading before it was measured). calibrate measures the row passes
     *  from an L2-resident tile writing either into cache or streamed beyond the LLC. */
    double store_hidden;
} comet_model_hw;

/** Nodes joined by one network level (dims product). */
int comet_model_net_nodes(const comet_model_net *net);

/**
 * Structure coefficients of a collective algorithm (Thakur, Rabenseifner &
 * Gropp 2005): T = row[0] alpha + row[1] beta + row[2] gamma for p ranks and
 * `bytes` per rank (all-gather: per-rank contribution). alg is an MPICH
 * algorithm name (recursive_doubling, reduce_scatter_allgather, ring,
 * tsp_ring, binomial, brucks, pairwise, recursive_halving, ...).
 * @return 0, or -EINVAL for an unknown collective/algorithm or p < 1.
 */
int comet_model_coll_row(comet_model_coll coll, const char *alg, double bytes, int p, double row[3],
    const char **formula);

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
/** Name of a collective ("allreduce", ...). */
const char *comet_model_coll_name(comet_model_coll c);
/** Name of an algorithm ("ring", ...). */
const char *comet_model_alg_name(comet_model_alg a);
/** Parses a collective name; -EINVAL if unknown. */
int comet_model_coll_parse(const char *s, comet_model_coll *c);

/**
 * The calibrated link fits of one transport ("shm", "tcp:dl0": the `link`
 * a record names) from a calibrated profile: a fit applies only to the link
 * it was measured on. @return 0, or -ENOENT when the profile has no fit for
 * that transport (*out is then empty).
 */
int comet_model_links_for_transport(
    const comet_model_hw *hw, const char *transport, comet_model_links *out);

/**
 * Core placement of the rank processes of a shared-memory link. A VM host
 * places two vCPUs on one shared cache or on two, and the shared-memory
 * transport moves its data through those caches: a record whose
 * core-to-core readings (c2c_ns, median) lie above COMET_MODEL_APART_FACTOR
 * times the link's floor (the lowest reading of the calibration's records
 * of that link) ran with its cores apart, and is fitted and predicted as
 * the link `<link>/apart` (COMET_MODEL_LINK_APART).
 */
#define COMET_MODEL_APART_FACTOR 2.0
/** Suffix of a shared-memory link measured with its cores apart. */
#define COMET_MODEL_LINK_APART "/apart"

/** 1 when link names a shared-memory transport ("shm", or "" = shm). */
int comet_model_link_is_shm(const char *link);

/**
 * 1 when the median of n core-to-core readings (ns) lies above
 * COMET_MODEL_APART_FACTOR x floor_ns; 0 when it does not, or when there is
 * no reading or no floor.
 */
int comet_model_c2c_apart(const double *c2c, size_t n, double floor_ns);

/**
 * The link whose fits predict a record that ran over `link` with these
 * core-to-core readings: `link`, or `link/apart` when the record's cores
 * were apart by the floor the profile's calibration keeps for that link
 * (calibration.fits.link_states) and the profile has fits of it.
 * @return 0 (out = link), 1 (out = link/apart), 2 (apart, but the profile
 * has no fit of that placement: out = link), or -EINVAL.
 */
int comet_model_record_link(
    const comet_model_hw *hw, const char *link, const double *c2c, size_t n, char *out, size_t len);

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
/** Resolves a preset name to a path: comet_util_config_path("hw", ...). */
int comet_model_preset_path(const char *name, char *path, size_t len);
/**
 * A scaled CPU system: `nodes` clusters of `cores_per_node` cores of the
 * calibrated machine `base`, joined by `net` (NULL keeps base's network).
 */
int comet_model_hw_scale(const comet_model_hw *base, int cores_per_node, int nodes,
    const comet_model_net *net, comet_model_hw *out);
/** Bandwidth (bytes/cycle) of the level a working set of `bytes` lives in on
 *  a CPU node (caches are transparent): private L2s, the LLC, or DRAM. */
double comet_model_cpu_level_bw(const comet_model_hw *hw, double bytes, double cores);
/** GEMM efficiency at (M, N, K, threads) from the grid or the flat value. */
double comet_model_gemm_eff(const comet_model_hw *hw, double M, double N, double K, double threads);
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

/** Others' busy fraction above which a record's samples ran beside other tenants:
 *  the bench's idle-gate threshold (DESIGN section 4; bench --gate-threshold). */
#define COMET_MODEL_BUSY_MAX 0.10

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
 * validate counts it (beyond COMET_MODEL_BUSY_MAX: "busy"): load.busy_during;
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
    int busy_rows; /**< rows measured beside busy tenants (busy > COMET_MODEL_BUSY_MAX) */
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

/**
 * Loads a workload file (configs/workloads/NAME.yaml or a path):
 * {op: gemm_softmax, shape: {M: .., N: .., K: ..}} or attention with
 * {heads, lq, lk, d, causal}. Errors name file:line and field.
 */
int comet_model_workload_load(const char *name, comet_model_problem *pb, char *err, size_t errlen);

/**
 * Loads a mapping file ({fused: true, binding: pipelined, cluster_split:
 * {M, N, K, H}, core_split: {M, N}, tile_m, tile_k, one_pass}) as written by
 * comet_model_mapping_json().
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
/* Validation statistics and prediction intervals                       */
/* ------------------------------------------------------------------ */

/** Quantile q of v[0..n-1] by linear interpolation between order statistics
 *  (sorts v; the one convention of validate and the report). NaN if n < 1. */
double comet_model_quantile(double *v, int n, double q);

/** Error statistics of one op and variant over validation rows. */
typedef struct comet_model_vgroup {
    char op[24], variant[24]; /**< group */
    int n; /**< rows */
    double median_rel_err, p90_rel_err; /**< of |predicted - measured| / measured */
    double bias; /**< median of predicted / measured - 1 (positive: pessimistic) */
} comet_model_vgroup;

/**
 * Per op and variant (in order of first appearance) error statistics of
 * validation rows, with comet_model_quantile's convention: what validate and
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
