/* Records: building, checking, appending and reading JSON Lines results,
 * and exporting them as CSV. Format: docs/FORMATS.md. */
#include "comet_bench.h"
#include "comet_probe.h"
#include "comet_util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Building                                                           */
/* ------------------------------------------------------------------ */

int comet_bench_run_init(
    comet_bench_run *run, const char *kind, json_t *machine, char *err, size_t errlen)
{
    memset(run, 0, sizeof *run);
    if (!json_is_object(machine))
        return comet_util_seterr(
            err, errlen, -EINVAL, "bench: machine description is not an object");
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(run->run_id, sizeof run->run_id, "%s-%ld", ts, (long)getpid());
    snprintf(run->kind, sizeof run->kind, "%s", kind ? kind : "bench");
    const char *id = json_string_value(json_object_get(machine, "id"));
    snprintf(run->machine_id, sizeof run->machine_id, "%s", id ? id : "unknown");
    run->machine = json_incref(machine);
    return 0;
}

void comet_bench_run_fini(comet_bench_run *run)
{
    if (run && run->machine) {
        json_decref(run->machine);
        run->machine = NULL;
    }
}

json_t *comet_bench_run_record(const comet_bench_run *run, const char *cmdline, json_t *extra)
{
    char t[32];
    const char *tun = getenv("GLIBC_TUNABLES");
    const char *obt = getenv("OPENBLAS_NUM_THREADS");
    const char *omp = getenv("OMP_NUM_THREADS");
    json_t *env = json_pack("{s:s?,s:s?,s:s?,s:s}", "glibc_tunables", tun, "openblas_num_threads",
        obt, "omp_num_threads", omp, "timer", "CLOCK_MONOTONIC");
    json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s},s:O,s:o}", "schema",
        COMET_BENCH_SCHEMA, "kind", "run", "run_id", run->run_id, "bench", run->kind, "time",
        comet_util_iso_time(t, sizeof t), "cmdline", cmdline ? cmdline : "", "comet", "version",
        COMET_VERSION, "commit", COMET_GIT_COMMIT, "machine", run->machine, "env",
        env ? env : json_object());
    if (rec && extra)
        json_object_set_new(rec, "settings", extra);
    else if (extra)
        json_decref(extra);
    return rec;
}

json_t *comet_bench_record_new(const comet_bench_run *run, const char *kind, const char *op,
    const char *variant, json_t *shape, int threads)
{
    char t[32];
    json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "schema", COMET_BENCH_SCHEMA, "kind", kind,
        "run_id", run->run_id, "machine_id", run->machine_id, "time",
        comet_util_iso_time(t, sizeof t), "op", op);
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

json_t *comet_bench_stats_json(const comet_bench_stats *s, const double *samples, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr && i < n; i++)
        json_array_append_new(arr, json_real(samples[i]));
    return json_pack("{s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:o}", "n", (json_int_t)s->n, "median_s",
        s->median, "ci_lo_s", s->ci_lo, "ci_hi_s", s->ci_hi, "ci_level", s->ci_level, "min_s",
        s->min, "max_s", s->max, "mean_s", s->mean, "p90_s", s->p90, "samples_s",
        arr ? arr : json_array());
}

json_t *comet_bench_load_json(const comet_bench_load *l)
{
    json_t *busy = l->busy_others >= 0 ? json_real(l->busy_others) : json_null();
    json_t *during = l->busy_during >= 0 ? json_real(l->busy_during) : json_null();
    return json_pack("{s:o,s:o,s:f,s:s}", "busy_others", busy, "busy_during", during, "waited_s",
        l->waited_s, "gate",
        l->skipped ? "off" : (l->reused ? "idle (previous set)" : (l->idle ? "idle" : "timeout")));
}

int comet_bench_record_set_result(
    json_t *rec, const comet_bench_result *r, double flops, double bytes)
{
    json_t *st = comet_bench_stats_json(&r->stats, r->samples, r->n);
    json_t *ld = comet_bench_load_json(&r->load);
    if (!st || !ld) {
        json_decref(st);
        json_decref(ld);
        return -ENOMEM;
    }
    json_object_set_new(rec, "stats", st);
    json_object_set_new(rec, "reps", json_integer((json_int_t)r->reps));
    json_object_set_new(rec, "converged", json_boolean(r->converged));
    json_object_set_new(rec, "load", ld);
    double med = r->stats.median;
    if (r->clock_mhz > 0) {
        json_object_set_new(rec, "clock_mhz", json_real(r->clock_mhz));
        if (med > 0)
            json_object_set_new(rec, "median_cycles", json_real(med * r->clock_mhz * 1e6));
    }
    if (flops > 0) {
        json_object_set_new(rec, "flops", json_real(flops));
        if (med > 0)
            json_object_set_new(rec, "gflops", json_real(flops / med / 1e9));
    }
    if (bytes > 0) {
        json_object_set_new(rec, "bytes", json_real(bytes));
        if (med > 0)
            json_object_set_new(rec, "gbs", json_real(bytes / med / 1e9));
    }
    return 0;
}

int comet_bench_record_set_counters(json_t *rec, const comet_bench_counters *c, double calls)
{
    if (!c->enabled) {
        json_object_set_new(rec, "counters_disabled", json_string(c->reason));
        return 0;
    }
    json_t *o = json_object();
    if (!o)
        return -ENOMEM;
    for (size_t i = 0; i < c->nevents; i++)
        json_object_set_new(
            o, c->names[i], json_real(calls > 0 ? (double)c->values[i] / calls : 0));
    json_object_set_new(rec, "counters", o);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Checking                                                           */
/* ------------------------------------------------------------------ */

static const char *const kinds[]
    = { "run", "kernel", "memory", "vecop", "p2p", "collective", "dist_kernel", NULL };

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

int comet_bench_record_check(const json_t *rec, char *err, size_t errlen)
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
    if (strcmp(schema, COMET_BENCH_SCHEMA))
        return comet_util_seterr(
            err, errlen, -EINVAL, "unknown schema '%s' (expected %s)", schema, COMET_BENCH_SCHEMA);
    const char *kind = json_string_value(json_object_get(rec, "kind"));
    if (!kind)
        return comet_util_seterr(err, errlen, -EINVAL, "field 'kind' missing");
    int known = 0;
    for (size_t i = 0; kinds[i]; i++)
        known |= !strcmp(kind, kinds[i]);
    if (!known)
        return comet_util_seterr(err, errlen, -EINVAL, "unknown kind '%s'", kind);
    if (!json_is_string(json_object_get(rec, "run_id")))
        return comet_util_seterr(err, errlen, -EINVAL, "field 'run_id' missing");
    if (!strcmp(kind, "run")) {
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
/* Writer                                                             */
/* ------------------------------------------------------------------ */

static int dirname_of(const char *path, char *buf, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return snprintf(buf, len, ".") >= (int)len ? -ENAMETOOLONG : 0;
    size_t l = (size_t)(slash - path);
    if (l == 0)
        l = 1;
    if (l >= len)
        return -ENAMETOOLONG;
    memcpy(buf, path, l);
    buf[l] = 0;
    return 0;
}

int comet_bench_writer_open(comet_bench_writer *w, const char *path, char *err, size_t errlen)
{
    char dir[4096];
    int rc = 0;
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (!path || !*path)
        return comet_util_seterr(err, errlen, -EINVAL, "bench: empty results path");
    if ((rc = dirname_of(path, dir, sizeof dir)))
        return comet_util_seterr(err, errlen, rc, "%s: path too long", path);
    if ((rc = comet_util_mkdir_p(dir, err, errlen)))
        return rc;
    w->fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        rc = comet_util_seterr(err, errlen, -errno, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    /* A torn tail (no final newline) would glue onto our first line and
     * corrupt it: cut it back to the last complete line. */
    off_t size = lseek(w->fd, 0, SEEK_END);
    if (size > 0) {
        char c;
        if (pread(w->fd, &c, 1, size - 1) != 1) {
            rc = comet_util_seterr(err, errlen, -EIO, "%s: cannot read", path);
            goto fail;
        }
        if (c != '\n') {
            off_t pos = size - 1;
            char buf[4096];
            off_t cut = 0;
            while (pos >= 0 && cut == 0) {
                off_t start = pos + 1 >= (off_t)sizeof buf ? pos + 1 - (off_t)sizeof buf : 0;
                ssize_t got = pread(w->fd, buf, (size_t)(pos + 1 - start), start);
                if (got <= 0)
                    break;
                for (ssize_t k = got - 1; k >= 0; k--)
                    if (buf[k] == '\n') {
                        cut = start + k + 1;
                        break;
                    }
                pos = start - 1;
            }
            if (ftruncate(w->fd, cut)) {
                rc = comet_util_seterr(
                    err, errlen, -errno, "%s: cannot cut torn line: %s", path, strerror(errno));
                goto fail;
            }
            w->repaired = (size_t)(size - cut);
        }
    }
    w->path = strdup(path);
    if (!w->path) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
        goto fail;
    }
    return 0;
fail:
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    return rc;
}

int comet_bench_writer_append(comet_bench_writer *w, const json_t *rec, char *err, size_t errlen)
{
    char why[COMET_ERRLEN];
    int rc = 0;
    char *text = NULL;
    off_t keep = -1;
    if (!w || w->fd < 0)
        return comet_util_seterr(err, errlen, -EBADF, "bench: results file is not open");
    if ((rc = comet_bench_record_check(rec, why, sizeof why)))
        return comet_util_seterr(err, errlen, rc, "%s: refusing invalid record: %s", w->path, why);
    text = json_dumps(rec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!text)
        return comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "bench: out of memory");
        goto out;
    }
    text = line;
    text[len++] = '\n';
    /* Where the file ended before this line: a failed append (full disk,
     * quota) is cut back to it so the file keeps only complete lines. */
    struct stat st;
    if (fstat(w->fd, &st)) {
        rc = comet_util_seterr(err, errlen, -errno, "%s: %s", w->path, strerror(errno));
        goto out;
    }
    keep = st.st_size;
    /* One write() of the whole line: with O_APPEND the line lands whole or
     * (on a crash) as a torn tail the reader detects. */
    size_t off = 0;
    while (off < len) {
        ssize_t k = write(w->fd, text + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 && errno ? errno : ENOSPC; /* write() == 0: no room */
            rc = comet_util_seterr(err, errlen, -e, "%s: write failed: %s", w->path, strerror(e));
            goto out;
        }
        off += (size_t)k;
    }
    if (fsync(w->fd)) {
        rc = comet_util_seterr(
            err, errlen, -errno, "%s: fsync failed: %s", w->path, strerror(errno));
        goto out;
    }
    w->lines++;
out:
    /* Best effort: if even the truncate fails, the reader still skips a
     * torn last line and says so. */
    if (rc && keep >= 0 && ftruncate(w->fd, keep) == 0)
        (void)fsync(w->fd);
    free(text);
    return rc;
}

int comet_bench_writer_close(comet_bench_writer *w, char *err, size_t errlen)
{
    int rc = 0;
    if (!w)
        return 0;
    if (w->fd >= 0 && close(w->fd))
        rc = comet_util_seterr(err, errlen, -EIO, "%s: close failed", w->path ? w->path : "?");
    w->fd = -1;
    free(w->path);
    w->path = NULL;
    return rc;
}

/* ------------------------------------------------------------------ */
/* Reader                                                             */
/* ------------------------------------------------------------------ */

void comet_bench_records_free(json_t **recs, size_t n)
{
    if (!recs)
        return;
    for (size_t i = 0; i < n; i++)
        json_decref(recs[i]);
    free(recs);
}

static int blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
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

/* Brings rec to COMET_BENCH_SCHEMA. v1 -> v2: attention records named
 * their tiles params.tile_m / params.tile_n (before b4d52d6); v2 names them
 * tile_q / tile_k, as the kernels API does. Nothing else changed.
 * @return 0 current (or no schema: the check reports that), 1 converted,
 * -EINVAL newer or unknown (why says which). */
static int upgrade(json_t *rec, char *why, size_t whylen)
{
    const char *schema = json_string_value(json_object_get(rec, "schema"));
    unsigned v = 0, cur = 0;
    char tail;
    if (!schema || !strcmp(schema, COMET_BENCH_SCHEMA))
        return 0;
    if (!strcmp(schema, COMET_BENCH_SCHEMA_V1)) {
        const char *op = json_string_value(json_object_get(rec, "op"));
        json_t *pa = json_object_get(rec, "params");
        if (op && !strcmp(op, "attention") && json_is_object(pa)) {
            rename_key(pa, "tile_m", "tile_q");
            rename_key(pa, "tile_n", "tile_k");
        }
        json_object_set_new(rec, "schema", json_string(COMET_BENCH_SCHEMA));
        return 1;
    }
    sscanf(COMET_BENCH_SCHEMA, "comet.record.v%u", &cur);
    if (sscanf(schema, "comet.record.v%u%c", &v, &tail) == 1 && v > cur)
        return comet_util_seterr(why, whylen, -EINVAL,
            "schema '%.40s' is newer than this comet reads (%s): update comet", schema,
            COMET_BENCH_SCHEMA);
    return comet_util_seterr(why, whylen, -EINVAL,
        "unknown schema '%.40s' (this comet reads %s and converts %s)", schema, COMET_BENCH_SCHEMA,
        COMET_BENCH_SCHEMA_V1);
}

/* ------------------------------------------------------------------ */
/* Machine identity                                                   */
/* ------------------------------------------------------------------ */

int comet_bench_this_machine(json_t **machine, char *err, size_t errlen)
{
    comet_probe_opts po;
    comet_probe_machine *m = calloc(1, sizeof *m);
    int rc;
    *machine = NULL;
    memset(&po, 0, sizeof po);
    po.skip_papi = 1;
    po.skip_mpi = 1;
    po.skip_clock = 1; /* the clock is no part of the identity */
    if (!m)
        return comet_util_seterr(err, errlen, -ENOMEM, "probe: out of memory");
    if ((rc = comet_probe_run(&po, m, err, errlen)) == 0 && !(*machine = comet_probe_to_json(m)))
        rc = comet_util_seterr(err, errlen, -ENOMEM, "probe: out of memory");
    free(m);
    return rc;
}

/* Appends sep-separated text to buf (truncating quietly when full). */
static void add_note(char *buf, size_t len, const char *sep, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (!len || used + 3 >= len)
        return;
    if (used)
        used += (size_t)snprintf(buf + used, len - used, "%s", sep);
    if (used + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, len - used, fmt, ap);
    va_end(ap);
    /* one line: a record's strings (an id, a CPU model) may hold control
     * characters (found by fuzzing) */
    for (char *p = buf + used; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* A cache entry of m by level and type that the user did not override. */
/* A cache of m at this level and type, preferring one of the given size
 * (a description may list a level and type more than once: any entry of the
 * same size is a match, found by fuzzing). */
static const json_t *find_cache(
    const json_t *m, json_int_t level, const char *type, json_int_t size)
{
    size_t i;
    json_t *c;
    const json_t *first = NULL;
    json_array_foreach(json_object_get(m, "caches"), i, c)
    {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (json_integer_value(json_object_get(c, "level")) == level
            && !strcmp(t ? t : "", type ? type : "")
            && !json_is_true(json_object_get(c, "overridden"))) {
            if (json_integer_value(json_object_get(c, "size")) == size)
                return c;
            if (!first)
                first = c;
        }
    }
    return first;
}

static void size_str(char *buf, size_t len, double b)
{
    if (b >= 1 << 30)
        snprintf(buf, len, "%.1f GiB", b / (1 << 30));
    else if (b >= 1 << 20)
        snprintf(buf, len, "%.0f MiB", b / (1 << 20));
    else
        snprintf(buf, len, "%.0f KiB", b / 1024);
}

int comet_bench_machine_diff(const json_t *here, const json_t *there, char *what, size_t whatlen)
{
    static const char *const ints[] = { "packages", "cores", "pus", NULL };
    char note[COMET_ERRLEN] = "", a[32], b[32];
    int diffs = 0, compared = 0;
    const char *sh = json_string_value(json_object_get(here, "cpu_model")),
               *st = json_string_value(json_object_get(there, "cpu_model"));
    if (sh && st) {
        compared++;
        if (strcmp(sh, st) && ++diffs)
            add_note(note, sizeof note, ", ", "cpu_model '%.60s' (this machine: '%.60s')", st, sh);
    }
    for (size_t i = 0; ints[i]; i++) {
        json_t *h = json_object_get(here, ints[i]), *t = json_object_get(there, ints[i]);
        if (!json_is_integer(h) || !json_is_integer(t))
            continue;
        compared++;
        if (json_integer_value(h) != json_integer_value(t) && ++diffs)
            add_note(note, sizeof note, ", ",
                "%s %" JSON_INTEGER_FORMAT " (this machine: %" JSON_INTEGER_FORMAT ")", ints[i],
                json_integer_value(t), json_integer_value(h));
    }
    json_t *mh = json_object_get(here, "memory_bytes"),
           *mt = json_object_get(there, "memory_bytes");
    /* a size that is not positive describes no machine: not compared
     * (a negative one made a record foreign to itself; fuzz finding) */
    if (json_is_integer(mh) && json_is_integer(mt) && json_integer_value(mh) > 0
        && json_integer_value(mt) > 0) {
        /* MemTotal moves a little between kernels and boots: 2% is the
         * same machine, a different DIMM population is not */
        double h = (double)json_integer_value(mh), t = (double)json_integer_value(mt);
        compared++;
        if (fabs(h - t) > 0.02 * fmax(h, t) && ++diffs) {
            size_str(a, sizeof a, t);
            size_str(b, sizeof b, h);
            add_note(note, sizeof note, ", ", "memory %s (this machine: %s)", a, b);
        }
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(there, "caches"), i, c)
    {
        json_int_t level = json_integer_value(json_object_get(c, "level"));
        const char *type = json_string_value(json_object_get(c, "type"));
        if (json_is_true(json_object_get(c, "overridden"))
            || !json_is_array(json_object_get(here, "caches")))
            continue;
        const json_t *hc
            = find_cache(here, level, type, json_integer_value(json_object_get(c, "size")));
        double ts = (double)json_integer_value(json_object_get(c, "size"));
        compared++;
        size_str(a, sizeof a, ts);
        if (!hc && ++diffs)
            add_note(note, sizeof note, ", ", "L%" JSON_INTEGER_FORMAT " %s (this machine: none)",
                level, a);
        else if (hc
            && json_integer_value(json_object_get(hc, "size"))
                != json_integer_value(json_object_get(c, "size")) /* exact: no double rounding */
            && ++diffs) {
            size_str(b, sizeof b, (double)json_integer_value(json_object_get(hc, "size")));
            add_note(note, sizeof note, ", ", "L%" JSON_INTEGER_FORMAT " %s (this machine: %s)",
                level, a, b);
        }
    }
    if (!compared) {
        /* nothing but an id (the collectives worker's run record): the
         * probe's id hashes the same fields and the hostname */
        const char *ih = json_string_value(json_object_get(here, "id")),
                   *it = json_string_value(json_object_get(there, "id"));
        if (!ih || !it || strcmp(ih, it)) {
            diffs = 1;
            add_note(note, sizeof note, ", ",
                "machine id '%.20s' (this machine: '%.20s'; no hardware fields to compare)",
                it ? it : "none", ih ? ih : "none");
        }
    }
    if (what && whatlen)
        snprintf(what, whatlen, "%s", note);
    return diffs;
}

int comet_bench_records_load_opts(const char *path, const comet_bench_load_opts *o, json_t ***recs,
    size_t *n, comet_bench_load_info *info, char *err, size_t errlen)
{
    char *data = NULL;
    size_t len = 0, cap = 0, cnt = 0, lineno = 0;
    json_t **out = NULL;
    comet_bench_load_info inf = { 0 };
    int rc;
    *recs = NULL;
    *n = 0;
    if (err && errlen)
        err[0] = 0;
    if ((rc = comet_util_read_file(path, &data, &len, err, errlen)))
        return rc;
    char torn[COMET_ERRLEN] = "", foreign[COMET_ERRLEN] = "";
    for (size_t pos = 0; pos < len;) {
        char *nl = memchr(data + pos, '\n', len - pos);
        size_t l = nl ? (size_t)(nl - (data + pos)) : len - pos;
        int last_unterminated = !nl;
        lineno++;
        const char *line = data + pos;
        pos += l + (nl ? 1 : 0);
        if (blank(line, l))
            continue;
        json_error_t je;
        char why[COMET_ERRLEN] = "";
        int up = 0;
        json_t *rec = json_loadb(line, l, JSON_REJECT_DUPLICATES, &je);
        if (!rec)
            snprintf(why, sizeof why, "not valid JSON: %s (column %d)", je.text, je.column);
        else if (json_is_object(rec) && (up = upgrade(rec, why, sizeof why)) < 0)
            ;
        else if (comet_bench_record_check(rec, why, sizeof why))
            ;
        else
            why[0] = 0;
        if (why[0]) {
            json_decref(rec);
            if (last_unterminated && up >= 0) {
                /* What an interrupted writer leaves: skip it, say so. */
                inf.torn_line = lineno;
                snprintf(torn, sizeof torn, "%s:%zu: torn last line skipped (interrupted run?): %s",
                    path, lineno, why);
                continue;
            }
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s:%zu: %s", path, lineno, why);
            goto fail;
        }
        if (up > 0 && !inf.converted++)
            inf.converted_line = lineno;
        const char *kind = json_string_value(json_object_get(rec, "kind"));
        if (!strcmp(kind, "run")) {
            inf.runs++;
            if (o && o->machine
                && comet_bench_machine_diff(
                    o->machine, json_object_get(rec, "machine"), why, sizeof why)) {
                if (!o->foreign_ok) {
                    json_decref(rec);
                    rc = comet_util_seterr(err, errlen, -EINVAL,
                        "%s:%zu: measured on another machine: %s (--foreign-ok uses it anyway)",
                        path, lineno, why);
                    goto fail;
                }
                if (!inf.foreign_line) {
                    inf.foreign_line = lineno;
                    snprintf(foreign, sizeof foreign,
                        "%s:%zu: from another machine, used as asked (--foreign-ok): %s", path,
                        lineno, why);
                }
            }
        } else if (!inf.runs && o && o->machine) {
            /* a measurement with no run record before it: where it was measured
             * is unknown, so the machine check cannot pass it */
            if (!o->foreign_ok) {
                json_decref(rec);
                rc = comet_util_seterr(err, errlen, -EINVAL,
                    "%s:%zu: a measurement with no run record before it: the machine it was "
                    "measured on is unknown (--foreign-ok uses it anyway)",
                    path, lineno);
                goto fail;
            }
            if (!inf.foreign_line) {
                inf.foreign_line = lineno;
                snprintf(foreign, sizeof foreign,
                    "%s:%zu: of unknown origin (no run record), used as asked (--foreign-ok)", path,
                    lineno);
            }
        }
        if (cnt == cap) {
            size_t nc = cap ? 2 * cap : 64;
            json_t **t = realloc(out, nc * sizeof *t);
            if (!t) {
                json_decref(rec);
                rc = comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", path);
                goto fail;
            }
            out = t;
            cap = nc;
        }
        out[cnt++] = rec;
    }
    inf.lines = lineno;
    free(data);
    /* warnings (the call succeeds): foreign machine, conversion, torn tail */
    if (err && errlen) {
        if (foreign[0])
            add_note(err, errlen, "; ", "%s", foreign);
        if (inf.converted)
            add_note(err, errlen, "; ", "%s:%zu: %zu record(s) of schema %s converted to %s", path,
                inf.converted_line, inf.converted, COMET_BENCH_SCHEMA_V1, COMET_BENCH_SCHEMA);
        if (torn[0])
            add_note(err, errlen, "; ", "%s", torn);
    }
    *recs = out;
    *n = cnt;
    if (info)
        *info = inf;
    return 0;
fail:
    free(data);
    comet_bench_records_free(out, cnt);
    return rc;
}

int comet_bench_records_load_ex(const char *path, json_t ***recs, size_t *n,
    comet_bench_load_info *info, char *err, size_t errlen)
{
    return comet_bench_records_load_opts(path, NULL, recs, n, info, err, errlen);
}

int comet_bench_records_load(const char *path, json_t ***recs, size_t *n, char *err, size_t errlen)
{
    return comet_bench_records_load_ex(path, recs, n, NULL, err, errlen);
}

/* ------------------------------------------------------------------ */
/* CSV export                                                         */
/* ------------------------------------------------------------------ */

/* A CSV field: quoted when it holds a comma, quote or newline. */
static void csv_str(FILE *fp, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, fp);
        return;
    }
    fputc('"', fp);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', fp);
        fputc(*s, fp);
    }
    fputc('"', fp);
}

static void csv_num(FILE *fp, const json_t *v)
{
    if (json_is_integer(v))
        fprintf(fp, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        fprintf(fp, "%.9g", json_real_value(v));
    else if (json_is_boolean(v))
        fputs(json_is_true(v) ? "1" : "0", fp);
}

/* Columns of the export: identity fields, then every key of shape, params,
 * stats (not the raw samples), load and env, then every other top-level
 * number or flag, each group sorted by name. A column is a (group, key)
 * pair; the union over the records, so records of several kinds share one
 * table with empty cells where a field does not apply. */
typedef struct csv_col {
    const char *group; /* NULL: top level */
    const char *key;
} csv_col;

static const char *const csv_identity[] = { "run_id", "kind", "op", "variant", "time", "machine_id",
    "threads", "ranks", "link", "nodes", NULL };
static const char *const csv_groups[] = { "shape", "params", "stats", "load", "env", NULL };

static int csv_is_identity(const char *k)
{
    for (size_t i = 0; csv_identity[i]; i++)
        if (!strcmp(csv_identity[i], k))
            return 1;
    return 0;
}

static int csv_is_group(const char *k)
{
    for (size_t i = 0; csv_groups[i]; i++)
        if (!strcmp(csv_groups[i], k))
            return 1;
    return 0;
}

static int csv_col_cmp(const void *a, const void *b)
{
    const csv_col *x = a, *y = b;
    return strcmp(x->key, y->key);
}

/* Adds the keys of object o (scalars only) to the set *cols of group g. */
static int csv_collect(json_t *set, const json_t *o)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        if (json_is_array(v) || json_is_object(v) || json_is_null(v))
            continue; /* samples_s, nested objects: not a cell */
        if (json_object_set_new(set, k, json_true()))
            return -ENOMEM;
    }
    return 0;
}

static void csv_cell(FILE *fp, const json_t *v)
{
    if (json_is_string(v))
        csv_str(fp, json_string_value(v));
    else
        csv_num(fp, v);
}

/* Sorted keys of a set object, as columns of group g, appended to cols. */
static int csv_add_cols(csv_col **cols, size_t *n, const json_t *set, const char *g)
{
    size_t m = json_object_size(set), at = *n;
    if (!m)
        return 0;
    csv_col *c = realloc(*cols, (*n + m) * sizeof *c);
    if (!c)
        return -ENOMEM;
    *cols = c;
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)set, k, v)
    {
        c[*n].group = g;
        c[*n].key = k;
        (*n)++;
    }
    qsort(c + at, m, sizeof *c, csv_col_cmp);
    return 0;
}

int comet_bench_export_csv(
    json_t *const *recs, size_t n, const char *path, char *err, size_t errlen)
{
    json_t *sets[6] = { NULL };
    csv_col *cols = NULL;
    size_t ncols = 0;
    int rc = 0;
    for (size_t g = 0; g < 6; g++)
        if (!(sets[g] = json_object()))
            rc = -ENOMEM;
    /* pass 1: the union of the fields (sets[0..4]: groups, sets[5]: top level) */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        const json_t *r = recs[i];
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!kind || !strcmp(kind, "run"))
            continue;
        for (size_t g = 0; rc == 0 && csv_groups[g]; g++)
            rc = csv_collect(sets[g], json_object_get(r, csv_groups[g]));
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)r, k, v)
        {
            if (rc || csv_is_identity(k) || csv_is_group(k) || !strcmp(k, "schema"))
                continue;
            if (json_is_number(v) || json_is_boolean(v) || json_is_string(v))
                rc = json_object_set_new(sets[5], k, json_true()) ? -ENOMEM : 0;
        }
    }
    for (size_t i = 0; rc == 0 && csv_identity[i]; i++) {
        csv_col *c = realloc(cols, (ncols + 1) * sizeof *c);
        if (!c) {
            rc = -ENOMEM;
            break;
        }
        cols = c;
        cols[ncols].group = NULL;
        cols[ncols++].key = csv_identity[i];
    }
    for (size_t g = 0; rc == 0 && csv_groups[g]; g++)
        rc = csv_add_cols(&cols, &ncols, sets[g], csv_groups[g]);
    if (rc == 0)
        rc = csv_add_cols(&cols, &ncols, sets[5], NULL);
    if (rc) {
        free(cols);
        for (size_t g = 0; g < 6; g++)
            json_decref(sets[g]);
        return comet_util_seterr(err, errlen, rc, "%s: out of memory", path);
    }
    comet_util_atomic a;
    rc = comet_util_atomic_open(&a, path, err, errlen);
    if (rc) {
        free(cols);
        for (size_t g = 0; g < 6; g++)
            json_decref(sets[g]);
        return rc;
    }
    FILE *fp = a.fp;
    /* header: group_key for grouped fields (shape_M, stats_median_s, params_tile_m) */
    for (size_t c = 0; c < ncols; c++) {
        if (c)
            fputc(',', fp);
        if (cols[c].group)
            fprintf(fp, "%s_%s", cols[c].group, cols[c].key);
        else
            fputs(cols[c].key, fp);
    }
    fputc('\n', fp);
    for (size_t i = 0; i < n; i++) {
        const json_t *r = recs[i];
        const char *kind = json_string_value(json_object_get(r, "kind"));
        if (!kind || !strcmp(kind, "run"))
            continue;
        for (size_t c = 0; c < ncols; c++) {
            if (c)
                fputc(',', fp);
            const json_t *o = cols[c].group ? json_object_get(r, cols[c].group) : r;
            csv_cell(fp, json_object_get(o, cols[c].key));
        }
        fputc('\n', fp);
    }
    free(cols);
    for (size_t g = 0; g < 6; g++)
        json_decref(sets[g]);
    if (ferror(fp)) {
        int e = errno ? errno : EIO; /* the failed write's errno, e.g. ENOSPC */
        comet_util_atomic_abort(&a);
        return comet_util_seterr(err, errlen, -e, "%s: write failed: %s", path, strerror(e));
    }
    return comet_util_atomic_commit(&a, err, errlen);
}
