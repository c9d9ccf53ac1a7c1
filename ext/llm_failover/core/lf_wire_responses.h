/* OpenAI's Responses API (POST /responses, OpenAI and Azure): what lf_wire.c
 * asks of the protocol's request file (lf_wire_responses_request.c) and
 * response file (lf_wire_responses_response.c). Its embeddings are the
 * OpenAI-compatible /embeddings (lf_wire_openai.h). */
#ifndef LF_WIRE_RESPONSES_H
#define LF_WIRE_RESPONSES_H

#include <json-c/json.h>
#include "lf_wire.h"

/* The body of checked params into out (reserved, empty); schema is the
 * schema's JSON text or NULL. 0, or -1 when out of memory. */
int lf_wire_responses_build(const lf_request_params *p, const char *schema, lf_buf *out);
/* Whether text is what lf_message.reasoning must be for this protocol: a
 * JSON array of objects. */
int lf_wire_responses_reasoning_ok(const char *text, size_t len);

/* A parsed answer body into out (cleared), an error body or a failed
 * response into err: LF_WIRE_OK, LF_WIRE_INVALID or LF_WIRE_ERROR_BODY. */
int lf_wire_responses_answer(json_object *root, lf_answer *out, lf_wire_error *err);
/* One SSE event with data (lf_stream_event's contract). */
int lf_wire_responses_stream_event(lf_stream_state *s, const lf_sse_event *ev);

#endif
