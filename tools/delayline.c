/* The delay line's link arithmetic (delayline.h). */
#include "delayline.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int comet_delayline_dir_init(
    comet_delayline_dir *d, double rate_bps, double delay_ns, unsigned overhead, size_t queue_pkts)
{
    memset(d, 0, sizeof *d);
    if (!(rate_bps > 0) || !isfinite(rate_bps) || !(delay_ns >= 0) || !isfinite(delay_ns)
        || queue_pkts < 1)
        return -EINVAL;
    d->ns_per_byte = 8e9 / rate_bps;
    d->delay_ns = delay_ns;
    d->overhead = overhead;
    d->queue_pkts = queue_pkts;
    d->wire_free = -INFINITY;
    d->ser_end = malloc(queue_pkts * sizeof(double));
    return d->ser_end ? 0 : -ENOMEM;
}

void comet_delayline_dir_free(comet_delayline_dir *d)
{
    free(d->ser_end);
    d->ser_end = NULL;
}

double comet_delayline_admit(comet_delayline_dir *d, double now_ns, size_t len)
{
    return comet_delayline_admit_burst(d, now_ns, len, 1, 0);
}

double comet_delayline_admit_burst(
    comet_delayline_dir *d, double now_ns, size_t len, size_t segs, size_t hdr)
{
    if (segs < 1)
        segs = 1;
    /* packets whose last bit has left no longer occupy the queue */
    while (d->n > 0 && d->ser_end[d->head] <= now_ns) {
        d->head = (d->head + 1) % d->queue_pkts;
        d->n--;
    }
    if (d->n + segs > d->queue_pkts) {
        d->dropped += segs;
        return -1;
    }
    /* every segment after the first repeats the headers; segments share the
     * payload evenly to within a byte, as the wire time needs only the sum */
    const double bytes = (double)len + (double)(segs - 1) * (double)hdr;
    const double per = bytes / (double)segs;
    double t = d->wire_free > now_ns ? d->wire_free : now_ns;
    for (size_t k = 0; k < segs; k++) {
        t += (per + d->overhead) * d->ns_per_byte;
        d->ser_end[(d->head + d->n) % d->queue_pkts] = t;
        d->n++;
    }
    d->wire_free = t;
    d->admitted += segs;
    return d->wire_free + d->delay_ns;
}

/* number then unit; the unit must be one of the table's */
static int parse_unit(const char *s, const char *const *units, const double *scale, size_t nu,
    double bare, double *out)
{
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v) || v < 0)
        return -EINVAL;
    if (!*end) {
        *out = v * bare;
        return 0;
    }
    for (size_t i = 0; i < nu; i++)
        if (!strcmp(end, units[i])) {
            *out = v * scale[i];
            return 0;
        }
    return -EINVAL;
}

int comet_delayline_parse_time(const char *s, double *ns)
{
    static const char *const u[] = { "ns", "us", "ms", "s", "usec", "msec", "sec" };
    static const double k[] = { 1, 1e3, 1e6, 1e9, 1e3, 1e6, 1e9 };
    return parse_unit(s, u, k, sizeof k / sizeof k[0], 1e3, ns);
}

int comet_delayline_parse_rate(const char *s, double *bps)
{
    static const char *const u[] = { "bit", "kbit", "mbit", "gbit", "bps", "kbps", "mbps", "gbps" };
    static const double k[] = { 1, 1e3, 1e6, 1e9, 8, 8e3, 8e6, 8e9 };
    int rc = parse_unit(s, u, k, sizeof k / sizeof k[0], 1, bps);
    return rc ? rc : *bps > 0 ? 0 : -EINVAL;
}
