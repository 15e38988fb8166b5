/* sedp tests — a model's versions in a repository and which one to serve
 * (core/bundle/repository.c): version folders only, numeric order, pinned and latest, and the
 * errors. The bundles themselves are not looked at (tests/bundle/test-bundle.c checks them). */
#include "test-common.h"

#include "bundle/bundle.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static char *repo;

static void
make (const char *rel, gboolean folder)
{
  g_autofree char *path = g_build_filename (repo, rel, NULL);
  if (folder) {
    CU_ASSERT_EQUAL (g_mkdir_with_parents (path, 0755), 0);
  } else {
    CU_ASSERT_TRUE (g_file_set_contents (path, "x", 1, NULL));
  }
}

static int
suite_init (void)
{
  repo = g_dir_make_tmp ("sedp-repo-XXXXXX", NULL);
  return repo ? 0 : 1;
}

static int
suite_cleanup (void)
{
  g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", repo);
  int rc = system (cmd);
  g_clear_pointer (&repo, g_free);
  return rc == 0 ? 0 : 1;
}

/* Only folders named by a version count, in numeric (not text) order. */
static void
test_versions (void)
{
  static const char *const folders[] = {"ctr/2", "ctr/10", "ctr/9", "ctr/tmp.11", "ctr/.staging",
                                        "ctr/007", "ctr/0", "ctr/12a", "ctr/99999999999999999999"};
  for (guint i = 0; i < G_N_ELEMENTS (folders); i++)
    make (folders[i], TRUE);
  make ("ctr/11", FALSE); /* a file named like a version */
  make ("ctr/README", FALSE);
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) v = sedp_bundle_repository_versions (repo, "ctr", &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (v);
  CU_ASSERT_EQUAL_FATAL (v->len, 3);
  CU_ASSERT_EQUAL (g_array_index (v, gint64, 0), 2);
  CU_ASSERT_EQUAL (g_array_index (v, gint64, 1), 9);
  CU_ASSERT_EQUAL (g_array_index (v, gint64, 2), 10);

  g_autofree char *dir = NULL;
  CU_ASSERT_EQUAL (sedp_bundle_repository_resolve (repo, "ctr", 0, &dir, &error), 10);
  g_autofree char *want = g_build_filename (repo, "ctr", "10", NULL);
  CU_ASSERT_STRING_EQUAL (dir, want);
  g_free (dir);
  dir = NULL;
  CU_ASSERT_EQUAL (sedp_bundle_repository_resolve (repo, "ctr", 9, &dir, &error), 9);
  CU_ASSERT_PTR_NOT_NULL (dir && g_str_has_suffix (dir, "/ctr/9") ? dir : NULL);
}

static void
test_errors (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = NULL;
  make ("rec/3", TRUE);
  make ("rec/5", TRUE);
  CU_ASSERT_EQUAL (sedp_bundle_repository_resolve (repo, "rec", 4, &dir, &error), 0);
  CU_ASSERT_PTR_NULL (dir);
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "version 4 of model 'rec' is pinned but not there",
                     "(versions: 3, 5)");
  CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_NO_VERSION);
  g_clear_error (&error);

  make ("empty/tmp.1", TRUE);
  CU_ASSERT_EQUAL (sedp_bundle_repository_resolve (repo, "empty", 0, &dir, &error), 0);
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "model 'empty' has no version yet",
                     "--name empty --version 1");
  CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_NO_VERSION);
  g_clear_error (&error);

  CU_ASSERT_PTR_NULL (sedp_bundle_repository_versions (repo, "absent", &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "no folder for model 'absent'", repo);
  CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_NO_VERSION);
  g_clear_error (&error);

  CU_ASSERT_PTR_NULL (sedp_bundle_repository_versions (repo, "../etc", &error));
  SEDP_ASSERT_ERROR (error, SEDP_BUNDLE_ERROR, "model name '../etc' is not allowed");
  CU_ASSERT_EQUAL (error->code, SEDP_BUNDLE_ERROR_BAD_NAME);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("bundle-repository", suite_init, suite_cleanup);
  CU_add_test (s, "versions: folders named by a number, numeric order; latest and pinned",
               test_versions);
  CU_add_test (s, "pinned missing, no version, no folder, bad name", test_errors);
  return sedp_test_run ();
}
