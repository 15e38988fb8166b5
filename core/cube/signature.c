/* sedp — feature signatures: keyed 64-bit hashes of (slot, id), as the cube's keys. */
#include "cube-format.h"

void
sedp_cube_sodium_init (void)
{
  static gsize done = 0;
  if (g_once_init_enter (&done)) {
    /* Picks the fastest implementations (BLAKE2b) and seeds randombytes. It fails only when
     * the system has no source of randomness; checksums and signatures still work then. */
    if (sodium_init () < 0)
      g_warning ("libsodium cannot be initialized (no source of randomness?)");
    g_once_init_leave (&done, 1);
  }
}

gboolean
sedp_cube_hash_key_parse (const char *hex, guint8 *hash_key)
{
  g_return_val_if_fail (hex != NULL && hash_key != NULL, FALSE);
  return cube_unhex (hex, hash_key, SEDP_CUBE_HASH_KEY_BYTES);
}

guint64
sedp_signature (const guint8 *hash_key, guint32 slot, guint64 id)
{
  G_STATIC_ASSERT (crypto_shorthash_KEYBYTES == SEDP_CUBE_HASH_KEY_BYTES);
  G_STATIC_ASSERT (crypto_shorthash_BYTES == 8);
  guint8 msg[12], out[8];
  guint32 s = GUINT32_TO_LE (slot);
  guint64 i = GUINT64_TO_LE (id);
  memcpy (msg, &s, 4);
  memcpy (msg + 4, &i, 8);
  /* SipHash-2-4 needs no initialization of libsodium. */
  crypto_shorthash (out, msg, sizeof msg, hash_key);
  guint64 sig;
  memcpy (&sig, out, 8);
  return GUINT64_FROM_LE (sig);
}
