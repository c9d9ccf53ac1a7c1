/* The one rule for secrets. Providers quote a wrong key back ("Incorrect API
 * key provided: sk-..."), and an error page may echo a request header: no
 * secret of the call may leave the core in a message, a record, an error
 * body or an error type or code, whole or in part. The secrets are every
 * target's api_key, its AWS credentials (access key id, secret, session
 * token) and its header values of LF_SECRET_HEADER_MIN bytes or more
 * (shorter values are settings such as a region "eu-west", not secrets).
 * Everything a provider sent is redacted before any message quotes or cuts
 * it: once cut, a key is no longer found. And memory that held a secret is
 * wiped before it is freed (lf_wipe), in the core and in the binding. */
#ifndef LF_REDACT_H
#define LF_REDACT_H

#include <stddef.h>
#include "lf_buf.h"
#include "lf_target.h"

#define LF_SECRET_HEADER_MIN 8
#define LF_SECRET_TAIL_MIN 4
#define LF_REDACTED "[REDACTED]"

/* Replaces every secret of the targets in b by LF_REDACTED; with cut (b was
 * cut short), also a tail of b that is a secret's first LF_SECRET_TAIL_MIN
 * or more bytes. */
void lf_redact(const lf_target *targets, size_t n_targets, lf_buf *b, int cut);

/* Zeroes n bytes at p, in a way the compiler cannot drop as a dead store
 * before free. */
void lf_wipe(void *p, size_t n);

#endif
