/* sedp tune — shared by its files (cmd-tune.c: options and flow; tune-search.c: the search and
 * the final choice; tune-output.c: the tuned file, the table and the JSON report). Private to
 * the host binary. See docs/tuning.md, "The command". */
#pragma once

#include "cli.h"
#include "../tune/evaluate.h"
#include "../tune/space.h"

/* The constraints told to the optimiser, in this order. */
enum {
  TUNE_C_P99,     /* max (0, p99 − SLO) / SLO */
  TUNE_C_ERRORS,  /* the share of requests not answered OK */
  TUNE_C_WORKERS, /* worker threads beyond max_workers */
  TUNE_C_BUILD,   /* 1 when the candidate did not build or start */
  TUNE_N_CONSTRAINTS
};

/* The finalists re-measured, and how many times each. */
#define TUNE_FINALISTS 3
#define TUNE_REPEATS 3

/* The options; a numeric option left at its sentinel (-1, NAN) was not given. */
typedef struct {
  char *requests_path, *format, *output, *space_path, *method_name, *report;
  double rate, slo_p99_ms, budget_s, warmup_s, measure_s;
  gint budget_evals;
  gint64 seed;
  gboolean quiet;
  SedpWorkloadEncoding encoding;
  SedpCmaesMethod method;
} TuneOptions;

/* One evaluation: the baseline (index 0, x NULL) or a candidate (index 1, 2, …). Owned by the
 * Tune's array. */
typedef struct {
  guint index;
  double x[SEDP_CMAES_MAX_DIM];
  char **values;   /* each parameter's value as written (NULL-terminated) */
  char *text;      /* the candidate pipeline's text */
  SedpTuneResult r;
  double violations[TUNE_N_CONSTRAINTS];
  gboolean feasible; /* built, and every constraint held */
  char *reason;      /* why not feasible; NULL when feasible */
} TuneEval;

/* A whole tune: what it reads, what it measured, what it chose. One thread. */
typedef struct {
  TuneOptions o;
  const char *path; /* the pipeline file (argv) */
  char *text;       /* its text, as read */
  SedpRegistry *registry;
  SedpPipelineSpec *spec;
  SedpTuneSpace *space;
  SedpWorkload *workload;
  SedpTuneMeasure measure;
  TuneEval baseline;
  GPtrArray *evals;            /* TuneEval *, the candidates in order */
  SedpTuneRepeated base_rep;   /* the baseline re-measured */
  GPtrArray *finalists;        /* TuneEval * (borrowed from evals), re-measured */
  SedpTuneRepeated fin_rep[TUNE_FINALISTS];
  int chosen;                  /* index into finalists, -1: the baseline is kept */
  gint64 started_us;
} Tune;

/* tune-search.c. Frees what @e owns (not @e). */
void tune_eval_clear (TuneEval *e);
/* Measures the baseline and then candidates until the budget is spent; prints progress unless
 * --quiet. FALSE with @error for what stops the tune (sedp_tune_evaluate()'s errors). */
gboolean tune_search (Tune *t, GError **error);
/* Re-measures the baseline and the best feasible candidates, and sets @t->chosen. */
gboolean tune_choose (Tune *t, GError **error);

/* tune-output.c. Writes the tuned pipeline to -o; FALSE with @error when it cannot. */
gboolean tune_write_pipeline (const Tune *t, GError **error);
/* Prints the baseline against the tuned point on stdout. */
void tune_print_table (const Tune *t);
/* Writes the JSON report to --report; FALSE with @error when it cannot. */
gboolean tune_write_report (const Tune *t, GError **error);
/* A parameter's value in the pipeline as given, as written ("(default)" when unknown). */
char *tune_start_value (const SedpTuneSpace *space, guint i);
