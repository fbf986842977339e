/* What the profile's parts (profile.c and the fits of profile_gemm.c,
 * profile_memory.c, profile_links.c) share: a record's time as the fits read
 * it, and the JSON of a number, of held-out errors and of residuals. Below
 * all of them; calls none of theirs. */
#include "calibrate_internal.h"

#include <math.h>

json_t *cal_jreal(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

double cal_record_time(const comet_results_record *r)
{
    const double busy = r->load.busy_during;
    if (busy > COMET_RESULTS_BUSY_MAX && r->stats.min_s > 0)
        return r->stats.min_s;
    return r->stats.median_s;
}

json_t *cal_err_json(const double *e, size_t n, const char *method)
{
    double med, p90;
    comet_calibrate_err_stats(e, n, &med, &p90);
    return json_pack("{s:I,s:o,s:o,s:s}", "points", (json_int_t)n, "median_rel_err", cal_jreal(med),
        "p90_rel_err", cal_jreal(p90), "method", method);
}

json_t *cal_residuals_json(const double *key, const double *res, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("[f,o]", key[i], cal_jreal(round(res[i] * 1e4) / 1e4)));
    return a;
}
