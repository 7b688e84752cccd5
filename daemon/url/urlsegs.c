/*
 * urlsegs: the URL segments in the store: the flush that writes the
 * journal's URLs into new segments, the merge that rewrites small and
 * sparse ones, the rebuild of memory from them at start-up, and their
 * verification.  See urlset.h and urlrec.h.
 *
 * Every change here is one store transaction, and memory (the index, the
 * segment directory, the journal's table) follows only after it committed.
 * A segment id freed by a merge is reused only by a later transaction, once
 * the index names it no more (see urllookup.c for why readers need that).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "urlset_impl.h"

/* A merge step reads at most this many segments' worth of live records. */
#define MERGE_SEGMENTS		4
/* The merge backlog that holds writers back: more small segments than
 * this, or dead records above a quarter of all (with a sparse segment to
 * merge). */
#define MERGE_FORCE_SMALL	64
#define MERGE_FORCE_DEAD_DIV	4

static bool
is_small(const struct urlset *us, uint32_t nrec)
{
	return nrec < us->seg_records / 2;
}

static bool
is_sparse(uint32_t nrec, uint32_t nlive)
{
	return (uint32_t)nlive * 2 <= nrec;
}

/* Counts a directory entry in (sign 1) or out of (-1) the totals. */
static void
dir_count(struct urlset *us, uint32_t id, int sign)
{
	const struct segdir *d = &us->segs.dir[id];

	if (d->nrec == 0)
		return;
	us->segs.count += (uint64_t)(int64_t)sign;
	us->segs.records += (uint64_t)((int64_t)sign * d->nrec);
	us->segs.dead += (uint64_t)((int64_t)sign * (d->nrec - d->nlive));
	if (is_small(us, d->nrec))
		us->segs.small += (uint64_t)(int64_t)sign;
	if (is_sparse(d->nrec, d->nlive))
		us->segs.sparse += (uint64_t)(int64_t)sign;
}

void
urlset_publish_seg_stats(struct urlset *us)
{
	__atomic_store_n(&us->stats.segments, us->segs.count, __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.small, us->segs.small, __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.records, us->segs.records,
	    __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.dead, us->segs.dead, __ATOMIC_RELAXED);
}

static int
dir_grow(struct urlset *us, uint32_t id)
{
	struct segdir *d;
	uint32_t n = us->segs.dir_len ? us->segs.dir_len : 64;

	if (id < us->segs.dir_len)
		return 0;
	while (n <= id)
		n *= 2;
	if ((d = realloc(us->segs.dir, n * sizeof(*d))) == NULL)
		return -1;
	memset(d + us->segs.dir_len, 0, (n - us->segs.dir_len) * sizeof(*d));
	us->segs.dir = d;
	us->segs.dir_len = n;
	return 0;
}

/*
 * Segment ids are reused, but not under a reader that may still see the
 * old segment: a reader whose snapshot predates a merge holds the merged
 * segments' old contents, and if their id named a new segment meanwhile,
 * the index would send it to that id and it would find neither the old
 * records nor a reason to read again (urlset_lookup_store retries only
 * segments its snapshot lacks).  So an id freed by a committed merge
 * carries the epoch it was freed at, and is taken again only once every
 * reader inside urlset_enter entered at or after it (a reader enters
 * before it begins its snapshot, so its snapshot holds the merge).
 */
static int
free_id(struct urlset *us, uint32_t id, uint64_t epoch)
{
	if (us->segs.nfree == us->segs.free_cap) {
		size_t cap = us->segs.free_cap ? 2 * us->segs.free_cap : 64;
		uint32_t *f = realloc(us->segs.free_ids, cap * sizeof(*f));
		uint64_t *e;

		if (f == NULL)
			return -1;
		us->segs.free_ids = f;
		if ((e = realloc(us->segs.free_epoch, cap * sizeof(*e))) ==
		    NULL)
			return -1;
		us->segs.free_epoch = e;
		us->segs.free_cap = cap;
	}
	us->segs.free_ids[us->segs.nfree] = id;
	us->segs.free_epoch[us->segs.nfree++] = epoch;
	return 0;
}

/* The oldest epoch a reader inside urlset_enter entered at; UINT64_MAX
 * when none is inside. */
static uint64_t
readers_floor(struct urlset *us)
{
	uint64_t floor = UINT64_MAX;
	struct urlset_reader *rd;

	pthread_mutex_lock(&us->rd.readers_lock);
	for (rd = us->rd.readers; rd != NULL; rd = rd->next) {
		uint64_t a = __atomic_load_n(&rd->active, __ATOMIC_SEQ_CST);

		if (a != 0 && a < floor)
			floor = a;
	}
	pthread_mutex_unlock(&us->rd.readers_lock);
	return floor;
}

/* Takes a free id no reader may still see as another segment, if one is
 * free; returns 0 when none is. */
static uint32_t
take_free_id(struct urlset *us)
{
	uint64_t floor = 0;
	uint32_t id;

	for (size_t i = 0; i < us->segs.nfree; i++) {
		uint64_t e = us->segs.free_epoch[i];

		if (e != 0 && floor == 0)
			floor = readers_floor(us);
		if (e != 0 && e > floor)
			continue;
		id = us->segs.free_ids[i];
		us->segs.nfree--;
		us->segs.free_ids[i] = us->segs.free_ids[us->segs.nfree];
		us->segs.free_epoch[i] = us->segs.free_epoch[us->segs.nfree];
		return id;
	}
	return 0;
}

/* Ids handed out for a transaction, given back if it fails. */
struct id_list {
	uint32_t *ids;
	size_t n, cap;
};

static int
alloc_id(struct urlset *us, struct id_list *l, uint32_t *id)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		uint32_t *p = realloc(l->ids, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		l->ids = p;
		l->cap = cap;
	}
	if ((*id = take_free_id(us)) != 0)
		;
	else if (us->segs.next_id <= URLIDX_SEG_MAX)
		*id = us->segs.next_id++;
	else if (us->segs.nfree > 0) {
		/* Every id is in use or freed under a reader: wait for the
		 * readers to move on. */
		urlset_grace(us);
		*id = take_free_id(us);
	}
	if (*id == 0) {
		log_warnx("%s: every segment id is in use", __func__);
		return -1;
	}
	l->ids[l->n++] = *id;
	return 0;
}

static void
give_back_ids(struct urlset *us, struct id_list *l)
{
	/* Never committed: no reader saw them. */
	for (size_t i = 0; i < l->n; i++)
		free_id(us, l->ids[i], 0);
	l->n = 0;
}

/*
 * Writes records recs[0..n) (sorted, URLREC_LEN each) as new segments in
 * txn, with all-live bitmaps; the i-th record's segment and slot go to
 * seg[i], slot[i].  Returns a store status.
 */
static int
write_segments(struct urlset *us, struct store_txn *txn, const uint8_t *recs,
    size_t n, struct id_list *ids, uint32_t *seg, uint32_t *slot,
    uint64_t *bytes)
{
	for (size_t at = 0; at < n;) {
		uint32_t k = n - at < us->seg_records ? (uint32_t)(n - at) :
		    us->seg_records, id;
		uint8_t *v, *bits;
		int rc;

		if (alloc_id(us, ids, &id) == -1)
			return STORE_FULL;
		if ((rc = store_reserve(txn, STORE_URL_SEGS, &id, sizeof(id),
		    URLSEG_LEN(k), (void **)&v)) != STORE_OK)
			return rc;
		memcpy(v + URLSEG_HEADER, recs + at * URLREC_LEN,
		    (size_t)k * URLREC_LEN);
		urlseg_init(v, k);
		if ((rc = store_reserve(txn, STORE_URL_LIVE, &id, sizeof(id),
		    URLSEG_BITMAP_LEN(k), (void **)&bits)) != STORE_OK)
			return rc;
		memset(bits, 0, URLSEG_BITMAP_LEN(k));
		for (uint32_t i = 0; i < k; i++) {
			urlseg_set_bit(bits, i, true);
			seg[at + i] = id;
			slot[at + i] = i;
		}
		*bytes += URLSEG_LEN(k) + URLSEG_BITMAP_LEN(k);
		at += k;
	}
	return STORE_OK;
}

/* Gives each written segment (records recs[0..n) in segments seg[0..n))
 * its directory entry. */
static int
dir_add(struct urlset *us, const uint8_t *recs, const uint32_t *seg, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && seg[i] == seg[i - 1])
			continue;
		if (dir_grow(us, seg[i]) == -1)
			return -1;
		us->segs.dir[seg[i]].nrec = 0;
		us->segs.dir[seg[i]].nlive = 0;
	}
	for (size_t i = 0; i < n; i++) {
		us->segs.dir[seg[i]].nrec++;
		us->segs.dir[seg[i]].nlive++;
	}
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && seg[j] == seg[i]; j++)
			;
		us->segs.dir[seg[i]].expires_s = urlset_expires_s(recs +
		    i * URLREC_LEN, j - i);
		dir_count(us, seg[i], 1);
	}
	return 0;
}

struct place {
	uint32_t seg;
	uint32_t slot;
};

static int
cmp_place(const void *a, const void *b)
{
	const struct place *x = a, *y = b;

	if (x->seg != y->seg)
		return x->seg < y->seg ? -1 : 1;
	return x->slot < y->slot ? -1 : x->slot > y->slot;
}

struct collect {
	struct urlmem_entry *e;
	size_t n;
};

static void
collect_one(const struct urlmem_entry *e, void *arg)
{
	struct collect *c = arg;

	c->e[c->n++] = *e;
}

/*
 * Clears, in txn, the live bits of the records at places[0..n) (sorted by
 * segment), one bitmap rewrite per segment.
 */
static int
clear_bits(struct store_txn *txn, const struct place *places, size_t n,
    uint64_t *bytes)
{
	for (size_t at = 0; at < n;) {
		uint32_t seg = places[at].seg;
		struct store_val v;
		uint8_t *bits;
		size_t len;
		int rc;

		if ((rc = store_get(txn, STORE_URL_LIVE, &seg, sizeof(seg),
		    &v)) != STORE_OK) {
			log_warnx("%s: segment %u has no bitmap", __func__, seg);
			return rc == STORE_NOTFOUND ? STORE_FAILED : rc;
		}
		len = v.len;
		if ((bits = malloc(len)) == NULL)
			return STORE_FAILED;
		memcpy(bits, v.data, len);
		for (; at < n && places[at].seg == seg; at++)
			if (places[at].slot / 8 < len)
				urlseg_set_bit(bits, places[at].slot, false);
		rc = store_put(txn, STORE_URL_LIVE, &seg, sizeof(seg), bits, len,
		    0, NULL);
		free(bits);
		if (rc != STORE_OK)
			return rc;
		*bytes += len;
	}
	return STORE_OK;
}

int
urlset_flush(struct urlset *us, bool checkpoint)
{
	size_t n = urlmem_count(us->mem), nrec = 0, ndead = 0;
	struct collect c = { NULL, 0 };
	struct id_list ids = { NULL, 0, 0 };
	struct place *dead = NULL;
	uint32_t *seg = NULL, *slot = NULL;
	uint8_t *recs = NULL;
	uint64_t bytes = 0, txnid;
	struct store_txn *txn;
	char seq[32];
	int rc = STORE_FAILED;

	if (n == 0 && !checkpoint)
		return STORE_OK;
	/* recs is also the sort's scratch: as large as the entries. */
	if ((c.e = malloc((n + 1) * sizeof(*c.e))) == NULL ||
	    (recs = malloc((n + 1) * (sizeof(*c.e) > URLREC_LEN ?
	    sizeof(*c.e) : URLREC_LEN))) == NULL ||
	    (seg = malloc((n + 1) * sizeof(*seg))) == NULL ||
	    (slot = malloc((n + 1) * sizeof(*slot))) == NULL ||
	    (dead = malloc((n + 1) * sizeof(*dead))) == NULL)
		goto out;
	urlset_texts_prepare(us);
	urlmem_foreach(us->mem, collect_one, &c);
	if (urlrec_sort(c.e, c.n, sizeof(*c.e), recs) == -1)
		goto out;
	for (size_t i = 0; i < c.n; i++) {
		struct url_record r;

		if (c.e[i].orig_seg != 0)
			dead[ndead++] = (struct place){ c.e[i].orig_seg,
			    c.e[i].orig_slot };
		if (c.e[i].st.count == 0)
			continue;
		memcpy(r.fp, c.e[i].fp, CBF_FP_LEN);
		r.st = c.e[i].st;
		cbf_indices(us->filter, r.fp, r.idx);
		urlrec_encode(&r, recs + nrec++ * URLREC_LEN);
	}
	qsort(dead, ndead, sizeof(*dead), cmp_place);

	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		goto out;
	if ((rc = write_segments(us, txn, recs, nrec, &ids, seg, slot,
	    &bytes)) != STORE_OK ||
	    (rc = clear_bits(txn, dead, ndead, &bytes)) != STORE_OK ||
	    (rc = urlset_texts_put(us, txn)) != STORE_OK)
		goto abort;
	if (checkpoint) {
		snprintf(seq, sizeof(seq), "%" PRIu64,
		    urljournal_last_seq(us->journal));
		if ((rc = store_meta_put(txn, "urls.journal_seq", seq)) !=
		    STORE_OK)
			goto abort;
	}
	if (URLSET_CRASH(URLSET_CRASH_FLUSH_WRITTEN)) {
		rc = STORE_FAILED;
		goto abort;
	}
	txnid = store_txn_id(txn);
	if ((rc = store_commit(txn)) != STORE_OK) {
		/* The store tells of a full disk or map, once. */
		if (!store_status_full(rc))
			log_warnx("%s: %s", __func__, store_strstatus(rc));
		give_back_ids(us, &ids);
		urlset_texts_discard(us);
		goto out;
	}
	if (URLSET_CRASH(URLSET_CRASH_FLUSH_COMMITTED)) {
		rc = STORE_FAILED;
		goto out;
	}

	/* Committed: memory follows. */
	urlset_texts_flushed(us);
	for (size_t i = 0, r = 0; i < c.n; i++) {
		const struct urlmem_entry *e = &c.e[i];
		int ok = 0;

		if (i + URLSET_PREFETCH < c.n)
			urlidx_prefetch(us->rd.idx,
			    c.e[i + URLSET_PREFETCH].fp);
		if (e->st.count > 0 && e->orig_seg != 0)
			ok = urlidx_move(us->rd.idx, e->fp, e->orig_seg,
			    seg[r]);
		else if (e->st.count > 0 && urlidx_insert(us->rd.idx, e->fp,
		    seg[r]) == -1) {
			/* Full: a larger index, made from the store, which
			 * holds this flush and so the rest of it too. */
			if (urlset_index_grow(us) == -1)
				fatalx("%s: cannot grow the URL index",
				    __func__);
			break;
		} else if (e->st.count == 0 && e->orig_seg != 0)
			ok = urlidx_remove(us->rd.idx, e->fp, e->orig_seg);
		if (ok == -1)
			fatalx("%s: the index lost a URL of segment %u",
			    __func__, e->orig_seg);
		r += e->st.count > 0;
	}
	if (dir_add(us, recs, seg, nrec) == -1)
		fatalx("%s: out of memory for the segment directory",
		    __func__);
	for (size_t i = 0; i < ndead; i++) {
		uint32_t id = dead[i].seg;

		if (i == 0 || id != dead[i - 1].seg)
			dir_count(us, id, -1);
		us->segs.dir[id].nlive--;
		if (i + 1 == ndead || dead[i + 1].seg != id)
			dir_count(us, id, 1);
	}
	/* Readers that see the journal's table empty must see this flush
	 * in their snapshot (urllookup.c). */
	__atomic_store_n(&us->flush_txnid, txnid, __ATOMIC_RELEASE);
	urlmem_clear(us->mem);
	if (checkpoint)
		urljournal_restart(us->journal);
	__atomic_fetch_add(&us->stats.flushes, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.store_bytes_written, bytes,
	    __ATOMIC_RELAXED);
	urlset_publish_seg_stats(us);
	rc = STORE_OK;
	goto out;
abort:
	store_abort(txn);
	give_back_ids(us, &ids);
	urlset_texts_discard(us);
	if (rc == STORE_TXN_FULL)
		log_warnx("%s: %s", __func__, store_strstatus(rc));
out:
	if (rc != STORE_OK)
		urlset_texts_discard(us);
	free(ids.ids);
	free(c.e);
	free(recs);
	free(seg);
	free(slot);
	free(dead);
	return rc;
}

bool
urlset_merge_due(const struct urlset *us, bool *forced)
{
	/* Forced only when a merge can make progress: a sparse segment is
	 * there to rewrite (a segment half dead is always merged, so dead
	 * records never reach half of all). */
	*forced = us->segs.small > MERGE_FORCE_SMALL ||
	    (us->segs.sparse > 0 && us->segs.dead > us->seg_records &&
	    us->segs.dead * MERGE_FORCE_DEAD_DIV > us->segs.records);
	return *forced || us->segs.small >= 2 || us->segs.sparse > 0;
}

/* A live record of a merge, with where it was. */
struct moved {
	uint8_t rec[URLREC_LEN];
	uint32_t from;
};

/* The segments a merge step takes: sparse ones, and small ones when there
 * are two or more; at most MERGE_SEGMENTS segments' worth of records. */
static size_t
merge_sources(struct urlset *us, uint32_t *src, size_t max)
{
	size_t n = 0, smalls = 0;
	uint64_t live = 0, limit = (uint64_t)MERGE_SEGMENTS * us->seg_records;

	for (uint32_t id = 1; id < us->segs.dir_len && n < max; id++) {
		const struct segdir *d = &us->segs.dir[id];
		bool sparse, small;

		if (d->nrec == 0)
			continue;
		sparse = is_sparse(d->nrec, d->nlive);
		small = is_small(us, d->nrec);
		if (!sparse && !(small && us->segs.small >= 2))
			continue;
		if (n > 0 && live + d->nlive > limit)
			break;
		src[n++] = id;
		live += d->nlive;
		smalls += small && !sparse;
	}
	/* One small segment alone gains nothing from being rewritten. */
	if (n == 1 && smalls == 1)
		return 0;
	return n;
}

int
urlset_merge_step(struct urlset *us, bool *did, bool forced)
{
	uint32_t src[MERGE_SEGMENTS * 64];
	size_t nsrc, nmoved = 0, cap = 0;
	struct moved *moved = NULL;
	struct id_list ids = { NULL, 0, 0 };
	uint32_t *seg = NULL, *slot = NULL;
	uint8_t *recs = NULL;
	uint64_t bytes = 0, freed_at;
	struct store_txn *txn;
	int rc;

	*did = false;
	/* The journal's table names records by their place: empty it first. */
	if (urlmem_count(us->mem) > 0 &&
	    (rc = urlset_flush(us, true)) != STORE_OK)
		return rc;
	if ((nsrc = merge_sources(us, src, sizeof(src) / sizeof(src[0]))) == 0)
		return STORE_OK;
	for (size_t i = 0; i < nsrc; i++)
		cap += us->segs.dir[src[i]].nlive;
	if ((moved = malloc((cap + 1) * sizeof(*moved))) == NULL)
		return STORE_FAILED;
	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		goto out;
	for (size_t i = 0; i < nsrc; i++) {
		struct store_val v, b;
		int64_t nrec;

		if ((rc = store_get(txn, STORE_URL_SEGS, &src[i],
		    sizeof(src[i]), &v)) != STORE_OK ||
		    (rc = store_get(txn, STORE_URL_LIVE, &src[i],
		    sizeof(src[i]), &b)) != STORE_OK) {
			rc = rc == STORE_NOTFOUND ? STORE_FAILED : rc;
			goto abort;
		}
		if ((nrec = urlseg_check(v.data, v.len)) < 0 ||
		    b.len < URLSEG_BITMAP_LEN(nrec)) {
			log_warnx("%s: segment %u is damaged", __func__, src[i]);
			rc = STORE_FAILED;
			goto abort;
		}
		for (uint32_t r = 0; r < (uint32_t)nrec; r++) {
			if (!urlseg_bit(b.data, r))
				continue;
			if (nmoved == cap) {
				log_warnx("%s: segment %u has more live "
				    "records than counted", __func__, src[i]);
				rc = STORE_FAILED;
				goto abort;
			}
			memcpy(moved[nmoved].rec, urlseg_record(v.data, r),
			    URLREC_LEN);
			moved[nmoved++].from = src[i];
		}
	}
	if ((recs = malloc((nmoved + 1) * sizeof(*moved))) == NULL ||
	    urlrec_sort(moved, nmoved, sizeof(*moved), recs) == -1) {
		rc = STORE_FAILED;
		goto abort;
	}
	free(recs);
	if ((recs = malloc((nmoved + 1) * URLREC_LEN)) == NULL ||
	    (seg = malloc((nmoved + 1) * sizeof(*seg))) == NULL ||
	    (slot = malloc((nmoved + 1) * sizeof(*slot))) == NULL) {
		rc = STORE_FAILED;
		goto abort;
	}
	for (size_t i = 0; i < nmoved; i++)
		memcpy(recs + i * URLREC_LEN, moved[i].rec, URLREC_LEN);
	if ((rc = write_segments(us, txn, recs, nmoved, &ids, seg, slot,
	    &bytes)) != STORE_OK)
		goto abort;
	for (size_t i = 0; i < nsrc; i++)
		if ((rc = store_del(txn, STORE_URL_SEGS, &src[i],
		    sizeof(src[i]))) != STORE_OK ||
		    (rc = store_del(txn, STORE_URL_LIVE, &src[i],
		    sizeof(src[i]))) != STORE_OK)
			goto abort;
	if (URLSET_CRASH(URLSET_CRASH_MERGE_WRITTEN)) {
		rc = STORE_FAILED;
		goto abort;
	}
	if ((rc = store_commit(txn)) != STORE_OK) {
		give_back_ids(us, &ids);
		goto out;
	}
	if (URLSET_CRASH(URLSET_CRASH_MERGE_COMMITTED)) {
		rc = STORE_FAILED;
		goto out;
	}

	/* Committed: the index names the new segments, then the old ids go
	 * back for later transactions. */
	for (size_t i = 0; i < nmoved; i++) {
		if (i + URLSET_PREFETCH < nmoved)
			urlidx_prefetch(us->rd.idx,
			    moved[i + URLSET_PREFETCH].rec);
		if (urlidx_move(us->rd.idx, moved[i].rec, moved[i].from,
		    seg[i]) == -1)
			fatalx("%s: the index lost a URL of segment %u",
			    __func__, moved[i].from);
	}
	freed_at = __atomic_add_fetch(&us->rd.epoch, 1, __ATOMIC_SEQ_CST);
	for (size_t i = 0; i < nsrc; i++) {
		dir_count(us, src[i], -1);
		us->segs.dir[src[i]].nrec = us->segs.dir[src[i]].nlive = 0;
		free_id(us, src[i], freed_at);
		if (src[i] == us->sweep.next)
			us->sweep.slot = us->sweep.min = 0;
	}
	if (dir_add(us, recs, seg, nmoved) == -1)
		fatalx("%s: out of memory for the segment directory",
		    __func__);
	__atomic_fetch_add(&us->stats.merges, 1, __ATOMIC_RELAXED);
	if (forced)
		__atomic_fetch_add(&us->stats.merges_forced, 1,
		    __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.store_bytes_written, bytes,
	    __ATOMIC_RELAXED);
	urlset_publish_seg_stats(us);
	*did = true;
	goto out;
abort:
	store_abort(txn);
	give_back_ids(us, &ids);
out:
	free(ids.ids);
	free(moved);
	free(recs);
	free(seg);
	free(slot);
	return rc;
}

/*
 * The rebuild of memory from the store at start-up (and of a larger index
 * when it fills).  Two passes: the segments' table first, which reads only
 * its B-tree, giving where each segment's value lies in the store's map;
 * then the segments themselves, in the order they lie in the file, asking
 * the kernel for the next REBUILD_AHEAD bytes of them before they are
 * needed (the store is mapped for random reads: left to page faults, a
 * cold store would be read 4 KiB at a time).  The index is filled by a
 * thread of its own while the caller fills the filter and the segment
 * directory: each is a table of random cache misses, prefetched a few
 * records ahead.
 */
#define REBUILD_AHEAD		(32u << 20)
#define REBUILD_PREFETCH	16
#define REBUILD_PAGE		4096

/* A segment of the rebuild's walk, as its snapshot holds it. */
struct rebuild_seg {
	const uint8_t *data;
	const uint8_t *live;		/* its bitmap */
	size_t len, live_len;
	uint32_t id;
};

/* Records of a namespace id the registry lacks, counted by the rebuild. */
struct unknown_ns {
	uint32_t id;
	uint64_t urls;
};
#define UNKNOWN_NS_MAX		64

struct rebuild {
	struct urlset *us;
	struct store_txn *txn;
	struct rebuild_seg *segs;	/* in the order they lie in the file */
	size_t nsegs, segs_cap;
	const char *bad;		/* why the walk stopped */
	/* the index's part */
	struct urlidx *idx;
	bool index_full;		/* idx ran out of room */
	bool index_damaged;		/* it met a damaged segment */
	/* the filter's part */
	struct unknown_ns *unknown;	/* namespace ids the registry lacks */
	size_t nunknown;
};

/* Reads ahead: the file's pages of segments from *next on, up to
 * REBUILD_AHEAD bytes beyond segment i. */
static void
rebuild_read_ahead(const struct rebuild *rb, size_t i, size_t *next)
{
	uintptr_t until = (uintptr_t)rb->segs[i].data + REBUILD_AHEAD;

	for (; *next < rb->nsegs && (*next <= i ||
	    (uintptr_t)rb->segs[*next].data < until); (*next)++) {
		uintptr_t a = (uintptr_t)rb->segs[*next].data &
		    ~(uintptr_t)(REBUILD_PAGE - 1);
		uintptr_t b = (uintptr_t)rb->segs[*next].data +
		    rb->segs[*next].len;

		madvise((void *)a, b - a, MADV_WILLNEED);
	}
}

static int
rebuild_collect(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct rebuild *rb = arg;
	struct rebuild_seg *s;
	struct store_val b;
	uint32_t id;

	if (klen != sizeof(id)) {
		rb->bad = "a URL segment is damaged";
		return -1;
	}
	memcpy(&id, key, sizeof(id));
	if (id == 0 || id > URLIDX_SEG_MAX) {
		rb->bad = "a URL segment has an id out of range";
		return -1;
	}
	if (store_get(rb->txn, STORE_URL_LIVE, &id, sizeof(id), &b) !=
	    STORE_OK) {
		rb->bad = "a URL segment has no live bitmap";
		return -1;
	}
	if (rb->nsegs == rb->segs_cap) {
		size_t cap = rb->segs_cap ? 2 * rb->segs_cap : 1024;

		if ((s = realloc(rb->segs, cap * sizeof(*s))) == NULL) {
			rb->bad = "out of memory";
			return -1;
		}
		rb->segs = s;
		rb->segs_cap = cap;
	}
	rb->segs[rb->nsegs++] = (struct rebuild_seg){ .data = val,
	    .len = vlen, .live = b.data, .live_len = b.len, .id = id };
	return 0;
}

static int
cmp_seg_place(const void *a, const void *b)
{
	const struct rebuild_seg *x = a, *y = b;

	return x->data < y->data ? -1 : x->data > y->data;
}

/* The first pass, in rb->txn begun by the caller. */
static int
rebuild_segments(struct rebuild *rb)
{
	int rc;

	rb->nsegs = 0;
	rc = store_scan_txn(rb->txn, STORE_URL_SEGS, rebuild_collect, rb);
	if (rc == STORE_OK && rb->nsegs > 1)
		qsort(rb->segs, rb->nsegs, sizeof(*rb->segs), cmp_seg_place);
	return rc;
}

/* Segment s's records, or -1 when it is damaged. */
static int64_t
rebuild_nrec(const struct rebuild_seg *s)
{
	int64_t nrec = urlseg_check(s->data, s->len);

	return nrec >= 0 && s->live_len >= URLSEG_BITMAP_LEN(nrec) ? nrec : -1;
}

/* The index's part: every live record's entry.  Stops at the first that
 * does not fit (index_full), or at a damaged segment (index_damaged; the
 * filter's part says which). */
static void *
rebuild_index(void *arg)
{
	struct rebuild *rb = arg;
	size_t next = 0;

	for (size_t i = 0; i < rb->nsegs; i++) {
		const struct rebuild_seg *s = &rb->segs[i];
		int64_t nrec = rebuild_nrec(s);

		if (nrec < 0) {
			rb->index_damaged = true;
			break;
		}
		rebuild_read_ahead(rb, i, &next);
		for (uint32_t r = 0; r < (uint32_t)nrec; r++) {
			if (r + REBUILD_PREFETCH < (uint32_t)nrec)
				urlidx_prefetch(rb->idx, urlseg_record(s->data,
				    r + REBUILD_PREFETCH));
			if (urlseg_bit(s->live, r) && urlidx_insert(rb->idx,
			    urlseg_record(s->data, r), s->id) == -1) {
				rb->index_full = true;
				return NULL;
			}
		}
	}
	return NULL;
}

/* A record of a namespace id the registry lacks (its creation was lost
 * with [store] sync = none): counted, to be adopted after the walk. */
static int
count_unknown(struct rebuild *rb, uint32_t ns)
{
	size_t i;

	for (i = 0; i < rb->nunknown && rb->unknown[i].id != ns; i++)
		;
	if (i == rb->nunknown) {
		if (i == UNKNOWN_NS_MAX) {
			rb->bad = "too many URL namespaces are missing from "
			    "the store's metadata";
			return -1;
		}
		rb->unknown[rb->nunknown++] = (struct unknown_ns){ ns, 0 };
	}
	rb->unknown[i].urls++;
	return 0;
}

static void
decode_ahead(const struct urlset *us, const struct rebuild_seg *s, uint32_t r,
    struct url_record *out)
{
	urlrec_decode(urlseg_record(s->data, r), out);
	cbf_prefetch(us->filter, out->idx);
}

/* The filter's part for one segment: its live records' counters, its
 * namespaces' counts, its directory entry. */
static int
rebuild_filter_segment(struct rebuild *rb, const struct rebuild_seg *s)
{
	struct urlset *us = rb->us;
	struct url_record ahead[REBUILD_PREFETCH];
	uint64_t min_expiry = 0;
	uint32_t live = 0;
	int64_t nrec;

	if ((nrec = rebuild_nrec(s)) < 0) {
		rb->bad = "a URL segment is damaged";
		return -1;
	}
	if (dir_grow(us, s->id) == -1) {
		rb->bad = "out of memory";
		return -1;
	}
	/* Record r is decoded, and its counters' line fetched,
	 * REBUILD_PREFETCH records before it is added. */
	for (uint32_t r = 0; r < (uint32_t)nrec && r < REBUILD_PREFETCH; r++)
		decode_ahead(us, s, r, &ahead[r]);
	for (uint32_t r = 0; r < (uint32_t)nrec; r++) {
		struct url_record now = ahead[r % REBUILD_PREFETCH];
		const struct url_record *rec = &now;

		if (r + REBUILD_PREFETCH < (uint32_t)nrec)
			decode_ahead(us, s, r + REBUILD_PREFETCH,
			    &ahead[r % REBUILD_PREFETCH]);
		if (!urlseg_bit(s->live, r))
			continue;
		for (int k = 0; k < CBF_K; k++)
			if (rec->idx[k] >= us->m) {
				rb->bad = "a URL record names a counter "
				    "beyond the filter";
				return -1;
			}
		live++;
		if (rec->st.expires_ms != 0 && (min_expiry == 0 ||
		    rec->st.expires_ms < min_expiry))
			min_expiry = rec->st.expires_ms;
		cbf_add(us->filter, rec->idx);
		if (!urlns_count(us->ns, rec->st.ns, 1) &&
		    count_unknown(rb, rec->st.ns) == -1)
			return -1;
	}
	us->segs.dir[s->id].nrec = (uint16_t)nrec;
	us->segs.dir[s->id].nlive = (uint16_t)live;
	us->segs.dir[s->id].expires_s = urlset_expires_s_of(min_expiry);
	dir_count(us, s->id, 1);
	us->stats.live += live;
	return 0;
}

/*
 * Writer: a larger index, filled from the store's live records, replaces
 * the current one once no reader uses it.
 */
int
urlset_index_grow(struct urlset *us)
{
	uint64_t cap = 2 * urlidx_capacity(us->rd.idx);
	struct urlidx *old = us->rd.idx;
	struct rebuild rb = { .us = us };
	int rc;

	if (cap < us->stats.live + us->stats.live / 4)
		cap = us->stats.live + us->stats.live / 4;
	if ((rb.txn = store_reader_new(us->st)) == NULL)
		return -1;
	for (;; cap *= 2) {
		if ((rb.idx = urlidx_new(cap)) == NULL ||
		    (rc = store_reader_begin(rb.txn)) != STORE_OK) {
			urlidx_free(rb.idx);
			break;
		}
		rb.index_full = false;
		if ((rc = rebuild_segments(&rb)) == STORE_OK) {
			rebuild_index(&rb);
			if (rb.index_damaged) {
				rb.bad = "a URL segment is damaged";
				rc = STORE_FAILED;
			}
		}
		store_reader_end(rb.txn);
		if (rc == STORE_OK && !rb.index_full)
			break;
		urlidx_free(rb.idx);
		rb.idx = NULL;
		if (rc != STORE_OK) {
			log_warnx("%s: %s", __func__,
			    rb.bad ? rb.bad : store_strstatus(rc));
			break;
		}
	}
	store_reader_free(rb.txn);
	free(rb.segs);
	if (rb.idx == NULL)
		return -1;
	__atomic_store_n(&us->rd.idx, rb.idx, __ATOMIC_SEQ_CST);
	urlset_grace(us);
	urlidx_free(old);
	log_info("%s: the URL index now holds %" PRIu64 " URLs at most (%"
	    PRIu64 " stored)", __func__, cap, us->stats.live);
	return 0;
}

/* The walk of urlset_rebuild, in rb->txn: the index's part in a thread,
 * the filter's here. */
static int
rebuild_walk(struct rebuild *rb)
{
	pthread_t t;
	bool threaded;
	size_t next = 0;
	int rc;

	if ((rc = rebuild_segments(rb)) != STORE_OK)
		return rc;
	threaded = pthread_create(&t, NULL, rebuild_index, rb) == 0;
	if (!threaded)
		rebuild_index(rb);
	for (size_t i = 0; i < rb->nsegs && rc == STORE_OK; i++) {
		rebuild_read_ahead(rb, i, &next);
		if (rebuild_filter_segment(rb, &rb->segs[i]) == -1)
			rc = STORE_FAILED;
	}
	if (threaded)
		pthread_join(t, NULL);
	return rc;
}

int
urlset_rebuild(struct urlset *us, char **cause)
{
	struct unknown_ns unknown[UNKNOWN_NS_MAX];
	struct rebuild rb = { .us = us, .idx = us->rd.idx, .unknown = unknown };
	int rc;

	if ((rb.txn = store_reader_new(us->st)) == NULL ||
	    store_reader_begin(rb.txn) != STORE_OK) {
		store_reader_free(rb.txn);
		if (asprintf(cause, "cannot read the URL store") == -1)
			*cause = NULL;
		return -1;
	}
	rc = rebuild_walk(&rb);
	store_reader_end(rb.txn);
	store_reader_free(rb.txn);
	free(rb.segs);
	/* A full index is grown (read again, larger) once the rest is
	 * known. */
	if (rc != STORE_OK || (rb.index_full && urlset_index_grow(us) == -1)) {
		if (asprintf(cause, "rebuilding the URL filter and index: %s",
		    rb.bad ? rb.bad : rc != STORE_OK ? store_strstatus(rc) :
		    "out of memory") == -1)
			*cause = NULL;
		return -1;
	}
	for (size_t i = 0; i < rb.nunknown; i++) {
		if ((rc = urlns_adopt(us->ns, unknown[i].id)) != STORE_OK) {
			if (asprintf(cause, "adopting URL namespace id %u: %s",
			    unknown[i].id, store_strstatus(rc)) == -1)
				*cause = NULL;
			return -1;
		}
		urlns_count(us->ns, unknown[i].id, (int64_t)unknown[i].urls);
	}
	/* Ids below the highest in use that no segment has are free. */
	us->segs.next_id = 1;
	for (uint32_t id = 1; id < us->segs.dir_len; id++)
		if (us->segs.dir[id].nrec != 0)
			us->segs.next_id = id + 1;
	for (uint32_t id = us->segs.next_id; id > 1; id--)
		if (us->segs.dir[id - 1].nrec == 0 && id - 1 > 0 &&
		    free_id(us, id - 1, 0) == -1) {
			if (asprintf(cause, "out of memory") == -1)
				*cause = NULL;
			return -1;
		}
	urlset_publish_seg_stats(us);
	return 0;
}

/* The verification's walk over every segment. */
struct seg_walk {
	struct urlset *us;
	struct store_txn *txn;
	const char *bad;
	struct cbf *fresh;
	struct urlset_verify *out;
	struct group_rec *groups;
	size_t ngroups, groups_cap;
};

struct group_rec {
	uint64_t pair;
	uint32_t seg;
	uint8_t fp[CBF_FP_LEN];
};

/*
 * A segment met in a walk of the table: checks its header, its id and its
 * live bitmap; returns its number of records, or -1 with w->bad set.
 */
static int64_t
walked_segment(struct seg_walk *w, const void *key, size_t klen,
    const void *val, size_t vlen, uint32_t *id, struct store_val *bitmap)
{
	int64_t nrec;

	if (klen != sizeof(*id) || (nrec = urlseg_check(val, vlen)) < 0) {
		w->bad = "a URL segment is damaged";
		return -1;
	}
	memcpy(id, key, sizeof(*id));
	if (*id == 0 || *id > URLIDX_SEG_MAX) {
		w->bad = "a URL segment has an id out of range";
		return -1;
	}
	if (store_get(w->txn, STORE_URL_LIVE, id, sizeof(*id), bitmap) !=
	    STORE_OK || bitmap->len < URLSEG_BITMAP_LEN(nrec)) {
		w->bad = "a URL segment has no live bitmap";
		return -1;
	}
	return nrec;
}

static void
verify_note(struct urlset_verify *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
verify_note(struct urlset_verify *out, const char *fmt, ...)
{
	va_list ap;

	if (out->detail[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(out->detail, sizeof(out->detail), fmt, ap);
	va_end(ap);
}

static int
verify_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct seg_walk *w = arg;
	struct urlset *us = w->us;
	struct store_val b;
	uint32_t id, live = 0;
	int64_t nrec;

	if ((nrec = walked_segment(w, key, klen, val, vlen, &id, &b)) < 0)
		return -1;
	for (uint32_t i = 0; i < (uint32_t)nrec; i++) {
		struct url_record r;
		uint32_t idx[CBF_K], segs[URLIDX_MAX_CANDIDATES];
		size_t n;
		bool named = false;

		if (!urlseg_bit(b.data, i))
			continue;
		urlrec_decode(urlseg_record(val, i), &r);
		for (int k = 0; k < CBF_K; k++)
			if (r.idx[k] >= us->m) {
				w->bad = "a URL record names a counter beyond "
				    "the filter";
				return -1;
			}
		cbf_indices(us->filter, r.fp, idx);
		if (memcmp(idx, r.idx, sizeof(idx)) != 0) {
			w->out->index_mismatches++;
			verify_note(w->out, "record %u of segment %u stores "
			    "counters other than its fingerprint's", i, id);
		}
		if (i > 0 && urlrec_cmp_fp(urlseg_record(val, i - 1), r.fp) >=
		    0) {
			w->out->index_mismatches++;
			verify_note(w->out, "segment %u is not in order at "
			    "record %u", id, i);
		}
		cbf_add(w->fresh, r.idx);
		n = urlidx_lookup(us->rd.idx, r.fp, segs,
		    URLIDX_MAX_CANDIDATES);
		for (size_t k = 0; k < n; k++)
			named |= segs[k] == id;
		if (!named) {
			w->out->index_mismatches++;
			verify_note(w->out, "the index does not name segment "
			    "%u for its record %u", id, i);
		}
		if (w->ngroups == w->groups_cap) {
			size_t cap = w->groups_cap ? 2 * w->groups_cap : 1024;
			struct group_rec *g = realloc(w->groups,
			    cap * sizeof(*g));

			if (g == NULL) {
				w->bad = "out of memory";
				return -1;
			}
			w->groups = g;
			w->groups_cap = cap;
		}
		w->groups[w->ngroups].pair = urlidx_pair_key(us->rd.idx, r.fp);
		w->groups[w->ngroups].seg = id;
		memcpy(w->groups[w->ngroups++].fp, r.fp, CBF_FP_LEN);
		live++;
		w->out->records++;
	}
	if (id >= us->segs.dir_len || us->segs.dir[id].nrec != nrec ||
	    us->segs.dir[id].nlive != live) {
		w->out->index_mismatches++;
		verify_note(w->out, "segment %u: %" PRId64 " records, %u live; "
		    "memory says %u and %u", id, nrec, live,
		    id < us->segs.dir_len ? us->segs.dir[id].nrec : 0,
		    id < us->segs.dir_len ? us->segs.dir[id].nlive : 0);
	}
	return 0;
}

static int
cmp_group(const void *a, const void *b)
{
	const struct group_rec *x = a, *y = b;

	if (x->pair != y->pair)
		return x->pair < y->pair ? -1 : 1;
	return x->seg < y->seg ? -1 : x->seg > y->seg;
}

int
urlset_verify_store(struct urlset *us, struct urlset_verify *out)
{
	struct seg_walk w = { .us = us, .out = out };
	struct urlidx_stats xs;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((w.fresh = cbf_new(us->m)) == NULL) {
		snprintf(out->detail, sizeof(out->detail), "out of memory");
		return STORE_FAILED;
	}
	if ((w.txn = store_reader_new(us->st)) == NULL ||
	    (rc = store_reader_begin(w.txn)) != STORE_OK) {
		store_reader_free(w.txn);
		cbf_free(w.fresh);
		return STORE_FAILED;
	}
	rc = store_scan_txn(w.txn, STORE_URL_SEGS, verify_one, &w);
	store_reader_end(w.txn);
	store_reader_free(w.txn);
	if (rc != STORE_OK) {
		snprintf(out->detail, sizeof(out->detail), "%s",
		    w.bad ? w.bad : store_strstatus(rc));
		cbf_free(w.fresh);
		free(w.groups);
		return w.bad ? STORE_FAILED : rc;
	}
	/* The index holds one entry per record: as many in all, and, for
	 * the records that share a bucket pair, tag and segment, as many as
	 * they are. */
	urlidx_stats(us->rd.idx, &xs);
	if (xs.entries != out->records) {
		out->index_mismatches++;
		verify_note(out, "the index has %" PRIu64 " entries for %"
		    PRIu64 " stored URLs", xs.entries, out->records);
	}
	if (w.ngroups > 0)
		qsort(w.groups, w.ngroups, sizeof(*w.groups), cmp_group);
	for (size_t i = 0, j; i < w.ngroups; i = j) {
		uint64_t have;

		for (j = i + 1; j < w.ngroups && cmp_group(&w.groups[i],
		    &w.groups[j]) == 0; j++)
			;
		have = urlidx_count_matching(us->rd.idx, w.groups[i].fp,
		    w.groups[i].seg);
		if (have != j - i) {
			out->index_mismatches++;
			verify_note(out, "the index has %" PRIu64 " entries "
			    "for %zu URLs of segment %u sharing a bucket pair",
			    have, j - i, w.groups[i].seg);
		}
	}
	free(w.groups);
	if (__atomic_load_n(&us->stats.live, __ATOMIC_RELAXED) !=
	    out->records) {
		out->index_mismatches++;
		verify_note(out, "%" PRIu64 " URLs counted in memory, %" PRIu64
		    " in the store", __atomic_load_n(&us->stats.live,
		    __ATOMIC_RELAXED), out->records);
	}
	for (uint64_t i = 0; i < us->m; i++) {
		if (cbf_counter(us->filter, i) == cbf_counter(w.fresh, i) &&
		    cbf_true_count(us->filter, i) ==
		    cbf_true_count(w.fresh, i))
			continue;
		if (out->counter_mismatches++ == 0)
			verify_note(out, "counter %" PRIu64 " is %u (true count "
			    "%" PRIu64 ") in memory, %u (%" PRIu64 ") from the "
			    "store", i, cbf_counter(us->filter, i),
			    cbf_true_count(us->filter, i),
			    cbf_counter(w.fresh, i),
			    cbf_true_count(w.fresh, i));
	}
	cbf_free(w.fresh);
	return STORE_OK;
}
