/* bench/run e2e, step 10: the model API against sedp's own protocol (docs/compat.md). The CTR
 * example's whole model (model.onnx: dense [13] and slot_0 … slot_25 int64 [4], its embedding
 * tables inside) served bare, `sedp serve --model ctr=model.onnx`, and loaded at one client with
 * the example's 300-item requests in three encodings, in interleaved rounds:
 *   - native protobuf (POST /v1/pipelines/ctr:predict, sedp's PredictRequest);
 *   - TF Serving REST JSON (POST /v1/models/ctr:predict, `{"instances": [...]}`);
 *   - DeepRec protobuf (the same route, DeepRec's PredictRequest).
 * Every request carries the same values: the user's slots are copied into each item (a model
 * API has no user part), so the native requests carry them per item too. At one client a
 * request's latency is the inverse of the request rate, so latency ratios are ratios of items/s:
 * tfs_json_over_native = native protobuf items/s over TF Serving's, deeprec_over_native = native
 * over DeepRec's (each the median of the rounds' ratios; ≤ 1.3 and ≤ 1.1 are the targets). */
#pragma once

#include "bench-process.h"

#include <json-glib/json-glib.h>

/* Writes @out: each request of @in with the user's features merged into every item's (an item's
 * own feature of the same name wins) and no user. FALSE with @error. */
static gboolean
model_api_flatten (const char *in, const char *out, GError **error)
{
  g_autofree char *text = NULL;
  if (!g_file_get_contents (in, &text, NULL, error))
    return FALSE;
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GString) flat = g_string_new (NULL);
  for (guint i = 0; lines[i]; i++) {
    if (*g_strstrip (lines[i]) == '\0')
      continue;
    g_autoptr (JsonParser) p = json_parser_new ();
    if (!json_parser_load_from_data (p, lines[i], -1, error))
      return FALSE;
    JsonObject *req = json_node_get_object (json_parser_get_root (p));
    JsonObject *user = json_object_get_object_member (req, "user");
    JsonObject *uf = user ? json_object_get_object_member (user, "features") : NULL;
    JsonArray *items = json_object_get_array_member (req, "items");
    for (guint k = 0; uf && k < json_array_get_length (items); k++) {
      JsonObject *f = json_object_get_object_member (json_array_get_object_element (items, k),
                                                     "features");
      g_autoptr (GList) names = json_object_get_members (uf);
      for (GList *l = names; l; l = l->next)
        if (!json_object_has_member (f, l->data))
          json_object_set_member (f, l->data, json_node_copy (json_object_get_member (uf, l->data)));
    }
    json_object_remove_member (req, "user");
    json_object_remove_member (req, "top_k");
    g_autoptr (JsonGenerator) g = json_generator_new ();
    json_generator_set_root (g, json_parser_get_root (p));
    g_autofree char *line = json_generator_to_data (g, NULL);
    g_string_append_printf (flat, "%s\n", line);
  }
  return g_file_set_contents (out, flat->str, (gssize) flat->len, error);
}

/* `sedp bench @url` at one client for @seconds in @format: items/s (-1 on failure or errors). */
static double
model_api_items (const char *sedp, const char *url, const char *requests, const char *format,
                 double seconds)
{
  g_autofree char *d_s = g_strdup_printf ("%g", seconds);
  char *argv[] = {(char *) sedp, "bench", (char *) url, "--concurrency", "1", "--duration", d_s,
                  "--requests", (char *) requests, "--format", (char *) format, "--quiet", NULL};
  g_autofree char *out = bench_run_capture (argv);
  if (out == NULL || bench_result_value (out, "errors") != 0) {
    fprintf (stderr, "e2e: model API: %s load of %s failed\n", format, url);
    return -1;
  }
  return bench_result_value (out, "items_per_s");
}

enum { MA_NATIVE_PB, MA_TFS, MA_DEEPREC, MA_N };

/* One round's items/s per encoding. */
typedef double ModelApiRound[MA_N];

/* One round: each encoding once, in an order rotated by @round (no encoding always first). */
static gboolean
model_api_round (const char *sedp, const char *native, const char *model_api, const char *req,
                 double seconds, int round, double *v)
{
  static const char *const formats[MA_N] = {"protobuf", "tfs", "deeprec"};
  for (int j = 0; j < MA_N; j++) {
    int k = (j + round) % MA_N;
    v[k] = model_api_items (sedp, k == MA_NATIVE_PB ? native : model_api, req, formats[k], seconds);
    if (v[k] <= 0)
      return FALSE;
  }
  return TRUE;
}

static void
model_api_report (const ModelApiRound *v, int rounds, double (*median) (const double *, int))
{
  g_autofree double *tfs = g_new (double, rounds), *dr = g_new (double, rounds);
  g_autofree double *pb = g_new (double, rounds);
  g_autoptr (GString) list = g_string_new (NULL);
  for (int r = 0; r < rounds; r++) {
    pb[r] = v[r][MA_NATIVE_PB];
    tfs[r] = v[r][MA_NATIVE_PB] / v[r][MA_TFS];
    dr[r] = v[r][MA_NATIVE_PB] / v[r][MA_DEEPREC];
    g_string_append_printf (list, "%s%.3f/%.3f", r ? "," : "", tfs[r], dr[r]);
  }
  printf ("RESULT model_api_rounds=%d model_api_native_items_per_s_c1=%.1f\n", rounds,
          median (pb, rounds));
  printf ("RESULT tfs_json_over_native=%.3f\n", median (tfs, rounds));
  printf ("RESULT deeprec_over_native=%.3f\n", median (dr, rounds));
  printf ("RESULT model_api_rounds_tfs_deeprec=%s\n", list->str);
}

/* Step 10: serves @data_dir/model.onnx bare and compares the encodings in @rounds rounds. */
static gboolean
model_api_rounds (const char *sedp, const char *data_dir, int rounds, double seconds,
                  double (*median) (const double *, int))
{
  g_autofree char *in = g_build_filename (data_dir, "requests.jsonl", NULL);
  g_autofree char *req = g_build_filename (data_dir, "requests-flat.jsonl", NULL);
  g_autofree char *model = g_build_filename (data_dir, "model.onnx", NULL);
  g_autoptr (GError) error = NULL;
  if (!model_api_flatten (in, req, &error)) {
    fprintf (stderr, "e2e: %s\n", error->message);
    return FALSE;
  }
  g_autofree char *model_arg = g_strdup_printf ("ctr=%s", model);
  const char *extra[] = {"--model", model_arg, NULL};
  BenchServer s;
  if (!bench_server_start (&s, sedp, NULL, "ctr", extra))
    return FALSE;
  g_autofree char *base = g_strndup (s.url, (gsize) (strstr (s.url, "/v1/pipelines/") - s.url));
  g_autofree char *model_api = g_strdup_printf ("%s/v1/models/ctr:predict", base);
  g_autofree ModelApiRound *v = g_new0 (ModelApiRound, rounds);
  gboolean ok = model_api_items (sedp, s.url, req, "protobuf", 3) > 0; /* warm-up */
  for (int r = 0; ok && r < rounds; r++) {
    ok = model_api_round (sedp, s.url, model_api, req, seconds, r, v[r]);
    if (ok)
      fprintf (stderr, "e2e: model API round %d: items/s native protobuf %.0f, tfs %.0f, deeprec "
               "%.0f\n", r + 1, v[r][MA_NATIVE_PB], v[r][MA_TFS], v[r][MA_DEEPREC]);
  }
  bench_server_stop (&s);
  if (ok)
    model_api_report (v, rounds, median);
  return ok;
}
