/* sedp fuzz targets — shared helpers (fuzz-common.h). */
#define _GNU_SOURCE
#include "fuzz-common.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Fatal messages are printed (they are the finding), the others dropped. */
static GLogWriterOutput
fuzz_log_writer (GLogLevelFlags level, const GLogField *fields, gsize n_fields, gpointer data)
{
  if (!(level & (G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_ERROR | G_LOG_FLAG_FATAL)))
    return G_LOG_WRITER_HANDLED;
  return g_log_writer_standard_streams (level, fields, n_fields, data);
}

void
fuzz_init (void)
{
  static gsize done = 0;
  if (!g_once_init_enter (&done))
    return;
  g_log_set_always_fatal (G_LOG_FATAL_MASK | G_LOG_LEVEL_CRITICAL);
  g_log_set_writer_func (fuzz_log_writer, NULL, NULL);
  g_once_init_leave (&done, 1);
}

void
fuzz_refused (const char *what, GError *error)
{
  static int verbose = -1;
  if (verbose < 0)
    verbose = g_getenv ("SEDP_FUZZ_VERBOSE") != NULL;
  if (verbose)
    fprintf (stderr, "fuzz: %s%s%s\n", what, error ? ": " : "", error ? error->message : "");
  if (error)
    g_error_free (error);
}

static guint64
touch_column (const SedpColumn *c, guint n_rows)
{
  guint64 sum = (guint64) strlen (sedp_column_get_name (c));
  guint w = sedp_column_get_width (c);
  guint rows = sedp_column_is_broadcast (c) ? 1 : n_rows;
  gsize n = (gsize) rows * w;
  switch (sedp_column_get_column_type (c)) {
  case SEDP_COLUMN_FLOAT32: {
    const float *v = sedp_column_get_float32 (c);
    for (gsize k = 0; k < n; k++)
      sum += (guint64) (v[k] == v[k]);
    break;
  }
  case SEDP_COLUMN_INT64: {
    const gint64 *v = sedp_column_get_int64 (c);
    for (gsize k = 0; k < n; k++)
      sum += (guint64) v[k];
    break;
  }
  case SEDP_COLUMN_UINT64: {
    const guint64 *v = sedp_column_get_uint64 (c);
    for (gsize k = 0; k < n; k++)
      sum += v[k];
    break;
  }
  case SEDP_COLUMN_IDLIST:
    for (guint r = 0; r < rows; r++) {
      guint n_ids = 0;
      const guint64 *ids = sedp_column_get_ids (c, r, &n_ids);
      for (guint k = 0; k < n_ids; k++)
        sum += ids[k];
    }
    break;
  case SEDP_COLUMN_STRING:
    for (guint r = 0; r < rows; r++) {
      const char *s = sedp_column_get_string (c, r);
      sum += s ? (guint64) strlen (s) : 0;
    }
    break;
  default:
    break;
  }
  return sum;
}

guint64
fuzz_touch_frame (const SedpFrame *frame)
{
  if (frame == NULL)
    return 0;
  guint n_rows = sedp_frame_get_n_rows (frame);
  guint64 sum = n_rows;
  for (guint i = 0; i < sedp_frame_get_n_columns (frame); i++)
    sum += touch_column (sedp_frame_get_column_at (frame, i), n_rows);
  return sum;
}

guint64
fuzz_checksum_bytes (gconstpointer data, gsize size)
{
  const guint8 *p = data;
  guint64 sum = 0;
  for (gsize k = 0; p && k < size; k++)
    sum += p[k];
  return sum;
}

int
fuzz_memfd (const guint8 *data, gsize size)
{
  int fd = memfd_create ("sedp-fuzz", MFD_CLOEXEC);
  if (fd < 0)
    return -1;
  gsize done = 0;
  while (done < size) {
    ssize_t w = write (fd, data + done, size - done);
    if (w <= 0) {
      close (fd);
      return -1;
    }
    done += (gsize) w;
  }
  if (lseek (fd, 0, SEEK_SET) != 0) {
    close (fd);
    return -1;
  }
  return fd;
}

void
fuzz_clear_dir (const char *dir)
{
  GDir *d = g_dir_open (dir, 0, NULL);
  if (d == NULL)
    return;
  const char *name;
  while ((name = g_dir_read_name (d)) != NULL) {
    g_autofree char *path = g_build_filename (dir, name, NULL);
    if (!g_file_test (path, G_FILE_TEST_IS_DIR))
      g_unlink (path);
  }
  g_dir_close (d);
}

static char *tmpdir;

static void
remove_tmpdir (void)
{
  fuzz_clear_dir (tmpdir);
  g_rmdir (tmpdir);
  g_free (tmpdir);
}

const char *
fuzz_tmpdir (void)
{
  if (tmpdir == NULL) {
    g_autoptr (GError) error = NULL;
    tmpdir = g_dir_make_tmp ("sedp-fuzz-XXXXXX", &error);
    if (tmpdir == NULL)
      g_error ("fuzz: cannot make a temporary folder: %s", error->message);
    atexit (remove_tmpdir);
  }
  return tmpdir;
}

void
fuzz_decode_request (const uint8_t *data, size_t size, const char *content_type,
                     SedpProtocolFormat format)
{
  SedpFrame *request_frame = sedp_frame_new (1);
  SedpProtocolRequest request;
  GError *error = NULL;
  if (sedp_protocol_decode_request (data, size, content_type, format, 0, request_frame, &request,
                                    &error)) {
    fuzz_touch_frame (request.items);
    fuzz_touch_frame (request_frame);
    sedp_protocol_request_clear (&request);
  } else {
    g_assert (error != NULL && error->domain == SEDP_PROTOCOL_ERROR);
    fuzz_refused ("decode", error);
  }
  sedp_frame_unref (request_frame);
}
