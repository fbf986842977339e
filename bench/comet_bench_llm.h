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
    COMET_LLM_T_TP, /**< tensor-parallel collectives, their waits included: all-reduces, or with
                         sequence parallelism all-gathers and reduce-scatters (and the LayerNorm
                         parameters' gradient all-reduce); by kind: comet_llm_tp_timers() */
    COMET_LLM_T_DP, /**< the data-parallel gradient all-reduce */
    COMET_LLM_T_PP, /**< pipeline point-to-point transfers: posting the sends and each
                         receive from its message's arrival (MPI_Probe returned) to its end */
    COMET_LLM_T_BUBBLE, /**< pipeline idle: a receive's wait for its message to arrive (the
                             fill, drain and imbalance), the final wait for the sends to be
                             taken and, training, the wait in the loss's closing all-reduce;
                             the bench adds the rank's tail (comet_bench_llm_worker) */
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
    /** pipeline stages (0 or 1: none): contiguous layers per stage (the first
     *  stages one more where they do not divide), 1F1B over the microbatches,
     *  point-to-point activations forward and gradients backward; ranks =
     *  tp x pp x dp, tensor parallelism innermost, then data, then pipeline */
    int pp;
    /** sequence parallelism (Korthikanti et al. 2022; tp >= 2): each microbatch's
     *  tokens (rows [b][s], contiguous, the first ranks one more where they do
     *  not divide) split over the tp ranks in LayerNorm, the residuals and
     *  between stages; all-gather before the column-parallel GEMMs and
     *  reduce-scatter after the row-parallel ones (backward: the mirror, and
     *  the LayerNorm outputs gathered again for the weight gradients) */
    int seq_parallel;
} comet_llm_cfg;

/** Parts of COMET_LLM_T_TP by collective kind. */
typedef enum comet_llm_tp_kind {
    COMET_LLM_TP_ALLREDUCE = 0, /**< all-reduces (without sequence parallelism; with it the
                                     LayerNorm parameters' gradients once a step) */
    COMET_LLM_TP_ALLGATHER, /**< sequence parallelism's all-gathers */
    COMET_LLM_TP_REDUCE_SCATTER, /**< sequence parallelism's reduce-scatters */
    COMET_LLM_TP_NKINDS
} comet_llm_tp_kind;

/** Names as records write them in "timers": "tp_allreduce_s", ... */
const char *comet_llm_tp_kind_name(comet_llm_tp_kind k);

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

/** The last step's tensor-parallel time on this rank by collective kind
 *  (seconds; they add up to the COMET_LLM_T_TP timer). */
void comet_llm_tp_timers(const comet_llm *m, double t[COMET_LLM_TP_NKINDS]);

/** The stack's output of the last forward on this rank's tokens (tokens x
 *  hidden), and tokens; for tests (with a pipeline: on the last stage's
 *  ranks). With sequence parallelism microbatch after microbatch this rank's
 *  rows of it (comet_llm_shard()). */
const float *comet_llm_output(const comet_llm *m, size_t *tokens);

/** Token rows of one microbatch (mtokens, [sequence][position]) this rank
 *  holds outside the tensor-parallel regions: all of them, or with sequence
 *  parallelism rows first .. first + rows - 1. */
void comet_llm_shard(const comet_llm *m, size_t *first, size_t *rows, size_t *mtokens);

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

/* ------------------------------------------------------------------ */
/* The bench: configurations launched under mpiexec, records            */
/* ------------------------------------------------------------------ */

/** A configuration as text, "hidden=256,heads=4,...": every field named
 *  (the worker's command line and error messages). */
void comet_llm_cfg_format(const comet_llm_cfg *c, char *buf, size_t len);
/** Parses comet_llm_cfg_format()'s text (fields not given keep *c's values).
 *  @return 0 or -EINVAL with a message naming the key. */
int comet_llm_cfg_parse(const char *s, comet_llm_cfg *c, char *err, size_t errlen);

/** One launch's job: every rank runs it. */
typedef struct comet_bench_llm_job {
    comet_llm_cfg cfg; /**< the configuration */
    const char *outpath; /**< results file rank 0 appends to */
    const char *run_id, *machine_id; /**< of the parent's run record */
    int samples; /**< samples to take (each one step), at least 3 */
    double cap_s; /**< stop sampling after this many seconds (at least 3 samples) */
    /** what the parent's idle gate saw before the launch (the record's "load";
     *  busy_during unknown: the ranks busy-poll every core) */
    double busy_others, waited_s;
    int idle, gate_skipped;
    char *const *launcher_args; /**< words for mpiexec before -n (hostfile, interface, ...) */
    int nlauncher_args; /**< their count */
} comet_bench_llm_job;

/**
 * One rank of a launch (inside mpiexec; MPI initialised and finalised
 * here): builds the model, two warm-up steps, then samples steps, each the
 * slowest rank's wall time between barriers, and rank 0 appends one "llm"
 * record. @return 0, 1 (failure, message on stderr), 2 (bad job).
 */
int comet_bench_llm_worker(const comet_bench_llm_job *job);

/** Starts one launch's np ranks running job (the CLI's: mpiexec and the
 *  hidden worker command line): the pid of a child leading its own process
 *  group, or a negative errno. */
typedef long (*comet_bench_llm_spawn)(const comet_bench_llm_job *job, int np, void *ctx);

/** Settings of a `comet bench llm` run. */
typedef struct comet_bench_llm_opts {
    int full; /**< the full set (two model sizes) instead of the quick one */
    const comet_llm_cfg *one; /**< one configuration instead of a set (NULL: the set) */
    int samples; /**< samples per configuration (0: 15 quick, 25 full) */
    double timeout_s; /**< one deadline for the whole run (0: 600 s quick, 3600 s full) */
    const char *out; /**< results in out/results */
    const char *command_line; /**< for the run record */
    comet_bench_llm_spawn spawn; /**< starts each launch (required) */
    void *spawn_ctx; /**< passed to spawn */
    int json; /**< summary as JSON on stdout */
    double gate_timeout_s; /**< idle gate before each launch: wait up to this (< 0: 5 s; 0: off) */
    /** passed to mpiexec before -n, split on blanks with quotes grouping words
     *  (e.g. "-f hostfile -ppn 1", or scripts/netns-veth.sh's launcher: ranks in
     *  two network namespaces); NULL: none. Recorded in the run record. */
    const char *launcher_args;
    int ranks; /**< a set's configurations of this many ranks only (0: all) */
} comet_bench_llm_opts;

/**
 * The configurations of a set (quick: the small model, train, prefill and
 * decode on one rank of 1 and 2 threads and on two ranks tp=2, dp=2 or pp=2
 * (microbatches of one sequence; decode: two microbatches);
 * full: the same for two model sizes and tp=2 with sequence parallelism,
 * plus full recomputation and unfused attention). cores: the CPUs a configuration may use (ranks x
 * threads).
 * @return the count written (at most cap).
 */
int comet_bench_llm_set(int full, int cores, comet_llm_cfg *out, int cap);

/**
 * A run: probe, run record, one mpiexec launch per configuration under one
 * deadline, a summary table. @return a CLI exit code (0, 1 failure, 2 usage).
 */
int comet_bench_llm_run(const comet_bench_llm_opts *o);

#ifdef __cplusplus
}
#endif
#endif
