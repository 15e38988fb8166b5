/* sedp — bundles: what the files of core/bundle/ share. Private to libsedp. */
#pragma once

#include "bundle.h"

#include "../cube/cube-format.h"

#include <sedp/engine.h>

G_BEGIN_DECLS

/* Files are read and copied in chunks of this size. */
#define BUNDLE_CHUNK ((gsize) 1 << 20)

/* Exactly 2 @n hex digits (@len bytes of @text, either case) into @out. */
gboolean bundle_unhex (const char *text, gsize len, guint8 *out, gsize n);

/* Sets a G_FILE_ERROR "PATH: WHAT: strerror(ERR)" and returns FALSE. */
gboolean bundle_fail_errno (GError **error, int err, const char *what, const char *path);

/* The names in folder @path, sorted by strcmp (free the array), or NULL with a G_FILE_ERROR. */
GPtrArray *bundle_sorted_entries (const char *path, GError **error);

/* Sets a SEDP_BUNDLE_ERROR of @code from a printf-style message and returns FALSE. */
gboolean bundle_fail (GError **error, SedpBundleError code, const char *fmt, ...)
  G_GNUC_PRINTF (3, 4);

/**
 * BundleCheck:
 * A bundle as checks 1 to 3 see it. @dir is the folder as the caller named it (for messages),
 * @real its canonical path (symbolic links resolved), @manifest_bytes the bytes of
 * manifest.json that were parsed: the signature is checked over these very bytes.
 */
typedef struct {
  char *dir;
  char *real;
  char *name;
  gint64 version;
  GBytes *manifest_bytes;
  SedpBundleManifest *manifest;
} BundleCheck;

void bundle_check_clear (BundleCheck *check);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (BundleCheck, bundle_check_clear)

/* Check 1: resolves @dir and takes NAME and VERSION from its last two components (BAD_NAME). */
gboolean bundle_check_names (BundleCheck *check, const char *dir, GError **error);
/* Check 2: reads and parses manifest.json; its name and version must be the folders'. */
gboolean bundle_check_manifest (BundleCheck *check, GError **error);
/* Check 3: the listed files (inside, regular, size, digest), then no file unlisted. */
gboolean bundle_check_files (BundleCheck *check, GError **error);
/* Check 5: the cubes and the model against the manifest. */
gboolean bundle_check_contents (BundleCheck *check, GString *detail, GError **error);

/* Compares the inputs or outputs (@what: "input" or "output") of the model @path with the
 * manifest's @expected (CONTENT naming the first difference). */
gboolean bundle_tensors_match (const GPtrArray *actual, const GPtrArray *expected,
                               const char *what, const char *path, GError **error);

/* Loads the ONNX model @file (named @shown in messages), checks that the engine runs it, and
 * appends its inputs and outputs to @inputs and @outputs as the manifest records them; CONTENT
 * when it does not load, has operators the engine lacks, or an input or output has no shape. */
gboolean bundle_model_tensors (const char *file, const char *shown, GPtrArray *inputs,
                               GPtrArray *outputs, GError **error);

/* Frees a SedpBundleTensor (the free function of a manifest's inputs and outputs). */
void bundle_tensor_free (gpointer tensor);

G_END_DECLS
