/* Reader of COMET's four YAML files (d-matrix-ai/comet at 917af0d: its
 * src/arch/arch_spec.cpp, network_spec.cpp, arch.cpp, problem/workload.cpp
 * and mapping/parser.cpp define the fields and defaults read here). Every
 * refusal names file:line and the field. */
#include "comet_cometio.h"

#include "comet_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef comet_util_doc doc;

/* "FILE:LINE: FIELD: what" */
static int fail(const doc *at, const char *field, char *err, size_t errlen, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return comet_util_seterr(err, errlen, -EINVAL, "%s:%d: %s: %s", at && at->file ? at->file : "?",
        at ? at->line : 0, field, msg);
}

static int copy_name(
    char *dst, const char *src, const doc *at, const char *field, char *err, size_t errlen)
{
    size_t n = strlen(src);
    if (n == 0)
        return fail(at, field, err, errlen, "empty name");
    if (n >= COMET_COMETIO_NAME)
        return fail(
            at, field, err, errlen, "name longer than %d characters", COMET_COMETIO_NAME - 1);
    memcpy(dst, src, n + 1);
    return 0;
}

static const char *scalar(const doc *n)
{
    return n && n->kind == COMET_DOC_SCALAR ? n->value : NULL;
}

/* A constant's value, or the text itself when it names no constant. */
static const char *subst(const comet_cometio_consts *c, const char *s)
{
    if (c)
        for (size_t i = 0; i < c->n; i++)
            if (!strcmp(c->c[i].name, s))
                return c->c[i].value;
    return s;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* A positive integer: a number or a constant holding one. */
static int resolve_u64(const comet_cometio_consts *c, const char *s, const doc *at,
    const char *field, uint64_t *out, char *err, size_t errlen)
{
    const char *v = subst(c, s);
    if (parse_u64(v, out) || *out == 0)
        return fail(at, field, err, errlen,
            "'%s' is neither a positive integer nor a constant holding one", s);
    return 0;
}

/* ------------------------------------------------------------------ */
/* detection                                                          */
/* ------------------------------------------------------------------ */

comet_cometio_kind comet_cometio_detect(const char *path)
{
    comet_util_doc *d = NULL;
    char err[256];
    comet_cometio_kind k = COMET_COMETIO_NONE;
    if (!path || comet_util_doc_load(path, &d, err, sizeof err) || !d || d->kind != COMET_DOC_MAP)
        goto out;
    if (comet_util_doc_get(d, "mapping"))
        k = COMET_COMETIO_MAPPING;
    else if (comet_util_doc_get(d, "problem"))
        k = COMET_COMETIO_PROBLEM;
    else if (comet_util_doc_get(d, "const"))
        k = COMET_COMETIO_CONSTANTS;
    else if (comet_util_doc_get(d, "Hierarchy") || comet_util_doc_get(d, "MemoryTypes")
        || comet_util_doc_get(d, "ComputeTiles"))
        k = COMET_COMETIO_ARCH;
out:
    comet_util_doc_free(d);
    return k;
}

const char *comet_cometio_kind_name(comet_cometio_kind k)
{
    static const char *const n[] = { "none", "architecture", "problem", "mapping", "constants" };
    return (unsigned)k < 5 ? n[k] : "none";
}

static const char *const optype_names[COMET_COMETIO_OPTYPES] = { "gemm", "convolution", "softmax",
    "max", "exp", "div", "add", "mult", "sqrt", "rowsum", "rowmax" };

const char *comet_cometio_optype_name(comet_cometio_optype t)
{
    return (unsigned)t < COMET_COMETIO_OPTYPES ? optype_names[t] : "?";
}

const char *comet_cometio_coll_name(comet_cometio_coll t)
{
    static const char *const n[]
        = { "broadcast", "reduction", "allgather", "allreduce", "scatter", "gather" };
    return (unsigned)t < 6 ? n[t] : "?";
}

/* ------------------------------------------------------------------ */
/* constants                                                          */
/* ------------------------------------------------------------------ */

static int read_consts(const doc *root, comet_cometio_consts *c, char *err, size_t errlen)
{
    const doc *m = comet_util_doc_get(root, "const");
    if (!m || m->kind != COMET_DOC_MAP)
        return fail(m ? m : root, "const", err, errlen, "a map of constants is required");
    c->c = calloc(m->n ? m->n : 1, sizeof *c->c);
    if (!c->c)
        return -ENOMEM;
    for (size_t i = 0; i < m->n; i++) {
        const doc *v = m->child[i];
        if (v->kind != COMET_DOC_SCALAR)
            return fail(v, v->key, err, errlen, "a constant must be a number or a name");
        int rc = copy_name(c->c[i].name, v->key, v, "const", err, errlen);
        if (!rc)
            rc = copy_name(c->c[i].value, v->value, v, v->key, err, errlen);
        if (rc)
            return rc;
        c->c[i].line = v->line;
        c->n++;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* architecture                                                       */
/* ------------------------------------------------------------------ */

/* COMET reads attributes by exact name and ignores the rest (its example
 * architecture spells computeWidth "computewidth"): such keys are listed,
 * not refused, so a COMET user's file reads as COMET reads it */
static void note_unknown(comet_cometio_arch *a, const doc *m, const char *const *allowed)
{
    for (size_t i = 0; i < m->n; i++) {
        int ok = 0;
        for (int k = 0; allowed[k] && !ok; k++)
            ok = !strcmp(m->child[i]->key, allowed[k]);
        if (!ok && a->n_ignored < 32)
            snprintf(a->ignored[a->n_ignored++], sizeof a->ignored[0], "%s:%d: %s",
                m->child[i]->file ? m->child[i]->file : "?", m->child[i]->line, m->child[i]->key);
    }
}

static int num_field(
    const doc *m, const char *key, double dflt, double *out, char *err, size_t errlen)
{
    return comet_util_doc_number(m, key, &dflt, 0, 1e18, out, err, errlen);
}

/* An architecture entry's head, as COMET's compute and memory entries share
 * it: exactly name, class and attributes; the name copied into dst. */
static int entry_head(const doc *e, char *dst, const char **cls, char *err, size_t errlen)
{
    static const char *const keys[] = { "name", "class", "attributes", NULL };
    const char *name;
    int rc = comet_util_doc_check_keys(e, keys, err, errlen);
    if (!rc)
        rc = comet_util_doc_string(e, "name", NULL, &name, err, errlen);
    if (!rc)
        rc = comet_util_doc_string(e, "class", NULL, cls, err, errlen);
    if (!rc)
        rc = copy_name(dst, name, e, "name", err, errlen);
    return rc;
}

/* The entry's attributes map (its keys outside known noted, not refused);
 * NULL with the error when it is not a map. */
static const doc *entry_attrs(comet_cometio_arch *ar, const doc *e, const char *const *known,
    int *rc, char *err, size_t errlen)
{
    const doc *a = comet_util_doc_get(e, "attributes");
    if (!a || a->kind != COMET_DOC_MAP) {
        *rc = fail(e, "attributes", err, errlen, "a map is required");
        return NULL;
    }
    note_unknown(ar, a, known);
    return a;
}

static int read_compute(
    comet_cometio_arch *ar, const doc *e, comet_cometio_compute *c, char *err, size_t errlen)
{
    static const char *const ak[] = { "datawidth", "capacity", "computeWidth", "computeOpC",
        "computeLatency", "startupLatency", "compute_energy", "array_rows", "array_cols",
        "num_sa_rows", "num_sa_cols", NULL };
    const char *cls;
    int rc = entry_head(e, c->name, &cls, err, errlen);
    if (rc)
        return rc;
    if (!strcasecmp(cls, "simd"))
        c->is_simd = 1;
    else if (strcasecmp(cls, "mac"))
        return fail(comet_util_doc_get(e, "class"), "class", err, errlen,
            "'%s' is not a compute class (mac, simd)", cls);
    const doc *a = entry_attrs(ar, e, ak, &rc, err, errlen);
    if (!a)
        return rc;
    if (!comet_util_doc_get(a, "computeOpC") || !comet_util_doc_get(a, "computeLatency"))
        return fail(a, "computeOpC", err, errlen,
            "COMET requires computeOpC and computeLatency on every compute tile");
    /* arch_spec.cpp's defaults: computeWidth 8, arrays of 32x32, one array */
    if ((rc = num_field(a, "datawidth", 0, &c->datawidth, err, errlen))
        || (rc = num_field(a, "capacity", 0, &c->capacity, err, errlen))
        || (rc = num_field(a, "computeWidth", 8, &c->compute_width, err, errlen))
        || (rc = num_field(a, "computeOpC", 1, &c->compute_opc, err, errlen))
        || (rc = num_field(a, "computeLatency", 1, &c->compute_latency, err, errlen))
        || (rc = num_field(a, "startupLatency", 0, &c->startup_latency, err, errlen))
        || (rc = num_field(a, "compute_energy", 0, &c->compute_energy, err, errlen))
        || (rc = num_field(a, "array_rows", 32, &c->array_rows, err, errlen))
        || (rc = num_field(a, "array_cols", 32, &c->array_cols, err, errlen))
        || (rc = num_field(a, "num_sa_rows", 1, &c->num_sa_rows, err, errlen))
        || (rc = num_field(a, "num_sa_cols", 1, &c->num_sa_cols, err, errlen)))
        return rc;
    c->line = e->line;
    return 0;
}

static int read_memory(
    comet_cometio_arch *ar, const doc *e, comet_cometio_memory *m, char *err, size_t errlen)
{
    static const char *const ak[] = { "width", "depth", "ports", "doublebuffered", "reduction",
        "parent_child_ports_shared", "parent_read_energy", "parent_write_energy",
        "child_read_energy", "child_write_energy", "link_read_bw", "link_write_bw", "child_read_bw",
        "child_write_bw", "parent_read_bw", "parent_write_bw", "bw", "dma_contiguous", NULL };
    const char *cls;
    int rc = entry_head(e, m->name, &cls, err, errlen);
    if (rc)
        return rc;
    if (!strcasecmp(cls, "DRAM"))
        m->is_dram = 1;
    else if (strcasecmp(cls, "SRAM"))
        return fail(comet_util_doc_get(e, "class"), "class", err, errlen,
            "'%s' is not a memory class (SRAM, DRAM)", cls);
    const doc *a = entry_attrs(ar, e, ak, &rc, err, errlen);
    if (!a)
        return rc;
    int f0 = 0;
    if ((rc = num_field(a, "width", 1, &m->width, err, errlen))
        || (rc = num_field(a, "depth", 1, &m->depth, err, errlen))
        || (rc = num_field(a, "ports", 1, &m->ports, err, errlen))
        || (rc = comet_util_doc_bool(a, "doublebuffered", &f0, &m->double_buffered, err, errlen))
        || (rc = comet_util_doc_bool(a, "reduction", &f0, &m->reduction, err, errlen))
        || (rc = comet_util_doc_bool(
                a, "parent_child_ports_shared", &f0, &m->ports_shared, err, errlen))
        || (rc = comet_util_doc_bool(a, "dma_contiguous", &f0, &m->dma_contiguous, err, errlen))
        || (rc = num_field(a, "parent_read_energy", 0, &m->parent_read_pj, err, errlen))
        || (rc = num_field(a, "parent_write_energy", 0, &m->parent_write_pj, err, errlen))
        || (rc = num_field(a, "child_read_energy", 0, &m->child_read_pj, err, errlen))
        || (rc = num_field(a, "child_write_energy", 0, &m->child_write_pj, err, errlen))
        || (rc = num_field(a, "link_read_bw", 0, &m->link_read_bw, err, errlen))
        || (rc = num_field(a, "link_write_bw", 0, &m->link_write_bw, err, errlen))
        || (rc = num_field(a, "child_read_bw", 0, &m->child_read_bw, err, errlen))
        || (rc = num_field(a, "child_write_bw", 0, &m->child_write_bw, err, errlen))
        || (rc = num_field(a, "parent_read_bw", 0, &m->parent_read_bw, err, errlen))
        || (rc = num_field(a, "parent_write_bw", 0, &m->parent_write_bw, err, errlen)))
        return rc;
    if (m->width < 1 || m->ports < 1)
        return fail(a, "width", err, errlen, "width and ports must be at least 1");
    if (comet_util_doc_get(a, "bw")) {
        /* arch_spec.cpp: a generic bw sets all six bandwidths */
        double bw;
        if ((rc = num_field(a, "bw", 0, &bw, err, errlen)))
            return rc;
        m->parent_read_bw = m->parent_write_bw = m->child_read_bw = m->child_write_bw = bw;
        m->link_read_bw = m->link_write_bw = bw;
    }
    m->reduction_cost = 1; /* arch_spec.hpp's default; the file cannot set it */
    m->line = e->line;
    return 0;
}

static int read_net(const doc *a, comet_cometio_net *n, int need_bw, char *err, size_t errlen)
{
    double v;
    int rc, f0 = 0;
    memset(n, 0, sizeof *n);
    n->mesh_x = n->mesh_y = 1;
    if (comet_util_doc_get(a, "mesh"))
        return fail(comet_util_doc_get(a, "mesh"), "mesh", err, errlen,
            "not expressible: give meshX and meshY");
    if (comet_util_doc_get(a, "meshY") && !comet_util_doc_get(a, "meshX"))
        return fail(a, "meshY", err, errlen, "meshY without meshX");
    if ((rc = num_field(a, "meshX", 1, &v, err, errlen)))
        return rc;
    n->mesh_x = (int)v;
    if ((rc = num_field(a, "meshY", 1, &v, err, errlen)))
        return rc;
    n->mesh_y = (int)v;
    if (n->mesh_x < 1 || n->mesh_y < 1 || n->mesh_x > 4096 || n->mesh_y > 4096)
        return fail(a, "meshX", err, errlen, "mesh dimensions must be 1..4096");
    if (need_bw && !comet_util_doc_get(a, "bw"))
        return fail(a, "bw", err, errlen, "COMET requires a network bw on every edge");
    if ((rc = num_field(a, "bw", 0, &n->bw, err, errlen))
        || (rc = num_field(a, "hop_latency", 1, &n->hop_latency, err, errlen))
        || (rc = num_field(a, "queuing_delay", 0, &n->queuing_delay, err, errlen))
        || (rc = num_field(a, "channel_width", 32, &n->channel_width, err, errlen))
        || (rc = comet_util_doc_bool(a, "broadcast_support", &f0, &n->broadcast, err, errlen))
        || (rc = comet_util_doc_bool(a, "reduction_support", &f0, &n->reduction, err, errlen))
        || (rc = comet_util_doc_bool(a, "link_transfers", &f0, &n->link_transfers, err, errlen)))
        return rc;
    const char *ct;
    if ((rc = comet_util_doc_string(a, "connection_type", "MeshNetwork", &ct, err, errlen)))
        return rc;
    if (!strcmp(ct, "XBar"))
        n->is_xbar = 1;
    else if (strcmp(ct, "MeshNetwork") && strcmp(ct, "null"))
        return fail(comet_util_doc_get(a, "connection_type"), "connection_type", err, errlen,
            "'%s' is not a network class (MeshNetwork, XBar)", ct);
    if (n->bw < 0 || (need_bw && n->bw <= 0))
        return fail(a, "bw", err, errlen, "network bw must be positive");
    return 0;
}

static int grow(void **p, size_t n, size_t sz)
{
    void *q = realloc(*p, (n + 1) * sz);
    if (!q)
        return -ENOMEM;
    *p = q;
    memset((char *)q + n * sz, 0, sz);
    return 0;
}

static int parse_level(comet_cometio_arch *a, const doc *e, int parent, comet_cometio_edge edge,
    int *out, char *err, size_t errlen)
{
    static const char *const keys[]
        = { "name", "type", "is_compute", "attributes", "connects", "fills", "drains", NULL };
    static const char *const ak[]
        = { "meshX", "meshY", "mesh", "bw", "hop_latency", "queuing_delay", "channel_width",
              "broadcast_support", "reduction_support", "link_transfers", "connection_type",
              "efficiency", "reduction_latency", "hierarchy_levels", NULL };
    const char *name, *type;
    char base[COMET_COMETIO_NAME];
    int rc;
    if (e->kind != COMET_DOC_MAP)
        return fail(e, "Hierarchy", err, errlen, "a level must be a map");
    if ((rc = comet_util_doc_check_keys(e, keys, err, errlen))
        || (rc = comet_util_doc_string(e, "name", NULL, &name, err, errlen)))
        return rc;
    if ((rc = copy_name(base, name, e, "name", err, errlen)))
        return rc;
    char *br = strchr(base, '[');
    if (br)
        *br = 0;
    const doc *at = comet_util_doc_get(e, "attributes");
    if (at && at->kind != COMET_DOC_MAP)
        return fail(at, "attributes", err, errlen, "a map is required");
    if (parent >= 0 && !at)
        return fail(e, "attributes", err, errlen, "COMET requires attributes below the root");
    if (at)
        note_unknown(a, at, ak);
    int is_compute = comet_util_doc_get(e, "is_compute") != NULL;
    /* arch.cpp: a compute level, or a level under the root, named again is
     * the same level (another network to it) */
    int idx = comet_cometio_level_find(a, base);
    if (idx >= 0 && !(is_compute || parent == 0))
        return fail(e, "name", err, errlen, "level '%s' is defined twice", base);
    if (idx < 0) {
        if ((rc = comet_util_doc_string(e, "type", NULL, &type, err, errlen)))
            return rc;
        if ((rc = grow((void **)&a->level, a->n_level, sizeof *a->level)))
            return rc;
        comet_cometio_level *L = &a->level[a->n_level];
        memcpy(L->name, base, sizeof base);
        if ((rc = copy_name(L->type, type, e, "type", err, errlen)))
            return rc;
        L->is_compute = is_compute;
        L->mem = L->comp = -1;
        for (size_t i = 0; i < a->n_memory; i++)
            if (!strcmp(a->memory[i].name, type))
                L->mem = (int)i;
        for (size_t i = 0; i < a->n_compute; i++)
            if (!strcmp(a->compute[i].name, type))
                L->comp = (int)i;
        if (is_compute ? L->comp < 0 : L->mem < 0)
            return fail(comet_util_doc_get(e, "type"), "type", err, errlen,
                "'%s' is not a %s defined in the file", type,
                is_compute ? "ComputeTiles entry" : "MemoryTypes entry");
        L->line = e->line;
        L->instances = 1;
        if (at) {
            comet_cometio_net n;
            if ((rc = read_net(at, &n, 0, err, errlen)))
                return rc;
            L->instances = n.mesh_x * n.mesh_y;
            if (n.link_transfers)
                L->link = n;
        }
        idx = (int)a->n_level++;
    }
    if (parent >= 0) {
        if ((rc = grow((void **)&a->link, a->n_link, sizeof *a->link)))
            return rc;
        comet_cometio_link *k = &a->link[a->n_link];
        k->parent = parent;
        k->child = idx;
        k->edge = edge;
        k->line = e->line;
        if ((rc = read_net(at, &k->net, 1, err, errlen)))
            return rc;
        a->n_link++;
    }
    *out = idx;
    static const char *const lists[3] = { "connects", "fills", "drains" };
    for (int l = 0; l < 3; l++) {
        const doc *s = comet_util_doc_get(e, lists[l]);
        if (!s)
            continue;
        if (s->kind != COMET_DOC_SEQ)
            return fail(s, lists[l], err, errlen, "a list of levels is required");
        for (size_t i = 0; i < s->n; i++) {
            int kid;
            if ((rc = parse_level(
                     a, s->child[i], idx, (comet_cometio_edge)(l + 1), &kid, err, errlen)))
                return rc;
        }
    }
    return 0;
}

static int read_arch(const doc *root, comet_cometio_arch *a, char *err, size_t errlen)
{
    static const char *const keys[] = { "ComputeTiles", "MemoryTypes", "Hierarchy", NULL };
    int rc;
    if ((rc = comet_util_doc_check_keys(root, keys, err, errlen)))
        return rc;
    const doc *ct = comet_util_doc_get(root, "ComputeTiles");
    const doc *mt = comet_util_doc_get(root, "MemoryTypes");
    const doc *h = comet_util_doc_get(root, "Hierarchy");
    if (!ct || ct->kind != COMET_DOC_SEQ || !mt || mt->kind != COMET_DOC_SEQ || !h
        || h->kind != COMET_DOC_SEQ)
        return fail(root, "ComputeTiles", err, errlen,
            "an architecture needs ComputeTiles, MemoryTypes and Hierarchy lists");
    a->compute = calloc(ct->n + 1, sizeof *a->compute);
    a->memory = calloc(mt->n + 1, sizeof *a->memory);
    if (!a->compute || !a->memory)
        return -ENOMEM;
    for (size_t i = 0; i < ct->n; i++, a->n_compute++)
        if ((rc = read_compute(a, ct->child[i], &a->compute[i], err, errlen)))
            return rc;
    for (size_t i = 0; i < mt->n; i++, a->n_memory++)
        if ((rc = read_memory(a, mt->child[i], &a->memory[i], err, errlen)))
            return rc;
    if (h->n != 1)
        return fail(h, "Hierarchy", err, errlen,
            "not expressible: %zu roots (comet reads one root level)", h->n);
    int r;
    return parse_level(a, h->child[0], -1, COMET_COMETIO_ROOT, &r, err, errlen);
}

int comet_cometio_level_find(const comet_cometio_arch *a, const char *name)
{
    for (size_t i = 0; i < a->n_level; i++)
        if (!strcmp(a->level[i].name, name))
            return (int)i;
    return -1;
}

const comet_cometio_net *comet_cometio_net_of(const comet_cometio_arch *a, int parent, int child)
{
    if (parent == child)
        return parent >= 0 && a->level[parent].link.link_transfers ? &a->level[parent].link : NULL;
    for (size_t i = 0; i < a->n_link; i++)
        if (a->link[i].parent == parent && a->link[i].child == child)
            return &a->link[i].net;
    return NULL;
}

/* ------------------------------------------------------------------ */
/* problem                                                            */
/* ------------------------------------------------------------------ */

int comet_cometio_dim(const comet_cometio_problem *pb, const char *name)
{
    for (int i = 0; i < pb->n_dim; i++)
        if (!strcmp(pb->dim[i], name))
            return i;
    return -1;
}

const comet_cometio_op *comet_cometio_find_op(const comet_cometio_problem *pb, const char *name)
{
    for (size_t i = 0; i < pb->n_op; i++)
        if (!strcmp(pb->op[i].name, name))
            return &pb->op[i];
    return NULL;
}

/* "A,B" (or a YAML list) into names */
static int name_list(const doc *n, const char *field, char out[][COMET_COMETIO_NAME], int max,
    int *count, char *err, size_t errlen)
{
    int rc;
    *count = 0;
    if (!n)
        return fail(NULL, field, err, errlen, "missing");
    if (n->kind == COMET_DOC_SEQ) {
        for (size_t i = 0; i < n->n; i++) {
            if (*count >= max)
                return fail(n, field, err, errlen, "more than %d names", max);
            if (!scalar(n->child[i]))
                return fail(n->child[i], field, err, errlen, "a name is required");
            if ((rc = copy_name(out[(*count)++], n->child[i]->value, n, field, err, errlen)))
                return rc;
        }
        return 0;
    }
    if (!scalar(n))
        return fail(n, field, err, errlen, "a name or a list of names is required");
    const char *s = n->value;
    while (*s) {
        while (*s == ' ' || *s == ',')
            s++;
        if (!*s)
            break;
        size_t len = strcspn(s, ", ");
        if (*count >= max)
            return fail(n, field, err, errlen, "more than %d names", max);
        if (len >= COMET_COMETIO_NAME)
            return fail(n, field, err, errlen, "name too long");
        memcpy(out[*count], s, len);
        out[(*count)++][len] = 0;
        s += len;
    }
    if (*count == 0)
        return fail(n, field, err, errlen, "no name given");
    return 0;
}

static int read_dims(
    const doc *n, comet_cometio_problem *pb, int *idx, int *count, char *err, size_t errlen)
{
    char names[COMET_COMETIO_MAX_DIMS][COMET_COMETIO_NAME];
    int rc = name_list(n, "dimensions", names, COMET_COMETIO_MAX_DIMS, count, err, errlen);
    if (rc)
        return rc;
    for (int i = 0; i < *count; i++) {
        idx[i] = comet_cometio_dim(pb, names[i]);
        if (idx[i] < 0)
            return fail(n, "dimensions", err, errlen, "'%s' is not a problem dimension", names[i]);
    }
    return 0;
}

static int read_tensor(
    const doc *t, comet_cometio_problem *pb, comet_cometio_tensor *x, char *err, size_t errlen)
{
    static const char *const keys[] = { "name", "projection", "read-write", NULL };
    const char *name;
    int rc, f0 = 0;
    if (t->kind != COMET_DOC_MAP)
        return fail(t, "tensors", err, errlen, "a tensor must be a map");
    if ((rc = comet_util_doc_check_keys(t, keys, err, errlen))
        || (rc = comet_util_doc_string(t, "name", NULL, &name, err, errlen))
        || (rc = copy_name(x->name, name, t, "name", err, errlen))
        || (rc = comet_util_doc_bool(t, "read-write", &f0, &x->rw, err, errlen)))
        return rc;
    const doc *p = comet_util_doc_get(t, "projection");
    if (!p || p->kind != COMET_DOC_SEQ || p->n == 0)
        return fail(p ? p : t, "projection", err, errlen, "a list of ranks is required");
    if (p->n > COMET_COMETIO_MAX_DIMS)
        return fail(p, "projection", err, errlen, "more than %d ranks", COMET_COMETIO_MAX_DIMS);
    for (size_t r = 0; r < p->n; r++) {
        /* a rank is [[DIM]] (Timeloop's sum of products): comet reads one
         * dimension with coefficient 1 per rank */
        const doc *rk = p->child[r];
        if (rk->kind != COMET_DOC_SEQ || rk->n != 1 || rk->child[0]->kind != COMET_DOC_SEQ
            || rk->child[0]->n != 1 || !scalar(rk->child[0]->child[0]))
            return fail(rk, "projection", err, errlen,
                "not expressible: a rank must be [[DIM]] (sliding windows and coefficients "
                "are not read)");
        const char *dn = rk->child[0]->child[0]->value;
        int d = comet_cometio_dim(pb, dn);
        if (d < 0)
            return fail(rk, "projection", err, errlen, "'%s' is not a problem dimension", dn);
        x->rank_dim[x->n_rank++] = d;
    }
    return 0;
}

static int read_problem(const doc *root, const comet_cometio_consts *c, comet_cometio_problem *pb,
    char *err, size_t errlen)
{
    static const char *const keys[]
        = { "io", "dimensions", "instance", "operations", "shape", NULL };
    static const char *const opk[] = { "name", "ins", "out", "dimensions", "tensors", NULL };
    const doc *p = comet_util_doc_get(root, "problem");
    int rc, idx[COMET_COMETIO_MAX_DIMS], nd;
    if (!p || p->kind != COMET_DOC_MAP)
        return fail(p ? p : root, "problem", err, errlen, "a map is required");
    if ((rc = comet_util_doc_check_keys(p, keys, err, errlen)))
        return rc;
    const doc *io = comet_util_doc_get(p, "io");
    if (io) {
        if ((rc = name_list(comet_util_doc_get(io, "ins"), "io.ins", pb->io_ins,
                 COMET_COMETIO_MAX_TENSORS, &pb->n_io_ins, err, errlen))
            || (rc = name_list(comet_util_doc_get(io, "outs"), "io.outs", pb->io_outs,
                    COMET_COMETIO_MAX_TENSORS, &pb->n_io_outs, err, errlen)))
            return rc;
    }
    if ((rc = name_list(comet_util_doc_get(p, "dimensions"), "dimensions", pb->dim,
             COMET_COMETIO_MAX_DIMS, &pb->n_dim, err, errlen)))
        return rc;
    const doc *inst = comet_util_doc_get(p, "instance");
    if (!inst || inst->kind != COMET_DOC_MAP)
        return fail(
            inst ? inst : p, "instance", err, errlen, "a map of dimension sizes is required");
    for (int d = 0; d < pb->n_dim; d++) {
        const doc *v = comet_util_doc_get(inst, pb->dim[d]);
        if (!scalar(v))
            return fail(inst, "instance", err, errlen, "no size for dimension %s", pb->dim[d]);
        if ((rc = resolve_u64(c, v->value, v, pb->dim[d], &pb->size[d], err, errlen)))
            return rc;
    }
    const doc *ops = comet_util_doc_get(p, "operations");
    if (!ops || ops->kind != COMET_DOC_SEQ || ops->n == 0)
        return fail(ops ? ops : p, "operations", err, errlen, "a list of operations is required");
    pb->op = calloc(ops->n, sizeof *pb->op);
    if (!pb->op)
        return -ENOMEM;
    for (size_t i = 0; i < ops->n; i++) {
        const doc *o = ops->child[i];
        comet_cometio_op *op = &pb->op[i];
        const char *s;
        int n1;
        char outs[1][COMET_COMETIO_NAME];
        if (o->kind != COMET_DOC_MAP)
            return fail(o, "operations", err, errlen, "an operation must be a map");
        if ((rc = comet_util_doc_check_keys(o, opk, err, errlen))
            || (rc = comet_util_doc_string(o, "name", NULL, &s, err, errlen))
            || (rc = copy_name(op->name, s, o, "name", err, errlen))
            || (rc = name_list(comet_util_doc_get(o, "ins"), "ins", op->ins,
                    COMET_COMETIO_MAX_TENSORS, &op->n_ins, err, errlen))
            || (rc = name_list(comet_util_doc_get(o, "out"), "out", outs, 1, &n1, err, errlen)))
            return rc;
        memcpy(op->out, outs[0], sizeof op->out);
        if (comet_cometio_find_op(pb, op->name))
            return fail(o, "name", err, errlen, "operation '%s' is defined twice", op->name);
        if (comet_util_doc_get(o, "dimensions")
            && (rc = read_dims(comet_util_doc_get(o, "dimensions"), pb, idx, &nd, err, errlen)))
            return rc;
        const doc *ts = comet_util_doc_get(o, "tensors");
        if (!ts || ts->kind != COMET_DOC_SEQ || ts->n == 0)
            return fail(ts ? ts : o, "tensors", err, errlen, "a list of tensors is required");
        if (ts->n > COMET_COMETIO_MAX_TENSORS)
            return fail(
                ts, "tensors", err, errlen, "more than %d tensors", COMET_COMETIO_MAX_TENSORS);
        for (size_t t = 0; t < ts->n; t++, op->n_tensor++)
            if ((rc = read_tensor(ts->child[t], pb, &op->tensor[t], err, errlen)))
                return rc;
        op->line = o->line;
        pb->n_op++;
        /* every named input and the output need a projection */
        for (int k = -1; k < op->n_ins; k++) {
            const char *tn = k < 0 ? op->out : op->ins[k];
            int found = 0;
            for (int t = 0; t < op->n_tensor; t++)
                found |= !strcmp(op->tensor[t].name, tn);
            if (!found)
                return fail(o, "tensors", err, errlen, "tensor %s of op %s has no projection", tn,
                    op->name);
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* mapping                                                            */
/* ------------------------------------------------------------------ */

typedef struct mctx {
    const comet_cometio_arch *arch;
    const comet_cometio_problem *pb;
    const comet_cometio_consts *c;
    char *err;
    size_t errlen;
} mctx;

static int level_ref(mctx *x, const doc *at, const char *field, const char *name, int *out)
{
    *out = comet_cometio_level_find(x->arch, name);
    if (*out < 0)
        return fail(at, field, x->err, x->errlen, "'%s' is not a level of the architecture", name);
    return 0;
}

/* a list field with one entry per tensor */
static int per_tensor(
    mctx *x, const doc *n, const char *field, int count, int required, const doc **out)
{
    const doc *v = comet_util_doc_get(n, field);
    *out = v;
    if (!v) {
        if (required)
            return fail(n, field, x->err, x->errlen, "missing (one entry per tensor)");
        return 0;
    }
    if (v->kind != COMET_DOC_SEQ || (int)v->n != count)
        return fail(v, field, x->err, x->errlen, "%d entries (one per tensor) are required", count);
    return 0;
}

/* "M=[a,b] N=[c,d]" : factor[row][dim] per tensor */
static int parse_factors(mctx *x, const doc *at, const char *s, comet_cometio_node *nd, int row)
{
    const char *p = s;
    int seen[COMET_COMETIO_MAX_DIMS] = { 0 };
    for (;;) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *k = p;
        while (isupper((unsigned char)*p))
            p++;
        if (p == k)
            return fail(at, "factors", x->err, x->errlen, "expected DIM=[...] at '%s'", k);
        char dn[COMET_COMETIO_NAME];
        size_t kl = (size_t)(p - k);
        if (kl >= sizeof dn)
            return fail(at, "factors", x->err, x->errlen, "dimension name too long");
        memcpy(dn, k, kl);
        dn[kl] = 0;
        while (*p && isspace((unsigned char)*p))
            p++;
        if (*p != '=')
            return fail(at, "factors", x->err, x->errlen, "expected '=' after %s", dn);
        p++;
        while (*p && isspace((unsigned char)*p))
            p++;
        if (*p != '[')
            return fail(at, "factors", x->err, x->errlen, "expected '[' after %s=", dn);
        p++;
        const char *end = strchr(p, ']');
        if (!end)
            return fail(at, "factors", x->err, x->errlen, "unclosed '[' after %s=", dn);
        int d = comet_cometio_dim(x->pb, dn);
        if (d < 0)
            return fail(at, "factors", x->err, x->errlen, "'%s' is not a problem dimension", dn);
        seen[d] = 1;
        int t = 0;
        while (p < end) {
            const char *q = p;
            while (q < end && *q != ',')
                q++;
            char tok[COMET_COMETIO_NAME];
            size_t tl = 0;
            for (const char *r = p; r < q && tl + 1 < sizeof tok; r++)
                if (!isspace((unsigned char)*r))
                    tok[tl++] = *r;
            tok[tl] = 0;
            if (t >= nd->n_move)
                return fail(at, "factors", x->err, x->errlen,
                    "%s has more factors than the node has tensors (%d)", dn, nd->n_move);
            char fld[96];
            snprintf(fld, sizeof fld, "factors %s", dn);
            uint64_t v;
            int rc = resolve_u64(x->c, tok, at, fld, &v, x->err, x->errlen);
            if (rc)
                return rc;
            nd->move[t++].factor[row][d] = v;
            p = q < end ? q + 1 : end;
        }
        if (t != nd->n_move)
            return fail(at, "factors", x->err, x->errlen,
                "%s has %d factors; the node has %d tensors", dn, t, nd->n_move);
        p = end + 1;
    }
    for (int d = 0; d < x->pb->n_dim; d++)
        if (!seen[d])
            return fail(
                at, "factors", x->err, x->errlen, "no factors for dimension %s", x->pb->dim[d]);
    return 0;
}

static int parse_perm(mctx *x, const doc *n, comet_cometio_node *nd)
{
    const doc *v = comet_util_doc_get(n, "permutation");
    if (!scalar(v))
        return fail(v ? v : n, "permutation", x->err, x->errlen, "a loop order is required");
    const char *s = subst(x->c, v->value);
    nd->n_perm = 0;
    int seen[COMET_COMETIO_MAX_DIMS] = { 0 };
    for (const char *p = s; *p; p++) {
        if (isspace((unsigned char)*p))
            continue;
        char dn[2] = { *p, 0 };
        int d = comet_cometio_dim(x->pb, dn);
        if (d < 0 || seen[d])
            return fail(v, "permutation", x->err, x->errlen,
                "'%s': every problem dimension once, by its one-letter name", s);
        seen[d] = 1;
        nd->perm[nd->n_perm++] = d;
    }
    if (nd->n_perm != x->pb->n_dim)
        return fail(v, "permutation", x->err, x->errlen, "'%s' must name all %d dimensions", s,
            x->pb->n_dim);
    return 0;
}

static int parse_tile(mctx *x, const doc *n, comet_cometio_node *nd)
{
    static const char *const keys[] = { "node_type", "target", "type", "tensors", "precision",
        "rmw", "factors", "permutation", "wb_output", "tag", "child", "subtree", NULL };
    const doc *tens, *tgt, *chd, *prec, *rmw, *wb, *tag;
    const char *type;
    int rc;
    if ((rc = comet_util_doc_check_keys(n, keys, x->err, x->errlen))
        || (rc = comet_util_doc_string(n, "type", NULL, &type, x->err, x->errlen)))
        return rc;
    if (!strcmp(type, "spatial"))
        nd->spatial = 1;
    else if (strcmp(type, "temporal"))
        return fail(comet_util_doc_get(n, "type"), "type", x->err, x->errlen,
            "'%s' is not temporal or spatial", type);
    tens = comet_util_doc_get(n, "tensors");
    if (!tens || tens->kind != COMET_DOC_SEQ || tens->n == 0)
        return fail(tens ? tens : n, "tensors", x->err, x->errlen, "a list of tensors is required");
    if (tens->n > COMET_COMETIO_MAX_MOVES)
        return fail(
            tens, "tensors", x->err, x->errlen, "more than %d tensors", COMET_COMETIO_MAX_MOVES);
    nd->n_move = (int)tens->n;
    if ((rc = per_tensor(x, n, "target", nd->n_move, 1, &tgt))
        || (rc = per_tensor(x, n, "child", nd->n_move, 1, &chd))
        || (rc = per_tensor(x, n, "precision", nd->n_move, 0, &prec))
        || (rc = per_tensor(x, n, "rmw", nd->n_move, 0, &rmw))
        || (rc = per_tensor(x, n, "wb_output", nd->n_move, 0, &wb))
        || (rc = per_tensor(x, n, "tag", nd->n_move, 0, &tag)))
        return rc;
    for (int t = 0; t < nd->n_move; t++) {
        comet_cometio_move *m = &nd->move[t];
        const char *tn = scalar(tens->child[t]);
        if (!tn || (rc = copy_name(m->tensor, tn, tens, "tensors", x->err, x->errlen)))
            return rc ? rc : fail(tens, "tensors", x->err, x->errlen, "a name is required");
        /* the tensor must exist in some op */
        int found = 0;
        for (size_t o = 0; o < x->pb->n_op && !found; o++)
            for (int k = 0; k < x->pb->op[o].n_tensor; k++)
                found |= !strcmp(x->pb->op[o].tensor[k].name, tn);
        if (!found)
            return fail(tens, "tensors", x->err, x->errlen, "'%s' is no tensor of the problem", tn);
        if (!scalar(tgt->child[t]) || !scalar(chd->child[t]))
            return fail(tgt, "target", x->err, x->errlen, "level names are required");
        if ((rc = level_ref(x, tgt, "target", tgt->child[t]->value, &m->target))
            || (rc = level_ref(x, chd, "child", chd->child[t]->value, &m->child)))
            return rc;
        m->precision = 8;
        if (prec) {
            uint64_t v;
            if (!scalar(prec->child[t])
                || (rc = resolve_u64(
                        x->c, prec->child[t]->value, prec, "precision", &v, x->err, x->errlen)))
                return rc ? rc : fail(prec, "precision", x->err, x->errlen, "bits are required");
            if (v > 64)
                return fail(prec, "precision", x->err, x->errlen, "%llu bits: at most 64",
                    (unsigned long long)v);
            m->precision = (int)v;
        }
        if (rmw) {
            const char *b = scalar(rmw->child[t]);
            m->rmw = b && (!strcasecmp(b, "true") || !strcmp(b, "1"));
            if (!b || (strcasecmp(b, "true") && strcasecmp(b, "false")))
                return fail(rmw, "rmw", x->err, x->errlen, "true or false per tensor");
        }
        if (wb) {
            const char *b = scalar(wb->child[t]);
            if (!b || (strcasecmp(b, "true") && strcasecmp(b, "false")))
                return fail(wb, "wb_output", x->err, x->errlen, "true or false per tensor");
            m->wb_output = !strcasecmp(b, "true");
        }
        if (tag) {
            const char *b = scalar(tag->child[t]);
            if (!b || (rc = copy_name(m->tag, b, tag, "tag", x->err, x->errlen)))
                return rc ? rc : fail(tag, "tag", x->err, x->errlen, "an op name per tensor");
            if (!comet_cometio_find_op(x->pb, b))
                return fail(
                    tag, "tag", x->err, x->errlen, "'%s' is no operation of the problem", b);
        } else {
            strcpy(m->tag, "None");
        }
    }
    const doc *f = comet_util_doc_get(n, "factors");
    if (!f || f->kind != COMET_DOC_SEQ || f->n == 0)
        return fail(f ? f : n, "factors", x->err, x->errlen, "a list of factor rows is required");
    nd->n_rows = (int)f->n;
    if (nd->n_rows != (nd->spatial ? 2 : 1))
        return fail(f, "factors", x->err, x->errlen,
            "not expressible: %d factor rows (temporal: one; spatial: X and Y)", nd->n_rows);
    for (int r = 0; r < nd->n_rows; r++) {
        if (!scalar(f->child[r]))
            return fail(f, "factors", x->err, x->errlen, "a row is a string DIM=[...] ...");
        if ((rc = parse_factors(x, f->child[r], f->child[r]->value, nd, r)))
            return rc;
    }
    if (!nd->spatial)
        for (int t = 0; t < nd->n_move; t++)
            for (int d = 0; d < COMET_COMETIO_MAX_DIMS; d++)
                nd->move[t].factor[1][d] = 1;
    return parse_perm(x, n, nd);
}

static int parse_kv_dims(mctx *x, const doc *at, const char *field, const char *s, uint64_t *out)
{
    /* "M=a N=b K=c" (parser.cpp: one-letter dimensions) */
    const char *p = s;
    while (*p) {
        while (*p && isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        if (!p[1] || p[1] != '=')
            return fail(at, field, x->err, x->errlen, "expected D=value at '%s'", p);
        char dn[2] = { p[0], 0 };
        int d = comet_cometio_dim(x->pb, dn);
        if (d < 0)
            return fail(at, field, x->err, x->errlen, "'%s' is not a problem dimension", dn);
        p += 2;
        char tok[COMET_COMETIO_NAME];
        size_t tl = 0;
        while (*p && !isspace((unsigned char)*p) && tl + 1 < sizeof tok)
            tok[tl++] = *p++;
        tok[tl] = 0;
        int rc = resolve_u64(x->c, tok, at, field, &out[d], x->err, x->errlen);
        if (rc)
            return rc;
    }
    return 0;
}

static int parse_op(mctx *x, const doc *n, comet_cometio_node *nd)
{
    static const char *const keys[] = { "node_type", "type", "tensors", "TilePrimitive",
        "TileSteps", "Scale", "name", "compute_attributes", "child", NULL };
    const char *type, *name, *prim;
    int rc;
    if ((rc = comet_util_doc_check_keys(n, keys, x->err, x->errlen))
        || (rc = comet_util_doc_string(n, "type", NULL, &type, x->err, x->errlen))
        || (rc = comet_util_doc_string(n, "name", NULL, &name, x->err, x->errlen))
        || (rc = comet_util_doc_string(n, "TilePrimitive", NULL, &prim, x->err, x->errlen)))
        return rc;
    int t;
    for (t = 0; t < COMET_COMETIO_OPTYPES; t++)
        if (!strcasecmp(type, optype_names[t]))
            break;
    if (t == COMET_COMETIO_OPTYPES)
        return fail(comet_util_doc_get(n, "type"), "type", x->err, x->errlen,
            "'%s' is not a COMET op type (gemm, convolution, softmax, max, exp, div, add, "
            "mult, sqrt, rowsum, rowmax)",
            type);
    if (t == COMET_COMETIO_CONV)
        return fail(comet_util_doc_get(n, "type"), "type", x->err, x->errlen,
            "not expressible: convolution (comet reads GEMM and element-wise/row ops)");
    nd->op_type = (comet_cometio_optype)t;
    if ((rc = copy_name(nd->op_name, name, n, "name", x->err, x->errlen)))
        return rc;
    if (!comet_cometio_find_op(x->pb, name))
        return fail(comet_util_doc_get(n, "name"), "name", x->err, x->errlen,
            "'%s' is no operation of the problem", name);
    if ((rc = parse_kv_dims(
             x, comet_util_doc_get(n, "TilePrimitive"), "TilePrimitive", prim, nd->prim)))
        return rc;
    const doc *ot = comet_util_doc_get(n, "tensors");
    const doc *ts = comet_util_doc_get(n, "TileSteps");
    if (!ot || ot->kind != COMET_DOC_SEQ || ot->n == 0 || ot->n > COMET_COMETIO_MAX_TENSORS)
        return fail(ot ? ot : n, "tensors", x->err, x->errlen, "a list of 1..%d tensors",
            COMET_COMETIO_MAX_TENSORS);
    if (!ts || ts->kind != COMET_DOC_MAP)
        return fail(
            ts ? ts : n, "TileSteps", x->err, x->errlen, "a map of tensor: D=n ... is required");
    for (size_t i = 0; i < ot->n; i++) {
        const char *tn = scalar(ot->child[i]);
        if (!tn || (rc = copy_name(nd->op_tensor[i], tn, ot, "tensors", x->err, x->errlen)))
            return rc ? rc : fail(ot, "tensors", x->err, x->errlen, "a name is required");
        const char *st = NULL;
        if (comet_util_doc_get(ts, tn))
            st = scalar(comet_util_doc_get(ts, tn));
        if (!st)
            return fail(ts, "TileSteps", x->err, x->errlen, "no tile step for tensor %s", tn);
        if ((rc = parse_kv_dims(x, comet_util_doc_get(ts, tn), "TileSteps", st, nd->steps[i])))
            return rc;
        nd->n_op_tensor++;
    }
    nd->red_dim = -1;
    nd->red_factor = 1;
    const doc *ca = comet_util_doc_get(n, "compute_attributes");
    if (ca) {
        static const char *const ck[]
            = { "reduction_dimensions", "reduction_factors", "rmw", "specd", NULL };
        if ((rc = comet_util_doc_check_keys(ca, ck, x->err, x->errlen))
            || (rc = comet_util_doc_bool(ca, "rmw", NULL, &nd->op_rmw, x->err, x->errlen))
            || (rc = comet_util_doc_bool(ca, "specd", NULL, &nd->specd, x->err, x->errlen)))
            return rc;
        const doc *rd = comet_util_doc_get(ca, "reduction_dimensions");
        const doc *rf = comet_util_doc_get(ca, "reduction_factors");
        if (!rd || !rf || rd->kind != COMET_DOC_SEQ || rf->kind != COMET_DOC_SEQ || rd->n != rf->n)
            return fail(ca, "reduction_dimensions", x->err, x->errlen,
                "reduction_dimensions and reduction_factors: lists of equal length");
        if (rd->n > 1)
            return fail(rd, "reduction_dimensions", x->err, x->errlen,
                "not expressible: more than one reduction dimension");
        if (rd->n == 1) {
            const char *dv = scalar(rd->child[0]);
            if (!dv)
                return fail(rd, "reduction_dimensions", x->err, x->errlen, "a dimension name");
            /* parser.cpp: a one-letter entry is the dimension itself */
            const char *dn = strlen(dv) == 1 ? dv : subst(x->c, dv);
            nd->red_dim = comet_cometio_dim(x->pb, dn);
            if (nd->red_dim < 0)
                return fail(rd, "reduction_dimensions", x->err, x->errlen,
                    "'%s' is not a problem dimension", dn);
            if (!scalar(rf->child[0])
                || (rc = resolve_u64(x->c, rf->child[0]->value, rf, "reduction_factors",
                        &nd->red_factor, x->err, x->errlen)))
                return rc ? rc : fail(rf, "reduction_factors", x->err, x->errlen, "a number");
        }
    }
    return 0;
}

static int parse_coll(mctx *x, const doc *n, comet_cometio_node *nd)
{
    static const char *const keys[] = { "node_type", "tag", "target", "type", "reduction_op",
        "dimension", "src", "dest", "wb_output", "in_tensor", "out_tensor", "precision", "child",
        "spatial_factor", NULL };
    static const char *const types[]
        = { "broadcast", "reduction", "allgather", "allreduce", "scatter", "gather" };
    const char *type, *s;
    int rc;
    if ((rc = comet_util_doc_check_keys(n, keys, x->err, x->errlen))
        || (rc = comet_util_doc_string(n, "type", NULL, &type, x->err, x->errlen)))
        return rc;
    int t;
    for (t = 0; t < 6; t++)
        if (!strcasecmp(type, types[t]))
            break;
    if (t == 6)
        return fail(comet_util_doc_get(n, "type"), "type", x->err, x->errlen,
            "'%s' is not a COMET collective (broadcast, reduction, allgather, allreduce, "
            "scatter, gather)",
            type);
    nd->coll = (comet_cometio_coll)t;
    nd->red_op = COMET_COMETIO_ADD;
    if (!comet_util_doc_string(n, "reduction_op", "add", &s, x->err, x->errlen)) {
        if (!strcmp(s, "max"))
            nd->red_op = COMET_COMETIO_MAX;
        else if (!strcmp(s, "mult"))
            nd->red_op = COMET_COMETIO_MULT;
        else if (strcmp(s, "add") && strcmp(s, "sub"))
            return fail(comet_util_doc_get(n, "reduction_op"), "reduction_op", x->err, x->errlen,
                "'%s' is not max, add, sub or mult", s);
    }
    if ((rc = comet_util_doc_string(n, "target", NULL, &s, x->err, x->errlen))
        || (rc = level_ref(x, comet_util_doc_get(n, "target"), "target", s, &nd->coll_target)))
        return rc;
    if ((rc = comet_util_doc_string(n, "dimension", NULL, &s, x->err, x->errlen)))
        return rc;
    nd->coll_dim = comet_cometio_dim(x->pb, s);
    if (nd->coll_dim < 0)
        return fail(comet_util_doc_get(n, "dimension"), "dimension", x->err, x->errlen,
            "'%s' is not a problem dimension", s);
    static const char *const sd[2] = { "src", "dest" };
    for (int k = 0; k < 2; k++) {
        char names[4][COMET_COMETIO_NAME];
        int cnt;
        if ((rc = name_list(
                 comet_util_doc_get(n, sd[k]), sd[k], names, 4, &cnt, x->err, x->errlen)))
            return rc;
        for (int i = 0; i < cnt; i++)
            if ((rc = level_ref(x, comet_util_doc_get(n, sd[k]), sd[k], names[i],
                     k ? &nd->dest[i] : &nd->src[i])))
                return rc;
        *(k ? &nd->n_dest : &nd->n_src) = cnt;
    }
    if ((rc = comet_util_doc_string(n, "in_tensor", NULL, &s, x->err, x->errlen))
        || (rc = copy_name(nd->in_tensor, s, n, "in_tensor", x->err, x->errlen))
        || (rc = comet_util_doc_string(n, "out_tensor", NULL, &s, x->err, x->errlen))
        || (rc = copy_name(nd->out_tensor, s, n, "out_tensor", x->err, x->errlen)))
        return rc;
    uint64_t v = 8;
    const doc *pv = comet_util_doc_get(n, "precision");
    if (pv
        && (!scalar(pv)
            || (rc = resolve_u64(x->c, pv->value, pv, "precision", &v, x->err, x->errlen))))
        return rc ? rc : fail(pv, "precision", x->err, x->errlen, "bits");
    nd->coll_precision = (int)v;
    const doc *sf = comet_util_doc_get(n, "spatial_factor");
    nd->spatial_factor = 0;
    if (sf
        && (!scalar(sf)
            || (rc = resolve_u64(x->c, sf->value, sf, "spatial_factor", &nd->spatial_factor, x->err,
                    x->errlen))))
        return rc ? rc : fail(sf, "spatial_factor", x->err, x->errlen, "a number");
    if (!comet_util_doc_string(n, "tag", "", &s, x->err, x->errlen)
        && (rc = (*s ? copy_name(nd->tag, s, n, "tag", x->err, x->errlen) : 0)))
        return rc;
    return 0;
}

static int parse_node(mctx *x, const doc *n, comet_cometio_node *parent, comet_cometio_node **out)
{
    const char *nt;
    int rc;
    if (n->kind != COMET_DOC_MAP)
        return fail(n, "mapping", x->err, x->errlen, "a node must be a map");
    if ((rc = comet_util_doc_string(n, "node_type", NULL, &nt, x->err, x->errlen)))
        return rc;
    comet_cometio_node *nd = calloc(1, sizeof *nd);
    if (!nd)
        return -ENOMEM;
    *out = nd;
    nd->parent = parent;
    nd->line = n->line;
    if (!strcasecmp(nt, "DataMovement_Tile")) {
        nd->type = COMET_COMETIO_TILE;
        rc = parse_tile(x, n, nd);
    } else if (!strcasecmp(nt, "Operation")) {
        nd->type = COMET_COMETIO_OP;
        rc = parse_op(x, n, nd);
    } else if (!strcasecmp(nt, "CollectiveOperation")) {
        nd->type = COMET_COMETIO_COLL;
        rc = parse_coll(x, n, nd);
    } else if (!strcasecmp(nt, "inter_tile_binding")) {
        static const char *const keys[] = { "node_type", "binding", NULL };
        static const char *const b[] = { "sequential", "pipeline", "sharing", "parallel" };
        const char *bs;
        nd->type = COMET_COMETIO_BINDING;
        if (!(rc = comet_util_doc_check_keys(n, keys, x->err, x->errlen))
            && !(rc = comet_util_doc_string(n, "binding", NULL, &bs, x->err, x->errlen))) {
            int k;
            for (k = 0; k < 4; k++)
                if (!strcmp(bs, b[k]))
                    break;
            if (k == 4)
                rc = fail(comet_util_doc_get(n, "binding"), "binding", x->err, x->errlen,
                    "'%s' is not sequential, pipeline, sharing or parallel", bs);
            nd->binding = (comet_cometio_binding)k;
        }
    } else {
        rc = fail(comet_util_doc_get(n, "node_type"), "node_type", x->err, x->errlen,
            "'%s' is not DataMovement_Tile, Operation, CollectiveOperation or "
            "inter_tile_binding",
            nt);
    }
    if (rc)
        return rc;
    const doc *st = nd->type == COMET_COMETIO_TILE ? comet_util_doc_get(n, "subtree") : NULL;
    if (nd->type == COMET_COMETIO_TILE) {
        if (!st)
            return fail(n, "subtree", x->err, x->errlen,
                "a DataMovement_Tile needs a subtree (an Operation at the leaves)");
        if (st->kind == COMET_DOC_MAP) {
            nd->kid = calloc(1, sizeof *nd->kid);
            if (!nd->kid)
                return -ENOMEM;
            nd->n_kid = 1;
            return parse_node(x, st, nd, &nd->kid[0]);
        }
        if (st->kind != COMET_DOC_SEQ || st->n == 0)
            return fail(st, "subtree", x->err, x->errlen, "a node or a list of nodes is required");
        nd->kid = calloc(st->n, sizeof *nd->kid);
        if (!nd->kid)
            return -ENOMEM;
        for (size_t i = 0; i < st->n; i++) {
            nd->n_kid++;
            if ((rc = parse_node(x, st->child[i], nd, &nd->kid[i])))
                return rc;
        }
        if (nd->kid[0]->type == COMET_COMETIO_OP && nd->n_kid != 1)
            return fail(st, "subtree", x->err, x->errlen,
                "an Operation must be the only node under its tile");
    }
    return 0;
}

static void free_node(comet_cometio_node *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->n_kid; i++)
        free_node(n->kid[i]);
    free(n->kid);
    free(n);
}

/* ------------------------------------------------------------------ */
/* loading                                                            */
/* ------------------------------------------------------------------ */

static int load_doc(
    const char *path, comet_cometio_kind want, comet_util_doc **d, char *err, size_t errlen)
{
    int rc = comet_util_doc_load(path, d, err, errlen);
    if (rc)
        return rc;
    comet_cometio_kind k = comet_cometio_detect(path);
    if (k != want)
        return comet_util_seterr(err, errlen, -EINVAL, "%s:1: not a COMET %s file (it reads as %s)",
            path, comet_cometio_kind_name(want),
            k == COMET_COMETIO_NONE ? "no COMET file" : comet_cometio_kind_name(k));
    return 0;
}

int comet_cometio_load(const char *arch_path, const char *problem_path, const char *mapping_path,
    const char *consts_path, comet_cometio_inputs *in, char *err, size_t errlen)
{
    comet_util_doc *d = NULL;
    int rc;
    memset(in, 0, sizeof *in);
    if (consts_path) {
        snprintf(in->consts.file, sizeof in->consts.file, "%s", consts_path);
        if ((rc = load_doc(consts_path, COMET_COMETIO_CONSTANTS, &d, err, errlen))
            || (rc = read_consts(d, &in->consts, err, errlen)))
            goto out;
        comet_util_doc_free(d);
        d = NULL;
    }
    snprintf(in->arch.file, sizeof in->arch.file, "%s", arch_path);
    if ((rc = load_doc(arch_path, COMET_COMETIO_ARCH, &d, err, errlen))
        || (rc = read_arch(d, &in->arch, err, errlen)))
        goto out;
    comet_util_doc_free(d);
    d = NULL;
    snprintf(in->problem.file, sizeof in->problem.file, "%s", problem_path);
    if ((rc = load_doc(problem_path, COMET_COMETIO_PROBLEM, &d, err, errlen))
        || (rc = read_problem(d, &in->consts, &in->problem, err, errlen)))
        goto out;
    comet_util_doc_free(d);
    d = NULL;
    snprintf(in->mapping.file, sizeof in->mapping.file, "%s", mapping_path);
    if ((rc = load_doc(mapping_path, COMET_COMETIO_MAPPING, &d, err, errlen)))
        goto out;
    mctx x = { &in->arch, &in->problem, &in->consts, err, errlen };
    rc = parse_node(&x, comet_util_doc_get(d, "mapping"), NULL, &in->mapping.root);
out:
    comet_util_doc_free(d);
    if (rc && rc != -ENOMEM)
        rc = -EINVAL;
    if (rc)
        comet_cometio_free(in);
    return rc;
}

void comet_cometio_free(comet_cometio_inputs *in)
{
    if (!in)
        return;
    free(in->arch.compute);
    free(in->arch.memory);
    free(in->arch.level);
    free(in->arch.link);
    free(in->consts.c);
    free(in->problem.op);
    free_node(in->mapping.root);
    memset(in, 0, sizeof *in);
}
