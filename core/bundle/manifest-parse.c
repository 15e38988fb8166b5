/* sedp — bundles: reading manifest.json. Everything is checked before it is used: the format
 * and its version first (a later format is refused by name, not by its new members), then that
 * every member is known, present once and of its type, then the values, then that the model and
 * the cubes' meta files are among the files. A message names the manifest, the member
 * ("files[2].size") and what it must be. */
#include "bundle-private.h"

#include <errno.h>
#include <fcntl.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A member of a manifest object, and what it must be (for messages). */
typedef struct {
  const char *name;
  const char *must;
} Member;

enum { TOP_FORMAT, TOP_FORMAT_VERSION, TOP_NAME, TOP_VERSION, TOP_CREATED, TOP_HASH_KEY,
       TOP_MODEL, TOP_CUBES, TOP_INPUTS, TOP_OUTPUTS, TOP_FILES, TOP_N };

static const Member top_members[TOP_N + 1] = {
  {"format", "the string \"" SEDP_BUNDLE_FORMAT "\""},
  {"format_version", "the integer 1"},
  {"name", "a string: the model's name"},
  {"version", "an integer from 1 to 9223372036854775807"},
  {"created", "a string: the packing time, UTC, in ISO 8601 (\"2026-11-27T01:02:03Z\")"},
  {"hash_key", "a string of 32 hex digits: the cubes' hash key"},
  {"model", "a string: the dense model's path in the bundle"},
  {"cubes", "an array of 1 or more strings: the cube folders' paths in the bundle"},
  {"inputs", "an array of {\"name\", \"dtype\", \"shape\"} objects"},
  {"outputs", "an array of {\"name\", \"dtype\", \"shape\"} objects"},
  {"files", "an array of {\"path\", \"size\", \"blake2b\"} objects"},
  {NULL, NULL},
};

enum { TENSOR_NAME, TENSOR_DTYPE, TENSOR_SHAPE, TENSOR_N };

static const Member tensor_members[TENSOR_N + 1] = {
  {"name", "a non-empty string: the model's input or output name"},
  {"dtype", "a non-empty string: the element type (\"float32\", \"int64\", …)"},
  {"shape", "an array of integers ≥ -1 (-1: a dimension the model leaves free)"},
  {NULL, NULL},
};

enum { FILE_PATH, FILE_SIZE, FILE_BLAKE2B, FILE_N };

static const Member file_members[FILE_N + 1] = {
  {"path", "a string: the file's path in the bundle"},
  {"size", "an integer ≥ 0: the file's size in bytes"},
  {"blake2b", "a string of 64 hex digits: the file's BLAKE2b-256 digest"},
  {NULL, NULL},
};

/* "a string", "an integer", … for messages. */
static const char *
node_kind (JsonNode *node)
{
  if (JSON_NODE_HOLDS_OBJECT (node))
    return "an object";
  if (JSON_NODE_HOLDS_ARRAY (node))
    return "an array";
  if (JSON_NODE_HOLDS_NULL (node))
    return "null";
  GType t = json_node_get_value_type (node);
  return t == G_TYPE_STRING    ? "a string"
         : t == G_TYPE_INT64   ? "an integer"
         : t == G_TYPE_DOUBLE  ? "a number with a fraction or exponent"
         : t == G_TYPE_BOOLEAN ? "a boolean"
                               : "another value";
}

/* Fails with MANIFEST: member @prefix@m must be what @m says, not @shown. */
static gboolean
member_fail (const char *where, const char *prefix, const Member *m, const char *shown,
             GError **error)
{
  return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s%s' must be %s, not %s",
                      where, prefix, m->name, m->must, shown);
}

/* The member's node when it holds a value of type @type, else NULL with MANIFEST. */
static JsonNode *
member_value (JsonObject *o, const char *prefix, const Member *m, GType type, const char *where,
              GError **error)
{
  JsonNode *node = json_object_get_member (o, m->name);
  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == type)
    return node;
  member_fail (where, prefix, m, node_kind (node), error);
  return NULL;
}

/* @text when it is UTF-8, else NULL with MANIFEST naming member @prefix@name: json-glib 1.6
 * decodes a malformed \u escape into bytes that are not UTF-8, which no writer could give back. */
static const char *
valid_text (const char *text, const char *where, const char *prefix, const char *name,
            GError **error)
{
  if (g_utf8_validate (text, -1, NULL))
    return text;
  bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s%s' is not UTF-8 text (a "
               "malformed \\u escape?)", where, prefix, name);
  return NULL;
}

/* The member's string (borrowed), NULL with MANIFEST when it is not a string of UTF-8 text. */
static const char *
get_string (JsonObject *o, const char *prefix, const Member *m, const char *where,
            GError **error)
{
  JsonNode *node = member_value (o, prefix, m, G_TYPE_STRING, where, error);
  return node ? valid_text (json_node_get_string (node), where, prefix, m->name, error) : NULL;
}

/* The member's integer into @out; FALSE with MANIFEST when not an integer ≥ @min. */
static gboolean
get_int (JsonObject *o, const char *prefix, const Member *m, gint64 min, gint64 *out,
         const char *where, GError **error)
{
  JsonNode *node = member_value (o, prefix, m, G_TYPE_INT64, where, error);
  if (node == NULL)
    return FALSE;
  *out = json_node_get_int (node);
  if (*out >= min)
    return TRUE;
  g_autofree char *shown = g_strdup_printf ("%" G_GINT64_FORMAT, *out);
  return member_fail (where, prefix, m, shown, error);
}

/* The member's array (borrowed), NULL with MANIFEST when it is not an array. */
static JsonArray *
get_array (JsonObject *o, const char *prefix, const Member *m, const char *where, GError **error)
{
  JsonNode *node = json_object_get_member (o, m->name);
  if (JSON_NODE_HOLDS_ARRAY (node))
    return json_node_get_array (node);
  member_fail (where, prefix, m, node_kind (node), error);
  return NULL;
}

/* The member's string of 2 @n hex digits into @out; FALSE with MANIFEST when it is not. */
static gboolean
get_hex (JsonObject *o, const char *prefix, const Member *m, guint8 *out, gsize n,
         const char *where, GError **error)
{
  const char *hex = get_string (o, prefix, m, where, error);
  if (hex == NULL)
    return FALSE;
  if (bundle_unhex (hex, strlen (hex), out, n))
    return TRUE;
  g_autofree char *shown = g_strdup_printf ("'%s'", hex);
  return member_fail (where, prefix, m, shown, error);
}

/* Every member of @o is one of @known, and every one of @known is there. */
static gboolean
members_known (JsonObject *o, const Member *known, const char *prefix, const char *where,
               GError **error)
{
  g_autoptr (GList) names = json_object_get_members (o);
  for (GList *l = names; l; l = l->next) {
    const Member *m = known;
    while (m->name && strcmp (m->name, l->data) != 0)
      m++;
    if (m->name == NULL)
      return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST,
                          "%s: unknown member '%s%s' (a typo? format version 1 has no such "
                          "member)", where, prefix, (const char *) l->data);
  }
  for (const Member *m = known; m->name; m++)
    if (!json_object_has_member (o, m->name))
      return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST,
                          "%s: member '%s%s' is missing (it must be %s)", where, prefix, m->name,
                          m->must);
  return TRUE;
}

/* Array element @i of member @m as an object with exactly the members @known; @prefix gets
 * "M[I]." for messages. */
static JsonObject *
element_object (JsonArray *a, guint i, const Member *m, const Member *known, char **prefix,
                const char *where, GError **error)
{
  *prefix = g_strdup_printf ("%s[%u].", m->name, i);
  JsonNode *node = json_array_get_element (a, i);
  if (!JSON_NODE_HOLDS_OBJECT (node)) {
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s[%u]' must be an object, not "
                 "%s (%s must be %s)", where, m->name, i, node_kind (node), m->name, m->must);
    return NULL;
  }
  JsonObject *o = json_node_get_object (node);
  return members_known (o, known, *prefix, where, error) ? o : NULL;
}

/* The format and its version, checked before anything else. */
static gboolean
check_format (JsonObject *o, const char *where, GError **error)
{
  const Member *f = &top_members[TOP_FORMAT], *v = &top_members[TOP_FORMAT_VERSION];
  if (json_object_has_member (o, f->name)) {
    const char *format = get_string (o, "", f, where, error);
    if (format == NULL)
      return FALSE;
    if (strcmp (format, SEDP_BUNDLE_FORMAT) != 0) {
      g_autofree char *shown = g_strdup_printf ("'%s' (not a sedp bundle manifest)", format);
      return member_fail (where, "", f, shown, error);
    }
  }
  gint64 version = 0;
  if (json_object_has_member (o, v->name) && !get_int (o, "", v, G_MININT64, &version, where,
                                                       error))
    return FALSE;
  if (version == SEDP_BUNDLE_FORMAT_VERSION || !json_object_has_member (o, v->name))
    return TRUE;
  return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST,
                      "%s: member 'format_version' is %" G_GINT64_FORMAT ": this sedp reads "
                      "bundles of format version %d only (pack the bundle with this sedp, or "
                      "upgrade the server)", where, version, SEDP_BUNDLE_FORMAT_VERSION);
}

/* name, version, created, hash_key and model. */
static gboolean
read_scalars (JsonObject *o, SedpBundleManifest *m, const char *where, GError **error)
{
  const Member *t = top_members;
  const char *name = get_string (o, "", &t[TOP_NAME], where, error);
  if (name == NULL || !get_int (o, "", &t[TOP_VERSION], 1, &m->version, where, error))
    return FALSE;
  g_autoptr (GError) bad = NULL;
  if (!sedp_bundle_name_check (name, &bad))
    return bundle_fail (error, SEDP_BUNDLE_ERROR_BAD_NAME, "%s: member 'name': %s", where,
                        bad->message);
  m->name = g_strdup (name);
  const char *created = get_string (o, "", &t[TOP_CREATED], where, error);
  if (created == NULL)
    return FALSE;
  g_autoptr (GDateTime) when = g_date_time_new_from_iso8601 (created, NULL);
  if (when == NULL) {
    g_autofree char *shown = g_strdup_printf ("'%s'", created);
    return member_fail (where, "", &t[TOP_CREATED], shown, error);
  }
  m->created = g_strdup (created);
  if (!get_hex (o, "", &t[TOP_HASH_KEY], m->hash_key, SEDP_BUNDLE_HASH_KEY_BYTES, where, error))
    return FALSE;
  const char *model = get_string (o, "", &t[TOP_MODEL], where, error);
  if (model == NULL || !sedp_bundle_path_check (model, where, "model", error))
    return FALSE;
  m->model = g_strdup (model);
  return TRUE;
}

/* cubes: 1 or more distinct paths. */
static gboolean
read_cubes (JsonObject *o, SedpBundleManifest *m, const char *where, GError **error)
{
  const Member *c = &top_members[TOP_CUBES];
  JsonArray *a = get_array (o, "", c, where, error);
  if (a == NULL)
    return FALSE;
  if (json_array_get_length (a) == 0)
    return member_fail (where, "", c, "an empty array", error);
  for (guint i = 0; i < json_array_get_length (a); i++) {
    JsonNode *node = json_array_get_element (a, i);
    g_autofree char *member = g_strdup_printf ("cubes[%u]", i);
    if (!JSON_NODE_HOLDS_VALUE (node) || json_node_get_value_type (node) != G_TYPE_STRING)
      return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s' must be a string "
                          "(a cube folder's path in the bundle), not %s", where, member,
                          node_kind (node));
    const char *path = valid_text (json_node_get_string (node), where, "", member, error);
    if (path == NULL || !sedp_bundle_path_check (path, where, member, error))
      return FALSE;
    if (g_ptr_array_find_with_equal_func (m->cubes, path, g_str_equal, NULL))
      return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s': cube '%s' is "
                          "listed twice", where, member, path);
    g_ptr_array_add (m->cubes, g_strdup (path));
  }
  return TRUE;
}

/* One {name, dtype, shape} object into @to. */
static gboolean
read_tensor (JsonObject *o, const char *prefix, GPtrArray *to, const char *where, GError **error)
{
  const Member *t = tensor_members;
  const char *name = get_string (o, prefix, &t[TENSOR_NAME], where, error);
  const char *dtype = name ? get_string (o, prefix, &t[TENSOR_DTYPE], where, error) : NULL;
  JsonArray *shape = dtype ? get_array (o, prefix, &t[TENSOR_SHAPE], where, error) : NULL;
  if (shape == NULL)
    return FALSE;
  if (*name == '\0' || *dtype == '\0')
    return member_fail (where, prefix, *name ? &t[TENSOR_DTYPE] : &t[TENSOR_NAME],
                        "an empty string", error);
  guint rank = json_array_get_length (shape);
  g_autofree gint64 *dims = g_new (gint64, MAX (rank, 1));
  for (guint k = 0; k < rank; k++) {
    JsonNode *node = json_array_get_element (shape, k);
    gboolean is_int = JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) == G_TYPE_INT64;
    dims[k] = is_int ? json_node_get_int (node) : -2;
    if (dims[k] < -1) {
      g_autofree char *shown = g_strdup_printf ("%s at [%u]", is_int ? "a number below -1"
                                                                     : node_kind (node), k);
      return member_fail (where, prefix, &t[TENSOR_SHAPE], shown, error);
    }
  }
  sedp_bundle_manifest_add_tensor (to, name, dtype, rank, dims);
  return TRUE;
}

/* inputs or outputs (@which): an array of tensor objects. */
static gboolean
read_tensors (JsonObject *o, int which, GPtrArray *to, const char *where, GError **error)
{
  const Member *m = &top_members[which];
  JsonArray *a = get_array (o, "", m, where, error);
  if (a == NULL)
    return FALSE;
  for (guint i = 0; i < json_array_get_length (a); i++) {
    g_autofree char *prefix = NULL;
    JsonObject *t = element_object (a, i, m, tensor_members, &prefix, where, error);
    if (t == NULL || !read_tensor (t, prefix, to, where, error))
      return FALSE;
  }
  return TRUE;
}

/* One {path, size, blake2b} object into @m's files. */
static gboolean
read_file (JsonObject *o, const char *prefix, SedpBundleManifest *m, const char *where,
           GError **error)
{
  const Member *f = file_members;
  const char *path = get_string (o, prefix, &f[FILE_PATH], where, error);
  g_autofree char *member = g_strconcat (prefix, "path", NULL);
  if (path == NULL || !sedp_bundle_path_check (path, where, member, error))
    return FALSE;
  gint64 size = 0;
  guint8 digest[SEDP_BUNDLE_DIGEST_BYTES];
  if (!get_int (o, prefix, &f[FILE_SIZE], 0, &size, where, error) ||
      !get_hex (o, prefix, &f[FILE_BLAKE2B], digest, sizeof digest, where, error))
    return FALSE;
  if (sedp_bundle_manifest_find_file (m, path))
    return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s': file '%s' is listed "
                        "twice", where, member, path);
  sedp_bundle_manifest_add_file (m, path, size, digest);
  return TRUE;
}

static gboolean
read_files (JsonObject *o, SedpBundleManifest *m, const char *where, GError **error)
{
  const Member *f = &top_members[TOP_FILES];
  JsonArray *a = get_array (o, "", f, where, error);
  if (a == NULL)
    return FALSE;
  for (guint i = 0; i < json_array_get_length (a); i++) {
    g_autofree char *prefix = NULL;
    JsonObject *file = element_object (a, i, f, file_members, &prefix, where, error);
    if (file == NULL || !read_file (file, prefix, m, where, error))
      return FALSE;
  }
  return TRUE;
}

/* The model and every cube's meta are among the files. */
static gboolean
cross_check (const SedpBundleManifest *m, const char *where, GError **error)
{
  if (sedp_bundle_manifest_find_file (m, m->model) == NULL)
    return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member 'model': '%s' is not "
                        "among the files (member 'files' must list it)", where, m->model);
  for (guint i = 0; i < m->cubes->len; i++) {
    g_autofree char *meta = g_build_path ("/", m->cubes->pdata[i], CUBE_META_FILE, NULL);
    if (sedp_bundle_manifest_find_file (m, meta) == NULL)
      return bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member 'cubes[%u]': cube '%s' "
                          "has no '%s' among the files (member 'files' must list it)", where, i,
                          (const char *) m->cubes->pdata[i], meta);
  }
  return TRUE;
}

/* Counts members per object as the parser reads them, to refuse a member given twice (the
 * parser would keep the last one silently). */
typedef struct {
  GHashTable *seen; /* "OBJECT-ADDRESS/NAME" */
  char *duplicate;  /* the first member seen twice */
} Duplicates;

static void
on_object_member (JsonParser *parser, JsonObject *object, const char *name, gpointer user_data)
{
  (void) parser;
  Duplicates *d = user_data;
  char *key = g_strdup_printf ("%p/%s", (void *) object, name);
  if (!g_hash_table_add (d->seen, key) && d->duplicate == NULL)
    d->duplicate = g_strdup (name);
}

/* The root object of the JSON text, with no member twice; NULL with MANIFEST. */
static JsonNode *
parse_json (const char *data, gsize size, const char *where, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  Duplicates d = {g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL), NULL};
  g_signal_connect (parser, "object-member", G_CALLBACK (on_object_member), &d);
  g_autoptr (GError) local = NULL;
  gboolean ok = json_parser_load_from_data (parser, data, (gssize) size, &local);
  g_hash_table_unref (d.seen);
  g_autofree char *duplicate = d.duplicate;
  JsonNode *root = ok ? json_parser_get_root (parser) : NULL;
  if (!ok)
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: not JSON: %s (the manifest is damaged: "
                 "pack the bundle again)", where, local->message);
  else if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: not a JSON object (a manifest is one "
                 "object: {\"format\": \"" SEDP_BUNDLE_FORMAT "\", …})", where);
  else if (duplicate)
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: member '%s' appears twice in one "
                 "object (each member must appear once)", where, duplicate);
  else
    return json_node_copy (root);
  return NULL;
}

/* Every member of the root object @o, into @m. */
static gboolean
read_manifest (JsonObject *o, SedpBundleManifest *m, const char *where, GError **error)
{
  return check_format (o, where, error) && members_known (o, top_members, "", where, error) &&
         read_scalars (o, m, where, error) && read_cubes (o, m, where, error) &&
         read_tensors (o, TOP_INPUTS, m->inputs, where, error) &&
         read_tensors (o, TOP_OUTPUTS, m->outputs, where, error) &&
         read_files (o, m, where, error) && cross_check (m, where, error);
}

SedpBundleManifest *
sedp_bundle_manifest_parse (const char *data, gsize size, const char *where, GError **error)
{
  g_return_val_if_fail (data != NULL || size == 0, NULL);
  g_return_val_if_fail (where != NULL, NULL);
  if (size > SEDP_BUNDLE_MAX_MANIFEST_BYTES) {
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: %" G_GSIZE_FORMAT " bytes, more than "
                 "the %" G_GSIZE_FORMAT " a manifest may have", where, size,
                 SEDP_BUNDLE_MAX_MANIFEST_BYTES);
    return NULL;
  }
  g_autoptr (JsonNode) root = parse_json (data ? data : "", size, where, error);
  if (root == NULL)
    return NULL;
  g_autoptr (SedpBundleManifest) m = sedp_bundle_manifest_new ();
  if (!read_manifest (json_node_get_object (root), m, where, error))
    return NULL;
  return g_steal_pointer (&m);
}

/* The bytes of the open file @fd, at most SEDP_BUNDLE_MAX_MANIFEST_BYTES. */
static GBytes *
read_capped (int fd, const char *path, GError **error)
{
  g_autoptr (GByteArray) buf = g_byte_array_new ();
  g_autofree guint8 *chunk = g_malloc (BUNDLE_CHUNK);
  for (;;) {
    gssize r = read (fd, chunk, BUNDLE_CHUNK);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      bundle_fail_errno (error, errno, "cannot read", path);
      return NULL;
    }
    if (r == 0)
      return g_byte_array_free_to_bytes (g_steal_pointer (&buf));
    if (buf->len + (gsize) r > SEDP_BUNDLE_MAX_MANIFEST_BYTES) {
      bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: more than the %" G_GSIZE_FORMAT
                   " bytes a manifest may have", path, SEDP_BUNDLE_MAX_MANIFEST_BYTES);
      return NULL;
    }
    g_byte_array_append (buf, chunk, (guint) r);
  }
}

GBytes *
sedp_bundle_manifest_read (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT)
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: missing (every bundle has a manifest: "
                 "make bundles with sedp model pack)", path);
  else if (fd < 0 && errno == ELOOP)
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: a symbolic link (the manifest must be "
                 "a regular file of the bundle)", path);
  else if (fd < 0)
    bundle_fail_errno (error, errno, "cannot open", path);
  if (fd < 0)
    return NULL;
  struct stat st;
  GBytes *bytes = NULL;
  if (fstat (fd, &st) != 0)
    bundle_fail_errno (error, errno, "cannot stat", path);
  else if (!S_ISREG (st.st_mode))
    bundle_fail (error, SEDP_BUNDLE_ERROR_MANIFEST, "%s: not a regular file", path);
  else
    bytes = read_capped (fd, path, error);
  close (fd);
  return bytes;
}
