/* sedp fuzz target `tune-space` — a search-space file of `sedp tune --space FILE` (docs/tuning.md,
 * "The search space"): the input is written to FUZZDIR/space.tune and read by
 * sedp_tune_space_load() against a fixed pipeline of four in-tree plugins (data_reader,
 * synthetic_work, fault_injector, passthrough: enum, int, real and bool options, and one plugin
 * without options for the wildcards to skip), so that the pipeline parser reads the file, the
 * other groups are refused, and core/tune/space-parse.c and space-decl.c check every entry:
 * addresses, wildcards, max_workers, ${VAR}, the declarations and the plugins' schemas.
 *
 * A space that parses is then mapped to the optimiser's box (sedp_tune_space_to_cmaes) and
 * written back (sedp_tune_space_apply) at the start point and at a corner of the box (lower on
 * even coordinates, upper on odd ones). What the API promises is asserted: an error of
 * SEDP_TUNE_SPACE_ERROR or SEDP_DSL_ERROR; 1 to SEDP_CMAES_MAX_DIM parameters, each a
 * non-empty range of its type; a box with lower < upper and the start in it (or NaN); the start
 * written back leaves the text as it was when every start lies in its range; and every
 * candidate is a pipeline that compiles (its values within the plugins' limits).
 *
 * ${SEDP_FUZZ_LOW} is "1", ${SEDP_FUZZ_RANGE} is "1..8" and ${SEDP_FUZZ_EMPTY} is "". */
#include "fuzz-common.h"

#include "graph/graph.h"
#include "tune/space.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef SEDP_FUZZ_PLUGIN_DIR
#error "SEDP_FUZZ_PLUGIN_DIR: the build's plugin folder"
#endif

static const char pipeline_text[] = "[pipeline]\n"
                                    "name = fuzz\n"
                                    "frame_rows = 32\n"
                                    "\n"
                                    "[stage reader]\n"
                                    "plugin = data_reader\n"
                                    "format = json\n"
                                    "\n"
                                    "[stage work]\n"
                                    "plugin = synthetic_work\n"
                                    "after = reader\n"
                                    "# two workers\n"
                                    "parallelism = 2\n"
                                    "spin_us = 2\n"
                                    "distribution = fixed\n"
                                    "output = score\n"
                                    "\n"
                                    "[stage faults]\n"
                                    "plugin = fault_injector\n"
                                    "after = work\n"
                                    "batch = 4\n"
                                    "\n"
                                    "[stage out]\n"
                                    "plugin = passthrough\n"
                                    "after = faults\n";

static SedpRegistry *registry;
static SedpPipelineSpec *spec; /* pipeline_text, as FUZZDIR/fuzz.pipeline */
static char *pipeline_path;
static char *space_path;

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  const char *dirs[] = {SEDP_FUZZ_PLUGIN_DIR, NULL};
  registry = sedp_registry_new (dirs);
  g_setenv ("SEDP_FUZZ_LOW", "1", TRUE);
  g_setenv ("SEDP_FUZZ_RANGE", "1..8", TRUE);
  g_setenv ("SEDP_FUZZ_EMPTY", "", TRUE);
  const char *dir = fuzz_tmpdir ();
  pipeline_path = g_build_filename (dir, "fuzz.pipeline", NULL);
  space_path = g_build_filename (dir, "space.tune", NULL);
  g_autoptr (GError) error = NULL;
  spec = sedp_pipeline_spec_parse (pipeline_text, strlen (pipeline_text), pipeline_path, &error);
  if (spec == NULL)
    g_error ("fuzz: the fixed pipeline does not parse: %s", error->message);
  /* It compiles: every refusal below is the space's. */
  SedpPipelineSpec *copy = sedp_pipeline_spec_parse (pipeline_text, strlen (pipeline_text),
                                                     pipeline_path, &error);
  SedpGraph *graph = copy ? sedp_graph_compile (copy, registry, &error) : NULL;
  if (graph == NULL)
    g_error ("fuzz: the fixed pipeline does not compile: %s", error->message);
  sedp_graph_free (graph);
  return 0;
}

/* Every parameter is what space.h describes. */
static void
check_params (const SedpTuneSpace *space)
{
  guint n = sedp_tune_space_n_params (space);
  g_assert (n >= 1 && n <= SEDP_CMAES_MAX_DIM);
  g_assert (sedp_tune_space_max_workers (space) >= 1);
  guint64 sum = 0;
  for (guint i = 0; i < n; i++) {
    const SedpTuneParam *p = sedp_tune_space_param (space, i);
    sum += fuzz_checksum_bytes (p->address, strlen (p->address));
    sum += fuzz_checksum_bytes (p->group, strlen (p->group));
    sum += fuzz_checksum_bytes (p->key, strlen (p->key));
    g_assert ((p->stage == NULL) == (strcmp (p->group, "pipeline") == 0));
    g_assert (isfinite (p->low) && isfinite (p->high) && p->low < p->high);
    g_assert (isnan (p->start) || isfinite (p->start));
    switch (p->type) {
    case SEDP_TUNE_INT:
    case SEDP_TUNE_REAL:
      g_assert (p->choices == NULL);
      g_assert (!p->log || (p->type == SEDP_TUNE_INT ? p->low >= 0 : p->low > 0));
      break;
    case SEDP_TUNE_BOOL:
      g_assert (p->low == 0 && p->high == 1 && !p->log && p->choices == NULL);
      break;
    case SEDP_TUNE_ENUM:
      g_assert (p->choices != NULL && !p->log && p->low == 0);
      g_assert (p->high == g_strv_length (p->choices) - 1);
      for (guint k = 0; p->choices[k]; k++)
        sum += fuzz_checksum_bytes (p->choices[k], strlen (p->choices[k]));
      break;
    default:
      g_assert_not_reached ();
    }
  }
  (void) sum;
}

/* @candidate, written by sedp_tune_space_apply(), is a pipeline that compiles. */
static void
check_candidate (const char *candidate, double violation)
{
  g_assert (violation >= 0 && isfinite (violation));
  GError *error = NULL;
  SedpPipelineSpec *back =
      sedp_pipeline_spec_parse (candidate, strlen (candidate), pipeline_path, &error);
  if (back == NULL)
    g_error ("fuzz: a candidate does not parse: %s\n%s", error->message, candidate);
  SedpGraph *graph = sedp_graph_compile (back, registry, &error);
  if (graph == NULL)
    g_error ("fuzz: a candidate does not compile: %s\n%s", error->message, candidate);
  sedp_graph_free (graph);
}

/* The box, and the space written back at its start and at a corner. */
static void
use_space (const SedpTuneSpace *space)
{
  check_params (space);
  SedpCmaesOptions opt;
  sedp_cmaes_options_init (&opt);
  sedp_tune_space_to_cmaes (space, &opt);
  g_assert (opt.n == sedp_tune_space_n_params (space));
  gboolean starts_in_range = TRUE;
  for (guint i = 0; i < opt.n; i++) {
    const SedpTuneParam *p = sedp_tune_space_param (space, i);
    g_assert (isfinite (opt.lower[i]) && isfinite (opt.upper[i]));
    if (!(opt.lower[i] < opt.upper[i]))
      g_error ("fuzz: %s: an empty box [%.17g, %.17g] from the range %.17g..%.17g%s", p->address,
               opt.lower[i], opt.upper[i], p->low, p->high, p->log ? " log" : "");
    g_assert (isnan (opt.x0[i]) || (opt.x0[i] >= opt.lower[i] && opt.x0[i] <= opt.upper[i]));
    if (isnan (p->start) || p->start < p->low || p->start > p->high)
      starts_in_range = FALSE;
  }
  double violation = -1;
  /* At the start, every value as given: nothing is written when every start is in its range. */
  g_autofree char *at_start = sedp_tune_space_apply (space, opt.x0, pipeline_text, &violation);
  if (starts_in_range && strcmp (at_start, pipeline_text) != 0)
    g_error ("fuzz: the start point changed the pipeline:\n%s", at_start);
  check_candidate (at_start, violation);
  double corner[SEDP_CMAES_MAX_DIM];
  for (guint i = 0; i < opt.n; i++) {
    corner[i] = i % 2 ? opt.upper[i] : opt.lower[i];
    g_autofree char *value = sedp_tune_space_value (space, i, corner[i]);
    g_assert (value != NULL && *value);
  }
  g_autofree char *at_corner = sedp_tune_space_apply (space, corner, pipeline_text, &violation);
  check_candidate (at_corner, violation);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  /* Not g_file_set_contents(): it syncs every input to disk (and GLib 2.74's in-place mode
   * does not truncate, so a shorter input would keep the end of the one before). */
  FILE *f = fopen (space_path, "wb");
  if (f == NULL || fwrite (data, 1, size, f) != size || fclose (f) != 0)
    g_error ("fuzz: cannot write %s", space_path);
  GError *error = NULL;
  SedpTuneSpace *space = sedp_tune_space_load (spec, space_path, registry, &error);
  if (space == NULL) {
    g_assert (error != NULL);
    g_assert (error->domain == SEDP_TUNE_SPACE_ERROR || error->domain == SEDP_DSL_ERROR);
    fuzz_refused ("load", error);
    return 0;
  }
  g_assert (error == NULL);
  use_space (space);
  sedp_tune_space_free (space);
  return 0;
}
