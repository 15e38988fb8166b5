/* sedp — the versions of a pipeline's [model NAME] groups that one compiled graph serves
 * (docs/model-lifecycle.md): each chosen in its repository, checked, and its bundle's parts
 * offered to the stages' path options as "@NAME" and "@NAME/PATH". */
#pragma once

#include "../bundle/bundle.h"
#include "../dsl/spec.h"

G_BEGIN_DECLS

/**
 * SedpGraphModel:
 * One [model NAME] bound to a version: the bundle the graph's stages were created from.
 * Immutable once bound; owned by the graph (SedpGraph.models).
 */
typedef struct {
  char *name;
  gint64 version;
  char *dir;                    /* the bundle's folder, REPOSITORY/NAME/VERSION, absolute */
  gboolean signature_checked;   /* the group names a public_key, and the signature verified */
  SedpBundleManifest *manifest; /* as checked */
} SedpGraphModel;

SEDP_API void sedp_graph_model_free (SedpGraphModel *model);

/**
 * sedp_graph_bind_models:
 * @spec: a parsed pipeline
 * @versions: (nullable): model name → gint64 * : the version to bind instead of the group's
 *   policy (a reload, a rollback); NULL or a name not in it: the group's `version`
 * @parts: where each bundle's parts are added: "@NAME" → its dense model's absolute path,
 *   "@NAME/PATH" → the file or folder PATH of the bundle, for every file the manifest lists and
 *   every folder above one (a cube)
 *
 * Chooses each [model NAME]'s version in its repository (sedp_bundle_repository_resolve()) and
 * checks its bundle as `sedp model verify` does, with the group's public_key when it names one
 * (the contents are left to the stages that load them). Reads files; call it off any serving
 * thread. Returns (transfer full) a GPtrArray of SedpGraphModel in the groups' order, or NULL
 * with the bundle error (SEDP_BUNDLE_ERROR, G_FILE_ERROR) prefixed by "FILE:LINE: [model NAME]: ".
 */
SEDP_API GPtrArray *sedp_graph_bind_models (const SedpPipelineSpec *spec, GHashTable *versions,
                                            GHashTable *parts, GError **error);

/* The bound model named @name of @models (nullable), or NULL. */
SEDP_API const SedpGraphModel *sedp_graph_models_find (const GPtrArray *models, const char *name);

G_END_DECLS
