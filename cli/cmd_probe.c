/* comet probe: describe this machine. */
#include "cli.h"

#include "comet_probe.h"
#include "comet_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp,
        "usage: comet probe [options]\n"
        "\n"
        "Describes this machine: packages, cores, PUs, caches (size, line, sharing), NUMA\n"
        "nodes and memory (hwloc; /proc/meminfo where hwloc's figure is implausible), ISA\n"
        "flags, OpenBLAS configuration and threads, MPI library, compiler, and for each PAPI\n"
        "event whether it can really be added and started (with the reason if not).\n"
        "\n"
        "options:\n"
        "  --l1 SIZE, --l2 SIZE, --l3 SIZE   override a cache size (e.g. 32K, 512KiB, 32M)\n"
        "  --caches FILE                     overrides from a file of lines 'L2=512K'\n"
        "  --synthetic DESC                  probe an hwloc synthetic topology instead\n"
        "                                    (e.g. 'pack:2 l3:1 core:4 pu:2')\n"
        "  --no-papi                         do not initialise PAPI\n"
        "  --json                            print the machine description as JSON\n"
        "  --out DIR                         also write DIR/machine.json\n"
        "  -q, -v, -h                        quiet, verbose, this help\n");
}

int comet_cmd_probe(int argc, char **argv)
{
    static const struct option longopts[] = { { "l1", required_argument, NULL, 0x2001 },
        { "l2", required_argument, NULL, 0x2002 }, { "l3", required_argument, NULL, 0x2003 },
        { "caches", required_argument, NULL, 0x2010 },
        { "synthetic", required_argument, NULL, 0x2011 }, { "no-papi", no_argument, NULL, 0x2012 },
        COMET_CLI_GLOBAL_LONGOPTS, { NULL, 0, NULL, 0 } };
    comet_cli_global g = { 0 };
    comet_probe_opts opts;
    comet_probe_machine m;
    char err[COMET_ERRLEN];
    int c;
    memset(&opts, 0, sizeof opts);
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            usage(stdout);
            return COMET_EXIT_OK;
        case 0x2001:
        case 0x2002:
        case 0x2003: {
            uint64_t v;
            char flag[8];
            snprintf(flag, sizeof flag, "--l%d", c - 0x2000);
            if (comet_cli_parse_pos("probe", flag, optarg, 1ull << 40, &v))
                return COMET_EXIT_USAGE;
            opts.cache_override[c - 0x2000] = v;
            break;
        }
        case 0x2010:
            if (comet_probe_read_overrides(optarg, &opts, err, sizeof err)) {
                comet_cli_error("probe", "%s", err);
                return COMET_EXIT_USAGE;
            }
            break;
        case 0x2011:
            opts.synthetic = optarg;
            break;
        case 0x2012:
            opts.skip_papi = 1;
            break;
        default:
            return comet_cli_bad_option("probe", argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error("probe", "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    int rc = comet_probe_run(&opts, &m, err, sizeof err);
    if (rc) {
        comet_cli_error("probe", "%s", err);
        return rc == -EINVAL ? COMET_EXIT_USAGE : COMET_EXIT_FAIL;
    }
    json_t *j = comet_probe_to_json(&m);
    /* the printed and stored description names its schema (records embed the
     * object without it: it is theirs) */
    if (j)
        json_object_set_new(j, "schema", json_string("comet.machine.v1"));
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text) {
        comet_cli_error("probe", "out of memory");
        return COMET_EXIT_FAIL;
    }
    if (g.json)
        printf("%s\n", text);
    else
        comet_probe_print(&m, stdout);
    if (g.out) {
        char path[4096];
        snprintf(path, sizeof path, "%s/machine.json", g.out);
        size_t len = strlen(text);
        text[len] = '\n';
        if (comet_util_mkdir_p(g.out, err, sizeof err)
            || comet_util_write_atomic(path, text, len + 1, err, sizeof err)) {
            free(text);
            comet_cli_error("probe", "%s", err);
            return COMET_EXIT_FAIL;
        }
    }
    free(text);
    return COMET_EXIT_OK;
}
