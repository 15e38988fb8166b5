/* sedp tests — model bundles (docs/model-lifecycle.md): a bundle packed from a synthetic model
 * and a cube verifies, with and without a key; each refusal of the doc's table gives its error
 * code and a message naming the file or member, on a copy of that bundle damaged one way
 * (truncated model, with and without its manifest entry rewritten; missing, changed, added,
 * removed and renamed files; malformed manifests; folders that do not match; symbolic links
 * and paths leaving the bundle; missing, wrong and stale signatures; bad key files); the
 * downgrade rule; pack's refusals; and the sedp model commands end to end, from `sedp model
 * split` of a model with tables of two dims. */
#define _GNU_SOURCE
#include "test-spawn.h"

#include "bundle/bundle.h"
#include "cube/cube.h"
#include "nn/model.h"
#include "nn/synth.h"

#include <glib/gstdio.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES] = {
  0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
#define HASH_HEX "00112233445566778899aabbccddeeff"

static char *root;        /* the suite's temporary folder */
static char *good;        /* ROOT/repo/ctr/7: the bundle every test copies */
static guint cases;       /* copies made so far */

/* ---- fixtures ---- */

static char *
at (const char *dir, const char *rel)
{
  return g_build_filename (dir, rel, NULL);
}

/* Prints @error (when set) and returns whether @ok. Usable outside tests (suite set-up). */
static gboolean
fixture_ok (gboolean ok, const char *what, const GError *error)
{
  if (!ok)
    fprintf (stderr, "\n  %s: %s\n", what, error ? error->message : "failed");
  return ok;
}

/* A cube of @n keys of @dim into @dir, with hash key @key, in blocks of 32 values. */
static gboolean
build_cube (const char *dir, guint n, guint dim, const guint8 *key)
{
  g_autoptr (GError) error = NULL;
  SedpCubeBuilder *b = sedp_cube_builder_new (dir, "test", dim, key, 32 * 4 * dim, &error);
  if (b == NULL)
    return fixture_ok (FALSE, dir, error);
  g_autofree float *v = g_new0 (float, dim);
  for (guint i = 0; i < n; i++) {
    v[0] = (float) i;
    if (!sedp_cube_builder_add (b, (guint64) i * 7919u + 1, v, &error)) {
      sedp_cube_builder_abort (b);
      return fixture_ok (FALSE, dir, error);
    }
  }
  return fixture_ok (sedp_cube_builder_finish (b, &error), dir, error);
}

/* A pack source in @dir: dense.onnx (synthetic mlp) and the cube folder(s) @cubes
 * (NULL-terminated paths; the first of dim 8, the others of dim 1), each with hash key @key. */
static gboolean
make_source (const char *dir, const char *const *cubes, const guint8 *key)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpNnModel) model = NULL;
  g_autofree char *onnx = at (dir, "dense.onnx");
  if (g_mkdir_with_parents (dir, 0755) != 0 ||
      (model = sedp_nn_synth ("mlp", 3, NULL, &error)) == NULL ||
      !sedp_nn_model_save (model, onnx, &error))
    return fixture_ok (FALSE, dir, error);
  for (guint i = 0; cubes[i]; i++) {
    g_autofree char *cube = at (dir, cubes[i]);
    g_autofree char *above = g_path_get_dirname (cube);
    if (g_mkdir_with_parents (above, 0755) != 0 || !build_cube (cube, 300, i ? 1 : 8, key))
      return fixture_ok (FALSE, cube, NULL);
  }
  return TRUE;
}

/* Packs @source as NAME/VERSION into @repo; returns the bundle's folder. */
static char *
pack (const char *source, const char *repo, const char *name, gint64 version, GError **error)
{
  SedpBundlePackOptions o = {name, version, repo, NULL, NULL};
  return sedp_bundle_pack (source, &o, NULL, error);
}

static int
suite_init (void)
{
  root = g_dir_make_tmp ("sedp-bundle-test-XXXXXX", NULL);
  if (root == NULL)
    return 1;
  g_autofree char *src = at (root, "src");
  g_autofree char *repo = at (root, "repo");
  static const char *const one[] = {"cube", NULL};
  if (!make_source (src, one, hash_key))
    return 1;
  g_autoptr (GError) error = NULL;
  good = pack (src, repo, "ctr", 7, &error);
  if (good == NULL)
    fprintf (stderr, "\n  pack: %s\n", error->message);
  return good ? 0 : 1;
}

static int
suite_clean (void)
{
  if (root)
    sedp_test_remove_tree (root);
  g_clear_pointer (&root, g_free);
  g_clear_pointer (&good, g_free);
  return 0;
}

/* Copies the tree @from to @to (links copied as links). */
static void
copy_tree (const char *from, const char *to)
{
  if (g_file_test (from, G_FILE_TEST_IS_SYMLINK)) {
    g_autofree char *target = g_file_read_link (from, NULL);
    CU_ASSERT_EQUAL_FATAL (symlink (target, to), 0);
    return;
  }
  if (!g_file_test (from, G_FILE_TEST_IS_DIR)) {
    g_autofree char *data = NULL;
    gsize len = 0;
    CU_ASSERT_TRUE_FATAL (g_file_get_contents (from, &data, &len, NULL));
    sedp_test_write_file (to, data, (gssize) len);
    return;
  }
  CU_ASSERT_EQUAL_FATAL (g_mkdir_with_parents (to, 0755), 0);
  GDir *d = g_dir_open (from, 0, NULL);
  for (const char *name; (name = g_dir_read_name (d)) != NULL;) {
    g_autofree char *a = at (from, name), *b = at (to, name);
    copy_tree (a, b);
  }
  g_dir_close (d);
}

/* A fresh copy of the good bundle at ROOT/case-N/@name/@version; free it. */
static char *
copy_as (const char *name, const char *version)
{
  g_autofree char *dir = g_strdup_printf ("case-%u", ++cases);
  char *bundle = g_build_filename (root, dir, name, version, NULL);
  copy_tree (good, bundle);
  return bundle;
}

static char *
copy_good (void)
{
  return copy_as ("ctr", "7");
}

/* The text of file @path (free it). */
static char *
read_text (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *data = NULL;
  if (!g_file_get_contents (path, &data, NULL, &error)) {
    fprintf (stderr, "\n  %s\n", error->message);
    data = g_strdup ("");
  }
  CU_ASSERT_PTR_NULL (error);
  return data;
}

/* The manifest text of @bundle (free it). */
static char *
manifest_text (const char *bundle)
{
  g_autofree char *path = at (bundle, SEDP_BUNDLE_MANIFEST);
  return read_text (path);
}

static void
set_manifest_text (const char *bundle, const char *text)
{
  g_autofree char *path = at (bundle, SEDP_BUNDLE_MANIFEST);
  sedp_test_write_file (path, text, -1);
}

/* Replaces the first @from of @bundle's manifest by @to (which must be there). */
static void
edit_manifest (const char *bundle, const char *from, const char *to)
{
  g_autofree char *text = manifest_text (bundle);
  const char *hit = strstr (text, from);
  if (hit == NULL)
    fprintf (stderr, "\n  the manifest lacks '%s'\n", from);
  CU_ASSERT_PTR_NOT_NULL_FATAL (hit);
  gsize offset = (gsize) (hit - text);
  g_autoptr (GString) edited = g_string_new_len (text, (gssize) offset);
  g_string_append (edited, to);
  g_string_append (edited, text + offset + strlen (from));
  set_manifest_text (bundle, edited->str);
}

/* The parsed manifest of @bundle. */
static SedpBundleManifest *
load_manifest (const char *bundle)
{
  g_autofree char *text = manifest_text (bundle);
  g_autoptr (GError) error = NULL;
  SedpBundleManifest *m = sedp_bundle_manifest_parse (text, strlen (text), "test", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  return m;
}

/* Writes @m as @bundle's manifest. */
static void
store_manifest (const char *bundle, const SedpBundleManifest *m)
{
  g_autofree char *text = sedp_bundle_manifest_to_string (m);
  set_manifest_text (bundle, text);
}

/* Sets the size and digest of @rel in @bundle's manifest to those of the file now. */
static void
relist (const char *bundle, const char *rel)
{
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  SedpBundleFile *f = (SedpBundleFile *) sedp_bundle_manifest_find_file (m, rel);
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  g_autofree char *path = at (bundle, rel);
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  f->size = (gint64) len;
  crypto_generichash (f->blake2b, SEDP_BUNDLE_DIGEST_BYTES, (const guint8 *) data, len, NULL, 0);
  store_manifest (bundle, m);
}

/* Removes @rel from @bundle's files list. */
static void
unlist (const char *bundle, const char *rel)
{
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  const SedpBundleFile *f = sedp_bundle_manifest_find_file (m, rel);
  CU_ASSERT_PTR_NOT_NULL_FATAL (f);
  g_ptr_array_remove (m->files, (gpointer) f);
  store_manifest (bundle, m);
}

static void
truncate_file (const char *path, gsize keep)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  CU_ASSERT_FATAL (keep < len);
  sedp_test_write_file (path, data, (gssize) keep);
}

static void
flip_byte (const char *path, gsize offset)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (path, &data, &len, NULL));
  CU_ASSERT_FATAL (offset < len);
  data[offset] ^= 0x01;
  sedp_test_write_file (path, data, (gssize) len);
}

/* Verifies @bundle (with @key, nullable) expecting error @code with every needle. */
#define ASSERT_REFUSED(bundle, key, expected, ...)                                               \
  do {                                                                                           \
    g_autoptr (GError) _e = NULL;                                                                \
    gboolean _ok = sedp_bundle_verify ((bundle), (key), NULL, &_e);                              \
    CU_ASSERT_FALSE (_ok);                                                                       \
    if (!_ok) {                                                                                  \
      SEDP_ASSERT_ERROR (_e, SEDP_BUNDLE_ERROR, __VA_ARGS__);                                    \
      if (_e->code != (int) (expected))                                                          \
        fprintf (stderr, "\n  code %d, expected %d: %s\n", _e->code, (int) (expected),           \
                 _e->message);                                                                   \
      CU_ASSERT_EQUAL (_e->code, (int) (expected));                                              \
    }                                                                                            \
  } while (0)

/* Verifies @bundle (with @key, nullable), expecting success. */
static void
assert_verifies (const char *bundle, const guint8 *key)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = sedp_bundle_verify (bundle, key, NULL, &error);
  if (!ok)
    fprintf (stderr, "\n  %s: %s\n", bundle, error->message);
  CU_ASSERT_TRUE (ok);
}

/* A new key pair under ROOT/keys-N: secret and public key bytes. */
static void
make_keys (guint8 *secret, guint8 *public)
{
  g_autofree char *name = g_strdup_printf ("keys-%u", ++cases);
  g_autofree char *prefix = at (root, name);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (sedp_bundle_keygen (prefix, &error));
  g_autofree char *s = g_strconcat (prefix, ".secret", NULL);
  g_autofree char *p = g_strconcat (prefix, ".public", NULL);
  CU_ASSERT_TRUE_FATAL (sedp_bundle_read_secret_key (s, secret, &error));
  CU_ASSERT_TRUE_FATAL (sedp_bundle_read_public_key (p, public, &error));
}

static void
sign (const char *bundle, const guint8 *secret)
{
  g_autoptr (GError) error = NULL;
  gboolean ok = sedp_bundle_sign (bundle, secret, &error);
  if (!ok)
    fprintf (stderr, "\n  sign: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
}

/* ---- a good bundle ---- */

static void
record_check (const char *check, const char *detail, gpointer user_data)
{
  CU_ASSERT_PTR_NOT_NULL (detail);
  g_ptr_array_add (user_data, g_strdup (check));
}

static void
test_good_verifies (void)
{
  g_autoptr (GPtrArray) checks = g_ptr_array_new_with_free_func (g_free);
  SedpBundleVerifyOptions o = {.contents = TRUE, .on_check = record_check, .user_data = checks};
  g_autoptr (SedpBundleManifest) m = NULL;
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (sedp_bundle_verify_full (good, &o, &m, &error));
  static const char *const order[] = {"names", "manifest", "files", "signature", "contents"};
  CU_ASSERT_EQUAL_FATAL (checks->len, G_N_ELEMENTS (order));
  for (guint i = 0; i < checks->len; i++)
    CU_ASSERT_STRING_EQUAL (checks->pdata[i], order[i]);
  CU_ASSERT_STRING_EQUAL (m->name, "ctr");
  CU_ASSERT_EQUAL (m->version, 7);
  CU_ASSERT_STRING_EQUAL (m->model, "dense.onnx");
  CU_ASSERT_EQUAL_FATAL (m->cubes->len, 1);
  CU_ASSERT_STRING_EQUAL (m->cubes->pdata[0], "cube");
  CU_ASSERT_EQUAL (memcmp (m->hash_key, hash_key, sizeof hash_key), 0);
  /* dense.onnx, cube/meta, cube/index and the cube's 10 blocks of 32 keys. */
  CU_ASSERT_EQUAL (m->files->len, 13);
  CU_ASSERT_PTR_NOT_NULL (sedp_bundle_manifest_find_file (m, "cube/block-00009.bin"));
  const SedpBundleTensor *in0 = m->inputs->pdata[0];
  CU_ASSERT_STRING_EQUAL (in0->name, "dense");
  CU_ASSERT_STRING_EQUAL (in0->dtype, "float32");
  CU_ASSERT_EQUAL_FATAL (in0->rank, 2);
  CU_ASSERT_EQUAL (in0->shape[0], -1);
}

/* The written manifest: documented member order, files sorted, parse ∘ write the identity. */
static void
test_manifest_round_trip (void)
{
  g_autofree char *text = manifest_text (good);
  CU_ASSERT_TRUE (g_str_has_prefix (text, "{\n  \"format\": \"sedp-bundle\",\n  "
                                          "\"format_version\": 1,\n  \"name\": \"ctr\",\n"));
  const char *order[] = {"\"version\"", "\"created\"", "\"hash_key\"", "\"model\"", "\"cubes\"",
                         "\"inputs\"", "\"outputs\"", "\"files\""};
  for (guint i = 1; i < G_N_ELEMENTS (order); i++)
    CU_ASSERT_TRUE (strstr (text, order[i - 1]) < strstr (text, order[i]));
  CU_ASSERT_TRUE (strstr (text, "\"cube/block-00000.bin\"") < strstr (text, "\"cube/index\""));
  CU_ASSERT_TRUE (strstr (text, "\"cube/meta\"") < strstr (text, "{\"path\": \"dense.onnx\""));
  g_autoptr (SedpBundleManifest) m = load_manifest (good);
  /* Listed in another order, written sorted all the same. */
  g_ptr_array_add (m->files, g_ptr_array_steal_index (m->files, 0));
  g_autofree char *again = sedp_bundle_manifest_to_string (m);
  CU_ASSERT_STRING_EQUAL (again, text);
}

/* A manifest's strings are escaped as JSON. */
static void
test_manifest_escapes (void)
{
  g_autoptr (SedpBundleManifest) m = load_manifest (good);
  SedpBundleTensor *t = m->inputs->pdata[0];
  g_free (t->name);
  t->name = g_strdup ("a\"b\\c\nd\x01é");
  g_autofree char *text = sedp_bundle_manifest_to_string (m);
  CU_ASSERT_PTR_NOT_NULL (strstr (text, "\"a\\\"b\\\\c\\nd\\u0001é\""));
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpBundleManifest) back = sedp_bundle_manifest_parse (text, strlen (text), "t",
                                                                    &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (back);
  CU_ASSERT_STRING_EQUAL (((SedpBundleTensor *) back->inputs->pdata[0])->name, t->name);
}

static void
test_signed_verifies (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  sign (bundle, secret);
  assert_verifies (bundle, public);
  assert_verifies (bundle, NULL); /* without a key the signature is not looked at */
  g_autofree char *sig_path = at (bundle, SEDP_BUNDLE_SIGNATURE);
  g_autofree char *sig = read_text (sig_path);
  CU_ASSERT_EQUAL (strlen (sig), strlen ("ed25519 ") + 128 + 1);
  CU_ASSERT_TRUE (g_str_has_prefix (sig, "ed25519 "));
  CU_ASSERT_TRUE (g_str_has_suffix (sig, "\n"));
}

/* ---- names ---- */

static void
test_version_rule (void)
{
  static const char *const bad[] = {"007", "7a", "0", "", "-7", "+7", " 7", "7 ", "1e3", "0x7",
                                    "9223372036854775808", "99999999999999999999", NULL};
  for (guint i = 0; bad[i]; i++) {
    g_autoptr (GError) error = NULL;
    CU_ASSERT_EQUAL (sedp_bundle_version_parse (bad[i], &error), 0);
    SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "version folder", "without sign or leading zeros");
    CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_BAD_NAME);
  }
  CU_ASSERT_EQUAL (sedp_bundle_version_parse ("7", NULL), 7);
  CU_ASSERT_EQUAL (sedp_bundle_version_parse ("10", NULL), 10);
  CU_ASSERT_EQUAL (sedp_bundle_version_parse ("9223372036854775807", NULL), G_MAXINT64);
}

static void
test_name_rule (void)
{
  g_autofree char *longest = g_strnfill (128, 'a');
  g_autofree char *too_long = g_strnfill (129, 'a');
  static const char *const ok[] = {"ctr", "a.b-c_D9", "x.", "-", NULL};
  for (guint i = 0; ok[i]; i++)
    CU_ASSERT_TRUE (sedp_bundle_name_check (ok[i], NULL));
  CU_ASSERT_TRUE (sedp_bundle_name_check (longest, NULL));
  const char *bad[] = {"", ".ctr", "..", "a/b", "a b", "é", "a:b", too_long, NULL};
  for (guint i = 0; bad[i]; i++) {
    g_autoptr (GError) error = NULL;
    CU_ASSERT_FALSE (sedp_bundle_name_check (bad[i], &error));
    SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "model name", "A-Z a-z 0-9 _ - .");
    CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_BAD_NAME);
  }
}

static void
test_bad_version_folders (void)
{
  static const char *const bad[] = {"007", "7a", "0", NULL};
  for (guint i = 0; bad[i]; i++) {
    g_autofree char *bundle = copy_as ("ctr", bad[i]);
    g_autofree char *quoted = g_strdup_printf ("'%s'", bad[i]);
    ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_BAD_NAME, bundle, quoted, "version folder",
                    "leading zeros");
  }
}

static void
test_bad_model_name_folder (void)
{
  g_autofree char *bundle = copy_as (".ctr", "7");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_BAD_NAME, bundle, "'.ctr'", "A-Z a-z 0-9");
  g_autofree char *spaced = copy_as ("c t r", "7");
  ASSERT_REFUSED (spaced, NULL, SEDP_BUNDLE_ERROR_BAD_NAME, "'c t r'", "A-Z a-z 0-9");
}

static void
test_folders_differ (void)
{
  g_autofree char *version = copy_as ("ctr", "8");
  ASSERT_REFUSED (version, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json", "'version'", " 7,",
                  "folder is 8");
  g_autofree char *name = copy_as ("cvr", "7");
  ASSERT_REFUSED (name, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json", "'name'", "'ctr'",
                  "'cvr'");
}

/* ---- the manifest ---- */

static void
test_manifest_missing (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *path = at (bundle, SEDP_BUNDLE_MANIFEST);
  CU_ASSERT_EQUAL (g_unlink (path), 0);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, path, "missing");
}

static void
test_manifest_not_json (void)
{
  g_autofree char *bundle = copy_good ();
  set_manifest_text (bundle, "{\"format\": \"sedp-bundle\", ");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json", "not JSON");
  set_manifest_text (bundle, "[1, 2]");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json", "not a JSON object");
  set_manifest_text (bundle, "");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json");
}

static void
test_manifest_unknown_member (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"model\":", "\"modle\": \"x\",\n  \"model\":");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json",
                  "unknown member 'modle'");
  g_autofree char *nested = copy_good ();
  edit_manifest (nested, "\"size\":", "\"mode\": 420, \"size\":");
  ASSERT_REFUSED (nested, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "unknown member 'files[0].mode'");
}

static void
test_manifest_wrong_type (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"version\": 7", "\"version\": \"7\"");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json", "'version'",
                  "must be an integer", "not a string");
  g_autofree char *frac = copy_good ();
  edit_manifest (frac, "\"version\": 7", "\"version\": 7.0");
  ASSERT_REFUSED (frac, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'version'", "must be an integer");
  g_autofree char *cubes = copy_good ();
  edit_manifest (cubes, "\"cubes\": [\"cube\"]", "\"cubes\": \"cube\"");
  ASSERT_REFUSED (cubes, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'cubes'", "must be an array",
                  "not a string");
  g_autofree char *size = copy_good ();
  edit_manifest (size, "\"size\": ", "\"size\": -");
  ASSERT_REFUSED (size, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'files[0].size'", "≥ 0");
  g_autofree char *digest = copy_good ();
  edit_manifest (digest, "\"blake2b\": \"", "\"blake2b\": \"0");
  ASSERT_REFUSED (digest, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'files[0].blake2b'",
                  "64 hex digits");
  g_autofree char *shape = copy_good ();
  edit_manifest (shape, "\"shape\": [-1,", "\"shape\": [-2,");
  ASSERT_REFUSED (shape, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'inputs[0].shape'");
  g_autofree char *created = copy_good ();
  edit_manifest (created, "\"created\": \"", "\"created\": \"yesterday");
  ASSERT_REFUSED (created, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'created'", "ISO 8601");
}

static void
test_manifest_missing_member (void)
{
  g_autofree char *bundle = copy_good ();
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  g_autofree char *line = g_strdup_printf ("  \"created\": \"%s\",\n", m->created);
  edit_manifest (bundle, line, "");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json",
                  "member 'created' is missing", "ISO 8601");
}

static void
test_manifest_later_format (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"format_version\": 1", "\"format_version\": 2");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json",
                  "'format_version' is 2", "format version 1");
  /* Refused by its version, before its (possibly new) members are looked at. */
  edit_manifest (bundle, "\"model\":", "\"signer\": \"x\",\n  \"model\":");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'format_version' is 2");
  g_autofree char *other = copy_good ();
  edit_manifest (other, "\"format\": \"sedp-bundle\"", "\"format\": \"tar\"");
  ASSERT_REFUSED (other, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'format'", "sedp-bundle", "'tar'");
}

static void
test_manifest_duplicate_member (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"version\": 7,", "\"version\": 9,\n  \"version\": 7,");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "member 'version' appears twice");
}

static void
test_manifest_too_large (void)
{
  gsize size = SEDP_BUNDLE_MAX_MANIFEST_BYTES + 1;
  g_autofree char *big = g_malloc (size);
  memset (big, ' ', size);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_bundle_manifest_parse (big, size, "big.json", &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "big.json", "16777216");
  g_autofree char *bundle = copy_good ();
  g_autofree char *path = at (bundle, SEDP_BUNDLE_MANIFEST);
  sedp_test_write_file (path, big, (gssize) size);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "manifest.json", "16777216");
}

/* The model and every cube's meta must be among the files. */
static void
test_manifest_cross_references (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"model\": \"dense.onnx\"", "\"model\": \"other.onnx\"");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'model'", "'other.onnx'",
                  "not among the files");
  g_autofree char *cube = copy_good ();
  edit_manifest (cube, "\"cubes\": [\"cube\"]", "\"cubes\": [\"cube\", \"d1\"]");
  ASSERT_REFUSED (cube, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'cubes[1]'", "'d1/meta'");
}

/* ---- files ---- */

static void
test_digest_mismatch (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *index = at (bundle, "cube/index");
  flip_byte (index, 100);
  g_autoptr (SedpBundleManifest) m = load_manifest (good);
  char listed[2 * SEDP_BUNDLE_DIGEST_BYTES + 1];
  sedp_bundle_hex (sedp_bundle_manifest_find_file (m, "cube/index")->blake2b,
                   SEDP_BUNDLE_DIGEST_BYTES, listed);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, index, "BLAKE2b digest", listed,
                  "changed after packing");
}

static void
test_truncated_model_digest (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *onnx = at (bundle, "dense.onnx");
  truncate_file (onnx, 100);
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  g_autofree char *sizes = g_strdup_printf ("100 bytes, the manifest lists %" G_GINT64_FORMAT,
                                            sedp_bundle_manifest_find_file (m, "dense.onnx")->size);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, onnx, sizes, "truncated");
}

static void
test_truncated_model_content (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *onnx = at (bundle, "dense.onnx");
  truncate_file (onnx, 100);
  relist (bundle, "dense.onnx");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_CONTENT, onnx, "does not load");
}

static void
test_missing_block_digest (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *block = at (bundle, "cube/block-00003.bin");
  CU_ASSERT_EQUAL (g_unlink (block), 0);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, block, "missing");
}

static void
test_missing_block_content (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *block = at (bundle, "cube/block-00003.bin");
  CU_ASSERT_EQUAL (g_unlink (block), 0);
  unlist (bundle, "cube/block-00003.bin");
  g_autofree char *cube = at (bundle, "cube");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_CONTENT, cube, "does not open",
                  "block-00003.bin");
}

static void
test_added_file (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *extra = at (bundle, "cube/notes.txt");
  sedp_test_write_file (extra, "hello", -1);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, extra, "does not list", "tampering");
  g_autofree char *top = copy_good ();
  g_autofree char *folder = at (top, "extra");
  CU_ASSERT_EQUAL (g_mkdir (folder, 0755), 0);
  ASSERT_REFUSED (top, NULL, SEDP_BUNDLE_ERROR_DIGEST, folder, "a folder the manifest does not");
}

static void
test_removed_file (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *meta = at (bundle, "cube/meta");
  CU_ASSERT_EQUAL (g_unlink (meta), 0);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, meta, "missing");
}

static void
test_renamed_file (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *index = at (bundle, "cube/index");
  g_autofree char *moved = at (bundle, "cube/index.old");
  CU_ASSERT_EQUAL (g_rename (index, moved), 0);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, index, "missing");
  /* Listed under its new name, with the cube not finding its index. */
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  SedpBundleFile *f = (SedpBundleFile *) sedp_bundle_manifest_find_file (m, "cube/index");
  g_free (f->path);
  f->path = g_strdup ("cube/index.old");
  store_manifest (bundle, m);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_CONTENT, "cube", "does not open");
}

static void
test_not_a_regular_file (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *meta = at (bundle, "cube/meta");
  CU_ASSERT_EQUAL (g_unlink (meta), 0);
  CU_ASSERT_EQUAL (g_mkdir (meta, 0755), 0);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_DIGEST, meta, "not a regular file");
}

/* ---- paths leaving the bundle ---- */

static void
test_symlink_outside (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *meta = at (bundle, "cube/meta");
  g_autofree char *outside = at (root, "outside-meta");
  copy_tree (meta, outside); /* same bytes: only where it lives is wrong */
  CU_ASSERT_EQUAL (g_unlink (meta), 0);
  CU_ASSERT_EQUAL (symlink (outside, meta), 0);
  g_autofree char *resolved = realpath (outside, NULL);
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_OUTSIDE, meta, resolved, "outside the bundle");
  /* A link to a folder outside, holding the whole cube. */
  g_autofree char *linked = copy_good ();
  g_autofree char *cube = at (linked, "cube");
  g_autofree char *away = at (root, "away-cube");
  copy_tree (cube, away);
  CU_ASSERT_TRUE (sedp_test_remove_tree (cube));
  CU_ASSERT_EQUAL (symlink (away, cube), 0);
  ASSERT_REFUSED (linked, NULL, SEDP_BUNDLE_ERROR_OUTSIDE, "outside the bundle");
}

/* A symbolic link to a file inside the bundle is allowed (here, to a listed copy). */
static void
test_symlink_inside (void)
{
  g_autofree char *bundle = copy_good ();
  g_autofree char *meta = at (bundle, "cube/meta");
  g_autofree char *copy = at (bundle, "meta.copy");
  copy_tree (meta, copy);
  CU_ASSERT_EQUAL (g_unlink (meta), 0);
  CU_ASSERT_EQUAL (symlink ("../meta.copy", meta), 0);
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  const SedpBundleFile *f = sedp_bundle_manifest_find_file (m, "cube/meta");
  sedp_bundle_manifest_add_file (m, "meta.copy", f->size, f->blake2b);
  store_manifest (bundle, m);
  assert_verifies (bundle, NULL);
}

static void
test_path_dotdot (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"path\": \"cube/index\"", "\"path\": \"cube/../../7/cube/index\"");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_OUTSIDE, "manifest.json",
                  "'cube/../../7/cube/index'", "'..'");
  g_autofree char *model = copy_good ();
  edit_manifest (model, "\"model\": \"dense.onnx\"", "\"model\": \"../6/dense.onnx\"");
  ASSERT_REFUSED (model, NULL, SEDP_BUNDLE_ERROR_OUTSIDE, "'model'", "'../6/dense.onnx'");
}

static void
test_path_absolute_or_manifest (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"path\": \"cube/index\"", "\"path\": \"/etc/passwd\"");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_OUTSIDE, "'/etc/passwd'", "absolute");
  g_autofree char *self = copy_good ();
  edit_manifest (self, "\"path\": \"cube/index\"", "\"path\": \"manifest.json\"");
  ASSERT_REFUSED (self, NULL, SEDP_BUNDLE_ERROR_OUTSIDE, "'manifest.json'", "manifest itself");
  g_autofree char *dotted = copy_good ();
  edit_manifest (dotted, "\"path\": \"cube/index\"", "\"path\": \"cube//index\"");
  ASSERT_REFUSED (dotted, NULL, SEDP_BUNDLE_ERROR_MANIFEST, "'cube//index'", "empty component");
}

/* ---- signatures ---- */

static void
test_unsigned_with_key (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  ASSERT_REFUSED (bundle, public, SEDP_BUNDLE_ERROR_SIGNATURE, bundle, "no manifest.sig",
                  "the public key ", "required");
  /* Named by its file when the caller says so. */
  SedpBundleVerifyOptions o = {.public_key = public, .key_name = "keys/ctr.public"};
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_bundle_verify_full (bundle, &o, NULL, &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "keys/ctr.public", "no manifest.sig");
}

static void
test_wrong_key (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  guint8 other_secret[SEDP_BUNDLE_SECRET_KEY_BYTES], other[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  make_keys (other_secret, other);
  sign (bundle, secret);
  ASSERT_REFUSED (bundle, other, SEDP_BUNDLE_ERROR_SIGNATURE, bundle, "does not verify");
  assert_verifies (bundle, public);
}

static void
test_edited_after_signing (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  sign (bundle, secret);
  /* A change that keeps the manifest valid and every digest right. */
  g_autoptr (SedpBundleManifest) m = load_manifest (bundle);
  g_free (m->created);
  m->created = g_strdup ("2001-01-01T00:00:00Z");
  store_manifest (bundle, m);
  assert_verifies (bundle, NULL);
  ASSERT_REFUSED (bundle, public, SEDP_BUNDLE_ERROR_SIGNATURE, "does not verify",
                  "changed after signing");
}

static void
test_renamed_after_signing (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  sign (bundle, secret);
  /* Copied to version 8 with the manifest's version made to match: the signature fails. */
  g_autofree char *parent = g_path_get_dirname (bundle);
  g_autofree char *eight = at (parent, "8");
  copy_tree (bundle, eight);
  edit_manifest (eight, "\"version\": 7,", "\"version\": 8,");
  assert_verifies (eight, NULL);
  ASSERT_REFUSED (eight, public, SEDP_BUNDLE_ERROR_SIGNATURE, eight, "does not verify");
  /* The name and version are signed besides the manifest: the same bytes as version 8 fail. */
  g_autofree char *path = at (bundle, SEDP_BUNDLE_MANIFEST);
  g_autoptr (GBytes) bytes = sedp_bundle_manifest_read (path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (bytes);
  CU_ASSERT_TRUE (sedp_bundle_check_signature (bundle, "ctr", 7, bytes, public, NULL, NULL));
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_bundle_check_signature (bundle, "ctr", 8, bytes, public, NULL, &error));
  CU_ASSERT_FALSE (sedp_bundle_check_signature (bundle, "cvr", 7, bytes, public, NULL, NULL));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "does not verify");
}

static void
test_truncated_signature (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  sign (bundle, secret);
  g_autofree char *sig = at (bundle, SEDP_BUNDLE_SIGNATURE);
  truncate_file (sig, 70);
  ASSERT_REFUSED (bundle, public, SEDP_BUNDLE_ERROR_SIGNATURE, sig, "not a signature",
                  "128 hex digits");
  sedp_test_write_file (sig, "rsa 00\n", -1);
  ASSERT_REFUSED (bundle, public, SEDP_BUNDLE_ERROR_SIGNATURE, sig, "not a signature");
}

/* sign checks the digests first and writes nothing for a bundle that does not match. */
static void
test_sign_refuses_damaged (void)
{
  g_autofree char *bundle = copy_good ();
  guint8 secret[SEDP_BUNDLE_SECRET_KEY_BYTES], public[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  make_keys (secret, public);
  g_autofree char *index = at (bundle, "cube/index");
  flip_byte (index, 70);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_bundle_sign (bundle, secret, &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, index);
  CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_DIGEST);
  g_autofree char *sig = at (bundle, SEDP_BUNDLE_SIGNATURE);
  CU_ASSERT_FALSE (g_file_test (sig, G_FILE_TEST_EXISTS));
}

/* ---- key files ---- */

static void
test_keygen_files (void)
{
  g_autofree char *prefix = at (root, "keys-files");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_TRUE_FATAL (sedp_bundle_keygen (prefix, &error));
  g_autofree char *s = g_strconcat (prefix, ".secret", NULL);
  g_autofree char *p = g_strconcat (prefix, ".public", NULL);
  struct stat st;
  CU_ASSERT_EQUAL_FATAL (stat (s, &st), 0);
  CU_ASSERT_EQUAL (st.st_mode & 0777, 0600);
  g_autofree char *stext = read_text (s), *ptext = read_text (p);
  CU_ASSERT_EQUAL (strlen (stext), 129);
  CU_ASSERT_EQUAL (strlen (ptext), 65);
  CU_ASSERT_EQUAL (stext[128], '\n');
  CU_ASSERT_EQUAL (ptext[64], '\n');
  /* The public half of the secret key file is the public key file. */
  CU_ASSERT_EQUAL (strncmp (stext + 64, ptext, 64), 0);
  /* Never overwritten. */
  CU_ASSERT_FALSE (sedp_bundle_keygen (prefix, &error));
  CU_ASSERT_TRUE (g_error_matches (error, G_FILE_ERROR, G_FILE_ERROR_EXIST));
  g_autofree char *stext2 = read_text (s);
  CU_ASSERT_STRING_EQUAL (stext, stext2);
}

static void
test_key_files_refused (void)
{
  g_autofree char *path = at (root, "bad.public");
  guint8 key[SEDP_BUNDLE_SECRET_KEY_BYTES];
  struct {
    const char *text;
    gboolean secret;
    const char *needle;
  } cases_[] = {
    {"00112233\n", FALSE, "8 characters"},
    {"", FALSE, "0 characters"},
    {"zz00000000000000000000000000000000000000000000000000000000000000\n", FALSE, "not hex"},
    {"0000000000000000000000000000000000000000000000000000000000000000\n", TRUE, "64 characters"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases_); i++) {
    sedp_test_write_file (path, cases_[i].text, -1);
    g_autoptr (GError) error = NULL;
    gboolean ok = cases_[i].secret ? sedp_bundle_read_secret_key (path, key, &error)
                                   : sedp_bundle_read_public_key (path, key, &error);
    CU_ASSERT_FALSE (ok);
    SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, path, cases_[i].needle);
    CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_SIGNATURE);
  }
  /* A secret key whose public half is not its seed's. */
  g_autofree char *prefix = at (root, "keys-halves");
  CU_ASSERT_TRUE_FATAL (sedp_bundle_keygen (prefix, NULL));
  g_autofree char *s = g_strconcat (prefix, ".secret", NULL);
  g_autofree char *text = read_text (s);
  text[100] = text[100] == '0' ? '1' : '0';
  sedp_test_write_file (s, text, -1);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_bundle_read_secret_key (s, key, &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, s, "does not belong to its seed");
  g_autoptr (GError) missing = NULL;
  CU_ASSERT_FALSE (sedp_bundle_read_public_key ("/nonexistent/ctr.public", key, &missing));
  CU_ASSERT_TRUE (g_error_matches (missing, G_FILE_ERROR, G_FILE_ERROR_NOENT));
}

/* ---- contents ---- */

static void
test_content_hash_key (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"hash_key\": \"" HASH_HEX "\"",
                 "\"hash_key\": \"ffeeddccbbaa99887766554433221100\"");
  g_autofree char *cube = at (bundle, "cube");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_CONTENT, cube, HASH_HEX,
                  "ffeeddccbbaa99887766554433221100");
}

static void
test_content_signature (void)
{
  g_autofree char *bundle = copy_good ();
  edit_manifest (bundle, "\"shape\": [-1, ", "\"shape\": [-1, 9");
  g_autofree char *onnx = at (bundle, "dense.onnx");
  ASSERT_REFUSED (bundle, NULL, SEDP_BUNDLE_ERROR_CONTENT, onnx, "input 0", "'dense'", "[-1, 9");
  g_autofree char *renamed = copy_good ();
  edit_manifest (renamed, "{\"name\": \"dense\"", "{\"name\": \"dense2\"");
  ASSERT_REFUSED (renamed, NULL, SEDP_BUNDLE_ERROR_CONTENT, "'dense2'");
  g_autofree char *fewer = copy_good ();
  g_autoptr (SedpBundleManifest) m = load_manifest (fewer);
  g_ptr_array_remove_index (m->outputs, 0);
  store_manifest (fewer, m);
  ASSERT_REFUSED (fewer, NULL, SEDP_BUNDLE_ERROR_CONTENT, "outputs, the manifest lists 0");
}

/* ---- the downgrade rule ---- */

static void
test_downgrade (void)
{
  g_autoptr (GError) error = NULL;
  CU_ASSERT_FALSE (sedp_bundle_check_upgrade ("ctr", 7, 6, FALSE, &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "'ctr'", "version 6", "version 7",
                     "POST /v1/admin/models/ctr:rollback");
  CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_DOWNGRADE);
  CU_ASSERT_TRUE (sedp_bundle_check_upgrade ("ctr", 7, 6, TRUE, NULL));
  CU_ASSERT_TRUE (sedp_bundle_check_upgrade ("ctr", 7, 8, FALSE, NULL));
  CU_ASSERT_TRUE (sedp_bundle_check_upgrade ("ctr", 7, 7, FALSE, NULL));
  CU_ASSERT_TRUE (sedp_bundle_check_upgrade ("ctr", 0, 1, FALSE, NULL));
}

/* ---- pack ---- */

/* No DEST.tmp-* next to @dest. */
static gboolean
no_tmp_left (const char *dest)
{
  g_autofree char *above = g_path_get_dirname (dest);
  g_autofree char *base = g_path_get_basename (dest);
  g_autofree char *prefix = g_strconcat (base, ".tmp-", NULL);
  gboolean clean = TRUE;
  GDir *d = g_dir_open (above, 0, NULL);
  for (const char *name; d && (name = g_dir_read_name (d)) != NULL;)
    if (g_str_has_prefix (name, prefix)) {
      fprintf (stderr, "\n  %s/%s was left behind\n", above, name);
      clean = FALSE;
    }
  if (d)
    g_dir_close (d);
  return clean;
}

/* No DEST and no DEST.tmp-* next to it. */
static gboolean
nothing_left (const char *dest)
{
  return !g_file_test (dest, G_FILE_TEST_EXISTS) && no_tmp_left (dest);
}

static void
test_pack_existing_version (void)
{
  g_autofree char *src = at (root, "src");
  g_autofree char *repo = at (root, "repo");
  g_autofree char *before = manifest_text (good);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (pack (src, repo, "ctr", 7, &error));
  SEDP_ASSERT_ERROR (error, G_FILE_ERROR, good, "already exists");
  CU_ASSERT_EQUAL (error->code, G_FILE_ERROR_EXIST);
  g_autofree char *after = manifest_text (good);
  CU_ASSERT_STRING_EQUAL (before, after);
}

static void
test_pack_out (void)
{
  g_autofree char *src = at (root, "src");
  g_autofree char *out = g_build_filename (root, "staging", "ctr", "9", NULL);
  SedpBundlePackOptions o = {"ctr", 9, NULL, out, NULL};
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpBundleManifest) m = NULL;
  g_autofree char *dest = sedp_bundle_pack (src, &o, &m, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dest);
  CU_ASSERT_STRING_EQUAL (dest, out);
  CU_ASSERT_EQUAL (m->version, 9);
  assert_verifies (out, NULL);
  CU_ASSERT_TRUE (no_tmp_left (out));
}

static void
test_pack_refuses_sources (void)
{
  g_autofree char *src = at (root, "src-bad");
  static const char *const one[] = {"cube", NULL};
  CU_ASSERT_TRUE_FATAL (make_source (src, one, hash_key));
  g_autofree char *repo = at (root, "repo-bad");
  g_autofree char *dest = g_build_filename (repo, "ctr", "1", NULL);
  /* A stray file. */
  g_autofree char *stray = at (src, "README");
  sedp_test_write_file (stray, "x", -1);
  g_autoptr (GError) e1 = NULL;
  CU_ASSERT_PTR_NULL (pack (src, repo, "ctr", 1, &e1));
  SEDP_ASSERT_ERROR (e1, SEDP_BUNDLE_ERROR, stray, "neither a model");
  CU_ASSERT_EQUAL (e1->code, SEDP_BUNDLE_ERROR_CONTENT);
  g_unlink (stray);
  /* Two models. */
  g_autofree char *onnx = at (src, "dense.onnx"), *second = at (src, "other.onnx");
  copy_tree (onnx, second);
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_PTR_NULL (pack (src, repo, "ctr", 1, &e2));
  SEDP_ASSERT_ERROR (e2, SEDP_BUNDLE_ERROR, "two models", "'dense.onnx'", "'other.onnx'");
  g_unlink (second);
  /* A model that does not load. */
  truncate_file (onnx, 50);
  g_autoptr (GError) e3 = NULL;
  CU_ASSERT_PTR_NULL (pack (src, repo, "ctr", 1, &e3));
  SEDP_ASSERT_ERROR (e3, SEDP_BUNDLE_ERROR, onnx, "does not load");
  CU_ASSERT_EQUAL (e3->code, SEDP_BUNDLE_ERROR_CONTENT);
  CU_ASSERT_TRUE (nothing_left (dest));
  /* A bad name. */
  g_autoptr (GError) e4 = NULL;
  CU_ASSERT_PTR_NULL (pack (src, repo, "../ctr", 1, &e4));
  CU_ASSERT_TRUE (g_error_matches (e4, SEDP_BUNDLE_ERROR, SEDP_BUNDLE_ERROR_BAD_NAME));
}

static void
test_pack_nested_cubes (void)
{
  g_autofree char *src = at (root, "src-nested");
  static const char *const two[] = {"cube/d8", "cube/d1", NULL};
  CU_ASSERT_TRUE_FATAL (make_source (src, two, hash_key));
  g_autofree char *repo = at (root, "repo");
  g_autoptr (GError) error = NULL;
  g_autofree char *bundle = pack (src, repo, "nested", 1, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (bundle);
  g_autoptr (SedpBundleManifest) m = NULL;
  CU_ASSERT_TRUE_FATAL (sedp_bundle_verify (bundle, NULL, &m, &error));
  CU_ASSERT_EQUAL_FATAL (m->cubes->len, 2);
  CU_ASSERT_STRING_EQUAL (m->cubes->pdata[0], "cube/d1");
  CU_ASSERT_STRING_EQUAL (m->cubes->pdata[1], "cube/d8");
  /* Cubes of different hash keys are not one bundle. */
  g_autofree char *mixed = at (root, "src-mixed");
  static const char *const d8[] = {"cube/d8", NULL};
  CU_ASSERT_TRUE_FATAL (make_source (mixed, d8, hash_key));
  static const guint8 other_key[SEDP_CUBE_HASH_KEY_BYTES] = {1};
  g_autofree char *d1 = g_build_filename (mixed, "cube", "d1", NULL);
  CU_ASSERT_TRUE_FATAL (build_cube (d1, 10, 1, other_key));
  g_autoptr (GError) e2 = NULL;
  CU_ASSERT_PTR_NULL (pack (mixed, repo, "mixed", 1, &e2));
  SEDP_ASSERT_ERROR (e2, SEDP_BUNDLE_ERROR, "'cube/d1'", "'cube/d8'", HASH_HEX,
                     "01000000000000000000000000000000");
  CU_ASSERT_EQUAL (e2->code, SEDP_BUNDLE_ERROR_CONTENT);
  g_autofree char *dest = g_build_filename (repo, "mixed", "1", NULL);
  CU_ASSERT_TRUE (nothing_left (dest));
}

/* An interrupted pack leaves nothing. */
static void
test_pack_interrupted (void)
{
  g_autofree char *src = at (root, "src");
  g_autofree char *repo = at (root, "repo");
  volatile sig_atomic_t stop = 2;
  SedpBundlePackOptions o = {"ctr", 11, repo, NULL, &stop};
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_bundle_pack (src, &o, NULL, &error));
  CU_ASSERT_TRUE (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED));
  g_autofree char *dest = g_build_filename (repo, "ctr", "11", NULL);
  CU_ASSERT_TRUE (nothing_left (dest));
}

/* ---- the commands, from sedp model split ---- */

static void
test_cli_end_to_end (void)
{
  g_autofree char *work = at (root, "cli");
  CU_ASSERT_EQUAL_FATAL (g_mkdir (work, 0755), 0);
  g_autofree char *onnx = at (work, "wdl.onnx"), *out = at (work, "out");
  g_autofree char *dense = g_build_filename (out, "dense.onnx", NULL);
  g_autofree char *cube = g_build_filename (out, "cube", NULL);
  g_autofree char *repo = at (work, "models"), *keys = at (work, "ctr");
  g_autofree char *secret = g_strconcat (keys, ".secret", NULL);
  g_autofree char *public = g_strconcat (keys, ".public", NULL);
  g_autofree char *bundle = g_build_filename (repo, "ctr", "3", NULL);
  CU_ASSERT_EQUAL_FATAL (g_mkdir (out, 0755), 0);
  g_auto (SedpTestRun) r = {0};
  sedp_test_spawn (&r, NULL, "model", "synth", "--arch", "wdl", "-o", onnx, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  sedp_test_run_clear (&r);
  sedp_test_spawn (&r, NULL, "model", "split", onnx, "--dense", dense, "--cube", cube,
                   "--hash-key", HASH_HEX, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  sedp_test_run_clear (&r);
  sedp_test_spawn (&r, NULL, "model", "pack", out, "--name", "ctr", "--version", "3",
                   "--repository", repo, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  SEDP_ASSERT_CONTAINS (r.out, "cube/d1, cube/d8");
  sedp_test_run_clear (&r);
  sedp_test_spawn (&r, NULL, "model", "keygen", "--out", keys, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  sedp_test_run_clear (&r);
  sedp_test_spawn (&r, NULL, "model", "sign", bundle, "--secret-key", secret, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  sedp_test_run_clear (&r);
  sedp_test_spawn (&r, NULL, "model", "verify", bundle, "--public-key", public, NULL);
  SEDP_ASSERT_EXIT (r, 0);
  static const char *const lines[] = {"names:", "manifest:", "files:", "signature:", "contents:",
                                      "verified"};
  for (guint i = 0; i < G_N_ELEMENTS (lines); i++)
    SEDP_ASSERT_CONTAINS (r.out, lines[i]);
  SEDP_ASSERT_CONTAINS (r.out, public);
  sedp_test_run_clear (&r);
  /* A failure: named on stderr, exit status 1. */
  g_autofree char *meta = g_build_filename (bundle, "cube", "d8", "meta", NULL);
  flip_byte (meta, 3);
  sedp_test_spawn (&r, NULL, "model", "verify", bundle, NULL);
  SEDP_ASSERT_EXIT (r, 1);
  SEDP_ASSERT_CONTAINS (r.err, "sedp model verify: ");
  SEDP_ASSERT_CONTAINS (r.err, "cube/d8/meta");
  sedp_test_run_clear (&r);
  /* Bad arguments: exit status 2. */
  sedp_test_spawn (&r, NULL, "model", "pack", out, "--name", "ctr", "--version", "007",
                   "--repository", repo, NULL);
  SEDP_ASSERT_EXIT (r, 2);
  SEDP_ASSERT_CONTAINS (r.err, "sedp model pack: ");
  SEDP_ASSERT_CONTAINS (r.err, "'007'");
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("bundle", suite_init, suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_good_verifies);
  T (test_manifest_round_trip);
  T (test_manifest_escapes);
  T (test_signed_verifies);
  T (test_version_rule);
  T (test_name_rule);
  T (test_bad_version_folders);
  T (test_bad_model_name_folder);
  T (test_folders_differ);
  T (test_manifest_missing);
  T (test_manifest_not_json);
  T (test_manifest_unknown_member);
  T (test_manifest_wrong_type);
  T (test_manifest_missing_member);
  T (test_manifest_later_format);
  T (test_manifest_duplicate_member);
  T (test_manifest_too_large);
  T (test_manifest_cross_references);
  T (test_digest_mismatch);
  T (test_truncated_model_digest);
  T (test_truncated_model_content);
  T (test_missing_block_digest);
  T (test_missing_block_content);
  T (test_added_file);
  T (test_removed_file);
  T (test_renamed_file);
  T (test_not_a_regular_file);
  T (test_symlink_outside);
  T (test_symlink_inside);
  T (test_path_dotdot);
  T (test_path_absolute_or_manifest);
  T (test_unsigned_with_key);
  T (test_wrong_key);
  T (test_edited_after_signing);
  T (test_renamed_after_signing);
  T (test_truncated_signature);
  T (test_sign_refuses_damaged);
  T (test_keygen_files);
  T (test_key_files_refused);
  T (test_content_hash_key);
  T (test_content_signature);
  T (test_downgrade);
  T (test_pack_existing_version);
  T (test_pack_out);
  T (test_pack_refuses_sources);
  T (test_pack_nested_cubes);
  T (test_pack_interrupted);
  T (test_cli_end_to_end);
#undef T
  return sedp_test_run ();
}
