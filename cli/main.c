/* comet: entry point. Dispatches to the subcommands in cmd_*.c. */
#include "cli.h"

#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct subcommand {
    const char *name;
    int (*fn)(int, char **);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    { "probe", comet_cmd_probe, "describe this machine (topology, caches, ISA, BLAS, MPI, PAPI)" },
    { "bench", comet_cmd_bench, "measure kernels, memory and MPI collectives into JSON Lines" },
    { "calibrate", comet_cmd_calibrate, "fit a machine profile from bench results" },
    { "predict", comet_cmd_predict,
        "predict latency/energy of a compound op on a hardware description" },
    { "explore", comet_cmd_explore, "search the mapping space: best fused/unfused, Pareto set" },
    { "validate", comet_cmd_validate,
        "predict this machine's measured records and report the error" },
    { "report", comet_cmd_report, "build the HTML/markdown report from stored results" },
    { "compare", comet_cmd_compare,
        "two results folders or two hardware descriptions side by side, with ratios" },
    { "run", comet_cmd_run, "the main job: probe, bench, calibrate, validate, predict, report" },
};

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet <subcommand> [options]\n"
        "\n"
        "comet profiles compound ML operations (GEMM-Softmax, GEMM-LayerNorm,\n"
        "self-attention) and MPI collectives on this machine, calibrates an analytical\n"
        "dataflow model from the measurements and predicts scaled-up machines and\n"
        "accelerators, fused against unfused.\n"
        "\n"
        "subcommands:\n");
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        fprintf(fp, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(fp,
        "\n"
        "global options (every subcommand):\n"
        "  --json         machine-readable output on stdout\n"
        "  --out DIR      where files go (default: %s)\n"
        "  -q, --quiet    only errors on stderr\n"
        "  -v, --verbose  more detail on stderr\n"
        "  -h, --help     help for the subcommand\n"
        "\n"
        "exit status: 0 success, 1 runtime failure, 2 usage or input error.\n"
        "'comet <subcommand> --help' describes each subcommand.\n",
        COMET_CLI_DEFAULT_OUT);
}

int main(int argc, char **argv)
{
    comet_cli_self = argv[0];
    comet_util_self_init(argv[0]);
    comet_util_blas_core_policy(argv);
    if (argc < 2) {
        usage(stderr);
        return COMET_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return COMET_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("comet %s%s%s\n", COMET_VERSION, comet_util_git_commit()[0] ? " " : "",
            comet_util_git_commit());
        return COMET_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (!strcmp(argv[1], subcommands[i].name)) {
            comet_cli_getopt_reset();
            int rc = subcommands[i].fn(argc - 1, argv + 1);
            /* stdout redirected to a full disk: an error, not exit 0 with a
             * truncated file */
            if (fflush(stdout) != 0 || ferror(stdout)) {
                int e = errno ? errno : EIO;
                comet_cli_error(argv[1], "standard output: write failed: %s", strerror(e));
                if (rc == COMET_EXIT_OK)
                    rc = COMET_EXIT_FAIL;
            }
            return rc;
        }
    comet_cli_error("", "unknown subcommand '%s' (see 'comet --help')", argv[1]);
    return COMET_EXIT_USAGE;
}
