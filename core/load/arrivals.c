/* sedp — Poisson arrivals (see arrivals.h). */
#include "arrivals.h"

#include <math.h>

struct _SedpArrivals {
  GRand *rand;
  double rate;
  double next_us; /* the last arrival, fractional */
};

SedpArrivals *
sedp_arrivals_new (double rate, guint64 seed, gint64 start_us)
{
  g_return_val_if_fail (rate > 0, NULL);
  SedpArrivals *a = g_new0 (SedpArrivals, 1);
  guint32 words[2] = {(guint32) seed, (guint32) (seed >> 32)};
  a->rand = g_rand_new_with_seed_array (words, 2);
  a->rate = rate;
  a->next_us = (double) start_us;
  return a;
}

void
sedp_arrivals_free (SedpArrivals *a)
{
  if (a == NULL)
    return;
  g_rand_free (a->rand);
  g_free (a);
}

double
sedp_arrivals_draw_gap (SedpArrivals *a)
{
  return -log1p (-g_rand_double (a->rand)) / a->rate;
}

gint64
sedp_arrivals_next (SedpArrivals *a)
{
  a->next_us += sedp_arrivals_draw_gap (a) * (double) G_USEC_PER_SEC;
  return (gint64) ceil (a->next_us);
}
