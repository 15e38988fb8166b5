/* sedp — CPU lists ("0,2-3"), as the pipeline file's `cpus` keys and the --cpus options of
 * `sedp serve` and `sedp bench` write them, and pinning threads to them. */
#pragma once

#include <glib.h>

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * sedp_cpu_list_parse:
 * @text: comma-separated CPU numbers and ranges ("1", "0,2-3"); blanks around items are allowed
 * @n_cpus: (out): how many CPUs the list names (duplicates removed)
 * @error: why @text is not a CPU list ("'x' is not a CPU number or range A-B")
 *
 * Returns: (transfer full): the CPUs in ascending order, or %NULL with @error. An empty @text is
 * an error: a list names at least one CPU.
 */
SEDP_API guint *sedp_cpu_list_parse (const char *text, guint *n_cpus, GError **error);

/**
 * sedp_cpu_list_check:
 * Checks that every CPU of the list exists on this machine (is below the number of configured
 * CPUs). Returns: %FALSE with @error naming the first that does not.
 */
SEDP_API gboolean sedp_cpu_list_check (const guint *cpus, guint n_cpus, GError **error);

/**
 * sedp_cpu_list_pin_thread:
 * Restricts the calling thread to @cpus (threads it starts later inherit that).
 * Returns: %FALSE with @error when the system refuses (e.g. a CPU outside the cgroup's set).
 */
SEDP_API gboolean sedp_cpu_list_pin_thread (const guint *cpus, guint n_cpus, GError **error);

/* "0,2-3": the list written back, ranges joined (free it). */
SEDP_API char *sedp_cpu_list_to_string (const guint *cpus, guint n_cpus);

G_END_DECLS
