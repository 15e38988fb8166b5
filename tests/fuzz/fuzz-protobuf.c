/* sedp fuzz target `protobuf` — the protobuf PredictRequest decoder,
 * sedp_protocol_decode_request() with SEDP_PROTOCOL_PROTOBUF, as data_reader calls it: the bytes
 * are a request's payload, decoded into a one-row request frame and the items frame; every
 * decoded value is then read back. */
#include "fuzz-common.h"

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  fuzz_decode_request (data, size, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF, SEDP_PROTOCOL_PROTOBUF);
  return 0;
}
