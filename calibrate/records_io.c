/* Loading every results file of a directory (or single files). */
#include "comet_calibrate.h"

#include "comet_bench.h"
#include "comet_util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int comet_calibrate_load_results(
    const char *const *paths, size_t npaths, json_t ***recs, size_t *n, char *err, size_t errlen)
{
    return comet_calibrate_load_results_src(paths, npaths, recs, n, NULL, NULL, err, errlen);
}

void comet_calibrate_sources_free(comet_calibrate_source *src, size_t nsrc)
{
    for (size_t i = 0; src && i < nsrc; i++)
        free((char *)src[i].path);
    free(src);
}

int comet_calibrate_load_results_src(const char *const *paths, size_t npaths, json_t ***recs,
    size_t *n, comet_calibrate_source **srcp, size_t *nsrcp, char *err, size_t errlen)
{
    return comet_calibrate_load_results_opts(
        paths, npaths, NULL, recs, n, srcp, nsrcp, err, errlen);
}

int comet_calibrate_load_results_opts(const char *const *paths, size_t npaths,
    const comet_bench_load_opts *opts, json_t ***recs, size_t *n, comet_calibrate_source **srcp,
    size_t *nsrcp, char *err, size_t errlen)
{
    json_t **all = NULL;
    size_t cnt = 0, cap = 0, nsrc = 0;
    comet_calibrate_source *src = NULL;
    char warn[COMET_ERRLEN] = "";
    int rc = 0;
    *recs = NULL;
    *n = 0;
    if (srcp)
        *srcp = NULL;
    if (nsrcp)
        *nsrcp = 0;
    for (size_t p = 0; p < npaths; p++) {
        struct stat st;
        char **files = NULL;
        size_t nf = 0;
        if (stat(paths[p], &st) != 0) {
            rc = comet_util_seterr(err, errlen, -ENOENT, "%s: no such file or directory", paths[p]);
            goto fail;
        }
        if (S_ISDIR(st.st_mode)) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%s/results", paths[p]);
            DIR *d = opendir(dir);
            if (!d) {
                snprintf(dir, sizeof dir, "%s", paths[p]);
                d = opendir(dir);
            }
            if (!d) {
                rc = comet_util_seterr(err, errlen, -EIO, "%s: cannot read directory", paths[p]);
                goto fail;
            }
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                size_t l = strlen(e->d_name);
                if (l < 7 || strcmp(e->d_name + l - 6, ".jsonl"))
                    continue;
                char **nfiles = realloc(files, (nf + 1) * sizeof(char *));
                if (!nfiles)
                    break;
                files = nfiles;
                size_t sz = strlen(dir) + l + 2;
                files[nf] = malloc(sz);
                if (files[nf])
                    snprintf(files[nf++], sz, "%s/%s", dir, e->d_name);
            }
            closedir(d);
            qsort(files, nf, sizeof(char *), cmp_str);
        } else {
            files = malloc(sizeof(char *));
            if (files && (files[0] = strdup(paths[p])) != NULL)
                nf = 1;
        }
        for (size_t f = 0; f < nf; f++) {
            json_t **r = NULL;
            size_t m = 0;
            if (rc == 0 && err && errlen) /* keep an earlier file's error */
                err[0] = '\0';
            if (rc == 0
                && (rc = comet_bench_records_load_opts(files[f], opts, &r, &m, NULL, err, errlen))
                    == 0) {
                /* warnings (torn last line, converted schema, foreign
                 * machine accepted): every file's, as far as they fit */
                if (err && err[0]) {
                    size_t used = strlen(warn);
                    if (used + 8 < sizeof warn)
                        snprintf(warn + used, sizeof warn - used, "%s%s", used ? "; " : "", err);
                }
                if (cnt + m > cap) {
                    size_t nc = (cnt + m) * 2 + 16;
                    json_t **na = realloc(all, nc * sizeof(json_t *));
                    if (!na) {
                        comet_bench_records_free(r, m);
                        rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
                    } else {
                        all = na;
                        cap = nc;
                    }
                }
                if (rc == 0 && srcp) {
                    comet_calibrate_source *ns = realloc(src, (nsrc + 1) * sizeof *src);
                    if (!ns || !(ns[nsrc].path = strdup(files[f]))) {
                        if (ns)
                            src = ns;
                        comet_bench_records_free(r, m);
                        rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
                    } else {
                        src = ns;
                        src[nsrc++].records = m;
                    }
                }
                if (rc == 0) {
                    if (m) /* an empty file: all may still be NULL */
                        memcpy(all + cnt, r, m * sizeof(json_t *));
                    cnt += m;
                    free(r);
                }
            }
            free(files[f]);
        }
        free(files);
        if (rc)
            goto fail;
    }
    *recs = all;
    *n = cnt;
    if (err && errlen) /* 0 returned: err holds a warning or nothing */
        snprintf(err, errlen, "%s", warn);
    if (srcp)
        *srcp = src;
    else
        comet_calibrate_sources_free(src, nsrc);
    if (nsrcp)
        *nsrcp = nsrc;
    return 0;
fail:
    for (size_t i = 0; i < cnt; i++)
        json_decref(all[i]);
    free(all);
    comet_calibrate_sources_free(src, nsrc);
    return rc;
}
