/* sedp tests — hot reload in `sedp serve` (docs/model-lifecycle.md): versions swapped under load
 * with every answer checked against the version it names, the admin API and its token, each
 * refusal leaving the serving version in place, and the probation guard's rollback.
 *
 * The fixture: two versions of a small DLRM (`sedp model synth` seeds 1 and 2: other weights,
 * other embeddings), each split and packed as bundle ctr/1 and ctr/2 of a repository. The
 * reference scores of each version come from pipelines pinned to it in the same server
 * (never reloaded), so a mismatch is an answer that mixed or misnamed versions. */
#include "server-harness.h"

#include "test-spawn.h"

#include "bundle/bundle.h"

#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>

#define TOKEN "0123456789abcdef-test-token"

static char *root;   /* the fixture: root/models/ctr/{1,2} (the pinned pipelines' repository) */

/* Runs sedp with the arguments, which must succeed. */
static void
sedp_ok (const char *first, ...)
{
  va_list ap;
  va_start (ap, first);
  g_auto (SedpTestRun) r = {0};
  sedp_test_spawnv (&r, NULL, first, ap);
  va_end (ap);
  SEDP_ASSERT_EXIT (r, 0);
}

/* A version from seed @seed (other sizes with @dense ≠ 3): its split in root/srcSEED, packed as
 * @version into @repo. */
static void
make_version (const char *repo, guint seed, guint dense, gint64 version)
{
  g_autofree char *model = g_strdup_printf ("%s/m%u-%u.onnx", root, seed, dense);
  g_autofree char *src = g_strdup_printf ("%s/src%u-%u", root, seed, dense);
  g_autofree char *s_seed = g_strdup_printf ("%u", seed), *s_dense = g_strdup_printf ("%u", dense);
  g_autofree char *s_version = g_strdup_printf ("%" G_GINT64_FORMAT, version);
  g_autofree char *dense_path = g_build_filename (src, "dense.onnx", NULL);
  g_autofree char *cube = g_build_filename (src, "cube", NULL);
  if (!g_file_test (src, G_FILE_TEST_IS_DIR)) {
    sedp_ok ("model", "synth", "--arch", "dlrm", "--slots", "2", "--dense", s_dense, "--rows", "64",
             "--ids-per-slot", "2", "--seed", s_seed, "-o", model, NULL);
    sedp_ok ("model", "split", model, "--dense", dense_path, "--cube", cube, NULL);
  }
  sedp_ok ("model", "pack", src, "--name", "ctr", "--version", s_version, "--repository", repo,
           NULL);
}

static void
fixture (void)
{
  if (root)
    return;
  root = sedp_test_make_tmp_dir ("sedp-reload-XXXXXX");
  g_autofree char *models = g_build_filename (root, "models", NULL);
  make_version (models, 1, 3, 1);
  make_version (models, 2, 3, 2);
}

/* A pipeline over model ctr of @repo: version @version ("latest" or N), @extra keys for the
 * [model] group. */
static char *
pipeline (const char *name, const char *repo, const char *version, const char *extra)
{
  return g_strdup_printf ("[pipeline]\nname = %s\ndeadline_ms = 20000\noutputs = score\n"
                          "[model ctr]\nrepository = %s\nversion = %s\n%s\n"
                          "[stage reader]\nplugin = data_reader\n"
                          "[stage lookup]\nplugin = cube_accessor\nafter = reader\ncube = @ctr/cube\n"
                          "slots = slot_0, slot_1\npooling = sum, sum\nhash_slot_ids = true\n"
                          "[stage model]\nplugin = model_inference\nafter = lookup\nmodel = @ctr\n"
                          "outputs = prob=score\n"
                          "[stage respond]\nplugin = responder\nafter = model\nscore_columns = score\n",
                          name, repo, version, extra ? extra : "");
}

/* Request @q: 6 items with features drawn from q. */
static char *
request_json (guint q)
{
  GString *out = g_string_new ("{\"items\": [");
  for (guint i = 0; i < 6; i++) {
    guint a = q * 7 + i;
    g_string_append_printf (out, "%s{\"id\": %u, \"features\": {\"dense\": {\"floats\": [%g, %g, %g]}, "
                            "\"slot_0\": {\"ids\": [%u, %u]}, \"slot_1\": {\"ids\": [%u, %u]}}}",
                            i ? ", " : "", a, (a % 5) * 0.1, (a % 3) * -0.2, (a % 7) * 0.05,
                            a % 64, (a * 3) % 64, (a * 5) % 64, (a * 11) % 64);
  }
  g_string_append (out, "]}");
  return g_string_free (out, FALSE);
}

#define N_REQUESTS 8

/* An answer: its model_version and its scores. */
typedef struct {
  char *version;
  double scores[6];
  guint n;
} Answer;

static gboolean
parse_answer (const char *body, Answer *a)
{
  g_autoptr (JsonParser) p = json_parser_new ();
  if (body == NULL || !json_parser_load_from_data (p, body, -1, NULL))
    return FALSE;
  JsonObject *o = json_node_get_object (json_parser_get_root (p));
  if (!json_object_has_member (o, "model_version") || !json_object_has_member (o, "items"))
    return FALSE;
  a->version = g_strdup (json_object_get_string_member (o, "model_version"));
  JsonArray *items = json_object_get_array_member (o, "items");
  a->n = MIN (json_array_get_length (items), 6);
  for (guint i = 0; i < a->n; i++) {
    JsonObject *it = json_array_get_object_element (items, i);
    a->scores[i] = json_array_get_double_element (json_object_get_array_member (it, "scores"), 0);
  }
  return TRUE;
}

static gboolean
ask (guint port, const char *name, guint q, Answer *a)
{
  g_autofree char *json = request_json (q);
  Resp r;
  predict_json (port, name, json, &r);
  gboolean ok = r.status == 200 && parse_answer (r.body, a);
  if (!ok)
    fprintf (stderr, "\n  %s q%u: %d %s\n", name, q, r.status, r.body ? r.body : "");
  resp_clear (&r);
  return ok;
}

/* POST an admin call with @token (NULL: no Authorization header). */
static void
admin (guint port, const char *path, const char *token, Resp *r)
{
  g_autoptr (GString) req = g_string_new (NULL);
  g_string_append_printf (req, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                          "Content-Length: 0\r\n", path);
  if (token)
    g_string_append_printf (req, "Authorization: Bearer %s\r\n", token);
  g_string_append (req, "\r\n");
  http_raw (port, req, r);
}

/* The serving version of model ctr in pipeline "live", from /metrics. */
static double
live_version (guint port)
{
  Resp m;
  get (port, "/metrics", &m);
  double v = metric_value (m.body, "sedp_model_version{pipeline=\"live\",model=\"ctr\"} ");
  resp_clear (&m);
  return v;
}

static gboolean
wait_version (guint port, double want)
{
  for (guint t = 0; t < 300; t++) {
    if (live_version (port) == want)
      return TRUE;
    g_usleep (50000);
  }
  fprintf (stderr, "\n  live never served version %g (serving %g)\n", want, live_version (port));
  return FALSE;
}

/* A token file of mode 600 in @dir. */
static char *
token_file (const char *dir)
{
  char *path = g_build_filename (dir, "token", NULL);
  sedp_test_write_file (path, TOKEN "\n", -1);
  g_chmod (path, 0600);
  return path;
}

/* An empty repository DIR/models with the model folder ctr/; returns DIR/models. */
static char *
make_repo (const char *dir)
{
  char *repo = g_build_filename (dir, "models", NULL);
  g_autofree char *ctr = g_build_filename (repo, "ctr", NULL);
  g_mkdir_with_parents (ctr, 0755);
  return repo;
}

/* Copies version @v of the fixture into @repo as a version folder renamed into place. */
static void
install (const char *repo, gint64 v)
{
  g_autofree char *from = g_strdup_printf ("%s/models/ctr/%" G_GINT64_FORMAT, root, v);
  g_autofree char *tmp = g_strdup_printf ("%s/ctr/tmp.%" G_GINT64_FORMAT, repo, v);
  g_autofree char *to = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT, repo, v);
  g_autofree char *cmd = g_strdup_printf ("cp -a '%s' '%s'", from, tmp);
  CU_ASSERT_EQUAL_FATAL (system (cmd), 0);
  CU_ASSERT_EQUAL_FATAL (g_rename (tmp, to), 0);
}

/* The server's threads running at SCHED_IDLE (policy 5 in /proc/PID/task/TID/sched): a new
 * version is warmed up at idle priority, and must serve at normal priority once swapped in. */
static guint
idle_threads (Server *s)
{
  g_autofree char *dir = g_strdup_printf ("/proc/%s/task", g_subprocess_get_identifier (s->proc));
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;
  const char *tid;
  while (d && (tid = g_dir_read_name (d))) {
    g_autofree char *path = g_strdup_printf ("%s/%s/sched", dir, tid);
    g_autofree char *text = NULL;
    if (!g_file_get_contents (path, &text, NULL, NULL))
      continue;
    const char *p = strstr (text, "\npolicy");
    const char *colon = p ? strchr (p, ':') : NULL;
    if (colon && atoi (colon + 1) == 5) {
      fprintf (stderr, "\n  thread at SCHED_IDLE after the swaps: %.*s\n",
               (int) strcspn (text, "\n"), text);
      n++;
    }
  }
  return n;
}

/* ---- swaps under load ---- */

typedef struct {
  guint port;
  gint stop;
  Answer ref[2][N_REQUESTS];  /* version 1 and 2 */
  guint answers, errors, mismatches, seen[2];
} Load;

static gboolean
same_scores (const Answer *a, const Answer *b)
{
  if (a->n != b->n)
    return FALSE;
  for (guint i = 0; i < a->n; i++)
    if (fabs (a->scores[i] - b->scores[i]) > 1e-6 * MAX (1.0, fabs (b->scores[i])))
      return FALSE;
  return TRUE;
}

static gpointer
client (gpointer data)
{
  Load *l = data;
  for (guint q = 0; !g_atomic_int_get (&l->stop); q++) {
    Answer a = {0};
    if (!ask (l->port, "live", q % N_REQUESTS, &a)) {
      g_atomic_int_inc ((gint *) &l->errors);
      continue;
    }
    int v = strcmp (a.version, "ctr:1") == 0 ? 0 : strcmp (a.version, "ctr:2") == 0 ? 1 : -1;
    g_atomic_int_inc ((gint *) &l->answers);
    if (v < 0 || !same_scores (&a, &l->ref[v][q % N_REQUESTS])) {
      fprintf (stderr, "\n  q%u answered by '%s' with other scores\n", q % N_REQUESTS, a.version);
      g_atomic_int_inc ((gint *) &l->mismatches);
    } else
      g_atomic_int_inc ((gint *) &l->seen[v]);
    g_free (a.version);
  }
  return NULL;
}

static void
admin_expect (guint port, const char *path, guint status, const char *needle)
{
  Resp r;
  admin (port, path, TOKEN, &r);
  if (r.status != (int) status || r.body == NULL || strstr (r.body, needle) == NULL)
    fprintf (stderr, "\n  %s: %d %s (want %u, '%s')\n", path, r.status, r.body ? r.body : "",
             status, needle);
  CU_ASSERT_EQUAL (r.status, status);
  CU_ASSERT_PTR_NOT_NULL (r.body && strstr (r.body, needle));
  resp_clear (&r);
}

/* Under `meson test --setup valgrind` the server of the swap test runs under memcheck too: the
 * instances' references, the swap and the retirement are in the server process. */
static const char *const valgrind_argv[] = {
    "valgrind", "--error-exitcode=1", "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
    "--num-callers=30", "--suppressions=" SEDP_TEST_SRCDIR "/valgrind.supp", NULL};

static void
test_swaps_under_load (void)
{
  fixture ();
  server_wrapper = g_getenv ("SEDP_VALGRIND") ? valgrind_argv : NULL;
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-reload-live-XXXXXX");
  g_autofree char *live_repo = make_repo (dir);
  install (live_repo, 1);
  g_autofree char *models = g_build_filename (root, "models", NULL);
  g_autofree char *live = pipeline ("live", live_repo, "latest", "poll_interval_s = 1");
  g_autofree char *pin1 = pipeline ("pin1", models, "1", NULL);
  g_autofree char *pin2 = pipeline ("pin2", models, "2", NULL);
  const char *pipelines[] = {live, pin1, pin2, NULL};
  g_autofree char *token = token_file (dir);
  g_autofree char *opt = g_strdup_printf ("--admin-token-file=%s", token);
  Server s;
  gboolean started = server_start (&s, pipelines, opt);
  server_wrapper = NULL;
  if (!started)
    return;
  Load l = {.port = s.port};
  for (guint q = 0; q < N_REQUESTS; q++) {
    CU_ASSERT_TRUE_FATAL (ask (s.port, "pin1", q, &l.ref[0][q]));
    CU_ASSERT_TRUE_FATAL (ask (s.port, "pin2", q, &l.ref[1][q]));
    if (same_scores (&l.ref[0][q], &l.ref[1][q]))
      fprintf (stderr, "\n  q%u: %s %g (%u) = %s %g\n", q, l.ref[0][q].version, l.ref[0][q].scores[0], l.ref[0][q].n, l.ref[1][q].version, l.ref[1][q].scores[0]);
    CU_ASSERT_FALSE (same_scores (&l.ref[0][q], &l.ref[1][q]));
  }
  GThread *threads[3];
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    threads[i] = g_thread_new ("client", client, &l);
  g_usleep (200000);
  install (live_repo, 2); /* the watcher swaps it in */
  CU_ASSERT_TRUE (wait_version (s.port, 2));
  for (guint k = 0; k < 5; k++) {
    g_usleep (100000);
    admin_expect (s.port, "/v1/admin/models/ctr:rollback", 200, "\"rolled_back\"");
    g_usleep (100000);
    admin_expect (s.port, "/v1/admin/models/ctr:reload", 200, "\"loaded\"");
  }
  admin_expect (s.port, "/v1/admin/models/ctr:reload", 200, "\"unchanged\"");
  g_usleep (200000);
  CU_ASSERT_EQUAL (idle_threads (&s), 0);
  g_atomic_int_set (&l.stop, 1);
  for (guint i = 0; i < G_N_ELEMENTS (threads); i++)
    g_thread_join (threads[i]);
  fprintf (stderr, "\n  %u answers (%u by version 1, %u by version 2), %u errors, %u mismatches\n",
           l.answers, l.seen[0], l.seen[1], l.errors, l.mismatches);
  CU_ASSERT_EQUAL (l.errors, 0);
  CU_ASSERT_EQUAL (l.mismatches, 0);
  CU_ASSERT (l.seen[0] > 0 && l.seen[1] > 0);
  Resp m;
  get (s.port, "/metrics", &m);
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_model_reloads_total{pipeline=\"live\",model=\"ctr\",result=\"loaded\"} "), 6);
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_model_rollbacks_total{pipeline=\"live\",model=\"ctr\",reason=\"admin\"} "), 5);
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_model_reloads_total{pipeline=\"live\",model=\"ctr\",result=\"failed\"} "), 0);
  resp_clear (&m);
  for (guint q = 0; q < N_REQUESTS; q++) {
    g_free (l.ref[0][q].version);
    g_free (l.ref[1][q].version);
  }
  CU_ASSERT_EQUAL (server_stop (&s), 0);
  sedp_test_remove_tree (dir);
}

/* ---- refusals ---- */

typedef struct {
  const char *name;
  void (*make) (const char *repo, gint64 v); /* writes version v into repo */
  guint status;
  const char *needle;
} Bad;

/* Version @v: version 2's model packed as v, its dense.onnx then changed. */
static void
bad_digest (const char *repo, gint64 v)
{
  make_version (repo, 2, 3, v);
  g_autofree char *f = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT "/dense.onnx", repo, v);
  g_autofree char *text = NULL;
  gsize n;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (f, &text, &n, NULL));
  text[n / 2] ^= 0x55;
  sedp_test_write_file (f, text, (gssize) n);
}

/* Version @v with a truncated dense.onnx listed by its true size and digest (as a bundle packed
 * by another tool would be): every file checks, the model does not load. */
static void
bad_truncated (const char *repo, gint64 v)
{
  make_version (repo, 2, 3, v);
  g_autofree char *dir = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT, repo, v);
  g_autofree char *dense = g_build_filename (dir, "dense.onnx", NULL);
  g_autofree char *text = NULL;
  gsize n;
  CU_ASSERT_TRUE_FATAL (g_file_get_contents (dense, &text, &n, NULL));
  sedp_test_write_file (dense, text, (gssize) (n / 2));
  g_autofree char *manifest_path = g_build_filename (dir, "manifest.json", NULL);
  g_autoptr (GBytes) bytes = sedp_bundle_manifest_read (manifest_path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (bytes);
  gsize mlen;
  const char *mtext = g_bytes_get_data (bytes, &mlen);
  SedpBundleManifest *m = sedp_bundle_manifest_parse (mtext, mlen, manifest_path, NULL);
  CU_ASSERT_PTR_NOT_NULL_FATAL (m);
  SedpBundleFile *file = (SedpBundleFile *) sedp_bundle_manifest_find_file (m, "dense.onnx");
  int fd = open (dense, O_RDONLY);
  CU_ASSERT_TRUE (sedp_bundle_digest_fd (fd, dense, file->blake2b, NULL));
  close (fd);
  file->size = (gint64) (n / 2);
  g_autofree char *out = sedp_bundle_manifest_to_string (m);
  sedp_test_write_file (manifest_path, out, -1);
  sedp_bundle_manifest_free (m);
}

static void
bad_block (const char *repo, gint64 v)
{
  make_version (repo, 2, 3, v);
  g_autofree char *d = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT, repo, v);
  g_autofree char *cmd = g_strdup_printf ("rm -f '%s'/cube/block-*", d);
  CU_ASSERT_EQUAL_FATAL (system (cmd), 0);
}

static void
bad_manifest (const char *repo, gint64 v)
{
  make_version (repo, 2, 3, v);
  g_autofree char *f = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT "/manifest.json", repo, v);
  sedp_test_write_file (f, "{\"format\": \"sedp-bundle\", ", -1);
}

static void
bad_outside (const char *repo, gint64 v)
{
  make_version (repo, 2, 3, v);
  g_autofree char *d = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT, repo, v);
  g_autofree char *cmd = g_strdup_printf ("cd '%s' && rm dense.onnx && ln -s '%s/src2-3/dense.onnx' dense.onnx", d, root);
  CU_ASSERT_EQUAL_FATAL (system (cmd), 0);
}

static void
bad_inputs (const char *repo, gint64 v)
{
  make_version (repo, 3, 4, v); /* 4 dense features: the pipeline's requests carry 3 */
}

static const Bad bad[] = {
  {"digest mismatch", bad_digest, 422, "dense.onnx"},
  {"truncated model", bad_truncated, 500, "dense.onnx"},
  {"missing cube block", bad_block, 422, "block-"},
  {"malformed manifest", bad_manifest, 422, "manifest.json"},
  {"symlink leaving the bundle", bad_outside, 422, "dense.onnx"},
  {"inputs that do not fit", bad_inputs, 422, "input"},
};

static void
test_refusals (void)
{
  fixture ();
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-reload-bad-XXXXXX");
  g_autofree char *repo = make_repo (dir);
  install (repo, 1);
  /* Pinned: the watcher never loads the versions made below (a bundle is complete before it is
   * damaged); the admin calls name them. */
  g_autofree char *live = pipeline ("live", repo, "1", "poll_interval_s = 1");
  const char *pipelines[] = {live, NULL};
  g_autofree char *token = token_file (dir);
  g_autofree char *opt = g_strdup_printf ("--admin-token-file=%s", token);
  Server s;
  if (!server_start (&s, pipelines, opt))
    return;
  /* The token: missing or wrong, 401 and nothing changes. */
  Resp r;
  admin (s.port, "/v1/admin/models/ctr:reload", NULL, &r);
  CU_ASSERT_EQUAL (r.status, 401);
  resp_clear (&r);
  admin (s.port, "/v1/admin/models/ctr:reload", "0123456789abcdef-test-tokeN", &r);
  CU_ASSERT_EQUAL (r.status, 401);
  resp_clear (&r);
  admin_expect (s.port, "/v1/admin/models/nope:reload", 404, "nope");
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=x3", 400, "x3");
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=9", 404, "9");
  for (guint k = 0; k < G_N_ELEMENTS (bad); k++) {
    gint64 v = 10 + k;
    bad[k].make (repo, v);
    g_autofree char *path = g_strdup_printf ("/v1/admin/models/ctr:reload?version=%" G_GINT64_FORMAT, v);
    admin_expect (s.port, path, bad[k].status, bad[k].needle);
    CU_ASSERT_EQUAL (live_version (s.port), 1);
    Answer a = {0};
    CU_ASSERT_TRUE (ask (s.port, "live", 0, &a));
    CU_ASSERT_STRING_EQUAL (a.version ? a.version : "", "ctr:1");
    g_free (a.version);
    g_autofree char *d = g_strdup_printf ("%s/ctr/%" G_GINT64_FORMAT, repo, v);
    sedp_test_remove_tree (d);
  }
  /* A downgrade needs a rollback. */
  install (repo, 2);
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=2", 200, "\"loaded\"");
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=1", 422, "rollback");
  CU_ASSERT_EQUAL (live_version (s.port), 2);
  Resp m;
  get (s.port, "/metrics", &m);
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_model_reloads_total{pipeline=\"live\",model=\"ctr\",result=\"failed\"} "),
                   G_N_ELEMENTS (bad) + 2);
  resp_clear (&m);
  get (s.port, "/v1/models/ctr", &m);
  CU_ASSERT_EQUAL (m.status, 200);
  CU_ASSERT_PTR_NOT_NULL (m.body && strstr (m.body, "\"previous\""));
  resp_clear (&m);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
  sedp_test_remove_tree (dir);
}

/* ---- signatures ---- */

static void
test_signed (void)
{
  fixture ();
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-reload-key-XXXXXX");
  g_autofree char *repo = make_repo (dir);
  g_autofree char *ctr = g_build_filename (repo, "ctr", NULL);
  g_autofree char *key = g_build_filename (dir, "k", NULL);
  g_autofree char *other = g_build_filename (dir, "other", NULL);
  sedp_ok ("model", "keygen", "--out", key, NULL);
  sedp_ok ("model", "keygen", "--out", other, NULL);
  g_autofree char *secret = g_strdup_printf ("%s.secret", key);
  g_autofree char *other_secret = g_strdup_printf ("%s.secret", other);
  install (repo, 1);
  g_autofree char *one = g_build_filename (ctr, "1", NULL);
  sedp_ok ("model", "sign", one, "--secret-key", secret, NULL);
  g_autofree char *extra = g_strdup_printf ("public_key = %s.public\npoll_interval_s = 3600", key);
  /* Pinned, as in test_refusals: the watcher must not take version 2 before the calls name it. */
  g_autofree char *live = pipeline ("live", repo, "1", extra);
  const char *pipelines[] = {live, NULL};
  g_autofree char *token = token_file (dir);
  g_autofree char *opt = g_strdup_printf ("--admin-token-file=%s", token);
  Server s;
  if (!server_start (&s, pipelines, opt))
    return;
  install (repo, 2); /* unsigned */
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=2", 422, "manifest.sig");
  g_autofree char *two = g_build_filename (ctr, "2", NULL);
  sedp_ok ("model", "sign", two, "--secret-key", other_secret, NULL); /* the wrong key */
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=2", 422, "signature");
  sedp_ok ("model", "sign", two, "--secret-key", secret, NULL);
  admin_expect (s.port, "/v1/admin/models/ctr:reload?version=2", 200, "\"loaded\"");
  Resp m;
  get (s.port, "/v1/models/ctr", &m);
  CU_ASSERT_PTR_NOT_NULL (m.body && strstr (m.body, "\"verified\""));
  resp_clear (&m);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
  sedp_test_remove_tree (dir);
}

/* ---- the probation guard ---- */

static void
test_probation_rollback (void)
{
  fixture ();
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-reload-guard-XXXXXX");
  g_autofree char *repo = make_repo (dir);
  install (repo, 1);
  /* A guard no version can pass: p99 at most a thousandth of the previous version's. */
  g_autofree char *live = pipeline ("live", repo, "latest",
                                    "poll_interval_s = 1\nprobation_s = 60\nmax_p99_over_previous = 0.001");
  const char *pipelines[] = {live, NULL};
  Server s;
  if (!server_start (&s, pipelines, NULL))
    return;
  for (guint q = 0; q < 30; q++) { /* the previous version's p99 */
    Answer a = {0};
    CU_ASSERT_TRUE (ask (s.port, "live", q % N_REQUESTS, &a));
    g_free (a.version);
  }
  install (repo, 2);
  CU_ASSERT_TRUE (wait_version (s.port, 2));
  for (guint q = 0; q < 40 && live_version (s.port) == 2; q++) {
    Answer a = {0};
    ask (s.port, "live", q % N_REQUESTS, &a);
    g_free (a.version);
  }
  CU_ASSERT_TRUE (wait_version (s.port, 1));
  Resp m;
  get (s.port, "/metrics", &m);
  CU_ASSERT_EQUAL (metric_value (m.body, "sedp_model_rollbacks_total{pipeline=\"live\",model=\"ctr\",reason=\"guard\"} "), 1);
  resp_clear (&m);
  /* Rejected: the watcher does not load version 2 again. */
  g_usleep (1500000);
  CU_ASSERT_EQUAL (live_version (s.port), 1);
  get (s.port, "/v1/models/ctr", &m);
  CU_ASSERT_PTR_NOT_NULL (m.body && strstr (m.body, "\"rejected\" : [\n        2"));
  resp_clear (&m);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
  sedp_test_remove_tree (dir);
}

/* ---- the admin API switched off, and a token file others can read ---- */

static void
test_admin_off (void)
{
  fixture ();
  g_autofree char *dir = sedp_test_make_tmp_dir ("sedp-reload-off-XXXXXX");
  g_autofree char *models = g_build_filename (root, "models", NULL);
  g_autofree char *live = pipeline ("live", models, "1", NULL);
  const char *pipelines[] = {live, NULL};
  Server s;
  if (!server_start (&s, pipelines, NULL))
    return;
  Resp r;
  admin (s.port, "/v1/admin/models/ctr:reload", TOKEN, &r);
  CU_ASSERT_EQUAL (r.status, 404);
  resp_clear (&r);
  CU_ASSERT_EQUAL (server_stop (&s), 0);
  g_autofree char *token = token_file (dir);
  g_chmod (token, 0644);
  g_autofree char *p = g_build_filename (dir, "p.pipeline", NULL);
  sedp_test_write_file (p, live, -1);
  g_auto (SedpTestRun) run = {0};
  sedp_test_spawn (&run, NULL, "serve", p, "--listen", "127.0.0.1:0", "--admin-token-file", token,
                   NULL);
  SEDP_ASSERT_EXIT (run, 1);
  SEDP_ASSERT_CONTAINS (run.err, "chmod 600");
  sedp_test_remove_tree (dir);
}

static int
suite_clean (void)
{
  if (root)
    sedp_test_remove_tree (root);
  g_clear_pointer (&root, g_free);
  return 0;
}

int
main (void)
{
  CU_initialize_registry ();
  CU_pSuite s = CU_add_suite ("reload", NULL, suite_clean);
  CU_add_test (s, "test_swaps_under_load", test_swaps_under_load);
  CU_add_test (s, "test_refusals", test_refusals);
  CU_add_test (s, "test_signed", test_signed);
  CU_add_test (s, "test_probation_rollback", test_probation_rollback);
  CU_add_test (s, "test_admin_off", test_admin_off);
  return sedp_test_run ();
}
