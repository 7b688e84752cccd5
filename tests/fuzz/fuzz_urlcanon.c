/*
 * fuzz_urlcanon: the URL canonicalizer on arbitrary bytes, and two
 * properties: a canonical form canonicalizes to itself, and the fast path
 * changes nothing (whatever urlcanon_is_canonical takes, the parser
 * canonicalizes to exactly the input; with and without the fast path the
 * results are the same).  A violation aborts, so the fuzzer reports it like
 * a crash.
 *
 * Input: the first byte chooses the crawler options; the rest is the URL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urlcanon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct urlcanon_options opts[8];
	static struct urlcanon *uc[8], *again[8], *slow[8];
	const char *url = (const char *)data + 1;
	const char *out, *out2, *sout, *cause, *scause;
	char *copy;
	size_t len, n, n2, sn;
	int o;

	if (size < 1)
		return 0;
	len = size - 1;
	o = data[0] & 7;
	if (uc[o] == NULL) {
		opts[o].strip_session_ids = o & 1;
		opts[o].strip_tracking = (o >> 1) & 1;
		opts[o].sort_query = (o >> 2) & 1;
		uc[o] = urlcanon_new(&opts[o]);
		again[o] = urlcanon_new(&opts[o]);
		slow[o] = urlcanon_new(&opts[o]);
		urlcanon_set_fast_path(slow[o], false);
	}

	sout = urlcanon_canonicalize(slow[o], url, len, &sn, &scause);
	if (urlcanon_is_canonical(&opts[o], url, len) &&
	    (sout == NULL || sn != len || memcmp(sout, url, len) != 0)) {
		fprintf(stderr, "fast path takes %.*s, canonical form %s\n",
		    (int)len, url, sout ? sout : scause);
		abort();
	}
	out = urlcanon_canonicalize(uc[o], url, len, &n, &cause);
	if ((out == NULL) != (sout == NULL) || (out != NULL && (n != sn ||
	    memcmp(out, sout, n) != 0)) || (out == NULL &&
	    strcmp(cause, scause) != 0)) {
		fprintf(stderr, "fast path changes %.*s: %s, not %s\n",
		    (int)len, url, out ? out : cause, sout ? sout : scause);
		abort();
	}
	if (out == NULL)
		return 0;
	if (strlen(out) != n)
		abort();
	copy = strdup(out);
	out2 = urlcanon_canonicalize(again[o], copy, n, &n2, &cause);
	if (out2 == NULL || n2 != n || memcmp(out2, copy, n) != 0) {
		fprintf(stderr, "not idempotent: %s -> %s\n", copy,
		    out2 ? out2 : cause);
		abort();
	}
	free(copy);
	return 0;
}
