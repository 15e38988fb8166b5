/* sedp compat tests — DeepRec Processor's protobuf (core/io/deeprec-pb.c). protoc-c's codec of
 * tensorflow.eas (deeprec_predict.proto, and deeprec_unpacked.proto for unpacked repeated
 * scalars) is the independent encoder of requests and decoder of answers. */
#include "compat-test.h"

#include "deeprec_predict.pb-c.h"
#include "deeprec_unpacked.pb-c.h"

/* tensorflow.eas.ArrayDataType, as plain numbers */
#define DT_FLOAT 1
#define DT_DOUBLE 2
#define DT_INT32 3
#define DT_UINT8 4
#define DT_INT16 5
#define DT_INT8 6
#define DT_STRING 7
#define DT_COMPLEX64 8
#define DT_INT64 9
#define DT_BOOL 10

/* One ArrayProto to encode: its values in the field of its dtype. */
typedef struct {
  const char *name;
  int dtype;
  const gint64 *dims;
  guint n_dims;
  guint n; /* values */
  const float *f;
  const double *d;
  const gint32 *i32;
  const gint64 *i64;
  const protobuf_c_boolean *b;
  const char *const *s;
} Arr;

#define DIMS(...) (const gint64[]) {__VA_ARGS__}, G_N_ELEMENTS (((gint64[]) {__VA_ARGS__}))

/* The same encoder for both generated codecs (T: type prefix, t: function prefix, U: macros). */
#define DEFINE_ENCODER(fn, T, t, U)                                                              \
  static GBytes *fn (const char *sig, const Arr *arrs, guint n, const char *const *filter)       \
  {                                                                                              \
    T##PredictRequest m = U##PREDICT_REQUEST__INIT;                                              \
    T##PredictRequest__InputsEntry entries[8], *ep[8];                                           \
    T##ArrayProto protos[8];                                                                     \
    T##ArrayShape shapes[8];                                                                     \
    ProtobufCBinaryData bins[8][8];                                                              \
    g_assert (n <= 8);                                                                           \
    m.signature_name = (char *) (sig ? sig : "");                                                \
    for (guint k = 0; k < n; k++) {                                                              \
      const Arr *a = &arrs[k];                                                                   \
      t##predict_request__inputs_entry__init (&entries[k]);                                      \
      t##array_proto__init (&protos[k]);                                                         \
      t##array_shape__init (&shapes[k]);                                                         \
      entries[k].key = (char *) a->name;                                                         \
      entries[k].value = &protos[k];                                                             \
      ep[k] = &entries[k];                                                                       \
      protos[k].dtype = a->dtype;                                                                \
      if (a->dims) {                                                                             \
        shapes[k].n_dim = a->n_dims;                                                             \
        shapes[k].dim = (int64_t *) a->dims;                                                     \
        protos[k].array_shape = &shapes[k];                                                      \
      }                                                                                          \
      if (a->f) { protos[k].n_float_val = a->n; protos[k].float_val = (float *) a->f; }          \
      if (a->d) { protos[k].n_double_val = a->n; protos[k].double_val = (double *) a->d; }       \
      if (a->i32) { protos[k].n_int_val = a->n; protos[k].int_val = (int32_t *) a->i32; }        \
      if (a->i64) { protos[k].n_int64_val = a->n; protos[k].int64_val = (int64_t *) a->i64; }    \
      if (a->b) { protos[k].n_bool_val = a->n; protos[k].bool_val = (protobuf_c_boolean *) a->b; } \
      if (a->s) {                                                                                \
        g_assert (a->n <= 8);                                                                    \
        for (guint v = 0; v < a->n; v++)                                                         \
          bins[k][v] = (ProtobufCBinaryData) {strlen (a->s[v]), (uint8_t *) a->s[v]};            \
        protos[k].n_string_val = a->n;                                                           \
        protos[k].string_val = bins[k];                                                          \
      }                                                                                          \
    }                                                                                            \
    m.n_inputs = n;                                                                              \
    m.inputs = ep;                                                                               \
    m.n_output_filter = filter ? g_strv_length ((char **) filter) : 0;                           \
    m.output_filter = (char **) filter;                                                          \
    gsize len = t##predict_request__get_packed_size (&m);                                        \
    guint8 *buf = g_malloc (MAX (len, 1));                                                       \
    t##predict_request__pack (&m, buf);                                                          \
    return g_bytes_new_take (buf, len);                                                          \
  }

DEFINE_ENCODER (encode_packed, Tensorflow__Eas__, tensorflow__eas__, TENSORFLOW__EAS__)
DEFINE_ENCODER (encode_unpacked, Tensorflow__Eas__Unpacked__, tensorflow__eas__unpacked__,
                TENSORFLOW__EAS__UNPACKED__)

typedef GBytes *(*Encoder) (const char *, const Arr *, guint, const char *const *);

static gboolean
decode (GBytes *b, const SedpModelApiSignature *s, const SedpProtocolLimits *limits,
        SedpModelApiRequest *out, GError **error)
{
  gsize len;
  const guint8 *p = g_bytes_get_data (b, &len);
  return sedp_model_api_decode (SEDP_MODEL_API_DEEPREC, p, len, s, limits, out, error);
}

static void
decode_ok (GBytes *b, const SedpModelApiSignature *s, SedpModelApiRequest *out)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = decode (b, s, NULL, out, &error);
  if (!ok)
    fprintf (stderr, "\n  refused: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  CU_ASSERT_FALSE (out->columnar);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (out->items), out->n_rows);
}

/* @b (freed) refused with @code and a message holding @needle. */
static void
refused_bytes (GBytes *b, const SedpModelApiSignature *s, const SedpProtocolLimits *limits,
               gint code, const char *needle)
{
  SedpModelApiRequest out;
  g_autoptr (GError) error = NULL;
  gboolean ok = decode (b, s, limits, &out, &error);
  CU_ASSERT_FALSE_FATAL (ok);
  CU_ASSERT_PTR_NULL (out.items);
  COMPAT_ASSERT_REFUSED (error, code, needle);
  g_bytes_unref (b);
}

static void
refused (const SedpModelApiSignature *s, const SedpProtocolLimits *limits, const Arr *arrs,
         guint n, const char *const *filter, gint code, const char *needle)
{
  refused_bytes (encode_packed (NULL, arrs, n, filter), s, limits, code, needle);
}

/* ---- requests ---- */

static const float f6[] = {1.5f, -2, 3, 4, 5.25f, 6};
static const double dbl[] = {0.1, -1e30}, huge[] = {1.0, -1e300, 2.0};
static const double whole[] = {3.0, -4.0};
static const gint32 i32[] = {-5, G_MAXINT32}, u8[] = {0, 255}, i16[] = {-32768, 7},
                    i8[] = {-128, 127};
static const gint64 i64[] = {G_MININT64, -1, 0, G_MAXINT64};
static const protobuf_c_boolean bools[] = {1, 0};
static const char *const words[] = {"héllo", "", NULL};

/* Every dtype, into the signature's columns. */
static void
check_every_dtype (Encoder enc)
{
  const char *in[] = {"f:float32[3]", "d", "i32:int64", "u8:int64", "i16", "i8:int64", "b:int64",
                      "s:string", "i64:int64[2]", "dd:int64", NULL};
  const char *out[] = {"f[3]", "s:string", NULL};
  g_autoptr (SedpModelApiSignature) sig = make_signature (in, out, FALSE);
  const Arr arrs[] = {
    {"f", DT_FLOAT, DIMS (2, 3), 6, .f = f6},
    {"d", DT_DOUBLE, DIMS (2), 2, .d = dbl},
    {"i32", DT_INT32, DIMS (2), 2, .i32 = i32},
    {"u8", DT_UINT8, DIMS (2, 1), 2, .i32 = u8},
    {"i16", DT_INT16, DIMS (2), 2, .i32 = i16},
    {"i8", DT_INT8, DIMS (2), 2, .i32 = i8},
    {"b", DT_BOOL, DIMS (2), 2, .b = bools},
    {"s", DT_STRING, DIMS (2), 2, .s = words},
  };
  const Arr more[] = {
    {"i64", DT_INT64, DIMS (2, 2), 4, .i64 = i64},
    {"dd", DT_DOUBLE, DIMS (2), 2, .d = whole},
  };
  Arr all[10];
  memcpy (all, arrs, sizeof arrs);
  memcpy (all + 8, more, sizeof more);
  const char *filter[] = {"s", NULL};
  /* two messages: protoc-c's map holds 8 entries at most here, so the rest come in a second
   * message appended (protobuf concatenation is a merge) */
  g_autoptr (GBytes) a = enc ("serving_default", all, 8, filter);
  g_autoptr (GBytes) b = enc (NULL, all + 8, 2, NULL);
  GByteArray *joined = g_byte_array_new ();
  g_byte_array_append (joined, g_bytes_get_data (a, NULL), (guint) g_bytes_get_size (a));
  g_byte_array_append (joined, g_bytes_get_data (b, NULL), (guint) g_bytes_get_size (b));
  g_autoptr (GBytes) msg = g_byte_array_free_to_bytes (joined);
  SedpModelApiRequest r;
  decode_ok (msg, sig, &r);
  CU_ASSERT_EQUAL (r.n_rows, 2);
  CU_ASSERT_STRING_EQUAL (r.signature_name, "serving_default");
  CU_ASSERT_FATAL (r.output_filter && g_strv_length (r.output_filter) == 1);
  CU_ASSERT_STRING_EQUAL (r.output_filter[0], "s");
  assert_floats (r.items, "f", 3, f6, 6);
  const float d_want[] = {0.1f, -1e30f}, i16_want[] = {-32768, 7};
  assert_floats (r.items, "d", 1, d_want, 2);
  assert_floats (r.items, "i16", 1, i16_want, 2);
  const gint64 i32_want[] = {-5, G_MAXINT32}, u8_want[] = {0, 255}, i8_want[] = {-128, 127},
               b_want[] = {1, 0}, dd_want[] = {3, -4};
  assert_ints (r.items, "i32", 1, i32_want, 2);
  assert_ints (r.items, "u8", 1, u8_want, 2);
  assert_ints (r.items, "i8", 1, i8_want, 2);
  assert_ints (r.items, "b", 1, b_want, 2);
  assert_ints (r.items, "i64", 2, i64, 4);
  assert_ints (r.items, "dd", 1, dd_want, 2);
  assert_strings (r.items, "s", words);
  CU_ASSERT_EQUAL (sedp_frame_get_n_columns (r.items), 10);
  sedp_model_api_request_clear (&r);
}

static void
test_packed (void)
{
  check_every_dtype (encode_packed);
}

static void
test_unpacked (void)
{
  check_every_dtype (encode_unpacked);
}

/* An open signature: FLOAT and DOUBLE → float32, INT* and BOOL → int64, STRING → string, the
 * widths from the shapes; unknown fields are skipped. */
static void
test_open (void)
{
  g_autoptr (SedpModelApiSignature) sig = make_signature (NULL, NULL, TRUE);
  const Arr arrs[] = {
    {"f", DT_FLOAT, DIMS (2, 3), 6, .f = f6},
    {"d", DT_DOUBLE, DIMS (2), 2, .d = whole},
    {"i", DT_INT32, DIMS (2), 2, .i32 = i8},
    {"b", DT_BOOL, DIMS (2, 1), 2, .b = bools},
    {"s", DT_STRING, DIMS (2), 2, .s = words},
    {"l", DT_INT64, DIMS (2, 2), 4, .i64 = i64},
  };
  g_autoptr (GBytes) msg = encode_packed (NULL, arrs, G_N_ELEMENTS (arrs), NULL);
  /* unknown fields at the top: 15 as a varint, then 15 as a fixed32 */
  GByteArray *b = g_byte_array_new ();
  g_byte_array_append (b, g_bytes_get_data (msg, NULL), (guint) g_bytes_get_size (msg));
  static const guint8 unknown[] = {0x78, 0x96, 0x01, 0x7d, 1, 2, 3, 4};
  g_byte_array_append (b, unknown, sizeof unknown);
  g_autoptr (GBytes) with_unknown = g_byte_array_free_to_bytes (b);
  SedpModelApiRequest r;
  decode_ok (with_unknown, sig, &r);
  CU_ASSERT_PTR_NULL (r.signature_name);
  CU_ASSERT_PTR_NULL (r.output_filter);
  assert_floats (r.items, "f", 3, f6, 6);
  const float d_want[] = {3, -4};
  assert_floats (r.items, "d", 1, d_want, 2);
  const gint64 i_want[] = {-128, 127}, b_want[] = {1, 0};
  assert_ints (r.items, "i", 1, i_want, 2);
  assert_ints (r.items, "b", 1, b_want, 2);
  assert_ints (r.items, "l", 2, i64, 4);
  assert_strings (r.items, "s", words);
  sedp_model_api_request_clear (&r);
}

static void
test_refused (void)
{
  const char *in[] = {"f:float32[3]", "s:string", NULL};
  const char *out[] = {"f[3]", "s:string", NULL};
  g_autoptr (SedpModelApiSignature) sig = make_signature (in, out, FALSE);
  const gint INVALID = SEDP_PROTOCOL_ERROR_INVALID, LIMIT = SEDP_PROTOCOL_ERROR_LIMIT;
  const Arr s2 = {"s", DT_STRING, DIMS (2), 2, .s = words};
  struct {
    Arr f;
    const char *needle;
  } bad_f[] = {
    {{"f", DT_FLOAT, DIMS (2, 3), 5, .f = f6}, "inputs.f: 5 values in float_val, but the shape "
                                              "[2, 3] holds 6"},
    {{"f", DT_FLOAT, DIMS (0, 3), 0, .f = f6}, "inputs.f.array_shape: [0, 3] has the dimension "
                                              "0; every dimension must be at least 1 (the first "
                                              "is the batch)"},
    {{"f", DT_FLOAT, DIMS (2, -3), 6, .f = f6}, "inputs.f.array_shape: [2, -3] has the dimension "
                                               "-3"},
    {{"f", DT_FLOAT, NULL, 0, 6, .f = f6}, "inputs.f.array_shape: missing (its first dimension "
                                          "is the batch)"},
    {{"f", DT_FLOAT, DIMS (3, 2), 6, .f = f6}, "inputs.f: the shape [3, 2] makes rows of 2 "
                                              "values, the signature's width for f is 3"},
    {{"f", 0, DIMS (2, 3), 6, .f = f6}, "inputs.f.dtype: 0 is missing (DT_INVALID)"},
    {{"f", DT_COMPLEX64, DIMS (2, 3), 6, .f = f6}, "inputs.f.dtype: 8 is not a type sedp takes"},
    {{"f", DT_STRING, DIMS (2, 3), 2, .s = words}, "inputs.f: 2 values in string_val, but the "
                                                  "shape [2, 3] holds 6"},
    {{"f", DT_STRING, DIMS (2), 2, .s = words}, "inputs.f: a string, but the input f is a "
                                               "float32 array"},
    {{"f", DT_FLOAT, DIMS (1, 3), 3, .f = f6}, "inputs.s: 2 rows, but the batch is 1"},
    {{"f", DT_DOUBLE, DIMS (1, 3), 3, .d = huge}, "-1e+300 is out of the range of the float32 "
                                                 "input f"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (bad_f); k++) {
    Arr arrs[] = {bad_f[k].f, s2};
    refused (sig, NULL, arrs, 2, NULL, INVALID, bad_f[k].needle);
  }
  const Arr f = {"f", DT_FLOAT, DIMS (2, 3), 6, .f = f6};
  Arr only_f[] = {f}, with_unknown[] = {f, s2, {"zz", DT_FLOAT, DIMS (2), 2, .f = f6}},
      twice[] = {f, s2, f}, s_float[] = {f, {"s", DT_FLOAT, DIMS (2), 2, .f = f6}};
  refused (sig, NULL, only_f, 1, NULL, INVALID, "inputs: the input s is missing (the signature "
           "serving_default takes f, s)");
  refused (sig, NULL, with_unknown, 3, NULL, INVALID, "inputs.zz: not an input of the signature "
           "serving_default (its inputs: f, s)");
  refused (sig, NULL, twice, 3, NULL, INVALID, "inputs.f: given twice");
  refused (sig, NULL, s_float, 2, NULL, INVALID, "inputs.s: a number, but the input s is a string "
           "array");
  Arr ok[] = {f, s2};
  const char *filter[] = {"f", "nope", NULL};
  refused (sig, NULL, ok, 2, filter, INVALID, "output_filter: 'nope' is not an output of the "
           "signature serving_default (its outputs: f, s)");
  refused_bytes (encode_packed ("other", ok, 2, NULL), sig, NULL, INVALID,
                 "signature_name: 'other' is not a signature of this model");
  /* limits */
  SedpProtocolLimits batch = {.max_items = 1}, values = {.max_values = 2},
                     strings = {.max_string_bytes = 3};
  refused (sig, &batch, ok, 2, NULL, LIMIT, "inputs.f.array_shape: [2, 3], a batch of more than "
           "the limit of 1 rows (max_items)");
  refused (sig, &values, ok, 2, NULL, LIMIT, "inputs.f.array_shape: [2, 3], rows of more than the "
           "limit of 2 values (max_values)");
  const char *long_words[] = {"abcd", "x", NULL};
  Arr long_s[] = {f, {"s", DT_STRING, DIMS (2), 2, .s = long_words}};
  refused (sig, &strings, long_s, 2, NULL, LIMIT, "inputs.s[0]: a string of 4 bytes, more than "
           "the limit of 3 (max_string_bytes)");
  /* int64: integral doubles only */
  const char *ints[] = {"n:int64", NULL};
  g_autoptr (SedpModelApiSignature) isig = make_signature (ints, NULL, FALSE);
  static const double frac[] = {1, 2.5};
  Arr n_frac[] = {{"n", DT_DOUBLE, DIMS (2), 2, .d = frac}};
  refused (isig, NULL, n_frac, 1, NULL, INVALID, "inputs.n[1]: 2.5 is not a 64-bit integer, and "
           "the input n is an int64 array");
  /* strings with NUL bytes */
  /* written by hand: the test's encoder takes C strings */
  static const guint8 nul_msg[] = {0x12, 0x11, 0x0a, 0x01, 's', 0x12, 0x0c, 0x08, 0x07, 0x12,
                                   0x02, 0x08, 0x01, 0x32, 0x04, 'a', 0x00, 'b', 'c', 0};
  g_autoptr (GBytes) nb = g_bytes_new_static (nul_msg, sizeof nul_msg - 1);
  const char *sonly[] = {"s:string", NULL};
  g_autoptr (SedpModelApiSignature) ssig = make_signature (sonly, NULL, FALSE);
  refused_bytes (g_bytes_ref (nb), ssig, NULL, INVALID, "inputs.s[0]: the value holds a NUL byte");
}

/* Malformed bytes: wrong wire types, truncations, packed runs of part of a value. */
static void
test_malformed (void)
{
  const char *in[] = {"f", NULL};
  g_autoptr (SedpModelApiSignature) sig = make_signature (in, NULL, FALSE);
  const gint INVALID = SEDP_PROTOCOL_ERROR_INVALID;
  static const struct {
    guint8 bytes[24];
    gsize len;
    const char *needle;
  } cases[] = {
    /* signature_name as a varint */
    {{0x08, 0x01}, 2, "signature_name: wire type varint, expected length-delimited"},
    /* inputs {key "f", value {dtype as a length-delimited field}} */
    {{0x12, 0x08, 0x0a, 0x01, 'f', 0x12, 0x03, 0x0a, 0x01, 0x01}, 10,
     "inputs.f: field 1 has wire type length-delimited, expected varint"},
    /* inputs {key "f", value {float_val as a varint}} */
    {{0x12, 0x07, 0x0a, 0x01, 'f', 0x12, 0x02, 0x18, 0x01}, 9,
     "inputs.f: field 3 has wire type varint, expected fixed32"},
    /* an entry's key as a varint */
    {{0x12, 0x02, 0x08, 0x01}, 4, "inputs: an entry's field 1 has wire type varint"},
    /* a packed float run of 3 bytes */
    {{0x12, 0x10, 0x0a, 0x01, 'f', 0x12, 0x0b, 0x08, 0x01, 0x12, 0x02, 0x08, 0x01, 0x1a, 0x03, 0,
      0, 0}, 18, "inputs.f.float_val: a packed run that does not divide into whole values"},
    /* inputs' length past the end */
    {{0x12, 0x20, 0x0a, 0x01, 'f'}, 5, "inputs: truncated"},
    /* a varint of 11 bytes */
    {{0x78, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 12,
     "a malformed field 15"},
    /* field number 0 */
    {{0x00, 0x01}, 2, "a malformed field tag"},
    /* a group (wire type 3) */
    {{0x7b}, 1, "a malformed field 15"},
    /* the empty message */
    {{0}, 0, "inputs: the input f is missing"},
  };
  for (guint k = 0; k < G_N_ELEMENTS (cases); k++)
    refused_bytes (g_bytes_new (cases[k].bytes, cases[k].len), sig, NULL, INVALID,
                   cases[k].needle);
  /* every strict prefix of a valid message (no output_filter, so its last field is an input) */
  const Arr arrs[] = {{"f", DT_FLOAT, DIMS (3), 3, .f = f6}};
  g_autoptr (GBytes) full = encode_unpacked ("serving_default", arrs, 1, NULL);
  gsize len;
  const guint8 *p = g_bytes_get_data (full, &len);
  SedpModelApiRequest r;
  decode_ok (full, sig, &r);
  sedp_model_api_request_clear (&r);
  for (gsize n = 0; n < len; n++) {
    g_autoptr (GError) error = NULL;
    CU_ASSERT_FALSE (sedp_model_api_decode (SEDP_MODEL_API_DEEPREC, p, n, sig, NULL, &r, &error));
    CU_ASSERT (error && g_str_has_prefix (error->message, "invalid request: "));
  }
}

/* ---- answers ---- */

static Tensorflow__Eas__ArrayProto *
response_output (Tensorflow__Eas__PredictResponse *m, const char *name)
{
  for (gsize k = 0; k < m->n_outputs; k++)
    if (strcmp (m->outputs[k]->key, name) == 0)
      return m->outputs[k]->value;
  return NULL;
}

static void
assert_shape (const Tensorflow__Eas__ArrayProto *a, const gint64 *dims, guint n_dims)
{
  CU_ASSERT_PTR_NOT_NULL_FATAL (a->array_shape);
  CU_ASSERT_EQUAL_FATAL (a->array_shape->n_dim, n_dims);
  for (guint k = 0; k < n_dims; k++)
    CU_ASSERT_EQUAL (a->array_shape->dim[k], dims[k]);
}

static Tensorflow__Eas__PredictResponse *
answer (const SedpModelApiSignature *sig, GBytes *request, GError **error)
{
  SedpModelApiRequest r;
  decode_ok (request, sig, &r);
  SedpRequest *done = run_items (passthrough_pipeline (), r.items);
  g_autoptr (GBytes) body = sedp_model_api_encode_result (SEDP_MODEL_API_DEEPREC, &r,
                                                          sedp_request_get_result (done), sig,
                                                          error);
  sedp_request_unref (done);
  sedp_model_api_request_clear (&r);
  if (body == NULL)
    return NULL;
  gsize len;
  const guint8 *p = g_bytes_get_data (body, &len);
  Tensorflow__Eas__PredictResponse *m = tensorflow__eas__predict_response__unpack (NULL, len, p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  return m;
}

static void
test_answer (void)
{
  const char *in[] = {"f:float32[3]", "ids:int64[2]", "s:string", NULL};
  const char *out[] = {"f[3]", "grid=f[1,3]", "ids:int64[2]", "word=s:string", NULL};
  g_autoptr (SedpModelApiSignature) sig = make_signature (in, out, FALSE);
  const Arr arrs[] = {
    {"f", DT_FLOAT, DIMS (2, 3), 6, .f = f6},
    {"ids", DT_INT64, DIMS (2, 2), 4, .i64 = i64},
    {"s", DT_STRING, DIMS (2), 2, .s = words},
  };
  g_autoptr (GBytes) req = encode_packed (NULL, arrs, 3, NULL);
  g_autoptr (GError) error = NULL;
  Tensorflow__Eas__PredictResponse *m = answer (sig, req, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_EQUAL_FATAL (m->n_outputs, 4);
  const Tensorflow__Eas__ArrayProto *f = response_output (m, "f"), *grid = response_output (m, "grid"),
                                    *ids = response_output (m, "ids"),
                                    *word = response_output (m, "word");
  CU_ASSERT_FATAL (f && grid && ids && word);
  CU_ASSERT_EQUAL (f->dtype, DT_FLOAT);
  assert_shape (f, DIMS (2, 3));
  CU_ASSERT_EQUAL_FATAL (f->n_float_val, 6);
  CU_ASSERT (memcmp (f->float_val, f6, sizeof f6) == 0);
  assert_shape (grid, DIMS (2, 1, 3));
  CU_ASSERT (grid->n_float_val == 6 && memcmp (grid->float_val, f6, sizeof f6) == 0);
  CU_ASSERT_EQUAL (ids->dtype, DT_INT64);
  assert_shape (ids, DIMS (2, 2));
  CU_ASSERT (ids->n_int64_val == 4 && memcmp (ids->int64_val, i64, sizeof i64) == 0);
  CU_ASSERT_EQUAL (word->dtype, DT_STRING);
  assert_shape (word, DIMS (2));
  CU_ASSERT_EQUAL_FATAL (word->n_string_val, 2);
  CU_ASSERT (word->string_val[0].len == strlen (words[0]) &&
             memcmp (word->string_val[0].data, words[0], strlen (words[0])) == 0);
  CU_ASSERT_EQUAL (word->string_val[1].len, 0);
  CU_ASSERT (f->n_double_val == 0 && f->n_int64_val == 0 && ids->n_float_val == 0);
  tensorflow__eas__predict_response__free_unpacked (m, NULL);
  /* output_filter: the outputs it names, in the signature's order */
  const char *filter[] = {"word", "f", NULL};
  g_autoptr (GBytes) freq = encode_packed (NULL, arrs, 3, filter);
  m = answer (sig, freq, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_EQUAL_FATAL (m->n_outputs, 2);
  CU_ASSERT_STRING_EQUAL (m->outputs[0]->key, "f");
  CU_ASSERT_STRING_EQUAL (m->outputs[1]->key, "word");
  tensorflow__eas__predict_response__free_unpacked (m, NULL);
  /* an output whose column the pipeline lacks */
  const char *bad_out[] = {"p=score", NULL};
  g_autoptr (SedpModelApiSignature) bad = make_signature (in, bad_out, FALSE);
  CU_ASSERT_PTR_NULL (answer (bad, req, &error));
  SEDP_ASSERT_ERROR (error, G_IO_ERROR, "output p: the pipeline's items have no column score");
}

/* The half_plus_three model through the bare-model pipeline, in DeepRec's protobuf. */
static void
test_answer_model (void)
{
  g_autofree char *path = write_half_plus_three ();
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpModelApiSignature) sig = sedp_model_api_signature_for_model (path, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (sig);
  SedpPipeline *p = bare_model_pipeline (path);
  static const float x[] = {1, 2, 5}, y[] = {3.5f, 4, 5.5f};
  const Arr arrs[] = {{"x", DT_FLOAT, DIMS (3), 3, .f = x}};
  g_autoptr (GBytes) req = encode_packed (NULL, arrs, 1, NULL);
  SedpModelApiRequest r;
  decode_ok (req, sig, &r);
  SedpRequest *done = run_items (p, r.items);
  g_autoptr (GBytes) body = sedp_model_api_encode_result (SEDP_MODEL_API_DEEPREC, &r,
                                                          sedp_request_get_result (done), sig,
                                                          &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (body);
  Tensorflow__Eas__PredictResponse *m = tensorflow__eas__predict_response__unpack (
    NULL, g_bytes_get_size (body), g_bytes_get_data (body, NULL));
  CU_ASSERT_FATAL (m && m->n_outputs == 1);
  const Tensorflow__Eas__ArrayProto *a = response_output (m, "y");
  CU_ASSERT_FATAL (a != NULL);
  assert_shape (a, DIMS (3));
  CU_ASSERT (a->n_float_val == 3 && memcmp (a->float_val, y, sizeof y) == 0);
  tensorflow__eas__predict_response__free_unpacked (m, NULL);
  sedp_request_unref (done);
  sedp_model_api_request_clear (&r);
  sedp_pipeline_free (p);
  g_unlink (path);
}

/* sedp_model_api_encode_deeprec_request read back by protoc-c, then by sedp. */
static void
test_encode_request (void)
{
  g_autoptr (SedpFrame) items = sedp_frame_new (2);
  memcpy (sedp_column_float32_data (sedp_frame_add_column (items, "f", SEDP_COLUMN_FLOAT32, 3)), f6,
          sizeof f6);
  gint64 *n = sedp_column_int64_data (sedp_frame_add_column (items, "n", SEDP_COLUMN_INT64, 1));
  n[0] = G_MININT64;
  n[1] = 42;
  SedpColumn *s = sedp_frame_add_column (items, "s", SEDP_COLUMN_STRING, 1);
  sedp_column_set_string (s, 0, "héllo");
  sedp_column_set_string (s, 1, "");
  sedp_frame_add_column (items, "u", SEDP_COLUMN_UINT64, 1); /* not encoded */
  const char *filter[] = {"a", "b", NULL};
  g_autoptr (GBytes) msg = sedp_model_api_encode_deeprec_request ("sig", items, filter);
  Tensorflow__Eas__PredictRequest *m = tensorflow__eas__predict_request__unpack (
    NULL, g_bytes_get_size (msg), g_bytes_get_data (msg, NULL));
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  CU_ASSERT_STRING_EQUAL (m->signature_name, "sig");
  CU_ASSERT (m->n_output_filter == 2 && strcmp (m->output_filter[0], "a") == 0 &&
             strcmp (m->output_filter[1], "b") == 0);
  CU_ASSERT_EQUAL_FATAL (m->n_inputs, 3);
  const Tensorflow__Eas__ArrayProto *f = m->inputs[0]->value, *ni = m->inputs[1]->value,
                                    *si = m->inputs[2]->value;
  CU_ASSERT_STRING_EQUAL (m->inputs[0]->key, "f");
  CU_ASSERT_EQUAL (f->dtype, DT_FLOAT);
  CU_ASSERT_EQUAL_FATAL (f->array_shape->n_dim, 2);
  CU_ASSERT (f->array_shape->dim[0] == 2 && f->array_shape->dim[1] == 3);
  CU_ASSERT (f->n_float_val == 6 && memcmp (f->float_val, f6, sizeof f6) == 0);
  CU_ASSERT_STRING_EQUAL (m->inputs[1]->key, "n");
  CU_ASSERT (ni->dtype == DT_INT64 && ni->array_shape->n_dim == 1 && ni->array_shape->dim[0] == 2);
  CU_ASSERT (ni->n_int64_val == 2 && ni->int64_val[0] == G_MININT64 && ni->int64_val[1] == 42);
  CU_ASSERT_STRING_EQUAL (m->inputs[2]->key, "s");
  CU_ASSERT (si->dtype == DT_STRING && si->n_string_val == 2 &&
             si->string_val[0].len == strlen ("héllo") && si->string_val[1].len == 0);
  tensorflow__eas__predict_request__free_unpacked (m, NULL);
  /* and back through sedp (open, with the outputs the filter names) */
  const char *out[] = {"a", "b", NULL};
  g_autoptr (SedpModelApiSignature) sig = make_signature (NULL, out, TRUE);
  g_free (sig->name);
  sig->name = g_strdup ("sig");
  SedpModelApiRequest r;
  decode_ok (msg, sig, &r);
  assert_floats (r.items, "f", 3, f6, 6);
  const gint64 n_want[] = {G_MININT64, 42};
  assert_ints (r.items, "n", 1, n_want, 2);
  assert_strings (r.items, "s", words);
  sedp_model_api_request_clear (&r);
}

int
main (void)
{
  CU_initialize_registry ();
  CU_pSuite suite = CU_add_suite ("deeprec", NULL, compat_suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_packed);
  T (test_unpacked);
  T (test_open);
  T (test_refused);
  T (test_malformed);
  T (test_answer);
  T (test_answer_model);
  T (test_encode_request);
  return sedp_test_run ();
}
