/* sedp — the rows of a request as its decoders read them (protobuf in protocol.c, JSON in
 * json-request.c), then typed and turned into one frame. A decoder sets values by row and
 * column; the builder keeps the columns in first-seen order, types each one over all rows by the
 * rules of column-kind.h, and charges what it holds to the request's limits (SedpProtocolLimits). */
#pragma once

#include <sedp/protocol.h>

#include "column-kind.h"

G_BEGIN_DECLS

/* The longest deadline a request may ask for. */
#define SEDP_PROTOCOL_MAX_DEADLINE_MS 3600000u

typedef enum {
  SRC_NONE,   /* no value (JSON null, or not set) */
  SRC_INT,    /* v.i */
  SRC_FLOAT,  /* v.d */
  SRC_STRING, /* v.s, in the store's text */
  SRC_IDS,    /* n ids from v.at in the store's ids */
  SRC_FLOATS, /* n little-endian floats at v.raw (the protobuf payload, maybe unaligned) */
  SRC_FLOATS_AT, /* n floats from v.at in the store's floats */
} Source;

/* One value of one row. */
typedef struct {
  Source src;
  guint n; /* SRC_IDS, SRC_FLOATS, SRC_FLOATS_AT */
  union {
    gint64 i;
    double d;
    const char *s;
    gsize at;
    const guint8 *raw;
  } v;
} RowValue;

/* What one decode holds besides the rows: list values, text, and its limits and charges. */
typedef struct {
  guint64 *ids;
  gsize n_ids, cap_ids;
  float *floats;
  gsize n_floats, cap_floats;
  GStringChunk *text; /* names and string values, NUL-terminated */
  SedpProtocolLimits limits;
  gsize charged; /* bytes held, checked against limits.max_decoded_bytes */
} RowStore;

/* The columns of one part of a request ("items" or "user"). */
typedef struct RowColumn RowColumn;
typedef struct {
  const char *what;    /* "items" or "user", for messages */
  guint n_rows, cap_rows;
  GArray *columns;     /* RowColumn */
  GArray *row_order;   /* guint: the columns set in the current row, in first-seen order */
  guint guess;         /* the column the next name most likely is (rows name them in order) */
  guint *index;        /* open addressing by name hash: 1 + column, 0 empty */
  guint index_mask;
  RowStore *store;
} RowBuilder;

void row_store_init (RowStore *s, const SedpProtocolLimits *limits);
void row_store_clear (RowStore *s);

/* Charges @bytes more to the decode; FALSE with @error (naming max_decoded_bytes) over it. */
gboolean row_store_charge (RowStore *s, gsize bytes, GError **error);

/* Appends one id / float; FALSE with @error when the decode's memory limit is passed. */
gboolean row_store_push_id (RowStore *s, guint64 id, GError **error);
gboolean row_store_push_float (RowStore *s, float f, GError **error);

/* Copies @len bytes at @p into the text (NUL-terminated, charged); NULL with @error over the
 * limit. */
const char *row_store_text (RowStore *s, const char *p, gsize len, GError **error);

/* @n_rows: the rows known at the start (protobuf), or 0 for rows added as they come (JSON). */
void row_builder_init (RowBuilder *b, const char *what, guint n_rows, RowStore *store);
void row_builder_clear (RowBuilder *b);

/* Adds one row (when rows come as they are read); FALSE with @error over max_items. */
gboolean row_builder_add_row (RowBuilder *b, GError **error);

/* The index of the column named by @len bytes at @name (not NUL-terminated), or -1 when there
 * is none yet (nothing is created). */
gint row_builder_lookup (RowBuilder *b, const char *name, gsize len);

/* The column named by @len bytes at @name (not NUL-terminated), created on first sight: its
 * index in *@column. FALSE with @error when a new one passes max_features or the memory limit. */
gboolean row_builder_column (RowBuilder *b, const char *name, gsize len, guint *column,
                             GError **error);

/* Sets the value of @column in @row (the last value set wins; the first sets its place). */
void row_builder_set (RowBuilder *b, guint row, guint column, const RowValue *v);

/* Both of the above. */
gboolean row_builder_set_named (RowBuilder *b, guint row, const char *name, gsize len,
                                const RowValue *v, GError **error);

/* The name of @column (NUL-terminated). */
const char *row_builder_column_name (const RowBuilder *b, guint column);

/* Types the columns set in @row once all its values are set; FALSE with @error on a conflict. */
gboolean row_builder_end_row (RowBuilder *b, guint row, GError **error);

/* The frame of every typed column. */
SedpFrame *row_builder_frame (RowBuilder *b);

/* Sets @error: SEDP_PROTOCOL_ERROR_INVALID, "invalid request: " and the message. */
gboolean sedp_protocol_invalid (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

/* TRUE when @id fits an int64 column, else FALSE with @error naming the field: the id of
 * item @row, or the user's id when @row is negative (the path is built only then). */
gboolean sedp_protocol_check_id (guint64 id, gint64 row, GError **error);

/* Sets @error: SEDP_PROTOCOL_ERROR_LIMIT, "invalid request: " and the message. */
gboolean sedp_protocol_over_limit (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);
/* The same from a va_list, with @code (SEDP_PROTOCOL_ERROR_INVALID or _LIMIT): the decoders'
 * own fail() helpers call it. */
gboolean sedp_protocol_error_valist (GError **error, gint code, const char *format, va_list args)
  G_GNUC_PRINTF (3, 0);

G_END_DECLS
