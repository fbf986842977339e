/* comet calibrate: fit a machine profile from bench results. */
#include "cli.h"

#include "comet_bench.h"
#include "comet_calibrate.h"
#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet calibrate [--quick|--full] [--from RESULTS]... [--out PROFILE|DIR]\n"
        "\n"
        "Fits this machine's profile: GEMM efficiency grid (log-space interpolation, a\n"
        "saturating law outside it), memory plateaus and bandwidths, per-element vector-op\n"
        "costs, Hockney point-to-point with its eager/rendezvous breakpoint; each fit states\n"
        "R^2 and a held-out error. Without --from it first runs the benches it needs\n"
        "(comet bench memory and kernels; collectives when available) into DIR/results.\n"
        "The profile (hardware-description schema, docs/hardware.md) is written atomically:\n"
        "an interrupted calibration leaves the previous profile untouched.\n"
        "\n"
        "options:\n"
        "  --quick | --full   bench set when measuring (default --quick)\n"
        "  --from PATH        results file or directory (repeatable; no measuring)\n"
        "  --out PATH         profile file (*.json) or directory (default %s;\n"
        "                     the profile is DIR/profile.json)\n"
        "  --json             print the profile on stdout\n"
        "  -q, -v, -h         quiet, verbose, this help\n",
        COMET_CLI_DEFAULT_OUT);
}

int comet_cmd_calibrate(int argc, char **argv)
{
    static const struct option longopts[] = { { "quick", no_argument, NULL, 0x2001 },
        { "full", no_argument, NULL, 0x2002 }, { "from", required_argument, NULL, 0x2003 },
        COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    const char *from[64];
    size_t nfrom = 0;
    int full = 0, c, rc = COMET_EXIT_OK;
    char err[COMET_ERRLEN], dir[4096], profile[4200];
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case 0x2001:
            full = 0;
            break;
        case 0x2002:
            full = 1;
            break;
        case 0x2003:
            if (nfrom >= 64) {
                comet_cli_error("calibrate", "--from: at most 64 paths");
                return COMET_EXIT_USAGE;
            }
            from[nfrom++] = optarg;
            break;
        default:
            return comet_cli_bad_option("calibrate", argc, argv);
        }
    }
    while (optind < argc && nfrom < 64)
        from[nfrom++] = argv[optind++];
    const char *out = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    size_t ol = strlen(out);
    if (ol > 5 && !strcmp(out + ol - 5, ".json")) {
        snprintf(profile, sizeof profile, "%s", out);
        snprintf(dir, sizeof dir, "%s", out);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
    } else {
        snprintf(dir, sizeof dir, "%s", out);
        snprintf(profile, sizeof profile, "%s/profile.json", out);
    }
    if (comet_util_mkdir_p(dir, err, sizeof err) != 0) {
        comet_cli_error("calibrate", "%s", err);
        return COMET_EXIT_FAIL;
    }
    if (nfrom == 0) {
        /* measure what the fits need */
        const char *set = full ? "--full" : "--quick";
        const char *quiet = g.quiet ? "-q" : NULL;
        const char *mem[] = { "bench", "memory", set, "--out", dir, quiet, NULL };
        const char *ker[] = { "bench", "kernels", set, "--out", dir, quiet, NULL };
        const char *col[] = { "bench", "collectives", set, "--out", dir, quiet, NULL };
        comet_util_info("calibrate: measuring (%s) into %s/results", set + 2, dir);
        int r1 = comet_cli_spawn_self(mem);
        if (r1 == 0)
            r1 = comet_cli_spawn_self(ker);
        if (r1 != 0) {
            comet_cli_error(
                "calibrate", "the benches failed (exit %d); the previous profile is kept", r1);
            return COMET_EXIT_FAIL;
        }
        if (comet_cli_spawn_self(col) != 0)
            comet_util_info("calibrate: collectives not measured; the profile has no link fit");
        from[nfrom++] = dir;
    }
    json_t **recs = NULL;
    size_t n = 0;
    if (comet_calibrate_load_results(from, nfrom, &recs, &n, err, sizeof err) != 0) {
        comet_cli_error("calibrate", "%s", err);
        return COMET_EXIT_USAGE;
    }
    comet_model_hw hw;
    if (comet_calibrate_build(recs, n, &hw, err, sizeof err) != 0) {
        comet_cli_error("calibrate", "%s", err);
        comet_bench_records_free(recs, n);
        return COMET_EXIT_USAGE;
    }
    comet_bench_records_free(recs, n);
    json_t *j = comet_model_hw_to_json(&hw);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text || comet_util_write_atomic(profile, text, strlen(text), err, sizeof err) != 0) {
        comet_cli_error("calibrate", "%s", text ? err : "out of memory");
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    if (g.json)
        printf("%s\n", text);
    else {
        const json_t *fits = json_object_get(hw.calibration, "fits");
        const json_t *gh = json_object_get(json_object_get(fits, "gemm"), "heldout");
        const json_t *mh = json_object_get(json_object_get(fits, "memory"), "heldout");
        printf("profile %s\n", profile);
        printf("  clock %.3g GHz, %d cores, peak %.0f flop/cycle/core\n", hw.clock_ghz, hw.cores,
            hw.peak_flops);
        printf("  GEMM grid %dx%dx%dx%d, held-out median %.1f%% p90 %.1f%%\n", hw.grid.nt,
            hw.grid.nm, hw.grid.nn, hw.grid.nk,
            100 * json_number_value(json_object_get(gh, "median_rel_err")),
            100 * json_number_value(json_object_get(gh, "p90_rel_err")));
        printf("  memory: DRAM %.1f GB/s, LLC %.1f GB/s, L2 %.1f GB/s; held-out median %.1f%%\n",
            hw.dram.bw * hw.clock_ghz, hw.gb.bw * hw.clock_ghz, hw.lb.bw * hw.clock_ghz,
            100 * json_number_value(json_object_get(mh, "median_rel_err")));
    }
out:
    free(text);
    comet_model_hw_free(&hw);
    return rc;
}
