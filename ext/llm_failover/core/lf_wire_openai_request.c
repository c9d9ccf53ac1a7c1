/* Request bodies of OpenAI chat completions (and every compatible API), and
 * of its /embeddings endpoint, which OpenAI, Azure, Mistral, Ollama,
 * OpenRouter and others speak. */
#include "lf_wire_openai.h"

#include <string.h>

#include "lf_json_write.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* An OpenAI message: plain, an assistant's tool calls (content null when
 * it has no text; arguments as their text), or a tool's result. */
static int lf_openai_message(lf_buf *out, const lf_message *m, int first)
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

static int lf_openai_part(lf_buf *out, const lf_request_params *p, const lf_attachment *a)
{
    if (lf_wire_attachment_kind(a->mime_type) == LF_ATTACH_IMAGE) {
        if (lf_buf_append_str(out, "{\"type\":\"image_url\",\"image_url\":{\"url\":") != 0) return -1;
        if ((lf_wire_attachment_by_url(p, a) ? lf_json_put_cstring(out, a->url) : lf_wire_put_data_uri(out, a)) != 0) return -1;
        return lf_buf_append_str(out, "}}");
    }
    return lf_buf_append_str(out, "{\"type\":\"file\",\"file\":{\"filename\":") != 0 ||
                   lf_json_put_cstring(out, a->filename ? a->filename : "document.pdf") != 0 ||
                   lf_buf_append_str(out, ",\"file_data\":") != 0 || lf_wire_put_data_uri(out, a) != 0
               ? -1
               : lf_buf_append_str(out, "}}");
}

/* The text first, then the files. */
static int lf_openai_parts(lf_buf *out, const lf_request_params *p, const lf_message *m, int first)
{
    size_t k;

    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    if (lf_buf_append_str(out, "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":") != 0 ||
        lf_json_put_string(out, lf_wire_content(m), m->content_len) != 0 || lf_buf_append_char(out, '}') != 0)
        return -1;
    for (k = 0; k < m->n_attachments; k++)
        if (lf_buf_append_char(out, ',') != 0 || lf_openai_part(out, p, &m->attachments[k]) != 0) return -1;
    return lf_buf_append_str(out, "]}");
}

/* OpenAI's tools, tool_choice and parallel_tool_calls; nothing without
 * tools (the API refuses the other two then). */
static int lf_openai_tools(lf_buf *out, const lf_request_params *p)
{
    static const char *const choice[] = { NULL, "\"auto\"", "\"required\"", "\"none\"", NULL };
    size_t i;

    if (!p->n_tools) return 0;
    if (lf_buf_append_str(out, ",\"tools\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++)
        if ((i && lf_buf_append_char(out, ',') != 0) ||
            lf_buf_append_str(out, "{\"type\":\"function\",\"function\":{") != 0 ||
            lf_wire_put_tool(out, &p->tools[i], "parameters") != 0 || lf_buf_append_str(out, "}}") != 0)
            return -1;
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

int lf_wire_openai_build(const lf_request_params *p, const char *schema, lf_buf *out)
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
        if ((p->messages[i].n_attachments ? lf_openai_parts(out, p, &p->messages[i], first)
                                          : lf_openai_message(out, &p->messages[i], first)) != 0)
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
    if (lf_openai_tools(out, p) != 0) return -1;
    if (p->stream)
        return lf_buf_append_str(out,
                                 ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}");
    return lf_buf_append_str(out, ",\"stream\":false}");
}

int lf_wire_openai_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    size_t i, size = 96;

    if (!p->model || !p->model[0]) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    if (p->n_inputs < 1 || p->n_inputs > LF_EMBED_MAX_INPUTS || !p->inputs) {
        lf_wire_fail(errmsg, "embeddings need 1 to %d texts, got %zu", LF_EMBED_MAX_INPUTS, p->n_inputs);
        return -1;
    }
    for (i = 0; i < p->n_inputs; i++) {
        /* Providers refuse an empty input with a 400 that retrying cannot fix. */
        if (!p->inputs[i].ptr || !p->inputs[i].len) {
            lf_wire_fail(errmsg, "text %zu to embed is empty", i);
            return -1;
        }
        size += p->inputs[i].len + 4;
    }
    if (lf_buf_reserve(out, size + strlen(p->model)) != 0 || lf_buf_append_str(out, "{\"model\":") != 0 ||
        lf_json_put_cstring(out, p->model) != 0 || lf_buf_append_str(out, ",\"input\":[") != 0)
        goto oom;
    for (i = 0; i < p->n_inputs; i++) {
        if ((i && lf_buf_append_char(out, ',') != 0) || lf_json_put_string(out, p->inputs[i].ptr, p->inputs[i].len) != 0)
            goto oom;
    }
    /* Floats, not base64: every compatible server speaks that. */
    if (lf_buf_append_str(out, "],\"encoding_format\":\"float\"}") != 0) goto oom;
    return 0;
oom:
    lf_buf_clear(out);
    lf_wire_fail(errmsg, "out of memory building the request");
    return -1;
}
