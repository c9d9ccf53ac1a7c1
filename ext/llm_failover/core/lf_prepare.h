/* Request preparation, in the wire layer: for each target a call may send
 * to, its URL (lf_wire_url: base_url, the host's layout, the protocol's
 * path), its header list (the key as the host takes it) and its body, built
 * before any network so that a request that cannot be built fails before the
 * first byte is sent; and the call's JSON schema, parsed once for every
 * target's body and for checking every answer (lf_json_answer_check). */
#ifndef LF_PREPARE_H
#define LF_PREPARE_H

#include <stddef.h>
#include <curl/curl.h>
#include <json-c/json.h>
#include "lf_buf.h"
#include "lf_target.h"
#include "lf_wire.h"

typedef struct lf_prepared {
    char *url;
    /* NULL, or the request line's target when the URL's path is not it: a
     * signed (SigV4: Bedrock) path with escapes, on a libcurl that signs the
     * URL's path as it is, has its URL's path escaped once more (what AWS
     * checks the signature against) and lf_wire_url's path as its target. */
    char *request_target;
    struct curl_slist *headers;   /* lf_transport_default_headers' lines, then ours and the target's */
    /* A signed target's (lf_target_signed): CURLOPT_AWS_SIGV4's provider
     * string, and the credentials libcurl signs with (the target's own). */
    char *aws_sigv4;
    const char *aws_key_id;
    const char *aws_secret;
    lf_buf body;
    /* 1: the target cannot take the message's attachments (refusal says
     * why, lf_wire_attachments_refusal); nothing else is built, and the
     * attempt loop sends it nothing. */
    int refused;
    lf_buf refusal;
} lf_prepared;

typedef struct lf_prepared_call {
    lf_prepared target[LF_MAX_TARGETS]; /* empty for targets before `first` */
    json_object *schema;          /* params->schema parsed; NULL without one */
} lf_prepared_call;

void lf_prepared_call_init(lf_prepared_call *p);
/* Parses params->schema, when there is one, for every target's body and
 * for the answers' check. 0, or -1 with err filled. */
int lf_prepare_schema(lf_prepared_call *p, const lf_request_params *params, lf_buf *err);
/* Prepares p->target[i] from target t and params (whose api and model are
 * taken from t), after lf_prepare_schema. 0, or -1 with err filled. A
 * target that cannot take the attachments is prepared as refused (0). */
int lf_prepare_target(lf_prepared_call *p, size_t i, const lf_target *t, const lf_request_params *params,
                      lf_buf *err);
/* Frees everything; what held a key or a header value is wiped first. */
void lf_prepared_call_free(lf_prepared_call *p);

#endif
