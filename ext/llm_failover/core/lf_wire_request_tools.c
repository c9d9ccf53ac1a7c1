/* The tool parts of a request body, both protocols: the tools and the tool
 * choice (and their checks), an assistant message's tool calls, the tools'
 * results; every call id as lf_wire_call_id sends it. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_internal.h"

#include "lf_banned.h"

/* The one owner of the naming rule (lf_wire.h): schemas, tools, and Ruby's
 * AnswerFormat and Tool before any call. */
int lf_wire_name_ok(const char *name, size_t len)
{
    size_t i;

    if (!name || len < 1 || len > 64) return 0;
    for (i = 0; i < len; i++) {
        char c = name[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* Text that is one JSON object. */
static int lf_wire_is_object(const char *text, size_t len)
{
    json_object *o = text ? lf_json_parse(text, len) : NULL;
    int ok = o && json_object_is_type(o, json_type_object);

    json_object_put(o);
    return ok;
}

/* text as one JSON object, written back as json-c writes it (sanitized):
 * 0, 1 when it is not one object (nothing written), -1 when out of memory. */
static int lf_wire_put_object(lf_buf *out, const char *text, size_t len)
{
    json_object *o = text && len ? lf_json_parse(text, len) : NULL;
    const char *s;
    size_t n = 0;
    int rc = 1;

    if (o && json_object_is_type(o, json_type_object)) {
        s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        rc = s ? lf_utf8_append_sanitized(out, s, n) : -1;
    }
    json_object_put(o);
    return rc;
}

/* The tools, the tool choice, and what they ask of the rest. */
int lf_wire_takes_schema_with_tools(lf_api api)
{
    return api != LF_API_ANTHROPIC;
}

int lf_wire_check_tools(const lf_request_params *p, int has_tool_turns, lf_buf *errmsg)
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
    if (p->schema && p->n_tools && !lf_wire_takes_schema_with_tools(p->api)) {
        lf_wire_fail(errmsg, "an Anthropic request cannot have both a schema and tools");
        return -1;
    }
    if (p->api == LF_API_ANTHROPIC && has_tool_turns && !p->n_tools) {
        /* Anthropic refuses tool_use and tool_result blocks without tools. */
        lf_wire_fail(errmsg, "an Anthropic request whose messages hold tool calls needs its tools");
        return -1;
    }
    return 0;
}

/* A call id as it is sent (lf_wire_call_id), as a JSON string. */
static int lf_wire_put_call_id(lf_buf *out, const char *id)
{
    lf_buf sent;
    int rc;

    lf_buf_init(&sent);
    rc = lf_wire_call_id(id, strlen(id), &sent);
    if (rc == 0) rc = lf_json_put_string(out, lf_buf_cstr(&sent), sent.len);
    lf_buf_free(&sent);
    return rc;
}

const char *lf_wire_content(const lf_message *m)
{
    return m->content ? m->content : "";
}

/* An OpenAI message: plain, an assistant's tool calls (content null when
 * it has no text; arguments as their text), or a tool's result. */
int lf_wire_put_openai_message(lf_buf *out, const lf_message *m, int first)
{
    size_t k;

    if (lf_wire_role(m->role) != LF_ROLE_TOOL && !m->n_tool_calls)
        return lf_wire_put_message(out, m->role, lf_wire_content(m), m->content_len, first);
    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    if (lf_wire_role(m->role) == LF_ROLE_TOOL)
        return lf_buf_append_str(out, "{\"role\":\"tool\",\"tool_call_id\":") != 0 ||
                       lf_wire_put_call_id(out, m->tool_call_id) != 0 ||
                       lf_buf_append_str(out, ",\"content\":") != 0 ||
                       lf_json_put_string(out, lf_wire_content(m), m->content_len) != 0
                   ? -1
                   : lf_buf_append_char(out, '}');
    if (lf_buf_append_str(out, "{\"role\":\"assistant\",\"content\":") != 0 ||
        (m->content_len ? lf_json_put_string(out, m->content, m->content_len) : lf_buf_append_str(out, "null")) != 0 ||
        lf_buf_append_str(out, ",\"tool_calls\":[") != 0)
        return -1;
    for (k = 0; k < m->n_tool_calls; k++) {
        const lf_tool_call *c = &m->tool_calls[k];

        if ((k && lf_buf_append_char(out, ',') != 0) || lf_buf_append_str(out, "{\"id\":") != 0 ||
            lf_wire_put_call_id(out, c->id) != 0 ||
            lf_buf_append_str(out, ",\"type\":\"function\",\"function\":{\"name\":") != 0 ||
            lf_json_put_cstring(out, c->name) != 0 || lf_buf_append_str(out, ",\"arguments\":") != 0 ||
            (c->arguments && c->arguments_len ? lf_json_put_string(out, c->arguments, c->arguments_len)
                                              : lf_buf_append_str(out, "\"{}\"")) != 0 ||
            lf_buf_append_str(out, "}}") != 0)
            return -1;
    }
    return lf_buf_append_str(out, "]}");
}

/* An Anthropic assistant message with tool calls: its text (when it has
 * any: Anthropic refuses an empty text block), then a tool_use block per
 * call, whose input is the arguments' object, or {} for arguments that are
 * not one (the model's own mistake, which the result the caller sends
 * explains). */
int lf_wire_put_anthropic_calls(lf_buf *out, const lf_message *m, int first)
{
    size_t k;
    int rc;

    if ((!first && lf_buf_append_char(out, ',') != 0) ||
        lf_buf_append_str(out, "{\"role\":\"assistant\",\"content\":[") != 0)
        return -1;
    if (m->content_len &&
        (lf_buf_append_str(out, "{\"type\":\"text\",\"text\":") != 0 ||
         lf_json_put_string(out, m->content, m->content_len) != 0 || lf_buf_append_str(out, "},") != 0))
        return -1;
    for (k = 0; k < m->n_tool_calls; k++) {
        const lf_tool_call *c = &m->tool_calls[k];

        if ((k && lf_buf_append_char(out, ',') != 0) ||
            lf_buf_append_str(out, "{\"type\":\"tool_use\",\"id\":") != 0 || lf_wire_put_call_id(out, c->id) != 0 ||
            lf_buf_append_str(out, ",\"name\":") != 0 || lf_json_put_cstring(out, c->name) != 0 ||
            lf_buf_append_str(out, ",\"input\":") != 0)
            return -1;
        rc = lf_wire_put_object(out, c->arguments, c->arguments_len);
        if (rc < 0 || (rc > 0 && lf_buf_append_str(out, "{}") != 0) || lf_buf_append_char(out, '}') != 0) return -1;
    }
    return lf_buf_append_str(out, "]}");
}

/* One tool_result block of an Anthropic user message. */
int lf_wire_put_anthropic_result(lf_buf *out, const lf_message *m, int first_block)
{
    if ((!first_block && lf_buf_append_char(out, ',') != 0) ||
        lf_buf_append_str(out, "{\"type\":\"tool_result\",\"tool_use_id\":") != 0 ||
        lf_wire_put_call_id(out, m->tool_call_id) != 0)
        return -1;
    if (m->content_len &&
        (lf_buf_append_str(out, ",\"content\":") != 0 || lf_json_put_string(out, m->content, m->content_len) != 0))
        return -1;
    if (m->is_error && lf_buf_append_str(out, ",\"is_error\":true") != 0) return -1;
    return lf_buf_append_char(out, '}');
}

/* A tool's JSON Schema, or an object without properties for a tool that
 * takes none. */
static int lf_wire_put_parameters(lf_buf *out, const lf_tool *t)
{
    int rc = t->parameters ? lf_wire_put_object(out, t->parameters, strlen(t->parameters)) : 1;

    if (rc > 0) return lf_buf_append_str(out, "{\"type\":\"object\",\"properties\":{}}");
    return rc;
}

/* OpenAI's tools, tool_choice and parallel_tool_calls; nothing without
 * tools (the API refuses the other two then). */
int lf_wire_put_openai_tools(lf_buf *out, const lf_request_params *p)
{
    static const char *const choice[] = { NULL, "\"auto\"", "\"required\"", "\"none\"", NULL };
    size_t i;

    if (!p->n_tools) return 0;
    if (lf_buf_append_str(out, ",\"tools\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++) {
        const lf_tool *t = &p->tools[i];

        if ((i && lf_buf_append_char(out, ',') != 0) ||
            lf_buf_append_str(out, "{\"type\":\"function\",\"function\":{\"name\":") != 0 ||
            lf_json_put_cstring(out, t->name) != 0 ||
            (t->description && (lf_buf_append_str(out, ",\"description\":") != 0 ||
                                lf_json_put_cstring(out, t->description) != 0)) ||
            lf_buf_append_str(out, ",\"parameters\":") != 0 || lf_wire_put_parameters(out, t) != 0 ||
            lf_buf_append_str(out, "}}") != 0)
            return -1;
    }
    if (lf_buf_append_char(out, ']') != 0) return -1;
    if (p->tool_choice == LF_TOOL_CHOICE_TOOL) {
        if (lf_buf_append_str(out, ",\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":") != 0 ||
            lf_json_put_cstring(out, p->tool_choice_name) != 0 || lf_buf_append_str(out, "}}") != 0)
            return -1;
    } else if (choice[p->tool_choice] &&
               (lf_buf_append_str(out, ",\"tool_choice\":") != 0 || lf_buf_append_str(out, choice[p->tool_choice]) != 0)) {
        return -1;
    }
    if (p->has_parallel_tool_calls &&
        lf_buf_append_str(out, p->parallel_tool_calls ? ",\"parallel_tool_calls\":true" : ",\"parallel_tool_calls\":false") != 0)
        return -1;
    return 0;
}

/* Anthropic's tools and tool_choice (auto, any, tool, none); parallel
 * calls turned off is tool_choice's disable_parallel_tool_use. */
int lf_wire_put_anthropic_tools(lf_buf *out, const lf_request_params *p)
{
    static const char *const type[] = { "auto", "auto", "any", "none", "tool" };
    int serial = p->has_parallel_tool_calls && !p->parallel_tool_calls;
    size_t i;

    if (!p->n_tools) return 0;
    if (lf_buf_append_str(out, ",\"tools\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++) {
        const lf_tool *t = &p->tools[i];

        if ((i && lf_buf_append_char(out, ',') != 0) || lf_buf_append_str(out, "{\"name\":") != 0 ||
            lf_json_put_cstring(out, t->name) != 0 ||
            (t->description && (lf_buf_append_str(out, ",\"description\":") != 0 ||
                                lf_json_put_cstring(out, t->description) != 0)) ||
            lf_buf_append_str(out, ",\"input_schema\":") != 0 || lf_wire_put_parameters(out, t) != 0 ||
            lf_buf_append_char(out, '}') != 0)
            return -1;
    }
    if (lf_buf_append_char(out, ']') != 0) return -1;
    if (p->tool_choice == LF_TOOL_CHOICE_UNSET && !serial) return 0;
    if (lf_buf_append_str(out, ",\"tool_choice\":{\"type\":") != 0 ||
        lf_json_put_cstring(out, type[p->tool_choice]) != 0)
        return -1;
    if (p->tool_choice == LF_TOOL_CHOICE_TOOL &&
        (lf_buf_append_str(out, ",\"name\":") != 0 || lf_json_put_cstring(out, p->tool_choice_name) != 0))
        return -1;
    if (serial && p->tool_choice != LF_TOOL_CHOICE_NONE &&
        lf_buf_append_str(out, ",\"disable_parallel_tool_use\":true") != 0)
        return -1;
    return lf_buf_append_char(out, '}');
}
