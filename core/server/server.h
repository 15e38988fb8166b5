/* sedp — the HTTP front end (libsoup 3): serves running pipelines over the protocol of
 * docs/protocol.md; endpoints and status codes in docs/serving.md. */
#pragma once

#include "../runtime/pipeline.h"

#include <gio/gio.h>

G_BEGIN_DECLS

/** SedpServer: an HTTP server over one or more pipelines, driven by the thread-default (or
 * global default) GMainContext of the thread that created it. */
typedef struct _SedpServer SedpServer;

/**
 * SedpServerWarmupDone:
 * @error: (nullable): NULL when every pipeline is warmed up (ready); else the first warm-up
 *   request that failed, named by its file and line
 *
 * Called once, in the server's main context, when the warm-up ended.
 */
typedef void (*SedpServerWarmupDone) (SedpServer *server, const GError *error, gpointer user_data);

/* The default limit on a request body, in bytes. */
#define SEDP_SERVER_DEFAULT_MAX_BODY (16u * 1024u * 1024u)

/* @max_body: the largest request body accepted (413 above it); 0 for the default. */
SEDP_API SedpServer *sedp_server_new (gsize max_body);

/* Loads, creates and starts the pipeline of file @path, served under its [pipeline] name (an
 * error when the name is already served). A pipeline with [pipeline] warmup (its records read
 * and checked here) is not ready — /healthz and its predict answer 503 — until
 * sedp_server_warm_up() sent them through it. */
SEDP_API gboolean sedp_server_add_pipeline (SedpServer *server, const char *path,
                                            SedpRegistry *registry, GError **error);

/* Serves the ONNX model @model_path as @name without a pipeline file: the implicit pipeline of
 * sedp_pipeline_text_for_model() (data_reader, then model_inference with the engine's batching),
 * under the model API (docs/compat.md) and /v1/pipelines/NAME:predict alike. An error when the
 * file is missing, the model does not load, or @name is served already; its message starts
 * `--model NAME=FILE: `. */
SEDP_API gboolean sedp_server_add_model (SedpServer *server, const char *name,
                                         const char *model_path, SedpRegistry *registry,
                                         GError **error);

/* Enables the admin API (docs/model-lifecycle.md#the-admin-api): its calls must carry
 * `Authorization: Bearer TOKEN`, TOKEN the first line of @path (white space around it removed;
 * at least 16 characters; the file readable by its owner only). Without a call to this, the admin
 * endpoints answer 404. FALSE with a G_FILE_ERROR (unreadable) or G_IO_ERROR_INVALID_DATA (a
 * token too short, a file others can read) naming @path. */
SEDP_API gboolean sedp_server_set_admin_token_file (SedpServer *server, const char *path,
                                                    GError **error);

/* The listening socket's backlog: connections the kernel completes before the server accepts
 * them (nginx's default; libsoup's own listener used GLib's 10, too few for a burst of
 * clients that connect per request). */
#define SEDP_SERVER_BACKLOG 511

/* Listens on @address ("ADDR:PORT", "[V6ADDR]:PORT"; port 0 picks a free one) and accepts its
 * connections in the main context of the thread that created @server. Call once. */
SEDP_API gboolean sedp_server_listen (SedpServer *server, const char *address, GError **error);

/* Sends every pipeline's warm-up requests through it (one at a time per pipeline, the pipelines
 * side by side), in the main context, and calls @done once: when every pipeline is ready (at
 * once, from an idle callback, when none has warmup), or at the first warm-up request that
 * fails (a status other than OK, PARTIAL and TIMEOUT), after which no more are sent. */
SEDP_API void sedp_server_warm_up (SedpServer *server, SedpServerWarmupDone done,
                                   gpointer user_data);

/* One line per pipeline that has a warm-up: "NAME: N requests (R records × K) in S s[, T timed
 * out]" (an empty string when none has). */
SEDP_API char *sedp_server_describe_warmup (SedpServer *server);

/**
 * sedp_server_accept_iostream:
 * @stream: a connection to a client that is already open (one end of a socket pair, in the
 *   tests and tests/fuzz/fuzz-http.c)
 *
 * Serves @stream as a connection accepted on a listening socket, from a loopback address: HTTP
 * requests are read from it and answered in the server's main context, and it is closed after
 * the response, as any. A GSocketConnection's first request line is screened as those of
 * sedp_server_listen()'s connections are (an unknown method: 501, core/server/screen.h).
 *
 * Returns: %FALSE with @error set when libsoup refuses the stream.
 */
SEDP_API gboolean sedp_server_accept_iostream (SedpServer *server, GIOStream *stream,
                                               GError **error);

/* The port listened on (0 before sedp_server_listen()). */
SEDP_API guint sedp_server_get_port (SedpServer *server);

/* Refuses new requests (503), drains every pipeline (sedp_pipeline_stop(), in a thread) while
 * iterating the main context, then waits up to @timeout_ms for the last responses to be written. */
SEDP_API void sedp_server_shutdown (SedpServer *server, guint timeout_ms);

SEDP_API void sedp_server_free (SedpServer *server);

G_END_DECLS
