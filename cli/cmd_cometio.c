/* comet predict on COMET's own four files: COMET's numbers (the
 * COMET-compatible evaluation) and comet's (the same inputs translated into
 * comet's description and mapping), with the difference term by term. */
#include "cli.h"

#include "comet_cometio.h"
#include "comet_model.h"
#include "comet_util.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* COMET's cycle rows grouped as comet's terms */
typedef struct groups {
    double gemm, vec, dram, onchip, coll;
    double e_dram, e_gb, e_lb, e_mac, e_vec, e_noc;
} groups;

static void group(const comet_cometio_inputs *in, const comet_cometio_result *r, groups *g)
{
    memset(g, 0, sizeof *g);
    const char *dram = in->arch.n_level ? in->arch.level[0].name : "DRAM";
    size_t dl = strlen(dram);
    for (int i = 0; i < r->n_term; i++) {
        const comet_cometio_term *t = &r->term[i];
        double all = t->cs + t->os + t->tmw;
        const comet_cometio_op *op = comet_cometio_find_op(&in->problem, t->unit);
        if (op && t->tmw > 0) {
            /* the GEMM is the op with two inputs and a K rank */
            if (op->n_ins == 2 && op->n_tensor == 3 && op->tensor[0].n_rank == 2
                && op->tensor[1].n_rank == 2)
                g->gemm += all;
            else
                g->vec += all;
        } else if (!strncmp(t->unit, dram, dl) && t->unit[dl] == '-' && !t->unit[dl + 1]) {
            g->dram += all;
        } else if (strchr(t->unit, '-') && t->unit[0] >= 'A' && t->unit[0] <= 'Z'
            && (!strncmp(t->unit, "ALL", 3) || !strncmp(t->unit, "GATHER", 6)
                || !strncmp(t->unit, "SCATTER", 7) || !strncmp(t->unit, "BROADCAST", 9)
                || !strncmp(t->unit, "REDUCTION", 9))) {
            g->coll += all;
        } else {
            g->onchip += all;
        }
    }
    int gb = in->arch.n_link ? in->arch.link[0].child : -1;
    for (int i = 0; i < r->n_eterm; i++) {
        const comet_cometio_eterm *t = &r->eterm[i];
        int lvl = comet_cometio_level_find(&in->arch, t->unit);
        if (strstr(t->unit, "<->"))
            g->e_noc += t->pj;
        else if (lvl == 0)
            g->e_dram += t->pj;
        else if (lvl >= 0 && lvl == gb)
            g->e_gb += t->pj;
        else if (lvl >= 0)
            g->e_lb += t->pj;
        else if (strchr(t->unit, '-')) {
            /* compute rows: "ENGINE-OP" */
            char eng[160];
            snprintf(eng, sizeof eng, "%s", t->unit);
            *strchr(eng, '-') = 0;
            int e = comet_cometio_level_find(&in->arch, eng);
            if (e >= 0 && in->arch.level[e].comp >= 0
                && in->arch.compute[in->arch.level[e].comp].is_simd)
                g->e_vec += t->pj;
            else
                g->e_mac += t->pj;
        }
    }
}

static void row(const char *name, double comet_compat, double ours, const char *why)
{
    double d = ours - comet_compat;
    printf("  %-22s %14.0f %14.0f %+14.0f  %s\n", name, comet_compat, ours, d, why);
}

static void erow(const char *name, double comet_compat, double ours, const char *why)
{
    printf(
        "  %-22s %14.6g %14.6g %+14.4g  %s\n", name, comet_compat, ours, ours - comet_compat, why);
}

int comet_cli_cometio(const char *sub, const char *arch, const char *problem, const char *mapping,
    const char *constants, int explain, const comet_cli_global *g)
{
    char err[COMET_ERRLEN];
    comet_cometio_inputs in;
    if (!problem || !mapping) {
        comet_cli_error(sub,
            "--hw is a COMET architecture: give its problem (--op or --workload FILE) and "
            "mapping (--mapping FILE), and --constants FILE when they use symbols");
        return COMET_EXIT_USAGE;
    }
    if (comet_cometio_load(arch, problem, mapping, constants, &in, err, sizeof err) != 0) {
        comet_cli_error(NULL, "%s", err);
        return COMET_EXIT_USAGE;
    }
    int rc = COMET_EXIT_OK;
    comet_cometio_result *cr = calloc(1, sizeof *cr);
    comet_cometio_translation *tr = calloc(1, sizeof *tr);
    comet_model_hw hw;
    int have_hw = 0;
    memset(&hw, 0, sizeof hw);
    if (!cr || !tr) {
        comet_cli_error(sub, "out of memory");
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    /* COMET's iterative mapper runs with --calc_noc_energy */
    if (comet_cometio_evaluate(&in, 1, cr, err, sizeof err) != 0) {
        comet_cli_error(NULL, "%s", err);
        rc = COMET_EXIT_USAGE;
        goto out;
    }
    if (comet_cometio_translate(&in, tr, err, sizeof err) != 0) {
        comet_cli_error(NULL, "%s", err);
        rc = COMET_EXIT_USAGE;
        goto out;
    }
    if (comet_model_hw_parse(
            "translated COMET architecture", tr->hw_yaml, strlen(tr->hw_yaml), &hw, err, sizeof err)
        != 0) {
        comet_cli_error(NULL, "%s (translated from %s)", err, arch);
        rc = COMET_EXIT_FAIL;
        goto out;
    }
    have_hw = 1;
    if (comet_model_mapping_check(&hw, &tr->pb, &tr->mp, err, sizeof err) != 0) {
        comet_cli_error(NULL, "%s: not expressible in comet's model: %s", mapping, err);
        rc = COMET_EXIT_USAGE;
        goto out;
    }
    comet_model_result r;
    comet_model_eval(&hw, &tr->pb, &tr->mp, &r);
    groups gr;
    group(&in, cr, &gr);
    char mb[256];
    if (g->json) {
        json_t *j = json_object(), *cc = json_object(), *rows = json_array(), *er = json_array();
        json_object_set_new(j, "schema", json_string("comet.cometio.v1"));
        json_object_set_new(j, "arch", json_string(arch));
        json_object_set_new(j, "problem", json_string(problem));
        json_object_set_new(j, "mapping", json_string(mapping));
        json_object_set_new(j, "constants", constants ? json_string(constants) : json_null());
        json_object_set_new(cc, "cycles", json_real(cr->cycles));
        json_object_set_new(cc, "energy_pj", json_real(cr->energy_pj));
        for (int i = 0; i < cr->n_term; i++)
            json_array_append_new(rows,
                json_pack("{s:s,s:f,s:f,s:f}", "unit", cr->term[i].unit, "cs", cr->term[i].cs, "os",
                    cr->term[i].os, "tmw", cr->term[i].tmw));
        for (int i = 0; i < cr->n_eterm; i++)
            json_array_append_new(
                er, json_pack("{s:s,s:f}", "unit", cr->eterm[i].unit, "pj", cr->eterm[i].pj));
        json_object_set_new(cc, "cycle_rows", rows);
        json_object_set_new(cc, "energy_rows", er);
        json_object_set_new(j, "comet_compatible", cc);
        json_t *own = comet_model_result_json(&r);
        json_object_set_new(own, "op", json_string(comet_model_op_name(tr->pb.op)));
        json_object_set_new(
            own, "mapping_str", json_string(comet_model_mapping_str(&tr->mp, mb, sizeof mb)));
        json_object_set_new(j, "comet", own);
        json_t *dr = json_array();
        for (int i = 0; i < tr->n_dropped; i++)
            json_array_append_new(dr, json_string(tr->dropped[i]));
        for (int i = 0; i < in.arch.n_ignored; i++) {
            char b[260];
            snprintf(b, sizeof b, "%s (COMET ignores it too)", in.arch.ignored[i]);
            json_array_append_new(dr, json_string(b));
        }
        json_object_set_new(j, "dropped", dr);
        json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
        fputc('\n', stdout);
        json_decref(j);
        goto out;
    }
    printf("COMET inputs: %s, %s, %s%s%s\n", arch, problem, mapping, constants ? ", " : "",
        constants ? constants : "");
    printf("  the op: %s M=%.0f N=%.0f K=%.0f (%zu basic ops)\n", comet_model_op_name(tr->pb.op),
        tr->pb.M, tr->pb.N, tr->pb.K, in.problem.n_op);
    printf("\nCOMET-compatible evaluation (COMET's formulas, d-matrix-ai/comet 917af0d; NoC "
           "energy on):\n");
    printf("  %.0f cycles, %.7g pJ\n", cr->cycles, cr->energy_pj);
    printf("  %-26s %12s %12s %12s\n", "unit", "CS", "OS", "TMW");
    for (int i = 0; i < cr->n_term; i++)
        printf("  %-26s %12.0f %12.0f %12.0f\n", cr->term[i].unit, cr->term[i].cs, cr->term[i].os,
            cr->term[i].tmw);
    printf("  energy:");
    for (int i = 0; i < cr->n_eterm; i++)
        printf("%s %s %.6g", i ? "," : "", cr->eterm[i].unit, cr->eterm[i].pj);
    printf(" pJ\n");
    printf("\ncomet's model on the translated description and mapping (%s):\n",
        comet_model_mapping_str(&tr->mp, mb, sizeof mb));
    printf("  %.0f cycles, %.7g pJ%s\n", r.cycles, r.energy_pj,
        r.valid ? "" : " (exceeds a capacity)");
    printf("\ndifference by term (comet - COMET), cycles:\n");
    printf("  %-22s %14s %14s %14s\n", "term", "COMET", "comet", "difference");
    /* comet's on-chip row is what its latency holds beyond the other rows
     * (the core network's steps; under a pipelined binding the rows
     * overlap and this is 0), so that its rows sum to its total as COMET's
     * do (it was NoC + ramp + stall, whose ramp and stall are DRAM time the
     * DRAM row holds already) */
    const double onchip
        = fmax(0, r.cycles - r.t_gemm - r.t_vec - r.t_dram - r.t_coll - r.t_pass - r.t_beta);
    row("GEMM compute", gr.gemm, r.t_gemm, "both: systolic fill/drain per core-level tile");
    row("vector ops", gr.vec, r.t_vec,
        "COMET: per instruction over the mapping's SIMD tile; comet: full-width rows");
    row("DRAM transfers", gr.dram, r.t_dram,
        "COMET: memory + queuing per tile, ramps; comet: busy time, cut-through");
    row("on-chip transfers", gr.onchip, onchip,
        "COMET: buffer rows (queuing per tile); comet: the rest (core network steps)");
    row("collectives", gr.coll, r.t_coll,
        "COMET: the mapping's collectives (port serialisation, P-fold reduce); comet: its own");
    row("total", cr->cycles, r.cycles, "");
    printf("energy, pJ:\n");
    erow("DRAM", gr.e_dram, r.e_dram, "");
    erow("global buffer", gr.e_gb, r.e_gb, "");
    erow("local buffers", gr.e_lb, r.e_lb, "COMET: input/weight/output buffers separately");
    erow("MACs", gr.e_mac, r.e_mac, "");
    erow("vector ops", gr.e_vec, r.e_vec, "");
    erow("NoC", gr.e_noc, r.e_link,
        "COMET: Orion router model, one cluster's core mesh; comet: link_pj_per_byte, all");
    erow("total", cr->energy_pj, r.energy_pj, "");
    if (explain) {
        printf("\ntranslated description (docs/hardware.md schema):\n%s", tr->hw_yaml);
        printf("\ndropped by the translation (%d):\n", tr->n_dropped + in.arch.n_ignored);
        for (int i = 0; i < tr->n_dropped; i++)
            printf("  %s\n", tr->dropped[i]);
        for (int i = 0; i < in.arch.n_ignored; i++)
            printf(
                "  %s: an attribute COMET does not read (ignored by both)\n", in.arch.ignored[i]);
        printf("\ncomet's terms:\n");
        comet_model_explain(&hw, &tr->pb, &tr->mp, stdout);
    }
out:
    if (have_hw)
        comet_model_hw_free(&hw);
    free(cr);
    free(tr);
    comet_cometio_free(&in);
    return rc;
}
