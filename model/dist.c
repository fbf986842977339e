/* Scale-out prediction of the distributed compound kernels (kernels/dist.c):
 * a rank's time is its local compute at the local profile's rates plus the
 * explicit collectives its program issues, each costed by the fit of the
 * link the record ran on. The kernels are bulk-synchronous (every
 * collective blocks on the result the next pass needs), so the two add.
 * Their validation against records is validate.c's, their --explain
 * explain.c's. */
#include "comet_model.h"
#include "dist_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

int comet_model_dist_call_add(comet_model_dist_call *out, int cap, int n, comet_model_coll kind,
    const char *op, double count, double bytes, double calls)
{
    if (n >= cap)
        return n;
    comet_model_dist_call *c = &out[n];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    snprintf(c->op, sizeof c->op, "%s", op);
    c->count = count;
    c->bytes = bytes;
    c->calls = calls;
    return n + 1;
}

int comet_model_dist_colls(
    const comet_model_problem *pb, int fused, int p, comet_model_dist_call *out, int cap)
{
    if (!pb || !out || cap < 0 || p < 1)
        return -EINVAL;
    if (p == 1)
        return 0; /* one rank issues no collective worth a link */
    const double P = p;
    int n = 0;
    switch (pb->op) {
    case COMET_MODEL_GEMM_SOFTMAX:
    case COMET_MODEL_GEMM_LAYERNORM: {
        const double M = pb->M, nl = floor(pb->N / P);
        if (!fused) {
            /* slice widths (one integer each, MPI_Allgather), then the
             * M x n slices (MPI_Allgatherv: slices may differ in width) */
            n = comet_model_dist_call_add(out, cap, n, COMET_MODEL_ALLGATHER, "widths", 1, 8, 1);
            return comet_model_dist_call_add(
                out, cap, n, COMET_MODEL_ALLGATHERV, "", M * nl, M * nl * 4, 1);
        }
        if (pb->op == COMET_MODEL_GEMM_SOFTMAX) {
            n = comet_model_dist_call_add(out, cap, n, COMET_MODEL_ALLREDUCE, "max", M, M * 4, 1);
            return comet_model_dist_call_add(
                out, cap, n, COMET_MODEL_ALLREDUCE, "sum", M, M * 4, 1);
        }
        /* LayerNorm merges in double: row sums plus the width, then the
         * squared deviations from the global mean */
        n = comet_model_dist_call_add(
            out, cap, n, COMET_MODEL_ALLREDUCE, "sum", M + 1, (M + 1) * 8, 1);
        return comet_model_dist_call_add(out, cap, n, COMET_MODEL_ALLREDUCE, "sum", M, M * 8, 1);
    }
    case COMET_MODEL_ATTENTION: {
        const double bh = pb->heads, lq = pb->lq, d = pb->d, lk = floor(pb->lk / P);
        if (!fused) {
            /* per head: the score slices gathered into full rows; then the
             * partial outputs summed */
            n = comet_model_dist_call_add(out, cap, n, COMET_MODEL_ALLGATHER, "widths", 1, 8, 1);
            n = comet_model_dist_call_add(
                out, cap, n, COMET_MODEL_ALLGATHERV, "", lq * lk, lq * lk * 4, bh);
            return comet_model_dist_call_add(
                out, cap, n, COMET_MODEL_ALLREDUCE, "sum", bh * lq * d, bh * lq * d * 4, 1);
        }
        n = comet_model_dist_call_add(
            out, cap, n, COMET_MODEL_ALLREDUCE, "max", bh * lq, bh * lq * 4, 1);
        return comet_model_dist_call_add(
            out, cap, n, COMET_MODEL_ALLREDUCE, "sum", bh * lq * (d + 1), bh * lq * (d + 1) * 4, 1);
    }
    default:
        return -ENOTSUP;
    }
}

void comet_model__dist_rank_hw(const comet_model_hw *hw, int p, int threads, comet_model_hw *one)
{
    *one = *hw;
    one->cores = threads > 0 ? threads : 1;
    one->clusters = 1;
    one->cluster_net.dims[0] = 1;
    one->cluster_net.dims[1] = 1;
    one->n_outer = 0;
    /* the ranks are processes of this machine: they share its memory */
    one->dram.bw = hw->dram.bw / (p > 0 ? p : 1);
}

double comet_model__dist_share(const comet_model_hw *hw, int p, int threads)
{
    const double T = threads > 0 ? threads : 1;
    const double share
        = comet_model_gms_core_share(hw, (p > 0 ? p : 1) * T) / comet_model_gms_core_share(hw, T);
    return share > 0 ? share : 1;
}

int comet_model__dist_net(
    const comet_model_hw *hw, int p, const char *link, comet_model_hw *net, char *name, size_t len)
{
    *net = *hw;
    net->clusters = p;
    net->cluster_net.dims[0] = p;
    net->cluster_net.dims[1] = 1;
    net->n_outer = 0;
    if (link && *link) {
        if (comet_model_links_for_transport(hw, link, &net->links) != 0)
            return -ENOENT; /* no fit of that link: no prediction over another */
        snprintf(name, len, "%s", link);
    }
    return 0;
}

/* The rank's own slice, run as the single-process kernels run it: one BLAS
 * GEMM, then row passes (the fused distributed kernels too: their
 * statistics need the whole slice before the first collective). */
int comet_model__dist_slice(const comet_model_hw *hw, const comet_model_problem *pb, int threads,
    int p, comet_model_hw *one, comet_model_problem *sl, comet_model_mapping *mp)
{
    const int att = pb->op == COMET_MODEL_ATTENTION;
    *sl = *pb;
    if (att)
        sl->lk = floor(pb->lk / (double)p);
    else
        sl->N = floor(pb->N / (double)p);
    if (!(att ? sl->lk >= 1 : sl->N >= 1))
        return -EINVAL;
    comet_model__dist_rank_hw(hw, p, threads, one);
    comet_model_local_mapping(one, sl, 0, 0, one->cores, 1, mp);
    return 0;
}

/* The unfused baselines' staging (kernels/dist.c): the gathered slices
 * ([rank][rows][width]) are copied into whole rows before the row pass, and
 * GEMM-Softmax/LayerNorm copy their own slice of each row out again. In-cache
 * copies, read and written, at the bandwidth of the level the gathered
 * intermediate fits in (one core's share). Cycles. */
double comet_model__dist_stage_cycles(
    const comet_model_hw *one, const comet_model_problem *pb, double P)
{
    double bytes, foot;
    if (pb->op == COMET_MODEL_ATTENTION) {
        const double L = floor(pb->lk / P) * P, rows = pb->lq;
        foot = 2 * rows * L * 4; /* the gathered slices and the staged rows, per head */
        bytes = pb->heads * 2 * rows * L * 4;
    } else {
        const double N = floor(pb->N / P) * P, n = floor(pb->N / P);
        foot = pb->M * N * 4;
        bytes = 2 * pb->M * (N + n) * 4;
    }
    const comet_model_mem *lv = foot <= one->lb.capacity ? &one->lb
        : foot <= one->gb.capacity                       ? &one->gb
                                                         : &one->dram;
    const double bw = comet_model_level_bw(lv, 1);
    return bw > 0 ? bytes / bw : 0;
}

int comet_model_dist_predict(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    int threads, int p, const char *link, comet_model_dist_pred *out)
{
    if (!hw || !pb || !out || p < 1 || !(hw->clock_ghz > 0))
        return -EINVAL;
    memset(out, 0, sizeof *out);
    const double P = p;
    comet_model_problem sl;
    comet_model_hw one;
    comet_model_mapping mp;
    if (comet_model__dist_slice(hw, pb, threads, p, &one, &sl, &mp) != 0)
        return -EINVAL;
    comet_model_result r;
    comet_model_eval(&one, &sl, &mp, &r);
    if (!r.valid)
        return -ERANGE;
    const double hz = hw->clock_ghz * 1e9;
    out->local_s = r.seconds;
    /* the fused LayerNorm runs passes of its own between its all-reduces
     * (row sums; squared deviations from the global mean in double, one
     * dependent add per element; the apply in double), one thread over the
     * slice in cache: their measured cost (vector.dist_ln_*) in place of
     * the LayerNorm row pass. On the Zen 5 VM they cost 2.6-3.5 cycles an
     * element more than softmax's passes (the records' difference). */
    if (fused && pb->op == COMET_MODEL_GEMM_LAYERNORM && hw->dist_ln_elem_cycles > 0) {
        const double t_ln = sl.M * (sl.N * hw->dist_ln_elem_cycles + hw->dist_ln_row_cycles);
        out->local_s = fmax(r.cycles - r.t_pass + t_ln, r.bound_cycles) / hz;
    }
    /* the unfused baselines gather whole rows and every rank runs the row
     * pass over all N (Lk) columns: p times the slice's pass */
    if (!fused) {
        out->local_s += (P - 1) * r.t_pass / hz;
        out->local_s += comet_model__dist_stage_cycles(&one, pb, P) / hz;
    }
    /* the ranks run at once on p x threads cores of this machine */
    out->local_s /= comet_model__dist_share(hw, p, one.cores);

    /* the collectives, over the link the record names */
    comet_model_hw net;
    int rc = comet_model__dist_net(hw, p, link, &net, out->link, sizeof out->link);
    if (rc)
        return rc;
    int nc = comet_model_dist_colls(pb, fused, p, out->call, COMET_MODEL_DIST_MAXCALLS);
    if (nc < 0)
        return nc;
    out->ncall = nc;
    for (int i = 0; i < nc; i++) {
        comet_model_dist_call *c = &out->call[i];
        /* the model's all-gather size is the gathered total */
        const double b = c->kind == COMET_MODEL_ALLGATHER || c->kind == COMET_MODEL_ALLGATHERV
            ? c->bytes * P
            : c->bytes;
        comet_model_coll_cost k = comet_model_coll_time(&net, c->kind, p, b, COMET_MODEL_ALG_NONE);
        c->seconds = k.cycles / hz;
        out->coll_s += c->calls * c->seconds;
    }
    out->seconds = out->local_s + out->coll_s;
    return isfinite(out->seconds) ? 0 : -ERANGE;
}
