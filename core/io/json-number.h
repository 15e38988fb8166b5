/* sedp — JSON number literals, read exactly and without strtod where it is not needed: the one
 * number reader of sedp's JSON decoders (json-request.c, tfs-json.c). yajl hands each literal over
 * as text after checking its syntax. Pure functions: thread-safe. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The longest number literal read (longer ones are refused by the caller, as a limit). */
#define SEDP_JSON_NUMBER_MAX_CHARS 1024

typedef enum { NUM_INT, NUM_UINT, NUM_DOUBLE } NumKind;

/* A number as read: an integer when the literal is one and fits 64 bits, else a double. */
typedef struct {
  NumKind kind;
  gint64 i;   /* NUM_INT */
  guint64 u;  /* NUM_UINT (above G_MAXINT64) */
  double d;   /* every kind */
} SedpJsonNumber;

/* Reads the literal @p of @len characters (yajl checked its syntax): integers exactly, decimals of
 * up to 15 digits and a power of ten within 10^22 by one exact division (the correctly rounded
 * double), others by g_ascii_strtod(). FALSE when @len passes SEDP_JSON_NUMBER_MAX_CHARS. */
gboolean sedp_json_number_parse (const char *p, gsize len, SedpJsonNumber *n);

G_END_DECLS
