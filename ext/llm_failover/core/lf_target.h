/* One target of a call: the provider's protocol, where it is, its key, the
 * model and the extra header lines (and for Vertex AI its project and
 * location). The request preparation (lf_prepare),
 * the redaction of secrets (lf_redact) and the attempt loop (lf_failover)
 * all read it. */
#ifndef LF_TARGET_H
#define LF_TARGET_H

#include <stddef.h>
#include "lf_wire.h"

/* The primary, then at most one backup. */
#define LF_MAX_TARGETS 2

typedef struct lf_target {
    lf_api api;
    const char *base_url;         /* the API path is appended as it is: no trailing slash
                                   * (ProviderConfig normalises a configured one) */
    const char *api_key;
    const char *model;
    const char *const *headers;   /* extra "Name: value" lines */
    size_t n_headers;
    /* Attachments the target cannot take, its limits per file (decoded
     * bytes) and per message, 0 for none (lf_request_params has the same). */
    int no_images;
    int no_documents;
    int no_urls;
    long max_attachment_bytes;
    long max_attachments;
    /* Vertex AI's project and location (project NULL: the protocol's own
     * host); api is then the publisher's protocol (lf_wire_vertex_api), and
     * api_key the OAuth access token, sent as a bearer token. */
    lf_vertex vertex;
    /* The provider entry's name: reasoning state (Gemini's thought
     * signatures) goes back only to the host that made it
     * (lf_request_params.host). NULL: none goes back. */
    const char *host;
} lf_target;

#endif
