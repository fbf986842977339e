/* Named hardware parameters in physical units, for what-ifs: sweeps
 * (`--sweep dram_bw=25GB/s,50GB/s`) and sensitivity (each parameter +-10%,
 * ranked by its effect on the best mappings' latency). Setting the clock
 * keeps every bandwidth in bytes per second (the record stores bytes per
 * cycle), so a clock what-if never rescales memory or links. */
#include "comet_model.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum pkind { P_CLOCK, P_BW, P_CAP, P_FLOPS, P_EFF, P_CYCLES_S, P_INT } pkind;

typedef struct pdesc {
    const char *name, *what;
    pkind kind;
    comet_util_unit unit; /* for parsing values */
} pdesc;

static const pdesc params[] = {
    { "clock", "clock (bandwidths stay in B/s)", P_CLOCK, COMET_UNIT_HZ },
    { "peak_flops", "peak GEMM rate per core", P_FLOPS, COMET_UNIT_FLOPS },
    { "gemm_eff", "flat GEMM efficiency (descriptions without a measured grid)", P_EFF,
        COMET_UNIT_BYTES },
    { "dram_bw", "off-chip memory bandwidth", P_BW, COMET_UNIT_BYTES_PER_S },
    { "gb_bw", "global buffer (CPU: LLC) bandwidth", P_BW, COMET_UNIT_BYTES_PER_S },
    { "gb_capacity", "global buffer (CPU: LLC) capacity", P_CAP, COMET_UNIT_BYTES },
    { "lb_bw", "local buffer (CPU: L2) bandwidth", P_BW, COMET_UNIT_BYTES_PER_S },
    { "lb_capacity", "local buffer (CPU: L2) capacity", P_CAP, COMET_UNIT_BYTES },
    { "link_bw", "link bandwidth between clusters", P_BW, COMET_UNIT_BYTES_PER_S },
    { "core_link_bw", "link bandwidth from the global buffer to cores", P_BW,
        COMET_UNIT_BYTES_PER_S },
    { "hop_latency", "latency per hop between clusters", P_CYCLES_S, COMET_UNIT_SECONDS },
    { "clusters", "clusters", P_INT, COMET_UNIT_BYTES },
    { "cores", "cores per cluster", P_INT, COMET_UNIT_BYTES },
};
#define NPARAMS ((int)(sizeof params / sizeof params[0]))

int comet_model_param_count(void)
{
    return NPARAMS;
}

const char *comet_model_param_name(int i)
{
    return i >= 0 && i < NPARAMS ? params[i].name : NULL;
}

static int find(const char *name)
{
    for (int i = 0; name && i < NPARAMS; i++)
        if (!strcmp(params[i].name, name))
            return i;
    return -1;
}

const char *comet_model_param_unit(const char *name)
{
    static const char *const units[] = { "Hz", "B/s", "B", "FLOP/s", "", "s", "" };
    int i = find(name);
    return i < 0 ? NULL : units[params[i].kind];
}

const char *comet_model_param_what(const char *name)
{
    int i = find(name);
    return i < 0 ? NULL : params[i].what;
}

/* bytes/cycle field of a bandwidth parameter */
static double *bw_field(comet_model_hw *hw, const char *name)
{
    if (!strcmp(name, "dram_bw"))
        return &hw->dram.bw;
    if (!strcmp(name, "gb_bw"))
        return &hw->gb.bw;
    if (!strcmp(name, "lb_bw"))
        return &hw->lb.bw;
    if (!strcmp(name, "link_bw"))
        return &hw->cluster_net.link_bw;
    if (!strcmp(name, "core_link_bw"))
        return &hw->core_net.link_bw;
    return NULL;
}

int comet_model_param_get(const comet_model_hw *hw, const char *name, double *v)
{
    int i = find(name);
    if (!hw || !v || i < 0)
        return -EINVAL;
    const double hz = hw->clock_ghz * 1e9;
    comet_model_hw *w = (comet_model_hw *)hw; /* bw_field only reads through it here */
    switch (params[i].kind) {
    case P_CLOCK:
        *v = hz;
        return 0;
    case P_BW:
        *v = *bw_field(w, name) * hz;
        return 0;
    case P_CAP:
        *v = !strcmp(name, "gb_capacity") ? hw->gb.capacity : hw->lb.capacity;
        return 0;
    case P_FLOPS:
        *v = hw->peak_flops * hz;
        return 0;
    case P_EFF:
        *v = hw->gemm_eff;
        return 0;
    case P_CYCLES_S:
        *v = hw->cluster_net.hop_latency / hz;
        return 0;
    case P_INT:
        *v = !strcmp(name, "clusters") ? hw->clusters : hw->cores;
        return 0;
    }
    return -EINVAL;
}

/* Near-square X x Y with X*Y = n (a mesh or torus of n nodes). */
static void square_dims(int n, int dims[2])
{
    int x = (int)floor(sqrt((double)n));
    while (x > 1 && n % x)
        x--;
    dims[0] = n / x;
    dims[1] = x;
}

int comet_model_param_set(comet_model_hw *hw, const char *name, double v)
{
    int i = find(name);
    if (!hw || i < 0)
        return -EINVAL;
    if (!isfinite(v) || !(v > 0))
        return -ERANGE;
    const double hz = hw->clock_ghz * 1e9;
    switch (params[i].kind) {
    case P_CLOCK: {
        /* keep B/s: every bytes/cycle figure scales by old/new clock */
        const double f = hz / v;
        comet_model_mem *lv[] = { &hw->dram, &hw->gb, &hw->lb, &hw->mem2 };
        for (size_t k = 0; k < sizeof lv / sizeof lv[0]; k++) {
            lv[k]->bw *= f;
            lv[k]->core_bw *= f;
            lv[k]->write_bw *= f;
            lv[k]->core_write_bw *= f;
        }
        hw->cluster_net.link_bw *= f;
        hw->core_net.link_bw *= f;
        hw->lb_input_bw *= f, hw->lb_weight_bw *= f, hw->lb_output_bw *= f;
        /* a flit takes the same time in seconds: 1/f as many cycles */
        hw->cluster_net.flit_cycles /= f;
        hw->core_net.flit_cycles /= f;
        for (int k = 0; k < hw->n_outer && k < COMET_MODEL_NET_LEVELS - 1; k++) {
            hw->outer_net[k].link_bw *= f;
            hw->outer_net[k].flit_cycles /= f;
        }
        hw->clock_ghz = v / 1e9;
        return 0;
    }
    case P_BW: {
        double *bw = bw_field(hw, name);
        /* a level's stores alone keep their ratio to its bandwidth */
        comet_model_mem *lv = !strcmp(name, "dram_bw") ? &hw->dram
            : !strcmp(name, "gb_bw")                   ? &hw->gb
                                                       : NULL;
        if (lv && *bw > 0) {
            lv->write_bw *= v / hz / *bw;
            lv->core_write_bw *= v / hz / *bw;
        }
        *bw = v / hz;
        return 0;
    }
    case P_CAP:
        *(!strcmp(name, "gb_capacity") ? &hw->gb.capacity : &hw->lb.capacity) = v;
        return 0;
    case P_FLOPS:
        hw->peak_flops = v / hz;
        return 0;
    case P_EFF:
        if (v > 1)
            return -ERANGE;
        hw->gemm_eff = v;
        return 0;
    case P_CYCLES_S:
        hw->cluster_net.hop_latency = v * hz;
        return 0;
    case P_INT: {
        if (v != floor(v) || v > 1 << 20)
            return -ERANGE;
        const int n = (int)v;
        if (!strcmp(name, "clusters")) {
            hw->clusters = n;
            hw->n_outer = 0; /* one network level of n nodes */
            if (hw->cluster_net.topo == COMET_MODEL_MESH2D
                || hw->cluster_net.topo == COMET_MODEL_TORUS2D)
                square_dims(n, hw->cluster_net.dims);
            else
                hw->cluster_net.dims[0] = n, hw->cluster_net.dims[1] = 1;
        } else {
            hw->cores = n;
            if (hw->core_net.topo == COMET_MODEL_MESH2D || hw->core_net.topo == COMET_MODEL_TORUS2D)
                square_dims(n, hw->core_net.dims);
            else
                hw->core_net.dims[0] = n, hw->core_net.dims[1] = 1;
        }
        return 0;
    }
    }
    return -EINVAL;
}

int comet_model_param_parse(const char *name, const char *text, double *v)
{
    int i = find(name);
    if (i < 0 || !text || !v)
        return -EINVAL;
    if (params[i].kind == P_EFF || params[i].kind == P_INT)
        return comet_util_parse_double(text, v) == 0 && *v > 0 ? 0 : -EINVAL;
    /* a bare number is taken in the base unit (Hz, B/s, B, FLOP/s, s) */
    return comet_util_parse_quantity(text, params[i].unit, 1, v);
}

int comet_model_problem_dim_set(comet_model_problem *pb, const char *name, double v)
{
    if (!pb || !name || !(v >= 1) || v != floor(v) || v > (double)(1ull << 40))
        return -EINVAL;
    double *dst = comet_model_problem_dim(pb, name);
    if (!dst)
        return -ENOENT;
    *dst = v;
    return 0;
}

/* Best fused and unfused latency (s) of pb on hw; NaN where nothing fits. */
static int best(const comet_model_hw *hw, const comet_model_problem *pb, comet_model_search *s,
    double *f, double *u)
{
    int rc = comet_model_explore(hw, pb, s);
    *f = rc == 0 && s->r_fused.valid ? s->r_fused.seconds : NAN;
    *u = rc == 0 && s->r_unfused.valid ? s->r_unfused.seconds : NAN;
    return rc == -ENOSPC ? 0 : rc;
}

int comet_model_sensitivity(const comet_model_hw *hw, const comet_model_problem *pb, double frac,
    comet_model_sens_row *rows, int cap)
{
    if (!hw || !pb || !rows || !(frac > 0 && frac < 1))
        return -EINVAL;
    comet_model_search *s = malloc(sizeof *s);
    if (!s)
        return -ENOMEM;
    double f0, u0;
    int rc = best(hw, pb, s, &f0, &u0), n = 0;
    for (int i = 0; rc == 0 && i < NPARAMS && n < cap; i++) {
        comet_model_sens_row *r = &rows[n];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", params[i].name);
        if (comet_model_param_get(hw, params[i].name, &r->base) != 0 || !(r->base > 0))
            continue; /* not part of this description (e.g. a flat efficiency with a grid) */
        /* a systolic engine's rate is its array geometry and the clock,
         * and a measured grid replaces the flat efficiency */
        if ((params[i].kind == P_EFF && (hw->grid.nt || hw->systolic))
            || (params[i].kind == P_FLOPS && hw->systolic))
            continue;
        r->lo_val = r->base * (1 - frac);
        r->hi_val = r->base * (1 + frac);
        if (params[i].kind == P_INT) {
            r->lo_val = fmax(1, round(r->lo_val));
            r->hi_val = round(r->hi_val);
            if (r->lo_val == r->base)
                r->lo_val = fmax(1, r->base - 1);
            if (r->hi_val == r->base)
                r->hi_val = r->base + 1;
        }
        if (params[i].kind == P_EFF)
            r->hi_val = fmin(1, r->hi_val);
        double vals[2] = { r->lo_val, r->hi_val }, ft[2], ut[2];
        for (int k = 0; k < 2 && rc == 0; k++) {
            comet_model_hw w = *hw; /* shallow: shares the grids, which are only read */
            if (comet_model_param_set(&w, params[i].name, vals[k]) != 0) {
                ft[k] = ut[k] = NAN;
                continue;
            }
            rc = best(&w, pb, s, &ft[k], &ut[k]);
        }
        if (rc)
            break;
        r->fused_lo_s = ft[0], r->fused_hi_s = ft[1];
        r->unfused_lo_s = ut[0], r->unfused_hi_s = ut[1];
        /* elasticity d ln T / d ln p between the two points */
        const double dl = log(r->hi_val / r->lo_val);
        r->elasticity_fused = dl > 0 ? log(ft[1] / ft[0]) / dl : NAN;
        r->elasticity_unfused = dl > 0 ? log(ut[1] / ut[0]) / dl : NAN;
        r->base_fused_s = f0, r->base_unfused_s = u0;
        n++;
    }
    free(s);
    if (rc)
        return rc;
    /* rank by the larger |elasticity| (NaN last) */
    for (int i = 1; i < n; i++) {
        comet_model_sens_row t = rows[i];
        const double key = fmax(isfinite(t.elasticity_fused) ? fabs(t.elasticity_fused) : -1,
            isfinite(t.elasticity_unfused) ? fabs(t.elasticity_unfused) : -1);
        int j = i - 1;
        while (j >= 0) {
            const double kj
                = fmax(isfinite(rows[j].elasticity_fused) ? fabs(rows[j].elasticity_fused) : -1,
                    isfinite(rows[j].elasticity_unfused) ? fabs(rows[j].elasticity_unfused) : -1);
            if (kj >= key)
                break;
            rows[j + 1] = rows[j];
            j--;
        }
        rows[j + 1] = t;
    }
    return n;
}
