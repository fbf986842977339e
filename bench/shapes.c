/* Shape sets for `comet bench kernels` (configs/shapes/NAME.yaml). Every error
 * names file:line. */
#include "bench_internal.h"
#include "kernels_ops.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int where_err(
    const comet_util_doc *n, char *err, size_t errlen, const char *fmt, const char *what)
{
    char w[256];
    return comet_util_seterr(err, errlen, -EINVAL, "%s: %s%s", comet_util_doc_where(n, w, sizeof w),
        fmt, what ? what : "");
}

/* An integer field within [lo, hi]. */
static int get_int(const comet_util_doc *map, const char *key, const double *dflt, double lo,
    double hi, long *out, char *err, size_t errlen)
{
    double v;
    int rc = comet_util_doc_number(map, key, dflt, lo, hi, &v, err, errlen);
    if (rc)
        return rc;
    if (v != floor(v)) {
        char w[256];
        const comet_util_doc *n = comet_util_doc_get(map, key);
        return comet_util_seterr(err, errlen, -EINVAL, "%s: field '%s' must be an integer",
            comet_util_doc_where(n ? n : map, w, sizeof w), key);
    }
    *out = (long)v;
    return 0;
}

/* A list of thread counts: integers >= 1 or "all" (stored as 0). */
static int get_threads(const comet_util_doc *n, int *out, size_t *nout, char *err, size_t errlen)
{
    if (n->kind != COMET_DOC_SEQ || n->n == 0)
        return where_err(n, err, errlen, "'threads' must be a non-empty list", NULL);
    if (n->n > BENCH_MAX_LIST)
        return where_err(n, err, errlen, "too many thread counts", NULL);
    for (size_t i = 0; i < n->n; i++) {
        const comet_util_doc *c = n->child[i];
        uint64_t u;
        if (c->kind != COMET_DOC_SCALAR)
            return where_err(c, err, errlen, "thread count must be an integer or 'all'", NULL);
        if (!strcmp(c->value, "all"))
            out[i] = 0;
        else if (comet_util_parse_u64(c->value, &u) == 0 && u >= 1 && u <= 4096)
            out[i] = (int)u;
        else
            return where_err(
                c, err, errlen, "thread count must be an integer >= 1 or 'all': ", c->value);
    }
    *nout = n->n;
    return 0;
}

static int parse_shape(const comet_util_doc *n, int attn, bench_shape *s, char *err, size_t errlen)
{
    static const char *const gk[] = { "M", "N", "K", NULL };
    static const char *const ak[] = { "B", "H", "Lq", "Lk", "d", "causal", NULL };
    const double zero = 0;
    long c = 0;
    int rc;
    memset(s, 0, sizeof *s);
    s->line = n->line;
    s->attn = attn;
    if (n->kind != COMET_DOC_MAP)
        return where_err(n, err, errlen, "a shape must be a map", NULL);
    if ((rc = comet_util_doc_check_keys(n, attn ? ak : gk, err, errlen)))
        return rc;
    if (!attn)
        return get_int(n, "M", NULL, 1, 1 << 20, &s->M, err, errlen)
                || get_int(n, "N", NULL, 1, 1 << 20, &s->N, err, errlen)
                || get_int(n, "K", NULL, 1, 1 << 20, &s->K, err, errlen)
            ? -EINVAL
            : 0;
    if (get_int(n, "B", NULL, 1, 1 << 16, &s->B, err, errlen)
        || get_int(n, "H", NULL, 1, 1 << 16, &s->H, err, errlen)
        || get_int(n, "Lq", NULL, 1, 1 << 20, &s->Lq, err, errlen)
        || get_int(n, "Lk", NULL, 1, 1 << 20, &s->Lk, err, errlen)
        || get_int(n, "d", NULL, 1, 4096, &s->d, err, errlen)
        || get_int(n, "causal", &zero, 0, 1, &c, err, errlen))
        return -EINVAL;
    s->causal = (int)c;
    return 0;
}

static int known(const char *op, const char *const *ops)
{
    for (size_t i = 0; ops[i]; i++)
        if (!strcmp(op, ops[i]))
            return 1;
    return 0;
}

void bench_shapeset_free(bench_shapeset *set)
{
    for (size_t i = 0; i < set->nops; i++)
        free(set->ops[i].shapes);
    memset(set, 0, sizeof *set);
}

int bench_shapeset_load(
    const char *path, const char *const *ops_known, bench_shapeset *set, char *err, size_t errlen)
{
    static const char *const top[]
        = { "threads", "ops", "tile_sweep", "sgemm", "decode_attention", NULL };
    static const char *const opk[] = { "op", "variants", "shapes", NULL };
    static const char *const swk[] = { "op", "param", "values", NULL };
    static const char *const sgk[] = { "threads", "min", "max", "points", "fused_gemm",
        "fused_max_k", "fused_threads", "max_gflop", "small_m", "small_m_cold", NULL };
    comet_util_doc *doc = NULL;
    int rc;
    memset(set, 0, sizeof *set);
    if ((rc = comet_util_doc_load(path, &doc, err, errlen)))
        return rc;
    if (doc->kind != COMET_DOC_MAP) {
        rc = where_err(doc, err, errlen, "a shape set must be a map", NULL);
        goto fail;
    }
    if ((rc = comet_util_doc_check_keys(doc, top, err, errlen)))
        goto fail;
    const comet_util_doc *th = comet_util_doc_get(doc, "threads");
    if (th) {
        if ((rc = get_threads(th, set->threads, &set->nthreads, err, errlen)))
            goto fail;
    } else {
        set->threads[0] = 1;
        set->nthreads = 1;
    }
    const comet_util_doc *ops = comet_util_doc_get(doc, "ops");
    if (ops && (ops->kind != COMET_DOC_SEQ || ops->n > 8)) {
        rc = where_err(ops, err, errlen, "'ops' must be a list of at most 8 entries", NULL);
        goto fail;
    }
    for (size_t i = 0; ops && i < ops->n; i++) {
        const comet_util_doc *e = ops->child[i];
        bench_opset *o = &set->ops[set->nops++];
        const char *name;
        o->line = e->line;
        if (e->kind != COMET_DOC_MAP) {
            rc = where_err(e, err, errlen, "an ops entry must be a map", NULL);
            goto fail;
        }
        if ((rc = comet_util_doc_check_keys(e, opk, err, errlen))
            || (rc = comet_util_doc_string(e, "op", NULL, &name, err, errlen)))
            goto fail;
        if (!known(name, ops_known)) {
            rc = where_err(comet_util_doc_get(e, "op"), err, errlen, "unknown op ", name);
            goto fail;
        }
        snprintf(o->op, sizeof o->op, "%s", name);
        const comet_util_doc *v = comet_util_doc_get(e, "variants");
        if (!v || v->kind != COMET_DOC_SEQ || v->n == 0 || v->n > 4) {
            rc = where_err(
                v ? v : e, err, errlen, "'variants' must be a list of 1 to 4 names", NULL);
            goto fail;
        }
        for (size_t k = 0; k < v->n; k++) {
            const comet_util_doc *c = v->child[k];
            if (c->kind != COMET_DOC_SCALAR
                || (strcmp(c->value, "fused") && strcmp(c->value, "unfused")
                    && strcmp(c->value, "unfused_same_gemm") && strcmp(c->value, "onednn"))) {
                rc = where_err(c, err, errlen,
                    "variant must be 'fused', 'unfused', 'unfused_same_gemm' or 'onednn'", NULL);
                goto fail;
            }
            for (size_t q = 0; q < o->nvariants; q++)
                if (!strcmp(o->variants[q], c->value)) {
                    rc = where_err(c, err, errlen, "variant listed twice: ", c->value);
                    goto fail;
                }
            snprintf(o->variants[o->nvariants++], sizeof o->variants[0], "%s", c->value);
        }
        const comet_util_doc *sh = comet_util_doc_get(e, "shapes");
        if (!sh || sh->kind != COMET_DOC_SEQ || sh->n == 0) {
            rc = where_err(sh ? sh : e, err, errlen, "'shapes' must be a non-empty list", NULL);
            goto fail;
        }
        o->shapes = calloc(sh->n, sizeof *o->shapes);
        if (!o->shapes) {
            rc = comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", path);
            goto fail;
        }
        int attn = !strcmp(o->op, "attention");
        for (size_t k = 0; k < sh->n; k++, o->nshapes++)
            if ((rc = parse_shape(sh->child[k], attn, &o->shapes[k], err, errlen)))
                goto fail;
    }
    const comet_util_doc *sw = comet_util_doc_get(doc, "tile_sweep");
    if (sw && (sw->kind != COMET_DOC_SEQ || sw->n > 16)) {
        rc = where_err(sw, err, errlen, "'tile_sweep' must be a list of at most 16 entries", NULL);
        goto fail;
    }
    for (size_t i = 0; sw && i < sw->n; i++) {
        const comet_util_doc *e = sw->child[i];
        bench_tilesweep *t = &set->sweeps[set->nsweeps++];
        const char *name, *param;
        t->line = e->line;
        if (e->kind != COMET_DOC_MAP) {
            rc = where_err(e, err, errlen, "a tile_sweep entry must be a map", NULL);
            goto fail;
        }
        if ((rc = comet_util_doc_check_keys(e, swk, err, errlen))
            || (rc = comet_util_doc_string(e, "op", NULL, &name, err, errlen))
            || (rc = comet_util_doc_string(e, "param", NULL, &param, err, errlen)))
            goto fail;
        if (!known(name, ops_known)) {
            rc = where_err(comet_util_doc_get(e, "op"), err, errlen, "unknown op ", name);
            goto fail;
        }
        snprintf(t->op, sizeof t->op, "%s", name);
        snprintf(t->param, sizeof t->param, "%s", param);
        const comet_util_doc *v = comet_util_doc_get(e, "values");
        if (!v || v->kind != COMET_DOC_SEQ || v->n == 0 || v->n > BENCH_MAX_LIST) {
            rc = where_err(
                v ? v : e, err, errlen, "'values' must be a list of 1 to 16 integers", NULL);
            goto fail;
        }
        for (size_t k = 0; k < v->n; k++) {
            uint64_t u;
            const comet_util_doc *c = v->child[k];
            if (c->kind != COMET_DOC_SCALAR || comet_util_parse_u64(c->value, &u) || u < 1
                || u > 65536) {
                rc = where_err(c, err, errlen, "tile value must be an integer in [1, 65536]", NULL);
                goto fail;
            }
            t->values[t->nvalues++] = (long)u;
        }
    }
    const comet_util_doc *sg = comet_util_doc_get(doc, "sgemm");
    if (sg) {
        const double p_dflt = 3;
        if (sg->kind != COMET_DOC_MAP) {
            rc = where_err(sg, err, errlen, "'sgemm' must be a map", NULL);
            goto fail;
        }
        if ((rc = comet_util_doc_check_keys(sg, sgk, err, errlen))
            || (rc = get_int(sg, "min", NULL, 1, 1 << 16, &set->sg_min, err, errlen))
            || (rc = get_int(sg, "max", NULL, 1, 1 << 16, &set->sg_max, err, errlen)))
            goto fail;
        long pts;
        if ((rc = get_int(sg, "points", &p_dflt, 1, 16, &pts, err, errlen)))
            goto fail;
        set->sg_points = (int)pts;
        /* fused_gemm: 1 also times the GEMM inside the fused kernels (their
         * own micro-kernel at small K) on the same grid, for calibration */
        const double f_dflt = 0;
        long fg;
        if ((rc = get_int(sg, "fused_gemm", &f_dflt, 0, 1, &fg, err, errlen)))
            goto fail;
        set->sg_fused = (int)fg;
        /* fused_max_k: the fused GEMM's grid points above this K are not
         * timed (a set whose fused kernels all run at small K: the fused
         * grid is only read there) */
        const double fk_dflt = 0;
        if ((rc = get_int(
                 sg, "fused_max_k", &fk_dflt, 0, 1 << 16, &set->sg_fused_max_k, err, errlen)))
            goto fail;
        /* max_gflop: grid points whose 2MNK exceeds it are not timed (the
         * cube's far corner costs more than the rest together); calibration
         * fills them from the largest measured point below them */
        const double g_dflt = 0;
        if ((rc = comet_util_doc_number(
                 sg, "max_gflop", &g_dflt, 0, 1e9, &set->sg_max_gflop, err, errlen)))
            goto fail;
        if (set->sg_max < set->sg_min) {
            rc = where_err(sg, err, errlen, "sgemm: max must be >= min", NULL);
            goto fail;
        }
        /* small_m: rows below the grid's min, timed across its N and K (the
         * plain sgemm only): a decode step's GEMMs run at M = the batch's
         * tokens, one per sequence, where packing the K x N operand costs
         * as much as at M = min and the flop-count law cannot see it */
        const comet_util_doc *sm = comet_util_doc_get(sg, "small_m");
        if (sm) {
            if (sm->kind != COMET_DOC_SEQ || sm->n == 0 || sm->n > 4) {
                rc = where_err(
                    sm, err, errlen, "'small_m' must be a list of 1 to 4 integers", NULL);
                goto fail;
            }
            for (size_t i = 0; i < sm->n; i++) {
                const comet_util_doc *c = sm->child[i];
                uint64_t u;
                if (c->kind != COMET_DOC_SCALAR || comet_util_parse_u64(c->value, &u) || u < 1
                    || (long)u >= set->sg_min || (i > 0 && (long)u <= set->sg_small_m[i - 1])) {
                    rc = where_err(c, err, errlen,
                        "small_m values must be increasing integers >= 1 and below min", NULL);
                    goto fail;
                }
                set->sg_small_m[set->sg_n_small_m++] = (long)u;
            }
        }
        /* small_m_cold: 1 times the small rows again with their K x N operand
         * cycled through twice the LLC (variant blas_cold): a decode step
         * reads each weight once, from DRAM, where the grid reads it hot */
        long smc;
        if ((rc = get_int(sg, "small_m_cold", &f_dflt, 0, 1, &smc, err, errlen)))
            goto fail;
        if (smc && set->sg_n_small_m == 0) {
            rc = where_err(sg, err, errlen, "'small_m_cold' needs 'small_m'", NULL);
            goto fail;
        }
        set->sg_small_m_cold = (int)smc;
        const comet_util_doc *t = comet_util_doc_get(sg, "threads");
        if (t) {
            if ((rc = get_threads(t, set->sg_threads, &set->sg_nthreads, err, errlen)))
                goto fail;
        } else {
            memcpy(set->sg_threads, set->threads, sizeof set->threads);
            set->sg_nthreads = set->nthreads;
        }
        /* fused_threads: the fused GEMM's grid at these thread counts only */
        const comet_util_doc *ft = comet_util_doc_get(sg, "fused_threads");
        if (ft) {
            if ((rc = get_threads(ft, set->sg_fused_threads, &set->sg_fused_nthreads, err, errlen)))
                goto fail;
        } else {
            memcpy(set->sg_fused_threads, set->sg_threads, sizeof set->sg_threads);
            set->sg_fused_nthreads = set->sg_nthreads;
        }
        set->have_sgemm = 1;
    }
    /* decode_attention: fused attention of one query a head (a decode
     * step's) with K and V cycled through twice the LLC (variant fused_cold,
     * one thread): the KV cache is read once a step, from DRAM */
    const comet_util_doc *da = comet_util_doc_get(doc, "decode_attention");
    if (da && (da->kind != COMET_DOC_SEQ || da->n == 0 || da->n > 4)) {
        rc = where_err(da, err, errlen, "'decode_attention' must be a list of 1 to 4 shapes", NULL);
        goto fail;
    }
    for (size_t k = 0; da && k < da->n; k++) {
        bench_shape *d = &set->decode[set->ndecode++];
        if ((rc = parse_shape(da->child[k], 1, d, err, errlen)))
            goto fail;
        if (d->Lq != 1) {
            rc = where_err(da->child[k], err, errlen, "a decode_attention shape has Lq: 1", NULL);
            goto fail;
        }
        d->cold = 1;
    }
    if (set->nops == 0 && !set->have_sgemm) {
        rc = where_err(doc, err, errlen, "the shape set has neither 'ops' nor 'sgemm'", NULL);
        goto fail;
    }
    comet_util_doc_free(doc);
    return 0;
fail:
    comet_util_doc_free(doc);
    bench_shapeset_free(set);
    return rc ? rc : -EINVAL;
}

int comet_bench_shapeset_check(
    const char *path, size_t *nops, size_t *nsweeps, char *err, size_t errlen)
{
    bench_shapeset set;
    int rc = bench_shapeset_load(path, bench_kop_names, &set, err, errlen);
    if (rc)
        return rc;
    if (nops)
        *nops = set.nops;
    if (nsweeps)
        *nsweeps = set.nsweeps;
    bench_shapeset_free(&set);
    return 0;
}
