/* sedp fuzz target `http-answer` — what the load generator makes of a server's HTTP answer
 * (core/load/http-answer.c): the bytes are what a server sent, fed to the parser in reads whose
 * sizes the input's first byte chooses (1 to 256 bytes, or all at once), then the server's EOF.
 * Whatever the bytes: MORE, DONE (a status of 200–999, a body within what came) or BAD with a
 * message. No socket is opened. */
#include "fuzz-common.h"

#include "load/http-answer.h"

#include <string.h>

/* Feeds @size bytes at @data in reads of @step (0: all at once); the outcome after the EOF. */
static HttpAnswerParse
feed (HttpAnswer *a, const uint8_t *data, size_t size, size_t step)
{
  HttpAnswerParse p = HTTP_ANSWER_MORE;
  for (size_t off = 0; off < size && p == HTTP_ANSWER_MORE;) {
    gsize room;
    guint8 *to = http_answer_room (a, &room);
    size_t n = MIN (MIN (step ? step : size, room), size - off);
    memcpy (to, data + off, n);
    off += n;
    p = http_answer_add (a, n);
  }
  return p == HTTP_ANSWER_MORE ? http_answer_end (a) : p;
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
  if (size == 0)
    return 0;
  size_t step = data[0];
  HttpAnswer a;
  http_answer_init (&a, "fuzz:1");
  HttpAnswerParse p = feed (&a, data + 1, size - 1, step);
  if (p == HTTP_ANSWER_DONE) {
    g_assert (a.code >= 200 && a.code <= 999);
    GBytes *body = http_answer_body (&a);
    g_assert (g_bytes_get_size (body) <= size);
    g_bytes_unref (body);
  } else {
    g_assert (p == HTTP_ANSWER_BAD && a.error != NULL);
  }
  http_answer_clear (&a);
  return 0;
}
