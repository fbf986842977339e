/* Plots: the data behind each plot (CSV and JSON) beside its SVG, drawn by
 * gnuplot as a child process under a timeout. Every file lands atomically:
 * gnuplot writes a temporary SVG that is copied in with
 * comet_util_write_atomic() only when gnuplot succeeded. */
#include "reports_internal.h"

#include "comet_util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A plot that takes longer than this is abandoned (gnuplot stuck). */
#define RP_GNUPLOT_TIMEOUT_S 30

void rp_plot_init(rp_plot *p, const char *name, const char *caption)
{
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    snprintf(p->caption, sizeof p->caption, "%s", caption);
}

static int note_err(rp_ctx *c, int rc)
{
    if (rc && !c->wrote_error)
        c->wrote_error = rc;
    return rc;
}

int rp_plot_data(rp_ctx *c, rp_plot *p, const char *csv, json_t *json)
{
    /* every figure's data names its schema, figure and caption */
    if (json_is_object(json)) {
        json_object_set_new(json, "schema", json_string("comet.figure.v1"));
        json_object_set_new(json, "figure", json_string(p->name));
        json_object_set_new(json, "caption", json_string(p->caption));
    }
    char path[RP_PATH + 80];
    int rc;
    snprintf(path, sizeof path, "%s/%s.csv", c->rdir, p->name);
    rc = comet_util_write_atomic(path, csv, strlen(csv), c->err, c->errlen);
    if (rc == 0) {
        char *t = json_dumps(json, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
        snprintf(path, sizeof path, "%s/%s.json", c->rdir, p->name);
        rc = t ? comet_util_write_atomic(path, t, strlen(t), c->err, c->errlen)
               : comet_util_seterr(c->err, c->errlen, -ENOMEM, "report: out of memory");
        free(t);
    }
    json_decref(json);
    return note_err(c, rc);
}

/* Runs gnuplot on script_name inside rdir; its stderr goes to log_name.
 * @return 0, or -ETIMEDOUT, -ENOENT (no gnuplot), -EIO (gnuplot error). */
static int run_gnuplot(const char *rdir, const char *script_name, const char *log_name)
{
    const char *gp = getenv("COMET_GNUPLOT");
    if (!gp || !*gp)
        gp = "gnuplot";
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid == 0) {
        if (chdir(rdir) != 0)
            _exit(126);
        int in = open("/dev/null", O_RDONLY), out = open("/dev/null", O_WRONLY),
            log = open(log_name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (in >= 0)
            dup2(in, 0);
        if (out >= 0)
            dup2(out, 1);
        if (log >= 0)
            dup2(log, 2);
        /* SIGALRM's default action ends gnuplot if it hangs; alarms survive exec */
        signal(SIGALRM, SIG_DFL);
        alarm(RP_GNUPLOT_TIMEOUT_S);
        execlp(gp, gp, script_name, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -errno;
    if (WIFSIGNALED(st))
        return WTERMSIG(st) == SIGALRM ? -ETIMEDOUT : -EIO;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
        return -ENOENT;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* First line of gnuplot's stderr that says what went wrong. */
static void first_error_line(const char *log, char *out, size_t len)
{
    const char *l = strstr(log, "line ");
    const char *s = l ? l : log;
    size_t n = strcspn(s, "\n");
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    snprintf(out, len, "%.*s", (int)(n > 160 ? 160 : n), s);
}

void rp_plot_draw(rp_ctx *c, rp_plot *p, const char *script)
{
    char gp[RP_PATH + 160], name_gp[96], name_tmp[128], name_log[128], path_tmp[RP_PATH + 160],
        path_log[RP_PATH + 160], path_svg[RP_PATH + 80];
    rp_buf b;
    int rc;
    snprintf(name_gp, sizeof name_gp, "%s.gp", p->name);
    snprintf(name_tmp, sizeof name_tmp, "%s.svg.tmp.%ld", p->name, (long)getpid());
    snprintf(name_log, sizeof name_log, "%s.gplog.tmp.%ld", p->name, (long)getpid());
    snprintf(gp, sizeof gp, "%s/%s", c->rdir, name_gp);
    snprintf(path_tmp, sizeof path_tmp, "%s/%s", c->rdir, name_tmp);
    snprintf(path_log, sizeof path_log, "%s/%s", c->rdir, name_log);
    snprintf(path_svg, sizeof path_svg, "%s/%s.svg", c->rdir, p->name);
    if (rp_buf_open(&b) != 0) {
        snprintf(p->why, sizeof p->why, "out of memory");
        return;
    }
    /* One figure per SVG at 1200 x 640, shown at the page width (readable at
     * 1280 px). noenhanced: op and algorithm names carry underscores, which
     * enhanced text would turn into subscripts; it is set once here and the
     * scripts never set the terminal again (a second `set terminal` drops
     * it). No title: the caption is printed under the figure, where it is
     * never clipped. */
    fprintf(b.fp,
        "# %s: drawn by comet report from %s.csv (re-run: gnuplot %s)\n"
        "set terminal svg size %d,%d dynamic noenhanced font 'sans,15' background '#ffffff'\n"
        "set output '%s'\n"
        "set datafile separator ','\n"
        "set grid lc rgb '#dddddd'\n"
        "set key outside right top box opaque noenhanced\n",
        p->name, p->name, name_gp, RP_FIG_W, RP_FIG_H, name_tmp);
    fputs(script, b.fp);
    if (rp_buf_close(&b) != 0) {
        rp_buf_free(&b);
        snprintf(p->why, sizeof p->why, "out of memory");
        return;
    }
    /* the saved script names the final file, the one run writes the temporary */
    char *saved = NULL;
    {
        const char *at = strstr(b.p, name_tmp);
        if (at
            && asprintf(
                   &saved, "%.*s%s.svg%s", (int)(at - b.p), b.p, p->name, at + strlen(name_tmp))
                < 0)
            saved = NULL;
    }
    rc = comet_util_write_atomic(gp, b.p, b.n, c->err, c->errlen);
    if (rc == 0) {
        /* run the script with the temporary output name */
        char tmp_gp[RP_PATH + 160], name_tmp_gp[160];
        snprintf(name_tmp_gp, sizeof name_tmp_gp, "%s.gp.tmp.%ld", p->name, (long)getpid());
        snprintf(tmp_gp, sizeof tmp_gp, "%s/%s", c->rdir, name_tmp_gp);
        FILE *fp = fopen(tmp_gp, "w");
        if (!fp || fwrite(b.p, 1, b.n, fp) != b.n) {
            rc = -EIO;
            snprintf(p->why, sizeof p->why, "cannot write %.180s", tmp_gp);
        }
        if (fp && fclose(fp) != 0 && rc == 0)
            rc = -EIO;
        if (rc == 0) {
            rc = run_gnuplot(c->rdir, name_tmp_gp, name_log);
            char *log = NULL;
            size_t ll = 0;
            comet_util_read_file(path_log, &log, &ll, NULL, 0);
            if (rc == -ETIMEDOUT)
                snprintf(
                    p->why, sizeof p->why, "gnuplot took longer than %d s", RP_GNUPLOT_TIMEOUT_S);
            else if (rc == -ENOENT)
                snprintf(
                    p->why, sizeof p->why, "gnuplot is not installed (Debian package gnuplot-nox)");
            else if (rc) {
                char line[200] = "";
                first_error_line(log ? log : "", line, sizeof line);
                snprintf(p->why, sizeof p->why, "gnuplot failed: %s", line);
            } else if (log && ll)
                comet_util_debug("report: gnuplot %s: %.*s", p->name, (int)strcspn(log, "\n"), log);
            free(log);
        }
        unlink(tmp_gp);
        unlink(path_log);
    }
    if (saved) {
        /* keep a script that redraws the final file */
        comet_util_write_atomic(gp, saved, strlen(saved), NULL, 0);
        free(saved);
    }
    rp_buf_free(&b);
    if (rc == 0) {
        char *svg = NULL;
        size_t len = 0;
        rc = comet_util_read_file(path_tmp, &svg, &len, NULL, 0);
        if (rc || len < 100 || !strstr(svg, "</svg>")) {
            snprintf(p->why, sizeof p->why, "gnuplot wrote no complete SVG");
        } else if ((rc = comet_util_write_atomic(path_svg, svg, len, c->err, c->errlen)) != 0) {
            note_err(c, rc);
            snprintf(p->why, sizeof p->why, "cannot write %.180s", path_svg);
        } else {
            p->ok = 1;
        }
        free(svg);
    }
    unlink(path_tmp);
    if (!p->ok)
        comet_util_info("report: plot %s not drawn: %s", p->name, p->why);
}

void rp_binary_xtics(FILE *fp, double lo, double hi)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    if (!(lo > 0) || !(hi >= lo)) {
        fputs("set logscale x 2\n", fp);
        return;
    }
    /* powers of two from below lo to above hi, every step-th one labelled,
     * at most 10 labels: 1 B, 4 B, ..., 1 KiB, ... (binary values, binary
     * names: a decimal tick never carries a binary suffix) */
    int e0 = (int)floor(log2(lo)), e1 = (int)ceil(log2(hi));
    if (e1 <= e0)
        e1 = e0 + 1;
    int step = (e1 - e0 + 9) / 10;
    if (step < 1)
        step = 1;
    fprintf(
        fp, "set logscale x 2\nset xrange [%.17g:%.17g]\nset xtics (", ldexp(1, e0), ldexp(1, e1));
    int first = 1;
    for (int e = e0; e <= e1; e++) {
        if ((e - e0) % step)
            continue;
        int u = e >= 0 ? e / 10 : 0;
        if (u > 4)
            u = 4;
        double v = ldexp(1, e - 10 * u);
        fprintf(fp, "%s\"%g %s\" %.17g", first ? "" : ", ", v, unit[u], ldexp(1, e));
        first = 0;
    }
    fputs(")\n", fp);
}

void rp_figure(rp_ctx *c, const rp_plot *p)
{
    FILE *h = c->doc.html.fp, *m = c->doc.md.fp;
    c->doc.nfig++;
    fprintf(h, "<figure id=\"fig-%s\">\n", p->name);
    if (p->ok) {
        fprintf(h, "<img src=\"%s.svg\" alt=\"", p->name);
        rp_html_escape(h, p->caption);
        fputs("\">\n", h);
        fprintf(m, "![%s](%s.svg)\n\n", p->caption, p->name);
    } else {
        fputs("<p class=\"note\">Plot not drawn: ", h);
        rp_html_escape(h, p->why[0] ? p->why : "no data");
        fputs("</p>\n", h);
        fprintf(m, "> Plot '%s' not drawn: %s\n\n", p->caption, p->why[0] ? p->why : "no data");
    }
    fprintf(h, "<figcaption>Figure %d. ", c->doc.nfig);
    rp_html_escape(h, p->caption);
    fprintf(h,
        " Data: <a href=\"%s.csv\">%s.csv</a>, <a "
        "href=\"%s.json\">%s.json</a>%s%s%s.</figcaption>\n"
        "</figure>\n",
        p->name, p->name, p->name, p->name, p->ok ? ", script: <a href=\"" : "",
        p->ok ? p->name : "", p->ok ? ".gp\">gnuplot</a>" : "");
    fprintf(m, "Figure %d. %s Data: [%s.csv](%s.csv), [%s.json](%s.json).\n\n", c->doc.nfig,
        p->caption, p->name, p->name, p->name, p->name);
}
