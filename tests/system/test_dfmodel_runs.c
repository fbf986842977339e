/* comet beside DFModel's released runs, on the summaries checked in at
 * docs/validation/dfmodel-runs.csv (DFModel @04f93d5, each row citing its
 * directory): the trend of Fig. 19 (the speedup of dataflow over kernel by
 * kernel in each SRAM x DRAM cell, ranked: Spearman's rho between
 * DFModel's and comet's) and Table VI's chain (kernel by kernel on the
 * ring, dataflow on the ring, dataflow on the 4x2 torus). comet runs the
 * same system and workload: the paper's SN10 (sn10x8-torus: GEMMs at
 * peak, as the Fig. 19 runs, which give no compute_util) with the cell's
 * on-chip memory and DDR bandwidth, GPT-3 175B's forward over 2304
 * sequences at DFModel's degrees (TP 4 x DP 2), the microbatch searched
 * as in test_table6_chain (docs/system.md says why). No number of DFModel
 * sets anything of comet's. */
#include "comet_system.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Regression bound: the rank correlation comet meets today (0.80 over
 * the eight cells with both runs; docs/system.md), not the aim of
 * 0.9, which it does not meet. */
#define FIG19_RHO_MIN 0.75
#define FIG19_RHO_AIM 0.9

typedef struct drun {
    char id[48], study[16], exec[16], dir[160];
    double sram_mib, dram_gbps, final_s, util;
    int tp, dp, nconfig;
} drun;

#define MAXR 64

static int load(drun *r, int max)
{
    const char *src = getenv("COMET_SOURCE_DIR");
    char path[4096], line[1024];
    snprintf(path, sizeof path, "%s/docs/validation/dfmodel-runs.csv", src ? src : ".");
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("%s: cannot open", path);
    int n = 0, header = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (!header) {
            header = 1;
            assert_non_null(strstr(line, "id,study,execution,sram_mib,dram_gbps"));
            continue;
        }
        drun *x = &r[n];
        const int k = sscanf(line, "%47[^,],%15[^,],%15[^,],%lf,%lf,%d,%d,%d,%lf,%lf,%159[^,\n]",
            x->id, x->study, x->exec, &x->sram_mib, &x->dram_gbps, &x->tp, &x->dp, &x->nconfig,
            &x->final_s, &x->util, x->dir);
        if (k != 11)
            fail_msg("%s: row %d has %d fields, not 11", path, n + 1, k);
        n++;
    }
    fclose(f);
    return n;
}

/* comet's best step of GPT-3 175B's forward (batch 2304) at the given
 * degrees and execution, on a preset with the on-chip memory and DDR
 * bandwidth replaced when > 0. */
static double step(const char *hw, int tp, int dp, int dataflow, double sram_b, double dram_bps)
{
    comet_model_hw h;
    comet_system sys;
    comet_system_llm m;
    char err[512];
    if (comet_model_hw_load(hw, &h, err, sizeof err)
        || comet_system_llm_load("gpt3-175b", &m, err, sizeof err)
        || comet_system_from_hw(&h, m.dtype, 0, &sys, err, sizeof err))
        fail_msg("%s", err);
    comet_model_hw_free(&h);
    if (sram_b > 0)
        sys.sram_bytes = sram_b;
    if (dram_bps > 0)
        sys.mem_bw = dram_bps;
    comet_system_opts o = { .phase = COMET_SYSTEM_FORWARD,
        .batch = 2304,
        .recompute = -1,
        .seq_parallel = 0,
        .exec = dataflow,
        .tp = tp,
        .pp = 1,
        .dp = dp };
    comet_system_result best;
    comet_system_space sp;
    assert_int_equal(comet_system_explore(&sys, &m, &o, 1, &best, &sp), 1);
    assert_true(best.step_s >= best.bound_s * (1 - 1e-9));
    comet_system_free(&sys);
    return best.step_s;
}

/* Ranks (1 = largest), ties averaged. */
static void ranks(const double *v, int n, double *rk)
{
    for (int i = 0; i < n; i++) {
        int above = 0, same = 0;
        for (int j = 0; j < n; j++) {
            if (v[j] > v[i])
                above++;
            else if (v[j] == v[i])
                same++;
        }
        rk[i] = above + (same + 1) / 2.0;
    }
}

static double spearman(const double *a, const double *b, int n)
{
    double ra[MAXR], rb[MAXR], ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
    ranks(a, n, ra);
    ranks(b, n, rb);
    for (int i = 0; i < n; i++)
        ma += ra[i] / n, mb += rb[i] / n;
    for (int i = 0; i < n; i++) {
        sab += (ra[i] - ma) * (rb[i] - mb);
        saa += (ra[i] - ma) * (ra[i] - ma);
        sbb += (rb[i] - mb) * (rb[i] - mb);
    }
    return sab / sqrt(saa * sbb);
}

static const drun *find(
    const drun *r, int n, const char *study, const char *exec, double sram, double dram, int tp)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(r[i].study, study) && !strcmp(r[i].exec, exec) && r[i].sram_mib == sram
            && r[i].dram_gbps == dram && r[i].tp == tp)
            return &r[i];
    return NULL;
}

static void test_fig19_ranking(void **st)
{
    (void)st;
    static drun r[MAXR];
    const int n = load(r, MAXR);
    static const double sram[3] = { 150, 300, 500 }, dram[3] = { 100, 300, 600 };
    double dm[9], cm[9];
    int cells = 0;
    printf("| SRAM MiB | DDR GB/s | DFModel kbk / df s | speedup | comet kbk / df s | speedup |\n"
           "|---|---|---|---|---|---|\n");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            const drun *k = find(r, n, "fig19", "kernel", sram[i], dram[j], 4);
            const drun *d = find(r, n, "fig19", "dataflow", sram[i], dram[j], 4);
            const double sb = sram[i] * 1048576.0, bw = dram[j] * 1e9;
            const double ck = step("sn10x8-torus", 4, 2, 0, sb, bw);
            const double cd = step("sn10x8-torus", 4, 2, 1, sb, bw);
            if (!k || !d) {
                printf("| %g | %g | (no run) | - | %.5g / %.5g | %.3gx |\n", sram[i], dram[j], ck,
                    cd, ck / cd);
                continue;
            }
            dm[cells] = k->final_s / d->final_s;
            cm[cells] = ck / cd;
            printf("| %g | %g | %.5g / %.5g | %.3gx | %.5g / %.5g | %.3gx |\n", sram[i], dram[j],
                k->final_s, d->final_s, dm[cells], ck, cd, cm[cells]);
            cells++;
        }
    assert_true(cells >= 8);
    const double rho = spearman(dm, cm, cells);
    printf("Fig. 19: Spearman's rho of the speedups over %d cells %.3f (aim >= %.1f)\n", cells, rho,
        FIG19_RHO_AIM);
    if (!(rho >= FIG19_RHO_MIN))
        fail_msg("Fig. 19 ranking: rho %.3f below %.2f", rho, FIG19_RHO_MIN);
}

static void test_table6_from_summary(void **st)
{
    (void)st;
    static drun r[MAXR];
    const int n = load(r, MAXR);
    const drun *k = find(r, n, "table6", "kernel", 320, 100, 8);
    const drun *dr = find(r, n, "table6", "dataflow", 320, 100, 8);
    const drun *dt = find(r, n, "table6", "dataflow", 320, 100, 4);
    assert_non_null(k);
    assert_non_null(dr);
    assert_non_null(dt);
    const double ck = step("sn10x8-ring-dfmodel", 8, 1, 0, 0, 0);
    const double cr = step("sn10x8-ring-dfmodel", 8, 1, 1, 0, 0);
    const double ct = step("sn10x8-torus-dfmodel", 4, 2, 1, 0, 0);
    const double d[3]
        = { k->final_s / dr->final_s, k->final_s / dt->final_s, dr->final_s / dt->final_s };
    const double c[3] = { ck / cr, ck / ct, cr / ct };
    printf("Table VI chain: DFModel %.3gx, %.3gx (%.3gx over the ring); comet %.3gx, %.3gx "
           "(%.3gx)\n",
        d[0], d[1], d[2], c[0], c[1], c[2]);
    /* the chain's order, and each step within 20% of DFModel's */
    assert_true(ck > cr && cr > ct);
    for (int i = 0; i < 3; i++)
        if (fabs(c[i] / d[i] - 1) > 0.2)
            fail_msg("Table VI step %d: comet %.3gx, DFModel %.3gx", i, c[i], d[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fig19_ranking),
        cmocka_unit_test(test_table6_from_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
