/* sedp tests — the cube_accessor stage in running pipelines: pooled columns equal sums and means
 * of the cube's values (missing keys given the default), idlist, int64 and uint64 columns,
 * broadcast user columns, request scope, signatures given directly, disk placement, bad input
 * and configuration errors, unpooled sequence lookups (int64 columns of width L, idlists of L
 * ids per row, a broadcast user sequence at item scope and at request scope, the padding id's
 * row, missing keys, the key counters, and their errors, and a split sequence model served), Redis going down (defaults, degraded lookups, no failure) and a
 * split model served as cube_accessor + model_inference, scoring as the original model. */
#include "cube-test.h"

#include "nn/model.h"
#include "redis-harness.h"
#include "runtime-helpers.h"

#include <math.h>

#define DIM 4
#define IDS 50 /* ids 0 … IDS-1 of slots 0, 1, 2 are in the cube */

static char *cube_dir;

static guint64
sig (guint32 slot, guint64 id)
{
  return sedp_signature (test_hash_key, slot, id);
}

static void
make_cube (void)
{
  if (cube_dir)
    return;
  cube_dir = tpath ("acc-cube");
  guint64 keys[3 * IDS];
  for (guint s = 0; s < 3; s++)
    for (guint i = 0; i < IDS; i++)
      keys[s * IDS + i] = sig (s, i);
  build_cube (cube_dir, keys, 3 * IDS, DIM, 0);
}

/* The expected pooled value of @ids in @slot. */
static void
expect_pool (guint32 slot, const guint64 *ids, guint n, gboolean mean, float dflt, gboolean hashed,
             float *out)
{
  for (guint d = 0; d < DIM; d++) {
    double s = 0;
    for (guint i = 0; i < n; i++) {
      guint64 key = hashed ? sig (slot, ids[i]) : ids[i];
      gboolean present = hashed ? ids[i] < IDS : TRUE;
      s += present ? test_value (key, d) : dflt;
    }
    out[d] = (float) (mean && n > 0 ? s / n : s);
  }
}

static gboolean
close_to (const float *got, const float *want)
{
  for (guint d = 0; d < DIM; d++)
    if (fabsf (got[d] - want[d]) > 1e-4f * MAX (fabsf (want[d]), 1.0f))
      return FALSE;
  return TRUE;
}

static const float *
floats (const SedpFrame *f, const char *name, guint row)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_FLOAT32 ||
      sedp_column_get_width (c) != DIM)
    return NULL;
  return sedp_column_get_float32 (c) + (gsize) (sedp_column_is_broadcast (c) ? 0 : row) * DIM;
}

static guint64
counter (SedpPipeline *p, const char *name)
{
  return sedp_counter_get (sedp_metrics_counter (sedp_pipeline_get_metrics (p), "acc", name, NULL));
}

/* ---- requests ---- */

/* Ids of item @i of request @seq: slot_a gets 0 … 4 ids (some ≥ IDS, missing), slot_b two. */
static guint
ids_a (guint seq, guint i, guint64 *out)
{
  guint n = (seq + i) % 5;
  for (guint k = 0; k < n; k++)
    out[k] = (seq * 13 + i * 7 + k * 11) % (IDS + 10);
  return n;
}

static void
ids_b (guint seq, guint i, guint64 *out)
{
  out[0] = (seq + i) % IDS;
  out[1] = (seq * 3 + i) % (IDS + 5);
}

static void
user_tags (guint seq, guint64 *out)
{
  out[0] = seq % IDS;
  out[1] = (seq + 1) % IDS;
  out[2] = IDS + seq; /* missing */
}

static SedpRequest *
make_req (guint seq, guint n_items)
{
  char id[16];
  g_snprintf (id, sizeof id, "r%u", seq);
  SedpRequest *r = sedp_request_new (id, 0);
  SedpFrame *user = sedp_frame_new (1);
  guint32 *uoff = NULL;
  guint64 *uv = sedp_column_idlist_data (sedp_frame_add_idlist (user, "user_tags", 3), &uoff);
  uoff[0] = 0;
  user_tags (seq, uv);
  SedpFrame *items = sedp_frame_new (n_items);
  guint total = 0;
  guint64 tmp[8];
  for (guint i = 0; i < n_items; i++)
    total += ids_a (seq, i, tmp);
  guint32 *off = NULL;
  guint64 *va = sedp_column_idlist_data (sedp_frame_add_idlist (items, "slot_a", total), &off);
  gint64 *vb = sedp_column_int64_data (sedp_frame_add_column (items, "slot_b", SEDP_COLUMN_INT64, 2));
  guint64 *vs = sedp_column_uint64_data (sedp_frame_add_column (items, "sig", SEDP_COLUMN_UINT64, 2));
  guint pos = 0;
  for (guint i = 0; i < n_items; i++) {
    off[i] = pos;
    pos += ids_a (seq, i, va + pos);
    guint64 b[2];
    ids_b (seq, i, b);
    vb[2 * i] = (gint64) b[0];
    vb[2 * i + 1] = (gint64) b[1];
    vs[2 * i] = sig (1, b[0]);
    vs[2 * i + 1] = b[1] * 1000 + 7; /* not a key */
  }
  sedp_request_set_frames (r, user, items);
  return r;
}

static guint
seq_of (SedpRequest *r)
{
  return (guint) g_ascii_strtoull (sedp_request_get_id (r) + 1, NULL, 10);
}

static guint
run (SedpPipeline *p, Collector *c, guint n, guint (*items) (guint))
{
  for (guint s = 0; s < n; s++) {
    SedpRequest *r = make_req (s, items (s));
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  return collector_wait (c, n, 60);
}

static guint
items_varied (guint seq)
{
  return 1 + (seq * 7) % 11;
}

static char *
pipeline (const char *acc_options)
{
  return g_strdup_printf ("[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
                          "[stage src]\nplugin = passthrough\nscope = request\n"
                          "[stage acc]\nplugin = cube_accessor\nafter = src\nbatch = 8\n"
                          "batch_timeout_us = 2000\nparallelism = 2\n%s",
                          acc_options);
}

/* ---- pooling ---- */

static void
check_items (Collector *c, gboolean with_b, const char *prefix, float dflt)
{
  guint bad = 0;
  for (guint k = 0; k < c->done->len; k++) {
    SedpRequest *r = c->done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint seq = seq_of (r);
    if (sedp_result_get_status (res) != SEDP_STATUS_OK) {
      fprintf (stderr, "\n  r%u: %s", seq, sedp_result_get_message (res));
      bad++;
      continue;
    }
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      guint64 a[8], b[2], u[3];
      guint na = ids_a (seq, i, a);
      ids_b (seq, i, b);
      user_tags (seq, u);
      float wa[DIM], wb[DIM], wu[DIM];
      expect_pool (0, a, na, FALSE, dflt, TRUE, wa);
      expect_pool (1, b, 2, TRUE, dflt, TRUE, wb);
      expect_pool (2, u, 3, FALSE, dflt, TRUE, wu);
      g_autofree char *n0 = g_strconcat (prefix, "0", NULL), *n1 = g_strconcat (prefix, "1", NULL);
      g_autofree char *n2 = g_strconcat (prefix, "2", NULL);
      const float *ga = floats (f, n0, row), *gb = floats (f, n1, row), *gu = floats (f, n2, row);
      gboolean ok = ga && gu && close_to (ga, wa) && close_to (gu, wu) &&
                    (!with_b || (gb && close_to (gb, wb)));
      if (!ok && bad++ < 3)
        fprintf (stderr, "\n  r%u item %u: pooled %g %g %g, want %g %g %g", seq, i,
                 ga ? ga[0] : NAN, gb ? gb[0] : NAN, gu ? gu[0] : NAN, wa[0], wb[0], wu[0]);
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
}

static void
test_pooling (void)
{
  make_cube ();
  const char *placements[] = {"memory", "disk"};
  for (guint p = 0; p < 2; p++) {
    g_autofree char *opts = g_strdup_printf (
      "cube = %s\nvalues = %s\nslots = slot_a, slot_b, 2=user_tags\npooling = sum, mean, sum\n"
      "default = 0.5\n", cube_dir, placements[p]);
    g_autofree char *text = pipeline (opts);
    SedpPipeline *pl = start_pipeline (text);
    Collector c;
    collector_init (&c);
    const guint n = g_getenv ("SEDP_VALGRIND") ? 12 : 60;
    CU_ASSERT_EQUAL (run (pl, &c, n, items_varied), n);
    check_items (&c, TRUE, "pooled_", 0.5f);
    /* Duplicates looked up once per batch: fewer distinct keys than keys. */
    CU_ASSERT (counter (pl, "cube_keys_total") > counter (pl, "cube_unique_keys_total"));
    CU_ASSERT (counter (pl, "missing_keys_total") > 0);
    CU_ASSERT (counter (pl, "cube_lookups_total") <= n * 3);
    CU_ASSERT_EQUAL (counter (pl, "degraded_lookups_total"), 0);
    /* The source's counters come through the stage's stats. */
    g_autoptr (GString) stats = g_string_new (NULL);
    sedp_pipeline_collect_stats (pl, stats);
    CU_ASSERT_PTR_NOT_NULL (strstr (stats->str, "cube_hits"));
    sedp_pipeline_free (pl);
    collector_clear (&c);
  }
}

/* Signatures given directly (uint64), another output prefix, one pooling for all. */
static void
test_signatures (void)
{
  make_cube ();
  g_autofree char *opts = g_strdup_printf (
    "cube = %s\nslots = 0=slot_a, 2=user_tags\nhash_key = 00112233445566778899aabbccddeeff\n"
    "output_prefix = e\n[stage sig]\nplugin = cube_accessor\nafter = acc\ncube = %s\n"
    "slots = 5=sig\nhash_slot_ids = false\npooling = mean\ndefault = -1\n",
    cube_dir, cube_dir);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 20;
  CU_ASSERT_EQUAL (run (pl, &c, n, items_varied), n);
  check_items (&c, FALSE, "e", 0.0f);
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint seq = seq_of (r);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      guint64 b[2];
      ids_b (seq, i, b);
      float want[DIM];
      for (guint d = 0; d < DIM; d++)
        want[d] = (float) ((b[0] < IDS ? test_value (sig (1, b[0]), d) : -1.0) - 1.0) / 2;
      const float *got = floats (f, "pooled_5", row);
      if (got == NULL || !close_to (got, want))
        bad++;
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

static guint
items_three (guint seq)
{
  return 3;
}

/* At request scope, on the user frame; the result is broadcast to the items. */
static void
test_request_scope (void)
{
  make_cube ();
  g_autofree char *opts = g_strdup_printf ("scope = request\ncube = %s\nslots = 2=user_tags\n"
                                           "[stage tail]\nplugin = passthrough\nafter = acc\n",
                                           cube_dir);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (run (pl, &c, 10, items_three), 10);
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint64 u[3];
    user_tags (seq_of (r), u);
    float want[DIM];
    expect_pool (2, u, 3, FALSE, 0, TRUE, want);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      const float *got = floats (f, "pooled_2", row);
      if (got == NULL || !close_to (got, want))
        bad++;
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

/* Items without the slot column fail with a message naming it; other requests go on. */
static void
test_bad_input (void)
{
  make_cube ();
  g_autofree char *opts = g_strdup_printf ("cube = %s\nslots = slot_a, nope\n", cube_dir);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (run (pl, &c, 3, items_three), 3);
  for (guint k = 0; k < c.done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[k]);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
    CU_ASSERT_EQUAL (sedp_result_get_item_status (res, 0), SEDP_ITEM_FAILED);
    const char *msg = sedp_result_get_item_message (res, 0);
    CU_ASSERT_PTR_NOT_NULL (msg && strstr (msg, "slot column 'nope' is missing"));
  }
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

/* A pipeline that must not start; the error contains @needle. */
static void
refused (const char *acc_options, const char *needle)
{
  g_autofree char *text = pipeline (acc_options);
  g_autoptr (GError) error = NULL;
  SedpPipelineSpec *spec = sedp_pipeline_spec_parse (text, strlen (text), "test.pipeline", &error);
  SedpGraph *graph = spec ? sedp_graph_compile (spec, runtime_registry (), &error) : NULL;
  SedpPipeline *p = graph ? sedp_pipeline_new (graph, &error) : NULL;
  if (p && sedp_pipeline_start (p, &error)) {
    fprintf (stderr, "\n  started with: %s", acc_options);
    CU_FAIL ("the pipeline started");
  }
  sedp_pipeline_free (p);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  if (strstr (error->message, needle) == NULL)
    fprintf (stderr, "\n  '%s' lacks '%s'", error->message, needle);
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, needle));
}

static void
test_config_errors (void)
{
  make_cube ();
  g_autofree char *missing = tpath ("no-such-cube");
  g_autofree char *a = g_strdup_printf ("cube = %s\nslots = x\n", missing);
  refused (a, "no-such-cube");
  refused ("slots = x\n", "backend local needs cube = PATH");
  g_autofree char *b = g_strdup_printf ("cube = %s\nslots = q=x\n", cube_dir);
  refused (b, "slots: 'q=x'");
  g_autofree char *c = g_strdup_printf ("cube = %s\nslots = 1=x, 1=y\n", cube_dir);
  refused (c, "slot 1 twice");
  g_autofree char *d = g_strdup_printf ("cube = %s\nslots = x, y, z\npooling = sum, mean\n",
                                        cube_dir);
  refused (d, "pooling: give one of sum or mean for every slot");
  g_autofree char *e = g_strdup_printf ("cube = %s\nslots = x\npooling = max\n", cube_dir);
  refused (e, "'max' is neither sum nor mean");
  g_autofree char *f = g_strdup_printf ("cube = %s\nslots = x\nhash_key = zz\n", cube_dir);
  refused (f, "hash_key: expected 32 hex digits");
  refused ("backend = redis\nslots = x\n", "backend redis needs redis = URL and name = NAME");
  refused ("slots = x\nbackend = redis\nredis = redis://127.0.0.1:1\nname = e\n", "acc");
  refused ("cube = x\n", "slots");
  /* A damaged cube is refused at start. */
  g_autofree char *bad = tpath ("acc-bad");
  copy_cube (cube_dir, bad);
  g_autofree char *blk = member (bad, "block-00000.bin");
  flip_byte (blk, 9);
  g_autofree char *g = g_strdup_printf ("cube = %s\nslots = x\n", bad);
  refused (g, "checksum mismatch");
}

/* ---- sequences: unpooled lookups ---- */

#define SEQ_U 3 /* the user's sequence: int64 [1, 3], slot 2 */
#define SEQ_I 4 /* each item's: int64 [n, 4], slot 0 */
#define SEQ_T 2 /* each item's idlist of 2, slot 1 */

/* Ids of the user's sequence of request @seq: behaviours, then padding 0; some missing. */
static void
seq_user (guint seq, gint64 *out)
{
  out[0] = 1 + seq % (IDS - 1);
  out[1] = IDS + seq; /* missing */
  out[2] = 0;         /* padding */
}

static void
seq_item (guint seq, guint i, gint64 *out)
{
  for (guint j = 0; j < SEQ_I; j++)
    out[j] = j + i >= SEQ_I + 1 ? 0 : (gint64) ((seq * 5 + i * 3 + j * 17) % (IDS + 6));
}

static void
seq_tags (guint seq, guint i, guint64 *out)
{
  out[0] = (seq + 2 * i) % IDS;
  out[1] = 0;
}

static SedpRequest *
make_seq_req (guint seq, guint n_items)
{
  char id[16];
  g_snprintf (id, sizeof id, "r%u", seq);
  SedpRequest *r = sedp_request_new (id, 0);
  SedpFrame *user = sedp_frame_new (1);
  seq_user (seq, sedp_column_int64_data (sedp_frame_add_column (user, "uhist", SEDP_COLUMN_INT64,
                                                                SEQ_U)));
  sedp_column_set_string (sedp_frame_add_column (user, "uname", SEDP_COLUMN_STRING, 1), 0, "u");
  SedpFrame *items = sedp_frame_new (n_items);
  gint64 *h = sedp_column_int64_data (sedp_frame_add_column (items, "ihist", SEDP_COLUMN_INT64,
                                                             SEQ_I));
  guint32 *off = NULL, *uoff = NULL;
  guint64 *t = sedp_column_idlist_data (sedp_frame_add_idlist (items, "itags", SEQ_T * n_items),
                                        &off);
  /* Row i has i % 3 ids: unequal counts. */
  guint n_uneven = 0;
  for (guint i = 0; i < n_items; i++)
    n_uneven += i % 3;
  guint64 *u = sedp_column_idlist_data (sedp_frame_add_idlist (items, "uneven", n_uneven), &uoff);
  guint pos = 0;
  for (guint i = 0; i < n_items; i++) {
    seq_item (seq, i, h + (gsize) i * SEQ_I);
    off[i] = SEQ_T * i;
    seq_tags (seq, i, t + (gsize) SEQ_T * i);
    uoff[i] = pos;
    for (guint k = 0; k < i % 3; k++)
      u[pos++] = k;
  }
  sedp_request_set_frames (r, user, items);
  return r;
}

static guint
run_seq (SedpPipeline *p, Collector *c, guint n, guint (*items) (guint))
{
  for (guint s = 0; s < n; s++) {
    SedpRequest *r = make_seq_req (s, items (s));
    CU_ASSERT_EQUAL (sedp_pipeline_submit (p, r, collector_done, c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  return collector_wait (c, n, 60);
}

/* Whether column @name of @f at @row holds the cube's rows of @ids of @slot one after the
 * other (@dflt for ids not in the cube): computed from test_value, not from the stage. */
static gboolean
seq_matches (const SedpFrame *f, const char *name, guint row, guint32 slot, const gint64 *ids,
             guint L, float dflt)
{
  const SedpColumn *c = sedp_frame_get_column (f, name);
  if (c == NULL || sedp_column_get_column_type (c) != SEDP_COLUMN_FLOAT32 ||
      sedp_column_get_width (c) != L * DIM)
    return FALSE;
  const float *got = sedp_column_get_float32 (c) +
                     (gsize) (sedp_column_is_broadcast (c) ? 0 : row) * L * DIM;
  for (guint j = 0; j < L; j++) {
    float want[DIM];
    for (guint d = 0; d < DIM; d++)
      want[d] = ids[j] >= 0 && ids[j] < IDS ? (float) test_value (sig (slot, (guint64) ids[j]), d)
                                            : dflt;
    if (!close_to (got + (gsize) j * DIM, want))
      return FALSE;
  }
  return TRUE;
}

/* Item scope: ihist (int64 [n, 4]), itags (idlists of 2) and the user's uhist, broadcast into
 * the item frames, also pooled as a slot; then a stage at request scope on the user frame,
 * whose one row the runtime broadcasts to the items. */
static void
test_sequences (void)
{
  make_cube ();
  g_autofree char *opts = g_strdup_printf (
    "cube = %s\nslots = 2=uhist\nsequences = 0=ihist, 1=itags, 2=uhist\ndefault = 0.5\n"
    "[stage user]\nplugin = cube_accessor\nafter = acc\nscope = request\ncube = %s\n"
    "sequences = 2=uhist\nsequence_prefix = u_\ndefault = -1\n", cube_dir, cube_dir);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 24;
  CU_ASSERT_EQUAL (run_seq (pl, &c, n, items_varied), n);
  guint bad = 0, rows = 0;
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    const SedpResult *res = sedp_request_get_result (r);
    guint seq = seq_of (r);
    if (sedp_result_get_status (res) != SEDP_STATUS_OK) {
      fprintf (stderr, "\n  r%u: %s", seq, sedp_result_get_message (res));
      bad++;
      continue;
    }
    gint64 u[SEQ_U];
    seq_user (seq, u);
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      gint64 h[SEQ_I], t[SEQ_T];
      guint64 tu[SEQ_T];
      seq_item (seq, i, h);
      seq_tags (seq, i, tu);
      for (guint j = 0; j < SEQ_T; j++)
        t[j] = (gint64) tu[j];
      float pu[DIM];
      guint64 uu[SEQ_U];
      for (guint j = 0; j < SEQ_U; j++)
        uu[j] = (guint64) u[j];
      expect_pool (2, uu, SEQ_U, FALSE, 0.5f, TRUE, pu);
      const float *gp = floats (f, "pooled_2", row);
      gboolean ok = seq_matches (f, "seq_ihist", row, 0, h, SEQ_I, 0.5f) &&
                    seq_matches (f, "seq_itags", row, 1, t, SEQ_T, 0.5f) &&
                    seq_matches (f, "seq_uhist", row, 2, u, SEQ_U, 0.5f) &&
                    seq_matches (f, "u_uhist", row, 2, u, SEQ_U, -1.0f) && gp &&
                    close_to (gp, pu);
      if (!ok && bad++ < 3)
        fprintf (stderr, "\n  r%u item %u: a sequence differs from the cube's rows", seq, i);
      rows++;
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  CU_ASSERT (rows > n);
  /* Sequence keys are counted: the second stage's are one row of 3 per request. */
  CU_ASSERT (counter (pl, "cube_keys_total") > counter (pl, "cube_unique_keys_total"));
  CU_ASSERT (counter (pl, "missing_keys_total") > 0);
  guint64 user_keys = sedp_counter_get (
    sedp_metrics_counter (sedp_pipeline_get_metrics (pl), "user", "cube_keys_total", NULL));
  CU_ASSERT_EQUAL (user_keys, n * SEQ_U);
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

/* The keys of the sequences, counted exactly: 3 items in one frame of 4 per request. */
static void
test_sequence_counters (void)
{
  make_cube ();
  g_autofree char *opts = g_strdup_printf ("cube = %s\nsequences = 0=ihist, 1=itags, 2=uhist\n",
                                           cube_dir);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  const guint n = 10;
  CU_ASSERT_EQUAL (run_seq (pl, &c, n, items_three), n);
  for (guint k = 0; k < c.done->len; k++)
    CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (c.done->pdata[k])),
                     SEDP_STATUS_OK);
  /* Per request: 3 rows of 4 and of 2, the broadcast user sequence read once. */
  CU_ASSERT_EQUAL (counter (pl, "cube_keys_total"), n * (3 * (SEQ_I + SEQ_T) + SEQ_U));
  CU_ASSERT (counter (pl, "cube_unique_keys_total") < counter (pl, "cube_keys_total"));
  CU_ASSERT (counter (pl, "cube_lookups_total") >= 1 && counter (pl, "cube_lookups_total") <= n);
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

/* An event fails, naming the column: idlist rows of unequal counts, a string column. */
static void
seq_refused_input (const char *sequences, const char *needle)
{
  g_autofree char *opts = g_strdup_printf ("cube = %s\nsequences = %s\n", cube_dir, sequences);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  CU_ASSERT_EQUAL (run_seq (pl, &c, 3, items_three), 3);
  for (guint k = 0; k < c.done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[k]);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_FAILED);
    const char *msg = sedp_result_get_item_message (res, 0);
    if (msg == NULL || strstr (msg, needle) == NULL)
      fprintf (stderr, "\n  '%s' lacks '%s'", msg ? msg : "(null)", needle);
    CU_ASSERT_PTR_NOT_NULL (msg && strstr (msg, needle));
  }
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

static void
test_sequence_errors (void)
{
  make_cube ();
  seq_refused_input ("0=ihist, 1=uneven", "sequence column 'uneven' has rows of 0 and 1 ids");
  seq_refused_input ("0=uname", "sequence column 'uname' is a string column");
  seq_refused_input ("0=nope", "sequence column 'nope' is missing");
  g_autofree char *a = g_strdup_printf ("cube = %s\nsequences = q=x\n", cube_dir);
  refused (a, "sequences: 'q=x': the slot before '=' must be a number");
  g_autofree char *b = g_strdup_printf ("cube = %s\nsequences = 1=\n", cube_dir);
  refused (b, "sequences: '1=' names no column");
  g_autofree char *c = g_strdup_printf ("cube = %s\nsequences = 0=x, 1=x\n", cube_dir);
  refused (c, "sequences: two items write 'seq_x' (column 'x' twice)");
  g_autofree char *d = g_strdup_printf ("cube = %s\nslots = 3=x\nsequences = 3\n"
                                        "sequence_prefix = pooled_\n", cube_dir);
  refused (d, "sequences: '3' writes 'pooled_3', as slot 3 (column 'x') of slots does");
}

/* ---- Redis down: defaults, degraded lookups, requests still succeed ---- */

static gboolean
push_cube (const char *url)
{
  SedpCube *cube = sedp_cube_open (cube_dir, SEDP_CUBE_VALUES_DISK, NULL);
  SedpRedisOptions o = {.url = url, .name = "acc", .timeout_ms = 2000};
  g_autoptr (GError) error = NULL;
  gboolean ok = sedp_cube_push (cube, &o, &error);
  if (!ok)
    fprintf (stderr, "\n  push: %s", error->message);
  sedp_cube_close (cube);
  return ok;
}

static void
test_redis_down (void)
{
  if (!redis_harness_available ()) {
    fprintf (stderr, "(redis-server not installed: skipped) ");
    return;
  }
  make_cube ();
  g_autoptr (GError) error = NULL;
  RedisServer *server = redis_server_new (FALSE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (server);
  g_autofree char *url = redis_server_url (server);
  CU_ASSERT_TRUE_FATAL (push_cube (url));
  g_autofree char *opts = g_strdup_printf ("backend = redis\nredis = %s\nname = acc\n"
                                           "timeout_ms = 200\nslots = slot_a, slot_b, 2=user_tags\n"
                                           "pooling = sum, mean, sum\ndefault = 0.5\n", url);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  /* Up: the same values as the local cube (the hash key comes from Redis). */
  CU_ASSERT_EQUAL (run (pl, &c, 10, items_varied), 10);
  check_items (&c, TRUE, "pooled_", 0.5f);
  CU_ASSERT_EQUAL (counter (pl, "degraded_lookups_total"), 0);
  /* Down: every key gets the default, requests succeed. */
  redis_server_kill (server);
  g_ptr_array_set_size (c.done, 0);
  CU_ASSERT_EQUAL (run (pl, &c, 10, items_three), 10);
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    const SedpResult *res = sedp_request_get_result (c.done->pdata[k]);
    if (sedp_result_get_status (res) != SEDP_STATUS_OK)
      bad++;
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      const float *u = floats (f, "pooled_2", row), *b = floats (f, "pooled_1", row);
      if (u == NULL || u[0] != 1.5f || b == NULL || b[3] != 0.5f)
        bad++;
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  CU_ASSERT (counter (pl, "degraded_lookups_total") > 0);
  /* Back: it reconnects by itself (the restarted server is empty: keys are missing). */
  CU_ASSERT_TRUE_FATAL (redis_server_start (server, NULL));
  CU_ASSERT_TRUE (push_cube (url));
  g_usleep (G_USEC_PER_SEC / 2);
  g_ptr_array_set_size (c.done, 0);
  guint64 degraded = counter (pl, "degraded_lookups_total");
  gint64 until = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;
  while (g_get_monotonic_time () < until) {
    g_ptr_array_set_size (c.done, 0);
    run (pl, &c, 2, items_three);
    if (counter (pl, "degraded_lookups_total") == degraded)
      break;
    degraded = counter (pl, "degraded_lookups_total");
    g_usleep (G_USEC_PER_SEC / 5);
  }
  g_ptr_array_set_size (c.done, 0);
  CU_ASSERT_EQUAL (run (pl, &c, 6, items_varied), 6);
  check_items (&c, TRUE, "pooled_", 0.5f);
  sedp_pipeline_free (pl);
  collector_clear (&c);
  redis_server_free (server);
}

/* The cube cache in front of Redis: the same values (the hash key found through the cache), and
 * requests still succeed once Redis is gone. */
static void
test_cached_backend (void)
{
  if (!redis_harness_available ()) {
    fprintf (stderr, "(redis-server not installed: skipped) ");
    return;
  }
  make_cube ();
  g_autoptr (GError) error = NULL;
  RedisServer *server = redis_server_new (FALSE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (server);
  g_autofree char *url = redis_server_url (server);
  CU_ASSERT_TRUE_FATAL (push_cube (url));
  g_autofree char *disk = tpath ("acc-cache-disk");
  g_autofree char *opts = g_strdup_printf ("backend = cached\nredis = %s\nname = acc\n"
                                           "memory_entries = 40\ndisk_entries = 60\n"
                                           "disk_path = %s\ntimeout_ms = 200\n"
                                           "slots = slot_a, slot_b, 2=user_tags\n"
                                           "pooling = sum, mean, sum\ndefault = 0.5\n", url, disk);
  g_autofree char *text = pipeline (opts);
  SedpPipeline *pl = start_pipeline (text);
  Collector c;
  collector_init (&c);
  for (int round = 0; round < 3; round++) {
    g_ptr_array_set_size (c.done, 0);
    CU_ASSERT_EQUAL (run (pl, &c, 12, items_varied), 12);
    check_items (&c, TRUE, "pooled_", 0.5f);
  }
  g_autoptr (GString) stats = g_string_new (NULL);
  sedp_pipeline_collect_stats (pl, stats);
  CU_ASSERT_PTR_NOT_NULL (strstr (stats->str, "acc"));
  redis_server_kill (server);
  g_ptr_array_set_size (c.done, 0);
  CU_ASSERT_EQUAL (run (pl, &c, 6, items_three), 6);
  for (guint k = 0; k < c.done->len; k++)
    CU_ASSERT_EQUAL (sedp_result_get_status (sedp_request_get_result (c.done->pdata[k])),
                     SEDP_STATUS_OK);
  sedp_pipeline_free (pl);
  collector_clear (&c);
  redis_server_free (server);
}

/* ---- a split model served: cube_accessor + model_inference score as the original ---- */

static void
test_split_model_served (void)
{
  g_autofree char *model = tpath ("served.onnx"), *dense = tpath ("served-dense.onnx");
  g_autofree char *dir = tpath ("served-cube");
  const char *argv1[] = {SEDP_BINARY, "model", "synth", "-a", "dcn", "--seed", "3", "-o", model,
                         NULL};
  const char *argv2[] = {SEDP_BINARY, "model", "split", model, "--dense", dense, "--cube", dir,
                         NULL};
  int status = 0;
  CU_ASSERT_TRUE_FATAL (g_spawn_sync (NULL, (char **) argv1, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                                      NULL, NULL, NULL, NULL, &status, NULL));
  CU_ASSERT_EQUAL_FATAL (status, 0);
  CU_ASSERT_TRUE_FATAL (g_spawn_sync (NULL, (char **) argv2, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                                      NULL, NULL, NULL, NULL, &status, NULL));
  CU_ASSERT_EQUAL_FATAL (status, 0);
  g_autofree char *text = g_strdup_printf (
    "[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
    "[stage src]\nplugin = passthrough\nscope = request\n"
    "[stage acc]\nplugin = cube_accessor\nafter = src\ncube = %s\n"
    "slots = slot_0, slot_1, slot_2, slot_3\npooling = sum\n"
    "[stage dnn]\nplugin = model_inference\nafter = acc\nmodel = %s\n", dir, dense);
  SedpPipeline *pl = start_pipeline (text);
  g_autoptr (SedpNnModel) orig = sedp_nn_model_load (model, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (orig);
  Collector c;
  collector_init (&c);
  const guint n_req = 8, n_items = 5, n_dense = 5, L = 3, slots = 4;
  /* Inputs of every request, kept to score them directly. */
  g_autofree float *dense_in = g_new (float, n_req * n_items * n_dense);
  g_autofree gint64 *ids = g_new (gint64, n_req * slots * n_items * L);
  GRand *rng = g_rand_new_with_seed (17);
  for (guint s = 0; s < n_req; s++) {
    char id[16];
    g_snprintf (id, sizeof id, "r%u", s);
    SedpRequest *r = sedp_request_new (id, 0);
    SedpFrame *items = sedp_frame_new (n_items);
    float *dv = sedp_column_float32_data (sedp_frame_add_column (items, "dense", SEDP_COLUMN_FLOAT32, n_dense));
    for (guint k = 0; k < n_items * n_dense; k++)
      dv[k] = dense_in[s * n_items * n_dense + k] = (float) g_rand_double_range (rng, 0, 1);
    for (guint k = 0; k < slots; k++) {
      g_autofree char *name = g_strdup_printf ("slot_%u", k);
      gint64 *v = sedp_column_int64_data (sedp_frame_add_column (items, name, SEDP_COLUMN_INT64, L));
      for (guint q = 0; q < n_items * L; q++)
        v[q] = ids[((gsize) s * slots + k) * n_items * L + q] = g_rand_int_range (rng, 0, 100);
    }
    sedp_request_set_frames (r, sedp_frame_new (1), items);
    CU_ASSERT_EQUAL (sedp_pipeline_submit (pl, r, collector_done, &c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  g_rand_free (rng);
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n_req, 60), n_req);
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    guint s = seq_of (r);
    const SedpResult *res = sedp_request_get_result (r);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    /* The original model on the same inputs. */
    SedpNnTensor in[5];
    in[0] = (SedpNnTensor){.name = "dense", .dtype = SEDP_NN_FLOAT, .rank = 2,
                           .dims = {n_items, n_dense}, .data = dense_in + s * n_items * n_dense};
    for (guint q = 0; q < slots; q++)
      in[1 + q] = (SedpNnTensor){.name = "slot", .dtype = SEDP_NN_INT64, .rank = 2,
                                 .dims = {n_items, L},
                                 .data = ids + ((gsize) s * slots + q) * n_items * L};
    SedpNnPlan *plan = sedp_nn_plan_new (orig, n_items, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
    SedpNnTensor out[1];
    CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (plan, 5, in, 1, out, NULL));
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      const SedpColumn *col = f ? sedp_frame_get_column (f, "prob") : NULL;
      float want = ((float *) out[0].data)[i];
      float got = col ? sedp_column_get_float32 (col)[row] : NAN;
      if (!(fabsf (got - want) <= 1e-5f * MAX (fabsf (want), 1e-3f))) {
        if (bad++ < 3)
          fprintf (stderr, "\n  r%u item %u: %.9g, the original model says %.9g", s, i, got, want);
      }
    }
    sedp_nn_plan_free (plan);
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

/* ---- a split sequence model served: the user's sequence at request scope ---- */

static void
din_node (SedpNnModel *m, const char *op, const char *in0, const char *in1, const char *out)
{
  const char *in[3] = {in0, in1, NULL}, *o[2] = {out, NULL};
  sedp_nn_model_add_node (m, op, out, in, o);
}

static SedpNnTensor *
din_tensor (SedpNnModel *m, const char *name, SedpNnDType dtype, int rank, gint64 d0, gint64 d1)
{
  gint64 dims[2] = {d0, d1};
  SedpNnTensor *t = sedp_nn_tensor_new (name, dtype, rank, dims);
  sedp_nn_model_add_initializer (m, t);
  return t;
}

/* item [N, 1] and hist [N, 5] (0 = padding) read from emb_item [12, 4] (row 0 zeros), neither
 * pooled: hist's masked by 1 - Cast (Equal (hist, 0)), weighted by its dot with item's, summed;
 * concatenated with item's and MatMul to one score. */
static char *
din_model (void)
{
  static const char *const batch[2] = {"N", NULL};
  SedpNnModel *m = sedp_nn_model_new (13, "test");
  gint64 di[2] = {-1, 1}, dh[2] = {-1, 5};
  sedp_nn_model_add_input (m, "hist", SEDP_NN_INT64, 2, dh, batch);
  sedp_nn_model_add_input (m, "item", SEDP_NN_INT64, 2, di, batch);
  float *e = din_tensor (m, "emb_item", SEDP_NN_FLOAT, 2, 12, 4)->data;
  for (guint k = 0; k < 12 * 4; k++)
    e[k] = k < 4 ? 0.0f : (float) sin (k * 0.71);
  *(gint64 *) din_tensor (m, "zero", SEDP_NN_INT64, 1, 1, 0)->data = 0;
  *(float *) din_tensor (m, "one", SEDP_NN_FLOAT, 1, 1, 0)->data = 1.0f;
  *(gint64 *) din_tensor (m, "ax2", SEDP_NN_INT64, 1, 1, 0)->data = 2;
  *(gint64 *) din_tensor (m, "ax1", SEDP_NN_INT64, 1, 1, 0)->data = 1;
  gint64 *flat = din_tensor (m, "flat", SEDP_NN_INT64, 1, 2, 0)->data;
  flat[0] = -1;
  flat[1] = 4;
  float *w = din_tensor (m, "w", SEDP_NN_FLOAT, 2, 8, 1)->data;
  for (guint k = 0; k < 8; k++)
    w[k] = 0.2f * (float) k - 0.7f;
  din_node (m, "Gather", "emb_item", "item", "ei");
  din_node (m, "Gather", "emb_item", "hist", "eh");
  din_node (m, "Equal", "hist", "zero", "is_pad");
  din_node (m, "Cast", "is_pad", NULL, "pad_f");
  sedp_nn_node_set_attr_int (&m->nodes[m->n_nodes - 1], "to", SEDP_NN_FLOAT);
  din_node (m, "Sub", "one", "pad_f", "keep");
  din_node (m, "Unsqueeze", "keep", "ax2", "keep3");
  din_node (m, "Mul", "eh", "keep3", "ehm");
  din_node (m, "Mul", "ehm", "ei", "dt");
  din_node (m, "ReduceSum", "dt", "ax2", "att");
  din_node (m, "Mul", "ehm", "att", "weighted");
  din_node (m, "ReduceSum", "weighted", "ax1", "interest3");
  din_node (m, "Reshape", "interest3", "flat", "interest");
  din_node (m, "Reshape", "ei", "flat", "ei2");
  const char *cin[] = {"interest", "ei2", NULL}, *cout[] = {"cat", NULL};
  sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Concat", "cat", cin, cout), "axis", 1);
  din_node (m, "MatMul", "cat", "w", "score");
  gint64 od[2] = {-1, 1};
  sedp_nn_model_add_output (m, "score", SEDP_NN_FLOAT, 2, od, batch);
  char *path = tpath ("din.onnx");
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, path, NULL));
  sedp_nn_model_unref (m);
  return path;
}

/* Split, then served: the user's hist (a request column) looked up once per request by a stage
 * at request scope, each item's id by one at item scope, the dense model reading seq_hist,
 * seq_item and hist (its mask): the scores of the unsplit model. */
static void
test_sequence_model_served (void)
{
  g_autofree char *model = din_model ();
  g_autofree char *dense = tpath ("din-dense.onnx"), *dir = tpath ("din-cube");
  const char *argv[] = {SEDP_BINARY, "model", "split", model, "--dense", dense, "--cube", dir,
                        NULL};
  g_autofree char *out = NULL;
  int status = 0;
  CU_ASSERT_TRUE_FATAL (g_spawn_sync (NULL, (char **) argv, NULL, 0, NULL, NULL, &out, NULL,
                                      &status, NULL));
  CU_ASSERT_EQUAL_FATAL (status, 0);
  CU_ASSERT_PTR_NOT_NULL (strstr (out, "sequences = 0=hist, 0=item; hash_slot_ids = true"));
  g_autofree char *text = g_strdup_printf (
    "[pipeline]\nframe_rows = 4\ndeadline_ms = 60000\n"
    "[stage user]\nplugin = cube_accessor\nscope = request\ncube = %s\nsequences = 0=hist\n"
    "[stage acc]\nplugin = cube_accessor\nafter = user\ncube = %s\nsequences = 0=item\n"
    "[stage dnn]\nplugin = model_inference\nafter = acc\nmodel = %s\n", dir, dir, dense);
  SedpPipeline *pl = start_pipeline (text);
  g_autoptr (SedpNnModel) orig = sedp_nn_model_load (model, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (orig);
  Collector c;
  collector_init (&c);
  const guint n_req = 6, n_items = 7;
  gint64 hist[6][5], item[6][7];
  for (guint s = 0; s < n_req; s++) {
    for (guint j = 0; j < 5; j++)
      hist[s][j] = j < 5 - s % 3 ? 1 + (s * 7 + j * 3) % 11 : 0;
    char id[16];
    g_snprintf (id, sizeof id, "r%u", s);
    SedpRequest *r = sedp_request_new (id, 0);
    SedpFrame *user = sedp_frame_new (1);
    memcpy (sedp_column_int64_data (sedp_frame_add_column (user, "hist", SEDP_COLUMN_INT64, 5)),
            hist[s], sizeof hist[s]);
    SedpFrame *items = sedp_frame_new (n_items);
    gint64 *v = sedp_column_int64_data (sedp_frame_add_column (items, "item", SEDP_COLUMN_INT64, 1));
    for (guint i = 0; i < n_items; i++)
      v[i] = item[s][i] = 1 + (s * 5 + i * 4) % 11;
    sedp_request_set_frames (r, user, items);
    CU_ASSERT_EQUAL (sedp_pipeline_submit (pl, r, collector_done, &c), SEDP_STATUS_OK);
    sedp_request_unref (r);
  }
  CU_ASSERT_EQUAL_FATAL (collector_wait (&c, n_req, 60), n_req);
  guint bad = 0;
  for (guint k = 0; k < c.done->len; k++) {
    SedpRequest *r = c.done->pdata[k];
    guint s = seq_of (r);
    const SedpResult *res = sedp_request_get_result (r);
    CU_ASSERT_EQUAL (sedp_result_get_status (res), SEDP_STATUS_OK);
    gint64 h[7 * 5];
    for (guint i = 0; i < n_items; i++)
      memcpy (h + i * 5, hist[s], sizeof hist[s]);
    SedpNnTensor in[2] = {
      {.name = "hist", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {n_items, 5}, .data = h},
      {.name = "item", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {n_items, 1}, .data = item[s]}};
    SedpNnPlan *plan = sedp_nn_plan_new (orig, n_items, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
    SedpNnTensor o[1];
    CU_ASSERT_TRUE_FATAL (sedp_nn_plan_run (plan, 2, in, 1, o, NULL));
    for (guint i = 0; i < sedp_result_get_n_items (res); i++) {
      guint row = 0;
      const SedpFrame *f = sedp_result_get_item_frame (res, i, &row);
      const SedpColumn *col = f ? sedp_frame_get_column (f, "score") : NULL;
      float want = ((float *) o[0].data)[i];
      float got = col ? sedp_column_get_float32 (col)[row] : NAN;
      if (!(fabsf (got - want) <= 1e-6f * MAX (fabsf (want), 1e-3f)) && bad++ < 3)
        fprintf (stderr, "\n  r%u item %u: %.9g, the original model says %.9g", s, i, got, want);
    }
    sedp_nn_plan_free (plan);
  }
  CU_ASSERT_EQUAL (bad, 0);
  /* The user's sequence: one row of 5 keys per request. */
  guint64 user_keys = sedp_counter_get (
    sedp_metrics_counter (sedp_pipeline_get_metrics (pl), "user", "cube_keys_total", NULL));
  CU_ASSERT_EQUAL (user_keys, n_req * 5);
  sedp_pipeline_free (pl);
  collector_clear (&c);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("cube-accessor", cube_suite_init, cube_suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_pooling);
  T (test_signatures);
  T (test_request_scope);
  T (test_bad_input);
  T (test_config_errors);
  T (test_sequences);
  T (test_sequence_counters);
  T (test_sequence_errors);
  T (test_redis_down);
  T (test_cached_backend);
  T (test_split_model_served);
  T (test_sequence_model_served);
#undef T
  int status = sedp_test_run ();
  g_free (cube_dir);
  if (test_registry)
    sedp_registry_free (test_registry);
  return status;
}
