/* sedp nn-ocl tests — what the OpenCL suites share: the skip rule (docs/opencl.md §9: skip only
 * without an OpenCL platform, fail instead under SEDP_REQUIRE_OPENCL=1), random inputs that a
 * model accepts, and the comparison of a device plan with the CPU engine (§8). The reference is
 * the CPU engine, itself checked against ONNX Runtime and ONNX's outputs (docs/conformance.md). */
#pragma once

#include "../common/test-common.h"

#include <sedp/engine.h>

#include "nn/model.h"
#include "nn/ocl/ocl-private.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* 77 (skip) when there is no OpenCL platform at all, 1 when SEDP_REQUIRE_OPENCL=1 asks for one,
 * else 0. */
static inline int
ocl_test_no_platform_status (const char *suite)
{
  cl_uint n = 0;
  cl_int rc = clGetPlatformIDs (0, NULL, &n);
  if (rc == CL_SUCCESS && n > 0)
    return 0;
  gboolean required = g_strcmp0 (g_getenv ("SEDP_REQUIRE_OPENCL"), "1") == 0;
  fprintf (stderr, "%s: no OpenCL platform (clGetPlatformIDs: %s, %u platforms): %s\n", suite,
           nn_ocl_error_name (rc), n,
           required ? "failing, SEDP_REQUIRE_OPENCL=1" : "skipped (install pocl-opencl-icd)");
  return required ? 1 : 77;
}

/* The start of an OpenCL suite's main: the skip rule, *@valgrind from SEDP_VALGRIND=1, the first
 * device in *@device, CUnit's registry and suite @name in *@suite. 0, or the exit status (77
 * skipped, 1 failed, the reason printed). */
static inline int
ocl_test_begin (const char *name, gboolean *valgrind, SedpNnDevice **device, CU_pSuite *suite)
{
  int skip = ocl_test_no_platform_status (name);
  if (skip)
    return skip;
  *valgrind = g_strcmp0 (g_getenv ("SEDP_VALGRIND"), "1") == 0;
  g_autoptr (GError) error = NULL;
  *device = sedp_nn_device_open (NULL, &error);
  if (*device == NULL) {
    fprintf (stderr, "%s: %s\n", name, error->message);
    return 1;
  }
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  *suite = CU_add_suite (name, NULL, NULL);
  return 0;
}

/* The tensors of @in (ocl_test_inputs's) as an array of sedp_nn_plan_run's inputs, which share
 * their data. Free with g_free. */
static inline SedpNnTensor *
ocl_test_args (const GPtrArray *in)
{
  SedpNnTensor *args = g_new0 (SedpNnTensor, MAX (in->len, 1));
  for (guint k = 0; k < in->len; k++)
    args[k] = *(const SedpNnTensor *) in->pdata[k];
  return args;
}

/* The rows of the table that graph input @name indexes (the first Gather reading it), or 0. */
static inline gint64
ocl_test_index_range (const SedpNnModel *m, const char *name)
{
  for (guint i = 0; i < m->n_nodes; i++) {
    const SedpNnNode *n = &m->nodes[i];
    if (strcmp (n->op_type, "Gather") != 0 || n->n_inputs < 2 || strcmp (n->inputs[1], name) != 0)
      continue;
    for (guint k = 0; k < m->n_initializers; k++)
      if (strcmp (m->initializers[k]->name, n->inputs[0]) == 0)
        return m->initializers[k]->dims[0];
  }
  return 0;
}

/* Random inputs for @plan: floats uniform in [-1, 1), integers uniform over the table they index
 * (else [0, 4)), bools 0/1. The tensors are owned by the returned array. */
static inline GPtrArray *
ocl_test_inputs (const SedpNnModel *m, SedpNnPlan *plan, GRand *rng)
{
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  for (guint k = 0; k < sedp_nn_plan_get_n_inputs (plan); k++) {
    const SedpNnTensor *info = sedp_nn_plan_get_input (plan, k);
    SedpNnTensor *t = sedp_nn_tensor_new (info->name, info->dtype, info->rank, info->dims);
    gint64 n = sedp_nn_tensor_numel (t), range = ocl_test_index_range (m, info->name);
    for (gint64 i = 0; i < n; i++) {
      if (t->dtype == SEDP_NN_FLOAT)
        ((float *) t->data)[i] = (float) g_rand_double_range (rng, -1.0, 1.0);
      else if (t->dtype == SEDP_NN_INT64)
        ((gint64 *) t->data)[i] = g_rand_int_range (rng, 0, (gint32) (range > 0 ? MIN (range, G_MAXINT32) : 4));
      else if (t->dtype == SEDP_NN_INT32)
        ((gint32 *) t->data)[i] = g_rand_int_range (rng, 0, (gint32) (range > 0 ? MIN (range, G_MAXINT32) : 4));
      else if (t->dtype == SEDP_NN_BOOL || t->dtype == SEDP_NN_UINT8)
        ((guint8 *) t->data)[i] = (guint8) g_rand_int_range (rng, 0, 2);
      else if (t->dtype == SEDP_NN_DOUBLE)
        ((double *) t->data)[i] = g_rand_double_range (rng, -1.0, 1.0);
    }
    g_ptr_array_add (all, t);
  }
  return all;
}

/* Compares output @i of a device run with the CPU engine's: same dtype and shape; integers and
 * bools equal; floats within |ocl − cpu| ≤ rtol · max(|ocl|, |cpu|) + atol (§8's whole-model
 * criterion with rtol 1e-5, atol 1e-6). Prints the first mismatches; returns their count. */
static inline guint
ocl_test_compare (const char *what, const SedpNnTensor *ocl, const SedpNnTensor *cpu, double rtol,
                  double atol)
{
  gboolean same = ocl->dtype == cpu->dtype && ocl->rank == cpu->rank;
  for (int k = 0; same && k < cpu->rank; k++)
    same = ocl->dims[k] == cpu->dims[k];
  if (!same) {
    fprintf (stderr, "\n  %s: dtype or shape differs from the CPU engine's", what);
    return 1;
  }
  gint64 n = sedp_nn_tensor_numel (cpu);
  guint bad = 0;
  for (gint64 i = 0; i < n; i++) {
    gboolean ok;
    double a = 0, b = 0;
    if (cpu->dtype == SEDP_NN_FLOAT || cpu->dtype == SEDP_NN_DOUBLE) {
      a = cpu->dtype == SEDP_NN_FLOAT ? ((float *) ocl->data)[i] : ((double *) ocl->data)[i];
      b = cpu->dtype == SEDP_NN_FLOAT ? ((float *) cpu->data)[i] : ((double *) cpu->data)[i];
      ok = (isnan (a) && isnan (b)) || a == b || fabs (a - b) <= rtol * MAX (fabs (a), fabs (b)) + atol;
    } else {
      gsize es = sedp_nn_dtype_size (cpu->dtype);
      ok = memcmp ((guint8 *) ocl->data + i * es, (guint8 *) cpu->data + i * es, es) == 0;
    }
    if (!ok && bad++ < 5)
      fprintf (stderr, "\n  %s[%" G_GINT64_FORMAT "]: device %.9g, cpu %.9g", what, i, a, b);
  }
  return bad;
}

/* Runs @m at @batch on the CPU engine and on @device on the same random inputs (@seed) and
 * compares every output (ocl_test_compare). FALSE, with the reason printed, on any error or
 * mismatch. */
static inline gboolean
ocl_test_parity (SedpNnModel *m, gint64 batch, SedpNnDevice *device, guint32 seed, double rtol,
                 double atol)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *cpu = sedp_nn_plan_new (m, batch, &error);
  SedpNnPlan *ocl = cpu ? sedp_nn_plan_new_on (m, batch, device, &error) : NULL;
  if (ocl == NULL) {
    fprintf (stderr, "\n  plan at batch %" G_GINT64_FORMAT ": %s", batch, error->message);
    sedp_nn_plan_free (cpu);
    return FALSE;
  }
  GRand *rng = g_rand_new_with_seed (seed);
  g_autoptr (GPtrArray) in = ocl_test_inputs (m, cpu, rng);
  g_rand_free (rng);
  guint n_in = in->len, n_out = sedp_nn_plan_get_n_outputs (cpu);
  g_autofree SedpNnTensor *args = g_new0 (SedpNnTensor, MAX (n_in, 1));
  for (guint k = 0; k < n_in; k++)
    args[k] = *(SedpNnTensor *) in->pdata[k];
  g_autofree SedpNnTensor *co = g_new0 (SedpNnTensor, MAX (n_out, 1));
  g_autofree SedpNnTensor *oo = g_new0 (SedpNnTensor, MAX (n_out, 1));
  gboolean ok = sedp_nn_plan_run (cpu, n_in, args, n_out, co, &error) &&
                sedp_nn_plan_run (ocl, n_in, args, n_out, oo, &error);
  if (!ok)
    fprintf (stderr, "\n  run at batch %" G_GINT64_FORMAT ": %s", batch, error->message);
  for (guint i = 0; ok && i < n_out; i++) {
    g_autofree char *what = g_strdup_printf ("batch %" G_GINT64_FORMAT " output '%s'", batch,
                                             co[i].name);
    ok = ocl_test_compare (what, &oo[i], &co[i], rtol, atol) == 0;
  }
  sedp_nn_plan_free (ocl);
  sedp_nn_plan_free (cpu);
  return ok;
}
