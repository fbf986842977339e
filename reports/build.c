/* comet_reports_build(): loads the inputs, writes every section into both
 * documents (plots and their data beside them), then the two documents. */
#include "reports_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const css
    = "body{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
      "max-width:1100px;margin:1.5em auto;padding:0 1em;color:#1d1d1d;line-height:1.45}"
      "h1{border-bottom:2px solid #4c72b0;padding-bottom:.2em}"
      "h2{margin-top:2em;border-bottom:1px solid #ccc;padding-bottom:.15em}"
      "nav{background:#f4f6fa;border:1px solid #dde3ee;padding:.5em 1em;border-radius:4px}"
      "nav a{margin-right:1em}"
      ".tw{overflow-x:auto}"
      "table{border-collapse:collapse;margin:.8em 0;font-size:.9em}"
      "td,th{border:1px solid #c8c8c8;padding:3px 8px;text-align:right;vertical-align:top}"
      "th{background:#eef1f6}td.l,th.l{text-align:left}"
      "tr:nth-child(even) td{background:#fafafa}"
      "figure{margin:1.2em 0}figure img{max-width:100%;height:auto;border:1px solid #e2e2e2}"
      "figcaption{font-size:.88em;color:#444}"
      ".note{background:#fff6e5;border-left:4px solid #e0a030;padding:.4em .8em}";

static const struct {
    const char *id, *title;
} toc[] = { { "run", "Run" }, { "machine", "Machine" }, { "speedups", "Fused vs unfused" },
    { "validation", "Predicted vs measured" }, { "roofline", "Roofline" }, { "memory", "Memory" },
    { "collectives", "Collectives" }, { "gms", "Gather-GEMM-scatter" },
    { "predictions", "Predictions" }, { "system", "Whole workloads" },
    { "wholesteps", "Whole steps" }, { "fits", "Fit quality" } };

int rp_sec_run(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    const json_t *r = c->in->runlog;
    rp_h2(d, "run", "Run");
    if (!r) {
        rp_p(d, "Report rebuilt from stored results (no run log: %s).", c->in->runlog_note);
        return 0;
    }
    const json_t *st = json_object_get(r, "settings");
    rp_p(d,
        "comet run started %s, %s sets, %.0f s in all; MPI ranks %.0f; scaled system %.0f "
        "cores x %.0f nodes.",
        rp_str(r, "started"), json_is_true(json_object_get(st, "quick")) ? "quick" : "full",
        rp_num(r, "seconds"), rp_num(st, "np"), rp_num(st, "scale_cores"),
        rp_num(st, "scale_nodes"));
    rp_table(d, "llrl", "stage\tstatus\tseconds\tnote");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "stages"), i, x) rp_row(d, "%s\t%s\t%.1f\t%s",
        rp_str(x, "name"), rp_str(x, "status"), rp_num(x, "seconds"), rp_str(x, "note"));
    rp_table_end(d);
    return 0;
}

int comet_reports_build(const char *dir, const char *outdir, char *err, size_t errlen)
{
    return comet_reports_build_ex(dir, outdir, NULL, err, errlen);
}

int comet_reports_build_ex(const char *dir, const char *outdir, const comet_results_load_opts *lo,
    char *err, size_t errlen)
{
    rp_inputs in;
    rp_ctx c;
    char path[RP_PATH + 64];
    int rc;
    memset(&c, 0, sizeof c);
    if (!dir || !*dir)
        return comet_util_seterr(err, errlen, -EINVAL, "report: no results folder given");
    if ((rc = rp_inputs_load(&in, dir, lo, err, errlen)) != 0)
        return rc;
    c.in = &in;
    c.err = err;
    c.errlen = errlen;
    if (outdir)
        snprintf(c.rdir, sizeof c.rdir, "%s", outdir);
    else
        snprintf(c.rdir, sizeof c.rdir, "%s/report", dir);
    if ((rc = comet_util_mkdir_p(c.rdir, err, errlen)) != 0)
        goto fail_in;
    if ((rc = rp_doc_open(&c.doc)) != 0) {
        comet_util_seterr(err, errlen, rc, "report: out of memory");
        goto fail_in;
    }
    char now[40];
    comet_util_iso_time(now, sizeof now);
    FILE *h = c.doc.html.fp, *m = c.doc.md.fp;
    fprintf(h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>comet report: ");
    rp_html_escape(h, in.machine_rec->hostname);
    fprintf(h, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>comet report: ", css);
    rp_html_escape(h, in.machine_rec->hostname);
    fputs("</h1>\n<p>Built ", h);
    rp_html_escape(h, now);
    fputs(" from <code>", h);
    rp_html_escape(h, dir);
    fprintf(h,
        "</code>: %zu records in %zu results file(s)%s%s. Every number below is measured here "
        "or computed from these measurements by the calibration and the model.</p>\n<nav>",
        in.n, in.nfiles, in.profile ? ", profile.json" : "", in.pred ? ", predictions.json" : "");
    for (size_t i = 0; i < sizeof toc / sizeof toc[0]; i++)
        fprintf(h, "<a href=\"#%s\">%s</a>", toc[i].id, toc[i].title);
    fputs("</nav>\n", h);
    fprintf(m,
        "# comet report: %s\n\nBuilt %s from `%s`: %zu records in %zu results file(s)%s%s. Every "
        "number below is measured here or computed from these measurements by the calibration "
        "and the model. The HTML version with plots is index.html beside this file.\n",
        in.machine_rec->hostname, now, dir, in.n, in.nfiles, in.profile ? ", profile.json" : "",
        in.pred ? ", predictions.json" : "");

    int (*const sections[])(rp_ctx *) = { rp_sec_run, rp_sec_machine, rp_sec_speedups,
        rp_sec_validation, rp_sec_roofline, rp_sec_memory, rp_sec_links, rp_sec_gms,
        rp_sec_predictions, rp_sec_system, rp_sec_sysval, rp_sec_fits };
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if ((rc = sections[i](&c)) != 0)
            goto fail_doc;
    if (c.wrote_error) {
        rc = c.wrote_error;
        goto fail_doc;
    }
    fputs("</body>\n</html>\n", h);
    if (rp_buf_close(&c.doc.md) || rp_buf_close(&c.doc.html)) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "report: out of memory");
        goto fail_doc;
    }
    snprintf(path, sizeof path, "%s/summary.md", c.rdir);
    if ((rc = comet_util_write_atomic(path, c.doc.md.p, c.doc.md.n, err, errlen)) != 0)
        goto fail_doc;
    snprintf(path, sizeof path, "%s/index.html", c.rdir);
    if ((rc = comet_util_write_atomic(path, c.doc.html.p, c.doc.html.n, err, errlen)) != 0)
        goto fail_doc;
    rp_doc_free(&c.doc);
    rp_inputs_free(&in);
    return 0;
fail_doc:
    rp_doc_free(&c.doc);
fail_in:
    rp_inputs_free(&in);
    /* an output failure must not read as an input error */
    if (rc == -ENOENT || rc == -EINVAL)
        rc = -EIO;
    return rc;
}
