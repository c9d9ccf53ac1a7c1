/* Redaction of the call's secrets and wiping of freed secrets (lf_redact.h). */
#define _GNU_SOURCE /* memmem */
#include "lf_redact.h"

#include <string.h>

#include "lf_banned.h"

static const char lf_redacted[] = LF_REDACTED;

/* A memset called through a volatile pointer: the compiler cannot know it is
 * memset, so cannot drop it as a dead store before free. */
static void *(*const volatile lf_memset)(void *, int, size_t) = memset;

void lf_wipe(void *p, size_t n)
{
    if (p && n) lf_memset(p, 0, n);
}

/* Replaces every occurrence of secret in b; with cut, also a tail of b that
 * is the secret's first LF_SECRET_TAIL_MIN or more bytes (b was cut there). */
static void lf_redact_one(lf_buf *b, const char *secret, size_t slen, int cut)
{
    lf_buf out;
    const char *p, *hit, *end;
    size_t k;

    if (!b->len) return;
    if (memmem(b->ptr, b->len, secret, slen)) {
        lf_buf_init(&out);
        p = b->ptr;
        end = b->ptr + b->len;
        while ((hit = memmem(p, (size_t)(end - p), secret, slen)) != NULL) {
            lf_buf_append(&out, p, (size_t)(hit - p));
            lf_buf_append(&out, lf_redacted, sizeof lf_redacted - 1);
            p = hit + slen;
        }
        lf_buf_append(&out, p, (size_t)(end - p));
        lf_buf_free(b);
        *b = out;
    }
    for (k = slen - 1; cut && k >= LF_SECRET_TAIL_MIN; k--) {
        if (b->len >= k && memcmp(b->ptr + b->len - k, secret, k) == 0) {
            b->len -= k;
            b->ptr[b->len] = '\0';
            lf_buf_append(b, lf_redacted, sizeof lf_redacted - 1);
            break;
        }
    }
}

void lf_redact(const lf_target *targets, size_t n_targets, lf_buf *b, int cut)
{
    size_t i, k, n;
    const char *v;

    for (i = 0; i < n_targets; i++) {
        const lf_target *t = &targets[i];

        const char *keys[] = { t->api_key, t->aws_access_key_id, t->aws_secret_access_key, t->aws_session_token };

        for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            n = keys[k] ? strlen(keys[k]) : 0;
            if (n >= LF_SECRET_TAIL_MIN) lf_redact_one(b, keys[k], n, cut);
        }
        for (k = 0; k < t->n_headers; k++) {
            v = t->headers[k] ? strstr(t->headers[k], ": ") : NULL;
            if (!v) continue;
            v += 2;
            n = strlen(v);
            if (n >= LF_SECRET_HEADER_MIN) lf_redact_one(b, v, n, cut);
        }
    }
}
