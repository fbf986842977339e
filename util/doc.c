/* YAML/JSON document tree over libyaml's event parser. Every node keeps its
 * line and column so that validation errors can name file:line. Anchors and
 * aliases are refused: hardware files do not need them and they enable
 * exponential "billion laughs" inputs. */
#include "comet_util.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define DOC_MAX_DEPTH 64
#define DOC_MAX_NODES 1000000

typedef struct doc_file_name {
    char name[1];
} doc_file_name;

static comet_util_doc *node_new(comet_util_doc_kind kind, const yaml_mark_t *m, const char *file)
{
    comet_util_doc *d = calloc(1, sizeof(*d));
    if (!d)
        return NULL;
    d->kind = kind;
    d->line = (int)m->line + 1;
    d->column = (int)m->column + 1;
    d->file = file;
    return d;
}

static void node_free(comet_util_doc *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        node_free(d->child[i]);
    free(d->child);
    free(d->key);
    free(d->value);
    free(d);
}

void comet_util_doc_free(comet_util_doc *doc)
{
    if (!doc)
        return;
    /* The root owns the file name string (allocated just before it). */
    char *file = (char *)doc->file;
    node_free(doc);
    free(file);
}

static int node_add(comet_util_doc *parent, comet_util_doc *c)
{
    if ((parent->n & (parent->n - 1)) == 0) {
        size_t cap = parent->n ? parent->n * 2 : 4;
        comet_util_doc **nc = realloc(parent->child, cap * sizeof(*nc));
        if (!nc)
            return -ENOMEM;
        parent->child = nc;
    }
    parent->child[parent->n++] = c;
    return 0;
}

int comet_util_doc_parse(
    const char *name, const char *text, size_t len, comet_util_doc **out, char *err, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t ev;
    int rc = 0, have_event = 0;
    comet_util_doc *stack[DOC_MAX_DEPTH + 1];
    char *pending_key[DOC_MAX_DEPTH + 1];
    int depth = 0;
    size_t nodes = 0;
    comet_util_doc *root = NULL;
    char *file = strdup(name ? name : "<input>");

    *out = NULL;
    memset(pending_key, 0, sizeof(pending_key));
    if (!file)
        return comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
    if (!yaml_parser_initialize(&parser)) {
        free(file);
        return comet_util_seterr(err, errlen, -ENOMEM, "%s: cannot initialise parser", name);
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s:%zu:%zu: %s%s%s", file,
                parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                parser.problem ? parser.problem : "syntax error", parser.context ? " " : "",
                parser.context ? parser.context : "");
            goto fail;
        }
        have_event = 1;
        if (ev.type == YAML_STREAM_END_EVENT)
            break;
        if (ev.type == YAML_DOCUMENT_START_EVENT && root) {
            rc = comet_util_seterr(err, errlen, -EINVAL, "%s:%zu: only one document allowed", file,
                ev.start_mark.line + 1);
            goto fail;
        }
        if (ev.type == YAML_ALIAS_EVENT
            || ((ev.type == YAML_SCALAR_EVENT && ev.data.scalar.anchor)
                || (ev.type == YAML_MAPPING_START_EVENT && ev.data.mapping_start.anchor)
                || (ev.type == YAML_SEQUENCE_START_EVENT && ev.data.sequence_start.anchor))) {
            rc = comet_util_seterr(err, errlen, -EINVAL,
                "%s:%zu:%zu: anchors and aliases are not supported", file, ev.start_mark.line + 1,
                ev.start_mark.column + 1);
            goto fail;
        }
        comet_util_doc *nd = NULL;
        if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_MAPPING_START_EVENT
            || ev.type == YAML_SEQUENCE_START_EVENT) {
            if (++nodes > DOC_MAX_NODES) {
                rc = comet_util_seterr(err, errlen, -E2BIG, "%s: document too large", file);
                goto fail;
            }
            /* Scalar in key position of a map: remember it as the pending key. */
            if (ev.type == YAML_SCALAR_EVENT && depth > 0 && stack[depth - 1]->kind == COMET_DOC_MAP
                && !pending_key[depth - 1]) {
                const char *k = (const char *)ev.data.scalar.value;
                comet_util_doc *m = stack[depth - 1];
                /* YAML allows an implicit key of at most 1024 characters, so a
                 * longer one could be read but never written back as JSON
                 * that reads again: no field of ours is near that */
                if (strlen(k) > 256) {
                    rc = comet_util_seterr(err, errlen, -EINVAL,
                        "%s:%zu:%zu: a key longer than 256 characters", file,
                        ev.start_mark.line + 1, ev.start_mark.column + 1);
                    goto fail;
                }
                for (size_t i = 0; i < m->n; i++)
                    if (!strcmp(m->child[i]->key, k)) {
                        rc = comet_util_seterr(err, errlen, -EINVAL,
                            "%s:%zu:%zu: duplicate key '%s'", file, ev.start_mark.line + 1,
                            ev.start_mark.column + 1, k);
                        goto fail;
                    }
                pending_key[depth - 1] = strdup(k);
                if (!pending_key[depth - 1]) {
                    rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
                    goto fail;
                }
                yaml_event_delete(&ev);
                have_event = 0;
                continue;
            }
            if (depth > 0 && stack[depth - 1]->kind == COMET_DOC_MAP && !pending_key[depth - 1]) {
                rc = comet_util_seterr(err, errlen, -EINVAL,
                    "%s:%zu:%zu: map keys must be plain scalars", file, ev.start_mark.line + 1,
                    ev.start_mark.column + 1);
                goto fail;
            }
            comet_util_doc_kind kind = ev.type == YAML_SCALAR_EVENT ? COMET_DOC_SCALAR
                : ev.type == YAML_MAPPING_START_EVENT               ? COMET_DOC_MAP
                                                                    : COMET_DOC_SEQ;
            nd = node_new(kind, &ev.start_mark, file);
            if (!nd) {
                rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
                goto fail;
            }
            if (kind == COMET_DOC_SCALAR) {
                nd->value = strdup((const char *)ev.data.scalar.value);
                nd->quoted = ev.data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE
                    || ev.data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE;
                if (!nd->value) {
                    node_free(nd);
                    rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
                    goto fail;
                }
            }
            if (depth > 0) {
                comet_util_doc *p = stack[depth - 1];
                if (p->kind == COMET_DOC_MAP) {
                    nd->key = pending_key[depth - 1];
                    pending_key[depth - 1] = NULL;
                }
                if (node_add(p, nd) != 0) {
                    node_free(nd);
                    rc = comet_util_seterr(err, errlen, -ENOMEM, "out of memory");
                    goto fail;
                }
            } else {
                root = nd;
            }
            if (kind != COMET_DOC_SCALAR) {
                if (depth >= DOC_MAX_DEPTH) {
                    rc = comet_util_seterr(err, errlen, -EINVAL, "%s:%zu: nesting deeper than %d",
                        file, ev.start_mark.line + 1, DOC_MAX_DEPTH);
                    goto fail;
                }
                stack[depth++] = nd;
            }
        } else if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
            if (depth > 0) {
                free(pending_key[depth - 1]);
                pending_key[depth - 1] = NULL;
                depth--;
            }
        }
        yaml_event_delete(&ev);
        have_event = 0;
    }
    if (!root) {
        rc = comet_util_seterr(err, errlen, -EINVAL, "%s:1: empty document", file);
        goto fail;
    }
    yaml_event_delete(&ev);
    yaml_parser_delete(&parser);
    root->file = file;
    *out = root;
    return 0;
fail:
    if (have_event)
        yaml_event_delete(&ev);
    yaml_parser_delete(&parser);
    for (int i = 0; i <= DOC_MAX_DEPTH; i++)
        free(pending_key[i]);
    node_free(root);
    free(file);
    return rc;
}

int comet_util_doc_load(const char *path, comet_util_doc **out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = comet_util_read_file(path, &text, &len, err, errlen);
    if (rc)
        return rc;
    rc = comet_util_doc_parse(path, text, len, out, err, errlen);
    free(text);
    return rc;
}

const comet_util_doc *comet_util_doc_get(const comet_util_doc *map, const char *key)
{
    if (!map || map->kind != COMET_DOC_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (map->child[i]->key && !strcmp(map->child[i]->key, key))
            return map->child[i];
    return NULL;
}

const char *comet_util_doc_where(const comet_util_doc *node, char *buf, size_t len)
{
    if (!node)
        snprintf(buf, len, "<none>");
    else
        snprintf(buf, len, "%s:%d", node->file ? node->file : "<input>", node->line);
    return buf;
}

int comet_util_doc_number(const comet_util_doc *map, const char *key, const double *dflt, double lo,
    double hi, double *out, char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *n = comet_util_doc_get(map, key);
    if (!n) {
        if (dflt) {
            *out = *dflt;
            return 0;
        }
        return comet_util_seterr(err, errlen, -EINVAL, "%s: missing field '%s'",
            comet_util_doc_where(map, w, sizeof w), key);
    }
    if (n->kind != COMET_DOC_SCALAR || n->quoted)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: field '%s' must be a number",
            comet_util_doc_where(n, w, sizeof w), key);
    double v;
    if (comet_util_parse_double(n->value, &v) != 0)
        return comet_util_seterr(err, errlen, -EINVAL,
            "%s: field '%s': '%s' is not a finite number", comet_util_doc_where(n, w, sizeof w),
            key, n->value);
    if (v < lo || v > hi)
        return comet_util_seterr(err, errlen, -ERANGE, "%s: field '%s' = %g is outside [%g, %g]",
            comet_util_doc_where(n, w, sizeof w), key, v, lo, hi);
    *out = v;
    return 0;
}

int comet_util_doc_string(const comet_util_doc *map, const char *key, const char *dflt,
    const char **out, char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *n = comet_util_doc_get(map, key);
    if (!n) {
        if (dflt) {
            *out = dflt;
            return 0;
        }
        return comet_util_seterr(err, errlen, -EINVAL, "%s: missing field '%s'",
            comet_util_doc_where(map, w, sizeof w), key);
    }
    if (n->kind != COMET_DOC_SCALAR)
        return comet_util_seterr(err, errlen, -EINVAL, "%s: field '%s' must be a string",
            comet_util_doc_where(n, w, sizeof w), key);
    *out = n->value;
    return 0;
}

int comet_util_doc_bool(
    const comet_util_doc *map, const char *key, const int *dflt, int *out, char *err, size_t errlen)
{
    char w[256];
    const comet_util_doc *n = comet_util_doc_get(map, key);
    if (!n) {
        if (dflt) {
            *out = *dflt;
            return 0;
        }
        return comet_util_seterr(err, errlen, -EINVAL, "%s: missing field '%s'",
            comet_util_doc_where(map, w, sizeof w), key);
    }
    static const char *yes[] = { "true", "yes", "on", "1" }, *no[] = { "false", "no", "off", "0" };
    if (n->kind == COMET_DOC_SCALAR)
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(n->value, yes[i])) {
                *out = 1;
                return 0;
            }
            if (!strcasecmp(n->value, no[i])) {
                *out = 0;
                return 0;
            }
        }
    return comet_util_seterr(err, errlen, -EINVAL, "%s: field '%s' must be true or false",
        comet_util_doc_where(n, w, sizeof w), key);
}

int comet_util_doc_check_keys(
    const comet_util_doc *map, const char *const *allowed, char *err, size_t errlen)
{
    char w[256];
    if (!map || map->kind != COMET_DOC_MAP)
        return comet_util_seterr(
            err, errlen, -EINVAL, "%s: expected a map", comet_util_doc_where(map, w, sizeof w));
    for (size_t i = 0; i < map->n; i++) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, map->child[i]->key)) {
                ok = 1;
                break;
            }
        if (!ok)
            return comet_util_seterr(err, errlen, -EINVAL, "%s: unknown field '%s'",
                comet_util_doc_where(map->child[i], w, sizeof w), map->child[i]->key);
    }
    return 0;
}
