/* Memory-bound kernels of a layer on a calibrated CPU profile: their
 * compute from the profile's measured row passes and vector-op costs
 * instead of a flat element rate (docs/system.md, "A calibrated CPU as the
 * chip"). The off-chip traffic stays the layer graph's. */
#include "comet_system.h"
#include "system_internal.h"

#include <math.h>
#include <string.h>

/* The forward kernel a kernel of the layer graph computes (re_ln1: ln1;
 * dres1_a: res1; dact: act), or "" for none. */
static const char *base_of(const char *name, char *buf, size_t len)
{
    if (!strncmp(name, "re_", 3))
        name += 3;
    static const char *const base[]
        = { "ln1", "ln2", "softmax", "act", "res1", "res2", "attn_drop", NULL };
    for (int pass = 0; pass < 2; pass++) {
        const char *n = pass ? name + 1 : name;
        if (pass && name[0] != 'd')
            break;
        for (int i = 0; base[i]; i++) {
            const size_t l = strlen(base[i]);
            if (!strncmp(n, base[i], l)
                && (n[l] == 0 || !strcmp(n + l, "_a") || !strcmp(n + l, "_b"))) {
                snprintf(buf, len, "%s", base[i]);
                return buf;
            }
        }
    }
    buf[0] = 0;
    return buf;
}

double sys_cpu_vec_s(const comet_system *sys, const sys_layer *L, const char *name, double flops)
{
    const comet_model_hw *hw = &sys->hw;
    if (strcmp(hw->kind, "cpu") || !(hw->vop_cycles[COMET_MODEL_VOP_ADD] > 0)
        || !(sys->clock_hz > 0) || hw->cores < 1)
        return -1;
    char b[16];
    base_of(name, b, sizeof b);
    if (!b[0])
        return -1;
    const double w = hw->simd_width > 0 ? hw->simd_width : 1;
    const double *c = hw->vop_cycles;
    /* cycles per FLOP the layer graph counts for the kernel (its forward's
     * count: LayerNorm 8 per element, softmax 5, GELU 8, residual 1, dropout
     * 2), one core; backward and recomputed kernels carry their own FLOP */
    double cpf;
    if (!strcmp(b, "ln1") || !strcmp(b, "ln2")) {
        double row = comet_model_row_pass_cycles(hw, 1, L->h);
        if (!isfinite(row))
            row = (hw->ln_row_cycles > 0 ? hw->ln_row_cycles : hw->row_cycles)
                + (hw->ln_row_elem_cycles > 0 ? hw->ln_row_elem_cycles * L->h : 0);
        if (!(row > 0))
            return -1;
        cpf = row / (8.0 * L->h);
    } else if (!strcmp(b, "softmax")) {
        double row = comet_model_row_pass_cycles(hw, 0, L->ctx);
        if (!isfinite(row))
            row = hw->row_cycles + hw->row_elem_cycles * L->ctx;
        if (!(row > 0))
            return -1;
        cpf = row / (5.0 * L->ctx);
    } else if (!strcmp(b, "act")) {
        /* GELU's tanh form: an exp, a divide, 4 multiplies and 3 adds per element */
        cpf = (c[COMET_MODEL_VOP_EXP] + c[COMET_MODEL_VOP_DIV] + 4 * c[COMET_MODEL_VOP_MUL]
                  + 3 * c[COMET_MODEL_VOP_ADD])
            / w / 8.0;
    } else if (!strcmp(b, "attn_drop")) {
        cpf = c[COMET_MODEL_VOP_MUL] / w;
    } else { /* residual adds (with dropout: a multiply and an add more per element) */
        cpf = c[COMET_MODEL_VOP_ADD] / w;
    }
    return flops * cpf / (hw->cores * sys->clock_hz);
}
