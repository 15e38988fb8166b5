/* sedp — hot reload of a served model (reload.c; docs/model-lifecycle.md). Main context only,
 * except where said. */
#pragma once

#include "server-private.h"

G_BEGIN_DECLS

/* Probation: the guards are read every RELOAD_PROBATION_TICK_MS, once the new version has
 * answered RELOAD_PROBATION_MIN_REQUESTS requests (fewer make no rate and no p99). */
#define RELOAD_PROBATION_TICK_MS 250
#define RELOAD_PROBATION_MIN_REQUESTS 20
/* A burst of monitor events (a version folder renamed into place, its files) makes one scan. */
#define RELOAD_SCAN_DELAY_MS 100

#define SEDP_RELOAD_ERROR (sedp_reload_error_quark ())
GQuark sedp_reload_error_quark (void);

/**
 * SedpReloadError:
 * @SEDP_RELOAD_ERROR_BUSY: a reload of the model is in progress, or the server is shutting down
 *   (HTTP 409)
 * @SEDP_RELOAD_ERROR_INPUTS: the new model's inputs differ from the serving one's (422)
 * @SEDP_RELOAD_ERROR_WARMUP: a warm-up request failed on the new version (500)
 *
 * The reload's own refusals; a bundle's are SEDP_BUNDLE_ERROR, a pipeline's or stage's the
 * DSL's, loader's or runtime's.
 */
typedef enum {
  SEDP_RELOAD_ERROR_BUSY,
  SEDP_RELOAD_ERROR_INPUTS,
  SEDP_RELOAD_ERROR_WARMUP,
} SedpReloadError;

typedef enum {
  SEDP_RELOAD_FAILED,      /* the old version serves on */
  SEDP_RELOAD_UNCHANGED,   /* the version asked for is the one serving */
  SEDP_RELOAD_LOADED,
  SEDP_RELOAD_ROLLED_BACK,
} SedpReloadResult;

/* Called in the main context when a reload ended (after the swap when there was one). @error is
 * set when @result is FAILED; @version is the version chosen (0 when none could be). */
typedef void (*SedpReloadDone) (SedpReloadResult result, gint64 version, const GError *error,
                                double load_s, double warmup_s, gint64 swap_us,
                                gpointer user_data);

/* Starts loading version @want (0: the policy's) of @s's model in a loader thread; with
 * @rollback a lower version is allowed and the one it replaces is rejected (not loaded again by
 * the watcher). @reason ("watch", "admin", "guard") is static. The loader thread first waits
 * for the version released last to drain (at most two resident). FALSE with BUSY when a reload
 * is in progress or the server drains; @done is not called then. */
gboolean reload_start (SedpServer *server, Served *s, gint64 want, gboolean rollback,
                       const char *reason, SedpReloadDone done, gpointer done_data,
                       GError **error);

/* The p99 of @inst's last latencies, µs (0 without any). */
double instance_p99_us (const Instance *inst);

/* The bound model @r reloads in the version serving now. */
const SedpGraphModel *reloader_serving (const Reloader *r);

/* No scan nor probation tick after this. */
void reloader_stop (Reloader *r);

G_END_DECLS
