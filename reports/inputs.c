/* Loading the report's inputs. Results are required; the profile and the
 * predictions are optional (a failed stage), but any file that exists and
 * does not parse is an error naming it: a report must never quietly leave
 * out what it was given. */
#include "reports_internal.h"

#include "comet_results.h"
#include "comet_util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

double rp_median(double *v, size_t n)
{
    return comet_util_quantile(v, n, 0.5);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int rp_list_results(const char *dir, char ***names, size_t *n, char *err, size_t errlen)
{
    char rdir[RP_PATH];
    snprintf(rdir, sizeof rdir, "%s/results", dir);
    *names = NULL;
    *n = 0;
    DIR *d = opendir(rdir);
    if (!d)
        return comet_util_seterr(err, errlen, -ENOENT, "%s: %s (run 'comet run' or 'comet bench')",
            rdir, strerror(errno));
    char **v = NULL;
    size_t k = 0, cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 7 || strcmp(e->d_name + l - 6, ".jsonl") || e->d_name[0] == '.')
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, cap * sizeof *v);
            if (!nv) {
                rc = -ENOMEM;
                break;
            }
            v = nv;
        }
        if (!(v[k] = strdup(e->d_name))) {
            rc = -ENOMEM;
            break;
        }
        k++;
    }
    closedir(d);
    if (rc) {
        for (size_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
        return comet_util_seterr(err, errlen, rc, "%s: out of memory", rdir);
    }
    if (k)
        qsort(v, k, sizeof *v, cmp_str);
    *names = v;
    *n = k;
    return 0;
}

/* Loads an optional JSON file: 0 with *out NULL when absent, -EINVAL when corrupt. */
static int load_optional(
    const char *path, json_t **out, char *note, size_t notelen, char *err, size_t errlen)
{
    struct stat st;
    json_error_t je;
    *out = NULL;
    if (stat(path, &st) != 0) {
        snprintf(note, notelen, "%s does not exist", path);
        return 0;
    }
    json_t *j = json_load_file(path, 0, &je);
    if (!j)
        return comet_util_seterr(
            err, errlen, -EINVAL, "%s:%d: not valid JSON: %s", path, je.line, je.text);
    if (!json_is_object(j)) {
        json_decref(j);
        return comet_util_seterr(err, errlen, -EINVAL, "%s: not a JSON object", path);
    }
    *out = j;
    return 0;
}

int rp_inputs_load(
    rp_inputs *in, const char *dir, const comet_results_load_opts *lo, char *err, size_t errlen)
{
    char **names = NULL, path[RP_PATH + 300];
    size_t nn = 0;
    int rc;
    memset(in, 0, sizeof *in);
    in->dir = dir;
    if ((rc = rp_list_results(dir, &names, &nn, err, errlen)) != 0)
        return rc;
    if (nn == 0) {
        rc = comet_util_seterr(err, errlen, -ENOENT,
            "%s/results: no results files (*.jsonl); run 'comet run' or 'comet bench'", dir);
        goto fail;
    }
    if (!(in->files = calloc(nn, sizeof *in->files))) {
        rc = comet_util_seterr(err, errlen, -ENOMEM, "report: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < nn; i++) {
        char warn[COMET_ERRLEN] = "";
        size_t first = in->set.n;
        snprintf(path, sizeof path, "%s/results/%s", dir, names[i]);
        comet_results_load_info linfo;
        memset(&linfo, 0, sizeof linfo);
        if ((rc = comet_results_load(path, lo, &in->set, &linfo, warn, sizeof warn)) != 0) {
            /* the reader's message names file:line */
            comet_util_seterr(err, errlen, rc == -ENOMEM ? -ENOMEM : -EINVAL, "%s", warn);
            rc = rc == -ENOMEM ? -ENOMEM : -EINVAL;
            goto fail;
        }
        /* the set may have moved: point at it again */
        in->recs = in->set.recs;
        in->n = in->set.n;
        rp_file *f = &in->files[in->nfiles++];
        snprintf(f->path, sizeof f->path, "%s", path);
        /* torn line, converted schema, another machine: the report says so */
        snprintf(f->warning, sizeof f->warning, "%s", warn);
        f->torn = linfo.torn_line > 0;
        for (size_t q = first; q < in->set.n; q++) {
            const comet_results_record *r = &in->set.recs[q];
            if (r->kind == COMET_RESULTS_RUN) {
                if (!f->run_id[0]) {
                    snprintf(f->run_id, sizeof f->run_id, "%s", r->run_id);
                    snprintf(f->time, sizeof f->time, "%s", r->time);
                    snprintf(f->kind, sizeof f->kind, "%s", r->bench);
                }
            } else {
                f->records++;
                char sh[96];
                comet_results_shape_str(&r->shape, sh, sizeof sh);
                snprintf(f->last, sizeof f->last, "%s %s/%s %s, %d thread(s)",
                    comet_results_kind_name(r->kind), r->op, r->variant, sh, r->threads);
            }
        }
        /* complete: the completion mark of its kind lists it */
        {
            char mpath[RP_PATH + 128], *mark = NULL;
            size_t ml = 0;
            snprintf(mpath, sizeof mpath, "%s/results/%s.complete", dir, f->kind);
            if (f->kind[0] && comet_util_read_file(mpath, &mark, &ml, NULL, 0) == 0) {
                for (const char *l = mark; *l && !f->complete;) {
                    size_t q = strcspn(l, "\n");
                    f->complete = q == strlen(names[i]) && !strncmp(l, names[i], q);
                    l += q + (l[q] == '\n');
                }
                free(mark);
            }
            if (f->torn)
                f->complete = 0;
        }
    }
    /* the first machine, replaced by one whose PAPI was probed (the
     * collectives launcher skips that probe); chosen once the set is whole,
     * as loading moves its records */
    in->machine_rec = NULL;
    for (size_t q = 0; q < in->n; q++)
        if (in->recs[q].kind == COMET_RESULTS_RUN
            && (!in->machine_rec || !strcmp(in->machine_rec->papi_status, "not probed")))
            in->machine_rec = &in->recs[q].machine;
    if (!in->machine_rec) {
        rc = comet_util_seterr(err, errlen, -EINVAL,
            "%s/results: no run record with a machine description in any results file", dir);
        goto fail;
    }

    snprintf(path, sizeof path, "%s/profile.json", dir);
    if ((rc = load_optional(
             path, &in->profile, in->profile_note, sizeof in->profile_note, err, errlen))
        != 0)
        goto fail;
    if (in->profile) {
        if ((rc = comet_model_hw_load(path, &in->hw, err, errlen)) != 0) {
            rc = rc == -ENOMEM ? rc : -EINVAL;
            goto fail;
        }
        in->have_hw = 1;
    }
    snprintf(path, sizeof path, "%s/predictions.json", dir);
    if ((rc = load_optional(path, &in->pred, in->pred_note, sizeof in->pred_note, err, errlen))
        != 0)
        goto fail;
    if (in->pred && !json_is_array(json_object_get(in->pred, "predictions"))) {
        rc = comet_util_seterr(
            err, errlen, -EINVAL, "%s: no \"predictions\" array (not written by comet run?)", path);
        goto fail;
    }
    snprintf(path, sizeof path, "%s/run.json", dir);
    if ((rc = load_optional(
             path, &in->runlog, in->runlog_note, sizeof in->runlog_note, err, errlen))
        != 0)
        goto fail;
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    return 0;
fail:
    for (size_t i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    rp_inputs_free(in);
    return rc;
}

void rp_inputs_free(rp_inputs *in)
{
    comet_results_set_free(&in->set);
    free(in->files);
    json_decref(in->profile);
    json_decref(in->pred);
    json_decref(in->runlog);
    if (in->have_hw)
        comet_model_hw_free(&in->hw);
    memset(in, 0, sizeof *in);
}
