/* comet validate --system: every "llm" record (comet bench llm) predicted by
 * the system model with its own configuration, on this machine's profile as
 * the chip (one rank with its threads) and the profile's fits of the
 * record's link as the network; the error of the step and of each
 * breakdown term. */
#include "cli.h"

#include "comet_reports.h"

#include "comet_model.h"
#include "comet_results.h"
#include "comet_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quant(double *x, int n, double q)
{
    if (n <= 0)
        return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_d);
    const double h = (n - 1) * q;
    const int i = (int)floor(h);
    return i + 1 < n ? x[i] + (h - i) * (x[i + 1] - x[i]) : x[n - 1];
}

int comet_cli_validate_system(const comet_model_hw *hw, const char *profile,
    const comet_results_record *recs, size_t n, int json_out)
{
    enum { T_GEMM, T_ATTN, T_VEC, T_TP, T_DP, T_PP, T_BUBBLE, T_OPT, T_REC, NT };
    const char *const *term_names = comet_reports_sysv_terms;
    comet_reports_sysv_row *rows = calloc(n + 1, sizeof *rows);
    double *e = calloc(n + 1, sizeof *e), *te = calloc((n + 1) * NT, sizeof *te);
    int nr = 0, nskip = 0, nte[NT] = { 0 };
    char why[COMET_ERRLEN];
    if (!rows || !e || !te) {
        free(rows);
        free(e);
        free(te);
        comet_cli_error("validate", "out of memory");
        return COMET_EXIT_FAIL;
    }
    nr = rows && e && te
        ? comet_reports_system_validate(hw, recs, n, rows, n + 1, &nskip, why, sizeof why)
        : 0;
    if (nskip)
        comet_util_info("comet: validate: %d llm record(s) not predicted (first: %s)", nskip, why);
    for (int i = 0; i < nr; i++) {
        const comet_reports_sysv_row *v = &rows[i];
        e[i] = fabs(v->predicted_s - v->measured_s) / v->measured_s;
        /* a term's error where it is at least 10% of the measured step */
        for (int k = 0; k < NT; k++)
            if (v->measured[k] >= 0.1 * v->measured_s && v->measured[k] > 0)
                te[(size_t)k * (n + 1) + nte[k]++]
                    = (v->predicted[k] - v->measured[k]) / v->measured[k];
    }
    if (nr == 0) {
        comet_cli_error("validate",
            "--system: no llm records to validate (run `comet bench llm`)%s",
            nskip ? "; the ones found could not be predicted" : "");
        free(rows);
        free(e);
        free(te);
        return COMET_EXIT_FAIL;
    }
    /* e is not needed in record order after this */
    const double med = quant(e, nr, 0.5), p90 = quant(e, nr, 0.9);
    double tmed[NT], tmabs[NT];
    for (int k = 0; k < NT; k++) {
        double *x = te + (size_t)k * (n + 1);
        double *a = malloc(((size_t)nte[k] + 1) * sizeof *a);
        for (int j = 0; j < nte[k] && a; j++)
            a[j] = fabs(x[j]);
        tmabs[k] = a ? quant(a, nte[k], 0.5) : NAN;
        tmed[k] = quant(x, nte[k], 0.5);
        free(a);
    }
    if (json_out) {
        json_t *arr = json_array();
        for (int i = 0; i < nr; i++) {
            const comet_reports_sysv_row *v = &rows[i];
            const comet_results_record *r = v->rec;
            json_t *terms = json_object();
            for (int k = 0; k < NT; k++)
                json_object_set_new(terms, term_names[k],
                    json_pack(
                        "{s:f,s:f}", "measured_s", v->measured[k], "predicted_s", v->predicted[k]));
            json_array_append_new(arr,
                json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:f,s:f,s:o}",
                    "phase", r->params.phase, "attention", r->variant, "recompute",
                    r->params.recompute, "tp", (int)r->params.tp, "dp", (int)r->params.dp,
                    "threads", r->threads, "hidden", (int)r->shape.hidden, "layers",
                    (int)r->shape.layers, "batch", (int)r->shape.B, "seq",
                    comet_results_has(r->shape.seq) ? (int)r->shape.seq : 0, "context",
                    comet_results_has(r->shape.context) ? (int)r->shape.context : 0, "link",
                    r->link, "measured_s", v->measured_s, "predicted_s", v->predicted_s, "rel_err",
                    (v->predicted_s - v->measured_s) / v->measured_s, "other_measured_s",
                    v->other_s, "terms", terms));
            json_t *last = json_array_get(arr, json_array_size(arr) - 1);
            json_object_set_new(last, "pp",
                json_integer(comet_results_has(r->params.pp) ? (json_int_t)r->params.pp : 1));
            json_object_set_new(last, "busy_others",
                comet_results_has(r->load.busy_others) ? json_real(r->load.busy_others)
                                                       : json_null());
        }
        json_t *tj = json_object();
        for (int k = 0; k < NT; k++)
            json_object_set_new(tj, term_names[k],
                json_pack("{s:i,s:o,s:o}", "records_at_10pct", nte[k], "median_rel_err",
                    nte[k] ? json_real(tmed[k]) : json_null(), "median_abs_rel_err",
                    nte[k] ? json_real(tmabs[k]) : json_null()));
        json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:f,s:f,s:o,s:o}", "schema",
            "comet.validate_system.v1", "profile", profile, "records", nr, "skipped", nskip,
            "median_abs_rel_err", med, "p90_abs_rel_err", p90, "terms", tj, "rows", arr);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(j);
    } else {
        printf(
            "system model against %d measured steps (comet bench llm), profile %s\n", nr, profile);
        printf("%-7s %-7s %-4s %-3s %-2s %-2s %-3s %-5s %9s %9s %7s  %s\n", "phase", "attn", "rec",
            "tp", "pp", "dp", "thr", "h", "meas ms", "pred ms", "err",
            "terms measured/predicted ms: gemm attention vector tp dp pp bubble optimizer "
            "recompute");
        for (int i = 0; i < nr; i++) {
            const comet_reports_sysv_row *v = &rows[i];
            const comet_results_record *r = v->rec;
            char tps[8];
            snprintf(
                tps, sizeof tps, "%.0f%s", r->params.tp, r->params.seq_parallel > 0 ? "s" : "");
            printf("%-7s %-7s %-4s %-3s %-2.0f %-2.0f %-3d %-5.0f %9.3f %9.3f %+6.1f%% ",
                r->params.phase, r->variant, r->params.recompute, tps,
                comet_results_has(r->params.pp) ? r->params.pp : 1, r->params.dp, r->threads,
                r->shape.hidden, 1e3 * v->measured_s, 1e3 * v->predicted_s,
                100 * (v->predicted_s - v->measured_s) / v->measured_s);
            const int show[] = { T_GEMM, T_ATTN, T_VEC, T_TP, T_DP, T_PP, T_BUBBLE, T_OPT, T_REC };
            for (size_t k = 0; k < sizeof show / sizeof *show; k++)
                printf(" %.2f/%.2f", 1e3 * v->measured[show[k]], 1e3 * v->predicted[show[k]]);
            printf("\n");
        }
        int busy = 0;
        for (int i = 0; i < nr; i++)
            busy += rows[i].rec->load.busy_others > 0.10;
        if (busy)
            printf("%d of %d records ran while others used more than 10%% of the CPUs (the idle "
                   "gate's reading before the launch, load.busy_others): their steps hold those "
                   "tenants' time slices, which no model term describes\n",
                busy, nr);
        printf("step: median |error| %.1f%%, p90 %.1f%% over %d records%s\n", 100 * med, 100 * p90,
            nr, nskip ? " (some not predicted: see above)" : "");
        printf("per term, over the records where it is >= 10%% of the measured step "
               "(signed median: + the model is slower):\n");
        for (int k = 0; k < NT; k++)
            if (nte[k])
                printf("  %-10s %3d records, median error %+.1f%%, median |error| %.1f%%\n",
                    term_names[k], nte[k], 100 * tmed[k], 100 * tmabs[k]);
    }
    free(rows);
    free(e);
    free(te);
    return COMET_EXIT_OK;
}
