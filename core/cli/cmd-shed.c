/* sedp shed — the load shedder's tools: `sedp shed train` fits the pruning DNN to a recorded
 * workload (docs/load-shedding.md#training). */
#include "cli.h"

#include "../shed/train.h"

#include <stdio.h>

typedef struct {
  char *requests, *format, *out, *report, *score, *escore, *validate;
  SedpRequestFormat requests_format;
  gint top_k, levels, copies, pool, epochs, seed;
} TrainArgs;

static gboolean
check_ranges (const TrainArgs *a)
{
  const char *bad = a->top_k < 1 || a->top_k > 100000   ? "--top-k must be from 1 to 100000"
                    : a->levels < 1 || a->levels > 1000 ? "--levels must be from 1 to 1000"
                    : a->copies < 1 || a->copies > 1000 ? "--copies must be from 1 to 1000"
                    : a->pool < 1 || a->pool > 100000 ? "--pool must be from 1 to 100000"
                    : a->epochs < 1 || a->epochs > 100000 ? "--epochs must be from 1 to 100000"
                    : a->seed < 0 ? "--seed must not be negative"
                                  : NULL;
  if (bad)
    sedp_cli_error ("shed train", bad);
  return bad == NULL;
}

/* Trains on the workload of @a, writes the model to @a->out and the report. */
static int
train (const char *pipeline, const TrainArgs *a)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpShedWorkload) w = sedp_shed_collect (pipeline, a->requests, a->requests_format,
                                                      a->score, a->escore, &error);
  if (w == NULL) {
    sedp_cli_error ("shed train", error->message);
    return 1;
  }
  g_autoptr (SedpShedWorkload) v = NULL;
  if (a->validate) {
    v = sedp_shed_collect (pipeline, a->validate, a->requests_format, a->score, a->escore, &error);
    if (v == NULL) {
      g_autofree char *msg = g_strdup_printf ("--validate %s: %s", a->validate, error->message);
      sedp_cli_error ("shed train", msg);
      return 1;
    }
  }
  SedpShedTrainOptions opt = {(guint) a->top_k, (guint) a->levels, (guint) a->copies,
                              (guint) a->pool, (guint) a->epochs, (guint64) a->seed, v};
  SedpShedTrainReport report = {0};
  g_autoptr (SedpNnModel) model = sedp_shed_train (w, &opt, &report, &error);
  g_autoptr (GString) text = g_string_new (NULL);
  sedp_shed_train_report_print (&report, text);
  sedp_shed_train_report_clear (&report);
  if (model == NULL || !sedp_nn_model_save (model, a->out, &error)) {
    sedp_cli_error ("shed train", error->message);
    return 1;
  }
  if (a->report && !g_file_set_contents (a->report, text->str, (gssize) text->len, &error)) {
    sedp_cli_error ("shed train", error->message);
    return 1;
  }
  fprintf (stderr, "sedp shed train: wrote %s (min_keep %u, max_cutoff %.2f)\n%s", a->out,
           w->min_keep, w->max_cutoff, text->str);
  return 0;
}

static int
cmd_train (int argc, char **argv)
{
  TrainArgs a = {.top_k = 10, .levels = 10, .copies = 4, .pool = 16, .epochs = 300, .seed = 1};
  const GOptionEntry entries[] = {
    {"requests", 'r', 0, G_OPTION_ARG_FILENAME, &a.requests,
     "The recorded workload: a request file as sedp run reads it", "FILE"},
    {"requests-format", 0, 0, G_OPTION_ARG_STRING, &a.format,
     "auto (default: from the name and the first byte), jsonl, predict-jsonl or pb", "FORMAT"},
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &a.out, "Where to write the pruning DNN (ONNX)", "FILE"},
    {"report", 0, 0, G_OPTION_ARG_FILENAME, &a.report,
     "Also write the report (loss, recall against the share kept per load level) to FILE", "FILE"},
    {"validate", 0, 0, G_OPTION_ARG_FILENAME, &a.validate,
     "Also report the model on the held-out requests of FILE (same format; not trained on)",
     "FILE"},
    {"score", 0, 0, G_OPTION_ARG_STRING, &a.score, "The full model's score column (default score)", "COLUMN"},
    {"escore", 0, 0, G_OPTION_ARG_STRING, &a.escore, "The escore column (default escore)", "COLUMN"},
    {"top-k", 'k', 0, G_OPTION_ARG_INT, &a.top_k, "The K of recall@K (default 10)", "K"},
    {"levels", 0, 0, G_OPTION_ARG_INT, &a.levels, "Load levels: quotas 1 … 1/L (default 10)", "L"},
    {"copies", 0, 0, G_OPTION_ARG_INT, &a.copies, "Samples per request and level (default 4)", "N"},
    {"pool", 0, 0, G_OPTION_ARG_INT, &a.pool,
     "Label each request from the mean recall of the N requests nearest in candidate count "
     "(default 16; 1: from its own)", "N"},
    {"epochs", 0, 0, G_OPTION_ARG_INT, &a.epochs, "Training epochs (default 300)", "N"},
    {"seed", 0, 0, G_OPTION_ARG_INT, &a.seed, "Seed of every random draw (default 1)", "N"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("shed train", "PIPELINE --requests FILE -o FILE",
                       "Runs PIPELINE (its shedders off) over the requests of FILE, labels each "
                       "request and load level with the share to keep, fits the pruning DNN and "
                       "writes it as ONNX, with a report on stderr. Nothing is written when the "
                       "workload is empty, unreadable or fails.",
                       entries, &argc, &argv))
    return 2;
  g_autofree char *rp = a.requests, *fm = a.format, *op = a.out, *rep = a.report, *sc = a.score,
                  *es = a.escore, *va = a.validate;
  a.score = sc ? sc : "score";
  a.escore = es ? es : "escore";
  if (argc != 2 || rp == NULL || op == NULL) {
    sedp_cli_error ("shed train", "expected PIPELINE, --requests FILE and -o FILE (see --help)");
    return 2;
  }
  if (fm && !sedp_request_format_from_string (fm, &a.requests_format)) {
    sedp_cli_error ("shed train", "--requests-format must be auto, jsonl, predict-jsonl or pb");
    return 2;
  }
  return check_ranges (&a) ? train (argv[1], &a) : 2;
}

static const SedpCliCommand subs[] = {
  {"train", cmd_train, "Fit the pruning DNN of the shedder stage to a recorded workload"},
};

int
sedp_cmd_shed (int argc, char **argv)
{
  return sedp_cli_dispatch ("shed", "The load shedder (the shedder stage).", NULL, subs,
                            G_N_ELEMENTS (subs), argc, argv);
}
