/* Distributed mixture-of-experts (kernels/moe_dist.c) predicted as the
 * bulk-synchronous program it is: the slowest rank's local work (packing
 * its routed rows, its experts' gather-GEMM-scatter from model/gms.c, the
 * weighted combine) plus the three all-to-alls as explicit nodes, each
 * costed by the link's fitted alltoall at the largest rank's off-rank
 * volume (every rank waits for the one that moves the most; a rank's own
 * rows are a local copy). */
#include "comet_model.h"
#include "dist_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int moe_check(const comet_model_moe *m)
{
    if (!m || m->ranks < 1 || !m->rank || !(m->K >= 1) || !(m->N >= 1) || !(m->experts >= 1))
        return -EINVAL;
    for (int r = 0; r < m->ranks; r++) {
        const comet_model_moe_rank *x = &m->rank[r];
        if (!(x->pairs >= 0) || !(x->segments >= 0) || !(x->max_seg >= 0) || !(x->sent >= 0)
            || !(x->tokens >= 0) || !(x->remote_sent >= 0 && x->remote_sent <= x->sent)
            || !(x->remote_recv >= 0 && x->remote_recv <= x->pairs))
            return -EINVAL;
    }
    return 0;
}

int comet_model_moe_colls(const comet_model_moe *m, comet_model_dist_call *out, int cap)
{
    int rc = moe_check(m);
    if (rc || !out || cap < 0)
        return rc ? rc : -EINVAL;
    if (m->ranks == 1)
        return 0;
    const double P = m->ranks, cmax = ceil(m->experts / P);
    double sent = 0, back = 0;
    for (int r = 0; r < m->ranks; r++) {
        sent = fmax(sent, m->rank[r].remote_sent);
        back = fmax(back, m->rank[r].remote_recv);
    }
    int n = comet_model_dist_call_add(
        out, cap, 0, COMET_MODEL_ALLTOALL, "counts", P * cmax, P * cmax * 4, 1);
    n = comet_model_dist_call_add(
        out, cap, n, COMET_MODEL_ALLTOALL, "tokens", sent * m->K, sent * m->K * 4, 1);
    return comet_model_dist_call_add(
        out, cap, n, COMET_MODEL_ALLTOALL, "combine", back * m->N, back * m->N * 4, 1);
}

int comet_model_moe_predict(const comet_model_hw *hw, const comet_model_moe *m, int dataflow,
    double tile_m, int threads, const char *link, comet_model_dist_pred *out)
{
    int rc = moe_check(m);
    if (rc || !hw || !out || dataflow < 1 || dataflow > 4 || !(hw->clock_ghz > 0))
        return rc ? rc : -EINVAL;
    memset(out, 0, sizeof *out);
    const double P = m->ranks, T = threads > 0 ? threads : 1;
    /* a rank alone on its cores, the machine's memory shared by the ranks */
    comet_model_hw one;
    comet_model__dist_rank_hw(hw, m->ranks, (int)T, &one);
    const double hz = hw->clock_ghz * 1e9;
    double worst = 0;
    for (int r = 0; r < m->ranks; r++) {
        const comet_model_moe_rank *x = &m->rank[r];
        /* pack: read the token rows, write the send buffer; zero the
         * experts' output buffer; combine: read the returned rows,
         * read-modify-write the output. Each at the bandwidth of the level
         * that holds the call's buffers (all of them cycle every call). */
        double pk = 2 * x->sent * m->K * 4, zr = x->pairs * m->N * 4,
               cb = x->sent * m->N * 4 + 2 * x->tokens * m->N * 4,
               self = 2 * (x->sent - x->remote_sent) * (m->K + m->N) * 4;
        double foot = 4
            * (x->tokens * (m->K + m->N) + x->sent * (m->K + m->N) + x->pairs * (m->K + m->N)
                + ceil(m->experts / P) * m->K * m->N);
        double t = (pk + zr + cb + self) / comet_model_cpu_level_bw(&one, foot, 1) / hz;
        if (x->pairs > 0 && x->segments > 0) {
            comet_model_gms g = { .rows_in = x->pairs,
                .rows_out = x->pairs,
                .K = m->K,
                .N = m->N,
                .pairs = x->pairs,
                .segments = x->segments,
                .max_seg = x->max_seg };
            comet_model_gms_config c
                = { .dataflow = dataflow, .tile_m = tile_m > 0 ? tile_m : 48, .threads = (int)T };
            comet_model_gms_cost k;
            if ((rc = comet_model_gms_eval(&one, &g, &c, &k)) != 0)
                return rc;
            t += k.seconds;
        }
        worst = fmax(worst, t);
    }
    /* the ranks are processes of this machine running at once (the gms
     * model already charges the rank's own T threads) */
    out->local_s = worst / comet_model__dist_share(hw, m->ranks, (int)T);

    comet_model_hw net;
    if ((rc = comet_model__dist_net(hw, m->ranks, link, &net, out->link, sizeof out->link)) != 0)
        return rc;
    int nc = comet_model_moe_colls(m, out->call, COMET_MODEL_DIST_MAXCALLS);
    if (nc < 0)
        return nc;
    out->ncall = nc;
    for (int i = 0; i < nc; i++) {
        comet_model_dist_call *c = &out->call[i];
        /* the fits time uniform all-to-alls: (P-1)/P of their bytes leave
         * the rank */
        comet_model_coll_cost k = comet_model_coll_time(&net, COMET_MODEL_ALLTOALL, m->ranks,
            !strcmp(c->op, "counts") ? c->bytes : c->bytes * P / (P - 1), COMET_MODEL_ALG_NONE);
        c->seconds = k.cycles / hz;
        out->coll_s += c->calls * c->seconds;
    }
    out->seconds = out->local_s + out->coll_s;
    return isfinite(out->seconds) ? 0 : -ERANGE;
}
