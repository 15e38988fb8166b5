/* sedp — model bundles: a version of a model in a repository (REPO/NAME/VERSION/), its
 * manifest (every file's size and BLAKE2b digest, the dense model's signature, the cubes' hash
 * key), its optional Ed25519 signature, and the checks a server makes before loading one. The
 * formats and the refusals are described for users in docs/model-lifecycle.md.
 *
 * Errors: a refusal is a SEDP_BUNDLE_ERROR (below); what the system refused (a file that cannot
 * be read for another reason than its absence, a full disk) is a G_FILE_ERROR, and an
 * interrupted sedp_bundle_pack() is G_IO_ERROR_CANCELLED. Every message names the bundle's
 * folder and the file or manifest member concerned.
 *
 * Thread-safety: every function may be called from any thread; none keeps state between calls,
 * and a manifest is only read by the functions taking it as const. */
#pragma once

#include <sedp/macros.h>

#include <signal.h>

G_BEGIN_DECLS

/** SEDP_BUNDLE_ERROR: why a bundle, a name or a key is refused. Codes are #SedpBundleError. */
#define SEDP_BUNDLE_ERROR (sedp_bundle_error_quark ())
SEDP_API GQuark sedp_bundle_error_quark (void);

/**
 * SedpBundleError:
 * @SEDP_BUNDLE_ERROR_BAD_NAME: a model name or version folder the rules do not allow
 * @SEDP_BUNDLE_ERROR_MANIFEST: no manifest.json, or not of the known format (unknown, missing
 *   or mistyped member), or its name or version differ from the folders'
 * @SEDP_BUNDLE_ERROR_DIGEST: a listed file missing or not a regular file, of another size or
 *   digest; a file of the bundle not listed
 * @SEDP_BUNDLE_ERROR_OUTSIDE: a path with "..", absolute, naming the manifest, or resolving
 *   (through symbolic links) outside the bundle
 * @SEDP_BUNDLE_ERROR_SIGNATURE: no manifest.sig where a key is required, a signature that does
 *   not verify, or a malformed key or signature file
 * @SEDP_BUNDLE_ERROR_CONTENT: a cube that does not open or has another hash key, a model that
 *   does not load or has another signature; for sedp_bundle_pack(), a source folder that is
 *   not one model and its cubes
 * @SEDP_BUNDLE_ERROR_DOWNGRADE: a version lower than the one serving, without an explicit
 *   rollback
 * @SEDP_BUNDLE_ERROR_NO_VERSION: a repository without the model's folder, a model folder
 *   without any version, or a pinned version that is not there
 */
typedef enum {
  SEDP_BUNDLE_ERROR_BAD_NAME,
  SEDP_BUNDLE_ERROR_MANIFEST,
  SEDP_BUNDLE_ERROR_DIGEST,
  SEDP_BUNDLE_ERROR_OUTSIDE,
  SEDP_BUNDLE_ERROR_SIGNATURE,
  SEDP_BUNDLE_ERROR_CONTENT,
  SEDP_BUNDLE_ERROR_DOWNGRADE,
  SEDP_BUNDLE_ERROR_NO_VERSION,
} SedpBundleError;

#define SEDP_BUNDLE_MANIFEST "manifest.json"
#define SEDP_BUNDLE_SIGNATURE "manifest.sig"
#define SEDP_BUNDLE_FORMAT "sedp-bundle"
#define SEDP_BUNDLE_FORMAT_VERSION 1
/* The largest manifest read, in bytes. */
#define SEDP_BUNDLE_MAX_MANIFEST_BYTES ((gsize) 16 << 20)
/* The longest model name, in bytes. */
#define SEDP_BUNDLE_MAX_NAME 128
/* A file's digest: BLAKE2b-256 (crypto_generichash without key). */
#define SEDP_BUNDLE_DIGEST_BYTES 32
#define SEDP_BUNDLE_HASH_KEY_BYTES 16
/* Ed25519 (crypto_sign): keys and signature. */
#define SEDP_BUNDLE_PUBLIC_KEY_BYTES 32
#define SEDP_BUNDLE_SECRET_KEY_BYTES 64
#define SEDP_BUNDLE_SIGNATURE_BYTES 64

/* ---- names (names.c) ------------------------------------------------------------------- */

/* Whether @name is a model name: 1 to 128 bytes of A-Z a-z 0-9 _ - ., not starting with '.'.
 * Else FALSE with BAD_NAME naming @name and the rule. */
SEDP_API gboolean sedp_bundle_name_check (const char *name, GError **error);

/* Parses a version folder's name: a decimal number from 1 to 2^63 - 1, no sign, no leading zero.
 * Returns it, or 0 with BAD_NAME naming @text and the rule. */
SEDP_API gint64 sedp_bundle_version_parse (const char *text, GError **error);

/* The downgrade rule: TRUE when @candidate may replace @serving (0: nothing serving) for model
 * @name; a lower version only with @explicit_rollback. Else FALSE with DOWNGRADE naming both
 * versions and the rollback endpoint. */
SEDP_API gboolean sedp_bundle_check_upgrade (const char *name, gint64 serving, gint64 candidate,
                                             gboolean explicit_rollback, GError **error);

/* ---- the repository (repository.c) --------------------------------------------------- */

/* The versions of model @name in @repository: the sub-folders of REPOSITORY/NAME whose names
 * are versions (sedp_bundle_version_parse()), ascending; every other entry (a "tmp.7" being
 * written, a ".staging" folder, a file) is ignored. Returns (transfer full) a GArray of gint64,
 * possibly empty, or NULL with NO_VERSION when REPOSITORY/NAME is not a folder, BAD_NAME for a
 * @name the rules refuse, G_FILE_ERROR when it cannot be read. Looks only at names: the
 * bundles are checked by sedp_bundle_verify(). */
SEDP_API GArray *sedp_bundle_repository_versions (const char *repository, const char *name,
                                                  GError **error);

/* The bundle to serve for model @name: version @pinned when > 0 (NO_VERSION naming the versions
 * there when it is missing), else the highest (NO_VERSION when there is none). Returns its
 * version and sets @bundle_dir (transfer full) to REPOSITORY/NAME/VERSION; 0 with @error set
 * as sedp_bundle_repository_versions() otherwise. */
SEDP_API gint64 sedp_bundle_repository_resolve (const char *repository, const char *name,
                                                gint64 pinned, char **bundle_dir, GError **error);

/* ---- the manifest (manifest.c) ---------------------------------------------------------- */

/** SedpBundleTensor: one input or output of the dense model, as the manifest records it. */
typedef struct {
  char *name;
  char *dtype;  /* "float32", "int64", … (sedp_bundle_dtype_name()) */
  guint rank;
  gint64 *shape; /* @rank dims; -1 for a dimension the model leaves free */
} SedpBundleTensor;

/** SedpBundleFile: one file of the bundle: its path in it, size and BLAKE2b-256 digest. */
typedef struct {
  char *path;
  gint64 size;
  guint8 blake2b[SEDP_BUNDLE_DIGEST_BYTES];
} SedpBundleFile;

/**
 * SedpBundleManifest:
 * What manifest.json says. Owns everything it points to; free with
 * sedp_bundle_manifest_free(). @files are in any order in memory (the writer sorts them).
 */
typedef struct {
  char *name;
  gint64 version;
  char *created; /* UTC, ISO 8601 ("2026-11-27T01:02:03Z") */
  guint8 hash_key[SEDP_BUNDLE_HASH_KEY_BYTES];
  char *model;      /* the dense model's path in the bundle */
  GPtrArray *cubes; /* char *: cube folders, paths in the bundle */
  GPtrArray *inputs;  /* SedpBundleTensor * */
  GPtrArray *outputs; /* SedpBundleTensor * */
  GPtrArray *files;   /* SedpBundleFile * */
} SedpBundleManifest;

/* A new empty manifest (every string NULL, every array empty). */
SEDP_API SedpBundleManifest *sedp_bundle_manifest_new (void);
/* Frees @manifest and everything it owns; NULL is ignored. */
SEDP_API void sedp_bundle_manifest_free (SedpBundleManifest *manifest);

/* Appends a copy of the tensor description to @to (an @inputs or @outputs array). */
SEDP_API void sedp_bundle_manifest_add_tensor (GPtrArray *to, const char *name, const char *dtype,
                                               guint rank, const gint64 *shape);
/* Appends a file (@path copied) to @manifest's files. */
SEDP_API void sedp_bundle_manifest_add_file (SedpBundleManifest *manifest, const char *path,
                                             gint64 size, const guint8 *blake2b);
/* The file of @manifest listed as @path, or NULL. */
SEDP_API const SedpBundleFile *sedp_bundle_manifest_find_file (const SedpBundleManifest *manifest,
                                                               const char *path);

/* Parses the @size bytes of @data (need not be NUL-terminated). @where names the manifest in
 * messages ("models/ctr/7/manifest.json"). Returns the manifest, or NULL with MANIFEST naming
 * the member and what it must be (unknown, missing, duplicated or mistyped members, another
 * format or format version, more than SEDP_BUNDLE_MAX_MANIFEST_BYTES), BAD_NAME for a `name`
 * the rules refuse, or OUTSIDE for a path that leaves the bundle or names the manifest. Does
 * not look at the file system. */
SEDP_API SedpBundleManifest *sedp_bundle_manifest_parse (const char *data, gsize size,
                                                         const char *where, GError **error);

/* Reads @path whole (at most SEDP_BUNDLE_MAX_MANIFEST_BYTES; MANIFEST when missing or larger,
 * G_FILE_ERROR when unreadable). Returns (transfer full) its bytes, or NULL. */
SEDP_API GBytes *sedp_bundle_manifest_read (const char *path, GError **error);

/* The JSON text of @manifest: members in the documented order, @files sorted by path, two
 * spaces of indent, a final newline. Free it. Parsing it gives back an equal manifest. */
SEDP_API char *sedp_bundle_manifest_to_string (const SedpBundleManifest *manifest);

/* The manifest's name for an element type: "float32", "float64", "int64", "int32", "int8",
 * "uint8", "bool", else ONNX's name ("float16", …). Static. */
SEDP_API const char *sedp_bundle_dtype_name (int onnx_dtype);

/* Checks a path of the manifest (a file, the model, a cube): relative, '/'-separated,
 * no empty, "." or ".." component, not manifest.json or manifest.sig, valid UTF-8 without
 * control characters. Else FALSE: OUTSIDE for "..", absolute paths and the manifest's names,
 * MANIFEST for the rest; @member names the member in the message. */
SEDP_API gboolean sedp_bundle_path_check (const char *path, const char *where, const char *member,
                                          GError **error);

/* ---- digests (digest.c) ----------------------------------------------------------------- */

/* The BLAKE2b-256 digest of the open file @fd, read from its start in 1 MiB chunks (@path
 * names it in messages). Returns FALSE with a G_FILE_ERROR when it cannot be read. */
SEDP_API gboolean sedp_bundle_digest_fd (int fd, const char *path, guint8 *digest,
                                         GError **error);

/* Lowercase hex of @n bytes into @out (2 @n + 1 bytes). */
SEDP_API void sedp_bundle_hex (const guint8 *bytes, gsize n, char *out);

/* ---- checking a bundle (verify.c) -------------------------------------------------------- */

/* Called once per check that passed: @check is "names", "manifest", "files", "signature" or
 * "contents", @detail one line saying what was found. */
typedef void (*SedpBundleCheckFunc) (const char *check, const char *detail, gpointer user_data);

/**
 * SedpBundleVerifyOptions:
 * @public_key: (nullable): SEDP_BUNDLE_PUBLIC_KEY_BYTES bytes: the signature is required and
 *   checked; NULL: a manifest.sig is not looked at
 * @key_name: (nullable): how messages name the key (its file); NULL: by its first hex digits
 * @contents: check 5 (cubes open, the model loads, both match the manifest)
 * @on_check: (nullable): told of each check that passed
 *
 * What sedp_bundle_verify_full() checks. Zero-fill it, then set what you need.
 */
typedef struct {
  const guint8 *public_key;
  const char *key_name;
  gboolean contents;
  SedpBundleCheckFunc on_check;
  gpointer user_data;
} SedpBundleVerifyOptions;

/* Checks the bundle in folder @bundle_dir as a server does before loading it, in this order,
 * stopping at the first failure: (1) the folder names: .../NAME/VERSION, both valid (BAD_NAME);
 * (2) manifest.json (MANIFEST, OUTSIDE), its name and version those of the folders (MANIFEST);
 * (3) every listed file is a regular file inside the bundle (OUTSIDE) with the listed size and
 * digest (DIGEST), and every file of the bundle but the manifest and its signature is listed
 * (DIGEST); (4) when a key is given, manifest.sig (SIGNATURE); (5) when @options->contents,
 * every cube opens with the manifest's hash key and the model loads, its operators supported and
 * its inputs and outputs the manifest's (CONTENT). @options may be NULL (no key, contents
 * checked). Returns TRUE and, when @out is not NULL, the manifest (transfer full). */
SEDP_API gboolean sedp_bundle_verify_full (const char *bundle_dir,
                                           const SedpBundleVerifyOptions *options,
                                           SedpBundleManifest **out, GError **error);

/* sedp_bundle_verify_full() with @public_key (nullable) and every check. */
SEDP_API gboolean sedp_bundle_verify (const char *bundle_dir, const guint8 *public_key,
                                      SedpBundleManifest **out, GError **error);

/* ---- signing (sign.c) -------------------------------------------------------------------- */

/* Writes a new key pair: PREFIX.secret (mode 0600) and PREFIX.public, each one line of hex.
 * Neither may exist (G_FILE_ERROR_EXIST); on failure neither is left. */
SEDP_API gboolean sedp_bundle_keygen (const char *prefix, GError **error);

/* Reads a key file: one line of 2 × SEDP_BUNDLE_SECRET_KEY_BYTES (or PUBLIC_KEY_BYTES) hex
 * digits. SIGNATURE naming @path when it is not (a secret key must also be a consistent libsodium
 * key: seed and public half); G_FILE_ERROR when it cannot be read. */
SEDP_API gboolean sedp_bundle_read_secret_key (const char *path, guint8 *secret_key,
                                               GError **error);
SEDP_API gboolean sedp_bundle_read_public_key (const char *path, guint8 *public_key,
                                               GError **error);

/* The message a bundle's signature covers: "sedp-bundle-signature 1\n" NAME "\n" VERSION "\n"
 * and the bytes of manifest.json. */
SEDP_API GBytes *sedp_bundle_signed_message (const char *name, gint64 version, GBytes *manifest);

/* Checks checks 1–3 of the bundle in @bundle_dir (the digests, so that a key never signs a
 * bundle that does not match its manifest), then writes its manifest.sig (replacing one there).
 * Errors: those of sedp_bundle_verify_full(), G_FILE_ERROR. */
SEDP_API gboolean sedp_bundle_sign (const char *bundle_dir, const guint8 *secret_key,
                                    GError **error);

/* Checks the manifest.sig of the bundle @bundle_dir named @name / @version, whose manifest.json
 * has the bytes @manifest, against @public_key (named @key_name, nullable, in messages). FALSE
 * with SIGNATURE when missing, malformed or not verifying. */
SEDP_API gboolean sedp_bundle_check_signature (const char *bundle_dir, const char *name,
                                               gint64 version, GBytes *manifest,
                                               const guint8 *public_key, const char *key_name,
                                               GError **error);

/* ---- making a bundle (pack.c) ------------------------------------------------------------ */

/**
 * SedpBundlePackOptions:
 * @name, @version: the model's name and the bundle's version
 * @repository: the bundle goes to REPOSITORY/NAME/VERSION (folders made as needed); or
 * @out: the bundle's folder (exactly one of @repository and @out)
 * @interrupted: (nullable): pack stops, removing what it wrote, once *@interrupted is non-zero
 *   (G_IO_ERROR_CANCELLED); for a signal handler's flag
 */
typedef struct {
  const char *name;
  gint64 version;
  const char *repository;
  const char *out;
  const volatile sig_atomic_t *interrupted;
} SedpBundlePackOptions;

/* Makes a bundle of folder @source: one *.onnx file and cube folders (a folder with a meta file,
 * at the top or one level down), nothing else. Checks that the cubes open and share one hash key
 * and that the model loads (CONTENT), copies the files into DEST.tmp-PID, writes the manifest,
 * then renames the folder to DEST, which must not exist (G_FILE_ERROR_EXIST). On failure
 * nothing is left. Returns the bundle's folder (free it) and, when @manifest is not NULL, the
 * manifest written (transfer full); or NULL. */
SEDP_API char *sedp_bundle_pack (const char *source, const SedpBundlePackOptions *options,
                                 SedpBundleManifest **manifest, GError **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpBundleManifest, sedp_bundle_manifest_free)

G_END_DECLS
