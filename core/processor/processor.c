/* sedp — libsedp_processor.so: DeepRec Processor's C ABI (sedp-processor.h, docs/compat.md). The
 * only symbols the library exports are the five functions here (processor.map). */
#include "sedp-processor.h"

#include "processor-private.h"
#include "../io/wire.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROCESSOR_API __attribute__ ((visibility ("default")))

/* A malloc()ed copy of @data (free() releases it), NULL-safe for 0 bytes. */
static void *
copy_out (const void *data, gsize size)
{
  void *out = malloc (size + 1);
  if (out == NULL)
    return NULL;
  memcpy (out, data, size);
  ((char *) out)[size] = '\0';
  return out;
}

static void
set_text (const char *text, void **output_data, int *output_size)
{
  gsize len = strlen (text);
  *output_data = copy_out (text, len);
  *output_size = *output_data ? (int) MIN (len, (gsize) INT_MAX) : 0;
}

/* 500 with "[sedp] Processor WHAT failed: MESSAGE" as the output. */
static int
answer_error (const char *what, const char *message, void **output_data, int *output_size)
{
  g_autofree char *text = g_strdup_printf ("[sedp] Processor %s failed: %s", what, message);
  set_text (text, output_data, output_size);
  return 500;
}

static int
answer_bytes (GBytes *bytes, void **output_data, int *output_size)
{
  gsize size;
  const void *data = g_bytes_get_data (bytes, &size);
  if (size > INT_MAX)
    return answer_error ("predict", "the answer is over 2 GiB", output_data, output_size);
  *output_data = copy_out (data, size);
  if (*output_data == NULL)
    return answer_error ("predict", "out of memory", output_data, output_size);
  *output_size = (int) size;
  return 200;
}

PROCESSOR_API void *
initialize (const char *model_entry, const char *model_config, int *state)
{
  ProcessorConfig config;
  g_autoptr (GError) error = NULL;
  Processor *p = NULL;
  if (model_entry == NULL || *model_entry == '\0')
    g_set_error (&error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                 "model_entry is empty: give an ONNX model (*.onnx) or a pipeline file");
  else if (processor_config_parse (model_config, &config, &error)) {
    p = processor_model_new (model_entry, &config, &error);
    if (p && config.warmup_file_name) {
      g_autofree char *dir = g_path_get_dirname (p->entry);
      g_autofree char *path = g_canonicalize_filename (config.warmup_file_name, dir);
      if (!processor_warmup (p, path, &error))
        g_clear_pointer (&p, processor_model_free);
    }
    processor_config_clear (&config);
  }
  if (p == NULL)
    fprintf (stderr, "[sedp] Processor initialize failed: %s\n", error->message);
  if (state)
    *state = p ? 0 : -1;
  return p;
}

PROCESSOR_API int
process (void *model_buf, const void *input_data, int input_size, void **output_data,
         int *output_size)
{
  Processor *p = model_buf;
  if (p == NULL)
    return answer_error ("predict", "no model (initialize() failed or was not called)",
                         output_data, output_size);
  if (input_size == 0) {
    set_text (p->debug, output_data, output_size);
    return 200;
  }
  if (input_size < 0 || input_data == NULL)
    return answer_error ("predict", "input_size is negative or input_data is NULL", output_data,
                         output_size);
  const guint8 *bodies[1] = {input_data};
  gsize sizes[1] = {(gsize) input_size};
  GBytes *answer = NULL;
  g_autoptr (GError) error = NULL;
  if (!processor_run (p, bodies, sizes, 1, &answer, &error))
    return answer_error ("predict", error->message, output_data, output_size);
  int code = answer_bytes (answer, output_data, output_size);
  g_bytes_unref (answer);
  return code;
}

/* Sets every answer (the entries are NULL), or frees them all and answers the error in entry
 * 0. */
static int
answer_batch (GBytes **answers, guint n, void *output_data[], int *output_size)
{
  for (guint i = 0; i < n; i++) {
    if (answer_bytes (answers[i], &output_data[i], &output_size[i]) == 200)
      continue;
    void *message = output_data[i];
    int size = output_size[i];
    for (guint j = 0; j < i; j++) {
      free (output_data[j]);
      output_data[j] = NULL;
      output_size[j] = 0;
    }
    output_data[i] = NULL;
    output_size[i] = 0;
    output_data[0] = message;
    output_size[0] = size;
    return 500;
  }
  return 200;
}

PROCESSOR_API int
batch_process (void *model_buf, const void *input_data[], int *input_size, void *output_data[],
               int *output_size)
{
  Processor *p = model_buf;
  if (p == NULL)
    return answer_error ("predict", "no model (initialize() failed or was not called)",
                         output_data, output_size);
  if (input_size == NULL) {
    set_text (p->debug, &output_data[0], &output_size[0]);
    return 200;
  }
  guint n = 0;
  while (input_data && input_data[n] && n < G_MAXINT)
    n++;
  if (n == 0)
    return answer_error ("predict", "no request: input_data[0] is NULL (the batch ends at the "
                         "first NULL entry)", output_data, output_size);
  for (guint i = 0; i < n; i++) {
    output_data[i] = NULL;
    output_size[i] = 0;
  }
  for (guint i = 0; i < n; i++)
    if (input_size[i] <= 0) {
      g_autofree char *m = g_strdup_printf ("request %u of %u: input_size is %d, not a request's "
                                            "size", i + 1, n, input_size[i]);
      return answer_error ("predict", m, output_data, output_size);
    }
  gsize *sizes = g_new (gsize, n);
  for (guint i = 0; i < n; i++)
    sizes[i] = (gsize) input_size[i];
  GBytes **answers = g_new0 (GBytes *, n);
  g_autoptr (GError) error = NULL;
  int code;
  if (processor_run (p, (const guint8 *const *) input_data, sizes, n, answers, &error))
    code = answer_batch (answers, n, output_data, output_size);
  else
    code = answer_error ("predict", error->message, output_data, output_size);
  for (guint i = 0; i < n; i++)
    if (answers[i])
      g_bytes_unref (answers[i]);
  g_free (answers);
  g_free (sizes);
  return code;
}

/* tensorflow.eas.ServingModelInfo: `string model_path = 1`. */
PROCESSOR_API int
get_serving_model_info (void *model_buf, void **output_data, int *output_size)
{
  Processor *p = model_buf;
  if (p == NULL)
    return answer_error ("get serving model info",
                         "no model (initialize() failed or was not called)", output_data,
                         output_size);
  g_autoptr (GByteArray) info = g_byte_array_new ();
  wire_put_string (info, 1, p->model_path);
  g_autoptr (GBytes) bytes = g_byte_array_free_to_bytes (g_steal_pointer (&info));
  return answer_bytes (bytes, output_data, output_size);
}

PROCESSOR_API void
sedp_processor_release (void *model_buf)
{
  processor_model_free (model_buf);
}
