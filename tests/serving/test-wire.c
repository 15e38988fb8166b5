/* sedp serving tests — the protobuf wire decoder of core/io/protocol.c against protobuf-c.
 *
 * The decoder walks PredictRequest bytes in place. These tests check it three ways:
 * 1. differential: random requests are packed by protobuf-c, decoded by sedp, and compared
 *    column by column with the same requests written as JSON (which protocol.md says must decode
 *    to the same frames);
 * 2. encodings protobuf-c never writes but the wire format allows: unpacked repeated ids and
 *    floats, packed runs split in two, unknown fields of every wire type, a second `user` field,
 *    a map entry without a value;
 * 3. robustness: every prefix of a valid request and random byte flips either decode or fail
 *    with an "invalid request" error, never crash (run under ASan and valgrind by the suite). */
#include "../runtime/runtime-helpers.h"

#include "io/protocol.h"
#include "sedp.pb-c.h"

#include <math.h>
#include <string.h>

static const char *const names[] = {"a", "b", "c", "d", "e", "f"};

/* Feature kinds per name: a=int, b=float, c=string, d=ids, e=floats(3), f=ids or int (mixes). */
static void
random_feature (GRand *r, guint name, Sedp__Serving__Feature *f, Sedp__Serving__IdList *il,
                guint64 *ids, Sedp__Serving__FloatList *fl, float *floats, char *text)
{
  sedp__serving__feature__init (f);
  switch (name) {
  case 0:
    f->value_case = SEDP__SERVING__FEATURE__VALUE_INT_VALUE;
    f->int_value = g_rand_int_range (r, -1000000, 1000000);
    break;
  case 1:
    f->value_case = SEDP__SERVING__FEATURE__VALUE_FLOAT_VALUE;
    f->float_value = (float) g_rand_double_range (r, -10, 10);
    break;
  case 2:
    f->value_case = SEDP__SERVING__FEATURE__VALUE_STRING_VALUE;
    g_snprintf (text, 16, "s%u", g_rand_int_range (r, 0, 1000));
    f->string_value = text;
    break;
  case 4:
    sedp__serving__float_list__init (fl);
    fl->n_values = 3;
    for (guint k = 0; k < 3; k++)
      floats[k] = (float) g_rand_double_range (r, -1, 1);
    fl->values = floats;
    f->value_case = SEDP__SERVING__FEATURE__VALUE_FLOATS;
    f->floats = fl;
    break;
  default:
    sedp__serving__id_list__init (il);
    il->n_ids = (size_t) g_rand_int_range (r, 0, 5);
    for (size_t k = 0; k < il->n_ids; k++)
      ids[k] = g_rand_boolean (r) ? (guint64) g_rand_int (r) : ((guint64) g_rand_int (r) << 32 | g_rand_int (r));
    il->ids = ids;
    f->value_case = SEDP__SERVING__FEATURE__VALUE_IDS;
    f->ids = il;
  }
}

/* One feature as the JSON of protocol.md (ids as strings: exact whatever their size). */
static void
feature_json (const Sedp__Serving__Feature *f, GString *out)
{
  switch (f->value_case) {
  case SEDP__SERVING__FEATURE__VALUE_INT_VALUE:
    g_string_append_printf (out, "{\"int_value\": %" G_GINT64_FORMAT "}", (gint64) f->int_value);
    break;
  case SEDP__SERVING__FEATURE__VALUE_FLOAT_VALUE:
    g_string_append_printf (out, "{\"float_value\": %.9g}", (double) f->float_value);
    break;
  case SEDP__SERVING__FEATURE__VALUE_STRING_VALUE:
    g_string_append_printf (out, "{\"string_value\": \"%s\"}", f->string_value);
    break;
  case SEDP__SERVING__FEATURE__VALUE_FLOATS:
    g_string_append (out, "{\"floats\": [");
    for (size_t k = 0; k < f->floats->n_values; k++)
      g_string_append_printf (out, "%s%.9g", k ? ", " : "", (double) f->floats->values[k]);
    g_string_append (out, "]}");
    break;
  default:
    g_string_append (out, "{\"ids\": [");
    for (size_t k = 0; k < f->ids->n_ids; k++)
      g_string_append_printf (out, "%s\"%" G_GUINT64_FORMAT "\"", k ? ", " : "", (guint64) f->ids->ids[k]);
    g_string_append (out, "]}");
  }
}

static void
assert_frames_equal (const SedpFrame *a, const SedpFrame *b)
{
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_rows (a), sedp_frame_get_n_rows (b));
  CU_ASSERT_EQUAL_FATAL (sedp_frame_get_n_columns (a), sedp_frame_get_n_columns (b));
  guint rows = sedp_frame_get_n_rows (a);
  for (guint c = 0; c < sedp_frame_get_n_columns (a); c++) {
    const SedpColumn *x = sedp_frame_get_column_at (a, c);
    const SedpColumn *y = sedp_frame_get_column (b, sedp_column_get_name (x));
    CU_ASSERT_PTR_NOT_NULL_FATAL (y);
    CU_ASSERT_EQUAL_FATAL (sedp_column_get_column_type (x), sedp_column_get_column_type (y));
    CU_ASSERT_EQUAL_FATAL (sedp_column_get_width (x), sedp_column_get_width (y));
    guint w = sedp_column_get_width (x);
    for (guint r = 0; r < rows; r++) {
      switch (sedp_column_get_column_type (x)) {
      case SEDP_COLUMN_INT64:
        CU_ASSERT_EQUAL (sedp_column_get_int64 (x)[r], sedp_column_get_int64 (y)[r]);
        break;
      case SEDP_COLUMN_FLOAT32:
        CU_ASSERT (memcmp (sedp_column_get_float32 (x) + (gsize) r * w,
                           sedp_column_get_float32 (y) + (gsize) r * w, w * sizeof (float)) == 0);
        break;
      case SEDP_COLUMN_STRING:
        CU_ASSERT (g_strcmp0 (sedp_column_get_string (x, r), sedp_column_get_string (y, r)) == 0);
        break;
      case SEDP_COLUMN_IDLIST: {
        guint nx = 0, ny = 0;
        const guint64 *ix = sedp_column_get_ids (x, r, &nx), *iy = sedp_column_get_ids (y, r, &ny);
        CU_ASSERT_EQUAL_FATAL (nx, ny);
        CU_ASSERT (nx == 0 || memcmp (ix, iy, nx * sizeof (guint64)) == 0);
        break;
      }
      default:
        break;
      }
    }
  }
}

static gboolean
decode (const void *data, gsize size, const char *type, SedpFrame **rf, SedpProtocolRequest *req,
        GError **error)
{
  *rf = sedp_frame_new (1);
  return sedp_protocol_decode_request (data, size, type, SEDP_PROTOCOL_AUTO, 0, *rf, req, error);
}

static void
test_wire_matches_json (void)
{
  GRand *r = g_rand_new_with_seed (42);
  guint both_ok = 0, both_failed = 0;
  for (guint round = 0; round < 300; round++) {
    guint n = (guint) g_rand_int_range (r, 1, 12);
    /* Storage for n items of up to 6 features each, plus the user's. */
    guint slots = (n + 1) * 6;
    g_autofree Sedp__Serving__Feature *f = g_new0 (Sedp__Serving__Feature, slots);
    g_autofree Sedp__Serving__IdList *il = g_new0 (Sedp__Serving__IdList, slots);
    g_autofree guint64 *ids = g_new0 (guint64, slots * 5);
    g_autofree Sedp__Serving__FloatList *fl = g_new0 (Sedp__Serving__FloatList, slots);
    g_autofree float *floats = g_new0 (float, slots * 3);
    g_autofree char *text = g_new0 (char, slots * 16);
    g_autofree Sedp__Serving__Item__FeaturesEntry *ie = g_new0 (Sedp__Serving__Item__FeaturesEntry, slots);
    g_autofree Sedp__Serving__Item__FeaturesEntry **iep = g_new0 (Sedp__Serving__Item__FeaturesEntry *, slots);
    Sedp__Serving__User__FeaturesEntry ue[6], *uep[6];
    g_autofree Sedp__Serving__Item *items = g_new0 (Sedp__Serving__Item, n);
    g_autofree Sedp__Serving__Item **itemp = g_new0 (Sedp__Serving__Item *, n);
    Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
    Sedp__Serving__User user = SEDP__SERVING__USER__INIT;
    g_autoptr (GString) json = g_string_new (NULL);
    char rid[16];
    g_snprintf (rid, sizeof rid, "r%u", round);
    m.request_id = rid;
    m.top_k = (uint32_t) g_rand_int_range (r, 0, 20);
    g_string_append_printf (json, "{\"request_id\": \"%s\", \"top_k\": %u, ", rid, m.top_k);
    guint s = 0;
    if (g_rand_boolean (r)) {
      m.user = &user;
      user.id = (guint64) g_rand_int (r);
      g_string_append_printf (json, "\"user\": {\"id\": %" G_GUINT64_FORMAT ", \"features\": {",
                              (guint64) user.id);
      guint nf = (guint) g_rand_int_range (r, 0, 6);
      for (guint k = 0; k < nf; k++, s++) {
        random_feature (r, k, &f[s], &il[s], ids + s * 5, &fl[s], floats + s * 3, text + s * 16);
        sedp__serving__user__features_entry__init (&ue[k]);
        ue[k].key = (char *) names[k];
        ue[k].value = &f[s];
        uep[k] = &ue[k];
        g_string_append_printf (json, "%s\"%s\": ", k ? ", " : "", names[k]);
        feature_json (&f[s], json);
      }
      user.n_features = nf;
      user.features = uep;
      g_string_append (json, "}}, ");
    }
    g_string_append (json, "\"items\": [");
    for (guint i = 0; i < n; i++) {
      sedp__serving__item__init (&items[i]);
      itemp[i] = &items[i];
      items[i].id = (guint64) g_rand_int (r);
      g_string_append_printf (json, "%s{\"id\": %" G_GUINT64_FORMAT, i ? ", " : "", (guint64) items[i].id);
      if (g_rand_int_range (r, 0, 4)) {
        items[i].escore_present_case = SEDP__SERVING__ITEM__ESCORE_PRESENT_ESCORE;
        items[i].escore = (float) g_rand_double (r);
        g_string_append_printf (json, ", \"escore\": %.9g", (double) items[i].escore);
      }
      g_string_append (json, ", \"features\": {");
      /* A random subset of the names, in a random rotation (order varies by item). */
      guint first = (guint) g_rand_int_range (r, 0, 6), nf = (guint) g_rand_int_range (r, 0, 7);
      items[i].features = &iep[s];
      for (guint k = 0; k < nf; k++, s++) {
        guint name = (first + k) % 6;
        random_feature (r, name == 5 && g_rand_int_range (r, 0, 8) == 0 ? 0 : name, &f[s], &il[s],
                        ids + s * 5, &fl[s], floats + s * 3, text + s * 16);
        sedp__serving__item__features_entry__init (&ie[s]);
        ie[s].key = (char *) names[name];
        ie[s].value = &f[s];
        iep[s] = &ie[s];
        g_string_append_printf (json, "%s\"%s\": ", k ? ", " : "", names[name]);
        feature_json (&f[s], json);
      }
      items[i].n_features = nf;
      g_string_append (json, "}}");
    }
    g_string_append (json, "]}");
    m.n_items = n;
    m.items = itemp;
    gsize len = sedp__serving__predict_request__get_packed_size (&m);
    g_autofree guint8 *buf = g_malloc (MAX (len, 1));
    sedp__serving__predict_request__pack (&m, buf);

    SedpFrame *prf = NULL, *jrf = NULL;
    SedpProtocolRequest pr, jr;
    g_autoptr (GError) perr = NULL;
    g_autoptr (GError) jerr = NULL;
    gboolean pok = decode (buf, len, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF, &prf, &pr, &perr);
    gboolean jok = decode (json->str, json->len, SEDP_PROTOCOL_CONTENT_TYPE_JSON, &jrf, &jr, &jerr);
    if (pok != jok)
      fprintf (stderr, "\n  round %u: protobuf %s, JSON %s\n  %s\n", round, perr ? perr->message : "ok",
               jerr ? jerr->message : "ok", json->str);
    CU_ASSERT_EQUAL_FATAL (pok, jok);
    if (pok) {
      both_ok++;
      CU_ASSERT_STRING_EQUAL (pr.request_id, jr.request_id);
      CU_ASSERT_EQUAL (pr.top_k, jr.top_k);
      assert_frames_equal (prf, jrf);
      assert_frames_equal (pr.items, jr.items);
      sedp_protocol_request_clear (&pr);
      sedp_protocol_request_clear (&jr);
    } else {
      both_failed++;
    }
    sedp_frame_unref (prf);
    sedp_frame_unref (jrf);
  }
  /* Both outcomes were exercised: typing conflicts (f as ids and as an integer) fail both. */
  CU_ASSERT (both_ok > 100);
  CU_ASSERT (both_failed > 5);
  g_rand_free (r);
}

/* ---- hand-written encodings ---- */

static void
put_varint (GByteArray *b, guint64 v)
{
  do {
    guint8 byte = (guint8) (v & 0x7f);
    v >>= 7;
    if (v)
      byte |= 0x80;
    g_byte_array_append (b, &byte, 1);
  } while (v);
}

static void
put_tag (GByteArray *b, guint field, guint type)
{
  put_varint (b, (guint64) field << 3 | type);
}

static void
put_len (GByteArray *b, guint field, const GByteArray *inner)
{
  put_tag (b, field, 2);
  put_varint (b, inner->len);
  g_byte_array_append (b, inner->data, inner->len);
}

static void
put_float (GByteArray *b, guint field, float v)
{
  put_tag (b, field, 5);
  g_byte_array_append (b, (const guint8 *) &v, 4);
}

/* Unknown fields of every wire type, as a newer client would send. */
static void
put_unknown (GByteArray *b)
{
  put_tag (b, 99, 0);
  put_varint (b, 12345);
  put_tag (b, 98, 1);
  guint8 eight[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  g_byte_array_append (b, eight, 8);
  put_tag (b, 97, 2);
  put_varint (b, 3);
  g_byte_array_append (b, (const guint8 *) "xyz", 3);
  put_float (b, 96, 1.0f);
}

static GByteArray *
entry (const char *key, const GByteArray *feature)
{
  GByteArray *e = g_byte_array_new ();
  g_autoptr (GByteArray) k = g_byte_array_new ();
  g_byte_array_append (k, (const guint8 *) key, (guint) strlen (key));
  put_len (e, 1, k);
  if (feature)
    put_len (e, 2, feature);
  return e;
}

static void
test_wire_other_encodings (void)
{
  /* ids 5, 6, 7: 5 unpacked, then a packed run of 6, 7 */
  g_autoptr (GByteArray) idlist = g_byte_array_new ();
  put_tag (idlist, 1, 0);
  put_varint (idlist, 5);
  g_autoptr (GByteArray) run = g_byte_array_new ();
  put_varint (run, 6);
  put_varint (run, 7);
  put_len (idlist, 1, run);
  put_unknown (idlist);
  g_autoptr (GByteArray) ids_feature = g_byte_array_new ();
  put_len (ids_feature, 4, idlist);
  /* floats 0.5, 1.5, 2.5: a packed run of two, then one unpacked */
  g_autoptr (GByteArray) floatlist = g_byte_array_new ();
  g_autoptr (GByteArray) frun = g_byte_array_new ();
  float two[2] = {0.5f, 1.5f};
  g_byte_array_append (frun, (const guint8 *) two, 8);
  put_len (floatlist, 1, frun);
  put_float (floatlist, 1, 2.5f);
  g_autoptr (GByteArray) floats_feature = g_byte_array_new ();
  put_unknown (floats_feature);
  put_len (floats_feature, 5, floatlist);
  /* a oneof set twice: the last (an int 9) wins */
  g_autoptr (GByteArray) twice = g_byte_array_new ();
  put_float (twice, 2, 3.0f);
  put_tag (twice, 1, 0);
  put_varint (twice, 9);

  g_autoptr (GByteArray) item = g_byte_array_new ();
  put_unknown (item);
  put_tag (item, 1, 0);
  put_varint (item, 42);
  g_autoptr (GByteArray) e1 = entry ("hist", ids_feature);
  g_autoptr (GByteArray) e2 = entry ("emb", floats_feature);
  g_autoptr (GByteArray) e3 = entry ("n", twice);
  g_autoptr (GByteArray) e4 = entry ("nothing", NULL); /* no value: no feature */
  put_len (item, 2, e1);
  put_len (item, 2, e2);
  put_len (item, 2, e3);
  put_len (item, 2, e4);
  put_float (item, 3, 0.75f);

  /* the user in two parts: id 7, then a feature (merged) */
  g_autoptr (GByteArray) user1 = g_byte_array_new ();
  put_tag (user1, 1, 0);
  put_varint (user1, 7);
  g_autoptr (GByteArray) user2 = g_byte_array_new ();
  g_autoptr (GByteArray) age = g_byte_array_new ();
  put_tag (age, 1, 0);
  put_varint (age, 30);
  g_autoptr (GByteArray) e5 = entry ("age", age);
  put_len (user2, 2, e5);

  g_autoptr (GByteArray) req = g_byte_array_new ();
  put_unknown (req);
  put_len (req, 2, user1);
  put_len (req, 3, item);
  put_len (req, 2, user2);
  put_tag (req, 5, 0);
  put_varint (req, 1);

  SedpFrame *rf = NULL;
  SedpProtocolRequest pr;
  g_autoptr (GError) error = NULL;
  gboolean ok = decode (req->data, req->len, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF, &rf, &pr, &error);
  if (error)
    fprintf (stderr, "\n  %s\n", error->message);
  CU_ASSERT_TRUE_FATAL (ok);
  CU_ASSERT_EQUAL (pr.top_k, 1);
  CU_ASSERT_EQUAL (int_at (rf, "user_id", 0), 7);
  CU_ASSERT_EQUAL (int_at (rf, "age", 0), 30);
  CU_ASSERT_EQUAL (int_at (pr.items, "item_id", 0), 42);
  CU_ASSERT_EQUAL (int_at (pr.items, "n", 0), 9);
  CU_ASSERT_PTR_NULL (sedp_frame_get_column (pr.items, "nothing"));
  guint n = 0;
  const guint64 *ids = sedp_column_get_ids (sedp_frame_get_column (pr.items, "hist"), 0, &n);
  CU_ASSERT_FATAL (n == 3);
  CU_ASSERT (ids[0] == 5 && ids[1] == 6 && ids[2] == 7);
  const SedpColumn *emb = sedp_frame_get_column (pr.items, "emb");
  CU_ASSERT_FATAL (emb && sedp_column_get_width (emb) == 3);
  CU_ASSERT (sedp_column_get_float32 (emb)[0] == 0.5f && sedp_column_get_float32 (emb)[2] == 2.5f);
  CU_ASSERT_EQUAL (sedp_column_get_float32 (sedp_frame_get_column (pr.items, "escore"))[0], 0.75f);
  sedp_protocol_request_clear (&pr);
  sedp_frame_unref (rf);
}

/* Errors that name the field. */
static void
test_wire_errors (void)
{
  static const struct {
    const char *what;
    const char *bytes;
    gsize len;
    const char *needle;
  } cases[] = {
    {"an item cut in its id", "\x1a\x02\x08\x80", 4, "items[0].id"},
    {"a feature entry longer than its item", "\x1a\x03\x12\x09\x0a", 5, "items[0].features"},
    {"a group (wire type 3)", "\x0b", 1, "malformed field"},
    {"field number 0", "\x00\x01", 2, "malformed field tag"},
    {"a varint of 11 bytes", "\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "deadline_ms"},
    {"a feature name that is not UTF-8", "\x1a\x08\x12\x06\x0a\x02\xff\xfe\x12\x00", 10, "not valid UTF-8"},
    /* names already columns skip the check, so a new name on a later item must still get it */
    {"a second item's new feature name that is not UTF-8",
     "\x1a\x09\x12\x07\x0a\x01x\x12\x02\x08\x01"
     "\x1a\x0a\x12\x08\x0a\x02\xff\xfe\x12\x02\x08\x01", 23,
     "items[1].features: a feature name is not valid UTF-8"},
    {"a request_id that is not UTF-8", "\x0a\x01\xff\x1a\x00", 5, "request_id"},
    {"packed floats of 5 bytes", "\x1a\x0e\x12\x0c\x0a\x01x\x12\x07\x2a\x05\x0a\x03\x01\x02\x03", 16, "items[0].features[\"x\"]"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    SedpFrame *rf = NULL;
    SedpProtocolRequest pr;
    g_autoptr (GError) error = NULL;
    gboolean ok = decode (cases[i].bytes, cases[i].len, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF, &rf, &pr, &error);
    if (ok || !strstr (error->message, cases[i].needle))
      fprintf (stderr, "\n  %s: %s\n", cases[i].what, error ? error->message : "decoded");
    CU_ASSERT_FALSE (ok);
    CU_ASSERT (error && strstr (error->message, "invalid request") && strstr (error->message, cases[i].needle));
    sedp_frame_unref (rf);
  }
}

/* Every prefix and random flips of a valid request: decoded or refused, never a crash. */
static void
test_wire_truncations_and_flips (void)
{
  Sedp__Serving__PredictRequest m = SEDP__SERVING__PREDICT_REQUEST__INIT;
  Sedp__Serving__Item it[3], *itp[3];
  Sedp__Serving__Feature f[3];
  Sedp__Serving__IdList il[3];
  Sedp__Serving__Item__FeaturesEntry e[3], *ep[3];
  guint64 ids[3][2] = {{1, 300}, {2, 70000}, {3, 1ull << 40}};
  for (guint i = 0; i < 3; i++) {
    sedp__serving__item__init (&it[i]);
    it[i].id = 10 + i;
    sedp__serving__id_list__init (&il[i]);
    il[i].n_ids = 2;
    il[i].ids = ids[i];
    sedp__serving__feature__init (&f[i]);
    f[i].value_case = SEDP__SERVING__FEATURE__VALUE_IDS;
    f[i].ids = &il[i];
    sedp__serving__item__features_entry__init (&e[i]);
    e[i].key = (char *) "tags";
    e[i].value = &f[i];
    ep[i] = &e[i];
    it[i].n_features = 1;
    it[i].features = &ep[i];
    itp[i] = &it[i];
  }
  m.request_id = (char *) "t";
  m.n_items = 3;
  m.items = itp;
  gsize len = sedp__serving__predict_request__get_packed_size (&m);
  g_autofree guint8 *buf = g_malloc (len);
  sedp__serving__predict_request__pack (&m, buf);
  guint decoded = 0;
  for (gsize cut = 0; cut <= len; cut++) {
    g_autofree guint8 *copy = g_memdup2 (buf, cut); /* exactly cut bytes: ASan sees overreads */
    SedpFrame *rf = NULL;
    SedpProtocolRequest pr;
    g_autoptr (GError) error = NULL;
    if (decode (copy, cut, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF, &rf, &pr, &error)) {
      decoded++;
      sedp_protocol_request_clear (&pr);
    } else {
      CU_ASSERT (error && strstr (error->message, "invalid request"));
    }
    sedp_frame_unref (rf);
  }
  CU_ASSERT (decoded >= 1); /* the whole message (and prefixes ending on an item boundary) */
  GRand *r = g_rand_new_with_seed (7);
  for (guint round = 0; round < 2000; round++) {
    g_autofree guint8 *copy = g_memdup2 (buf, len);
    for (guint k = 0, flips = (guint) g_rand_int_range (r, 1, 4); k < flips; k++)
      copy[g_rand_int_range (r, 0, (gint32) len)] ^= (guint8) g_rand_int_range (r, 1, 256);
    SedpFrame *rf = NULL;
    SedpProtocolRequest pr;
    g_autoptr (GError) error = NULL;
    if (decode (copy, len, SEDP_PROTOCOL_CONTENT_TYPE_PROTOBUF, &rf, &pr, &error))
      sedp_protocol_request_clear (&pr);
    else
      CU_ASSERT (error && strstr (error->message, "invalid request"));
    sedp_frame_unref (rf);
  }
  g_rand_free (r);
}

int
main (void)
{
  CU_initialize_registry ();
  CU_pSuite suite = CU_add_suite ("wire", NULL, NULL);
#define T(f) CU_add_test (suite, #f, f)
  T (test_wire_matches_json);
  T (test_wire_other_encodings);
  T (test_wire_errors);
  T (test_wire_truncations_and_flips);
  return sedp_test_run ();
}
