/* The OpenCL engine's devices and program (core/nn/ocl/ocl-device.c, ocl-program.c;
 * docs/opencl.md §2.1, §7, §9.2): opening by default, index and name, the registry of open
 * devices, labels, the list, every device error, a program that does not build, and our first
 * kernels run on a small buffer against values computed on the host.
 *
 * Expected names come from the OpenCL API called directly here, not from sedp. What depends on
 * the ICD loader's environment (no platform, no device, two devices) runs in a child process of
 * this binary (`--child …`) with OCL_ICD_VENDORS and POCL_DEVICES set (docs/opencl.md §1): the
 * loader reads them once per process. The suite skips (exit 77) only when no OpenCL platform
 * exists, unless SEDP_REQUIRE_OPENCL=1 (CI), which makes that a failure. Under valgrind
 * (SEDP_VALGRIND=1) PoCL is very slow: the child scenarios, which do not run under valgrind
 * anyway, and the failing build are left out. */
#include "../common/test-spawn.h"

#include <sedp/engine.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SEDP_HAVE_OPENCL
#include "ocl-test.h"

#include "nn/exec/params.h"

#define POCL "Portable Computing Language"
#define POCL_ICD "/etc/OpenCL/vendors/pocl.icd"

static char *self_exe;   /* this binary, for the child scenarios */
static char *empty_dir;  /* an empty folder: OCL_ICD_VENDORS for "no platform" */
static char *pocl_dir;   /* a folder with PoCL's .icd only: the child scenarios see PoCL alone */
static gboolean valgrind;

/* ---- the reference: the OpenCL API called directly ---- */

/* "PLATFORM: DEVICE" of every device, in the ICD loader's order. */
static GPtrArray *
reference_names (void)
{
  GPtrArray *names = g_ptr_array_new_with_free_func (g_free);
  cl_platform_id platforms[16];
  cl_uint np = 0;
  if (clGetPlatformIDs (16, platforms, &np) != CL_SUCCESS)
    return names;
  for (cl_uint p = 0; p < MIN (np, 16); p++) {
    char pname[512] = "", dname[512] = "";
    cl_device_id ids[64];
    cl_uint nd = 0;
    clGetPlatformInfo (platforms[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
    if (clGetDeviceIDs (platforms[p], CL_DEVICE_TYPE_ALL, 64, ids, &nd) != CL_SUCCESS)
      continue;
    for (cl_uint d = 0; d < MIN (nd, 64); d++) {
      clGetDeviceInfo (ids[d], CL_DEVICE_NAME, sizeof dname, dname, NULL);
      g_ptr_array_add (names, g_strdup_printf ("%s: %s", g_strstrip (pname), g_strstrip (dname)));
    }
  }
  return names;
}

/* "0: A, 1: B" */
static char *
reference_joined (GPtrArray *names)
{
  GString *s = g_string_new (NULL);
  for (guint i = 0; i < names->len; i++)
    g_string_append_printf (s, "%s%u: %s", i ? ", " : "", i, (char *) names->pdata[i]);
  return g_string_free (s, FALSE);
}

#define ASSERT_MESSAGE(error, want)                                                               \
  do {                                                                                            \
    CU_ASSERT_PTR_NOT_NULL_FATAL (error);                                                         \
    CU_ASSERT_EQUAL ((error)->domain, SEDP_NN_ERROR);                                             \
    CU_ASSERT_EQUAL ((error)->code, SEDP_NN_ERROR_DEVICE);                                        \
    if (strcmp ((error)->message, (want)) != 0)                                                   \
      fprintf (stderr, "\n  message '%s'\n  wanted  '%s'\n", (error)->message, (want));           \
    CU_ASSERT_STRING_EQUAL ((error)->message, (want));                                            \
  } while (0)

/* ---- in this process: the default environment ---- */

static void
test_open_default_index_name (void)
{
  g_autoptr (GPtrArray) names = reference_names ();
  CU_ASSERT_FATAL (names->len >= 1);
  g_autoptr (GError) error = NULL;
  SedpNnDevice *d = sedp_nn_device_open (NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (d);
  g_autofree char *label = g_strdup_printf ("0 (%s)", (char *) names->pdata[0]);
  CU_ASSERT_STRING_EQUAL (sedp_nn_device_get_label (d), label);
  /* The registry: "", "0", the full name in upper case and a reference are the same object. */
  g_autofree char *upper = g_utf8_strup (names->pdata[0], -1);
  const char *specs[] = {"", "0", upper};
  for (guint i = 0; i < G_N_ELEMENTS (specs); i++) {
    SedpNnDevice *again = sedp_nn_device_open (specs[i], &error);
    CU_ASSERT_PTR_EQUAL (again, d);
    sedp_nn_device_unref (again);
  }
  CU_ASSERT_PTR_EQUAL (sedp_nn_device_ref (d), d);
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 1);
  sedp_nn_device_unref (d);
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 1);
  sedp_nn_device_unref (d);
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 0);
  sedp_nn_device_unref (NULL);
}

static void
test_list (void)
{
  g_autoptr (GPtrArray) names = reference_names ();
  g_autoptr (GError) error = NULL;
  g_auto (GStrv) lines = sedp_nn_device_list (&error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (lines);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (lines), names->len);
  for (guint i = 0; i < names->len; i++) {
    /* "N  PLATFORM: DEVICE  TYPE  GLOBAL_MEM  OpenCL C VERSION" */
    g_autofree char *head = g_strdup_printf ("%u  %s  ", i, (char *) names->pdata[i]);
    CU_ASSERT_TRUE (g_str_has_prefix (lines[i], head));
    const char *rest = lines[i] + strlen (head);
    CU_ASSERT_TRUE (g_str_has_prefix (rest, "CPU  ") || g_str_has_prefix (rest, "GPU  ") ||
                    g_str_has_prefix (rest, "ACCELERATOR  ") ||
                    g_str_has_prefix (rest, "CUSTOM  "));
    CU_ASSERT_PTR_NOT_NULL (strstr (rest, "B  OpenCL C "));
  }
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 0);
}

static void
test_errors_index_name (void)
{
  g_autoptr (GPtrArray) names = reference_names ();
  g_autofree char *joined = reference_joined (names);
  g_autoptr (GError) error = NULL;
  g_autofree char *index = g_strdup_printf ("%u", names->len);
  CU_ASSERT_PTR_NULL (sedp_nn_device_open (index, &error));
  g_autofree char *want =
      g_strdup_printf ("device = %u: out of range, there %s %u OpenCL device%s (%s)", names->len,
                       names->len == 1 ? "is" : "are", names->len, names->len == 1 ? "" : "s",
                       joined);
  ASSERT_MESSAGE (error, want);
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_nn_device_open ("no-such-device", &error));
  g_autofree char *want_name =
      g_strdup_printf ("device = no-such-device: no OpenCL device matches (devices: %s)", joined);
  ASSERT_MESSAGE (error, want_name);
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_nn_device_open ("-1", &error)); /* not digits: a name */
  CU_ASSERT_PTR_NOT_NULL (error && strstr (error->message, "no OpenCL device matches"));
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 0);
}

/* Streams of one queue on PoCL's CPU device, three with SEDP_OPENCL_OVERLAP=1, one with 0; any
 * other value refuses the open, naming the variable and its values, and nothing stays open. */
static void
test_overlap_env (void)
{
  const struct { const char *value; guint queues; } cases[] = {
    {NULL, 1}, {"", 1}, {"1", 3}, {"0", 1}, {"yes", 0}, {"2", 0},
  };
  g_autofree char *saved = g_strdup (g_getenv ("SEDP_OPENCL_OVERLAP"));
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    CU_ASSERT_EQUAL_FATAL (nn_ocl_test_n_open (), 0);
    if (cases[i].value)
      g_setenv ("SEDP_OPENCL_OVERLAP", cases[i].value, TRUE);
    else
      g_unsetenv ("SEDP_OPENCL_OVERLAP");
    g_autoptr (GError) error = NULL;
    SedpNnDevice *d = sedp_nn_device_open (NULL, &error);
    if (cases[i].queues == 0) {
      CU_ASSERT_PTR_NULL (d);
      CU_ASSERT_TRUE (g_error_matches (error, SEDP_NN_ERROR, SEDP_NN_ERROR_DEVICE));
      g_autofree char *part = g_strdup_printf ("SEDP_OPENCL_OVERLAP is '%s'; set it to 1",
                                               cases[i].value);
      CU_ASSERT_PTR_NOT_NULL (error ? strstr (error->message, part) : NULL);
    } else {
      CU_ASSERT_PTR_NOT_NULL_FATAL (d);
      CU_ASSERT_EQUAL (sedp_nn_device_get_queues_per_stream (d), cases[i].queues);
    }
    sedp_nn_device_unref (d);
  }
  if (saved)
    g_setenv ("SEDP_OPENCL_OVERLAP", saved, TRUE);
  else
    g_unsetenv ("SEDP_OPENCL_OVERLAP");
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 0);
}

/* A program that does not build: the error names the device and carries the build log; nothing
 * stays open, and the next open (with our source only) builds. */
static void
test_build_failure (void)
{
  if (valgrind)
    return;
  g_autoptr (GPtrArray) names = reference_names ();
  CU_ASSERT_EQUAL_FATAL (nn_ocl_test_n_open (), 0);
  nn_ocl_test_set_extra_source ("\n__kernel void broken (void) { this_is_not_opencl_c; }\n");
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_nn_device_open (NULL, &error));
  nn_ocl_test_set_extra_source (NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (error);
  CU_ASSERT_EQUAL (error->code, SEDP_NN_ERROR_DEVICE);
  g_autofree char *head = g_strdup_printf (
      "OpenCL device 0 (%s): the engine's kernels do not build (clBuildProgram: "
      "CL_BUILD_PROGRAM_FAILURE): ",
      (char *) names->pdata[0]);
  if (!g_str_has_prefix (error->message, head))
    fprintf (stderr, "\n  message '%s'\n", error->message);
  CU_ASSERT_TRUE (g_str_has_prefix (error->message, head));
  CU_ASSERT_PTR_NOT_NULL (strstr (error->message, "this_is_not_opencl_c")); /* the log */
  CU_ASSERT_TRUE (strlen (error->message) <= strlen (head) + 2048);
  CU_ASSERT_EQUAL (nn_ocl_test_n_open (), 0);
  g_autoptr (SedpNnDevice) d = sedp_nn_device_open (NULL, NULL);
  CU_ASSERT_PTR_NOT_NULL (d);
}

/* ---- our first kernels ---- */

#define N 1000   /* not a multiple of any local size: the `i >= n` guard is exercised */
#define OFF 7    /* element offsets into the buffers */
#define SENTINEL -12345.0f

typedef struct {
  SedpNnDevice *d;
  cl_command_queue q;
  cl_mem a, b, y; /* N + 2·OFF floats each */
} Bench;

static cl_mem
buffer (Bench *t, const float *host)
{
  cl_int rc = CL_SUCCESS;
  cl_mem m = clCreateBuffer (t->d->context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                             (N + 2 * OFF) * sizeof (float), (void *) host, &rc);
  CU_ASSERT_EQUAL (rc, CL_SUCCESS);
  return m;
}

/* Runs @k (its arguments bound) over N items with its fixed @local size; reads y into @out. */
static void
launch (Bench *t, cl_kernel k, size_t local, float *out)
{
  size_t global = nn_ocl_global_size (N, local);
  CU_ASSERT_EQUAL (global % local, 0);
  CU_ASSERT_TRUE (global >= N && global < N + local);
  cl_int rc = clEnqueueNDRangeKernel (t->q, k, 1, NULL, &global, &local, 0, NULL, NULL);
  CU_ASSERT_EQUAL (rc, CL_SUCCESS);
  rc = clEnqueueReadBuffer (t->q, t->y, CL_TRUE, 0, (N + 2 * OFF) * sizeof (float), out, 0, NULL,
                            NULL);
  CU_ASSERT_EQUAL (rc, CL_SUCCESS);
}

static float
host_bin (int op, float x, float z)
{
  switch (op) {
  case NN_ELEM_ADD: return x + z;
  case NN_ELEM_SUB: return x - z;
  case NN_ELEM_MUL: return x * z;
  default: return x / z;
  }
}

static float
host_unary (int act, float v, float alpha)
{
  switch (act) {
  case ACT_RELU: return v > 0.0f ? v : 0.0f;
  case ACT_LEAKY_RELU: return v >= 0.0f ? v : v * alpha;
  case ACT_NEG: return -v;
  default: return fabsf (v);
  }
}

/* y[OFF..OFF+N) must be @want (bit for bit: one correctly rounded operation per element); the
 * OFF elements on each side keep the sentinel. */
static void
check_y (const float *y, const float *want, const char *what)
{
  guint bad = 0;
  for (guint i = 0; i < N + 2 * OFF; i++) {
    gboolean inside = i >= OFF && i < N + OFF;
    float expect = inside ? want[i - OFF] : SENTINEL;
    if (memcmp (&y[i], &expect, sizeof expect) != 0 && bad++ < 3)
      fprintf (stderr, "\n  %s: y[%u] = %.9g, wanted %.9g\n", what, i, y[i], expect);
  }
  CU_ASSERT_EQUAL (bad, 0);
}

static void
run_bin (Bench *t, const float *a, const float *b, float *y, float *want)
{
  size_t local = 0;
  g_autoptr (GError) error = NULL;
  cl_kernel k = nn_ocl_kernel_new (t->d, "bin_f", &local, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (k);
  CU_ASSERT_TRUE (local >= 1 && local <= t->d->max_work_group);
  if (strstr (t->d->name, POCL))
    CU_ASSERT_EQUAL (local, 64); /* docs/opencl.md §6: the preferred multiple 8 × 8 */
  cl_ulong a_off = 0, b_off = 2 * OFF, y_off = OFF, n = N;
  cl_int layout = 0, rank = 1; /* flat (kernels/broadcast.cl) */
  cl_long8 dims = {{N}}, walk = {{0}};
  for (int op = NN_ELEM_ADD; op <= NN_ELEM_DIV; op++) {
    clEnqueueWriteBuffer (t->q, t->y, CL_TRUE, 0, (N + 2 * OFF) * sizeof (float), y, 0, NULL, NULL);
    clSetKernelArg (k, 0, sizeof (cl_mem), &t->a);
    clSetKernelArg (k, 1, sizeof a_off, &a_off);
    clSetKernelArg (k, 2, sizeof (cl_mem), &t->b);
    clSetKernelArg (k, 3, sizeof b_off, &b_off);
    clSetKernelArg (k, 4, sizeof (cl_mem), &t->y);
    clSetKernelArg (k, 5, sizeof y_off, &y_off);
    clSetKernelArg (k, 6, sizeof n, &n);
    clSetKernelArg (k, 7, sizeof op, &op);
    clSetKernelArg (k, 8, sizeof layout, &layout);
    clSetKernelArg (k, 9, sizeof rank, &rank);
    clSetKernelArg (k, 10, sizeof dims, &dims);
    clSetKernelArg (k, 11, sizeof walk, &walk);
    CU_ASSERT_EQUAL (clSetKernelArg (k, 12, sizeof walk, &walk), CL_SUCCESS);
    float out[N + 2 * OFF];
    launch (t, k, local, out);
    for (guint i = 0; i < N; i++)
      want[i] = host_bin (op, a[a_off + i], b[b_off + i]);
    check_y (out, want, "bin_f");
  }
  clReleaseKernel (k);
}

static void
run_unary (Bench *t, const float *a, float *y, float *want)
{
  size_t local = 0;
  cl_kernel k = nn_ocl_kernel_new (t->d, "unary_f", &local, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (k);
  cl_ulong x_off = 0, y_off = OFF, n = N;
  float alpha = 0.125f;
  const int acts[] = {ACT_RELU, ACT_LEAKY_RELU, ACT_NEG, ACT_ABS};
  for (guint j = 0; j < G_N_ELEMENTS (acts); j++) {
    int act = acts[j];
    clEnqueueWriteBuffer (t->q, t->y, CL_TRUE, 0, (N + 2 * OFF) * sizeof (float), y, 0, NULL, NULL);
    clSetKernelArg (k, 0, sizeof (cl_mem), &t->a);
    clSetKernelArg (k, 1, sizeof x_off, &x_off);
    clSetKernelArg (k, 2, sizeof (cl_mem), &t->y);
    clSetKernelArg (k, 3, sizeof y_off, &y_off);
    clSetKernelArg (k, 4, sizeof n, &n);
    clSetKernelArg (k, 5, sizeof act, &act);
    CU_ASSERT_EQUAL (clSetKernelArg (k, 6, sizeof alpha, &alpha), CL_SUCCESS);
    float out[N + 2 * OFF];
    launch (t, k, local, out);
    for (guint i = 0; i < N; i++)
      want[i] = host_unary (act, a[i], alpha);
    check_y (out, want, "unary_f");
  }
  clReleaseKernel (k);
}

static void
test_first_kernels (void)
{
  static float a[N + 2 * OFF], b[N + 2 * OFF], y[N + 2 * OFF], want[N];
  guint64 state = 0x9e3779b97f4a7c15u;
  for (guint i = 0; i < N + 2 * OFF; i++) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    a[i] = (float) ((gint64) (state >> 40) - (1 << 23)) / 4096.0f; /* negatives and positives */
    b[i] = (float) ((state >> 16) & 0xffff) / 256.0f + 0.5f;      /* never 0: divisors */
    y[i] = SENTINEL;
  }
  a[3] = 0.0f, a[4] = -0.0f; /* Relu and Abs of signed zeros */
  Bench t = {0};
  g_autoptr (GError) error = NULL;
  t.d = sedp_nn_device_open (NULL, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (t.d);
  cl_int rc = CL_SUCCESS;
  t.q = clCreateCommandQueue (t.d->context, t.d->id, 0, &rc);
  CU_ASSERT_EQUAL_FATAL (rc, CL_SUCCESS);
  t.a = buffer (&t, a), t.b = buffer (&t, b), t.y = buffer (&t, y);
  run_bin (&t, a, b, y, want);
  run_unary (&t, a, y, want);
  CU_ASSERT_PTR_NULL (nn_ocl_kernel_new (t.d, "nosuch", &(size_t) {0}, &error));
  g_autofree char *want_msg =
      g_strdup_printf ("OpenCL device %s: the engine's program has no kernel 'nosuch'", t.d->label);
  ASSERT_MESSAGE (error, want_msg);
  clReleaseMemObject (t.a), clReleaseMemObject (t.b), clReleaseMemObject (t.y);
  clReleaseCommandQueue (t.q);
  sedp_nn_device_unref (t.d);
}

/* ---- child processes: the ICD loader's environment ---- */

/* Runs @argv with the NULL-terminated name/value pairs @env added (LC_ALL=C always). */
static void
spawn_env (SedpTestRun *r, const char *const *env, const char *const *argv)
{
  g_autoptr (GSubprocessLauncher) l =
      g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_setenv (l, "LC_ALL", "C", TRUE);
  for (guint i = 0; env && env[i]; i += 2)
    g_subprocess_launcher_setenv (l, env[i], env[i + 1], TRUE);
  g_autoptr (GError) error = NULL;
  g_autoptr (GSubprocess) p = g_subprocess_launcher_spawnv (l, argv, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (p);
  CU_ASSERT_TRUE_FATAL (g_subprocess_communicate_utf8 (p, NULL, NULL, &r->out, &r->err, &error));
  r->status = g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
  if (r->status != 0 && r->err[0])
    fprintf (stderr, "\n  [child stderr] %s", r->err);
}

/* The child's output for `--child open SPEC…` or `--child list`, one line per item. */
static char **
child (const char *const *env, const char *what, const char *const *specs)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, self_exe);
  g_ptr_array_add (argv, (gpointer) "--child");
  g_ptr_array_add (argv, (gpointer) what);
  for (guint i = 0; specs && specs[i]; i++)
    g_ptr_array_add (argv, (gpointer) specs[i]);
  g_ptr_array_add (argv, NULL);
  g_auto (SedpTestRun) r = {0};
  spawn_env (&r, env, (const char *const *) argv->pdata);
  CU_ASSERT_EQUAL (r.status, 0);
  return g_strsplit (g_strchomp (r.out), "\n", -1);
}

static void
assert_line (char **lines, guint i, const char *want)
{
  CU_ASSERT_FATAL (i < g_strv_length (lines));
  if (strcmp (lines[i], want) != 0)
    fprintf (stderr, "\n  line %u '%s'\n  wanted '%s'\n", i, lines[i], want);
  CU_ASSERT_STRING_EQUAL (lines[i], want);
}

static void
assert_line_prefix (char **lines, guint i, const char *want)
{
  CU_ASSERT_FATAL (i < g_strv_length (lines));
  if (!g_str_has_prefix (lines[i], want))
    fprintf (stderr, "\n  line %u '%s'\n  wanted '%s…'\n", i, lines[i], want);
  CU_ASSERT_TRUE (g_str_has_prefix (lines[i], want));
}

#define NO_PLATFORM                                                                               \
  "ERROR no OpenCL platform (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR): install an ICD such " \
  "as pocl-opencl-icd or the GPU vendor's, or set engine = cpu"

static void
test_no_platform (void)
{
  const char *env[] = {"OCL_ICD_VENDORS", empty_dir, NULL};
  g_auto (GStrv) open = child (env, "open", (const char *[]) {"", "0", NULL});
  assert_line (open, 0, NO_PLATFORM);
  assert_line (open, 1, NO_PLATFORM);
  g_auto (GStrv) list = child (env, "list", NULL);
  assert_line (list, 0, NO_PLATFORM);
  /* sedp model devices: exit 1 with the message. */
  g_auto (SedpTestRun) r = {0};
  spawn_env (&r, env, (const char *[]) {SEDP_BINARY, "model", "devices", NULL});
  CU_ASSERT_EQUAL (r.status, 1);
  CU_ASSERT_STRING_EQUAL (r.out, "");
  g_autofree char *want =
      g_strdup_printf ("sedp model devices: %s\n", NO_PLATFORM + strlen ("ERROR "));
  CU_ASSERT_STRING_EQUAL (r.err, want);
}

static void
test_no_device (void)
{
  const char *env[] = {"OCL_ICD_VENDORS", pocl_dir, "POCL_DEVICES", "nosuch", NULL};
  const char *want = "ERROR no OpenCL device on platform '" POCL "' (clGetDeviceIDs: "
                     "CL_DEVICE_NOT_FOUND); 'sedp model devices' lists what sedp sees";
  g_auto (GStrv) open = child (env, "open", (const char *[]) {"", NULL});
  assert_line (open, 0, want);
  g_auto (GStrv) list = child (env, "list", NULL);
  assert_line (list, 0, want);
}

/* POCL_DEVICES="pthread basic": index 0 is `basic`, 1 `pthread` (docs/opencl.md §1). */
static void
test_two_devices (void)
{
  const char *env[] = {"OCL_ICD_VENDORS", pocl_dir, "POCL_DEVICES", "pthread basic", NULL};
  const char *specs[] = {"1", "pthread", "PThread", "basic", "0", "", NULL};
  g_auto (GStrv) open = child (env, "open", specs);
  for (guint i = 0; i < 3; i++)
    assert_line_prefix (open, i, "OK 0 1 (" POCL ": pthread-");
  for (guint i = 3; i < 6; i++)
    assert_line_prefix (open, i, "OK 3 0 (" POCL ": basic-");
  assert_line (open, 6, "OPEN 0");
  g_auto (GStrv) list = child (env, "list", NULL);
  CU_ASSERT_EQUAL (g_strv_length (list), 2);
  assert_line_prefix (list, 0, "0  " POCL ": basic-");
  assert_line_prefix (list, 1, "1  " POCL ": pthread-");
}

static void
test_two_devices_errors (void)
{
  const char *env[] = {"OCL_ICD_VENDORS", pocl_dir, "POCL_DEVICES", "pthread basic", NULL};
  g_auto (GStrv) open = child (env, "open", (const char *[]) {"2", "portable", "nvidia", NULL});
  g_auto (GStrv) list = child (env, "list", NULL);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (list), 2);
  /* the devices as the list names them: "0  NAME  TYPE…" */
  char *n0 = g_strndup (list[0] + 3, strstr (list[0] + 3, "  ") - (list[0] + 3));
  char *n1 = g_strndup (list[1] + 3, strstr (list[1] + 3, "  ") - (list[1] + 3));
  g_autofree char *both = g_strdup_printf ("0: %s, 1: %s", n0, n1);
  g_autofree char *range =
      g_strdup_printf ("ERROR device = 2: out of range, there are 2 OpenCL devices (%s)", both);
  g_autofree char *several = g_strdup_printf (
      "ERROR device = portable: matches 2 devices (%s): give an index or a longer name", both);
  g_autofree char *none =
      g_strdup_printf ("ERROR device = nvidia: no OpenCL device matches (devices: %s)", both);
  assert_line (open, 0, range);
  assert_line (open, 1, several);
  assert_line (open, 2, none);
  CU_ASSERT_TRUE (g_str_has_prefix (n0, POCL ": basic-"));
  CU_ASSERT_TRUE (g_str_has_prefix (n1, POCL ": pthread-"));
  g_free (n0), g_free (n1);
}

static void
test_cli_devices (void)
{
  g_autoptr (GPtrArray) names = reference_names ();
  g_auto (SedpTestRun) r = {0};
  spawn_env (&r, NULL, (const char *[]) {SEDP_BINARY, "model", "devices", NULL});
  CU_ASSERT_EQUAL (r.status, 0);
  g_auto (GStrv) lines = g_strsplit (g_strchomp (r.out), "\n", -1);
  CU_ASSERT_EQUAL_FATAL (g_strv_length (lines), names->len);
  g_autofree char *head = g_strdup_printf ("0  %s  ", (char *) names->pdata[0]);
  CU_ASSERT_TRUE (g_str_has_prefix (lines[0], head));
  g_auto (SedpTestRun) bad = {0};
  spawn_env (&bad, NULL, (const char *[]) {SEDP_BINARY, "model", "devices", "extra", NULL});
  CU_ASSERT_EQUAL (bad.status, 2);
  CU_ASSERT_STRING_EQUAL (bad.err, "sedp model devices: takes no arguments (see --help)\n");
}

/* ---- the child ---- */

/* `--child open SPEC…`: per spec "OK K LABEL" (K: the first spec that gave the same object) or
 * "ERROR MESSAGE"; then "OPEN N", the devices still open after every unref. `--child list`: the
 * list's lines or "ERROR MESSAGE". */
static int
child_main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  if (strcmp (argv[2], "list") == 0) {
    g_auto (GStrv) lines = sedp_nn_device_list (&error);
    for (guint i = 0; lines && lines[i]; i++)
      printf ("%s\n", lines[i]);
    if (lines == NULL)
      printf ("ERROR %s\n", error->message);
    return 0;
  }
  SedpNnDevice *opened[16] = {NULL};
  for (int i = 3; i < argc && i < 19; i++) {
    opened[i - 3] = sedp_nn_device_open (argv[i], &error);
    int first = 0;
    while (opened[i - 3] && opened[first] != opened[i - 3])
      first++;
    if (opened[i - 3])
      printf ("OK %d %s\n", first, sedp_nn_device_get_label (opened[i - 3]));
    else
      printf ("ERROR %s\n", error->message);
    g_clear_error (&error);
  }
  for (guint i = 0; i < G_N_ELEMENTS (opened); i++)
    sedp_nn_device_unref (opened[i]);
  printf ("OPEN %u\n", nn_ocl_test_n_open ());
  return 0;
}

/* The folders of the child scenarios: an empty one, and one holding PoCL's .icd alone. */
static gboolean
make_vendor_dirs (void)
{
  empty_dir = g_dir_make_tmp ("sedp-ocl-empty-XXXXXX", NULL);
  pocl_dir = g_dir_make_tmp ("sedp-ocl-pocl-XXXXXX", NULL);
  g_autofree char *icd = NULL;
  if (!empty_dir || !pocl_dir || !g_file_get_contents (POCL_ICD, &icd, NULL, NULL)) {
    fprintf (stderr, "test-ocl-device: PoCL's ICD (%s) is needed for the device scenarios "
                     "(apt-get install pocl-opencl-icd)\n", POCL_ICD);
    return FALSE;
  }
  g_autofree char *copy = g_build_filename (pocl_dir, "pocl.icd", NULL);
  return g_file_set_contents (copy, icd, -1, NULL);
}

static void
remove_vendor_dirs (void)
{
  g_autofree char *copy = pocl_dir ? g_build_filename (pocl_dir, "pocl.icd", NULL) : NULL;
  if (copy)
    g_remove (copy);
  if (pocl_dir)
    g_rmdir (pocl_dir);
  if (empty_dir)
    g_rmdir (empty_dir);
  g_free (pocl_dir), g_free (empty_dir), g_free (self_exe);
}

int
main (int argc, char **argv)
{
  if (argc >= 3 && strcmp (argv[1], "--child") == 0)
    return child_main (argc, argv);
  int skip = ocl_test_no_platform_status ("test-ocl-device");
  if (skip)
    return skip;
  valgrind = g_strcmp0 (g_getenv ("SEDP_VALGRIND"), "1") == 0;
  self_exe = g_file_read_link ("/proc/self/exe", NULL);
  if (!make_vendor_dirs () && !valgrind) {
    remove_vendor_dirs ();
    return 1;
  }
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ocl-device", NULL, NULL);
  CU_add_test (s, "open by default, index and name; the registry", test_open_default_index_name);
  CU_add_test (s, "the device list", test_list);
  CU_add_test (s, "an index out of range, a name that matches none", test_errors_index_name);
  CU_add_test (s, "the first kernels against the host", test_first_kernels);
  CU_add_test (s, "a program that does not build", test_build_failure);
  CU_add_test (s, "queues per stream: the default, SEDP_OPENCL_OVERLAP", test_overlap_env);
  if (!valgrind) {
    CU_add_test (s, "no platform (and sedp model devices)", test_no_platform);
    CU_add_test (s, "a platform without devices", test_no_device);
    CU_add_test (s, "two devices by index and name", test_two_devices);
    CU_add_test (s, "two devices: out of range, ambiguous, none", test_two_devices_errors);
    CU_add_test (s, "sedp model devices", test_cli_devices);
  }
  int status = sedp_test_run ();
  remove_vendor_dirs ();
  return status;
}

#else /* built without OpenCL */

static void
test_without_opencl (void)
{
  const char *want = "sedp was built without OpenCL (install ocl-icd-opencl-dev, "
                     "opencl-headers and libclblast-dev, and run meson setup again)";
  g_autoptr (GError) error = NULL;
  CU_ASSERT_PTR_NULL (sedp_nn_device_open (NULL, &error));
  CU_ASSERT_TRUE (error && error->code == SEDP_NN_ERROR_DEVICE);
  CU_ASSERT_TRUE (error && strcmp (error->message, want) == 0);
  g_clear_error (&error);
  CU_ASSERT_PTR_NULL (sedp_nn_device_list (&error));
  CU_ASSERT_TRUE (error && error->code == SEDP_NN_ERROR_DEVICE);
  CU_ASSERT_TRUE (error && strcmp (error->message, want) == 0);
  g_auto (SedpTestRun) r = {0};
  sedp_test_spawn (&r, NULL, "model", "devices", NULL);
  CU_ASSERT_EQUAL (r.status, 1);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("nn-ocl-device", NULL, NULL);
  CU_add_test (s, "built without OpenCL", test_without_opencl);
  return sedp_test_run ();
}

#endif
