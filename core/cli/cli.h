/* sedp — the host binary's subcommands. */
#pragma once

#include "../graph/graph.h"
#include "../io/request-file.h"
#include "../runtime/pipeline.h"

#include <signal.h>

/* Each subcommand gets its arguments without the program name: argv[0] is the subcommand. It
 * returns the process exit status. */
int sedp_cmd_bench (int argc, char **argv);
int sedp_cmd_check (int argc, char **argv);
int sedp_cmd_cube (int argc, char **argv);
int sedp_cmd_inspect (int argc, char **argv);
int sedp_cmd_model (int argc, char **argv);
int sedp_cmd_run (int argc, char **argv);
int sedp_cmd_serve (int argc, char **argv);
int sedp_cmd_shed (int argc, char **argv);
int sedp_cmd_tune (int argc, char **argv);

typedef struct _SedpTrace SedpTrace;

/* --trace FILE and --trace-sample N (trace-option.c): checks N and that FILE can be written
 * (else prints the error and sets *@ok FALSE: exit with 2); when @path is set, makes the trace every pipeline created from now on records
 * into (core/runtime/trace.h). NULL without --trace. */
SedpTrace *sedp_cli_trace_open (const char *subcommand, const char *path, gint sample, gboolean *ok);

/* Once the pipelines stopped: writes @trace (NULL: nothing) to its file, says so on stderr
 * (unless @quiet and nothing was dropped) and frees it. FALSE when it could not be written. */
gboolean sedp_cli_trace_close (const char *subcommand, SedpTrace *trace, gboolean quiet);

/* Prints "sedp SUBCOMMAND: MESSAGE" on stderr. */
void sedp_cli_error (const char *subcommand, const char *message);

/* Parses @argv with @entries; prints the error and returns FALSE on bad options. */
gboolean sedp_cli_parse (const char *subcommand, const char *params, const char *summary,
                         const GOptionEntry *entries, int *argc, char ***argv);

/* The signal that interrupted a long command (sedp cube build, sedp model split), 0 while none
 * did: set once sedp_cli_catch_signals (TRUE) is on. */
extern volatile sig_atomic_t sedp_cli_interrupted;

/* @on: SIGINT, SIGTERM and SIGHUP no longer end the process but set sedp_cli_interrupted (reset
 * to 0 here), so that the command stops cleanly and removes its temporary files. No SA_RESTART: a
 * blocked read returns, and the command's loop sees the flag. !@on: the default actions back. */
void sedp_cli_catch_signals (gboolean on);

/* --cpus LIST (NULL: nothing to do): restricts the calling thread, and so every thread it starts
 * afterwards, to the CPUs of LIST ("0,2-3"), as taskset does. Prints the error and returns FALSE
 * when LIST is not a CPU list or names a CPU this machine lacks. */
gboolean sedp_cli_apply_cpus (const char *subcommand, const char *list);

/* sedp serve's heap (serve-heap.c). sedp_serve_heap_tune() fixes glibc's mmap and trim
 * thresholds (256 KiB, 1 MiB) unless GLIBC_TUNABLES is set; call it before any thread starts.
 * sedp_serve_heap_watch_start() starts a thread that gives every whole free page of the heap
 * back to the system each @interval_s seconds (0: none, and it returns NULL);
 * sedp_serve_heap_watch_stop() stops and joins it, and frees @watch (NULL: nothing to do). */
typedef struct _SedpServeHeapWatch SedpServeHeapWatch;
void sedp_serve_heap_tune (void);
SedpServeHeapWatch *sedp_serve_heap_watch_start (guint interval_s);
void sedp_serve_heap_watch_stop (SedpServeHeapWatch *watch);

/* A subcommand of a command group (sedp model …, sedp cube …). */
typedef struct {
  const char *name;
  int (*run) (int argc, char **argv);
  const char *summary;
} SedpCliCommand;

/* Runs the subcommand named by argv[1] of group @group (argv[0]); prints the group's usage with
 * @description and @footer (may be NULL) for --help, no argument, or an unknown name. */
int sedp_cli_dispatch (const char *group, const char *description, const char *footer,
                       const SedpCliCommand *commands, guint n_commands, int argc, char **argv);
