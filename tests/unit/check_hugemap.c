/*
 * Tests for hugemap: a mapping starts on a huge-page boundary, is as long
 * as the pages asked for (not rounded to a huge page), reads as zeroes and
 * takes writes; populated, every page is resident at once, and not
 * populated, none is until written.  An aligned mapping starts on the
 * boundary asked for and ends where asked.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hugemap.h"

/* Pages of [p, p + len) resident now. */
static size_t
resident(void *p, size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = 0;
	unsigned char vec[4096];

	ck_assert_uint_le(len / page, sizeof(vec));
	ck_assert_int_eq(mincore(p, len, vec), 0);
	for (size_t i = 0; i < (len + page - 1) / page; i++)
		n += vec[i] & 1;
	return n;
}

START_TEST(test_shape)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t asks[] = { 1, page, page + 1, HUGEMAP_PAGE, 3 * HUGEMAP_PAGE +
	    5 * page + 17 };

	for (size_t i = 0; i < sizeof(asks) / sizeof(asks[0]); i++) {
		size_t mapped = 0;
		unsigned char *p = hugemap_new(asks[i], false, &mapped);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % HUGEMAP_PAGE, 0);
		ck_assert_uint_eq(mapped % page, 0);
		ck_assert_uint_ge(mapped, asks[i]);
		ck_assert_uint_lt(mapped - asks[i], page);
		ck_assert_uint_eq(resident(p, mapped), 0);
		for (size_t j = 0; j < mapped; j += 997)
			ck_assert_uint_eq(p[j], 0);
		memset(p, 0xa5, asks[i]);
		ck_assert_uint_eq(p[asks[i] - 1], 0xa5);
		/* Past the mapping: not mapped (mincore refuses it). */
		{
			unsigned char v;

			ck_assert_int_eq(mincore(p + mapped, page, &v), -1);
		}
		hugemap_free(p, mapped);
	}
	hugemap_free(NULL, 0);
}
END_TEST

START_TEST(test_populate)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), mapped;
	size_t len = HUGEMAP_PAGE + 3 * page;
	void *p = hugemap_new(len, true, &mapped);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(mapped, len);
	ck_assert_uint_eq(resident(p, mapped), mapped / page);
	hugemap_free(p, mapped);
}
END_TEST

START_TEST(test_aligned)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t aligns[] = { page, (size_t)64 << 10, HUGEMAP_PAGE,
	    2 * HUGEMAP_PAGE };

	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		size_t len = aligns[i] + 3 * page;
		unsigned char *p = hugemap_aligned(len, aligns[i]), v;

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % aligns[i], 0);
		memset(p, 1, len);
		ck_assert_int_eq(mincore(p + len, page, &v), -1);
		hugemap_free(p, len);
	}
}
END_TEST

Suite *hugemap_suite(void);

Suite *
hugemap_suite(void)
{
	Suite *s = suite_create("hugemap");
	TCase *tc = tcase_create("hugemap");

	tcase_add_test(tc, test_shape);
	tcase_add_test(tc, test_populate);
	tcase_add_test(tc, test_aligned);
	suite_add_tcase(s, tc);
	return s;
}
