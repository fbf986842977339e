/* comet against every published measured training run in
 * docs/validation/published-runs.csv (docs/validation-published.md): each
 * row's stated configuration pinned (degrees, recomputation, sequence
 * parallelism, Megatron's rank order tp-dp-pp; microbatch and interleaving
 * where stated, else searched), its error against the measured iteration,
 * and the statistics over all rows (mean |error|, median signed error,
 * max |error|). No number here comes from a published result except the
 * measured iterations the errors are taken against. */
#include "comet_system.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_helpers.h"

/* Regression bounds: what the model met when the table was last made (51
 * runs, session 24: mean 5.5%, median -3.7%, max 21.6%:
 * docs/validation-published.md), not the aims (5%, +-2%, 12%),
 * none of which is met: the MT-NLG runs (-19..-22%) and the BLOOM runs at
 * TP 2-8 (-3..-15%) are optimistic, BLOOM at TP 1 pessimistic (+12%). */
#define PUB_MEAN   0.058
#define PUB_MEDIAN 0.04
#define PUB_MAX    0.22

typedef struct run {
    char id[32], source[32], system[32], rec[16], unit[16], engine[16], part[16], smax[24];
    int gpus, layers, hidden, heads, seq, vocab, batch, tp, pp, dp, mb, v, zero, sp, ov, acc, alibi;
    double measured;
} run;

#define MAXRUNS 128

static int load_runs(run *r, int max)
{
    char path[4096], line[1024];
    FILE *f = comet_test_open_source("docs/validation/published-runs.csv", path, sizeof path);
    if (!f)
        fail_msg("%s: cannot open", path);
    int n = 0, header = 0, schema = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        /* the columns below are v6's (v1 had no tp_overlap, grad_acc_kernel; v2 no
         * pipe_engine; v3 no pp_partition; v4 no softmax; v5 no alibi) */
        schema |= line[0] == '#' && strstr(line, "schema comet.published.v6") != NULL;
        if (line[0] == '#' || line[0] == '\n')
            continue;
        assert_true(schema);
        if (!header) {
            header = 1;
            assert_non_null(strstr(line, "id,source,system,gpus"));
            continue;
        }
        run *x = &r[n];
        const int k = sscanf(line,
            "%31[^,],%31[^,],%31[^,],%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%15[^,],%d,%d,%d,%15[^,"
            "],%15[^,],%23[^,],%d,"
            "%lf,%15[^,\n]",
            x->id, x->source, x->system, &x->gpus, &x->layers, &x->hidden, &x->heads, &x->seq,
            &x->vocab, &x->batch, &x->tp, &x->pp, &x->dp, &x->mb, &x->v, &x->zero, x->rec, &x->sp,
            &x->ov, &x->acc, x->engine, x->part, x->smax, &x->alibi, &x->measured, x->unit);
        if (k != 26)
            fail_msg("%s: row %d has %d fields, not 26: %s", path, n + 1, k, line);
        if (strcmp(x->part, "layers") && strcmp(x->part, "embedding"))
            fail_msg(
                "%s: row %d: pp_partition '%s' is not layers or embedding", path, n + 1, x->part);
        n++;
    }
    fclose(f);
    return n;
}

/* Seconds of a run published as per-GPU teraFLOP/s: Narayanan et al.
 * 2021's eq. 3 (recomputation included), the formula the paper counted
 * its teraFLOP/s with. */
static double measured_s(const run *x)
{
    if (!strcmp(x->unit, "s"))
        return x->measured;
    assert_string_equal(x->unit, "tflops_hw");
    const double B = x->batch, s = x->seq, l = x->layers, h = x->hidden, V = x->vocab;
    const double F = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    return F / (x->gpus * x->measured * 1e12);
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean |error|, median signed error and max |error| of n errors. */
static void stats(const double *err, int n, double *mean, double *median, double *mx)
{
    double sorted[MAXRUNS], sum = 0;
    *mx = 0;
    for (int i = 0; i < n; i++) {
        sorted[i] = err[i];
        sum += fabs(err[i]);
        *mx = fmax(*mx, fabs(err[i]));
    }
    qsort(sorted, (size_t)n, sizeof sorted[0], cmp_d);
    *median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    *mean = sum / n;
}

static void test_published_runs(void **st)
{
    (void)st;
    static run r[MAXRUNS];
    const int n = load_runs(r, MAXRUNS);
    assert_true(n >= 20);
    double err[MAXRUNS] = { 0 }, mx = 0;
    printf("| run | GPUs | TP/PP/DP | microbatch, interleave | recompute | measured s | comet s | "
           "error |\n|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        const run *x = &r[i];
        comet_model_hw h;
        comet_system sys;
        char e[512];
        if (comet_model_hw_load(x->system, &h, e, sizeof e))
            fail_msg("%s", e);
        comet_system_llm m;
        memset(&m, 0, sizeof m);
        snprintf(m.name, sizeof m.name, "%.31s", x->id);
        m.hidden = x->hidden;
        m.heads = m.kv_heads = x->heads;
        m.head_dim = x->hidden / x->heads;
        m.ffn = 4 * x->hidden;
        m.layers = x->layers;
        m.seq = x->seq;
        m.vocab = x->vocab;
        m.global_batch = x->batch;
        m.dtype = COMET_MODEL_FP16;
        m.bytes_per_elem = 2;
        m.dropout = 0.1; /* Megatron-LM's default, as the GPT presets */
        if (comet_system_from_hw(&h, m.dtype, x->gpus, &sys, e, sizeof e))
            fail_msg("%s: %s", x->id, e);
        comet_model_hw_free(&h);
        comet_system_recompute rec;
        assert_int_equal(comet_system_recompute_parse(x->rec, &rec), 0);
        comet_system_pipe_engine pe;
        assert_int_equal(comet_system_pipe_engine_parse(x->engine, &pe), 0);
        comet_system_softmax_rule smr;
        if (comet_system_softmax_rule_parse(x->smax, &smr))
            fail_msg("%s: softmax '%s' is not fused, megatron or megatron-ds-2022", x->id, x->smax);
        comet_system_opts o = { .phase = COMET_SYSTEM_TRAIN,
            .batch = x->batch,
            .microbatch = x->mb,
            .recompute = (int)rec,
            .seq_parallel = x->sp,
            .exec = COMET_SYSTEM_EXEC_KERNEL,
            .tp = x->tp,
            .pp = x->pp,
            .dp = x->dp,
            .interleave = x->v,
            .zero = x->zero,
            .tp_overlap = x->ov,
            .grad_acc_kernel = x->acc,
            .pipe_engine = (int)pe,
            .pp_embed_slots = !strcmp(x->part, "embedding"),
            .softmax_rule = (int)smr,
            .alibi_baddbmm = x->alibi,
            .order_pinned = 1,
            .order = { COMET_SYSTEM_TP, COMET_SYSTEM_DP, COMET_SYSTEM_PP } };
        comet_system_result best;
        comet_system_space sp;
        if (x->mb > 0 && x->v > 0) {
            /* every degree stated: evaluated as stated (explore keeps to
             * stage counts that divide the layers; BLOOM's 70 layers ran
             * on 12 stages) */
            comet_system_config c;
            memset(&c, 0, sizeof c);
            c.tp = x->tp;
            c.pp = x->pp;
            c.dp = x->dp;
            c.microbatch = x->mb;
            c.interleave = x->v;
            c.zero = x->zero;
            c.recompute = rec;
            c.seq_parallel = x->sp;
            c.exec = COMET_SYSTEM_EXEC_KERNEL;
            memcpy(c.order, o.order, sizeof c.order);
            assert_int_equal(comet_system_eval(&sys, &m, &o, &c, &best), 0);
            if (!best.feasible)
                fail_msg("%s: %s", x->id, best.reason);
        } else if (comet_system_explore(&sys, &m, &o, 1, &best, &sp) != 1)
            fail_msg("%s: nothing fits (%g configurations tried)", x->id, sp.configs);
        const double meas = measured_s(x);
        err[i] = best.step_s / meas - 1;
        printf("| %s | %d | %d/%d/%d%s | %d%s, %d%s | %s%s | %.4g | %.4g | %+.1f%% |\n", x->id,
            x->gpus, x->tp, x->pp, x->dp, x->zero ? " ZeRO-1" : "", best.cfg.microbatch,
            x->mb ? "" : " (searched)", best.cfg.interleave, x->v ? "" : " (searched)", x->rec,
            x->sp ? " + SP" : "", meas, best.step_s, 100 * err[i]);
        /* physics, whatever the error: at or above the bound, memory fits */
        assert_true(best.step_s >= best.bound_s * (1 - 1e-9));
        assert_true(best.mem.total <= best.mem.capacity);
        comet_system_free(&sys);
    }
    double mean, median;
    stats(err, n, &mean, &median, &mx);
    printf("\n| set | runs | mean abs error | median signed error | max abs error |\n"
           "|---|---|---|---|---|\n| all | %d | %.1f%% | %+.1f%% | %.1f%% |\n",
        n, 100 * mean, 100 * median, 100 * mx);
    /* per source (the CSV's source column), in the order they first appear */
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = !strcmp(r[j].source, r[i].source);
        if (seen)
            continue;
        double e[MAXRUNS], a, md, m;
        int k = 0;
        for (int j = i; j < n; j++)
            if (!strcmp(r[j].source, r[i].source))
                e[k++] = err[j];
        stats(e, k, &a, &md, &m);
        printf("| %s | %d | %.1f%% | %+.1f%% | %.1f%% |\n", r[i].source, k, 100 * a, 100 * md,
            100 * m);
    }
    printf("%d published runs: mean |error| %.2f%%, median signed error %+.2f%%, max |error| "
           "%.2f%% (aims: <= 5%%, within +-2%%, <= 12%%)\n",
        n, 100 * mean, 100 * median, 100 * mx);
    /* the bounds this model meets today (docs/validation-published.md);
     * the aims are printed beside them */
    if (!(mean <= PUB_MEAN && fabs(median) <= PUB_MEDIAN && mx <= PUB_MAX))
        fail_msg("published runs: mean |error| %.3g, median %.3g, max %.3g beyond %.3g, %.3g, %.3g",
            mean, median, mx, PUB_MEAN, PUB_MEDIAN, PUB_MAX);
}

/* comet beside Calculon (docs/validation/calculon-terms.csv: Calculon's
 * breakdown at a stated commit, written by scripts/calculon-compare.py),
 * term by term on the same configurations: the step, the memory per chip,
 * and the tensor-parallel communication (with sequence parallelism it was
 * 0.42-0.74x of Calculon's before the backward's re-all-gather was charged;
 * docs/system.md explains every remaining difference). */
static void test_calculon_terms(void **st)
{
    (void)st;
    char path[4096], line[1024];
    FILE *f = comet_test_open_source("docs/validation/calculon-terms.csv", path, sizeof path);
    if (!f)
        fail_msg("%s: cannot open", path);
    int n = 0, header = 0;
    printf("| config | step | compute+memory+recompute | TP | PP | DP | bubble | memory/GPU |\n"
           "|---|---|---|---|---|---|---|---|\n");
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!header++) {
            assert_non_null(strstr(line, "id,system,gpus,batch"));
            continue;
        }
        char id[32], sysn[32], rec[16];
        int gpus, batch, hidden, heads, hd, ffn, layers, seq, tp, pp, dp, mb, v, sp;
        double cm, re, tpc, ppc, dpc, bub, opt, step, mem;
        const int k = sscanf(line,
            "%31[^,],%31[^,],%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%15[^,],%d,%lf,%lf,%lf,%lf,%lf,"
            "%lf,%lf,%lf,%lf",
            id, sysn, &gpus, &batch, &hidden, &heads, &hd, &ffn, &layers, &seq, &tp, &pp, &dp, &mb,
            &v, rec, &sp, &cm, &re, &tpc, &ppc, &dpc, &bub, &opt, &step, &mem);
        if (k != 26)
            fail_msg("%s: %d fields, not 26: %s", path, k, line);
        comet_model_hw h;
        comet_system sys;
        char e[512];
        comet_system_llm m;
        memset(&m, 0, sizeof m);
        m.hidden = hidden;
        m.heads = m.kv_heads = heads;
        m.head_dim = hd;
        m.ffn = ffn;
        m.layers = layers;
        m.seq = seq;
        m.global_batch = batch;
        m.dtype = COMET_MODEL_FP16;
        m.bytes_per_elem = 2;
        m.dropout = 0.1;
        if (comet_model_hw_load(sysn, &h, e, sizeof e)
            || comet_system_from_hw(&h, m.dtype, gpus, &sys, e, sizeof e))
            fail_msg("%s: %s", id, e);
        comet_model_hw_free(&h);
        comet_system_opts o = { .phase = COMET_SYSTEM_TRAIN, .batch = batch };
        comet_system_config c;
        memset(&c, 0, sizeof c);
        c.tp = tp;
        c.pp = pp;
        c.dp = dp;
        c.microbatch = mb;
        c.interleave = v;
        c.order[0] = COMET_SYSTEM_TP;
        c.order[1] = COMET_SYSTEM_DP;
        c.order[2] = COMET_SYSTEM_PP;
        assert_int_equal(comet_system_recompute_parse(rec, &c.recompute), 0);
        c.seq_parallel = sp;
        c.exec = COMET_SYSTEM_EXEC_KERNEL;
        comet_system_result r;
        assert_int_equal(comet_system_eval(&sys, &m, &o, &c, &r), 0);
        if (!r.feasible)
            fail_msg("%s: %s", id, r.reason);
        const double qs = r.step_s / step, qm = r.mem.total / mem,
                     qc
            = (r.breakdown.compute_s + r.breakdown.memory_s + r.breakdown.recompute_s) / (cm + re),
                     qt = r.breakdown.tp_s / tpc;
        printf("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", id, qs, qc, qt,
            ppc > 0 ? r.breakdown.pp_s / ppc : NAN, dpc > 0 ? r.breakdown.dp_s / dpc : NAN,
            bub > 0 ? r.breakdown.bubble_s / bub : NAN, qm);
        /* two independent models of the same runs: the step within 10% (11%
         * above: comet's A100 GEMMs pay tile and wave quantization, gemm.tiles,
         * Calculon's do not: 0.5-0.7 points more on these steps), the
         * memory per GPU within 2% (the same classes counted), compute and
         * memory traffic 0.9-1.15x (H100: comet's datasheet HBM 3.35 TB/s,
         * Calculon's 3072 GB/s), the TP communication 0.75-1.1x (comet's
         * switch collectives, in-network on NVSwitch 3, against Calculon's
         * per-operation scalars) */
        if (!(qs >= 0.9 && qs <= 1.11 && qm >= 0.98 && qm <= 1.02 && qc >= 0.9 && qc <= 1.15
                && qt >= 0.75 && qt <= 1.1))
            fail_msg("%s: comet / Calculon step %.3f, memory %.3f, compute+memory %.3f, TP %.3f",
                id, qs, qm, qc, qt);
        comet_system_free(&sys);
        n++;
    }
    fclose(f);
    assert_true(n >= 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_runs),
        cmocka_unit_test(test_calculon_terms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
