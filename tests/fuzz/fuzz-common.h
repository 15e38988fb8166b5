/* sedp fuzz targets — what every target shares (docs/fuzzing.md). A target defines
 * LLVMFuzzerTestOneInput() and, when it needs one-time setup, LLVMFuzzerInitialize(); it is linked
 * either with libFuzzer (-Dfuzz=true, scripts/fuzz) or with replay-main.c, which runs it over a
 * corpus folder as an ordinary test. */
#pragma once

#include <sedp/sedp.h>

#include <stddef.h>
#include <stdint.h>

G_BEGIN_DECLS

/* The entry points libFuzzer calls (and replay-main.c). */
int LLVMFuzzerInitialize (int *argc, char ***argv);
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/**
 * fuzz_init:
 *
 * Once per process, from LLVMFuzzerInitialize(): GLib messages below CRITICAL are dropped (a
 * malformed input is expected to produce warnings, and printing them costs more than parsing);
 * CRITICAL (a g_return_if_fail() the input reached) and ERROR abort, after printing, so that the
 * fuzzer records them as findings. Idempotent.
 */
void fuzz_init (void);

/**
 * fuzz_refused:
 * @what: what refused the input ("open", "decode")
 * @error: (transfer full) (nullable): why
 *
 * Frees @error; with SEDP_FUZZ_VERBOSE set in the environment, prints it first (to see why a
 * seed is refused: `SEDP_FUZZ_VERBOSE=1 fuzz-replay-TARGET FILE`).
 */
void fuzz_refused (const char *what, GError *error);

/**
 * fuzz_decode_request:
 *
 * The body of the `protobuf` and `json` targets: @data decoded as a PredictRequest payload in
 * @format (Content-Type @content_type) into a one-row request frame and the items frame, as
 * data_reader calls sedp_protocol_decode_request(); every decoded value is then read back. A
 * refusal must be an error of SEDP_PROTOCOL_ERROR.
 */
void fuzz_decode_request (const uint8_t *data, size_t size, const char *content_type,
                          SedpProtocolFormat format);

/**
 * fuzz_touch_frame:
 * @frame: (nullable): a frame a parser made
 *
 * Reads every value of every column of @frame (ids through their offsets, strings to their
 * end), so that a column whose sizes disagree with its data shows under ASan or valgrind.
 * Returns: a checksum of what it read (only so that the reads are not optimised away).
 */
guint64 fuzz_touch_frame (const SedpFrame *frame);

/**
 * fuzz_checksum_bytes:
 * @data: (nullable): bytes a parser produced
 * @size: their number
 *
 * Reads @size bytes of @data (so that a buffer shorter than its declared size shows).
 * Returns: their sum.
 */
guint64 fuzz_checksum_bytes (gconstpointer data, gsize size);

/**
 * fuzz_memfd:
 * @data: bytes
 * @size: their number
 *
 * Returns: a file descriptor (memfd, position 0) holding @data, or -1 (errno set); the caller
 * closes it. Its path is "/proc/self/fd/N".
 */
int fuzz_memfd (const guint8 *data, gsize size);

/**
 * fuzz_tmpdir:
 *
 * Returns: (transfer none): a folder of this process, made at the first call and removed (with
 * what it holds) at exit.
 */
const char *fuzz_tmpdir (void);

/**
 * fuzz_clear_dir:
 * @dir: a folder
 *
 * Removes the plain files of @dir (not its subfolders).
 */
void fuzz_clear_dir (const char *dir);

G_END_DECLS
