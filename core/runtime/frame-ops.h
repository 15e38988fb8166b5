/* sedp — operations on frames and columns for sedp's own code outside the runtime (the protocol
 * module, the server, the CLI): reference-counted columns, copies, slices, merges. Not part of the
 * plugin SDK (a plugin sees <sedp/frame.h> only); the layouts stay in frame-private.h, the
 * runtime's. */
#pragma once

#include <sedp/sedp.h>

G_BEGIN_DECLS

/* Column life cycle. */
SEDP_API SedpColumn *sedp_column_ref (SedpColumn *column);
SEDP_API void sedp_column_unref (SedpColumn *column);

/* A frame with the same rows and columns (shared), that the caller may modify. */
SEDP_API SedpFrame *sedp_frame_copy_shallow (const SedpFrame *frame) G_GNUC_WARN_UNUSED_RESULT;

/* Returns @frame itself when it holds the only reference, else a shallow copy (and drops the
 * caller's reference to @frame). */
SEDP_API SedpFrame *sedp_frame_make_writable (SedpFrame *frame) G_GNUC_WARN_UNUSED_RESULT;

/* Rows [start, start + n) of @frame as a new frame (columns copied). */
SEDP_API SedpFrame *sedp_frame_slice (const SedpFrame *frame, guint start, guint n) G_GNUC_WARN_UNUSED_RESULT;

/* The rows of @frame for which keep[r] is TRUE, as a new frame (columns copied, row states
 * reset). */
SEDP_API SedpFrame *sedp_frame_select_rows (const SedpFrame *frame, const guint32 *rows, guint n_rows) G_GNUC_WARN_UNUSED_RESULT;

/* TRUE when a row was dropped or failed in @frame. */
SEDP_API gboolean sedp_frame_has_dead_rows (const SedpFrame *frame);

/* The failure message of @row (NULL when it has none). */
SEDP_API const char *sedp_frame_get_row_message (const SedpFrame *frame, guint row);

/* Adds (a reference to) @column to @frame, replacing one with the same name. */
SEDP_API void sedp_frame_put_column (SedpFrame *frame, SedpColumn *column);

/* Adds every column of @request_frame that @frame lacks, as a broadcast column when
 * @request_frame has one row and @frame does not. */
SEDP_API void sedp_frame_add_broadcast (SedpFrame *frame, const SedpFrame *request_frame);

/* Merges the columns of @other into @frame (same rows, same item indexes); on a name clash the
 * column of @other wins unless it is the very same column. */
SEDP_API void sedp_frame_merge_columns (SedpFrame *frame, const SedpFrame *other);

/* TRUE when @a and @b hold the same items in the same order. */
SEDP_API gboolean sedp_frame_same_items (const SedpFrame *a, const SedpFrame *b);

/* Keeps only the rows of @frame whose items are also in @other; returns a new frame. */
SEDP_API SedpFrame *sedp_frame_intersect_items (const SedpFrame *frame, const SedpFrame *other) G_GNUC_WARN_UNUSED_RESULT;

/* Concatenates @n frames row-wise (columns by name; broadcast columns are expanded). Columns
 * missing in some frames, or of different types, are left out of the result. */
SEDP_API SedpFrame *sedp_frame_concat (SedpFrame *const *frames, guint n) G_GNUC_WARN_UNUSED_RESULT;

/* A one-row frame with every column of @request_frame (one row) flagged broadcast, computed
 * once per request and join, so that item frames share its columns. */
SEDP_API SedpFrame *sedp_frame_to_broadcast (const SedpFrame *request_frame) G_GNUC_WARN_UNUSED_RESULT;

/* The kind of a frame: FRAME_KIND_REQUEST (0) or FRAME_KIND_ITEMS (1). */
SEDP_API void sedp_frame_set_kind (SedpFrame *frame, int kind);
SEDP_API int sedp_frame_get_kind (const SedpFrame *frame);

/* Removes the column at @index (0 .. n_columns - 1); later columns move down by one. For callers
 * that already walk the columns, without a second search by name. */
SEDP_API void sedp_frame_remove_column_at (SedpFrame *frame, guint index);

G_END_DECLS
