/* Transformer descriptions (configs/workloads/NAME.yaml with `hidden`):
 * the numbers that size every kernel of a layer. */
#include "comet_system.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A preset name resolves to configs/workloads/NAME.yaml; anything with a
 * '/' or an extension is a path (comet_util_config_path: one rule). */
static int workload_path(const char *name, char *path, size_t len)
{
    return comet_util_config_path("workloads", name, path, len);
}

static int need_int(const comet_util_doc *d, const char *key, const double *dflt, double lo,
    double hi, int *out, char *err, size_t errlen)
{
    double v;
    char w[256];
    int rc = comet_util_doc_number(d, key, dflt, lo, hi, &v, err, errlen);
    if (rc)
        return rc;
    if (v != floor(v))
        return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' must be a whole number",
            comet_util_doc_where(
                comet_util_doc_get(d, key) ? comet_util_doc_get(d, key) : d, w, sizeof w),
            key);
    *out = (int)v;
    return 0;
}

static int load_llm(const comet_util_doc *d, comet_system_llm *m, char *err, size_t errlen)
{
    static const char *const keys[] = { "schema", "name", "source", "hidden", "heads", "head_dim",
        "kv_heads", "ffn", "activation", "layers", "seq", "vocab", "global_batch", "microbatch",
        "dtype", "dropout", NULL };
    static const char *const dtn[COMET_MODEL_NDTYPE]
        = { "fp32", "tf32", "fp16", "bf16", "fp8", "int8" };
    static const double dtb[COMET_MODEL_NDTYPE] = { 4, 4, 2, 2, 1, 1 };
    const char *s;
    char w[256];
    int rc;
    memset(m, 0, sizeof *m);
    if (d->kind != COMET_DOC_MAP)
        return comet_util_seterr(
            err, errlen, -EINVAL, "%s: a workload is a map", comet_util_doc_where(d, w, sizeof w));
    if ((rc = comet_util_doc_check_keys(d, keys, err, errlen)))
        return rc;
    if ((rc = comet_util_doc_string(d, "schema", "comet.llm.v1", &s, err, errlen)))
        return rc;
    if (strcmp(s, "comet.llm.v1"))
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: schema '%s' is not one this comet reads (comet.llm.v1)",
            comet_util_doc_where(comet_util_doc_get(d, "schema"), w, sizeof w), s);
    if ((rc = comet_util_doc_string(d, "name", NULL, &s, err, errlen)))
        return rc;
    snprintf(m->name, sizeof m->name, "%s", s);
    if ((rc = comet_util_doc_string(d, "source", "", &s, err, errlen)))
        return rc;
    snprintf(m->source, sizeof m->source, "%s", s);
    const double one = 1, zero = 0;
    if ((rc = need_int(d, "hidden", NULL, 1, 1 << 20, &m->hidden, err, errlen))
        || (rc = need_int(d, "heads", NULL, 1, 1 << 16, &m->heads, err, errlen)))
        return rc;
    const double hd = m->hidden % m->heads ? 0 : (double)(m->hidden / m->heads);
    if (hd == 0 && !comet_util_doc_get(d, "head_dim"))
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: 'head_dim' is needed: hidden (%d) is not a multiple of heads (%d)",
            comet_util_doc_where(comet_util_doc_get(d, "heads"), w, sizeof w), m->hidden, m->heads);
    if ((rc = need_int(d, "head_dim", hd > 0 ? &hd : NULL, 1, 1 << 16, &m->head_dim, err, errlen)))
        return rc;
    const double kvd = m->heads, ffd = 4.0 * m->hidden;
    if ((rc = need_int(d, "kv_heads", &kvd, 1, 1 << 16, &m->kv_heads, err, errlen))
        || (rc = need_int(d, "ffn", &ffd, 1, 1 << 22, &m->ffn, err, errlen))
        || (rc = need_int(d, "layers", NULL, 1, 1 << 16, &m->layers, err, errlen))
        || (rc = need_int(d, "seq", NULL, 1, 1 << 24, &m->seq, err, errlen))
        || (rc = need_int(d, "vocab", &zero, 0, 1 << 24, &m->vocab, err, errlen))
        || (rc = need_int(d, "global_batch", &one, 1, 1 << 24, &m->global_batch, err, errlen))
        || (rc = need_int(d, "microbatch", &zero, 0, 1 << 24, &m->microbatch, err, errlen)))
        return rc;
    if (m->heads % m->kv_heads)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: 'kv_heads' (%d) must divide 'heads' (%d)",
            comet_util_doc_where(comet_util_doc_get(d, "kv_heads"), w, sizeof w), m->kv_heads,
            m->heads);
    if (m->microbatch > m->global_batch)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: 'microbatch' (%d) exceeds 'global_batch' (%d)",
            comet_util_doc_where(comet_util_doc_get(d, "microbatch"), w, sizeof w), m->microbatch,
            m->global_batch);
    if ((rc = comet_util_doc_string(d, "activation", "gelu", &s, err, errlen)))
        return rc;
    if (!strcmp(s, "swiglu"))
        m->gated = 1;
    else if (strcmp(s, "gelu"))
        return comet_util_seterr(err, errlen, -EINVAL, "%s: 'activation' must be gelu or swiglu",
            comet_util_doc_where(comet_util_doc_get(d, "activation"), w, sizeof w));
    /* Megatron-LM's default hidden and attention dropout (megatron/arguments.py:
     * --hidden-dropout, --attention-dropout 0.1), the runs the GPT presets cite */
    const double drop_default = 0.1;
    if ((rc = comet_util_doc_number(
             d, "dropout", &drop_default, 0, 0.999, &m->dropout, err, errlen)))
        return rc;
    if ((rc = comet_util_doc_string(d, "dtype", "bf16", &s, err, errlen)))
        return rc;
    m->dtype = COMET_MODEL_NDTYPE;
    for (int i = 0; i < COMET_MODEL_NDTYPE; i++)
        if (!strcmp(s, dtn[i])) {
            m->dtype = (comet_model_dtype)i;
            m->bytes_per_elem = dtb[i];
        }
    if (m->dtype == COMET_MODEL_NDTYPE)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: 'dtype' must be fp32, tf32, fp16, bf16, fp8 or int8",
            comet_util_doc_where(comet_util_doc_get(d, "dtype"), w, sizeof w));
    return 0;
}

int comet_system_llm_parse(
    const char *file, const char *text, size_t len, comet_system_llm *m, char *err, size_t errlen)
{
    comet_util_doc *d = NULL;
    int rc = comet_util_doc_parse(file, text, len, &d, err, errlen);
    if (rc)
        return rc;
    rc = load_llm(d, m, err, errlen);
    comet_util_doc_free(d);
    return rc;
}

int comet_system_llm_load(const char *name, comet_system_llm *m, char *err, size_t errlen)
{
    char path[4096];
    comet_util_doc *d = NULL;
    if (workload_path(name, path, sizeof path))
        return comet_util_seterr(err, errlen, -ENOENT,
            "%s: no such workload file or preset (presets: gpt3-175b, llama2-70b, ...)", name);
    int rc = comet_util_doc_load(path, &d, err, errlen);
    if (rc)
        return rc;
    rc = load_llm(d, m, err, errlen);
    comet_util_doc_free(d);
    return rc;
}

int comet_system_llm_is(const char *name)
{
    char path[4096], err[256];
    comet_util_doc *d = NULL;
    if (workload_path(name, path, sizeof path) || comet_util_doc_load(path, &d, err, sizeof err))
        return 0;
    int is = d->kind == COMET_DOC_MAP && comet_util_doc_get(d, "hidden") != NULL;
    comet_util_doc_free(d);
    return is;
}

double comet_system_llm_params(const comet_system_llm *m)
{
    const double h = m->hidden, ad = (double)m->heads * m->head_dim,
                 gd = (double)m->kv_heads * m->head_dim, f = m->ffn;
    /* per layer: Q, K, V, output projection, FFN (gate+up or up, down), two
     * LayerNorms (scale and shift); the embedding is tied to the LM head */
    const double layer = h * (ad + 2 * gd) + ad * h + h * f * (m->gated ? 2 : 1) + f * h + 4 * h;
    return layer * m->layers + (double)m->vocab * h;
}
