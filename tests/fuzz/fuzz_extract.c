/*
 * fuzz_extract: main-content extraction on arbitrary bytes, with what
 * extract.h promises checked as the fuzzer goes; a violation aborts, so
 * the fuzzer reports it like a crash:
 *  - both texts keep the format: no empty line, no "\n" at either end, no
 *    SPACE at either end of a line nor two together, no TAB, CR or FF;
 *  - the whole text is at most twice the input, and so is the main
 *    content (it may be hidden text, which the whole text leaves out);
 *    EXTRACT_WHOLE means the whole text itself;
 *  - a whole text holding no '<' nor '&', read again as HTML, gives itself
 *    with its line breaks turned to spaces (text is a fixed point);
 *  - extract_main on the whole text read as HTML returns.
 * One scratch serves every input, as a worker thread's does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_format(const uint8_t *out, size_t len)
{
	size_t i;

	if (len == 0)
		return;
	if (out[0] == '\n' || out[0] == ' ' || out[len - 1] == '\n' ||
	    out[len - 1] == ' ') {
		fprintf(stderr, "separator at an end\n");
		abort();
	}
	for (i = 0; i < len; i++) {
		if ((out[i] == '\n' || out[i] == ' ') && i + 1 < len &&
		    (out[i + 1] == '\n' || out[i + 1] == ' ')) {
			fprintf(stderr, "separators together at %zu\n", i);
			abort();
		}
		if (out[i] == '\t' || out[i] == '\r' || out[i] == '\f') {
			fprintf(stderr, "whitespace left at %zu\n", i);
			abort();
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct extract_scratch *sc;
	const uint8_t *out;
	uint8_t *whole, *again;
	size_t wlen, mlen, alen, i;
	int r;

	if (sc == NULL && (sc = extract_scratch_new()) == NULL)
		abort();
	if (extract_whole(sc, data, size, &out, &wlen) != EXTRACT_WHOLE)
		abort();
	check_format(out, wlen);
	if (wlen > 2 * size) {
		fprintf(stderr, "whole text %zu bytes from %zu\n", wlen, size);
		abort();
	}
	if ((whole = malloc(wlen + 1)) == NULL)
		abort();
	memcpy(whole, out, wlen);
	if ((r = extract_main(sc, data, size, &out, &mlen)) == -1)
		abort();
	check_format(out, mlen);
	if (mlen > 2 * size || (r == EXTRACT_WHOLE && (mlen != wlen ||
	    memcmp(out, whole, wlen) != 0))) {
		fprintf(stderr, "main content (%d, %zu bytes) is not of the "
		    "whole text (%zu bytes)\n", r, mlen, wlen);
		abort();
	}
	if (memchr(whole, '<', wlen) == NULL &&
	    memchr(whole, '&', wlen) == NULL) {
		if (extract_whole(sc, whole, wlen, &out, &alen) !=
		    EXTRACT_WHOLE || alen != wlen)
			abort();
		again = malloc(wlen + 1);
		memcpy(again, whole, wlen);
		for (i = 0; i < wlen; i++)
			if (again[i] == '\n')
				again[i] = ' ';
		if (memcmp(out, again, wlen) != 0) {
			fprintf(stderr, "text read again changed\n");
			abort();
		}
		free(again);
	}
	if (extract_main(sc, whole, wlen, &out, &alen) == -1)
		abort();
	check_format(out, alen);
	free(whole);
	return 0;
}
