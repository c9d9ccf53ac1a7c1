/* The scrubber's pre-scan: one pass over a text that finds every place where
 * one of the built-in rules (lib/llm_failover/scrubber/rules.rb) could start a
 * match, so that Ruby runs each rule's exact pattern and check only there.
 *
 * Each kind's test is necessary for its pattern to match at a place, never
 * sufficient: a place left out would be a value sent in the clear, an extra
 * one costs one anchored regexp try. A rule's pattern and its kind's test here
 * change together. */
#ifndef LF_SCRUB_H
#define LF_SCRUB_H

#include <stddef.h>

enum lf_scrub_kind {
    LF_SCRUB_SK = 0,  /* sk-[A-Za-z0-9_-]{20,}: "sk-" */
    LF_SCRUB_GSK,     /* gsk_...: "gsk_" */
    LF_SCRUB_AWS,     /* (AKIA|ASIA)[A-Z0-9]{16}: "AKIA", "ASIA" */
    LF_SCRUB_GHP,     /* ghp_...: "ghp_" */
    LF_SCRUB_XOX,     /* xox[abposr]-...: "xox" then one of abposr and "-" */
    LF_SCRUB_BEARER,  /* [Bb]earer[ \t]+token: "Bearer", "bearer" */
    LF_SCRUB_SSN,     /* 123-45-6789 with its boundaries, exactly */
    LF_SCRUB_CARD,    /* [2-6] and 3 digits starting a group, 13 of the next 23 bytes digits */
    LF_SCRUB_IBAN,    /* two capitals, two digits, no letter or digit before */
    LF_SCRUB_PHONE,   /* + ( or a digit starting a number, 8 digits in 21 bytes of [0-9 .()+-] */
    LF_SCRUB_EMAIL,   /* the run of local-part bytes before an "@" followed by a domain byte */
    LF_SCRUB_KINDS
};

/* One candidate: a match of kind's pattern may start at from. For
 * LF_SCRUB_EMAIL [from, to) is the run of local-part bytes before the "@" at
 * to: a match starting anywhere in it ends where one starting at from would;
 * for every other kind to is from + 1. Candidates of one kind come in order of
 * from. A nonzero return stops the scan. */
typedef int (*lf_scrub_fn)(void *ud, int kind, size_t from, size_t to);

/* Calls fn for every candidate of the kinds in kinds (bit 1 << kind each).
 * 0, or fn's nonzero return. Reads text[0..len) only; allocates nothing. */
int lf_scrub_scan(const char *text, size_t len, unsigned kinds, lf_scrub_fn fn, void *ud);

/* One replacement: text[from..to) becomes with[0..with_len). */
typedef struct lf_scrub_cut {
    size_t from, to;
    const char *with;
    size_t with_len;
} lf_scrub_cut;

/* The length of text[0..len) after the n cuts, which come in order and do not
 * overlap (each from at or after the last to, each to at most len); SIZE_MAX
 * when they do not. */
size_t lf_scrub_spliced_len(size_t len, const lf_scrub_cut *cuts, size_t n);

/* Writes text[0..len) after the n cuts to out, lf_scrub_spliced_len bytes
 * (the cuts checked by it). The scrubbed text is copied once, where joining
 * the pieces in Ruby copies each piece twice. */
void lf_scrub_splice(const char *text, size_t len, const lf_scrub_cut *cuts, size_t n, char *out);

#endif
