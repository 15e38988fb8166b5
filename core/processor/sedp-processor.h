/* sedp — libsedp_processor.so: DeepRec Processor's C ABI (libserving_processor.so) over a sedp
 * pipeline, so that a host written for DeepRec loads sedp unchanged (docs/compat.md,
 * "libsedp_processor.so").
 *
 * The library exports exactly the four functions of DeepRec's processor.h, plus
 * sedp_processor_release(), which DeepRec hosts never call. Requests and answers are DeepRec's
 * `tensorflow.eas.PredictRequest` / `PredictResponse` protobuf; the model's name is served as in
 * `sedp serve --model` (docs/compat.md).
 *
 * Plugins: the pipeline's stage plugins are found as by the sedp program: the folders of
 * SEDP_PLUGIN_PATH (':'-separated), then the installed plugin folder
 * (PREFIX/LIBDIR/sedp-1/plugins).
 *
 * Buffers: every buffer this library stores through an output pointer (an answer, an error
 * message, the debug string, the model info) is allocated with malloc() and belongs to the
 * caller, who frees it with free() — always free(), never delete[] (DeepRec mixes strndup() and
 * new[]; this library does not). Text buffers (error messages, the debug string) are
 * NUL-terminated; the size stored excludes the NUL.
 *
 * Thread-safety: initialize() may run in several threads at once (each makes its own model);
 * process(), batch_process() and get_serving_model_info() may be called on one model from any
 * number of threads at once; sedp_processor_release() must be the last call on its model.
 */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

/**
 * initialize:
 * @model_entry: what to serve: a file whose name ends in `.onnx` is a bare ONNX model, served by
 *   the implicit pipeline of docs/compat.md ("A bare model": data_reader, then model_inference);
 *   any other path is a pipeline file (docs/pipeline-dsl.md) declaring its signature in a
 *   `[signature NAME]` group or answering its float32 `outputs` columns
 * @model_config: (nullable): DeepRec's ModelConfig JSON object; %NULL or "" is the empty
 *   object. Honoured keys: `session_num` (model_inference `instances`),
 *   `select_session_policy` ("MOD"/"RR": `select = mod|rr`), `inter_op_parallelism_threads`
 *   (the model stage's `parallelism`), `signature_name`, `warmup_file_name`; every other key is
 *   ignored with one log line naming it (docs/compat.md has the table)
 * @state: (out): 0 on success, -1 on failure
 *
 * Parses @model_config, builds and starts the pipeline and runs the warm-up request before
 * returning. On failure, writes a message naming the problem (the key, the file, the line) to
 * stderr.
 *
 * Returns: the model handle for the other functions, or %NULL with *@state = -1.
 */
void *initialize (const char *model_entry, const char *model_config, int *state);

/**
 * process:
 * @model_buf: initialize()'s handle
 * @input_data: a serialized PredictRequest
 * @input_size: its size in bytes; 0: no request, the model's debug string is answered instead
 *   (a JSON object: `signature_name`, `inputs` and `outputs` as DeepRec's (`name`, `shape` with
 *   -1 for the batch, `type` as "DT_FLOAT", "DT_INT64", "DT_STRING", or "DT_INVALID" for an
 *   input typed by the request), plus sedp's `pipeline` name and `stages` (each one's `name`,
 *   `plugin`, `parallelism` and plugin `options` as served))
 * @output_data: (out) (transfer full): the serialized PredictResponse, or the error message;
 *   free it with free()
 * @output_size: (out): its size in bytes
 *
 * Decodes the request against the signature, runs it through the pipeline and encodes the
 * answer: one float32 ArrayProto of shape [batch, dims…] per output (or per output_filter entry).
 * An invalid request is answered, never fatal.
 *
 * Returns: 200 on success; 500 on any failure, the message in *@output_data (e.g.
 *   `[sedp] Processor predict failed: invalid request: inputs.x: …`).
 */
int process (void *model_buf, const void *input_data, int input_size, void **output_data,
             int *output_size);

/**
 * batch_process:
 * @model_buf: initialize()'s handle
 * @input_data: the serialized PredictRequests, **ended by a %NULL entry**: the batch is the
 *   entries before the first %NULL (a host allocates one entry more than it has requests and
 *   sets it to %NULL). DeepRec counts the batch as sizeof (input_data) / sizeof (void *), which
 *   is always 1 for a pointer parameter; this rule replaces it.
 * @input_size: the size of each request (as many entries as the batch); %NULL: no batch, the
 *   debug string is answered in @output_data[0] (as DeepRec, which tests this pointer against 0)
 * @output_data: (out caller-allocates): as many entries as the batch; each is set to its
 *   request's serialized PredictResponse (free each with free())
 * @output_size: (out caller-allocates): their sizes
 *
 * Decodes every request first; then submits them all before waiting for any, so that the model
 * stage batches them; then encodes every answer.
 *
 * Returns: 200 when every request succeeded. 500 when any failed: then @output_data[0] holds
 *   the message naming the request (`request 2 of 4: invalid request: …`), @output_size[0] its
 *   size, and every other entry is %NULL with size 0 (no answer is returned in part).
 */
int batch_process (void *model_buf, const void *input_data[], int *input_size,
                   void *output_data[], int *output_size);

/**
 * get_serving_model_info:
 * @model_buf: initialize()'s handle
 * @output_data: (out) (transfer full): a serialized `tensorflow.eas.ServingModelInfo`
 *   (`string model_path = 1`), free it with free()
 * @output_size: (out): its size
 *
 * model_path is the served model: the ONNX file's absolute path; for a pipeline, the folder of
 * its first `[model NAME]`'s bound version, else the pipeline file's absolute path. (DeepRec
 * answers its checkpoint's path.)
 *
 * Returns: 200, or 500 with the message in *@output_data.
 */
int get_serving_model_info (void *model_buf, void **output_data, int *output_size);

/**
 * sedp_processor_release:
 * @model_buf: (transfer full) (nullable): initialize()'s handle
 *
 * sedp's own addition, never called by DeepRec hosts (their models live as long as the process):
 * stops the pipeline, once the requests in flight completed, and frees everything the model
 * holds, for tests and leak checkers. No other call on @model_buf may be running or follow.
 */
void sedp_processor_release (void *model_buf);

#ifdef __cplusplus
}
#endif
