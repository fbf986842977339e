/* Exhaustive search over system configurations, with each distinct layer
 * problem costed once, and the result as JSON (schema comet.system.v2). */
#include "comet_system.h"
#include "comet_util.h"
#include "system_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layer costs depend only on these; the pipeline and data-parallel
 * degrees, interleaving and order (beyond the TP group's stride) do not. */
typedef struct lkey {
    int tp, tp_inner, mb, sp, rec, exec, pp, dp, v; /* pp, dp, v: dataflow (weights on chip) */
    int cold; /* sys_cold_step: the step's operands read from DRAM at the cold rates */
} lkey;

typedef struct lcache {
    int n, cap; /* entries, slots (a power of two) */
    lkey *keys;
    sys_layer_out **vals; /* NULL: empty slot */
} lcache;

static unsigned lhash(const lkey *k)
{
    unsigned h = 2166136261u;
    const int *p = (const int *)k;
    for (size_t i = 0; i < sizeof *k / sizeof(int); i++)
        h = (h ^ (unsigned)p[i]) * 16777619u;
    return h;
}

static int cache_grow(lcache *lc)
{
    lcache nc = { 0, lc->cap ? 2 * lc->cap : 1024, NULL, NULL };
    nc.keys = calloc((size_t)nc.cap, sizeof *nc.keys);
    nc.vals = calloc((size_t)nc.cap, sizeof *nc.vals);
    if (!nc.keys || !nc.vals) {
        free(nc.keys);
        free(nc.vals);
        return -ENOMEM;
    }
    for (int i = 0; i < lc->cap; i++)
        if (lc->vals[i]) {
            unsigned s = lhash(&lc->keys[i]) & (unsigned)(nc.cap - 1);
            while (nc.vals[s])
                s = (s + 1) & (unsigned)(nc.cap - 1);
            nc.keys[s] = lc->keys[i];
            nc.vals[s] = lc->vals[i];
            nc.n++;
        }
    free(lc->keys);
    free(lc->vals);
    *lc = nc;
    return 0;
}

static const sys_layer_out *cache_get(lcache *lc, const comet_system *sys,
    const comet_system_llm *m, const comet_system_opts *o, const comet_system_config *c,
    int tp_inner)
{
    lkey k;
    memset(&k, 0, sizeof k);
    k.tp = c->tp;
    k.tp_inner = tp_inner;
    k.mb = c->microbatch;
    k.sp = c->tp > 1 && c->seq_parallel > 0;
    k.rec = (int)c->recompute;
    k.exec = (int)c->exec;
    k.pp = c->exec == COMET_SYSTEM_EXEC_DATAFLOW ? c->pp : 0;
    k.dp = c->exec == COMET_SYSTEM_EXEC_DATAFLOW ? c->dp : 0;
    k.v = c->exec == COMET_SYSTEM_EXEC_DATAFLOW ? c->interleave : 0;
    k.cold = sys_cold_step(sys, m, o, c);
    if (2 * (lc->n + 1) > lc->cap && cache_grow(lc))
        return NULL;
    unsigned s = lhash(&k) & (unsigned)(lc->cap - 1);
    while (lc->vals[s]) {
        if (!memcmp(&lc->keys[s], &k, sizeof k))
            return lc->vals[s];
        s = (s + 1) & (unsigned)(lc->cap - 1);
    }
    sys_layer_out *v = malloc(sizeof *v);
    if (!v)
        return NULL;
    if (!sys_layer_for(sys, m, o, c, v)) {
        free(v);
        return NULL; /* the configuration cannot run: nothing to keep */
    }
    lc->keys[s] = k;
    lc->vals[s] = v;
    lc->n++;
    return v;
}

static void cache_free(lcache *lc)
{
    for (int i = 0; i < lc->cap; i++)
        free(lc->vals[i]);
    free(lc->keys);
    free(lc->vals);
}

static int divisors(int n, int max, int *out, int cap)
{
    int k = 0;
    for (int d = 1; d <= n && d <= max && k < cap; d++)
        if (n % d == 0)
            out[k++] = d;
    return k;
}

/* Adds a configuration to the time-cost Pareto set (the cost of the chips
 * it uses): dominated points leave, the set stays sorted by cost. */
static void pareto_add(
    comet_system_space *sp, const comet_system *sys, const comet_system_result *r)
{
    const int used = r->cfg.tp * r->cfg.pp * r->cfg.dp;
    const double cost = r->cost_usd * used / sys->chips;
    if (!isfinite(cost))
        return;
    for (int i = 0; i < sp->npareto; i++) {
        const comet_system_point *q = &sp->pareto[i];
        if (q->cost_usd <= cost && q->step_s <= r->step_s)
            return; /* dominated */
    }
    int n = 0;
    for (int i = 0; i < sp->npareto; i++) {
        const comet_system_point *q = &sp->pareto[i];
        if (!(cost <= q->cost_usd && r->step_s <= q->step_s))
            sp->pareto[n++] = *q;
    }
    sp->npareto = n;
    if (n == COMET_SYSTEM_MAX_PARETO)
        return; /* full: keep the points found first */
    int i = n;
    while (i > 0 && sp->pareto[i - 1].cost_usd > cost) {
        sp->pareto[i] = sp->pareto[i - 1];
        i--;
    }
    sp->pareto[i].cfg = r->cfg;
    sp->pareto[i].chips_used = used;
    sp->pareto[i].step_s = r->step_s;
    sp->pareto[i].cost_usd = cost;
    sp->npareto++;
}

/* 1 if an earlier order of perms places the parallelisms of degree > 1 in
 * the same sequence as order q. */
static int order_repeats(const int perms[6][3], int q, int tp, int pp, int dp)
{
    const int deg[3] = { tp, pp, dp };
    int a[3], na = 0;
    for (int i = 0; i < 3; i++)
        if (deg[perms[q][i]] > 1)
            a[na++] = perms[q][i];
    for (int e = 0; e < q; e++) {
        int b[3], nb = 0;
        for (int i = 0; i < 3; i++)
            if (deg[perms[e][i]] > 1)
                b[nb++] = perms[e][i];
        if (na == nb && !memcmp(a, b, (size_t)na * sizeof a[0]))
            return 1;
    }
    return 0;
}

/* Keeps best[] sorted by step time, at most top entries. */
static void keep(comet_system_result *best, int *n, int top, const comet_system_result *r)
{
    if (*n == top && r->step_s >= best[top - 1].step_s)
        return;
    int i = *n < top ? (*n)++ : top - 1;
    while (i > 0 && best[i - 1].step_s > r->step_s) {
        best[i] = best[i - 1];
        i--;
    }
    best[i] = *r;
}

int comet_system_explore(const comet_system *sys, const comet_system_llm *m,
    const comet_system_opts *o, int top, comet_system_result *best, comet_system_space *space)
{
    static const int perms[6][3]
        = { { 0, 2, 1 }, { 0, 1, 2 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
    const double t0 = comet_util_now();
    const int B = o->batch > 0 ? o->batch : m->global_batch;
    const int train = o->phase == COMET_SYSTEM_TRAIN;
    int tps[64], pps[64], mbs[256], nkept = 0;
    lcache lc = { 0 };
    comet_system_result *r = malloc(sizeof *r);
    sys_layer_out *scratch = malloc(sizeof *scratch);
    memset(space, 0, sizeof *space);
    if (top < 1 || !r || !scratch) {
        free(r);
        free(scratch);
        return -EINVAL;
    }
    const int ntp = divisors(m->heads, sys->chips, tps, 64);
    /* stage counts that divide the layers (with the embedding and the head
     * as slots, the layers and those two) */
    const int npp = divisors(m->layers + (o->pp_embed_slots ? 2 : 0), sys->chips, pps, 64);
    comet_util_progress prog;
    comet_util_progress_start(&prog, "explore", (size_t)ntp);
    for (int a = 0; a < ntp; a++) {
        comet_util_progress_step(&prog, 1, NULL);
        for (int bpp = 0; bpp < npp; bpp++) {
            const int tp = tps[a], pp = pps[bpp];
            if (tp * pp > sys->chips || (o->tp > 0 && tp != o->tp) || (o->pp > 0 && pp != o->pp))
                continue;
            for (int dp = 1; dp * tp * pp <= sys->chips; dp++) {
                if (B % dp || (o->dp > 0 && dp != o->dp))
                    continue;
                int nmb = o->microbatch > 0 ? 1 : divisors(B / dp, B / dp, mbs, 256);
                if (o->microbatch > 0)
                    mbs[0] = o->microbatch;
                const int Ls = m->layers / pp;
                for (int im = 0; im < nmb; im++) {
                    const int vmax = train && pp > 1 ? (o->interleave > 8 ? o->interleave : 8) : 1;
                    for (int v = 1; v <= vmax; v++) {
                        if (Ls % v || (o->interleave > 0 && v != o->interleave))
                            continue;
                        for (int rec = 0; rec < 3; rec++) {
                            if (o->recompute >= 0 ? rec != o->recompute : (!train && rec))
                                continue;
                            for (int sp = 0; sp < 2; sp++) {
                                if (o->seq_parallel >= 0 ? sp != o->seq_parallel : (sp && tp == 1))
                                    continue;
                                for (int ex = 0; ex < 2; ex++) {
                                    if ((o->exec >= 0 && ex != o->exec)
                                        || (sys->hw.execution && !(sys->hw.execution & (1 << ex))))
                                        continue; /* pinned, or not what the chip runs */
                                    /* orders: only where a level holds more than one
                                     * parallelism does it matter; skip repeats */
                                    const int np = o->order_pinned || sys->nlevels < 2 ? 1 : 6;
                                    for (int q = 0; q < np; q++) {
                                        /* orders that differ only where a degree is 1
                                         * place the same groups: one of them */
                                        if (!o->order_pinned && order_repeats(perms, q, tp, pp, dp))
                                            continue;
                                        comet_system_config c;
                                        memset(&c, 0, sizeof c);
                                        c.tp = tp;
                                        c.pp = pp;
                                        c.dp = dp;
                                        c.interleave = v;
                                        c.microbatch = mbs[im];
                                        memcpy(c.order, o->order_pinned ? o->order : perms[q],
                                            sizeof c.order);
                                        c.recompute = (comet_system_recompute)rec;
                                        c.seq_parallel = sp;
                                        c.exec = (comet_system_exec)ex;
                                        int deg[3] = { tp, pp, dp }, stride = 1, tpin = 1;
                                        for (int i = 0; i < 3; i++) {
                                            if (c.order[i] == COMET_SYSTEM_TP)
                                                tpin = stride;
                                            stride *= deg[c.order[i]];
                                        }
                                        const sys_layer_out *lo
                                            = cache_get(&lc, sys, m, o, &c, tpin);
                                        /* ZeRO stages: searched where data
                                         * parallelism trains, else pinned */
                                        const int z0 = o->zero >= 0 ? o->zero : 0,
                                                  z1 = o->zero >= 0 ? o->zero
                                            : train && dp > 1       ? 3
                                                                    : 0;
                                        for (int z = z0; z <= z1; z++) {
                                            c.zero = z;
                                            space->configs += 1;
                                            if (!lo)
                                                continue;
                                            if (sys_eval_cached(sys, m, o, &c, r, lo, scratch) < 0)
                                                continue;
                                            if (!r->feasible) {
                                                memcpy(space->refused, r->reason,
                                                    sizeof space->refused);
                                                continue;
                                            }
                                            space->feasible += 1;
                                            keep(best, &nkept, top, r);
                                            pareto_add(space, sys, r);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    comet_util_progress_end(&prog);
    cache_free(&lc);
    free(r);
    free(scratch);
    /* the request figure (decode with output tokens) for the configurations kept */
    for (int i = 0; i < nkept; i++)
        sys_fill_request(sys, m, o, &best[i].cfg, &best[i]);
    space->seconds = comet_util_now() - t0;
    space->configs_per_s = space->seconds > 0 ? space->configs / space->seconds : 0;
    return nkept;
}

static json_t *num_or_null(double x)
{
    return isfinite(x) ? json_real(x) : json_null();
}

json_t *comet_system_result_json(const comet_system_result *r)
{
    static const char *const pn[3] = { "tp", "pp", "dp" };
    json_t *j = json_object();
    json_object_set_new(j, "feasible", json_boolean(r->feasible));
    if (!r->feasible) {
        json_object_set_new(j, "reason", json_string(r->reason));
    }
    const comet_system_config *c = &r->cfg;
    char order[16];
    snprintf(order, sizeof order, "%s-%s-%s", pn[c->order[0]], pn[c->order[1]], pn[c->order[2]]);
    json_object_set_new(j, "parallel",
        json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:b}", "tp", c->tp, "pp", c->pp, "dp", c->dp,
            "interleave", c->interleave, "microbatch", c->microbatch, "zero", c->zero, "order",
            order, "seq_parallel", c->seq_parallel > 0));
    json_object_set_new(j, "recompute", json_string(comet_system_recompute_name(c->recompute)));
    json_object_set_new(j, "execution", json_string(comet_system_exec_name(c->exec)));
    if (!r->feasible)
        return j;
    json_object_set_new(j, "step_s", json_real(r->step_s));
    json_object_set_new(j, "bound_s", json_real(r->bound_s));
    if (r->per_token_s > 0)
        json_object_set_new(j, "per_token_s", json_real(r->per_token_s));
    if (r->request_s != 0) {
        json_object_set_new(j, "request_s", num_or_null(r->request_s));
        json_object_set_new(j, "request_prefill_s", json_real(r->request_prefill_s));
    }
    json_object_set_new(j, "tokens_per_s", json_real(r->tokens_per_s));
    json_object_set_new(j, "mfu", json_real(r->mfu));
    json_object_set_new(j, "model_flops", json_real(r->model_flops));
    json_object_set_new(j, "breakdown_s",
        json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "compute", r->breakdown.compute_s, "memory",
            r->breakdown.memory_s, "tp_network", r->breakdown.tp_s, "pp_network", r->breakdown.pp_s,
            "dp_network", r->breakdown.dp_s, "bubble", r->breakdown.bubble_s, "recompute",
            r->breakdown.recompute_s, "optimizer", r->breakdown.optimizer_s));
    json_object_set_new(j, "memory_per_chip_bytes", json_real(r->mem.total));
    json_object_set_new(j, "memory_per_chip",
        json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "weights", r->mem.weights, "gradients",
            r->mem.grads, "optimizer", r->mem.optimizer, "activations", r->mem.activations,
            "working", r->mem.working, "kv_cache", r->mem.kv_cache, "total", r->mem.total,
            "capacity", r->mem.capacity));
    json_object_set_new(j, "cost_usd", num_or_null(r->cost_usd));
    json_object_set_new(j, "power_w", num_or_null(r->power_w));
    json_t *pf = json_array(), *pb = json_array();
    char buf[1024];
    for (int i = 0; i < r->parts[0].n; i++)
        json_array_append_new(
            pf, json_string(comet_system_part_str(&r->parts[0], i, buf, sizeof buf)));
    for (int i = 0; i < r->parts[1].n; i++)
        json_array_append_new(
            pb, json_string(comet_system_part_str(&r->parts[1], i, buf, sizeof buf)));
    json_object_set_new(j, "partitions", json_pack("{s:o,s:o}", "forward", pf, "backward", pb));
    json_t *dt[2];
    for (int pass = 0; pass < 2; pass++) {
        const comet_system_parts *p = &r->parts[pass];
        dt[pass] = json_array();
        for (int i = 0; i < p->n; i++)
            json_array_append_new(dt[pass],
                json_pack("{s:s,s:f,s:f,s:f,s:f,s:o,s:o}", "kernels",
                    comet_system_part_str(p, i, buf, sizeof buf), "time_s", (double)p->time_s[i],
                    "compute_s", (double)p->compute_s[i], "memory_s", (double)p->memory_s[i],
                    "network_s", (double)p->network_s[i], "onchip_bytes",
                    num_or_null(p->onchip_bytes[i]), "weight_passes",
                    num_or_null(p->weight_passes[i])));
    }
    json_object_set_new(
        j, "partition_detail", json_pack("{s:o,s:o}", "forward", dt[0], "backward", dt[1]));
    json_object_set_new(j, "layer_s",
        json_pack("{s:f,s:f}", "forward", r->layer_fwd_s, "backward", r->layer_bwd_s));
    json_object_set_new(j, "weights_on_chip_bytes", json_real(r->weights_on_chip));
    return j;
}
