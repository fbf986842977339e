/* COMET-compatible evaluation: COMET's latency and energy formulas over its
 * mapping tree, as its released code computes them (d-matrix-ai/comet at
 * 917af0d). File and function names in comments are COMET's. Quirks are
 * kept where they change a number (windows shared in tensor order, the
 * write port's stalls overwriting the read port's in get_node_cost, the
 * mesh hop table), because the point of this evaluation is COMET's numbers;
 * comet's own model (model/) is where the physics is argued. */
#include "comet_cometio.h"
#include "cometio_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MD COMET_COMETIO_MAX_DIMS
#define MM COMET_COMETIO_MAX_MOVES
typedef comet_cometio_node node;

/* ------------------------------------------------------------------ */
/* growable int64 vectors, all freed with the evaluation              */
/* ------------------------------------------------------------------ */

typedef struct vi {
    int64_t *v;
    size_t n;
} vi;

typedef struct ev ev;
static int vnew(ev *e, vi *x, size_t n, int64_t fill);

/* TargetChildCost (analysis/cost_info.hpp) */
typedef struct tc {
    int present; /* stall.size() > 0 */
    vi mem_net, stall, cstall, ctv;
    int64_t compute_time, cumm, ramp_up, ramp_down;
    uint64_t reuse;
    int tens_idx, hide;
    double noc_pj;
    uint64_t tile_size, access_count;
} tc;

/* one tensor's cost on both ports, with its (target, child) pair */
typedef struct pcost {
    int target, child, t;
    tc p[2];
} pcost;

/* NodeLevelCost: target level -> port costs */
typedef struct nlc {
    int n;
    int target[16];
    tc c[16][2];
} nlc;

typedef struct dmi {
    uint64_t size, uniq, count;
} dmi;

typedef struct key {
    char tensor[COMET_COMETIO_NAME], tag[COMET_COMETIO_NAME];
    uint64_t stride[MD];
    uint64_t tilesteps;
} key;

/* access_count_struct (cost_walker.hpp): one memory side or compute */
typedef struct acc {
    int level, target_child, is_compute, rw, rmw, precision;
    uint64_t access, tile, proj;
    char tensor[COMET_COMETIO_NAME], tag[COMET_COMETIO_NAME];
    double noc_pj, compute_pj;
    comet_cometio_optype op_type;
    int move; /* index of the tensor in the node */
} acc;

/* per-node analysis (LoopNode + datamovement + cost) */
typedef struct info {
    int leaf; /* temporal node above an Operation */
    uint64_t iters[MM], sp_iters[MM], rts[MM];
    int rw[MM], dep[MM];
    uint64_t stride[MM][2][MD], end[MM][2][MD];
    dmi *dm[MM];
    size_t ndm[MM];
    uint64_t reuse[MM], actual[MM];
    int64_t ramp_info[MM]; /* rampupInfo per tensor */
    int has_ramp[MM];
    nlc lc; /* parent_child_node_level_cost_map[node][group] */
    int has_lc;
    int64_t cost; /* node_cost */
    /* collective */
    uint64_t coll_size;
    double coll_read_pj, coll_write_pj, coll_noc_pj;
    /* access counts for energy */
    pcost *pc;
    int npc;
    acc *ae;
    int nae;
    uint64_t parent_iters; /* parent_iteration_count */
    double e_mem[16]; /* energy by level */
    double e_noc[16]; /* NoC energy by level (child side) */
} info;

struct ev {
    const comet_cometio_inputs *in;
    const comet_cometio_arch *a;
    const comet_cometio_problem *pb;
    node **nodes;
    info *inf;
    int n;
    key *keys;
    int nkeys;
    /* COMET's output_tensors_map_: (level, tensor) -> last row ends */
    struct {
        int level;
        char tensor[COMET_COMETIO_NAME];
        uint64_t end[MD];
    } outs[64];
    int nouts;
    void **allocs;
    size_t nallocs;
    int noc_energy;
    char *err;
    size_t errlen;
    comet_cometio_result *res;
};

static int vnew(ev *e, vi *x, size_t n, int64_t fill)
{
    void **na = realloc(e->allocs, (e->nallocs + 1) * sizeof *na);
    if (!na)
        return -ENOMEM;
    e->allocs = na;
    x->v = malloc((n ? n : 1) * sizeof *x->v);
    if (!x->v)
        return -ENOMEM;
    e->allocs[e->nallocs++] = x->v;
    for (size_t i = 0; i < n; i++)
        x->v[i] = fill;
    x->n = n;
    return 0;
}

static int vcopy(ev *e, vi *dst, const vi *src)
{
    int rc = vnew(e, dst, src->n, 0);
    if (!rc && src->n)
        memcpy(dst->v, src->v, src->n * sizeof *src->v);
    return rc;
}

static int efail(ev *e, const node *n, const char *field, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return comet_util_seterr(e->err, e->errlen, -EINVAL, "%s:%d: %s: %s", e->in->mapping.file,
        n ? n->line : 0, field, msg);
}

static int idx_of(ev *e, const node *n)
{
    for (int i = 0; i < e->n; i++)
        if (e->nodes[i] == n)
            return i;
    return -1;
}

static info *I(ev *e, const node *n)
{
    return &e->inf[idx_of(e, n)];
}

static int collect(ev *e, node *n)
{
    node **nn = realloc(e->nodes, (size_t)(e->n + 1) * sizeof *nn);
    if (!nn)
        return -ENOMEM;
    e->nodes = nn;
    e->nodes[e->n++] = n;
    for (size_t i = 0; i < n->n_kid; i++) {
        int rc = collect(e, n->kid[i]);
        if (rc)
            return rc;
    }
    return 0;
}

/* the first op (by name, as COMET's std::map orders them) with tensor */
static const comet_cometio_tensor *projection(ev *e, const char *tag, const char *tensor)
{
    const comet_cometio_op *op = comet_cometio_find_op(e->pb, tag);
    if (op)
        for (int t = 0; t < op->n_tensor; t++)
            if (!strcmp(op->tensor[t].name, tensor))
                return &op->tensor[t];
    const comet_cometio_tensor *best = NULL;
    const char *bestname = NULL;
    for (size_t o = 0; o < e->pb->n_op; o++)
        for (int t = 0; t < e->pb->op[o].n_tensor; t++)
            if (!strcmp(e->pb->op[o].tensor[t].name, tensor)
                && (!bestname || strcmp(e->pb->op[o].name, bestname) < 0)) {
                best = &e->pb->op[o].tensor[t];
                bestname = e->pb->op[o].name;
            }
    return best;
}

static int in_proj(const comet_cometio_tensor *x, int d)
{
    for (int r = 0; r < x->n_rank; r++)
        if (x->rank_dim[r] == d)
            return 1;
    return 0;
}

static uint64_t proj_size(const comet_cometio_tensor *x, const uint64_t *v)
{
    uint64_t s = 1;
    for (int r = 0; r < x->n_rank; r++)
        s *= v[x->rank_dim[r]];
    return s;
}

static key *find_key(ev *e, const char *tensor, const char *tag, int create)
{
    for (int i = 0; i < e->nkeys; i++)
        if (!strcmp(e->keys[i].tensor, tensor) && !strcmp(e->keys[i].tag, tag))
            return &e->keys[i];
    if (!create)
        return NULL;
    key *k = realloc(e->keys, (size_t)(e->nkeys + 1) * sizeof *k);
    if (!k)
        return NULL;
    e->keys = k;
    k = &e->keys[e->nkeys++];
    memset(k, 0, sizeof *k);
    snprintf(k->tensor, sizeof k->tensor, "%s", tensor);
    snprintf(k->tag, sizeof k->tag, "%s", tag);
    return k;
}

static int is_intermediate(ev *e, const char *t)
{
    for (int i = 0; i < e->pb->n_io_ins; i++)
        if (!strcmp(e->pb->io_ins[i], t))
            return 0;
    for (int i = 0; i < e->pb->n_io_outs; i++)
        if (!strcmp(e->pb->io_outs[i], t))
            return 0;
    return 1;
}

static int is_op_output(ev *e, const char *t)
{
    for (size_t o = 0; o < e->pb->n_op; o++)
        if (!strcmp(e->pb->op[o].out, t))
            return 1;
    return 0;
}

static uint64_t max_iters(const node *n, const info *f)
{
    uint64_t m = 0;
    for (int t = 0; t < n->n_move; t++)
        if (f->iters[t] > m)
            m = f->iters[t];
    return m;
}

static uint64_t prim_volume(const node *op)
{
    uint64_t v = 1;
    for (int d = 0; d < MD; d++)
        if (op->prim[d])
            v *= op->prim[d];
    return v;
}

static const comet_cometio_net *net_of(ev *e, int p, int c)
{
    return comet_cometio_net_of(e->a, p, c);
}

static const comet_cometio_memory *mem_of(ev *e, int lvl)
{
    int m = e->a->level[lvl].mem;
    return m >= 0 ? &e->a->memory[m] : NULL;
}

/* ------------------------------------------------------------------ */
/* compute latency (systolic_array.cpp, vsimd_compute.cpp,             */
/* gemm_compute.cpp)                                                   */
/* ------------------------------------------------------------------ */

static int simd_cycles(comet_cometio_optype t, double width, double *c)
{
    switch (t) {
    case COMET_COMETIO_DIV:
    case COMET_COMETIO_ADD:
    case COMET_COMETIO_MULT:
    case COMET_COMETIO_MAX:
    case COMET_COMETIO_SQRT:
    case COMET_COMETIO_SOFTMAX:
        *c = 1;
        return 0;
    case COMET_COMETIO_EXP:
        *c = 3;
        return 0;
    case COMET_COMETIO_ROWSUM:
    case COMET_COMETIO_ROWMAX:
        *c = ceil(log2(width));
        return 0;
    default:
        return -1;
    }
}

static int compute_latency(ev *e, const node *op, int level, int64_t *out)
{
    const comet_cometio_level *L = &e->a->level[level];
    if (!L->is_compute)
        return efail(e, op, "child", "level %s is not a compute engine", L->name);
    const comet_cometio_compute *c = &e->a->compute[L->comp];
    if (!strcmp(c->name, "SystolicArray")) {
        if (op->red_dim < 0)
            return efail(e, op, "reduction_dimensions",
                "a systolic array needs the streamed (reduction) dimension");
        uint64_t T = op->red_factor, rest[MD];
        int nr = 0, removed = 0;
        for (int d = 0; d < e->pb->n_dim; d++) {
            if (!op->prim[d])
                continue;
            if (!removed && op->prim[d] == T) {
                removed = 1;
                continue;
            }
            rest[nr++] = op->prim[d];
        }
        if (!removed)
            return efail(e, op, "reduction_factors",
                "the reduction factor %llu is none of the TilePrimitive's sizes",
                (unsigned long long)T);
        int64_t lat = (int64_t)(2 * c->array_rows + c->array_cols + (double)T - 2);
        uint64_t scale = 1;
        if (nr > 0)
            scale *= (uint64_t)ceil((double)rest[0] / (c->array_rows * c->num_sa_rows));
        if (nr > 1)
            scale *= (uint64_t)ceil((double)rest[1] / (c->array_cols * c->num_sa_cols));
        *out = (int64_t)scale * lat;
        return 0;
    }
    if (!strcmp(c->name, "VSIMD")) {
        double cyc;
        if (simd_cycles(op->op_type, c->compute_width, &cyc))
            return efail(e, op, "type", "%s does not run on the SIMD engine",
                comet_cometio_optype_name(op->op_type));
        double T = op->red_dim >= 0 ? (double)op->red_factor : 1;
        double inst = ceil((double)(float)((double)prim_volume(op) / (c->compute_width * T)));
        *out = (int64_t)(cyc * inst);
        return 0;
    }
    if (!strcmp(c->name, "GEMM")) {
        /* gemm_compute.cpp: startup, a reduction-hop adder, volume / 8^3 x latency */
        int64_t lat = (int64_t)c->startup_latency;
        int nd = 0;
        for (int d = 0; d < MD; d++)
            nd += op->prim[d] != 0;
        if (nd != 3) {
            *out = (int64_t)c->compute_latency;
            return 0;
        }
        if (op->specd && op->op_rmw && op->red_dim >= 0) {
            uint64_t r = op->red_factor / 256; /* kGEMMReductionFactor */
            lat += r == 16 ? 16 : r == 8 ? 12 : r == 4 ? 8 : r == 2 ? 6 : 0;
        }
        lat += (int64_t)(prim_volume(op) / 512) * (int64_t)c->compute_latency;
        *out = lat;
        return 0;
    }
    return efail(e, op, "child",
        "compute tile %s: COMET's evaluation knows SystolicArray, VSIMD and GEMM", c->name);
}

/* ------------------------------------------------------------------ */
/* network (network.cpp)                                               */
/* ------------------------------------------------------------------ */

enum { BCAST = 0, RED, AGATHER, AREDUCE, SCAT, GATH };

static int hop_table(int x, int y, uint32_t *hops)
{
    /* COLOP_HOPS_DATAMOVED: the same for broadcast, reduce, scatter, gather */
    if (x == 1 && y == 1)
        *hops = 0;
    else if (x == 2 && y == 2)
        *hops = 2;
    else if (x == 4 && y == 4)
        *hops = 6;
    else if (x == 16 && y == 16)
        *hops = 30;
    else
        return -1;
    return 0;
}

/* MeshNetwork::GetLinkLatency; -ERANGE outside COMET's hop table */
static int link_latency(const comet_cometio_net *nt, int stype, const dmi *mv, uint64_t spatial,
    float prec_bytes, int red_op, int64_t *out)
{
    *out = 0;
    if (mv->uniq == 0 || spatial == 1)
        return 0;
    uint32_t mxy = (uint32_t)ceil(sqrt((double)spatial));
    int mx = nt->mesh_x, my = nt->mesh_y; /* the network's own mesh unless a branch below */
    /* MeshNetwork: meshX/meshY given (always in our reader) */
    if ((uint32_t)nt->mesh_x >= mxy && (uint32_t)nt->mesh_y >= mxy) {
        mx = my = (int)mxy;
    } else if ((uint32_t)nt->mesh_x >= mxy) {
        my = nt->mesh_y;
        mx = (int)((spatial + (uint64_t)my - 1) / (uint64_t)my);
    } else if ((uint32_t)nt->mesh_y >= mxy) {
        mx = nt->mesh_y;
        my = (int)((spatial + (uint64_t)mx - 1) / (uint64_t)mx);
    }
    uint32_t hops;
    if (hop_table(mx, my, &hops))
        return -ERANGE;
    float prec = prec_bytes * 8;
    float W = (float)nt->channel_width, qd = (float)nt->queuing_delay;
    float tr = 0, q = 0, rop = 0;
    float Q = (float)(mv->size * hops);
    if (stype == AREDUCE || stype == AGATHER) {
        tr = (float)(hops * nt->hop_latency);
        q = ((Q * prec) / W) * qd;
        if (stype == AREDUCE && red_op >= 0)
            rop = Q * (float)spatial * 1.0f / 16.0f; /* ADD/MAX/MULT: 1 cycle, 16 lanes */
        tr += (float)(hops * nt->hop_latency);
        q += ((Q * prec) / W) * qd;
    } else {
        tr = (float)(hops * nt->hop_latency);
        if (stype == RED && red_op >= 0)
            rop = Q * (float)spatial * 1.0f / 16.0f;
        if (stype == SCAT && mv->uniq == 1)
            Q = Q / (float)spatial;
        q = ((Q * prec) / W) * qd;
    }
    *out = (int64_t)(uint64_t)(tr + q + rop);
    return 0;
}

/* ------------------------------------------------------------------ */
/* per-tile transfer (arch_cost.cpp: getSpatioTemporalLatency)         */
/* ------------------------------------------------------------------ */

static double move_noc_pj(ev *e, const node *n, int t, const dmi *mv);

static int tile_latency(
    ev *e, const node *n, int t, const dmi *mv, int rw, int64_t *mem, int64_t *net, double *noc_pj)
{
    const comet_cometio_move *m = &n->move[t];
    const comet_cometio_memory *tm = mem_of(e, m->target);
    const comet_cometio_net *nt = net_of(e, m->target, m->child);
    if (!tm)
        return efail(e, n, "target", "%s is not a memory", e->a->level[m->target].name);
    if (!nt)
        return efail(e, n, "child", "no network from %s to %s in the architecture",
            e->a->level[m->target].name, e->a->level[m->child].name);
    if (nt->is_xbar)
        return efail(e, n, "child", "not covered: an XBar network (%s -> %s)",
            e->a->level[m->target].name, e->a->level[m->child].name);
    uint64_t size = mv->size, num = mv->uniq, spatial = mv->count;
    uint64_t ports = (uint64_t)tm->ports;
    uint64_t used = num < ports ? num : ports;
    if (used < 1)
        used = 1;
    uint64_t target_bw;
    if (rw) {
        target_bw = (uint64_t)tm->child_write_bw;
        if (num == 0)
            num = 1;
    } else {
        target_bw = (uint64_t)tm->child_read_bw;
    }
    if (used < ports)
        target_bw = (target_bw / ports) * used;
    float scale = (float)m->precision / 8.0f;
    uint64_t child_bw;
    const comet_cometio_level *cl = &e->a->level[m->child];
    if (cl->is_compute) {
        child_bw = (uint64_t)nt->bw;
    } else {
        const comet_cometio_memory *cm = &e->a->memory[cl->mem];
        child_bw = (uint64_t)(rw ? cm->parent_read_bw : cm->parent_write_bw);
    }
    uint64_t nbw = (uint64_t)nt->bw;
    if (target_bw > used * nbw)
        target_bw = used * nbw;
    if (child_bw > nbw)
        child_bw = nbw;
    if (target_bw == 0 || child_bw == 0)
        return efail(e, n, "target", "a zero bandwidth between %s and %s",
            e->a->level[m->target].name, cl->name);
    int support = rw ? nt->reduction : nt->broadcast;
    uint64_t scatter = 1;
    if (!support && num != 0)
        scatter = (spatial + num - 1) / num;
    float tt = ceilf((float)scatter * (float)num * (float)size * scale / (float)target_bw);
    float tc_ = num == 0 ? 0.0f : ceilf((float)size * scale / (float)child_bw);
    if (rw && m->rmw) {
        uint64_t rbw = (uint64_t)tm->child_read_bw;
        if (used < ports)
            rbw = (rbw / ports) * used;
        tt += ceilf((float)scatter * (float)num * (float)size * scale / (float)rbw);
    }
    *mem = (int64_t)(tt > tc_ ? tt : tc_);
    int stype = mv->uniq == 1 ? (rw ? GATH : BCAST) : (rw ? GATH : SCAT);
    int rc = link_latency(nt, stype, mv, spatial, scale, -1, net);
    if (rc == -ERANGE)
        return efail(e, n, "factors",
            "%llu instances between %s and %s: COMET's hop table knows 1x1, 2x2, 4x4 and 16x16 "
            "meshes",
            (unsigned long long)spatial, e->a->level[m->target].name, cl->name);
    *noc_pj = move_noc_pj(e, n, t, mv);
    return 0;
}

/* Topology::Evaluate */
static int evaluate(
    ev *e, const node *n, int t, const vi *nsv, int hide, uint64_t reuse, int different, tc *out)
{
    info *f = I(e, n);
    int rw = f->rw[t];
    size_t num_tiles = f->ndm[t];
    size_t pseudo = !different ? num_tiles / reuse : num_tiles;
    int rc;
    if ((rc = vnew(e, &out->stall, pseudo, 0)) || (rc = vnew(e, &out->mem_net, pseudo, 0)))
        return rc;
    out->present = pseudo > 0;
    const comet_cometio_memory *tm = mem_of(e, n->move[t].target);
    int dma = tm && tm->dma_contiguous;
    int start = rw ? 1 : -1;
    out->tile_size = num_tiles ? f->dm[t][0].size : 0;
    out->access_count = pseudo;
    for (size_t idx = 0; idx < num_tiles; idx++) {
        int64_t mem = 0, net = 0;
        double pj = 0;
        if ((rc = tile_latency(e, n, t, &f->dm[t][idx], rw, &mem, &net, &pj)))
            return rc;
        int64_t eff = (!dma || idx == 0 || idx == num_tiles - 1) ? mem + net : mem;
        int64_t ns = idx < nsv->n ? nsv->v[idx] : 0;
        int64_t stall = eff == 0 ? 0 : eff - ns;
        if (!hide)
            stall = eff;
        out->noc_pj += pj;
        if (rw && reuse <= num_tiles && idx == num_tiles - reuse) {
            out->ramp_down = eff;
            continue;
        }
        if (idx == 0 && !rw) {
            out->ramp_up = eff;
            continue;
        }
        int64_t at = -1;
        if (different)
            at = (int64_t)idx + start;
        else if (idx % reuse == 0)
            at = (int64_t)(idx / reuse) + start;
        if (at >= 0 && (size_t)at < pseudo) {
            out->stall.v[at] = (int)stall;
            out->mem_net.v[at] = (int)eff;
        }
        if (different || idx % reuse == 0)
            out->cumm += eff;
    }
    return 0;
}

static uint64_t get_iterations(const dmi *d, size_t n)
{
    uint64_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += d[i].uniq != 0;
    return c;
}

/* SteadyStateWalker::get_target_child_cost */
static int target_child_cost(ev *e, const node *n, int t, int is_op, int64_t comp,
    int64_t child_cost, int hide, const vi *mem_window, pcost *out)
{
    info *f = I(e, n);
    int type = f->rw[t];
    memset(out, 0, sizeof *out);
    out->target = n->move[t].target;
    out->child = n->move[t].child;
    out->t = t;
    int64_t nst = is_op ? (int64_t)f->rts[t] * comp : child_cost;
    int different = 0;
    for (int k = 0; k < n->n_move; k++)
        different |= f->iters[k] != f->iters[0];
    uint64_t actual = get_iterations(f->dm[t], f->ndm[t]);
    uint64_t reuse = actual ? f->iters[t] / actual : 1;
    if (reuse == 0)
        reuse = 1;
    vi nsv;
    int rc = vnew(e, &nsv, mem_window->n, 0);
    if (rc)
        return rc;
    if (reuse == 1) {
        memcpy(nsv.v, mem_window->v, mem_window->n * sizeof *nsv.v);
    } else {
        for (size_t i = 0; i < mem_window->n; i++)
            if (i % reuse == 0) {
                int64_t s = 0;
                for (size_t j = i; j < i + reuse && j < mem_window->n; j++)
                    s += mem_window->v[j];
                nsv.v[i] = (int64_t)(uint32_t)s;
            }
    }
    tc *p = &out->p[type];
    if ((rc = vnew(e, &p->ctv, actual, (int64_t)(uint32_t)(nst * (int64_t)reuse))))
        return rc;
    p->reuse = reuse;
    p->tens_idx = t;
    int64_t ct = 0;
    for (size_t i = 0; i < nsv.n; i++)
        ct += nsv.v[i];
    p->compute_time = (int64_t)(uint32_t)ct;
    p->hide = hide;
    return evaluate(e, n, t, &nsv, hide, reuse, different, p);
}

/* ------------------------------------------------------------------ */
/* merging (get_node1_node2_cost, get_node_cost, get_total_node_cost)  */
/* ------------------------------------------------------------------ */

/* a std::map over (target, child) pairs: ordered as COMET's heap pointers
 * are, by the levels' creation order */
static int pair_cmp(const void *a, const void *b)
{
    const pcost *x = *(pcost *const *)a, *y = *(pcost *const *)b;
    if (x->target != y->target)
        return x->target - y->target;
    if (x->child != y->child)
        return x->child - y->child;
    return 0;
}

typedef struct usage {
    int n;
    int level[16];
    int64_t cost[16][2];
    int seen[16];
} usage;

static int64_t usage_of(const usage *u, int level, int idx)
{
    for (int i = 0; i < u->n; i++)
        if (u->level[i] == level)
            return u->cost[i][idx];
    return 0;
}

static int nlc_slot(nlc *l, int target)
{
    for (int i = 0; i < l->n; i++)
        if (l->target[i] == target)
            return i;
    /* keep ordered by level */
    int at = l->n;
    while (at > 0 && l->target[at - 1] > target) {
        l->target[at] = l->target[at - 1];
        memcpy(l->c[at], l->c[at - 1], sizeof l->c[at]);
        at--;
    }
    l->target[at] = target;
    memset(l->c[at], 0, sizeof l->c[at]);
    l->n++;
    return -1 - at;
}

static int node1_node2(ev *e, const node *n, pcost *pc, int npc, const usage *u, nlc *out)
{
    info *f = I(e, n);
    uint64_t mi = max_iters(n, f);
    int rc;
    /* stable order by (target, child), tensors in insertion order */
    pcost **ord = calloc((size_t)npc + 1, sizeof *ord);
    if (!ord)
        return -ENOMEM;
    for (int i = 0; i < npc; i++)
        ord[i] = &pc[i];
    for (int i = 1; i < npc; i++) /* insertion sort: stable */
        for (int j = i; j > 0 && pair_cmp(&ord[j - 1], &ord[j]) > 0; j--) {
            pcost *tmp = ord[j];
            ord[j] = ord[j - 1];
            ord[j - 1] = tmp;
        }
    /* mem_win_per_tensor[target]: windows in (pair, port, tensor) order */
    struct {
        int target;
        int n;
        vi w[MM * 2];
        int port[MM * 2];
        uint64_t fac[MM * 2];
    } mw[16];
    int nmw = 0;
    memset(mw, 0, sizeof mw);
    int g0 = 0;
    while (g0 < npc) {
        int g1 = g0;
        while (g1 < npc && !pair_cmp(&ord[g0], &ord[g1]))
            g1++;
        for (int idx = 0; idx < 2; idx++)
            for (int k = g0; k < g1; k++) {
                tc *p = &ord[k]->p[idx];
                if (!p->present)
                    continue;
                int child = ord[k]->child, s;
                for (s = 0; s < nmw && mw[s].target != ord[k]->target; s++)
                    ;
                if (s == nmw) {
                    if (nmw == 16)
                        goto toomany;
                    mw[nmw++].target = ord[k]->target;
                }
                vi w;
                if ((rc = vcopy(e, &w, &p->ctv)))
                    goto out;
                const comet_cometio_level *cl = &e->a->level[child];
                if (!cl->is_compute && u->n && e->a->memory[cl->mem].ports_shared) {
                    int64_t c = usage_of(u, child, idx);
                    for (size_t i = 0; i < w.n; i++)
                        w.v[i] = w.v[i] > c ? w.v[i] - c : 0;
                }
                if (mw[s].n < MM * 2) {
                    mw[s].port[mw[s].n] = idx;
                    mw[s].fac[mw[s].n] = p->reuse ? p->reuse : 1;
                    mw[s].w[mw[s].n++] = w;
                }
            }
        g0 = g1;
    }
    memset(out, 0, sizeof *out);
    int tcount[16] = { 0 };
    g0 = 0;
    while (g0 < npc) {
        int g1 = g0;
        while (g1 < npc && !pair_cmp(&ord[g0], &ord[g1]))
            g1++;
        int target = ord[g0]->target;
        int slot = nlc_slot(out, target);
        if (slot < 0) {
            slot = -1 - slot;
            for (int idx = 0; idx < 2; idx++) {
                tc *c = &out->c[slot][idx];
                memset(c, 0, sizeof *c);
                if ((rc = vnew(e, &c->stall, mi, 0)) || (rc = vnew(e, &c->cstall, mi, 0))
                    || (rc = vnew(e, &c->ctv, mi, 0)) || (rc = vnew(e, &c->mem_net, mi, 0)))
                    goto out;
                c->present = mi > 0;
            }
        }
        int s;
        for (s = 0; s < nmw && mw[s].target != target; s++)
            ;
        for (int idx = 0; idx < 2; idx++)
            for (int k = g0; k < g1; k++) {
                tc *p = &ord[k]->p[idx];
                if (!p->present)
                    continue;
                tc *c = &out->c[slot][idx];
                int tcn = tcount[slot];
                c->ramp_up += p->ramp_up;
                c->ramp_down += p->ramp_down;
                if (p->compute_time > c->compute_time)
                    c->compute_time = p->compute_time;
                if (c->reuse == 0)
                    c->reuse = 1;
                if (p->reuse > 0 && p->reuse < c->reuse)
                    c->reuse = p->reuse;
                c->cumm += p->cumm;
                c->noc_pj += p->noc_pj;
                uint64_t factor = p->reuse ? p->reuse : 1;
                vi *win = (s < nmw && tcn < mw[s].n) ? &mw[s].w[tcn] : NULL;
                size_t iters = win ? (win->n < mi ? win->n : mi) : 0;
                for (size_t i = (size_t)idx; i < iters; i++) {
                    for (uint64_t j = 0; j < factor; j++) {
                        size_t m = i * factor + j;
                        if (m < c->ctv.n && i < p->ctv.n && p->ctv.v[i] != 0) {
                            int64_t v = (int64_t)((uint32_t)p->ctv.v[i] / factor);
                            if (v > c->ctv.v[m])
                                c->ctv.v[m] = v;
                        }
                        if (!p->hide && m < c->cstall.n && i < p->ctv.n && i < p->stall.n)
                            c->cstall.v[m] += p->stall.v[i];
                        int64_t mn = i < p->mem_net.n ? p->mem_net.v[i] : 0;
                        int64_t st = (int64_t)(int32_t)((uint32_t)mn / factor
                            - (uint32_t)win->v[i] / factor);
                        if (st > 0 && m < c->stall.n)
                            c->stall.v[m] += st;
                    }
                    if (!p->hide)
                        continue;
                    /* tensors on the same target and port share the window */
                    for (int k2 = 0; k2 < mw[s].n; k2++) {
                        if (k2 == tcn || mw[s].port[k2] != idx)
                            continue;
                        uint64_t kf = mw[s].fac[k2];
                        for (uint64_t j = 0; j < factor; j++) {
                            size_t nn = (size_t)((j + i * factor) / kf);
                            if (nn < mw[s].w[k2].n && i < p->mem_net.n) {
                                int64_t tmp = mw[s].w[k2].v[nn] - p->mem_net.v[i] / (int64_t)factor;
                                mw[s].w[k2].v[nn] = tmp < 0 ? 0 : tmp;
                            }
                        }
                    }
                }
                tcount[slot]++;
            }
        g0 = g1;
    }
    rc = 0;
    goto out;
toomany:
    rc = efail(e, n, "target", "more than 16 target levels at one node");
out:
    free(ord);
    return rc;
}

/* get_node_cost + get_total_node_cost */
static int64_t node_total(ev *e, const node *n, const nlc *l, uint64_t mi)
{
    (void)e;
    (void)n;
    int64_t *stall = calloc(mi ? mi : 1, sizeof *stall);
    if (!stall)
        return -1;
    int64_t ru = 0, rd = 0, ct = 0;
    for (int a = 0; a < l->n; a++)
        for (int idx = 0; idx < 2; idx++) {
            const tc *c = &l->c[a][idx];
            if (!c->present || c->compute_time == 0)
                continue;
            if (c->ramp_up > ru)
                ru = c->ramp_up;
            if (c->ramp_down > rd)
                rd = c->ramp_down;
            if (c->compute_time > ct)
                ct = c->compute_time;
            uint64_t factor = c->reuse ? c->reuse : 1;
            for (uint64_t i = (uint64_t)idx; i < mi; i++) {
                if (i % factor)
                    continue;
                size_t si = (size_t)(i / factor);
                int64_t v = (si < c->stall.n ? c->stall.v[si] : 0)
                    + (si < c->cstall.n ? c->cstall.v[si] : 0);
                if (a == 0)
                    stall[i] = v;
                else if (v > stall[i])
                    stall[i] = v;
            }
        }
    int64_t s = 0;
    for (uint64_t i = 0; i < mi; i++)
        s += stall[i];
    free(stall);
    return (int64_t)(uint32_t)(ct + ru + rd + (int64_t)(uint32_t)s);
}

/* ------------------------------------------------------------------ */
/* loop nest (LoopNestConstructor) and data movement                   */
/* ------------------------------------------------------------------ */

static int nest(ev *e, node *n)
{
    int rc;
    for (size_t k = 0; k < n->n_kid; k++)
        if ((rc = nest(e, n->kid[k])))
            return rc;
    info *f = I(e, n);
    if (n->type == COMET_COMETIO_OP) {
        for (int i = 0; i < n->n_op_tensor; i++) {
            key *k = find_key(e, n->op_tensor[i], n->op_name, 1);
            if (!k)
                return -ENOMEM;
            uint64_t acc = 1;
            for (int d = 0; d < e->pb->n_dim; d++) {
                k->stride[d] = n->steps[i][d] ? n->steps[i][d] : 1;
                if (n->op_type == COMET_COMETIO_GEMM && n->prim[d])
                    acc *= k->stride[d] / n->prim[d];
            }
            k->tilesteps = n->op_type == COMET_COMETIO_GEMM ? acc : 1;
        }
        return 0;
    }
    if (n->type == COMET_COMETIO_COLL) {
        /* the in tensor's size at the target level, as the last node that
         * wrote it there left it (output_tensors_map_) */
        const comet_cometio_tensor *x = projection(e, "", n->in_tensor);
        int o;
        for (o = e->nouts - 1; o >= 0; o--)
            if (e->outs[o].level == n->coll_target && !strcmp(e->outs[o].tensor, n->in_tensor))
                break;
        if (o < 0 || !x)
            return efail(e, n, "in_tensor",
                "%s is not produced at %s by an earlier node (COMET sizes a collective from it)",
                n->in_tensor, e->a->level[n->coll_target].name);
        f->coll_size = proj_size(x, e->outs[o].end);
        return 0;
    }
    if (n->type != COMET_COMETIO_TILE)
        return 0;
    f->leaf = n->n_kid == 1 && n->kid[0]->type == COMET_COMETIO_OP;
    for (int t = 0; t < n->n_move; t++) {
        const comet_cometio_move *m = &n->move[t];
        key *k = find_key(e, m->tensor, m->tag, 0);
        if (!k)
            return efail(e, n, "tag", "tensor %s tagged %s reaches no Operation %s below this node",
                m->tensor, m->tag, m->tag);
        f->rts[t] = k->tilesteps;
        const comet_cometio_op *op = comet_cometio_find_op(e->pb, m->tag);
        f->rw[t] = 1;
        if (op)
            for (int i = 0; i < op->n_tensor; i++)
                if (!strcmp(op->tensor[i].name, m->tensor))
                    f->rw[t] = op->tensor[i].rw;
        f->dep[t] = is_intermediate(e, m->tensor);
        f->iters[t] = f->sp_iters[t] = 1;
        for (int r = 0; r < n->n_rows; r++)
            for (int d = 0; d < e->pb->n_dim; d++) {
                uint64_t fac = m->factor[r][d];
                f->stride[t][r][d] = k->stride[d];
                f->end[t][r][d] = k->stride[d] * fac;
                k->stride[d] *= fac;
                if (!n->spatial) {
                    k->tilesteps *= fac;
                    f->iters[t] *= fac;
                } else {
                    f->sp_iters[t] *= fac;
                }
            }
        for (int r = n->n_rows; r < 2; r++)
            for (int d = 0; d < e->pb->n_dim; d++) {
                f->stride[t][r][d] = f->stride[t][n->n_rows - 1][d];
                f->end[t][r][d] = f->end[t][n->n_rows - 1][d];
            }
        if (is_op_output(e, m->tensor)) {
            int o;
            for (o = 0; o < e->nouts; o++)
                if (e->outs[o].level == m->target && !strcmp(e->outs[o].tensor, m->tensor))
                    break;
            if (o == e->nouts) {
                if (e->nouts == 64)
                    return efail(e, n, "tensors", "more than 64 output tensors");
                e->nouts++;
            }
            e->outs[o].level = m->target;
            snprintf(e->outs[o].tensor, sizeof e->outs[o].tensor, "%s", m->tensor);
            memcpy(e->outs[o].end, f->end[t][n->n_rows - 1], sizeof e->outs[o].end);
        }
    }
    return 0;
}

/* odometer digits of iteration idx over the loop order (inner first) */
static void digits(const node *n, const uint64_t *fac, uint64_t idx, uint64_t *dig)
{
    for (int p = 0; p < n->n_perm; p++) {
        int d = n->perm[p];
        uint64_t r = fac[d] ? fac[d] : 1;
        dig[d] = idx % r;
        idx /= r;
    }
}

static int movement(ev *e, node *n)
{
    int rc;
    info *f = I(e, n);
    if (n->type == COMET_COMETIO_TILE) {
        int last_ci = 0;
        for (int t = 0; t < n->n_move; t++) {
            const comet_cometio_tensor *x = projection(e, n->move[t].tag, n->move[t].tensor);
            if (!n->spatial) {
                uint64_t fac[MD], prev[MD] = { 0 }, dig[MD] = { 0 };
                for (int d = 0; d < MD; d++)
                    fac[d] = n->move[t].factor[0][d] ? n->move[t].factor[0][d] : 1;
                f->ndm[t] = f->iters[t];
                f->dm[t] = calloc(f->ndm[t] ? f->ndm[t] : 1, sizeof *f->dm[t]);
                if (!f->dm[t])
                    return -ENOMEM;
                for (uint64_t i = 0; i < f->iters[t]; i++) {
                    digits(n, fac, i, dig);
                    int changed = i == 0;
                    for (int d = 0; d < e->pb->n_dim && !changed; d++)
                        changed = dig[d] != prev[d] && in_proj(x, d);
                    f->dm[t][i].size = proj_size(x, f->stride[t][0]);
                    f->dm[t][i].uniq = changed ? 1 : 0;
                    f->dm[t][i].count = 1;
                    memcpy(prev, dig, sizeof prev);
                }
            } else {
                node *p = n->parent;
                if (!p || p->type != COMET_COMETIO_TILE || p->spatial)
                    return efail(e, n, "type",
                        "not covered: a spatial level whose parent is not a temporal level");
                info *pf = I(e, p);
                int ci, found = 0;
                for (ci = 0; ci < p->n_move; ci++)
                    if (!strcmp(p->move[ci].tensor, n->move[t].tensor)
                        && !strcmp(p->move[ci].tag, n->move[t].tag)) {
                        found = 1;
                        break;
                    }
                if (!found) {
                    /* data_movement.cpp reads child_idx unset here (C, the
                     * GEMM's output, lives only in the output buffers); its
                     * build reuses the previous tensor's index, and the
                     * tensor keeps its own iteration count */
                    if (t == 0)
                        return efail(e, n, "tensors",
                            "%s (tag %s) is not moved by the temporal level above (line %d)",
                            n->move[t].tensor, n->move[t].tag, p->line);
                    ci = last_ci;
                } else if (n->move[t].target == p->move[ci].target) {
                    f->iters[t] = pf->iters[ci];
                }
                last_ci = ci;
                uint64_t nt = pf->iters[ci];
                f->ndm[t] = nt;
                f->dm[t] = calloc(nt ? nt : 1, sizeof *f->dm[t]);
                if (!f->dm[t])
                    return -ENOMEM;
                uint64_t uniq = 1;
                for (int r = 0; r < x->n_rank; r++) {
                    int d = x->rank_dim[r];
                    uniq *= n->move[t].factor[0][d] * n->move[t].factor[1][d];
                }
                uint64_t prev_size = 0;
                for (uint64_t i = 0; i < nt; i++) {
                    if (i != 0 && pf->dm[ci][i].uniq == 0) {
                        f->dm[t][i] = pf->dm[ci][i];
                        f->dm[t][i].count = f->sp_iters[t];
                        f->dm[t][i].size = prev_size;
                    } else {
                        f->dm[t][i].size = proj_size(x, f->stride[t][0]);
                        f->dm[t][i].uniq = uniq;
                        f->dm[t][i].count = f->sp_iters[t];
                        prev_size = f->dm[t][i].size;
                    }
                }
            }
        }
        /* reuse and actual iterations (visitDataMovementTileNode) */
        for (int t = 0; t < n->n_move; t++) {
            f->actual[t] = get_iterations(f->dm[t], f->ndm[t]);
            f->reuse[t] = f->actual[t] ? f->iters[t] / f->actual[t] : 1;
            if (f->reuse[t] == 0)
                f->reuse[t] = 1;
        }
    }
    for (size_t k = 0; k < n->n_kid; k++)
        if ((rc = movement(e, n->kid[k])))
            return rc;
    return 0;
}

/* ------------------------------------------------------------------ */
/* collectives (Topology::EvaluateCollectiveOperation)                 */
/* ------------------------------------------------------------------ */

static int collective(ev *e, node *n, int64_t *cycles)
{
    info *f = I(e, n);
    int tl = n->coll_target;
    const comet_cometio_net *ln = net_of(e, tl, tl);
    const comet_cometio_memory *m = mem_of(e, tl);
    if (!ln || !m)
        return efail(e, n, "target",
            "%s has no link network (link_transfers: true) for collectives", e->a->level[tl].name);
    if (ln->is_xbar)
        return efail(e, n, "target", "not covered: an XBar link network");
    uint64_t src = 1, dst = 1;
    for (int i = 0; i < n->n_src; i++)
        src *= (uint64_t)e->a->level[n->src[i]].instances;
    for (int i = 0; i < n->n_dest; i++)
        dst *= (uint64_t)e->a->level[n->dest[i]].instances;
    uint64_t sf = n->spatial_factor ? n->spatial_factor : src;
    double scale = (float)n->coll_precision / 8.0;
    double rs = (double)f->coll_size, ws = rs;
    if (n->coll == COMET_COMETIO_GATHER || n->coll == COMET_COMETIO_ALLGATHER) {
        /* the output grows by the sources along the dimension */
        ws = rs * (double)src;
    }
    double lr = m->link_read_bw, lw = m->link_write_bw, lp = ln->bw;
    double width = m->width, rc_ = m->child_read_pj, wc = m->child_write_pj;
    double mem_wbw = m->child_write_bw;
    dmi rd = { f->coll_size, 1, 1 };
    static const int map[6] = { BCAST, RED, AGATHER, AREDUCE, SCAT, GATH };
    int red = n->coll == COMET_COMETIO_REDUCTION || n->coll == COMET_COMETIO_ALLREDUCE ? 1 : -1;
    int64_t net = 0;
    int rc = link_latency(ln, map[n->coll], &rd, src, (float)scale, red, &net);
    if (rc == -ERANGE)
        return efail(e, n, "src",
            "%llu instances: COMET's hop table knows 1x1, 2x2, 4x4 and 16x16 meshes",
            (unsigned long long)src);
    double mem = 0, re = 0, we = 0;
    double redc = m->reduction_cost;
    switch (n->coll) {
    case COMET_COMETIO_GATHER: {
        double ports = 1; /* link network ports */
        double np = ports < (double)(src - 1) ? ports : (double)(src - 1);
        lr = fmin(lr, lp);
        lw = fmin(fmin(lw, np * lp), mem_wbw);
        double tr = ceil(rs * scale / lr);
        double tw = ceil((double)(src - 1) * ws * scale / (lw * (double)src));
        mem = fmax(tw, tr);
        re = rs * scale / width * rc_;
        we = (double)(src - 1) * rs * scale / width * wc;
        break;
    }
    case COMET_COMETIO_BROADCAST: {
        lr = fmin(lr, lp);
        lw = fmin(lw, lp);
        double tw = ceil(rs * scale / lw), tr;
        we = (double)(dst - 1) * rs * scale / width * wc;
        if (ln->broadcast) {
            tr = ceil(rs * scale / lr);
            re = rs * scale / width * rc_;
        } else {
            tr = ceil(rs * scale / lr * (double)dst);
            re = (double)dst * rs * scale / width * rc_;
        }
        mem = fmax(tr, tw);
        break;
    }
    case COMET_COMETIO_REDUCTION: {
        lr = fmin(lr, lp);
        lw = fmin(lw, lp);
        double rb = rs * scale / lr, wb = rs * scale / lw;
        re = rs * scale * (double)src / width * rc_;
        we = rs * scale / width * wc;
        if (ln->reduction) {
            mem = ceil(rb + wb + wb * redc);
        } else {
            double k = (double)(src - 1);
            mem = ceil(fmax(rb * k, wb * k) + wb * redc);
            re *= k;
            we *= k;
        }
        break;
    }
    case COMET_COMETIO_ALLGATHER: {
        lr = fmin(lr, lp);
        lw = fmin(lw, lp);
        double rb = rs * (double)src * scale / lr, wb = rs * (double)src * scale / lw;
        re = rs * (double)src * scale / width * rc_;
        we = rs * (double)src * scale / width * wc;
        if (ln->broadcast) {
            mem = ceil(wb * (double)sf);
            we *= (double)sf;
        } else {
            mem = ceil(fmax(ceil(wb * (double)sf), ceil(rb * (double)sf)));
            re *= (double)sf;
            we *= (double)sf;
        }
        break;
    }
    case COMET_COMETIO_ALLREDUCE: {
        lr = fmin(lr, lp);
        lw = fmin(lw, lp);
        double rb = rs * (double)src * scale / lr, wb = ws * (double)src * scale / lw;
        re = rs * (double)src * scale / width * rc_;
        we = ws * (double)src * scale / width * wc;
        if (ln->broadcast && ln->reduction) {
            mem = ceil(wb + rb + wb * redc);
        } else if (ln->broadcast) {
            mem = ceil((wb + rb) * (double)sf + wb * redc);
            re *= (double)sf;
            we *= (double)sf;
        } else {
            mem = ceil((2 * rb + wb) * (double)sf + wb * redc);
            re *= (double)sf * 2;
            we *= (double)sf;
        }
        break;
    }
    case COMET_COMETIO_SCATTER: {
        double s = (double)dst;
        if (dst < 2)
            return efail(e, n, "dest", "a scatter needs more than one destination");
        double np = fmin(1, s - 1);
        lr = fmin(lr, np * lp);
        lw = fmin(lw, lp);
        mem = ceil((s - 1) * rs * scale / (lr * s)) + ceil(ws * scale / (s * lw));
        re = (s - 1) * rs * scale / (s * width) * rc_;
        we = ws * scale / width * wc;
        break;
    }
    }
    f->coll_read_pj = re;
    f->coll_write_pj = we;
    *cycles = (int64_t)mem + net;
    return 0;
}

/* ------------------------------------------------------------------ */
/* the cost walk (SteadyStateWalker::visitDataMovementTileNode)        */
/* ------------------------------------------------------------------ */

static int add_pc(ev *e, info *f, const pcost *p)
{
    pcost *q = realloc(f->pc, (size_t)(f->npc + 1) * sizeof *q);
    if (!q)
        return -ENOMEM;
    f->pc = q;
    f->pc[f->npc++] = *p;
    (void)e;
    return 0;
}

static int add_acc(info *f, const acc *a)
{
    acc *q = realloc(f->ae, (size_t)(f->nae + 1) * sizeof *q);
    if (!q)
        return -ENOMEM;
    f->ae = q;
    f->ae[f->nae++] = *a;
    return 0;
}

/* the entries visitDataMovementTileNode records for one tensor */
static int record(ev *e, const node *n, int t, const pcost *p, int child_side)
{
    info *f = I(e, n);
    const tc *c = &p->p[f->rw[t]];
    acc a;
    memset(&a, 0, sizeof a);
    a.level = n->move[t].target;
    a.target_child = 1;
    a.rw = f->rw[t];
    a.rmw = n->move[t].rmw;
    a.precision = n->move[t].precision;
    a.access = c->access_count;
    a.tile = c->tile_size;
    a.proj = f->ndm[t] && f->dm[t][0].uniq ? f->dm[t][0].uniq : 1;
    snprintf(a.tensor, sizeof a.tensor, "%s", n->move[t].tensor);
    snprintf(a.tag, sizeof a.tag, "%s", n->move[t].tag);
    a.move = t;
    int rc = add_acc(f, &a);
    if (rc || !child_side)
        return rc;
    a.level = n->move[t].child;
    a.target_child = 0;
    a.noc_pj = c->noc_pj;
    return add_acc(f, &a);
}

static int has_tag(const node *c, const char *tag)
{
    for (int t = 0; t < c->n_move; t++)
        if (!strcmp(c->move[t].tag, tag))
            return 1;
    return 0;
}

/* rampupInfo: the tensors of the target level with the largest ramp-up */
static void ramp_info(const node *n, info *f)
{
    int64_t best = -1;
    int best_level = -1;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < f->npc; i++) {
            int lvl = f->pc[i].target;
            int64_t sum = 0;
            for (int j = 0; j < f->npc; j++)
                if (f->pc[j].target == lvl && !f->rw[f->pc[j].t])
                    sum += f->pc[j].p[0].ramp_up;
            if (pass == 0 && sum > best) {
                best = sum;
                best_level = lvl;
            }
            if (pass == 1 && sum == best && !f->rw[f->pc[i].t]) {
                f->ramp_info[f->pc[i].t] = f->pc[i].p[0].ramp_up;
                f->has_ramp[f->pc[i].t] = 1;
            }
        }
    (void)n;
    (void)best_level;
}

/* get_mem_win_vector (perfect_pipeline is false in COMET's build) */
static void mem_win_adjust(ev *e, const node *n, node *const *group, int ng, vi *w)
{
    info *f = I(e, n);
    for (int g = 0; g < ng; g++) {
        const node *c = group[g];
        if (c->type != COMET_COMETIO_TILE)
            continue;
        const node *targets[64];
        int nt = 0;
        if (ng > 1 || I(e, c)->leaf)
            targets[nt++] = c;
        else
            for (size_t k = 0; k < c->n_kid && nt < 64; k++)
                if (c->kid[k]->type == COMET_COMETIO_TILE)
                    targets[nt++] = c->kid[k];
        for (int q = 0; q < nt; q++) {
            const node *cc = targets[q];
            info *cf = I(e, cc);
            for (int t = 0; t < n->n_move; t++) {
                if (f->reuse[t] == 1)
                    continue;
                for (int u = 0; u < cc->n_move; u++) {
                    if (strcmp(cc->move[u].tensor, n->move[t].tensor)
                        || strcmp(cc->move[u].tag, n->move[t].tag) || cf->actual[u] != 1)
                        continue;
                    for (size_t i = 0; i < w->n; i++)
                        if (i % f->reuse[t] != 0)
                            w->v[i] -= cf->has_ramp[u] ? cf->ramp_info[u] : 0;
                }
            }
        }
    }
}

/* get_port_level_cost: what a child's own transfers take from the ports of
 * the memories it shares with its parent */
static void port_usage_add(usage *u, const nlc *l)
{
    for (int a = 0; a < l->n; a++) {
        int s;
        for (s = 0; s < u->n && u->level[s] != l->target[a]; s++)
            ;
        if (s == u->n) {
            if (u->n == 16)
                return;
            u->level[u->n] = l->target[a];
            u->cost[s][0] = u->cost[s][1] = 0;
            u->n++;
        }
        for (int idx = 0; idx < 2; idx++) {
            u->cost[s][1 - idx] += l->c[a][idx].cumm;
            u->cost[s][1 - idx] += idx == 0 ? l->c[a][idx].ramp_up : l->c[a][idx].ramp_down;
        }
    }
}

static void port_usage(ev *e, node *const *group, int ng, usage *u)
{
    memset(u, 0, sizeof *u);
    for (int g = 0; g < ng; g++) {
        node *c = group[g];
        info *cf = I(e, c);
        if (ng > 1 || c->type == COMET_COMETIO_COLL || cf->leaf) {
            if (cf->has_lc)
                port_usage_add(u, &cf->lc);
            continue;
        }
        for (size_t k = 0; k < c->n_kid; k++)
            if (c->kid[k]->type != COMET_COMETIO_BINDING && I(e, c->kid[k])->has_lc)
                port_usage_add(u, &I(e, c->kid[k])->lc);
    }
}

static int binding_at_parent(const node *n)
{
    const node *p = n->parent;
    if (!p)
        return -1;
    for (size_t k = 0; k < p->n_kid; k++)
        if (p->kid[k]->type == COMET_COMETIO_BINDING)
            return (int)p->kid[k]->binding;
    return -1;
}

static int walk(ev *e, node *n)
{
    int rc;
    for (size_t k = 0; k < n->n_kid; k++)
        if ((rc = walk(e, n->kid[k])))
            return rc;
    info *f = I(e, n);
    if (n->type == COMET_COMETIO_COLL) {
        int64_t c = 0;
        if ((rc = collective(e, n, &c)))
            return rc;
        f->cost = c;
        memset(&f->lc, 0, sizeof f->lc);
        f->lc.n = 1;
        f->lc.target[0] = n->coll_target;
        for (int idx = 0; idx < 2; idx++) {
            f->lc.c[0][idx].cumm = c;
            f->lc.c[0][idx].present = 1;
        }
        f->has_lc = 1;
        return 0;
    }
    if (n->type != COMET_COMETIO_TILE)
        return 0;
    for (size_t k = 0; k < n->n_kid; k++)
        if (n->kid[k]->type == COMET_COMETIO_BINDING
            && n->kid[k]->binding != COMET_COMETIO_SEQUENTIAL)
            return efail(e, n->kid[k], "binding",
                "not covered: COMET's pipeline/sharing/parallel bindings (sequential only)");
    uint64_t mi = max_iters(n, f);
    if (f->leaf) {
        const node *op = n->kid[0];
        for (int t = 0; t < n->n_move; t++) {
            int64_t comp = 0;
            if ((rc = compute_latency(e, op, n->move[t].child, &comp)))
                return rc;
            vi w;
            if ((rc = vnew(e, &w, mi, comp)))
                return rc;
            pcost p;
            if ((rc = target_child_cost(e, n, t, 1, comp, 0, 1, &w, &p)) || (rc = add_pc(e, f, &p))
                || (rc = record(e, n, t, &p, 0)))
                return rc;
        }
        {
            acc a;
            memset(&a, 0, sizeof a);
            uint64_t mx = 0;
            for (int i = 0; i < f->nae; i++)
                mx = f->ae[i].access > mx ? f->ae[i].access : mx;
            a.level = n->move[0].child;
            a.is_compute = 1;
            a.access = mx;
            a.rmw = n->move[0].rmw;
            a.op_type = op->op_type;
            snprintf(a.tag, sizeof a.tag, "%s", n->move[0].tag);
            snprintf(a.tensor, sizeof a.tensor, "%s", n->move[0].tensor);
            a.compute_pj = (double)(float)((double)prim_volume(op) * 0.2296);
            if ((rc = add_acc(f, &a)))
                return rc;
        }
        ramp_info(n, f);
        usage u;
        memset(&u, 0, sizeof u);
        if ((rc = node1_node2(e, n, f->pc, f->npc, &u, &f->lc)))
            return rc;
        f->has_lc = 1;
        f->cost = node_total(e, n, &f->lc, mi);
        return f->cost < 0 ? -ENOMEM : 0;
    }
    node *group[64];
    int ng = 0, nbind = 0;
    int64_t window = 0;
    for (size_t k = 0; k < n->n_kid && ng < 64; k++) {
        if (n->kid[k]->type == COMET_COMETIO_BINDING) {
            nbind++;
            continue;
        }
        group[ng++] = n->kid[k];
        window += I(e, n->kid[k])->cost;
    }
    if (!n->spatial) {
        /* get_temporal_node_cost1: the children's costs in sequence, each
         * collective once per iteration of this level */
        int64_t c = 0;
        for (int g = 0; g < ng; g++)
            c += group[g]->type == COMET_COMETIO_COLL && nbind ? (int64_t)mi * I(e, group[g])->cost
                                                               : I(e, group[g])->cost;
        f->cost = (int64_t)(uint32_t)c;
        return 0;
    }
    if (nbind == 0 && ng != 1)
        return efail(
            e, n, "subtree", "several subtrees need inter_tile_binding nodes between them");
    vi w;
    if ((rc = vnew(e, &w, mi, (int64_t)(uint32_t)window)))
        return rc;
    mem_win_adjust(e, n, group, ng, &w);
    int bap = binding_at_parent(n);
    int matched = 0;
    for (int g = 0; g < ng; g++) {
        node *c = group[g];
        int tile = c->type == COMET_COMETIO_TILE;
        for (int t = 0; t < n->n_move; t++) {
            int hide;
            if (!tile)
                hide = 0;
            else if (ng > 1 || bap == COMET_COMETIO_SEQUENTIAL)
                hide = !f->dep[t];
            else
                hide = 1;
            int cond = tile ? has_tag(c, n->move[t].tag) : !strcmp(n->move[t].tag, c->tag);
            if (!cond)
                continue;
            pcost p;
            if ((rc = target_child_cost(e, n, t, 0, 0, (int64_t)(uint32_t)window, hide, &w, &p))
                || (rc = add_pc(e, f, &p)) || (rc = record(e, n, t, &p, 1)))
                return rc;
            matched++;
        }
    }
    if (!matched)
        return efail(e, n, "tensors",
            "no tensor of this spatial level is moved by the level below (COMET then charges only "
            "the child's compute; not covered)");
    ramp_info(n, f);
    usage u;
    memset(&u, 0, sizeof u);
    int shared = 0;
    for (int t = 0; t < n->n_move; t++) {
        const comet_cometio_level *cl = &e->a->level[n->move[t].child];
        shared |= !cl->is_compute && e->a->memory[cl->mem].ports_shared;
    }
    if (shared)
        port_usage(e, group, ng, &u);
    if ((rc = node1_node2(e, n, f->pc, f->npc, &u, &f->lc)))
        return rc;
    f->has_lc = 1;
    f->cost = node_total(e, n, &f->lc, mi);
    return f->cost < 0 ? -ENOMEM : 0;
}

/* ------------------------------------------------------------------ */
/* totals (nest_analysis.cpp: PrintPreciseCycleBreakDown)              */
/* ------------------------------------------------------------------ */

static void add_term(comet_cometio_result *r, const char *unit, double cs, double os, double tmw)
{
    int i;
    for (i = 0; i < r->n_term; i++)
        if (!strcmp(r->term[i].unit, unit))
            break;
    if (i == r->n_term) {
        if (r->n_term == COMET_COMETIO_MAX_TERMS)
            i = r->n_term - 1;
        else
            r->n_term++;
        snprintf(r->term[i].unit, sizeof r->term[i].unit, "%s", unit);
    }
    r->term[i].cs += cs;
    r->term[i].os += os;
    r->term[i].tmw += tmw;
}

/* iters_all: product of the temporal levels above n; iters_up: the same
 * without n's own parent when that parent is temporal (a spatial level's
 * cost already walks its parent's iterations) */
static void totals(ev *e, node *n, uint64_t iters_all, uint64_t iters_up)
{
    info *f = I(e, n);
    comet_cometio_result *r = e->res;
    if (n->type == COMET_COMETIO_COLL) {
        /* parent_iteration_count, as estimate_energy sets it */
        double c = (double)f->cost * (double)f->parent_iters;
        (void)iters_all;
        char unit[160];
        snprintf(unit, sizeof unit, "%s-%s%s%s", comet_cometio_coll_name(n->coll),
            n->coll == COMET_COMETIO_ALLREDUCE || n->coll == COMET_COMETIO_REDUCTION
                ? comet_cometio_optype_name(n->red_op)
                : "",
            n->tag[0] ? "-" : "", n->tag);
        for (char *p = unit; *p; p++)
            if (*p >= 'a' && *p <= 'z' && p < unit + strlen(comet_cometio_coll_name(n->coll)))
                *p = (char)(*p - 'a' + 'A');
        add_term(r, unit, 0, c, 0);
        r->cycles += c;
        return;
    }
    if (n->type != COMET_COMETIO_TILE)
        return;
    if (n->spatial || f->leaf) {
        uint64_t it = n->spatial ? iters_up : iters_all;
        int64_t cs0 = 0, cs1 = 0, ct = 0;
        char unit[160] = "";
        for (int a = 0; a < f->lc.n; a++) {
            const tc *c = f->lc.c[a];
            int64_t v0 = c[0].ramp_up + c[0].ramp_down, v1 = c[1].ramp_up + c[1].ramp_down;
            cs0 = v0 > cs0 ? v0 : cs0;
            cs1 = v1 > cs1 ? v1 : cs1;
            int64_t m
                = c[0].compute_time > c[1].compute_time ? c[0].compute_time : c[1].compute_time;
            ct = m > ct ? m : ct;
            size_t ul = strlen(unit);
            snprintf(unit + ul, sizeof unit - ul, "%s-", e->a->level[f->lc.target[a]].name);
        }
        int64_t cs = cs0 + cs1;
        int64_t os = f->cost - cs - ct;
        if (os < 0)
            os = 0;
        add_term(r, unit, (double)cs * (double)it, (double)os * (double)it, 0);
        r->cycles += (double)(cs + os) * (double)it;
        if (f->leaf) {
            add_term(r, n->kid[0]->op_name, 0, 0, (double)ct * (double)it);
            r->cycles += (double)ct * (double)it;
        }
    }
    uint64_t mine = n->spatial ? 1 : max_iters(n, f);
    for (size_t k = 0; k < n->n_kid; k++)
        totals(e, n->kid[k], iters_all * mine, iters_all);
}

static int energy(ev *e, node *n);

int comet_cometio_evaluate(const comet_cometio_inputs *in, int noc_energy,
    comet_cometio_result *out, char *err, size_t errlen)
{
    ev e;
    int rc;
    memset(&e, 0, sizeof e);
    memset(out, 0, sizeof *out);
    e.in = in;
    e.a = &in->arch;
    e.pb = &in->problem;
    e.err = err;
    e.errlen = errlen;
    e.res = out;
    e.noc_energy = noc_energy;
    if (!in->mapping.root)
        return comet_util_seterr(err, errlen, -EINVAL, "no mapping");
    if ((rc = collect(&e, in->mapping.root)))
        goto out;
    e.inf = calloc((size_t)e.n, sizeof *e.inf);
    if (!e.inf) {
        rc = -ENOMEM;
        goto out;
    }
    if ((rc = nest(&e, in->mapping.root)) || (rc = movement(&e, in->mapping.root))
        || (rc = walk(&e, in->mapping.root)))
        goto out;
    if ((rc = energy(&e, in->mapping.root)))
        goto out;
    totals(&e, in->mapping.root, 1, 1);
out:
    if (e.inf)
        for (int i = 0; i < e.n; i++) {
            for (int t = 0; t < MM; t++)
                free(e.inf[i].dm[t]);
            free(e.inf[i].pc);
            free(e.inf[i].ae);
        }
    for (size_t i = 0; i < e.nallocs; i++)
        free(e.allocs[i]);
    free(e.allocs);
    free(e.inf);
    free(e.nodes);
    free(e.keys);
    return rc;
}

/* ------------------------------------------------------------------ */
/* energy (SteadyStateWalker::estimate_energy)                         */
/* ------------------------------------------------------------------ */

/* map<tag, map<tensor, uint32>> as a small table */
typedef struct cmap {
    int n;
    struct {
        char tag[COMET_COMETIO_NAME], tensor[COMET_COMETIO_NAME];
        uint64_t v;
    } e[96];
} cmap;

static uint64_t *cm_get(cmap *m, const char *tag, const char *tensor, int create)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->e[i].tag, tag) && !strcmp(m->e[i].tensor, tensor))
            return &m->e[i].v;
    if (!create || m->n == 96)
        return NULL;
    snprintf(m->e[m->n].tag, sizeof m->e[0].tag, "%s", tag);
    snprintf(m->e[m->n].tensor, sizeof m->e[0].tensor, "%s", tensor);
    m->e[m->n].v = 0;
    return &m->e[m->n++].v;
}

static int cm_has_tag(const cmap *m, const char *tag)
{
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->e[i].tag, tag))
            return 1;
    return 0;
}

/* find_count: the largest count of any of the tensors, under any tag */
static int find_count(const cmap *m, const char (*tens)[COMET_COMETIO_NAME], int nt, uint64_t *max)
{
    int exist = 0;
    *max = 1;
    for (int i = 0; i < m->n; i++)
        for (int k = 0; k < nt; k++)
            if (!strcmp(m->e[i].tensor, tens[k])) {
                if (m->e[i].v > *max)
                    *max = m->e[i].v;
                exist = 1;
            }
    return exist;
}

/* find_tens_on_left + the node's own tensors */
static int left_tensors(const node *n, char (*out)[COMET_COMETIO_NAME], int max)
{
    int k = 0;
    const node *p = n->parent;
    for (size_t c = 0; p && c < p->n_kid && p->kid[c] != n; c++) {
        const node *s = p->kid[c];
        if (s->type != COMET_COMETIO_TILE)
            continue;
        for (int t = 0; t < s->n_move; t++) {
            int dup = 0;
            for (int j = 0; j < k; j++)
                dup |= !strcmp(out[j], s->move[t].tensor);
            if (!dup && k < max)
                snprintf(out[k++], COMET_COMETIO_NAME, "%s", s->move[t].tensor);
        }
    }
    for (int t = 0; t < n->n_move && k < max; t++)
        snprintf(out[k++], COMET_COMETIO_NAME, "%s", n->move[t].tensor);
    return k;
}

static double simd_pj(comet_cometio_optype t, double width)
{
    switch (t) {
    case COMET_COMETIO_DIV:
        return 0.8;
    case COMET_COMETIO_EXP:
        return 3.86;
    case COMET_COMETIO_ADD:
        return 0.11;
    case COMET_COMETIO_MULT:
        return 0.64;
    case COMET_COMETIO_MAX:
        return 0.0025;
    case COMET_COMETIO_SQRT:
        return 2.84;
    case COMET_COMETIO_SOFTMAX:
        return 1;
    case COMET_COMETIO_ROWSUM:
        return 0.11 * ceil(log2(width));
    case COMET_COMETIO_ROWMAX:
        return 0.0025 * ceil(log2(width));
    default:
        return -1;
    }
}

static void add_eterm(comet_cometio_result *r, const char *unit, double pj)
{
    int i;
    for (i = 0; i < r->n_eterm; i++)
        if (!strcmp(r->eterm[i].unit, unit))
            break;
    if (i == r->n_eterm) {
        if (r->n_eterm == COMET_COMETIO_MAX_TERMS)
            i = r->n_eterm - 1;
        else
            r->n_eterm++;
        snprintf(r->eterm[i].unit, sizeof r->eterm[i].unit, "%s", unit);
    }
    r->eterm[i].pj += pj;
    r->energy_pj += pj;
}

static double coll_noc_pj(ev *e, const node *n);
static double move_noc_pj(ev *e, const node *n, int t, const dmi *mv);

static int energy_rec(ev *e, node *n, cmap sp, cmap it)
{
    info *f = I(e, n);
    cmap cur;
    int rc;
    memset(&cur, 0, sizeof cur);
    if (n->type != COMET_COMETIO_TILE)
        return 0;
    if (n->spatial || f->leaf) {
        int root = n->parent == e->in->mapping.root;
        char lt[64][COMET_COMETIO_NAME];
        int nlt = left_tensors(n, lt, 64);
        char own[MM][COMET_COMETIO_NAME];
        for (int t = 0; t < n->n_move; t++)
            snprintf(own[t], sizeof own[t], "%s", n->move[t].tensor);
        for (int i = 0; i < f->nae; i++) {
            acc *a = &f->ae[i];
            double en;
            if (a->target_child && !a->is_compute) {
                uint64_t *v = cm_get(&cur, a->tag, a->tensor, 1);
                if (v)
                    *v = a->access;
            }
            if (!a->is_compute && !root) {
                uint64_t mx;
                if (!find_count(&it, (const char(*)[COMET_COMETIO_NAME])lt, nlt, &mx))
                    return efail(e, n, "tensors",
                        "COMET finds no iteration count for the tensors left of this node");
                a->access *= mx;
                uint64_t *v = cm_get(&it, a->tag, a->tensor, 1);
                if (v)
                    *v = mx;
                if (mx > f->parent_iters)
                    f->parent_iters = mx;
                if (!a->target_child)
                    f->e_noc[a->level] += a->noc_pj * (double)mx;
            }
            uint64_t spn = 1;
            if (cm_has_tag(&sp, a->tag)) {
                uint64_t *v = cm_get(&sp, a->tag, a->tensor, 0);
                if (v) {
                    spn = *v;
                } else {
                    for (int t = 0; t < n->n_move; t++) {
                        uint64_t *w = cm_get(&sp, a->tag, n->move[t].tensor, 0);
                        if (w && *w > spn)
                            spn = *w;
                    }
                    v = cm_get(&sp, a->tag, a->tensor, 1);
                    if (v)
                        *v = spn;
                }
            } else if (!root) {
                if (!find_count(&sp, (const char(*)[COMET_COMETIO_NAME])lt, nlt, &spn))
                    return efail(e, n, "tensors",
                        "COMET finds no spatial count for the tensors left of this node");
            }
            if (a->is_compute) {
                const comet_cometio_compute *c = &e->a->compute[e->a->level[a->level].comp];
                uint64_t mx = 1;
                if (cm_has_tag(&it, a->tag)) {
                    for (int t = 0; t < n->n_move; t++) {
                        uint64_t *w = cm_get(&it, a->tag, n->move[t].tensor, 0);
                        if (w && *w > mx)
                            mx = *w;
                    }
                } else if (!find_count(&it, (const char(*)[COMET_COMETIO_NAME])own, n->n_move, &mx)
                    && !find_count(
                        &it, (const char(*)[COMET_COMETIO_NAME])lt, nlt - n->n_move, &mx)) {
                    return efail(e, n, "tensors", "COMET finds no iteration count for this op");
                }
                a->access *= mx;
                if (!strcmp(c->name, "SystolicArray")) {
                    en = (double)spn * (double)a->access * a->compute_pj;
                } else if (!strcmp(c->name, "VSIMD")) {
                    double pj = simd_pj(a->op_type, c->compute_width);
                    if (pj < 0)
                        return efail(e, n->kid[0], "type", "no SIMD energy for %s",
                            comet_cometio_optype_name(a->op_type));
                    en = (double)spn * (double)a->access * (double)(float)pj * c->compute_width;
                } else {
                    en = (double)spn * (double)a->access * c->compute_energy
                        * (double)e->a->level[a->level].instances;
                }
            } else {
                const comet_cometio_memory *m = mem_of(e, a->level);
                double cost;
                if (a->rw)
                    cost = a->target_child ? m->parent_write_pj : m->child_read_pj;
                else
                    cost = a->target_child ? m->parent_read_pj : m->child_write_pj;
                en = (double)spn * (double)a->access * (double)a->tile * (double)a->proj
                    * (double)a->precision * cost / (m->width * 8.0);
                if (a->rmw)
                    en *= 2;
            }
            f->e_mem[a->level] += en;
        }
        /* this node's spatial fan-out for the nodes below */
        int cnt = 0;
        for (int i = 0; i < f->nae; i++) {
            acc *a = &f->ae[i];
            if (!a->target_child || a->is_compute)
                continue;
            uint64_t spi = cnt < n->n_move ? f->sp_iters[cnt] : 1;
            uint64_t *v = cm_get(&sp, a->tag, a->tensor, 0);
            if (v)
                *v *= spi;
            else if ((v = cm_get(&sp, a->tag, a->tensor, 1)))
                *v = spi;
            cnt++;
        }
        if (f->leaf)
            return 0;
        for (int i = 0; i < cur.n; i++) {
            uint64_t *v = cm_get(&it, cur.e[i].tag, cur.e[i].tensor, 0);
            if (v)
                *v *= cur.e[i].v;
            else if ((v = cm_get(&it, cur.e[i].tag, cur.e[i].tensor, 1)))
                *v = cur.e[i].v;
        }
    }
    for (size_t k = 0; k < n->n_kid; k++) {
        node *c = n->kid[k];
        if (c->type == COMET_COMETIO_COLL) {
            info *cf = I(e, c);
            uint64_t iters = 1;
            if (n->spatial) {
                /* the in tensor's count under an op left of it; 1 when the
                 * map has none (COMET then scales this spatial level's own
                 * energy, not the collective's) */
                for (size_t j = 0; j < k; j++) {
                    const node *s = n->kid[j];
                    if (s->type != COMET_COMETIO_TILE)
                        continue;
                    for (int t = 0; t < s->n_move; t++) {
                        if (strcmp(s->move[t].tensor, c->in_tensor))
                            continue;
                        uint64_t *v = cm_get(&it, s->move[t].tag, c->in_tensor, 0);
                        if (v)
                            iters = *v;
                    }
                }
                for (int l = 0; l < 16; l++) {
                    f->e_mem[l] *= (double)iters;
                    f->e_noc[l] *= (double)iters;
                }
                cf->parent_iters = iters;
                cf->e_mem[c->coll_target] = cf->coll_read_pj + cf->coll_write_pj;
                cf->e_noc[c->coll_target] = e->noc_energy ? coll_noc_pj(e, c) : 0;
                continue;
            }
            {
                const node *left = NULL;
                for (size_t j = k; j-- > 0;)
                    if (n->kid[j]->type == COMET_COMETIO_TILE) {
                        left = n->kid[j];
                        break;
                    }
                const char *last_tag = NULL;
                for (size_t j = 0; j < k; j++) {
                    const node *s = n->kid[j];
                    if (s->type != COMET_COMETIO_TILE)
                        continue;
                    for (int t = 0; t < s->n_move; t++)
                        if (!strcmp(s->move[t].tensor, c->in_tensor))
                            last_tag = s->move[t].tag;
                }
                if (left)
                    for (int i = 0; i < I(e, left)->nae; i++) {
                        acc *a = &I(e, left)->ae[i];
                        if (a->target_child && !a->is_compute) {
                            uint64_t *v = cm_get(&cur, a->tag, a->tensor, 1);
                            if (v)
                                *v = a->access;
                        }
                    }
                uint64_t *v = last_tag ? cm_get(&cur, last_tag, c->in_tensor, 0) : NULL;
                iters = v ? *v : 0;
            }
            cf->parent_iters = iters;
            cf->e_mem[c->coll_target] = (cf->coll_read_pj + cf->coll_write_pj) * (double)iters;
            cf->e_noc[c->coll_target] = e->noc_energy ? coll_noc_pj(e, c) * (double)iters : 0;
        } else if (c->type == COMET_COMETIO_TILE) {
            if ((rc = energy_rec(e, c, sp, it)))
                return rc;
        }
    }
    return 0;
}

static int energy(ev *e, node *n)
{
    cmap sp, it;
    memset(&sp, 0, sizeof sp);
    memset(&it, 0, sizeof it);
    int rc = energy_rec(e, n, sp, it);
    if (rc)
        return rc;
    /* printArchLevelEnergy: levels per node, compute by op, NoC by link */
    for (int i = 0; i < e->n; i++) {
        node *x = e->nodes[i];
        info *f = &e->inf[i];
        for (int l = 0; l < (int)e->a->n_level && l < 16; l++) {
            char unit[160];
            if (f->e_mem[l] != 0) {
                if (e->a->level[l].is_compute && x->type == COMET_COMETIO_TILE && f->leaf)
                    snprintf(unit, sizeof unit, "%s-%s", e->a->level[l].name, x->kid[0]->op_name);
                else
                    snprintf(unit, sizeof unit, "%s", e->a->level[l].name);
                add_eterm(e->res, unit, f->e_mem[l]);
            }
            if (e->noc_energy && f->e_noc[l] != 0) {
                if (x->type == COMET_COMETIO_COLL)
                    snprintf(unit, sizeof unit, "%s<->%s-%s", e->a->level[l].name,
                        e->a->level[l].name, comet_cometio_coll_name(x->coll));
                else
                    snprintf(
                        unit, sizeof unit, "%s<->%s", e->a->level[l].name, e->a->level[l].name);
                add_eterm(e->res, unit, f->e_noc[l]);
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* NoC router energy (orion_power_model.cpp: power_summary_router, an  */
/* Orion/HISIM model at COMET's constants; network.cpp: GetLinkEnergy) */
/* ------------------------------------------------------------------ */

#define O_VDD            0.9
#define O_R              606.321
#define O_IOFFP          0.00000102
#define O_IOFFN          0.00000102
#define O_CG_PWR         0.000000000000000534
#define O_CD_PWR         0.000000000000000267
#define O_CGDL           0.0000000000000001068
#define O_CG             0.000000000000000534
#define O_CD             0.000000000000000267
#define O_LAMBDA         0.016
#define O_METAL_PITCH    0.000080
#define O_H_DFQD1        8
#define O_CI_DELAY       (3 * (O_CG + O_CGDL))
#define O_CO_DELAY       (3 * O_CD)
#define O_CI             ((1.0 + 2.0) * O_CG_PWR)
#define O_CO             ((1.0 + 2.0) * O_CD_PWR)
#define O_FO4            (O_R * (3.0 * O_CD + 12 * O_CG + 12 * O_CGDL))
#define O_FCLK           (1.0 / (20 * O_FO4))
#define O_CHANNEL_PITCH  (2.0 * O_METAL_PITCH)
#define O_CROSSBAR_PITCH (2.0 * O_METAL_PITCH)

static double o_wire(double L, double K, double M, double N, double Cw)
{
    double seg = M * N;
    double Ca = K * (O_CI + O_CO) + Cw * (L / seg);
    return 0.5 * Ca * O_VDD * O_VDD * O_FCLK * M * N;
}

static double o_wire_clk(double M, double W, double Cw)
{
    double columns = O_H_DFQD1 * O_METAL_PITCH / O_CHANNEL_PITCH;
    double len = W * O_CHANNEL_PITCH;
    double Cclk
        = (1 + 5.0 / 16.0 * (1 + O_CO_DELAY / O_CI_DELAY)) * (len * Cw * columns + W * O_CI_DELAY);
    return M * Cclk * (O_VDD * O_VDD) * O_FCLK;
}

static double o_wire_dff(double M, double W, double alpha)
{
    double Cdin = 2 * 0.8 * (O_CI + O_CO) + 2 * (2.0 / 3.0 * 0.8 * O_CO);
    double Cclk = 2 * 0.8 * (O_CI + O_CO) + 2 * (2.0 / 3.0 * 0.8 * O_CG_PWR);
    double Cint = (alpha * 0.5) * Cdin + alpha * Cclk;
    return Cint * M * W * (O_VDD * O_VDD) * O_FCLK;
}

static double o_wordline(double mw, double md, double cw_bits, double Cw)
{
    double Ccell = 2 * (4.0 * O_LAMBDA) * O_CG_PWR + 6 * O_METAL_PITCH * Cw;
    double Cwl = mw * Ccell;
    double Warray = 8 * O_METAL_PITCH + md;
    double x = 1.0 + (5.0 / 16.0) * (1 + O_CO / O_CI);
    double Cpredecode = x * (Cw * Warray * O_CI);
    double Cdecode = x * Cwl;
    double Harray = 6 * mw * O_METAL_PITCH;
    double y = (1 + 0.25) * (1 + O_CO / O_CI);
    double Cprecharge = y * (Cw * Harray + 3 * cw_bits * O_CI);
    double Cwren = y * (Cw * Harray + 2 * cw_bits * O_CI);
    return ((Cprecharge + Cwren) + (2 * Cpredecode + Cdecode)) * O_VDD * O_VDD * O_FCLK;
}

static double o_bit_read(double md, double Cw)
{
    double Ccell = 4.0 * O_LAMBDA * O_CD_PWR + 8 * O_METAL_PITCH * Cw;
    return md * Ccell * O_VDD * O_VDD * O_FCLK;
}

static double o_bit_write(double md, double Cw)
{
    double Ccell = 4.0 * O_LAMBDA * O_CD_PWR + 8 * O_METAL_PITCH * Cw;
    double Ccc = 2 * (O_CO + O_CI);
    return (0.5 * Ccc * (O_VDD * O_VDD)) + (md * Ccell * O_VDD * O_VDD * O_FCLK);
}

static double o_crossbar(double w, double in, double out, double Cw)
{
    double Wx = w * out * O_CROSSBAR_PITCH, Hx = w * in * O_CROSSBAR_PITCH;
    double CwIn = Wx * Cw, CwOut = Hx * Cw;
    double Cxi = (1.0 / 16.0) * CwOut, Cxo = 4.0 * Cxi * (O_CO_DELAY / O_CI_DELAY);
    double Cti = (1.0 / 16.0) * CwIn, Cto = 4.0 * Cti * (O_CO_DELAY / O_CI_DELAY);
    double Cdrv = 5.0 / 16.0 * (1 + O_CO_DELAY / O_CI_DELAY) * (0.5 * Cw * Wx + Cti);
    double Cin = Cdrv + CwIn + Cti + (out * Cxi);
    double Cout = CwOut + Cto + (in * Cxo);
    return 0.5 * (Cin + Cout) * (O_VDD * O_VDD * O_FCLK);
}

static double o_crossbar_ctrl(double w, double in, double out, double Cw)
{
    double Wx = w * out * O_CROSSBAR_PITCH, Hx = w * in * O_CROSSBAR_PITCH;
    double Cti = (5.0 / 16.0) * (Wx * Cw);
    double Cctrl = w * Cti + (Wx + Hx) * Cw;
    double Cdrive = (5.0 / 16.0) * (1 + O_CO_DELAY / O_CI_DELAY) * Cctrl;
    return (Cdrive + Cctrl) * (O_VDD * O_VDD) * O_FCLK;
}

static double o_router(double cw, int ins, int outs, uint32_t hop, double trc, double tva,
    double tsa, double tst, double tl, double tenq, double Q, uint32_t edge)
{
    double K = 8.1, M = 2, N = 1, L = 2.0,
           Cw = 2.0 * 0.000000000000267339 + 2.0 * 0.000000000000267339;
    double wire = o_wire(L, K, M, N, Cw), clk = o_wire_clk(M, L, Cw), dff = o_wire_dff(M, L, 1.0);
    double depth = 3 * 10;
    double Pwl = o_wordline(cw, depth, cw, Cw);
    double rd = Pwl + o_bit_read(depth, Cw) * cw, wr = Pwl + o_bit_write(depth, Cw) * cw;
    double sw = o_crossbar(cw, ins, outs, Cw) * cw, swc = o_crossbar_ctrl(cw, ins, ins, Cw);
    double outp = o_wire_dff(1, cw, 1.0), outclk = o_wire_clk(1, cw, Cw);
    double e = edge, q = tenq * Q / cw;
    wire *= (hop * tl + q) * e * (e * 2 - 2);
    clk *= 2 * e * e;
    dff *= (hop * tl + q) * e * (e * 2 - 2);
    rd *= q * e * e;
    wr *= q * e * e;
    sw *= hop * (trc + tva + tsa) * e * e;
    swc *= (hop * (trc + tva + tsa) + q) * e * e;
    outp *= (hop * tst + q) * e * e;
    outclk *= (hop * tst) * (2 * e * e);
    double outctrl = outclk * (hop * tst + q) * e * e; /* COMET scales the clock term here */
    return wire + clk + dff + rd + wr + sw + swc + outp + outclk + outctrl;
}

/* MeshNetwork::GetLinkEnergy */
static double link_energy(const comet_cometio_net *nt, int stype, uint64_t size, uint64_t uniq,
    uint64_t spatial, float prec_bytes, int red_op)
{
    if (uniq == 0 || spatial == 1)
        return 0;
    uint32_t mxy = (uint32_t)ceil(sqrt((double)spatial));
    int mx = nt->mesh_x, my = nt->mesh_y; /* the network's own mesh unless a branch below */
    if ((uint32_t)nt->mesh_x >= mxy && (uint32_t)nt->mesh_y >= mxy) {
        mx = my = (int)mxy;
    } else if ((uint32_t)nt->mesh_x >= mxy) {
        my = nt->mesh_y;
        mx = (int)((spatial + (uint64_t)my - 1) / (uint64_t)my);
    } else if ((uint32_t)nt->mesh_y >= mxy) {
        mx = nt->mesh_y;
        my = (int)((spatial + (uint64_t)mx - 1) / (uint64_t)mx);
    }
    uint32_t hops;
    if (hop_table(mx, my, &hops))
        return 0;
    uint32_t total_hops = hops, Q = (uint32_t)(size * hops);
    float rop = 0;
    if (stype == AREDUCE || stype == AGATHER) {
        if (stype == AREDUCE && red_op >= 0)
            rop = (float)Q * (float)spatial
                * (red_op == COMET_COMETIO_MAX         ? 0.0025f
                        : red_op == COMET_COMETIO_MULT ? 0.64f
                                                       : 0.11f);
        total_hops += hops;
        Q += (uint32_t)(size * hops);
    } else {
        if (stype == RED && red_op >= 0)
            rop = (float)Q * (float)spatial
                * (red_op == COMET_COMETIO_MAX         ? 0.0025f
                        : red_op == COMET_COMETIO_MULT ? 0.64f
                                                       : 0.11f);
        if (stype == SCAT && uniq == 1)
            Q = (uint32_t)((float)Q / (float)spatial);
    }
    Q = (uint32_t)((float)Q * (prec_bytes * 8));
    float total = (float)(o_router((double)nt->channel_width, 5, 5, total_hops, 1, 1, 1, 1, 1,
                              (double)nt->queuing_delay, (double)Q, (uint32_t)mx)
        + (double)rop);
    return total;
}

static double coll_noc_pj(ev *e, const node *n)
{
    static const int map[6] = { BCAST, RED, AGATHER, AREDUCE, SCAT, GATH };
    const comet_cometio_net *ln = net_of(e, n->coll_target, n->coll_target);
    uint64_t src = 1;
    for (int i = 0; i < n->n_src; i++)
        src *= (uint64_t)e->a->level[n->src[i]].instances;
    int red = n->coll == COMET_COMETIO_REDUCTION || n->coll == COMET_COMETIO_ALLREDUCE
        ? (int)n->red_op
        : -1;
    return ln ? link_energy(
               ln, map[n->coll], I(e, n)->coll_size, 1, src, (float)n->coll_precision / 8.0f, red)
              : 0;
}

static double move_noc_pj(ev *e, const node *n, int t, const dmi *mv)
{
    const comet_cometio_move *m = &n->move[t];
    const comet_cometio_net *nt = net_of(e, m->target, m->child);
    int rw = I(e, n)->rw[t];
    int stype = mv->uniq == 1 ? (rw ? GATH : BCAST) : (rw ? GATH : SCAT);
    return nt
        ? link_energy(nt, stype, mv->size, mv->uniq, mv->count, (float)m->precision / 8.0f, -1)
        : 0;
}

double comet_cometio_noc_pj_per_byte(const comet_cometio_net *n, int instances)
{
    const uint64_t big = 1 << 20;
    double e1 = link_energy(n, BCAST, big, 1, (uint64_t)instances, 1.0f, -1);
    double e0 = link_energy(n, BCAST, 1, 1, (uint64_t)instances, 1.0f, -1);
    return e1 > e0 ? (e1 - e0) / (double)(big - 1) : 0;
}
