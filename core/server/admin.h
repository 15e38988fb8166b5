/* sedp — the admin API and the models' status (admin.c; docs/model-lifecycle.md). */
#pragma once

#include "server-private.h"

G_BEGIN_DECLS

/* The shortest admin token accepted, in characters. */
#define ADMIN_TOKEN_MIN_CHARS 16

/* The token in the file @path: its first line, trimmed. NULL with G_FILE_ERROR (unreadable),
 * G_IO_ERROR_INVALID_DATA (shorter than ADMIN_TOKEN_MIN_CHARS, or a file readable or writable
 * by others than its owner), naming @path and the fix. */
char *admin_read_token (const char *path, GError **error);

/* Handles POST /v1/admin/models/NAME:reload|:rollback and GET /v1/models/NAME (main context);
 * FALSE when @path is neither (the caller goes on). */
gboolean admin_handle (SedpServer *server, SoupServerMessage *msg, const char *path,
                       GHashTable *query);

/* Appends the sedp_model_* families to @out (docs/model-lifecycle.md). */
void admin_write_metrics (SedpServer *server, GString *out);

G_END_DECLS
