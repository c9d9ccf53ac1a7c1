/* Request bodies of Anthropic messages, on Anthropic's host or on Vertex AI
 * (rawPredict: the model in the path, anthropic_version in the body). */
#include "lf_wire_anthropic.h"

#include "lf_json_write.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* An Anthropic assistant message with tool calls: its text (when it has
 * any: Anthropic refuses an empty text block), then a tool_use block per
 * call, whose input is the arguments' object, or {} for arguments that are
 * not one (the model's own mistake, which the result the caller sends
 * explains). */
static int lf_anthropic_calls(lf_buf *out, const lf_message *m, int first)
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
static int lf_anthropic_result(lf_buf *out, const lf_message *m, int first_block)
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

static int lf_anthropic_block(lf_buf *out, const lf_request_params *p, const lf_attachment *a)
{
    const char *type = lf_wire_attachment_kind(a->mime_type) == LF_ATTACH_IMAGE ? "{\"type\":\"image\",\"source\":"
                                                                          : "{\"type\":\"document\",\"source\":";

    if (lf_buf_append_str(out, type) != 0) return -1;
    if (lf_wire_attachment_by_url(p, a))
        return lf_buf_append_str(out, "{\"type\":\"url\",\"url\":") != 0 || lf_json_put_cstring(out, a->url) != 0
                   ? -1
                   : lf_buf_append_str(out, "}}");
    return lf_buf_append_str(out, "{\"type\":\"base64\",\"media_type\":\"") != 0 ||
                   lf_buf_append_str(out, a->mime_type) != 0 || lf_buf_append_str(out, "\",\"data\":\"") != 0 ||
                   lf_buf_append(out, a->base64, a->base64_len) != 0
               ? -1
               : lf_buf_append_str(out, "\"}}");
}

/* The files first (Anthropic's advice: images before the question), then the
 * text, left out when empty (Anthropic refuses an empty text block). */
static int lf_anthropic_blocks(lf_buf *out, const lf_request_params *p, const lf_message *m, int first)
{
    size_t k;

    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    if (lf_buf_append_str(out, "{\"role\":\"user\",\"content\":[") != 0) return -1;
    for (k = 0; k < m->n_attachments; k++)
        if ((k && lf_buf_append_char(out, ',') != 0) || lf_anthropic_block(out, p, &m->attachments[k]) != 0)
            return -1;
    if (m->content_len && (lf_buf_append_str(out, ",{\"type\":\"text\",\"text\":") != 0 ||
                           lf_json_put_string(out, m->content, m->content_len) != 0 ||
                           lf_buf_append_char(out, '}') != 0))
        return -1;
    return lf_buf_append_str(out, "]}");
}

/* Anthropic's tools and tool_choice (auto, any, tool, none); parallel
 * calls turned off is tool_choice's disable_parallel_tool_use. */
static int lf_anthropic_tools(lf_buf *out, const lf_request_params *p)
{
    static const char *const type[] = { "auto", "auto", "any", "none", "tool" };
    int serial = p->has_parallel_tool_calls && !p->parallel_tool_calls;
    size_t i;

    if (!p->n_tools) return 0;
    if (lf_buf_append_str(out, ",\"tools\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++)
        if ((i && lf_buf_append_char(out, ',') != 0) || lf_buf_append_char(out, '{') != 0 ||
            lf_wire_put_tool(out, &p->tools[i], "input_schema") != 0 || lf_buf_append_char(out, '}') != 0)
            return -1;
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

int lf_wire_anthropic_build(const lf_request_params *p, const char *schema, lf_buf *out)
{
    lf_buf system;
    size_t i;
    int first = 1, rc = -1;

    lf_buf_init(&system);
    /* Anthropic has no JSON mode: the instruction ends the system text. */
    if (lf_wire_system_text(p, &system) != 0) goto done;

    /* On Vertex AI the model is in the path, the API version in the body. */
    if (p->layout == LF_LAYOUT_VERTEX ? lf_buf_append_str(out, "{\"anthropic_version\":\"" LF_VERTEX_ANTHROPIC_VERSION "\"") != 0
                          : lf_buf_append_str(out, "{\"model\":") != 0 || lf_json_put_cstring(out, p->model) != 0)
        goto done;
    if (lf_buf_append_str(out, ",\"max_tokens\":") != 0 ||
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
            if (lf_anthropic_result(out, m, !in_run) != 0) goto done;
            if ((i + 1 == p->n_messages || lf_wire_role(p->messages[i + 1].role) != LF_ROLE_TOOL) &&
                lf_buf_append_str(out, "]}") != 0)
                goto done;
            first = 0;
            continue;
        }
        if (role != LF_ROLE_USER && role != LF_ROLE_ASSISTANT) continue;
        if ((m->n_tool_calls      ? lf_anthropic_calls(out, m, first)
             : m->n_attachments ? lf_anthropic_blocks(out, p, m, first)
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
    if (lf_anthropic_tools(out, p) != 0) goto done;
    if (lf_buf_append_str(out, p->stream ? ",\"stream\":true}" : ",\"stream\":false}") != 0)
        goto done;
    rc = 0;
done:
    lf_buf_free(&system);
    return rc;
}
