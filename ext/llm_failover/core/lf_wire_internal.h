/* What the wire layer's files share and nobody else uses: the json-c
 * readers of protocol pieces that answers, streams and error bodies have in
 * common. */
#ifndef LF_WIRE_INTERNAL_H
#define LF_WIRE_INTERNAL_H

#include <stdarg.h>
#include <json-c/json.h>
#include "lf_wire.h"

/* lf_wire_error.c: fills e from a parsed body; 1 when it has one of the
 * error shapes. */
int lf_wire_error_from_json(json_object *root, lf_wire_error *e);

/* lf_wire_embed.c: an embeddings request body (LF_REQUEST_EMBEDDINGS). */
int lf_wire_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg);

/* lf_wire_answer.c: the choice with index 0, else the first; NULL for none. */
json_object *lf_wire_first_choice(json_object *choices);
/* lf_wire_answer.c: token counts of a usage object into a; 1 when seen. */
int lf_wire_openai_usage(json_object *usage, lf_answer *a);
int lf_wire_anthropic_usage(json_object *usage, lf_answer *a);

/* lf_wire_tools.c: appends an empty call to the list v (n of cap), with
 * key in keys[] when keys is non-NULL; NULL when out of memory. */
lf_answer_call *lf_wire_call_push(lf_answer_call **v, long **keys, size_t *n, size_t *cap, long key);
/* Frees the buffers of n calls (not the array). */
void lf_wire_calls_free(lf_answer_call *v, size_t n);
/* A call is complete: arguments never sent become "{}". */
int lf_wire_call_done(lf_answer_call *c);
/* tool_use (Anthropic) and function_call (older OpenAI) become
 * LF_FINISH_TOOL_CALLS. */
int lf_wire_finish_reason(lf_buf *reason);

typedef enum lf_role {
    LF_ROLE_UNKNOWN = 0,
    LF_ROLE_SYSTEM,
    LF_ROLE_DEVELOPER,
    LF_ROLE_USER,
    LF_ROLE_ASSISTANT,
    LF_ROLE_TOOL
} lf_role;

/* lf_wire_request.c: a message's role; a failure message into errmsg
 * (when non-NULL), sanitized; {"role","content"} (a comma first unless
 * first). */
lf_role lf_wire_role(const char *role);
void lf_wire_fail(lf_buf *errmsg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lf_wire_vfail(lf_buf *errmsg, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
int lf_wire_put_message(lf_buf *out, const char *role, const char *content, size_t len, int first);

/* lf_wire_answer.c: what every response parser does around its own reading.
 * begin clears out and err, and gives the error to fill (scratch, initialised,
 * when the caller passed none); end clears out unless rc is LF_WIRE_OK and the
 * error unless rc is LF_WIRE_ERROR_BODY, frees scratch, and returns rc. */
lf_wire_error *lf_wire_parse_begin(lf_answer *out, lf_wire_error *err, lf_wire_error *scratch);
int lf_wire_parse_end(int rc, lf_answer *out, lf_wire_error *err, lf_wire_error *scratch);

/* lf_wire_request_tools.c: the tool parts of a request body (names checked by
 * lf_wire_name_ok, lf_wire.h); the tools
 * and tool choice checked (has_tool_turns: the messages hold calls or
 * results); a message's content ("" for none). Each put returns 0, or -1
 * when out of memory. */
int lf_wire_check_tools(const lf_request_params *p, int has_tool_turns, lf_buf *errmsg);
const char *lf_wire_content(const lf_message *m);
/* Any OpenAI message: plain, an assistant's tool calls, a tool's result. */
int lf_wire_put_openai_message(lf_buf *out, const lf_message *m, int first);
/* Attachments (lf_wire_request_attach.c): every one checked against what the
 * target takes; a user message with some as content parts or blocks. */
int lf_wire_check_attachments(const lf_request_params *p, lf_buf *errmsg);
size_t lf_wire_attachments_size(const lf_message *m);
int lf_wire_put_openai_parts(lf_buf *out, const lf_request_params *p, const lf_message *m, int first);
int lf_wire_put_anthropic_blocks(lf_buf *out, const lf_request_params *p, const lf_message *m, int first);
/* Anthropic: an assistant message with tool calls; one tool_result block. */
int lf_wire_put_anthropic_calls(lf_buf *out, const lf_message *m, int first);
int lf_wire_put_anthropic_result(lf_buf *out, const lf_message *m, int first_block);
/* tools, tool_choice (and parallel calls) of each protocol; nothing without tools. */
int lf_wire_put_openai_tools(lf_buf *out, const lf_request_params *p);
int lf_wire_put_anthropic_tools(lf_buf *out, const lf_request_params *p);

#endif
