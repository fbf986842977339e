/* Gather-GEMM-scatter (Efficient-GMS) on a CPU description: the cost of each
 * of the four dataflows of kernels/gms.c from an input's statistics, the
 * memory levels and the fused kernels' GEMM efficiency of the calibrated
 * profile. Phases run in series (the kernel's barriers); inside the main
 * loop compute and memory overlap (the larger wins). */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const df_names[] = { "unfused", "gather_fused", "scatter_fused", "fused" };

const char *comet_model_gms_dataflow_name(int dataflow)
{
    return dataflow >= 1 && dataflow <= 4 ? df_names[dataflow - 1] : "?";
}

int comet_model_gms_dataflow_parse(const char *name, int *dataflow)
{
    for (int i = 0; name && i < 4; i++)
        if (!strcmp(name, df_names[i])) {
            *dataflow = i + 1;
            return 0;
        }
    return -EINVAL;
}

/* Row tiles over all segments: the exact count when given, else each
 * segment's last tile half full on average (at least one per segment, at
 * most one per pair). */
static double tiles_est(const comet_model_gms *g, const comet_model_gms_config *c)
{
    if (c->tiles > 0)
        return c->tiles;
    double t = g->pairs / c->tile_m + g->segments / 2;
    return fmin(fmax(t, g->segments), g->pairs);
}

int comet_model_gms_eval(const comet_model_hw *hw, const comet_model_gms *g,
    const comet_model_gms_config *c, comet_model_gms_cost *out)
{
    if (!hw || !g || !c || !out)
        return -EINVAL;
    memset(out, 0, sizeof *out);
    if (strcmp(hw->kind, "cpu"))
        return -ENOTSUP; /* the kernel and its costs are a CPU node's */
    if (!(g->K >= 1 && g->N >= 1 && g->rows_in >= 1 && g->rows_out >= 1 && g->pairs >= 0
            && g->segments >= 0 && (g->pairs == 0 || g->segments >= 1) && isfinite(g->pairs))
        || c->dataflow < 1 || c->dataflow > 4 || c->threads < 1 || c->threads > hw->cores
        || !(c->tile_m >= 1) || !(c->tiles >= 0) || !(hw->clock_ghz > 0 && hw->peak_flops > 0))
        return -EINVAL;
    if (g->pairs == 0)
        return 0; /* the kernel returns before packing: nothing to do */
    const double f = hw->io_bytes_per_elem > 0 ? hw->io_bytes_per_elem
        : hw->bytes_per_elem > 0               ? hw->bytes_per_elem
                                               : 4;
    const double T = c->threads, hz = hw->clock_ghz * 1e9, P = g->pairs, K = g->K, N = g->N,
                 S = g->segments;
    const int df = c->dataflow, gather_sep = df == 1 || df == 3, scatter_sep = df == 1 || df == 2;
    const double W = S * K * N * f, IN = g->rows_in * K * f, OUT = g->rows_out * N * f,
                 G = P * K * f, TP = P * N * f, tiles = tiles_est(g, c);

    /* 1. the segments' weights packed once (read, write), threads share */
    double pack = 2 * W / comet_model_cpu_level_bw(hw, W, T);
    double bytes = 2 * W;

    /* 2. a separate gather: rows of in read, the gathered matrix written */
    double gather = 0;
    if (gather_sep) {
        gather = G / comet_model_cpu_level_bw(hw, IN, T) + G / comet_model_cpu_level_bw(hw, G, T);
        bytes += 2 * G;
    }

    /* 3. the main loop, each thread over its columns and every pair: the
     * GEMM on blocks of m rows (whole segments in dataflow 1), every thread
     * reading all A rows (gathered, or straight from in), the weights'
     * slice streamed per block, the product written or scattered hot */
    double m = df == 1 ? P / S : P / tiles;
    /* each thread runs its own single-threaded micro-kernel calls on its
     * N/T columns, with the weights packed once and no fork per call: the
     * steady state of one thread over all P rows (the fused grid at that
     * size), less the lanes short blocks of m rows waste. (The grid at M = m
     * itself would charge every block a whole kernel call: packing, fork.) */
    double eff = comet_model_fused_gemm_eff(hw, P, fmax(N / T, 1), K, 1)
        / comet_model_micro_tile_factor(hw, m);
    double comp = 2 * P * K * N / (hw->peak_flops * T * eff);
    double a_bytes = T * G, a_bw = comet_model_cpu_level_bw(hw, gather_sep ? G : IN, T);
    double calls = df == 1 ? S : tiles;
    double b_bytes = calls * K * N * f, b_bw = comet_model_cpu_level_bw(hw, K * N * f, T);
    double o_bytes = scatter_sep ? TP : 2 * TP;
    double o_bw = comet_model_cpu_level_bw(hw, scatter_sep ? TP : OUT, T);
    /* Within a tile the kernel runs its steps one after the other: a fused
     * gather copies the tile's rows, then the GEMM, then a fused scatter adds
     * the tile into out. Streams the GEMM itself reads or writes (gathered A,
     * the weights, the product) overlap its compute; the fused gather and
     * scatter, separate loops between GEMM calls, do not. */
    double a_t = a_bytes / a_bw, b_t = b_bytes / b_bw, o_t = o_bytes / o_bw;
    double main = fmax(comp, (gather_sep ? a_t : 0) + b_t + (scatter_sep ? o_t : 0))
        + (gather_sep ? 0 : a_t) + (scatter_sep ? 0 : o_t);
    bytes += a_bytes + b_bytes + o_bytes;

    /* 4. a separate scatter: the product read back, destination rows read
     * and written, in pair order per thread */
    double scatter = 0;
    if (scatter_sep) {
        scatter = TP / comet_model_cpu_level_bw(hw, TP, T)
            + 2 * TP / comet_model_cpu_level_bw(hw, OUT, T);
        bytes += 3 * TP;
    }

    /* the bound: the MACs at peak, or the compulsory traffic (weights, the
     * rows used of in, the rows of out read and written once) */
    double comp_peak = 2 * P * K * N / (hw->peak_flops * T);
    double once = W + fmin(P, g->rows_in) * K * f + 2 * fmin(P, g->rows_out) * N * f;
    double bound = fmax(comp_peak, once / comet_model_cpu_level_bw(hw, once, T));
    double sum = pack + gather + main + scatter;
    out->pack_s = pack / hz;
    out->gather_s = gather / hz;
    out->main_s = main / hz;
    out->scatter_s = scatter / hz;
    out->bytes = bytes;
    out->bound_s = bound / hz;
    out->bound_raised = sum < bound;
    out->seconds = fmax(sum, bound) / hz;
    return 0;
}

int comet_model_gms_explore(const comet_model_hw *hw, const comet_model_gms *g, const double *tiles,
    int ntiles, int max_threads, double (*tiles_of)(const void *ctx, double tile_m),
    const void *ctx, comet_model_gms_config *best, comet_model_gms_cost *cost)
{
    if (!hw || !g || !tiles || ntiles < 1 || max_threads < 1 || !best || !cost)
        return -EINVAL;
    int n = 0, found = 0;
    for (int t = 1; t <= max_threads && t <= hw->cores; t++)
        for (int df = 1; df <= 4; df++)
            for (int k = 0; k < ntiles; k++) {
                if (df == 1 && k > 0)
                    break; /* dataflow 1 runs whole segments: its tile does not matter */
                comet_model_gms_config c = { df, tiles[k], t, 0 };
                if (tiles_of)
                    c.tiles = tiles_of(ctx, tiles[k]);
                comet_model_gms_cost r;
                int rc = comet_model_gms_eval(hw, g, &c, &r);
                if (rc)
                    return rc;
                n++;
                if (!found || r.seconds < cost->seconds) {
                    *best = c;
                    *cost = r;
                    found = 1;
                }
            }
    return found ? n : -EINVAL;
}

#define jnum comet_util_jnum

int comet_model_gms_validate(
    const comet_model_hw *hw, json_t *const *recs, size_t n, comet_model_gms_vrow *rows, int cap)
{
    int k = 0;
    if (!hw || (!recs && n) || (!rows && cap > 0))
        return -EINVAL;
    for (size_t i = 0; i < n && k < cap; i++) {
        const json_t *r = recs[i];
        const char *kind = json_string_value(json_object_get(r, "kind")),
                   *op = json_string_value(json_object_get(r, "op"));
        if (!kind || !op || strcmp(kind, "kernel") || strcmp(op, "gms"))
            continue;
        const json_t *sh = json_object_get(r, "shape"), *pa = json_object_get(r, "params");
        comet_model_gms_vrow *v = &rows[k];
        memset(v, 0, sizeof *v);
        const char *w = json_string_value(json_object_get(r, "workload"));
        snprintf(v->workload, sizeof v->workload, "%s", w ? w : "input");
        v->skew = jnum(sh, "skew");
        /* the generated inputs are square (rows in = rows out) */
        v->input.rows_in = v->input.rows_out = jnum(sh, "rows");
        v->input.K = jnum(sh, "K");
        v->input.N = jnum(sh, "N");
        v->input.pairs = jnum(sh, "pairs");
        v->input.segments = jnum(sh, "nonempty");
        v->input.max_seg = jnum(sh, "max_seg");
        const char *dfn = json_string_value(json_object_get(r, "dataflow"));
        if (!dfn || comet_model_gms_dataflow_parse(dfn, &v->config.dataflow) != 0)
            continue;
        v->config.tile_m = jnum(pa, "tile_m");
        double tiles = jnum(pa, "tiles");
        v->config.tiles = isfinite(tiles) ? tiles : 0;
        v->config.threads = (int)jnum(r, "threads");
        v->measured_s = jnum(json_object_get(r, "stats"), "median_s");
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
            }
    }
    return k;
}

void comet_model_gms_summary(const comet_model_gms_vrow *rows, int n,
    const comet_model_gms_vinput *in, int ninputs, comet_model_gms_vsum *out)
{
    memset(out, 0, sizeof *out);
    out->records = n;
    out->median_rel_err = out->p90_rel_err = NAN;
    double *e = n > 0 ? malloc((size_t)n * sizeof *e) : NULL;
    if (e) {
        for (int i = 0; i < n; i++)
            e[i] = rows[i].rel_err;
        out->median_rel_err = comet_model_quantile(e, n, 0.5);
        out->p90_rel_err = comet_model_quantile(e, n, 0.9);
        free(e);
    }
    out->inputs = ninputs;
    for (int k = 0; k < ninputs; k++) {
        out->within_5pct += in[k].chosen_s <= 1.05 * in[k].best_s;
        out->configs += in[k].configs;
        for (int d = 0; d < 4; d++)
            if (in[k].df_best_s[d] > 0)
                out->worst_loss[d] = fmax(out->worst_loss[d], in[k].df_best_s[d] / in[k].best_s);
    }
}
