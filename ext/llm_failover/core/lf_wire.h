/* The two wire protocols: OpenAI chat completions (and every compatible API)
 * and Anthropic messages. Builds request bodies from messages; parses plain
 * answers, stream events and error bodies. Pure functions over json-c.
 *
 * The public header of the wire layer, one file per job behind it:
 * lf_wire_request.c (request bodies), lf_wire_answer.c (answers),
 * lf_wire_stream.c (stream events), lf_wire_error.c (error bodies), over
 * lf_utf8 (sanitizing), lf_json_write (the JSON writer), lf_json_read (json-c
 * reading) and lf_wire_jdoc (what the lf_jscan fast paths share). */
#ifndef LF_WIRE_H
#define LF_WIRE_H

#include <stddef.h>
#include "lf_buf.h"
#include "lf_sse.h"
#include "lf_utf8.h"

typedef enum lf_api { LF_API_OPENAI = 0, LF_API_ANTHROPIC = 1 } lf_api;

/* Anthropic requires max_tokens; this is sent when the caller gave none. */
#define LF_ANTHROPIC_DEFAULT_MAX_TOKENS 4096

typedef struct lf_message {
    const char *role;     /* system | developer | user | assistant | tool */
    const char *content;  /* UTF-8, content_len bytes; a NUL is text (sent as \u0000) */
    size_t content_len;
} lf_message;

typedef struct lf_request_params {
    lf_api api;
    const char *model;
    const lf_message *messages;
    size_t n_messages;
    const char *system;      /* optional instructions, system_len bytes; NULL for none */
    size_t system_len;
    int has_temperature;
    double temperature;
    long max_tokens;         /* <= 0: not set */
    int stream;
    /* JSON mode: OpenAI gets response_format json_object and
     * LF_JSON_INSTRUCTION as a system message after the leading ones (its JSON
     * mode wants the word JSON in the messages); Anthropic, which has no JSON
     * mode, gets the instruction at the end of its system text. */
    int json_mode;
    /* A JSON Schema for the answer, as the JSON text of an object, NULL for
     * none (it wins over json_mode): OpenAI gets response_format json_schema
     * with strict true; Anthropic a forced call of a tool of that name whose
     * input_schema it is, and the tool's input is the answer. */
    const char *schema;
    const char *schema_name; /* [A-Za-z0-9_-]{1,64}; NULL: "answer" */
} lf_request_params;

#define LF_JSON_INSTRUCTION \
    "Answer with one JSON object and nothing else: no text before or after it, no Markdown code fence."
#define LF_SCHEMA_DEFAULT_NAME "answer"

/* Path appended to the provider's base_url. */
const char *lf_wire_path(lf_api api);

/* Writes the JSON body into out (cleared first). OpenAI: system messages stay
 * in the array (params->system becomes a leading system message), stream adds
 * stream_options.include_usage, max_tokens is sent as max_tokens. Anthropic:
 * system/developer messages are lifted into the top-level "system" string
 * (joined with "\n\n", params->system first), max_tokens always sent.
 * Returns 0, or -1 on bad params (errmsg filled when non-NULL). */
int lf_wire_build_request(const lf_request_params *p, lf_buf *out, lf_buf *errmsg);

/* 1 when the +len+ bytes at +name+ are what both providers accept as a schema's
 * (OpenAI) or a tool's (Anthropic) name: 1 to 64 of A-Z a-z 0-9 _ -. The one owner
 * of that rule: AnswerFormat asks it before any call (AnswerFormat.__name_ok?). */
int lf_wire_name_ok(const char *name, size_t len);

typedef struct lf_wire_error {
    lf_buf type;     /* error.type (OpenAI, Anthropic) or error.status (Gemini) */
    lf_buf code;     /* error.code, numbers written as decimal text */
    lf_buf message;  /* error.message, or Mistral's detail */
} lf_wire_error;

void lf_wire_error_init(lf_wire_error *e);
void lf_wire_error_clear(lf_wire_error *e);
void lf_wire_error_free(lf_wire_error *e);

/* Recognises every error body shape of WIRE.md: {"error":{...}} (error may be
 * a string), [{"error":{...}}] (Gemini), {"type":"error","error":{...}}
 * (Anthropic), {"detail": "..."} or {"detail":[{"msg":...}]} (Mistral and
 * other FastAPI servers), {"message": "..."}. Returns 1 when found, else 0
 * (then e is left empty; the caller uses the raw body). */
int lf_wire_parse_error(const char *body, size_t len, lf_wire_error *e);

/* What an answer (plain or streamed) amounts to. */
typedef struct lf_answer {
    lf_buf text;           /* content, valid UTF-8 (bad bytes become U+FFFD) */
    lf_buf model;          /* the model that answered, as the provider says */
    lf_buf finish_reason;  /* finish_reason / stop_reason; empty if none */
    lf_buf id;             /* the provider's response id, if any */
    long input_tokens;     /* -1 when unknown */
    long output_tokens;    /* -1 when unknown */
} lf_answer;

void lf_answer_init(lf_answer *a);
void lf_answer_clear(lf_answer *a);
void lf_answer_free(lf_answer *a);

#define LF_WIRE_OK 0
#define LF_WIRE_INVALID 1       /* not the protocol: not JSON, wrong shape, empty */
#define LF_WIRE_ERROR_BODY 2    /* a 2xx whose body is an error object; err filled */

/* Parses a non-streamed answer body. The everyday successful answer is read
 * in place with lf_jscan; anything else (error bodies, odd shapes, text
 * outside lf_jscan's subset) by json-c, with the same results. */
int lf_wire_parse_response(lf_api api, const char *body, size_t len,
                           lf_answer *out, lf_wire_error *err);
/* The same for an answer to a schema request: an Anthropic tool_use
 * block's input counts as text too, written as JSON (the forced tool call's
 * input is the answer). */
int lf_wire_parse_tool_response(lf_api api, const char *body, size_t len,
                                lf_answer *out, lf_wire_error *err);
/* The same as lf_wire_parse_response, by json-c alone (tests compare the two). */
int lf_wire_parse_response_json_c(lf_api api, const char *body, size_t len,
                                  lf_answer *out, lf_wire_error *err);
/* The lf_jscan fast path alone: LF_WIRE_OK when it read the body,
 * LF_WIRE_INVALID when out of memory, -1 when it leaves the body to json-c
 * (out is then empty). */
int lf_wire_parse_response_jscan(lf_api api, const char *body, size_t len, lf_answer *out);

/* Per-stream state: feed it every SSE event of one response. */
typedef struct lf_stream_state {
    lf_api api;
    lf_answer answer;     /* accumulates text, model, finish reason, usage */
    lf_wire_error error;  /* filled on LF_STREAM_ERROR */
    int done;             /* terminal event seen: [DONE] or message_stop */
    int finished;         /* finish_reason / stop_reason seen */
    int has_usage;
    size_t delta_at;      /* where the current event's text starts in answer.text */
    int json_c_only;      /* 1: skip the lf_jscan fast path (tests compare the two) */
    int tool_input;       /* 1: a schema request: Anthropic input_json_delta pieces are text */
} lf_stream_state;

#define LF_STREAM_CONTINUE 0
#define LF_STREAM_DONE 1      /* terminal event; later events are ignored */
#define LF_STREAM_ERROR 2     /* in-stream error event; s->error filled */
#define LF_STREAM_INVALID 3   /* malformed event (data is not JSON / wrong shape) */

void lf_stream_init(lf_stream_state *s, lf_api api);
void lf_stream_free(lf_stream_state *s);
/* Handles one SSE event. When it carried content, it has been appended to
 * s->answer.text and *delta and *delta_len point to it there (valid UTF-8,
 * owned by s, valid until the next call); otherwise *delta_len is 0. Unknown event
 * types, pings and comment-only events are ignored (CONTINUE). */
int lf_stream_event(lf_stream_state *s, const lf_sse_event *ev,
                    const char **delta, size_t *delta_len);
/* 1 when the lf_jscan fast path reads this OpenAI event data by itself,
 * 0 when it leaves it to json-c (tests check that it is taken). */
int lf_stream_fast_reads(const char *data, size_t n);
/* At end of body: 1 when the stream reached its end (terminal event, or a
 * finish/stop reason was seen), 0 when it was interrupted. */
int lf_stream_complete(const lf_stream_state *s);

#endif
