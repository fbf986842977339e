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

/*
 * OpenBLAS picks its kernels in a load-time constructor, before main, from
 * OPENBLAS_CORETYPE when set. An environment that pins an older core type
 * (e.g. Haswell on an AVX-512 machine) would make the unfused baseline slower
 * than OpenBLAS can be here, so by default (COMET_BLAS_CORE=auto) comet drops
 * the pin and re-executes itself once, letting OpenBLAS detect the CPU.
 * COMET_BLAS_CORE=keep keeps the environment; any other value is passed as the
 * core type. What was done is recorded in every record's machine object.
 */
static void blas_core_policy(char **argv)
{
    if (getenv("COMET_BLAS_CORE_POLICY"))
        return; /* already decided (this process or a parent comet) */
    const char *want = getenv("COMET_BLAS_CORE");
    const char *env = getenv("OPENBLAS_CORETYPE");
    char policy[128];
    if (!want || !*want)
        want = "auto";
    if (!strcmp(want, "keep") || (!strcmp(want, "auto") && (!env || !*env))
        || (env && !strcmp(want, env))) {
        snprintf(policy, sizeof policy, "%s: OPENBLAS_CORETYPE=%s", want,
            env && *env ? env : "(unset, detected)");
        setenv("COMET_BLAS_CORE_POLICY", policy, 1);
        return;
    }
    if (comet_util_self_hosted()) {
        /* under valgrind (or another tool that is the process image) a
         * re-exec would leave the tool: keep the core type as given */
        snprintf(policy, sizeof policy,
            "as given: run under a tool, no re-exec; "
            "OPENBLAS_CORETYPE=%.40s",
            env && *env ? env : "unset");
        setenv("COMET_BLAS_CORE_POLICY", policy, 1);
        return;
    }
    if (!strcmp(want, "auto")) {
        snprintf(policy, sizeof policy, "auto: dropped OPENBLAS_CORETYPE=%.40s, detected", env);
        unsetenv("OPENBLAS_CORETYPE");
    } else {
        snprintf(policy, sizeof policy, "set: OPENBLAS_CORETYPE=%.40s (was %.30s)", want,
            env && *env ? env : "unset");
        setenv("OPENBLAS_CORETYPE", want, 1);
    }
    setenv("COMET_BLAS_CORE_POLICY", policy, 1);
    execv(comet_util_self_exe(), argv);
    /* exec failed: carry on with the core type already loaded, and say so */
    snprintf(policy, sizeof policy, "as given: re-exec failed, OPENBLAS_CORETYPE=%.40s",
        env && *env ? env : "unset");
    setenv("COMET_BLAS_CORE_POLICY", policy, 1);
}

int main(int argc, char **argv)
{
    comet_cli_self = argv[0];
    comet_util_self_init(argv[0]);
    blas_core_policy(argv);
    if (argc < 2) {
        usage(stderr);
        return COMET_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return COMET_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("comet %s%s%s\n", COMET_VERSION, COMET_GIT_COMMIT[0] ? " " : "", COMET_GIT_COMMIT);
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
