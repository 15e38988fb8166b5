/* sedp — the evaluator of `sedp tune` (docs/tuning.md, "Measuring a candidate"): one candidate
 * pipeline built from its text, started in process, driven by an open loop of a recorded
 * workload at a fixed rate, and measured: the pipeline's CPU-seconds per answered request, its
 * latency, errors and throughput. A candidate that does not build or start is a result marked
 * infeasible, not an error; errors are for what stops the tune. */
#pragma once

#include "../load/loadgen.h"
#include "../loader/registry.h"

G_BEGIN_DECLS

/** SEDP_TUNE_EVAL_ERROR: errors that stop a tune (not a candidate's failure, which is a result
 * marked infeasible). Codes are #SedpTuneEvalError. */
#define SEDP_TUNE_EVAL_ERROR (sedp_tune_eval_error_quark ())
SEDP_API GQuark sedp_tune_eval_error_quark (void);

/**
 * SedpTuneEvalError:
 * @SEDP_TUNE_EVAL_ERROR_SETTINGS: a field of #SedpTuneMeasure out of range (the message names
 *   the field, its value and its range).
 * @SEDP_TUNE_EVAL_ERROR_BASELINE: the unmodified pipeline given to sedp_tune_check_workload()
 *   does not build or start, or its source stage does not decode payloads.
 * @SEDP_TUNE_EVAL_ERROR_WORKLOAD: a workload request is not answered OK by the unmodified
 *   pipeline (the message names the request, its status and the pipeline's message).
 * @SEDP_TUNE_EVAL_ERROR_SYSTEM: the process's CPU time could not be read (getrusage).
 */
typedef enum {
  SEDP_TUNE_EVAL_ERROR_SETTINGS,
  SEDP_TUNE_EVAL_ERROR_BASELINE,
  SEDP_TUNE_EVAL_ERROR_WORKLOAD,
  SEDP_TUNE_EVAL_ERROR_SYSTEM,
} SedpTuneEvalError;

/**
 * SedpTuneMeasure:
 * @registry: where the candidates' plugins are found (borrowed: it must outlive every
 *   evaluation; sharing one across candidates opens each plugin once)
 * @workload: the requests, loaded once by the caller with sedp_workload_load() and shared by
 *   every candidate (borrowed); each run sends them in order from the first, cycled, so every
 *   candidate gets the same request sequence
 * @rate: the open loop's mean arrival rate, requests per second, more than 0 and at most
 *   1 000 000
 * @warmup_s: seconds of load at @rate before the measured window, not measured; 0 to 3600
 *   (0: none)
 * @duration_s: seconds of the measured window's sending, more than 0 and at most 86 400; the
 *   requests still in flight at its end are waited for and measured
 * @seed: the seed of the Poisson arrivals: the same seed, the same schedule (common random
 *   numbers across candidates); the warm-up uses it too
 * @max_in_flight: the most requests in flight, 1 to 1 000 000 (see #SedpLoadgenConfig); one due
 *   beyond it is not sent and counts as an error
 *
 * How every candidate is measured. Initialize with sedp_tune_measure_init() and set the fields
 * that differ. A plain struct: the caller owns it; the evaluator only reads it.
 */
typedef struct {
  SedpRegistry *registry;
  SedpWorkload *workload;
  double rate;
  double warmup_s;
  double duration_s;
  guint64 seed;
  guint max_in_flight;
} SedpTuneMeasure;

/* Sets @registry and @workload (both borrowed) and the defaults: 100 requests/s, 1 s of
 * warm-up, 5 s measured, seed 1, max_in_flight SEDP_LOADGEN_DEFAULT_MAX_IN_FLIGHT. */
SEDP_API void sedp_tune_measure_init (SedpTuneMeasure *measure, SedpRegistry *registry,
                                      SedpWorkload *workload);

/* Returns: %FALSE with @error (%SEDP_TUNE_EVAL_ERROR_SETTINGS naming the field, its value and
 * its range) when a field is out of range or @registry or @workload is missing. */
SEDP_API gboolean sedp_tune_measure_check (const SedpTuneMeasure *measure, GError **error);

/**
 * SedpTuneResult:
 * @feasible: whether the candidate built and started; when %FALSE only @reason, @wall_s and
 *   @threads (0) are set
 * @reason: (nullable): why the candidate is infeasible: the message of the error that stopped
 *   it (its file, line and stage; a missing plugin's name); %NULL when feasible
 * @cpu_s_per_request: @cpu_s / @answered: the pipeline's CPU-seconds per request answered OK;
 *   +∞ when none was
 * @cpu_s: the process's CPU time (user + system, every thread, getrusage (RUSAGE_SELF)) over
 *   the measured run, less @loadgen_cpu_s
 * @loadgen_cpu_s: the CPU time of the load generator's thread over the measured run
 *   (getrusage (RUSAGE_THREAD) of the thread that ran it: its schedule, sends and accounting)
 * @p50_ms, @p99_ms: the latencies of the requests answered OK, from their scheduled send, in
 *   milliseconds (nearest rank; 0 when none was answered)
 * @arrivals: requests due in the measured window (the same for the same seed, rate and
 *   duration)
 * @answered: of them, requests answered OK
 * @errors: of them, requests not answered OK (refused, failed, timed out, unsent)
 * @error_share: @errors / @arrivals (0 when nothing was due)
 * @answered_per_s: @answered / @measured_s
 * @measured_s: the wall time of the measured run: its sending and its drain
 * @wall_s: the wall time of the whole evaluation: build, start, warm-up, measured run, stop
 * @threads: the pipeline's worker threads (staged: the sum of the stages' parallelism; sync
 *   mode: its pool)
 * @first_error: (nullable): the first failed request's description, when @errors > 0
 * @degraded: sedp_tune_evaluate() only: how much the pipeline's degraded counters
 *   (sedp_stage_context_add_degraded_counter(): lookups answered with default values because
 *   their backend failed, candidates shed under load) rose during the measured run, in the
 *   stages' own units; answers counted OK that were degraded. The capacity search
 *   refuses a probe during which they rose (sedp_tune_find_capacity())
 * @capacity_rps: sedp_tune_find_capacity() only (0 otherwise): the highest rate probed whose
 *   p99 kept the SLO with under 1 % errors, 0 when none did; the latency and count fields are
 *   then that probe's, and the CPU fields NaN (a search's probes are not measured for CPU)
 *
 * What one evaluation measured. Owns its strings: clear with sedp_tune_result_clear().
 */
typedef struct {
  gboolean feasible;
  char *reason;
  double cpu_s_per_request;
  double cpu_s;
  double loadgen_cpu_s;
  double p50_ms;
  double p99_ms;
  guint64 arrivals;
  guint64 answered;
  guint64 errors;
  double error_share;
  double answered_per_s;
  double measured_s;
  double wall_s;
  guint threads;
  char *first_error;
  double capacity_rps;
  guint64 degraded;
} SedpTuneResult;

/* Why answers count as degraded: "the pipeline's degraded counters rose by @rose (…)", the
 * one wording of the tuner's reason and the capacity search's refusal. Free it. */
SEDP_API char *sedp_tune_degraded_reason (guint64 rose);

/* Frees @result's strings and zeroes it; clearing twice is harmless. */
SEDP_API void sedp_tune_result_clear (SedpTuneResult *result);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SedpTuneResult, sedp_tune_result_clear)

/**
 * sedp_tune_evaluate:
 * @measure: how to measure (checked with sedp_tune_measure_check())
 * @text: the candidate pipeline, keyfile text (the DSL of docs/pipeline-dsl.md)
 * @path: the path its messages name and its relative paths are anchored at (the pipeline file
 *   the candidate was derived from)
 * @result: (out caller-allocates): what was measured; overwritten (not cleared) first
 *
 * Parses, compiles, creates and starts the candidate, runs @measure->warmup_s of warm-up and
 * then the measured window at @measure->rate in an open loop on the calling thread, and stops
 * the pipeline. A candidate that fails to parse, compile (a missing plugin, a bad option), be
 * created or started, or whose source stage does not decode payloads (data_reader), gives
 * %TRUE with @result->feasible %FALSE and the reason. A candidate that runs but answers badly
 * is feasible: its errors and latency are in @result for the tuner to judge.
 *
 * Determinism: the same seed, rate and duration give the same arrival schedule, and the same
 * workload the same requests in the same order, for every candidate. What still varies is the
 * machine: scheduling, other processes, CPU frequency and caches; repeat the measure where the
 * decision is close (sedp_tune_evaluate_repeat()).
 *
 * Thread-safety: the CPU time is the whole process's, so nothing else in the process may work
 * during an evaluation (no other evaluation, no other pipeline). Blocks for about
 * warmup_s + duration_s plus the drains and the pipeline's start and stop. Retrying after an
 * error is pointless unless the settings change; a %SEDP_TUNE_EVAL_ERROR_SYSTEM may pass.
 *
 * Returns: %TRUE when measured or found infeasible; %FALSE with @error only for what stops the
 * tune: %SEDP_TUNE_EVAL_ERROR_SETTINGS, %SEDP_TUNE_EVAL_ERROR_SYSTEM, or the load generator's
 * %SEDP_LOADGEN_ERROR_SYSTEM (no timer). @result is then cleared.
 */
SEDP_API gboolean sedp_tune_evaluate (const SedpTuneMeasure *measure, const char *text,
                                      const char *path, SedpTuneResult *result, GError **error);

/**
 * sedp_tune_find_capacity:
 * @measure: how to measure: @measure->rate is where the search starts, @measure->duration_s
 *   each probe's length, @measure->warmup_s a warm-up at @measure->rate first
 * @slo_p99_ms: the p99 latency, in ms, a rate must keep (more than 0)
 * @result: (out caller-allocates): @result->capacity_rps and the passing probe's latencies and
 *   counts; overwritten (not cleared) first
 *
 * The candidate's capacity: built and started as sedp_tune_evaluate() builds it, then the
 * capacity search of sedp_loadgen_find_capacity() (doubling or halving from @measure->rate,
 * then bisecting to 5 %, at most 12 probes) in an open loop on the calling thread. A candidate
 * that does not build is infeasible, as in sedp_tune_evaluate(); one that passes at no rate is
 * feasible with @result->capacity_rps 0 and the reason in @result->first_error. Blocks for
 * about the warm-up plus 6 to 12 probes. Same thread-safety and errors as sedp_tune_evaluate().
 *
 * Returns: %TRUE when measured or found infeasible; %FALSE with @error otherwise (@result
 * cleared).
 */
SEDP_API gboolean sedp_tune_find_capacity (const SedpTuneMeasure *measure, const char *text,
                                           const char *path, double slo_p99_ms,
                                           SedpTuneResult *result, GError **error);

/**
 * SedpTuneRepeated:
 * @feasible: whether every repeat was feasible (the first infeasible one ends the repeats)
 * @reason: (nullable): the infeasible repeat's reason
 * @median_cpu_s_per_request: the median of the repeats' CPU-seconds per answered request (the
 *   mean of the middle two for an even count; NaN when no repeat was measured, and for
 *   capacity repeats, which measure no CPU)
 * @median_capacity_rps: the median of the repeats' @capacity_rps (the same way): capacity
 *   repeats (#SedpTuneRounds's @capacity_slo_p99_ms) only, 0 otherwise
 * @worst_p99_ms: the highest of the repeats' p99 latencies
 * @worst_error_share: the highest of the repeats' error shares
 * @worst_degraded: the highest of the repeats' @degraded
 * @n_repeats: the repeats measured (@repeats in @results)
 * @results: (array length=n_repeats): each repeat's result, in order
 *
 * What sedp_tune_evaluate_repeat(), sedp_tune_evaluate_rounds() or sedp_tune_measure_rounds()
 * measured. Owns @results and @reason: clear with
 * sedp_tune_repeated_clear().
 */
typedef struct {
  gboolean feasible;
  char *reason;
  double median_cpu_s_per_request;
  double median_capacity_rps;
  double worst_p99_ms;
  double worst_error_share;
  guint64 worst_degraded;
  guint n_repeats;
  SedpTuneResult *results;
} SedpTuneRepeated;

/* Frees @repeated's results and reason and zeroes it; clearing twice is harmless. */
SEDP_API void sedp_tune_repeated_clear (SedpTuneRepeated *repeated);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (SedpTuneRepeated, sedp_tune_repeated_clear)

/**
 * sedp_tune_evaluate_repeat:
 * @repeats: how many times to measure, 1 to 100
 * @out: (out caller-allocates): the repeats and their summary; overwritten (not cleared) first
 *
 * sedp_tune_evaluate() @repeats times in a row, each with a freshly built pipeline and the same
 * seed (so the repeats differ only by the machine), for the candidates whose comparison is
 * close. The median CPU per request resists one disturbed repeat; the worst p99 is kept, as a
 * latency budget must hold in every repeat. Same thread-safety and errors as
 * sedp_tune_evaluate() (%SEDP_TUNE_EVAL_ERROR_SETTINGS also for @repeats out of range).
 *
 * Returns: %TRUE when measured or found infeasible; %FALSE with @error otherwise (@out cleared).
 */
SEDP_API gboolean sedp_tune_evaluate_repeat (const SedpTuneMeasure *measure, const char *text,
                                             const char *path, guint repeats,
                                             SedpTuneRepeated *out, GError **error);

/**
 * sedp_tune_evaluate_rounds:
 * @texts: (array length=n): the candidates, pipeline text each, all anchored at @path
 * @n: how many, at least 1
 * @repeats: rounds, 1 to 100
 * @outs: (out caller-allocates) (array length=n): each candidate's repeats and summary, as
 *   sedp_tune_evaluate_repeat() gives them; overwritten (not cleared) first
 *
 * The candidates measured in @repeats interleaved rounds: each round measures every candidate
 * still feasible once, the first round from @texts[0], each next round starting one further
 * along (0 1 2, 1 2 0, 2 0 1, …), so that a machine that slows or speeds up during the rounds
 * weighs on all of them alike; one measured after another, the later ones take the drift
 * (the CTR example's baseline read 6.83 ms of CPU per request at a tune's start and 7.62 ms at
 * its end). A candidate's first infeasible repeat ends its repeats. Same thread-safety and
 * errors as sedp_tune_evaluate_repeat().
 *
 * Returns: %TRUE when measured or found infeasible; %FALSE with @error otherwise (every @outs
 * cleared).
 */
SEDP_API gboolean sedp_tune_evaluate_rounds (const SedpTuneMeasure *measure,
                                             const char *const *texts, guint n, const char *path,
                                             guint repeats, SedpTuneRepeated *outs,
                                             GError **error);

/**
 * SedpTuneRoundsFunc:
 * @candidate: the index in the texts of the candidate about to be measured
 * @round: its round, from 0
 * @user_data: #SedpTuneRounds's @user_data
 *
 * Called before each measure of sedp_tune_measure_rounds(), on the measuring thread.
 *
 * Returns: %TRUE to measure it; %FALSE to end the rounds there (a signal, say).
 */
typedef gboolean (*SedpTuneRoundsFunc) (guint candidate, guint round, gpointer user_data);

/**
 * SedpTuneRounds:
 * @repeats: rounds, 1 to 100
 * @capacity_slo_p99_ms: 0 (default): each measure is sedp_tune_evaluate(); more than 0: each is
 *   sedp_tune_find_capacity() at this p99 SLO, in ms, and the summaries' @median_capacity_rps
 *   is set
 * @before: (nullable): called before each measure; its %FALSE ends the rounds early
 * @user_data: @before's user data
 *
 * How sedp_tune_measure_rounds() measures. Initialize with sedp_tune_rounds_init(); a plain
 * struct the caller owns.
 */
typedef struct {
  guint repeats;
  double capacity_slo_p99_ms;
  SedpTuneRoundsFunc before;
  gpointer user_data;
} SedpTuneRounds;

/* Sets @repeats and the defaults: sedp_tune_evaluate() measures, no @before. */
SEDP_API void sedp_tune_rounds_init (SedpTuneRounds *rounds, guint repeats);

/**
 * sedp_tune_measure_rounds:
 * @texts: (array length=n): the candidates, pipeline text each, all anchored at @path
 * @n: how many, at least 1
 * @rounds: how many rounds, what each measure is, and the hook before each
 * @outs: (out caller-allocates) (array length=n): each candidate's repeats and summary;
 *   overwritten (not cleared) first
 *
 * The rounds of sedp_tune_evaluate_rounds() (the order of its measures, a candidate's first
 * infeasible repeat ending its repeats), each measure sedp_tune_evaluate() or, with
 * @rounds->capacity_slo_p99_ms, sedp_tune_find_capacity(). When @rounds->before returns
 * %FALSE the rounds end there: %TRUE, each of @outs summarising the repeats measured so far
 * (possibly none: medians NaN), fewer than @rounds->repeats. Same thread-safety and errors as
 * sedp_tune_evaluate_rounds() (%SEDP_TUNE_EVAL_ERROR_SETTINGS also for a negative or NaN
 * @capacity_slo_p99_ms).
 *
 * Returns: %TRUE when measured, found infeasible, or ended by @rounds->before; %FALSE with
 * @error otherwise (every @outs cleared).
 */
SEDP_API gboolean sedp_tune_measure_rounds (const SedpTuneMeasure *measure,
                                            const char *const *texts, guint n, const char *path,
                                            const SedpTuneRounds *rounds, SedpTuneRepeated *outs,
                                            GError **error);

/**
 * sedp_tune_check_workload:
 * @registry: where the plugins are found (borrowed)
 * @workload: the workload the tune will send (borrowed)
 * @text: the unmodified pipeline, keyfile text
 * @path: the path its messages name and its relative paths are anchored at
 *
 * Runs every request of @workload once through the unmodified pipeline (at most 64 in flight,
 * submission refused when full retried) before a tune, so that a workload the pipeline cannot
 * answer stops the tune at once instead of making every candidate look bad. Blocks until every
 * request completed. Measures nothing, so other work may run in the process meanwhile; call it
 * from one thread at a time per registry. Retrying without changing the workload or the
 * pipeline gives the same answer, unless requests timed out on a busy machine.
 *
 * Returns: %TRUE when every request was answered OK; %FALSE with @error:
 * %SEDP_TUNE_EVAL_ERROR_BASELINE when the pipeline does not build or start, or its source does
 * not decode payloads; %SEDP_TUNE_EVAL_ERROR_WORKLOAD naming the first request (by its index in
 * the workload) whose status is not OK, its status and the pipeline's message.
 */
SEDP_API gboolean sedp_tune_check_workload (SedpRegistry *registry, SedpWorkload *workload,
                                            const char *text, const char *path, GError **error);

G_END_DECLS
