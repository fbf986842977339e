/* Sections built from measurements alone: the machine, fused vs unfused
 * speedups, the roofline and the memory sweep. */
#include "reports_internal.h"

#include "comet_calibrate.h"
#include "comet_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Machine                                                            */
/* ------------------------------------------------------------------ */

static const char *yes(int flag)
{
    return flag ? "yes" : "no";
}

int rp_sec_machine(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    const comet_results_machine *m = c->in->machine_rec;
    rp_h2(d, "machine", "Machine");
    rp_p(d,
        "As probed (hwloc, /proc, BLAS and MPI identity, PAPI add-and-start test) by the run "
        "that recorded the results.");
    rp_table(d, "ll", "field\tvalue");
    rp_row(d, "host\t%s (machine id %s)", rp_cell(m->hostname), rp_cell(m->id));
    rp_row(d, "CPU\t%s, %.0f MHz", rp_cell(m->cpu_model), m->mhz);
    rp_row(d, "cores\t%.0f cores, %.0f hardware threads, %.0f package(s), %.0f NUMA node(s)",
        m->cores, m->pus, m->packages, m->numa_nodes);
    {
        char buf[512] = "";
        size_t off = 0;
        for (size_t i = 0; i < m->ncaches; i++) {
            const comet_results_cache *x = &m->caches[i];
            if (off < sizeof buf)
                off += (size_t)snprintf(buf + off, sizeof buf - off, "%sL%d %s %.0f KiB x%.0f",
                    i ? ", " : "", x->level, x->type, x->size / 1024, x->count);
        }
        rp_row(d, "caches\t%s", buf[0] ? buf : "(not reported)");
    }
    rp_row(d, "memory\t%.1f GiB (source: %s)%s%s", m->memory_bytes / 1073741824.0, m->memory_source,
        m->memory_note[0] ? "; " : "", m->memory_note);
    rp_row(d, "ISA\tAVX %s, AVX2 %s, FMA %s, AVX-512F %s", yes(m->avx), yes(m->avx2), yes(m->fma),
        yes(m->avx512f));
    rp_row(d, "BLAS\t%s (%.0f threads)", rp_cell(m->blas_config), m->blas_threads);
    rp_row(d, "MPI\t%s", rp_cell(m->mpi));
    rp_row(d, "compiler\t%s", rp_cell(m->compiler));
    rp_row(d, "PAPI\t%s%s%s", rp_cell(m->papi_version), m->papi_status[0] ? ": " : "",
        rp_cell(m->papi_status));
    rp_table_end(d);
    /* what was measured, and under what load */
    rp_table(d, "llrll", "results file\tbench\trecords\trun id\tnote");
    for (size_t i = 0; i < c->in->nfiles; i++) {
        const rp_file *f = &c->in->files[i];
        const char *base = strrchr(f->path, '/');
        char note[600];
        if (f->complete)
            snprintf(note, sizeof note, "complete%s%s", f->warning[0] ? "; " : "", f->warning);
        else
            snprintf(note, sizeof note,
                "PARTIAL: %s; measured up to %s, the configurations after it were not measured%s%s",
                f->torn ? "its writer was interrupted (torn last line)"
                        : "no completion mark (interrupted, or its bench did not finish)",
                f->last[0] ? f->last : "nothing", f->warning[0] ? "; " : "", f->warning);
        rp_row(d, "%s\t%s\t%zu\t%s\t%s", rp_cell(base ? base + 1 : f->path), rp_cell(f->kind),
            f->records, rp_cell(f->run_id), rp_cell(note));
    }
    rp_table_end(d);
    /* what is missing: partial files, and benches with no results at all */
    {
        static const char *const kinds[] = { "memory", "kernels", "collectives" };
        char missing[128] = "";
        int partial = 0;
        for (size_t i = 0; i < c->in->nfiles; i++)
            partial += !c->in->files[i].complete;
        for (int k = 0; k < 3; k++) {
            int have = 0;
            for (size_t i = 0; i < c->in->nfiles; i++)
                have |= !strcmp(c->in->files[i].kind, kinds[k]);
            if (!have)
                snprintf(missing + strlen(missing), sizeof missing - strlen(missing), "%s%s",
                    missing[0] ? ", " : "", kinds[k]);
        }
        if (partial || missing[0])
            rp_note(d,
                "These results are incomplete: %d results file(s) are partial (see the note "
                "column: where each stopped)%s%s. Figures and fits below use what was measured; "
                "re-run 'comet run' (or the bench named) to complete them.",
                partial, missing[0] ? "; no results at all for: " : "", missing);
    }
    {
        double *busy = malloc((c->in->n + 1) * sizeof *busy);
        size_t nb = 0, timeouts = 0;
        for (size_t i = 0; busy && i < c->in->n; i++) {
            const comet_results_gate *l = &c->in->recs[i].load;
            double b = l->busy_others;
            if (isfinite(b))
                busy[nb++] = b;
            if (l->gate && !strcmp(l->gate, "timeout"))
                timeouts++;
        }
        if (nb)
            rp_p(d,
                "Load from other tenants before each sample set (idle gate, /proc/stat): median "
                "%.1f%%, 90th percentile %.1f%% of the machine; the gate timed out (measured "
                "anyway) for %zu of %zu sample sets.",
                100 * rp_median(busy, nb), 100 * comet_util_quantile(busy, nb, 0.9), timeouts, nb);
        free(busy);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Speedups                                                           */
/* ------------------------------------------------------------------ */

const char *const comet_reports_baseline_variant[COMET_REPORTS_NBASELINES]
    = { "unfused_same_gemm", "unfused", "onednn" };

/* The first record of variant v of f's op, shape and threads, or NULL. */
static const comet_results_record *case_record(
    const comet_results_record *recs, size_t n, const comet_results_record *f, const char *v)
{
    for (size_t j = 0; j < n; j++) {
        const comet_results_record *u = &recs[j];
        if (u->kind == COMET_RESULTS_KERNEL && !strcmp(u->variant, v) && !strcmp(u->op, f->op)
            && u->threads == f->threads && !strcmp(u->shape.text, f->shape.text))
            return u;
    }
    return NULL;
}

/* Baseline median / fused median, with the worst and best pairing of the
 * two CIs (see the header); 0 when either median is missing. */
static int ratio_of(
    const comet_results_record *f, const comet_results_record *u, comet_reports_ratio *r)
{
    const comet_results_stats *sf = &f->stats, *su = &u->stats;
    double fs = sf->median_s, us = su->median_s;
    memset(r, 0, sizeof *r);
    if (!(fs > 0 && us > 0))
        return 0;
    r->base_s = us;
    r->speedup = us / fs;
    r->lo = su->ci_lo_s / sf->ci_hi_s;
    r->hi = su->ci_hi_s / sf->ci_lo_s;
    double lf = sf->ci_level, lu = su->ci_level;
    if (!isfinite(lf))
        lf = 0.95;
    if (!isfinite(lu))
        lu = 0.95;
    r->coverage = fmax(0, 1 - (1 - lf) - (1 - lu));
    return 1;
}

size_t comet_reports_speedups(
    const comet_results_record *recs, size_t n, comet_reports_speedup *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k < cap; i++) {
        const comet_results_record *f = &recs[i];
        /* the compound ops only: gms records name their dataflows "fused" and
         * "unfused" too (their own section compares them) */
        if (f->kind != COMET_RESULTS_KERNEL || strcmp(f->variant, "fused") || !strcmp(f->op, "gms")
            || !strcmp(f->op, "sgemm")
            || case_record(recs, i, f, "fused")) /* a later fused record: a tile sweep */
            continue;
        comet_reports_speedup *s = &out[k];
        memset(s, 0, sizeof *s);
        int any = 0;
        for (int b = 0; b < COMET_REPORTS_NBASELINES; b++) {
            const comet_results_record *u
                = case_record(recs, n, f, comet_reports_baseline_variant[b]);
            any += u && ratio_of(f, u, &s->vs[b]);
        }
        if (!any)
            continue;
        snprintf(s->op, sizeof s->op, "%s", f->op);
        comet_results_shape_str(&f->shape, s->shape, sizeof s->shape);
        s->threads = f->threads;
        s->flops = f->flops;
        s->fused_s = f->stats.median_s;
        const comet_reports_ratio *bl = &s->vs[COMET_REPORTS_VS_BLAS];
        s->unfused_s = bl->base_s;
        s->speedup = bl->speedup;
        s->lo = bl->lo;
        s->hi = bl->hi;
        s->coverage = bl->coverage;
        k++;
    }
    return k;
}

/* "1.23x (1.10-1.40)" or "n/a" (baseline not measured). */
static const char *ratio_cell(const comet_reports_ratio *r, char *buf, size_t len)
{
    if (!(r->base_s > 0))
        return "n/a";
    snprintf(buf, len, "%.2fx (%.2f-%.2f)", r->speedup, r->lo, r->hi);
    return buf;
}

static const char *ms_cell(double s, char *buf, size_t len)
{
    if (!(s > 0))
        return "n/a";
    snprintf(buf, len, "%.3f", s * 1e3);
    return buf;
}

static json_t *ratio_json(const comet_reports_ratio *r, const char *variant)
{
    if (!(r->base_s > 0))
        return json_null();
    return json_pack("{s:s,s:f,s:f,s:f,s:f,s:f}", "variant", variant, "base_s", r->base_s,
        "speedup", r->speedup, "ci_lo", r->lo, "ci_hi", r->hi, "coverage_at_least", r->coverage);
}

/* NaN for gnuplot (a missing point) when the baseline was not measured. */
static void csv_ratio(FILE *fp, const comet_reports_ratio *r)
{
    if (r->base_s > 0)
        fprintf(fp, ",%.6g,%.5g,%.5g,%.5g", r->base_s * 1e3, r->speedup, r->lo, r->hi);
    else
        fprintf(fp, ",NaN,NaN,NaN,NaN");
}

int rp_sec_speedups(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    comet_reports_speedup *sp = calloc(in->n + 1, sizeof *sp);
    if (!sp)
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    size_t nsp = comet_reports_speedups(in->recs, in->n, sp, in->n);
    rp_h2(d, "speedups", "Measured fused vs unfused: three speedups");
    rp_p(d,
        "Each speedup = a baseline's median time / the fused kernel's median time, same op, "
        "shape and thread count, measured interleaved in one run. Three baselines: the "
        "**fusion effect** compares with the same GEMM engine unfused (variant "
        "unfused_same_gemm: the fused kernel's own micro-kernel, packing, row blocks and "
        "threads, writing the whole intermediate, then the same row passes), so it measures "
        "what fusion alone buys; **vs BLAS** compares with OpenBLAS's GEMM followed by the "
        "passes (variant unfused, what a framework runs); **vs oneDNN** with oneDNN's matmul "
        "followed by its softmax or layer_normalization primitive (variant onednn, where "
        "oneDNN was found at build time). Intervals: [baseline CI low / fused CI high, "
        "baseline CI high / fused CI low] from the distribution-free 95%% confidence "
        "intervals of the two medians; if both intervals hold, the ratio of the true medians "
        "lies inside, so its coverage is at least the stated Bonferroni bound. An interval "
        "that contains 1 means no measurable difference; n/a: that baseline was not measured.");
    if (!nsp) {
        rp_note(d,
            "No fused kernel with a measured baseline in the results (bench kernels did not "
            "run or measured only sgemm).");
        free(sp);
        return 0;
    }
    rp_table(d, "llrrrlrlrlr",
        "op\tshape\tthreads\tfused ms\tsame-GEMM ms\tfusion effect\tBLAS ms\tvs BLAS\toneDNN "
        "ms\tvs oneDNN\tcoverage >=");
    rp_buf csv;
    json_t *ja = json_array();
    if (rp_buf_open(&csv) || !ja) {
        json_decref(ja);
        free(sp);
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    }
    fprintf(csv.fp,
        "idx,label,op,shape,threads,fused_ms,unfused_ms,speedup,ci_lo,ci_hi,coverage,"
        "fused_gflops,unfused_gflops,same_gemm_ms,fusion_effect,fe_lo,fe_hi,onednn_ms,"
        "vs_onednn,od_lo,od_hi\n");
    int wins[COMET_REPORTS_NBASELINES] = { 0 }, losses[COMET_REPORTS_NBASELINES] = { 0 },
        cases[COMET_REPORTS_NBASELINES] = { 0 };
    for (size_t i = 0; i < nsp; i++) {
        const comet_reports_speedup *s = &sp[i];
        const comet_reports_ratio *fe = &s->vs[COMET_REPORTS_VS_SAME_GEMM],
                                  *bl = &s->vs[COMET_REPORTS_VS_BLAS],
                                  *od = &s->vs[COMET_REPORTS_VS_ONEDNN];
        char b[6][48];
        double cov = 1;
        for (int k = 0; k < COMET_REPORTS_NBASELINES; k++)
            if (s->vs[k].base_s > 0) {
                cov = fmin(cov, s->vs[k].coverage);
                cases[k]++;
                wins[k] += s->vs[k].lo > 1;
                losses[k] += s->vs[k].hi < 1;
            }
        rp_row(d, "%s\t%s\t%d\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f%%", s->op, s->shape, s->threads,
            s->fused_s * 1e3, ms_cell(fe->base_s, b[0], sizeof b[0]),
            ratio_cell(fe, b[1], sizeof b[1]), ms_cell(bl->base_s, b[2], sizeof b[2]),
            ratio_cell(bl, b[3], sizeof b[3]), ms_cell(od->base_s, b[4], sizeof b[4]),
            ratio_cell(od, b[5], sizeof b[5]), 100 * cov);
        char label[128];
        snprintf(label, sizeof label, "%s %s T%d", s->op, s->shape, s->threads);
        fprintf(csv.fp, "%zu,", i);
        rp_csv_field(csv.fp, label);
        fprintf(csv.fp, ",%s,", s->op);
        rp_csv_field(csv.fp, s->shape);
        if (bl->base_s > 0)
            fprintf(csv.fp, ",%d,%.6g,%.6g,%.5g,%.5g,%.5g,%.4g,%.5g,%.5g", s->threads,
                s->fused_s * 1e3, bl->base_s * 1e3, bl->speedup, bl->lo, bl->hi, bl->coverage,
                s->flops / s->fused_s * 1e-9, s->flops / bl->base_s * 1e-9);
        else
            fprintf(csv.fp, ",%d,%.6g,NaN,NaN,NaN,NaN,NaN,%.5g,NaN", s->threads, s->fused_s * 1e3,
                s->flops / s->fused_s * 1e-9);
        csv_ratio(csv.fp, fe);
        csv_ratio(csv.fp, od);
        fputc('\n', csv.fp);
        json_t *o = json_pack("{s:s,s:s,s:i,s:f,s:o,s:o,s:o}", "op", s->op, "shape", s->shape,
            "threads", s->threads, "fused_s", s->fused_s, "fusion_effect",
            ratio_json(fe, comet_reports_baseline_variant[COMET_REPORTS_VS_SAME_GEMM]), "vs_blas",
            ratio_json(bl, comet_reports_baseline_variant[COMET_REPORTS_VS_BLAS]), "vs_onednn",
            ratio_json(od, comet_reports_baseline_variant[COMET_REPORTS_VS_ONEDNN]));
        if (bl->base_s > 0) { /* the BLAS pair's fields, as the figure had them before */
            json_t *old = json_pack("{s:f,s:f,s:f,s:f,s:f}", "unfused_s", bl->base_s, "speedup",
                bl->speedup, "ci_lo", bl->lo, "ci_hi", bl->hi, "coverage_at_least", bl->coverage);
            json_object_update(o, old);
            json_decref(old);
        }
        json_array_append_new(ja, o);
    }
    rp_table_end(d);
    static const char *const what[COMET_REPORTS_NBASELINES]
        = { "the fusion effect (same GEMM engine)", "fused vs the BLAS baseline",
              "fused vs oneDNN" };
    for (int k = 0; k < COMET_REPORTS_NBASELINES; k++) {
        if (!cases[k]) {
            rp_p(d, "%c%s: not measured (no %s records).", toupper((unsigned char)what[k][0]),
                what[k] + 1, comet_reports_baseline_variant[k]);
            continue;
        }
        rp_p(d,
            "%c%s: faster beyond doubt (interval above 1) in %d of %d cases, slower beyond "
            "doubt in %d, indistinguishable in %d.",
            toupper((unsigned char)what[k][0]), what[k] + 1, wins[k], cases[k], losses[k],
            cases[k] - wins[k] - losses[k]);
    }
    rp_buf_close(&csv);
    rp_plot p;
    rp_plot_init(&p, "speedups",
        "Measured speedups of the fused kernel per op, shape and threads: over the same GEMM "
        "engine unfused (the fusion effect), over the BLAS baseline and over oneDNN; bars: "
        "median ratio, whiskers: interval from the medians' 95% CIs.");
    if (rp_plot_data(c, &p, csv.p,
            json_pack("{s:s,s:o}", "method",
                "speedup = baseline median / fused median; interval = "
                "[b_lo/f_hi, b_hi/f_lo] of the medians' 95% CIs; baselines: "
                "unfused_same_gemm (fusion effect), unfused (BLAS), onednn",
                "cases", ja))
        == 0) {
        char script[2048];
        snprintf(script, sizeof script,
            "set ylabel 'speedup (baseline time / fused time, x)'\n"
            "set xlabel 'case: op, shape, threads T'\n"
            "set xtics rotate by -40 left font ',12' noenhanced\n"
            "set bmargin 12\nset yrange [0:*]\nset xrange [-0.6:%zu.6]\n"
            "set style fill solid 0.45 border\nset boxwidth 0.26\n"
            "plot 'speedups.csv' every ::1 using ($1-0.27):15:xtic(2) with boxes lc rgb "
            "'#55a868' title 'fusion effect (same GEMM)', \\\n"
            "  '' every ::1 using ($1-0.27):15:16:17 with yerrorbars pt 0 lc rgb 'black' "
            "notitle, \\\n"
            "  '' every ::1 using 1:8 with boxes lc rgb '#4c72b0' title 'vs BLAS', \\\n"
            "  '' every ::1 using 1:8:9:10 with yerrorbars pt 0 lc rgb 'black' notitle, \\\n"
            "  '' every ::1 using ($1+0.27):19 with boxes lc rgb '#dd8452' title 'vs oneDNN', "
            "\\\n"
            "  '' every ::1 using ($1+0.27):19:20:21 with yerrorbars pt 0 lc rgb 'black' "
            "title 'interval from 95%% CIs', \\\n"
            "  1 with lines dt 2 lw 1.5 lc rgb '#c44e52' title 'no speedup (1x)'\n",
            nsp - 1);
        rp_plot_draw(c, &p, script);
    }
    rp_figure(c, &p);
    rp_buf_free(&csv);
    free(sp);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Roofline and memory                                                */
/* ------------------------------------------------------------------ */

/* Name of the memory level a working set of `bytes` (all threads) lives in. */
static void level_name(
    const comet_results_machine *m, double bytes, int threads, char *buf, size_t len)
{
    for (size_t i = 0; i < m->ncaches; i++) {
        const comet_results_cache *x = &m->caches[i];
        double size = x->size, shared = x->shared_by;
        /* capacity seen by `threads` threads: private caches add up */
        double cap = shared > 0 && shared < threads ? size * threads / shared : size;
        if (bytes <= cap) {
            snprintf(buf, len, "L%d", x->level);
            return;
        }
    }
    snprintf(buf, len, "DRAM");
}

typedef struct sweep {
    double bytes[64], gbs[64];
    size_t n;
} sweep;

/* The median-of-records bandwidth per working set of one memory op and thread count. */
static void collect_sweep(const rp_inputs *in, const char *op, int threads, sweep *s)
{
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < in->n && s->n < 64; i++) {
        const comet_results_record *r = &in->recs[i];
        if (r->kind != COMET_RESULTS_MEMORY || strcmp(r->op, op) || r->threads != threads)
            continue;
        double b = r->shape.bytes, g = r->gbs;
        if (!(b > 0 && g > 0))
            continue;
        /* insertion sort by size; a repeated size keeps the later run */
        size_t k = 0;
        while (k < s->n && s->bytes[k] < b)
            k++;
        if (k < s->n && s->bytes[k] == b) {
            s->gbs[k] = g;
            continue;
        }
        memmove(s->bytes + k + 1, s->bytes + k, (s->n - k) * sizeof(double));
        memmove(s->gbs + k + 1, s->gbs + k, (s->n - k) * sizeof(double));
        s->bytes[k] = b;
        s->gbs[k] = g;
        s->n++;
    }
}

static int max_threads(const rp_inputs *in, comet_results_kind kind, const char *op)
{
    int t = 0;
    for (size_t i = 0; i < in->n; i++)
        if (in->recs[i].kind == kind && (!op || !strcmp(in->recs[i].op, op))
            && in->recs[i].threads > t)
            t = in->recs[i].threads;
    return t;
}

int rp_sec_roofline(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "roofline", "Roofline of this machine");
    int T = max_threads(in, COMET_RESULTS_KERNEL, "sgemm");
    double peak = 0, peak1 = 0;
    char peak_shape[64] = "";
    for (size_t i = 0; i < in->n; i++) {
        const comet_results_record *r = &in->recs[i];
        if (r->kind != COMET_RESULTS_KERNEL || strcmp(r->op, "sgemm"))
            continue;
        double g = r->gflops;
        if (r->threads == T && g > peak) {
            peak = g;
            comet_results_shape_str(&r->shape, peak_shape, sizeof peak_shape);
        }
        if (r->threads == 1 && g > peak1)
            peak1 = g;
    }
    int TM = max_threads(in, COMET_RESULTS_MEMORY, "triad");
    sweep s;
    collect_sweep(in, "triad", TM, &s);
    comet_calibrate_plateau lv[8];
    int nl = s.n ? comet_calibrate_plateaus(s.bytes, s.gbs, s.n, lv, 8) : 0;
    if (!(peak > 0) || nl <= 0) {
        rp_note(d,
            "No roofline: it needs sgemm records (bench kernels) and a triad sweep (bench "
            "memory).");
        return 0;
    }
    rp_p(d,
        "Compute ceiling: the best measured sgemm, %.1f GFLOP/s on %d thread(s) (%s; %.1f GFLOP/s "
        "on 1 thread). Bandwidth ceilings: the plateaus of the %d-thread triad sweep (ERT rule: a "
        "new level at a >= 1.25x drop, a level's bandwidth the median of its points within +-5%%). "
        "Kernels are placed at their analytic intensity (FLOPs / compulsory bytes) and measured "
        "GFLOP/s (median).",
        peak, T, peak_shape, peak1, TM);
    rp_table(d, "lrrr", "level\tbandwidth GB/s\tworking sets\tridge point FLOP/byte");
    json_t *jl = json_array();
    char names[8][16];
    for (int q = 0; q < nl; q++) {
        level_name(in->machine_rec, lv[q].to_bytes, TM, names[q], sizeof names[q]);
        rp_row(d, "%s\t%.1f\t%.0f KiB - %.0f KiB\t%.2f", names[q], lv[q].gbs,
            lv[q].from_bytes / 1024, lv[q].to_bytes / 1024, peak / lv[q].gbs);
        json_array_append_new(jl,
            json_pack("{s:s,s:f,s:f,s:f,s:i}", "level", names[q], "gbs", lv[q].gbs, "from_bytes",
                lv[q].from_bytes, "to_bytes", lv[q].to_bytes, "points", (int)lv[q].points));
    }
    rp_table_end(d);

    rp_buf csv;
    json_t *jk = json_array();
    if (rp_buf_open(&csv))
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    fprintf(csv.fp, "series,op,variant,shape,threads,intensity_flop_per_byte,gflops\n");
    size_t nk = 0;
    for (size_t i = 0; i < in->n; i++) {
        const comet_results_record *r = &in->recs[i];
        if (r->kind != COMET_RESULTS_KERNEL)
            continue;
        double fl = r->flops, by = r->bytes, gf = r->gflops;
        if (!(fl > 0 && by > 0 && gf > 0))
            continue;
        const char *op = r->op, *var = r->variant;
        char series[64], shape[64];
        if (!strcmp(op, "sgemm"))
            snprintf(series, sizeof series, "sgemm");
        else
            snprintf(series, sizeof series, "%s", var);
        comet_results_shape_str(&r->shape, shape, sizeof shape);
        fprintf(csv.fp, "%s,%s,%s,", series, op, var);
        rp_csv_field(csv.fp, shape);
        fprintf(csv.fp, ",%d,%.6g,%.6g\n", r->threads, fl / by, gf);
        json_array_append_new(jk,
            json_pack("{s:s,s:s,s:s,s:i,s:f,s:f}", "op", op, "variant", var, "shape", shape,
                "threads", r->threads, "intensity", fl / by, "gflops", gf));
        nk++;
    }
    rp_buf_close(&csv);
    rp_plot p;
    rp_plot_init(&p, "roofline",
        "Roofline: measured compute peak (sgemm) and bandwidth per memory level (triad plateaus), "
        "with the measured kernels at their compulsory-traffic intensity.");
    json_t *meta = json_pack("{s:f,s:i,s:f,s:o,s:o}", "peak_gflops", peak, "peak_threads", T,
        "peak_gflops_1thread", peak1, "levels", jl, "kernels", jk);
    if (rp_plot_data(c, &p, csv.p, meta) == 0) {
        rp_buf sc;
        if (rp_buf_open(&sc) == 0) {
            fprintf(sc.fp,
                "set logscale xy\nset xlabel 'arithmetic intensity (FLOP/byte of compulsory "
                "DRAM traffic)'\n"
                "set ylabel 'performance (GFLOP/s)'\nset xrange [0.05:2000]\n"
                "set yrange [%g:%g]\nset samples 500\nset key font ',12'\n"
                "plot ",
                fmin(1, peak / 1000), peak * 2.5);
            static const char *const colors[] = { "#1b9e77", "#d95f02", "#7570b3", "#e7298a",
                "#66a61e", "#e6ab02", "#a6761d", "#666666" };
            for (int q = 0; q < nl; q++)
                fprintf(sc.fp,
                    "(x*%g < %g ? x*%g : 1/0) with lines lw 2 lc rgb '%s' title '%s %.0f GB/s', "
                    "\\\n  ",
                    lv[q].gbs, peak, lv[q].gbs, colors[q % 8], names[q], lv[q].gbs);
            fprintf(sc.fp,
                "%g with lines lw 2 lc rgb 'black' title 'peak sgemm %.0f GFLOP/s (%d thr)', \\\n"
                "  %s"
                "'roofline.csv' every ::1 using (strcol(1) eq 'fused' ? $6 : 1/0):7 with points "
                "pt 7 ps 1.2 lc rgb '#c44e52' title 'fused kernels', \\\n"
                "  '' every ::1 using (strcol(1) eq 'unfused' ? $6 : 1/0):7 with points pt 5 ps "
                "1.1 lc rgb '#4c72b0' title 'unfused kernels', \\\n"
                "  '' every ::1 using (strcol(1) eq 'sgemm' ? $6 : 1/0):7 with points pt 1 ps 1 lc "
                "rgb '#777777' title 'sgemm'\n",
                peak, peak, T, "");
            (void)nk;
            rp_buf_close(&sc);
            rp_plot_draw(c, &p, sc.p);
            rp_buf_free(&sc);
        }
    }
    rp_figure(c, &p);
    rp_buf_free(&csv);
    return 0;
}

int rp_sec_memory(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "memory", "Memory bandwidth by working set");
    static const char *const ops[] = { "read", "copy", "triad" };
    int tmax = max_threads(in, COMET_RESULTS_MEMORY, NULL);
    rp_buf csv;
    json_t *ja = json_array();
    if (rp_buf_open(&csv))
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    fprintf(csv.fp, "series,op,threads,working_set_bytes,gbs,plateau_gbs\n");
    char series[8][32];
    double ws_lo = INFINITY, ws_hi = 0;
    int ns = 0;
    rp_table(d, "lrl", "sweep\tthreads\tplateaus (GB/s over working sets)");
    for (int o = 0; o < 3 && ns < 8; o++)
        for (int t = 1; t <= tmax && ns < 8; t = t == tmax ? tmax + 1 : tmax) {
            sweep s;
            collect_sweep(in, ops[o], t, &s);
            if (!s.n)
                continue;
            comet_calibrate_plateau lv[8];
            int nl = comet_calibrate_plateaus(s.bytes, s.gbs, s.n, lv, 8);
            snprintf(series[ns], sizeof series[ns], "%s %dT", ops[o], t);
            char desc[512] = "";
            size_t off = 0;
            for (int q = 0; q < nl && off < sizeof desc; q++)
                off += (size_t)snprintf(desc + off, sizeof desc - off, "%s%.1f (%.0f-%.0f KiB)",
                    q ? ", " : "", lv[q].gbs, lv[q].from_bytes / 1024, lv[q].to_bytes / 1024);
            rp_row(d, "%s\t%d\t%s", ops[o], t, desc);
            json_t *pts = json_array();
            for (size_t i = 0; i < s.n; i++) {
                double pl = nl > 0 ? comet_calibrate_plateau_predict(lv, nl, s.bytes[i]) : NAN;
                fprintf(csv.fp, "%s,%s,%d,%.0f,%.5g,%.5g\n", series[ns], ops[o], t, s.bytes[i],
                    s.gbs[i], pl);
                ws_lo = fmin(ws_lo, s.bytes[i]);
                ws_hi = fmax(ws_hi, s.bytes[i]);
                json_array_append_new(pts,
                    json_pack("{s:f,s:f,s:f}", "bytes", s.bytes[i], "gbs", s.gbs[i], "plateau_gbs",
                        isfinite(pl) ? pl : 0.0));
            }
            json_array_append_new(
                ja, json_pack("{s:s,s:i,s:o}", "op", ops[o], "threads", t, "points", pts));
            ns++;
        }
    rp_table_end(d);
    rp_buf_close(&csv);
    rp_plot p;
    rp_plot_init(&p, "memory",
        "Measured bandwidth (points) against working set per memory op and thread count, with "
        "the fitted plateau levels (lines).");
    if (!ns) {
        snprintf(p.why, sizeof p.why, "no memory records (bench memory did not run)");
        rp_note(d, "No memory sweep in the results.");
        json_decref(ja);
    } else if (rp_plot_data(c, &p, csv.p, json_pack("{s:o}", "sweeps", ja)) == 0) {
        rp_buf sc;
        if (rp_buf_open(&sc) == 0) {
            fprintf(sc.fp,
                "set logscale y\n"
                "set xlabel 'working set (all arrays)'\nset ylabel 'bandwidth (GB/s)'\n"
                "set key font ',12'\n");
            rp_binary_xtics(sc.fp, ws_lo, ws_hi);
            fputs("plot ", sc.fp);
            for (int i = 0; i < ns; i++)
                fprintf(sc.fp,
                    "%s'memory.csv' every ::1 using (strcol(1) eq '%s' ? $4 : 1/0):5 with points "
                    "pt %d lc %d title '%s measured', \\\n"
                    "  '' every ::1 using (strcol(1) eq '%s' ? $4 : 1/0):6 with lines lc %d "
                    "title '%s plateaus'",
                    i ? ", \\\n  " : "", series[i], 5 + 2 * (i % 3), i + 1, series[i], series[i],
                    i + 1, series[i]);
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
