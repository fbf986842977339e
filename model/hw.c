/* Hardware descriptions (comet_model_hw.h): the YAML/JSON loader with
 * file:line errors and units converted once, the JSON writer in the same
 * schema, presets, scaled CPU systems. The rates read from a description
 * are rates.c's, its calibrated links links.c's. */
#include "comet_model.h"
#include "links_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const vop_names[COMET_MODEL_NVOP]
    = { "add", "mul", "div", "exp", "max", "sqrt" };
static const char *const topo_names[] = { "mesh2d", "torus2d", "ring", "switch", "full" };

void comet_model_hw_free(comet_model_hw *hw)
{
    if (!hw)
        return;
    free(hw->grid.values);
    hw->grid.values = NULL;
    free(hw->fused_grid.values);
    hw->fused_grid.values = NULL;
    if (hw->calibration)
        json_decref(hw->calibration);
    hw->calibration = NULL;
}

int comet_model_preset_path(const char *name, char *path, size_t len)
{
    return comet_util_config_path("hw", name, path, len);
}

static json_t *doc_to_json(const comet_util_doc *d)
{
    if (d->kind == COMET_DOC_MAP) {
        json_t *o = json_object();
        for (size_t i = 0; i < d->n; i++)
            json_object_set_new(o, d->child[i]->key, doc_to_json(d->child[i]));
        return o;
    }
    if (d->kind == COMET_DOC_SEQ) {
        json_t *a = json_array();
        for (size_t i = 0; i < d->n; i++)
            json_array_append_new(a, doc_to_json(d->child[i]));
        return a;
    }
    double v;
    if (!d->quoted && comet_util_parse_double(d->value, &v) == 0)
        /* an integer only where it is one that fits (a huge "integer" is a real) */
        return strchr(d->value, '.') || strchr(d->value, 'e') || strchr(d->value, 'E')
                || !(fabs(v) < 9.2e18)
            ? json_real(v)
            : json_integer((json_int_t)v);
    if (!d->quoted && (!strcmp(d->value, "true") || !strcmp(d->value, "false")))
        return json_boolean(!strcmp(d->value, "true"));
    if (!d->quoted && (!strcmp(d->value, "null") || !strcmp(d->value, "~")))
        return json_null();
    return json_string(d->value);
}

#define NUM(map, key, dflt, lo, hi, dst)                                                           \
    do {                                                                                           \
        double v_;                                                                                 \
        const double d_ = (dflt);                                                                  \
        rc = comet_util_doc_number(map, key, isnan(d_) ? NULL : &d_, lo, hi, &v_, err, errlen);    \
        if (rc)                                                                                    \
            goto fail;                                                                             \
        dst = v_;                                                                                  \
    } while (0)

/* A count: as NUM, and a whole number ("cores: {count: 4.5}" is an error,
 * not 4). */
#define INT(map, key, dflt, lo, hi, dst)                                                           \
    do {                                                                                           \
        NUM(map, key, dflt, lo, hi, dst);                                                          \
        if ((dst) != floor(dst)) {                                                                 \
            char w_[256];                                                                          \
            rc = comet_util_seterr(err, errlen, -EINVAL,                                           \
                "%s: '%s' must be a whole number (got %g)",                                        \
                comet_util_doc_where(comet_util_doc_get(map, key), w_, sizeof w_), key,            \
                (double)(dst));                                                                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* How a hardware file states a dimensioned field. Internal units are the
 * v1 file's: bytes, bytes per cycle, cycles, pJ per access, pJ per byte. A
 * value with a unit ("300 GB/s", "40 MiB", "5 ns", "0.8 pJ/B") is converted
 * at the description's clock; a bare number is in the internal unit, which
 * schema v2 refuses (its files state units, so a clock what-if never
 * rescales memory or links). */
typedef struct qctx {
    double hz; /* the description's clock */
    int bare_ok; /* schema v1: bare numbers in internal units */
} qctx;

typedef enum qkind { Q_BYTES, Q_BW, Q_TIME, Q_PJ, Q_PJ_PER_BYTE } qkind;

static int doc_quantity(const comet_util_doc *map, const char *key, const qctx *q, qkind k,
    double access_bytes, const double *dflt, double lo, double hi, double *out, char *err,
    size_t errlen)
{
    static const char *const example[]
        = { "40 MiB", "300 GB/s", "5 ns", "0.8 pJ (per access)", "0.5 pJ/B" };
    const comet_util_doc *v = comet_util_doc_get(map, key);
    char w[256];
    double x, si;
    if (!v)
        return comet_util_doc_number(map, key, dflt, lo, hi, out, err, errlen);
    if (v->kind != COMET_DOC_SCALAR)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' must be a value",
            comet_util_doc_where(v, w, sizeof w), key);
    if (comet_util_parse_double(v->value, &x) == 0) {
        if (!q->bare_ok)
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: '%s' needs a unit in schema comet.hw.v2 (e.g. %s)",
                comet_util_doc_where(v, w, sizeof w), key, example[k]);
    } else {
        int rc = -EINVAL;
        switch (k) {
        case Q_BYTES:
            rc = comet_util_parse_quantity(v->value, COMET_UNIT_BYTES, 0, &si);
            x = si;
            break;
        case Q_BW:
            rc = comet_util_parse_quantity(v->value, COMET_UNIT_BYTES_PER_S, 0, &si);
            x = si / q->hz;
            break;
        case Q_TIME:
            rc = comet_util_parse_quantity(v->value, COMET_UNIT_SECONDS, 0, &si);
            x = si * q->hz;
            break;
        case Q_PJ_PER_BYTE:
            rc = comet_util_parse_quantity(v->value, COMET_UNIT_J_PER_BYTE, 0, &si);
            x = si * 1e12;
            break;
        case Q_PJ:
            /* per access, or per byte times the level's access size */
            if ((rc = comet_util_parse_quantity(v->value, COMET_UNIT_JOULES, 0, &si)) == 0)
                x = si * 1e12;
            else if ((rc = comet_util_parse_quantity(v->value, COMET_UNIT_J_PER_BYTE, 0, &si)) == 0)
                x = si * 1e12 * access_bytes;
            break;
        }
        if (rc)
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: '%s': '%s' is not a quantity like %s", comet_util_doc_where(v, w, sizeof w),
                key, v->value, example[k]);
    }
    if (!(x >= lo && x <= hi))
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: '%s' = %s is outside [%g, %g] in its internal unit",
            comet_util_doc_where(v, w, sizeof w), key, v->value, lo, hi);
    *out = x;
    return 0;
}

#define NUMQ(map, key, kind, ab, dflt, lo, hi, dst)                                                \
    do {                                                                                           \
        double v_;                                                                                 \
        const double d_ = (dflt);                                                                  \
        rc = doc_quantity(                                                                         \
            map, key, q, kind, ab, isnan(d_) ? NULL : &d_, lo, hi, &v_, err, errlen);              \
        if (rc)                                                                                    \
            goto fail;                                                                             \
        dst = v_;                                                                                  \
    } while (0)

static int need_map(const comet_util_doc *parent, const char *key, const comet_util_doc **out,
    char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *m = comet_util_doc_get(parent, key);
    if (!m)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: missing section '%s'",
            comet_util_doc_where(parent, w, sizeof w), key);
    if (m->kind != COMET_DOC_MAP)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' must be a map",
            comet_util_doc_where(m, w, sizeof w), key);
    *out = m;
    return 0;
}

/* A list entry [x, y] of two numbers into v: 1, or 0 when it is not one. */
static int doc_pair(const comet_util_doc *p, double v[2])
{
    int ok = p->kind == COMET_DOC_SEQ && p->n == 2;
    for (int k = 0; ok && k < 2; k++)
        ok = p->child[k]->kind == COMET_DOC_SCALAR
            && !comet_util_parse_double(p->child[k]->value, &v[k]);
    return ok;
}

/* An efficiency table: a list of [size, efficiency] pairs, sizes >= 0 and
 * distinct, efficiencies in (0, 1]; kept sorted by size. */
static int load_steps(
    const comet_util_doc *m, const char *key, comet_model_steps *st, char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *a = comet_util_doc_get(m, key);
    st->n = 0;
    if (!a)
        return 0;
    if (a->kind != COMET_DOC_SEQ || a->n < 1 || a->n > 8)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: '%s' must be a list of 1..8 [size, efficiency] pairs",
            comet_util_doc_where(a, w, sizeof w), key);
    for (size_t i = 0; i < a->n; i++) {
        const comet_util_doc *p = a->child[i];
        double v[2];
        if (!doc_pair(p, v) || !(v[0] >= 0 && v[0] < 1e18) || !(v[1] > 0 && v[1] <= 1))
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: '%s' entries must be [size >= 0, efficiency in (0, 1]]",
                comet_util_doc_where(p, w, sizeof w), key);
        int at = st->n;
        while (at > 0 && st->at[at - 1] > v[0]) {
            st->at[at] = st->at[at - 1];
            st->eff[at] = st->eff[at - 1];
            at--;
        }
        if (at > 0 && st->at[at - 1] == v[0])
            return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' repeats the size %g",
                comet_util_doc_where(p, w, sizeof w), key, v[0]);
        st->at[at] = v[0];
        st->eff[at] = v[1];
        st->n++;
    }
    return 0;
}

/* gemm.tiles: the candidate output tiles [rows, cols] of a GPU's GEMM kernels
 * (comet_model_gemm_wave_eff). */
static int load_tiles(const comet_util_doc *m, comet_model_hw *hw, char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *a = comet_util_doc_get(m, "tiles");
    hw->gemm_ntiles = 0;
    if (!a)
        return 0;
    if (a->kind != COMET_DOC_SEQ || a->n < 1 || a->n > COMET_MODEL_TILES_MAX)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: 'tiles' must be a list of 1..%d [rows, cols] pairs",
            comet_util_doc_where(a, w, sizeof w), COMET_MODEL_TILES_MAX);
    for (size_t i = 0; i < a->n; i++) {
        const comet_util_doc *p = a->child[i];
        double v[2];
        int ok = doc_pair(p, v);
        for (int k = 0; ok && k < 2; k++)
            ok = v[k] >= 1 && v[k] <= 4096 && v[k] == floor(v[k]);
        if (!ok)
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'tiles' entries must be [rows, cols], integers in 1..4096",
                comet_util_doc_where(p, w, sizeof w));
        hw->gemm_tile_m[i] = v[0];
        hw->gemm_tile_n[i] = v[1];
        hw->gemm_ntiles++;
    }
    return 0;
}

static json_t *steps_json(const comet_model_steps *st)
{
    json_t *a = json_array();
    for (int i = 0; i < st->n; i++)
        json_array_append_new(a, json_pack("[f,f]", st->at[i], st->eff[i]));
    return a;
}

/* A network level's keys besides its topology and dims (a composition
 * takes them too, one value or one per level). */
#define NET_LEVEL_KEYS                                                                             \
    "link_bw", "hop_latency", "startup", "broadcast", "reduction", "link_pj_per_byte", "efficiency"

static int load_net(
    const comet_util_doc *m, comet_model_net *n, const qctx *q, char *err, size_t errlen)
{
    static const char *const keys[] = { "topology", "dims", NET_LEVEL_KEYS, "collective_efficiency",
        "channel_bits", "flit_cycles", NULL };
    char w[256];
    const char *t;
    int rc = comet_util_doc_check_keys(m, keys, err, errlen);
    if (rc)
        return rc;
    if ((rc = comet_util_doc_string(m, "topology", NULL, &t, err, errlen)))
        return rc;
    n->topo = (comet_model_topo)-1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(t, topo_names[i]))
            n->topo = (comet_model_topo)i;
    if ((int)n->topo < 0)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: unknown topology '%s' (mesh2d, torus2d, ring, switch, full)",
            comet_util_doc_where(comet_util_doc_get(m, "topology"), w, sizeof w), t);
    const comet_util_doc *dims = comet_util_doc_get(m, "dims");
    if (!dims || dims->kind != COMET_DOC_SEQ || dims->n < 1 || dims->n > 2)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: 'dims' must be a list [X] or [X, Y]",
            comet_util_doc_where(dims ? dims : m, w, sizeof w));
    for (size_t i = 0; i < 2; i++) {
        double v = 1;
        if (i < dims->n) {
            const comet_util_doc *c = dims->child[i];
            /* up to 2^24 along one dimension (a wafer's 850,000 cores in a
             * line), 2^30 in all */
            if (c->kind != COMET_DOC_SCALAR || comet_util_parse_double(c->value, &v) || v < 1
                || v > (1 << 24) || v != floor(v) || (i == 1 && v * n->dims[0] > (1 << 30)))
                return comet_util_seterr(err, errlen, -EINVAL,
                    "%s: 'dims' entries must be integers in [1, 16777216], %s",
                    comet_util_doc_where(c, w, sizeof w), "their product at most 2^30");
        }
        n->dims[i] = (int)v;
    }
    NUMQ(m, "link_bw", Q_BW, 1, NAN, 1e-9, 1e12, n->link_bw);
    NUMQ(m, "hop_latency", Q_TIME, 1, 0, 0, 1e9, n->hop_latency);
    NUMQ(m, "startup", Q_TIME, 1, 0, 0, 1e12, n->startup);
    NUM(m, "channel_bits", 0, 0, 1e9, n->channel_bits);
    NUMQ(m, "flit_cycles", Q_TIME, 1, 0, 0, 1e9, n->flit_cycles);
    NUMQ(m, "link_pj_per_byte", Q_PJ_PER_BYTE, 1, 0, 0, 1e6, n->link_pj_per_byte);
    NUM(m, "efficiency", 1.0, 1e-4, 1.0, n->efficiency);
    {
        int z = 0;
        if ((rc = comet_util_doc_bool(m, "broadcast", &z, &n->broadcast, err, errlen))
            || (rc = comet_util_doc_bool(m, "reduction", &z, &n->reduction, err, errlen)))
            return rc;
    }
    /* a collective's own share of the link where measured apart (Calculon's
     * per-operation scalars: its A100 NVLink reduce-scatter and all-gather
     * move 1.5x a ring's bytes) */
    const comet_util_doc *ce = comet_util_doc_get(m, "collective_efficiency");
    if (ce) {
        static const char *const cn[] = { "allreduce", "allgather", "reduce_scatter", NULL };
        if (ce->kind != COMET_DOC_MAP || (rc = comet_util_doc_check_keys(ce, cn, err, errlen)))
            return rc ? rc
                      : comet_util_seterr(err, errlen, -EINVAL,
                          "%s: 'collective_efficiency' is a map {allreduce, allgather, "
                          "reduce_scatter: share of link_bw}",
                          comet_util_doc_where(ce, w, sizeof w));
        for (int i = 0; cn[i]; i++)
            NUM(ce, cn[i], 0, 1e-4, 1.0, n->coll_eff[i]);
    }
fail:
    return rc;
}

/* Named compositions of network levels (DFModel's topology names, innermost
 * level first): 2-D / 3-D torus (rings), dragonfly (fully connected groups,
 * fully connected between groups), DGX-1 style (NVLink ring inside a node,
 * switch between), DGX-2 style (switch inside, switch between), ZionEX
 * (ring inside, fully connected between). */
static const struct {
    const char *name;
    int n;
    comet_model_topo topo[3];
} compositions[] = { { "torus2d", 2, { COMET_MODEL_RING, COMET_MODEL_RING } },
    { "torus3d", 3, { COMET_MODEL_RING, COMET_MODEL_RING, COMET_MODEL_RING } },
    { "dragonfly", 2, { COMET_MODEL_FULL, COMET_MODEL_FULL } },
    { "dgx1", 2, { COMET_MODEL_RING, COMET_MODEL_SWITCH } },
    { "dgx2", 2, { COMET_MODEL_SWITCH, COMET_MODEL_SWITCH } },
    { "zionex", 2, { COMET_MODEL_RING, COMET_MODEL_FULL } } };

/* A composition written as one map: `composition`, `dims` (one size per
 * level) and the level keys, each either one value for every level or a
 * list of one per level. Expands into hw's cluster levels. */
static int load_composition(
    const comet_util_doc *m, comet_model_hw *hw, const qctx *q, char *err, size_t errlen)
{
    static const char *const keys[] = { "composition", "dims", NET_LEVEL_KEYS, NULL };
    char w[256];
    const char *name;
    int rc = comet_util_doc_check_keys(m, keys, err, errlen);
    if (rc || (rc = comet_util_doc_string(m, "composition", NULL, &name, err, errlen)))
        return rc;
    int c = -1;
    for (size_t i = 0; i < sizeof compositions / sizeof compositions[0]; i++)
        if (!strcmp(name, compositions[i].name))
            c = (int)i;
    if (c < 0)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: unknown composition '%s' (torus2d, torus3d, dragonfly, dgx1, dgx2, zionex)",
            comet_util_doc_where(comet_util_doc_get(m, "composition"), w, sizeof w), name);
    const int n = compositions[c].n;
    const comet_util_doc *dims = comet_util_doc_get(m, "dims");
    if (!dims || dims->kind != COMET_DOC_SEQ || (int)dims->n != n)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' needs 'dims' of %d sizes",
            comet_util_doc_where(dims ? dims : m, w, sizeof w), name, n);
    for (size_t k = 0; k < m->n; k++) {
        const comet_util_doc *v = m->child[k];
        if (v->kind == COMET_DOC_SEQ && strcmp(v->key, "dims") && (int)v->n != n)
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: '%s' lists %zu values for %d levels", comet_util_doc_where(v, w, sizeof w),
                v->key, v->n, n);
    }
    for (int i = 0; i < n; i++) {
        /* the level as a map of its own (shallow copies keyed as load_net reads them) */
        comet_util_doc kids[12], *kp[12], dim, *dimp = &dim, topo, lvl = *m;
        size_t nk = 0;
        topo = *m;
        topo.kind = COMET_DOC_SCALAR;
        topo.key = (char *)"topology";
        topo.value = (char *)topo_names[compositions[c].topo[i]];
        topo.n = 0;
        topo.child = NULL;
        kp[nk++] = &topo;
        dim = *dims->child[i];
        kids[nk] = *dims;
        kids[nk].n = 1;
        kids[nk].child = &dimp;
        kp[nk] = &kids[nk];
        nk++;
        for (size_t k = 0; k < m->n && nk < 12; k++) {
            const comet_util_doc *v = m->child[k];
            if (!strcmp(v->key, "composition") || !strcmp(v->key, "dims"))
                continue;
            kids[nk] = v->kind == COMET_DOC_SEQ ? *v->child[i] : *v;
            kids[nk].key = v->key;
            kp[nk] = &kids[nk];
            nk++;
        }
        lvl.n = nk;
        lvl.child = kp;
        if ((rc = load_net(&lvl, i ? &hw->outer_net[i - 1] : &hw->cluster_net, q, err, errlen)))
            return rc;
        snprintf(i ? hw->outer_net[i - 1].name : hw->cluster_net.name, sizeof hw->cluster_net.name,
            "%s%d", name, i);
    }
    hw->n_outer = n - 1;
    return 0;
}

static int load_mem(
    const comet_util_doc *m, comet_model_mem *x, int local, const qctx *q, char *err, size_t errlen)
{
    static const char *const keys[] = { "capacity", "bw", "read_pj", "write_pj", "access_bytes",
        "core_bw", "write_bw", "core_write_bw", "shared_by", "efficiency_by_mb", NULL };
    /* the local buffer may be partitioned (COMET: input, weight, output) */
    static const char *const lkeys[]
        = { "capacity", "bw", "read_pj", "write_pj", "access_bytes", "input_bytes", "weight_bytes",
              "output_bytes", "input_bw", "weight_bw", "output_bw", "l1_bytes", NULL };
    int rc = comet_util_doc_check_keys(m, local ? lkeys : keys, err, errlen);
    if (rc)
        return rc;
    NUMQ(m, "capacity", Q_BYTES, 1, 1e18, 1, 1e18, x->capacity);
    NUMQ(m, "bw", Q_BW, 1, NAN, 1e-9, 1e12, x->bw);
    NUMQ(m, "access_bytes", Q_BYTES, 1, 1, 1, 1e9, x->access_bytes);
    NUMQ(m, "read_pj", Q_PJ, x->access_bytes, 0, 0, 1e9, x->read_pj);
    NUMQ(m, "write_pj", Q_PJ, x->access_bytes, 0, 0, 1e9, x->write_pj);
    if (!local) {
        NUMQ(m, "core_bw", Q_BW, 1, 0, 0, 1e12, x->core_bw);
        NUMQ(m, "write_bw", Q_BW, 1, 0, 0, 1e12, x->write_bw);
        NUMQ(m, "core_write_bw", Q_BW, 1, 0, 0, 1e12, x->core_write_bw);
        if ((rc = load_steps(m, "efficiency_by_mb", &x->eff_by_mb, err, errlen)))
            goto fail;
    }
    if (!local && comet_util_doc_get(m, "shared_by")) {
        /* what one instance serves (schema v2's sharing on a v1 level) */
        static const char *const sh[] = { "default", "core", "cluster", "chip", "node", "system" };
        const char *s;
        char w[256];
        if ((rc = comet_util_doc_string(m, "shared_by", NULL, &s, err, errlen)))
            goto fail;
        int k = -1;
        for (int i = 0; i < 6; i++)
            if (!strcmp(s, sh[i]))
                k = i;
        if (k < 0) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'shared_by' must be core, cluster, chip, node or system",
                comet_util_doc_where(comet_util_doc_get(m, "shared_by"), w, sizeof w));
            goto fail;
        }
        x->shared_by = (comet_model_share)k;
    }
fail:
    return rc;
}

static int load_axis(const comet_util_doc *g, const char *key, double *dst, int *n, int max,
    char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *a = comet_util_doc_get(g, key);
    if (!a || a->kind != COMET_DOC_SEQ || a->n < 1 || (int)a->n > max)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: grid '%s' must be a list of 1..%d numbers",
            comet_util_doc_where(a ? a : g, w, sizeof w), key, max);
    for (size_t i = 0; i < a->n; i++) {
        double v;
        if (a->child[i]->kind != COMET_DOC_SCALAR || comet_util_parse_double(a->child[i]->value, &v)
            || !(v > 0) || (i > 0 && v <= dst[i - 1]))
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: grid '%s' must be positive and increasing",
                comet_util_doc_where(a->child[i], w, sizeof w), key);
        dst[i] = v;
    }
    *n = (int)a->n;
    return 0;
}

/* gemm.cold_read: {rows: M, N: [...], K: [...], cycles_per_byte: [N x K]} */
static int load_cold(const comet_util_doc *sec, comet_model_hw *hw, char *err, size_t errlen)
{
    static const char *const ck[] = { "rows", "N", "K", "cycles_per_byte", NULL };
    const comet_util_doc *c = comet_util_doc_get(sec, "cold_read");
    char w[256];
    int rc;
    hw->cold_nn = hw->cold_nk = 0;
    if (!c)
        return 0;
    if (c->kind != COMET_DOC_MAP)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: 'cold_read' must be a map",
            comet_util_doc_where(c, w, sizeof w));
    const comet_util_doc *r = comet_util_doc_get(c, "rows");
    if ((rc = comet_util_doc_check_keys(c, ck, err, errlen))
        || (rc = load_axis(c, "N", hw->cold_N, &hw->cold_nn, COMET_MODEL_GRID_MAX, err, errlen))
        || (rc = load_axis(c, "K", hw->cold_K, &hw->cold_nk, COMET_MODEL_GRID_MAX, err, errlen)))
        goto bad;
    if (!r || r->kind != COMET_DOC_SCALAR || comet_util_parse_double(r->value, &hw->cold_rows)
        || !(hw->cold_rows >= 1 && hw->cold_rows <= 65536)) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: cold_read 'rows' must be 1..65536",
            comet_util_doc_where(r ? r : c, w, sizeof w));
        goto bad;
    }
    const comet_util_doc *v = comet_util_doc_get(c, "cycles_per_byte");
    const size_t total = (size_t)hw->cold_nn * hw->cold_nk;
    if (!v || v->kind != COMET_DOC_SEQ || v->n != total) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: cold_read 'cycles_per_byte' must hold N x K = %zu numbers",
            comet_util_doc_where(v ? v : c, w, sizeof w), total);
        goto bad;
    }
    for (size_t i = 0; i < total; i++)
        if (v->child[i]->kind != COMET_DOC_SCALAR
            || comet_util_parse_double(v->child[i]->value, &hw->cold_cpb[i])
            || !(hw->cold_cpb[i] >= 0 && hw->cold_cpb[i] < 1e6)) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: cold_read cycles_per_byte must be numbers in [0, 1e6)",
                comet_util_doc_where(v->child[i], w, sizeof w));
            goto bad;
        }
    return 0;
bad:
    hw->cold_nn = hw->cold_nk = 0;
    return rc;
}

/* vector.row_pass_widths: {softmax: {widths: [...], cycles: [...]},
 * layernorm: {...}}, each list increasing, as many cycles as widths */
static int load_row_tab(const comet_util_doc *t, comet_model_hw *hw, char *err, size_t errlen)
{
    static const char *const keys[] = { "softmax", "layernorm", NULL };
    static const char *const sk[] = { "widths", "cycles", NULL };
    char w[256];
    int rc;
    if (t->kind != COMET_DOC_MAP)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: 'row_pass_widths' must be a map",
            comet_util_doc_where(t, w, sizeof w));
    if ((rc = comet_util_doc_check_keys(t, keys, err, errlen)))
        return rc;
    for (int o = 0; o < 2; o++) {
        const comet_util_doc *e = comet_util_doc_get(t, keys[o]);
        int nc = 0;
        if (!e)
            continue;
        if (e->kind != COMET_DOC_MAP)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: '%s' must be a map",
                comet_util_doc_where(e, w, sizeof w), keys[o]);
        if ((rc = comet_util_doc_check_keys(e, sk, err, errlen))
            || (rc = load_axis(e, "widths", hw->row_tab_w[o], &hw->row_tab_n[o],
                    COMET_MODEL_ROW_TAB, err, errlen))
            || (rc = load_axis(
                    e, "cycles", hw->row_tab_cycles[o], &nc, COMET_MODEL_ROW_TAB, err, errlen)))
            return rc;
        if (nc != hw->row_tab_n[o])
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: '%s' needs as many cycles as widths (%d and %d)",
                comet_util_doc_where(e, w, sizeof w), keys[o], nc, hw->row_tab_n[o]);
    }
    return 0;
}

static int load_grid(
    const comet_util_doc *g, comet_model_grid *gr, double vmax, char *err, size_t errlen)
{
    static const char *const keys[]
        = { "threads", "M", "N", "K", "values", "emax", "f_half", NULL };
    char w[256];
    int rc = comet_util_doc_check_keys(g, keys, err, errlen);
    if (rc)
        return rc;
    if ((rc = load_axis(g, "threads", gr->threads, &gr->nt, 4, err, errlen))
        || (rc = load_axis(g, "M", gr->M, &gr->nm, COMET_MODEL_GRID_MAX, err, errlen))
        || (rc = load_axis(g, "N", gr->N, &gr->nn, COMET_MODEL_GRID_MAX, err, errlen))
        || (rc = load_axis(g, "K", gr->K, &gr->nk, COMET_MODEL_GRID_MAX, err, errlen)))
        return rc;
    size_t total = (size_t)gr->nt * gr->nm * gr->nn * gr->nk;
    const comet_util_doc *v = comet_util_doc_get(g, "values");
    if (!v || v->kind != COMET_DOC_SEQ || v->n != total)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: grid 'values' must hold threads*M*N*K = %zu numbers",
            comet_util_doc_where(v ? v : g, w, sizeof w), total);
    gr->values = malloc(total * sizeof(double));
    if (!gr->values)
        return comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
    for (size_t i = 0; i < total; i++) {
        double x;
        if (v->child[i]->kind != COMET_DOC_SCALAR || comet_util_parse_double(v->child[i]->value, &x)
            || !(x > 0) || x > vmax)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: grid efficiency must be in (0, %g]",
                comet_util_doc_where(v->child[i], w, sizeof w), vmax);
        gr->values[i] = x;
    }
    NUM(g, "emax", 0.9, 1e-6, vmax, gr->emax);
    NUM(g, "f_half", 1e6, 0, 1e18, gr->f_half);
fail:
    return rc;
}

static double grid_max_eff(const comet_model_grid *g)
{
    double e = g->values ? g->emax : 0;
    const size_t total = g->values ? (size_t)g->nt * g->nm * g->nn * g->nk : 0;
    for (size_t i = 0; i < total; i++)
        e = fmax(e, g->values[i]);
    return e;
}

static void grid_scale(comet_model_grid *g, double f)
{
    const size_t total = g->values ? (size_t)g->nt * g->nm * g->nn * g->nk : 0;
    for (size_t i = 0; i < total; i++)
        g->values[i] *= f;
    g->emax *= f;
}

/* A measured GEMM that ran above the stated peak (a profile counted at a
 * clock below the one its cores sustained, or at AVX2 lanes while the fused
 * kernels ran AVX-512) proves the peak is at least that rate: the peak is
 * raised to the fastest measured efficiency and every efficiency scaled down
 * by as much, so each GEMM's time is unchanged and the compute bound is one
 * no measured rate beats (before, the model raised such latencies to a bound
 * its own GEMM term undercut). */
static void peak_from_measured(comet_model_hw *hw)
{
    if (hw->systolic)
        return;
    double e = fmax(grid_max_eff(&hw->grid), grid_max_eff(&hw->fused_grid));
    if (!(e > 1))
        return;
    hw->peak_flops *= e;
    hw->gemm_eff /= e;
    for (int i = 0; i < hw->gemm_eff_by_gflop.n; i++)
        hw->gemm_eff_by_gflop.eff[i] /= e;
    grid_scale(&hw->grid, 1 / e);
    grid_scale(&hw->fused_grid, 1 / e);
}

int comet_model_net_nodes(const comet_model_net *net)
{
    return net->dims[0] * net->dims[1];
}

double comet_model_net_bw(const comet_model_net *net)
{
    if (net->channel_bits > 0 && net->flit_cycles > 0)
        return fmin(net->link_bw, net->channel_bits / 8 / net->flit_cycles);
    return net->link_bw;
}

/* collectives: {p2p: {alpha_s, beta_s_per_byte}, fits: [{collective, algorithm,
 * alpha_s, beta_s_per_byte, gamma_s_per_byte}]} */
static int load_links(const comet_util_doc *m, comet_model_links *l, char *err, size_t errlen)
{
    static const char *const keys[] = { "p2p", "fits", NULL };
    static const char *const pk[] = { "alpha_s", "beta_s_per_byte", NULL };
    static const char *const fk[] = { "collective", "algorithm", "alpha_s", "beta_s_per_byte",
        "gamma_s_per_byte", "from_bytes", NULL };
    char w[256];
    int rc;
    const comet_util_doc *sub;
    if (m->kind != COMET_DOC_MAP)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: 'collectives' must be a map",
            comet_util_doc_where(m, w, sizeof w));
    if ((rc = comet_util_doc_check_keys(m, keys, err, errlen)))
        return rc;
    if ((sub = comet_util_doc_get(m, "p2p")) != NULL) {
        if (sub->kind != COMET_DOC_MAP)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: 'p2p' must be a map",
                comet_util_doc_where(sub, w, sizeof w));
        if ((rc = comet_util_doc_check_keys(sub, pk, err, errlen)))
            return rc;
        NUM(sub, "alpha_s", NAN, 0, 10, l->p2p_alpha_s);
        NUM(sub, "beta_s_per_byte", NAN, 1e-15, 1, l->p2p_beta_s);
    }
    if ((sub = comet_util_doc_get(m, "fits")) != NULL) {
        if (sub->kind != COMET_DOC_SEQ || sub->n > COMET_MODEL_MAX_FITS)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: 'fits' must be a list of <= %d",
                comet_util_doc_where(sub, w, sizeof w), COMET_MODEL_MAX_FITS);
        for (size_t i = 0; i < sub->n; i++) {
            const comet_util_doc *f = sub->child[i];
            comet_model_coll_fit *x = &l->fits[i];
            const char *cs, *as;
            double row[3];
            if (f->kind != COMET_DOC_MAP)
                return comet_util_seterr(err, errlen, -EINVAL, "%s: a fit must be a map",
                    comet_util_doc_where(f, w, sizeof w));
            if ((rc = comet_util_doc_check_keys(f, fk, err, errlen))
                || (rc = comet_util_doc_string(f, "collective", NULL, &cs, err, errlen))
                || (rc = comet_util_doc_string(f, "algorithm", NULL, &as, err, errlen)))
                return rc;
            if (comet_model_coll_parse(cs, &x->coll) != 0)
                return comet_util_seterr(err, errlen, -EINVAL,
                    "%s: unknown collective '%s' (allreduce, allgather, reduce_scatter, reduce, "
                    "bcast)",
                    comet_util_doc_where(comet_util_doc_get(f, "collective"), w, sizeof w), cs);
            if (strlen(as) >= sizeof x->alg
                || comet_model_coll_row(x->coll, as, 1024, 4, row, NULL) < 0)
                return comet_util_seterr(err, errlen, -EINVAL, "%s: algorithm '%s' unknown for %s",
                    comet_util_doc_where(comet_util_doc_get(f, "algorithm"), w, sizeof w), as, cs);
            snprintf(x->alg, sizeof x->alg, "%s", as);
            NUM(f, "alpha_s", NAN, 0, 10, x->alpha_s);
            NUM(f, "beta_s_per_byte", 0, 0, 1, x->beta_s);
            NUM(f, "gamma_s_per_byte", 0, 0, 1, x->gamma_s);
            NUM(f, "from_bytes", 0, 0, 1e15, x->from_bytes);
            l->nfits = (int)i + 1;
        }
    }
fail:
    return rc;
}

/* A quantity of a unit kind that does not depend on the clock (FLOP/s, USD,
 * W, J/B): a bare number is its base unit in schema v1 and refused in v2. */
static int doc_si(const comet_util_doc *map, const char *key, comet_util_unit u, int bare_ok,
    double *out, char *err, size_t errlen)
{
    const comet_util_doc *v = comet_util_doc_get(map, key);
    char w[256];
    *out = 0;
    if (!v)
        return 0;
    if (v->kind != COMET_DOC_SCALAR || comet_util_parse_quantity(v->value, u, bare_ok, out)
        || !(*out >= 0) || !isfinite(*out))
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: '%s' must be a non-negative quantity in %s%s",
            comet_util_doc_where(v, w, sizeof w), key, comet_util_unit_base(u),
            bare_ok ? "" : " with its unit (schema comet.hw.v2)");
    return 0;
}

/* What a system description adds to a chip (schema v2; docs/hardware.md,
 * "Systems"): compute per data type, cost and power (DFModel's models). */
static int load_system_extras(const comet_util_doc *d, comet_model_hw *hw, char *err, size_t errlen)
{
    static const char *const dt[COMET_MODEL_NDTYPE]
        = { "fp32", "tf32", "fp16", "bf16", "fp8", "int8" };
    static const char *const ck[] = { "fp32", "tf32", "fp16", "bf16", "fp8", "int8", NULL };
    static const char *const costk[]
        = { "chip", "link_per_gbps", "switch_port_per_gbps", "memory_per_gbps", NULL };
    static const char *const powk[]
        = { "chip", "link_per_gbps", "switch_port_per_gbps", "memory_per_gbps", NULL };
    const int bare = hw->schema_version == 1;
    const comet_util_doc *sec;
    char w[256];
    int rc = 0;
    if ((sec = comet_util_doc_get(d, "compute")) != NULL) {
        if (sec->kind != COMET_DOC_MAP)
            return comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'compute' must map data types to FLOP/s (bf16: 312 TFLOP/s)",
                comet_util_doc_where(sec, w, sizeof w));
        if ((rc = comet_util_doc_check_keys(sec, ck, err, errlen)))
            return rc;
        for (int i = 0; i < COMET_MODEL_NDTYPE; i++)
            if ((rc = doc_si(
                     sec, dt[i], COMET_UNIT_FLOPS, bare, &hw->peak_flops_dtype[i], err, errlen)))
                return rc;
    }
    if ((sec = comet_util_doc_get(d, "cost")) != NULL) {
        if (sec->kind != COMET_DOC_MAP)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: 'cost' must be a map",
                comet_util_doc_where(sec, w, sizeof w));
        if ((rc = comet_util_doc_check_keys(sec, costk, err, errlen))
            || (rc = doc_si(sec, "chip", COMET_UNIT_USD, 1, &hw->cost_chip_usd, err, errlen))
            || (rc = doc_si(sec, "link_per_gbps", COMET_UNIT_USD, 1, &hw->cost_link_usd_per_gbps,
                    err, errlen))
            || (rc = doc_si(sec, "switch_port_per_gbps", COMET_UNIT_USD, 1,
                    &hw->cost_switch_port_usd_per_gbps, err, errlen))
            || (rc = doc_si(sec, "memory_per_gbps", COMET_UNIT_USD, 1, &hw->cost_mem_usd_per_gbps,
                    err, errlen)))
            return rc;
    }
    if ((sec = comet_util_doc_get(d, "power")) != NULL) {
        if (sec->kind != COMET_DOC_MAP)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: 'power' must be a map",
                comet_util_doc_where(sec, w, sizeof w));
        /* links, ports and memory in J/GB (DFModel): W = J/GB x provisioned GB/s */
        if ((rc = comet_util_doc_check_keys(sec, powk, err, errlen))
            || (rc = doc_si(sec, "chip", COMET_UNIT_WATTS, bare, &hw->power_chip_w, err, errlen))
            || (rc = doc_si(sec, "link_per_gbps", COMET_UNIT_J_PER_BYTE, bare,
                    &hw->power_link_j_per_gb, err, errlen))
            || (rc = doc_si(sec, "switch_port_per_gbps", COMET_UNIT_J_PER_BYTE, bare,
                    &hw->power_switch_port_j_per_gb, err, errlen))
            || (rc = doc_si(sec, "memory_per_gbps", COMET_UNIT_J_PER_BYTE, bare,
                    &hw->power_mem_j_per_gb, err, errlen)))
            return rc;
        /* J/B -> J/GB */
        hw->power_link_j_per_gb *= 1e9;
        hw->power_switch_port_j_per_gb *= 1e9;
        hw->power_mem_j_per_gb *= 1e9;
    }
    return rc;
}

static int load_doc(const comet_util_doc *d, comet_model_hw *hw, char *err, size_t errlen)
{
    static const char *const top[]
        = { "name", "kind", "clock_ghz", "bytes_per_elem", "clusters", "cores", "memory", "gemm",
              "vector", "calibration", "schema", "io_bytes_per_elem", "collectives", "overlap",
              "execution", "clusters_per_chip", "clock", "compute", "cost", "power", NULL };
    const comet_util_doc *sec, *sub;
    const char *s;
    char w[256];
    int rc;
    memset(hw, 0, sizeof *hw);
    if (d->kind != COMET_DOC_MAP)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: a hardware description is a map",
            comet_util_doc_where(d, w, sizeof w));
    if ((rc = comet_util_doc_check_keys(d, top, err, errlen)))
        goto fail;
    if ((rc = comet_util_doc_string(d, "name", NULL, &s, err, errlen)))
        goto fail;
    snprintf(hw->name, sizeof hw->name, "%s", s);
    if ((rc = comet_util_doc_string(d, "kind", "accelerator", &s, err, errlen)))
        goto fail;
    if (strcmp(s, "accelerator") && strcmp(s, "cpu")) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: 'kind' must be accelerator or cpu",
            comet_util_doc_where(comet_util_doc_get(d, "kind"), w, sizeof w));
        goto fail;
    }
    snprintf(hw->kind, sizeof hw->kind, "%s", s);
    /* the schema: v1 (bare numbers in cycles and bytes per cycle, units
     * allowed) or v2 (every dimensioned field states its unit) */
    if ((rc = comet_util_doc_string(d, "schema", "comet.hw.v1", &s, err, errlen)))
        goto fail;
    if (!strcmp(s, "comet.hw.v2"))
        hw->schema_version = 2;
    else if (!strcmp(s, "comet.hw.v1"))
        hw->schema_version = 1;
    else {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: schema '%s' is not one this comet reads (comet.hw.v1, comet.hw.v2)",
            comet_util_doc_where(comet_util_doc_get(d, "schema"), w, sizeof w), s);
        goto fail;
    }
    /* the clock: clock_ghz (a number) or clock (a frequency, "1.4 GHz") */
    if (comet_util_doc_get(d, "clock") && comet_util_doc_get(d, "clock_ghz")) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: give 'clock' or 'clock_ghz', not both",
            comet_util_doc_where(comet_util_doc_get(d, "clock"), w, sizeof w));
        goto fail;
    }
    if ((sub = comet_util_doc_get(d, "clock")) != NULL) {
        double hz;
        if (sub->kind != COMET_DOC_SCALAR
            || comet_util_parse_quantity(sub->value, COMET_UNIT_HZ, 0, &hz) || !(hz >= 1e6)
            || !(hz <= 1e11)) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'clock' must be a frequency between 1 MHz and 100 GHz, e.g. 1.4 GHz",
                comet_util_doc_where(sub, w, sizeof w));
            goto fail;
        }
        hw->clock_ghz = hz / 1e9;
    } else if (hw->schema_version == 2) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: schema comet.hw.v2 states its clock as 'clock: <frequency>' (e.g. 1.4 GHz)",
            comet_util_doc_where(d, w, sizeof w));
        goto fail;
    } else {
        NUM(d, "clock_ghz", NAN, 1e-3, 100, hw->clock_ghz);
    }
    const qctx qc = { hw->clock_ghz * 1e9, hw->schema_version == 1 }, *q = &qc;
    NUM(d, "bytes_per_elem", 2, 0.125, 16, hw->bytes_per_elem);
    NUM(d, "io_bytes_per_elem", hw->bytes_per_elem, 0.125, 16, hw->io_bytes_per_elem);
    {
        double cpc;
        INT(d, "clusters_per_chip", 0, 0, 1 << 20, cpc);
        hw->clusters_per_chip = (int)cpc;
    }
    /* engines that run concurrently: a property of the hardware, stated */
    if ((sub = comet_util_doc_get(d, "overlap")) != NULL) {
        static const char *const eng[] = { "gemm", "vector", "memory", "network" };
        char w[256];
        if (sub->kind != COMET_DOC_SEQ) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'overlap' must be a list of engines (gemm, vector, memory, network; none)",
                comet_util_doc_where(sub, w, sizeof w));
            goto fail;
        }
        hw->overlap |= COMET_MODEL_ENGINE_STATED;
        for (size_t i = 0; i < sub->n; i++) {
            int k = -1;
            if (sub->child[i]->kind == COMET_DOC_SCALAR && !strcmp(sub->child[i]->value, "none"))
                continue; /* stated: nothing overlaps */
            for (int e = 0; e < 4; e++)
                if (sub->child[i]->kind == COMET_DOC_SCALAR
                    && !strcmp(sub->child[i]->value, eng[e]))
                    k = e;
            if (k < 0) {
                rc = comet_util_seterr(err, errlen, -EINVAL,
                    "%s: unknown engine in 'overlap' (gemm, vector, memory, network, none)",
                    comet_util_doc_where(sub->child[i], w, sizeof w));
                goto fail;
            }
            hw->overlap |= 1 << k;
        }
    }
    /* execution styles the chip runs (system model): a GPU launches kernel
     * by kernel; a dataflow chip also fuses partitions */
    if ((sub = comet_util_doc_get(d, "execution")) != NULL) {
        static const char *const ex[] = { "kernel", "dataflow" };
        char w[256];
        for (size_t i = 0; sub->kind == COMET_DOC_SEQ && i < sub->n; i++)
            for (int e = 0; e < 2; e++)
                if (sub->child[i]->kind == COMET_DOC_SCALAR && !strcmp(sub->child[i]->value, ex[e]))
                    hw->execution |= 1 << e;
        if (sub->kind != COMET_DOC_SEQ || !hw->execution
            || __builtin_popcount((unsigned)hw->execution) != (int)sub->n) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: 'execution' must list kernel and/or dataflow once each",
                comet_util_doc_where(sub, w, sizeof w));
            goto fail;
        }
    }

    static const char *const grp[] = { "count", "network", NULL };
    double cnt;
    if ((rc = need_map(d, "clusters", &sec, err, errlen))
        || (rc = comet_util_doc_check_keys(sec, grp, err, errlen)))
        goto fail;
    INT(sec, "count", NAN, 1, 1 << 20, cnt);
    hw->clusters = (int)cnt;
    sub = comet_util_doc_get(sec, "network");
    if (sub && sub->kind == COMET_DOC_SEQ) {
        /* a network of several levels (innermost first): clusters = product */
        if (sub->n < 1 || sub->n > COMET_MODEL_NET_LEVELS) {
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s: 'network' list needs 1..%d levels",
                comet_util_doc_where(sub, w, sizeof w), COMET_MODEL_NET_LEVELS);
            goto fail;
        }
        for (size_t i = 0; i < sub->n; i++) {
            if (sub->child[i]->kind != COMET_DOC_MAP) {
                rc = comet_util_seterr(err, errlen, -EINVAL, "%s: network levels must be maps",
                    comet_util_doc_where(sub->child[i], w, sizeof w));
                goto fail;
            }
            if ((rc = load_net(
                     sub->child[i], i ? &hw->outer_net[i - 1] : &hw->cluster_net, q, err, errlen)))
                goto fail;
        }
        hw->n_outer = (int)sub->n - 1;
    } else if (sub && sub->kind == COMET_DOC_MAP && comet_util_doc_get(sub, "composition")) {
        if ((rc = load_composition(sub, hw, q, err, errlen)))
            goto fail;
    } else if ((rc = need_map(sec, "network", &sub, err, errlen))
        || (rc = load_net(sub, &hw->cluster_net, q, err, errlen)))
        goto fail;
    {
        double prod = comet_model_net_nodes(&hw->cluster_net);
        for (int i = 0; i < hw->n_outer; i++)
            prod *= comet_model_net_nodes(&hw->outer_net[i]);
        if (prod != hw->clusters) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: network nodes (%.0f over %d level(s)) do not match count %d",
                comet_util_doc_where(sub, w, sizeof w), prod, hw->n_outer + 1, hw->clusters);
            goto fail;
        }
    }
    if ((rc = need_map(d, "cores", &sec, err, errlen))
        || (rc = comet_util_doc_check_keys(sec, grp, err, errlen)))
        goto fail;
    INT(sec, "count", NAN, 1, 1 << 20, cnt);
    hw->cores = (int)cnt;
    if ((rc = need_map(sec, "network", &sub, err, errlen))
        || (rc = load_net(sub, &hw->core_net, q, err, errlen)))
        goto fail;

    static const char *const mems[] = { "dram", "global_buffer", "local_buffer", "second", NULL };
    if ((rc = need_map(d, "memory", &sec, err, errlen))
        || (rc = comet_util_doc_check_keys(sec, mems, err, errlen)))
        goto fail;
    if ((rc = need_map(sec, "dram", &sub, err, errlen))
        || (rc = load_mem(sub, &hw->dram, 0, q, err, errlen))
        || (rc = need_map(sec, "global_buffer", &sub, err, errlen))
        || (rc = load_mem(sub, &hw->gb, 0, q, err, errlen))
        || (rc = need_map(sec, "local_buffer", &sub, err, errlen))
        || (rc = load_mem(sub, &hw->lb, 1, q, err, errlen)))
        goto fail;
    {
        /* an optional second off-chip tier (DDR beside HBM) */
        const comet_util_doc *m2 = comet_util_doc_get(sec, "second");
        if (m2 && (rc = need_map(sec, "second", &m2, err, errlen)))
            goto fail;
        if (m2 && (rc = load_mem(m2, &hw->mem2, 0, q, err, errlen)))
            goto fail;
    }
    NUMQ(sub, "input_bytes", Q_BYTES, 1, 0, 0, 1e15, hw->lb_input);
    NUMQ(sub, "weight_bytes", Q_BYTES, 1, 0, 0, 1e15, hw->lb_weight);
    NUMQ(sub, "output_bytes", Q_BYTES, 1, 0, 0, 1e15, hw->lb_output);
    NUMQ(sub, "input_bw", Q_BW, 1, 0, 0, 1e12, hw->lb_input_bw);
    NUMQ(sub, "weight_bw", Q_BW, 1, 0, 0, 1e12, hw->lb_weight_bw);
    NUMQ(sub, "output_bw", Q_BW, 1, 0, 0, 1e12, hw->lb_output_bw);
    NUMQ(sub, "l1_bytes", Q_BYTES, 1, 0, 0, 1e15, hw->l1_bytes);
    if (hw->l1_bytes > hw->lb.capacity) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: local_buffer 'l1_bytes' exceeds its capacity",
            comet_util_doc_where(comet_util_doc_get(sub, "l1_bytes"), w, sizeof w));
        goto fail;
    }
    if (hw->lb_input + hw->lb_weight + hw->lb_output > hw->lb.capacity * (1 + 1e-9)) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: local_buffer input_bytes + weight_bytes + output_bytes exceed its capacity",
            comet_util_doc_where(sub, w, sizeof w));
        goto fail;
    }

    static const char *const gk[] = { "engine", "rows", "cols", "arrays", "peak_flops_per_cycle",
        "efficiency", "efficiency_by_gflop", "mac_pj", "grid", "fused_grid", "fused_micro_rows",
        "fused_micro_edge", "parallel_region_cycles", "mapping", "tiles", "cold_read",
        "cold_gemv_cycles_per_byte", NULL };
    if ((rc = need_map(d, "gemm", &sec, err, errlen))
        || (rc = comet_util_doc_check_keys(sec, gk, err, errlen))
        || (rc = comet_util_doc_string(sec, "engine", NULL, &s, err, errlen)))
        goto fail;
    if (!strcmp(s, "systolic")) {
        double r, c, a;
        hw->systolic = 1;
        INT(sec, "rows", NAN, 1, 4096, r);
        INT(sec, "cols", NAN, 1, 4096, c);
        INT(sec, "arrays", 1, 1, 1 << 16, a);
        hw->sa_rows = (int)r;
        hw->sa_cols = (int)c;
        hw->sa_arrays = (int)a;
        hw->peak_flops = 2.0 * r * c * a;
        const char *mp = NULL;
        if ((rc = comet_util_doc_string(sec, "mapping", "shared", &mp, err, errlen)))
            goto fail;
        if (strcmp(mp, "shared") && strcmp(mp, "spatial")) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: gemm 'mapping' must be shared or spatial",
                comet_util_doc_where(comet_util_doc_get(sec, "mapping"), w, sizeof w));
            goto fail;
        }
        hw->sa_spatial = !strcmp(mp, "spatial");
    } else if (!strcmp(s, "peak")) {
        if (comet_util_doc_get(sec, "mapping")) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s: gemm 'mapping' needs engine systolic (its rows and cols)",
                comet_util_doc_where(comet_util_doc_get(sec, "mapping"), w, sizeof w));
            goto fail;
        }
        NUM(sec, "peak_flops_per_cycle", NAN, 1e-3, 1e9, hw->peak_flops);
    } else {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s: gemm 'engine' must be systolic or peak",
            comet_util_doc_where(comet_util_doc_get(sec, "engine"), w, sizeof w));
        goto fail;
    }
    NUM(sec, "efficiency", 1.0, 1e-4, 1.0, hw->gemm_eff);
    if ((rc = load_steps(sec, "efficiency_by_gflop", &hw->gemm_eff_by_gflop, err, errlen)))
        goto fail;
    NUMQ(sec, "mac_pj", Q_PJ, 1, 0, 0, 1e6, hw->mac_pj);
    if ((rc = load_tiles(sec, hw, err, errlen)) || (rc = load_cold(sec, hw, err, errlen)))
        goto fail;
    NUM(sec, "cold_gemv_cycles_per_byte", 0, 0, 1e6, hw->cold_gemv_cpb);
    NUM(sec, "fused_micro_rows", 0, 0, 1024, hw->fused_micro_rows);
    NUM(sec, "fused_micro_edge", 0, 0, 1024, hw->fused_micro_edge);
    NUM(sec, "parallel_region_cycles", 0, 0, 1e9, hw->par_region_cycles);
    if (hw->fused_micro_edge > hw->fused_micro_rows) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s: gemm 'fused_micro_edge' exceeds 'fused_micro_rows'",
            comet_util_doc_where(comet_util_doc_get(sec, "fused_micro_edge"), w, sizeof w));
        goto fail;
    }
    if ((sub = comet_util_doc_get(sec, "grid")) != NULL) {
        if (sub->kind != COMET_DOC_MAP) {
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s: 'grid' must be a map",
                comet_util_doc_where(sub, w, sizeof w));
            goto fail;
        }
        if ((rc = load_grid(sub, &hw->grid, 1.5, err, errlen)))
            goto fail;
    }
    /* the fused kernels' own GEMM (AVX-512 micro-kernel) may exceed the
     * AVX2 peak the profile counts in: efficiencies up to 4 */
    if ((sub = comet_util_doc_get(sec, "fused_grid")) != NULL) {
        if (sub->kind != COMET_DOC_MAP) {
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s: 'fused_grid' must be a map",
                comet_util_doc_where(sub, w, sizeof w));
            goto fail;
        }
        if ((rc = load_grid(sub, &hw->fused_grid, 4.0, err, errlen)))
            goto fail;
    }
    peak_from_measured(hw);

    static const char *const vk[] = { "width", "cycles", "energy_pj", "row_cycles", "ln_row_cycles",
        "row_elem_cycles", "ln_row_elem_cycles", "dist_ln_row_cycles", "dist_ln_elem_cycles",
        "row_pass_widths", "store_hidden", NULL };
    double width;
    if ((rc = need_map(d, "vector", &sec, err, errlen))
        || (rc = comet_util_doc_check_keys(sec, vk, err, errlen)))
        goto fail;
    INT(sec, "width", NAN, 1, 65536, width);
    hw->simd_width = (int)width;
    NUM(sec, "row_cycles", 0, 0, 1e6, hw->row_cycles);
    NUM(sec, "ln_row_cycles", 0, 0, 1e6, hw->ln_row_cycles);
    NUM(sec, "row_elem_cycles", 0, 0, 1e6, hw->row_elem_cycles);
    NUM(sec, "ln_row_elem_cycles", 0, 0, 1e6, hw->ln_row_elem_cycles);
    NUM(sec, "dist_ln_row_cycles", 0, 0, 1e6, hw->dist_ln_row_cycles);
    NUM(sec, "dist_ln_elem_cycles", 0, 0, 1e6, hw->dist_ln_elem_cycles);
    NUM(sec, "store_hidden", 0, 0, 1, hw->store_hidden);
    if ((sub = comet_util_doc_get(sec, "row_pass_widths")) != NULL
        && (rc = load_row_tab(sub, hw, err, errlen)))
        goto fail;
    const comet_util_doc *cy = comet_util_doc_get(sec, "cycles"),
                         *en = comet_util_doc_get(sec, "energy_pj");
    for (int i = 0; i < COMET_MODEL_NVOP; i++) {
        hw->vop_cycles[i] = 1;
        hw->vop_pj[i] = 0;
        if (cy)
            NUM(cy, vop_names[i], 1, 1e-6, 1e6, hw->vop_cycles[i]);
        if (en)
            NUM(en, vop_names[i], 0, 0, 1e6, hw->vop_pj[i]);
    }
    if ((sub = comet_util_doc_get(d, "collectives")) != NULL
        && (rc = load_links(sub, &hw->links, err, errlen)))
        goto fail;
    if ((rc = load_system_extras(d, hw, err, errlen)))
        goto fail;
    if ((sub = comet_util_doc_get(d, "calibration")) != NULL)
        hw->calibration = doc_to_json(sub);
    if (!comet_util_doc_get(d, "collectives") && hw->calibration)
        comet_model__links_from_calibration(hw->calibration, &hw->links);
    /* energy is known when the description gives per-access or per-op
     * energies; a calibrated CPU profile gives none: unknown, never 0 */
    hw->energy_known
        = hw->mac_pj > 0 || hw->dram.read_pj > 0 || hw->gb.read_pj > 0 || hw->lb.read_pj > 0;
    return 0;
fail:
    comet_model_hw_free(hw);
    return rc;
}

int comet_model_hw_parse(
    const char *file, const char *text, size_t len, comet_model_hw *hw, char *err, size_t errlen)
{
    comet_util_doc *d = NULL;
    int rc = comet_util_doc_parse(file, text, len, &d, err, errlen);
    if (rc)
        return rc;
    rc = load_doc(d, hw, err, errlen);
    comet_util_doc_free(d);
    return rc;
}

int comet_model_hw_load(const char *name, comet_model_hw *hw, char *err, size_t errlen)
{
    char path[4096];
    comet_util_doc *d = NULL;
    if (comet_model_preset_path(name, path, sizeof path) != 0)
        return comet_util_seterr(err, errlen, -ENOENT,
            "%s: no such hardware file or preset (presets: edge, cloud, ...)", name);
    int rc = comet_util_doc_load(path, &d, err, errlen);
    if (rc)
        return rc;
    rc = load_doc(d, hw, err, errlen);
    comet_util_doc_free(d);
    return rc;
}

static json_t *net_json(const comet_model_net *n)
{
    json_t *o = json_pack("{s:s,s:[i,i],s:f,s:f,s:f,s:b,s:b,s:f}", "topology", topo_names[n->topo],
        "dims", n->dims[0], n->dims[1], "link_bw", n->link_bw, "hop_latency", n->hop_latency,
        "startup", n->startup, "broadcast", n->broadcast, "reduction", n->reduction,
        "link_pj_per_byte", n->link_pj_per_byte);
    if (o && n->efficiency > 0 && n->efficiency < 1)
        json_object_set_new(o, "efficiency", json_real(n->efficiency));
    if (o && n->channel_bits > 0)
        json_object_set_new(o, "channel_bits", json_real(n->channel_bits));
    if (o && n->flit_cycles > 0)
        json_object_set_new(o, "flit_cycles", json_real(n->flit_cycles));
    if (o && (n->coll_eff[0] > 0 || n->coll_eff[1] > 0 || n->coll_eff[2] > 0)) {
        static const char *const cn[] = { "allreduce", "allgather", "reduce_scatter" };
        json_t *ce = json_object();
        for (int i = 0; i < 3; i++)
            if (n->coll_eff[i] > 0)
                json_object_set_new(ce, cn[i], json_real(n->coll_eff[i]));
        json_object_set_new(o, "collective_efficiency", ce);
    }
    return o;
}

static json_t *mem_json(const comet_model_mem *m)
{
    json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:f}", "capacity", m->capacity, "bw", m->bw, "read_pj",
        m->read_pj, "write_pj", m->write_pj, "access_bytes", m->access_bytes);
    if (o && m->core_bw > 0)
        json_object_set_new(o, "core_bw", json_real(m->core_bw));
    if (o && m->write_bw > 0)
        json_object_set_new(o, "write_bw", json_real(m->write_bw));
    if (o && m->core_write_bw > 0)
        json_object_set_new(o, "core_write_bw", json_real(m->core_write_bw));
    if (o && m->eff_by_mb.n > 0)
        json_object_set_new(o, "efficiency_by_mb", steps_json(&m->eff_by_mb));
    static const char *const sh[] = { "default", "core", "cluster", "chip", "node", "system" };
    if (o && m->shared_by > COMET_MODEL_SHARE_DEFAULT && m->shared_by <= COMET_MODEL_SHARE_SYSTEM)
        json_object_set_new(o, "shared_by", json_string(sh[m->shared_by]));
    return o;
}

static json_t *axis_json(const double *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_real(v[i]));
    return a;
}

json_t *comet_model_hw_to_json(const comet_model_hw *hw)
{
    json_t *j = json_object(), *g = json_object(), *cy = json_object(), *en = json_object();
    json_object_set_new(j, "schema", json_string("comet.hw.v1"));
    json_object_set_new(j, "name", json_string(hw->name));
    json_object_set_new(j, "kind", json_string(hw->kind));
    json_object_set_new(j, "clock_ghz", json_real(hw->clock_ghz));
    json_object_set_new(j, "bytes_per_elem", json_real(hw->bytes_per_elem));
    json_object_set_new(j, "io_bytes_per_elem",
        json_real(hw->io_bytes_per_elem > 0 ? hw->io_bytes_per_elem : hw->bytes_per_elem));
    if (hw->clusters_per_chip > 0)
        json_object_set_new(j, "clusters_per_chip", json_integer(hw->clusters_per_chip));
    if (hw->execution) {
        json_t *ex = json_array();
        if (hw->execution & 1)
            json_array_append_new(ex, json_string("kernel"));
        if (hw->execution & 2)
            json_array_append_new(ex, json_string("dataflow"));
        json_object_set_new(j, "execution", ex);
    }
    if (hw->overlap) {
        static const char *const eng[] = { "gemm", "vector", "memory", "network" };
        json_t *ov = json_array();
        for (int e = 0; e < 4; e++)
            if (hw->overlap & (1 << e))
                json_array_append_new(ov, json_string(eng[e]));
        json_object_set_new(j, "overlap", ov);
    }
    if (hw->n_outer > 0) {
        json_t *lv = json_array();
        json_array_append_new(lv, net_json(&hw->cluster_net));
        for (int i = 0; i < hw->n_outer; i++)
            json_array_append_new(lv, net_json(&hw->outer_net[i]));
        json_object_set_new(
            j, "clusters", json_pack("{s:i,s:o}", "count", hw->clusters, "network", lv));
    } else
        json_object_set_new(j, "clusters",
            json_pack("{s:i,s:o}", "count", hw->clusters, "network", net_json(&hw->cluster_net)));
    json_object_set_new(
        j, "cores", json_pack("{s:i,s:o}", "count", hw->cores, "network", net_json(&hw->core_net)));
    json_t *lbj = mem_json(&hw->lb);
    if (hw->lb_input > 0)
        json_object_set_new(lbj, "input_bytes", json_real(hw->lb_input));
    if (hw->lb_weight > 0)
        json_object_set_new(lbj, "weight_bytes", json_real(hw->lb_weight));
    if (hw->lb_output > 0)
        json_object_set_new(lbj, "output_bytes", json_real(hw->lb_output));
    if (hw->lb_input_bw > 0)
        json_object_set_new(lbj, "input_bw", json_real(hw->lb_input_bw));
    if (hw->lb_weight_bw > 0)
        json_object_set_new(lbj, "weight_bw", json_real(hw->lb_weight_bw));
    if (hw->lb_output_bw > 0)
        json_object_set_new(lbj, "output_bw", json_real(hw->lb_output_bw));
    if (hw->l1_bytes > 0)
        json_object_set_new(lbj, "l1_bytes", json_real(hw->l1_bytes));
    json_object_set_new(j, "memory",
        json_pack("{s:o,s:o,s:o}", "dram", mem_json(&hw->dram), "global_buffer", mem_json(&hw->gb),
            "local_buffer", lbj));
    if (hw->systolic) {
        json_object_set_new(g, "engine", json_string("systolic"));
        json_object_set_new(g, "rows", json_integer(hw->sa_rows));
        json_object_set_new(g, "cols", json_integer(hw->sa_cols));
        json_object_set_new(g, "arrays", json_integer(hw->sa_arrays));
        if (hw->sa_spatial)
            json_object_set_new(g, "mapping", json_string("spatial"));
    } else {
        json_object_set_new(g, "engine", json_string("peak"));
        json_object_set_new(g, "peak_flops_per_cycle", json_real(hw->peak_flops));
    }
    json_object_set_new(g, "efficiency", json_real(hw->gemm_eff));
    if (hw->gemm_eff_by_gflop.n > 0)
        json_object_set_new(g, "efficiency_by_gflop", steps_json(&hw->gemm_eff_by_gflop));
    json_object_set_new(g, "mac_pj", json_real(hw->mac_pj));
    if (hw->gemm_ntiles > 0) {
        json_t *ta = json_array();
        for (int i = 0; i < hw->gemm_ntiles; i++)
            json_array_append_new(ta, json_pack("[f,f]", hw->gemm_tile_m[i], hw->gemm_tile_n[i]));
        json_object_set_new(g, "tiles", ta);
    }
    if (hw->cold_nn > 0 && hw->cold_nk > 0)
        json_object_set_new(g, "cold_read",
            json_pack("{s:f,s:o,s:o,s:o}", "rows", hw->cold_rows, "N",
                axis_json(hw->cold_N, hw->cold_nn), "K", axis_json(hw->cold_K, hw->cold_nk),
                "cycles_per_byte", axis_json(hw->cold_cpb, hw->cold_nn * hw->cold_nk)));
    if (hw->cold_gemv_cpb > 0)
        json_object_set_new(g, "cold_gemv_cycles_per_byte", json_real(hw->cold_gemv_cpb));
    if (hw->fused_micro_rows > 0) {
        json_object_set_new(g, "fused_micro_rows", json_real(hw->fused_micro_rows));
        json_object_set_new(g, "fused_micro_edge", json_real(hw->fused_micro_edge));
    }
    if (hw->par_region_cycles > 0)
        json_object_set_new(g, "parallel_region_cycles", json_real(hw->par_region_cycles));
    for (int w = 0; w < 2; w++) {
        const comet_model_grid *gr = w ? &hw->fused_grid : &hw->grid;
        if (!gr->values)
            continue;
        size_t total = (size_t)gr->nt * gr->nm * gr->nn * gr->nk;
        json_object_set_new(g, w ? "fused_grid" : "grid",
            json_pack("{s:o,s:o,s:o,s:o,s:o,s:f,s:f}", "threads", axis_json(gr->threads, gr->nt),
                "M", axis_json(gr->M, gr->nm), "N", axis_json(gr->N, gr->nn), "K",
                axis_json(gr->K, gr->nk), "values", axis_json(gr->values, (int)total), "emax",
                gr->emax, "f_half", gr->f_half));
    }
    json_object_set_new(j, "gemm", g);
    for (int i = 0; i < COMET_MODEL_NVOP; i++) {
        json_object_set_new(cy, vop_names[i], json_real(hw->vop_cycles[i]));
        json_object_set_new(en, vop_names[i], json_real(hw->vop_pj[i]));
    }
    json_t *vec
        = json_pack("{s:i,s:o,s:o}", "width", hw->simd_width, "cycles", cy, "energy_pj", en);
    if (vec && hw->row_cycles > 0)
        json_object_set_new(vec, "row_cycles", json_real(hw->row_cycles));
    if (vec && hw->ln_row_cycles > 0)
        json_object_set_new(vec, "ln_row_cycles", json_real(hw->ln_row_cycles));
    if (vec && hw->row_elem_cycles > 0)
        json_object_set_new(vec, "row_elem_cycles", json_real(hw->row_elem_cycles));
    if (vec && hw->ln_row_elem_cycles > 0)
        json_object_set_new(vec, "ln_row_elem_cycles", json_real(hw->ln_row_elem_cycles));
    if (vec && hw->dist_ln_elem_cycles > 0) {
        json_object_set_new(vec, "dist_ln_row_cycles", json_real(hw->dist_ln_row_cycles));
        json_object_set_new(vec, "dist_ln_elem_cycles", json_real(hw->dist_ln_elem_cycles));
    }
    if (vec && hw->store_hidden > 0)
        json_object_set_new(vec, "store_hidden", json_real(hw->store_hidden));
    if (vec && (hw->row_tab_n[0] > 0 || hw->row_tab_n[1] > 0)) {
        static const char *const rk[2] = { "softmax", "layernorm" };
        json_t *rt = json_object();
        for (int o = 0; o < 2; o++)
            if (hw->row_tab_n[o] > 0)
                json_object_set_new(rt, rk[o],
                    json_pack("{s:o,s:o}", "widths", axis_json(hw->row_tab_w[o], hw->row_tab_n[o]),
                        "cycles", axis_json(hw->row_tab_cycles[o], hw->row_tab_n[o])));
        json_object_set_new(vec, "row_pass_widths", rt);
    }
    json_object_set_new(j, "vector", vec);
    if (hw->links.p2p_beta_s > 0 || hw->links.nfits > 0) {
        json_t *c = json_object(), *fits = json_array();
        if (hw->links.p2p_beta_s > 0)
            json_object_set_new(c, "p2p",
                json_pack("{s:f,s:f}", "alpha_s", hw->links.p2p_alpha_s, "beta_s_per_byte",
                    hw->links.p2p_beta_s));
        for (int i = 0; i < hw->links.nfits; i++) {
            const comet_model_coll_fit *f = &hw->links.fits[i];
            json_array_append_new(fits,
                json_pack("{s:s,s:s,s:f,s:f,s:f,s:f}", "collective", comet_model_coll_name(f->coll),
                    "algorithm", f->alg, "alpha_s", f->alpha_s, "beta_s_per_byte", f->beta_s,
                    "gamma_s_per_byte", f->gamma_s, "from_bytes", f->from_bytes));
        }
        json_object_set_new(c, "fits", fits);
        json_object_set_new(j, "collectives", c);
    }
    if (hw->mem2.capacity > 0)
        json_object_set_new(json_object_get(j, "memory"), "second", mem_json(&hw->mem2));
    {
        static const char *const dt[COMET_MODEL_NDTYPE]
            = { "fp32", "tf32", "fp16", "bf16", "fp8", "int8" };
        json_t *c = json_object();
        for (int i = 0; i < COMET_MODEL_NDTYPE; i++)
            if (hw->peak_flops_dtype[i] > 0)
                json_object_set_new(c, dt[i], json_real(hw->peak_flops_dtype[i]));
        if (json_object_size(c))
            json_object_set_new(j, "compute", c);
        else
            json_decref(c);
    }
    if (hw->cost_chip_usd > 0 || hw->cost_link_usd_per_gbps > 0)
        json_object_set_new(j, "cost",
            json_pack("{s:f,s:f,s:f,s:f}", "chip", hw->cost_chip_usd, "link_per_gbps",
                hw->cost_link_usd_per_gbps, "switch_port_per_gbps",
                hw->cost_switch_port_usd_per_gbps, "memory_per_gbps", hw->cost_mem_usd_per_gbps));
    if (hw->power_chip_w > 0 || hw->power_link_j_per_gb > 0) /* J/GB -> J/B (the base unit) */
        json_object_set_new(j, "power",
            json_pack("{s:f,s:f,s:f,s:f}", "chip", hw->power_chip_w, "link_per_gbps",
                hw->power_link_j_per_gb * 1e-9, "switch_port_per_gbps",
                hw->power_switch_port_j_per_gb * 1e-9, "memory_per_gbps",
                hw->power_mem_j_per_gb * 1e-9));
    if (hw->calibration)
        json_object_set(j, "calibration", hw->calibration);
    return j;
}

int comet_model_hw_scale(const comet_model_hw *base, int cores_per_node, int nodes,
    const comet_model_net *net, comet_model_hw *out)
{
    if (!base || !out || cores_per_node < 1 || nodes < 1 || cores_per_node > 1 << 20
        || nodes > 1 << 20)
        return -EINVAL;
    if (net && (comet_model_net_nodes(net) != nodes || !(net->link_bw > 0)))
        return -EINVAL;
    *out = *base;
    out->grid.values = NULL;
    out->fused_grid.values = NULL;
    out->calibration = NULL;
    for (int w = 0; w < 2; w++) {
        const comet_model_grid *src = w ? &base->fused_grid : &base->grid;
        comet_model_grid *dst = w ? &out->fused_grid : &out->grid;
        if (!src->values)
            continue;
        size_t total = (size_t)src->nt * src->nm * src->nn * src->nk;
        dst->values = malloc(total * sizeof(double));
        if (!dst->values) {
            comet_model_hw_free(out);
            return -ENOMEM;
        }
        memcpy(dst->values, src->values, total * sizeof(double));
    }
    snprintf(out->name, sizeof out->name, "%.30s-%dc-x%d", base->name, cores_per_node, nodes);
    /* Each node brings its own memory system: DRAM bandwidth per node grows
     * with the cores that share it (the calibrated per-core share, capped at
     * no more than linear), the LLC is per node, L2 per core. */
    const double bc = base->cores > 0 ? base->cores : 1;
    out->cores = cores_per_node;
    out->clusters = nodes;
    out->dram.bw = base->dram.bw * fmin(1.0, cores_per_node / bc) + 0.0;
    if (cores_per_node > bc) /* more cores than measured: bandwidth saturates */
        out->dram.bw = base->dram.bw;
    if (base->dram.bw > 0) /* stores alone: the same share of the node's DRAM */
        out->dram.write_bw = base->dram.write_bw * out->dram.bw / base->dram.bw;
    out->core_net.dims[0] = cores_per_node;
    out->core_net.dims[1] = 1;
    out->n_outer = 0;
    if (net) {
        /* a given network: the calibrated links describe this machine's
         * shared memory, not it */
        memset(&out->links, 0, sizeof out->links);
        out->cluster_net = *net;
    } else {
        /* keep the calibrated link (alpha/beta), on a switch of `nodes` ports */
        out->cluster_net.topo = COMET_MODEL_SWITCH;
        out->cluster_net.dims[0] = nodes;
        out->cluster_net.dims[1] = 1;
    }
    return 0;
}
