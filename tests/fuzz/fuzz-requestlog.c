/* sedp fuzz target `requestlog` — the request files of `sedp run`: the protobuf request log
 * reader (core/io/request-log.c: length-delimited PredictRequest records) on a memory stream of
 * unknown size, then the request file reader (sedp_request_reader_open_format(), format AUTO) on
 * the same bytes as a file (a memfd): format sniffing, request logs of known size, and JSON
 * Lines of both kinds (`sedp run` requests, decoded here; PredictRequest lines, checked and
 * carried as payloads). */
#include "fuzz-common.h"

#include "io/request-file.h"
#include "io/request-log.h"

#include <unistd.h>

/* A JSON Lines file goes on after a bad line; at most this many lines are read. */
#define MAX_REQUESTS 4096

/* Reads what a request carries, as `sedp run` would before submitting it. */
static void
touch_request (SedpRequest *request)
{
  gsize size = 0;
  const char *type = NULL;
  const guint8 *payload = sedp_request_get_payload (request, &size, &type);
  g_assert (payload == NULL || type != NULL);
  g_assert (sedp_request_get_id (request) != NULL);
  sedp_request_get_n_items (request);
  sedp_request_unref (request);
}

static void
read_log (const uint8_t *data, size_t size)
{
  g_autoptr (GInputStream) in = g_memory_input_stream_new_from_data (data, (gssize) size, NULL);
  SedpRequestLog *log = sedp_request_log_new (in, "fuzz.pb", 0);
  SedpRequest *request;
  GError *error = NULL;
  while ((request = sedp_request_log_next (log, &error)) != NULL)
    touch_request (request);
  if (error) {
    g_assert (error->domain == SEDP_IO_ERROR);
    fuzz_refused ("log", error);
  }
  sedp_request_log_free (log);
}

static void
read_file (const uint8_t *data, size_t size)
{
  int fd = fuzz_memfd (data, size);
  g_assert (fd >= 0);
  g_autofree char *path = g_strdup_printf ("/proc/self/fd/%d", fd);
  GError *error = NULL;
  SedpRequestReader *reader = sedp_request_reader_open_format (path, SEDP_REQUEST_FORMAT_AUTO,
                                                               &error);
  g_assert (reader != NULL);
  for (guint n = 0; n < MAX_REQUESTS; n++) {
    SedpRequest *request = sedp_request_reader_next (reader, &error);
    sedp_request_reader_progress (reader);
    if (request) {
      touch_request (request);
      continue;
    }
    if (error == NULL)
      break; /* the end */
    g_assert (error->domain == SEDP_IO_ERROR);
    fuzz_refused ("file", g_steal_pointer (&error));
    if (sedp_request_reader_get_format (reader) == SEDP_REQUEST_FORMAT_PB)
      break; /* a log stays at its first error */
  }
  sedp_request_reader_close (reader);
  close (fd);
}

int
LLVMFuzzerInitialize (int *argc, char ***argv)
{
  fuzz_init ();
  return 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  read_log (data, size);
  read_file (data, size);
  return 0;
}
