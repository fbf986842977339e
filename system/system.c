/* A system seen by the system model: what one chip can do and the network
 * levels joining chips, read from a hardware description (schema v2), and
 * collectives over groups of chips placed on those levels. */
#include "comet_system.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Off-chip memory instances one chip holds (schema v2 shared_by). */
static double instances_per_chip(const comet_model_hw *hw, int cpc)
{
    switch (hw->dram.shared_by) {
    case COMET_MODEL_SHARE_CORE:
        return (double)hw->cores * cpc;
    case COMET_MODEL_SHARE_CLUSTER:
        return cpc;
    case COMET_MODEL_SHARE_CHIP:
        return 1;
    case COMET_MODEL_SHARE_NODE:
    case COMET_MODEL_SHARE_SYSTEM:
        return 1; /* a chip reaches the shared instance at its full rate at best */
    default:
        /* v1 reading: CPU nodes each own their memory; an accelerator's DRAM
         * is its chip's */
        return strcmp(hw->kind, "cpu") ? 1 : cpc;
    }
}

int comet_system_from_hw(const comet_model_hw *hw, comet_model_dtype dtype, int chips,
    comet_system *sys, char *err, size_t errlen)
{
    memset(sys, 0, sizeof *sys);
    sys->hw = *hw;
    /* the system keeps its own copy of the measured GEMM grid (a calibrated
     * profile's efficiency at each GEMM's shape); nothing else it owns */
    sys->hw.grid.values = NULL;
    sys->hw.fused_grid.values = NULL;
    sys->hw.calibration = NULL;
    sys->hw.grid.nt = 0; /* the measured grid is copied last (below) */
    int cpc = hw->clusters_per_chip > 0 ? hw->clusters_per_chip : hw->clusters;
    if (hw->clusters % cpc)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: clusters (%d) is not a multiple of clusters_per_chip (%d)", hw->name, hw->clusters,
            cpc);
    /* network levels: those inside a chip multiply up to clusters_per_chip */
    const comet_model_net *lv[COMET_MODEL_NET_LEVELS];
    int nl = 0;
    lv[nl++] = &hw->cluster_net;
    for (int i = 0; i < hw->n_outer; i++)
        lv[nl++] = &hw->outer_net[i];
    int inside = 1, first = 0;
    while (first < nl && inside < cpc)
        inside *= comet_model_net_nodes(lv[first++]);
    if (inside != cpc)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: clusters_per_chip (%d) does not end at a network level (inner levels join %d)",
            hw->name, cpc, inside);
    for (int i = first; i < nl; i++) {
        if (lv[i]->topo == COMET_MODEL_MESH2D || lv[i]->topo == COMET_MODEL_TORUS2D) {
            /* a 2-D level between chips is two levels: its rows, then its columns */
            if (sys->nlevels + 2 > COMET_SYSTEM_LEVELS)
                return comet_util_seterr(err, errlen, -EINVAL, "%s: more than %d network levels",
                    hw->name, COMET_SYSTEM_LEVELS);
            for (int k = 0; k < 2; k++) {
                comet_system_level *L = &sys->level[sys->nlevels++];
                L->net = *lv[i];
                /* a torus row wraps (a ring); a mesh row is a line (a 1-D mesh) */
                L->net.topo
                    = lv[i]->topo == COMET_MODEL_TORUS2D ? COMET_MODEL_RING : COMET_MODEL_MESH2D;
                L->net.dims[0] = lv[i]->dims[k];
                L->net.dims[1] = 1;
                L->size = lv[i]->dims[k];
            }
            continue;
        }
        if (sys->nlevels >= COMET_SYSTEM_LEVELS)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: more than %d network levels",
                hw->name, COMET_SYSTEM_LEVELS);
        comet_system_level *L = &sys->level[sys->nlevels++];
        L->net = *lv[i];
        L->size = comet_model_net_nodes(lv[i]);
    }
    sys->chips = hw->clusters / cpc;
    if (chips > 0 && chips != sys->chips) {
        /* a family: the outermost level grows or shrinks */
        if (sys->nlevels == 0)
            return comet_util_seterr(err, errlen, -EINVAL,
                "--chips %d: %s is one chip (no network between chips to grow)", chips, hw->name);
        int inner = sys->chips / sys->level[sys->nlevels - 1].size;
        if (chips % inner)
            return comet_util_seterr(err, errlen, -EINVAL,
                "--chips %d: %s grows in steps of %d chips (its outer network level)", chips,
                hw->name, inner);
        comet_system_level *L = &sys->level[sys->nlevels - 1];
        L->size = chips / inner;
        L->net.dims[0] = L->size;
        L->net.dims[1] = 1;
        sys->chips = chips;
    }
    sys->clock_hz = hw->clock_ghz * 1e9;
    const double native = hw->peak_flops * hw->cores * cpc * sys->clock_hz;
    sys->peak_flops = hw->peak_flops_dtype[dtype] > 0 ? hw->peak_flops_dtype[dtype] : native;
    if (!(sys->peak_flops > 0))
        return comet_util_seterr(
            err, errlen, -EINVAL, "%s: no compute rate for the workload's data type", hw->name);
    sys->vector_flops = (double)hw->simd_width * hw->cores * cpc * sys->clock_hz;
    sys->sram_bytes = hw->gb.capacity * cpc + hw->lb.capacity * hw->cores * cpc;
    const double inst = instances_per_chip(hw, cpc);
    sys->mem_bw = hw->dram.bw * sys->clock_hz * inst;
    sys->mem_cap = hw->dram.capacity * inst;
    if (hw->mem2.capacity > 0) {
        sys->mem2_bw = hw->mem2.bw * sys->clock_hz;
        sys->mem2_cap = hw->mem2.capacity;
    }
    sys->gemm_rows = hw->systolic ? hw->sa_rows : 0;
    if (hw->systolic && hw->sa_spatial) {
        sys->gemm_units = (double)hw->sa_arrays * hw->cores * cpc;
        sys->gemm_lanes = hw->sa_rows;
        sys->gemm_stages = hw->sa_cols;
    }
    sys->gemm_eff = hw->grid.nt > 0 ? hw->grid.emax : hw->gemm_eff;
    if (!(sys->gemm_eff > 0))
        sys->gemm_eff = 1;
    /* not stated (v1): transfers overlap compute (double buffering), the
     * network does not */
    sys->overlap = (hw->overlap & COMET_MODEL_ENGINE_STATED)
        ? hw->overlap & ~COMET_MODEL_ENGINE_STATED
        : (hw->overlap ? hw->overlap : COMET_MODEL_ENGINE_MEMORY);
    if (hw->grid.values && hw->grid.nt > 0) {
        sys->hw.grid = hw->grid;
        const size_t nv = (size_t)hw->grid.nt * hw->grid.nm * hw->grid.nn * hw->grid.nk;
        sys->hw.grid.values = malloc(nv * sizeof(double));
        if (!sys->hw.grid.values)
            return comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", hw->name);
        memcpy(sys->hw.grid.values, hw->grid.values, nv * sizeof(double));
    } else
        sys->hw.grid.nt = 0;
    return 0;
}

void comet_system_free(comet_system *sys)
{
    if (!sys)
        return;
    free(sys->hw.grid.values);
    sys->hw.grid.values = NULL;
    sys->hw.grid.nt = 0;
}

/* One level's collective among k chips, in seconds: comet's collective
 * model on a description holding only that level. */
static double level_coll(const comet_system *sys, const comet_system_level *L,
    comet_model_coll coll, int k, double bytes)
{
    if (k <= 1 || bytes <= 0)
        return 0;
    comet_model_hw h = sys->hw;
    h.n_outer = 0;
    h.cluster_net = L->net; /* the collective model applies its efficiency */
    h.cluster_net.dims[0] = k;
    h.cluster_net.dims[1] = 1;
    h.clusters = k;
    h.clusters_per_chip = 1;
    /* a chip is one node of the level: its reduction runs on every core of
     * its clusters */
    h.cores = sys->hw.cores
        * (sys->hw.clusters_per_chip > 0 ? sys->hw.clusters_per_chip : sys->hw.clusters);
    if (!sys->link_fits) { /* fits describe the calibrated machine's own link */
        h.links.nfits = 0;
        h.links.p2p_beta_s = 0;
    }
    comet_model_coll_cost c = comet_model_coll_time(&h, coll, k, bytes, COMET_MODEL_ALG_NONE);
    double t = c.cycles;
    if (L->net.topo == COMET_MODEL_RING && (k > 2 || L->size > 2)) {
        /* link_bw is per direction and links are full duplex: the data
         * splits over two counter-rotating rings, each carrying half */
        comet_model_coll_cost h2
            = comet_model_coll_time(&h, coll, k, bytes / 2, COMET_MODEL_ALG_RING);
        if (h2.cycles < t)
            t = h2.cycles;
    }
    return t / sys->clock_hz;
}

double sys_mem_s(const comet_system *sys, double bytes)
{
    if (!(bytes > 0))
        return 0;
    return bytes / (sys->mem_bw * comet_model_steps_eval(&sys->hw.dram.eff_by_mb, bytes / 1e6, 1));
}

double sys_gemm_eff(const comet_system *sys, double flops)
{
    return comet_model_steps_eval(&sys->hw.gemm_eff_by_gflop, flops / 1e9, sys->gemm_eff);
}

double sys_gemm_tiled_eff(
    const comet_system *sys, double eff, double flops, double M, double N, double K)
{
    if (sys->hw.gemm_ntiles <= 0 || !(M > 0) || !(N > 0) || !(K > 0) || !(flops > 0))
        return 0;
    /* a kernel of several equal GEMMs (attention's batch of heads): its count */
    const double batch = fmax(1, round(flops / (2 * M * N * K)));
    const double q = comet_model_gemm_wave_eff(&sys->hw, M, N, batch);
    if (!(q > 0))
        return 0;
    /* the chip's best rate (its table's largest value: for the A100 the measured
     * maximum, at a shape that fills every tile and wave) on the useful share of
     * the SM time; never above what the table gives the size */
    const comet_model_steps *st = &sys->hw.gemm_eff_by_gflop;
    double emax = st->n > 0 ? 0 : sys->gemm_eff;
    for (int i = 0; i < st->n; i++)
        emax = fmax(emax, st->eff[i]);
    return fmin(eff, emax * q);
}

/* A level's link as collectives see it: its bandwidth times the stated
 * efficiency (Calculon's per-network efficiency; absent: 1). */
static double link_bw_eff(const comet_model_net *n)
{
    return n->link_bw * (n->efficiency > 0 && n->efficiency < 1 ? n->efficiency : 1);
}

double comet_system_coll_s(
    const comet_system *sys, comet_model_coll coll, int inner, int p, double bytes)
{
    if (p <= 1 || bytes <= 0)
        return 0;
    int k[COMET_SYSTEM_LEVELS] = { 0 };
    int stride = inner < 1 ? 1 : inner, left = p;
    for (int i = 0; i < sys->nlevels && left > 1; i++) {
        const int n = sys->level[i].size;
        if (stride >= n) {
            stride = (stride + n - 1) / n;
            continue;
        }
        int room = n / stride;
        k[i] = left < room ? left : room;
        left = (left + k[i] - 1) / k[i];
        stride = 1;
    }
    if (left > 1)
        return INFINITY; /* the group does not fit the levels */
    /* hierarchical: reduce-scatter inwards-out on shrinking shares, then
     * all-gather back (an all-reduce is both halves) */
    double t = 0, share = bytes;
    int spanned = 0;
    for (int i = 0; i < sys->nlevels; i++)
        spanned += k[i] > 1;
    for (int i = 0; i < sys->nlevels; i++) {
        if (k[i] <= 1)
            continue;
        switch (coll) {
        case COMET_MODEL_ALLREDUCE:
            if (spanned == 1) /* one level: its own best all-reduce algorithm */
                t += level_coll(sys, &sys->level[i], COMET_MODEL_ALLREDUCE, k[i], share);
            else
                t += level_coll(sys, &sys->level[i], COMET_MODEL_REDUCE_SCATTER, k[i], share)
                    + level_coll(sys, &sys->level[i], COMET_MODEL_ALLGATHER, k[i], share);
            break;
        default:
            t += level_coll(sys, &sys->level[i], coll, k[i], share);
            break;
        }
        share /= k[i];
    }
    return t;
}

double comet_system_exchange_s(const comet_system *sys, int inner, int p, double bytes)
{
    if (p > 1 && sys->link_fits && sys->hw.links.p2p_beta_s > 0 && sys->hw.links.xch_nseg > 0)
        return comet_model_links_exchange_s(&sys->hw.links, bytes);
    return comet_system_p2p_s(sys, inner, p, bytes);
}

/* The outermost level p chips at stride inner span (the level a
 * pipeline's point-to-point crosses), or -1 when the levels do not hold
 * them. */
static int p2p_level(const comet_system *sys, int inner, int p)
{
    int stride = inner < 1 ? 1 : inner, left = p, top = -1;
    for (int i = 0; i < sys->nlevels && left > 1; i++) {
        const int n = sys->level[i].size;
        if (stride >= n) {
            stride = (stride + n - 1) / n;
            continue;
        }
        const int room = n / stride, k = left < room ? left : room;
        if (k > 1)
            top = i;
        left = (left + k - 1) / k;
        stride = 1;
    }
    return left > 1 ? -1 : top;
}

/* Point-to-point of `bytes` between neighbouring members of a group placed
 * after `inner` chips: over the outermost level the group spans. A group
 * whose stride is under a level's size still crosses it once it holds more
 * members than fit (tp=4, pp=4 on nodes of 8: stages 1 and 2 sit on
 * different nodes), and the pipeline waits for its slowest boundary. */
double comet_system_p2p_s(const comet_system *sys, int inner, int p, double bytes)
{
    if (p <= 1)
        return 0;
    if (sys->link_fits && sys->hw.links.p2p_beta_s > 0) /* the fitted link, piece by size */
        return comet_model_links_p2p_s(&sys->hw.links, bytes);
    const int top = p2p_level(sys, inner, p);
    if (top < 0)
        return INFINITY;
    const comet_model_net *n = &sys->level[top].net;
    const double hops = n->topo == COMET_MODEL_SWITCH ? 2 : 1;
    return (n->startup + hops * n->hop_latency + bytes / link_bw_eff(n)) / sys->clock_hz;
}

int comet_system_p2p_one_port(const comet_system *sys, int inner, int p)
{
    if (p <= 1)
        return 0;
    if (sys->link_fits && sys->hw.links.p2p_beta_s > 0)
        return 1;
    const int top = p2p_level(sys, inner, p); /* comet_system_p2p_s's level */
    return top >= 0 && sys->level[top].net.topo == COMET_MODEL_SWITCH;
}

int comet_system_use_link_fits(comet_system *sys, const comet_model_links *links)
{
    if (!links || (links->nfits == 0 && !(links->p2p_beta_s > 0)))
        return -ENOENT;
    sys->hw.links = *links;
    sys->link_fits = 1;
    return 0;
}

static const char *const phase_names[] = { "train", "prefill", "decode", "forward" };
static const char *const rec_names[] = { "none", "selective", "full" };
static const char *const exec_names[] = { "kernel", "dataflow" };

const char *comet_system_phase_name(comet_system_phase p)
{
    return (unsigned)p < 4 ? phase_names[p] : "?";
}
const char *comet_system_recompute_name(comet_system_recompute r)
{
    return (unsigned)r < 3 ? rec_names[r] : "?";
}
const char *comet_system_exec_name(comet_system_exec e)
{
    return (unsigned)e < 2 ? exec_names[e] : "?";
}

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -EINVAL;
}
int comet_system_phase_parse(const char *s, comet_system_phase *p)
{
    int k = parse_name(s, phase_names, 4);
    if (k < 0)
        return k;
    *p = (comet_system_phase)k;
    return 0;
}
int comet_system_recompute_parse(const char *s, comet_system_recompute *r)
{
    int k = parse_name(s, rec_names, 3);
    if (k < 0)
        return k;
    *r = (comet_system_recompute)k;
    return 0;
}
int comet_system_exec_parse(const char *s, comet_system_exec *e)
{
    int k = parse_name(s, exec_names, 2);
    if (k < 0)
        return k;
    *e = (comet_system_exec)k;
    return 0;
}

int comet_system_config_parse(const char *s, comet_system_config *c, char *err, size_t errlen)
{
    char buf[256];
    memset(c, 0, sizeof *c);
    c->tp = c->pp = c->dp = c->interleave = 1;
    c->order[0] = COMET_SYSTEM_TP;
    c->order[1] = COMET_SYSTEM_DP;
    c->order[2] = COMET_SYSTEM_PP;
    c->recompute = (comet_system_recompute)-1;
    c->seq_parallel = -1;
    c->exec = (comet_system_exec)-1;
    if (!s || strlen(s) >= sizeof buf)
        return comet_util_seterr(err, errlen, -EINVAL, "--parallel: expected tp=N,pp=N,dp=N");
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return comet_util_seterr(
                err, errlen, -EINVAL, "--parallel: '%s' is not key=value", tok);
        *eq = 0;
        const char *k = tok, *v = eq + 1;
        if (!strcmp(k, "order")) {
            static const char *const pn[3] = { "tp", "pp", "dp" };
            char ob[64];
            snprintf(ob, sizeof ob, "%s", v);
            int seen = 0, n = 0;
            char *s2 = NULL;
            for (char *p = strtok_r(ob, "-", &s2); p; p = strtok_r(NULL, "-", &s2)) {
                int x = parse_name(p, pn, 3);
                if (x < 0 || (seen & (1 << x)) || n >= 3)
                    return comet_util_seterr(err, errlen, -EINVAL,
                        "--parallel: order '%s' must list tp, pp, dp once each (tp-dp-pp)", v);
                seen |= 1 << x;
                c->order[n++] = x;
            }
            if (n != 3)
                return comet_util_seterr(err, errlen, -EINVAL,
                    "--parallel: order '%s' must list tp, pp, dp once each (tp-dp-pp)", v);
            continue;
        }
        uint64_t x;
        if (!strcmp(k, "zero")) {
            if (comet_util_parse_u64(v, &x) || x > 3)
                return comet_util_seterr(
                    err, errlen, -EINVAL, "--parallel: zero=%s must be 0, 1, 2 or 3", v);
            c->zero = (int)x;
            continue;
        }
        if (comet_util_parse_u64(v, &x) || x < 1 || x > (1u << 24))
            return comet_util_seterr(
                err, errlen, -EINVAL, "--parallel: %s=%s is not a positive whole number", k, v);
        if (!strcmp(k, "tp"))
            c->tp = (int)x;
        else if (!strcmp(k, "pp"))
            c->pp = (int)x;
        else if (!strcmp(k, "dp"))
            c->dp = (int)x;
        else if (!strcmp(k, "interleave"))
            c->interleave = (int)x;
        else if (!strcmp(k, "microbatch"))
            c->microbatch = (int)x;
        else
            return comet_util_seterr(err, errlen, -EINVAL,
                "--parallel: unknown key '%s' (tp, pp, dp, interleave, microbatch, order, zero)",
                k);
    }
    return 0;
}
