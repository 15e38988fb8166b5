/* sedp — the model API of `sedp serve` (model-api.c; docs/compat.md): TF Serving's REST routes
 * and DeepRec's protobuf over them. Main context only. */
#pragma once

#include "server-private.h"

G_BEGIN_DECLS

/* One model-API prediction in flight: its format and decoded request (for the answer). */
typedef struct _ModelApiCall ModelApiCall;

void model_api_call_free (ModelApiCall *call);

/* Handles every /v1/models/ route of a served model or pipeline: POST …:predict (through
 * server_handle_predict()), GET NAME[/versions/V] (status) and GET NAME/metadata. FALSE when
 * @path is not one (the caller goes on: GET /v1/models/NAME of a [model NAME] group is admin.c's). */
gboolean model_api_handle (SedpServer *server, SoupServerMessage *msg, const char *path);

/* 404 for a /v1/models/ path that names no served model, in TF Serving's error format. */
void model_api_not_found (SoupServerMessage *msg, const char *path);

/* The format of a predict body by its content type: JSON is TF Serving's, protobuf DeepRec's;
 * FALSE for any other. */
gboolean model_api_format_of (const char *content_type, SedpModelApiFormat *format);

/* Decodes @body against @served's signature into a new request (its items set, no payload) and
 * *@call_out; NULL after answering 400 with the decoder's error. @serial numbers its id. */
SedpRequest *model_api_request (SoupServerMessage *msg, const Served *served,
                                SedpModelApiFormat format, GBytes *body, guint64 serial,
                                ModelApiCall **call_out);

/* Answers @msg from the completed @res of @call; TRUE when it was a server error (5xx). */
gboolean model_api_deliver (SoupServerMessage *msg, const SedpResult *res,
                            const ModelApiCall *call);

G_END_DECLS
