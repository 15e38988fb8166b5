/* sedp tests — the JSON scanner of the request decoders (core/io/json-scan.c): the tokens of
 * valid texts, and the refusal of every kind of text that is not JSON by RFC 8259 (the cases
 * are written from the RFC's grammar and RFC 3629's UTF-8 table, not from the scanner's output),
 * callbacks that stop the scan, and nesting deeper than any decoder allows. */
#include "test-common.h"

#include "io/json-scan.h"

#include <string.h>

/* The tokens as text: "{ k:a [ n:1 s:x b:1 null ] }". */
typedef struct {
  GString *out;
  int stop_after; /* stop at this token (1-based); 0: never */
  int n;
} Trace;

static int
token (Trace *t, const char *fmt, ...) G_GNUC_PRINTF (2, 3);

static int
token (Trace *t, const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  if (t->out->len)
    g_string_append_c (t->out, ' ');
  g_string_append_vprintf (t->out, fmt, ap);
  va_end (ap);
  return ++t->n != t->stop_after;
}

static int on_null (void *c) { return token (c, "null"); }
static int on_boolean (void *c, int v) { return token (c, "b:%d", v); }
static int on_number (void *c, const char *p, size_t n) { return token (c, "n:%.*s", (int) n, p); }
static int on_string (void *c, const unsigned char *p, size_t n)
{
  g_autofree char *raw = g_strndup ((const char *) p, n);
  g_autofree char *e = g_strescape (raw, "\xc3\xa9\xf0\x9f\x98\x80");
  return token (c, "s:%s", e);
}
static int on_key (void *c, const unsigned char *p, size_t n) { return token (c, "k:%.*s", (int) n, p); }
static int on_start_map (void *c) { return token (c, "{"); }
static int on_end_map (void *c) { return token (c, "}"); }
static int on_start_array (void *c) { return token (c, "["); }
static int on_end_array (void *c) { return token (c, "]"); }

static const SedpJsonCallbacks callbacks = {on_null, on_boolean, on_number, on_string, on_start_map,
                                            on_key, on_end_map, on_start_array, on_end_array};

static SedpJsonScanStatus
scan (const char *text, gsize len, char **trace, const char **why, int stop_after)
{
  Trace t = {g_string_new (NULL), stop_after, 0};
  gsize at;
  SedpJsonScanStatus st = sedp_json_scan ((const guint8 *) text, len, &callbacks, &t, why, &at);
  *trace = g_string_free (t.out, FALSE);
  return st;
}

static void
test_valid (void)
{
  static const struct {
    const char *text, *trace;
  } cases[] = {
    {"{\"a\":[1,-2.5e3,true,false,null,\"x\"]}", "{ k:a [ n:1 n:-2.5e3 b:1 b:0 null s:x ] }"},
    {" \t\r\n[ ] ", "[ ]"},
    {"{}", "{ }"},
    {"0", "n:0"},
    {"-0.0E+10", "n:-0.0E+10"},
    {"1e-7", "n:1e-7"},
    {"\"\"", "s:"},
    {"[[[]],{}]", "[ [ [ ] ] { } ]"},
    {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "s:\\\"\\\\/\\b\\f\\n\\r\\t"},
    {"\"\\u00e9\\ud83d\\ude00\"", "s:\xc3\xa9\xf0\x9f\x98\x80"},  /* é and 😀 by escapes */
    {"\"\xc3\xa9\xf0\x9f\x98\x80\"", "s:\xc3\xa9\xf0\x9f\x98\x80"}, /* the same as UTF-8 */
    {"\"\xef\xbf\xbf\xf4\x8f\xbf\xbf\"", "s:\\357\\277\\277\\364\\217\\277\\277"}, /* U+FFFF, U+10FFFF */
    {"{\"k\\u0041\":{\"\":1}}", "{ k:kA { k: n:1 } }"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *trace = NULL;
    const char *why = NULL;
    SedpJsonScanStatus st = scan (cases[i].text, strlen (cases[i].text), &trace, &why, 0);
    if (st != SEDP_JSON_SCAN_OK || strcmp (trace, cases[i].trace) != 0)
      fprintf (stderr, "\n  %s: status %d (%s), trace '%s', expected '%s'\n", cases[i].text, st,
               why ? why : "", trace, cases[i].trace);
    CU_ASSERT_EQUAL (st, SEDP_JSON_SCAN_OK);
    CU_ASSERT_STRING_EQUAL (trace, cases[i].trace);
  }
}

static void
test_invalid (void)
{
  static const struct {
    const char *text, *why;
  } cases[] = {
    {"", "ends before"},          {"  ", "ends before"},          {"{", "ends before"},
    {"[1,]", "unexpected"},       {"{\"a\":1,}", "a key"},         {"{a:1}", "a key"},
    {"01", "text after"},         {"1.", "invalid number"},       {".5", "unexpected"},
    {"-", "invalid number"},      {"+1", "unexpected"},           {"1e", "invalid number"},
    {"1e+", "invalid number"},    {"NaN", "unexpected"},          {"Infinity", "unexpected"},
    {"-Infinity", "invalid number"}, {"tru", "unexpected"},       {"nul", "unexpected"},
    {"True", "unexpected"},       {"\"abc", "does not end"},      {"\"\x01\"", "control"},
    {"\"a\nb\"", "control"},      {"\"\\x\"", "invalid escape"},  {"\"\\u12\"", "invalid escape"},
    {"\"\\u12g4\"", "invalid escape"}, {"\"\\ud800\"", "invalid escape"},
    {"\"\\ud800\\u0041\"", "invalid escape"}, {"\"\\udc00\"", "invalid escape"},
    {"\"\\", "invalid escape"},   {"\"\xc3\"", "UTF-8"},           {"\"\xc3(\"", "UTF-8"},
    {"\"\xc0\xaf\"", "UTF-8"},    {"\"\xe0\x80\xaf\"", "UTF-8"},   {"\"\xed\xa0\x80\"", "UTF-8"},
    {"\"\xf4\x90\x80\x80\"", "UTF-8"}, {"\"\xf8\x88\x80\x80\x80\"", "UTF-8"},
    {"\"\xff\"", "UTF-8"},        {"\"\x80\"", "UTF-8"},           {"[1] 2", "text after"},
    {"[1}", "expected ',' or ']'"}, {"{\"a\" 1}", "':'"},          {"{\"a\":1 \"b\":2}", "',' or '}'"},
    {"[1 2]", "',' or ']'"},      {"[\"a\":1]", "',' or ']'"},     {"{\"a\"}", "':'"},
    {"{,}", "a key"},             {"[,1]", "unexpected"},         {"\"a\" \"b\"", "text after"},
  };
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
    g_autofree char *trace = NULL;
    const char *why = NULL;
    SedpJsonScanStatus st = scan (cases[i].text, strlen (cases[i].text), &trace, &why, 0);
    if (st != SEDP_JSON_SCAN_INVALID || why == NULL || strstr (why, cases[i].why) == NULL)
      fprintf (stderr, "\n  case %u '%s': status %d, why '%s', expected '%s'\n", i, cases[i].text, st,
               why ? why : "", cases[i].why);
    CU_ASSERT_EQUAL (st, SEDP_JSON_SCAN_INVALID);
    CU_ASSERT_PTR_NOT_NULL_FATAL (why);
    CU_ASSERT_PTR_NOT_NULL (strstr (why, cases[i].why));
  }
  /* A NUL byte in the text is not JSON either (nor in a string, raw). */
  g_autofree char *trace = NULL;
  const char *why = NULL;
  CU_ASSERT_EQUAL (scan ("[1,\0]", 5, &trace, &why, 0), SEDP_JSON_SCAN_INVALID);
  g_clear_pointer (&trace, g_free);
  CU_ASSERT_EQUAL (scan ("\"a\0\"", 4, &trace, &why, 0), SEDP_JSON_SCAN_INVALID);
}

static void
test_stop (void)
{
  /* Each token in turn stops the scan: nothing after it is called. */
  const char *text = "{\"a\":[1,\"s\",true,null,{}]}";
  for (int k = 1; k <= 10; k++) {
    g_autofree char *trace = NULL;
    const char *why = NULL;
    CU_ASSERT_EQUAL (scan (text, strlen (text), &trace, &why, k), SEDP_JSON_SCAN_CANCELLED);
    g_auto (GStrv) tokens = g_strsplit (trace, " ", -1);
    CU_ASSERT_EQUAL (g_strv_length (tokens), (guint) k);
  }
}

static void
test_deep (void)
{
  /* A million open brackets: the stack grows with the text, no recursion; the text ends first. */
  gsize n = 1000000;
  g_autofree char *text = g_malloc (n);
  memset (text, '[', n);
  Trace t = {g_string_new (NULL), 0, 0};
  const char *why = NULL;
  static const SedpJsonCallbacks none = {0};
  CU_ASSERT_EQUAL (sedp_json_scan ((const guint8 *) text, n, &none, &t, &why, NULL),
                   SEDP_JSON_SCAN_INVALID);
  CU_ASSERT_PTR_NOT_NULL (strstr (why, "ends before"));
  g_string_free (t.out, TRUE);
}

int
main (void)
{
  if (CU_initialize_registry () != CUE_SUCCESS)
    return 1;
  CU_pSuite s = CU_add_suite ("json-scan", NULL, NULL);
  CU_add_test (s, "valid texts and their tokens", test_valid);
  CU_add_test (s, "every kind of invalid text", test_invalid);
  CU_add_test (s, "a callback stops the scan", test_stop);
  CU_add_test (s, "a million levels", test_deep);
  return sedp_test_run ();
}
