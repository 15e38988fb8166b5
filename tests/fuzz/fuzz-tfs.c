/* sedp fuzz target `tfs` — TF Serving's REST predict JSON, sedp_model_api_decode() with
 * SEDP_MODEL_API_TFS_JSON (core/io/tfs-json.c, model-api.c), as the server's model API calls it:
 * the bytes are a request body, decoded against the signatures of fuzz-model-api.h (one string
 * input; three inputs of every type, one renamed, one nested [2,2]; an open one with a declared
 * input, under small limits); a refusal must be a SEDP_PROTOCOL_ERROR starting "invalid
 * request: ", an accepted request has a frame of n_rows rows whose every value is read back. */
#include "fuzz-model-api.h"

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  fuzz_model_api_init ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  for (guint k = 0; k < G_N_ELEMENTS (fuzz_signatures); k++) {
    SedpFrame *items = fuzz_model_api_decode (SEDP_MODEL_API_TFS_JSON, data, size,
                                              fuzz_signatures[k], k == 2);
    if (items)
      sedp_frame_unref (items);
  }
  return 0;
}
