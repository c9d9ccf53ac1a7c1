/* Request bodies of the two protocols, and the path each is sent to. */
#include "lf_wire.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lf_json_answer.h"
#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_internal.h"

#include "lf_banned.h"

const char *lf_wire_path(lf_api api)
{
    return api == LF_API_ANTHROPIC ? "/v1/messages" : "/chat/completions";
}

/* The one way the wire layer words a failure: formatted, cut to a bounded
 * length, and kept valid UTF-8 (a role or a call id quoted back may hold any
 * bytes, and the cut may split a character). */
void lf_wire_vfail(lf_buf *errmsg, const char *fmt, va_list ap)
{
    char tmp[320];
    int n;

    if (!errmsg) return;
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof tmp) n = (int)sizeof tmp - 1;
    (void)lf_utf8_set_sanitized(errmsg, tmp, (size_t)n);
}

void lf_wire_fail(lf_buf *errmsg, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    lf_wire_vfail(errmsg, fmt, ap);
    va_end(ap);
}

lf_role lf_wire_role(const char *role)
{
    if (strcmp(role, "system") == 0) return LF_ROLE_SYSTEM;
    if (strcmp(role, "developer") == 0) return LF_ROLE_DEVELOPER;
    if (strcmp(role, "user") == 0) return LF_ROLE_USER;
    if (strcmp(role, "assistant") == 0) return LF_ROLE_ASSISTANT;
    if (strcmp(role, "tool") == 0) return LF_ROLE_TOOL;
    return LF_ROLE_UNKNOWN;
}

/* Checks what both protocols require; counts the messages that go into the
 * "messages" array of an Anthropic request. */
static int lf_wire_check_params(const lf_request_params *p, lf_buf *errmsg, size_t *n_chat)
{
    size_t i;
    int has_tool_turns = 0;

    *n_chat = 0;
    if (p->api != LF_API_OPENAI && p->api != LF_API_ANTHROPIC) {
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
    }
    if (p->api == LF_API_ANTHROPIC && *n_chat == 0) {
        lf_wire_fail(errmsg, "an Anthropic request needs at least one user or assistant message");
        return -1;
    }
    if (p->api == LF_API_OPENAI && p->n_messages == 0 && !(p->system && p->system_len)) {
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

/* JSON mode without a schema: LF_JSON_INSTRUCTION goes after every
 * instruction of the caller's. */
static int lf_wire_json_instruction(const lf_request_params *p)
{
    return p->json_mode && !p->schema;
}

int lf_wire_put_message(lf_buf *out, const char *role, const char *content, size_t len, int first)
{
    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    if (lf_buf_append_str(out, "{\"role\":") != 0 ||
        lf_json_put_cstring(out, role) != 0 ||
        lf_buf_append_str(out, ",\"content\":") != 0 ||
        lf_json_put_string(out, content, len) != 0)
        return -1;
    return lf_buf_append_char(out, '}');
}


static int lf_wire_build_openai(const lf_request_params *p, const char *schema, lf_buf *out)
{
    size_t i;
    int first = 1, lead_done = 0;

    if (lf_buf_append_str(out, "{\"model\":") != 0 ||
        lf_json_put_cstring(out, p->model) != 0 ||
        lf_buf_append_str(out, ",\"messages\":[") != 0)
        return -1;
    if (p->system && p->system_len) {
        if (lf_wire_put_message(out, "system", p->system, p->system_len, first) != 0) return -1;
        first = 0;
    }
    /* System messages stay where they are; the JSON instruction follows the
     * leading ones (OpenAI's json_object mode also wants the word JSON in
     * the messages). */
    for (i = 0; i < p->n_messages; i++) {
        lf_role role = lf_wire_role(p->messages[i].role);

        if (!lead_done && role != LF_ROLE_SYSTEM && role != LF_ROLE_DEVELOPER) {
            lead_done = 1;
            if (lf_wire_json_instruction(p)) {
                if (lf_wire_put_message(out, "system", LF_JSON_INSTRUCTION, strlen(LF_JSON_INSTRUCTION), first) != 0)
                    return -1;
                first = 0;
            }
        }
        if ((p->messages[i].n_attachments ? lf_wire_put_openai_parts(out, p, &p->messages[i], first)
                                          : lf_wire_put_openai_message(out, &p->messages[i], first)) != 0)
            return -1;
        first = 0;
    }
    if (!lead_done && lf_wire_json_instruction(p) &&
        lf_wire_put_message(out, "system", LF_JSON_INSTRUCTION, strlen(LF_JSON_INSTRUCTION), first) != 0)
        return -1;
    if (lf_buf_append_char(out, ']') != 0) return -1;
    if (p->has_temperature &&
        (lf_buf_append_str(out, ",\"temperature\":") != 0 ||
         lf_json_put_double(out, p->temperature) != 0))
        return -1;
    /* max_tokens, not max_completion_tokens: every compatible server takes
     * it, and OpenAI still accepts it for chat models. */
    if (p->max_tokens > 0 &&
        (lf_buf_append_str(out, ",\"max_tokens\":") != 0 ||
         lf_json_put_long(out, p->max_tokens) != 0))
        return -1;
    if (schema) {
        if (lf_buf_append_str(out, ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":") != 0 ||
            lf_json_put_cstring(out, p->schema_name ? p->schema_name : LF_SCHEMA_DEFAULT_NAME) != 0 ||
            lf_buf_append_str(out, ",\"schema\":") != 0 || lf_buf_append_str(out, schema) != 0 ||
            lf_buf_append_str(out, ",\"strict\":true}}") != 0)
            return -1;
    } else if (p->json_mode &&
               lf_buf_append_str(out, ",\"response_format\":{\"type\":\"json_object\"}") != 0) {
        return -1;
    }
    if (lf_wire_put_openai_tools(out, p) != 0) return -1;
    if (p->stream)
        return lf_buf_append_str(out,
                                 ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    return lf_buf_append_str(out, ",\"stream\":false}");
}

static int lf_wire_build_anthropic(const lf_request_params *p, const char *schema, lf_buf *out)
{
    lf_buf system;
    size_t i;
    int first = 1, rc = -1;

    lf_buf_init(&system);
    if (p->system && p->system_len && lf_buf_append(&system, p->system, p->system_len) != 0) goto done;
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role = lf_wire_role(m->role);

        if ((role != LF_ROLE_SYSTEM && role != LF_ROLE_DEVELOPER) || !m->content_len) continue;
        if (system.len && lf_buf_append(&system, "\n\n", 2) != 0) goto done;
        if (lf_buf_append(&system, m->content, m->content_len) != 0) goto done;
    }
    /* Anthropic has no JSON mode: the instruction ends the system text. */
    if (lf_wire_json_instruction(p) &&
        ((system.len && lf_buf_append(&system, "\n\n", 2) != 0) || lf_buf_append_str(&system, LF_JSON_INSTRUCTION) != 0))
        goto done;

    if (lf_buf_append_str(out, "{\"model\":") != 0 ||
        lf_json_put_cstring(out, p->model) != 0 ||
        lf_buf_append_str(out, ",\"max_tokens\":") != 0 ||
        lf_json_put_long(out, p->max_tokens > 0 ? p->max_tokens
                                                : LF_ANTHROPIC_DEFAULT_MAX_TOKENS) != 0 ||
        lf_buf_append_str(out, ",\"messages\":[") != 0)
        goto done;
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role = lf_wire_role(m->role);

        if (role == LF_ROLE_TOOL) {
            /* The results of one turn: tool_result blocks of one user message. */
            int in_run = i > 0 && lf_wire_role(p->messages[i - 1].role) == LF_ROLE_TOOL;

            if (!in_run && ((!first && lf_buf_append_char(out, ',') != 0) ||
                            lf_buf_append_str(out, "{\"role\":\"user\",\"content\":[") != 0))
                goto done;
            if (lf_wire_put_anthropic_result(out, m, !in_run) != 0) goto done;
            if ((i + 1 == p->n_messages || lf_wire_role(p->messages[i + 1].role) != LF_ROLE_TOOL) &&
                lf_buf_append_str(out, "]}") != 0)
                goto done;
            first = 0;
            continue;
        }
        if (role != LF_ROLE_USER && role != LF_ROLE_ASSISTANT) continue;
        if ((m->n_tool_calls      ? lf_wire_put_anthropic_calls(out, m, first)
             : m->n_attachments ? lf_wire_put_anthropic_blocks(out, p, m, first)
                                : lf_wire_put_message(out, m->role, lf_wire_content(m), m->content_len, first)) != 0)
            goto done;
        first = 0;
    }
    if (lf_buf_append_char(out, ']') != 0) goto done;
    if (system.len &&
        (lf_buf_append_str(out, ",\"system\":") != 0 ||
         lf_json_put_string(out, system.ptr, system.len) != 0))
        goto done;
    if (p->has_temperature &&
        (lf_buf_append_str(out, ",\"temperature\":") != 0 ||
         lf_json_put_double(out, p->temperature) != 0))
        goto done;
    if (schema) {
        const char *name = p->schema_name ? p->schema_name : LF_SCHEMA_DEFAULT_NAME;

        /* The tool is never run: its input is the answer, so it is forced. */
        if (lf_buf_append_str(out, ",\"tools\":[{\"name\":") != 0 || lf_json_put_cstring(out, name) != 0 ||
            lf_buf_append_str(out, ",\"description\":\"Give your answer as this tool's input.\",\"input_schema\":") != 0 ||
            lf_buf_append_str(out, schema) != 0 ||
            lf_buf_append_str(out, "}],\"tool_choice\":{\"type\":\"tool\",\"name\":") != 0 ||
            lf_json_put_cstring(out, name) != 0 || lf_buf_append_char(out, '}') != 0)
            goto done;
    }
    if (lf_wire_put_anthropic_tools(out, p) != 0) goto done;
    if (lf_buf_append_str(out, p->stream ? ",\"stream\":true}" : ",\"stream\":false}") != 0)
        goto done;
    rc = 0;
done:
    lf_buf_free(&system);
    return rc;
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
                lf_wire_attachments_size(m);
        for (k = 0; k < m->n_tool_calls; k++)
            size += 96 + strlen(m->tool_calls[k].id) + strlen(m->tool_calls[k].name) + m->tool_calls[k].arguments_len;
    }
    for (i = 0; i < p->n_tools; i++)
        size += 96 + strlen(p->tools[i].name) + (p->tools[i].description ? strlen(p->tools[i].description) : 0) +
                (p->tools[i].parameters ? strlen(p->tools[i].parameters) : 0);
    if (schema_text) size += 256 + strlen(schema_text);
    rc = schema && !schema_text ? -1 : lf_buf_reserve(out, size);
    if (rc == 0)
        rc = p->api == LF_API_ANTHROPIC ? lf_wire_build_anthropic(p, schema_text, out)
                                        : lf_wire_build_openai(p, schema_text, out);
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
