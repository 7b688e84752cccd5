/*
 * urllookup: checks, in batches.  See urlset.h.
 *
 * A batch goes through its stages together, each stage prefetching what
 * the next reads, so that the cache misses of a thousand URLs overlap
 * instead of queueing: the filter's counters, the journal's table, the
 * index's buckets, the segments' headers (found through the store), the
 * records.  When the segments are not in memory, a sample of the pages a
 * stage needs is checked (mincore); if some are missing, the kernel is
 * asked for all of them at once (MADV_WILLNEED), so the disk serves the
 * batch's reads in parallel rather than one page fault at a time.  A batch
 * in key order (a bulk check's) asks for each missing record page with
 * those after it in its segment, which the batches that follow will read.
 *
 * Consistency with the URL writer.  A reader begins its store snapshot
 * before it reads the journal's table or the index, and the snapshot must
 * hold the flush that emptied the table last (the writer publishes that
 * flush's transaction id before clearing the table): then the table and
 * the snapshot together hold every change acknowledged before the read
 * began.  If the table is cleared again during the read, the read is
 * redone.  The writer publishes a flush or a merge to the index only after
 * its transaction committed, and reuses a segment id only in a transaction
 * begun after the index stopped naming it: a segment the index names is
 * either in the snapshot with the contents the index meant, or absent from
 * it (written or deleted since the snapshot began), and then the URL's read
 * is redone with a newer snapshot.
 *
 * The index's entries are hints (urlidx.h): one may lead to a segment that
 * holds a dead record of the URL (replaced or deleted, not merged away
 * yet) while it belongs to another URL.  A record counts only when its bit
 * in the segment's live bitmap, read in the same snapshot, is set.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "urlset_impl.h"

/* Pages whose residency a stage samples before reading them. */
#define LOOKUP_SAMPLE		8
/* How long a batch may find the index naming segments its snapshots do not
 * hold before the store is declared inconsistent with the index (it cannot
 * happen while both are right: the writer is then between a commit and
 * the index's update, which takes milliseconds). */
#define LOOKUP_GIVE_UP_MS	10000
/* The wait before the next snapshot when the last one was no newer: the
 * writer is updating the index after its commit.  Doubles up to the most. */
#define LOOKUP_WAIT_MIN_NS	20000
#define LOOKUP_WAIT_MAX_NS	1000000
/* Snapshots tried for one batch before the reader asks the writer to hold
 * its merges back: a batch of a thousand URLs spread over every segment
 * meets a segment each merge moves, and a backlog of merges done back to
 * back could otherwise outrun it. */
#define LOOKUP_STARVING		16
#define PAGE			4096
/* A batch of at least this many keys, in key order, is read ahead
 * (urlset_lookup_store): a bulk check's (docs/urlstore.md, "Bulk checks"). */
#define LOOKUP_SORTED_MIN	64

struct lookup_cand {
	uint32_t key;			/* index into the batch */
	uint32_t seg;
	const uint8_t *data;		/* the segment, or NULL */
	const uint8_t *live;		/* its live bitmap */
	uint32_t nrec;
	uint32_t lo, hi, guess;
};

/*
 * A segment as a reader's snapshot holds it.  A reader keeps them by id,
 * stamped with the snapshot's transaction id: a later snapshot with the
 * same id is the same committed tree, whose pages no writer may reuse, so
 * the pointers hold and the store need not be asked again.
 */
struct lookup_seg {
	uint64_t txnid;			/* 0: not known */
	const uint8_t *data;		/* NULL: not in that snapshot */
	const uint8_t *live;		/* its bitmap */
	const uint8_t *end;		/* the end of its data */
	/* Batches in key order: the pages before seen were in memory when
	 * last asked about; those before asked were asked for. */
	const uint8_t *seen, *asked;
	uint32_t nrec;
};

struct urlset_reader *
urlset_reader_new(struct urlset *us)
{
	struct urlset_reader *rd;

	if ((rd = calloc(1, sizeof(*rd))) == NULL)
		return NULL;
	rd->us = us;
	if ((rd->txn = store_reader_new(us->st)) == NULL) {
		free(rd);
		return NULL;
	}
	pthread_mutex_lock(&us->rd.readers_lock);
	rd->next = us->rd.readers;
	us->rd.readers = rd;
	pthread_mutex_unlock(&us->rd.readers_lock);
	return rd;
}

void
urlset_reader_nowait(struct urlset_reader *rd)
{
	rd->nowait = true;
}

void
urlset_reader_free(struct urlset_reader *rd)
{
	struct urlset_reader **p;

	if (rd == NULL)
		return;
	pthread_mutex_lock(&rd->us->rd.readers_lock);
	for (p = &rd->us->rd.readers; *p != NULL; p = &(*p)->next)
		if (*p == rd) {
			*p = rd->next;
			break;
		}
	pthread_mutex_unlock(&rd->us->rd.readers_lock);
	store_reader_free(rd->txn);
	urlset_reader_release(rd);
	free(rd);
}

/*
 * The store-load pattern of a grace period: the reader publishes its epoch,
 * then reads the pointer; the writer publishes the pointer, then a new
 * epoch, then looks at the readers' epochs.  Sequentially consistent, so
 * that one of the two sees the other.
 */
void
urlset_enter(struct urlset *us, struct urlset_reader *rd)
{
	__atomic_store_n(&rd->active, __atomic_load_n(&us->rd.epoch,
	    __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
	rd->idx = __atomic_load_n(&us->rd.idx, __ATOMIC_SEQ_CST);
}

void
urlset_leave(struct urlset_reader *rd)
{
	__atomic_store_n(&rd->active, 0, __ATOMIC_RELEASE);
}

void
urlset_grace(struct urlset *us)
{
	uint64_t e = __atomic_add_fetch(&us->rd.epoch, 1, __ATOMIC_SEQ_CST);
	struct timespec nap = { 0, 50 * 1000 };
	struct urlset_reader *rd;

	pthread_mutex_lock(&us->rd.readers_lock);
	for (rd = us->rd.readers; rd != NULL; rd = rd->next) {
		uint64_t a;

		while ((a = __atomic_load_n(&rd->active, __ATOMIC_SEQ_CST)) !=
		    0 && a < e)
			nanosleep(&nap, NULL);
	}
	pthread_mutex_unlock(&us->rd.readers_lock);
}

void
urlset_reader_release(struct urlset_reader *rd)
{
	free(rd->cands);
	free(rd->pages);
	free(rd->segs);
	free(rd->which);
	free(rd->retry);
	free(rd->maybe);
	free(rd->found);
	rd->cands = NULL;
	rd->pages = NULL;
	rd->segs = NULL;
	rd->which = rd->retry = rd->maybe = NULL;
	rd->found = NULL;
	rd->cands_cap = rd->keys_cap = rd->segs_len = 0;
}

int
urlset_reader_reserve(struct urlset_reader *rd, size_t n)
{
	uint32_t *which, *retry, *maybe;
	struct url_found *found;

	if (n <= rd->keys_cap)
		return 0;
	which = realloc(rd->which, n * sizeof(*which));
	if (which != NULL)
		rd->which = which;
	retry = realloc(rd->retry, n * sizeof(*retry));
	if (retry != NULL)
		rd->retry = retry;
	maybe = realloc(rd->maybe, n * sizeof(*maybe));
	if (maybe != NULL)
		rd->maybe = maybe;
	found = realloc(rd->found, n * sizeof(*found));
	if (found != NULL)
		rd->found = found;
	if (which == NULL || retry == NULL || maybe == NULL || found == NULL)
		return -1;
	rd->keys_cap = n;
	return 0;
}

static int
reserve_cands(struct urlset_reader *rd, size_t n)
{
	struct lookup_cand *c;
	const void **p;

	if (n > rd->cands_cap) {
		if ((c = realloc(rd->cands, n * sizeof(*c))) == NULL)
			return -1;
		rd->cands = c;
		if ((p = realloc(rd->pages, n * sizeof(*p))) == NULL)
			return -1;
		rd->pages = p;
		rd->cands_cap = n;
	}
	return 0;
}

bool (*urlset_resident_hook)(const void *page);

static bool
resident(const void *page)
{
	unsigned char vec;

	if (urlset_resident_hook != NULL)
		return urlset_resident_hook(page);
	return mincore((void *)page, PAGE, &vec) != 0 || (vec & 1);
}

static const void *
page_of(const void *p)
{
	return (const void *)((uintptr_t)p & ~(uintptr_t)(PAGE - 1));
}

/*
 * If a sample of the pages is not in memory, asks the kernel to read all of
 * them now, in parallel, and returns STORE_OK.  A reader that may not wait
 * asks about every page, and gets STORE_WOULD_BLOCK, the kernel asked for
 * nothing, if one is missing.  In memory, this costs a few system calls
 * per batch.
 */
static int
pages_willneed(const struct urlset_reader *rd, const void **pages, size_t n)
{
	size_t step = rd->nowait ? 1 : n / LOOKUP_SAMPLE + 1, missing = 0;

	for (size_t i = 0; i < n; i += step)
		if (!resident(pages[i]))
			missing++;
	if (missing == 0)
		return STORE_OK;
	if (rd->nowait)
		return STORE_WOULD_BLOCK;
	for (size_t i = 0; i < n; i++)
		if (i == 0 || pages[i] != pages[i - 1])
			madvise((void *)pages[i], PAGE, MADV_WILLNEED);
	return STORE_OK;
}

/*
 * The record pages of a batch in key order: each segment's are used in
 * their order, so a missing one is asked for with those that follow it, up
 * to URLSET_READ_AHEAD, and the disk serves the store in large reads, each
 * page once.  Every page is asked about once, when the batches reach it: one
 * asked for but gone again (the memory is short) or not read yet is asked
 * for alone, with the batch's others, rather than read when touched.
 */
static void
pages_read_ahead(struct urlset_reader *rd, const struct lookup_cand *cands,
    size_t nc)
{
	for (size_t c = 0; c < nc; c++) {
		const struct lookup_cand *k = &cands[c];
		struct lookup_seg *s = &rd->segs[k->seg];
		const uint8_t *page;

		if (k->data == NULL || k->hi <= k->lo)
			continue;
		page = page_of(urlseg_record(k->data, k->guess));
		if (page < s->seen)
			continue;
		if (resident(page)) {
			s->seen = page + PAGE;
			continue;
		}
		if (page < s->asked) {
			madvise((void *)page, PAGE, MADV_WILLNEED);
			continue;
		}
		s->asked = page + URLSET_READ_AHEAD < s->end ?
		    page + URLSET_READ_AHEAD : s->end;
		madvise((void *)page, (size_t)(s->asked - page), MADV_WILLNEED);
		rd->read_ahead++;
	}
}

/* Whether keys[which[0..n)] are in key order, and enough to read ahead. */
static bool
keys_sorted(const struct url_key *keys, const uint32_t *which, size_t n)
{
	if (n < LOOKUP_SORTED_MIN)
		return false;
	for (size_t i = 1; i < n; i++)
		if (urlrec_cmp_fp(keys[which[i - 1]].fp, keys[which[i]].fp) > 0)
			return false;
	return true;
}

/*
 * Segment seg as rd's snapshot (txnid) holds it, from the reader's table
 * or the store.  Returns a store status (STORE_OK also when it is absent:
 * then its data is NULL).
 */
static int
seg_resolve(struct urlset_reader *rd, uint64_t txnid, uint32_t seg,
    const struct lookup_seg **out)
{
	struct lookup_seg *s;
	struct store_val v, b;
	int64_t nrec;
	int rc;

	if (seg >= rd->segs_len) {
		size_t len = rd->segs_len ? rd->segs_len : 64;

		while (len <= seg)
			len *= 2;
		if ((s = realloc(rd->segs, len * sizeof(*s))) == NULL)
			return STORE_FAILED;
		memset(s + rd->segs_len, 0, (len - rd->segs_len) * sizeof(*s));
		rd->segs = s;
		rd->segs_len = len;
	}
	s = &rd->segs[seg];
	*out = s;
	if (s->txnid == txnid)
		return STORE_OK;
	s->txnid = 0;
	s->data = s->live = NULL;
	rc = store_get(rd->txn, STORE_URL_SEGS, &seg, sizeof(seg), &v);
	if (rc == STORE_NOTFOUND) {
		s->txnid = txnid;
		return STORE_OK;
	}
	if (rc != STORE_OK)
		return rc;
	if ((nrec = urlseg_check(v.data, v.len)) < 0 ||
	    store_get(rd->txn, STORE_URL_LIVE, &seg, sizeof(seg), &b) !=
	    STORE_OK || b.len < URLSEG_BITMAP_LEN(nrec)) {
		log_warnx("%s: segment %u is damaged", __func__, seg);
		return STORE_FAILED;
	}
	s->data = v.data;
	s->live = b.data;
	s->end = (const uint8_t *)v.data + v.len;
	s->seen = s->asked = s->data;
	s->nrec = (uint32_t)nrec;
	s->txnid = txnid;
	return STORE_OK;
}

int
urlset_lookup_store(struct urlset_reader *rd,
    const struct url_key *keys, const uint32_t *which, size_t n,
    struct url_found *found, uint32_t *retry, size_t *nretry)
{
	size_t nc = 0, npages = 0;
	uint64_t txnid = store_txn_id(rd->txn);
	const void **pages;
	bool sorted;
	int rc;

	*nretry = 0;
	if (n == 0)
		return STORE_OK;
	if (reserve_cands(rd, n * 2 + URLIDX_MAX_CANDIDATES) == -1)
		return STORE_FAILED;
	/* The index: each key's candidates, its buckets fetched ahead. */
	for (size_t i = 0; i < n && i < URLSET_PREFETCH; i++)
		urlidx_prefetch(rd->idx, keys[which[i]].fp);
	for (size_t i = 0; i < n; i++) {
		uint32_t segs[URLIDX_MAX_CANDIDATES];
		size_t m;

		if (i + URLSET_PREFETCH < n)
			urlidx_prefetch(rd->idx,
			    keys[which[i + URLSET_PREFETCH]].fp);
		m = urlidx_lookup(rd->idx, keys[which[i]].fp, segs,
		    URLIDX_MAX_CANDIDATES);

		found[which[i]].found = false;
		if (nc + m > rd->cands_cap &&
		    reserve_cands(rd, 2 * (nc + m)) == -1)
			return STORE_FAILED;
		for (size_t j = 0; j < m; j++)
			rd->cands[nc++] = (struct lookup_cand){ .key = which[i],
			    .seg = segs[j] };
	}
	if (nc == 0)
		return STORE_OK;
	if (reserve_cands(rd, nc) == -1)
		return STORE_FAILED;
	pages = rd->pages;
	/* The segments (the store is asked only about those this snapshot
	 * has not shown yet), and the header line where each key's fence
	 * should be. */
	for (size_t c = 0; c < nc; c++) {
		struct lookup_cand *k = &rd->cands[c];
		const struct lookup_seg *s;

		if ((rc = seg_resolve(rd, txnid, k->seg, &s)) != STORE_OK)
			return rc;
		k->data = s->data;
		k->live = s->live;
		k->nrec = s->nrec;
		if (k->data != NULL) {
			__builtin_prefetch(urlseg_fence_addr(k->data,
			    urlseg_fence_guess(keys[k->key].fp, k->nrec)));
			pages[npages++] = page_of(k->data);
		}
	}
	if ((rc = pages_willneed(rd, pages, npages)) != STORE_OK)
		return rc;
	sorted = !rd->nowait && keys_sorted(keys, which, n);
	npages = 0;
	for (size_t c = 0; c < nc; c++) {
		struct lookup_cand *k = &rd->cands[c];

		if (k->data == NULL)
			continue;
		urlseg_locate(k->data, k->nrec, keys[k->key].fp, &k->lo, &k->hi,
		    &k->guess);
		if (k->hi > k->lo) {
			const uint8_t *r = urlseg_record(k->data, k->guess);

			__builtin_prefetch(r);
			__builtin_prefetch(k->live + k->guess / 8);
			pages[npages++] = page_of(r);
		}
	}
	if (sorted)
		pages_read_ahead(rd, rd->cands, nc);
	else if ((rc = pages_willneed(rd, pages, npages)) != STORE_OK)
		return rc;
	/* The records. */
	for (size_t c = 0; c < nc; c++) {
		struct lookup_cand *k = &rd->cands[c];
		struct url_found *f = &found[k->key];
		struct url_record r;
		int64_t slot;

		if (f->found || k->data == NULL)
			continue;
		slot = urlseg_find(k->data, k->lo, k->hi, k->guess,
		    keys[k->key].fp);
		if (slot < 0 || !urlseg_bit(k->live, (uint32_t)slot))
			continue;
		urlrec_decode(urlseg_record(k->data, (uint32_t)slot), &r);
		f->found = true;
		f->st = r.st;
		f->seg = k->seg;
		f->slot = (uint32_t)slot;
	}
	/* A key whose segment was not in the snapshot and that no other
	 * candidate found is read again with a newer one. */
	for (size_t c = 0; c < nc; c++) {
		struct lookup_cand *k = &rd->cands[c];

		if (k->data != NULL || found[k->key].found)
			continue;
		if (*nretry == 0 || retry[*nretry - 1] != k->key)
			retry[(*nretry)++] = k->key;
	}
	return STORE_OK;
}

/* What a reader of namespace ns at now_ms is told of a URL in state st. */
static void
answer(const struct url_state *st, uint32_t ns, uint64_t now_ms,
    struct url_state *out)
{
	if (st->count == 0 || st->ns != ns) {
		memset(out, 0, sizeof(*out));
		return;
	}
	*out = *st;
	if (!url_state_visible(st, ns, now_ms))
		out->count = 0;		/* expired: its times tell how long */
}

int
urlset_check(struct urlset *us, struct urlset_reader *rd, uint32_t ns,
    uint64_t now_ms, const struct url_key *keys, const bool *valid,
    size_t n, struct url_state *states, struct urlset_tally *tally)
{
	size_t nmaybe = 0, nw, nretry = 0, tries = 0;
	uint64_t started = 0, last_txn = 0;
	long wait_ns = LOOKUP_WAIT_MIN_NS;
	int rc;

	if (urlset_reader_reserve(rd, n) == -1)
		return STORE_FAILED;
	/* The filter first: most unseen URLs end here. */
	for (size_t i = 0; i < n; i++) {
		if (valid != NULL && !valid[i])
			continue;
		tally->checks++;
		memset(&states[i], 0, sizeof(states[i]));
		if (!cbf_maybe(us->filter, keys[i].idx)) {
			tally->filter_only++;
			continue;
		}
		rd->maybe[nmaybe++] = (uint32_t)i;
	}
	if (nmaybe == 0)
		return STORE_OK;
	memcpy(rd->which, rd->maybe, nmaybe * sizeof(*rd->which));
	nw = nmaybe;
	/* Entered before the snapshot begins: segment ids freed since the
	 * entry are not reused under it (urlsegs.c, free_id). */
	urlset_enter(us, rd);
	if ((rc = store_reader_begin(rd->txn)) != STORE_OK) {
		urlset_leave(rd);
		return rc;
	}
	for (;;) {
		uint32_t gen = urlmem_generation(us->mem);
		bool mem = urlmem_count(us->mem) > 0;
		size_t left = 0;

		/* The snapshot must hold the flush that began this
		 * generation of the journal's table. */
		if (store_txn_id(rd->txn) < __atomic_load_n(&us->flush_txnid,
		    __ATOMIC_ACQUIRE)) {
			store_reader_end(rd->txn);
			if ((rc = store_reader_begin(rd->txn)) != STORE_OK)
				break;
			continue;
		}

		/* The journal's table: the latest state of what changed
		 * since the last flush. */
		for (size_t i = 0; mem && i < nw && i < URLSET_PREFETCH; i++)
			urlmem_prefetch(us->mem, keys[rd->which[i]].fp);
		for (size_t i = 0; i < nw; i++) {
			struct urlmem_entry e;
			uint32_t k = rd->which[i];

			if (mem && i + URLSET_PREFETCH < nw)
				urlmem_prefetch(us->mem,
				    keys[rd->which[i + URLSET_PREFETCH]].fp);
			if (mem && urlmem_lookup(us->mem, keys[k].fp, &e))
				answer(&e.st, ns, now_ms, &states[k]);
			else
				rd->which[left++] = k;
		}
		rc = urlset_lookup_store(rd, keys, rd->which, left,
		    rd->found, rd->retry, &nretry);
		if (rc != STORE_OK)
			break;
		for (size_t i = 0; i < left; i++) {
			uint32_t k = rd->which[i];

			if (rd->found[k].found)
				answer(&rd->found[k].st, ns, now_ms,
				    &states[k]);
		}
		if (urlmem_generation(us->mem) != gen) {
			/* A flush ended the table read: read it all again,
			 * with a snapshot that holds the flush. */
			memcpy(rd->which, rd->maybe, nmaybe *
			    sizeof(*rd->which));
			nw = nmaybe;
			nretry = 0;
		} else if (nretry == 0)
			break;
		else {
			memcpy(rd->which, rd->retry, nretry *
			    sizeof(*rd->which));
			nw = nretry;
		}
		if (rd->nowait) {
			/* Another pass may wait for the writer. */
			rc = STORE_WOULD_BLOCK;
			break;
		}
		if (++tries == LOOKUP_STARVING)
			__atomic_fetch_add(&us->starving, 1, __ATOMIC_SEQ_CST);
		if (tries == 1)
			started = clock_mono_ms();
		else if (clock_mono_ms() - started > LOOKUP_GIVE_UP_MS) {
			log_warnx("%s: the index names segments the store "
			    "does not hold", __func__);
			rc = STORE_FAILED;
			break;
		}
		last_txn = store_txn_id(rd->txn);
		store_reader_end(rd->txn);
		if ((rc = store_reader_begin(rd->txn)) != STORE_OK)
			break;
		/* No newer commit: the writer is still updating the index
		 * after its last one.  Let it, rather than spin. */
		if (store_txn_id(rd->txn) == last_txn) {
			struct timespec nap = { 0, wait_ns };

			nanosleep(&nap, NULL);
			if (wait_ns < LOOKUP_WAIT_MAX_NS)
				wait_ns *= 2;
		} else
			wait_ns = LOOKUP_WAIT_MIN_NS;
	}
	urlset_leave(rd);
	store_reader_end(rd->txn);
	if (tries >= LOOKUP_STARVING)
		__atomic_fetch_sub(&us->starving, 1, __ATOMIC_SEQ_CST);
	for (size_t i = 0; i < nmaybe; i++)
		tally->false_positives += states[rd->maybe[i]].count == 0;
	return rc;
}
