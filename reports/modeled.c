/* Sections that join the model with the measurements: predicted vs measured
 * on this machine, the scaled-system and accelerator predictions, and the
 * calibration's fit quality and provenance. */
#include "reports_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Predicted vs measured                                              */
/* ------------------------------------------------------------------ */

static void vshape(const comet_model_vrow *r, char *buf, size_t len)
{
    /* the row's M, N, K are the op's own keys by its shape class */
    comet_model_op op;
    const comet_model_opdesc *d
        = comet_model_op_parse(r->op, &op) == 0 ? comet_model_op_desc(op) : NULL;
    if (d && d->shape == COMET_MODEL_SHAPE_ATTENTION)
        snprintf(buf, len, "Lq=%.0f Lk=%.0f d=%.0f", r->M, r->N, r->K);
    else
        snprintf(buf, len, "M=%.0f N=%.0f K=%.0f", r->M, r->N, r->K);
}

int rp_sec_validation(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "validation", "Predicted vs measured on this machine");
    if (!in->have_hw) {
        rp_note(d,
            "No calibrated profile (%s), so the model cannot be checked here; run 'comet "
            "calibrate' (or 'comet run').",
            in->profile_note);
        return 0;
    }
    comet_model_vrow *rows = calloc(in->n + 1, sizeof *rows);
    if (!rows)
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    int nr = comet_model_validate_records(&in->hw, in->recs, in->n, rows, in->n);
    if (nr <= 0) {
        rp_note(d, "No compound-kernel records to predict (bench kernels did not run).");
        free(rows);
        return 0;
    }
    /* the figures validate prints: one summary, one quantile convention */
    comet_model_vsum vs;
    comet_model_validate_summary(rows, nr, &vs);
    const double med = vs.median_rel_err, p90 = vs.p90_rel_err;
    const int pairs = vs.pairs, agree = vs.winner_agrees;
    rp_p(d,
        "The model predicts each measured compound-kernel record from the calibrated profile with "
        "the mapping the kernel ran (comet_model_validate_records). Relative error = |predicted "
        "- measured| / measured of the median time. Over %d records: median error %.1f%%, "
        "90th percentile %.1f%%. Bias = median of predicted / measured - 1 (positive: the model "
        "is pessimistic). The predicted winner (the fused kernel at its default tiles against the "
        "unfused one) is the measured one in %d of the %d shapes whose measured medians' 95%% CIs "
        "are apart (a clear measured winner), and in %d of %d shapes in all (the others are ties "
        "at this machine's noise). Counting every tile-sweep point as a pair of its own: %d of "
        "%d clear pairs, %d of %d in all.",
        nr, 100 * med, 100 * p90, vs.shape_decided_agrees, vs.shape_decided, vs.shape_agrees,
        vs.shapes, vs.decided_agrees, vs.decided, agree, pairs);
    if (vs.busy_rows > 0)
        rp_p(d,
            "%d of the %d records sampled while other tenants kept the machine over %.0f%% busy "
            "(the idle gate timed out): their medians are the neighbours' as much as this "
            "machine's. Over the other %d records: median error %.1f%%, 90th percentile %.1f%%.",
            vs.busy_rows, nr, 100 * COMET_RESULTS_BUSY_MAX, nr - vs.busy_rows,
            100 * vs.quiet_median_rel_err, 100 * vs.quiet_p90_rel_err);
    rp_table(d, "llrrrr", "op\tvariant\trecords\tmedian error\tp90 error\tbias");
    json_t *groups = json_array();
    comet_model_vgroup vg[32];
    const int ng = comet_model_validate_groups(rows, nr, vg, 32);
    for (int k = 0; k < ng; k++) {
        rp_row(d, "%s\t%s\t%d\t%.1f%%\t%.1f%%\t%+.1f%%", vg[k].op, vg[k].variant, vg[k].n,
            100 * vg[k].median_rel_err, 100 * vg[k].p90_rel_err, 100 * vg[k].bias);
        json_array_append_new(groups,
            json_pack("{s:s,s:s,s:i,s:f,s:f,s:f}", "op", vg[k].op, "variant", vg[k].variant, "n",
                vg[k].n, "median_rel_err", vg[k].median_rel_err, "p90_rel_err", vg[k].p90_rel_err,
                "bias", vg[k].bias));
    }
    rp_table_end(d);

    rp_buf csv;
    json_t *jr = json_array();
    if (rp_buf_open(&csv)) {
        json_decref(jr);
        json_decref(groups);
        free(rows);
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    }
    fprintf(csv.fp, "series,op,variant,shape,threads,ranks,measured_ms,predicted_ms,rel_err\n");
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < nr; i++) {
        char sh[64];
        vshape(&rows[i], sh, sizeof sh);
        fprintf(csv.fp, "%s/%s,%s,%s,%s,%d,%d,%.6g,%.6g,%.5f\n", rows[i].op, rows[i].variant,
            rows[i].op, rows[i].variant, sh, rows[i].threads, rows[i].ranks,
            rows[i].measured_s * 1e3, rows[i].predicted_s * 1e3, rows[i].rel_err);
        json_array_append_new(jr,
            json_pack("{s:s,s:s,s:s,s:i,s:i,s:f,s:f,s:f}", "op", rows[i].op, "variant",
                rows[i].variant, "shape", sh, "threads", rows[i].threads, "ranks", rows[i].ranks,
                "measured_s", rows[i].measured_s, "predicted_s", rows[i].predicted_s, "rel_err",
                rows[i].rel_err));
        lo = fmin(lo, fmin(rows[i].measured_s, rows[i].predicted_s) * 1e3);
        hi = fmax(hi, fmax(rows[i].measured_s, rows[i].predicted_s) * 1e3);
    }
    rp_buf_close(&csv);
    rp_plot p;
    char cap[240];
    snprintf(cap, sizeof cap,
        "Predicted vs measured median time of every compound-kernel record; shaded band: the "
        "median relative error (+-%.0f%%) around predicted = measured.",
        100 * med);
    rp_plot_init(&p, "validation", cap);
    if (rp_plot_data(c, &p, csv.p,
            json_pack("{s:i,s:f,s:f,s:i,s:i,s:i,s:i,s:{s:i,s:i,s:i,s:i},s:o,s:o}", "records", nr,
                "median_rel_err", med, "p90_rel_err", p90, "winner_agrees", agree, "pairs", pairs,
                "clear_pairs", vs.decided, "clear_winner_agrees", vs.decided_agrees, "shapes",
                "pairs", vs.shapes, "winner_agrees", vs.shape_agrees, "clear_pairs",
                vs.shape_decided, "clear_winner_agrees", vs.shape_decided_agrees, "groups", groups,
                "rows", jr))
        == 0) {
        rp_buf sc;
        if (rp_buf_open(&sc) == 0) {
            double x0 = lo / 1.5, x1 = hi * 1.5;
            fprintf(sc.fp,
                "set logscale xy\nset xrange [%g:%g]\nset yrange [%g:%g]\nset samples 200\n"
                "set xlabel 'measured median time (ms)'\nset ylabel 'predicted time (ms)'\n"
                "set key font ',12'\nE = %g\n"
                "plot '+' using 1:($1*(1-E)):($1*(1+E)) with filledcurves fc rgb '#e8e8e8' "
                "title sprintf('error band +-%%.0f%%%%', 100*E), \\\n"
                "  x with lines lc rgb 'black' title 'predicted = measured'",
                x0, x1, x0, x1, med);
            /* one series per op and variant present (point type by op, colour by variant) */
            static const char *const pts[] = { "7", "5", "9", "11", "13" };
            static const char *const cols[] = { "#c44e52", "#4c72b0", "#55a868", "#8172b2" };
            for (int k = 0; k < ng; k++) {
                /* o: index of this op among the distinct ops; v: of its variant within the op */
                int o = 0, v = 0;
                for (int q = 0; q < k; q++) {
                    int first = 1;
                    for (int r = 0; r < q; r++)
                        first &= strcmp(vg[r].op, vg[q].op) != 0;
                    o += first && strcmp(vg[q].op, vg[k].op) != 0;
                    v += !strcmp(vg[q].op, vg[k].op);
                }
                fprintf(sc.fp,
                    ", \\\n  'validation.csv' every ::1 using (strcol(1) eq '%s/%s' ? $7 : "
                    "1/0):8 with points pt %s ps 1.2 lc rgb '%s' title '%s %s'",
                    vg[k].op, vg[k].variant, pts[o % 5], cols[v % 4], vg[k].op, vg[k].variant);
            }
            fputs("\n", sc.fp);
            rp_buf_close(&sc);
            rp_plot_draw(c, &p, sc.p);
            rp_buf_free(&sc);
        }
    } else {
        json_decref(groups);
        json_decref(jr);
    }
    rp_figure(c, &p);
    rp_buf_free(&csv);
    free(rows);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Predictions                                                        */
/* ------------------------------------------------------------------ */

static const char *const ecomp[]
    = { "dram", "global_buffer", "local_buffer", "mac", "vector", "link" };
static const char *const lcomp[] = { "gemm", "vector", "dram", "noc", "collectives", "stall" };

/* an energy in uJ for a table cell, or "n/a" when the description gives none */
static const char *rp_energy(double pj, char *buf, size_t len)
{
    if (isfinite(pj))
        snprintf(buf, len, "%.4g", pj * 1e-6);
    else
        snprintf(buf, len, "n/a");
    return buf;
}

int rp_sec_predictions(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "predictions", "Scaled-system and accelerator predictions");
    if (!in->pred) {
        rp_note(
            d, "No predictions (%s); 'comet run' writes them in its predict stage.", in->pred_note);
        return 0;
    }
    const json_t *systems = json_object_get(in->pred, "systems"),
                 *preds = json_object_get(in->pred, "predictions");
    rp_p(d,
        "Best fused and best unfused mapping found by the model's mapping search (cluster and "
        "core splits, tiles, binding; capacity pruning first) for each system and op. Speedup = "
        "best unfused latency / best fused latency: a predicted speedup whose baseline is the "
        "best unfused mapping of the same search (same hardware, splits, tiles and capacities), "
        "not a measured one, nor another tool's or paper's baseline. On an accelerator that "
        "baseline keeps the intermediate in each cluster's global buffer where it fits (then "
        "fused and unfused move the same DRAM bytes and the speedup is small); where it does "
        "not fit, the unfused mapping writes the whole intermediate to DRAM and reads it back "
        "(the DRAM MB columns), and on a preset with little DRAM bandwidth per MAC the speedup "
        "is large. Energy is the model's access-count energy "
        "(DRAM, buffers, MACs, vector ops, links); n/a where the description gives no energies "
        "(a calibrated CPU profile): unknown, not 0.");
    rp_table(d, "lllrrrrl",
        "system\tdescription\tclock GHz\tclusters\tcores/cluster\tpeak "
        "TFLOP/s\tDRAM GB/s\tsource");
    size_t i;
    json_t *s;
    json_array_foreach(systems, i, s) rp_row(d, "%s\t%s\t%.3g\t%.0f\t%.0f\t%.3g\t%.3g\t%s",
        rp_str(s, "tag"), rp_str(s, "description"), rp_num(s, "clock_ghz"), rp_num(s, "clusters"),
        rp_num(s, "cores"), rp_num(s, "peak_tflops"), rp_num(s, "dram_gbs"), rp_str(s, "source"));
    rp_table_end(d);
    /* the scaled system as a hardware file, beside the report, reproducible */
    json_array_foreach(systems, i, s)
    {
        if (strcmp(rp_str(s, "source"), "scaled-system.json"))
            continue;
        char src[RP_PATH + 32], dst[RP_PATH + 32], *t = NULL;
        size_t tl = 0;
        snprintf(src, sizeof src, "%s/scaled-system.json", in->dir);
        snprintf(dst, sizeof dst, "%s/scaled-system.json", c->rdir);
        if (comet_util_read_file(src, &t, &tl, NULL, 0) == 0
            && comet_util_write_atomic(dst, t, tl, c->err, c->errlen) == 0)
            rp_p(d,
                "The scaled system is written out as a hardware file: scaled-system.json (in this "
                "folder; 'comet predict --hw scaled-system.json --op OP --shape ...' reproduces "
                "and "
                "changes its rows).");
        else
            rp_note(d, "The scaled system's hardware file %s is missing: re-run the predict stage.",
                src);
        free(t);
    }
    json_t *x;
    json_array_foreach(json_object_get(in->pred, "notes"), i, x)
        rp_note(d, "%s", json_string_value(x) ? json_string_value(x) : "");

    rp_p(d,
        "Every system is predicted on the same shapes (the rows grouped by op compare like with "
        "like); this machine is predicted once more at the largest shape it measured, beside the "
        "measurement (set 'measured').");
    rp_table(d, "llllrrrrrrrr",
        "set\tsystem\top\tshape\tfused us\tunfused us\tspeedup\tfused DRAM MB\tunfused DRAM "
        "MB\tfused uJ\tunfused uJ\tmappings");
    rp_buf csv, bd;
    if (rp_buf_open(&csv) || rp_buf_open(&bd)) {
        rp_buf_free(&csv);
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    }
    fprintf(csv.fp, "idx,label,system,op,shape,fused_us,unfused_us,speedup,fused_uJ,unfused_uJ\n");
    fprintf(bd.fp, "label,system,op,variant");
    for (int k = 0; k < 6; k++)
        fprintf(bd.fp, ",energy_%s_pct", ecomp[k]);
    for (int k = 0; k < 6; k++)
        fprintf(bd.fp, ",latency_%s_us", lcomp[k]);
    fputs(",total_us,total_uJ\n", bd.fp);
    size_t np = 0;
    /* rows grouped by shape set, then op: the systems of one op and shape side by side */
    static const char *const sets[] = { "common", "measured" };
    for (int st = 0; st < 2; st++)
        for (int o = 0; o < comet_model_op_count(); o++) /* ops in the vocabulary's order */
            json_array_foreach(preds, i, x)
            {
                const char *set = rp_str(x, "set");
                if (strcmp(set[0] ? set : "common", sets[st])
                    || strcmp(rp_str(x, "op"), comet_model_op_at(o)->name))
                    continue;
                const json_t *rf = json_object_get(json_object_get(x, "fused"), "result"),
                             *ru = json_object_get(json_object_get(x, "unfused"), "result");
                char e1[32], e2[32];
                rp_row(d, "%s\t%s\t%s\t%s\t%.4g\t%.4g\t%.2fx\t%.4g\t%.4g\t%s\t%s\t%.0f", sets[st],
                    rp_str(x, "system"), rp_str(x, "op"), rp_str(x, "shape"),
                    rp_num(rf, "seconds") * 1e6, rp_num(ru, "seconds") * 1e6, rp_num(x, "speedup"),
                    rp_num(rf, "dram_bytes") / 1e6, rp_num(ru, "dram_bytes") / 1e6,
                    rp_energy(rp_num(rf, "energy_pj"), e1, sizeof e1),
                    rp_energy(rp_num(ru, "energy_pj"), e2, sizeof e2), rp_num(x, "evaluated"));
            }
    json_array_foreach(preds, i, x)
    {
        const json_t *rf = json_object_get(json_object_get(x, "fused"), "result"),
                     *ru = json_object_get(json_object_get(x, "unfused"), "result");
        double tf = rp_num(rf, "seconds") * 1e6, tu = rp_num(ru, "seconds") * 1e6,
               ef = rp_num(rf, "energy_pj") * 1e-6, eu = rp_num(ru, "energy_pj") * 1e-6;
        char label[96];
        snprintf(label, sizeof label, "%s %s%s", rp_str(x, "system"), rp_str(x, "op"),
            !strcmp(rp_str(x, "set"), "measured") ? " (measured shape)" : "");
        fprintf(csv.fp, "%zu,%s,%s,%s,", np, label, rp_str(x, "system"), rp_str(x, "op"));
        rp_csv_field(csv.fp, rp_str(x, "shape"));
        /* unknown energy: an empty cell, never 0 or nan */
        fprintf(csv.fp, ",%.6g,%.6g,%.5g,", tf, tu, rp_num(x, "speedup"));
        if (isfinite(ef))
            fprintf(csv.fp, "%.6g", ef);
        fputc(',', csv.fp);
        if (isfinite(eu))
            fprintf(csv.fp, "%.6g", eu);
        fputc('\n', csv.fp);
        for (int v = 0; v < 2; v++) {
            const json_t *r = v ? ru : rf;
            if (!isfinite(rp_num(r, "energy_pj")))
                continue; /* no energies in this description: nothing to split */
            const json_t *eb = json_object_get(r, "energy_breakdown_pj"),
                         *lb = json_object_get(r, "latency_breakdown");
            double tot = rp_num(r, "energy_pj"), clk = rp_num(r, "cycles") / rp_num(r, "seconds");
            fprintf(bd.fp, "%s %s,%s,%s,%s", label, v ? "unfused" : "fused", rp_str(x, "system"),
                rp_str(x, "op"), v ? "unfused" : "fused");
            for (int k = 0; k < 6; k++) {
                double val = rp_num(eb, ecomp[k]);
                fprintf(bd.fp, ",%.4g", tot > 0 && isfinite(val) ? 100 * val / tot : 0.0);
            }
            for (int k = 0; k < 6; k++) {
                double cyc = rp_num(lb, lcomp[k]);
                fprintf(bd.fp, ",%.5g", isfinite(cyc) && clk > 0 ? cyc / clk * 1e6 : 0.0);
            }
            fprintf(bd.fp, ",%.6g,%.6g\n", rp_num(r, "seconds") * 1e6, tot * 1e-6);
        }
        np++;
    }
    rp_table_end(d);
    rp_buf_close(&csv);
    rp_buf_close(&bd);

    /* this machine's predictions with the interval its own validation gives
     * (the band of measured / predicted; the other systems have none: the
     * model has no measured error on hardware it has not run on) */
    if (in->have_hw) {
        comet_model_vrow *vr = calloc(in->n + 1, sizeof *vr);
        int nv = vr ? comet_model_validate_records(&in->hw, in->recs, in->n, vr, in->n) : 0;
        int shown = 0;
        json_array_foreach(preds, i, x)
        {
            if (strcmp(rp_str(x, "system"), "local") || nv <= 0)
                continue;
            char cell[2][96];
            int ok = 0;
            for (int v = 0; v < 2; v++) {
                const json_t *r
                    = json_object_get(json_object_get(x, v ? "unfused" : "fused"), "result");
                const double t = rp_num(r, "seconds") * 1e6;
                comet_model_band b;
                if (comet_model_interval(vr, nv, rp_str(x, "op"), v ? "unfused" : "fused", 0.9, &b)
                    == 0) {
                    snprintf(cell[v], sizeof cell[v], "%.4g [%.4g, %.4g] (%d records, %s)", t,
                        b.lo * t, b.hi * t, b.records,
                        b.scope == 0       ? "op and variant"
                            : b.scope == 1 ? "op"
                                           : "all");
                    ok = 1;
                } else {
                    snprintf(cell[v], sizeof cell[v], "%.4g (too few records)", t);
                }
            }
            if (!ok)
                continue;
            if (!shown++) {
                rp_h3(d, "Prediction intervals on this machine");
                rp_p(d,
                    "This machine's predictions with a 90%% interval from its own validation: "
                    "the 5-95%% quantiles of measured / predicted over the validated records of "
                    "the op and variant (else of the op, else all; comet_model_interval, the "
                    "same band predict and explore print). The other systems have no interval: "
                    "the model has no measured error on hardware it has not run on.");
                rp_table(
                    d, "llll", "op\tshape\tfused us [90% interval]\tunfused us [90% interval]");
            }
            rp_row(d, "%s\t%s\t%s\t%s", rp_str(x, "op"), rp_str(x, "shape"), cell[0], cell[1]);
        }
        if (shown)
            rp_table_end(d);
        free(vr);
    }

    rp_h3(d, "Best mappings");
    rp_table(d, "llll", "system\top\tbest fused mapping\tbest unfused mapping");
    json_array_foreach(preds, i, x) rp_row(d, "%s\t%s\t%s\t%s", rp_str(x, "system"),
        rp_str(x, "op"), rp_str(json_object_get(x, "fused"), "mapping_str"),
        rp_str(json_object_get(x, "unfused"), "mapping_str"));
    rp_table_end(d);

    rp_h3(d, "Latency breakdown (us)");
    rp_p(d,
        "Component totals of the model (they overlap where the dataflow overlaps them, so "
        "they need not add up to the latency); stall = memory time not hidden behind "
        "compute; collectives = explicit collectives inserted where a reduction is split.");
    rp_table(d, "llrrrrrrr",
        "system\top / variant\tlatency\tgemm\tvector\tdram\tnoc\tcollectives\tstall");
    json_array_foreach(preds, i, x) for (int v = 0; v < 2; v++)
    {
        const json_t *r = json_object_get(json_object_get(x, v ? "unfused" : "fused"), "result");
        const json_t *lb = json_object_get(r, "latency_breakdown");
        double clk = rp_num(r, "cycles") / rp_num(r, "seconds") / 1e6;
        rp_row(d, "%s\t%s %s\t%.4g\t%.3g\t%.3g\t%.3g\t%.3g\t%.3g\t%.3g", rp_str(x, "system"),
            rp_str(x, "op"), v ? "unfused" : "fused", rp_num(r, "seconds") * 1e6,
            rp_num(lb, "gemm") / clk, rp_num(lb, "vector") / clk, rp_num(lb, "dram") / clk,
            rp_num(lb, "noc") / clk, rp_num(lb, "collectives") / clk, rp_num(lb, "stall") / clk);
    }
    rp_table_end(d);

    /* measured against predicted on this machine, where the same shape ran */
    int any = 0;
    json_array_foreach(preds, i, x)
    {
        const json_t *m = json_object_get(x, "measured");
        if (!m)
            continue;
        if (!any) {
            rp_h3(d, "This machine: predicted beside measured");
            rp_table(d, "llrrrr",
                "op\tshape\tpredicted fused ms\tmeasured fused ms\tpredicted "
                "unfused ms\tmeasured unfused ms");
            any = 1;
        }
        rp_row(d, "%s\t%s\t%.4g\t%.4g\t%.4g\t%.4g", rp_str(x, "op"), rp_str(x, "shape"),
            rp_num(json_object_get(json_object_get(x, "fused"), "result"), "seconds") * 1e3,
            rp_num(m, "fused_s") * 1e3,
            rp_num(json_object_get(json_object_get(x, "unfused"), "result"), "seconds") * 1e3,
            rp_num(m, "unfused_s") * 1e3);
    }
    if (any)
        rp_table_end(d);

    if (np) {
        rp_plot p;
        rp_plot_init(&p, "predictions_latency",
            "Predicted latency of the best fused and best unfused mapping per system and op "
            "(log scale); the label above each pair is the predicted speedup.");
        json_t *copy = json_deep_copy(preds);
        if (rp_plot_data(c, &p, csv.p, json_pack("{s:o}", "predictions", copy)) == 0) {
            char script[1400];
            snprintf(script, sizeof script,
                "set logscale y\nset ylabel 'predicted latency (us)'\nset xlabel 'system and op'\n"
                "set xtics rotate by -35 left font ',12'\nset bmargin 10\n"
                "set xrange [-0.6:%zu.6]\nset style fill solid 0.6 border\nset boxwidth 0.35\n"
                "plot 'predictions_latency.csv' every ::1 using ($1-0.18):6:xtic(2) with boxes lc "
                "rgb '#c44e52' title 'best fused', \\\n"
                "  '' every ::1 using ($1+0.18):7 with boxes lc rgb '#4c72b0' title 'best "
                "unfused', \\\n"
                "  '' every ::1 using 1:(($6>$7?$6:$7)*1.6):(sprintf('%%.2fx',$8)) with labels "
                "font ',8' notitle\n",
                np - 1);
            rp_plot_draw(c, &p, script);
        }
        rp_figure(c, &p);

        rp_plot q;
        rp_plot_init(&q, "predictions_energy",
            "Predicted energy per call of the best fused and unfused mapping, split by component "
            "(share of the total, %); the total in uJ is in the table above. Descriptions without "
            "energies (calibrated CPU profiles) are left out: their energy is unknown.");
        if (rp_plot_data(c, &q, bd.p, json_pack("{s:s}", "note", "see predictions_latency.json"))
            == 0) {
            char script[1600];
            snprintf(script, sizeof script,
                "set style data histograms\nset style histogram rowstacked\n"
                "set style fill solid 0.8 border -1\nset boxwidth 0.7\nset yrange [0:100]\n"
                "set ylabel 'share of predicted energy (%%)'\nset xlabel 'system, op, variant'\n"
                "set xtics rotate by -40 left font ',8'\nset bmargin 12\n"
                "plot for [i=5:10] 'predictions_energy.csv' every ::1 using i:xtic(1) title "
                "word('DRAM global_buffer local_buffer MAC vector link', i-4)\n");
            rp_plot_draw(c, &q, script);
        }
        rp_figure(c, &q);
    }
    rp_buf_free(&csv);
    rp_buf_free(&bd);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Fit quality and provenance                                         */
/* ------------------------------------------------------------------ */

static void heldout_row(rp_doc *d, const char *what, const json_t *h, const char *method)
{
    if (!h)
        return;
    rp_row(d, "%s\t%.0f\t%.1f%%\t%.1f%%\t%s", what, rp_num(h, "points"),
        100 * rp_num(h, "median_rel_err"), 100 * rp_num(h, "p90_rel_err"),
        method ? method : rp_str(h, "method"));
}

int rp_sec_fits(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "fits", "Fit quality, held-out errors and provenance");
    const json_t *cal = json_object_get(in->profile, "calibration");
    if (!cal) {
        rp_note(d, "No calibration section: %s.",
            in->profile ? "the profile carries no fit figures" : in->profile_note);
        return 0;
    }
    const json_t *fits = json_object_get(cal, "fits");
    rp_p(d,
        "Held-out error: points kept out of a fit and predicted by it (relative error of the "
        "predicted time). These are the calibration's own figures from profile.json.");
    rp_table(d, "lrrrl", "fit\theld-out points\tmedian error\tp90 error\tmethod");
    const json_t *g = json_object_get(fits, "gemm");
    heldout_row(d, "sgemm time (efficiency grid)", json_object_get(g, "heldout"), NULL);
    const json_t *mem = json_object_get(fits, "memory");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(mem, "series"), i, x)
    {
        char w[64];
        snprintf(w, sizeof w, "memory %s %.0fT", rp_str(x, "op"), rp_num(x, "threads"));
        heldout_row(d, w, json_object_get(x, "heldout"), NULL);
    }
    heldout_row(d, "memory (pooled)", json_object_get(mem, "heldout"), NULL);
    json_array_foreach(json_object_get(fits, "p2p"), i, x)
    {
        char w[96];
        snprintf(w, sizeof w, "p2p %s %s", rp_str(x, "op"), rp_str(x, "link"));
        heldout_row(d, w, json_object_get(x, "heldout"), NULL);
    }
    json_array_foreach(json_object_get(fits, "collectives"), i, x)
    {
        char w[96];
        snprintf(w, sizeof w, "%s %s", rp_str(x, "op"), rp_str(x, "algorithm"));
        heldout_row(d, w, json_object_get(x, "heldout"), NULL);
    }
    /* the joint link model, per algorithm it was fitted over */
    json_array_foreach(json_object_get(fits, "link_joint"), i, x)
    {
        size_t a;
        const json_t *y;
        json_array_foreach(json_object_get(x, "per_algorithm"), a, y)
        {
            char w[128];
            snprintf(w, sizeof w, "joint %s model: %s (%s)", rp_str(x, "link"),
                rp_str(y, "algorithm"),
                json_is_true(json_object_get(y, "predicts")) ? "predicts it"
                                                             : "does not predict it");
            heldout_row(d, w, json_object_get(y, "heldout"), NULL);
        }
    }
    rp_table_end(d);
    const json_t *law = json_object_get(g, "law");
    if (law)
        rp_p(d,
            "GEMM efficiency: measured grid from %.0f sgemm records, interpolated by the model; "
            "outside the grid %s with emax %.3f, f_half %.3g FLOP (R^2 %.3f).",
            rp_num(g, "records"), rp_str(law, "form"), rp_num(law, "emax"), rp_num(law, "f_half"),
            rp_num(law, "r2"));
    const json_t *ml = json_object_get(mem, "model_levels");
    if (ml) {
        rp_table(d, "lrrl", "model memory level\tbandwidth GB/s\tcapacity\tsource");
        const char *k;
        json_object_foreach((json_t *)ml, k, x) rp_row(d, "%s\t%.1f\t%.0f KiB\t%s", k,
            rp_num(x, "gbs"), rp_num(x, "capacity") / 1024, rp_str(x, "source"));
        rp_table_end(d);
    }
    const json_t *vec = json_object_get(fits, "vector");
    if (vec && json_object_size(vec)) {
        rp_table(d, "lrrrr",
            "vector op\tin cache ns/elem\tin cache cycles/elem\tstreaming "
            "ns/elem\tstreaming GB/s");
        const char *k;
        json_object_foreach((json_t *)vec, k, x)
        {
            const json_t *ca = json_object_get(x, "cache"), *st = json_object_get(x, "stream");
            if (!ca && !st)
                continue;
            rp_row(d, "%s\t%.3g\t%.3g\t%.3g\t%.3g", k, rp_num(ca, "ns_per_element"),
                rp_num(ca, "cycles_per_element"), rp_num(st, "ns_per_element"), rp_num(st, "gbs"));
        }
        rp_table_end(d);
    }

    rp_h3(d, "Provenance");
    const json_t *pv = json_object_get(cal, "provenance");
    const json_t *pm = json_object_get(pv, "machine");
    rp_table(d, "ll", "item\tvalue");
    rp_row(d, "profile\t%s (%s), clock %.3f GHz", rp_str(in->profile, "name"),
        rp_str(in->profile, "kind"), rp_num(in->profile, "clock_ghz"));
    rp_row(d, "calibrated\t%s by comet %s (commit %s)", rp_str(pv, "date"),
        rp_str(pv, "comet_version"), rp_str(pv, "comet_commit"));
    rp_row(d, "machine\t%s (%s, id %s)", rp_str(pm, "hostname"), rp_str(pm, "cpu_model"),
        rp_str(pm, "id"));
    if (strcmp(rp_str(pm, "id"), in->machine_rec->id))
        rp_row(d, "warning\tthe profile was calibrated on machine %s, the results are from %s",
            rp_str(pm, "id"), in->machine_rec->id);
    json_array_foreach(json_object_get(pv, "files"), i, x)
        rp_row(d, "results file\t%s (%.0f records)", rp_str(x, "path"), rp_num(x, "records"));
    json_array_foreach(json_object_get(pv, "runs"), i, x) rp_row(
        d, "run\t%s at %s: %s", rp_str(x, "run_id"), rp_str(x, "time"), rp_str(x, "cmdline"));
    rp_row(d, "report\tbuilt by comet %s from %s", COMET_VERSION, in->dir);
    rp_table_end(d);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Gather-GEMM-scatter                                                */
/* ------------------------------------------------------------------ */

int rp_sec_gms(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "gms", "Gather-GEMM-scatter dataflows");
    if (!in->have_hw) {
        rp_note(d, "No calibrated profile (%s): the dataflows are not predicted here.",
            in->profile_note);
        return 0;
    }
    comet_model_gms_vrow *rows = calloc(in->n + 1, sizeof *rows);
    comet_model_gms_vinput *gi = calloc(in->n + 1, sizeof *gi);
    if (!rows || !gi) {
        free(rows);
        free(gi);
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    }
    int nr = comet_model_gms_validate(&in->hw, in->recs, in->n, rows, (int)in->n);
    if (nr <= 0) {
        rp_note(d, "No gather-GEMM-scatter records ('comet bench gms' did not run).");
        free(rows);
        free(gi);
        return 0;
    }
    int ni = comet_model_gms_inputs(rows, nr, gi, nr);
    comet_model_gms_vsum vs;
    comet_model_gms_summary(rows, nr, gi, ni, &vs);
    const double med = vs.median_rel_err, p90 = vs.p90_rel_err;
    const int within = vs.within_5pct, configs = vs.configs;
    const double *worst = vs.worst_loss;
    rp_p(d,
        "out[dst] += in[src] x W_seg over segments (RGCN relations, SpConv kernel offsets, MoE "
        "experts) in four dataflows: 1 unfused (gather to a buffer, GEMM, scatter-add), 2 gather "
        "fused into the GEMM's packing, 3 scatter-add fused into the GEMM epilogue, 4 fully "
        "fused; every dataflow x tile x threads measured per input (comet bench gms). The model "
        "(model/gms.c) predicts each record from the calibrated profile: median error %.1f%%, "
        "90th percentile %.1f%% over %d records. Its choice (the configuration it predicts "
        "fastest) measured within 5%% of the measured best in %d of %d inputs; measuring only "
        "that choice is %d of the %d configurations measured (%.1f%%).",
        100 * med, 100 * p90, nr, within, ni, ni, configs, configs ? 100.0 * ni / configs : 0.0);
    rp_table(d, "lrrllrrl",
        "workload\tskew\tthreads\tbest dataflow\tbest ms\tunfused ms\tbest vs unfused\tmodel's "
        "choice (its time / best)");
    rp_buf csv;
    json_t *ja = json_array();
    if (rp_buf_open(&csv) || !ja) {
        json_decref(ja);
        free(rows);
        free(gi);
        return comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
    }
    fprintf(csv.fp, "idx,label,unfused,gather_fused,scatter_fused,fused\n");
    for (int k = 0; k < ni; k++) {
        const comet_model_gms_vinput *x = &gi[k];
        rp_row(d, "%s\t%.0f\t%d\t%s (tile %.0f)\t%.3f\t%.3f\t%.2fx\t%s (tile %.0f) %.2fx",
            x->workload, x->skew, x->threads, comet_model_gms_dataflow_name(x->best_df),
            x->best_tile, x->best_s * 1e3, x->df_best_s[0] * 1e3,
            x->df_best_s[0] > 0 ? x->df_best_s[0] / x->best_s : 0.0,
            comet_model_gms_dataflow_name(x->chosen_df), x->chosen_tile, x->chosen_s / x->best_s);
        char label[64];
        snprintf(label, sizeof label, "%s s%.0f T%d", x->workload, x->skew, x->threads);
        fprintf(csv.fp, "%d,", k);
        rp_csv_field(csv.fp, label);
        json_t *o = json_pack(
            "{s:s,s:f,s:i}", "workload", x->workload, "skew", x->skew, "threads", x->threads);
        for (int df = 0; df < 4; df++) {
            /* speedup of each dataflow's best over dataflow 1's */
            double v = x->df_best_s[df] > 0 && x->df_best_s[0] > 0
                ? x->df_best_s[0] / x->df_best_s[df]
                : NAN;
            if (isfinite(v))
                fprintf(csv.fp, ",%.5g", v);
            else
                fprintf(csv.fp, ",NaN");
            json_object_set_new(
                o, comet_model_gms_dataflow_name(df + 1), isfinite(v) ? json_real(v) : json_null());
        }
        fputc('\n', csv.fp);
        json_array_append_new(ja, o);
    }
    rp_table_end(d);
    rp_p(d,
        "A fixed dataflow's worst loss against the per-input best (its best tile and thread "
        "count each time): unfused %.2fx, gather_fused %.2fx, scatter_fused %.2fx, fused %.2fx.",
        worst[0], worst[1], worst[2], worst[3]);
    rp_buf_close(&csv);
    rp_plot p;
    rp_plot_init(&p, "gms",
        "Gather-GEMM-scatter: each dataflow's best measured time against dataflow 1 (unfused) "
        "per input (workload, skew s, threads T); above 1 is faster than unfused.");
    if (rp_plot_data(c, &p, csv.p,
            json_pack("{s:s,s:o}", "method",
                "speedup = dataflow 1's best median / the dataflow's best median (over tiles)",
                "inputs", ja))
        == 0) {
        char script[1536];
        snprintf(script, sizeof script,
            "set ylabel 'speedup over unfused (dataflow 1 time / time, x)'\n"
            "set xlabel 'input: workload, skew s, threads T'\n"
            "set xtics rotate by -40 left font ',12' noenhanced\n"
            "set bmargin 10\nset yrange [0:*]\nset xrange [-0.6:%d.6]\n"
            "set style fill solid 0.5 border\nset boxwidth 0.2\n"
            "plot 'gms.csv' every ::1 using ($1-0.3):3:xtic(2) with boxes lc rgb '#4c72b0' "
            "title '1 unfused', \\\n"
            "  '' every ::1 using ($1-0.1):4 with boxes lc rgb '#55a868' title '2 gather fused', "
            "\\\n"
            "  '' every ::1 using ($1+0.1):5 with boxes lc rgb '#dd8452' title '3 scatter fused', "
            "\\\n"
            "  '' every ::1 using ($1+0.3):6 with boxes lc rgb '#8172b3' title '4 fused', \\\n"
            "  1 with lines dt 2 lw 1.5 lc rgb '#c44e52' title 'unfused (1x)'\n",
            ni - 1);
        rp_plot_draw(c, &p, script);
    }
    rp_figure(c, &p);
    rp_buf_free(&csv);
    free(rows);
    free(gi);
    return 0;
}
