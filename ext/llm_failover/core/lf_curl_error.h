/* What a libcurl result means for the policy: a CURLcode (with the response
 * it ended, for the cases only that tells apart) as an lf_transfer, the
 * transfer fact lf_classify reads, and whether the request reached the
 * provider. */
#ifndef LF_CURL_ERROR_H
#define LF_CURL_ERROR_H

#include <curl/curl.h>
#include "lf_classify.h"
#include "lf_transport.h"

/* CURLE_OK is LF_T_OK; a timeout is the connect's until a status arrived,
 * then the whole attempt's; a write error is the size cap's when the
 * response outgrew it; an abort is a connection failure when libcurl wanted
 * to send the request again (lf_response.resend_refused). */
lf_transfer lf_transfer_from_curl(CURLcode rc, const lf_response *r);

/* Whether a request whose transfer ended so may have reached the provider
 * (and been billed): 0 only when no connection was made (refused, a name
 * that did not resolve, a certificate refused, the connect timeout). */
int lf_transfer_reached(lf_transfer t);

#endif
