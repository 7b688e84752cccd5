/*
 * Tests for crc32c: the published check values, incremental use, and every
 * length and alignment against a bitwise reference written here, so that
 * whichever path the CPU takes (SSE 4.2 words and bytes, or the table) must
 * give the Castagnoli CRC itself.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "crc32c.h"
#include "testutil.h"

/* The definition, one bit at a time: nothing shared with the module. */
static uint32_t
crc32c_ref(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & -(crc & 1));
	}
	return ~crc;
}

static void
random_bytes(uint64_t *seed, uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)tu_rand(seed);
}

START_TEST(test_vectors)
{
	uint8_t buf[32];

	ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xe3069283u);
	ck_assert_uint_eq(crc32c_ref(0, (const uint8_t *)"123456789", 9),
	    0xe3069283u);
	ck_assert_uint_eq(crc32c(0, "", 0), 0);
	ck_assert_uint_eq(crc32c(0, NULL, 0), 0);
	/* RFC 3720 (iSCSI), B.4. */
	memset(buf, 0, sizeof(buf));
	ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x8a9136aau);
	memset(buf, 0xff, sizeof(buf));
	ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x46dd794eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), 0x113fdb5cu);
	/* Extending by nothing changes nothing. */
	ck_assert_uint_eq(crc32c(0xe3069283u, buf, 0), 0xe3069283u);
}
END_TEST

START_TEST(test_incremental)
{
	uint8_t buf[4096];
	uint64_t seed = 11;

	random_bytes(&seed, buf, sizeof(buf));
	for (int round = 0; round < 2000; round++) {
		size_t len = tu_rand_below(&seed, sizeof(buf) + 1);
		uint32_t whole = crc32c(0, buf, len), crc = 0;
		size_t at = 0;

		/* Up to 8 pieces at random cuts, empty ones included. */
		for (int piece = 0; piece < 8 && at < len; piece++) {
			size_t n = tu_rand_below(&seed, len - at + 1);

			crc = crc32c(crc, buf + at, n);
			at += n;
		}
		crc = crc32c(crc, buf + at, len - at);
		if (crc != whole)
			ck_abort_msg("round %d: %zu bytes in pieces give %08x, "
			    "at once %08x", round, len, crc, whole);
		if (whole != crc32c_ref(0, buf, len))
			ck_abort_msg("round %d: %zu bytes give %08x, the "
			    "reference %08x", round, len, whole,
			    crc32c_ref(0, buf, len));
	}
}
END_TEST

START_TEST(test_every_length_and_alignment)
{
	/* Every length across the 8-byte word loop and its byte tail, at
	 * every offset from a 16-byte boundary, with a non-zero start too. */
	static uint8_t buf[16 + 300] __attribute__((aligned(16)));
	uint64_t seed = 12;
	unsigned checked = 0;

	random_bytes(&seed, buf, sizeof(buf));
	for (size_t off = 0; off < 16; off++) {
		for (size_t len = 0; len <= 300; len++) {
			const uint8_t *p = buf + off;
			uint32_t want = crc32c_ref(0, p, len);
			uint32_t got = crc32c(0, p, len);
			uint32_t init = (uint32_t)(off * 0x9e3779b9u + len);

			if (got != want)
				ck_abort_msg("offset %zu, %zu bytes: %08x, the "
				    "reference %08x", off, len, got, want);
			if (crc32c(init, p, len) != crc32c_ref(init, p, len))
				ck_abort_msg("offset %zu, %zu bytes from %08x: "
				    "%08x, the reference %08x", off, len, init,
				    crc32c(init, p, len),
				    crc32c_ref(init, p, len));
			checked++;
		}
	}
	ck_assert_uint_eq(checked, 16 * 301);
}
END_TEST

START_TEST(test_detects_changes)
{
	/* Every single-bit flip in a 64-byte frame changes the CRC (a CRC
	 * detects every burst shorter than 32 bits). */
	uint8_t buf[64];
	uint64_t seed = 13;
	uint32_t base;

	random_bytes(&seed, buf, sizeof(buf));
	base = crc32c(0, buf, sizeof(buf));
	for (size_t bit = 0; bit < 8 * sizeof(buf); bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (crc32c(0, buf, sizeof(buf)) == base)
			ck_abort_msg("flipping bit %zu leaves the CRC", bit);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	ck_assert_uint_eq(crc32c(0, buf, sizeof(buf)), base);
}
END_TEST

Suite *crc32c_suite(void);

Suite *
crc32c_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("crc32c");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_incremental);
	tcase_add_test(tc, test_every_length_and_alignment);
	tcase_add_test(tc, test_detects_changes);
	suite_add_tcase(s, tc);
	return s;
}
