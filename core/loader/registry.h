/* sedp — the plugin registry: finds, opens and checks stage plugins with libltdl. */
#pragma once

#include <sedp/sedp.h>

G_BEGIN_DECLS

/** SEDP_LOADER_ERROR: errors finding and opening plugins. Codes are #SedpLoaderError. */
#define SEDP_LOADER_ERROR (sedp_loader_error_quark ())
SEDP_API GQuark sedp_loader_error_quark (void);

typedef enum {
  SEDP_LOADER_ERROR_NOT_FOUND,
  SEDP_LOADER_ERROR_NOT_A_PLUGIN,
  SEDP_LOADER_ERROR_ABI_MISMATCH,
  SEDP_LOADER_ERROR_INVALID_DESCRIPTOR,
  SEDP_LOADER_ERROR_DUPLICATE,
} SedpLoaderError;

/** SedpPluginInfo: one plugin module found on the plugin path. */
typedef struct {
  char *name;                       /* the descriptor's name */
  char *path;                       /* the module file */
  const SedpStageDescriptor *desc;  /* valid while the registry lives */
} SedpPluginInfo;

/**
 * SedpRegistry:
 * The plugins found in a list of folders (searched recursively, in order: a plugin in an
 * earlier folder shadows one with the same name in a later folder). Two modules with the same
 * plugin name in the same folder are an error when that name is looked up.
 */
typedef struct _SedpRegistry SedpRegistry;

/* The default search path: SEDP_PLUGIN_PATH (':'-separated), then the installed plugin folder. */
SEDP_API char **sedp_registry_default_path (void);

/* Scans @dirs. Modules that fail to load are remembered with their error, reported when their
 * name is looked up (or listed by sedp_registry_get_broken()). */
SEDP_API SedpRegistry *sedp_registry_new (const char *const *dirs);

SEDP_API void sedp_registry_free (SedpRegistry *registry);

/* The plugin called @name, or a module file when @name contains a '/' (resolved against
 * @base_dir). Errors: NOT_FOUND, NOT_A_PLUGIN, ABI_MISMATCH, INVALID_DESCRIPTOR, DUPLICATE. */
SEDP_API const SedpPluginInfo *sedp_registry_lookup (SedpRegistry *registry, const char *name,
                                                     const char *base_dir, GError **error);

/* Every valid plugin, sorted by name (SedpPluginInfo*, owned by the registry). */
SEDP_API GPtrArray *sedp_registry_list (SedpRegistry *registry);

/* Every module that could not be loaded, as "path: message" strings owned by the registry. */
SEDP_API GPtrArray *sedp_registry_get_broken (SedpRegistry *registry);

/* The search path in use, for messages. */
SEDP_API const char *sedp_registry_describe_path (SedpRegistry *registry);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpRegistry, sedp_registry_free)

G_END_DECLS
