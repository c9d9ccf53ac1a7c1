/* What every protocol's request builder uses: the one way the wire layer
 * words a failure, roles, the naming rule, and the pieces of a body that are
 * the same in every protocol. */
#include "lf_wire.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Formatted, cut to a bounded length, and kept valid UTF-8 (lf_utf8_vsetf). */
void lf_wire_vfail(lf_buf *errmsg, const char *fmt, va_list ap)
{
    if (errmsg) (void)lf_utf8_vsetf(errmsg, fmt, ap);
}

void lf_wire_fail(lf_buf *errmsg, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    lf_wire_vfail(errmsg, fmt, ap);
    va_end(ap);
}

const char *lf_wire_api_title(lf_api api, lf_request_kind kind)
{
    int embed = kind == LF_REQUEST_EMBEDDINGS;

    switch (api) {
    case LF_API_ANTHROPIC: return "Anthropic messages";
    case LF_API_RESPONSES: return embed ? "OpenAI embeddings" : "OpenAI Responses";
    case LF_API_BEDROCK: return "Bedrock Converse";
    case LF_API_GEMINI: return embed ? "Gemini embeddings" : "Gemini generateContent";
    default: return embed ? "OpenAI embeddings" : "OpenAI chat completions";
    }
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

const char *lf_wire_content(const lf_message *m)
{
    return m->content ? m->content : "";
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

int lf_wire_json_instruction(const lf_request_params *p)
{
    return p->json_mode && !p->schema;
}

int lf_wire_put_object(lf_buf *out, const char *text, size_t len)
{
    json_object *o = text && len ? lf_json_parse(text, len) : NULL;
    int rc = o && json_object_is_type(o, json_type_object) ? lf_json_append_written(out, o) : 1;

    json_object_put(o);
    return rc;
}

int lf_wire_put_parameters(lf_buf *out, const lf_tool *t)
{
    int rc = t->parameters ? lf_wire_put_object(out, t->parameters, strlen(t->parameters)) : 1;

    if (rc > 0) return lf_buf_append_str(out, "{\"type\":\"object\",\"properties\":{}}");
    return rc;
}

int lf_wire_put_tool(lf_buf *out, const lf_tool *t, const char *schema_key)
{
    if (lf_buf_append_str(out, "\"name\":") != 0 || lf_json_put_cstring(out, t->name) != 0) return -1;
    if (t->description &&
        (lf_buf_append_str(out, ",\"description\":") != 0 || lf_json_put_cstring(out, t->description) != 0))
        return -1;
    if (lf_buf_append_str(out, ",\"") != 0 || lf_buf_append_str(out, schema_key) != 0 ||
        lf_buf_append_str(out, "\":") != 0)
        return -1;
    return lf_wire_put_parameters(out, t);
}

int lf_wire_system_text(const lf_request_params *p, lf_buf *out)
{
    size_t i;

    lf_buf_clear(out);
    if (p->system && p->system_len && lf_buf_append(out, p->system, p->system_len) != 0) return -1;
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role = lf_wire_role(m->role);

        if ((role != LF_ROLE_SYSTEM && role != LF_ROLE_DEVELOPER) || !m->content_len) continue;
        if ((out->len && lf_buf_append(out, "\n\n", 2) != 0) || lf_buf_append(out, m->content, m->content_len) != 0)
            return -1;
    }
    /* No JSON mode of its own, or one that wants to be told: the instruction
     * ends the system text. */
    if (lf_wire_json_instruction(p) &&
        ((out->len && lf_buf_append(out, "\n\n", 2) != 0) || lf_buf_append_str(out, LF_JSON_INSTRUCTION) != 0))
        return -1;
    return 0;
}

/* "data:<mime>;base64,<bytes>" as a JSON string: how OpenAI's protocols take a
 * file's bytes (chat completions' image_url and file parts, Responses'
 * input_image and input_file). */
int lf_wire_put_data_uri(lf_buf *out, const lf_attachment *a)
{
    return lf_buf_append_str(out, "\"data:") != 0 || lf_buf_append_str(out, a->mime_type) != 0 ||
                   lf_buf_append_str(out, ";base64,") != 0 || lf_buf_append(out, a->base64, a->base64_len) != 0
               ? -1
               : lf_buf_append_char(out, '"');
}

/* The one rule of an assistant message's reasoning state (lf_message.reasoning
 * and its calls' signatures): back to the protocol and the origin that made
 * it, never elsewhere (another host cannot read it, and it has no meaning in
 * another protocol); on Responses only to a target that asks for it
 * (encrypted_reasoning: a model that reasons). */
int lf_wire_reasoning_goes(const lf_request_params *p, const lf_message *m)
{
    const char *mine = m->reasoning_origin ? m->reasoning_origin : "";
    const char *theirs = p->origin ? p->origin : "";

    return m->reasoning_api == p->api && strcmp(mine, theirs) == 0 &&
           (p->api != LF_API_RESPONSES || p->encrypted_reasoning);
}
