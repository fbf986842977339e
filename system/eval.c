/* One layer as a graph of kernels over tensors, costed on one chip kernel
 * by kernel or as fused partitions (a dynamic program over the kernel
 * chain). The step a configuration takes from these layer costs is
 * step.c's. docs/system.md states every formula. */
#include "comet_system.h"
#include "comet_util.h"
#include "system_internal.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAXT 64
#define MAXK 64

enum { E_GEMM = 0, E_VEC = 1 };

/* fmax and fmin as the C library computes them (the larger or smaller; of
 * a NaN and a number, the number; of equal values the second), inlined:
 * the partition scans call them some 10^8 times a search. */
static inline double maxd(double a, double b)
{
    return a > b || b != b ? a : b;
}

static inline double mind(double a, double b)
{
    return a < b || b != b ? a : b;
}

typedef struct tensor {
    double bytes; /* as consumers read it */
    double store; /* bytes kept for the backward (0: not kept) */
    int producer; /* kernel index, -1: in off-chip memory before the pass */
    int keep; /* written off-chip whatever the partition (layer output, gradients out) */
    int last; /* the last kernel reading it (-1: none) */
} tensor;

typedef struct kern {
    char name[16];
    int engine;
    double flops;
    double w; /* weight bytes read */
    double wgrad; /* weight-gradient bytes written (and read back when accumulating) */
    int nin, in[3], out;
    double M, N, K; /* GEMM shape per chip (tiling and padding) */
    comet_model_coll coll; /* collective on the output (TP group) */
    double coll_bytes; /* 0: none */
    double extra_rd, extra_wr; /* off-chip bytes outside the tensors (KV cache) */
    int recompute; /* a forward kernel run again in the backward */
    int async; /* its collective runs beside its compute (kernel by kernel: the longer
                  of the two) */
    /* precomputed per layer evaluation (best_parts): the kernel's compute
     * and collective times, and its re-read factors when it runs alone with
     * the whole on-chip memory */
    double pc, pnet;
    float wf, af;
} kern;

typedef struct graph {
    int nt, nk;
    tensor t[MAXT];
    kern k[MAXK];
} graph;

static int add_t(graph *g, double bytes, double store, int producer)
{
    tensor *t = &g->t[g->nt];
    t->bytes = bytes;
    t->store = store;
    t->producer = producer;
    t->keep = 0;
    t->last = -1;
    return g->nt++;
}

/* dst = a b c, cut to n - 1 characters as snprintf cuts it (the graphs are
 * rebuilt for every configuration a search costs). */
static void name_cat(char *dst, size_t n, const char *a, const char *b, const char *c)
{
    const char *p[3] = { a, b, c };
    size_t l = 0;
    for (int q = 0; q < 3; q++)
        for (const char *x = p[q]; *x && l + 1 < n; x++)
            dst[l++] = *x;
    dst[l] = 0;
}

/* A kernel writing a new tensor of out_bytes (stored for the backward: store). */
static kern *add_k(graph *g, const char *name, int engine, double flops, int nin, const int *in,
    double out_bytes, double store)
{
    kern *k = &g->k[g->nk];
    memset(k, 0, sizeof *k);
    name_cat(k->name, sizeof k->name, name, "", "");
    k->engine = engine;
    k->flops = flops;
    k->nin = nin;
    for (int i = 0; i < nin; i++) {
        k->in[i] = in[i];
        g->t[in[i]].last = g->nk; /* kernels are added in execution order */
    }
    k->out = add_t(g, out_bytes, store, g->nk);
    k->coll_bytes = 0;
    g->nk++;
    return k;
}

/* The forward graph of one layer for one microbatch on one chip, with the
 * stored activations of the recomputation choice. Follows Megatron's
 * tensor parallelism (Shoeybi et al. 2019): QKV and FFN-in split by columns,
 * projection and FFN-out by rows with an all-reduce of the output (with
 * sequence parallelism, Korthikanti et al. 2022: all-gather before, reduce-
 * scatter after, and the replicated tensors split by the TP degree).
 * split: the Q, K and V products as three kernels, so that a dataflow chip
 * may place them in different partitions (DFModel does); otherwise one fused
 * QKV GEMM that reads its input once. */
static void build_fwd(const sys_layer *L, int split, graph *g, int *X0out)
{
    const double e = L->e, T = L->T, h = L->h, tp = L->tp;
    const double rep = L->sp ? 1.0 / tp : 1.0;
    const double al = L->al, gl = L->gl, d = L->d, fl = L->fl, gate = L->gated ? 2 : 1;
    const double hd = T * h * e; /* a full activation */
    const int train = L->phase == COMET_SYSTEM_TRAIN;
    /* dropout runs in training's forward, also when that forward runs alone */
    const int drop = L->dropout && (train || L->phase == COMET_SYSTEM_FORWARD);
    const int keep_attn = train && L->rec == COMET_SYSTEM_RECOMPUTE_NONE;
    const int keep_all = train && L->rec != COMET_SYSTEM_RECOMPUTE_FULL;
    const comet_model_coll out_coll = L->sp ? COMET_MODEL_REDUCE_SCATTER : COMET_MODEL_ALLREDUCE;
    /* attention rows: every sequence's query tokens against its context */
    const double bq = L->b * L->sq, sc = L->b * al * L->sq * L->ctx;
    memset(g, 0, sizeof *g);
    int x0 = add_t(g, hd * rep, train ? hd * rep : 0, -1);
    *X0out = x0;
    int in[3];

    in[0] = x0;
    kern *k = add_k(g, "ln1", E_VEC, 8 * T * h * rep, 1, in, hd, keep_all ? hd * rep : 0);
    if (L->sp && tp > 1) {
        k->coll = COMET_MODEL_ALLGATHER;
        k->coll_bytes = hd;
    }
    int l1 = k->out;
    int qkv = -1, qt = -1, kt = -1, vt = -1;
    if (split) {
        static const char *const nm[3] = { "q", "k", "v" };
        int *o[3] = { &qt, &kt, &vt };
        for (int j = 0; j < 3; j++) {
            const double heads = j ? gl : al;
            in[0] = l1;
            k = add_k(g, nm[j], E_GEMM, 2 * T * h * heads * d, 1, in, T * heads * d * e,
                keep_all ? T * heads * d * e : 0);
            k->w = h * heads * d * e;
            k->M = T;
            k->K = h;
            k->N = heads * d;
            if (j && L->phase == COMET_SYSTEM_PREFILL)
                k->extra_wr = T * gl * d * e; /* the KV cache */
            *o[j] = k->out;
        }
        in[0] = qt;
        in[1] = kt;
    } else {
        in[0] = l1;
        k = add_k(g, "qkv", E_GEMM, 2 * T * h * (al + 2 * gl) * d, 1, in, T * (al + 2 * gl) * d * e,
            keep_all ? T * (al + 2 * gl) * d * e : 0);
        k->w = h * (al + 2 * gl) * d * e;
        k->M = T;
        k->K = h;
        k->N = (al + 2 * gl) * d;
        if (L->phase == COMET_SYSTEM_PREFILL)
            k->extra_wr = T * 2 * gl * d * e; /* the KV cache */
        qkv = k->out;
        in[0] = qkv;
    }
    k = add_k(g, "score", E_GEMM, 2 * sc * d, split ? 2 : 1, in, sc * e, 0);
    k->M = L->sq;
    k->N = L->ctx;
    k->K = d;
    if (L->phase == COMET_SYSTEM_DECODE)
        k->extra_rd = L->b * L->ctx * gl * d * e; /* K from the cache */
    if (L->alibi_baddbmm) {
        /* torch.baddbmm(bias, q, k^T, beta=1) with the bias of b x heads x
         * 1 x keys (bigscience Megatron-DeepSpeed megatron/model/
         * transformer.py, ParallelAttention with alibi): PyTorch's baddbmm
         * copies the expanded bias into its output before the GEMM
         * (aten/src/ATen/native/LinearAlgebra.cpp, common_checks_baddbmm_bmm:
         * "if (beta != 0) result.copy_(self)"), and the batched GEMM with
         * beta 1 reads that output back as C: the bias row read, the scores
         * written once more and read once */
        k->extra_rd = L->b * al * L->ctx * e + sc * e;
        k->extra_wr = sc * e;
    }
    in[0] = k->out;
    k = add_k(g, "softmax", E_VEC, 5 * sc, 1, in, sc * e, keep_attn ? sc * e : 0);
    if (L->softmax_unfused) {
        /* PyTorch's path (Megatron's forward_torch_softmax): input.float()
         * (read e, write 4 B), the scale (4, 4), masked_fill_ (4, 4),
         * the softmax (4, 4), the cast back (4, e): 16 B more read and
         * written an element than the fused kernel's read and write */
        k->extra_rd = 16 * sc;
        k->extra_wr = 16 * sc;
    }
    int probs = k->out;
    if (drop) {
        in[0] = probs;
        /* the dropout output and its 1-byte mask */
        k = add_k(g, "attn_drop", E_VEC, 2 * sc, 1, in, sc * e, keep_attn ? sc * (e + 1) : 0);
        probs = k->out;
    }
    in[0] = probs;
    in[1] = split ? vt : qkv;
    k = add_k(
        g, "context", E_GEMM, 2 * sc * d, 2, in, bq * al * d * e, keep_all ? bq * al * d * e : 0);
    k->M = L->sq;
    k->N = d;
    k->K = L->ctx;
    if (L->phase == COMET_SYSTEM_DECODE)
        k->extra_rd = L->b * L->ctx * gl * d * e; /* V from the cache */
    in[0] = k->out;
    k = add_k(g, "proj", E_GEMM, 2 * T * al * d * h, 1, in, L->sp ? hd * rep : hd, 0);
    k->w = al * d * h * e;
    k->M = T;
    k->K = al * d;
    k->N = h;
    if (tp > 1) {
        k->coll = out_coll;
        k->coll_bytes = hd;
    }
    in[0] = k->out;
    in[1] = x0;
    /* dropout, scale and add (and the 1-byte mask kept), or the add alone */
    k = add_k(g, "res1", E_VEC, (drop ? 3 : 1) * T * h * rep, 2, in, hd * rep,
        keep_all ? hd * rep * (1 + (drop ? 1 / e : 0)) : 0);
    int x1 = k->out;
    in[0] = x1;
    k = add_k(g, "ln2", E_VEC, 8 * T * h * rep, 1, in, hd, keep_all ? hd * rep : 0);
    if (L->sp && tp > 1) {
        k->coll = COMET_MODEL_ALLGATHER;
        k->coll_bytes = hd;
    }
    in[0] = k->out;
    k = add_k(g, "ffn_in", E_GEMM, 2 * T * h * fl * gate, 1, in, T * fl * gate * e,
        keep_all ? T * fl * gate * e : 0);
    k->w = h * fl * gate * e;
    k->M = T;
    k->K = h;
    k->N = fl * gate;
    in[0] = k->out;
    k = add_k(g, "act", E_VEC, 8 * T * fl * gate, 1, in, T * fl * e, keep_all ? T * fl * e : 0);
    in[0] = k->out;
    k = add_k(g, "ffn_out", E_GEMM, 2 * T * fl * h, 1, in, L->sp ? hd * rep : hd, 0);
    k->w = fl * h * e;
    k->M = T;
    k->K = fl;
    k->N = h;
    if (tp > 1) {
        k->coll = out_coll;
        k->coll_bytes = hd;
    }
    in[0] = k->out;
    in[1] = x1;
    k = add_k(g, "res2", E_VEC, (drop ? 3 : 1) * T * h * rep, 2, in, hd * rep,
        keep_all && drop ? hd * rep / e : 0);
    g->t[k->out].keep = 1; /* the layer's output goes to the next layer */
}

/* Whether a forward kernel is rerun in the backward under the layer's
 * recomputation choice (selective: the attention core, Korthikanti et al.). */
static int recomputed(const sys_layer *L, const kern *k)
{
    if (L->rec == COMET_SYSTEM_RECOMPUTE_NONE)
        return 0;
    if (L->rec == COMET_SYSTEM_RECOMPUTE_FULL)
        return 1;
    return !strcmp(k->name, "score") || !strcmp(k->name, "softmax")
        || !strcmp(k->name, "attn_drop");
}

/* Appends the recomputed forward kernels to the backward graph; map sends
 * their forward outputs to the recomputed copies. */
static void emit_recompute(const sys_layer *L, const graph *f, graph *g, int *map)
{
    for (int i = 0; i < f->nk; i++) {
        const kern *k = &f->k[i];
        if (!recomputed(L, k))
            continue;
        int in[3];
        for (int j = 0; j < k->nin; j++)
            in[j] = map[k->in[j]];
        kern *r = add_k(g, "re_", k->engine, k->flops, k->nin, in, f->t[k->out].bytes, 0);
        name_cat(r->name, sizeof r->name, "re_", k->name, "");
        r->w = k->w;
        r->M = k->M;
        r->N = k->N;
        r->K = k->K;
        r->coll = k->coll;
        r->coll_bytes = k->coll_bytes;
        r->extra_rd = k->extra_rd; /* (training graphs: the unfused softmax's) */
        r->extra_wr = k->extra_wr;
        r->recompute = 1;
        map[k->out] = r->out;
    }
}

/* The backward of a forward graph: per kernel its input gradients (GEMMs:
 * data and weight gradients at the forward's FLOP each), the mirrored
 * collectives (an all-reduce of the input gradient where the forward's
 * input was replicated), reading what the forward stored. Recomputed
 * kernels run first, their outputs produced again on chip. */
static void build_bwd(const sys_layer *L, const graph *f, int x0, graph *g)
{
    const double tp = L->tp, hd = L->T * L->h * L->e;
    const comet_model_coll in_coll = L->sp ? COMET_MODEL_REDUCE_SCATTER : COMET_MODEL_ALLREDUCE;
    int map[MAXT]; /* forward tensor -> backward graph tensor (stored copy or recomputed) */
    int grad[MAXT]; /* forward tensor -> its gradient in the backward graph */
    memset(g, 0, sizeof *g);
    for (int i = 0; i < f->nt; i++) {
        map[i] = -1;
        grad[i] = -1;
    }
    /* stored forward tensors come from off-chip memory */
    for (int i = 0; i < f->nt; i++)
        if (f->t[i].store > 0 || i == x0)
            map[i] = add_t(g, f->t[i].bytes, 0, -1);
    /* recomputation: forward kernels again, outputs on chip (not stored).
     * Full recomputation reruns the forward before the backward starts;
     * selective reruns the attention core just before the backward of the
     * first kernel (in backward order) that reads what it recomputes, as
     * Megatron does, so a fused partition can keep it on chip. */
    int pending = L->rec != COMET_SYSTEM_RECOMPUTE_NONE;
    if (L->rec == COMET_SYSTEM_RECOMPUTE_FULL) {
        emit_recompute(L, f, g, map);
        pending = 0;
    }
    /* the gradient of the layer output arrives from the next layer */
    const int out = f->k[f->nk - 1].out;
    grad[out] = add_t(g, f->t[out].bytes, 0, -1);
    for (int i = f->nk - 1; i >= 0; i--) {
        const kern *k = &f->k[i];
        if (pending) {
            int needs = recomputed(L, k);
            for (int j = 0; j < k->nin && !needs; j++) {
                const int p = f->t[k->in[j]].producer;
                needs = p >= 0 && recomputed(L, &f->k[p]);
            }
            if (needs) {
                emit_recompute(L, f, g, map);
                pending = 0;
            }
        }
        const int dy = grad[k->out];
        if (dy < 0)
            continue;
        for (int j = 0; j < k->nin; j++) {
            const int x = k->in[j];
            const tensor *xt = &f->t[x];
            int in[3], nin = 0;
            in[nin++] = dy;
            if (k->engine == E_GEMM && k->nin == 2) {
                /* dA = dY B^T, dB = A^T dY: the other operand */
                const int o = map[k->in[1 - j]];
                if (o >= 0)
                    in[nin++] = o;
            } else if (k->engine == E_VEC && map[x] >= 0) {
                in[nin++] = map[x]; /* the saved input (normalisation, activation) */
            }
            if (grad[x] >= 0)
                in[nin++] = grad[x]; /* a tensor read twice: its gradients add */
            /* a product of two operands read from one tensor (Q K^T from
             * the QKV output) owes both operands' gradients to that input:
             * twice the forward's FLOP (dQ = dS K, dK = dS^T Q) */
            const double flops = k->engine == E_GEMM ? k->flops * (k->nin == 1 && k->w == 0 ? 2 : 1)
                                                     : 2 * k->flops / k->nin;
            char nm[16];
            name_cat(nm, sizeof nm, "d", k->name, k->nin > 1 ? (j ? "_b" : "_a") : "");
            kern *b = add_k(g, nm, k->engine, flops, nin, in, xt->bytes, 0);
            if (L->softmax_unfused && !strcmp(k->name, "softmax")) {
                /* autograd through the unfused path: the cast back's
                 * gradient (read e, write 4 B), the softmax's (read the
                 * fp32 probabilities and the gradient, write 4), the mask's
                 * (4, 4), the scale's (4, 4), the cast's (4, e): beyond the
                 * fused backward's two reads and one write of e */
                const double n = xt->bytes / L->e;
                b->extra_rd = (20 - L->e) * n;
                b->extra_wr = 16 * n;
            }
            b->M = k->M;
            b->N = k->K;
            b->K = k->N;
            if (k->engine == E_GEMM && k->w > 0)
                b->w = k->w; /* the data gradient reads the weights */
            /* where the forward's input was replicated over TP (LayerNorm
             * output into QKV / FFN-in) the input gradient is summed */
            /* (split Q, K, V: once, after the last of the three, dQ, has
             * added its share) */
            if (tp > 1 && k->w > 0
                && (!strcmp(k->name, "qkv") || !strcmp(k->name, "q")
                    || !strcmp(k->name, "ffn_in"))) {
                b->coll = in_coll;
                b->coll_bytes = hd;
                if (L->tp_overlap && strcmp(k->name, "q")) {
                    /* async: it runs beside the weight-gradient GEMM (moved
                     * there below); the re-all-gather of sequence
                     * parallelism runs beside this GEMM instead */
                    b->coll_bytes = 0;
                    if (L->sp && L->rec != COMET_SYSTEM_RECOMPUTE_FULL) {
                        b->coll = COMET_MODEL_ALLGATHER;
                        b->coll_bytes = hd;
                        b->async = 1;
                    }
                }
            }
            if (tp > 1 && L->sp && k->w > 0
                && (!strcmp(k->name, "proj") || !strcmp(k->name, "ffn_out"))) {
                b->coll = COMET_MODEL_ALLGATHER; /* the gradient gathered before the GEMM */
                b->coll_bytes = hd;
            }
            grad[x] = b->out;
        }
        if (k->engine == E_GEMM && k->w > 0) {
            /* weight gradient: input x output gradient, accumulated */
            int in[2] = { map[k->in[0]] >= 0 ? map[k->in[0]] : dy, dy };
            char nm[16];
            name_cat(nm, sizeof nm, "w", k->name, "");
            kern *b = add_k(g, nm, E_GEMM, k->flops, 2, in, 0, 0);
            b->M = k->K;
            b->N = k->N;
            b->K = k->M;
            b->wgrad = k->w;
            /* sequence parallelism keeps the LayerNorm output sharded; the
             * weight gradient needs all of it: gathered again (Korthikanti
             * et al. 2022, Sec. 4.2.2; Calculon's seq_par_ag_redo), once
             * per input (split Q, K, V: before wv, the first of the three
             * in backward order). Full recomputation gathers it in the
             * recomputed LayerNorm instead. */
            if (tp > 1 && L->sp && L->rec != COMET_SYSTEM_RECOMPUTE_FULL
                && (!strcmp(k->name, "qkv") || !strcmp(k->name, "v")
                    || !strcmp(k->name, "ffn_in"))) {
                b->coll = COMET_MODEL_ALLGATHER;
                b->coll_bytes = hd;
            }
            if (tp > 1 && L->tp_overlap
                && (!strcmp(k->name, "qkv") || !strcmp(k->name, "ffn_in"))) {
                /* the input gradient's all-reduce (reduce-scatter with
                 * sequence parallelism) beside this GEMM */
                b->coll = in_coll;
                b->coll_bytes = hd;
                b->async = 1;
            }
        }
    }
    /* the input gradient leaves for the previous layer */
    if (grad[x0] >= 0)
        g->t[grad[x0]].keep = 1;
}

/* Off-chip bytes of a GEMM's weights and DRAM-read activation with `share`
 * bytes of on-chip memory: output-stationary tiles t_m x t_n of fp32
 * accumulators in half the share; the weights are read once per row tile,
 * the activation once per column tile. */
static void gemm_rereads(const kern *k, double share, double *wf, double *af)
{
    *wf = *af = 1;
    if (k->M <= 0 || k->N <= 0 || share <= 0)
        return;
    const double acc = share / 2 / 4; /* accumulators that fit */
    double tm = floor(sqrt(acc));
    if (tm > k->M)
        tm = k->M;
    if (tm < 1)
        tm = 1;
    double tn = floor(acc / tm);
    if (tn > k->N)
        tn = k->N;
    if (tn < 1)
        tn = 1;
    *wf = ceil(k->M / tm);
    *af = ceil(k->N / tn);
}

/* A calibrated CPU's rank runs its GEMMs through BLAS as comet bench llm
 * does (the measured grid describes them). */
static int cpu_blas(const comet_system *S)
{
    return S->hw.grid.nt > 0 && S->hw.grid.values && !strcmp(S->hw.kind, "cpu");
}

static double compute_s_alone(const sys_ctx *C, const kern *k)
{
    if (k->engine == E_VEC) {
        const double cpu = sys_cpu_vec_s(C->sys, &C->L, k->name, k->flops);
        return cpu >= 0 ? cpu : k->flops / C->sys->vector_flops;
    }
    double eff = sys_gemm_eff(C->sys, k->flops);
    const comet_model_hw *hw = &C->sys->hw;
    const double T = hw->cores;
    if (cpu_blas(C->sys) && k->M == 1 && hw->lb.bw > 0 && C->sys->clock_hz > 0) {
        /* one row (a decode step's attention, a query a head): a GEMV that
         * streams its matrix (N x K elements) once, at best at each core's
         * L2 rate; from off-chip memory the kernel's memory term is slower */
        const double bytes = k->flops / 2 * C->L.e;
        double t = fmax(bytes / (hw->lb.bw * T * C->sys->clock_hz), k->flops / C->sys->peak_flops);
        /* attention's (no weights): with the KV cache in DRAM, as the
         * calibration timed comet's kernel on a cold cache (gemm.cold_gemv_
         * cycles_per_byte), each thread its heads */
        if (C->cold && k->w <= 0 && hw->cold_gemv_cpb > 0)
            t = fmax(t, bytes * hw->cold_gemv_cpb / (T * C->sys->clock_hz));
        return t;
    }
    if (cpu_blas(C->sys) && T > 1 && k->M > 0 && k->N > 0) {
        /* a calibrated CPU's rank: its T threads split the GEMM as comet
         * bench llm does (rows when M has 16 a thread, else columns), each
         * slice at one thread's measured rate on its share of a core */
        const int rows = k->M >= 16 * T;
        eff = comet_model_gemm_eff(hw, rows ? k->M / T : k->M, rows ? k->N : k->N / T, k->K, 1)
            * comet_model_gms_core_share(hw, T);
    } else if (hw->grid.nt > 0 && hw->grid.values) /* measured, at this GEMM's shape */
        eff = comet_model_gemm_eff(hw, k->M, k->N, k->K, hw->cores);
    else {
        /* a GPU's tiles in waves over its SMs (gemm.tiles): they pad a short M
         * themselves */
        const double et = sys_gemm_tiled_eff(C->sys, eff, k->flops, k->M, k->N, k->K);
        if (et > 0)
            return k->flops / (C->sys->peak_flops * et);
    }
    const int R = C->sys->gemm_rows;
    if (R > 0 && k->M > 0 && k->M < 8.0 * R) /* a short M pads the array */
        eff *= k->M / (ceil(k->M / R) * R);
    return k->flops / (C->sys->peak_flops * eff);
}

/* A kernel's compute on the chip's cores, beside the host's other ranks. */
static double compute_s(const sys_ctx *C, const kern *k)
{
    return compute_s_alone(C, k) / sys_host_share(C->sys);
}

/* Weight-gradient accumulators against the weights' width: the engines
 * accumulate at the hardware's accumulator width (fp32 unless stated). */
static double acc_ratio(const sys_ctx *C)
{
    const double acc = C->sys->hw.acc_bytes > 0 ? C->sys->hw.acc_bytes : 4;
    return acc > C->L.e ? acc / C->L.e : 1;
}

void sys_grad_acc_bytes(int mode, double wgrad, double e, double *rd, double *wr)
{
    *rd = *wr = 0;
    if (mode == COMET_SYSTEM_GRAD_ACC_KERNEL) {
        *rd = 2 * wgrad; /* the new gradient and the accumulated one */
        *wr = wgrad; /* their sum */
    } else if (mode == COMET_SYSTEM_GRAD_ACC_FP32) {
        const double p = wgrad / e; /* parameters */
        *rd = wgrad + 8 * p; /* the gradient; the fp32 copy and the fp32 sum */
        *wr = 8 * p; /* the fp32 copy (lp.grad.to(fp32)) and the new sum (add_) */
    }
}

/* The smallest row tile a partition can take: the tokens, at most an
 * array's rows (shared) or its stages (spatial). */
static double sys_tile_min(const sys_ctx *C)
{
    return mind(C->L.T,
        C->sys->gemm_units > 0      ? C->sys->gemm_stages
            : C->sys->gemm_rows > 0 ? C->sys->gemm_rows
                                    : 1);
}

/* The row tile a partition takes (its memory permitting): the one given
 * (DFModel's shard_N), never below the smallest, whose arrays a smaller
 * one would leave idle uncharged, nor above the tokens; else the tokens. */
static double sys_tile_max(const sys_ctx *C)
{
    return C->L.tile > 0 ? mind(C->L.T, maxd(C->L.tile, sys_tile_min(C))) : C->L.T;
}

/* How often a fused partition of kernels [i, j) (two or more) streams its
 * weights from off-chip memory, from what it must hold on chip. A partition
 * is a spatial pipeline over row tiles of tm tokens: every tensor it
 * touches is buffered per token (a tensor passed on chip for as many
 * kernels as lie between its producer and its last reader, the skew of the
 * pipeline, as DFModel's buffer depth; one read from or written to off-chip
 * memory double-buffered), and each GEMM either keeps its weights (and
 * weight-gradient accumulators) resident, so they are read once, or streams
 * them once per row tile. Returns the number of weight passes (1: resident
 * or one tile), or 0 when not even the smallest tile fits: the kernels
 * cannot run as one partition. *tile_out gets the rows per tile. */
static double fit_passes(
    const sys_ctx *C, double resident, double per_tok, int stream, double *tile_out, double *onchip)
{
    const double T = C->L.T, sram = C->sys->sram_bytes - C->pinned;
    /* the smallest tile: an array's rows along the tokens (shared), or its
     * stages (spatial: the token tile runs down an array's stages) */
    const double tmin = sys_tile_min(C);
    /* a tile given: the partitions take it where their memory holds it; a
     * spatial chip's GEMMs then run at exactly that tile (spat_s) */
    const double cap = sys_tile_max(C);
    if (!stream && resident + tmin * per_tok <= sram) {
        *tile_out = cap;
        if (per_tok > 0 && (sram - resident) / per_tok < cap)
            *tile_out = floor((sram - resident) / per_tok);
        *onchip = resident + *tile_out * per_tok;
        return 1;
    }
    const double tm = per_tok > 0 ? floor(sram / per_tok) : T;
    if (tm < tmin)
        return 0;
    *tile_out = mind(tm, cap);
    *onchip = *tile_out * per_tok;
    return ceil(T / *tile_out);
}

static double seg_passes(
    const sys_ctx *C, const graph *g, int i, int j, int stream, double *tile_out, double *onchip)
{
    const double T = C->L.T;
    double resident = 0, per_tok = 0;
    unsigned char seen[MAXT] = { 0 };
    for (int x = i; x < j; x++) {
        const kern *k = &g->k[x];
        if (!(C->pinned > 0)) /* pinned: already held, outside this partition */
            resident += k->w + k->wgrad * acc_ratio(C);
        for (int a = 0; a <= k->nin; a++) {
            const int t = a < k->nin ? k->in[a] : k->out;
            if (seen[t])
                continue;
            seen[t] = 1;
            const tensor *ts = &g->t[t];
            const int p = ts->producer;
            const int inside = p >= i && p < j;
            const int last = ts->last >= j ? j - 1 : ts->last;
            /* from its producer (or its first reader here) to its last reader;
             * leaving the chip adds a double buffer (an unread output: only that) */
            const double span = last - (inside ? p : x) + 1.0;
            const double depth = !inside ? maxd(2.0, span)
                : ts->last < 0           ? 2.0
                                         : maxd(1.0, span) + (ts->last >= j);
            per_tok += ts->bytes / T * depth;
        }
    }
    return fit_passes(C, resident, per_tok, stream, tile_out, onchip);
}

/* A spatial chip's GEMMs in a fused partition (gemm.mapping: spatial),
 * from the cycle model of DFModel @04f93d5 (src/intra_chip.py: m_factor
 * Par_lane LaneWidth >= M, n_factor Par_stage StageWidth >= N, Cycle =
 * m_factor n_factor K, a configuration's Compute_Latency = max Cycle x
 * num_tile / Freq, its sum of Par_lane Par_stage <= Core). Each GEMM runs on
 * arrays of its own: its output width across an array's L lanes, a row
 * tile's t tokens across its S stages (ceil(t / S) stage groups), its
 * reduction K streamed one step a cycle. An array computes one block (L
 * outputs by S tokens) at a time, in K cycles, the K steps of a block one
 * after another; so a GEMM of b blocks on P arrays takes ceil(b / P) rounds
 * of K cycles, and the tile takes the longest of the partition's GEMMs (they
 * run side by side, each tile passing down the pipeline). A weight gradient
 * reduces over the tile's t tokens into an output of the weights' shape:
 * ceil(M / L) ceil(N / S) blocks of t cycles. The split of the U arrays
 * among the GEMMs is the mapper's: the fewest cycles a tile over every
 * integer split (spat_tile). It is never below the two bounds that ignore
 * the split, K_max (a block's K steps follow one another) and ceil(t / S)
 * sum(ceil(A / L) K) / U (the arrays' work, padded to whole lanes and
 * stages); at one stage group these bind, at two a GEMM of more blocks than
 * arrays takes two rounds of K (docs/system.md "Fig. 19's ranking").
 * DFModel's blocks are a Par_lane x Par_stage rectangle (m_factor x
 * n_factor rounds); any assignment of whole blocks to arrays is taken here,
 * which is never slower. Vector kernels stay on the vector engine. A
 * partition's GEMMs: */
#define SPAT_MAX MAXK
typedef struct spat {
    double kmax; /* the longest reduction over token rows (cycles a tile) */
    double w; /* sum of ceil(A / L) K: array-cycles per stage group and tile */
    double wg; /* weight gradients: sum of ceil(M / L) ceil(N / S) (array-cycles a token) */
    int n, nw; /* GEMMs over token rows, weight gradients */
    double m[SPAT_MAX], k[SPAT_MAX]; /* lane groups ceil(A / L), cycles a block ceil(K) */
    double wb[SPAT_MAX]; /* a weight gradient's blocks */
} spat;

static void spat_add(const sys_ctx *C, const kern *k, spat *s)
{
    const comet_system *S = C->sys;
    if (!(S->gemm_units > 0) || k->engine != E_GEMM || !(k->flops > 0))
        return;
    const double T = C->L.T, L = S->gemm_lanes, R = S->gemm_stages;
    if (k->wgrad > 0) { /* an output of M x N weights, either way round */
        const double b
            = maxd(mind(ceil(k->M / L) * ceil(k->N / R), ceil(k->N / L) * ceil(k->M / R)),
                k->flops / (2 * T * L * R));
        s->wg += b;
        if (s->nw < SPAT_MAX)
            s->wb[s->nw] = ceil(b);
        s->nw++;
        return;
    }
    const double K = k->K >= 1 ? k->K : 1;
    const double A = k->flops / (2 * T * K); /* output width a token (heads included) */
    s->kmax = maxd(s->kmax, K);
    s->w += ceil(A / L) * K;
    if (s->n < SPAT_MAX) {
        s->m[s->n] = ceil(A / L);
        s->k[s->n] = ceil(K);
    }
    s->n++;
}

/* Cycles a tile of t tokens in g stage groups takes at the bounds that
 * ignore the integer split (the arrays' work and the longest reduction). */
static double spat_bound(const comet_system *S, const spat *s, double g, double t)
{
    return maxd(maxd(s->kmax, s->wg > 0 ? t : 0), (g * s->w + t * s->wg) / S->gemm_units);
}

/* Arrays the partition's GEMMs need to finish a tile of t tokens in g stage
 * groups within c cycles (each GEMM ceil(b / floor(c / K)) of them), or
 * more than `units` as soon as that is clear. */
static double spat_need(const spat *s, double g, double t, double c, double units)
{
    double need = 0;
    for (int x = 0; x < s->n && need <= units; x++) {
        const double r = floor(c / s->k[x]); /* rounds of K within c */
        need += r >= 1 ? ceil(s->m[x] * g / r) : INFINITY;
    }
    for (int x = 0; x < s->nw && need <= units; x++) {
        const double r = floor(c / t);
        need += r >= 1 ? ceil(s->wb[x] / r) : INFINITY;
    }
    return need;
}

/* spat_need at c (in full), and the run of whole cycles around c with the
 * same need: a GEMM's need changes only where its rounds floor(c / K) do,
 * at the multiples of its K (t for a weight gradient), so need is the same
 * from *below (the last such multiple of any GEMM at or under c) up to
 * *above - 1 (the first over it). */
static double spat_need_run(
    const spat *s, double g, double t, double c, double *below, double *above)
{
    double need = 0, b = 0, a = INFINITY;
    for (int x = 0; x < s->n + (s->nw > 0); x++) {
        const double k = x < s->n ? s->k[x] : t, r = floor(c / k);
        b = maxd(b, r * k);
        a = mind(a, (r + 1) * k);
        if (x < s->n)
            need += r >= 1 ? ceil(s->m[x] * g / r) : INFINITY;
        else
            for (int y = 0; y < s->nw; y++)
                need += r >= 1 ? ceil(s->wb[y] / r) : INFINITY;
    }
    *below = b;
    *above = a;
    return need;
}

/* The fewest cycles a tile of t tokens in g stage groups takes over every
 * integer split of the arrays (the smallest c whose need fits them: need
 * never grows with c, so a bisection over whole cycles), or INFINITY when
 * it is not below `limit`. Needs no more GEMMs than arrays. Where every
 * quantity is a whole number (all but a fractional tile with weight
 * gradients) the same smallest c comes from fewer probes: no GEMM can
 * finish within fewer than ceil(b / (U - n + 1)) rounds of its K (the other
 * GEMMs hold an array each), and each probe moves the bracket to the ends
 * of the run of cycles of its need (spat_need_run). */
static double spat_tile(const comet_system *S, const spat *s, double g, double t, double limit)
{
    const double U = S->gemm_units, n = s->n + s->nw;
    double lo = ceil(spat_bound(S, s, g, t)), cmax = s->nw > 0 ? t : 0, work = 0;
    for (int x = 0; x < s->n; x++) { /* the exact reductions: whole cycles */
        cmax = maxd(cmax, s->k[x]);
        work += s->m[x] * g * s->k[x];
    }
    for (int x = 0; x < s->nw; x++)
        work += s->wb[x] * t;
    lo = maxd(lo, cmax);
    if (lo >= limit * (1 - 1e-12))
        return INFINITY;
    const int whole = (s->nw == 0 || t == floor(t)) && work < 0x1p50;
    double first = 0; /* whole: no c below it fits */
    if (whole) {
        for (int x = 0; x < s->n; x++)
            first = maxd(first, ceil(s->m[x] * g / (U - n + 1)) * s->k[x]);
        for (int x = 0; x < s->nw; x++)
            first = maxd(first, ceil(s->wb[x] / (U - n + 1)) * t);
    }
    if (first > lo) { /* lo does not fit */
        if (first >= limit * (1 - 1e-12))
            return INFINITY;
        if (spat_need(s, g, t, first, U) <= U)
            return first;
        lo = first;
    } else if (spat_need(s, g, t, lo, U) <= U)
        return lo;
    /* feasible: from c >= 2 K each GEMM has at least c / (2 K) rounds, so
     * it needs at most 2 b K / c + 1 arrays; or one array each */
    double hi = U > n ? maxd(2 * cmax, ceil(2 * work / (U - n))) : 0;
    if (!(hi > 0)) {
        for (int x = 0; x < s->n; x++)
            hi = maxd(hi, s->m[x] * g * s->k[x]);
        for (int x = 0; x < s->nw; x++)
            hi = maxd(hi, s->wb[x] * t);
    }
    if (isfinite(limit) && ceil(limit * (1 - 1e-12)) - 1 < hi) { /* below the limit only */
        hi = ceil(limit * (1 - 1e-12)) - 1;
        if (hi <= lo || spat_need(s, g, t, hi, U) > U)
            return INFINITY;
    }
    while (hi - lo > 1) { /* need(lo) > U >= need(hi) */
        const double mid = floor((lo + hi) / 2);
        if (mid <= lo) /* a fractional hi within 2 of lo: one whole count between */
            return lo + 1 < hi && spat_need(s, g, t, lo + 1, U) <= U ? lo + 1 : hi;
        if (whole) {
            double below, above;
            if (spat_need_run(s, g, t, mid, &below, &above) <= U)
                hi = below;
            else
                lo = above - 1;
        } else if (spat_need(s, g, t, mid, U) <= U)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

/* The stage-group counts a tile may take: every count below 64, then those
 * of six significant bits (q 2^e, 32 <= q < 64: the multiples of 2^(a+1) in
 * [64 2^a, 128 2^a), 32 an octave, at most 3.1% apart). The set is closed
 * under doubling, and a larger on-chip memory's set holds a smaller one's,
 * so the time never grows with the memory. spat_step: the spacing at k. */
static double spat_step(double k)
{
    double st = 1, lo = 64;
    if (k < lo)
        return st;
    for (st = 2; k >= 2 * lo; lo *= 2)
        st *= 2;
    return st;
}

static int spat_groups_ok(double k)
{
    return k < 64 || fmod(k, spat_step(k)) == 0;
}

/* The bounds' time (no integer split) at the best of `tile` and its whole
 * stage groups: never above spat_s. */
static double spat_lb_s(const sys_ctx *C, const spat *s, double tile)
{
    const comet_system *S = C->sys;
    if (!(S->gemm_units > 0) || !(s->w > 0 || s->wg > 0))
        return 0;
    const double St = S->gemm_stages, k1 = floor(tile / St);
    double per = spat_bound(S, s, ceil(tile / St), tile) / tile;
    if (k1 >= 1)
        per = mind(per, spat_bound(S, s, k1, k1 * St) / (k1 * St));
    return C->L.T * per / S->clock_hz;
}

/* The partition's GEMM time on a spatial chip whose on-chip memory leaves
 * row tiles of up to `tile` tokens (0: not a spatial chip). The tile is the
 * mapper's to choose: for a number of groups g the largest tile is fastest
 * (min(tile, g S) tokens: the same rounds, more tokens), and g groups are
 * never faster than 2g (the same split, twice the rounds), so the
 * candidates are the allowed counts g in (k1 / 2, k1] (k1 = floor(tile / S))
 * and the tile itself, each tried against the best so far. With more GEMMs
 * than arrays (they must share them), the bounds. */
static double spat_s(const sys_ctx *C, const spat *s, double tile)
{
    const comet_system *S = C->sys;
    if (!(S->gemm_units > 0) || !(s->w > 0 || s->wg > 0))
        return 0;
    const double St = S->gemm_stages, k1 = floor(tile / St), kt = ceil(tile / St);
    if (s->n + s->nw > S->gemm_units || s->n > SPAT_MAX || s->nw > SPAT_MAX)
        return spat_lb_s(C, s, tile);
    if (C->L.tile > 0) /* a tile given (DFModel's shard_N): that tile, its stage groups */
        return C->L.T * spat_tile(S, s, kt, tile, INFINITY) / tile / S->clock_hz;
    double best = INFINITY; /* cycles a token */
    if (kt > k1 && spat_groups_ok(kt))
        best = spat_tile(S, s, kt, tile, INFINITY) / tile;
    /* no tile takes fewer cycles a token than the arrays' work (the same
     * at every whole number of groups), nor a tile of t tokens fewer than
     * its longest reduction */
    const double work = (s->w + St * s->wg) / (S->gemm_units * St);
    double k = k1 >= 64 ? floor(k1 / spat_step(k1)) * spat_step(k1) : k1;
    for (; k >= 1 && k > floor(k1 / 2) && best > work * (1 + 1e-12); k -= spat_step(k - 1)) {
        const double t = k * St;
        if (s->kmax / t >= best)
            break; /* and at every smaller tile */
        const double c = spat_tile(S, s, k, t, isfinite(best) ? best * t : INFINITY);
        if (c / t < best)
            best = c / t;
    }
    return C->L.T * best / S->clock_hz;
}

double sys_spatial_gemm_s(
    const comet_system *sys, double T, int n, const double *A, const double *K, double tile)
{
    sys_ctx C;
    memset(&C, 0, sizeof C);
    C.sys = sys;
    C.L.T = T;
    spat s = { 0 };
    for (int x = 0; x < n; x++) {
        kern k;
        memset(&k, 0, sizeof k);
        k.engine = E_GEMM;
        k.flops = 2 * T * A[x] * K[x];
        k.M = T;
        k.N = A[x];
        k.K = K[x];
        spat_add(&C, &k, &s);
    }
    return spat_s(&C, &s, tile);
}

/* A partition's time from its parts, as the hardware overlaps its engines:
 * compute (GEMM and vector engines), off-chip memory for `bytes`, and the
 * network. A kernel's own collective waits for its output; inside a
 * dataflow partition the collectives stream tile by tile beside the other
 * kernels. *c, *mem, *cm get the compute, memory and compute-with-memory
 * times. */
static double engines_s(const comet_system *S, double cg, double cv, double bytes, double net,
    int dataflow, double *c, double *mem, double *cm)
{
    const int ov = S->overlap;
    *c = (ov & COMET_MODEL_ENGINE_GEMM) && (ov & COMET_MODEL_ENGINE_VECTOR) ? maxd(cg, cv)
                                                                            : cg + cv;
    *mem = sys_mem_s(S, bytes);
    *cm = (ov & COMET_MODEL_ENGINE_MEMORY) ? maxd(*c, *mem) : *c + *mem;
    return (dataflow && (ov & COMET_MODEL_ENGINE_NETWORK)) ? maxd(*cm, net) : *cm + net;
}

/* The exact split of partition [i, j) (weights held: stream 0) is searched
 * once per dynamic program: the scan, the exact cost of the bounds' cuts
 * and the chosen partitions' breakdown ask for the same ones. Kept for one
 * best_parts at a time (its epoch), keyed by the tile too. */
typedef struct spat_memo {
    unsigned epoch;
    double tile, s;
} spat_memo;
static _Thread_local spat_memo spat_memo_tab[MAXK][MAXK + 1][2];
static _Thread_local unsigned spat_epoch; /* 0: off */

/* spat_s is a function of the GEMMs, the tile, the tokens and the chip's
 * arrays alone, and the same GEMMs recur across the programs of a search
 * (both forms of the QKV product, the weights pinned or not, configurations
 * that differ elsewhere): a memo by content, the whole key compared. */
#define SPAT_KEY   40 /* the tokens, tile, arrays, sums and counts; 2n + nw GEMM terms */
#define SPAT_CACHE 4096
typedef struct spat_cent {
    uint64_t h;
    int len;
    double s, key[SPAT_KEY];
} spat_cent;
static _Thread_local spat_cent spat_cache[SPAT_CACHE];

static double spat_s_cached(const sys_ctx *C, const spat *s, double tile)
{
    const comet_system *S = C->sys;
    const int len = 10 + 2 * s->n + s->nw;
    if (!(S->gemm_units > 0) || !(s->w > 0 || s->wg > 0))
        return 0; /* not a spatial chip's GEMMs (spat_s) */
    if (s->n > SPAT_MAX || s->nw > SPAT_MAX || len > SPAT_KEY)
        return spat_s(C, s, tile);
    double key[SPAT_KEY];
    key[0] = C->L.T;
    key[1] = C->L.tile > 0 ? -tile : tile; /* a tile given is exact (spat_s) */
    key[2] = S->gemm_units;
    key[3] = S->gemm_stages;
    key[4] = S->clock_hz;
    key[5] = s->kmax;
    key[6] = s->w;
    key[7] = s->wg;
    key[8] = s->n;
    key[9] = s->nw;
    memcpy(key + 10, s->m, (size_t)s->n * sizeof(double));
    memcpy(key + 10 + s->n, s->k, (size_t)s->n * sizeof(double));
    memcpy(key + 10 + 2 * s->n, s->wb, (size_t)s->nw * sizeof(double));
    uint64_t h = 1469598103934665603u;
    for (int x = 0; x < len; x++) {
        uint64_t u;
        memcpy(&u, &key[x], sizeof u);
        h = (h ^ u) * 1099511628211u;
        h ^= h >> 29;
    }
    spat_cent *e = &spat_cache[h % SPAT_CACHE];
    if (e->len == len && e->h == h && !memcmp(e->key, key, (size_t)len * sizeof(double)))
        return e->s;
    e->h = h;
    e->len = len;
    memcpy(e->key, key, (size_t)len * sizeof(double));
    e->s = spat_s(C, s, tile);
    return e->s;
}

/* s: the partition's GEMMs, or NULL: gathered from g's kernels [i, j) when
 * the memo does not hold them (in the order the scan adds them). */
static double spat_s_at(
    const sys_ctx *C, const graph *g, const spat *s, double tile, int i, int j, int stream)
{
    spat_memo *m = &spat_memo_tab[i][j][stream];
    if (spat_epoch && m->epoch == spat_epoch && m->tile == tile)
        return m->s;
    spat built;
    if (!s) {
        memset(&built, 0, sizeof built);
        for (int x = i; x < j; x++)
            spat_add(C, &g->k[x], &built);
        s = &built;
    }
    if (!spat_epoch)
        return spat_s_cached(C, s, tile);
    m->epoch = spat_epoch;
    m->tile = tile;
    m->s = spat_s_cached(C, s, tile);
    return m->s;
}

/* seg_cost with the weights of a fused partition held on chip where they
 * fit (stream 0) or streamed once a row tile (stream 1). */
static double seg_cost_as(const sys_ctx *C, const graph *g, int i, int j, int dataflow, int stream,
    sys_bd *bd, comet_system_parts *parts)
{
    const comet_system *S = C->sys;
    double cg = 0, cv = 0, net = 0, anet = 0, rd = 0, wr = 0, rec = 0, acc_rd = 0, acc_wr = 0;
    /* one kernel alone tiles against the whole on-chip memory (its re-read
     * factors); a fused partition streams its weights `passes` times */
    double passes = 1, tile = C->L.T, onchip = NAN;
    const int fused = dataflow && j - i > 1;
    if (fused && !(passes = seg_passes(C, g, i, j, stream, &tile, &onchip)))
        return INFINITY;
    /* a tile given: a GEMM alone on a spatial chip's arrays runs at it too
     * (without one it takes the whole microbatch, its arrays full) */
    const int spatial = fused || (dataflow && C->L.tile > 0 && S->gemm_units > 0);
    if (!fused && spatial)
        tile = sys_tile_max(C);
    spat sp = { 0 };
    /* BLAS on a CPU packs a GEMM's weights before it computes on them, so
     * their first read from memory is not hidden under the compute (the
     * grid times them hot): kernel by kernel, that read adds to the compute */
    const int serial_w = !dataflow && cpu_blas(S);
    unsigned char seen[MAXT] = { 0 };
    for (int x = i; x < j; x++) {
        const kern *k = &g->k[x];
        const double c = k->pc;
        if (k->engine == E_GEMM)
            cg += c;
        else
            cv += c;
        if (spatial)
            spat_add(C, k, &sp);
        if (k->recompute)
            rec += c;
        const double wf = fused ? passes : k->wf, af = fused ? 1 : k->af;
        /* streamed weight-gradient partial sums are written and read back at
         * the accumulator width once per tile after the first */
        const double wg = C->pinned > 0 ? 0 : k->wgrad * (1 + (passes - 1) * acc_ratio(C));
        if (serial_w && k->engine == E_GEMM && k->w > 0) {
            double ws = sys_mem_s(S, k->w * wf);
            /* measured: what packing it from DRAM adds at its N and K, the
             * rank's threads each their columns (gemm.cold_read) */
            const double cpb = C->cold ? comet_model_cold_read_cpb(&S->hw, k->N, k->K) : NAN;
            if (cpb > 0 && S->clock_hz > 0)
                ws = fmax(ws, k->w * wf * cpb / (S->hw.cores * S->clock_hz));
            cg += ws;
            if (k->recompute)
                rec += ws;
        } else if (!(C->pinned > 0)) /* pinned: held on chip across microbatches */
            rd += k->w * wf;
        if (k->wgrad > 0 && !dataflow && C->L.grad_acc_kernel) {
            /* the GEMM writes the gradient; a kernel of its own reads it and
             * the accumulated one and writes the sum (fp32: a cast copy,
             * then the fp32 sum; sys_grad_acc_bytes) */
            wr += k->extra_wr + k->wgrad;
            rd += k->extra_rd;
            double ar, aw;
            sys_grad_acc_bytes(C->L.grad_acc_kernel, k->wgrad, C->L.e, &ar, &aw);
            acc_rd += ar;
            acc_wr += aw;
        } else {
            rd += k->extra_rd + wg;
            wr += k->extra_wr + wg;
        }
        for (int a = 0; a < k->nin; a++) {
            const int t = k->in[a];
            const int p = g->t[t].producer;
            if ((p >= i && p < j) || seen[t])
                continue; /* on chip, or already read by this partition */
            seen[t] = 1;
            rd += g->t[t].bytes * (k->engine == E_GEMM && a == 0 ? af : 1);
        }
        if (k->async && !fused)
            anet += k->pnet; /* beside its own compute */
        else
            net += k->pnet;
        /* the output leaves the chip when stored for the backward, kept, or
         * read by a kernel outside the partition */
        const tensor *o = &g->t[k->out];
        double w = o->store;
        const int outside = o->keep || o->last >= j;
        if (outside && o->bytes > w)
            w = o->bytes;
        wr += w;
    }
    if (spatial) /* a spatial chip's arrays as the partition's GEMMs fill them */
        cg = maxd(cg, spat_s_at(C, g, &sp, tile, i, j, stream));
    double c, mem, cm;
    double t = engines_s(S, cg, cv, rd + wr, net, dataflow, &c, &mem, &cm);
    t += maxd(0, anet - cm); /* an asynchronous collective: what outlasts the kernel */
    if (acc_rd + acc_wr > 0) { /* the separate accumulation kernel(s), after the GEMM */
        const double ma = sys_mem_s(S, acc_rd + acc_wr);
        t += ma;
        mem += ma;
        cm += ma;
        rd += acc_rd;
        wr += acc_wr;
    }
    if (parts && parts->n < COMET_SYSTEM_MAX_KERNELS) {
        const int q = parts->n;
        parts->time_s[q] = (float)t;
        parts->compute_s[q] = (float)c;
        parts->memory_s[q] = (float)mem;
        parts->network_s[q] = (float)(net + anet);
        parts->onchip_bytes[q] = (float)onchip;
        parts->weight_passes[q] = fused ? (float)passes : NAN;
    }
    if (bd) {
        bd->compute += c - rec;
        bd->recompute += rec;
        bd->memory += cm - c;
        bd->net += t - cm;
        bd->bytes += rd + wr;
        bd->flops += 0;
    }
    return t;
}

/* Time of kernels [i, j) run as one partition (dataflow) or one kernel
 * (j = i + 1, kernel by kernel). Adds the parts to *bd when given. A fused
 * partition on a spatial chip may also stream its weights where it could
 * hold them: the tile they leave sets how full its arrays run (spat_s), so
 * the faster of the two; elsewhere holding them is never slower. */
static double seg_cost(const sys_ctx *C, const graph *g, int i, int j, int dataflow, sys_bd *bd,
    comet_system_parts *parts)
{
    if (!(C->sys->gemm_units > 0) || !dataflow || j - i < 2)
        return seg_cost_as(C, g, i, j, dataflow, 0, bd, parts);
    const double hold = seg_cost_as(C, g, i, j, dataflow, 0, NULL, NULL);
    const double stream = seg_cost_as(C, g, i, j, dataflow, 1, NULL, NULL);
    if (!bd && !parts) /* the cost alone: no third pass for the breakdown */
        return stream < hold ? stream : hold;
    return seg_cost_as(C, g, i, j, dataflow, stream < hold, bd, parts);
}

/* Test hook: when on, every partition the scan costs is costed again by
 * seg_cost and the largest relative difference kept. */
static int scan_check;
static double scan_diff;

void sys_scan_check_begin(void)
{
    scan_check = 1;
    scan_diff = 0;
}

double sys_scan_check_end(void)
{
    scan_check = 0;
    return scan_diff;
}

static void scan_compare(const sys_ctx *C, const graph *g, int i, int j, double t)
{
    const double ref = seg_cost(C, g, i, j, 1, NULL, NULL);
    double d;
    if (isinf(ref) || isinf(t))
        d = isinf(ref) && isinf(t) ? 0 : INFINITY;
    else
        d = fabs(t - ref) / maxd(ref, 1e-300);
    if (d > scan_diff)
        scan_diff = d;
}

/* What the bounds' scan of a spatial chip leaves for the exact program, per
 * fused partition [i, j): the terms of its cost beside the GEMMs' integer
 * split and, for each way (weights held, streamed), its tile, off-chip
 * bytes and bounds' cost (INFINITY: the way does not fit). */
typedef struct seg_terms {
    double cg, cv, net;
    double tile[2], bytes[2], lb[2];
} seg_terms;

/* The costs of every partition [i, j), j = i+1 .. n, in one pass that adds
 * a kernel at a time (the same terms as seg_cost, kept as running sums, so
 * the dynamic program is O(n^2) instead of O(n^3)), relaxing best[j].
 * What a partition holds per token never shrinks as it grows, nor do its
 * resident weights: once it cannot fit, no longer one can, and the scan
 * stops. With terms (a spatial chip), row[j] gets each partition's bounds'
 * cost instead of its exact one, terms[j] its terms and *jend the last j
 * costed. */
static void seg_scan(const sys_ctx *C, const graph *g, int i, double *best, int *cut, double *row,
    seg_terms *terms, int *jend)
{
    const comet_system *S = C->sys;
    const double T = C->L.T, acc = acc_ratio(C);
    double cg = 0, cv = 0, net = 0, wsum = 0, wg = 0, xrd = 0, xwr = 0, rdin = 0, wrout = 0;
    double resident = 0, closed = 0, in_b = 0, in_bp = 0, out_b = 0, out_bf = 0;
    spat sp = { 0 };
    int first[MAXT];
    unsigned char seen[MAXT] = { 0 };
    for (int x = i; x < g->nk; x++) {
        const kern *k = &g->k[x];
        const int j = x + 1;
        if (k->engine == E_GEMM)
            cg += k->pc;
        else
            cv += k->pc;
        net += k->pnet;
        wsum += k->w;
        wg += k->wgrad;
        xrd += k->extra_rd;
        xwr += k->extra_wr;
        if (!(C->pinned > 0))
            resident += k->w + k->wgrad * acc;
        spat_add(C, k, &sp);
        double corr = 0; /* inputs first read here and still read later: depth 2 */
        for (int a = 0; a < k->nin; a++) {
            const int t = k->in[a];
            int dup = 0;
            for (int b2 = 0; b2 < a; b2++)
                dup |= k->in[b2] == t;
            if (dup)
                continue;
            const tensor *ts = &g->t[t];
            const double b = ts->bytes / T;
            const int p = ts->producer;
            if (p >= i) { /* made here: closes at its last reader */
                if (ts->last == x) {
                    in_b -= b;
                    in_bp -= b * (1 - p);
                    closed += b * (x - p + 1);
                    if (!ts->keep)
                        wrout -= maxd(0, ts->bytes - ts->store);
                }
            } else if (!seen[t]) { /* read from off-chip memory, once */
                seen[t] = 1;
                first[t] = x;
                rdin += ts->bytes;
                if (ts->last == x) {
                    closed += 2 * b;
                } else {
                    out_b += b;
                    out_bf += b * x;
                    corr += b;
                }
            } else if (ts->last == x) {
                out_b -= b;
                out_bf -= b * first[t];
                closed += b * maxd(2, x - first[t] + 1);
            }
        }
        const tensor *o = &g->t[k->out];
        wrout += o->store;
        if (o->keep || o->last >= j)
            wrout += maxd(0, o->bytes - o->store);
        if (o->last < 0) {
            closed += 2 * o->bytes / T;
        } else {
            in_b += o->bytes / T;
            in_bp += o->bytes / T * (1 - x);
        }
        double t, fits = 0;
        if (jend)
            *jend = j;
        if (j - i == 1) {
            t = seg_cost(C, g, i, j, 1, NULL, NULL);
        } else {
            const double per_tok = closed + j * in_b + in_bp + j * out_b - out_bf + corr;
            t = fits = INFINITY;
            if (terms) {
                terms[j].cg = cg;
                terms[j].cv = cv;
                terms[j].net = net;
                terms[j].lb[0] = terms[j].lb[1] = INFINITY;
            }
            /* the weights held where they fit; on a spatial chip also streamed
             * (seg_cost: the faster) */
            for (int stream = 0; stream <= (S->gemm_units > 0); stream++) {
                double tile, onchip;
                const double passes = fit_passes(C, resident, per_tok, stream, &tile, &onchip);
                if (!passes)
                    continue;
                fits = 0;
                const int pin = C->pinned > 0;
                const double wgt = pin ? 0 : wg * (1 + (passes - 1) * acc);
                const double rd = (pin ? 0 : wsum * passes) + xrd + wgt + rdin,
                             wr = xwr + wgt + wrout;
                double c, mem, cm;
                if (terms) {
                    /* a spatial chip's bounds (spat_lb_s, never above spat_s):
                     * best_parts_run searches the integer split only where
                     * a partition could still improve on the best cut */
                    const double lb = engines_s(
                        S, maxd(cg, spat_lb_s(C, &sp, tile)), cv, rd + wr, net, 1, &c, &mem, &cm);
                    t = mind(t, lb);
                    terms[j].tile[stream] = tile;
                    terms[j].bytes[stream] = rd + wr;
                    terms[j].lb[stream] = lb;
                    continue;
                }
                const double cgs = maxd(cg, spat_s_at(C, g, &sp, tile, i, j, stream));
                t = mind(t, engines_s(S, cgs, cv, rd + wr, net, 1, &c, &mem, &cm));
            }
            if (isinf(fits)) {
                for (int j2 = j; scan_check && j2 <= g->nk; j2++)
                    scan_compare(C, g, i, j2, INFINITY); /* none longer fits either */
                if (jend)
                    *jend = j - 1;
                break;
            }
        }
        if (scan_check)
            scan_compare(C, g, i, j, t);
        if (row) { /* the partition's cost alone (a fixed partition count) */
            row[j] = t;
            continue;
        }
        if (best[i] + t < best[j]) {
            best[j] = best[i] + t;
            cut[j] = i;
        }
    }
}

/* The scan's exact cost of a fused partition [i, j) on a spatial chip from
 * the terms its bounds' scan left (the faster way), or INFINITY. With best
 * (the program so far) a way is searched only where its bounds' cost could
 * improve on best[j] and on ub[j] (an exact cut's cost to j): a partition
 * that cannot needs no integer split. */
static double seg_exact(const sys_ctx *C, const graph *g, int i, int j, const seg_terms *r,
    const double *best, const double *ub)
{
    double t = INFINITY;
    for (int stream = 0; stream < 2; stream++) {
        const double lb = r->lb[stream];
        if (isinf(lb)) /* does not fit (or could improve on nothing) */
            continue;
        if (best && (!(best[i] + lb < best[j]) || (ub && best[i] + lb > ub[j] * (1 + 1e-9))))
            continue;
        double c, mem, cm;
        const double cgs = maxd(r->cg, spat_s_at(C, g, NULL, r->tile[stream], i, j, stream));
        t = mind(t, engines_s(C->sys, cgs, r->cv, r->bytes[stream], r->net, 1, &c, &mem, &cm));
    }
    return t;
}

/* The graphs of one layer (forward and backward, both forms of the QKV
 * product, the weights pinned or not) hold the same few collectives on the
 * same group: each is costed once per sys_layer_cost (pnet_n >= 0). */
typedef struct pnet_memo {
    comet_model_coll coll;
    double bytes, s;
} pnet_memo;
#define PNET_MEMO 16
static _Thread_local pnet_memo pnet_tab[PNET_MEMO];
static _Thread_local int pnet_n = -1; /* -1: off */

static double kern_net_s(const sys_ctx *C, const kern *k)
{
    if (!(k->coll_bytes > 0))
        return 0;
    for (int x = 0; x < pnet_n; x++)
        if (pnet_tab[x].coll == k->coll && pnet_tab[x].bytes == k->coll_bytes)
            return pnet_tab[x].s;
    const double s = comet_system_coll_s(C->sys, k->coll, C->tp_inner, C->L.tp, k->coll_bytes);
    if (pnet_n >= 0 && pnet_n < PNET_MEMO)
        pnet_tab[pnet_n++] = (pnet_memo) { k->coll, k->coll_bytes, s };
    return s;
}

int comet_system_cuts_check(const char *spec, char *err, size_t errlen)
{
    int names = 0;
    const char *p = spec;
    if (!p || !*p)
        return comet_util_seterr(err, errlen, -EINVAL, "--cuts: empty");
    for (;;) {
        const size_t len
            = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");
        if (len == 0 || len >= sizeof(((kern *)0)->name))
            return comet_util_seterr(err, errlen, -EINVAL,
                "--cuts '%s': a kernel name expected at character %d (partitions "
                "separated by ',', kernels by '+', e.g. ln1+qkv,score+softmax)",
                spec, (int)(p - spec) + 1);
        if (++names > COMET_SYSTEM_MAX_KERNELS)
            return comet_util_seterr(
                err, errlen, -EINVAL, "--cuts: more than %d kernels", COMET_SYSTEM_MAX_KERNELS);
        p += len;
        if (!*p)
            return 0;
        if (*p != '+' && *p != ',')
            return comet_util_seterr(err, errlen, -EINVAL,
                "--cuts '%s': '%c' at character %d (only names, '+' and ',')", spec, *p,
                (int)(p - spec) + 1);
        p++;
    }
}

/* The ends of the partitions a --cuts spec gives g: 0 when its names are
 * g's kernels in order, each once, else -1 (another graph's names: Q, K
 * and V fused or apart, a phase's or recomputation's kernels). */
static int cuts_ends(const graph *g, const char *spec, int *ends, int *n)
{
    int x = 0, q = 0;
    for (const char *p = spec; *p;) {
        const size_t len = strcspn(p, "+,");
        if (x >= g->nk || len != strlen(g->k[x].name) || strncmp(p, g->k[x].name, len))
            return -1;
        x++;
        p += len;
        if (*p != '+')
            ends[q++] = x;
        if (*p)
            p++;
    }
    if (x != g->nk)
        return -1;
    *n = q;
    return 0;
}

/* A pass's kernels named in `parts`, its partitions not yet added. */
static void parts_begin(const graph *g, comet_system_parts *parts)
{
    parts->nkernels = g->nk;
    for (int x = 0; x < g->nk && x < COMET_SYSTEM_MAX_KERNELS; x++)
        memcpy(parts->kernel[x], g->k[x].name, sizeof parts->kernel[x]);
    parts->n = 0;
}

/* Best partition of the kernel chain: a dynamic program over cut points
 * (dataflow), or one kernel per partition (kernel by kernel); with `cuts`
 * (dataflow) the partitions given, costed as they are (*bad = 1 when they
 * do not name g's kernels). */
static double best_parts_run(const sys_ctx *C, graph *g, int dataflow, const char *cuts, int *bad,
    sys_bd *bd, comet_system_parts *parts)
{
    double best[MAXK + 1];
    int cut[MAXK + 1];
    for (int x = 0; x < g->nk; x++) {
        kern *k = &g->k[x];
        k->pc = compute_s(C, k);
        k->pnet = kern_net_s(C, k);
        double wf, af;
        gemm_rereads(k, maxd(0, C->sys->sram_bytes - C->pinned), &wf, &af);
        k->wf = (float)wf;
        k->af = (float)af;
    }
    best[0] = 0;
    for (int j = 1; j <= g->nk; j++) {
        best[j] = INFINITY;
        cut[j] = j - 1;
    }
    const int np = C->L.nparts;
    if (dataflow && cuts) {
        int ends[MAXK + 1], nq = 0;
        if (cuts_ends(g, cuts, ends, &nq))
            *bad = 1;
        for (int q = 0, i = 0; !*bad && q < nq; i = ends[q++]) {
            best[ends[q]] = best[i] + seg_cost(C, g, i, ends[q], dataflow, NULL, NULL);
            cut[ends[q]] = i;
        }
        if (*bad || !isfinite(best[g->nk])) {
            if (parts)
                parts_begin(g, parts);
            return INFINITY; /* not this graph's kernels, or a partition that does not fit */
        }
    } else if (dataflow && np > 0) {
        /* exactly np partitions (DFModel's num_config): the costs of every
         * partition [i, j), then a program over (partitions so far, cut) */
        static _Thread_local double cost[MAXK][MAXK + 1], D[MAXK + 1][MAXK + 1];
        static _Thread_local int ck[MAXK + 1][MAXK + 1];
        for (int i = 0; i < g->nk; i++) {
            for (int j = 0; j <= g->nk; j++)
                cost[i][j] = INFINITY;
            seg_scan(C, g, i, best, cut, cost[i], NULL, NULL);
        }
        for (int q = 0; q <= np; q++)
            for (int j = 0; j <= g->nk; j++)
                D[q][j] = q == 0 && j == 0 ? 0 : INFINITY;
        for (int q = 1; q <= np; q++)
            for (int j = q; j <= g->nk; j++)
                for (int i = q - 1; i < j; i++)
                    if (D[q - 1][i] + cost[i][j] < D[q][j]) {
                        D[q][j] = D[q - 1][i] + cost[i][j];
                        ck[q][j] = i;
                    }
        if (np > g->nk || !isfinite(D[np][g->nk])) {
            if (parts)
                parts->n = 0;
            return INFINITY; /* no cut into np partitions fits the chip */
        }
        for (int q = np, j = g->nk; q > 0; j = ck[q][j], q--) {
            cut[j] = ck[q][j];
            best[j] = D[q][j];
        }
    } else if (dataflow) {
        if (C->sys->gemm_units > 0 && !scan_check) {
            /* a spatial chip: the program over the bounds' costs first; the
             * exact cost of its cuts (ub) bounds the exact program's, which
             * then searches the integer split only where a partition could
             * still improve on it */
            static _Thread_local double lbc[MAXK][MAXK + 1];
            static _Thread_local seg_terms terms[MAXK][MAXK + 1];
            int jend[MAXK];
            double lbb[MAXK + 1], ub[MAXK + 1];
            int lcut[MAXK + 1];
            for (int i = 0; i < g->nk; i++) {
                for (int j = 0; j <= g->nk; j++)
                    lbc[i][j] = INFINITY;
                seg_scan(C, g, i, best, cut, lbc[i], terms[i], &jend[i]);
            }
            lbb[0] = ub[0] = 0;
            for (int j = 1; j <= g->nk; j++) {
                lbb[j] = INFINITY;
                lcut[j] = j - 1;
                for (int i = 0; i < j; i++)
                    if (lbb[i] + lbc[i][j] < lbb[j]) {
                        lbb[j] = lbb[i] + lbc[i][j];
                        lcut[j] = i;
                    }
                /* the exact cost of the bounds' last partition: the scan's
                 * (a path the exact program weighs, so a bound on it) */
                ub[j] = INFINITY;
                if (isfinite(lbb[j])) {
                    const int i = lcut[j];
                    ub[j] = ub[i]
                        + (j - i == 1 ? lbc[i][j]
                                      : seg_exact(C, g, i, j, &terms[i][j], NULL, NULL));
                }
            }
            /* the exact program from the terms the scan left: only the
             * partitions that could still improve are searched */
            for (int i = 0; i < g->nk; i++)
                for (int j = i + 1; isfinite(best[i]) && j <= jend[i]; j++) {
                    const double t
                        = j - i == 1 ? lbc[i][j] : seg_exact(C, g, i, j, &terms[i][j], best, ub);
                    if (best[i] + t < best[j]) {
                        best[j] = best[i] + t;
                        cut[j] = i;
                    }
                }
        } else {
            for (int i = 0; i < g->nk; i++)
                if (isfinite(best[i]))
                    seg_scan(C, g, i, best, cut, NULL, NULL, NULL);
        }
    } else {
        for (int j = 1; j <= g->nk; j++)
            best[j] = best[j - 1] + seg_cost(C, g, j - 1, j, 0, NULL, NULL);
    }
    /* walk back the cuts, adding each partition's parts */
    int ends[MAXK + 1], n = 0;
    for (int j = g->nk; j > 0; j = cut[j])
        ends[n++] = j;
    if (parts)
        parts_begin(g, parts);
    for (int q = n - 1; q >= 0; q--) {
        const int j = ends[q], i = cut[j];
        seg_cost(C, g, i, j, dataflow, bd, parts);
        if (parts)
            parts->end[parts->n++] = (unsigned char)j;
    }
    return best[g->nk];
}

static double best_parts(const sys_ctx *C, graph *g, int dataflow, int pass, int *bad, sys_bd *bd,
    comet_system_parts *parts)
{
    static _Thread_local unsigned gen;
    const char *cuts = C->L.cuts[pass];
    int b = 0;
    double t;
    if (!(C->sys->gemm_units > 0) || !dataflow || scan_check) {
        t = best_parts_run(C, g, dataflow, cuts, &b, bd, parts);
    } else {
        if (!++gen) /* 0 is "off" */
            ++gen;
        spat_epoch = gen;
        t = best_parts_run(C, g, dataflow, cuts, &b, bd, parts);
        spat_epoch = 0;
    }
    *bad |= b << pass;
    return t;
}

static void layer_graph_cost(const sys_ctx *C, int split, graph *f, graph *b, sys_layer_out *out)
{
    int x0;
    memset(out, 0, sizeof *out);
    build_fwd(&C->L, split, f, &x0);
    const int df = C->L.exec == COMET_SYSTEM_EXEC_DATAFLOW;
    for (int i = 0; i < f->nk; i++) {
        if (f->k[i].engine == E_GEMM) /* model FLOP: the matrix products */
            out->fwd_flops += f->k[i].flops;
        out->stored += f->t[f->k[i].out].store;
    }
    out->stored += f->t[x0].store;
    for (int i = 0; i < f->nt; i++) {
        out->working += f->t[i].bytes;
        if (f->t[i].last >= 0)
            out->act_grads += f->t[i].bytes;
    }
    out->fwd_s = best_parts(C, f, df, 0, &out->cuts_bad, &out->fwd_bd, &out->parts[0]);
    if (C->L.phase == COMET_SYSTEM_TRAIN) {
        build_bwd(&C->L, f, x0, b);
        out->bwd_s = best_parts(C, b, df, 1, &out->cuts_bad, &out->bwd_bd, &out->parts[1]);
    }
}

static void layer_cost_run(const sys_ctx *C, sys_layer_out *out);

void sys_layer_cost(const sys_ctx *C, sys_layer_out *out)
{
    pnet_n = 0; /* C's system and tensor-parallel group hold throughout */
    layer_cost_run(C, out);
    pnet_n = -1;
}

static void layer_cost_run(const sys_ctx *C, sys_layer_out *out)
{
    graph f, b;
    layer_graph_cost(C, 0, &f, &b, out);
    if (C->L.exec != COMET_SYSTEM_EXEC_DATAFLOW)
        return;
    /* dataflow: the better of one fused QKV GEMM and three products the
     * partitions may separate (when Q, K and V cannot share a partition,
     * the fused GEMM still reads its input once) */
    sys_layer_out o2;
    layer_graph_cost(C, 1, &f, &b, &o2);
    /* given partitions name one of the two graphs: bad only if neither */
    const int bad = out->cuts_bad & o2.cuts_bad;
    if (o2.fwd_s + o2.bwd_s < out->fwd_s + out->bwd_s || (out->cuts_bad && !o2.cuts_bad))
        *out = o2;
    out->cuts_bad = bad;
    /* a chip whose on-chip memory holds every weight of its stage (and, in
     * training, their gradient accumulators) keeps them there across
     * microbatches (a wafer-scale chip's weight-stationary mode): they are
     * read once a step, not once a microbatch, and the partitions fit in
     * what remains; the faster of the two */
    if (C->pinned > 0 || !(C->stage_layers > 0) || !(C->slots > 0))
        return;
    double w = 0, wg = 0;
    for (int i = 0; i < f.nk; i++)
        w += f.k[i].w;
    if (C->L.phase == COMET_SYSTEM_TRAIN)
        for (int i = 0; i < b.nk; i++)
            wg += b.k[i].wgrad;
    sys_ctx P = *C;
    P.pinned = C->stage_layers * (w + wg * acc_ratio(C));
    if (P.pinned >= C->sys->sram_bytes)
        return;
    /* compared over the step: every microbatch through every layer of the
     * stage, plus the once-a-step load (step.c charges the same) */
    const double n = C->stage_layers * C->slots, u = out->fwd_s + out->bwd_s;
    for (int split = 0; split < 2; split++) {
        layer_graph_cost(&P, split, &f, &b, &o2);
        o2.pinned = P.pinned;
        o2.pin_s = maxd(sys_mem_s(C->sys, P.pinned), C->stage_layers * (u - (o2.fwd_s + o2.bwd_s)));
        if (n * (o2.fwd_s + o2.bwd_s) + o2.pin_s < n * (out->fwd_s + out->bwd_s))
            *out = o2;
    }
}

const char *comet_system_part_str(const comet_system_parts *p, int i, char *buf, size_t len)
{
    buf[0] = 0;
    if (!p || i < 0 || i >= p->n)
        return buf;
    const int a = i ? p->end[i - 1] : 0, b = p->end[i];
    size_t l = 0;
    for (int x = a; x < b && x < COMET_SYSTEM_MAX_KERNELS && l + 1 < len; x++)
        l += (size_t)snprintf(buf + l, len - l, "%s%s", x > a ? "+" : "", p->kernel[x]);
    return buf;
}
