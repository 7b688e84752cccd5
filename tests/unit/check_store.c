/*
 * Tests for store: records, counts, deletes, metadata, scans, reopening,
 * the data directory's lock, reader slots for the most workers the
 * configuration allows, and the data file read into memory at open, on
 * real LMDB files in a temporary directory.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "config.h"
#include "store.h"
#include "testutil.h"
#include "writer.h"

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

/*
 * With the most request workers [server] workers allows, every read
 * transaction the daemon then holds begins at once: two per worker, the
 * loop's, the URL writer's two and the store writer's (config.c).  Also
 * on a directory whose lock file an earlier run made for LMDB's default of
 * 126 slots, which fell short of them.
 */
START_TEST(test_readers_cover_workers)
{
	char *dir = tu_tmpdir(), *err = NULL;
	struct store_options o = { .dir = dir, .map_size = 64 << 20,
	    .sync = STORE_SYNC_FULL };
	const unsigned held = 256 * 2 + 1 + 2 + 1;
	struct store_txn **rd;
	struct config cfg;
	struct store *st;
	const char *cause = NULL;
	uint64_t n;

	config_defaults(&cfg);
	ck_assert_int_eq(config_set(&cfg, "server", "workers", "257", &cause),
	    -1);
	ck_assert_int_eq(config_set(&cfg, "server", "workers", "256", &cause),
	    0);
	ck_assert_msg(config_validate(&cfg, &cause) == 0, "%s", cause);
	store_close(open_store(dir));
	o.max_readers = config_store_readers(&cfg);
	ck_assert_uint_ge(o.max_readers, held);
	st = store_open(&o, &err);
	ck_assert_msg(st != NULL, "store_open: %s", err);
	ck_assert_uint_ge(store_max_readers(st), held);
	ck_assert_ptr_nonnull(rd = calloc(held, sizeof(*rd)));
	for (unsigned i = 0; i < held; i++) {
		ck_assert_msg((rd[i] = store_reader_new(st)) != NULL,
		    "reader %u of %u: no slot", i + 1, held);
		ck_assert_int_eq(store_reader_begin(rd[i]), STORE_OK);
		ck_assert_int_eq(store_count(rd[i], STORE_URLS, &n), STORE_OK);
	}
	for (unsigned i = 0; i < held; i++) {
		store_reader_end(rd[i]);
		store_reader_free(rd[i]);
	}
	free(rd);
	store_close(st);
	/* The default, for a configuration of few workers. */
	config_clear(&cfg);
	config_defaults(&cfg);
	ck_assert_int_eq(config_set(&cfg, "server", "workers", "1", &cause),
	    0);
	ck_assert_uint_eq(config_store_readers(&cfg), 126);
	config_clear(&cfg);
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
	ck_assert_int_eq(store_full_state(st, NULL), STORE_FULL);
	store_abort(txn);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/*
 * LMDB's lock file, mapped writable, has every block allocated: a reader
 * slot on a page never written would fault (SIGBUS) on a full disk.
 */
START_TEST(test_lock_file_allocated)
{
	char *dir = tu_tmpdir(), *path;
	struct store *st = open_store(dir);
	struct stat sb;

	ck_assert_int_ne(asprintf(&path, "%s/lock.mdb", dir), -1);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_gt(sb.st_size, 0);
	ck_assert_int_ge((long long)sb.st_blocks * 512, (long long)sb.st_size);
	store_close(st);
	tu_rmtree(dir);
	free(path);
	free(dir);
}
END_TEST

/*
 * A write refused for want of room begins an episode, which a commit that
 * wrote ends (the temporary directory's file system has room); the
 * refusals are counted, and a commit that wrote nothing ends nothing.
 */
START_TEST(test_full_episode)
{
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct store_txn *txn;
	uint64_t refused;

	ck_assert_int_eq(store_full_state(st, &refused), 0);
	ck_assert_uint_eq(refused, 0);
	store_note_full(st, STORE_NOSPACE);
	store_note_full(st, STORE_NOSPACE);
	ck_assert_int_eq(store_full_state(st, &refused), STORE_NOSPACE);
	ck_assert_uint_eq(refused, 2);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	ck_assert_int_eq(store_full_state(st, NULL), STORE_NOSPACE);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_meta_put(txn, "k", "v"), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	ck_assert_int_eq(store_full_state(st, &refused), 0);
	ck_assert_uint_eq(refused, 2);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/*
 * The writer's group commit, with jobs that record what happens to them:
 * job 1 runs alone and holds the writer until jobs 2 to 5 are queued, so
 * they form the next group; job 4 finds the store full.
 */
struct order_job {
	struct writer_job wj;
	int n;
	bool hold, full;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool holding, released;
	int applied[16], aborted[16], done[16];
	int napplied, naborted, ndone;
	struct event_base *base;
} order = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
};

static int
order_apply(struct writer_job *wj, struct store_txn *txn)
{
	struct order_job *j = (struct order_job *)wj;

	(void)txn;
	pthread_mutex_lock(&order.lock);
	order.applied[order.napplied++] = j->n;
	if (j->hold) {
		order.holding = true;
		pthread_cond_broadcast(&order.cond);
		while (!order.released)
			pthread_cond_wait(&order.cond, &order.lock);
	}
	pthread_mutex_unlock(&order.lock);
	return j->full ? STORE_FULL : STORE_OK;
}

static void
order_committed(struct writer_job *wj)
{
	(void)wj;
}

static void
order_aborted(struct writer_job *wj)
{
	pthread_mutex_lock(&order.lock);
	order.aborted[order.naborted++] = ((struct order_job *)wj)->n;
	pthread_mutex_unlock(&order.lock);
}

static void
order_done(struct writer_job *wj)
{
	order.done[order.ndone++] = ((struct order_job *)wj)->n;
	if (order.ndone == 5)
		event_base_loopbreak(order.base);
}

/*
 * A transaction that fails takes its applied jobs back, the last first;
 * when the store was full, the jobs are then retried one per transaction
 * in the order they were queued, and only the one that does not fit fails.
 */
START_TEST(test_writer_abort_order_and_retries)
{
	static const struct writer_job_ops ops = {
		.apply = order_apply, .committed = order_committed,
		.aborted = order_aborted, .done = order_done,
	};
	static const int applied[] = { 1, 2, 3, 4, 2, 3, 4, 5 };
	static const int aborted[] = { 4, 3, 2, 4 };
	struct order_job jobs[5];
	struct timeval guard = { 20, 0 };
	char *dir = tu_tmpdir();
	struct store *st = open_store(dir);
	struct writer *w;

	order.base = event_base_new();
	ck_assert_ptr_nonnull(order.base);
	w = writer_new(st, order.base);
	ck_assert_ptr_nonnull(w);
	memset(jobs, 0, sizeof(jobs));
	for (int i = 0; i < 5; i++) {
		jobs[i].wj.ops = &ops;
		jobs[i].wj.cost = 1;
		jobs[i].n = i + 1;
	}
	jobs[0].hold = true;
	jobs[3].full = true;
	writer_submit(w, &jobs[0].wj);
	pthread_mutex_lock(&order.lock);
	while (!order.holding)
		pthread_cond_wait(&order.cond, &order.lock);
	pthread_mutex_unlock(&order.lock);
	for (int i = 1; i < 5; i++)
		writer_submit(w, &jobs[i].wj);
	pthread_mutex_lock(&order.lock);
	order.released = true;
	pthread_cond_broadcast(&order.cond);
	pthread_mutex_unlock(&order.lock);

	event_base_loopexit(order.base, &guard);
	event_base_dispatch(order.base);
	ck_assert_int_eq(order.ndone, 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(order.done[i], i + 1);
		ck_assert_int_eq(jobs[i].wj.status, i == 3 ? STORE_FULL :
		    STORE_OK);
	}
	ck_assert_int_eq(order.napplied, 8);
	ck_assert_mem_eq(order.applied, applied, sizeof(applied));
	ck_assert_int_eq(order.naborted, 4);
	ck_assert_mem_eq(order.aborted, aborted, sizeof(aborted));

	writer_stop(w);
	writer_free(w);
	event_base_free(order.base);
	store_close(st);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* The fraction of path's pages in the page cache. */
static double
resident(const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat sb;
	unsigned char *vec;
	size_t pages, in = 0;
	void *m;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	pages = ((size_t)sb.st_size + 4095) / 4096;
	m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_ptr_nonnull(vec = malloc(pages));
	ck_assert_int_eq(mincore(m, (size_t)sb.st_size, vec), 0);
	for (size_t i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	munmap(m, (size_t)sb.st_size);
	close(fd);
	return (double)in / (double)pages;
}

/* A store reopened with its file out of the page cache (as after a
 * reboot) has it read back in, whole, without a single lookup. */
START_TEST(test_warmed_at_open)
{
	char *dir = tu_tmpdir(), *path;
	struct store *st = open_store(dir);
	struct store_txn *txn;
	char val[2000];
	double before, after = 0;
	int fd;

	memset(val, 'v', sizeof(val));
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	for (uint32_t i = 0; i < 8000; i++)
		ck_assert_int_eq(store_put(txn, STORE_DOCS, &i, sizeof(i), val,
		    sizeof(val), 0, NULL), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(st);
	ck_assert_int_ne(asprintf(&path, "%s/data.mdb", dir), -1);
	ck_assert_int_ge(fd = open(path, O_RDONLY), 0);
	ck_assert_int_eq(fdatasync(fd), 0);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	close(fd);
	before = resident(path);
	if (before > 0.5) {
		/* A file system that keeps its pages (tmpfs): nothing to
		 * see. */
		fprintf(stderr, "test_warmed_at_open: skipped: %.0f%% of the "
		    "file stays in memory\n", 100 * before);
	} else {
		st = open_store(dir);
		for (int i = 0; i < 500 && (after = resident(path)) < 0.99;
		    i++)
			nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 },
			    NULL);
		ck_assert_msg(after >= 0.99, "%.0f%% of the data file in memory "
		    "before the open, %.0f%% 5 s after", 100 * before,
		    100 * after);
		store_close(st);
	}
	tu_rmtree(dir);
	free(path);
	free(dir);
}
END_TEST

Suite *store_suite(void);

Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");

	/* (test_warmed_at_open waits up to 5 s, under a sanitizer too.) */
	tcase_set_timeout(tc, 30);

	tcase_add_test(tc, test_records_and_reopen);
	tcase_add_test(tc, test_one_daemon_per_directory);
	tcase_add_test(tc, test_readers_cover_workers);
	tcase_add_test(tc, test_creates_nested_directory);
	tcase_add_test(tc, test_full_map);
	tcase_add_test(tc, test_lock_file_allocated);
	tcase_add_test(tc, test_full_episode);
	tcase_add_test(tc, test_writer_abort_order_and_retries);
	tcase_add_test(tc, test_warmed_at_open);
	suite_add_tcase(s, tc);
	return s;
}
