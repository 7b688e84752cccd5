/*
 * Tests for store: records, counts, deletes, metadata, scans, reopening,
 * and the data directory's lock, on real LMDB files in a temporary
 * directory.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store.h"
#include "testutil.h"

static struct store *
open_store(const char *dir)
{
	struct store_options o = { .dir = dir, .map_size = 64 << 20,
	    .sync = STORE_SYNC_FULL };
	char *cause = NULL;
	struct store *st = store_open(&o, &cause);

	ck_assert_msg(st != NULL, "store_open: %s", cause);
	return st;
}

static int
count_cb(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	size_t *n = arg;

	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	return ++*n == 3 ? 99 : 0;	/* stop early at the third */
}

START_TEST(test_records_and_reopen)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct store_txn *txn, *rd;
	struct store_val v;
	char key[16], buf[32];
	size_t seen = 0;
	int got;
	uint64_t n;

	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "key%04d", i);
		ck_assert_int_eq(store_put(txn, STORE_URLS, key, strlen(key),
		    &i, sizeof(i), 0, NULL), STORE_OK);
	}
	/* No-overwrite on a present key: refused, existing value shown. */
	snprintf(key, sizeof(key), "key%04d", 7);
	ck_assert_int_eq(store_put(txn, STORE_URLS, key, strlen(key), "x", 1,
	    STORE_NOOVERWRITE, &v), STORE_EXISTS);
	ck_assert_uint_eq(v.len, sizeof(int));
	/* LMDB values are not aligned: copy before reading. */
	memcpy(&got, v.data, sizeof(got));
	ck_assert_int_eq(got, 7);
	ck_assert_int_eq(store_del(txn, STORE_URLS, "key0500", 7), STORE_OK);
	ck_assert_int_eq(store_del(txn, STORE_URLS, "key0500", 7),
	    STORE_NOTFOUND);
	ck_assert_int_eq(store_meta_put(txn, "answer", "42"), STORE_OK);
	ck_assert_int_eq(store_count(txn, STORE_URLS, &n), STORE_OK);
	ck_assert_uint_eq(n, 999);
	ck_assert_int_eq(store_commit(txn), STORE_OK);

	/* An aborted transaction leaves nothing. */
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, STORE_URLS, "ghost", 5, "g", 1, 0,
	    NULL), STORE_OK);
	store_abort(txn);

	store_close(st);
	st = open_store(dir);
	rd = store_reader_new(st);
	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	ck_assert_int_eq(store_count(rd, STORE_URLS, &n), STORE_OK);
	ck_assert_uint_eq(n, 999);
	ck_assert_int_eq(store_get(rd, STORE_URLS, "key0999", 7, &v), STORE_OK);
	memcpy(&got, v.data, sizeof(got));
	ck_assert_int_eq(got, 999);
	ck_assert_int_eq(store_get(rd, STORE_URLS, "key0500", 7, &v),
	    STORE_NOTFOUND);
	ck_assert_int_eq(store_get(rd, STORE_URLS, "ghost", 5, &v),
	    STORE_NOTFOUND);
	ck_assert_int_eq(store_meta_get(rd, "answer", buf, sizeof(buf)),
	    STORE_OK);
	ck_assert_str_eq(buf, "42");
	ck_assert_int_eq(store_meta_get(rd, "answer", buf, 2), STORE_FAILED);
	store_reader_end(rd);
	store_reader_free(rd);
	ck_assert_int_eq(store_scan(st, STORE_URLS, count_cb, &seen), 99);
	ck_assert_uint_eq(seen, 3);
	ck_assert_uint_gt(store_bytes_used(st), 0);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_one_daemon_per_directory)
{
	char *dir = tu_tmpdir(), *cause = NULL;
	struct store *st = open_store(dir);
	struct store_options o = { .dir = dir, .map_size = 64 << 20 };

	ck_assert_ptr_null(store_open(&o, &cause));
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strstr(cause, "in use by another nddd") != NULL, "%s",
	    cause);
	free(cause);
	store_close(st);
	/* Released when the first closes. */
	st = open_store(dir);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_creates_nested_directory)
{
	char *dir = tu_tmpdir(), *nested;
	struct store *st;
	struct stat sb;

	ck_assert_int_ne(asprintf(&nested, "%s/a/b/c", dir), -1);
	st = open_store(nested);
	ck_assert_int_eq(stat(nested, &sb), 0);
	ck_assert(S_ISDIR(sb.st_mode));
	store_close(st);
	tu_rmtree(dir);
	free(nested);
	free(dir);
}
END_TEST

START_TEST(test_full_map)
{
	char *dir = tu_tmpdir(), *cause = NULL;
	struct store_options o = { .dir = dir, .map_size = 1 << 20 };
	struct store *st = store_open(&o, &cause);
	struct store_txn *txn;
	char key[32], val[200] = { 0 };
	int rc = STORE_OK, i;

	ck_assert_ptr_nonnull(st);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	for (i = 0; i < 100000 && rc == STORE_OK; i++) {
		snprintf(key, sizeof(key), "k%08d", i);
		rc = store_put(txn, STORE_URLS, key, strlen(key), val,
		    sizeof(val), 0, NULL);
	}
	ck_assert_int_eq(rc, STORE_FULL);
	store_abort(txn);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

Suite *store_suite(void);

Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");

	tcase_add_test(tc, test_records_and_reopen);
	tcase_add_test(tc, test_one_daemon_per_directory);
	tcase_add_test(tc, test_creates_nested_directory);
	tcase_add_test(tc, test_full_map);
	suite_add_tcase(s, tc);
	return s;
}
