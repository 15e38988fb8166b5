/* sedp — JSON number literals read exactly and fast (json-number.h). */
#include "json-number.h"

#include <string.h>

static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The integer @neg m as a number: FALSE when it fits no 64-bit integer (below -2^63). */
static gboolean
set_integer (gboolean neg, guint64 m, SedpJsonNumber *n)
{
  if (neg) {
    if (m > (guint64) G_MAXINT64 + 1)
      return FALSE;
    n->kind = NUM_INT;
    n->i = m == (guint64) G_MAXINT64 + 1 ? G_MININT64 : -(gint64) m;
    n->d = (double) n->i;
  } else if (m > (guint64) G_MAXINT64) {
    n->kind = NUM_UINT;
    n->u = m;
    n->d = (double) m;
  } else {
    n->kind = NUM_INT;
    n->i = (gint64) m;
    n->d = (double) n->i;
  }
  return TRUE;
}

/* One pass over the literal: an integer that fits 64 bits exactly; a decimal without exponent,
 * of at most 15 digits and a power of ten within 10^22, by one division of two exact doubles
 * (one rounding: the correctly rounded result); else g_ascii_strtod(). */
gboolean
sedp_json_number_parse (const char *p, gsize len, SedpJsonNumber *n)
{
  gboolean neg = len > 0 && *p == '-';
  gsize k = neg;
  guint64 m = 0;
  guint digits = 0;
  gboolean overflow = FALSE;
  for (; k < len && (guint) (p[k] - '0') < 10; k++, digits++) {
    guint digit = (guint) (p[k] - '0');
    /* 19 digits or fewer never pass 2^64 - 1 before this one: check only from the 20th on */
    overflow = overflow || (digits >= 19 && m > (G_MAXUINT64 - digit) / 10);
    m = m * 10 + digit;
  }
  if (k == len && !overflow && set_integer (neg, m, n))
    return TRUE;
  if (k < len && p[k] == '.' && digits <= 15) {
    guint exp10 = 0;
    for (k++; k < len && (guint) (p[k] - '0') < 10 && digits <= 15; k++, digits++, exp10++)
      m = m * 10 + (guint) (p[k] - '0');
    if (k == len && digits <= 15 && exp10 <= 22) {
      double v = (double) m / pow10[exp10];
      n->kind = NUM_DOUBLE;
      n->d = neg ? -v : v;
      return TRUE;
    }
  }
  if (len > SEDP_JSON_NUMBER_MAX_CHARS)
    return FALSE;
  char buf[SEDP_JSON_NUMBER_MAX_CHARS + 1];
  memcpy (buf, p, len);
  buf[len] = '\0';
  n->kind = NUM_DOUBLE;
  n->d = g_ascii_strtod (buf, NULL);
  return TRUE;
}
