/* `comet predict|explore --hw SYSTEM --workload MODEL`: the system model
 * (whole transformer workloads on many chips). predict costs the pinned
 * --parallel configuration; explore searches them all. */
#include "cli.h"
#include "comet_model.h"
#include "comet_system.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void comet_cli_system_usage(FILE *f, int explore)
{
    fprintf(f,
        "usage: comet %s --hw SYSTEM --workload MODEL [options]\n"
        "  A transformer (configs/workloads/MODEL.yaml with hidden, heads, layers, ...:\n"
        "  gpt3-175b, megatron-22b, turing-530b, megatron-1t, llama2-70b) on a system\n"
        "  (configs/hw: sn10x8-ring, sn10x8-torus (and their -dfmodel variants), dgx-a100,\n"
        "  dgx-h100, tpu-v4, or a file;\n"
        "  a calibrated CPU profile with --chips N becomes N nodes on a 100 Gbit/s switch).\n"
        "  --phase P         train (default), prefill, decode, or forward (the batch's\n"
        "                    forward pass keeping no KV cache)\n"
        "  --batch N         global batch in sequences (default: the workload's)\n"
        "  --microbatch N    sequences per microbatch (default: searched)\n"
        "  --seq N           sequence length (default: the workload's)\n"
        "  --context N       decode: tokens already in the KV cache (default: seq)\n"
        "  --output-tokens G decode: each request generates G tokens after a prompt of\n"
        "                    --context tokens: adds the request's time (prefill + G steps)\n"
        "  --recompute R     none, selective or full (default: searched; inference: none)\n"
        "  --seq-parallel    Megatron sequence parallelism (default: searched)\n"
        "  --no-seq-parallel without it\n"
        "  --tp-comm-overlap training: each column-parallel GEMM's backward runs its\n"
        "                    tensor-parallel collectives beside its GEMMs (Megatron-LM's\n"
        "                    asynchronous backward communication; default: they wait)\n"
        "  --grad-acc-kernel training: each weight gradient is added to the accumulated one\n"
        "                    by a kernel of its own (PyTorch's AccumulateGrad, a DDP hook)\n"
        "                    instead of in the GEMM (default: in the GEMM)\n"
        "  --bf16-optimizer  training: DeepSpeed's BF16_Optimizer (2022): each weight\n"
        "                    gradient cast to fp32 and added to a fp32 accumulator every\n"
        "                    microbatch, the fp32 gradients all-reduced over data\n"
        "                    parallelism, the 16-bit weights all-gathered after its step\n"
        "  --softmax-kernel R  fused (default: the attention softmax one fused kernel),\n"
        "                    megatron (fused where Megatron's FusedScaleMaskSoftmax\n"
        "                    condition holds, else PyTorch's unfused passes) or\n"
        "                    megatron-ds-2022 (that condition as BigScience's fork computed\n"
        "                    it until 2022-03-06)\n"
        "  --alibi-baddbmm   kernel by kernel: the attention scores start from ALiBi's\n"
        "                    bias broadcast into the score GEMM (BigScience's\n"
        "                    Megatron-DeepSpeed: torch.baddbmm with beta 1): the scores\n"
        "                    written once more and read back by the GEMM\n"
        "  --pp-embed-slots  pp > 1: the embedding and the LM head each take a layer's\n"
        "                    slot in the pipeline's partition (Megatron-DeepSpeed's\n"
        "                    --pp-partition-method 'type:transformer|embedding')\n"
        "  --pipe-engine E   training with pp > 1: megatron (default; paired send/recv)\n"
        "                    or deepspeed (DeepSpeed's 2021 TrainSchedule: four blocking\n"
        "                    transfers a microbatch, replayed event by event)\n"
        "  --execution E     kernel (kernel by kernel) or dataflow (fused partitions);\n"
        "                    default: searched\n"
        "  --chips N         size a system family (dgx-a100 --chips 64 = 8 nodes)\n"
        "  --threads T       a calibrated CPU profile: each chip is one rank of T cores\n"
        "  --link LINK       a calibrated CPU profile: the chips joined by its fits of\n"
        "                    LINK (shm, tcp:DEV) instead of the stated 100 Gbit/s switch\n"
        "                    (as `comet bench llm` ran: validate --system); over shm\n"
        "                    all chips run on this machine at once (each at the core\n"
        "                    share the profile measured), over a network one a host\n"
        "  --partitions N    dataflow: cut each pass of a layer into exactly N partitions\n"
        "                    (DFModel's num_config; default: the best number)\n"
        "  --cuts SPEC       dataflow: the forward pass's partitions as given (DFModel's\n"
        "                    config: assignment, a vendor's mapping): partitions in order\n"
        "                    separated by ',', each its kernels joined by '+', every kernel\n"
        "                    once (--explain lists them), e.g. ln1+q+k+v,score+softmax+\n"
        "                    attn_drop+context+proj,res1+ln2+ffn_in,act+ffn_out+res2\n"
        "  --cuts-bwd SPEC   training: the backward pass's, the same way\n"
        "  --tile T          dataflow: each partition tiles its tokens in rows of T where\n"
        "                    its on-chip memory holds them (DFModel's shard_N; a spatial\n"
        "                    chip's GEMMs run at exactly T; default: the best that fits)\n"
        "  --sweep F=V1,V2   the step at each value of a hardware parameter (dram_bw,\n"
        "                    gb_capacity, link_bw, clock, ...; units: dram_bw=100GB/s,200GB/s):\n"
        "                    explore: the best kernel-by-kernel and dataflow steps; predict:\n"
        "                    the --parallel configuration\n"
        "  --sensitivity     each hardware parameter -10%%/+10%%, ranked by the elasticity of\n"
        "                    the step\n"
        "%s"
        "  --explain         the breakdown, partitions and memory of the result\n"
        "  --json            JSON (schema comet.system.v2, docs/FORMATS.md)\n"
        "Formulas: docs/system.md.\n",
        explore ? "explore" : "predict",
        explore ? "  --top K           keep the K fastest configurations (default 5)\n"
                  "  --parallel SPEC   pin the degrees it names (tp=8,pp=1), search the rest\n"
                : "  --parallel SPEC   tp=8,pp=8,dp=1[,interleave=3][,microbatch=1]"
                  "[,order=tp-dp-pp][,zero=1] (required;\n"
                  "                    zero: ZeRO stage 0-3 of the data-parallel optimizer)\n");
}

/* 1 if argv names a transformer workload (so the system model answers). */
int comet_cli_is_system(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *w = NULL;
        if (!strcmp(argv[i], "--workload") && i + 1 < argc)
            w = argv[i + 1];
        else if (!strncmp(argv[i], "--workload=", 11))
            w = argv[i] + 11;
        if (w)
            return comet_system_llm_is(w);
    }
    return 0;
}

static const char *gb(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f GB", bytes / 1e9);
    return buf;
}

static void print_result(const comet_system_result *r, int explain)
{
    static const char *const pn[3] = { "tp", "pp", "dp" };
    const comet_system_config *c = &r->cfg;
    char a[32], b2[32];
    printf(
        "  parallel      tp=%d pp=%d dp=%d interleave=%d microbatch=%d zero=%d order=%s-%s-%s%s\n",
        c->tp, c->pp, c->dp, c->interleave, c->microbatch, c->zero, pn[c->order[0]],
        pn[c->order[1]], pn[c->order[2]], c->seq_parallel > 0 ? " seq-parallel" : "");
    printf("  execution     %s, recompute %s\n", comet_system_exec_name(c->exec),
        comet_system_recompute_name(c->recompute));
    printf("  step          %.6g s (bound %.6g s)", r->step_s, r->bound_s);
    if (r->per_token_s > 0)
        printf(", one token %.6g s", r->per_token_s);
    if (isnan(r->request_s))
        printf("\n  request       n/a (the prefill or a later step does not fit the chips)");
    else if (r->request_s > 0)
        printf(
            "\n  request       %.6g s (prefill of the prompts %.6g s, then the generated tokens)",
            r->request_s, r->request_prefill_s);
    printf("\n  throughput    %.6g tokens/s, MFU %.1f%%\n", r->tokens_per_s, 100 * r->mfu);
    printf("  memory/chip   %s of %s\n", gb(r->mem.total, a, sizeof a),
        gb(r->mem.capacity, b2, sizeof b2));
    if (isfinite(r->cost_usd))
        printf("  cost, power   $%.4g, %.4g kW\n", r->cost_usd, r->power_w / 1e3);
    else
        printf("  cost, power   n/a (the description gives no chip price or power)\n");
    if (!explain)
        return;
    printf("  breakdown (s): compute %.4g, memory %.4g, TP network %.4g, PP network %.4g, "
           "DP network %.4g, bubble %.4g, recompute %.4g, optimizer %.4g\n",
        r->breakdown.compute_s, r->breakdown.memory_s, r->breakdown.tp_s, r->breakdown.pp_s,
        r->breakdown.dp_s, r->breakdown.bubble_s, r->breakdown.recompute_s,
        r->breakdown.optimizer_s);
    printf("  memory/chip:  weights %.3g GB, gradients %.3g GB, optimizer %.3g GB, activations "
           "%.3g GB, backward working set %.3g GB, KV cache %.3g GB\n",
        r->mem.weights / 1e9, r->mem.grads / 1e9, r->mem.optimizer / 1e9, r->mem.activations / 1e9,
        r->mem.working / 1e9, r->mem.kv_cache / 1e9);
    printf("  one layer, one microbatch: forward %.4g s in %d partition(s)", r->layer_fwd_s,
        r->parts[0].n);
    if (r->parts[1].n)
        printf(", backward %.4g s in %d", r->layer_bwd_s, r->parts[1].n);
    if (r->weights_on_chip > 0)
        printf("; the stage's weights stay on chip (%.4g MB, read once a step)",
            r->weights_on_chip / 1e6);
    char buf[1024];
    for (int pass = 0; pass < 2; pass++) {
        if (!r->parts[pass].n)
            continue;
        const comet_system_parts *p = &r->parts[pass];
        printf("\n    %s:", pass ? "backward" : "forward");
        for (int i = 0; i < p->n; i++)
            printf(" [%s]", comet_system_part_str(p, i, buf, sizeof buf));
        /* each partition's time is the largest (overlapped) or the sum of
         * its parts, as the hardware states */
        printf("\n      %-10s %-10s %-10s %-10s %-9s %-7s %s", "time (s)", "compute", "memory",
            "network", "on chip", "passes", "partition");
        for (int i = 0; i < p->n; i++) {
            char oc[32] = "-", ps[16] = "-";
            if (isfinite(p->onchip_bytes[i]))
                snprintf(oc, sizeof oc, "%.0f MB", p->onchip_bytes[i] / 1e6);
            if (isfinite(p->weight_passes[i]))
                snprintf(ps, sizeof ps, "%.0f", p->weight_passes[i]);
            printf("\n      %-10.4g %-10.4g %-10.4g %-10.4g %-9s %-7s %s", p->time_s[i],
                p->compute_s[i], p->memory_s[i], p->network_s[i], oc, ps,
                comet_system_part_str(p, i, buf, sizeof buf));
        }
    }
    printf("\n");
}

static int load_system(const char *sub, const char *hwname, int chips, int threads,
    const char *link, const comet_system_llm *m, comet_system *sys)
{
    comet_model_hw hw, sc;
    char err[COMET_ERRLEN];
    if (comet_model_hw_load(hwname, &hw, err, sizeof err) != 0) {
        comet_cli_error(sub, "%s", err);
        return COMET_EXIT_USAGE;
    }
    if (threads > 0 || link) {
        /* this machine's ranks as the chips, joined by the fitted link:
         * over shared memory all of them on this machine at once, over a
         * network link one a host */
        const int n = chips > 0 ? chips : 1;
        const int host = !link || !strcmp(link, "shm") ? n : 1;
        int rc = comet_system_from_profile(
            &hw, m->dtype, threads > 0 ? threads : hw.cores, n, host, link, sys, err, sizeof err);
        comet_model_hw_free(&hw);
        if (rc) {
            comet_cli_error(sub, "%s", err);
            return COMET_EXIT_USAGE;
        }
        return COMET_EXIT_OK;
    }
    const comet_model_hw *use = &hw;
    int scaled = 0;
    if (chips > 1 && !strcmp(hw.kind, "cpu") && hw.clusters_per_chip <= 1 && hw.n_outer == 0
        && hw.clusters == 1) {
        /* this machine's profile as N nodes: a stated network, one switch
         * of 100 Gbit/s ports (InfiniBand EDR's data rate) and 1 us per hop,
         * the one `comet run` states for its scaled system */
        comet_model_net ib = { .topo = COMET_MODEL_SWITCH, .dims = { chips, 1 } };
        ib.link_bw = 12.5e9 / (hw.clock_ghz * 1e9);
        ib.hop_latency = 1e-6 * hw.clock_ghz * 1e9;
        if (comet_model_hw_scale(&hw, hw.cores, chips, &ib, &sc) != 0) {
            comet_model_hw_free(&hw);
            comet_cli_error(sub, "--chips %d: cannot scale %s", chips, hwname);
            return COMET_EXIT_USAGE;
        }
        sc.clusters_per_chip = 1;
        use = &sc;
        scaled = 1;
        chips = 0;
    }
    int rc = comet_system_from_hw(use, m->dtype, chips, sys, err, sizeof err);
    if (scaled)
        comet_model_hw_free(&sc);
    comet_model_hw_free(&hw);
    if (rc) {
        comet_cli_error(sub, "%s", err);
        return COMET_EXIT_USAGE;
    }
    return COMET_EXIT_OK;
}

static int run_loaded(const char *sub, int explore, const comet_system *sysp,
    const comet_system_llm *mp, const comet_system_opts *op, const comet_cli_global *gp,
    const char *par, int top, int explain, const char *hwname, int B, const char *sweep,
    int sensitivity);

int comet_cli_system(int argc, char **argv, int explore)
{
    static const struct option longopts[] = { { "hw", required_argument, NULL, 0x3001 },
        { "workload", required_argument, NULL, 0x3002 },
        { "phase", required_argument, NULL, 0x3003 }, { "batch", required_argument, NULL, 0x3004 },
        { "microbatch", required_argument, NULL, 0x3005 },
        { "seq", required_argument, NULL, 0x3006 }, { "context", required_argument, NULL, 0x3007 },
        { "recompute", required_argument, NULL, 0x3008 },
        { "seq-parallel", no_argument, NULL, 0x3009 },
        { "no-seq-parallel", no_argument, NULL, 0x300a },
        { "execution", required_argument, NULL, 0x300b },
        { "chips", required_argument, NULL, 0x300c }, { "top", required_argument, NULL, 0x300d },
        { "parallel", required_argument, NULL, 0x300e }, { "explain", no_argument, NULL, 0x300f },
        { "output-tokens", required_argument, NULL, 0x3010 },
        { "threads", required_argument, NULL, 0x3011 }, { "link", required_argument, NULL, 0x3012 },
        { "partitions", required_argument, NULL, 0x3014 },
        { "sweep", required_argument, NULL, 0x3015 }, { "sensitivity", no_argument, NULL, 0x3016 },
        { "tp-comm-overlap", no_argument, NULL, 0x3017 },
        { "grad-acc-kernel", no_argument, NULL, 0x3018 },
        { "pipe-engine", required_argument, NULL, 0x3019 },
        { "bf16-optimizer", no_argument, NULL, 0x301a },
        { "pp-embed-slots", no_argument, NULL, 0x301b },
        { "softmax-kernel", required_argument, NULL, 0x301c },
        { "alibi-baddbmm", no_argument, NULL, 0x301d }, { "cuts", required_argument, NULL, 0x301e },
        { "cuts-bwd", required_argument, NULL, 0x301f },
        { "tile", required_argument, NULL, 0x3020 }, COMET_CLI_GLOBAL_LONGOPTS,
        { NULL, 0, NULL, 0 } };
    const char *sub = explore ? "explore" : "predict";
    const char *hwname = NULL, *wname = NULL, *par = NULL, *link = NULL, *sweep = NULL;
    int threads = 0, sensitivity = 0;
    comet_system_opts o = {
        .phase = COMET_SYSTEM_TRAIN, .recompute = -1, .seq_parallel = -1, .exec = -1, .zero = -1
    };
    comet_cli_global g = { 0 };
    int c, top = 5, chips = 0, explain = 0;
    uint64_t v;
    char err[COMET_ERRLEN];
    comet_cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            comet_cli_system_usage(stdout, explore);
            return COMET_EXIT_OK;
        case 0x3001:
            hwname = optarg;
            break;
        case 0x3002:
            wname = optarg;
            break;
        case 0x3003:
            if (comet_system_phase_parse(optarg, &o.phase)) {
                comet_cli_error(sub, "--phase '%s': train, prefill, decode or forward", optarg);
                return COMET_EXIT_USAGE;
            }
            break;
        case 0x3004:
        case 0x3005:
        case 0x3006:
        case 0x3007:
        case 0x300c:
        case 0x300d:
        case 0x3010:
        case 0x3014: {
            static const char *const fl[]
                = { "--batch", "--microbatch", "--seq", "--context", "", "", "", "", "--chips",
                      "--top", "", "", "--output-tokens", "", "", "", "", "--partitions" };
            if (comet_cli_parse_pos(sub, fl[c - 0x3004], optarg, 1u << 24, &v))
                return COMET_EXIT_USAGE;
            if (c == 0x3004)
                o.batch = (int)v;
            else if (c == 0x3005)
                o.microbatch = (int)v;
            else if (c == 0x3006)
                o.seq = (int)v;
            else if (c == 0x3007)
                o.context = (int)v;
            else if (c == 0x300c)
                chips = (int)v;
            else if (c == 0x3010)
                o.output_tokens = (int)v;
            else if (c == 0x3014)
                o.partitions = (int)v;
            else
                top = (int)(v > 1000 ? 1000 : v);
            break;
        }
        case 0x3015:
            sweep = optarg;
            break;
        case 0x3016:
            sensitivity = 1;
            break;
        case 0x3008: {
            comet_system_recompute r;
            if (comet_system_recompute_parse(optarg, &r)) {
                comet_cli_error(sub, "--recompute '%s': none, selective or full", optarg);
                return COMET_EXIT_USAGE;
            }
            o.recompute = (int)r;
            break;
        }
        case 0x3009:
            o.seq_parallel = 1;
            break;
        case 0x300a:
            o.seq_parallel = 0;
            break;
        case 0x3017:
            o.tp_overlap = 1;
            break;
        case 0x3018:
            o.grad_acc_kernel = COMET_SYSTEM_GRAD_ACC_KERNEL;
            break;
        case 0x301a:
            o.grad_acc_kernel = COMET_SYSTEM_GRAD_ACC_FP32;
            break;
        case 0x301b:
            o.pp_embed_slots = 1;
            break;
        case 0x301d:
            o.alibi_baddbmm = 1;
            break;
        case 0x301c: {
            comet_system_softmax_rule sr;
            if (comet_system_softmax_rule_parse(optarg, &sr)) {
                comet_cli_error(
                    sub, "--softmax-kernel '%s': fused, megatron or megatron-ds-2022", optarg);
                return COMET_EXIT_USAGE;
            }
            o.softmax_rule = (int)sr;
            break;
        }
        case 0x3019: {
            comet_system_pipe_engine pe;
            if (comet_system_pipe_engine_parse(optarg, &pe)) {
                comet_cli_error(sub, "--pipe-engine '%s': megatron or deepspeed", optarg);
                return COMET_EXIT_USAGE;
            }
            o.pipe_engine = (int)pe;
            break;
        }
        case 0x300b: {
            comet_system_exec e;
            if (comet_system_exec_parse(optarg, &e)) {
                comet_cli_error(sub, "--execution '%s': kernel or dataflow", optarg);
                return COMET_EXIT_USAGE;
            }
            o.exec = (int)e;
            break;
        }
        case 0x301e:
        case 0x301f:
            if (comet_system_cuts_check(optarg, err, sizeof err)) {
                comet_cli_error(sub, "%s%s", c == 0x301f ? "(--cuts-bwd) " : "", err);
                return COMET_EXIT_USAGE;
            }
            o.cuts[c - 0x301e] = optarg;
            break;
        case 0x3020:
            if (comet_cli_parse_pos(sub, "--tile", optarg, 1u << 24, &v))
                return COMET_EXIT_USAGE;
            o.tile = (int)v;
            break;
        case 0x300e:
            par = optarg;
            break;
        case 0x300f:
            explain = 1;
            break;
        case 0x3011:
            if (comet_cli_parse_pos(sub, "--threads", optarg, 1u << 16, &v))
                return COMET_EXIT_USAGE;
            threads = (int)v;
            break;
        case 0x3012:
            link = optarg;
            break;
        default:
            return comet_cli_bad_option(sub, argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error(sub, "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    if (!hwname || !wname) {
        comet_cli_error(sub, "--hw SYSTEM and --workload MODEL are required");
        return COMET_EXIT_USAGE;
    }
    if (g.out) {
        comet_cli_error(sub, "--out: %s prints to stdout (redirect it)", sub);
        return COMET_EXIT_USAGE;
    }
    if (explore && par) {
        /* explore --parallel pins the degrees it names; the rest is searched */
        comet_system_config pin;
        if (comet_system_config_parse(par, &pin, err, sizeof err)) {
            comet_cli_error(sub, "%s", err);
            return COMET_EXIT_USAGE;
        }
        o.tp = strstr(par, "tp=") ? pin.tp : 0;
        o.pp = strstr(par, "pp=") ? pin.pp : 0;
        o.dp = strstr(par, "dp=") ? pin.dp : 0;
        if (pin.microbatch > 0)
            o.microbatch = pin.microbatch;
        /* interleave= and order= pin too (a named key pins, as the degrees) */
        if (strstr(par, "interleave="))
            o.interleave = pin.interleave;
        if (strstr(par, "zero="))
            o.zero = pin.zero;
        if (strstr(par, "order=")) {
            o.order_pinned = 1;
            memcpy(o.order, pin.order, sizeof o.order);
        }
    }
    if (sweep && sensitivity) {
        comet_cli_error(sub, "--sweep and --sensitivity go alone, one at a time");
        return COMET_EXIT_USAGE;
    }
    if (!explore && !par) {
        comet_cli_error(sub, "--parallel tp=N,pp=N,dp=N is required (explore searches them)");
        return COMET_EXIT_USAGE;
    }
    comet_system_llm m;
    if (comet_system_llm_load(wname, &m, err, sizeof err)) {
        comet_cli_error(sub, "%s", err);
        return COMET_EXIT_USAGE;
    }
    if (o.phase != COMET_SYSTEM_TRAIN && o.recompute > 0) {
        comet_cli_error(sub, "--recompute: applies to --phase train only");
        return COMET_EXIT_USAGE;
    }
    if (o.context > 0 && o.phase != COMET_SYSTEM_DECODE) {
        comet_cli_error(sub, "--context: applies to --phase decode only");
        return COMET_EXIT_USAGE;
    }
    if ((o.cuts[0] || o.cuts[1] || o.tile) && o.exec == COMET_SYSTEM_EXEC_KERNEL) {
        comet_cli_error(sub, "%s: gives dataflow partitions; --execution kernel has none",
            o.tile ? "--tile" : "--cuts");
        return COMET_EXIT_USAGE;
    }
    if ((o.cuts[0] || o.cuts[1]) && o.partitions) {
        comet_cli_error(sub,
            "--cuts gives the partitions, --partitions their number: one or the "
            "other");
        return COMET_EXIT_USAGE;
    }
    if (o.cuts[1] && o.phase != COMET_SYSTEM_TRAIN) {
        comet_cli_error(sub, "--cuts-bwd: applies to --phase train only");
        return COMET_EXIT_USAGE;
    }
    if (o.output_tokens > 0 && o.phase != COMET_SYSTEM_DECODE) {
        comet_cli_error(sub, "--output-tokens: applies to --phase decode only");
        return COMET_EXIT_USAGE;
    }
    const int B = o.batch > 0 ? o.batch : m.global_batch;
    if (o.microbatch > B) {
        comet_cli_error(sub, "--microbatch %d exceeds the batch of %d sequences", o.microbatch, B);
        return COMET_EXIT_USAGE;
    }
    comet_system sys;
    int rc = load_system(sub, hwname, chips, threads, link, &m, &sys);
    if (rc)
        return rc;
    rc = run_loaded(
        sub, explore, &sys, &m, &o, &g, par, top, explain, hwname, B, sweep, sensitivity);
    comet_system_free(&sys);
    return rc;
}

/* One what-if point: the system with a hardware parameter changed, costed
 * as the command would (predict: the pinned configuration; explore: the best
 * of each execution style the chip runs). NAN where nothing runs. */
static void whatif_point(const comet_system *sys, const char *field, double v,
    const comet_system_llm *m, const comet_system_opts *o, const comet_system_config *pin,
    double *kbk, double *df)
{
    comet_model_hw w = sys->hw; /* shallow: the grid is only read */
    comet_system s2;
    char err[COMET_ERRLEN];
    *kbk = *df = NAN;
    double was = 0;
    if (field && !strcmp(field, "peak_flops") && comet_model_param_get(&w, field, &was) == 0
        && was > 0)
        for (int d = 0; d < COMET_MODEL_NDTYPE; d++) /* a chip's stated rates scale alike */
            w.peak_flops_dtype[d] *= v / was;
    if ((field && comet_model_param_set(&w, field, v) != 0)
        || comet_system_from_hw(&w, m->dtype, sys->chips, &s2, err, sizeof err) != 0)
        return;
    for (int ex = 0; ex < 2; ex++) {
        double *t = ex ? df : kbk;
        if (pin) {
            if ((int)pin->exec != ex)
                continue;
            comet_system_result r;
            if (comet_system_eval(&s2, m, o, pin, &r) == 0 && r.feasible)
                *t = r.step_s;
            continue;
        }
        if (o->exec >= 0 && o->exec != ex)
            continue;
        comet_system_opts q = *o;
        q.exec = ex;
        comet_system_result r;
        comet_system_space sp;
        if (comet_system_explore(&s2, m, &q, 1, &r, &sp) == 1)
            *t = r.step_s;
    }
    comet_system_free(&s2);
}

/* --sweep FIELD=V1,V2 (a hardware parameter) and --sensitivity on the
 * system model: DFModel's Fig. 19 is such a sweep (SRAM x DRAM, dataflow
 * against kernel by kernel). JSON: comet.system-sweep.v1 /
 * comet.system-sensitivity.v1 (docs/FORMATS.md). */
static int system_whatif(const char *sub, const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, const comet_system_config *pin, const char *sweep, int json)
{
    json_t *rows = json_array();
    if (sweep) {
        char field[32], list[1024];
        const char *eq = strchr(sweep, '=');
        if (!eq || eq == sweep || (size_t)(eq - sweep) >= sizeof field || !eq[1]
            || strlen(eq + 1) >= sizeof list) {
            comet_cli_error(sub, "--sweep: expected FIELD=V1,V2,... (a hardware parameter)");
            json_decref(rows);
            return COMET_EXIT_USAGE;
        }
        memcpy(field, sweep, (size_t)(eq - sweep));
        field[eq - sweep] = 0;
        snprintf(list, sizeof list, "%s", eq + 1);
        if (!comet_model_param_unit(field)) {
            comet_cli_error(sub, "--sweep: unknown hardware parameter '%s'", field);
            json_decref(rows);
            return COMET_EXIT_USAGE;
        }
        if (!json)
            printf("%-16s %16s %16s %9s\n", field, "kernel by kernel", "dataflow", "speedup");
        char *save = NULL;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            double v, k, d;
            if (comet_model_param_parse(field, tok, &v) != 0) {
                comet_cli_error(sub, "--sweep: %s=%s is not a valid value (unit: %s)", field, tok,
                    comet_model_param_unit(field)[0] ? comet_model_param_unit(field) : "a count");
                json_decref(rows);
                return COMET_EXIT_USAGE;
            }
            whatif_point(sys, field, v, m, o, pin, &k, &d);
            if (json)
                json_array_append_new(rows,
                    json_pack("{s:f,s:o,s:o}", "value", v, "kernel_s",
                        isfinite(k) ? json_real(k) : json_null(), "dataflow_s",
                        isfinite(d) ? json_real(d) : json_null()));
            else {
                /* a column not costed (predict: the pinned style only) or
                 * where nothing fits is a dash, and so is its speedup */
                char ks[32] = "-", ds[32] = "-", sp[32] = "-";
                if (isfinite(k))
                    snprintf(ks, sizeof ks, "%.6g s", k);
                if (isfinite(d))
                    snprintf(ds, sizeof ds, "%.6g s", d);
                if (isfinite(k) && isfinite(d))
                    snprintf(sp, sizeof sp, "%.3fx", k / d);
                printf("%-16s %16s %16s %9s\n", tok, ks, ds, sp);
            }
        }
        if (json) {
            json_t *j = json_pack("{s:s,s:s,s:s,s:o}", "schema", "comet.system-sweep.v1", "field",
                field, "unit", comet_model_param_unit(field), "points", rows);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            printf("\n");
            json_decref(j);
        } else
            json_decref(rows);
        return COMET_EXIT_OK;
    }
    /* sensitivity: each parameter -10% / +10%, the elasticity of the step
     * (the faster style of the two), ranked by its size */
    double k0, d0;
    whatif_point(sys, NULL, 0, m, o, pin, &k0, &d0);
    const double t0 = fmin(isfinite(k0) ? k0 : INFINITY, isfinite(d0) ? d0 : INFINITY);
    if (!isfinite(t0)) {
        comet_cli_error(sub, "--sensitivity: nothing fits the system");
        json_decref(rows);
        return COMET_EXIT_FAIL;
    }
    const int np = comet_model_param_count();
    double el[64];
    int idx[64], n = 0;
    for (int i = 0; i < np && n < 64; i++) {
        const char *f = comet_model_param_name(i);
        double v, t[2];
        if (comet_model_param_get(&sys->hw, f, &v) != 0 || !(v > 0))
            continue;
        int ok = 1;
        for (int s = 0; s < 2 && ok; s++) {
            double k, d;
            whatif_point(sys, f, v * (s ? 1.1 : 0.9), m, o, pin, &k, &d);
            t[s] = fmin(isfinite(k) ? k : INFINITY, isfinite(d) ? d : INFINITY);
            ok = isfinite(t[s]);
        }
        if (!ok)
            continue; /* a count that cannot move by 10%, or nothing fits */
        el[n] = (t[1] - t[0]) / (0.2 * t0);
        idx[n++] = i;
    }
    for (int a = 1; a < n; a++) /* by |elasticity|, largest first */
        for (int b = a; b > 0 && fabs(el[b]) > fabs(el[b - 1]); b--) {
            const double te = el[b];
            el[b] = el[b - 1];
            el[b - 1] = te;
            const int ti = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = ti;
        }
    if (!json)
        printf(
            "step %.6g s; elasticity of the step to each hardware parameter (-10%%/+10%%):\n", t0);
    for (int i = 0; i < n; i++) {
        const char *f = comet_model_param_name(idx[i]);
        if (json)
            json_array_append_new(
                rows, json_pack("{s:s,s:f}", "parameter", f, "elasticity", el[i]));
        else
            printf("  %-14s %+8.3f\n", f, el[i]);
    }
    if (json) {
        json_t *j = json_pack("{s:s,s:f,s:o}", "schema", "comet.system-sensitivity.v1", "step_s",
            t0, "parameters", rows);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(j);
    } else
        json_decref(rows);
    return COMET_EXIT_OK;
}

static int run_loaded(const char *sub, int explore, const comet_system *sysp,
    const comet_system_llm *mp, const comet_system_opts *op, const comet_cli_global *gp,
    const char *par, int top, int explain, const char *hwname, int B, const char *sweep,
    int sensitivity)
{
    const comet_system sys = *sysp;
    const comet_system_llm m = *mp;
    comet_system_opts o = *op;
    const comet_cli_global g = *gp;
    char err[COMET_ERRLEN];
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:i,s:i}", "schema", "comet.system.v2", "hw", hwname,
        "workload", m.name, "phase", comet_system_phase_name(o.phase), "chips", sys.chips, "batch",
        B);
    if (!explore) {
        comet_system_config cfg;
        if (comet_system_config_parse(par, &cfg, err, sizeof err)) {
            comet_cli_error(sub, "%s", err);
            json_decref(j);
            return COMET_EXIT_USAGE;
        }
        cfg.microbatch = cfg.microbatch > 0 ? cfg.microbatch
            : o.microbatch > 0              ? o.microbatch
            : m.microbatch > 0              ? m.microbatch
                                            : 1;
        cfg.recompute = o.recompute >= 0    ? (comet_system_recompute)o.recompute
            : o.phase == COMET_SYSTEM_TRAIN ? COMET_SYSTEM_RECOMPUTE_SELECTIVE
                                            : COMET_SYSTEM_RECOMPUTE_NONE;
        cfg.seq_parallel = o.seq_parallel >= 0 ? o.seq_parallel : cfg.tp > 1;
        cfg.exec = o.exec >= 0 ? (comet_system_exec)o.exec : COMET_SYSTEM_EXEC_KERNEL;
        if (sweep || sensitivity) {
            json_decref(j);
            return system_whatif(sub, &sys, &m, &o, &cfg, sweep, g.json);
        }
        comet_system_result r;
        if (comet_system_eval(&sys, &m, &o, &cfg, &r) < 0) {
            comet_cli_error(sub, "--parallel %s: not a valid configuration", par);
            json_decref(j);
            return COMET_EXIT_USAGE;
        }
        if (!r.feasible) {
            comet_cli_error(sub, "--parallel %s: %s", par, r.reason);
            json_decref(j);
            return COMET_EXIT_USAGE;
        }
        if (g.json) {
            json_t *res = comet_system_result_json(&r); /* the result's fields at the top */
            json_object_update(j, res);
            json_decref(res);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            printf("\n");
        } else {
            printf("%s %s on %s (%d chips), batch %d:\n", m.name, comet_system_phase_name(o.phase),
                hwname, sys.chips, B);
            print_result(&r, explain);
        }
        json_decref(j);
        return COMET_EXIT_OK;
    }
    if (sweep || sensitivity) {
        json_decref(j);
        return system_whatif(sub, &sys, &m, &o, NULL, sweep, g.json);
    }
    comet_system_result *best = calloc((size_t)top, sizeof *best);
    comet_system_space sp;
    if (!best) {
        json_decref(j);
        return COMET_EXIT_FAIL;
    }
    int n = comet_system_explore(&sys, &m, &o, top, best, &sp);
    if (n <= 0) {
        if (sp.refused[0] && (o.cuts[0] || o.cuts[1] || o.tile))
            comet_cli_error(sub, "%s fits nowhere on %s (%d chips): the last refused: %s", m.name,
                hwname, sys.chips, sp.refused);
        else
            comet_cli_error(sub,
                "%s fits nowhere on %s (%d chips): %.0f configurations tried, none fits in memory "
                "or divides the model (try more chips, --recompute full, or a smaller --batch)",
                m.name, hwname, sys.chips, sp.configs);
        free(best);
        json_decref(j);
        return COMET_EXIT_FAIL;
    }
    if (g.json) {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, comet_system_result_json(&best[i]));
        json_t *res = comet_system_result_json(&best[0]); /* the best's fields at the top */
        json_object_update(j, res);
        json_decref(res);
        json_object_set_new(j, "configs", arr);
        json_object_set_new(j, "configs_evaluated", json_real(sp.configs));
        json_object_set_new(j, "configs_feasible", json_real(sp.feasible));
        json_object_set_new(j, "search_s", json_real(sp.seconds));
        json_object_set_new(j, "configs_per_s", json_real(sp.configs_per_s));
        json_t *pa = json_array();
        for (int i = 0; i < sp.npareto; i++) {
            const comet_system_point *q = &sp.pareto[i];
            json_array_append_new(pa,
                json_pack("{s:i,s:i,s:i,s:i,s:i,s:f,s:f}", "tp", q->cfg.tp, "pp", q->cfg.pp, "dp",
                    q->cfg.dp, "microbatch", q->cfg.microbatch, "chips_used", q->chips_used,
                    "step_s", q->step_s, "cost_usd", q->cost_usd));
        }
        json_object_set_new(j, "pareto", pa);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
    } else {
        printf("%s %s on %s (%d chips), batch %d: %.0f configurations (%.0f fit) in %.3g s, "
               "%.3g configurations/s\n",
            m.name, comet_system_phase_name(o.phase), hwname, sys.chips, B, sp.configs, sp.feasible,
            sp.seconds, sp.configs_per_s);
        for (int i = 0; i < n; i++) {
            printf("#%d\n", i + 1);
            print_result(&best[i], explain && i == 0);
        }
        if (sp.npareto > 0) {
            printf("Pareto set (step time vs the cost of the chips used): %d points\n", sp.npareto);
            for (int i = 0; i < sp.npareto; i++) {
                const comet_system_point *q = &sp.pareto[i];
                printf("  %4d chips  $%-12.4g %12.6g s  tp=%d pp=%d dp=%d microbatch=%d %s\n",
                    q->chips_used, q->cost_usd, q->step_s, q->cfg.tp, q->cfg.pp, q->cfg.dp,
                    q->cfg.microbatch, comet_system_exec_name(q->cfg.exec));
            }
        }
    }
    free(best);
    json_decref(j);
    return COMET_EXIT_OK;
}
