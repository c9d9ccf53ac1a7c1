/* Request bodies of OpenAI's Responses API: the transcript as input items
 * (messages, function_call and function_call_output items, the reasoning
 * items a turn gave back), the system text as instructions, tools flat (no
 * function wrapper), JSON mode and schemas as text.format. Stateless: every
 * request is store: false and carries the whole transcript. */
#include "lf_wire_responses.h"

#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_utf8.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

int lf_wire_responses_reasoning_ok(const char *text, size_t len)
{
    json_object *items = lf_json_parse(text, len);
    size_t i, n;
    int ok = items && json_object_is_type(items, json_type_array);

    n = ok ? json_object_array_length(items) : 0;
    for (i = 0; i < n && ok; i++) ok = json_object_is_type(json_object_array_get_idx(items, i), json_type_object);
    json_object_put(items);
    return ok;
}

/* A comma before every item but the first. */
static int lf_responses_next(lf_buf *out, int *first)
{
    if (*first) {
        *first = 0;
        return 0;
    }
    return lf_buf_append_char(out, ',');
}

/* The reasoning items an earlier answer of this host gave, as they came:
 * with store: false they are how the model keeps its reasoning across the
 * turns of a tool loop (checked by lf_wire_responses_reasoning_ok). */
static int lf_responses_reasoning(lf_buf *out, const lf_message *m, int *first)
{
    json_object *items = lf_json_parse(m->reasoning, m->reasoning_len);
    size_t i, n = items ? json_object_array_length(items) : 0;
    int rc = items ? 0 : -1;

    for (i = 0; i < n && rc == 0; i++)
        rc = lf_responses_next(out, first) != 0 || lf_json_append_written(out, json_object_array_get_idx(items, i)) != 0
                 ? -1
                 : 0;
    json_object_put(items);
    return rc;
}

/* An assistant turn: its reasoning items (when they go back), its text as an
 * output_text message (none when empty and it called tools), its calls as
 * function_call items. */
static int lf_responses_assistant(lf_buf *out, const lf_request_params *p, const lf_message *m, int *first)
{
    size_t k;

    if (m->reasoning_len && lf_wire_reasoning_goes(p, m) && lf_responses_reasoning(out, m, first) != 0) return -1;
    if ((m->content_len || !m->n_tool_calls) &&
        (lf_responses_next(out, first) != 0 ||
         lf_buf_append_str(out, "{\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":") != 0 ||
         lf_json_put_string(out, lf_wire_content(m), m->content_len) != 0 || lf_buf_append_str(out, "}]}") != 0))
        return -1;
    for (k = 0; k < m->n_tool_calls; k++) {
        const lf_tool_call *c = &m->tool_calls[k];

        if (lf_responses_next(out, first) != 0 || lf_buf_append_str(out, "{\"type\":\"function_call\",\"call_id\":") != 0 ||
            lf_wire_put_call_id(out, c->id) != 0 || lf_buf_append_str(out, ",\"name\":") != 0 ||
            lf_json_put_cstring(out, c->name) != 0 || lf_buf_append_str(out, ",\"arguments\":") != 0 ||
            (c->arguments && c->arguments_len ? lf_json_put_string(out, c->arguments, c->arguments_len)
                                              : lf_buf_append_str(out, "\"{}\"")) != 0 ||
            lf_buf_append_char(out, '}') != 0)
            return -1;
    }
    return 0;
}

/* A file: input_image (its URL or a data URI), input_file (file_url, or its
 * bytes with a filename). */
static int lf_responses_part(lf_buf *out, const lf_request_params *p, const lf_attachment *a)
{
    int by_url = lf_wire_attachment_by_url(p, a);

    if (lf_wire_attachment_kind(a->mime_type) == LF_ATTACH_IMAGE)
        return lf_buf_append_str(out, "{\"type\":\"input_image\",\"image_url\":") != 0 ||
                       (by_url ? lf_json_put_cstring(out, a->url) : lf_wire_put_data_uri(out, a)) != 0
                   ? -1
                   : lf_buf_append_str(out, ",\"detail\":\"auto\"}");
    if (by_url)
        return lf_buf_append_str(out, "{\"type\":\"input_file\",\"file_url\":") != 0 ||
                       lf_json_put_cstring(out, a->url) != 0
                   ? -1
                   : lf_buf_append_char(out, '}');
    return lf_buf_append_str(out, "{\"type\":\"input_file\",\"filename\":") != 0 ||
                   lf_json_put_cstring(out, a->filename ? a->filename : "document.pdf") != 0 ||
                   lf_buf_append_str(out, ",\"file_data\":") != 0 || lf_wire_put_data_uri(out, a) != 0
               ? -1
               : lf_buf_append_char(out, '}');
}

static int lf_responses_message(lf_buf *out, const lf_request_params *p, const lf_message *m, int *first)
{
    size_t k;

    switch (lf_wire_role(m->role)) {
    case LF_ROLE_ASSISTANT:
        return lf_responses_assistant(out, p, m, first);
    case LF_ROLE_TOOL:
        /* No is_error field: the output says it. */
        return lf_responses_next(out, first) != 0 ||
                       lf_buf_append_str(out, "{\"type\":\"function_call_output\",\"call_id\":") != 0 ||
                       lf_wire_put_call_id(out, m->tool_call_id) != 0 || lf_buf_append_str(out, ",\"output\":") != 0 ||
                       lf_json_put_string(out, lf_wire_content(m), m->content_len) != 0
                   ? -1
                   : lf_buf_append_char(out, '}');
    default:
        break;
    }
    if (!m->n_attachments) {
        if (lf_responses_next(out, first) != 0) return -1;
        return lf_wire_put_message(out, m->role, lf_wire_content(m), m->content_len, 1);
    }
    /* The text first, then the files. */
    if (lf_responses_next(out, first) != 0 ||
        lf_buf_append_str(out, "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":") != 0 ||
        lf_json_put_string(out, lf_wire_content(m), m->content_len) != 0 || lf_buf_append_char(out, '}') != 0)
        return -1;
    for (k = 0; k < m->n_attachments; k++)
        if (lf_buf_append_char(out, ',') != 0 || lf_responses_part(out, p, &m->attachments[k]) != 0) return -1;
    return lf_buf_append_str(out, "]}");
}

/* instructions: the caller's system text, then the JSON instruction in JSON
 * mode (json_object wants the word JSON in the input, as chat completions'
 * does). System messages of the transcript stay input items. */
static int lf_responses_instructions(lf_buf *out, const lf_request_params *p)
{
    int json = lf_wire_json_instruction(p), sys = p->system && p->system_len;
    lf_buf text;
    int rc;

    if (!json && !sys) return 0;
    lf_buf_init(&text);
    rc = (sys && lf_buf_append(&text, p->system, p->system_len) != 0) ||
                 (sys && json && lf_buf_append_str(&text, "\n\n") != 0) ||
                 (json && lf_buf_append_str(&text, LF_JSON_INSTRUCTION) != 0) ||
                 lf_buf_append_str(out, ",\"instructions\":") != 0 ||
                 lf_json_put_string(out, lf_buf_cstr(&text), text.len) != 0
             ? -1
             : 0;
    lf_buf_free(&text);
    return rc;
}

/* tools: {type: function, name, description, parameters, strict: false}
 * (flat; strict off, as a tool's schema need not meet strict mode's rules),
 * tool_choice (a named one: {type: function, name}), parallel_tool_calls.
 * Nothing without tools. */
static int lf_responses_tools(lf_buf *out, const lf_request_params *p)
{
    static const char *const choice[] = { NULL, "\"auto\"", "\"required\"", "\"none\"", NULL };
    size_t i;

    if (!p->n_tools) return 0;
    if (lf_buf_append_str(out, ",\"tools\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++)
        if ((i && lf_buf_append_char(out, ',') != 0) || lf_buf_append_str(out, "{\"type\":\"function\",") != 0 ||
            lf_wire_put_tool(out, &p->tools[i], "parameters") != 0 || lf_buf_append_str(out, ",\"strict\":false}") != 0)
            return -1;
    if (lf_buf_append_char(out, ']') != 0) return -1;
    if (p->tool_choice == LF_TOOL_CHOICE_TOOL) {
        if (lf_buf_append_str(out, ",\"tool_choice\":{\"type\":\"function\",\"name\":") != 0 ||
            lf_json_put_cstring(out, p->tool_choice_name) != 0 || lf_buf_append_char(out, '}') != 0)
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

/* text.format: a schema (strict), or json_object in JSON mode. */
static int lf_responses_format(lf_buf *out, const lf_request_params *p, const char *schema)
{
    if (schema)
        return lf_buf_append_str(out, ",\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":") != 0 ||
                       lf_json_put_cstring(out, p->schema_name ? p->schema_name : LF_SCHEMA_DEFAULT_NAME) != 0 ||
                       lf_buf_append_str(out, ",\"schema\":") != 0 || lf_buf_append_str(out, schema) != 0
                   ? -1
                   : lf_buf_append_str(out, ",\"strict\":true}}");
    if (p->json_mode) return lf_buf_append_str(out, ",\"text\":{\"format\":{\"type\":\"json_object\"}}");
    return 0;
}

int lf_wire_responses_build(const lf_request_params *p, const char *schema, lf_buf *out)
{
    size_t i;
    int first = 1;

    if (lf_buf_append_str(out, "{\"model\":") != 0 || lf_json_put_cstring(out, p->model) != 0 ||
        lf_buf_append_str(out, ",\"input\":[") != 0)
        return -1;
    for (i = 0; i < p->n_messages; i++)
        if (lf_responses_message(out, p, &p->messages[i], &first) != 0) return -1;
    if (lf_buf_append_char(out, ']') != 0 || lf_responses_instructions(out, p) != 0) return -1;
    if (p->has_temperature &&
        (lf_buf_append_str(out, ",\"temperature\":") != 0 || lf_json_put_double(out, p->temperature) != 0))
        return -1;
    if (p->max_tokens > 0 &&
        (lf_buf_append_str(out, ",\"max_output_tokens\":") != 0 || lf_json_put_long(out, p->max_tokens) != 0))
        return -1;
    if (lf_responses_format(out, p, schema) != 0 || lf_responses_tools(out, p) != 0) return -1;
    if (lf_buf_append_str(out, p->stream ? ",\"stream\":true,\"store\":false" : ",\"stream\":false,\"store\":false") != 0)
        return -1;
    if (p->encrypted_reasoning && lf_buf_append_str(out, ",\"include\":[\"reasoning.encrypted_content\"]") != 0)
        return -1;
    return lf_buf_append_char(out, '}');
}
