/* comet bench llm: the command line of the decoder-stack bench (options,
 * usage) and the hidden per-rank mode mpiexec starts; the measuring is
 * bench/llm.c's (comet_bench_llm_run). */
#include "cli.h"

#include "comet_bench_llm.h"
#include "comet_util.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet bench llm [--quick|--full] [configuration options] [options]\n"
        "\n"
        "Times whole steps of a GPT-style decoder stack in fp32 (LayerNorm, QKV GEMM,\n"
        "causal attention, projection, residual, LayerNorm, FFN-in, GELU, FFN-out,\n"
        "residual; no embedding or LM head) built from comet's kernels and OpenBLAS,\n"
        "over tp x dp MPI ranks as Megatron splits it: QKV and FFN-in by columns,\n"
        "projection and FFN-out by rows with an all-reduce forward and backward; the\n"
        "batch over data-parallel replicas with one gradient all-reduce; pipeline\n"
        "stages of layers (1F1B); with --seq-parallel the tokens split over the tp ranks\n"
        "outside the tensor-parallel regions (all-gather before, reduce-scatter after). Each\n"
        "configuration is one mpiexec launch; a sample is one step, the slowest rank's\n"
        "time between barriers; the record keeps the median step with its 95%% CI and\n"
        "per-term timers (gemm, attention, vector, tp, dp, pp, bubble, optimizer,\n"
        "recompute) in\n"
        "<out>/results/llm-<run_id>.jsonl (docs/FORMATS.md, kind llm).\n"
        "\n"
        "sets (without configuration options):\n"
        "  --quick (default)  256-wide model: train, prefill, decode on one rank of 1\n"
        "                     and 2 threads, and tp=2, dp=2 and pp=2 (as the cores allow)\n"
        "  --full             also the 512-wide model, tp=2 with sequence parallelism,\n"
        "                     full recomputation and the unfused attention\n"
        "  --ranks N          only the set's configurations of N ranks (e.g. 2: tp=2,\n"
        "                     dp=2 and pp=2 across a link, with --launcher-args)\n"
        "one configuration (any of these; the rest default to the 256-wide model):\n"
        "  --phase P          train (default), prefill, decode\n"
        "  --hidden N --heads N --ffn N --layers N --seq N --batch N --microbatch N\n"
        "  --context N        decode: tokens in the KV cache (default 256)\n"
        "  --attention A      fused (default) or unfused\n"
        "  --recompute R      none (default) or full (train)\n"
        "  --tp N --pp N --dp N  degrees (ranks = tp x pp x dp; pp: stages of layers,\n"
        "                     1F1B over the microbatches)\n"
        "  --seq-parallel     sequence parallelism (Korthikanti et al. 2022; needs tp >= 2)\n"
        "  --threads N        threads per rank (default 1)\n"
        "options:\n"
        "  --samples N        steps sampled per configuration (default 15 quick, 25 full)\n"
        "  --timeout S        one deadline for the whole run (default 600 s, full 3600 s)\n"
        "  --gate-timeout S   before each launch wait up to S s for others to leave the\n"
        "                     CPUs idle (default 5; 0 = off); the record's load says what\n"
        "                     the gate saw\n"
        "  --launcher-args \"...\"  passed to mpiexec before -n (-f hostfile -ppn 1, -iface\n"
        "                     eth1, -launcher ssh ...; quotes group words): ranks on other\n"
        "                     hosts or namespaces; the record's link is 'tcp:<dev>' when\n"
        "                     UCX_TLS is TCP only (as bench collectives names it)\n"
        "  --out DIR          results in DIR/results (default comet-out)\n"
        "  --json             the records as JSON on stdout\n"
        "  -q, -v, -h         quiet, verbose, this help\n");
}

/* mpiexec [launcher args] -n NP <this binary> bench llm --worker <job> */
static long spawn_ranks(const comet_bench_llm_job *job, int np, void *ctx)
{
    (void)ctx;
    char cfg[512], samples[16], cap[32], load[96];
    snprintf(load, sizeof load, "%.4f,%.3f,%d,%d", job->busy_others, job->waited_s, job->idle,
        job->gate_skipped);
    comet_llm_cfg_format(&job->cfg, cfg, sizeof cfg);
    snprintf(samples, sizeof samples, "%d", job->samples);
    snprintf(cap, sizeof cap, "%g", job->cap_s);
    const char *const tail[] = { "bench", "llm", "--worker", cfg, job->outpath, job->run_id,
        job->machine_id, samples, cap, load, NULL };
    /* the ranks own their threads: OpenBLAS's own pool would oversubscribe */
    const char *const env[] = { "OPENBLAS_NUM_THREADS=1", NULL };
    return comet_cli_spawn_ranks(
        "bench llm", job->launcher_args, job->nlauncher_args, np, tail, env);
}

/* --worker CFG OUTFILE RUN_ID MACHINE_ID SAMPLES CAP LOAD */
static int worker_main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "comet: bench llm: --worker: expected 7 arguments\n");
        return 2;
    }
    comet_bench_llm_job job;
    char err[256];
    memset(&job, 0, sizeof job);
    if (comet_llm_cfg_parse(argv[2], &job.cfg, err, sizeof err)) {
        fprintf(stderr, "comet: bench llm: --worker: %s\n", err);
        return 2;
    }
    job.outpath = argv[3];
    job.run_id = argv[4];
    job.machine_id = argv[5];
    job.samples = atoi(argv[6]);
    job.cap_s = atof(argv[7]);
    if (sscanf(
            argv[8], "%lf,%lf,%d,%d", &job.busy_others, &job.waited_s, &job.idle, &job.gate_skipped)
        != 4) {
        fprintf(stderr, "comet: bench llm: --worker: bad load '%s'\n", argv[8]);
        return 2;
    }
    return comet_bench_llm_worker(&job);
}

int comet_cli_bench_llm(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--worker"))
        return worker_main(argc, argv);
    enum {
        O_QUICK = 0x2001,
        O_FULL,
        O_PHASE,
        O_ATT,
        O_REC,
        O_SAMPLES,
        O_TIMEOUT,
        O_GATE,
        O_SP,
        O_LARGS,
        O_RANKS,
        O_INT /* the integer options follow, in ints[] order */
    };
    static const char *const ints[] = { "hidden", "heads", "ffn", "layers", "seq", "batch",
        "microbatch", "context", "tp", "dp", "threads", "pp" };
    enum { NINT = sizeof ints / sizeof *ints };
    struct option longopts[12 + NINT + 6];
    int no = 0;
    longopts[no++] = (struct option) { "quick", no_argument, NULL, O_QUICK };
    longopts[no++] = (struct option) { "full", no_argument, NULL, O_FULL };
    longopts[no++] = (struct option) { "phase", required_argument, NULL, O_PHASE };
    longopts[no++] = (struct option) { "attention", required_argument, NULL, O_ATT };
    longopts[no++] = (struct option) { "recompute", required_argument, NULL, O_REC };
    longopts[no++] = (struct option) { "samples", required_argument, NULL, O_SAMPLES };
    longopts[no++] = (struct option) { "timeout", required_argument, NULL, O_TIMEOUT };
    longopts[no++] = (struct option) { "gate-timeout", required_argument, NULL, O_GATE };
    longopts[no++] = (struct option) { "seq-parallel", no_argument, NULL, O_SP };
    longopts[no++] = (struct option) { "launcher-args", required_argument, NULL, O_LARGS };
    longopts[no++] = (struct option) { "ranks", required_argument, NULL, O_RANKS };
    for (int i = 0; i < NINT; i++)
        longopts[no++] = (struct option) { ints[i], required_argument, NULL, O_INT + i };
    const struct option glob[] = { COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    for (size_t i = 0; i < sizeof glob / sizeof *glob; i++)
        longopts[no++] = glob[i];
    comet_cli_global g = { 0 };
    comet_bench_llm_opts o;
    memset(&o, 0, sizeof o);
    o.gate_timeout_s = -1;
    /* the one configuration's defaults: the quick set's model */
    comet_llm_cfg c;
    memset(&c, 0, sizeof c);
    c.hidden = 256, c.heads = 4, c.ffn = 1024, c.layers = 2, c.seq = 128, c.batch = 4;
    c.attention_fused = 1, c.tp = c.dp = c.threads = c.pp = 1, c.seed = 1;
    int one = 0, set = 0, batch_given = 0, opt;
    uint64_t v;
    int vals[NINT];
    comet_cli_getopt_reset();
    while ((opt = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, opt, optarg))
            continue;
        switch (opt) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case O_QUICK:
            set = 1;
            o.full = 0;
            break;
        case O_FULL:
            set = 1;
            o.full = 1;
            break;
        case O_PHASE:
            if (comet_llm_phase_parse(optarg, &c.phase)) {
                comet_cli_error("bench llm", "--phase '%s': train, prefill or decode", optarg);
                return COMET_EXIT_USAGE;
            }
            one = 1;
            break;
        case O_ATT:
            if (strcmp(optarg, "fused") && strcmp(optarg, "unfused")) {
                comet_cli_error("bench llm", "--attention '%s': fused or unfused", optarg);
                return COMET_EXIT_USAGE;
            }
            c.attention_fused = !strcmp(optarg, "fused");
            one = 1;
            break;
        case O_REC:
            if (strcmp(optarg, "none") && strcmp(optarg, "full")) {
                comet_cli_error("bench llm", "--recompute '%s': none or full", optarg);
                return COMET_EXIT_USAGE;
            }
            c.recompute_full = !strcmp(optarg, "full");
            one = 1;
            break;
        case O_SP:
            c.seq_parallel = 1;
            one = 1;
            break;
        case O_SAMPLES:
            if (comet_cli_parse_pos("bench llm", "--samples", optarg, 100000, &v))
                return COMET_EXIT_USAGE;
            o.samples = (int)v;
            break;
        case O_GATE: {
            char *end = NULL;
            o.gate_timeout_s = strtod(optarg, &end);
            if (!end || *end || !(o.gate_timeout_s >= 0) || o.gate_timeout_s > 3600) {
                comet_cli_error("bench llm", "--gate-timeout '%s': seconds, 0 to 3600", optarg);
                return COMET_EXIT_USAGE;
            }
            break;
        }
        case O_LARGS:
            o.launcher_args = optarg;
            break;
        case O_RANKS:
            if (comet_cli_parse_pos("bench llm", "--ranks", optarg, 1024, &v))
                return COMET_EXIT_USAGE;
            o.ranks = (int)v;
            break;
        case O_TIMEOUT:
            if (comet_cli_parse_pos("bench llm", "--timeout", optarg, 1u << 20, &v))
                return COMET_EXIT_USAGE;
            o.timeout_s = (double)v;
            break;
        default:
            if (opt >= O_INT && opt < O_INT + NINT) {
                char flag[32];
                snprintf(flag, sizeof flag, "--%s", ints[opt - O_INT]);
                if (comet_cli_parse_pos("bench llm", flag, optarg, 1u << 20, &v))
                    return COMET_EXIT_USAGE;
                vals[opt - O_INT] = (int)v;
                int *dst[NINT] = { &c.hidden, &c.heads, &c.ffn, &c.layers, &c.seq, &c.batch,
                    &c.microbatch, &c.context, &c.tp, &c.dp, &c.threads, &c.pp };
                *dst[opt - O_INT] = vals[opt - O_INT];
                batch_given |= opt - O_INT == 5;
                one = 1;
                break;
            }
            return comet_cli_bad_option("bench llm", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("bench llm", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    if (one && o.ranks) {
        comet_cli_error(
            "bench llm", "--ranks selects from a set; a configuration gives --tp/--pp/--dp");
        return COMET_EXIT_USAGE;
    }
    if (one && set) {
        comet_cli_error("bench llm",
            "--quick/--full run a set; configuration options run one "
            "configuration (give one or the other)");
        return COMET_EXIT_USAGE;
    }
    if (one) {
        if (c.phase == COMET_LLM_DECODE && c.context == 0)
            c.context = 256;
        if (c.phase == COMET_LLM_DECODE && !batch_given)
            c.batch = 8;
        char err[256];
        if (comet_llm_check(&c, c.tp * c.dp * c.pp, err, sizeof err)) {
            comet_cli_error("bench llm", "%s", err);
            return COMET_EXIT_USAGE;
        }
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (cores > 0 && (long)c.tp * c.dp * c.pp * c.threads > cores) {
            comet_cli_error("bench llm",
                "tp x pp x dp x threads = %d exceeds the %ld cores (MPICH busy-polls)",
                c.tp * c.dp * c.pp * c.threads, cores);
            return COMET_EXIT_USAGE;
        }
        o.one = &c;
    }
    char cmdline[4096];
    size_t co = (size_t)snprintf(cmdline, sizeof cmdline, "comet bench");
    for (int i = 0; i < argc && co < sizeof cmdline; i++)
        co += (size_t)snprintf(cmdline + co, sizeof cmdline - co, " %s", argv[i]);
    o.command_line = cmdline;
    o.out = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    o.json = g.json;
    o.spawn = spawn_ranks;
    return comet_bench_llm_run(&o);
}
