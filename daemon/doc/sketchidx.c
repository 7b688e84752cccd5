/*
 * sketchidx: stored documents by their sketches' keys.  See sketchidx.h.
 */
#include "sketchidx.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define SHARD_BITS	8
#define SHARDS		(1u << SHARD_BITS)
/* Directory bits per shard: at least 8, so that with the shard's 8 and a
 * key's low 16 kept in its entry every bit of the key is known. */
#define DIR_MIN		8
#define DIR_MAX		20
#define FRAG(key)	((uint16_t)(key))

/* A bucket: n entries, room for cap; the ids, then the keys' low bits. */
struct bucket {
	uint32_t n, cap;
	uint32_t ids[];
};

static inline uint16_t *
frags(struct bucket *b)
{
	return (uint16_t *)(b->ids + b->cap);
}

struct shard {
	pthread_rwlock_t lock;
	unsigned dir_bits;
	struct bucket **dir;
	uint64_t entries;
	uint64_t bytes;		/* buckets and directory */
};

struct sketchidx {
	struct shard shards[SHARDS];
};

static size_t
bucket_size(uint32_t cap)
{
	return sizeof(struct bucket) + (size_t)cap * (sizeof(uint32_t) +
	    sizeof(uint16_t));
}

static inline struct shard *
shard_of(struct sketchidx *x, uint32_t key)
{
	return &x->shards[key >> (32 - SHARD_BITS)];
}

static inline size_t
slot_of(const struct shard *s, uint32_t key)
{
	return (key >> (32 - SHARD_BITS - s->dir_bits)) &
	    ((1u << s->dir_bits) - 1);
}

/* The directory bits for n entries in one shard. */
static unsigned
dir_bits_for(uint64_t n)
{
	unsigned d = DIR_MIN;

	while (d < DIR_MAX && n > (uint64_t)SKETCHIDX_LOAD_MAX / 2 << d)
		d++;
	return d;
}

static int
shard_init(struct shard *s, unsigned bits)
{
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	/* Queries come all the time; the writer must not starve. */
	pthread_rwlockattr_setkind_np(&attr,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	s->dir_bits = bits;
	if ((s->dir = calloc((size_t)1 << bits, sizeof(*s->dir))) == NULL)
		return -1;
	s->bytes = ((uint64_t)1 << bits) * sizeof(*s->dir);
	return 0;
}

struct sketchidx *
sketchidx_new(uint64_t expected)
{
	struct sketchidx *x = calloc(1, sizeof(*x));
	unsigned bits = dir_bits_for(expected * SKETCH_KEYS / SHARDS);

	if (x == NULL)
		return NULL;
	for (unsigned i = 0; i < SHARDS; i++) {
		if (shard_init(&x->shards[i], bits) == -1) {
			sketchidx_free(x);
			return NULL;
		}
	}
	return x;
}

void
sketchidx_free(struct sketchidx *x)
{
	if (x == NULL)
		return;
	for (unsigned i = 0; i < SHARDS; i++) {
		struct shard *s = &x->shards[i];

		if (s->dir == NULL)
			continue;
		for (size_t j = 0; j < (size_t)1 << s->dir_bits; j++)
			free(s->dir[j]);
		free(s->dir);
		pthread_rwlock_destroy(&s->lock);
	}
	free(x);
}

/* A copy of b (NULL: none) with room for cap entries; NULL if memory is
 * short. */
static struct bucket *
bucket_resize(struct bucket *b, uint32_t cap)
{
	struct bucket *nb = malloc(bucket_size(cap));

	if (nb == NULL)
		return NULL;
	nb->n = b != NULL ? b->n : 0;
	nb->cap = cap;
	if (b != NULL) {
		memcpy(nb->ids, b->ids, b->n * sizeof(uint32_t));
		memcpy(frags(nb), frags(b), b->n * sizeof(uint16_t));
	}
	return nb;
}

/* The key of entry i of bucket slot in shard number sh of s. */
static uint32_t
entry_key(const struct shard *s, unsigned sh, size_t slot, uint16_t frag)
{
	return (uint32_t)sh << (32 - SHARD_BITS) |
	    (uint32_t)slot << (32 - SHARD_BITS - s->dir_bits) | frag;
}

/* Doubles shard number sh's directory (write lock held); -1 if memory is
 * short, the shard unchanged. */
static int
shard_grow(struct shard *s, unsigned sh)
{
	unsigned bits = s->dir_bits + 1;
	size_t old_n = (size_t)1 << s->dir_bits, bit = 32 - SHARD_BITS - bits;
	struct bucket **dir = calloc((size_t)1 << bits, sizeof(*dir));
	uint64_t bytes = ((uint64_t)1 << bits) * sizeof(*dir);

	if (dir == NULL)
		return -1;
	for (size_t j = 0; j < old_n; j++) {
		struct bucket *b = s->dir[j], *half[2] = { NULL, NULL };
		uint32_t count[2] = { 0, 0 };

		if (b == NULL)
			continue;
		for (uint32_t e = 0; e < b->n; e++)
			count[(entry_key(s, sh, j, frags(b)[e]) >> bit) & 1]++;
		for (int h = 0; h < 2; h++) {
			if (count[h] == 0)
				continue;
			if ((half[h] = bucket_resize(NULL, count[h] +
			    count[h] / 8 + 2)) == NULL)
				goto nomem;
			bytes += bucket_size(half[h]->cap);
		}
		for (uint32_t e = 0; e < b->n; e++) {
			struct bucket *t = half[(entry_key(s, sh, j,
			    frags(b)[e]) >> bit) & 1];

			t->ids[t->n] = b->ids[e];
			frags(t)[t->n++] = frags(b)[e];
		}
		dir[2 * j] = half[0];
		dir[2 * j + 1] = half[1];
		continue;
nomem:
		free(half[0]);
		for (size_t k = 0; k < 2 * j; k++)
			free(dir[k]);
		free(dir);
		return -1;
	}
	for (size_t j = 0; j < old_n; j++)
		free(s->dir[j]);
	free(s->dir);
	s->dir = dir;
	s->dir_bits = bits;
	s->bytes = bytes;
	return 0;
}

/* Files id under key in s (write lock held); -1 if memory is short. */
static int
shard_add(struct shard *s, uint32_t key, uint32_t id)
{
	size_t slot = slot_of(s, key);
	struct bucket *b = s->dir[slot], *nb;

	if (b == NULL || b->n == b->cap) {
		uint32_t cap = b == NULL ? 4 : b->cap + b->cap / 2 + 2;

		if ((nb = bucket_resize(b, cap)) == NULL)
			return -1;
		s->bytes += bucket_size(cap) - (b != NULL ?
		    bucket_size(b->cap) : 0);
		free(b);
		s->dir[slot] = b = nb;
	}
	b->ids[b->n] = id;
	frags(b)[b->n++] = FRAG(key);
	s->entries++;
	return 0;
}

/* Takes id off key in s (write lock held); whether it was there. */
static bool
shard_remove(struct shard *s, uint32_t key, uint32_t id)
{
	size_t slot = slot_of(s, key);
	struct bucket *b = s->dir[slot], *nb;
	uint16_t f = FRAG(key);

	if (b == NULL)
		return false;
	for (uint32_t e = 0; e < b->n; e++) {
		if (b->ids[e] != id || frags(b)[e] != f)
			continue;
		b->n--;
		b->ids[e] = b->ids[b->n];
		frags(b)[e] = frags(b)[b->n];
		s->entries--;
		if (b->n == 0) {
			s->bytes -= bucket_size(b->cap);
			free(b);
			s->dir[slot] = NULL;
		} else if (b->n < b->cap / 4 && b->cap > 8 &&
		    (nb = bucket_resize(b, b->n * 2)) != NULL) {
			s->bytes -= bucket_size(b->cap) - bucket_size(nb->cap);
			free(b);
			s->dir[slot] = nb;
		}
		return true;
	}
	return false;
}

int
sketchidx_insert(struct sketchidx *x, uint32_t id, const uint32_t *keys,
    size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct shard *s = shard_of(x, keys[i]);
		int rc;

		pthread_rwlock_wrlock(&s->lock);
		if (s->entries >= (uint64_t)SKETCHIDX_LOAD_MAX << s->dir_bits &&
		    s->dir_bits < DIR_MAX && shard_grow(s, keys[i] >>
		    (32 - SHARD_BITS)) == -1)
			log_warnx("%s: out of memory: a shard stays at %u "
			    "directory bits", __func__, s->dir_bits);
		rc = shard_add(s, keys[i], id);
		pthread_rwlock_unlock(&s->lock);
		if (rc == -1) {
			sketchidx_delete(x, id, keys, i);
			log_warnx("%s: out of memory", __func__);
			return -1;
		}
	}
	return 0;
}

size_t
sketchidx_delete(struct sketchidx *x, uint32_t id, const uint32_t *keys,
    size_t n)
{
	size_t found = 0;

	for (size_t i = 0; i < n; i++) {
		struct shard *s = shard_of(x, keys[i]);

		pthread_rwlock_wrlock(&s->lock);
		found += shard_remove(s, keys[i], id);
		pthread_rwlock_unlock(&s->lock);
	}
	return found;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Appends id to the hits; -1 if memory is short. */
static int
hits_push(uint32_t **hits, size_t *n, size_t *cap, uint32_t *stack,
    uint32_t id)
{
	if (*n == *cap) {
		size_t ncap = *cap * 2;
		uint32_t *g = malloc(ncap * sizeof(*g));

		if (g == NULL)
			return -1;
		memcpy(g, *hits, *n * sizeof(*g));
		if (*hits != stack)
			free(*hits);
		*hits = g;
		*cap = ncap;
	}
	(*hits)[(*n)++] = id;
	return 0;
}

int64_t
sketchidx_candidates(struct sketchidx *x, const struct sketch *q,
    sketchidx_filter_fn filter, void *arg, uint32_t exclude, uint32_t *out,
    size_t max, struct sketchidx_counts *counts)
{
	uint32_t stack[512], *hits = stack;
	size_t nhits = 0, cap = sizeof(stack) / sizeof(stack[0]);
	int64_t total = 0;
	int rc = 0;

	/* Every document met under one of q's hashes, once per key. */
	for (uint32_t j = 0; j < q->n && rc == 0; j++) {
		uint32_t key = q->h[j];
		struct shard *s = shard_of(x, key);
		struct bucket *b;
		uint16_t f = FRAG(key);
		uint32_t list = 0;

		pthread_rwlock_rdlock(&s->lock);
		if ((b = s->dir[slot_of(s, key)]) != NULL) {
			const uint16_t *fr = frags(b);

			for (uint32_t e = 0; e < b->n; e++)
				list += fr[e] == f;
			counts->keys_read += b->n;
			if (list > SKETCHIDX_LIST_MAX) {
				counts->keys_skipped++;
				list = 0;
			}
			for (uint32_t e = 0; list > 0 && e < b->n && rc == 0;
			    e++) {
				uint32_t id = b->ids[e];

				if (fr[e] != f || id == exclude ||
				    (filter != NULL && !filter(id, arg)))
					continue;
				rc = hits_push(&hits, &nhits, &cap, stack, id);
			}
		}
		pthread_rwlock_unlock(&s->lock);
	}
	if (rc == -1) {
		if (hits != stack)
			free(hits);
		return -1;
	}
	/* Those met under two keys or more. */
	qsort(hits, nhits, sizeof(*hits), cmp_u32);
	for (size_t i = 0, j; i < nhits; i = j) {
		for (j = i; j < nhits && hits[j] == hits[i]; j++)
			;
		if (j - i < SKETCH_MIN_KEYS)
			continue;
		if ((size_t)total < max)
			out[total] = hits[i];
		total++;
	}
	if (hits != stack)
		free(hits);
	return total;
}

int
sketchidx_bulk_load(struct sketchidx *x, const uint32_t *ids,
    const uint32_t *keys, size_t n)
{
	uint32_t **count = calloc(SHARDS, sizeof(*count));
	int rc = -1;

	if (count == NULL)
		return -1;
	/* Each bucket once, at its final size: count, place, fill. */
	for (unsigned i = 0; i < SHARDS; i++)
		if ((count[i] = calloc((size_t)1 << x->shards[i].dir_bits,
		    sizeof(uint32_t))) == NULL)
			goto out;
	for (size_t i = 0; i < n; i++)
		count[keys[i] >> (32 - SHARD_BITS)][slot_of(shard_of(x,
		    keys[i]), keys[i])]++;
	for (unsigned i = 0; i < SHARDS; i++) {
		struct shard *s = &x->shards[i];

		for (size_t j = 0; j < (size_t)1 << s->dir_bits; j++) {
			uint32_t c = count[i][j];
			struct bucket *b;

			if (c == 0)
				continue;
			c += s->dir[j] != NULL ? s->dir[j]->n : 0;
			if ((b = bucket_resize(s->dir[j], c + c / 16 + 1)) ==
			    NULL)
				goto out;
			s->bytes += bucket_size(b->cap) - (s->dir[j] != NULL ?
			    bucket_size(s->dir[j]->cap) : 0);
			free(s->dir[j]);
			s->dir[j] = b;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (shard_add(shard_of(x, keys[i]), keys[i], ids[i]) == -1)
			goto out;
	rc = 0;
out:
	for (unsigned i = 0; i < SHARDS; i++)
		free(count[i]);
	free(count);
	return rc;
}

int
sketchidx_has(struct sketchidx *x, uint32_t id, uint32_t key)
{
	struct shard *s = shard_of(x, key);
	struct bucket *b;
	int found = 0;

	pthread_rwlock_rdlock(&s->lock);
	if ((b = s->dir[slot_of(s, key)]) != NULL)
		for (uint32_t e = 0; e < b->n && !found; e++)
			found = b->ids[e] == id && frags(b)[e] == FRAG(key);
	pthread_rwlock_unlock(&s->lock);
	return found;
}

uint64_t
sketchidx_entries(struct sketchidx *x)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < SHARDS; i++) {
		pthread_rwlock_rdlock(&x->shards[i].lock);
		n += x->shards[i].entries;
		pthread_rwlock_unlock(&x->shards[i].lock);
	}
	return n;
}

uint64_t
sketchidx_memory_bytes(struct sketchidx *x)
{
	uint64_t n = sizeof(*x);

	for (unsigned i = 0; i < SHARDS; i++) {
		pthread_rwlock_rdlock(&x->shards[i].lock);
		n += x->shards[i].bytes;
		pthread_rwlock_unlock(&x->shards[i].lock);
	}
	return n;
}
