/* sedp tests — the sedp binary as a child process (its exit status, standard output and standard
 * error captured), and scratch files: a temporary folder, a file written, a tree removed.
 * Include after test-common.h's build defines; needs gio (GSubprocess). */
#pragma once

#include "test-common.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <string.h>

#ifndef SEDP_BINARY
#error "SEDP_BINARY must be defined by the build"
#endif

/* What a run of sedp left. Declare it g_auto (SedpTestRun) to free the outputs. */
typedef struct {
  int status; /* the exit status, or -1 when the child did not exit normally */
  char *out;  /* everything written to standard output (never NULL after a run) */
  char *err;  /* everything written to standard error (never NULL after a run) */
} SedpTestRun;

static inline void
sedp_test_run_clear (SedpTestRun *r)
{
  g_free (r->out);
  g_free (r->err);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SedpTestRun, sedp_test_run_clear)

/* How to run sedp; a NULL SedpTestSpawn, or a field left NULL, takes the default. The child
 * always runs with LC_ALL=C and without LANGUAGE, so that its messages are the untranslated ones. */
typedef struct {
  const char *plugin_path; /* SEDP_PLUGIN_PATH of the child; NULL: the test's own */
  const char *input;       /* text written to the child's standard input, then closed */
  const char *input_path;  /* a file on the child's standard input (when @input is NULL) */
} SedpTestSpawn;

/* Runs SEDP_BINARY with the NULL-terminated arguments @args as @how says (may be NULL: standard
 * input inherited), waits for it and fills @r. Fails the test (fatally) when sedp cannot be
 * started or its output is not UTF-8. */
static inline void
sedp_test_spawn_args (SedpTestRun *r, const SedpTestSpawn *how, const char *const *args)
{
  static const SedpTestSpawn defaults = {0};
  if (how == NULL)
    how = &defaults;
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) SEDP_BINARY);
  for (const char *const *a = args; *a; a++)
    g_ptr_array_add (argv, (gpointer) *a);
  g_ptr_array_add (argv, NULL);
  GSubprocessFlags flags = G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE;
  if (how->input)
    flags |= G_SUBPROCESS_FLAGS_STDIN_PIPE;
  g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (flags);
  if (how->plugin_path)
    g_subprocess_launcher_setenv (l, "SEDP_PLUGIN_PATH", how->plugin_path, TRUE);
  g_subprocess_launcher_setenv (l, "LC_ALL", "C", TRUE);
  g_subprocess_launcher_unsetenv (l, "LANGUAGE");
  if (how->input == NULL && how->input_path)
    g_subprocess_launcher_set_stdin_file_path (l, how->input_path);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, (const char *const *) argv->pdata,
                                                            &error);
  if (p == NULL)
    fprintf (stderr, "\n  cannot run %s: %s\n", SEDP_BINARY, error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  memset (r, 0, sizeof *r);
  gboolean ok = g_subprocess_communicate_utf8 (p, how->input, NULL, &r->out, &r->err, &error);
  if (!ok)
    fprintf (stderr, "\n  cannot read the output of %s: %s\n", SEDP_BINARY, error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  r->status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
}

/* sedp_test_spawn_args with the arguments @first, @ap…, ending with NULL. */
static inline void
sedp_test_spawnv (SedpTestRun *r, const SedpTestSpawn *how, const char *first, va_list ap)
{
  g_autoptr (GPtrArray) args = g_ptr_array_new ();
  for (const char *a = first; a; a = va_arg (ap, const char *))
    g_ptr_array_add (args, (gpointer) a);
  g_ptr_array_add (args, NULL);
  sedp_test_spawn_args (r, how, (const char *const *) args->pdata);
}

/* sedp_test_spawn_args with the arguments given in the call, ending with NULL. */
G_GNUC_NULL_TERMINATED static inline void
sedp_test_spawn (SedpTestRun *r, const SedpTestSpawn *how, const char *first, ...)
{
  va_list ap;
  va_start (ap, first);
  sedp_test_spawnv (r, how, first, ap);
  va_end (ap);
}

/* Asserts that run @r exited with @code; prints its outputs when not. */
#define SEDP_ASSERT_EXIT(r, code)                                                                \
  do {                                                                                           \
    if ((r).status != (code))                                                                    \
      fprintf (stderr, "\n  exit status %d, expected %d; stdout:\n%s\nstderr:\n%s\n",             \
               (r).status, (code), (r).out, (r).err);                                            \
    CU_ASSERT_EQUAL ((r).status, (code));                                                        \
  } while (0)

/* Asserts that @text contains @needle; prints @text when not. */
#define SEDP_ASSERT_CONTAINS(text, needle)                                                       \
  do {                                                                                           \
    if (strstr ((text), (needle)) == NULL)                                                       \
      fprintf (stderr, "\n  output lacks '%s':\n%s\n", (needle), (text));                        \
    CU_ASSERT_PTR_NOT_NULL (strstr ((text), (needle)));                                          \
  } while (0)

/* A new empty folder under the system's temporary folder, named from @tmpl ("name-XXXXXX");
 * free it, and remove it with sedp_test_remove_tree. Fails the test (fatally) on errors. */
static inline char *
sedp_test_make_tmp_dir (const char *tmpl)
{
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp (tmpl, &error);
  if (dir == NULL)
    fprintf (stderr, "\n  cannot make a temporary folder: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dir);
  return dir;
}

/* Removes @path: a file, or a folder and everything in it (links are removed, not followed).
 * Returns whether @path itself was removed. */
static inline gboolean
sedp_test_remove_tree (const char *path)
{
  if (g_file_test (path, G_FILE_TEST_IS_DIR) && !g_file_test (path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *d = g_dir_open (path, 0, NULL);
    if (d) {
      const char *name;
      while ((name = g_dir_read_name (d)) != NULL) {
        g_autofree char *child = g_build_filename (path, name, NULL);
        sedp_test_remove_tree (child);
      }
      g_dir_close (d);
    }
    return g_rmdir (path) == 0;
  }
  return g_unlink (path) == 0;
}

/* Writes the @size bytes of @data to @path (@size -1: @data is a string). Fails the test
 * (fatally) on errors. */
static inline void
sedp_test_write_file (const char *path, const void *data, gssize size)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = g_file_set_contents (path, data, size, &error);
  if (!ok)
    fprintf (stderr, "\n  cannot write %s: %s\n", path, error->message);
  CU_ASSERT_FATAL (ok);
}
