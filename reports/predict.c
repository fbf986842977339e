/* The prediction stage of comet run: best fused and unfused mappings of the
 * three compound ops on this machine (its calibrated profile), a scaled CPU
 * system of it, and the COMET edge and cloud presets, into
 * DIR/predictions.json. */
#include "reports_internal.h"

#include "comet_results.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Problem sizes. Every system is predicted on one common set, so that the
 * systems table compares like with like: the GEMM shape of COMET's edge
 * evaluation (1024x1024x256) and a BERT/GPT-like attention (8 heads of
 * 1024 x 1024, head dimension 64). This machine is predicted a second time
 * at the largest shape it measured, so that a prediction sits beside a
 * measurement. */
typedef struct sys_shapes {
    const char *gemm, *attention;
} sys_shapes;

static const sys_shapes common_shapes = { "M=1024,N=1024,K=256", "heads=8,lq=1024,lk=1024,d=64" };

static const comet_model_op ops[3]
    = { COMET_MODEL_GEMM_SOFTMAX, COMET_MODEL_GEMM_LAYERNORM, COMET_MODEL_ATTENTION };

static double peak_tflops(const comet_model_hw *hw)
{
    double per_core
        = hw->systolic ? 2.0 * hw->sa_rows * hw->sa_cols * hw->sa_arrays : hw->peak_flops;
    return per_core * hw->cores * hw->clusters * hw->clock_ghz * 1e-3;
}

static json_t *system_json(
    const comet_model_hw *hw, const char *tag, const char *desc, const char *source)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:f,s:i,s:i,s:f,s:f}", "tag", tag, "name", hw->name,
        "description", desc, "source", source, "clock_ghz", hw->clock_ghz, "clusters", hw->clusters,
        "cores", hw->cores, "peak_tflops", peak_tflops(hw), "dram_gbs",
        hw->dram.bw * hw->clock_ghz);
}

json_t *comet_reports_interval_json(const comet_model_vrow *rows, int n, const char *op, int fused,
    double pred_s, char *line, size_t linelen)
{
    comet_model_band b;
    if (line && linelen)
        line[0] = '\0';
    if (!rows || n <= 0 || !(pred_s > 0)
        || comet_model_interval(rows, n, op, fused ? "fused" : "unfused", 0.9, &b) != 0)
        return json_null();
    static const char *const scope[] = { "this op and variant", "this op", "every compound op" };
    if (line && linelen)
        snprintf(line, linelen,
            "90%% interval [%.4g, %.4g] s (5-95%% of measured/predicted over %d validated records "
            "of %s on this machine)",
            b.lo * pred_s, b.hi * pred_s, b.records, scope[b.scope]);
    return json_pack("{s:f,s:f,s:f,s:i,s:s}", "lo_s", b.lo * pred_s, "hi_s", b.hi * pred_s, "level",
        b.level, "records", b.records, "basis", scope[b.scope]);
}

/* One side (fused or unfused) of a prediction, with its 90% interval from
 * this machine's validation rows vr (NULL: hardware the model has not run
 * on, the interval is null), as predict --json gives it. */
static json_t *side_json(const comet_model_mapping *mp, const comet_model_result *r,
    const comet_model_vrow *vr, int nv, const char *op, int fused)
{
    char buf[256];
    return json_pack("{s:o,s:s,s:o,s:o}", "mapping", comet_model_mapping_json(mp), "mapping_str",
        comet_model_mapping_str(mp, buf, sizeof buf), "result", comet_model_result_json(r),
        "interval", comet_reports_interval_json(vr, nv, op, fused, r->seconds, NULL, 0));
}

/* The largest (by FLOPs) measured shape of op at the highest thread count,
 * with its fused and unfused medians. */
typedef struct local_case {
    char shape[96];
    comet_model_problem pb;
    double fused_s, unfused_s;
    int found;
} local_case;

static void find_local(
    const comet_results_record *recs, size_t n, comet_model_op op, local_case *lc)
{
    const char *name = comet_model_op_name(op);
    double best = 0;
    int T = 0;
    memset(lc, 0, sizeof *lc);
    for (size_t i = 0; i < n; i++)
        if (recs[i].kind == COMET_RESULTS_KERNEL && !strcmp(recs[i].op, name)
            && recs[i].threads > T)
            T = recs[i].threads;
    const comet_results_shape *sh = NULL;
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_KERNEL || strcmp(r->op, name) || r->threads != T)
            continue;
        if (r->flops > best) {
            best = r->flops;
            sh = &r->shape;
        }
    }
    if (!sh)
        return;
    comet_model_record_problem(op, sh, &lc->pb);
    if (comet_model_op_desc(op)->shape == COMET_MODEL_SHAPE_ATTENTION) {
        snprintf(lc->shape, sizeof lc->shape, "heads=%.0f,lq=%.0f,lk=%.0f,d=%.0f%s", lc->pb.heads,
            lc->pb.lq, lc->pb.lk, lc->pb.d, lc->pb.causal ? ",causal" : "");
    } else {
        snprintf(lc->shape, sizeof lc->shape, "M=%.0f,N=%.0f,K=%.0f", lc->pb.M, lc->pb.N, lc->pb.K);
    }
    if (!(isfinite(lc->pb.M + lc->pb.N + lc->pb.K) && isfinite(lc->pb.heads + lc->pb.lq)))
        return;
    /* first record of each variant at that shape (later ones are tile sweeps) */
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_KERNEL || strcmp(r->op, name) || r->threads != T
            || strcmp(r->shape.text, sh->text))
            continue;
        if (!strcmp(r->variant, "fused") && !(lc->fused_s > 0))
            lc->fused_s = r->stats.median_s;
        if (!strcmp(r->variant, "unfused") && !(lc->unfused_s > 0))
            lc->unfused_s = r->stats.median_s;
    }
    lc->found = 1;
}

/* Explores one op on one system and appends the entry. */
static int predict_one(const comet_model_hw *hw, const char *tag, const comet_model_problem *pb,
    const char *shape, const local_case *lc, const comet_model_vrow *vr, int nv, json_t *preds,
    char *err, size_t errlen)
{
    comet_model_search *s = malloc(sizeof *s);
    int rc;
    if (!s)
        return comet_util_seterr(err, errlen, -ENOMEM, "predict: out of memory");
    if ((rc = comet_model_explore(hw, pb, s)) != 0) {
        free(s);
        return comet_util_seterr(err, errlen, rc, "predict: %s %s %s: mapping search failed (%s)",
            tag, comet_model_op_name(pb->op), shape, comet_util_strerror(rc));
    }
    if (!s->r_fused.valid || !s->r_unfused.valid || !(s->r_fused.seconds > 0)) {
        const char *which = s->r_fused.valid ? "unfused" : "fused";
        free(s);
        return comet_util_seterr(err, errlen, -ERANGE,
            "predict: %s %s %s: no valid %s mapping fits the buffers", tag,
            comet_model_op_name(pb->op), shape, which);
    }
    json_t *e = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:f,s:I,s:I,s:f}", "system", tag, "set",
        lc ? "measured" : "common", "op", comet_model_op_name(pb->op), "shape", shape, "fused",
        side_json(&s->best_fused, &s->r_fused, vr, nv, comet_model_op_name(pb->op), 1), "unfused",
        side_json(&s->best_unfused, &s->r_unfused, vr, nv, comet_model_op_name(pb->op), 0),
        "speedup", s->r_unfused.seconds / s->r_fused.seconds, "evaluated", (json_int_t)s->evaluated,
        "pruned", (json_int_t)s->pruned, "search_s", s->seconds);
    if (e && lc && lc->fused_s > 0 && lc->unfused_s > 0)
        json_object_set_new(e, "measured",
            json_pack("{s:f,s:f,s:f}", "fused_s", lc->fused_s, "unfused_s", lc->unfused_s,
                "speedup", lc->unfused_s / lc->fused_s));
    free(s);
    if (!e)
        return comet_util_seterr(err, errlen, -ENOMEM, "predict: out of memory");
    json_array_append_new(preds, e);
    return 0;
}

static int predict_system(const comet_model_hw *hw, const char *tag, const sys_shapes *shapes,
    const local_case *local, const comet_model_vrow *vr, int nv, json_t *preds, json_t *notes,
    char *err, size_t errlen)
{
    int failures = 0;
    for (int o = 0; o < 3; o++) {
        comet_model_problem pb;
        const char *shape;
        char e[COMET_ERRLEN];
        if (local) {
            if (!local[o].found) {
                char t[160];
                snprintf(t, sizeof t, "%s: %s was not measured here, so it is not predicted", tag,
                    comet_model_op_name(ops[o]));
                json_array_append_new(notes, json_string(t));
                continue;
            }
            pb = local[o].pb;
            shape = local[o].shape;
        } else {
            memset(&pb, 0, sizeof pb);
            pb.op = ops[o];
            shape = comet_model_op_desc(ops[o])->shape == COMET_MODEL_SHAPE_ATTENTION
                ? shapes->attention
                : shapes->gemm;
            if (comet_model_problem_parse(shape, &pb, e, sizeof e) != 0)
                return comet_util_seterr(err, errlen, -EINVAL, "predict: %s", e);
        }
        if (predict_one(hw, tag, &pb, shape, local ? &local[o] : NULL, vr, nv, preds, e, sizeof e)
            != 0) {
            json_array_append_new(notes, json_string(e));
            failures++;
        }
    }
    return failures;
}

int comet_reports_predict(
    const char *dir, const comet_reports_predict_opts *opts, char *err, size_t errlen)
{
    comet_reports_predict_opts o = { 32, 8 };
    char path[RP_PATH + 64], now[40];
    json_t *systems = json_array(), *preds = json_array(), *notes = json_array(), *out = NULL;
    comet_model_hw base, sc, preset;
    int have_base = 0, rc = 0, failures = 0;
    comet_results_set set = { 0 };
    char **names = NULL;
    size_t nn = 0;
    if (opts)
        o = *opts;
    if (!systems || !preds || !notes) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "predict: out of memory");
        goto fail;
    }
    if (o.scale_cores < 1 || o.scale_nodes < 1) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "predict: scaled system needs >= 1 core "
            "and node");
        goto fail;
    }
    /* this machine: its profile and its measured kernel records */
    snprintf(path, sizeof path, "%s/profile.json", dir);
    char e[COMET_ERRLEN];
    if (access(path, R_OK) != 0) {
        snprintf(e, sizeof e,
            "no calibrated profile (%.300s): this machine and its scaled system are "
            "not predicted",
            path);
        json_array_append_new(notes, json_string(e));
    } else if ((rc = comet_model_hw_load(path, &base, err, errlen)) != 0) {
        goto fail;
    } else {
        have_base = 1;
    }
    if (have_base) {
        if (rp_list_results(dir, &names, &nn, e, sizeof e) == 0) {
            for (size_t i = 0; i < nn; i++) {
                char w[COMET_ERRLEN];
                snprintf(path, sizeof path, "%s/results/%s", dir, names[i]);
                /* the report names a corrupt file; here it only lacks a shape */
                (void)comet_results_load(path, NULL, &set, NULL, w, sizeof w);
            }
        }
        local_case lc[3];
        for (int q = 0; q < 3; q++)
            find_local(set.recs, set.n, ops[q], &lc[q]);
        char desc[200];
        snprintf(
            desc, sizeof desc, "this machine, calibrated (%d cores)", base.cores * base.clusters);
        json_array_append_new(systems, system_json(&base, "local", desc, "profile.json"));
        /* this machine's predictions carry the 90% interval of its own
         * validation (as predict --json on the profile does) */
        comet_model_vrow *vr = set.n ? malloc(set.n * sizeof *vr) : NULL;
        int nv = vr ? comet_model_validate_records(&base, set.recs, set.n, vr, set.n) : 0;
        failures += predict_system(
            &base, "local", &common_shapes, NULL, vr, nv, preds, notes, err, errlen);
        failures += predict_system(&base, "local", NULL, lc, vr, nv, preds, notes, err, errlen);
        free(vr);
        /* a stated network, never this machine's shared-memory fit: one switch
         * of 100 Gbit/s ports (InfiniBand EDR's data rate, 12.5 GB/s per
         * direction) and 1 us per hop (a switch traversal plus the host
         * stack: node -> switch -> node is 2 us, the order of an MPI
         * ping-pong over EDR) */
        comet_model_net ib = { .topo = COMET_MODEL_SWITCH, .dims = { o.scale_nodes, 1 } };
        ib.link_bw = 12.5e9 / (base.clock_ghz * 1e9);
        ib.hop_latency = 1e-6 * base.clock_ghz * 1e9;
        snprintf(ib.name, sizeof ib.name, "ib-edr");
        if ((rc = comet_model_hw_scale(&base, o.scale_cores, o.scale_nodes, &ib, &sc)) != 0) {
            comet_util_seterr(
                err, errlen, rc, "predict: cannot scale the profile (%s)", comet_util_strerror(rc));
            goto fail;
        }
        snprintf(desc, sizeof desc,
            "%d nodes x %d calibrated cores, one switch of 100 Gbit/s ports, 1 us per hop (a "
            "stated network: the shared-memory link fit does not carry over)",
            o.scale_nodes, o.scale_cores);
        /* written out, so that the scaled system can be reproduced and changed:
         * comet predict --hw DIR/scaled-system.json */
        json_t *hj = comet_model_hw_to_json(&sc);
        char *ht = hj ? json_dumps(hj, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(hj);
        snprintf(path, sizeof path, "%s/scaled-system.json", dir);
        rc = ht ? comet_util_write_atomic(path, ht, strlen(ht), err, errlen)
                : comet_util_seterr(err, errlen, -ENOMEM, "predict: out of memory");
        free(ht);
        if (rc) {
            comet_model_hw_free(&sc);
            goto fail;
        }
        json_array_append_new(systems, system_json(&sc, "scaled", desc, "scaled-system.json"));
        failures += predict_system(
            &sc, "scaled", &common_shapes, NULL, NULL, 0, preds, notes, err, errlen);
        comet_model_hw_free(&sc);
    }
    static const struct {
        const char *name, *desc;
        const sys_shapes *shapes;
    } presets[2] = { { "edge", "COMET edge: 2x2 mesh of 4 clusters, 4 cores each", &common_shapes },
        { "cloud", "COMET cloud: 4x4 mesh of 16 clusters, 16 cores each", &common_shapes } };
    for (int p = 0; p < 2; p++) {
        if ((rc = comet_model_hw_load(presets[p].name, &preset, e, sizeof e)) != 0) {
            json_array_append_new(notes, json_string(e));
            failures++;
            continue;
        }
        char src[64];
        snprintf(src, sizeof src, "configs/hw/%s.yaml", presets[p].name);
        json_array_append_new(systems, system_json(&preset, presets[p].name, presets[p].desc, src));
        failures += predict_system(
            &preset, presets[p].name, presets[p].shapes, NULL, NULL, 0, preds, notes, err, errlen);
        comet_model_hw_free(&preset);
    }
    rc = 0;
    out = json_pack("{s:s,s:s,s:{s:i,s:i},s:O,s:O,s:O}", "schema", "comet.predictions.v2", "time",
        comet_util_iso_time(now, sizeof now), "settings", "scale_cores", o.scale_cores,
        "scale_nodes", o.scale_nodes, "systems", systems, "predictions", preds, "notes", notes);
    char *t = out ? json_dumps(out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    snprintf(path, sizeof path, "%s/predictions.json", dir);
    if (!t)
        rc = comet_util_seterr(err, errlen, -ENOMEM, "predict: out of memory");
    else
        rc = comet_util_write_atomic(path, t, strlen(t), err, errlen);
    free(t);
    if (rc == 0 && failures)
        rc = comet_util_seterr(err, errlen, -ERANGE,
            "predict: %d of the predictions failed (see the notes in %s)", failures, path);
fail:
    if (have_base)
        comet_model_hw_free(&base);
    comet_results_set_free(&set);
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    json_decref(out);
    json_decref(systems);
    json_decref(preds);
    json_decref(notes);
    return rc;
}
