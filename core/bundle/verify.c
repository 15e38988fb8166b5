/* sedp — bundles: checking one as a server does before loading it (docs/model-lifecycle.md,
 * "Making and checking a bundle"): the folder names, the manifest, the files, the signature,
 * the contents — in that order, stopping at the first failure. Files are opened through the
 * bundle's canonical path; messages name them through the folder as the caller named it. The
 * contents check is in contents.c, the signature in sign.c. */
#define _GNU_SOURCE
#include "bundle-private.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void
bundle_check_clear (BundleCheck *c)
{
  g_free (c->dir);
  g_free (c->real);
  g_free (c->name);
  g_clear_pointer (&c->manifest_bytes, g_bytes_unref);
  g_clear_pointer (&c->manifest, sedp_bundle_manifest_free);
}

gboolean
bundle_check_names (BundleCheck *c, const char *dir, GError **error)
{
  c->dir = g_strdup (dir);
  c->real = realpath (dir, NULL);
  if (c->real == NULL)
    return bundle_fail_errno (error, errno, "not a bundle", dir);
  if (!g_file_test (c->real, G_FILE_TEST_IS_DIR)) {
    g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_NOTDIR, "%s: not a folder (a bundle is a "
                 "folder REPOSITORY/NAME/VERSION)", dir);
    return FALSE;
  }
  g_autofree char *base = g_path_get_basename (c->real);
  g_autofree char *parent = g_path_get_dirname (c->real);
  c->name = g_path_get_basename (parent);
  c->version = sedp_bundle_version_parse (base, error);
  if (c->version == 0 || !sedp_bundle_name_check (c->name, error)) {
    g_prefix_error (error, "%s: ", dir);
    return FALSE;
  }
  return TRUE;
}

gboolean
bundle_check_manifest (BundleCheck *c, GError **error)
{
  g_autofree char *path = g_build_filename (c->dir, SEDP_BUNDLE_MANIFEST, NULL);
  c->manifest_bytes = sedp_bundle_manifest_read (path, error);
  if (c->manifest_bytes == NULL)
    return FALSE;
  gsize size = 0;
  const char *data = g_bytes_get_data (c->manifest_bytes, &size);
  c->manifest = sedp_bundle_manifest_parse (data, size, path, error);
  if (c->manifest == NULL)
    return FALSE;
  if (strcmp (c->manifest->name, c->name) != 0)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member 'name' is '%s', the "
                        "bundle's model folder is '%s' (a bundle moved to another model is "
                        "refused: pack it again under its new name)", path, c->manifest->name,
                        c->name);
  if (c->manifest->version != c->version)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member 'version' is %"
                        G_GINT64_FORMAT ", the bundle's version folder is %" G_GINT64_FORMAT
                        " (a bundle renamed to another version is refused: pack it again as "
                        "that version)", path, c->manifest->version, c->version);
  return TRUE;
}

/* Whether the canonical path @path is inside the folder @root (canonical too). */
static gboolean
path_inside (const char *root, const char *path)
{
  gsize n = strlen (root);
  return strncmp (path, root, n) == 0 && path[n] == '/';
}

/* Listed file @f resolved: its canonical path, inside the bundle; NULL with DIGEST (missing),
 * OUTSIDE or a G_FILE_ERROR. */
static char *
resolve_listed (BundleCheck *c, const SedpBundleFile *f, const char *shown, GError **error)
{
  g_autofree char *full = g_build_filename (c->real, f->path, NULL);
  char *resolved = realpath (full, NULL);
  if (resolved == NULL && (errno == ENOENT || errno == ENOTDIR))
    bundle_fail (error, SEDP_BUNDLE_ERROR_DIGEST, "%s: missing (the manifest lists it with %"
                 G_GINT64_FORMAT " bytes: the bundle is incomplete; copy or pack it again)",
                 shown, f->size);
  else if (resolved == NULL)
    bundle_fail_errno (error, errno, "cannot resolve", shown);
  else if (!path_inside (c->real, resolved))
    bundle_fail (error, SEDP_BUNDLE_ERROR_OUTSIDE, "%s: resolves to %s, outside the bundle %s "
                 "(every file of a bundle is inside its folder: copy the file in instead of "
                 "linking to it)", shown, resolved, c->dir);
  else
    return resolved;
  free (resolved);
  return NULL;
}

/* The open file @fd against @f: a regular file of its size and digest (DIGEST). */
static gboolean
check_listed_fd (int fd, const SedpBundleFile *f, const char *shown, GError **error)
{
  struct stat st;
  if (fstat (fd, &st) != 0)
    return bundle_fail_errno (error, errno, "cannot stat", shown);
  if (!S_ISREG (st.st_mode))
    return bundle_fail (error, SEDP_BUNDLE_ERROR_DIGEST, "%s: not a regular file (the manifest "
                        "lists a file of %" G_GINT64_FORMAT " bytes)", shown, f->size);
  if ((gint64) st.st_size != f->size)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_DIGEST, "%s: %" G_GINT64_FORMAT " bytes, the "
                        "manifest lists %" G_GINT64_FORMAT " (the file was %s after packing)",
                        shown, (gint64) st.st_size, f->size,
                        (gint64) st.st_size < f->size ? "truncated" : "changed");
  guint8 digest[SEDP_BUNDLE_DIGEST_BYTES];
  if (!sedp_bundle_digest_fd (fd, shown, digest, error))
    return FALSE;
  if (sodium_memcmp (digest, f->blake2b, sizeof digest) == 0)
    return TRUE;
  char got[2 * SEDP_BUNDLE_DIGEST_BYTES + 1], want[2 * SEDP_BUNDLE_DIGEST_BYTES + 1];
  sedp_bundle_hex (digest, sizeof digest, got);
  sedp_bundle_hex (f->blake2b, sizeof digest, want);
  return bundle_fail (error, SEDP_BUNDLE_ERROR_DIGEST, "%s: BLAKE2b digest %s, the manifest "
                      "lists %s (the file was changed after packing)", shown, got, want);
}

/* One listed file: inside the bundle, regular, of its size and digest. */
static gboolean
check_listed (BundleCheck *c, const SedpBundleFile *f, GError **error)
{
  g_autofree char *shown = g_build_filename (c->dir, f->path, NULL);
  g_autofree char *resolved = resolve_listed (c, f, shown, error);
  if (resolved == NULL)
    return FALSE;
  int fd = open (resolved, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return bundle_fail_errno (error, errno, "cannot open", shown);
  gboolean ok = check_listed_fd (fd, f, shown, error);
  close (fd);
  return ok;
}

/* What the walk for unlisted files knows: the listed files and every folder above one. */
typedef struct {
  BundleCheck *check;
  GHashTable *files;   /* paths, borrowed from the manifest */
  GHashTable *folders; /* paths, owned */
} Walk;

static gboolean walk_folder (Walk *w, const char *rel, GError **error);

/* One entry @rel (a path in the bundle) met by the walk: a listed file, a folder above one
 * (walked), or refused as unlisted (DIGEST). */
static gboolean
walk_entry (Walk *w, const char *rel, GError **error)
{
  g_autofree char *full = g_build_filename (w->check->real, rel, NULL);
  struct stat st;
  if (lstat (full, &st) != 0)
    return bundle_fail_errno (error, errno, "cannot stat", full);
  gboolean folder = S_ISDIR (st.st_mode);
  if (folder && g_hash_table_contains (w->folders, rel))
    return walk_folder (w, rel, error);
  if (!folder && g_hash_table_contains (w->files, rel))
    return TRUE;
  g_autofree char *shown = g_build_filename (w->check->dir, rel, NULL);
  return bundle_fail (error, SEDP_BUNDLE_ERROR_DIGEST, "%s: a %s the manifest does not list (an "
                      "added file is refused as tampering: remove it, or pack the bundle again)",
                      shown, folder ? "folder" : "file");
}

static gboolean
walk_folder (Walk *w, const char *rel, GError **error)
{
  g_autofree char *full = rel ? g_build_filename (w->check->real, rel, NULL)
                              : g_strdup (w->check->real);
  g_autoptr (GPtrArray) names = bundle_sorted_entries (full, error);
  if (names == NULL)
    return FALSE;
  for (guint i = 0; i < names->len; i++) {
    const char *name = names->pdata[i];
    if (rel == NULL && (strcmp (name, SEDP_BUNDLE_MANIFEST) == 0 ||
                        strcmp (name, SEDP_BUNDLE_SIGNATURE) == 0))
      continue;
    g_autofree char *child = rel ? g_strconcat (rel, "/", name, NULL) : g_strdup (name);
    if (!walk_entry (w, child, error))
      return FALSE;
  }
  return TRUE;
}

/* No file or folder of the bundle is left unlisted. */
static gboolean
check_unlisted (BundleCheck *c, GError **error)
{
  Walk w = {c, g_hash_table_new (g_str_hash, g_str_equal),
            g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL)};
  for (guint i = 0; i < c->manifest->files->len; i++) {
    const SedpBundleFile *f = c->manifest->files->pdata[i];
    g_hash_table_add (w.files, f->path);
    for (const char *slash = strchr (f->path, '/'); slash; slash = strchr (slash + 1, '/'))
      g_hash_table_add (w.folders, g_strndup (f->path, (gsize) (slash - f->path)));
  }
  gboolean ok = walk_folder (&w, NULL, error);
  g_hash_table_unref (w.files);
  g_hash_table_unref (w.folders);
  return ok;
}

gboolean
bundle_check_files (BundleCheck *c, GError **error)
{
  for (guint i = 0; i < c->manifest->files->len; i++)
    if (!check_listed (c, c->manifest->files->pdata[i], error))
      return FALSE;
  return check_unlisted (c, error);
}

/* Tells @o's callback that @check passed. */
static void
report (const SedpBundleVerifyOptions *o, const char *check, const char *detail)
{
  if (o->on_check)
    o->on_check (check, detail, o->user_data);
}

/* "N files, B bytes" */
static char *
files_detail (const SedpBundleManifest *m)
{
  gint64 bytes = 0;
  for (guint i = 0; i < m->files->len; i++)
    bytes += ((const SedpBundleFile *) m->files->pdata[i])->size;
  g_autofree char *size = g_format_size ((guint64) bytes);
  return g_strdup_printf ("%u files, %s: sizes and BLAKE2b digests match, no file unlisted",
                          m->files->len, size);
}

/* Checks 1 to 3, reported. */
static gboolean
verify_files (BundleCheck *c, const char *dir, const SedpBundleVerifyOptions *o, GError **error)
{
  if (!bundle_check_names (c, dir, error))
    return FALSE;
  g_autofree char *names = g_strdup_printf ("model '%s', version %" G_GINT64_FORMAT, c->name,
                                            c->version);
  report (o, "names", names);
  if (!bundle_check_manifest (c, error))
    return FALSE;
  g_autofree char *manifest = g_strdup_printf (
      "format %d, %u files, %u cube%s, created %s", SEDP_BUNDLE_FORMAT_VERSION,
      c->manifest->files->len, c->manifest->cubes->len, c->manifest->cubes->len == 1 ? "" : "s",
      c->manifest->created);
  report (o, "manifest", manifest);
  if (!bundle_check_files (c, error))
    return FALSE;
  g_autofree char *files = files_detail (c->manifest);
  report (o, "files", files);
  return TRUE;
}

/* Check 4, reported. */
static gboolean
verify_signature (BundleCheck *c, const SedpBundleVerifyOptions *o, GError **error)
{
  if (o->public_key == NULL) {
    report (o, "signature", "not checked (no public key given)");
    return TRUE;
  }
  if (!sedp_bundle_check_signature (c->dir, c->name, c->version, c->manifest_bytes,
                                    o->public_key, o->key_name, error))
    return FALSE;
  g_autofree char *detail = g_strdup_printf ("Ed25519 signature verified%s%s",
                                             o->key_name ? " with " : "",
                                             o->key_name ? o->key_name : "");
  report (o, "signature", detail);
  return TRUE;
}

gboolean
sedp_bundle_verify_full (const char *bundle_dir, const SedpBundleVerifyOptions *options,
                         SedpBundleManifest **out, GError **error)
{
  g_return_val_if_fail (bundle_dir != NULL, FALSE);
  static const SedpBundleVerifyOptions defaults = {.contents = TRUE};
  const SedpBundleVerifyOptions *o = options ? options : &defaults;
  g_auto (BundleCheck) c = {0};
  if (!verify_files (&c, bundle_dir, o, error) || !verify_signature (&c, o, error))
    return FALSE;
  if (o->contents) {
    g_autoptr (GString) detail = g_string_new (NULL);
    if (!bundle_check_contents (&c, detail, error))
      return FALSE;
    report (o, "contents", detail->str);
  }
  if (out)
    *out = g_steal_pointer (&c.manifest);
  return TRUE;
}

gboolean
sedp_bundle_verify (const char *bundle_dir, const guint8 *public_key, SedpBundleManifest **out,
                    GError **error)
{
  SedpBundleVerifyOptions o = {.public_key = public_key, .contents = TRUE};
  return sedp_bundle_verify_full (bundle_dir, &o, out, error);
}
