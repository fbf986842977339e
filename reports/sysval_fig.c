/* The "Whole steps" section's figure: the system model's predicted step
 * against the measured one for every llm record (comet bench llm), log-log,
 * with the line predicted = measured and a +-15% band around it (issue 34's
 * aim: p90 |error| <= 15%). Point type by phase, colour by how the ranks
 * split the model. Data (CSV, JSON) and the SVG land atomically through
 * plot.c; without gnuplot the figure names why it is missing. */
#include "comet_util.h"
#include "reports_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The band's half-width: issue 34's aim for the step's p90 |error|. */
#define RP_SYSVAL_BAND 0.15

void rp_sysval_grid(const comet_results_record *r, char *buf, size_t len)
{
    const double pp = comet_results_has(r->params.pp) ? r->params.pp : 1;
    const double tp = r->params.tp, dp = r->params.dp;
    size_t o = 0;
    buf[0] = 0;
    if (tp > 1)
        o += (size_t)snprintf(
            buf + o, len - o, "tp%.0f%s", tp, r->params.seq_parallel > 0 ? "+sp" : "");
    if (pp > 1 && o < len)
        o += (size_t)snprintf(buf + o, len - o, "%spp%.0f", o ? " " : "", pp);
    if (dp > 1 && o < len)
        o += (size_t)snprintf(buf + o, len - o, "%sdp%.0f", o ? " " : "", dp);
    if (!o)
        snprintf(buf, len, "1 rank");
    o = strlen(buf);
    if (r->threads > 1 && o < len)
        snprintf(buf + o, len - o, " x%d thr", r->threads);
}

/* Distinct strings of a list, in first-seen order: the index of s, adding it. */
static int intern(char (*tab)[64], int *n, int cap, const char *s)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(tab[i], s))
            return i;
    if (*n >= cap)
        return cap - 1;
    snprintf(tab[*n], sizeof tab[*n], "%s", s);
    return (*n)++;
}

int rp_sysval_figure(rp_ctx *c, const comet_reports_sysv_row *rows, int nr)
{
    enum { MAXS = 48 };
    char grids[MAXS][64], phases[MAXS][64], series[MAXS][64];
    int ng = 0, nph = 0, ns = 0, sg[MAXS], sph[MAXS], np = 0;
    double lo = INFINITY, hi = 0;
    rp_buf csv;
    if (rp_buf_open(&csv))
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    json_t *jr = json_array();
    double *e = malloc(((size_t)nr + 1) * sizeof *e);
    fprintf(csv.fp,
        "series,phase,attention,recompute,tp,sp,pp,dp,threads,hidden,layers,link,"
        "measured_ms,predicted_ms,rel_err\n");
    for (int i = 0; i < nr; i++) {
        const comet_reports_sysv_row *v = &rows[i];
        const comet_results_record *r = v->rec;
        /* a log axis holds positive steps only */
        if (!(v->measured_s > 0) || !(v->predicted_s > 0) || !isfinite(v->predicted_s))
            continue;
        char grid[48], key[64];
        rp_sysval_grid(r, grid, sizeof grid);
        const int gi = intern(grids, &ng, MAXS, grid);
        const int pi = intern(phases, &nph, MAXS, r->params.phase);
        snprintf(key, sizeof key, "%s / %s", r->params.phase, grid); /* no comma: a CSV field */
        const int si = intern(series, &ns, MAXS, key);
        sg[si] = gi;
        sph[si] = pi;
        const double rel = (v->predicted_s - v->measured_s) / v->measured_s;
        if (e)
            e[np] = fabs(rel);
        np++;
        const double pp = comet_results_has(r->params.pp) ? r->params.pp : 1;
        fprintf(csv.fp, "%s,%s,%s,%s,%.0f,%d,%.0f,%.0f,%d,%.0f,%.0f,", key, r->params.phase,
            r->variant, r->params.recompute, r->params.tp, r->params.seq_parallel > 0, pp,
            r->params.dp, r->threads, r->shape.hidden, r->shape.layers);
        rp_csv_field(csv.fp, r->link);
        fprintf(csv.fp, ",%.6g,%.6g,%.5f\n", 1e3 * v->measured_s, 1e3 * v->predicted_s, rel);
        json_array_append_new(jr,
            json_pack("{s:s,s:s,s:s,s:s,s:i,s:b,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:f}", "series",
                key, "phase", r->params.phase, "attention", r->variant, "recompute",
                r->params.recompute, "tp", (int)r->params.tp, "seq_parallel",
                r->params.seq_parallel > 0, "pp", (int)pp, "dp", (int)r->params.dp, "threads",
                r->threads, "hidden", (int)r->shape.hidden, "layers", (int)r->shape.layers, "link",
                r->link, "measured_s", v->measured_s, "predicted_s", v->predicted_s, "rel_err",
                rel));
        lo = fmin(lo, 1e3 * fmin(v->measured_s, v->predicted_s));
        hi = fmax(hi, 1e3 * fmax(v->measured_s, v->predicted_s));
    }
    rp_buf_close(&csv);
    const double med = e && np ? comet_util_quantile(e, (size_t)np, 0.5) : NAN;
    const double p90 = e && np ? comet_util_quantile(e, (size_t)np, 0.9) : NAN;
    int within = 0;
    for (int i = 0; e && i < np; i++)
        within += e[i] <= RP_SYSVAL_BAND;
    free(e);
    rp_plot p;
    char cap[240];
    snprintf(cap, sizeof cap,
        "The system model's predicted step against the measured one, every whole-step record "
        "(%d; %d within the +-%.0f%% band): line predicted = measured.",
        np, within, 100 * RP_SYSVAL_BAND);
    rp_plot_init(&p, "wholesteps", cap);
    json_t *j = json_pack("{s:i,s:i,s:f,s:o,s:o,s:o}", "records", np, "within_band", within, "band",
        RP_SYSVAL_BAND, "median_abs_rel_err", np ? json_real(med) : json_null(), "p90_abs_rel_err",
        np ? json_real(p90) : json_null(), "rows", jr);
    if (!np) {
        snprintf(p.why, sizeof p.why, "no record with a positive measured and predicted step");
        json_decref(j);
    } else if (rp_plot_data(c, &p, csv.p, j) == 0) {
        rp_buf sc;
        if (rp_buf_open(&sc) == 0) {
            const double x0 = lo / 1.5, x1 = hi * 1.5;
            fprintf(sc.fp,
                "set logscale xy\nset xrange [%.6g:%.6g]\nset yrange [%.6g:%.6g]\nset samples 200\n"
                "set xlabel 'measured step (ms)'\nset ylabel 'predicted step (ms)'\n"
                "set key font ',12'\nE = %g\n"
                "plot '+' using 1:($1*(1-E)):($1*(1+E)) with filledcurves fc rgb '#e8e8e8' "
                "title sprintf('+-%%.0f%%%%', 100*E), \\\n"
                "  x with lines lc rgb 'black' title 'predicted = measured'",
                x0, x1, x0, x1, RP_SYSVAL_BAND);
            /* point type by phase, colour by the ranks' split */
            static const char *const pts[] = { "7", "5", "9", "11", "13" };
            static const char *const cols[] = { "#c44e52", "#4c72b0", "#55a868", "#8172b2",
                "#ccb974", "#64b5cd", "#8c613c", "#000000" };
            for (int s = 0; s < ns; s++)
                fprintf(sc.fp,
                    ", \\\n  'wholesteps.csv' every ::1 using (strcol(1) eq '%s' ? $13 : 1/0):14 "
                    "with points pt %s ps 1.4 lc rgb '%s' title '%s'",
                    series[s], pts[sph[s] % 5], cols[sg[s] % 8], series[s]);
            fputs("\n", sc.fp);
            rp_buf_close(&sc);
            rp_plot_draw(c, &p, sc.p);
            rp_buf_free(&sc);
        }
    }
    rp_figure(c, &p);
    rp_buf_free(&csv);
    return 0;
}
