/* COMET's own input files (d-matrix-ai/comet, arXiv 2509.00599): its four
 * YAML files (architecture, problem, mapping, constants) read into typed
 * structs, a COMET-compatible evaluation of them (COMET's latency and energy
 * formulas), and a translation into comet's own description and mapping. */
#ifndef COMET_COMETIO_H
#define COMET_COMETIO_H

#include <stddef.h>
#include <stdint.h>

#include "comet_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest name (tensor, level, op, constant) a COMET file may use. */
#define COMET_COMETIO_NAME 64
/** Most problem dimensions (COMET's examples use M, N, K). */
#define COMET_COMETIO_MAX_DIMS 8
/** Most tensors one mapping node moves. */
#define COMET_COMETIO_MAX_MOVES 16
/** Most tensors of one basic operation. */
#define COMET_COMETIO_MAX_TENSORS 8

/** What kind of YAML file a document is, by its top-level keys. */
typedef enum comet_cometio_kind {
    COMET_COMETIO_NONE = 0, /**< not a COMET file */
    COMET_COMETIO_ARCH, /**< ComputeTiles / MemoryTypes / Hierarchy */
    COMET_COMETIO_PROBLEM, /**< problem: */
    COMET_COMETIO_MAPPING, /**< mapping: */
    COMET_COMETIO_CONSTANTS /**< const: */
} comet_cometio_kind;

/**
 * Which COMET file path is, by content (its top-level keys), or
 * COMET_COMETIO_NONE for comet's own files and anything unreadable.
 */
comet_cometio_kind comet_cometio_detect(const char *path);
/** "architecture", "problem", "mapping", "constants" or "none". */
const char *comet_cometio_kind_name(comet_cometio_kind k);

/* ------------------------------------------------------------------ */
/* Architecture                                                        */
/* ------------------------------------------------------------------ */

/** A ComputeTiles entry (class mac: a systolic array; simd: a vector unit). */
typedef struct comet_cometio_compute {
    char name[COMET_COMETIO_NAME]; /**< SystolicArray, VSIMD, GEMM, ... */
    int is_simd; /**< class simd (else mac) */
    double datawidth; /**< bits */
    double capacity; /**< elements */
    double compute_width; /**< bits (mac) or lanes (simd) */
    double compute_opc; /**< processing units */
    double compute_latency; /**< cycles per op */
    double startup_latency; /**< cycles */
    double compute_energy; /**< pJ per op (COMET's own MAC energy is fixed) */
    double array_rows, array_cols; /**< PEs of one systolic array */
    double num_sa_rows, num_sa_cols; /**< systolic arrays per core */
    int line; /**< source line */
} comet_cometio_compute;

/** A MemoryTypes entry. Bandwidths in bytes/cycle, energies in pJ per
 *  access of `width` bytes. */
typedef struct comet_cometio_memory {
    char name[COMET_COMETIO_NAME]; /**< type name */
    int is_dram; /**< class DRAM */
    double width, depth, ports; /**< bytes per word, words, ports */
    int double_buffered, reduction, ports_shared, dma_contiguous; /**< flags */
    double reduction_cost; /**< COMET's reduction_cost (1 unless given) */
    double parent_read_bw, parent_write_bw, child_read_bw, child_write_bw; /**< B/cycle */
    double link_read_bw, link_write_bw; /**< B/cycle between sibling instances */
    double parent_read_pj, parent_write_pj, child_read_pj, child_write_pj; /**< pJ/access */
    int line; /**< source line */
} comet_cometio_memory;

/** The network attributes of a hierarchy edge (a level's `attributes`). */
typedef struct comet_cometio_net {
    int mesh_x, mesh_y; /**< instances as a 2-D mesh */
    double bw; /**< port bandwidth, B/cycle */
    double hop_latency; /**< cycles per hop */
    double queuing_delay; /**< cycles per enqueued channel word */
    double channel_width; /**< bits per cycle of one channel */
    int broadcast, reduction, link_transfers; /**< capabilities */
    int is_xbar; /**< connection_type XBar (else MeshNetwork) */
} comet_cometio_net;

/** Edge kinds of COMET's Hierarchy tree. */
typedef enum comet_cometio_edge {
    COMET_COMETIO_ROOT = 0,
    COMET_COMETIO_CONNECTS,
    COMET_COMETIO_FILLS,
    COMET_COMETIO_DRAINS
} comet_cometio_edge;

/** One level of the hierarchy (a name is one level: a compute engine
 *  reached by several edges is one level with several networks). */
typedef struct comet_cometio_level {
    char name[COMET_COMETIO_NAME]; /**< "GB" of "GB[0..3]" */
    char type[COMET_COMETIO_NAME]; /**< memory type or compute name */
    int is_compute; /**< a compute engine */
    int mem; /**< index into memories (-1 for compute) */
    int comp; /**< index into computes (-1 for memory) */
    int instances; /**< meshX * meshY of its first edge */
    comet_cometio_net link; /**< link network (link_transfers) */
    int line; /**< source line */
} comet_cometio_level;

/** A parent-to-child edge and its network. */
typedef struct comet_cometio_link {
    int parent, child; /**< level indices */
    comet_cometio_edge edge; /**< connects / fills / drains */
    comet_cometio_net net; /**< the child's attributes on this edge */
    int line; /**< source line */
} comet_cometio_link;

/** A COMET architecture file. */
typedef struct comet_cometio_arch {
    comet_cometio_compute *compute; /**< ComputeTiles */
    size_t n_compute;
    comet_cometio_memory *memory; /**< MemoryTypes */
    size_t n_memory;
    comet_cometio_level *level; /**< Hierarchy levels, root first */
    size_t n_level;
    comet_cometio_link *link; /**< Hierarchy edges */
    size_t n_link;
    char file[512]; /**< source path */
    char ignored[32][200]; /**< "file:line: key": attributes COMET does not read (it ignores them
                              too) */
    int n_ignored;
} comet_cometio_arch;

/* ------------------------------------------------------------------ */
/* Constants                                                           */
/* ------------------------------------------------------------------ */

/** One constant (COMET substitutes these symbols into the mapping). */
typedef struct comet_cometio_const {
    char name[COMET_COMETIO_NAME]; /**< symbol */
    char value[COMET_COMETIO_NAME]; /**< its text (a number, a dimension name, a loop order) */
    int line; /**< source line */
} comet_cometio_const;

/** A COMET constants file (`const:`). */
typedef struct comet_cometio_consts {
    comet_cometio_const *c; /**< entries in file order */
    size_t n;
    char file[512]; /**< source path */
} comet_cometio_consts;

/* ------------------------------------------------------------------ */
/* Problem                                                             */
/* ------------------------------------------------------------------ */

/** A tensor of a basic operation: its ranks project problem dimensions. */
typedef struct comet_cometio_tensor {
    char name[COMET_COMETIO_NAME]; /**< tensor name */
    int rw; /**< read-write (the op's output) */
    int n_rank; /**< ranks */
    int rank_dim[COMET_COMETIO_MAX_DIMS]; /**< dimension index of each rank */
} comet_cometio_tensor;

/** Basic operation types COMET's parser accepts. */
typedef enum comet_cometio_optype {
    COMET_COMETIO_GEMM = 0,
    COMET_COMETIO_CONV,
    COMET_COMETIO_SOFTMAX,
    COMET_COMETIO_MAX,
    COMET_COMETIO_EXP,
    COMET_COMETIO_DIV,
    COMET_COMETIO_ADD,
    COMET_COMETIO_MULT,
    COMET_COMETIO_SQRT,
    COMET_COMETIO_ROWSUM,
    COMET_COMETIO_ROWMAX,
    COMET_COMETIO_OPTYPES
} comet_cometio_optype;
/** COMET's spelling of an op type ("gemm", "rowmax", ...). */
const char *comet_cometio_optype_name(comet_cometio_optype t);

/** A basic operation of the problem. */
typedef struct comet_cometio_op {
    char name[COMET_COMETIO_NAME]; /**< op name (tags refer to it) */
    char ins[COMET_COMETIO_MAX_TENSORS][COMET_COMETIO_NAME]; /**< input tensor names */
    int n_ins;
    char out[COMET_COMETIO_NAME]; /**< output tensor */
    comet_cometio_tensor tensor[COMET_COMETIO_MAX_TENSORS]; /**< tensors with projections */
    int n_tensor;
    int line; /**< source line */
} comet_cometio_op;

/** A COMET problem file: a compound op as a chain of basic ops. */
typedef struct comet_cometio_problem {
    char dim[COMET_COMETIO_MAX_DIMS][COMET_COMETIO_NAME]; /**< dimension names */
    uint64_t size[COMET_COMETIO_MAX_DIMS]; /**< instance sizes (constants substituted) */
    int n_dim;
    char io_ins[COMET_COMETIO_MAX_TENSORS][COMET_COMETIO_NAME]; /**< compound inputs */
    int n_io_ins;
    char io_outs[COMET_COMETIO_MAX_TENSORS][COMET_COMETIO_NAME]; /**< compound outputs */
    int n_io_outs;
    comet_cometio_op *op; /**< basic operations in file order */
    size_t n_op;
    char file[512]; /**< source path */
} comet_cometio_problem;

/** Index of dimension name in pb, or -1. */
int comet_cometio_dim(const comet_cometio_problem *pb, const char *name);
/** The op named name, or NULL. */
const comet_cometio_op *comet_cometio_find_op(const comet_cometio_problem *pb, const char *name);

/* ------------------------------------------------------------------ */
/* Mapping                                                             */
/* ------------------------------------------------------------------ */

/** Mapping node types (COMET's node_type). */
typedef enum comet_cometio_ntype {
    COMET_COMETIO_TILE = 0, /**< DataMovement_Tile: a temporal or spatial loop level */
    COMET_COMETIO_OP, /**< Operation: a basic op on a compute engine */
    COMET_COMETIO_COLL, /**< CollectiveOperation */
    COMET_COMETIO_BINDING /**< inter_tile_binding */
} comet_cometio_ntype;

/** Explicit collective types (COMET's stype_t). */
typedef enum comet_cometio_coll {
    COMET_COMETIO_BROADCAST = 0,
    COMET_COMETIO_REDUCTION,
    COMET_COMETIO_ALLGATHER,
    COMET_COMETIO_ALLREDUCE,
    COMET_COMETIO_SCATTER,
    COMET_COMETIO_GATHER
} comet_cometio_coll;
/** COMET's spelling of a collective type. */
const char *comet_cometio_coll_name(comet_cometio_coll t);

/** Inter-tile bindings. */
typedef enum comet_cometio_binding {
    COMET_COMETIO_SEQUENTIAL = 0,
    COMET_COMETIO_PIPELINE,
    COMET_COMETIO_SHARING,
    COMET_COMETIO_PARALLEL
} comet_cometio_binding;

/** One tensor's movement at a DataMovement_Tile node. */
typedef struct comet_cometio_move {
    char tensor[COMET_COMETIO_NAME]; /**< tensor */
    int target, child; /**< level indices (parent memory, child memory or compute) */
    int precision; /**< bits */
    int rmw, wb_output; /**< read-modify-write, write back to target */
    char tag[COMET_COMETIO_NAME]; /**< basic op it belongs to */
    uint64_t factor[2][COMET_COMETIO_MAX_DIMS]; /**< [X, Y] (temporal: [0]) per dimension */
} comet_cometio_move;

/** A mapping node. */
typedef struct comet_cometio_node {
    comet_cometio_ntype type; /**< node type */
    int line; /**< source line */
    /* tile */
    int spatial; /**< spatial (else temporal) */
    int n_rows; /**< factor rows: 1 temporal, 2 spatial (X, Y) */
    comet_cometio_move move[COMET_COMETIO_MAX_MOVES]; /**< per tensor */
    int n_move;
    int perm[COMET_COMETIO_MAX_DIMS]; /**< loop order, inner to outer (dimension indices) */
    int n_perm;
    /* operation */
    comet_cometio_optype op_type; /**< op type */
    char op_name[COMET_COMETIO_NAME]; /**< problem op it runs */
    uint64_t prim[COMET_COMETIO_MAX_DIMS]; /**< TilePrimitive per dimension (0 absent) */
    char op_tensor[COMET_COMETIO_MAX_TENSORS][COMET_COMETIO_NAME]; /**< the op's tensors */
    int n_op_tensor; /**< tensors */
    uint64_t steps[COMET_COMETIO_MAX_TENSORS][COMET_COMETIO_MAX_DIMS]; /**< TileSteps per tensor */
    int red_dim; /**< reduction dimension (-1: none) */
    uint64_t red_factor; /**< reduction factor */
    int op_rmw, specd; /**< compute_attributes */
    /* collective */
    comet_cometio_coll coll; /**< collective type */
    comet_cometio_optype red_op; /**< reduction op (max, add, mult) */
    int coll_dim; /**< dimension */
    int coll_target; /**< level */
    int src[4], n_src, dest[4], n_dest; /**< levels */
    char in_tensor[COMET_COMETIO_NAME], out_tensor[COMET_COMETIO_NAME];
    int coll_precision; /**< bits */
    uint64_t spatial_factor; /**< 0: the source instances */
    char tag[COMET_COMETIO_NAME]; /**< collective tag */
    /* binding */
    comet_cometio_binding binding;
    /* tree */
    struct comet_cometio_node **kid; /**< children in file order */
    size_t n_kid;
    struct comet_cometio_node *parent;
} comet_cometio_node;

/** A COMET mapping file, resolved against its arch, problem and constants. */
typedef struct comet_cometio_mapping {
    comet_cometio_node *root; /**< the top node */
    char file[512]; /**< source path */
} comet_cometio_mapping;

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

/** A COMET run's four inputs. */
typedef struct comet_cometio_inputs {
    comet_cometio_arch arch;
    comet_cometio_consts consts;
    comet_cometio_problem problem;
    comet_cometio_mapping mapping;
} comet_cometio_inputs;

/**
 * Reads COMET's four files (constants first: the problem and mapping
 * substitute its symbols). consts_path may be NULL when the problem and
 * mapping use no symbol. Errors name file:line and the field:
 * `comet: FILE:LINE: FIELD: what`, without the "comet: " prefix.
 * @return 0 or a negative errno; free with comet_cometio_free().
 */
int comet_cometio_load(const char *arch_path, const char *problem_path, const char *mapping_path,
    const char *consts_path, comet_cometio_inputs *in, char *err, size_t errlen);
/** Frees what comet_cometio_load() allocated (a zeroed struct is fine). */
void comet_cometio_free(comet_cometio_inputs *in);

/** Index of the level named name, or -1. */
int comet_cometio_level_find(const comet_cometio_arch *a, const char *name);
/**
 * The network of the edge parent -> child (the child's attributes on
 * that edge); parent == child: the level's link network. NULL if none.
 */
const comet_cometio_net *comet_cometio_net_of(const comet_cometio_arch *a, int parent, int child);

/* ------------------------------------------------------------------ */
/* COMET-compatible evaluation                                         */
/* ------------------------------------------------------------------ */

/** Most rows of a breakdown. */
#define COMET_COMETIO_MAX_TERMS 64

/** One row of COMET's cycle table: a unit (memory levels of a node, a
 *  basic op's compute window, a collective) and its cycles. */
typedef struct comet_cometio_term {
    char unit[160]; /**< "DRAM-", "OB-IB-WB-", "GEMM", "ALLREDUCE-max", ... */
    double cs; /**< compulsory stall (ramp-up + ramp-down), cycles */
    double os; /**< optional stall (transfers not hidden), cycles */
    double tmw; /**< compute window (a basic op's compute), cycles */
} comet_cometio_term;

/** One row of the energy breakdown. */
typedef struct comet_cometio_eterm {
    char unit[160]; /**< a memory level, "SE-EXP1", "GB<->GB", ... */
    double pj; /**< picojoules */
} comet_cometio_eterm;

/** A COMET-compatible evaluation of one mapping. */
typedef struct comet_cometio_result {
    double cycles; /**< total cycles (COMET's "Total Cycles") */
    double energy_pj; /**< total energy (COMET's "Total Energy") */
    comet_cometio_term term[COMET_COMETIO_MAX_TERMS]; /**< cycle rows by unit */
    int n_term;
    comet_cometio_eterm eterm[COMET_COMETIO_MAX_TERMS]; /**< energy rows by unit */
    int n_eterm;
} comet_cometio_result;

/**
 * Evaluates a COMET mapping with COMET's own formulas (d-matrix-ai/comet at
 * 917af0d: src/analysis/{nest_analysis,data_movement,cost_walker}.cpp,
 * src/arch/{arch_cost,network,systolic_array,vsimd_compute}.cpp): per-tile
 * transfer time as the slower of the target and child ports plus the mesh
 * NoC's hop and queuing terms, windows shared by tensors on one port,
 * ramp-up and ramp-down, compulsory stalls of dependent tensors under
 * sequential bindings, explicit collectives exposed, systolic fill/drain per
 * core-level tile, SIMD cost per instruction; energy per access. noc_energy
 * turns on COMET's --calc_noc_energy. Refuses (naming file:line) what the
 * port does not cover: pipeline/sharing/parallel bindings, XBar networks,
 * meshes outside COMET's hop table.
 * @return 0 or a negative errno.
 */
int comet_cometio_evaluate(const comet_cometio_inputs *in, int noc_energy,
    comet_cometio_result *out, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Translation into comet's own description, problem and mapping       */
/* ------------------------------------------------------------------ */

/** Most fields one translation lists as dropped. */
#define COMET_COMETIO_MAX_DROPPED 48

/** COMET inputs restated in comet's own terms. */
typedef struct comet_cometio_translation {
    char hw_yaml[6144]; /**< a hardware description (docs/hardware.md schema) */
    comet_model_problem pb; /**< the compound op */
    comet_model_mapping mp; /**< the mapping */
    char dropped[COMET_COMETIO_MAX_DROPPED][200]; /**< "file:line: field: why" per dropped field */
    int n_dropped;
} comet_cometio_translation;

/**
 * Restates COMET inputs as comet's description (levels: DRAM, global
 * buffer per cluster, local buffers per core; the first networks as the
 * cluster and core meshes), problem (a GEMM-Softmax or GEMM-LayerNorm chain
 * of basic ops) and mapping (fusion, cluster and core splits, rows and K per
 * global-buffer step), listing every field the restatement drops. Refuses,
 * naming file:line and field, what comet's model cannot express (an op
 * chain outside its vocabulary, an architecture without the three levels).
 * @return 0 or -EINVAL.
 */
int comet_cometio_translate(
    const comet_cometio_inputs *in, comet_cometio_translation *tr, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
