/*
 * fuzz_urlcanon: the URL canonicalizer on arbitrary bytes, and a property:
 * a canonical form canonicalizes to itself.  A violation aborts, so the
 * fuzzer reports it like a crash.
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
	static struct urlcanon *uc[8], *again[8];
	const char *out, *out2, *cause;
	char *copy;
	size_t n, n2;
	int o;

	if (size < 1)
		return 0;
	o = data[0] & 7;
	if (uc[o] == NULL) {
		struct urlcanon_options opts = { o & 1, (o >> 1) & 1,
		    (o >> 2) & 1 };

		uc[o] = urlcanon_new(&opts);
		again[o] = urlcanon_new(&opts);
	}
	out = urlcanon_canonicalize(uc[o], (const char *)data + 1, size - 1, &n,
	    &cause);
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
