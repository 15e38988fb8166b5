/* sedp tests — shared helpers for the CUnit suites. */
#pragma once

#include <CUnit/Basic.h>
#include <glib.h>

/* The folders the build passes in: built plugins, built fixture plugins, source fixtures. */
#ifndef SEDP_TEST_PLUGIN_DIR
#error "SEDP_TEST_PLUGIN_DIR must be defined by the build"
#endif

/* Runs the registered suites; returns the process exit status (non-zero on any failure). */
static inline int
sedp_test_run (void)
{
  CU_basic_set_mode (CU_BRM_VERBOSE);
  CU_basic_run_tests ();
  unsigned failures = CU_get_number_of_failures () + CU_get_number_of_tests_failed ();
  unsigned errors = CU_get_error ();
  CU_cleanup_registry ();
  return (failures || errors) ? 1 : 0;
}

/* Asserts that @error is set, in @domain, and that its message contains every string of the
 * NULL-terminated list. */
#define SEDP_ASSERT_ERROR(error, error_domain, ...)                                                    \
  do {                                                                                           \
    CU_ASSERT_PTR_NOT_NULL_FATAL (error);                                                        \
    CU_ASSERT_EQUAL ((error)->domain, (error_domain));                                               \
    const char *const _needles[] = {__VA_ARGS__, NULL};                                          \
    for (guint _i = 0; _needles[_i]; _i++) {                                                     \
      if (strstr ((error)->message, _needles[_i]) == NULL)                                       \
        fprintf (stderr, "\n  message '%s' lacks '%s'\n", (error)->message, _needles[_i]);       \
      CU_ASSERT_PTR_NOT_NULL (strstr ((error)->message, _needles[_i]));                          \
    }                                                                                            \
  } while (0)
