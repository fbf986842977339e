/* comet validate: predict this machine's measured kernel records from its
 * profile and report the model's error. */
#include "cli.h"

#include "comet_bench.h"
#include "comet_calibrate.h"
#include "comet_model_validate.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet validate [--profile PROFILE] [--results PATH]... [--foreign-ok]\n"
        "                      [--explain] [--distributed] [--system] [--json]\n"
        "\n"
        "Predicts every measured compound-kernel record (fused and unfused, local and\n"
        "distributed) with the mapping the kernel actually ran (row-block tiles for fused,\n"
        "BLAS + passes for unfused, N split over ranks) on the calibrated profile, and\n"
        "reports the relative error per op and variant (median, p90) and whether the\n"
        "predicted winner (fused vs unfused) is the measured one for each shape.\n"
        "\n"
        "options:\n"
        "  --profile FILE   machine profile (default comet-out/profile.json)\n"
        "  --results PATH   results file or directory (default comet-out; repeatable)\n"
        "  --foreign-ok     use results measured on another machine (refused by default:\n"
        "                   the message names the file and what differs)\n"
        "  --explain        before the summary, every record's prediction term by term\n"
        "                   (as predict --explain) under a line with its measured median\n"
        "  --distributed    the scale-out validation only: every distributed-kernel record\n"
        "                   predicted over the link it ran on (local compute + its\n"
        "                   collectives over that link's fits), per record and per link;\n"
        "                   writes scale-out.json and scale-out.csv (docs/FORMATS.md)\n"
        "  --system         the system model only: every whole-step record of `comet bench\n"
        "                   llm` predicted with its own configuration (this profile as\n"
        "                   each rank, the fits of the record's link between ranks);\n"
        "                   error per record and per breakdown term\n"
        "  --json           JSON on stdout\n"
        "  -q, -v, -h       quiet, verbose, this help\n");
}

/* attention's heads and mask, and the fused tiles the record ran */
/* Gather-GEMM-scatter records: the model's error, its choice per input
 * against every configuration measured, the guided search's share of the
 * measurements, best dataflow vs unfused, a fixed dataflow's worst loss. */
static json_t *gms_json(const comet_model_gms_vrow *r, int n)
{
    comet_model_gms_vinput *in = calloc((size_t)n, sizeof *in);
    if (!in)
        return json_null();
    int ni = comet_model_gms_inputs(r, n, in, n);
    comet_model_gms_vsum vs;
    comet_model_gms_summary(r, n, in, ni, &vs);
    json_t *ja = json_array();
    for (int k = 0; k < ni; k++) {
        const comet_model_gms_vinput *x = &in[k];
        json_array_append_new(ja,
            json_pack("{s:s,s:f,s:i,s:i,s:s,s:f,s:f,s:s,s:f,s:f,s:f,s:f}", "workload", x->workload,
                "skew", x->skew, "threads", x->threads, "configs", x->configs, "best_dataflow",
                comet_model_gms_dataflow_name(x->best_df), "best_tile_m", x->best_tile, "best_s",
                x->best_s, "chosen_dataflow", comet_model_gms_dataflow_name(x->chosen_df),
                "chosen_tile_m", x->chosen_tile, "chosen_s", x->chosen_s, "unfused_s",
                x->df_best_s[0], "best_vs_unfused",
                x->df_best_s[0] > 0 ? x->df_best_s[0] / x->best_s : 0.0));
    }
    /* every record against its prediction: where the model's order of the
     * configurations departs from the measured one */
    json_t *jr = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(jr,
            json_pack("{s:s,s:f,s:i,s:s,s:f,s:f,s:f,s:f,s:f}", "workload", r[i].workload, "skew",
                r[i].skew, "threads", r[i].config.threads, "dataflow",
                comet_model_gms_dataflow_name(r[i].config.dataflow), "tile_m", r[i].config.tile_m,
                "tiles", r[i].config.tiles, "measured_s", r[i].measured_s, "predicted_s",
                r[i].predicted_s, "rel_err", r[i].rel_err));
    json_t *fw = json_object();
    for (int d = 0; d < 4; d++)
        if (vs.worst_loss[d] > 0)
            json_object_set_new(
                fw, comet_model_gms_dataflow_name(d + 1), json_real(vs.worst_loss[d]));
    json_t *j
        = json_pack("{s:i,s:f,s:f,s:i,s:i,s:i,s:i,s:i,s:o,s:o,s:o}", "records", n, "median_rel_err",
            vs.median_rel_err, "p90_rel_err", vs.p90_rel_err, "inputs", ni, "choice_within_5pct",
            vs.within_5pct, "choice_within_noise", vs.within_noise, "configs_measured", vs.configs,
            "configs_guided", ni, "fixed_worst_loss", fw, "per_input", ja, "rows", jr);
    free(in);
    return j;
}

static void gms_print(const json_t *j)
{
    const double ni = json_number_value(json_object_get(j, "inputs")),
                 cm = json_number_value(json_object_get(j, "configs_measured"));
    printf("  gms: %.0f records, median relative error %.1f%%, p90 %.1f%%\n",
        json_number_value(json_object_get(j, "records")),
        100 * json_number_value(json_object_get(j, "median_rel_err")),
        100 * json_number_value(json_object_get(j, "p90_rel_err")));
    printf("  gms: the model's choice is within 5%% of the measured best in %.0f of %.0f inputs "
           "(its CI reaches the best's in %.0f); measuring only its choice is %.0f of %.0f "
           "configurations (%.1f%%)\n",
        json_number_value(json_object_get(j, "choice_within_5pct")), ni,
        json_number_value(json_object_get(j, "choice_within_noise")), ni, cm,
        cm > 0 ? 100 * ni / cm : 0.0);
    size_t i;
    json_t *x;
    printf("  gms: per input, the measured best against unfused (dataflow 1) and the model's "
           "choice:\n");
    json_array_foreach(json_object_get(j, "per_input"), i, x)
    {
        printf("    %-7s skew %.0f T%d: best %-13s tile %3.0f %.3f ms, %.2fx unfused; model %s "
               "tile %.0f (%.2fx the best)\n",
            json_string_value(json_object_get(x, "workload")),
            json_number_value(json_object_get(x, "skew")),
            (int)json_integer_value(json_object_get(x, "threads")),
            json_string_value(json_object_get(x, "best_dataflow")),
            json_number_value(json_object_get(x, "best_tile_m")),
            1e3 * json_number_value(json_object_get(x, "best_s")),
            json_number_value(json_object_get(x, "best_vs_unfused")),
            json_string_value(json_object_get(x, "chosen_dataflow")),
            json_number_value(json_object_get(x, "chosen_tile_m")),
            json_number_value(json_object_get(x, "chosen_s"))
                / json_number_value(json_object_get(x, "best_s")));
    }
    printf("  gms: a fixed dataflow's worst loss against the per-input best:");
    const char *k;
    json_object_foreach((json_t *)json_object_get(j, "fixed_worst_loss"), k, x)
        printf(" %s %.2fx", k, json_number_value(x));
    printf("\n");
}

static void row_extras(json_t *o, const comet_model_vrow *r)
{
    if (r->heads > 0) {
        json_object_set_new(o, "heads", json_real(r->heads));
        json_object_set_new(o, "causal", json_boolean(r->causal));
    }
    if (r->tile_m > 0)
        json_object_set_new(o, "tile_m", json_real(r->tile_m));
    if (r->tile_k > 0)
        json_object_set_new(o, "tile_k", json_real(r->tile_k));
    json_object_set_new(o, "swept", json_boolean(r->swept));
    if (r->launches > 1)
        json_object_set_new(o, "launches", json_integer(r->launches));
    if (r->link[0])
        json_object_set_new(o, "link", json_string(r->link));
    if (r->c2c_hi_ns > 0)
        json_object_set_new(o, "c2c_ns", json_pack("[f,f]", r->c2c_lo_ns, r->c2c_hi_ns));
}

static json_t *num_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* each record's prediction term by term, headed by what was measured */
static void explain_records(const comet_model_hw *hw, const comet_results_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        comet_model_hw local;
        comet_model_problem pb;
        comet_model_mapping mp;
        const double med = recs[i].stats.median_s;
        if (!(med > 0) || comet_model_record_setup(hw, &recs[i], &local, &pb, &mp) != 0)
            continue;
        const char *sh = recs[i].shape.text, *pa = recs[i].params.text;
        printf("== %s %s %s threads=%d ranks=%d params=%s: measured median %.4g ms\n",
            comet_model_op_name(pb.op), mp.fused ? "fused" : "unfused", sh ? sh : "?", local.cores,
            local.clusters, pa ? pa : "{}", med * 1e3);
        /* a distributed record: what validate predicts it with, over its
         * link with its cores' placement */
        char link[64];
        comet_model_record_link(hw, recs[i].link, recs[i].c2c_ns, recs[i].nc2c, link, sizeof link);
        if (recs[i].kind != COMET_RESULTS_DIST_KERNEL || local.clusters <= 1
            || comet_model_dist_explain(hw, &pb, !strcmp(recs[i].variant, "fused"), local.cores,
                   local.clusters, *recs[i].link ? link : "", stdout)
                != 0)
            comet_model_explain(&local, &pb, &mp, stdout);
        printf("\n");
    }
}

int comet_cmd_validate(int argc, char **argv)
{
    static const struct option longopts[] = { { "profile", required_argument, NULL, 0x2001 },
        { "results", required_argument, NULL, 0x2002 }, { "foreign-ok", no_argument, NULL, 0x2003 },
        { "explain", no_argument, NULL, 0x2004 }, { "distributed", no_argument, NULL, 0x2005 },
        { "system", no_argument, NULL, 0x2006 }, COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    const char *profile = NULL, *paths[64];
    size_t np = 0;
    int c, rc = COMET_EXIT_OK, foreign_ok = 0, explain = 0, dist = 0, sysv = 0;
    char err[COMET_ERRLEN], defprof[4096];
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case 0x2001:
            profile = optarg;
            break;
        case 0x2002:
            if (np < 64)
                paths[np++] = optarg;
            break;
        case 0x2003:
            foreign_ok = 1;
            break;
        case 0x2004:
            explain = 1;
            break;
        case 0x2005:
            dist = 1;
            break;
        case 0x2006:
            sysv = 1;
            break;
        default:
            return comet_cli_bad_option("validate", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("validate", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    const char *dir = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    if (!profile) {
        snprintf(defprof, sizeof defprof, "%s/profile.json", dir);
        profile = defprof;
    }
    if (!np)
        paths[np++] = dir;
    comet_model_hw hw;
    if (comet_model_hw_load(profile, &hw, err, sizeof err) != 0) {
        comet_cli_error("validate", "%s", err);
        return COMET_EXIT_USAGE;
    }
    comet_results_set set = { 0 };
    json_t *here = NULL;
    /* results of another machine are refused unless --foreign-ok */
    if (comet_bench_this_machine(&here, err, sizeof err) != 0) {
        comet_cli_error("validate", "%s", err);
        comet_model_hw_free(&hw);
        return COMET_EXIT_FAIL;
    }
    comet_results_load_opts lo = { here, foreign_ok };
    int lrc = comet_calibrate_load_results_opts(paths, np, &lo, &set, NULL, NULL, err, sizeof err);
    json_decref(here);
    if (lrc != 0) {
        comet_cli_error("validate", "%s", err);
        comet_model_hw_free(&hw);
        return COMET_EXIT_USAGE;
    }
    const comet_results_record *recs = set.recs;
    const size_t n = set.n;
    if (err[0])
        comet_util_info("comet: validate: warning: %s", err);
    if (sysv) {
        rc = comet_cli_validate_system(&hw, profile, recs, n, g.json);
        comet_results_set_free(&set);
        comet_model_hw_free(&hw);
        return rc;
    }
    if (dist) {
        rc = comet_cli_validate_dist(&hw, profile, recs, n, dir, g.json);
        comet_results_set_free(&set);
        comet_model_hw_free(&hw);
        return rc;
    }
    comet_model_vrow *rows = calloc(n + 1, sizeof *rows);
    int nr = rows ? comet_model_validate_records(&hw, recs, n, rows, n) : -1;
    comet_model_gms_vrow *grows = calloc(n + 1, sizeof *grows);
    int ngr = grows ? comet_model_gms_validate(&hw, recs, n, grows, (int)n) : -1;
    if (nr <= 0 && ngr <= 0) {
        comet_cli_error("validate", "no compound-kernel records to validate in the results");
        rc = COMET_EXIT_FAIL;
        free(grows);
        goto out;
    }
    if (nr < 0)
        nr = 0;
    json_t *jgms = ngr > 0 ? gms_json(grows, ngr) : json_null();
    free(grows);
    if (explain && !g.json)
        explain_records(&hw, recs, n);
    /* rows, and the fused/unfused pairs with their winners (model/model.c) */
    json_t *jrows = json_array(), *jw = json_array();
    for (int i = 0; i < nr; i++) {
        json_t *r = json_pack("{s:s,s:s,s:f,s:f,s:f,s:i,s:i,s:f,s:f,s:f,s:f,s:f}", "op", rows[i].op,
            "variant", rows[i].variant, "M", rows[i].M, "N", rows[i].N, "K", rows[i].K, "threads",
            rows[i].threads, "ranks", rows[i].ranks, "measured_s", rows[i].measured_s, "ci_lo_s",
            rows[i].ci_lo_s, "ci_hi_s", rows[i].ci_hi_s, "predicted_s", rows[i].predicted_s,
            "rel_err", rows[i].rel_err);
        row_extras(r, &rows[i]);
        json_array_append_new(jrows, r);
    }
    comet_model_vpair *vp = calloc((size_t)nr + 1, sizeof *vp);
    int npairs = vp ? comet_model_validate_pairs(rows, nr, vp, nr) : 0;
    for (int k = 0; k < npairs; k++) {
        const comet_model_vrow *f = &rows[vp[k].fused];
        json_t *w = json_pack("{s:s,s:f,s:f,s:f,s:i,s:i,s:f,s:f,s:b,s:b}", "op", f->op, "M", f->M,
            "N", f->N, "K", f->K, "threads", f->threads, "ranks", f->ranks, "measured_speedup",
            vp[k].measured_speedup, "predicted_speedup", vp[k].predicted_speedup,
            "measured_winner_clear", vp[k].decided, "winner_agrees", vp[k].agrees);
        row_extras(w, f);
        json_array_append_new(jw, w);
    }
    /* per fused case: the three measured speedups (fusion effect, vs BLAS,
     * vs oneDNN) beside the model's fused-vs-unfused speedup */
    comet_reports_speedup *sp = calloc(n + 1, sizeof *sp);
    size_t nsp = sp ? comet_reports_speedups(recs, n, sp, n) : 0;
    json_t *jsp = json_array();
    for (size_t q = 0; q < nsp; q++) {
        double pred = NAN;
        for (int k = 0; k < npairs; k++) {
            const comet_model_vrow *f = &rows[vp[k].fused];
            if (!strcmp(f->op, sp[q].op) && f->threads == sp[q].threads && f->ranks <= 1
                && f->measured_s == sp[q].fused_s) {
                pred = vp[k].predicted_speedup;
                break;
            }
        }
        json_t *o = json_pack("{s:s,s:s,s:i,s:f}", "op", sp[q].op, "shape", sp[q].shape, "threads",
            sp[q].threads, "fused_s", sp[q].fused_s);
        static const char *const key[COMET_REPORTS_NBASELINES]
            = { "fusion_effect", "vs_blas", "vs_onednn" };
        for (int b = 0; b < COMET_REPORTS_NBASELINES; b++) {
            const comet_reports_ratio *r = &sp[q].vs[b];
            json_object_set_new(o, key[b],
                r->base_s > 0 ? json_pack("{s:f,s:f,s:f,s:f}", "base_s", r->base_s, "speedup",
                    r->speedup, "ci_lo", r->lo, "ci_hi", r->hi)
                              : json_null());
        }
        json_object_set_new(o, "predicted_speedup", isfinite(pred) ? json_real(pred) : json_null());
        json_array_append_new(jsp, o);
    }
    free(sp);
    free(vp);
    comet_model_vsum vs;
    comet_model_validate_summary(rows, nr, &vs);
    const int pairs = vs.pairs, agree = vs.winner_agrees;
    const double med = vs.median_rel_err, p90 = vs.p90_rel_err;
    /* per op and variant: the same statistics as the report (comet_model_validate_groups) */
    comet_model_vgroup vg[32];
    const int ng = comet_model_validate_groups(rows, nr, vg, 32);
    json_t *groups = json_array();
    for (int k = 0; k < ng; k++)
        json_array_append_new(groups,
            json_pack("{s:s,s:s,s:i,s:f,s:f,s:f}", "op", vg[k].op, "variant", vg[k].variant, "n",
                vg[k].n, "median_rel_err", vg[k].median_rel_err, "p90_rel_err", vg[k].p90_rel_err,
                "bias", vg[k].bias));
    json_t *j = json_pack("{s:s,s:s,s:i,s:f,s:f,s:i,s:i,s:f,s:i,s:i,s:f,s:o,s:o,s:o}", "schema",
        "comet.validate.v5", "profile", profile, "records", nr, "median_rel_err", med,
        "p90_rel_err", p90, "pairs", pairs, "winner_agrees", agree, "winner_agreement",
        pairs ? (double)agree / pairs : 0.0, "clear_pairs", vs.decided, "clear_winner_agrees",
        vs.decided_agrees, "clear_winner_agreement",
        vs.decided ? (double)vs.decided_agrees / vs.decided : 0.0, "groups", groups, "winners", jw,
        "rows", jrows);
    json_object_set_new(j, "speedups", jsp);
    json_object_set_new(j, "busy",
        json_pack("{s:f,s:i,s:o,s:o}", "threshold", COMET_RESULTS_BUSY_MAX, "records", vs.busy_rows,
            "quiet_median_rel_err",
            isfinite(vs.quiet_median_rel_err) ? json_real(vs.quiet_median_rel_err) : json_null(),
            "quiet_p90_rel_err",
            isfinite(vs.quiet_p90_rel_err) ? json_real(vs.quiet_p90_rel_err) : json_null()));
    json_object_set_new(j, "core_to_core",
        json_pack("{s:o,s:i,s:i,s:o,s:o,s:o,s:o}", "floor_ns", num_or_null(vs.c2c_floor_ns),
            "records", vs.c2c_rows, "across_records", vs.across_rows, "across_median_rel_err",
            num_or_null(vs.across_median_rel_err), "across_p90_rel_err",
            num_or_null(vs.across_p90_rel_err), "near_median_rel_err",
            num_or_null(vs.near_median_rel_err), "near_p90_rel_err",
            num_or_null(vs.near_p90_rel_err)));
    json_object_set(j, "gms", jgms);
    /* per shape: the fused kernel at its default tiles against the unfused */
    json_object_set_new(j, "shapes",
        json_pack("{s:i,s:i,s:i,s:i,s:f}", "pairs", vs.shapes, "winner_agrees", vs.shape_agrees,
            "clear_pairs", vs.shape_decided, "clear_winner_agrees", vs.shape_decided_agrees,
            "clear_winner_agreement",
            vs.shape_decided ? (double)vs.shape_decided_agrees / vs.shape_decided : 0.0));
    if (g.json) {
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        printf("validate: %d records, median relative error %.1f%%, p90 %.1f%%\n", nr, 100 * med,
            100 * p90);
        int multi = 0, merged = 0;
        for (int i = 0; i < nr; i++)
            if (rows[i].launches > 1) {
                multi++;
                merged += rows[i].launches;
            }
        if (multi)
            printf("  %d of them measured in several runs or MPI launches (%d records): each at "
                   "the median of its launches' medians\n",
                multi, merged);
        if (vs.busy_rows > 0)
            printf("  %d of the %d records sampled while other tenants kept the machine over "
                   "%.0f%% busy (their medians are the neighbours' as much as this machine's); "
                   "over the other %d: median %.1f%%, p90 %.1f%%\n",
                vs.busy_rows, nr, 100 * COMET_RESULTS_BUSY_MAX, nr - vs.busy_rows,
                100 * vs.quiet_median_rel_err, 100 * vs.quiet_p90_rel_err);
        if (vs.across_rows > 0) {
            printf("  %d of the %d multi-thread and multi-rank records ran in some pass with "
                   "their threads or ranks two caches apart (core-to-core above twice the %.0f "
                   "ns floor, c2c_ns): median "
                   "%.1f%%, p90 %.1f%%",
                vs.across_rows, vs.c2c_rows, vs.c2c_floor_ns, 100 * vs.across_median_rel_err,
                100 * vs.across_p90_rel_err);
            if (vs.c2c_rows > vs.across_rows) /* no other rows: no figures to print */
                printf("; the other %d: median %.1f%%, p90 %.1f%%", vs.c2c_rows - vs.across_rows,
                    100 * vs.near_median_rel_err, 100 * vs.near_p90_rel_err);
            printf("\n");
        }
        size_t i;
        json_t *x;
        json_array_foreach(groups, i, x) printf("  %-15s %-8s n=%-3d median %5.1f%%  p90 %5.1f%%\n",
            json_string_value(json_object_get(x, "op")),
            json_string_value(json_object_get(x, "variant")),
            (int)json_integer_value(json_object_get(x, "n")),
            100 * json_number_value(json_object_get(x, "median_rel_err")),
            100 * json_number_value(json_object_get(x, "p90_rel_err")));
        printf("  winner (fused at its default tiles vs unfused) predicted right in %d of %d "
               "shapes with a clear measured winner (95%% CIs apart); %d of %d shapes in all\n",
            vs.shape_decided_agrees, vs.shape_decided, vs.shape_agrees, vs.shapes);
        printf("  with every tile-sweep point as a pair: %d of %d clear pairs; %d of %d in all\n",
            vs.decided_agrees, vs.decided, agree, pairs);
        if (json_array_size(jsp))
            printf("  measured speedups of fused (baseline / fused medians; n/a: not measured) "
                   "and the model's fused vs unfused:\n"
                   "  %-15s %-26s %3s %14s %9s %10s %10s\n",
                "op", "shape", "T", "fusion effect", "vs BLAS", "vs oneDNN", "predicted");
        json_array_foreach(jsp, i, x)
        {
            char c[4][24];
            const char *key[4] = { "fusion_effect", "vs_blas", "vs_onednn", NULL };
            for (int b = 0; b < 3; b++) {
                const json_t *r = json_object_get(x, key[b]);
                if (json_is_object(r))
                    snprintf(c[b], sizeof c[b], "%.2fx",
                        json_number_value(json_object_get(r, "speedup")));
                else
                    snprintf(c[b], sizeof c[b], "n/a");
            }
            const json_t *pr = json_object_get(x, "predicted_speedup");
            if (json_is_number(pr))
                snprintf(c[3], sizeof c[3], "%.2fx", json_number_value(pr));
            else
                snprintf(c[3], sizeof c[3], "n/a");
            printf("  %-15s %-26s %3d %14s %9s %10s %10s\n",
                json_string_value(json_object_get(x, "op")),
                json_string_value(json_object_get(x, "shape")),
                (int)json_integer_value(json_object_get(x, "threads")), c[0], c[1], c[2], c[3]);
        }
    }
    if (!g.json && json_is_object(jgms))
        gms_print(jgms);
    json_decref(jgms);
    if (g.out || 1) {
        char path[4200];
        snprintf(path, sizeof path, "%s/validate.json", dir);
        char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        /* a full or read-only disk is an error, not a silent success */
        if (!text)
            snprintf(err, sizeof err, "validate.json: out of memory");
        if (!text || comet_util_mkdir_p(dir, err, sizeof err) != 0
            || comet_util_write_atomic(path, text, strlen(text), err, sizeof err) != 0) {
            comet_cli_error("validate", "%s", err);
            rc = COMET_EXIT_FAIL;
        }
        free(text);
    }
    json_decref(j);
out:
    free(rows);
    comet_results_set_free(&set);
    comet_model_hw_free(&hw);
    return rc;
}
