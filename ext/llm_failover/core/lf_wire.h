/* The wire protocols: OpenAI chat completions (and every compatible API),
 * Anthropic messages and Bedrock Converse. Builds request bodies from
 * messages; parses plain answers, stream events and error bodies. Pure
 * functions over json-c.
 *
 * The public header of the wire layer. A protocol is a request file and a
 * response file (lf_wire_openai_request.c, lf_wire_openai_response.c,
 * lf_wire_anthropic_request.c, lf_wire_anthropic_response.c), with what
 * every protocol shares in a leaf below them (lf_wire_shared.h: error bodies,
 * an answer and its calls, the stream state, failure messages and roles, call
 * ids and the transcript invariant, attachments); lf_wire.c above them checks
 * a request and hands it, an answer or a stream event to its protocol. Over
 * lf_utf8 (sanitizing), lf_json_write (the JSON writer) and lf_json_read
 * (json-c reading: one reader per protocol).
 *
 * The structs below gain members over time: zero what you do not set
 * (designated initializers, memset or calloc). */
#ifndef LF_WIRE_H
#define LF_WIRE_H

#include <stddef.h>
#include "lf_buf.h"
#include "lf_eventstream.h"
#include "lf_sse.h"
#include "lf_utf8.h"

typedef enum lf_api {
    LF_API_OPENAI = 0,
    LF_API_ANTHROPIC = 1,
    LF_API_BEDROCK = 3     /* Bedrock Converse / ConverseStream (lf_wire_bedrock.h) */
} lf_api;

/* What a request asks for: a chat answer (messages), or the embeddings of
 * texts (inputs) from the OpenAI-compatible /embeddings endpoint, which
 * OpenAI, Azure, Mistral, Ollama, OpenRouter and others speak (Anthropic
 * has none: such a request is refused before any network). */
typedef enum lf_request_kind { LF_REQUEST_CHAT = 0, LF_REQUEST_EMBEDDINGS = 1 } lf_request_kind;

/* A text to embed: UTF-8, len bytes. */
typedef struct lf_text {
    const char *ptr;
    size_t len;
} lf_text;

/* Anthropic requires max_tokens; this is sent when the caller gave none. */
#define LF_ANTHROPIC_DEFAULT_MAX_TOKENS 4096

/* A tool call an assistant message made, as the transcript keeps it. */
typedef struct lf_tool_call {
    const char *id;         /* the id its provider gave; mapped when sent (lf_wire_call_id) */
    const char *name;       /* the tool's name, as the model gave it */
    const char *arguments;  /* the arguments: JSON text, arguments_len bytes; NULL or empty: {} */
    size_t arguments_len;
} lf_tool_call;

/* A file sent with a user message (Ruby's LlmFailover::Attachment): its
 * bytes as base64, a URL, or both (then the URL is sent where the target
 * takes one). */
typedef struct lf_attachment {
    const char *mime_type;  /* image/png, image/jpeg, image/gif, image/webp or application/pdf */
    const char *filename;   /* NULL: none (an OpenAI file part then gets "document.pdf") */
    const char *base64;     /* the bytes, base64_len characters; NULL: the URL only */
    size_t base64_len;
    const char *url;        /* NULL: the bytes only */
} lf_attachment;

typedef struct lf_message {
    const char *role;     /* system | developer | user | assistant | tool */
    const char *content;  /* UTF-8, content_len bytes; a NUL is text (sent as \u0000) */
    size_t content_len;
    /* assistant: the tool calls it made (its content may then be empty). */
    const lf_tool_call *tool_calls;
    size_t n_tool_calls;
    /* tool: a tool's result (content), for the call of this id; is_error:
     * the tool failed (Anthropic's is_error; OpenAI has no such field, the
     * content says it). */
    const char *tool_call_id;
    int is_error;
    /* user: files sent with the text (OpenAI content parts image_url and
     * file, Anthropic image and document blocks). */
    const lf_attachment *attachments;
    size_t n_attachments;
} lf_message;

/* A tool the model may call. */
typedef struct lf_tool {
    const char *name;         /* [A-Za-z0-9_-]{1,64}, unique in the request */
    const char *description;  /* NULL: none */
    const char *parameters;   /* JSON Schema of the arguments, the JSON text of an object;
                               * NULL: no parameters ({"type":"object","properties":{}}) */
} lf_tool;

typedef enum lf_tool_choice {
    LF_TOOL_CHOICE_UNSET = 0,  /* not sent: the provider's default (auto) */
    LF_TOOL_CHOICE_AUTO,       /* the model decides */
    LF_TOOL_CHOICE_REQUIRED,   /* at least one call (Anthropic: "any") */
    LF_TOOL_CHOICE_NONE,       /* no call */
    LF_TOOL_CHOICE_TOOL        /* a call of tool_choice_name */
} lf_tool_choice;

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
     * mode wants the word JSON in the messages); Anthropic and Bedrock, which
     * have no JSON mode, get the instruction at the end of their system text. */
    int json_mode;
    /* A JSON Schema for the answer, as the JSON text of an object, NULL for
     * none (it wins over json_mode): OpenAI gets response_format json_schema
     * with strict true; Anthropic and Bedrock a forced call of a tool of that
     * name whose input schema it is, and the tool's input is the answer. */
    const char *schema;
    const char *schema_name; /* [A-Za-z0-9_-]{1,64}; NULL: "answer" */
    /* Tools: OpenAI-compatible "tools" (type function, parameters),
     * Anthropic "tools" (input_schema), Bedrock "toolConfig" (toolSpec). A
     * schema on Anthropic and Bedrock is itself a forced tool call, so it
     * cannot be combined with tools there. */
    const lf_tool *tools;
    size_t n_tools;
    lf_tool_choice tool_choice;    /* needs tools, except UNSET and NONE */
    const char *tool_choice_name;  /* LF_TOOL_CHOICE_TOOL: one of the tools (Anthropic
                                    * "tool", OpenAI {"type":"function",...}) */
    /* 1: parallel_tool_calls sent (OpenAI), and when false, Anthropic's
     * tool_choice disable_parallel_tool_use. Only with tools. */
    int has_parallel_tool_calls;
    int parallel_tool_calls;
    /* LF_REQUEST_EMBEDDINGS: the texts (1 to LF_EMBED_MAX_INPUTS), in order;
     * every chat member above is ignored but api and model. */
    lf_request_kind kind;
    const lf_text *inputs;
    size_t n_inputs;
    /* What the target cannot take (its provider's configuration; lf_prepare
     * copies them from the lf_target): an attachment of such a kind, a
     * URL-only one, one over max_attachment_bytes, or more of them in one
     * message than max_attachments (lf_wire_attachments_refusal). 0: it can,
     * no limit. */
    int no_images;
    int no_documents;
    int no_urls;
    long max_attachment_bytes;
    long max_attachments;
} lf_request_params;

/* OpenAI's own cap on the inputs of one embeddings request. */
#define LF_EMBED_MAX_INPUTS 2048

#define LF_JSON_INSTRUCTION \
    "Answer with one JSON object and nothing else: no text before or after it, no Markdown code fence."
#define LF_SCHEMA_DEFAULT_NAME "answer"

/* The kinds of file a provider may take or not: images (image/png,
 * image/jpeg, image/gif, image/webp) and documents (application/pdf). */
typedef enum lf_attach_kind { LF_ATTACH_UNKNOWN = 0, LF_ATTACH_IMAGE, LF_ATTACH_DOCUMENT } lf_attach_kind;
lf_attach_kind lf_wire_attachment_kind(const char *mime);
/* The i-th type an attachment may have; NULL past the last. */
const char *lf_wire_attachment_type(size_t i);

/* Whether the target p describes (api, no_images, no_documents, no_urls,
 * max_attachment_bytes, max_attachments) can take every attachment of
 * p->messages: 0 when it can, 1 when it cannot, with why (when non-NULL)
 * naming the file and the limit. The one owner of that rule: the attempt loop
 * leaves such a target out with a record and sends it nothing (lf_prepare),
 * lf_wire_build_request refuses it, and Ruby asks its two parts below of each
 * file before anything is stored (Attachment::Selection). An attachment that
 * is wrong whatever the target (an unknown type, neither bytes nor URL, bytes
 * not base64) is no refusal: the build reports it. */
int lf_wire_attachments_refusal(const lf_request_params *p, lf_buf *why);

typedef enum lf_attach_refusal {
    LF_ATTACH_TAKEN = 0,
    LF_ATTACH_NO_KIND,   /* no images (images: false) or no PDFs (documents: false) */
    LF_ATTACH_NO_URL,    /* a URL only, and the target takes no URL for it (attachment_urls:
                          * false, or an OpenAI file part): its bytes are needed */
    LF_ATTACH_TOO_BIG,   /* over max_attachment_bytes (the bytes base64 decodes to) */
    LF_ATTACH_TOO_MANY   /* more with one message than max_attachments */
} lf_attach_refusal;

/* The parts of that rule: one file (its kind, its URL, its size), and the
 * number of files with one message. why (when non-NULL) names the file, the
 * target (who, or "the target" when NULL) and the limit. */
lf_attach_refusal lf_wire_attachment_refusal(const lf_request_params *p, const lf_attachment *a, const char *who,
                                             lf_buf *why);
lf_attach_refusal lf_wire_attachment_count_refusal(const lf_request_params *p, size_t n, const char *who,
                                                   lf_buf *why);

/* Path appended to the provider's base_url; NULL for a protocol whose path
 * depends on the request (Bedrock's names the model: lf_wire_request_path). */
const char *lf_wire_path(lf_api api);
/* The same for a kind of request: "/embeddings" for LF_REQUEST_EMBEDDINGS. */
const char *lf_wire_path_for(lf_api api, lf_request_kind kind);
/* The path of request p, appended to its target's base_url, into out
 * (cleared first): lf_wire_path_for's, or Bedrock's /model/{id}/converse
 * (/converse-stream when p->stream) with the model id escaped by
 * lf_wire_uri_escape, so that a ':' goes as %3A and an ARN's '/' as %2F, as
 * AWS's SDKs send them. 0, or -1 when out of memory or when p has no model. */
int lf_wire_request_path(const lf_request_params *p, lf_buf *out);
/* Appends the n bytes at s percent-encoded: every byte but RFC 3986's
 * unreserved A-Z a-z 0-9 - . _ ~ (and '/' when keep_slash) as %XX, upper-case
 * hex. A model id in a Bedrock path is escaped so (keep_slash 0); SigV4's
 * canonical URI of a path, what AWS checks a signature against, is the path
 * as sent escaped so once more (keep_slash 1: %3A becomes %253A). 0, or -1
 * when out of memory. */
int lf_wire_uri_escape(lf_buf *out, const char *s, size_t n, int keep_slash);

/* Writes the JSON body into out (cleared first). OpenAI: system messages stay
 * in the array (params->system becomes a leading system message), stream adds
 * stream_options.include_usage, max_tokens is sent as max_tokens. Anthropic:
 * system/developer messages are lifted into the top-level "system" string
 * (joined with "\n\n", params->system first), max_tokens always sent.
 *
 * Tool calls and results, from the one form of lf_message: OpenAI gets an
 * assistant message with "tool_calls" (content null when empty; arguments
 * as their text) and each result as a {"role":"tool","tool_call_id"}
 * message. Anthropic gets the assistant's text and tool calls as text and
 * tool_use blocks (input: the arguments' object; arguments that are not a
 * JSON object are sent as {}, the result the caller sends says why), and
 * the results of one turn as tool_result blocks (is_error when set) of one
 * user message. Every call id goes through lf_wire_call_id, in the calls
 * and in the results alike.
 *
 * Returns 0; -1 on bad params (errmsg filled when non-NULL);
 * LF_WIRE_BAD_TRANSCRIPT when the messages break the tool-call invariant of
 * lf_wire_check_transcript (errmsg names the call; nothing is built). */
int lf_wire_build_request(const lf_request_params *p, lf_buf *out, lf_buf *errmsg);
/* The same with p->schema already parsed (lf_json_schema_parse), so that a
 * call parses its schema once for every target's body (lf_prepare). */
struct json_object;
int lf_wire_build_request_parsed(const lf_request_params *p, struct json_object *schema, lf_buf *out,
                                 lf_buf *errmsg);

/* 1 when the +len+ bytes at +name+ are what both providers accept as a schema's
 * (OpenAI) or a tool's (Anthropic) name: 1 to 64 of A-Z a-z 0-9 _ -. The one owner
 * of that rule: the request builder checks schema and tool names with it, and
 * Ruby asks it before any call (AnswerFormat.__name_ok?). */
int lf_wire_name_ok(const char *name, size_t len);

/* Why one request of protocol api cannot carry a response schema beside
 * tools, NULL when it can: Anthropic's and Bedrock's, where the schema is
 * itself a forced tool call (the model could call no other tool). The one owner of that rule
 * and its words: the request builder refuses such a request with them, and
 * Ruby asks them of every target of a chat before anything is stored
 * (AnswerFormat.schema_with_tools_refusal). */
const char *lf_wire_schema_with_tools_refusal(lf_api api);

/* The protocol Ruby names name (len bytes: "openai", "anthropic", "bedrock") into *api:
 * 0, or -1 for none. */
int lf_wire_api_named(const char *name, size_t len, lf_api *api);

#define LF_WIRE_BAD_TRANSCRIPT (-2)

/* The tool-call invariant, which both providers enforce and a failover must
 * not break: every tool call has an id, used once in the transcript (also
 * once mapped), and exactly one result (a "tool" message with its
 * tool_call_id); the results of an assistant message's calls come right
 * after it, before any other message. Returns 0, or LF_WIRE_BAD_TRANSCRIPT
 * with errmsg saying what is wrong and call_id (each when non-NULL) set to
 * the id of the call (or of the result) at fault, as the caller gave it
 * (the host raises its transcript error from these: Ruby's
 * ToolTranscriptError); -1 when out of memory. */
int lf_wire_check_transcript(const lf_message *messages, size_t n, lf_buf *errmsg, lf_buf *call_id);

/* The id a call is sent with, to either protocol: one made by one provider
 * must be valid for the other (Anthropic accepts ^[a-zA-Z0-9_-]+$,
 * OpenAI-compatible APIs limit the length, 40 for OpenAI). An id that is
 * already 1 to 40 of A-Z a-z 0-9 _ - is sent as it is; any other becomes
 * its first bytes with every other byte made "_", "_", and 16 hex digits of
 * a hash of the whole id (at most 40 bytes): the same id always maps to the
 * same text, so a call and its result still pair. The caller keeps the
 * original. Writes into out (cleared first); 0, or -1 when out of memory. */
int lf_wire_call_id(const char *id, size_t len, lf_buf *out);
#define LF_WIRE_CALL_ID_MAX 40

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

/* A complete tool call of an answer; every field valid UTF-8. */
typedef struct lf_answer_call {
    lf_buf id;         /* as the provider gave it; empty when it gave none (the
                        * caller gives it one before it enters a transcript) */
    lf_buf name;
    lf_buf arguments;  /* the whole arguments text (OpenAI: as sent; Anthropic: the
                        * input object written as JSON, or its streamed pieces
                        * joined); "{}" when the provider sent none */
} lf_answer_call;

/* What an answer (plain or streamed) amounts to. */
typedef struct lf_answer {
    lf_buf text;           /* content, valid UTF-8 (bad bytes become U+FFFD) */
    lf_buf model;          /* the model that answered, as the provider says */
    lf_buf finish_reason;  /* finish_reason / stop_reason; empty if none; a
                            * request for tool calls is LF_FINISH_TOOL_CALLS
                            * on both protocols (not for a schema answer) */
    lf_buf id;             /* the provider's response id, if any */
    long input_tokens;     /* every input token billed, read from a prompt cache
                            * or written to one included; -1 when unknown */
    long output_tokens;    /* -1 when unknown */
    long cached_input_tokens;   /* of input_tokens, read from a prompt cache; -1 when unknown */
    long cache_write_tokens;    /* of input_tokens, written to a prompt cache; -1 when unknown */
    /* The tool calls, complete, in the order the provider gave them. A
     * stream publishes them only when it completes (finish or stop reason,
     * or its terminal event): an interrupted stream has none. Never for a
     * schema answer (the forced call's input is its text). */
    lf_answer_call *tool_calls;
    size_t n_tool_calls;
    size_t cap_tool_calls;
    /* An embeddings answer: n_vectors vectors of dims numbers each, row by
     * row in the order of the inputs (the provider's "index"); NULL for a
     * chat answer. */
    double *vectors;
    size_t n_vectors;
    size_t dims;
} lf_answer;

#define LF_FINISH_TOOL_CALLS "tool_calls"

void lf_answer_init(lf_answer *a);
void lf_answer_clear(lf_answer *a);
void lf_answer_free(lf_answer *a);
/* Moves src's tool calls and vectors into dst (what dst held goes to src, freed
 * with it); the text and the other fields are the caller's. */
void lf_answer_take_parts(lf_answer *dst, lf_answer *src);

#define LF_WIRE_OK 0
#define LF_WIRE_INVALID 1       /* not the protocol: not JSON, wrong shape, empty */
#define LF_WIRE_ERROR_BODY 2    /* a 2xx whose body is an error object; err filled */

/* Parses a non-streamed answer body (json-c). */
int lf_wire_parse_response(lf_api api, const char *body, size_t len,
                           lf_answer *out, lf_wire_error *err);
/* The same for an answer to a schema request: an Anthropic tool_use
 * block's input counts as text too, written as JSON (the forced tool call's
 * input is the answer). */
int lf_wire_parse_tool_response(lf_api api, const char *body, size_t len,
                                lf_answer *out, lf_wire_error *err);

/* An embeddings answer ({"data":[{"index","embedding":[numbers]}],"model",
 * "usage":{"prompt_tokens"}}): one vector per input (n_inputs), every index
 * once, all of one length, each finite number; anything else is
 * LF_WIRE_INVALID (a short answer must not be taken for a whole one). The
 * input token count goes to input_tokens, output_tokens is 0. */
int lf_wire_parse_embeddings(const char *body, size_t len, size_t n_inputs, lf_answer *out, lf_wire_error *err);

/* Per-stream state: feed it every SSE event of one response. */
typedef struct lf_stream_state {
    lf_api api;
    lf_answer answer;     /* accumulates text, model, finish reason, usage */
    lf_wire_error error;  /* filled on LF_STREAM_ERROR */
    int done;             /* terminal event seen: [DONE], message_stop, or Bedrock's
                           * metadata after its messageStop */
    int finished;         /* finish_reason / stop_reason seen (the stream is whole) */
    int stopped;          /* Bedrock's messageStop seen: its stopReason is taken, but
                           * the stream is whole only with the metadata after it */
    int has_usage;
    size_t delta_at;      /* where the current event's text starts in answer.text */
    int tool_input;       /* 1: a schema request: Anthropic input_json_delta pieces and
                           * Bedrock toolUse input pieces are text */
    /* Tool calls being streamed, not yet in answer.tool_calls: OpenAI's by
     * tool_calls[].index, Anthropic's and Bedrock's by content block index
     * (keys[i] is calls[i]'s). Published to the answer when the stream
     * completes. */
    lf_answer_call *calls;
    long *call_keys;
    size_t n_calls, cap_calls;
    int calls_published;
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
 * types, pings and comment-only events are ignored (CONTINUE). Pieces of a
 * tool call's arguments are never content: the call appears whole in
 * s->answer.tool_calls once the stream completes (later pieces, which no
 * provider sends, are ignored). */
int lf_stream_event(lf_stream_state *s, const lf_sse_event *ev,
                    const char **delta, size_t *delta_len);

/* How a protocol frames its stream: Server-Sent Events, or AWS's binary
 * event stream (application/vnd.amazon.eventstream, read by lf_es_feed). */
typedef enum lf_framing { LF_FRAMING_SSE = 0, LF_FRAMING_EVENTSTREAM = 1 } lf_framing;
lf_framing lf_wire_stream_framing(lf_api api);
/* lf_stream_event for one event-stream message (Bedrock's ConverseStream:
 * its :event-type messageStart, contentBlockStart, contentBlockDelta,
 * contentBlockStop, messageStop, metadata; an :message-type exception or
 * error is LF_STREAM_ERROR, its :exception-type or :error-code the error's
 * type). The same contract otherwise; a message of a protocol framed by SSE
 * is LF_STREAM_INVALID. */
int lf_stream_message(lf_stream_state *s, const lf_es_message *m,
                      const char **delta, size_t *delta_len);
/* At end of body: 1 when the stream reached its end (terminal event, or a
 * finish/stop reason was seen), 0 when it was interrupted. */
int lf_stream_complete(const lf_stream_state *s);

#endif
