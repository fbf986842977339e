/* Validation, in one module (comet_model_validate.h): measured records
 * (compound ops, gather-GEMM-scatter and the distributed kernels) set up as
 * problems and configurations and predicted, and every statistic that
 * validate, the report and the prediction intervals print (one quantile
 * convention: comet_util_quantile). The top of model/: it calls the
 * others, none calls it. */
#include "comet_model_validate.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Compound-kernel records: set up on the local machine and predicted   */
/* ------------------------------------------------------------------ */

void comet_model_record_problem(
    comet_model_op op, const comet_results_shape *sh, comet_model_problem *pb)
{
    memset(pb, 0, sizeof *pb);
    pb->op = op;
    if (comet_model_op_desc(op)->shape == COMET_MODEL_SHAPE_ATTENTION) {
        pb->heads = sh->B * sh->H;
        pb->lq = sh->Lq;
        pb->lk = sh->Lk;
        pb->d = sh->d;
        pb->causal = sh->causal > 0;
    } else {
        pb->M = sh->M;
        pb->N = sh->N;
        pb->K = sh->K;
    }
}

int comet_model_record_setup(const comet_model_hw *hw, const comet_results_record *rec,
    comet_model_hw *local, comet_model_problem *pb, comet_model_mapping *mp)
{
    if (!hw || !rec || !local || !pb || !mp)
        return -EINVAL;
    const char *op = rec->op, *var = rec->variant;
    if (rec->kind != COMET_RESULTS_KERNEL && rec->kind != COMET_RESULTS_DIST_KERNEL)
        return -ENOENT;
    comet_model_op o;
    if (comet_model_op_parse(op, &o) != 0 || (strcmp(var, "fused") && strcmp(var, "unfused"))) {
        memset(pb, 0, sizeof *pb);
        return -ENOENT;
    }
    const comet_model_opdesc *d = comet_model_op_desc(o);
    /* the record's shape keys by the op's shape class; its row-block tile
     * is tile_q where the rows are queries */
    const int att_shape = d->shape == COMET_MODEL_SHAPE_ATTENTION;
    const comet_results_params *pa = &rec->params;
    comet_model_record_problem(o, &rec->shape, pb);
    if (att_shape ? !(pb->heads > 0 && pb->lq > 0 && pb->lk > 0 && pb->d > 0)
                  : !(pb->M > 0 && pb->N > 0 && pb->K > 0))
        return -ENOENT;
    double thr = rec->threads, ranks = rec->ranks, tile = att_shape ? pa->tile_q : pa->tile_m;
    if (!(thr >= 1))
        thr = 1;
    if (!(ranks >= 1))
        ranks = 1;
    *local = *hw;
    local->cores = (int)thr;
    local->clusters = (int)ranks;
    local->cluster_net.dims[0] = (int)ranks;
    local->cluster_net.dims[1] = 1;
    local->n_outer = 0;
    /* ranks are processes of this one machine: they share its memory */
    local->dram.bw = hw->dram.bw / ranks;
    /* a distributed kernel's collectives ran over the link its record names
     * (shared memory, or a TCP link between namespaces or hosts): predict
     * them with that link's fits, not another's */
    if (ranks > 1 && *rec->link) {
        char link[32];
        comet_model_record_link(hw, rec->link, rec->c2c_ns, rec->nc2c, link, sizeof link);
        comet_model_links_for_transport(hw, link, &local->links);
    }
    /* a fused kernel that ran op by op in cache (small GEMM row ops; the
     * record's params.method) is predicted as what it ran: the unfused
     * mapping with its intermediate in cache */
    const int op_by_op = !strcmp(var, "fused") && !strcmp(pa->method, "op_by_op");
    comet_model_local_mapping(local, pb, !strcmp(var, "fused") && !op_by_op, tile > 0 ? tile : 0,
        (int)thr, (int)ranks, mp);
    /* that method's pass writes over the GEMM's output (kernels/kernels.c) */
    mp->in_place = op_by_op;
    /* a fused flash-style kernel: the keys per KV tile it ran with */
    const double tk = pa->tile_k;
    if (d->flash && mp->fused && mp->cs_n == 1 && tk >= 1) {
        comet_model_opdims od;
        comet_model_op_dims(pb, &od);
        mp->tile_k = fmin(tk, od.N);
    }
    return 0;
}

double comet_model_record_busy(const comet_results_record *rec)
{
    if (!rec)
        return NAN;
    const comet_results_gate *l = &rec->load;
    const double during = l->busy_during, before = l->busy_others;
    /* Others' share while the samples ran; where that was not measured (the
     * distributed kernels' ranks busy-poll every core: null), or where the
     * idle gate timed out (it gave up while others kept the machine busy
     * right before the samples; the distributed kernels' records wrote 0
     * for the unmeasured share before it was said so), the gate's reading
     * counts too. */
    const int timed_out = l->gate && !strcmp(l->gate, "timeout");
    double b = isfinite(during) ? during : 0;
    if (isfinite(before) && (!isfinite(during) || timed_out))
        b = fmax(b, before);
    return b;
}

/* The same configuration measured by several records (runs given
 * together; the distributed kernels' MPI launches, whose medians fall into
 * a fast and a slow group from one launch to the next on these VMs, one
 * record each) is one row: the median of their medians, the span of their
 * CIs, the busiest reading. One prediction, one yardstick. */
static int same_config(const comet_model_vrow *a, const comet_model_vrow *b)
{
    return !strcmp(a->op, b->op) && !strcmp(a->variant, b->variant) && a->M == b->M && a->N == b->N
        && a->K == b->K && a->heads == b->heads && a->causal == b->causal
        && a->threads == b->threads && a->ranks == b->ranks && a->tile_m == b->tile_m
        && a->tile_k == b->tile_k && a->swept == b->swept && !strcmp(a->link, b->link);
}

static int merge_launches(comet_model_vrow *rows, int n)
{
    double *meds = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    char *used = calloc((size_t)(n > 0 ? n : 1), 1);
    int k = 0;
    if (!meds || !used) { /* no memory: the rows as they are */
        free(meds);
        free(used);
        return n;
    }
    for (int i = 0; i < n; i++) {
        if (used[i])
            continue;
        comet_model_vrow row = rows[i];
        int m = 0;
        for (int j = i; j < n; j++) {
            if (used[j] || !same_config(&rows[i], &rows[j]))
                continue;
            used[j] = 1;
            meds[m++] = rows[j].measured_s;
            if (j == i)
                continue;
            row.ci_lo_s = fmin(row.ci_lo_s, rows[j].ci_lo_s);
            row.ci_hi_s = fmax(row.ci_hi_s, rows[j].ci_hi_s);
            if (isfinite(rows[j].busy) && !(row.busy >= rows[j].busy))
                row.busy = rows[j].busy;
            /* fmin and fmax skip a NaN (not measured) */
            row.c2c_lo_ns = fmin(row.c2c_lo_ns, rows[j].c2c_lo_ns);
            row.c2c_hi_ns = fmax(row.c2c_hi_ns, rows[j].c2c_hi_ns);
        }
        if (m > 1) {
            row.measured_s = comet_util_quantile(meds, m, 0.5);
            row.rel_err = fabs(row.predicted_s - row.measured_s) / row.measured_s;
        }
        row.launches = m;
        rows[k++] = row;
    }
    free(meds);
    free(used);
    return k;
}

int comet_model_validate_records(const comet_model_hw *hw, const comet_results_record *recs,
    size_t n, comet_model_vrow *rows, size_t cap)
{
    size_t k = 0;
    if (!hw || (!recs && n))
        return -EINVAL;
    for (size_t i = 0; i < n && k < cap; i++) {
        const comet_results_record *rec = &recs[i];
        const double med = rec->stats.median_s;
        comet_model_hw local;
        comet_model_problem pb;
        comet_model_mapping mp;
        if (!(med > 0) || comet_model_record_setup(hw, rec, &local, &pb, &mp) != 0)
            continue;
        comet_model_result r;
        /* the local description's buffers are the caches: a kernel that
         * runs is by definition a fitting mapping. A CPU description's
         * capacities never prune (comet_model_eval), they only place an
         * intermediate in L2, the LLC or DRAM, so they stay as calibrated
         * (overriding them put every intermediate in L2). */
        comet_model_eval(&local, &pb, &mp, &r);
        if (!r.valid)
            continue;
        /* a distributed kernel: its local compute plus the collectives its
         * program issues, over the fits of the link it ran on (model/dist.c) */
        comet_model_dist_pred dp;
        char link[32] = ""; /* with its cores' placement (comet_model_record_link) */
        const int dist = rec->kind == COMET_RESULTS_DIST_KERNEL;
        if (dist && *rec->link)
            comet_model_record_link(hw, rec->link, rec->c2c_ns, rec->nc2c, link, sizeof link);
        if (dist && local.clusters > 1
            && comet_model_dist_predict(
                   hw, &pb, !strcmp(rec->variant, "fused"), local.cores, local.clusters, link, &dp)
                == 0)
            r.seconds = dp.seconds;
        const comet_model_opdesc *d = comet_model_op_desc(pb.op);
        const int att = d->shape == COMET_MODEL_SHAPE_ATTENTION;
        const double tile = att ? rec->params.tile_q : rec->params.tile_m;
        comet_model_vrow *row = &rows[k++];
        memset(row, 0, sizeof *row);
        snprintf(row->op, sizeof row->op, "%s", comet_model_op_name(pb.op));
        /* the record's variant (a fused record run op by op stays fused) */
        snprintf(row->variant, sizeof row->variant, "%s",
            !strcmp(rec->variant, "fused") ? "fused" : "unfused");
        row->heads = att ? pb.heads : 0;
        row->causal = pb.causal;
        row->tile_m = mp.fused && tile > 0 ? tile : 0;
        row->tile_k = mp.fused && d->flash ? mp.tile_k : 0;
        row->swept = rec->params.swept[0] != 0;
        row->M = att ? pb.lq : pb.M;
        row->N = att ? pb.lk : pb.N;
        row->K = att ? pb.d : pb.K;
        row->threads = local.cores;
        row->ranks = local.clusters;
        row->measured_s = med;
        row->ci_lo_s = rec->stats.ci_lo_s;
        row->ci_hi_s = rec->stats.ci_hi_s;
        row->predicted_s = r.seconds;
        row->rel_err = fabs(r.seconds - med) / med;
        row->busy = comet_model_record_busy(rec);
        row->c2c_lo_ns = row->c2c_hi_ns = NAN;
        for (size_t c = 0; c < rec->nc2c && c < COMET_RESULTS_C2C_MAX; c++) {
            row->c2c_lo_ns = fmin(row->c2c_lo_ns, rec->c2c_ns[c]);
            row->c2c_hi_ns = fmax(row->c2c_hi_ns, rec->c2c_ns[c]);
        }
        row->launches = 1;
        snprintf(row->link, sizeof row->link, "%s", link);
    }
    return merge_launches(rows, (int)k);
}

/* The median and 90th percentile of n relative errors (NaN when there are
 * none or e is NULL); frees e. */
static void median_p90(double *e, int n, double *med, double *p90)
{
    *med = *p90 = NAN;
    if (e && n > 0) {
        *med = comet_util_quantile(e, n, 0.5);
        *p90 = comet_util_quantile(e, n, 0.9);
    }
    free(e);
}

void comet_model_validate_summary(const comet_model_vrow *rows, int n, comet_model_vsum *out)
{
    memset(out, 0, sizeof *out);
    if (!rows || n <= 0)
        return;
    double *e = malloc((size_t)n * sizeof(double));
    for (int i = 0; e && i < n; i++)
        e[i] = rows[i].rel_err;
    /* one quantile convention with the report (comet_util_quantile) */
    median_p90(e, n, &out->median_rel_err, &out->p90_rel_err);
    out->rows = n;
    /* the records measured while the machine was quiet: where the yardstick
     * is the machine's, not its neighbours' */
    double *q = malloc((size_t)n * sizeof(double));
    int nq = 0;
    for (int i = 0; q && i < n; i++) {
        if (rows[i].busy > COMET_RESULTS_BUSY_MAX)
            out->busy_rows++;
        else
            q[nq++] = rows[i].rel_err;
    }
    median_p90(q, nq, &out->quiet_median_rel_err, &out->quiet_p90_rel_err);
    /* multi-thread records by where their threads sat: a VM host moves its
     * vCPUs between one shared cache and two, and data one thread writes and
     * another reads follows (kernels/README.md). Two caches apart: some
     * pass saw more than twice the lowest latency of the set. */
    out->c2c_floor_ns = NAN;
    for (int i = 0; i < n; i++)
        if (rows[i].c2c_lo_ns > 0)
            out->c2c_floor_ns = fmin(out->c2c_floor_ns, rows[i].c2c_lo_ns);
    double *a = malloc((size_t)n * sizeof(double)), *b = malloc((size_t)n * sizeof(double));
    int na = 0, nb = 0;
    for (int i = 0; a && b && out->c2c_floor_ns > 0 && i < n; i++) {
        if (!(rows[i].c2c_hi_ns > 0))
            continue;
        out->c2c_rows++;
        if (rows[i].c2c_hi_ns > 2 * out->c2c_floor_ns)
            a[na++] = rows[i].rel_err;
        else
            b[nb++] = rows[i].rel_err;
    }
    out->across_rows = na;
    median_p90(a, na, &out->across_median_rel_err, &out->across_p90_rel_err);
    median_p90(b, nb, &out->near_median_rel_err, &out->near_p90_rel_err);
    comet_model_vpair *p = malloc((size_t)n * sizeof *p);
    int np = p ? comet_model_validate_pairs(rows, n, p, n) : 0;
    for (int i = 0; i < np; i++) {
        out->pairs++;
        out->winner_agrees += p[i].agrees;
        out->decided += p[i].decided;
        out->decided_agrees += p[i].decided && p[i].agrees;
        if (p[i].swept)
            continue;
        out->shapes++;
        out->shape_agrees += p[i].agrees;
        out->shape_decided += p[i].decided;
        out->shape_decided_agrees += p[i].decided && p[i].agrees;
    }
    free(p);
}

int comet_model_validate_pairs(
    const comet_model_vrow *rows, int n, comet_model_vpair *pairs, int cap)
{
    int k = 0;
    for (int i = 0; i < n && k < cap; i++) {
        if (strcmp(rows[i].variant, "fused"))
            continue;
        for (int j = 0; j < n; j++) {
            const comet_model_vrow *f = &rows[i], *u = &rows[j];
            if (strcmp(u->variant, "unfused") || strcmp(u->op, f->op) || u->M != f->M
                || u->N != f->N || u->K != f->K || u->heads != f->heads || u->causal != f->causal
                || u->threads != f->threads || u->ranks != f->ranks)
                continue;
            comet_model_vpair *q = &pairs[k++];
            q->fused = i;
            q->unfused = j;
            q->measured_speedup = u->measured_s / f->measured_s;
            q->predicted_speedup = u->predicted_s / f->predicted_s;
            q->agrees = (f->measured_s < u->measured_s) == (f->predicted_s < u->predicted_s);
            /* without CIs every pair counts as decided (the median alone) */
            int have_ci = f->ci_hi_s > 0 && u->ci_hi_s > 0;
            q->decided = !have_ci || f->ci_hi_s < u->ci_lo_s || u->ci_hi_s < f->ci_lo_s;
            q->swept = f->swept;
            break;
        }
    }
    return k;
}

/* ------------------------------------------------------------------ */
/* Statistics of validation rows                                       */
/* ------------------------------------------------------------------ */

/* rows of op (NULL: any) and variant (NULL: any) -> ratios measured/predicted */
static int ratios(
    const comet_model_vrow *rows, int n, const char *op, const char *variant, double *out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if ((op && strcmp(rows[i].op, op)) || (variant && strcmp(rows[i].variant, variant)))
            continue;
        if (rows[i].predicted_s > 0 && rows[i].measured_s > 0)
            out[k++] = rows[i].measured_s / rows[i].predicted_s;
    }
    return k;
}

int comet_model_interval(const comet_model_vrow *rows, int n, const char *op, const char *variant,
    double level, comet_model_band *band)
{
    if (!rows || n < 0 || !band || !(level > 0 && level < 1))
        return -EINVAL;
    memset(band, 0, sizeof *band);
    double *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r)
        return -ENOMEM;
    /* the narrowest basis with enough records: op and variant, the op, all */
    static const int min_n = 5;
    int k = ratios(rows, n, op, variant, r), scope = 0;
    if (k < min_n)
        k = ratios(rows, n, op, NULL, r), scope = 1;
    if (k < min_n)
        k = ratios(rows, n, NULL, NULL, r), scope = 2;
    if (k < min_n) {
        free(r);
        return -ENOENT;
    }
    band->records = k;
    band->level = level;
    band->scope = scope;
    band->lo = comet_util_quantile(r, k, (1 - level) / 2);
    band->hi = comet_util_quantile(r, k, 1 - (1 - level) / 2);
    free(r);
    return 0;
}

int comet_model_validate_groups(
    const comet_model_vrow *rows, int n, comet_model_vgroup *groups, int cap)
{
    if ((!rows && n) || (!groups && cap) || n < 0)
        return -EINVAL;
    double *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e),
           *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!e || !b) {
        free(e);
        free(b);
        return -ENOMEM;
    }
    int ng = 0;
    /* groups in order of first appearance: every op and variant present */
    for (int i = 0; i < n && ng < cap; i++) {
        int seen = 0;
        for (int g = 0; g < ng && !seen; g++)
            seen = !strcmp(groups[g].op, rows[i].op) && !strcmp(groups[g].variant, rows[i].variant);
        if (seen)
            continue;
        comet_model_vgroup *gr = &groups[ng++];
        memset(gr, 0, sizeof *gr);
        snprintf(gr->op, sizeof gr->op, "%s", rows[i].op);
        snprintf(gr->variant, sizeof gr->variant, "%s", rows[i].variant);
        int k = 0;
        for (int j = i; j < n; j++)
            if (!strcmp(rows[j].op, gr->op) && !strcmp(rows[j].variant, gr->variant)) {
                e[k] = rows[j].rel_err;
                b[k++] = rows[j].predicted_s / rows[j].measured_s - 1;
            }
        gr->n = k;
        gr->median_rel_err = comet_util_quantile(e, k, 0.5);
        gr->p90_rel_err = comet_util_quantile(e, k, 0.9);
        gr->bias = comet_util_quantile(b, k, 0.5);
    }
    free(e);
    free(b);
    return ng;
}

/* ------------------------------------------------------------------ */
/* Gather-GEMM-scatter records                                         */
/* ------------------------------------------------------------------ */

int comet_model_gms_validate(const comet_model_hw *hw, const comet_results_record *recs, size_t n,
    comet_model_gms_vrow *rows, int cap)
{
    int k = 0;
    if (!hw || (!recs && n) || (!rows && cap > 0))
        return -EINVAL;
    for (size_t i = 0; i < n && k < cap; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_KERNEL || strcmp(r->op, "gms"))
            continue;
        const comet_results_shape *sh = &r->shape;
        comet_model_gms_vrow *v = &rows[k];
        memset(v, 0, sizeof *v);
        snprintf(v->workload, sizeof v->workload, "%s", *r->workload ? r->workload : "input");
        v->skew = sh->skew;
        /* the generated inputs are square (rows in = rows out) */
        v->input.rows_in = v->input.rows_out = sh->rows;
        v->input.K = sh->K;
        v->input.N = sh->N;
        v->input.pairs = sh->pairs;
        v->input.segments = sh->nonempty;
        v->input.max_seg = sh->max_seg;
        if (comet_model_gms_dataflow_parse(r->dataflow, &v->config.dataflow) != 0)
            continue;
        v->config.tile_m = r->params.tile_m;
        double tiles = r->params.tiles;
        v->config.tiles = isfinite(tiles) ? tiles : 0;
        v->config.threads = r->threads;
        v->measured_s = r->stats.median_s;
        v->ci_lo_s = r->stats.ci_lo_s;
        v->ci_hi_s = r->stats.ci_hi_s;
        comet_model_gms_cost c;
        if (!(v->measured_s > 0) || comet_model_gms_eval(hw, &v->input, &v->config, &c) != 0)
            continue;
        v->predicted_s = c.seconds;
        v->rel_err = fabs(c.seconds - v->measured_s) / v->measured_s;
        k++;
    }
    return k;
}

static int same_input(const comet_model_gms_vrow *a, const comet_model_gms_vinput *b)
{
    return !strcmp(a->workload, b->workload) && a->skew == b->skew
        && a->config.threads == b->threads;
}

int comet_model_gms_inputs(
    const comet_model_gms_vrow *rows, int n, comet_model_gms_vinput *out, int cap)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        int g = 0;
        while (g < k && !same_input(&rows[i], &out[g]))
            g++;
        if (g == k) {
            if (k == cap)
                continue;
            memset(&out[k], 0, sizeof out[k]);
            snprintf(out[k].workload, sizeof out[k].workload, "%s", rows[i].workload);
            out[k].skew = rows[i].skew;
            out[k].threads = rows[i].config.threads;
            k++;
        }
        comet_model_gms_vinput *in = &out[g];
        const comet_model_gms_vrow *v = &rows[i];
        int d = v->config.dataflow - 1;
        in->configs++;
        if (!(in->best_s > 0) || v->measured_s < in->best_s) {
            in->best_s = v->measured_s;
            in->best_df = v->config.dataflow;
            in->best_tile = v->config.tile_m;
            in->best_ci_hi_s = v->ci_hi_s;
        }
        if (!(in->df_best_s[d] > 0) || v->measured_s < in->df_best_s[d])
            in->df_best_s[d] = v->measured_s;
    }
    /* the model's choice: its lowest prediction among the configurations
     * measured (what a model-guided search would run) */
    for (int g = 0; g < k; g++) {
        double lo = INFINITY;
        for (int i = 0; i < n; i++)
            if (same_input(&rows[i], &out[g]) && rows[i].predicted_s < lo) {
                lo = rows[i].predicted_s;
                out[g].chosen_s = rows[i].measured_s;
                out[g].chosen_df = rows[i].config.dataflow;
                out[g].chosen_tile = rows[i].config.tile_m;
                out[g].chosen_ci_lo_s = rows[i].ci_lo_s;
            }
    }
    return k;
}

void comet_model_gms_summary(const comet_model_gms_vrow *rows, int n,
    const comet_model_gms_vinput *in, int ninputs, comet_model_gms_vsum *out)
{
    memset(out, 0, sizeof *out);
    out->records = n;
    double *e = n > 0 ? malloc((size_t)n * sizeof *e) : NULL;
    for (int i = 0; e && i < n; i++)
        e[i] = rows[i].rel_err;
    median_p90(e, n, &out->median_rel_err, &out->p90_rel_err);
    out->inputs = ninputs;
    for (int k = 0; k < ninputs; k++) {
        out->within_5pct += in[k].chosen_s <= 1.05 * in[k].best_s;
        out->within_noise += in[k].chosen_ci_lo_s <= in[k].best_ci_hi_s;
        out->configs += in[k].configs;
        for (int d = 0; d < 4; d++)
            if (in[k].df_best_s[d] > 0)
                out->worst_loss[d] = fmax(out->worst_loss[d], in[k].df_best_s[d] / in[k].best_s);
    }
}

/* ------------------------------------------------------------------ */
/* Distributed-kernel records                                         */
/* ------------------------------------------------------------------ */

int comet_model_dist_matches(const comet_model_dist_pred *pred, const comet_results_record *rec)
{
    if (!pred || !rec)
        return -EINVAL;
    if ((size_t)pred->ncall != rec->ncollectives)
        return 0;
    for (int i = 0; i < pred->ncall; i++) {
        const comet_model_dist_call *c = &pred->call[i];
        const comet_results_coll_call *m = &rec->collectives[i];
        if (!m->kind || strcmp(m->kind, comet_model_coll_name(c->kind))
            || strcmp(m->op ? m->op : "", c->op) || m->bytes != c->bytes || m->calls != c->calls)
            return 0;
    }
    return 1;
}

/* A distributed MoE record (op "gms", workload "moe"): its per-rank loads
 * predicted by model/moe.c. 0, or negative when it cannot be predicted. */
static int dist_moe_row(
    const comet_model_hw *hw, const comet_results_record *rec, comet_model_drow *row)
{
    comet_model_moe_rank ld[COMET_MODEL_MOE_MAXRANKS];
    int df = 0;
    if (!rec->workload || strcmp(rec->workload, "moe") || (int)rec->nrank_loads != rec->ranks
        || rec->ranks > COMET_MODEL_MOE_MAXRANKS
        || comet_model_gms_dataflow_parse(rec->dataflow, &df) != 0)
        return -EINVAL;
    for (int r = 0; r < rec->ranks; r++) {
        const comet_results_rank_load *x = &rec->rank_loads[r];
        ld[r] = (comet_model_moe_rank) { .tokens = x->tokens,
            .sent = x->sent,
            .pairs = x->pairs,
            .segments = x->segments,
            .max_seg = x->max_seg,
            .remote_sent = x->remote_sent,
            .remote_recv = x->remote_recv };
    }
    const comet_results_shape *sh = &rec->shape;
    comet_model_moe m
        = { .ranks = rec->ranks, .K = sh->K, .N = sh->N, .experts = sh->segments, .rank = ld };
    memset(row, 0, sizeof *row);
    const double tile = comet_results_has(rec->params.tile_m) ? rec->params.tile_m : 0;
    const int T = rec->threads > 0 ? rec->threads : 1;
    char link[32];
    comet_model_record_link(hw, rec->link, rec->c2c_ns, rec->nc2c, link, sizeof link);
    if (comet_model_moe_predict(hw, &m, df, tile, T, *rec->link ? link : "", &row->pred) != 0)
        return -ERANGE;
    snprintf(row->op, sizeof row->op, "gms:moe");
    snprintf(row->variant, sizeof row->variant, "%s", comet_model_gms_dataflow_name(df));
    snprintf(row->link, sizeof row->link, "%s", *rec->link ? link : "");
    row->M = sh->rows;
    row->N = sh->N;
    row->K = sh->K;
    row->threads = T;
    row->ranks = rec->ranks;
    row->measured_s = rec->stats.median_s;
    row->ci_lo_s = rec->stats.ci_lo_s;
    row->ci_hi_s = rec->stats.ci_hi_s;
    row->load_others = rec->load.busy_others;
    row->rel_err = fabs(row->pred.seconds - row->measured_s) / row->measured_s;
    row->colls_match = comet_model_dist_matches(&row->pred, rec);
    return 0;
}

int comet_model_dist_validate(const comet_model_hw *hw, const comet_results_record *recs, size_t n,
    comet_model_drow *rows, int cap)
{
    if (!hw || (!recs && n) || (!rows && cap > 0))
        return -EINVAL;
    int k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        const comet_results_record *rec = &recs[i];
        const double med = rec->stats.median_s;
        comet_model_problem pb;
        if (rec->kind != COMET_RESULTS_DIST_KERNEL || rec->ranks < 2 || !(med > 0)
            || rec->valid == 0)
            continue;
        if (rec->op && !strcmp(rec->op, "gms")) {
            if (dist_moe_row(hw, rec, &rows[k]) == 0)
                k++;
            continue;
        }
        comet_model_op op;
        if (comet_model_op_parse(rec->op, &op) != 0)
            continue;
        comet_model_record_problem(op, &rec->shape, &pb);
        const int att = comet_model_op_desc(op)->shape == COMET_MODEL_SHAPE_ATTENTION;
        const int fused = !strcmp(rec->variant, "fused");
        comet_model_drow *row = &rows[k];
        memset(row, 0, sizeof *row);
        /* the link with its cores' placement (comet_model_record_link) */
        char link[32];
        comet_model_record_link(hw, rec->link, rec->c2c_ns, rec->nc2c, link, sizeof link);
        if (comet_model_dist_predict(hw, &pb, fused, rec->threads > 0 ? rec->threads : 1,
                rec->ranks, *rec->link ? link : "", &row->pred)
            != 0)
            continue;
        snprintf(row->op, sizeof row->op, "%s", comet_model_op_name(pb.op));
        snprintf(row->variant, sizeof row->variant, "%s", fused ? "fused" : "unfused");
        snprintf(row->link, sizeof row->link, "%s", *rec->link ? link : "");
        row->M = att ? pb.lq : pb.M;
        row->N = att ? pb.lk : pb.N;
        row->K = att ? pb.d : pb.K;
        row->heads = att ? pb.heads : 0;
        row->threads = rec->threads > 0 ? rec->threads : 1;
        row->ranks = rec->ranks;
        row->measured_s = med;
        row->ci_lo_s = rec->stats.ci_lo_s;
        row->ci_hi_s = rec->stats.ci_hi_s;
        row->load_others = rec->load.busy_others;
        row->rel_err = fabs(row->pred.seconds - med) / med;
        row->colls_match = comet_model_dist_matches(&row->pred, rec);
        k++;
    }
    return k;
}
