/* sedp — plugin discovery and loading on libltdl. */
#include "registry.h"

#include "../dsl/keys.h"

#include <ltdl.h>
#include <string.h>

G_DEFINE_QUARK (sedp-loader-error-quark, sedp_loader_error)

typedef struct {
  SedpPluginInfo info;
  lt_dlhandle handle;
  char *dir;        /* the search folder it was found under */
  GError *error;    /* set for modules that are not usable plugins */
  char *stem;       /* file name without "lib" and ".so", to match broken modules by name */
  gboolean by_path; /* opened by a lookup with a module path: not on the search path */
} Module;

struct _SedpRegistry {
  GPtrArray *modules; /* Module*, in search order */
  GPtrArray *broken;  /* char* */
  char *path_text;
};

static GMutex ltdl_lock;
static guint ltdl_users;

static void
module_free (Module *m)
{
  if (m->handle)
    lt_dlclose (m->handle);
  g_free (m->info.name);
  g_free (m->info.path);
  g_free (m->dir);
  g_free (m->stem);
  g_clear_error (&m->error);
  g_free (m);
}

char **
sedp_registry_default_path (void)
{
  GPtrArray *dirs = g_ptr_array_new ();
  const char *env = g_getenv ("SEDP_PLUGIN_PATH");
  if (env) {
    g_auto (GStrv) parts = g_strsplit (env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; parts[i]; i++)
      if (*parts[i])
        g_ptr_array_add (dirs, g_strdup (parts[i]));
  }
  g_ptr_array_add (dirs, g_strdup (SEDP_PLUGINDIR));
  g_ptr_array_add (dirs, NULL);
  return (char **) g_ptr_array_free (dirs, FALSE);
}

/* Opens @path and checks its descriptor; fills m->info or m->error. */
static void
module_open (Module *m, const char *path)
{
  m->info.path = g_strdup (path);
  g_autofree char *base = g_path_get_basename (path);
  char *stem = base;
  if (g_str_has_prefix (stem, "lib"))
    stem += 3;
  char *dot = strstr (stem, ".so");
  if (dot)
    *dot = '\0';
  m->stem = g_strdup (stem);

  lt_dladvise advise;
  lt_dladvise_init (&advise);
  lt_dladvise_local (&advise);
  m->handle = lt_dlopenadvise (path, advise);
  lt_dladvise_destroy (&advise);
  if (m->handle == NULL) {
    const char *why = lt_dlerror ();
    g_set_error (&m->error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_A_PLUGIN,
                 "%s: not a plugin: cannot load module: %s", path, why ? why : "unknown error");
    return;
  }
  const SedpStageDescriptor *d = lt_dlsym (m->handle, SEDP_STAGE_DESCRIPTOR_SYMBOL);
  if (d == NULL) {
    g_set_error (&m->error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_A_PLUGIN,
                 "%s: not a plugin: the module has no '%s' symbol (declare one with "
                 "SEDP_STAGE_DEFINE)",
                 path, SEDP_STAGE_DESCRIPTOR_SYMBOL);
    return;
  }
  if (d->abi_major != SEDP_ABI_MAJOR || d->abi_minor > SEDP_ABI_MINOR) {
    g_set_error (&m->error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_ABI_MISMATCH,
                 "%s: plugin '%s' was built for stage ABI %u.%u, this sedp provides %u.%u "
                 "(rebuild the plugin against these headers)",
                 path, d->name ? d->name : "?", d->abi_major, d->abi_minor, SEDP_ABI_MAJOR,
                 SEDP_ABI_MINOR);
    return;
  }
  const char *missing = NULL;
  if (d->name == NULL || *d->name == '\0')
    missing = "name";
  else if (d->create == NULL)
    missing = "create";
  else if (d->process == NULL)
    missing = "process";
  else if (d->destroy == NULL)
    missing = "destroy";
  else if (d->scope != SEDP_SCOPE_REQUEST && d->scope != SEDP_SCOPE_ITEM)
    missing = "scope";
  if (missing) {
    g_set_error (&m->error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR,
                 "%s: invalid plugin descriptor: '%s' is not set", path, missing);
    return;
  }
  for (const SedpOptionSpec *o = d->options; o && o->name; o++) {
    /* The runtime's stage keys are the DSL's table (core/dsl/keys.c), the one list of them. */
    if (sedp_dsl_runtime_key (SEDP_DSL_GROUP_STAGE, o->name)) {
      g_autofree char *reserved = sedp_dsl_key_names (SEDP_DSL_GROUP_STAGE);
      g_set_error (&m->error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR,
                   "%s: invalid plugin descriptor: option '%s' has the name of a runtime key, "
                   "which the runtime reads and never passes on (its stage keys: %s); rename "
                   "the option", path, o->name, reserved);
      return;
    }
    if (o->type < SEDP_OPTION_BOOL || o->type > SEDP_OPTION_STRING_LIST) {
      g_set_error (&m->error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR,
                   "%s: invalid plugin descriptor: option '%s' has an unknown type %d", path,
                   o->name, (int) o->type);
      return;
    }
  }
  m->info.name = g_strdup (d->name);
  m->info.desc = d;
}

/* g_ptr_array_sort() passes pointers to the slots, not the strings. */
static int
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char *const *) a, *(char *const *) b);
}

static void
scan_dir (SedpRegistry *reg, const char *root, const char *dir, guint depth)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  if (d == NULL)
    return;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;
  while ((name = g_dir_read_name (d)))
    g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, compare_names); /* the same order on every machine */
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path = g_build_filename (dir, names->pdata[i], NULL);
    if (g_file_test (path, G_FILE_TEST_IS_DIR)) {
      if (depth < 4)
        scan_dir (reg, root, path, depth + 1);
    } else if (g_str_has_suffix (path, ".so")) {
      Module *m = g_new0 (Module, 1);
      m->dir = g_strdup (root);
      module_open (m, path);
      if (m->error)
        g_ptr_array_add (reg->broken, g_strdup (m->error->message));
      g_ptr_array_add (reg->modules, m);
    }
  }
}

SedpRegistry *
sedp_registry_new (const char *const *dirs)
{
  g_mutex_lock (&ltdl_lock);
  if (ltdl_users++ == 0)
    lt_dlinit ();
  g_mutex_unlock (&ltdl_lock);

  SedpRegistry *reg = g_new0 (SedpRegistry, 1);
  reg->modules = g_ptr_array_new_with_free_func ((GDestroyNotify) module_free);
  reg->broken = g_ptr_array_new_with_free_func (g_free);
  reg->path_text = g_strjoinv (G_SEARCHPATH_SEPARATOR_S, (char **) dirs);
  g_autoptr (GHashTable) scanned = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; dirs && dirs[i]; i++) {
    char *abs = g_canonicalize_filename (dirs[i], NULL);
    if (g_hash_table_contains (scanned, abs)) {
      g_free (abs); /* a folder named twice on the path counts at its first place */
      continue;
    }
    g_hash_table_add (scanned, abs);
    scan_dir (reg, abs, abs, 0);
  }
  return reg;
}

void
sedp_registry_free (SedpRegistry *reg)
{
  if (reg == NULL)
    return;
  g_ptr_array_unref (reg->modules);
  g_ptr_array_unref (reg->broken);
  g_free (reg->path_text);
  g_free (reg);
  g_mutex_lock (&ltdl_lock);
  if (--ltdl_users == 0)
    lt_dlexit ();
  g_mutex_unlock (&ltdl_lock);
}

static const SedpPluginInfo *
lookup_file (SedpRegistry *reg, const char *file, const char *base_dir, GError **error)
{
  g_autofree char *path = g_canonicalize_filename (file, base_dir);
  for (guint i = 0; i < reg->modules->len; i++) {
    Module *m = reg->modules->pdata[i];
    if (strcmp (m->info.path, path) == 0) {
      if (m->error) {
        g_propagate_error (error, g_error_copy (m->error));
        return NULL;
      }
      return &m->info;
    }
  }
  if (!g_file_test (path, G_FILE_TEST_EXISTS)) {
    g_set_error (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_FOUND,
                 "plugin module '%s' not found", path);
    return NULL;
  }
  Module *m = g_new0 (Module, 1);
  m->dir = g_path_get_dirname (path);
  m->by_path = TRUE;
  module_open (m, path);
  g_ptr_array_add (reg->modules, m);
  if (m->error) {
    g_propagate_error (error, g_error_copy (m->error));
    return NULL;
  }
  return &m->info;
}

const SedpPluginInfo *
sedp_registry_lookup (SedpRegistry *reg, const char *name, const char *base_dir, GError **error)
{
  g_return_val_if_fail (reg != NULL && name != NULL, NULL);
  if (strchr (name, '/'))
    return lookup_file (reg, name, base_dir, error);

  Module *found = NULL, *broken = NULL;
  for (guint i = 0; i < reg->modules->len; i++) {
    Module *m = reg->modules->pdata[i];
    if (m->by_path)
      continue;
    if (m->error) {
      if (broken == NULL && strcmp (m->stem, name) == 0)
        broken = m;
      continue;
    }
    if (strcmp (m->info.name, name) != 0)
      continue;
    if (found == NULL) {
      found = m;
    } else if (strcmp (found->dir, m->dir) == 0) {
      g_set_error (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_DUPLICATE,
                   "duplicate plugin name '%s': declared by %s and by %s", name, found->info.path,
                   m->info.path);
      return NULL;
    }
  }
  if (found)
    return &found->info;
  if (broken) {
    g_propagate_error (error, g_error_copy (broken->error));
    return NULL;
  }
  g_set_error (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_FOUND,
               "plugin '%s' not found on the plugin path (%s; set SEDP_PLUGIN_PATH)", name,
               reg->path_text);
  return NULL;
}

static gint
compare_info (gconstpointer a, gconstpointer b)
{
  const SedpPluginInfo *x = *(SedpPluginInfo *const *) a, *y = *(SedpPluginInfo *const *) b;
  return strcmp (x->name, y->name);
}

GPtrArray *
sedp_registry_list (SedpRegistry *reg)
{
  GPtrArray *out = g_ptr_array_new ();
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);
  for (guint i = 0; i < reg->modules->len; i++) {
    Module *m = reg->modules->pdata[i];
    if (m->error || m->by_path || g_hash_table_contains (seen, m->info.name))
      continue;
    g_hash_table_add (seen, m->info.name);
    g_ptr_array_add (out, &m->info);
  }
  g_ptr_array_sort (out, compare_info);
  return out;
}

GPtrArray *
sedp_registry_get_broken (SedpRegistry *reg)
{
  return reg->broken;
}

const char *
sedp_registry_describe_path (SedpRegistry *reg)
{
  return reg->path_text;
}
