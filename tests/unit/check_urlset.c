/*
 * Tests for urlset on a real store and journal file: the write path
 * (groups, journal, flushes, merges) against an exact model, with crashes
 * injected between its steps, and the IMP-CBFilter invariant throughout.
 *
 * With capacity 1 the filter has one block of 128 counters that every URL
 * shares, so counters saturate constantly; with 4 records per segment and
 * a journal of 64 entries, flushes and merges run all the time.  After
 * every step each counter must equal min(15, the number of stored URLs
 * naming it), counted from the model (not from the store or the filter),
 * and every URL's count must be the model's.  A crash (the set dropped
 * with nothing flushed, then opened again) must lose nothing acknowledged,
 * and a group is all or nothing: applied if its journal frame was written,
 * absent if not.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cbf.h"
#include "clock.h"
#include "le.h"
#include "store.h"
#include "testutil.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL 300
#define GROUP_KEYS 64

struct fixture {
	char *dir;
	struct store *st;
	struct urlset *us;
	struct url_keyer *k;
	struct urlset_reader *rd;
	struct urlset_options opts;
	struct url_key keys[POOL];
};

static void
open_set(struct fixture *fx, char **cause)
{
	/* No fsync: a crash here is the process's, not the machine's. */
	struct store_options so = { .dir = fx->dir, .map_size = 64 << 20,
	    .sync = STORE_SYNC_NONE };

	*cause = NULL;
	fx->st = store_open(&so, cause);
	ck_assert_msg(fx->st != NULL, "%s", *cause ? *cause : "store_open");
	fx->us = urlset_open(fx->st, fx->dir, &fx->opts, cause);
	if (fx->us == NULL)
		return;
	fx->k = urlset_keyer_new(fx->us);
	fx->rd = urlset_reader_new(fx->us);
	ck_assert_ptr_nonnull(fx->k);
	ck_assert_ptr_nonnull(fx->rd);
}

/* Drops the set as a crash would: nothing more reaches the disk. */
static void
drop_set(struct fixture *fx)
{
	urlset_reader_free(fx->rd);
	urlset_keyer_free(fx->k);
	urlset_free(fx->us);
	store_close(fx->st);
	fx->rd = NULL;
	fx->k = NULL;
	fx->us = NULL;
	fx->st = NULL;
}

static void
reopen(struct fixture *fx)
{
	char *cause;

	drop_set(fx);
	open_set(fx, &cause);
	ck_assert_msg(fx->us != NULL, "reopen: %s", cause);
}

/* The keys of http://HOST/0 ... /POOL-1. */
static void
make_keys(struct fixture *fx, const char *host)
{
	char url[96];
	const char *why;

	for (int u = 0; u < POOL; u++) {
		snprintf(url, sizeof(url), "http://%s/%d", host, u);
		ck_assert_int_eq(urlset_key(fx->k, url, strlen(url),
		    &fx->keys[u], &why), 0);
	}
}

/* The counts of every URL of the pool, as a check answers them. */
static void
observe(struct fixture *fx, uint32_t *out)
{
	struct url_state states[POOL];
	struct urlset_tally tally = { 0 };

	ck_assert_int_eq(urlset_check(fx->us, fx->rd, URLNS_DEFAULT,
	    clock_wall_ms(), fx->keys, NULL, POOL, states, &tally), STORE_OK);
	for (int u = 0; u < POOL; u++)
		out[u] = states[u].count;
}

static void
assert_matches(struct fixture *fx, const uint32_t *model, const char *when)
{
	uint32_t got[POOL];
	const struct cbf *f = urlset_filter(fx->us);
	uint64_t naming[CBF_BLOCK] = { 0 };

	observe(fx, got);
	for (int u = 0; u < POOL; u++)
		if (got[u] != model[u])
			ck_abort_msg("%s: URL %d has count %u, the model %u",
			    when, u, got[u], model[u]);
	/* The filter, against the model's stored URLs. */
	for (int u = 0; u < POOL; u++)
		if (model[u] > 0)
			for (int i = 0; i < CBF_K; i++)
				naming[fx->keys[u].idx[i]]++;
	for (int i = 0; i < CBF_BLOCK; i++) {
		uint64_t want = naming[i] < CBF_MAX_COUNT ? naming[i] :
		    CBF_MAX_COUNT;

		if (cbf_counter(f, i) != want ||
		    cbf_true_count(f, i) != naming[i])
			ck_abort_msg("%s: counter %d is %u (true %llu), %llu "
			    "stored URLs name it", when, i, cbf_counter(f, i),
			    (unsigned long long)cbf_true_count(f, i),
			    (unsigned long long)naming[i]);
	}
}

/* Crash injection: fires once, at the armed point. */
static int crash_armed = -1;
static int crashed;

static bool
crash_hook(enum urlset_crash_point point)
{
	if ((int)point != crash_armed)
		return false;
	crash_armed = -1;
	crashed = 1;
	return true;
}

struct test_job {
	struct urlset_job uj;
	int pool[GROUP_KEYS];
	struct url_key keys[GROUP_KEYS];
	struct url_state states[GROUP_KEYS];
	bool answered;
};

static void
test_job_done(struct urlset_job *uj)
{
	((struct test_job *)uj)->answered = true;
}

/* Applies the job to a model, giving the counts it should answer. */
static void
model_apply(uint32_t *model, const struct test_job *j, uint64_t *want)
{
	for (size_t i = 0; i < j->uj.n; i++) {
		uint32_t *c = &model[j->pool[i]];

		if (j->uj.op == URLSET_DELETE) {
			want[i] = *c;
			*c = 0;
		} else
			want[i] = ++*c;
	}
}

static void
verify_consistent(struct fixture *fx, const char *when)
{
	struct urlset_verify v;

	ck_assert_int_eq(urlset_flush(fx->us, true), STORE_OK);
	ck_assert_int_eq(urlset_verify_store(fx->us, &v), STORE_OK);
	if (v.counter_mismatches != 0 || v.index_mismatches != 0)
		ck_abort_msg("%s: verify: %llu counters, %llu index: %s", when,
		    (unsigned long long)v.counter_mismatches,
		    (unsigned long long)v.index_mismatches, v.detail);
}

START_TEST(test_write_path_against_model_with_crashes)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	uint32_t model[POOL] = { 0 }, after[POOL], got[POOL];
	uint64_t seed = 11, want[4][GROUP_KEYS];
	struct test_job jobs[4];
	struct urlset_stats st;
	int crashes = 0, saturated = 0, step, armed;
	char when[64];
	uint64_t flushes = 0, merges = 0;
	char *cause;

	fx.opts = (struct urlset_options){ .capacity = 1,
	    .journal_entries = GROUP_KEYS, .segment_records = 4 };
	open_set(&fx, &cause);
	ck_assert_msg(fx.us != NULL, "%s", cause);
	make_keys(&fx, "model.example");
	urlset_crash_hook = crash_hook;
	for (step = 0; step < 3000; step++) {
		int what = (int)tu_rand_below(&seed, 10);
		bool crash = tu_rand_below(&seed, 8) == 0;

		if (what < 7) {
			/* A group: a few jobs of one durability; phases
			 * push the population up past saturation, then
			 * down. */
			int njobs = 1 + (int)tu_rand_below(&seed, 3);
			int grow = (step / 400) % 2 == 0 ? 80 : 30;
			size_t room = GROUP_KEYS;
			enum urlset_durability dur = tu_rand_below(&seed, 2) ?
			    URLSET_DURABLE : URLSET_RELAXED;

			memcpy(after, model, sizeof(after));
			for (int j = 0; j < njobs; j++) {
				struct test_job *t = &jobs[j];
				size_t n = 1 + tu_rand_below(&seed, room /
				    (size_t)(njobs - j));

				memset(t, 0, sizeof(*t));
				room -= n;
				t->uj.op = (int)tu_rand_below(&seed, 100) <
				    grow ? URLSET_SUBMIT : URLSET_DELETE;
				t->uj.durability = dur;
				t->uj.keys = t->keys;
				t->uj.n = n;
				t->uj.states = t->states;
				t->uj.done = test_job_done;
				t->uj.next = j + 1 < njobs ? &jobs[j + 1].uj :
				    NULL;
				for (size_t i = 0; i < n; i++) {
					t->pool[i] = (int)tu_rand_below(&seed,
					    POOL);
					t->keys[i] = fx.keys[t->pool[i]];
				}
				model_apply(after, t, want[j]);
			}
			armed = crash_armed = crash ? URLSET_CRASH_STAGED +
			    (int)tu_rand_below(&seed, 3) : -1;
			crashed = 0;
			urlset_apply_group(fx.us, &jobs[0].uj);
			if (crashed) {
				/* All or nothing: the frame decides. */
				crashes++;
				urlset_stats(fx.us, &st);
				flushes += st.flushes;
				merges += st.merges;
				reopen(&fx);
				observe(&fx, got);
				if (armed == URLSET_CRASH_STAGED ?
				    memcmp(got, model, sizeof(got)) != 0 :
				    memcmp(got, after, sizeof(got)) != 0)
					ck_abort_msg("step %d: after a crash at "
					    "point %d the group is not %s", step,
					    armed, armed == URLSET_CRASH_STAGED
					    ? "absent" : "applied");
				if (armed != URLSET_CRASH_STAGED)
					memcpy(model, after, sizeof(model));
			} else {
				for (int j = 0; j < njobs; j++) {
					ck_assert(jobs[j].answered);
					ck_assert_int_eq(jobs[j].uj.status,
					    STORE_OK);
					for (size_t i = 0; i < jobs[j].uj.n;
					    i++)
						if (jobs[j].states[i].count !=
						    want[j][i])
							ck_abort_msg("step %d:"
							    " job %d item %zu "
							    "answered %llu, "
							    "model %llu", step,
							    j, i,
							    (unsigned long long)
							    jobs[j].states[i].count,
							    (unsigned long long)
							    want[j][i]);
				}
				memcpy(model, after, sizeof(model));
			}
		} else if (what < 9) {
			crash_armed = crash ? URLSET_CRASH_FLUSH_WRITTEN +
			    (int)tu_rand_below(&seed, 2) : -1;
			crashed = 0;
			if (urlset_flush(fx.us, true) != STORE_OK)
				ck_assert_msg(crashed, "a flush failed");
			if (crashed) {
				crashes++;
				urlset_stats(fx.us, &st);
				flushes += st.flushes;
				merges += st.merges;
				reopen(&fx);
			}
		} else {
			bool did;

			crash_armed = crash ? URLSET_CRASH_MERGE_WRITTEN +
			    (int)tu_rand_below(&seed, 2) : -1;
			crashed = 0;
			if (urlset_merge_step(fx.us, &did, false) != STORE_OK)
				ck_assert_msg(crashed, "a merge failed");
			if (crashed) {
				crashes++;
				urlset_stats(fx.us, &st);
				flushes += st.flushes;
				merges += st.merges;
				reopen(&fx);
			}
		}
		crash_armed = -1;
		saturated += cbf_stat_saturated(urlset_filter(fx.us)) > 0;
		snprintf(when, sizeof(when), "step %d (%s%s)", step,
		    what < 7 ? "group" : what < 9 ? "flush" : "merge",
		    crashed ? ", crashed" : "");
		assert_matches(&fx, model, when);
		if (step % 250 == 249)
			verify_consistent(&fx, "periodic");
	}
	urlset_crash_hook = NULL;
	urlset_stats(fx.us, &st);
	flushes += st.flushes;
	merges += st.merges;
	/* A clean close and open keep everything too. */
	verify_consistent(&fx, "at the end");
	reopen(&fx);
	assert_matches(&fx, model, "after the last reopen");
	verify_consistent(&fx, "after the last reopen");
	ck_assert_msg(crashes > 100, "only %d crashes", crashes);
	ck_assert_msg(saturated > 500, "saturation too rare: %d", saturated);
	ck_assert_msg(flushes > 200 && merges > 200, "flushes %llu, merges "
	    "%llu: too few to test", (unsigned long long)flushes,
	    (unsigned long long)merges);
	drop_set(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/* Jobs in one group see each other: a URL submitted twice is new, then a
 * duplicate; deleted and submitted again, new. */
START_TEST(test_group_sees_its_own_changes)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct test_job a, b;
	char *cause;

	fx.opts = (struct urlset_options){ .capacity = 1000 };
	open_set(&fx, &cause);
	ck_assert_msg(fx.us != NULL, "%s", cause);
	make_keys(&fx, "group.example");
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.uj = (struct urlset_job){ .op = URLSET_SUBMIT, .keys = a.keys,
	    .n = 3, .states = a.states, .done = test_job_done,
	    .next = &b.uj };
	a.keys[0] = a.keys[1] = fx.keys[1];
	a.keys[2] = fx.keys[2];
	b.uj = (struct urlset_job){ .op = URLSET_DELETE, .keys = b.keys,
	    .n = 2, .states = b.states, .done = test_job_done };
	b.keys[0] = fx.keys[1];
	b.keys[1] = fx.keys[3];
	urlset_apply_group(fx.us, &a.uj);
	ck_assert(a.answered && b.answered);
	ck_assert_uint_eq(a.states[0].count, 1);
	ck_assert_uint_eq(a.states[1].count, 2);
	ck_assert_uint_eq(a.states[2].count, 1);
	ck_assert_uint_eq(b.states[0].count, 2);
	ck_assert_uint_eq(b.states[1].count, 0);
	drop_set(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_fixed_settings_are_enforced)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	char *cause;

	fx.opts = (struct urlset_options){ .capacity = 1000 };
	open_set(&fx, &cause);
	ck_assert_ptr_nonnull(fx.us);
	drop_set(&fx);
	fx.opts.capacity = 2000;
	open_set(&fx, &cause);
	ck_assert_ptr_null(fx.us);
	ck_assert_msg(strstr(cause, "urls.cbf_m") != NULL, "%s", cause);
	free(cause);
	drop_set(&fx);
	fx.opts.capacity = 1000;
	fx.opts.canon.sort_query = true;
	open_set(&fx, &cause);
	ck_assert_ptr_null(fx.us);
	ck_assert_msg(strstr(cause, "sort_query") != NULL, "%s", cause);
	free(cause);
	drop_set(&fx);
	fx.opts.canon.sort_query = false;
	open_set(&fx, &cause);
	ck_assert_ptr_nonnull(fx.us);
	drop_set(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

static char *
read_store(const char *dir, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	return tu_read_file(path, len);
}

/* A store of a newer format is refused, and not one byte of it changes. */
START_TEST(test_newer_format_is_refused_unchanged)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct store_txn *txn;
	char *cause, *before, *after;
	size_t blen, alen;

	fx.opts = (struct urlset_options){ .capacity = 1000 };
	open_set(&fx, &cause);
	ck_assert_ptr_nonnull(fx.us);
	/* A set's readers and keyers go before it does. */
	urlset_reader_free(fx.rd);
	urlset_keyer_free(fx.k);
	fx.rd = NULL;
	fx.k = NULL;
	urlset_free(fx.us);
	fx.us = NULL;
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	ck_assert_int_eq(store_meta_put(txn, "urls.format", "5"), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(fx.st);
	fx.st = NULL;
	before = read_store(fx.dir, &blen);
	ck_assert_ptr_nonnull(before);
	open_set(&fx, &cause);
	ck_assert_ptr_null(fx.us);
	ck_assert_msg(strstr(cause, "format 5") != NULL &&
	    strstr(cause, "nothing was changed") != NULL, "%s", cause);
	free(cause);
	drop_set(&fx);
	after = read_store(fx.dir, &alen);
	ck_assert_ptr_nonnull(after);
	ck_assert_uint_eq(alen, blen);
	ck_assert_msg(memcmp(before, after, blen) == 0,
	    "the refused store changed");
	free(before);
	free(after);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/*
 * A format 1 store (one record per URL, as nddd 0.1 wrote it) is upgraded
 * to segments with every count and time kept, also when the upgrade is
 * cut short and resumed.
 */
START_TEST(test_format1_store_is_upgraded)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct store_options so = { .dir = fx.dir, .map_size = 64 << 20,
	    .sync = STORE_SYNC_NONE };
	struct store_txn *txn;
	uint32_t got[POOL], want[POOL];
	char *cause;
	struct url_key k;

	/* The filter's shape first, to derive format 1's indices. */
	fx.opts = (struct urlset_options){ .capacity = 1000 };
	open_set(&fx, &cause);
	ck_assert_ptr_nonnull(fx.us);
	make_keys(&fx, "v1.example");
	drop_set(&fx);
	tu_rmtree(fx.dir);
	ck_assert_int_eq(mkdir(fx.dir, 0700), 0);

	fx.st = store_open(&so, &cause);
	ck_assert_ptr_nonnull(fx.st);
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	/* As nddd 0.1 recorded them: 1000 x 20 counters, whole blocks. */
	ck_assert_int_eq(store_meta_put(txn, "urls.format", "1"), STORE_OK);
	ck_assert_int_eq(store_meta_put(txn, "urls.cbf_m", "20096"), STORE_OK);
	for (int u = 0; u < POOL; u++) {
		uint8_t v[56] = { 0 };

		k = fx.keys[u];
		want[u] = u % 7 == 0 ? 0 : (uint32_t)(1 + u % 5);
		if (want[u] == 0)
			continue;
		le_put32(v, want[u]);
		le_put64(v + 8, 1000 + (uint64_t)u);
		le_put64(v + 16, 2000 + (uint64_t)u);
		for (int i = 0; i < CBF_K; i++)
			le_put32(v + 24 + 4 * i, k.idx[i]);
		ck_assert_int_eq(store_put(txn, STORE_URLS, k.fp, CBF_FP_LEN,
		    v, sizeof(v), 0, NULL), STORE_OK);
	}
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(fx.st);
	fx.st = NULL;

	/* Cut short after the first batch of 100, then resumed. */
	urlset_migrate_batch = 100;
	urlset_crash_hook = crash_hook;
	crash_armed = URLSET_CRASH_MIGRATED_BATCH;
	open_set(&fx, &cause);
	ck_assert_ptr_null(fx.us);
	ck_assert(crashed);
	free(cause);
	urlset_crash_hook = NULL;
	drop_set(&fx);
	open_set(&fx, &cause);
	ck_assert_msg(fx.us != NULL, "%s", cause);
	urlset_migrate_batch = 16 * URLSEG_MAX;
	observe(&fx, got);
	for (int u = 0; u < POOL; u++)
		if (got[u] != want[u])
			ck_abort_msg("URL %d: %u after the upgrade, %u before",
			    u, got[u], want[u]);
	verify_consistent(&fx, "after the upgrade");
	drop_set(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

Suite *urlset_suite(void);

Suite *
urlset_suite(void)
{
	Suite *s = suite_create("urlset");
	TCase *tc = tcase_create("urlset");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_write_path_against_model_with_crashes);
	tcase_add_test(tc, test_group_sees_its_own_changes);
	tcase_add_test(tc, test_fixed_settings_are_enforced);
	tcase_add_test(tc, test_newer_format_is_refused_unchanged);
	tcase_add_test(tc, test_format1_store_is_upgraded);
	suite_add_tcase(s, tc);
	return s;
}
