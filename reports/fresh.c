/* Resumable runs: which stored results may be reused instead of measured
 * again, and moving the others out of the way. A results file is reused
 * only when the bench that wrote it finished (comet run marks it complete
 * afterwards), it is from this machine, young, and reads cleanly. */
#include "reports_internal.h"

#include "comet_results.h"
#include "comet_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int has_prefix(const char *name, const char *kind)
{
    size_t l = strlen(kind);
    return !strncmp(name, kind, l) && name[l] == '-';
}

int comet_reports_results_mark(const char *dir, const char *kind, char *err, size_t errlen)
{
    char **names = NULL, path[RP_PATH + 128];
    size_t n = 0;
    int rc = rp_list_results(dir, &names, &n, err, errlen);
    if (rc)
        return rc;
    /* names sort by run id (a UTC timestamp): the last one is the newest */
    const char *newest = NULL;
    for (size_t i = 0; i < n; i++)
        if (has_prefix(names[i], kind))
            newest = names[i];
    if (!newest) {
        rc = comet_util_seterr(
            err, errlen, -ENOENT, "%s/results: no %s-*.jsonl to mark complete", dir, kind);
    } else {
        /* the mark lists every complete file of the kind, newest last: the
         * report tells a complete file from an interrupted one */
        snprintf(path, sizeof path, "%s/results/%s.complete", dir, kind);
        char *old = NULL, *text = NULL;
        size_t ol = 0;
        if (comet_util_read_file(path, &old, &ol, NULL, 0) != 0)
            old = NULL;
        size_t cap = (old ? ol : 0) + strlen(newest) + 2;
        if (!(text = malloc(cap))) {
            rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
        } else {
            size_t tl = 0;
            for (char *l = old; l && *l;) {
                size_t k = strcspn(l, "\n");
                if (k && (k != strlen(newest) || strncmp(l, newest, k))) {
                    memcpy(text + tl, l, k);
                    tl += k;
                    text[tl++] = '\n';
                }
                l += k + (l[k] == '\n');
            }
            tl += (size_t)snprintf(text + tl, cap - tl, "%s\n", newest);
            rc = comet_util_write_atomic(path, text, tl, err, errlen);
        }
        free(old);
        free(text);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int comet_reports_results_fresh(const char *dir, const char *kind, const char *machine_id,
    double max_age_s, char *why, size_t whylen)
{
    char path[RP_PATH + 128], *mark = NULL, file[512];
    size_t len = 0;
    comet_results_set set = { 0 };
    int fresh = 0;
    snprintf(path, sizeof path, "%s/results/%s.complete", dir, kind);
    if (comet_util_read_file(path, &mark, &len, NULL, 0) != 0) {
        comet_util_seterr(why, whylen, 0, "no completed %s run in %s/results", kind, dir);
        return 0;
    }
    /* the newest complete file is the mark's last line */
    const char *last = mark;
    for (const char *l = mark; *l;) {
        size_t k = strcspn(l, "\n");
        if (k)
            last = l;
        l += k + (l[k] == '\n');
    }
    snprintf(file, sizeof file, "%.*s", (int)strcspn(last, "\n"), last);
    free(mark);
    if (!has_prefix(file, kind) || strchr(file, '/')) {
        comet_util_seterr(why, whylen, 0, "%s: does not name a %s results file", path, kind);
        return 0;
    }
    snprintf(path, sizeof path, "%s/results/%s", dir, file);
    struct stat st;
    if (stat(path, &st) != 0) {
        comet_util_seterr(why, whylen, 0, "%s: %s", path, strerror(errno));
        return 0;
    }
    double age = difftime(time(NULL), st.st_mtime);
    if (age > max_age_s) {
        comet_util_seterr(
            why, whylen, 0, "%s is %.1f h old (limit %.1f h)", file, age / 3600, max_age_s / 3600);
        return 0;
    }
    char err[COMET_ERRLEN] = "";
    comet_results_load_info info;
    if (comet_results_load(path, NULL, &set, &info, err, sizeof err) != 0) {
        comet_util_seterr(why, whylen, 0, "%s", err);
        return 0;
    }
    if (info.torn_line) { /* interrupted (a converted older schema is fine) */
        comet_util_seterr(why, whylen, 0, "%s", err);
        goto out;
    }
    if (!set.n || set.recs[0].kind != COMET_RESULTS_RUN) {
        comet_util_seterr(why, whylen, 0, "%s: no run record first", file);
        goto out;
    }
    const comet_results_machine *m = &set.recs[0].machine;
    if (strcmp(m->id, machine_id)) {
        comet_util_seterr(
            why, whylen, 0, "%s was measured on machine %s, this is %s", file, m->id, machine_id);
        goto out;
    }
    size_t meas = 0;
    for (size_t i = 0; i < set.n; i++)
        meas += set.recs[i].kind != COMET_RESULTS_RUN;
    if (!meas) {
        comet_util_seterr(why, whylen, 0, "%s holds no measurements", file);
        goto out;
    }
    fresh = 1;
    comet_util_seterr(
        why, whylen, 0, "%s: %zu records, %.0f min old, this machine", file, meas, age / 60);
out:
    comet_results_set_free(&set);
    return fresh;
}

int comet_reports_results_archive(const char *dir, const char *kind, char *err, size_t errlen)
{
    char **names = NULL, adir[RP_PATH + 64], from[RP_PATH + 600], to[RP_PATH + 700], stamp[40];
    size_t n = 0;
    int rc = rp_list_results(dir, &names, &n, err, errlen), moved = 0;
    if (rc == -ENOENT)
        return 0; /* nothing stored yet */
    if (rc)
        return rc;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(adir, sizeof adir, "%s/archive/%s", dir, stamp);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (kind && !has_prefix(names[i], kind))
            continue;
        if (!moved && (rc = comet_util_mkdir_p(adir, err, errlen)) != 0)
            break;
        snprintf(from, sizeof from, "%s/results/%s", dir, names[i]);
        snprintf(to, sizeof to, "%s/%s", adir, names[i]);
        if (rename(from, to) != 0)
            rc = comet_util_seterr(
                err, errlen, -errno, "cannot move %s to %s: %s", from, to, strerror(errno));
        else
            moved++;
    }
    /* the marks of what moved */
    static const char *const kinds[] = { "memory", "kernels", "collectives", "llm" };
    for (int k = 0; k < 4 && rc == 0; k++) {
        if (kind && strcmp(kind, kinds[k]))
            continue;
        snprintf(from, sizeof from, "%s/results/%s.complete", dir, kinds[k]);
        unlink(from);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc ? rc : moved;
}
