/*
 * pending: journaled writes not yet in LMDB, for readers.  See pending.h.
 *
 * Open addressing over 2 * PENDING_MAX slots (linear probing), each the
 * address of the key's newest node.  Nodes live in chunks that are only
 * freed with the map; a slot, once filled, keeps its key for the map's
 * life, so a probe never has to skip a hole and readers need no lock.
 */
#include "pending.h"

#include <stdlib.h>
#include <string.h>

#include "fmix64.h"

#define PENDING_SLOTS	(2 * (size_t)PENDING_MAX)
#define PENDING_CHUNK	(1u << 20)
/* Tables counted apart: a lookup in one the map holds nothing of reads no
 * slot (a cache miss in a map of megabytes). */
#define PENDING_TABLES	16

struct pnode {
	uint32_t klen, vlen;
	uint8_t table;
	bool deleted;
	uint8_t data[];		/* key, then value */
};

struct chunk {
	struct chunk *next;
	size_t used, size;
	uint8_t mem[];
};

struct pending {
	struct pnode **slots;
	size_t count;
	size_t in_table[PENDING_TABLES];	/* keys of each table (atomics) */
	size_t bytes;
	struct chunk *chunks;	/* the newest first */
};

static uint64_t
key_hash(unsigned t, const uint8_t *key, size_t klen)
{
	uint64_t h = fmix64((uint64_t)t << 32 | klen), w;

	for (; klen >= 8; key += 8, klen -= 8) {
		memcpy(&w, key, 8);
		h = fmix64(h ^ w);
	}
	if (klen > 0) {
		w = 0;
		memcpy(&w, key, klen);
		h = fmix64(h ^ w);
	}
	return h;
}

struct pending *
pending_new(void)
{
	struct pending *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	if ((p->slots = calloc(PENDING_SLOTS, sizeof(*p->slots))) == NULL) {
		free(p);
		return NULL;
	}
	p->bytes = sizeof(*p) + PENDING_SLOTS * sizeof(*p->slots);
	return p;
}

void
pending_free(struct pending *p)
{
	struct chunk *c, *next;

	if (p == NULL)
		return;
	for (c = p->chunks; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	free(p->slots);
	free(p);
}

/* Room for a node of len bytes, aligned for its fields. */
static struct pnode *
node_alloc(struct pending *p, size_t len)
{
	struct chunk *c = p->chunks;

	len = (len + 7) & ~(size_t)7;
	if (c == NULL || c->size - c->used < len) {
		size_t size = len > PENDING_CHUNK ? len : PENDING_CHUNK;

		if ((c = malloc(sizeof(*c) + size)) == NULL)
			return NULL;
		c->size = size;
		c->used = 0;
		/* A node of its own goes behind the chunk being filled. */
		if (len > PENDING_CHUNK && p->chunks != NULL) {
			c->next = p->chunks->next;
			p->chunks->next = c;
		} else {
			c->next = p->chunks;
			p->chunks = c;
		}
		p->bytes += sizeof(*c) + size;
	}
	c->used += len;
	return (struct pnode *)(c->mem + c->used - len);
}

static bool
node_is(const struct pnode *n, unsigned t, const void *key, size_t klen)
{
	return n->table == t && n->klen == klen &&
	    memcmp(n->data, key, klen) == 0;
}

int
pending_set(struct pending *p, unsigned t, const void *key, size_t klen,
    const void *val, size_t vlen, bool deleted)
{
	size_t mask = PENDING_SLOTS - 1;
	size_t i = (size_t)key_hash(t, key, klen) & mask;
	struct pnode *n, *old;

	if (deleted)
		vlen = 0;
	for (;; i = (i + 1) & mask) {
		old = p->slots[i];	/* this thread alone writes slots */
		if (old == NULL || node_is(old, t, key, klen))
			break;
	}
	if (old == NULL && p->count >= PENDING_MAX)
		return -1;
	if (t >= PENDING_TABLES || klen > UINT32_MAX || vlen > UINT32_MAX ||
	    (n = node_alloc(p, sizeof(*n) + klen + vlen)) == NULL)
		return -1;
	n->klen = (uint32_t)klen;
	n->vlen = (uint32_t)vlen;
	n->table = (uint8_t)t;
	n->deleted = deleted;
	memcpy(n->data, key, klen);
	if (vlen > 0)
		memcpy(n->data + klen, val, vlen);
	/* The node's bytes before its address: a reader that finds it
	 * finds it whole. */
	if (old == NULL)
		__atomic_store_n(&p->in_table[t], p->in_table[t] + 1,
		    __ATOMIC_RELEASE);
	__atomic_store_n(&p->slots[i], n, __ATOMIC_RELEASE);
	if (old == NULL)
		__atomic_store_n(&p->count, p->count + 1, __ATOMIC_RELAXED);
	return 0;
}

int
pending_get(const struct pending *p, unsigned t, const void *key,
    size_t klen, const void **val, size_t *vlen)
{
	size_t mask = PENDING_SLOTS - 1, i;
	const struct pnode *n;

	if (t >= PENDING_TABLES || __atomic_load_n(&p->in_table[t],
	    __ATOMIC_ACQUIRE) == 0)
		return 0;
	for (i = (size_t)key_hash(t, key, klen) & mask;; i = (i + 1) & mask) {
		n = __atomic_load_n(&p->slots[i], __ATOMIC_ACQUIRE);
		if (n == NULL)
			return 0;
		if (node_is(n, t, key, klen))
			break;
	}
	*val = n->deleted ? NULL : n->data + n->klen;
	*vlen = n->vlen;
	return 1;
}

long
pending_entries(const struct pending *p, unsigned t,
    struct pending_entry **out)
{
	struct pending_entry *e = NULL, *grown;
	size_t n = 0, cap = 0;

	*out = NULL;
	if (t >= PENDING_TABLES || __atomic_load_n(&p->in_table[t],
	    __ATOMIC_ACQUIRE) == 0)
		return 0;
	for (size_t i = 0; i < PENDING_SLOTS; i++) {
		const struct pnode *node = __atomic_load_n(&p->slots[i],
		    __ATOMIC_ACQUIRE);

		if (node == NULL || node->table != t)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			if ((grown = realloc(e, cap * sizeof(*e))) == NULL) {
				free(e);
				return -1;
			}
			e = grown;
		}
		e[n].key = node->data;
		e[n].klen = node->klen;
		e[n].val = node->deleted ? NULL : node->data + node->klen;
		e[n].vlen = node->vlen;
		n++;
	}
	*out = e;
	return (long)n;
}

size_t
pending_count(const struct pending *p)
{
	return __atomic_load_n(&p->count, __ATOMIC_RELAXED);
}

size_t
pending_bytes(const struct pending *p)
{
	return p->bytes;
}
