/**
 * @file comet_system.h
 * @brief System model: whole LLM workloads (training, prefill, decode) on
 *        many chips joined by a multi-level network, after DFModel's
 *        two-level mapping (inter-chip TP/PP/DP, intra-chip fused
 *        partitions) and Calculon's step accounting.
 *
 * A system is a hardware description (comet_model_hw, schema v2) whose
 * clusters are grouped into chips (clusters_per_chip) and whose network
 * levels above the chip join the chips. A workload is a transformer
 * description (configs/workloads/NAME.yaml with `hidden`, `heads`, ...).
 * A configuration pins the parallel degrees, their order over the network
 * levels, the microbatch, recomputation, sequence parallelism and the
 * execution style; comet_system_eval() costs it, comet_system_explore()
 * searches every configuration exhaustively. Units: seconds, bytes, FLOP.
 * Formulas and sources: docs/system.md.
 */
#ifndef COMET_SYSTEM_H
#define COMET_SYSTEM_H

#include "comet_model.h"

#include <jansson.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What the workload runs. */
typedef enum comet_system_phase {
    COMET_SYSTEM_TRAIN = 0, /**< forward, backward, weight gradients, optimizer step */
    COMET_SYSTEM_PREFILL, /**< inference: the prompt, writing the KV cache */
    COMET_SYSTEM_DECODE, /**< inference: one token per sequence, reading the KV cache */
    COMET_SYSTEM_FORWARD /**< the forward pass of the batch, keeping no KV cache (evaluation,
                            scoring; the graph DFModel's Table VI runs) */
} comet_system_phase;

/** Activation recomputation (Korthikanti et al. 2022). */
typedef enum comet_system_recompute {
    COMET_SYSTEM_RECOMPUTE_NONE = 0, /**< every activation the backward needs is stored */
    COMET_SYSTEM_RECOMPUTE_SELECTIVE, /**< the attention core (scores, softmax, dropout) is
                                          recomputed in the backward */
    COMET_SYSTEM_RECOMPUTE_FULL /**< only each layer's input is stored; the forward is
                                     run again in the backward */
} comet_system_recompute;

/** How kernels run on a chip. */
typedef enum comet_system_exec {
    COMET_SYSTEM_EXEC_KERNEL = 0, /**< kernel by kernel: every kernel reads its inputs from and
                                      writes its output to off-chip memory */
    COMET_SYSTEM_EXEC_DATAFLOW /**< kernels grouped into fused partitions (a spatial pipeline);
                                    only partition inputs/outputs and stored activations
                                    touch off-chip memory */
} comet_system_exec;

/** A transformer (decoder-only, pre-LayerNorm) description. */
typedef struct comet_system_llm {
    char name[64]; /**< preset or file name */
    char source[256]; /**< where the numbers come from */
    int hidden; /**< model width h */
    int heads; /**< attention heads a */
    int head_dim; /**< d (a x d need not equal h) */
    int kv_heads; /**< g: key/value heads (GQA; = heads for multi-head attention) */
    int ffn; /**< feed-forward width f */
    int gated; /**< 1: SwiGLU (gate and up projections), 0: GELU */
    int layers; /**< transformer blocks */
    int seq; /**< sequence length (training / prompt) */
    int vocab; /**< vocabulary (embedding and LM head) */
    int global_batch; /**< sequences per step (training) or in flight (inference) */
    int microbatch; /**< default microbatch (0: searched) */
    double bytes_per_elem; /**< activations and weights (bf16: 2) */
    comet_model_dtype dtype; /**< compute type (its peak is used) */
    /** Dropout probability in training (0: none; its value beyond 0 changes no cost:
     *  the dropouts, their masks and the masks' bytes are there or not). */
    double dropout;
} comet_system_llm;

/**
 * Loads a transformer description (a preset name under configs/workloads/ or
 * a path). Errors name file:line and the field.
 * @return 0, -ENOENT, or -EINVAL.
 */
int comet_system_llm_load(const char *name, comet_system_llm *m, char *err, size_t errlen);
/** Parses one from text (file names the source in messages). */
int comet_system_llm_parse(
    const char *file, const char *text, size_t len, comet_system_llm *m, char *err, size_t errlen);
/** 1 if the workload file (preset name or path) describes a transformer, not a compound op. */
int comet_system_llm_is(const char *name);
/** Parameters of the model (weights of all layers, embeddings and LM head tied). */
double comet_system_llm_params(const comet_system_llm *m);

/** Maximum network levels joining chips. */
#define COMET_SYSTEM_LEVELS 4

/** One network level joining chips (innermost first). */
typedef struct comet_system_level {
    comet_model_net net; /**< its description (ring, switch, full; torus: two ring levels) */
    int size; /**< chips (groups of the inner levels) it joins */
} comet_system_level;

/** A system: chips joined by network levels, with what one chip can do. */
typedef struct comet_system {
    comet_model_hw hw; /**< the description (owns a copy of the measured GEMM grid only) */
    int chips; /**< chips in the system */
    double peak_flops; /**< FLOP/s of one chip in the workload's data type */
    double vector_flops; /**< element operations/s of one chip's vector units */
    double sram_bytes; /**< on-chip memory of one chip */
    double mem_bw, mem_cap; /**< off-chip memory of one chip: B/s and bytes */
    double mem2_bw, mem2_cap; /**< optional second tier (0: none) */
    int gemm_rows; /**< rows of the systolic array (padding of small M; 0: none) */
    /** Spatial GEMM mapping (gemm.mapping: spatial; 0: shared): the chip's
     *  systolic arrays (units), each of gemm_lanes output columns by
     *  gemm_stages token rows, a partition's GEMMs each on arrays of its own */
    double gemm_units;
    int gemm_lanes, gemm_stages; /**< an array's rows (lanes) and columns (stages) */
    double gemm_eff; /**< GEMM efficiency at large shapes */
    int overlap; /**< COMET_MODEL_ENGINE_* bits: which engines run concurrently */
    int nlevels; /**< network levels joining chips */
    comet_system_level level[COMET_SYSTEM_LEVELS]; /**< innermost first */
    double clock_hz; /**< the description's clock (network times are in its cycles) */
    /** 1: collectives and point-to-point between chips from hw.links, the fits of
     *  the link a calibrated machine measured (comet_system_use_link_fits());
     *  0: from the levels' stated networks */
    int link_fits;
    /** The share of a lone core that each of this chip's cores delivers while
     *  the other ranks of its host compute at once (a calibrated CPU's ranks
     *  on one machine: comet_system_from_profile()); 0 or 1: the chip alone */
    double host_share;
    /** Ranks of this system sharing one host's last-level cache (a calibrated CPU's
     *  ranks on one machine: comet_system_from_profile(); 0 or 1: one) */
    int host_ranks;
} comet_system;

/**
 * The network between chips from fitted link parameters instead of the
 * levels' stated bandwidth and latency: collectives by comet's collective
 * model over the fits (MPICH's own algorithms, as measured), point-to-point
 * by the Hockney fit. For a calibrated CPU profile run as N ranks on the
 * link it was calibrated on (validate --system, predict --link).
 * @return 0, or -ENOENT when links holds no fit (nothing changes).
 */
int comet_system_use_link_fits(comet_system *sys, const comet_model_links *links);

/**
 * A calibrated single-node CPU profile as `chips` chips of `threads` cores
 * each (one MPI rank with its threads), joined by the profile's fits of
 * `link` ("shm", "tcp:DEV"; NULL: "shm"): GEMM efficiency from the
 * measured grid at the rank's threads, memory at the node's per-core share,
 * collectives and point-to-point from the fits (comet_system_use_link_fits()).
 * `host_ranks` (>= 1) of the chips run on one machine at once: each rank's
 * compute at the share of a core the profile measured with that many
 * threads busy (comet_model_gms_core_share(), as the distributed-kernel
 * model charges its ranks), time-shared when they outnumber its cores.
 * @return 0, -EINVAL (not such a profile) or -ENOENT (no fit of that link,
 *         with chips > 1), with a one-line reason.
 */
int comet_system_from_profile(const comet_model_hw *profile, comet_model_dtype dtype, int threads,
    int chips, int host_ranks, const char *link, comet_system *sys, char *err, size_t errlen);

/**
 * Builds a system from a hardware description for a workload's data type.
 * chips > 0 resizes a family (the outermost level grows or shrinks; it must
 * divide evenly), 0 keeps the description's count.
 * @return 0, or -EINVAL with a one-line reason (no per-chip compute, a
 *         chip count the levels cannot hold).
 */
int comet_system_from_hw(const comet_model_hw *hw, comet_model_dtype dtype, int chips,
    comet_system *sys, char *err, size_t errlen);

/** Frees what comet_system_from_hw() allocated (the measured GEMM grid). */
void comet_system_free(comet_system *sys);

/** Options fixed by the user (a negative value or 0 where noted: searched). */
typedef struct comet_system_opts {
    comet_system_phase phase; /**< what runs */
    int batch; /**< global batch (0: the workload's) */
    int microbatch; /**< 0: searched */
    int seq; /**< 0: the workload's */
    int context; /**< decode: tokens already in the KV cache (0: seq) */
    int recompute; /**< comet_system_recompute, or -1: searched */
    int seq_parallel; /**< 0/1, or -1: searched */
    int exec; /**< comet_system_exec, or -1: searched */
    int tp, pp, dp; /**< explore: degrees pinned (0: searched) */
    int interleave; /**< explore: virtual stages per chip pinned (0: searched) */
    int order_pinned; /**< explore: 1 if order[] is pinned (else every order is searched) */
    int order[3]; /**< explore: the pinned order of TP/PP/DP, innermost first */
    int zero; /**< explore: ZeRO stage pinned (0-3), or -1: searched (0 when dp = 1) */
    int partitions; /**< dataflow: each pass of a layer cut into exactly this many partitions
                         (DFModel's num_config); 0: the best number */
    const char *cuts[2]; /**< dataflow: the partitions of a layer's forward [0] and backward
                              [1] pass as given (DFModel's `config:` assignment, a vendor's
                              mapping): partitions in order separated by ',', each its
                              kernels' names joined by '+', naming every kernel of the pass
                              once in order (comet_system_cuts_check()); NULL: searched */
    int tile; /**< dataflow: each partition tiles its tokens in rows of this many where its
                   on-chip memory holds them, never fewer than an array's rows or stages
                   (DFModel's shard_N): a spatial chip's GEMMs run at exactly that tile, a
                   GEMM alone too; 0: each partition the best tile its memory allows */
    int output_tokens; /**< decode: tokens each request generates after its prompt of `context`
                            tokens (0: one step only); results then carry request_s */
    int tp_overlap; /**< training, kernel by kernel: the backward of a column-parallel GEMM
                         runs its tensor-parallel collectives asynchronously beside its
                         GEMMs (Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication:
                         the input-gradient all-reduce or reduce-scatter beside the
                         weight-gradient GEMM, sequence parallelism's re-all-gather beside
                         the input-gradient GEMM); 0: each waits for its kernel */
    int grad_acc_kernel; /**< training, kernel by kernel (comet_system_grad_acc): 1: each
                              weight-gradient GEMM writes its gradient and a separate
                              elementwise kernel adds it to the accumulated one (PyTorch's
                              AccumulateGrad, Megatron-LM's DDP hook main_grad.add_(grad)):
                              3 more passes over the gradient; 2: DeepSpeed's BF16_Optimizer
                              (2022): the gradient cast to a fp32 copy and added to a fp32
                              accumulator every microbatch, the fp32 gradients all-reduced over
                              data parallelism once a step (its own ZeRO-1 then all-gathers
                              the 16-bit weights), the fp32 accumulator unsharded in memory;
                              0: the GEMM accumulates in place (Megatron-LM's
                              gradient-accumulation fusion) */
    int softmax_rule; /**< kernel by kernel: when the attention's scale-mask-softmax runs as one
                           fused kernel (comet_system_softmax_rule): always (0), or by
                           Megatron's FusedScaleMaskSoftmax.is_kernel_available (1), or by
                           that condition as bigscience-workshop/Megatron-DeepSpeed computed it
                           from 9f5f5d4c (2021-10-21) to 1cb76a64 (2022-03-06), its
                           batch_per_block from the heads a GPU (2); where it does not, PyTorch's
                           unfused path: a fp32 copy, the scale, the mask, the softmax and the
                           cast back, each a pass over the scores (and their backwards) */
    int pp_embed_slots; /**< training or inference with pp > 1: the word embedding and the LM
                             head each take a layer's slot in the pipeline's partition
                             (Megatron-DeepSpeed's --pp-partition-method
                             'type:transformer|embedding': ceil((layers + 2) / pp) slots a
                             stage, the first stage the embedding and one layer fewer, the
                             last one layer fewer and the head); 0: every stage
                             ceil(layers / pp) layers, the head on top of the last stage's */
    int pipe_engine; /**< training with pp > 1: whose pipeline runs the 1F1B schedule
                          (comet_system_pipe_engine): Megatron-LM's (0: each stage pairs its
                          send and receive, the activation scattered over the TP group and
                          all-gathered after it) or DeepSpeed's of 2021 (1: TrainSchedule's
                          four blocking transfers a microbatch, each with the partition's meta
                          tensor before it, replayed event by event; three TP all-gathers a
                          microbatch; no interleaving, no sequence parallelism) */
    int alibi_baddbmm; /**< kernel by kernel: the attention scores start from a bias broadcast
                            into the score GEMM's output, as BigScience's Megatron-DeepSpeed adds
                            BLOOM's ALiBi (torch.baddbmm(alibi, q, k^T, beta=1)): PyTorch copies
                            the expanded bias into the scores (a write of them) and the batched
                            GEMM reads them back as its C (a read), forward and recomputed;
                            0: the GEMM writes the scores alone (beta 0) */
    int one_step; /**< the step alone between barriers, as a benchmark times it: a decode
                       step's pipeline fills and drains (1) instead of running in the steady
                       state of consecutive steps, where mbs >= pp keeps every stage busy (0) */
} comet_system_opts;

/**
 * Checks the syntax of a partition assignment (comet_system_opts.cuts): one
 * or more partitions separated by ',', each one or more kernel names
 * (letters, digits, '_') joined by '+', at most COMET_SYSTEM_MAX_KERNELS names.
 * Whether the names are the pass's kernels is known only when the layer is
 * costed (the evaluation then fails with that reason).
 * @return 0, or -EINVAL with a one-line reason.
 */
int comet_system_cuts_check(const char *spec, char *err, size_t errlen);

/** When the attention softmax is one fused kernel (comet_system_opts.softmax_rule). */
typedef enum comet_system_softmax_rule {
    COMET_SYSTEM_SOFTMAX_FUSED = 0,
    COMET_SYSTEM_SOFTMAX_MEGATRON = 1,
    COMET_SYSTEM_SOFTMAX_MEGATRON_DS_2022 = 2
} comet_system_softmax_rule;

/** Parses a softmax rule name (fused, megatron, megatron-ds-2022); -EINVAL if unknown. */
int comet_system_softmax_rule_parse(const char *s, comet_system_softmax_rule *r);

/** Whether Megatron's FusedScaleMaskSoftmax runs its fused kernel for a causal attention of
 *  b sequences, np heads on the chip, sq queries and sk keys under rule r (always for
 *  COMET_SYSTEM_SOFTMAX_FUSED). */
int comet_system_softmax_fused(comet_system_softmax_rule r, int b, int np, int sq, int sk);

/** Weight-gradient accumulation (comet_system_opts.grad_acc_kernel). */
typedef enum comet_system_grad_acc {
    COMET_SYSTEM_GRAD_ACC_GEMM = 0,
    COMET_SYSTEM_GRAD_ACC_KERNEL = 1,
    COMET_SYSTEM_GRAD_ACC_FP32 = 2
} comet_system_grad_acc;

/** Pipeline engines (comet_system_opts.pipe_engine). */
typedef enum comet_system_pipe_engine {
    COMET_SYSTEM_PIPE_MEGATRON = 0,
    COMET_SYSTEM_PIPE_DEEPSPEED = 1
} comet_system_pipe_engine;

/** Parses a pipeline engine name (megatron, deepspeed); -EINVAL if unknown. */
int comet_system_pipe_engine_parse(const char *s, comet_system_pipe_engine *e);

/** Parallelisms (indices into comet_system_config.order). */
enum { COMET_SYSTEM_TP = 0, COMET_SYSTEM_PP = 1, COMET_SYSTEM_DP = 2 };

/** One configuration of the system mapping. */
typedef struct comet_system_config {
    int tp, pp, dp; /**< degrees (chips used = tp pp dp) */
    int interleave; /**< virtual pipeline stages per chip (1: plain 1F1B) */
    int microbatch; /**< sequences per microbatch */
    int order[3]; /**< parallelisms from the innermost network level outwards */
    comet_system_recompute recompute; /**< recomputation */
    int seq_parallel; /**< Megatron sequence parallelism (reduce-scatter/all-gather) */
    comet_system_exec exec; /**< execution style */
    int zero; /**< distributed optimizer (Rajbhandari et al. 2020, ZeRO): 0 none; 1 optimizer
                   state sharded over DP (gradients reduce-scattered, weights all-gathered once a
                   step); 2 also the gradients (reduce-scattered every microbatch); 3 also the
                   weights (all-gathered for each layer's forward and backward) */
} comet_system_config;

/** Maximum kernels of one pass of a layer. */
#define COMET_SYSTEM_MAX_KERNELS 64

/** One pass of a layer cut into partitions (kernel by kernel: one kernel each). */
typedef struct comet_system_parts {
    int nkernels; /**< kernels of the pass, in execution order */
    char kernel[COMET_SYSTEM_MAX_KERNELS][16]; /**< their names ("qkv", "re_softmax", "wffn_in") */
    int n; /**< partitions */
    unsigned char
        end[COMET_SYSTEM_MAX_KERNELS]; /**< partition i holds kernels [end[i-1], end[i]) */
    /** Per partition, one microbatch: its time and the parts it overlaps or adds (s). */
    float time_s[COMET_SYSTEM_MAX_KERNELS], compute_s[COMET_SYSTEM_MAX_KERNELS],
        memory_s[COMET_SYSTEM_MAX_KERNELS], network_s[COMET_SYSTEM_MAX_KERNELS];
    /** Per fused partition: bytes it holds on chip (resident weights and accumulators,
     *  pipeline buffers) and how often it streams its weights (1: resident); NAN for one
     *  kernel alone, which tiles against the whole on-chip memory. */
    float onchip_bytes[COMET_SYSTEM_MAX_KERNELS], weight_passes[COMET_SYSTEM_MAX_KERNELS];
} comet_system_parts;

/** Partition i of a pass as "ln1+qkv+..." into buf (truncated to len). */
const char *comet_system_part_str(const comet_system_parts *p, int i, char *buf, size_t len);

/** Time and memory of one configuration. */
typedef struct comet_system_result {
    int feasible; /**< 0: pruned (reason says why) */
    char reason[512]; /**< why it does not fit or cannot be mapped (a --cuts error lists
                           the pass's kernels) */
    comet_system_config cfg; /**< the configuration */
    double step_s; /**< training: one step; prefill: the whole batch's prompt; decode: one token
                        for every sequence of the batch */
    double per_token_s; /**< decode: one token's latency (all stages); else 0 */
    double request_s; /**< decode with output_tokens: the batch's prompts (prefill) plus every
                           generated token's step at its growing context; NAN: the prefill or a
                           later step does not fit; 0: not asked */
    double request_prefill_s; /**< the prefill part of request_s */
    double tokens_per_s; /**< tokens processed (training, prefill) or generated (decode) per s */
    double mfu; /**< model FLOP per step / (step_s x chips used x peak) */
    double model_flops; /**< FLOP of one step (forward+backward, no recomputation) */
    double bound_s; /**< the step's bound: the slowest chip's compute and its off-chip bytes at
                         full rate, with no overlap lost; step_s >= bound_s */
    struct {
        double compute_s; /**< GEMM and vector work on the critical path */
        double memory_s; /**< exposed off-chip memory time */
        double tp_s; /**< exposed tensor-parallel collectives */
        double pp_s; /**< exposed pipeline point-to-point */
        double dp_s; /**< exposed data-parallel gradient all-reduce */
        double bubble_s; /**< pipeline fill and drain */
        double recompute_s; /**< recomputation inside the backward */
        double optimizer_s; /**< optimizer step */
    } breakdown; /**< parts of step_s (they add up to it) */
    struct {
        double weights, grads, optimizer, activations, kv_cache, total; /**< bytes */
        double working; /**< training: the layer whose backward runs, beyond what it stored
                             (its recomputed or working tensors) and its activation gradients */
        double capacity; /**< off-chip capacity of one chip (both tiers) */
    } mem; /**< per chip (the first pipeline stage, which holds the most) */
    double cost_usd; /**< capital cost (NAN: unknown) */
    double power_w; /**< provisioned power (NAN: unknown) */
    comet_system_parts parts[2]; /**< one layer's partitions: [0] forward, [1] backward */
    double layer_fwd_s, layer_bwd_s; /**< one layer, one microbatch */
    double weights_on_chip; /**< dataflow: bytes of the stage's weights (and, training, their
                                 gradient accumulators) kept on chip across microbatches, read
                                 once a step (0: streamed every microbatch) */
} comet_system_result;

/**
 * Costs one configuration. The result is infeasible (with its reason) when
 * the degrees do not divide the workload, the chips are too few, or the
 * memory of a chip overflows (the reason names the tensor class).
 * @return 0 (feasible or not), -EINVAL for a malformed configuration.
 */
int comet_system_eval(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, comet_system_result *r);

/** A point of the time-cost Pareto set. */
typedef struct comet_system_point {
    comet_system_config cfg; /**< the configuration */
    int chips_used; /**< tp x pp x dp */
    double step_s; /**< its step */
    double cost_usd; /**< the cost of the chips it uses (their share of the system's; NAN:
                          unknown) */
} comet_system_point;

/** Maximum Pareto points kept. */
#define COMET_SYSTEM_MAX_PARETO 32

/** What a search covered. */
typedef struct comet_system_space {
    double configs; /**< configurations evaluated */
    double feasible; /**< of which fit */
    double seconds; /**< wall time of the search */
    double configs_per_s; /**< configs / seconds */
    char refused[512]; /**< why the last configuration costed and refused did not fit ("" if
                            none: every one fits, or none could be costed) */
    int npareto; /**< points of the step-time vs cost Pareto set (0 when cost is unknown) */
    comet_system_point pareto[COMET_SYSTEM_MAX_PARETO]; /**< by increasing cost */
} comet_system_space;

/**
 * Searches every configuration (degrees dividing heads and layers, every
 * order of TP/PP/DP over the network levels, microbatch, interleaving,
 * recomputation, sequence parallelism, execution style), using up to the
 * system's chips. Keeps the `top` fastest feasible ones in best[] (sorted).
 * @return the number kept (0: nothing fits; space says what was tried).
 */
int comet_system_explore(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, int top, comet_system_result *best, comet_system_space *space);

/**
 * Parses "tp=8,pp=8,dp=1[,interleave=3][,microbatch=1][,order=tp-dp-pp]".
 * Degrees not given are 1. @return 0 or -EINVAL with a message naming the key.
 */
int comet_system_config_parse(const char *s, comet_system_config *c, char *err, size_t errlen);

/** The result as JSON (schema comet.system.v2; docs/FORMATS.md). */
json_t *comet_system_result_json(const comet_system_result *r);
/** Name of a phase / recompute / execution style. */
const char *comet_system_phase_name(comet_system_phase p);
/** Name of a recomputation choice. */
const char *comet_system_recompute_name(comet_system_recompute r);
/** Name of an execution style. */
const char *comet_system_exec_name(comet_system_exec e);
/** Parses a phase / recompute / exec name; -EINVAL if unknown. */
int comet_system_phase_parse(const char *s, comet_system_phase *p);
/** Parses a recomputation name. */
int comet_system_recompute_parse(const char *s, comet_system_recompute *r);
/** Parses an execution style name. */
int comet_system_exec_parse(const char *s, comet_system_exec *e);

/**
 * Time of a collective of `bytes` (all-reduce / reduce-scatter: per chip;
 * all-gather: the gathered total) over a group of `p` chips placed after
 * `inner` chips of stride on the system's levels: hierarchical (reduce-
 * scatter inwards-out, all-gather back) over the levels the group spans,
 * each level costed by comet's collective model.
 */
double comet_system_coll_s(
    const comet_system *sys, comet_model_coll coll, int inner, int p, double bytes);

/** Point-to-point of `bytes` between neighbouring members of a group of p
 *  chips placed after `inner` chips: over the innermost level it spans. */
double comet_system_p2p_s(const comet_system *sys, int inner, int p, double bytes);

/** A paired exchange between neighbouring members of such a group (each
 *  sends the other `bytes` at once; both moved): the fitted link's exchange
 *  where it was measured, else one message's time (full-duplex links, each
 *  direction at its rate: comet_system_p2p_s). */
double comet_system_exchange_s(const comet_system *sys, int inner, int p, double bytes);

/** 1 when each chip of such a group reaches both its neighbours through
 *  one port, so that messages to both at once share it: the outermost
 *  level the group spans is a switch (one link a chip each way), or the
 *  fitted link of a calibrated machine (one NIC a host); 0 for rings, tori
 *  and full meshes (a link to each neighbour) and for groups of one. */
int comet_system_p2p_one_port(const comet_system *sys, int inner, int p);

#ifdef __cplusplus
}
#endif
#endif
