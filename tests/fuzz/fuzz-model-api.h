/* sedp fuzz targets — what the model API's targets (`tfs`, `deeprec`) share: three signatures
 * and the checks of a decode. */
#pragma once

#include "fuzz-common.h"

#include "io/model-api.h"

static SedpModelApiSignature *fuzz_signatures[3];

static inline SedpModelApiSignature *
fuzz_signature (const char *const *inputs, const char *const *outputs, gboolean open)
{
  SedpModelApiSignature *s = sedp_model_api_signature_new ("serving_default");
  s->open_inputs = open;
  for (guint i = 0; inputs[i]; i++)
    g_assert (sedp_model_api_signature_add_spec (s, FALSE, inputs[i], NULL));
  for (guint i = 0; outputs[i]; i++)
    g_assert (sedp_model_api_signature_add_spec (s, TRUE, outputs[i], NULL));
  return s;
}

/* One string input; three inputs of every type (one renamed, one nested [2,2]); an open
 * signature with one declared input. Once, from LLVMFuzzerInitialize(). */
static inline void
fuzz_model_api_init (void)
{
  const char *one[] = {"image:string", NULL}, *one_out[] = {"image:string", NULL};
  const char *three[] = {"tag:string", "signal=sig:float32[5]", "sensor:int64[2,2]", NULL};
  const char *three_out[] = {"sig[5]", "sensor:int64[2,2]", NULL};
  const char *open[] = {"x[2]", NULL}, *open_out[] = {"x[2]", "y", NULL};
  fuzz_signatures[0] = fuzz_signature (one, one_out, FALSE);
  fuzz_signatures[1] = fuzz_signature (three, three_out, FALSE);
  fuzz_signatures[2] = fuzz_signature (open, open_out, TRUE);
}

/* Decodes @data against @s (with small limits when @small): a refusal must be a
 * SEDP_PROTOCOL_ERROR starting "invalid request: "; an accepted request holds a frame of n_rows
 * (≥ 1) rows with a column per declared input, every value of which is read back. Returns the
 * frame (NULL when refused). */
static inline SedpFrame *
fuzz_model_api_decode (SedpModelApiFormat format, const uint8_t *data, size_t size,
                       const SedpModelApiSignature *s, gboolean small)
{
  SedpProtocolLimits limits = {.max_items = 8, .max_depth = 8, .max_features = 4,
                               .max_values = 16, .max_string_bytes = 64,
                               .max_decoded_bytes = 4096};
  SedpModelApiRequest r;
  GError *error = NULL;
  if (!sedp_model_api_decode (format, data, size, s, small ? &limits : NULL, &r, &error)) {
    g_assert (error != NULL && error->domain == SEDP_PROTOCOL_ERROR &&
              g_str_has_prefix (error->message, "invalid request: "));
    g_assert (r.items == NULL);
    fuzz_refused ("decode", error);
    return NULL;
  }
  g_assert (r.items != NULL && r.n_rows >= 1 && sedp_frame_get_n_rows (r.items) == r.n_rows);
  for (guint i = 0; i < s->inputs->len; i++)
    g_assert (sedp_frame_get_column (r.items, g_array_index (s->inputs, SedpModelApiTensor,
                                                             i).column) != NULL);
  fuzz_touch_frame (r.items);
  SedpFrame *items = g_steal_pointer (&r.items);
  sedp_model_api_request_clear (&r);
  return items;
}
