/* Request preparation (lf_prepare.h): URL, header list and body per target,
 * the schema parsed once per call. */
#include "lf_prepare.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lf_json_answer.h"
#include "lf_redact.h"
#include "lf_transport.h"

#include "lf_banned.h"

static int lf_has_crlf(const char *s)
{
    return strpbrk(s, "\r\n") != NULL;
}

/* Whether two header lines name the same header, as libcurl matches a
 * custom line against one of its own: the name in any case, then ':' or
 * ';'. `ours` is a "Name: value" line. */
static int lf_same_header(const char *line, const char *ours)
{
    size_t n = (size_t)(strchr(ours, ':') - ours);
    return strncasecmp(line, ours, n) == 0 && (line[n] == ':' || line[n] == ';');
}

/* A new string of a and b joined; NULL when out of memory. */
static char *lf_concat(const char *a, const char *b)
{
    size_t an = strlen(a), bn = strlen(b);
    char *s = malloc(an + bn + 1);

    if (!s) return NULL;
    memcpy(s, a, an);
    memcpy(s + an, b, bn + 1);
    return s;
}

/* What a target must hold before anything is built from it. */
static int lf_target_check(const lf_target *t, lf_buf *err)
{
    size_t i;

    if (!t->base_url || !t->model) {
        lf_buf_setf(err, "target needs base_url and model");
        return -1;
    }
    if (lf_target_signed(t) ? !(t->region && t->aws_access_key_id && t->aws_secret_access_key) : !t->api_key) {
        lf_buf_setf(err, lf_target_signed(t) ? "a signed target needs a region and AWS credentials"
                                             : "target needs an api_key");
        return -1;
    }
    if ((t->api_key && lf_has_crlf(t->api_key)) || (t->aws_session_token && lf_has_crlf(t->aws_session_token))) {
        lf_buf_setf(err, "API key contains a line break");
        return -1;
    }
    for (i = 0; i < t->n_headers; i++) {
        if (!t->headers[i] || lf_has_crlf(t->headers[i]) || !strchr(t->headers[i], ':')) {
            lf_buf_setf(err, "extra header %zu is not a single \"Name: value\" line", i);
            return -1;
        }
    }
    return 0;
}

/* Appends line to *list; 0, or -1 when out of memory (*list unchanged). */
static int lf_header_add(struct curl_slist **list, const char *line)
{
    struct curl_slist *l = curl_slist_append(*list, line);

    if (!l) return -1;
    *list = l;
    return 0;
}

/* How the target takes its key: a bearer token where it is one (Azure's
 * Entra ID token; Vertex AI's OAuth access token, whatever the publisher; a
 * Bedrock API key), Azure's api-key, else as the protocol's own host takes
 * it. NULL: no key header, the request is signed instead (Bedrock: SigV4,
 * libcurl's CURLOPT_AWS_SIGV4 with the target's AWS credentials,
 * lf_prepare_signing; lf_prepare_url gives it the path it must sign). */
static const char *lf_key_header(const lf_target *t)
{
    if (t->bearer || t->layout == LF_LAYOUT_VERTEX) return "Authorization: Bearer ";
    if (t->layout != LF_LAYOUT_PLAIN) return "api-key: ";
    switch (t->api) {
    case LF_API_ANTHROPIC: return "x-api-key: ";
    case LF_API_GEMINI: return "x-goog-api-key: ";
    case LF_API_BEDROCK: return NULL;
    default: return "Authorization: Bearer ";
    }
}

/* The key's header line (a signed request's session token, when it has one),
 * the only one made here, wiped once libcurl has its copy. */
static int lf_header_add_key(struct curl_slist **list, const lf_target *t)
{
    const char *header = lf_key_header(t), *key = t->api_key;
    char *line;
    int rc;

    if (!header && lf_target_signed(t) && t->aws_session_token) {
        header = "x-amz-security-token: ";
        key = t->aws_session_token;
    }
    if (!header) return 0;
    line = lf_concat(header, key);
    if (!line) return -1;
    rc = lf_header_add(list, line);
    lf_wipe(line, strlen(line));
    free(line);
    return rc;
}

/* The header list: first where libcurl put its own lines when it wrote them
 * itself (a target's own User-Agent or Accept-Encoding replaces ours, as it
 * replaced libcurl's), then the content lines, the key and the target's own. */
static int lf_build_headers(const lf_target *t, int stream, struct curl_slist **list)
{
    const char *defaults[2];
    size_t n_defaults = lf_transport_default_headers(defaults), i, j;

    for (j = 0; j < n_defaults; j++) {
        int own = 0;

        for (i = 0; i < t->n_headers && !own; i++) own = lf_same_header(t->headers[i], defaults[j]);
        if (!own && lf_header_add(list, defaults[j]) != 0) return -1;
    }
    if (lf_header_add(list, "Content-Type: application/json") != 0 ||
        lf_header_add(list, !stream ? "Accept: application/json"
                            : lf_wire_stream_framing(t->api) == LF_FRAMING_EVENTSTREAM
                                ? "Accept: application/vnd.amazon.eventstream"
                                : "Accept: text/event-stream") != 0 ||
        lf_header_add(list, "Expect:") != 0)
        return -1;
    /* On Vertex AI the version is in the body (LF_VERTEX_ANTHROPIC_VERSION). */
    if (t->api == LF_API_ANTHROPIC && t->layout != LF_LAYOUT_VERTEX &&
        lf_header_add(list, "anthropic-version: 2023-06-01") != 0)
        return -1;
    if (lf_header_add_key(list, t) != 0) return -1;
    for (i = 0; i < t->n_headers; i++)
        if (lf_header_add(list, t->headers[i]) != 0) return -1;
    return 0;
}

/* The target's URL (lf_wire_url), malloc'd into p->url; for a signed request
 * (SigV4: no key header) on a libcurl that signs the URL's path as it is
 * (lf_transport_sigv4_escapes_path), the URL's path escaped once more, what
 * AWS checks the signature against, and lf_wire_url's path as the request
 * target, so that the request line carries it as it was built. Neither when
 * escaping changes nothing. */
static int lf_prepare_url(lf_prepared *p, const lf_target *t, const lf_request_params *params, lf_buf *err)
{
    lf_endpoint e = { .api = t->api, .kind = params->kind, .layout = t->layout, .base_url = t->base_url,
                      .model = t->model, .api_version = t->api_version, .vertex = t->vertex,
                      .stream = params->stream };
    const char *scheme, *path;
    lf_buf u, sign;
    int rc;

    lf_buf_init(&u);
    lf_buf_init(&sign);
    rc = lf_wire_url(&e, &u, err);
    if (rc != 0) goto done;
    rc = -1;
    scheme = strstr(lf_buf_cstr(&u), "://");
    path = scheme ? strchr(scheme + 3, '/') : NULL;
    if (path && lf_key_header(t) == NULL && !lf_transport_sigv4_escapes_path()) {
        size_t origin = (size_t)(path - lf_buf_cstr(&u));

        if (lf_buf_set(&sign, u.ptr, origin) != 0 || lf_wire_uri_escape(&sign, path, u.len - origin, "/") != 0)
            goto done;
        if (strcmp(lf_buf_cstr(&sign) + origin, path) != 0 && !(p->request_target = lf_concat(path, "")))
            goto done;
    }
    p->url = lf_concat(p->request_target ? lf_buf_cstr(&sign) : lf_buf_cstr(&u), "");
    rc = p->url ? 0 : -1;
done:
    if (rc != 0 && !err->len) lf_buf_setf(err, "out of memory");
    lf_buf_free(&u);
    lf_buf_free(&sign);
    return rc;
}

/* A signed target's SigV4 (CURLOPT_AWS_SIGV4's "aws:amz:REGION:bedrock" and
 * the credentials libcurl signs with, borrowed from the target). */
static int lf_prepare_signing(lf_prepared *p, const lf_target *t)
{
    lf_buf provider;

    if (!lf_target_signed(t)) return 0;
    lf_buf_init(&provider);
    lf_buf_setf(&provider, "aws:amz:%s:bedrock", t->region);
    p->aws_sigv4 = provider.len ? lf_concat(lf_buf_cstr(&provider), "") : NULL;
    lf_buf_free(&provider);
    p->aws_key_id = t->aws_access_key_id;
    p->aws_secret = t->aws_secret_access_key;
    return p->aws_sigv4 ? 0 : -1;
}

static int lf_prepare_one(lf_prepared *p, const lf_target *t, const lf_request_params *params, json_object *schema,
                          lf_buf *err)
{
    lf_request_params tp = *params;

    if (lf_target_check(t, err) != 0) return -1;
    tp.api = t->api;
    tp.model = t->model;
    tp.layout = t->layout;
    tp.no_images = t->no_images;
    tp.no_documents = t->no_documents;
    tp.no_urls = t->no_urls;
    tp.max_attachment_bytes = t->max_attachment_bytes;
    tp.max_attachments = t->max_attachments;
    tp.origin = t->origin;
    tp.encrypted_reasoning = t->encrypted_reasoning;
    p->refused = lf_wire_attachments_refusal(&tp, &p->refusal);
    if (p->refused) return 0;
    if (lf_wire_build_request_parsed(&tp, schema, &p->body, err) != 0) return -1;
    /* base_url is normalised by its owner, the Ruby configuration. */
    if (lf_prepare_url(p, t, params, err) != 0) return -1;
    if (lf_build_headers(t, params->stream, &p->headers) != 0 || lf_prepare_signing(p, t) != 0) {
        lf_buf_setf(err, "out of memory");
        return -1;
    }
    return 0;
}

void lf_prepared_call_init(lf_prepared_call *p)
{
    size_t i;

    memset(p, 0, sizeof(*p));
    for (i = 0; i < LF_MAX_TARGETS; i++) {
        lf_buf_init(&p->target[i].body);
        lf_buf_init(&p->target[i].refusal);
    }
}

int lf_prepare_schema(lf_prepared_call *p, const lf_request_params *params, lf_buf *err)
{
    if (!params->schema || p->schema) return 0;
    p->schema = lf_json_schema_parse(params->schema, strlen(params->schema), err);
    return p->schema ? 0 : -1;
}

int lf_prepare_target(lf_prepared_call *p, size_t i, const lf_target *t, const lf_request_params *params,
                      lf_buf *err)
{
    if (i >= LF_MAX_TARGETS) {
        lf_buf_setf(err, "target %zu: at most %d targets", i, LF_MAX_TARGETS);
        return -1;
    }
    /* Nothing is built for a target nothing can be sent to (lf_exchange_begin). */
    if (t->unusable) return 0;
    return lf_prepare_one(&p->target[i], t, params, p->schema, err);
}

static void lf_prepared_free(lf_prepared *p)
{
    struct curl_slist *l;

    lf_buf_free(&p->body);
    lf_buf_free(&p->refusal);
    p->refused = 0;
    /* Keys and header values are not left behind in freed memory. */
    for (l = p->headers; l; l = l->next) lf_wipe(l->data, strlen(l->data));
    curl_slist_free_all(p->headers);
    p->headers = NULL;
    free(p->url);
    p->url = NULL;
    free(p->request_target);
    p->request_target = NULL;
    free(p->aws_sigv4);
    p->aws_sigv4 = NULL;
    p->aws_key_id = p->aws_secret = NULL;
}

void lf_prepared_call_free(lf_prepared_call *p)
{
    size_t i;

    for (i = 0; i < LF_MAX_TARGETS; i++) lf_prepared_free(&p->target[i]);
    json_object_put(p->schema);
    p->schema = NULL;
}
