/* comet run: the main job. probe -> bench -> calibrate -> validate ->
 * predict (this machine, a scaled cluster, COMET edge and cloud) -> report.
 * Each stage is this executable's own subcommand in a child process, so a
 * failing stage is reported and the stages that can still run do. */
#include "cli.h"

#include "comet_model.h"
#include "comet_probe.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet run [--quick|--full] [--out DIR] [--np N] [--fresh]\n"
        "\n"
        "The main job, from a fresh machine to a report: probe this machine, measure\n"
        "(memory, kernels, collectives), calibrate the profile, validate the model on the\n"
        "measurements, predict this machine, a scaled cluster of it and the COMET edge and\n"
        "cloud accelerators for GEMM-Softmax, GEMM-LayerNorm and self-attention, and write\n"
        "DIR/report/index.html and summary.md. Resumable: results in DIR/results from\n"
        "this machine younger than 24 h are reused (--fresh measures again).\n"
        "\n"
        "options:\n"
        "  --quick | --full        bench sets (default --quick, about 1-2 minutes here)\n"
        "  --out DIR               output folder (default %s)\n"
        "  --np N                  MPI ranks for the collectives bench (default 2)\n"
        "  --scale-cores N         cores per node of the scaled system (default 32)\n"
        "  --scale-nodes M         nodes of the scaled system (default 8)\n"
        "  --fresh                 re-measure even when fresh results exist\n"
        "  -q, -v, -h              quiet, verbose, this help\n",
        COMET_CLI_DEFAULT_OUT);
}

/* A fresh results file of this kind from this machine? */
static int have_fresh(const char *dir, const char *prefix, const char *machine_id)
{
    char rdir[4200];
    snprintf(rdir, sizeof rdir, "%s/results", dir);
    DIR *d = opendir(rdir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)))
            continue;
        char path[8400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", rdir, e->d_name);
        if (stat(path, &st) != 0 || time(NULL) - st.st_mtime > 24 * 3600 || st.st_size < 100)
            continue;
        FILE *fp = fopen(path, "r");
        char *line = NULL;
        size_t cap = 0;
        if (fp && getline(&line, &cap, fp) > 0) {
            json_t *j = json_loads(line, 0, NULL);
            const char *id
                = json_string_value(json_object_get(json_object_get(j, "machine"), "id"));
            found = id && !strcmp(id, machine_id);
            json_decref(j);
        }
        free(line);
        if (fp)
            fclose(fp);
    }
    if (d)
        closedir(d);
    return found;
}

static void stage(int i, int n, const char *what)
{
    comet_util_info("\n== comet run [%d/%d] %s", i, n, what);
}

int comet_cmd_run(int argc, char **argv)
{
    static const struct option longopts[] = { { "quick", no_argument, NULL, 0x2001 },
        { "full", no_argument, NULL, 0x2002 }, { "np", required_argument, NULL, 0x2003 },
        { "fresh", no_argument, NULL, 0x2004 }, { "scale-cores", required_argument, NULL, 0x2005 },
        { "scale-nodes", required_argument, NULL, 0x2006 }, COMET_CLI_GLOBAL_LONGOPTS,
        { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    int full = 0, fresh = 0, c, failures = 0;
    uint64_t np = 2, scores = 32, snodes = 8;
    char err[COMET_ERRLEN];
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
            if (comet_cli_parse_pos("run", "--np", optarg, 4096, &np))
                return COMET_EXIT_USAGE;
            break;
        case 0x2004:
            fresh = 1;
            break;
        case 0x2005:
            if (comet_cli_parse_pos("run", "--scale-cores", optarg, 1 << 20, &scores))
                return COMET_EXIT_USAGE;
            break;
        case 0x2006:
            if (comet_cli_parse_pos("run", "--scale-nodes", optarg, 1 << 20, &snodes))
                return COMET_EXIT_USAGE;
            break;
        default:
            return comet_cli_bad_option("run", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("run", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    const char *dir = g.out ? g.out : COMET_CLI_DEFAULT_OUT;
    const char *set = full ? "--full" : "--quick", *qv = g.quiet ? "-q" : (g.verbose ? "-v" : NULL);
    char npbuf[32], path[4300], pdir[4200];
    snprintf(npbuf, sizeof npbuf, "%llu", (unsigned long long)np);
    if (comet_util_mkdir_p(dir, err, sizeof err) != 0) {
        comet_cli_error("run", "%s", err);
        return COMET_EXIT_FAIL;
    }
    const int N = 7;
    double t0 = comet_util_now();

    stage(1, N, "probe");
    const char *probe[] = { "probe", "--out", dir, NULL };
    if (comet_cli_spawn_self(probe) != 0) {
        comet_cli_error("run", "probe failed");
        return COMET_EXIT_FAIL;
    }
    comet_probe_machine m;
    comet_probe_opts po = { .skip_papi = 1 };
    comet_probe_run(&po, &m, NULL, 0);

    stage(2, N, "bench: memory and kernels");
    const char *kinds[2] = { "memory", "kernels" };
    for (int k = 0; k < 2; k++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "%s-", kinds[k]);
        if (!fresh && have_fresh(dir, prefix, m.id)) {
            comet_util_info("run: reusing fresh %s results in %s/results (--fresh to re-measure)",
                kinds[k], dir);
            continue;
        }
        const char *b[] = { "bench", kinds[k], set, "--out", dir, qv, NULL };
        if (comet_cli_spawn_self(b) != 0) {
            comet_cli_error("run", "bench %s failed; continuing with what exists", kinds[k]);
            failures++;
        }
    }

    stage(3, N, "bench: MPI collectives");
    if (!fresh && have_fresh(dir, "collectives-", m.id)) {
        comet_util_info("run: reusing fresh collectives results");
    } else {
        const char *b[] = { "bench", "collectives", set, "--np", npbuf, "--out", dir, qv, NULL };
        if (comet_cli_spawn_self(b) != 0)
            comet_util_info("run: collectives not measured; the report says so");
    }

    stage(4, N, "calibrate");
    const char *cal[] = { "calibrate", "--from", dir, "--out", dir, qv, NULL };
    int have_profile = comet_cli_spawn_self(cal) == 0;
    if (!have_profile) {
        comet_cli_error("run", "calibration failed; predictions of this machine are skipped");
        failures++;
    }

    stage(5, N, "validate the model on this machine");
    if (have_profile) {
        const char *v[] = { "validate", "--out", dir, qv, NULL };
        if (comet_cli_spawn_self(v) != 0)
            failures++;
    }

    stage(6, N, "predict: this machine scaled, COMET edge and cloud");
    snprintf(pdir, sizeof pdir, "%s/predictions", dir);
    if (comet_util_mkdir_p(pdir, err, sizeof err) != 0) {
        comet_cli_error("run", "%s", err);
        return COMET_EXIT_FAIL;
    }
    char scaled[4300] = "";
    if (have_profile) {
        /* a scaled CPU system of this machine's calibrated cores */
        comet_model_hw base, sc;
        snprintf(path, sizeof path, "%s/profile.json", dir);
        if (comet_model_hw_load(path, &base, err, sizeof err) == 0) {
            if (comet_model_hw_scale(&base, (int)scores, (int)snodes, NULL, &sc) == 0) {
                json_t *j = comet_model_hw_to_json(&sc);
                char *t = json_dumps(j, JSON_INDENT(2));
                snprintf(scaled, sizeof scaled, "%s/hw-scaled.json", dir);
                if (!t || comet_util_write_atomic(scaled, t, strlen(t), err, sizeof err) != 0)
                    scaled[0] = '\0';
                free(t);
                json_decref(j);
                comet_model_hw_free(&sc);
            }
            comet_model_hw_free(&base);
        }
    }
    struct {
        const char *hw, *tag;
    } hws[4] = { { "edge", "edge" }, { "cloud", "cloud" }, { NULL, "local" }, { NULL, "scaled" } };
    char local[4300];
    snprintf(local, sizeof local, "%s/profile.json", dir);
    hws[2].hw = have_profile ? local : NULL;
    hws[3].hw = scaled[0] ? scaled : NULL;
    const char *ops[3] = { "gemm_softmax", "gemm_layernorm", "attention" };
    for (int h = 0; h < 4; h++) {
        if (!hws[h].hw)
            continue;
        int big = !strcmp(hws[h].tag, "cloud") || !strcmp(hws[h].tag, "scaled");
        const char *gshape = big ? "M=2048,N=2048,K=256" : "M=1024,N=1024,K=256";
        const char *ashape = big ? "heads=16,lq=2048,lk=2048,d=64" : "heads=8,lq=1024,lk=1024,d=64";
        if (!strcmp(hws[h].tag, "local"))
            gshape = "M=4096,N=4096,K=64";
        for (int o = 0; o < 3; o++) {
            snprintf(path, sizeof path, "%s/%s-%s.json", pdir, hws[h].tag, ops[o]);
            const char *e[] = { "explore", "--hw", hws[h].hw, "--op", ops[o], "--shape",
                o == 2 ? ashape : gshape, "--json", NULL };
            if (comet_cli_spawn_self_to(e, path) != 0) {
                comet_cli_error("run", "explore %s %s failed", hws[h].tag, ops[o]);
                failures++;
            }
        }
    }

    stage(7, N, "report");
    if (comet_reports_build(dir, err, sizeof err) != 0) {
        comet_cli_error("run", "report: %s", err);
        return COMET_EXIT_FAIL;
    }
    comet_util_info(
        "\nrun: done in %.0f s; report: %s/report/index.html and %s/report/summary.md%s",
        comet_util_now() - t0, dir, dir, failures ? " (some stages failed, see above)" : "");
    return failures ? COMET_EXIT_FAIL : COMET_EXIT_OK;
}
