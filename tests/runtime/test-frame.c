/* sedp frame tests: columns, copy on write, slicing, gathering, broadcast, concatenation. */
#include "test-common.h"

#include "runtime/frame-private.h"

#include <string.h>

static SedpFrame *
numbers (guint n)
{
  SedpFrame *f = sedp_frame_new (n);
  float *v = sedp_column_float32_data (sedp_frame_add_column (f, "x", SEDP_COLUMN_FLOAT32, 2));
  gint64 *id = sedp_column_int64_data (sedp_frame_add_column (f, "id", SEDP_COLUMN_INT64, 1));
  SedpColumn *s = sedp_frame_add_column (f, "name", SEDP_COLUMN_STRING, 1);
  guint32 *off;
  guint64 *ids = sedp_column_idlist_data (sedp_frame_add_idlist (f, "tags", n * (n - 1) / 2), &off);
  guint pos = 0;
  for (guint r = 0; r < n; r++) {
    v[2 * r] = (float) r;
    v[2 * r + 1] = (float) r * 10;
    id[r] = 100 + r;
    g_autofree char *name = g_strdup_printf ("n%u", r);
    sedp_column_set_string (s, r, name);
    off[r] = pos;
    for (guint k = 0; k < r; k++)
      ids[pos++] = r * 10 + k;
  }
  off[n] = pos;
  return f;
}

static void
test_columns (void)
{
  g_autoptr (SedpFrame) f = numbers (4);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (f), 4);
  CU_ASSERT_EQUAL (sedp_frame_get_n_columns (f), 4);
  const SedpColumn *x = sedp_frame_get_column (f, "x");
  CU_ASSERT_EQUAL (sedp_column_get_width (x), 2);
  CU_ASSERT_EQUAL (sedp_column_get_float32 (x)[7], 30.0f);
  CU_ASSERT_PTR_NULL (sedp_column_get_int64 (x));
  guint n;
  const guint64 *ids = sedp_column_get_ids (sedp_frame_get_column (f, "tags"), 3, &n);
  CU_ASSERT_EQUAL (n, 3);
  CU_ASSERT_EQUAL (ids[2], 32);
  CU_ASSERT_PTR_NULL (sedp_column_get_ids (sedp_frame_get_column (f, "tags"), 0, &n));
  CU_ASSERT_STRING_EQUAL (sedp_column_get_string (sedp_frame_get_column (f, "name"), 2), "n2");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_frame_require_column (f, "x", SEDP_COLUMN_INT64, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_STAGE_ERROR, "column 'x'", "float32", "int64");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_frame_require_column (f, "x", SEDP_COLUMN_FLOAT32, 3, &error));
  SEDP_ASSERT_ERROR (error, SEDP_STAGE_ERROR, "width 2", "expected 3");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_frame_require_column (f, "nope", SEDP_COLUMN_INT64, 0, &error));
  SEDP_ASSERT_ERROR (error, SEDP_STAGE_ERROR, "column 'nope' is missing");
  CU_ASSERT_TRUE (sedp_frame_remove_column (f, "name"));
  CU_ASSERT_FALSE (sedp_frame_remove_column (f, "name"));
  CU_ASSERT_EQUAL (sedp_frame_get_n_columns (f), 3);
}

static void
test_copy_on_write (void)
{
  SedpFrame *a = numbers (3);
  SedpFrame *b = sedp_frame_copy_shallow (a);
  CU_ASSERT_PTR_EQUAL (sedp_frame_get_column (a, "x"), sedp_frame_get_column (b, "x"));
  SedpColumn *x = sedp_frame_edit_column (b, "x", NULL);
  CU_ASSERT_PTR_NOT_EQUAL (x, sedp_frame_get_column (a, "x"));
  sedp_column_float32_data (x)[0] = 42;
  CU_ASSERT_EQUAL (sedp_column_get_float32 (sedp_frame_get_column (a, "x"))[0], 0.0f);
  CU_ASSERT_EQUAL (sedp_column_get_float32 (sedp_frame_get_column (b, "x"))[0], 42.0f);
  /* A column only one frame holds is edited in place. */
  CU_ASSERT_PTR_EQUAL (sedp_frame_edit_column (b, "x", NULL), x);
  /* make_writable returns the frame itself when it is not shared. */
  sedp_frame_ref (b);
  SedpFrame *c = sedp_frame_make_writable (b);
  CU_ASSERT_PTR_NOT_EQUAL (c, b);
  SedpFrame *d = sedp_frame_make_writable (c);
  CU_ASSERT_PTR_EQUAL (d, c);
  sedp_frame_unref (d);
  sedp_frame_unref (b);
  sedp_frame_unref (a);
}

static void
test_slice_select_concat (void)
{
  g_autoptr (SedpFrame) f = numbers (6);
  g_autoptr (SedpFrame) s = sedp_frame_slice (f, 2, 3);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (s), 3);
  CU_ASSERT_EQUAL (sedp_frame_get_item_index (s, 0), 2);
  CU_ASSERT_EQUAL (sedp_column_get_int64 (sedp_frame_get_column (s, "id"))[2], 104);
  guint n;
  const guint64 *ids = sedp_column_get_ids (sedp_frame_get_column (s, "tags"), 1, &n);
  CU_ASSERT_EQUAL (n, 3);
  CU_ASSERT_EQUAL (ids[0], 30);
  guint32 rows[] = {5, 0};
  g_autoptr (SedpFrame) sel = sedp_frame_select_rows (f, rows, 2);
  CU_ASSERT_EQUAL (sedp_frame_get_item_index (sel, 0), 5);
  CU_ASSERT_STRING_EQUAL (sedp_column_get_string (sedp_frame_get_column (sel, "name"), 1), "n0");
  g_autoptr (SedpFrame) a = sedp_frame_slice (f, 0, 2);
  g_autoptr (SedpFrame) b = sedp_frame_slice (f, 2, 4);
  SedpFrame *parts[] = {a, b};
  g_autoptr (SedpFrame) all = sedp_frame_concat (parts, 2);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (all), 6);
  for (guint r = 0; r < 6; r++) {
    CU_ASSERT_EQUAL (sedp_frame_get_item_index (all, r), r);
    CU_ASSERT_EQUAL (sedp_column_get_float32 (sedp_frame_get_column (all, "x"))[2 * r + 1], r * 10.0f);
    const guint64 *t = sedp_column_get_ids (sedp_frame_get_column (all, "tags"), r, &n);
    CU_ASSERT_EQUAL (n, r);
    if (r > 0)
      CU_ASSERT_EQUAL (t[r - 1], r * 10 + r - 1);
  }
}

static void
test_broadcast (void)
{
  g_autoptr (SedpFrame) user = sedp_frame_new (1);
  sedp_column_float32_data (sedp_frame_add_column (user, "emb", SEDP_COLUMN_FLOAT32, 3))[2] = 7;
  g_autoptr (SedpFrame) b = sedp_frame_to_broadcast (user);
  g_autoptr (SedpFrame) items = numbers (4);
  sedp_frame_add_broadcast (items, b);
  const SedpColumn *emb = sedp_frame_get_column (items, "emb");
  CU_ASSERT_TRUE (sedp_column_is_broadcast (emb));
  CU_ASSERT_EQUAL (sedp_column_get_n_rows (emb), 1);
  CU_ASSERT_EQUAL (sedp_column_get_float32 (emb)[2], 7.0f);
  /* The broadcast column is shared, not copied, into every item frame. */
  g_autoptr (SedpFrame) other = numbers (2);
  sedp_frame_add_broadcast (other, b);
  CU_ASSERT_PTR_EQUAL (sedp_frame_get_column (other, "emb"), emb);
  /* Concatenation expands broadcast columns of different frames. */
  g_autoptr (SedpFrame) user2 = sedp_frame_new (1);
  sedp_column_float32_data (sedp_frame_add_column (user2, "emb", SEDP_COLUMN_FLOAT32, 3))[2] = 9;
  g_autoptr (SedpFrame) b2 = sedp_frame_to_broadcast (user2);
  g_autoptr (SedpFrame) more = numbers (2);
  sedp_frame_add_broadcast (more, b2);
  SedpFrame *parts[] = {items, more};
  g_autoptr (SedpFrame) all = sedp_frame_concat (parts, 2);
  const SedpColumn *e = sedp_frame_get_column (all, "emb");
  CU_ASSERT_FALSE (sedp_column_is_broadcast (e));
  CU_ASSERT_EQUAL (sedp_column_get_float32 (e)[3 * 3 + 2], 7.0f);
  CU_ASSERT_EQUAL (sedp_column_get_float32 (e)[3 * 5 + 2], 9.0f);
}

static void
test_row_states (void)
{
  g_autoptr (SedpFrame) f = numbers (4);
  CU_ASSERT_FALSE (sedp_frame_has_dead_rows (f));
  sedp_frame_drop_row (f, 1);
  sedp_frame_fail_row (f, 3, "bad");
  CU_ASSERT_TRUE (sedp_frame_has_dead_rows (f));
  CU_ASSERT_EQUAL (sedp_frame_get_row_state (f, 0), SEDP_ROW_LIVE);
  CU_ASSERT_EQUAL (sedp_frame_get_row_state (f, 1), SEDP_ROW_DROPPED);
  CU_ASSERT_EQUAL (sedp_frame_get_row_state (f, 3), SEDP_ROW_FAILED);
  CU_ASSERT_STRING_EQUAL (sedp_frame_get_row_message (f, 3), "bad");
  g_autoptr (SedpFrame) g = numbers (4);
  guint32 keep[] = {0, 2};
  g_autoptr (SedpFrame) h = sedp_frame_select_rows (g, keep, 2);
  g_autoptr (SedpFrame) i = sedp_frame_intersect_items (g, h);
  CU_ASSERT_EQUAL (sedp_frame_get_n_rows (i), 2);
  CU_ASSERT_TRUE (sedp_frame_same_items (i, h));
  CU_ASSERT_FALSE (sedp_frame_same_items (g, h));
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("frame", NULL, NULL);
  CU_add_test (s, "typed columns and lookups", test_columns);
  CU_add_test (s, "copy on write", test_copy_on_write);
  CU_add_test (s, "slice, select and concatenate", test_slice_select_concat);
  CU_add_test (s, "broadcast columns", test_broadcast);
  CU_add_test (s, "row states and item matching", test_row_states);
  return sedp_test_run ();
}
