/* The system model against whole measured steps: every "llm" record
 * (comet bench llm) predicted with its own configuration, on this machine's
 * profile as the chip (one rank with its threads) and the profile's fits of
 * the record's link as the network; each breakdown term beside the bench's
 * timer of it. Used by `comet validate --system` and the report section
 * "Whole steps: measured vs predicted". */
#include "comet_model.h"
#include "comet_reports.h"
#include "comet_system.h"
#include "comet_util.h"
#include "reports_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The terms the bench times and the model breaks a step into. */
enum { T_GEMM, T_ATTN, T_VEC, T_TP, T_DP, T_PP, T_BUBBLE, T_OPT, T_REC, NT };

const char *const comet_reports_sysv_terms[COMET_REPORTS_SYSV_NTERMS]
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

typedef comet_reports_sysv_row vrow;

/* The record's configuration through the system model. */
static int predict(
    const comet_model_hw *hw, const comet_results_record *r, vrow *v, char *why, size_t wl)
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
        snprintf(why, wl, "unknown phase '%s'", p->phase);
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
    /* the bench's attention backward recomputes the scores and their
     * softmax from Q and K (FlashAttention's way, nothing of s x s stored):
     * the layer graph's selective recomputation of the attention core
     * (Korthikanti et al. 2022), timed with the attention */
    const int full = !strcmp(p->recompute, "full");
    c.recompute = full                  ? COMET_SYSTEM_RECOMPUTE_FULL
        : o.phase == COMET_SYSTEM_TRAIN ? COMET_SYSTEM_RECOMPUTE_SELECTIVE
                                        : COMET_SYSTEM_RECOMPUTE_NONE;
    o.recompute = (int)c.recompute;
    c.seq_parallel = p->seq_parallel > 0 && c.tp > 1;
    o.seq_parallel = c.seq_parallel;
    o.one_step = 1; /* the bench times each step between barriers */
    c.exec = COMET_SYSTEM_EXEC_KERNEL; /* the bench runs kernel by kernel */
    o.exec = (int)c.exec;
    if (!(c.tp >= 1 && c.dp >= 1 && m.hidden > 0 && m.heads > 0 && m.layers > 0)) {
        snprintf(why, wl, "incomplete llm record");
        return -1;
    }
    comet_system sys;
    char err[COMET_ERRLEN];
    /* the ranks that shared a host (the record's nodes; older records: each
     * rank alone, as before) compute beside each other */
    const int np = c.tp * c.pp * c.dp;
    const int host = r->nodes >= 1 && r->nodes <= np ? (np + r->nodes - 1) / r->nodes : 1;
    if (comet_system_from_profile(hw, m.dtype, r->threads > 0 ? r->threads : 1, np, host, r->link,
            &sys, err, sizeof err)) {
        snprintf(why, wl, "%s", err);
        return -1;
    }
    comet_system_result res;
    int rc = comet_system_eval(&sys, &m, &o, &c, &res);
    comet_system_free(&sys);
    if (rc || !res.feasible) {
        snprintf(why, wl, "%s", rc ? "not a valid configuration" : res.reason);
        return -1;
    }
    v->predicted_s = res.step_s;
    /* per layer, per microbatch partitions (kernel by kernel: one kernel
     * each) x layers per stage x microbatches */
    const double mbs = (double)(m.global_batch / c.dp) / c.microbatch;
    const double per = mbs * (double)m.layers / c.pp;
    for (int pass = 0; pass < 2; pass++) {
        const comet_system_parts *pa = &res.parts[pass];
        for (int i = 0; i < pa->n; i++) {
            const int k0 = i ? pa->end[i - 1] : 0;
            int t = kernel_term(pa->kernel[k0]);
            if (t == T_REC && !full) /* the attention core again: the attention's timer */
                t = kernel_term(pa->kernel[k0] + 3);
            if (t == T_REC) {
                v->predicted[T_REC] += per * pa->time_s[i];
                continue;
            }
            v->predicted[t] += per * (pa->time_s[i] - pa->network_s[i]);
            v->predicted[T_TP] += per * pa->network_s[i];
        }
    }
    v->predicted[T_DP] = res.breakdown.dp_s;
    /* records that time the receives' waits apart (bubble_s, with the
     * TP timer split by kind) against the model's bubble; older ones hold
     * the waits inside pp_s: one term */
    const int apart = comet_results_has(r->timers.tp_allreduce_s);
    v->predicted[T_PP] = res.breakdown.pp_s + (apart ? 0 : res.breakdown.bubble_s);
    v->predicted[T_BUBBLE] = apart ? res.breakdown.bubble_s : 0;
    v->predicted[T_OPT] = res.breakdown.optimizer_s;
    /* measured */
    const comet_results_timers *tm = &r->timers;
    const double mt[NT] = { tm->gemm_s, tm->attention_s, tm->vector_s, tm->tp_s, tm->dp_s, tm->pp_s,
        tm->bubble_s, tm->optimizer_s, tm->recompute_s };
    double sum = 0;
    for (int k = 0; k < NT; k++) {
        v->measured[k] = comet_results_has(mt[k]) ? mt[k] : 0;
        sum += v->measured[k];
    }
    v->measured_s = r->stats.median_s;
    v->other_s = v->measured_s - sum;
    return 0;
}

int comet_reports_system_validate(const comet_model_hw *hw, const comet_results_record *recs,
    size_t n, comet_reports_sysv_row *rows, size_t cap, int *skipped, char *why, size_t whylen)
{
    int nr = 0, ns = 0;
    if (why && whylen)
        why[0] = 0;
    for (size_t i = 0; i < n && (size_t)nr < cap; i++) {
        if (recs[i].kind != COMET_RESULTS_LLM || recs[i].valid == 0)
            continue;
        char w[COMET_ERRLEN];
        memset(&rows[nr], 0, sizeof rows[nr]);
        rows[nr].rec = &recs[i];
        if (predict(hw, &recs[i], &rows[nr], w, sizeof w)) {
            if (!ns && why)
                snprintf(why, whylen, "%s", w);
            ns++;
            continue;
        }
        nr++;
    }
    if (skipped)
        *skipped = ns;
    return nr;
}

/* Report section: the same rows, their step errors and the terms. */
int rp_sec_sysval(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    rp_h2(d, "wholesteps", "Whole steps: measured vs predicted");
    size_t nl = 0;
    for (size_t i = 0; i < in->n; i++)
        nl += in->recs[i].kind == COMET_RESULTS_LLM;
    if (!nl) {
        rp_p(d, "No whole-step records (`comet bench llm`; `comet run --full` measures a set).");
        return 0;
    }
    if (!in->have_hw) {
        rp_p(d, "%zu whole-step records, no profile to predict them with (%s).", nl,
            in->profile_note);
        return 0;
    }
    comet_reports_sysv_row *rows = calloc(nl, sizeof *rows);
    if (!rows)
        return -ENOMEM;
    int skipped = 0;
    char why[COMET_ERRLEN];
    const int nr = comet_reports_system_validate(
        &in->hw, in->recs, in->n, rows, nl, &skipped, why, sizeof why);
    rp_p(d,
        "Each record is a GPT-style decoder stack's step measured by `comet bench llm` (fp32, "
        "comet's kernels and OpenBLAS, Megatron tensor, sequence, pipeline and data parallelism "
        "over MPI ranks: ranks tpN, +sp, ppN, dpN, xN thr threads each); the "
        "system model predicts it with the record's own configuration, this machine's profile as "
        "each rank (GEMM efficiency from the measured grid, the memory-bound kernels from the "
        "measured row passes and vector costs) and the profile's fits of the record's link "
        "between ranks (`comet validate --system`; docs/system.md). Terms: measured / predicted "
        "ms.");
    rp_table(d, "lllrrrrrrrrrr",
        "phase\tattention\tranks\thidden\tmeasured ms\tpredicted "
        "ms\terror\tgemm\tattention"
        "\tvector\ttp\tpp\tbubble");
    double *e = malloc(((size_t)nr + 1) * sizeof *e);
    for (int i = 0; i < nr; i++) {
        const comet_reports_sysv_row *v = &rows[i];
        const comet_results_record *r = v->rec;
        if (e)
            e[i] = fabs(v->predicted_s - v->measured_s) / v->measured_s;
        char grid[48];
        rp_sysval_grid(r, grid, sizeof grid);
        rp_row(d,
            "%s%s\t%s\t%s\t%.0f\t%.3f\t%.3f\t%+.1f%%\t%.2f / %.2f\t%.2f / %.2f"
            "\t%.2f / %.2f\t%.2f / %.2f\t%.2f / %.2f\t%.2f / %.2f",
            r->params.phase, strcmp(r->params.recompute, "full") ? "" : " (recompute)", r->variant,
            grid, r->shape.hidden, 1e3 * v->measured_s, 1e3 * v->predicted_s,
            100 * (v->predicted_s - v->measured_s) / v->measured_s, 1e3 * v->measured[T_GEMM],
            1e3 * v->predicted[T_GEMM], 1e3 * v->measured[T_ATTN], 1e3 * v->predicted[T_ATTN],
            1e3 * v->measured[T_VEC], 1e3 * v->predicted[T_VEC], 1e3 * v->measured[T_TP],
            1e3 * v->predicted[T_TP], 1e3 * v->measured[T_PP], 1e3 * v->predicted[T_PP],
            1e3 * v->measured[T_BUBBLE], 1e3 * v->predicted[T_BUBBLE]);
    }
    rp_table_end(d);
    if (e && nr > 0)
        rp_p(d, "Step error over %d records: median %.1f%%, p90 %.1f%%%s%s.", nr,
            100 * comet_util_quantile(e, (size_t)nr, 0.5),
            100 * comet_util_quantile(e, (size_t)nr, 0.9), skipped ? "; not predicted: " : "",
            skipped ? why : "");
    free(e);
    const int frc = rp_sysval_figure(c, rows, nr);
    free(rows);
    return frc;
}
