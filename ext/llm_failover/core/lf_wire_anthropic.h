/* Anthropic messages: what lf_wire.c asks of the protocol's request file
 * (lf_wire_anthropic_request.c) and response file
 * (lf_wire_anthropic_response.c). */
#ifndef LF_WIRE_ANTHROPIC_H
#define LF_WIRE_ANTHROPIC_H

#include <json-c/json.h>
#include "lf_wire.h"

/* The body of checked params into out (reserved, empty); schema is the
 * schema's JSON text or NULL (a forced tool call). 0, or -1 when out of
 * memory. */
int lf_wire_anthropic_build(const lf_request_params *p, const char *schema, lf_buf *out);

/* A parsed answer body into out (cleared), an error body into err; with
 * tool, a tool_use block's input is the text (a schema answer). */
int lf_wire_anthropic_answer(json_object *root, lf_answer *out, lf_wire_error *err, int tool);
/* One SSE event with data (lf_stream_event's contract). */
int lf_wire_anthropic_stream_event(lf_stream_state *s, const lf_sse_event *ev);

#endif
