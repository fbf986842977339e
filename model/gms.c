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

/* Row tiles over all threads and segments: the exact count when given,
 * else each thread's part of each segment (its owned destinations) ends in
 * a tile half full on average (at least one per segment, at most one per
 * pair). */
static double tiles_est(const comet_model_gms *g, const comet_model_gms_config *c)
{
    if (c->tiles > 0)
        return c->tiles;
    double parts = fmin(g->segments * c->threads, g->pairs);
    double t = g->pairs / c->tile_m + parts / 2;
    return fmin(fmax(t, g->segments), g->pairs);
}

/* The highest GEMM efficiency the description's grids hold, at least 1: a
 * clock measured low (a loaded host while calibrating) leaves measured
 * efficiencies above 1, and the bound at the nominal peak would then sit
 * above every configuration's cost and hide their order. */
static double eff_ceiling(const comet_model_hw *hw)
{
    double e = 1;
    const comet_model_grid *gr[2] = { &hw->grid, &hw->fused_grid };
    for (int k = 0; k < 2; k++)
        if (gr[k]->values)
            for (size_t i = 0; i < (size_t)gr[k]->nt * gr[k]->nm * gr[k]->nn * gr[k]->nk; i++)
                e = fmax(e, gr[k]->values[i]);
    return e;
}

/* The micro-kernel's steady-state efficiency at N x K on one thread: the
 * highest the fused GEMM grid (the sgemm grid without one) measured along M
 * at this N and K. The gms main loop is that micro-kernel with the weights
 * packed once and each tile's rows hot, over thousands of row blocks: no
 * point of the grid amortizes its packing and start-up better than that, and
 * others' load only ever lowers a measured efficiency, so the best point
 * along M is the least disturbed measurement of the rate. (The grid at
 * M = pairs per thread alone, one point, read 0.39 on a profile whose
 * neighbouring M read 0.71, and the model then ran 1.9x slow.) */
static double steady_eff(const comet_model_hw *hw, double N, double K)
{
    const comet_model_grid *gr = hw->fused_grid.values ? &hw->fused_grid : &hw->grid;
    double e = 0;
    for (int i = 0; gr->values && i < gr->nm; i++)
        e = fmax(e, comet_model_fused_gemm_eff(hw, gr->M[i], N, K, 1));
    return e > 0 ? e : comet_model_fused_gemm_eff(hw, 1e6, N, K, 1);
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

    /* 3. the main loop, each thread over the pairs whose destination rows
     * it owns (P/T of them: rows dealt in blocks round-robin) and all N
     * columns: the GEMM on blocks of m rows (dataflow 1: a thread's part of
     * a whole segment), every pair's A row read once (gathered, or straight
     * from in), the segment's packed weights streamed per block, the
     * product written or scattered hot */
    double parts = fmin(S * T, P), m = df == 1 ? P / parts : P / tiles;
    /* each thread runs its own single-threaded micro-kernel calls on its
     * rows, with the weights packed once and no fork per call: the steady
     * state of one thread (steady_eff), less the lanes short blocks of m
     * rows waste. (The grid at M = m itself would charge every block a
     * whole kernel call: packing, fork.) */
    double eff = steady_eff(hw, N, K) / comet_model_micro_tile_factor(hw, m);
    double comp = 2 * P * K * N / (hw->peak_flops * T * eff);
    double a_bytes = G, a_bw = comet_model_cpu_level_bw(hw, gather_sep ? G : IN, T);
    double calls = df == 1 ? parts : tiles;
    double b_bytes = calls * K * N * f, b_bw = comet_model_cpu_level_bw(hw, K * N * f, T);
    double o_bytes = scatter_sep ? TP : 2 * TP;
    double o_bw = comet_model_cpu_level_bw(hw, scatter_sep ? TP : OUT, T);
    /* Within a tile the kernel runs its steps one after the other: a fused
     * gather copies the tile's rows, then the GEMM, then a fused scatter adds
     * the tile into out. Streams the GEMM itself reads or writes (gathered A,
     * the weights, the product) overlap its compute; the fused gather and
     * scatter, separate loops between GEMM calls, do not. */
    double a_t = a_bytes / a_bw, b_t = b_bytes / b_bw, o_t = o_bytes / o_bw;
    /* A fused tile's buffers (its m gathered rows when the gather is fused,
     * its m x N product when the scatter is) and the segment's packed
     * weights stay in the core's first-level cache from the fused gather
     * through the GEMM to the fused scatter when they fit it; a larger tile
     * spills them to the local buffer (L2), so the fused gather's writes into
     * the A buffer and the fused scatter's reads of the product, steps
     * between GEMM calls, move at its bandwidth. (Measured, 1 thread, fused,
     * 5 runs x 9 inputs: tile 48 (40 KB with the weights) fastest in 41 of
     * 45, tile 128 (80 KB) 1-16% slower, on a 48 KB L1d.) The rows are a
     * full tile's (tile_m: the buffers' size), unless no thread's part of the
     * largest segment fills one, not the mean over the short last tiles too
     * (at tile 128 spconv skew 1 averages 101 rows a tile at 2 threads); an
     * operand the GEMM streams from or to a separate pass (the gathered
     * matrix, the products) holds one micro-tile's rows at a time. (Separate
     * gather, fused scatter: tile 128, 32 KB of products + 16 KB weights + 3
     * KB of A rows, measured 2-5% slower than tile 48 at 1 thread in every
     * input of a quick run, 6-15% at 2 threads on spconv skew 1.) */
    double spill = 0;
    const double full = g->max_seg > 0 ? fmin(c->tile_m, fmax(m, g->max_seg / T)) : m,
                 mr = hw->fused_micro_rows > 0 ? fmin(hw->fused_micro_rows, full) : 0;
    const double tile_ws
        = ((gather_sep ? mr : full) * K + (scatter_sep ? mr : full) * N + K * N) * f;
    if (df != 1 && hw->l1_bytes > 0 && tile_ws > hw->l1_bytes) {
        const double l2bw = comet_model_cpu_level_bw(hw, hw->l1_bytes, T);
        spill = (gather_sep ? 0 : G) / l2bw + (scatter_sep ? 0 : TP) / l2bw;
        bytes += (gather_sep ? 0 : G) + (scatter_sep ? 0 : TP);
    }
    double main = fmax(comp, (gather_sep ? a_t : 0) + b_t + (scatter_sep ? o_t : 0))
        + (gather_sep ? 0 : a_t) + (scatter_sep ? 0 : o_t) + spill;
    bytes += a_bytes + b_bytes + o_bytes;

    /* 4. a separate scatter: the product read back, destination rows read
     * and written, in pair order per thread */
    double scatter = 0;
    if (scatter_sep) {
        scatter = TP / comet_model_cpu_level_bw(hw, TP, T)
            + 2 * TP / comet_model_cpu_level_bw(hw, OUT, T);
        bytes += 3 * TP;
    }

    /* the bound: the MACs at peak (at the fastest rate the profile measured,
     * if that is above its peak), or the compulsory traffic (weights, the
     * rows used of in, the rows of out read and written once) */
    double comp_peak = 2 * P * K * N / (hw->peak_flops * eff_ceiling(hw) * T);
    double once = W + fmin(P, g->rows_in) * K * f + 2 * fmin(P, g->rows_out) * N * f;
    double bound = fmax(comp_peak, once / comet_model_cpu_level_bw(hw, once, T));
    /* every phase runs on the T cores side by side: each at the share of a
     * core they deliver running together (comet_model_gms_core_share) */
    const double share = comet_model_gms_core_share(hw, T);
    pack /= share, gather /= share, main /= share, scatter /= share, bound /= share;
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
