/* One writer for both documents: every heading, paragraph and table goes to
 * summary.md and index.html at once, so the two never disagree. */
#include "reports_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rp_buf_open(rp_buf *b)
{
    memset(b, 0, sizeof *b);
    b->fp = open_memstream(&b->p, &b->n);
    return b->fp ? 0 : -ENOMEM;
}

int rp_buf_close(rp_buf *b)
{
    int rc = 0;
    if (b->fp) {
        rc = ferror(b->fp) ? -ENOMEM : 0;
        if (fclose(b->fp) != 0)
            rc = -ENOMEM;
        b->fp = NULL;
    }
    return rc;
}

void rp_buf_free(rp_buf *b)
{
    rp_buf_close(b);
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

void rp_html_escape(FILE *fp, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '<':
            fputs("&lt;", fp);
            break;
        case '>':
            fputs("&gt;", fp);
            break;
        case '&':
            fputs("&amp;", fp);
            break;
        case '"':
            fputs("&quot;", fp);
            break;
        default:
            fputc(*s, fp);
        }
}

static void html_n(FILE *fp, const char *s, size_t len)
{
    char *t = strndup(s, len);
    if (t) {
        rp_html_escape(fp, t);
        free(t);
    }
}

/* A paragraph's text is markdown (the summary.md keeps it as is); in HTML
 * its inline emphasis **x** becomes <strong>x</strong> and `x` becomes
 * <code>x</code>, a marker without its closing pair stays literal, and
 * everything else is escaped. */
void rp_html_inline(FILE *fp, const char *s)
{
    while (*s) {
        const char *close = NULL;
        size_t mk = 0;
        if (s[0] == '*' && s[1] == '*' && s[2] && (close = strstr(s + 2, "**")) && close > s + 2)
            mk = 2;
        else if (s[0] == '`' && (close = strchr(s + 1, '`')) && close > s + 1)
            mk = 1;
        if (!mk) {
            const char *e = s + 1;
            while (*e && *e != '*' && *e != '`')
                e++;
            html_n(fp, s, (size_t)(e - s));
            s = e;
            continue;
        }
        const char *tag = mk == 2 ? "strong" : "code";
        fprintf(fp, "<%s>", tag);
        html_n(fp, s + mk, (size_t)(close - s - mk));
        fprintf(fp, "</%s>", tag);
        s = close + mk;
    }
}

/* Markdown table cells must not contain '|' or newlines. */
static void md_cell(FILE *fp, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        fputc(s[i] == '|' ? '/' : (s[i] == '\n' ? ' ' : s[i]), fp);
}

int rp_doc_open(rp_doc *d)
{
    memset(d, 0, sizeof *d);
    if (rp_buf_open(&d->md) || rp_buf_open(&d->html)) {
        rp_doc_free(d);
        return -ENOMEM;
    }
    return 0;
}

void rp_doc_free(rp_doc *d)
{
    rp_buf_free(&d->md);
    rp_buf_free(&d->html);
}

void rp_h2(rp_doc *d, const char *id, const char *title)
{
    fprintf(d->md.fp, "\n## %s\n\n", title);
    fprintf(d->html.fp, "<h2 id=\"%s\">", id);
    rp_html_escape(d->html.fp, title);
    fputs("</h2>\n", d->html.fp);
}

void rp_h3(rp_doc *d, const char *title)
{
    fprintf(d->md.fp, "\n### %s\n\n", title);
    fputs("<h3>", d->html.fp);
    rp_html_escape(d->html.fp, title);
    fputs("</h3>\n", d->html.fp);
}

static void para(rp_doc *d, const char *cls, const char *fmt, va_list ap)
{
    char *t = NULL;
    if (vasprintf(&t, fmt, ap) < 0)
        return;
    fprintf(d->md.fp, "%s%s\n\n", cls ? "> " : "", t);
    fprintf(d->html.fp, "<p%s>", cls ? " class=\"note\"" : "");
    rp_html_inline(d->html.fp, t);
    fputs("</p>\n", d->html.fp);
    free(t);
}

void rp_p(rp_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    para(d, NULL, fmt, ap);
    va_end(ap);
}

void rp_note(rp_doc *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    para(d, "note", fmt, ap);
    va_end(ap);
}

/* Emits the cells of a tab-separated line as a markdown and an HTML row. */
static void row_cells(rp_doc *d, const char *line, int header)
{
    FILE *m = d->md.fp, *h = d->html.fp;
    const char *s = line;
    int col = 0;
    fputs("|", m);
    fputs("<tr>", h);
    for (;;) {
        size_t len = strcspn(s, "\t");
        fputc(' ', m);
        md_cell(m, s, len);
        fputs(" |", m);
        char a = col < (int)sizeof d->align && d->align[col] ? d->align[col] : 'r';
        fprintf(h, "<%s%s>", header ? "th" : "td", a == 'l' ? " class=\"l\"" : "");
        html_n(h, s, len);
        fprintf(h, "</%s>", header ? "th" : "td");
        col++;
        if (!s[len])
            break;
        s += len + 1;
    }
    for (; col < d->ncols; col++) {
        fputs(" |", m);
        fputs(header ? "<th></th>" : "<td></td>", h);
    }
    fputs("\n", m);
    fputs("</tr>\n", h);
}

void rp_table(rp_doc *d, const char *align, const char *header)
{
    snprintf(d->align, sizeof d->align, "%s", align);
    d->ncols = (int)strlen(d->align);
    fputs("<div class=\"tw\"><table>\n", d->html.fp);
    row_cells(d, header, 1);
    fputs("|", d->md.fp);
    for (int i = 0; i < d->ncols; i++)
        fputs(d->align[i] == 'l' ? "---|" : "--:|", d->md.fp);
    fputs("\n", d->md.fp);
}

void rp_row(rp_doc *d, const char *fmt, ...)
{
    char *t = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&t, fmt, ap);
    va_end(ap);
    if (r < 0)
        return;
    row_cells(d, t, 0);
    free(t);
}

const char *rp_cell(const char *s)
{
    static char pool[16][512];
    static unsigned next;
    char *b = pool[next++ % 16];
    size_t i = 0;
    for (; s && s[i] && i + 1 < sizeof pool[0]; i++)
        b[i] = s[i] == '\t' || s[i] == '\n' || s[i] == '\r' ? ' ' : s[i];
    b[i] = '\0';
    return b;
}

void rp_table_end(rp_doc *d)
{
    fputs("</table></div>\n", d->html.fp);
    fputs("\n", d->md.fp);
    d->ncols = 0;
}
