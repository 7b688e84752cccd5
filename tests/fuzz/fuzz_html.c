/*
 * fuzz_html: the HTML preprocessor and the fingerprint on arbitrary bytes,
 * with two properties checked as the fuzzer goes: the fingerprint of a
 * document equals the fingerprint of its preprocessed form (the
 * accelerator format), and the scalar code gives the vector code's bits.
 * A violation aborts, so the fuzzer reports it like a crash.
 *
 * Input: the first byte chooses HTML or text; the rest is the document.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "simhash.h"
#include "stopwords.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct simhash *sh;
	static struct simhash_scratch *sc;
	static struct stopwords *sw;
	enum simhash_input in;
	enum simhash_status st, st2;
	uint64_t fp = 0, fp2 = 0;
	uint8_t *pre;
	size_t prelen;
	char *cause = NULL;

	if (size < 1)
		return 0;
	if (sh == NULL) {
		sw = stopwords_new();
		stopwords_add(sw, "the", 3, &cause);
		stopwords_add(sw, "and", 3, &cause);
		if ((sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, sw,
		    &cause)) == NULL || (sc = simhash_scratch_new()) == NULL)
			abort();
	}
	in = data[0] & 1 ? SIMHASH_INPUT_HTML : SIMHASH_INPUT_TEXT;
	data++;
	size--;
	st = simhash_compute(sh, sc, in, data, size, &fp);
	if (simhash_preprocess(sh, sc, in, data, size, &pre, &prelen) == -1)
		abort();
	st2 = simhash_compute(sh, sc, SIMHASH_INPUT_PREPROCESSED, pre, prelen,
	    &fp2);
	free(pre);
	if (st != st2 || (st == SIMHASH_OK && fp != fp2)) {
		fprintf(stderr, "raw and preprocessed disagree: %d %016llx, "
		    "%d %016llx\n", st, (unsigned long long)fp, st2,
		    (unsigned long long)fp2);
		abort();
	}
	/* The portable code must agree with the vector code in use. */
	if (simhash_simd_active() != SIMHASH_SIMD_SCALAR) {
		enum simhash_simd was = simhash_simd_active();

		if (simhash_simd_select(SIMHASH_SIMD_SCALAR, &cause) == 0) {
			st2 = simhash_compute(sh, sc, in, data, size, &fp2);
			simhash_simd_select(was, &cause);
			if (st != st2 || (st == SIMHASH_OK && fp != fp2)) {
				fprintf(stderr, "scalar and %s disagree\n",
				    simhash_simd_name(was));
				abort();
			}
		}
	}
	return 0;
}
