/* libcurl results as transfer facts (lf_curl_error.h). */
#include "lf_curl_error.h"

#include "lf_banned.h"

lf_transfer lf_transfer_from_curl(CURLcode rc, const lf_response *r)
{
    switch (rc) {
    case CURLE_OK: return LF_T_OK;
    case CURLE_COULDNT_CONNECT: return LF_T_REFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return LF_T_DNS;
    case CURLE_PEER_FAILED_VERIFICATION: /* CURLE_SSL_CACERT is the same code */
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS: return LF_T_TLS_VERIFY;
    case CURLE_OPERATION_TIMEDOUT: return r->status ? LF_T_TOTAL_TIMEOUT : LF_T_CONNECT_TIMEOUT;
    case CURLE_WRITE_ERROR: return r->too_large ? LF_T_TOO_LARGE : LF_T_CONNECTION;
    case CURLE_ABORTED_BY_CALLBACK: return r->resend_refused ? LF_T_CONNECTION : LF_T_ABORTED;
    default: return LF_T_CONNECTION;
    }
}

int lf_transfer_reached(lf_transfer t)
{
    switch (t) {
    case LF_T_REFUSED:
    case LF_T_DNS:
    case LF_T_TLS_VERIFY:
    case LF_T_CONNECT_TIMEOUT: return 0;
    default: return 1;
    }
}
