/* comet bench: measure kernels, memory and collectives; export results. */
#include "cli.h"

#include "comet_bench.h"
#include "comet_probe.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet bench kernels|memory|collectives|gms|llm|all [options]\n"
        "       comet bench export RESULTS.jsonl... --csv FILE\n"
        "\n"
        "Measures on this machine and appends one JSON Lines record per measurement to\n"
        "<out>/results/<kind>-<run_id>.jsonl (docs/FORMATS.md). Before each sample set an\n"
        "idle gate waits (bounded) for other tenants to quiet down; samples repeat until\n"
        "the 95%% CI of the median is within the target or the time cap.\n"
        "\n"
        "  kernels      compound ops x variant x shape x threads from a shape set, tile\n"
        "               sweeps of the fused variants (full set), sgemm on a log grid\n"
        "  memory       triad/fill (--full: also read/copy) working-set sweep 4 KiB ..\n"
        "               >= 4x LLC, 1 thread and all cores; exp/max/sum/sub/div/mul/sqrt in cache "
        "and\n"
        "               streaming; softmax/LayerNorm row passes, their stores cached vs\n"
        "               streamed\n"
        "  collectives  MPI ping-pong and collectives (see comet bench collectives --help)\n"
        "  llm          whole decoder-stack steps over MPI ranks (see comet bench llm --help)\n"
        "  gms          gather-GEMM-scatter: 4 dataflows x tiles x threads per input\n"
        "  all          memory, kernels, then collectives\n"
        "  export       convert results files to CSV\n"
        "\n"
        "options:\n"
        "  --quick | --full         shape/sweep set (default --quick)\n"
        "  --shapes FILE            kernels: shape set (default configs/shapes/<set>.yaml)\n"
        "  --threads N              only this thread count\n"
        "  --max-bytes SIZE         memory: largest working set (default 4x LLC an array;\n"
        "                           quick: at most 512 MiB an array)\n"
        "  --per-octave N           memory: working-set points per doubling (default 1\n"
        "                           quick, 2 full)\n"
        "  --csv FILE               also write the run's records as CSV\n"
        "  --target-ci F            stop at CI half-width / median <= F (default 0.02)\n"
        "  --time-cap S             sampling time cap per configuration, shared by the\n"
        "                           kernels passes (default 0.3 quick, 5 full)\n"
        "  --grid-time-cap S        kernels: cap per sgemm-grid set, split over the passes\n"
        "                           (default 0.03 quick; full: one pass's cap)\n"
        "  --gate-timeout S         idle-gate bound (0 = no gate; default 2 quick, 10 full)\n"
        "  --gate-threshold F       others' busy fraction that counts as idle (default 0.10)\n"
        "  --passes N               kernels: passes over the set, samples merged per config\n"
        "                           so a median spans the run (default 3)\n"
        "  --no-pin                 do not pin threads\n"
        "  --json                   print a summary as JSON on stdout\n"
        "  --out DIR                output folder (default comet-out)\n"
        "  -q, -v, -h               quiet, verbose, this help\n"
        "\n"
        "SIGINT/SIGTERM stop after the current sample set; what was measured is kept.\n");
}

/* "comet bench ..." as typed, for the run record. */
static char *join_cmdline(int argc, char **argv)
{
    size_t len = 16;
    for (int i = 0; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s)
        return NULL;
    strcpy(s, "comet");
    for (int i = 0; i < argc; i++) {
        strcat(s, " ");
        strcat(s, argv[i]);
    }
    return s;
}

static int do_export(int argc, char **argv, const char *csv)
{
    char err[COMET_ERRLEN];
    comet_results_set all = { 0 };
    int rc = COMET_EXIT_OK;
    if (!csv) {
        comet_cli_error("bench export", "--csv FILE is required");
        return COMET_EXIT_USAGE;
    }
    if (argc == 0) {
        comet_cli_error("bench export", "no results file given");
        return COMET_EXIT_USAGE;
    }
    for (int i = 0; i < argc; i++) {
        int lrc = comet_results_load(argv[i], NULL, &all, NULL, err, sizeof err);
        if (lrc) {
            comet_cli_error("bench export", "%s", err);
            rc = lrc == -ENOENT || lrc == -EINVAL ? COMET_EXIT_USAGE : COMET_EXIT_FAIL;
            goto done;
        }
        if (err[0])
            fprintf(stderr, "comet: bench export: warning: %s\n", err);
    }
    if (comet_results_export_csv(all.recs, all.n, csv, err, sizeof err)) {
        comet_cli_error("bench export", "%s", err);
        rc = COMET_EXIT_FAIL;
        goto done;
    }
    comet_util_info("bench export: %zu records -> %s", all.n, csv);
done:
    comet_results_set_free(&all);
    return rc;
}

static json_t *summary_json(const char *kind, const comet_bench_summary *s)
{
    json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:b,s:f}", "kind", kind, "results", s->results_path,
        "records", (json_int_t)s->records, "invalid", (json_int_t)s->invalid, "interrupted",
        s->interrupted, "elapsed_s", s->elapsed_s);
    if (o && s->highlights)
        json_object_set(o, "highlights", s->highlights);
    return o;
}

int comet_cmd_bench(int argc, char **argv)
{
    enum {
        O_QUICK = 0x2001,
        O_FULL,
        O_SHAPES,
        O_THREADS,
        O_MAXB,
        O_POCT,
        O_CSV,
        O_TCI,
        O_TCAP,
        O_GTCAP,
        O_GTO,
        O_GTH,
        O_NOPIN,
        O_PASSES
    };
    static const struct option longopts[] = { { "quick", no_argument, NULL, O_QUICK },
        { "full", no_argument, NULL, O_FULL }, { "shapes", required_argument, NULL, O_SHAPES },
        { "threads", required_argument, NULL, O_THREADS },
        { "max-bytes", required_argument, NULL, O_MAXB },
        { "per-octave", required_argument, NULL, O_POCT },
        { "csv", required_argument, NULL, O_CSV }, { "target-ci", required_argument, NULL, O_TCI },
        { "time-cap", required_argument, NULL, O_TCAP },
        { "grid-time-cap", required_argument, NULL, O_GTCAP },
        { "gate-timeout", required_argument, NULL, O_GTO },
        { "gate-threshold", required_argument, NULL, O_GTH },
        { "no-pin", no_argument, NULL, O_NOPIN }, { "passes", required_argument, NULL, O_PASSES },
        COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    char err[COMET_ERRLEN];
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? COMET_EXIT_USAGE : COMET_EXIT_OK;
    }
    const char *kind = argv[1];
    if (!strcmp(kind, "llm"))
        return comet_cli_bench_llm(argc - 1, argv + 1);
    if (!strcmp(kind, "collectives")) {
#ifdef COMET_BENCH_COLL_NOT_BUILT
        comet_cli_error("bench collectives", "the collectives bench is not built yet");
        return COMET_EXIT_FAIL;
#else
        int crc = comet_cli_bench_coll(argc - 1, argv + 1);
        /* finished: mark the newest collectives file complete in its folder */
        const char *cdir = COMET_CLI_DEFAULT_OUT;
        for (int i = 2; i + 1 < argc; i++)
            if (!strcmp(argv[i], "--out"))
                cdir = argv[i + 1];
        for (int i = 2; i < argc; i++)
            if (!strncmp(argv[i], "--out=", 6))
                cdir = argv[i] + 6;
        char cerr[COMET_ERRLEN];
        const int worker = argc >= 3 && !strcmp(argv[2], "--worker"); /* one rank's job */
        if (crc == 0 && !worker
            && comet_reports_results_mark(cdir, "collectives", cerr, sizeof cerr) != 0)
            comet_util_debug("bench collectives: cannot mark the results complete: %s", cerr);
        return crc;
#endif
    }
    int is_export = !strcmp(kind, "export");
    if (!is_export && strcmp(kind, "kernels") && strcmp(kind, "memory") && strcmp(kind, "all")
        && strcmp(kind, "gms")) {
        comet_cli_error(
            "bench", "unknown bench '%s' (kernels, memory, collectives, llm, all, export)", kind);
        return COMET_EXIT_USAGE;
    }

    /* Parse in two passes: the set (--quick/--full) picks the defaults the
     * other flags then override, whatever their order. */
    int full = 0;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--full"))
            full = 1;
    comet_bench_opts o;
    comet_bench_opts_defaults(&o, full);
    const char *csv = NULL;
    int c;
    comet_cli_getopt_reset();
    while ((c = getopt_long(argc - 1, argv + 1, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        uint64_t u;
        double d;
        switch (c) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case O_QUICK:
            if (full) {
                comet_cli_error("bench", "--quick and --full exclude each other");
                return COMET_EXIT_USAGE;
            }
            break;
        case O_FULL:
            break;
        case O_SHAPES:
            o.shapes_path = optarg;
            break;
        case O_THREADS:
            if (comet_cli_parse_pos("bench", "--threads", optarg, 4096, &u))
                return COMET_EXIT_USAGE;
            o.threads = (int)u;
            break;
        case O_MAXB:
            if (comet_util_parse_u64(optarg, &u) || u < 4096 || u > (1ull << 40)) {
                comet_cli_error("bench", "--max-bytes: '%s' is not a size from 4K to 1T", optarg);
                return COMET_EXIT_USAGE;
            }
            o.max_bytes = u;
            break;
        case O_POCT: {
            char *end = NULL;
            double v = strtod(optarg, &end);
            if (end == optarg || *end || !(v >= 0.25 && v <= 8)) {
                comet_cli_error(
                    "bench", "--per-octave: '%s' is not a number from 0.25 to 8", optarg);
                return COMET_EXIT_USAGE;
            }
            o.per_octave = v;
            break;
        }
        case O_CSV:
            csv = optarg;
            break;
        case O_GTCAP:
            if (comet_util_parse_double(optarg, &d) || d < 0.001 || d > 86400) {
                comet_cli_error(
                    "bench", "--grid-time-cap: '%s' is not a number in [0.001, 86400]", optarg);
                return COMET_EXIT_USAGE;
            }
            o.grid_time_cap_s = d;
            break;
        case O_TCI:
        case O_TCAP:
        case O_GTO:
        case O_GTH: {
            const char *flag = c == O_TCI ? "--target-ci"
                : c == O_TCAP             ? "--time-cap"
                : c == O_GTO              ? "--gate-timeout"
                                          : "--gate-threshold";
            double lo = c == O_TCAP ? 0.001 : 0, hi = c == O_TCI || c == O_GTH ? 1 : 86400;
            if (comet_util_parse_double(optarg, &d) || d < lo || d > hi || (c == O_TCI && d <= 0)) {
                comet_cli_error(
                    "bench", "%s: '%s' is not a number in [%g, %g]", flag, optarg, lo, hi);
                return COMET_EXIT_USAGE;
            }
            if (c == O_TCI)
                o.cfg.target_ci = d;
            else if (c == O_TCAP)
                o.cfg.time_cap_s = d;
            else if (c == O_GTO)
                o.cfg.gate.timeout_s = d;
            else
                o.cfg.gate.threshold = d;
            break;
        }
        case O_PASSES:
            if (comet_cli_parse_pos("bench", "--passes", optarg, 100, &u))
                return COMET_EXIT_USAGE;
            o.passes = (int)u;
            break;
        case O_NOPIN:
            o.pin = 0;
            break;
        default:
            return comet_cli_bad_option("bench", argc - 1, argv + 1);
        }
    }
    int first_arg = optind + 1;
    if (is_export)
        return do_export(argc - first_arg, argv + first_arg, csv);
    if (first_arg < argc) {
        comet_cli_error("bench", "unexpected argument '%s'", argv[first_arg]);
        return COMET_EXIT_USAGE;
    }
    if (o.shapes_path && strcmp(kind, "kernels") && strcmp(kind, "all")) {
        comet_cli_error("bench", "--shapes applies to 'kernels' only");
        return COMET_EXIT_USAGE;
    }
    o.out_dir = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    o.csv_path = csv;
    /* one comet at a time in an output folder (comet run's stages work under its lock) */
    comet_util_lock lk;
    int stale = 0;
    char what[64];
    snprintf(what, sizeof what, "comet bench %s", kind);
    if (comet_util_lock_dir(o.out_dir, what, &lk, &stale, err, sizeof err) != 0) {
        comet_cli_error("bench", "%s", err);
        return COMET_EXIT_FAIL;
    }
    if (stale)
        fprintf(stderr,
            "comet: bench: warning: an earlier comet (pid %d) ended in %s without finishing "
            "(killed?); its results file is kept as it is, torn last line and all\n",
            stale, o.out_dir);

    /* The machine every record is measured on. */
    comet_probe_opts po;
    comet_probe_machine m;
    memset(&po, 0, sizeof po);
    if (comet_probe_run(&po, &m, err, sizeof err)) {
        comet_cli_error("bench", "probe: %s", err);
        comet_util_unlock_dir(&lk);
        return COMET_EXIT_FAIL;
    }
    json_t *machine = comet_probe_to_json(&m);
    char *cmdline = join_cmdline(argc, argv);
    if (!machine || !cmdline) {
        json_decref(machine);
        free(cmdline);
        comet_cli_error("bench", "out of memory");
        comet_util_unlock_dir(&lk);
        return COMET_EXIT_FAIL;
    }
    /* argv[0] is "bench": "comet bench memory --quick". */
    o.cmdline = cmdline;
    comet_util_install_signals();

    const char *which[2] = { kind, NULL };
    if (!strcmp(kind, "all")) {
        which[0] = "memory";
        which[1] = "kernels";
    }
    json_t *out = json_array();
    int rc = COMET_EXIT_OK;
    for (int k = 0; k < 2 && which[k] && rc == COMET_EXIT_OK; k++) {
        comet_bench_summary s;
        int brc = !strcmp(which[k], "memory")
            ? comet_bench_memory_run(&o, machine, &s, err, sizeof err)
            : !strcmp(which[k], "gms") ? comet_bench_gms_run(&o, machine, &s, err, sizeof err)
                                       : comet_bench_kernels_run(&o, machine, &s, err, sizeof err);
        if (brc) {
            comet_cli_error("bench", "%s", err);
            rc = brc == -EINVAL || brc == -ENOENT ? COMET_EXIT_USAGE : COMET_EXIT_FAIL;
            break;
        }
        json_array_append_new(out, summary_json(which[k], &s));
        /* a bench that finished marks its file complete (the report tells it
         * from an interrupted one; comet run reuses only complete files) */
        if (!s.interrupted && !s.invalid
            && comet_reports_results_mark(o.out_dir, which[k], err, sizeof err) != 0)
            comet_util_info("bench %s: cannot mark the results complete: %s", which[k], err);
        if (!g.json)
            comet_util_info("bench %s: %zu records in %s (%.1f s)", which[k], s.records,
                s.results_path, s.elapsed_s);
        json_decref(s.highlights);
        if (s.interrupted) {
            comet_cli_error(
                "bench", "interrupted; kept %zu records in %s", s.records, s.results_path);
            rc = COMET_EXIT_FAIL;
        } else if (s.invalid) {
            comet_cli_error("bench",
                "%zu of %zu results failed their correctness check (see "
                "\"valid\" in %s)",
                s.invalid, s.records, s.results_path);
            rc = COMET_EXIT_FAIL;
        }
    }
    if (rc == COMET_EXIT_OK && !strcmp(kind, "all")) {
#ifdef COMET_BENCH_COLL_NOT_BUILT
        comet_util_info("bench all: collectives bench not built yet; skipped");
#else
        char *cargv[8];
        int cargc = 0;
        cargv[cargc++] = "collectives";
        cargv[cargc++] = full ? "--full" : "--quick";
        if (g.out) {
            cargv[cargc++] = "--out";
            cargv[cargc++] = (char *)g.out;
        }
        cargv[cargc] = NULL;
        comet_cli_getopt_reset();
        rc = comet_cli_bench_coll(cargc, cargv);
#endif
    }
    if (g.json) {
        char *text = json_dumps(!strcmp(kind, "all") ? out : json_array_get(out, 0),
            JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        if (text)
            printf("%s\n", text);
        free(text);
    }
    json_decref(out);
    json_decref(machine);
    free(cmdline);
    comet_util_unlock_dir(&lk);
    return rc;
}
