/* sedp — a connection's first request line screened before libsoup reads it (private to
 * core/server). */
#pragma once

#include <gio/gio.h>

/* Called once per screened connection whose method is one HTTP defines: @conn is handed over
 * (the callee takes its own reference if it keeps it). */
typedef void (*SedpScreenPass) (GSocketConnection *conn, gpointer data);

/* The longest method accepted ("OPTIONS", "CONNECT": 7 bytes; the rest is margin). */
#define SEDP_SCREEN_MAX_METHOD 16

/*
 * sedp_screen_connection:
 * @conn: a connection just accepted (referenced here until it is passed or refused)
 * @context: where to wait for its first bytes (the server's main context)
 *
 * Waits, in @context, for the first request line's method (peeked at: nothing is read) and
 * calls @pass when it is one of GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH, TRACE and
 * CONNECT. Any other method, or one longer than SEDP_SCREEN_MAX_METHOD, is answered here with
 * 501 naming it, and the connection closed. A connection closed by its client before its
 * method is known is closed too. Main context only.
 */
void sedp_screen_connection (GSocketConnection *conn, GMainContext *context, SedpScreenPass pass,
                             gpointer data);
