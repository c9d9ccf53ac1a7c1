/* A growable byte buffer. Always NUL-terminated after a successful append so
 * that text can be handed to json-c and to Ruby without another copy. */
#ifndef LF_BUF_H
#define LF_BUF_H

#include <stddef.h>

typedef struct lf_buf {
    char *ptr;
    size_t len;
    size_t cap;
} lf_buf;

void lf_buf_init(lf_buf *b);
void lf_buf_free(lf_buf *b);
/* Keep the memory, forget the contents. */
void lf_buf_clear(lf_buf *b);
/* 0 on success, -1 when out of memory (the buffer is left unchanged). */
int lf_buf_append(lf_buf *b, const char *bytes, size_t n);
int lf_buf_append_str(lf_buf *b, const char *s);
int lf_buf_append_char(lf_buf *b, char c);
int lf_buf_set(lf_buf *b, const char *bytes, size_t n);
/* b becomes the printf-formatted text, cut at 1023 bytes (messages). */
void lf_buf_setf(lf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* dst becomes a copy of src (empty when src is). */
int lf_buf_copy(lf_buf *dst, const lf_buf *src);
/* dst takes src's memory (its own is freed); src is left empty, as after
 * lf_buf_init. */
void lf_buf_move(lf_buf *dst, lf_buf *src);
/* Room for n more bytes (and the NUL) without another allocation; 0, or -1
 * when out of memory (the buffer is left unchanged). */
int lf_buf_reserve(lf_buf *b, size_t n);
/* Never NULL: "" for an empty buffer. */
const char *lf_buf_cstr(const lf_buf *b);
/* Drop the first n bytes. */
void lf_buf_consume(lf_buf *b, size_t n);

#endif
