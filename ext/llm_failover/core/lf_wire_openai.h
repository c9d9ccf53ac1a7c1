/* OpenAI chat completions, and every compatible API: what lf_wire.c asks of
 * the protocol's request file (lf_wire_openai_request.c) and response file
 * (lf_wire_openai_response.c). The embeddings answer is public
 * (lf_wire_parse_embeddings, lf_wire.h). */
#ifndef LF_WIRE_OPENAI_H
#define LF_WIRE_OPENAI_H

#include <json-c/json.h>
#include "lf_wire.h"

/* The chat body of checked params into out (reserved, empty); schema is the
 * schema's JSON text or NULL. 0, or -1 when out of memory. */
int lf_wire_openai_build(const lf_request_params *p, const char *schema, lf_buf *out);
/* The /embeddings body (LF_REQUEST_EMBEDDINGS): 0, or -1 with errmsg. */
int lf_wire_openai_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg);

/* A parsed answer body into out (cleared), an error body into err:
 * LF_WIRE_OK, LF_WIRE_INVALID or LF_WIRE_ERROR_BODY. */
int lf_wire_openai_answer(json_object *root, lf_answer *out, lf_wire_error *err);
/* One SSE event with data (lf_stream_event's contract). */
int lf_wire_openai_stream_event(lf_stream_state *s, const lf_sse_event *ev);

#endif
