/* Where a request goes (lf_wire_url): the host's layout (Azure's prefixes
 * and query, Vertex AI's routes by publisher), then the protocol's path,
 * static or with the model in it (Gemini's, Bedrock's), escaped by the one
 * escaper (lf_wire_uri_escape). The one owner of every URL the core sends to,
 * and of what each layout serves. */
#include "lf_wire.h"

#include <string.h>

#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Google AI's API version; Vertex AI's (v1: GA, with thought signatures and
 * JSON Schema parameters; the recordings used v1beta1, the same bodies). */
#define LF_GEMINI_API "/v1beta"
#define LF_VERTEX_API "/v1"

/* ------------------------------------------- the protocols' paths */

const char *lf_wire_path(lf_api api)
{
    switch (api) {
    case LF_API_ANTHROPIC: return "/v1/messages";
    case LF_API_RESPONSES: return "/responses";
    case LF_API_BEDROCK:
    case LF_API_GEMINI: return NULL;   /* the model is in the path */
    default: return "/chat/completions";
    }
}

const char *lf_wire_path_for(lf_api api, lf_request_kind kind)
{
    if (!lf_wire_path(api)) return NULL;
    return kind == LF_REQUEST_EMBEDDINGS ? "/embeddings" : lf_wire_path(api);
}

int lf_wire_uri_escape(lf_buf *out, const char *s, size_t n, const char *keep)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int kept = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                   c == '.' || c == '_' || c == '~' || (c && strchr(keep, c));
        char esc[3] = { '%', hex[c >> 4], hex[c & 15] };

        if (kept ? lf_buf_append_char(out, (char)c) != 0 : lf_buf_append(out, esc, 3) != 0) return -1;
    }
    return 0;
}

/* What a host keeps unescaped in a path segment or query value beside RFC
 * 3986's unreserved bytes: a protocol's trait. Google's and Azure's hosts
 * keep '@' (Claude's versions on Vertex AI: claude-sonnet-4-5@20250929);
 * AWS's nothing, as its SDKs send a model id ('@' as %40), since SigV4
 * signs the path as sent. Everything else goes as %XX: ':' would end a model
 * where Google's method begins, '/' the segment, so a model name cannot
 * reach another path. */
static const char *lf_route_keeps(lf_api api)
{
    return api == LF_API_BEDROCK ? "" : "@";
}

/* s as one path segment or query value of the endpoint's host. */
static int lf_route_segment(const lf_endpoint *e, lf_buf *out, const char *s)
{
    return lf_wire_uri_escape(out, s, strlen(s), lf_route_keeps(e->api));
}

/* Google's method after the model: what the request asks for, streamed or
 * not (Claude's on Vertex AI). */
static const char *lf_route_method(const lf_endpoint *e)
{
    if (e->api == LF_API_ANTHROPIC) return e->stream ? ":streamRawPredict" : ":rawPredict";
    if (e->kind == LF_REQUEST_EMBEDDINGS) return ":batchEmbedContents";
    return e->stream ? ":streamGenerateContent?alt=sse" : ":generateContent";
}

/* The protocol's own path, after the layout's prefix: static, or with the
 * model in it. A protocol that puts the model in its path adds its case
 * here, with its own escaping if the host wants another. */
static int lf_route_protocol_path(const lf_endpoint *e, lf_buf *out)
{
    const char *model = e->model;

    switch (e->api) {
    case LF_API_GEMINI:
        /* Google lists its models as "models/M": the prefix is the path's own. */
        if (strncmp(model, "models/", 7) == 0) model += 7;
        return lf_buf_append_str(out, LF_GEMINI_API "/models/") != 0 || lf_route_segment(e, out, model) != 0
                   ? -1
                   : lf_buf_append_str(out, lf_route_method(e));
    case LF_API_BEDROCK:
        /* A model id, an inference profile or an ARN: one segment (an ARN's
         * ':' as %3A, its '/' as %2F). */
        return lf_buf_append_str(out, "/model/") != 0 || lf_route_segment(e, out, model) != 0
                   ? -1
                   : lf_buf_append_str(out, e->stream ? "/converse-stream" : "/converse");
    default:
        return lf_buf_append_str(out, lf_wire_path_for(e->api, e->kind));
    }
}

/* ------------------------------------------- the hosts' layouts */

/* A layout's name in messages. */
static const char *lf_route_name(lf_layout layout)
{
    switch (layout) {
    case LF_LAYOUT_AZURE: return "Azure OpenAI v1";
    case LF_LAYOUT_AZURE_DEPLOYMENT: return "an Azure deployment";
    case LF_LAYOUT_AZURE_FOUNDRY: return "Azure AI Foundry";
    case LF_LAYOUT_VERTEX: return "Vertex AI";
    default: return "the protocol's own host";
    }
}

/* A location is a host name's label: [a-z0-9-]. */
static int lf_route_location_ok(const char *loc)
{
    if (!loc || !*loc) return 0;
    for (; *loc; loc++)
        if (!((*loc >= 'a' && *loc <= 'z') || (*loc >= '0' && *loc <= '9') || *loc == '-')) return 0;
    return 1;
}

lf_api lf_wire_vertex_api(const char *model)
{
    return model && strncmp(model, "claude", 6) == 0 ? LF_API_ANTHROPIC : LF_API_GEMINI;
}

int lf_wire_vertex_base_url(const char *location, lf_buf *out)
{
    lf_buf_clear(out);
    if (!lf_route_location_ok(location)) return -1;
    if (strcmp(location, "global") == 0) return lf_buf_append_str(out, "https://aiplatform.googleapis.com");
    return lf_buf_append_str(out, "https://") != 0 || lf_buf_append_str(out, location) != 0
               ? -1
               : lf_buf_append_str(out, "-aiplatform.googleapis.com");
}

int lf_wire_layout_serves(lf_layout layout, lf_api api, lf_request_kind kind, lf_buf *errmsg)
{
    switch (layout) {
    case LF_LAYOUT_PLAIN:
        return 0;
    case LF_LAYOUT_AZURE:
    case LF_LAYOUT_AZURE_DEPLOYMENT:
    case LF_LAYOUT_AZURE_FOUNDRY:
        /* OpenAI's protocols; the deployment and Foundry layouts chat
         * completions and embeddings only. */
        if (api == LF_API_OPENAI || (api == LF_API_RESPONSES && layout == LF_LAYOUT_AZURE)) return 0;
        if (api == LF_API_RESPONSES)
            lf_wire_fail(errmsg, "%s does not serve the Responses API (use /openai/v1)", lf_route_name(layout));
        else
            lf_wire_fail(errmsg, "%s does not serve %s", lf_route_name(layout), lf_wire_api_title(api, kind));
        return -1;
    case LF_LAYOUT_VERTEX:
        if (api != LF_API_GEMINI && api != LF_API_ANTHROPIC) {
            lf_wire_fail(errmsg, "Vertex AI is spoken here for Gemini and Claude models only");
            return -1;
        }
        if (kind == LF_REQUEST_EMBEDDINGS) {
            lf_wire_fail(errmsg, "embeddings on Vertex AI are not spoken here (Google AI's batchEmbedContents is)");
            return -1;
        }
        return 0;
    }
    lf_wire_fail(errmsg, "unknown layout %d", (int)layout);
    return -1;
}

int lf_wire_layout_named(const char *name, size_t len, lf_layout *layout)
{
    static const struct {
        const char *name;
        lf_layout layout;
    } names[] = { { "plain", LF_LAYOUT_PLAIN },
                  { "azure", LF_LAYOUT_AZURE },
                  { "azure_deployment", LF_LAYOUT_AZURE_DEPLOYMENT },
                  { "azure_foundry", LF_LAYOUT_AZURE_FOUNDRY },
                  { "vertex", LF_LAYOUT_VERTEX } };
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == len && memcmp(names[i].name, name, len) == 0) {
            *layout = names[i].layout;
            return 0;
        }
    }
    return -1;
}

/* What the layout's route needs beside base_url and model. */
static int lf_route_complete(const lf_endpoint *e, lf_buf *errmsg)
{
    if ((e->layout == LF_LAYOUT_AZURE_DEPLOYMENT || e->layout == LF_LAYOUT_AZURE_FOUNDRY) &&
        !(e->api_version && e->api_version[0])) {
        lf_wire_fail(errmsg, "%s needs an api_version", lf_route_name(e->layout));
        return -1;
    }
    if (e->layout == LF_LAYOUT_VERTEX &&
        !(e->vertex.project && e->vertex.project[0] && lf_route_location_ok(e->vertex.location))) {
        lf_wire_fail(errmsg, "a Vertex AI route needs a project and a location of a-z, 0-9 and -");
        return -1;
    }
    /* Where the path holds the model, it cannot be empty. */
    if (!e->model[0] &&
        (e->layout == LF_LAYOUT_AZURE_DEPLOYMENT || e->layout == LF_LAYOUT_VERTEX || !lf_wire_path(e->api))) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    return 0;
}

/* Vertex AI's route: the publisher's model and Google's method. */
static int lf_route_vertex(const lf_endpoint *e, lf_buf *out)
{
    return lf_buf_append_str(out, LF_VERTEX_API "/projects/") != 0 || lf_route_segment(e, out, e->vertex.project) != 0 ||
                   lf_buf_append_str(out, "/locations/") != 0 || lf_buf_append_str(out, e->vertex.location) != 0 ||
                   lf_buf_append_str(out, e->api == LF_API_ANTHROPIC ? "/publishers/anthropic/models/"
                                                                     : "/publishers/google/models/") != 0 ||
                   lf_route_segment(e, out, e->model) != 0
               ? -1
               : lf_buf_append_str(out, lf_route_method(e));
}

/* Azure's api-version, the query of its deployment and Foundry layouts. */
static int lf_route_api_version(const lf_endpoint *e, lf_buf *out)
{
    return lf_buf_append_str(out, "?api-version=") != 0 ? -1 : lf_route_segment(e, out, e->api_version);
}

static int lf_route_write(const lf_endpoint *e, lf_buf *out)
{
    if (lf_buf_append_str(out, e->base_url) != 0) return -1;
    switch (e->layout) {
    case LF_LAYOUT_AZURE:
        return lf_buf_append_str(out, "/openai/v1") != 0 ? -1 : lf_route_protocol_path(e, out);
    case LF_LAYOUT_AZURE_DEPLOYMENT:
        return lf_buf_append_str(out, "/openai/deployments/") != 0 || lf_route_segment(e, out, e->model) != 0 ||
                       lf_route_protocol_path(e, out) != 0
                   ? -1
                   : lf_route_api_version(e, out);
    case LF_LAYOUT_AZURE_FOUNDRY:
        return lf_route_protocol_path(e, out) != 0 ? -1 : lf_route_api_version(e, out);
    case LF_LAYOUT_VERTEX:
        return lf_route_vertex(e, out);
    default:
        return lf_route_protocol_path(e, out);
    }
}

int lf_wire_url(const lf_endpoint *e, lf_buf *out, lf_buf *errmsg)
{
    lf_buf_clear(out);
    if (errmsg) lf_buf_clear(errmsg);
    if (!e || !e->base_url || !e->model) {
        lf_wire_fail(errmsg, "an endpoint needs base_url and model");
        return -1;
    }
    if (lf_wire_layout_serves(e->layout, e->api, e->kind, errmsg) != 0 || lf_route_complete(e, errmsg) != 0)
        return -1;
    if (lf_route_write(e, out) != 0) {
        lf_buf_clear(out);
        lf_wire_fail(errmsg, "out of memory building the URL");
        return -1;
    }
    return 0;
}
