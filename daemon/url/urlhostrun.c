/*
 * urlhostrun: the host index's runs in the store.  See urlhostrun.h.
 */
#include "urlhostrun.h"

#include <stdlib.h>
#include <string.h>

#include "le.h"
#include "log.h"

/* The directory's block number. */
#define DIR_BLOCK		UINT32_MAX

static void
block_key(uint8_t out[8], uint32_t run, uint32_t block)
{
	be_put32(out, run);
	be_put32(out + 4, block);
}

void
hostrun_writer_init(struct hostrun_writer *w, struct store_txn *txn,
    uint32_t id)
{
	memset(w, 0, sizeof(*w));
	w->txn = txn;
	w->run.id = id;
	w->len = 4;
}

static int
add_fence(struct hostrun_writer *w, const uint8_t *key, size_t klen)
{
	struct hostrun *r = &w->run;
	size_t used = r->nblocks > 0 ? r->fence_off[r->nblocks] : 0;

	if (r->nblocks + 2 > w->off_cap) {
		uint32_t cap = w->off_cap ? 2 * w->off_cap : 64;
		uint32_t *p = realloc(r->fence_off, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		if (r->nblocks == 0)
			p[0] = 0;
		r->fence_off = p;
		w->off_cap = cap;
	}
	if (used + klen > w->fences_cap) {
		size_t cap = 2 * w->fences_cap + klen + 4096;
		uint8_t *p = realloc(r->fences, cap);

		if (p == NULL)
			return -1;
		r->fences = p;
		w->fences_cap = cap;
	}
	memcpy(r->fences + used, key, klen);
	r->fence_off[r->nblocks + 1] = (uint32_t)(used + klen);
	return 0;
}

/* Keeps the block being filled in memory, for hostrun_writer_put. */
static int
hold_block(struct hostrun_writer *w)
{
	if (w->held_len + 4 + w->len > w->held_cap) {
		size_t cap = 2 * w->held_cap + 4 + w->len;
		uint8_t *p = realloc(w->held, cap);

		if (p == NULL)
			return STORE_FAILED;
		w->held = p;
		w->held_cap = cap;
	}
	le_put32(w->held + w->held_len, (uint32_t)w->len);
	memcpy(w->held + w->held_len + 4, w->block, w->len);
	w->held_len += 4 + w->len;
	return STORE_OK;
}

/* Writes block b of w's run in w's transaction. */
static int
store_block(struct hostrun_writer *w, uint32_t b, const uint8_t *data,
    size_t len)
{
	uint8_t k[8];

	block_key(k, w->run.id, b);
	return store_put(w->txn, STORE_URL_HOSTS, k, sizeof(k), data, len, 0,
	    NULL);
}

static int
put_block(struct hostrun_writer *w)
{
	int rc;

	if (w->count == 0)
		return STORE_OK;
	le_put32(w->block, w->count);
	rc = w->txn == NULL ? hold_block(w) :
	    store_block(w, w->run.nblocks, w->block, w->len);
	if (rc != STORE_OK)
		return rc;
	w->run.nblocks++;
	w->len = 4;
	w->count = 0;
	return STORE_OK;
}

int
hostrun_writer_add(struct hostrun_writer *w, const uint8_t *key, size_t klen)
{
	size_t shared = 0;
	int rc;

	if (w->last_len == klen && memcmp(w->last, key, klen) == 0 &&
	    w->run.nkeys > 0)
		return STORE_OK;
	if (w->count > 0 && w->len + 4 + klen > URLHOSTRUN_BLOCK &&
	    (rc = put_block(w)) != STORE_OK)
		return rc;
	if (w->count == 0) {
		if (add_fence(w, key, klen) == -1)
			return STORE_FAILED;
	} else
		while (shared < klen && shared < w->last_len &&
		    key[shared] == w->last[shared])
			shared++;
	w->block[w->len] = (uint8_t)(shared & 0xff);
	w->block[w->len + 1] = (uint8_t)(shared >> 8);
	w->block[w->len + 2] = (uint8_t)((klen - shared) & 0xff);
	w->block[w->len + 3] = (uint8_t)((klen - shared) >> 8);
	memcpy(w->block + w->len + 4, key + shared, klen - shared);
	w->len += 4 + klen - shared;
	w->count++;
	w->run.nkeys++;
	memcpy(w->last, key, klen);
	w->last_len = klen;
	return STORE_OK;
}

/* The run's directory: its key count, its blocks and their fences. */
static int
put_dir(struct hostrun_writer *w)
{
	struct hostrun *r = &w->run;
	size_t len = 8 + 2 * (size_t)r->nblocks + 2, at = 8;
	uint8_t *dir;
	int rc;

	if (r->nblocks > 0)
		len += r->fence_off[r->nblocks];
	if ((dir = malloc(len)) == NULL)
		return STORE_FAILED;
	le_put32(dir, (uint32_t)r->nkeys);
	le_put32(dir + 4, r->nblocks);
	for (uint32_t b = 0; b < r->nblocks; b++) {
		uint32_t flen = r->fence_off[b + 1] - r->fence_off[b];

		dir[at] = (uint8_t)(flen & 0xff);
		dir[at + 1] = (uint8_t)(flen >> 8);
		memcpy(dir + at + 2, r->fences + r->fence_off[b], flen);
		at += 2 + flen;
	}
	rc = store_block(w, DIR_BLOCK, dir, at);
	free(dir);
	return rc;
}

int
hostrun_writer_finish(struct hostrun_writer *w)
{
	int rc;

	if ((rc = put_block(w)) != STORE_OK || w->txn == NULL)
		return rc;
	return put_dir(w);
}

int
hostrun_writer_put(struct hostrun_writer *w, struct store_txn *txn,
    uint32_t id)
{
	uint32_t b = 0;
	int rc;

	w->txn = txn;
	w->run.id = id;
	for (size_t at = 0; at + 4 <= w->held_len; b++) {
		uint32_t len = le_get32(w->held + at);

		if ((rc = store_block(w, b, w->held + at + 4, len)) !=
		    STORE_OK)
			return rc;
		at += 4 + len;
	}
	return put_dir(w);
}

void
hostrun_writer_discard(struct hostrun_writer *w)
{
	hostrun_free(&w->run);
	free(w->held);
	w->held = NULL;
	w->held_len = w->held_cap = 0;
}

void
hostrun_free(struct hostrun *r)
{
	free(r->fences);
	free(r->fence_off);
	r->fences = NULL;
	r->fence_off = NULL;
}

/* Decodes a directory into r; -1 if it is not one. */
static int
decode_dir(struct hostrun *r, uint32_t id, const uint8_t *p, size_t len)
{
	size_t at = 8, total = 0;

	memset(r, 0, sizeof(*r));
	r->id = id;
	if (len < 8)
		return -1;
	r->nkeys = le_get32(p);
	r->nblocks = le_get32(p + 4);
	if (r->nblocks > len / 2)
		return -1;
	if ((r->fence_off = malloc(((size_t)r->nblocks + 1) *
	    sizeof(*r->fence_off))) == NULL ||
	    (r->fences = malloc(len)) == NULL)
		goto bad;
	r->fence_off[0] = 0;
	for (uint32_t b = 0; b < r->nblocks; b++) {
		size_t flen;

		if (at + 2 > len)
			goto bad;
		flen = p[at] | (size_t)p[at + 1] << 8;
		if (flen > URLHOSTS_KEY_MAX || at + 2 + flen > len)
			goto bad;
		memcpy(r->fences + total, p + at + 2, flen);
		total += flen;
		r->fence_off[b + 1] = (uint32_t)total;
		at += 2 + flen;
	}
	return 0;
bad:
	hostrun_free(r);
	return -1;
}

struct load {
	struct hostrun *runs;
	size_t n, cap;
	uint32_t *orphans;		/* runs with blocks, no directory */
	size_t norphans, orphans_cap;
	uint32_t last_id;		/* the run whose blocks come last */
	bool any;
};

/* Notes run id, whose blocks the scan reaches (in id order). */
static int
note_run(struct load *l, uint32_t id)
{
	if (l->any && id == l->last_id)
		return 0;
	/* The run before had blocks and no directory (which sorts last). */
	if (l->any && (l->n == 0 || l->runs[l->n - 1].id != l->last_id)) {
		if (l->norphans == l->orphans_cap) {
			size_t cap = l->orphans_cap ? 2 * l->orphans_cap : 8;
			uint32_t *p = realloc(l->orphans, cap * sizeof(*p));

			if (p == NULL)
				return -1;
			l->orphans = p;
			l->orphans_cap = cap;
		}
		l->orphans[l->norphans++] = l->last_id;
	}
	l->any = true;
	l->last_id = id;
	return 0;
}

static int
load_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct load *l = arg;

	if (klen != 8) {
		log_warnx("%s: the host index has a key of %zu bytes",
		    __func__, klen);
		return STORE_FAILED;
	}
	if (note_run(l, be_get32(key)) == -1)
		return STORE_FAILED;
	if (be_get32((const uint8_t *)key + 4) != DIR_BLOCK)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct hostrun *p = realloc(l->runs, cap * sizeof(*p));

		if (p == NULL)
			return STORE_FAILED;
		l->runs = p;
		l->cap = cap;
	}
	if (decode_dir(&l->runs[l->n], be_get32(key), val, vlen) == -1) {
		log_warnx("%s: the host index's run %u has a damaged "
		    "directory", __func__, be_get32(key));
		return STORE_FAILED;
	}
	l->n++;
	return 0;
}

/* Deletes the blocks of run id, which has no directory. */
static int
delete_orphan(struct store_txn *txn, uint32_t id)
{
	uint8_t k[8];
	int rc;

	for (uint32_t b = 0;; b++) {
		block_key(k, id, b);
		if ((rc = store_del(txn, STORE_URL_HOSTS, k, sizeof(k))) ==
		    STORE_NOTFOUND)
			return STORE_OK;
		if (rc != STORE_OK)
			return rc;
	}
}

int
hostrun_load(struct store_txn *txn, struct hostrun **runs, size_t *n,
    uint32_t *next_id, size_t *orphans)
{
	struct load l;
	int rc;

	memset(&l, 0, sizeof(l));
	if ((rc = store_scan_txn(txn, STORE_URL_HOSTS, load_one, &l)) ==
	    STORE_OK && note_run(&l, l.any ? l.last_id + 1 : 0) == -1)
		rc = STORE_FAILED;	/* the last run's fate */
	for (size_t i = 0; i < l.norphans && rc == STORE_OK; i++)
		rc = delete_orphan(txn, l.orphans[i]);
	free(l.orphans);
	if (rc != STORE_OK) {
		for (size_t i = 0; i < l.n; i++)
			hostrun_free(&l.runs[i]);
		free(l.runs);
		return rc;
	}
	*runs = l.runs;
	*n = l.n;
	*next_id = l.any ? l.last_id + 1 : 0;
	*orphans = l.norphans;
	return STORE_OK;
}

int
hostrun_delete(struct store_txn *txn, const struct hostrun *r)
{
	uint8_t k[8];
	int rc;

	for (uint32_t b = 0; b < r->nblocks; b++) {
		block_key(k, r->id, b);
		if ((rc = store_del(txn, STORE_URL_HOSTS, k, sizeof(k))) !=
		    STORE_OK)
			return rc;
	}
	block_key(k, r->id, DIR_BLOCK);
	return store_del(txn, STORE_URL_HOSTS, k, sizeof(k));
}

/* memcmp order of two byte strings of their lengths. */
static int
cmp_bytes(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c != 0 ? c : (alen > blen) - (alen < blen);
}

static int
load_block(struct hostrun_iter *it, uint32_t b)
{
	struct store_val v;
	uint8_t k[8];
	int rc;

	block_key(k, it->run->id, b);
	if ((rc = store_get(it->txn, STORE_URL_HOSTS, k, sizeof(k), &v)) !=
	    STORE_OK)
		return rc == STORE_NOTFOUND ? STORE_FAILED : rc;
	if (v.len < 4)
		return STORE_FAILED;
	if (v.len > it->cap) {
		uint8_t *p = realloc(it->data, v.len);

		if (p == NULL)
			return STORE_FAILED;
		it->data = p;
		it->cap = v.len;
	}
	memcpy(it->data, v.data, v.len);
	it->len = v.len;
	it->off = 4;
	it->left = le_get32(it->data);
	it->block = b;
	it->klen = 0;
	return STORE_OK;
}

int
hostrun_iter_init(struct hostrun_iter *it, struct store_txn *txn,
    const struct hostrun *run, const uint8_t *from, size_t flen)
{
	uint32_t lo = 0, hi = run->nblocks;

	memset(it, 0, sizeof(*it));
	it->txn = txn;
	it->run = run;
	if (run->nblocks == 0) {
		it->block = 0;
		return STORE_OK;
	}
	/* The last block whose first key is at most from. */
	while (from != NULL && hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cmp_bytes(run->fences + run->fence_off[mid],
		    run->fence_off[mid + 1] - run->fence_off[mid], from,
		    flen) <= 0)
			lo = mid;
		else
			hi = mid;
	}
	return load_block(it, lo);
}

int
hostrun_iter_next(struct hostrun_iter *it, bool *done)
{
	size_t shared, rest;
	int rc;

	*done = false;
	while (it->left == 0) {
		if (it->run->nblocks == 0 ||
		    it->block + 1 >= it->run->nblocks) {
			*done = true;
			return STORE_OK;
		}
		if ((rc = load_block(it, it->block + 1)) != STORE_OK)
			return rc;
	}
	if (it->off + 4 > it->len)
		return STORE_FAILED;
	shared = it->data[it->off] | (size_t)it->data[it->off + 1] << 8;
	rest = it->data[it->off + 2] | (size_t)it->data[it->off + 3] << 8;
	if (shared > it->klen || shared + rest > URLHOSTS_KEY_MAX ||
	    it->off + 4 + rest > it->len)
		return STORE_FAILED;
	memcpy(it->key + shared, it->data + it->off + 4, rest);
	it->klen = shared + rest;
	it->off += 4 + rest;
	it->left--;
	return STORE_OK;
}

void
hostrun_iter_free(struct hostrun_iter *it)
{
	free(it->data);
	it->data = NULL;
}
