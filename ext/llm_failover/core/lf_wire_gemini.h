/* Google's Gemini generateContent, on Google AI or on Vertex AI (publisher
 * google): what lf_wire.c asks of the protocol's request file
 * (lf_wire_gemini_request.c) and response file (lf_wire_gemini_response.c). */
#ifndef LF_WIRE_GEMINI_H
#define LF_WIRE_GEMINI_H

#include <json-c/json.h>
#include "lf_wire.h"

/* What a Gemini 3 model takes, in place of a signature it made, for the first
 * call of a step of the current turn that another host or protocol made
 * (Google's documented sentinel: without one such a request is a 400). */
#define LF_GEMINI_FOREIGN_SIGNATURE "skip_thought_signature_validator"

/* The body of checked params into out (reserved, empty); schema is the
 * schema's JSON text or NULL. 0, or -1 when out of memory. */
int lf_wire_gemini_build(const lf_request_params *p, const char *schema, lf_buf *out);
/* The batchEmbedContents body (LF_REQUEST_EMBEDDINGS): 0, or -1 with errmsg. */
int lf_wire_gemini_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg);

/* A parsed answer body into out (cleared), an error body into err (a blocked
 * prompt or answer too: type "content_filter", code Google's reason; a call
 * the model could not write: type its finishReason). */
int lf_wire_gemini_answer(json_object *root, lf_answer *out, lf_wire_error *err);
/* One SSE event with data (lf_stream_event's contract): each is a whole
 * GenerateContentResponse; the one whose candidate has a finishReason ends
 * the stream. */
int lf_wire_gemini_stream_event(lf_stream_state *s, const lf_sse_event *ev);
/* A parsed batchEmbedContents answer (lf_wire_parse_embeddings_for). */
int lf_wire_gemini_embeddings(json_object *root, size_t n_inputs, lf_answer *out, lf_wire_error *err);

#endif
