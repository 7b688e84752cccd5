/*
 * Tests for urlwriter (the URL writer): groups of submits and deletes in
 * several namespaces, with times to live, applied through
 * urlset_apply_group against a model kept here (one state per URL and
 * namespace, updated by the rules urlset.h states: a submit of a URL seen
 * counts it again, of one not seen (absent, expired) records it anew with
 * a new time to live; a delete answers the state before, if seen), on a
 * real store with a small journal so that groups flush as they go; the
 * answers, urlset_current_states, checks, the statistics and the states
 * after a reopen (clean, or as a crash leaves it: the journal replayed)
 * must all be the model's.  Then the writer thread itself (urlset_start,
 * urlset_submit_job, urlset_stop) with namespaces set and dropped through
 * its jobs; the journal's fdatasyncs by durability; and a full store,
 * which must refuse whole groups and lose nothing acknowledged.
 *
 * Wall time is the test's (clock_wall_source), so that times to live
 * pass exactly when the test says.
 */
#include <check.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "store.h"
#include "testutil.h"
#include "urlfixture.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL		300
#define NNS		3
#define MAX_JOBS	4
#define JOB_KEYS	24
#define T0		1700000000000ULL

static const char *ns_names[NNS] = { "", "alpha", "beta" };

/* The test's wall clock. */
static uint64_t fake_now = T0;

static uint64_t
fake_clock(void)
{
	return __atomic_load_n(&fake_now, __ATOMIC_RELAXED);
}

/* The keys of the test's URLs (make_keys). */
static struct url_key pool_keys[NNS][POOL];

/* http://w<u % 7>.example/page/<u> in each namespace. */
static void
make_keys(struct url_fixture *fx)
{
	struct url_keyer *k = urlset_keyer_new(fx->us);
	struct urlset_ns_mask mask;
	const char *why;
	char url[96];

	ck_assert_ptr_nonnull(k);
	for (int u = 0; u < POOL; u++) {
		snprintf(url, sizeof(url), "http://w%d.example/page/%d", u % 7,
		    u);
		ck_assert_int_eq(urlset_key(k, url, strlen(url),
		    &pool_keys[0][u], &why), 0);
	}
	for (int n = 1; n < NNS; n++) {
		urlset_ns_mask(ns_names[n], strlen(ns_names[n]), &mask);
		for (int u = 0; u < POOL; u++) {
			pool_keys[n][u] = pool_keys[0][u];
			urlset_key_masked(fx->us, &mask, &pool_keys[n][u]);
		}
	}
	urlset_keyer_free(k);
}

static uint32_t
ns_id(struct url_fixture *fx, int nsi)
{
	return urlns_find(urlset_namespaces(fx->us), ns_names[nsi],
	    strlen(ns_names[nsi]), NULL);
}

/* The model: every URL's state in each namespace (count 0: no record),
 * and what the statistics should have counted since the set was opened. */
struct model {
	struct url_state st[NNS][POOL];
	uint64_t added, dup, deleted;
};

static bool
model_seen(const struct url_state *st, uint64_t now)
{
	return st->count > 0 && (st->expires_ms == 0 || st->expires_ms > now);
}

static uint64_t
model_live(const struct model *m)
{
	uint64_t n = 0;

	for (int s = 0; s < NNS; s++)
		for (int u = 0; u < POOL; u++)
			n += m->st[s][u].count > 0;
	return n;
}

/* Applies a job to the model; ans[i] is what it should answer (ns left
 * 0: the caller compares it with the namespace's id). */
static void
model_job(struct model *m, enum urlset_op op, int nsi, uint64_t ttl,
    uint64_t now, const int *which, size_t n, struct url_state *ans)
{
	for (size_t i = 0; i < n; i++) {
		struct url_state *st = &m->st[nsi][which[i]];
		bool seen = model_seen(st, now);

		if (op == URLSET_DELETE) {
			memset(&ans[i], 0, sizeof(ans[i]));
			if (seen) {
				ans[i] = *st;
				m->deleted++;
			}
			memset(st, 0, sizeof(*st));
			continue;
		}
		if (seen) {
			st->count++;
			st->last_seen_ms = now;
			m->dup++;
		} else {
			st->count = 1;
			st->first_seen_ms = st->last_seen_ms = now;
			st->expires_ms = ttl != 0 ? now + ttl : 0;
			m->added++;
		}
		ans[i] = *st;
	}
}

static void
assert_state(const struct url_state *got, const struct url_state *want,
    uint32_t id, const char *what, int nsi, int u)
{
	if (got->count != want->count || (want->count > 0 &&
	    (got->first_seen_ms != want->first_seen_ms ||
	    got->last_seen_ms != want->last_seen_ms ||
	    got->expires_ms != want->expires_ms || got->ns != id)))
		ck_abort_msg("%s: ns %d URL %d: count %u ns %u first %llu last "
		    "%llu expires %llu; the model: count %u ns %u first %llu "
		    "last %llu expires %llu", what, nsi, u, got->count, got->ns,
		    (unsigned long long)got->first_seen_ms,
		    (unsigned long long)got->last_seen_ms,
		    (unsigned long long)got->expires_ms, want->count, id,
		    (unsigned long long)want->first_seen_ms,
		    (unsigned long long)want->last_seen_ms,
		    (unsigned long long)want->expires_ms);
}

/* Every URL's stored state (urlset_current_states: expired records too)
 * and what a check of each namespace answers, against the model. */
static void
assert_model(struct url_fixture *fx, const struct model *m, const char *when)
{
	struct url_state got[POOL], want;
	struct urlset_tally tally = { 0 };
	char what[96];

	for (int s = 0; s < NNS; s++) {
		uint32_t id = ns_id(fx, s);

		snprintf(what, sizeof(what), "%s, current state", when);
		ck_assert_int_eq(urlset_current_states(fx->us, pool_keys[s],
		    POOL, got), STORE_OK);
		for (int u = 0; u < POOL; u++) {
			/* A dropped namespace's record the sweep has not
			 * forgotten yet is no one's. */
			if (m->st[s][u].count == 0 && got[u].count > 0 &&
			    got[u].ns != id && urlns_dropping(
			    urlset_namespaces(fx->us), got[u].ns))
				continue;
			assert_state(&got[u], &m->st[s][u], id, what, s, u);
		}
		if (id == URLNS_NONE)
			continue;
		snprintf(what, sizeof(what), "%s, check", when);
		ck_assert_int_eq(urlset_check(fx->us, fx->rd, id,
		    fake_clock(), pool_keys[s], NULL, POOL, got, &tally),
		    STORE_OK);
		for (int u = 0; u < POOL; u++) {
			want = m->st[s][u];
			if (want.count > 0 && !model_seen(&want, fake_clock()))
				want.count = 0;	/* expired: times kept */
			if (want.count == 0 && m->st[s][u].count > 0) {
				ck_assert_uint_eq(got[u].count, 0);
				ck_assert_uint_eq(got[u].expires_ms,
				    want.expires_ms);
				continue;
			}
			assert_state(&got[u], &want, id, what, s, u);
		}
	}
}

static void
assert_stats(struct url_fixture *fx, const struct model *m, const char *when)
{
	struct urlset_stats st;

	urlset_stats(fx->us, &st);
	if (st.submits_new != m->added || st.submits_duplicate != m->dup ||
	    st.deletes != m->deleted || st.urls != model_live(m))
		ck_abort_msg("%s: stats new %llu dup %llu deletes %llu urls "
		    "%llu; the model %llu %llu %llu %llu", when,
		    (unsigned long long)st.submits_new,
		    (unsigned long long)st.submits_duplicate,
		    (unsigned long long)st.deletes,
		    (unsigned long long)st.urls,
		    (unsigned long long)m->added, (unsigned long long)m->dup,
		    (unsigned long long)m->deleted,
		    (unsigned long long)model_live(m));
}

struct test_job {
	struct urlset_job uj;
	int nsi;
	int which[JOB_KEYS];
	struct url_key keys[JOB_KEYS];
	struct url_state states[JOB_KEYS];
	struct url_state want[JOB_KEYS];
	int answered;
};

static void
test_job_done(struct urlset_job *uj)
{
	((struct test_job *)uj)->answered++;
}

static void
fill_job(struct test_job *t, enum urlset_op op, int nsi,
    enum urlset_durability dur, uint64_t ttl, const int *which, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->uj.op = op;
	t->uj.durability = dur;
	snprintf(t->uj.ns, sizeof(t->uj.ns), "%s", ns_names[nsi]);
	t->uj.ttl_ms = ttl;
	t->uj.keys = t->keys;
	t->uj.n = n;
	t->uj.states = t->states;
	t->uj.done = test_job_done;
	t->nsi = nsi;
	for (size_t i = 0; i < n; i++) {
		t->which[i] = which[i];
		t->keys[i] = pool_keys[nsi][which[i]];
	}
}

static void
assert_answers(struct url_fixture *fx, const struct test_job *t,
    const char *when)
{
	uint32_t id = ns_id(fx, t->nsi);
	char what[96];

	ck_assert_int_eq(t->answered, 1);
	ck_assert_int_eq(t->uj.status, STORE_OK);
	snprintf(what, sizeof(what), "%s, answer of a %s", when,
	    t->uj.op == URLSET_DELETE ? "delete" : "submit");
	for (size_t i = 0; i < t->uj.n; i++)
		assert_state(&t->states[i], &t->want[i], id, what, t->nsi,
		    t->which[i]);
}

START_TEST(test_groups_against_model)
{
	static const uint64_t ttls[] = { 0, 0, 0, 0, 25, 100, 1000 };
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	struct test_job jobs[MAX_JOBS];
	struct urlset_stats st;
	uint64_t seed = 20240611, flushes = 0;
	int crashes = 0;
	char when[64];

	ck_assert_ptr_nonnull(m);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 2000,
	    .journal_entries = 128, .segment_records = 32 };
	url_fixture_open(&fx);
	make_keys(&fx);
	for (int step = 0; step < 700; step++) {
		int njobs = 1 + (int)tu_rand_below(&seed, MAX_JOBS);
		enum urlset_durability dur = tu_rand_below(&seed, 2) ?
		    URLSET_DURABLE : URLSET_RELAXED;
		/* A hot range, so that URLs meet again within a group. */
		int range = tu_rand_below(&seed, 3) == 0 ? 20 : POOL;

		fake_now += tu_rand_below(&seed, 40);
		snprintf(when, sizeof(when), "step %d", step);
		for (int j = 0; j < njobs; j++) {
			int which[JOB_KEYS], nsi = (int)tu_rand_below(&seed,
			    NNS);
			size_t n = 1 + tu_rand_below(&seed, JOB_KEYS);
			enum urlset_op op = tu_rand_below(&seed, 10) < 7 ?
			    URLSET_SUBMIT : URLSET_DELETE;
			uint64_t ttl = ttls[tu_rand_below(&seed,
			    sizeof(ttls) / sizeof(ttls[0]))];

			for (size_t i = 0; i < n; i++)
				which[i] = (int)tu_rand_below(&seed,
				    (uint64_t)range);
			fill_job(&jobs[j], op, nsi, dur, ttl, which, n);
			jobs[j].uj.next = NULL;
			if (j > 0)
				jobs[j - 1].uj.next = &jobs[j].uj;
			model_job(m, op, nsi, ttl, fake_now, which, n,
			    jobs[j].want);
		}
		urlset_apply_group(fx.us, &jobs[0].uj);
		for (int j = 0; j < njobs; j++)
			assert_answers(&fx, &jobs[j], when);
		assert_stats(&fx, m, when);
		if (step % 25 == 24)
			assert_model(&fx, m, when);
		if (step % 100 == 99) {
			/* Reopened: half the time cleanly, half as a
			 * crash leaves it (the journal replayed). */
			bool crash = tu_rand_below(&seed, 2) == 0;

			urlset_stats(fx.us, &st);
			flushes += st.flushes;
			if (!crash)
				ck_assert_int_eq(urlset_flush(fx.us, true),
				    STORE_OK);
			crashes += crash;
			url_fixture_drop(&fx);
			url_fixture_open(&fx);
			m->added = m->dup = m->deleted = 0;
			snprintf(when, sizeof(when), "step %d, reopened%s",
			    step, crash ? " after a crash" : "");
			assert_stats(&fx, m, when);
			assert_model(&fx, m, when);
		}
	}
	urlset_stats(fx.us, &st);
	flushes += st.flushes;
	/* The small journal made the writer flush on its own. */
	ck_assert_msg(flushes > 50, "only %llu flushes",
	    (unsigned long long)flushes);
	ck_assert_int_gt(crashes, 0);
	{
		struct urlset_verify v;

		ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
		ck_assert_int_eq(urlset_verify_store(fx.us, &v), STORE_OK);
		ck_assert_msg(v.counter_mismatches == 0 &&
		    v.index_mismatches == 0, "verify: %s", v.detail);
		ck_assert_uint_eq(v.records, model_live(m));
	}
	free(m);
	url_fixture_end(&fx);
}
END_TEST

/* urlset_current_states: keys given twice share an entry, changes not
 * flushed yet count, and more keys than a group takes are refused. */
START_TEST(test_current_states)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct test_job t;
	struct url_key keys[6];
	struct url_state out[6];
	struct url_key *big;
	int a[] = { 1, 2, 3 }, d[] = { 2 };

	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 1000 };
	url_fixture_open(&fx);
	make_keys(&fx);
	fill_job(&t, URLSET_SUBMIT, 0, URLSET_RELAXED, 0, a, 3);
	urlset_apply_group(fx.us, &t.uj);
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	fake_now += 10;
	fill_job(&t, URLSET_SUBMIT, 0, URLSET_RELAXED, 0, a, 1);
	urlset_apply_group(fx.us, &t.uj);	/* URL 1: count 2, in memory */
	fill_job(&t, URLSET_DELETE, 0, URLSET_RELAXED, 0, d, 1);
	urlset_apply_group(fx.us, &t.uj);	/* URL 2: deleted */
	keys[0] = pool_keys[0][1];
	keys[1] = pool_keys[0][2];
	keys[2] = pool_keys[0][3];
	keys[3] = pool_keys[0][1];
	keys[4] = pool_keys[0][4];		/* never submitted */
	keys[5] = pool_keys[1][1];		/* another namespace's */
	ck_assert_int_eq(urlset_current_states(fx.us, keys, 6, out), STORE_OK);
	ck_assert_uint_eq(out[0].count, 2);
	ck_assert_uint_eq(out[0].first_seen_ms, T0);
	ck_assert_uint_eq(out[0].last_seen_ms, T0 + 10);
	ck_assert_uint_eq(out[1].count, 0);
	ck_assert_uint_eq(out[2].count, 1);
	ck_assert_uint_eq(out[2].last_seen_ms, T0);
	ck_assert_uint_eq(out[3].count, 2);
	ck_assert_uint_eq(out[4].count, 0);
	ck_assert_uint_eq(out[5].count, 0);
	/* Nothing it read became a change. */
	ck_assert_uint_eq(urlmem_count(fx.us->mem), 2);
	big = calloc(URLSET_GROUP_MAX + 1, sizeof(*big));
	ck_assert_ptr_nonnull(big);
	ck_assert_int_eq(urlset_current_states(fx.us, big,
	    URLSET_GROUP_MAX + 1, NULL), STORE_FAILED);
	free(big);
	url_fixture_end(&fx);
}
END_TEST

/* The journal is fdatasync'ed for durable groups only, and only with sync;
 * a group that changes nothing writes no frame. */
START_TEST(test_durability)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct test_job t;
	struct urlset_stats a, b;
	int w1[] = { 1 }, w2[] = { 2 }, w3[] = { 3 }, none[] = { 9 };

	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 1000, .sync = true };
	url_fixture_open(&fx);
	make_keys(&fx);
	urlset_stats(fx.us, &a);
	fill_job(&t, URLSET_SUBMIT, 0, URLSET_RELAXED, 0, w1, 1);
	urlset_apply_group(fx.us, &t.uj);
	urlset_stats(fx.us, &b);
	ck_assert_uint_eq(b.journal_syncs, a.journal_syncs);
	ck_assert_uint_gt(b.journal_bytes_written, a.journal_bytes_written);
	fill_job(&t, URLSET_SUBMIT, 0, URLSET_DURABLE, 0, w2, 1);
	urlset_apply_group(fx.us, &t.uj);
	urlset_stats(fx.us, &a);
	ck_assert_uint_eq(a.journal_syncs, b.journal_syncs + 1);
	/* A delete of a URL never stored changes nothing. */
	fill_job(&t, URLSET_DELETE, 0, URLSET_DURABLE, 0, none, 1);
	urlset_apply_group(fx.us, &t.uj);
	ck_assert_int_eq(t.uj.status, STORE_OK);
	ck_assert_uint_eq(t.states[0].count, 0);
	urlset_stats(fx.us, &b);
	ck_assert_uint_eq(b.journal_bytes_written, a.journal_bytes_written);
	ck_assert_uint_eq(b.groups, a.groups + 1);
	url_fixture_drop(&fx);

	/* Without sync, nothing is. */
	fx.opts.sync = false;
	url_fixture_open(&fx);
	urlset_stats(fx.us, &a);
	fill_job(&t, URLSET_SUBMIT, 0, URLSET_DURABLE, 0, w3, 1);
	urlset_apply_group(fx.us, &t.uj);
	ck_assert_uint_eq(t.states[0].count, 1);
	urlset_stats(fx.us, &b);
	ck_assert_uint_eq(b.journal_syncs, a.journal_syncs);
	ck_assert_uint_gt(b.journal_bytes_written, a.journal_bytes_written);
	url_fixture_end(&fx);
}
END_TEST

/*
 * A store too small: a group that needs a flush the store has no room for
 * is refused whole with the store's status, nothing of it applied, and
 * what was acknowledged before stays; checks go on.  With room again (a
 * larger map), everything acknowledged is there and nothing refused.
 */
START_TEST(test_full_store_refuses_groups)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct url_key *keys;
	struct url_state *states;
	struct urlset_tally tally = { 0 };
	struct url_keyer *k;
	const size_t total = 40000, group = 200;
	size_t acked = 0, refused_at = 0;
	const char *why;
	char url[64];
	int refusals = 0, status = STORE_OK;

	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.map_size = 1 << 20;
	fx.opts = (struct urlset_options){ .capacity = 50000,
	    .journal_entries = 1024 };
	url_fixture_open(&fx);
	keys = malloc(total * sizeof(*keys));
	states = malloc(total * sizeof(*states));
	ck_assert_ptr_nonnull(keys);
	ck_assert_ptr_nonnull(states);
	k = urlset_keyer_new(fx.us);
	for (size_t i = 0; i < total; i++) {
		snprintf(url, sizeof(url), "http://full.example/%zu", i);
		ck_assert_int_eq(urlset_key(k, url, strlen(url), &keys[i],
		    &why), 0);
	}
	urlset_keyer_free(k);
	for (size_t at = 0; at + group <= total; at += group) {
		struct urlset_job job;

		memset(&job, 0, sizeof(job));
		job.op = URLSET_SUBMIT;
		job.durability = URLSET_RELAXED;
		job.keys = keys + at;
		job.n = group;
		job.states = states + at;
		urlset_apply_group(fx.us, &job);
		if (job.status == STORE_OK) {
			ck_assert_msg(refusals == 0, "a group went through "
			    "after a refusal, with no room made");
			acked = at + group;
			continue;
		}
		ck_assert_msg(store_status_full(job.status), "status %d",
		    job.status);
		if (refusals++ == 0) {
			refused_at = at;
			status = job.status;
		} else
			ck_assert_int_eq(job.status, status);
		if (refusals == 3)
			break;
	}
	ck_assert_msg(refusals > 0, "a 1 MiB map took %zu URLs", acked);
	ck_assert_uint_eq(refused_at, acked);
	/* Checks go on: acknowledged URLs seen, refused ones not. */
	ck_assert_int_eq(urlset_check(fx.us, fx.rd, URLNS_DEFAULT, fake_now,
	    keys, NULL, acked + group, states, &tally), STORE_OK);
	for (size_t i = 0; i < acked + group; i++)
		if (states[i].count != (i < acked))
			ck_abort_msg("URL %zu: count %u, %s", i,
			    states[i].count, i < acked ? "acknowledged" :
			    "refused");
	url_fixture_drop(&fx);
	/* Room again: the journal replayed into a larger map. */
	fx.map_size = 64 << 20;
	url_fixture_open(&fx);
	ck_assert_uint_eq(urlmem_count(fx.us->mem), 0);
	ck_assert_int_eq(urlset_check(fx.us, fx.rd, URLNS_DEFAULT, fake_now,
	    keys, NULL, acked + group, states, &tally), STORE_OK);
	for (size_t i = 0; i < acked + group; i++)
		if (states[i].count != (i < acked))
			ck_abort_msg("after the reopen, URL %zu: count %u, %s",
			    i, states[i].count, i < acked ? "acknowledged" :
			    "refused");
	free(keys);
	free(states);
	url_fixture_end(&fx);
}
END_TEST

/* The writer thread: jobs queued from another thread, answered in the
 * loop thread. */
#define TJOBS		240

struct thread_job {
	struct test_job t;
	struct urlns_info info;
	struct urlset_verify verify;
	int kind;		/* 0: submit/delete, 1: ns set, 2: ns drop,
				   3: verify */
	int order;
};

static int delivered;

static void
thread_job_done(struct urlset_job *uj)
{
	struct thread_job *j = (struct thread_job *)(void *)uj;

	j->t.answered++;
	j->order = delivered++;
}

START_TEST(test_writer_thread)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct thread_job *jobs = calloc(TJOBS, sizeof(*jobs));
	struct model *m = calloc(1, sizeof(*m));
	struct event_base *base;
	struct urlset_stats st;
	uint64_t seed = 77, beta_ttl = 0;
	double deadline;

	ck_assert_ptr_nonnull(jobs);
	ck_assert_ptr_nonnull(m);
	clock_wall_source = fake_clock;
	fake_now = T0;
	fx.opts = (struct urlset_options){ .capacity = 2000,
	    .journal_entries = 64, .segment_records = 16 };
	url_fixture_open(&fx);
	make_keys(&fx);
	base = event_base_new();
	ck_assert_ptr_nonnull(base);
	ck_assert_int_eq(urlset_start(fx.us, base), 0);
	delivered = 0;
	/* Queued all at once: the writer groups what it finds. */
	for (int i = 0; i < TJOBS; i++) {
		struct thread_job *j = &jobs[i];
		bool drop = i == TJOBS / 3 || i == 2 * TJOBS / 3;
		int r = (int)tu_rand_below(&seed, 30);

		if (i == TJOBS / 2 || i == TJOBS - 1) {
			/* Flushes, then compares memory with the store. */
			j->kind = 3;
			j->t.uj.op = URLSET_VERIFY;
			j->t.uj.verify = &j->verify;
		} else if (r == 0) {
			j->kind = 1;
			j->t.uj.op = URLSET_NS_SET;
			snprintf(j->t.uj.ns, sizeof(j->t.uj.ns), "beta");
			j->t.uj.ttl_ms = beta_ttl = 1000 *
			    (1 + tu_rand_below(&seed, 5));
			j->t.uj.info = &j->info;
		} else if (drop) {
			/* Dropped: alpha's URLs are unseen from now on, and
			 * a submit under the name starts anew. */
			j->kind = 2;
			j->t.uj.op = URLSET_NS_DROP;
			snprintf(j->t.uj.ns, sizeof(j->t.uj.ns), "alpha");
			j->t.uj.info = &j->info;
			memset(m->st[1], 0, sizeof(m->st[1]));
		} else {
			int which[JOB_KEYS], nsi = (int)tu_rand_below(&seed,
			    NNS);
			size_t n = 1 + tu_rand_below(&seed, JOB_KEYS);
			enum urlset_op op = tu_rand_below(&seed, 10) < 7 ?
			    URLSET_SUBMIT : URLSET_DELETE;
			uint64_t ttl;

			/* alpha exists when it is dropped. */
			if (i + 1 == TJOBS / 3 || i + 1 == 2 * TJOBS / 3) {
				nsi = 1;
				op = URLSET_SUBMIT;
			}
			ttl = nsi == 2 ? beta_ttl : 0;
			for (size_t k = 0; k < n; k++)
				which[k] = (int)tu_rand_below(&seed, 60);
			fill_job(&j->t, op, nsi, tu_rand_below(&seed, 4) ?
			    URLSET_RELAXED : URLSET_DURABLE, 0, which, n);
			model_job(m, op, nsi, ttl, fake_now, which, n,
			    j->t.want);
		}
		j->t.uj.done = thread_job_done;
		urlset_submit_job(fx.us, &j->t.uj);
	}
	deadline = tu_now() + 30;
	while (delivered < TJOBS && tu_now() < deadline) {
		struct timespec nap = { 0, 1000000 };

		event_base_loop(base, EVLOOP_NONBLOCK);
		nanosleep(&nap, NULL);
	}
	ck_assert_int_eq(delivered, TJOBS);
	urlset_stats(fx.us, &st);
	ck_assert_uint_eq(st.pending, 0);
	urlset_stop(fx.us);
	event_base_free(base);
	/* Answered once each, in the order queued, and as the model says. */
	for (int i = 0; i < TJOBS; i++) {
		struct thread_job *j = &jobs[i];
		char when[32];

		snprintf(when, sizeof(when), "job %d", i);
		ck_assert_int_eq(j->t.answered, 1);
		ck_assert_int_eq(j->order, i);
		ck_assert_int_eq(j->t.uj.status, STORE_OK);
		switch (j->kind) {
		case 0:
			/* The namespace of the answer is checked below. */
			for (size_t k = 0; k < j->t.uj.n; k++) {
				ck_assert_uint_eq(j->t.states[k].count,
				    j->t.want[k].count);
				ck_assert_uint_eq(j->t.states[k].expires_ms,
				    j->t.want[k].expires_ms);
			}
			break;
		case 1:
			ck_assert_str_eq(j->info.name, "beta");
			ck_assert_uint_eq(j->info.default_ttl_ms,
			    j->t.uj.ttl_ms);
			break;
		case 2:
			ck_assert(j->info.dropping);
			break;
		default:
			ck_assert_msg(j->verify.counter_mismatches == 0 &&
			    j->verify.index_mismatches == 0, "%s: verify: %s",
			    when, j->verify.detail);
			break;
		}
	}
	/* urlset_stop flushed: nothing is left to replay. */
	ck_assert_uint_eq(urlmem_count(fx.us->mem), 0);
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert_uint_eq(urlmem_count(fx.us->mem), 0);
	assert_model(&fx, m, "after the writer stopped");
	free(jobs);
	free(m);
	url_fixture_end(&fx);
}
END_TEST

Suite *urlwriter_suite(void);

Suite *
urlwriter_suite(void)
{
	Suite *s = suite_create("urlwriter");
	TCase *tc = tcase_create("urlwriter");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_groups_against_model);
	tcase_add_test(tc, test_current_states);
	tcase_add_test(tc, test_durability);
	tcase_add_test(tc, test_full_store_refuses_groups);
	tcase_add_test(tc, test_writer_thread);
	suite_add_tcase(s, tc);
	return s;
}
