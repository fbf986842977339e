/* Private to the system library: one layer's problem on one chip and its
 * cost, shared by eval.c (the graph) and explore.c (the step). */
#ifndef COMET_SYSTEM_INTERNAL_H
#define COMET_SYSTEM_INTERNAL_H

#include "comet_system.h"

/** One layer, one microbatch, on one chip of a TP group. */
typedef struct sys_layer {
    comet_system_phase phase;
    double e; /* bytes per element */
    double T; /* tokens of the microbatch (b x query tokens) */
    double b, sq, ctx; /* sequences, query tokens per sequence, keys per query */
    double h, d; /* hidden, head dim */
    double al, gl, fl; /* heads, KV heads, FFN width on this chip */
    int gated;
    int dropout; /* training's forward has dropouts (the workload's dropout > 0) */
    int tp, sp;
    int tp_overlap; /* comet_system_opts.tp_overlap */
    int grad_acc_kernel; /* comet_system_opts.grad_acc_kernel */
    int softmax_unfused; /* kernel by kernel: the softmax runs PyTorch's unfused path */
    int alibi_baddbmm; /* kernel by kernel: comet_system_opts.alibi_baddbmm */
    comet_system_recompute rec;
    comet_system_exec exec;
    int nparts; /* dataflow: each pass cut into exactly this many partitions (0: the best) */
    double tile; /* dataflow: the row tile given, in tokens (comet_system_opts.tile; 0: the
                    best each partition's memory allows) */
    const char *cuts[2]; /* dataflow: the forward's and backward's partitions as given
                            (comet_system_opts.cuts; NULL: searched) */
} sys_layer;

/** What a cost needs: the system, the layer, where the TP group sits. */
typedef struct sys_ctx {
    const comet_system *sys;
    sys_layer L;
    int tp_inner; /* chips inside the TP group's stride (degrees placed inside it) */
    double stage_layers; /* layers on this chip (dataflow: whether their weights stay on chip) */
    double slots; /* a stage's passes of a layer in a step, as step.c counts them (training:
                     microbatches + (pp-1)/v of bubble; prefill mb + pp - 1; decode
                     max(mb, pp)): what keeping the weights on chip saves on */
    double pinned; /* bytes of the stage's weights (and weight-gradient accumulators) held on
                      chip across microbatches; 0: every microbatch streams them */
    int cold; /* a calibrated CPU whose step touches more than its host's LLC holds: its
                 kernels read weights and KV cache from DRAM at the measured cold rates */
} sys_ctx;

/** Parts of a pass's time (seconds) and its off-chip bytes. */
typedef struct sys_bd {
    double compute, recompute, memory, net, bytes, flops;
} sys_bd;

/** One layer's forward and backward. */
typedef struct sys_layer_out {
    double fwd_s, bwd_s;
    sys_bd fwd_bd, bwd_bd;
    double fwd_flops; /* FLOP of the forward */
    double stored; /* bytes kept for the backward */
    double working; /* bytes of every tensor of the forward (what a layer holds while its
                       backward runs, recomputed or stored) */
    double act_grads; /* bytes of the gradients of every kernel input (Calculon's
                         activation_grads): the backward's gradient buffers */
    comet_system_parts parts[2]; /* forward, backward */
    double pinned; /* bytes of the stage's weights kept on chip across microbatches (read
                      once a step, their gradients written once); 0: streamed */
    int cuts_bad; /* bit p set: the partitions given for pass p (sys_layer.cuts) do not name
                     its kernels in order, with Q, K and V fused or apart */
    double pin_s; /* seconds of that once-a-step load, never less than what streaming them
                     costs one microbatch (the first microbatch fetches them anyway) */
} sys_layer_out;

/** Seconds to move `bytes` to or from off-chip memory at its bandwidth and the
 *  description's efficiency for a transfer of that size (system.c). */
double sys_mem_s(const comet_system *sys, double bytes);
/** GEMM efficiency for an operation of `flops` without a measured grid: the
 *  description's table by size, else its flat efficiency (system.c). */
double sys_gemm_eff(const comet_system *sys, double flops);
/** A GPU GEMM's efficiency with its tile and wave quantization (gemm.tiles;
 *  comet_model_gemm_wave_eff): the lesser of `eff` (the table's, for its size) and
 *  the table's largest efficiency times the useful fraction of the SM time, for
 *  flops / (2 M N K) GEMMs of M x N x K; 0 when the description states no tiles or
 *  the tiles do not describe the GEMM (system.c). */
double sys_gemm_tiled_eff(
    const comet_system *sys, double eff, double flops, double M, double N, double K);

/* The share of a lone core a chip's cores deliver beside its host's other
 * ranks (comet_system.host_share; 1 when unset): compute times divide by it. */
static inline double sys_host_share(const comet_system *sys)
{
    return sys->host_share > 0 && sys->host_share < 1 ? sys->host_share : 1;
}

/** Test hook (eval.c): from begin to end, every fused partition the dynamic
 *  program costs incrementally is costed again from scratch; end returns the
 *  largest relative difference (INFINITY: one fits and the other does not). */
void sys_scan_check_begin(void);
/** See sys_scan_check_begin(). */
double sys_scan_check_end(void);

/** Test hook (eval.c): the GEMM time of one fused partition of n GEMMs on a
 *  spatial chip (gemm.mapping spatial) over T token rows in tiles of at most
 *  `tile` tokens, GEMM x of output width A[x] a token and reduction K[x];
 *  0 on a chip without spatial mapping. */
double sys_spatial_gemm_s(
    const comet_system *sys, double T, int n, const double *A, const double *K, double tile);

/** Fills r->request_s for a decode result when o->output_tokens > 0 (step.c). */
void sys_fill_request(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, comet_system_result *r);

/** A memory-bound kernel's compute on a calibrated CPU profile from its
 *  measured row passes and vector-op costs (cpu_vec.c): seconds for `flops`
 *  of the kernel `name` (forward, d* backward or re_* recomputed), or -1
 *  when the description is not such a profile or the kernel not one of
 *  LayerNorm, softmax, GELU, dropout, residual. */
double sys_cpu_vec_s(const comet_system *sys, const sys_layer *L, const char *name, double flops);

/** Seconds of pipeline transfers on the critical path of a training step's
 *  1F1B schedule as Megatron runs it (pipe.c; Narayanan et al. 2021: stage s
 *  runs pp - s - 1 forwards, then one forward and one backward in turn,
 *  then the remaining backwards; each forward's output sent with the
 *  receive of a gradient, each backward's with the receive of the next
 *  activation, the pair waited for) of `pp` uniform stages over `m`
 *  microbatches, a stage's forward `f` and backward `b` seconds a
 *  microbatch, each activation and gradient `t` seconds on its link. A
 *  message moves once its sender and receiver have both posted it; each
 *  link is full duplex (its two directions independent, the messages of
 *  one direction one after the other); a message posted in a pair at both
 *  its ends moves for `x` (the link's paired exchange, both messages; x <= t:
 *  t). The step is (m + pp - 1) (f + b) plus this. */
double sys_pp_1f1b_s(int pp, long m, double f, double b, double t, double x);
/** Seconds of pipeline transfers on the critical path of a forward-only
 *  step (prefill, a decode step) of `pp` stages over `m` microbatches, each
 *  activation `t` seconds on its link, sent blocking (Megatron's
 *  forward-only schedule: a stage receives, computes, sends and waits for
 *  the send before its next microbatch; a send completes once its receiver
 *  has taken it). The step is (m + pp - 1) f plus this (step.c). */
double sys_pp_forward_s(int pp, long m, double t);

/** Bytes read and written, beyond the GEMM's own write of the gradient, to
 *  accumulate `wgrad` bytes of weight gradients (elements of `e` bytes) over
 *  microbatches in accumulation mode `mode` (comet_system_grad_acc; eval.c):
 *  none 0; a kernel of its own reads the gradient and the accumulated one
 *  and writes the sum; fp32 (DeepSpeed's BF16_Optimizer.update_hp_grads:
 *  hp_grad.add_(lp.grad.to(fp32))) casts the gradient to a fp32 copy and
 *  adds the copy to the fp32 accumulator. */
void sys_grad_acc_bytes(int mode, double wgrad, double e, double *rd, double *wr);

/** Costs one layer (eval.c). */
void sys_layer_cost(const sys_ctx *C, sys_layer_out *out);

/** Seconds of DeepSpeed's TrainSchedule (pipe.c) for m microbatches over p
 *  stages: F, B a stage's forward and backward of one microbatch, c one
 *  blocking transfer between neighbours; (m + p - 1)(F + B) when c = 0. */
double sys_pipe_deepspeed_s(int m, int p, double F, double B, double c);

/** Stage r's program in Megatron-LM's training schedule (pipe.c; megatron/
 *  schedules.py @cfd2e21607): il == 0 forward_backward_pipelining_without_
 *  interleaving (v == 1), il == 1 forward_backward_pipelining_with_
 *  interleaving with v model chunks (Megatron runs it whenever a virtual
 *  pipeline size is given, 1 included) over p ranks and m microbatches. Each op is a forward (16)
 * or backward (32) of one model chunk, or one blocking p2p call, the OR of its messages: send to
 * the previous rank 1, receive from it 2, send to the next 4, receive from it 8. ops holds 6 m v +
 * 8; returns the number of ops. */
long sys_pipe_megatron_program(int p, long m, int v, int il, int r, unsigned char *ops);
/** Seconds of Megatron-LM's training schedule (pipe.c) over p stages, m
 *  microbatches and v model chunks a stage (il: the interleaved schedule,
 *  which Megatron runs for p > 2 and m a multiple of p; NAN otherwise, and
 *  for v > 1 without il): F, B a stage's forward and backward of one microbatch (all
 *  its chunks), t one message alone on its link, x a paired exchange of
 *  two (x < t: t). Every call blocks; a message moves once both ends have
 *  posted it. local: Megatron's scatter/gather (tp > 1 without sequence
 *  parallelism): `local` seconds of t (and of x) are the receiving group's
 *  all-gather, run after the call's wait, one after the other for the
 *  call's received tensors (p2p_communication.py _communicate); 0: none. */
double sys_pipe_megatron_s(
    int p, long m, int v, int il, double F, double B, double t, double x, double local);
/** sys_pipe_megatron_s over ports (pipe.c): shared != 0, a rank's messages
 *  in flight at once share its one outbound and one inbound port max-min
 *  fairly (each port one message a t), each message's last `local` seconds
 *  (of its t or x) off the ports at full rate; shared == 0, each message at
 *  its own full rate (sys_pipe_megatron_s's time). */
double sys_pipe_megatron_ports_s(
    int p, long m, int v, int il, double F, double B, double t, double x, int shared, double local);
/** Seconds of Megatron-LM's training schedule beyond its compute, (m + (p
 *  - 1) / v)(F + B) (the replay's time without transfers): the replay of
 *  sys_pipe_megatron_s, extrapolated from replays of p + 2 and p + 3
 *  microbatches (2 and 3 groups of p interleaved) where it is affine in m, sys_pp_1f1b_s where that
 * is exact, memoised. 0 without a pipeline or transfers; NAN where Megatron refuses the schedule (v
 * > 1 with p < 3 or m not a multiple of p). shared: a rank's port is shared by its messages to both
 * neighbours (sys_pipe_megatron_ports_s; only the interleaved schedule posts such). */
double sys_pp_megatron_s(
    int p, long m, int v, double F, double B, double t, double x, int shared, double local);

/** The step of a configuration with its layer cost given (cached) or computed into scratch
 *  (step.c). */
int sys_eval_cached(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, comet_system_result *r, const sys_layer_out *cached,
    sys_layer_out *scratch);
/** 1 if configuration c's step reads its operands cold (sys_ctx.cold), else 0. */
int sys_cold_step(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c);
/** One configuration's layer cost; 0 if the configuration cannot run at all. */
int sys_layer_for(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, sys_layer_out *out);

#endif
