/* Request bodies of Gemini generateContent (Google AI and Vertex AI alike),
 * and of its batchEmbedContents. */
#include "lf_wire_gemini.h"

#include <string.h>

#include "lf_json_write.h"
#include "lf_wire_shared.h"

#include "lf_banned.h"

/* ------------------------------------------- reasoning state */

/* Where the current turn starts: after the last user message that is not a
 * tool result. Gemini 3 checks the signatures of that turn's calls only. */
static size_t lf_gemini_turn_start(const lf_request_params *p)
{
    size_t i = p->n_messages;

    while (i--)
        if (lf_wire_role(p->messages[i].role) == LF_ROLE_USER) return i + 1;
    return 0;
}

static int lf_gemini_signature(lf_buf *out, const char *sig, size_t len)
{
    if (!sig || !len) return 0;
    return lf_buf_append_str(out, ",\"thoughtSignature\":") != 0 || lf_json_put_string(out, sig, len) != 0 ? -1 : 0;
}

/* ------------------------------------------- contents */

static int lf_gemini_open(lf_buf *out, const char *role, int first)
{
    if (!first && lf_buf_append_char(out, ',') != 0) return -1;
    return lf_buf_append_str(out, "{\"role\":\"") != 0 || lf_buf_append_str(out, role) != 0
               ? -1
               : lf_buf_append_str(out, "\",\"parts\":[");
}

/* A model message: its text (with its signature, the message's reasoning
 * state, when this origin made it: lf_wire_reasoning_goes), then
 * a functionCall part per call. The first call of a step in the current turn
 * must carry a signature on Gemini 3: its own, or, made elsewhere, the
 * sentinel that says so. Call ids are not sent: Gemini pairs a call and its
 * result by order and name (its 2.5 models give no ids). */
static int lf_gemini_model(lf_buf *out, const lf_request_params *p, const lf_message *m, int in_turn, int first)
{
    int own = lf_wire_reasoning_goes(p, m), rc;
    size_t k;

    if (lf_gemini_open(out, "model", first) != 0) return -1;
    if (m->content_len &&
        (lf_buf_append_str(out, "{\"text\":") != 0 || lf_json_put_string(out, m->content, m->content_len) != 0 ||
         (own && lf_gemini_signature(out, m->reasoning, m->reasoning_len) != 0) || lf_buf_append_char(out, '}') != 0))
        return -1;
    for (k = 0; k < m->n_tool_calls; k++) {
        const lf_tool_call *c = &m->tool_calls[k];

        if (((k || m->content_len) && lf_buf_append_char(out, ',') != 0) ||
            lf_buf_append_str(out, "{\"functionCall\":{\"name\":") != 0 || lf_json_put_cstring(out, c->name) != 0 ||
            lf_buf_append_str(out, ",\"args\":") != 0)
            return -1;
        rc = lf_wire_put_object(out, c->arguments, c->arguments_len);
        if (rc < 0 || (rc > 0 && lf_buf_append_str(out, "{}") != 0) || lf_buf_append_char(out, '}') != 0) return -1;
        if (own && c->signature_len) rc = lf_gemini_signature(out, c->signature, c->signature_len);
        else if (k == 0 && in_turn) rc = lf_buf_append_str(out, ",\"thoughtSignature\":\"" LF_GEMINI_FOREIGN_SIGNATURE "\"");
        else rc = 0;
        if (rc != 0 || lf_buf_append_char(out, '}') != 0) return -1;
    }
    return lf_buf_append_str(out, "]}");
}

/* The n results of the calls of one model message, as functionResponse
 * parts of one user message, in the order of the calls they answer (the
 * transcript keeps them right after the calls, in any order): output, or error
 * when the tool failed. */
static int lf_gemini_results(lf_buf *out, const lf_message *calls, const lf_message *results, size_t n, int first)
{
    size_t k, j;
    int part = 0;

    if (lf_gemini_open(out, "user", first) != 0) return -1;
    for (k = 0; k < calls->n_tool_calls; k++) {
        const lf_tool_call *c = &calls->tool_calls[k];

        for (j = 0; j < n; j++) {
            const lf_message *r = &results[j];

            if (strcmp(r->tool_call_id, c->id) != 0) continue;
            if ((part++ && lf_buf_append_char(out, ',') != 0) ||
                lf_buf_append_str(out, "{\"functionResponse\":{\"name\":") != 0 ||
                lf_json_put_cstring(out, c->name) != 0 ||
                lf_buf_append_str(out, r->is_error ? ",\"response\":{\"error\":" : ",\"response\":{\"output\":") != 0 ||
                lf_json_put_string(out, lf_wire_content(r), r->content_len) != 0 || lf_buf_append_str(out, "}}}") != 0)
                return -1;
            break;
        }
    }
    return lf_buf_append_str(out, "]}");
}

/* A user message: its files first (Google's advice: the image before the
 * question), as inlineData (lf_wire_check_attachments made sure each has its
 * bytes: Gemini takes no URL), then its text. */
static int lf_gemini_user(lf_buf *out, const lf_message *m, int first)
{
    size_t k;

    if (lf_gemini_open(out, "user", first) != 0) return -1;
    for (k = 0; k < m->n_attachments; k++) {
        const lf_attachment *a = &m->attachments[k];

        if ((k && lf_buf_append_char(out, ',') != 0) ||
            lf_buf_append_str(out, "{\"inlineData\":{\"mimeType\":\"") != 0 ||
            lf_buf_append_str(out, a->mime_type) != 0 || lf_buf_append_str(out, "\",\"data\":\"") != 0 ||
            lf_buf_append(out, a->base64, a->base64_len) != 0 || lf_buf_append_str(out, "\"}}") != 0)
            return -1;
    }
    if ((m->content_len || !m->n_attachments) &&
        ((m->n_attachments && lf_buf_append_char(out, ',') != 0) || lf_buf_append_str(out, "{\"text\":") != 0 ||
         lf_json_put_string(out, lf_wire_content(m), m->content_len) != 0 || lf_buf_append_char(out, '}') != 0))
        return -1;
    return lf_buf_append_str(out, "]}");
}

static int lf_gemini_contents(lf_buf *out, const lf_request_params *p)
{
    size_t i, j, turn = lf_gemini_turn_start(p);
    int first = 1;

    if (lf_buf_append_str(out, "{\"contents\":[") != 0) return -1;
    for (i = 0; i < p->n_messages; i = j) {
        const lf_message *m = &p->messages[i];
        lf_role role = lf_wire_role(m->role);
        int rc = 0;

        j = i + 1;
        if (role == LF_ROLE_TOOL) {
            /* A run of results answers the calls of the message before it. */
            while (j < p->n_messages && lf_wire_role(p->messages[j].role) == LF_ROLE_TOOL) j++;
            if (i == 0) continue;   /* none: lf_wire_check_transcript refused it */
            rc = lf_gemini_results(out, &p->messages[i - 1], m, j - i, first);
        } else if (role == LF_ROLE_ASSISTANT) {
            /* An empty answer says nothing, and Gemini refuses an empty part. */
            if (!m->content_len && !m->n_tool_calls) continue;
            rc = lf_gemini_model(out, p, m, i >= turn, first);
        } else if (role == LF_ROLE_USER) {
            rc = lf_gemini_user(out, m, first);
        } else {
            continue;   /* system and developer: the systemInstruction */
        }
        if (rc != 0) return -1;
        first = 0;
    }
    return lf_buf_append_char(out, ']');
}

/* ------------------------------------------- the rest of the body */

/* tools: one Tool of functionDeclarations, each with its JSON Schema as
 * parametersJsonSchema (Gemini's own Schema is an OpenAPI subset that refuses
 * additionalProperties and the like); toolConfig for a choice. */
static int lf_gemini_tools(lf_buf *out, const lf_request_params *p)
{
    static const char *const mode[] = { NULL, "AUTO", "ANY", "NONE", "ANY" };
    size_t i;

    if (!p->n_tools) return 0;
    if (lf_buf_append_str(out, ",\"tools\":[{\"functionDeclarations\":[") != 0) return -1;
    for (i = 0; i < p->n_tools; i++) {
        if ((i && lf_buf_append_char(out, ',') != 0) || lf_buf_append_char(out, '{') != 0 ||
            lf_wire_put_tool(out, &p->tools[i], "parametersJsonSchema") != 0 || lf_buf_append_char(out, '}') != 0)
            return -1;
    }
    if (lf_buf_append_str(out, "]}]") != 0) return -1;
    if (!mode[p->tool_choice]) return 0;
    if (lf_buf_append_str(out, ",\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"") != 0 ||
        lf_buf_append_str(out, mode[p->tool_choice]) != 0 || lf_buf_append_char(out, '"') != 0)
        return -1;
    if (p->tool_choice == LF_TOOL_CHOICE_TOOL &&
        (lf_buf_append_str(out, ",\"allowedFunctionNames\":[") != 0 ||
         lf_json_put_cstring(out, p->tool_choice_name) != 0 || lf_buf_append_char(out, ']') != 0))
        return -1;
    return lf_buf_append_str(out, "}}");
}

/* generationConfig, when there is something to put in it. JSON mode's
 * response type goes only without tools: Gemini 2.5 refuses function calling
 * with it (the instruction and the answer's check still hold). */
static int lf_gemini_config(lf_buf *out, const lf_request_params *p, const char *schema)
{
    int json = schema || (p->json_mode && !p->n_tools);
    const char *sep = "";

    if (!p->has_temperature && p->max_tokens <= 0 && !json) return 0;
    if (lf_buf_append_str(out, ",\"generationConfig\":{") != 0) return -1;
    if (p->has_temperature) {
        if (lf_buf_append_str(out, "\"temperature\":") != 0 || lf_json_put_double(out, p->temperature) != 0) return -1;
        sep = ",";
    }
    if (p->max_tokens > 0) {
        if (lf_buf_append_str(out, sep) != 0 || lf_buf_append_str(out, "\"maxOutputTokens\":") != 0 ||
            lf_json_put_long(out, p->max_tokens) != 0)
            return -1;
        sep = ",";
    }
    if (json && (lf_buf_append_str(out, sep) != 0 ||
                 lf_buf_append_str(out, "\"responseMimeType\":\"application/json\"") != 0))
        return -1;
    if (schema && (lf_buf_append_str(out, ",\"responseJsonSchema\":") != 0 || lf_buf_append_str(out, schema) != 0))
        return -1;
    return lf_buf_append_char(out, '}');
}

int lf_wire_gemini_build(const lf_request_params *p, const char *schema, lf_buf *out)
{
    lf_buf system;
    int rc = -1;

    lf_buf_init(&system);
    if (lf_wire_system_text(p, &system) != 0 || lf_gemini_contents(out, p) != 0) goto done;
    if (system.len &&
        (lf_buf_append_str(out, ",\"systemInstruction\":{\"parts\":[{\"text\":") != 0 ||
         lf_json_put_string(out, system.ptr, system.len) != 0 || lf_buf_append_str(out, "}]}") != 0))
        goto done;
    if (lf_gemini_tools(out, p) != 0 || lf_gemini_config(out, p, schema) != 0 || lf_buf_append_char(out, '}') != 0)
        goto done;
    rc = 0;
done:
    lf_buf_free(&system);
    return rc;
}

/* ------------------------------------------- batchEmbedContents */

int lf_wire_gemini_build_embeddings(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    const char *model = p->model;
    lf_buf name;
    size_t i, size = 64;
    int rc = -1;

    if (!model || !model[0]) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    if (p->n_inputs < 1 || p->n_inputs > LF_GEMINI_EMBED_MAX_INPUTS || !p->inputs) {
        lf_wire_fail(errmsg, "Gemini embeddings need 1 to %d texts, got %zu", LF_GEMINI_EMBED_MAX_INPUTS, p->n_inputs);
        return -1;
    }
    for (i = 0; i < p->n_inputs; i++) {
        if (!p->inputs[i].ptr || !p->inputs[i].len) {
            lf_wire_fail(errmsg, "text %zu to embed is empty", i);
            return -1;
        }
        size += p->inputs[i].len + strlen(model) + 64;
    }
    /* Each request names the model as a resource: "models/M". */
    if (strncmp(model, "models/", 7) == 0) model += 7;
    lf_buf_init(&name);
    if (lf_buf_append_str(&name, "models/") != 0 || lf_buf_append_str(&name, model) != 0 ||
        lf_buf_reserve(out, size) != 0 || lf_buf_append_str(out, "{\"requests\":[") != 0)
        goto done;
    for (i = 0; i < p->n_inputs; i++) {
        if ((i && lf_buf_append_char(out, ',') != 0) || lf_buf_append_str(out, "{\"model\":") != 0 ||
            lf_json_put_string(out, name.ptr, name.len) != 0 ||
            lf_buf_append_str(out, ",\"content\":{\"parts\":[{\"text\":") != 0 ||
            lf_json_put_string(out, p->inputs[i].ptr, p->inputs[i].len) != 0 || lf_buf_append_str(out, "}]}}") != 0)
            goto done;
    }
    rc = lf_buf_append_str(out, "]}");
done:
    lf_buf_free(&name);
    if (rc != 0) {
        lf_buf_clear(out);
        lf_wire_fail(errmsg, "out of memory building the request");
    }
    return rc;
}
