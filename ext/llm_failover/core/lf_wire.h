/* The wire protocols: OpenAI chat completions (and every compatible API),
 * Anthropic messages, OpenAI's Responses API, Bedrock Converse and Google's
 * Gemini generateContent, on their own hosts or on a host's layout
 * (lf_layout: Azure, Vertex AI). Builds request bodies and URLs from
 * messages; parses plain answers, stream events (SSE, or AWS's event stream)
 * and error bodies. Pure functions over json-c.
 *
 * The public header of the wire layer. A protocol is a request file and a
 * response file (lf_wire_openai_request.c, lf_wire_openai_response.c,
 * lf_wire_anthropic_request.c, lf_wire_anthropic_response.c), with what
 * every protocol shares in a leaf below them (lf_wire_shared.h: error bodies,
 * an answer and its calls, the stream state, failure messages and roles, call
 * ids and the transcript invariant, attachments); lf_wire.c above them checks
 * a request and hands it, an answer or a stream event to its protocol;
 * lf_wire_route.c writes where it goes (lf_wire_url). Over
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
    LF_API_RESPONSES = 2,  /* OpenAI's Responses API (/responses): OpenAI, Azure */
    LF_API_BEDROCK = 3,    /* Bedrock Converse / ConverseStream (lf_wire_bedrock.h) */
    LF_API_GEMINI = 4      /* Google's Gemini generateContent: Google AI, Vertex AI */
} lf_api;

/* The anthropic_version a Claude body on Vertex AI carries instead of a model. */
#define LF_VERTEX_ANTHROPIC_VERSION "vertex-2023-10-16"

/* What a request asks for: a chat answer (messages), or the embeddings of
 * texts (inputs) from the OpenAI-compatible /embeddings endpoint, which
 * OpenAI, Azure, Mistral, Ollama, OpenRouter and others speak, or Google AI's
 * batchEmbedContents (Anthropic and Bedrock Converse have none: such a
 * request is refused before any network). */
typedef enum lf_request_kind { LF_REQUEST_CHAT = 0, LF_REQUEST_EMBEDDINGS = 1 } lf_request_kind;

/* Where a host puts the protocols it serves, when not at base_url + the
 * protocol's own path: a host's trait, not a protocol (Azure speaks chat
 * completions and Responses, Vertex AI Gemini and Claude). It also says how
 * the host takes the key (lf_prepare) and what it serves
 * (lf_wire_layout_serves). */
typedef enum lf_layout {
    LF_LAYOUT_PLAIN = 0,         /* base_url + the protocol's path */
    LF_LAYOUT_AZURE,             /* Azure OpenAI v1: base_url + "/openai/v1" + the path
                                  * (chat completions, Responses, embeddings) */
    LF_LAYOUT_AZURE_DEPLOYMENT,  /* base_url + "/openai/deployments/" + model + the path +
                                  * "?api-version=" V: chat completions and embeddings */
    LF_LAYOUT_AZURE_FOUNDRY,     /* Azure AI Foundry's model inference: base_url (its path
                                  * ends in /models) + the path + "?api-version=" V: chat
                                  * completions and embeddings */
    LF_LAYOUT_VERTEX             /* Vertex AI: base_url (lf_wire_vertex_base_url) +
                                  * "/v1/projects/P/locations/L/publishers/" + google or
                                  * anthropic + "/models/" + model + the method: Gemini
                                  * (generateContent) and Claude (rawPredict: Anthropic's
                                  * body without "model", with anthropic_version) chats */
} lf_layout;

/* LF_LAYOUT_VERTEX's project and location. */
typedef struct lf_vertex {
    const char *project;
    const char *location;  /* "us-east5", "europe-west4", "global", ...: [a-z0-9-] */
} lf_vertex;

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
    /* Gemini's thoughtSignature of this call (lf_answer_call.signature): part
     * of its message's reasoning state, and goes back under the same rule
     * (lf_message.reasoning); NULL or empty: none. */
    const char *signature;
    size_t signature_len;
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
     * file, Anthropic image and document blocks, Gemini inlineData parts). */
    const lf_attachment *attachments;
    size_t n_attachments;
    /* assistant: state its answer carried that only the host that made it
     * can read back, opaque, in the protocol's own form (lf_answer.reasoning:
     * the Responses API's encrypted reasoning items, reasoning_len bytes of
     * the JSON text of an array; Gemini's thoughtSignature of its text), NULL
     * for none; its calls' signatures (lf_tool_call.signature) are part of it.
     * A request of protocol reasoning_api to the target whose origin equals
     * reasoning_origin (lf_request_params.origin; NULL is "") sends it back as
     * it came; any other request drops it, never translated
     * (lf_wire_reasoning_goes). */
    const char *reasoning;
    size_t reasoning_len;
    lf_api reasoning_api;
    const char *reasoning_origin;
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
     * have no JSON mode, get the instruction at the end of their system text;
     * Gemini the instruction in its systemInstruction and, without tools (its
     * models refuse both at once), responseMimeType application/json. */
    int json_mode;
    /* A JSON Schema for the answer, as the JSON text of an object, NULL for
     * none (it wins over json_mode): OpenAI gets response_format json_schema
     * with strict true; Anthropic and Bedrock a forced call of a tool of that
     * name whose input schema it is, and the tool's input is the answer;
     * Gemini responseMimeType application/json and responseJsonSchema. */
    const char *schema;
    const char *schema_name; /* [A-Za-z0-9_-]{1,64}; NULL: "answer" */
    /* Tools: OpenAI-compatible "tools" (type function, parameters),
     * Anthropic "tools" (input_schema), Bedrock "toolConfig" (toolSpec),
     * Gemini "tools" (functionDeclarations, parametersJsonSchema). A schema on
     * Anthropic and Bedrock is itself a forced tool call, so it cannot be
     * combined with tools there, nor on Gemini
     * (lf_wire_schema_with_tools_refusal). */
    const lf_tool *tools;
    size_t n_tools;
    lf_tool_choice tool_choice;    /* needs tools, except UNSET and NONE */
    const char *tool_choice_name;  /* LF_TOOL_CHOICE_TOOL: one of the tools (Anthropic
                                    * "tool", OpenAI {"type":"function",...}) */
    /* 1: parallel_tool_calls sent (OpenAI), and when false, Anthropic's
     * tool_choice disable_parallel_tool_use. Only with tools. Gemini has no
     * such switch: nothing is sent (the caller runs every call it gets). */
    int has_parallel_tool_calls;
    int parallel_tool_calls;
    /* LF_REQUEST_EMBEDDINGS: the texts (1 to LF_EMBED_MAX_INPUTS), in order;
     * every chat member above is ignored but api and model (and layout). */
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
    /* The host's layout (lf_target.layout): what it serves, and Vertex AI's
     * ways (Claude's body, files by their bytes). */
    lf_layout layout;
    /* The target's origin (lf_target.origin: the provider entry's name), to
     * tell whether a message's reasoning state came from it. NULL is "". */
    const char *origin;
    /* Responses: 1 asks for the reasoning items' encrypted_content
     * (include: ["reasoning.encrypted_content"]) and re-sends the items the
     * messages carry from this origin. A reasoning model only: others refuse
     * the include with a 400 ("Encrypted content is not supported with this
     * model"). The request is always store: false. */
    int encrypted_reasoning;
} lf_request_params;

/* OpenAI's own cap on the inputs of one embeddings request. */
#define LF_EMBED_MAX_INPUTS 2048
/* Gemini's cap on the requests of one batchEmbedContents. */
#define LF_GEMINI_EMBED_MAX_INPUTS 100

/* The most texts one embeddings request of protocol api may carry (a caller
 * with more sends them in several requests); 0: the protocol has none. */
size_t lf_wire_embed_max_inputs(lf_api api);

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

/* What a request's URL is made of. */
typedef struct lf_endpoint {
    lf_api api;
    lf_request_kind kind;
    lf_layout layout;
    const char *base_url;     /* no trailing slash (the configuration normalises it) */
    const char *model;        /* in the path where the protocol or the layout puts it, escaped */
    const char *api_version;  /* the Azure deployment and Foundry layouts: required */
    lf_vertex vertex;         /* LF_LAYOUT_VERTEX: required */
    int stream;
} lf_endpoint;

/* The URL of one request into out (cleared first): base_url, the layout's
 * route, the protocol's path (static, or with the model in it: Gemini
 * /v1beta/models/M:generateContent, :streamGenerateContent?alt=sse when
 * streamed, :batchEmbedContents, Google's "models/" prefix dropped; Bedrock
 * /model/M/converse, /converse-stream when streamed), the layout's query. A
 * model or project in the path is one segment, escaped by lf_wire_uri_escape
 * with what its host keeps: '@' on Google's and Azure's hosts, nothing on
 * AWS's (as AWS's SDKs send a model id: ':' as %3A, an ARN's '/' as %2F).
 * 0, or -1 with errmsg (when non-NULL): a layout that does not serve the
 * protocol, a missing api_version, Vertex AI without a project or a location
 * of [a-z0-9-], no model where the path holds it, no memory. The one owner
 * of where a request goes: lf_prepare asks it for every target. */
int lf_wire_url(const lf_endpoint *e, lf_buf *out, lf_buf *errmsg);
/* Whether a host of layout serves requests of protocol api and kind: 0, or
 * -1 with errmsg (when non-NULL) saying why not. The one owner of that rule:
 * lf_wire_url and lf_wire_build_request ask it. */
int lf_wire_layout_serves(lf_layout layout, lf_api api, lf_request_kind kind, lf_buf *errmsg);
/* The layout Ruby names name (len bytes: "plain", "azure", "azure_deployment",
 * "azure_foundry", "vertex") into *layout: 0, or -1 for none. */
int lf_wire_layout_named(const char *name, size_t len, lf_layout *layout);
/* The path of a protocol that holds neither the model nor a route (OpenAI,
 * Anthropic, Responses), as lf_wire_url appends it; NULL for the others
 * (Gemini, Bedrock). */
const char *lf_wire_path(lf_api api);
/* The same for a kind of request: "/embeddings" for LF_REQUEST_EMBEDDINGS. */
const char *lf_wire_path_for(lf_api api, lf_request_kind kind);
/* Appends the n bytes at s percent-encoded: every byte but RFC 3986's
 * unreserved A-Z a-z 0-9 - . _ ~ and those in keep as %XX, upper-case hex.
 * The one escaper of the URLs the core sends to: lf_wire_url's segments,
 * and SigV4's canonical URI of a path, what AWS checks a signature against
 * (the path as sent escaped once more, keep "/": %3A becomes %253A, which
 * lf_prepare gives a libcurl that does not do it itself). 0, or -1 when out
 * of memory. */
int lf_wire_uri_escape(lf_buf *out, const char *s, size_t n, const char *keep);
/* The base URL of Vertex AI in location (no trailing slash):
 * https://LOCATION-aiplatform.googleapis.com, or https://aiplatform.googleapis.com
 * for "global". 0, or -1 for an empty location or one that is not
 * [a-z0-9-]. */
int lf_wire_vertex_base_url(const char *location, lf_buf *out);
/* The protocol Vertex AI serves model in: LF_API_ANTHROPIC for Claude
 * ("claude..."), else LF_API_GEMINI. */
lf_api lf_wire_vertex_api(const char *model);

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
 * itself a forced tool call (the model could call no other tool); Gemini's,
 * whose models (2.5) refuse function calling with a JSON response type. The one owner of that rule
 * and its words: the request builder refuses such a request with them, and
 * Ruby asks them of every target of a chat before anything is stored
 * (AnswerFormat.schema_with_tools_refusal). */
const char *lf_wire_schema_with_tools_refusal(lf_api api);

/* The protocol Ruby names name (len bytes: "openai", "anthropic",
 * "responses", "bedrock", "gemini") into *api: 0, or -1 for none. */
int lf_wire_api_named(const char *name, size_t len, lf_api *api);
/* The name lf_wire_api_named takes for api ("openai", ...). */
const char *lf_wire_api_name(lf_api api);
/* A protocol's name in messages ("Bedrock Converse", "Gemini embeddings"):
 * the one owner of those words, which lf_wire_layout_serves and the attempt
 * loop's failures quote. */
const char *lf_wire_api_title(lf_api api, lf_request_kind kind);

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
    lf_buf code;     /* error.code, numbers written as decimal text; Google's
                      * ErrorInfo reason (details[].reason) when it gave one */
    lf_buf message;  /* error.message, or Mistral's detail */
    double retry_after;  /* seconds Google's RetryInfo asks to wait (retryDelay);
                          * -1 when none */
} lf_wire_error;

void lf_wire_error_init(lf_wire_error *e);
void lf_wire_error_clear(lf_wire_error *e);
void lf_wire_error_free(lf_wire_error *e);

/* Recognises every error body shape of WIRE.md: {"error":{...}} (error may be
 * a string; Google's with details[]: an ErrorInfo reason, a RetryInfo
 * retryDelay), [{"error":{...}}] (Gemini), {"type":"error","error":{...}}
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
    lf_buf signature;  /* Gemini's thoughtSignature of the call, as sent (base64):
                        * part of the answer's reasoning state (lf_tool_call.signature);
                        * empty for none (Gemini signs the first of parallel calls) */
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
    /* State the host wants back on the next turn and that no other host can
     * read, opaque, in the protocol's own form; empty for none. Responses:
     * its encrypted reasoning items, as the final output items carry them
     * (the answer's output array or each item's response.output_item.done,
     * never response.output_item.added's), the JSON text of an array of
     * items, published when a stream completes. Gemini: the thoughtSignature
     * of its text (the last one a text part carried); its calls' are theirs
     * (lf_answer_call.signature). The host keeps it with the assistant
     * message, with the protocol and the target's origin
     * (lf_message.reasoning). */
    lf_buf reasoning;
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
/* Moves src's tool calls (their signatures with them), reasoning state and
 * vectors into dst (what dst held goes to src, freed with it); the text and
 * the other fields are the caller's. */
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
/* The embeddings answer of protocol api: Gemini's batchEmbedContents answer
 * ({"embeddings":[{"values":[numbers]}]}, in the order of the inputs, under
 * the same rules), else the one above. */
int lf_wire_parse_embeddings_for(lf_api api, const char *body, size_t len, size_t n_inputs, lf_answer *out,
                                 lf_wire_error *err);

/* Per-stream state: feed it every SSE event of one response. */
typedef struct lf_stream_state {
    lf_api api;
    lf_answer answer;     /* accumulates text, model, finish reason, usage */
    lf_wire_error error;  /* filled on LF_STREAM_ERROR */
    int done;             /* terminal event seen: [DONE], message_stop, response.completed,
                           * response.incomplete, or Bedrock's metadata after its messageStop */
    int finished;         /* finish_reason / stop_reason seen */
    int stopped;          /* Bedrock's messageStop seen: its stopReason is taken, but
                           * the stream is whole only with the metadata after it */
    int has_usage;
    size_t delta_at;      /* where the current event's text starts in answer.text */
    int tool_input;       /* 1: a schema request: Anthropic input_json_delta pieces and
                           * Bedrock toolUse input pieces are text */
    /* Tool calls being streamed, not yet in answer.tool_calls: OpenAI's by
     * tool_calls[].index, Anthropic's and Bedrock's by content block index,
     * Gemini's (each whole in one part) in the order they came (keys[i] is
     * calls[i]'s). Published to the answer when the stream completes. */
    lf_answer_call *calls;
    long *call_keys;
    size_t n_calls, cap_calls;
    int calls_published;
    /* Responses: the reasoning items of response.output_item.done events
     * (a JSON array's items, comma-separated), published to
     * answer.reasoning when the stream completes. */
    lf_buf reasoning;
} lf_stream_state;

#define LF_STREAM_CONTINUE 0
#define LF_STREAM_DONE 1      /* terminal event; later events are ignored (a Gemini
                               * stream's end is its finishReason: finished) */
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
