/* sedp — the warm-up requests of a pipeline (docs/serving.md "Warm-up"): its `warmup` file read
 * and each record checked with the protocol's decoder. The DSL only records the file's path. */
#include "warmup.h"

#include <sedp/protocol.h>

static void
warmup_record_free (gpointer p)
{
  SedpWarmupRecord *r = p;
  g_bytes_unref (r->payload);
  g_free (r);
}

GPtrArray *
sedp_warmup_load (const SedpPipelineSpec *spec, GError **error)
{
  g_return_val_if_fail (spec->warmup != NULL, NULL);
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (spec->warmup, &text, &length, &local)) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_IO,
                 "%s:%u: [pipeline] warmup: cannot read the warm-up requests: %s", spec->path,
                 spec->warmup_line, local->message);
    return NULL;
  }
  g_autoptr (GPtrArray) records = g_ptr_array_new_with_free_func (warmup_record_free);
  const char *p = text, *end = text + length;
  for (guint no = 1; p < end; no++) {
    /* One line: ends at \n, \r\n or \r. */
    const char *eol = p;
    while (eol < end && *eol != '\n' && *eol != '\r')
      eol++;
    const char *next = eol < end && *eol == '\r' && eol + 1 < end && eol[1] == '\n' ? eol + 2
                       : eol < end                                                ? eol + 1
                                                                                  : eol;
    const char *b = p, *e = eol;
    p = next;
    while (b < e && g_ascii_isspace (*b))
      b++;
    while (e > b && g_ascii_isspace (e[-1]))
      e--;
    if (b == e || *b == '#')
      continue;
    /* Checked here with the decoder that data_reader runs on it (without the stage's item
     * limit, which applies when the request is sent). */
    g_autoptr (SedpFrame) user = sedp_frame_new (1);
    SedpProtocolRequest decoded;
    if (!sedp_protocol_decode_request ((const guint8 *) b, (gsize) (e - b),
                                       SEDP_PROTOCOL_CONTENT_TYPE_JSON, SEDP_PROTOCOL_JSON,
                                       G_MAXUINT, user, &decoded, &local)) {
      g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                   "%s:%u: [pipeline] warmup: %s:%u: %s", spec->path, spec->warmup_line,
                   spec->warmup, no, local->message);
      return NULL;
    }
    sedp_protocol_request_clear (&decoded);
    SedpWarmupRecord *r = g_new0 (SedpWarmupRecord, 1);
    r->payload = g_bytes_new (b, (gsize) (e - b));
    r->line = no;
    g_ptr_array_add (records, r);
  }
  if (records->len == 0) {
    g_set_error (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_INVALID_VALUE,
                 "%s:%u: [pipeline] warmup: %s holds no request (one PredictRequest in JSON per "
                 "line)", spec->path, spec->warmup_line, spec->warmup);
    return NULL;
  }
  return g_steal_pointer (&records);
}
