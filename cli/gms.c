/* comet predict|explore --op gms: the gather-GEMM-scatter model on a CPU
 * description, for an input given by its statistics (--shape) or as a file
 * (--input, the kernels' text format; exact tile counts from its segments). */
#include "cli.h"

#include "comet_kernels.h"
#include "comet_model.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tile_m values searched (the quick bench's and the full bench's, merged) */
static const double gms_tiles[] = { 16, 32, 48, 64, 96, 128, 256 };
#define GMS_NTILES ((int)(sizeof gms_tiles / sizeof gms_tiles[0]))

/* An input file and its output width: the exact tiles of a tile_m at a
 * thread count (the kernel's own count, comet_kernels_gms_tiles). */
typedef struct seg_sizes {
    const comet_kernels_gms_problem *pr;
    size_t N;
} seg_sizes;

static double tiles_of(const void *ctx, double tile_m, int threads)
{
    const seg_sizes *s = ctx;
    comet_kernels_gms_params p = { .threads = threads, .tile_m = (size_t)tile_m };
    size_t t = 0;
    return comet_kernels_gms_tiles(s->pr, s->N, &p, &t) == 0 ? (double)t : 0;
}

/* "rows=4096,pairs=32768,segments=16,K=64,N=64" (rows_in / rows_out apart,
 * max_seg optional). Unknown keys and bad numbers are errors naming them. */
static int parse_stats(
    const char *shape, comet_model_gms *g, int widths_only, char *err, size_t errlen)
{
    char buf[512], *save = NULL;
    memset(g, 0, sizeof *g);
    if (strlen(shape) >= sizeof buf)
        return comet_util_seterr(err, errlen, -EINVAL, "--shape: too long");
    snprintf(buf, sizeof buf, "%s", shape);
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '='), *end = NULL;
        if (!eq)
            return comet_util_seterr(err, errlen, -EINVAL, "--shape: '%s' is not KEY=VALUE", kv);
        *eq = 0;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !isfinite(v) || v < 0 || v != floor(v) || v > 1e15)
            return comet_util_seterr(
                err, errlen, -EINVAL, "--shape: %s=%s is not a whole number >= 0", kv, eq + 1);
        if (!strcmp(kv, "rows"))
            g->rows_in = g->rows_out = v;
        else if (!strcmp(kv, "rows_in"))
            g->rows_in = v;
        else if (!strcmp(kv, "rows_out"))
            g->rows_out = v;
        else if (!strcmp(kv, "pairs"))
            g->pairs = v;
        else if (!strcmp(kv, "segments"))
            g->segments = v;
        else if (!strcmp(kv, "K"))
            g->K = v;
        else if (!strcmp(kv, "N"))
            g->N = v;
        else if (!strcmp(kv, "max_seg"))
            g->max_seg = v;
        else
            return comet_util_seterr(err, errlen, -EINVAL,
                "--shape: unknown key '%s' for gms (rows, rows_in, rows_out, pairs, segments, K, "
                "N, max_seg)",
                kv);
    }
    if (widths_only) {
        if (!(g->K >= 1 && g->N >= 1) || g->pairs || g->segments || g->rows_in || g->rows_out)
            return comet_util_seterr(err, errlen, -EINVAL,
                "--shape: with --input give the widths only, K=..,N=.. (>= 1); the file holds "
                "the rows, pairs and segments");
        return 0;
    }
    if (!(g->rows_in >= 1 && g->rows_out >= 1 && g->K >= 1 && g->N >= 1 && g->segments >= 1
            && g->pairs >= 1))
        return comet_util_seterr(err, errlen, -EINVAL,
            "--shape: gms needs rows (or rows_in and rows_out), pairs, segments, K and N, all "
            ">= 1");
    if (g->segments > g->pairs)
        return comet_util_seterr(err, errlen, -EINVAL,
            "--shape: segments=%.0f: more non-empty segments than pairs (%.0f)", g->segments,
            g->pairs);
    return 0;
}

static json_t *cost_json(const comet_model_gms_config *c, const comet_model_gms_cost *r)
{
    return json_pack("{s:s,s:f,s:i,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:b}", "dataflow",
        comet_model_gms_dataflow_name(c->dataflow), "tile_m", c->tile_m, "threads", c->threads,
        "tiles", c->tiles, "seconds", r->seconds, "bound_s", r->bound_s, "pack_s", r->pack_s,
        "gather_s", r->gather_s, "main_s", r->main_s, "scatter_s", r->scatter_s, "bound_raised",
        r->bound_raised);
}

/* -v: one line per configuration searched */
static void list_config(void *arg, const comet_model_gms_config *c, const comet_model_gms_cost *r)
{
    (void)arg;
    fprintf(stderr,
        "  %-13s tile %4.0f T%d: %.3f ms (pack %.3f, gather %.3f, main %.3f, scatter %.3f; bound "
        "%.3f)\n",
        comet_model_gms_dataflow_name(c->dataflow), c->tile_m, c->threads, r->seconds * 1e3,
        r->pack_s * 1e3, r->gather_s * 1e3, r->main_s * 1e3, r->scatter_s * 1e3, r->bound_s * 1e3);
}

int comet_cli_gms(const char *sub, int explore, const char *hwname, const char *shape,
    const char *input, const char *mapping, const comet_cli_global *g)
{
    char err[COMET_ERRLEN];
    comet_model_gms in;
    comet_kernels_gms_problem pr;
    seg_sizes ss = { NULL, 0 };
    int rc = COMET_EXIT_OK, only = 0;
    memset(&pr, 0, sizeof pr);
    if (!hwname || !shape) {
        comet_cli_error(sub,
            "--op gms needs --hw and --shape: the input's statistics (rows=,pairs=,segments=,"
            "K=,N=), or its widths K=,N= with --input FILE");
        return COMET_EXIT_USAGE;
    }
    if (strcmp(mapping, "best") && comet_model_gms_dataflow_parse(mapping, &only) != 0) {
        comet_cli_error(sub,
            "--mapping '%s': for gms one of best, unfused, gather_fused, scatter_fused, fused",
            mapping);
        return COMET_EXIT_USAGE;
    }
    if (parse_stats(shape, &in, input != NULL, err, sizeof err) != 0) {
        comet_cli_error(sub, "%s", err);
        return COMET_EXIT_USAGE;
    }
    if (input) {
        if (comet_kernels_gms_read(input, &pr, err, sizeof err) != 0) {
            comet_cli_error(sub, "%s", err);
            return COMET_EXIT_USAGE;
        }
        comet_kernels_gms_stats st;
        comet_kernels_gms_stats_of(&pr, &st);
        in.rows_in = (double)pr.rows_in;
        in.rows_out = (double)pr.rows_out;
        in.pairs = (double)st.pairs;
        in.segments = (double)st.nonempty;
        in.max_seg = (double)st.max_seg;
        ss.pr = &pr;
        ss.N = (size_t)in.N;
        if (!(in.pairs >= 1)) {
            comet_cli_error(sub, "--input %s: no pairs", input);
            comet_kernels_gms_problem_free(&pr);
            return COMET_EXIT_USAGE;
        }
    }
    comet_model_hw hw;
    if (comet_model_hw_load(hwname, &hw, err, sizeof err) != 0) {
        comet_cli_error(sub, "%s", err);
        comet_kernels_gms_problem_free(&pr);
        return COMET_EXIT_USAGE;
    }
    if (strcmp(hw.kind, "cpu")) {
        comet_cli_error(sub,
            "--op gms: %s is a %s description; the gather-GEMM-scatter model is a CPU node's "
            "(a calibrated profile or a scaled CPU system)",
            hw.name, hw.kind);
        rc = COMET_EXIT_USAGE;
        goto out;
    }
    /* explore repeats the whole search until it has taken a measurable
     * time (the rate); -v lists every configuration of the first search */
    comet_model_gms_search sr;
    int nsearch = 0, e;
    double t0 = comet_util_now(), search_s = 0;
    do {
        e = comet_model_gms_explore(&hw, &in, gms_tiles, GMS_NTILES, hw.cores, only,
            input ? tiles_of : NULL, &ss,
            g->verbose && !g->json && nsearch == 0 ? list_config : NULL, NULL, &sr);
        if (e < 0) {
            comet_cli_error(
                sub, "--op gms: the model cannot evaluate this input (%s)", comet_util_strerror(e));
            rc = COMET_EXIT_USAGE;
            goto out;
        }
        nsearch++;
        search_s = comet_util_now() - t0;
    } while (explore && search_s < 0.05 && nsearch < 100000);
    const comet_model_gms_config *best = sr.best;
    const comet_model_gms_cost *cost = sr.cost;
    const int *have = sr.have, win = sr.win, evaluated = sr.evaluated;
    json_t *dfs = json_array();
    for (int d = 0; d < 4; d++)
        if (have[d])
            json_array_append_new(dfs, cost_json(&best[d], &cost[d]));
    json_t *j = json_pack("{s:s,s:s,s:s,s:{s:f,s:f,s:f,s:f,s:f,s:f,s:f},s:o,s:o,s:i}", "schema",
        "comet.gms.v1", "hw", hw.name, "source", input ? input : "statistics", "input", "rows_in",
        in.rows_in, "rows_out", in.rows_out, "pairs", in.pairs, "segments", in.segments, "K", in.K,
        "N", in.N, "max_seg", in.max_seg, "dataflows", dfs, "best",
        cost_json(&best[win - 1], &cost[win - 1]), "evaluated", evaluated);
    json_object_set_new(j, "search_s", json_real(search_s / nsearch));
    json_object_set_new(
        j, "configs_per_s", json_real(search_s > 0 ? (double)evaluated * nsearch / search_s : 0));
    if (g->json) {
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        printf("gms on %s: %.0f pairs over %.0f segments, K=%.0f N=%.0f, %.0f rows in, %.0f out "
               "(%s)\n",
            hw.name, in.pairs, in.segments, in.K, in.N, in.rows_in, in.rows_out,
            input ? "tiles counted from the file's segments"
                  : "tiles estimated from the statistics");
        printf("  %-14s %7s %7s %11s %11s %9s %9s %9s %9s\n", "dataflow", "tile_m", "threads",
            "predicted", "bound", "pack", "gather", "main", "scatter");
        for (int d = 0; d < 4; d++) {
            char tb[16] = "-"; /* dataflow 1 runs whole segments: no tile */
            if (d > 0)
                snprintf(tb, sizeof tb, "%.0f", best[d].tile_m);
            if (have[d])
                printf("  %-14s %7s %7d %8.3f ms %8.3f ms %6.3f ms %6.3f ms %6.3f ms %6.3f ms\n",
                    comet_model_gms_dataflow_name(d + 1), tb, best[d].threads,
                    cost[d].seconds * 1e3, cost[d].bound_s * 1e3, cost[d].pack_s * 1e3,
                    cost[d].gather_s * 1e3, cost[d].main_s * 1e3, cost[d].scatter_s * 1e3);
        }
        printf("  model's choice: %s", comet_model_gms_dataflow_name(win));
        if (win != 1)
            printf(", tile_m %.0f", best[win - 1].tile_m);
        printf(", %d thread(s)", best[win - 1].threads);
        if (have[0] && win != 1)
            printf(", %.2fx faster than unfused", cost[0].seconds / cost[win - 1].seconds);
        printf("\n");
        if (explore)
            printf("  %d configurations (dataflow x tile_m x threads) in %.1f us, %.3g per "
                   "second\n",
                evaluated, 1e6 * search_s / nsearch,
                search_s > 0 ? (double)evaluated * nsearch / search_s : 0.0);
    }
    json_decref(j);
out:
    comet_model_hw_free(&hw);
    comet_kernels_gms_problem_free(&pr);
    return rc;
}
