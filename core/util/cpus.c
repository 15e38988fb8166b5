/* sedp — CPU lists and thread pinning (see cpus.h). */
#define _GNU_SOURCE
#include "cpus.h"

#include <errno.h>
#include <gio/gio.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static gboolean
parse_cpu (const char *s, const char *end, guint *out)
{
  if (s == end)
    return FALSE;
  guint64 v = 0;
  for (const char *p = s; p < end; p++) {
    if (!g_ascii_isdigit (*p))
      return FALSE;
    v = v * 10 + (guint64) (*p - '0');
    if (v >= CPU_SETSIZE)
      return FALSE;
  }
  *out = (guint) v;
  return TRUE;
}

guint *
sedp_cpu_list_parse (const char *text, guint *n_cpus, GError **error)
{
  g_return_val_if_fail (text != NULL && n_cpus != NULL, NULL);
  *n_cpus = 0;
  gboolean seen[CPU_SETSIZE] = {FALSE};
  g_auto (GStrv) items = g_strsplit (text, ",", -1);
  guint count = 0;
  for (guint i = 0; items[i]; i++) {
    char *item = g_strstrip (items[i]);
    const char *dash = strchr (item, '-'), *end = item + strlen (item);
    guint a, b;
    gboolean ok = dash ? parse_cpu (item, dash, &a) && parse_cpu (dash + 1, end, &b) && a <= b
                       : parse_cpu (item, end, &a) && (b = a, TRUE);
    if (!ok) {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "'%s' is not a CPU number (0 to %d) or a range A-B of them", item,
                   CPU_SETSIZE - 1);
      return NULL;
    }
    for (guint c = a; c <= b; c++)
      if (!seen[c]) {
        seen[c] = TRUE;
        count++;
      }
  }
  if (count == 0) {
    g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                         "an empty CPU list (write CPU numbers or ranges: 0,2-3)");
    return NULL;
  }
  guint *cpus = g_new (guint, count), k = 0;
  for (guint c = 0; c < CPU_SETSIZE; c++)
    if (seen[c])
      cpus[k++] = c;
  *n_cpus = count;
  return cpus;
}

gboolean
sedp_cpu_list_check (const guint *cpus, guint n_cpus, GError **error)
{
  long configured = sysconf (_SC_NPROCESSORS_CONF);
  for (guint k = 0; k < n_cpus; k++)
    if (configured > 0 && cpus[k] >= (guint) configured) {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "CPU %u does not exist (this machine has %ld, 0 to %ld)", cpus[k], configured,
                   configured - 1);
      return FALSE;
    }
  return TRUE;
}

gboolean
sedp_cpu_list_pin_thread (const guint *cpus, guint n_cpus, GError **error)
{
  cpu_set_t set;
  CPU_ZERO (&set);
  for (guint k = 0; k < n_cpus; k++)
    CPU_SET (cpus[k], &set);
  int rc = pthread_setaffinity_np (pthread_self (), sizeof set, &set);
  if (rc != 0) {
    g_autofree char *list = sedp_cpu_list_to_string (cpus, n_cpus);
    g_set_error (error, G_IO_ERROR, g_io_error_from_errno (rc), "cannot run on CPUs %s: %s",
                 list, g_strerror (rc));
    return FALSE;
  }
  return TRUE;
}

char *
sedp_cpu_list_to_string (const guint *cpus, guint n_cpus)
{
  GString *s = g_string_new (NULL);
  for (guint k = 0; k < n_cpus;) {
    guint j = k;
    while (j + 1 < n_cpus && cpus[j + 1] == cpus[j] + 1)
      j++;
    g_string_append_printf (s, "%s%u", s->len ? "," : "", cpus[k]);
    if (j > k)
      g_string_append_printf (s, "-%u", cpus[j]);
    k = j + 1;
  }
  return g_string_free (s, FALSE);
}
