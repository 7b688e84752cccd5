/*
 * Tests for urldigest: a batch gives, URL by URL, what one at a time gives
 * (the digest, the canonical form, the cause of a refusal), and the digest
 * is OpenSSL's EVP MD5 of the canonical form: on real URL lists with their
 * invalid lines, in batches of random sizes.
 */
#include <check.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "urldigest.h"

struct lines {
	char **p;
	size_t n, cap;
};

static void
read_lines(struct lines *l, const char *rel, const char *prefix)
{
	char *path = tu_data_path(rel), *data = tu_read_file(path, NULL);
	char *line, *save = NULL;

	ck_assert_ptr_nonnull(data);
	for (line = strtok_r(data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 1024;
			l->p = realloc(l->p, l->cap * sizeof(*l->p));
			ck_assert_ptr_nonnull(l->p);
		}
		if (asprintf(&l->p[l->n++], "%s%s", prefix, line) == -1)
			ck_abort_msg("out of memory");
	}
	free(data);
	free(path);
}

START_TEST(test_batch_is_one_by_one)
{
	struct urlcanon_options opts = { .strip_tracking = true };
	struct urldigest *batch = urldigest_new(&opts);
	struct urldigest *one = urldigest_new(&opts);
	struct lines l = { 0 };
	uint64_t seed = 1997;
	size_t valid = 0, invalid = 0;

	ck_assert(batch != NULL && one != NULL);
	read_lines(&l, "url_lists/ada_url_various_datasets/userbait.txt", "");
	read_lines(&l, "url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt",
	    "http://");
	/* Lines that are no URLs, and one too long, among them. */
	read_lines(&l, "url_lists/ut1_blacklists/phishing_urls_2021-03-17.txt",
	    "");
	l.p[l.n / 2][0] = '\0';
	free(l.p[l.n / 3]);
	ck_assert_ptr_nonnull(l.p[l.n / 3] = malloc(URLCANON_MAX_LEN + 100));
	memset(l.p[l.n / 3], 'a', URLCANON_MAX_LEN + 99);
	memcpy(l.p[l.n / 3], "http://a.example/", 17);
	l.p[l.n / 3][URLCANON_MAX_LEN + 99] = '\0';
	for (size_t i = 0; i < l.n;) {
		size_t m = 1 + tu_rand_below(&seed, URLDIGEST_BATCH);
		const char *urls[URLDIGEST_BATCH], *causes[URLDIGEST_BATCH];
		const char *canon[URLDIGEST_BATCH];
		size_t lens[URLDIGEST_BATCH], clens[URLDIGEST_BATCH], nv;
		size_t batch_valid = 0;
		uint8_t out[URLDIGEST_BATCH][URLDIGEST_LEN];

		if (m > l.n - i)
			m = l.n - i;
		for (size_t j = 0; j < m; j++) {
			urls[j] = l.p[i + j];
			lens[j] = strlen(urls[j]);
		}
		nv = urldigest_many(batch, urls, lens, m, &out[0][0], causes,
		    canon, clens);
		for (size_t j = 0; j < m; j++) {
			uint8_t want[URLDIGEST_LEN], ref[EVP_MAX_MD_SIZE];
			const char *c, *cause;
			size_t clen;
			unsigned int rlen;

			if (urldigest_one(one, urls[j], lens[j], want, &c,
			    &clen, &cause) == -1) {
				ck_assert_ptr_nonnull(causes[j]);
				ck_assert_str_eq(causes[j], cause);
				ck_assert_ptr_null(canon[j]);
				invalid++;
				continue;
			}
			ck_assert_ptr_null(causes[j]);
			ck_assert_uint_eq(clens[j], clen);
			ck_assert_str_eq(canon[j], c);
			ck_assert_mem_eq(out[j], want, URLDIGEST_LEN);
			ck_assert(EVP_Digest(c, clen, ref, &rlen, EVP_md5(),
			    NULL));
			ck_assert_mem_eq(out[j], ref, URLDIGEST_LEN);
			batch_valid++;
		}
		ck_assert_uint_eq(nv, batch_valid);
		valid += batch_valid;
		i += m;
	}
	ck_assert_uint_gt(valid, 10000);
	ck_assert_uint_gt(invalid, 100);
	for (size_t i = 0; i < l.n; i++)
		free(l.p[i]);
	free(l.p);
	urldigest_free(batch);
	urldigest_free(one);
}
END_TEST

Suite *urldigest_suite(void);

Suite *
urldigest_suite(void)
{
	Suite *s = suite_create("urldigest");
	TCase *tc = tcase_create("urldigest");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_batch_is_one_by_one);
	suite_add_tcase(s, tc);
	return s;
}
