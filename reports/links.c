/* Point-to-point and collective sections: measured latency and bus
 * bandwidth per message size and algorithm, against the calibrated fits of
 * the profile evaluated with the same cost formulas calibration used
 * (comet_calibrate_trg_row). */
#include "reports_internal.h"

#include "comet_calibrate.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXPTS 64
#define MAXSER 16

typedef struct series {
    char op[32], alg[40], link[40];
    int ranks;
    size_t n;
    double bytes[MAXPTS];
    double lat[MAXPTS][16]; /* per launch medians (s) */
    double bw[MAXPTS][16]; /* per launch busbw (GB/s) */
    int nl[MAXPTS];
    const json_t *fit; /* profile fit, or NULL */
} series;

/* Groups p2p/collective records of op (NULL: every collective) by algorithm and ranks. */
static size_t collect(
    const rp_inputs *in, comet_results_kind kind, const char *op, series *s, size_t cap)
{
    size_t ns = 0;
    for (size_t i = 0; i < in->n; i++) {
        const comet_results_record *r = &in->recs[i];
        if (r->kind != kind || (op && strcmp(r->op, op)))
            continue;
        int ranks = r->ranks;
        const char *alg = r->variant, *link = r->link;
        size_t k = 0;
        while (k < ns
            && (strcmp(s[k].alg, alg) || s[k].ranks != ranks || strcmp(s[k].link, link)
                || strcmp(s[k].op, r->op)))
            k++;
        if (k == ns) {
            if (ns == cap)
                continue;
            memset(&s[k], 0, sizeof s[k]);
            snprintf(s[k].op, sizeof s[k].op, "%s", r->op);
            snprintf(s[k].alg, sizeof s[k].alg, "%s", alg[0] ? alg : "auto");
            snprintf(s[k].link, sizeof s[k].link, "%s", link);
            s[k].ranks = ranks;
            ns++;
        }
        series *e = &s[k];
        double b = r->shape.bytes, t = r->stats.median_s;
        if (!(b > 0 && t > 0))
            continue;
        size_t j = 0;
        while (j < e->n && e->bytes[j] < b)
            j++;
        if (j == e->n || e->bytes[j] != b) {
            if (e->n == MAXPTS)
                continue;
            memmove(e->bytes + j + 1, e->bytes + j, (e->n - j) * sizeof e->bytes[0]);
            memmove(e->lat + j + 1, e->lat + j, (e->n - j) * sizeof e->lat[0]);
            memmove(e->bw + j + 1, e->bw + j, (e->n - j) * sizeof e->bw[0]);
            memmove(e->nl + j + 1, e->nl + j, (e->n - j) * sizeof e->nl[0]);
            e->bytes[j] = b;
            e->nl[j] = 0;
            e->n++;
        }
        if (e->nl[j] < 16) {
            double bw = r->busbw_GBs;
            e->lat[j][e->nl[j]] = t;
            e->bw[j][e->nl[j]] = isfinite(bw) ? bw : NAN;
            e->nl[j]++;
        }
    }
    return ns;
}

/* The profile's fit for a series: same op, algorithm, link, ranks in range. */
static const json_t *find_fit(const json_t *profile, const char *kind, const series *s)
{
    const json_t *fits
        = json_object_get(json_object_get(json_object_get(profile, "calibration"), "fits"),
            !strcmp(kind, "p2p") ? "p2p" : "collectives");
    size_t i;
    json_t *f;
    json_array_foreach(fits, i, f)
    {
        if (strcmp(rp_str(f, "op"), s->op))
            continue;
        if (strcmp(kind, "p2p") && strcmp(rp_str(f, "algorithm"), s->alg))
            continue;
        if (rp_str(f, "link")[0] && s->link[0] && strcmp(rp_str(f, "link"), s->link))
            continue;
        const json_t *rk = json_object_get(f, "ranks");
        if (json_array_size(rk) == 2
            && (s->ranks < json_number_value(json_array_get(rk, 0))
                || s->ranks > json_number_value(json_array_get(rk, 1))))
            continue;
        return f;
    }
    return NULL;
}

/* Time the fit predicts for bytes at ranks (seconds), NaN if it cannot. */
static double fit_eval(
    const json_t *fit, const char *kind, const char *op, const char *alg, double bytes, int ranks)
{
    const json_t *segs = json_object_get(fit, "segments"), *seg = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(segs, i, x) if (rp_num(x, "from_bytes") <= bytes) seg = x;
    if (!seg)
        seg = json_array_get(segs, 0);
    if (!seg)
        return NAN;
    double row[3] = { 1, bytes, 0 };
    if (strcmp(kind, "p2p") && comet_calibrate_trg_row(op, alg, bytes, ranks, row, NULL) < 0)
        return NAN;
    double a = rp_num(seg, "alpha_us") * 1e-6, b = rp_num(seg, "beta_ns_per_byte") * 1e-9,
           g = rp_num(seg, "gamma_ns_per_byte") * 1e-9;
    /* a null term was absent or merged into another (its owner holds it) */
    double t = (isfinite(a) ? row[0] * a : 0) + (isfinite(b) ? row[1] * b : 0)
        + (isfinite(g) ? row[2] * g : 0);
    return t > 0 ? t : NAN;
}

static void series_name(const series *s, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%dr%s%s", s->alg, s->ranks, s->link[0] ? "/" : "", s->link);
}

/* One figure: latency and bus bandwidth panels for the series of one op. */
static void draw_op(rp_ctx *c, const char *kind, const char *op, series *s, size_t ns)
{
    rp_doc *d = &c->doc;
    rp_buf csv;
    json_t *ja = json_array();
    if (rp_buf_open(&csv) || !ja) {
        json_decref(ja);
        return;
    }
    fprintf(csv.fp, "series,what,op,algorithm,ranks,bytes,latency_us,busbw_GBs,launches\n");
    int nfit = 0;
    char names[MAXSER][96];
    for (size_t k = 0; k < ns; k++) {
        series *e = &s[k];
        series_name(e, names[k], sizeof names[k]);
        e->fit = find_fit(c->in->profile, kind, e);
        json_t *pts = json_array();
        double lo = INFINITY, hi = 0, bwratio = NAN;
        for (size_t j = 0; j < e->n; j++) {
            double lt[16], bw[16];
            memcpy(lt, e->lat[j], sizeof lt);
            memcpy(bw, e->bw[j], sizeof bw);
            double t = rp_median(lt, (size_t)e->nl[j]), b = rp_median(bw, (size_t)e->nl[j]);
            fprintf(csv.fp, "%s,measured,%s,%s,%d,%.0f,%.6g,%.6g,%d\n", names[k], e->op, e->alg,
                e->ranks, e->bytes[j], t * 1e6, b, e->nl[j]);
            json_array_append_new(pts,
                json_pack("{s:f,s:f,s:f,s:i}", "bytes", e->bytes[j], "latency_s", t, "busbw_GBs",
                    isfinite(b) ? b : 0.0, "launches", e->nl[j]));
            lo = fmin(lo, e->bytes[j]);
            hi = fmax(hi, e->bytes[j]);
            /* busbw = bytes x factor / T: the factor is the measured busbw x T / bytes */
            if (isfinite(b) && b > 0)
                bwratio = b * t / e->bytes[j];
        }
        json_t *fitpts = json_array();
        if (e->fit && e->n >= 2) {
            nfit++;
            for (int q = 0; q <= 48; q++) {
                double by = exp(log(lo) + (log(hi) - log(lo)) * q / 48.0);
                double t = fit_eval(e->fit, kind, e->op, e->alg, by, e->ranks);
                if (!isfinite(t))
                    continue;
                double bw = isfinite(bwratio) ? bwratio * by / t : NAN;
                fprintf(csv.fp, "%s,fitted,%s,%s,%d,%.1f,%.6g,%.6g,0\n", names[k], e->op, e->alg,
                    e->ranks, by, t * 1e6, bw);
                json_array_append_new(fitpts,
                    json_pack("{s:f,s:f,s:f}", "bytes", by, "latency_s", t, "busbw_GBs",
                        isfinite(bw) ? bw : 0.0));
            }
        }
        json_array_append_new(ja,
            json_pack("{s:s,s:s,s:i,s:s,s:o,s:o,s:s}", "op", e->op, "algorithm", e->alg, "ranks",
                e->ranks, "link", e->link, "measured", pts, "fitted", fitpts, "formula",
                e->fit ? rp_str(e->fit, "formula") : ""));
    }
    rp_buf_close(&csv);
    double xlo = INFINITY, xhi = 0;
    for (size_t k = 0; k < ns; k++)
        for (size_t j = 0; j < s[k].n; j++)
            xlo = fmin(xlo, s[k].bytes[j]), xhi = fmax(xhi, s[k].bytes[j]);
    /* two figures, one metric each, full width: latency and bus bandwidth
     * against the message size, each with the same CSV beside it */
    static const struct {
        const char *suffix, *what, *ylabel;
        int col;
    } metric[2] = {
        { "latency", "latency", "latency per call (us)", 7 },
        { "busbw", "bus bandwidth", "bus bandwidth (GB/s)", 8 },
    };
    json_t *jall = json_pack("{s:s,s:s,s:o}", "kind", kind, "op", op, "series", ja);
    for (int m = 0; m < 2; m++) {
        char name[64], caption[300];
        const int p2p = !strcmp(kind, "p2p");
        snprintf(name, sizeof name, "%s_%s_%s", p2p ? "p2p" : "coll", op, metric[m].suffix);
        snprintf(caption, sizeof caption,
            "%s: measured %s (points: median over launches) against the calibrated fit (lines) "
            "by message size, per %s.",
            op, metric[m].what, p2p ? "link" : "algorithm, rank count and link");
        rp_plot p;
        rp_plot_init(&p, name, caption);
        if (rp_plot_data(c, &p, csv.p, json_incref(jall)) == 0) {
            rp_buf sc;
            if (rp_buf_open(&sc) == 0) {
                fprintf(sc.fp, "S = \"");
                for (size_t k = 0; k < ns; k++)
                    fprintf(sc.fp, "%s%s", k ? " " : "", names[k]);
                fprintf(sc.fp, "\"\nset key font ',12'\nset logscale y\n");
                rp_binary_xtics(sc.fp, xlo, xhi);
                fprintf(sc.fp,
                    "set xlabel 'message size per rank'\nset ylabel '%s'\n"
                    "plot for [i=1:words(S)] '%s.csv' every ::1 using (strcol(1) eq word(S,i) && "
                    "strcol(2) eq 'measured' ? $6 : 1/0):%d with points pt 7 ps 1.2 lc i title "
                    "word(S,i).' measured', \\\n"
                    "  for [i=1:words(S)] '' every ::1 using (strcol(1) eq word(S,i) && strcol(2) "
                    "eq 'fitted' ? $6 : 1/0):%d with lines lw 2 lc i title word(S,i).' fit'\n",
                    metric[m].ylabel, name, metric[m].col, metric[m].col);
                rp_buf_close(&sc);
                rp_plot_draw(c, &p, sc.p);
                rp_buf_free(&sc);
            }
        }
        rp_figure(c, &p);
    }
    json_decref(jall);
    if (!nfit)
        rp_note(d,
            "%s: no calibrated fit in the profile for these series%s, so the plot shows "
            "measurements only.",
            op, c->in->profile ? "" : " (no profile)");
    rp_buf_free(&csv);
}

/* Fit table rows for one kind. */
static void fit_rows(rp_ctx *c, const char *kind, series *s, size_t ns)
{
    for (size_t k = 0; k < ns; k++) {
        const json_t *f = s[k].fit;
        if (!f)
            continue;
        const json_t *seg0 = json_array_get(json_object_get(f, "segments"), 0),
                     *h = json_object_get(f, "heldout");
        double bw = 0;
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(f, "segments"), i, x) bw
            = fmax(bw, rp_num(x, "bandwidth_GBs"));
        char nm[96];
        series_name(&s[k], nm, sizeof nm);
        rp_row(&c->doc, "%s\t%s\t%s\t%.3g\t%.3g\t%zu\t%.3f\t%.1f%%\t%.1f%%", kind, s[k].op, nm,
            rp_num(seg0, "alpha_us"), bw, json_array_size(json_object_get(f, "segments")),
            rp_num(f, "r2"), 100 * rp_num(h, "median_rel_err"), 100 * rp_num(h, "p90_rel_err"));
    }
}

int rp_sec_links(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "collectives", "Point-to-point and collectives");
    series *s = calloc(MAXSER * 8, sizeof *s);
    if (!s)
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    size_t np2p = collect(in, COMET_RESULTS_P2P, "pingpong", s, MAXSER);
    series *cs = s + MAXSER;
    static const char *const ops[] = { "allreduce", "allgather", "allgatherv", "reduce_scatter",
        "reduce", "bcast", "alltoall" };
    size_t total = 0;
    if (np2p == 0) {
        int any = 0;
        for (size_t i = 0; i < in->n && !any; i++)
            any = in->recs[i].kind == COMET_RESULTS_COLLECTIVE;
        if (!any) {
            rp_note(d,
                "No point-to-point or collective records: 'comet bench collectives' did not run "
                "or failed on this machine (MPI missing, or mpiexec could not start; see the run "
                "log). The collective parts of the model then use the profile's defaults or the "
                "presets only.");
            free(s);
            return 0;
        }
    }
    rp_p(d,
        "Latency is the median per-call time (barrier before each call, maximum over ranks), "
        "pooled over mpiexec launches by their median; bus bandwidth uses the nccl-tests factor "
        "of each collective. Lines are the calibrated models of the profile: piecewise Hockney "
        "alpha + beta n for point-to-point, and the Thakur-Rabenseifner-Gropp formulas in alpha, "
        "beta, gamma per forced MPICH algorithm ('auto' = MPICH's own choice, fitted as alpha + "
        "beta n).");
    if (np2p) {
        rp_h3(d, "Point-to-point (ping-pong)");
        draw_op(c, "p2p", "pingpong", s, np2p);
    }
    size_t off = 0;
    series *all = cs;
    for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
        size_t k = collect(in, COMET_RESULTS_COLLECTIVE, ops[o], all + off, MAXSER * 7 - off);
        if (!k)
            continue;
        char t[64];
        snprintf(t, sizeof t, "%s", ops[o]);
        rp_h3(d, t);
        draw_op(c, "collective", ops[o], all + off, k);
        off += k;
    }
    total = off;
    rp_h3(d, "Fitted link parameters");
    rp_table(d, "lllrrrrrr",
        "kind\top\tseries\talpha us\tbandwidth GB/s\tpieces\tR^2\theld-out median\theld-out p90");
    fit_rows(c, "p2p", s, np2p);
    fit_rows(c, "collective", all, total);
    rp_table_end(d);
    if (json_is_true(json_object_get(
            json_object_get(json_object_get(in->profile, "calibration"), "fits"), "collinear"))) {
        rp_note(d, "Some cost terms were collinear at the measured rank counts (see the profile).");
    }
    free(s);
    return 0;
}
