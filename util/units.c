/* Physical quantities with units ("300 GB/s", "1.4 GHz", "40 MiB", "5 ns",
 * "0.8 pJ/B"): one vocabulary for hardware, system and workload files, so a
 * clock what-if never silently rescales a bandwidth given in GB/s. */
#include "comet_util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct unit_row {
    const char *sym; /* exact suffix after the number (spaces ignored) */
    double scale; /* to the SI base of the kind */
} unit_row;

/* Decimal prefixes for rates and bare byte prefixes (GB = 1e9 B, as memory
 * vendors state bandwidth and HBM capacity); binary only where the symbol
 * says so (KiB, MiB, GiB, TiB). Bits are 1/8 byte. */
static const unit_row bytes_rows[] = { { "B", 1 }, { "kB", 1e3 }, { "KB", 1e3 }, { "MB", 1e6 },
    { "GB", 1e9 }, { "TB", 1e12 }, { "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
    { "TiB", 1099511627776.0 }, { "bit", 0.125 }, { "Kbit", 125 }, { "Mbit", 1.25e5 },
    { "Gbit", 1.25e8 }, { NULL, 0 } };
static const unit_row rate_rows[]
    = { { "B/s", 1 }, { "kB/s", 1e3 }, { "KB/s", 1e3 }, { "MB/s", 1e6 }, { "GB/s", 1e9 },
          { "TB/s", 1e12 }, { "KiB/s", 1024.0 }, { "MiB/s", 1048576.0 }, { "GiB/s", 1073741824.0 },
          { "TiB/s", 1099511627776.0 }, { "bit/s", 0.125 }, { "bps", 0.125 }, { "Kbit/s", 125 },
          { "kbit/s", 125 }, { "Mbit/s", 1.25e5 }, { "Mb/s", 1.25e5 }, { "Gbit/s", 1.25e8 },
          { "Gb/s", 1.25e8 }, { "Tbit/s", 1.25e11 }, { "Tb/s", 1.25e11 }, { NULL, 0 } };
static const unit_row hz_rows[]
    = { { "Hz", 1 }, { "kHz", 1e3 }, { "MHz", 1e6 }, { "GHz", 1e9 }, { NULL, 0 } };
static const unit_row s_rows[] = { { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 },
    { "\xc2\xb5s", 1e-6 }, { "ns", 1e-9 }, { "ps", 1e-12 }, { NULL, 0 } };
static const unit_row flops_rows[] = { { "FLOP/s", 1 }, { "kFLOP/s", 1e3 }, { "MFLOP/s", 1e6 },
    { "GFLOP/s", 1e9 }, { "TFLOP/s", 1e12 }, { "PFLOP/s", 1e15 }, { "GFLOPS", 1e9 },
    { "TFLOPS", 1e12 }, { "PFLOPS", 1e15 }, { "TOPS", 1e12 }, { NULL, 0 } };
/* energy per event: the denominator names the event and is checked by the
 * caller's choice of kind (per byte, or per access/op/MAC/FLOP) */
static const unit_row jb_rows[] = { { "J/B", 1 }, { "nJ/B", 1e-9 }, { "pJ/B", 1e-12 },
    { "fJ/B", 1e-15 }, { "J/GB", 1e-9 }, { "mJ/GB", 1e-12 }, { "pJ/bit", 8e-12 },
    { "fJ/bit", 8e-15 }, { "nJ/bit", 8e-9 }, { NULL, 0 } };
static const unit_row j_rows[] = { { "J", 1 }, { "nJ", 1e-9 }, { "pJ", 1e-12 }, { "fJ", 1e-15 },
    { "pJ/access", 1e-12 }, { "pJ/op", 1e-12 }, { "pJ/MAC", 1e-12 }, { "pJ/FLOP", 1e-12 },
    { "nJ/access", 1e-9 }, { "nJ/op", 1e-9 }, { NULL, 0 } };
static const unit_row w_rows[]
    = { { "W", 1 }, { "mW", 1e-3 }, { "kW", 1e3 }, { "MW", 1e6 }, { NULL, 0 } };
static const unit_row usd_rows[] = { { "USD", 1 }, { "$", 1 }, { "kUSD", 1e3 }, { NULL, 0 } };

static const unit_row *rows_of(comet_util_unit u)
{
    switch (u) {
    case COMET_UNIT_BYTES:
        return bytes_rows;
    case COMET_UNIT_BYTES_PER_S:
        return rate_rows;
    case COMET_UNIT_HZ:
        return hz_rows;
    case COMET_UNIT_SECONDS:
        return s_rows;
    case COMET_UNIT_FLOPS:
        return flops_rows;
    case COMET_UNIT_J_PER_BYTE:
        return jb_rows;
    case COMET_UNIT_JOULES:
        return j_rows;
    case COMET_UNIT_WATTS:
        return w_rows;
    case COMET_UNIT_USD:
        return usd_rows;
    }
    return NULL;
}

const char *comet_util_unit_base(comet_util_unit u)
{
    static const char *const base[] = { "B", "B/s", "Hz", "s", "FLOP/s", "J/B", "J", "W", "USD" };
    return (unsigned)u < sizeof base / sizeof base[0] ? base[u] : "?";
}

int comet_util_parse_quantity(const char *s, comet_util_unit u, int bare_ok, double *out)
{
    const unit_row *rows = rows_of(u);
    if (!s || !rows || !out)
        return -EINVAL;
    while (isspace((unsigned char)*s))
        s++;
    int dollar = 0;
    if (u == COMET_UNIT_USD && *s == '$') /* "$1200": the unit comes first */
        s++, dollar = 1;
    if (!*s || *s == '+' || *s == '-') /* quantities here are never negative */
        return -EINVAL;
    /* the number: strtod in the C locale's syntax only (digits, '.', e) */
    char num[64];
    size_t n = 0;
    while (s[n]
        && (isdigit((unsigned char)s[n]) || s[n] == '.' || s[n] == 'e' || s[n] == 'E'
            || ((s[n] == '-' || s[n] == '+') && n > 0 && (s[n - 1] == 'e' || s[n - 1] == 'E')))) {
        if (n + 1 >= sizeof num)
            return -EINVAL;
        num[n] = s[n];
        n++;
    }
    num[n] = '\0';
    if (!n)
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(num, &end);
    if (end != num + n || errno == ERANGE || !isfinite(v))
        return -EINVAL;
    const char *rest = s + n;
    while (isspace((unsigned char)*rest))
        rest++;
    char sym[32];
    size_t k = 0;
    for (const char *p = rest; *p; p++) {
        if (isspace((unsigned char)*p))
            continue;
        if (k + 1 >= sizeof sym)
            return -EINVAL;
        sym[k++] = *p;
    }
    sym[k] = '\0';
    double scale = 0;
    if (dollar && k)
        return -EINVAL;
    if (!k) {
        if (!bare_ok && !dollar)
            return -EDOM; /* a unit is required */
        scale = 1;
    } else {
        for (const unit_row *r = rows; r->sym; r++)
            if (!strcmp(sym, r->sym)) {
                scale = r->scale;
                break;
            }
        if (!(scale > 0))
            return -EINVAL;
    }
    *out = v * scale;
    return 0;
}
