/* The dataflow model: latency and energy of one mapping (allocation-free),
 * with its explicit collectives (costed by coll.c); the memory levels'
 * bandwidths; the mapping the local kernels run (comet_model_local_mapping).
 * The search is search.c's, the explanation explain.c's. */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double cdiv(double a, double b)
{
    return ceil(a / b);
}

/* ------------------------------------------------------------------ */
/* Compound ops as graphs of basic ops over named tensors               */
/* ------------------------------------------------------------------ */

static const char *const bop_names[COMET_MODEL_NBOP]
    = { "gemm", "rowmax", "sub", "exp", "rowsum", "div", "mean", "var", "mul", "add", "sqrt" };

const char *comet_model_bop_name(comet_model_bop b)
{
    return (unsigned)b < COMET_MODEL_NBOP ? bop_names[b] : "unknown";
}

/* Vector cost of a graph's non-GEMM nodes: cycles per intermediate element,
 * per row, per output (rows x d) element, and pJ per intermediate element.
 * A division by a row statistic is one reciprocal per row and a multiply per
 * element; row reductions add a log2(width) tree per row. */
typedef struct vcost {
    double per_elem, per_row, per_out, pj_elem;
    double row_fixed; /* the fixed part of per_row (a row's calls and reductions) */
    int n_mn; /* basic ops over the rows x N intermediate (op-by-op passes: each reads it) */
    int n_mn_out; /* of those, the ones whose result is intermediate-sized (each writes it) */
} vcost;

double comet_model_micro_tile_factor(const comet_model_hw *hw, double m)
{
    const double mr = hw->fused_micro_rows;
    if (!(mr > 0) || !(m >= 1))
        return 1;
    const double edge = hw->fused_micro_edge > 0 ? hw->fused_micro_edge : mr;
    const double full = floor(m / mr), rest = m - full * mr;
    return (full * mr + (rest <= 0 ? 0 : rest <= edge ? edge : mr)) / m;
}

/* The row passes were measured at several widths (from an L2-resident tile
 * into an L2-resident result: their stores are in the table). */
static int row_tab_measured(const comet_model_hw *hw)
{
    return hw->row_tab_n[0] > 0 || hw->row_tab_n[1] > 0;
}

/* A CPU core's epilogue over a block: its row loop (tv) and its result
 * stores (t_out at the level the result goes to). Unmeasured, the loop waits
 * for every store (write-combining buffers full: measured so on a Zen 5 VM).
 * Measured (vector.store_hidden), a result that stays in L2 is the regime
 * the row passes were timed in, and beyond it the loop waits for the part of
 * the stores it does not hide; the stores' bandwidth bounds the block. */
static double epilogue_cycles(const comet_model_hw *hw, double tv, double t_out, double y_bytes)
{
    if (!row_tab_measured(hw) && !(hw->store_hidden > 0))
        return tv + t_out;
    const double exposed = y_bytes <= hw->lb.capacity ? 0 : (1 - hw->store_hidden) * t_out;
    return fmax(tv + exposed, t_out);
}

double comet_model_row_pass_cycles(const comet_model_hw *hw, int ln_rows, double width)
{
    const int o = ln_rows ? 1 : 0, n = hw->row_tab_n[o];
    if (n < 1 || !(width > 0))
        return NAN;
    const double *w = hw->row_tab_w[o], *c = hw->row_tab_cycles[o];
    if (n == 1)
        return c[0] * width / w[0];
    /* the segment that holds width; below the first and beyond the last
     * point, the nearest segment's line */
    int i = 0;
    while (i < n - 2 && width > w[i + 1])
        i++;
    const double slope = (c[i + 1] - c[i]) / (w[i + 1] - w[i]);
    return fmax(c[i] + slope * (width - w[i]), 0);
}

static vcost graph_vcost(
    const comet_model_hw *hw, const comet_model_graph *g, int ln_rows, int row_pass, double width)
{
    const double *c = hw->vop_cycles, *e = hw->vop_pj, w = hw->simd_width > 0 ? hw->simd_width : 1;
    const double lgw = w > 1 ? ceil(log2(w)) : 0;
    /* Elementwise ops between two row reductions run as one loop over the
     * row (the reduction's result must be complete before its consumers),
     * sharing loads and stores: on a CPU, whose op costs are measured loops
     * (load, op, store), each op after a loop's first saves the cost of a
     * bare in-cache pass, the cheapest of add/mul/max. An accelerator's op
     * costs are its vector unit's cycles per instruction: a fused op still
     * issues its instruction (saving them let an add cost 0 and the
     * composition fall below its vector bound). */
    const double bare = hw->kind[0] != 'c'
        ? 0
        : fmin(c[COMET_MODEL_VOP_ADD], fmin(c[COMET_MODEL_VOP_MUL], c[COMET_MODEL_VOP_MAX]));
    int in_loop = 0, in_loop_out = 0, reduces = 0;
    vcost v = { 0, 0, 0, 0, 0, 0, 0 };
    for (int i = 0; i < g->n; i++) {
        const comet_model_node *nd = &g->node[i];
        double ce = 0, pe = 0, cr = 0;
        switch (nd->kind) {
        case COMET_MODEL_BOP_GEMM:
            continue;
        case COMET_MODEL_BOP_ROWMAX:
            ce = c[COMET_MODEL_VOP_MAX], pe = e[COMET_MODEL_VOP_MAX],
            cr = lgw * c[COMET_MODEL_VOP_MAX];
            break;
        case COMET_MODEL_BOP_ROWSUM:
        case COMET_MODEL_BOP_MEAN:
            ce = c[COMET_MODEL_VOP_ADD], pe = e[COMET_MODEL_VOP_ADD],
            cr = lgw * c[COMET_MODEL_VOP_ADD];
            break;
        case COMET_MODEL_BOP_VAR: /* square and accumulate */
            ce = c[COMET_MODEL_VOP_MUL] + c[COMET_MODEL_VOP_ADD];
            pe = e[COMET_MODEL_VOP_MUL] + e[COMET_MODEL_VOP_ADD];
            cr = lgw * c[COMET_MODEL_VOP_ADD];
            break;
        case COMET_MODEL_BOP_SUB:
        case COMET_MODEL_BOP_ADD:
            ce = c[COMET_MODEL_VOP_ADD], pe = e[COMET_MODEL_VOP_ADD];
            break;
        case COMET_MODEL_BOP_MUL:
            ce = c[COMET_MODEL_VOP_MUL], pe = e[COMET_MODEL_VOP_MUL];
            break;
        case COMET_MODEL_BOP_EXP:
            ce = c[COMET_MODEL_VOP_EXP], pe = e[COMET_MODEL_VOP_EXP];
            break;
        case COMET_MODEL_BOP_SQRT:
            ce = c[COMET_MODEL_VOP_SQRT], pe = e[COMET_MODEL_VOP_SQRT];
            break;
        case COMET_MODEL_BOP_DIV:
            /* by a row statistic: reciprocal per row, multiply per element */
            ce = c[COMET_MODEL_VOP_MUL], pe = e[COMET_MODEL_VOP_MUL], cr = c[COMET_MODEL_VOP_DIV];
            break;
        default:
            continue;
        }
        if (nd->out_shape == COMET_MODEL_T_ROW && !nd->reduces_n) {
            v.per_row += ce; /* an op on a row statistic */
            continue;
        }
        const int nops = nd->kind == COMET_MODEL_BOP_VAR ? 2 : 1;
        if (nd->out_shape == COMET_MODEL_T_MD) {
            v.per_out += (ce - (in_loop_out ? nops : nops - 1) * bare) / w;
            in_loop_out += nops;
        } else {
            v.per_elem += (ce - (in_loop ? nops : nops - 1) * bare) / w;
            v.pj_elem += pe;
            v.n_mn++;
            v.n_mn_out += nd->out_shape == COMET_MODEL_T_MN;
            in_loop += nops;
        }
        v.per_row += cr;
        if (nd->reduces_n) {
            in_loop = 0; /* the statistic ends the loop */
            reduces = 1;
        }
    }
    if (!reduces)
        return v;
    /* a graph with row reductions pays its row pass's fixed cost once per row */
    v.row_fixed = ln_rows && hw->ln_row_cycles > 0 ? hw->ln_row_cycles : hw->row_cycles;
    v.per_row += v.row_fixed;
    /* rows that run a measured row pass cost its slope per element (one
     * loop's loads, stores and ops as they overlap), not the sum of the
     * single-op loops; the stationary operand the pass evicts is charged
     * where the GEMM reloads it (eval_core) */
    const double slope = ln_rows ? hw->ln_row_elem_cycles : hw->row_elem_cycles;
    if (row_pass && slope > 0)
        v.per_elem = slope;
    /* measured at several widths: a row of this width costs what they say */
    const double tw = row_pass ? comet_model_row_pass_cycles(hw, ln_rows, width) : NAN;
    if (tw > 0)
        v.per_elem = fmax(tw - v.row_fixed, 0) / width;
    return v;
}

/* Rows of the busiest of T cores taking blocks of blk rows, laid along
 * segments of seg rows (a head's queries, or M; each segment's last block
 * may be shorter) over rows in all, as they come free: it gets
 * ceil(blocks / T) blocks, full ones first while they last. */
double comet_model_busiest_rows(double blk, double seg, double rows, double T)
{
    if (!(blk >= 1) || !(seg >= 1) || !(T >= 1))
        return rows / (T >= 1 ? T : 1);
    const double nb = ceil(seg / blk), last = seg - (nb - 1) * blk, segs = rows / seg;
    const double nbt = ceil(segs * nb), partial = last < blk ? segs : 0;
    const double heavy = ceil(nbt / T), hf = fmin(heavy, ceil((nbt - partial) / T));
    return fmax(hf * blk + (heavy - hf) * last, rows / T);
}

/* The micro-tile factor over blocks of blk rows laid along segments of seg
 * rows (a head's queries, or M): whole blocks and one shorter last block. */
static double micro_factor_blocks(const comet_model_hw *hw, double blk, double seg)
{
    if (!(blk >= 1) || !(seg >= 1))
        return comet_model_micro_tile_factor(hw, blk);
    const double nb = ceil(seg / blk), last = seg - (nb - 1) * blk;
    return ((nb - 1) * blk * comet_model_micro_tile_factor(hw, blk)
               + last * comet_model_micro_tile_factor(hw, last))
        / seg;
}

double comet_model_parallel_regions(
    const comet_model_problem *pb, const comet_model_mapping *mp, int threads)
{
    if (!pb || !mp || threads <= 1)
        return 0;
    comet_model_opdims od;
    comet_model_op_dims(pb, &od);
    const int att = od.desc && od.desc->flash;
    if (mp->fused && !mp->blas_gemm)
        return 1;
    return att ? od.groups * (3 + (pb->causal ? 1 : 0)) : 2;
}

/* kernels/vmath.c streams outputs of at least 16 MiB */
#define UNFUSED_STREAM_MIN (16.0 * 1024 * 1024)

/* Does a fused CPU block's stationary operand (bs bytes of packed B, or a
 * head's K and V) leave the core's L2 between blocks? It stays only while
 * it fits beside the block's tile (tile bytes) and the block's result when
 * that is written through the caches (ycache bytes; 0 when streamed). */
static int reloads(const comet_model_hw *hw, double bs, double tile, double ycache)
{
    return bs + tile + ycache > hw->lb.capacity;
}

/* v clamped to a grid axis of n values (any v without an axis) */
static double axis_clamp(const double *ax, int n, double v)
{
    return n > 0 ? fmin(fmax(v, ax[0]), ax[n - 1]) : v;
}

/* ------------------------------------------------------------------ */
/* Evaluation                                                          */
/* ------------------------------------------------------------------ */

/* GEMM cycles of one core's m x n x k share; eff from the caller (CPU). */
static double gemm_cycles(const comet_model_hw *hw, double m, double n, double k, double eff);

/* The same share run as ctm x ctn x ctk sub-tiles one after another (the
 * core-level temporal loop): a systolic array fills and drains each
 * sub-tile's folds (SCALE-Sim's per-fold 2R + C + T - 2; COMET's
 * systolic_array.cpp charges it per core-level tile), so sub-tiles never
 * take fewer cycles than the whole; a peak-rate engine does the same work. */
static double gemm_cycles_sub(const comet_model_hw *hw, double m, double n, double k, double eff,
    double ctm, double ctn, double ctk)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    /* no more sub-tiles than whole rows, columns, K (a causal share of a
     * column is still one) */
    ctm = fmax(1, fmin(ctm, ceil(m))), ctn = fmax(1, fmin(ctn, ceil(n))),
    ctk = fmax(1, fmin(ctk, ceil(k)));
    if (!hw->systolic || (ctm <= 1 && ctn <= 1 && ctk <= 1))
        return gemm_cycles(hw, m, n, k, eff);
    return ctm * ctn * ctk * gemm_cycles(hw, ceil(m / ctm), ceil(n / ctn), ceil(k / ctk), eff);
}

static double gemm_cycles(const comet_model_hw *hw, double m, double n, double k, double eff)
{
    if (m <= 0 || n <= 0 || k <= 0)
        return 0;
    if (hw->systolic) {
        /* ScaleSim form: folds of (K, N) onto an R x C array replicated
         * sqrt(arrays) x sqrt(arrays); each fold streams m rows */
        double nr = floor(sqrt((double)hw->sa_arrays)), nc = hw->sa_arrays / nr;
        double folds = cdiv(k, hw->sa_rows * nr) * cdiv(n, hw->sa_cols * nc);
        return folds * (2.0 * hw->sa_rows + hw->sa_cols + m - 2);
    }
    return 2 * m * n * k / (hw->peak_flops * eff);
}

double comet_model_level_bw(const comet_model_mem *m, double cores)
{
    /* a shared level serves min(its total, what the cores in use can draw) */
    return m->core_bw > 0 && cores > 0 ? fmin(m->bw, m->core_bw * cores) : m->bw;
}

double comet_model_level_write_bw(const comet_model_mem *m, double cores)
{
    if (!(m->write_bw > 0))
        return comet_model_level_bw(m, cores) / 2;
    return m->core_write_bw > 0 && cores > 0 ? fmin(m->write_bw, m->core_write_bw * cores)
                                             : m->write_bw;
}

/* Bandwidth (bytes/cycle) of the level an intermediate of `bytes` lives in
 * on a CPU (caches are transparent): private L2s, the LLC, or DRAM. */
double comet_model_cpu_level_bw(const comet_model_hw *hw, double bytes, double cores)
{
    if (bytes <= hw->lb.capacity * cores)
        return hw->lb.bw * cores;
    if (bytes <= hw->gb.capacity)
        return comet_model_level_bw(&hw->gb, cores);
    return comet_model_level_bw(&hw->dram, cores);
}

/* The fastest CPU level that can hold `bytes` (a bound: whatever order the
 * description's bandwidths come in, DRAM holds everything). */
static double fastest_fit_bw(const comet_model_hw *hw, double bytes, double cores)
{
    double bw = comet_model_level_bw(&hw->dram, cores);
    if (bytes <= hw->gb.capacity)
        bw = fmax(bw, comet_model_level_bw(&hw->gb, cores));
    if (bytes <= hw->lb.capacity * cores)
        bw = fmax(bw, hw->lb.bw * cores);
    return bw;
}

/* DRAM instances of a description: what one DRAM serves (schema v2
 * shared_by; v1: one per CPU node, one for all accelerator clusters). */
static double dram_instances(const comet_model_hw *hw)
{
    const int cpc = hw->clusters_per_chip > 0 ? hw->clusters_per_chip : hw->clusters;
    switch (hw->dram.shared_by) {
    case COMET_MODEL_SHARE_CORE:
    case COMET_MODEL_SHARE_CLUSTER:
        return hw->clusters;
    case COMET_MODEL_SHARE_CHIP:
    case COMET_MODEL_SHARE_NODE:
        return fmax(1, ceil((double)hw->clusters / fmax(1, cpc)));
    case COMET_MODEL_SHARE_SYSTEM:
        return 1;
    default:
        return hw->kind[0] == 'c' ? hw->clusters : 1;
    }
}

/* Bounded copy of a short name: snprintf("%s") in the evaluation path cost
 * a tenth of explore's time per mapping. */
static void name_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void add_coll(comet_model_result *r, const comet_model_hw *hw, comet_model_coll type,
    const char *op, const char *tensor, const char *dim, double bytes, int p, double calls)
{
    if (r->ncoll >= 4 || p <= 1)
        return;
    comet_model_coll_node *c = &r->coll[r->ncoll++];
    comet_model_coll_cost k = comet_model_coll_time(hw, type, p, bytes, COMET_MODEL_ALG_NONE);
    c->type = type;
    name_copy(c->reduce_op, sizeof c->reduce_op, op);
    name_copy(c->tensor, sizeof c->tensor, tensor);
    name_copy(c->dim, sizeof c->dim, dim);
    c->bytes = bytes;
    c->participants = p;
    c->alg = k.alg;
    c->cycles = k.cycles;
    c->calls = calls;
    r->e_link += calls * k.link_bytes * hw->cluster_net.link_pj_per_byte;
    r->coll_bytes += calls * bytes;
}

double comet_model_causal_computed(double lq, double lk, double blk)
{
    if (!(lq >= 1) || !(lk >= 1))
        return 1;
    blk = fmin(fmax(blk, 1), lq);
    /* block b (full, b < nb - 1) ends at query (b + 1) blk - 1, which sees
     * off + (b + 1) blk keys (the mask aligned at the end: off = lk - lq),
     * none below 0; the last block's last query sees all lk */
    const double off = lk - lq, nb = ceil(lq / blk), last = lq - (nb - 1) * blk;
    const double b0 = off >= 0 ? 0 : floor(-off / blk); /* first full block that sees a key */
    double sum = last * lk;
    if (b0 <= nb - 2) {
        const double nfull = nb - 1 - b0;
        const double ksum = (nb - 1) * nb / 2 - b0 * (b0 + 1) / 2; /* (b + 1) over b0..nb-2 */
        sum += blk * (nfull * off + blk * ksum);
    }
    return fmin(fmax(sum / (lq * lk), 0), 1);
}

/* The mapping's geometry: the shape as rows x N x K, the splits and tiles,
 * the causal share; what every step of eval_core reads. */
typedef struct geom {
    comet_model_opdims od;
    const comet_model_graph *g;
    int att, cpu, P, C, ch, used;
    double b, acc, io, M, N, K, Nout, masked, cf;
    double Mc, Nc, Kc, tm, tk, steps, mcore, ncore, thr, cfr, nfin;
    double ctm, ctn, ctk; /* the core-level temporal loop's factors (>= 1) */
    double inter_cl; /* unfused: the intermediate live per cluster (attention: a head's) */
    double ob; /* bytes per element of the GEMM's operands on chip (A, B; Q, K, V) */
} geom;

/* Step 1, the geometry: -1 when the mapping cannot run pb on hw at all. */
static int eval_geometry(
    const comet_model_hw *hw, const comet_model_problem *pb, const comet_model_mapping *mp, geom *e)
{
    comet_model_opdims od;
    comet_model_op_dims(pb, &od);
    if (!od.desc)
        return -1;
    /* a flash-style op (attention): a second GEMM over each row's output,
     * per group of rows (a head) its own stationary K and V */
    const int att = od.desc->flash, cpu = hw->kind[0] == 'c';
    const double b = hw->bytes_per_elem, acc = 4; /* fp32 accumulators and statistics */
    const double io = hw->io_bytes_per_elem > 0 ? hw->io_bytes_per_elem : b;
    /* Attention as rows (heads*lq) x N=lk x K=d with a second GEMM of width d. */
    const double M = od.rows, N = od.N, K = od.K, Nout = od.Nout;
    /* causal attention (the mask aligned at the last key): the fused kernel
     * visits only the visible pairs, about half when lq = lk, fewer when
     * there are more queries than keys (the first lq - lk see none); an
     * unfused mapping's GEMM is a plain GEMM that computes all of S, which a
     * separate pass then masks (kernels/kernels.c) */
    const double masked = att && pb->causal ? 1 - comet_model_causal_computed(od.group, N, 1) : 0.0;
    const double cf = mp->fused ? 1.0 - masked : 1.0;
    const int P = hw->clusters, C = hw->cores, ch = mp->cs_h > 1 ? mp->cs_h : 1;
    if (mp->cs_m < 1 || mp->cs_n < 1 || mp->cs_k < 1 || mp->ks_m < 1 || mp->ks_n < 1
        || ch * mp->cs_m * mp->cs_n * mp->cs_k > P || mp->ks_m * mp->ks_n > C || mp->tile_m < 1
        || mp->tile_k < 1 || (att && mp->cs_k > 1) || ch > od.groups || mp->ct_m < 0 || mp->ct_n < 0
        || mp->ct_k < 0)
        return -1;
    const comet_model_graph *g = od.desc->graph;
    const int used = ch * mp->cs_m * mp->cs_n * mp->cs_k; /* clusters in use */
    const double Mc = cdiv(M, ch * mp->cs_m), Nc = cdiv(N, mp->cs_n), Kc = cdiv(K, mp->cs_k);
    const double tm = fmin(mp->tile_m, Mc), tk = fmin(mp->tile_k, att ? Nc : Kc);
    const double steps = cdiv(Mc, tm);
    const double mcore = cdiv(tm, mp->ks_m), ncore = cdiv(Nc, mp->ks_n);
    const double thr = (double)mp->ks_m * mp->ks_n;
    /* what a fused causal kernel computes: each block of a core's rows
     * computes them against every key its last row sees (the diagonal
     * block whole, its masked part included); the bound keeps the ideal */
    const double cfr = mp->fused && masked > 0
        ? comet_model_causal_computed(od.group, N, fmin(mcore, od.group))
        : cf;
    /* after a K split the partial tiles are reduce-scattered over N: each of
     * the cs_k clusters finishes an N/cs_k share of the row */
    const double nfin = mp->cs_k > 1 ? cdiv(Nc, mp->cs_k) : Nc;
    *e = (geom) { .od = od,
        .g = g,
        .att = att,
        .cpu = cpu,
        .P = P,
        .C = C,
        .ch = ch,
        .used = used,
        .b = b,
        .acc = acc,
        .io = io,
        .M = M,
        .N = N,
        .K = K,
        .Nout = Nout,
        .masked = masked,
        .cf = cf,
        .Mc = Mc,
        .Nc = Nc,
        .Kc = Kc,
        .tm = tm,
        .tk = tk,
        .steps = steps,
        .mcore = mcore,
        .ncore = ncore,
        .thr = thr,
        .cfr = cfr,
        .nfin = nfin,
        .ctm = mp->ct_m > 1 ? mp->ct_m : 1,
        .ctn = mp->ct_n > 1 ? mp->ct_n : 1,
        .ctk = mp->ct_k > 1 ? mp->ct_k : 1,
        .inter_cl = (att ? fmin(od.group, Mc) : Mc) * Nc * cf * b,
        /* the GEMM's operands stay at the precision they are stored in
         * (an 8-bit A and B feed an 8-bit array: COMET's input and weight
         * buffers hold them at 8 bits); the intermediates and statistics
         * the GEMM produces are bytes_per_elem / fp32 (#37: cloud_c1's
         * 64 x 512 tile of A fills its 32 KiB input buffer at 8 bits and
         * was refused at 16) */
        .ob = io };
    return 0;
}

/* Step 2, capacity: the buffers a step needs (r->gb_need, r->lb_need);
 * -1 when they prune the mapping, else 0 with r->valid set, whether the
 * stationary operand stays in the global buffer (*b_resident) and its
 * slice's bytes (*bslice). */
static int eval_capacity(const comet_model_hw *hw, const comet_model_mapping *mp, const geom *e,
    comet_model_result *r, int *b_resident_out, double *bslice_out)
{
    const int att = e->att, cpu = e->cpu;
    const double b = e->b, acc = e->acc, K = e->K, Nc = e->Nc, Kc = e->Kc, tm = e->tm, tk = e->tk;
    const double mcore = e->mcore, ncore = e->ncore, ob = e->ob;
    /* ---- capacity (pruning) ---- */
    const double dbuf = mp->pipelined ? 2 : 1;
    const double bslice = att ? 2 * Nc * K * ob : Kc * Nc * ob; /* weights (attention: K and V) */
    double tile_bytes
        = dbuf * tm * (att ? K : Kc) * ob + (mp->fused ? tm * Nc * acc : dbuf * tm * Nc * b);
    if (att)
        tile_bytes = dbuf * tm * K * ob + tm * tk * acc + tm * K * acc + 2 * tm * acc;
    /* an unfused intermediate kept in the global buffer lives there beside
     * the step's tiles for the whole GEMM (attention: one head's scores) */
    if (!mp->fused && mp->inter_gb) {
        if (cpu)
            return -1; /* a CPU's caches place it themselves (cpu_level_bw) */
        tile_bytes += e->inter_cl;
    }
    const int b_resident = tile_bytes + bslice <= hw->gb.capacity;
    const double gb_need
        = tile_bytes + (b_resident ? bslice : dbuf * (att ? 2 * tk * K : tk * Nc) * ob);
    const double nc_lb = fmin(ncore, 256);
    /* the output buffer holds the accumulators of one core-level sub-tile
     * at a time: unfused, each sub-tile drains before the next; fused, a
     * row sub-tile runs its epilogue first, so its rows must be whole (the
     * N sub-tiles of a row sub-tile all stay) */
    const double lb_out_rows = ceil(mcore / e->ctm);
    const double lb_out_cols = mp->fused ? nc_lb : ceil(nc_lb / e->ctn);
    const double lb_in = dbuf * mcore * (att ? K : tk) * ob,
                 lb_w = dbuf * (att ? K : tk) * nc_lb * ob,
                 lb_out = lb_out_rows * lb_out_cols * acc;
    r->gb_need = gb_need;
    r->lb_need = lb_in + lb_w + lb_out;
    /* CPU caches are transparent (a kernel that overflows one still runs,
     * at the next level's bandwidth): capacities prune accelerator mappings */
    if ((!cpu && (gb_need > hw->gb.capacity || r->lb_need > hw->lb.capacity))
        || (hw->lb_input > 0 && lb_in > hw->lb_input) || (hw->lb_weight > 0 && lb_w > hw->lb_weight)
        || (hw->lb_output > 0 && lb_out > hw->lb_output))
        return -1;
    r->valid = 1;
    r->b_resident = b_resident;
    *b_resident_out = b_resident;
    *bslice_out = bslice;
    return 0;
}

/* Step 8, bounds: no mapping beats its compute or its compulsory traffic
 * (r->bound_*); a total below the bound is raised to it (r->bound_raised).
 * @return the total. */
static double eval_bounds(const comet_model_hw *hw, const comet_model_mapping *mp, const geom *e,
    vcost vc, double inter_cl, double total, comet_model_result *r)
{
    const int att = e->att, cpu = e->cpu, C = e->C;
    const double b = e->b, io = e->io, M = e->M, N = e->N, K = e->K, Nout = e->Nout;
    const double masked = e->masked, cf = e->cf;
    const comet_model_opdims od = e->od;
    const double hc = (double)hw->cores * hw->clusters;
    const double macs_cycle
        = (hw->systolic ? (double)hw->sa_rows * hw->sa_cols * hw->sa_arrays : hw->peak_flops / 2)
        * hc;
    /* causal: the visible pairs alone, whatever a mapping computes
     * beyond them (an unfused mapping's whole S, a fused block's
     * diagonal tile) */
    const double cfb = 1.0 - masked;
    const double macs = M * N * K * cfb * (att ? 2 : 1);
    r->bound_compute = macs_cycle > 0 ? macs / macs_cycle : 0;
    /* every element-op at the cheapest op's cycles per instruction of
     * simd_width lanes (a calibrated CPU states per-element costs with
     * width 1) */
    double cmin = INFINITY;
    for (int q = 0; q < COMET_MODEL_NVOP; q++)
        if (hw->vop_cycles[q] > 0)
            cmin = fmin(cmin, hw->vop_cycles[q]);
    r->bound_vector
        = isfinite(cmin) ? M * N * cfb * vc.n_mn * cmin / (fmax(1, hw->simd_width) * hc) : 0;
    /* compulsory bytes: A, B (K and V), the result; unfused, the
     * intermediate written once and read once more. On an accelerator
     * all from DRAM; on a CPU (warm caches between calls) from the
     * level that holds them */
    const double inst = dram_instances(hw);
    const double a_bytes = M * K * io, y_bytes = M * Nout * io,
                 b_bytes = (att ? 2 * od.groups * N * K : K * N) * io;
    const double io_bytes = a_bytes + b_bytes + y_bytes;
    const double inter_rt = mp->fused ? 0 : 2 * M * N * cf * b;
    if (cpu) {
        /* each tensor from the fastest level it fits in on its own (a
         * bound: the three together may not fit where each does, and a
         * description may give a level below a faster one) */
        const double nodes = hw->clusters;
        const double it_bw = fastest_fit_bw(hw, inter_cl, C) * nodes;
        r->bound_dram = 0;
        const double tens[] = { a_bytes, b_bytes, y_bytes };
        for (int t = 0; t < 3; t++)
            r->bound_dram += tens[t] / (fastest_fit_bw(hw, tens[t] / nodes, C) * nodes);
        r->bound_inter = inter_rt > 0 ? inter_rt / it_bw : 0;
    } else if (mp->inter_gb && !mp->fused) {
        /* the intermediate kept on chip: written and read once through
         * every cluster's global buffer and core network */
        const double on_bw
            = fmin(hw->gb.bw, hw->cores * comet_model_net_bw(&hw->core_net)) * hw->clusters;
        r->bound_dram = io_bytes / (hw->dram.bw * inst);
        r->bound_inter = on_bw > 0 ? inter_rt / on_bw : 0;
    } else {
        const double all_bw = hw->dram.bw * inst;
        r->bound_dram = (io_bytes + inter_rt) / all_bw;
        r->bound_inter = 0;
    }
    r->bound_cycles
        = fmax(fmax(r->bound_compute, r->bound_vector), fmax(r->bound_dram, r->bound_inter));
    if (total < r->bound_cycles) {
        /* the composition above overlapped more than the hardware can:
         * the latency is its bound (explain says so) */
        r->bound_raised = r->bound_cycles - total;
        total = r->bound_cycles;
    }
    return total;
}

/* Step 9, energy: per level, MACs and vector ops (NaN throughout where the
 * description states no energies). */
static void eval_energy(const comet_model_hw *hw, const geom *e, vcost vc, double b_cl,
    double noc_bytes, double psum_core, double pass_gb, double pass_noc, comet_model_result *r)
{
    const int att = e->att, used = e->used;
    const double b = e->b, acc = e->acc, M = e->M, N = e->N, K = e->K, Nout = e->Nout;
    const double cf = e->cf, Nc = e->Nc, Kc = e->Kc, tm = e->tm, steps = e->steps;
    /* ---- energy ---- */
    const double total_steps = steps * used; /* cluster-steps */
    r->macs = M * N * K * cf * (att ? 2 : 1);
    r->vec_ops = M * N * cf * vc.n_mn;
    if (!hw->energy_known) {
        /* no per-access energies in the description: unknown, not 0 */
        r->e_dram = r->e_gb = r->e_lb = r->e_mac = r->e_vec = r->e_link = r->energy_pj = NAN;
        return;
    }
    r->e_dram
        = r->dram_bytes / hw->dram.access_bytes * 0.5 * (hw->dram.read_pj + hw->dram.write_pj);
    /* unfused passes over an intermediate kept in the global buffer read
     * and write it there (pass_gb per cluster) */
    const double gb_bytes
        = total_steps * (tm * Kc * e->ob + 2 * tm * Nc * b) + b_cl * used + pass_gb * used;
    r->e_gb = gb_bytes / hw->gb.access_bytes * 0.5 * (hw->gb.read_pj + hw->gb.write_pj);
    /* operand reads into the array and result writes at the local buffers */
    const double lb_bytes = r->macs / fmax(1, hw->systolic ? hw->sa_rows : 8) * e->ob * 2
        + M * Nout * acc + psum_core * e->thr * total_steps;
    r->e_lb = lb_bytes / hw->lb.access_bytes * hw->lb.read_pj;
    r->e_mac = r->macs * hw->mac_pj;
    r->e_vec = M * N * cf * vc.pj_elem;
    /* the steps' core-network bytes, and the unfused passes' (the
     * intermediate between the global buffer and the cores' vector units) */
    r->e_link += (total_steps * noc_bytes + used * pass_noc) * hw->core_net.link_pj_per_byte;
    r->energy_pj = r->e_dram + r->e_gb + r->e_lb + r->e_mac + r->e_vec + r->e_link;
}

/* Step 5, the explicit collective nodes of a step (r->coll[], their calls and
 * algorithm): @return their cycles per step. */
static double eval_collectives(const comet_model_hw *hw, const comet_model_mapping *mp,
    const geom *e, int pn, comet_model_result *r)
{
    const comet_model_opdims od = e->od;
    const comet_model_graph *g = e->g;
    const int att = e->att, cpu = e->cpu;
    const double b = e->b, acc = e->acc, N = e->N, Nc = e->Nc, tm = e->tm, steps = e->steps;
    const double cf = e->cf;
    /* A split K (the first GEMM's reduction) reduce-scatters the partial
     * tile; every node that reduces over N (row statistics; attention's P V)
     * then needs an all-reduce among the clusters sharing the rows. Sizes are
     * what must move: row vectors, or attention's partial O rows. */
    if (mp->cs_k > 1)
        add_coll(
            r, hw, COMET_MODEL_REDUCE_SCATTER, "sum", "S", "K", tm * Nc * acc, mp->cs_k, steps);
    if (mp->fused && pn > 1) {
        for (int i = 0; i < g->n; i++) {
            const comet_model_node *nd = &g->node[i];
            if (!nd->reduces_n)
                continue;
            const char *op = nd->kind == COMET_MODEL_BOP_ROWMAX ? "max" : "sum";
            double bytes = nd->out_shape == COMET_MODEL_T_MD ? tm * od.Nout * acc : tm * acc;
            add_coll(r, hw, COMET_MODEL_ALLREDUCE, op, nd->out, att ? "Lk" : "N", bytes, pn, steps);
        }
    }
    if (!mp->fused && pn > 1 && cpu)
        /* nodes without shared memory: the row pass needs whole rows, so the
         * intermediate slices are gathered (kernels/dist.c) */
        add_coll(
            r, hw, COMET_MODEL_ALLGATHER, "", "S", att ? "Lk" : "N", tm * N * cf * b, pn, steps);
    double t_coll_step = 0;
    for (int i = 0; i < r->ncoll; i++) {
        t_coll_step += r->coll[i].cycles;
        r->coll_calls += (int)fmin(r->coll[i].calls, 1e9);
    }
    if (r->ncoll)
        name_copy(r->coll_alg, sizeof r->coll_alg, comet_model_alg_name(r->coll[0].alg));
    else
        name_copy(r->coll_alg, sizeof r->coll_alg, "none");
    return t_coll_step;
}

/* Step 6, the stationary operand evicted by the epilogue (CPU fused):
 * @return the cycles its reloads add to each block's GEMM. */
static double eval_reload(const comet_model_hw *hw, const comet_model_mapping *mp, const geom *e)
{
    const int att = e->att, cpu = e->cpu;
    const double b = e->b, acc = e->acc, io = e->io, M = e->M, K = e->K, Nout = e->Nout;
    const double Nc = e->Nc, Kc = e->Kc, tk = e->tk, mcore = e->mcore, ncore = e->ncore;
    const double thr = e->thr, nfin = e->nfin;
    const comet_model_opdims od = e->od;
    /* Each block's GEMM sweeps the whole packed B (attention: the head's K
     * and V). When B does not fit in the core's L2 beside the block's tile
     * and the result the epilogue writes through the caches, every block
     * reads it again from the LLC, and the micro-kernel's panel loads run at
     * the LLC's per-core rate instead of L2's: the difference is exposed
     * (the fused grid timed those loads from L2). Measured on a Zen 5 VM
     * (AMD EPYC, 1 thread, K = 64, 30-row blocks, gemm_only): 185 GFLOP/s
     * at N = 4096 (1 MiB of B beside a 480 KiB tile in a 1 MiB L2) against
     * 199 at N = 1024 (256 KiB): 7%; this term says 6.6%. Charged only where
     * the grid point the efficiency comes from kept B in L2 (else its
     * efficiency already holds the reloads). */
    double t_reload = 0;
    if (cpu && mp->fused && !mp->blas_gemm) {
        const comet_model_grid *gr = hw->fused_grid.values ? &hw->fused_grid : &hw->grid;
        const double kb = att ? 2 * K : Kc; /* B's rows per column (attention: K and V) */
        const double tcols = att ? tk + od.Nout : ncore; /* the block tile's columns */
        const double ycache
            = M * Nout * io >= UNFUSED_STREAM_MIN ? 0 : mcore * (att ? od.Nout : nfin) * io;
        const double nb = att ? Nc : ncore;
        const double ng = axis_clamp(gr->N, gr->values ? gr->nn : 0, nb),
                     kg = axis_clamp(gr->K, gr->values ? gr->nk : 0, att ? K : Kc) * (att ? 2 : 1);
        const double llc_core = comet_model_level_bw(&hw->gb, thr) / thr;
        if (reloads(hw, kb * nb * b, mcore * tcols * acc, ycache)
            && !(gr->values && reloads(hw, kg * ng * b, mcore * (att ? tcols : ng) * acc, 0))
            && llc_core > 0 && hw->lb.bw > 0 && llc_core < hw->lb.bw)
            t_reload = kb * nb * b * (1 / llc_core - 1 / hw->lb.bw);
    }
    return t_reload;
}

/* What the unfused passes over the whole intermediate cost (step 7). */
typedef struct upass {
    double t_pass; /* cycles */
    double pass_bytes, out_bytes, pass_dram; /* per cluster: all, the output, DRAM's */
    double res_acc; /* per cluster: the result the last pass writes to DRAM (accelerators) */
    double vec_pass; /* the vector unit's cycles */
} upass;

/* Step 7, unfused: the separate passes over the whole intermediate after
 * the GEMM wrote it (inter_cl bytes live per cluster, read at inter_bw_cl,
 * DRAM at dram_bw_cl). */
static upass eval_unfused_passes(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, const geom *e, vcost vc, int pn, double inter_cl,
    double inter_bw_cl, double dram_bw_cl)
{
    const comet_model_opdims od = e->od;
    const int att = e->att, cpu = e->cpu, C = e->C, used = e->used;
    const double b = e->b, io = e->io, M = e->M, N = e->N, masked = e->masked, cf = e->cf;
    double t_pass = 0, pass_bytes = 0, vec_pass = 0, out_bytes = 0, pass_dram = 0;
    double rd = mp->pass_reads, wr = mp->pass_writes;
    int st = mp->streaming;
    double rd0, wr0;
    int st0;
    comet_model_unfused_passes(pb->op, &rd0, &wr0, &st0);
    if (!(rd > 0)) {
        if (mp->one_pass)
            rd = rd0, wr = wr0;
        else /* op-by-op: every basic op reads the intermediate, those
              * with an intermediate-sized result write it */
            rd = vc.n_mn, wr = vc.n_mn_out;
    }
    if (!(wr >= 0))
        wr = wr0;
    if (st < 0) /* accelerators write by DMA: no allocate */
        st = cpu ? st0 && inter_cl >= UNFUSED_STREAM_MIN : 1;
    if (!cpu && st == 0)
        st = 1;
    const double per = M * N * cf * b / used; /* each cluster's share */
    /* a write to a line the pass did not read costs a read for
     * ownership too, unless it streams; in place it owns the line */
    const double wcost = st || (cpu && mp->in_place) ? 1 : 2;
    /* an accelerator's last pass writes the op's result to DRAM at
     * io_bytes_per_elem, as the fused path does (#37: it was written at
     * bytes_per_elem, 3-16% of unfused energy on the COMET presets) */
    const double res_acc = !cpu && !att && wr >= 1 ? per * wcost * io / b : 0;
    pass_bytes = per * (rd + wr * wcost) - (res_acc > 0 ? per * wcost : 0) + res_acc;
    if (att) /* P V reads S once more (its A operand) */
        pass_bytes += per;
    if (masked > 0) /* the mask pass writes -inf over the masked part of S */
        pass_bytes += per * masked * (st ? 1 : 2);
    /* the pass is vector- or bandwidth-bound and waits for the whole
     * intermediate (a dependency: sequential after the GEMM); every
     * cluster's pass traffic goes through its share of its memory */
    out_bytes = (att ? M * od.Nout : 0) * io / used;
    vec_pass = (per / b) * vc.per_elem / C + (M / used / C) * vc.per_row;
    if (pn > 1 && cpu) /* after the gather every node runs whole rows */
        vec_pass *= pn;
    /* a CPU pass that streams its output writes it with non-temporal
     * stores, past the caches to memory, wherever its input lives (an
     * L3-resident intermediate of 16 MiB read from the LLC, its result
     * written to DRAM: Zen 4, M = N = 2048, 4-11% under when the writes
     * were timed at the LLC's bandwidth) */
    const double w_bw = cpu && st ? dram_bw_cl : inter_bw_cl;
    /* the pass's bytes that reach DRAM: all of them where the
     * intermediate lives there, else its streamed writes */
    /* an intermediate kept in the global buffer: the passes' reads and
     * writes stay on chip, the result alone goes to DRAM */
    const int igb = !cpu && mp->inter_gb;
    pass_dram = igb                         ? res_acc
        : !cpu || inter_bw_cl == dram_bw_cl ? pass_bytes
        : w_bw == dram_bw_cl                ? per * wr * wcost
                                            : 0;
    const double t_mem = igb
        ? (pass_bytes - res_acc) / inter_bw_cl + (res_acc + out_bytes) / dram_bw_cl
        : !cpu ? pass_bytes / inter_bw_cl + out_bytes / dram_bw_cl
               : (pass_bytes - per * wr * wcost) / inter_bw_cl + per * wr * wcost / w_bw
            + out_bytes / dram_bw_cl;
    /* A CPU core's prefetchers overlap its loads with the row loop, but
     * its stores beyond the caches drain through a few write-combining
     * buffers that stall the loop when full: the loop's time and its
     * stores' add, the whole traffic bounds them. Measured on a Zen 5 VM
     * (AMD EPYC, 1 thread, M = N = 4096, K = 64, rows of 4096 written
     * with non-temporal stores to 64 MiB): the fused kernel's epilogue
     * (rows from L2) took 5.9 ms (17.5 ms fused less 11.6 ms of its GEMM
     * alone, gemm_only), where the row-pass slope says 3.4 ms and the
     * stores 2.0 ms at the 1-thread triad rate: overlapped they would
     * take 3.4 ms. Accelerators' DMA engines overlap the two. */
    if (cpu) {
        /* the epilogue's rule: an intermediate in L2 is the row passes'
         * measured regime (their stores are in vector.row_pass_widths);
         * beyond it the loop waits for the share of its stores it does
         * not hide (vector.store_hidden; all of them unmeasured). On the
         * Zen 4 VM (1 thread, M = N = 4096, K = 64) the whole stores on
         * top over-predicted unfused by 9-12%: the pass took about
         * 30.2 - 26.5 ms (the grid's sgemm of that shape), the fused
         * epilogue 3.8 ms, where loop plus stores said 6.7 ms */
        /* The row loop's loads: a row is read by its first sweep (max;
         * LayerNorm's sum), whose loads the prefetchers stream, but the
         * later sweeps run over the row from L1 with no loads to hide
         * the next row's behind: one core's reads of an intermediate
         * beyond the L2s add to its loop, at the rate one core draws
         * from that level (the row-pass costs were measured with rows
         * in L2: that part is in them already). Measured on the Zen 4
         * VM (1 thread, M = N = 4096, K = 64, the pass alone after the
         * GEMM): 6.3-6.6 ms, where the loop says 4.6 and its 64 MiB of
         * loads take 2.2 at one core's DRAM triad rate; at 2 threads
         * 3.1-3.5 ms, each core's loop 2.3 plus 1.1 of loads. Op by op,
         * each pass is one sweep whose loads overlap its work. */
        double t_load = 0;
        if (mp->one_pass && inter_cl > hw->lb.capacity * C && hw->lb.bw > 0) {
            const comet_model_mem *lv = inter_cl > hw->gb.capacity ? &hw->dram : &hw->gb;
            const double rate = lv->core_bw > 0 ? fmin(lv->core_bw, lv->bw) : lv->bw / C;
            const double loads = per * rd / C; /* one core's rows */
            if (rate > 0 && rate < hw->lb.bw)
                t_load = loads / rate - loads / hw->lb.bw;
        }
        t_pass = fmax(
            epilogue_cycles(hw, vec_pass + t_load, per * wr * wcost / w_bw, inter_cl / C), t_mem);
    } else if (mp->pipelined && e->steps > 1)
        /* the passes run the GEMM's tiles double-buffered: a tile's load
         * overlaps the previous tile's work, but the first tile's load and
         * the last tile's store are exposed (one step's traffic), as a fused
         * pipelined mapping's ramp is (#37: the passes overlapped
         * perfectly, which made an unfused mapping that keeps its
         * intermediate on chip beat fused ones by their ramp alone) */
        t_pass = fmax(vec_pass, t_mem) + t_mem / e->steps;
    else
        t_pass = vec_pass + t_mem;
    return (upass) { .t_pass = t_pass,
        .pass_bytes = pass_bytes,
        .out_bytes = out_bytes,
        .pass_dram = pass_dram,
        .res_acc = res_acc,
        .vec_pass = vec_pass };
}

/* One mapping's latency, energy, bounds and breakdown, in named steps:
 * geometry (1), capacity (2), compute per step (3, here), memory traffic and
 * the NoC per step (4, here), collective nodes (5), the stationary
 * operand's reloads (6), their combination per binding with BLAS's clearing
 * pass, the unfused passes (7), the thread team's regions, bounds (8), the
 * breakdown and energy (9). */
static void eval_core(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, comet_model_result *r)
{
    memset(r, 0, sizeof *r);
    geom e;
    if (eval_geometry(hw, pb, mp, &e) != 0)
        return;
    const comet_model_opdims od = e.od;
    const comet_model_graph *g = e.g;
    const int att = e.att, cpu = e.cpu, C = e.C, ch = e.ch, used = e.used;
    const double b = e.b, acc = e.acc, io = e.io, M = e.M, N = e.N, K = e.K, Nout = e.Nout;
    const double masked = e.masked, cf = e.cf, Mc = e.Mc, Nc = e.Nc, Kc = e.Kc, tm = e.tm;
    const double tk = e.tk, steps = e.steps, mcore = e.mcore, ncore = e.ncore, thr = e.thr;
    const double cfr = e.cfr, nfin = e.nfin;

    r->m_cluster = Mc;
    r->tile_rows = tm;
    r->steps = steps;

    int b_resident;
    double bslice;
    if (eval_capacity(hw, mp, &e, r, &b_resident, &bslice) != 0)
        return;

    /* ---- compute per step (one core's share; cores run in parallel) ---- */
    /* a row pass runs rows of a core's share of the columns (fused) or of
     * the cluster's (unfused passes) */
    const vcost vc = graph_vcost(hw, g, od.desc->ln_rows, od.desc->row_pass && !(mp->fused && att),
        mp->fused ? cdiv(nfin, mp->ks_n) : nfin);
    double eff = 1;
    /* with several threads the CPU kernels give each thread its own rows
     * (fused: row blocks through the micro-kernel; unfused: a row slab
     * through single-threaded BLAS, kernels/kernels.c): each core runs at
     * the 1-thread grid's efficiency on its share, not at OpenBLAS's own
     * threading. The distributed kernels' one BLAS call keeps the latter. */
    const int own = cpu && thr > 1 && !mp->blas_gemm;
    const double gthr = own ? 1 : thr;
    /* each core runs its own blocks of mcore rows through the micro-tiles;
     * the last block of each head (attention) or of a core's rows is
     * shorter. The CPU GEMM-row kernels give each core its own contiguous
     * share of M (ceil(M / cores) rows at most, the rows its passes take:
     * kernels' kern_thread_rows); attention's, contiguous shares of its
     * (head, block) list, as blocks came free before */
    const double own_share = cpu && !att ? ceil(Mc / fmax(1, mp->ks_m)) : 0;
    const double block_seg = att ? od.group : own_share > 0 ? own_share : Mc;
    r->micro_factor = mp->fused && !mp->blas_gemm && !hw->systolic
        ? micro_factor_blocks(hw, mcore, block_seg)
        : 1;
    /* each cluster runs its own share of the GEMM: the efficiency of that
     * share (on one cluster, the whole problem). The fused kernels' tiles
     * compute micro_factor x the rows they need, at the efficiency of the
     * rows they compute: fewer rows never cost more than more rows */
    /* with its own rows per core, the shape one core runs: its share of the
     * rows and of the columns (the cores split M or N) */
    const double ms = own ? mp->ks_m : 1, ns = own ? mp->ks_n : 1;
    if (!hw->systolic)
        eff = mp->fused && !mp->blas_gemm
            ? comet_model_fused_gemm_eff(
                hw, ceil(Mc / ms) * r->micro_factor, ceil(Nc / ns), Kc, gthr)
            : comet_model_gemm_eff(
                hw, ceil((att ? fmin(od.group, Mc) : Mc) / ms), ceil(Nc / ns), Kc, gthr);
    /* rows per core per step: a block that overhangs its rows (the last of
     * a head, or of M) computes only the rows it has, except on a systolic
     * array, which folds whole tiles; the cores take blocks as they come
     * free, so the busiest core's rows over the steps */
    double mrow = mcore;
    if (!hw->systolic)
        mrow = fmin(mcore,
            (own_share > 0
                    ? own_share
                    : comet_model_busiest_rows(mcore, att ? fmin(od.group, Mc) : Mc, Mc, mp->ks_m))
                / steps);
    double tg = gemm_cycles_sub(hw, mrow, ncore * cfr, Kc, eff, e.ctm, e.ctn, e.ctk);
    if (att) { /* P V: mcore x d x Nc; a core splitting the keys reduces over its share */
        double eff2 = hw->systolic ? 1
            : mp->fused
            ? eff
            : comet_model_gemm_eff(hw, ceil(fmin(od.group, Mc) / ms), od.Nout, ceil(Nc / ns), gthr);
        /* unfused causal: P V in blocks of pv_rows queries, each over the
         * keys its last query sees (the CPU kernels); else over cfr of them */
        const double cpv = !mp->fused && masked > 0 && mp->pv_rows >= 1
            ? comet_model_causal_computed(od.group, N, mp->pv_rows)
            : cfr;
        /* its rows in the row sub-tiles, its reduction (the keys) in the
         * column sub-tiles of the first GEMM */
        tg += gemm_cycles_sub(hw, mrow, od.Nout, ncore * cpv, eff2, e.ctm, 1, e.ctn);
    }
    tg *= r->micro_factor;
    /* a K step shorter than the cluster's K (tile_k < Kc) leaves partial
     * sums: each K step after the first reads and writes the core's fp32
     * accumulator tile in its local buffer (#37: tile_k cost nothing). On an
     * accelerator; a CPU's partial sums stay in its registers and caches,
     * inside the measured GEMM efficiency */
    const double ksub = !cpu && !att ? cdiv(Kc, tk) : 1;
    /* and each K sub-tile of the core-level loop inside a step likewise */
    const double kpieces = ksub * (!cpu ? fmin(e.ctk, Kc) : 1);
    const double psum_core = (kpieces - 1) * 2 * mrow * ncore * cfr * acc;
    /* through the output part's own port where it has one */
    const double psum_bw = hw->lb_output_bw > 0 ? hw->lb_output_bw : hw->lb.bw;
    if (psum_core > 0 && psum_bw > 0)
        tg += psum_core / psum_bw;
    const double elems_core = mrow * cdiv(nfin, mp->ks_n) * cfr;
    double tv
        = elems_core * vc.per_elem + mrow * vc.per_row + mrow * (att ? od.Nout : 0) * vc.per_out;
    if (att && mp->fused) {
        /* online softmax: rescale O and the sums once per KV tile, P V adds
         * into the O row once per KV tile. The tiles a row visits: all of
         * them, or under a causal mask those up to its block's last key (kv
         * keys on average, the diagonal tile whole; each block's last tile
         * partial: half a tile more than kv's whole tiles on average). With
         * every tile charged, causal 1024^2 went from 14% over at 32-key
         * tiles to 8% under at 512 (Zen 4 VM); visited only, 8-11% under
         * at every tile: the rest is a causal cost not modelled */
        const double kv = mrow > 0 ? elems_core / mrow : 0;
        const double ntile = masked > 0 ? fmax(1, fmin(cdiv(Nc, tk), kv / tk + 0.5)) : cdiv(Nc, tk);
        /* An accelerator's first KV tile starts the running max, sum and O
         * (the P V product lands in the cleared accumulators): only the
         * tiles after it rescale O and add into it. Charging the first too
         * made a fused mapping with a single KV tile (a plain softmax) slower
         * than the unfused passes over the same scores (#37: edge attention
         * 16 x 512 x 512 fused 0.97x of unfused). The CPU kernels' loop runs
         * the rescale on every tile (kernels/kernels.c): measured so. */
        const double resc = cpu ? ntile : ntile - 1;
        tv += resc * mrow
            * (od.Nout * (hw->vop_cycles[COMET_MODEL_VOP_MUL] + hw->vop_cycles[COMET_MODEL_VOP_ADD])
                    / fmax(1, hw->simd_width)
                + hw->vop_cycles[COMET_MODEL_VOP_EXP]);
        /* Each row of each KV tile runs the softmax row pass's first two
         * loops (max; exp, store and sum: kernels/kernels.c), not its third
         * (scaling by 1 / sum: deferred to O). Where the row passes were
         * measured, a tile's row costs the measured softmax row of its width
         * less that width's in-cache multiply loop; the sum of the single-op
         * loops over-states it (Zen 4 VM, 1 thread, rows of 256: 360 cycles
         * composed against 295 measured for the whole three-loop row), and
         * fused attention came out 4-8% over at 256-2048 keys. Else the
         * composed ops, and the row's fixed cost on every tile after the
         * first. */
        const double wt = kv / ntile;
        const double tab = cpu && wt > 0 ? comet_model_row_pass_cycles(hw, 0, wt) : NAN;
        const double row_tile = tab - wt * hw->vop_cycles[COMET_MODEL_VOP_MUL];
        if (row_tile > 0)
            tv += ntile * mrow * row_tile - elems_core * vc.per_elem - mrow * vc.row_fixed;
        else
            tv += (ntile - 1) * mrow * vc.row_fixed;
    }

    /* ---- memory traffic per step, per cluster ---- */
    /* Each cluster's traffic is timed at its share of the DRAM instance it
     * uses: accelerator clusters share one DRAM (v1 reading; schema v2:
     * shared_by chip shares it among one chip's clusters), CPU clusters are
     * nodes with their own. The clusters in use spread over the instances;
     * the busiest instance serves ceil(used / instances) of them. */
    const double dram_inst = fmin(dram_instances(hw), used);
    const double dram_bw_cl = (cpu ? comet_model_level_bw(&hw->dram, thr) : hw->dram.bw)
        / ceil(used / fmax(dram_inst, 1));
    const double dram_bw = dram_bw_cl * used; /* all clusters in use together */
    /* A: clusters holding the same rows read it once when the network broadcasts */
    const double a_share
        = (double)(hw->cluster_net.broadcast ? ch * mp->cs_m * mp->cs_k : used) / used;
    double dram_step = tm * (att ? K : Kc) * io * a_share; /* per cluster */
    /* the stationary operand (B; attention: K and V): a cluster's slice once
     * when it stays in the global buffer, else once per step; attention
     * loads each head's K and V as the head starts */
    const double b_share = (double)(hw->cluster_net.broadcast ? mp->cs_n * mp->cs_k : used) / used;
    const double heads_cl = att ? fmax(1, Mc / od.group) : 1;
    /* attention: the clusters whose rows lie in one head (a head's queries
     * split over them) read its K and V once when the network broadcasts,
     * as the GEMMs' clusters holding the same columns read B once (#37:
     * each read them whole, which made fused cloud attention 8 x 1024^2
     * slower than an unfused mapping splitting the keys instead) */
    const double kv_share = hw->cluster_net.broadcast ? fmin(1, Mc / od.group) : 1;
    const double b_cl = (att ? 2 * Nc * K * kv_share : Kc * Nc * b_share) * io; /* one slice */
    double once_cl = 0; /* loaded before the first step */
    if (!b_resident)
        /* streamed every step: attention needs the K and V of every head
         * the step's rows belong to (a step of tm rows spans tm/lq heads) */
        dram_step += b_cl * (att ? fmin(heads_cl, fmax(1, ceil(tm / od.group))) : 1);
    else if (att) {
        once_cl = b_cl; /* the first head's K and V */
        dram_step += b_cl * (heads_cl - 1) / steps; /* the other heads' as they start */
    } else
        once_cl = b_cl;
    const double y_step = (att ? tm * od.Nout / mp->cs_n : tm * nfin) * io; /* per cluster */
    double dram_write_step = mp->fused ? y_step : 0;
    /* unfused: the GEMM writes the intermediate instead of the result, to
     * DRAM on an accelerator, on a CPU to the cache level it fits (per node:
     * one head's slice at a time in attention) */
    /* kept in the global buffer (inter_gb), the GEMM's result is there
     * already: the core network brought it (noc_bytes below) */
    const int igb = !mp->fused && mp->inter_gb && !cpu;
    const double inter_step = mp->fused || igb ? 0 : tm * nfin * cf * b;
    const double inter_cl = e.inter_cl; /* live per cluster */
    /* the passes read and write it at the slower of the global buffer and
     * the core network that carries it to the cores' vector units */
    const double inter_bw_cl = cpu ? comet_model_cpu_level_bw(hw, inter_cl, C)
        : igb                      ? fmin(hw->gb.bw, C * comet_model_net_bw(&hw->core_net))
                                   : dram_bw_cl;
    const double t_in = dram_step / dram_bw_cl;
    /* a CPU result below the streaming size stays in the cache level it
     * fits (ordinary stores); at or above it, it streams to memory */
    const double y_cl = (att ? Mc * od.Nout / mp->cs_n : Mc * nfin) * io;
    const double out_bw_cl
        = cpu && y_cl < UNFUSED_STREAM_MIN ? comet_model_cpu_level_bw(hw, y_cl, C) : dram_bw_cl;
    const double t_out = dram_write_step / out_bw_cl + inter_step / inter_bw_cl;
    /* the stationary operand's first load: on a CPU from the level it lives
     * in between calls (warm caches), on an accelerator from DRAM. Attention
     * streams every head's K and V through the caches: the first head's stay
     * there for the next call only when all the heads' do */
    const double once_bw
        = cpu ? comet_model_cpu_level_bw(hw, once_cl * (att ? heads_cl : 1), C) : dram_bw_cl;
    const double t_once = once_cl / once_bw;

    /* ---- NoC: global buffer to cores ---- */
    /* B stays in the cores' local buffers only when a core's slice fits its
     * weight buffer; else it streams from the global buffer every step (an
     * accelerator's explicit buffers; a CPU's GEMM packs B panels into its
     * caches, which the measured efficiency already holds) */
    const double lbw = hw->lb_weight > 0 ? hw->lb_weight : hw->lb.capacity / 3;
    /* a core's slice: its columns of B, or (attention) the K and V rows of
     * the keys it takes (#37: it was a whole KV tile's, tk keys, even where
     * the cores split the keys: fused attention re-streamed K and V over
     * the core network every step where each core's share stays local) */
    const int b_local = (att ? 2 * K * ncore : Kc * ncore) * e.ob <= lbw;
    double noc_bytes = tm * (att ? K : Kc) * e.ob * (hw->core_net.broadcast ? 1 : mp->ks_n)
        /* the step's result back to the global buffer: fused, the
         * cluster's finished columns (#37: it was the whole row's N, 4-16x
         * a cluster's share under an N split: cloud_c1's NoC energy 24x
         * COMET's) or attention's O rows; unfused, the intermediate */
        + tm * (mp->fused ? (att ? Nout : nfin) : Nc) * b;
    if (!b_resident || (!cpu && !b_local))
        noc_bytes += bslice;
    /* cores that split N (attention: the keys) each hold part of every row:
     * each row statistic (and attention's partial O rows) is combined among
     * them through the core network once per step, a reduction tree of
     * ceil(log2 ks_n) hops (#17 defect 14) */
    double combine_lat = 0;
    if (mp->fused && mp->ks_n > 1)
        for (int i = 0; i < g->n; i++) {
            const comet_model_node *nd = &g->node[i];
            if (!nd->reduces_n)
                continue;
            noc_bytes
                += (nd->out_shape == COMET_MODEL_T_MD ? tm * od.Nout : tm) * acc * (mp->ks_n - 1);
            combine_lat += ceil(log2(mp->ks_n)) * hw->core_net.hop_latency;
        }
    /* the cores' buffers take a step's bytes through their ports: the input
     * part A (Q), the weight part a streamed B (K, V), the output part the
     * results; each part at its own port where the description gives them
     * (local_buffer.input_bw, ...), else all through the one shared port
     * (an accelerator's explicit buffers; a CPU's caches are in its
     * measured rates) */
    double t_port = 0;
    if (!cpu && hw->lb.bw > 0) {
        const double in_core = mcore * (att ? K : Kc) * e.ob;
        const double w_core = !b_resident || !b_local ? (att ? 2 * K : Kc) * ncore * e.ob : 0;
        const double out_core
            = mcore * (mp->fused ? (att ? Nout : cdiv(nfin, mp->ks_n)) : ncore) * b;
        const double ib = hw->lb_input_bw, wb = hw->lb_weight_bw, ob_bw = hw->lb_output_bw;
        t_port = ib > 0 && wb > 0 && ob_bw > 0
            ? fmax(in_core / ib, fmax(w_core / wb, out_core / ob_bw))
            : (in_core + w_core + out_core) / hw->lb.bw;
    }
    const double t_noc_step
        = fmax(fmax(noc_bytes / hw->gb.bw, noc_bytes / (C * comet_model_net_bw(&hw->core_net))),
              t_port)
        + hw->core_net.hop_latency * (hw->core_net.dims[0] + hw->core_net.dims[1]) + combine_lat;

    /* ---- explicit collective nodes ---- */
    const int pn = mp->cs_n * mp->cs_k;
    const double t_coll_step = eval_collectives(hw, mp, &e, pn, r);

    /* ---- the stationary operand evicted by the epilogue (CPU fused) ---- */
    const double t_reload = eval_reload(hw, mp, &e);

    /* ---- combine ---- */
    /* GEMM engine and vector unit in series unless the hardware says they
     * overlap (schema v2 `overlap`) */
    const int ovl
        = (hw->overlap & COMET_MODEL_ENGINE_GEMM) && (hw->overlap & COMET_MODEL_ENGINE_VECTOR);
    const double comp_step = mp->fused ? (ovl ? fmax(tg, tv) : tg + tv) : tg;
    double total;
    if (cpu && mp->fused && !mp->blas_gemm) {
        /* a CPU core runs a block's GEMM, then its epilogue: operand loads
         * overlap the GEMM (prefetchers stream them beside the FMAs); the
         * epilogue's row loop waits for the result's stores to drain (the
         * unfused passes below say why) */
        const double step = fmax(tg + t_reload, fmax(t_in, t_noc_step))
            + epilogue_cycles(hw, tv, t_out, y_cl / C) + t_coll_step;
        total = t_once + steps * step;
    } else if (mp->pipelined && cpu) {
        /* a CPU's prefetchers and write-back caches overlap at cache-line
         * granularity: no exposed first load or last store */
        total = t_once + steps * (fmax(comp_step, fmax(t_in + t_out, t_noc_step)) + t_coll_step);
    } else if (mp->pipelined) {
        /* double buffering: step i computes while tile i+1 loads and tile
         * i-1 stores (loads and stores share the bandwidth); the first load
         * and the last store are exposed, once each */
        const double steady = fmax(comp_step, fmax(t_in + t_out, t_noc_step)) + t_coll_step;
        const double first = fmax(comp_step, fmax(t_in, t_noc_step)) + t_coll_step;
        const double last = fmax(comp_step, fmax(t_out, t_noc_step)) + t_coll_step;
        total = t_once + t_in + t_noc_step
            + (steps <= 1 ? comp_step + t_coll_step : first + (steps - 2) * steady + last) + t_out;
    } else /* sequential: load, move, compute, store, per step */
        total = t_once + steps * (t_in + t_noc_step + comp_step + t_out + t_coll_step);
    const double ramp = t_once + (mp->pipelined && !cpu ? t_in + t_noc_step + t_out : 0);

    /* ---- unfused on a CPU: BLAS clears C first ---- */
    /* With beta = 0 OpenBLAS runs its beta kernel over C before the product
     * (a pass of stores alone; memset where C is contiguous). The sgemm grid
     * measured that pass with C inside the LLC; an intermediate beyond it
     * pays the pass at memory's store bandwidth instead, after which the
     * product starts: the difference is added, not overlapped. The store
     * bandwidth is the measured fill's where the profile has it: a Zen 4 VM
     * fills DRAM at 77-98 GB/s against a 30-38 GB/s triad, and its 4096 x
     * 4096 x 64 unfused GEMM at 2 threads (2048-row slabs, 32 MiB of C
     * each) was 7-16% over with every line charged a read and a write at
     * the triad's bandwidth. */
    double t_beta = 0;
    if (!mp->fused && cpu && inter_cl > hw->gb.capacity) {
        const double per = M * N * cf * b / used;
        t_beta = per / comet_model_level_write_bw(&hw->dram, C)
            - per / comet_model_level_write_bw(&hw->gb, C);
        /* only as far as the efficiency comes from grid points whose C was
         * in the LLC: a point beyond it (a 4096 x 4096 point of the full
         * grid) measured the clearing at memory bandwidth already (Zen 4,
         * M = N = 4096, K = 64, 1 thread: unfused 8-12% over with it
         * counted twice) */
        const double ms = own ? mp->ks_m : 1, ns = own ? mp->ks_n : 1;
        t_beta *= comet_model_gemm_grid_c_share(
            hw, ceil((att ? fmin(od.group, Mc) : Mc) / ms), ceil(Nc / ns), hw->gb.capacity);
        if (t_beta < 0)
            t_beta = 0;
        total += t_beta;
    }

    /* ---- unfused: the separate passes over the whole intermediate ---- */
    upass up = { 0 };
    if (!mp->fused) {
        up = eval_unfused_passes(hw, pb, mp, &e, vc, pn, inter_cl, inter_bw_cl, dram_bw_cl);
        total += up.t_pass;
    }
    const double t_pass = up.t_pass, vec_pass = up.vec_pass, out_bytes = up.out_bytes;
    const double pass_dram = up.pass_dram;

    /* ---- a CPU thread team: each parallel region's fork and join ---- */
    /* With T > 1 threads every OpenMP region the kernels open costs the
     * team's wake-up and the join barrier beyond its work: fitted from the
     * fused grid (one region per call) as the intercept of its T-thread
     * times against its 1-thread times over the busiest thread's rows. On
     * the Zen 5 VM 1.7-16 us a region across five runs (sgemm 64^3 takes
     * 7-9 us on one thread), where the 256-row kernels at 2 threads take
     * 70-180 us in two to six regions. */
    double t_sync = 0;
    if (cpu && thr > 1 && hw->par_region_cycles > 0) {
        t_sync = comet_model_parallel_regions(pb, mp, (int)thr) * hw->par_region_cycles;
        total += t_sync;
    }

    /* ---- bounds: no mapping beats its compute or its compulsory traffic ---- */
    total = eval_bounds(hw, mp, &e, vc, inter_cl, total, r);

    r->cycles = total;
    r->seconds = total / (hw->clock_ghz * 1e9);
    r->t_gemm = steps * tg;
    r->t_vec = mp->fused ? steps * tv : vec_pass;
    r->t_pass = t_pass;
    r->t_beta = t_beta;
    r->t_reload = steps * t_reload;
    r->t_sync = t_sync;
    /* DRAM busy time: the bytes that go to DRAM at the clusters' bandwidth.
     * On a CPU only what the composition above sends there: the stationary
     * operand's first load, a small result and a cache-sized intermediate
     * are served by the cache level that holds them (#17 defect 15: the
     * busy time counted them and could exceed the latency) */
    const double inter_dram = !cpu || inter_bw_cl == dram_bw_cl;
    const double once_dram = !cpu || once_bw == dram_bw_cl,
                 out_dram = !cpu || out_bw_cl == dram_bw_cl;
    r->dram_bytes = used
        * ((once_dram ? once_cl : 0)
            + steps * (dram_step + (out_dram ? dram_write_step : 0) + (inter_dram ? inter_step : 0))
            + pass_dram + out_bytes);
    r->t_dram = r->dram_bytes / dram_bw;
    r->t_noc = steps * t_noc_step;
    r->t_coll = steps * t_coll_step;
    r->t_ramp = ramp;
    r->t_stall = total - r->t_gemm - (mp->fused ? r->t_vec : 0) - r->t_coll - t_pass - t_beta
        - r->t_reload - t_sync;
    if (r->t_stall < 0)
        r->t_stall = 0;

    /* ---- energy ---- */
    /* the passes' bytes that cross the core network: an accelerator's vector
     * units are in the cores (a CPU's caches: no network) */
    const double pass_noc = !mp->fused && !cpu ? up.pass_bytes : 0;
    const double pass_gb = !mp->fused && !cpu && mp->inter_gb ? up.pass_bytes - up.res_acc : 0;
    eval_energy(hw, &e, vc, b_cl, noc_bytes, psum_core, pass_gb, pass_noc, r);
}

void comet_model_eval_fast(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, comet_model_result *r)
{
    eval_core(hw, pb, mp, r);
}

void comet_model_eval(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, comet_model_result *r)
{
    eval_core(hw, pb, mp, r);
    /* descriptive strings only here (the search's inner loop skips them) */
    size_t l = 0;
    for (int i = 0; i < r->ncoll && l < sizeof r->coll_desc; i++) {
        const comet_model_coll_node *c = &r->coll[i];
        int k = snprintf(r->coll_desc + l, sizeof r->coll_desc - l, "%s%s(%s %s) %.0fB/%s x%.0f",
            i ? "; " : "", comet_model_coll_name(c->type), c->reduce_op, c->tensor, c->bytes,
            comet_model_alg_name(c->alg), c->calls);
        if (k < 0)
            break;
        l += (size_t)k;
    }
    if (!r->ncoll && r->valid && !mp->fused && mp->cs_n > 1)
        snprintf(r->coll_desc, sizeof r->coll_desc, "none (intermediate through DRAM)");
}

/* ------------------------------------------------------------------ */
/* The mapping the local kernels run                                  */
/* ------------------------------------------------------------------ */

void comet_model_local_mapping(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    double tile_m, int threads, int ranks, comet_model_mapping *mp)
{
    (void)hw;
    memset(mp, 0, sizeof *mp);
    comet_model_opdims od;
    comet_model_op_dims(pb, &od);
    /* a flash-style op tiles its keys (the N dimension) as well */
    const int flash = od.desc && od.desc->flash;
    const double M = od.rows;
    mp->fused = fused;
    mp->pipelined = 1; /* out-of-order cores and prefetchers overlap streaming with compute */
    mp->cs_m = 1;
    mp->cs_n = ranks > 0 ? ranks : 1; /* the distributed kernels split N (attention: Lk) */
    mp->cs_k = 1;
    mp->ks_m = threads > 0 ? threads : 1; /* threads take row blocks */
    mp->ks_n = 1;
    mp->one_pass = 1; /* unfused: whole BLAS GEMM, then one row pass (kernels/) */
    /* unfused causal attention: P V per block of 64 queries over the keys
     * the block sees (kernels/kernels.c) */
    mp->pv_rows = fused ? 0 : 64;
    mp->streaming = -1;
    /* fused: row blocks of tile_m rows, one per thread at a time; the
     * distributed kernels reduce the statistics of all rows at once */
    if (fused && mp->cs_n == 1)
        mp->tile_m = (tile_m > 0 ? tile_m : 64) * mp->ks_m;
    else
        mp->tile_m = M;
    /* the distributed kernels' local GEMM is one BLAS call (kernels/dist.c) */
    mp->blas_gemm = mp->cs_n > 1;
    mp->tile_k = flash ? (od.N / mp->cs_n < 512 ? od.N / mp->cs_n : 512) : od.K;
    if (mp->tile_k < 1)
        mp->tile_k = 1;
}
