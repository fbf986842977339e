/* A machine profile from bench records: the hardware description in the
 * model's schema plus the calibration section (fits, held-out errors,
 * provenance). */
#include "calibrate_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Provenance: the run records (and their machine), files, counts per kind. */
static int provenance(const comet_results_record *recs, size_t n, const comet_calibrate_source *src,
    size_t nsrc, const comet_results_machine **machine, json_t **out, char *err, size_t errlen)
{
    json_t *runs = json_array(), *kinds = json_object(), *files = json_array();
    const char *mid = NULL, *mrun = NULL;
    int rc = 0;
    *machine = NULL;
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        const char *k = comet_results_kind_name(r->kind);
        json_t *c = json_object_get(kinds, k);
        json_object_set_new(kinds, k, json_integer(c ? json_integer_value(c) + 1 : 1));
        if (r->kind != COMET_RESULTS_RUN)
            continue;
        const char *id = r->machine.id;
        if (!*machine) {
            *machine = &r->machine;
            mid = id;
            mrun = r->run_id;
        } else if (strcmp(id, mid)) {
            /* fits of two machines mixed would describe neither */
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "calibrate: results from two machines (run %s on %s, run %s on %s); calibrate "
                "each machine from its own results",
                mrun, mid, r->run_id, id);
            goto fail;
        }
        json_array_append_new(runs,
            json_pack(
                "{s:s,s:s,s:s}", "run_id", r->run_id, "time", r->time, "cmdline", r->cmdline));
    }
    if (!*machine) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "calibrate: no run record with a machine object in the results (files written by "
            "'comet bench' start with one)");
        goto fail;
    }
    for (size_t i = 0; i < nsrc; i++)
        json_array_append_new(files,
            json_pack("{s:s,s:I}", "path", src[i].path, "records", (json_int_t)src[i].records));
    char now[32];
    *out = json_pack("{s:{s:s,s:s,s:s,s:o,s:o},s:s,s:s,s:s,s:o,s:o,s:o,s:I}", "machine", "id", mid,
        "hostname", (*machine)->hostname, "cpu_model", (*machine)->cpu_model, "mhz",
        cal_jreal((*machine)->mhz), "cores", cal_jreal((*machine)->cores), "date",
        comet_util_iso_time(now, sizeof now), "comet_commit", comet_util_git_commit(),
        "comet_version", COMET_VERSION, "runs", runs, "files", files, "records_by_kind", kinds,
        "records", (json_int_t)n);
    runs = files = kinds = NULL;
    if (*out) /* the whole probe object, as the run record has it */
        json_object_set(*out, "machine_probe", (json_t *)(*machine)->json);
    if (!*out)
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
fail:
    json_decref(runs);
    json_decref(kinds);
    json_decref(files);
    return rc;
}

int comet_calibrate_build(const comet_results_record *recs, size_t n,
    const comet_calibrate_source *src, size_t nsrc, comet_model_hw *hw,
    comet_calibrate_summary *sum, char *err, size_t errlen)
{
    cal_ctx cx;
    const comet_results_machine *machine = NULL;
    json_t *prov = NULL;
    int rc;
    memset(&cx, 0, sizeof cx);
    memset(hw, 0, sizeof *hw);
    cx.hw = hw;
    cx.fits = json_object();
    if (sum)
        memset(sum, 0, sizeof *sum);
    if ((rc = provenance(recs, n, src, nsrc, &machine, &prov, err, errlen)) != 0)
        goto fail;

    /* clock and peak from the probe */
    /* the clock the cores sustained (timed by the probe) where there is one:
     * with a VM's nominal clock the peak is too low and the fitted
     * efficiencies run above 1 */
    double mhz = machine->mhz, mhz_m = machine->mhz_measured;
    const int measured_clock = mhz_m > 0;
    cx.ghz = measured_clock ? mhz_m / 1000 : mhz > 0 ? mhz / 1000 : 1.0;
    const double ncores = machine->cores;
    /* NaN or a huge count must not reach the int conversion (undefined) */
    cx.cores = ncores >= 1 && ncores <= 1 << 20 ? (int)ncores : 1;
    /* fp32 FLOP/cycle/core: 2 FMA pipes x lanes x 2 (16 lanes with AVX-512,
     * 8 with AVX2+FMA), 2 x 8 with AVX only */
    const int fma = machine->fma, avx = machine->avx, avx512 = machine->avx512f;
    cx.peak = avx512 && fma ? 64 : fma ? 32 : avx ? 16 : 8;
    for (size_t ci = 0; ci < machine->ncaches; ci++) {
        if (machine->caches[ci].level == 1 && machine->caches[ci].type
            && strcmp(machine->caches[ci].type, "instruction") && machine->caches[ci].size > 0)
            cx.l1 = machine->caches[ci].size;
        if (machine->caches[ci].level == 2)
            cx.l2 = machine->caches[ci].size;
        if (machine->caches[ci].level == 3)
            cx.l3 = machine->caches[ci].size;
    }
    cx.dram_bytes = machine->memory_bytes;
    if (!(cx.l2 > 0))
        cx.l2 = 512 * 1024.0;
    if (!(cx.l3 > 0))
        cx.l3 = cx.l2;
    if (!(cx.dram_bytes > 0))
        cx.dram_bytes = 1e12;

    snprintf(hw->name, sizeof hw->name, "local-%s", machine->hostname);
    snprintf(hw->kind, sizeof hw->kind, "cpu");
    hw->clock_ghz = cx.ghz;
    hw->bytes_per_elem = 4;
    hw->clusters = 1;
    hw->cores = cx.cores;
    hw->systolic = 0;
    hw->peak_flops = cx.peak;
    hw->simd_width = 1; /* vector costs are per element */
    hw->cluster_net
        = (comet_model_net) { .topo = COMET_MODEL_SWITCH, .dims = { 1, 1 }, .link_bw = 1 };
    hw->core_net = (comet_model_net) {
        .topo = COMET_MODEL_FULL, .dims = { cx.cores, 1 }, .link_bw = 64, .broadcast = 1
    };

    if ((rc = cal_fit_gemm(&cx, recs, n, err, errlen)) != 0
        || (rc = cal_fit_memory(&cx, recs, n, err, errlen)) != 0
        || (rc = cal_fit_vector(&cx, recs, n, err, errlen)) != 0
        || (rc = cal_fit_links(&cx, recs, n, err, errlen)) != 0)
        goto fail;
    /* the network between clusters (nodes): the measured link (first
     * ping-pong fit), alpha of small messages, beta of large ones */
    if (cx.p2p_beta > 0) {
        hw->cluster_net.startup = cx.p2p_alpha * cx.ghz * 1e9;
        hw->cluster_net.link_bw = 1 / (cx.p2p_beta * cx.ghz * 1e9);
    }
    cx.sum.collinear = cx.collinear;
    comet_calibrate_err_stats(cx.coll_err, cx.ncoll_err, &cx.sum.coll_med, &cx.sum.coll_p90);
    cx.sum.coll_heldout = cx.ncoll_err;
    json_object_set_new(cx.fits, "heldout_summary",
        json_pack("{s:{s:I,s:o,s:o},s:{s:I,s:o,s:o},s:{s:I,s:o,s:o}}", "sgemm_time", "points",
            (json_int_t)cx.sum.gemm_heldout, "median_rel_err", cal_jreal(cx.sum.gemm_med),
            "p90_rel_err", cal_jreal(cx.sum.gemm_p90), "memory_pass_time", "points",
            (json_int_t)cx.sum.mem_heldout, "median_rel_err", cal_jreal(cx.sum.mem_med),
            "p90_rel_err", cal_jreal(cx.sum.mem_p90), "collective_time", "points",
            (json_int_t)cx.sum.coll_heldout, "median_rel_err", cal_jreal(cx.sum.coll_med),
            "p90_rel_err", cal_jreal(cx.sum.coll_p90)));
    hw->calibration = json_pack("{s:s,s:{s:f,s:s,s:f,s:s},s:o,s:o}", "schema",
        "comet.calibration.v1", "units", "clock_ghz", cx.ghz, "clock_source",
        measured_clock ? "probe mhz_measured: a multiply chain's clock (every cycle figure of "
                         "this profile uses it)"
                       : "probe mhz, nominal (every cycle figure of this profile uses it)",
        "peak_flops_per_cycle", cx.peak, "peak_source",
        avx512 && fma ? "AVX-512: 2 FMA pipes x 16 fp32 lanes x 2"
            : fma     ? "AVX2+FMA: 2 FMA pipes x 8 fp32 lanes x 2"
                      : "no FMA: 2 pipes x lanes",
        "fits", cx.fits, "provenance", prov);
    cx.fits = prov = NULL;
    if (!hw->calibration) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    {
        /* what calibrate writes must load: absurd records (a bandwidth of
         * 1e18 B/cycle, a subnormal time) can fit values outside the
         * schema's bounds; refuse them here, naming the field, instead of
         * writing a profile that nothing can read */
        json_t *j = comet_model_hw_to_json(hw);
        char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
        comet_model_hw back;
        char why[COMET_ERRLEN] = "";
        memset(&back, 0, sizeof back);
        rc = txt ? comet_model_hw_parse("profile", txt, strlen(txt), &back, why, sizeof why)
                 : -ENOMEM;
        comet_model_hw_free(&back);
        free(txt);
        json_decref(j);
        if (rc == -ENOMEM) {
            comet_util_seterr(err, errlen, rc, "calibrate: out of memory");
            goto fail;
        }
        if (rc) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "calibrate: the records give an implausible profile (%s); check the results files",
                why);
            goto fail;
        }
    }
    if (sum)
        *sum = cx.sum;
fail:
    json_decref(cx.fits);
    json_decref(prov);
    free(cx.coll_err);
    if (rc)
        comet_model_hw_free(hw);
    return rc;
}

int comet_calibrate_links(const comet_results_record *recs, size_t n, json_t **fits,
    comet_calibrate_summary *sum, char *err, size_t errlen)
{
    cal_ctx cx;
    comet_model_hw scratch; /* cal_fit_links also fills a profile: discarded */
    int rc;
    memset(&cx, 0, sizeof cx);
    memset(&scratch, 0, sizeof scratch);
    *fits = NULL;
    cx.hw = &scratch;
    cx.ghz = 1.0;
    cx.cores = 1;
    if (!(cx.fits = json_object())) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    if ((rc = cal_fit_links(&cx, recs, n, err, errlen)) != 0)
        goto fail;
    if (!cx.sum.p2p_fits && !cx.sum.coll_fits) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "calibrate: --links-only: no ping-pong or collective records in the results (run "
            "'comet bench collectives')");
        goto fail;
    }
    comet_calibrate_err_stats(cx.coll_err, cx.ncoll_err, &cx.sum.coll_med, &cx.sum.coll_p90);
    cx.sum.coll_heldout = cx.ncoll_err;
    json_object_set_new(cx.fits, "heldout_summary",
        json_pack("{s:{s:I,s:o,s:o}}", "collective_time", "points", (json_int_t)cx.sum.coll_heldout,
            "median_rel_err", cal_jreal(cx.sum.coll_med), "p90_rel_err",
            cal_jreal(cx.sum.coll_p90)));
    if (sum)
        *sum = cx.sum;
    *fits = cx.fits;
    cx.fits = NULL;
fail:
    json_decref(cx.fits);
    free(cx.coll_err);
    comet_model_hw_free(&scratch);
    return rc;
}

int comet_calibrate_write_json(const json_t *doc, const char *path, char *err, size_t errlen)
{
    char *text = doc
        ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12))
        : NULL;
    int rc;
    if (!text)
        return comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
    size_t len = strlen(text);
    text[len] = '\n'; /* replaces the NUL: the file ends in a newline */
    rc = comet_util_write_atomic(path, text, len + 1, err, errlen);
    free(text);
    return rc;
}

int comet_calibrate_write_profile(
    const comet_model_hw *hw, const char *path, char *err, size_t errlen)
{
    json_t *j = comet_model_hw_to_json(hw);
    int rc = comet_calibrate_write_json(j, path, err, errlen);
    json_decref(j);
    return rc;
}
