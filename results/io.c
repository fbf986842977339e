/* Results files: the append-only writer, the loader (every line through
 * comet_results_parse()), machine identity and the CSV export.
 * Format: docs/FORMATS.md. */
#include "comet_results.h"
#include "comet_util.h"
#include "results_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

int comet_results_writer_open(comet_results_writer *w, const char *path, char *err, size_t errlen)
{
    char dir[4096];
    int rc = 0;
    memset(w, 0, sizeof *w);
    w->fd = -1;
    if (!path || !*path)
        return comet_util_seterr(err, errlen, -EINVAL, "results: empty results path");
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
        rc = comet_util_seterr(err, errlen, -ENOMEM, "results: out of memory");
        goto fail;
    }
    return 0;
fail:
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    return rc;
}

/* 1 if `in` holds a key (at any object depth) that `out` lacks; its dotted
 * path goes to what. */
static int unknown_field(
    const json_t *in, const json_t *out, const char *prefix, char *what, size_t whatlen)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)in, k, v)
    {
        const json_t *o = json_object_get(out, k);
        char path[160];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", k);
        if (!o) {
            snprintf(what, whatlen, "%s", path);
            return 1;
        }
        if (json_is_object(v) && unknown_field(v, o, path, what, whatlen))
            return 1;
    }
    return 0;
}

int comet_results_writer_append(
    comet_results_writer *w, const json_t *rec, char *err, size_t errlen)
{
    char why[COMET_ERRLEN];
    int rc = 0;
    char *text = NULL;
    off_t keep = -1;
    if (!w || w->fd < 0)
        return comet_util_seterr(err, errlen, -EBADF, "results: results file is not open");
    if ((rc = comet_results_check(rec, why, sizeof why)))
        return comet_util_seterr(err, errlen, rc, "%s: refusing invalid record: %s", w->path, why);
    /* through the reader and back: what lands on disk is what the typed
     * record holds (one field table for both directions) */
    comet_results_record typed;
    json_t *copy = json_deep_copy(rec), *out = NULL;
    if (!copy)
        return comet_util_seterr(err, errlen, -ENOMEM, "results: out of memory");
    rc = comet_results_parse(copy, &typed, why, sizeof why);
    json_decref(copy);
    if (rc == -ENOMEM)
        return comet_util_seterr(err, errlen, rc, "results: out of memory");
    if (rc)
        return comet_util_seterr(err, errlen, rc, "%s: refusing invalid record: %s", w->path, why);
    out = comet_results_to_json(&typed);
    comet_results_record_free(&typed);
    /* a field the table does not know would be dropped here without a
     * word: refuse it, so a new field is added where the reader knows it */
    char lost[160] = "";
    if (out && unknown_field(rec, out, "", lost, sizeof lost)) {
        json_decref(out);
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: refusing record: field '%s' is not in the results field table "
            "(results/record.c)",
            w->path, lost);
    }
    text = out ? json_dumps(out, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(out);
    if (!text)
        return comet_util_seterr(err, errlen, -ENOMEM, "results: out of memory");
    size_t len = strlen(text);
    char *line = realloc(text, len + 2);
    if (!line) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "results: out of memory");
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

int comet_results_writer_close(comet_results_writer *w, char *err, size_t errlen)
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

void comet_results_json_free(json_t **recs, size_t n)
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
/* Machine identity                                                   */
/* ------------------------------------------------------------------ */

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

int comet_results_machine_diff(const json_t *here, const json_t *there, char *what, size_t whatlen)
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

/* ------------------------------------------------------------------ */
/* Loading                                                            */
/* ------------------------------------------------------------------ */

void comet_results_set_free(comet_results_set *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        comet_results_record_free(&s->recs[i]);
    free(s->recs);
    memset(s, 0, sizeof *s);
}

/* An absurd value of a measurement that passed the schema: a negative
 * rate, count or clock measures nothing (a hand-edited or corrupted file);
 * such records are skipped and counted rather than fitted. why names it. */
static int absurd(const comet_results_record *r, char *why, size_t whylen)
{
    static const struct {
        const char *name;
        size_t off;
    } f[] = {
        { "flops", offsetof(comet_results_record, flops) },
        { "bytes", offsetof(comet_results_record, bytes) },
        { "gflops", offsetof(comet_results_record, gflops) },
        { "gbs", offsetof(comet_results_record, gbs) },
        { "clock_mhz", offsetof(comet_results_record, clock_mhz) },
        { "algbw_GBs", offsetof(comet_results_record, algbw_GBs) },
        { "busbw_GBs", offsetof(comet_results_record, busbw_GBs) },
        { "latency_us", offsetof(comet_results_record, latency_us) },
    };
    if (r->kind == COMET_RESULTS_RUN)
        return 0;
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        double v = *(const double *)((const char *)r + f[i].off);
        if (comet_results_has(v) && v < 0) {
            snprintf(why, whylen, "%s = %g is negative", f[i].name, v);
            return 1;
        }
    }
    return 0;
}

static int set_push(comet_results_set *s, comet_results_record *r)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 64;
        comet_results_record *t = realloc(s->recs, nc * sizeof *t);
        if (!t)
            return -ENOMEM;
        s->recs = t;
        s->cap = nc;
    }
    s->recs[s->n++] = *r;
    memset(r, 0, sizeof *r);
    return 0;
}

int comet_results_load(const char *path, const comet_results_load_opts *o, comet_results_set *set,
    comet_results_load_info *info, char *err, size_t errlen)
{
    char *data = NULL;
    size_t len = 0, lineno = 0, first = set->n;
    comet_results_load_info inf = { 0 };
    comet_results_record rec = { 0 };
    int rc;
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
        memset(&rec, 0, sizeof rec);
        json_t *j = json_loadb(line, l, JSON_REJECT_DUPLICATES, &je);
        if (!j)
            snprintf(why, sizeof why, "not valid JSON: %s (column %d)", je.text, je.column);
        else if (json_is_object(j) && (up = comet_results__upgrade(j, why, sizeof why)) < 0)
            ;
        else if ((rc = comet_results_parse(j, &rec, why, sizeof why)) == -ENOMEM) {
            json_decref(j);
            rc = comet_util_seterr(err, errlen, rc, "%s: out of memory", path);
            goto fail;
        }
        json_decref(j);
        if (why[0]) {
            if (last_unterminated && up >= 0) {
                /* What an interrupted writer leaves: skip it, say so. */
                inf.torn_line = lineno;
                snprintf(torn, sizeof torn,
                    "%s:%zu: torn last line skipped (interrupted run?): %.300s", path, lineno, why);
                continue;
            }
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s:%zu: %s", path, lineno, why);
            goto fail;
        }
        rec.converted = up > 0;
        if (up > 0 && !inf.converted++)
            inf.converted_line = lineno;
        if (absurd(&rec, why, sizeof why)) {
            if (!inf.skipped++) {
                inf.skipped_line = lineno;
                snprintf(inf.skipped_why, sizeof inf.skipped_why, "%.150s", why);
            }
            comet_results_record_free(&rec);
            continue;
        }
        if (rec.kind == COMET_RESULTS_RUN) {
            inf.runs++;
            if (o && o->machine
                && comet_results_machine_diff(o->machine, rec.machine.json, why, sizeof why)) {
                if (!o->foreign_ok) {
                    rc = comet_util_seterr(err, errlen, -EINVAL,
                        "%s:%zu: measured on another machine: %s (--foreign-ok uses it anyway)",
                        path, lineno, why);
                    goto fail;
                }
                if (!inf.foreign_line) {
                    inf.foreign_line = lineno;
                    snprintf(foreign, sizeof foreign,
                        "%s:%zu: from another machine, used as asked (--foreign-ok): %.300s", path,
                        lineno, why);
                }
            }
        } else if (!inf.runs && o && o->machine) {
            /* a measurement with no run record before it: where it was measured
             * is unknown, so the machine check cannot pass it */
            if (!o->foreign_ok) {
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
        if (set_push(set, &rec)) {
            rc = comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", path);
            goto fail;
        }
    }
    inf.lines = lineno;
    free(data);
    /* warnings (the call succeeds): foreign machine, conversion, skips, torn tail */
    if (err && errlen) {
        if (foreign[0])
            add_note(err, errlen, "; ", "%s", foreign);
        if (inf.converted)
            add_note(err, errlen, "; ", "%s:%zu: %zu record(s) of schema %s converted to %s", path,
                inf.converted_line, inf.converted, COMET_RESULTS_SCHEMA_V1, COMET_RESULTS_SCHEMA);
        if (inf.skipped)
            add_note(err, errlen, "; ",
                "%s:%zu: %zu measurement(s) with absurd values skipped (first: %s)", path,
                inf.skipped_line, inf.skipped, inf.skipped_why);
        if (torn[0])
            add_note(err, errlen, "; ", "%s", torn);
    }
    if (info)
        *info = inf;
    return 0;
fail:
    comet_results_record_free(&rec);
    free(data);
    while (set->n > first)
        comet_results_record_free(&set->recs[--set->n]);
    if (!first) { /* as it was: an empty set holds no array */
        free(set->recs);
        set->recs = NULL;
        set->cap = 0;
    }
    return rc;
}

int comet_results_load_json(const char *path, const comet_results_load_opts *o, json_t ***recs,
    size_t *n, comet_results_load_info *info, char *err, size_t errlen)
{
    comet_results_set s = { 0 };
    *recs = NULL;
    *n = 0;
    int rc = comet_results_load(path, o, &s, info, err, errlen);
    if (rc)
        return rc;
    json_t **out = s.n ? malloc(s.n * sizeof *out) : NULL;
    if (s.n && !out) {
        comet_results_set_free(&s);
        return comet_util_seterr(err, errlen, -ENOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < s.n; i++)
        out[i] = json_incref(s.recs[i].json);
    *recs = out;
    *n = s.n;
    comet_results_set_free(&s);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The results files of a folder (FOLDER/results/ or FOLDER itself), sorted,
 * or the path itself when it is a file. */
static int list_files(const char *path, char ***files, size_t *nf, char *err, size_t errlen)
{
    struct stat st;
    *files = NULL;
    *nf = 0;
    if (stat(path, &st) != 0)
        return comet_util_seterr(err, errlen, -ENOENT, "%s: no such file or directory", path);
    if (!S_ISDIR(st.st_mode)) {
        if (!(*files = malloc(sizeof(char *))) || !((*files)[0] = strdup(path))) {
            free(*files);
            *files = NULL;
            return comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
        }
        *nf = 1;
        return 0;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/results", path);
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(dir, sizeof dir, "%s", path);
        d = opendir(dir);
    }
    if (!d)
        return comet_util_seterr(err, errlen, -EIO, "%s: cannot read directory", path);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".jsonl"))
            continue;
        char **nfiles = realloc(*files, (*nf + 1) * sizeof(char *));
        if (!nfiles)
            break;
        *files = nfiles;
        size_t sz = strlen(dir) + l + 2;
        (*files)[*nf] = malloc(sz);
        if ((*files)[*nf])
            snprintf((*files)[(*nf)++], sz, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (*nf)
        qsort(*files, *nf, sizeof(char *), cmp_str);
    return 0;
}

int comet_results_load_path(const char *path, const comet_results_load_opts *o,
    comet_results_set *set,
    int (*per_file)(void *ctx, const char *file, size_t added, const comet_results_load_info *info),
    void *ctx, char *err, size_t errlen)
{
    char **files = NULL, warn[COMET_ERRLEN] = "";
    size_t nf = 0;
    int rc = list_files(path, &files, &nf, err, errlen);
    for (size_t f = 0; rc == 0 && f < nf; f++) {
        size_t before = set->n;
        comet_results_load_info inf;
        if ((rc = comet_results_load(files[f], o, set, &inf, err, errlen)))
            break;
        /* warnings (torn last line, converted schema, foreign machine
         * accepted): every file's, as far as they fit */
        if (err && err[0]) {
            size_t used = strlen(warn);
            if (used + 8 < sizeof warn)
                snprintf(warn + used, sizeof warn - used, "%s%s", used ? "; " : "", err);
        }
        if (per_file && (rc = per_file(ctx, files[f], set->n - before, &inf)))
            rc = comet_util_seterr(err, errlen, rc, "%s: out of memory", files[f]);
    }
    for (size_t f = 0; f < nf; f++)
        free(files[f]);
    free(files);
    if (rc == 0 && err && errlen) /* 0 returned: err holds a warning or nothing */
        snprintf(err, errlen, "%s", warn);
    return rc;
}

/* ------------------------------------------------------------------ */
/* CSV export                                                         */
/* ------------------------------------------------------------------ */

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
        comet_util_csv_field(fp, json_string_value(v));
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

int comet_results_export_csv(
    const comet_results_record *recs, size_t n, const char *path, char *err, size_t errlen)
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
        /* the export copies every field of the record as read */
        const json_t *r = recs[i].json;
        if (recs[i].kind == COMET_RESULTS_RUN)
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
        /* the export copies every field of the record as read */
        const json_t *r = recs[i].json;
        if (recs[i].kind == COMET_RESULTS_RUN)
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
