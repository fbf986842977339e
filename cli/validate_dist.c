/* comet validate --distributed: the scale-out validation. Every
 * distributed-kernel record predicted over the link it ran on (local compute
 * + its explicit collectives over that link's fits, model/dist.c), printed
 * per record and summed up per link, written as scale-out.json and
 * scale-out.csv (docs/FORMATS.md). */
#include "cli.h"

#include "comet_model_validate.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Median of the relative errors of rows whose link is `link` (NULL: all). */
static double median_err(const comet_model_drow *rows, int n, const char *link, int *count)
{
    double *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e);
    int k = 0;
    for (int i = 0; e && i < n; i++)
        if (!link || !strcmp(rows[i].link, link))
            e[k++] = rows[i].rel_err;
    double m = k && e ? comet_util_quantile(e, k, 0.5) : NAN;
    free(e);
    *count = k;
    return m;
}

static json_t *row_json(const comet_model_drow *r)
{
    json_t *calls = json_array();
    for (int c = 0; c < r->pred.ncall; c++) {
        const comet_model_dist_call *x = &r->pred.call[c];
        json_array_append_new(calls,
            json_pack("{s:s,s:s,s:f,s:f,s:f}", "kind", comet_model_coll_name(x->kind), "op", x->op,
                "bytes", x->bytes, "calls", x->calls, "predicted_s", x->seconds));
    }
    json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:i}", "link", r->link, "op", r->op, "variant",
        r->variant, "ranks", r->ranks, "threads", r->threads);
    if (r->heads > 0)
        json_object_set_new(o, "shape",
            json_pack("{s:f,s:f,s:f,s:f}", "BH", r->heads, "Lq", r->M, "Lk", r->N, "d", r->K));
    else
        json_object_set_new(
            o, "shape", json_pack("{s:f,s:f,s:f}", "M", r->M, "N", r->N, "K", r->K));
    json_object_set_new(o, "measured_s", json_real(r->measured_s));
    json_object_set_new(o, "ci_lo_s", json_real(r->ci_lo_s));
    json_object_set_new(o, "ci_hi_s", json_real(r->ci_hi_s));
    json_object_set_new(
        o, "load_others", isfinite(r->load_others) ? json_real(r->load_others) : json_null());
    json_object_set_new(o, "predicted_s", json_real(r->pred.seconds));
    json_object_set_new(o, "predicted_local_s", json_real(r->pred.local_s));
    json_object_set_new(o, "predicted_coll_s", json_real(r->pred.coll_s));
    json_object_set_new(o, "collectives", calls);
    json_object_set_new(o, "collectives_match_record", json_boolean(r->colls_match == 1));
    json_object_set_new(o, "rel_err", json_real(r->rel_err));
    return o;
}

static void shape_text(const comet_model_drow *r, char *buf, size_t len)
{
    if (r->heads > 0)
        snprintf(buf, len, "BH%.0f Lq%.0f Lk%.0f d%.0f", r->heads, r->M, r->N, r->K);
    else
        snprintf(buf, len, "%.0fx%.0fx%.0f", r->M, r->N, r->K);
}

static int write_csv(const char *path, const comet_model_drow *rows, int n, char *err, size_t len)
{
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *fp = fopen(tmp, "w");
    if (!fp)
        return comet_util_seterr(err, len, -errno, "%s: cannot write", tmp);
    fprintf(fp,
        "link,op,variant,shape,ranks,threads,measured_s,ci_lo_s,ci_hi_s,load_others,"
        "predicted_s,predicted_local_s,predicted_coll_s,collectives_match_record,rel_err\n");
    for (int i = 0; i < n; i++) {
        const comet_model_drow *r = &rows[i];
        char sh[96];
        shape_text(r, sh, sizeof sh);
        comet_util_csv_field(fp, r->link);
        fputc(',', fp);
        comet_util_csv_field(fp, r->op);
        fputc(',', fp);
        comet_util_csv_field(fp, r->variant);
        fputc(',', fp);
        comet_util_csv_field(fp, sh);
        fprintf(fp, ",%d,%d,%.9g,%.9g,%.9g,", r->ranks, r->threads, r->measured_s, r->ci_lo_s,
            r->ci_hi_s);
        if (isfinite(r->load_others))
            fprintf(fp, "%.3f", r->load_others);
        fprintf(fp, ",%.9g,%.9g,%.9g,%s,%.6f\n", r->pred.seconds, r->pred.local_s, r->pred.coll_s,
            r->colls_match == 1 ? "true" : "false", r->rel_err);
    }
    int bad = ferror(fp);
    if (fclose(fp) != 0 || bad || rename(tmp, path) != 0) {
        remove(tmp);
        return comet_util_seterr(err, len, -EIO, "%s: write failed", path);
    }
    return 0;
}

int comet_cli_validate_dist(const struct comet_model_hw *hw, const char *profile,
    const struct comet_results_record *recs, size_t n, const char *dir, int json_out)
{
    int rc = COMET_EXIT_OK;
    char err[COMET_ERRLEN] = "";
    comet_model_drow *rows = calloc(n + 1, sizeof *rows);
    int nr = rows ? comet_model_dist_validate(hw, recs, n, rows, (int)n) : -ENOMEM;
    if (nr <= 0) {
        comet_cli_error("validate",
            "no distributed-kernel record (ranks > 1) whose link has a fit in the profile; "
            "measure with 'comet bench collectives --colls ...,dist_kernels' and calibrate "
            "from those records");
        free(rows);
        return COMET_EXIT_FAIL;
    }
    /* links in order of first appearance, each with its median */
    const char *links[16];
    int nl = 0;
    for (int i = 0; i < nr; i++) {
        int seen = 0;
        for (int k = 0; k < nl; k++)
            seen |= !strcmp(links[k], rows[i].link);
        if (!seen && nl < 16)
            links[nl++] = rows[i].link;
    }
    int cnt, mism = 0;
    const double med = median_err(rows, nr, NULL, &cnt);
    double *e = malloc((size_t)nr * sizeof *e);
    for (int i = 0; e && i < nr; i++)
        e[i] = rows[i].rel_err;
    const double p90 = e ? comet_util_quantile(e, nr, 0.9) : NAN;
    free(e);
    json_t *jrows = json_array(), *jlinks = json_array();
    for (int i = 0; i < nr; i++) {
        json_array_append_new(jrows, row_json(&rows[i]));
        mism += rows[i].colls_match != 1;
    }
    for (int k = 0; k < nl; k++) {
        double m = median_err(rows, nr, links[k], &cnt);
        json_array_append_new(jlinks,
            json_pack("{s:s,s:i,s:f}", "link", links[k], "records", cnt, "median_rel_err", m));
    }
    json_t *j = json_pack("{s:s,s:s,s:i,s:f,s:f,s:i,s:o,s:o}", "schema", "comet.scaleout.v2",
        "profile", profile, "records", nr, "median_rel_err", med, "p90_rel_err", p90,
        "collectives_mismatched", mism, "links", jlinks, "rows", jrows);
    if (json_out) {
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        printf("scale-out validation: %d distributed-kernel records over %d link(s), median "
               "relative error %.1f%%, p90 %.1f%%\n",
            nr, nl, 100 * med, 100 * p90);
        printf("  %-14s %-15s %-8s %-24s %2s %10s %10s %10s %10s %7s %5s\n", "link", "op",
            "variant", "shape", "p", "measured", "predicted", "local", "colls", "error", "load");
        for (int i = 0; i < nr; i++) {
            const comet_model_drow *r = &rows[i];
            char sh[96], ld[16] = "n/a";
            shape_text(r, sh, sizeof sh);
            if (isfinite(r->load_others))
                snprintf(ld, sizeof ld, "%.2f", r->load_others);
            printf("  %-14s %-15s %-8s %-24s %2d %8.3fms %8.3fms %8.3fms %8.3fms %6.1f%% %5s%s\n",
                r->link, r->op, r->variant, sh, r->ranks, 1e3 * r->measured_s,
                1e3 * r->pred.seconds, 1e3 * r->pred.local_s, 1e3 * r->pred.coll_s,
                100 * r->rel_err, ld, r->colls_match == 1 ? "" : "  (collectives differ)");
        }
        for (int k = 0; k < nl; k++) {
            double m = median_err(rows, nr, links[k], &cnt);
            printf("  %s: %d records, median relative error %.1f%%\n", links[k], cnt, 100 * m);
        }
        if (mism)
            printf(
                "  %d record(s) issued collectives other than the model's (see the JSON)\n", mism);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/scale-out.json", dir);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text || comet_util_mkdir_p(dir, err, sizeof err) != 0
        || comet_util_write_atomic(path, text, strlen(text), err, sizeof err) != 0) {
        comet_cli_error("validate", "%s", err[0] ? err : "scale-out.json: out of memory");
        rc = COMET_EXIT_FAIL;
    }
    free(text);
    snprintf(path, sizeof path, "%s/scale-out.csv", dir);
    if (rc == COMET_EXIT_OK && write_csv(path, rows, nr, err, sizeof err) != 0) {
        comet_cli_error("validate", "%s", err);
        rc = COMET_EXIT_FAIL;
    }
    json_decref(j);
    free(rows);
    return rc;
}
