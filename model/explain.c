/* Model outputs: mapping strings and JSON, result JSON, and --explain's
 * term-by-term breakdown (of one mapping, and of a distributed kernel's
 * local slice and collectives). */
#include "comet_model.h"
#include "dist_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the core-level temporal loop's factor (0 and 1: none) */
static int ctf(int v)
{
    return v > 1 ? v : 1;
}

const char *comet_model_mapping_str(const comet_model_mapping *mp, char *buf, size_t len)
{
    char ct[64] = "";
    if (ctf(mp->ct_m) * ctf(mp->ct_n) * ctf(mp->ct_k) > 1)
        snprintf(ct, sizeof ct, ", core tiles M/N/K %d/%d/%d", ctf(mp->ct_m), ctf(mp->ct_n),
            ctf(mp->ct_k));
    snprintf(buf, len,
        "%s %s, clusters H/M/N/K %d/%d/%d/%d, cores M/N %d/%d, tile_m %.0f, tile_k %.0f%s%s%s",
        mp->fused ? "fused" : "unfused", mp->pipelined ? "pipelined" : "sequential",
        mp->cs_h > 1 ? mp->cs_h : 1, mp->cs_m, mp->cs_n, mp->cs_k, mp->ks_m, mp->ks_n, mp->tile_m,
        mp->tile_k, ct,
        mp->fused ? "" : (mp->one_pass ? ", one pass per row" : ", op-by-op passes"),
        !mp->fused && mp->inter_gb ? ", intermediate in the global buffer" : "");
    return buf;
}

json_t *comet_model_mapping_json(const comet_model_mapping *mp)
{
    json_t *j = json_pack("{s:b,s:s,s:{s:i,s:i,s:i,s:i},s:{s:i,s:i},s:f,s:f}", "fused", mp->fused,
        "binding", mp->pipelined ? "pipelined" : "sequential", "cluster_split", "H",
        mp->cs_h > 1 ? mp->cs_h : 1, "M", mp->cs_m, "N", mp->cs_n, "K", mp->cs_k, "core_split", "M",
        mp->ks_m, "N", mp->ks_n, "tile_m", mp->tile_m, "tile_k", mp->tile_k);
    if (mp->fused && mp->blas_gemm)
        json_object_set_new(j, "blas_gemm", json_true());
    if (ctf(mp->ct_m) * ctf(mp->ct_n) * ctf(mp->ct_k) > 1)
        json_object_set_new(j, "core_temporal",
            json_pack("{s:i,s:i,s:i}", "M", ctf(mp->ct_m), "N", ctf(mp->ct_n), "K", ctf(mp->ct_k)));
    if (!mp->fused && mp->inter_gb)
        json_object_set_new(j, "intermediate", json_string("global_buffer"));
    if (!mp->fused) {
        json_object_set_new(j, "one_pass", json_boolean(mp->one_pass));
        if (mp->pass_reads > 0)
            json_object_set_new(j, "pass_reads", json_real(mp->pass_reads));
        if (mp->pass_reads > 0)
            json_object_set_new(j, "pass_writes", json_real(mp->pass_writes));
        if (mp->streaming >= 0)
            json_object_set_new(j, "streaming", json_boolean(mp->streaming));
    }
    return j;
}

/* a number, or null where it is unknown (energy without energies) */
static json_t *jnum_or_null(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *comet_model_result_json(const comet_model_result *r)
{
    /* seconds per cycle of the description's clock */
    const double spc = r->cycles > 0 ? r->seconds / r->cycles : 0;
    json_t *j = json_pack("{s:b,s:f,s:f,s:f,s:o,s:{s:f,s:f,s:f,s:f,s:f,s:f},"
                          "s:{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f},"
                          "s:{s:o,s:o,s:o,s:o,s:o,s:o},s:f,s:f,s:i,s:s,s:s}",
        "valid", r->valid, "cycles", r->cycles, "seconds", r->seconds, "latency_s", r->seconds,
        "energy_pj", jnum_or_null(r->energy_pj), "bound", "bound_s", r->bound_cycles * spc,
        "compute_s", r->bound_compute * spc, "vector_s", r->bound_vector * spc, "dram_s",
        r->bound_dram * spc, "cache_s", r->bound_inter * spc, "raised_s", r->bound_raised * spc,
        "latency_breakdown", "gemm", r->t_gemm, "vector", r->t_vec, "dram", r->t_dram, "noc",
        r->t_noc, "collectives", r->t_coll, "ramp", r->t_ramp, "stall", r->t_stall, "passes",
        r->t_pass, "energy_breakdown_pj", "dram", jnum_or_null(r->e_dram), "global_buffer",
        jnum_or_null(r->e_gb), "local_buffer", jnum_or_null(r->e_lb), "mac", jnum_or_null(r->e_mac),
        "vector", jnum_or_null(r->e_vec), "link", jnum_or_null(r->e_link), "dram_bytes",
        r->dram_bytes, "coll_bytes", r->coll_bytes, "coll_calls", r->coll_calls, "collectives",
        r->coll_desc, "coll_algorithm", r->coll_alg);
    if (j)
        json_object_set_new(j, "bound_s", json_real(r->bound_cycles * spc));
    json_t *nodes = json_array();
    for (int i = 0; i < r->ncoll; i++) {
        const comet_model_coll_node *c = &r->coll[i];
        json_array_append_new(nodes,
            json_pack("{s:s,s:s,s:s,s:s,s:f,s:i,s:s,s:f,s:f}", "type",
                comet_model_coll_name(c->type), "reduce_op", c->reduce_op, "tensor", c->tensor,
                "split_dim", c->dim, "bytes", c->bytes, "participants", c->participants,
                "algorithm", comet_model_alg_name(c->alg), "cycles_per_call", c->cycles, "calls",
                c->calls));
    }
    json_object_set_new(j, "collective_nodes", nodes);
    return j;
}

void comet_model_explain(const comet_model_hw *hw, const comet_model_problem *pb,
    const comet_model_mapping *mp, FILE *fp)
{
    comet_model_result r;
    char buf[256];
    comet_model_eval(hw, pb, mp, &r);
    comet_model_graph graph;
    comet_model_graph_build(pb, &graph);
    const comet_model_graph *g = &graph;
    fprintf(fp, "graph:  ");
    for (int i = 0; i < g->n; i++)
        fprintf(fp, "%s%s = %s(%s%s%s)", i ? "; " : "", g->node[i].out,
            comet_model_bop_name(g->node[i].kind), g->node[i].in0, g->node[i].in1[0] ? ", " : "",
            g->node[i].in1);
    fprintf(fp, "\nmapping: %s\n", comet_model_mapping_str(mp, buf, sizeof buf));
    if (!r.valid) {
        fprintf(fp, "  does not fit: tiles exceed the global (%.0f B) or local (%.0f B) buffer\n",
            hw->gb.capacity, hw->lb.capacity);
        return;
    }
    /* the geometry evaluation priced the terms on, not a second derivation of it */
    fprintf(fp, "  steps = ceil(M_cluster / tile_m) = ceil(%.0f / %.0f) = %.0f\n", r.m_cluster,
        r.tile_rows, r.steps);
    if (hw->systolic)
        fprintf(fp,
            "  gemm    = steps x folds x (2R + C + m_core - 2), R=%d C=%d arrays=%d  -> %.0f "
            "cycles\n",
            hw->sa_rows, hw->sa_cols, hw->sa_arrays, r.t_gemm);
    else if (mp->fused && !mp->blas_gemm && hw->fused_micro_rows > 0)
        fprintf(fp,
            "  gemm    = steps x 2 m n k / (peak %.2f flop/cycle x eff(M,N,K)) x micro-tile rows "
            "computed / rows of a core's blocks (%.0f-row tiles, %.0f-row edge: x %.3f)  -> %.0f "
            "cycles\n",
            hw->peak_flops, hw->fused_micro_rows,
            hw->fused_micro_edge > 0 ? hw->fused_micro_edge : hw->fused_micro_rows, r.micro_factor,
            r.t_gemm);
    else
        fprintf(fp,
            "  gemm    = steps x 2 m n k / (peak %.2f flop/cycle x eff(M,N,K))  -> %.0f cycles\n",
            hw->peak_flops, r.t_gemm);
    fprintf(fp,
        "  vector  = elements / width %d x cycles per element (+ row reductions) -> %.0f cycles\n",
        hw->simd_width, r.t_vec);
    fprintf(fp,
        "  dram    = bytes that go to DRAM / the clusters' DRAM bandwidth: %.0f bytes / %.3g "
        "B/cycle -> %.0f cycles busy (overlapped with compute where the binding allows)\n",
        r.dram_bytes, r.t_dram > 0 ? r.dram_bytes / r.t_dram : 0.0, r.t_dram);
    fprintf(fp,
        "  noc     = max(bytes / GB bw %.0f, bytes / (cores x link %.0f)) + hops -> %.0f cycles\n",
        hw->gb.bw, comet_model_net_bw(&hw->core_net), r.t_noc);
    if (!r.ncoll)
        fprintf(fp, "  colls   = none (no reduction dimension split%s)\n",
            !mp->fused && mp->cs_n > 1 ? "; the intermediate goes through memory" : "");
    for (int i = 0; i < r.ncoll; i++) {
        const comet_model_coll_node *c = &r.coll[i];
        fprintf(fp,
            "  coll %d  = %s(%s) of %s (split %s): %.0f B x %d participants, %s -> %.0f cycles x "
            "%.0f calls\n",
            i + 1, comet_model_coll_name(c->type), c->reduce_op[0] ? c->reduce_op : "-", c->tensor,
            c->dim, c->bytes, c->participants, comet_model_alg_name(c->alg), c->cycles, c->calls);
    }
    if (!mp->fused)
        fprintf(fp, "  passes  = %s over the whole intermediate, after the GEMM -> %.0f cycles\n",
            hw->kind[0] == 'c'
                ? "max(vector + loads + stores / bw, bytes / bw) (a core's stores stall its row "
                  "loop; one pass per row: the rows' loads from beyond L2 at one core's rate "
                  "add, as the later sweeps run from L1)"
                : mp->pipelined ? "max(vector, bytes / bw)"
                                : "vector + bytes / bw",
            r.t_pass);
    if (r.t_beta > 0)
        fprintf(fp,
            "  beta    = BLAS clears C (beta = 0) beyond the LLC: intermediate x (1 / memory "
            "store bw - 1 / LLC store bw) x the grid's share with C in the LLC (store bw: the "
            "measured fill, else half the level's bw) -> %.0f cycles\n",
            r.t_beta);
    if (r.t_reload > 0)
        fprintf(fp,
            "  reload  = steps x B (attention: K and V) bytes x (1 / LLC bw per core - 1 / L2 bw): "
            "B leaves L2 between blocks (beside the tile and a cached result) -> %.0f cycles\n",
            r.t_reload);
    if (r.t_sync > 0)
        fprintf(fp,
            "  sync    = parallel regions x fork and join (%.0f cycles each, gemm."
            "parallel_region_cycles) -> %.0f cycles\n",
            hw->par_region_cycles, r.t_sync);
    fprintf(fp, "  ramp    = first loads + last write-back -> %.0f cycles\n", r.t_ramp);
    if (hw->kind[0] == 'c' && mp->fused && !mp->blas_gemm)
        fprintf(fp,
            "  per core: step = max(gemm + reload, operand loads, noc) + vector + result stores "
            "+ collectives (a block's GEMM, then its epilogue, whose stores stall its row loop)\n");
    else
        fprintf(fp, "  %s: step = %s\n", mp->pipelined ? "pipelined" : "sequential",
            mp->pipelined ? "max(compute, dram, noc) + collectives"
                          : "compute + dram + noc + collectives");
    fprintf(fp,
        "  bounds  = compute %.0f (MACs / every core's MACs per cycle), vector %.0f, memory %.0f "
        "(compulsory bytes / bandwidth), cache %.0f -> %.0f cycles\n",
        r.bound_compute, r.bound_vector, r.bound_dram, r.bound_inter, r.bound_cycles);
    if (r.bound_raised > 0)
        fprintf(fp,
            "  raised  = the composition came to %.0f cycles, below its bound: the latency is the "
            "bound\n",
            r.cycles - r.bound_raised);
    fprintf(
        fp, "  total   = %.0f cycles = %.6g s at %.3g GHz\n", r.cycles, r.seconds, hw->clock_ghz);
    if (isfinite(r.energy_pj))
        fprintf(fp,
            "  energy  = dram %.4g + GB %.4g + LB %.4g + MAC %.4g (%.0f MACs x %.4g pJ) + vector "
            "%.4g + link %.4g = %.4g pJ\n",
            r.e_dram, r.e_gb, r.e_lb, r.e_mac, r.macs, hw->mac_pj, r.e_vec, r.e_link, r.energy_pj);
    else
        fprintf(fp, "  energy  = n/a: the description gives no per-access or per-op energies\n");
}

int comet_model_dist_explain(const comet_model_hw *hw, const comet_model_problem *pb, int fused,
    int threads, int p, const char *link, FILE *fp)
{
    comet_model_dist_pred d;
    comet_model_problem sl;
    comet_model_hw one;
    comet_model_mapping mp;
    int rc = comet_model_dist_predict(hw, pb, fused, threads, p, link, &d);
    if (rc || !fp)
        return rc ? rc : -EINVAL;
    if ((rc = comet_model__dist_slice(hw, pb, threads, p, &one, &sl, &mp)) != 0)
        return rc;
    fprintf(fp,
        "distributed over %d ranks: one rank's slice as the local kernels run it (one BLAS "
        "GEMM, then the row passes), on its share of this machine:\n",
        p);
    comet_model_explain(&one, &sl, &mp, fp);
    fprintf(fp, "  local   = the slice above%s%s, over the ranks' core share (x %.3f) -> %.4g ms\n",
        fused && pb->op == COMET_MODEL_GEMM_LAYERNORM && hw->dist_ln_elem_cycles > 0
            ? " with the distributed LayerNorm's passes (vector.dist_ln_*) for its row pass"
            : "",
        fused ? "" : ", the row pass over whole rows (x ranks), the rows staged from the slices",
        1 / comet_model__dist_share(hw, p, one.cores), d.local_s * 1e3);
    if (!fused)
        fprintf(fp,
            "  stage   = whole rows copied from the gathered slices (and the slice back) at "
            "the bandwidth of the level they fit in -> %.4g ms\n",
            comet_model__dist_stage_cycles(&one, pb, p) / (hw->clock_ghz * 1e9) * 1e3);
    for (int i = 0; i < d.ncall; i++) {
        const comet_model_dist_call *c = &d.call[i];
        fprintf(fp, "  coll %d  = %s%s%s%s of %.0f B per rank over %s x %.0f calls -> %.4g ms\n",
            i + 1, comet_model_coll_name(c->kind), c->op[0] ? "(" : "", c->op, c->op[0] ? ")" : "",
            c->bytes, d.link[0] ? d.link : "the profile's link", c->calls,
            c->calls * c->seconds * 1e3);
    }
    fprintf(fp, "  total   = local + collectives = %.4g ms\n", d.seconds * 1e3);
    return 0;
}
