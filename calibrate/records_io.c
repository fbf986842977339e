/* Loading every results file of a directory (or single files) through the
 * results library, keeping which file gave how many records. */
#include "comet_calibrate.h"

#include "comet_results.h"
#include "comet_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int comet_calibrate_load_results(
    const char *const *paths, size_t npaths, comet_results_set *set, char *err, size_t errlen)
{
    return comet_calibrate_load_results_src(paths, npaths, set, NULL, NULL, err, errlen);
}

void comet_calibrate_sources_free(comet_calibrate_source *src, size_t nsrc)
{
    for (size_t i = 0; src && i < nsrc; i++)
        free((char *)src[i].path);
    free(src);
}

int comet_calibrate_load_results_src(const char *const *paths, size_t npaths,
    comet_results_set *set, comet_calibrate_source **srcp, size_t *nsrcp, char *err, size_t errlen)
{
    return comet_calibrate_load_results_opts(paths, npaths, NULL, set, srcp, nsrcp, err, errlen);
}

/* The files read, for the profile's provenance. */
typedef struct src_list {
    comet_calibrate_source *src;
    size_t n;
} src_list;

static int add_source(
    void *ctx, const char *file, size_t added, const comet_results_load_info *info)
{
    src_list *l = ctx;
    (void)info;
    if (!l)
        return 0;
    comet_calibrate_source *ns = realloc(l->src, (l->n + 1) * sizeof *ns);
    if (!ns)
        return -ENOMEM;
    l->src = ns;
    if (!(ns[l->n].path = strdup(file)))
        return -ENOMEM;
    ns[l->n++].records = added;
    return 0;
}

int comet_calibrate_load_results_opts(const char *const *paths, size_t npaths,
    const comet_results_load_opts *opts, comet_results_set *set, comet_calibrate_source **srcp,
    size_t *nsrcp, char *err, size_t errlen)
{
    src_list l = { NULL, 0 };
    char warn[COMET_ERRLEN] = "";
    int rc = 0;
    memset(set, 0, sizeof *set);
    if (srcp)
        *srcp = NULL;
    if (nsrcp)
        *nsrcp = 0;
    for (size_t p = 0; p < npaths && rc == 0; p++) {
        if (err && errlen)
            err[0] = '\0';
        rc = comet_results_load_path(
            paths[p], opts, set, add_source, srcp ? &l : NULL, err, errlen);
        /* warnings (torn last line, converted schema, foreign machine
         * accepted): every path's, as far as they fit */
        if (rc == 0 && err && err[0]) {
            size_t used = strlen(warn);
            if (used + 8 < sizeof warn)
                snprintf(warn + used, sizeof warn - used, "%s%s", used ? "; " : "", err);
        }
    }
    if (rc) {
        comet_results_set_free(set);
        comet_calibrate_sources_free(l.src, l.n);
        return rc;
    }
    if (err && errlen) /* 0 returned: err holds a warning or nothing */
        snprintf(err, errlen, "%s", warn);
    if (srcp)
        *srcp = l.src;
    else
        comet_calibrate_sources_free(l.src, l.n);
    if (nsrcp)
        *nsrcp = l.n;
    return 0;
}
