/* Link fits of a profile: point-to-point (piecewise Hockney) and
 * collectives (TRG rows, weighted NNLS, collinearity), with held-out error. */
#include "calibrate_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One timed collective or ping-pong record. */
typedef struct link_pt {
    const char *op, *alg, *link;
    int p;
    double bytes, t;
} link_pt;

static int cmp_pt(const void *a, const void *b)
{
    const link_pt *x = a, *y = b;
    int c = strcmp(x->op, y->op);
    if (!c)
        c = strcmp(x->alg, y->alg);
    if (!c)
        c = strcmp(x->link, y->link);
    if (!c)
        c = (x->bytes > y->bytes) - (x->bytes < y->bytes);
    if (!c)
        c = (x->p > y->p) - (x->p < y->p);
    return c;
}

/* Where MPICH changes its own algorithm for a collective at p ranks, in the
 * records' bytes per rank (0: no switch known). MPICH 4.0.2's defaults (the
 * installed MPICH's `mpivars`; MPIR's intra-communicator "auto" selection,
 * which runs over a TCP netmod without collectives of its own):
 *   MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE = 524288: MPI_Allgather and
 *     MPI_Allgatherv at a power-of-two p run recursive doubling below that
 *     many bytes gathered, a ring at or above it (Allgatherv's ring moves
 *     its blocks in MPIR_CVAR_ALLGATHERV_PIPELINE_MSG_SIZE = 32768-byte
 *     pieces, one message latency each);
 *   MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE = 2048: recursive doubling up to
 *     2048 bytes, reduce-scatter + all-gather (two exchanges of n/2 at p = 2)
 *     above;
 *   MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE = 32768: scattered isend/irecv up to
 *     32768 bytes a destination, pairwise exchanges above. */
static double mpich_switch(const char *op, int p)
{
    if (p < 2)
        return 0;
    if (!strcmp(op, "allgather") || !strcmp(op, "allgatherv"))
        return (p & (p - 1)) == 0 ? 524288.0 / p : 0;
    if (!strcmp(op, "allreduce"))
        return 2049;
    if (!strcmp(op, "alltoall"))
        return 32768.0 * p + 1;
    return 0;
}

/* Size of the first message an algorithm of MPICH's choice sends, per
 * byte of the record's message (p ranks), at sizes where a transport
 * switches protocol (kilobytes: above all-reduce's short size): all-gather
 * (recursive doubling or ring) its whole block, all-reduce its first
 * reduce-scatter half, all-to-all one destination's share. 0: unknown. */
static double first_message(const char *op, int p)
{
    if (!strcmp(op, "allgather") || !strcmp(op, "allgatherv"))
        return 1;
    if (!strcmp(op, "allreduce"))
        return 0.5;
    if (!strcmp(op, "alltoall"))
        return 1.0 / p;
    return 0;
}

/* Bytes a rank sends over the link per byte of the fit row's n (the
 * record's message; all-gathers: the gathered total): all-gather (p-1)/p,
 * all-reduce by reduce-scatter + all-gather 2 (p-1)/p, all-to-all (p-1)/p
 * (nccl-tests' bus-bandwidth factors). 0: unknown. */
static double sent_per_row_byte(const char *op, int p)
{
    const double q = (double)(p - 1) / p;
    if (!strcmp(op, "allgather") || !strcmp(op, "allgatherv") || !strcmp(op, "alltoall"))
        return q;
    if (!strcmp(op, "allreduce"))
        return 2 * q;
    return 0;
}

/* Weighted R^2 (weights 1/y^2, as the pieces') of a piecewise fit. */
static double pw_r2(const comet_calibrate_piecewise *f, const double *key, const double *X,
    const double *y, size_t n, size_t P)
{
    double w = 0, wy = 0, ss = 0, chisq = 0;
    for (size_t i = 0; i < n; i++) {
        w += 1 / (y[i] * y[i]);
        wy += 1 / y[i];
    }
    for (size_t i = 0; i < n; i++) {
        const double e = (comet_calibrate_piecewise_eval(f, key[i], X + i * P) - y[i]) / y[i];
        chisq += e * e;
        ss += (y[i] - wy / w) * (y[i] - wy / w) / (y[i] * y[i]);
    }
    return ss > 0 ? 1 - chisq / ss : 1;
}

/* A piece over a single message size cannot separate alpha from beta:
 * it takes beta from the link's own ping-pong in the protocol regime of
 * the collective's messages (beta_row, per unit of the row's n) and alpha
 * from its points; where that beta alone would exceed the points' time
 * (alpha < 0: the collective moves its bytes faster than the ping-pong's
 * regime, e.g. within a tbf bucket), the largest beta that keeps alpha >= 0:
 * the piece passes through its points either way. */
static void one_size_piece(
    comet_calibrate_lsq *f, const double *X, const double *y, size_t n, size_t P, double beta_row)
{
    double a = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        a += (y[i] - beta_row * X[i * P + 1]) / X[i * P] / (double)n;
        r += y[i] / X[i * P + 1] / (double)n;
    }
    for (size_t j = 0; j < P; j++)
        f->state[j] = j < 2 ? COMET_CALIBRATE_FITTED : COMET_CALIBRATE_ABSENT;
    f->coef[0] = a > 0 ? a : 0;
    f->coef[1] = a > 0 ? beta_row : r;
}

/* A piecewise fit in which no piece straddles a known switch sw[0] <
 * sw[1] < ... (MPICH's algorithm switch, the transport's eager ->
 * rendezvous switch): the points on either side of the last switch are
 * fitted apart (the side below recursively over the other switches), each
 * with the automatic piece search in what pieces remain, and a side above
 * a switch applies from the switch itself, not from its first measured
 * size. Switches with no point on one side are dropped; none: the plain
 * fit. */
static int fit_split(const double *key, const double *X, const double *y, size_t n, size_t P,
    int maxseg, size_t minpts, const double *sw, int nsw, double beta_row,
    comet_calibrate_piecewise *out)
{
    size_t k = 0;
    while (nsw > 0) {
        k = 0;
        while (k < n && key[k] < sw[nsw - 1])
            k++;
        if (k > 0 && k < n && sw[nsw - 1] > 0 && maxseg > nsw)
            break;
        nsw--; /* nothing on one side, or no piece left for it */
    }
    if (nsw == 0)
        return comet_calibrate_fit_piecewise(key, X, y, n, P, maxseg, minpts, out);
    comet_calibrate_piecewise lo, hi;
    /* the upper side keeps a piece for each switch below; a side with few
     * points is one piece (it may be one size) */
    const int few = n - k < 2 * minpts;
    int rc = comet_calibrate_fit_piecewise(
        key + k, X + k * P, y + k, n - k, P, few ? 1 : maxseg - nsw, few ? 1 : minpts, &hi);
    if (rc == 0 && key[k] == key[n - 1] && beta_row > 0 && P >= 2)
        one_size_piece(&hi.seg[0], X + k * P, y + k, n - k, P, beta_row);
    if (rc == 0)
        rc = fit_split(key, X, y, k, P, maxseg - hi.nseg, k < 2 * minpts ? 1 : minpts, sw, nsw - 1,
            beta_row, &lo);
    if (rc)
        return rc;
    *out = lo;
    for (int s = 0; s < hi.nseg; s++) {
        out->seg[lo.nseg + s] = hi.seg[s];
        out->from[lo.nseg + s] = s == 0 ? sw[nsw - 1] : hi.from[s];
    }
    out->nseg = lo.nseg + hi.nseg;
    out->r2 = pw_r2(out, key, X, y, n, P);
    return 0;
}

/* Held-out error of a piecewise fit: distinct keys are dealt into FOLDS
 * folds in size order; each fold is predicted by a fit of the others. */
int cal_pw_heldout(const double *key, const double *X, const double *y, size_t n, size_t p,
    int maxseg, size_t minpts, const double *sw, int nsw, double beta_row, double *errs,
    size_t *nerr)
{
    int rc = 0;
    size_t *fold = malloc(n * sizeof(size_t)), m;
    double *Xt = malloc(n * p * sizeof(double)), *yt = malloc(n * sizeof(double)),
           *kt = malloc(n * sizeof(double));
    *nerr = 0;
    if (!fold || !Xt || !yt || !kt) {
        rc = -ENOMEM;
        goto fail;
    }
    for (size_t i = 0, d = 0; i < n; i++) {
        if (i > 0 && key[i] > key[i - 1])
            d++;
        fold[i] = d % CAL_FOLDS;
    }
    for (size_t f = 0; f < CAL_FOLDS; f++) {
        m = 0;
        for (size_t i = 0; i < n; i++)
            if (fold[i] != f) {
                kt[m] = key[i];
                yt[m] = y[i];
                memcpy(Xt + m * p, X + i * p, p * sizeof(double));
                m++;
            }
        if (m == n)
            continue;
        comet_calibrate_piecewise pw;
        if (fit_split(kt, Xt, yt, m, p, maxseg, minpts, sw, nsw, beta_row, &pw) != 0)
            continue; /* too few points left for this fold */
        for (size_t i = 0; i < n; i++)
            if (fold[i] == f)
                errs[(*nerr)++]
                    = (comet_calibrate_piecewise_eval(&pw, key[i], X + i * p) - y[i]) / y[i];
    }
fail:
    free(fold);
    free(Xt);
    free(yt);
    free(kt);
    return rc;
}

static const char *const pnames[3] = { "alpha", "beta", "gamma" };

/* Text of the identifiable combination of a merged fit, e.g. "beta + 0.5 gamma". */
static void combo_text(const comet_calibrate_lsq *f, size_t j, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%s", pnames[j]);
    for (size_t k = 0; k < f->p && o < len; k++)
        if (f->state[k] == COMET_CALIBRATE_MERGED && f->owner[k] == (int)j)
            o += (size_t)snprintf(buf + o, len - o, " + %.4g %s", f->ratio[k], pnames[k]);
}

static json_t *segment_json(const comet_calibrate_lsq *f, double from, int *collinear)
{
    static const char *const keys[3] = { "alpha_us", "beta_ns_per_byte", "gamma_ns_per_byte" };
    static const double unit[3] = { 1e6, 1e9, 1e9 };
    json_t *s = json_object(), *ident = json_array();
    json_object_set_new(s, "from_bytes", json_real(from));
    for (size_t j = 0; j < f->p; j++) {
        if (f->state[j] == COMET_CALIBRATE_FITTED) {
            char c[96];
            combo_text(f, j, c, sizeof c);
            json_object_set_new(s, keys[j], json_real(f->coef[j] * unit[j]));
            if (strcmp(c, pnames[j])) { /* a merged combination */
                json_array_append_new(ident, json_string(c));
                *collinear = 1;
            }
        } else
            json_object_set_new(s, keys[j], json_null());
    }
    double beta = f->state[1] == COMET_CALIBRATE_FITTED ? f->coef[1] : 0;
    json_object_set_new(s, "bandwidth_GBs", beta > 0 ? json_real(1e-9 / beta) : json_null());
    if (json_array_size(ident))
        json_object_set_new(s, "identifiable_only", ident);
    else
        json_decref(ident);
    json_object_set_new(s, "r2", cal_jreal(f->r2));
    json_object_set_new(s, "points", json_integer((json_int_t)f->n));
    json_object_set_new(s, "rank", json_integer(f->rank));
    return s;
}

/* The breakpoint with the largest jump: the upper piece's prediction at the
 * breakpoint over the lower piece's (eager -> rendezvous shows as a step). */
static double protocol_switch(
    const comet_calibrate_piecewise *pw, const double *X, const double *key, size_t m, size_t P)
{
    double best = 0, bp = 0;
    for (int s = 1; s < pw->nseg; s++) {
        size_t i = 0;
        while (i < m && key[i] < pw->from[s])
            i++;
        if (i >= m)
            continue;
        double lo = comet_calibrate_lsq_eval(&pw->seg[s - 1], X + P * i),
               hi = comet_calibrate_lsq_eval(&pw->seg[s], X + P * i);
        if (lo > 0 && hi / lo > best) {
            best = hi / lo;
            bp = pw->from[s];
        }
    }
    return bp;
}

/* The joint fit of one link over its forced-algorithm collectives at
 * messages >= thr (the link's protocol switch: the bandwidth regime). */
static json_t *joint_fit(const link_pt *pt, size_t np, const char *link, double thr, double *X,
    double *y, double *he, cal_ctx *cx)
{
    size_t m = 0, nh = 0;
    int pmin = 1 << 30, pmax = 0;
    const link_pt *last = NULL;
    json_t *algs = json_array();
    /* each point's algorithm (index into algs) and held-out error */
    int *alg_of = malloc((np + 1) * sizeof(int));
    double *perr = malloc((np + 1) * sizeof(double));
    if (!alg_of || !perr) {
        free(alg_of);
        free(perr);
        json_decref(algs);
        return NULL;
    }
    for (size_t i = 0; i < np; i++) {
        if (strcmp(pt[i].link, link) || !strcmp(pt[i].op, "pingpong")
            || !strcmp(pt[i].op, "exchange") || pt[i].bytes < thr)
            continue;
        if (comet_calibrate_trg_row(pt[i].op, pt[i].alg, pt[i].bytes, pt[i].p, X + 3 * m, NULL)
            != 1)
            continue;
        if (!last || strcmp(last->op, pt[i].op) || strcmp(last->alg, pt[i].alg)) {
            char name[96];
            snprintf(name, sizeof name, "%s/%s", pt[i].op, pt[i].alg);
            json_array_append_new(algs, json_string(name));
        }
        alg_of[m] = (int)json_array_size(algs) - 1;
        perr[m] = NAN;
        y[m++] = pt[i].t;
        pmin = pt[i].p < pmin ? pt[i].p : pmin;
        pmax = pt[i].p > pmax ? pt[i].p : pmax;
        last = &pt[i];
    }
    comet_calibrate_lsq f;
    if (m < 6 || comet_calibrate_nnls(X, y, NULL, m, 3, &f) != 0) {
        json_decref(algs);
        free(alg_of);
        free(perr);
        return NULL;
    }
    /* held-out: every 4th point predicted by a fit of the others */
    for (size_t fo = 0; fo < CAL_FOLDS; fo++) {
        double *Xt = malloc(m * 3 * sizeof(double)), *yt = malloc(m * sizeof(double));
        size_t k = 0;
        comet_calibrate_lsq g;
        if (Xt && yt) {
            for (size_t i = 0; i < m; i++)
                if (i % CAL_FOLDS != fo) {
                    memcpy(Xt + 3 * k, X + 3 * i, 3 * sizeof(double));
                    yt[k++] = y[i];
                }
            if (k >= 3 && comet_calibrate_nnls(Xt, yt, NULL, k, 3, &g) == 0)
                for (size_t i = fo; i < m; i += CAL_FOLDS)
                    he[nh++] = perr[i] = (comet_calibrate_lsq_eval(&g, X + 3 * i) - y[i]) / y[i];
        }
        free(Xt);
        free(yt);
    }
    int collinear = 0;
    json_t *seg = segment_json(&f, thr, &collinear);
    if (collinear)
        cx->collinear = 1;
    /* per algorithm: the joint model's held-out error on that algorithm's
     * points, and whether it predicts it (median within 10%): where it
     * does not, only that algorithm's own fit (collectives[]) stands */
    json_t *per = json_array(), *cannot = json_array();
    for (size_t a = 0; a < json_array_size(algs); a++) {
        double e[256];
        size_t ne = 0;
        for (size_t i = 0; i < m && ne < 256; i++)
            if (alg_of[i] == (int)a && isfinite(perr[i]))
                e[ne++] = perr[i];
        json_t *ej = cal_err_json(e, ne, "the joint fit's held-out points of this algorithm");
        const double med = ne ? comet_util_jnum(ej, "median_rel_err") : NAN;
        const int ok = ne > 0 && isfinite(med) && med <= 0.10;
        json_array_append_new(per,
            json_pack("{s:O,s:o,s:b}", "algorithm", json_array_get(algs, a), "heldout", ej,
                "predicts", ok));
        if (!ok)
            json_array_append(cannot, json_array_get(algs, a));
    }
    free(alg_of);
    free(perr);
    return json_pack("{s:s,s:[i,i],s:o,s:f,s:o,s:o,s:o,s:o,s:s}", "link", link, "ranks", pmin, pmax,
        "algorithms", algs, "from_bytes", thr, "fit", seg, "heldout",
        cal_err_json(he, nh, "every 4th point predicted by a fit of the others"), "per_algorithm",
        per, "cannot_predict", cannot, "note",
        "messages at or above the link's protocol switch (from its ping-pong fit); weights "
        "1/T^2, non-negative; per_algorithm: where the joint model's median held-out error "
        "exceeds 10% it does not predict that algorithm (its own fit stands)");
}

int cal_fit_links(cal_ctx *cx, const comet_results_record *recs, size_t n, char *err, size_t errlen)
{
    int rc = 0;
    link_pt *pt = malloc((n + 1) * sizeof(link_pt));
    double *X = NULL, *y = NULL, *key = NULL, *he = NULL, *res = NULL;
    json_t *p2p = json_array(), *coll = json_array(), *joint = json_array(), *xch = json_array();
    size_t np = 0, nsw = 0;
    const char *sw_link[8];
    double sw_bytes[8];
    if (!pt) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    /* the core placement of the shared-memory records: the floor is the
     * lowest core-to-core reading of any record of that link (collectives,
     * ping-pong and the distributed kernels, which validate classifies by
     * the same floor); a record above twice it ran with its cores apart and
     * belongs to the link shm/apart */
    double floor_ns = NAN;
    int n_read = 0, n_apart = 0;
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if ((r->kind == COMET_RESULTS_P2P || r->kind == COMET_RESULTS_COLLECTIVE
                || r->kind == COMET_RESULTS_DIST_KERNEL)
            && comet_model_link_is_shm(r->link))
            for (size_t c = 0; c < r->nc2c && c < COMET_RESULTS_C2C_MAX; c++)
                if (r->c2c_ns[c] > 0)
                    floor_ns = fmin(floor_ns, r->c2c_ns[c]);
    }
    for (size_t i = 0; i < n; i++) {
        const comet_results_record *r = &recs[i];
        if (r->kind != COMET_RESULTS_P2P && r->kind != COMET_RESULTS_COLLECTIVE)
            continue;
        if (r->valid == 0)
            continue; /* a collective whose result was wrong is not a timing */
        link_pt q = { r->op, r->variant, r->link, r->ranks, r->shape.bytes, r->stats.median_s };
        if (comet_model_link_is_shm(r->link) && r->nc2c > 0) {
            n_read++;
            if (comet_model_c2c_apart(r->c2c_ns, r->nc2c, floor_ns)) {
                q.link = "shm" COMET_MODEL_LINK_APART;
                n_apart++;
            }
        }
        if (r->kind == COMET_RESULTS_P2P) /* ping-pong, or the paired exchange */
            q.op = strcmp(r->op, "exchange") ? "pingpong" : "exchange";
        if (!*q.alg)
            q.alg = "auto";
        if (!*q.link)
            q.link = "unknown";
        if (q.p < 1)
            q.p = 2;
        if (!(q.bytes >= 0) || !(q.t > 0))
            continue;
        pt[np++] = q;
    }
    qsort(pt, np, sizeof *pt, cmp_pt);
    X = malloc((np + 1) * 3 * sizeof(double));
    y = malloc((np + 1) * sizeof(double));
    key = malloc((np + 1) * sizeof(double));
    he = malloc((np + 1) * sizeof(double));
    res = malloc((np + 1) * sizeof(double));
    cx->coll_err = malloc((np + 1) * sizeof(double));
    if (!X || !y || !key || !he || !res || !cx->coll_err) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "calibrate: out of memory");
        goto fail;
    }
    /* the transport's eager -> rendezvous switch of each TCP link, from its
     * ping-pong alone: between the last size below the step and the first
     * at or above it (their geometric middle) */
    const char *tr_link[8];
    double tr_bytes[8], tr_beta[8];
    int ntr = 0;
    for (size_t a = 0; a < np && ntr < 8;) {
        size_t b = a;
        while (b < np && !strcmp(pt[b].op, pt[a].op) && !strcmp(pt[b].alg, pt[a].alg)
            && !strcmp(pt[b].link, pt[a].link))
            b++;
        comet_calibrate_piecewise pw;
        const size_t m = b - a;
        if (!strcmp(pt[a].op, "pingpong") && !strncmp(pt[a].link, "tcp:", 4) && m >= 3) {
            for (size_t i = 0; i < m; i++) {
                X[2 * i] = 1;
                X[2 * i + 1] = pt[a + i].bytes;
                key[i] = pt[a + i].bytes;
                y[i] = pt[a + i].t;
            }
            if (comet_calibrate_fit_piecewise(key, X, y, m, 2, COMET_CALIBRATE_MAXSEG, 3, &pw)
                == 0) {
                const double bp = protocol_switch(&pw, X, key, m, 2);
                double lo = 0;
                for (size_t i = 0; i < m && key[i] < bp; i++)
                    lo = key[i];
                const comet_calibrate_lsq *up = &pw.seg[pw.nseg - 1];
                if (bp > 0 && lo > 0) {
                    tr_link[ntr] = pt[a].link;
                    /* seconds a byte above the switch (the wire's, as the
                     * largest messages see it) */
                    tr_beta[ntr] = up->state[1] == COMET_CALIBRATE_FITTED ? up->coef[1] : 0;
                    tr_bytes[ntr++] = sqrt(lo * bp);
                }
            }
        }
        a = b;
    }
    for (size_t a = 0; a < np;) {
        size_t b = a;
        while (b < np && !strcmp(pt[b].op, pt[a].op) && !strcmp(pt[b].alg, pt[a].alg)
            && !strcmp(pt[b].link, pt[a].link))
            b++;
        /* the exchange (two messages at once, opposite ways: bench
         * collectives --colls exchange) fitted as ping-pong is, Hockney by
         * pieces */
        const int is_xch = !strcmp(pt[a].op, "exchange");
        const int is_p2p = !strcmp(pt[a].op, "pingpong") || is_xch;
        const char *formula = NULL;
        int known = 0, pmin = pt[a].p, pmax = pt[a].p;
        size_t m = b - a;
        for (size_t i = 0; i < m; i++) {
            known = comet_calibrate_trg_row(
                pt[a + i].op, pt[a + i].alg, pt[a + i].bytes, pt[a + i].p, X + 3 * i, &formula);
            key[i] = pt[a + i].bytes;
            y[i] = pt[a + i].t;
            pmin = pt[a + i].p < pmin ? pt[a + i].p : pmin;
            pmax = pt[a + i].p > pmax ? pt[a + i].p : pmax;
        }
        if (known < 0 || m < 3) {
            a = b;
            continue;
        }
        comet_calibrate_piecewise pw;
        const size_t P = is_p2p ? 2 : 3; /* ping-pong has no reduction term */
        double *Xp = X;
        if (is_p2p) /* compact to two columns */
            for (size_t i = 0; i < m; i++) {
                Xp[2 * i] = X[3 * i];
                Xp[2 * i + 1] = X[3 * i + 1];
            }
        /* MPICH's own choice over a TCP link at one rank count: no piece
         * across its algorithm switch */
        /* MPICH's own choice over a TCP link at one rank count: no piece
         * across its algorithm switch, nor across the size at which the
         * algorithm's first message crosses the link's eager -> rendezvous
         * switch (from the link's ping-pong) */
        double sw[2] = { 0, 0 }, beta_row = 0;
        int nsw = 0;
        if (!is_p2p && !strcmp(pt[a].alg, "auto") && !strncmp(pt[a].link, "tcp:", 4)
            && pmin == pmax) {
            const double alg = mpich_switch(pt[a].op, pmin);
            double tr = 0;
            for (int k = 0; k < ntr; k++)
                if (!strcmp(tr_link[k], pt[a].link)) {
                    const double f = first_message(pt[a].op, pmin);
                    tr = f > 0 ? tr_bytes[k] / f : 0;
                    beta_row = tr_beta[k] * sent_per_row_byte(pt[a].op, pmin);
                }
            if (alg > 0)
                sw[nsw++] = alg;
            if (tr > 0)
                sw[nsw++] = tr;
            if (nsw == 2 && sw[0] > sw[1]) {
                sw[0] = tr;
                sw[1] = alg;
            }
        }
        if (fit_split(key, Xp, y, m, P, COMET_CALIBRATE_MAXSEG, 3, sw, nsw, beta_row, &pw) != 0) {
            a = b;
            continue;
        }
        size_t nh = 0;
        if ((rc = cal_pw_heldout(
                 key, Xp, y, m, P, COMET_CALIBRATE_MAXSEG, 3, sw, nsw, beta_row, he, &nh))
            != 0) {
            rc = comet_util_seterr(err, errlen, rc, "calibrate: out of memory");
            goto fail;
        }
        for (size_t i = 0; i < m; i++)
            res[i] = (comet_calibrate_piecewise_eval(&pw, key[i], Xp + P * i) - y[i]) / y[i];
        int collinear = 0;
        json_t *segs = json_array();
        for (int s = 0; s < pw.nseg; s++)
            json_array_append_new(segs, segment_json(&pw.seg[s], pw.from[s], &collinear));
        json_t *fit = json_object();
        json_object_set_new(fit, "op", json_string(pt[a].op));
        if (!is_p2p)
            json_object_set_new(fit, "algorithm", json_string(pt[a].alg));
        json_object_set_new(fit, "link", json_string(pt[a].link));
        json_object_set_new(fit, "ranks", json_pack("[i,i]", pmin, pmax));
        json_object_set_new(fit, "formula", json_string(formula));
        json_object_set_new(fit, "formula_known", json_boolean(known));
        json_object_set_new(fit, "weights", json_string("1/T^2"));
        json_object_set_new(fit, "segments", segs);
        /* the protocol switch: the breakpoint where the time jumps most */
        double bp = protocol_switch(&pw, Xp, key, m, P);
        json_t *bps = json_array();
        for (int s = 1; s < pw.nseg; s++)
            json_array_append_new(bps, json_real(pw.from[s]));
        json_object_set_new(fit, "breakpoints_bytes", bps);
        json_object_set_new(fit, "protocol_switch_bytes", bp > 0 ? json_real(bp) : json_null());
        if (nsw > 0) { /* the known switches no segment crosses */
            json_t *ks = json_array();
            for (int k = 0; k < nsw; k++)
                json_array_append_new(ks, json_real(sw[k]));
            json_object_set_new(fit, "switches_bytes", ks);
        }
        json_object_set_new(fit, "r2", cal_jreal(pw.r2));
        json_object_set_new(fit, "residuals", cal_residuals_json(key, res, m));
        json_object_set_new(fit, "heldout", cal_err_json(he, nh, "4-fold over message sizes"));
        if (collinear) {
            cx->collinear = 1;
            json_object_set_new(fit, "collinear",
                json_string(pmin == pmax
                        ? "at a single rank count some terms have proportional coefficients: "
                          "only the combinations in identifiable_only are fitted (separating "
                          "them needs several rank counts, p >= 4)"
                        : "some terms have proportional coefficients over the rank counts "
                          "measured: only the combinations in identifiable_only are fitted"));
        }
        if (is_xch) {
            json_array_append_new(xch, fit);
        } else if (is_p2p) {
            if (nsw < 8) {
                sw_link[nsw] = pt[a].link;
                sw_bytes[nsw++] = bp;
            }
            json_array_append_new(p2p, fit);
            if (cx->sum.p2p_fits++ == 0) {
                const comet_calibrate_lsq *lo = &pw.seg[0], *hi = &pw.seg[pw.nseg - 1];
                cx->p2p_alpha = lo->coef[0];
                cx->p2p_beta = hi->state[1] == COMET_CALIBRATE_FITTED ? hi->coef[1] : 0;
                cx->sum.p2p_alpha_us = lo->coef[0] * 1e6;
                cx->sum.p2p_bw_gbs = cx->p2p_beta > 0 ? 1e-9 / cx->p2p_beta : 0;
                cx->sum.p2p_breakpoint = bp;
            }
        } else {
            json_array_append_new(coll, fit);
            cx->sum.coll_fits++;
            memcpy(cx->coll_err + cx->ncoll_err, he, nh * sizeof(double));
            cx->ncoll_err += nh;
        }
        a = b;
    }
    /* one alpha, beta, gamma per link from every forced algorithm together:
     * algorithms weigh beta and gamma differently (at p = 2 recursive
     * doubling n (beta + gamma), Rabenseifner n (beta + gamma / 2), bcast
     * n beta), so together they separate what each alone cannot */
    for (size_t a = 0; a < np;) {
        size_t b = a;
        while (b < np && !strcmp(pt[b].link, pt[a].link))
            b++;
        int done = 0; /* pt is sorted by op first: a link recurs per op */
        for (size_t k = 0; k < a && !done; k++)
            done = !strcmp(pt[k].link, pt[a].link);
        if (!done) {
            double thr = 0;
            for (size_t k = 0; k < nsw; k++)
                if (!strcmp(sw_link[k], pt[a].link))
                    thr = sw_bytes[k];
            json_t *jf = joint_fit(pt, np, pt[a].link, thr, X, y, he, cx);
            if (jf)
                json_array_append_new(joint, jf);
        }
        a = b;
    }
    json_object_set_new(cx->fits, "link_states",
        n_read ? json_pack("[{s:s,s:f,s:f,s:i,s:i,s:s}]", "link", "shm", "c2c_floor_ns", floor_ns,
            "apart_above_ns", COMET_MODEL_APART_FACTOR * floor_ns, "records", n_read,
            "records_apart", n_apart, "note",
            "records whose median core-to-core reading lies above apart_above_ns ran "
            "with their cores on different caches: they are fitted as the link "
            "shm/apart")
               : json_string("no core-to-core readings in the collective records"));
    json_object_set_new(cx->fits, "link_joint",
        json_array_size(joint) ? json_incref(joint)
                               : json_string("no forced-algorithm collectives measured"));
    json_object_set_new(cx->fits, "p2p",
        json_array_size(p2p) ? json_incref(p2p)
                             : json_string("not measured (run 'comet bench collectives')"));
    json_object_set_new(cx->fits, "collectives",
        json_array_size(coll) ? json_incref(coll)
                              : json_string("not measured (run 'comet bench collectives')"));
    if (json_array_size(xch)) /* only where measured: profiles without it unchanged */
        json_object_set_new(cx->fits, "exchange", json_incref(xch));
fail:
    json_decref(p2p);
    json_decref(coll);
    json_decref(joint);
    json_decref(xch);
    free(pt);
    free(X);
    free(y);
    free(key);
    free(he);
    free(res);
    return rc;
}
