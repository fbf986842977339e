/* The op vocabulary: one descriptor per compound op. Names, shape keys,
 * the graph of basic ops, how the shape projects onto the model's rows x N
 * x K (and a second GEMM's width), which splits need collectives, and what
 * the unfused kernels do. Parsing, cost, search, explain, validate and the
 * CLI read this table; adding an op is a descriptor (and its graph) here. */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NODE(k, o, i0, i1, sh, red)                                                                \
    {                                                                                              \
        COMET_MODEL_BOP_##k, o, i0, i1, COMET_MODEL_T_##sh, red                                    \
    }
static const comet_model_graph g_softmax = {
    /* Y = exp(S - rowmax S) / rowsum(exp(S - rowmax S)), S = A B */
    6,
    { NODE(GEMM, "S", "A", "B", MN, 0), NODE(ROWMAX, "m", "S", "", ROW, 1),
        NODE(SUB, "D", "S", "m", MN, 0), NODE(EXP, "E", "D", "", MN, 0),
        NODE(ROWSUM, "l", "E", "", ROW, 1), NODE(DIV, "Y", "E", "l", MN, 0) },
    "Y"
};
static const comet_model_graph g_layernorm = {
    /* Y = (S - mean) / sqrt(var) * gamma + beta */
    8,
    { NODE(GEMM, "S", "A", "B", MN, 0), NODE(MEAN, "mu", "S", "", ROW, 1),
        NODE(SUB, "D", "S", "mu", MN, 0), NODE(VAR, "v", "D", "", ROW, 1),
        NODE(SQRT, "sd", "v", "", ROW, 0), NODE(DIV, "Z", "D", "sd", MN, 0),
        NODE(MUL, "G", "Z", "gamma", MN, 0), NODE(ADD, "Y", "G", "beta", MN, 0) },
    "Y"
};
static const comet_model_graph g_attention = {
    /* per head: S = Q K^T, P = exp(S - rowmax), O = P V / rowsum(P); the
     * P V GEMM reduces over Lk (the N dimension) */
    7,
    { NODE(GEMM, "S", "Q", "Kt", MN, 0), NODE(ROWMAX, "m", "S", "", ROW, 1),
        NODE(SUB, "D", "S", "m", MN, 0), NODE(EXP, "P", "D", "", MN, 0),
        NODE(ROWSUM, "l", "P", "", ROW, 1), NODE(GEMM, "U", "P", "V", MD, 1),
        NODE(DIV, "O", "U", "l", MD, 0) },
    "O"
};
static const comet_model_graph g_rmsnorm = {
    /* Y = S / sqrt(mean(S^2)) * gamma (Zhang & Sennrich 2019; Llama's norm) */
    6,
    { NODE(GEMM, "S", "A", "B", MN, 0), NODE(MUL, "Q", "S", "S", MN, 0),
        NODE(MEAN, "ms", "Q", "", ROW, 1), NODE(SQRT, "r", "ms", "", ROW, 0),
        NODE(DIV, "Z", "S", "r", MN, 0), NODE(MUL, "Y", "Z", "gamma", MN, 0) },
    "Y"
};
#undef NODE

/* The unfused kernels (kernels/): the GEMM writes the whole intermediate,
 * then one pass per row keeps the row in cache (softmax: max, exp-sum,
 * scale; LayerNorm: mean, deviations, apply), so the intermediate is read
 * once from memory and the result written once; attention's softmax runs in
 * place on S. The writes are non-temporal stores (no write-allocate read)
 * when the intermediate is at least 16 MiB (kernels/vmath.c's threshold;
 * the caller applies it), ordinary stores below; attention's S always takes
 * ordinary stores (P V reads it right after). The row pass is the measured
 * one (bench memory's softmax_row / layernorm_row) for softmax, LayerNorm
 * and attention's unfused softmax over S; RMSNorm's rows run another loop.
 * Change here when the kernels change. */
static const comet_model_opdesc descs[] = {
    { COMET_MODEL_GEMM_SOFTMAX, "gemm_softmax", "GEMM, then a softmax over each row",
        COMET_MODEL_SHAPE_GEMM, &g_softmax, 0, "N", 1, 1, 1, 0, 1 },
    { COMET_MODEL_GEMM_LAYERNORM, "gemm_layernorm", "GEMM, then a LayerNorm over each row",
        COMET_MODEL_SHAPE_GEMM, &g_layernorm, 0, "N", 1, 1, 1, 1, 1 },
    { COMET_MODEL_ATTENTION, "attention",
        "self-attention per head: Q K^T, softmax, times V (flash-style when fused)",
        COMET_MODEL_SHAPE_ATTENTION, &g_attention, 1, "Lk", 1, 1, 0, 0, 1 },
    { COMET_MODEL_GEMM_RMSNORM, "gemm_rmsnorm", "GEMM, then an RMSNorm over each row",
        COMET_MODEL_SHAPE_GEMM, &g_rmsnorm, 0, "N", 1, 1, 1, 1, 0 },
};
#define NDESC ((int)(sizeof descs / sizeof descs[0]))

const comet_model_opdesc *comet_model_op_desc(comet_model_op op)
{
    for (int i = 0; i < NDESC; i++)
        if (descs[i].op == op)
            return &descs[i];
    return NULL;
}

int comet_model_op_count(void)
{
    return NDESC;
}

const comet_model_opdesc *comet_model_op_at(int i)
{
    return i >= 0 && i < NDESC ? &descs[i] : NULL;
}

const char *comet_model_op_name(comet_model_op op)
{
    const comet_model_opdesc *d = comet_model_op_desc(op);
    return d ? d->name : "unknown";
}

int comet_model_op_parse(const char *s, comet_model_op *op)
{
    for (int i = 0; s && i < NDESC; i++)
        if (!strcmp(s, descs[i].name)) {
            *op = descs[i].op;
            return 0;
        }
    return -EINVAL;
}

const char *comet_model_op_list(void)
{
    static char buf[256];
    if (!buf[0])
        for (int i = 0; i < NDESC; i++) {
            size_t l = strlen(buf);
            snprintf(buf + l, sizeof buf - l, "%s%s", i ? ", " : "", descs[i].name);
        }
    return buf;
}

int comet_model_graph_build(const comet_model_problem *pb, comet_model_graph *g)
{
    const comet_model_opdesc *d = pb ? comet_model_op_desc(pb->op) : NULL;
    if (!d || !g)
        return -EINVAL;
    *g = *d->graph;
    return 0;
}

void comet_model_unfused_passes(comet_model_op op, double *reads, double *writes, int *streaming)
{
    const comet_model_opdesc *d = comet_model_op_desc(op);
    *reads = d ? d->pass_reads : 1;
    *writes = d ? d->pass_writes : 1;
    *streaming = d ? d->pass_streams : 0;
}

void comet_model_op_dims(const comet_model_problem *pb, comet_model_opdims *x)
{
    const comet_model_opdesc *d = comet_model_op_desc(pb->op);
    memset(x, 0, sizeof *x);
    x->desc = d;
    if (d && d->shape == COMET_MODEL_SHAPE_ATTENTION) {
        /* rows heads x lq, N = lk, K = d; a second GEMM of width d; each
         * head (group of lq rows) has its own K and V */
        x->rows = pb->heads * pb->lq;
        x->N = pb->lk;
        x->K = pb->d;
        x->Nout = pb->d;
        x->group = pb->lq;
        x->groups = pb->heads;
    } else {
        x->rows = pb->M;
        x->N = pb->N;
        x->K = pb->K;
        x->Nout = pb->N;
        x->group = pb->M;
        x->groups = 1;
    }
}

/* Shape keys of each shape class, and where they go. */
static double *shape_slot(comet_model_problem *pb, comet_model_shape_class c, const char *k)
{
    if (c == COMET_MODEL_SHAPE_ATTENTION)
        return !strcmp(k, "heads") ? &pb->heads
            : !strcmp(k, "lq")     ? &pb->lq
            : !strcmp(k, "lk")     ? &pb->lk
            : !strcmp(k, "d")      ? &pb->d
                                   : NULL;
    return !strcmp(k, "M") ? &pb->M : !strcmp(k, "N") ? &pb->N : !strcmp(k, "K") ? &pb->K : NULL;
}

const char *comet_model_shape_keys(comet_model_op op)
{
    const comet_model_opdesc *d = comet_model_op_desc(op);
    return d && d->shape == COMET_MODEL_SHAPE_ATTENTION ? "heads, lq, lk and d" : "M, N and K";
}

double *comet_model_problem_dim(comet_model_problem *pb, const char *name)
{
    const comet_model_opdesc *d = comet_model_op_desc(pb->op);
    return d ? shape_slot(pb, d->shape, name) : NULL;
}

int comet_model_problem_parse(const char *shape, comet_model_problem *pb, char *err, size_t errlen)
{
    char buf[512];
    const comet_model_opdesc *d = comet_model_op_desc(pb->op);
    if (!d)
        return comet_util_seterr(err, errlen, -EINVAL, "--shape: unknown op");
    if (!shape || strlen(shape) >= sizeof buf)
        return comet_util_seterr(err, errlen, -EINVAL, "--shape: missing or too long");
    strcpy(buf, shape);
    pb->M = pb->N = pb->K = pb->heads = pb->lq = pb->lk = pb->d = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        uint64_t v = 0;
        if (!eq)
            return comet_util_seterr(err, errlen, -EINVAL, "--shape: '%s' is not NAME=VALUE", tok);
        *eq = '\0';
        int rc = comet_util_parse_u64(eq + 1, &v);
        if (rc || v == 0 || v > (1ull << 40))
            return comet_util_seterr(err, errlen, -EINVAL,
                "--shape: %s=%s must be an integer in [1, 2^40]", tok, eq + 1);
        double *dst = shape_slot(pb, d->shape, tok);
        if (!dst)
            return comet_util_seterr(
                err, errlen, -EINVAL, "--shape: unknown dimension '%s' for %s", tok, d->name);
        if (*dst > 0)
            return comet_util_seterr(err, errlen, -EINVAL, "--shape: '%s' given twice", tok);
        *dst = (double)v;
    }
    comet_model_opdims x;
    comet_model_op_dims(pb, &x);
    if (!(x.rows > 0 && x.N > 0 && x.K > 0))
        return comet_util_seterr(
            err, errlen, -EINVAL, "--shape: needs %s", comet_model_shape_keys(pb->op));
    return 0;
}
