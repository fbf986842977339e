/* Collectives' cost: per-topology alpha-beta-gamma costs of each algorithm
 * over one or more network levels, and calibrated fits for CPU systems. The
 * names and the Thakur-Rabenseifner-Gropp rows are coll_algs.c's. */
#include "comet_model.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Analytic costs on one network level                                 */
/* ------------------------------------------------------------------ */

/* Parameters of one level as the formulas use them (cycles, cycles/byte). */
typedef struct lvl {
    const comet_model_net *net;
    int p, X, Y; /* group size and its X x Y footprint */
    double a0, h, beta, gamma;
} lvl;

/* Accumulates rounds: each round costs a0 + hops h + bytes (beta cong + gamma). */
typedef struct acc {
    double t, link;
} acc;

static void round_add(acc *c, const lvl *l, double hops, double bytes, double cong, int reduce)
{
    c->t += l->a0 + hops * l->h + bytes * (l->beta * cong + (reduce ? l->gamma : 0));
    c->link += bytes * hops * l->p;
}

/* Hops between ring neighbours of the group embedded in the topology. */
static double ring_hops(const lvl *l)
{
    switch (l->net->topo) {
    case COMET_MODEL_MESH2D:
        /* a line embeds a ring with 2-hop edges; a 2-D mesh with an even
         * side has a Hamiltonian cycle of 1-hop edges */
        return l->Y == 1 ? (l->X > 2 ? 2 : 1) : ((l->X % 2 == 0 || l->Y % 2 == 0) ? 1 : 2);
    case COMET_MODEL_SWITCH:
        return 2; /* node -> switch -> node */
    default:
        return 1;
    }
}

/* Distance (hops) and link sharing of a recursive-doubling partner at
 * distance d along a dimension of length n. */
static void partner(const lvl *l, int d, int n, double *hops, double *cong)
{
    switch (l->net->topo) {
    case COMET_MODEL_MESH2D:
        *hops = d, *cong = d; /* d pairs cross the middle link of each block */
        break;
    case COMET_MODEL_TORUS2D:
    case COMET_MODEL_RING: {
        double w = fmin(d, n - d);
        *hops = w, *cong = fmax(1, w / 2); /* both directions around */
        break;
    }
    case COMET_MODEL_SWITCH:
        *hops = 2, *cong = 1;
        break;
    default:
        *hops = 1, *cong = 1;
    }
}

/* Diameter of the group's footprint in hops. */
static double diameter(const lvl *l)
{
    switch (l->net->topo) {
    case COMET_MODEL_MESH2D:
        return (l->X - 1) + (l->Y - 1);
    case COMET_MODEL_TORUS2D:
        return floor(l->X / 2.0) + floor(l->Y / 2.0);
    case COMET_MODEL_RING:
        return floor(l->p / 2.0);
    case COMET_MODEL_SWITCH:
        return 2;
    default:
        return 1;
    }
}

/* Recursive doubling (dir +1: sizes grow, all-gather) or halving (dir -1:
 * sizes shrink from n/2, reduce-scatter) or full-vector exchanges (dir 0). */
static void tree_rounds(acc *c, const lvl *l, double n, int dir, int reduce)
{
    /* rounds along X then Y, distances 1, 2, 4, ... (ring topology: one
     * dimension of p nodes) */
    int dims[2] = { l->X, l->Y };
    if (l->net->topo == COMET_MODEL_RING || l->net->topo == COMET_MODEL_SWITCH
        || l->net->topo == COMET_MODEL_FULL)
        dims[0] = l->p, dims[1] = 1;
    double done = 1; /* nodes whose data has been combined so far */
    for (int k = 0; k < 2; k++)
        for (int d = 1; d < dims[k]; d *= 2) {
            double hops, cong, bytes;
            partner(l, d, dims[k], &hops, &cong);
            if (dir > 0)
                bytes = n * done / l->p;
            else if (dir < 0)
                bytes = n / (2 * done);
            else
                bytes = n;
            round_add(c, l, hops, bytes, cong, reduce);
            done *= 2;
        }
}

/* Ring phase: (p-1) steps of n/p bytes between ring neighbours. */
static void ring_phase(acc *c, const lvl *l, int p, double n, int reduce)
{
    lvl s = *l;
    s.p = p;
    double hops = ring_hops(&s);
    for (int i = 0; i < p - 1; i++)
        round_add(c, &s, hops, n / p, 1, reduce);
}

/* Cost of one algorithm on one level; INFINITY when it does not apply. */
static acc level_alg(const lvl *l, comet_model_coll coll, double n, comet_model_alg alg)
{
    acc c = { 0, 0 };
    const comet_model_topo t = l->net->topo;
    const int p = l->p;
    switch (alg) {
    case COMET_MODEL_ALG_RING:
        if (coll == COMET_MODEL_ALLREDUCE) {
            ring_phase(&c, l, p, n, 1);
            ring_phase(&c, l, p, n, 0);
        } else if (coll == COMET_MODEL_ALLGATHER)
            ring_phase(&c, l, p, n, 0);
        else if (coll == COMET_MODEL_REDUCE_SCATTER)
            ring_phase(&c, l, p, n, 1);
        else
            c.t = INFINITY;
        break;
    case COMET_MODEL_ALG_TREE:
        if (coll == COMET_MODEL_ALLREDUCE || coll == COMET_MODEL_REDUCE)
            tree_rounds(&c, l, n, 0, 1);
        else if (coll == COMET_MODEL_BCAST)
            tree_rounds(&c, l, n, 0, 0);
        else if (coll == COMET_MODEL_ALLGATHER)
            tree_rounds(&c, l, n, +1, 0);
        else if (coll == COMET_MODEL_REDUCE_SCATTER)
            tree_rounds(&c, l, n, -1, 1);
        else
            c.t = INFINITY;
        break;
    case COMET_MODEL_ALG_RABENSEIFNER:
        /* reduce-scatter by halving, then all-gather (reduce: gather) by doubling */
        if (coll == COMET_MODEL_ALLREDUCE || coll == COMET_MODEL_REDUCE) {
            tree_rounds(&c, l, n, -1, 1);
            tree_rounds(&c, l, n, +1, 0);
        } else if (coll == COMET_MODEL_BCAST) {
            tree_rounds(&c, l, n, -1, 0); /* scatter */
            tree_rounds(&c, l, n, +1, 0);
        } else
            c.t = INFINITY;
        break;
    case COMET_MODEL_ALG_MESH: {
        /* 2-D mesh/torus: row phase then column phase, rings along each */
        if ((t != COMET_MODEL_MESH2D && t != COMET_MODEL_TORUS2D) || l->Y < 2) {
            c.t = INFINITY;
            break;
        }
        lvl row = *l, col = *l;
        row.Y = 1, row.p = l->X;
        col.X = 1, col.p = l->Y;
        if (coll == COMET_MODEL_ALLREDUCE) {
            ring_phase(&c, &row, l->X, n, 1); /* reduce-scatter along the row */
            ring_phase(&c, &col, l->Y, n / l->X, 1); /* all-reduce of the share along the column */
            ring_phase(&c, &col, l->Y, n / l->X, 0);
            ring_phase(&c, &row, l->X, n, 0); /* all-gather along the row */
        } else if (coll == COMET_MODEL_ALLGATHER) {
            ring_phase(&c, &row, l->X, n / l->Y, 0);
            ring_phase(&c, &col, l->Y, n, 0);
        } else if (coll == COMET_MODEL_REDUCE_SCATTER) {
            ring_phase(&c, &row, l->X, n, 1);
            ring_phase(&c, &col, l->Y, n / l->X, 1);
        } else
            c.t = INFINITY;
        break;
    }
    case COMET_MODEL_ALG_DIRECT: {
        /* one exchange with every peer: a switch port serialises the p-1
         * messages, a fully connected node sends them on separate links */
        if (t != COMET_MODEL_SWITCH && t != COMET_MODEL_FULL) {
            c.t = INFINITY;
            break;
        }
        double hops = t == COMET_MODEL_SWITCH ? 2 : 1;
        double share = t == COMET_MODEL_SWITCH ? (p - 1.0) / p : 1.0 / p;
        double q = (p - 1.0) / p;
        acc one = { 0, 0 };
        if (coll == COMET_MODEL_ALLREDUCE || coll == COMET_MODEL_REDUCE_SCATTER
            || coll == COMET_MODEL_REDUCE) {
            one.t += l->a0 + hops * l->h + n * (share * l->beta + q * l->gamma);
            one.link += q * n * hops * p;
        }
        if (coll == COMET_MODEL_ALLREDUCE || coll == COMET_MODEL_ALLGATHER
            || coll == COMET_MODEL_REDUCE) {
            one.t += l->a0 + hops * l->h + n * share * l->beta;
            one.link += q * n * hops * p;
        }
        if (coll == COMET_MODEL_BCAST || coll == COMET_MODEL_ALLTOALL) {
            one.t
                += l->a0 + hops * l->h + n * share * l->beta * (coll == COMET_MODEL_BCAST ? 2 : 1);
            one.link += 2 * q * n * hops * p;
        }
        c = one;
        break;
    }
    case COMET_MODEL_ALG_IN_NETWORK: {
        /* switches / routers combine (or replicate) in flight: one pipelined
         * trip up and down the diameter */
        double D = diameter(l);
        int reduce = coll == COMET_MODEL_ALLREDUCE || coll == COMET_MODEL_REDUCE
            || coll == COMET_MODEL_REDUCE_SCATTER;
        int cast = coll == COMET_MODEL_ALLGATHER || coll == COMET_MODEL_BCAST;
        if ((reduce && !l->net->reduction) || (cast && !l->net->broadcast) || (!reduce && !cast)) {
            c.t = INFINITY;
            break;
        }
        double trips = coll == COMET_MODEL_ALLREDUCE ? 2 : 1;
        double bytes = coll == COMET_MODEL_REDUCE_SCATTER ? n / p : n;
        c.t = l->a0 + trips * D * l->h + n * l->beta;
        c.link = bytes * p * D;
        break;
    }
    default:
        c.t = INFINITY;
    }
    return c;
}

/* MPICH names of a model algorithm for a collective (for calibrated fits). */
static const char *mpich_name(comet_model_coll coll, comet_model_alg a)
{
    switch (a) {
    case COMET_MODEL_ALG_RING:
        return coll == COMET_MODEL_REDUCE_SCATTER ? "pairwise" : "ring";
    case COMET_MODEL_ALG_TREE:
        return coll == COMET_MODEL_REDUCE_SCATTER                       ? "recursive_halving"
            : (coll == COMET_MODEL_REDUCE || coll == COMET_MODEL_BCAST) ? "binomial"
                                                                        : "recursive_doubling";
    case COMET_MODEL_ALG_RABENSEIFNER:
        return coll == COMET_MODEL_REDUCE ? "reduce_scatter_gather"
            : coll == COMET_MODEL_BCAST   ? "scatter_recursive_doubling_allgather"
                                          : "reduce_scatter_allgather";
    default:
        return NULL;
    }
}

/* Time (s) of a calibrated fit for `bytes` per rank, or INFINITY. The fit
 * segment is the one whose from_bytes is the largest <= bytes. */
static double fit_seconds(
    const comet_model_links *lk, comet_model_coll coll, const char *alg, double bytes, int p)
{
    const comet_model_coll_fit *best = NULL;
    for (int i = 0; i < lk->nfits; i++) {
        const comet_model_coll_fit *f = &lk->fits[i];
        if (f->coll != coll || strcmp(f->alg, alg) || f->from_bytes > bytes)
            continue;
        if (!best || f->from_bytes > best->from_bytes)
            best = f;
    }
    double row[3];
    if (!best || comet_model_coll_row(coll, alg, bytes, p, row, NULL) < 0)
        return INFINITY;
    return row[0] * best->alpha_s + row[1] * best->beta_s + row[2] * best->gamma_s;
}

comet_model_coll_cost comet_model_coll_time(
    const comet_model_hw *hw, comet_model_coll coll, int p, double bytes, comet_model_alg force)
{
    comet_model_coll_cost out = { 0, 0, COMET_MODEL_ALG_NONE };
    if (p <= 1 || !(bytes > 0))
        return out;
    const double cyc_per_s = hw->clock_ghz * 1e9;
    /* element size of row statistics: fp32. A node reduces with all its
     * cores' vector units (an accelerator's reduction is a kernel over the
     * chip); a CPU node is an MPI rank, which reduces on one core */
    const double lanes
        = fmax(1, hw->simd_width) * (strcmp(hw->kind, "cpu") ? fmax(1, hw->cores) : 1);
    const double gamma = hw->vop_cycles[COMET_MODEL_VOP_ADD] / (lanes * 4.0);
    const comet_model_links *lk = &hw->links;

    /* MPI_Allgatherv: its own calibrated fit (MPICH runs it by other code
     * than MPI_Allgather: on the Zen 5 VM 1.1-1.3x its time from 64 KiB per
     * rank); without one, costed as the all-gather it moves */
    if (coll == COMET_MODEL_ALLGATHERV) {
        double s = lk->nfits > 0 ? fit_seconds(lk, coll, "auto", bytes / p, p) : INFINITY;
        if (isfinite(s)) {
            out.cycles = s * cyc_per_s;
            out.alg = COMET_MODEL_ALG_FIT;
            out.link_bytes = bytes * p;
            return out;
        }
        coll = COMET_MODEL_ALLGATHER;
    }
    /* Calibrated collective fits (this machine's MPI): "auto" is what MPICH
     * actually runs; a forced algorithm uses its own fit when there is one. */
    if (lk->nfits > 0 && force != COMET_MODEL_ALG_NONE && force != COMET_MODEL_ALG_FIT) {
        const char *nm = mpich_name(coll, force);
        double s = nm
            ? fit_seconds(lk, coll, nm, coll == COMET_MODEL_ALLGATHER ? bytes / p : bytes, p)
            : INFINITY;
        if (isfinite(s)) {
            out.cycles = s * cyc_per_s;
            out.alg = force;
            out.link_bytes = bytes * p;
            return out;
        }
    } else if (lk->nfits > 0) {
        double per = coll == COMET_MODEL_ALLGATHER ? bytes / p : bytes;
        double s = fit_seconds(lk, coll, "auto", per, p);
        for (comet_model_alg a = COMET_MODEL_ALG_RING;
             !isfinite(s) && a <= COMET_MODEL_ALG_RABENSEIFNER; a++) {
            const char *nm = mpich_name(coll, a);
            double x = nm ? fit_seconds(lk, coll, nm, per, p) : INFINITY;
            if (x < s)
                s = x;
        }
        if (isfinite(s)) {
            out.cycles = s * cyc_per_s;
            out.alg = COMET_MODEL_ALG_FIT;
            out.link_bytes = bytes * p;
            return out;
        }
        if (force == COMET_MODEL_ALG_FIT) {
            out.cycles = INFINITY;
            return out;
        }
    } else if (force == COMET_MODEL_ALG_FIT) {
        out.cycles = INFINITY;
        return out;
    }

    /* Levels, innermost first; the group is p consecutive nodes. */
    const comet_model_net *nets[COMET_MODEL_NET_LEVELS];
    int nl = 1 + (hw->n_outer > 0 ? hw->n_outer : 0);
    nets[0] = &hw->cluster_net;
    for (int i = 1; i < nl; i++)
        nets[i] = &hw->outer_net[i - 1];
    int below = 1; /* nodes inside one group of the levels below */
    double n = bytes;
    double gathered = 1; /* all-gather: contributions joined so far */
    double total = 0, link = 0;
    comet_model_alg first = COMET_MODEL_ALG_NONE;
    for (int i = 0; i < nl && below < p; i++) {
        int nodes = comet_model_net_nodes(nets[i]);
        int pl = (int)ceil((double)p / below);
        if (pl > nodes)
            pl = nodes;
        below *= nodes;
        if (pl <= 1)
            continue;
        gathered *= pl;
        if (coll == COMET_MODEL_ALLGATHER) /* this level gathers its groups' part of the total */
            n = bytes * gathered / p;
        /* the share of the link a collective reaches (stated; absent: all) */
        const double eff = (unsigned)coll < 3 && nets[i]->coll_eff[coll] > 0
            ? nets[i]->coll_eff[coll]
            : nets[i]->efficiency > 0 && nets[i]->efficiency < 1 ? nets[i]->efficiency
                                                                 : 1;
        lvl l = { nets[i], pl, 1, 1, nets[i]->startup, nets[i]->hop_latency,
            1.0 / (comet_model_net_bw(nets[i]) * eff), gamma };
        if (i == 0 && lk->p2p_beta_s > 0) {
            /* calibrated point-to-point link (Hockney) replaces the preset */
            l.a0 = lk->p2p_alpha_s * cyc_per_s;
            l.beta = lk->p2p_beta_s * cyc_per_s;
        }
        /* the group takes the block of the network that holds it at the
         * least cost: every width that fits (a 2 x 2 block of a 4 x 2 mesh,
         * or a row of 4; on a grown network the smaller network's own block
         * is among them, so more nodes never make a group slower) */
        const int dx = nets[i]->dims[0] > 0 ? nets[i]->dims[0] : 1,
                  dy = nets[i]->dims[1] > 0 ? nets[i]->dims[1] : 1;
        acc best = { INFINITY, 0 };
        comet_model_alg ba = COMET_MODEL_ALG_NONE;
        for (int x = 1; x <= dx && x <= pl; x++) {
            if ((pl + x - 1) / x > dy)
                continue;
            l.X = x;
            l.Y = (pl + x - 1) / x;
            for (comet_model_alg a = COMET_MODEL_ALG_RING; a <= COMET_MODEL_ALG_IN_NETWORK; a++) {
                if (force != COMET_MODEL_ALG_NONE && force != a)
                    continue;
                acc c = level_alg(&l, coll, n, a);
                if (c.t < best.t) {
                    best = c;
                    ba = a;
                }
            }
        }
        total += best.t;
        link += best.link;
        if (first == COMET_MODEL_ALG_NONE)
            first = ba;
        /* what the next level moves */
        if (coll == COMET_MODEL_REDUCE_SCATTER)
            n /= pl;
    }
    out.cycles = total;
    out.link_bytes = link;
    out.alg = first;
    return out;
}
