/* A configuration's step from its layer costs (eval.c): pipeline (1F1B,
 * interleaved), pipeline point-to-point, data-parallel gradient all-reduce,
 * optimizer, memory per chip, cost and power (comet_system_eval). The
 * search over configurations and the JSON are explore.c's. docs/system.md
 * states every formula. */
#include "comet_system.h"
#include "comet_util.h"
#include "system_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weights of one layer on one chip of a TP group (LayerNorms replicated). */
static double layer_params_chip(const comet_system_llm *m, int tp)
{
    const double h = m->hidden, d = m->head_dim, al = (double)m->heads / tp,
                 gl = ceil((double)m->kv_heads / tp), fl = ceil((double)m->ffn / tp),
                 gate = m->gated ? 2 : 1;
    return h * (al + 2 * gl) * d + al * d * h + h * fl * gate + fl * h + 4 * h;
}

typedef struct setup {
    int B, seq, ctx, mb, inner[3];
    sys_layer L;
} setup;

static int fail(comet_system_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(comet_system_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    r->feasible = 0;
    return 0;
}

int comet_system_softmax_rule_parse(const char *s, comet_system_softmax_rule *r)
{
    static const char *const names[] = { "fused", "megatron", "megatron-ds-2022" };
    for (int i = 0; i < 3; i++)
        if (s && !strcmp(s, names[i])) {
            *r = (comet_system_softmax_rule)i;
            return 0;
        }
    return -EINVAL;
}

/* Megatron's FusedScaleMaskSoftmax.is_kernel_available for a causal mask
 * (megatron/model/fused_softmax.py; bigscience-workshop/Megatron-DeepSpeed
 * @00f5f889): 16 < sq <= 2048, sk a multiple of 4 up to 2048, b np a
 * multiple of 4 and of batch_per_block (fused_kernels/scaled_masked_softmax.h
 * get_batch_per_block: 128-thread blocks of warps of min(32, p) threads, two
 * rows a warp where p <= 128, p the power of two at or above its
 * key_seq_len). The fork's Python wrapper of 9f5f5d4c..1cb76a64 passed its
 * arguments in another order, so its key_seq_len was the heads a GPU. */
int comet_system_softmax_fused(comet_system_softmax_rule r, int b, int np, int sq, int sk)
{
    if (r == COMET_SYSTEM_SOFTMAX_FUSED)
        return 1;
    const long ab = (long)b * np;
    if (!(sq > 16 && sq <= 2048 && sk % 4 == 0 && sk >= 0 && sk <= 2048 && ab % 4 == 0))
        return 0;
    const long n = r == COMET_SYSTEM_SOFTMAX_MEGATRON_DS_2022 ? np : sk;
    long p = 1;
    while (p < n)
        p <<= 1;
    const long warp = p < 32 ? p : 32, per_warp = p <= 128 ? 2 : 1;
    return ab % ((128 / warp) * per_warp) == 0;
}

static int o_train(const setup *s)
{
    return s->L.phase == COMET_SYSTEM_TRAIN;
}

/* Checks a configuration and derives the layer problem; 1 if it can run. */
static int prepare(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, setup *s, comet_system_result *r)
{
    memset(s, 0, sizeof *s);
    s->B = o->batch > 0 ? o->batch : m->global_batch;
    s->seq = o->seq > 0 ? o->seq : m->seq;
    s->ctx = o->phase == COMET_SYSTEM_DECODE ? (o->context > 0 ? o->context : s->seq) : s->seq;
    const int used = c->tp * c->pp * c->dp;
    if (used > sys->chips)
        return fail(r, "tp x pp x dp = %d chips, the system has %d", used, sys->chips);
    if (m->heads % c->tp)
        return fail(r, "tp=%d does not divide the %d attention heads", c->tp, m->heads);
    /* stages of contiguous layers, uneven where pp does not divide them (as
     * comet bench llm splits them; explore searches the divisors only): the
     * largest stage sets the pipeline's pace and holds the most */
    if (c->pp > m->layers + (o->pp_embed_slots && c->pp > 1 ? 2 : 0))
        return fail(r, "pp=%d exceeds the %d layers%s", c->pp, m->layers,
            o->pp_embed_slots ? " and the embedding's two slots" : "");
    if (o->softmax_rule < COMET_SYSTEM_SOFTMAX_FUSED
        || o->softmax_rule > COMET_SYSTEM_SOFTMAX_MEGATRON_DS_2022)
        return fail(r, "softmax rule %d is not 0-2", o->softmax_rule);
    if (o->grad_acc_kernel < COMET_SYSTEM_GRAD_ACC_GEMM
        || o->grad_acc_kernel > COMET_SYSTEM_GRAD_ACC_FP32)
        return fail(r, "gradient accumulation mode %d is not 0-2", o->grad_acc_kernel);
    if (o->grad_acc_kernel == COMET_SYSTEM_GRAD_ACC_FP32 && o->phase == COMET_SYSTEM_TRAIN
        && c->zero >= 2)
        return fail(r, "DeepSpeed's BF16_Optimizer shards the optimizer state only (zero <= 1)");
    if (c->interleave > 1
        && (c->pp == 1 || m->layers % c->pp || (m->layers / c->pp) % c->interleave
            || o->phase != COMET_SYSTEM_TRAIN || o->pp_embed_slots))
        return fail(r,
            "interleave=%d needs pp > 1, training, and to divide the %d layers per stage",
            c->interleave, m->layers / c->pp);
    if (s->B % c->dp)
        return fail(r, "dp=%d does not divide the batch of %d sequences", c->dp, s->B);
    s->mb = c->microbatch;
    if (s->mb < 1 || (s->B / c->dp) % s->mb)
        return fail(r, "microbatch %d does not divide the %d sequences per data-parallel replica",
            s->mb, s->B / c->dp);
    /* megatron/arguments.py and schedules.py @cfd2e21607: the interleaved
     * schedule runs for pp > 2 only and for microbatches a multiple of pp */
    if (c->interleave > 1 && o->pipe_engine == COMET_SYSTEM_PIPE_MEGATRON
        && (c->pp < 3 || (s->B / c->dp / s->mb) % c->pp))
        return fail(r,
            "interleave=%d: Megatron-LM's interleaved schedule needs pp > 2 and the %d "
            "microbatches a multiple of pp=%d",
            c->interleave, s->B / c->dp / s->mb, c->pp);
    if (sys->hw.execution && !(sys->hw.execution & (1 << c->exec)))
        return fail(r, "%s runs %s only (its description's execution)", sys->hw.name,
            comet_system_exec_name((comet_system_exec)(sys->hw.execution == 1 ? 0 : 1)));
    if (c->zero && (o->phase != COMET_SYSTEM_TRAIN || c->dp < 2))
        return fail(r, "zero=%d shards over data parallelism in training: needs dp > 1", c->zero);
    if (o->phase != COMET_SYSTEM_TRAIN && c->recompute != COMET_SYSTEM_RECOMPUTE_NONE)
        return fail(r, "recomputation applies to training only");
    if (o->pipe_engine == COMET_SYSTEM_PIPE_DEEPSPEED && o->phase == COMET_SYSTEM_TRAIN && c->pp > 1
        && (c->interleave > 1 || (c->tp > 1 && c->seq_parallel > 0)))
        return fail(r,
            "DeepSpeed's pipeline engine has neither interleaving nor sequence "
            "parallelism");
    int deg[3] = { c->tp, c->pp, c->dp }, stride = 1;
    for (int i = 0; i < 3; i++) {
        s->inner[c->order[i]] = stride;
        stride *= deg[c->order[i]];
    }
    sys_layer *L = &s->L;
    L->phase = o->phase;
    L->e = m->bytes_per_elem;
    L->b = s->mb;
    L->sq = o->phase == COMET_SYSTEM_DECODE ? 1 : s->seq;
    L->ctx = s->ctx;
    L->T = L->b * L->sq;
    L->h = m->hidden;
    L->d = m->head_dim;
    L->al = (double)m->heads / c->tp;
    L->gl = ceil((double)m->kv_heads / c->tp);
    L->fl = ceil((double)m->ffn / c->tp);
    L->gated = m->gated;
    L->dropout = m->dropout > 0;
    L->tp = c->tp;
    L->sp = c->tp > 1 && c->seq_parallel > 0;
    L->tp_overlap = o->tp_overlap && o->phase == COMET_SYSTEM_TRAIN;
    L->grad_acc_kernel = o->phase == COMET_SYSTEM_TRAIN ? o->grad_acc_kernel : 0;
    L->rec = c->recompute;
    L->exec = c->exec;
    L->softmax_unfused = c->exec == COMET_SYSTEM_EXEC_KERNEL
        && !comet_system_softmax_fused((comet_system_softmax_rule)o->softmax_rule, (int)L->b,
            m->heads / c->tp, (int)L->sq, (int)L->ctx);
    L->alibi_baddbmm = c->exec == COMET_SYSTEM_EXEC_KERNEL && o->alibi_baddbmm
        && o->phase != COMET_SYSTEM_DECODE;
    L->nparts = o->partitions;
    L->tile = o->tile;
    L->cuts[0] = o->cuts[0];
    L->cuts[1] = o->phase == COMET_SYSTEM_TRAIN ? o->cuts[1] : NULL;
    return 1;
}

/* A stage's passes of one layer in a step as assemble() counts them (the
 * bubble as idle passes): what weights kept on chip save on. */
static double pass_slots(const comet_system_opts *o, const comet_system_config *c, const setup *s)
{
    const double mbs = (double)(s->B / c->dp) / s->mb;
    switch (o->phase) {
    case COMET_SYSTEM_TRAIN:
        return mbs + (double)(c->pp - 1) / c->interleave;
    case COMET_SYSTEM_DECODE:
        return fmax(mbs, c->pp);
    default:
        return mbs + c->pp - 1;
    }
}

/* Embedding and head as slots of the pipeline's partition (pp > 1 only). */
static int embed_slots(const comet_system_opts *o, const comet_system_config *c)
{
    return o->pp_embed_slots && c->pp > 1;
}

/* Layers of the largest pipeline stage (stages of contiguous layers, the
 * first ones one layer longer where pp does not divide the layers; with
 * the embedding and the head as slots, ceil((layers + 2) / pp) slots a
 * stage, so at most that many layers). */
static double stage_layers(
    const comet_system_llm *m, const comet_system_opts *o, const comet_system_config *c)
{
    const int n = m->layers + (embed_slots(o, c) ? 2 : 0);
    return fmin((double)((n + c->pp - 1) / c->pp), m->layers);
}

/* Weights on one chip of the stage holding the most: its layers and the
 * embedding (first stage; the head's tied copy on the last). */
static double stage_params(
    const comet_system_llm *m, const comet_system_opts *o, const comet_system_config *c)
{
    const double lp = layer_params_chip(m, c->tp), ep = (double)m->vocab * m->hidden / c->tp,
                 Ls = stage_layers(m, o, c);
    if (!embed_slots(o, c))
        return Ls * lp + ep;
    const double k = (double)((m->layers + 2 + c->pp - 1) / c->pp);
    return fmax(Ls * lp, (k - 1) * lp + ep);
}

/* Whether a calibrated CPU's step reads its operands from DRAM: the bytes
 * a rank touches each step (its stage's weights; inference: its KV cache),
 * times the ranks sharing the host, exceed the host's LLC. Only where the
 * profile measured cold rates (gemm.cold_read, cold_gemv_cycles_per_byte);
 * a step that fits keeps the costs it had. */
static int cold_step(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, const setup *s)
{
    const comet_model_hw *hw = &sys->hw;
    if (!(hw->cold_nn > 0 || hw->cold_gemv_cpb > 0) || !(hw->gb.capacity > 0))
        return 0;
    const double e = m->bytes_per_elem;
    double bytes = stage_params(m, o, c) * e;
    if (o->phase == COMET_SYSTEM_DECODE || o->phase == COMET_SYSTEM_PREFILL) {
        const double keep = o->phase == COMET_SYSTEM_DECODE ? s->ctx + 1.0 : s->seq;
        bytes += 2 * stage_layers(m, o, c) * s->L.gl * m->head_dim * e * ((double)s->B / c->dp)
            * keep;
    }
    return bytes * (sys->host_ranks > 1 ? sys->host_ranks : 1) > hw->gb.capacity;
}

/* The layer costing's context for configuration c (prepare()'s setup s). */
static sys_ctx ctx_for(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, const setup *s)
{
    sys_ctx C = { sys, s->L, s->inner[COMET_SYSTEM_TP], stage_layers(m, o, c), pass_slots(o, c, s),
        0, 0 };
    C.cold = cold_step(sys, m, o, c, s);
    return C;
}

int sys_cold_step(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c)
{
    const comet_model_hw *hw = &sys->hw;
    if (!(hw->cold_nn > 0 || hw->cold_gemv_cpb > 0)) /* no cold rates: no setup to make */
        return 0;
    setup s;
    comet_system_result r;
    memset(&r, 0, sizeof r);
    return prepare(sys, m, o, c, &s, &r) ? cold_step(sys, m, o, c, &s) : 0;
}

/* Memory of one chip of the first stage (it holds the most in 1F1B). */
static void memory(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, const setup *s, const sys_layer_out *lo, comet_system_result *r)
{
    const double e = m->bytes_per_elem, Ls = stage_layers(m, o, c);
    const double params = stage_params(m, o, c);
    memset(&r->mem, 0, sizeof r->mem);
    r->mem.weights = params * e;
    if (o->phase == COMET_SYSTEM_TRAIN) {
        /* mixed-precision Adam: 16-bit gradients, fp32 master weights,
         * momentum and variance (Rajbhandari et al. 2020: 16 B/parameter
         * with 16-bit weights) */
        /* ... and the layer whose backward runs accumulates its gradients at
         * fp32 before they are cast for the all-reduce (Calculon's
         * get_weight_grad(sharded=False): one block at 4 B) */
        r->mem.grads = params * e / (c->zero >= 2 ? c->dp : 1)
            + layer_params_chip(m, c->tp) * fmax(0, 4 - e);
        /* DeepSpeed's BF16_Optimizer: a fp32 accumulator for every weight
         * of the stage, not sharded (bigscience tr11-176B-ml README: "4
         * bytes * params of additional memory") */
        if (o->grad_acc_kernel == COMET_SYSTEM_GRAD_ACC_FP32)
            r->mem.grads += params * 4;
        r->mem.optimizer = params * 12 / (c->zero >= 1 ? c->dp : 1);
        if (c->zero >= 3) /* sharded, one layer's gathered for its pass */
            r->mem.weights = params * e / c->dp + layer_params_chip(m, c->tp) * e;
        const double mbs = (double)(s->B / c->dp) / s->mb;
        double inflight = fmin(mbs, c->pp);
        if (c->interleave > 1)
            inflight *= 1 + (double)(c->pp - 1) / ((double)c->pp * c->interleave);
        r->mem.activations = lo->stored * Ls * inflight;
        /* the layer in its backward holds all its tensors (full
         * recomputation: rerun from its stored input; selective: the
         * attention core again) and the gradients of its inputs (Calculon:
         * act_space = working + storage x (layers x in-flight - 1), plus
         * act_grad_space of one block) */
        r->mem.working = fmax(0, lo->working - lo->stored) + lo->act_grads;
    } else {
        /* the KV cache of every sequence this replica holds, and one
         * layer's working tensors */
        const double seqs = (double)s->B / c->dp;
        const double keep = o->phase == COMET_SYSTEM_DECODE ? s->ctx + 1.0 : s->seq;
        if (o->phase != COMET_SYSTEM_FORWARD)
            r->mem.kv_cache = 2 * Ls * s->L.gl * m->head_dim * e * seqs * keep;
        r->mem.activations = s->L.T * (4 * m->hidden + s->L.fl * (m->gated ? 2 : 1)) * e
            + s->L.b * s->L.al * s->L.sq * s->L.ctx * e;
    }
    r->mem.total = r->mem.weights + r->mem.grads + r->mem.optimizer + r->mem.activations
        + r->mem.working + r->mem.kv_cache;
    r->mem.capacity = sys->mem_cap + sys->mem2_cap;
}

/* DFModel's capital cost and provisioned power of the whole system. */
static void cost_power(const comet_system *sys, comet_system_result *r)
{
    const comet_model_hw *hw = &sys->hw;
    const double chips = sys->chips, memgbps = sys->mem_bw / 1e9 + sys->mem2_bw / 1e9;
    double linkgbps = 0, portgbps = 0, linkw = 0;
    for (int i = 0; i < sys->nlevels; i++) {
        const comet_system_level *L = &sys->level[i];
        const double inst = chips / L->size, bw = L->net.link_bw * sys->clock_hz / 1e9;
        double links = 0;
        switch (L->net.topo) {
        case COMET_MODEL_RING:
            links = L->size > 2 ? L->size : L->size - 1;
            break;
        case COMET_MODEL_FULL:
            links = L->size * (L->size - 1) / 2.0;
            break;
        case COMET_MODEL_SWITCH:
            links = L->size; /* chip to switch */
            portgbps += inst * L->size * bw;
            break;
        default:
            links = L->size;
            break;
        }
        linkgbps += inst * links * bw;
        /* link energy: the level's own pJ/B, else the description's J/GB */
        linkw += inst * links * bw
            * (L->net.link_pj_per_byte > 0 ? L->net.link_pj_per_byte * 1e-12 * 1e9
                                           : hw->power_link_j_per_gb);
        if (L->net.topo == COMET_MODEL_SWITCH)
            linkw += inst * L->size * bw * hw->power_switch_port_j_per_gb;
    }
    r->cost_usd = hw->cost_chip_usd > 0
        ? chips * hw->cost_chip_usd + chips * memgbps * hw->cost_mem_usd_per_gbps
            + linkgbps * hw->cost_link_usd_per_gbps + portgbps * hw->cost_switch_port_usd_per_gbps
        : NAN;
    r->power_w = hw->power_chip_w > 0
        ? chips * hw->power_chip_w + chips * memgbps * hw->power_mem_j_per_gb + linkw
        : NAN;
}

/* The LM head (tied embedding) on the last stage: a GEMM of T x h x V/tp,
 * c its compute and t its time forward; acc the seconds of accumulating
 * its weight's gradient once a microbatch in training (the same
 * accumulation as the layers' weights, sys_grad_acc_bytes). */
static void head_cost(const comet_system *sys, const comet_system_llm *m, const setup *s, int tp,
    double *c, double *t, double *acc)
{
    *c = *t = *acc = 0;
    if (m->vocab <= 0)
        return;
    const double e = m->bytes_per_elem, vl = (double)m->vocab / tp;
    const double flops = 2 * s->L.T * m->hidden * vl;
    const double bytes = (vl * m->hidden + s->L.T * m->hidden + s->L.T * vl) * e;
    double eff = sys_gemm_eff(sys, flops);
    const double et = sys_gemm_tiled_eff(sys, eff, flops, s->L.T, vl, m->hidden);
    if (et > 0)
        eff = et; /* T x V/tp outputs in tiles over the SMs */
    *c = flops / (sys->peak_flops * eff) / sys_host_share(sys);
    const double mem = sys_mem_s(sys, bytes);
    *t = (sys->overlap & COMET_MODEL_ENGINE_MEMORY) ? fmax(*c, mem) : *c + mem;
    if (s->L.grad_acc_kernel) {
        double rd, wr;
        sys_grad_acc_bytes(s->L.grad_acc_kernel, vl * m->hidden * e, e, &rd, &wr);
        *acc = sys_mem_s(sys, rd + wr);
    }
}

/* The loss on the last stage in training: Megatron's vocab-parallel cross
 * entropy over the head's T x V/tp logits (megatron/mpu/cross_entropy.py,
 * _VocabParallelCrossEntropy, the same in Megatron-LM and both
 * Megatron-DeepSpeeds; called on output.float(): gpt_model.py
 * post_language_model_processing, Megatron-DeepSpeed's CrossEntropy).
 * Forward, one pass over the logits a kernel: the cast to fp32 (read e,
 * write 4 B), the max (read 4), sub_ (4, 4), exp (4, 4), the sum (read 4),
 * div_ (4, 4), the softmax kept for the backward; backward: mul_ by the
 * loss's gradient (4, 4) and the cast's backward (read 4, write e). With
 * tp > 1 three all-reduces of T fp32 values (the max, the target's logit,
 * the sum). Seconds f (forward's memory and network), b (backward), net. */
static void loss_cost(const comet_system *sys, const comet_system_llm *m, const setup *s, int tp,
    int inner, double *f, double *b, double *net)
{
    *f = *b = *net = 0;
    if (m->vocab <= 0 || !o_train(s))
        return;
    const double e = m->bytes_per_elem, E = s->L.T * ((double)m->vocab / tp);
    const double fwd[6] = { e + 4, 4, 8, 8, 4, 8 }, bwd[2] = { 8, 4 + e };
    for (int i = 0; i < 6; i++)
        *f += sys_mem_s(sys, fwd[i] * E);
    for (int i = 0; i < 2; i++)
        *b += sys_mem_s(sys, bwd[i] * E);
    *net = tp > 1 ? 3 * comet_system_coll_s(sys, COMET_MODEL_ALLREDUCE, inner, tp, s->L.T * 4) : 0;
}

/* The word embedding as a stage's slot (Megatron's VocabParallelEmbedding):
 * forward, a gather of T rows of h (read, written) and, with tp > 1, the
 * all-reduce of its output over the TP group (net); backward, its dense
 * gradient of V/tp x h zero-filled and written, the T rows of the output's
 * gradient read, then accumulated as every weight's. Seconds f, b; net the
 * all-reduce. */
static void emb_cost(const comet_system *sys, const comet_system_llm *m, const setup *s,
    const comet_system_config *c, double *f, double *b, double *net)
{
    *f = *b = *net = 0;
    if (m->vocab <= 0)
        return;
    const double e = m->bytes_per_elem, rows = s->L.T * m->hidden * e,
                 g = (double)m->vocab / c->tp * m->hidden * e;
    *net = c->tp > 1
        ? comet_system_coll_s(sys, COMET_MODEL_ALLREDUCE, s->inner[COMET_SYSTEM_TP], c->tp, rows)
        : 0;
    *f = sys_mem_s(sys, 2 * rows) + *net;
    if (o_train(s)) {
        double rd = 0, wr = 0;
        if (s->L.grad_acc_kernel)
            sys_grad_acc_bytes(s->L.grad_acc_kernel, g, e, &rd, &wr);
        *b = sys_mem_s(sys, 2 * g + rows) + (rd + wr > 0 ? sys_mem_s(sys, rd + wr) : 0);
    }
}

/* Forward-only with blocking sends (sys_pp_forward_s): the first stage sends
 * each microbatch t after computing it, a middle stage also waits t for
 * each receive (a blocking send starts once its receiver is there), the last
 * only receives; the pace is f + t a microbatch with two stages, f + 2 t with
 * more, and one microbatch crosses pp - 1 links: (pp - 1) t + (m - 1) t or
 * (m - 1) 2 t beyond (m + pp - 1) f (test_pipeline's simulation). */
double sys_pp_forward_s(int pp, long m, double t)
{
    if (pp < 2 || m < 1 || !(t > 0))
        return 0;
    return (pp - 1) * t + (double)(m - 1) * (pp > 2 ? 2 : 1) * t;
}

/* The pipeline's transfers under DeepSpeed's engine (pipe.c replays its
 * TrainSchedule): what the schedule takes beyond (m + p - 1)(F + B). With
 * tp > 1 the engine partitions every activation and gradient it sends over
 * the TP group (engine.py @1fc74cb: is_pipe_partitioned =
 * is_grad_partitioned = is_model_parallel): each transfer is the
 * partition's meta tensor (PartitionedTensor.to_meta: tp + 7 int64) and
 * then 1/tp of the tensor, two blocking sends; the forward all-gathers the
 * received activation, the backward all-gathers its own output back (to
 * rebuild the graph) and the received gradient: three all-gathers a
 * microbatch where Megatron-LM's scatter/gather has two. */
static double deepspeed_pipe_s(const comet_system *sys, const comet_system_config *c,
    const setup *s, double mbs, double tf, double tb, double bytes)
{
    const int pi = s->inner[COMET_SYSTEM_PP];
    double ag = 0, x = comet_system_p2p_s(sys, pi, c->pp, bytes);
    if (c->tp > 1) {
        ag = comet_system_coll_s(
            sys, COMET_MODEL_ALLGATHER, s->inner[COMET_SYSTEM_TP], c->tp, bytes);
        x = comet_system_p2p_s(sys, pi, c->pp, 8.0 * (c->tp + 7))
            + comet_system_p2p_s(sys, pi, c->pp, bytes / c->tp);
    }
    const double t = sys_pipe_deepspeed_s((int)mbs, c->pp, tf + ag, tb + 2 * ag, x);
    return fmax(0, t - (mbs + c->pp - 1) * (tf + tb));
}

static int assemble(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, const setup *s, const sys_layer_out *lo, comet_system_result *r)
{
    const int train = o->phase == COMET_SYSTEM_TRAIN;
    const double v = c->interleave;
    const double mbs = (double)(s->B / c->dp) / s->mb;
    const int ovnet = sys->overlap & COMET_MODEL_ENGINE_NETWORK;
    double hc, ht, ha, lf, lb, ln;
    head_cost(sys, m, s, c->tp, &hc, &ht, &ha);
    loss_cost(sys, m, s, c->tp, s->inner[COMET_SYSTEM_TP], &lf, &lb, &ln);
    /* the slowest stage, which paces the pipeline: Ls layers and the
     * head (xf, xb its forward and backward; xc of them compute, xn
     * network); with the embedding and the head as slots, the slowest of
     * the last stage (one layer fewer and the head), the first (one layer
     * fewer and the embedding) and a middle one (every slot a layer) */
    double Ls = stage_layers(m, o, c), xf = ht + lf + ln, xb = train ? 2 * ht + ha + lb : 0,
           xc = hc * (train ? 3 : 1), xn = ln;
    if (embed_slots(o, c)) {
        const double k = (double)((m->layers + 2 + c->pp - 1) / c->pp);
        double ef, eb, en;
        emb_cost(sys, m, s, c, &ef, &eb, &en);
        const double slast = (k - 1) * (lo->fwd_s + lo->bwd_s) + xf + xb,
                     sfirst = (k - 1) * (lo->fwd_s + lo->bwd_s) + ef + eb,
                     smid = c->pp > 2 && k <= m->layers ? k * (lo->fwd_s + lo->bwd_s) : 0;
        Ls = k - 1;
        if (sfirst > slast && sfirst >= smid) {
            xf = ef;
            xb = eb;
            xc = 0;
            xn = en;
        } else if (smid > slast) {
            Ls = k;
            xf = xb = xc = 0;
        }
    }
    const double tf = Ls * lo->fwd_s + xf, tb = train ? Ls * lo->bwd_s + xb : 0;
    /* pipeline point-to-point: one activation (its gradient back) per stage boundary */
    const double p2p_bytes = s->L.T * m->hidden * m->bytes_per_elem / (s->L.sp ? c->tp : 1);
    double tp2p = comet_system_p2p_s(sys, s->inner[COMET_SYSTEM_PP], c->pp, p2p_bytes),
           pp_local = 0;
    if (c->tp > 1 && !s->L.sp && c->pp > 1) {
        /* the activation is replicated over the tensor-parallel group: each
         * rank sends its 1/tp share over its own link and the next stage's
         * group all-gathers it (Megatron's scatter/gather, Narayanan et al.
         * 2021, Sec. 4.1; DeepSpeed's pipeline engine partitions its
         * activations over the model-parallel ranks the same way); the
         * faster of the two */
        const double ag = comet_system_coll_s(
            sys, COMET_MODEL_ALLGATHER, s->inner[COMET_SYSTEM_TP], c->tp, p2p_bytes);
        const double sg
            = comet_system_p2p_s(sys, s->inner[COMET_SYSTEM_PP], c->pp, p2p_bytes / c->tp) + ag;
        if (sg < tp2p) {
            tp2p = sg;
            pp_local = ag; /* within the receiving group, off the pipeline's ports */
        }
    }
    /* 1F1B's paired exchanges: the link's measured exchange where it has
     * one (one message a way: not through the scatter/gather above), else
     * one message's time */
    double txch = tp2p;
    if (c->tp == 1 || s->L.sp)
        txch
            = fmax(tp2p, comet_system_exchange_s(sys, s->inner[COMET_SYSTEM_PP], c->pp, p2p_bytes));
    double steady, bubble, pp_s, dp_s = 0, opt = 0;
    memset(&r->breakdown, 0, sizeof r->breakdown);
    const double params = stage_params(m, o, c);
    const int fp32acc = train && s->L.grad_acc_kernel == COMET_SYSTEM_GRAD_ACC_FP32;
    if (train) {
        steady = mbs * (tf + tb);
        bubble = (c->pp - 1) / v * (tf + tb);
        /* the schedule's blocking transfers on its critical path (a
         * network engine or not: the schedule waits for them): DeepSpeed's
         * TrainSchedule or Megatron-LM's 1F1B / interleaved 1F1B, each
         * replayed (pipe.c), a chip's port shared by its messages to both
         * neighbours where it has one */
        if (c->pp > 1 && o->pipe_engine == COMET_SYSTEM_PIPE_DEEPSPEED)
            pp_s = deepspeed_pipe_s(sys, c, s, mbs, tf, tb, p2p_bytes);
        else
            pp_s = sys_pp_megatron_s(c->pp, (long)fmax(1, llround(mbs)), (int)v, tf, tb, tp2p, txch,
                comet_system_p2p_one_port(sys, s->inner[COMET_SYSTEM_PP], c->pp), pp_local);
        if (c->dp > 1) {
            const int di = s->inner[COMET_SYSTEM_DP];
            const double gb = params * m->bytes_per_elem;
            double t;
            if (fp32acc) {
                /* DeepSpeed's BF16_Optimizer (pipe/engine.py _bf16_reduce_grads
                 * @56c5223): the fp32 accumulated gradients all-reduced
                 * (buffered_allreduce_fallback), each rank's shard updated, the
                 * 16-bit weights all-gathered (all_gather_dp_groups) */
                t = comet_system_coll_s(sys, COMET_MODEL_ALLREDUCE, di, c->dp, params * 4)
                    + (c->zero >= 1 ? comet_system_coll_s(sys, COMET_MODEL_ALLGATHER, di, c->dp, gb)
                                    : 0);
            } else if (c->zero == 0) {
                t = comet_system_coll_s(sys, COMET_MODEL_ALLREDUCE, di, c->dp, gb);
            } else {
                /* ZeRO: the gradients reduce-scattered to their optimizer
                 * shards (once a step; every microbatch once they are
                 * sharded themselves), the updated weights all-gathered
                 * (once a step; ZeRO-3 gathers each layer's weights for its
                 * forward and again for its backward, every microbatch) */
                const double rs
                    = comet_system_coll_s(sys, COMET_MODEL_REDUCE_SCATTER, di, c->dp, gb);
                const double ag = comet_system_coll_s(sys, COMET_MODEL_ALLGATHER, di, c->dp, gb);
                t = (c->zero >= 2 ? mbs : 1) * rs + (c->zero >= 3 ? 2 * mbs : 1) * ag;
            }
            dp_s = ovnet ? fmax(0, t - tb) : t; /* overlapped with the last backward */
        }
        if (c->pp > 1 && m->vocab > 0) {
            /* the word embedding (first stage) is tied to the LM head (last
             * stage): its gradient is all-reduced between the two once a
             * step, after the pipeline drains (Megatron-LM
             * megatron/training.py@d416968 train_step, "All-reduce
             * word_embeddings' grad across first and last stages";
             * DeepSpeed's ReduceTiedGrads, schedule.py): a ring of two, each
             * end sending half and then the other half reduced, over the
             * outermost level the pipeline spans */
            const double eb
                = (double)m->vocab * m->hidden / c->tp * (fp32acc ? 4 : m->bytes_per_elem);
            dp_s += 2 * comet_system_p2p_s(sys, s->inner[COMET_SYSTEM_PP], c->pp, eb / 2);
        }
        /* Adam: read gradients, master weights, moments; write them and the
         * 16-bit weights (ZeRO >= 1: of this chip's shard) */
        const double shard = params / (c->zero >= 1 ? c->dp : 1);
        opt = fmax(sys_mem_s(sys, shard * (24 + 2 * m->bytes_per_elem)),
            10 * shard / sys->vector_flops / sys_host_share(sys));
    } else {
        /* every microbatch through every stage; a stage idles while fewer
         * microbatches than stages are in flight */
        steady
            = (o->phase == COMET_SYSTEM_DECODE && !o->one_step ? fmax(mbs, c->pp) : mbs + c->pp - 1)
            * tf;
        bubble = 0;
        if (o->phase == COMET_SYSTEM_PREFILL || o->phase == COMET_SYSTEM_FORWARD || o->one_step)
            bubble = (c->pp - 1) * tf, steady -= bubble;
        else if (mbs < c->pp)
            bubble = (c->pp - mbs) * tf, steady -= bubble;
        /* a step that fills and drains its pipeline: Megatron's
         * forward-only schedule, blocking sends (a network engine: only
         * the fill) */
        if (c->pp > 1 && !ovnet && (o->phase != COMET_SYSTEM_DECODE || o->one_step))
            pp_s = sys_pp_forward_s(c->pp, (long)fmax(1, llround(mbs)), tp2p);
        else
            pp_s = c->pp > 1 ? (c->pp - 1) * tp2p + (ovnet ? 0 : mbs * tp2p) : 0;
    }
    /* weights kept on chip across microbatches: read once a step, their
     * accumulated gradients written once (eval.c's pinned bytes) */
    /* (eval.c costs them for the largest stage's layers; the slowest stage
     * may hold one fewer with the embedding slots) */
    const double pin_frac = embed_slots(o, c) ? Ls / stage_layers(m, o, c) : 1;
    const double pin_s = lo->pinned > 0 ? lo->pin_s * pin_frac : 0;
    r->step_s = steady + bubble + pp_s + dp_s + opt + pin_s;
    const double per = mbs * Ls;
    r->breakdown.compute_s = per * (lo->fwd_bd.compute + lo->bwd_bd.compute) + mbs * xc;
    r->breakdown.recompute_s = per * lo->bwd_bd.recompute;
    /* the head's (or embedding's) time beyond its compute and network */
    const double xm
        = embed_slots(o, c) ? xf + xb - xc - xn : (ht - hc) * (train ? 3 : 1) + ha + lf + lb;
    r->breakdown.memory_s = per * (lo->fwd_bd.memory + lo->bwd_bd.memory) + mbs * xm + pin_s;
    r->breakdown.tp_s = per * (lo->fwd_bd.net + lo->bwd_bd.net) + mbs * xn;
    r->breakdown.bubble_s = bubble;
    r->breakdown.pp_s = pp_s;
    r->breakdown.dp_s = dp_s;
    r->breakdown.optimizer_s = opt;
    /* model FLOP: forward (x3 for training) of every layer and the head,
     * over the whole batch, without recomputation */
    const double layer_flops = lo->fwd_flops * c->tp; /* the TP group's shares */
    const double head = m->vocab > 0 ? 2 * s->L.T * m->hidden * (double)m->vocab : 0;
    r->model_flops = (train ? 3 : 1) * (layer_flops * m->layers + head) * (double)s->B / s->mb;
    const int used = c->tp * c->pp * c->dp;
    r->mfu = r->model_flops / (r->step_s * used * sys->peak_flops);
    const double tokens = o->phase == COMET_SYSTEM_DECODE ? s->B : (double)s->B * s->seq;
    r->tokens_per_s = tokens / r->step_s;
    r->per_token_s = o->phase == COMET_SYSTEM_DECODE ? c->pp * tf + (c->pp - 1) * tp2p : 0;
    /* the bound: the slowest chip's compute and off-chip bytes at full
     * rate, overlapped perfectly, with nothing else */
    const double stage_bytes
        = per * (lo->fwd_bd.bytes + lo->bwd_bd.bytes) + fmax(0, lo->pinned) * pin_frac;
    r->bound_s = fmax(r->breakdown.compute_s + r->breakdown.recompute_s, stage_bytes / sys->mem_bw);
    r->layer_fwd_s = lo->fwd_s;
    r->weights_on_chip = fmax(0, lo->pinned);
    r->layer_bwd_s = lo->bwd_s;
    memcpy(r->parts, lo->parts, sizeof r->parts);
    r->feasible = 1;
    return 0;
}

/* Largest memory class, for the reason of a configuration that overflows. */
static const char *largest_class(const comet_system_result *r, double *v)
{
    const char *n[] = { "weights", "gradients", "optimizer state", "activations", "KV cache",
        "backward working set" };
    const double x[] = { r->mem.weights, r->mem.grads, r->mem.optimizer, r->mem.activations,
        r->mem.kv_cache, r->mem.working };
    int k = 0;
    for (int i = 1; i < 6; i++)
        if (x[i] > x[k])
            k = i;
    *v = x[k];
    return n[k];
}

/* The step with a layer cost already known (explore's cache) or computed. */
int sys_eval_cached(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, comet_system_result *r, const sys_layer_out *cached,
    sys_layer_out *scratch)
{
    setup s;
    memset(r, 0, sizeof *r);
    r->cfg = *c;
    r->cost_usd = r->power_w = NAN;
    if (c->tp < 1 || c->pp < 1 || c->dp < 1 || c->interleave < 1 || c->microbatch < 1
        || (unsigned)c->recompute > COMET_SYSTEM_RECOMPUTE_FULL
        || (unsigned)c->exec > COMET_SYSTEM_EXEC_DATAFLOW || (unsigned)c->zero > 3)
        return -EINVAL;
    if (!prepare(sys, m, o, c, &s, r))
        return 0;
    cost_power(sys, r);
    /* memory needs the stored bytes per layer: from the cache, or cost the layer */
    const sys_layer_out *lo = cached;
    sys_ctx C = ctx_for(sys, m, o, c, &s);
    if (!lo) {
        sys_layer_cost(&C, scratch);
        lo = scratch;
    }
    if (!isfinite(lo->fwd_s) || !isfinite(lo->bwd_s)) {
        for (int p = 0; p < 2; p++)
            if (lo->cuts_bad >> p & 1) {
                /* the pass's kernels, so the user can write them */
                char names[COMET_SYSTEM_MAX_KERNELS * 16 + 1] = "";
                const comet_system_parts *pp = &lo->parts[p];
                size_t l = 0;
                for (int x = 0; x < pp->nkernels && x < COMET_SYSTEM_MAX_KERNELS; x++)
                    l += (size_t)snprintf(
                        names + l, sizeof names - l, "%s%s", x ? " " : "", pp->kernel[x]);
                return fail(r,
                    "--cuts%s: the partitions do not name the %s pass's kernels in order, each "
                    "once: %s (q k v may replace qkv)",
                    p ? "-bwd" : "", p ? "backward" : "forward", names);
            }
        if (o->cuts[0] || o->cuts[1])
            return fail(r, "a partition --cuts gives does not fit the chip");
        return fail(r, "no cut of a layer's pass into %d partitions fits the chip", o->partitions);
    }
    memory(sys, m, o, c, &s, lo, r);
    if (r->mem.total > r->mem.capacity) {
        double v;
        const char *cls = largest_class(r, &v);
        return fail(r, "memory: %.3g GB per chip exceeds its %.3g GB (largest: %s, %.3g GB)",
            r->mem.total / 1e9, r->mem.capacity / 1e9, cls, v / 1e9);
    }
    if (r->mem.total > sys->mem_cap && sys->mem2_cap > 0) {
        /* part of the data lives in the second tier: its share of the
         * traffic runs at that tier's bandwidth (DFModel weights them by
         * capacity used) */
        comet_system s2 = *sys;
        const double f2 = (r->mem.total - sys->mem_cap) / r->mem.total;
        s2.mem_bw = 1.0 / ((1 - f2) / sys->mem_bw + f2 / sys->mem2_bw);
        sys_ctx C2 = ctx_for(&s2, m, o, c, &s);
        sys_layer_cost(&C2, scratch);
        return assemble(&s2, m, o, c, &s, scratch, r);
    }
    return assemble(sys, m, o, c, &s, lo, r);
}

int comet_system_eval(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, comet_system_result *r)
{
    sys_layer_out *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return -ENOMEM;
    int rc = sys_eval_cached(sys, m, o, c, r, NULL, scratch);
    free(scratch);
    if (rc == 0 && r->feasible)
        sys_fill_request(sys, m, o, c, r);
    return rc;
}

/* One step of a decode phase at `context` keys (or the prefill of prompts of
 * that length), 0 when it cannot run. */
static double phase_step(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, comet_system_phase ph, int context)
{
    comet_system_opts po = *o;
    comet_system_config pc = *c;
    comet_system_result pr;
    po.phase = ph;
    po.output_tokens = 0;
    if (ph == COMET_SYSTEM_PREFILL) {
        po.seq = context;
        po.context = 0;
    } else {
        po.context = context;
    }
    sys_layer_out *scratch = malloc(sizeof *scratch);
    if (!scratch)
        return 0;
    const int rc = sys_eval_cached(sys, m, &po, &pc, &pr, NULL, scratch);
    free(scratch);
    return rc == 0 && pr.feasible ? pr.step_s : 0;
}

/* A request: the batch's prompts through the prefill, then one decode step
 * per generated token, each at its context (the KV cache grows by one).
 * Up to 64 tokens every step is costed; beyond, 64 contexts spread over the
 * range and the steps between them interpolated linearly (a step's time is
 * non-decreasing in its context, so the sum lies between the rectangle rules
 * on the same samples). */
void sys_fill_request(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *c, comet_system_result *r)
{
    r->request_s = r->request_prefill_s = 0;
    if (o->phase != COMET_SYSTEM_DECODE || o->output_tokens <= 0)
        return;
    const int P = o->context > 0 ? o->context : (o->seq > 0 ? o->seq : m->seq);
    const int G = o->output_tokens;
    const double pre = phase_step(sys, m, o, c, COMET_SYSTEM_PREFILL, P);
    r->request_s = NAN;
    if (!(pre > 0))
        return;
    r->request_prefill_s = pre;
    const int n = G <= 64 ? G : 64;
    double sum = 0, prev_t = 0;
    int prev_x = 0;
    for (int k = 0; k < n; k++) {
        const int x = n == 1 ? 0 : (int)((double)k * (G - 1) / (n - 1) + 0.5);
        const double t = phase_step(sys, m, o, c, COMET_SYSTEM_DECODE, P + x);
        if (!(t > 0))
            return; /* the cache outgrows the chips at this context */
        if (k > 0) /* tokens prev_x .. x-1 on the line between the samples */
            sum += (x - prev_x) * prev_t + (t - prev_t) * (x - prev_x - 1) / 2.0;
        prev_x = x;
        prev_t = t;
    }
    r->request_s = pre + sum + prev_t;
}

int sys_layer_for(const comet_system *sys, const comet_system_llm *m, const comet_system_opts *o,
    const comet_system_config *c, sys_layer_out *out)
{
    setup s;
    comet_system_result r;
    memset(&r, 0, sizeof r);
    if (!prepare(sys, m, o, c, &s, &r))
        return 0;
    sys_ctx C = ctx_for(sys, m, o, c, &s);
    sys_layer_cost(&C, out);
    return 1;
}
