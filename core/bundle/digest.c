/* sedp — bundles: BLAKE2b-256 digests of files, hex, and the helpers for files and folders. */
#include "bundle-private.h"

#include "../util/hex.h"

#include <errno.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

void
sedp_bundle_hex (const guint8 *bytes, gsize n, char *out)
{
  sedp_hex_encode (bytes, n, out);
}

gboolean
bundle_unhex (const char *text, gsize len, guint8 *out, gsize n)
{
  return sedp_hex_decode (text, len, out, n);
}

gboolean
bundle_fail_errno (GError **error, int err, const char *what, const char *path)
{
  g_set_error (error, G_FILE_ERROR, g_file_error_from_errno (err), "%s: %s: %s", path, what,
               g_strerror (err));
  return FALSE;
}

/* Reads up to @len bytes at the file position; returns the count (0 at the end), or -1. */
static gssize
read_some (int fd, guint8 *buf, gsize len)
{
  for (;;) {
    gssize r = read (fd, buf, len);
    if (r >= 0 || errno != EINTR)
      return r;
  }
}

gboolean
sedp_bundle_digest_fd (int fd, const char *path, guint8 *digest, GError **error)
{
  g_return_val_if_fail (fd >= 0 && path != NULL && digest != NULL, FALSE);
  sedp_cube_sodium_init ();
  if (lseek (fd, 0, SEEK_SET) < 0)
    return bundle_fail_errno (error, errno, "cannot read", path);
  g_autofree guint8 *buf = g_malloc (BUNDLE_CHUNK);
  crypto_generichash_state state;
  crypto_generichash_init (&state, NULL, 0, SEDP_BUNDLE_DIGEST_BYTES);
  gssize r;
  while ((r = read_some (fd, buf, BUNDLE_CHUNK)) > 0)
    crypto_generichash_update (&state, buf, (gsize) r);
  if (r < 0)
    return bundle_fail_errno (error, errno, "cannot read", path);
  crypto_generichash_final (&state, digest, SEDP_BUNDLE_DIGEST_BYTES);
  return TRUE;
}

/* strcmp of two elements of a GPtrArray of strings. */
static int
name_order (gconstpointer a, gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

GPtrArray *
bundle_sorted_entries (const char *path, GError **error)
{
  g_autoptr (GDir) d = g_dir_open (path, 0, error);
  if (d == NULL)
    return NULL;
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  for (const char *name; (name = g_dir_read_name (d)) != NULL;)
    g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, name_order);
  return names;
}
