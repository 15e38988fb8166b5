/* sedp fuzz targets — the replay driver: runs a target's LLVMFuzzerTestOneInput() on every file of
 * the folders (or files) named on the command line, in name order, as libFuzzer would on its
 * corpus; the test suite runs it over tests/fuzz/corpus/TARGET (tests/fuzz/meson.build). A
 * crash, sanitizer report or valgrind error fails the test; the output names each input before
 * it runs, so the last name printed is the one that failed. */
#include "fuzz-common.h"

#include <stdio.h>
#include <string.h>

/* Defined by the targets that need one-time setup. */
int LLVMFuzzerInitialize (int *argc, char ***argv) __attribute__ ((weak));

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* Runs the target on one file; FALSE when it cannot be read. */
static gboolean
replay_file (const char *path)
{
  g_autofree char *data = NULL;
  gsize size = 0;
  g_autoptr (GError) error = NULL;
  if (!g_file_get_contents (path, &data, &size, &error)) {
    fprintf (stderr, "replay: %s\n", error->message);
    return FALSE;
  }
  printf ("replay: %s (%" G_GSIZE_FORMAT " bytes)\n", path, size);
  fflush (stdout);
  /* A copy of its own size, as libFuzzer passes: reads past the end show under ASan. */
  g_autofree guint8 *copy = g_malloc (MAX (size, 1));
  memcpy (copy, data, size);
  LLVMFuzzerTestOneInput (copy, size);
  return TRUE;
}

/* Runs the target on every file of @dir; the number of inputs, or -1. */
static int
replay_dir (const char *dir)
{
  g_autoptr (GError) error = NULL;
  GDir *d = g_dir_open (dir, 0, &error);
  if (d == NULL) {
    fprintf (stderr, "replay: %s\n", error->message);
    return -1;
  }
  g_autoptr (GPtrArray) paths = g_ptr_array_new_with_free_func (g_free);
  const char *name;
  while ((name = g_dir_read_name (d)) != NULL)
    if (name[0] != '.')
      g_ptr_array_add (paths, g_build_filename (dir, name, NULL));
  g_dir_close (d);
  g_ptr_array_sort (paths, compare_names);
  for (guint i = 0; i < paths->len; i++)
    if (!replay_file (paths->pdata[i]))
      return -1;
  return (int) paths->len;
}

int
main (int argc, char **argv)
{
  if (argc < 2) {
    fprintf (stderr, "usage: %s CORPUS-DIR|FILE...\n", argv[0]);
    return 2;
  }
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize (&argc, &argv);
  int total = 0;
  for (int i = 1; i < argc; i++) {
    int n = 1;
    if (g_file_test (argv[i], G_FILE_TEST_IS_DIR))
      n = replay_dir (argv[i]);
    else if (!replay_file (argv[i]))
      n = -1;
    if (n < 0)
      return 1;
    total += n;
  }
  printf ("replay: %d inputs, no crash\n", total);
  return total > 0 ? 0 : 1;
}
