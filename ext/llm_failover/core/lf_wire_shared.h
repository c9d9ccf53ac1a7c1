/* What every protocol of the wire layer shares, and nobody outside the wire
 * layer uses: the leaf below the protocols' request and response files. Each
 * file here calls only files below it in this list, never a protocol file
 * nor lf_wire.c:
 *
 *   lf_wire_error.c       error bodies, every shape
 *   lf_wire_answer.c      an answer: its fields, its list of tool calls
 *   lf_wire_stream.c      the state a stream's events fill
 *   lf_wire_common.c      failure messages, roles, names, pieces of a body
 *   lf_wire_transcript.c  call ids as sent, the tool-call invariant
 *   lf_wire_attach.c      attachments: their kinds, what a target takes */
#ifndef LF_WIRE_SHARED_H
#define LF_WIRE_SHARED_H

#include <stdarg.h>
#include <json-c/json.h>
#include "lf_wire.h"

/* ------------------------------------------- lf_wire_error.c */

/* Fills e from a parsed body; 1 when it has one of the error shapes. */
int lf_wire_error_from_json(json_object *root, lf_wire_error *e);

/* ------------------------------------------- lf_wire_answer.c */

/* Appends an empty call to the list v (n of cap), with key in keys[] when
 * keys is non-NULL; NULL when out of memory. */
lf_answer_call *lf_wire_call_push(lf_answer_call **v, long **keys, size_t *n, size_t *cap, long key);
/* Frees the buffers of n calls (not the array). */
void lf_wire_calls_free(lf_answer_call *v, size_t n);
/* A call is complete: arguments never sent become "{}". */
int lf_wire_call_done(lf_answer_call *c);
/* One complete call into the answer: id and name strings, arguments a string
 * (its text) or any other JSON value (written as JSON). */
int lf_wire_answer_call(lf_answer *out, json_object *id, json_object *name, json_object *arguments);
/* tool_use (Anthropic) and function_call (older OpenAI) become
 * LF_FINISH_TOOL_CALLS. */
int lf_wire_finish_reason(lf_buf *reason);
/* Appends content that is a string, or the text parts of an array of parts;
 * with tool, a tool_use block's input too, as its JSON. */
int lf_wire_append_content(lf_buf *text, json_object *content, int tool);
/* What every response parser does around its own reading. begin clears out
 * and err, and gives the error to fill (scratch, initialised, when the caller
 * passed none); end clears out unless rc is LF_WIRE_OK and the error unless rc
 * is LF_WIRE_ERROR_BODY, frees scratch, and returns rc. */
lf_wire_error *lf_wire_parse_begin(lf_answer *out, lf_wire_error *err, lf_wire_error *scratch);
int lf_wire_parse_end(int rc, lf_answer *out, lf_wire_error *err, lf_wire_error *scratch);

/* ------------------------------------------- lf_wire_stream.c */

/* New text of a string value, sanitized, onto the answer; other values add
 * nothing. */
int lf_wire_stream_text(lf_stream_state *s, json_object *text);
/* The last call streamed under key; NULL for none. */
lf_answer_call *lf_wire_stream_call(lf_stream_state *s, long key);
/* A new call under key; NULL when out of memory or past the stream's limit. */
lf_answer_call *lf_wire_stream_new_call(lf_stream_state *s, long key);
/* A string value into out, sanitized; other values leave out as it is. */
int lf_wire_stream_set(lf_buf *out, json_object *v);
/* A piece of a call's arguments, as its bytes (sanitized whole when published). */
int lf_wire_stream_piece(lf_buf *out, json_object *v);
/* The stream completed: its calls go whole to the answer, once. */
int lf_wire_stream_publish(lf_stream_state *s);
/* The finish or stop reason under key of holder: the stream completed. */
int lf_wire_stream_finish(lf_stream_state *s, json_object *holder, const char *key);

/* ------------------------------------------- lf_wire_common.c */

typedef enum lf_role {
    LF_ROLE_UNKNOWN = 0,
    LF_ROLE_SYSTEM,
    LF_ROLE_DEVELOPER,
    LF_ROLE_USER,
    LF_ROLE_ASSISTANT,
    LF_ROLE_TOOL
} lf_role;

/* A message's role. */
lf_role lf_wire_role(const char *role);
/* A failure message into errmsg (when non-NULL): formatted, bounded, valid
 * UTF-8. */
void lf_wire_fail(lf_buf *errmsg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void lf_wire_vfail(lf_buf *errmsg, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* A message's content ("" for none). */
const char *lf_wire_content(const lf_message *m);
/* {"role","content"} (a comma first unless first). Each put returns 0, or -1
 * when out of memory. */
int lf_wire_put_message(lf_buf *out, const char *role, const char *content, size_t len, int first);
/* JSON mode without a schema: LF_JSON_INSTRUCTION goes after every
 * instruction of the caller's. */
int lf_wire_json_instruction(const lf_request_params *p);
/* text as one JSON object, written back as json-c writes it (sanitized): 0,
 * 1 when it is not one object (nothing written), -1 when out of memory. */
int lf_wire_put_object(lf_buf *out, const char *text, size_t len);
/* A tool's JSON Schema, or an object without properties for a tool that
 * takes none. */
int lf_wire_put_parameters(lf_buf *out, const lf_tool *t);
/* A tool declaration's members, in every protocol's names: "name", then
 * "description" when it has one, then its JSON Schema under schema_key
 * (parameters, input_schema, parametersJsonSchema); no braces. */
int lf_wire_put_tool(lf_buf *out, const lf_tool *t, const char *schema_key);
/* The system text of a protocol that takes it apart from the messages
 * (Anthropic's system, Gemini's systemInstruction) into out (cleared first):
 * p->system, then every system and developer message, then JSON mode's
 * instruction, joined with blank lines. 0, or -1 when out of memory. */
int lf_wire_system_text(const lf_request_params *p, lf_buf *out);
/* An attachment's bytes as a data URI, a JSON string. */
int lf_wire_put_data_uri(lf_buf *out, const lf_attachment *a);
/* 1 when message m's reasoning state (lf_message.reasoning, its calls'
 * signatures) goes into this request: the protocol and the origin that made
 * it, and on Responses a target that asks for it (encrypted_reasoning); else
 * it is dropped. Whether m has any is the caller's to see. */
int lf_wire_reasoning_goes(const lf_request_params *p, const lf_message *m);

/* ------------------------------------------- lf_wire_transcript.c */

/* A call id as it is sent (lf_wire_call_id), as a JSON string. */
int lf_wire_put_call_id(lf_buf *out, const char *id);

/* ------------------------------------------- lf_wire_attach.c */

/* Every attachment checked: wrong whatever the target, or refused by this
 * one (lf_wire_attachments_refusal); 0, or -1 with errmsg. */
int lf_wire_check_attachments(const lf_request_params *p, lf_buf *errmsg);
/* What a message's attachments add to a body, at most. */
size_t lf_wire_attachments_size(const lf_message *m);
/* Whether the attachment goes by its URL to this target (else its bytes;
 * lf_wire_check_attachments made sure a URL-only one may). */
int lf_wire_attachment_by_url(const lf_request_params *p, const lf_attachment *a);

#endif
