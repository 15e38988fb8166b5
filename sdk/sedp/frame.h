/* sedp — frames: columnar tables of rows that flow between stages. */
#pragma once

#include <sedp/macros.h>

G_BEGIN_DECLS

/**
 * SedpColumnType:
 * @SEDP_COLUMN_FLOAT32: dense float32 values, `width` per row (features, embeddings, scores).
 * @SEDP_COLUMN_INT64: dense int64 values, `width` per row (ids, counters, bucket indexes).
 * @SEDP_COLUMN_UINT64: dense uint64 values, `width` per row (feature signatures).
 * @SEDP_COLUMN_IDLIST: ragged lists of uint64 ids, one list per row, stored as values + offsets
 *   (row r holds values[offsets[r] .. offsets[r+1])).
 * @SEDP_COLUMN_STRING: one NUL-terminated UTF-8 string per row (may be NULL).
 *
 * The element type of a column.
 */
typedef enum {
  SEDP_COLUMN_FLOAT32 = 1,
  SEDP_COLUMN_INT64,
  SEDP_COLUMN_UINT64,
  SEDP_COLUMN_IDLIST,
  SEDP_COLUMN_STRING,
} SedpColumnType;

/**
 * SedpRowState:
 * @SEDP_ROW_LIVE: the row flows on to the next stages.
 * @SEDP_ROW_DROPPED: the row was shed on purpose (load shedding, filtering); it is left out of
 *   downstream frames and reported with a "dropped" status.
 * @SEDP_ROW_FAILED: processing the row failed; it is left out of downstream frames and reported
 *   with a "failed" status and the message given to sedp_frame_fail_row().
 * @SEDP_ROW_ANSWERED: the row was answered early (from a cache): it is left out of downstream
 *   frames and reported with a "cached" status and the columns the frame had when it left.
 * @SEDP_ROW_SHED: the row was shed by a load shedder to save work under load (since ABI 1.1):
 *   like DROPPED, but reported with a "shed" status and counted in the response's shed_items.
 *
 * What became of one row of a frame.
 */
typedef enum {
  SEDP_ROW_LIVE = 0,
  SEDP_ROW_DROPPED,
  SEDP_ROW_FAILED,
  SEDP_ROW_ANSWERED,
  SEDP_ROW_SHED,
} SedpRowState;

/**
 * SedpColumn:
 * One named, typed column of a frame. Columns are reference counted and shared between frames
 * (fan-out, joins) without copying; a column reached through a `const SedpColumn *` must not be
 * modified. sedp_frame_add_column() and sedp_frame_edit_column() return a column the caller may
 * write, valid until the frame is handed back to the runtime.
 */
typedef struct _SedpColumn SedpColumn;

/**
 * SedpFrame:
 * A columnar table of rows that belong to one request: either the request frame (one row of
 * request-scope data, such as user features) or an item frame (up to `frame_rows` candidate
 * items). Frames are reference counted; the frame a plugin receives in `process` is exclusively
 * its own for the duration of the call (the runtime copies shared frames on write: the copy
 * shares the columns and only duplicates the column list).
 *
 * Threading: a frame may be read from several threads at once, and must be written by one.
 */
typedef struct _SedpFrame SedpFrame;

/**
 * sedp_column_type_to_string:
 * @type: a column type
 *
 * Returns: (transfer none): "float32", "int64", "uint64", "idlist" or "string"; "invalid" for
 * anything else.
 */
SEDP_API const char *sedp_column_type_to_string (SedpColumnType type);

/**
 * sedp_column_get_name:
 * Returns: (transfer none): the column's name, valid as long as the column.
 */
SEDP_API const char *sedp_column_get_name (const SedpColumn *column);

/** sedp_column_get_column_type: Returns: the element type of @column. */
SEDP_API SedpColumnType sedp_column_get_column_type (const SedpColumn *column);

/**
 * sedp_column_get_width:
 * Returns: values per row for FLOAT32, INT64 and UINT64 columns (1 for scalars, the dimension
 * for vectors); 1 for IDLIST and STRING columns.
 */
SEDP_API guint sedp_column_get_width (const SedpColumn *column);

/**
 * sedp_column_get_n_rows:
 * Returns: the rows stored in @column: the frame's row count, or 1 for a broadcast column.
 */
SEDP_API guint sedp_column_get_n_rows (const SedpColumn *column);

/**
 * sedp_column_is_broadcast:
 *
 * A broadcast column holds one row that applies to every row of the frame: request-scope
 * results joined into item frames (for example a user embedding) are shared this way instead of
 * being copied once per item. Read it with row 0.
 *
 * Returns: %TRUE if @column is a broadcast column.
 */
SEDP_API gboolean sedp_column_is_broadcast (const SedpColumn *column);

/**
 * sedp_column_get_float32:
 * Returns: (transfer none) (nullable): the row-major values (n_rows × width) of a FLOAT32
 * column, or %NULL if @column has another type.
 */
SEDP_API const float *sedp_column_get_float32 (const SedpColumn *column);

/** sedp_column_get_int64: Like sedp_column_get_float32() for INT64 columns. */
SEDP_API const gint64 *sedp_column_get_int64 (const SedpColumn *column);

/** sedp_column_get_uint64: Like sedp_column_get_float32() for UINT64 columns. */
SEDP_API const guint64 *sedp_column_get_uint64 (const SedpColumn *column);

/**
 * sedp_column_get_ids:
 * @column: an IDLIST column
 * @row: the row, < n_rows
 * @n_ids: (out): the length of the row's list
 *
 * Returns: (transfer none) (nullable): the ids of @row (%NULL with *@n_ids = 0 when the list is
 * empty, or @column is not an IDLIST column).
 */
SEDP_API const guint64 *sedp_column_get_ids (const SedpColumn *column, guint row, guint *n_ids);

/**
 * sedp_column_get_idlist:
 * @column: an IDLIST column
 * @offsets: (out) (optional): n_rows + 1 offsets into the values
 * @n_values: (out) (optional): the total number of values
 *
 * Returns: (transfer none) (nullable): all values of an IDLIST column, %NULL for other types.
 */
SEDP_API const guint64 *sedp_column_get_idlist (const SedpColumn *column, const guint32 **offsets,
                                                guint *n_values);

/**
 * sedp_column_get_string:
 * Returns: (transfer none) (nullable): the string in @row of a STRING column (%NULL when unset or
 * @column is not a STRING column).
 */
SEDP_API const char *sedp_column_get_string (const SedpColumn *column, guint row);

/**
 * sedp_column_float32_data:
 * @column: a writable FLOAT32 column (from sedp_frame_add_column() or sedp_frame_edit_column())
 *
 * Returns: (transfer none): the n_rows × width values to write.
 */
SEDP_API float *sedp_column_float32_data (SedpColumn *column);

/** sedp_column_int64_data: Like sedp_column_float32_data() for INT64 columns. */
SEDP_API gint64 *sedp_column_int64_data (SedpColumn *column);

/** sedp_column_uint64_data: Like sedp_column_float32_data() for UINT64 columns. */
SEDP_API guint64 *sedp_column_uint64_data (SedpColumn *column);

/**
 * sedp_column_idlist_data:
 * @column: a writable IDLIST column
 * @offsets: (out): the n_rows + 1 offsets to fill; offsets[0] is 0 and the last one must equal
 *   the n_values the column was created with.
 *
 * Returns: (transfer none): the values to fill.
 */
SEDP_API guint64 *sedp_column_idlist_data (SedpColumn *column, guint32 **offsets);

/**
 * sedp_column_set_string:
 * Copies @value (may be %NULL) into @row of a writable STRING column.
 */
SEDP_API void sedp_column_set_string (SedpColumn *column, guint row, const char *value);

/**
 * sedp_frame_new:
 * @n_rows: the number of rows
 *
 * Creates an empty frame. Plugins create frames only in a source stage, to hand the decoded
 * items of a request to sedp_event_set_items().
 *
 * Returns: (transfer full): a new frame with a reference count of 1.
 */
SEDP_API SedpFrame *sedp_frame_new (guint n_rows);

/** sedp_frame_ref: Returns: (transfer full): @frame, with one more reference. Thread-safe. */
SEDP_API SedpFrame *sedp_frame_ref (SedpFrame *frame);

/** sedp_frame_unref: Drops one reference; frees the frame with the last. Thread-safe. */
SEDP_API void sedp_frame_unref (SedpFrame *frame);

/** sedp_frame_get_n_rows: Returns: the number of rows of @frame. */
SEDP_API guint sedp_frame_get_n_rows (const SedpFrame *frame);

/** sedp_frame_get_n_columns: Returns: the number of columns of @frame. */
SEDP_API guint sedp_frame_get_n_columns (const SedpFrame *frame);

/**
 * sedp_frame_get_column_at:
 * Returns: (transfer none): the column at @index (< n_columns), in insertion order.
 */
SEDP_API const SedpColumn *sedp_frame_get_column_at (const SedpFrame *frame, guint index);

/**
 * sedp_frame_get_column:
 * Returns: (transfer none) (nullable): the column called @name, or %NULL.
 */
SEDP_API const SedpColumn *sedp_frame_get_column (const SedpFrame *frame, const char *name);

/**
 * sedp_frame_require_column:
 * @type: the type the column must have
 * @width: the width it must have, or 0 for any
 * @error: set to a SEDP_STAGE_ERROR_INVALID_INPUT error naming the column when it is missing or
 *   does not have that type or width
 *
 * Returns: (transfer none) (nullable): the column, or %NULL with @error set.
 */
SEDP_API const SedpColumn *sedp_frame_require_column (const SedpFrame *frame, const char *name,
                                                      SedpColumnType type, guint width,
                                                      GError **error);

/**
 * sedp_frame_add_column:
 * @frame: a frame the caller may write (the one passed to `process`)
 * @name: the column's name; a column with that name is replaced
 * @type: FLOAT32, INT64, UINT64 or STRING (IDLIST columns: sedp_frame_add_idlist())
 * @width: values per row (≥ 1; ignored for STRING)
 *
 * Adds a zero-filled column with one row per frame row.
 *
 * Returns: (transfer none): the writable column, owned by @frame.
 */
SEDP_API SedpColumn *sedp_frame_add_column (SedpFrame *frame, const char *name,
                                            SedpColumnType type, guint width);

/**
 * sedp_frame_add_idlist:
 * @n_values: the total number of ids over all rows
 *
 * Adds an IDLIST column; fill it through sedp_column_idlist_data().
 *
 * Returns: (transfer none): the writable column, owned by @frame.
 */
SEDP_API SedpColumn *sedp_frame_add_idlist (SedpFrame *frame, const char *name, guint n_values);

/**
 * sedp_frame_edit_column:
 *
 * Makes the column called @name writable in place, copying its data first if another frame
 * shares it (copy on write).
 *
 * Returns: (transfer none) (nullable): the writable column, or %NULL with @error set
 * (SEDP_STAGE_ERROR_INVALID_INPUT) when there is no such column.
 */
SEDP_API SedpColumn *sedp_frame_edit_column (SedpFrame *frame, const char *name, GError **error);

/** sedp_frame_remove_column: Removes the column called @name. Returns: %TRUE if there was one. */
SEDP_API gboolean sedp_frame_remove_column (SedpFrame *frame, const char *name);

/**
 * sedp_frame_has_item_rows:
 *
 * Whether the rows of @frame are candidate items: %TRUE for item frames and for the frame a
 * request-scope stage gets when item frames were gathered for it (one row per item); %FALSE for
 * a request frame, whose single row stands for the request. Row operations such as
 * sedp_frame_drop_row() shed items only on frames with item rows; on a request frame they shed
 * or fail the whole request.
 *
 * Returns: %TRUE if the rows of @frame are items.
 */
SEDP_API gboolean sedp_frame_has_item_rows (const SedpFrame *frame);

/**
 * sedp_frame_get_item_index:
 * Returns: the index in the request's item list of @row (0 for the request frame).
 */
SEDP_API guint sedp_frame_get_item_index (const SedpFrame *frame, guint row);

/**
 * sedp_frame_drop_row:
 * Sheds @row: it is left out of the frames the next stages see and reported as dropped.
 */
SEDP_API void sedp_frame_drop_row (SedpFrame *frame, guint row);

/**
 * sedp_frame_shed_row:
 * Sheds @row to save work under load (since ABI 1.1): it is left out of the frames the next
 * stages see and reported as "shed" (not "dropped", which means filtered out on purpose).
 */
SEDP_API void sedp_frame_shed_row (SedpFrame *frame, guint row);

/**
 * sedp_frame_fail_row:
 * @message: (nullable): why; copied
 *
 * Fails @row: it is left out of the frames the next stages see and reported as failed, with
 * @message and the name of the stage.
 */
SEDP_API void sedp_frame_fail_row (SedpFrame *frame, guint row, const char *message);

/**
 * sedp_frame_answer_row:
 *
 * Answers @row now, for example with a score found in a cache: the row skips the later stages
 * (it is left out of the frames they see) and the request reports its item with the status
 * "cached" and the columns of @frame as they are when `process` returns (write the answer into
 * the frame's columns first). Only rows of item frames and gathered frames are items; answering
 * the row of a request frame answers every item of the request that is still pending.
 */
SEDP_API void sedp_frame_answer_row (SedpFrame *frame, guint row);

/** sedp_frame_get_row_state: Returns: what became of @row so far in this stage. */
SEDP_API SedpRowState sedp_frame_get_row_state (const SedpFrame *frame, guint row);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (SedpFrame, sedp_frame_unref)

G_END_DECLS
