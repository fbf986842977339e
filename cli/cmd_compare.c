/* comet compare: two results folders, or two hardware descriptions, side by side. */
#include "cli.h"

#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <stdio.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet compare A B [--json]\n"
        "\n"
        "A and B are two results folders (DIR with DIR/results/*.jsonl, e.g. two\n"
        "'comet run' outputs, two machines or two builds) or two hardware descriptions\n"
        "(preset names such as edge and cloud, hardware files, calibrated profiles).\n"
        "\n"
        "Results: every measurement both hold (same kind, op, variant, shape, threads,\n"
        "ranks, link and parameters), with both medians, the ratio B/A and its interval\n"
        "[B CI low / A CI high, B CI high / A CI low] from the medians' distribution-free\n"
        "95%% CIs (if both CIs hold, the true ratio lies inside), a verdict (B faster,\n"
        "B slower, same within CIs) and a summary with the geometric mean of B/A.\n"
        "Hardware: the main parameters and the model's best fused and unfused latency\n"
        "of GEMM-Softmax, GEMM-LayerNorm and attention on the same shapes.\n"
        "\n"
        "options:\n"
        "  --json      JSON (schema comet.compare.v1, docs/FORMATS.md) on stdout\n"
        "  -q, -v, -h  quiet, verbose, this help\n"
        "\n"
        "exit status: 0 compared, 2 usage or input error (the message names the input).\n");
}

int comet_cmd_compare(int argc, char **argv)
{
    static const struct option longopts[] = { COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    char err[COMET_ERRLEN] = "";
    int c;
    comet_cli_getopt_reset();
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        if (c == 'h') {
            usage(stdout);
            return COMET_EXIT_OK;
        }
        return comet_cli_bad_option("compare", argc, argv);
    }
    if (g.out) {
        comet_cli_error("compare", "--out: compare prints to stdout (redirect it)");
        return COMET_EXIT_USAGE;
    }
    if (argc - optind != 2) {
        comet_cli_error("compare", "needs two inputs A and B (got %d; see --help)", argc - optind);
        return COMET_EXIT_USAGE;
    }
    int rc = comet_reports_compare(argv[optind], argv[optind + 1], g.json, stdout, err, sizeof err);
    if (rc) {
        comet_cli_error("compare", "%s", err);
        return rc == -ENOMEM ? COMET_EXIT_FAIL : COMET_EXIT_USAGE;
    }
    return COMET_EXIT_OK;
}
