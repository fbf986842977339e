/**
 * @file comet_bench_llm.h
 * @brief A GPT-style decoder stack in fp32 over MPI ranks (`comet bench
 *        llm`): comet's kernels (LayerNorm rows, fused or unfused attention)
 *        and OpenBLAS GEMMs, Megatron tensor parallelism and data
 *        parallelism, timed per step and per term of the system model's
 *        breakdown.
 *
 * Layer (pre-LayerNorm, no biases on the linear layers, no dropout):
 * x1 = x + Proj(Attn(QKV(LN1(x)))), y = x1 + FFNout(GELU(FFNin(LN2(x1)))),
 * causal attention. No embedding or LM head: the stack's input is a fixed
 * pseudo-random tensor and the training loss is the mean over tokens of
 * 0.5 ||y - target||^2 against a fixed pseudo-random target (docs/FORMATS.md,
 * kind "llm").
 *
 * Ranks form a tp x dp grid (tensor-parallel ranks innermost): the heads and
 * the FFN columns split over the tp ranks of a replica (contiguous ranges,
 * the first ranks one more where they do not divide: uneven splits are
 * allowed), QKV and FFN-in column-parallel, projection and FFN-out
 * row-parallel with an all-reduce of their output in the forward and of the
 * LayerNorm outputs' gradients in the backward; the batch splits over the dp
 * replicas, whose gradients are summed by one all-reduce after the backward.
 * Every parameter, input and target is a function of its global index and
 * the seed, so any grid computes the same model.
 */
#ifndef COMET_BENCH_LLM_H
#define COMET_BENCH_LLM_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** What a step runs. */
typedef enum comet_llm_phase {
    COMET_LLM_TRAIN = 0, /**< forward, backward, gradient all-reduce, Adam */
    COMET_LLM_PREFILL = 1, /**< the prompts' forward, writing the KV cache */
    COMET_LLM_DECODE = 2 /**< one token per sequence against a KV cache of `context` tokens */
} comet_llm_phase;

/** Timers of a step: the system model's breakdown terms (seconds). */
typedef enum comet_llm_timer {
    COMET_LLM_T_GEMM = 0, /**< the linear layers' GEMMs (forward, data and weight gradients) */
    COMET_LLM_T_ATTN, /**< attention (the kernel forward; the backward) */
    COMET_LLM_T_VECTOR, /**< memory-bound kernels: LayerNorm, GELU, residuals, head reorders */
    COMET_LLM_T_TP, /**< tensor-parallel all-reduces (their waits included) */
    COMET_LLM_T_DP, /**< the data-parallel gradient all-reduce */
    COMET_LLM_T_PP, /**< pipeline point-to-point (no pipeline parallelism yet: 0) */
    COMET_LLM_T_BUBBLE, /**< pipeline fill and drain (0: no pipeline) */
    COMET_LLM_T_OPT, /**< the Adam update */
    COMET_LLM_T_RECOMPUTE, /**< the forward rerun in the backward (full recomputation) */
    COMET_LLM_T_LOSS, /**< the loss and its gradient (not a model term) */
    COMET_LLM_NTIMERS
} comet_llm_timer;

/** Timer names as records write them ("gemm_s", ...). */
const char *comet_llm_timer_name(comet_llm_timer t);

/** A configuration. */
typedef struct comet_llm_cfg {
    int hidden, heads, ffn, layers; /**< model (head dim = hidden / heads) */
    int seq; /**< tokens per sequence (train, prefill) */
    int batch; /**< sequences per step over all replicas */
    int microbatch; /**< sequences per microbatch (0: batch / dp) */
    int context; /**< decode: tokens already in the KV cache */
    comet_llm_phase phase;
    int attention_fused; /**< 1: the fused attention kernel, 0: the unfused pair */
    int recompute_full; /**< train: rerun each layer's forward in its backward */
    int tp, dp; /**< tensor- and data-parallel degrees (tp x dp = ranks) */
    int threads; /**< threads per rank */
    unsigned long long seed; /**< parameters, inputs, targets */
} comet_llm_cfg;

/** One rank's part of a model (opaque). */
typedef struct comet_llm comet_llm;

/**
 * Checks a configuration against a rank count: one-line reason on error.
 * @return 0 or -EINVAL.
 */
int comet_llm_check(const comet_llm_cfg *c, int ranks, char *err, size_t errlen);

/**
 * Builds this rank's part (collective over comm: every rank calls it).
 * @return 0, -EINVAL (bad configuration, message in err), -ENOMEM.
 */
int comet_llm_create(
    MPI_Comm comm, const comet_llm_cfg *c, comet_llm **out, char *err, size_t errlen);
/** Frees a model (NULL-safe; collective: frees the communicators). */
void comet_llm_free(comet_llm *m);

/**
 * One step of the configured phase (collective): train runs forward,
 * backward, the gradient all-reduce and Adam; loss (may be NULL) gets the
 * step's loss over the whole batch (train; 0 otherwise). The step's timers
 * replace the previous ones. @return 0 or a negative errno (-EIO: MPI).
 */
int comet_llm_step(comet_llm *m, double *loss);

/**
 * Train without the update: forward, backward and the gradient all-reduce
 * of the whole batch; the gradients stay for comet_llm_grads_full().
 */
int comet_llm_grads(comet_llm *m, double *loss);

/** Parameters of the whole model (the single-rank layout). */
size_t comet_llm_nparams(const comet_llm_cfg *c);

/**
 * The gradients of the whole model in the single-rank layout (per layer:
 * ln1 gamma, beta [h]; Wqkv [h][3][heads][d]; Wo [heads d][h]; ln2 gamma,
 * beta; W1 [h][ffn]; W2 [ffn][h]) on every rank (collective).
 * out holds comet_llm_nparams() floats. @return 0 or -EIO.
 */
int comet_llm_grads_full(comet_llm *m, float *out);

/** This rank's parameter block and its length (one rank: the layout of
 *  comet_llm_grads_full()); tests perturb it for finite differences. */
float *comet_llm_params_local(comet_llm *m, size_t *n);

/** The last step's timers on this rank (seconds). */
void comet_llm_timers(const comet_llm *m, double t[COMET_LLM_NTIMERS]);

/** The stack's output of the last forward on this rank's tokens (T x hidden),
 *  and T; for tests. */
const float *comet_llm_output(const comet_llm *m, size_t *tokens);

/**
 * Analytic FLOP of one step over all ranks: the matrix products (the
 * attention's over its full causal square, as the system model counts
 * them), x3 for training.
 */
double comet_llm_flops(const comet_llm_cfg *c);

/** Phase names "train", "prefill", "decode"; parse: 0 or -EINVAL. */
const char *comet_llm_phase_name(comet_llm_phase p);
/** See comet_llm_phase_name(). */
int comet_llm_phase_parse(const char *s, comet_llm_phase *p);

#ifdef __cplusplus
}
#endif
#endif
