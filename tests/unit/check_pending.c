/*
 * Tests for pending: the readers' view of writes not committed yet.
 * Against a model (the last value written per key), and with readers
 * running while the writer replaces values: a reader finds a key's
 * value whole, as it was written at some point, never a mix.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pending.h"
#include "testutil.h"

static void
key_of(uint64_t i, uint8_t key[16])
{
	memset(key, 0, 16);
	memcpy(key, &i, sizeof(i));
}

/* The model's idea of one key: never written, deleted, or a value of
 * vlen bytes of one byte b. */
struct model_key {
	uint8_t state;		/* 0 absent, 1 deleted, 2 a value */
	uint8_t b;
	size_t vlen;
};

/*
 * Random sets and deletes of keys of two tables and several lengths (a
 * key of another length or table is another key), against the last
 * write of each; keys never written are absent.
 */
START_TEST(test_model)
{
	enum { KEYS = 5000, ROUNDS = 40000 };
	struct pending *p = pending_new();
	struct model_key *model = calloc(2 * KEYS, sizeof(*model));
	uint64_t seed = 11, distinct = 0;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(model);
	for (int r = 0; r < ROUNDS; r++) {
		uint64_t i = tu_rand_below(&seed, KEYS);
		unsigned t = (unsigned)tu_rand_below(&seed, 2);
		struct model_key *m = &model[t * KEYS + i];
		uint8_t key[16], val[40];

		key_of(i, key);
		if (m->state == 0)
			distinct++;
		m->state = tu_rand_below(&seed, 5) == 0 ? 1 : 2;
		m->b = (uint8_t)tu_rand(&seed);
		m->vlen = (size_t)tu_rand_below(&seed, sizeof(val) + 1);
		memset(val, m->b, sizeof(val));
		ck_assert_int_eq(pending_set(p, t, key, 8 + i % 9, val,
		    m->vlen, m->state == 1), 0);
	}
	ck_assert_uint_eq(pending_count(p), distinct);
	for (unsigned t = 0; t < 2; t++)
		for (uint64_t i = 0; i < KEYS; i++) {
			const struct model_key *m = &model[t * KEYS + i];
			const uint8_t *val;
			size_t vlen;
			uint8_t key[32] = { 0 };

			key_of(i, key);
			ck_assert_int_eq(pending_get(p, t, key, 8 + i % 9,
			    (const void **)&val, &vlen), m->state != 0);
			/* Written under one length, absent under another. */
			ck_assert_int_eq(pending_get(p, t, key, 17,
			    (const void **)&val, &vlen), 0);
			if (m->state == 0)
				continue;
			ck_assert_int_eq(pending_get(p, t, key, 8 + i % 9,
			    (const void **)&val, &vlen), 1);
			if (m->state == 1) {
				ck_assert_ptr_null(val);
				continue;
			}
			ck_assert_ptr_nonnull(val);
			ck_assert_uint_eq(vlen, m->vlen);
			for (size_t b = 0; b < vlen; b++)
				ck_assert_uint_eq(val[b], m->b);
		}
	free(model);
	pending_free(p);
}
END_TEST

/* The map takes PENDING_MAX distinct keys, then refuses new ones (not new
 * values of present ones). */
START_TEST(test_full)
{
	struct pending *p = pending_new();
	uint8_t key[16];
	const void *val;
	size_t vlen;

	ck_assert_ptr_nonnull(p);
	for (uint64_t i = 0; i < PENDING_MAX; i++) {
		key_of(i, key);
		ck_assert_int_eq(pending_set(p, 3, key, 8, "v", 1, false), 0);
	}
	key_of(PENDING_MAX, key);
	ck_assert_int_eq(pending_set(p, 3, key, 8, "v", 1, false), -1);
	ck_assert_int_eq(pending_get(p, 3, key, 8, &val, &vlen), 0);
	key_of(5, key);
	ck_assert_int_eq(pending_set(p, 3, key, 8, "w", 1, false), 0);
	ck_assert_int_eq(pending_get(p, 3, key, 8, &val, &vlen), 1);
	ck_assert_int_eq(memcmp(val, "w", 1), 0);
	ck_assert_uint_eq(pending_count(p), PENDING_MAX);
	ck_assert_uint_gt(pending_bytes(p), (size_t)PENDING_MAX * 8);
	pending_free(p);
}
END_TEST

/* Values of up to 4 MiB, more than a chunk, and an empty value. */
START_TEST(test_large_values)
{
	struct pending *p = pending_new();
	size_t big = 4u << 20;
	uint8_t *v = malloc(big);
	const void *got;
	size_t glen;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < big; i++)
		v[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(pending_set(p, 1, "a", 1, "x", 1, false), 0);
	ck_assert_int_eq(pending_set(p, 1, "big", 3, v, big, false), 0);
	ck_assert_int_eq(pending_set(p, 1, "b", 1, "", 0, false), 0);
	ck_assert_int_eq(pending_get(p, 1, "big", 3, &got, &glen), 1);
	ck_assert_uint_eq(glen, big);
	ck_assert_int_eq(memcmp(got, v, big), 0);
	ck_assert_int_eq(pending_get(p, 1, "a", 1, &got, &glen), 1);
	ck_assert_int_eq(memcmp(got, "x", 1), 0);
	ck_assert_int_eq(pending_get(p, 1, "b", 1, &got, &glen), 1);
	ck_assert_ptr_nonnull(got);	/* present, empty: not deleted */
	ck_assert_uint_eq(glen, 0);
	free(v);
	pending_free(p);
}
END_TEST

/* Readers beside the writer. */
enum { RACE_KEYS = 512, RACE_WRITES = 200000 };

struct race {
	struct pending *p;
	bool done;		/* atomic */
	uint64_t seen;
	bool torn;
};

/* A value is 32 bytes of one byte, the key's number mod 256. */
static void *
race_reader(void *arg)
{
	struct race *r = arg;
	uint64_t seed = 5;

	while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
		uint64_t i = tu_rand_below(&seed, RACE_KEYS);
		uint8_t key[16];
		const uint8_t *val;
		size_t vlen;

		key_of(i, key);
		if (pending_get(r->p, 0, key, 8, (const void **)&val,
		    &vlen) == 0)
			continue;
		r->seen++;
		if (val == NULL)
			continue;
		if (vlen != 32 || val[0] != i % 256) {
			r->torn = true;
			continue;
		}
		for (size_t b = 1; b < vlen; b++)
			if (val[b] != val[0])
				r->torn = true;
	}
	return NULL;
}

START_TEST(test_readers_during_writes)
{
	struct race r = { .p = pending_new() };
	pthread_t th[2];
	uint64_t seed = 9;

	ck_assert_ptr_nonnull(r.p);
	for (int t = 0; t < 2; t++)
		pthread_create(&th[t], NULL, race_reader, &r);
	for (int w = 0; w < RACE_WRITES; w++) {
		uint64_t i = tu_rand_below(&seed, RACE_KEYS);
		uint8_t key[16], val[32];

		key_of(i, key);
		/* Every version of a key's value is the same bytes, in a
		 * new place: a reader sees them whole or not at all. */
		memset(val, (int)(i % 256), sizeof(val));
		ck_assert_int_eq(pending_set(r.p, 0, key, 8, val, sizeof(val),
		    tu_rand_below(&seed, 10) == 0), 0);
	}
	__atomic_store_n(&r.done, true, __ATOMIC_RELEASE);
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	ck_assert(!r.torn);
	ck_assert_uint_le(pending_count(r.p), RACE_KEYS);
	pending_free(r.p);
}
END_TEST

Suite *pending_suite(void);

Suite *
pending_suite(void)
{
	Suite *s = suite_create("pending");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_model);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_large_values);
	tcase_add_test(tc, test_readers_during_writes);
	suite_add_tcase(s, tc);
	return s;
}
