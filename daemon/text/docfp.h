/*
 * docfp: from a document's body to what nddd keeps of it
 * (docs/neardup.md): the text it is judged by, its 64-bit simhash and
 * its shingle sketch.  The daemon's request workers, libnddd's engine
 * (and so the batch job) and nddctl all go through here, so that they
 * judge a page by the same text.
 *
 * The text of a document:
 *   TEXT    all of it;
 *   HTML    with [text] html = main (html_main), its main content
 *           (extract.h), or its whole visible text when it has no article
 *           (a list page, an error page); with html = whole, the page
 *           itself, read as HTML by simhash and sketch alike: the whole
 *           visible text, fingerprinted exactly as nddd 0.4 (and the
 *           paper) did;
 *   PREPROCESSED  itself (the accelerator format).
 */
#ifndef NDDD_DOCFP_H
#define NDDD_DOCFP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "simhash.h"
#include "sketch.h"

struct stopwords;

/* What a document was judged by (the protocol's Content, same numbers). */
enum docfp_content {
	DOCFP_TEXT = 0,		/* a text document, all of it */
	DOCFP_MAIN = 1,		/* an HTML page's main content */
	DOCFP_WHOLE = 2,	/* an HTML page's whole visible text */
};

struct docfp {
	uint64_t fp;		/* its simhash */
	struct sketch sketch;
	enum docfp_content content;
};

struct docfp_scratch;

/* Per-thread working memory.  NULL when out of memory. */
struct docfp_scratch *docfp_scratch_new(void);
void docfp_scratch_free(struct docfp_scratch *sc);

/*
 * The text doc (len bytes, read as in) is judged by, read as *tin (TEXT,
 * or HTML and PREPROCESSED as given): *text points into doc, or into sc
 * until its next use.  Returns 0, or -1 when memory is short.
 */
int docfp_text(struct docfp_scratch *sc, bool html_main,
    enum simhash_input in, const void *doc, size_t len,
    enum simhash_input *tin, const uint8_t **text, size_t *tlen,
    enum docfp_content *content);

/* The text a document is judged by, as docfp_text gives it. */
struct docfp_text {
	enum simhash_input input;
	const uint8_t *text;
	size_t len;
};

/*
 * The print of doc: with sh, its simhash (else out->fp is 0, for a
 * plugin to compute from the same text, which *text, if not NULL, says),
 * and its sketch without the stop words sw (those of sh's engine).  ss is
 * sh's scratch (NULL without sh).  Returns SIMHASH_OK,
 * SIMHASH_EMPTY_DOCUMENT when no term is left (the sketch then holds
 * nothing), or -1 when memory is short.
 */
int docfp_compute(const struct simhash *sh, const struct stopwords *sw,
    struct docfp_scratch *sc, struct simhash_scratch *ss, bool html_main,
    enum simhash_input in, const void *doc, size_t len, struct docfp *out,
    struct docfp_text *text);

/*
 * The text simhash and sketch read of HTML doc taken whole (html =
 * whole): its visible text as html.h strips it, one SPACE for each tag,
 * into *text (in sc, until its next use).  Returns 0, or -1 when memory
 * is short.
 */
int docfp_whole_text(struct docfp_scratch *sc, const void *doc, size_t len,
    struct docfp_text *text);

/* "text", "main" or "whole". */
const char *docfp_content_name(enum docfp_content c);

#endif
