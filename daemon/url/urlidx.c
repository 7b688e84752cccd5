/*
 * urlidx: the in-memory map from fingerprint to segment.  See urlidx.h.
 *
 * Memory ordering.  Readers load entries with relaxed atomics; an entry's
 * own store is atomic, so it is seen whole.  A displacement writes the
 * entry into its other bucket before clearing the old slot, inside an odd
 * version of both buckets' stripes (Boehm's seqlock: the odd version is
 * stored, a release fence, the entries, then the even version with
 * release); a reader loads the versions with acquire, probes, fences with
 * acquire and reloads them, and probes again if they changed or were odd.
 */
#include "urlidx.h"

#include <stdlib.h>
#include <string.h>

#include "fmix64.h"
#include "hugemap.h"
#include "le.h"

#define URLIDX_SLOTS		16	/* entries per 64-byte bucket */
#define URLIDX_TAG_BITS		(32 - URLIDX_SEG_BITS)
#define URLIDX_STRIPES		1024	/* version counters per table */
#define URLIDX_LOAD		0.95	/* of the slots, at capacity */
#define URLIDX_BFS_NODES	1024	/* buckets a displacement search visits */

struct urlidx_table {
	uint32_t *slots;		/* nb * URLIDX_SLOTS, 64-byte aligned */
	uint64_t nb;
	size_t mapped;			/* bytes mmap'ed, or 0 if malloc'ed */
	uint32_t versions[URLIDX_STRIPES];
};

struct urlidx {
	struct urlidx_table *table;
	uint64_t capacity;
	uint64_t entries;		/* written by the writer */
};

/* What a fingerprint gives: its tag and its first bucket in a table. */
struct fpkey {
	uint32_t tag;
	uint64_t h;
};

static struct fpkey
fpkey_of(const uint8_t fp[CBF_FP_LEN])
{
	/* The filter takes its block from the first half's high bits and its
	 * steps from the second half's low bits; the index takes the first
	 * half's low bits and the second half's high bits. */
	struct fpkey k = {
		.tag = (uint32_t)(le_get64(fp) & ((1u << URLIDX_TAG_BITS) - 1)),
		.h = le_get64(fp + 8),
	};

	return k;
}

static uint64_t
mulhi(uint64_t a, uint64_t b)
{
	return (uint64_t)(((unsigned __int128)a * b) >> 64);
}

static uint64_t
bucket_first(const struct urlidx_table *t, const struct fpkey *k)
{
	return mulhi(k->h, t->nb);
}

/* The other bucket of an entry with this tag in bucket b: its own inverse. */
static uint64_t
bucket_other(const struct urlidx_table *t, uint64_t b, uint32_t tag)
{
	uint64_t c = mulhi(fmix64(tag + 0x9e3779b97f4a7c15ULL), t->nb);

	return c >= b ? c - b : c + t->nb - b;
}

static uint32_t *
bucket(const struct urlidx_table *t, uint64_t b)
{
	return t->slots + b * URLIDX_SLOTS;
}

static uint32_t *
stripe(struct urlidx_table *t, uint64_t b)
{
	return &t->versions[b & (URLIDX_STRIPES - 1)];
}

static uint32_t
entry(uint32_t tag, uint32_t seg)
{
	return tag << URLIDX_SEG_BITS | seg;
}

static struct urlidx_table *
table_new(uint64_t nb)
{
	struct urlidx_table *t;
	size_t bytes = (size_t)nb * URLIDX_SLOTS * sizeof(uint32_t);

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->nb = nb;
	if (bytes >= HUGEMAP_PAGE) {
		/* Its own mapping on huge pages, taken at start-up, as the
		 * filter's memory is. */
		if ((t->slots = hugemap_new(bytes, true, &t->mapped)) == NULL) {
			free(t);
			return NULL;
		}
	} else if ((t->slots = aligned_alloc(64, (bytes + 63) & ~(size_t)63))
	    == NULL) {
		free(t);
		return NULL;
	} else
		memset(t->slots, 0, bytes);
	return t;
}

static void
table_free(struct urlidx_table *t)
{
	if (t == NULL)
		return;
	if (t->mapped)
		hugemap_free(t->slots, t->mapped);
	else
		free(t->slots);
	free(t);
}

struct urlidx *
urlidx_new(uint64_t capacity)
{
	struct urlidx *x;
	uint64_t nb = (uint64_t)((double)capacity / (URLIDX_SLOTS *
	    URLIDX_LOAD)) + 1;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	if ((x->table = table_new(nb)) == NULL) {
		free(x);
		return NULL;
	}
	x->capacity = capacity;
	return x;
}

void
urlidx_free(struct urlidx *x)
{
	if (x == NULL)
		return;
	table_free(x->table);
	free(x);
}

uint64_t
urlidx_capacity(const struct urlidx *x)
{
	return x->capacity;
}

static void
slot_store(uint32_t *slot, uint32_t v)
{
	__atomic_store_n(slot, v, __ATOMIC_RELEASE);
}

static uint32_t
slot_load(const uint32_t *slot)
{
	return __atomic_load_n(slot, __ATOMIC_RELAXED);
}

static int
empty_slot(const struct urlidx_table *t, uint64_t b)
{
	const uint32_t *s = bucket(t, b);

	for (int i = 0; i < URLIDX_SLOTS; i++)
		if (s[i] == 0)
			return i;
	return -1;
}

/* Writer: moves the entry of (from, i) to (to, j), never out of sight. */
static void
displace(struct urlidx_table *t, uint64_t from, int i, uint64_t to, int j)
{
	uint32_t *v1 = stripe(t, from), *v2 = stripe(t, to);
	uint32_t e = bucket(t, from)[i];

	__atomic_store_n(v1, *v1 + 1, __ATOMIC_RELAXED);
	if (v2 != v1)
		__atomic_store_n(v2, *v2 + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	slot_store(&bucket(t, to)[j], e);
	slot_store(&bucket(t, from)[i], 0);
	__atomic_store_n(v1, *v1 + 1, __ATOMIC_RELEASE);
	if (v2 != v1)
		__atomic_store_n(v2, *v2 + 1, __ATOMIC_RELEASE);
}

struct bfs_node {
	uint64_t bucket;
	int parent;		/* index of the node it was reached from */
	int slot;		/* the parent's slot whose entry moves here */
};

static int
on_path(const struct bfs_node *nodes, int at, uint64_t b)
{
	for (; at >= 0; at = nodes[at].parent)
		if (nodes[at].bucket == b)
			return 1;
	return 0;
}

/*
 * Writer: frees a slot in b1 or b2 by moving entries along the shortest
 * chain of displacements (breadth first) that ends in an empty slot.
 * Returns the bucket and slot freed, or -1 when none is found in bounds.
 */
static int
make_room(struct urlidx_table *t, uint64_t b1, uint64_t b2, uint64_t *freed_b,
    int *freed_slot)
{
	static __thread struct bfs_node nodes[URLIDX_BFS_NODES];
	int n = 0;

	nodes[n++] = (struct bfs_node){ b1, -1, -1 };
	if (b2 != b1)
		nodes[n++] = (struct bfs_node){ b2, -1, -1 };
	for (int head = 0; head < n; head++) {
		uint64_t b = nodes[head].bucket, alt[URLIDX_SLOTS];
		const uint32_t *s = bucket(t, b);

		/* The alternates are random lines of a table far larger
		 * than the caches: ask for all of them before reading one. */
		for (int i = 0; i < URLIDX_SLOTS; i++) {
			alt[i] = bucket_other(t, b, s[i] >> URLIDX_SEG_BITS);
			__builtin_prefetch(bucket(t, alt[i]));
		}
		for (int i = 0; i < URLIDX_SLOTS; i++) {
			uint64_t a = alt[i];
			int j;

			if (a == b)
				continue;
			if ((j = empty_slot(t, a)) >= 0) {
				/* Unwind: each move frees the slot the
				 * previous one fills. */
				int at = head, slot = i;

				displace(t, b, i, a, j);
				while (nodes[at].parent >= 0) {
					int p = nodes[at].parent;

					displace(t, nodes[p].bucket,
					    nodes[at].slot, nodes[at].bucket,
					    slot);
					slot = nodes[at].slot;
					at = p;
				}
				*freed_b = nodes[at].bucket;
				*freed_slot = slot;
				return 0;
			}
			if (n < URLIDX_BFS_NODES && !on_path(nodes, head, a))
				nodes[n++] = (struct bfs_node){ a, head, i };
		}
	}
	return -1;
}

/* Writer: places e in t if it can, displacing others. */
static int
table_insert(struct urlidx_table *t, const struct fpkey *k, uint32_t e)
{
	uint64_t b1 = bucket_first(t, k), b2 = bucket_other(t, b1, k->tag);
	uint64_t b;
	int i1 = empty_slot(t, b1), i2 = empty_slot(t, b2), i;

	if (i1 >= 0 || i2 >= 0) {
		b = i1 >= 0 ? b1 : b2;
		i = i1 >= 0 ? i1 : i2;
	} else if (make_room(t, b1, b2, &b, &i) == -1)
		return -1;
	slot_store(&bucket(t, b)[i], e);
	return 0;
}

int
urlidx_insert(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t seg)
{
	struct fpkey k = fpkey_of(fp);

	if (table_insert(x->table, &k, entry(k.tag, seg)) == -1)
		return -1;
	__atomic_store_n(&x->entries, x->entries + 1, __ATOMIC_RELAXED);
	return 0;
}

/* Writer: the slot holding e in fp's pair, or NULL. */
static uint32_t *
find_entry(struct urlidx *x, const struct fpkey *k, uint32_t e)
{
	struct urlidx_table *t = x->table;
	uint64_t b1 = bucket_first(t, k), b2 = bucket_other(t, b1, k->tag);
	uint32_t *s1 = bucket(t, b1), *s2 = bucket(t, b2);

	for (int j = 0; j < URLIDX_SLOTS; j++) {
		if (s1[j] == e)
			return &s1[j];
		if (s2[j] == e)
			return &s2[j];
	}
	return NULL;
}

int
urlidx_remove(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t seg)
{
	struct fpkey k = fpkey_of(fp);
	uint32_t *slot = find_entry(x, &k, entry(k.tag, seg));

	if (slot == NULL)
		return -1;
	slot_store(slot, 0);
	__atomic_store_n(&x->entries, x->entries - 1, __ATOMIC_RELAXED);
	return 0;
}

int
urlidx_move(struct urlidx *x, const uint8_t fp[CBF_FP_LEN], uint32_t from,
    uint32_t to)
{
	struct fpkey k = fpkey_of(fp);
	uint32_t *slot = find_entry(x, &k, entry(k.tag, from));

	if (slot == NULL)
		return -1;
	slot_store(slot, entry(k.tag, to));
	return 0;
}

static size_t
scan(const uint32_t *s, uint32_t tag, uint32_t *out, size_t n, size_t max)
{
	for (int j = 0; j < URLIDX_SLOTS; j++) {
		uint32_t e = slot_load(&s[j]);

		if (e != 0 && e >> URLIDX_SEG_BITS == tag && n < max)
			out[n++] = e & URLIDX_SEG_MAX;
	}
	return n;
}

size_t
urlidx_lookup(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN],
    uint32_t *out, size_t max)
{
	struct fpkey k = fpkey_of(fp);
	struct urlidx_table *t = x->table;
	uint64_t b1 = bucket_first(t, &k), b2 = bucket_other(t, b1, k.tag);
	const uint32_t *v1 = stripe(t, b1), *v2 = stripe(t, b2);
	uint32_t a1, a2;
	size_t n;

	for (;;) {
		a1 = __atomic_load_n(v1, __ATOMIC_ACQUIRE);
		a2 = __atomic_load_n(v2, __ATOMIC_ACQUIRE);
		if ((a1 | a2) & 1)
			continue;	/* a displacement is under way */
		n = scan(bucket(t, b1), k.tag, out, 0, max);
		if (b2 != b1)
			n = scan(bucket(t, b2), k.tag, out, n, max);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(v1, __ATOMIC_RELAXED) == a1 &&
		    __atomic_load_n(v2, __ATOMIC_RELAXED) == a2)
			return n;
	}
}

void
urlidx_prefetch(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN])
{
	struct fpkey k = fpkey_of(fp);
	const struct urlidx_table *t = x->table;
	uint64_t b1 = bucket_first(t, &k);

	__builtin_prefetch(bucket(t, b1));
	__builtin_prefetch(bucket(t, bucket_other(t, b1, k.tag)));
}

void
urlidx_stats(const struct urlidx *x, struct urlidx_stats *out)
{
	const struct urlidx_table *t = x->table;

	memset(out, 0, sizeof(*out));
	out->entries = __atomic_load_n(&x->entries, __ATOMIC_RELAXED);
	out->slots = t->nb * URLIDX_SLOTS;
	out->bytes = sizeof(*x) + sizeof(*t) + (t->mapped ? t->mapped :
	    t->nb * URLIDX_SLOTS * sizeof(uint32_t));
}

uint64_t
urlidx_count_matching(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN],
    uint32_t seg)
{
	struct fpkey k = fpkey_of(fp);
	uint32_t e = entry(k.tag, seg);
	struct urlidx_table *t = x->table;
	uint64_t b1 = bucket_first(t, &k), b2 = bucket_other(t, b1, k.tag);
	uint64_t n = 0;

	for (int j = 0; j < URLIDX_SLOTS; j++) {
		n += bucket(t, b1)[j] == e;
		if (b2 != b1)
			n += bucket(t, b2)[j] == e;
	}
	return n;
}

uint64_t
urlidx_pair_key(const struct urlidx *x, const uint8_t fp[CBF_FP_LEN])
{
	struct fpkey k = fpkey_of(fp);
	struct urlidx_table *t = x->table;
	uint64_t b1 = bucket_first(t, &k), b2 = bucket_other(t, b1, k.tag);

	return (b1 < b2 ? b1 : b2) << URLIDX_TAG_BITS | k.tag;
}
