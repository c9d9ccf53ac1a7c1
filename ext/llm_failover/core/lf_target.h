/* One target of a call: the provider's protocol, where it is (its base URL
 * and the host's layout), its key, the model, the extra header lines and the
 * provider entry's name. The request preparation (lf_prepare), the redaction
 * of secrets (lf_redact) and the attempt loop (lf_failover) all read it.
 *
 * A call tries at most two tiers, the primary and the backup; a tier is one
 * target, or a pool's hosts (each an lf_target of its own, with its own key,
 * circuit and headroom), consecutive in the call's list (lf_tier). */
#ifndef LF_TARGET_H
#define LF_TARGET_H

#include <stddef.h>
#include "lf_wire.h"

/* The primary, then at most one backup: the tiers of a call. */
#define LF_MAX_TIERS 2
/* Hosts of one pool. */
#define LF_MAX_POOL_HOSTS 8
/* Targets of one call: every host of both tiers. */
#define LF_MAX_TARGETS (LF_MAX_TIERS * LF_MAX_POOL_HOSTS)

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
    /* The host, when it is not the protocol's own (LF_LAYOUT_PLAIN): where
     * it puts the protocol's path (lf_wire_url), what it serves, how it takes
     * the key: Azure's layouts an api-key header, with api_version for a
     * deployment or AI Foundry; Vertex AI (its project and location, api the
     * publisher's protocol: lf_wire_vertex_api) an OAuth access token as a
     * bearer token. */
    lf_layout layout;
    const char *api_version;
    lf_vertex vertex;
    /* 1: api_key is a bearer token (Azure's Entra ID access_token, a Bedrock
     * API key): sent as Authorization: Bearer, whatever the layout; a Bedrock
     * request with one is not signed. */
    int bearer;
    /* The provider entry's name: reasoning state goes back only to the
     * origin that gave it (lf_wire_reasoning_goes). NULL is "". */
    const char *origin;
    /* Responses: ask for encrypted reasoning and send it back (a reasoning
     * model; lf_request_params.encrypted_reasoning). */
    int encrypted_reasoning;
    /* Bedrock, signed (lf_target_signed): the region it signs for and the AWS
     * credentials (api_key may then be NULL); the session token, when the
     * credentials are temporary, goes in x-amz-security-token. Secrets:
     * lf_redact knows them. */
    const char *region;
    const char *aws_access_key_id;
    const char *aws_secret_access_key;
    const char *aws_session_token;   /* NULL: none */
    /* NULL, or why nothing can be sent to it (a pool's host whose credential
     * source failed in the host, its message free of secrets): a call that
     * goes to it fails there with LF_E_CONFIGURATION, sending nothing, as a
     * 401 from it would; it is weighed in the pick as any host, never
     * passed over. */
    const char *unusable;
} lf_target;

/* One tier of a call: the targets[first .. first + n_hosts) of the call's
 * list, each tried at most once before the tier's retries (lf_failover.c). */
typedef struct lf_tier {
    size_t first;
    size_t n_hosts;
    /* A pool (even of one host): a host is picked by weight among those
     * with headroom, a retryable failure moves the call to another of its
     * hosts before the next tier, and its hosts' headroom is kept. */
    int pooled;
    const double *weights;        /* one per host, > 0; NULL: equal */
} lf_tier;

/* Whether requests to t are signed with SigV4 (libcurl's CURLOPT_AWS_SIGV4)
 * rather than carrying a key: Bedrock, unless its key is a bearer token. */
static inline int lf_target_signed(const lf_target *t)
{
    return t->api == LF_API_BEDROCK && !t->bearer;
}

#endif
