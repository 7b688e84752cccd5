/*
 * urlforget: the host index in the URL writer (urlhosts.h): the texts of a
 * round's new URLs, put in the store with each flush; forgetting a
 * namespace's URLs by host or by prefix; a dropped namespace's entries.
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "urlhosts.h"
#include "urlset_impl.h"

/* Index entries read, and URLs deleted, per step of a forget, at most. */
#define FORGET_STEP		4096
/* Why the index may miss URLs, in the store's metadata. */
#define HOSTS_PARTIAL_KEY	"urls.hosts_partial"

int
urlset_hosts_open(struct urlset *us, int format)
{
	struct store_txn *txn;
	char buf[8];
	int rc;

	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		return rc;
	rc = store_meta_get(txn, HOSTS_PARTIAL_KEY, buf, sizeof(buf));
	if (rc != STORE_OK && rc != STORE_NOTFOUND) {
		store_abort(txn);
		return rc;
	}
	us->hosts_partial = rc == STORE_OK;
	if (us->hosts_partial ||
	    (us->host_index && (format == 0 || format == URLSET_FORMAT))) {
		store_abort(txn);
		return STORE_OK;
	}
	/* Once URLs went unindexed, no forget can promise to find all. */
	if ((rc = store_meta_put(txn, HOSTS_PARTIAL_KEY, "yes")) != STORE_OK) {
		store_abort(txn);
		return rc;
	}
	if ((rc = store_commit(txn)) == STORE_OK) {
		us->hosts_partial = true;
		log_info("%s: %s", __func__, us->host_index ? "the URLs "
		    "stored before format 4 are not in the host index: "
		    "url_forget cannot find them" : "[urls] host_index = no: "
		    "url_forget is refused, and the URLs stored meanwhile "
		    "stay out of its reach once it is on again");
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
	size_t want = us->texts_len + urlset_texts_bound(us, text_bytes, n);
	uint8_t *p;

	if (want <= us->texts_cap)
		return 0;
	if (want < 2 * us->texts_cap)
		want = 2 * us->texts_cap;
	if ((p = realloc(us->texts, want)) == NULL)
		return -1;
	us->texts = p;
	us->texts_cap = want;
	return 0;
}

void
urlset_text_add(struct urlset *us, uint32_t ns, const uint8_t fp[CBF_FP_LEN],
    const struct url_text *t)
{
	if (!us->host_index || t == NULL || t->p == NULL)
		return;
	us->texts_len += urlhosts_rec_encode(ns, fp, t->p, t->len,
	    us->texts + us->texts_len);
}

int
urlset_texts_replay(const uint8_t *text, size_t len, void *arg)
{
	struct urlset *us = arg;

	if (!us->host_index)
		return 0;
	if (urlset_texts_reserve(us, len, 0) == -1)
		return -1;
	memcpy(us->texts + us->texts_len, text, len);
	us->texts_len += len;
	return 0;
}

/* The round's keys, built once, sorted through their offsets. */
struct key_list {
	uint8_t *buf;
	size_t len, cap;
	size_t *off;
	uint16_t *klen;
	size_t n;
};

static int
cmp_keys(const void *a, const void *b, void *arg)
{
	const struct key_list *kl = arg;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	size_t la = kl->klen[i], lb = kl->klen[j];
	int c = memcmp(kl->buf + kl->off[i], kl->buf + kl->off[j],
	    la < lb ? la : lb);

	return c != 0 ? c : (la > lb) - (la < lb);
}

int
urlset_texts_put(struct urlset *us, struct store_txn *txn)
{
	struct key_list kl = { NULL, 0, 0, NULL, NULL, 0 };
	size_t nrec = 0, *order = NULL;
	int rc = STORE_FAILED;

	if (us->texts_len == 0)
		return STORE_OK;
	for (size_t at = 0; at + URLHOSTS_REC_HEADER <= us->texts_len; nrec++)
		at += URLHOSTS_REC_HEADER + (us->texts[at + 4 + CBF_FP_LEN] |
		    (size_t)us->texts[at + 4 + CBF_FP_LEN + 1] << 8);
	/* A key holds its host twice, in its record once: room for about
	 * that, grown as needed. */
	kl.cap = 2 * us->texts_len;
	if ((kl.buf = malloc(kl.cap)) == NULL ||
	    (kl.off = malloc(nrec * sizeof(*kl.off))) == NULL ||
	    (kl.klen = malloc(nrec * sizeof(*kl.klen))) == NULL ||
	    (order = malloc(nrec * sizeof(*order))) == NULL)
		goto out;
	for (size_t at = 0; at + URLHOSTS_REC_HEADER <= us->texts_len;) {
		uint8_t key[URLHOSTS_KEY_MAX];
		size_t reclen, klen = urlhosts_rec_key(us->texts + at, &reclen,
		    key);

		if (at + reclen > us->texts_len) {
			log_warnx("%s: a text record runs past the round's "
			    "texts", __func__);
			goto out;
		}
		at += reclen;
		if (klen == 0)
			continue;	/* a host the index does not find */
		if (kl.len + klen > kl.cap) {
			uint8_t *p = realloc(kl.buf, 2 * kl.cap + klen);

			if (p == NULL)
				goto out;
			kl.buf = p;
			kl.cap = 2 * kl.cap + klen;
		}
		memcpy(kl.buf + kl.len, key, klen);
		kl.off[kl.n] = kl.len;
		kl.klen[kl.n] = (uint16_t)klen;
		order[kl.n] = kl.n;
		kl.len += klen;
		kl.n++;
	}
	/* In key order, LMDB appends to the pages it just wrote. */
	qsort_r(order, kl.n, sizeof(*order), cmp_keys, &kl);
	rc = STORE_OK;
	for (size_t i = 0; i < kl.n && rc == STORE_OK; i++)
		rc = store_put(txn, STORE_URL_HOSTS, kl.buf + kl.off[order[i]],
		    kl.klen[order[i]], "", 0, 0, NULL);
out:
	free(kl.buf);
	free(kl.off);
	free(kl.klen);
	free(order);
	return rc;
}

void
urlset_texts_flushed(struct urlset *us)
{
	us->texts_len = 0;
}

/* A read of index entries under one key prefix. */
struct entry_scan {
	const uint8_t *prefix;
	size_t plen;
	uint8_t *keys;			/* cap keys of URLHOSTS_KEY_MAX */
	uint16_t *klen;
	size_t n, cap;
};

/* store_scan_from's stop: the range or the room ends. */
#define SCAN_STOP		(-1)

static int
scan_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct entry_scan *s = arg;

	(void)val;
	(void)vlen;
	if (klen < s->plen || memcmp(key, s->prefix, s->plen) != 0)
		return SCAN_STOP;
	if (klen > URLHOSTS_KEY_MAX || klen < 4 + CBF_FP_LEN)
		return STORE_FAILED;
	memcpy(s->keys + s->n * URLHOSTS_KEY_MAX, key, klen);
	s->klen[s->n++] = (uint16_t)klen;
	return s->n == s->cap ? SCAN_STOP : 0;
}

/* Reads the first entries (s->cap at most) under s's prefix into s. */
static int
scan_entries(struct urlset *us, struct entry_scan *s)
{
	int rc;

	s->n = 0;
	if ((rc = store_reader_begin(us->wrd->txn)) != STORE_OK)
		return rc;
	rc = store_scan_from(us->wrd->txn, STORE_URL_HOSTS, s->prefix, s->plen,
	    scan_one, s);
	store_reader_end(us->wrd->txn);
	return rc == SCAN_STOP ? STORE_OK : rc;
}

/* Deletes the entries s read. */
static int
delete_entries(struct urlset *us, const struct entry_scan *s)
{
	struct store_txn *txn;
	int rc;

	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		rc = store_del(txn, STORE_URL_HOSTS, s->keys +
		    i * URLHOSTS_KEY_MAX, s->klen[i]);
		if (rc != STORE_OK && rc != STORE_NOTFOUND) {
			store_abort(txn);
			return rc;
		}
	}
	return store_commit(txn);
}

static int
scan_init(struct entry_scan *s, size_t cap)
{
	memset(s, 0, sizeof(*s));
	s->cap = cap;
	s->keys = malloc(cap * URLHOSTS_KEY_MAX);
	s->klen = malloc(cap * sizeof(*s->klen));
	return s->keys != NULL && s->klen != NULL ? 0 : -1;
}

static void
scan_free(struct entry_scan *s)
{
	free(s->keys);
	free(s->klen);
}

/*
 * Forgets job's namespace's URLs under one key prefix: a step reads
 * entries, deletes their records durably through the journal, then the
 * entries (an entry outliving its record is harmless; the reverse would
 * hide a URL from the next forget).
 */
static int
forget_range(struct urlset *us, struct urlset_job *job, struct entry_scan *s,
    struct url_key *keys, struct url_state *states)
{
	struct urlset_job step;
	int rc;

	do {
		if ((rc = scan_entries(us, s)) != STORE_OK || s->n == 0)
			return rc;
		for (size_t i = 0; i < s->n; i++) {
			memcpy(keys[i].fp, urlhosts_key_fp(s->keys +
			    i * URLHOSTS_KEY_MAX, s->klen[i]), CBF_FP_LEN);
			cbf_indices(us->filter, keys[i].fp, keys[i].idx);
		}
		memset(&step, 0, sizeof(step));
		step.op = URLSET_DELETE;
		step.durability = URLSET_DURABLE;
		memcpy(step.ns, job->ns, sizeof(step.ns));
		step.keys = keys;
		step.n = s->n;
		step.states = states;
		urlset_apply_group(us, &step);
		if (step.status != STORE_OK)
			return step.status;
		for (size_t i = 0; i < s->n; i++)
			job->forget->forgotten += states[i].count > 0;
		if ((rc = delete_entries(us, s)) != STORE_OK)
			return rc;
	} while (s->n == s->cap);
	return STORE_OK;
}

int
urlset_forget(struct urlset *us, struct urlset_job *job)
{
	struct urlset_forget *f = job->forget;
	uint8_t prefix[2][URLHOSTS_KEY_MAX];
	size_t plen[2] = { 0, 0 }, nranges = 1, cap;
	struct url_key *keys = NULL;
	struct url_state *states = NULL;
	struct entry_scan s;
	uint32_t id;
	int rc = STORE_FAILED;

	f->forgotten = 0;
	f->complete = !us->hosts_partial;
	if ((id = urlns_find(us->ns, job->ns, strlen(job->ns), NULL)) ==
	    URLNS_NONE)
		return STORE_OK;
	if (f->host != NULL) {
		plen[0] = urlhosts_host_prefix(id, f->host, f->hlen, '\0',
		    prefix[0]);
		if (f->subdomains) {
			plen[1] = urlhosts_host_prefix(id, f->host, f->hlen,
			    '.', prefix[1]);
			nranges = 2;
		}
	} else
		plen[0] = urlhosts_url_prefix(id, f->prefix, f->plen,
		    prefix[0]);
	if (plen[0] == 0)
		return STORE_OK;	/* nothing so long is indexed */
	/* Every text into the index first: the scan reads only the store. */
	if (us->texts_len > 0 && (rc = urlset_flush(us, true)) != STORE_OK)
		return rc;
	/* A step fits the journal's table, as a group must. */
	if ((cap = urlmem_capacity(us->mem) / 2) > FORGET_STEP)
		cap = FORGET_STEP;
	if (cap == 0)
		cap = 1;
	if (scan_init(&s, cap) == -1 ||
	    (keys = malloc(cap * sizeof(*keys))) == NULL ||
	    (states = malloc(cap * sizeof(*states))) == NULL) {
		rc = STORE_FAILED;
		goto out;
	}
	for (size_t r = 0; r < nranges; r++) {
		s.prefix = prefix[r];
		s.plen = plen[r];
		if ((rc = forget_range(us, job, &s, keys, states)) != STORE_OK)
			break;
	}
out:
	scan_free(&s);
	free(keys);
	free(states);
	return rc;
}

int
urlset_hosts_drop(struct urlset *us, uint32_t id, bool *done)
{
	uint8_t prefix[4] = { (uint8_t)(id >> 24), (uint8_t)(id >> 16),
	    (uint8_t)(id >> 8), (uint8_t)id };
	struct entry_scan s;
	int rc;

	*done = false;
	if (scan_init(&s, FORGET_STEP) == -1) {
		scan_free(&s);
		return STORE_FAILED;
	}
	s.prefix = prefix;
	s.plen = sizeof(prefix);
	if ((rc = scan_entries(us, &s)) == STORE_OK && s.n > 0)
		rc = delete_entries(us, &s);
	*done = rc == STORE_OK && s.n < s.cap;
	scan_free(&s);
	return rc;
}
