/* sedp tune — the SVG plot (--plot; docs/tuning.md, "The plot"): the CPU per request (with
 * --maximize throughput the capacity) of every candidate against its index, feasible ones
 * filled, infeasible ones hollow, those that did not build as small crosses along the bottom;
 * the baseline as a dashed line, the best feasible so far (the lowest CPU, the highest capacity)
 * as a step line; axes, a title and a legend. Hand-written SVG; each candidate's mark has
 * class "mark …" and a <title> for a tooltip. */
#include "cmd-tune.h"

#include <math.h>

/* The picture and the plot area inside it, in pixels. */
#define W 820
#define H 480
#define LEFT 72
#define RIGHT (W - 210)
#define TOP 56
#define BOTTOM (H - 60)

#define C_FEASIBLE "#1f77b4"
#define C_INFEASIBLE "#d62728"
#define C_UNBUILT "#7f7f7f"
#define C_BASELINE "#444444"
#define C_BEST "#2ca02c"

/* A plot being written: the SVG text and the axes' ranges. */
typedef struct {
  GString *s;
  double x1;            /* the last index on the axis, which starts at 0 */
  double xstep;         /* between the index axis' ticks */
  double y0, y1, ystep; /* the value axis, in the shown unit (tune_value()) */
} Plot;

/* @v in the C locale by printf's @format (one conversion), whatever LC_NUMERIC says. Free it. */
static char *
ascii (const char *format, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  return g_strdup (g_ascii_formatd (buf, sizeof buf, format, v));
}

/* 1, 2 or 5 times a power of ten, near @span / @n. */
static double
nice_step (double span, int n)
{
  double raw = span / n, mag = pow (10, floor (log10 (raw))), r = raw / mag;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

static int
px (const Plot *p, double index)
{
  return (int) lround (LEFT + (RIGHT - LEFT) * index / p->x1);
}

static int
py (const Plot *p, double v)
{
  return (int) lround (BOTTOM - (BOTTOM - TOP) * (v - p->y0) / (p->y1 - p->y0));
}

/* Widens [@lo, @hi] to hold @v, when finite. */
static void
widen (double v, double *lo, double *hi)
{
  if (!isfinite (v))
    return;
  *lo = MIN (*lo, v);
  *hi = MAX (*hi, v);
}

/* The axes' ranges: every index, every finite value and the baseline's, on ticks. */
static void
set_ranges (Plot *p, const Tune *t)
{
  double lo = INFINITY, hi = -INFINITY;
  guint n = t->evals ? t->evals->len : 0;
  widen (tune_value (t, &t->baseline.r), &lo, &hi);
  for (guint i = 0; i < n; i++)
    widen (tune_value (t, &((const TuneEval *) g_ptr_array_index (t->evals, i))->r), &lo, &hi);
  if (!isfinite (lo))
    lo = 0, hi = 1;
  double pad = hi > lo ? (hi - lo) * 0.05 : MAX (hi * 0.1, 0.001);
  lo = MAX (0, lo - pad), hi += pad;
  p->ystep = nice_step (hi - lo, 6);
  p->y0 = floor (lo / p->ystep) * p->ystep;
  p->y1 = ceil (hi / p->ystep) * p->ystep;
  p->x1 = n + 0.5; /* the last mark off the edge */
  p->xstep = MAX (1, round (nice_step (p->x1, 10)));
}

/* The value axis: its line, grid, ticks, labels and title. */
static void
draw_y_axis (Plot *p, const Tune *t)
{
  g_string_append_printf (p->s, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                          LEFT, TOP, LEFT, BOTTOM);
  for (double v = p->y0; v <= p->y1 + p->ystep / 2; v += p->ystep) {
    g_autofree char *label = ascii ("%g", fabs (v) < p->ystep / 1e6 ? 0 : v);
    g_string_append_printf (p->s, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#e0e0e0\"/>"
                            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n",
                            LEFT, py (p, v), RIGHT, py (p, v), LEFT - 6, py (p, v) + 4, label);
  }
  g_string_append_printf (p->s, "<text x=\"18\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 18 %d)\">"
                          "%s</text>\n", (TOP + BOTTOM) / 2, (TOP + BOTTOM) / 2,
                          tune_objective (t)->axis);
}

/* The index axis: its line, ticks, labels and title. */
static void
draw_x_axis (Plot *p)
{
  g_string_append_printf (p->s, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                          LEFT, BOTTOM, RIGHT, BOTTOM);
  for (double i = 0; i <= p->x1; i += p->xstep)
    g_string_append_printf (p->s, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>"
                            "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n",
                            px (p, i), BOTTOM, px (p, i), BOTTOM + 5, px (p, i), BOTTOM + 20, i);
  g_string_append_printf (p->s, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">evaluation (0: the "
                          "baseline)</text>\n", (LEFT + RIGHT) / 2, BOTTOM + 42);
}

/* "sedp tune: NAME at R requests/s, p99 SLO S ms" (tune_conditions()), and whether a signal
 * cut it short. */
static void
draw_title (Plot *p, const Tune *t)
{
  g_autofree char *at = tune_conditions (t);
  g_autofree char *title = g_markup_printf_escaped (
    "sedp tune: %s %s%s", t->spec->name ? t->spec->name : t->path, at,
    t->signal ? " (interrupted)" : "");
  g_string_append_printf (p->s, "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">%s</text>\n",
                          W / 2, title);
}

/* The baseline's value, dashed across the plot from a diamond at index 0. */
static void
draw_baseline (Plot *p, const Tune *t)
{
  double v = tune_value (t, &t->baseline.r);
  if (!isfinite (v))
    return;
  g_string_append_printf (p->s, "<line class=\"baseline\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                          "stroke=\"" C_BASELINE "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>\n",
                          LEFT, py (p, v), RIGHT, py (p, v));
  g_string_append_printf (p->s, "<path class=\"baseline\" d=\"M%d %d l5 5 l-5 5 l-5 -5 z\" fill=\""
                          C_BASELINE "\"/>\n", LEFT, py (p, v) - 5);
}

/* The best feasible value so far (tune_better()), as a step line from the first feasible one. */
static void
draw_best (Plot *p, const Tune *t)
{
  g_autoptr (GString) d = g_string_new (NULL);
  double best = NAN;
  for (guint i = 0; t->evals && i < t->evals->len; i++) {
    const TuneEval *e = g_ptr_array_index (t->evals, i);
    double v = tune_value (t, &e->r);
    if (!e->feasible || !tune_better (t, v, best))
      continue;
    if (d->len == 0)
      g_string_append_printf (d, "M%d %d", px (p, e->index), py (p, v));
    else
      g_string_append_printf (d, " H%d V%d", px (p, e->index), py (p, v));
    best = v;
  }
  if (d->len)
    g_string_append_printf (p->s, "<path class=\"best\" d=\"%s H%d\" fill=\"none\" stroke=\"" C_BEST
                            "\" stroke-width=\"2\"/>\n", d->str, px (p, p->x1));
}

/* The tooltip of candidate @e: its index, value, p99, and why it is infeasible. Free it. */
static char *
tooltip (const Tune *t, const TuneEval *e)
{
  const TuneObjective *obj = tune_objective (t);
  g_autofree char *v = ascii ("%.4g", tune_value (t, &e->r)), *p99 = ascii ("%.3g", e->r.p99_ms);
  if (!e->r.feasible)
    return g_markup_printf_escaped ("eval %u: did not build: %s", e->index, e->reason);
  return g_markup_printf_escaped ("eval %u: %s %s %s, p99 %s ms, %s", e->index, obj->name, v,
                                  obj->unit, p99, e->feasible ? "feasible" : e->reason);
}

/* Candidate @e's mark: filled, hollow, or a cross along the bottom. */
static void
draw_mark (Plot *p, const Tune *t, const TuneEval *e)
{
  g_autofree char *tip = tooltip (t, e);
  double v = tune_value (t, &e->r);
  int x = px (p, e->index);
  if (!isfinite (v))
    g_string_append_printf (p->s, "<path class=\"mark unbuilt\" d=\"M%d %d l6 6 m0 -6 l-6 6\" stroke=\""
                            C_UNBUILT "\" stroke-width=\"1.5\"><title>%s</title></path>\n",
                            x - 3, BOTTOM - 10, tip);
  else if (e->feasible)
    g_string_append_printf (p->s, "<circle class=\"mark feasible\" cx=\"%d\" cy=\"%d\" r=\"4\" fill=\""
                            C_FEASIBLE "\"><title>%s</title></circle>\n", x, py (p, v), tip);
  else
    g_string_append_printf (p->s, "<circle class=\"mark infeasible\" cx=\"%d\" cy=\"%d\" r=\"4\" "
                            "fill=\"white\" stroke=\"" C_INFEASIBLE "\" stroke-width=\"1.5\">"
                            "<title>%s</title></circle>\n", x, py (p, v), tip);
}

/* The legend, right of the plot: each kind of mark and line, with its meaning. */
static void
draw_legend (Plot *p)
{
  int x = RIGHT + 30, y = TOP + 8;
  const char *entries[] = {
    "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"" C_FEASIBLE "\"/>",
    "<circle cx=\"%d\" cy=\"%d\" r=\"4\" fill=\"white\" stroke=\"" C_INFEASIBLE "\" stroke-width=\"1.5\"/>",
    "<path d=\"M%d %d m-3 -3 l6 6 m0 -6 l-6 6\" stroke=\"" C_UNBUILT "\" stroke-width=\"1.5\"/>",
    "<path d=\"M%d %d m-10 0 h20\" stroke=\"" C_BASELINE "\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>",
    "<path d=\"M%d %d m-10 4 h10 v-8 h10\" fill=\"none\" stroke=\"" C_BEST "\" stroke-width=\"2\"/>",
  };
  const char *words[] = {"feasible", "infeasible", "did not build", "baseline",
                         "best feasible so far"};
  for (guint i = 0; i < G_N_ELEMENTS (entries); i++, y += 24) {
    g_string_append (p->s, "<g class=\"legend\">");
    g_string_append_printf (p->s, entries[i], x, y);
    g_string_append_printf (p->s, "<text x=\"%d\" y=\"%d\">%s</text></g>\n", x + 16, y + 4, words[i]);
  }
}

gboolean
tune_write_plot (const Tune *t, GError **error)
{
  g_autoptr (GString) s = g_string_new (NULL);
  Plot p = {.s = s};
  set_ranges (&p, t);
  g_string_append_printf (s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
                          "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
                          "font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
                          W, H, W, H, W, H);
  draw_title (&p, t);
  draw_y_axis (&p, t);
  draw_x_axis (&p);
  draw_baseline (&p, t);
  draw_best (&p, t);
  for (guint i = 0; t->evals && i < t->evals->len; i++)
    draw_mark (&p, t, g_ptr_array_index (t->evals, i));
  draw_legend (&p);
  g_string_append (s, "</svg>\n");
  return g_file_set_contents (t->o.plot, s->str, (gssize) s->len, error);
}
