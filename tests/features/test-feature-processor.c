/* sedp tests — the feature_processor stage in running pipelines: hash (idlist, int64, broadcast
 * user columns), cross, bucketize, log1p, standardize and filter, each checked against values
 * computed here (sedp_signature called directly, buckets by hand); request scope (user features,
 * a request filter that drops the request) and item scope; the key given as hex or read from a
 * cube folder; a missing column failing only the requests that lack it; malformed specs refused
 * at create with the option and the text named. */
#include "cube-test.h"
#include "runtime-helpers.h"

#include <math.h>

#define HEX_KEY "00112233445566778899aabbccddeeff" /* test_hash_key */

static guint64
sig (guint32 slot, guint64 id)
{
  return sedp_signature (test_hash_key, slot, id);
}

static guint64
cross_sig (guint32 slot, guint64 a, guint64 b)
{
  return sig (slot, sig (slot, a) ^ b);
}

/* ---- requests ---- */

static guint
n_items_of (guint seq)
{
  return 1 + (seq * 5) % 9;
}

static void
user_tags (guint seq, guint64 *out)
{
  out[0] = seq;
  out[1] = seq * 31 + 7;
}

/* The user's behaviour sequence: seq % 6 ids, oldest first. */
static guint
hist (guint seq, guint64 *out)
{
  guint n = seq % 6;
  for (guint k = 0; k < n; k++)
    out[k] = (guint64) seq * 1000 + k + 1;
  return n;
}

static guint
cats (guint seq, guint i, guint64 *out)
{
  guint n = (seq + i) % 4; /* 0 … 3 ids */
  for (guint k = 0; k < n; k++)
    out[k] = seq * 100 + i * 10 + k;
  return n;
}

static float
price (guint seq, guint i)
{
  return (float) ((seq * 7 + i * 13) % 60) - 2.5f; /* -2.5 … 56.5 */
}

static gint64
clicks (guint seq, guint i)
{
  return (gint64) ((seq + i * 3) % 17);
}

/* Request "r<seq>": user_id, user_tags (idlist), age (float32); items with item_id, cat
 * (idlist), price (float32) and, unless @no_clicks, clicks (int64). */
static SedpRequest *
make_req (guint seq, gboolean no_clicks)
{
  char id[16];
  g_snprintf (id, sizeof id, "r%u", seq);
  SedpRequest *r = sedp_request_new (id, 0);
  SedpFrame *user = sedp_frame_new (1);
  sedp_column_int64_data (sedp_frame_add_column (user, "user_id", SEDP_COLUMN_INT64, 1))[0] = seq;
  sedp_column_float32_data (sedp_frame_add_column (user, "age", SEDP_COLUMN_FLOAT32, 1))[0] =
    (float) seq * 4.0f;
  guint32 *uoff = NULL;
  guint64 *uv = sedp_column_idlist_data (sedp_frame_add_idlist (user, "user_tags", 2), &uoff);
  uoff[0] = 0;
  uoff[1] = 2;
  user_tags (seq, uv);
  guint64 hv[8];
  guint nh = hist (seq, hv);
  guint64 *hd = sedp_column_idlist_data (sedp_frame_add_idlist (user, "hist", nh), &uoff);
  uoff[0] = 0;
  uoff[1] = nh;
  memcpy (hd, hv, nh * sizeof (guint64));
  sedp_column_set_string (sedp_frame_add_column (user, "uname", SEDP_COLUMN_STRING, 1), 0, "u");
  guint n = n_items_of (seq), total = 0;
  guint64 tmp[4];
  for (guint i = 0; i < n; i++)
    total += cats (seq, i, tmp);
  SedpFrame *items = sedp_frame_new (n);
  gint64 *iid =
    sedp_column_int64_data (sedp_frame_add_column (items, "item_id", SEDP_COLUMN_INT64, 1));
  float *pr =
    sedp_column_float32_data (sedp_frame_add_column (items, "price", SEDP_COLUMN_FLOAT32, 1));
  gint64 *cl = no_clicks ? NULL
                         : sedp_column_int64_data (
                             sedp_frame_add_column (items, "clicks", SEDP_COLUMN_INT64, 1));
  guint32 *off = NULL;
  guint64 *cv = sedp_column_idlist_data (sedp_frame_add_idlist (items, "cat", total), &off);
  guint pos = 0;
  for (guint i = 0; i < n; i++) {
    iid[i] = (gint64) seq * 1000 + i;
    pr[i] = price (seq, i);
    if (cl)
      cl[i] = clicks (seq, i);
    off[i] = pos;
    pos += cats (seq, i, cv + pos);
  }
  off[n] = pos;
  sedp_request_set_frames (r, user, items);
  return r;
}

static guint
seq_of (SedpRequest *r)
{
  return (guint) g_ascii_strtoull (sedp_request_get_id (r) + 1, NULL, 10);
}

/* Submits r0 … r{n-1} (those with seq % 4 == 3 without clicks when @gaps); waits for them. */
static guint
run (SedpPipeline *p, Collector *c, guint n, gboolean gaps)
{
  for (guint s = 0; s < n; s++) {
    SedpRequest *r = make_req (s, gaps && s % 4 == 3);
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  return collector_wait (c, n, 60);
}

/* src (request) → user (feature_processor, request scope) → items (feature_processor). */
static char *
pipeline (const char *user_options, const char *item_options)
{
  return g_strdup_printf ("[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
                          "[stage src]\nplugin = passthrough\nscope = request\n"
                          "[stage user]\nplugin = feature_processor\nafter = src\nscope = request\n"
                          "batch = 4\nbatch_timeout_us = 1000\n%s"
                          "[stage items]\nplugin = feature_processor\nafter = user\n"
                          "batch = 8\nbatch_timeout_us = 1000\nparallelism = 2\n%s",
                          user_options, item_options);
}

/* ---- column access ---- */

static const SedpColumn *
col (const SedpFrame *f, const char *name, SedpColumnType type)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != type) {
    fprintf (stderr, "\n  column '%s' missing or not %s", name, sedp_column_type_to_string (type));
    return NULL;
  }
  return c;
}

static guint
rr (const SedpColumn *c, guint row)
{
  return sedp_column_is_broadcast (c) ? 0 : row;
}

static gboolean
idlist_is (const SedpFrame *f, const char *name, guint row, const guint64 *want, guint n)
{
  const SedpColumn *c = col (f, name, SEDP_COLUMN_IDLIST);
  if (c == NULL)
    return FALSE;
  guint got_n = 0;
  const guint64 *got = sedp_column_get_ids (c, rr (c, row), &got_n);
  if (got_n != n)
    return FALSE;
  for (guint k = 0; k < n; k++)
    if (got[k] != want[k])
      return FALSE;
  return TRUE;
}

static gboolean
u64_is (const SedpFrame *f, const char *name, guint row, guint64 want)
{
  const SedpColumn *c = col (f, name, SEDP_COLUMN_UINT64);
  return c && sedp_column_get_width (c) == 1 && sedp_column_get_uint64 (c)[rr (c, row)] == want;
}

static gboolean
i64_is (const SedpFrame *f, const char *name, guint row, gint64 want)
{
  const SedpColumn *c = col (f, name, SEDP_COLUMN_INT64);
  return c && sedp_column_get_int64 (c)[rr (c, row)] == want;
}

static gboolean
f32_is (const SedpFrame *f, const char *name, guint row, double want)
{
  const SedpColumn *c = col (f, name, SEDP_COLUMN_FLOAT32);
  return c &&
         fabs (sedp_column_get_float32 (c)[rr (c, row)] - want) <= 1e-5 * MAX (fabs (want), 1);
}

/* The user's sequence cut to 3 (the last 3, or the first 3) and padded with @pad, as int64,
 * and its length column. */
static gboolean
seq_is (const SedpFrame *f, const char *name, const char *len_name, guint row, guint seq,
        gboolean first, gint64 pad)
{
  const SedpColumn *c = col (f, name, SEDP_COLUMN_INT64);
  guint64 hv[8];
  guint n = hist (seq, hv), kept = MIN (n, 3), skip = first ? 0 : n - kept;
  if (c == NULL || sedp_column_get_width (c) != 3 || !i64_is (f, len_name, row, kept))
    return FALSE;
  const gint64 *got = sedp_column_get_int64 (c) + (gsize) rr (c, row) * 3;
  for (guint k = 0; k < 3; k++)
    if (got[k] != (k < kept ? (gint64) hv[skip + k] : pad))
      return FALSE;
  return TRUE;
}

/* hash of the cut sequence: every element, the padding 0 included, hashed in slot 5. */
static gboolean
hashed_seq_is (const SedpFrame *f, guint row, guint seq)
{
  const SedpColumn *c = col (f, "hseq_sig", SEDP_COLUMN_UINT64);
  guint64 hv[8];
  guint n = hist (seq, hv), kept = MIN (n, 3);
  if (c == NULL || sedp_column_get_width (c) != 3)
    return FALSE;
  const guint64 *got = sedp_column_get_uint64 (c) + (gsize) rr (c, row) * 3;
  for (guint k = 0; k < 3; k++)
    if (got[k] != sig (5, k < kept ? hv[n - kept + k] : 0))
      return FALSE;
  return TRUE;
}

/* Item scope: the item's categories cut to 2 and padded with 7; its price as a float sequence of
 * 2 padded with -1. */
static gboolean
item_seq_is (const SedpFrame *f, guint row, guint seq, guint i)
{
  const SedpColumn *c = col (f, "cseq", SEDP_COLUMN_INT64);
  const SedpColumn *p = col (f, "pseq", SEDP_COLUMN_FLOAT32);
  guint64 cv[4];
  guint n = cats (seq, i, cv), kept = MIN (n, 2);
  if (c == NULL || p == NULL || !i64_is (f, "cseq_len", row, kept) || !i64_is (f, "pseq_len", row, 1))
    return FALSE;
  const gint64 *got = sedp_column_get_int64 (c) + (gsize) row * 2;
  const float *pg = sedp_column_get_float32 (p) + (gsize) row * 2;
  for (guint k = 0; k < 2; k++)
    if (got[k] != (k < kept ? (gint64) cv[n - kept + k] : 7))
      return FALSE;
  return pg[0] == price (seq, i) && pg[1] == -1.0f;
}

/* Bucket of @v by hand: values < 10 → 0, < 20 → 1, < 50 → 2, else 3. */
static gint64
bucket (double v)
{
  return v < 10 ? 0 : v < 20 ? 1 : v < 50 ? 2 : 3;
}

#define CHECK(cond)                                                                               \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      fprintf (stderr, "\n  r%u item %u: %s", seq, i, #cond);                                     \
      bad++;                                                                                      \
    }                                                                                             \
  } while (0)

static const char *user_opts = "sequence = hseq=hist:3, hfirst=hist:3:-1:first\n"
                               "hash = uid_sig=user_id@0, tags_sig=user_tags@4, hseq_sig=hseq@5\n"
                               "bucketize = age_b=age:10:20:50\n"
                               "standardize = age_z=age:20:8\n"
                               "hash_key = " HEX_KEY "\n";

static const char *item_opts = "sequence = cseq=cat:2:7, pseq=price:2:-1\n"
                               "hash = item_sig=item_id@1, cat_sig=cat@2, utag_sig=user_tags@3\n"
                               "cross = ux=user_id*cat@9, tx=user_tags*item_id@10\n"
                               "bucketize = price_b=price:10:20:50\n"
                               "log1p = price, clicks_l=clicks\n"
                               "standardize = price_z=price:20:5\n"
                               "filter = price>=5\n";

/* Checks every transform of every item of the completed requests; returns the failures. */
static guint
check_all (Collector *c, gboolean gaps)
{
  guint bad = 0;
  for (guint k = 0; k < c->done->len; k++) {
    SedpRequest *r = c->done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint seq = seq_of (r), i = 0;
    if (gaps && seq % 4 == 3) {
      CHECK (sedp_result_get_status (res) == SEDP_STATUS_FAILED);
      for (i = 0; i < sedp_result_get_n_items (res); i++) {
        const char *msg = sedp_result_get_item_message (res, i);
        CHECK (sedp_result_get_item_status (res, i) == SEDP_ITEM_FAILED);
        CHECK (msg && strstr (msg, "column 'clicks' is missing"));
      }
      continue;
    }
    CHECK (sedp_result_get_status (res) == SEDP_STATUS_OK);
    CHECK (sedp_result_get_n_items (res) == n_items_of (seq));
    guint64 tags[2];
    user_tags (seq, tags);
    for (i = 0; i < sedp_result_get_n_items (res); i++) {
      float p = price (seq, i);
      if (p < 5) {
        CHECK (sedp_result_get_item_status (res, i) == SEDP_ITEM_DROPPED);
        continue;
      }
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      CHECK (f != NULL);
      if (f == NULL)
        continue;
      /* request scope, broadcast into the item frames */
      CHECK (u64_is (f, "uid_sig", row, sig (0, seq)));
      guint64 tsig[2] = {sig (4, tags[0]), sig (4, tags[1])};
      CHECK (idlist_is (f, "tags_sig", row, tsig, 2));
      CHECK (i64_is (f, "age_b", row, bucket (seq * 4.0)));
      CHECK (f32_is (f, "age_z", row, (seq * 4.0 - 20) / 8));
      CHECK (seq_is (f, "hseq", "hseq_len", row, seq, FALSE, 0));
      CHECK (seq_is (f, "hfirst", "hfirst_len", row, seq, TRUE, -1));
      CHECK (hashed_seq_is (f, row, seq));
      CHECK (item_seq_is (f, row, seq, i));
      /* item scope */
      CHECK (u64_is (f, "item_sig", row, sig (1, (guint64) seq * 1000 + i)));
      guint64 cv[4], want[8];
      guint nc = cats (seq, i, cv);
      for (guint j = 0; j < nc; j++)
        want[j] = sig (2, cv[j]);
      CHECK (idlist_is (f, "cat_sig", row, want, nc));
      guint64 usig[2] = {sig (3, tags[0]), sig (3, tags[1])};
      CHECK (idlist_is (f, "utag_sig", row, usig, 2));
      for (guint j = 0; j < nc; j++)
        want[j] = cross_sig (9, seq, cv[j]);
      CHECK (idlist_is (f, "ux", row, want, nc));
      for (guint j = 0; j < 2; j++)
        want[j] = cross_sig (10, tags[j], (guint64) seq * 1000 + i);
      CHECK (idlist_is (f, "tx", row, want, 2));
      CHECK (i64_is (f, "price_b", row, bucket (p)));
      CHECK (f32_is (f, "price_log1p", row, log1p (p)));
      CHECK (f32_is (f, "clicks_l", row, log1p ((double) clicks (seq, i))));
      CHECK (f32_is (f, "price_z", row, (p - 20.0) / 5.0));
    }
  }
  return bad;
}

static guint64
filtered (SedpPipeline *p)
{
  return sedp_counter_get (sedp_metrics_counter (sedp_pipeline_get_metrics (p), "items",
                                                 "feature_rows_filtered_total", NULL));
}

static void
test_transforms (void)
{
  g_autofree char *items_hex = g_strconcat (item_opts, "hash_key = " HEX_KEY "\n", NULL);
  g_autofree char *text = pipeline (user_opts, items_hex);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 24;
  CU_ASSERT_EQUAL (run (p, &c, n, FALSE), n);
  CU_ASSERT_EQUAL (check_all (&c, FALSE), 0);
  CU_ASSERT (filtered (p) > 0); /* some items were filtered out */
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A missing column fails the requests that lack it, naming it; the others pass. */
static void
test_missing_column (void)
{
  g_autofree char *items_hex = g_strconcat (item_opts, "hash_key = " HEX_KEY "\n", NULL);
  g_autofree char *text = pipeline (user_opts, items_hex);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 16;
  CU_ASSERT_EQUAL (run (p, &c, n, TRUE), n);
  CU_ASSERT_EQUAL (check_all (&c, TRUE), 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* The key read from a cube folder gives the same signatures as sedp_signature with its key. */
static void
test_cube_key (void)
{
  g_autofree char *dir = tpath ("fp-cube");
  guint64 keys[3] = {sig (0, 1), sig (0, 2), sig (1, 3)};
  build_cube (dir, keys, 3, 2, 0);
  g_autofree char *uo = g_strdup_printf ("sequence = hseq=hist:3, hfirst=hist:3:-1:first\n"
                                         "hash = uid_sig=user_id@0, tags_sig=user_tags@4, "
                                         "hseq_sig=hseq@5\n"
                                         "bucketize = age_b=age:10:20:50\n"
                                         "standardize = age_z=age:20:8\ncube = %s\n",
                                         dir);
  g_autofree char *io = g_strdup_printf ("%scube = %s\n", item_opts, dir);
  g_autofree char *text = pipeline (uo, io);
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (run (p, &c, 8, FALSE), 8);
  CU_ASSERT_EQUAL (check_all (&c, FALSE), 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A request-scope filter drops the whole request: its items are reported as dropped. */
static void
test_request_filter (void)
{
  g_autofree char *text = pipeline ("filter = user_id>=3\n", "log1p = price\n");
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 8;
  CU_ASSERT_EQUAL (run (p, &c, n, FALSE), n);
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[k]);
    guint seq = seq_of (c.done->pdata[k]);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      SedpItemStatus st = sedp_result_get_item_status (res, i);
      CHECK (seq < 3 ? st == SEDP_ITEM_DROPPED : st == SEDP_ITEM_SCORED);
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* A sequence of the wrong element type fails the requests, naming the transform and the column
 * (the request's feature); the pipeline goes on. */
static void
test_sequence_wrong_type (void)
{
  g_autofree char *text = pipeline ("sequence = s=uname:3\n", "log1p = price\n");
  SedpPipeline *p = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 4;
  CU_ASSERT_EQUAL (run (p, &c, n, FALSE), n);
  guint bad = 0, i = 0;
  for (guint k = 0; k < c.done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[k]);
    guint seq = seq_of (c.done->pdata[k]);
    CHECK (sedp_result_get_status (res) == SEDP_STATUS_FAILED);
    const char *msg = sedp_result_get_message (res); /* failed at request scope: the request's */
    CHECK (msg && strstr (msg, "sequence: column 'uname' is string (expected an idlist, int64, "
                               "uint64 or float32 column)"));
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_pipeline_free (p);
  collector_clear (&c);
}

/* ---- configuration errors ---- */

static void
refused (const char *item_options, const char *needle)
{
  g_autofree char *text = pipeline ("log1p = age\n", item_options);
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, runtime_registry (), &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p && sedp_pipeline_start (p, &error)) {
    fprintf (stderr, "\n  started with: %s", item_options);
    CU_FAIL ("the pipeline started");
  }
  sedp_pipeline_free (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  if (strstr (error->message, needle) == NULL)
    fprintf (stderr, "\n  '%s' lacks '%s'", error->message, needle);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, needle));
}

#define KEY "hash_key = " HEX_KEY "\n"

static void
test_malformed (void)
{
  refused ("hash = item_sig=item_id\n" KEY, "hash: 'item_sig=item_id': expected OUT=IN@SLOT");
  refused ("hash = item_id@1\n" KEY, "hash: 'item_id@1'");
  refused ("hash = s=item_id@x\n" KEY, "hash: 's=item_id@x': the slot");
  refused ("hash = s=item_id@99999999999\n" KEY, "hash: 's=item_id@99999999999'");
  refused ("hash = s=item_id@1\n", "need the signature key");
  refused ("hash = s=item_id@1\nhash_key = 0011\n", "hash_key: expected 32 hex digits, got '0011'");
  refused ("hash = s=item_id@1\n" KEY "cube = /nonexistent/fp-cube\n", "one of hash_key and cube");
  refused ("hash = s=item_id@1\ncube = /nonexistent/fp-cube\n", "nonexistent/fp-cube");
  refused ("hash = item_id=item_id@1\n" KEY, "a new column");
  refused ("hash = bad name=item_id@1\n" KEY, "not a column name");
  refused ("cross = x=a@1\n" KEY, "cross: 'x=a@1': expected OUT=A*B@SLOT");
  refused ("cross = x=a*@1\n" KEY, "cross: 'x=a*@1'");
  refused ("bucketize = b=price\n", "bucketize: 'b=price': expected OUT=IN:b1:b2");
  refused ("bucketize = b=price:10:x\n", "bucketize: 'b=price:10:x': boundary 'x'");
  refused ("bucketize = b=price:10:5\n", "strictly ascending");
  refused ("bucketize = price:10:20\n", "bucketize: 'price:10:20'");
  refused ("log1p = a=\n", "log1p: 'a='");
  refused ("standardize = z=price:1\n", "standardize: 'z=price:1': expected OUT=IN:MEAN:STD");
  refused ("standardize = z=price:1:0\n", "the std '0' must be a number > 0");
  refused ("standardize = z=price:m:1\n", "the mean 'm'");
  refused ("filter = price\n", "filter: 'price': expected IN OP VALUE");
  refused ("filter = price>=abc\n", "filter: 'price>=abc': 'abc' is not a number");
  refused ("filter = >=3\n", "filter: '>=3'");
  refused ("filter = price=>3\n", "filter: 'price=>3'");
  refused (KEY, "no transform");
  refused ("sequence = s=cat\n", "sequence: 's=cat': expected OUT=IN:MAX_LEN");
  refused ("sequence = s=cat:0\n", "MAX_LEN '0' must be a number from 1 to 4096");
  refused ("sequence = s=cat:5000\n", "MAX_LEN '5000'");
  refused ("sequence = s=cat:3:x\n", "'x' is neither an integer padding nor 'first'");
  refused ("sequence = s=cat:3:1.5\n", "'1.5' is neither");
  refused ("sequence = cat=cat:3\n", "a new column");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return CU_get_error ();
  CU_pSuite suite = CU_add_suite ("features", cube_suite_init, cube_suite_clean);
  if (suite == NULL || CU_add_test (suite, "transforms", test_transforms) == NULL ||
      CU_add_test (suite, "missing column", test_missing_column) == NULL ||
      CU_add_test (suite, "key from a cube", test_cube_key) == NULL ||
      CU_add_test (suite, "request filter", test_request_filter) == NULL ||
      CU_add_test (suite, "sequence of the wrong type", test_sequence_wrong_type) == NULL ||
      CU_add_test (suite, "malformed specs", test_malformed) == NULL) {
    CU_cleanup_registry ();
    return CU_get_error ();
  }
  int rc = sedp_test_run ();
  g_clear_pointer (&test_registry, sedp_registry_free);
  return rc;
}
