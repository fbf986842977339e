/* The oneDNN peer of the kernels bench: oneDNN's own primitives, one after
 * the other, on the same buffers the comet variants use. Intermediates are
 * allocated and touched here, outside the timed region. */
#include "onednn.h"

#include "comet_util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef COMET_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>

#define DNNL_MAX_PRIM 3
#define DNNL_MAX_MEM  12

struct bench_dnnl {
    dnnl_engine_t eng;
    dnnl_stream_t st;
    dnnl_primitive_t prim[DNNL_MAX_PRIM];
    dnnl_exec_arg_t args[DNNL_MAX_PRIM][6];
    int nargs[DNNL_MAX_PRIM], nprim;
    dnnl_memory_t mem[DNNL_MAX_MEM];
    int nmem;
    float *inter; /* the intermediate (GEMM ops: M x N; attention: all heads' S) */
    size_t inter_bytes;
    int own_inter; /* inter was allocated here (else the caller's workspace) */
    int threads;
};

int bench_dnnl_available(void)
{
    return 1;
}

const char *bench_dnnl_version(void)
{
    static char buf[48];
    const dnnl_version_t *v = dnnl_version();
    snprintf(buf, sizeof buf, "oneDNN %d.%d.%d", v->major, v->minor, v->patch);
    return buf;
}

/* A memory over the caller's buffer (or oneDNN's own when p is NULL). */
static int dmem(bench_dnnl *d, int nd, const dnnl_dim_t *dims, dnnl_format_tag_t tag, const void *p,
    dnnl_memory_t *out)
{
    dnnl_memory_desc_t md;
    if (d->nmem == DNNL_MAX_MEM
        || dnnl_memory_desc_init_by_tag(&md, nd, dims, dnnl_f32, tag) != dnnl_success
        || dnnl_memory_create(
               &d->mem[d->nmem], &md, d->eng, p ? (void *)(uintptr_t)p : DNNL_MEMORY_ALLOCATE)
            != dnnl_success)
        return -EINVAL;
    *out = d->mem[d->nmem++];
    return 0;
}

static const dnnl_memory_desc_t *desc_of(dnnl_memory_t m)
{
    const dnnl_memory_desc_t *md = NULL;
    dnnl_memory_get_memory_desc(m, &md);
    return md;
}

/* Primitive from an op descriptor (attr may be NULL); *pd_out keeps the
 * primitive descriptor when asked. */
static int dprim(
    bench_dnnl *d, const void *op_desc, dnnl_primitive_attr_t attr, dnnl_primitive_desc_t *pd_out)
{
    dnnl_primitive_desc_t pd = NULL;
    if (d->nprim == DNNL_MAX_PRIM
        || dnnl_primitive_desc_create(&pd, op_desc, attr, d->eng, NULL) != dnnl_success)
        return -ENOTSUP;
    dnnl_status_t s = dnnl_primitive_create(&d->prim[d->nprim], pd);
    if (s == dnnl_success && pd_out)
        *pd_out = pd;
    else
        dnnl_primitive_desc_destroy(pd);
    if (s != dnnl_success)
        return -ENOTSUP;
    d->nprim++;
    return 0;
}

static void dargs(bench_dnnl *d, int i, int n, const dnnl_exec_arg_t *a)
{
    memcpy(d->args[i], a, (size_t)n * sizeof *a);
    d->nargs[i] = n;
}

/* matmul src x wei -> dst, times scale (an output scale when not 1). */
static int dmatmul(
    bench_dnnl *d, dnnl_memory_t src, dnnl_memory_t wei, dnnl_memory_t dst, float scale)
{
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    int rc = -ENOTSUP;
    if (dnnl_matmul_desc_init(&md, desc_of(src), desc_of(wei), NULL, desc_of(dst)) != dnnl_success)
        return rc;
    if (scale != 1.0f
        && (dnnl_primitive_attr_create(&attr) != dnnl_success
            || dnnl_primitive_attr_set_output_scales(attr, 1, 0, &scale) != dnnl_success))
        goto out;
    int i = d->nprim;
    if ((rc = dprim(d, &md, attr, NULL)) == 0) {
        dnnl_exec_arg_t a[3]
            = { { DNNL_ARG_SRC, src }, { DNNL_ARG_WEIGHTS, wei }, { DNNL_ARG_DST, dst } };
        dargs(d, i, 3, a);
    }
out:
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return rc;
}

static int dsoftmax(bench_dnnl *d, dnnl_memory_t src, dnnl_memory_t dst, int axis)
{
    dnnl_softmax_desc_t sd;
    if (dnnl_softmax_forward_desc_init(&sd, dnnl_forward_inference, desc_of(src), axis)
        != dnnl_success)
        return -ENOTSUP;
    int i = d->nprim, rc = dprim(d, &sd, NULL, NULL);
    if (rc == 0) {
        dnnl_exec_arg_t a[2] = { { DNNL_ARG_SRC, src }, { DNNL_ARG_DST, dst } };
        dargs(d, i, 2, a);
    }
    return rc;
}

static int dlayernorm(bench_dnnl *d, dnnl_memory_t src, dnnl_memory_t dst, dnnl_memory_t g,
    dnnl_memory_t b, float eps)
{
    dnnl_layer_normalization_desc_t ld;
    dnnl_primitive_desc_t pd = NULL;
    if (dnnl_layer_normalization_forward_desc_init(
            &ld, dnnl_forward_inference, desc_of(src), NULL, eps, dnnl_use_scale | dnnl_use_shift)
        != dnnl_success)
        return -ENOTSUP;
    int i = d->nprim, rc = dprim(d, &ld, NULL, &pd);
    if (rc)
        return rc;
    dnnl_exec_arg_t a[6] = { { DNNL_ARG_SRC, src }, { DNNL_ARG_DST, dst }, { DNNL_ARG_SCALE, g },
        { DNNL_ARG_SHIFT, b } };
    int n = 4;
    /* inference may still ask for statistics buffers: give what it asks */
    const dnnl_memory_desc_t *smd
        = dnnl_primitive_desc_query_md(pd, dnnl_query_exec_arg_md, DNNL_ARG_MEAN);
    if (smd && dnnl_memory_desc_get_size(smd) > 0 && d->nmem + 2 <= DNNL_MAX_MEM) {
        if (dnnl_memory_create(&d->mem[d->nmem], smd, d->eng, DNNL_MEMORY_ALLOCATE) == dnnl_success
            && dnnl_memory_create(&d->mem[d->nmem + 1], smd, d->eng, DNNL_MEMORY_ALLOCATE)
                == dnnl_success) {
            a[4] = (dnnl_exec_arg_t) { DNNL_ARG_MEAN, d->mem[d->nmem] };
            a[5] = (dnnl_exec_arg_t) { DNNL_ARG_VARIANCE, d->mem[d->nmem + 1] };
            d->nmem += 2;
            n = 6;
        } else {
            rc = -ENOMEM;
        }
    }
    dnnl_primitive_desc_destroy(pd);
    dargs(d, i, n, a);
    return rc;
}

int bench_dnnl_create(bench_dnnl **out, comet_kernels_op op, const comet_kernels_shape *sh,
    int causal, int threads, float scale, float eps, const float *a, const float *b, const float *c,
    const float *gamma, const float *beta, float *y, float *ws, size_t ws_bytes, char *err,
    size_t errlen)
{
    bench_dnnl *d = calloc(1, sizeof *d);
    int rc = -ENOMEM;
    *out = NULL;
    if (!d)
        return comet_util_seterr(err, errlen, rc, "bench kernels: out of memory");
    d->threads = threads;
    if (op == COMET_KERNELS_ATTENTION && causal) {
        rc = comet_util_seterr(err, errlen, -ENOTSUP,
            "bench kernels: the oneDNN peer runs unmasked attention only (causal skipped)");
        goto fail;
    }
    omp_set_num_threads(threads); /* oneDNN's CPU runtime is OpenMP */
    if (dnnl_engine_create(&d->eng, dnnl_cpu, 0) != dnnl_success
        || dnnl_stream_create(&d->st, d->eng, dnnl_stream_default_flags) != dnnl_success) {
        rc = comet_util_seterr(err, errlen, -EIO, "bench kernels: oneDNN has no CPU engine");
        goto fail;
    }
    size_t inter
        = op == COMET_KERNELS_ATTENTION ? sh->batch * sh->heads * sh->lq * sh->lk : sh->M * sh->N;
    d->inter_bytes = inter * sizeof(float);
    /* the caller's workspace when it holds the intermediate (the unfused
     * kernel's, shared by every job of the shape), else one of its own */
    d->own_inter = !(ws && ws_bytes >= d->inter_bytes);
    d->inter = d->own_inter ? aligned_alloc(64, (d->inter_bytes + 63) / 64 * 64 + 64) : ws;
    if (!d->inter) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench kernels: out of memory");
        goto fail;
    }
    memset(d->inter, 0, d->inter_bytes); /* pages touched before any timing */
    dnnl_memory_t mA, mB, mC, mY, mg = NULL, mb = NULL, mV;
    if (op != COMET_KERNELS_ATTENTION) {
        dnnl_dim_t M = (dnnl_dim_t)sh->M, N = (dnnl_dim_t)sh->N, K = (dnnl_dim_t)sh->K;
        dnnl_dim_t dmk[2] = { M, K }, dkn[2] = { K, N }, dmn[2] = { M, N }, dn[1] = { N };
        if ((rc = dmem(d, 2, dmk, dnnl_ab, a, &mA)) || (rc = dmem(d, 2, dkn, dnnl_ab, b, &mB))
            || (rc = dmem(d, 2, dmn, dnnl_ab, d->inter, &mC))
            || (rc = dmem(d, 2, dmn, dnnl_ab, y, &mY)))
            goto bad;
        if ((rc = dmatmul(d, mA, mB, mC, op == COMET_KERNELS_GEMM_SOFTMAX ? scale : 1.0f)))
            goto bad;
        if (op == COMET_KERNELS_GEMM_SOFTMAX) {
            rc = dsoftmax(d, mC, mY, 1);
        } else if (!(rc = dmem(d, 1, dn, dnnl_a, gamma, &mg))
            && !(rc = dmem(d, 1, dn, dnnl_a, beta, &mb))) {
            rc = dlayernorm(d, mC, mY, mg, mb, eps);
        }
        if (rc)
            goto bad;
    } else {
        dnnl_dim_t H = (dnnl_dim_t)(sh->batch * sh->heads), lq = (dnnl_dim_t)sh->lq,
                   lk = (dnnl_dim_t)sh->lk, dd = (dnnl_dim_t)sh->d;
        dnnl_dim_t q3[3] = { H, lq, dd }, kt3[3] = { H, dd, lk }, s3[3] = { H, lq, lk },
                   v3[3] = { H, lk, dd };
        /* K is stored [head][key][d]: as K^T (d x lk per head) that is acb */
        if ((rc = dmem(d, 3, q3, dnnl_abc, a, &mA)) || (rc = dmem(d, 3, kt3, dnnl_acb, b, &mB))
            || (rc = dmem(d, 3, s3, dnnl_abc, d->inter, &mC))
            || (rc = dmem(d, 3, v3, dnnl_abc, c, &mV)) || (rc = dmem(d, 3, q3, dnnl_abc, y, &mY)))
            goto bad;
        if ((rc = dmatmul(d, mA, mB, mC, scale)) || (rc = dsoftmax(d, mC, mC, 2))
            || (rc = dmatmul(d, mC, mV, mY, 1.0f)))
            goto bad;
    }
    *out = d;
    return 0;
bad:
    comet_util_seterr(err, errlen, rc, "bench kernels: oneDNN cannot build the %s pipeline (%s)",
        comet_kernels_op_name(op), comet_util_strerror(rc));
fail:
    bench_dnnl_free(d);
    return rc;
}

int bench_dnnl_run(bench_dnnl *d)
{
    omp_set_num_threads(d->threads);
    for (int i = 0; i < d->nprim; i++)
        if (dnnl_primitive_execute(d->prim[i], d->st, d->nargs[i], d->args[i]) != dnnl_success)
            return -EIO;
    return dnnl_stream_wait(d->st) == dnnl_success ? 0 : -EIO;
}

size_t bench_dnnl_footprint(const bench_dnnl *d)
{
    return d && d->own_inter ? d->inter_bytes : 0;
}

void bench_dnnl_free(bench_dnnl *d)
{
    if (!d)
        return;
    for (int i = 0; i < d->nprim; i++)
        dnnl_primitive_destroy(d->prim[i]);
    for (int i = 0; i < d->nmem; i++)
        dnnl_memory_destroy(d->mem[i]);
    if (d->st)
        dnnl_stream_destroy(d->st);
    if (d->eng)
        dnnl_engine_destroy(d->eng);
    if (d->own_inter)
        free(d->inter);
    free(d);
}

#else /* no oneDNN at build time */

struct bench_dnnl {
    int unused;
};

int bench_dnnl_available(void)
{
    return 0;
}

const char *bench_dnnl_version(void)
{
    return "oneDNN not found";
}

int bench_dnnl_create(bench_dnnl **out, comet_kernels_op op, const comet_kernels_shape *sh,
    int causal, int threads, float scale, float eps, const float *a, const float *b, const float *c,
    const float *gamma, const float *beta, float *y, float *ws, size_t ws_bytes, char *err,
    size_t errlen)
{
    (void)op, (void)sh, (void)causal, (void)threads, (void)scale, (void)eps;
    (void)a, (void)b, (void)c, (void)gamma, (void)beta, (void)y;
    *out = NULL;
    return comet_util_seterr(err, errlen, -ENOTSUP,
        "bench kernels: oneDNN not found at build time (Debian libdnnl-dev)");
}

int bench_dnnl_run(bench_dnnl *d)
{
    (void)d;
    return -ENOTSUP;
}

size_t bench_dnnl_footprint(const bench_dnnl *d)
{
    (void)d;
    return 0;
}

void bench_dnnl_free(bench_dnnl *d)
{
    free(d);
}

#endif
