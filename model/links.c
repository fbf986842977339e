/* The calibrated links of a description: which fits apply to a transport
 * (shared memory, a TCP or RDMA link, a link whose cores sat apart), read
 * from the calibration block a profile carries (calibrate/profile_links.c
 * writes it), and the link a record ran on. Below the description's loader
 * (hw.c), above the collective names (coll_algs.c). */
#include "comet_model.h"
#include "links_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* A calibrated profile keeps its link fits where calibrate wrote them
 * (calibration.fits.p2p and .collectives, calibrate/profile_links.c): the
 * first Hockney segment of the point-to-point fit, and every segment of every
 * collective fit (alpha/beta/gamma of the algorithm's TRG row). */
static double jnum_or(const json_t *o, const char *k, double dflt)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* whether fit x was measured on `link` (NULL: any; a fit that names no
 * link is shared memory's) */
static int on_link(const json_t *x, const char *link)
{
    const char *l = json_string_value(json_object_get(x, "link"));
    if (!link)
        return 1;
    return !strcmp(l && *l ? l : "shm", link);
}

/* A fit's pieces (segments: alpha_us, beta_ns_per_byte, from_bytes) into
 * from/alpha (s)/beta (s per byte), appended at *n: invalid or unordered
 * pieces are skipped, the first starts at 0 bytes. A piece may be flat
 * (beta 0). @return the first piece's rate that is not 0 (0: none). */
static double read_pieces(const json_t *segs, double *from, double *alpha, double *beta, int *n)
{
    size_t j;
    const json_t *seg;
    double rate = 0;
    json_array_foreach(segs, j, seg)
    {
        const double sa = jnum_or(seg, "alpha_us", NAN), sb = jnum_or(seg, "beta_ns_per_byte", NAN),
                     sf = jnum_or(seg, "from_bytes", 0);
        const int k = *n;
        if (!(sa >= 0) || !(sb >= 0) || !(sf >= 0) || k >= COMET_MODEL_MAX_P2P_SEGS
            || (k && !(sf > from[k - 1])))
            continue;
        from[k] = k ? sf : 0;
        alpha[k] = sa * 1e-6;
        beta[k] = sb * 1e-9;
        (*n)++;
        if (!(rate > 0) && sb > 0)
            rate = sb * 1e-9;
    }
    return rate;
}

/* The calibrated link fits of one transport (NULL: shared memory's where
 * there are any, else every fit): a fit applies only to the link it was
 * measured on. @return fits found (p2p and collective segments). */
static int links_filtered(const json_t *cal, const char *link, comet_model_links *l)
{
    const json_t *fits = json_object_get(cal, "fits");
    const json_t *p2p = json_object_get(fits, "p2p"), *co = json_object_get(fits, "collectives");
    size_t i, j;
    const json_t *x, *seg;
    memset(l, 0, sizeof *l);
    int found = 0;
    json_array_foreach(p2p, i, x)
    {
        if (!on_link(x, link))
            continue;
        /* every piece: the eager -> rendezvous step of a TCP link costs a
         * large message one or two round trips more than the first piece
         * says, and its rate may differ (calibrate splits the fit where the
         * link's ping-pong steps). A piece may be flat (beta 0: the smallest
         * messages cost the latency alone, as over tbf's bucket); the link
         * has a fit when some piece has a rate. */
        const double beta = read_pieces(json_object_get(x, "segments"), l->p2p_seg_from_bytes,
            l->p2p_seg_alpha_s, l->p2p_seg_beta_s, &l->p2p_nseg);
        if (l->p2p_nseg > 0 && beta > 0) {
            /* the Hockney pair: the first piece's latency, the first rate */
            l->p2p_alpha_s = l->p2p_seg_alpha_s[0];
            l->p2p_beta_s = beta;
            found++;
            break;
        }
        l->p2p_nseg = 0; /* no rate anywhere: not a usable fit; try the next */
    }
    /* the paired exchange, where measured: its pieces as the
     * point-to-point fit's */
    json_array_foreach(json_object_get(fits, "exchange"), i, x)
    {
        if (!on_link(x, link))
            continue;
        const double rate = read_pieces(json_object_get(x, "segments"), l->xch_seg_from_bytes,
            l->xch_seg_alpha_s, l->xch_seg_beta_s, &l->xch_nseg);
        if (l->xch_nseg > 0 && rate > 0)
            break;
        l->xch_nseg = 0; /* no rate anywhere: not a usable fit; try the next */
    }
    json_array_foreach(co, i, x)
    {
        comet_model_coll c;
        if (!on_link(x, link))
            continue;
        const char *alg = json_string_value(json_object_get(x, "algorithm"));
        if (comet_model_coll_parse(json_string_value(json_object_get(x, "op")), &c) != 0 || !alg
            || strlen(alg) >= sizeof l->fits[0].alg)
            continue;
        json_array_foreach(json_object_get(x, "segments"), j, seg)
        {
            if (l->nfits >= COMET_MODEL_MAX_FITS)
                return found;
            double a = jnum_or(seg, "alpha_us", NAN), b = jnum_or(seg, "beta_ns_per_byte", NAN);
            if (!(a >= 0) || !(b >= 0))
                continue;
            comet_model_coll_fit *f = &l->fits[l->nfits++];
            f->coll = c;
            snprintf(f->alg, sizeof f->alg, "%s", alg);
            f->alpha_s = a * 1e-6;
            f->beta_s = b * 1e-9;
            f->gamma_s = jnum_or(seg, "gamma_ns_per_byte", 0) * 1e-9;
            f->from_bytes = jnum_or(seg, "from_bytes", 0);
            const char *ln = json_string_value(json_object_get(x, "link"));
            snprintf(f->transport, sizeof f->transport, "%s", ln && *ln ? ln : "shm");
            f->ranks = (int)json_number_value(json_array_get(json_object_get(x, "ranks"), 1));
            found++;
        }
    }
    return found;
}

double comet_model_links_p2p_s(const comet_model_links *l, double bytes)
{
    if (!l)
        return 0;
    if (l->p2p_nseg > 0) {
        int k = 0;
        while (k + 1 < l->p2p_nseg && bytes >= l->p2p_seg_from_bytes[k + 1])
            k++;
        return l->p2p_seg_alpha_s[k] + bytes * l->p2p_seg_beta_s[k];
    }
    return l->p2p_beta_s > 0 ? l->p2p_alpha_s + bytes * l->p2p_beta_s : 0;
}

double comet_model_links_exchange_s(const comet_model_links *l, double bytes)
{
    if (!l || l->xch_nseg <= 0)
        return 0;
    int k = 0;
    while (k + 1 < l->xch_nseg && bytes >= l->xch_seg_from_bytes[k + 1])
        k++;
    return l->xch_seg_alpha_s[k] + bytes * l->xch_seg_beta_s[k];
}

void comet_model__links_from_calibration(const json_t *cal, comet_model_links *l)
{
    /* the machine's own links: shared memory's fits when there are any */
    if (!links_filtered(cal, "shm", l))
        links_filtered(cal, NULL, l);
}

int comet_model_links_for_transport(
    const comet_model_hw *hw, const char *transport, comet_model_links *out)
{
    if (!hw || !out)
        return -EINVAL;
    if (!hw->calibration || !transport || !*transport) {
        *out = hw->links;
        return hw->links.nfits || hw->links.p2p_beta_s > 0 ? 0 : -ENOENT;
    }
    return links_filtered(hw->calibration, transport, out) > 0 ? 0 : -ENOENT;
}

int comet_model_link_is_shm(const char *link)
{
    return !link || !*link || !strcmp(link, "shm");
}

int comet_model_c2c_apart(const double *c2c, size_t n, double floor_ns)
{
    double v[16];
    size_t m = 0;
    if (!c2c || !(floor_ns > 0))
        return 0;
    for (size_t i = 0; i < n && m < 16; i++)
        if (c2c[i] > 0)
            v[m++] = c2c[i];
    if (!m)
        return 0;
    return comet_util_quantile(v, (int)m, 0.5) > COMET_MODEL_APART_FACTOR * floor_ns;
}

int comet_model_record_link(
    const comet_model_hw *hw, const char *link, const double *c2c, size_t n, char *out, size_t len)
{
    if (!hw || !out || !len)
        return -EINVAL;
    const char *base = link && *link ? link : "shm";
    snprintf(out, len, "%s", base);
    if (!comet_model_link_is_shm(base) || !hw->calibration)
        return 0;
    /* the floor calibration classified its own records by */
    double floor_ns = NAN;
    size_t i;
    const json_t *x;
    json_array_foreach(
        json_object_get(json_object_get(hw->calibration, "fits"), "link_states"), i, x)
    {
        const char *l = json_string_value(json_object_get(x, "link"));
        if (l && !strcmp(l, base))
            floor_ns = jnum_or(x, "c2c_floor_ns", NAN);
    }
    if (!comet_model_c2c_apart(c2c, n, floor_ns))
        return 0;
    char apart[64];
    comet_model_links l;
    snprintf(apart, sizeof apart, "%s%s", base, COMET_MODEL_LINK_APART);
    if (links_filtered(hw->calibration, apart, &l) <= 0)
        return 2;
    snprintf(out, len, "%s", apart);
    return 1;
}
