/* sedp — a TF Serving REST predict request written from an items frame (row format,
 * `{"instances": [{"NAME": VALUE, …}, …]}`): what the load generator and the benchmarks send to
 * the model API (docs/compat.md). The decoder of such requests is tfs-json.c. */
#include "json-scan.h"
#include "model-api.h"

#include <math.h>

/* One value of a float32 or int64 column as JSON: a number, or a list for a width over 1. */
static void
append_row (GString *out, const SedpColumn *c, guint row)
{
  guint w = sedp_column_get_width (c);
  guint r = sedp_column_is_broadcast (c) ? 0 : row;
  SedpColumnType t = sedp_column_get_column_type (c);
  if (t == SEDP_COLUMN_STRING) {
    const char *s = sedp_column_get_string (c, r);
    sedp_json_append_string (out, s ? s : "");
    return;
  }
  if (t == SEDP_COLUMN_IDLIST) {
    guint n;
    const guint64 *ids = sedp_column_get_ids (c, r, &n);
    g_string_append_c (out, '[');
    for (guint i = 0; i < n; i++)
      g_string_append_printf (out, "%s%" G_GUINT64_FORMAT, i ? "," : "", ids[i]);
    g_string_append_c (out, ']');
    return;
  }
  if (w > 1)
    g_string_append_c (out, '[');
  for (guint i = 0; i < w; i++) {
    if (i)
      g_string_append_c (out, ',');
    if (t == SEDP_COLUMN_FLOAT32) {
      float v = sedp_column_get_float32 (c)[(gsize) r * w + i];
      g_string_append_printf (out, "%.9g", isfinite (v) ? (double) v : 0.0);
    } else if (t == SEDP_COLUMN_INT64) {
      g_string_append_printf (out, "%" G_GINT64_FORMAT, sedp_column_get_int64 (c)[(gsize) r * w + i]);
    } else {
      g_string_append_printf (out, "%" G_GUINT64_FORMAT, sedp_column_get_uint64 (c)[(gsize) r * w + i]);
    }
  }
  if (w > 1)
    g_string_append_c (out, ']');
}

GBytes *
sedp_model_api_encode_tfs_request (const SedpFrame *items, const char *const *skip)
{
  GString *out = g_string_new ("{\"instances\": [");
  guint n_rows = sedp_frame_get_n_rows (items), n_cols = sedp_frame_get_n_columns (items);
  for (guint r = 0; r < n_rows; r++) {
    g_string_append (out, r ? ", {" : "{");
    gboolean first = TRUE;
    for (guint c = 0; c < n_cols; c++) {
      const SedpColumn *col = sedp_frame_get_column_at (items, c);
      if (skip && g_strv_contains (skip, sedp_column_get_name (col)))
        continue;
      g_string_append (out, first ? "" : ", ");
      sedp_json_append_string (out, sedp_column_get_name (col));
      g_string_append (out, ": ");
      append_row (out, col, r);
      first = FALSE;
    }
    g_string_append_c (out, '}');
  }
  g_string_append (out, "]}");
  return g_string_free_to_bytes (out);
}
