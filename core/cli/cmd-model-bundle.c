/* sedp model pack, verify, keygen, sign — the command-line side of model bundles: options,
 * one line per result, errors as "sedp model SUB: MESSAGE" (core/bundle/ does the work). */
#include "cmd-model-bundle.h"

#include "cli.h"

#include "../bundle/bundle.h"

#include <gio/gio.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

/* Prints @error as sedp model @sub's and returns 1. */
static int
fail (const char *sub, const GError *error)
{
  g_autofree char *prog = g_strconcat ("model ", sub, NULL);
  sedp_cli_error (prog, error->message);
  return 1;
}

/* Prints a usage error of sedp model @sub and returns 2. */
static int
usage_error (const char *sub, const char *message)
{
  g_autofree char *prog = g_strconcat ("model ", sub, NULL);
  sedp_cli_error (prog, message);
  return 2;
}

/* ---- pack ------------------------------------------------------------------------------- */

/* "packed DEST: …" with what the manifest lists. */
static void
print_packed (const char *dest, const SedpBundleManifest *m)
{
  gint64 bytes = 0;
  for (guint i = 0; i < m->files->len; i++)
    bytes += ((const SedpBundleFile *) m->files->pdata[i])->size;
  g_autofree char *size = g_format_size ((guint64) bytes);
  g_autoptr (GString) cubes = g_string_new (NULL);
  for (guint i = 0; i < m->cubes->len; i++)
    g_string_append_printf (cubes, "%s%s", i ? ", " : "", (const char *) m->cubes->pdata[i]);
  char key[2 * SEDP_BUNDLE_HASH_KEY_BYTES + 1];
  sedp_bundle_hex (m->hash_key, SEDP_BUNDLE_HASH_KEY_BYTES, key);
  printf ("packed %s: model '%s' version %" G_GINT64_FORMAT ", %u files (%s)\n", dest, m->name,
          m->version, m->files->len, size);
  printf ("model:  %s (%u input%s, %u output%s)\n", m->model, m->inputs->len,
          m->inputs->len == 1 ? "" : "s", m->outputs->len, m->outputs->len == 1 ? "" : "s");
  printf ("cubes:  %s (hash key %s)\n", cubes->str, key);
}

/* Packs with the parsed options; returns the exit status. */
static int
run_pack (const char *source, const SedpBundlePackOptions *o)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpBundleManifest) m = NULL;
  sedp_cli_catch_signals (TRUE);
  g_autofree char *dest = sedp_bundle_pack (source, o, &m, &error);
  sedp_cli_catch_signals (FALSE);
  if (dest == NULL) {
    fail ("pack", error);
    return g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) ? 130 : 1;
  }
  print_packed (dest, m);
  return 0;
}

int
sedp_cmd_model_pack (int argc, char **argv)
{
  g_autofree char *name = NULL, *version = NULL, *repository = NULL, *out = NULL;
  const GOptionEntry entries[] = {
    {"name", 'n', 0, G_OPTION_ARG_STRING, &name, "The model's name", "NAME"},
    {"version", 0, 0, G_OPTION_ARG_STRING, &version, "The bundle's version (1, 2, …)", "V"},
    {"repository", 'r', 0, G_OPTION_ARG_FILENAME, &repository,
     "Write the bundle to REPO/NAME/V", "REPO"},
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &out, "Write the bundle to the folder BUNDLE",
     "BUNDLE"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model pack", "DIR --name NAME --version V (--repository REPO | --out "
                       "BUNDLE)",
                       "Makes a model bundle of folder DIR, which holds one *.onnx model and the "
                       "cube folders that sedp model split wrote (folders with a meta file, at "
                       "the top of DIR or one level down): checks that the cubes verify and "
                       "share one hash key and that the model loads, copies the files into "
                       "DEST.tmp-PID, writes manifest.json (every file's size and BLAKE2b "
                       "digest, the model's inputs and outputs), then renames the folder to "
                       "DEST, which must not exist. See docs/model-lifecycle.md.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2)
    return usage_error ("pack", "expected one DIR (see --help)");
  if (name == NULL || version == NULL)
    return usage_error ("pack", "missing --name NAME or --version V");
  if ((repository == NULL) == (out == NULL))
    return usage_error ("pack", "give one of --repository REPO and --out BUNDLE");
  g_autoptr (GError) error = NULL;
  SedpBundlePackOptions o = {name, sedp_bundle_version_parse (version, &error), repository, out,
                             &sedp_cli_interrupted};
  if (o.version == 0 || !sedp_bundle_name_check (name, &error))
    return usage_error ("pack", error->message);
  return run_pack (argv[1], &o);
}

/* ---- verify ----------------------------------------------------------------------------- */

static void
print_check (const char *check, const char *detail, gpointer user_data)
{
  (void) user_data;
  g_autofree char *label = g_strconcat (check, ":", NULL);
  printf ("%-10s %s\n", label, detail);
  fflush (stdout);
}

int
sedp_cmd_model_verify (int argc, char **argv)
{
  g_autofree char *key_file = NULL;
  const GOptionEntry entries[] = {
    {"public-key", 'k', 0, G_OPTION_ARG_FILENAME, &key_file,
     "Require a manifest.sig that verifies with this key (sedp model keygen's PREFIX.public)",
     "FILE"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model verify", "BUNDLE [--public-key FILE]",
                       "Checks a model bundle as a server does before loading it: the folder "
                       "names (…/NAME/VERSION), the manifest, every file's size and digest and "
                       "that none is unlisted, the signature (with --public-key), and the "
                       "contents (the cubes open with the manifest's hash key, the model loads "
                       "with the manifest's inputs and outputs). Prints one line per check, or "
                       "names the first failure and exits 1. See docs/model-lifecycle.md.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2)
    return usage_error ("verify", "expected one BUNDLE (see --help)");
  g_autoptr (GError) error = NULL;
  guint8 key[SEDP_BUNDLE_PUBLIC_KEY_BYTES];
  if (key_file && !sedp_bundle_read_public_key (key_file, key, &error))
    return fail ("verify", error);
  SedpBundleVerifyOptions o = {key_file ? key : NULL, key_file, TRUE, print_check, NULL};
  if (!sedp_bundle_verify_full (argv[1], &o, NULL, &error))
    return fail ("verify", error);
  printf ("%s: verified\n", argv[1]);
  return 0;
}

/* ---- keygen ----------------------------------------------------------------------------- */

int
sedp_cmd_model_keygen (int argc, char **argv)
{
  g_autofree char *prefix = NULL;
  const GOptionEntry entries[] = {
    {"out", 'o', 0, G_OPTION_ARG_FILENAME, &prefix,
     "Write PREFIX.secret (mode 0600) and PREFIX.public; neither may exist", "PREFIX"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model keygen", "--out PREFIX",
                       "Makes an Ed25519 key pair to sign model bundles: PREFIX.secret (for "
                       "sedp model sign; keep it secret) and PREFIX.public (for sedp model "
                       "verify --public-key and the servers). See docs/model-lifecycle.md.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 1)
    return usage_error ("keygen", "unexpected arguments (see --help)");
  if (prefix == NULL || *prefix == '\0')
    return usage_error ("keygen", "missing --out PREFIX");
  g_autoptr (GError) error = NULL;
  if (!sedp_bundle_keygen (prefix, &error))
    return fail ("keygen", error);
  printf ("wrote %s.secret (mode 0600: keep it secret) and %s.public\n", prefix, prefix);
  return 0;
}

/* ---- sign ------------------------------------------------------------------------------- */

int
sedp_cmd_model_sign (int argc, char **argv)
{
  g_autofree char *key_file = NULL;
  const GOptionEntry entries[] = {
    {"secret-key", 'k', 0, G_OPTION_ARG_FILENAME, &key_file,
     "The signing key (sedp model keygen's PREFIX.secret)", "FILE"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("model sign", "BUNDLE --secret-key FILE",
                       "Signs a model bundle: checks its folder names, manifest and every file's "
                       "size and digest, then writes BUNDLE/manifest.sig, the Ed25519 signature "
                       "of its name, version and manifest (replacing one there). See "
                       "docs/model-lifecycle.md.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2)
    return usage_error ("sign", "expected one BUNDLE (see --help)");
  if (key_file == NULL)
    return usage_error ("sign", "missing --secret-key FILE");
  g_autoptr (GError) error = NULL;
  guint8 key[SEDP_BUNDLE_SECRET_KEY_BYTES];
  gboolean ok = sedp_bundle_read_secret_key (key_file, key, &error) &&
                sedp_bundle_sign (argv[1], key, &error);
  sodium_memzero (key, sizeof key);
  if (!ok)
    return fail ("sign", error);
  printf ("signed %s: wrote %s/%s\n", argv[1], argv[1], SEDP_BUNDLE_SIGNATURE);
  return 0;
}
