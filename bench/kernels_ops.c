/* Adapter to the kernels library's compound ops: buffers filled outside the
 * timed region, the call, analytic flops/bytes from the library, and a
 * double-precision spot check on a few rows. */
#include "kernels_ops.h"
#include "bench_internal.h"
#include "onednn.h"

#include "comet_kernels.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_kop_names[] = { "gemm_softmax", "gemm_layernorm", "attention", NULL };

/* Buffers and settings of one prepared call. */
typedef struct kop_impl {
    comet_kernels_op op;
    comet_kernels_variant v;
    comet_kernels_shape sh;
    comet_kernels_params p;
    float *a, *b, *y, *c, *gamma, *beta; /* GEMM: A, B, Y; attention: Q=a, K=b, V=c, O=y */
    void *ws;
    size_t ws_bytes;
    bench_dnnl *dnnl; /* variant "onednn": the peer's pipeline instead of comet's */
    struct kop_pool *io, *wsp; /* shared buffers (below) */
    /* cold (variant fused_cold): K and V are ncopies copies each, one per
     * call in turn, spanning twice the LLC, so every call reads its K and V
     * from DRAM as a decode step reads its KV cache */
    size_t ncopies, next, kv_elems;
    float *b0, *c0; /* the first copies */
} kop_impl;

/* Buffers shared by the calls of one op and shape. Every variant and thread
 * count of a shape reads the same inputs (same seeds) and writes an output
 * of the same size, one call at a time, and the checks read the output
 * right after the job's own calls: one set of A, B, (V,) Y, gamma, beta per
 * op and shape, and one workspace per op, shape and size, instead of one of
 * each per job (the quick set's 4096 x 4096 jobs held 2.4 GB). Each is an
 * arena: the same layout in every run. */
typedef struct kop_pool {
    char key[160];
    bench_arena arena;
    void *bufs[6];
    int refs;
    struct kop_pool *next;
} kop_pool;

static kop_pool *pools; /* the live pools, a list (a grid holds hundreds) */

/* The pool of key with n buffers of sizes (carved on first use: *fresh is
 * then 1 and the caller fills it), its reference taken; NULL when out of
 * memory. */
static kop_pool *pool_get(const char *key, const size_t *sizes, int n, int *fresh)
{
    *fresh = 0;
    for (kop_pool *p = pools; p; p = p->next)
        if (!strcmp(p->key, key)) {
            p->refs++;
            return p;
        }
    kop_pool *p = calloc(1, sizeof *p);
    if (!p || bench_arena_carve(&p->arena, sizes, p->bufs, n) != 0) {
        free(p);
        return NULL;
    }
    snprintf(p->key, sizeof p->key, "%s", key);
    p->refs = 1;
    p->next = pools;
    pools = p;
    *fresh = 1;
    return p;
}

static void pool_put(kop_pool *p)
{
    if (!p || --p->refs > 0)
        return;
    for (kop_pool **q = &pools; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    bench_arena_free(&p->arena);
    free(p);
}

static size_t cache_l1, cache_l2, cache_l3;

/* Pseudo-random values in [-1, 1) from a fixed seed (reproducible runs). */
void bench_fill(float *x, size_t n, unsigned seed)
{
    unsigned long long s = 0x9E3779B97F4A7C15ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 40) / 8388608.0 - 1.0);
    }
}

void bench_kop_set_caches(uint64_t l1, uint64_t l2, uint64_t l3)
{
    cache_l1 = (size_t)l1;
    cache_l2 = (size_t)l2;
    cache_l3 = (size_t)l3;
}

int bench_kop_available(const char *op)
{
    comet_kernels_op o;
    return comet_kernels_op_parse(op, &o) == 0;
}

int bench_kop_init(bench_kop *k, const char *op, const char *variant, const bench_shape *s,
    int threads, const char *param, long pval, char *err, size_t errlen)
{
    kop_impl *m = NULL;
    int rc;
    memset(k, 0, sizeof *k);
    snprintf(k->op, sizeof k->op, "%s", op);
    snprintf(k->variant, sizeof k->variant, "%s", variant);
    k->shape = *s;
    k->threads = threads;
    m = calloc(1, sizeof *m);
    if (!m)
        return comet_util_seterr(err, errlen, -ENOMEM, "bench kernels: out of memory");
    k->impl = m;
    /* the oneDNN peer is unfused (its traffic is the BLAS baseline's) */
    int peer = !strcmp(variant, "onednn");
    if (peer)
        m->v = COMET_KERNELS_UNFUSED;
    const int cold = !strcmp(variant, "fused_cold");
    if (comet_kernels_op_parse(op, &m->op)
        || (cold && (m->op != COMET_KERNELS_ATTENTION || !s->attn))
        || (!peer && comet_kernels_variant_parse(cold ? "fused" : variant, &m->v))) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "bench kernels: unknown op/variant %s/%s", op, variant);
        goto fail;
    }
    if (s->attn) {
        m->sh.batch = (size_t)s->B;
        m->sh.heads = (size_t)s->H;
        m->sh.lq = (size_t)s->Lq;
        m->sh.lk = (size_t)s->Lk;
        m->sh.d = (size_t)s->d;
    } else {
        m->sh.M = (size_t)s->M;
        m->sh.N = (size_t)s->N;
        m->sh.K = (size_t)s->K;
    }
    comet_kernels_default_params(m->op, &m->sh, cache_l1, cache_l2, cache_l3, threads, &m->p);
    m->p.threads = threads;
    m->p.causal = s->causal;
    if (param) {
        snprintf(k->param, sizeof k->param, "%s", param);
        k->pval = pval;
        if (!strcmp(param, "tile_m") || !strcmp(param, "tile_q"))
            m->p.tile_m = (size_t)pval;
        else if (!strcmp(param, "tile_n") || !strcmp(param, "tile_k"))
            m->p.tile_n = (size_t)pval;
        else if (!strcmp(param, "gemm_only"))
            m->p.gemm_only = pval != 0;
        else {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "bench kernels: unknown tile parameter '%s' (tile_m, tile_q, tile_n, tile_k)",
                param);
            goto fail;
        }
    }
    if ((rc = comet_kernels_workspace_size(m->op, m->v, &m->sh, &m->p, &m->ws_bytes))) {
        comet_util_seterr(err, errlen, rc, "bench kernels: %s %s: bad shape (line %d): %s", op,
            variant, s->line, comet_util_strerror(rc));
        goto fail;
    }
    size_t na, nb, ny, nc = 0;
    m->ncopies = 1;
    if (s->attn) {
        size_t bh = m->sh.batch * m->sh.heads;
        na = bh * m->sh.lq * m->sh.d;
        nb = nc = bh * m->sh.lk * m->sh.d;
        ny = na;
        m->kv_elems = nb;
        if (cold) { /* K and V copies spanning twice the LLC (64 MiB unknown) */
            const double span = cache_l3 > 0 ? 2.0 * (double)cache_l3 : 64.0 * (1 << 20);
            m->ncopies = (size_t)ceil(span / (2.0 * (double)nb * sizeof(float)));
            if (m->ncopies < 2)
                m->ncopies = 2;
            nb *= m->ncopies;
            nc = nb;
        }
    } else {
        na = m->sh.M * m->sh.K;
        nb = m->sh.K * m->sh.N;
        ny = m->sh.M * m->sh.N;
    }
    const int ln = m->op == COMET_KERNELS_GEMM_LAYERNORM;
    const size_t f = sizeof(float),
                 sizes[6]
        = { na * f, nb * f, ny * f, nc * f, ln ? m->sh.N * f : 0, ln ? m->sh.N * f : 0 };
    char key[160];
    int fresh = 0, wfresh = 0;
    snprintf(key, sizeof key, "io %d %zu %zu %zu %zu %zu %zu %zu %zu %zu", (int)m->op, m->sh.M,
        m->sh.N, m->sh.K, m->sh.batch, m->sh.heads, m->sh.lq, m->sh.lk, m->sh.d, m->ncopies);
    if (!(m->io = pool_get(key, sizes, 6, &fresh))) {
        rc = comet_util_seterr(
            err, errlen, -ENOMEM, "bench kernels: cannot allocate %s buffers", op);
        goto fail;
    }
    snprintf(key, sizeof key, "ws %zu %d %zu %zu %zu %zu %zu %zu %zu %zu", m->ws_bytes, (int)m->op,
        m->sh.M, m->sh.N, m->sh.K, m->sh.batch, m->sh.heads, m->sh.lq, m->sh.lk, m->sh.d);
    if (!(m->wsp = pool_get(key, &m->ws_bytes, 1, &wfresh))) {
        rc = comet_util_seterr(
            err, errlen, -ENOMEM, "bench kernels: cannot allocate %s workspace", op);
        goto fail;
    }
    void *const *bufs = m->io->bufs;
    m->a = bufs[0], m->b = bufs[1], m->y = bufs[2], m->c = bufs[3];
    m->gamma = bufs[4], m->beta = bufs[5], m->ws = m->ws_bytes ? m->wsp->bufs[0] : NULL;
    m->b0 = m->b, m->c0 = m->c;
    if (fresh) { /* the same seeds for every job of the shape */
        bench_fill(m->a, na, 11);
        bench_fill(m->b, nb, 12);
        if (m->c)
            bench_fill(m->c, nc, 13);
        if (ln) {
            bench_fill(m->gamma, m->sh.N, 14);
            bench_fill(m->beta, m->sh.N, 15);
        }
    }
    if (peer) {
        float scale = m->p.scale != 0 ? m->p.scale : 1.0f;
        if ((rc = bench_dnnl_create(&m->dnnl, m->op, &m->sh, m->p.causal, threads, scale,
                 m->p.eps != 0 ? m->p.eps : 1e-5f, m->a, m->b, m->c, m->gamma, m->beta, m->y, m->ws,
                 m->ws_bytes, err, errlen)))
            goto fail;
    }
    k->flops = comet_kernels_flops(m->op, &m->sh);
    k->bytes = comet_kernels_bytes(m->op, m->v, &m->sh);
    /* One untimed call: the result the check reads even if sampling stops early. */
    if ((rc = bench_kop_fn(k, 1))) {
        comet_util_seterr(err, errlen, rc, "bench kernels: %s %s failed: %s", op, variant,
            comet_util_strerror(rc));
        goto fail;
    }
    return 0;
fail:
    bench_kop_fini(k);
    return rc;
}

int bench_kop_fn(void *ctx, size_t reps)
{
    bench_kop *k = ctx;
    kop_impl *m = k->impl;
    for (size_t r = 0; r < reps; r++) {
        int rc;
        if (m->dnnl) {
            if ((rc = bench_dnnl_run(m->dnnl)))
                return rc;
            continue;
        }
        switch (m->op) {
        case COMET_KERNELS_GEMM_SOFTMAX:
            rc = comet_kernels_gemm_softmax(
                m->v, m->sh.M, m->sh.N, m->sh.K, m->a, m->b, m->y, &m->p, m->ws, m->ws_bytes);
            break;
        case COMET_KERNELS_GEMM_LAYERNORM:
            rc = comet_kernels_gemm_layernorm(m->v, m->sh.M, m->sh.N, m->sh.K, m->a, m->b, m->gamma,
                m->beta, m->y, &m->p, m->ws, m->ws_bytes);
            break;
        default:
            if (m->ncopies > 1) { /* the next copy of K and V: cold */
                const size_t c = m->next++ % m->ncopies;
                m->b = m->b0 + c * m->kv_elems;
                m->c = m->c0 + c * m->kv_elems;
            }
            rc = comet_kernels_attention(
                m->v, &m->sh, m->a, m->b, m->c, m->y, &m->p, m->ws, m->ws_bytes);
            break;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* Row i of scale * A B in double, with the row's sum of |a b| (error scale). */
static void gemm_row(const kop_impl *m, size_t i, double scale, double *z, double *mag)
{
    *mag = 0;
    for (size_t j = 0; j < m->sh.N; j++) {
        double acc = 0, ab = 0;
        for (size_t p = 0; p < m->sh.K; p++) {
            double t = (double)m->a[i * m->sh.K + p] * m->b[p * m->sh.N + j];
            acc += t;
            ab += fabs(t);
        }
        z[j] = scale * acc;
        if (fabs(scale) * ab > *mag)
            *mag = fabs(scale) * ab;
    }
}

static int check_gemm(const kop_impl *m)
{
    size_t N = m->sh.N, rows[3] = { 0, m->sh.M / 2, m->sh.M - 1 };
    double *z = malloc(N * sizeof *z);
    int ok = z != NULL;
    /* float32 GEMM error grows ~K * 2^-24 * sum|ab|; the epilogue adds a few ulps. */
    double gemm_tol = 4.0 * (double)m->sh.K * FLT_EPSILON;
    for (int r = 0; ok && r < 3; r++) {
        size_t i = rows[r];
        double mag;
        const float *y = m->y + i * N;
        if (m->p.gemm_only) { /* no epilogue: Y holds the scaled product itself */
            double sc = m->op == COMET_KERNELS_GEMM_SOFTMAX && m->p.scale != 0 ? m->p.scale : 1.0;
            gemm_row(m, i, sc, z, &mag);
            for (size_t j = 0; ok && j < N; j++)
                ok = fabs(y[j] - z[j]) <= gemm_tol * mag + 1e-6;
        } else if (m->op == COMET_KERNELS_GEMM_SOFTMAX) {
            gemm_row(m, i, m->p.scale != 0 ? m->p.scale : 1.0, z, &mag);
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < N; j++)
                mx = z[j] > mx ? z[j] : mx;
            for (size_t j = 0; j < N; j++)
                sum += exp(z[j] - mx);
            for (size_t j = 0; ok && j < N; j++) {
                double ref = exp(z[j] - mx) / sum;
                ok = fabs(y[j] - ref) <= ref * (2.0 * gemm_tol * mag + 1e-4) + 1e-7;
            }
        } else {
            gemm_row(m, i, 1.0, z, &mag);
            double mean = 0, var = 0;
            for (size_t j = 0; j < N; j++)
                mean += z[j];
            mean /= (double)N;
            for (size_t j = 0; j < N; j++)
                var += (z[j] - mean) * (z[j] - mean);
            var /= (double)N;
            double eps = m->p.eps != 0 ? m->p.eps : 1e-5;
            double sd = sqrt(var + eps);
            for (size_t j = 0; ok && j < N; j++) {
                double ref = (z[j] - mean) / sd * m->gamma[j] + m->beta[j];
                double tol = (2.0 * gemm_tol * mag / sd + 1e-4) * fabs(m->gamma[j]) + 1e-5;
                ok = fabs(y[j] - ref) <= tol;
            }
        }
    }
    free(z);
    return ok;
}

static int check_attention(const kop_impl *m)
{
    size_t bh = m->sh.batch * m->sh.heads, lq = m->sh.lq, lk = m->sh.lk, d = m->sh.d;
    double scale = m->p.scale != 0 ? m->p.scale : 1.0 / sqrt((double)d);
    size_t heads[2] = { 0, bh - 1 }, rows[3] = { 0, lq / 2, lq - 1 };
    double *s = malloc(lk * sizeof *s);
    int ok = s != NULL;
    for (int h = 0; ok && h < 2; h++)
        for (int r = 0; ok && r < 3; r++) {
            size_t hh = heads[h], i = rows[r];
            const float *q = m->a + (hh * lq + i) * d;
            const float *K = m->b + hh * lk * d, *V = m->c + hh * lk * d;
            /* causal: key j visible when j <= i + (lk - lq) (aligned at the end) */
            size_t last = lk;
            if (m->p.causal && lk >= lq)
                last = i + (lk - lq) + 1;
            double mx = -INFINITY, sum = 0;
            for (size_t j = 0; j < last; j++) {
                double t = 0;
                for (size_t c = 0; c < d; c++)
                    t += (double)q[c] * K[j * d + c];
                s[j] = scale * t;
                mx = s[j] > mx ? s[j] : mx;
            }
            for (size_t j = 0; j < last; j++)
                sum += (s[j] = exp(s[j] - mx));
            for (size_t c = 0; ok && c < d; c++) {
                double o = 0;
                for (size_t j = 0; j < last; j++)
                    o += s[j] * V[j * d + c];
                o /= sum;
                ok = fabs(m->y[(hh * lq + i) * d + c] - o) <= 1e-3 + 1e-3 * fabs(o);
            }
        }
    free(s);
    return ok;
}

int bench_kop_check(const bench_kop *k)
{
    kop_impl *m = k->impl;
    if (!m || !m->y)
        return 0;
    if (m->p.gemm_only == 1) {
        /* the timed calls leave the product in the tile: one more call
         * through the same GEMM writes it to Y for the check */
        bench_kop c = *k;
        m->p.gemm_only = 2;
        int rc = bench_kop_fn(&c, 1);
        m->p.gemm_only = 1;
        if (rc)
            return 0;
    }
    return m->op == COMET_KERNELS_ATTENTION ? check_attention(m) : check_gemm(m);
}

json_t *bench_kop_params(const bench_kop *k)
{
    const kop_impl *m = k->impl;
    json_t *o = json_object();
    if (!o || !m)
        return o;
    json_object_set_new(o, m->op == COMET_KERNELS_ATTENTION ? "tile_q" : "tile_m",
        json_integer((json_int_t)m->p.tile_m));
    if (m->op == COMET_KERNELS_ATTENTION)
        json_object_set_new(o, "tile_k", json_integer((json_int_t)m->p.tile_n));
    if (m->dnnl) { /* the peer's own choices: only its version is ours to state */
        json_object_set_new(o, "peer", json_string(bench_dnnl_version()));
        return o;
    }
    json_object_set_new(o, "ukernel", json_integer(m->p.ukernel));
    /* which method ran: small GEMM row ops run op by op in cache */
    if (m->op != COMET_KERNELS_ATTENTION && m->v != COMET_KERNELS_UNFUSED)
        json_object_set_new(o, "method",
            json_string(
                comet_kernels_op_by_op(m->op, m->v, &m->sh, &m->p) ? "op_by_op" : "blocked"));
    json_object_set_new(o, "isa", json_string(comet_kernels_isa_name(comet_kernels_isa_active())));
    if (m->ncopies > 1) /* the span the cold operands cycle through */
        json_object_set_new(o, "cold_bytes",
            json_integer((json_int_t)(2 * m->ncopies * m->kv_elems * sizeof(float))));
    if (k->param[0])
        json_object_set_new(o, "swept", json_string(k->param));
    return o;
}

size_t bench_kop_footprint(const bench_kop *k)
{
    const kop_impl *m = k->impl;
    if (!m)
        return 0;
    size_t f = m->sh.M * m->sh.K + m->sh.K * m->sh.N + m->sh.M * m->sh.N;
    if (m->op == COMET_KERNELS_ATTENTION) {
        size_t bh = m->sh.batch * m->sh.heads;
        f = bh * (2 * m->sh.lq * m->sh.d + 2 * m->sh.lk * m->sh.d * m->ncopies);
    }
    return f * sizeof(float) + m->ws_bytes + bench_dnnl_footprint(m->dnnl);
}

void bench_kop_fini(bench_kop *k)
{
    kop_impl *m = k->impl;
    if (m) {
        bench_dnnl_free(m->dnnl);
        pool_put(m->io);
        pool_put(m->wsp);
        free(m);
    }
    k->impl = NULL;
}
