/* Bedrock Converse and ConverseStream: what lf_wire.c asks of the protocol's
 * request file (lf_wire_bedrock_request.c) and response file
 * (lf_wire_bedrock_response.c). */
#ifndef LF_WIRE_BEDROCK_H
#define LF_WIRE_BEDROCK_H

#include <json-c/json.h>
#include "lf_wire.h"

/* The body of checked params into out (reserved, empty); schema is the
 * schema's JSON text or NULL (a forced tool call). 0, or -1 when out of
 * memory. */
int lf_wire_bedrock_build(const lf_request_params *p, const char *schema, lf_buf *out);

/* A parsed answer body into out (cleared), an error body into err; with
 * tool, a toolUse block's input is the text (a schema answer). */
int lf_wire_bedrock_answer(json_object *root, lf_answer *out, lf_wire_error *err, int tool);
/* One event-stream message (lf_stream_message's contract). */
int lf_wire_bedrock_stream_message(lf_stream_state *s, const lf_es_message *m);

#endif
