/* comet predict / explore: the analytical model from the command line. */
#include "cli.h"

#include "comet_cometio.h"
#include "comet_model_validate.h"
#include "comet_reports.h"
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp, int explore)
{
    if (explore)
        fprintf(fp,
            "usage: comet explore --hw HW (--op OP --shape DIMS | --workload W) [options]\n"
            "\n"
            "Enumerates the mapping space of OP on HW (cluster and core splits of M/N/K,\n"
            "temporal tiles, fused or unfused, sequential or pipelined binding), prunes by\n"
            "buffer capacity first, and reports the best fused and best unfused mappings,\n"
            "their speedup, the latency-energy Pareto set, and the evaluation rate.\n");
    else
        fprintf(fp,
            "usage: comet predict --hw HW (--op OP --shape DIMS | --workload W) [options]\n"
            "\n"
            "Predicts latency, energy and their breakdown of OP on HW for one mapping\n"
            "(the best fused, best unfused or overall best from the search, or a mapping\n"
            "file as written by explore --json), with its explicit collective nodes.\n");
    fprintf(fp,
        "\n"
        "options:\n"
        "  --hw HW          hardware description: a preset (edge, cloud) or a YAML/JSON file\n"
        "                   (a calibrated profile works too)\n"
        "  --op OP          gemm_softmax | gemm_layernorm | attention | gemm_rmsnorm (model only) "
        "| gms\n"
        "  --shape DIMS     M=1024,N=1024,K=256  (attention: heads=16,lq=4096,lk=4096,d=64)\n"
        "  --workload W     op and shape from a workload file (configs/workloads/W.yaml or a\n"
        "                   path) instead of --op/--shape\n"
        "  --causal         attention with a causal mask\n"
        "  --op gms         gather-GEMM-scatter on a CPU description: --shape gives the\n"
        "                   input's statistics, rows=,pairs=,segments=,K=,N= (rows_in,\n"
        "                   rows_out apart), or --input FILE (the kernels' text format:\n"
        "                   tiles counted from its segments) with --shape K=,N=; every\n"
        "                   dataflow x tile_m x threads, the best of each and the choice\n"
        "  --input FILE     a gms input file (--op gms)\n"
        "  --sweep F=V1,V2  best fused/unfused latency at each value of a shape dimension\n"
        "                   (M, N, K; heads, lq, lk, d) or hardware parameter (clock,\n"
        "                   peak_flops, dram_bw, gb_bw, gb_capacity, lb_bw, lb_capacity,\n"
        "                   link_bw, core_link_bw, hop_latency, clusters, cores; values\n"
        "                   with units: dram_bw=25GB/s,50GB/s); --out DIR adds a figure\n"
        "  --sensitivity    each hardware parameter -10%%/+10%%, ranked by its effect\n"
        "                   (elasticity of the best fused and unfused latency)\n"
        "%s"
        "  --json           JSON on stdout\n"
        "  -q, -v, -h       quiet, verbose, this help\n",
        explore
            ? "  --pareto FILE    also write the Pareto set as CSV\n"
            : "  --mapping M      best | fused | unfused | FILE (YAML/JSON mapping, e.g. from\n"
              "                   explore --json: its best fused mapping) (default best)\n"
              "  --explain        print each term with its formula and numbers\n"
              "  --constants FILE COMET's constants file, when --hw is a COMET architecture\n"
              "                   (--op PROBLEM.yaml --mapping MAPPING.yaml: COMET's four\n"
              "                   files, detected by content; prints COMET's numbers and\n"
              "                   comet's, term by term; --explain lists every dropped field)\n");
}

/* "12.3 uJ", or "n/a uJ" when the energy is unknown */
static const char *uj(double pj, char *buf, size_t len)
{
    if (isfinite(pj))
        snprintf(buf, len, "%.4g uJ", pj * 1e-6);
    else
        snprintf(buf, len, "n/a uJ");
    return buf;
}

/* "1.2e+05 cycles, dram" : the bound and what sets it */
static const char *bound_str(const comet_model_result *r, char *buf, size_t len)
{
    const double t[4] = { r->bound_compute, r->bound_vector, r->bound_dram, r->bound_inter };
    static const char *const n[4] = { "compute", "vector", "memory", "cache" };
    int k = 0;
    for (int i = 1; i < 4; i++)
        if (t[i] > t[k])
            k = i;
    snprintf(buf, len, "%.0f cycles, %s%s", r->bound_cycles, n[k],
        r->bound_raised > 0 ? "; raised to it" : "");
    return buf;
}

/* the best fused and unfused latencies' 90% intervals, where this machine's
 * own validation says how far off the model is (a calibrated profile) */
static void add_intervals(json_t *j, const char *hwname, const comet_model_hw *hw, const char *op,
    const comet_model_search *s)
{
    comet_model_vrow *vr = NULL;
    int nv = 0;
    comet_cli_profile_vrows(hwname, hw, &vr, &nv);
    json_object_set_new(json_object_get(j, "best_fused"), "interval",
        comet_reports_interval_json(vr, nv, op, 1, s->r_fused.seconds, NULL, 0));
    json_object_set_new(json_object_get(j, "best_unfused"), "interval",
        comet_reports_interval_json(vr, nv, op, 0, s->r_unfused.seconds, NULL, 0));
    free(vr);
}

static void print_intervals(
    const char *hwname, const comet_model_hw *hw, const char *op, const comet_model_search *s)
{
    comet_model_vrow *vr = NULL;
    int nv = 0;
    char line[300];
    comet_cli_profile_vrows(hwname, hw, &vr, &nv);
    for (int f = 1; f >= 0; f--) {
        json_decref(comet_reports_interval_json(
            vr, nv, op, f, f ? s->r_fused.seconds : s->r_unfused.seconds, line, sizeof line));
        if (line[0])
            printf("  %s %s\n", f ? "fused:  " : "unfused:", line);
    }
    free(vr);
}

static int run(int argc, char **argv, int explore)
{
    static const struct option longopts[] = { { "hw", required_argument, NULL, 0x2001 },
        { "op", required_argument, NULL, 0x2002 }, { "shape", required_argument, NULL, 0x2003 },
        { "causal", no_argument, NULL, 0x2004 }, { "mapping", required_argument, NULL, 0x2005 },
        { "explain", no_argument, NULL, 0x2006 }, { "pareto", required_argument, NULL, 0x2007 },
        { "workload", required_argument, NULL, 0x2008 },
        { "sweep", required_argument, NULL, 0x2009 }, { "sensitivity", no_argument, NULL, 0x200a },
        { "input", required_argument, NULL, 0x200b },
        { "constants", required_argument, NULL, 0x200c }, COMET_CLI_GLOBAL_LONGOPTS,
        { NULL, 0, NULL, 0 } };
    const char *sub = explore ? "explore" : "predict";
    if (comet_cli_is_system(argc, argv)) /* a whole transformer on a system */
        return comet_cli_system(argc, argv, explore);
    const char *hwname = NULL, *opname = NULL, *shape = NULL, *mapping = "best", *pareto = NULL,
               *workload = NULL, *sweep = NULL, *input = NULL, *constants = NULL;
    int sensitivity = 0;
    char shapebuf[256];
    int causal = 0, explain = 0, c, rc = COMET_EXIT_OK;
    comet_cli_global g = { 0 };
    char err[COMET_ERRLEN];
    while ((c = getopt_long(argc, argv, ":qvh", longopts, NULL)) != -1) {
        if (comet_cli_global_opt(&g, c, optarg))
            continue;
        switch (c) {
        case 'h':
            usage(stdout, explore);
            /* the system model's options apply when --workload names a
             * transformer: shown here too, not only with --workload */
            printf("\nWith a transformer workload (the system model):\n");
            comet_cli_system_usage(stdout, explore);
            return COMET_EXIT_OK;
        case 0x2001:
            hwname = optarg;
            break;
        case 0x2002:
            opname = optarg;
            break;
        case 0x2003:
            shape = optarg;
            break;
        case 0x2004:
            causal = 1;
            break;
        case 0x2005:
            mapping = optarg;
            break;
        case 0x2006:
            explain = 1;
            break;
        case 0x2007:
            pareto = optarg;
            break;
        case 0x2008:
            workload = optarg;
            break;
        case 0x2009:
            sweep = optarg;
            break;
        case 0x200a:
            sensitivity = 1;
            break;
        case 0x200b:
            input = optarg;
            break;
        case 0x200c:
            constants = optarg;
            break;
        default:
            return comet_cli_bad_option(sub, argc, argv);
        }
    }
    if (optind < argc) {
        comet_cli_error(sub, "unexpected argument '%s'", argv[optind]);
        return COMET_EXIT_USAGE;
    }
    /* COMET's own files (detected by content): its architecture with its
     * problem, mapping and constants (cli/cmd_cometio.c) */
    if (hwname && comet_cometio_detect(hwname) == COMET_COMETIO_ARCH) {
        if (explore || shape || sweep || sensitivity || pareto || input || causal) {
            comet_cli_error(sub,
                "--hw is a COMET architecture: predict takes its problem (--op or --workload), "
                "mapping (--mapping) and constants (--constants) files; explore, --shape, "
                "--sweep, --sensitivity and --input are for comet's own descriptions");
            return COMET_EXIT_USAGE;
        }
        if (opname && workload) {
            comet_cli_error(sub, "give the COMET problem once (--op or --workload)");
            return COMET_EXIT_USAGE;
        }
        return comet_cli_cometio(sub, hwname, workload ? workload : opname,
            strcmp(mapping, "best") ? mapping : NULL, constants, explain, &g);
    }
    {
        const char *files[3] = { opname, workload, mapping };
        for (int i = 0; i < 3; i++)
            if (files[i] && comet_cometio_detect(files[i]) != COMET_COMETIO_NONE) {
                comet_cli_error(sub,
                    "%s is a COMET %s file: give COMET's architecture file with --hw (and its "
                    "problem, mapping and constants)",
                    files[i], comet_cometio_kind_name(comet_cometio_detect(files[i])));
                return COMET_EXIT_USAGE;
            }
    }
    if (constants) {
        comet_cli_error(sub, "--constants is for COMET's files (--hw a COMET architecture)");
        return COMET_EXIT_USAGE;
    }
    /* options of the other subcommand are refused, not ignored */
    if (!explore && pareto) {
        comet_cli_error(sub, "--pareto is for explore (predict evaluates one mapping)");
        return COMET_EXIT_USAGE;
    }
    if (explore && strcmp(mapping, "best")) {
        comet_cli_error(sub, "--mapping is for predict (explore searches every mapping)");
        return COMET_EXIT_USAGE;
    }
    if (g.out && !sweep) {
        comet_cli_error(
            sub, "--out: only --sweep writes files (a figure); %s prints to stdout", sub);
        return COMET_EXIT_USAGE;
    }
    if (opname && !strcmp(opname, "gms")) {
        /* gather-GEMM-scatter: its own model (dataflow x tile x threads) */
        if (workload || causal || sweep || sensitivity || explain || pareto) {
            comet_cli_error(sub,
                "--op gms takes --hw, --shape, --input%s and --json (not --workload, --causal, "
                "--sweep, --sensitivity, --explain, --pareto)",
                explore ? "" : ", --mapping DATAFLOW");
            return COMET_EXIT_USAGE;
        }
        return comet_cli_gms(sub, explore, hwname, shape, input, mapping, &g);
    }
    if (input) {
        comet_cli_error(sub, "--input is for --op gms (a gather-GEMM-scatter input file)");
        return COMET_EXIT_USAGE;
    }
    comet_model_problem pb;
    memset(&pb, 0, sizeof pb);
    if (workload) {
        if (opname || shape) {
            comet_cli_error(sub, "--workload replaces --op and --shape; give one or the other");
            return COMET_EXIT_USAGE;
        }
        if (comet_model_workload_load(workload, &pb, err, sizeof err) != 0) {
            comet_cli_error(sub, "%s", err);
            return COMET_EXIT_USAGE;
        }
        pb.causal |= causal;
        opname = comet_model_op_name(pb.op);
        if (pb.op == COMET_MODEL_ATTENTION)
            snprintf(shapebuf, sizeof shapebuf, "heads=%.0f,lq=%.0f,lk=%.0f,d=%.0f%s", pb.heads,
                pb.lq, pb.lk, pb.d, pb.causal ? ",causal" : "");
        else
            snprintf(shapebuf, sizeof shapebuf, "M=%.0f,N=%.0f,K=%.0f", pb.M, pb.N, pb.K);
        shape = shapebuf;
    }
    if (!hwname || !opname || !shape) {
        comet_cli_error(sub,
            "--hw and --op with --shape (or --workload) are required (see 'comet %s --help')", sub);
        return COMET_EXIT_USAGE;
    }
    if (!workload) {
        if (comet_model_op_parse(opname, &pb.op) != 0) {
            comet_cli_error(sub, "--op '%s': unknown (%s, gms)", opname, comet_model_op_list());
            return COMET_EXIT_USAGE;
        }
        pb.causal = causal;
        if (comet_model_problem_parse(shape, &pb, err, sizeof err) != 0) {
            comet_cli_error(sub, "%s", err);
            return COMET_EXIT_USAGE;
        }
    }
    comet_model_mapping fmp;
    int from_file = 0;
    comet_model_hw hw;
    if (comet_model_hw_load(hwname, &hw, err, sizeof err) != 0) {
        comet_cli_error(sub, "%s", err);
        return COMET_EXIT_USAGE;
    }
    if (strcmp(mapping, "best") && strcmp(mapping, "fused") && strcmp(mapping, "unfused")) {
        /* a mapping file: for this op and hardware, and able to run here */
        if (comet_model_mapping_load_for(mapping, opname, hw.name, &fmp, err, sizeof err) != 0
            || comet_model_mapping_check(&hw, &pb, &fmp, err, sizeof err) != 0) {
            comet_cli_error(sub, "%s%s", strncmp(err, "--mapping", 9) ? "--mapping: " : "", err);
            comet_model_hw_free(&hw);
            return COMET_EXIT_USAGE;
        }
        from_file = 1;
    }
    if (sweep || sensitivity) {
        /* what-ifs over the best mappings (cli/whatif.c) */
        if ((sweep && sensitivity) || from_file || explain || pareto) {
            comet_cli_error(sub,
                "--sweep and --sensitivity go alone (no --mapping FILE, "
                "--explain, --pareto, or each other)");
            rc = COMET_EXIT_USAGE;
        } else
            rc = sweep ? comet_cli_sweep(sub, &hw, &pb, sweep, g.json, g.out)
                       : comet_cli_sensitivity(sub, &hw, &pb, g.json);
        comet_model_hw_free(&hw);
        return rc;
    }
    comet_model_search *s = calloc(1, sizeof *s);
    if (!s) {
        comet_cli_error(sub, "out of memory");
        comet_model_hw_free(&hw);
        return COMET_EXIT_FAIL;
    }
    int e = from_file ? 0 : comet_model_explore(&hw, &pb, s);
    if (!from_file)
        comet_util_debug("%s: searched %zu mappings (%zu pruned by capacity) in %.3g ms", sub,
            s->evaluated, s->pruned, s->seconds * 1e3);
    if (e != 0) {
        comet_cli_error(sub, "no mapping of this shape fits %s's buffers", hw.name);
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    double speedup = s->r_unfused.cycles / s->r_fused.cycles;
    /* the search rate: the median of repeated searches (one search of a few
     * milliseconds varies many-fold on a shared machine) */
    double rate = s->seconds > 0 ? (double)s->evaluated / s->seconds : 0, search_s = s->seconds;
    int reps = 1;
    if (explore && !from_file) {
        double rates[15], times[15];
        comet_model_search *t = malloc(sizeof *t);
        rates[0] = rate, times[0] = s->seconds;
        const double t0 = comet_util_now();
        while (t && reps < 15 && (reps < 5 || comet_util_now() - t0 < 0.3)
            && comet_model_explore(&hw, &pb, t) == 0) {
            times[reps] = t->seconds;
            rates[reps++] = t->seconds > 0 ? (double)t->evaluated / t->seconds : 0;
        }
        free(t);
        rate = comet_util_quantile(rates, reps, 0.5);
        search_s = comet_util_quantile(times, reps, 0.5);
    }
    char b1[256], b2[256];
    if (explore) {
        if (pareto) {
            comet_util_atomic a;
            if (comet_util_atomic_open(&a, pareto, err, sizeof err) != 0) {
                comet_cli_error(sub, "%s", err);
                rc = COMET_EXIT_FAIL;
                goto out;
            }
            fprintf(a.fp, "cycles,seconds,energy_pj,mapping\n");
            for (size_t i = 0; i < s->npareto; i++)
                fprintf(a.fp, "%.0f,%.9g,%.6g,\"%s\"\n", s->pareto_r[i].cycles,
                    s->pareto_r[i].seconds, s->pareto_r[i].energy_pj,
                    comet_model_mapping_str(&s->pareto[i], b1, sizeof b1));
            if (comet_util_atomic_commit(&a, err, sizeof err) != 0) {
                comet_cli_error(sub, "%s", err);
                rc = COMET_EXIT_FAIL;
                goto out;
            }
        }
        if (g.json) {
            json_t *j
                = json_pack("{s:s,s:s,s:s,s:s,s:{s:o,s:o},s:{s:o,s:o},s:f,s:I,s:I,s:f,s:f,s:i}",
                    "schema", "comet.explore.v2", "hw", hw.name, "op", opname, "shape", shape,
                    "best_fused", "mapping", comet_model_mapping_json(&s->best_fused), "result",
                    comet_model_result_json(&s->r_fused), "best_unfused", "mapping",
                    comet_model_mapping_json(&s->best_unfused), "result",
                    comet_model_result_json(&s->r_unfused), "speedup", speedup, "evaluated",
                    (json_int_t)s->evaluated, "pruned", (json_int_t)s->pruned, "search_s", search_s,
                    "mappings_per_second", rate, "searches", reps);
            add_intervals(j, hwname, &hw, opname, s);
            /* what the speedup is over: the best unfused mapping of the same
             * search, and the DRAM traffic that separates them */
            json_object_set_new(j, "speedup_baseline",
                json_pack("{s:s,s:s,s:f,s:f,s:f,s:f}", "baseline",
                    "the best unfused mapping of the same search (same hardware, splits, tiles "
                    "and capacities; its intermediate in DRAM or, where it fits, in the global "
                    "buffer)",
                    "intermediate", s->best_unfused.inter_gb ? "global_buffer" : "dram",
                    "dram_bytes_fused", s->r_fused.dram_bytes, "dram_bytes_unfused",
                    s->r_unfused.dram_bytes, "t_dram_fused", s->r_fused.t_dram, "t_dram_unfused",
                    s->r_unfused.t_dram));
            json_t *par = json_array();
            for (size_t i = 0; i < s->npareto; i++)
                json_array_append_new(par,
                    json_pack("{s:o,s:o}", "mapping", comet_model_mapping_json(&s->pareto[i]),
                        "result", comet_model_result_json(&s->pareto_r[i])));
            json_object_set_new(j, "pareto", par);
            json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
            printf("\n");
            json_decref(j);
        } else {
            printf("%s on %s, %s\n", opname, hw.name, shape);
            char e1[32], e2[32], bd1[64], bd2[64];
            printf("  best fused:   %.0f cycles (%.4g s; bound %s), %s  [%s]\n", s->r_fused.cycles,
                s->r_fused.seconds, bound_str(&s->r_fused, bd1, sizeof bd1),
                uj(s->r_fused.energy_pj, e1, sizeof e1),
                comet_model_mapping_str(&s->best_fused, b1, sizeof b1));
            printf("  best unfused: %.0f cycles (%.4g s; bound %s), %s  [%s]\n",
                s->r_unfused.cycles, s->r_unfused.seconds,
                bound_str(&s->r_unfused, bd2, sizeof bd2),
                uj(s->r_unfused.energy_pj, e2, sizeof e2),
                comet_model_mapping_str(&s->best_unfused, b2, sizeof b2));
            if (isfinite(s->r_fused.energy_pj) && isfinite(s->r_unfused.energy_pj))
                printf("  fused speedup %.2fx, energy ratio %.2fx\n", speedup,
                    s->r_unfused.energy_pj / s->r_fused.energy_pj);
            else
                printf("  fused speedup %.2fx, energy n/a (the description gives no energies)\n",
                    speedup);
            printf("    over the best unfused mapping of the same search (same hardware, splits, "
                   "tiles, capacities): its intermediates %s, %.3g MB of DRAM traffic "
                   "against the fused %.3g MB (DRAM time %.0f against %.0f cycles)\n",
                s->best_unfused.inter_gb ? "stay in the global buffer" : "go through DRAM",
                s->r_unfused.dram_bytes / 1e6, s->r_fused.dram_bytes / 1e6, s->r_unfused.t_dram,
                s->r_fused.t_dram);
            print_intervals(hwname, &hw, opname, s);
            printf("  %zu mappings evaluated (%zu pruned by capacity) per search, median of %d "
                   "searches %.3g ms: %.3g mappings/s\n",
                s->evaluated, s->pruned, reps, search_s * 1e3, rate);
            printf("  Pareto set (latency vs energy%s): %zu points\n",
                isfinite(s->r_fused.energy_pj) ? "" : "; energy unknown, latency only", s->npareto);
            for (size_t i = 0; i < s->npareto; i++)
                printf("    %12.0f cycles %14s  %s\n", s->pareto_r[i].cycles,
                    uj(s->pareto_r[i].energy_pj, e1, sizeof e1),
                    comet_model_mapping_str(&s->pareto[i], b1, sizeof b1));
        }
        goto out;
    }
    const comet_model_mapping *mp = from_file      ? &fmp
        : !strcmp(mapping, "fused")                ? &s->best_fused
        : !strcmp(mapping, "unfused")              ? &s->best_unfused
        : s->r_fused.cycles <= s->r_unfused.cycles ? &s->best_fused
                                                   : &s->best_unfused;
    comet_model_result r;
    comet_model_eval(&hw, &pb, mp, &r);
    if (!r.valid) {
        comet_cli_error(sub,
            "%s: the mapping does not fit %s (global buffer needs %.0f of %.0f B, "
            "local %.0f of %.0f B) or does not match its %d clusters x %d cores",
            mapping, hw.name, r.gb_need, hw.gb.capacity, r.lb_need, hw.lb.capacity, hw.clusters,
            hw.cores);
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    if (g.json) {
        json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:o,s:o}", "schema", "comet.predict.v2", "hw",
            hw.name, "op", opname, "shape", shape, "mapping", comet_model_mapping_json(mp),
            "result", comet_model_result_json(&r));
        {
            comet_model_vrow *vr = NULL;
            int nv = 0;
            comet_cli_profile_vrows(hwname, &hw, &vr, &nv);
            json_object_set_new(j, "interval",
                comet_reports_interval_json(vr, nv, opname, mp->fused, r.seconds, NULL, 0));
            free(vr);
        }
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("\n");
        json_decref(j);
    } else {
        printf("%s on %s, %s\n", opname, hw.name, shape);
        printf("  mapping:  %s\n", comet_model_mapping_str(mp, b1, sizeof b1));
        char bd[64];
        printf("  latency:  %.0f cycles = %.6g s (bound %s)\n", r.cycles, r.seconds,
            bound_str(&r, bd, sizeof bd));
        {
            comet_model_vrow *vr = NULL;
            int nv = 0;
            char line[300];
            comet_cli_profile_vrows(hwname, &hw, &vr, &nv);
            json_decref(comet_reports_interval_json(
                vr, nv, opname, mp->fused, r.seconds, line, sizeof line));
            if (line[0])
                printf("  interval: %s\n", line);
            free(vr);
        }
        printf("    gemm %.0f, vector %.0f, dram %.0f, noc %.0f, collectives %.0f, ramp %.0f, "
               "stall %.0f\n",
            r.t_gemm, r.t_vec, r.t_dram, r.t_noc, r.t_coll, r.t_ramp, r.t_stall);
        if (isfinite(r.energy_pj))
            printf("  energy:   %.6g uJ (dram %.4g, GB %.4g, LB %.4g, MAC %.4g, vector %.4g, link "
                   "%.4g uJ)\n",
                r.energy_pj * 1e-6, r.e_dram * 1e-6, r.e_gb * 1e-6, r.e_lb * 1e-6, r.e_mac * 1e-6,
                r.e_vec * 1e-6, r.e_link * 1e-6);
        else
            printf("  energy:   n/a (the description gives no per-access energies)\n");
        printf("  collectives: %s\n", r.coll_desc[0] ? r.coll_desc : "none");
        for (int i = 0; i < r.ncoll; i++)
            printf(
                "    node %d: %s(%s) of %s, split %s, %.0f B x %d participants, %s, %.0f cycles x "
                "%.0f\n",
                i + 1, comet_model_coll_name(r.coll[i].type),
                r.coll[i].reduce_op[0] ? r.coll[i].reduce_op : "-", r.coll[i].tensor, r.coll[i].dim,
                r.coll[i].bytes, r.coll[i].participants, comet_model_alg_name(r.coll[i].alg),
                r.coll[i].cycles, r.coll[i].calls);
        if (explain)
            comet_model_explain(&hw, &pb, mp, stdout);
    }
out:
    free(s);
    comet_model_hw_free(&hw);
    return rc;
}

int comet_cmd_predict(int argc, char **argv)
{
    return run(argc, argv, 0);
}

int comet_cmd_explore(int argc, char **argv)
{
    return run(argc, argv, 1);
}
