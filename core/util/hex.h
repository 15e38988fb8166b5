/* sedp — lowercase hex of bytes, both ways: the one writer and reader of the digests and keys of
 * cubes' meta files, bundles' manifests, signatures and key files. Thread-safe. */
#pragma once

#include <glib.h>

/* The @n bytes at @bytes as 2 @n lowercase hex digits and a NUL in @out (2 @n + 1 bytes). */
static inline void
sedp_hex_encode (const guint8 *bytes, gsize n, char *out)
{
  static const char digits[] = "0123456789abcdef";
  for (gsize k = 0; k < n; k++) {
    out[2 * k] = digits[bytes[k] >> 4];
    out[2 * k + 1] = digits[bytes[k] & 15];
  }
  out[2 * n] = '\0';
}

/* Exactly 2 @n hex digits (either case) in the @len bytes at @text → the @n bytes at @out.
 * Returns FALSE (with @out partly written) for another length or a non-hex character. */
static inline gboolean
sedp_hex_decode (const char *text, gsize len, guint8 *out, gsize n)
{
  if (len != 2 * n)
    return FALSE;
  for (gsize k = 0; k < n; k++) {
    int hi = g_ascii_xdigit_value (text[2 * k]), lo = g_ascii_xdigit_value (text[2 * k + 1]);
    if (hi < 0 || lo < 0)
      return FALSE;
    out[k] = (guint8) (hi << 4 | lo);
  }
  return TRUE;
}
