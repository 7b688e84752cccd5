/*
 * Tests for the host index's write side in the URL writer (urlhostidx.c:
 * the round's texts, a run per flush, merges of runs, read back through
 * urlhostrun.c's iterators) and the forgets that read it (urlforget.c),
 * on a real store with a small journal, so that every few groups make a
 * run and merges of eight runs go on a step at a time between groups.
 *
 * The model kept here knows each URL's host because it built the URL: a
 * forget of a host (with or without its subdomains) or of a URL prefix in
 * a namespace must forget exactly the live URLs a brute-force scan of the
 * model finds, count them, and leave every other URL; the runs must hold,
 * in ascending order, the key of every live URL (namespace, reversed
 * labels, the canonical URL, the fingerprint: built here from the URL),
 * and no key of a URL never recorded; the merge that makes the largest
 * run leaves out the URLs that are gone; a merge cut short by a crash
 * leaves no blocks behind; texts journaled but not flushed survive a
 * crash; and URLs the index cannot hold make forgets answer incomplete.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "le.h"
#include "store.h"
#include "testutil.h"
#include "urlfixture.h"
#include "urlhostrun.h"
#include "urlhosts.h"
#include "urlset.h"
#include "urlset_impl.h"

#define POOL		700
#define NNS		2
#define GROUP		40

static const char *ns_names[NNS] = { "", "crawl" };

/* Hosts that look alike: a forget of one must not reach the others. */
static const char *hosts[] = {
	"example.com", "www.example.com", "a.b.example.com", "badexample.com",
	"example.com.evil.org", "example.org", "shop.example.org",
};
#define NHOSTS	(sizeof(hosts) / sizeof(hosts[0]))

struct pool_url {
	char canon[128];
	size_t clen;
	int host;
	struct url_key key[NNS];
};

static struct pool_url pool[POOL];


static void
make_pool(struct urlset *us)
{
	struct url_keyer *k = urlset_keyer_new(us);
	struct urlset_ns_mask mask;
	const char *canon, *why;
	char url[128];

	ck_assert_ptr_nonnull(k);
	urlset_ns_mask(ns_names[1], strlen(ns_names[1]), &mask);
	for (int u = 0; u < POOL; u++) {
		struct pool_url *p = &pool[u];
		size_t clen;

		p->host = u % (int)NHOSTS;
		snprintf(url, sizeof(url), u % 2 ? "http://%s/p/%d" :
		    "http://%s/q/%d/x", hosts[p->host], u);
		ck_assert_int_eq(urlset_key_canonical(k, url, strlen(url),
		    &p->key[0], &canon, &clen, &why), 0);
		ck_assert_uint_lt(clen, sizeof(p->canon));
		/* The canonical form keeps these URLs as they are. */
		ck_assert_uint_eq(clen, strlen(url));
		ck_assert(memcmp(canon, url, clen) == 0);
		memcpy(p->canon, canon, clen);
		p->clen = clen;
		p->key[1] = p->key[0];
		urlset_key_masked(us, &mask, &p->key[1]);
	}
	urlset_keyer_free(k);
}

/* The model: whether each URL is stored in each namespace. */
struct model {
	bool live[NNS][POOL];
};

static void
apply(struct urlset *us, struct model *m, enum urlset_op op, int nsi,
    const int *which, size_t n, bool with_texts)
{
	struct url_key keys[GROUP];
	struct url_state states[GROUP];
	struct url_text texts[GROUP];
	struct urlset_job job;

	memset(&job, 0, sizeof(job));
	job.op = op;
	job.durability = URLSET_RELAXED;
	snprintf(job.ns, sizeof(job.ns), "%s", ns_names[nsi]);
	for (size_t i = 0; i < n; i++) {
		keys[i] = pool[which[i]].key[nsi];
		texts[i].p = pool[which[i]].canon;
		texts[i].len = pool[which[i]].clen;
		job.text_bytes += texts[i].len;
		if (m != NULL)
			m->live[nsi][which[i]] = op == URLSET_SUBMIT;
	}
	job.keys = keys;
	job.n = n;
	job.states = states;
	if (op == URLSET_SUBMIT && with_texts)
		job.texts = texts;
	urlset_apply_group(us, &job);
	ck_assert_int_eq(job.status, STORE_OK);
}

static uint32_t
ns_id(struct urlset *us, int nsi)
{
	return urlns_find(urlset_namespaces(us), ns_names[nsi],
	    strlen(ns_names[nsi]), NULL);
}

/* The key the index should hold for URL u in namespace nsi, built here. */
static size_t
expected_key(struct urlset *us, int nsi, int u, uint8_t *out)
{
	const char *h = hosts[pool[u].host];
	size_t hl = strlen(h), at = 4, end = hl;

	be_put32(out, ns_id(us, nsi));
	/* The labels, last first. */
	for (;;) {
		size_t start = end;

		while (start > 0 && h[start - 1] != '.')
			start--;
		memcpy(out + at, h + start, end - start);
		at += end - start;
		if (start == 0)
			break;
		out[at++] = '.';
		end = start - 1;
	}
	out[at++] = 0;
	memcpy(out + at, pool[u].canon, pool[u].clen);
	at += pool[u].clen;
	memcpy(out + at, pool[u].key[nsi].fp, CBF_FP_LEN);
	return at + CBF_FP_LEN;
}

/* Every key of every run, each run's in ascending order. */
struct run_keys {
	uint8_t (*k)[URLHOSTS_KEY_MAX];
	uint16_t *len;
	size_t n, cap;
};

static void
read_runs(struct urlset *us, struct run_keys *rk)
{
	struct store_txn *txn = store_reader_new(us->st);
	uint64_t total = 0;

	memset(rk, 0, sizeof(*rk));
	ck_assert_ptr_nonnull(txn);
	ck_assert_int_eq(store_reader_begin(txn), STORE_OK);
	for (size_t r = 0; r < us->hosts.nruns; r++) {
		struct hostrun_iter it;
		bool done = false;
		uint64_t in_run = 0;
		size_t first = rk->n;

		ck_assert_int_eq(hostrun_iter_init(&it, txn,
		    &us->hosts.runs[r], NULL, 0), STORE_OK);
		for (;;) {
			ck_assert_int_eq(hostrun_iter_next(&it, &done),
			    STORE_OK);
			if (done)
				break;
			if (rk->n == rk->cap) {
				rk->cap = rk->cap ? 2 * rk->cap : 1024;
				rk->k = realloc(rk->k, rk->cap *
				    sizeof(*rk->k));
				rk->len = realloc(rk->len, rk->cap *
				    sizeof(*rk->len));
				ck_assert(rk->k != NULL && rk->len != NULL);
			}
			memcpy(rk->k[rk->n], it.key, it.klen);
			rk->len[rk->n] = (uint16_t)it.klen;
			if (rk->n > first) {
				size_t a = rk->len[rk->n - 1], b = it.klen;
				int c = memcmp(rk->k[rk->n - 1], it.key,
				    a < b ? a : b);

				ck_assert_msg(c < 0 || (c == 0 && a < b),
				    "run %u: keys out of order",
				    us->hosts.runs[r].id);
			}
			rk->n++;
			in_run++;
		}
		hostrun_iter_free(&it);
		ck_assert_uint_eq(in_run, us->hosts.runs[r].nkeys);
		total += in_run;
	}
	store_reader_end(txn);
	store_reader_free(txn);
	ck_assert_uint_eq(total, __atomic_load_n(&us->stats.host_keys,
	    __ATOMIC_RELAXED));
}

/* A key and its length, for sorting and searching. */
struct key_ref {
	const uint8_t *k;
	size_t len;
	bool live;
};

static int
cmp_key_ref(const void *a, const void *b)
{
	const struct key_ref *x = a, *y = b;
	int c = memcmp(x->k, y->k, x->len < y->len ? x->len : y->len);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/*
 * With every text in a run: each live URL's key is in the runs, and each
 * key of the runs is one of the pool's URLs (live, or once recorded).
 * Returns the keys of the runs whose URL is no longer live.
 */
static size_t
assert_runs(struct url_fixture *fx, const struct model *m, const char *when)
{
	static uint8_t keys[NNS * POOL][URLHOSTS_KEY_MAX];
	static struct key_ref want[NNS * POOL];
	struct key_ref *got;
	struct run_keys rk;
	size_t nwant = 0, dead = 0;

	ck_assert_uint_eq(fx->us->hosts.texts_len, 0);
	read_runs(fx->us, &rk);
	for (int s = 0; s < NNS; s++) {
		if (ns_id(fx->us, s) == URLNS_NONE)
			continue;
		for (int u = 0; u < POOL; u++) {
			want[nwant].len = expected_key(fx->us, s, u,
			    keys[nwant]);
			want[nwant].k = keys[nwant];
			want[nwant++].live = m->live[s][u];
		}
	}
	qsort(want, nwant, sizeof(*want), cmp_key_ref);
	got = calloc(rk.n + 1, sizeof(*got));
	ck_assert_ptr_nonnull(got);
	for (size_t i = 0; i < rk.n; i++) {
		struct key_ref *w;

		got[i].k = rk.k[i];
		got[i].len = rk.len[i];
		/* Each key of the runs is a URL's. */
		w = bsearch(&got[i], want, nwant, sizeof(*want), cmp_key_ref);
		ck_assert_msg(w != NULL, "%s: a key of the runs is no URL's",
		    when);
		dead += !w->live;
	}
	qsort(got, rk.n, sizeof(*got), cmp_key_ref);
	for (size_t i = 0; i < nwant; i++)
		if (want[i].live && bsearch(&want[i], got, rk.n, sizeof(*got),
		    cmp_key_ref) == NULL)
			ck_abort_msg("%s: the runs miss a live URL, %.*s", when,
			    (int)(want[i].len - 5 - CBF_FP_LEN),
			    (const char *)want[i].k + 4);
	free(got);
	free(rk.k);
	free(rk.len);
	return dead;
}

/* Whether URL u lies in what the forget f names. */
static bool
model_matches(int u, const struct urlset_forget *f)
{
	const char *h = hosts[pool[u].host];
	size_t hl = strlen(h);

	if (f->host == NULL)
		return pool[u].clen >= f->plen &&
		    memcmp(pool[u].canon, f->prefix, f->plen) == 0;
	if (hl == f->hlen && memcmp(h, f->host, hl) == 0)
		return true;
	return f->subdomains && hl > f->hlen + 1 &&
	    memcmp(h + hl - f->hlen, f->host, f->hlen) == 0 &&
	    h[hl - f->hlen - 1] == '.';
}

static void
forget(struct url_fixture *fx, struct model *m, int nsi,
    struct urlset_forget *f,
    const char *when)
{
	struct urlset_job job;
	uint64_t want = 0;
	struct url_key keys[POOL];
	struct url_state states[POOL];

	for (int u = 0; u < POOL; u++)
		if (m->live[nsi][u] && model_matches(u, f)) {
			want++;
			m->live[nsi][u] = false;
		}
	memset(&job, 0, sizeof(job));
	job.op = URLSET_FORGET;
	job.durability = URLSET_DURABLE;
	snprintf(job.ns, sizeof(job.ns), "%s", ns_names[nsi]);
	job.forget = f;
	ck_assert_int_eq(urlset_forget(fx->us, &job), STORE_OK);
	ck_assert_msg(f->forgotten == want, "%s: forgot %llu, the model %llu "
	    "(%s%.*s%s)", when, (unsigned long long)f->forgotten,
	    (unsigned long long)want, f->host ? "host " : "prefix ",
	    (int)(f->host ? f->hlen : f->plen), f->host ? f->host : f->prefix,
	    f->subdomains ? " and subdomains" : "");
	ck_assert(f->complete);
	/* Every URL as the model has it. */
	for (int s = 0; s < NNS; s++) {
		for (int u = 0; u < POOL; u++)
			keys[u] = pool[u].key[s];
		ck_assert_int_eq(urlset_current_states(fx->us, keys, POOL,
		    states), STORE_OK);
		for (int u = 0; u < POOL; u++)
			if ((states[u].count > 0) != m->live[s][u])
				ck_abort_msg("%s: %s in namespace %d: count %u, "
				    "the model %s", when, pool[u].canon, s,
				    states[u].count, m->live[s][u] ? "live" :
				    "gone");
	}
}

static void
random_forget(struct url_fixture *fx, struct model *m, uint64_t *seed,
    const char *when)
{
	static char prefix[128];
	struct urlset_forget f;
	int nsi = (int)tu_rand_below(seed, NNS);

	memset(&f, 0, sizeof(f));
	if (tu_rand_below(seed, 2)) {
		f.host = hosts[tu_rand_below(seed, NHOSTS)];
		f.hlen = strlen(f.host);
		f.subdomains = tu_rand_below(seed, 2);
	} else {
		/* A prefix of a pool URL, past its host's slash. */
		int u = (int)tu_rand_below(seed, POOL);
		size_t min = strlen("http://") + strlen(hosts[pool[u].host]) +
		    1;

		f.plen = min + tu_rand_below(seed, pool[u].clen - min + 1);
		memcpy(prefix, pool[u].canon, f.plen);
		f.prefix = prefix;
	}
	forget(fx, m, nsi, &f, when);
}

START_TEST(test_index_and_forgets_against_model)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	uint64_t seed = 515, merges = 0, forgets = 0;
	size_t max_runs = 0;
	char when[64];

	ck_assert_ptr_nonnull(m);
	fx.opts = (struct urlset_options){ .capacity = 20000,
	    .journal_entries = 64, .segment_records = 64,
	    .host_index = true };
	url_fixture_open(&fx);
	make_pool(fx.us);
	for (int step = 0; step < 1400; step++) {
		uint64_t r = tu_rand_below(&seed, 40);

		snprintf(when, sizeof(when), "step %d", step);
		if (r < 26) {
			int which[GROUP], nsi = (int)tu_rand_below(&seed, NNS);
			size_t n = 1 + tu_rand_below(&seed, GROUP);
			bool del = tu_rand_below(&seed, 10) < 2;

			for (size_t i = 0; i < n; i++)
				which[i] = (int)tu_rand_below(&seed, POOL);
			apply(fx.us, m, del ? URLSET_DELETE : URLSET_SUBMIT,
			    nsi, which, n, true);
			/* As the writer does between groups. */
			urlset_hosts_merge_step(fx.us, false);
		} else if (r < 33) {
			/* Merges between groups, a step at a time. */
			bool was = fx.us->hosts.merge != NULL;

			urlset_hosts_merge_step(fx.us, tu_rand_below(&seed, 4)
			    != 0);
			merges += was && fx.us->hosts.merge == NULL;
		} else if (r < 35) {
			ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
			assert_runs(&fx, m, when);
		} else if (r < 39) {
			random_forget(&fx, m, &seed, when);
			forgets++;
		} else if (tu_rand_below(&seed, 4) == 0) {
			/* A crash: the round's texts are in the journal,
			 * a merge under way is lost. */
			url_fixture_drop(&fx);
			url_fixture_open(&fx);
			assert_runs(&fx, m, when);
		}
		if (fx.us->hosts.nruns > max_runs)
			max_runs = fx.us->hosts.nruns;
	}
	ck_assert_uint_ge(merges, 2);
	ck_assert_uint_gt(forgets, 50);
	ck_assert_uint_gt(max_runs, 8);
	free(m);
	url_fixture_end(&fx);
}
END_TEST

/* Blocks of the host index's table whose run is not listed. */
struct orphan_scan {
	const struct urlset *us;
	uint64_t rows, orphans;
};

static int
orphan_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct orphan_scan *o = arg;
	uint32_t id;
	bool listed = false;

	(void)val;
	(void)vlen;
	ck_assert_uint_eq(klen, 8);
	id = be_get32(key);
	for (size_t r = 0; r < o->us->hosts.nruns; r++)
		listed |= o->us->hosts.runs[r].id == id;
	o->rows++;
	o->orphans += !listed;
	return 0;
}

static struct orphan_scan
scan_blocks(struct url_fixture *fx)
{
	struct orphan_scan o = { .us = fx->us };

	ck_assert_int_eq(store_scan(fx->st, STORE_URL_HOSTS, orphan_one, &o),
	    STORE_OK);
	return o;
}

/*
 * Eight runs of one size are merged into one, a chunk per step; the merge
 * that makes the largest run leaves out the URLs deleted meanwhile; a
 * merge cut short by a crash leaves the runs as they were and no blocks
 * of its own; forgets during a merge find everything.
 */
START_TEST(test_merges)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	struct urlset_forget f;
	struct orphan_scan o;
	int which[GROUP], steps = 0;
	size_t dead;

	ck_assert_ptr_nonnull(m);
	fx.opts = (struct urlset_options){ .capacity = 20000,
	    .journal_entries = 64, .segment_records = 64,
	    .host_index = true };
	url_fixture_open(&fx);
	make_pool(fx.us);
	/* Eight runs of 40 URLs. */
	for (int r = 0; r < 8; r++) {
		for (int i = 0; i < GROUP; i++)
			which[i] = r * GROUP + i;
		apply(fx.us, m, URLSET_SUBMIT, 0, which, GROUP, true);
		ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	}
	ck_assert_uint_eq(fx.us->hosts.nruns, 8);
	/* Half of them deleted. */
	for (int r = 0; r < 8; r++) {
		for (int i = 0; i < GROUP / 2; i++)
			which[i] = r * GROUP + 2 * i;
		apply(fx.us, m, URLSET_DELETE, 0, which, GROUP / 2, true);
	}
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	ck_assert_uint_eq(assert_runs(&fx, m, "before merging"),
	    8 * GROUP / 2);

	/* A merge begun, then a crash. */
	ck_assert(urlset_hosts_merge_step(fx.us, true));
	ck_assert_ptr_nonnull(fx.us->hosts.merge);
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert_uint_eq(fx.us->hosts.nruns, 8);
	ck_assert_ptr_null(fx.us->hosts.merge);
	o = scan_blocks(&fx);
	ck_assert_uint_eq(o.orphans, 0);
	ck_assert_uint_eq(assert_runs(&fx, m, "after a crash in a merge"),
	    8 * GROUP / 2);

	/* Step by step; a forget in the middle. */
	ck_assert(urlset_hosts_merge_step(fx.us, true));
	ck_assert_ptr_nonnull(fx.us->hosts.merge);
	memset(&f, 0, sizeof(f));
	f.host = "example.org";
	f.hlen = strlen(f.host);
	forget(&fx, m, 0, &f, "during a merge");
	while (fx.us->hosts.merge != NULL) {
		ck_assert_int_lt(steps++, 100);
		ck_assert(urlset_hosts_merge_step(fx.us, true));
	}
	ck_assert_int_gt(steps, 1);
	ck_assert_uint_eq(fx.us->hosts.nruns, 1);
	ck_assert(!urlset_hosts_merge_step(fx.us, true));
	/* The largest run: gone URLs left out (the index's tags may keep
	 * a rare one). */
	dead = assert_runs(&fx, m, "merged");
	ck_assert_uint_le(dead, 2);
	o = scan_blocks(&fx);
	ck_assert_uint_eq(o.orphans, 0);
	ck_assert_uint_gt(o.rows, 1);
	/* And after a reopen, the same. */
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert_uint_eq(fx.us->hosts.nruns, 1);
	ck_assert_uint_eq(assert_runs(&fx, m, "reopened"), dead);
	f.host = "example.com";
	f.hlen = strlen(f.host);
	f.subdomains = true;
	forget(&fx, m, 0, &f, "after the merge");
	free(m);
	url_fixture_end(&fx);
}
END_TEST

/* Texts journaled and not flushed survive a crash, in the namespace they
 * were submitted in. */
START_TEST(test_texts_survive_a_crash)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct model *m = calloc(1, sizeof(*m));
	struct urlset_forget f;
	int which[GROUP];

	ck_assert_ptr_nonnull(m);
	fx.opts = (struct urlset_options){ .capacity = 20000,
	    .journal_entries = 512, .host_index = true };
	url_fixture_open(&fx);
	make_pool(fx.us);
	for (int i = 0; i < GROUP; i++)
		which[i] = i;
	apply(fx.us, m, URLSET_SUBMIT, 1, which, GROUP, true);
	ck_assert_uint_gt(fx.us->hosts.texts_len, 0);
	ck_assert_uint_eq(fx.us->hosts.nruns, 0);
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert_uint_eq(fx.us->hosts.nruns, 1);
	assert_runs(&fx, m, "replayed");
	memset(&f, 0, sizeof(f));
	f.host = "example.com";
	f.hlen = strlen(f.host);
	f.subdomains = true;
	forget(&fx, m, 0, &f, "the default namespace");
	ck_assert_uint_eq(f.forgotten, 0);
	forget(&fx, m, 1, &f, "the named namespace");
	ck_assert_uint_gt(f.forgotten, 0);
	free(m);
	url_fixture_end(&fx);
}
END_TEST

/* URLs the index cannot hold, or stored while it was off: forgets say
 * they are incomplete, from then on, across reopens. */
/* Forgets hosts[0]'s URLs: forgotten of them found, the answer incomplete. */
static void
forget_incomplete(struct url_fixture *fx, uint64_t forgotten)
{
	struct urlset_forget f;
	struct urlset_job job;

	memset(&f, 0, sizeof(f));
	f.host = hosts[0];
	f.hlen = strlen(f.host);
	memset(&job, 0, sizeof(job));
	job.op = URLSET_FORGET;
	job.forget = &f;
	ck_assert_int_eq(urlset_forget(fx->us, &job), STORE_OK);
	ck_assert_uint_eq(f.forgotten, forgotten);
	ck_assert(!f.complete);
}

START_TEST(test_incomplete)
{
	struct url_fixture fx = { .dir = tu_tmpdir() };
	struct urlset_job job;
	struct url_keyer *k;
	struct url_key key;
	struct url_state state;
	struct url_text text;
	char url[400];
	const char *canon, *why;
	int which[1] = { 0 };

	fx.opts = (struct urlset_options){ .capacity = 20000,
	    .host_index = true };
	url_fixture_open(&fx);
	make_pool(fx.us);
	apply(fx.us, NULL, URLSET_SUBMIT, 0, which, 1, true);
	ck_assert(urlset_hosts_complete(fx.us));
	/* A host longer than a DNS name. */
	memset(url, 0, sizeof(url));
	memcpy(url, "http://", 7);
	for (int i = 0; i < 300; i++)
		url[7 + i] = i % 10 == 9 ? '.' : 'a';
	memcpy(url + 307, "x/", 2);
	k = urlset_keyer_new(fx.us);
	ck_assert_int_eq(urlset_key_canonical(k, url, strlen(url), &key,
	    &canon, &text.len, &why), 0);
	text.p = canon;
	memset(&job, 0, sizeof(job));
	job.op = URLSET_SUBMIT;
	job.keys = &key;
	job.n = 1;
	job.states = &state;
	job.texts = &text;
	job.text_bytes = text.len;
	urlset_apply_group(fx.us, &job);
	urlset_keyer_free(k);
	ck_assert_int_eq(job.status, STORE_OK);
	forget_incomplete(&fx, 1);
	ck_assert(!urlset_hosts_complete(fx.us));
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert(!urlset_hosts_complete(fx.us));
	url_fixture_end(&fx);

	/* Stored while the index was off. */
	fx.dir = tu_tmpdir();
	fx.opts.host_index = false;
	url_fixture_open(&fx);
	apply(fx.us, NULL, URLSET_SUBMIT, 0, which, 1, true);
	ck_assert(!urlset_hosts_complete(fx.us));
	ck_assert_int_eq(urlset_flush(fx.us, true), STORE_OK);
	url_fixture_drop(&fx);
	fx.opts.host_index = true;
	url_fixture_open(&fx);
	ck_assert(!urlset_hosts_complete(fx.us));
	forget_incomplete(&fx, 0);
	url_fixture_end(&fx);

	/* Submitted as a digest, with the index on: no text to index. */
	fx.dir = tu_tmpdir();
	fx.opts.host_index = true;
	url_fixture_open(&fx);
	apply(fx.us, NULL, URLSET_SUBMIT, 0, which, 1, false);
	ck_assert(!urlset_hosts_complete(fx.us));
	forget_incomplete(&fx, 0);
	url_fixture_drop(&fx);
	url_fixture_open(&fx);
	ck_assert(!urlset_hosts_complete(fx.us));
	url_fixture_end(&fx);
}
END_TEST

Suite *urlhostidx_suite(void);

Suite *
urlhostidx_suite(void)
{
	Suite *s = suite_create("urlhostidx");
	TCase *tc = tcase_create("urlhostidx");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_index_and_forgets_against_model);
	tcase_add_test(tc, test_merges);
	tcase_add_test(tc, test_texts_survive_a_crash);
	tcase_add_test(tc, test_incomplete);
	suite_add_tcase(s, tc);
	return s;
}
