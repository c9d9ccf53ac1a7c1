#include "lf_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lf_banned.h"

void lf_buf_init(lf_buf *b)
{
    b->ptr = NULL;
    b->len = 0;
    b->cap = 0;
}

void lf_buf_free(lf_buf *b)
{
    free(b->ptr);
    lf_buf_init(b);
}

void lf_buf_clear(lf_buf *b)
{
    b->len = 0;
    if (b->ptr) b->ptr[0] = '\0';
}

int lf_buf_reserve(lf_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > (size_t)-1 - b->len - 1) return -1;
    need = b->len + extra + 1;
    if (need <= b->cap) return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > ((size_t)-1) / 2) { cap = need; break; }
        cap *= 2;
    }
    p = realloc(b->ptr, cap);
    if (!p) return -1;
    b->ptr = p;
    b->cap = cap;
    return 0;
}

int lf_buf_append(lf_buf *b, const char *bytes, size_t n)
{
    if (lf_buf_reserve(b, n) != 0) return -1;
    if (n) memcpy(b->ptr + b->len, bytes, n);
    b->len += n;
    b->ptr[b->len] = '\0';
    return 0;
}

int lf_buf_append_str(lf_buf *b, const char *s)
{
    return lf_buf_append(b, s, strlen(s));
}

int lf_buf_append_char(lf_buf *b, char c)
{
    return lf_buf_append(b, &c, 1);
}

int lf_buf_set(lf_buf *b, const char *bytes, size_t n)
{
    lf_buf_clear(b);
    return lf_buf_append(b, bytes, n);
}

int lf_buf_copy(lf_buf *dst, const lf_buf *src)
{
    return lf_buf_set(dst, lf_buf_cstr(src), src->len);
}

void lf_buf_move(lf_buf *dst, lf_buf *src)
{
    if (dst == src) return;
    free(dst->ptr);
    *dst = *src;
    lf_buf_init(src);
}

const char *lf_buf_cstr(const lf_buf *b)
{
    return b->ptr ? b->ptr : "";
}

void lf_buf_consume(lf_buf *b, size_t n)
{
    if (n >= b->len) {
        lf_buf_clear(b);
        return;
    }
    memmove(b->ptr, b->ptr + n, b->len - n);
    b->len -= n;
    b->ptr[b->len] = '\0';
}

void lf_buf_setf(lf_buf *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    lf_buf_set(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
