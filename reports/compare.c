/* comet compare: two result folders (every measurement both hold, side by
 * side, with the ratio of the medians and an interval from their CIs), or
 * two hardware descriptions (presets, hardware files, calibrated profiles:
 * their parameters and the model's best fused and unfused latency of the
 * same ops and shapes). Output: a text table, or JSON comet.compare.v1. */
#include "reports_internal.h"

#include "comet_model.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Prints and releases a JSON document. */
static void print_json(FILE *out, json_t *o)
{
    char *t = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (t)
        fprintf(out, "%s\n", t);
    free(t);
    json_decref(o);
}

/* Identity of a measurement: everything but its timings. */
static char *record_key(const comet_results_record *r)
{
    const char *f[] = { comet_results_kind_name(r->kind), r->op, r->variant, r->shape.text, r->link,
        r->params.text };
    size_t len = 64;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        len += strlen(f[i] ? f[i] : "") + 1;
    char *s = malloc(len);
    if (s) /* \x1f: a separator no field holds (the check refuses control characters) */
        snprintf(s, len, "%s\x1f%s\x1f%s\x1f%s\x1f%d\x1f%d\x1f%s\x1f%s", f[0], f[1], f[2],
            f[3] ? f[3] : "", r->threads, r->ranks, f[4], f[5] ? f[5] : "");
    return s;
}

static int is_measurement(const comet_results_record *r)
{
    return r->kind != COMET_RESULTS_RUN && r->stats.median_s > 0;
}

static void label_of(const comet_results_record *r, char *buf, size_t len)
{
    char sh[96];
    comet_results_shape_str(&r->shape, sh, sizeof sh);
    const char *v = r->variant;
    const double thr = r->threads, rk = r->ranks;
    char extra[48] = "";
    if (thr > 0)
        snprintf(extra, sizeof extra, " %gT", thr);
    if (rk > 1)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " %gr", rk);
    snprintf(buf, len, "%s %s%s%s %s%s", comet_results_kind_name(r->kind), r->op, v[0] ? "/" : "",
        v, sh, extra);
}

static int compare_results(
    const char *a, const char *b, int json, FILE *out, char *err, size_t errlen)
{
    rp_inputs A, B;
    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    int rc = rp_inputs_load(&A, a, NULL, err, errlen);
    if (rc == 0)
        rc = rp_inputs_load(&B, b, NULL, err, errlen);
    if (rc) {
        rp_inputs_free(&A);
        rp_inputs_free(&B);
        return rc;
    }
    char **kb = calloc(B.n ? B.n : 1, sizeof *kb);
    json_t *rows = json_array();
    size_t matched = 0, faster = 0, slower = 0, same = 0, only_a = 0;
    double logsum = 0;
    if (!kb || !rows) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "compare: out of memory");
        goto done;
    }
    for (size_t j = 0; j < B.n; j++)
        kb[j] = is_measurement(&B.recs[j]) ? record_key(&B.recs[j]) : NULL;
    if (!json)
        fprintf(out, "%-64s %12s %12s %8s %17s  %s\n", "measurement (A vs B)", "A median",
            "B median", "B/A", "interval", "verdict");
    for (size_t i = 0; i < A.n; i++) {
        const comet_results_record *ra = &A.recs[i];
        if (!is_measurement(ra))
            continue;
        char *ka = record_key(ra);
        size_t j = 0;
        while (ka && j < B.n && !(kb[j] && !strcmp(kb[j], ka)))
            j++;
        free(ka);
        if (j >= B.n) {
            only_a++;
            continue;
        }
        const comet_results_record *rb = &B.recs[j];
        free(kb[j]); /* each B record matches once */
        kb[j] = NULL;
        const comet_results_stats *sa = &ra->stats, *sb = &rb->stats;
        const double ma = sa->median_s, mb = sb->median_s;
        const double alo = sa->ci_lo_s, ahi = sa->ci_hi_s, blo = sb->ci_lo_s, bhi = sb->ci_hi_s;
        const double ratio = mb / ma;
        /* both CIs hold -> the ratio of the true medians lies in [blo/ahi, bhi/alo] */
        const int have = alo > 0 && ahi > 0 && blo > 0 && bhi > 0;
        const double lo = have ? blo / ahi : NAN, hi = have ? bhi / alo : NAN;
        const char *verdict = !have ? "no CI"
            : hi < 1                ? "B faster"
            : lo > 1                ? "B slower"
                                    : "same within CIs";
        faster += have && hi < 1;
        slower += have && lo > 1;
        same += !(have && (hi < 1 || lo > 1));
        matched++;
        logsum += log(ratio);
        char label[160];
        label_of(ra, label, sizeof label);
        if (json)
            json_array_append_new(rows,
                json_pack("{s:s,s:f,s:f,s:f,s:o,s:o,s:s}", "measurement", label, "a_median_s", ma,
                    "b_median_s", mb, "ratio_b_over_a", ratio, "ratio_lo",
                    have ? json_real(lo) : json_null(), "ratio_hi",
                    have ? json_real(hi) : json_null(), "verdict", verdict));
        else {
            char iv[40] = "-";
            if (have)
                snprintf(iv, sizeof iv, "%.3f-%.3f", lo, hi);
            fprintf(out, "%-64.64s %10.4g s %10.4g s %8.3f %17s  %s\n", label, ma, mb, ratio, iv,
                verdict);
        }
    }
    size_t only_b = 0;
    for (size_t j = 0; j < B.n; j++)
        only_b += kb[j] != NULL;
    const double gmean = matched ? exp(logsum / (double)matched) : NAN;
    if (json) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:o,s:{s:I,s:I,s:I,s:I,s:I,s:I,s:o}}", "schema",
            "comet.compare.v1", "kind", "results", "a", a, "b", b, "rows", rows, "summary",
            "matched", (json_int_t)matched, "b_faster", (json_int_t)faster, "b_slower",
            (json_int_t)slower, "same_within_cis", (json_int_t)same, "only_in_a",
            (json_int_t)only_a, "only_in_b", (json_int_t)only_b, "geomean_ratio_b_over_a",
            matched ? json_real(gmean) : json_null());
        rows = NULL;
        print_json(out, o);
    } else {
        fprintf(out,
            "\n%zu measurements in both: B faster in %zu, slower in %zu, the same within the "
            "medians' 95%% CIs in %zu; geometric mean of B/A %.3f. Only in A: %zu, only in B: "
            "%zu.\n",
            matched, faster, slower, same, gmean, only_a, only_b);
        if (!matched)
            fprintf(out,
                "(no measurement appears in both: same kind, op, variant, shape, "
                "threads, ranks, link and parameters)\n");
    }
done:
    if (kb)
        for (size_t j = 0; j < B.n; j++)
            free(kb[j]);
    free(kb);
    json_decref(rows);
    rp_inputs_free(&A);
    rp_inputs_free(&B);
    return rc;
}

/* The ops and shapes two hardware descriptions are compared on: COMET's
 * evaluation sizes (the edge preset's), the same on both sides. */
static const struct {
    comet_model_op op;
    const char *shape;
} cmp_ops[] = {
    { COMET_MODEL_GEMM_SOFTMAX, "M=1024,N=1024,K=256" },
    { COMET_MODEL_GEMM_LAYERNORM, "M=1024,N=1024,K=256" },
    { COMET_MODEL_ATTENTION, "heads=8,lq=1024,lk=1024,d=64" },
};

static json_t *hw_params(const comet_model_hw *h)
{
    const double hz = h->clock_ghz * 1e9;
    return json_pack("{s:s,s:s,s:f,s:i,s:i,s:f,s:f,s:f,s:f,s:f}", "name", h->name, "kind", h->kind,
        "clock_ghz", h->clock_ghz, "clusters", h->clusters, "cores_per_cluster", h->cores,
        "dram_GBs", h->dram.bw * hz / 1e9, "global_buffer_bytes", h->gb.capacity,
        "global_buffer_GBs", h->gb.bw * hz / 1e9, "local_buffer_bytes", h->lb.capacity,
        "local_buffer_GBs", h->lb.bw * hz / 1e9);
}

static int compare_hw(const char *a, const char *b, int json, FILE *out, char *err, size_t errlen)
{
    comet_model_hw ha, hb;
    memset(&ha, 0, sizeof ha);
    memset(&hb, 0, sizeof hb);
    int rc = comet_model_hw_load(a, &ha, err, errlen);
    if (rc == 0)
        rc = comet_model_hw_load(b, &hb, err, errlen);
    if (rc) {
        comet_model_hw_free(&ha);
        comet_model_hw_free(&hb);
        return rc;
    }
    comet_model_search *sa = malloc(sizeof *sa), *sb = malloc(sizeof *sb);
    json_t *rows = json_array();
    if (!sa || !sb || !rows) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "compare: out of memory");
        goto done;
    }
    if (!json) {
        const double za = ha.clock_ghz * 1e9, zb = hb.clock_ghz * 1e9;
        fprintf(out, "%-28s %16s %16s %8s\n", "parameter", ha.name, hb.name, "B/A");
#define PROW(label, va, vb) fprintf(out, "%-28s %16.6g %16.6g %8.3f\n", label, va, vb, (vb) / (va))
        PROW("clock (GHz)", ha.clock_ghz, hb.clock_ghz);
        PROW("clusters", (double)ha.clusters, (double)hb.clusters);
        PROW("cores per cluster", (double)ha.cores, (double)hb.cores);
        PROW("DRAM (GB/s)", ha.dram.bw * za / 1e9, hb.dram.bw * zb / 1e9);
        PROW("global buffer (MiB)", ha.gb.capacity / 1048576, hb.gb.capacity / 1048576);
        PROW("global buffer (GB/s)", ha.gb.bw * za / 1e9, hb.gb.bw * zb / 1e9);
        PROW("local buffer (KiB)", ha.lb.capacity / 1024, hb.lb.capacity / 1024);
#undef PROW
        fprintf(out, "\n%-44s %12s %12s %8s\n", "best mapping (model)", "A latency", "B latency",
            "B/A");
    }
    for (size_t i = 0; i < sizeof cmp_ops / sizeof cmp_ops[0]; i++) {
        comet_model_problem pb;
        memset(&pb, 0, sizeof pb);
        pb.op = cmp_ops[i].op;
        if ((rc = comet_model_problem_parse(cmp_ops[i].shape, &pb, err, errlen)) != 0)
            goto done;
        int ea = comet_model_explore(&ha, &pb, sa), eb = comet_model_explore(&hb, &pb, sb);
        for (int fused = 1; fused >= 0; fused--) {
            const comet_model_result *x = fused ? &sa->r_fused : &sa->r_unfused,
                                     *y = fused ? &sb->r_fused : &sb->r_unfused;
            const int ok = ea == 0 && eb == 0 && x->valid && y->valid;
            char label[96];
            snprintf(label, sizeof label, "%s %s %s", comet_model_op_name(pb.op), cmp_ops[i].shape,
                fused ? "fused" : "unfused");
            if (json)
                json_array_append_new(rows,
                    json_pack("{s:s,s:s,s:s,s:o,s:o,s:o}", "op", comet_model_op_name(pb.op),
                        "shape", cmp_ops[i].shape, "mapping", fused ? "best fused" : "best unfused",
                        "a_latency_s", x->valid ? json_real(x->seconds) : json_null(),
                        "b_latency_s", y->valid ? json_real(y->seconds) : json_null(),
                        "ratio_b_over_a", ok ? json_real(y->seconds / x->seconds) : json_null()));
            else if (ok)
                fprintf(out, "%-48s %10.4g s %10.4g s %8.3f\n", label, x->seconds, y->seconds,
                    y->seconds / x->seconds);
            else
                fprintf(out, "%-48s %12s %12s %8s\n", label, x->valid ? "" : "no mapping",
                    y->valid ? "" : "no mapping", "-");
        }
    }
    if (json) {
        json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:o}", "schema", "comet.compare.v1", "kind",
            "hardware", "a", hw_params(&ha), "b", hw_params(&hb), "rows", rows);
        rows = NULL;
        print_json(out, o);
    } else
        fprintf(out,
            "\nLatencies are the model's best mapping on each description (comet explore), on "
            "the same op and shape; B/A < 1: B is faster.\n");
done:
    json_decref(rows);
    free(sa);
    free(sb);
    comet_model_hw_free(&ha);
    comet_model_hw_free(&hb);
    return rc;
}

static int is_results_dir(const char *p)
{
    char q[RP_PATH + 16];
    struct stat st;
    snprintf(q, sizeof q, "%s/results", p);
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode) && stat(q, &st) == 0 && S_ISDIR(st.st_mode);
}

int comet_reports_compare(
    const char *a, const char *b, int json, FILE *out, char *err, size_t errlen)
{
    if (!a || !b || !out)
        return comet_util_seterr(err, errlen, -EINVAL, "compare: needs two inputs");
    const int ra = is_results_dir(a), rb = is_results_dir(b);
    if (ra != rb)
        return comet_util_seterr(err, errlen, -EINVAL,
            "compare: %s is a results folder and %s is not (compare two results folders, or two "
            "hardware descriptions or profiles)",
            ra ? a : b, ra ? b : a);
    return ra ? compare_results(a, b, json, out, err, errlen)
              : compare_hw(a, b, json, out, err, errlen);
}
