/* sedp tests — the plugin loader (registry.c): discovery, the checks on a module and its
 * descriptor, name resolution (shadowing, duplicates, module paths) and a plugin whose create
 * fails. The broken modules are built from tests/plugins into folders of build/tests/plugins,
 * one folder per kind of breakage. */
#include "test-common.h"

#include "graph/graph.h"
#include "loader/registry.h"
#include "runtime/pipeline.h"

#include <glib/gstdio.h>
#include <string.h>

/* SEDP_ASSERT_ERROR (domain and message needles), plus the error code. */
#define ASSERT_GERROR(err, dom, cod, ...)                                                        \
  do {                                                                                           \
    const GError *_e = (err);                                                                    \
    SEDP_ASSERT_ERROR (_e, dom, __VA_ARGS__);                                                    \
    if (_e->domain != (dom) || _e->code != (int) (cod))                                          \
      fprintf (stderr, "\n  error '%s' is %s/%d, expected %s/%d\n", _e->message,                 \
               g_quark_to_string (_e->domain), _e->code, g_quark_to_string (dom), (int) (cod));  \
    CU_ASSERT_EQUAL (_e->code, (int) (cod));                                                     \
  } while (0)

/* A folder of build/tests/plugins. */
static char *
fixture_dir (const char *name)
{
  return g_build_filename (SEDP_TEST_FIXTURE_PLUGIN_DIR, name, NULL);
}

/* A registry on the fixture folders named in the NULL-terminated list (or SEDP_TEST_PLUGIN_DIR
 * for the name "@plugins"). */
static SedpRegistry *
registry_on (const char *first, ...)
{
  g_autoptr (GPtrArray) dirs = g_ptr_array_new_with_free_func (g_free);
  va_list ap;
  va_start (ap, first);
  for (const char *d = first; d; d = va_arg (ap, const char *))
    g_ptr_array_add (dirs, strcmp (d, "@plugins") == 0 ? g_strdup (SEDP_TEST_PLUGIN_DIR)
                           : g_path_is_absolute (d)   ? g_strdup (d)
                                                      : fixture_dir (d));
  va_end (ap);
  g_ptr_array_add (dirs, NULL);
  return sedp_registry_new ((const char *const *) dirs->pdata);
}

static char *
module_path (const char *dir, const char *file)
{
  return g_build_filename (SEDP_TEST_FIXTURE_PLUGIN_DIR, dir, file, NULL);
}

/* ---- errors ---------------------------------------------------------------------------- */

static void
test_not_found (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("good", "shadow1", NULL);
  g_autofree char *good = fixture_dir ("good"), *shadow1 = fixture_dir ("shadow1");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "nosuch", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_FOUND, "'nosuch'", good, shadow1,
                 "SEDP_PLUGIN_PATH");
  g_autofree char *path = g_strjoin (G_SEARCHPATH_SEPARATOR_S, good, shadow1, NULL);
  CU_ASSERT_STRING_EQUAL (sedp_registry_describe_path (reg), path);
  /* The plugins that are there are found. */
  const SedpPluginInfo *probe = sedp_registry_lookup (reg, "path_probe", NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (probe);
  CU_ASSERT_STRING_EQUAL (probe->name, "path_probe");
  CU_ASSERT_STRING_EQUAL (probe->desc->name, "path_probe");
}

static void
test_not_found_missing_folder (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("/nonexistent/sedp-plugins", NULL);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "passthrough", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_FOUND, "'passthrough'",
                 "/nonexistent/sedp-plugins");
  g_autoptr (GPtrArray) list = sedp_registry_list (reg);
  CU_ASSERT_EQUAL (list->len, 0);
}

static void
test_not_a_plugin (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("notaplugin", NULL);
  g_autofree char *module = module_path ("notaplugin", "notaplugin.so");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "notaplugin", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_A_PLUGIN, module,
                 "not a plugin", SEDP_STAGE_DESCRIPTOR_SYMBOL);
  /* It is listed as broken, not as a plugin. */
  GPtrArray *broken = sedp_registry_get_broken (reg);
  CU_ASSERT_EQUAL_FATAL (broken->len, 1);
  CU_ASSERT_TRUE (g_str_has_prefix (broken->pdata[0], module));
  g_autoptr (GPtrArray) list = sedp_registry_list (reg);
  CU_ASSERT_EQUAL (list->len, 0);
}

/* A ".so" that is not an ELF object at all, written at test time. */
static void
test_not_a_module (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-loader-XXXXXX", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (tmp);
  g_autofree char *garbage = g_build_filename (tmp, "garbage.so", NULL);
  g_autofree char *libjunk = g_build_filename (tmp, "libjunk.so", NULL);
  guint8 bytes[512];
  for (guint i = 0; i < sizeof bytes; i++)
    bytes[i] = (guint8) (i * 37 + 11);
  CU_ASSERT_FATAL (g_file_set_contents (garbage, (const char *) bytes, sizeof bytes, NULL));
  CU_ASSERT_FATAL (g_file_set_contents (libjunk, "not an ELF file\n", -1, NULL));
  {
    const char *const dirs[] = {tmp, SEDP_TEST_PLUGIN_DIR, NULL};
    g_autoptr (SedpRegistry) reg = sedp_registry_new (dirs);
    CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "garbage", NULL, &error));
    ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_A_PLUGIN, garbage,
                   "cannot load module");
    g_clear_error (&error);
    /* Broken modules are matched by their file name without "lib" and ".so". */
    CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "junk", NULL, &error));
    ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_A_PLUGIN, libjunk);
    g_clear_error (&error);
    CU_ASSERT_EQUAL (sedp_registry_get_broken (reg)->len, 2);
    /* They do not hide the good plugins of the other folders. */
    const SedpPluginInfo *info = sedp_registry_lookup (reg, "passthrough", NULL, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL (info);
    g_autoptr (GPtrArray) list = sedp_registry_list (reg);
    CU_ASSERT_EQUAL (list->len, 11);
  }
  g_unlink (garbage);
  g_unlink (libjunk);
  g_rmdir (tmp);
}

static void
test_abi_major_mismatch (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("abi", NULL);
  g_autofree char *module = module_path ("abi", "abi_major.so");
  g_autofree char *built = g_strdup_printf ("ABI %u.%u", SEDP_ABI_MAJOR + 1, SEDP_ABI_MINOR);
  g_autofree char *host = g_strdup_printf ("provides %u.%u", SEDP_ABI_MAJOR, SEDP_ABI_MINOR);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "abi_major", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_ABI_MISMATCH, module, "'abi_major'",
                 built, host);
}

static void
test_abi_minor_newer (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("abi", NULL);
  g_autofree char *module = module_path ("abi", "abi_minor.so");
  g_autofree char *built = g_strdup_printf ("ABI %u.%u", SEDP_ABI_MAJOR, SEDP_ABI_MINOR + 1);
  g_autofree char *host = g_strdup_printf ("provides %u.%u", SEDP_ABI_MAJOR, SEDP_ABI_MINOR);
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "abi_minor", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_ABI_MISMATCH, module, "'abi_minor'",
                 built, host);
  CU_ASSERT_EQUAL (sedp_registry_get_broken (reg)->len, 2);
}

static void
test_invalid_descriptor (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("invalid", NULL);
  g_autofree char *no_process = module_path ("invalid", "no_process.so");
  g_autofree char *bad_scope = module_path ("invalid", "bad_scope.so");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "no_process", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR, no_process,
                 "'process' is not set");
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "bad_scope", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR, bad_scope,
                 "'scope'");
  g_clear_error (&error);
  g_autofree char *runtime_key = module_path ("invalid", "runtime_key_option.so");
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "runtime_key_option", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR, runtime_key,
                 "option 'batch' has the name of a runtime key");
  g_clear_error (&error);
  /* Every stage key of the DSL's table is refused, "cpus" included (the loader once kept its own
   * shorter list, and a plugin option named cpus never received its value). */
  g_autofree char *cpus = module_path ("invalid", "cpus_option.so");
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "cpus_option", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_INVALID_DESCRIPTOR, cpus,
                 "option 'cpus' has the name of a runtime key", "branch_max_rate", "rename");
  g_autoptr (GPtrArray) list = sedp_registry_list (reg);
  CU_ASSERT_EQUAL (list->len, 0);
}

static void
test_duplicate_name (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("duplicate", NULL);
  g_autofree char *a = module_path ("duplicate", "dup_a.so");
  g_autofree char *b = module_path ("duplicate", "dup_b.so");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "dup", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_DUPLICATE, "'dup'", a, b);
  /* The same with other folders before it, whose plugins still resolve. */
  g_autoptr (SedpRegistry) later = registry_on ("shadow1", "duplicate", NULL);
  CU_ASSERT_PTR_NOT_NULL (sedp_registry_lookup (later, "shadow", NULL, NULL));
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (later, "dup", NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_DUPLICATE, a, b);
}

static void
test_shadowing (void)
{
  {
    g_autoptr (SedpRegistry) reg = registry_on ("shadow1", "shadow2", NULL);
    g_autoptr (GError) error = NULL;
    const SedpPluginInfo *info = sedp_registry_lookup (reg, "shadow", NULL, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (info);
    CU_ASSERT_STRING_EQUAL (info->desc->version, "first");
    g_autofree char *expected = module_path ("shadow1", "shadow_first.so");
    CU_ASSERT_STRING_EQUAL (info->path, expected);
  }
  {
    g_autoptr (SedpRegistry) reg = registry_on ("shadow2", "shadow1", NULL);
    g_autoptr (GError) error = NULL;
    const SedpPluginInfo *info = sedp_registry_lookup (reg, "shadow", NULL, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL_FATAL (info);
    CU_ASSERT_STRING_EQUAL (info->desc->version, "second");
    g_autofree char *expected = module_path ("shadow2", "shadow_second.so");
    CU_ASSERT_STRING_EQUAL (info->path, expected);
  }
}

/* Regression: a folder that appears twice on the search path (SEDP_PLUGIN_PATH naming the
 * installed folder, which the default path appends again, or a repeated entry) is scanned once,
 * so its plugins are not "duplicates" of themselves. */
static void
test_same_folder_twice (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("@plugins", "@plugins", NULL);
  g_autoptr (GError) error = NULL;
  const SedpPluginInfo *info = sedp_registry_lookup (reg, "passthrough", NULL, &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL (info);
}

/* ---- module paths ---------------------------------------------------------------------- */

static void
test_lookup_by_path (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("@plugins", NULL);
  g_autoptr (GError) error = NULL;
  /* A module already on the path: the same plugin as by name. */
  const SedpPluginInfo *by_name = sedp_registry_lookup (reg, "passthrough", NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (by_name);
  const SedpPluginInfo *by_path =
      sedp_registry_lookup (reg, "./passthrough.so", SEDP_TEST_PLUGIN_DIR, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_EQUAL (by_path, by_name);

  /* A module off the path, relative to the base folder, opened on demand and kept. */
  const SedpPluginInfo *probe =
      sedp_registry_lookup (reg, "good/path_probe.so", SEDP_TEST_FIXTURE_PLUGIN_DIR, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (probe);
  CU_ASSERT_STRING_EQUAL (probe->name, "path_probe");
  g_autofree char *probe_path = module_path ("good", "path_probe.so");
  CU_ASSERT_STRING_EQUAL (probe->path, probe_path);
  CU_ASSERT_PTR_EQUAL (sedp_registry_lookup (reg, probe_path, NULL, NULL), probe);

  /* A module path that does not exist. */
  g_autofree char *missing = module_path ("good", "missing.so");
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "good/missing.so", SEDP_TEST_FIXTURE_PLUGIN_DIR, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_FOUND, missing);
  g_clear_error (&error);

  /* A broken module by path reports its own error, also the second time. */
  g_autofree char *notaplugin = module_path ("notaplugin", "notaplugin.so");
  for (guint i = 0; i < 2; i++) {
    CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, notaplugin, NULL, &error));
    ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_NOT_A_PLUGIN, notaplugin);
    g_clear_error (&error);
  }
  g_autofree char *abi = module_path ("abi", "abi_major.so");
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, abi, NULL, &error));
  ASSERT_GERROR (error, SEDP_LOADER_ERROR, SEDP_LOADER_ERROR_ABI_MISMATCH, abi);
}

/* Regression: a module opened by its path is not found by its plain name afterwards, nor
 * listed, since it is not on the search path (name lookups must not depend on which stage
 * named a module by path first). */
static void
test_path_lookup_does_not_extend_search_path (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("@plugins", NULL);
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "path_probe", NULL, NULL));
  CU_ASSERT_PTR_NOT_NULL_FATAL (
      sedp_registry_lookup (reg, "good/path_probe.so", SEDP_TEST_FIXTURE_PLUGIN_DIR, NULL));
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_registry_lookup (reg, "path_probe", NULL, &error));
  CU_ASSERT (error && error->domain == SEDP_LOADER_ERROR &&
             error->code == SEDP_LOADER_ERROR_NOT_FOUND);
  g_autoptr (GPtrArray) list = sedp_registry_list (reg);
  CU_ASSERT_EQUAL (list->len, 11);
}

static gboolean
copy_file (const char *from, const char *to)
{
  g_autofree char *data = NULL;
  gsize len = 0;
  return g_file_get_contents (from, &data, &len, NULL) &&
         g_file_set_contents (to, data, (gssize) len, NULL);
}

/* `plugin = ./mods/passthrough.so` in a pipeline file is resolved against the file's folder. */
static void
test_pipeline_plugin_path (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *tmp = g_dir_make_tmp ("sedp-loader-XXXXXX", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (tmp);
  g_autofree char *mods = g_build_filename (tmp, "mods", NULL);
  g_autofree char *module = g_build_filename (mods, "passthrough.so", NULL);
  g_autofree char *source = g_build_filename (SEDP_TEST_PLUGIN_DIR, "passthrough.so", NULL);
  g_autofree char *pipeline = g_build_filename (tmp, "local.pipeline", NULL);
  CU_ASSERT_FATAL (g_mkdir (mods, 0700) == 0);
  CU_ASSERT_FATAL (copy_file (source, module));
  CU_ASSERT_FATAL (g_file_set_contents (pipeline,
                                        "[stage reader]\nplugin = ./mods/passthrough.so\n"
                                        "scope = request\n\n[stage next]\n"
                                        "plugin = mods/missing.so\nafter = reader\n",
                                        -1, NULL));
  {
    /* An empty search path: only the module path can find it. */
    const char *const dirs[] = {NULL};
    g_autoptr (SedpRegistry) reg = sedp_registry_new (dirs);
    g_autoptr (SedpGraph) graph = sedp_graph_load (pipeline, reg, &error);
    CU_ASSERT_PTR_NULL (graph);
    g_autofree char *missing = g_build_filename (mods, "missing.so", NULL);
    ASSERT_GERROR (error, SEDP_DSL_ERROR, SEDP_DSL_ERROR_PLUGIN, pipeline, "[stage next] plugin",
                   missing);
    g_clear_error (&error);
    CU_ASSERT_FATAL (g_file_set_contents (pipeline,
                                          "[stage reader]\nplugin = ./mods/passthrough.so\n"
                                          "scope = request\n",
                                          -1, NULL));
    SedpGraph *ok = sedp_graph_load (pipeline, reg, &error);
    CU_ASSERT_PTR_NULL (error);
    CU_ASSERT_PTR_NOT_NULL (ok);
    if (ok) {
      CU_ASSERT_STRING_EQUAL (ok->nodes[0].plugin->name, "passthrough");
      CU_ASSERT_STRING_EQUAL (ok->nodes[0].plugin->path, module);
    }
    sedp_graph_free (ok);
  }
  g_unlink (pipeline);
  g_unlink (module);
  g_rmdir (mods);
  g_rmdir (tmp);
}

/* ---- a plugin whose create fails -------------------------------------------------------- */

static void
test_failing_create (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("@plugins", NULL);
  g_autofree char *path =
      g_build_filename (SEDP_TEST_SRCDIR, "fixtures", "loader", "fail-create.pipeline", NULL);
  g_autoptr (GError) error = NULL;
  SedpGraph *graph = sedp_graph_load (path, reg, &error);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
  SedpPipeline *pipeline = sedp_pipeline_new (graph, &error);
  CU_ASSERT_PTR_NULL (pipeline);
  g_autofree char *where = g_strdup_printf ("%s:9: [stage faults]", path);
  ASSERT_GERROR (error, SEDP_RUNTIME_ERROR, SEDP_RUNTIME_ERROR_CREATE_FAILED, where,
                 "'fault_injector'", "fail_create is set");
  sedp_pipeline_free (pipeline);
}

static void
test_create_ok_control (void)
{
  g_autoptr (SedpRegistry) reg = registry_on ("@plugins", NULL);
  g_autofree char *path =
      g_build_filename (SEDP_TEST_SRCDIR, "fixtures", "loader", "create-ok.pipeline", NULL);
  g_autoptr (GError) error = NULL;
  SedpGraph *graph = sedp_graph_load (path, reg, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (graph);
  SedpPipeline *pipeline = sedp_pipeline_new (graph, &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_PTR_NULL (error);
  CU_ASSERT_PTR_NOT_NULL (pipeline);
  sedp_pipeline_free (pipeline);
}

/* ---- listing and the search path -------------------------------------------------------- */

static void
test_list_sorted_unique (void)
{
  g_autoptr (SedpRegistry) reg =
      registry_on ("shadow2", "@plugins", "notaplugin", "shadow1", "abi", "invalid", NULL);
  g_autoptr (GPtrArray) list = sedp_registry_list (reg);
  const char *const expected[] = {"ab_router",       "cube_accessor", "data_reader", "fault_injector",
                                  "feature_processor", "model_inference", "passthrough",
                                  "query_cache",     "responder",   "shadow",
                                  "shedder",         "synthetic_work"};
  CU_ASSERT_EQUAL_FATAL (list->len, G_N_ELEMENTS (expected));
  for (guint i = 0; i < list->len; i++) {
    const SedpPluginInfo *info = list->pdata[i];
    CU_ASSERT_STRING_EQUAL (info->name, expected[i]);
    CU_ASSERT_PTR_NOT_NULL (info->desc);
    if (i > 0)
      CU_ASSERT (strcmp (((SedpPluginInfo *) list->pdata[i - 1])->name, info->name) < 0);
    /* The listed "shadow" is the one lookup finds: the earlier folder's. */
    if (strcmp (info->name, "shadow") == 0) {
      CU_ASSERT_STRING_EQUAL (info->desc->version, "second");
      CU_ASSERT_PTR_EQUAL (sedp_registry_lookup (reg, "shadow", NULL, NULL), info);
    }
  }
  /* notaplugin, abi_major, abi_minor, no_process, bad_scope, runtime_key_option, cpus_option. */
  CU_ASSERT_EQUAL (sedp_registry_get_broken (reg)->len, 7);
}

static void
test_default_path (void)
{
  g_autofree char *saved = g_strdup (g_getenv ("SEDP_PLUGIN_PATH"));
  g_setenv ("SEDP_PLUGIN_PATH", "/opt/a:/opt/b::/opt/c", TRUE);
  {
    g_auto (GStrv) path = sedp_registry_default_path ();
    CU_ASSERT_EQUAL_FATAL (g_strv_length (path), 4);
    CU_ASSERT_STRING_EQUAL (path[0], "/opt/a");
    CU_ASSERT_STRING_EQUAL (path[1], "/opt/b");
    CU_ASSERT_STRING_EQUAL (path[2], "/opt/c");
    CU_ASSERT_TRUE (g_str_has_suffix (path[3], "plugins")); /* the installed folder, last */
  }
  g_unsetenv ("SEDP_PLUGIN_PATH");
  {
    g_auto (GStrv) path = sedp_registry_default_path ();
    CU_ASSERT_EQUAL (g_strv_length (path), 1);
  }
  if (saved)
    g_setenv ("SEDP_PLUGIN_PATH", saved, TRUE);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("loader", NULL, NULL);
  struct {
    const char *name;
    CU_TestFunc fn;
  } tests[] = {
#define T(f) {#f, f}
    T (test_not_found),
    T (test_not_found_missing_folder),
    T (test_not_a_plugin),
    T (test_not_a_module),
    T (test_abi_major_mismatch),
    T (test_abi_minor_newer),
    T (test_invalid_descriptor),
    T (test_duplicate_name),
    T (test_shadowing),
    T (test_same_folder_twice),
    T (test_lookup_by_path),
    T (test_path_lookup_does_not_extend_search_path),
    T (test_pipeline_plugin_path),
    T (test_failing_create),
    T (test_create_ok_control),
    T (test_list_sorted_unique),
    T (test_default_path),
#undef T
  };
  for (guint i = 0; i < G_N_ELEMENTS (tests); i++)
    if (CU_add_test (s, tests[i].name, tests[i].fn) == NULL)
      return 1;
  return sedp_test_run ();
}
