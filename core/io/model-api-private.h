/* sedp — what the model API's two wire formats share (model-api.c): the input arrays of a
 * request as they are decoded (values row by row, typed and sized by the signature or, for an
 * open signature, by the request), charged to the request's limits and turned into the items
 * frame; the output columns an answer reads; the TF Serving JSON and DeepRec codecs
 * (tfs-json.c, deeprec-pb.c). Not thread-safe per object; every function is reentrant. */
#pragma once

#include "model-api.h"
#include "row-builder.h"

G_BEGIN_DECLS

/* Names where the decoder is, for a message: called only when there is an error to report.
 * Returns an owned string ("instances[3].dense", "inputs.ids"). */
typedef char *(*MaPath) (gconstpointer ctx);

/* One input array of a request being decoded. */
typedef struct {
  char *name;                       /* the array's name in the request */
  gsize name_len;                   /* strlen (name) */
  char *column;                     /* the item column it fills */
  const SedpModelApiTensor *decl;   /* its signature entry; NULL for an open array */
  SedpColumnType type;              /* 0 until an open array's first value */
  guint width;                      /* 0 until the first row when the signature leaves it open */
  guint n_rows;                     /* complete rows */
  guint n_values;                   /* values stored (rows × width, plus the row being read) */
  guint8 *values;                   /* n_values floats or gint64s, by type (NULL before the first) */
  gsize capacity;                   /* bytes allocated at values */
  GPtrArray *strings;               /* char *, for string arrays */
} MaArray;

/* The arrays of one request, declared ones first (in signature order), then open ones. */
typedef struct {
  const SedpModelApiSignature *signature;
  SedpProtocolLimits limits;
  gsize charged;     /* bytes held, against limits.max_decoded_bytes */
  GPtrArray *arrays; /* MaArray * */
  guint n_declared;
  guint guess;       /* the array the next name most likely is: rows name them in order */
} MaInputs;

/* @limits: NULL or fields of 0: the defaults. */
void ma_inputs_init (MaInputs *in, const SedpModelApiSignature *signature,
                     const SedpProtocolLimits *limits);
void ma_inputs_clear (MaInputs *in);

/* Charges @bytes more to the decode; FALSE with @error (LIMIT, naming max_decoded_bytes). */
gboolean ma_inputs_charge (MaInputs *in, gsize bytes, GError **error);

/* The array named by @len bytes at @name: a declared one, an open one already seen, or (open
 * signature) a new open one. NULL with @error when the signature has no such input, or a new
 * one passes max_features, max_string_bytes, holds a NUL or fills a column already filled.
 * @where names the object that holds the name ("inputs", "instances[3]"). */
MaArray *ma_inputs_array (MaInputs *in, MaPath where, gconstpointer ctx, const char *name,
                          gsize len, GError **error);

/* The only declared input of a signature that has exactly one, else NULL. */
MaArray *ma_inputs_single (MaInputs *in);

/* The declared inputs' names, comma-separated, for messages (owned by the caller). */
char *ma_signature_names (const GArray *tensors);

/* Sets the type of @a from its first value (open arrays), or checks that a value of @type may
 * go into it: numbers (FLOAT32 or INT64) into float32 and int64 arrays, strings into string
 * arrays. FALSE with @error: "PATH: a string in the float32 array NAME …". */
gboolean ma_array_accept (MaArray *a, SedpColumnType type, MaPath path, gconstpointer ctx,
                          GError **error);

/* Appends one value (after ma_array_accept()); a non-integral number into an int64 array is
 * refused. @path names the value in messages. Charged to the decode. */
gboolean ma_array_push_double (MaInputs *in, MaArray *a, double v, MaPath path,
                               gconstpointer ctx, GError **error);
gboolean ma_array_push_int (MaInputs *in, MaArray *a, gint64 v, GError **error);
gboolean ma_array_push_string (MaInputs *in, MaArray *a, const char *s, gsize len, MaPath path,
                               gconstpointer ctx, GError **error);

/* Ends a row of @a that holds @n values: sets an open width, or checks it ("PATH: N values, the
 * signature's width is W"); over max_items when it is row max_items + 1. */
gboolean ma_array_end_row (MaInputs *in, MaArray *a, guint n, MaPath path, gconstpointer ctx,
                           GError **error);

/* Every declared array present, every array with @n_rows rows (≥ 1); the items frame into
 * *@items. @what names the arrays in messages ("inputs"). */
gboolean ma_inputs_finish (MaInputs *in, const char *what, guint n_rows, SedpFrame **items,
                           GError **error);

/* A client's signature_name against the signature's ("" or NULL: the default). */
gboolean ma_check_signature_name (const SedpModelApiSignature *signature, const char *name,
                                  GError **error);

/* The outputs an answer carries: every output of @signature, or those named in @filter (each
 * must be one: else FALSE with @error naming it and listing the outputs), in signature order. */
GPtrArray *ma_answer_outputs (const SedpModelApiSignature *signature, const char *const *filter,
                              GError **error);

/* The column of output @out for item @item of @result: the frame's column and the row to read
 * (0 for broadcast columns), its width into *@width. NULL with @error when the item did not
 * complete (its status), the column is missing or of a type or width the output cannot take. */
const SedpColumn *ma_output_column (const SedpResult *result, guint item,
                                    const SedpModelApiTensor *out, guint *row, guint *width,
                                    GError **error);

/* The dimensions after the batch an output is answered with: @out's dims, or [width] (an
 * empty list, a scalar per row, when @width is 1). Returns their number; *@dims borrowed or
 * @one. */
guint ma_output_dims (const SedpModelApiTensor *out, guint width, const gint64 **dims,
                      gint64 *one);

/* The formats. */
gboolean ma_tfs_decode (const guint8 *data, gsize size, MaInputs *in, SedpModelApiRequest *out,
                        GError **error);
GBytes *ma_tfs_encode_result (const SedpModelApiRequest *decoded, const SedpResult *result,
                              const SedpModelApiSignature *signature, GError **error);
GBytes *ma_tfs_encode_error (const char *message);
gboolean ma_deeprec_decode (const guint8 *data, gsize size, MaInputs *in,
                            SedpModelApiRequest *out, GError **error);
GBytes *ma_deeprec_encode_result (const SedpModelApiRequest *decoded, const SedpResult *result,
                                  const SedpModelApiSignature *signature, GError **error);

G_END_DECLS
