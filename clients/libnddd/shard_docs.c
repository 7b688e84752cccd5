/*
 * Documents over a shard list (docs/sharding.md).
 *
 * A document is stored on the shard of its URL (the URL routing of
 * shards.c), but its neighbours may be anywhere: a call prints its
 * documents on their shards (query-only: fingerprint and sketch), asks
 * every shard for each print's neighbours, and decides each document's
 * group here, in input order, exactly as one daemon would: the group of
 * its first neighbour by the answer (the most similar for the verified
 * one, the nearest for the Hamming one), the oldest of the first (first
 * submitted, then the earlier shard, then the smaller id); a document of
 * the same call counts as newer than every stored one, and its place in
 * the call orders it among the call's.  The candidate rule and the
 * estimates are the daemon's own (sketch.h), so the call's documents are
 * neighbours of each other exactly when one daemon would say so.  Documents are then stored with the group decided (or told
 * to found their own), in input order, a run of them at a time: a run
 * ends before a document that joins the group of one the run has not
 * stored yet (that group's id is its founder's, known once stored).
 *
 * Ids are global: a shard's own id, below 2^48, carries its place in the
 * list plus one in the top 16 bits; a group a shard keeps for a document
 * that joined another shard's group is stored global already.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddd.h"
#include "shards_impl.h"
#include "sketch.h"

#define ID_SHIFT 48
#define LOCAL_MASK ((UINT64_C(1) << ID_SHIFT) - 1)
/* Documents of a call decided and stored together, unless told. */
#define CHUNK_DEFAULT 256
/* Queries in flight on one shard. */
#define QUERY_WINDOW 64

uint64_t
nddd_shards_global_id(size_t shard, uint64_t id)
{
	if (id == 0 || id > LOCAL_MASK)
		return id;
	return (uint64_t)(shard + 1) << ID_SHIFT | id;
}

/* A global group as shard keeps it: one of its own by its local id. */
static uint64_t
group_for(size_t shard, uint64_t group)
{
	return group >> ID_SHIFT == shard + 1 ? group & LOCAL_MASK : group;
}

/*
 * The order in which this handle stored its most recent documents (global
 * id to sequence number), in two generations of SEQMAP_GEN entries: the
 * documents one client stores in the same millisecond on several shards
 * are told apart by it, oldest first, as one daemon would by their ids.
 */
#define SEQMAP_GEN 32768
#define SEQMAP_SLOTS (2 * SEQMAP_GEN)

struct seqmap_gen {
	uint64_t id[SEQMAP_SLOTS], seq[SEQMAP_SLOTS];
	size_t n;
};

struct seqmap {
	struct seqmap_gen gen[2];	/* gen[cur] takes the new ones */
	int cur;
	uint64_t next;			/* the next sequence number */
};

static size_t
seqmap_slot(const struct seqmap_gen *g, uint64_t id)
{
	size_t i = (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 47) &
	    (SEQMAP_SLOTS - 1);

	while (g->id[i] != 0 && g->id[i] != id)
		i = (i + 1) & (SEQMAP_SLOTS - 1);
	return i;
}

static void
seqmap_put(struct seqmap *m, uint64_t id, uint64_t seq)
{
	struct seqmap_gen *g = &m->gen[m->cur];
	size_t i;

	if (g->n == SEQMAP_GEN) {
		m->cur ^= 1;
		g = &m->gen[m->cur];
		memset(g, 0, sizeof(*g));
	}
	i = seqmap_slot(g, id);
	if (g->id[i] == 0)
		g->n++;
	g->id[i] = id;
	g->seq[i] = seq;
}

/* Its sequence number, 0 when this handle did not store it lately. */
static uint64_t
seqmap_get(const struct seqmap *m, uint64_t id)
{
	for (int k = 0; k < 2; k++) {
		const struct seqmap_gen *g = &m->gen[m->cur ^ k];
		size_t i = seqmap_slot(g, id);

		if (g->id[i] == id)
			return g->seq[i];
	}
	return 0;
}

/* A neighbour of a document: a stored one of some shard, or one of the
 * call's documents (pos). */
struct cand {
	uint64_t id, group;	/* global; a call's document's once known */
	uint64_t created_ms;
	uint64_t seq;		/* seqmap_get's, for a stored one */
	unsigned distance;
	bool verified;		/* its similarity passed */
	float resemblance, containment;
	size_t shard;		/* stored: its shard and its id there */
	uint64_t local;
	size_t pos;		/* the call's document; NOT_OURS: stored */
	bool old;		/* its id is from before the call: stored, or
				   a call's re-submit of a stored URL */
	const char *url;	/* canonical, NUL-terminated */
	size_t url_len;
};

#define NOT_OURS ((size_t)-1)

/* Whether a and b are equally first by the answer: as similar, or (not
 * verified) as near. */
static bool
cand_tie(const struct cand *a, const struct cand *b)
{
	if (a->verified != b->verified)
		return false;
	return a->verified ? a->resemblance == b->resemblance :
	    a->distance == b->distance;
}

/*
 * The daemon's order (docset.h): verified ones first, most similar
 * first; then unverified ones (a Hamming answer, documents stored without
 * a sketch), nearest first; of equals, the ones with ids from before
 * the call (stored ones, and the call's re-submits of stored URLs, which
 * keep their ids) first, by first submission, shard and id; then the
 * call's new ones in order.
 */
static int
cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->verified != b->verified)
		return a->verified ? -1 : 1;
	if (a->verified && a->resemblance != b->resemblance)
		return a->resemblance > b->resemblance ? -1 : 1;
	if (!a->verified && a->distance != b->distance)
		return a->distance < b->distance ? -1 : 1;
	if (a->old != b->old)
		return a->old ? -1 : 1;
	if (!a->old)
		return a->pos < b->pos ? -1 : 1;
	if (a->created_ms != b->created_ms)
		return a->created_ms < b->created_ms ? -1 : 1;
	if (a->shard != b->shard)
		return a->shard < b->shard ? -1 : 1;
	return a->local < b->local ? -1 : a->local > b->local;
}

static int
seq_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/*
 * Neighbours from before the call equally first (as similar, or as near)
 * that this handle stored itself, all of them, are put in the order it
 * stored them in: each shard stamps its own transactions' time, so
 * documents a call stored on two shards in the same millisecond or two
 * may carry times in either order.  (Equals with a neighbour the handle
 * does not know keep the order of the times: a mixed order could
 * contradict itself.)
 */
static void
order_by_handle(struct cand *near, size_t n)
{
	for (size_t i = 0; i < n; ) {
		size_t j = i;
		bool known = true;

		while (j < n && near[j].old &&
		    cand_tie(&near[j], &near[i])) {
			known &= near[j].seq != 0;
			j++;
		}
		if (j == i) {
			i++;
			continue;
		}
		if (known && j - i > 1)
			qsort(near + i, j - i, sizeof(*near), seq_cmp);
		i = j;
	}
}

/* One document of the call. */
struct sdoc {
	const struct nddd_doc_item *in;
	struct nddd_doc *res;
	unsigned char digest[NDDD_DIGEST_LEN];
	size_t owner;
	uint32_t moved;		/* its shard answered moved: route by this
				   many places; 0: not */
	bool live;		/* nothing failed it yet */
	uint64_t fp;
	bool has_sketch;	/* its shard sent its sketch */
	struct sketch sketch;
	char *canon;		/* canonical URL */
	size_t canon_len;
	struct cand *near;
	size_t nnear;
	uint64_t total;		/* neighbours in all */
	uint64_t group;		/* global; 0 until known */
	bool found;		/* founds its group */
	uint64_t id;		/* global, once stored */
	bool created;
	uint64_t created_ms;	/* its URL's first storing, once stored */
	/* The document its URL had before the call (its shard's print
	 * said): global id (0: none), first storing, shard and id there. */
	uint64_t old_id, old_created_ms, old_local;
	size_t old_shard;
};

/* The document failed: its result says so (message copied). */
static void
sdoc_fail(struct sdoc *d, enum nddd_code code, const char *message)
{
	if (!d->live)
		return;
	d->live = false;
	d->res->code = code;
	d->res->message = strdup(message ? message : "");
}

/* A shard's part of a step: its documents (positions in the chunk). */
struct step {
	struct nddd_shards *s;
	struct shard *sh;
	size_t shard;
	struct sdoc *docs;
	size_t *pos, n;
	bool query;		/* fingerprint only (query-only submits) */
	size_t batch;
	struct nddd_doc *out;	/* a result per position */
	int rc;
};

/* Sends the step's documents to its shard as a doc batch. */
static void
step_docs(void *arg)
{
	struct step *st = arg;
	struct nddd_doc_item *items = calloc(st->n, sizeof(*items));

	if (items == NULL) {
		for (size_t j = 0; j < st->n; j++) {
			st->out[j].code = NDDD_INTERNAL;
			st->out[j].message = strdup("out of memory");
		}
		st->rc = -1;
		return;
	}
	for (size_t j = 0; j < st->n; j++) {
		struct sdoc *d = &st->docs[st->pos[j]];

		items[j] = *d->in;
		items[j].query_only = st->query || d->in->query_only;
		/* Printing: the sketch too, for the other shards. */
		items[j].with_sketch = st->query;
		items[j].group = 0;
		items[j].new_group = 0;
		if (!items[j].query_only) {
			items[j].group = d->found ? 0 :
			    group_for(st->shard, d->group);
			items[j].new_group = d->found;
		}
	}
	st->rc = nddd_docs(st->sh->c, items, st->n, st->out, st->batch, 4,
	    NULL, NULL);
	free(items);
}

/* Whether the call's documents are answered the verified way. */
static bool
answer_verified(const struct nddd_shards *s)
{
	return s->match == NDDD_MATCH_VERIFIED ||
	    (s->match == NDDD_MATCH_DEFAULT && !s->hamming);
}

/*
 * Asks c for d's neighbours: by its print for the verified answer (its
 * fingerprint alone, for the Hamming one, or when its shard sent no
 * sketch: a document without terms has none).
 */
static int
send_print(const struct nddd_shards *s, nddd_client *c,
    const struct sdoc *d, uint64_t *id)
{
	uint8_t wire[SKETCH_WIRE_MAX];
	size_t len;

	if (!answer_verified(s) || !d->has_sketch)
		return nddd_send_doc_query_simhash(c, d->fp, -1, id);
	len = sketch_encode(&d->sketch, wire);
	return nddd_send_doc_query_print(c, d->fp, wire, len, id);
}

/* Asks the step's shard for the neighbours of each document's print. */
static void
step_query(void *arg)
{
	struct step *st = arg;
	nddd_client *c = st->sh->c;
	uint64_t *ids = calloc(st->n, sizeof(*ids));
	size_t sent = 0, done = 0;

	st->rc = ids == NULL ? -1 : 0;
	while (st->rc == 0 && done < st->n) {
		struct nddd_reply *r;
		size_t j;

		while (sent < st->n && sent - done < QUERY_WINDOW) {
			const struct sdoc *d = &st->docs[st->pos[sent]];

			if (send_print(st->s, c, d, &ids[sent]) == -1) {
				st->rc = -1;
				break;
			}
			sent++;
		}
		if (st->rc == -1 || nddd_recv(c, &r) == -1) {
			st->rc = -1;
			break;
		}
		for (j = 0; j < sent && ids[j] != r->id; j++)
			;
		if (j == sent || r->kind != NDDD_REPLY_DOC_QUERY) {
			nddd_reply_free(r);
			st->rc = -1;
			break;
		}
		/* The answer moves to the step; the reply frees the rest. */
		st->out[j] = r->doc;
		memset(&r->doc, 0, sizeof(r->doc));
		nddd_reply_free(r);
		done++;
	}
	free(ids);
}

/*
 * Runs fn over the shards' parts of docs[pos] (those with owner, or for a
 * query every shard): builds a step per shard with documents, runs them
 * in parallel, and calls take(step) for each.  A shard whose connection
 * fails is down afterwards.
 */
static int
run_steps(struct nddd_shards *s, struct sdoc *docs, const size_t *pos,
    size_t n, bool per_owner, bool query, size_t batch,
    void (*fn)(void *), void (*take)(struct step *, void *), void *arg)
{
	struct step *steps = calloc(s->n, sizeof(*steps));
	size_t nsteps = 0;
	int rc = 0;

	if (steps == NULL)
		return -1;
	for (size_t t = 0; t < s->n; t++) {
		struct step *st = &steps[nsteps];

		if (s->shards[t].c == NULL)
			continue;
		*st = (struct step){ .s = s, .sh = &s->shards[t], .shard = t,
		    .docs = docs, .query = query, .batch = batch };
		if ((st->pos = calloc(n + 1, sizeof(*st->pos))) == NULL ||
		    (st->out = calloc(n + 1, sizeof(*st->out))) == NULL) {
			free(st->pos);
			rc = -1;
			goto out;
		}
		for (size_t j = 0; j < n; j++)
			if (!per_owner || docs[pos[j]].owner == t)
				st->pos[st->n++] = pos[j];
		if (st->n == 0) {
			free(st->pos);
			free(st->out);
			continue;
		}
		nsteps++;
	}
	shards_parallel(fn, steps, sizeof(*steps), nsteps);
	for (size_t k = 0; k < nsteps; k++) {
		struct step *st = &steps[k];

		if (st->rc == -1 && st->sh->c != NULL)
			shard_down(st->sh, "%s: %s", st->sh->address,
			    nddd_errstr(st->sh->c));
		take(st, arg);
	}
out:
	for (size_t k = 0; k < nsteps; k++) {
		nddd_docs_results_free(steps[k].out, steps[k].n);
		free(steps[k].out);
		free(steps[k].pos);
	}
	free(steps);
	return rc;
}

/* A document of st failed as r says; one its shard could not answer,
 * with the shard's address. */
static void
step_fail(const struct step *st, struct sdoc *d, const struct nddd_doc *r)
{
	if (r->code == NDDD_MOVED &&
	    (d->moved = shards_moved_route_by(r->message)) != 0)
		return;		/* owner_rounds sends it again */
	sdoc_fail(d, r->code, st->rc == -1 && r->code == NDDD_UNAVAILABLE &&
	    st->sh->c == NULL ? st->sh->err : r->message);
}

/*
 * Sends docs[pos[0..n)] to their owners (per step_docs, query: only to
 * fingerprint them), take taking the answers; then again those a shard
 * answered moved, to their new owners, until none is or the wait is
 * over.  A document whose owner is down fails.  pos is overwritten.
 */
static int
owner_rounds(struct nddd_shards *s, struct sdoc *docs, size_t *pos, size_t n,
    bool query, size_t batch, void (*take)(struct step *, void *))
{
	long long start_ms = 0;

	for (unsigned round = 1; n > 0; round++) {
		size_t again = 0;

		for (size_t j = 0; j < n; j++) {
			struct sdoc *d = &docs[pos[j]];

			d->moved = 0;
			shard_reconnect(s, &s->shards[d->owner]);
			if (s->shards[d->owner].c == NULL)
				sdoc_fail(d, NDDD_UNAVAILABLE,
				    s->shards[d->owner].err);
		}
		if (run_steps(s, docs, pos, n, true, query, batch, step_docs,
		    take, NULL) == -1)
			return -1;
		for (size_t j = 0; j < n; j++) {
			struct sdoc *d = &docs[pos[j]];

			if (!d->live || d->moved == 0)
				continue;
			if (d->moved > s->n && shards_grow(s,
			    &s->shards[d->owner], d->moved) == -1) {
				sdoc_fail(d, NDDD_MOVED, s->err);
				continue;
			}
			d->owner = nddd_shard_of(d->digest, d->moved);
			pos[again++] = pos[j];
		}
		if (again > 0 && !shards_moved_pause(round, &start_ms)) {
			for (size_t j = 0; j < again; j++)
				sdoc_fail(&docs[pos[j]], NDDD_MOVED, "moved: "
				    "its shards still hand it over");
			break;
		}
		n = again;
	}
	return 0;
}

/* Fingerprints: each document's result on its shard, or its failure. */
static void
take_prints(struct step *st, void *arg)
{
	(void)arg;
	for (size_t j = 0; j < st->n; j++) {
		struct sdoc *d = &st->docs[st->pos[j]];
		const struct nddd_doc *r = &st->out[j];

		if (r->code != NDDD_OK)
			step_fail(st, d, r);
		else {
			d->fp = r->simhash;
			d->has_sketch = r->sketch_len > 0 && sketch_decode(
			    r->sketch, r->sketch_len, &d->sketch) == 0;
			d->old_id = r->stored_id == 0 ? 0 :
			    nddd_shards_global_id(st->shard, r->stored_id);
			d->old_created_ms = r->created_ms;
			d->old_local = r->stored_id;
			d->old_shard = st->shard;
		}
	}
}

/* Stored documents: their ids, groups and whether they are new. */
static void
take_stored(struct step *st, void *arg)
{
	(void)arg;
	for (size_t j = 0; j < st->n; j++) {
		struct sdoc *d = &st->docs[st->pos[j]];
		const struct nddd_doc *r = &st->out[j];

		if (r->code != NDDD_OK) {
			step_fail(st, d, r);
			continue;
		}
		d->id = nddd_shards_global_id(st->shard, r->doc_id);
		d->group = nddd_shards_global_id(st->shard, r->group);
		d->created = r->created != 0;
		d->created_ms = r->created_ms;
	}
}

/* The order of the documents just stored, for later ties. */
static void
remember_order(struct nddd_shards *s, const struct sdoc *docs, size_t n)
{
	if (s->seqmap == NULL && (s->seqmap = calloc(1,
	    sizeof(*s->seqmap))) == NULL)
		return;		/* ties fall back to shard order */
	for (size_t j = 0; j < n; j++)
		if (docs[j].live && docs[j].id != 0 && docs[j].created)
			seqmap_put(s->seqmap, docs[j].id, ++s->seqmap->next);
}

/* The neighbours each shard answered, kept per shard by take_queries:
 * qs[t][j] for document j, qs[t] NULL for a shard that gave none; nqs
 * shards (the list may grow after). */
struct answers {
	struct nddd_doc **qs;
	size_t nqs;
	size_t n;
};

/* Room for one more neighbour of d. */
static struct cand *
cand_add(struct sdoc *d, size_t *cap)
{
	struct cand *near;

	if (d->nnear == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		if ((near = realloc(d->near, *cap * sizeof(*near))) == NULL)
			return NULL;
		d->near = near;
	}
	return &d->near[d->nnear++];
}

/* Whether the call's document i is stored and still the one of its URL
 * when document j comes. */
static bool
current_before(const struct sdoc *docs, size_t i, size_t j)
{
	if (!docs[i].live || docs[i].in->query_only)
		return false;
	for (size_t l = i + 1; l < j; l++)
		if (docs[l].live && !docs[l].in->query_only &&
		    memcmp(docs[l].digest, docs[i].digest,
		    NDDD_DIGEST_LEN) == 0)
			return false;
	return true;
}

/*
 * While a shard is added, a document may be on its old shard and on its
 * new one at once (copied, not yet dropped): of candidates with one URL,
 * keeps the one its owner by the list answered (else the first).
 */
static void
drop_copies(struct nddd_shards *s, struct sdoc *d)
{
	size_t kept = 0;

	for (size_t m = 0; m < d->nnear; m++) {
		struct cand *c = &d->near[m];
		bool copy = false;

		for (size_t o = 0; o < d->nnear && !copy; o++) {
			const struct cand *e = &d->near[o];
			unsigned char dg[NDDD_DIGEST_LEN];
			const char *cause;

			if (o == m || e->url_len != c->url_len ||
			    memcmp(e->url, c->url, c->url_len) != 0)
				continue;
			/* c goes if e is the owner's, or both are not and
			 * e comes first. */
			if (nddd_canon_digest(s->canon, c->url, c->url_len,
			    dg, &cause) == -1)
				continue;
			if (e->shard == nddd_shard_of(dg, (uint32_t)s->n))
				copy = true;
			else if (c->shard != nddd_shard_of(dg,
			    (uint32_t)s->n) && o < m)
				copy = true;
		}
		if (copy) {
			d->total--;
			continue;
		}
		d->near[kept++] = *c;
	}
	d->nnear = kept;
}

static int
cmp_hash(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * Whether the call's document a, stored before b, is b's neighbour as one
 * daemon would decide: by the Hamming answer within k; by the verified
 * one, a candidate (within k, or at least SKETCH_MIN_KEYS of a's keys
 * among b's first SKETCH_PROBES hashes) whose estimates reach the shards'
 * thresholds.  The
 * neighbour's fields in *nb.
 */
static bool
call_neighbour(const struct nddd_shards *s, const struct sdoc *a,
    const struct sdoc *b, struct cand *nb)
{
	struct sketch_similarity sim;
	uint32_t keys[SKETCH_KEYS];
	size_t nkeys, shared = 0;

	nb->distance = (unsigned)__builtin_popcountll(a->fp ^ b->fp);
	if (!answer_verified(s) || !b->has_sketch)
		return nb->distance <= s->k;
	if (!a->has_sketch)
		return false;	/* a document without terms: never stored */
	nkeys = sketch_keys(&a->sketch, keys);
	for (size_t k = 0; k < nkeys; k++)
		shared += bsearch(&keys[k], b->sketch.h, b->sketch.n <
		    SKETCH_PROBES ? b->sketch.n : SKETCH_PROBES,
		    sizeof(keys[0]), cmp_hash) != NULL;
	if (nb->distance > s->k && shared < SKETCH_MIN_KEYS)
		return false;
	sketch_compare(&b->sketch, &a->sketch, &sim);
	if (sim.containment < s->containment ||
	    sim.resemblance < s->resemblance)
		return false;
	nb->verified = true;
	nb->resemblance = sim.resemblance;
	nb->containment = sim.containment;
	return true;
}

/*
 * Document j's neighbours: every shard's answers for its print, less the
 * stored version of its own URL and of URLs the call re-submits before
 * it, and the call's documents before it within k; sorted, nearest
 * first.
 */
static int
gather(struct nddd_shards *s, struct sdoc *docs, size_t j,
    const struct answers *a)
{
	struct sdoc *d = &docs[j];
	size_t cap = 0;

	d->total = 0;
	for (size_t t = 0; t < a->nqs; t++) {
		const struct nddd_doc *q = a->qs[t] != NULL ?
		    &a->qs[t][j] : NULL;

		if (q == NULL)
			continue;
		d->total += q->near_total;
		for (size_t m = 0; m < q->nnear; m++) {
			const struct nddd_neighbour *nb = &q->near[m];
			unsigned char dg[NDDD_DIGEST_LEN];
			const char *cause;
			bool skip = nddd_canon_digest(s->canon, nb->url,
			    nb->url_len, dg, &cause) == 0 &&
			    memcmp(dg, d->digest, sizeof(dg)) == 0;
			struct cand *c;

			for (size_t i = 0; i < j && !skip; i++)
				skip = docs[i].live && !docs[i].in->query_only &&
				    memcmp(dg, docs[i].digest, sizeof(dg)) == 0;
			if (skip) {
				d->total--;
				continue;
			}
			if ((c = cand_add(d, &cap)) == NULL)
				return -1;
			*c = (struct cand){
				.id = nddd_shards_global_id(t, nb->doc_id),
				.group = nddd_shards_global_id(t, nb->group),
				.created_ms = nb->created_ms,
				.seq = s->seqmap == NULL ? 0 : seqmap_get(
				    s->seqmap, nddd_shards_global_id(t,
				    nb->doc_id)),
				.distance = nb->distance, .shard = t,
				.verified = nb->verified != 0,
				.resemblance = nb->resemblance,
				.containment = nb->containment,
				.local = nb->doc_id, .pos = NOT_OURS,
				.old = true,
				.url = nb->url, .url_len = nb->url_len,
			};
		}
	}
	drop_copies(s, d);
	for (size_t i = 0; i < j; i++) {
		struct cand nb = { .pos = i, .url = docs[i].canon,
		    .url_len = docs[i].canon_len }, *c;

		if (!current_before(docs, i, j) || memcmp(docs[i].digest,
		    d->digest, NDDD_DIGEST_LEN) == 0 ||
		    !call_neighbour(s, &docs[i], d, &nb))
			continue;
		if (docs[i].old_id != 0) {
			/* A re-submit: one daemon orders it by its old id. */
			nb.old = true;
			nb.created_ms = docs[i].old_created_ms;
			nb.seq = s->seqmap == NULL ? 0 :
			    seqmap_get(s->seqmap, docs[i].old_id);
			nb.shard = docs[i].old_shard;
			nb.local = docs[i].old_local;
		}
		if ((c = cand_add(d, &cap)) == NULL)
			return -1;
		*c = nb;
		d->total++;
	}
	if (d->nnear > 1)
		qsort(d->near, d->nnear, sizeof(*d->near), cand_cmp);
	order_by_handle(d->near, d->nnear);
	return 0;
}

/* Stores the live documents of docs[from..to) on their shards. */
static int
store_run(struct nddd_shards *s, struct sdoc *docs, size_t from, size_t to,
    size_t batch)
{
	size_t *pos = calloc(to - from + 1, sizeof(*pos)), n = 0;
	int rc;

	if (pos == NULL)
		return -1;
	for (size_t j = from; j < to; j++)
		if (docs[j].live && !docs[j].in->query_only)
			pos[n++] = j;
	rc = owner_rounds(s, docs, pos, n, false, batch, take_stored);
	/* A shard lost meanwhile: its documents of the run say so. */
	for (size_t j = from; j < to; j++)
		if (docs[j].live && !docs[j].in->query_only && docs[j].id == 0)
			sdoc_fail(&docs[j], NDDD_UNAVAILABLE,
			    s->shards[docs[j].owner].err);
	free(pos);
	return rc;
}

/*
 * Decides each live document's group, in order, storing runs as they end
 * (see the top of this file).
 */
static int
decide_and_store(struct nddd_shards *s, struct sdoc *docs, size_t n,
    const struct answers *a, size_t batch)
{
	size_t run = 0;

	for (size_t j = 0; j < n; j++) {
		struct sdoc *d = &docs[j];
		const struct cand *best;

		if (!d->live)
			continue;
		if (gather(s, docs, j, a) == -1)
			return -1;
		if (d->nnear == 0) {
			d->found = !d->in->query_only;
			continue;
		}
		best = &d->near[0];
		if (best->pos == NOT_OURS) {
			d->group = best->group;
			continue;
		}
		if (docs[best->pos].group == 0 && docs[best->pos].live) {
			/* Its founder is in this run: store the run. */
			if (store_run(s, docs, run, j, batch) == -1)
				return -1;
			run = j;
		}
		if (!docs[best->pos].live)
			sdoc_fail(d, NDDD_UNAVAILABLE, "the document whose "
			    "group it joins could not be stored");
		d->group = docs[best->pos].group;
	}
	return store_run(s, docs, run, n, batch);
}

/*
 * d's result: its ids and group, and its neighbours in one block (the
 * layout of the library's own results, which nddd_docs_results_free
 * frees); neighbours of the call whose storing failed are left out.
 */
static int
result_of(struct sdoc *docs, struct sdoc *d)
{
	struct nddd_doc *r = d->res;
	size_t size = 0, n = 0;
	char *p;

	r->doc_id = d->id;
	r->simhash = d->fp;
	r->group = d->group;
	r->created = d->created;
	r->created_ms = d->in->query_only ? d->old_created_ms : d->created_ms;
	r->stored_id = d->in->query_only ? d->old_id : 0;
	r->url = "";
	for (size_t m = 0; m < d->nnear; m++) {
		struct cand *c = &d->near[m];

		if (c->pos != NOT_OURS) {
			if (!docs[c->pos].live) {
				d->total--;
				continue;
			}
			c->id = docs[c->pos].id;
			c->group = docs[c->pos].group;
		}
		d->near[n++] = *c;
		size += c->url_len + 1;
	}
	r->near_total = d->total;
	if (n == 0)
		return 0;
	if ((p = malloc(n * sizeof(*r->near) + size)) == NULL)
		return -1;
	r->near = (struct nddd_neighbour *)(void *)p;
	r->nnear = n;
	p += n * sizeof(*r->near);
	for (size_t m = 0; m < n; m++) {
		const struct cand *c = &d->near[m];

		r->near[m] = (struct nddd_neighbour){ .doc_id = c->id,
		    .url = p, .url_len = c->url_len,
		    .distance = c->distance, .group = c->group,
		    .created_ms = c->created_ms, .resemblance = c->resemblance,
		    .containment = c->containment, .verified = c->verified };
		memcpy(p, c->url, c->url_len);
		p[c->url_len] = '\0';
		p += c->url_len + 1;
	}
	return 0;
}

/* The chunk's documents: canonical URLs, digests and shards. */
static int
prepare(struct nddd_shards *s, struct sdoc *docs,
    const struct nddd_doc_item *in, struct nddd_doc *res, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct sdoc *d = &docs[i];
		const char *canon, *cause;

		*d = (struct sdoc){ .in = &in[i], .res = &res[i], .live = true };
		res[i].url = "";
		canon = nddd_canon_url(s->canon, in[i].url, in[i].url_len,
		    &d->canon_len, &cause);
		if (canon == NULL) {
			sdoc_fail(d, NDDD_INVALID_ARGUMENT, cause);
			continue;
		}
		if ((d->canon = malloc(d->canon_len + 1)) == NULL)
			return -1;
		memcpy(d->canon, canon, d->canon_len + 1);
		if (nddd_canon_digest(s->canon, d->canon, d->canon_len,
		    d->digest, &cause) == -1) {
			sdoc_fail(d, NDDD_INVALID_ARGUMENT, cause);
			continue;
		}
		d->owner = nddd_shard_of(d->digest, (uint32_t)s->n);
	}
	return 0;
}

static void
take_queries(struct step *st, void *arg)
{
	struct answers *a = arg;

	if (st->rc == -1)
		return;		/* no answers: as if down */
	if ((a->qs[st->shard] = calloc(a->n, sizeof(**a->qs))) == NULL)
		return;
	for (size_t j = 0; j < st->n; j++) {
		a->qs[st->shard][st->pos[j]] = st->out[j];
		memset(&st->out[j], 0, sizeof(st->out[j]));
	}
}

static void
answers_clear(struct answers *a)
{
	for (size_t t = 0; a->qs != NULL && t < a->nqs; t++) {
		if (a->qs[t] != NULL)
			nddd_docs_results_free(a->qs[t], a->n);
		free(a->qs[t]);
	}
	free(a->qs);
	a->qs = NULL;
	a->nqs = 0;
}

/*
 * Every shard's neighbours of the prints of docs[pos[0..m)] into a; asked
 * again of a longer list when a shard names one (a shard was added:
 * every shard's documents count).
 */
static int
query_all(struct nddd_shards *s, struct sdoc *docs, const size_t *pos,
    size_t m, size_t batch, struct answers *a)
{
	for (int tries = 0;; tries++) {
		bool grown = false;

		answers_clear(a);
		if ((a->qs = calloc(s->n, sizeof(*a->qs))) == NULL)
			return -1;
		a->nqs = s->n;
		for (size_t t = 0; t < s->n; t++)
			shard_reconnect(s, &s->shards[t]);
		if (run_steps(s, docs, pos, m, false, true, batch, step_query,
		    take_queries, a) == -1)
			return -1;
		for (size_t t = 0; t < a->nqs && tries < 3 && !grown; t++) {
			nddd_client *c = s->shards[t].c;

			grown = c != NULL && nddd_server_shards(c) > s->n &&
			    shards_grow(s, &s->shards[t],
			    nddd_server_shards(c)) == 0;
		}
		if (!grown)
			return 0;
	}
}

/* Positions of the live documents of docs[0..n) in pos; their count. */
static size_t
live_positions(const struct sdoc *docs, size_t n, size_t *pos)
{
	size_t m = 0;

	for (size_t j = 0; j < n; j++)
		if (docs[j].live)
			pos[m++] = j;
	return m;
}

/* One chunk of nddd_shards_docs. */
static int
docs_chunk(struct nddd_shards *s, const struct nddd_doc_item *in,
    struct nddd_doc *res, size_t n, size_t batch)
{
	struct sdoc *docs = calloc(n, sizeof(*docs));
	size_t *pos = calloc(n + 1, sizeof(*pos)), m;
	struct answers a = { .n = n };
	int rc = -1;

	if (docs == NULL || pos == NULL || prepare(s, docs, in, res, n) == -1)
		goto out;
	m = live_positions(docs, n, pos);
	if (owner_rounds(s, docs, pos, m, true, batch, take_prints) == -1)
		goto out;
	m = live_positions(docs, n, pos);
	if (query_all(s, docs, pos, m, batch, &a) == -1)
		goto out;
	/* A document whose own shard gave no answers cannot be decided. */
	for (size_t j = 0; j < n; j++)
		if (docs[j].live && (docs[j].owner >= a.nqs ||
		    a.qs[docs[j].owner] == NULL))
			sdoc_fail(&docs[j], NDDD_UNAVAILABLE,
			    s->shards[docs[j].owner].err);
	if (decide_and_store(s, docs, n, &a, batch) == -1)
		goto out;
	remember_order(s, docs, n);
	rc = 0;
	for (size_t j = 0; j < n && rc == 0; j++)
		if (docs[j].live)
			rc = result_of(docs, &docs[j]);
out:
	answers_clear(&a);
	for (size_t j = 0; docs != NULL && j < n; j++) {
		free(docs[j].canon);
		free(docs[j].near);
	}
	free(docs);
	free(pos);
	return rc;
}

int
nddd_shards_docs(nddd_shards *s, const struct nddd_doc_item *docs, size_t n,
    struct nddd_doc *results, size_t batch)
{
	if (batch == 0)
		batch = CHUNK_DEFAULT;
	if (batch > NDDD_DOC_BATCH_MAX)
		batch = NDDD_DOC_BATCH_MAX;
	memset(results, 0, n * sizeof(*results));
	for (size_t i = 0; i < n; i += batch) {
		size_t m = n - i < batch ? n - i : batch;

		if (docs_chunk(s, docs + i, results + i, m, batch) == -1) {
			snprintf(s->err, sizeof(s->err), "out of memory");
			nddd_docs_results_free(results, n);
			return -1;
		}
	}
	return 0;
}

int
nddd_shards_set_doc_namespace(nddd_shards *s, const char *ns)
{
	char *copy = NULL;

	if (ns != NULL && !nddd_namespace_valid(ns)) {
		snprintf(s->err, sizeof(s->err), "namespace \"%s\" is not a "
		    "valid name", ns);
		return -1;
	}
	if (ns != NULL && ns[0] != '\0' && (copy = strdup(ns)) == NULL) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	free(s->doc_ns);
	s->doc_ns = copy;
	for (size_t t = 0; t < s->n; t++)
		if (s->shards[t].c != NULL)
			nddd_set_doc_namespace(s->shards[t].c, copy);
	return 0;
}

void
nddd_shards_set_doc_match(nddd_shards *s, enum nddd_match m)
{
	s->match = m;
	for (size_t t = 0; t < s->n; t++)
		if (s->shards[t].c != NULL)
			nddd_set_doc_match(s->shards[t].c, m);
}

int
nddd_shards_doc_query(nddd_shards *s, const void *body, size_t body_len,
    enum nddd_doc_format format, struct nddd_doc *out)
{
	struct nddd_doc_item item = { .url = "", .query_only = 1 };
	struct sdoc d = { .in = &item, .res = out, .live = true };
	struct answers a = { .n = 1 };
	struct nddd_reply *r = NULL;
	size_t pos = 0, t;
	uint64_t id;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->url = "";
	for (t = 0; t < s->n; t++)
		shard_reconnect(s, &s->shards[t]);
	/* The print from the first shard that answers, then every shard's
	 * neighbours of it. */
	for (t = 0; t < s->n && r == NULL; t++) {
		struct shard *sh = &s->shards[t];

		if (sh->c == NULL)
			continue;
		if (nddd_send_doc_query_sketch(sh->c, body, body_len, format,
		    &id) == -1 || (r = nddd_call(sh->c, id)) == NULL)
			shard_down(sh, "%s: %s", sh->address,
			    nddd_errstr(sh->c));
	}
	if (r == NULL) {
		snprintf(s->err, sizeof(s->err), "no shard answers (%.200s)",
		    s->shards[0].err);
		return -1;
	}
	if (r->kind != NDDD_REPLY_DOC_QUERY) {
		out->code = r->code != NDDD_OK ? r->code : NDDD_INTERNAL;
		out->message = strdup(r->message ? r->message : "");
		nddd_reply_free(r);
		return 0;
	}
	d.fp = r->doc.simhash;
	d.has_sketch = r->doc.sketch_len > 0 && sketch_decode(r->doc.sketch,
	    r->doc.sketch_len, &d.sketch) == 0;
	nddd_reply_free(r);
	if (query_all(s, &d, &pos, 1, 1, &a) == 0 && gather(s, &d, 0, &a) == 0)
		rc = result_of(&d, &d);
	answers_clear(&a);
	free(d.near);
	if (rc == -1)
		snprintf(s->err, sizeof(s->err), "out of memory");
	return rc;
}
