/* sedp — bundles: making one from what `sedp model split` wrote (one *.onnx file and cube
 * folders). The source is checked first (nothing else in it, the cubes verify and share one
 * hash key, the model loads and runs on the engine); then the files are copied into
 * DEST.tmp-PID, each digested as it is copied and synced, the manifest written, and the folder
 * renamed to DEST without replacing anything, so that a watcher of the repository never sees
 * half a bundle. Any failure removes DEST.tmp-PID. */
#define _GNU_SOURCE
#include "bundle-private.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the source folder holds: paths relative to it, which are the paths in the bundle. */
typedef struct {
  const char *dir;
  char *model;
  GPtrArray *cubes; /* char * */
  GPtrArray *files; /* char *: every file to copy, the model's included */
} Source;

static void
source_clear (Source *s)
{
  g_free (s->model);
  g_clear_pointer (&s->cubes, g_ptr_array_unref);
  g_clear_pointer (&s->files, g_ptr_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Source, source_clear)

/* ---- the source ------------------------------------------------------------------------- */

/* Whether @path is (following links) a folder / a regular file. */
static gboolean
is_kind (const char *path, int kind)
{
  struct stat st;
  return stat (path, &st) == 0 && (st.st_mode & S_IFMT) == (unsigned) kind;
}

/* Cube folder @rel: every entry a regular file, listed for copying. */
static gboolean
add_cube (Source *s, const char *rel, GError **error)
{
  g_autofree char *full = g_build_filename (s->dir, rel, NULL);
  g_autoptr (GPtrArray) names = bundle_sorted_entries (full, error);
  if (names == NULL)
    return FALSE;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename (full, names->pdata[i], NULL);
    if (!is_kind (path, S_IFREG))
      return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: not a file (a cube folder holds "
                          "only the files sedp model split wrote: meta, index, block-*.bin)",
                          path);
    g_ptr_array_add (s->files, g_strconcat (rel, "/", names->pdata[i], NULL));
  }
  g_ptr_array_add (s->cubes, g_strdup (rel));
  return TRUE;
}

/* Whether folder @rel of the source is a cube (has a meta file). */
static gboolean
is_cube (const Source *s, const char *rel)
{
  g_autofree char *meta = g_build_filename (s->dir, rel, CUBE_META_FILE, NULL);
  return is_kind (meta, S_IFREG);
}

/* Folder @rel of the source: a cube, or a folder of cubes (as split writes for several dims). */
static gboolean
scan_folder (Source *s, const char *rel, GError **error)
{
  if (is_cube (s, rel))
    return add_cube (s, rel, error);
  g_autofree char *full = g_build_filename (s->dir, rel, NULL);
  g_autoptr (GPtrArray) names = bundle_sorted_entries (full, error);
  if (names == NULL)
    return FALSE;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *child = g_strconcat (rel, "/", names->pdata[i], NULL);
    g_autofree char *path = g_build_filename (s->dir, child, NULL);
    if (!is_kind (path, S_IFDIR) || !is_cube (s, child))
      return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: not a cube folder (a folder "
                          "with a meta file), in %s, a folder of cubes", path, full);
    if (!add_cube (s, child, error))
      return FALSE;
  }
  if (names->len > 0)
    return TRUE;
  return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: an empty folder (neither a cube "
                      "folder, with a meta file, nor a folder of cubes): remove it", full);
}

/* The model file @name of the source (one only). */
static gboolean
add_model (Source *s, const char *name, GError **error)
{
  if (s->model)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: two models, '%s' and '%s' (a "
                        "bundle holds one dense model: remove the other)", s->dir, s->model,
                        name);
  s->model = g_strdup (name);
  g_ptr_array_add (s->files, g_strdup (name));
  return TRUE;
}

/* One entry at the top of the source. */
static gboolean
scan_entry (Source *s, const char *name, GError **error)
{
  g_autofree char *path = g_build_filename (s->dir, name, NULL);
  if (g_str_has_suffix (name, ".onnx") && is_kind (path, S_IFREG))
    return add_model (s, name, error);
  if (is_kind (path, S_IFDIR))
    return scan_folder (s, name, error);
  return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: neither a model (*.onnx) nor a "
                      "cube folder (a pack source holds only what sedp model split wrote: move "
                      "it away)", path);
}

/* The whole source: one model, one or more cubes, every path fit for a manifest. */
static gboolean
scan_source (Source *s, GError **error)
{
  g_autoptr (GPtrArray) names = bundle_sorted_entries (s->dir, error);
  if (names == NULL)
    return FALSE;
  for (guint i = 0; i < names->len; i++)
    if (!scan_entry (s, names->pdata[i], error))
      return FALSE;
  if (s->model == NULL)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: no model (*.onnx; sedp model "
                        "split --dense writes it)", s->dir);
  if (s->cubes->len == 0)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: no cube folder (a folder with a "
                        "meta file; sedp model split --cube writes it)", s->dir);
  for (guint i = 0; i < s->files->len; i++)
    if (!sedp_bundle_path_check (s->files->pdata[i], s->dir, "files", error))
      return FALSE;
  return TRUE;
}

/* ---- checks of the source --------------------------------------------------------------- */

/* Cube @rel verifies completely; its hash key into @key. */
static gboolean
cube_key (const Source *s, const char *rel, guint8 *key, GError **error)
{
  g_autofree char *full = g_build_filename (s->dir, rel, NULL);
  g_autoptr (GError) local = NULL;
  SedpCube *cube = NULL;
  if (sedp_cube_verify (full, &local))
    cube = sedp_cube_open (full, SEDP_CUBE_VALUES_DISK, &local);
  if (cube == NULL)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: the cube does not verify: %s",
                        full, local->message);
  memcpy (key, sedp_cube_get_meta (cube)->hash_key, SEDP_BUNDLE_HASH_KEY_BYTES);
  sedp_cube_close (cube);
  return TRUE;
}

/* Every cube verifies, and all share one hash key (into @key). */
static gboolean
check_cubes (const Source *s, guint8 *key, GError **error)
{
  for (guint i = 0; i < s->cubes->len; i++) {
    guint8 k[SEDP_BUNDLE_HASH_KEY_BYTES];
    if (!cube_key (s, s->cubes->pdata[i], i ? k : key, error))
      return FALSE;
    if (i == 0 || memcmp (k, key, sizeof k) == 0)
      continue;
    char a[2 * sizeof k + 1], b[2 * sizeof k + 1];
    sedp_bundle_hex (key, sizeof k, a);
    sedp_bundle_hex (k, sizeof k, b);
    return bundle_fail (error, SEDP_BUNDLE_ERROR_CONTENT, "%s: cube '%s' has hash key %s, cube "
                        "'%s' has %s (a bundle's cubes share one key: split the model once)",
                        s->dir, (const char *) s->cubes->pdata[0], a,
                        (const char *) s->cubes->pdata[i], b);
  }
  return TRUE;
}

/* The model loads and runs on the engine; its inputs and outputs into @m. */
static gboolean
check_model (const Source *s, SedpBundleManifest *m, GError **error)
{
  g_autofree char *full = g_build_filename (s->dir, s->model, NULL);
  return bundle_model_tensors (full, full, m->inputs, m->outputs, error);
}

/* ---- writing ---------------------------------------------------------------------------- */

static gboolean
write_all (int fd, const guint8 *p, gsize len, const char *path, GError **error)
{
  while (len > 0) {
    gssize w = write (fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return bundle_fail_errno (error, errno, "cannot write", path);
    p += w;
    len -= (gsize) w;
  }
  return TRUE;
}

/* FALSE with G_IO_ERROR_CANCELLED once *@stop is set. */
static gboolean
not_stopped (const volatile sig_atomic_t *stop, GError **error)
{
  if (stop == NULL || *stop == 0)
    return TRUE;
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "interrupted (signal %d); nothing was "
               "written", (int) *stop);
  return FALSE;
}

/* Copies @in to @out (@to names it), digesting the bytes; their count into @size. */
static gboolean
copy_stream (int in, int out, const char *from, const char *to,
             const volatile sig_atomic_t *stop, gint64 *size, guint8 *digest, GError **error)
{
  g_autofree guint8 *buf = g_malloc (BUNDLE_CHUNK);
  crypto_generichash_state state;
  crypto_generichash_init (&state, NULL, 0, SEDP_BUNDLE_DIGEST_BYTES);
  *size = 0;
  for (;;) {
    gssize r = read (in, buf, BUNDLE_CHUNK);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return bundle_fail_errno (error, errno, "cannot read", from);
    if (r == 0)
      break;
    crypto_generichash_update (&state, buf, (gsize) r);
    *size += r;
    if (!write_all (out, buf, (gsize) r, to, error) || !not_stopped (stop, error))
      return FALSE;
  }
  crypto_generichash_final (&state, digest, SEDP_BUNDLE_DIGEST_BYTES);
  return fsync (out) == 0 || bundle_fail_errno (error, errno, "cannot sync", to);
}

/* Copies file @rel of the source into @tmp, and lists it in @m. */
static gboolean
copy_file (const Source *s, const char *rel, const char *tmp, SedpBundleManifest *m,
           const volatile sig_atomic_t *stop, GError **error)
{
  g_autofree char *from = g_build_filename (s->dir, rel, NULL);
  g_autofree char *to = g_build_filename (tmp, rel, NULL);
  g_autofree char *folder = g_path_get_dirname (to);
  if (g_mkdir_with_parents (folder, 0755) != 0)
    return bundle_fail_errno (error, errno, "cannot make the folder", folder);
  int in = open (from, O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return bundle_fail_errno (error, errno, "cannot open", from);
  int out = open (to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  gint64 size = 0;
  guint8 digest[SEDP_BUNDLE_DIGEST_BYTES];
  gboolean ok = out >= 0 ? copy_stream (in, out, from, to, stop, &size, digest, error)
                         : bundle_fail_errno (error, errno, "cannot create", to);
  close (in);
  if (out >= 0 && close (out) != 0 && ok)
    ok = bundle_fail_errno (error, errno, "cannot write", to);
  if (ok)
    sedp_bundle_manifest_add_file (m, rel, size, digest);
  return ok;
}

/* Writes manifest.json into @tmp. */
static gboolean
write_manifest (const SedpBundleManifest *m, const char *tmp, GError **error)
{
  g_autofree char *path = g_build_filename (tmp, SEDP_BUNDLE_MANIFEST, NULL);
  g_autofree char *text = sedp_bundle_manifest_to_string (m);
  int fd = open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    return bundle_fail_errno (error, errno, "cannot create", path);
  gboolean ok = write_all (fd, (const guint8 *) text, strlen (text), path, error) &&
                (fsync (fd) == 0 || bundle_fail_errno (error, errno, "cannot sync", path));
  if (close (fd) != 0 && ok)
    ok = bundle_fail_errno (error, errno, "cannot write", path);
  return ok;
}

/* Syncs folder @path, so that the entries made in it last. */
static gboolean
sync_folder (const char *path, GError **error)
{
  int fd = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return bundle_fail_errno (error, errno, "cannot open", path);
  gboolean ok = fsync (fd) == 0 || bundle_fail_errno (error, errno, "cannot sync", path);
  close (fd);
  return ok;
}

/* Every file, the manifest, then the folders of @tmp, synced. */
static gboolean
write_bundle (const Source *s, SedpBundleManifest *m, const char *tmp,
              const volatile sig_atomic_t *stop, GError **error)
{
  for (guint i = 0; i < s->files->len; i++)
    if (!copy_file (s, s->files->pdata[i], tmp, m, stop, error))
      return FALSE;
  if (!write_manifest (m, tmp, error))
    return FALSE;
  for (guint i = 0; i < s->cubes->len; i++) {
    g_autofree char *cube = g_build_filename (tmp, s->cubes->pdata[i], NULL);
    g_autofree char *above = g_path_get_dirname (cube);
    if (!sync_folder (cube, error) || !sync_folder (above, error))
      return FALSE;
  }
  return sync_folder (tmp, error);
}

/* Removes @path and everything under it (links removed, not followed). */
static void
remove_tree (const char *path)
{
  struct stat st;
  if (lstat (path, &st) == 0 && S_ISDIR (st.st_mode)) {
    g_autoptr (GPtrArray) names = bundle_sorted_entries (path, NULL);
    for (guint i = 0; names && i < names->len; i++) {
      g_autofree char *child = g_build_filename (path, names->pdata[i], NULL);
      remove_tree (child);
    }
    g_rmdir (path);
  } else {
    g_unlink (path);
  }
}

/* G_FILE_ERROR_EXIST for an existing @dest. */
static gboolean
refuse_existing (const char *dest, GError **error)
{
  g_set_error (error, G_FILE_ERROR, G_FILE_ERROR_EXIST, "%s: already exists (a version is never "
               "replaced: pack a new version)", dest);
  return FALSE;
}

/* Renames @tmp to @dest, which must not exist, and syncs the folder above. */
static gboolean
move_into_place (const char *tmp, const char *dest, GError **error)
{
  int r = renameat2 (AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE);
  if (r != 0 && (errno == EINVAL || errno == ENOSYS)) {
    /* A file system without RENAME_NOREPLACE: check, then rename (a narrow race). */
    if (g_file_test (dest, G_FILE_TEST_EXISTS) || g_file_test (dest, G_FILE_TEST_IS_SYMLINK))
      return refuse_existing (dest, error);
    r = rename (tmp, dest);
  }
  if (r != 0 && (errno == EEXIST || errno == ENOTEMPTY))
    return refuse_existing (dest, error);
  if (r != 0)
    return bundle_fail_errno (error, errno, "cannot rename into place", tmp);
  g_autofree char *above = g_path_get_dirname (dest);
  return sync_folder (above, error);
}

/* ---- pack ------------------------------------------------------------------------------- */

/* The options make sense: a valid name and version, one destination. */
static gboolean
check_options (const SedpBundlePackOptions *o, GError **error)
{
  if (!sedp_bundle_name_check (o->name, error))
    return FALSE;
  if (o->version < 1)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_BAD_NAME, "version %" G_GINT64_FORMAT " is not "
                        "a version (a version is a number from 1 to 9223372036854775807)",
                        o->version);
  g_return_val_if_fail ((o->repository == NULL) != (o->out == NULL), FALSE);
  return TRUE;
}

/* Name, version, the creation time, the model and cubes of @s into @m. */
static void
describe (const Source *s, const SedpBundlePackOptions *o, SedpBundleManifest *m)
{
  g_autoptr (GDateTime) now = g_date_time_new_now_utc ();
  m->name = g_strdup (o->name);
  m->version = o->version;
  m->created = g_date_time_format (now, "%Y-%m-%dT%H:%M:%SZ");
  m->model = g_strdup (s->model);
  for (guint i = 0; i < s->cubes->len; i++)
    g_ptr_array_add (m->cubes, g_strdup (s->cubes->pdata[i]));
}

/* The bundle's folder; DEST.tmp-PID made next to it (the folders above too). */
static char *
make_tmp (const SedpBundlePackOptions *o, char **tmp, GError **error)
{
  g_autofree char *version = g_strdup_printf ("%" G_GINT64_FORMAT, o->version);
  g_autofree char *dest = o->repository ? g_build_filename (o->repository, o->name, version, NULL)
                                        : g_strdup (o->out);
  g_autofree char *above = g_path_get_dirname (dest);
  if (g_file_test (dest, G_FILE_TEST_EXISTS) || g_file_test (dest, G_FILE_TEST_IS_SYMLINK)) {
    refuse_existing (dest, error);
    return NULL;
  }
  if (g_mkdir_with_parents (above, 0755) != 0) {
    bundle_fail_errno (error, errno, "cannot make the folder", above);
    return NULL;
  }
  *tmp = g_strdup_printf ("%s.tmp-%d", dest, (int) getpid ());
  if (g_mkdir (*tmp, 0755) == 0)
    return g_steal_pointer (&dest);
  bundle_fail_errno (error, errno, "cannot make the folder", *tmp);
  g_clear_pointer (tmp, g_free);
  return NULL;
}

char *
sedp_bundle_pack (const char *source, const SedpBundlePackOptions *options,
                  SedpBundleManifest **manifest, GError **error)
{
  g_return_val_if_fail (source != NULL && options != NULL && options->name != NULL, NULL);
  if (!check_options (options, error))
    return NULL;
  g_auto (Source) s = {source, NULL, g_ptr_array_new_with_free_func (g_free),
                       g_ptr_array_new_with_free_func (g_free)};
  g_autoptr (SedpBundleManifest) m = sedp_bundle_manifest_new ();
  if (!scan_source (&s, error) || !check_cubes (&s, m->hash_key, error) ||
      !check_model (&s, m, error))
    return NULL;
  describe (&s, options, m);
  g_autofree char *tmp = NULL;
  g_autofree char *dest = make_tmp (options, &tmp, error);
  if (dest == NULL)
    return NULL;
  if (!write_bundle (&s, m, tmp, options->interrupted, error) ||
      !move_into_place (tmp, dest, error)) {
    remove_tree (tmp);
    return NULL;
  }
  if (manifest)
    *manifest = g_steal_pointer (&m);
  return g_steal_pointer (&dest);
}
