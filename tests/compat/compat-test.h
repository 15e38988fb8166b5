/* sedp compat tests — what both model-API suites share: decoding with checks, running decoded
 * items through a real pipeline (data_reader alone: the items pass through unchanged, so an
 * answer's values are the request's), and a tiny ONNX model written with the model builder. */
#pragma once

#include "../runtime/runtime-helpers.h"

#include "io/model-api.h"
#include "nn/model.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <unistd.h>

/* Asserts a decode refused with SEDP_PROTOCOL_ERROR @code, a message starting "invalid request: "
 * and holding every needle. */
#define COMPAT_ASSERT_REFUSED(error, code, ...)                                                  \
  do {                                                                                           \
    SEDP_ASSERT_ERROR (error, SEDP_PROTOCOL_ERROR, __VA_ARGS__);                                 \
    CU_ASSERT_EQUAL ((error)->code, (code));                                                     \
    CU_ASSERT (g_str_has_prefix ((error)->message, "invalid request: "));                       \
  } while (0)

/* The float32 column @name of @f holds exactly @n values @v (rows × width). */
static inline void
assert_floats (const SedpFrame *f, const char *name, guint width, const float *v, guint n)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (c), SEDP_COLUMN_FLOAT32);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_width (c), width);
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_rows (f) * width, n);
  for (guint k = 0; k < n; k++) {
    if (sedp_column_get_float32 (c)[k] != v[k])
      fprintf (stderr, "\n  %s[%u] = %.9g, expected %.9g\n", name, k,
               sedp_column_get_float32 (c)[k], v[k]);
    CU_ASSERT (sedp_column_get_float32 (c)[k] == v[k]);
  }
}

static inline void
assert_ints (const SedpFrame *f, const char *name, guint width, const gint64 *v, guint n)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (c), SEDP_COLUMN_INT64);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_width (c), width);
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_rows (f) * width, n);
  for (guint k = 0; k < n; k++)
    CU_ASSERT_EQUAL (sedp_column_get_int64 (c)[k], v[k]);
}

/* The string column @name holds the NULL-terminated @v, one per row. */
static inline void
assert_strings (const SedpFrame *f, const char *name, const char *const *v)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  CU_ASSERT_PTR_NOT_NULL_FATAL (c);
  CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (c), SEDP_COLUMN_STRING);
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_rows (f), g_strv_length ((char **) v));
  for (guint r = 0; v[r]; r++)
    CU_ASSERT_STRING_EQUAL (sedp_column_get_string (c, r), v[r]);
}

/* A signature from entries (NULL-terminated lists of add_spec entries); fails on errors. */
static inline SedpModelApiSignature *
make_signature (const char *const *inputs, const char *const *outputs, gboolean open)
{
  SedpModelApiSignature *s = sedp_model_api_signature_new ("serving_default");
  s->open_inputs = open;
  for (guint i = 0; inputs && inputs[i]; i++) {
    g_autoptr (GError) error = NULL;
    CU_ASSERT_TRUE_FATAL (sedp_model_api_signature_add_spec (s, FALSE, inputs[i], &error));
  }
  for (guint i = 0; outputs && outputs[i]; i++) {
    g_autoptr (GError) error = NULL;
    CU_ASSERT_TRUE_FATAL (sedp_model_api_signature_add_spec (s, TRUE, outputs[i], &error));
  }
  return s;
}

static SedpPipeline *compat_pipeline;

/* data_reader, then passthrough over the items: requests with items pass through as they are,
 * every item answered from the item sink. */
static inline SedpPipeline *
passthrough_pipeline (void)
{
  if (compat_pipeline == NULL)
    compat_pipeline = start_pipeline ("[pipeline]\nname = compat\n\n"
                                      "[stage reader]\nplugin = data_reader\n\n"
                                      "[stage pass]\nplugin = passthrough\nafter = reader\n");
  return compat_pipeline;
}

static inline int
compat_suite_clean (void)
{
  if (compat_pipeline)
    sedp_pipeline_free (compat_pipeline);
  compat_pipeline = NULL;
  return 0;
}

/* Runs @items (a reference is taken) through @p; returns the completed request. */
static inline SedpRequest *
run_items (SedpPipeline *p, SedpFrame *items)
{
  SedpRequest *r = sedp_request_new ("compat", 0);
  sedp_request_set_timeout (r, 10 * G_USEC_PER_SEC);
  sedp_request_set_frames (r, NULL, sedp_frame_ref (items));
  CU_ASSERT_EQUAL_FATAL (sedp_pipeline_run (p, r), SEDP_STATUS_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sedp_request_get_result (r));
  return r;
}

/* TF Serving's half_plus_three as ONNX: y = 0.5 x + 3, x and y float [batch]; written to a
 * temporary file (the caller removes it) whose path is returned. */
static inline char *
write_half_plus_three (void)
{
  g_autoptr (SedpNnModel) m = sedp_nn_model_new (17, "sedp-tests");
  gint64 batch = -1, scalar_dims[1] = {1};
  const char *params[] = {"batch"};
  sedp_nn_model_add_input (m, "x", SEDP_NN_FLOAT, 1, &batch, params);
  sedp_nn_model_add_output (m, "y", SEDP_NN_FLOAT, 1, &batch, params);
  SedpNnTensor *half = sedp_nn_tensor_new ("half", SEDP_NN_FLOAT, 1, scalar_dims);
  ((float *) half->data)[0] = 0.5f;
  SedpNnTensor *three = sedp_nn_tensor_new ("three", SEDP_NN_FLOAT, 1, scalar_dims);
  ((float *) three->data)[0] = 3.0f;
  sedp_nn_model_add_initializer (m, half);
  sedp_nn_model_add_initializer (m, three);
  const char *mul_in[] = {"x", "half", NULL}, *mul_out[] = {"xh", NULL};
  const char *add_in[] = {"xh", "three", NULL}, *add_out[] = {"y", NULL};
  sedp_nn_model_add_node (m, "Mul", "mul", mul_in, mul_out);
  sedp_nn_model_add_node (m, "Add", "add", add_in, add_out);
  g_autoptr (GError) error = NULL;
  char *path = NULL;
  int fd = g_file_open_tmp ("sedp-compat-XXXXXX.onnx", &path, &error);
  CU_ASSERT_FATAL (fd >= 0);
  close (fd);
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, path, &error));
  return path;
}

/* Starts the bare-model pipeline of @model_path (the implicit pipeline of `--model`). */
static inline SedpPipeline *
bare_model_pipeline (const char *model_path)
{
  g_autofree char *text = sedp_pipeline_text_for_model ("half_plus_three", model_path, 10000);
  return start_pipeline (text);
}
