/* comet bench collectives: the command line of the MPI benchmark (options,
 * usage) and the hidden per-rank mode mpiexec starts; the measuring is
 * bench/coll.c's (comet_bench_coll_run). */
#include "cli.h"

#include "comet_bench_coll.h"
#include "comet_util.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet bench collectives [options]\n"
        "\n"
        "Measures MPI ping-pong (OSU: latency = half the round trip, bandwidth = bytes /\n"
        "latency), allreduce, allgather, allgatherv (equal counts), reduce_scatter\n"
        "(MPI_Reduce_scatter_block), reduce,\n"
        "bcast and alltoall under every MPICH algorithm that can be forced\n"
        "(MPIR_CVAR_DEVICE_COLLECTIVES=none, MPIR_CVAR_<COLL>_INTRA_ALGORITHM=<alg>,\n"
        "MPIR_CVAR_COLLECTIVE_FALLBACK=error; one mpiexec launch each; 'auto' leaves MPICH's\n"
        "device collectives on), and the distributed compound kernels (dist_kernels).\n"
        "A barrier precedes every call; time per call = max over ranks; > 5 warm-up calls;\n"
        "sizes are sampled in interleaved rounds (half a sample of warm-up calls before each\n"
        "sample), so slow spells of a shared machine fall on every size alike;\n"
        "every result is validated. Records: latency (us), algbw and busbw (GB/s, nccl-tests\n"
        "factors), in <out>/results/collectives-<run_id>.jsonl.\n"
        "\n"
        "options:\n"
        "  --quick | --full          quick (default): sizes 4 B..1 MiB (x4 steps), auto plus\n"
        "                            the forced allreduce algorithms, 1 launch; full: 4 B..64\n"
        "                            MiB, every algorithm, 3 launches\n"
        "  --np N                    ranks (default 2; never more than cores unless\n"
        "                            --oversubscribe: MPICH busy-polls)\n"
        "  --sizes LIST              message bytes per rank, e.g. 8,1K,64K,1M\n"
        "  --colls LIST              subset of pingpong,allreduce,allgather,allgatherv,\n"
        "                            reduce_scatter,reduce,bcast,alltoall,dist_kernels,\n"
        "                            exchange (ranks 0 and 1 send each other a message at\n"
        "                            once; only when named)\n"
        "  --algs auto|all|LIST      MPICH's choice only, every forceable algorithm, or the\n"
        "                            named ones (e.g. auto,ring,recursive_doubling)\n"
        "  --launches K              mpiexec launches per configuration (default 1 quick,\n"
        "                            3 full: timings differ between launches)\n"
        "  --timeout S               one deadline for the whole job (default 300 s quick,\n"
        "                            3600 s full); a hung or dead rank ends it, exit 1\n"
        "  --launcher-args \"...\"     passed to mpiexec before -n (-f hostfile, -iface eth1,\n"
        "                            -launcher ssh ...); quotes group words\n"
        "  --oversubscribe           allow more ranks than cores\n"
        "  --gate-timeout S          before each launch wait up to S s for others to leave\n"
        "                            the CPUs idle (default 2 quick, 10 full; 0 = off);\n"
        "                            the load seen is recorded\n"
        "  --timing barrier|loop     barrier (default): a barrier before every call, the\n"
        "                            latency is the max over ranks (what a bulk-synchronous\n"
        "                            step sees; the record's rank_avg_latency_us, the mean\n"
        "                            over ranks, is OSU 5's figure); loop: IMB's back-to-back\n"
        "                            calls after one barrier\n"
        "  --min-sample S            shortest sample in seconds (default 0.002 collectives,\n"
        "                            0.005 distributed kernels); over a tbf-shaped link use\n"
        "                            >= 10 x bucket / rate, so every sample runs in the\n"
        "                            link's sustained regime, as a kernel loop does\n"
        "  --stock-malloc            do not set GLIBC_TUNABLES (default: no trim/mmap, so\n"
        "                            MPICH's per-call temporaries are reused)\n"
        "  --out DIR                 results in DIR/results (default comet-out)\n"
        "  --json                    summary as JSON on stdout\n"
        "  -q, -v, -h                quiet, verbose, this help\n"
        "UCX_* and MPIR_CVAR_* variables pass through to the ranks and are recorded; the\n"
        "record's link is 'shm' within a node, 'tcp:<dev>' when UCX_TLS is TCP only.\n");
}

/* The hidden per-rank command line: the job's fields in this order. Written
 * by spawn_ranks, read by worker_main; nothing else knows it. */
#define WORKER_ARGS 12

/* Starts one launch's ranks: mpiexec [launcher args] -n NP <this binary>
 * bench collectives --worker <job>, in its own process group, dying with
 * this comet, with the forced algorithm's environment. */
static long spawn_ranks(const comet_bench_coll_job *job, void *ctx)
{
    (void)ctx;
    char launch[16], full[4], cap[32], load[96], minsample[32];
    snprintf(launch, sizeof launch, "%d", job->launch);
    snprintf(full, sizeof full, "%d", job->full);
    snprintf(cap, sizeof cap, "%g", job->sample_cap_s);
    snprintf(load, sizeof load, "%.4f,%.3f,%d,%d", job->load.busy_others, job->load.waited_s,
        job->load.idle, job->load.skipped);
    snprintf(minsample, sizeof minsample, "%.9g", job->min_sample_s);
    const char *const tail[] = { "bench", "collectives", "--worker", job->coll, job->alg,
        job->sizes, launch, job->outpath, job->run_id, job->machine_id, full, cap, load,
        job->loop ? "loop" : "barrier", minsample, NULL };
    const char *env[9];
    int ne = 0;
    for (int i = 0; i < 8 && job->env[i]; i++)
        env[ne++] = job->env[i];
    env[ne] = NULL;
    return comet_cli_spawn_ranks(
        "bench collectives", job->launcher_args, job->nlauncher_args, job->np, tail, env);
}

/* One rank: the job from the hidden command line spawn_ranks wrote. */
static int worker_main(int argc, char **argv)
{
    /* --worker COLL ALG SIZES LAUNCH OUTFILE RUN_ID MACHINE_ID FULL CAP LOAD [TIMING
     * [MIN_SAMPLE]] */
    if (argc < WORKER_ARGS || strcmp(argv[1], "--worker")) {
        fprintf(
            stderr, "comet: bench collectives: --worker: expected %d arguments\n", WORKER_ARGS - 2);
        return 2;
    }
    comet_bench_coll_job job;
    memset(&job, 0, sizeof job);
    job.coll = argv[2];
    job.alg = argv[3];
    job.sizes = argv[4];
    job.launch = atoi(argv[5]);
    job.outpath = argv[6];
    job.run_id = argv[7];
    job.machine_id = argv[8];
    job.full = atoi(argv[9]);
    job.sample_cap_s = atof(argv[10]);
    if (sscanf(argv[11], "%lf,%lf,%d,%d", &job.load.busy_others, &job.load.waited_s, &job.load.idle,
            &job.load.skipped)
        != 4) {
        fprintf(stderr, "comet: bench collectives: --worker: bad load '%s'\n", argv[11]);
        return 2;
    }
    /* others' share while the ranks sample is not measured (they busy-poll
     * every core): the records say null, not 0 */
    job.load.busy_during = -1;
    job.loop = argc > WORKER_ARGS && !strcmp(argv[WORKER_ARGS], "loop");
    job.min_sample_s = argc > WORKER_ARGS + 1 ? atof(argv[WORKER_ARGS + 1]) : 0;
    return comet_bench_coll_worker(&job);
}

/* one line through the CLI's error helper, exit status 2 */
#define usage_err(fmt, arg) (comet_cli_error("bench collectives", fmt, arg), COMET_EXIT_USAGE)

int comet_cli_bench_coll(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--worker"))
        return worker_main(argc, argv);
    enum {
        O_QUICK = 0x2001,
        O_FULL,
        O_NP,
        O_SIZES,
        O_COLLS,
        O_ALGS,
        O_LAUNCHES,
        O_TIMEOUT,
        O_LARGS,
        O_OVER,
        O_OUT,
        O_JSON,
        O_STOCK,
        O_GATE,
        O_MINSAMPLE,
        O_TIMING
    };
    static const struct option longopts[] = { { "quick", no_argument, NULL, O_QUICK },
        { "full", no_argument, NULL, O_FULL }, { "np", required_argument, NULL, O_NP },
        { "sizes", required_argument, NULL, O_SIZES },
        { "colls", required_argument, NULL, O_COLLS }, { "algs", required_argument, NULL, O_ALGS },
        { "launches", required_argument, NULL, O_LAUNCHES },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "launcher-args", required_argument, NULL, O_LARGS },
        { "oversubscribe", no_argument, NULL, O_OVER }, { "out", required_argument, NULL, O_OUT },
        { "json", no_argument, NULL, O_JSON }, { "stock-malloc", no_argument, NULL, O_STOCK },
        { "gate-timeout", required_argument, NULL, O_GATE },
        { "min-sample", required_argument, NULL, O_MINSAMPLE },
        { "timing", required_argument, NULL, O_TIMING }, { "quiet", no_argument, NULL, 'q' },
        { "verbose", no_argument, NULL, 'v' }, { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 } };
    comet_bench_coll_opts o;
    comet_bench_coll_defaults(&o);
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        uint64_t v;
        switch (c) {
        case 'h':
            usage(stdout);
            return 0;
        case 'q':
            comet_util_verbosity = -1;
            break;
        case 'v':
            comet_util_verbosity = 1;
            break;
        case O_QUICK:
            o.full = 0;
            break;
        case O_FULL:
            o.full = 1;
            break;
        case O_NP:
            if (comet_util_parse_u64(optarg, &v) || v < 1 || v > 4096)
                return usage_err("--np '%s': expected 1..4096", optarg);
            o.np = (int)v;
            break;
        case O_SIZES:
            o.sizes = optarg;
            break;
        case O_COLLS:
            o.colls = optarg;
            break;
        case O_ALGS:
            o.algs = optarg;
            break;
        case O_LAUNCHES:
            if (comet_util_parse_u64(optarg, &v) || v < 1 || v > 100)
                return usage_err("--launches '%s': expected 1..100", optarg);
            o.launches = (int)v;
            break;
        case O_TIMEOUT:
            if (comet_util_parse_double(optarg, &o.timeout_s) || o.timeout_s <= 0
                || o.timeout_s > 86400)
                return usage_err("--timeout '%s': expected seconds in (0, 86400]", optarg);
            break;
        case O_LARGS:
            o.launcher_args = optarg;
            break;
        case O_OVER:
            o.oversubscribe = 1;
            break;
        case O_OUT:
            o.out = optarg;
            break;
        case O_JSON:
            o.json = 1;
            break;
        case O_STOCK:
            o.stock_malloc = 1;
            break;
        case O_TIMING:
            if (strcmp(optarg, "barrier") && strcmp(optarg, "loop"))
                return usage_err("--timing '%s': expected barrier or loop", optarg);
            o.loop = !strcmp(optarg, "loop");
            break;
        case O_MINSAMPLE:
            if (comet_util_parse_double(optarg, &o.min_sample_s) || o.min_sample_s < 0
                || o.min_sample_s > 10)
                return usage_err("--min-sample '%s': expected seconds in [0, 10]", optarg);
            break;
        case O_GATE:
            if (comet_util_parse_double(optarg, &o.gate_timeout_s) || o.gate_timeout_s < 0
                || o.gate_timeout_s > 3600)
                return usage_err("--gate-timeout '%s': expected seconds in [0, 3600]", optarg);
            break;
        case ':':
            return usage_err("option '%s' needs a value", argv[optind - 1]);
        default:
            return usage_err("unknown option '%s' (see --help)",
                optind - 1 < argc && optind > 0 ? argv[optind - 1] : "?");
        }
    }
    if (optind < argc)
        return usage_err("unexpected argument '%s'", argv[optind]);
    /* the command line as typed, for the run record */
    char cmdline[4096];
    size_t co = (size_t)snprintf(cmdline, sizeof cmdline, "comet bench");
    for (int i = 0; i < argc && co < sizeof cmdline; i++)
        co += (size_t)snprintf(cmdline + co, sizeof cmdline - co, " %s", argv[i]);
    o.command_line = cmdline;
    o.spawn = spawn_ranks;
    return comet_bench_coll_run(&o);
}
