/* A parameter sweep's table as a figure: best fused and best unfused
 * latency against the swept value, with its CSV and JSON beside it
 * (comet predict/explore --sweep --out DIR). */
#include "reports_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int comet_reports_sweep_plot(const char *dir, const char *name, const char *xlabel, const double *x,
    const double *fused_s, const double *unfused_s, size_t n, char *err, size_t errlen)
{
    if (!dir || !name || !xlabel || (!x && n) || !fused_s || !unfused_s)
        return comet_util_seterr(err, errlen, -EINVAL, "sweep plot: bad arguments");
    rp_ctx c;
    memset(&c, 0, sizeof c);
    snprintf(c.rdir, sizeof c.rdir, "%s", dir);
    c.err = err;
    c.errlen = errlen;
    int rc = comet_util_mkdir_p(dir, err, errlen);
    if (rc)
        return rc;
    rp_buf csv;
    if (rp_buf_open(&csv))
        return comet_util_seterr(err, errlen, -ENOMEM, "sweep plot: out of memory");
    json_t *pts = json_array();
    double lo = INFINITY, hi = 0;
    fprintf(csv.fp, "value,best_fused_s,best_unfused_s,speedup\n");
    for (size_t i = 0; i < n; i++) {
        const double sp = unfused_s[i] / fused_s[i];
        fprintf(csv.fp, "%.10g,%.10g,%.10g,%.6g\n", x[i], fused_s[i], unfused_s[i], sp);
        json_array_append_new(pts,
            json_pack("{s:f,s:o,s:o}", "value", x[i], "best_fused_s",
                isfinite(fused_s[i]) ? json_real(fused_s[i]) : json_null(), "best_unfused_s",
                isfinite(unfused_s[i]) ? json_real(unfused_s[i]) : json_null()));
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    rp_buf_close(&csv);
    char caption[240];
    snprintf(caption, sizeof caption,
        "Best fused and best unfused mapping's predicted latency against %s.", xlabel);
    rp_plot p;
    rp_plot_init(&p, name, caption);
    rc = rp_plot_data(&c, &p, csv.p,
        json_pack("{s:s,s:s,s:o}", "schema", "comet.sweep.v1", "x", xlabel, "points", pts));
    if (rc == 0) {
        rp_buf sc;
        if (rp_buf_open(&sc) == 0) {
            fprintf(sc.fp, "set logscale y\nset xlabel '%s'\nset ylabel 'predicted latency (s)'\n",
                xlabel);
            if (lo > 0 && hi / lo >= 8)
                fputs("set logscale x\n", sc.fp);
            fprintf(sc.fp,
                "plot '%s.csv' every ::1 using 1:2 with linespoints lw 2 pt 7 title 'best fused', "
                "'' every ::1 using 1:3 with linespoints lw 2 pt 5 title 'best unfused'\n",
                name);
            rp_buf_close(&sc);
            rp_plot_draw(&c, &p, sc.p);
            rp_buf_free(&sc);
        }
        if (!p.ok)
            rc = comet_util_seterr(err, errlen, -EIO, "sweep plot: %s", p.why);
    }
    rp_buf_free(&csv);
    return rc ? rc : c.wrote_error;
}
