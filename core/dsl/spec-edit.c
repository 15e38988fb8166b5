/* sedp — editing one key of a pipeline file's text in place (sedp_pipeline_text_set, spec.h):
 * every other byte — comments, order, blank lines, line endings — is kept, so that a pipeline
 * written by `sedp tune` differs from its input only in the values it changed. */
#include "spec.h"

#include <string.h>

/* One line of the text: [start, end) without its ending, which runs to next. */
typedef struct {
  gsize start, end, next;
} Line;

/* Where a key is, or where it would go. */
typedef struct {
  gboolean group_found;
  gboolean key_found;
  gsize value_start, value_end; /* key_found: the value, without blanks around it */
  gsize insert_at;              /* group_found only: after the group's last key (or header) */
} Scan;

static gboolean
next_line (const char *text, gsize *pos, Line *line)
{
  if (text[*pos] == '\0')
    return FALSE;
  const char *eol = strchr (text + *pos, '\n');
  line->start = *pos;
  line->next = eol ? (gsize) (eol - text) + 1 : strlen (text);
  line->end = eol ? (gsize) (eol - text) : line->next;
  if (line->end > line->start && text[line->end - 1] == '\r')
    line->end--;
  *pos = line->next;
  return TRUE;
}

/* The group name as spec.c reads it: "stage" and the stage's name one blank apart, however
 * many the file has between them. */
static char *
canonical_group (const char *name, gsize n)
{
  if (n > 6 && strncmp (name, "stage ", 6) == 0) {
    gsize skip = 6;
    while (skip < n && name[skip] == ' ')
      skip++;
    g_autofree char *stage = g_strndup (name + skip, n - skip);
    return g_strconcat ("stage ", stage, NULL);
  }
  return g_strndup (name, n);
}

/* The group a header line opens, or NULL when @l is no header. */
static char *
header_group (const char *text, const Line *l)
{
  gsize s = l->start, e = l->end;
  while (s < e && g_ascii_isspace (text[s]))
    s++;
  while (e > s && g_ascii_isspace (text[e - 1]))
    e--;
  if (s == e || text[s] != '[' || text[e - 1] != ']')
    return NULL;
  return canonical_group (text + s + 1, e - s - 2);
}

/* Whether @l is a KEY = VALUE line; its key's extent and where its value starts. */
static gboolean
key_line (const char *text, const Line *l, gsize *key_start, gsize *key_end, gsize *eq)
{
  gsize s = l->start;
  while (s < l->end && g_ascii_isspace (text[s]))
    s++;
  const char *p = memchr (text + s, '=', l->end - s);
  if (s == l->end || text[s] == '#' || p == NULL)
    return FALSE;
  *key_start = s;
  *eq = (gsize) (p - text);
  *key_end = *eq;
  while (*key_end > s && g_ascii_isspace (text[*key_end - 1]))
    (*key_end)--;
  return TRUE;
}

/* Looks at one line of the target group: the key itself (its value found), or another key. */
static void
scan_key_line (const char *text, const Line *l, const char *key, Scan *scan)
{
  gsize ks, ke, eq;
  if (!key_line (text, l, &ks, &ke, &eq))
    return;
  scan->insert_at = l->next;
  if (ke - ks != strlen (key) || strncmp (text + ks, key, ke - ks) != 0)
    return;
  gsize vs = eq + 1, ve = l->end;
  while (vs < ve && (text[vs] == ' ' || text[vs] == '\t'))
    vs++;
  while (ve > vs && (text[ve - 1] == ' ' || text[ve - 1] == '\t'))
    ve--;
  scan->key_found = TRUE;
  scan->value_start = vs;
  scan->value_end = ve;
}

/* The first group called @target, and @key in it. */
static Scan
scan_text (const char *text, const char *target, const char *key)
{
  Scan scan = {0};
  gboolean inside = FALSE;
  Line l;
  for (gsize pos = 0; !scan.key_found && next_line (text, &pos, &l);) {
    g_autofree char *group = header_group (text, &l);
    if (group && inside)
      break; /* the group ends without the key */
    if (group) {
      inside = strcmp (group, target) == 0;
      scan.group_found |= inside;
      scan.insert_at = l.next;
    } else if (inside) {
      scan_key_line (text, &l, key, &scan);
    }
  }
  return scan;
}

/* The file's own line ending: that of its first line. */
static const char *
line_ending (const char *text)
{
  const char *nl = strchr (text, '\n');
  return nl && nl > text && nl[-1] == '\r' ? "\r\n" : "\n";
}

/* @text with @line inserted at @at (a line's start, or the end of a text whose last line may
 * lack its ending). */
static char *
insert_line (const char *text, gsize at, const char *line, const char *eol)
{
  gboolean open = at > 0 && text[at - 1] != '\n';
  return g_strdup_printf ("%.*s%s%s%s%s", (int) at, text, open ? eol : "", line, eol, text + at);
}

char *
sedp_pipeline_text_set (const char *text, const char *group, const char *key, const char *value)
{
  g_return_val_if_fail (text != NULL && group != NULL && key != NULL && value != NULL, NULL);
  g_return_val_if_fail (*key && !strpbrk (key, "=[]#\r\n") && !g_ascii_isspace (*key), NULL);
  g_return_val_if_fail (*group && !strpbrk (group, "[]\r\n"), NULL);
  g_autofree char *target = canonical_group (group, strlen (group));
  g_autofree char *escaped = sedp_dsl_escape_value (value);
  const char *eol = line_ending (text);
  Scan scan = scan_text (text, target, key);
  if (scan.key_found)
    return g_strdup_printf ("%.*s%s%s", (int) scan.value_start, text, escaped,
                            text + scan.value_end);
  g_autofree char *line = g_strdup_printf ("%s = %s", key, escaped);
  if (scan.group_found)
    return insert_line (text, scan.insert_at, line, eol);
  g_autofree char *block = g_strdup_printf ("%s[%s]%s%s", *text ? eol : "", target, eol, line);
  return insert_line (text, strlen (text), block, eol);
}
