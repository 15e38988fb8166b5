/* sedp cube — local cubes of embeddings: build, info, verify, get, push. */
#define _GNU_SOURCE
#include "cli.h"

#include "../cube/cube-format.h"
#include "../cube/cube.h"
#include "../cube/source.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- keys ---- */

/* "12345" (a signature) or "SLOT:ID" (hashed with @hash_key when given). */
static gboolean
parse_key (const char *text, const guint8 *hash_key, guint64 *key, GError **error)
{
  const char *colon = strchr (text, ':');
  if (colon == NULL) {
    if (g_ascii_string_to_unsigned (text, 10, 0, G_MAXUINT64, key, NULL))
      return TRUE;
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                 "bad key '%s' (a decimal signature from 0 to 2^64 - 1, or SLOT:ID)", text);
    return FALSE;
  }
  g_autofree char *slot_text = g_strndup (text, (gsize) (colon - text));
  guint64 slot = 0, id = 0;
  if (!g_ascii_string_to_unsigned (slot_text, 10, 0, G_MAXUINT32, &slot, NULL) ||
      !g_ascii_string_to_unsigned (colon + 1, 10, 0, G_MAXUINT64, &id, NULL)) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                 "bad key '%s' (SLOT:ID wants a slot from 0 to 2^32 - 1 and a decimal id)", text);
    return FALSE;
  }
  if (hash_key == NULL) {
    g_set_error (error, SEDP_CUBE_ERROR, SEDP_CUBE_ERROR_INVALID,
                 "key '%s': the backend does not know the cube's hash key, give signatures",
                 text);
    return FALSE;
  }
  *key = sedp_signature (hash_key, (guint32) slot, id);
  return TRUE;
}

static gboolean
parse_hash_key (const char *sub, const char *hex, guint8 *key)
{
  if (cube_unhex (hex, key, SEDP_CUBE_HASH_KEY_BYTES))
    return TRUE;
  g_autofree char *msg = g_strdup_printf ("--hash-key wants %d hex digits, not '%s'",
                                          2 * SEDP_CUBE_HASH_KEY_BYTES, hex);
  sedp_cli_error (sub, msg);
  return FALSE;
}

/* "1073741824", "64k", "256M", "1G" (powers of 1024). */
static gboolean
parse_size (const char *text, guint64 *out)
{
  char *end = NULL;
  errno = 0;
  if (!g_ascii_isdigit (*text))
    return FALSE;
  guint64 v = g_ascii_strtoull (text, &end, 10);
  if (errno != 0)
    return FALSE;
  guint shift = 0;
  switch (*end) {
  case '\0':
    break;
  case 'k': case 'K':
    shift = 10;
    break;
  case 'm': case 'M':
    shift = 20;
    break;
  case 'g': case 'G':
    shift = 30;
    break;
  default:
    return FALSE;
  }
  if (*end && end[1] != '\0')
    return FALSE;
  if (shift && v > (G_MAXUINT64 >> shift))
    return FALSE;
  *out = v << shift;
  return TRUE;
}

static void
print_values (const char *key, const float *v, guint dim)
{
  GString *s = g_string_new (key);
  g_string_append_c (s, '\t');
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (guint k = 0; k < dim; k++) {
    if (k)
      g_string_append_c (s, ',');
    /* The shortest of %.6g … %.9g that reads back as the same float32 (%.9g always does). */
    for (int p = 6; p <= 9; p++) {
      char fmt[8];
      g_snprintf (fmt, sizeof fmt, "%%.%dg", p);
      g_ascii_formatd (buf, sizeof buf, fmt, v[k]);
      if ((float) g_ascii_strtod (buf, NULL) == v[k])
        break;
    }
    g_string_append (s, buf);
  }
  g_string_append_c (s, '\n');
  fputs (s->str, stdout);
  g_string_free (s, TRUE);
}

/* ---- build ---- */

/* Parses "KEY<TAB>v1,v2,…" into @key and @values (dim of them); FALSE with a message. */
static gboolean
parse_line (char *line, guint dim, const guint8 *hash_key, guint64 *key, float *values,
            char **message)
{
  char *tab = strchr (line, '\t');
  if (tab == NULL) {
    *message = g_strdup ("expected KEY<TAB>v1,v2,… (no tab)");
    return FALSE;
  }
  *tab = '\0';
  g_autoptr (GError) error = NULL;
  if (!parse_key (line, hash_key, key, &error)) {
    *message = g_strdup (error->message);
    return FALSE;
  }
  char *p = tab + 1;
  for (guint k = 0; k < dim; k++) {
    char *comma = strchr (p, ',');
    if (comma)
      *comma = '\0';
    g_strstrip (p);
    char *end = NULL;
    double v = *p ? g_ascii_strtod (p, &end) : 0;
    if (*p == '\0' || *end != '\0') {
      *message = g_strdup_printf ("value %u is not a number: '%s'", k + 1, p);
      return FALSE;
    }
    if (!isfinite (v) || fabs (v) > FLT_MAX) {
      *message = g_strdup_printf ("value %u is not a finite float32: '%s'", k + 1, p);
      return FALSE;
    }
    values[k] = (float) v;
    if (comma == NULL) {
      if (k + 1 < dim) {
        *message = g_strdup_printf ("%u values, the cube's dim is %u", k + 1, dim);
        return FALSE;
      }
      return TRUE;
    }
    p = comma + 1;
  }
  guint more = 1;
  for (; *p; p++)
    more += *p == ',';
  *message = g_strdup_printf ("%u values, the cube's dim is %u", dim + more, dim);
  return FALSE;
}

static int
cmd_build (int argc, char **argv)
{
  g_autofree char *out = NULL, *name = NULL, *hex = NULL, *block_text = NULL;
  int dim = 0;
  gboolean quiet = FALSE;
  const GOptionEntry entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &out, "The cube folder to create (must not exist)",
     "DIR"},
    {"dim", 'd', 0, G_OPTION_ARG_INT, &dim, "Values per key", "D"},
    {"name", 'n', 0, G_OPTION_ARG_STRING, &name,
     "The cube's name (default: the folder's name)", "NAME"},
    {"hash-key", 0, 0, G_OPTION_ARG_STRING, &hex,
     "The signature key, 32 hex digits (default: random); SLOT:ID keys are hashed with it",
     "HEX"},
    {"block-size", 0, 0, G_OPTION_ARG_STRING, &block_text,
     "Bytes per value block file, with an optional k, M or G (default 1G)", "BYTES"},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress on stderr", NULL},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("cube build", "-o DIR --dim D FILE.tsv|-",
                       "Builds a cube from TSV lines 'KEY<TAB>v1,v2,…' (exactly D values). KEY is "
                       "a signature in decimal, or SLOT:ID, hashed into the signature "
                       "crypto_shorthash(key, SLOT, ID) with the cube's hash key. Empty lines "
                       "are skipped. The cube is written into DIR.tmp-XXXXXX and renamed to DIR "
                       "when complete: on any error (a malformed line, a wrong count of values, "
                       "a duplicate key) nothing is left behind.",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("cube build", "expected one FILE.tsv, or - for standard input (see --help)");
    return 2;
  }
  if (out == NULL) {
    sedp_cli_error ("cube build", "missing -o DIR");
    return 2;
  }
  if (dim < 1 || dim > CUBE_MAX_DIM) {
    g_autofree char *msg = g_strdup_printf ("--dim must be from 1 to %d (it is required)",
                                            CUBE_MAX_DIM);
    sedp_cli_error ("cube build", msg);
    return 2;
  }
  guint8 key[SEDP_CUBE_HASH_KEY_BYTES];
  if (hex) {
    if (!parse_hash_key ("cube build", hex, key))
      return 2;
  } else {
    if (sodium_init () < 0) {
      sedp_cli_error ("cube build", "no source of randomness for a hash key (give --hash-key)");
      return 1;
    }
    randombytes_buf (key, sizeof key);
  }
  guint64 block_size = 0;
  if (block_text && !parse_size (block_text, &block_size)) {
    g_autofree char *msg = g_strdup_printf ("--block-size wants bytes (e.g. 1073741824, 256M, "
                                            "1G), not '%s'", block_text);
    sedp_cli_error ("cube build", msg);
    return 2;
  }
  const char *path = argv[1];
  gboolean from_stdin = strcmp (path, "-") == 0;
  const char *shown = from_stdin ? "<stdin>" : path;
  FILE *in = from_stdin ? stdin : fopen (path, "r");
  if (in == NULL) {
    int e = errno;
    g_autofree char *msg = g_strdup_printf ("%s: %s", path, g_strerror (e));
    sedp_cli_error ("cube build", msg);
    return 1;
  }
  g_autoptr (GError) error = NULL;
  SedpCubeBuilder *b = sedp_cube_builder_new (out, name, (guint) dim, key, block_size, &error);
  if (b == NULL) {
    sedp_cli_error ("cube build", error->message);
    if (!from_stdin)
      fclose (in);
    return 1;
  }

  sedp_cli_catch_signals (TRUE);
  int status = 0;
  char *line = NULL;
  size_t cap = 0;
  guint64 lineno = 0, bytes = 0;
  g_autofree float *values = g_new (float, dim);
  gint64 t0 = g_get_monotonic_time (), next_report = t0 + G_USEC_PER_SEC;
  for (;;) {
    errno = 0;
    ssize_t len = getline (&line, &cap, in);
    if (sedp_cli_interrupted)
      break;
    if (len < 0) {
      if (ferror (in)) {
        if (errno == EINTR) {
          clearerr (in);
          continue;
        }
        int e = errno;
        g_autofree char *msg = g_strdup_printf ("%s:%" G_GUINT64_FORMAT ": cannot read: %s",
                                                shown, lineno + 1, g_strerror (e));
        sedp_cli_error ("cube build", msg);
        status = 1;
      }
      break;
    }
    lineno++;
    bytes += (guint64) len;
    if (len > 0 && line[len - 1] == '\n')
      line[--len] = '\0';
    if (len > 0 && line[len - 1] == '\r')
      line[--len] = '\0';
    if (len == 0)
      continue;
    if (memchr (line, '\0', (gsize) len) != NULL) {
      g_autofree char *msg = g_strdup_printf ("%s:%" G_GUINT64_FORMAT ": binary data (a NUL "
                                              "byte) in a text line", shown, lineno);
      sedp_cli_error ("cube build", msg);
      status = 1;
      break;
    }
    guint64 k = 0;
    g_autofree char *why = NULL;
    if (!parse_line (line, (guint) dim, key, &k, values, &why)) {
      g_autofree char *msg = g_strdup_printf ("%s:%" G_GUINT64_FORMAT ": %s", shown, lineno, why);
      sedp_cli_error ("cube build", msg);
      status = 1;
      break;
    }
    if (!sedp_cube_builder_add (b, k, values, &error)) {
      g_autofree char *msg = g_strdup_printf ("%s:%" G_GUINT64_FORMAT ": %s", shown, lineno,
                                              error->message);
      sedp_cli_error ("cube build", msg);
      status = 1;
      break;
    }
    if (!quiet && (lineno & 0x3ff) == 0) {
      gint64 now = g_get_monotonic_time ();
      if (now >= next_report) {
        double s = (double) (now - t0) / G_USEC_PER_SEC;
        fprintf (stderr, "sedp cube build: %" G_GUINT64_FORMAT " keys, %.1f MiB read in %.0f s "
                 "(%.0f keys/s)\n", sedp_cube_builder_get_count (b), (double) bytes / 1048576.0,
                 s, (double) sedp_cube_builder_get_count (b) / s);
        next_report = now + G_USEC_PER_SEC;
      }
    }
  }
  free (line);
  if (!from_stdin)
    fclose (in);
  if (sedp_cli_interrupted && status == 0) {
    g_autofree char *msg = g_strdup_printf ("interrupted (signal %d) at %s:%" G_GUINT64_FORMAT
                                            "; nothing was written",
                                            (int) sedp_cli_interrupted, shown, lineno);
    sedp_cli_error ("cube build", msg);
    status = 130;
  }
  if (status != 0) {
    sedp_cube_builder_abort (b);
    sedp_cli_catch_signals (FALSE);
    return status;
  }
  guint64 count = sedp_cube_builder_get_count (b);
  if (!quiet && g_get_monotonic_time () - t0 > G_USEC_PER_SEC)
    fprintf (stderr, "sedp cube build: %" G_GUINT64_FORMAT " keys read; writing the index\n",
             count);
  gboolean ok = sedp_cube_builder_finish (b, &error);
  sedp_cli_catch_signals (FALSE);
  if (!ok) {
    sedp_cli_error ("cube build", error->message);
    return 1;
  }
  char khex[2 * SEDP_CUBE_HASH_KEY_BYTES + 1];
  cube_hex (key, sizeof key, khex);
  printf ("wrote %s: %" G_GUINT64_FORMAT " keys of dim %d, hash key %s\n", out, count, dim, khex);
  return 0;
}

/* ---- info, verify ---- */

static int
cmd_info (int argc, char **argv)
{
  if (!sedp_cli_parse ("cube info", "DIR",
                       "Prints a cube's metadata (name, dim, keys, version, creation time, hash "
                       "key, blocks, index). The metadata and the index are checked; the values "
                       "only by size (sedp cube verify reads them all).",
                       NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("cube info", "expected one cube folder (see --help)");
    return 2;
  }
  g_autoptr (GError) error = NULL;
  SedpCube *cube = sedp_cube_open (argv[1], SEDP_CUBE_VALUES_DISK, &error);
  if (cube == NULL) {
    sedp_cli_error ("cube info", error->message);
    return 1;
  }
  const SedpCubeMeta *m = sedp_cube_get_meta (cube);
  char hex[2 * SEDP_CUBE_HASH_KEY_BYTES + 1];
  cube_hex (m->hash_key, SEDP_CUBE_HASH_KEY_BYTES, hex);
  g_autoptr (GDateTime) t = g_date_time_new_from_unix_utc (m->created);
  g_autofree char *when = t ? g_date_time_format_iso8601 (t) : g_strdup ("?");
  guint64 slots = sedp_cube_get_index_slots (cube);
  double values_mib = (double) m->count * m->dim * 4 / 1048576.0;
  printf ("cube:        %s\n", argv[1]);
  printf ("name:        %s\n", m->name);
  printf ("dim:         %u\n", m->dim);
  printf ("dtype:       float32\n");
  printf ("keys:        %" G_GUINT64_FORMAT "\n", m->count);
  printf ("version:     %" G_GUINT64_FORMAT "\n", m->version);
  printf ("created:     %s (%" G_GINT64_FORMAT ")\n", when, m->created);
  printf ("hash_key:    %s\n", hex);
  printf ("block_size:  %" G_GUINT64_FORMAT " bytes\n", m->block_size);
  printf ("blocks:      %u (%.2f MiB of values)\n", m->n_blocks, values_mib);
  printf ("index:       %" G_GUINT64_FORMAT " slots, load %.2f (%.2f MiB)\n", slots,
          (double) m->count / (double) slots, (double) slots * 16 / 1048576.0);
  sedp_cube_close (cube);
  return 0;
}

static int
cmd_verify (int argc, char **argv)
{
  if (!sedp_cli_parse ("cube verify", "DIR",
                       "Checks a cube completely: the metadata's checksum and fields, the index "
                       "(checksum, every key reachable, none twice, every location inside the "
                       "values) and every block against its checksum. Exits 1 naming the first "
                       "bad file.",
                       NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    sedp_cli_error ("cube verify", "expected one cube folder (see --help)");
    return 2;
  }
  g_autoptr (GError) error = NULL;
  if (!sedp_cube_verify (argv[1], &error)) {
    sedp_cli_error ("cube verify", error->message);
    return 1;
  }
  SedpCube *cube = sedp_cube_open (argv[1], SEDP_CUBE_VALUES_DISK, &error);
  if (cube == NULL) {
    sedp_cli_error ("cube verify", error->message);
    return 1;
  }
  const SedpCubeMeta *m = sedp_cube_get_meta (cube);
  printf ("%s: ok (%" G_GUINT64_FORMAT " keys of dim %u, %u block%s)\n", argv[1], m->count,
          m->dim, m->n_blocks, m->n_blocks == 1 ? "" : "s");
  sedp_cube_close (cube);
  return 0;
}

/* ---- get, push ---- */

static int
cmd_get (int argc, char **argv)
{
  g_autofree char *url = NULL, *name = NULL, *placement = NULL;
  int timeout_ms = 1000;
  const GOptionEntry entries[] = {
    {"redis", 0, 0, G_OPTION_ARG_STRING, &url,
     "Look up in Redis instead of a local cube (redis://HOST:PORT, "
     "redis+cluster://HOST:PORT,…)", "URL"},
    {"name", 'n', 0, G_OPTION_ARG_STRING, &name, "With --redis: the cube's name there", "NAME"},
    {"values", 0, 0, G_OPTION_ARG_STRING, &placement,
     "Local: read the values from disk on demand (disk, the default) or load them (memory)",
     "PLACE"},
    {"timeout-ms", 0, 0, G_OPTION_ARG_INT, &timeout_ms, "With --redis: per request (default 1000)",
     "MS"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("cube get", "(DIR | --redis URL --name NAME) KEY…",
                       "Looks keys up and prints 'KEY<TAB>v1,v2,…', or 'KEY<TAB>missing', one "
                       "line per KEY in the order given. KEY is a decimal signature, or SLOT:ID "
                       "hashed with the cube's key.",
                       entries, &argc, &argv))
    return 2;
  g_autoptr (GError) error = NULL;
  SedpCubeSource *source = NULL;
  int first;
  if (url) {
    if (name == NULL) {
      sedp_cli_error ("cube get", "--redis needs --name NAME");
      return 2;
    }
    if (argc < 2) {
      sedp_cli_error ("cube get", "expected at least one KEY (see --help)");
      return 2;
    }
    if (timeout_ms < 1 || timeout_ms > 600000) {
      sedp_cli_error ("cube get", "--timeout-ms must be from 1 to 600000");
      return 2;
    }
    SedpRedisOptions ro = {.url = url, .name = name, .timeout_ms = (guint) timeout_ms};
    source = sedp_cube_source_new_redis (&ro, 0, &error);
    first = 1;
  } else {
    if (argc < 3) {
      sedp_cli_error ("cube get", "expected a cube folder and at least one KEY (see --help)");
      return 2;
    }
    SedpCubePlacement where = SEDP_CUBE_VALUES_DISK;
    if (placement && strcmp (placement, "memory") == 0)
      where = SEDP_CUBE_VALUES_MEMORY;
    else if (placement && strcmp (placement, "disk") != 0) {
      sedp_cli_error ("cube get", "--values must be memory or disk");
      return 2;
    }
    SedpCube *cube = sedp_cube_open (argv[1], where, &error);
    source = cube ? sedp_cube_source_new_local (cube) : NULL;
    first = 2;
  }
  if (source == NULL) {
    sedp_cli_error ("cube get", error->message);
    return 1;
  }
  guint8 hash_key[SEDP_CUBE_HASH_KEY_BYTES];
  gboolean has_key = sedp_cube_source_get_hash_key (source, hash_key);
  guint n = (guint) (argc - first);
  g_autofree guint64 *keys = g_new (guint64, n);
  for (guint i = 0; i < n; i++)
    if (!parse_key (argv[first + i], has_key ? hash_key : NULL, &keys[i], &error)) {
      sedp_cli_error ("cube get", error->message);
      sedp_cube_source_free (source);
      return 2;
    }
  guint dim = sedp_cube_source_get_dim (source);
  g_autofree float *values = g_new0 (float, (gsize) n * dim);
  g_autofree guint8 *found = g_new0 (guint8, n);
  if (sedp_cube_source_lookup (source, keys, n, values, found, &error) < 0) {
    sedp_cli_error ("cube get", error->message);
    sedp_cube_source_free (source);
    return 1;
  }
  for (guint i = 0; i < n; i++) {
    if (found[i])
      print_values (argv[first + i], values + (gsize) i * dim, dim);
    else
      printf ("%s\tmissing\n", argv[first + i]);
  }
  sedp_cube_source_free (source);
  return 0;
}

static int
cmd_push (int argc, char **argv)
{
  g_autofree char *url = NULL, *name = NULL;
  int timeout_ms = 5000;
  const GOptionEntry entries[] = {
    {"redis", 0, 0, G_OPTION_ARG_STRING, &url, "The server (redis://HOST:PORT, "
     "redis+cluster://HOST:PORT,…)", "URL"},
    {"name", 'n', 0, G_OPTION_ARG_STRING, &name, "The cube's name there (default: its own)",
     "NAME"},
    {"timeout-ms", 0, 0, G_OPTION_ARG_INT, &timeout_ms, "Per request (default 5000)", "MS"},
    G_OPTION_ENTRY_NULL,
  };
  if (!sedp_cli_parse ("cube push", "DIR --redis URL [--name NAME]",
                       "Uploads a local cube to Redis: every key as NAME:SIGNATURE, then the "
                       "metadata as NAME:meta (readers see the new cube only once it is "
                       "complete).",
                       entries, &argc, &argv))
    return 2;
  if (argc != 2 || url == NULL) {
    sedp_cli_error ("cube push", "expected a cube folder and --redis URL (see --help)");
    return 2;
  }
  if (timeout_ms < 1 || timeout_ms > 600000) {
    sedp_cli_error ("cube push", "--timeout-ms must be from 1 to 600000");
    return 2;
  }
  g_autoptr (GError) error = NULL;
  SedpCube *cube = sedp_cube_open (argv[1], SEDP_CUBE_VALUES_DISK, &error);
  if (cube == NULL) {
    sedp_cli_error ("cube push", error->message);
    return 1;
  }
  const SedpCubeMeta *m = sedp_cube_get_meta (cube);
  SedpRedisOptions ro = {.url = url, .name = name ? name : m->name,
                         .timeout_ms = (guint) timeout_ms};
  gint64 t0 = g_get_monotonic_time ();
  if (!sedp_cube_push (cube, &ro, &error)) {
    sedp_cli_error ("cube push", error->message);
    sedp_cube_close (cube);
    return 1;
  }
  printf ("pushed %s to %s as %s: %" G_GUINT64_FORMAT " keys of dim %u in %.1f s\n", argv[1], url,
          ro.name, m->count, m->dim, (double) (g_get_monotonic_time () - t0) / G_USEC_PER_SEC);
  sedp_cube_close (cube);
  return 0;
}

/* ---- dispatch ---- */

static const SedpCliCommand subs[] = {
  {"build", cmd_build, "Build a cube from TSV lines KEY<TAB>v1,v2,…"},
  {"info", cmd_info, "Print a cube's metadata"},
  {"verify", cmd_verify, "Check every file of a cube against its checksums"},
  {"get", cmd_get, "Look keys up in a local cube or in Redis"},
  {"push", cmd_push, "Upload a local cube to Redis"},
};

int
sedp_cmd_cube (int argc, char **argv)
{
  return sedp_cli_dispatch ("cube",
                            "Cubes: read-only stores of embeddings keyed by 64-bit feature signatures.",
                            "From an ONNX model: 'sedp model split'.", subs, G_N_ELEMENTS (subs),
                            argc, argv);
}
