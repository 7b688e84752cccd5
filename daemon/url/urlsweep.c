/*
 * urlsweep: forgetting in the background.  See urlset.h.
 *
 * A record whose time to live has passed answers as unseen at once (a
 * reader compares the time), and a record of a dropped namespace answers
 * to nobody (no name leads to its id).  The sweep deletes both from the
 * store (an expired one once it has been expired for keep_expired_ms,
 * while checks still tell its times) the way a delete does, so that the
 * filter stays exact and a crash
 * loses nothing: a step reads the live records of a few segments, gathers
 * the keys of those to forget, and applies them as a group of the
 * writer's own (URLSET_RECLAIM, relaxed: a step a power failure undoes is
 * done again).
 *
 * Which segments: while a namespace is being dropped, every one, in id
 * order, round after round; at the end of a round the journal's table is
 * flushed, and a dropped namespace none of whose records is left is
 * retired.  Otherwise only those whose directory entry says a live record
 * is to be reclaimed by now.
 */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "urlset_impl.h"

/* Segments read per step, at most. */
#define SWEEP_SEGMENTS		4
/* While the writer is busy, a step at most this often. */
#define SWEEP_BUSY_MS		100

uint32_t
urlset_expires_s_of(uint64_t min_ms)
{
	if (min_ms == 0)
		return 0;
	if (min_ms / 1000 >= UINT32_MAX)
		return UINT32_MAX;
	return min_ms < 1000 ? 1 : (uint32_t)(min_ms / 1000);
}

uint32_t
urlset_expires_s(const uint8_t *recs, size_t n)
{
	uint64_t min = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t e = urlrec_expires_ms(recs + i * URLREC_LEN);

		if (e != 0 && (min == 0 || e < min))
			min = e;
	}
	return urlset_expires_s_of(min);
}

static bool
segment_due(const struct urlset *us, const struct segdir *d, bool dropping,
    uint64_t now_ms)
{
	return d->nrec != 0 && (dropping || (d->expires_s != 0 &&
	    (uint64_t)d->expires_s * 1000 + us->keep_expired_ms <= now_ms));
}

/*
 * Adds to keys[*n] the live records of segment id to forget, from record
 * us->sweep.slot on, until *n reaches cap; moves sweep_slot on (to 0 once
 * the segment is done, whose directory's expiry then says what the rest of
 * its records do).  Returns a store status.
 */
static int
gather(struct urlset *us, uint32_t id, uint64_t now_ms, struct url_key *keys,
    size_t *n, size_t cap)
{
	struct store_txn *txn = us->w.wrd->txn;
	struct store_val v, b;
	uint32_t i;
	int64_t nrec;
	int rc;

	if ((rc = store_reader_begin(txn)) != STORE_OK)
		return rc;
	if ((rc = store_get(txn, STORE_URL_SEGS, &id, sizeof(id), &v)) !=
	    STORE_OK || (rc = store_get(txn, STORE_URL_LIVE, &id, sizeof(id),
	    &b)) != STORE_OK) {
		store_reader_end(txn);
		return rc == STORE_NOTFOUND ? STORE_FAILED : rc;
	}
	if ((nrec = urlseg_check(v.data, v.len)) < 0 ||
	    b.len < URLSEG_BITMAP_LEN(nrec)) {
		store_reader_end(txn);
		log_warnx("%s: segment %u is damaged", __func__, id);
		return STORE_FAILED;
	}
	for (i = us->sweep.slot; i < (uint32_t)nrec && *n < cap; i++) {
		struct url_record r;

		if (!urlseg_bit(b.data, i))
			continue;
		urlrec_decode(urlseg_record(v.data, i), &r);
		if (urlns_dropping(us->ns, r.st.ns) ||
		    urlset_reclaimable(us, &r.st, now_ms)) {
			memcpy(keys[*n].fp, r.fp, CBF_FP_LEN);
			memcpy(keys[*n].idx, r.idx, sizeof(r.idx));
			(*n)++;
		} else if (r.st.expires_ms != 0 && (us->sweep.min == 0 ||
		    r.st.expires_ms < us->sweep.min))
			us->sweep.min = r.st.expires_ms;
	}
	store_reader_end(txn);
	if (i < (uint32_t)nrec) {
		us->sweep.slot = i;
		return STORE_OK;
	}
	us->segs.dir[id].expires_s = urlset_expires_s_of(us->sweep.min);
	us->sweep.slot = 0;
	us->sweep.min = 0;
	return STORE_OK;
}

/* End of a round over every segment: retires the dropped namespaces whose
 * records are all gone, once the store holds their deletes. */
static void
round_done(struct urlset *us)
{
	uint32_t ids[64];
	size_t n = urlns_dropped(us->ns, ids, 64);

	if (n > 64)
		n = 64;
	if (urlmem_count(us->mem) > 0 && urlset_flush(us, true) != STORE_OK)
		return;
	for (size_t i = 0; i < n; i++) {
		struct urlns_info info;

		if (urlns_info(us->ns, ids[i], &info) && info.urls == 0 &&
		    urlns_retire(us->ns, ids[i]) != STORE_OK)
			log_warnx("%s: cannot retire namespace id %u yet",
			    __func__, ids[i]);
	}
}

bool
urlset_sweep_step(struct urlset *us, bool idle)
{
	uint64_t mono = clock_mono_ms(), now = clock_wall_ms();
	bool dropping = urlns_dropped(us->ns, NULL, 0) > 0;
	size_t n = 0, cap, segs = 0;
	struct url_key *keys;
	struct urlset_job job;
	uint32_t id;

	if (!idle && mono - us->sweep.last_ms < SWEEP_BUSY_MS)
		return false;
	us->sweep.last_ms = mono;
	for (id = us->sweep.next; id < us->segs.dir_len; id++)
		if (segment_due(us, &us->segs.dir[id], dropping, now))
			break;
	if (id >= us->segs.dir_len) {
		us->sweep.next = 1;
		us->sweep.slot = 0;
		us->sweep.min = 0;
		if (dropping)
			round_done(us);
		return false;
	}
	if (id != us->sweep.next) {
		us->sweep.slot = 0;
		us->sweep.min = 0;
	}
	/* A step fits the journal's table, as a group must. */
	cap = urlmem_capacity(us->mem) / 2;
	if (cap > (size_t)SWEEP_SEGMENTS * us->seg_records)
		cap = (size_t)SWEEP_SEGMENTS * us->seg_records;
	if (cap == 0)
		cap = 1;
	if ((keys = malloc(cap * sizeof(*keys))) == NULL)
		return false;
	while (id < us->segs.dir_len && segs < SWEEP_SEGMENTS && n < cap) {
		if (segment_due(us, &us->segs.dir[id], dropping, now)) {
			if (gather(us, id, now, keys, &n, cap) != STORE_OK)
				break;
			segs++;
			if (us->sweep.slot != 0)
				break;	/* the rest of it in the next step */
		}
		id++;
	}
	us->sweep.next = id;
	if (n > 0) {
		memset(&job, 0, sizeof(job));
		job.op = URLSET_RECLAIM;
		job.durability = URLSET_RELAXED;
		job.keys = keys;
		job.n = n;
		urlset_apply_group(us, &job);
		if (job.status != STORE_OK)
			log_debug("%s: %s; the sweep tries again later",
			    __func__, store_strstatus(job.status));
	}
	free(keys);
	return segs > 0;
}
