/* Request bodies of Bedrock Converse (the path is lf_wire_url's).
 *
 * Converse refuses an empty or blank text block, a message without blocks and
 * two messages of one role in a row: blank texts are left out, and the blocks
 * of consecutive messages of one role (tool results, then the user's next
 * words) go into one message. */
#include "lf_wire_bedrock.h"

#include <string.h>

#include "lf_json_read.h"
#include "lf_json_write.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

static int lf_bedrock_blank(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!lf_wire_is_ws(s[i])) return 0;
    return 1;
}

/* The messages array as it is written: the role of the message still open
 * (NULL before the first), which the next block joins or closes. */
typedef struct lf_bedrock_turns {
    lf_buf *out;
    const char *role;
} lf_bedrock_turns;

/* Starts a block of a message of role: after a comma in the open message, or
 * in a new message. */
static int lf_bedrock_block(lf_bedrock_turns *t, const char *role)
{
    if (t->role && strcmp(t->role, role) == 0) return lf_buf_append_char(t->out, ',');
    if (t->role && lf_buf_append_str(t->out, "]},") != 0) return -1;
    t->role = role;
    return lf_buf_append_str(t->out, "{\"role\":\"") != 0 || lf_buf_append_str(t->out, role) != 0
               ? -1
               : lf_buf_append_str(t->out, "\",\"content\":[");
}

/* A text block, left out when blank. */
static int lf_bedrock_text(lf_bedrock_turns *t, const char *role, const char *s, size_t n)
{
    if (lf_bedrock_blank(s, n)) return 0;
    return lf_bedrock_block(t, role) != 0 || lf_buf_append_str(t->out, "{\"text\":") != 0 ||
                   lf_json_put_string(t->out, s, n) != 0
               ? -1
               : lf_buf_append_char(t->out, '}');
}

/* A document's name as Converse takes it: letters, digits, single spaces,
 * hyphens, parentheses and square brackets, at most 200. The file's name
 * without its extension, every other byte a space; "document" when nothing
 * is left. */
static int lf_bedrock_document_name(lf_buf *out, const char *filename)
{
    const char *dot = filename ? strrchr(filename, '.') : NULL;
    size_t n = filename ? (dot && dot != filename ? (size_t)(dot - filename) : strlen(filename)) : 0;
    char name[200];
    size_t i, k = 0;

    for (i = 0; i < n && k < sizeof name; i++) {
        char c = filename[i];
        int kept = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                   c == '(' || c == ')' || c == '[' || c == ']';

        if (kept) name[k++] = c;
        else if (k && name[k - 1] != ' ') name[k++] = ' ';
    }
    while (k && name[k - 1] == ' ') k--;
    if (!k) return lf_json_put_cstring(out, "document");
    return lf_json_put_string(out, name, k);
}

/* An image or PDF block: Converse takes the bytes (or an S3 location, which
 * the gem does not send), never a URL (lf_attach_url_taken). */
static int lf_bedrock_attachment(lf_bedrock_turns *t, const lf_attachment *a)
{
    const char *format = strchr(a->mime_type, '/') + 1; /* png, jpeg, gif, webp, pdf */
    lf_buf *out = t->out;

    if (lf_bedrock_block(t, "user") != 0) return -1;
    if (lf_wire_attachment_kind(a->mime_type) == LF_ATTACH_IMAGE) {
        if (lf_buf_append_str(out, "{\"image\":{\"format\":") != 0 || lf_json_put_cstring(out, format) != 0) return -1;
    } else if (lf_buf_append_str(out, "{\"document\":{\"format\":") != 0 || lf_json_put_cstring(out, format) != 0 ||
               lf_buf_append_str(out, ",\"name\":") != 0 || lf_bedrock_document_name(out, a->filename) != 0) {
        return -1;
    }
    return lf_buf_append_str(out, ",\"source\":{\"bytes\":\"") != 0 || lf_buf_append(out, a->base64, a->base64_len) != 0
               ? -1
               : lf_buf_append_str(out, "\"}}}");
}

/* A tool call: its input is the arguments' object, or {} for arguments that
 * are not one (the model's own mistake, which the result explains). */
static int lf_bedrock_call(lf_bedrock_turns *t, const lf_tool_call *c)
{
    lf_buf *out = t->out;
    int rc;

    if (lf_bedrock_block(t, "assistant") != 0 || lf_buf_append_str(out, "{\"toolUse\":{\"toolUseId\":") != 0 ||
        lf_wire_put_call_id(out, c->id) != 0 || lf_buf_append_str(out, ",\"name\":") != 0 ||
        lf_json_put_cstring(out, c->name) != 0 || lf_buf_append_str(out, ",\"input\":") != 0)
        return -1;
    rc = lf_wire_put_object(out, c->arguments, c->arguments_len);
    if (rc < 0 || (rc > 0 && lf_buf_append_str(out, "{}") != 0)) return -1;
    return lf_buf_append_str(out, "}}");
}

/* A tool's result, in the user message after the call. Its status field is
 * taken by Nova and Claude only, and refused by other models: an error is
 * said by the content, as on OpenAI. An empty result is a blank text block,
 * which Converse refuses: it says it was empty. */
static int lf_bedrock_result(lf_bedrock_turns *t, const lf_message *m)
{
    lf_buf *out = t->out;
    int empty = lf_bedrock_blank(lf_wire_content(m), m->content_len);

    if (lf_bedrock_block(t, "user") != 0 || lf_buf_append_str(out, "{\"toolResult\":{\"toolUseId\":") != 0 ||
        lf_wire_put_call_id(out, m->tool_call_id) != 0 || lf_buf_append_str(out, ",\"content\":[{\"text\":") != 0)
        return -1;
    if ((empty ? lf_json_put_cstring(out, "(no output)") : lf_json_put_string(out, m->content, m->content_len)) != 0)
        return -1;
    return lf_buf_append_str(out, "}]}}");
}

static int lf_bedrock_messages(lf_buf *out, const lf_request_params *p)
{
    lf_bedrock_turns t = { out, NULL };
    size_t i, k;

    if (lf_buf_append_str(out, "{\"messages\":[") != 0) return -1;
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role = lf_wire_role(m->role);

        if (role == LF_ROLE_TOOL) {
            if (lf_bedrock_result(&t, m) != 0) return -1;
        } else if (role == LF_ROLE_USER) {
            /* The files first, as on Anthropic, then the words. */
            for (k = 0; k < m->n_attachments; k++)
                if (lf_bedrock_attachment(&t, &m->attachments[k]) != 0) return -1;
            if (lf_bedrock_text(&t, "user", lf_wire_content(m), m->content_len) != 0) return -1;
        } else if (role == LF_ROLE_ASSISTANT) {
            if (lf_bedrock_text(&t, "assistant", lf_wire_content(m), m->content_len) != 0) return -1;
            for (k = 0; k < m->n_tool_calls; k++)
                if (lf_bedrock_call(&t, &m->tool_calls[k]) != 0) return -1;
        }
    }
    return lf_buf_append_str(out, t.role ? "]}]" : "]");
}

/* One text block of the system array (opened by the first), left out when blank. */
static int lf_bedrock_system_block(lf_buf *out, int *first, const char *s, size_t n)
{
    if (lf_bedrock_blank(s, n)) return 0;
    if (lf_buf_append_str(out, *first ? ",\"system\":[{\"text\":" : ",{\"text\":") != 0 ||
        lf_json_put_string(out, s, n) != 0)
        return -1;
    *first = 0;
    return lf_buf_append_char(out, '}');
}

/* The instructions: the caller's, each system or developer message, then the
 * JSON instruction (Converse has no JSON mode), one text block each. */
static int lf_bedrock_system(lf_buf *out, const lf_request_params *p)
{
    int first = 1;
    size_t i;

    if (p->system && lf_bedrock_system_block(out, &first, p->system, p->system_len) != 0) return -1;
    for (i = 0; i < p->n_messages; i++) {
        const lf_message *m = &p->messages[i];
        lf_role role = lf_wire_role(m->role);

        if ((role == LF_ROLE_SYSTEM || role == LF_ROLE_DEVELOPER) &&
            lf_bedrock_system_block(out, &first, lf_wire_content(m), m->content_len) != 0)
            return -1;
    }
    if (lf_wire_json_instruction(p) &&
        lf_bedrock_system_block(out, &first, LF_JSON_INSTRUCTION, strlen(LF_JSON_INSTRUCTION)) != 0)
        return -1;
    return first ? 0 : lf_buf_append_char(out, ']');
}

/* inferenceConfig, sent even when empty, as AWS's SDKs do. */
static int lf_bedrock_inference(lf_buf *out, const lf_request_params *p)
{
    const char *sep = "";

    if (lf_buf_append_str(out, ",\"inferenceConfig\":{") != 0) return -1;
    if (p->max_tokens > 0) {
        if (lf_buf_append_str(out, "\"maxTokens\":") != 0 || lf_json_put_long(out, p->max_tokens) != 0) return -1;
        sep = ",";
    }
    if (p->has_temperature && (lf_buf_append_str(out, sep) != 0 || lf_buf_append_str(out, "\"temperature\":") != 0 ||
                               lf_json_put_double(out, p->temperature) != 0))
        return -1;
    return lf_buf_append_char(out, '}');
}

/* Whether the messages hold tool calls or results: Converse then wants the
 * tools (lf_wire.c refuses such a request without them). */
static int lf_bedrock_tool_turns(const lf_request_params *p)
{
    size_t i;

    for (i = 0; i < p->n_messages; i++)
        if (p->messages[i].n_tool_calls || lf_wire_role(p->messages[i].role) == LF_ROLE_TOOL) return 1;
    return 0;
}

static int lf_bedrock_tool_spec(lf_buf *out, const char *name, const char *description)
{
    if (lf_buf_append_str(out, "{\"toolSpec\":{\"name\":") != 0 || lf_json_put_cstring(out, name) != 0) return -1;
    if (description && description[0] &&
        (lf_buf_append_str(out, ",\"description\":") != 0 || lf_json_put_cstring(out, description) != 0))
        return -1;
    return lf_buf_append_str(out, ",\"inputSchema\":{\"json\":");
}

/* toolConfig: the tools and the choice (auto, any, tool). Converse has no
 * "none": without tool turns the tools are not sent; with them they must be,
 * and the model may still call one. Parallel calls have no switch there. A
 * schema is a forced call of a tool whose input schema it is. */
static int lf_bedrock_tools(lf_buf *out, const lf_request_params *p, const char *schema)
{
    size_t i;

    if (schema) {
        const char *name = p->schema_name ? p->schema_name : LF_SCHEMA_DEFAULT_NAME;

        return lf_buf_append_str(out, ",\"toolConfig\":{\"tools\":[") != 0 ||
                       lf_bedrock_tool_spec(out, name, "Give your answer as this tool's input.") != 0 ||
                       lf_buf_append_str(out, schema) != 0 ||
                       lf_buf_append_str(out, "}}}],\"toolChoice\":{\"tool\":{\"name\":") != 0 ||
                       lf_json_put_cstring(out, name) != 0
                   ? -1
                   : lf_buf_append_str(out, "}}}");
    }
    if (!p->n_tools || (p->tool_choice == LF_TOOL_CHOICE_NONE && !lf_bedrock_tool_turns(p))) return 0;
    if (lf_buf_append_str(out, ",\"toolConfig\":{\"tools\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++) {
        const lf_tool *t = &p->tools[i];

        if ((i && lf_buf_append_char(out, ',') != 0) || lf_bedrock_tool_spec(out, t->name, t->description) != 0 ||
            lf_wire_put_parameters(out, t) != 0 || lf_buf_append_str(out, "}}}") != 0)
            return -1;
    }
    if (lf_buf_append_char(out, ']') != 0) return -1;
    switch (p->tool_choice) {
    case LF_TOOL_CHOICE_AUTO:
        if (lf_buf_append_str(out, ",\"toolChoice\":{\"auto\":{}}") != 0) return -1;
        break;
    case LF_TOOL_CHOICE_REQUIRED:
        if (lf_buf_append_str(out, ",\"toolChoice\":{\"any\":{}}") != 0) return -1;
        break;
    case LF_TOOL_CHOICE_TOOL:
        if (lf_buf_append_str(out, ",\"toolChoice\":{\"tool\":{\"name\":") != 0 ||
            lf_json_put_cstring(out, p->tool_choice_name) != 0 || lf_buf_append_str(out, "}}") != 0)
            return -1;
        break;
    default:
        break;
    }
    return lf_buf_append_char(out, '}');
}

int lf_wire_bedrock_build(const lf_request_params *p, const char *schema, lf_buf *out)
{
    if (lf_bedrock_messages(out, p) != 0 || lf_bedrock_system(out, p) != 0 || lf_bedrock_inference(out, p) != 0 ||
        lf_bedrock_tools(out, p, schema) != 0)
        return -1;
    return lf_buf_append_char(out, '}');
}
