/* Workload files (configs/workloads/NAME.yaml) and mapping files (as
 * written by comet_model_mapping_json / explore --json), YAML or JSON, with
 * errors naming file:line and field. */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NUM(map, key, dflt, lo, hi, dst)                                                           \
    do {                                                                                           \
        double v_;                                                                                 \
        const double d_ = (dflt);                                                                  \
        rc = comet_util_doc_number(map, key, isnan(d_) ? NULL : &d_, lo, hi, &v_, err, errlen);    \
        if (rc)                                                                                    \
            goto out;                                                                              \
        dst = v_;                                                                                  \
    } while (0)

static int need_int(const comet_util_doc *m, const char *key, double *dst, char *err, size_t errlen)
{
    char w[256];
    int rc = comet_util_doc_number(m, key, NULL, 1, 1099511627776.0, dst, err, errlen);
    if (!rc && *dst != floor(*dst))
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' must be an integer",
            comet_util_doc_where(comet_util_doc_get(m, key), w, sizeof w), key);
    return rc;
}

/* configs/workloads/NAME.yaml unless name is a path (comet_util_config_path) */
static void workload_path(const char *name, char *path, size_t len)
{
    if (comet_util_config_path("workloads", name, path, len) != 0)
        snprintf(path, len, "%s", name);
}

int comet_model_workload_load(const char *name, comet_model_problem *pb, char *err, size_t errlen)
{
    static const char *const top[] = { "name", "description", "op", "shape", NULL };
    static const char *const gk[] = { "M", "N", "K", NULL };
    static const char *const ak[] = { "heads", "batch", "lq", "lk", "d", "causal", NULL };
    char path[4096], w[256];
    comet_util_doc *d = NULL;
    const comet_util_doc *sh;
    const char *op;
    int rc;
    if (!name || !pb)
        return comet_util_seterr(err, errlen, -EINVAL, "workload: no file given");
    workload_path(name, path, sizeof path);
    if ((rc = comet_util_doc_load(path, &d, err, errlen)))
        return rc;
    memset(pb, 0, sizeof *pb);
    if (d->kind != COMET_DOC_MAP) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: a workload is a map with op and shape",
            comet_util_doc_where(d, w, sizeof w));
        goto out;
    }
    if ((rc = comet_util_doc_check_keys(d, top, err, errlen))
        || (rc = comet_util_doc_string(d, "op", NULL, &op, err, errlen)))
        goto out;
    if (comet_model_op_parse(op, &pb->op)) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: unknown op '%s' (%s)",
            comet_util_doc_where(comet_util_doc_get(d, "op"), w, sizeof w), op,
            comet_model_op_list());
        goto out;
    }
    sh = comet_util_doc_get(d, "shape");
    if (!sh || sh->kind != COMET_DOC_MAP) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: 'shape' must be a map",
            comet_util_doc_where(sh ? sh : d, w, sizeof w));
        goto out;
    }
    if (comet_model_op_desc(pb->op)->shape == COMET_MODEL_SHAPE_ATTENTION) {
        double batch = 1;
        int z = 0;
        if ((rc = comet_util_doc_check_keys(sh, ak, err, errlen))
            || (rc = need_int(sh, "heads", &pb->heads, err, errlen))
            || (rc = need_int(sh, "lq", &pb->lq, err, errlen))
            || (rc = need_int(sh, "lk", &pb->lk, err, errlen))
            || (rc = need_int(sh, "d", &pb->d, err, errlen))
            || (rc = comet_util_doc_bool(sh, "causal", &z, &pb->causal, err, errlen)))
            goto out;
        if (comet_util_doc_get(sh, "batch") && (rc = need_int(sh, "batch", &batch, err, errlen)))
            goto out;
        pb->heads *= batch; /* the model's heads are batch x heads */
    } else if ((rc = comet_util_doc_check_keys(sh, gk, err, errlen))
        || (rc = need_int(sh, "M", &pb->M, err, errlen))
        || (rc = need_int(sh, "N", &pb->N, err, errlen))
        || (rc = need_int(sh, "K", &pb->K, err, errlen)))
        goto out;
out:
    comet_util_doc_free(d);
    return rc;
}

static int split_map(const comet_util_doc *m, const char *key, const char *const *dims, int *dst,
    int n, char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *s = comet_util_doc_get(m, key);
    int rc = 0;
    for (int i = 0; i < n; i++)
        dst[i] = 1;
    if (!s)
        return 0;
    if (s->kind != COMET_DOC_MAP)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' must be a map",
            comet_util_doc_where(s, w, sizeof w), key);
    const char *keys[6] = { NULL };
    for (int i = 0; i < n; i++)
        keys[i] = dims[i];
    if ((rc = comet_util_doc_check_keys(s, keys, err, errlen)))
        return rc;
    for (int i = 0; i < n; i++) {
        double v;
        const double one = 1;
        if ((rc = comet_util_doc_number(s, dims[i], &one, 1, 1 << 20, &v, err, errlen)))
            return rc;
        if (v != floor(v))
            return comet_util_seterr(err, errlen, -EINVAL, "%s: %s.%s must be an integer",
                comet_util_doc_where(comet_util_doc_get(s, dims[i]), w, sizeof w), key, dims[i]);
        dst[i] = (int)v;
    }
    return 0;
}

int comet_model_mapping_load(const char *path, comet_model_mapping *mp, char *err, size_t errlen)
{
    static const char *const top[] = { "fused", "binding", "cluster_split", "core_split", "tile_m",
        "tile_k", "one_pass", "pass_reads", "pass_writes", "streaming", "blas_gemm",
        "core_temporal", "intermediate", "op", "hardware", NULL };
    static const char *const cdims[] = { "H", "M", "N", "K" };
    static const char *const kdims[] = { "M", "N" };
    char w[256];
    comet_util_doc *d = NULL;
    const comet_util_doc *m;
    const char *bind;
    int rc, cs[4], ks[2], one = 1, zero = 0;
    if (!path || !mp)
        return comet_util_seterr(err, errlen, -EINVAL, "--mapping: no file given");
    if ((rc = comet_util_doc_load(path, &d, err, errlen)))
        return rc;
    memset(mp, 0, sizeof *mp);
    m = d;
    /* explore --json / predict --json output: take the mapping inside */
    if (m->kind == COMET_DOC_MAP && !comet_util_doc_get(m, "fused")) {
        const comet_util_doc *x = comet_util_doc_get(m, "mapping");
        if (!x && comet_util_doc_get(m, "best_fused"))
            x = comet_util_doc_get(comet_util_doc_get(m, "best_fused"), "mapping");
        if (x)
            m = x;
    }
    if (m->kind != COMET_DOC_MAP) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "%s: a mapping is a map", comet_util_doc_where(m, w, sizeof w));
        goto out;
    }
    if ((rc = comet_util_doc_check_keys(m, top, err, errlen))
        || (rc = comet_util_doc_bool(m, "fused", NULL, &mp->fused, err, errlen))
        || (rc = comet_util_doc_string(m, "binding", "pipelined", &bind, err, errlen)))
        goto out;
    if (strcmp(bind, "pipelined") && strcmp(bind, "sequential")) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: 'binding' must be pipelined or sequential",
            comet_util_doc_where(comet_util_doc_get(m, "binding"), w, sizeof w));
        goto out;
    }
    mp->pipelined = !strcmp(bind, "pipelined");
    if ((rc = split_map(m, "cluster_split", cdims, cs, 4, err, errlen))
        || (rc = split_map(m, "core_split", kdims, ks, 2, err, errlen)))
        goto out;
    mp->cs_h = cs[0], mp->cs_m = cs[1], mp->cs_n = cs[2], mp->cs_k = cs[3];
    mp->ks_m = ks[0], mp->ks_n = ks[1];
    if (comet_util_doc_get(m, "core_temporal")) {
        static const char *const tdims[] = { "M", "N", "K" };
        int ct[3];
        if ((rc = split_map(m, "core_temporal", tdims, ct, 3, err, errlen)))
            goto out;
        mp->ct_m = ct[0], mp->ct_n = ct[1], mp->ct_k = ct[2];
    }
    if (comet_util_doc_get(m, "intermediate")) {
        const char *where;
        if ((rc = comet_util_doc_string(m, "intermediate", "dram", &where, err, errlen)))
            goto out;
        if (strcmp(where, "dram") && strcmp(where, "global_buffer")) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'intermediate' must be dram or global_buffer",
                comet_util_doc_where(comet_util_doc_get(m, "intermediate"), w, sizeof w));
            goto out;
        }
        mp->inter_gb = !strcmp(where, "global_buffer");
    }
    NUM(m, "tile_m", NAN, 1, 1099511627776.0, mp->tile_m);
    NUM(m, "tile_k", NAN, 1, 1099511627776.0, mp->tile_k);
    if ((rc = comet_util_doc_bool(m, "one_pass", &one, &mp->one_pass, err, errlen)))
        goto out;
    if ((rc = comet_util_doc_bool(m, "blas_gemm", &zero, &mp->blas_gemm, err, errlen)))
        goto out;
    NUM(m, "pass_reads", 0, 0, 64, mp->pass_reads);
    NUM(m, "pass_writes", 0, 0, 64, mp->pass_writes);
    mp->streaming = -1;
    if (comet_util_doc_get(m, "streaming")
        && (rc = comet_util_doc_bool(m, "streaming", &zero, &mp->streaming, err, errlen)))
        goto out;
out:
    comet_util_doc_free(d);
    return rc;
}

int comet_model_mapping_load_for(const char *path, const char *op, const char *hwname,
    comet_model_mapping *mp, char *err, size_t errlen)
{
    int rc = comet_model_mapping_load(path, mp, err, errlen);
    if (rc)
        return rc;
    /* the op and hardware the mapping was searched for, where the file says
     * (explore/predict --json: top-level "op" and "hw"; a mapping object:
     * "op" and "hardware") */
    comet_util_doc *d = NULL;
    if ((rc = comet_util_doc_load(path, &d, err, errlen)))
        return rc;
    const comet_util_doc *m = comet_util_doc_get(d, "mapping");
    if (!m && comet_util_doc_get(d, "best_fused"))
        m = comet_util_doc_get(comet_util_doc_get(d, "best_fused"), "mapping");
    const char *fop = NULL, *fhw = NULL;
    const comet_util_doc *x;
    if ((x = comet_util_doc_get(d, "op")) && x->kind == COMET_DOC_SCALAR)
        fop = x->value;
    else if (m && (x = comet_util_doc_get(m, "op")) && x->kind == COMET_DOC_SCALAR)
        fop = x->value;
    if ((x = comet_util_doc_get(d, "hw")) && x->kind == COMET_DOC_SCALAR)
        fhw = x->value;
    else if ((x = comet_util_doc_get(d, "hardware")) && x->kind == COMET_DOC_SCALAR)
        fhw = x->value;
    else if (m && (x = comet_util_doc_get(m, "hardware")) && x->kind == COMET_DOC_SCALAR)
        fhw = x->value;
    if (op && fop && strcmp(op, fop))
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: a mapping for %s, not %s (search one with explore --op %s)", path, fop, op, op);
    else if (hwname && fhw && strcmp(hwname, fhw))
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: a mapping for hardware '%s', not '%s' (search one with explore --hw)", path, fhw,
            hwname);
    comet_util_doc_free(d);
    return rc;
}

int comet_model_mapping_check(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, char *err, size_t errlen)
{
    comet_model_opdims od;
    comet_model_op_dims(pb, &od);
    if (!od.desc)
        return comet_util_seterr(err, errlen, -EINVAL, "--mapping: unknown op");
    const int att = od.desc->flash;
    const int ch = mp->cs_h > 1 ? mp->cs_h : 1;
    if (od.groups <= 1 && ch > 1)
        return comet_util_seterr(err, errlen, -EINVAL,
            "--mapping: cluster_split.H = %d splits heads, which %s has none of", ch,
            comet_model_op_name(pb->op));
    if (att && mp->cs_k > 1)
        return comet_util_seterr(err, errlen, -EINVAL,
            "--mapping: cluster_split.K = %d: attention's head dimension is not split "
            "(split H, M or N = the keys)",
            mp->cs_k);
    const long used = (long)ch * mp->cs_m * mp->cs_n * mp->cs_k;
    if (used > hw->clusters)
        return comet_util_seterr(err, errlen, -EINVAL,
            "--mapping: its cluster splits use %ld clusters, %s has %d", used, hw->name,
            hw->clusters);
    if ((long)mp->ks_m * mp->ks_n > hw->cores)
        return comet_util_seterr(err, errlen, -EINVAL,
            "--mapping: its core splits use %d cores, %s has %d per cluster", mp->ks_m * mp->ks_n,
            hw->name, hw->cores);
    if (ch > od.groups)
        return comet_util_seterr(err, errlen, -EINVAL,
            "--mapping: cluster_split.H = %d, more than the %g heads", ch, od.groups);
    return 0;
}
