/**
 * @file comet_model_hw.h
 * @brief The hardware a model prediction runs on: a description (a preset,
 *        configs/hw/NAME.yaml, or a calibrated profile; docs/hardware.md),
 *        its loader and JSON form, its networks, memory levels and GEMM
 *        grids, the collectives' names and structure rows, and the
 *        calibrated links a profile carries.
 *
 * Units: time in cycles of the description's clock (converted to seconds
 * with clock_ghz), sizes in bytes, bandwidths in bytes/cycle, energies in pJ;
 * the loader converts every quantity with a unit once (docs/hardware.md).
 */
#ifndef COMET_MODEL_HW_H
#define COMET_MODEL_HW_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

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
    /* --- appended (#37) --- */
    /** Channel (flit) width in bits and the cycles each flit spends entering the channel
     *  (HISIM's queuing delay t_enq, IEEE 10844846, which COMET's network.cpp charges per
     *  flit: size x bits / channel_width x queuing_delay). Both stated, a link carries at
     *  most channel_bits / 8 / flit_cycles bytes/cycle: the serialisation of a transfer
     *  over the channel (Dally & Towles, Principles and Practices of Interconnection
     *  Networks, 2004, ch. 3: T = H t_r + L / b with b the channel's rate). 0: not stated
     *  (link_bw alone). */
    double channel_bits, flit_cycles;
} comet_model_net;

/** Bytes/cycle one link of net carries: link_bw, or less where its channel
 *  serialises flits more slowly (channel_bits / 8 / flit_cycles). */
double comet_model_net_bw(const comet_model_net *net);

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

/** Pieces of a calibrated point-to-point fit kept per link. */
#define COMET_MODEL_MAX_P2P_SEGS 8

/** Calibrated link parameters of a CPU system (all optional; 0 = absent). */
typedef struct comet_model_links {
    double p2p_alpha_s; /**< Hockney point-to-point latency (s): the fit's first piece's */
    double p2p_beta_s; /**< Hockney seconds per byte: the first piece with a rate (> 0) */
    int nfits; /**< collective fits */
    comet_model_coll_fit fits[COMET_MODEL_MAX_FITS]; /**< per collective and algorithm */
    /* --- appended --- */
    /** every piece of the point-to-point fit, ascending from_bytes (0: only
     *  the Hockney pair above): a message above the link's eager ->
     *  rendezvous step (or a tbf bucket) costs the piece it falls in */
    int p2p_nseg;
    double p2p_seg_from_bytes[COMET_MODEL_MAX_P2P_SEGS]; /**< size from which a piece applies */
    double p2p_seg_alpha_s[COMET_MODEL_MAX_P2P_SEGS]; /**< its latency (s) */
    double p2p_seg_beta_s[COMET_MODEL_MAX_P2P_SEGS]; /**< its seconds per byte */
    /** the paired exchange (calibration.fits.exchange: two ranks each send
     *  the other a message at once, as 1F1B pairs an activation going
     *  forward with a gradient coming back), pieces as the point-to-point
     *  fit's; 0 pieces: not measured */
    int xch_nseg;
    double xch_seg_from_bytes[COMET_MODEL_MAX_P2P_SEGS]; /**< size from which a piece applies */
    double xch_seg_alpha_s[COMET_MODEL_MAX_P2P_SEGS]; /**< its latency (s) */
    double xch_seg_beta_s[COMET_MODEL_MAX_P2P_SEGS]; /**< its seconds per byte (each message) */
} comet_model_links;

/**
 * A point-to-point message of `bytes` over calibrated links: the piece of
 * the fit the size falls in (the last piece whose from_bytes <= bytes), else
 * the Hockney pair alpha + bytes beta. 0 when the links have no
 * point-to-point fit (p2p_beta_s <= 0 and no pieces).
 */
double comet_model_links_p2p_s(const comet_model_links *l, double bytes);

/**
 * A paired exchange of `bytes` each way over calibrated links (both
 * messages moved): the piece of the exchange fit the size falls in. 0 when
 * the links have no exchange fit.
 */
double comet_model_links_exchange_s(const comet_model_links *l, double bytes);

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
/** Most candidate GEMM tiles a description states (gemm.tiles). */
#define COMET_MODEL_TILES_MAX 8

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
    /** gemm.mapping: spatial (1): a dataflow partition maps each of its GEMMs
     *  onto arrays of its own, the output width across an array's R rows
     *  (lanes), the token tile across its C columns (stages), the reduction
     *  streamed one step a cycle (an RDU's pattern compute units); 0: shared,
     *  every GEMM has every array in turn */
    int sa_spatial;
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
    json_t *calibration; /**< a profile's calibration block (owned; NULL for presets): fit
                              quality and provenance, and the link fits per transport and the
                              core-to-core floors the model reads for records' links (links.c) */
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
    /** The local buffer's input, weight and output parts' own ports (bytes/cycle each;
     *  local_buffer.input_bw / weight_bw / output_bw; 0: the parts share lb.bw, one
     *  port). A step's operands fill the input and weight ports and its results and
     *  partial sums use the output port at the same time (#37; COMET's IBuffer,
     *  WBuffer and OBuffer are memories with their own parent/child bandwidths). */
    double lb_input_bw, lb_weight_bw, lb_output_bw;
    /** A GPU's GEMM tiling (gemm.tiles; 0: not modelled): the candidate output tiles
     *  (rows of C x columns of C) of its GEMM library's kernels. A GEMM of M x N (times a
     *  batch) runs as batch x ceil(M/tm) x ceil(N/tn) tiles, one thread block each, in
     *  waves of `cores` tiles (the SMs: one tile per SM at a time); tiles overhanging
     *  the matrix and the last wave's idle SMs compute nothing useful (tile and wave
     *  quantization). comet_model_gemm_wave_eff() gives the useful fraction with the
     *  best candidate. */
    int gemm_ntiles;
    double gemm_tile_m[COMET_MODEL_TILES_MAX], gemm_tile_n[COMET_MODEL_TILES_MAX];
    /** CPU: what reading a GEMM's K x N operand from DRAM adds to the grid's hot time
     *  (gemm.cold_read; cold_nn 0: not measured, the operand's bytes at the DRAM rate
     *  stand): cycles per byte of the operand at each (N, K) (cold_cpb[n * cold_nk + k]),
     *  measured as the blas_cold record less the blas record at M = cold_rows, one
     *  thread. BLAS packs the operand before it computes on it, row by row of N: a
     *  narrow operand streams slower than the triad (Zen 3 VM, K 1024 x N 256: 6 GB/s
     *  against 18). comet_model_cold_read_cpb() interpolates. */
    int cold_nn, cold_nk;
    double cold_rows, cold_N[COMET_MODEL_GRID_MAX], cold_K[COMET_MODEL_GRID_MAX];
    double cold_cpb[COMET_MODEL_GRID_MAX * COMET_MODEL_GRID_MAX];
    /** CPU: cycles per byte of K and V a one-query attention (a decode step's) takes
     *  with its KV cache in DRAM, one thread (gemm.cold_gemv_cycles_per_byte, from the
     *  fused_cold attention records; 0: not measured, the stream at the L2 rate and the
     *  DRAM read overlapped stand). */
    double cold_gemv_cpb;
} comet_model_hw;

/**
 * Cycles per byte that reading a K x N GEMM operand from DRAM adds to the GEMM
 * (gemm.cold_read), bilinear in log N and log K, clamped to the measured axes.
 * @return the cycles per byte, or NAN when the description has no cold_read.
 */
double comet_model_cold_read_cpb(const comet_model_hw *hw, double N, double K);

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

#ifdef __cplusplus
}
#endif
#endif /* COMET_MODEL_HW_H */
