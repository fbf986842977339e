/* Statistics of validation rows shared by validate, the report and the
 * prediction intervals: one quantile convention (linear interpolation
 * between order statistics), per op and variant. */
#include "comet_model.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double comet_model_quantile(double *v, int n, double q)
{
    if (!v || n <= 0 || !(q >= 0 && q <= 1))
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    const double pos = q * (n - 1);
    const int i = (int)floor(pos);
    return i + 1 >= n ? v[n - 1] : v[i] + (pos - i) * (v[i + 1] - v[i]);
}

/* rows of op (NULL: any) and variant (NULL: any) -> ratios measured/predicted */
static int ratios(
    const comet_model_vrow *rows, int n, const char *op, const char *variant, double *out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        if ((op && strcmp(rows[i].op, op)) || (variant && strcmp(rows[i].variant, variant)))
            continue;
        if (rows[i].predicted_s > 0 && rows[i].measured_s > 0)
            out[k++] = rows[i].measured_s / rows[i].predicted_s;
    }
    return k;
}

int comet_model_interval(const comet_model_vrow *rows, int n, const char *op, const char *variant,
    double level, comet_model_band *band)
{
    if (!rows || n < 0 || !band || !(level > 0 && level < 1))
        return -EINVAL;
    memset(band, 0, sizeof *band);
    double *r = malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
    if (!r)
        return -ENOMEM;
    /* the narrowest basis with enough records: op and variant, the op, all */
    static const int min_n = 5;
    int k = ratios(rows, n, op, variant, r), scope = 0;
    if (k < min_n)
        k = ratios(rows, n, op, NULL, r), scope = 1;
    if (k < min_n)
        k = ratios(rows, n, NULL, NULL, r), scope = 2;
    if (k < min_n) {
        free(r);
        return -ENOENT;
    }
    band->records = k;
    band->level = level;
    band->scope = scope;
    band->lo = comet_model_quantile(r, k, (1 - level) / 2);
    band->hi = comet_model_quantile(r, k, 1 - (1 - level) / 2);
    free(r);
    return 0;
}

int comet_model_validate_groups(
    const comet_model_vrow *rows, int n, comet_model_vgroup *groups, int cap)
{
    if ((!rows && n) || (!groups && cap) || n < 0)
        return -EINVAL;
    double *e = malloc((size_t)(n > 0 ? n : 1) * sizeof *e),
           *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    if (!e || !b) {
        free(e);
        free(b);
        return -ENOMEM;
    }
    int ng = 0;
    /* groups in order of first appearance: every op and variant present */
    for (int i = 0; i < n && ng < cap; i++) {
        int seen = 0;
        for (int g = 0; g < ng && !seen; g++)
            seen = !strcmp(groups[g].op, rows[i].op) && !strcmp(groups[g].variant, rows[i].variant);
        if (seen)
            continue;
        comet_model_vgroup *gr = &groups[ng++];
        memset(gr, 0, sizeof *gr);
        snprintf(gr->op, sizeof gr->op, "%s", rows[i].op);
        snprintf(gr->variant, sizeof gr->variant, "%s", rows[i].variant);
        int k = 0;
        for (int j = i; j < n; j++)
            if (!strcmp(rows[j].op, gr->op) && !strcmp(rows[j].variant, gr->variant)) {
                e[k] = rows[j].rel_err;
                b[k++] = rows[j].predicted_s / rows[j].measured_s - 1;
            }
        gr->n = k;
        gr->median_rel_err = comet_model_quantile(e, k, 0.5);
        gr->p90_rel_err = comet_model_quantile(e, k, 0.9);
        gr->bias = comet_model_quantile(b, k, 0.5);
    }
    free(e);
    free(b);
    return ng;
}
