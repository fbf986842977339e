/* comet validate --system: every "llm" record (comet bench llm) predicted by
 * the system model with its own configuration, on this machine's profile as
 * the chip (one rank with its threads) and the profile's fits of the
 * record's link as the network; the error of the step and of each
 * breakdown term. */
#include "cli.h"

#include "comet_model.h"
#include "comet_results.h"
#include "comet_system.h"
#include "comet_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The terms the bench times and the model breaks a step into. */
enum { T_GEMM, T_ATTN, T_VEC, T_TP, T_DP, T_PP, T_BUBBLE, T_OPT, T_REC, NT };
static const char *const term_names[NT]
    = { "gemm", "attention", "vector", "tp", "dp", "pp", "bubble", "optimizer", "recompute" };

/* Which term a kernel of the system model's layer graph belongs to: the
 * backward's d*, w* kernels with their forward kernel; re_* (recomputed)
 * to recompute. */
static int kernel_term(const char *name)
{
    static const char *const gemm[] = { "qkv", "q", "k", "v", "proj", "ffn_in", "ffn_out", NULL };
    static const char *const attn[] = { "score", "softmax", "attn_drop", "context", NULL };
    static const char *const vec[] = { "ln1", "res1", "ln2", "act", "res2", NULL };
    if (!strncmp(name, "re_", 3))
        return T_REC;
    char b[16];
    snprintf(b, sizeof b, "%s", name);
    size_t l = strlen(b);
    if (l > 2 && b[l - 2] == '_' && (b[l - 1] == 'a' || b[l - 1] == 'b'))
        b[l - 2] = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *n = pass ? b + 1 : b;
        if (pass && b[0] != 'd' && b[0] != 'w')
            break;
        for (int i = 0; gemm[i]; i++)
            if (!strcmp(n, gemm[i]))
                return T_GEMM;
        for (int i = 0; attn[i]; i++)
            if (!strcmp(n, attn[i]))
                return T_ATTN;
        for (int i = 0; vec[i]; i++)
            if (!strcmp(n, vec[i]))
                return T_VEC;
    }
    return T_VEC;
}

typedef struct vrow {
    const comet_results_record *rec;
    double meas, pred; /* step seconds */
    double mt[NT], pt[NT]; /* measured and predicted terms */
    double other; /* measured step beyond the timed terms (loss, loop, barrier waits) */
    char why[COMET_ERRLEN]; /* not predicted: why */
} vrow;

/* The record's configuration through the system model. */
static int predict(const comet_model_hw *hw, const comet_results_record *r, vrow *v)
{
    const comet_results_shape *s = &r->shape;
    const comet_results_params *p = &r->params;
    comet_system_llm m;
    memset(&m, 0, sizeof m);
    snprintf(m.name, sizeof m.name, "llm-record");
    m.hidden = (int)s->hidden;
    m.heads = (int)s->H;
    m.head_dim = (int)s->d;
    m.kv_heads = m.heads;
    m.ffn = (int)s->ffn;
    m.layers = (int)s->layers;
    m.seq = comet_results_has(s->seq) ? (int)s->seq : 1;
    m.global_batch = (int)s->B;
    m.microbatch = (int)s->microbatch;
    m.bytes_per_elem = 4;
    m.dtype = COMET_MODEL_FP32;
    comet_system_opts o;
    memset(&o, 0, sizeof o);
    if (comet_system_phase_parse(p->phase, &o.phase)) {
        snprintf(v->why, sizeof v->why, "unknown phase '%s'", p->phase);
        return -1;
    }
    o.batch = m.global_batch;
    o.microbatch = m.microbatch;
    o.seq = m.seq;
    o.context
        = o.phase == COMET_SYSTEM_DECODE && comet_results_has(s->context) ? (int)s->context : 0;
    comet_system_config c;
    memset(&c, 0, sizeof c);
    c.tp = (int)p->tp;
    c.pp = comet_results_has(p->pp) ? (int)p->pp : 1;
    c.dp = (int)p->dp;
    c.interleave = 1;
    c.microbatch = m.microbatch;
    c.order[0] = COMET_SYSTEM_TP;
    c.order[1] = COMET_SYSTEM_DP;
    c.order[2] = COMET_SYSTEM_PP;
    c.recompute
        = !strcmp(p->recompute, "full") ? COMET_SYSTEM_RECOMPUTE_FULL : COMET_SYSTEM_RECOMPUTE_NONE;
    o.recompute = (int)c.recompute;
    c.seq_parallel = 0;
    o.seq_parallel = 0;
    c.exec = COMET_SYSTEM_EXEC_KERNEL; /* the bench runs kernel by kernel */
    o.exec = (int)c.exec;
    if (!(c.tp >= 1 && c.dp >= 1 && m.hidden > 0 && m.heads > 0 && m.layers > 0)) {
        snprintf(v->why, sizeof v->why, "incomplete llm record");
        return -1;
    }
    comet_system sys;
    char err[COMET_ERRLEN];
    if (comet_system_from_profile(hw, m.dtype, r->threads > 0 ? r->threads : 1, c.tp * c.pp * c.dp,
            r->link, &sys, err, sizeof err)) {
        snprintf(v->why, sizeof v->why, "%s", err);
        return -1;
    }
    comet_system_result res;
    int rc = comet_system_eval(&sys, &m, &o, &c, &res);
    comet_system_free(&sys);
    if (rc || !res.feasible) {
        snprintf(v->why, sizeof v->why, "%s", rc ? "not a valid configuration" : res.reason);
        return -1;
    }
    v->pred = res.step_s;
    /* per layer, per microbatch partitions (kernel by kernel: one kernel
     * each) x layers per stage x microbatches */
    const double mbs = (double)(m.global_batch / c.dp) / c.microbatch;
    const double per = mbs * (double)m.layers / c.pp;
    for (int pass = 0; pass < 2; pass++) {
        const comet_system_parts *pa = &res.parts[pass];
        for (int i = 0; i < pa->n; i++) {
            const int k0 = i ? pa->end[i - 1] : 0;
            const int t = kernel_term(pa->kernel[k0]);
            if (t == T_REC) {
                v->pt[T_REC] += per * pa->time_s[i];
                continue;
            }
            v->pt[t] += per * (pa->time_s[i] - pa->network_s[i]);
            v->pt[T_TP] += per * pa->network_s[i];
        }
    }
    v->pt[T_DP] = res.breakdown.dp_s;
    v->pt[T_PP] = res.breakdown.pp_s;
    v->pt[T_BUBBLE] = res.breakdown.bubble_s;
    v->pt[T_OPT] = res.breakdown.optimizer_s;
    /* measured */
    const comet_results_timers *tm = &r->timers;
    const double mt[NT] = { tm->gemm_s, tm->attention_s, tm->vector_s, tm->tp_s, tm->dp_s, tm->pp_s,
        tm->bubble_s, tm->optimizer_s, tm->recompute_s };
    double sum = 0;
    for (int k = 0; k < NT; k++) {
        v->mt[k] = comet_results_has(mt[k]) ? mt[k] : 0;
        sum += v->mt[k];
    }
    v->meas = r->stats.median_s;
    v->other = v->meas - sum;
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quant(double *x, int n, double q)
{
    if (n <= 0)
        return NAN;
    qsort(x, (size_t)n, sizeof *x, cmp_d);
    const double h = (n - 1) * q;
    const int i = (int)floor(h);
    return i + 1 < n ? x[i] + (h - i) * (x[i + 1] - x[i]) : x[n - 1];
}

int comet_cli_validate_system(const comet_model_hw *hw, const char *profile,
    const comet_results_record *recs, size_t n, int json_out)
{
    vrow *rows = calloc(n + 1, sizeof *rows);
    double *e = calloc(n + 1, sizeof *e), *te = calloc((n + 1) * NT, sizeof *te);
    int nr = 0, nskip = 0, nte[NT] = { 0 };
    if (!rows || !e || !te) {
        free(rows);
        free(e);
        free(te);
        comet_cli_error("validate", "out of memory");
        return COMET_EXIT_FAIL;
    }
    for (size_t i = 0; i < n; i++) {
        if (recs[i].kind != COMET_RESULTS_LLM || recs[i].valid == 0)
            continue;
        vrow *v = &rows[nr];
        v->rec = &recs[i];
        if (predict(hw, &recs[i], v)) {
            comet_util_info("comet: validate: an llm record not predicted: %s", v->why);
            nskip++;
            continue;
        }
        e[nr] = fabs(v->pred - v->meas) / v->meas;
        /* a term's error where it is at least 10% of the measured step */
        for (int k = 0; k < NT; k++)
            if (v->mt[k] >= 0.1 * v->meas && v->mt[k] > 0)
                te[(size_t)k * (n + 1) + nte[k]++] = (v->pt[k] - v->mt[k]) / v->mt[k];
        nr++;
    }
    if (nr == 0) {
        comet_cli_error("validate",
            "--system: no llm records to validate (run `comet bench llm`)%s",
            nskip ? "; the ones found could not be predicted" : "");
        free(rows);
        free(e);
        free(te);
        return COMET_EXIT_FAIL;
    }
    double *ecopy = malloc((size_t)nr * sizeof *ecopy);
    memcpy(ecopy, e, (size_t)nr * sizeof *e);
    const double med = quant(ecopy, nr, 0.5), p90 = quant(ecopy, nr, 0.9);
    free(ecopy);
    double tmed[NT], tmabs[NT];
    for (int k = 0; k < NT; k++) {
        double *x = te + (size_t)k * (n + 1);
        double *a = malloc(((size_t)nte[k] + 1) * sizeof *a);
        for (int j = 0; j < nte[k] && a; j++)
            a[j] = fabs(x[j]);
        tmabs[k] = a ? quant(a, nte[k], 0.5) : NAN;
        tmed[k] = quant(x, nte[k], 0.5);
        free(a);
    }
    if (json_out) {
        json_t *arr = json_array();
        for (int i = 0; i < nr; i++) {
            const vrow *v = &rows[i];
            const comet_results_record *r = v->rec;
            json_t *terms = json_object();
            for (int k = 0; k < NT; k++)
                json_object_set_new(terms, term_names[k],
                    json_pack("{s:f,s:f}", "measured_s", v->mt[k], "predicted_s", v->pt[k]));
            json_array_append_new(arr,
                json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:f,s:f,s:f,s:o}",
                    "phase", r->params.phase, "attention", r->variant, "recompute",
                    r->params.recompute, "tp", (int)r->params.tp, "dp", (int)r->params.dp,
                    "threads", r->threads, "hidden", (int)r->shape.hidden, "layers",
                    (int)r->shape.layers, "batch", (int)r->shape.B, "seq",
                    comet_results_has(r->shape.seq) ? (int)r->shape.seq : 0, "context",
                    comet_results_has(r->shape.context) ? (int)r->shape.context : 0, "link",
                    r->link, "measured_s", v->meas, "predicted_s", v->pred, "rel_err",
                    (v->pred - v->meas) / v->meas, "other_measured_s", v->other, "terms", terms));
        }
        json_t *tj = json_object();
        for (int k = 0; k < NT; k++)
            json_object_set_new(tj, term_names[k],
                json_pack("{s:i,s:o,s:o}", "records_at_10pct", nte[k], "median_rel_err",
                    nte[k] ? json_real(tmed[k]) : json_null(), "median_abs_rel_err",
                    nte[k] ? json_real(tmabs[k]) : json_null()));
        json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:f,s:f,s:o,s:o}", "schema",
            "comet.validate_system.v1", "profile", profile, "records", nr, "skipped", nskip,
            "median_abs_rel_err", med, "p90_abs_rel_err", p90, "terms", tj, "rows", arr);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(j);
    } else {
        printf(
            "system model against %d measured steps (comet bench llm), profile %s\n", nr, profile);
        printf("%-7s %-7s %-4s %-2s %-2s %-3s %-5s %9s %9s %7s  %s\n", "phase", "attn", "rec", "tp",
            "dp", "thr", "h", "meas ms", "pred ms", "err",
            "terms measured/predicted ms: gemm attention vector tp dp optimizer recompute");
        for (int i = 0; i < nr; i++) {
            const vrow *v = &rows[i];
            const comet_results_record *r = v->rec;
            printf("%-7s %-7s %-4s %-2.0f %-2.0f %-3d %-5.0f %9.3f %9.3f %+6.1f%% ",
                r->params.phase, r->variant, r->params.recompute, r->params.tp, r->params.dp,
                r->threads, r->shape.hidden, 1e3 * v->meas, 1e3 * v->pred,
                100 * (v->pred - v->meas) / v->meas);
            const int show[] = { T_GEMM, T_ATTN, T_VEC, T_TP, T_DP, T_OPT, T_REC };
            for (size_t k = 0; k < sizeof show / sizeof *show; k++)
                printf(" %.2f/%.2f", 1e3 * v->mt[show[k]], 1e3 * v->pt[show[k]]);
            printf("\n");
        }
        printf("step: median |error| %.1f%%, p90 %.1f%% over %d records%s\n", 100 * med, 100 * p90,
            nr, nskip ? " (some not predicted: see above)" : "");
        printf("per term, over the records where it is >= 10%% of the measured step "
               "(signed median: + the model is slower):\n");
        for (int k = 0; k < NT; k++)
            if (nte[k])
                printf("  %-10s %3d records, median error %+.1f%%, median |error| %.1f%%\n",
                    term_names[k], nte[k], 100 * tmed[k], 100 * tmabs[k]);
    }
    free(rows);
    free(e);
    free(te);
    return COMET_EXIT_OK;
}
