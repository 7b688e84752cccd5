/*
 * urlmove: moving URLs to a new shard.  See urlset.h and docs/urlstore.md
 * ("Export and import").
 *
 * An export session is a snapshot of the store and the set of keys
 * changed since it was taken.  The snapshot is a read transaction begun by
 * the writer right after a flush, and kept open until the session ends:
 * the journal's table is empty then, so the snapshot holds every record
 * and (the flush wrote the round's texts as a run) every text, and every
 * later change passes urlset_export_note.  A page of the snapshot followed
 * by the current state of the keys changed since is therefore the state
 * of every key that moves.  The store is opened with MDB_NOTLS, so that
 * the pages may read the snapshot from any thread, one at a time
 * (move_lock).  Its cost: the store cannot reuse the pages that writes
 * free while the session is open, and grows by them.
 *
 * Merges of segments and of host runs go on during a session: they
 * rewrite what the snapshot still sees as it was.  The host index's runs
 * are the writer's list, copied when the snapshot is taken (a merge under
 * way then has no directory yet, and is not in the list).
 *
 * The changed set is a table of fingerprints with the namespace id each
 * was changed in, and the text a change recorded: an array, taken from
 * the end by URLSET_EXPORT_CHANGED, and an index of it by fingerprint
 * (linear probing, with deletions that shift the cluster back).
 */
#include <stdlib.h>
#include <string.h>

#include "jumphash.h"
#include "le.h"
#include "log.h"
#include "urlhostrun.h"
#include "urlhosts.h"
#include "urlset_impl.h"

/* The cursor's high bit: reading the host index's runs; then the run (24
 * bits) and the key's ordinal in it (39 bits).  Else the segment id and
 * the record's slot (16 bits). */
#define CURSOR_HOSTS		(1ULL << 63)
#define CURSOR_ORD_BITS		39
#define CURSOR_ORD_MASK		((1ULL << CURSOR_ORD_BITS) - 1)
#define CURSOR_RUN_MAX		((1U << 24) - 1)

/* A namespace as the session names it. */
struct ns_name {
	uint32_t id;
	bool dropping;
	char name[URLNS_NAME_MAX + 1];
	struct urlset_ns_mask mask;
};

/* Namespaces by id, sorted: few, and looked up for every URL. */
struct ns_cache {
	struct ns_name *v;
	size_t n, cap;
	size_t last;			/* the last one found */
};

struct chg_entry {
	uint8_t fp[CBF_FP_LEN];
	uint32_t ns;			/* the id it was changed in */
	uint32_t text_len;
	char *text;			/* the last text recorded, or NULL */
};

struct export_session {
	uint32_t shards, place;
	struct store_txn *txn;		/* the snapshot, begun */
	struct hostrun *runs;		/* the host index's then (no fences) */
	size_t nruns;

	/* The pages'. */
	struct ns_cache page_ns;
	struct hostrun_iter it;		/* where the last page stopped */
	bool it_valid;
	size_t it_run;
	uint64_t it_ord;		/* keys of it_run read */

	/* The writer's. */
	struct ns_cache note_ns;
	struct chg_entry *chg;
	size_t nchg, chg_cap;
	uint32_t *slots;		/* entry index + 1; 0: empty */
	size_t slot_mask;
	size_t bytes;			/* the set's memory, texts included */
	bool failed;			/* atomic: a change could not be kept */
};

/* What a page or a CHANGED answer gathers, made one allocation at the
 * end. */
struct moved_list {
	struct url_moved *v;
	size_t n, cap;
	size_t *toff;			/* each one's text in buf, or SIZE_MAX */
	char *buf;
	size_t len, bcap;
};

/* Namespace id as c knows it, asking the registry the first time; NULL if
 * there is no such id (or memory is short). */
static const struct ns_name *
ns_get(struct urlset *us, struct ns_cache *c, uint32_t id)
{
	struct urlns_info info;
	size_t lo = 0, hi = c->n;

	if (c->last < c->n && c->v[c->last].id == id)
		return &c->v[c->last];
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->n && c->v[lo].id == id) {
		c->last = lo;
		return &c->v[lo];
	}
	if (!urlns_info(us->ns, id, &info))
		return NULL;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct ns_name *p = realloc(c->v, cap * sizeof(*p));

		if (p == NULL)
			return NULL;
		c->v = p;
		c->cap = cap;
	}
	memmove(&c->v[lo + 1], &c->v[lo], (c->n - lo) * sizeof(*c->v));
	c->n++;
	c->v[lo].id = id;
	c->v[lo].dropping = info.dropping;
	memcpy(c->v[lo].name, info.name, sizeof(c->v[lo].name));
	urlset_ns_mask(info.name, strlen(info.name), &c->v[lo].mask);
	c->last = lo;
	return &c->v[lo];
}

static void
unmask(const struct ns_name *nn, const uint8_t fp[CBF_FP_LEN],
    uint8_t digest[CBF_FP_LEN])
{
	for (int i = 0; i < CBF_FP_LEN; i++)
		digest[i] = fp[i] ^ nn->mask.m[i];
}

static bool
moves(const struct export_session *s, const uint8_t digest[CBF_FP_LEN])
{
	return jump_hash_owner(digest, s->shards) != s->place;
}

static int
list_add(struct moved_list *l, const uint8_t digest[CBF_FP_LEN],
    const char *ns, const struct url_state *st, const char *text,
    size_t text_len, bool text_only)
{
	struct url_moved *m;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct url_moved *v = realloc(l->v, cap * sizeof(*v));
		size_t *t;

		if (v == NULL)
			return -1;
		l->v = v;
		if ((t = realloc(l->toff, cap * sizeof(*t))) == NULL)
			return -1;
		l->toff = t;
		l->cap = cap;
	}
	l->toff[l->n] = SIZE_MAX;
	if (text != NULL) {
		if (l->len + text_len > l->bcap) {
			size_t cap = 2 * l->bcap + text_len + 1024;
			char *b = realloc(l->buf, cap);

			if (b == NULL)
				return -1;
			l->buf = b;
			l->bcap = cap;
		}
		memcpy(l->buf + l->len, text, text_len);
		l->toff[l->n] = l->len;
		l->len += text_len;
	}
	m = &l->v[l->n++];
	memset(m, 0, sizeof(*m));
	memcpy(m->digest, digest, CBF_FP_LEN);
	memcpy(m->ns, ns, sizeof(m->ns));
	if (st != NULL)
		m->st = *st;
	m->st.ns = 0;
	m->text_len = text != NULL ? text_len : 0;
	m->text_only = text_only;
	return 0;
}

/* The list as one allocation in *out (NULL when empty); -1 if memory is
 * short.  Frees the list's own memory either way. */
static int
list_finish(struct moved_list *l, struct url_moved **out, size_t *n)
{
	struct url_moved *v = NULL;
	int rc = 0;

	*out = NULL;
	*n = 0;
	if (l->n > 0) {
		if ((v = malloc(l->n * sizeof(*v) + l->len)) == NULL)
			rc = -1;
		else {
			char *texts = (char *)(v + l->n);

			memcpy(v, l->v, l->n * sizeof(*v));
			if (l->len > 0)
				memcpy(texts, l->buf, l->len);
			for (size_t i = 0; i < l->n; i++)
				v[i].text = l->toff[i] == SIZE_MAX ? NULL :
				    texts + l->toff[i];
			*out = v;
			*n = l->n;
		}
	}
	free(l->v);
	free(l->toff);
	free(l->buf);
	memset(l, 0, sizeof(*l));
	return rc;
}

void
urlset_moved_free(struct url_moved *m)
{
	free(m);
}

static void
session_free(struct export_session *s)
{
	if (s == NULL)
		return;
	if (s->txn != NULL) {
		store_reader_end(s->txn);
		store_reader_free(s->txn);
	}
	if (s->it_valid)
		hostrun_iter_free(&s->it);
	free(s->runs);
	free(s->page_ns.v);
	free(s->note_ns.v);
	for (size_t i = 0; i < s->nchg; i++)
		free(s->chg[i].text);
	free(s->chg);
	free(s->slots);
	free(s);
}

/*
 * The changed set.
 */

static size_t
slot_home(const struct export_session *s, const uint8_t fp[CBF_FP_LEN])
{
	return (size_t)urlrec_be64(fp) & s->slot_mask;
}

/* The slot of fp's entry, or of the empty slot where it would go. */
static size_t
slot_find(const struct export_session *s, const uint8_t fp[CBF_FP_LEN])
{
	size_t i;

	for (i = slot_home(s, fp); s->slots[i] != 0;
	    i = (i + 1) & s->slot_mask)
		if (urlrec_cmp_fp(s->chg[s->slots[i] - 1].fp, fp) == 0)
			break;
	return i;
}

/* Makes room for one more entry; -1 past the bound or if memory is
 * short. */
static int
set_reserve(struct export_session *s)
{
	if (s->nchg == s->chg_cap) {
		size_t cap = s->chg_cap ? 2 * s->chg_cap : 1024;
		struct chg_entry *c;

		if (s->bytes + (cap - s->chg_cap) * sizeof(*c) >
		    URLSET_EXPORT_CHANGED_BYTES)
			return -1;
		if ((c = realloc(s->chg, cap * sizeof(*c))) == NULL)
			return -1;
		s->bytes += (cap - s->chg_cap) * sizeof(*c);
		s->chg = c;
		s->chg_cap = cap;
	}
	if (s->slots == NULL || 2 * (s->nchg + 1) > s->slot_mask + 1) {
		size_t nslots = s->slots ? 2 * (s->slot_mask + 1) : 2048;
		uint32_t *sl;

		if (s->bytes + nslots * sizeof(*sl) >
		    URLSET_EXPORT_CHANGED_BYTES ||
		    (sl = calloc(nslots, sizeof(*sl))) == NULL)
			return -1;
		if (s->slots != NULL)
			s->bytes -= (s->slot_mask + 1) * sizeof(*sl);
		s->bytes += nslots * sizeof(*sl);
		free(s->slots);
		s->slots = sl;
		s->slot_mask = nslots - 1;
		for (size_t e = 0; e < s->nchg; e++)
			s->slots[slot_find(s, s->chg[e].fp)] =
			    (uint32_t)(e + 1);
	}
	return 0;
}

/* Takes the last entry out of the index (the array's caller drops it). */
static void
set_unindex_last(struct export_session *s)
{
	size_t i = slot_find(s, s->chg[s->nchg - 1].fp), j = i;

	/* Backward shift: an entry after the hole whose home does not lie
	 * cyclically in (hole, its slot] moves into the hole. */
	for (;;) {
		size_t k;

		j = (j + 1) & s->slot_mask;
		if (s->slots[j] == 0)
			break;
		k = slot_home(s, s->chg[s->slots[j] - 1].fp);
		if (i <= j ? (k <= i || k > j) : (k <= i && k > j)) {
			s->slots[i] = s->slots[j];
			i = j;
		}
	}
	s->slots[i] = 0;
}

/* The session cannot keep its promise any more: it says so from now on,
 * and its memory goes. */
static void
session_fail(struct export_session *s, const char *why)
{
	if (__atomic_load_n(&s->failed, __ATOMIC_ACQUIRE))
		return;
	log_warnx("%s: the export session fails (%s): it must begin again",
	    __func__, why);
	for (size_t i = 0; i < s->nchg; i++)
		free(s->chg[i].text);
	free(s->chg);
	free(s->slots);
	s->chg = NULL;
	s->slots = NULL;
	s->nchg = s->chg_cap = 0;
	s->slot_mask = 0;
	s->bytes = 0;
	__atomic_store_n(&s->failed, true, __ATOMIC_RELEASE);
}

void
urlset_export_note(struct urlset *us, const struct stage_entry *e)
{
	struct export_session *s = us->move;
	const struct ns_name *nn;
	uint8_t digest[CBF_FP_LEN];
	uint32_t ns;
	size_t i;

	if (__atomic_load_n(&s->failed, __ATOMIC_RELAXED))
		return;
	ns = e->cur.count > 0 ? e->cur.ns : e->base.st.ns;
	/* A dropped namespace's record going: the export never gave it. */
	if (e->cur.count == 0 && urlns_dropping(us->ns, ns))
		return;
	if ((nn = ns_get(us, &s->note_ns, ns)) == NULL) {
		session_fail(s, "a change in an unknown namespace");
		return;
	}
	unmask(nn, e->key.fp, digest);
	if (!moves(s, digest))
		return;
	if (set_reserve(s) == -1) {
		session_fail(s, "its changed keys outgrew their memory");
		return;
	}
	i = slot_find(s, e->key.fp);
	if (s->slots[i] != 0) {
		s->chg[s->slots[i] - 1].ns = ns;
		return;
	}
	memset(&s->chg[s->nchg], 0, sizeof(s->chg[s->nchg]));
	memcpy(s->chg[s->nchg].fp, e->key.fp, CBF_FP_LEN);
	s->chg[s->nchg].ns = ns;
	s->slots[i] = (uint32_t)++s->nchg;
}

void
urlset_export_note_texts(struct urlset *us, const uint8_t *texts, size_t len)
{
	struct export_session *s = us->move;

	for (size_t at = 0; at + URLHOSTS_REC_HEADER <= len &&
	    !__atomic_load_n(&s->failed, __ATOMIC_RELAXED);) {
		const uint8_t *fp = texts + at + 4;
		size_t tlen = texts[at + 4 + CBF_FP_LEN] |
		    (size_t)texts[at + 4 + CBF_FP_LEN + 1] << 8;
		struct chg_entry *c;
		size_t i;
		char *t;

		at += URLHOSTS_REC_HEADER;
		if (at + tlen > len)
			break;
		/* Only the keys the group's changes noted move. */
		if (s->nchg > 0 && s->slots[i = slot_find(s, fp)] != 0) {
			c = &s->chg[s->slots[i] - 1];
			if (s->bytes + tlen > URLSET_EXPORT_CHANGED_BYTES ||
			    (t = malloc(tlen + 1)) == NULL) {
				session_fail(s, "its changed keys' texts "
				    "outgrew their memory");
				return;
			}
			memcpy(t, texts + at, tlen);
			s->bytes += tlen;
			s->bytes -= c->text_len;
			free(c->text);
			c->text = t;
			c->text_len = (uint32_t)tlen;
		}
		at += tlen;
	}
}

/*
 * The session.
 */

int
urlset_export_begin(struct urlset *us, struct urlset_job *job)
{
	struct export_session *s, *old;
	int rc;

	if (job->shards == 0 || job->place >= job->shards) {
		job->refused = "the place is not on the new shard list";
		return STORE_FAILED;
	}
	if (us->hosts.nruns > CURSOR_RUN_MAX) {
		job->refused = "too many runs in the host index";
		return STORE_FAILED;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return STORE_FAILED;
	s->shards = job->shards;
	s->place = job->place;
	if (us->hosts.nruns > 0 &&
	    (s->runs = calloc(us->hosts.nruns, sizeof(*s->runs))) == NULL) {
		session_free(s);
		return STORE_FAILED;
	}
	/* The iterators read from the first block: no fences needed. */
	for (size_t i = 0; i < us->hosts.nruns; i++) {
		s->runs[i] = us->hosts.runs[i];
		s->runs[i].fences = NULL;
		s->runs[i].fence_off = NULL;
	}
	s->nruns = us->hosts.nruns;
	if ((s->txn = store_reader_new(us->st)) == NULL) {
		session_free(s);
		return STORE_FAILED;
	}
	if ((rc = store_reader_begin(s->txn)) != STORE_OK) {
		store_reader_free(s->txn);
		s->txn = NULL;
		session_free(s);
		return rc;
	}
	pthread_mutex_lock(&us->move_lock);
	old = us->move;
	us->move = s;
	pthread_mutex_unlock(&us->move_lock);
	session_free(old);
	log_info("%s: an export session for place %u of %u begins", __func__,
	    s->place, s->shards);
	return STORE_OK;
}

void
urlset_export_end(struct urlset *us)
{
	struct export_session *s;

	pthread_mutex_lock(&us->move_lock);
	s = us->move;
	us->move = NULL;
	pthread_mutex_unlock(&us->move_lock);
	if (s != NULL)
		log_info("%s: the export session ends", __func__);
	session_free(s);
}

bool
urlset_export_open(struct urlset *us)
{
	bool open;

	pthread_mutex_lock(&us->move_lock);
	open = us->move != NULL &&
	    !__atomic_load_n(&us->move->failed, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&us->move_lock);
	return open;
}

int
urlset_export_changed(struct urlset *us, struct urlset_job *job)
{
	struct export_session *s = us->move;
	struct moved_list l = { 0 };
	struct url_key *keys = NULL;
	struct url_state *states = NULL;
	size_t n;
	int rc = STORE_OK;

	job->moved = NULL;
	job->nmoved = 0;
	job->more = false;
	if (s == NULL || __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE))
		return STORE_FAILED;
	n = job->n < s->nchg ? job->n : s->nchg;
	if (n > URLSET_GROUP_MAX)
		n = URLSET_GROUP_MAX;
	if (n > 0 && ((keys = malloc(n * sizeof(*keys))) == NULL ||
	    (states = malloc(n * sizeof(*states))) == NULL))
		rc = STORE_FAILED;
	/* The last n entries, which come out of the array at no cost. */
	for (size_t i = 0; rc == STORE_OK && i < n; i++) {
		memcpy(keys[i].fp, s->chg[s->nchg - 1 - i].fp, CBF_FP_LEN);
		cbf_indices(us->filter, keys[i].fp, keys[i].idx);
	}
	if (rc == STORE_OK && n > 0)
		rc = urlset_current_states(us, keys, n, states);
	for (size_t i = 0; rc == STORE_OK && i < n; i++) {
		const struct chg_entry *c = &s->chg[s->nchg - 1 - i];
		struct url_state *st = &states[i];
		const struct ns_name *nn = NULL;
		uint8_t digest[CBF_FP_LEN];

		/* A record answers in its namespace; none (or a dropped
		 * namespace's) in the one the change was made in. */
		if (st->count > 0 && !urlns_dropping(us->ns, st->ns))
			nn = ns_get(us, &s->note_ns, st->ns);
		else {
			memset(st, 0, sizeof(*st));
			nn = ns_get(us, &s->note_ns, c->ns);
		}
		if (nn == NULL) {
			rc = STORE_FAILED;
			break;
		}
		unmask(nn, c->fp, digest);
		if (list_add(&l, digest, nn->name, st, c->text, c->text_len,
		    false) == -1)
			rc = STORE_FAILED;
	}
	free(keys);
	free(states);
	if (list_finish(&l, &job->moved, &job->nmoved) == -1 &&
	    rc == STORE_OK)
		rc = STORE_FAILED;
	if (rc != STORE_OK) {
		/* Nothing taken out: the next call answers them. */
		urlset_moved_free(job->moved);
		job->moved = NULL;
		job->nmoved = 0;
		job->more = s->nchg > 0;
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		struct chg_entry *c = &s->chg[s->nchg - 1];

		set_unindex_last(s);
		s->bytes -= c->text_len;
		free(c->text);
		s->nchg--;
	}
	job->more = s->nchg > 0;
	return STORE_OK;
}

/*
 * Pages.
 */

struct page_scan {
	struct urlset *us;
	struct export_session *s;
	struct moved_list *l;
	size_t max;
	uint64_t *cursor;
	int rc;
	bool full;			/* stopped for the page's size */
};

/* One segment of the snapshot, from the cursor's slot on. */
static int
page_segment(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct page_scan *ps = arg;
	struct export_session *s = ps->s;
	struct store_val b;
	uint32_t id, from = 0;
	int64_t nrec;

	if (klen != sizeof(id)) {
		ps->rc = STORE_FAILED;
		return 1;
	}
	memcpy(&id, key, sizeof(id));
	if ((uint64_t)id == *ps->cursor >> 16)
		from = (uint32_t)(*ps->cursor & 0xffff);
	if ((nrec = urlseg_check(val, vlen)) < 0 ||
	    (ps->rc = store_get(s->txn, STORE_URL_LIVE, &id, sizeof(id),
	    &b)) != STORE_OK || b.len < URLSEG_BITMAP_LEN(nrec)) {
		log_warnx("%s: segment %u is damaged", __func__, id);
		ps->rc = STORE_FAILED;
		return 1;
	}
	for (uint32_t i = from; i < (uint32_t)nrec; i++) {
		const struct ns_name *nn;
		struct url_record r;
		uint8_t digest[CBF_FP_LEN];

		if (ps->l->n == ps->max) {
			*ps->cursor = (uint64_t)id << 16 | i;
			ps->full = true;
			return 1;
		}
		if (!urlseg_bit(b.data, i))
			continue;
		urlrec_decode(urlseg_record(val, i), &r);
		if ((nn = ns_get(ps->us, &s->page_ns, r.st.ns)) == NULL ||
		    nn->dropping)
			continue;
		unmask(nn, r.fp, digest);
		if (moves(s, digest) && list_add(ps->l, digest, nn->name,
		    &r.st, NULL, 0, false) == -1) {
			ps->rc = STORE_FAILED;
			return 1;
		}
	}
	*ps->cursor = ((uint64_t)id + 1) << 16;
	return 0;
}

/* Puts the session's iterator at key ord of run, reading from the run's
 * start unless it is there already (a page asked again). */
static int
hosts_seek(struct export_session *s, size_t run, uint64_t ord)
{
	bool done = false;
	int rc;

	if (s->it_valid && s->it_run == run && s->it_ord == ord)
		return STORE_OK;
	if (s->it_valid)
		hostrun_iter_free(&s->it);
	s->it_valid = false;
	if ((rc = hostrun_iter_init(&s->it, s->txn, &s->runs[run], NULL,
	    0)) != STORE_OK) {
		hostrun_iter_free(&s->it);
		return rc;
	}
	s->it_valid = true;
	s->it_run = run;
	s->it_ord = 0;
	while (s->it_ord < ord && (rc = hostrun_iter_next(&s->it, &done)) ==
	    STORE_OK && !done)
		s->it_ord++;
	return rc;
}

/* The texts of the keys that move, from the host index's runs. */
static int
page_hosts(struct urlset *us, struct export_session *s, struct moved_list *l,
    size_t max, uint64_t *cursor, bool *done)
{
	size_t run = (size_t)((*cursor & ~CURSOR_HOSTS) >> CURSOR_ORD_BITS);
	uint64_t ord = *cursor & CURSOR_ORD_MASK;
	int rc;

	while (run < s->nruns && l->n < max) {
		bool end = false;

		if ((rc = hosts_seek(s, run, ord)) != STORE_OK)
			return rc;
		while (l->n < max) {
			const struct ns_name *nn;
			const uint8_t *key, *sep;
			uint8_t digest[CBF_FP_LEN];
			size_t klen;

			if ((rc = hostrun_iter_next(&s->it, &end)) !=
			    STORE_OK)
				return rc;
			if (end)
				break;
			ord = ++s->it_ord;
			key = s->it.key;
			klen = s->it.klen;
			/* The canonical URL lies between the host's end and
			 * the fingerprint. */
			if (klen < 4 + 1 + CBF_FP_LEN ||
			    (sep = memchr(key + 4, '\0', klen - 4 -
			    CBF_FP_LEN)) == NULL)
				continue;
			if ((nn = ns_get(us, &s->page_ns, be_get32(key))) ==
			    NULL || nn->dropping)
				continue;
			unmask(nn, urlhosts_key_fp(key, klen), digest);
			if (moves(s, digest) && list_add(l, digest, nn->name,
			    NULL, (const char *)sep + 1, (size_t)(key + klen -
			    CBF_FP_LEN - (sep + 1)), true) == -1)
				return STORE_FAILED;
		}
		if (!end)
			break;
		run++;
		ord = 0;
	}
	if (run >= s->nruns) {
		run = s->nruns;
		ord = 0;
		*done = true;
	}
	*cursor = CURSOR_HOSTS | (uint64_t)run << CURSOR_ORD_BITS | ord;
	return STORE_OK;
}

int
urlset_export_page(struct urlset *us, uint64_t *cursor, size_t max,
    struct url_moved **out, size_t *n, bool *done)
{
	struct export_session *s;
	struct moved_list l = { 0 };
	uint64_t at = *cursor;
	int rc = STORE_OK;

	*out = NULL;
	*n = 0;
	*done = false;
	pthread_mutex_lock(&us->move_lock);
	s = us->move;
	if (s == NULL || __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&us->move_lock);
		return STORE_FAILED;
	}
	if (max == 0)
		max = 1;
	if ((at & CURSOR_HOSTS) == 0) {
		struct page_scan ps = { us, s, &l, max, &at, STORE_OK, false };
		uint32_t from = (uint32_t)(at >> 16);

		rc = store_scan_from(s->txn, STORE_URL_SEGS, &from,
		    sizeof(from), page_segment, &ps);
		if (rc == STORE_OK || rc == 1)
			rc = ps.rc;
		/* Every segment read: the texts next. */
		if (rc == STORE_OK && !ps.full)
			at = CURSOR_HOSTS;
	}
	if (rc == STORE_OK && (at & CURSOR_HOSTS) != 0)
		rc = page_hosts(us, s, &l, max, &at, done);
	pthread_mutex_unlock(&us->move_lock);
	if (rc == STORE_OK && list_finish(&l, out, n) == -1)
		rc = STORE_FAILED;
	if (rc != STORE_OK) {
		list_finish(&l, out, n);
		urlset_moved_free(*out);
		*out = NULL;
		*n = 0;
		*done = false;
		return rc;
	}
	*cursor = at;
	return STORE_OK;
}

/*
 * Imports.
 */

/* URLs an import applies per group, at most: a group must fit the
 * journal's table. */
static size_t
import_step(const struct urlset *us)
{
	size_t cap = urlmem_capacity(us->mem) / 2;

	if (cap > URLSET_GROUP_MAX)
		cap = URLSET_GROUP_MAX;
	return cap > 0 ? cap : 1;
}

int
urlset_import(struct urlset *us, struct urlset_job *job)
{
	size_t cap = import_step(us), n = 0;
	struct url_moved *items = NULL;
	struct url_key *keys = NULL;
	struct url_text *texts = NULL;
	struct urlset_ns_mask mask;
	const char *last = NULL;
	uint32_t id = URLNS_NONE;
	bool unindexed = false;
	int rc = STORE_OK;

	if (job->nmoved == 0)
		return STORE_OK;
	if ((items = malloc(job->nmoved * sizeof(*items))) == NULL ||
	    (keys = malloc(job->nmoved * sizeof(*keys))) == NULL ||
	    (texts = malloc(job->nmoved * sizeof(*texts))) == NULL) {
		rc = STORE_FAILED;
		goto out;
	}
	/* Each URL's key in its namespace, made (or found) by name. */
	for (size_t i = 0; i < job->nmoved; i++) {
		const struct url_moved *m = &job->moved[i];
		size_t len = strnlen(m->ns, sizeof(m->ns));

		if (len == sizeof(m->ns) || urlns_check_name(m->ns, len) !=
		    NULL) {
			job->refused = "a moved URL's namespace name is "
			    "invalid";
			rc = STORE_FAILED;
			goto out;
		}
		if (last == NULL || strcmp(last, m->ns) != 0) {
			id = urlns_find(us->ns, m->ns, len, NULL);
			last = m->ns;
			urlset_ns_mask(m->ns, len, &mask);
		}
		if (id == URLNS_NONE) {
			/* A text or a removal has nothing to work on. */
			if (m->text_only || m->st.count == 0)
				continue;
			if (urlns_full(us->ns)) {
				job->refused = "too many namespaces (16384): "
				    "drop some first";
				rc = STORE_FAILED;
				goto out;
			}
			if ((rc = urlns_create(us->ns, m->ns, &id)) !=
			    STORE_OK)
				goto out;
		}
		items[n] = *m;
		items[n].st.ns = id;
		memcpy(keys[n].fp, m->digest, CBF_FP_LEN);
		urlset_key_masked(us, &mask, &keys[n]);
		texts[n].p = NULL;
		texts[n].len = 0;
		if (m->text != NULL && (m->text_only || m->st.count > 0)) {
			texts[n].p = m->text;
			texts[n].len = m->text_len;
		} else if (!m->text_only && m->st.count > 0)
			unindexed = true;
		n++;
	}
	/* Said before the records exist, so that a crash between cannot
	 * leave the index claiming them. */
	if (unindexed && us->host_index && !job->texts_follow &&
	    (rc = urlset_hosts_mark_partial(us)) != STORE_OK)
		goto out;
	for (size_t at = 0; at < n; at += cap) {
		struct urlset_job step;
		size_t k = n - at < cap ? n - at : cap;

		memset(&step, 0, sizeof(step));
		step.op = URLSET_IMPORT;
		step.durability = job->durability;
		step.keys = keys + at;
		step.n = k;
		step.moved = items + at;
		step.nmoved = k;
		step.texts = texts + at;
		for (size_t i = 0; i < k; i++)
			step.text_bytes += texts[at + i].len;
		urlset_apply_group(us, &step);
		if ((rc = step.status) != STORE_OK)
			break;
	}
out:
	free(items);
	free(keys);
	free(texts);
	return rc;
}
