/* sedp — how request decoders type a feature's column from its values over all rows, shared by
 * the JSON (request-file.c) and protobuf (protocol.c) decoders so that both type alike. */
#pragma once

#include <glib.h>

/* What a feature's values look like over all rows. */
typedef enum { KIND_NONE, KIND_INT, KIND_FLOAT, KIND_IDLIST, KIND_VECTOR, KIND_STRING } Kind;

/* A feature's column as typed so far. */
typedef struct {
  const char *name;
  Kind kind;
  guint width;     /* KIND_VECTOR */
  guint first_row; /* where the kind was first seen, for messages */
  guint n_values;  /* KIND_IDLIST total */
  guint ragged_row;   /* KIND_IDLIST: 1 + the first row whose list length differs from first_row's */
  guint ragged_width; /* that row's length */
} ColumnKind;

/* "an integer", "a number", … */
const char *sedp_column_kind_name (Kind kind);

/* Merges one more value of kind @kind (@width values for arrays) seen in row @row of @what
 * ("items", "user"): integers among numbers become numbers, an array of integers among number
 * arrays of its length becomes a number array (only when every array of the feature has that
 * length: a vector column has one width). On a conflict returns FALSE and sets *@message (free
 * it) to "WHAT[ROW].NAME: …, but WHAT[OTHER] has …". */
gboolean sedp_column_kind_merge (ColumnKind *column, Kind kind, guint width, guint row,
                                 const char *what, char **message);

/* sedp_column_kind_merge() of a value of the kind the column has already (not a vector), done
 * inline: a decoder calls it for every value, and nearly every value is of that kind. FALSE
 * when it is not that case; then call sedp_column_kind_merge(). */
static inline gboolean
sedp_column_kind_merge_same (ColumnKind *column, Kind kind, guint width)
{
  if (kind != column->kind || kind == KIND_VECTOR)
    return FALSE;
  if (kind != KIND_IDLIST)
    return TRUE;
  if (width != column->width && column->ragged_row == 0)
    return FALSE; /* the first ragged row: recorded by the merge */
  column->n_values += width;
  return TRUE;
}
