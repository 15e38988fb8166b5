/* ab_router — the split (docs/routing.md#the-ab_router-plugin): the arms and their weights,
 * the bucket each arm owns, the salted hash that puts a key in a bucket, and the overrides
 * file. Internal to the plugin; tests/ab_router compiles split.c directly.
 *
 * Everything here is a plain function of its arguments, or an immutable value once built:
 * thread-safe. Errors are SEDP_STAGE_ERROR_CONFIG. */
#pragma once

#include <glib.h>

/* Buckets of the split: one per hundredth of a percent. */
#define AB_BUCKETS 10000
/* The most arms: SEDP_MAX_BRANCHES (checked in split.c). */
#define AB_MAX_ARMS 64
/* The longest arm name, as a stage name. */
#define AB_MAX_NAME 64
/* Bytes of the hash key derived from a salt: crypto_shorthash_KEYBYTES (checked in split.c). */
#define AB_KEY_BYTES 16

/**
 * AbArms:
 * @n_arms: how many arms (1..AB_MAX_ARMS)
 * @names: their names in written order, %NULL-terminated
 * @weights: each arm's weight in hundredths of a percent; they sum to AB_BUCKETS
 * @ends: arm i owns the buckets [ends[i-1], ends[i]) (ends[-1] being 0)
 *
 * A parsed `arms` list. Immutable once ab_arms_parse() returned it: readable from any thread.
 */
typedef struct {
  guint n_arms;
  char **names;
  guint weights[AB_MAX_ARMS];
  guint ends[AB_MAX_ARMS];
} AbArms;

/**
 * ab_arms_parse:
 * @items: the `NAME:WEIGHT` items (%NULL-terminated; blanks around names and weights ignored)
 * @where: how messages name the source: "arms", or "arms_file '/path'"
 *
 * Parses an arms list: weights in percent, ≥ 0, at most two decimals, summing to exactly 100
 * (compared in hundredths, as integers); names [a-z0-9_], 1–64 characters, distinct; at most
 * AB_MAX_ARMS of them. Errors start with @where and name the bad item and the fix.
 *
 * Returns: (transfer full) (nullable): the arms (free with ab_arms_free()), or %NULL with @error.
 */
AbArms *ab_arms_parse (const char *const *items, const char *where, GError **error);

/**
 * ab_arms_parse_line:
 * Like ab_arms_parse() for one line of text: the items separated by ',' (empty ones skipped),
 * as a pipeline file's list option is split.
 */
AbArms *ab_arms_parse_line (const char *line, const char *where, GError **error);

/**
 * ab_arms_parse_file:
 * @text: an arms_file's contents (NUL-terminated)
 * @where: how messages name the file: "arms_file '/path'"
 *
 * Like ab_arms_parse_line() for the file's one arms line; blank lines and lines whose first
 * non-blank character is '#' are skipped. No line, or more than one, is an error.
 */
AbArms *ab_arms_parse_file (const char *text, const char *where, GError **error);

/** ab_arms_free: Frees @arms (may be %NULL). */
void ab_arms_free (AbArms *arms);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (AbArms, ab_arms_free)

/** ab_arms_find: Returns: the index of the arm called @name (%NULL: none), or -1. */
int ab_arms_find (const AbArms *arms, const char *name);

/**
 * ab_arms_arm_of:
 * @bucket: < AB_BUCKETS
 *
 * Returns: the index of the arm that owns @bucket (an arm of weight 0 owns none).
 */
guint ab_arms_arm_of (const AbArms *arms, guint bucket);

/** ab_arms_list_names: Returns: (transfer full): "control, treatment", for messages. */
char *ab_arms_list_names (const AbArms *arms);

/**
 * ab_arms_check_names:
 * @want: the arms whose names are fixed (the `arms` option's)
 * @got: arms read later (from `arms_file`), whose weights replace @want's
 * @where: how messages name @got's source
 *
 * Returns: %TRUE when @got has exactly @want's names in the same order; else %FALSE with
 * @error naming both lists.
 */
gboolean ab_arms_check_names (const AbArms *want, const AbArms *got, const char *where,
                              GError **error);

/**
 * ab_split_init:
 * Initialises libsodium once (thread-safe, idempotent). Call before the other ab_split_*.
 *
 * Returns: %FALSE with @error (SEDP_STAGE_ERROR_INTERNAL) when libsodium cannot start.
 */
gboolean ab_split_init (GError **error);

/**
 * ab_split_key_of_salt:
 * @salt: the experiment's salt (UTF-8, any length)
 * @key: (out caller-allocates): BLAKE2b-128 of @salt, the SipHash key
 */
void ab_split_key_of_salt (const char *salt, guint8 key[AB_KEY_BYTES]);

/**
 * ab_split_hash:
 * Returns: SipHash-2-4 of @data[0..@len) under @key, read as a little-endian 64-bit integer.
 */
guint64 ab_split_hash (const guint8 key[AB_KEY_BYTES], const void *data, gsize len);

/** ab_split_bucket_int64: Returns: the bucket of @value: the hash of its 8 little-endian bytes mod AB_BUCKETS. */
guint ab_split_bucket_int64 (const guint8 key[AB_KEY_BYTES], gint64 value);

/** ab_split_bucket_string: Returns: the bucket of @value: the hash of its UTF-8 bytes mod AB_BUCKETS. */
guint ab_split_bucket_string (const guint8 key[AB_KEY_BYTES], const char *value);

/**
 * AbOverrides:
 * A parsed overrides file: keys pinned to an arm. A key written as a decimal int64 matches an
 * int64 key column of that value ("007" matches 7) as well as a string column holding exactly
 * the text written. Immutable once parsed: readable from any thread.
 */
typedef struct _AbOverrides AbOverrides;

/**
 * ab_overrides_parse:
 * @text: the file's contents (NUL-terminated)
 * @path: the file, for messages
 * @arms: the arms the overrides name
 *
 * Parses `KEY ARM` lines separated by blanks; a token starting with '#' starts a comment to the
 * end of the line; blank lines are skipped. Errors (naming `overrides`, @path and the line): a
 * line without exactly two tokens, an arm not in @arms, a key listed twice.
 *
 * Returns: (transfer full) (nullable): the overrides, or %NULL with @error.
 */
AbOverrides *ab_overrides_parse (const char *text, const char *path, const AbArms *arms,
                                 GError **error);

/** ab_overrides_free: Frees @overrides (may be %NULL). */
void ab_overrides_free (AbOverrides *overrides);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (AbOverrides, ab_overrides_free)

/** ab_overrides_size: Returns: the number of keys pinned. */
guint ab_overrides_size (const AbOverrides *overrides);

/** ab_overrides_lookup_int64: Returns: the arm pinned for int64 @key, or -1. */
int ab_overrides_lookup_int64 (const AbOverrides *overrides, gint64 key);

/** ab_overrides_lookup_string: Returns: the arm pinned for string @key, or -1. */
int ab_overrides_lookup_string (const AbOverrides *overrides, const char *key);
