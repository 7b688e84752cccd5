/*
 * urlmigrate: the upgrades of older URL stores.
 *
 * Format 1 (nddd 0.1) kept one B-tree record per URL in the table "urls":
 * the MD5 (16 bytes) to count u32, reserved u32, first and last seen u64,
 * the 8 counter indices u32, little-endian (56 bytes).  Those records are
 * already sorted by fingerprint: the upgrade cuts them, in order, into
 * segments, one transaction of a few segments at a time, each deleting the
 * records it moved.  A crash midway leaves a store of format 1 whose
 * remaining records the next start moves; the format becomes the current
 * one when the table is empty.
 *
 * Format 2 had the same segments with 48-byte records (no time to live,
 * no namespace: urlrec.h).  Its upgrade rewrites each segment in place,
 * under the same id, with the same live bitmap, a few per transaction; a
 * segment's magic tells whether it was rewritten, so a crash midway
 * resumes.  It runs before the format 1 upgrade too, since a format 1
 * upgrade cut short by an nddd of format 2 left segments of format 2.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "log.h"
#include "urlset_impl.h"

#define V1_RECORD_LEN		56
/* Records moved per transaction, at most (the tests set it lower). */
size_t urlset_migrate_batch = 16 * URLSEG_MAX;
/* What take_v1 returns to end a scan whose batch is full. */
#define MIGRATE_BATCH_FULL	(-2)

struct v1_batch {
	uint8_t *recs;			/* records of this format */
	uint8_t (*keys)[CBF_FP_LEN];	/* the format 1 keys, to delete */
	size_t n, max;
	const char *bad;
};

static int
take_v1(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct v1_batch *b = arg;
	const uint8_t *v = val;
	struct url_record r;

	if (b->n == b->max)
		return MIGRATE_BATCH_FULL;
	if (klen != CBF_FP_LEN || vlen != V1_RECORD_LEN) {
		b->bad = "a format 1 URL record has the wrong size";
		return -1;
	}
	memset(&r, 0, sizeof(r));
	memcpy(r.fp, key, CBF_FP_LEN);
	r.st.count = le_get32(v);
	r.st.first_seen_ms = le_get64(v + 8);
	r.st.last_seen_ms = le_get64(v + 16);
	for (int i = 0; i < CBF_K; i++)
		r.idx[i] = le_get32(v + 24 + 4 * i);
	if (urlrec_encode(&r, b->recs + b->n * URLREC_LEN) == -1) {
		b->bad = "a format 1 URL record's counters span blocks";
		return -1;
	}
	memcpy(b->keys[b->n++], key, CBF_FP_LEN);
	return 0;
}

static int
max_id(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	uint32_t id, *max = arg;

	(void)val;
	(void)vlen;
	if (klen != sizeof(id))
		return -1;
	memcpy(&id, key, sizeof(id));
	if (id > *max)
		*max = id;
	return 0;
}

/* Moves one batch; *done when the old table is empty. */
static int
migrate_batch(struct urlset *us, struct v1_batch *b, uint32_t *next_id,
    bool *done, uint64_t *moved)
{
	struct store_txn *txn;
	char buf[8];
	int rc;

	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		return rc;
	b->n = 0;
	rc = store_scan_txn(txn, STORE_URLS, take_v1, b);
	if (rc != STORE_OK && rc != MIGRATE_BATCH_FULL) {
		rc = b->bad ? STORE_FAILED : rc;
		goto abort;
	}
	*done = b->n == 0;
	for (size_t at = 0; at < b->n;) {
		uint32_t k = b->n - at < us->seg_records ?
		    (uint32_t)(b->n - at) : us->seg_records, id = (*next_id)++;
		uint8_t *v, *bits;

		if (id > URLIDX_SEG_MAX) {
			rc = STORE_FULL;
			goto abort;
		}
		if ((rc = store_reserve(txn, STORE_URL_SEGS, &id, sizeof(id),
		    URLSEG_LEN(k), (void **)&v)) != STORE_OK ||
		    (rc = store_reserve(txn, STORE_URL_LIVE, &id, sizeof(id),
		    URLSEG_BITMAP_LEN(k), (void **)&bits)) != STORE_OK)
			goto abort;
		memcpy(v + URLSEG_HEADER, b->recs + at * URLREC_LEN,
		    (size_t)k * URLREC_LEN);
		urlseg_init(v, k);
		memset(bits, 0, URLSEG_BITMAP_LEN(k));
		for (uint32_t i = 0; i < k; i++)
			urlseg_set_bit(bits, i, true);
		at += k;
	}
	for (size_t i = 0; i < b->n; i++)
		if ((rc = store_del(txn, STORE_URLS, b->keys[i], CBF_FP_LEN)) !=
		    STORE_OK)
			goto abort;
	if (*done) {
		snprintf(buf, sizeof(buf), "%d", URLSET_FORMAT);
		if ((rc = store_meta_put(txn, "urls.format", buf)) != STORE_OK)
			goto abort;
	}
	*moved += b->n;
	return store_commit(txn);
abort:
	store_abort(txn);
	return rc;
}

int
urlset_migrate_v1(struct urlset *us, char **cause)
{
	struct v1_batch b = { .max = urlset_migrate_batch };
	uint32_t next_id = 0;
	uint64_t moved = 0;
	bool done = false;
	int rc;

	log_info("%s: upgrading the URL store from format 1 (a record per "
	    "URL) to format %d (segments)", __func__, URLSET_FORMAT);
	/* A migration cut short left segments: continue after them. */
	if ((rc = store_scan(us->st, STORE_URL_SEGS, max_id, &next_id)) !=
	    STORE_OK)
		goto err;
	next_id++;
	if ((b.recs = malloc(b.max * URLREC_LEN)) == NULL ||
	    (b.keys = malloc(b.max * sizeof(*b.keys))) == NULL) {
		rc = STORE_FAILED;
		goto err;
	}
	while (!done) {
		if ((rc = migrate_batch(us, &b, &next_id, &done, &moved)) !=
		    STORE_OK)
			goto err;
		if (!done && URLSET_CRASH(URLSET_CRASH_MIGRATED_BATCH)) {
			rc = STORE_FAILED;
			goto err;
		}
		if (!done)
			log_info("%s: %" PRIu64 " URLs moved", __func__, moved);
	}
	log_info("%s: the URL store is now of format %d (%" PRIu64 " URLs "
	    "moved)", __func__, URLSET_FORMAT, moved);
	free(b.recs);
	free(b.keys);
	return 0;
err:
	if (asprintf(cause, "upgrading the URL store from format 1: %s",
	    b.bad ? b.bad : store_strstatus(rc)) == -1)
		*cause = NULL;
	free(b.recs);
	free(b.keys);
	return -1;
}

/* Segments of format 2 rewritten per transaction, at most. */
#define MIGRATE_V2_SEGMENTS	16

/* The ids of format 2 segments, gathered by a scan. */
struct v2_ids {
	uint32_t ids[MIGRATE_V2_SEGMENTS];
	size_t n;
	const char *bad;
};

static int
take_v2(const void *key, size_t klen, const void *val, size_t vlen, void *arg)
{
	struct v2_ids *l = arg;

	if (klen != sizeof(uint32_t)) {
		l->bad = "a URL segment has a damaged id";
		return -1;
	}
	if (urlseg_check(val, vlen) >= 0)
		return 0;
	if (urlseg_check_v2(val, vlen) < 0) {
		l->bad = "a URL segment is damaged";
		return -1;
	}
	memcpy(&l->ids[l->n++], key, sizeof(uint32_t));
	return l->n == MIGRATE_V2_SEGMENTS ? MIGRATE_BATCH_FULL : 0;
}

/* Rewrites segment id of format 2 in txn. */
static int
rewrite_v2(struct store_txn *txn, uint32_t id)
{
	struct store_val v;
	uint8_t *old, *seg;
	int64_t n;
	int rc;

	if ((rc = store_get(txn, STORE_URL_SEGS, &id, sizeof(id), &v)) !=
	    STORE_OK)
		return rc;
	/* The value lives in the map, which the reserve below may change. */
	n = urlseg_check_v2(v.data, v.len);
	if ((old = malloc(v.len)) == NULL)
		return STORE_FAILED;
	memcpy(old, v.data, v.len);
	if ((rc = store_reserve(txn, STORE_URL_SEGS, &id, sizeof(id),
	    URLSEG_LEN(n), (void **)&seg)) != STORE_OK) {
		free(old);
		return rc;
	}
	for (uint32_t i = 0; i < (uint32_t)n; i++) {
		struct url_record r;

		urlrec_decode_v2(old + URLSEG_HEADER + (size_t)i *
		    URLREC_V2_LEN, &r);
		urlrec_encode(&r, seg + URLSEG_HEADER + (size_t)i * URLREC_LEN);
	}
	urlseg_init(seg, (uint32_t)n);
	free(old);
	return STORE_OK;
}

int
urlset_migrate_v2(struct urlset *us, int format, char **cause)
{
	struct v2_ids l;
	uint64_t moved = 0;
	struct store_txn *txn;
	char buf[8];
	int rc;

	for (;;) {
		if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
			goto err;
		l.n = 0;
		l.bad = NULL;
		rc = store_scan_txn(txn, STORE_URL_SEGS, take_v2, &l);
		if (rc != STORE_OK && rc != MIGRATE_BATCH_FULL) {
			rc = l.bad ? STORE_FAILED : rc;
			goto abort;
		}
		if (l.n > 0 && moved == 0)
			log_info("%s: upgrading the URL store from format 2 "
			    "to %d (a time to live and a namespace per URL)",
			    __func__, URLSET_FORMAT);
		for (size_t i = 0; i < l.n; i++)
			if ((rc = rewrite_v2(txn, l.ids[i])) != STORE_OK)
				goto abort;
		if (l.n == 0 && format == 2) {
			snprintf(buf, sizeof(buf), "%d", URLSET_FORMAT);
			if ((rc = store_meta_put(txn, "urls.format", buf)) !=
			    STORE_OK)
				goto abort;
		}
		if ((rc = store_commit(txn)) != STORE_OK)
			goto err;
		moved += l.n;
		if (l.n == 0)
			break;
		if (URLSET_CRASH(URLSET_CRASH_MIGRATED_BATCH)) {
			rc = STORE_FAILED;
			goto err;
		}
	}
	if (moved > 0)
		log_info("%s: %" PRIu64 " URL segments rewritten in format %d",
		    __func__, moved, URLSET_FORMAT);
	return 0;
abort:
	store_abort(txn);
err:
	if (asprintf(cause, "upgrading the URL store from format 2: %s",
	    l.bad ? l.bad : store_strstatus(rc)) == -1)
		*cause = NULL;
	return -1;
}
