/*
 * urlhostidx: the host index's write side, in the URL writer (urlhosts.h
 * encodes its keys, urlhostrun.h stores its runs): the texts of a round's
 * new URLs, which the journal's frames carry, a run of their keys with
 * each flush, and merges of runs, a step at a time.  urlforget.c reads
 * the runs to forget by host or by prefix.
 *
 * Entries outlive their records (deletes, expiry, forgets, dropped
 * namespaces): a merge leaves out the entries whose record is surely gone.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "log.h"
#include "urlhostrun.h"
#include "urlhosts.h"
#include "urlset_impl.h"

/* Runs of one size merged into one, and the size of the smallest. */
#define MERGE_FANOUT		8
#define MERGE_BASE		4096
/* Runs past which a busy writer merges too.  Each busy step is a
 * transaction of its own after a group: at 16 runs, a burst of 2 million
 * durable submits ran 25% slower than with its merges left to the idle
 * writer (BENCHMARKS.md, "The second round's targets").  64 runs hold
 * such a burst; a forget reads a block or two of each run. */
#define HOSTS_RUNS_BUSY		(8 * MERGE_FANOUT)
/* Why the index may miss URLs, in the store's metadata. */
#define HOSTS_PARTIAL_KEY	"urls.hosts_partial"

/* The index's figures, for any thread's stats. */
static void
publish_stats(struct urlset *us)
{
	uint64_t keys = 0;

	for (size_t i = 0; i < us->hosts.nruns; i++)
		keys += us->hosts.runs[i].nkeys;
	__atomic_store_n(&us->stats.host_runs, us->hosts.nruns,
	    __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.host_keys, keys, __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.host_merging, us->hosts.merge != NULL,
	    __ATOMIC_RELAXED);
}

int
urlset_hosts_open(struct urlset *us, int format)
{
	struct store_txn *txn;
	size_t orphans;
	char buf[8];
	int rc;

	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		return rc;
	rc = store_meta_get(txn, HOSTS_PARTIAL_KEY, buf, sizeof(buf));
	if (rc != STORE_OK && rc != STORE_NOTFOUND) {
		store_abort(txn);
		return rc;
	}
	us->hosts.partial = rc == STORE_OK;
	if ((rc = hostrun_load(txn, &us->hosts.runs, &us->hosts.nruns,
	    &us->hosts.next_run, &orphans)) != STORE_OK) {
		store_abort(txn);
		return rc;
	}
	us->hosts.runs_cap = us->hosts.nruns;
	publish_stats(us);
	if (us->hosts.partial ||
	    (us->host_index && (format == 0 || format == URLSET_FORMAT))) {
		if (orphans == 0) {
			store_abort(txn);
			return STORE_OK;
		}
		log_info("%s: the blocks of %zu unfinished merges of the host "
		    "index removed", __func__, orphans);
		return store_commit(txn);
	}
	/* Once URLs went unindexed, no forget can promise to find all. */
	if ((rc = store_meta_put(txn, HOSTS_PARTIAL_KEY, "yes")) != STORE_OK) {
		store_abort(txn);
		return rc;
	}
	if ((rc = store_commit(txn)) == STORE_OK) {
		us->hosts.partial = true;
		log_info("%s: %s", __func__, us->host_index ? "the URLs "
		    "stored before format 4 are not in the host index: "
		    "url_forget cannot find them" : "[urls] host_index = no: "
		    "url_forget is refused, and the URLs stored meanwhile "
		    "stay out of its reach once it is on again");
	}
	return rc;
}

int
urlset_hosts_mark_partial(struct urlset *us)
{
	struct store_txn *txn;
	int rc;

	if (us->hosts.partial)
		return STORE_OK;
	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		return rc;
	if ((rc = store_meta_put(txn, HOSTS_PARTIAL_KEY, "yes")) != STORE_OK) {
		store_abort(txn);
		return rc;
	}
	if ((rc = store_commit(txn)) == STORE_OK) {
		us->hosts.partial = true;
		log_info("%s: URLs imported or submitted without their "
		    "texts (as digests) are not in the host index: url_forget "
		    "answers incomplete from now on", __func__);
	}
	return rc;
}

size_t
urlset_texts_bound(const struct urlset *us, size_t text_bytes, size_t n)
{
	return us->host_index ? n * URLHOSTS_REC_HEADER + text_bytes : 0;
}

int
urlset_texts_reserve(struct urlset *us, size_t text_bytes, size_t n)
{
	size_t want = us->hosts.texts_len + urlset_texts_bound(us,
	    text_bytes, n);
	uint8_t *p;

	if (want <= us->hosts.texts_cap)
		return 0;
	if (want < 2 * us->hosts.texts_cap)
		want = 2 * us->hosts.texts_cap;
	if ((p = realloc(us->hosts.texts, want)) == NULL)
		return -1;
	us->hosts.texts = p;
	us->hosts.texts_cap = want;
	return 0;
}

void
urlset_texts_release(struct urlset *us)
{
	if (us->hosts.texts_len > 0)
		return;
	free(us->hosts.texts);
	us->hosts.texts = NULL;
	us->hosts.texts_cap = 0;
}

void
urlset_text_add(struct urlset *us, uint32_t ns, const uint8_t fp[CBF_FP_LEN],
    const struct url_text *t)
{
	if (!us->host_index || t == NULL || t->p == NULL)
		return;
	us->hosts.texts_len += urlhosts_rec_encode(ns, fp, t->p, t->len,
	    us->hosts.texts + us->hosts.texts_len);
}

int
urlset_texts_replay(const uint8_t *text, size_t len, void *arg)
{
	struct urlset *us = arg;

	if (!us->host_index)
		return 0;
	if (urlset_texts_reserve(us, len, 0) == -1)
		return -1;
	memcpy(us->hosts.texts + us->hosts.texts_len, text, len);
	us->hosts.texts_len += len;
	return 0;
}

/*
 * The round's run: its keys built once, sorted through their offsets, and
 * encoded in blocks.  A flush has that done by a thread of its own
 * (urlset_texts_prepare) while it sorts and writes the segments' records,
 * and waits for it only to write the blocks: the one URL writer is what
 * bounds submits, and this took a fifth of its time (on 2 CPUs the rate
 * stayed where it was, the CPUs being busy: BENCHMARKS.md, "The second
 * round's targets").
 */
struct hosts_round {
	const uint8_t *texts;		/* the round's, as the flush began */
	size_t texts_len;
	uint8_t *buf;			/* the keys, one after another */
	size_t len, cap;
	size_t *off;
	uint16_t *klen;
	size_t *order;			/* the keys' indices, sorted */
	size_t n;
	size_t unindexed;		/* texts no key can hold */
	struct hostrun_writer w;	/* the run encoded, held */
	int rc;				/* a store status: STORE_FAILED if
					   memory was short or a text record
					   was cut */
	pthread_t thread;
	bool threaded;			/* thread makes it: join it */
};

static int
cmp_keys(const void *a, const void *b, void *arg)
{
	const struct hosts_round *r = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	size_t la = r->klen[i], lb = r->klen[j];
	int c = memcmp(r->buf + r->off[i], r->buf + r->off[j],
	    la < lb ? la : lb);

	return c != 0 ? c : (la > lb) - (la < lb);
}

/* The keys of the round's text records, and their order. */
static int
round_keys(struct hosts_round *r)
{
	const uint8_t *t = r->texts;
	size_t nrec = 0;

	for (size_t at = 0; at + URLHOSTS_REC_HEADER <= r->texts_len; nrec++)
		at += URLHOSTS_REC_HEADER + (t[at + 4 + CBF_FP_LEN] |
		    (size_t)t[at + 4 + CBF_FP_LEN + 1] << 8);
	/* A key holds its host twice, its record once: room for about
	 * that, grown as needed. */
	r->cap = 2 * r->texts_len;
	if ((r->buf = malloc(r->cap)) == NULL ||
	    (r->off = malloc(nrec * sizeof(*r->off) + 1)) == NULL ||
	    (r->klen = malloc(nrec * sizeof(*r->klen) + 1)) == NULL ||
	    (r->order = malloc(nrec * sizeof(*r->order) + 1)) == NULL)
		return -1;
	for (size_t at = 0; at + URLHOSTS_REC_HEADER <= r->texts_len;) {
		uint8_t key[URLHOSTS_KEY_MAX];
		size_t reclen, klen = urlhosts_rec_key(t + at, &reclen, key);

		if (at + reclen > r->texts_len) {
			log_warnx("%s: a text record runs past the round's "
			    "texts", __func__);
			return -1;
		}
		at += reclen;
		if (klen == 0) {
			/* A host longer than a DNS name, or an authority
			 * past the text kept: a forget would miss it. */
			r->unindexed++;
			continue;
		}
		if (r->len + klen > r->cap) {
			uint8_t *p = realloc(r->buf, 2 * r->cap + klen);

			if (p == NULL)
				return -1;
			r->buf = p;
			r->cap = 2 * r->cap + klen;
		}
		memcpy(r->buf + r->len, key, klen);
		r->off[r->n] = r->len;
		r->klen[r->n] = (uint16_t)klen;
		r->order[r->n] = r->n;
		r->len += klen;
		r->n++;
	}
	qsort_r(r->order, r->n, sizeof(*r->order), cmp_keys, r);
	return 0;
}

/* Makes the round's run: keys, order, blocks. */
static int
round_make(struct hosts_round *r)
{
	int rc = STORE_OK;

	if (round_keys(r) == -1)
		return STORE_FAILED;
	hostrun_writer_init(&r->w, NULL, 0);
	for (size_t i = 0; i < r->n && rc == STORE_OK; i++)
		rc = hostrun_writer_add(&r->w, r->buf + r->off[r->order[i]],
		    r->klen[r->order[i]]);
	return rc == STORE_OK ? hostrun_writer_finish(&r->w) : rc;
}

static void *
round_main(void *arg)
{
	struct hosts_round *r = arg;

	pthread_setname_np(pthread_self(), "nddd-hostkeys");
	r->rc = round_make(r);
	return NULL;
}

/* A round of the texts us holds now; NULL if memory is short. */
static struct hosts_round *
round_new(struct urlset *us)
{
	struct hosts_round *r = calloc(1, sizeof(*r));

	if (r != NULL) {
		r->texts = us->hosts.texts;
		r->texts_len = us->hosts.texts_len;
	}
	return r;
}

void
urlset_texts_prepare(struct urlset *us)
{
	struct hosts_round *r;

	if (us->hosts.round != NULL || us->hosts.texts_len == 0 ||
	    (r = round_new(us)) == NULL)
		return;
	if (pthread_create(&r->thread, NULL, round_main, r) == 0)
		r->threaded = true;
	else
		r->rc = round_make(r);
	us->hosts.round = r;
}

/* Waits for the round's keys, if a thread makes them, and hands them
 * over; NULL if no flush prepared any. */
static struct hosts_round *
round_take(struct urlset *us)
{
	struct hosts_round *r = us->hosts.round;

	us->hosts.round = NULL;
	if (r != NULL && r->threaded)
		pthread_join(r->thread, NULL);
	return r;
}

static void
round_free(struct hosts_round *r)
{
	if (r == NULL)
		return;
	free(r->buf);
	free(r->off);
	free(r->klen);
	free(r->order);
	hostrun_writer_discard(&r->w);
	free(r);
}

int
urlset_texts_put(struct urlset *us, struct store_txn *txn)
{
	struct hosts_round *r = round_take(us);
	int rc;

	if (us->hosts.texts_len == 0) {
		round_free(r);
		return STORE_OK;
	}
	if (r == NULL) {
		/* Not prepared: memory was short then. */
		if ((r = round_new(us)) == NULL)
			return STORE_FAILED;
		r->rc = round_make(r);
	}
	if ((rc = r->rc) != STORE_OK)
		goto out;
	if (r->unindexed > 0 && !us->hosts.partial) {
		if ((rc = store_meta_put(txn, HOSTS_PARTIAL_KEY, "yes")) !=
		    STORE_OK)
			goto out;
		us->hosts.partial_pending = true;
	}
	if ((rc = hostrun_writer_put(&r->w, txn, us->hosts.next_run)) ==
	    STORE_OK) {
		/* Kept until the flush commits (urlset_texts_flushed). */
		hostrun_free(&us->hosts.run_pending);
		us->hosts.run_pending = r->w.run;
		us->hosts.run_is_pending = true;
		memset(&r->w.run, 0, sizeof(r->w.run));
	}
out:
	round_free(r);
	return rc;
}

/* Adds run r to the list; false if memory is short. */
static bool
add_run(struct urlset *us, const struct hostrun *r)
{
	if (us->hosts.nruns == us->hosts.runs_cap) {
		size_t cap = us->hosts.runs_cap ? 2 * us->hosts.runs_cap : 16;
		struct hostrun *p = realloc(us->hosts.runs, cap * sizeof(*p));

		if (p == NULL)
			return false;
		us->hosts.runs = p;
		us->hosts.runs_cap = cap;
	}
	us->hosts.runs[us->hosts.nruns++] = *r;
	if (r->id >= us->hosts.next_run)
		us->hosts.next_run = r->id + 1;
	publish_stats(us);
	return true;
}

void
urlset_texts_flushed(struct urlset *us)
{
	us->hosts.texts_len = 0;
	us->hosts.merge_failed = false;
	if (us->hosts.partial_pending) {
		us->hosts.partial_pending = false;
		us->hosts.partial = true;
		log_warnx("%s: URLs the host index cannot hold (a host longer "
		    "than 253 bytes, or user info past the 490 bytes kept): "
		    "url_forget answers incomplete from now on", __func__);
	}
	if (!us->hosts.run_is_pending)
		return;
	us->hosts.run_is_pending = false;
	if (!add_run(us, &us->hosts.run_pending))
		fatalx("%s: out of memory", __func__);
	memset(&us->hosts.run_pending, 0, sizeof(us->hosts.run_pending));
}

void
urlset_texts_discard(struct urlset *us)
{
	round_free(round_take(us));
	us->hosts.partial_pending = false;
	if (us->hosts.run_is_pending)
		hostrun_free(&us->hosts.run_pending);
	us->hosts.run_is_pending = false;
}

void
urlset_hosts_free(struct urlset *us)
{
	urlset_hosts_merge_end(us);
	urlset_texts_discard(us);
	for (size_t i = 0; i < us->hosts.nruns; i++)
		hostrun_free(&us->hosts.runs[i]);
	free(us->hosts.runs);
	us->hosts.runs = NULL;
	us->hosts.nruns = us->hosts.runs_cap = 0;
}

/* A run's level: MERGE_FANOUT runs of one level make one of the next. */
static unsigned
run_level(const struct hostrun *r)
{
	uint64_t n = r->nkeys / MERGE_BASE;
	unsigned level = 0;

	while (n >= MERGE_FANOUT) {
		n /= MERGE_FANOUT;
		level++;
	}
	return level;
}

/* The lowest level with MERGE_FANOUT runs or more; false if none. */
static bool
merge_level(const struct urlset *us, unsigned *out)
{
	unsigned count[32] = { 0 };

	for (size_t i = 0; i < us->hosts.nruns; i++) {
		unsigned lv = run_level(&us->hosts.runs[i]);

		if (lv < 32 && ++count[lv] >= MERGE_FANOUT) {
			for (unsigned l = 0; l <= lv; l++)
				if (count[l] >= MERGE_FANOUT) {
					*out = l;
					return true;
				}
		}
	}
	return false;
}

static bool
merge_due(const struct urlset *us)
{
	unsigned level;

	return merge_level(us, &level);
}

/*
 * Whether an entry of merge m may still name a record: its namespace is
 * not dropped, and the journal's table or the index knows its fingerprint
 * (the index may know another's with the same tag: then the entry stays).
 * Keys come in namespace order: the registry is asked once per namespace
 * (an answer kept across steps can only be stale towards live, as ids are
 * never reused, and a dead entry kept is harmless).
 */
static bool
entry_live(struct urlset *us, struct hosts_merge *m, const uint8_t *key,
    size_t klen)
{
	uint32_t ns = be_get32(key);
	const uint8_t *fp = urlhosts_key_fp(key, klen);
	struct urlns_info info;
	struct urlmem_entry e;
	uint32_t segs[8];

	if (!m->ns_known || m->ns != ns) {
		m->ns = ns;
		m->ns_known = true;
		m->ns_live = urlns_info(us->ns, ns, &info) &&
		    !urlns_dropping(us->ns, ns);
	}
	if (!m->ns_live)
		return false;
	if (urlmem_get(us->mem, fp, &e))
		return e.st.count > 0;
	return urlidx_lookup(us->rd.idx, fp, segs, 8) > 0;
}

/* The order of two iterators' keys. */
static int
cmp_key(const struct hostrun_iter *a, const struct hostrun_iter *b)
{
	int c = memcmp(a->key, b->key, a->klen < b->klen ? a->klen : b->klen);

	return c != 0 ? c : (a->klen > b->klen) - (a->klen < b->klen);
}

void
urlset_hosts_merge_end(struct urlset *us)
{
	struct hosts_merge *m = us->hosts.merge;

	if (m == NULL)
		return;
	for (size_t i = 0; i < m->n; i++)
		hostrun_iter_free(&m->it[i]);
	hostrun_writer_discard(&m->w);
	free(m);
	us->hosts.merge = NULL;
	publish_stats(us);
}

/* Starts merging the runs of one level, in txn; false if none is due. */
static bool
merge_start(struct urlset *us, struct store_txn *txn, int *rc)
{
	struct hosts_merge *m;
	unsigned level, top = 0;

	*rc = STORE_OK;
	if (!merge_level(us, &level))
		return false;
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		*rc = STORE_FAILED;
		return false;
	}
	us->hosts.merge = m;
	for (size_t i = 0; i < us->hosts.nruns; i++) {
		unsigned lv = run_level(&us->hosts.runs[i]);

		if (lv == level && m->n < HOSTS_MERGE_MAX) {
			/* The iterators read from the first block: they need
			 * no fences, and the list may move under them. */
			m->in[m->n] = us->hosts.runs[i];
			m->in[m->n].fences = NULL;
			m->in[m->n].fence_off = NULL;
			m->in_keys += m->in[m->n++].nkeys;
		} else if (lv > top)
			top = lv;
	}
	/* Dead entries are left out where the runs become the largest: each
	 * entry is looked up about once, not at every rewrite (the lookups
	 * would cost more than the merges). */
	m->prune = level >= top;
	hostrun_writer_init(&m->w, txn, us->hosts.next_run++);
	publish_stats(us);
	for (size_t i = 0; i < m->n; i++)
		if ((*rc = hostrun_iter_init(&m->it[i], txn, &m->in[i], NULL,
		    0)) != STORE_OK ||
		    (*rc = hostrun_iter_next(&m->it[i], &m->done[i])) !=
		    STORE_OK)
			return false;
	return true;
}

/* Moves chunk keys of the merge to its run, in txn; *end once every key
 * is. */
static int
merge_chunk(struct urlset *us, struct hosts_merge *m, size_t chunk,
    bool *end)
{
	int rc;

	*end = false;
	for (size_t moved = 0; moved < chunk; moved++) {
		size_t min = m->n;

		for (size_t i = 0; i < m->n; i++)
			if (!m->done[i] && (min == m->n ||
			    cmp_key(&m->it[i], &m->it[min]) < 0))
				min = i;
		if (min == m->n) {
			*end = true;
			return STORE_OK;
		}
		if ((!m->prune || entry_live(us, m, m->it[min].key,
		    m->it[min].klen)) && (rc = hostrun_writer_add(&m->w,
		    m->it[min].key, m->it[min].klen)) != STORE_OK)
			return rc;
		if ((rc = hostrun_iter_next(&m->it[min], &m->done[min])) !=
		    STORE_OK)
			return rc;
	}
	return STORE_OK;
}

/* Ends the merge in txn: its run's directory, the merged runs gone. */
static int
merge_finish(struct hosts_merge *m, struct store_txn *txn)
{
	int rc;

	if ((rc = hostrun_writer_finish(&m->w)) != STORE_OK)
		return rc;
	for (size_t i = 0; i < m->n; i++)
		if ((rc = hostrun_delete(txn, &m->in[i])) != STORE_OK)
			return rc;
	return STORE_OK;
}

/* The merged runs out of the list, the merge's run in. */
static void
merge_publish(struct urlset *us, struct hosts_merge *m)
{
	for (size_t i = 0; i < m->n; i++)
		for (size_t j = 0; j < us->hosts.nruns; j++)
			if (us->hosts.runs[j].id == m->in[i].id) {
				hostrun_free(&us->hosts.runs[j]);
				us->hosts.runs[j] =
				    us->hosts.runs[--us->hosts.nruns];
				break;
			}
	log_debug("%s: %zu runs of %" PRIu64 " keys into one of %" PRIu64,
	    __func__, m->n, m->in_keys, m->w.run.nkeys);
	if (!add_run(us, &m->w.run))
		fatalx("%s: out of memory", __func__);
	memset(&m->w.run, 0, sizeof(m->w.run));
}

bool
urlset_hosts_merge_step(struct urlset *us, bool idle)
{
	struct store_txn *txn;
	size_t chunk = urlmem_capacity(us->mem);
	bool end = false;
	int rc;

	if (us->hosts.merge_failed ||
	    (us->hosts.merge == NULL && !merge_due(us)))
		return false;
	/* An idle writer merges a flush's worth of keys per step.  A busy
	 * one only once runs pile up, and an eighth of that between two
	 * groups: a merge must not hold every group back. */
	if (!idle) {
		if (us->hosts.nruns < HOSTS_RUNS_BUSY)
			return false;
		chunk /= 8;
	}
	if (chunk == 0)
		chunk = 1;
	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		goto failed;
	if (us->hosts.merge == NULL) {
		if (!merge_start(us, txn, &rc)) {
			store_abort(txn);
			urlset_hosts_merge_end(us);
			if (rc != STORE_OK)
				goto failed;
			return false;
		}
	} else {
		/* Each chunk in a transaction of its own: flushes come
		 * between them. */
		us->hosts.merge->w.txn = txn;
		for (size_t i = 0; i < us->hosts.merge->n; i++)
			us->hosts.merge->it[i].txn = txn;
	}
	if ((rc = merge_chunk(us, us->hosts.merge, chunk, &end)) != STORE_OK ||
	    (end && (rc = merge_finish(us->hosts.merge, txn)) != STORE_OK)) {
		store_abort(txn);
		goto failed;
	}
	if ((rc = store_commit(txn)) != STORE_OK)
		goto failed;
	if (end) {
		merge_publish(us, us->hosts.merge);
		urlset_hosts_merge_end(us);
	}
	return true;
failed:
	/* Its blocks written so far are found and removed at the next
	 * start; the merge is tried again after the next flush. */
	log_warnx("%s: a merge of the host index's runs failed: %s",
	    __func__, store_strstatus(rc));
	urlset_hosts_merge_end(us);
	us->hosts.merge_failed = true;
	return false;
}
