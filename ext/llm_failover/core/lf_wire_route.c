/* Where a request goes: its path, with the model in it where the protocol puts
 * it (Gemini), and Vertex AI's routes by publisher, its hosts by location. The
 * static paths of the other protocols are lf_wire.c's (lf_wire_path_for). */
#include "lf_wire.h"

#include <string.h>

#include "lf_wire_shared.h"

#include "lf_banned.h"

/* Google AI's API version; Vertex AI's (v1: GA, with thought signatures and
 * JSON Schema parameters; the recordings used v1beta1, the same bodies). */
#define LF_GEMINI_API "/v1beta"
#define LF_VERTEX_API "/v1"

/* One path segment: every byte but A-Z a-z 0-9 - . _ ~ @ as %XX (':' would
 * end the model where the method begins, '/' the segment; '@' stays, as in
 * Claude's versions on Vertex: claude-sonnet-4-5@20250929). */
static int lf_route_segment(lf_buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[3] = { '%', hex[c >> 4], hex[c & 15] };

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
            c == '_' || c == '~' || c == '@') {
            if (lf_buf_append_char(out, (char)c) != 0) return -1;
        } else if (lf_buf_append(out, esc, 3) != 0) {
            return -1;
        }
    }
    return 0;
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

/* The method after the model: what the request asks for, streamed or not. */
static const char *lf_route_method(const lf_request_params *p)
{
    if (p->api == LF_API_ANTHROPIC) return p->stream ? ":streamRawPredict" : ":rawPredict";
    if (p->kind == LF_REQUEST_EMBEDDINGS) return ":batchEmbedContents";
    return p->stream ? ":streamGenerateContent?alt=sse" : ":generateContent";
}

int lf_wire_path_write(const lf_request_params *p, lf_buf *out, lf_buf *errmsg)
{
    const char *model = p->model, *path;
    int rc;

    lf_buf_clear(out);
    if (!p->vertex.project && (path = lf_wire_path_for(p->api, p->kind)) != NULL) {
        if (lf_buf_append_str(out, path) == 0) return 0;
        lf_wire_fail(errmsg, "out of memory");
        return -1;
    }
    if (!model || !model[0]) {
        lf_wire_fail(errmsg, "model is missing");
        return -1;
    }
    if (p->vertex.project) {
        if (p->api != LF_API_GEMINI && p->api != LF_API_ANTHROPIC) {
            lf_wire_fail(errmsg, "Vertex AI is spoken here for Gemini and Claude models only");
            return -1;
        }
        if (p->kind == LF_REQUEST_EMBEDDINGS) {
            lf_wire_fail(errmsg, "embeddings on Vertex AI are not spoken here (Google AI's batchEmbedContents is)");
            return -1;
        }
        if (!p->vertex.project[0] || !lf_route_location_ok(p->vertex.location)) {
            lf_wire_fail(errmsg, "a Vertex AI route needs a project and a location of a-z, 0-9 and -");
            return -1;
        }
        rc = lf_buf_append_str(out, LF_VERTEX_API "/projects/") != 0 || lf_route_segment(out, p->vertex.project) != 0 ||
             lf_buf_append_str(out, "/locations/") != 0 || lf_buf_append_str(out, p->vertex.location) != 0 ||
             lf_buf_append_str(out, p->api == LF_API_ANTHROPIC ? "/publishers/anthropic/models/"
                                                               : "/publishers/google/models/") != 0;
    } else {
        /* Google lists its models as "models/M": the prefix is the path's own. */
        if (strncmp(model, "models/", 7) == 0) model += 7;
        rc = lf_buf_append_str(out, LF_GEMINI_API "/models/") != 0;
    }
    if (rc || lf_route_segment(out, model) != 0 || lf_buf_append_str(out, lf_route_method(p)) != 0) {
        lf_buf_clear(out);
        lf_wire_fail(errmsg, "out of memory");
        return -1;
    }
    return 0;
}
