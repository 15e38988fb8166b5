/* sedp channel tests: bounds, batches, linger, close, many producers and consumers. */
#include "test-common.h"

#include "runtime/channel.h"

static void
test_bounds (void)
{
  SedpChannel *ch = sedp_channel_new (3, 0);
  CU_ASSERT_TRUE (sedp_channel_try_push (ch, GINT_TO_POINTER (1)));
  CU_ASSERT_TRUE (sedp_channel_try_push (ch, GINT_TO_POINTER (2)));
  CU_ASSERT_TRUE (sedp_channel_try_push (ch, GINT_TO_POINTER (3)));
  CU_ASSERT_FALSE (sedp_channel_try_push (ch, GINT_TO_POINTER (4)));
  CU_ASSERT_EQUAL (sedp_channel_length (ch), 3);
  gpointer out[8];
  CU_ASSERT_EQUAL (sedp_channel_pop_batch (ch, out, 2, 0), 2);
  CU_ASSERT_EQUAL (GPOINTER_TO_INT (out[0]), 1);
  CU_ASSERT_EQUAL (GPOINTER_TO_INT (out[1]), 2);
  CU_ASSERT_TRUE (sedp_channel_try_push (ch, GINT_TO_POINTER (5)));
  CU_ASSERT_EQUAL (sedp_channel_pop_batch (ch, out, 8, 0), 2);
  CU_ASSERT_EQUAL (GPOINTER_TO_INT (out[0]), 3);
  CU_ASSERT_EQUAL (GPOINTER_TO_INT (out[1]), 5);
  sedp_channel_free (ch);
}

static void
test_linger (void)
{
  SedpChannel *ch = sedp_channel_new (16, 0);
  gpointer out[8];
  sedp_channel_push (ch, GINT_TO_POINTER (1));
  gint64 t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_channel_pop_batch (ch, out, 8, 50000), 1);
  gint64 dt = g_get_monotonic_time () - t0;
  CU_ASSERT (dt >= 45000);
  for (int i = 0; i < 8; i++)
    sedp_channel_push (ch, GINT_TO_POINTER (i + 1));
  t0 = g_get_monotonic_time ();
  CU_ASSERT_EQUAL (sedp_channel_pop_batch (ch, out, 8, 1000000), 8);
  CU_ASSERT (g_get_monotonic_time () - t0 < 500000);
  sedp_channel_free (ch);
}

static void
test_close (void)
{
  SedpChannel *ch = sedp_channel_new (4, 0);
  gpointer out[4];
  sedp_channel_push (ch, GINT_TO_POINTER (1));
  sedp_channel_close (ch);
  CU_ASSERT_FALSE (sedp_channel_push (ch, GINT_TO_POINTER (2)));
  CU_ASSERT_FALSE (sedp_channel_try_push (ch, GINT_TO_POINTER (2)));
  CU_ASSERT_EQUAL (sedp_channel_pop_batch (ch, out, 4, 100000), 1);
  CU_ASSERT_EQUAL (sedp_channel_pop_batch (ch, out, 4, 0), 0);
  sedp_channel_free (ch);
}

typedef struct {
  SedpChannel *ch;
  guint64 sum;
  guint count;
} Worker;

#define PER_PRODUCER 20000

static gpointer
producer (gpointer data)
{
  Worker *w = data;
  for (guint i = 1; i <= PER_PRODUCER; i++)
    sedp_channel_push (w->ch, GUINT_TO_POINTER (i));
  return NULL;
}

static gpointer
consumer (gpointer data)
{
  Worker *w = data;
  gpointer out[7];
  guint n;
  while ((n = sedp_channel_pop_batch (w->ch, out, 7, 100)) > 0)
    for (guint i = 0; i < n; i++) {
      w->sum += GPOINTER_TO_UINT (out[i]);
      w->count++;
    }
  return NULL;
}

static void
test_mpmc (void)
{
  SedpChannel *ch = sedp_channel_new (8, 20);
  Worker p[3], c[3];
  GThread *pt[3], *ct[3];
  for (int i = 0; i < 3; i++) {
    c[i] = (Worker){ch, 0, 0};
    ct[i] = g_thread_new ("c", consumer, &c[i]);
  }
  for (int i = 0; i < 3; i++) {
    p[i] = (Worker){ch, 0, 0};
    pt[i] = g_thread_new ("p", producer, &p[i]);
  }
  for (int i = 0; i < 3; i++)
    g_thread_join (pt[i]);
  sedp_channel_close (ch);
  guint64 sum = 0;
  guint count = 0;
  for (int i = 0; i < 3; i++) {
    g_thread_join (ct[i]);
    sum += c[i].sum;
    count += c[i].count;
  }
  CU_ASSERT_EQUAL (count, 3 * PER_PRODUCER);
  CU_ASSERT_EQUAL (sum, 3ull * PER_PRODUCER * (PER_PRODUCER + 1) / 2);
  sedp_channel_free (ch);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("channel", NULL, NULL);
  CU_add_test (s, "bounded, FIFO, batches", test_bounds);
  CU_add_test (s, "linger waits for a fuller batch", test_linger);
  CU_add_test (s, "close", test_close);
  CU_add_test (s, "many producers and consumers lose nothing", test_mpmc);
  return sedp_test_run ();
}
