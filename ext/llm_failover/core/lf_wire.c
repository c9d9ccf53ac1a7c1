/* The wire layer's entry points (lf_wire.h), by protocol: a request checked
 * for what every protocol requires, then built by its protocol's request
 * file; an answer or a stream event read by its protocol's response file.
 * Below the protocols, what they share (lf_wire_shared.h). */
#include "lf_wire.h"

#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "lf_json_answer.h"
#include "lf_json_read.h"
#include "lf_wire_anthropic.h"
#include "lf_wire_bedrock.h"
#include "lf_wire_gemini.h"
#include "lf_wire_openai.h"
#include "lf_wire_responses.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* ------------------------------------------- the protocols */

int lf_wire_api_named(const char *name, size_t len, lf_api *api)
{
    if (lf_bytes_are(name, len, "openai")) *api = LF_API_OPENAI;
    else if (lf_bytes_are(name, len, "anthropic")) *api = LF_API_ANTHROPIC;
    else if (lf_bytes_are(name, len, "responses")) *api = LF_API_RESPONSES;
    else if (lf_bytes_are(name, len, "bedrock")) *api = LF_API_BEDROCK;
    else if (lf_bytes_are(name, len, "gemini")) *api = LF_API_GEMINI;
    else return -1;
    return 0;
}

const char *lf_wire_api_name(lf_api api)
{
    switch (api) {
    case LF_API_ANTHROPIC: return "anthropic";
    case LF_API_RESPONSES: return "responses";
    case LF_API_BEDROCK: return "bedrock";
    case LF_API_GEMINI: return "gemini";
    default: return "openai";
    }
}

const char *lf_wire_schema_with_tools_refusal(lf_api api)
{
    switch (api) {
    case LF_API_ANTHROPIC:
        return "a schema and tools cannot go in one request to Anthropic: the schema is itself a forced tool call there";
    case LF_API_BEDROCK:
        return "a schema and tools cannot go in one request to Bedrock: the schema is itself a forced tool call there";
    case LF_API_GEMINI:
        return "a schema and tools cannot go in one request to Gemini: its models refuse function calling with a JSON "
               "response type";
    default: return NULL;
    }
}

size_t lf_wire_embed_max_inputs(lf_api api)
{
    switch (api) {
    case LF_API_ANTHROPIC:
    case LF_API_BEDROCK: return 0;
    case LF_API_GEMINI: return LF_GEMINI_EMBED_MAX_INPUTS;
    default: return LF_EMBED_MAX_INPUTS;
    }
}

lf_framing lf_wire_stream_framing(lf_api api)
{
    return api == LF_API_BEDROCK ? LF_FRAMING_EVENTSTREAM : LF_FRAMING_SSE;
}

/* ------------------------------------------- requests */

/* Text that is one JSON object. */
static int lf_wire_is_object(const char *text, size_t len)
{
    json_object *o = text ? lf_json_parse(text, len) : NULL;
    int ok = o && json_object_is_type(o, json_type_object);

    json_object_put(o);
    return ok;
}

static int lf_wire_check_tools(const lf_request_params *p, int has_tool_turns, lf_buf *errmsg)
{
    size_t i, j;

    if (p->n_tools && !p->tools) {
        lf_wire_fail(errmsg, "tools is NULL but n_tools is %zu", p->n_tools);
        return -1;
    }
    for (i = 0; i < p->n_tools; i++) {
        const char *name = p->tools[i].name;

        if (!name || !lf_wire_name_ok(name, strlen(name))) {
            lf_wire_fail(errmsg, "tool %zu: name \"%.64s\" is not 1 to 64 of A-Z a-z 0-9 _ -", i, name ? name : "");
            return -1;
        }
        for (j = 0; j < i; j++) {
            if (strcmp(p->tools[j].name, name) == 0) {
                lf_wire_fail(errmsg, "tool %zu: the name \"%s\" is given twice", i, name);
                return -1;
            }
        }
        if (p->tools[i].parameters && !lf_wire_is_object(p->tools[i].parameters, strlen(p->tools[i].parameters))) {
            lf_wire_fail(errmsg, "tool \"%s\": parameters are not the JSON text of one object", name);
            return -1;
        }
    }
    switch (p->tool_choice) {
    case LF_TOOL_CHOICE_UNSET:
    case LF_TOOL_CHOICE_AUTO:
    case LF_TOOL_CHOICE_NONE:
        break;
    case LF_TOOL_CHOICE_REQUIRED:
        if (!p->n_tools) {
            lf_wire_fail(errmsg, "tool_choice required needs tools");
            return -1;
        }
        break;
    case LF_TOOL_CHOICE_TOOL:
        for (i = 0; i < p->n_tools && p->tool_choice_name; i++)
            if (strcmp(p->tools[i].name, p->tool_choice_name) == 0) break;
        if (!p->tool_choice_name || i == p->n_tools) {
            lf_wire_fail(errmsg, "tool_choice names \"%.64s\", which is not one of the tools",
                         p->tool_choice_name ? p->tool_choice_name : "");
            return -1;
        }
        break;
    default:
        lf_wire_fail(errmsg, "unknown tool_choice %d", (int)p->tool_choice);
        return -1;
    }
    if (p->schema && p->n_tools && lf_wire_schema_with_tools_refusal(p->api)) {
        lf_wire_fail(errmsg, "%s", lf_wire_schema_with_tools_refusal(p->api));
        return -1;
    }
    if (p->api == LF_API_ANTHROPIC && has_tool_turns && !p->n_tools) {
        /* Anthropic refuses tool_use and tool_result blocks without tools. */
        lf_wire_fail(errmsg, "an Anthropic request whose messages hold tool calls needs its tools");
        return -1;
    }
    if (p->api == LF_API_BEDROCK && has_tool_turns && !p->n_tools) {
        /* Converse refuses toolUse and toolResult blocks without a toolConfig. */
        lf_wire_fail(errmsg, "a Bedrock request whose messages hold tool calls needs its tools");
        return -1;
    }
    return 0;
}

/* Checks what both protocols require; counts the messages that go into the
 * "messages" array of an Anthropic request. */
static int lf_wire_check_params(const lf_request_params *p, lf_buf *errmsg, size_t *n_chat)
{
    size_t i;
    int has_tool_turns = 0;

    *n_chat = 0;
    if (p->api != LF_API_OPENAI && p->api != LF_API_ANTHROPIC && p->api != LF_API_RESPONSES &&
        p->api != LF_API_BEDROCK && p->api != LF_API_GEMINI) {
        lf_wire_fail(errmsg, "unknown API %d", (int)p->api);
        return -1;
    }
    if (!p->model || !p->model[0]) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    if (p->n_messages && !p->messages) {
        lf_wire_fail(errmsg, "messages is NULL but n_messages is %zu", p->n_messages);
        return -1;
    }
    if (p->has_temperature && !isfinite(p->temperature)) {
        lf_wire_fail(errmsg, "temperature is not a finite number");
        return -1;
    }
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role;

        if (!m->role) {
            lf_wire_fail(errmsg, "message %zu has no role", i);
            return -1;
        }
        role = lf_wire_role(m->role);
        if (role == LF_ROLE_UNKNOWN) {
            lf_wire_fail(errmsg, "message %zu has an unknown role \"%.64s\"", i, m->role);
            return -1;
        }
        /* A tool call's message may have no text, and so may a result. */
        if (!m->content && !(m->content_len == 0 && (m->n_tool_calls || role == LF_ROLE_TOOL))) {
            lf_wire_fail(errmsg, "message %zu has no content", i);
            return -1;
        }
        if (role == LF_ROLE_USER || role == LF_ROLE_ASSISTANT || role == LF_ROLE_TOOL) (*n_chat)++;
        if (m->n_tool_calls || role == LF_ROLE_TOOL) has_tool_turns = 1;
        /* Checked only where it goes: elsewhere it is dropped unread. */
        if (lf_wire_reasoning_goes(p, m) && m->reasoning_len && p->api == LF_API_RESPONSES &&
            !lf_wire_responses_reasoning_ok(m->reasoning, m->reasoning_len)) {
            lf_wire_fail(errmsg, "message %zu: its reasoning state is not a JSON array of items", i);
            return -1;
        }
    }
    if (p->api == LF_API_ANTHROPIC && *n_chat == 0) {
        lf_wire_fail(errmsg, "an Anthropic request needs at least one user or assistant message");
        return -1;
    }
    if (p->api == LF_API_BEDROCK && *n_chat == 0) {
        lf_wire_fail(errmsg, "a Bedrock request needs at least one user or assistant message");
        return -1;
    }
    if (p->api == LF_API_GEMINI && *n_chat == 0) {
        lf_wire_fail(errmsg, "a Gemini request needs at least one user or assistant message");
        return -1;
    }
    if (p->api != LF_API_ANTHROPIC && p->n_messages == 0 && !(p->system && p->system_len)) {
        lf_wire_fail(errmsg, "the request has no messages");
        return -1;
    }
    if (p->schema_name && !lf_wire_name_ok(p->schema_name, strlen(p->schema_name))) {
        lf_wire_fail(errmsg, "schema name \"%.64s\" is not 1 to 64 of A-Z a-z 0-9 _ -", p->schema_name);
        return -1;
    }
    if (lf_wire_check_attachments(p, errmsg) != 0) return -1;
    return lf_wire_check_tools(p, has_tool_turns, errmsg);
}

/* An embeddings request (LF_REQUEST_EMBEDDINGS): OpenAI-compatible APIs (a
 * Responses host, OpenAI or Azure, has the same /embeddings) and Google AI's
 * Gemini. */
static int lf_wire_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    switch (p->api) {
    case LF_API_OPENAI:
    case LF_API_RESPONSES: return lf_wire_openai_build_embeddings(p, out, errmsg);
    case LF_API_GEMINI: return lf_wire_gemini_build_embeddings(p, out, errmsg);
    default:
        lf_wire_fail(errmsg, "embeddings need an OpenAI-compatible API or Gemini (Anthropic and Bedrock Converse have no "
                     "embeddings endpoint)");
        return -1;
    }
}

int lf_wire_build_request_parsed(const lf_request_params *p, json_object *schema, lf_buf *out, lf_buf *errmsg)
{
    const char *schema_text = NULL;
    size_t n_chat, size, i, k;
    int rc;

    lf_buf_clear(out);
    if (errmsg) lf_buf_clear(errmsg);
    if (!p) {
        lf_wire_fail(errmsg, "no request parameters");
        return -1;
    }
    /* What the host serves first: a request it refuses is not built. */
    if (lf_wire_layout_serves(p->layout, p->api, p->kind, errmsg) != 0) return -1;
    if (p->kind == LF_REQUEST_EMBEDDINGS) return lf_wire_build_embeddings(p, out, errmsg);
    if (lf_wire_check_params(p, errmsg, &n_chat) != 0) return -1;
    /* Never a body for a transcript a provider would refuse. */
    rc = lf_wire_check_transcript(p->messages, p->n_messages, errmsg, NULL);
    if (rc != 0) return rc;
    if (p->schema && !schema) {
        lf_wire_fail(errmsg, "the schema was not parsed");
        return -1;
    }
    /* Written as json-c writes it back: one JSON object, whatever the
     * caller's text held around it. */
    if (schema)
        schema_text = json_object_to_json_string_ext(schema, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    /* The body's size when nothing needs escaping, allocated at once. */
    size = 128 + strlen(p->model) + (p->system ? p->system_len : 0);
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];

        size += 32 + strlen(m->role) + m->content_len + (m->tool_call_id ? 64 + strlen(m->tool_call_id) : 0) +
                lf_wire_attachments_size(m) + (lf_wire_reasoning_goes(p, m) ? m->reasoning_len : 0);
        for (k = 0; k < m->n_tool_calls; k++)
            size += 96 + strlen(m->tool_calls[k].id) + strlen(m->tool_calls[k].name) + m->tool_calls[k].arguments_len +
                    m->tool_calls[k].signature_len;
    }
    for (i = 0; i < p->n_tools; i++)
        size += 96 + strlen(p->tools[i].name) + (p->tools[i].description ? strlen(p->tools[i].description) : 0) +
                (p->tools[i].parameters ? strlen(p->tools[i].parameters) : 0);
    if (schema_text) size += 256 + strlen(schema_text);
    rc = schema && !schema_text ? -1 : lf_buf_reserve(out, size);
    if (rc == 0) {
        switch (p->api) {
        case LF_API_ANTHROPIC: rc = lf_wire_anthropic_build(p, schema_text, out); break;
        case LF_API_RESPONSES: rc = lf_wire_responses_build(p, schema_text, out); break;
        case LF_API_BEDROCK: rc = lf_wire_bedrock_build(p, schema_text, out); break;
        case LF_API_GEMINI: rc = lf_wire_gemini_build(p, schema_text, out); break;
        default: rc = lf_wire_openai_build(p, schema_text, out); break;
        }
    }
    if (rc != 0) {
        lf_buf_clear(out);
        lf_wire_fail(errmsg, "out of memory building the request");
        return -1;
    }
    return 0;
}

int lf_wire_build_request(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    json_object *schema = NULL;
    size_t n_chat;
    int rc;

    if (p && p->schema && p->kind == LF_REQUEST_CHAT) {
        /* The parameters first, as without a schema: a bad schema name is
         * named as such, whatever the schema holds. */
        if (lf_wire_check_params(p, errmsg, &n_chat) != 0) {
            lf_buf_clear(out);
            return -1;
        }
        schema = lf_json_schema_parse(p->schema, strlen(p->schema), errmsg);
        if (!schema) {
            lf_buf_clear(out);
            return -1;
        }
    }
    rc = lf_wire_build_request_parsed(p, schema, out, errmsg);
    json_object_put(schema);
    return rc;
}

/* ------------------------------------------- answers and stream events */

static int lf_wire_parse_response_with(lf_api api, const char *body, size_t len,
                                       lf_answer *out, lf_wire_error *err, int tool)
{
    lf_wire_error scratch;
    json_object *root;
    int rc;

    err = lf_wire_parse_begin(out, err, &scratch);
    root = lf_json_parse(body, len);
    if (!root) {
        rc = LF_WIRE_INVALID;
    } else {
        switch (api) {
        case LF_API_ANTHROPIC: rc = lf_wire_anthropic_answer(root, out, err, tool); break;
        case LF_API_RESPONSES: rc = lf_wire_responses_answer(root, out, err); break;
        case LF_API_BEDROCK: rc = lf_wire_bedrock_answer(root, out, err, tool); break;
        /* A schema answer is text there (responseJsonSchema), as any other. */
        case LF_API_GEMINI: rc = lf_wire_gemini_answer(root, out, err); break;
        default: rc = lf_wire_openai_answer(root, out, err); break;
        }
        json_object_put(root);
    }
    return lf_wire_parse_end(rc, out, err, &scratch);
}

int lf_wire_parse_response(lf_api api, const char *body, size_t len,
                           lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 0);
}

int lf_wire_parse_tool_response(lf_api api, const char *body, size_t len,
                                lf_answer *out, lf_wire_error *err)
{
    return lf_wire_parse_response_with(api, body, len, out, err, 1);
}

static int lf_stream_blank(const char *d, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!lf_wire_is_ws(d[i])) return 0;
    return 1;
}

/* The end of an event: the text it added to the answer goes out to the
 * caller, or, when the event failed, comes off the answer again. */
static int lf_stream_took(lf_stream_state *s, int rc, const char **delta, size_t *delta_len)
{
    lf_buf *t = &s->answer.text;

    if (t->len > s->delta_at && rc != LF_STREAM_CONTINUE) {
        t->len = s->delta_at;
        t->ptr[t->len] = '\0';
    }
    if (delta) *delta = lf_buf_cstr(t) + s->delta_at;
    if (delta_len) *delta_len = t->len - s->delta_at;
    return rc;
}

/* The start of an event: nothing of it delivered yet. 1 when the stream has
 * ended already: later events are ignored. */
static int lf_stream_begin(lf_stream_state *s, const char **delta, size_t *delta_len)
{
    s->delta_at = s->answer.text.len;
    if (delta) *delta = lf_buf_cstr(&s->answer.text) + s->delta_at;
    if (delta_len) *delta_len = 0;
    return s->done;
}

int lf_stream_event(lf_stream_state *s, const lf_sse_event *ev,
                    const char **delta, size_t *delta_len)
{
    int rc;

    if (lf_stream_begin(s, delta, delta_len)) return LF_STREAM_CONTINUE;
    if (!ev) return LF_STREAM_INVALID;
    if (!ev->data || lf_stream_blank(ev->data, ev->data_len)) return LF_STREAM_CONTINUE;
    switch (s->api) {
    case LF_API_ANTHROPIC: rc = lf_wire_anthropic_stream_event(s, ev); break;
    case LF_API_RESPONSES: rc = lf_wire_responses_stream_event(s, ev); break;
    case LF_API_BEDROCK: rc = LF_STREAM_INVALID; break; /* its stream is no SSE */
    case LF_API_GEMINI: rc = lf_wire_gemini_stream_event(s, ev); break;
    default: rc = lf_wire_openai_stream_event(s, ev); break;
    }
    return lf_stream_took(s, rc, delta, delta_len);
}

int lf_stream_message(lf_stream_state *s, const lf_es_message *m, const char **delta, size_t *delta_len)
{
    int rc;

    if (lf_stream_begin(s, delta, delta_len)) return LF_STREAM_CONTINUE;
    if (!m) return LF_STREAM_INVALID;
    rc = s->api == LF_API_BEDROCK ? lf_wire_bedrock_stream_message(s, m) : LF_STREAM_INVALID;
    return lf_stream_took(s, rc, delta, delta_len);
}

int lf_wire_parse_embeddings_for(lf_api api, const char *body, size_t len, size_t n_inputs, lf_answer *out,
                                 lf_wire_error *err)
{
    lf_wire_error scratch;
    json_object *root;
    int rc;

    if (api != LF_API_GEMINI) return lf_wire_parse_embeddings(body, len, n_inputs, out, err);
    err = lf_wire_parse_begin(out, err, &scratch);
    root = lf_json_parse(body, len);
    rc = root ? lf_wire_gemini_embeddings(root, n_inputs, out, err) : LF_WIRE_INVALID;
    json_object_put(root);
    return lf_wire_parse_end(rc, out, err, &scratch);
}
