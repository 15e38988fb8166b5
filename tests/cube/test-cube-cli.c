/* sedp tests — `sedp cube` (build, info, verify, get, push) and `sedp model split`, spawned as a
 * child process: outputs, exit statuses, one message naming FILE:LINE for bad input with nothing
 * left behind, and the split's equivalence: for random ids, looking up the signatures in the
 * cube, pooling as the model did and running the dense model gives the original model's
 * outputs. The Redis round trip runs when redis-server is installed. */
#include "cube-test.h"

#include "nn/model.h"
#include "nn/synth.h"
#include "redis-harness.h"
#include "test-spawn.h"

#include <gio/gio.h>
#include <math.h>

/* Runs sedp with the NULL-terminated arguments, @input on its standard input (NULL: none). */
#define sedp_run(r, in, ...)                                                                     \
  sedp_test_spawn ((r), &(const SedpTestSpawn){.input = (in) ? (in) : ""}, __VA_ARGS__)

static const char *hash_hex = "00112233445566778899aabbccddeeff";

static char *
write_tsv (const char *name, const char *content)
{
  char *path = tpath (name);
  sedp_test_write_file (path, content, -1);
  return path;
}

/* The expected "KEY<TAB>…" line of SLOT:ID under the test key. */
static char *
sig_text (guint32 slot, guint64 id)
{
  return g_strdup_printf ("%" G_GUINT64_FORMAT, sedp_signature (test_hash_key, slot, id));
}

/* ---- build, info, verify, get ---- */

static const char *good_tsv = "12345\t0.5,-2.25,3\n"
                              "\n"
                              "0\t1,2,3\r\n"
                              "3:7\t0.001,1e3,-0\n"
                              "18446744073709551615\t 4 , 5 ,6\n";

static void
test_build_info_verify_get (void)
{
  g_autofree char *tsv = write_tsv ("good.tsv", good_tsv);
  g_autofree char *dir = tpath ("cli-good");
  g_auto (SedpTestRun) b;
  sedp_run (&b, NULL, "cube", "build", "-o", dir, "--dim", "3", "--name", "users", "--hash-key",
            hash_hex, "--block-size", "24", tsv, NULL);
  SEDP_ASSERT_EXIT (b, 0);
  g_autofree char *wrote = g_strdup_printf ("wrote %s: 4 keys of dim 3, hash key %s\n", dir,
                                            hash_hex);
  CU_ASSERT_STRING_EQUAL (b.out, wrote);
  CU_ASSERT_STRING_EQUAL (b.err, "");

  g_auto (SedpTestRun) i;
  sedp_run (&i, NULL, "cube", "info", dir, NULL);
  SEDP_ASSERT_EXIT (i, 0);
  SEDP_ASSERT_CONTAINS (i.out, "name:        users\n");
  SEDP_ASSERT_CONTAINS (i.out, "dim:         3\n");
  SEDP_ASSERT_CONTAINS (i.out, "keys:        4\n");
  SEDP_ASSERT_CONTAINS (i.out, "hash_key:    00112233445566778899aabbccddeeff\n");
  SEDP_ASSERT_CONTAINS (i.out, "block_size:  24 bytes\n");
  SEDP_ASSERT_CONTAINS (i.out, "blocks:      2 ");
  SEDP_ASSERT_CONTAINS (i.out, "index:       16 slots");

  g_auto (SedpTestRun) v;
  sedp_run (&v, NULL, "cube", "verify", dir, NULL);
  SEDP_ASSERT_EXIT (v, 0);
  g_autofree char *ok = g_strdup_printf ("%s: ok (4 keys of dim 3, 2 blocks)\n", dir);
  CU_ASSERT_STRING_EQUAL (v.out, ok);

  g_autofree char *sig = sig_text (3, 7);
  g_autofree char *want = g_strdup_printf ("12345\t0.5,-2.25,3\n"
                                           "0\t1,2,3\n"
                                           "3:7\t0.001,1000,-0\n"
                                           "%s\t0.001,1000,-0\n"
                                           "18446744073709551615\t4,5,6\n"
                                           "3:8\tmissing\n"
                                           "1\tmissing\n",
                                           sig);
  const char *places[] = {"disk", "memory"};
  for (guint p = 0; p < 2; p++) {
    g_auto (SedpTestRun) g;
    sedp_run (&g, NULL, "cube", "get", "--values", places[p], dir, "12345", "0", "3:7", sig,
              "18446744073709551615", "3:8", "1", NULL);
    SEDP_ASSERT_EXIT (g, 0);
    CU_ASSERT_STRING_EQUAL (g.out, want);
  }
}

static void
test_build_from_stdin (void)
{
  g_autofree char *dir = tpath ("cli-stdin");
  g_auto (SedpTestRun) b;
  sedp_run (&b, "1\t1.5\n2\t2.5\n", "cube", "build", "-q", "-o", dir, "--dim", "1", "-", NULL);
  SEDP_ASSERT_EXIT (b, 0);
  g_auto (SedpTestRun) g;
  sedp_run (&g, NULL, "cube", "get", dir, "2", "1", NULL);
  SEDP_ASSERT_EXIT (g, 0);
  CU_ASSERT_STRING_EQUAL (g.out, "2\t2.5\n1\t1.5\n");
  /* The name is the folder's, the hash key random. */
  g_auto (SedpTestRun) i;
  sedp_run (&i, NULL, "cube", "info", dir, NULL);
  SEDP_ASSERT_CONTAINS (i.out, "name:        cli-stdin\n");
}

static void
test_build_errors (void)
{
  static const struct {
    const char *content, *needle;
  } cases[] = {
    {"1\t1,2,3\n2 1,2,3\n", "bad.tsv:2: expected KEY<TAB>v1,v2,… (no tab)"},
    {"x1\t1,2,3\n", "bad.tsv:1: bad key 'x1'"},
    {"1\t1,2\n", "bad.tsv:1: 2 values, the cube's dim is 3"},
    {"\n\n1\t1,2,3,4,5\n", "bad.tsv:3: 5 values, the cube's dim is 3"},
    {"1\t1,two,3\n", "bad.tsv:1: value 2 is not a number: 'two'"},
    {"1\t1,,3\n", "bad.tsv:1: value 2 is not a number: ''"},
    {"1\t1,inf,3\n", "bad.tsv:1: value 2 is not a finite float32"},
    {"1\t1,2,3\n2\t1,2,3\n1\t4,5,6\n", "bad.tsv:3: duplicate key 1"},
    {"5:1\t1,2,3\n5:1\t1,2,3\n", "bad.tsv:2: duplicate key"},
    {"99999999999:1\t1,2,3\n", "bad.tsv:1: bad key '99999999999:1'"},
    {"-1\t1,2,3\n", "bad.tsv:1: bad key '-1'"},
  };
  g_autofree char *dir = tpath ("cli-bad");
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *tsv = write_tsv ("bad.tsv", cases[i].content);
    g_auto (SedpTestRun) r;
    sedp_run (&r, NULL, "cube", "build", "-o", dir, "--dim", "3", tsv, NULL);
    SEDP_ASSERT_EXIT (r, 1);
    SEDP_ASSERT_CONTAINS (r.err, cases[i].needle);
    CU_ASSERT_TRUE (g_str_has_prefix (r.err, "sedp cube build: "));
    CU_ASSERT_EQUAL (strchr (r.err, '\n') - r.err + 1, (long) strlen (r.err)); /* one line */
    CU_ASSERT_TRUE (nothing_left (dir));
  }
  /* A NUL byte. */
  g_autofree char *nul = tpath ("nul.tsv");
  CU_ASSERT_TRUE (g_file_set_contents (nul, "1\t1,2,3\n2\t1\0002,3\n", 15, NULL));
  g_auto (SedpTestRun) n;
  sedp_run (&n, NULL, "cube", "build", "-o", dir, "--dim", "3", nul, NULL);
  SEDP_ASSERT_EXIT (n, 1);
  SEDP_ASSERT_CONTAINS (n.err, "nul.tsv:2: binary data");
  CU_ASSERT_TRUE (nothing_left (dir));

  /* Usage errors. */
  g_autofree char *tsv = write_tsv ("ok.tsv", "1\t1,2,3\n");
  struct {
    const char *a, *b, *needle;
  } usage[] = {
    {"--dim", "0", "--dim must be from 1 to 65536"},
    {"--hash-key", "abc", "--hash-key wants 32 hex digits"},
    {"--block-size", "12X", "--block-size wants bytes"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (usage); i++) {
    g_auto (SedpTestRun) r;
    if (strcmp (usage[i].a, "--dim") == 0)
      sedp_run (&r, NULL, "cube", "build", "-o", dir, usage[i].a, usage[i].b, tsv, NULL);
    else
      sedp_run (&r, NULL, "cube", "build", "-o", dir, "--dim", "3", usage[i].a, usage[i].b, tsv,
                NULL);
    SEDP_ASSERT_EXIT (r, 2);
    SEDP_ASSERT_CONTAINS (r.err, usage[i].needle);
    CU_ASSERT_TRUE (nothing_left (dir));
  }
  g_auto (SedpTestRun) small;
  sedp_run (&small, NULL, "cube", "build", "-o", dir, "--dim", "3", "--block-size", "11", tsv,
            NULL);
  SEDP_ASSERT_EXIT (small, 1);
  SEDP_ASSERT_CONTAINS (small.err, "block size 11");
  g_auto (SedpTestRun) missing;
  g_autofree char *none = tpath ("none.tsv");
  sedp_run (&missing, NULL, "cube", "build", "-o", dir, "--dim", "3", none, NULL);
  SEDP_ASSERT_EXIT (missing, 1);
  SEDP_ASSERT_CONTAINS (missing.err, "none.tsv: No such file");
  CU_ASSERT_TRUE (nothing_left (dir));

  /* An existing folder is left as it is. */
  CU_ASSERT_EQUAL (g_mkdir (dir, 0755), 0);
  g_autofree char *keep = member (dir, "keep");
  CU_ASSERT_TRUE (g_file_set_contents (keep, "x", -1, NULL));
  g_auto (SedpTestRun) e;
  sedp_run (&e, NULL, "cube", "build", "-o", dir, "--dim", "3", tsv, NULL);
  SEDP_ASSERT_EXIT (e, 1);
  SEDP_ASSERT_CONTAINS (e.err, "already exists");
  CU_ASSERT_TRUE (g_file_test (keep, G_FILE_TEST_EXISTS));
  rm_rf (dir);
}

static void
test_verify_and_get_errors (void)
{
  g_autofree char *tsv = write_tsv ("v.tsv", "1\t1,2\n2\t3,4\n");
  g_autofree char *dir = tpath ("cli-verify");
  g_auto (SedpTestRun) b;
  sedp_run (&b, NULL, "cube", "build", "-o", dir, "--dim", "2", tsv, NULL);
  SEDP_ASSERT_EXIT (b, 0);
  g_autofree char *blk = member (dir, "block-00000.bin");
  flip_byte (blk, 5);
  g_auto (SedpTestRun) v;
  sedp_run (&v, NULL, "cube", "verify", dir, NULL);
  SEDP_ASSERT_EXIT (v, 1);
  SEDP_ASSERT_CONTAINS (v.err, "block-00000.bin: checksum mismatch");
  g_auto (SedpTestRun) gm;
  sedp_run (&gm, NULL, "cube", "get", "--values", "memory", dir, "1", NULL);
  SEDP_ASSERT_EXIT (gm, 1);
  SEDP_ASSERT_CONTAINS (gm.err, "block-00000.bin: checksum mismatch");

  g_auto (SedpTestRun) k;
  sedp_run (&k, NULL, "cube", "get", dir, "one", NULL);
  SEDP_ASSERT_EXIT (k, 2);
  SEDP_ASSERT_CONTAINS (k.err, "bad key 'one'");
  g_autofree char *none = tpath ("no-cube");
  g_auto (SedpTestRun) n;
  sedp_run (&n, NULL, "cube", "get", none, "1", NULL);
  SEDP_ASSERT_EXIT (n, 1);
  SEDP_ASSERT_CONTAINS (n.err, "no-cube");
  g_auto (SedpTestRun) i;
  sedp_run (&i, NULL, "cube", "info", none, NULL);
  SEDP_ASSERT_EXIT (i, 1);
  g_auto (SedpTestRun) nn;
  sedp_run (&nn, NULL, "cube", "get", "--redis", "redis://127.0.0.1:1", "1", NULL);
  SEDP_ASSERT_EXIT (nn, 2);
  SEDP_ASSERT_CONTAINS (nn.err, "--redis needs --name");
  g_auto (SedpTestRun) down;
  sedp_run (&down, NULL, "cube", "get", "--redis", "redis://127.0.0.1:1", "--name", "x", "1",
            NULL);
  SEDP_ASSERT_EXIT (down, 1);
  CU_ASSERT_TRUE (g_str_has_prefix (down.err, "sedp cube get: "));
  g_auto (SedpTestRun) u;
  sedp_run (&u, NULL, "cube", "frobnicate", NULL);
  SEDP_ASSERT_EXIT (u, 2);
  SEDP_ASSERT_CONTAINS (u.err, "unknown command 'frobnicate'");
  g_auto (SedpTestRun) h;
  sedp_run (&h, NULL, "cube", "--help", NULL);
  SEDP_ASSERT_EXIT (h, 0);
  SEDP_ASSERT_CONTAINS (h.out, "build");
  SEDP_ASSERT_CONTAINS (h.out, "push");
}

/* sedp cube push, then sedp cube get --redis prints what the local get prints. */
static void
test_redis_round_trip (void)
{
  if (!redis_harness_available ()) {
    fprintf (stderr, "(redis-server not installed: skipped) ");
    return;
  }
  g_autoptr (GError) error = NULL;
  RedisServer *server = redis_server_new (FALSE, &error);
  CU_ASSERT_PTR_NOT_NULL_FATAL (server);
  g_autofree char *url = redis_server_url (server);
  g_autofree char *tsv = write_tsv ("push.tsv", good_tsv);
  g_autofree char *dir = tpath ("cli-push");
  g_auto (SedpTestRun) b;
  sedp_run (&b, NULL, "cube", "build", "-o", dir, "--dim", "3", "--hash-key", hash_hex, tsv,
            NULL);
  SEDP_ASSERT_EXIT (b, 0);
  g_auto (SedpTestRun) p;
  sedp_run (&p, NULL, "cube", "push", dir, "--redis", url, "--name", "emb", NULL);
  SEDP_ASSERT_EXIT (p, 0);
  SEDP_ASSERT_CONTAINS (p.out, "4 keys of dim 3");
  g_auto (SedpTestRun) local;
  sedp_run (&local, NULL, "cube", "get", dir, "12345", "3:7", "0", "99", NULL);
  g_auto (SedpTestRun) remote;
  sedp_run (&remote, NULL, "cube", "get", "--redis", url, "--name", "emb", "12345", "3:7", "0",
            "99", NULL);
  SEDP_ASSERT_EXIT (remote, 0);
  CU_ASSERT_STRING_EQUAL (remote.out, local.out);
  SEDP_ASSERT_CONTAINS (remote.out, "99\tmissing\n");
  redis_server_free (server);
}

/* ---- model split ---- */

static void
run_plan (SedpNnModel *m, guint n_in, SedpNnTensor *in, guint batch, GPtrArray *outputs)
{
  g_autoptr (GError) error = NULL;
  SedpNnPlan *plan = sedp_nn_plan_new (m, batch, &error);
  if (plan == NULL)
    fprintf (stderr, "\n  plan: %s\n", error->message);
  CU_ASSERT_PTR_NOT_NULL_FATAL (plan);
  guint n_out = sedp_nn_plan_get_n_outputs (plan);
  g_autofree SedpNnTensor *out = g_new0 (SedpNnTensor, n_out);
  gboolean ok = sedp_nn_plan_run (plan, n_in, in, n_out, out, &error);
  if (!ok)
    fprintf (stderr, "\n  run: %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  for (guint k = 0; k < n_out; k++)
    g_ptr_array_add (outputs, sedp_nn_tensor_dup (&out[k]));
  sedp_nn_plan_free (plan);
}

/* The pooled embedding of @ids (L per row) in slot @slot, from the cube. */
static void
pool_from_cube (SedpCube *cube, guint32 slot, const gint64 *ids, guint batch, guint L,
                gboolean mean, float *out)
{
  guint dim = sedp_cube_get_meta (cube)->dim;
  g_autofree guint64 *keys = g_new (guint64, (gsize) batch * L);
  for (guint i = 0; i < batch * L; i++)
    keys[i] = sedp_signature (sedp_cube_get_meta (cube)->hash_key, slot, (guint64) ids[i]);
  g_autofree float *v = g_new (float, (gsize) batch * L * dim);
  g_autofree guint8 *found = g_new (guint8, batch * L);
  CU_ASSERT_EQUAL (sedp_cube_lookup (cube, keys, batch * L, v, found, NULL), batch * L);
  for (guint r = 0; r < batch; r++)
    for (guint d = 0; d < dim; d++) {
      float s = 0;
      for (guint j = 0; j < L; j++)
        s += v[((gsize) r * L + j) * dim + d];
      out[(gsize) r * dim + d] = mean ? s / (float) L : s;
    }
}

/* Splits @model_path; runs both models on the same random ids and compares every output. */
static void
check_split (const char *tag, const char *model_path, gboolean mean, gboolean ids_rank1)
{
  g_autofree char *dense_path = g_strdup_printf ("%s/%s-dense.onnx", cube_tmp_root, tag);
  g_autofree char *cube_dir = g_strdup_printf ("%s/%s-cube", cube_tmp_root, tag);
  g_auto (SedpTestRun) s;
  sedp_run (&s, NULL, "model", "split", model_path, "--dense", dense_path, "--cube", cube_dir,
            "--hash-key", hash_hex, NULL);
  SEDP_ASSERT_EXIT (s, 0);
  SEDP_ASSERT_CONTAINS (s.out, mean ? "pooling = mean" : "pooling = sum");
  g_autoptr (SedpNnModel) orig = sedp_nn_model_load (model_path, NULL);
  g_autoptr (SedpNnModel) dense = sedp_nn_model_load (dense_path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (orig);
  CU_ASSERT_PTR_NOT_NULL_FATAL (dense);
  SedpCube *cube = sedp_cube_open (cube_dir, SEDP_CUBE_VALUES_MEMORY, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (cube);
  CU_ASSERT_EQUAL_FATAL (dense->n_inputs, orig->n_inputs);
  /* No table is left in the dense model. */
  for (guint k = 0; k < dense->n_initializers; k++)
    CU_ASSERT_FALSE (g_str_has_prefix (dense->initializers[k]->name, "emb_"));

  const guint batch = 6;
  GRand *rng = g_rand_new_with_seed (31);
  g_autoptr (GPtrArray) keep = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  g_autofree SedpNnTensor *in_o = g_new0 (SedpNnTensor, orig->n_inputs);
  g_autofree SedpNnTensor *in_d = g_new0 (SedpNnTensor, orig->n_inputs);
  guint slot = 0;
  for (guint k = 0; k < orig->n_inputs; k++) {
    const SedpNnValueInfo *vi = &orig->inputs[k];
    gint64 dims[SEDP_NN_MAX_RANK];
    for (int d = 0; d < vi->rank; d++)
      dims[d] = d == 0 ? batch : vi->dims[d];
    SedpNnTensor *t = sedp_nn_tensor_new (vi->name, vi->dtype, vi->rank, dims);
    g_ptr_array_add (keep, t);
    in_o[k] = *t;
    if (vi->dtype == SEDP_NN_FLOAT) {
      for (gint64 i = 0; i < sedp_nn_tensor_numel (t); i++)
        ((float *) t->data)[i] = (float) g_rand_double_range (rng, -1, 1);
      in_d[k] = *t;
      continue;
    }
    /* Ids within the table's rows. */
    gint64 rows = 0;
    for (guint n = 0; n < orig->n_nodes; n++)
      if (strcmp (orig->nodes[n].op_type, "Gather") == 0 &&
          strcmp (orig->nodes[n].inputs[1], vi->name) == 0)
        rows = sedp_nn_model_get_initializer (orig, orig->nodes[n].inputs[0])->dims[0];
    CU_ASSERT_FATAL (rows > 0);
    gint64 *ids = t->data;
    for (gint64 i = 0; i < sedp_nn_tensor_numel (t); i++)
      ids[i] = g_rand_int_range (rng, 0, (gint32) rows);
    guint L = ids_rank1 ? 1 : (guint) vi->dims[1];
    guint dim = sedp_cube_get_meta (cube)->dim;
    gint64 pdims[2] = {batch, dim};
    g_autofree char *pname = g_strdup_printf ("pooled_%u", slot);
    CU_ASSERT_STRING_EQUAL (dense->inputs[k].name, pname);
    SedpNnTensor *p = sedp_nn_tensor_new (pname, SEDP_NN_FLOAT, 2, pdims);
    g_ptr_array_add (keep, p);
    pool_from_cube (cube, slot, ids, batch, L, mean, p->data);
    in_d[k] = *p;
    slot++;
  }
  g_rand_free (rng);
  g_autoptr (GPtrArray) out_o = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  g_autoptr (GPtrArray) out_d = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
  run_plan (orig, orig->n_inputs, in_o, batch, out_o);
  run_plan (dense, dense->n_inputs, in_d, batch, out_d);
  CU_ASSERT_EQUAL_FATAL (out_o->len, out_d->len);
  guint bad = 0;
  for (guint k = 0; k < out_o->len; k++) {
    const SedpNnTensor *a = out_o->pdata[k], *b = out_d->pdata[k];
    CU_ASSERT_EQUAL_FATAL (sedp_nn_tensor_numel (a), sedp_nn_tensor_numel (b));
    for (gint64 i = 0; i < sedp_nn_tensor_numel (a); i++) {
      double x = ((float *) a->data)[i], y = ((float *) b->data)[i];
      if (fabs (x - y) > 1e-5 * MAX (fabs (x), 1e-3)) {
        if (bad++ < 3)
          fprintf (stderr, "\n  %s output %u [%" G_GINT64_FORMAT "]: %.9g vs %.9g", tag, k, i, x, y);
      }
    }
  }
  CU_ASSERT_EQUAL (bad, 0);
  sedp_cube_close (cube);
}

static void
test_split_synth (void)
{
  static const struct {
    const char *arch;
    int opset;
    gboolean mean;
  } cases[] = {
    {"dlrm", 17, FALSE}, {"dcn", 17, FALSE}, {"mmoe", 17, TRUE}, {"mmoe", 11, TRUE},
    {"dcn", 12, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *tag = g_strdup_printf ("%s%d", cases[i].arch, cases[i].opset);
    g_autofree char *path = g_strdup_printf ("%s/%s.onnx", cube_tmp_root, tag);
    g_autofree char *opset = g_strdup_printf ("%d", cases[i].opset);
    g_auto (SedpTestRun) r;
    sedp_run (&r, NULL, "model", "synth", "-a", cases[i].arch, "--opset", opset, "--seed", "5",
              "-o", path, NULL);
    SEDP_ASSERT_EXIT (r, 0);
    check_split (tag, path, cases[i].mean, FALSE);
  }
}

/* A hand-made model: ids [N, 3] pooled by ReduceSum with keepdims (the pooled value is
 * [N, 1, 4], read by a Reshape and also a graph output), and single ids [N] looked up with no
 * pooling; both tables dim 4. */
static void
test_split_keepdims_and_single_ids (void)
{
  for (int opset = 11; opset <= 13; opset += 2) {
    SedpNnModel *m = sedp_nn_model_new (opset, "test");
    gint64 d3[2] = {-1, 3}, d1[1] = {-1}, dx[2] = {-1, 2};
    const char *bp[2] = {"N", NULL};
    sedp_nn_model_add_input (m, "x", SEDP_NN_FLOAT, 2, dx, bp);
    sedp_nn_model_add_input (m, "tags", SEDP_NN_INT64, 2, d3, bp);
    sedp_nn_model_add_input (m, "item", SEDP_NN_INT64, 1, d1, bp);
    gint64 td[2] = {20, 4}, sd[1] = {2}, wd[2] = {10, 1};
    SedpNnTensor *t0 = sedp_nn_tensor_new ("tag_table", SEDP_NN_FLOAT, 2, td);
    SedpNnTensor *t1 = sedp_nn_tensor_new ("item_table", SEDP_NN_FLOAT, 2, td);
    SedpNnTensor *shape = sedp_nn_tensor_new ("shape", SEDP_NN_INT64, 1, sd);
    SedpNnTensor *w = sedp_nn_tensor_new ("w", SEDP_NN_FLOAT, 2, wd);
    for (int k = 0; k < 80; k++) {
      ((float *) t0->data)[k] = (float) sin (k * 0.37);
      ((float *) t1->data)[k] = (float) cos (k * 0.21);
    }
    for (int k = 0; k < 10; k++)
      ((float *) w->data)[k] = 0.1f * (float) (k - 4);
    ((gint64 *) shape->data)[0] = -1;
    ((gint64 *) shape->data)[1] = 4;
    sedp_nn_model_add_initializer (m, t0);
    sedp_nn_model_add_initializer (m, t1);
    sedp_nn_model_add_initializer (m, shape);
    sedp_nn_model_add_initializer (m, w);
    const char *g0in[] = {"tag_table", "tags", NULL}, *g0out[] = {"g0", NULL};
    sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Gather", "g0", g0in, g0out), "axis", 0);
    const char *r0out[] = {"tags_pooled", NULL};
    SedpNnNode *r;
    if (opset >= 13) {
      gint64 one = 1, n1 = 1;
      SedpNnTensor *axes = sedp_nn_tensor_new ("axes", SEDP_NN_INT64, 1, &n1);
      *(gint64 *) axes->data = one;
      sedp_nn_model_add_initializer (m, axes);
      const char *r0in[] = {"g0", "axes", NULL};
      r = sedp_nn_model_add_node (m, "ReduceSum", "r0", r0in, r0out);
    } else {
      const char *r0in[] = {"g0", NULL};
      gint64 one = 1;
      r = sedp_nn_model_add_node (m, "ReduceSum", "r0", r0in, r0out);
      sedp_nn_node_set_attr_ints (r, "axes", 1, &one);
    }
    (void) r; /* keepdims defaults to 1 */
    const char *rsin[] = {"tags_pooled", "shape", NULL}, *rsout[] = {"tags_flat", NULL};
    sedp_nn_model_add_node (m, "Reshape", "rs", rsin, rsout);
    const char *g1in[] = {"item_table", "item", NULL}, *g1out[] = {"item_emb", NULL};
    sedp_nn_model_add_node (m, "Gather", "g1", g1in, g1out);
    const char *cin[] = {"x", "tags_flat", "item_emb", NULL}, *cout[] = {"cat", NULL};
    sedp_nn_node_set_attr_int (sedp_nn_model_add_node (m, "Concat", "c", cin, cout), "axis", 1);
    const char *min[] = {"cat", "w", NULL}, *mout[] = {"score", NULL};
    sedp_nn_model_add_node (m, "MatMul", "mm", min, mout);
    gint64 od[2] = {-1, 1}, pd[3] = {-1, 1, 4}, ed[2] = {-1, 4};
    const char *op[3] = {"N", NULL, NULL};
    sedp_nn_model_add_output (m, "score", SEDP_NN_FLOAT, 2, od, op);
    sedp_nn_model_add_output (m, "tags_pooled", SEDP_NN_FLOAT, 3, pd, op);
    sedp_nn_model_add_output (m, "item_emb", SEDP_NN_FLOAT, 2, ed, op);
    g_autofree char *path = g_strdup_printf ("%s/hand%d.onnx", cube_tmp_root, opset);
    CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, path, NULL));
    sedp_nn_model_unref (m);
    /* Both inputs in one check: tags [N, 3] summed, item [N] (one id). */
    g_autofree char *tag = g_strdup_printf ("hand%d", opset);
    g_autofree char *dense_path = g_strdup_printf ("%s/%s-dense.onnx", cube_tmp_root, tag);
    g_autofree char *cube_dir = g_strdup_printf ("%s/%s-cube", cube_tmp_root, tag);
    g_auto (SedpTestRun) s;
    sedp_run (&s, NULL, "model", "split", path, "--dense", dense_path, "--cube", cube_dir,
              "--hash-key", hash_hex, NULL);
    SEDP_ASSERT_EXIT (s, 0);
    SEDP_ASSERT_CONTAINS (s.out, "slots = tags, item; pooling = sum, sum");

    g_autoptr (SedpNnModel) orig = sedp_nn_model_load (path, NULL);
    g_autoptr (SedpNnModel) dense = sedp_nn_model_load (dense_path, NULL);
    SedpCube *cube = sedp_cube_open (cube_dir, SEDP_CUBE_VALUES_DISK, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL (dense);
    CU_ASSERT_PTR_NOT_NULL_FATAL (cube);
    CU_ASSERT_EQUAL (sedp_cube_get_meta (cube)->count, 40);
    const guint batch = 5;
    float x[10];
    gint64 tags[15], item[5];
    for (int k = 0; k < 10; k++)
      x[k] = (float) k / 7.0f;
    for (int k = 0; k < 15; k++)
      tags[k] = (k * 7) % 20;
    for (int k = 0; k < 5; k++)
      item[k] = (k * 3 + 1) % 20;
    float p0[20], p1[20];
    pool_from_cube (cube, 0, tags, batch, 3, FALSE, p0);
    pool_from_cube (cube, 1, item, batch, 1, FALSE, p1);
    SedpNnTensor in_o[3] = {{.name = "x", .dtype = SEDP_NN_FLOAT, .rank = 2, .dims = {5, 2}, .data = x},
                            {.name = "tags", .dtype = SEDP_NN_INT64, .rank = 2, .dims = {5, 3}, .data = tags},
                            {.name = "item", .dtype = SEDP_NN_INT64, .rank = 1, .dims = {5}, .data = item}};
    SedpNnTensor in_d[3] = {in_o[0],
                            {.name = "pooled_0", .dtype = SEDP_NN_FLOAT, .rank = 2, .dims = {5, 4}, .data = p0},
                            {.name = "pooled_1", .dtype = SEDP_NN_FLOAT, .rank = 2, .dims = {5, 4}, .data = p1}};
    g_autoptr (GPtrArray) out_o = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
    g_autoptr (GPtrArray) out_d = g_ptr_array_new_with_free_func ((GDestroyNotify) sedp_nn_tensor_free);
    run_plan (orig, 3, in_o, batch, out_o);
    run_plan (dense, 3, in_d, batch, out_d);
    CU_ASSERT_EQUAL_FATAL (out_o->len, 3);
    CU_ASSERT_EQUAL_FATAL (out_d->len, 3);
    for (guint k = 0; k < 3; k++) {
      const SedpNnTensor *a = out_o->pdata[k], *b = out_d->pdata[k];
      CU_ASSERT_EQUAL_FATAL (sedp_nn_tensor_numel (a), sedp_nn_tensor_numel (b));
      for (gint64 i = 0; i < sedp_nn_tensor_numel (a); i++)
        CU_ASSERT (fabs (((float *) a->data)[i] - ((float *) b->data)[i]) <= 1e-5 * MAX (fabs (((float *) a->data)[i]), 1e-3));
    }
    sedp_cube_close (cube);
  }
}

static void
test_split_refusals (void)
{
  g_autofree char *dense = tpath ("refused-dense.onnx");
  g_autofree char *dir = tpath ("refused-cube");

  /* Tables of different dims on different inputs: one cube per dim (tests/split checks more). */
  SedpNnModel *m = sedp_nn_model_new (13, "test");
  gint64 d[2] = {-1, 2};
  const char *bp[2] = {"N", NULL};
  sedp_nn_model_add_input (m, "a", SEDP_NN_INT64, 2, d, bp);
  sedp_nn_model_add_input (m, "b", SEDP_NN_INT64, 2, d, bp);
  gint64 ta[2] = {5, 4}, tb[2] = {5, 8}, n1 = 1;
  sedp_nn_model_add_initializer (m, sedp_nn_tensor_new ("ta", SEDP_NN_FLOAT, 2, ta));
  sedp_nn_model_add_initializer (m, sedp_nn_tensor_new ("tb", SEDP_NN_FLOAT, 2, tb));
  SedpNnTensor *axes = sedp_nn_tensor_new ("axes", SEDP_NN_INT64, 1, &n1);
  *(gint64 *) axes->data = 1;
  sedp_nn_model_add_initializer (m, axes);
  const char *gi[] = {"ta", "a", NULL}, *go[] = {"ga", NULL};
  sedp_nn_model_add_node (m, "Gather", NULL, gi, go);
  const char *hi[] = {"tb", "b", NULL}, *ho[] = {"gb", NULL};
  sedp_nn_model_add_node (m, "Gather", NULL, hi, ho);
  const char *ri[] = {"ga", "axes", NULL}, *ro[] = {"pa", NULL};
  sedp_nn_model_add_node (m, "ReduceSum", NULL, ri, ro);
  const char *si[] = {"gb", "axes", NULL}, *so[] = {"pb", NULL};
  sedp_nn_model_add_node (m, "ReduceSum", NULL, si, so);
  gint64 od[2] = {-1, 4}, ob[2] = {-1, 8};
  sedp_nn_model_add_output (m, "pa", SEDP_NN_FLOAT, 2, od, bp);
  sedp_nn_model_add_output (m, "pb", SEDP_NN_FLOAT, 2, ob, bp);
  g_autofree char *two = tpath ("two-dims.onnx");
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, two, NULL));
  sedp_nn_model_unref (m);
  g_auto (SedpTestRun) t;
  sedp_run (&t, NULL, "model", "split", two, "--dense", dense, "--cube", dir, NULL);
  SEDP_ASSERT_EXIT (t, 0);
  SEDP_ASSERT_CONTAINS (t.out, "into 2 cubes of dims 8, 4");
  SEDP_ASSERT_CONTAINS (t.out, "slots = 1=b; pooling = sum; hash_slot_ids = true; output_prefix = "
                               "pooled_d8_");
  rm_rf (dir);
  g_unlink (dense);

  /* Nothing to split. */
  m = sedp_nn_model_new (13, "test");
  sedp_nn_model_add_input (m, "x", SEDP_NN_FLOAT, 2, d, bp);
  const char *ii[] = {"x", NULL}, *io[] = {"y", NULL};
  sedp_nn_model_add_node (m, "Relu", NULL, ii, io);
  sedp_nn_model_add_output (m, "y", SEDP_NN_FLOAT, 2, d, bp);
  g_autofree char *plain = tpath ("plain.onnx");
  CU_ASSERT_TRUE_FATAL (sedp_nn_model_save (m, plain, NULL));
  sedp_nn_model_unref (m);
  g_auto (SedpTestRun) u;
  sedp_run (&u, NULL, "model", "split", plain, "--dense", dense, "--cube", dir, NULL);
  SEDP_ASSERT_EXIT (u, 1);
  SEDP_ASSERT_CONTAINS (u.err, "no embedding lookups to split");
  CU_ASSERT_TRUE (nothing_left (dir));

  /* An existing cube folder: refused, no dense model written. */
  g_autofree char *dlrm = g_strdup_printf ("%s/dlrm-r.onnx", cube_tmp_root);
  g_auto (SedpTestRun) v;
  sedp_run (&v, NULL, "model", "synth", "-a", "dlrm", "-o", dlrm, NULL);
  CU_ASSERT_EQUAL (g_mkdir (dir, 0755), 0);
  g_auto (SedpTestRun) w;
  sedp_run (&w, NULL, "model", "split", dlrm, "--dense", dense, "--cube", dir, NULL);
  SEDP_ASSERT_EXIT (w, 1);
  SEDP_ASSERT_CONTAINS (w.err, "already exists");
  CU_ASSERT_TRUE (nothing_left (dense));
  g_rmdir (dir);
  g_auto (SedpTestRun) x;
  sedp_run (&x, NULL, "model", "split", dlrm, "--cube", dir, NULL);
  SEDP_ASSERT_EXIT (x, 2);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite suite = CU_add_suite ("cube-cli", cube_suite_init, cube_suite_clean);
#define T(f) CU_add_test (suite, #f, f)
  T (test_build_info_verify_get);
  T (test_build_from_stdin);
  T (test_build_errors);
  T (test_verify_and_get_errors);
  T (test_redis_round_trip);
  T (test_split_synth);
  T (test_split_keepdims_and_single_ids);
  T (test_split_refusals);
#undef T
  return sedp_test_run ();
}
