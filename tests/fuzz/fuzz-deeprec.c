/* sedp fuzz target `deeprec` — DeepRec's protobuf PredictRequest, sedp_model_api_decode() with
 * SEDP_MODEL_API_DEEPREC (core/io/deeprec-pb.c, model-api.c, wire.h), against the signatures of
 * fuzz-model-api.h (the open one with small limits). An accepted request's items are encoded back
 * with sedp_model_api_encode_deeprec_request() and must decode again, against an open signature,
 * to the same columns. */
#include "fuzz-model-api.h"

#include <math.h>
#include <string.h>

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  fuzz_model_api_init ();
  return 0;
}

/* Two frames with the same columns, types, widths and values. */
static void
assert_same (const SedpFrame *a, const SedpFrame *b)
{
  guint n = sedp_frame_get_n_rows (a);
  g_assert (sedp_frame_get_n_rows (b) == n);
  g_assert (sedp_frame_get_n_columns (a) == sedp_frame_get_n_columns (b));
  for (guint c = 0; c < sedp_frame_get_n_columns (a); c++) {
    const SedpColumn *x = sedp_frame_get_column_at (a, c);
    const SedpColumn *y = sedp_frame_get_column (b, sedp_column_get_name (x));
    g_assert (y && sedp_column_get_column_type (x) == sedp_column_get_column_type (y));
    guint w = sedp_column_get_width (x);
    g_assert (sedp_column_get_width (y) == w);
    gsize bytes = (gsize) n * w * (sedp_column_get_column_type (x) == SEDP_COLUMN_INT64 ? 8 : 4);
    if (sedp_column_get_column_type (x) == SEDP_COLUMN_STRING)
      for (guint r = 0; r < n; r++)
        g_assert (strcmp (sedp_column_get_string (x, r), sedp_column_get_string (y, r)) == 0);
    else if (sedp_column_get_column_type (x) == SEDP_COLUMN_INT64)
      g_assert (memcmp (sedp_column_get_int64 (x), sedp_column_get_int64 (y), bytes) == 0);
    else
      for (gsize k = 0; k < bytes / 4; k++) {
        float fx = sedp_column_get_float32 (x)[k], fy = sedp_column_get_float32 (y)[k];
        g_assert (fx == fy || (isnan (fx) && isnan (fy)));
      }
  }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static SedpModelApiSignature *any;
  if (any == NULL) {
    any = sedp_model_api_signature_new ("serving_default");
    any->open_inputs = TRUE;
  }
  for (guint k = 0; k < G_N_ELEMENTS (fuzz_signatures); k++) {
    SedpFrame *items = fuzz_model_api_decode (SEDP_MODEL_API_DEEPREC, data, size,
                                              fuzz_signatures[k], k == 2);
    if (items == NULL)
      continue;
    GBytes *again = sedp_model_api_encode_deeprec_request (NULL, items, NULL);
    gsize len;
    const guint8 *p = g_bytes_get_data (again, &len);
    SedpFrame *back = fuzz_model_api_decode (SEDP_MODEL_API_DEEPREC, p, len, any, FALSE);
    g_assert (back != NULL);
    assert_same (items, back);
    sedp_frame_unref (back);
    g_bytes_unref (again);
    sedp_frame_unref (items);
  }
  return 0;
}
