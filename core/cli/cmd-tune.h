/* sedp tune — shared by its files (cmd-tune.c: options, flow and signals; tune-search.c: the
 * search and the final choice; tune-objective.c: what the mode optimises, named, shown and
 * compared; tune-journal.c: the journal's format and its writing;
 * tune-resume.c: --resume, the journal read back and replayed; tune-progress.c: the progress on
 * stderr; tune-output.c: the tuned file, the table and the JSON report; tune-plot.c: the SVG
 * plot). Private to the host binary. See docs/tuning.md, "The command". */
#pragma once

#include "cli.h"
#include "../tune/evaluate.h"
#include "../tune/space.h"

#include <json-glib/json-glib.h>

/* The constraints told to the optimiser, in this order. */
enum {
  TUNE_C_P99,     /* max (0, p99 − SLO) / SLO; --maximize throughput: 1 when no rate kept it */
  TUNE_C_ERRORS,  /* the share of requests not answered OK, plus degraded answers per request */
  TUNE_C_WORKERS, /* worker threads beyond max_workers */
  TUNE_C_BUILD,   /* 1 when the candidate did not build or start */
  TUNE_N_CONSTRAINTS
};

/* The finalists re-measured, and how many times each (in interleaved rounds, with the
 * baseline). */
#define TUNE_FINALISTS 3
#define TUNE_REPEATS 3
/* How many times longer than a candidate's measure each of the final re-measures is. */
#define TUNE_FINAL_LONGER 2
/* A candidate whose measure is the best so far or within this share of it is measured once
 * more (one 2 s measure of the CTR example varies by ±7 % from the next). */
#define TUNE_CLOSE 0.07

/* --maximize throughput without --rate: where the baseline's capacity search starts, and the
 * candidates' when the baseline kept the SLO at no rate. */
#define TUNE_START_RPS 100.0

/* The options; a numeric option left at its sentinel (-1, NAN) was not given. */
typedef struct {
  char *requests_path, *format, *output, *space_path, *method_name, *report;
  char *journal, *plot, *maximize;
  double rate, slo_p99_ms, budget_s, warmup_s, measure_s;
  gint budget_evals;
  gint64 seed;
  gboolean quiet, resume;
  gboolean throughput; /* --maximize throughput: each candidate's capacity at the SLO */
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
  double objective; /* what the optimiser was told: CPU-seconds per request, or with --maximize
                     * throughput 1 / capacity_rps (NaN: none); the baseline's is not told */
  double violations[TUNE_N_CONSTRAINTS];
  guint measures;    /* 2 when a close call was measured again (TUNE_CLOSE), its result the two folded */
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
  GPtrArray *finalists;        /* TuneEval * (borrowed from evals), re-measured */
  SedpTuneRepeated rep[1 + TUNE_FINALISTS]; /* re-measured: [0] the baseline, [1 + i] finalist i */
  GArray *order;               /* guint, the re-measure's order: 0 the baseline, 1 + i finalist i */
  int chosen;                  /* index into finalists, -1: the baseline is kept */
  gint64 started_us;
  char *command;               /* the command line as given, for the --resume hint */
  char *journal_path;          /* --journal, else -o + ".journal" */
  int journal_fd;              /* open for appending during the search, else -1 */
  gsize journal_kept;          /* --resume: the journal's bytes kept (a cut last line dropped) */
  gboolean journal_newline;    /* --resume: the kept bytes lack their last newline */
  GPtrArray *recorded;         /* --resume: TuneEval *, the journal's, until replayed */
  guint replayed;              /* of evals, how many came from the journal */
  double replayed_wall_s;      /* their wall time, counted by --budget-s */
  int signal;                  /* the signal that stopped the tune; 0 when none did */
  gboolean bar;                /* stderr is a terminal: one progress line, redrawn */
  gboolean bar_drawn;          /* the progress line is on screen, unfinished */
} Tune;

/* Errors of the journal and --resume (tune-journal.c). */
#define TUNE_JOURNAL_ERROR (tune_journal_error_quark ())
GQuark tune_journal_error_quark (void);
typedef enum {
  TUNE_JOURNAL_ERROR_EXISTS,   /* a journal exists and --resume was not given */
  TUNE_JOURNAL_ERROR_MISSING,  /* --resume without a journal */
  TUNE_JOURNAL_ERROR_MISMATCH, /* the journal's header differs from this tune's settings */
  TUNE_JOURNAL_ERROR_DAMAGED,  /* a line that is not an evaluation of this format */
  TUNE_JOURNAL_ERROR_REPLAY,   /* the optimiser asks another point than the journal records */
  TUNE_JOURNAL_ERROR_IO,       /* the journal cannot be read or written */
} TuneJournalError;

/* cmd-tune.c. Whether a signal asked the tune to stop (sets @t->signal the first time it is
 * seen): checked between evaluations. */
gboolean tune_stopped (Tune *t);
/* The name of @method, as --method takes it. */
const char *tune_method_name (SedpCmaesMethod method);

/* tune-search.c. Frees what @e owns (not @e). */
void tune_eval_clear (TuneEval *e);
/* Frees @e and what it owns (a GDestroyNotify; NULL is ignored). */
void tune_eval_free (gpointer e);
/* Sets @e's values and text (owned by @e) from its index and x: the pipeline as given for the
 * baseline (index 0), else @e->x applied to it; @workers_over (optional): the worker threads
 * beyond max_workers. */
void tune_eval_derive (const Tune *t, TuneEval *e, double *workers_over);
/* Replays the journal's evaluations (--resume), then measures the baseline (unless replayed)
 * and candidates until the budget is spent or a signal stops it (@t->signal), each appended to
 * the journal as it finishes; prints progress unless --quiet. FALSE with @error for what stops
 * the tune (sedp_tune_evaluate()'s errors, the journal's). */
gboolean tune_search (Tune *t, GError **error);
/* Re-measures the baseline and the best feasible candidates, and sets @t->chosen; a signal
 * stops it between two of them (@t->signal set, TRUE). */
gboolean tune_choose (Tune *t, GError **error);

/* tune-output.c. Writes the tuned pipeline to -o; FALSE with @error when it cannot. */
gboolean tune_write_pipeline (const Tune *t, GError **error);
/* Prints the baseline against the tuned point on stdout. */
void tune_print_table (const Tune *t);
/* Writes the JSON report to --report (marked interrupted when @t->signal is set, without a
 * choice); FALSE with @error when it cannot. */
gboolean tune_write_report (const Tune *t, GError **error);
/* A parameter's value in the pipeline as given, as written ("(default)" when unknown). */
char *tune_start_value (const SedpTuneSpace *space, guint i);

/* tune-journal.c. Sets @t->journal_path; refuses (TUNE_JOURNAL_ERROR_EXISTS) an existing
 * journal without --resume, and with it reads the journal into @t->recorded (tune-resume.c).
 * Call once the pipeline and the space are loaded, before anything is measured. */
gboolean tune_journal_prepare (Tune *t, GError **error);
/* Opens the journal for appending (@t->journal_fd): a new one with its header line, or with
 * --resume the one read, its cut last line dropped. FALSE with @error when it cannot. */
gboolean tune_journal_open (Tune *t, GError **error);
/* Appends evaluation @e as one line, written whole and fsync'd. FALSE with @error naming the
 * journal when it cannot. */
gboolean tune_journal_append (Tune *t, const TuneEval *e, GError **error);
/* Closes the journal (when open); the file is kept. */
void tune_journal_close (Tune *t);
/* This tune's header: its format's version and the settings a resumed tune must share
 * (transfer full). */
JsonNode *tune_journal_header (const Tune *t);
/* Evaluation @e as a journal line's object (transfer full). */
JsonNode *tune_journal_eval (const Tune *t, const TuneEval *e);
/* A journal line's object @o, line @line, read back: index, x, objective, violations,
 * feasible, reason and result (not values or text); NULL with @error (TUNE_JOURNAL_ERROR_DAMAGED
 * naming the line and the member) when a member is missing or not of its kind. */
TuneEval *tune_journal_parse_eval (const Tune *t, JsonObject *o, guint line, GError **error);

/* tune-resume.c. Reads the journal at @t->journal_path: its header checked against this
 * tune's (TUNE_JOURNAL_ERROR_MISMATCH naming the field and both values), its lines into
 * @t->recorded (x, result, objective, violations; not values or text). */
gboolean tune_resume_read (Tune *t, GError **error);
/* Moves @t->recorded into the baseline and @t->evals, telling each candidate to @es after
 * checking that @es asks exactly its point (TUNE_JOURNAL_ERROR_REPLAY otherwise). Nothing is
 * measured. TRUE at once without --resume. */
gboolean tune_resume_replay (Tune *t, SedpCmaes *es, GError **error);

/* tune-objective.c. How the objective of the tune's mode is named, shown and compared: the CPU
 * per request (the default) or with --maximize throughput the capacity. */
typedef struct {
  const char *name;      /* before a value in the progress: "cpu", "capacity" */
  const char *title;     /* in the tuned file's comment: "CPU", "capacity" */
  const char *unit;      /* after a shown value: "ms/req", "req/s" */
  const char *long_unit; /* in the tuned file's comment: "ms/request", "requests/s" */
  const char *axis;      /* the plot's value axis */
  const char *row;       /* the table's row of the re-measured medians */
  const char *field;     /* the result's field, as the report names it */
  double scale;          /* from the field's unit to the shown one */
} TuneObjective;
/* The objective of @t's mode (static). */
const TuneObjective *tune_objective (const Tune *t);
/* Result @r's value in the shown unit (ms per request, or requests/s); NaN when it did not build
 * or measured no value. */
double tune_value (const Tune *t, const SedpTuneResult *r);
/* The re-measured median of @r in the shown unit; NaN when none. */
double tune_rep_value (const Tune *t, const SedpTuneRepeated *r);
/* Whether shown value @a is better than @b: lower CPU, higher capacity; a NaN @a never is, a
 * finite @a is better than a NaN @b. */
gboolean tune_better (const Tune *t, double a, double b);
/* Shown value @v with its unit, "0.588 ms/req", "1234 req/s". Free it. */
char *tune_show (const Tune *t, double v);
/* What the optimiser (a minimiser) is told for @r: the CPU-seconds per request, or 1 /
 * capacity_rps (seconds per request at capacity); NaN when it did not build, or kept the SLO at
 * no rate. */
double tune_told (const Tune *t, const SedpTuneResult *r);
/* "at R requests/s, p99 SLO S ms", or with --maximize throughput "for capacity, p99 SLO S ms",
 * in the C locale. Free it. */
char *tune_conditions (const Tune *t);

/* tune-progress.c, on stderr, nothing with --quiet. The best shown value (tune_value()) among
 * the feasible candidates so far; NaN when none. */
double tune_best (const Tune *t);
/* The baseline's line. */
void tune_progress_baseline (Tune *t);
/* Evaluation @e: a line each, or on a terminal the progress bar redrawn. */
void tune_progress_eval (Tune *t, const TuneEval *e);
/* What --resume replayed. */
void tune_progress_resumed (Tune *t);
/* Ends the progress bar's line, if drawn; call before printing anything else. */
void tune_progress_end (Tune *t);

/* tune-plot.c. Writes the SVG plot of the evaluations to --plot; FALSE with @error when it
 * cannot. */
gboolean tune_write_plot (const Tune *t, GError **error);
