/* comet report: rebuild the report from stored results. */
#include "cli.h"

#include "comet_reports.h"
#include "comet_util.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet report [--from DIR]\n"
        "\n"
        "Rebuilds DIR/report (index.html, summary.md, SVG plots with their CSV and JSON\n"
        "data) from stored results without measuring: DIR/results/*.jsonl, DIR/profile.json,\n"
        "DIR/validate.json and DIR/predictions/*.json.\n"
        "\n"
        "options:\n"
        "  --from DIR   results folder (default %s; --out is a synonym)\n"
        "  -q, -v, -h   quiet, verbose, this help\n",
        COMET_CLI_DEFAULT_OUT);
}

int comet_cmd_report(int argc, char **argv)
{
    static const struct option longopts[] = { { "from", required_argument, NULL, 0x2001 },
        COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    const char *from = NULL;
    char err[COMET_ERRLEN];
    int c;
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
        default:
            return comet_cli_bad_option("report", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("report", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    if (!from)
        from = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    struct stat st;
    if (stat(from, &st) != 0 || !S_ISDIR(st.st_mode)) {
        comet_cli_error("report", "%s: no such results directory", from);
        return COMET_EXIT_USAGE;
    }
    if (comet_reports_build(from, err, sizeof err) != 0) {
        comet_cli_error("report", "%s", err);
        return COMET_EXIT_USAGE;
    }
    comet_util_info("report: %s/report/index.html and summary.md", from);
    return COMET_EXIT_OK;
}
