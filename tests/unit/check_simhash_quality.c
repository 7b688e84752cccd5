/*
 * Unit test of fingerprint quality on the first 4,000 Reuters-21578 bodies
 * (DESIGN section 4.3): identical bodies get identical fingerprints, and
 * among the other pairs (8 million), those within Hamming distance 3 - the
 * near-duplicate threshold - are far fewer with the default term hash than
 * with the paper's plain sdbm, whose short words leave the high bits of
 * the fingerprint nearly constant.  The bound: at least 50 times fewer.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"
#include "simhash.h"
#include "stopwords.h"
#include "testutil.h"

#define QUALITY_DOCS 4000
#define QUALITY_K 3
#define QUALITY_FACTOR 50

struct quality {
	uint64_t close_pairs;	/* different bodies, distance <= K */
	uint64_t pairs;		/* different bodies */
	uint64_t same_pairs;	/* identical bodies */
};

static void
measure(const struct corpus *c, size_t n, enum simhash_term_hash th,
    const struct stopwords *sw, struct quality *q)
{
	struct simhash *sh;
	struct simhash_scratch *sc = simhash_scratch_new();
	uint64_t *fp = calloc(n, sizeof(*fp));
	int *empty = calloc(n, sizeof(*empty));
	char *cause = NULL;
	size_t i, j;

	ck_assert_ptr_nonnull(sh = simhash_new(th, sw, &cause));
	for (i = 0; i < n; i++)
		empty[i] = simhash_compute(sh, sc, SIMHASH_INPUT_TEXT,
		    c->docs[i].data, c->docs[i].len, &fp[i]) != SIMHASH_OK;
	memset(q, 0, sizeof(*q));
	for (i = 0; i < n; i++) {
		if (empty[i])
			continue;
		for (j = i + 1; j < n; j++) {
			if (empty[j])
				continue;
			if (c->docs[i].len == c->docs[j].len &&
			    memcmp(c->docs[i].data, c->docs[j].data,
			    c->docs[i].len) == 0) {
				ck_assert_msg(fp[i] == fp[j], "identical "
				    "bodies %zu and %zu: %016llx %016llx", i, j,
				    (unsigned long long)fp[i],
				    (unsigned long long)fp[j]);
				q->same_pairs++;
				continue;
			}
			q->pairs++;
			if (__builtin_popcountll(fp[i] ^ fp[j]) <= QUALITY_K)
				q->close_pairs++;
		}
	}
	simhash_free(sh);
	simhash_scratch_free(sc);
	free(fp);
	free(empty);
}

START_TEST(test_reuters_quality)
{
	char *dir = tu_data_path("text_corpora/reuters21578");
	char *path = tu_source_path("conf/stopwords.txt"), *cause = NULL;
	struct corpus *c = corpus_reuters(dir, QUALITY_DOCS);
	struct stopwords *sw = stopwords_load(path, &cause);
	struct quality def, paper;

	ck_assert_ptr_nonnull(c);
	ck_assert_msg(sw != NULL, "%s", cause);
	ck_assert_uint_eq(c->n, QUALITY_DOCS);
	measure(c, c->n, SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &def);
	measure(c, c->n, SIMHASH_TERM_HASH_SDBM, sw, &paper);
	printf("simhash quality, %zu Reuters bodies, %llu pairs of "
	    "different bodies (%llu identical): within distance %d: "
	    "sdbm-fmix64 %llu (%.5f%%), sdbm %llu (%.5f%%)\n", c->n,
	    (unsigned long long)def.pairs, (unsigned long long)def.same_pairs,
	    QUALITY_K, (unsigned long long)def.close_pairs,
	    100.0 * (double)def.close_pairs / (double)def.pairs,
	    (unsigned long long)paper.close_pairs,
	    100.0 * (double)paper.close_pairs / (double)paper.pairs);
	ck_assert_uint_gt(def.same_pairs, 0);
	ck_assert_uint_eq(def.pairs, paper.pairs);
	ck_assert_msg(def.close_pairs * QUALITY_FACTOR <= paper.close_pairs,
	    "sdbm-fmix64 has %llu close pairs, not %d times fewer than "
	    "sdbm's %llu", (unsigned long long)def.close_pairs, QUALITY_FACTOR,
	    (unsigned long long)paper.close_pairs);
	stopwords_free(sw);
	corpus_free(c);
	free(path);
	free(dir);
}
END_TEST

Suite *simhash_quality_suite(void);

Suite *
simhash_quality_suite(void)
{
	Suite *s = suite_create("simhash_quality");
	TCase *tc = tcase_create("quality");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_reuters_quality);
	suite_add_tcase(s, tc);
	return s;
}
