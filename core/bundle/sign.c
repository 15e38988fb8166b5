/* sedp — bundles: Ed25519 keys and signatures (libsodium crypto_sign). The signature covers
 * "sedp-bundle-signature 1\n" NAME "\n" VERSION "\n" and the bytes of manifest.json, so the
 * digest of every file, and the name and version a second time: a signed bundle renamed to
 * another version fails. Key files and manifest.sig are one line of hex. */
#include "bundle-private.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

G_STATIC_ASSERT (crypto_sign_PUBLICKEYBYTES == SEDP_BUNDLE_PUBLIC_KEY_BYTES);
G_STATIC_ASSERT (crypto_sign_SECRETKEYBYTES == SEDP_BUNDLE_SECRET_KEY_BYTES);
G_STATIC_ASSERT (crypto_sign_BYTES == SEDP_BUNDLE_SIGNATURE_BYTES);

#define SIGNATURE_PREFIX "ed25519 "
/* Key and signature files are one short line; anything larger is not one. */
#define MAX_LINE_FILE 1024

/* ---- key files --------------------------------------------------------------------------- */

/* Writes @text into the new file @path (O_EXCL) of @mode; on failure nothing is left. */
static gboolean
write_new (const char *path, const char *text, int mode, GError **error)
{
  int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0 && errno == EEXIST) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST, "%s: already exists (keys are never "
                 "overwritten: choose another --out, or remove the old keys)", path);
    return FALSE;
  }
  if (fd < 0)
    return bundle_fail_errno (error, errno, "cannot create", path);
  gsize len = strlen (text);
  gboolean ok = write (fd, text, len) == (gssize) len && fsync (fd) == 0;
  int err = errno;
  ok = close (fd) == 0 && ok;
  if (ok)
    return TRUE;
  g_unlink (path);
  return bundle_fail_errno (error, err ? err : EIO, "cannot write", path);
}

gboolean
sedp_bundle_keygen (const char *prefix, GError **error)
{
  g_return_val_if_fail (prefix != NULL, FALSE);
  sedp_cube_sodium_init ();
  guint8 pk[SEDP_BUNDLE_PUBLIC_KEY_BYTES], sk[SEDP_BUNDLE_SECRET_KEY_BYTES];
  char pk_line[2 * sizeof pk + 2], sk_line[2 * sizeof sk + 2];
  crypto_sign_keypair (pk, sk);
  sedp_bundle_hex (pk, sizeof pk, pk_line);
  sedp_bundle_hex (sk, sizeof sk, sk_line);
  strcat (pk_line, "\n");
  strcat (sk_line, "\n");
  g_autofree char *secret = g_strconcat (prefix, ".secret", NULL);
  g_autofree char *public = g_strconcat (prefix, ".public", NULL);
  gboolean ok = write_new (secret, sk_line, 0600, error);
  if (ok && !write_new (public, pk_line, 0644, error)) {
    g_unlink (secret);
    ok = FALSE;
  }
  sodium_memzero (sk, sizeof sk);
  sodium_memzero (sk_line, sizeof sk_line);
  return ok;
}

/* The text of the small file @path (at most MAX_LINE_FILE bytes; SIGNATURE when larger,
 * naming it a @kind), surrounding white space removed. Free it with sodium_memzero first. */
static char *
read_line_file (const char *path, const char *kind, gsize *len, GError **error)
{
  GStatBuf st;
  if (g_stat (path, &st) != 0) {
    bundle_fail_errno (error, errno, "cannot read", path);
    return NULL;
  }
  if (st.st_size > MAX_LINE_FILE) {
    bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: %" G_GINT64_FORMAT " bytes: not %s "
                 "(that is one line of hex)", path, (gint64) st.st_size, kind);
    return NULL;
  }
  char *text = NULL;
  if (!g_file_get_contents (path, &text, len, error))
    return NULL;
  g_strstrip (text);
  *len = strlen (text);
  return text;
}

/* Reads a key file of @n bytes (@kind "secret" or "public"). */
static gboolean
read_key (const char *path, const char *kind, guint8 *key, gsize n, GError **error)
{
  g_autofree char *what = g_strdup_printf ("a %s key file", kind);
  gsize len = 0;
  char *text = read_line_file (path, what, &len, error);
  if (text == NULL)
    return FALSE;
  gboolean ok = bundle_unhex (text, len, key, n);
  if (!ok && len != 2 * n)
    bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: %" G_GSIZE_FORMAT " characters, %s "
                 "holds %" G_GSIZE_FORMAT " hex digits (the file is damaged or not a sedp %s "
                 "key: make keys with sedp model keygen)", path, len, what, 2 * n, kind);
  else if (!ok)
    bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: not hex: %s is one line of %"
                 G_GSIZE_FORMAT " hex digits (make keys with sedp model keygen)", path, what,
                 2 * n);
  sodium_memzero (text, len);
  g_free (text);
  return ok;
}

gboolean
sedp_bundle_read_secret_key (const char *path, guint8 *secret_key, GError **error)
{
  g_return_val_if_fail (path != NULL && secret_key != NULL, FALSE);
  sedp_cube_sodium_init ();
  if (!read_key (path, "secret", secret_key, SEDP_BUNDLE_SECRET_KEY_BYTES, error))
    return FALSE;
  /* libsodium's secret key is the seed and the public key: they must belong together. */
  guint8 pk[SEDP_BUNDLE_PUBLIC_KEY_BYTES], sk[SEDP_BUNDLE_SECRET_KEY_BYTES];
  crypto_sign_seed_keypair (pk, sk, secret_key);
  gboolean ok = sodium_memcmp (sk, secret_key, sizeof sk) == 0;
  sodium_memzero (sk, sizeof sk);
  if (ok)
    return TRUE;
  sodium_memzero (secret_key, SEDP_BUNDLE_SECRET_KEY_BYTES);
  return bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: the key's public half does not "
                      "belong to its seed (the file is damaged: make keys with sedp model "
                      "keygen)", path);
}

gboolean
sedp_bundle_read_public_key (const char *path, guint8 *public_key, GError **error)
{
  g_return_val_if_fail (path != NULL && public_key != NULL, FALSE);
  return read_key (path, "public", public_key, SEDP_BUNDLE_PUBLIC_KEY_BYTES, error);
}

/* ---- signatures -------------------------------------------------------------------------- */

GBytes *
sedp_bundle_signed_message (const char *name, gint64 version, GBytes *manifest)
{
  g_return_val_if_fail (name != NULL && manifest != NULL, NULL);
  g_autofree char *head = g_strdup_printf ("sedp-bundle-signature 1\n%s\n%" G_GINT64_FORMAT "\n",
                                           name, version);
  gsize size = 0;
  const guint8 *data = g_bytes_get_data (manifest, &size);
  GByteArray *message = g_byte_array_sized_new ((guint) (strlen (head) + size));
  g_byte_array_append (message, (const guint8 *) head, (guint) strlen (head));
  if (size)
    g_byte_array_append (message, data, (guint) size);
  return g_byte_array_free_to_bytes (message);
}

gboolean
sedp_bundle_sign (const char *bundle_dir, const guint8 *secret_key, GError **error)
{
  g_return_val_if_fail (bundle_dir != NULL && secret_key != NULL, FALSE);
  sedp_cube_sodium_init ();
  g_auto (BundleCheck) c = {0};
  if (!bundle_check_names (&c, bundle_dir, error) || !bundle_check_manifest (&c, error) ||
      !bundle_check_files (&c, error))
    return FALSE;
  g_autoptr (GBytes) message = sedp_bundle_signed_message (c.name, c.version, c.manifest_bytes);
  guint8 sig[SEDP_BUNDLE_SIGNATURE_BYTES];
  crypto_sign_detached (sig, NULL, g_bytes_get_data (message, NULL), g_bytes_get_size (message),
                        secret_key);
  char line[sizeof SIGNATURE_PREFIX + 2 * sizeof sig + 1] = SIGNATURE_PREFIX;
  sedp_bundle_hex (sig, sizeof sig, line + strlen (SIGNATURE_PREFIX));
  strcat (line, "\n");
  g_autofree char *path = g_build_filename (bundle_dir, SEDP_BUNDLE_SIGNATURE, NULL);
  return g_file_set_contents (path, line, -1, error);
}

/* How messages name the key: @key_name, or "the public key " and its first hex digits. */
static char *
key_label (const guint8 *public_key, const char *key_name)
{
  if (key_name)
    return g_strdup (key_name);
  char hex[2 * SEDP_BUNDLE_PUBLIC_KEY_BYTES + 1];
  sedp_bundle_hex (public_key, SEDP_BUNDLE_PUBLIC_KEY_BYTES, hex);
  return g_strdup_printf ("the public key %.16s…", hex);
}

/* Reads manifest.sig of @dir into @sig; SIGNATURE when missing or malformed. */
static gboolean
read_signature (const char *dir, const char *key, guint8 *sig, GError **error)
{
  g_autofree char *path = g_build_filename (dir, SEDP_BUNDLE_SIGNATURE, NULL);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    return bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: no %s, and a signature by %s "
                        "is required (sign the bundle with sedp model sign)", dir,
                        SEDP_BUNDLE_SIGNATURE, key);
  gsize len = 0;
  g_autofree char *text = read_line_file (path, "a signature", &len, error);
  if (text == NULL)
    return FALSE;
  const gsize prefix = strlen (SIGNATURE_PREFIX);
  if (len > prefix && strncmp (text, SIGNATURE_PREFIX, prefix) == 0 &&
      bundle_unhex (text + prefix, len - prefix, sig, SEDP_BUNDLE_SIGNATURE_BYTES))
    return TRUE;
  return bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: not a signature (it must be one "
                      "line: '" SIGNATURE_PREFIX "' and %d hex digits; the file is damaged or "
                      "truncated: sign the bundle again)", path, 2 * SEDP_BUNDLE_SIGNATURE_BYTES);
}

gboolean
sedp_bundle_check_signature (const char *bundle_dir, const char *name, gint64 version,
                             GBytes *manifest, const guint8 *public_key, const char *key_name,
                             GError **error)
{
  g_return_val_if_fail (bundle_dir && name && manifest && public_key, FALSE);
  sedp_cube_sodium_init ();
  g_autofree char *key = key_label (public_key, key_name);
  guint8 sig[SEDP_BUNDLE_SIGNATURE_BYTES];
  if (!read_signature (bundle_dir, key, sig, error))
    return FALSE;
  g_autoptr (GBytes) message = sedp_bundle_signed_message (name, version, manifest);
  if (crypto_sign_verify_detached (sig, g_bytes_get_data (message, NULL),
                                   g_bytes_get_size (message), public_key) == 0)
    return TRUE;
  return bundle_fail (error, SEDP_BUNDLE_ERROR_SIGNATURE, "%s: the signature in %s does not "
                      "verify with %s (the manifest was changed after signing, the bundle was "
                      "moved to another name or version, or another key signed it)", bundle_dir,
                      SEDP_BUNDLE_SIGNATURE, key);
}
