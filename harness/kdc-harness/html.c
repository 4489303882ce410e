/* The HTML report (kdc_testkit_report_html): one self-contained page, a
 * section per scenario with its timeline drawn as inline SVG. No external
 * file, font or script: the page opens from a CI artifact as it is. A small
 * inline script measures what the browser drew and writes it on each plot
 * (data-drawn, data-marks-drawn, data-windows-drawn, and where each line ends,
 * read back from its drawn points: data-stored-end, ...), so that a test in a
 * real browser can tell a drawn plot from an empty one. In a sink scenario a
 * fourth line is the sink's rows (effects written). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* the plot area inside a 960 x 330 view box */
#define PX 70.0
#define PY 20.0
#define PW 860.0
#define PH 240.0
#define MAX_MARKS 2000 /* lost or duplicated events drawn per plot */

static void esc(FILE *out, const char *s) {
        for (; s && *s; s++)
                switch (*s) {
                case '<':
                        fputs("&lt;", out);
                        break;
                case '>':
                        fputs("&gt;", out);
                        break;
                case '&':
                        fputs("&amp;", out);
                        break;
                case '"':
                        fputs("&quot;", out);
                        break;
                default:
                        if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
                                fprintf(out, "&#xfffd;");
                        else
                                fputc(*s, out);
                }
}

static double x_of(const struct tk_timeline *tl, double t_ms) {
        double end = tl->end_ms > 0 ? tl->end_ms : 1;
        return PX + PW * (t_ms < 0 ? 0 : t_ms > end ? end : t_ms) / end;
}

/* The plot's height: the events, or more when more records were written
 * (duplicates). */
static int64_t top_of(const struct tk_timeline *tl) {
        int64_t top = tl->events > 0 ? tl->events : 1;
        for (size_t i = 0; i < tl->nsamples; i++) {
                const struct tk_sample *s = &tl->samples[i];
                int64_t most = s->stored > s->committed ? s->stored : s->committed;
                most = most > s->written ? most : s->written;
                most = most > s->effects ? most : s->effects;
                top = most > top ? most : top;
        }
        return top;
}

static double y_of(double top, double n) {
        return PY + PH - PH * (n < 0 ? 0 : n > top ? top : n) / top;
}

enum series { STORED, COMMITTED, WRITTEN, EFFECTS };

/* A line through the samples; those without a value (effects: -1, none
 * counted yet) are left out. */
static void polyline(FILE *out, const struct tk_timeline *tl, double top, const char *cls,
                     enum series field) {
        const char *sep = "";

        fprintf(out, "<polyline class=\"%s\" points=\"", cls);
        for (size_t i = 0; i < tl->nsamples; i++) {
                const struct tk_sample *s = &tl->samples[i];
                int64_t v = field == STORED      ? s->stored
                            : field == COMMITTED ? s->committed
                            : field == WRITTEN   ? s->written
                                                 : s->effects;
                if (v < 0)
                        continue;
                /* two decimals: the line ends at its count in plots up to
                 * 24,000 events high, read back from the drawn points */
                fprintf(out, "%s%.2f,%.2f", sep, x_of(tl, s->t_ms), y_of(top, (double)v));
                sep = " ";
        }
        fputs("\"/>\n", out);
}

static void plot(FILE *out, const struct tk_result *r) {
        const struct tk_timeline *tl = &r->tl;
        int64_t top = top_of(tl);
        size_t windows = 0;

        for (size_t i = 0; i < tl->nmarks; i++)
                windows += tl->marks[i].end_ms >= 0;
        fprintf(out,
                "<svg class=\"timeline\" viewBox=\"0 0 960 330\" width=\"960\" height=\"330\" "
                "role=\"img\" data-lost=\"%zu\" data-duplicated=\"%zu\" data-windows=\"%zu\" "
                "data-top=\"%" PRId64 "\" data-bottom=\"%.1f\" data-height=\"%.1f\" "
                "data-lines=\"%d\">\n",
                tl->nat[0], tl->nat[1], windows, top, PY + PH, PH, r->pub.sink ? 4 : 3);
        /* fault windows first, under the lines */
        for (size_t i = 0; i < tl->nmarks; i++) {
                const struct tk_mark *m = &tl->marks[i];
                if (m->end_ms >= 0) {
                        double x0 = x_of(tl, m->t_ms), x1 = x_of(tl, m->end_ms);
                        fprintf(out,
                                "<rect class=\"window\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                "height=\"%.1f\"><title>",
                                x0, PY, x1 - x0 < 1 ? 1 : x1 - x0, PH);
                } else {
                        fprintf(out,
                                "<line class=\"point\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                                "y2=\"%.1f\"><title>",
                                x_of(tl, m->t_ms), x_of(tl, m->t_ms), PY, PY + PH);
                }
                fprintf(out, "+%.2fs ", m->t_ms / 1000.0);
                esc(out, m->what);
                fputs(m->end_ms >= 0 ? "</title></rect>\n" : "</title></line>\n", out);
        }
        /* axes: events up, seconds across */
        fprintf(out,
                "<path class=\"axis\" d=\"M%.1f,%.1f V%.1f H%.1f\"/>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%" PRId64 "</text>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">0</text>\n"
                "<text x=\"%.1f\" y=\"%.1f\">0 s</text>\n"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f s</text>\n",
                PX, PY, PY + PH, PX + PW, PX - 6, PY + 4, top, PX - 6, PY + PH, PX, PY + PH + 34,
                PX + PW, PY + PH + 34, tl->end_ms / 1000.0);
        polyline(out, tl, (double)top, "stored", STORED);
        polyline(out, tl, (double)top, "committed", COMMITTED);
        polyline(out, tl, (double)top, "written", WRITTEN);
        if (r->pub.sink)
                polyline(out, tl, (double)top, "effects", EFFECTS);
        /* the lost (triangles) and duplicated (circles) events, when they were stored */
        for (int l = 0; l < 2; l++)
                for (size_t i = 0; i < tl->nat[l] && i < MAX_MARKS; i++) {
                        double x = x_of(tl, tl->at[l][i]);
                        if (l == 0)
                                fprintf(out, "<path class=\"lost\" d=\"M%.1f,%.1f l-4,8 h8 z\"/>\n",
                                        x, PY + PH + 4);
                        else
                                fprintf(out,
                                        "<circle class=\"duplicated\" cx=\"%.1f\" cy=\"%.1f\" "
                                        "r=\"3\"/>\n",
                                        x, PY + PH + 20);
                }
        fputs("</svg>\n", out);
        if (tl->nat[0] > MAX_MARKS || tl->nat[1] > MAX_MARKS)
                fprintf(out,
                        "<p class=\"note\">The first %d lost and %d duplicated events are "
                        "marked.</p>\n",
                        MAX_MARKS, MAX_MARKS);
}

static void list(FILE *out, const kdc_testkit_result_t *r, kdc_testkit_list_t l, const char *what,
                 int64_t n) {
        const char *id;
        if (n <= 0)
                return;
        fprintf(out, "<details><summary>%" PRId64 " %s</summary><p class=\"ids\">", n, what);
        for (size_t i = 0; (id = kdc_testkit_result_event(r, l, i)); i++) {
                fputs(i ? " " : "", out);
                esc(out, id);
        }
        fputs("</p></details>\n", out);
}

static void section(FILE *out, const kdc_testkit_result_t *p) {
        const struct tk_result *r = (const struct tk_result *)p; /* pub is the first member */
        const char *fault;

        fputs("<section class=\"run\">\n<h2>", out);
        esc(out, p->scenario);
        fprintf(out, " <span class=\"%s\">", p->valid ? "pass" : "fail");
        esc(out, p->valid ? "nothing lost" : p->failure);
        fprintf(out,
                "</span></h2>\n<p>%" PRId64 " events (%" PRId64 " poison), %" PRId64
                " committed, %" PRId64 " output and %" PRId64 " DLQ records; <b>%" PRId64
                " lost</b>, %" PRId64 " duplicated, %" PRId64
                " unprocessed; %d starts, %d kills; %.1f s, seed %" PRIu64 ", end: ",
                p->events, p->poison, p->committed, p->output_records, p->dlq_records, p->lost,
                p->duplicated, p->unprocessed, p->starts, p->kills, p->duration_ms / 1000.0,
                p->seed);
        esc(out, p->end_reason ? p->end_reason : "");
        fputs("</p>\n", out);
        plot(out, r);
        fputs("<p class=\"legend\"><span class=\"k stored\"></span>input events stored "
              "<span class=\"k committed\"></span>committed "
              "<span class=\"k written\"></span>output and DLQ records written ",
              out);
        if (p->sink) {
                fputs("<span class=\"k effects\"></span>effects written (rows in the ", out);
                esc(out, p->sink);
                fputs(" sink) ", out);
        }
        fputs("<span class=\"k window\"></span>fault window "
              "<span class=\"k lost\"></span>lost event (when stored) "
              "<span class=\"k duplicated\"></span>duplicated event</p>\n",
              out);
        if (kdc_testkit_result_fault(p, 0)) {
                fputs("<ol class=\"faults\">", out);
                for (size_t i = 0; (fault = kdc_testkit_result_fault(p, i)); i++) {
                        fputs("<li>", out);
                        esc(out, fault);
                        fputs("</li>", out);
                }
                fputs("</ol>\n", out);
        }
        list(out, p, KDC_TESTKIT_LOST, "lost", p->lost);
        list(out, p, KDC_TESTKIT_DUPLICATED, "duplicated", p->duplicated);
        list(out, p, KDC_TESTKIT_UNPROCESSED, "unprocessed", p->unprocessed);
        fputs("</section>\n", out);
}

static const char style[] =
    "body{font:14px/1.4 sans-serif;margin:24px;color:#222}"
    "h1{font-size:20px}h2{font-size:16px;margin:28px 0 4px}"
    ".pass{color:#1a7f37}.fail{color:#cf222e}"
    "svg text{font:11px sans-serif;fill:#555}"
    ".axis{fill:none;stroke:#888}"
    "polyline{fill:none;stroke-width:2}"
    ".stored{stroke:#0969da;background:#0969da}"
    ".committed{stroke:#1a7f37;background:#1a7f37}"
    ".written{stroke:#8250df;background:#8250df}"
    ".effects{stroke:#d4a72c;background:#d4a72c;stroke-dasharray:6 3}"
    "rect.window,.k.window{fill:#cf222e;fill-opacity:.12;background:#f6d5d8}"
    "line.point{stroke:#cf222e;stroke-dasharray:3 3}"
    "path.lost,.k.lost{fill:#cf222e;background:#cf222e}"
    "circle.duplicated,.k.duplicated{fill:#bc4c00;background:#bc4c00}"
    ".k{display:inline-block;width:14px;height:8px;margin:0 4px 0 12px}"
    ".ids{font-family:monospace;word-break:break-all}";

/* Measures what the browser drew: a line is drawn when it has a length and a
 * box of non-zero width; a mark or window when its box is not empty. Where a
 * line ends is its last drawn point turned back into a count with the plot's
 * scale (data-top over data-height, up from data-bottom). */
static const char script[] =
    "for(const svg of document.querySelectorAll('svg.timeline')){"
    "let lines=0,marks=0,windows=0;"
    "for(const p of svg.querySelectorAll('polyline')){const b=p.getBBox();"
    "if(p.getTotalLength()>0&&b.width>0)lines++;"
    "const n=p.points.numberOfItems;if(n>0){const y=p.points.getItem(n-1).y;"
    "const d=svg.dataset;d[p.classList[0]+'End']=Math.round((d.bottom-y)/d.height*d.top);}}"
    "for(const m of svg.querySelectorAll('.lost,.duplicated')){const b=m.getBBox();"
    "if(b.width>0&&b.height>0)marks++;}"
    "for(const w of svg.querySelectorAll('rect.window')){const b=w.getBBox();"
    "if(b.width>0&&b.height>0)windows++;}"
    "svg.dataset.drawn=lines;svg.dataset.marksDrawn=marks;svg.dataset.windowsDrawn=windows;}";

int kdc_testkit_report_html(FILE *out, const kdc_testkit_result_t *const *results, size_t n) {
        if (!out || (n && !results))
                return KDC_ERR_INVALID;
        for (size_t i = 0; i < n; i++)
                if (!results[i])
                        return KDC_ERR_INVALID;
        fprintf(out,
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<title>kdc-harness: %zu scenario%s</title>\n<style>%s</style>\n</head>\n"
                "<body>\n<h1>kdc-harness</h1>\n",
                n, n == 1 ? "" : "s", style);
        for (size_t i = 0; i < n; i++)
                section(out, results[i]);
        fprintf(out, "<script>%s</script>\n</body>\n</html>\n", script);
        return 0;
}
