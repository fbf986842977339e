/* The report: tables and gnuplot SVG plots from results, profile,
 * validation and predictions. */
#include "comet_reports.h"

#include "comet_bench.h"
#include "comet_calibrate.h"
#include "comet_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define jnum comet_util_jnum

#define jstr comet_util_jstr

static void shape_str(const json_t *sh, char *buf, size_t len)
{
    if (json_object_get(sh, "Lq"))
        snprintf(buf, len, "BH=%.0f Lq=%.0f Lk=%.0f d=%.0f%s", jnum(sh, "B") * jnum(sh, "H"),
            jnum(sh, "Lq"), jnum(sh, "Lk"), jnum(sh, "d"), jnum(sh, "causal") > 0 ? " causal" : "");
    else
        snprintf(buf, len, "M=%.0f N=%.0f K=%.0f", jnum(sh, "M"), jnum(sh, "N"), jnum(sh, "K"));
}

size_t comet_reports_speedups(json_t *const *recs, size_t n, comet_reports_speedup *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        const json_t *f = recs[i];
        if (strcmp(jstr(f, "kind"), "kernel") || strcmp(jstr(f, "variant"), "fused"))
            continue;
        for (size_t j = 0; j < n; j++) {
            const json_t *u = recs[j];
            if (strcmp(jstr(u, "kind"), "kernel") || strcmp(jstr(u, "variant"), "unfused")
                || strcmp(jstr(u, "op"), jstr(f, "op")) || jnum(u, "threads") != jnum(f, "threads")
                || !json_equal(json_object_get(u, "shape"), json_object_get(f, "shape")))
                continue;
            /* skip tile-sweep records: only default-parameter pairs */
            comet_reports_speedup *s = &out[k++];
            memset(s, 0, sizeof *s);
            snprintf(s->op, sizeof s->op, "%s", jstr(f, "op"));
            shape_str(json_object_get(f, "shape"), s->shape, sizeof s->shape);
            s->threads = (int)jnum(f, "threads");
            const json_t *sf = json_object_get(f, "stats"), *su = json_object_get(u, "stats");
            s->fused_s = jnum(sf, "median_s");
            s->unfused_s = jnum(su, "median_s");
            s->speedup = s->unfused_s / s->fused_s;
            /* conservative interval: worst and best pairing of the two CIs */
            s->lo = jnum(su, "ci_lo_s") / jnum(sf, "ci_hi_s");
            s->hi = jnum(su, "ci_hi_s") / jnum(sf, "ci_lo_s");
            break;
        }
    }
    return k;
}

/* ---- output helpers ---- */

typedef struct sbuf {
    char *p;
    size_t n;
    FILE *fp;
} sbuf;

static int sb_open(sbuf *b)
{
    memset(b, 0, sizeof *b);
    b->fp = open_memstream(&b->p, &b->n);
    return b->fp ? 0 : -ENOMEM;
}

static int sb_save(sbuf *b, const char *path, char *err, size_t errlen)
{
    fclose(b->fp);
    b->fp = NULL;
    int rc = comet_util_write_atomic(path, b->p, b->n, err, errlen);
    free(b->p);
    b->p = NULL;
    return rc;
}

static int save_json(const char *path, json_t *j, char *err, size_t errlen)
{
    char *t = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    if (!t)
        return comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
    int rc = comet_util_write_atomic(path, t, strlen(t), err, errlen);
    free(t);
    return rc;
}

/* Runs gnuplot on script (which writes out.tmp); renames to out on success. */
static int run_gnuplot(const char *script_path, const char *svg_tmp, const char *svg)
{
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        int fd = open("/dev/null", 1);
        if (fd >= 0) {
            dup2(fd, 1);
        }
        alarm(60); /* never hang the report on a plot */
        execlp("gnuplot", "gnuplot", script_path, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return -EIO;
    return rename(svg_tmp, svg) == 0 ? 0 : -errno;
}

typedef struct plot {
    const char *name; /* file stem */
    const char *title; /* caption */
    int ok; /* drawn */
    char note[160]; /* why not */
} plot;

/* Writes NAME.gp (with the data file NAME.csv already written) and draws NAME.svg. */
static void draw(const char *rdir, plot *pl, const char *body_fmt, ...)
{
    char gp[4200], svg[4200], tmp[4300];
    snprintf(gp, sizeof gp, "%s/%s.gp", rdir, pl->name);
    snprintf(svg, sizeof svg, "%s/%s.svg", rdir, pl->name);
    snprintf(tmp, sizeof tmp, "%s/%s.svg.tmp", rdir, pl->name);
    FILE *fp = fopen(gp, "w");
    if (!fp) {
        snprintf(pl->note, sizeof pl->note, "cannot write the gnuplot script");
        return;
    }
    fprintf(fp,
        "set terminal svg size 760,460 dynamic font 'sans,12' background '#ffffff'\n"
        "set output '%s'\nset datafile separator ','\nset key outside right top box\n"
        "set grid\nset title '%s'\n",
        tmp, pl->title);
    va_list ap;
    va_start(ap, body_fmt);
    vfprintf(fp, body_fmt, ap);
    va_end(ap);
    fclose(fp);
    int rc = run_gnuplot(gp, tmp, svg);
    if (rc) {
        unlink(tmp);
        snprintf(pl->note, sizeof pl->note, "gnuplot failed (%s)", comet_util_strerror(rc));
    } else {
        pl->ok = 1;
    }
}

static void html_escape(FILE *fp, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '<':
            fputs("&lt;", fp);
            break;
        case '>':
            fputs("&gt;", fp);
            break;
        case '&':
            fputs("&amp;", fp);
            break;
        default:
            fputc(*s, fp);
        }
}

/* Inlines an SVG file (without its XML prolog) into the HTML. */
static void inline_svg(FILE *fp, const char *rdir, const plot *pl)
{
    char path[4200], *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s.svg", rdir, pl->name);
    fprintf(fp, "<figure>\n");
    if (pl->ok && comet_util_read_file(path, &data, &len, NULL, 0) == 0) {
        char *start = strstr(data, "<svg");
        fputs(start ? start : data, fp);
        free(data);
    } else {
        fprintf(fp, "<p class=note>plot not drawn: ");
        html_escape(fp, pl->note[0] ? pl->note : "no data");
        fprintf(fp, "</p>");
    }
    fprintf(fp,
        "<figcaption>%s (data: <a href=\"%s.csv\">%s.csv</a>, <a "
        "href=\"%s.json\">%s.json</a>)</figcaption>\n</figure>\n",
        pl->title, pl->name, pl->name, pl->name, pl->name);
}

static json_t *load_json(const char *dir, const char *name)
{
    char path[8400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return json_load_file(path, 0, NULL);
}

int comet_reports_build(const char *dir, char *err, size_t errlen)
{
    char rdir[4096], path[4300];
    json_t **recs = NULL;
    size_t n = 0;
    int rc;
    const char *paths[1] = { dir };
    snprintf(rdir, sizeof rdir, "%s/report", dir);
    if ((rc = comet_calibrate_load_results(paths, 1, &recs, &n, err, errlen)) != 0)
        return rc;
    if ((rc = comet_util_mkdir_p(rdir, err, errlen)) != 0)
        goto out_recs;
    json_t *profile = load_json(dir, "profile.json"), *val = load_json(dir, "validate.json");
    const json_t *machine = NULL;
    for (size_t i = 0; i < n && !machine; i++)
        if (!strcmp(jstr(recs[i], "kind"), "run"))
            machine = json_object_get(recs[i], "machine");

    /* ---- speedups ---- */
    comet_reports_speedup *sp = calloc(n + 1, sizeof *sp);
    size_t nsp = sp ? comet_reports_speedups(recs, n, sp, n) : 0;
    plot p_sp = { "speedups", "Measured fused vs unfused speedup (95% CI)", 0, "" };
    {
        sbuf b;
        json_t *ja = json_array();
        sb_open(&b);
        fprintf(b.fp, "idx,label,op,shape,threads,fused_ms,unfused_ms,speedup,lo,hi\n");
        for (size_t i = 0; i < nsp; i++) {
            fprintf(b.fp, "%zu,\"%s %s T%d\",%s,\"%s\",%d,%.6g,%.6g,%.4f,%.4f,%.4f\n", i, sp[i].op,
                sp[i].shape, sp[i].threads, sp[i].op, sp[i].shape, sp[i].threads,
                sp[i].fused_s * 1e3, sp[i].unfused_s * 1e3, sp[i].speedup, sp[i].lo, sp[i].hi);
            json_array_append_new(ja,
                json_pack("{s:s,s:s,s:i,s:f,s:f,s:f,s:f,s:f}", "op", sp[i].op, "shape", sp[i].shape,
                    "threads", sp[i].threads, "fused_s", sp[i].fused_s, "unfused_s",
                    sp[i].unfused_s, "speedup", sp[i].speedup, "ci_lo", sp[i].lo, "ci_hi",
                    sp[i].hi));
        }
        snprintf(path, sizeof path, "%s/speedups.csv", rdir);
        sb_save(&b, path, err, errlen);
        snprintf(path, sizeof path, "%s/speedups.json", rdir);
        save_json(path, ja, err, errlen);
        json_decref(ja);
        if (nsp)
            draw(rdir, &p_sp,
                "set ylabel 'speedup (unfused time / fused time)'\nset xlabel 'case (op, shape, "
                "threads)'\n"
                "set xtics rotate by -35 font ',9'\nset bmargin 10\nset yrange [0:*]\nset style "
                "fill solid 0.5\n"
                "set boxwidth 0.6\n"
                "plot '%s/speedups.csv' every ::1 using 1:8:xtic(2) with boxes title 'median "
                "speedup', "
                "'' every ::1 using 1:8:9:10 with yerrorbars lc rgb 'black' title '95%% CI', "
                "1 with lines dt 2 lc rgb 'red' title 'no speedup'\n",
                rdir);
        else
            snprintf(p_sp.note, sizeof p_sp.note, "no fused/unfused kernel pairs in the results");
    }

    /* ---- predicted vs measured ---- */
    plot p_val = { "validation", "Predicted vs measured kernel time (band: +-15%)", 0, "" };
    {
        sbuf b;
        sb_open(&b);
        fprintf(b.fp, "op,variant,measured_ms,predicted_ms,rel_err\n");
        size_t i, nv = 0;
        json_t *r;
        json_array_foreach(json_object_get(val, "rows"), i, r)
        {
            fprintf(b.fp, "%s,%s,%.6g,%.6g,%.4f\n", jstr(r, "op"), jstr(r, "variant"),
                jnum(r, "measured_s") * 1e3, jnum(r, "predicted_s") * 1e3, jnum(r, "rel_err"));
            nv++;
        }
        snprintf(path, sizeof path, "%s/validation.csv", rdir);
        sb_save(&b, path, err, errlen);
        snprintf(path, sizeof path, "%s/validation.json", rdir);
        if (val)
            save_json(path, val, err, errlen);
        else {
            json_t *e = json_object();
            save_json(path, e, err, errlen);
            json_decref(e);
        }
        if (nv)
            draw(rdir, &p_val,
                "set logscale xy\nset xlabel 'measured time (ms)'\nset ylabel 'predicted time "
                "(ms)'\n"
                "plot x with lines lc rgb 'black' title 'predicted = measured', "
                "1.15*x with lines dt 2 lc rgb 'gray' title '+15%%', 0.85*x with lines dt 2 lc rgb "
                "'gray' title '-15%%', "
                "'%s/validation.csv' every ::1 using (strcol(2) eq 'fused' ? $3 : 1/0):4 with "
                "points pt 7 title 'fused', "
                "'' every ::1 using (strcol(2) eq 'unfused' ? $3 : 1/0):4 with points pt 5 title "
                "'unfused'\n",
                rdir);
        else
            snprintf(p_val.note, sizeof p_val.note, "no validation rows (run comet validate)");
    }

    /* ---- roofline ---- */
    plot p_roof
        = { "roofline", "Roofline of this machine (measured peaks) with the kernels", 0, "" };
    double peak = 0, bwl[8] = { 0 };
    int nbw = 0;
    {
        for (size_t i = 0; i < n; i++)
            if (!strcmp(jstr(recs[i], "kind"), "kernel") && !strcmp(jstr(recs[i], "op"), "sgemm")
                && jnum(recs[i], "gflops") > peak)
                peak = jnum(recs[i], "gflops");
        const json_t *lv = json_object_get(
            json_object_get(
                json_object_get(json_object_get(profile, "calibration"), "fits"), "memory"),
            "levels");
        size_t i;
        json_t *x;
        json_array_foreach(lv, i, x) if (nbw < 8) bwl[nbw++] = jnum(x, "gbs");
        sbuf b;
        json_t *ja = json_array();
        sb_open(&b);
        fprintf(b.fp, "op,variant,threads,intensity_flop_per_byte,gflops\n");
        for (size_t k = 0; k < n; k++) {
            const json_t *r = recs[k];
            if (strcmp(jstr(r, "kind"), "kernel") || !strcmp(jstr(r, "op"), "sgemm"))
                continue;
            double fl = jnum(r, "flops"), by = jnum(r, "bytes"), gf = jnum(r, "gflops");
            if (!(fl > 0 && by > 0 && gf > 0))
                continue;
            fprintf(b.fp, "%s,%s,%d,%.5g,%.5g\n", jstr(r, "op"), jstr(r, "variant"),
                (int)jnum(r, "threads"), fl / by, gf);
            json_array_append_new(ja,
                json_pack("{s:s,s:s,s:f,s:f}", "op", jstr(r, "op"), "variant", jstr(r, "variant"),
                    "intensity", fl / by, "gflops", gf));
        }
        snprintf(path, sizeof path, "%s/roofline.csv", rdir);
        sb_save(&b, path, err, errlen);
        json_t *meta = json_pack(
            "{s:f,s:o,s:o}", "peak_gflops", peak, "bandwidths_gbs", json_array(), "kernels", ja);
        for (int q = 0; q < nbw; q++)
            json_array_append_new(json_object_get(meta, "bandwidths_gbs"), json_real(bwl[q]));
        snprintf(path, sizeof path, "%s/roofline.json", rdir);
        save_json(path, meta, err, errlen);
        json_decref(meta);
        if (peak > 0 && nbw > 0) {
            char lines[1024] = "";
            size_t off = 0;
            for (int q = 0; q < nbw; q++) {
                char nm[32];
                if (q == nbw - 1)
                    snprintf(nm, sizeof nm, "DRAM");
                else
                    snprintf(nm, sizeof nm, "plateau %d", q + 1);
                off += (size_t)snprintf(lines + off, sizeof lines - off,
                    "(x*%g < %g ? x*%g : %g) with lines lw 2 title '%s %.0f GB/s', ", bwl[q], peak,
                    bwl[q], peak, nm, bwl[q]);
            }
            draw(rdir, &p_roof,
                "set logscale xy\nset xlabel 'arithmetic intensity (FLOP/byte of compulsory "
                "traffic)'\n"
                "set ylabel 'performance (GFLOP/s)'\nset xrange [0.1:1000]\nset samples 400\n"
                "plot %s%g with lines dt 2 lc rgb 'black' title 'peak sgemm %.0f GFLOP/s', "
                "'%s/roofline.csv' every ::1 using (strcol(2) eq 'fused' ? $4 : 1/0):5 with points "
                "pt 7 ps 1.3 title 'fused kernels', "
                "'' every ::1 using (strcol(2) eq 'unfused' ? $4 : 1/0):5 with points pt 5 ps 1.3 "
                "title 'unfused kernels'\n",
                lines, peak, peak, rdir);
        } else {
            snprintf(p_roof.note, sizeof p_roof.note, "needs sgemm records and a profile");
        }
    }

    /* ---- memory sweep ---- */
    plot p_mem = { "memory", "Triad bandwidth vs working set", 0, "" };
    {
        sbuf b;
        json_t *ja = json_array();
        sb_open(&b);
        fprintf(b.fp, "threads,working_set_bytes,gbs\n");
        size_t cnt = 0;
        for (size_t k = 0; k < n; k++) {
            const json_t *r = recs[k];
            if (strcmp(jstr(r, "kind"), "memory") || strcmp(jstr(r, "op"), "triad"))
                continue;
            double ws = jnum(json_object_get(r, "shape"), "bytes");
            fprintf(b.fp, "%d,%.0f,%.4g\n", (int)jnum(r, "threads"), ws, jnum(r, "gbs"));
            json_array_append_new(ja,
                json_pack("{s:i,s:f,s:f}", "threads", (int)jnum(r, "threads"), "bytes", ws, "gbs",
                    jnum(r, "gbs")));
            cnt++;
        }
        snprintf(path, sizeof path, "%s/memory.csv", rdir);
        sb_save(&b, path, err, errlen);
        snprintf(path, sizeof path, "%s/memory.json", rdir);
        save_json(path, ja, err, errlen);
        json_decref(ja);
        if (cnt)
            draw(rdir, &p_mem,
                "set logscale x 2\nset format x '%%.0s%%cB'\nset xlabel 'working set (bytes)'\n"
                "set ylabel 'triad bandwidth (GB/s)'\nset yrange [0:*]\n"
                "plot '%s/memory.csv' every ::1 using ($1==1 ? $2 : 1/0):3 with linespoints pt 7 "
                "title '1 thread', "
                "'' every ::1 using ($1>1 ? $2 : 1/0):3 with linespoints pt 5 title 'all cores'\n",
                rdir);
        else
            snprintf(p_mem.note, sizeof p_mem.note, "no memory records");
    }

    /* ---- collectives ---- */
    plot p_coll = { "collectives", "Collective latency vs message size, per algorithm", 0, "" };
    {
        sbuf b;
        json_t *ja = json_array();
        sb_open(&b);
        fprintf(b.fp, "series,bytes,latency_us,busbw_GBs\n");
        size_t cnt = 0;
        for (size_t k = 0; k < n; k++) {
            const json_t *r = recs[k];
            const char *kind = jstr(r, "kind");
            if (strcmp(kind, "collective") && strcmp(kind, "p2p"))
                continue;
            double by = jnum(json_object_get(r, "shape"), "bytes"),
                   t = jnum(json_object_get(r, "stats"), "median_s");
            fprintf(b.fp, "%s/%s,%.0f,%.5g,%.5g\n", jstr(r, "op"), jstr(r, "variant"), by, t * 1e6,
                jnum(r, "busbw_GBs"));
            json_array_append_new(ja,
                json_pack("{s:s,s:s,s:f,s:f}", "op", jstr(r, "op"), "variant", jstr(r, "variant"),
                    "bytes", by, "latency_s", t));
            cnt++;
        }
        snprintf(path, sizeof path, "%s/collectives.csv", rdir);
        sb_save(&b, path, err, errlen);
        snprintf(path, sizeof path, "%s/collectives.json", rdir);
        save_json(path, ja, err, errlen);
        json_decref(ja);
        if (cnt)
            draw(rdir, &p_coll,
                "set logscale xy\nset xlabel 'message size (bytes)'\nset ylabel 'latency (us)'\n"
                "set key outside right top box font ',8'\n"
                "plot for [s in system(\"tail -n +2 %s/collectives.csv | cut -d, -f1 | sort -u | "
                "tr '\\\\n' ' '\")] "
                "'%s/collectives.csv' every ::1 using (strcol(1) eq s ? $2 : 1/0):3 with "
                "linespoints title s\n",
                rdir, rdir);
        else
            snprintf(p_coll.note, sizeof p_coll.note,
                "no collective records (comet bench collectives did not run here)");
    }

    /* ---- predictions ---- */
    json_t *preds = json_array();
    {
        char pdir[4200];
        snprintf(pdir, sizeof pdir, "%s/predictions", dir);
        DIR *d = opendir(pdir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            size_t l = strlen(e->d_name);
            if (l < 6 || strcmp(e->d_name + l - 5, ".json"))
                continue;
            json_t *j = load_json(pdir, e->d_name);
            if (j)
                json_array_append_new(preds, j);
        }
        if (d)
            closedir(d);
        snprintf(path, sizeof path, "%s/predictions.json", rdir);
        save_json(path, preds, err, errlen);
    }

    /* ---- summary.md and index.html ---- */
    sbuf md, html;
    sb_open(&md);
    sb_open(&html);
    FILE *m = md.fp, *h = html.fp;
    char now[32];
    comet_util_iso_time(now, sizeof now);
    fprintf(m, "# comet report\n\nGenerated %s from `%s` (%zu records).\n\n", now, dir, n);
    fprintf(h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>comet "
        "report</title>\n"
        "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px "
        "8px;text-align:right}"
        "th{background:#eee}td.l,th.l{text-align:left}figure{margin:1em "
        "0}.note{color:#a50}</style>\n</head>\n<body>\n"
        "<h1>comet report</h1>\n<p>Generated %s from <code>",
        now);
    html_escape(h, dir);
    fprintf(h, "</code> (%zu records).</p>\n", n);

    /* machine */
    fprintf(m, "## Machine\n\n");
    fprintf(h, "<h2>Machine</h2>\n<table>\n");
    if (machine) {
        char cachebuf[256] = "";
        size_t off = 0, i;
        json_t *c;
        json_array_foreach(json_object_get(machine, "caches"), i, c) off += (size_t)snprintf(
            cachebuf + off, sizeof cachebuf - off, "%sL%.0f %.0f KiB (shared by %.0f)",
            i ? ", " : "", jnum(c, "level"), jnum(c, "size") / 1024, jnum(c, "shared_by"));
        const char *keys[][2] = { { "host", jstr(machine, "hostname") },
            { "cpu", jstr(machine, "cpu_model") }, { "caches", cachebuf },
            { "BLAS", jstr(json_object_get(machine, "blas"), "config") },
            { "MPI", jstr(machine, "mpi") },
            { "PAPI", jstr(json_object_get(machine, "papi"), "status") } };
        fprintf(m,
            "| field | value |\n|---|---|\n| cores | %.0f (%.0f PUs, %.0f MHz) |\n| memory | %.1f "
            "GiB (%s) |\n",
            jnum(machine, "cores"), jnum(machine, "pus"), jnum(machine, "mhz"),
            jnum(machine, "memory_bytes") / 1073741824.0, jstr(machine, "memory_source"));
        fprintf(h, "<tr><th class=l>cores</th><td class=l>%.0f (%.0f PUs, %.0f MHz)</td></tr>\n",
            jnum(machine, "cores"), jnum(machine, "pus"), jnum(machine, "mhz"));
        for (size_t q = 0; q < sizeof keys / sizeof keys[0]; q++) {
            fprintf(m, "| %s | %s |\n", keys[q][0], keys[q][1]);
            fprintf(h, "<tr><th class=l>%s</th><td class=l>", keys[q][0]);
            html_escape(h, keys[q][1]);
            fprintf(h, "</td></tr>\n");
        }
    } else {
        fprintf(m, "No run record with a machine description.\n");
    }
    fprintf(h, "</table>\n");

    /* speedups */
    fprintf(m,
        "\n## Measured fused vs unfused\n\nSpeedup = unfused median / fused median; interval = "
        "[unfused CI low / fused CI high, unfused CI high / fused CI low] of the 95%% CIs of the "
        "medians.\n\n"
        "| op | shape | threads | fused ms | unfused ms | speedup | 95%% CI "
        "|\n|---|---|---|---|---|---|---|\n");
    fprintf(h,
        "<h2>Measured fused vs unfused</h2>\n<table><tr><th class=l>op</th><th "
        "class=l>shape</th><th>threads</th>"
        "<th>fused ms</th><th>unfused ms</th><th>speedup</th><th>95%% CI</th></tr>\n");
    for (size_t i = 0; i < nsp; i++) {
        fprintf(m, "| %s | %s | %d | %.3f | %.3f | %.2fx | %.2f-%.2f |\n", sp[i].op, sp[i].shape,
            sp[i].threads, sp[i].fused_s * 1e3, sp[i].unfused_s * 1e3, sp[i].speedup, sp[i].lo,
            sp[i].hi);
        fprintf(h,
            "<tr><td class=l>%s</td><td "
            "class=l>%s</td><td>%d</td><td>%.3f</td><td>%.3f</td><td>%.2fx</"
            "td><td>%.2f&ndash;%.2f</td></tr>\n",
            sp[i].op, sp[i].shape, sp[i].threads, sp[i].fused_s * 1e3, sp[i].unfused_s * 1e3,
            sp[i].speedup, sp[i].lo, sp[i].hi);
    }
    fprintf(h, "</table>\n");
    inline_svg(h, rdir, &p_sp);
    fprintf(m, "\n![speedups](speedups.svg)\n");

    /* validation */
    fprintf(m, "\n## Predicted vs measured (model error on this machine)\n\n");
    fprintf(h, "<h2>Predicted vs measured (model error on this machine)</h2>\n");
    if (val) {
        fprintf(m,
            "%d records: median relative error %.1f%%, p90 %.1f%%; predicted winner right in %d of "
            "%d shapes.\n\n"
            "| op | variant | n | median error | p90 error |\n|---|---|---|---|---|\n",
            (int)jnum(val, "records"), 100 * jnum(val, "median_rel_err"),
            100 * jnum(val, "p90_rel_err"), (int)jnum(val, "winner_agrees"),
            (int)jnum(val, "pairs"));
        fprintf(h,
            "<p>%d records: median relative error %.1f%%, p90 %.1f%%; predicted winner right in %d "
            "of %d shapes.</p>\n"
            "<table><tr><th class=l>op</th><th class=l>variant</th><th>n</th><th>median "
            "error</th><th>p90 error</th></tr>\n",
            (int)jnum(val, "records"), 100 * jnum(val, "median_rel_err"),
            100 * jnum(val, "p90_rel_err"), (int)jnum(val, "winner_agrees"),
            (int)jnum(val, "pairs"));
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(val, "groups"), i, x)
        {
            fprintf(m, "| %s | %s | %.0f | %.1f%% | %.1f%% |\n", jstr(x, "op"), jstr(x, "variant"),
                jnum(x, "n"), 100 * jnum(x, "median_rel_err"), 100 * jnum(x, "p90_rel_err"));
            fprintf(h,
                "<tr><td class=l>%s</td><td "
                "class=l>%s</td><td>%.0f</td><td>%.1f%%</td><td>%.1f%%</td></tr>\n",
                jstr(x, "op"), jstr(x, "variant"), jnum(x, "n"), 100 * jnum(x, "median_rel_err"),
                100 * jnum(x, "p90_rel_err"));
        }
        fprintf(h, "</table>\n");
    } else {
        fprintf(m, "No validation results (run `comet validate`).\n");
        fprintf(h, "<p class=note>No validation results (run comet validate).</p>\n");
    }
    inline_svg(h, rdir, &p_val);
    fprintf(m, "\n![validation](validation.svg)\n");

    fprintf(m,
        "\n## Roofline\n\nPeak: best measured sgemm %.1f GFLOP/s; bandwidth levels from the triad "
        "sweep.\n\n![roofline](roofline.svg)\n",
        peak);
    fprintf(h,
        "<h2>Roofline</h2>\n<p>Peak: best measured sgemm %.1f GFLOP/s; bandwidth levels from the "
        "triad sweep plateaus.</p>\n",
        peak);
    inline_svg(h, rdir, &p_roof);
    fprintf(m, "\n## Memory\n\n![memory](memory.svg)\n");
    fprintf(h, "<h2>Memory</h2>\n");
    inline_svg(h, rdir, &p_mem);
    fprintf(
        m, "\n## Collectives\n\n%s\n", p_coll.ok ? "![collectives](collectives.svg)" : p_coll.note);
    fprintf(h, "<h2>Collectives</h2>\n");
    inline_svg(h, rdir, &p_coll);

    /* predictions */
    fprintf(m,
        "\n## Scaled and accelerator predictions\n\n| hardware | op | shape | best fused | best "
        "unfused | speedup | fused energy uJ | unfused energy uJ | mappings | rate /s "
        "|\n|---|---|---|---|---|---|---|---|---|---|\n");
    fprintf(h,
        "<h2>Scaled and accelerator predictions</h2>\n<table><tr><th class=l>hardware</th><th "
        "class=l>op</th><th class=l>shape</th>"
        "<th>best fused</th><th>best unfused</th><th>speedup</th><th>fused energy "
        "uJ</th><th>unfused energy uJ</th><th>mappings</th><th>rate /s</th></tr>\n");
    {
        size_t i;
        json_t *p;
        json_array_foreach(preds, i, p)
        {
            const json_t *rf = json_object_get(json_object_get(p, "best_fused"), "result"),
                         *ru = json_object_get(json_object_get(p, "best_unfused"), "result");
            fprintf(m, "| %s | %s | %s | %.4g s | %.4g s | %.2fx | %.4g | %.4g | %.0f | %.3g |\n",
                jstr(p, "hw"), jstr(p, "op"), jstr(p, "shape"), jnum(rf, "seconds"),
                jnum(ru, "seconds"), jnum(p, "speedup"), jnum(rf, "energy_pj") * 1e-6,
                jnum(ru, "energy_pj") * 1e-6, jnum(p, "evaluated"), jnum(p, "mappings_per_second"));
            fprintf(h,
                "<tr><td class=l>%s</td><td class=l>%s</td><td class=l>%s</td><td>%.4g "
                "s</td><td>%.4g "
                "s</td><td>%.2fx</td><td>%.4g</td><td>%.4g</td><td>%.0f</td><td>%.3g</td></tr>\n",
                jstr(p, "hw"), jstr(p, "op"), jstr(p, "shape"), jnum(rf, "seconds"),
                jnum(ru, "seconds"), jnum(p, "speedup"), jnum(rf, "energy_pj") * 1e-6,
                jnum(ru, "energy_pj") * 1e-6, jnum(p, "evaluated"), jnum(p, "mappings_per_second"));
        }
    }
    fprintf(h, "</table>\n");

    /* fit quality and provenance */
    fprintf(m, "\n## Fit quality and provenance\n\n");
    fprintf(h, "<h2>Fit quality and provenance</h2>\n<pre>");
    if (profile) {
        char *cal = json_dumps(
            json_object_get(profile, "calibration"), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        fprintf(m, "```json\n%s\n```\n", cal ? cal : "{}");
        if (cal)
            html_escape(h, cal);
        free(cal);
    } else {
        fprintf(m, "No profile (run `comet calibrate`).\n");
        fprintf(h, "No profile (run comet calibrate).");
    }
    fprintf(h, "</pre>\n</body>\n</html>\n");
    snprintf(path, sizeof path, "%s/summary.md", rdir);
    rc = sb_save(&md, path, err, errlen);
    snprintf(path, sizeof path, "%s/index.html", rdir);
    if (rc == 0)
        rc = sb_save(&html, path, err, errlen);
    else {
        fclose(html.fp);
        free(html.p);
    }
    free(sp);
    json_decref(preds);
    json_decref(profile);
    json_decref(val);
out_recs:
    comet_bench_records_free(recs, n);
    return rc;
}
