/*
 * Tests for md5: RFC 1321's test suite, then every path (one at a time,
 * eight and sixteen at a time, where the CPU has them) against OpenSSL's
 * EVP MD5, the reference nddd's URL keys were made with before md5.c:
 * every length up to 300 bytes, random batches mixing lengths of one
 * block to many, and real URL lists.
 */
#include <check.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md5.h"
#include "testutil.h"

static void
ref_md5(const void *msg, size_t len, uint8_t out[MD5_DIGEST_LEN])
{
	unsigned int n;

	ck_assert(EVP_Digest(msg, len, out, &n, EVP_md5(), NULL));
	ck_assert_uint_eq(n, MD5_DIGEST_LEN);
}

static void
hex(const uint8_t d[MD5_DIGEST_LEN], char out[2 * MD5_DIGEST_LEN + 1])
{
	for (int i = 0; i < MD5_DIGEST_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* md5_digests of n messages, through each number of lanes this CPU has,
 * equals the reference for each. */
static void
assert_batch(const void *const *msgs, const size_t *lens, size_t n)
{
	static const int limits[] = { 1, 8, MD5_LANES_MAX };
	uint8_t *got = malloc(n * MD5_DIGEST_LEN + 1), want[MD5_DIGEST_LEN];

	ck_assert_ptr_nonnull(got);
	for (size_t k = 0; k < sizeof(limits) / sizeof(limits[0]); k++) {
		md5_limit_lanes(limits[k]);
		md5_digests(msgs, lens, n, got);
		for (size_t i = 0; i < n; i++) {
			ref_md5(msgs[i], lens[i], want);
			if (memcmp(got + MD5_DIGEST_LEN * i, want,
			    MD5_DIGEST_LEN) != 0)
				ck_abort_msg("%d lanes: message %zu of %zu (%zu "
				    "bytes) differs", md5_lanes(), i, n,
				    lens[i]);
		}
	}
	free(got);
}

START_TEST(test_rfc1321)
{
	static const char *const suite[][2] = {
		{ "", "d41d8cd98f00b204e9800998ecf8427e" },
		{ "a", "0cc175b9c0f1b6a831c399e269772661" },
		{ "abc", "900150983cd24fb0d6963f7d28e17f72" },
		{ "message digest", "f96b697d7cb7938d525a2f31aaf161d0" },
		{ "abcdefghijklmnopqrstuvwxyz",
		    "c3fcd3d76192e4007dfb496cca67e13b" },
		{ "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		    "0123456789", "d174ab98d277d9f5a5611c2c9f419d9f" },
		{ "1234567890123456789012345678901234567890123456789012345"
		    "6789012345678901234567890",
		    "57edf4a22be3c955ac49da2e2107b67a" },
	};
	const size_t n = sizeof(suite) / sizeof(suite[0]);
	const void *msgs[sizeof(suite) / sizeof(suite[0])];
	size_t lens[sizeof(suite) / sizeof(suite[0])];
	uint8_t d[MD5_DIGEST_LEN], all[sizeof(suite) / sizeof(suite[0])][16];
	char h[2 * MD5_DIGEST_LEN + 1];

	for (size_t i = 0; i < n; i++) {
		msgs[i] = suite[i][0];
		lens[i] = strlen(suite[i][0]);
		md5_digest(suite[i][0], lens[i], d);
		hex(d, h);
		ck_assert_str_eq(h, suite[i][1]);
	}
	md5_digests(msgs, lens, n, &all[0][0]);
	for (size_t i = 0; i < n; i++) {
		hex(all[i], h);
		ck_assert_str_eq(h, suite[i][1]);
	}
	/* No message at all, and one of no bytes at no address. */
	md5_digest(NULL, 0, d);
	hex(d, h);
	ck_assert_str_eq(h, suite[0][1]);
	md5_digests(NULL, NULL, 0, d);
#if defined(__x86_64__)
	/* The batches below test the lanes the CPU has. */
	ck_assert_int_eq(md5_lanes(), __builtin_cpu_supports("avx512f") ? 16 :
	    __builtin_cpu_supports("avx2") ? 8 : 1);
	md5_limit_lanes(8);
	ck_assert_int_eq(md5_lanes(), __builtin_cpu_supports("avx2") ? 8 : 1);
	md5_limit_lanes(1);
	ck_assert_int_eq(md5_lanes(), 1);
	md5_limit_lanes(MD5_LANES_MAX);
#endif
}
END_TEST

/* Every length from 0 to 300 (the padding's one and two blocks, every
 * boundary), at every alignment of 0 to 7, one at a time and as a batch. */
START_TEST(test_every_length)
{
	enum { MAXLEN = 300 };
	static uint8_t buf[MAXLEN + 8];
	const void *msgs[MAXLEN + 1];
	size_t lens[MAXLEN + 1];
	uint8_t got[MD5_DIGEST_LEN], want[MD5_DIGEST_LEN];
	uint64_t seed = 1321;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)tu_rand(&seed);
	for (size_t align = 0; align < 8; align++) {
		for (size_t len = 0; len <= MAXLEN; len++) {
			md5_digest(buf + align, len, got);
			ref_md5(buf + align, len, want);
			ck_assert_mem_eq(got, want, MD5_DIGEST_LEN);
			msgs[len] = buf + align;
			lens[len] = len;
		}
		assert_batch(msgs, lens, MAXLEN + 1);
	}
}
END_TEST

/* Random batches of 1 to 70 messages of 0 to 1,500 bytes, mostly short
 * (as URLs are) with some long: lanes end at different blocks and take
 * the next message while the others go on. */
START_TEST(test_random_batches)
{
	enum { MAXN = 70, MAXLEN = 1500 };
	uint64_t seed = 0x6d6435;
	uint8_t *pool = malloc(MAXN * MAXLEN);
	const void *msgs[MAXN];
	size_t lens[MAXN];

	ck_assert_ptr_nonnull(pool);
	for (size_t i = 0; i < (size_t)MAXN * MAXLEN; i++)
		pool[i] = (uint8_t)tu_rand(&seed);
	for (int round = 0; round < 400; round++) {
		size_t n = 1 + tu_rand_below(&seed, MAXN);

		for (size_t i = 0; i < n; i++) {
			size_t cap = tu_rand_below(&seed, 8) == 0 ? MAXLEN :
			    130;

			lens[i] = tu_rand_below(&seed, cap + 1);
			msgs[i] = pool + tu_rand_below(&seed,
			    (size_t)MAXN * MAXLEN - lens[i] + 1);
		}
		assert_batch(msgs, lens, n);
	}
	free(pool);
}
END_TEST

/* The URLs of a real list, in batches of 1,000, as keys are made. */
START_TEST(test_real_urls)
{
	char *path = tu_data_path(
	    "url_lists/ada_url_various_datasets/kasztp.txt");
	char *data = tu_read_file(path, NULL), *line, *save = NULL;
	const void **msgs = NULL;
	size_t *lens = NULL, n = 0, cap = 0;

	ck_assert_ptr_nonnull(data);
	for (line = strtok_r(data, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			msgs = realloc(msgs, cap * sizeof(*msgs));
			lens = realloc(lens, cap * sizeof(*lens));
			ck_assert(msgs != NULL && lens != NULL);
		}
		msgs[n] = line;
		lens[n++] = strlen(line);
	}
	ck_assert_uint_gt(n, 10000);
	for (size_t i = 0; i < n; i += 1000)
		assert_batch(msgs + i, lens + i, n - i < 1000 ? n - i : 1000);
	free(msgs);
	free(lens);
	free(data);
	free(path);
}
END_TEST

Suite *md5_suite(void);

Suite *
md5_suite(void)
{
	Suite *s = suite_create("md5");
	TCase *tc = tcase_create("md5");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_rfc1321);
	tcase_add_test(tc, test_every_length);
	tcase_add_test(tc, test_random_batches);
	tcase_add_test(tc, test_real_urls);
	suite_add_tcase(s, tc);
	return s;
}
