/* sedp tune — the progress on stderr (docs/tuning.md, "What is printed"): the baseline's line,
 * then a line per evaluation, or on a terminal one line redrawn in place (a bar, the count, the
 * best feasible CPU per request, or capacity, and the baseline's); what --resume replayed.
 * Nothing with --quiet. */
#include "cmd-tune.h"

#include <math.h>
#include <stdio.h>

/* The bar's width, in characters. */
#define BAR_WIDTH 20

double
tune_best (const Tune *t)
{
  double best = NAN;
  for (guint i = 0; t->evals && i < t->evals->len; i++) {
    const TuneEval *e = g_ptr_array_index (t->evals, i);
    if (e->feasible && tune_better (t, tune_value (t, &e->r), best))
      best = tune_value (t, &e->r);
  }
  return best;
}

/* "/40", or with --budget-s " (12.4 of 60 s)": how far the budget is spent. Free it. */
static char *
budget_spent (const Tune *t)
{
  if (t->o.budget_evals > 0)
    return g_strdup_printf ("/%d", t->o.budget_evals);
  double spent_s = (g_get_monotonic_time () - t->started_us) / 1e6;
  return g_strdup_printf (" (%.1f of %g s)", spent_s, t->o.budget_s);
}

void
tune_progress_baseline (Tune *t)
{
  const TuneEval *b = &t->baseline;
  if (t->o.quiet)
    return;
  g_autofree char *v = tune_show (t, tune_value (t, &b->r));
  fprintf (stderr, "sedp tune: baseline: %s %s p99 %.3g ms%s%s\n", tune_objective (t)->name, v,
           b->r.p99_ms, b->reason ? ": " : "", b->reason ? b->reason : "");
}

/* "5.59 ms/req", the best feasible value so far, or "none feasible". Free it. */
static char *
best_text (const Tune *t)
{
  double best = tune_best (t);
  return isnan (best) ? g_strdup ("none feasible") : tune_show (t, best);
}

/* "eval 7/40: cpu 1.23 ms/req p99 45 ms feasible; best 1.10 ms/req" (with --maximize
 * throughput "capacity 812 req/s …"), or why infeasible. */
static void
print_line (const Tune *t, const TuneEval *e)
{
  g_autofree char *of = budget_spent (t);
  if (!e->r.feasible) {
    fprintf (stderr, "sedp tune: eval %u%s: infeasible: %s\n", e->index, of, e->reason);
    return;
  }
  g_autofree char *v = tune_show (t, tune_value (t, &e->r)), *best = best_text (t);
  fprintf (stderr, "sedp tune: eval %u%s: %s %s p99 %.3g ms%s %s%s%s; best %s\n", e->index, of,
           tune_objective (t)->name, v, e->r.p99_ms, e->measures > 1 ? " (measured twice)" : "",
           e->feasible ? "feasible" : "infeasible", e->feasible ? "" : ": ",
           e->feasible ? "" : e->reason, best);
}

/* How much of the budget is spent, from 0 to 1. */
static double
spent_fraction (const Tune *t)
{
  double f = t->o.budget_evals > 0
               ? (double) t->evals->len / t->o.budget_evals
               : (g_get_monotonic_time () - t->started_us) / 1e6 / t->o.budget_s;
  return CLAMP (f, 0, 1);
}

/* "\r[#####.....] 12/40 cpu: best 5.59 ms/req (baseline 6.28 ms/req), 3
 * infeasible" (with --maximize throughput "capacity: best 812 req/s (baseline 640 req/s)"), over
 * the last one. */
static void
draw_bar (Tune *t)
{
  char bar[BAR_WIDTH + 1];
  guint filled = (guint) lround (spent_fraction (t) * BAR_WIDTH), infeasible = 0;
  for (guint i = 0; i < BAR_WIDTH; i++)
    bar[i] = i < filled ? '#' : '.';
  bar[BAR_WIDTH] = '\0';
  for (guint i = 0; i < t->evals->len; i++)
    infeasible += !((const TuneEval *) g_ptr_array_index (t->evals, i))->feasible;
  g_autofree char *of = budget_spent (t), *best_s = best_text (t);
  g_autofree char *base = tune_show (t, tune_value (t, &t->baseline.r));
  fprintf (stderr, "\r[%s] %u%s %s: best %s (baseline %s)", bar, t->evals->len, of,
           tune_objective (t)->name, best_s, base);
  if (infeasible)
    fprintf (stderr, ", %u infeasible", infeasible);
  fputs ("\033[K", stderr); /* clears what a longer line left */
  fflush (stderr);
  t->bar_drawn = TRUE;
}

void
tune_progress_eval (Tune *t, const TuneEval *e)
{
  if (t->o.quiet)
    return;
  if (t->bar)
    draw_bar (t);
  else
    print_line (t, e);
}

void
tune_progress_resumed (Tune *t)
{
  if (t->o.quiet || t->recorded == NULL)
    return;
  const TuneEval *b = &t->baseline;
  if (b->text == NULL) {
    fprintf (stderr, "sedp tune: resuming from %s: it records no evaluation yet\n",
             t->journal_path);
    return;
  }
  g_autofree char *best = best_text (t), *v = tune_show (t, tune_value (t, &b->r));
  fprintf (stderr, "sedp tune: resumed from %s: the baseline (%s %s) and %u candidate%s "
           "replayed, not measured again; best %s\n", t->journal_path, tune_objective (t)->name,
           v, t->replayed, t->replayed == 1 ? "" : "s", best);
}

void
tune_progress_end (Tune *t)
{
  if (t->bar_drawn)
    fputc ('\n', stderr);
  t->bar_drawn = FALSE;
}
