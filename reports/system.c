/* Report section: whole transformer workloads on many chips (the system
 * model, docs/system.md): this machine's profile as a cluster of nodes, a
 * DGX A100 cluster, and DFModel's Table VI chain on 8 SN10 RDUs. */
#include "comet_system.h"
#include "comet_util.h"
#include "reports_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct sys_case {
    const char *hw; /* preset, or NULL: this machine's profile */
    int chips; /* 0: the preset's */
    const char *workload;
    comet_system_phase phase;
    int exec; /* -1: searched */
    int tp, pp, dp; /* pinned degrees (0: searched) */
    const char *what;
    int batch; /* sequences (0: the workload's) */
    int sp; /* sequence parallelism: -1 searched, 0 off */
} sys_case;

static void row(rp_doc *d, const sys_case *k, const char *hwname, const comet_system *sys,
    const comet_system_result *r, const comet_system_space *sp)
{
    char par[96];
    snprintf(par, sizeof par, "tp %d, pp %d, dp %d, mb %d%s", r->cfg.tp, r->cfg.pp, r->cfg.dp,
        r->cfg.microbatch, r->cfg.seq_parallel > 0 ? ", SP" : "");
    rp_row(d, "%s\t%s\t%d\t%s %s\t%s\t%s, %s\t%.4g s\t%.1f%%\t%.1f / %.1f GB\t%.3g/s", k->what,
        hwname, sys->chips, k->workload, comet_system_phase_name(k->phase), par,
        comet_system_exec_name(r->cfg.exec), comet_system_recompute_name(r->cfg.recompute),
        r->step_s, 100 * r->mfu, r->mem.total / 1e9, r->mem.capacity / 1e9, sp->configs_per_s);
}

int rp_sec_system(rp_ctx *c)
{
    rp_doc *d = &c->doc;
    rp_inputs *in = c->in;
    static const sys_case cases[] = {
        { NULL, 16, "megatron-22b", COMET_SYSTEM_TRAIN, -1, 0, 0, 0,
            "this machine x 16 nodes (100 Gbit/s switch)", 0, -1 },
        { NULL, 16, "llama2-70b", COMET_SYSTEM_DECODE, -1, 0, 0, 0,
            "this machine x 16 nodes (100 Gbit/s switch)", 0, -1 },
        { "dgx-a100", 64, "gpt3-175b", COMET_SYSTEM_TRAIN, -1, 0, 0, 0, "DGX A100, 8 nodes", 0,
            -1 },
        { "dgx-h100", 16, "llama2-70b", COMET_SYSTEM_DECODE, -1, 0, 0, 0, "DGX H100, 2 nodes", 0,
            -1 },
        /* DFModel's Table VI as its released runs state it (the forward
         * graph of a training step, 2304 sequences, no sequence
         * parallelism; configs/hw/sn10x8-*-dfmodel.yaml) */
        { "sn10x8-ring-dfmodel", 0, "gpt3-175b", COMET_SYSTEM_FORWARD, 0, 8, 1, 1,
            "Table VI: kernel by kernel, 8x1 ring", 2304, 0 },
        { "sn10x8-ring-dfmodel", 0, "gpt3-175b", COMET_SYSTEM_FORWARD, 1, 8, 1, 1,
            "Table VI: dataflow, 8x1 ring", 2304, 0 },
        { "sn10x8-torus-dfmodel", 0, "gpt3-175b", COMET_SYSTEM_FORWARD, 1, 4, 1, 2,
            "Table VI: dataflow, 4x2 torus", 2304, 0 },
    };
    rp_h2(d, "system", "Whole workloads on many chips");
    rp_p(d,
        "The system model (docs/system.md) costs a transformer's training step, prefill or decode "
        "on chips joined by a multi-level network: tensor, pipeline and data parallelism over "
        "the levels, kernels run one by one or fused into dataflow partitions, memory per chip, "
        "cost and power. Each row is the fastest configuration of an exhaustive search (pinned "
        "degrees where stated); this machine's rows use its calibrated profile (GEMM efficiency "
        "at each shape) as nodes on a stated network. DFModel's Table VI rows run its released "
        "runs' setting (the forward graph of 2304 sequences, DDR at 100 GB/s, GEMMs at 0.9 of "
        "peak); its logs give 4909 s, 1020.5 s and 801.0 s (1x, 4.81x, 6.13x).");
    rp_table(d, "llrlllrrrr",
        "case\tsystem\tchips\tworkload\tparallelism\texecution, recompute\tstep\tMFU\tmemory/chip"
        "\tconfigs searched");
    double kbk = NAN, ratio[2] = { NAN, NAN };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sys_case *k = &cases[i];
        comet_system_llm m;
        comet_system sys;
        comet_model_hw hw, sc;
        char err[COMET_ERRLEN];
        const comet_model_hw *use = NULL;
        int own = 0, scaled = 0;
        if (comet_system_llm_load(k->workload, &m, err, sizeof err))
            continue;
        if (!k->hw) {
            if (!in->have_hw)
                continue;
            /* the profile as nodes on the stated network comet run uses */
            comet_model_net ib = { .topo = COMET_MODEL_SWITCH, .dims = { k->chips, 1 } };
            ib.link_bw = 12.5e9 / (in->hw.clock_ghz * 1e9);
            ib.hop_latency = 1e-6 * in->hw.clock_ghz * 1e9;
            if (comet_model_hw_scale(&in->hw, in->hw.cores, k->chips, &ib, &sc))
                continue;
            sc.clusters_per_chip = 1;
            use = &sc;
            scaled = 1;
        } else {
            if (comet_model_hw_load(k->hw, &hw, err, sizeof err))
                continue;
            use = &hw;
            own = 1;
        }
        int rc = comet_system_from_hw(use, m.dtype, k->hw ? k->chips : 0, &sys, err, sizeof err);
        if (own)
            comet_model_hw_free(&hw);
        if (scaled)
            comet_model_hw_free(&sc);
        if (rc)
            continue;
        comet_system_opts o = { .phase = k->phase,
            .batch = k->batch,
            .recompute = -1,
            .seq_parallel = k->sp,
            .exec = k->exec,
            .tp = k->tp,
            .pp = k->pp,
            .dp = k->dp };
        comet_system_result best;
        comet_system_space sp;
        /* the searches are the report's, not the user's command: no progress lines */
        const int verbosity = comet_util_verbosity;
        comet_util_verbosity = -1;
        const int found = comet_system_explore(&sys, &m, &o, 1, &best, &sp);
        comet_util_verbosity = verbosity;
        if (found == 1) {
            row(d, k, k->hw ? k->hw : "profile.json", &sys, &best, &sp);
            if (i == 4)
                kbk = best.step_s;
            else if (i > 4)
                ratio[i - 5] = kbk / best.step_s;
        } else
            rp_row(d, "%s\t%s\t%d\t%s %s\tfits nowhere\t\t\t\t\t", k->what,
                k->hw ? k->hw : "profile.json", sys.chips, k->workload,
                comet_system_phase_name(k->phase));
        comet_system_free(&sys);
    }
    rp_table_end(d);
    if (isfinite(ratio[0]) && isfinite(ratio[1]))
        rp_p(d,
            "Table VI chain here: kernel by kernel 1x, dataflow on the ring %.2fx, on the torus "
            "%.2fx (%.2fx over the ring); DFModel: 1x, 4.81x, 6.13x (1.27x). docs/system.md "
            "explains the differences from the breakdowns.",
            ratio[0], ratio[1], ratio[1] / ratio[0]);
    return 0;
}
