/* COMET inputs restated in comet's own terms: a hardware description in
 * docs/hardware.md's schema, a problem of comet's op vocabulary, a mapping
 * of comet's knobs. What the restatement cannot carry is listed, never
 * silently dropped. */
#include "comet_cometio.h"
#include "cometio_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef comet_cometio_node node;

static void drop(comet_cometio_translation *tr, const char *file, int line, const char *fmt, ...)
{
    if (tr->n_dropped >= COMET_COMETIO_MAX_DROPPED)
        return;
    char msg[180];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(tr->dropped[tr->n_dropped++], sizeof tr->dropped[0], "%s:%d: %s", file, line, msg);
}

static int tfail(
    char *err, size_t errlen, const char *file, int line, const char *field, const char *fmt, ...)
{
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return comet_util_seterr(err, errlen, -EINVAL,
        "%s:%d: %s: not expressible in comet's model: %s", file, line, field, msg);
}

/* the first edge parent -> some child of the given edge kind */
static const comet_cometio_link *edge_from(const comet_cometio_arch *a, int parent, int want_memory)
{
    for (size_t i = 0; i < a->n_link; i++)
        if (a->link[i].parent == parent && (!want_memory || !a->level[a->link[i].child].is_compute))
            return &a->link[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* problem: which of comet's compound ops the chain of basic ops is    */
/* ------------------------------------------------------------------ */

static int translate_problem(
    const comet_cometio_inputs *in, comet_cometio_translation *tr, char *err, size_t errlen)
{
    const comet_cometio_problem *pb = &in->problem;
    const comet_cometio_op *g = NULL;
    int has[COMET_COMETIO_OPTYPES] = { 0 };
    /* op types come from the mapping's Operation nodes (the problem names
     * ops, the mapping says what each runs as) */
    const node *stack[256];
    int sp = 0;
    if (in->mapping.root)
        stack[sp++] = in->mapping.root;
    while (sp) {
        const node *n = stack[--sp];
        if (n->type == COMET_COMETIO_OP) {
            has[n->op_type]++;
            if (n->op_type == COMET_COMETIO_GEMM)
                g = comet_cometio_find_op(pb, n->op_name);
        }
        for (size_t k = 0; k < n->n_kid && sp < 256; k++)
            stack[sp++] = n->kid[k];
    }
    if (!g || has[COMET_COMETIO_GEMM] != 1)
        return tfail(err, errlen, in->mapping.file, in->mapping.root ? in->mapping.root->line : 0,
            "Operation", "comet's compound ops start with one GEMM (found %d)",
            has[COMET_COMETIO_GEMM]);
    /* GEMM dimensions from the projections: A[M,K] x B[K,N] */
    if (g->n_ins != 2 || g->n_tensor != 3)
        return tfail(err, errlen, pb->file, g->line, "operations", "a GEMM has two inputs");
    const comet_cometio_tensor *A = NULL, *B = NULL;
    for (int t = 0; t < g->n_tensor; t++) {
        if (!strcmp(g->tensor[t].name, g->ins[0]))
            A = &g->tensor[t];
        if (!strcmp(g->tensor[t].name, g->ins[1]))
            B = &g->tensor[t];
    }
    if (!A || !B || A->n_rank != 2 || B->n_rank != 2 || A->rank_dim[1] != B->rank_dim[0])
        return tfail(err, errlen, pb->file, g->line, "projection",
            "the GEMM's inputs must be A[M,K] and B[K,N]");
    int dm = A->rank_dim[0], dk = A->rank_dim[1], dn = B->rank_dim[1];
    tr->pb.M = (double)pb->size[dm];
    tr->pb.N = (double)pb->size[dn];
    tr->pb.K = (double)pb->size[dk];
    int softmax = has[COMET_COMETIO_SOFTMAX]
        || (has[COMET_COMETIO_ROWMAX] && has[COMET_COMETIO_EXP] && has[COMET_COMETIO_ROWSUM]
            && has[COMET_COMETIO_DIV]);
    int layernorm = has[COMET_COMETIO_SQRT] && has[COMET_COMETIO_ROWSUM] && has[COMET_COMETIO_DIV];
    if (softmax && !layernorm) {
        tr->pb.op = COMET_MODEL_GEMM_SOFTMAX;
    } else if (layernorm && !softmax) {
        tr->pb.op = COMET_MODEL_GEMM_LAYERNORM;
    } else {
        return tfail(err, errlen, pb->file, pb->op[0].line, "operations",
            "the chain after the GEMM is neither a softmax (rowmax, sub, exp, rowsum, div or "
            "softmax) nor a LayerNorm (rowsum, div, sqrt, ...)");
    }
    if (pb->n_op > 2 || has[COMET_COMETIO_SOFTMAX])
        drop(tr, pb->file, pb->op[0].line,
            "operations: %zu basic ops become comet's %s (its own graph of basic ops: "
            "model/ops.c)",
            pb->n_op, comet_model_op_name(tr->pb.op));
    return 0;
}

/* ------------------------------------------------------------------ */
/* hardware                                                            */
/* ------------------------------------------------------------------ */

static int translate_hw(
    const comet_cometio_inputs *in, comet_cometio_translation *tr, char *err, size_t errlen)
{
    const comet_cometio_arch *a = &in->arch;
    const char *f = a->file;
    if (a->n_level == 0 || a->level[0].mem < 0 || !a->memory[a->level[0].mem].is_dram)
        return tfail(err, errlen, f, a->n_level ? a->level[0].line : 0, "Hierarchy",
            "the root level must be DRAM");
    const comet_cometio_memory *dram = &a->memory[a->level[0].mem];
    const comet_cometio_link *ce = edge_from(a, 0, 1);
    if (!ce)
        return tfail(err, errlen, f, a->level[0].line, "Hierarchy",
            "DRAM must connect to a global buffer level (the clusters)");
    const comet_cometio_level *gbl = &a->level[ce->child];
    const comet_cometio_memory *gb = &a->memory[gbl->mem];
    /* the per-core buffers: GB's memory children (input, weight, output) */
    const comet_cometio_memory *lb[8];
    const comet_cometio_link *le[8];
    int nlb = 0;
    for (size_t i = 0; i < a->n_link && nlb < 8; i++)
        if (a->link[i].parent == ce->child && !a->level[a->link[i].child].is_compute) {
            le[nlb] = &a->link[i];
            lb[nlb++] = &a->memory[a->level[a->link[i].child].mem];
        }
    if (nlb == 0)
        return tfail(
            err, errlen, f, gbl->line, "Hierarchy", "the global buffer must fill per-core buffers");
    int cores = a->level[le[0]->child].instances;
    double lcap = 0;
    const comet_cometio_memory *ib = lb[0], *ob = lb[nlb - 1];
    for (int i = 0; i < nlb; i++) {
        lcap += lb[i]->width * lb[i]->depth;
        if (le[i]->edge == COMET_COMETIO_DRAINS)
            ob = lb[i];
        if (a->level[le[i]->child].instances != cores)
            return tfail(err, errlen, f, le[i]->line, "meshX",
                "every per-core buffer level needs the same instances (%d)", cores);
    }
    /* COMET's input, weight and output buffers: the local buffer's parts
     * (the GEMM's A fills the first, B the second, the result drains) */
    char parts[320] = "";
    if (nlb == 3 && le[0]->edge == COMET_COMETIO_FILLS && le[1]->edge == COMET_COMETIO_FILLS
        && le[2]->edge == COMET_COMETIO_DRAINS) {
        /* each part's port: what its parent (the global buffer's side) writes
         * into it; the output part's, what its parent reads out of it */
        snprintf(parts, sizeof parts,
            ", input_bytes: %.0f, weight_bytes: %.0f, output_bytes: %.0f, input_bw: %.6g, "
            "weight_bw: %.6g, output_bw: %.6g",
            lb[0]->width * lb[0]->depth, lb[1]->width * lb[1]->depth, lb[2]->width * lb[2]->depth,
            lb[0]->parent_write_bw, lb[1]->parent_write_bw, lb[2]->parent_read_bw);
        drop(tr, f, le[0]->line,
            "Hierarchy: the input/weight/output buffers become one local buffer with three "
            "parts (their capacities and their parent-side ports kept); their port counts, "
            "link bandwidths and parent_child_ports_shared are not carried");
    } else if (nlb > 1) {
        drop(tr, f, le[0]->line,
            "Hierarchy: %d per-core buffers (%.0f B together) become one local buffer; their "
            "separate capacities, ports and parent_child_ports_shared are not carried",
            nlb, lcap);
    }
    /* engines */
    const comet_cometio_compute *mac = NULL, *simd = NULL;
    for (size_t i = 0; i < a->n_compute; i++) {
        if (a->compute[i].is_simd && !simd)
            simd = &a->compute[i];
        if (!a->compute[i].is_simd && !mac)
            mac = &a->compute[i];
    }
    if (!mac || !simd)
        return tfail(err, errlen, f, 1, "ComputeTiles", "comet needs a mac and a simd tile");
    /* COMET caps a level's transfers at its ports x the network's port
     * bandwidth (arch_cost.cpp): that is the rate comet's level gets */
    double dram_bw = fmin(dram->child_read_bw, dram->ports * ce->net.bw);
    if (dram_bw < dram->child_read_bw)
        drop(tr, f, ce->line,
            "DRAM bw %.6g B/cycle: COMET moves at most ports x network bw = %.6g; comet's DRAM "
            "gets the latter",
            dram->child_read_bw, dram_bw);
    /* the global buffer keeps its bandwidth: comet's cores' network
     * (cores x link_bw) is the limit COMET's port cap stands for */
    double gb_bw = gb->child_read_bw;
    char gemm[256];
    if (!strcmp(mac->name, "SystolicArray")) {
        snprintf(gemm, sizeof gemm,
            "gemm: {engine: systolic, rows: %.0f, cols: %.0f, arrays: %.0f, mac_pj: 0.2296}\n",
            mac->array_rows, mac->array_cols, mac->num_sa_rows * mac->num_sa_cols);
    } else {
        /* gemm_compute.cpp: an 8x8x8 block every computeLatency cycles */
        /* COMET charges compute_energy per tile call: per MAC, over the
         * GEMM's tile primitive */
        double vol = 0;
        const node *st[256];
        int sp = 0;
        if (in->mapping.root)
            st[sp++] = in->mapping.root;
        while (sp) {
            const node *x = st[--sp];
            if (x->type == COMET_COMETIO_OP && x->op_type == COMET_COMETIO_GEMM) {
                vol = 1;
                for (int d = 0; d < COMET_COMETIO_MAX_DIMS; d++)
                    if (x->prim[d])
                        vol *= (double)x->prim[d];
            }
            for (size_t k = 0; k < x->n_kid && sp < 256; k++)
                st[sp++] = x->kid[k];
        }
        snprintf(gemm, sizeof gemm,
            "gemm: {engine: peak, peak_flops_per_cycle: %.6g, mac_pj: %.6g}\n",
            2.0 * 512 / (mac->compute_latency > 0 ? mac->compute_latency : 1),
            vol > 0 ? mac->compute_energy / vol : mac->compute_energy);
        drop(tr, f, mac->line,
            "ComputeTiles %s: startupLatency %.0f and the reduction-hop adder per tile are not "
            "charged (comet's peak engine)",
            mac->name, mac->startup_latency);
    }
    const comet_cometio_net *cn = &ce->net, *kn = &le[0]->net;
    if (cn->channel_width || kn->channel_width)
        drop(tr, f, ce->line,
            "channel_width %.0f/%.0f bits, queuing_delay %.0f/%.0f: comet's channel_bits and "
            "flit_cycles, the channel's serialisation rate overlapped with the memory's "
            "(cut-through); COMET adds the queuing term to each transfer's memory time",
            cn->channel_width, kn->channel_width, cn->queuing_delay, kn->queuing_delay);
    double cpj = comet_cometio_noc_pj_per_byte(cn, gbl->instances);
    double kpj = comet_cometio_noc_pj_per_byte(kn, a->level[le[0]->child].instances);
    drop(tr, f, ce->line,
        "NoC energy: COMET's Orion router model becomes its marginal energy per byte moved "
        "across the mesh (%.4g pJ/B clusters, %.4g cores); its fixed per-transfer part is not "
        "carried",
        cpj, kpj);
    drop(tr, f, a->level[0].line, "clock: COMET has none; 1 GHz (cycles are unchanged)");
    /* precisions: DRAM tensors and on-chip intermediates */
    int io_bits = 8, chip_bits = 16;
    const node *r = in->mapping.root;
    if (r && r->type == COMET_COMETIO_TILE && r->n_move)
        io_bits = r->move[0].precision;
    for (const node *n = r; n; n = n->n_kid ? n->kid[n->n_kid - 1] : NULL) {
        for (int t = 0; n->type == COMET_COMETIO_TILE && t < n->n_move; t++)
            if (n->move[t].precision > chip_bits)
                chip_bits = n->move[t].precision;
        if (n->type != COMET_COMETIO_TILE)
            break;
    }
    int n = snprintf(tr->hw_yaml, sizeof tr->hw_yaml,
        "name: %s\n"
        "kind: accelerator\n"
        "clock_ghz: 1.0\n"
        "bytes_per_elem: %d\n"
        "io_bytes_per_elem: %d\n"
        "clusters:\n"
        "  count: %d\n"
        "  network: {topology: mesh2d, dims: [%d, %d], link_bw: %.6g, hop_latency: %.6g, "
        "startup: 0, channel_bits: %.6g, flit_cycles: %.6g, broadcast: %s, reduction: %s, "
        "link_pj_per_byte: %.6g}\n"
        "cores:\n"
        "  count: %d\n"
        "  network: {topology: mesh2d, dims: [%d, %d], link_bw: %.6g, hop_latency: %.6g, "
        "startup: 0, channel_bits: %.6g, flit_cycles: %.6g, broadcast: %s, reduction: %s, "
        "link_pj_per_byte: %.6g}\n"
        "memory:\n"
        "  dram: {capacity: 17179869184, bw: %.6g, read_pj: %.6g, write_pj: %.6g, access_bytes: "
        "%.6g}\n"
        "  global_buffer: {capacity: %.0f, bw: %.6g, read_pj: %.6g, write_pj: %.6g, "
        "access_bytes: %.0f}\n"
        "  local_buffer: {capacity: %.0f, bw: %.6g, read_pj: %.6g, write_pj: %.6g, access_bytes: "
        "%.0f%s}\n"
        "%s"
        "vector:\n"
        "  width: %.0f\n"
        "  cycles: {add: 1, mul: 1, div: 1, exp: 3, max: 1, sqrt: 1}\n"
        "  energy_pj: {add: 0.11, mul: 0.64, div: 0.8, exp: 3.86, max: 0.0025, sqrt: 2.84}\n",
        "comet-arch", chip_bits / 8, io_bits >= 8 ? io_bits / 8 : 1, gbl->instances, cn->mesh_x,
        cn->mesh_y, cn->bw, cn->hop_latency, cn->channel_width, cn->queuing_delay,
        cn->broadcast ? "true" : "false", cn->reduction ? "true" : "false", cpj, cores, kn->mesh_x,
        kn->mesh_y, kn->bw, kn->hop_latency, kn->channel_width, kn->queuing_delay,
        kn->broadcast ? "true" : "false", kn->reduction ? "true" : "false", kpj, dram_bw,
        dram->child_read_pj, dram->child_write_pj, dram->width, gb->width * gb->depth, gb_bw,
        gb->child_read_pj, gb->child_write_pj, gb->width, lcap, ib->child_read_bw,
        ib->child_read_pj, ob->child_write_pj, ib->width, parts, gemm, simd->compute_width);
    if (n < 0 || (size_t)n >= sizeof tr->hw_yaml)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: description too long", f);
    if (gbl->instances != cn->mesh_x * cn->mesh_y)
        drop(tr, f, gbl->line, "instances vs mesh: %d clusters on a %dx%d mesh", gbl->instances,
            cn->mesh_x, cn->mesh_y);
    return 0;
}

/* ------------------------------------------------------------------ */
/* mapping                                                             */
/* ------------------------------------------------------------------ */

static uint64_t fac(const comet_cometio_move *m, int row, int d)
{
    return m->factor[row][d] ? m->factor[row][d] : 1;
}

static int translate_mapping(
    const comet_cometio_inputs *in, comet_cometio_translation *tr, char *err, size_t errlen)
{
    const comet_cometio_problem *pb = &in->problem;
    const char *f = in->mapping.file;
    comet_model_mapping *mp = &tr->mp;
    memset(mp, 0, sizeof *mp);
    mp->cs_m = mp->cs_n = mp->cs_k = mp->ks_m = mp->ks_n = 1;
    mp->streaming = -1;
    /* the GEMM's A (rows x K) locates M and K; B locates N */
    const comet_cometio_op *g = NULL;
    for (size_t o = 0; o < pb->n_op && !g; o++)
        for (int t = 0; t < pb->op[o].n_tensor; t++)
            if (pb->op[o].n_ins == 2 && pb->op[o].tensor[t].n_rank == 2
                && !strcmp(pb->op[o].tensor[t].name, pb->op[o].ins[0]))
                g = &pb->op[o];
    int dm = g->tensor[0].rank_dim[0], dk = g->tensor[0].rank_dim[1];
    int dn = -1;
    for (int t = 0; t < g->n_tensor; t++)
        if (!strcmp(g->tensor[t].name, g->ins[1]))
            dn = g->tensor[t].rank_dim[1];
    /* walk the levels: factors of the GEMM's A above the cores */
    int fused = 1;
    double m_steps = 1, k_steps = 1;
    int spatial_seen = 0, pipelined = 0;
    const node *stack[256];
    int sp = 0;
    stack[sp++] = in->mapping.root;
    while (sp) {
        const node *n = stack[--sp];
        if (n->type == COMET_COMETIO_BINDING && n->binding != COMET_COMETIO_SEQUENTIAL)
            pipelined = 1;
        if (n->type == COMET_COMETIO_COLL)
            drop(tr, f, n->line,
                "CollectiveOperation %s(%s) of %s: comet places its own collectives (row "
                "statistics after an N split), it does not take them from a mapping",
                comet_cometio_coll_name(n->coll), comet_cometio_optype_name(n->red_op),
                n->in_tensor);
        if (n->type == COMET_COMETIO_TILE) {
            int dram = in->arch.level[n->move[0].target].mem >= 0
                && in->arch.memory[in->arch.level[n->move[0].target].mem].is_dram;
            int core = in->arch.level[n->move[0].child].is_compute;
            for (int t = 0; t < n->n_move; t++) {
                const comet_cometio_move *m = &n->move[t];
                int inter = 1;
                for (int i = 0; i < pb->n_io_ins; i++)
                    inter &= strcmp(pb->io_ins[i], m->tensor) != 0;
                for (int i = 0; i < pb->n_io_outs; i++)
                    inter &= strcmp(pb->io_outs[i], m->tensor) != 0;
                if (dram && inter)
                    fused = 0;
            }
            const comet_cometio_move *a = NULL;
            for (int t = 0; t < n->n_move; t++)
                if (!strcmp(n->move[t].tensor, g->ins[0]))
                    a = &n->move[t];
            if (a && !core) {
                if (n->spatial) {
                    int cs_m = (int)(fac(a, 0, dm) * fac(a, 1, dm));
                    int cs_k = (int)(fac(a, 0, dk) * fac(a, 1, dk));
                    /* N splits are on B and the result */
                    int cs_n = 1;
                    for (int t = 0; t < n->n_move; t++)
                        if (!strcmp(n->move[t].tensor, g->ins[1]))
                            cs_n = (int)(fac(&n->move[t], 0, dn) * fac(&n->move[t], 1, dn));
                    if (!spatial_seen) {
                        mp->cs_m = cs_m, mp->cs_n = cs_n, mp->cs_k = cs_k;
                    } else {
                        mp->ks_m = cs_m, mp->ks_n = cs_n;
                        if (cs_k != 1)
                            drop(tr, f, n->line,
                                "factors: a K split over cores (%d): comet "
                                "splits K over clusters only",
                                cs_k);
                    }
                    spatial_seen++;
                } else {
                    m_steps *= (double)fac(a, 0, dm);
                    k_steps *= (double)fac(a, 0, dk);
                    for (int d = 0; d < pb->n_dim; d++)
                        if (d != dm && d != dk && fac(a, 0, d) != 1)
                            drop(tr, f, n->line,
                                "factors: %s=%llu at a temporal level: comet steps M and K only",
                                pb->dim[d], (unsigned long long)fac(a, 0, d));
                }
            }
            if (core && a && !n->spatial) {
                /* the core-level temporal loop: comet's ct_m/ct_n/ct_k, each
                 * sub-tile paying the systolic fill and drain */
                mp->ct_m = (int)fac(a, 0, dm);
                mp->ct_n = dn >= 0 ? (int)fac(a, 0, dn) : 1;
                mp->ct_k = (int)fac(a, 0, dk);
                if (n->n_perm)
                    drop(tr, f, n->line,
                        "permutation at the core level (%s): comet's core loop order is fixed "
                        "(its sub-tiles cost the same in any order)",
                        in->arch.level[n->move[0].child].name);
            } else if (core)
                drop(tr, f, n->line,
                    "factors and permutation at the core level (%s) of a tensor other than the "
                    "GEMM's: not carried",
                    in->arch.level[n->move[0].child].name);
            else if (n->n_perm && !n->spatial)
                drop(tr, f, n->line, "permutation: comet's loop order is fixed (M steps outer)");
            for (int t = 0; t < n->n_move; t++)
                if (n->move[t].rmw) {
                    drop(tr, f, n->line, "rmw on %s: not carried", n->move[t].tensor);
                    break;
                }
        }
        if (n->type == COMET_COMETIO_OP && n->op_type != COMET_COMETIO_GEMM)
            drop(tr, f, n->line,
                "TilePrimitive of %s (%s): comet's vector unit costs full rows at its width",
                n->op_name, comet_cometio_optype_name(n->op_type));
        for (size_t k = n->n_kid; k-- > 0 && sp < 256;)
            stack[sp++] = n->kid[k];
    }
    if (spatial_seen > 2)
        return tfail(err, errlen, f, in->mapping.root->line, "type",
            "%d spatial levels: comet splits over clusters and cores only", spatial_seen);
    mp->fused = fused;
    mp->pipelined = pipelined;
    double rows = tr->pb.M / (double)mp->cs_m;
    mp->tile_m = rows / m_steps;
    mp->tile_k = tr->pb.K / (double)mp->cs_k / k_steps;
    if (mp->tile_m < 1 || floor(mp->tile_m) != mp->tile_m)
        return tfail(err, errlen, f, in->mapping.root->line, "factors",
            "M=%.0f over %d clusters and %.0f steps is not whole rows", tr->pb.M, mp->cs_m,
            m_steps);
    (void)dn;
    return 0;
}

int comet_cometio_translate(
    const comet_cometio_inputs *in, comet_cometio_translation *tr, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    int rc;
    if ((rc = translate_problem(in, tr, err, errlen)) || (rc = translate_hw(in, tr, err, errlen))
        || (rc = translate_mapping(in, tr, err, errlen)))
        return rc;
    return 0;
}
