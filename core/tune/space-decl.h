/* sedp — one entry of a [tune] group and its declaration, `TYPE [RANGE] [log]` (space-decl.c),
 * for space-parse.c. */
#pragma once

#include "space-private.h"

/* One KEY = VALUE of a [tune] group. */
typedef struct {
  const char *key;   /* as written */
  const char *value; /* after ${VAR} substitution */
  guint line;
  const char *where; /* "FILE:LINE: [tune] KEY", the start of its messages */
} SedpTuneEntry;

/* What a value declares. */
typedef struct {
  SedpTuneType type;
  double low, high; /* bool 0..1, enum 0..k-1 */
  char *low_text;   /* the range's ends as written, for messages */
  char *high_text;
  gboolean log;
  char **choices;   /* enum */
} SedpTuneDecl;

/* Sets @error (SEDP_TUNE_SPACE_ERROR, @code) to "WHERE: MESSAGE". */
void sedp_tune_entry_error (const SedpTuneEntry *e, GError **error, SedpTuneSpaceError code,
                            const char *format, ...) G_GNUC_PRINTF (4, 5);

/* Reads @e's value: the type's words, a range that is not empty, `log` where the logarithm
 * takes the low end, an enum's list. Clear @d afterwards, also on error. */
gboolean sedp_tune_decl_parse (const SedpTuneEntry *e, SedpTuneDecl *d, GError **error);

void sedp_tune_decl_clear (SedpTuneDecl *d);

/* Whether @d fits the key @t names: its type, the runtime's or the option's limits, the
 * option's words. @t must be a tunable runtime key or an int, double, bool or enum option. */
gboolean sedp_tune_decl_fits (const SedpTuneEntry *e, const SedpTuneDecl *d,
                              const SedpTuneTarget *t, GError **error);
