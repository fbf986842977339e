/* comet report: rebuild the report from stored results, without measuring. */
#include "cli.h"

#include "comet_bench.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet report [--from DIR] [--out REPORTDIR] [--foreign-ok]\n"
        "\n"
        "Rebuilds the report from stored results without measuring: reads\n"
        "DIR/results/*.jsonl (required), DIR/profile.json, DIR/predictions.json and\n"
        "DIR/run.json (optional: a missing one leaves its section saying so), predicts\n"
        "the measured kernels from the profile to state the model's error, and writes\n"
        "index.html (self-contained, offline), summary.md, and every plot as SVG with\n"
        "its data as CSV and JSON and its gnuplot script. Every file is written\n"
        "atomically.\n"
        "\n"
        "options:\n"
        "  --from DIR       results folder (default %s)\n"
        "  --out REPORTDIR  where the report goes (default DIR/report)\n"
        "  --foreign-ok     use results measured on another machine (refused by default:\n"
        "                   the message names the file and what differs)\n"
        "  -q, -v, -h       quiet, verbose, this help\n"
        "\n"
        "exit status: 0 built, 1 could not write the report, 2 missing or corrupt input\n"
        "(the message names the file).\n",
        COMET_CLI_DEFAULT_OUT);
}

int comet_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = { { "from", required_argument, NULL, 0x2001 },
        { "foreign-ok", no_argument, NULL, 0x2002 }, COMET_CLI_GLOBAL_LONGOPTS,
        { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    const char *from = NULL;
    char err[COMET_ERRLEN];
    int c, foreign_ok = 0;
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case 0x2001:
            from = optarg;
            break;
        case 0x2002:
            foreign_ok = 1;
            break;
        default:
            return comet_cli_bad_option("report", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("report", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    if (g.json) {
        comet_cli_error("report", "--json: the report's data are the .json files it writes");
        return COMET_EXIT_USAGE;
    }
    if (!from)
        from = COMET_CLI_DEFAULT_OUT;
    struct stat st;
    if (stat(from, &st) != 0 || !S_ISDIR(st.st_mode)) {
        comet_cli_error("report", "--from %s: no such results folder", from);
        return COMET_EXIT_USAGE;
    }
    /* results of another machine are refused unless --foreign-ok */
    json_t *here = NULL;
    if (comet_bench_this_machine(&here, err, sizeof err) != 0) {
        comet_cli_error("report", "%s", err);
        return COMET_EXIT_FAIL;
    }
    comet_results_load_opts lo = { here, foreign_ok };
    int rc = comet_reports_build_ex(from, g.out, &lo, err, sizeof err);
    json_decref(here);
    if (rc != 0) {
        comet_cli_error("report", "%s", err);
        return rc == -ENOENT || rc == -EINVAL ? COMET_EXIT_USAGE : COMET_EXIT_FAIL;
    }
    if (g.out)
        comet_util_info("report: %s/index.html and %s/summary.md", g.out, g.out);
    else
        comet_util_info("report: %s/report/index.html and %s/report/summary.md", from, from);
    return COMET_EXIT_OK;
}
