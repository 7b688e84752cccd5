/*
 * simhash_ref: a deliberately naive simhash, written straight from DESIGN
 * section 4 and the HTML rules of daemon/text/html.h, for the tests and the
 * benchmark to compare the engine with.  It shares no code with the engine
 * (only the table of named character references, which is data).  Clarity
 * over speed: build the text, split it into terms, drop stop words, add +1
 * or -1 per bit per term.
 */
#ifndef NDDD_SIMHASH_REF_H
#define NDDD_SIMHASH_REF_H

#include <stddef.h>
#include <stdint.h>

struct ref_stopwords;

/* A stop-word set from a NULL-terminated list (lower-case words). */
struct ref_stopwords *ref_stopwords_new(const char *const *words);
void ref_stopwords_free(struct ref_stopwords *sw);

/* sdbm over the bytes, then fmix64 unless paper is set. */
uint64_t ref_term_hash(const unsigned char *term, size_t len, int paper);

/* The visible text of an HTML document; the caller frees it. */
char *ref_html_text(const char *doc, size_t len, size_t *outlen);

/*
 * The fingerprint of a text (html: of an HTML document).  sw may be NULL.
 * Returns 0 with *fp set, or -1 when no term is left.
 */
int ref_simhash(const char *doc, size_t len, int html, int paper,
    const struct ref_stopwords *sw, uint64_t *fp);

/* The same for preprocessed input: terms separated by SPACE, as they are. */
int ref_simhash_preprocessed(const char *doc, size_t len, int paper,
    uint64_t *fp);

#endif
