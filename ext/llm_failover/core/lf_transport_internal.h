/* What the transport's files share and nobody else uses: lf_transport.c (the
 * pool, one transfer step by step), lf_response.c (the response as libcurl's
 * callbacks fill it) and lf_hub.c (readiness-driven transfers: one multi
 * handle per thread, its sockets in each slot's epoll set). */
#ifndef LF_TRANSPORT_INTERNAL_H
#define LF_TRANSPORT_INTERNAL_H

#include "lf_transport.h"

/* CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION, over an lf_response. */
size_t lf_response_on_body(char *ptr, size_t size, size_t nmemb, void *ud);
size_t lf_response_on_header(char *ptr, size_t size, size_t nmemb, void *ud);

/* Bytes for c's transfer arrived inside a libcurl call: when another slot's
 * call did that, c's wait is woken. No-op outside a hub. */
void lf_hub_saw(lf_conn *c);
/* Puts c's transfer (its easy handle, set up for resp) into this thread's
 * hub. 0, or -1 (no hub: not Linux, out of memory; c->hub then NULL, or set
 * for lf_hub_detach to undo). */
int lf_hub_attach(lf_conn *c, lf_response *resp);
/* Takes c's transfer out of its hub (lf_transfer_end). */
void lf_hub_detach(lf_conn *c);
/* The same request again, on a new connection (it never left). 0 or -1. */
int lf_hub_restart(lf_conn *c);
/* One pass of c's readiness-driven transfer; *running as
 * curl_multi_socket_action sets it. 0 or -1. */
int lf_hub_drive(lf_conn *c, int *running);

#endif
