/*
 * docfp: from a document's body to what nddd keeps of it.  See docfp.h.
 */
#include "docfp.h"

#include <stdlib.h>

#include "extract.h"
#include "html.h"

struct docfp_scratch {
	struct extract_scratch *extract;
	struct sketch_scratch *sketch;
	uint8_t *whole;		/* docfp_whole_text's */
	size_t whole_cap;
};

struct docfp_scratch *
docfp_scratch_new(void)
{
	struct docfp_scratch *sc = calloc(1, sizeof(*sc));

	if (sc == NULL)
		return NULL;
	if ((sc->extract = extract_scratch_new()) == NULL ||
	    (sc->sketch = sketch_scratch_new()) == NULL) {
		docfp_scratch_free(sc);
		return NULL;
	}
	return sc;
}

void
docfp_scratch_free(struct docfp_scratch *sc)
{
	if (sc == NULL)
		return;
	extract_scratch_free(sc->extract);
	sketch_scratch_free(sc->sketch);
	free(sc->whole);
	free(sc);
}

int
docfp_text(struct docfp_scratch *sc, bool html_main, enum simhash_input in,
    const void *doc, size_t len, enum simhash_input *tin,
    const uint8_t **text, size_t *tlen, enum docfp_content *content)
{
	int st;

	*tin = in;
	*text = doc;
	*tlen = len;
	*content = DOCFP_TEXT;
	if (in != SIMHASH_INPUT_HTML)
		return 0;
	*content = DOCFP_WHOLE;
	if (!html_main)
		return 0;
	if ((st = extract_main(sc->extract, doc, len, text, tlen)) == -1)
		return -1;
	*tin = SIMHASH_INPUT_TEXT;
	*content = st == EXTRACT_MAIN ? DOCFP_MAIN : DOCFP_WHOLE;
	return 0;
}

int
docfp_compute(const struct simhash *sh, const struct stopwords *sw,
    struct docfp_scratch *sc, struct simhash_scratch *ss, bool html_main,
    enum simhash_input in, const void *doc, size_t len, struct docfp *out,
    struct docfp_text *text)
{
	struct docfp_text t;

	out->fp = 0;
	if (docfp_text(sc, html_main, in, doc, len, &t.input, &t.text, &t.len,
	    &out->content) == -1 ||
	    sketch_compute(sw, sc->sketch, t.input, t.text, t.len,
	    &out->sketch) == -1)
		return -1;
	if (text != NULL)
		*text = t;
	if (sh != NULL)
		return simhash_compute(sh, ss, t.input, t.text, t.len,
		    &out->fp);
	return out->sketch.shingles == 0 ? SIMHASH_EMPTY_DOCUMENT : SIMHASH_OK;
}

int
docfp_whole_text(struct docfp_scratch *sc, const void *doc, size_t len,
    struct docfp_text *text)
{
	struct html_strip hs;
	size_t n = 0, w;

	html_strip_init(&hs, doc, len);
	do {
		if (sc->whole_cap - n < 4096) {
			size_t cap = sc->whole_cap * 2 + 8192;
			uint8_t *grown = realloc(sc->whole, cap);

			if (grown == NULL)
				return -1;
			sc->whole = grown;
			sc->whole_cap = cap;
		}
		w = html_strip_next(&hs, sc->whole + n, sc->whole_cap - n);
		n += w;
	} while (w > 0);
	text->input = SIMHASH_INPUT_TEXT;
	text->text = sc->whole;
	text->len = n;
	return 0;
}

const char *
docfp_content_name(enum docfp_content c)
{
	switch (c) {
	case DOCFP_TEXT:
		return "text";
	case DOCFP_MAIN:
		return "main";
	case DOCFP_WHOLE:
		return "whole";
	}
	return "?";
}
