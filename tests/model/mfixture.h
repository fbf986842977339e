/* What the model tests share: the calibrated CPU description of the report
 * fixture (a real calibration of an earlier machine), a tiny 2x2
 * accelerator and a 2-core CPU described by hand, a mapping as explore
 * builds it, one collective on the tiny description. Include after
 * cmocka.h. */
#ifndef MFIXTURE_H
#define MFIXTURE_H
#include "comet_model.h"
#include "comet_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loads it into *hw: 0, or the loader's negative errno. */
static inline int mfix_profile(comet_model_hw *hw)
{
    char path[600], err[256];
    const char *src = getenv("COMET_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/fixtures/report/profile.json", src ? src : ".");
    int rc = comet_model_hw_load(path, hw, err, sizeof err);
    if (rc)
        fprintf(stderr, "%s\n", err);
    return rc;
}

/* A mapping as explore builds it (library one-pass baseline for unfused). */
static inline comet_model_mapping map(
    int fused, int pipe, int cm, int cn, int ck, int km, int kn, double tm, double tk)
{
    comet_model_mapping mp;
    memset(&mp, 0, sizeof mp);
    mp.fused = fused, mp.pipelined = pipe;
    mp.cs_m = cm, mp.cs_n = cn, mp.cs_k = ck, mp.ks_m = km, mp.ks_n = kn;
    mp.tile_m = tm, mp.tile_k = tk;
    mp.one_pass = 1;
    mp.streaming = -1;
    return mp;
}

/* A tiny 2x2 accelerator: TOPO and RED are replaced by load_tiny(). */
static inline const char *mfix_tiny_hw(void)
{
    return "name: tiny\nkind: accelerator\nclock_ghz: 1.0\nbytes_per_elem: 2\n"
           "clusters:\n  count: 4\n  network: {topology: TOPO, dims: [2, 2], link_bw: 64, "
           "hop_latency: "
           "5, "
           "startup: 2, broadcast: true, reduction: RED}\n"
           "cores:\n  count: 1\n  network: {topology: mesh2d, dims: [1, 1], link_bw: 64, "
           "hop_latency: "
           "0}\n"
           "memory:\n  dram: {bw: 32, read_pj: 800, write_pj: 800, access_bytes: 8}\n"
           "  global_buffer: {capacity: 1048576, bw: 1024, read_pj: 100, write_pj: 100, "
           "access_bytes: "
           "64}\n"
           "  local_buffer: {capacity: 262144, bw: 1024, read_pj: 10, write_pj: 10, access_bytes: "
           "64}\n"
           "gemm: {engine: systolic, rows: 32, cols: 32, arrays: 1, mac_pj: 0.5}\n"
           "vector:\n  width: 16\n  cycles: {add: 1, mul: 1, div: 1, exp: 3, max: 1, sqrt: 1}\n"
           "  energy_pj: {add: 0.1, mul: 0.5, div: 1, exp: 4, max: 0.01, sqrt: 3}\n";
}

static inline void load_tiny(comet_model_hw *hw, const char *topo, const char *red)
{
    char text[4096], err[COMET_ERRLEN];
    const char *p = mfix_tiny_hw();
    size_t o = 0;
    while (*p && o < sizeof text - 32) {
        if (!strncmp(p, "TOPO", 4)) {
            o += (size_t)sprintf(text + o, "%s", topo);
            p += 4;
        } else if (!strncmp(p, "RED", 3)) {
            o += (size_t)sprintf(text + o, "%s", red);
            p += 3;
        } else {
            text[o++] = *p++;
        }
    }
    text[o] = '\0';
    if (comet_model_hw_parse("tiny.yaml", text, o, hw, err, sizeof err) != 0)
        fail_msg("load: %s", err);
}

/* One collective forced onto one algorithm of the tiny 2x2 description
 * (startup 2, hop 5, link 64 B/cycle, add 1 cycle / 16 lanes of 4 B). */
static inline double coll(
    const char *topo, const char *red, comet_model_coll c, double n, comet_model_alg a)
{
    comet_model_hw hw;
    load_tiny(&hw, topo, red);
    double t = comet_model_coll_time(&hw, c, 4, n, a).cycles;
    comet_model_hw_free(&hw);
    return t;
}

#define NEAR(x, y) assert_true(fabs((double)(x) - (double)(y)) < 1e-9 * fmax(1, fabs((double)(y))))

/* A CPU description: caches place the intermediate, a per-core limit caps
 * what few cores draw from the LLC and DRAM, and an unfused BLAS GEMM into
 * an intermediate beyond the LLC pays the clearing pass (beta = 0) at DRAM
 * instead of LLC bandwidth. All by hand, in bytes/cycle. */
static inline const char *mfix_cpu_hw(void)
{
    return "name: cpu2\nkind: cpu\nclock_ghz: 1.0\nbytes_per_elem: 4\n"
           "clusters:\n  count: 1\n  network: {topology: switch, dims: [1, 1], link_bw: 1, "
           "hop_latency: 0}\n"
           "cores:\n  count: 2\n  network: {topology: mesh2d, dims: [2, 1], link_bw: 1000, "
           "hop_latency: 0}\n"
           "memory:\n  dram: {bw: 10, core_bw: 4}\n"
           "  global_buffer: {capacity: 1048576, bw: 40, core_bw: 25}\n"
           "  local_buffer: {capacity: 65536, bw: 30}\n"
           "gemm: {engine: peak, peak_flops_per_cycle: 32, efficiency: 1}\n"
           "vector:\n  width: 1\n  cycles: {add: 1e-6, mul: 1e-6, div: 1e-6, exp: 1e-6, max: 1e-6, "
           "sqrt: 1e-6}\n";
}

/* mfix_cpu_hw() with its gemm section's closing "efficiency: 1}" replaced by
 * "efficiency: 1<extra>}" (the vector section after it kept). */
static inline void cpu_hw_with_gemm(char *buf, size_t cap, const char *extra)
{
    snprintf(buf, cap, "%s", mfix_cpu_hw());
    char *g = strstr(buf, "efficiency: 1}");
    assert_non_null(g);
    snprintf(g, cap - (size_t)(g - buf), "efficiency: 1%s}%s", extra,
        strstr(mfix_cpu_hw(), "efficiency: 1}") + strlen("efficiency: 1}"));
}
#endif
