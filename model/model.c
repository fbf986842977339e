/* The dataflow model: latency and energy of one mapping (allocation-free),
 * explicit collectives on any topology, mapping search, explanations. */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const op_names[] = { "gemm_softmax", "gemm_layernorm", "attention" };

const char *comet_model_op_name(comet_model_op op)
{
    return (unsigned)op < 3 ? op_names[op] : "unknown";
}

int comet_model_op_parse(const char *s, comet_model_op *op)
{
    for (int i = 0; s && i < 3; i++)
        if (!strcmp(s, op_names[i])) {
            *op = (comet_model_op)i;
            return 0;
        }
    return -EINVAL;
}

static double cdiv(double a, double b)
{
    return ceil(a / b);
}

/* ------------------------------------------------------------------ */
/* Collectives: alpha-beta per algorithm, chosen per topology          */
/* ------------------------------------------------------------------ */

typedef struct coll_cost {
    double cycles;
    double link_bytes; /* bytes x hops crossing links (energy) */
    const char *alg;
} coll_cost;

/* All-reduce of n bytes over p nodes of net (elements of esize bytes). */
static coll_cost allreduce_cost(
    const comet_model_hw *hw, const comet_model_net *net, int p, double n, double esize)
{
    coll_cost best = { 0, 0, "none" };
    if (p <= 1 || n <= 0)
        return best;
    double beta = 1.0 / net->link_bw, a0 = net->startup, h = net->hop_latency;
    double lg = ceil(log2((double)p));
    double red = (n / esize) / hw->simd_width * hw->vop_cycles[COMET_MODEL_VOP_ADD];
    int X = net->dims[0] < p ? net->dims[0] : p, Y = (p + X - 1) / X;
    double cand[4];
    const char *names[4] = { "ring", "recursive_doubling", "mesh_tree", "in_network" };
    for (int i = 0; i < 4; i++)
        cand[i] = INFINITY;
    double hops_ring = 1, hops_rd = 1;
    switch (net->topo) {
    case COMET_MODEL_MESH2D:
        hops_ring = 1; /* snake order keeps ring neighbours adjacent */
        hops_rd = (X - 1 + Y - 1) / 2.0 + 1;
        /* COMET's row-then-column tree: reduce then broadcast along a
         * spanning tree of depth (X-1)+(Y-1), store-and-forward per hop */
        {
            double H = (X - 1) + (Y - 1);
            cand[2] = 2 * (H * (h + a0) + H * n * beta) + red * H;
        }
        break;
    case COMET_MODEL_TORUS2D:
        hops_rd = (X / 2.0 + Y / 2.0) / 2.0 + 1;
        {
            double H = floor(X / 2.0) + floor(Y / 2.0);
            cand[2] = 2 * (H * (h + a0) + H * n * beta) + red * H;
        }
        break;
    case COMET_MODEL_RING:
        hops_rd = p / 4.0 + 1;
        break;
    case COMET_MODEL_SWITCH:
        hops_ring = 2;
        hops_rd = 2;
        break;
    case COMET_MODEL_FULL:
        break;
    }
    /* ring: reduce-scatter + all-gather, 2(p-1) steps of n/p */
    cand[0] = 2 * (p - 1) * (a0 + hops_ring * h) + 2.0 * (p - 1) / p * n * beta + red;
    /* recursive doubling: lg p exchanges of the whole vector */
    cand[1] = lg * (a0 + hops_rd * h + n * beta) + lg * red;
    if (net->reduction)
        cand[3] = 2 * (a0 + hops_rd * h * lg) + n * beta;
    int bi = 0;
    for (int i = 1; i < 4; i++)
        if (cand[i] < cand[bi])
            bi = i;
    best.cycles = cand[bi];
    best.alg = names[bi];
    best.link_bytes = bi == 0 ? 2.0 * (p - 1) / p * n * p * hops_ring
                              : (bi == 1 ? lg * n * p * hops_rd : 2 * n * p);
    return best;
}

/* ------------------------------------------------------------------ */
/* Evaluation                                                          */
/* ------------------------------------------------------------------ */

static double gemm_cycles(
    const comet_model_hw *hw, double m, double n, double k, double eff_m, double eff_n, double thr)
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
    double eff = comet_model_gemm_eff(hw, eff_m, eff_n, k, thr);
    return 2 * m * n * k / (hw->peak_flops * eff);
}

/* Per-element vector cycles of the epilogue and per-row reduction cycles. */
static void vec_costs(
    const comet_model_hw *hw, comet_model_op op, double *per_elem, double *per_row, double *pj_elem)
{
    const double *c = hw->vop_cycles, *e = hw->vop_pj;
    double lgw = hw->simd_width > 1 ? ceil(log2((double)hw->simd_width)) : 0;
    if (op == COMET_MODEL_GEMM_LAYERNORM) {
        /* sum, sub, sq-acc (mul+add), sub, mul(rstd), mul(gamma), add(beta) */
        *per_elem
            = 3 * c[COMET_MODEL_VOP_ADD] + 2 * c[COMET_MODEL_VOP_ADD] + 3 * c[COMET_MODEL_VOP_MUL];
        *per_row
            = 2 * lgw * c[COMET_MODEL_VOP_ADD] + c[COMET_MODEL_VOP_SQRT] + c[COMET_MODEL_VOP_DIV];
        *pj_elem = 5 * e[COMET_MODEL_VOP_ADD] + 3 * e[COMET_MODEL_VOP_MUL];
    } else {
        /* max, sub, exp, sum, div */
        *per_elem = c[COMET_MODEL_VOP_MAX] + 2 * c[COMET_MODEL_VOP_ADD] + c[COMET_MODEL_VOP_EXP]
            + c[COMET_MODEL_VOP_DIV];
        *per_row = lgw * (c[COMET_MODEL_VOP_MAX] + c[COMET_MODEL_VOP_ADD]);
        *pj_elem = e[COMET_MODEL_VOP_MAX] + 2 * e[COMET_MODEL_VOP_ADD] + e[COMET_MODEL_VOP_EXP]
            + e[COMET_MODEL_VOP_DIV];
        if (op == COMET_MODEL_ATTENTION) /* online rescale of O and l */
            *per_elem += c[COMET_MODEL_VOP_MUL];
    }
}

void comet_model_eval(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, comet_model_result *r)
{
    memset(r, 0, sizeof *r);
    const int att = pb->op == COMET_MODEL_ATTENTION;
    const double b = hw->bytes_per_elem, acc = 4; /* fp32 accumulators */
    /* Attention as rows (heads*lq) x N=lk x K=d with a second GEMM of width d. */
    const double M = att ? pb->heads * pb->lq : pb->M, N = att ? pb->lk : pb->N,
                 K = att ? pb->d : pb->K, Nout = att ? pb->d : N;
    const double causal_frac = att && pb->causal ? 0.5 + 0.5 / fmax(pb->lk, 1) : 1.0;
    const int P = hw->clusters, C = hw->cores;
    if (mp->cs_m * mp->cs_n * mp->cs_k > P || mp->ks_m * mp->ks_n > C || mp->tile_m < 1
        || mp->tile_k < 1 || (att && mp->cs_k > 1))
        return;
    const double Mc = cdiv(M, mp->cs_m), Nc = cdiv(N, mp->cs_n), Kc = cdiv(K, mp->cs_k);
    const double tm = fmin(mp->tile_m, Mc), tk = fmin(mp->tile_k, Kc);
    const double steps = cdiv(Mc, tm);
    const double mcore = cdiv(tm, mp->ks_m), ncore = cdiv(Nc, mp->ks_n);
    const double thr = C; /* CPU grid: threads per node */

    /* ---- capacity (pruning) ---- */
    const double dbuf = mp->pipelined ? 2 : 1;
    const double bslice = (att ? 2 : 1) * Kc * Nc * b; /* B (attention: K and V) slice */
    double tile_bytes = dbuf * tm * Kc * b + (mp->fused ? tm * Nc * acc : dbuf * tm * Nout * b);
    if (att)
        tile_bytes += tm * pb->d * acc + 2 * tm * acc; /* O accumulator, m, l */
    int b_resident = tile_bytes + bslice <= hw->gb.capacity;
    double gb_need = tile_bytes + (b_resident ? bslice : dbuf * tk * Nc * b * (att ? 2 : 1));
    double lb_need
        = dbuf * (mcore * tk * b + tk * fmin(ncore, 256) * b) + mcore * fmin(ncore, 256) * acc;
    if (gb_need > hw->gb.capacity || lb_need > hw->lb.capacity)
        return;
    r->valid = 1;

    /* ---- compute per step (one core's share; cores run in parallel) ---- */
    double per_elem, per_row, pj_elem;
    vec_costs(hw, pb->op, &per_elem, &per_row, &pj_elem);
    double eff_rows = mp->fused ? tm : M; /* CPU efficiency: the GEMM as the kernel calls it */
    double tg = gemm_cycles(hw, mcore, ncore * causal_frac, Kc, eff_rows, N, thr);
    if (att) /* P V: mcore x d x Nc */
        tg += gemm_cycles(hw, mcore, pb->d, ncore * causal_frac, eff_rows, pb->d, thr);
    double elems = mcore * ncore * causal_frac;
    double tv = cdiv(elems, hw->simd_width) * per_elem + mcore * per_row;

    /* ---- DRAM traffic ---- */
    /* A tile is read once per step per M-partition (broadcast to N-split
     * clusters when the network can, else once per cluster). */
    double a_reads
        = hw->cluster_net.broadcast ? mp->cs_m * mp->cs_k : mp->cs_m * mp->cs_n * mp->cs_k;
    double dram_step = a_reads * tm * Kc * b;
    double b_total = (att ? 2 : 1) * K * N * b * (att ? pb->heads : 1);
    double dram_once = b_resident ? b_total : 0;
    if (!b_resident)
        dram_step += P * bslice / fmax(1, mp->cs_m); /* re-streamed every step */
    double y_bytes = tm * Nc * b; /* fused: only the output leaves the chip */
    if (att)
        y_bytes = tm * pb->d * b / fmax(1, mp->cs_n); /* merged O, each cluster writes a share */
    double dram_write_step = mp->cs_m * mp->cs_n * y_bytes;
    double dram_unfused = 0, vec_unfused = 0;
    if (!mp->fused) {
        /* GEMM writes the intermediate; a separate pass reads it and writes Y;
         * attention: S written, softmax read+write, PV read */
        double inter = M * N * causal_frac * b;
        dram_write_step = mp->cs_m * mp->cs_n * tm * Nc * causal_frac * b;
        dram_unfused = (att ? 3 : 2) * inter - (att ? 0 : 0);
        if (att)
            dram_unfused += M * pb->d * b; /* O written */
        vec_unfused = cdiv(M * N * causal_frac / (P * C), hw->simd_width) * per_elem
            + (M / (P * C)) * per_row;
    }
    /* CPUs: caches are transparent, so an unfused intermediate that fits in
     * the last-level cache (the "global buffer" of a CPU description) is
     * written and read back at that level's bandwidth, not DRAM's. */
    double inter_bw = hw->dram.bw;
    if (!mp->fused && !strcmp(hw->kind, "cpu")) {
        double ib = M * N * causal_frac * b / (att ? M / pb->lq : 1); /* per head for attention */
        if (ib <= hw->lb.capacity * C)
            inter_bw = hw->lb.bw * C; /* private L2s, one slab per core */
        else if (ib <= hw->gb.capacity)
            inter_bw = hw->gb.bw;
    }
    double t_dram_step
        = dram_step / hw->dram.bw + dram_write_step / (mp->fused ? hw->dram.bw : inter_bw);

    /* ---- NoC: global buffer to cores ---- */
    double noc_bytes = tm * Kc * b * (hw->core_net.broadcast ? 1 : mp->ks_n) + tm * Nc * b;
    if (!b_resident)
        noc_bytes += bslice;
    double t_noc_step = fmax(noc_bytes / hw->gb.bw, noc_bytes / (C * hw->core_net.link_bw))
        + hw->core_net.hop_latency * (hw->core_net.dims[0] + hw->core_net.dims[1]);

    /* ---- explicit collectives ---- */
    double t_coll_step = 0, coll_bytes = 0, link_bytes = 0;
    int ncoll = 0;
    const char *alg = "none";
    if (mp->fused && mp->cs_n > 1) {
        /* row statistics only: two M-vectors per step (max & sum, or sum &
         * squared deviations); attention also merges [O | l] */
        coll_cost c1 = allreduce_cost(hw, &hw->cluster_net, mp->cs_n, tm * acc, acc);
        double n2 = att ? tm * (pb->d + 1) * acc : tm * acc;
        coll_cost c2 = allreduce_cost(hw, &hw->cluster_net, mp->cs_n, n2, acc);
        t_coll_step += c1.cycles + c2.cycles;
        coll_bytes += tm * acc + n2;
        link_bytes += c1.link_bytes + c2.link_bytes;
        ncoll += 2;
        alg = c1.alg;
        snprintf(r->coll_desc, sizeof r->coll_desc, "2 all-reduces (%.0f + %.0f B) x %.0f steps",
            tm * acc, n2, steps);
    }
    if (mp->cs_k > 1) {
        /* split reduction dimension: partial GEMM tiles must be summed */
        coll_cost c = allreduce_cost(hw, &hw->cluster_net, mp->cs_k, tm * Nc * acc, acc);
        t_coll_step += c.cycles;
        coll_bytes += tm * Nc * acc;
        link_bytes += c.link_bytes;
        ncoll += 1;
        alg = c.alg;
        size_t l = strlen(r->coll_desc);
        snprintf(r->coll_desc + l, sizeof r->coll_desc - l, "%sK-split all-reduce %.0f B x %.0f",
            l ? "; " : "", tm * Nc * acc, steps);
    }
    if (!mp->fused && mp->cs_n > 1 && !r->coll_desc[0])
        snprintf(r->coll_desc, sizeof r->coll_desc, "none (intermediate through DRAM)");
    snprintf(r->coll_alg, sizeof r->coll_alg, "%s", alg);

    /* ---- combine ---- */
    double comp_step = tg + (mp->fused ? tv : 0);
    double step;
    if (mp->pipelined) /* double buffering hides transfers behind compute */
        step = fmax(comp_step, fmax(t_dram_step, t_noc_step)) + t_coll_step;
    else
        step = comp_step + t_dram_step + t_noc_step + t_coll_step;
    double ramp_up = (dram_once + dram_step) / hw->dram.bw + t_noc_step; /* first loads */
    double ramp_down = dram_write_step / hw->dram.bw; /* last write-back */
    double total = ramp_up + steps * step + ramp_down;
    double t_pass = 0;
    if (!mp->fused) {
        /* the separate pass is bandwidth- or vector-bound, and depends on the
         * whole intermediate (sequential) */
        double pass_dram = (att ? 2 : 1) * M * N * causal_frac * b + M * Nout * b;
        double inter = (att ? 2 : 1) * M * N * causal_frac * b, out = M * Nout * b;
        double t_mem = inter / inter_bw + out / hw->dram.bw;
        (void)pass_dram;
        t_pass = mp->pipelined ? fmax(vec_unfused, t_mem) : vec_unfused + t_mem;
        total += t_pass;
    }
    r->cycles = total;
    r->seconds = total / (hw->clock_ghz * 1e9);
    r->t_gemm = steps * tg;
    r->t_vec = mp->fused ? steps * tv : vec_unfused;
    r->t_dram = steps * t_dram_step + (!mp->fused ? dram_unfused / inter_bw : 0);
    r->t_noc = steps * t_noc_step;
    r->t_coll = steps * t_coll_step;
    r->t_ramp = ramp_up + ramp_down;
    r->t_stall = total - r->t_gemm - (mp->fused ? r->t_vec : 0) - r->t_coll - t_pass;
    if (r->t_stall < 0)
        r->t_stall = 0;
    r->coll_bytes = steps * coll_bytes;
    r->coll_calls = (int)(steps * ncoll);

    /* ---- energy ---- */
    double total_steps = steps * mp->cs_m * mp->cs_n * mp->cs_k; /* cluster-steps */
    r->dram_bytes = dram_once + steps * (dram_step + dram_write_step) + dram_unfused;
    r->e_dram
        = r->dram_bytes / hw->dram.access_bytes * 0.5 * (hw->dram.read_pj + hw->dram.write_pj);
    double gb_bytes = total_steps * (tm * Kc * b + 2 * tm * Nc * b) + b_total;
    r->e_gb = gb_bytes / hw->gb.access_bytes * 0.5 * (hw->gb.read_pj + hw->gb.write_pj);
    double macs = M * N * K * causal_frac * (att ? 2 : 1);
    /* operand reads into the array and result writes at the local buffers */
    double lb_bytes = macs / fmax(1, hw->systolic ? hw->sa_rows : 8) * b * 2 + M * Nout * acc;
    r->e_lb = lb_bytes / hw->lb.access_bytes * hw->lb.read_pj;
    r->e_mac = macs * hw->mac_pj;
    r->e_vec = M * N * causal_frac * pj_elem;
    r->e_link = (steps * link_bytes + total_steps * noc_bytes) * hw->cluster_net.link_pj_per_byte;
    r->energy_pj = r->e_dram + r->e_gb + r->e_lb + r->e_mac + r->e_vec + r->e_link;
}

/* ------------------------------------------------------------------ */
/* Search                                                              */
/* ------------------------------------------------------------------ */

static void pareto_add(
    comet_model_search *s, const comet_model_mapping *mp, const comet_model_result *r)
{
    for (size_t i = 0; i < s->npareto; i++)
        if (s->pareto_r[i].cycles <= r->cycles && s->pareto_r[i].energy_pj <= r->energy_pj)
            return; /* dominated */
    size_t k = 0;
    for (size_t i = 0; i < s->npareto; i++)
        if (!(r->cycles <= s->pareto_r[i].cycles && r->energy_pj <= s->pareto_r[i].energy_pj)) {
            s->pareto[k] = s->pareto[i];
            s->pareto_r[k++] = s->pareto_r[i];
        }
    s->npareto = k;
    if (k < 64) {
        s->pareto[k] = *mp;
        s->pareto_r[k] = *r;
        s->npareto++;
    }
}

int comet_model_explore(
    const comet_model_hw *hw, const comet_model_problem *pb, comet_model_search *out)
{
    if (!hw || !pb || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    out->r_fused.cycles = out->r_unfused.cycles = INFINITY;
    double t0 = comet_util_now();
    const int att = pb->op == COMET_MODEL_ATTENTION;
    const double M = att ? pb->heads * pb->lq : pb->M, N = att ? pb->lk : pb->N,
                 K = att ? pb->d : pb->K;
    if (!(M >= 1 && N >= 1 && K >= 1))
        return -EINVAL;
    const int P = hw->clusters, C = hw->cores;
    comet_model_mapping mp;
    comet_model_result r;
    for (int cm = 1; cm <= P; cm++) {
        if (P % cm || cm > M)
            continue;
        for (int cn = 1; cn <= P / cm; cn++) {
            if ((P / cm) % cn || cn > N)
                continue;
            int ck = P / cm / cn;
            if (ck > K || (att && ck > 1))
                continue;
            for (int km = 1; km <= C; km++) {
                if (C % km)
                    continue;
                int kn = C / km;
                double Mc = ceil(M / cm), Kc = ceil(K / ck);
                for (double tm = 1; tm <= Mc * 2; tm *= 2) {
                    double tmv = fmin(tm, Mc);
                    for (double tk = Kc; tk >= 1 && tk >= Kc / 64; tk = floor(tk / 2)) {
                        for (int fused = 0; fused <= 1; fused++)
                            for (int pipe = 0; pipe <= 1; pipe++) {
                                mp = (comet_model_mapping) { fused, pipe, cm, cn, ck, km, kn, tmv,
                                    tk };
                                comet_model_eval(hw, pb, &mp, &r);
                                out->evaluated++;
                                if (!r.valid) {
                                    out->pruned++;
                                    continue;
                                }
                                if (fused && r.cycles < out->r_fused.cycles) {
                                    out->best_fused = mp;
                                    out->r_fused = r;
                                }
                                if (!fused && r.cycles < out->r_unfused.cycles) {
                                    out->best_unfused = mp;
                                    out->r_unfused = r;
                                }
                                pareto_add(out, &mp, &r);
                            }
                        if (tk <= 1)
                            break;
                    }
                    if (tmv >= Mc)
                        break;
                }
            }
        }
    }
    out->seconds = comet_util_now() - t0;
    return out->r_fused.valid || out->r_unfused.valid ? 0 : -ENOSPC;
}

const char *comet_model_mapping_str(const comet_model_mapping *mp, char *buf, size_t len)
{
    snprintf(buf, len, "%s %s, clusters M/N/K %d/%d/%d, cores M/N %d/%d, tile_m %.0f, tile_k %.0f",
        mp->fused ? "fused" : "unfused", mp->pipelined ? "pipelined" : "sequential", mp->cs_m,
        mp->cs_n, mp->cs_k, mp->ks_m, mp->ks_n, mp->tile_m, mp->tile_k);
    return buf;
}

json_t *comet_model_mapping_json(const comet_model_mapping *mp)
{
    return json_pack("{s:b,s:s,s:{s:i,s:i,s:i},s:{s:i,s:i},s:f,s:f}", "fused", mp->fused, "binding",
        mp->pipelined ? "pipelined" : "sequential", "cluster_split", "M", mp->cs_m, "N", mp->cs_n,
        "K", mp->cs_k, "core_split", "M", mp->ks_m, "N", mp->ks_n, "tile_m", mp->tile_m, "tile_k",
        mp->tile_k);
}

json_t *comet_model_result_json(const comet_model_result *r)
{
    return json_pack("{s:b,s:f,s:f,s:f,s:{s:f,s:f,s:f,s:f,s:f,s:f,s:f},s:{s:f,s:f,s:f,s:f,s:f,s:f},"
                     "s:f,s:f,s:i,s:s,s:s}",
        "valid", r->valid, "cycles", r->cycles, "seconds", r->seconds, "energy_pj", r->energy_pj,
        "latency_breakdown", "gemm", r->t_gemm, "vector", r->t_vec, "dram", r->t_dram, "noc",
        r->t_noc, "collectives", r->t_coll, "ramp", r->t_ramp, "stall", r->t_stall,
        "energy_breakdown_pj", "dram", r->e_dram, "global_buffer", r->e_gb, "local_buffer", r->e_lb,
        "mac", r->e_mac, "vector", r->e_vec, "link", r->e_link, "dram_bytes", r->dram_bytes,
        "coll_bytes", r->coll_bytes, "coll_calls", r->coll_calls, "collectives", r->coll_desc,
        "coll_algorithm", r->coll_alg);
}

void comet_model_explain(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, FILE *fp)
{
    comet_model_result r;
    char buf[256];
    comet_model_eval(hw, pb, mp, &r);
    const int att = pb->op == COMET_MODEL_ATTENTION;
    double M = att ? pb->heads * pb->lq : pb->M, N = att ? pb->lk : pb->N, K = att ? pb->d : pb->K;
    double Mc = ceil(M / mp->cs_m), tm = fmin(mp->tile_m, Mc), steps = ceil(Mc / tm);
    fprintf(fp, "mapping: %s\n", comet_model_mapping_str(mp, buf, sizeof buf));
    if (!r.valid) {
        fprintf(fp, "  does not fit: tiles exceed the global (%.0f B) or local (%.0f B) buffer\n",
            hw->gb.capacity, hw->lb.capacity);
        return;
    }
    fprintf(fp, "  steps = ceil(M_cluster / tile_m) = ceil(%.0f / %.0f) = %.0f\n", Mc, tm, steps);
    if (hw->systolic)
        fprintf(fp,
            "  gemm    = steps x folds x (2R + C + m_core - 2), R=%d C=%d arrays=%d  -> %.0f "
            "cycles\n",
            hw->sa_rows, hw->sa_cols, hw->sa_arrays, r.t_gemm);
    else
        fprintf(fp,
            "  gemm    = steps x 2 m n k / (peak %.2f flop/cycle x eff(M,N,K))  -> %.0f cycles\n",
            hw->peak_flops, r.t_gemm);
    fprintf(fp,
        "  vector  = elements / width %d x cycles per element (+ row reductions) -> %.0f cycles\n",
        hw->simd_width, r.t_vec);
    fprintf(fp, "  dram    = bytes / %.2f B/cycle: %.0f bytes -> %.0f cycles\n", hw->dram.bw,
        r.dram_bytes, r.t_dram);
    fprintf(fp,
        "  noc     = max(bytes / GB bw %.0f, bytes / (cores x link %.0f)) + hops -> %.0f cycles\n",
        hw->gb.bw, hw->core_net.link_bw, r.t_noc);
    fprintf(fp, "  colls   = %s, algorithm %s -> %.0f cycles (%d calls, %.0f bytes)\n",
        r.coll_desc[0] ? r.coll_desc : "none", r.coll_alg, r.t_coll, r.coll_calls, r.coll_bytes);
    fprintf(fp, "  ramp    = first loads + last write-back -> %.0f cycles\n", r.t_ramp);
    fprintf(fp, "  %s: step = %s\n", mp->pipelined ? "pipelined" : "sequential",
        mp->pipelined ? "max(compute, dram, noc) + collectives"
                      : "compute + dram + noc + collectives");
    fprintf(
        fp, "  total   = %.0f cycles = %.6g s at %.3g GHz\n", r.cycles, r.seconds, hw->clock_ghz);
    fprintf(fp,
        "  energy  = dram %.4g + GB %.4g + LB %.4g + MAC %.4g (%.0f MACs x %.4g pJ) + vector %.4g "
        "+ link %.4g = %.4g pJ\n",
        r.e_dram, r.e_gb, r.e_lb, r.e_mac, M * N * K * (att ? 2 : 1), hw->mac_pj, r.e_vec, r.e_link,
        r.energy_pj);
}

/* ------------------------------------------------------------------ */
/* Local machine: the mappings our kernels run, and validation          */
/* ------------------------------------------------------------------ */

void comet_model_local_mapping(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    double tile_m, int threads, int ranks, comet_model_mapping *mp)
{
    (void)hw;
    memset(mp, 0, sizeof *mp);
    mp->fused = fused;
    mp->pipelined = 1; /* out-of-order cores overlap streaming with compute */
    mp->cs_m = 1;
    mp->cs_n = ranks > 0 ? ranks : 1; /* the distributed kernels split N (attention: Lk) */
    mp->cs_k = 1;
    mp->ks_m = threads > 0 ? threads : 1; /* threads take row blocks */
    mp->ks_n = 1;
    double M = pb->op == COMET_MODEL_ATTENTION ? pb->heads * pb->lq : pb->M;
    mp->tile_m = fused ? (tile_m > 0 ? tile_m * mp->ks_m : 64 * mp->ks_m) : M;
    mp->tile_k = pb->op == COMET_MODEL_ATTENTION ? pb->d : pb->K;
}

#define jnum comet_util_jnum

int comet_model_validate_records(
    const comet_model_hw *hw, json_t *const *recs, size_t n, comet_model_vrow *rows, size_t cap)
{
    size_t k = 0;
    if (!hw || (!recs && n))
        return -EINVAL;
    for (size_t i = 0; i < n && k < cap; i++) {
        const json_t *rec = recs[i];
        const char *kind = json_string_value(json_object_get(rec, "kind"));
        const char *op = json_string_value(json_object_get(rec, "op"));
        const char *var = json_string_value(json_object_get(rec, "variant"));
        if (!kind || !op || !var || (strcmp(kind, "kernel") && strcmp(kind, "dist_kernel")))
            continue;
        comet_model_problem pb;
        memset(&pb, 0, sizeof pb);
        if (comet_model_op_parse(op, &pb.op) != 0)
            continue;
        if (strcmp(var, "fused") && strcmp(var, "unfused"))
            continue;
        const json_t *sh = json_object_get(rec, "shape"), *st = json_object_get(rec, "stats"),
                     *pa = json_object_get(rec, "params");
        double med = jnum(st, "median_s");
        if (!(med > 0))
            continue;
        if (pb.op == COMET_MODEL_ATTENTION) {
            pb.heads = jnum(sh, "B") * jnum(sh, "H");
            pb.lq = jnum(sh, "Lq");
            pb.lk = jnum(sh, "Lk");
            pb.d = jnum(sh, "d");
            pb.causal = jnum(sh, "causal") > 0;
            if (!(pb.heads > 0 && pb.lq > 0 && pb.lk > 0 && pb.d > 0))
                continue;
        } else {
            pb.M = jnum(sh, "M");
            pb.N = jnum(sh, "N");
            pb.K = jnum(sh, "K");
            if (!(pb.M > 0 && pb.N > 0 && pb.K > 0))
                continue;
        }
        double thr = jnum(rec, "threads"), ranks = jnum(rec, "ranks"), tile = jnum(pa, "tile_m");
        if (!(thr >= 1))
            thr = 1;
        if (!(ranks >= 1))
            ranks = 1;
        comet_model_hw local = *hw;
        local.cores = (int)thr;
        local.clusters = (int)ranks;
        local.cluster_net.dims[0] = (int)ranks;
        local.cluster_net.dims[1] = 1;
        comet_model_mapping mp;
        comet_model_local_mapping(
            &local, &pb, !strcmp(var, "fused"), tile > 0 ? tile : 0, (int)thr, (int)ranks, &mp);
        comet_model_result r;
        /* the local description's buffers are the caches: a kernel that
         * runs is by definition a fitting mapping, so capacities are not
         * enforced here */
        local.gb.capacity = 1e30;
        local.lb.capacity = 1e30;
        comet_model_eval(&local, &pb, &mp, &r);
        if (!r.valid)
            continue;
        comet_model_vrow *row = &rows[k++];
        memset(row, 0, sizeof *row);
        snprintf(row->op, sizeof row->op, "%s", op);
        snprintf(row->variant, sizeof row->variant, "%s", var);
        row->M = pb.op == COMET_MODEL_ATTENTION ? pb.lq : pb.M;
        row->N = pb.op == COMET_MODEL_ATTENTION ? pb.lk : pb.N;
        row->K = pb.op == COMET_MODEL_ATTENTION ? pb.d : pb.K;
        row->threads = (int)thr;
        row->ranks = (int)ranks;
        row->measured_s = med;
        row->predicted_s = r.seconds;
        row->rel_err = fabs(r.seconds - med) / med;
    }
    return (int)k;
}

int comet_model_problem_parse(const char *shape, comet_model_problem *pb, char *err, size_t errlen)
{
    char buf[512];
    int att = pb->op == COMET_MODEL_ATTENTION, seen = 0;
    if (!shape || strlen(shape) >= sizeof buf)
        return comet_util_seterr(err, errlen, -EINVAL, "--shape: missing or too long");
    strcpy(buf, shape);
    pb->M = pb->N = pb->K = pb->heads = pb->lq = pb->lk = pb->d = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        uint64_t v = 0;
        if (!eq)
            return comet_util_seterr(err, errlen, -EINVAL, "--shape: '%s' is not NAME=VALUE", tok);
        *eq = '\0';
        int rc = comet_util_parse_u64(eq + 1, &v);
        if (rc || v == 0 || v > (1ull << 40))
            return comet_util_seterr(err, errlen, -EINVAL,
                "--shape: %s=%s must be an integer in [1, 2^40]", tok, eq + 1);
        double *dst = NULL;
        if (!att && !strcmp(tok, "M"))
            dst = &pb->M;
        else if (!att && !strcmp(tok, "N"))
            dst = &pb->N;
        else if (!att && !strcmp(tok, "K"))
            dst = &pb->K;
        else if (att && !strcmp(tok, "heads"))
            dst = &pb->heads;
        else if (att && !strcmp(tok, "lq"))
            dst = &pb->lq;
        else if (att && !strcmp(tok, "lk"))
            dst = &pb->lk;
        else if (att && !strcmp(tok, "d"))
            dst = &pb->d;
        if (!dst)
            return comet_util_seterr(err, errlen, -EINVAL, "--shape: unknown dimension '%s' for %s",
                tok, comet_model_op_name(pb->op));
        *dst = (double)v;
        seen++;
    }
    if (att ? !(pb->heads > 0 && pb->lq > 0 && pb->lk > 0 && pb->d > 0)
            : !(pb->M > 0 && pb->N > 0 && pb->K > 0))
        return comet_util_seterr(
            err, errlen, -EINVAL, "--shape: needs %s", att ? "heads, lq, lk and d" : "M, N and K");
    (void)seen;
    return 0;
}
