/* comet calibrate: measure (or read) bench results and fit a machine profile. */
#include "cli.h"

#include "comet_bench.h"
#include "comet_calibrate.h"
#include "comet_util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXFROM 64

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet calibrate [--quick|--full] [--from RESULTS]... [--foreign-ok]\n"
        "                       [--links-only] [--out PROFILE|DIR] [--json]\n"
        "\n"
        "Fits this machine's profile from bench records: the sgemm efficiency grid (the\n"
        "model interpolates it in log M, N, K; a saturating law outside it), memory\n"
        "plateaus and bandwidths (capacities from the probe), per-element vector-op costs\n"
        "in cache and streaming, piecewise Hockney alpha/beta for point-to-point with the\n"
        "eager/rendezvous breakpoint, and alpha/beta/gamma per collective and algorithm by\n"
        "weighted (1/T^2) non-negative least squares on the Thakur-Rabenseifner-Gropp\n"
        "formulas. Every fit states R^2, residuals and a held-out error.\n"
        "\n"
        "Without --from it first runs `comet bench memory`, `comet bench kernels` (an\n"
        "sgemm grid) and `comet bench collectives` into DIR/results and fits those runs\n"
        "only. The profile (docs/hardware.md schema plus a `calibration` section) is\n"
        "written atomically: an interrupted calibration leaves the previous one untouched.\n"
        "\n"
        "options:\n"
        "  --quick | --full   bench sets when measuring (default --quick: <= 60 s;\n"
        "                     --full: <= 10 min)\n"
        "  --from PATH        results file or directory (repeatable; also as operands);\n"
        "                     nothing is measured\n"
        "  --foreign-ok       use results measured on another machine (refused by\n"
        "                     default: the message names the file and what differs)\n"
        "  --links-only       fit the point-to-point and collective records alone (e.g.\n"
        "                     a link between two hosts or namespaces; no GEMM or memory\n"
        "                     records needed): writes the link fits, not a profile, to\n"
        "                     --out (*.json, or DIR/links.json); needs --from\n"
        "  --out PATH         profile file (*.json), or a directory for DIR/profile.json\n"
        "                     (default %s/profile.json)\n"
        "  --json             print the profile on stdout\n"
        "  -q, -v, -h         quiet, verbose, this help\n"
        "\n"
        "exit: 0 ok, 1 measuring failed or interrupted, 2 usage or bad results\n",
        COMET_CLI_DEFAULT_OUT);
}

/* Names of the *.jsonl files in dir/results (to tell this run's files apart). */
static size_t list_results(const char *dir, char names[][256], size_t max)
{
    char path[4200];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/results", dir);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 6 && !strcmp(e->d_name + l - 6, ".jsonl") && l < 256)
            snprintf(names[n++], 256, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

/* Prints a library message ("calibrate: what" or "file:line: what") as
 * "comet: calibrate: what". */
static void lib_error(const char *err, const char *suffix)
{
    if (!strncmp(err, "calibrate: ", 11))
        err += 11;
    comet_cli_error("calibrate", "%s%s", err, suffix);
}

/* The link lines of a calibration summary (profile or --links-only). */
static void print_links(const comet_calibrate_summary *s)
{
    if (s->p2p_fits)
        printf("  point-to-point: alpha %.3g us, bandwidth %.3g GB/s, eager->rendezvous at %.0f "
               "bytes\n",
            s->p2p_alpha_us, s->p2p_bw_gbs, s->p2p_breakpoint);
    else
        printf("  point-to-point: not measured\n");
    if (s->coll_fits)
        printf("  collectives: %zu fits; held-out time error median %.1f%% p90 %.1f%% (%zu "
               "points)%s\n",
            s->coll_fits, 100 * s->coll_med, 100 * s->coll_p90, s->coll_heldout,
            s->collinear ? "; some terms collinear at these rank counts (see profile)" : "");
    else
        printf("  collectives: not measured\n");
}

static void print_summary(const char *profile, const comet_model_hw *hw,
    const comet_calibrate_summary *s, size_t nrec, size_t nfiles)
{
    printf("profile %s  (%zu records from %zu files)\n", profile, nrec, nfiles);
    printf("  clock %.4g GHz, %d cores, peak %.0f flop/cycle/core\n", hw->clock_ghz, hw->cores,
        hw->peak_flops);
    printf("  sgemm grid %d threads x %d M x %d N x %d K; held-out time error median %.1f%% "
           "p90 %.1f%% (%zu points)\n",
        hw->grid.nt, hw->grid.nm, hw->grid.nn, hw->grid.nk, 100 * s->gemm_med, 100 * s->gemm_p90,
        s->gemm_heldout);
    if (hw->grid.nt >= 2)
        printf("  cores busy at once deliver %.2f of a lone core's rate each (the grid's most "
               "threads against one)%s\n",
            s->gemm_core_share,
            s->gemm_loaded_multi ? "; some of those records ran beside other work: it reads low"
                                 : "");
    if (s->gemm_loaded_multi)
        comet_util_info("comet: calibrate: %zu sgemm record(s) at several threads ran while "
                        "others kept the CPUs busy: co-located ranks' share of a core reads low "
                        "(measure again on a quiet machine)",
            s->gemm_loaded_multi);
    printf("  memory: L2 %.1f GB/s (1 core), LLC %.1f GB/s, DRAM %.1f GB/s; held-out pass time "
           "error median %.1f%% p90 %.1f%% (%zu points)\n",
        hw->lb.bw * hw->clock_ghz, hw->gb.bw * hw->clock_ghz, hw->dram.bw * hw->clock_ghz,
        100 * s->mem_med, 100 * s->mem_p90, s->mem_heldout);
    print_links(s);
}

/* --links-only: the link fits alone, written atomically as their own file. */
static int links_only_fit(const comet_results_record *recs, size_t n,
    const comet_calibrate_source *src, size_t nsrc, const char *path, const comet_cli_global *g)
{
    char err[COMET_ERRLEN];
    comet_calibrate_summary s;
    json_t *fits = NULL, *doc = NULL, *files = json_array();
    int rc = COMET_EXIT_USAGE;
    if (comet_calibrate_links(recs, n, &fits, &s, err, sizeof err) != 0) {
        lib_error(err, "");
        goto out;
    }
    rc = COMET_EXIT_FAIL;
    for (size_t i = 0; files && i < nsrc; i++)
        json_array_append_new(files, json_string(src[i].path));
    doc = json_pack("{s:s,s:O,s:o}", "schema", "comet.links.v2", "files", files, "fits", fits);
    fits = NULL;
    if (comet_calibrate_write_json(doc, path, err, sizeof err) != 0) {
        lib_error(err, "");
        goto out;
    }
    rc = COMET_EXIT_OK;
    if (g->json) {
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
        putchar('\n');
    } else if (!g->quiet) {
        printf("links %s  (%zu records from %zu files)\n", path, n, nsrc);
        print_links(&s);
    }
out:
    json_decref(fits);
    json_decref(files);
    json_decref(doc);
    return rc;
}

int comet_cmd_calibrate(int argc, char **argv)
{
    static const struct option longopts[] = { { "quick", no_argument, NULL, 0x2001 },
        { "full", no_argument, NULL, 0x2002 }, { "from", required_argument, NULL, 0x2003 },
        { "foreign-ok", no_argument, NULL, 0x2004 }, { "links-only", no_argument, NULL, 0x2005 },
        COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    const char *from[MAXFROM];
    size_t nfrom = 0;
    int full = 0, c, rc = COMET_EXIT_OK, measured = 0, foreign_ok = 0, links_only = 0;
    char err[COMET_ERRLEN], dir[4096], profile[4200];
    comet_results_set set = { 0 };
    size_t nsrc = 0;
    comet_calibrate_source *src = NULL;
    comet_model_hw hw;
    memset(&hw, 0, sizeof hw);
    comet_cli_getopt_reset();
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
            if (nfrom >= MAXFROM) {
                comet_cli_error("calibrate", "--from: at most %d paths", MAXFROM);
                return COMET_EXIT_USAGE;
            }
            from[nfrom++] = optarg;
            break;
        case 0x2004:
            foreign_ok = 1;
            break;
        case 0x2005:
            links_only = 1;
            break;
        default:
            return comet_cli_bad_option("calibrate", argc, argv);
        }
    }
    for (; optind < argc; optind++) {
        if (nfrom >= MAXFROM) {
            comet_cli_error("calibrate", "at most %d results paths", MAXFROM);
            return COMET_EXIT_USAGE;
        }
        from[nfrom++] = argv[optind];
    }
    const char *out = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    size_t ol = strlen(out);
    if (ol == 0 || ol >= sizeof dir - 16) {
        comet_cli_error("calibrate", "--out: empty or too long a path");
        return COMET_EXIT_USAGE;
    }
    if (ol > 5 && !strcmp(out + ol - 5, ".json")) {
        snprintf(profile, sizeof profile, "%s", out);
        snprintf(dir, sizeof dir, "%s", out);
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, "%s", slash ? "/" : ".");
    } else {
        snprintf(dir, sizeof dir, "%s", out);
        snprintf(profile, sizeof profile, "%s/%s", out, links_only ? "links.json" : "profile.json");
    }
    if (links_only && nfrom == 0) {
        comet_cli_error("calibrate", "--links-only: needs --from RESULTS (nothing is measured)");
        return COMET_EXIT_USAGE;
    }
    if (comet_util_mkdir_p(dir, err, sizeof err) != 0) {
        comet_cli_error("calibrate", "--out: %s", err);
        return COMET_EXIT_FAIL;
    }
    comet_util_install_signals();

    static char before[1024][256], after[1024][256];
    static char newfiles[MAXFROM][4400];
    if (nfrom == 0) {
        /* measure, then fit only the files this calibration wrote */
        int coll_ok = 0;
        size_t nb = list_results(dir, before, 1024);
        double t0 = comet_util_now();
        if (comet_cli_calibrate_measure(dir, full, g.quiet, &coll_ok, err, sizeof err) != 0) {
            lib_error(err, "; the previous profile is kept");
            return COMET_EXIT_FAIL;
        }
        if (!coll_ok)
            comet_util_info("calibrate: collectives not measured; the profile has no link fits");
        size_t na = list_results(dir, after, 1024);
        for (size_t i = 0; i < na && nfrom < MAXFROM; i++) {
            int old = 0;
            for (size_t j = 0; j < nb && !old; j++)
                old = !strcmp(after[i], before[j]);
            if (!old) {
                snprintf(newfiles[nfrom], sizeof newfiles[nfrom], "%s/results/%s", dir, after[i]);
                from[nfrom] = newfiles[nfrom];
                nfrom++;
            }
        }
        comet_util_info("calibrate: measured in %.1f s; fitting", comet_util_now() - t0);
        measured = 1;
        if (nfrom == 0) {
            comet_cli_error("calibrate", "the benches wrote no results into %s/results", dir);
            return COMET_EXIT_FAIL;
        }
    }
    /* results of another machine are refused unless --foreign-ok */
    json_t *here = NULL;
    if (comet_bench_this_machine(&here, err, sizeof err) != 0) {
        lib_error(err, "");
        return COMET_EXIT_FAIL;
    }
    comet_results_load_opts lo = { here, foreign_ok };
    int lrc
        = comet_calibrate_load_results_opts(from, nfrom, &lo, &set, &src, &nsrc, err, sizeof err);
    json_decref(here);
    if (lrc != 0) {
        lib_error(err, "");
        return measured ? COMET_EXIT_FAIL : COMET_EXIT_USAGE;
    }
    if (err[0])
        comet_util_info("comet: calibrate: warning: %s", err);
    comet_calibrate_summary sum;
    if (links_only) {
        rc = links_only_fit(set.recs, set.n, src, nsrc, profile, &g);
        goto out;
    }
    if (comet_calibrate_build(set.recs, set.n, src, nsrc, &hw, &sum, err, sizeof err) != 0) {
        lib_error(err, "");
        rc = measured ? COMET_EXIT_FAIL : COMET_EXIT_USAGE;
        goto out;
    }
    if (comet_util_interrupted) {
        comet_cli_error("calibrate", "interrupted; the previous profile is kept");
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    if (comet_calibrate_write_profile(&hw, profile, err, sizeof err) != 0) {
        lib_error(err, "");
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    if (g.json) {
        json_t *j = comet_model_hw_to_json(&hw);
        char *text = j
            ? json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))
            : NULL;
        if (text)
            printf("%s\n", text);
        free(text);
        json_decref(j);
    } else if (!g.quiet)
        print_summary(profile, &hw, &sum, set.n, nsrc);
out:
    comet_model_hw_free(&hw);
    comet_results_set_free(&set);
    comet_calibrate_sources_free(src, nsrc);
    return rc;
}
