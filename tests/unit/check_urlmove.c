/*
 * Tests for moving URLs to a new shard (urlmove.c): an export session's
 * pages and changed keys, imported into a second set, must leave it with
 * exactly the keys that move, in the states the first set has them, while
 * the first set is written to during the export; importing the same keys
 * with count 0 into the first set then removes them exactly, counters
 * included.  On real stores, with small journals and segments so that
 * flushes and merges run during the session.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "jumphash.h"
#include "store.h"
#include "testutil.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL		1200
#define NNS		2
#define GROUP		48

static const char *ns_names[NNS] = { "", "crawl2" };

struct pool_url {
	char canon[96];
	size_t clen;
	uint8_t digest[CBF_FP_LEN];
	struct url_key key[NNS];		/* in each namespace */
};

struct side {
	char *dir;
	struct store *st;
	struct urlset *us;
	struct urlset_reader *rd;
};

static struct pool_url pool[POOL];

static void
side_open(struct side *sd, bool host_index)
{
	struct store_options so = { .map_size = 256 << 20,
	    .sync = STORE_SYNC_NONE };
	struct urlset_options uo = { .capacity = 20000,
	    .journal_entries = 128, .segment_records = 16,
	    .keep_expired_ms = 3600 * 1000, .host_index = host_index };
	char *cause = NULL;

	sd->dir = tu_tmpdir();
	so.dir = sd->dir;
	sd->st = store_open(&so, &cause);
	ck_assert_msg(sd->st != NULL, "%s", cause ? cause : "store_open");
	sd->us = urlset_open(sd->st, sd->dir, &uo, &cause);
	ck_assert_msg(sd->us != NULL, "%s", cause ? cause : "urlset_open");
	sd->rd = urlset_reader_new(sd->us);
	ck_assert_ptr_nonnull(sd->rd);
}

static void
side_close(struct side *sd)
{
	urlset_reader_free(sd->rd);
	urlset_free(sd->us);
	store_close(sd->st);
	tu_rmtree(sd->dir);
	free(sd->dir);
}

/* The pool's URLs, on hosts a.example and b.example. */
static void
make_pool(struct urlset *us)
{
	struct url_keyer *k = urlset_keyer_new(us);
	struct urlset_ns_mask mask;
	const char *canon, *why;
	char url[96];

	ck_assert_ptr_nonnull(k);
	urlset_ns_mask(ns_names[1], strlen(ns_names[1]), &mask);
	for (int i = 0; i < POOL; i++) {
		struct pool_url *p = &pool[i];
		size_t clen;

		snprintf(url, sizeof(url), "http://%c.example/page/%d",
		    i % 2 ? 'b' : 'a', i);
		ck_assert_int_eq(urlset_key_canonical(k, url, strlen(url),
		    &p->key[0], &canon, &clen, &why), 0);
		ck_assert_uint_lt(clen, sizeof(p->canon));
		memcpy(p->canon, canon, clen);
		p->clen = clen;
		memcpy(p->digest, p->key[0].fp, CBF_FP_LEN);
		p->key[1] = p->key[0];
		urlset_key_masked(us, &mask, &p->key[1]);
	}
	urlset_keyer_free(k);
}

/* A submit or delete of n pool URLs of which[] in namespace nsi. */
static void
apply(struct urlset *us, enum urlset_op op, int nsi, uint64_t ttl_ms,
    const int *which, size_t n)
{
	struct url_key keys[GROUP];
	struct url_state states[GROUP];
	struct url_text texts[GROUP];
	struct urlset_job job;

	memset(&job, 0, sizeof(job));
	job.op = op;
	job.durability = URLSET_RELAXED;
	strcpy(job.ns, ns_names[nsi]);
	job.ttl_ms = ttl_ms;
	for (size_t i = 0; i < n; i++) {
		keys[i] = pool[which[i]].key[nsi];
		texts[i].p = pool[which[i]].canon;
		texts[i].len = pool[which[i]].clen;
		job.text_bytes += texts[i].len;
	}
	job.keys = keys;
	job.n = n;
	job.states = states;
	if (op == URLSET_SUBMIT)
		job.texts = texts;
	urlset_apply_group(us, &job);
	ck_assert_int_eq(job.status, STORE_OK);
}

/* A random group: mostly submits (some with a time to live that has
 * already passed, some with a long one), some deletes. */
static void
random_group(struct urlset *us, uint64_t *seed)
{
	int which[GROUP];
	size_t n = 1 + tu_rand_below(seed, GROUP);
	int nsi = (int)tu_rand_below(seed, NNS);
	uint64_t r = tu_rand_below(seed, 10), ttl = 0;

	for (size_t i = 0; i < n; i++)
		which[i] = (int)tu_rand_below(seed, POOL);
	if (r == 0)
		ttl = 1;
	else if (r == 1)
		ttl = 86400 * 1000;
	apply(us, r < 7 ? URLSET_SUBMIT : URLSET_DELETE, nsi, ttl, which, n);
}

/* Every pool URL's stored state in namespace nsi, expired ones with their
 * times. */
static void
raw_states(struct side *sd, int nsi, struct url_state *out)
{
	struct url_key keys[POOL];
	struct urlset_tally tally = { 0 };
	uint32_t id = urlns_find(urlset_namespaces(sd->us), ns_names[nsi],
	    strlen(ns_names[nsi]), NULL);

	memset(out, 0, POOL * sizeof(*out));
	if (id == URLNS_NONE)
		return;
	for (int i = 0; i < POOL; i++)
		keys[i] = pool[i].key[nsi];
	ck_assert_int_eq(urlset_check(sd->us, sd->rd, id, clock_wall_ms(),
	    keys, NULL, POOL, out, &tally), STORE_OK);
}

static bool
same_state(const struct url_state *a, const struct url_state *b)
{
	return a->count == b->count && a->first_seen_ms == b->first_seen_ms &&
	    a->last_seen_ms == b->last_seen_ms && a->expires_ms == b->expires_ms;
}

static void
import(struct urlset *us, struct url_moved *m, size_t n)
{
	struct urlset_job job;

	memset(&job, 0, sizeof(job));
	job.op = URLSET_IMPORT;
	job.durability = URLSET_RELAXED;
	job.moved = m;
	job.nmoved = n;
	ck_assert_int_eq(urlset_import(us, &job), STORE_OK);
}

static void
begin(struct urlset *us, uint32_t shards, uint32_t place)
{
	struct urlset_job job;

	memset(&job, 0, sizeof(job));
	job.op = URLSET_EXPORT_BEGIN;
	job.shards = shards;
	job.place = place;
	ck_assert_int_eq(urlset_flush(us, true), STORE_OK);
	ck_assert_int_eq(urlset_export_begin(us, &job), STORE_OK);
	ck_assert(urlset_export_open(us));
}

static void
verify(struct urlset *us, const char *what)
{
	struct urlset_verify v;

	ck_assert_int_eq(urlset_flush(us, true), STORE_OK);
	ck_assert_int_eq(urlset_verify_store(us, &v), STORE_OK);
	if (v.counter_mismatches != 0 || v.index_mismatches != 0)
		ck_abort_msg("%s: verify: %llu counters, %llu index: %s", what,
		    (unsigned long long)v.counter_mismatches,
		    (unsigned long long)v.index_mismatches, v.detail);
}

/* The keys a transfer moved, to remove from the source. */
struct handed {
	struct url_moved *v;
	size_t n, cap;
};

static void
hand_off(struct handed *h, const struct url_moved *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (m[i].text_only)
			continue;
		if (h->n == h->cap) {
			h->cap = h->cap ? 2 * h->cap : 256;
			h->v = realloc(h->v, h->cap * sizeof(*h->v));
			ck_assert_ptr_nonnull(h->v);
		}
		memset(&h->v[h->n], 0, sizeof(h->v[h->n]));
		memcpy(h->v[h->n].digest, m[i].digest, CBF_FP_LEN);
		memcpy(h->v[h->n].ns, m[i].ns, sizeof(m[i].ns));
		h->n++;
	}
}

/* Pages the whole session into dst, with writes to src between pages. */
static void
transfer_pages(struct side *src, struct side *dst, struct handed *h,
    uint32_t shards, uint32_t place, uint64_t *seed)
{
	uint64_t cursor = 0;
	bool done = false;
	int pages = 0;

	while (!done) {
		struct url_moved *m;
		size_t n;

		ck_assert_int_eq(urlset_export_page(src->us, &cursor,
		    1 + tu_rand_below(seed, 40), &m, &n, &done), STORE_OK);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_ne(jump_hash_owner(m[i].digest,
			    shards), place);
			ck_assert(m[i].text_only || m[i].st.count > 0);
		}
		import(dst->us, m, n);
		hand_off(h, m, n);
		urlset_moved_free(m);
		if (tu_rand_below(seed, 2) == 0)
			random_group(src->us, seed);
		ck_assert_int_lt(++pages, 100000);
	}
}

/* Takes the changed keys into dst until none is left, with a few writes
 * to src between the first calls. */
static void
transfer_changed(struct side *src, struct side *dst, struct handed *h,
    uint64_t *seed)
{
	struct urlset_job job;
	int calls = 0;

	do {
		memset(&job, 0, sizeof(job));
		job.op = URLSET_EXPORT_CHANGED;
		job.n = 1 + tu_rand_below(seed, 60);
		ck_assert_int_eq(urlset_export_changed(src->us, &job),
		    STORE_OK);
		ck_assert_uint_le(job.nmoved, job.n);
		for (size_t i = 0; i < job.nmoved; i++)
			ck_assert(!job.moved[i].text_only);
		import(dst->us, job.moved, job.nmoved);
		hand_off(h, job.moved, job.nmoved);
		urlset_moved_free(job.moved);
		if (calls++ < 10)
			random_group(src->us, seed);
	} while (job.more || calls <= 10);
}

static void
model_run(uint32_t place, uint64_t seed)
{
	struct side a, b;
	struct handed h = { NULL, 0, 0 };
	static struct url_state sa[NNS][POOL], sb[NNS][POOL], before[NNS][POOL];
	struct urlset_stats stats;
	uint64_t records = 0;
	int moving = 0;

	side_open(&a, true);
	side_open(&b, true);
	make_pool(a.us);
	for (int g = 0; g < 200; g++)
		random_group(a.us, &seed);
	begin(a.us, 4, place);
	transfer_pages(&a, &b, &h, 4, place, &seed);
	for (int g = 0; g < 20; g++)
		random_group(a.us, &seed);
	transfer_changed(&a, &b, &h, &seed);
	urlset_export_end(a.us);
	ck_assert(!urlset_export_open(a.us));

	/* The second set holds exactly the keys that move, as the first
	 * has them. */
	for (int j = 0; j < NNS; j++) {
		raw_states(&a, j, sa[j]);
		raw_states(&b, j, sb[j]);
		for (int i = 0; i < POOL; i++) {
			bool moves = jump_hash_owner(pool[i].digest, 4) !=
			    place;
			static const struct url_state none;

			if (moves && !same_state(&sa[j][i], &sb[j][i]))
				ck_abort_msg("place %u: URL %d in ns %d: "
				    "count %u first %llu, imported count %u "
				    "first %llu", place, i, j, sa[j][i].count,
				    (unsigned long long)sa[j][i].first_seen_ms,
				    sb[j][i].count,
				    (unsigned long long)sb[j][i].first_seen_ms);
			if (!moves && !same_state(&sb[j][i], &none))
				ck_abort_msg("place %u: URL %d in ns %d stays, "
				    "yet was imported", place, i, j);
			if (moves && sa[j][i].first_seen_ms != 0)
				records++;
			moving += moves;
		}
	}
	ck_assert_int_gt(moving, POOL / 2);
	ck_assert_uint_gt(records, 100);
	urlset_stats(b.us, &stats);
	ck_assert_uint_eq(stats.urls, records);
	verify(b.us, "the importing set");

	/* The source drops what it handed off, and nothing else. */
	memcpy(before, sa, sizeof(before));
	import(a.us, h.v, h.n);
	for (int j = 0; j < NNS; j++) {
		raw_states(&a, j, sa[j]);
		for (int i = 0; i < POOL; i++) {
			static const struct url_state none;
			bool moves = jump_hash_owner(pool[i].digest, 4) !=
			    place;

			if (!same_state(&sa[j][i], moves ? &none :
			    &before[j][i]))
				ck_abort_msg("place %u: URL %d in ns %d "
				    "after the hand-off: count %u", place, i,
				    j, sa[j][i].count);
		}
	}
	verify(a.us, "the exporting set after the hand-off");
	free(h.v);
	side_close(&a);
	side_close(&b);
}

START_TEST(test_export_import_against_model)
{
	for (uint32_t place = 0; place < 3; place++)
		model_run(place, 101 + place);
}
END_TEST

/* Forgets host's URLs in namespace nsi; returns how many. */
static uint64_t
forget_host(struct urlset *us, int nsi, const char *host, bool *complete)
{
	struct urlset_forget f;
	struct urlset_job job;

	memset(&f, 0, sizeof(f));
	f.host = host;
	f.hlen = strlen(host);
	memset(&job, 0, sizeof(job));
	job.op = URLSET_FORGET;
	strcpy(job.ns, ns_names[nsi]);
	job.forget = &f;
	ck_assert_int_eq(urlset_forget(us, &job), STORE_OK);
	*complete = f.complete;
	return f.forgotten;
}

START_TEST(test_moved_urls_forgotten_by_host)
{
	struct side a, b;
	struct handed h = { NULL, 0, 0 };
	static struct url_state sb[POOL];
	uint64_t cursor = 0, want[NNS] = { 0, 0 };
	int which[GROUP];
	bool done = false, complete;
	struct urlset_job job;

	side_open(&a, true);
	side_open(&b, true);
	make_pool(a.us);
	/* The first half stored before the session, the second half during
	 * it: the snapshot's texts and the changed keys' both move. */
	for (int at = 0; at < POOL; at += GROUP) {
		size_t n = POOL - at < GROUP ? (size_t)(POOL - at) : GROUP;

		if (at == POOL / 2 / GROUP * GROUP)
			begin(a.us, 2, 0);
		for (size_t i = 0; i < n; i++)
			which[i] = at + (int)i;
		for (int j = 0; j < NNS; j++)
			apply(a.us, URLSET_SUBMIT, j, 0, which, n);
	}
	while (!done) {
		struct url_moved *m;
		size_t n;

		ck_assert_int_eq(urlset_export_page(a.us, &cursor, 100, &m,
		    &n, &done), STORE_OK);
		import(b.us, m, n);
		urlset_moved_free(m);
	}
	do {
		memset(&job, 0, sizeof(job));
		job.op = URLSET_EXPORT_CHANGED;
		job.n = 100;
		ck_assert_int_eq(urlset_export_changed(a.us, &job), STORE_OK);
		for (size_t i = 0; i < job.nmoved; i++)
			ck_assert_ptr_nonnull(job.moved[i].text);
		import(b.us, job.moved, job.nmoved);
		hand_off(&h, job.moved, job.nmoved);
		urlset_moved_free(job.moved);
	} while (job.more);
	ck_assert_uint_gt(h.n, 0);
	urlset_export_end(a.us);

	for (int i = 0; i < POOL; i++)
		if (i % 2 == 0 && jump_hash_owner(pool[i].digest, 2) != 0)
			for (int j = 0; j < NNS; j++)
				want[j]++;
	for (int j = 0; j < NNS; j++) {
		ck_assert_uint_eq(forget_host(b.us, j, "a.example",
		    &complete), want[j]);
		/* The snapshot's records came without their texts: the
		 * index says it may miss some. */
		ck_assert(!complete);
		raw_states(&b, j, sb);
		for (int i = 0; i < POOL; i++) {
			bool moves = jump_hash_owner(pool[i].digest, 2) != 0;

			ck_assert_uint_eq(sb[i].count, moves && i % 2 == 1);
		}
	}
	verify(b.us, "after the forget");
	free(h.v);
	side_close(&a);
	side_close(&b);
}
END_TEST

START_TEST(test_sessions)
{
	struct side a;
	struct url_moved *m;
	struct urlset_job job;
	uint64_t cursor = 0, seed = 3;
	size_t n, total = 0, want = 0;
	int which[GROUP];
	bool done;

	side_open(&a, false);
	make_pool(a.us);
	/* No session: pages fail, an end does nothing. */
	ck_assert(!urlset_export_open(a.us));
	ck_assert_int_eq(urlset_export_page(a.us, &cursor, 10, &m, &n,
	    &done), STORE_FAILED);
	ck_assert_ptr_null(m);
	urlset_export_end(a.us);
	memset(&job, 0, sizeof(job));
	job.op = URLSET_EXPORT_CHANGED;
	job.n = 10;
	ck_assert_int_eq(urlset_export_changed(a.us, &job), STORE_FAILED);

	for (int i = 0; i < GROUP; i++)
		which[i] = i;
	apply(a.us, URLSET_SUBMIT, 0, 0, which, GROUP);
	begin(a.us, 2, 0);
	for (int i = 0; i < GROUP; i++)
		which[i] = GROUP + i;
	apply(a.us, URLSET_SUBMIT, 0, 0, which, GROUP);
	ck_assert_int_eq(urlset_export_page(a.us, &cursor, 5, &m, &n, &done),
	    STORE_OK);
	urlset_moved_free(m);

	/* A second BEGIN starts afresh: its snapshot, its list, no changed
	 * keys. */
	begin(a.us, 3, 1);
	memset(&job, 0, sizeof(job));
	job.op = URLSET_EXPORT_CHANGED;
	job.n = 1000;
	ck_assert_int_eq(urlset_export_changed(a.us, &job), STORE_OK);
	ck_assert_uint_eq(job.nmoved, 0);
	ck_assert(!job.more);
	for (int i = 0; i < 2 * GROUP; i++)
		want += jump_hash_owner(pool[i].digest, 3) != 1;
	cursor = 0;
	do {
		ck_assert_int_eq(urlset_export_page(a.us, &cursor,
		    1 + tu_rand_below(&seed, 7), &m, &n, &done), STORE_OK);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_ne(jump_hash_owner(m[i].digest, 3), 1);
			ck_assert_uint_eq(m[i].st.count, 1);
			ck_assert_str_eq(m[i].ns, "");
		}
		total += n;
		urlset_moved_free(m);
	} while (!done);
	ck_assert_uint_eq(total, want);
	/* A page asked again answers the same. */
	for (int again = 0; again < 2; again++) {
		struct url_moved *m2;
		size_t n2;
		uint64_t c1 = 0, c2 = 0;

		ck_assert_int_eq(urlset_export_page(a.us, &c1, 4, &m, &n,
		    &done), STORE_OK);
		ck_assert_int_eq(urlset_export_page(a.us, &c2, 4, &m2, &n2,
		    &done), STORE_OK);
		ck_assert_uint_eq(c1, c2);
		ck_assert_uint_eq(n, n2);
		for (size_t i = 0; i < n; i++)
			ck_assert_mem_eq(m[i].digest, m2[i].digest,
			    CBF_FP_LEN);
		urlset_moved_free(m);
		urlset_moved_free(m2);
	}

	/* A place off the list is refused, the session kept. */
	memset(&job, 0, sizeof(job));
	job.op = URLSET_EXPORT_BEGIN;
	job.shards = 2;
	job.place = 2;
	ck_assert_int_eq(urlset_export_begin(a.us, &job), STORE_FAILED);
	ck_assert_ptr_nonnull(job.refused);
	ck_assert(urlset_export_open(a.us));
	urlset_export_end(a.us);
	ck_assert(!urlset_export_open(a.us));
	cursor = 0;
	ck_assert_int_eq(urlset_export_page(a.us, &cursor, 10, &m, &n,
	    &done), STORE_FAILED);
	side_close(&a);
}
END_TEST

Suite *urlmove_suite(void);

Suite *
urlmove_suite(void)
{
	Suite *s = suite_create("urlmove");
	TCase *tc = tcase_create("urlmove");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_export_import_against_model);
	tcase_add_test(tc, test_moved_urls_forgotten_by_host);
	tcase_add_test(tc, test_sessions);
	suite_add_tcase(s, tc);
	return s;
}
