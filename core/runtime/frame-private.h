/* sedp — frame and column internals shared by the runtime (not part of the SDK). */
#pragma once

#include <sedp/sedp.h>

#include "frame-ops.h"

struct _SedpColumn {
  gint ref_count;
  char *name;
  guint32 name_hash; /* column_name_hash (name): lookups compare it before the name */
  SedpColumnType type;
  guint width;
  guint n_rows;
  gboolean broadcast;
  gpointer data;     /* n_rows × width elements; IDLIST: values; STRING: char *[n_rows] */
  guint32 *offsets;  /* IDLIST: n_rows + 1 */
  guint n_values;    /* IDLIST: number of values */
};

struct _SedpFrame {
  gint ref_count;
  guint n_rows;
  guint n_columns;
  guint columns_size;
  SedpColumn **columns;
  guint item_base;      /* row r is item item_base + r, unless item_index is set */
  guint32 *item_index;  /* (nullable) explicit item index per row */
  guint8 *row_state;    /* (nullable) SedpRowState per row, allocated on first mark */
  char **row_message;   /* (nullable) failure message per row */
  int kind;             /* FRAME_KIND_REQUEST or FRAME_KIND_ITEMS */
};


