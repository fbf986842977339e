/* A GPT-style decoder stack in fp32 over a tp x dp grid of MPI ranks
 * (comet_bench_llm.h): forward, backward, gradient all-reduce, Adam,
 * prefill and decode with a KV cache, each kernel timed into the system
 * model's breakdown term it belongs to. */
#include "comet_bench_llm.h"
#include "comet_kernels.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void openblas_set_num_threads(int);
int openblas_get_num_threads(void);

static const char *const timer_names[COMET_LLM_NTIMERS] = { "gemm_s", "attention_s", "vector_s",
    "tp_s", "dp_s", "pp_s", "bubble_s", "optimizer_s", "recompute_s", "loss_s" };

const char *comet_llm_timer_name(comet_llm_timer t)
{
    return (unsigned)t < COMET_LLM_NTIMERS ? timer_names[t] : "?";
}

static const char *const tp_kind_names[COMET_LLM_TP_NKINDS]
    = { "tp_allreduce_s", "tp_allgather_s", "tp_reduce_scatter_s" };

const char *comet_llm_tp_kind_name(comet_llm_tp_kind k)
{
    return (unsigned)k < COMET_LLM_TP_NKINDS ? tp_kind_names[k] : "?";
}

static const char *const phase_names[3] = { "train", "prefill", "decode" };

const char *comet_llm_phase_name(comet_llm_phase p)
{
    return (unsigned)p < 3 ? phase_names[p] : "?";
}

int comet_llm_phase_parse(const char *s, comet_llm_phase *p)
{
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, phase_names[i])) {
            *p = (comet_llm_phase)i;
            return 0;
        }
    return -EINVAL;
}

/* Activations of one layer for one microbatch. */
typedef struct acts {
    float *x, *xn1, *q, *k, *v, *o, *oc, *x1, *xn2, *u, *a;
} acts;

/* Per-layer offsets into the rank's parameter block. */
typedef struct offs {
    size_t g1, b1, wqkv, wo, g2, b2, w1, w2, size;
} offs;

struct comet_llm {
    comet_llm_cfg c;
    MPI_Comm world, tp_comm, dp_comm, rep_comm; /* rep: one replica's tp x pp ranks */
    int tp_rank, dp_rank, pp_rank, pp;
    int prev, next; /* neighbouring stages' ranks in world (-1: none) */
    int l0, nl; /* this stage's first layer and its layers */
    int store_all; /* activations of every microbatch kept (pipeline: 1F1B in flight) */
    MPI_Request *req; /* pipeline sends in flight this step */
    int nreq, capreq;
    float *gsend; /* pipeline: each microbatch's input gradient while it is sent */
    int h, d, H, F; /* hidden, head dim, heads, ffn (whole model) */
    int al, h0; /* local heads and the first one */
    int fl, f0; /* local FFN columns and the first one */
    int ald; /* al x d */
    int sq; /* query tokens per sequence in a step (seq; decode 1) */
    int bl; /* sequences of this replica */
    int mb, nmb; /* sequences per microbatch, microbatches */
    size_t T; /* tokens per microbatch */
    int sp; /* sequence parallelism */
    size_t Tl, t0; /* this rank's token rows of a microbatch outside the TP regions (SP: a
                      contiguous share; else all T from 0) */
    int *cnt, *dsp, even; /* SP: each tp rank's rows x h and offsets; all shares equal */
    float *xg1, *xg2; /* SP: the gathered LayerNorm outputs (T x h) */
    float *dyg; /* SP train: a gathered gradient (T x h) */
    float *pl, *dxnl; /* SP: reduce-scattered shares (Tl x h) */
    float *lnbuf; /* SP train: the LayerNorm parameters' gradients of the stage's layers */
    int cap, pos0; /* KV rows per head (cache or activation), first row a step writes */
    offs of;
    size_t np; /* local parameters */
    float *P, *G, *M1, *M2; /* parameters, gradients, Adam moments */
    long adam_t;
    acts *A; /* per layer (train: stored; recompute: x only, the rest scratch) */
    acts scratch;
    float *kc, *vc; /* inference: KV cache [layer][bl al][cap][d] */
    float *qkv, *pbuf, *dy, *dx, *da, *du, *dxn, *dx1, *doc, *dO, *dq, *dk, *dv, *dqkv;
    float *out; /* the stack's output over this replica's tokens [bl sq][h] */
    float *tgt; /* targets [bl seq][h] (train) */
    float *attn_scr; /* attention backward scratch: 2 x cap^2 per thread */
    void *ws;
    size_t ws_bytes;
    comet_kernels_params ap;
    double t[COMET_LLM_NTIMERS];
    double tpk[COMET_LLM_TP_NKINDS]; /* T_TP by collective kind */
    int recomputing;
};

/* ------------------------------------------------------------------ */
/* Deterministic values of global indices                              */
/* ------------------------------------------------------------------ */

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* Uniform in [-1, 1) from (seed, tensor, index). */
static float urand(uint64_t seed, uint64_t tensor, uint64_t idx)
{
    const uint64_t r
        = mix(mix(seed * 0x9e3779b97f4a7c15ull + tensor) ^ (idx + 0x632be59bd9b4e019ull));
    return (float)((double)(r >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

enum { TN_G1 = 1, TN_B1, TN_WQKV, TN_WO, TN_G2, TN_B2, TN_W1, TN_W2 };
#define TN_INPUT       1000001ull
#define TN_TARGET      1000002ull
#define TN_KCACHE      1000003ull
#define TN_VCACHE      1000004ull
#define TN_LAYER(l, t) ((uint64_t)(l)*64 + (t))

/* ------------------------------------------------------------------ */
/* Timers                                                               */
/* ------------------------------------------------------------------ */

static double tic(void)
{
    return MPI_Wtime();
}

static void toc(comet_llm *m, comet_llm_timer k, double t0)
{
    const double dt = MPI_Wtime() - t0;
    m->t[m->recomputing && k != COMET_LLM_T_LOSS ? COMET_LLM_T_RECOMPUTE : k] += dt;
}

/* ------------------------------------------------------------------ */
/* Kernels                                                              */
/* ------------------------------------------------------------------ */

/* One BLAS call for C = op(A) op(B) + beta C; one row (a decode step of
 * one sequence) as a GEMV, which streams op(B) once where a GEMM would
 * first pack it for the single row. */
static void blas_mm(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B,
    int ldb, float beta, float *C, int ldc)
{
    if (M == 1)
        cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? N : K, tb ? K : N, 1.0f, B,
            ldb, A, ta ? lda : 1, beta, C, 1);
    else
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
            M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

/* C = op(A) op(B) (+ C when acc) on the rank's threads. One pool: the
 * rank's OpenMP threads each run single-threaded OpenBLAS on their share of
 * C (rows when M has a block per thread, else columns), as comet's kernels
 * do. OpenBLAS's own pthread pool beside OpenMP's would leave each pool's
 * threads spinning on the cores the other needs (measured on a 2-vCPU Zen 3:
 * a 2-thread training step 1.7x, a decode step 14x slower than split so). */
static void gemm(comet_llm *m, int ta, int tb, int M, int N, int K, const float *A, int lda,
    const float *B, int ldb, float *C, int ldc, int acc)
{
    const double t0 = tic();
    const int nt = m->c.threads;
    if (M > 0 && N > 0 && K > 0 && nt > 1) {
        const int by_rows = M >= 16 * nt;
        const int len = by_rows ? M : N;
#pragma omp parallel num_threads(nt)
        {
            const int me = omp_get_thread_num(), n = omp_get_num_threads();
            /* split on whole 16-element blocks (the micro-kernels' widths) */
            const int blocks = (len + 15) / 16, b0 = blocks * me / n, b1 = blocks * (me + 1) / n;
            const int i0 = b0 * 16 < len ? b0 * 16 : len, i1 = b1 * 16 < len ? b1 * 16 : len;
            if (i1 > i0) {
                const float *a = A, *b = B;
                float *c = C;
                int mm = M, nn = N;
                if (by_rows) {
                    a = ta ? A + i0 : A + (size_t)i0 * lda;
                    c = C + (size_t)i0 * ldc;
                    mm = i1 - i0;
                } else {
                    b = tb ? B + (size_t)i0 * ldb : B + i0;
                    c = C + i0;
                    nn = i1 - i0;
                }
                blas_mm(ta, tb, mm, nn, K, a, lda, b, ldb, acc ? 1.0f : 0.0f, c, ldc);
            }
        }
    } else if (M > 0 && N > 0 && K > 0)
        blas_mm(ta, tb, M, N, K, A, lda, B, ldb, acc ? 1.0f : 0.0f, C, ldc);
    else if (!acc && M > 0 && N > 0)
        for (int i = 0; i < M; i++)
            memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(float));
    toc(m, COMET_LLM_T_GEMM, t0);
}

/* Tensor-parallel collectives: the TP timer (inside a recomputed forward:
 * recompute's) and its part by kind. */
static void toc_tp(comet_llm *m, comet_llm_tp_kind kind, double t0)
{
    const double dt = MPI_Wtime() - t0;
    if (m->recomputing) {
        m->t[COMET_LLM_T_RECOMPUTE] += dt;
    } else {
        m->t[COMET_LLM_T_TP] += dt;
        m->tpk[kind] += dt;
    }
}

static int allreduce_tp(comet_llm *m, float *buf, size_t n)
{
    if (m->c.tp <= 1)
        return 0;
    const double t0 = tic();
    const int rc = MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, MPI_SUM, m->tp_comm);
    toc_tp(m, COMET_LLM_TP_ALLREDUCE, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* SP: every rank's rows (Tl x h) into the whole microbatch (T x h), ranks in
 * order. Equal shares take MPI_Allgather (what `comet bench collectives`
 * measures), uneven ones MPI_Allgatherv. */
static int allgather_tp(comet_llm *m, const float *mine, float *all)
{
    const double t0 = tic();
    const int me = m->tp_rank;
    const int rc = m->even
        ? MPI_Allgather(mine, m->cnt[me], MPI_FLOAT, all, m->cnt[me], MPI_FLOAT, m->tp_comm)
        : MPI_Allgatherv(mine, m->cnt[me], MPI_FLOAT, all, m->cnt, m->dsp, MPI_FLOAT, m->tp_comm);
    toc_tp(m, COMET_LLM_TP_ALLGATHER, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* SP: the ranks' partial sums of the whole microbatch (T x h) summed, each
 * rank keeping its rows (Tl x h): MPI_Reduce_scatter_block for equal
 * shares, MPI_Reduce_scatter otherwise. */
static int reduce_scatter_tp(comet_llm *m, const float *all, float *mine)
{
    const double t0 = tic();
    const int rc = m->even
        ? MPI_Reduce_scatter_block(all, mine, m->cnt[0], MPI_FLOAT, MPI_SUM, m->tp_comm)
        : MPI_Reduce_scatter(all, mine, m->cnt, MPI_FLOAT, MPI_SUM, m->tp_comm);
    toc_tp(m, COMET_LLM_TP_REDUCE_SCATTER, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* The sum over the tp ranks of a row-parallel GEMM's partial output (T x h
 * in full): in place by an all-reduce (*out = full), or with SP
 * reduce-scattered into the rank's rows (*out = m->pl or m->dxnl). */
static int tp_sum(comet_llm *m, float *full, float *share, const float **out)
{
    if (!m->sp) {
        *out = full;
        return allreduce_tp(m, full, m->T * (size_t)m->h);
    }
    *out = share;
    return reduce_scatter_tp(m, full, share);
}

static void layernorm(comet_llm *m, const float *x, float *y, const float *g, const float *b)
{
    const double t0 = tic();
    comet_kernels_layernorm_rows(
        m->Tl, (size_t)m->h, x, (size_t)m->h, y, (size_t)m->h, g, b, 1e-5f, m->c.threads);
    toc(m, COMET_LLM_T_VECTOR, t0);
}

/* dx (+)= LayerNorm's input gradient of rows x given dy (the output's
 * gradient); dg, db += the scale's and shift's. Statistics recomputed from x,
 * two-pass in double as the forward kernel computes them. */
static void layernorm_bwd(comet_llm *m, const float *x, const float *g, const float *dy, float *dx,
    int acc, float *dg, float *db)
{
    const double t0 = tic();
    const int h = m->h, T = (int)m->Tl, nt = m->c.threads;
    double *part = calloc((size_t)nt * 2 * h, sizeof(double));
#pragma omp parallel num_threads(nt)
    {
        const int me = omp_get_thread_num();
        double *pg = part ? part + (size_t)me * 2 * h : NULL, *pb = pg ? pg + h : NULL;
#pragma omp for schedule(static)
        for (int i = 0; i < T; i++) {
            const float *xr = x + (size_t)i * h, *dr = dy + (size_t)i * h;
            float *o = dx + (size_t)i * h;
            double mean = 0, var = 0;
            for (int j = 0; j < h; j++)
                mean += xr[j];
            mean /= h;
            for (int j = 0; j < h; j++)
                var += (xr[j] - mean) * (xr[j] - mean);
            const float rstd = (float)(1.0 / sqrt(var / h + 1e-5)), mu = (float)mean;
            float s1 = 0, s2 = 0;
            for (int j = 0; j < h; j++) {
                const float xh = (xr[j] - mu) * rstd, dxh = dr[j] * g[j];
                s1 += dxh;
                s2 += dxh * xh;
                if (pg) {
                    pg[j] += dr[j] * xh;
                    pb[j] += dr[j];
                }
            }
            s1 /= h;
            s2 /= h;
            for (int j = 0; j < h; j++) {
                const float xh = (xr[j] - mu) * rstd;
                const float v = rstd * (dr[j] * g[j] - s1 - xh * s2);
                o[j] = acc ? o[j] + v : v;
            }
        }
    }
    if (part)
        for (int t = 0; t < nt; t++)
            for (int j = 0; j < h; j++) {
                dg[j] += (float)part[(size_t)t * 2 * h + j];
                db[j] += (float)part[(size_t)t * 2 * h + h + j];
            }
    free(part);
    toc(m, COMET_LLM_T_VECTOR, t0);
}

/* y = a + b over n elements. */
static void add(comet_llm *m, const float *a, const float *b, float *y, size_t n)
{
    const double t0 = tic();
#pragma omp parallel for num_threads(m->c.threads) schedule(static)
    for (size_t i = 0; i < n; i++)
        y[i] = a[i] + b[i];
    toc(m, COMET_LLM_T_VECTOR, t0);
}

#define GELU_C 0.7978845608028654 /* sqrt(2 / pi) */

/* GELU, tanh form (Hendrycks and Gimpel 2016; GPT-2's), tanh(z) as
 * 1 - 2 / (1 + exp(2z)) through the kernels' vectorized exp, in blocks a
 * thread keeps in L1. With da: the backward, du = da x GELU'(u). */
#define GELU_BLOCK 512
static void gelu_pass(const float *u, const float *da, float *out, size_t n, int threads)
{
    const size_t nb = (n + GELU_BLOCK - 1) / GELU_BLOCK;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t b = 0; b < nb; b++) {
        float z[GELU_BLOCK];
        const size_t i0 = b * GELU_BLOCK, len = n - i0 < GELU_BLOCK ? n - i0 : GELU_BLOCK;
        for (size_t i = 0; i < len; i++) {
            const float x = u[i0 + i];
            z[i] = 2.0f * (float)GELU_C * (x + 0.044715f * x * x * x);
            z[i] = z[i] > 80.0f ? 80.0f : z[i]; /* exp stays finite; tanh is 1 there */
        }
        comet_kernels_vexp(z, z, len);
        for (size_t i = 0; i < len; i++) {
            const float x = u[i0 + i], th = 1.0f - 2.0f / (1.0f + z[i]);
            if (!da) {
                out[i0 + i] = 0.5f * x * (1.0f + th);
            } else {
                const float dg = 0.5f * (1.0f + th)
                    + 0.5f * x * (1.0f - th * th) * (float)GELU_C * (1.0f + 3 * 0.044715f * x * x);
                out[i0 + i] = da[i0 + i] * dg;
            }
        }
    }
}

static void gelu(comet_llm *m, const float *u, float *a, size_t n)
{
    const double t0 = tic();
    gelu_pass(u, NULL, a, n, m->c.threads);
    toc(m, COMET_LLM_T_VECTOR, t0);
}

static void gelu_bwd(comet_llm *m, const float *u, const float *da, float *du, size_t n)
{
    const double t0 = tic();
    gelu_pass(u, da, du, n, m->c.threads);
    toc(m, COMET_LLM_T_VECTOR, t0);
}

/* Token rows [T][3][al][d] of the QKV product into heads: Q [b al][sq][d]
 * and K, V rows pos0.. of [b al][cap][d] (a cache or the activations). */
static void split_heads(comet_llm *m, const float *qkv, float *q, float *k, float *v, int b)
{
    const double t0 = tic();
    const int al = m->al, d = m->d, sq = m->sq, cap = m->cap, pos0 = m->pos0;
    const size_t row = (size_t)3 * al * d;
#pragma omp parallel for num_threads(m->c.threads) schedule(static) collapse(2)
    for (int bi = 0; bi < b; bi++)
        for (int s = 0; s < sq; s++) {
            const float *r = qkv + ((size_t)bi * sq + s) * row;
            for (int hh = 0; hh < al; hh++) {
                const size_t hd = (size_t)bi * al + hh;
                memcpy(q + (hd * sq + s) * d, r + (size_t)hh * d, (size_t)d * sizeof(float));
                memcpy(k + (hd * cap + pos0 + s) * d, r + (size_t)(al + hh) * d,
                    (size_t)d * sizeof(float));
                memcpy(v + (hd * cap + pos0 + s) * d, r + (size_t)(2 * al + hh) * d,
                    (size_t)d * sizeof(float));
            }
        }
    toc(m, COMET_LLM_T_VECTOR, t0);
}

/* [b al][rows][d] heads (rows per head `stride`, from row `first`, sq rows)
 * to or from token rows [T][ld] at column offset col. */
static void heads_to_tokens(
    comet_llm *m, const float *hdat, int stride, int first, float *tok, int ld, int col, int b)
{
    const double t0 = tic();
    const int al = m->al, d = m->d, sq = m->sq;
#pragma omp parallel for num_threads(m->c.threads) schedule(static) collapse(2)
    for (int bi = 0; bi < b; bi++)
        for (int s = 0; s < sq; s++)
            for (int hh = 0; hh < al; hh++)
                memcpy(tok + ((size_t)bi * sq + s) * ld + col + (size_t)hh * d,
                    hdat + (((size_t)bi * al + hh) * stride + first + s) * d,
                    (size_t)d * sizeof(float));
    toc(m, COMET_LLM_T_VECTOR, t0);
}

static void tokens_to_heads(comet_llm *m, const float *tok, int ld, int col, float *hdat, int b)
{
    const double t0 = tic();
    const int al = m->al, d = m->d, sq = m->sq;
#pragma omp parallel for num_threads(m->c.threads) schedule(static) collapse(2)
    for (int bi = 0; bi < b; bi++)
        for (int s = 0; s < sq; s++)
            for (int hh = 0; hh < al; hh++)
                memcpy(hdat + (((size_t)bi * al + hh) * sq + s) * d,
                    tok + ((size_t)bi * sq + s) * ld + col + (size_t)hh * d,
                    (size_t)d * sizeof(float));
    toc(m, COMET_LLM_T_VECTOR, t0);
}

/* The attention forward over b sequences' al heads: comet's fused kernel
 * or the unfused pair, causal (keys aligned at the end of the context). */
static int attention(comet_llm *m, const float *q, const float *k, const float *v, float *o, int b)
{
    const double t0 = tic();
    comet_kernels_shape sh = { 0 };
    sh.batch = (size_t)b;
    sh.heads = (size_t)m->al;
    sh.lq = (size_t)m->sq;
    sh.lk = (size_t)(m->pos0 + m->sq);
    sh.d = (size_t)m->d;
    int rc = 0;
    if (sh.lk == (size_t)m->cap) {
        rc = comet_kernels_attention(
            m->c.attention_fused ? COMET_KERNELS_FUSED : COMET_KERNELS_UNFUSED, &sh, q, k, v, o,
            &m->ap, m->ws, m->ws_bytes);
    } else {
        rc = -EINVAL; /* the kernel reads heads of lk rows: the cache holds exactly that */
    }
    toc(m, COMET_LLM_T_ATTN, t0);
    return rc;
}

/* The attention backward of b sequences' al heads (causal, scale 1/sqrt(d)),
 * P recomputed from Q and K per head: dV = P^T dO, dP = dO V^T,
 * dS = P (dP - rowsum(P dP)) scale, dQ = dS K, dK = dS^T Q. */
static void attention_bwd(comet_llm *m, const float *q, const float *k, const float *v,
    const float *dO, float *dq, float *dk, float *dv, int b)
{
    const double t0 = tic();
    const int s = m->sq, d = m->d, nh = b * m->al, nt = m->c.threads;
    const float scale = 1.0f / sqrtf((float)d);
    const int saved = openblas_get_num_threads();
    openblas_set_num_threads(1); /* the heads are the parallelism */
#pragma omp parallel for num_threads(nt) schedule(dynamic)
    for (int hh = 0; hh < nh; hh++) {
        float *S = m->attn_scr + (size_t)omp_get_thread_num() * 2 * s * s, *dP = S + (size_t)s * s;
        const size_t o = (size_t)hh * s * d;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, scale, q + o, d, k + o, d,
            0.0f, S, s);
        for (int i = 0; i < s; i++) {
            float *r = S + (size_t)i * s, mx = -INFINITY;
            for (int j = 0; j <= i; j++)
                mx = r[j] > mx ? r[j] : mx;
            double sum = 0;
            for (int j = 0; j <= i; j++) {
                r[j] = expf(r[j] - mx);
                sum += r[j];
            }
            for (int j = 0; j <= i; j++)
                r[j] = (float)(r[j] / sum);
            for (int j = i + 1; j < s; j++)
                r[j] = 0;
        }
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, d, s, 1.0f, S, s, dO + o, d, 0.0f,
            dv + o, d);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s, s, d, 1.0f, dO + o, d, v + o, d,
            0.0f, dP, s);
        for (int i = 0; i < s; i++) {
            float *p = S + (size_t)i * s, *g = dP + (size_t)i * s;
            double D = 0;
            for (int j = 0; j <= i; j++)
                D += (double)p[j] * g[j];
            for (int j = 0; j < s; j++)
                g[j] = j <= i ? (float)(p[j] * (g[j] - D) * scale) : 0.0f;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s, d, s, 1.0f, dP, s, k + o, d, 0.0f,
            dq + o, d);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s, d, s, 1.0f, dP, s, q + o, d, 0.0f,
            dk + o, d);
    }
    openblas_set_num_threads(saved);
    toc(m, COMET_LLM_T_ATTN, t0);
}

/* ------------------------------------------------------------------ */
/* Layers                                                               */
/* ------------------------------------------------------------------ */

/* One layer's forward of a microbatch of b sequences from A->x into out;
 * K and V rows go to kb, vb ([b al][cap][d]). */
static int layer_fwd(comet_llm *m, int l, const acts *A, float *kb, float *vb, float *out, int b)
{
    const float *P = m->P + (size_t)l * m->of.size;
    const int h = m->h, T = (int)m->T, ald = m->ald, fl = m->fl;
    const size_t nl = m->Tl * (size_t)h; /* the rank's rows outside the TP regions */
    const float *n1 = A->xn1, *n2 = A->xn2, *sum;
    int rc;
    /* with SP the LayerNorm and the residuals run on the rank's rows, the
     * GEMMs on the whole microbatch: gathered before, reduce-scattered after */
    layernorm(m, A->x, A->xn1, P + m->of.g1, P + m->of.b1);
    if (m->sp && (rc = allgather_tp(m, A->xn1, m->xg1)))
        return rc;
    n1 = m->sp ? m->xg1 : n1;
    gemm(m, 0, 0, T, 3 * ald, h, n1, h, P + m->of.wqkv, 3 * ald, m->qkv, 3 * ald, 0);
    split_heads(m, m->qkv, A->q, kb, vb, b);
    if ((rc = attention(m, A->q, kb, vb, A->o, b)))
        return rc;
    heads_to_tokens(m, A->o, m->sq, 0, A->oc, ald, 0, b);
    gemm(m, 0, 0, T, h, ald, A->oc, ald, P + m->of.wo, h, m->pbuf, h, 0);
    if ((rc = tp_sum(m, m->pbuf, m->pl, &sum)))
        return rc;
    add(m, A->x, sum, A->x1, nl);
    layernorm(m, A->x1, A->xn2, P + m->of.g2, P + m->of.b2);
    if (m->sp && (rc = allgather_tp(m, A->xn2, m->xg2)))
        return rc;
    n2 = m->sp ? m->xg2 : n2;
    gemm(m, 0, 0, T, fl, h, n2, h, P + m->of.w1, fl, A->u, fl, 0);
    gelu(m, A->u, A->a, (size_t)T * fl);
    gemm(m, 0, 0, T, h, fl, A->a, fl, P + m->of.w2, h, m->pbuf, h, 0);
    if ((rc = tp_sum(m, m->pbuf, m->pl, &sum)))
        return rc;
    add(m, A->x1, sum, out, nl);
    return 0;
}

/* One layer's backward: dy (the output's gradient) into dx (the input's);
 * the weight gradients accumulate. */
static int layer_bwd(comet_llm *m, int l, const acts *A, const float *dy, float *dx, int b)
{
    const float *P = m->P + (size_t)l * m->of.size;
    float *G = m->G + (size_t)l * m->of.size;
    const int h = m->h, T = (int)m->T, ald = m->ald, fl = m->fl;
    const size_t nl = m->Tl * (size_t)h;
    /* SP: the LayerNorm outputs were stored as the rank's rows; the weight
     * gradients need all of them, gathered again (Korthikanti et al. 2022,
     * Sec. 4.2.2) unless a recomputed forward just gathered them */
    const int regather = m->sp && !m->c.recompute_full;
    const float *DY = dy, *n1 = m->sp ? m->xg1 : A->xn1, *n2 = m->sp ? m->xg2 : A->xn2, *dn;
    int rc;
    if (m->sp && (rc = allgather_tp(m, dy, m->dyg)))
        return rc;
    DY = m->sp ? m->dyg : DY;
    gemm(m, 0, 1, T, fl, h, DY, h, P + m->of.w2, h, m->da, fl, 0);
    gemm(m, 1, 0, fl, h, T, A->a, fl, DY, h, G + m->of.w2, h, 1);
    gelu_bwd(m, A->u, m->da, m->du, (size_t)T * fl);
    gemm(m, 0, 1, T, h, fl, m->du, fl, P + m->of.w1, fl, m->dxn, h, 0);
    if (regather && (rc = allgather_tp(m, A->xn2, m->xg2)))
        return rc;
    gemm(m, 1, 0, h, fl, T, n2, h, m->du, fl, G + m->of.w1, fl, 1);
    if ((rc = tp_sum(m, m->dxn, m->dxnl, &dn)))
        return rc;
    memcpy(m->dx1, dy, nl * sizeof(float));
    layernorm_bwd(m, A->x1, P + m->of.g2, dn, m->dx1, 1, G + m->of.g2, G + m->of.b2);
    if (m->sp && (rc = allgather_tp(m, m->dx1, m->dyg)))
        return rc;
    DY = m->sp ? m->dyg : m->dx1;
    gemm(m, 0, 1, T, ald, h, DY, h, P + m->of.wo, h, m->doc, ald, 0);
    gemm(m, 1, 0, ald, h, T, A->oc, ald, DY, h, G + m->of.wo, h, 1);
    tokens_to_heads(m, m->doc, ald, 0, m->dO, b);
    attention_bwd(m, A->q, A->k, A->v, m->dO, m->dq, m->dk, m->dv, b);
    heads_to_tokens(m, m->dq, m->sq, 0, m->dqkv, 3 * ald, 0, b);
    heads_to_tokens(m, m->dk, m->sq, 0, m->dqkv, 3 * ald, ald, b);
    heads_to_tokens(m, m->dv, m->sq, 0, m->dqkv, 3 * ald, 2 * ald, b);
    gemm(m, 0, 1, T, h, 3 * ald, m->dqkv, 3 * ald, P + m->of.wqkv, 3 * ald, m->dxn, h, 0);
    if (regather && (rc = allgather_tp(m, A->xn1, m->xg1)))
        return rc;
    gemm(m, 1, 0, h, 3 * ald, T, n1, h, m->dqkv, 3 * ald, G + m->of.wqkv, 3 * ald, 1);
    if ((rc = tp_sum(m, m->dxn, m->dxnl, &dn)))
        return rc;
    memcpy(dx, m->dx1, nl * sizeof(float));
    layernorm_bwd(m, A->x, P + m->of.g1, dn, dx, 1, G + m->of.g1, G + m->of.b1);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */
/* ------------------------------------------------------------------ */

int comet_llm_check(const comet_llm_cfg *c, int ranks, char *err, size_t errlen)
{
#define BAD(...) (snprintf(err, errlen, __VA_ARGS__), -EINVAL)
    if (c->hidden < 1 || c->heads < 1 || c->ffn < 1 || c->layers < 1 || c->batch < 1
        || c->threads < 1)
        return BAD("hidden, heads, ffn, layers, batch and threads must be >= 1");
    if (c->hidden % c->heads)
        return BAD("hidden (%d) is not a multiple of heads (%d)", c->hidden, c->heads);
    if ((unsigned)c->phase > COMET_LLM_DECODE)
        return BAD("unknown phase");
    if (c->phase != COMET_LLM_DECODE && c->seq < 1)
        return BAD("seq must be >= 1");
    if (c->phase == COMET_LLM_DECODE && c->context < 1)
        return BAD("decode needs --context >= 1 (tokens in the KV cache)");
    const int pp = c->pp > 1 ? c->pp : 1;
    if (c->tp < 1 || c->dp < 1 || c->tp * c->dp * pp != ranks)
        return BAD(
            "tp x pp x dp = %d x %d x %d must equal the ranks (%d)", c->tp, pp, c->dp, ranks);
    if (pp > c->layers)
        return BAD("pp=%d exceeds the %d layers", pp, c->layers);
    if (c->tp > c->heads || c->tp > c->ffn)
        return BAD("tp=%d exceeds the heads (%d) or the FFN width (%d)", c->tp, c->heads, c->ffn);
    if (c->batch % c->dp)
        return BAD("dp=%d does not divide the batch of %d sequences", c->dp, c->batch);
    const int bl = c->batch / c->dp, mb = c->microbatch > 0 ? c->microbatch : bl;
    if (mb > bl || bl % mb)
        return BAD("microbatch %d does not divide the %d sequences per replica", mb, bl);
    if (c->recompute_full && c->phase != COMET_LLM_TRAIN)
        return BAD("recomputation applies to train only");
    if (c->seq_parallel && c->tp < 2)
        return BAD("sequence parallelism needs tp >= 2 (it splits the tokens over the tp ranks)");
    const long tokens = (long)mb * (c->phase == COMET_LLM_DECODE ? 1 : c->seq);
    if (c->seq_parallel && tokens < c->tp)
        return BAD(
            "sequence parallelism: a microbatch's %ld tokens are fewer than tp=%d", tokens, c->tp);
    return 0;
#undef BAD
}

size_t comet_llm_nparams(const comet_llm_cfg *c)
{
    const size_t h = (size_t)c->hidden, f = (size_t)c->ffn;
    return (size_t)c->layers * (4 * h + 3 * h * h + h * h + 2 * h * f);
}

double comet_llm_flops(const comet_llm_cfg *c)
{
    const double h = c->hidden, f = c->ffn, B = c->batch;
    const double sq = c->phase == COMET_LLM_DECODE ? 1 : c->seq;
    const double ctx = c->phase == COMET_LLM_DECODE ? c->context + 1.0 : c->seq;
    const double T = B * sq;
    const double layer = 2 * T * h * 3 * h + 2 * T * h * h + 4 * T * h * f + 4 * B * sq * ctx * h;
    return layer * c->layers * (c->phase == COMET_LLM_TRAIN ? 3 : 1);
}

static float *falloc(size_t n, int *bad)
{
    float *p = n ? aligned_alloc(64, ((n * sizeof(float) + 63) / 64) * 64) : NULL;
    if (n && !p)
        *bad = 1;
    if (p)
        memset(p, 0, n * sizeof(float));
    return p;
}

static void part(int n, int p, int r, int *cnt, int *first)
{
    *cnt = n / p + (r < n % p);
    *first = r * (n / p) + (r < n % p ? r : n % p);
}

/* This rank's parameters from their global indices. */
static void init_params(comet_llm *m)
{
    const uint64_t seed = m->c.seed;
    const int h = m->h, d = m->d, H = m->H, F = m->F, al = m->al, fl = m->fl;
    const float sw = 1.0f / sqrtf((float)h), sf = 1.0f / sqrtf((float)F);
    for (int ll = 0; ll < m->nl; ll++) {
        const int l = m->l0 + ll; /* the global layer names the values */
        float *P = m->P + (size_t)ll * m->of.size;
        for (int j = 0; j < h; j++) {
            P[m->of.g1 + j] = 1.0f + 0.1f * urand(seed, TN_LAYER(l, TN_G1), (uint64_t)j);
            P[m->of.b1 + j] = 0.1f * urand(seed, TN_LAYER(l, TN_B1), (uint64_t)j);
            P[m->of.g2 + j] = 1.0f + 0.1f * urand(seed, TN_LAYER(l, TN_G2), (uint64_t)j);
            P[m->of.b2 + j] = 0.1f * urand(seed, TN_LAYER(l, TN_B2), (uint64_t)j);
        }
        for (int i = 0; i < h; i++)
            for (int w = 0; w < 3; w++)
                for (int lh = 0; lh < al; lh++)
                    for (int dd = 0; dd < d; dd++) {
                        const uint64_t gi
                            = (uint64_t)i * 3 * H * d + ((uint64_t)w * H + m->h0 + lh) * d + dd;
                        P[m->of.wqkv + (size_t)i * 3 * al * d + ((size_t)w * al + lh) * d + dd]
                            = sw * urand(seed, TN_LAYER(l, TN_WQKV), gi);
                    }
        for (int r = 0; r < al * d; r++)
            for (int j = 0; j < h; j++)
                P[m->of.wo + (size_t)r * h + j]
                    = sw * urand(seed, TN_LAYER(l, TN_WO), ((uint64_t)m->h0 * d + r) * h + j);
        for (int i = 0; i < h; i++)
            for (int c = 0; c < fl; c++)
                P[m->of.w1 + (size_t)i * fl + c]
                    = sw * urand(seed, TN_LAYER(l, TN_W1), (uint64_t)i * F + m->f0 + c);
        for (int c = 0; c < fl; c++)
            for (int j = 0; j < h; j++)
                P[m->of.w2 + (size_t)c * h + j]
                    = sf * urand(seed, TN_LAYER(l, TN_W2), ((uint64_t)m->f0 + c) * h + j);
    }
}

static void alloc_acts(comet_llm *m, acts *A, int full, int *bad)
{
    const size_t T = m->T, h = (size_t)m->h, ald = (size_t)m->ald, fl = (size_t)m->fl;
    const size_t Tl = m->Tl; /* outside the TP regions: the rank's rows (SP) */
    A->x = falloc(Tl * h, bad);
    if (!full)
        return;
    A->xn1 = falloc(Tl * h, bad);
    A->q = falloc(T * ald, bad);
    A->k = falloc(T * ald, bad);
    A->v = falloc(T * ald, bad);
    A->o = falloc(T * ald, bad);
    A->oc = falloc(T * ald, bad);
    A->x1 = falloc(Tl * h, bad);
    A->xn2 = falloc(Tl * h, bad);
    A->u = falloc(T * fl, bad);
    A->a = falloc(T * fl, bad);
}

static void free_acts(acts *A)
{
    float **p = (float **)A;
    for (size_t i = 0; i < sizeof *A / sizeof(float *); i++)
        free(p[i]);
}

int comet_llm_create(
    MPI_Comm comm, const comet_llm_cfg *c, comet_llm **out, char *err, size_t errlen)
{
    int ranks, rank, rc;
    *out = NULL;
    MPI_Comm_size(comm, &ranks);
    MPI_Comm_rank(comm, &rank);
    if ((rc = comet_llm_check(c, ranks, err, errlen)))
        return rc;
    comet_llm *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->c = *c;
    /* rank = (stage x dp + replica) x tp + tp rank: tensor parallelism
     * innermost, then data, then pipeline (Megatron's order) */
    m->pp = c->pp > 1 ? c->pp : 1;
    m->tp_rank = rank % c->tp;
    m->dp_rank = rank / c->tp % c->dp;
    m->pp_rank = rank / (c->tp * c->dp);
    MPI_Comm_dup(comm, &m->world);
    MPI_Comm_split(comm, m->pp_rank * c->dp + m->dp_rank, m->tp_rank, &m->tp_comm);
    MPI_Comm_split(comm, m->pp_rank * c->tp + m->tp_rank, m->dp_rank, &m->dp_comm);
    MPI_Comm_split(comm, m->dp_rank, rank, &m->rep_comm);
    const int stride = c->tp * c->dp;
    m->prev = m->pp_rank > 0 ? rank - stride : -1;
    m->next = m->pp_rank < m->pp - 1 ? rank + stride : -1;
    part(c->layers, m->pp, m->pp_rank, &m->nl, &m->l0);
    m->store_all = m->pp > 1;
    m->h = c->hidden;
    m->H = c->heads;
    m->d = c->hidden / c->heads;
    m->F = c->ffn;
    part(c->heads, c->tp, m->tp_rank, &m->al, &m->h0);
    part(c->ffn, c->tp, m->tp_rank, &m->fl, &m->f0);
    m->ald = m->al * m->d;
    m->bl = c->batch / c->dp;
    m->mb = c->microbatch > 0 ? c->microbatch : m->bl;
    m->nmb = m->bl / m->mb;
    m->sq = c->phase == COMET_LLM_DECODE ? 1 : c->seq;
    m->T = (size_t)m->mb * m->sq;
    m->cap = c->phase == COMET_LLM_DECODE ? c->context + 1 : c->seq;
    m->pos0 = c->phase == COMET_LLM_DECODE ? c->context : 0;
    m->sp = c->seq_parallel && c->tp > 1;
    m->Tl = m->T;
    m->t0 = 0;
    int bad = 0;
    if (m->sp) {
        /* the microbatch's token rows over the tp ranks, contiguous, the
         * first ranks one more where they do not divide */
        m->cnt = calloc((size_t)c->tp, sizeof *m->cnt);
        m->dsp = calloc((size_t)c->tp, sizeof *m->dsp);
        bad |= !m->cnt || !m->dsp;
        m->even = m->T % (size_t)c->tp == 0;
        for (int r = 0; r < c->tp && !bad; r++) {
            int n, f;
            part((int)m->T, c->tp, r, &n, &f);
            m->cnt[r] = n * m->h;
            m->dsp[r] = f * m->h;
            if (r == m->tp_rank)
                m->Tl = (size_t)n, m->t0 = (size_t)f;
        }
    }
    const size_t h = (size_t)m->h, ald = (size_t)m->ald, fl = (size_t)m->fl, T = m->T, Tl = m->Tl;
    offs *o = &m->of;
    o->g1 = 0;
    o->b1 = h;
    o->wqkv = 2 * h;
    o->wo = o->wqkv + h * 3 * ald;
    o->g2 = o->wo + ald * h;
    o->b2 = o->g2 + h;
    o->w1 = o->b2 + h;
    o->w2 = o->w1 + h * fl;
    o->size = o->w2 + fl * h;
    m->np = o->size * (size_t)m->nl;
    const int train = c->phase == COMET_LLM_TRAIN;
    m->P = falloc(m->np, &bad);
    if (train) {
        m->G = falloc(m->np, &bad);
        m->M1 = falloc(m->np, &bad);
        m->M2 = falloc(m->np, &bad);
    }
    const int nst = m->store_all ? m->nmb : 1;
    m->A = calloc((size_t)nst * (m->nl + 1), sizeof *m->A);
    bad |= !m->A;
    if (!bad) {
        /* microbatch k's layer l input is A[k (nl+1) + l].x, its stage output
         * A[k (nl+1) + nl].x (one microbatch set without a pipeline) */
        const int store = train && !c->recompute_full;
        alloc_acts(m, &m->scratch, 1, &bad);
        for (int k = 0; k < nst && !bad; k++)
            for (int l = 0; l <= m->nl && !bad; l++) {
                acts *A = &m->A[(size_t)k * (m->nl + 1) + l];
                if (store && l < m->nl)
                    alloc_acts(m, A, 1, &bad);
                else {
                    acts x = m->scratch;
                    x.x = falloc(Tl * h, &bad);
                    *A = x;
                }
            }
    }
    if (m->pp > 1) {
        m->capreq = 2 * m->nmb + 2;
        m->req = calloc((size_t)m->capreq, sizeof *m->req);
        bad |= !m->req;
        if (train)
            m->gsend = falloc((size_t)m->nmb * Tl * h, &bad);
    }
    if (!train) {
        const size_t kv = (size_t)m->nl * m->bl * ald * m->cap;
        m->kc = falloc(kv, &bad);
        m->vc = falloc(kv, &bad);
    }
    m->qkv = falloc(T * 3 * ald, &bad);
    m->pbuf = falloc(T * h, &bad);
    m->out = falloc((size_t)m->nmb * Tl * h, &bad);
    if (m->sp) {
        m->xg1 = falloc(T * h, &bad);
        m->xg2 = falloc(T * h, &bad);
        m->pl = falloc(Tl * h, &bad);
        if (train) {
            m->dyg = falloc(T * h, &bad);
            m->dxnl = falloc(Tl * h, &bad);
            m->lnbuf = falloc((size_t)m->nl * 4 * h, &bad);
        }
    }
    if (train) {
        m->tgt = falloc((size_t)m->bl * m->sq * h, &bad);
        m->dy = falloc(Tl * h, &bad);
        m->dx = falloc(Tl * h, &bad);
        m->da = falloc(T * fl, &bad);
        m->du = falloc(T * fl, &bad);
        m->dxn = falloc(T * h, &bad);
        m->dx1 = falloc(Tl * h, &bad);
        m->doc = falloc(T * ald, &bad);
        m->dO = falloc(T * ald, &bad);
        m->dq = falloc(T * ald, &bad);
        m->dk = falloc(T * ald, &bad);
        m->dv = falloc(T * ald, &bad);
        m->dqkv = falloc(T * 3 * ald, &bad);
        m->attn_scr = falloc((size_t)c->threads * 2 * m->sq * m->sq, &bad);
    }
    /* the attention kernel's knobs and workspace */
    comet_kernels_shape sh = { 0 };
    sh.batch = (size_t)m->mb;
    sh.heads = (size_t)m->al;
    sh.lq = (size_t)m->sq;
    sh.lk = (size_t)m->cap;
    sh.d = (size_t)m->d;
    long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE),
         l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    comet_kernels_default_params(COMET_KERNELS_ATTENTION, &sh, l1 > 0 ? (size_t)l1 : 0,
        l2 > 0 ? (size_t)l2 : 0, l3 > 0 ? (size_t)l3 : 0, c->threads, &m->ap);
    m->ap.causal = 1;
    if (!bad
        && comet_kernels_workspace_size(COMET_KERNELS_ATTENTION,
               c->attention_fused ? COMET_KERNELS_FUSED : COMET_KERNELS_UNFUSED, &sh, &m->ap,
               &m->ws_bytes)
            == 0
        && m->ws_bytes) {
        m->ws = aligned_alloc(64, ((m->ws_bytes + 63) / 64) * 64);
        bad |= !m->ws;
    }
    if (bad) {
        comet_llm_free(m);
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
    }
    init_params(m);
    const uint64_t seed = c->seed;
    if (train) {
        for (int s = 0; s < m->bl; s++)
            for (size_t i = 0; i < (size_t)m->sq * h; i++)
                m->tgt[(size_t)s * m->sq * h + i] = urand(
                    seed, TN_TARGET, ((uint64_t)m->dp_rank * m->bl + s) * (uint64_t)m->sq * h + i);
    } else {
        /* the cache rows before the step's: pseudo-random keys and values of
         * the context (a decode step attends to them all) */
        for (int ll = 0; ll < m->nl; ll++)
            for (int s = 0; s < m->bl; s++)
                for (int lh = 0; lh < m->al; lh++)
                    for (int r = 0; r < m->pos0; r++)
                        for (int dd = 0; dd < m->d; dd++) {
                            const size_t li
                                = ((((size_t)ll * m->bl + s) * m->al + lh) * m->cap + r) * m->d
                                + dd;
                            const uint64_t l = (uint64_t)m->l0 + ll;
                            const uint64_t gi
                                = ((((uint64_t)l * c->batch + (uint64_t)m->dp_rank * m->bl + s)
                                           * c->heads
                                       + m->h0 + lh)
                                          * m->cap
                                      + r)
                                    * m->d
                                + dd;
                            m->kc[li] = urand(seed, TN_KCACHE, gi);
                            m->vc[li] = urand(seed, TN_VCACHE, gi);
                        }
    }
    *out = m;
    return 0;
}

void comet_llm_free(comet_llm *m)
{
    if (!m)
        return;
    const int store = m->c.phase == COMET_LLM_TRAIN && !m->c.recompute_full;
    if (m->A) {
        const int nst = m->store_all ? m->nmb : 1;
        for (int k = 0; k < nst; k++)
            for (int l = 0; l <= m->nl; l++) {
                acts *A = &m->A[(size_t)k * (m->nl + 1) + l];
                if (store && l < m->nl)
                    free_acts(A);
                else
                    free(A->x);
            }
        free(m->A);
    }
    free(m->req);
    free(m->gsend);
    free(m->cnt);
    free(m->dsp);
    free_acts(&m->scratch);
    float *bufs[] = { m->P, m->G, m->M1, m->M2, m->kc, m->vc, m->qkv, m->pbuf, m->dy, m->dx, m->da,
        m->du, m->dxn, m->dx1, m->doc, m->dO, m->dq, m->dk, m->dv, m->dqkv, m->out, m->tgt,
        m->attn_scr, m->xg1, m->xg2, m->dyg, m->pl, m->dxnl, m->lnbuf };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        free(bufs[i]);
    free(m->ws);
    MPI_Comm *cs[] = { &m->tp_comm, &m->dp_comm, &m->rep_comm, &m->world };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
        if (*cs[i] && *cs[i] != MPI_COMM_NULL)
            MPI_Comm_free(cs[i]);
    free(m);
}

/* ------------------------------------------------------------------ */
/* Steps                                                                */
/* ------------------------------------------------------------------ */

/* The input rows of microbatch k (sequence s0..): pseudo-random tokens of
 * this replica's sequences (decode: the token at position context); with
 * SP the rank's rows t0 .. t0 + Tl - 1 of them. */
static void load_input(comet_llm *m, int k, float *x)
{
    const int h = m->h;
    const int s0 = m->dp_rank * m->bl + k * m->mb;
    for (size_t i = 0; i < m->Tl; i++) {
        const size_t row = m->t0 + i;
        const int s = (int)(row / (size_t)m->sq), t = (int)(row % (size_t)m->sq);
        const uint64_t pos = (uint64_t)m->pos0 + t;
        const uint64_t base = ((uint64_t)(s0 + s) * (m->pos0 + m->sq) + pos) * h;
        float *r = x + i * h;
        for (int j = 0; j < h; j++)
            r[j] = urand(m->c.seed, TN_INPUT, base + j);
    }
}

/* Microbatch k's activations of local layer l (l = nl: the stage's output). */
static acts *acts_of(comet_llm *m, int k, int l)
{
    return &m->A[(size_t)(m->store_all ? k : 0) * (m->nl + 1) + l];
}

/* Pipeline point-to-point (each rank with the same tp rank of the next
 * stage; with SP its rows only): a receive first waits for its message to
 * arrive (MPI_Probe: the stage idles, the bubble), then takes it (the
 * transfer, pp); sends are posted (pp) and completed before the stage's
 * next compute (p2p_pair; forward-only: before the next microbatch), the
 * last at the step's end, when the stage has no work left (the drain:
 * bubble). Tags: 2k forward activations, 2k + 1 backward gradients. */
static int p2p_recv(comet_llm *m, float *buf, int from, int tag)
{
    double t0 = tic();
    int rc = MPI_Probe(from, tag, m->world, MPI_STATUS_IGNORE);
    toc(m, COMET_LLM_T_BUBBLE, t0);
    if (rc != MPI_SUCCESS)
        return -EIO;
    t0 = tic();
    rc = MPI_Recv(buf, (int)(m->Tl * m->h), MPI_FLOAT, from, tag, m->world, MPI_STATUS_IGNORE);
    toc(m, COMET_LLM_T_PP, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

static int p2p_send(comet_llm *m, const float *buf, int to, int tag)
{
    if (m->nreq >= m->capreq)
        return -EINVAL;
    const double t0 = tic();
    const int rc
        = MPI_Isend(buf, (int)(m->Tl * m->h), MPI_FLOAT, to, tag, m->world, &m->req[m->nreq++]);
    toc(m, COMET_LLM_T_PP, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

static int p2p_wait(comet_llm *m)
{
    if (!m->nreq)
        return 0;
    const double t0 = tic();
    int rc = MPI_SUCCESS;
    for (int i = 0; i < m->nreq; i++) /* (MPI_STATUSES_IGNORE trips GCC's bounds check) */
        if (MPI_Wait(&m->req[i], MPI_STATUS_IGNORE) != MPI_SUCCESS)
            rc = !MPI_SUCCESS;
    m->nreq = 0;
    toc(m, COMET_LLM_T_BUBBLE, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* Training: the previous op's send completed before this op computes, as
 * Megatron's 1F1B pairs each send with the next receive and waits for both
 * (send_forward_recv_backward, send_backward_recv_forward; a lone send_forward
 * or send_backward blocks alone). Posted and left to the step's end, a
 * rendezvous-size message over TCP moves only while its sender is inside
 * MPI, so the stages waited on each other's compute (train pp=2 over tbf 1
 * Gbit/s: 24.8 ms of waits a step where the schedule has 11). */
static int p2p_pair(comet_llm *m)
{
    if (!m->nreq)
        return 0;
    const double t0 = tic();
    int rc = MPI_SUCCESS;
    for (int i = 0; i < m->nreq; i++)
        if (MPI_Wait(&m->req[i], MPI_STATUS_IGNORE) != MPI_SUCCESS)
            rc = !MPI_SUCCESS;
    m->nreq = 0;
    toc(m, COMET_LLM_T_PP, t0);
    return rc == MPI_SUCCESS ? 0 : -EIO;
}

/* Forward of microbatch k through this stage's layers: its input from the
 * previous stage (or the stack's input), its output to the next stage (or
 * the stack's output). */
static int forward(comet_llm *m, int k)
{
    const int train = m->c.phase == COMET_LLM_TRAIN;
    int rc = 0;
    if (m->prev < 0)
        load_input(m, k, acts_of(m, k, 0)->x);
    else if ((rc = p2p_recv(m, acts_of(m, k, 0)->x, m->prev, 2 * k)))
        return rc;
    if (train && (rc = p2p_pair(m)))
        return rc;
    for (int l = 0; l < m->nl; l++) {
        const acts *A = acts_of(m, k, l);
        float *kb = A->k, *vb = A->v;
        if (!train) {
            const size_t head = (size_t)m->ald * m->cap; /* one sequence's heads */
            const size_t lay = (size_t)m->bl * head;
            kb = m->kc + l * lay + (size_t)k * m->mb * head;
            vb = m->vc + l * lay + (size_t)k * m->mb * head;
        }
        if ((rc = layer_fwd(m, l, A, kb, vb, acts_of(m, k, l + 1)->x, m->mb)))
            return rc;
    }
    const float *y = acts_of(m, k, m->nl)->x;
    if (m->next >= 0 && !train) {
        /* forward only (prefill, decode): the activation leaves before the
         * next microbatch starts, as Megatron's forward-only schedule sends
         * (blocking). Posted and left to the step's end, a rendezvous-size
         * message over TCP moves only when the sender next enters MPI: the
         * stages ran one after the other (prefill pp=2 at 1 Gbit/s: 42 ms a
         * step against 28 ms with every message eager) */
        if ((rc = p2p_send(m, y, m->next, 2 * k)))
            return rc;
        const double t0 = tic();
        rc = MPI_Wait(&m->req[--m->nreq], MPI_STATUS_IGNORE);
        toc(m, COMET_LLM_T_PP, t0);
        return rc == MPI_SUCCESS ? 0 : -EIO;
    }
    if (m->next >= 0)
        return p2p_send(m, y, m->next, 2 * k);
    memcpy(m->out + (size_t)k * m->Tl * m->h, y, m->Tl * (size_t)m->h * sizeof(float));
    return 0;
}

/* Backward of microbatch k through this stage's layers: the output's
 * gradient from the loss (last stage) or the next stage, the input's to the
 * previous stage. *local accumulates the loss (last stage). */
static int backward(comet_llm *m, int k, double *local)
{
    const int h = m->h;
    int rc;
    if (m->next < 0) {
        /* loss 0.5 ||y - target||^2 per token, averaged over the batch's tokens */
        const double norm = 1.0 / ((double)m->c.batch * m->sq), t0 = tic();
        const float *y = acts_of(m, k, m->nl)->x,
                    *tg = m->tgt + ((size_t)k * m->T + m->t0) * h; /* SP: the rank's rows */
        for (size_t i = 0; i < m->Tl * (size_t)h; i++) {
            const double e = (double)y[i] - tg[i];
            *local += 0.5 * e * e * norm;
            m->dy[i] = (float)(e * norm);
        }
        toc(m, COMET_LLM_T_LOSS, t0);
    } else if ((rc = p2p_recv(m, m->dy, m->next, 2 * k + 1)))
        return rc;
    if ((rc = p2p_pair(m)))
        return rc;
    float *dy = m->dy, *dx = m->dx;
    for (int l = m->nl - 1; l >= 0; l--) {
        acts *A = acts_of(m, k, l);
        acts R;
        if (m->c.recompute_full) {
            /* the layer's forward again from its stored input, into scratch */
            R = m->scratch;
            R.x = A->x;
            m->recomputing = 1;
            rc = layer_fwd(m, l, &R, R.k, R.v, m->pbuf, m->mb);
            m->recomputing = 0;
            if (rc)
                return rc;
            A = &R;
        }
        if ((rc = layer_bwd(m, l, A, dy, dx, m->mb)))
            return rc;
        float *t = dy;
        dy = dx;
        dx = t;
    }
    if (m->prev >= 0) {
        /* dy now holds the stage input's gradient: a buffer of its own while sent */
        float *g = m->gsend + (size_t)k * m->Tl * h;
        memcpy(g, dy, m->Tl * (size_t)h * sizeof(float));
        return p2p_send(m, g, m->prev, 2 * k + 1);
    }
    return 0;
}

/* SP: each tp rank has the LayerNorm parameters' gradients of its rows
 * only: summed over the tp ranks once a step (one all-reduce of the
 * stage's, as Megatron sums its sequence-parallel parameters' gradients). */
static int sum_ln_grads(comet_llm *m)
{
    const size_t h = (size_t)m->h;
    for (int l = 0; l < m->nl; l++) {
        const float *G = m->G + (size_t)l * m->of.size;
        memcpy(m->lnbuf + (size_t)l * 4 * h, G + m->of.g1, 2 * h * sizeof(float));
        memcpy(m->lnbuf + (size_t)l * 4 * h + 2 * h, G + m->of.g2, 2 * h * sizeof(float));
    }
    const int rc = allreduce_tp(m, m->lnbuf, (size_t)m->nl * 4 * h);
    for (int l = 0; l < m->nl && !rc; l++) {
        float *G = m->G + (size_t)l * m->of.size;
        memcpy(G + m->of.g1, m->lnbuf + (size_t)l * 4 * h, 2 * h * sizeof(float));
        memcpy(G + m->of.g2, m->lnbuf + (size_t)l * 4 * h + 2 * h, 2 * h * sizeof(float));
    }
    return rc;
}

/* Forward and backward of every microbatch (one at a time without a
 * pipeline; 1F1B with one: pp - stage - 1 forwards in flight, then one
 * forward and one backward in turn, then the remaining backwards,
 * Narayanan et al. 2021), gradients summed over the replicas; the loss over
 * the whole batch into *loss on every rank. */
static int train_grads(comet_llm *m, double *loss)
{
    double local = 0;
    int rc = 0;
    memset(m->G, 0, m->np * sizeof(float));
    if (m->pp == 1) {
        for (int k = 0; k < m->nmb && !rc; k++)
            if (!(rc = forward(m, k)))
                rc = backward(m, k, &local);
    } else {
        const int warm = m->pp - m->pp_rank - 1 < m->nmb ? m->pp - m->pp_rank - 1 : m->nmb;
        int f = 0, b = 0;
        while (f < warm && !rc)
            rc = forward(m, f++);
        while (f < m->nmb && !rc)
            if (!(rc = forward(m, f++)))
                rc = backward(m, b++, &local);
        while (b < m->nmb && !rc)
            rc = backward(m, b++, &local);
    }
    if (!rc)
        rc = p2p_wait(m);
    if (!rc && m->sp)
        rc = sum_ln_grads(m);
    if (rc)
        return rc;
    double t0 = tic();
    if (m->c.dp > 1
        && MPI_Allreduce(MPI_IN_PLACE, m->G, (int)m->np, MPI_FLOAT, MPI_SUM, m->dp_comm)
            != MPI_SUCCESS)
        return -EIO;
    toc(m, COMET_LLM_T_DP, t0);
    /* every replica's last stage holds its loss (once per tp group; with SP
     * each tp rank its rows') */
    double mine = m->next < 0 && (m->sp || m->tp_rank == 0) ? local : 0, total = mine;
    /* every rank waits here for the others (as Megatron's stages do for the
     * gradient norm before the optimizer): with a pipeline, the stages that
     * finished their last backward idle through the drain, the bubble */
    t0 = tic();
    const int lrc = MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, m->world);
    toc(m, m->pp > 1 ? COMET_LLM_T_BUBBLE : COMET_LLM_T_LOSS, t0);
    if (lrc != MPI_SUCCESS)
        return -EIO;
    if (loss)
        *loss = total;
    return 0;
}

/* Adam (Kingma and Ba 2015; PyTorch's defaults but lr 1e-4) over this rank's
 * parameters. */
static void adam(comet_llm *m)
{
    const double t0 = tic();
    const float b1 = 0.9f, b2 = 0.999f, lr = 1e-4f, eps = 1e-8f;
    m->adam_t++;
    const float c1 = 1.0f / (1.0f - powf(b1, (float)m->adam_t)),
                c2 = 1.0f / (1.0f - powf(b2, (float)m->adam_t));
    float *P = m->P, *G = m->G, *M1 = m->M1, *M2 = m->M2;
    const size_t n = m->np;
#pragma omp parallel for num_threads(m->c.threads) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float g = G[i];
        M1[i] = b1 * M1[i] + (1 - b1) * g;
        M2[i] = b2 * M2[i] + (1 - b2) * g * g;
        P[i] -= lr * (M1[i] * c1) / (sqrtf(M2[i] * c2) + eps);
    }
    toc(m, COMET_LLM_T_OPT, t0);
}

static void set_blas(comet_llm *m, int *saved)
{
    *saved = openblas_get_num_threads();
    openblas_set_num_threads(1); /* the rank's OpenMP threads are the pool (gemm) */
    memset(m->t, 0, sizeof m->t);
    memset(m->tpk, 0, sizeof m->tpk);
}

int comet_llm_grads(comet_llm *m, double *loss)
{
    if (!m || m->c.phase != COMET_LLM_TRAIN)
        return -EINVAL;
    int saved;
    set_blas(m, &saved);
    const int rc = train_grads(m, loss);
    openblas_set_num_threads(saved);
    return rc;
}

int comet_llm_step(comet_llm *m, double *loss)
{
    if (!m)
        return -EINVAL;
    int saved, rc = 0;
    set_blas(m, &saved);
    if (loss)
        *loss = 0;
    if (m->c.phase == COMET_LLM_TRAIN) {
        rc = train_grads(m, loss);
        if (!rc)
            adam(m);
    } else {
        for (int k = 0; k < m->nmb && !rc; k++)
            rc = forward(m, k);
        if (!rc)
            rc = p2p_wait(m);
    }
    openblas_set_num_threads(saved);
    return rc;
}

int comet_llm_grads_full(comet_llm *m, float *out)
{
    const size_t n = comet_llm_nparams(&m->c);
    const int h = m->h, d = m->d, H = m->H, F = m->F, al = m->al, fl = m->fl;
    const size_t lsz = n / (size_t)m->c.layers;
    memset(out, 0, n * sizeof(float));
    /* full layout per layer: g1 b1 Wqkv[h][3][H][d] Wo[H d][h] g2 b2 W1[h][F] W2[F][h] */
    const size_t fg1 = 0, fb1 = h, fqkv = 2 * (size_t)h, fwo = fqkv + (size_t)h * 3 * H * d,
                 fg2 = fwo + (size_t)H * d * h, fb2 = fg2 + h, fw1 = fb2 + h,
                 fw2 = fw1 + (size_t)h * F;
    for (int ll = 0; ll < m->nl; ll++) {
        const float *G = m->G + (size_t)ll * m->of.size;
        float *o = out + (size_t)(m->l0 + ll) * lsz;
        if (m->tp_rank == 0)
            for (int j = 0; j < h; j++) {
                o[fg1 + j] = G[m->of.g1 + j];
                o[fb1 + j] = G[m->of.b1 + j];
                o[fg2 + j] = G[m->of.g2 + j];
                o[fb2 + j] = G[m->of.b2 + j];
            }
        for (int i = 0; i < h; i++)
            for (int w = 0; w < 3; w++)
                for (int lh = 0; lh < al; lh++)
                    memcpy(o + fqkv + (size_t)i * 3 * H * d + ((size_t)w * H + m->h0 + lh) * d,
                        G + m->of.wqkv + (size_t)i * 3 * al * d + ((size_t)w * al + lh) * d,
                        (size_t)d * sizeof(float));
        memcpy(o + fwo + (size_t)m->h0 * d * h, G + m->of.wo, (size_t)al * d * h * sizeof(float));
        for (int i = 0; i < h; i++)
            memcpy(o + fw1 + (size_t)i * F + m->f0, G + m->of.w1 + (size_t)i * fl,
                (size_t)fl * sizeof(float));
        memcpy(o + fw2 + (size_t)m->f0 * h, G + m->of.w2, (size_t)fl * h * sizeof(float));
    }
    /* the replica's stages and tensor-parallel shares (replicas agree) */
    if (MPI_Allreduce(MPI_IN_PLACE, out, (int)n, MPI_FLOAT, MPI_SUM, m->rep_comm) != MPI_SUCCESS)
        return -EIO;
    return 0;
}

void comet_llm_timers(const comet_llm *m, double t[COMET_LLM_NTIMERS])
{
    memcpy(t, m->t, sizeof m->t);
}

void comet_llm_tp_timers(const comet_llm *m, double t[COMET_LLM_TP_NKINDS])
{
    memcpy(t, m->tpk, sizeof m->tpk);
}

const float *comet_llm_output(const comet_llm *m, size_t *tokens)
{
    *tokens = (size_t)m->nmb * m->Tl;
    return m->out;
}

void comet_llm_shard(const comet_llm *m, size_t *first, size_t *rows, size_t *mtokens)
{
    *first = m->t0;
    *rows = m->Tl;
    *mtokens = m->T;
}

float *comet_llm_params_local(comet_llm *m, size_t *n)
{
    *n = m->np;
    return m->P;
}
