/*
 * Tests for defer: the store writer's deferred commits and the store
 * journal, on real LMDB files.  What a reader sees before and after a
 * checkpoint; what survives a crash (the store closed with groups only
 * in the journal, a torn frame after them), against a model of every
 * acknowledged group; groups too large; another thread that wants to
 * write.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "defer.h"
#include "store.h"
#include "testutil.h"

#define JOURNAL_SIZE (1u << 20)

static struct store *
open_store(const char *dir, size_t journal)
{
	struct store_options o = { .dir = dir, .map_size = 64 << 20,
	    .sync = STORE_SYNC_FULL, .journal_size = journal };
	char *cause = NULL;
	struct store *st = store_open(&o, &cause);

	ck_assert_msg(st != NULL, "store_open: %s", cause);
	return st;
}

/* What a reader begun now finds under key of STORE_DOCS: its value's
 * first byte, or -1 if none. */
static int
read_key(struct store *st, enum store_table t, const char *key)
{
	struct store_txn *rd = store_reader_new(st);
	struct store_val v;
	int rc, got = -1;

	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	rc = store_get(rd, t, key, strlen(key), &v);
	ck_assert(rc == STORE_OK || rc == STORE_NOTFOUND);
	if (rc == STORE_OK)
		got = v.len > 0 ? ((const uint8_t *)v.data)[0] : 0;
	store_reader_end(rd);
	store_reader_free(rd);
	return got;
}

/* One group putting key = val (a byte) and deleting del, if not NULL. */
static int
group(struct store *st, const char *key, int val, const char *del)
{
	struct store_txn *txn;
	uint8_t b = (uint8_t)val;

	ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
	if (key != NULL)
		ck_assert_int_eq(store_put(txn, STORE_DOCS, key, strlen(key),
		    &b, 1, 0, NULL), STORE_OK);
	if (del != NULL)
		ck_assert_int_eq(store_del(txn, STORE_DOCS, del, strlen(del)),
		    STORE_OK);
	return defer_group_end(txn);
}

/*
 * A journaled group is seen by readers at once, through their view, not
 * by counts (LMDB's); a crash (the store closed with nothing committed)
 * keeps it: the next open applies the journal.
 */
START_TEST(test_group_seen_and_kept)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir, JOURNAL_SIZE);
	struct store_txn *rd;
	struct defer_stats ds;
	uint64_t n;

	ck_assert_int_eq(group(st, "a", 1, NULL), STORE_OK);
	ck_assert_int_eq(group(st, "b", 2, NULL), STORE_OK);
	ck_assert_int_eq(group(st, "a", 3, "b"), STORE_OK);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "a"), 3);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "b"), -1);
	rd = store_reader_new(st);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	ck_assert_int_eq(store_count(rd, STORE_DOCS, &n), STORE_OK);
	ck_assert_uint_eq(n, 0);
	store_reader_end(rd);
	store_reader_free(rd);
	defer_stats(st, &ds);
	ck_assert_uint_eq(ds.frames, 3);
	ck_assert_uint_eq(ds.syncs, 3);
	ck_assert_uint_eq(ds.checkpoints, 0);
	ck_assert_uint_gt(ds.journal_bytes, 0);
	store_close(st);	/* as a crash leaves it: nothing committed */

	st = open_store(dir, JOURNAL_SIZE);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "a"), 3);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "b"), -1);
	rd = store_reader_new(st);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	ck_assert_int_eq(store_count(rd, STORE_DOCS, &n), STORE_OK);
	ck_assert_uint_eq(n, 1);	/* in LMDB now */
	store_reader_end(rd);
	store_reader_free(rd);
	defer_stats(st, &ds);
	ck_assert_uint_eq(ds.journal_bytes, 0);
	/* Applied once: a second crash and open changes nothing. */
	store_close(st);
	st = open_store(dir, JOURNAL_SIZE);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "a"), 3);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/*
 * A checkpoint commits what is held: a reader begun before it keeps its
 * view (and its snapshot) and sees the same; one begun after reads LMDB
 * and a new, empty view.  An aborted group leaves nothing, in the view or
 * the journal.
 */
START_TEST(test_checkpoint_and_abort)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir, JOURNAL_SIZE);
	struct store_txn *old, *txn, *rd;
	struct store_val v;
	struct defer_stats ds;
	uint64_t n;

	ck_assert_int_eq(group(st, "k", 7, NULL), STORE_OK);
	old = store_reader_new(st);
	ck_assert_int_eq(store_reader_begin(old), STORE_OK);
	ck_assert(defer_holding(st));
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	ck_assert(!defer_holding(st));
	ck_assert_int_eq(store_get(old, STORE_DOCS, "k", 1, &v), STORE_OK);
	ck_assert_uint_eq(((const uint8_t *)v.data)[0], 7);
	store_reader_end(old);
	store_reader_free(old);
	rd = store_reader_new(st);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	ck_assert_int_eq(store_count(rd, STORE_DOCS, &n), STORE_OK);
	ck_assert_uint_eq(n, 1);
	store_reader_end(rd);
	store_reader_free(rd);
	defer_stats(st, &ds);
	ck_assert_uint_eq(ds.checkpoints, 1);
	ck_assert_uint_eq(ds.journal_bytes, 0);
	ck_assert_uint_eq(ds.pending, 0);

	ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, STORE_DOCS, "x", 1, "x", 1, 0, NULL),
	    STORE_OK);
	store_abort(txn);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "x"), -1);
	defer_stats(st, &ds);
	ck_assert_uint_eq(ds.journal_bytes, 0);
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "x"), -1);
	/* Nothing held: a checkpoint is a no-op. */
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	defer_stats(st, &ds);
	ck_assert_uint_eq(ds.checkpoints, 2);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* A group larger than what is left is refused whole, nothing changed;
 * after a checkpoint a fitting one goes through; one larger than the
 * whole journal never fits. */
START_TEST(test_journal_full)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir, JOURNAL_SIZE);
	struct store_txn *txn;
	static uint8_t big[300 * 1024];
	char key[32];

	memset(big, 'b', sizeof(big));
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "big%d", i);
		ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
		ck_assert_int_eq(store_put(txn, STORE_DOCS, key, strlen(key),
		    big, sizeof(big), 0, NULL), STORE_OK);
		ck_assert_int_eq(defer_group_end(txn), STORE_OK);
	}
	ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, STORE_DOCS, "big3", 4, big,
	    sizeof(big), 0, NULL), STORE_OK);
	ck_assert_int_eq(defer_group_end(txn), STORE_JOURNAL_FULL);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "big3"), -1);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "big2"), 'b');
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, STORE_DOCS, "big3", 4, big,
	    sizeof(big), 0, NULL), STORE_OK);
	ck_assert_int_eq(defer_group_end(txn), STORE_OK);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "big3"), 'b');
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "huge%d", i);
		ck_assert_int_eq(store_put(txn, STORE_DOCS, key, strlen(key),
		    big, sizeof(big), 0, NULL), STORE_OK);
	}
	ck_assert_int_eq(defer_group_end(txn), STORE_JOURNAL_FULL);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "huge0"), -1);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/*
 * The model: random groups of puts and deletes over a few hundred keys,
 * checkpoints now and then, and crashes: the store closed as it stands,
 * sometimes with a torn frame written after the last one (a group that
 * was never acknowledged).  After each, every key reads as the groups
 * acknowledged left it, through a reader's view before a checkpoint and
 * from LMDB after a reopen.
 */
enum { MODEL_KEYS = 300, MODEL_GROUPS = 600 };

static void
check_model(struct store *st, const int *model)
{
	char key[16];

	for (int k = 0; k < MODEL_KEYS; k++) {
		snprintf(key, sizeof(key), "key%d", k);
		ck_assert_msg(read_key(st, k % 2 ? STORE_DOCS : STORE_META,
		    key) == model[k], "key %d: %d, not %d", k, read_key(st,
		    k % 2 ? STORE_DOCS : STORE_META, key), model[k]);
	}
}

/* Writes garbage that looks like the start of a frame at the journal's
 * next offset: what a crash in the middle of a write leaves. */
static void
tear(const char *dir, uint64_t offset)
{
	char *path = NULL;
	uint8_t junk[64];
	int fd;

	ck_assert_int_ne(asprintf(&path, "%s/store.journal", dir), -1);
	fd = open(path, O_WRONLY);
	ck_assert_int_ne(fd, -1);
	memset(junk, 0xa5, sizeof(junk));
	memcpy(junk, "SJF1", 4);
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), (off_t)offset),
	    (ssize_t)sizeof(junk));
	close(fd);
	free(path);
}

START_TEST(test_crash_model)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir, JOURNAL_SIZE);
	int model[MODEL_KEYS];
	uint64_t seed = 2026;
	int crashes = 0, checkpoints = 0;

	for (int k = 0; k < MODEL_KEYS; k++)
		model[k] = -1;
	for (int g = 0; g < MODEL_GROUPS; g++) {
		struct store_txn *txn;
		int next[MODEL_KEYS];
		size_t ops = 1 + tu_rand_below(&seed, 40);
		char key[16];

		memcpy(next, model, sizeof(next));
		ck_assert_int_eq(defer_group_begin(st, &txn), STORE_OK);
		for (size_t o = 0; o < ops; o++) {
			int k = (int)tu_rand_below(&seed, MODEL_KEYS);
			enum store_table t = k % 2 ? STORE_DOCS : STORE_META;
			uint8_t v = (uint8_t)tu_rand_below(&seed, 200);
			int rc;

			snprintf(key, sizeof(key), "key%d", k);
			if (tu_rand_below(&seed, 4) == 0) {
				rc = store_del(txn, t, key, strlen(key));
				ck_assert_int_eq(rc, next[k] >= 0 ? STORE_OK :
				    STORE_NOTFOUND);
				next[k] = -1;
			} else {
				ck_assert_int_eq(store_put(txn, t, key,
				    strlen(key), &v, 1, 0, NULL), STORE_OK);
				next[k] = v;
			}
		}
		if (tu_rand_below(&seed, 10) == 0) {
			store_abort(txn);	/* a failed job's group */
		} else {
			ck_assert_int_eq(defer_group_end(txn), STORE_OK);
			memcpy(model, next, sizeof(model));
		}
		if (tu_rand_below(&seed, 8) == 0)
			check_model(st, model);
		if (tu_rand_below(&seed, 15) == 0) {
			ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
			checkpoints++;
		}
		if (tu_rand_below(&seed, 25) == 0) {
			struct defer_stats ds;

			defer_stats(st, &ds);
			store_close(st);
			if (tu_rand_below(&seed, 2) == 0)
				tear(dir, ds.journal_bytes);
			st = open_store(dir, JOURNAL_SIZE);
			check_model(st, model);
			crashes++;
		}
	}
	ck_assert_int_gt(crashes, 5);
	ck_assert_int_gt(checkpoints, 5);
	store_close(st);
	st = open_store(dir, JOURNAL_SIZE);
	check_model(st, model);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* The keys a scan gives, concatenated with their values' first byte. */
static int
scan_cb(const void *k, size_t kl, const void *v, size_t vl, void *arg)
{
	char *out = arg;
	size_t n = strlen(out);

	snprintf(out + n, 256 - n, "%.*s=%c ", (int)kl, (const char *)k,
	    vl > 0 ? *(const char *)v : '-');
	return 0;
}

/*
 * Scans merge the view with LMDB in key order: a key the view holds is
 * the view's (deleted: left out), the rest LMDB's; from a key on, too.
 */
START_TEST(test_scan_merges_view)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir, JOURNAL_SIZE);
	struct store_txn *rd;
	char seen[256] = "";

	ck_assert_int_eq(group(st, "b", 'b', NULL), STORE_OK);
	ck_assert_int_eq(group(st, "d", 'd', NULL), STORE_OK);
	ck_assert_int_eq(group(st, "f", 'f', NULL), STORE_OK);
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	ck_assert_int_eq(group(st, "a", 'a', "d"), STORE_OK);
	ck_assert_int_eq(group(st, "e", 'e', NULL), STORE_OK);
	ck_assert_int_eq(group(st, "f", 'F', NULL), STORE_OK);
	ck_assert_int_eq(group(st, "g", 'g', NULL), STORE_OK);
	ck_assert_int_eq(store_scan(st, STORE_DOCS, scan_cb, seen), STORE_OK);
	ck_assert_str_eq(seen, "a=a b=b e=e f=F g=g ");
	rd = store_reader_new(st);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	seen[0] = '\0';
	ck_assert_int_eq(store_scan_from(rd, STORE_DOCS, "c", 1, scan_cb,
	    seen), STORE_OK);
	ck_assert_str_eq(seen, "e=e f=F g=g ");
	store_reader_end(rd);
	store_reader_free(rd);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* The fault hook's victim, by name. */
static const char *failing;

static int
fail_named(const char *call)
{
	return failing != NULL && strcmp(call, failing) == 0;
}

/*
 * A group whose frame cannot be written fails alone: the held transaction
 * is built again from the journal, holding the groups before it and not
 * it.  A checkpoint whose commit fails keeps everything held (built again
 * too), and the next one commits it; a crash meanwhile loses nothing
 * acknowledged.
 */
START_TEST(test_failures_rebuild)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir, JOURNAL_SIZE);
	struct defer_stats ds;

	store_fault_hook = fail_named;
	ck_assert_int_eq(group(st, "a", 1, NULL), STORE_OK);
	failing = "journal";
	ck_assert_int_eq(group(st, "b", 2, NULL), STORE_FAILED);
	failing = NULL;
	ck_assert_int_eq(read_key(st, STORE_DOCS, "a"), 1);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "b"), -1);
	ck_assert_int_eq(group(st, "c", 3, NULL), STORE_OK);

	failing = "checkpoint";
	ck_assert_int_eq(defer_checkpoint(st), STORE_FAILED);
	failing = NULL;
	ck_assert(defer_holding(st));
	ck_assert_int_eq(read_key(st, STORE_DOCS, "c"), 3);
	ck_assert_int_eq(group(st, "d", 4, NULL), STORE_OK);
	defer_stats(st, &ds);
	ck_assert_uint_eq(ds.failures, 2);
	ck_assert_uint_eq(ds.checkpoints, 0);
	ck_assert_int_eq(defer_checkpoint(st), STORE_OK);
	store_fault_hook = NULL;
	store_close(st);

	st = open_store(dir, JOURNAL_SIZE);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "a"), 1);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "b"), -1);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "c"), 3);
	ck_assert_int_eq(read_key(st, STORE_DOCS, "d"), 4);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* Another thread's write transaction: it asks the holder to checkpoint
 * and waits for it, then goes through. */
struct other {
	struct store *st;
	bool asked;		/* atomic */
	bool done;		/* atomic */
};

static void
on_wanted(void *arg)
{
	struct other *o = arg;

	__atomic_store_n(&o->asked, true, __ATOMIC_RELEASE);
}

static void *
other_writer(void *arg)
{
	struct other *o = arg;
	struct store_txn *txn;

	ck_assert_int_eq(store_write_begin(o->st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, STORE_URLS, "u", 1, "u", 1, 0, NULL),
	    STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	__atomic_store_n(&o->done, true, __ATOMIC_RELEASE);
	return NULL;
}

START_TEST(test_other_writer)
{
	char *dir = tu_tmpdir();
	struct other o = { .st = open_store(dir, JOURNAL_SIZE) };
	pthread_t th;
	double until;

	defer_on_wanted(o.st, on_wanted, &o);
	ck_assert_int_eq(group(o.st, "d", 4, NULL), STORE_OK);
	pthread_create(&th, NULL, other_writer, &o);
	until = tu_now() + 10;
	while (!__atomic_load_n(&o.asked, __ATOMIC_ACQUIRE) && tu_now() < until)
		usleep(1000);
	ck_assert(__atomic_load_n(&o.asked, __ATOMIC_ACQUIRE));
	ck_assert(!__atomic_load_n(&o.done, __ATOMIC_ACQUIRE));
	ck_assert(defer_checkpoint_due(o.st, 0));
	ck_assert_int_eq(defer_checkpoint(o.st), STORE_OK);
	pthread_join(th, NULL);
	ck_assert(o.done);
	ck_assert_int_eq(read_key(o.st, STORE_URLS, "u"), 'u');
	ck_assert_int_eq(read_key(o.st, STORE_DOCS, "d"), 4);
	/* And the writer goes on with a new held transaction. */
	ck_assert_int_eq(group(o.st, "e", 5, NULL), STORE_OK);
	ck_assert_int_eq(read_key(o.st, STORE_DOCS, "e"), 5);
	store_close(o.st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

Suite *defer_suite(void);

Suite *
defer_suite(void)
{
	Suite *s = suite_create("defer");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_group_seen_and_kept);
	tcase_add_test(tc, test_checkpoint_and_abort);
	tcase_add_test(tc, test_journal_full);
	tcase_add_test(tc, test_scan_merges_view);
	tcase_add_test(tc, test_crash_model);
	tcase_add_test(tc, test_failures_rebuild);
	tcase_add_test(tc, test_other_writer);
	suite_add_tcase(s, tc);
	return s;
}
