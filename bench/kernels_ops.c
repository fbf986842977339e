/* Adapter between the kernels bench and the kernels library's compound ops:
 * buffers allocated outside the timed region (workspace API), the call,
 * analytic flops/bytes, and a spot check against a double reference. */
#include "kernels_ops.h"

#include "comet_kernels.h"
#include "comet_probe.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const bench_kop_names[] = {"gemm_softmax", "gemm_layernorm", "attention", NULL};

typedef struct kop_impl {
    comet_kernels_op op;
    comet_kernels_variant v;
    comet_kernels_shape s;
    comet_kernels_params p;
    float *a, *b, *c, *y, *g, *bt; /* A/Q, B/K, V, output, gamma, beta */
    void *ws;
    size_t ws_bytes;
} kop_impl;

int bench_kop_available(const char *op)
{
    comet_kernels_op o;
    return comet_kernels_op_parse(op, &o) == 0;
}

static float *falloc(size_t n, unsigned seed, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof(float));
    if (x) {
        bench_fill(x, n, seed);
        for (size_t i = 0; i < n; i++)
            x[i] = lo + (hi - lo) * 0.5f * (x[i] + 1.0f);
    }
    return x;
}

int bench_kop_init(bench_kop *k, const char *op, const char *variant, const bench_shape *sh,
    int threads, const char *param, long pval, char *err, size_t errlen)
{
    kop_impl *im = calloc(1, sizeof *im);
    int rc = 0;
    memset(k, 0, sizeof *k);
    if (!im)
        return comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
    if (comet_kernels_op_parse(op, &im->op) || comet_kernels_variant_parse(variant, &im->v)) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "bench kernels: unknown op/variant %s/%s", op,
                               variant);
        goto fail;
    }
    if (sh->attn)
        im->s = (comet_kernels_shape){.batch = (size_t)sh->B, .heads = (size_t)sh->H,
                                      .lq = (size_t)sh->Lq, .lk = (size_t)sh->Lk, .d = (size_t)sh->d};
    else
        im->s = (comet_kernels_shape){.M = (size_t)sh->M, .N = (size_t)sh->N, .K = (size_t)sh->K};
    /* tile defaults from this machine's caches (a fused tile fits L2) */
    comet_probe_machine m;
    comet_probe_opts po = {.skip_papi = 1, .skip_mpi = 1};
    size_t l1 = 0, l2 = 0, l3 = 0;
    if (comet_probe_run(&po, &m, NULL, 0) == 0) {
        l1 = comet_probe_cache_size(&m, 1);
        l2 = comet_probe_cache_size(&m, 2);
        l3 = comet_probe_cache_size(&m, 3);
    }
    comet_kernels_default_params(im->op, &im->s, l1, l2, l3, threads, &im->p);
    im->p.causal = sh->causal;
    if (param && *param) {
        if (!strcmp(param, "tile_m") || !strcmp(param, "tile_q"))
            im->p.tile_m = (size_t)pval;
        else if (!strcmp(param, "tile_n") || !strcmp(param, "tile_k"))
            im->p.tile_n = (size_t)pval;
        else if (!strcmp(param, "ukernel"))
            im->p.ukernel = (int)pval;
        else {
            rc = comet_util_seterr(err, errlen, -EINVAL, "bench kernels: unknown parameter '%s'",
                                   param);
            goto fail;
        }
    }
    if ((rc = comet_kernels_workspace_size(im->op, im->v, &im->s, &im->p, &im->ws_bytes)) != 0) {
        rc = comet_util_seterr(err, errlen, rc, "bench kernels: %s shape rejected: %s", op,
                               comet_util_strerror(rc));
        goto fail;
    }
    size_t na, nb, nc = 0, ny;
    if (sh->attn) {
        size_t bh = im->s.batch * im->s.heads;
        na = bh * im->s.lq * im->s.d;
        nb = nc = bh * im->s.lk * im->s.d;
        ny = na;
    } else {
        na = im->s.M * im->s.K;
        nb = im->s.K * im->s.N;
        ny = im->s.M * im->s.N;
    }
    im->a = falloc(na, 1, -1, 1);
    im->b = falloc(nb, 2, -1, 1);
    im->c = nc ? falloc(nc, 3, -1, 1) : NULL;
    im->y = malloc(ny * sizeof(float));
    im->g = sh->attn ? NULL : falloc(im->s.N, 4, 0.5f, 1.5f);
    im->bt = sh->attn ? NULL : falloc(im->s.N, 5, -0.5f, 0.5f);
    im->ws = im->ws_bytes ? malloc(im->ws_bytes) : NULL;
    if (!im->a || !im->b || (nc && !im->c) || !im->y || (!sh->attn && (!im->g || !im->bt)) ||
        (im->ws_bytes && !im->ws)) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench kernels: out of memory for %s", op);
        goto fail;
    }
    memset(im->y, 0, ny * sizeof(float)); /* first touch outside the timed region */
    snprintf(k->op, sizeof k->op, "%s", op);
    snprintf(k->variant, sizeof k->variant, "%s", variant);
    k->shape = *sh;
    k->threads = threads;
    if (param)
        snprintf(k->param, sizeof k->param, "%s", param);
    k->pval = pval;
    k->flops = comet_kernels_flops(im->op, &im->s);
    k->bytes = comet_kernels_bytes(im->op, im->v, &im->s);
    k->impl = im;
    return 0;
fail:
    k->impl = im;
    bench_kop_fini(k);
    return rc;
}

static int call(kop_impl *im)
{
    switch (im->op) {
    case COMET_KERNELS_GEMM_SOFTMAX:
        return comet_kernels_gemm_softmax(im->v, im->s.M, im->s.N, im->s.K, im->a, im->b, im->y,
                                          &im->p, im->ws, im->ws_bytes);
    case COMET_KERNELS_GEMM_LAYERNORM:
        return comet_kernels_gemm_layernorm(im->v, im->s.M, im->s.N, im->s.K, im->a, im->b, im->g,
                                            im->bt, im->y, &im->p, im->ws, im->ws_bytes);
    case COMET_KERNELS_ATTENTION:
        return comet_kernels_attention(im->v, &im->s, im->a, im->b, im->c, im->y, &im->p, im->ws,
                                       im->ws_bytes);
    }
    return -EINVAL;
}

int bench_kop_fn(void *ctx, size_t reps)
{
    bench_kop *k = ctx;
    for (size_t r = 0; r < reps; r++) {
        int rc = call(k->impl);
        if (rc)
            return rc;
    }
    return 0;
}

/* Row i of the reference in double. */
static int check_row(const kop_impl *im, size_t i, size_t h)
{
    if (im->op == COMET_KERNELS_ATTENTION) {
        size_t lq = im->s.lq, lk = im->s.lk, d = im->s.d;
        const float *q = im->a + (h * lq + i) * d, *K = im->b + h * lk * d, *V = im->c + h * lk * d;
        double *s = malloc(lk * sizeof(double)), m = -INFINITY, sum = 0;
        if (!s)
            return 0;
        long lim = (long)i + (long)lk - (long)lq;
        for (size_t j = 0; j < lk; j++) {
            double a = 0;
            for (size_t c = 0; c < d; c++)
                a += (double)q[c] * K[j * d + c];
            s[j] = (im->p.causal && (long)j > lim) ? -INFINITY : a * im->p.scale;
            if (s[j] > m)
                m = s[j];
        }
        for (size_t j = 0; j < lk; j++)
            sum += (s[j] = m == -INFINITY ? 0 : exp(s[j] - m));
        int ok = 1;
        for (size_t c = 0; c < d && ok; c++) {
            double o = 0;
            for (size_t j = 0; j < lk; j++)
                o += s[j] * V[j * d + c];
            o = sum > 0 ? o / sum : 0;
            ok = fabs(im->y[(h * lq + i) * d + c] - o) <= 1e-4 * fabs(o) + 1e-4;
        }
        free(s);
        return ok;
    }
    size_t N = im->s.N, K = im->s.K;
    double *r = malloc(N * sizeof(double)), m = -INFINITY, sum = 0, mean = 0, var = 0;
    if (!r)
        return 0;
    for (size_t j = 0; j < N; j++) {
        double a = 0;
        for (size_t k = 0; k < K; k++)
            a += (double)im->a[i * K + k] * im->b[k * N + j];
        r[j] = im->op == COMET_KERNELS_GEMM_SOFTMAX ? a * im->p.scale : a;
        if (r[j] > m)
            m = r[j];
        mean += r[j] / (double)N;
    }
    for (size_t j = 0; j < N; j++) {
        sum += exp(r[j] - m);
        var += (r[j] - mean) * (r[j] - mean) / (double)N;
    }
    int ok = 1;
    double tol = 1e-4 + (double)K * 1e-6;
    for (size_t j = 0; j < N && ok; j++) {
        double want = im->op == COMET_KERNELS_GEMM_SOFTMAX
                          ? exp(r[j] - m) / sum
                          : (r[j] - mean) / sqrt(var + im->p.eps) * im->g[j] + im->bt[j];
        ok = fabs(im->y[i * N + j] - want) <= tol * fabs(want) + tol;
    }
    free(r);
    return ok;
}

int bench_kop_check(const bench_kop *k)
{
    const kop_impl *im = k->impl;
    if (!im)
        return 0;
    size_t rows = im->op == COMET_KERNELS_ATTENTION ? im->s.lq : im->s.M;
    size_t heads = im->op == COMET_KERNELS_ATTENTION ? im->s.batch * im->s.heads : 1;
    size_t pick[3] = {0, rows / 2, rows - 1};
    for (int t = 0; t < 3; t++)
        if (!check_row(im, pick[t], (heads - 1) * (size_t)t / 2))
            return 0;
    return 1;
}

json_t *bench_kop_params(const bench_kop *k)
{
    const kop_impl *im = k->impl;
    json_t *j = json_object();
    if (!im)
        return j;
    json_object_set_new(j, "tile_m", json_integer((json_int_t)im->p.tile_m));
    if (im->op == COMET_KERNELS_ATTENTION)
        json_object_set_new(j, "tile_n", json_integer((json_int_t)im->p.tile_n));
    else if (im->v == COMET_KERNELS_FUSED)
        json_object_set_new(j, "engine",
                            json_string(im->ws_bytes ? "ukernel" : "openblas"));
    json_object_set_new(j, "avx2", json_boolean(comet_kernels_have_avx2()));
    return j;
}

void bench_kop_fini(bench_kop *k)
{
    kop_impl *im = k->impl;
    if (!im)
        return;
    free(im->a);
    free(im->b);
    free(im->c);
    free(im->y);
    free(im->g);
    free(im->bt);
    free(im->ws);
    free(im);
    k->impl = NULL;
}
