/* bench/run reload — hot model reload of the CTR example under open-loop load
 * (docs/model-lifecycle.md, "Benchmark: bench/run reload").
 *
 * 1. prepares the CTR example with a model repository (examples/ctr/prepare --repository: 64
 *    requests of --items candidates, versions 1 and 2 of model 'ctr', their scores
 *    expected-v1.tsv and expected-v2.tsv) once, under build-bench/reload-data/. Version 2 is a
 *    retrained dense model (dense seed 2) over version 1's embeddings, packed with version 1's
 *    cube, which the server shares (scenario shared_cube); with --new-embeddings, the model of
 *    seed 2 with its own cube (new_embeddings, under build-bench/reload-data-new-embeddings/).
 *    The cubes' meta files are compared: the same bytes, or other ones, as the scenario says;
 * 2. makes a fresh working repository build-bench/reload-repo/ (versions 1 and 2 as hard links),
 *    a copy of pipelines/ctr-live.pipeline pointing at it and at the data (poll_interval_s = 1),
 *    an admin token file (mode 0600), and starts `sedp serve COPY --listen 127.0.0.1:0
 *    --admin-token-file TOKEN`; version 2 serves;
 * 3. finds the capacity with the load library's search (core/load/capacity.h: the highest
 *    open-loop rate whose p99 stays within --capacity-slo-ms, probes of --capacity-seconds),
 *    unless --rate is given, and offers --load × capacity;
 * 4. one continuous open-loop run (core/load, protobuf) at that rate: --steady / 2 seconds
 *    without reloads, the reload phase in slots of --interval seconds — --round-reloads slots
 *    with a new version each, then as many without, and again, for --duration seconds of slots
 *    with a reload — and --steady / 2 seconds without reloads again. A new version N ≥ 3 is
 *    made as a trainer would: tmp.N is a hard-linked copy of version 1 (N odd) or 2 (N even)
 *    whose manifest.json is a new file with only its "version" member set to N, renamed to N;
 *    then `POST
 *    /v1/admin/models/ctr:reload?version=N` (409, a reload or a retiring version in progress, is
 *    retried every 50 ms) and its answer's load_ms, warmup_ms and swap_us are kept. Every answer
 *    is read: it must be HTTP 200 with status OK, name a version we made (model_version
 *    "ctr:N"), and each item's score must equal, within 1e-5 relative, the score `sedp model
 *    eval` gave for that item with the unsplit model of the weights of version N;
 * 5. --fast-reloads reloads without load, one every --fast-interval seconds (or as soon as the
 *    server takes it), the server's RSS read 1 s after the first and after the last;
 * 6. reads the server's /metrics (sedp_model_swap_seconds_max, sedp_model_reloads_total).
 * The server's VmRSS is sampled from /proc every 50 ms throughout.
 *
 * Windows around a swap: from --window-before seconds before the reload was asked for to
 * --window-after seconds after its answer (the swap happens just before the answer), so that a
 * window holds the new version's load and warm-up, run beside the serving one, as well as the
 * swap. Baseline: the requests due in the reload phase outside every window (the slots without
 * reloads, interleaved with the windows); with --round-reloads 0, those of the steady phases.
 *
 * RESULT keys (targets in docs/model-lifecycle.md): reload_errors (requests due and not answered
 * 200 with status OK), reload_version_mismatches (OK answers whose scores are not those of the
 * version they name, or that name no version made), reload_p99_over_steady (p99 of the requests
 * due in the windows over the baseline's p99), swap_us_max (the server's sedp_model_swap_seconds_max, in µs),
 * reload_peak_rss_over_bound (peak VmRSS in the windows and the fast reloads over the baseline's
 * peak VmRSS + the largest dense.onnx + 5 % of that peak; with --round-reloads 0, the whole
 * reload phase's peak over the steady phases', each from --rss-settle seconds after its start;
 * _median: the same over the first steady phase's median, _with_cube: one cube more in the
 * bound),
 * rss_growth_50_reloads ((VmRSS after the last fast reload − after the first) / after the first),
 * with the supporting lines before them.
 *
 * Options: --duration S (120), --interval S (5), --load F (0.7), --rate R (requests/s; skips the
 * capacity search), --steady S (30), --round-reloads N (2), --fast-reloads N (50),
 * --fast-interval S (0.5), --items N (300), --capacity-seconds S (5), --capacity-slo-ms MS (100),
 * --window-before S (0.5), --window-after S (1.5), --rss-settle S (5), --rss-trace FILE,
 * --new-embeddings. SEDP_BENCH_QUICK=1 shortens every phase (a smoke run). */
#define _GNU_SOURCE
#include "bench-http.h"
#include "load/capacity.h"
#include "load/http-answer.h"
#include "sedp.pb-c.h"

#include <arpa/inet.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MODEL "ctr"
#define MAX_VERSIONS 100000
/* Within this, a score equals the expected one (as bench/soak and examples/ctr/check.py). */
#define REL_TOL 1e-5
#define ABS_TOL 1e-6

typedef struct {
  double duration, interval, load, rate, steady, fast_interval, cap_seconds, cap_slo_ms;
  double before, after, rss_settle;
  gint fast_reloads, items;
  gint round_reloads;      /* reloads per round, then as long without (0: no rounds) */
  gboolean new_embeddings; /* version 2 of other embeddings, its own cube */
  char *rss_trace;         /* a file for the VmRSS samples and the reloads' times, or NULL */
} Options;

/* Seconds of the reload phase: --duration of reload slots, and as long again of rounds without
 * reloads when they alternate (--round-reloads). */
static double
phase_seconds (const Options *o)
{
  return o->round_reloads > 0 ? 2 * o->duration : o->duration;
}

/* ---- the expected scores: per request, each item's score under weights 1 and 2 ---- */

typedef struct {
  guint64 id;
  float score[2];
} ExpItem;

typedef struct {
  GArray *items;        /* ExpItem, in the request's order */
  GHashTable *position; /* item id (guint64 *) → index + 1 */
} ExpRequest;

static void
exp_request_free (gpointer data)
{
  ExpRequest *e = data;
  g_array_unref (e->items);
  g_hash_table_unref (e->position);
  g_free (e);
}

/* Reads expected-v@v.tsv (request id, item id, score per line) into @by_id: version 1 makes the
 * entries, version 2 must list the same items in the same order. */
static gboolean
read_expected (GHashTable *by_id, const char *path, guint v)
{
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  if (!g_file_get_contents (path, &text, NULL, &error)) {
    fprintf (stderr, "reload: %s\n", error->message);
    return FALSE;
  }
  g_autoptr (GHashTable) next = g_hash_table_new (NULL, NULL); /* request → its items read */
  guint line_no = 0;
  for (char *line = text, *end; line && *line; line = end) {
    end = strchr (line, '\n');
    if (end)
      *end++ = '\0';
    line_no++;
    g_auto (GStrv) f = g_strsplit (line, "\t", 3);
    if (g_strv_length (f) != 3) {
      fprintf (stderr, "reload: %s:%u: not REQUEST\\tITEM\\tSCORE\n", path, line_no);
      return FALSE;
    }
    ExpRequest *e = g_hash_table_lookup (by_id, f[0]);
    if (e == NULL && v == 1) {
      e = g_new0 (ExpRequest, 1);
      e->items = g_array_new (FALSE, FALSE, sizeof (ExpItem));
      e->position = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
      g_hash_table_insert (by_id, g_strdup (f[0]), e);
    }
    guint64 id = g_ascii_strtoull (f[1], NULL, 10);
    float score = (float) g_ascii_strtod (f[2], NULL);
    if (v == 1) {
      ExpItem it = {id, {score, NAN}};
      g_array_append_val (e->items, it);
      g_hash_table_insert (e->position, g_memdup2 (&id, sizeof id), GUINT_TO_POINTER (e->items->len));
      continue;
    }
    guint at = e ? GPOINTER_TO_UINT (g_hash_table_lookup (next, e)) : 0;
    if (e == NULL || at >= e->items->len || g_array_index (e->items, ExpItem, at).id != id) {
      fprintf (stderr, "reload: %s:%u: request %s item %" G_GUINT64_FORMAT " is not the item of "
               "expected-v1.tsv at that place: the two files are not of the same requests\n",
               path, line_no, f[0], id);
      return FALSE;
    }
    g_array_index (e->items, ExpItem, at).score[1] = score;
    g_hash_table_insert (next, e, GUINT_TO_POINTER (at + 1));
  }
  return TRUE;
}

static gboolean
same_score (float want, float got)
{
  return fabsf (got - want) <= ABS_TOL + REL_TOL * fabsf (want);
}

/* The expected scores of both versions; the share of items whose two scores differ beyond the
 * tolerance (how well a score tells the versions apart) in *@apart. */
static GHashTable *
load_expected (const char *data, double *apart)
{
  GHashTable *by_id = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, exp_request_free);
  g_autofree char *e1 = g_build_filename (data, "expected-v1.tsv", NULL);
  g_autofree char *e2 = g_build_filename (data, "expected-v2.tsv", NULL);
  if (!read_expected (by_id, e1, 1) || !read_expected (by_id, e2, 2)) {
    g_hash_table_unref (by_id);
    return NULL;
  }
  guint n = 0, differ = 0;
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init (&it, by_id);
  while (g_hash_table_iter_next (&it, NULL, &value)) {
    const ExpRequest *e = value;
    for (guint i = 0; i < e->items->len; i++) {
      const ExpItem *x = &g_array_index (e->items, ExpItem, i);
      n++;
      differ += !same_score (x->score[0], x->score[1]);
    }
  }
  *apart = n ? (double) differ / n : 0;
  return by_id;
}

/* ---- the versions made: version N serves the weights of version base_of[N] (1 or 2) ---- */

static gint base_of[MAX_VERSIONS + 1];

static void
version_made (gint64 version, guint base)
{
  g_atomic_int_set (&base_of[version], (gint) base);
}

/* The weights of @version (1 or 2), 0 for a version not made. */
static guint
version_base (gint64 version)
{
  return version >= 1 && version <= MAX_VERSIONS ? (guint) g_atomic_int_get (&base_of[version]) : 0;
}

/* "ctr:N" → N; 0 when it is not that. */
static gint64
parse_model_version (const char *s)
{
  if (s == NULL || !g_str_has_prefix (s, MODEL ":"))
    return 0;
  guint64 v = 0;
  if (!g_ascii_string_to_unsigned (s + strlen (MODEL ":"), 10, 1, MAX_VERSIONS, &v, NULL))
    return 0;
  return (gint64) v;
}

/* ---- every answer of the load run ---- */

typedef struct {
  double t;  /* when it was due, s from the run's start */
  double ms; /* latency from then */
  gint64 version;
  guint16 status; /* HTTP; 0: no answer */
  gboolean ok, mismatch;
} Record;

typedef struct {
  GHashTable *expected;
  gint64 t0; /* monotonic µs at the start of the run */
  GArray *records;
  guint64 n_ok, n_not_200, n_not_ok, n_mismatch, n_unknown_version, n_items_checked;
  guint64 by_weights[3]; /* OK answers by the weights of their version: [1], [2] */
} Answers;

/* Whether the items of @m are those of @e, each scored as version @base's weights score it. */
static gboolean
scores_match (const ExpRequest *e, const Sedp__Serving__PredictResponse *m, guint base,
              guint64 *checked)
{
  if (m->n_items != e->items->len)
    return FALSE;
  for (gsize i = 0; i < m->n_items; i++) {
    const Sedp__Serving__ItemResult *r = m->items[i];
    guint at = GPOINTER_TO_UINT (g_hash_table_lookup (e->position, &r->id));
    if (at == 0 || r->n_scores < 1)
      return FALSE;
    (*checked)++;
    if (!same_score (g_array_index (e->items, ExpItem, at - 1).score[base - 1], r->scores[0]))
      return FALSE;
  }
  return TRUE;
}

static void
check_answer (Answers *a, Record *rec, const guint8 *p, gsize n)
{
  Sedp__Serving__PredictResponse *m = sedp__serving__predict_response__unpack (NULL, n, p);
  if (m == NULL || m->status != SEDP__SERVING__PREDICT_RESPONSE__STATUS__OK) {
    a->n_not_ok++;
    if (m)
      sedp__serving__predict_response__free_unpacked (m, NULL);
    return;
  }
  rec->ok = TRUE;
  a->n_ok++;
  rec->version = parse_model_version (m->model_version);
  guint base = version_base (rec->version);
  const ExpRequest *e = g_hash_table_lookup (a->expected, m->request_id);
  if (base == 0) {
    a->n_unknown_version++;
    rec->mismatch = TRUE;
  } else {
    a->by_weights[base]++;
    rec->mismatch = e == NULL || !scores_match (e, m, base, &a->n_items_checked);
  }
  if (rec->mismatch && a->n_mismatch++ < 5)
    fprintf (stderr, "reload: answer to %s names '%s': its scores are not that version's\n",
             m->request_id, m->model_version ? m->model_version : "(none)");
  sedp__serving__predict_response__free_unpacked (m, NULL);
}

static void
on_response (guint index, guint status, GBytes *body, gint64 latency_us, gpointer data)
{
  Answers *a = data;
  Record rec = {
    .t = (double) (g_get_monotonic_time () - latency_us - a->t0) / G_USEC_PER_SEC,
    .ms = latency_us / 1000.0,
    .status = (guint16) status,
  };
  if (status == 200 && body) {
    gsize n;
    const guint8 *p = g_bytes_get_data (body, &n);
    check_answer (a, &rec, p, n);
  } else {
    a->n_not_200++;
  }
  g_array_append_val (a->records, rec);
}

/* ---- the admin API and /metrics (bench-http.h) ---- */

static struct sockaddr_in server_addr;

static guint
http_call (const char *method, const char *path, const char *token, char **body)
{
  return bench_http_call (&server_addr, method, path, token, body);
}

/* ---- the server and its memory ---- */

/* Starts `sedp serve @pipeline` on a free loopback port with the admin API; waits until it is
 * ready (warmed up); the admin calls go to its address. */
static gboolean
server_start (BenchServer *s, const char *sedp, const char *pipeline, const char *name,
              const char *token_file)
{
  const char *extra[] = {"--admin-token-file", token_file, NULL};
  return bench_server_start (s, sedp, pipeline, name, extra) && bench_http_addr (s->url, &server_addr);
}

/* VmRSS of @pid in kB; -1 when it is gone. */
static long
vm_rss_kb (GPid pid)
{
  g_autofree char *path = g_strdup_printf ("/proc/%d/status", (int) pid);
  g_autofree char *text = NULL;
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return -1;
  const char *p = strstr (text, "VmRSS:");
  return p ? strtol (p + 6, NULL, 10) : -1;
}

typedef struct {
  gint64 t; /* monotonic µs */
  long kb;
} RssSample;

typedef struct {
  GPid pid;
  GMutex lock;
  GArray *samples; /* RssSample */
  gint stop;
} RssSampler;

static gpointer
rss_thread (gpointer data)
{
  RssSampler *r = data;
  while (!g_atomic_int_get (&r->stop)) {
    RssSample s = {g_get_monotonic_time (), vm_rss_kb (r->pid)};
    if (s.kb > 0) {
      g_mutex_lock (&r->lock);
      g_array_append_val (r->samples, s);
      g_mutex_unlock (&r->lock);
    }
    g_usleep (50000);
  }
  return NULL;
}

/* The median (@q 0.5) or another quantile of the samples in [@from, @to) µs, or their maximum
 * (@q 1); -1 when none. */
static long
rss_between (RssSampler *r, gint64 from, gint64 to, double q)
{
  g_autoptr (GArray) v = g_array_new (FALSE, FALSE, sizeof (double));
  g_mutex_lock (&r->lock);
  for (guint i = 0; i < r->samples->len; i++) {
    const RssSample *s = &g_array_index (r->samples, RssSample, i);
    if (s->t >= from && s->t < to) {
      double kb = (double) s->kb;
      g_array_append_val (v, kb);
    }
  }
  g_mutex_unlock (&r->lock);
  return v->len ? (long) bench_quantile ((double *) v->data, v->len, q) : -1;
}

/* ---- the repository ---- */


/* A copy of the folder @src at @dst whose files are hard links to @src's, but for @skip (a
 * name at the top, or NULL). */
static gboolean
link_tree (const char *src, const char *dst, const char *skip)
{
  if (g_mkdir (dst, 0755) != 0) {
    fprintf (stderr, "reload: mkdir %s: %s\n", dst, g_strerror (errno));
    return FALSE;
  }
  GDir *d = g_dir_open (src, 0, NULL);
  gboolean ok = d != NULL;
  for (const char *name; ok && (name = g_dir_read_name (d));) {
    if (skip && strcmp (name, skip) == 0)
      continue;
    g_autofree char *from = g_build_filename (src, name, NULL);
    g_autofree char *to = g_build_filename (dst, name, NULL);
    if (g_file_test (from, G_FILE_TEST_IS_DIR))
      ok = link_tree (from, to, NULL);
    else if (link (from, to) != 0) {
      fprintf (stderr, "reload: link %s %s: %s\n", from, to, g_strerror (errno));
      ok = FALSE;
    }
  }
  if (d)
    g_dir_close (d);
  return ok;
}

/* The manifest text @text with its top-level "version" member set to @version, every other byte
 * kept (`sedp model pack` writes one member per line, two spaces of indent); checked by parsing
 * the result. NULL with the reason on stderr. */
static char *
manifest_with_version (const char *text, gint64 version)
{
  static const char key[] = "\n  \"version\": ";
  const char *at = strstr (text, key);
  if (at == NULL || strstr (at + 1, key) != NULL) {
    fprintf (stderr, "reload: the manifest has not one top-level line '  \"version\": N'\n");
    return NULL;
  }
  const char *num = at + strlen (key), *rest = num + strspn (num, "0123456789");
  char *out = g_strdup_printf ("%.*s%" G_GINT64_FORMAT "%s", (int) (num - text), text, version,
                               rest);
  g_autoptr (JsonParser) p = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonNode *root = json_parser_load_from_data (p, out, -1, &error) ? json_parser_get_root (p) : NULL;
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  if (o == NULL || !json_object_has_member (o, "version") ||
      json_object_get_int_member (o, "version") != version ||
      g_strcmp0 (json_object_get_string_member_with_default (o, "name", NULL), MODEL) != 0) {
    fprintf (stderr, "reload: the rewritten manifest does not read back as '%s' version %"
             G_GINT64_FORMAT "%s%s\n", MODEL, version, error ? ": " : "",
             error ? error->message : "");
    g_free (out);
    return NULL;
  }
  return out;
}

/* Version @version of the model in @repo, with the weights of version @base (1 or 2): tmp.N, a
 * hard-linked copy of @base but for its manifest (a new file: the linked one is @base's own),
 * renamed to N. */
static gboolean
make_version (const char *repo, gint64 version, guint base)
{
  g_autofree char *model = g_build_filename (repo, MODEL, NULL);
  g_autofree char *src = g_strdup_printf ("%s/%u", model, base);
  g_autofree char *tmp = g_strdup_printf ("%s/tmp.%" G_GINT64_FORMAT, model, version);
  g_autofree char *dst = g_strdup_printf ("%s/%" G_GINT64_FORMAT, model, version);
  g_autofree char *src_manifest = g_build_filename (src, "manifest.json", NULL);
  g_autofree char *tmp_manifest = g_build_filename (tmp, "manifest.json", NULL);
  g_autofree char *text = NULL;
  bench_remove_tree (tmp);
  if (!g_file_get_contents (src_manifest, &text, NULL, NULL) ||
      !link_tree (src, tmp, "manifest.json"))
    return FALSE;
  g_autofree char *manifest = manifest_with_version (text, version);
  if (manifest == NULL || !g_file_set_contents (tmp_manifest, manifest, -1, NULL))
    return FALSE;
  version_made (version, base); /* before any answer can name it */
  if (g_rename (tmp, dst) != 0) {
    fprintf (stderr, "reload: rename %s %s: %s\n", tmp, dst, g_strerror (errno));
    return FALSE;
  }
  return TRUE;
}

/* A fresh working repository @repo: versions 1 and 2 of @data/models, hard-linked. */
static gboolean
fresh_repository (const char *data, const char *repo)
{
  bench_remove_tree (repo);
  g_autofree char *model = g_build_filename (repo, MODEL, NULL);
  if (g_mkdir_with_parents (model, 0755) != 0)
    return FALSE;
  for (guint v = 1; v <= 2; v++) {
    g_autofree char *src = g_strdup_printf ("%s/models/%s/%u", data, MODEL, v);
    g_autofree char *dst = g_strdup_printf ("%s/%u", model, v);
    if (!link_tree (src, dst, NULL))
      return FALSE;
    version_made (v, v);
  }
  return TRUE;
}

/* The bytes of the files under @path (a file or a folder). */
static gint64
tree_bytes (const char *path)
{
  struct stat st;
  if (stat (path, &st) != 0)
    return 0;
  if (!S_ISDIR (st.st_mode))
    return (gint64) st.st_size;
  gint64 sum = 0;
  GDir *d = g_dir_open (path, 0, NULL);
  for (const char *name; d && (name = g_dir_read_name (d));) {
    g_autofree char *sub = g_build_filename (path, name, NULL);
    sum += tree_bytes (sub);
  }
  if (d)
    g_dir_close (d);
  return sum;
}

/* The larger of the two versions' @part (dense.onnx, cube), bytes. */
static gint64
part_bytes (const char *data, const char *part)
{
  gint64 most = 0;
  for (guint v = 1; v <= 2; v++) {
    g_autofree char *path = g_strdup_printf ("%s/models/%s/%u/%s", data, MODEL, v, part);
    most = MAX (most, tree_bytes (path));
  }
  return most;
}

/* ---- reloads ---- */

typedef struct {
  gint64 version;
  guint base, status, tries;
  gint64 t_call, t_answer; /* monotonic µs: asked for, answered */
  char result[16];         /* "loaded", "unchanged", or "failed" */
  double load_ms, warmup_ms;
  gint64 swap_us;
} Reload;

typedef struct {
  const Options *o;
  char *sedp, *src, *data, *repo, *tmp, *token, *pipeline_name;
  GHashTable *expected;
  BenchServer server;
  RssSampler rss;
  gint64 next_version;
  GArray *reloads; /* Reload */
} Bench;

/* Makes the next version and has the server load it (POST …:reload?version=N, retried while it
 * answers 409). */
static gboolean
reload_next (Bench *b, Reload *r)
{
  memset (r, 0, sizeof *r);
  r->version = b->next_version++;
  r->base = r->version % 2 ? 1 : 2;
  if (!make_version (b->repo, r->version, r->base))
    return FALSE;
  g_autofree char *path = g_strdup_printf ("/v1/admin/models/%s:reload?version=%" G_GINT64_FORMAT,
                                           MODEL, r->version);
  g_autofree char *body = NULL;
  r->t_call = g_get_monotonic_time ();
  for (r->tries = 1;; r->tries++) {
    g_clear_pointer (&body, g_free);
    r->status = http_call ("POST", path, b->token, &body);
    if (r->status != 409 || r->tries >= 600)
      break;
    g_usleep (50000);
  }
  r->t_answer = g_get_monotonic_time ();
  g_strlcpy (r->result, "failed", sizeof r->result);
  g_autoptr (JsonParser) p = json_parser_new ();
  JsonNode *root = r->status == 200 && body && json_parser_load_from_data (p, body, -1, NULL)
                     ? json_parser_get_root (p) : NULL;
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  if (o) {
    g_strlcpy (r->result, json_object_get_string_member_with_default (o, "result", "?"),
               sizeof r->result);
    r->load_ms = json_object_get_double_member_with_default (o, "load_ms", 0);
    r->warmup_ms = json_object_get_double_member_with_default (o, "warmup_ms", 0);
    r->swap_us = json_object_get_int_member_with_default (o, "swap_us", 0);
  }
  fprintf (stderr, "reload: version %" G_GINT64_FORMAT " (weights of %u): HTTP %u %s after %.0f ms "
           "(%u tries): load %.0f ms, warm-up %.0f ms, swap %" G_GINT64_FORMAT " µs%s%s\n",
           r->version, r->base, r->status, r->result, (r->t_answer - r->t_call) / 1e3, r->tries,
           r->load_ms, r->warmup_ms, r->swap_us, o ? "" : ": ", o ? "" : (body ? body : "no answer"));
  g_array_append_val (b->reloads, *r);
  return TRUE;
}

/* Sleeps until the monotonic time @t (µs). */
static void
sleep_until (gint64 t)
{
  gint64 now = g_get_monotonic_time ();
  if (t > now)
    g_usleep ((gulong) (t - now));
}

/* ---- the load run ---- */

/* CPU seconds so far: the machine's, the server's and this program's (the load generator). */
typedef struct {
  gint64 t;
  double busy, server, self;
} CpuMark;

static CpuMark
cpu_mark (GPid server)
{
  return (CpuMark) {g_get_monotonic_time (), bench_machine_busy (),
                    bench_process_cpu ((int) server), bench_process_cpu (0)};
}

/* From @a to @b: the server's cores in *@server and the cores of everything else but this
 * program (a neighbour's job on a shared machine) in *@other. */
static void
cpu_between (const CpuMark *a, const CpuMark *b, double *server, double *other)
{
  double dt = (double) (b->t - a->t) / G_USEC_PER_SEC;
  *server = dt > 0 ? (b->server - a->server) / dt : 0;
  *other = dt > 0 ? MAX (0.0, ((b->busy - a->busy) - (b->server - a->server) -
                               (b->self - a->self)) / dt) : 0;
}

typedef struct {
  Bench *b;
  SedpWorkload *workload;
  double rate, seconds;
  Answers *answers;
  SedpLoadgenResults *results;
  gint started; /* set once t0 is known */
} LoadRun;

static gpointer
load_thread (gpointer data)
{
  LoadRun *l = data;
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_http (l->b->server.url, l->workload, &error);
  SedpLoadgenConfig c;
  sedp_loadgen_config_init (&c);
  c.mode = SEDP_LOADGEN_OPEN;
  c.rate = l->rate;
  c.duration_s = l->seconds;
  c.http_timeout_s = 10;
  c.on_response = on_response;
  c.response_data = l->answers;
  l->answers->t0 = g_get_monotonic_time ();
  g_atomic_int_set (&l->started, 1);
  l->results = gen ? sedp_loadgen_run (gen, &c, &error) : NULL;
  if (l->results == NULL)
    fprintf (stderr, "reload: load: %s\n", error->message);
  return NULL;
}

/* The capacity of the served pipeline: the load library's search. 0 when none was found. */
static double
find_capacity (Bench *b, SedpWorkload *w)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpLoadgen) gen = sedp_loadgen_new_http (b->server.url, w, &error);
  SedpLoadgenConfig cfg;
  sedp_loadgen_config_init (&cfg);
  cfg.duration_s = b->o->cap_seconds;
  cfg.concurrency = 8;
  cfg.http_timeout_s = 10;
  SedpLoadgenSearch search;
  sedp_loadgen_search_init (&search);
  search.slo_p99_ms = b->o->cap_slo_ms;
  SedpLoadgenCapacity cap = {0};
  double c = 0;
  if (gen && sedp_loadgen_find_capacity (gen, &cfg, &search, &cap, &error))
    c = cap.capacity_rps;
  else
    fprintf (stderr, "reload: capacity: %s\n", error ? error->message : "no target");
  fprintf (stderr, "reload: capacity %.1f requests/s (p99 within %g ms, %u probes of %g s)\n", c,
           b->o->cap_slo_ms, cap.probes, b->o->cap_seconds);
  sedp_loadgen_capacity_clear (&cap);
  return c;
}

/* ---- the measures ---- */

/* Whether @t (s from the run's start) is in a window of one of the reloads, [asked − before,
 * answered + after]. */
static gboolean
in_window (const Bench *b, gint64 t0, double t)
{
  for (guint i = 0; i < b->reloads->len; i++) {
    const Reload *r = &g_array_index (b->reloads, Reload, i);
    double from = (double) (r->t_call - t0) / G_USEC_PER_SEC - b->o->before;
    double to = (double) (r->t_answer - t0) / G_USEC_PER_SEC + b->o->after;
    if (t >= from && t <= to)
      return TRUE;
  }
  return FALSE;
}

/* Whether @t is in [answered − before, answered + after] of a reload: around the swap alone,
 * without most of the load and warm-up before it. */
static gboolean
around_swap (const Bench *b, gint64 t0, double t)
{
  for (guint i = 0; i < b->reloads->len; i++) {
    const Reload *r = &g_array_index (b->reloads, Reload, i);
    double from = (double) (r->t_answer - t0) / G_USEC_PER_SEC - b->o->before;
    double to = (double) (r->t_answer - t0) / G_USEC_PER_SEC + b->o->after;
    if (t >= from && t <= to)
      return TRUE;
  }
  return FALSE;
}

typedef struct {
  GArray *window, *steady, *steady_before, *steady_after, *quiet, *swap; /* BenchTimed, by t */
} Split;

/* The OK answers' latencies, in the windows, in the steady phases (before the reload phase,
 * after it), and between windows within the reload phase (quiet). */
static Split
split_latencies (const Bench *b, const Answers *a, double reload_from, double reload_to)
{
  Split s;
  GArray **all[] = {&s.window, &s.steady, &s.steady_before, &s.steady_after, &s.quiet, &s.swap};
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    *all[i] = g_array_new (FALSE, FALSE, sizeof (BenchTimed));
  for (guint i = 0; i < a->records->len; i++) {
    const Record *r = &g_array_index (a->records, Record, i);
    if (!r->ok)
      continue;
    BenchTimed x = {r->t, r->ms};
    if (around_swap (b, a->t0, r->t))
      g_array_append_val (s.swap, x);
    if (in_window (b, a->t0, r->t))
      g_array_append_val (s.window, x);
    else if (r->t < reload_from || r->t >= reload_to) {
      g_array_append_val (s.steady, x);
      g_array_append_val (r->t < reload_from ? s.steady_before : s.steady_after, x);
    } else
      g_array_append_val (s.quiet, x);
  }
  return s;
}

static int
timed_cmp (const void *a, const void *b)
{
  double x = ((const BenchTimed *) a)->t, y = ((const BenchTimed *) b)->t;
  return x < y ? -1 : x > y;
}

/* The p99 (nearest rank) of @v's latencies. */
static double
p99_of (const GArray *v)
{
  g_autofree double *ms = g_new (double, MAX (v->len, 1));
  for (guint i = 0; i < v->len; i++)
    ms[i] = g_array_index (v, BenchTimed, i).ms;
  return bench_quantile_rank (ms, v->len, 0.99);
}

static double
median_of (GArray *v)
{
  return bench_quantile ((double *) v->data, v->len, 0.5);
}

/* The failed requests by kind (the load library's), by HTTP status, and by when they were due:
 * in a window, in the steady phases, or between windows. */
static void
print_failures (const Bench *b, const Answers *a, const SedpLoadgenCounts *k, double reload_from,
                double reload_to)
{
  g_autoptr (GString) kinds = g_string_new (NULL), statuses = g_string_new (NULL);
  for (guint f = 0; f < SEDP_LOADGEN_N_FAILURES; f++)
    g_string_append_printf (kinds, "%s%s:%" G_GUINT64_FORMAT, f ? "," : "",
                            sedp_loadgen_failure_to_string ((SedpLoadgenFailure) f), k->failures[f]);
  g_autoptr (GHashTable) by_status = g_hash_table_new (NULL, NULL);
  guint64 in_windows = 0, in_steady = 0, in_quiet = 0;
  for (guint i = 0; i < a->records->len; i++) {
    const Record *r = &g_array_index (a->records, Record, i);
    if (r->ok)
      continue;
    gpointer key = GUINT_TO_POINTER ((guint) r->status + 1);
    g_hash_table_insert (by_status, key,
                         GUINT_TO_POINTER (GPOINTER_TO_UINT (g_hash_table_lookup (by_status, key)) + 1));
    if (in_window (b, a->t0, r->t))
      in_windows++;
    else if (r->t < reload_from || r->t >= reload_to)
      in_steady++;
    else
      in_quiet++;
  }
  GHashTableIter it;
  gpointer key, n;
  g_hash_table_iter_init (&it, by_status);
  while (g_hash_table_iter_next (&it, &key, &n))
    g_string_append_printf (statuses, "%s%u:%u", statuses->len ? "," : "",
                            GPOINTER_TO_UINT (key) - 1, GPOINTER_TO_UINT (n));
  printf ("RESULT reload_failures_by_kind=%s reload_failed_answers_by_http_status=%s "
          "reload_failed_in_windows=%" G_GUINT64_FORMAT " reload_failed_in_steady=%" G_GUINT64_FORMAT
          " reload_failed_between_windows=%" G_GUINT64_FORMAT "\n", kinds->str,
          statuses->len ? statuses->str : "none", in_windows, in_steady, in_quiet);
}

/* The loaded phase's RESULT lines: errors, versions, p99 around swaps, swap and load times.
 * Returns the failed requests. */
static guint64
print_load_results (Bench *b, const Answers *a, const SedpLoadgenCounts *k, double capacity,
                    double rate, double apart, guint n_loaded_reloads, double reload_from,
                    double reload_to)
{
  guint64 errors = k->arrivals - MIN (k->arrivals, a->n_ok);
  printf ("RESULT reload_capacity_rps=%.1f reload_rate=%.1f reload_load=%g reload_items=%d "
          "reload_duration_s=%g reload_interval_s=%g reload_round_reloads=%d reload_steady_s=%g\n",
          capacity, rate, capacity > 0 ? rate / capacity : 0, b->o->items, b->o->duration,
          b->o->interval, b->o->round_reloads, b->o->steady);
  printf ("RESULT reload_requests_due=%" G_GUINT64_FORMAT " reload_sent=%" G_GUINT64_FORMAT
          " reload_answered_ok=%" G_GUINT64_FORMAT " reload_not_200=%" G_GUINT64_FORMAT
          " reload_200_not_ok=%" G_GUINT64_FORMAT " reload_late_sends=%" G_GUINT64_FORMAT "\n",
          k->arrivals, k->sent, a->n_ok, a->n_not_200, a->n_not_ok, k->late_sends);
  print_failures (b, a, k, reload_from, reload_to);
  printf ("RESULT reload_errors=%" G_GUINT64_FORMAT "\n", errors);
  printf ("RESULT reload_items_checked=%" G_GUINT64_FORMAT " reload_answers_weights_1=%"
          G_GUINT64_FORMAT " reload_answers_weights_2=%" G_GUINT64_FORMAT
          " reload_unknown_versions=%" G_GUINT64_FORMAT " reload_items_telling_versions_apart=%.4f\n",
          a->n_items_checked, a->by_weights[1], a->by_weights[2], a->n_unknown_version, apart);
  printf ("RESULT reload_version_mismatches=%" G_GUINT64_FORMAT "\n", a->n_mismatch);

  Split s = split_latencies (b, a, reload_from, reload_to);
  GArray *all[] = {s.window, s.steady, s.steady_before, s.steady_after, s.quiet, s.swap};
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    g_array_sort (all[i], timed_cmp);
  /* the baseline: the reload phase's time outside every window (the rounds without reloads,
   * interleaved with the windows), or the steady phases when there are no rounds */
  GArray *base = b->o->round_reloads > 0 ? s.quiet : s.steady;
  double p99_w = p99_of (s.window), p99_s = p99_of (base), p99_phases = p99_of (s.steady);
  double lo = 0, hi = 0;
  bench_stats_quantile_change_ci ((BenchTimed *) base->data, base->len,
                                  (BenchTimed *) s.window->data, s.window->len, 0.99, 1.0, 2000, 1,
                                  &lo, &hi);
  printf ("RESULT reload_p99_window_ms=%.2f reload_p99_steady_ms=%.2f reload_window_n=%u "
          "reload_steady_n=%u reload_p99_steady_before_ms=%.2f reload_p99_steady_after_ms=%.2f "
          "reload_p99_quiet_ms=%.2f reload_quiet_n=%u reload_window_s=-%g..+%g\n",
          p99_w, p99_phases, s.window->len, s.steady->len, p99_of (s.steady_before),
          p99_of (s.steady_after), p99_of (s.quiet), s.quiet->len, b->o->before, b->o->after);
  printf ("RESULT reload_p99_baseline=%s reload_p99_baseline_ms=%.2f "
          "reload_p99_over_steady_phases=%.3f\n", b->o->round_reloads > 0 ? "quiet" : "steady",
          p99_s, p99_phases > 0 ? p99_w / p99_phases : -1);
  double p99_swap = p99_of (s.swap);
  printf ("RESULT reload_p99_around_swap_ms=%.2f reload_around_swap_n=%u "
          "reload_p99_around_swap_over_steady=%.3f\n", p99_swap, s.swap->len,
          p99_s > 0 ? p99_swap / p99_s : -1);
  printf ("RESULT reload_p99_over_steady_ci90=%.3f..%.3f\n", 1 + lo, 1 + hi);
  printf ("RESULT reload_p99_over_steady=%.3f\n", p99_s > 0 ? p99_w / p99_s : -1);
  for (guint i = 0; i < G_N_ELEMENTS (all); i++)
    g_array_unref (all[i]);

  g_autoptr (GArray) load = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) warm = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) took = g_array_new (FALSE, FALSE, sizeof (double));
  guint loaded = 0, retried = 0;
  gint64 swap_max = 0;
  for (guint i = 0; i < n_loaded_reloads; i++) {
    const Reload *r = &g_array_index (b->reloads, Reload, i);
    double ms = (r->t_answer - r->t_call) / 1e3;
    loaded += strcmp (r->result, "loaded") == 0;
    retried += r->tries > 1;
    swap_max = MAX (swap_max, r->swap_us);
    g_array_append_val (load, r->load_ms);
    g_array_append_val (warm, r->warmup_ms);
    g_array_append_val (took, ms);
  }
  double took_median = median_of (took); /* sorts it */
  double took_max = took->len ? g_array_index (took, double, took->len - 1) : 0;
  printf ("RESULT reload_swaps=%u reload_loaded=%u reload_retried_409=%u reload_load_ms_median=%.0f "
          "reload_warmup_ms_median=%.0f reload_call_ms_median=%.0f reload_call_ms_max=%.0f "
          "reload_swap_us_max_answers=%" G_GINT64_FORMAT "\n",
          n_loaded_reloads, loaded, retried, median_of (load), median_of (warm), took_median,
          took_max, swap_max);
  fflush (stdout);
  return errors;
}

/* ---- the benchmark ---- */

static const char *
scenario (const Options *o)
{
  return o->new_embeddings ? "new_embeddings" : "shared_cube";
}

/* Whether versions 1 and 2 of @data carry the cube the scenario says: the same `meta` bytes (the
 * server shares the cube) for shared_cube, other ones for new_embeddings. */
static gboolean
check_scenario (const Bench *b)
{
  g_autofree char *m1 = g_strdup_printf ("%s/models/%s/1/cube/meta", b->data, MODEL);
  g_autofree char *m2 = g_strdup_printf ("%s/models/%s/2/cube/meta", b->data, MODEL);
  g_autofree char *t1 = NULL, *t2 = NULL;
  gsize n1 = 0, n2 = 0;
  if (!g_file_get_contents (m1, &t1, &n1, NULL) || !g_file_get_contents (m2, &t2, &n2, NULL)) {
    fprintf (stderr, "reload: cannot read %s or %s\n", m1, m2);
    return FALSE;
  }
  gboolean same = n1 == n2 && memcmp (t1, t2, n1) == 0;
  printf ("RESULT reload_scenario=%s reload_cube_meta_same=%s\n", scenario (b->o),
          same ? "yes" : "no");
  if (same != !b->o->new_embeddings) {
    fprintf (stderr, "reload: versions 1 and 2 of %s have %s cube: not the %s scenario (remove "
             "the folder to prepare it again)\n", b->data, same ? "the same" : "another",
             scenario (b->o));
    return FALSE;
  }
  return TRUE;
}

/* The data: the example with its repository, prepared once under @b->data. */
static gboolean
prepare (Bench *b)
{
  g_autofree char *stamp = g_strdup_printf ("%s/.prepared-repository-%s-%d", b->data,
                                            scenario (b->o), b->o->items);
  if (g_file_test (stamp, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autofree char *prep = g_build_filename (b->src, "examples", "ctr", "prepare", NULL);
  g_autofree char *out_opt = g_strdup_printf ("--out=%s", b->data);
  g_autofree char *items = g_strdup_printf ("%d", b->o->items);
  char *argv[] = {prep, "--requests", "64", "--items", items, "--repository", out_opt,
                  b->o->new_embeddings ? "--new-embeddings" : NULL, NULL};
  g_autofree char *out = bench_run_capture (argv);
  if (out == NULL)
    return FALSE;
  fputs (out, stderr);
  return g_file_set_contents (stamp, "", 0, NULL);
}

/* pipelines/ctr-live.pipeline with its paths into the working repository and the data, and the
 * watcher's poll every second; written to @b->tmp. Its pipeline's name in @b->pipeline_name. */
static char *
write_pipeline (Bench *b)
{
  g_autofree char *src = g_build_filename (b->src, "pipelines", "ctr-live.pipeline", NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  if (!g_file_get_contents (src, &text, NULL, &error)) {
    fprintf (stderr, "reload: %s\n", error->message);
    return NULL;
  }
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_autoptr (GString) out = g_string_new (NULL);
  for (guint i = 0; lines[i]; i++) {
    const char *l = lines[i];
    if (g_str_has_prefix (l, "poll_interval_s"))
      continue;
    if (b->pipeline_name == NULL && g_str_has_prefix (l, "name = "))
      b->pipeline_name = g_strstrip (g_strdup (l + strlen ("name = ")));
    g_autofree char *fixed = NULL;
    if (g_str_has_prefix (l, "repository = ../examples/ctr/data/models"))
      l = fixed = g_strdup_printf ("repository = %s", b->repo);
    else if (strstr (l, "../examples/ctr/data")) {
      const char *p = strstr (l, "../examples/ctr/data");
      l = fixed = g_strdup_printf ("%.*s%s%s", (int) (p - l), l, b->data,
                                   p + strlen ("../examples/ctr/data"));
    }
    g_string_append_printf (out, "%s\n", l);
    if (strcmp (l, "[model " MODEL "]") == 0)
      g_string_append (out, "poll_interval_s = 1\n");
  }
  if (b->pipeline_name == NULL || !strstr (out->str, b->repo)) {
    fprintf (stderr, "reload: %s: no pipeline name or no repository to point at %s\n", src, b->repo);
    return NULL;
  }
  char *path = g_build_filename (b->tmp, "ctr-live.pipeline", NULL);
  g_file_set_contents (path, out->str, -1, NULL);
  return path;
}

/* A random token of 32 hex digits in @b->tmp/admin-token, mode 0600. */
static char *
write_token (Bench *b)
{
  GRand *rand = g_rand_new ();
  b->token = g_strdup_printf ("%08x%08x%08x%08x", g_rand_int (rand), g_rand_int (rand),
                              g_rand_int (rand), g_rand_int (rand));
  g_rand_free (rand);
  char *path = g_build_filename (b->tmp, "admin-token", NULL);
  g_autofree char *line = g_strdup_printf ("%s\n", b->token);
  if (!g_file_set_contents (path, line, -1, NULL) || g_chmod (path, 0600) != 0) {
    fprintf (stderr, "reload: cannot write %s\n", path);
    g_free (path);
    return NULL;
  }
  return path;
}

/* From @from (µs), in slots of --interval seconds: --round-reloads slots with a new version
 * each, then as many without, and so on (every slot a reload without rounds), for
 * phase_seconds(). The slots without are the baseline the windows are compared with,
 * interleaved with them, so that a drift of the machine over minutes falls on both alike. */
static gboolean
reload_phase (Bench *b, gint64 from)
{
  gint64 step = (gint64) (b->o->interval * G_USEC_PER_SEC);
  gint64 end = from + (gint64) (phase_seconds (b->o) * G_USEC_PER_SEC);
  gint n = b->o->round_reloads;
  for (gint64 k = 0; from + k * step < end; k++) {
    if (n > 0 && k % (2 * n) >= n)
      continue;
    sleep_until (from + k * step);
    Reload r;
    if (!reload_next (b, &r))
      return FALSE;
  }
  return TRUE;
}

/* The server's VmRSS once settled: the median of 10 samples over 0.5 s, 1 s from now. */
static long
settled_rss (Bench *b)
{
  g_usleep (G_USEC_PER_SEC);
  gint64 from = g_get_monotonic_time ();
  g_usleep (G_USEC_PER_SEC / 2);
  return rss_between (&b->rss, from, g_get_monotonic_time (), 0.5);
}

/* --fast-reloads reloads without load; the server's settled VmRSS after the first and the last. */
static gboolean
fast_phase (Bench *b, long *rss_first, long *rss_last)
{
  gint64 step = (gint64) (b->o->fast_interval * G_USEC_PER_SEC);
  gint64 t = g_get_monotonic_time ();
  for (gint i = 1; i <= b->o->fast_reloads; i++, t += step) {
    sleep_until (t);
    Reload r;
    /* "unchanged": the watcher took the new version first */
    if (!reload_next (b, &r) || (strcmp (r.result, "loaded") != 0 && strcmp (r.result, "unchanged") != 0))
      return FALSE;
    if (i == 1)
      *rss_first = settled_rss (b);
    if (i == b->o->fast_reloads)
      *rss_last = settled_rss (b);
    t = MAX (t, g_get_monotonic_time () - step);
  }
  return TRUE;
}

/* The largest sample in [@from, @to) µs that is in a reload's window (@inside) or outside every
 * window; -1 when none. */
static long
rss_max_windows (Bench *b, gint64 t0, gint64 from, gint64 to, gboolean inside)
{
  long max = -1;
  g_mutex_lock (&b->rss.lock);
  for (guint i = 0; i < b->rss.samples->len; i++) {
    const RssSample *s = &g_array_index (b->rss.samples, RssSample, i);
    if (s->t >= from && s->t < to &&
        in_window (b, t0, (double) (s->t - t0) / G_USEC_PER_SEC) == inside)
      max = MAX (max, s->kb);
  }
  g_mutex_unlock (&b->rss.lock);
  return max;
}

/* The server's VmRSS in the phases of the run, kB (-1: no sample). */
typedef struct {
  long steady_median;     /* the first steady phase's median */
  long steady_before_max; /* the peaks of the steady phases before and after the reloads */
  long steady_after_max;
  long peak_load;  /* the reload phase under load: from the first reload to the last window's end */
  long window_max; /* … its samples in a reload's window */
  long quiet_max;  /* … its samples outside every window (the baseline with rounds) */
  long peak_fast;  /* the fast reloads */
  long first_fast; /* settled after the first fast reload, after the last */
  long last_fast;
} RssFigures;

/* The RSS lines. The bound is one dense model more than steady (+ 5 %), steady being a peak
 * without reloads: RSS under open-loop load moves with the requests in flight, so the windows'
 * peak is compared with the peak of the reload phase outside every window — the rounds without
 * reloads, interleaved with the windows and about as long — like with like (without rounds: the
 * steady phases' peak, and the whole reload phase's). The bound on the first steady phase's
 * median and the one with a cube more are printed for the reader. */
static void
print_rss (const Bench *b, const RssFigures *r, gboolean fast_ok)
{
  gint64 dense = part_bytes (b->data, "dense.onnx"), cube = part_bytes (b->data, "cube");
  gboolean rounds = b->o->round_reloads > 0;
  long steady_peak = rounds ? r->quiet_max : MAX (r->steady_before_max, r->steady_after_max);
  long peak = MAX (rounds ? r->window_max : r->peak_load, r->peak_fast);
  double bound = steady_peak + dense / 1024.0 + 0.05 * steady_peak;
  double bound_median = r->steady_median + dense / 1024.0 + 0.05 * r->steady_median;
  /* a short run (SEDP_BENCH_QUICK) may leave no sample after the last window: -1 there */
  gboolean have = steady_peak > 0 && peak > 0;
  printf ("RESULT rss_window_max_kb=%ld rss_quiet_max_kb=%ld rss_baseline=%s\n", r->window_max,
          r->quiet_max, rounds ? "quiet" : "steady");
  printf ("RESULT rss_steady_kb=%ld rss_steady_before_max_kb=%ld rss_steady_after_max_kb=%ld "
          "rss_peak_under_load_kb=%ld rss_peak_fast_kb=%ld dense_model_bytes=%" G_GINT64_FORMAT
          " cube_bytes=%" G_GINT64_FORMAT " rss_bound_kb=%.0f rss_bound_median_kb=%.0f\n",
          r->steady_median, r->steady_before_max, r->steady_after_max, r->peak_load, r->peak_fast,
          dense, cube, bound, bound_median);
  /* a version with other embeddings loads its cube beside the serving one's until the swap
   * (docs/model-lifecycle.md, "Cubes are shared"): the bound with one cube more says whether that
   * is all the peak holds */
  printf ("RESULT reload_peak_rss_over_bound_median=%.3f reload_peak_rss_over_bound_with_cube=%.3f\n",
          have && r->steady_median > 0 ? peak / bound_median : -1,
          have ? peak / (bound + cube / 1024.0) : -1);
  printf ("RESULT reload_peak_rss_over_bound=%.3f\n", have ? peak / bound : -1);
  printf ("RESULT rss_after_first_fast_reload_kb=%ld rss_after_last_fast_reload_kb=%ld\n",
          r->first_fast, r->last_fast);
  printf ("RESULT rss_growth_50_reloads=%.4f\n", fast_ok && r->first_fast > 0
          ? (double) (r->last_fast - r->first_fast) / r->first_fast : -1);
}

/* --rss-trace: every VmRSS sample, "SECONDS\tKB" from the load run's start @t0, per reload
 * "# reload VERSION CALL ANSWER" (seconds), and per answer "# answer DUE MS" (when it was due,
 * its latency), for a reader who wants to see where the peaks are. */
static void
write_rss_trace (Bench *b, const Answers *a)
{
  gint64 t0 = a->t0;
  FILE *f = fopen (b->o->rss_trace, "w");
  if (f == NULL) {
    fprintf (stderr, "reload: %s: %s\n", b->o->rss_trace, g_strerror (errno));
    return;
  }
  for (guint i = 0; i < b->reloads->len; i++) {
    const Reload *r = &g_array_index (b->reloads, Reload, i);
    fprintf (f, "# reload %" G_GINT64_FORMAT " %.3f %.3f\n", r->version,
             (double) (r->t_call - t0) / G_USEC_PER_SEC, (double) (r->t_answer - t0) / G_USEC_PER_SEC);
  }
  for (guint i = 0; i < a->records->len; i++) {
    const Record *r = &g_array_index (a->records, Record, i);
    fprintf (f, "# answer %.4f %.2f\n", r->t, r->ms);
  }
  g_mutex_lock (&b->rss.lock);
  for (guint i = 0; i < b->rss.samples->len; i++) {
    const RssSample *s = &g_array_index (b->rss.samples, RssSample, i);
    fprintf (f, "%.3f\t%ld\n", (double) (s->t - t0) / G_USEC_PER_SEC, s->kb);
  }
  g_mutex_unlock (&b->rss.lock);
  fclose (f);
}

/* Steps 4 to 6: the load run with its reloads, the fast reloads, the measures. */
static int
run (Bench *b, double capacity, double rate, double apart)
{
  const Options *o = b->o;
  g_autofree char *requests = g_build_filename (b->data, "requests.jsonl", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (SedpWorkload) w = sedp_workload_load (requests, SEDP_WORKLOAD_PROTOBUF, &error);
  if (w == NULL) {
    fprintf (stderr, "reload: %s\n", error->message);
    return 1;
  }
  if (rate <= 0) {
    capacity = find_capacity (b, w);
    rate = o->load * capacity;
    if (rate <= 0)
      return 1;
  }
  Answers a = {.expected = b->expected, .records = g_array_new (FALSE, FALSE, sizeof (Record))};
  LoadRun l = {b, w, rate, o->steady + phase_seconds (o), &a};
  fprintf (stderr, "reload: %.1f requests/s for %g s: %g s steady, %g s with a version every %g s "
           "(%d in a row, then as long without), %g s steady\n", rate, l.seconds, o->steady / 2,
           phase_seconds (o), o->interval, o->round_reloads, o->steady / 2);
  GThread *thread = g_thread_new ("load", load_thread, &l);
  while (!g_atomic_int_get (&l.started))
    g_usleep (1000);
  CpuMark cpu[4]; /* at the start, the reloads' start and end, the end */
  cpu[0] = cpu_mark (b->server.pid);
  gint64 reload_from = a.t0 + (gint64) (o->steady / 2 * G_USEC_PER_SEC);
  sleep_until (reload_from);
  cpu[1] = cpu_mark (b->server.pid);
  gboolean ok = reload_phase (b, reload_from);
  cpu[2] = cpu_mark (b->server.pid);
  guint n_loaded_reloads = b->reloads->len;
  g_thread_join (thread);
  cpu[3] = cpu_mark (b->server.pid);
  gint64 load_end = g_get_monotonic_time ();
  if (!ok || l.results == NULL) {
    g_array_unref (a.records);
    return 1;
  }
  const Reload *first = &g_array_index (b->reloads, Reload, 0);
  const Reload *last = &g_array_index (b->reloads, Reload, n_loaded_reloads - 1);
  gint64 steady_to = first->t_call - (gint64) (o->before * G_USEC_PER_SEC);
  gint64 reload_to = last->t_answer + (gint64) (o->after * G_USEC_PER_SEC);
  /* a steady phase's RSS from --rss-settle on: the first phase starts with what the capacity
   * search's probes left, the second with what the last reload left */
  gint64 settle = (gint64) (o->rss_settle * G_USEC_PER_SEC);
  RssFigures rss = {
    .steady_median = rss_between (&b->rss, a.t0 + settle, steady_to, 0.5),
    .steady_before_max = rss_between (&b->rss, a.t0 + settle, steady_to, 1),
    .steady_after_max = rss_between (&b->rss, reload_to + settle, load_end, 1),
    .peak_load = rss_between (&b->rss, first->t_call, reload_to, 1),
    .window_max = rss_max_windows (b, a.t0, reload_from, reload_to, TRUE),
    .quiet_max = rss_max_windows (b, a.t0, reload_from, reload_to, FALSE),
  };
  guint64 errors = print_load_results (
    b, &a, sedp_loadgen_results_get_counts (l.results), capacity, rate, apart, n_loaded_reloads,
    (double) (reload_from - a.t0) / G_USEC_PER_SEC,
    (double) (last->t_answer - a.t0) / G_USEC_PER_SEC + o->after);
  sedp_loadgen_results_free (l.results);
  double server[3], other[3];
  for (guint i = 0; i < 3; i++)
    cpu_between (&cpu[i], &cpu[i + 1], &server[i], &other[i]);
  /* a neighbour's job on a shared machine takes cores from the server: say when it did */
  printf ("RESULT reload_cpu_cores=%ld reload_cpu_server_cores_before=%.2f "
          "reload_cpu_server_cores_reloads=%.2f reload_cpu_server_cores_after=%.2f "
          "reload_cpu_other_jobs_cores_before=%.2f reload_cpu_other_jobs_cores_reloads=%.2f "
          "reload_cpu_other_jobs_cores_after=%.2f\n", sysconf (_SC_NPROCESSORS_ONLN), server[0],
          server[1], server[2], other[0], other[1], other[2]);
  /* the exit status says whether every answer was right; the other targets are for the reader */
  gboolean correct = errors == 0 && a.n_mismatch == 0 && a.n_ok > 0;

  gint64 fast_from = g_get_monotonic_time ();
  fprintf (stderr, "reload: %d reloads without load, one every %g s at most\n", o->fast_reloads,
           o->fast_interval);
  rss.first_fast = rss.last_fast = -1;
  ok = fast_phase (b, &rss.first_fast, &rss.last_fast);
  rss.peak_fast = rss_between (&b->rss, fast_from, g_get_monotonic_time (), 1);

  g_autofree char *metrics = NULL;
  guint st = http_call ("GET", "/metrics", NULL, &metrics);
  g_autofree char *labels = g_strdup_printf ("{pipeline=\"%s\",model=\"%s\"", b->pipeline_name, MODEL);
  g_autofree char *swap_key = g_strconcat ("sedp_model_swap_seconds_max", labels, NULL);
  g_autofree char *loaded_key = g_strconcat ("sedp_model_reloads_total", labels, ",result=\"loaded\"", NULL);
  g_autofree char *failed_key = g_strconcat ("sedp_model_reloads_total", labels, ",result=\"failed\"", NULL);
  g_autofree char *guard_key = g_strconcat ("sedp_model_rollbacks_total", labels, ",reason=\"guard\"", NULL);
  double swap_s_max = st == 200 ? bench_metric (metrics, swap_key) : -1;
  double swap_us_max = swap_s_max >= 0 ? swap_s_max * 1e6 : -1;
  printf ("RESULT reloads_total=%u server_reloads_loaded=%.0f server_reloads_failed=%.0f "
          "server_rollbacks_guard=%.0f fast_reloads=%d fast_reloads_done=%s\n",
          b->reloads->len, st == 200 ? bench_metric (metrics, loaded_key) : -1,
          st == 200 ? bench_metric (metrics, failed_key) : -1, st == 200 ? bench_metric (metrics, guard_key) : -1,
          o->fast_reloads, ok ? "yes" : "no");
  printf ("RESULT swap_us_max=%.0f\n", swap_us_max);

  print_rss (b, &rss, ok);
  if (o->rss_trace)
    write_rss_trace (b, &a);
  g_array_unref (a.records);
  fflush (stdout);
  return ok && correct && swap_us_max >= 0 ? 0 : 1;
}

static gboolean
parse_options (int argc, char **argv, Options *o)
{
  *o = (Options) {
    .duration = 120, .interval = 5, .load = 0.7, .steady = 30, .round_reloads = 2,
    .fast_reloads = 50,
    .fast_interval = 0.5, .items = 300, .cap_seconds = 5, .cap_slo_ms = 100, .before = 0.5,
    .after = 1.5, .rss_settle = 5,
  };
  const GOptionEntry entries[] = {
    {"duration", 'd', 0, G_OPTION_ARG_DOUBLE, &o->duration,
     "Seconds of load with a new version every --interval (default 120)", "S"},
    {"interval", 'i', 0, G_OPTION_ARG_DOUBLE, &o->interval,
     "Seconds between new versions under load (default 5)", "S"},
    {"load", 'l', 0, G_OPTION_ARG_DOUBLE, &o->load,
     "Share of the measured capacity offered (default 0.7)", "F"},
    {"rate", 'r', 0, G_OPTION_ARG_DOUBLE, &o->rate,
     "Requests/s to offer (skips the capacity search)", "R"},
    {"steady", 0, 0, G_OPTION_ARG_DOUBLE, &o->steady,
     "Seconds of load without reloads, half before and half after the reload phase (default 30)",
     "S"},
    {"round-reloads", 0, 0, G_OPTION_ARG_INT, &o->round_reloads,
     "Reloads in a row, then as long without, in the reload phase: the slots without are the "
     "baseline of the p99 and RSS targets (default 2; 0: a reload in every slot, the steady "
     "phases the baseline)", "N"},
    {"fast-reloads", 0, 0, G_OPTION_ARG_INT, &o->fast_reloads,
     "Reloads without load after the loaded run, for the RSS growth (default 50)", "N"},
    {"fast-interval", 0, 0, G_OPTION_ARG_DOUBLE, &o->fast_interval,
     "Seconds between fast reloads at least (default 0.5)", "S"},
    {"items", 0, 0, G_OPTION_ARG_INT, &o->items, "Candidates per request (default 300)", "N"},
    {"capacity-seconds", 0, 0, G_OPTION_ARG_DOUBLE, &o->cap_seconds,
     "Seconds of each probe of the capacity search (default 5)", "S"},
    {"capacity-slo-ms", 0, 0, G_OPTION_ARG_DOUBLE, &o->cap_slo_ms,
     "The p99 within which the capacity is measured, in ms (default 100)", "MS"},
    {"window-before", 0, 0, G_OPTION_ARG_DOUBLE, &o->before,
     "A swap's window starts this many seconds before the reload is asked for (default 0.5)", "S"},
    {"window-after", 0, 0, G_OPTION_ARG_DOUBLE, &o->after,
     "… and ends this many seconds after its answer (default 1.5)", "S"},
    {"rss-settle", 0, 0, G_OPTION_ARG_DOUBLE, &o->rss_settle,
     "The steady phases' VmRSS counts from this many seconds after each starts (default 5)", "S"},
    {"rss-trace", 0, 0, G_OPTION_ARG_FILENAME, &o->rss_trace,
     "Write the server's VmRSS samples (s from the load run's start, kB) and the reloads' times "
     "to FILE", "FILE"},
    {"new-embeddings", 0, 0, G_OPTION_ARG_NONE, &o->new_embeddings,
     "Version 2 of other embeddings too, its own cube (default: a retrained dense model over "
     "version 1's cube)", NULL},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr (GOptionContext) ctx =
    g_option_context_new ("— hot reload of the CTR example's model under open-loop load");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error)) {
    fprintf (stderr, "reload: %s\n", error->message);
    return FALSE;
  }
  if (g_getenv ("SEDP_BENCH_QUICK"))
    o->duration = 10, o->interval = 2, o->steady = 6, o->fast_reloads = 4, o->cap_seconds = 1,
    o->rss_settle = 1;
  if (o->duration < o->interval || o->interval <= 0 || o->load <= 0 || o->load > 10 ||
      o->rate < 0 || o->steady < 2 || o->fast_reloads < 2 || o->fast_interval < 0 ||
      o->items < 1 || o->cap_seconds <= 0 || o->cap_slo_ms <= 0 || o->before < 0 || o->after < 0 ||
      o->steady / 2 < o->before + 1 || o->rss_settle < 0 ||
      o->rss_settle >= o->steady / 2 - o->before || o->round_reloads < 0 ||
      o->duration / o->interval + o->fast_reloads + 3 > MAX_VERSIONS) {
    fprintf (stderr, "reload: bad option value (--duration at least --interval, --steady at least "
             "2 × (--window-before + 1) and more than 2 × (--window-before + --rss-settle), "
             "--fast-reloads at least 2)\n");
    return FALSE;
  }
  return TRUE;
}

int
main (int argc, char **argv)
{
  g_set_prgname ("reload");
  Options o;
  if (!parse_options (argc, argv, &o))
    return 2;
  signal (SIGPIPE, SIG_IGN);
  Bench b = {.o = &o, .next_version = 3, .reloads = g_array_new (FALSE, FALSE, sizeof (Reload))};
  g_autofree char *build = NULL;
  bench_paths (&build, &b.src, &b.sedp, &b.data);
  g_free (b.data);
  b.data = g_build_filename (build, o.new_embeddings ? "reload-data-new-embeddings" : "reload-data",
                            NULL);
  b.repo = g_build_filename (build, "reload-repo", NULL);
  g_autoptr (GError) error = NULL;
  b.tmp = g_dir_make_tmp ("sedp-reload-XXXXXX", &error);
  if (b.tmp == NULL) {
    fprintf (stderr, "reload: %s\n", error->message);
    return 1;
  }
  double apart = 0;
  g_autofree char *pipeline = NULL, *token_file = NULL;
  int rc = 1;
  if (!prepare (&b) || !check_scenario (&b) ||
      (b.expected = load_expected (b.data, &apart)) == NULL ||
      !fresh_repository (b.data, b.repo) || (pipeline = write_pipeline (&b)) == NULL ||
      (token_file = write_token (&b)) == NULL ||
      !server_start (&b.server, b.sedp, pipeline, b.pipeline_name, token_file))
    goto out;
  b.rss = (RssSampler) {.pid = b.server.pid, .samples = g_array_new (FALSE, FALSE, sizeof (RssSample))};
  g_mutex_init (&b.rss.lock);
  GThread *sampler = g_thread_new ("rss", rss_thread, &b.rss);
  rc = run (&b, 0, o.rate, apart);
  g_atomic_int_set (&b.rss.stop, 1);
  g_thread_join (sampler);
  g_array_unref (b.rss.samples);
out:
  bench_server_stop (&b.server);
  bench_remove_tree (b.tmp);
  bench_remove_tree (b.repo);
  if (b.expected)
    g_hash_table_unref (b.expected);
  g_array_unref (b.reloads);
  g_free (b.token);
  g_free (b.pipeline_name);
  g_free (b.src);
  g_free (b.sedp);
  g_free (b.data);
  g_free (b.repo);
  g_free (b.tmp);
  g_free (o.rss_trace);
  return rc;
}
