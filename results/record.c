/* One record: the schema check, the v1 -> v2 conversion, the typed read and
 * the typed write, all from one field table. Format: docs/FORMATS.md. */
#include "comet_results.h"
#include "comet_util.h"
#include "results_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[COMET_RESULTS_NKINDS]
    = { "run", "kernel", "memory", "vecop", "p2p", "collective", "dist_kernel", "llm" };

const char *comet_results_kind_name(comet_results_kind k)
{
    return (unsigned)k < COMET_RESULTS_NKINDS ? kind_names[k] : "?";
}

int comet_results_kind_parse(const char *s, comet_results_kind *out)
{
    for (int i = 0; s && i < COMET_RESULTS_NKINDS; i++)
        if (!strcmp(s, kind_names[i])) {
            *out = (comet_results_kind)i;
            return 0;
        }
    return -EINVAL;
}

/* ------------------------------------------------------------------ */
/* The field table                                                    */
/* ------------------------------------------------------------------ */

/* How a field is stored in the struct and written to JSON. */
typedef enum ftype {
    F_STR, /* const char * into the JSON, "" absent */
    F_NUM, /* double, NaN absent, written as a real */
    F_INUM, /* double, NaN absent, written as an integer */
    F_INT, /* int, `absent` when absent, written as an integer */
    F_FLAG, /* int 0/1, -1 absent, written as a boolean */
} ftype;

typedef struct field {
    const char *key;
    ftype type;
    size_t off;
    int absent; /* F_INT only */
} field;

#define REC(k, t, m, a)                                                                            \
    {                                                                                              \
        k, t, offsetof(comet_results_record, m), a                                                 \
    }
#define SHP(k, t, m)                                                                               \
    {                                                                                              \
        k, t, offsetof(comet_results_shape, m), 0                                                  \
    }
#define PAR(k, t, m)                                                                               \
    {                                                                                              \
        k, t, offsetof(comet_results_params, m), 0                                                 \
    }
#define STA(k, t, m)                                                                               \
    {                                                                                              \
        k, t, offsetof(comet_results_stats, m), 0                                                  \
    }

/* Top-level scalars of a measurement, in the order the benches write them
 * (the object fields stats, load, params, shape, counters, collectives sit
 * between them: see to_json()). */
static const field head_fields[] = {
    REC("run_id", F_STR, run_id, 0),
    REC("machine_id", F_STR, machine_id, 0),
    REC("time", F_STR, time, 0),
    REC("op", F_STR, op, 0),
    REC("variant", F_STR, variant, 0),
};
static const field mid_fields[] = {
    REC("threads", F_INT, threads, 0),
    REC("ranks", F_INT, ranks, 0),
    REC("dataflow", F_STR, dataflow, 0),
    REC("workload", F_STR, workload, 0),
    REC("passes", F_INUM, passes, 0),
    REC("wall_s", F_NUM, wall_s, 0),
};
static const field tail_fields[] = {
    REC("reps", F_INUM, reps, 0),
    REC("converged", F_FLAG, converged, 0),
    REC("launch", F_INT, launch, -1),
    REC("link", F_STR, link, 0),
    REC("nodes", F_INT, nodes, -1),
    REC("clock_mhz", F_NUM, clock_mhz, 0),
    REC("median_cycles", F_NUM, median_cycles, 0),
    REC("flops", F_NUM, flops, 0),
    REC("gflops", F_NUM, gflops, 0),
    REC("bytes", F_NUM, bytes, 0),
    REC("gbs", F_NUM, gbs, 0),
    REC("valid", F_FLAG, valid, 0),
    REC("counters_disabled", F_STR, counters_disabled, 0),
    REC("ns_per_elem", F_NUM, ns_per_elem, 0),
    REC("ns_per_row", F_NUM, ns_per_row, 0),
    REC("algbw_bytes", F_NUM, algbw_bytes, 0),
    REC("latency_us", F_NUM, latency_us, 0),
    REC("min_latency_us", F_NUM, min_latency_us, 0),
    REC("timing", F_STR, timing, 0),
    REC("sampling", F_STR, sampling, 0),
    REC("send_buffer", F_STR, send_buffer, 0),
    REC("rank_avg_latency_us", F_NUM, rank_avg_latency_us, 0),
    REC("algbw_GBs", F_NUM, algbw_GBs, 0),
    REC("busbw_GBs", F_NUM, busbw_GBs, 0),
    REC("max_abs_err", F_NUM, max_abs_err, 0),
    REC("pinned", F_FLAG, pinned, 0),
    REC("loss", F_NUM, loss, 0),
};
/* run records */
static const field run_fields[] = {
    REC("run_id", F_STR, run_id, 0),
    REC("bench", F_STR, bench, 0),
    REC("time", F_STR, time, 0),
    REC("cmdline", F_STR, cmdline, 0),
};
static const field shape_fields[] = {
    SHP("M", F_INUM, M),
    SHP("N", F_INUM, N),
    SHP("K", F_INUM, K),
    SHP("B", F_INUM, B),
    SHP("H", F_INUM, H),
    SHP("Lq", F_INUM, Lq),
    SHP("Lk", F_INUM, Lk),
    SHP("d", F_INUM, d),
    SHP("causal", F_INUM, causal),
    SHP("bytes", F_INUM, bytes),
    SHP("count", F_INUM, count),
    SHP("n", F_INUM, n),
    SHP("width", F_INUM, width),
    SHP("rows", F_INUM, rows),
    SHP("segments", F_INUM, segments),
    SHP("pairs", F_INUM, pairs),
    SHP("max_seg", F_INUM, max_seg),
    SHP("mean_seg", F_NUM, mean_seg),
    SHP("skew", F_NUM, skew),
    SHP("nonempty", F_NUM, nonempty),
    SHP("hidden", F_INUM, hidden),
    SHP("ffn", F_INUM, ffn),
    SHP("layers", F_INUM, layers),
    SHP("seq", F_INUM, seq),
    SHP("microbatch", F_INUM, microbatch),
    SHP("context", F_INUM, context),
};
static const field params_fields[] = {
    PAR("tile_m", F_INUM, tile_m),
    PAR("tile_n", F_INUM, tile_n),
    PAR("tile_q", F_INUM, tile_q),
    PAR("tile_k", F_INUM, tile_k),
    PAR("tiles", F_NUM, tiles),
    PAR("rounds", F_INUM, rounds),
    PAR("ukernel", F_INUM, ukernel),
    PAR("elements", F_INUM, elements),
    PAR("cold_bytes", F_INUM, cold_bytes),
    PAR("lk_local", F_INUM, lk_local),
    PAR("n_local", F_INUM, n_local),
    PAR("method", F_STR, method),
    PAR("isa", F_STR, isa),
    PAR("peer", F_STR, peer),
    PAR("regime", F_STR, regime),
    PAR("dtype", F_STR, dtype),
    PAR("swept", F_STR, swept),
    PAR("split", F_STR, split),
    PAR("algorithm_forced", F_FLAG, algorithm_forced),
    PAR("device_collectives", F_STR, device_collectives),
    PAR("malloc", F_STR, malloc_mode),
    PAR("phase", F_STR, phase),
    PAR("recompute", F_STR, recompute),
    PAR("tp", F_INUM, tp),
    PAR("pp", F_INUM, pp),
    PAR("dp", F_INUM, dp),
    PAR("seq_parallel", F_FLAG, seq_parallel),
};
/* llm "timers" */
#define TIM(k, m)                                                                                  \
    {                                                                                              \
        k, F_NUM, offsetof(comet_results_timers, m), 0                                             \
    }
static const field timer_fields[] = {
    TIM("gemm_s", gemm_s),
    TIM("attention_s", attention_s),
    TIM("vector_s", vector_s),
    TIM("tp_s", tp_s),
    TIM("dp_s", dp_s),
    TIM("pp_s", pp_s),
    TIM("bubble_s", bubble_s),
    TIM("optimizer_s", optimizer_s),
    TIM("recompute_s", recompute_s),
    TIM("loss_s", loss_s),
    TIM("tp_allreduce_s", tp_allreduce_s),
    TIM("tp_allgather_s", tp_allgather_s),
    TIM("tp_reduce_scatter_s", tp_reduce_scatter_s),
};
static const field stats_fields[] = {
    STA("median_s", F_NUM, median_s),
    STA("ci_lo_s", F_NUM, ci_lo_s),
    STA("ci_hi_s", F_NUM, ci_hi_s),
    STA("ci_level", F_NUM, ci_level),
    STA("min_s", F_NUM, min_s),
    STA("max_s", F_NUM, max_s),
    STA("mean_s", F_NUM, mean_s),
    STA("p90_s", F_NUM, p90_s),
};
/* dist_kernel "collectives" entries, in the order the bench writes them */
static const field coll_fields[] = {
    { "kind", F_STR, offsetof(comet_results_coll_call, kind), 0 },
    { "count", F_INUM, offsetof(comet_results_coll_call, count), 0 },
    { "bytes", F_INUM, offsetof(comet_results_coll_call, bytes), 0 },
    { "calls", F_INUM, offsetof(comet_results_coll_call, calls), 0 },
    { "op", F_STR, offsetof(comet_results_coll_call, op), 0 },
};
/* dist_kernel gms/moe "rank_loads" entries */
static const field load_fields[] = {
    { "tokens", F_INUM, offsetof(comet_results_rank_load, tokens), 0 },
    { "sent", F_INUM, offsetof(comet_results_rank_load, sent), 0 },
    { "pairs", F_INUM, offsetof(comet_results_rank_load, pairs), 0 },
    { "segments", F_INUM, offsetof(comet_results_rank_load, segments), 0 },
    { "max_seg", F_INUM, offsetof(comet_results_rank_load, max_seg), 0 },
    { "remote_sent", F_INUM, offsetof(comet_results_rank_load, remote_sent), 0 },
    { "remote_recv", F_INUM, offsetof(comet_results_rank_load, remote_recv), 0 },
};
#define NF(a) (sizeof(a) / sizeof(a)[0])

/* Reads the fields of table t from object o into the struct at base. A
 * field of the wrong type reads as absent, as the readers always took it. */
static void read_fields(const json_t *o, const field *t, size_t nt, void *base)
{
    for (size_t i = 0; i < nt; i++) {
        const json_t *v = json_object_get(o, t[i].key);
        char *p = (char *)base + t[i].off;
        switch (t[i].type) {
        case F_STR: {
            const char *s = json_string_value(v);
            *(const char **)p = s ? s : "";
            break;
        }
        case F_NUM:
        case F_INUM:
            *(double *)p = json_is_number(v) ? json_number_value(v) : NAN;
            break;
        case F_INT: /* beyond an int: no count a record means */
            *(int *)p = json_is_integer(v) && json_integer_value(v) >= INT_MIN
                    && json_integer_value(v) <= INT_MAX
                ? (int)json_integer_value(v)
                : t[i].absent;
            break;
        case F_FLAG:
            *(int *)p = json_is_boolean(v) ? json_is_true(v) : -1;
            break;
        }
    }
}

/* Writes the present fields of table t from base into o. */
static int write_fields(json_t *o, const field *t, size_t nt, const void *base)
{
    int rc = 0;
    for (size_t i = 0; i < nt && !rc; i++) {
        const char *p = (const char *)base + t[i].off;
        json_t *v = NULL;
        switch (t[i].type) {
        case F_STR: {
            const char *s = *(const char *const *)p;
            if (s && *s)
                v = json_string(s);
            else
                continue;
            break;
        }
        case F_NUM:
        case F_INUM: {
            double d = *(const double *)p;
            if (!comet_results_has(d))
                continue;
            v = t[i].type == F_INUM && d == floor(d) && fabs(d) < 9e15 ? json_integer((json_int_t)d)
                                                                       : json_real(d);
            break;
        }
        case F_INT: {
            int x = *(const int *)p;
            if (x == t[i].absent)
                continue;
            v = json_integer(x);
            break;
        }
        case F_FLAG: {
            int x = *(const int *)p;
            if (x < 0)
                continue;
            v = json_boolean(x);
            break;
        }
        }
        rc = json_object_set_new(o, t[i].key, v) ? -ENOMEM : 0;
    }
    return rc;
}

/* ------------------------------------------------------------------ */
/* Checking                                                           */
/* ------------------------------------------------------------------ */

static int need_finite(const json_t *o, const char *key, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)))
        return comet_util_seterr(
            err, errlen, -EINVAL, "field 'stats.%s' missing or not a number", key);
    return 0;
}

/* 1 if s holds a character YAML refuses but JSON allows raw: DEL, the C1
 * controls (except NEL) and U+FFFE/U+FFFF. Profiles built from records are
 * re-read through libyaml, so such a record would poison them. */
static int yaml_unsafe(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f && p[1] != 0x85)
            || (p[0] == 0xef && p[1] == 0xbf && (p[2] == 0xbe || p[2] == 0xbf)))
            return 1;
    }
    return 0;
}

/* Finds a key or string anywhere in j that yaml_unsafe() refuses. */
static const char *unsafe_text(const json_t *j)
{
    const char *k, *bad;
    json_t *v;
    size_t i;
    if (json_is_string(j))
        return yaml_unsafe(json_string_value(j)) ? "a string value" : NULL;
    if (json_is_object(j)) {
        json_object_foreach((json_t *)j, k, v)
        {
            if (yaml_unsafe(k))
                return "a field name";
            if ((bad = unsafe_text(v)) != NULL)
                return bad;
        }
    }
    if (json_is_array(j)) {
        json_array_foreach(j, i, v)
        {
            if ((bad = unsafe_text(v)) != NULL)
                return bad;
        }
    }
    return NULL;
}

int comet_results_check(const json_t *rec, char *err, size_t errlen)
{
    if (!json_is_object(rec))
        return comet_util_seterr(err, errlen, -EINVAL, "record is not a JSON object");
    const char *bad = unsafe_text(rec);
    if (bad)
        return comet_util_seterr(
            err, errlen, -EINVAL, "%s holds a control character (DEL or U+0080..U+009F)", bad);
    const char *schema = json_string_value(json_object_get(rec, "schema"));
    if (!schema)
        return comet_util_seterr(err, errlen, -EINVAL, "field 'schema' missing");
    if (strcmp(schema, COMET_RESULTS_SCHEMA))
        return comet_util_seterr(err, errlen, -EINVAL, "unknown schema '%s' (expected %s)", schema,
            COMET_RESULTS_SCHEMA);
    const char *kind = json_string_value(json_object_get(rec, "kind"));
    comet_results_kind k;
    if (!kind)
        return comet_util_seterr(err, errlen, -EINVAL, "field 'kind' missing");
    if (comet_results_kind_parse(kind, &k))
        return comet_util_seterr(err, errlen, -EINVAL, "unknown kind '%s'", kind);
    if (!json_is_string(json_object_get(rec, "run_id")))
        return comet_util_seterr(err, errlen, -EINVAL, "field 'run_id' missing");
    if (k == COMET_RESULTS_RUN) {
        if (!json_is_object(json_object_get(rec, "machine")))
            return comet_util_seterr(err, errlen, -EINVAL, "run record without a 'machine' object");
        return 0;
    }
    if (!json_is_string(json_object_get(rec, "op")))
        return comet_util_seterr(err, errlen, -EINVAL, "field 'op' missing");
    if (!json_is_object(json_object_get(rec, "shape")))
        return comet_util_seterr(err, errlen, -EINVAL, "field 'shape' missing or not an object");
    json_t *th = json_object_get(rec, "threads"), *rk = json_object_get(rec, "ranks");
    if (!json_is_integer(th) && !json_is_integer(rk))
        return comet_util_seterr(err, errlen, -EINVAL, "neither 'threads' nor 'ranks' is set");
    if ((th && (!json_is_integer(th) || json_integer_value(th) < 1))
        || (rk && (!json_is_integer(rk) || json_integer_value(rk) < 1)))
        return comet_util_seterr(err, errlen, -EINVAL, "'threads'/'ranks' must be integers >= 1");
    /* an int in the struct: a count beyond it describes no machine */
    if ((th && json_integer_value(th) > 1 << 24) || (rk && json_integer_value(rk) > 1 << 24))
        return comet_util_seterr(err, errlen, -EINVAL, "'threads'/'ranks' above 16777216");
    json_t *st = json_object_get(rec, "stats");
    if (!json_is_object(st))
        return comet_util_seterr(err, errlen, -EINVAL, "field 'stats' missing or not an object");
    json_t *n = json_object_get(st, "n");
    if (!json_is_integer(n) || json_integer_value(n) < 1)
        return comet_util_seterr(err, errlen, -EINVAL, "field 'stats.n' missing or < 1");
    static const char *const req[] = { "median_s", "ci_lo_s", "ci_hi_s", "min_s", NULL };
    for (size_t i = 0; req[i]; i++) {
        int rc = need_finite(st, req[i], err, errlen);
        if (rc)
            return rc;
    }
    /* times: a median of zero or less, or a CI that does not hold it, is no
     * measurement (validate and calibrate would otherwise drop or use it) */
    const double med = json_number_value(json_object_get(st, "median_s")),
                 lo = json_number_value(json_object_get(st, "ci_lo_s")),
                 hi = json_number_value(json_object_get(st, "ci_hi_s")),
                 mn = json_number_value(json_object_get(st, "min_s"));
    if (!(med > 0))
        return comet_util_seterr(
            err, errlen, -EINVAL, "stats.median_s = %g is not a time (> 0)", med);
    if (mn < 0 || lo < 0 || hi < 0 || mn > med || lo > med || hi < med)
        return comet_util_seterr(err, errlen, -EINVAL,
            "stats: min %g, CI [%g, %g] and median %g do not fit together (min <= median, "
            "CI low <= median <= CI high, none negative)",
            mn, lo, hi, med);
    /* kernels at threads > 1: the core-to-core latency per pass */
    json_t *cc = json_object_get(rec, "c2c_ns");
    if (cc) {
        size_t ci;
        json_t *cv;
        if (!json_is_array(cc) || json_array_size(cc) > COMET_RESULTS_C2C_MAX)
            return comet_util_seterr(err, errlen, -EINVAL,
                "field 'c2c_ns' is not an array of at most %d numbers", COMET_RESULTS_C2C_MAX);
        json_array_foreach(cc, ci, cv)
        {
            if (!json_is_number(cv) || !isfinite(json_number_value(cv))
                || json_number_value(cv) <= 0)
                return comet_util_seterr(
                    err, errlen, -EINVAL, "c2c_ns[%zu] is not a latency (ns > 0)", ci);
        }
    }
    json_t *smp = json_object_get(st, "samples_s");
    if (!json_is_array(smp))
        return comet_util_seterr(err, errlen, -EINVAL, "field 'stats.samples_s' missing");
    size_t i;
    json_t *v;
    json_array_foreach(smp, i, v)
    {
        if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
            return comet_util_seterr(
                err, errlen, -EINVAL, "stats.samples_s[%zu] is not a non-negative number", i);
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Schema versions                                                    */
/* ------------------------------------------------------------------ */

static void rename_key(json_t *o, const char *from, const char *to)
{
    json_t *v = json_object_get(o, from);
    if (v && !json_object_get(o, to)) {
        json_object_set(o, to, v);
        json_object_del(o, from);
    }
}

/* Brings rec to COMET_RESULTS_SCHEMA. v1 -> v2: attention records named
 * their tiles params.tile_m / params.tile_n (before b4d52d6); v2 names them
 * tile_q / tile_k, as the kernels API does. Nothing else changed.
 * @return 0 current (or no schema: the check reports that), 1 converted,
 * -EINVAL newer or unknown (why says which). */
int comet_results__upgrade(json_t *rec, char *why, size_t whylen)
{
    const char *schema = json_string_value(json_object_get(rec, "schema"));
    unsigned v = 0, cur = 0;
    char tail;
    if (!schema || !strcmp(schema, COMET_RESULTS_SCHEMA))
        return 0;
    if (!strcmp(schema, COMET_RESULTS_SCHEMA_V1)) {
        const char *op = json_string_value(json_object_get(rec, "op"));
        json_t *pa = json_object_get(rec, "params");
        if (op && !strcmp(op, "attention") && json_is_object(pa)) {
            rename_key(pa, "tile_m", "tile_q");
            rename_key(pa, "tile_n", "tile_k");
        }
        json_object_set_new(rec, "schema", json_string(COMET_RESULTS_SCHEMA));
        return 1;
    }
    sscanf(COMET_RESULTS_SCHEMA, "comet.record.v%u", &cur);
    if (sscanf(schema, "comet.record.v%u%c", &v, &tail) == 1 && v > cur)
        return comet_util_seterr(why, whylen, -EINVAL,
            "schema '%.40s' is newer than this comet reads (%s): update comet", schema,
            COMET_RESULTS_SCHEMA);
    return comet_util_seterr(why, whylen, -EINVAL,
        "unknown schema '%.40s' (this comet reads %s and converts %s)", schema,
        COMET_RESULTS_SCHEMA, COMET_RESULTS_SCHEMA_V1);
}

/* ------------------------------------------------------------------ */
/* Typed read                                                         */
/* ------------------------------------------------------------------ */

void comet_results_machine_from_json(const json_t *m, comet_results_machine *out)
{
    static const field mf[] = {
        { "id", F_STR, offsetof(comet_results_machine, id), 0 },
        { "hostname", F_STR, offsetof(comet_results_machine, hostname), 0 },
        { "cpu_model", F_STR, offsetof(comet_results_machine, cpu_model), 0 },
        { "packages", F_NUM, offsetof(comet_results_machine, packages), 0 },
        { "cores", F_NUM, offsetof(comet_results_machine, cores), 0 },
        { "pus", F_NUM, offsetof(comet_results_machine, pus), 0 },
        { "numa_nodes", F_NUM, offsetof(comet_results_machine, numa_nodes), 0 },
        { "memory_source", F_STR, offsetof(comet_results_machine, memory_source), 0 },
        { "memory_note", F_STR, offsetof(comet_results_machine, memory_note), 0 },
        { "mpi", F_STR, offsetof(comet_results_machine, mpi), 0 },
        { "compiler", F_STR, offsetof(comet_results_machine, compiler), 0 },
        { "memory_bytes", F_NUM, offsetof(comet_results_machine, memory_bytes), 0 },
        { "mhz", F_NUM, offsetof(comet_results_machine, mhz), 0 },
        { "mhz_measured", F_NUM, offsetof(comet_results_machine, mhz_measured), 0 },
    };
    memset(out, 0, sizeof *out);
    read_fields(m, mf, NF(mf), out);
    out->json = m;
    const json_t *isa = json_object_get(m, "isa");
    out->fma = json_is_true(json_object_get(isa, "fma"));
    out->avx = json_is_true(json_object_get(isa, "avx"));
    out->avx2 = json_is_true(json_object_get(isa, "avx2"));
    out->avx512f = json_is_true(json_object_get(isa, "avx512f"));
    out->papi_status = comet_util_jstr(json_object_get(m, "papi"), "status");
    out->papi_version = comet_util_jstr(json_object_get(m, "papi"), "version");
    out->blas_config = comet_util_jstr(json_object_get(m, "blas"), "config");
    out->blas_threads = comet_util_jnum(json_object_get(m, "blas"), "threads");
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(m, "caches"), i, c)
    {
        if (out->ncaches >= NF(out->caches))
            break;
        comet_results_cache *x = &out->caches[out->ncaches++];
        const json_t *lv = json_object_get(c, "level"), *sz = json_object_get(c, "size");
        x->level = json_is_integer(lv) ? (int)json_integer_value(lv) : 0;
        x->type = json_string_value(json_object_get(c, "type"));
        if (!x->type)
            x->type = "";
        x->size = json_is_number(sz) ? json_number_value(sz) : NAN;
        x->count = comet_util_jnum(c, "count");
        x->shared_by = comet_util_jnum(c, "shared_by");
        x->overridden = json_is_true(json_object_get(c, "overridden"));
    }
}

void comet_results_record_init(comet_results_record *r, comet_results_kind kind)
{
    /* reading an empty object gives every field its absent value */
    json_t *empty = json_object();
    memset(r, 0, sizeof *r);
    r->kind = kind;
    read_fields(empty, head_fields, NF(head_fields), r);
    read_fields(empty, mid_fields, NF(mid_fields), r);
    read_fields(empty, tail_fields, NF(tail_fields), r);
    read_fields(empty, run_fields, NF(run_fields), r);
    read_fields(empty, shape_fields, NF(shape_fields), &r->shape);
    read_fields(empty, params_fields, NF(params_fields), &r->params);
    read_fields(empty, stats_fields, NF(stats_fields), &r->stats);
    read_fields(empty, timer_fields, NF(timer_fields), &r->timers);
    comet_results_machine_from_json(empty, &r->machine);
    r->machine.json = NULL;
    r->comet_version = r->comet_commit = "";
    r->load = (comet_results_gate) { NAN, NAN, NAN, "" };
    json_decref(empty);
}

/* Canonical text of an object: compact, keys sorted (identity and display). */
static char *canon(const json_t *o)
{
    if (o)
        return json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_t *empty = json_object();
    char *t = json_dumps(empty, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(empty);
    return t;
}

void comet_results_record_free(comet_results_record *r)
{
    if (!r)
        return;
    free(r->shape.text);
    free(r->params.text);
    free(r->stats.samples_s);
    free(r->collectives);
    free(r->rank_loads);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

int comet_results_parse(json_t *rec, comet_results_record *out, char *err, size_t errlen)
{
    char why[COMET_ERRLEN] = "";
    int rc, up;
    memset(out, 0, sizeof *out);
    if (!json_is_object(rec))
        return comet_util_seterr(err, errlen, -EINVAL, "record is not a JSON object");
    if ((up = comet_results__upgrade(rec, why, sizeof why)) < 0)
        return comet_util_seterr(err, errlen, up, "%s", why);
    if ((rc = comet_results_check(rec, err, errlen)))
        return rc;
    comet_results_kind kind = COMET_RESULTS_RUN;
    comet_results_kind_parse(json_string_value(json_object_get(rec, "kind")), &kind);
    /* every field absent, then the fields of this kind: a run record holds
     * no measurement, a measurement no run fields */
    comet_results_record_init(out, kind);
    out->json = json_incref(rec);
    out->converted = up > 0;
    out->env = json_object_get(rec, "env");
    if (kind == COMET_RESULTS_RUN) {
        read_fields(rec, run_fields, NF(run_fields), out);
        out->settings = json_object_get(rec, "settings");
        const json_t *co = json_object_get(rec, "comet");
        out->comet_version = comet_util_jstr(co, "version");
        out->comet_commit = comet_util_jstr(co, "commit");
        comet_results_machine_from_json(json_object_get(rec, "machine"), &out->machine);
        return 0;
    }
    read_fields(rec, head_fields, NF(head_fields), out);
    read_fields(rec, mid_fields, NF(mid_fields), out);
    read_fields(rec, tail_fields, NF(tail_fields), out);
    const json_t *sh = json_object_get(rec, "shape"), *pa = json_object_get(rec, "params");
    read_fields(sh, shape_fields, NF(shape_fields), &out->shape);
    read_fields(pa, params_fields, NF(params_fields), &out->params);
    const json_t *st = json_object_get(rec, "stats");
    read_fields(st, stats_fields, NF(stats_fields), &out->stats);
    read_fields(json_object_get(rec, "timers"), timer_fields, NF(timer_fields), &out->timers);
    out->stats.n = json_is_integer(json_object_get(st, "n"))
        ? (size_t)json_integer_value(json_object_get(st, "n"))
        : 0;
    const json_t *ld = json_object_get(rec, "load");
    static const field lf[] = {
        { "busy_others", F_NUM, offsetof(comet_results_gate, busy_others), 0 },
        { "busy_during", F_NUM, offsetof(comet_results_gate, busy_during), 0 },
        { "waited_s", F_NUM, offsetof(comet_results_gate, waited_s), 0 },
        { "gate", F_STR, offsetof(comet_results_gate, gate), 0 },
    };
    read_fields(ld, lf, NF(lf), &out->load);
    const json_t *smp = json_object_get(st, "samples_s");
    size_t ns = json_array_size(smp), i;
    const json_t *v;
    const char *k;
    json_array_foreach(json_object_get(rec, "c2c_ns"), i, v) out->c2c_ns[out->nc2c++]
        = json_number_value(v);
    if (ns && !(out->stats.samples_s = malloc(ns * sizeof(double))))
        goto nomem;
    json_array_foreach(smp, i, v) out->stats.samples_s[i] = json_number_value(v);
    out->stats.nsamples = ns;
    json_object_foreach((json_t *)json_object_get(rec, "counters"), k, v)
    {
        if (out->ncounters < 4 && json_is_number(v)) {
            out->counter_names[out->ncounters] = k;
            out->counter_values[out->ncounters++] = json_number_value(v);
        }
    }
    const json_t *cl = json_object_get(rec, "collectives");
    size_t nc = json_array_size(cl);
    if (nc && !(out->collectives = calloc(nc, sizeof *out->collectives)))
        goto nomem;
    json_array_foreach(cl, i, v)
    {
        read_fields(v, coll_fields, NF(coll_fields), &out->collectives[out->ncollectives++]);
    }
    const json_t *rl = json_object_get(rec, "rank_loads");
    size_t nl = json_array_size(rl);
    if (nl && !(out->rank_loads = calloc(nl, sizeof *out->rank_loads)))
        goto nomem;
    json_array_foreach(rl, i, v)
    {
        read_fields(v, load_fields, NF(load_fields), &out->rank_loads[out->nrank_loads++]);
    }
    if (!(out->shape.text = canon(sh)) || !(out->params.text = canon(pa)))
        goto nomem;
    return 0;
nomem:
    comet_results_record_free(out);
    return comet_util_seterr(err, errlen, -ENOMEM, "results: out of memory");
}

int comet_results_parse_line(
    const char *line, size_t len, comet_results_record *out, char *err, size_t errlen)
{
    json_error_t je;
    memset(out, 0, sizeof *out);
    json_t *rec = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!rec)
        return comet_util_seterr(
            err, errlen, -EINVAL, "not valid JSON: %s (column %d)", je.text, je.column);
    int rc = comet_results_parse(rec, out, err, errlen);
    json_decref(rec);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Typed write                                                        */
/* ------------------------------------------------------------------ */

static int set_obj(json_t *o, const char *k, json_t *v)
{
    return v ? (json_object_set_new(o, k, v) ? -ENOMEM : 0) : -ENOMEM;
}

json_t *comet_results_stats_json(const comet_results_stats *s)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = o && arr ? 0 : -ENOMEM;
    if (!rc)
        rc = set_obj(o, "n", json_integer((json_int_t)s->n));
    if (!rc)
        rc = write_fields(o, stats_fields, NF(stats_fields), s);
    for (size_t i = 0; !rc && i < s->nsamples; i++)
        rc = json_array_append_new(arr, json_real(s->samples_s[i])) ? -ENOMEM : 0;
    if (!rc) {
        rc = set_obj(o, "samples_s", arr);
        arr = NULL;
    }
    json_decref(arr);
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *comet_results_gate_json(const comet_results_gate *l)
{
    json_t *busy = comet_results_has(l->busy_others) ? json_real(l->busy_others) : json_null();
    json_t *during = comet_results_has(l->busy_during) ? json_real(l->busy_during) : json_null();
    return json_pack("{s:o,s:o,s:f,s:s}", "busy_others", busy, "busy_during", during, "waited_s",
        comet_results_has(l->waited_s) ? l->waited_s : 0.0, "gate", l->gate ? l->gate : "");
}

json_t *comet_results_record_new(const char *run_id, const char *machine_id, const char *kind,
    const char *op, const char *variant, json_t *shape, int threads)
{
    char t[32];
    json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "schema", COMET_RESULTS_SCHEMA, "kind",
        kind, "run_id", run_id, "machine_id", machine_id, "time", comet_util_iso_time(t, sizeof t),
        "op", op);
    if (!rec) {
        json_decref(shape);
        return NULL;
    }
    if (variant)
        json_object_set_new(rec, "variant", json_string(variant));
    json_object_set_new(rec, "shape", shape ? shape : json_object());
    if (threads > 0)
        json_object_set_new(rec, "threads", json_integer(threads));
    return rec;
}

/* o's keys in the order ref has them (then any others), recursing into
 * objects; with nulls set, a key ref holds as null and o lacks (an unknown
 * value, NaN in the struct) is written null: a record read and written again
 * keeps its bytes.
 * @return a new reference, or NULL (out of memory). */
static json_t *ordered_like(json_t *o, const json_t *ref, int nulls)
{
    if (!json_is_object(o) || !json_is_object(ref))
        return json_incref(o);
    json_t *out = json_object(), *v, *x;
    const char *k;
    int rc = out ? 0 : -ENOMEM;
    json_object_foreach((json_t *)ref, k, v)
    {
        if (rc)
            break;
        /* load's busy fractions are the typed fields written null when
         * unknown (NaN in the struct) */
        if ((x = json_object_get(o, k)) != NULL)
            rc = set_obj(out, k, ordered_like(x, v, !strcmp(k, "load")));
        else if (nulls && json_is_null(v))
            rc = set_obj(out, k, json_null());
    }
    json_object_foreach(o, k, v)
    {
        if (!rc && !json_object_get(out, k))
            rc = json_object_set(out, k, v) ? -ENOMEM : 0;
    }
    if (rc) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* The fields of r in the table's order. */
static json_t *to_json_table(const comet_results_record *r)
{
    json_t *o = json_object();
    int rc = o ? 0 : -ENOMEM;
    if (!rc)
        rc = set_obj(o, "schema", json_string(COMET_RESULTS_SCHEMA));
    if (!rc)
        rc = set_obj(o, "kind", json_string(comet_results_kind_name(r->kind)));
    if (r->kind == COMET_RESULTS_RUN) {
        if (!rc)
            rc = write_fields(o, run_fields, NF(run_fields), r);
        if (!rc
            && ((r->comet_version && *r->comet_version) || (r->comet_commit && *r->comet_commit)))
            rc = set_obj(o, "comet",
                json_pack("{s:s,s:s}", "version", r->comet_version ? r->comet_version : "",
                    "commit", r->comet_commit ? r->comet_commit : ""));
        if (!rc)
            rc = set_obj(
                o, "machine", r->machine.json ? json_deep_copy(r->machine.json) : json_object());
        /* env and settings are free-form: carried as read */
        if (!rc && r->env)
            rc = set_obj(o, "env", json_deep_copy(r->env));
        if (!rc && r->settings)
            rc = set_obj(o, "settings", json_deep_copy(r->settings));
        goto out;
    }
    json_t *sh = json_object(), *pa = json_object();
    if (!rc)
        rc = write_fields(o, head_fields, NF(head_fields), r);
    if (!rc && sh)
        rc = write_fields(sh, shape_fields, NF(shape_fields), &r->shape);
    if (!rc) {
        rc = set_obj(o, "shape", sh);
        sh = NULL;
    }
    if (!rc)
        rc = write_fields(o, mid_fields, NF(mid_fields), r);
    if (!rc && r->nc2c) {
        json_t *c = json_array();
        for (size_t i = 0; c && i < r->nc2c && i < COMET_RESULTS_C2C_MAX; i++)
            json_array_append_new(c, json_real(r->c2c_ns[i]));
        rc = set_obj(o, "c2c_ns", c);
    }
    if (!rc && pa)
        rc = write_fields(pa, params_fields, NF(params_fields), &r->params);
    if (!rc && json_object_size(pa)) {
        rc = set_obj(o, "params", pa);
        pa = NULL;
    }
    json_decref(sh);
    json_decref(pa);
    if (!rc)
        rc = set_obj(o, "stats", comet_results_stats_json(&r->stats));
    if (!rc && r->load.gate && *r->load.gate) {
        /* NaN: absent here; a null the record was read with comes back
         * through ordered_like() */
        static const field lf[] = {
            { "busy_others", F_NUM, offsetof(comet_results_gate, busy_others), 0 },
            { "busy_during", F_NUM, offsetof(comet_results_gate, busy_during), 0 },
            { "waited_s", F_NUM, offsetof(comet_results_gate, waited_s), 0 },
            { "gate", F_STR, offsetof(comet_results_gate, gate), 0 },
        };
        json_t *l = json_object();
        rc = l ? write_fields(l, lf, NF(lf), &r->load) : -ENOMEM;
        if (!rc)
            rc = set_obj(o, "load", l);
        else
            json_decref(l);
    }
    if (!rc)
        rc = write_fields(o, tail_fields, NF(tail_fields), r);
    if (!rc && r->ncounters) {
        json_t *c = json_object();
        for (size_t i = 0; c && i < r->ncounters; i++)
            json_object_set_new(c, r->counter_names[i], json_real(r->counter_values[i]));
        rc = set_obj(o, "counters", c);
    }
    if (!rc && r->env)
        rc = set_obj(o, "env", json_deep_copy(r->env));
    if (!rc && r->ncollectives) {
        json_t *a = json_array();
        for (size_t i = 0; a && !rc && i < r->ncollectives; i++) {
            const comet_results_coll_call *c = &r->collectives[i];
            json_t *e = json_object();
            rc = e ? write_fields(e, coll_fields, NF(coll_fields), c) : -ENOMEM;
            rc = rc ? rc : (json_array_append_new(a, e) ? -ENOMEM : 0);
        }
        rc = rc ? rc : set_obj(o, "collectives", a);
    }
    if (!rc) { /* llm: present timers only */
        json_t *t = json_object();
        rc = t ? write_fields(t, timer_fields, NF(timer_fields), &r->timers) : -ENOMEM;
        if (!rc && json_object_size(t))
            rc = set_obj(o, "timers", json_incref(t));
        json_decref(t);
    }
    if (!rc && r->nrank_loads) {
        json_t *a = json_array();
        for (size_t i = 0; a && !rc && i < r->nrank_loads; i++) {
            json_t *e = json_object();
            rc = e ? write_fields(e, load_fields, NF(load_fields), &r->rank_loads[i]) : -ENOMEM;
            rc = rc ? rc : (json_array_append_new(a, e) ? -ENOMEM : 0);
        }
        rc = rc ? rc : set_obj(o, "rank_loads", a);
    }
out:
    if (rc) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *comet_results_to_json(const comet_results_record *r)
{
    json_t *o = to_json_table(r);
    if (!o || !r->json)
        return o;
    json_t *k = ordered_like(o, r->json, 0);
    json_decref(o);
    return k;
}

/* ------------------------------------------------------------------ */
/* Display                                                            */
/* ------------------------------------------------------------------ */

void comet_results_shape_str(const comet_results_shape *s, char *buf, size_t len)
{
    if (comet_results_has(s->hidden))
        snprintf(buf, len, "h=%.0f H=%.0f f=%.0f L=%.0f B=%.0f seq=%.0f%s", s->hidden, s->H, s->ffn,
            s->layers, s->B, s->seq, comet_results_has(s->context) ? " +ctx" : "");
    else if (comet_results_has(s->Lq))
        snprintf(buf, len, "BH=%.0f Lq=%.0f Lk=%.0f d=%.0f%s", s->B * s->H, s->Lq, s->Lk, s->d,
            s->causal > 0 ? " causal" : "");
    else if (comet_results_has(s->M))
        snprintf(buf, len, "M=%.0f N=%.0f K=%.0f", s->M, s->N, s->K);
    else if (comet_results_has(s->bytes))
        snprintf(buf, len, "%.0f B", s->bytes);
    else
        snprintf(buf, len, "n=%.0f", s->n);
}

/* comet_kernels.h: COMET_KERNELS_TILE_ROWS (6) and _AVX512 (12); the test
 * test_results keeps them equal. */
int comet_results_micro_tile_rows(const char *isa, int *edge)
{
    if (edge)
        *edge = 6;
    return isa && !strcmp(isa, "avx512") ? 12 : 6;
}
