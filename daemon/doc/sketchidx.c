/*
 * sketchidx: stored documents by their sketches' keys.  See sketchidx.h.
 */
#include "sketchidx.h"

#include <malloc.h>
#include <pthread.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define SHARD_BITS	8
#define SHARDS		(1u << SHARD_BITS)
/* Directory bits per shard: at least 8, so that with the shard's 8 and a
 * key's low 16 kept in its entry every bit of the key is known. */
#define DIR_MIN		8
#define DIR_MAX		22
#define FRAG(key)	((uint16_t)(key))
/* Every shard of an index made for few documents starts with this
 * directory: its slots are empty and never written, its pages the
 * system's zero page, so that an index without documents (a daemon of
 * URLs only) takes no memory for 256 directories.  A shard gets one of its
 * own with its first entry (dir_own). */
static struct bucket *empty_dir[(size_t)1 << DIR_MIN];
/* glibc's header of each block it hands out. */
#define MALLOC_HEADER	8

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
	unsigned dir_bits;
	struct bucket **dir;
	uint64_t entries;
};

struct sketchidx {
	pthread_rwlock_t lock;
	struct shard shards[SHARDS];
	uint64_t entries;
	uint64_t bytes;		/* directories and buckets, as allocated */
};

static size_t
bucket_size(uint32_t cap)
{
	return sizeof(struct bucket) + (size_t)cap * (sizeof(uint32_t) +
	    sizeof(uint16_t));
}

/* What a bucket of cap entries takes from the allocator. */
static size_t
bucket_bytes(const struct bucket *b)
{
	return b != NULL ? malloc_usable_size((void *)b) + MALLOC_HEADER : 0;
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

/* The directory bits for n entries in one shard: buckets of at most
 * SKETCHIDX_LOAD_MAX entries on average, as many as a shard holds before
 * its directory doubles (a bucket's own header, allocator header and
 * directory slot cost about 32 bytes: shared by more entries, less per
 * document; a query compares a bucket's fragments 8 at a time). */
static unsigned
dir_bits_for(uint64_t n)
{
	unsigned d = DIR_MIN;

	while (d < DIR_MAX && n > (uint64_t)SKETCHIDX_LOAD_MAX << d)
		d++;
	return d;
}

struct sketchidx *
sketchidx_new(uint64_t expected)
{
	struct sketchidx *x = calloc(1, sizeof(*x));
	unsigned bits = dir_bits_for(expected * SKETCH_KEYS / SHARDS);
	pthread_rwlockattr_t attr;

	if (x == NULL)
		return NULL;
	pthread_rwlockattr_init(&attr);
	/* Queries come all the time; the writer must not starve. */
	pthread_rwlockattr_setkind_np(&attr,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&x->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	for (unsigned i = 0; i < SHARDS; i++) {
		struct shard *s = &x->shards[i];

		s->dir_bits = bits;
		if (bits == DIR_MIN) {
			s->dir = empty_dir;
			continue;
		}
		if ((s->dir = calloc((size_t)1 << bits, sizeof(*s->dir))) ==
		    NULL) {
			sketchidx_free(x);
			return NULL;
		}
		x->bytes += ((uint64_t)1 << bits) * sizeof(*s->dir);
	}
	return x;
}

/* Gives shard s a directory of its own if it still has the empty one
 * (write lock held), adding its size to *bytes; -1 if memory is short. */
static int
dir_own(struct shard *s, uint64_t *bytes)
{
	struct bucket **dir;

	if (s->dir != empty_dir)
		return 0;
	if ((dir = calloc((size_t)1 << s->dir_bits, sizeof(*dir))) == NULL)
		return -1;
	s->dir = dir;
	*bytes += ((uint64_t)1 << s->dir_bits) * sizeof(*dir);
	return 0;
}

static void
dir_free(struct bucket **dir)
{
	if (dir != empty_dir)
		free(dir);
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
		dir_free(s->dir);
	}
	pthread_rwlock_destroy(&x->lock);
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

/* The key of an entry with the low bits frag in bucket slot of shard
 * number sh. */
static uint32_t
entry_key(const struct shard *s, unsigned sh, size_t slot, uint16_t frag)
{
	return (uint32_t)sh << (32 - SHARD_BITS) |
	    (uint32_t)slot << (32 - SHARD_BITS - s->dir_bits) | frag;
}

/* Doubles shard number sh's directory (write lock held); -1 if memory is
 * short, the shard unchanged. */
static int
shard_grow(struct sketchidx *x, struct shard *s, unsigned sh)
{
	unsigned bits = s->dir_bits + 1;
	size_t old_n = (size_t)1 << s->dir_bits, bit = 32 - SHARD_BITS - bits;
	struct bucket **dir = calloc((size_t)1 << bits, sizeof(*dir));
	uint64_t bytes = ((uint64_t)1 << bits) * sizeof(*dir), old_bytes;

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
			    count[h] / 4 + 2)) == NULL)
				goto nomem;
			bytes += bucket_bytes(half[h]);
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
	old_bytes = old_n * sizeof(*s->dir);
	for (size_t j = 0; j < old_n; j++) {
		old_bytes += bucket_bytes(s->dir[j]);
		free(s->dir[j]);
	}
	dir_free(s->dir);
	s->dir = dir;
	s->dir_bits = bits;
	x->bytes += bytes - old_bytes;
	return 0;
}

/* Files id under key (write lock held); -1 if memory is short. */
static int
index_add(struct sketchidx *x, uint32_t key, uint32_t id)
{
	struct shard *s = shard_of(x, key);
	size_t slot = slot_of(s, key);
	struct bucket *b = s->dir[slot], *nb;

	if (b == NULL || b->n == b->cap) {
		uint32_t cap = b == NULL ? 4 : b->cap + b->cap / 4 + 4;

		if (dir_own(s, &x->bytes) == -1 ||
		    (nb = bucket_resize(b, cap)) == NULL)
			return -1;
		x->bytes += bucket_bytes(nb) - bucket_bytes(b);
		free(b);
		s->dir[slot] = b = nb;
	}
	b->ids[b->n] = id;
	frags(b)[b->n++] = FRAG(key);
	s->entries++;
	x->entries++;
	return 0;
}

/* Takes id off key (write lock held); whether it was there. */
static bool
index_remove(struct sketchidx *x, uint32_t key, uint32_t id)
{
	struct shard *s = shard_of(x, key);
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
		x->entries--;
		if (b->n == 0) {
			x->bytes -= bucket_bytes(b);
			free(b);
			s->dir[slot] = NULL;
		} else if (b->n < b->cap / 4 && b->cap > 8 &&
		    (nb = bucket_resize(b, b->n * 2)) != NULL) {
			x->bytes += bucket_bytes(nb) - bucket_bytes(b);
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
	int rc = 0;
	size_t i;

	pthread_rwlock_wrlock(&x->lock);
	for (i = 0; i < n && rc == 0; i++) {
		struct shard *s = shard_of(x, keys[i]);

		if (s->entries >= (uint64_t)SKETCHIDX_LOAD_MAX << s->dir_bits &&
		    s->dir_bits < DIR_MAX && shard_grow(x, s, keys[i] >>
		    (32 - SHARD_BITS)) == -1)
			log_warnx("%s: out of memory: a shard stays at %u "
			    "directory bits", __func__, s->dir_bits);
		rc = index_add(x, keys[i], id);
	}
	if (rc == -1) {
		/* Nothing filed: the keys before the one that failed go. */
		for (size_t j = 0; j + 1 < i; j++)
			index_remove(x, keys[j], id);
		log_warnx("%s: out of memory", __func__);
	}
	pthread_rwlock_unlock(&x->lock);
	return rc;
}

size_t
sketchidx_delete(struct sketchidx *x, uint32_t id, const uint32_t *keys,
    size_t n)
{
	size_t found = 0;

	pthread_rwlock_wrlock(&x->lock);
	for (size_t i = 0; i < n; i++)
		found += index_remove(x, keys[i], id);
	pthread_rwlock_unlock(&x->lock);
	return found;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * The ids met SKETCH_MIN_KEYS times or more among hits[0..n), each once,
 * into often[] (room for n / SKETCH_MIN_KEYS), counted in an
 * open-addressing table rather than by sorting them all: a query meets
 * hundreds of documents once for each that it meets twice.  Returns how
 * many, or -1 if memory is short.
 */
_Static_assert(SKETCH_MIN_KEYS >= 2, "met_often counts from one");

static int64_t
met_often(const uint32_t *hits, size_t n, uint32_t *often)
{
	uint32_t stack_id[1024];
	uint8_t stack_count[1024];
	unsigned bits = 10;
	uint32_t *id = stack_id;
	uint8_t *count = stack_count;
	size_t m = 0;

	while (((size_t)1 << bits) < 2 * n)
		bits++;
	if (bits > 10) {
		id = malloc(((size_t)1 << bits) * sizeof(*id));
		count = malloc((size_t)1 << bits);
		if (id == NULL || count == NULL) {
			free(id);
			free(count);
			return -1;
		}
	}
	memset(id, 0, ((size_t)1 << bits) * sizeof(*id));
	for (size_t i = 0; i < n; i++) {
		/* Ids are never 0: 0 marks a free slot. */
		size_t mask = ((size_t)1 << bits) - 1;
		size_t k = (size_t)(hits[i] * UINT32_C(0x9E3779B1)) >>
		    (32 - bits);

		while (id[k] != 0 && id[k] != hits[i])
			k = (k + 1) & mask;
		if (id[k] == 0) {
			id[k] = hits[i];
			count[k] = 1;
		} else if (count[k] < SKETCH_MIN_KEYS &&
		    ++count[k] == SKETCH_MIN_KEYS)
			often[m++] = hits[i];
	}
	if (id != stack_id) {
		free(id);
		free(count);
	}
	return (int64_t)m;
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

/* Which of the n (at most 8 read) fragments at fr equal f, as bits. */
static inline unsigned
match8(const uint16_t *fr, uint32_t n, uint16_t f)
{
	unsigned m = 0;

#ifdef __SSE2__
	if (n >= 8) {
		__m128i eq = _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)
		    (const void *)fr), _mm_set1_epi16((short)f));

		/* Each lane's -1 or 0 packed to a byte, one bit each. */
		return (unsigned)_mm_movemask_epi8(_mm_packs_epi16(eq,
		    _mm_setzero_si128()));
	}
#endif
	for (uint32_t e = 0; e < n && e < 8; e++)
		m |= (unsigned)(fr[e] == f) << e;
	return m;
}

/*
 * The documents filed under key in bucket b, once each, into the hits
 * (those filter keeps, but exclude), in one pass; keys held by more than
 * SKETCHIDX_LIST_MAX documents are passed over (their hits taken back).
 * -1 if memory is short.
 */
static int
scan_bucket(struct bucket *b, uint32_t key, sketchidx_filter_fn filter,
    void *arg, uint32_t exclude, uint32_t **hits, size_t *nhits,
    size_t *cap, uint32_t *stack, struct sketchidx_counts *counts)
{
	const uint16_t *fr = frags(b);
	uint16_t f = FRAG(key);
	size_t mark = *nhits;
	uint32_t list = 0;

	counts->keys_read += b->n;
	for (uint32_t e0 = 0; e0 < b->n; e0 += 8) {
		unsigned m = match8(fr + e0, b->n - e0, f);

		for (; m != 0; m &= m - 1) {
			uint32_t id = b->ids[e0 + (unsigned)__builtin_ctz(m)];

			list++;
			if (id == exclude || (filter != NULL &&
			    !filter(id, arg)))
				continue;
			if (hits_push(hits, nhits, cap, stack, id) == -1)
				return -1;
		}
	}
	if (list > SKETCHIDX_LIST_MAX) {
		counts->keys_skipped++;
		*nhits = mark;
	}
	return 0;
}

int64_t
sketchidx_candidates(struct sketchidx *x, const struct sketch *q,
    sketchidx_filter_fn filter, void *arg, uint32_t exclude, uint32_t *out,
    size_t max, struct sketchidx_counts *counts)
{
	uint32_t stack[512], *hits = stack;
	struct bucket *b[SKETCH_K];
	size_t slot[SKETCH_K];
	size_t nhits = 0, cap = sizeof(stack) / sizeof(stack[0]);
	uint32_t probes = q->n < SKETCH_PROBES ? q->n : SKETCH_PROBES;
	int64_t total = 0;
	int rc = 0;

	/*
	 * Every document met under one of q's hashes, once per key: the
	 * directory slots of all the hashes fetched, then their buckets,
	 * then the buckets scanned, so that the memory misses of all of
	 * them overlap (a bucket's scan is too short to hide the next
	 * one's).
	 */
	pthread_rwlock_rdlock(&x->lock);
	for (uint32_t j = 0; j < probes; j++) {
		struct shard *s = shard_of(x, q->h[j]);

		slot[j] = slot_of(s, q->h[j]);
		__builtin_prefetch(&s->dir[slot[j]]);
	}
	for (uint32_t j = 0; j < probes; j++) {
		b[j] = shard_of(x, q->h[j])->dir[slot[j]];
		if (b[j] != NULL) {
			__builtin_prefetch(b[j]);
			__builtin_prefetch(frags(b[j]));
		}
	}
	for (uint32_t j = 0; j < probes && rc == 0; j++)
		if (b[j] != NULL)
			rc = scan_bucket(b[j], q->h[j], filter, arg, exclude,
			    &hits, &nhits, &cap, stack, counts);
	pthread_rwlock_unlock(&x->lock);
	if (rc == -1) {
		if (hits != stack)
			free(hits);
		return -1;
	}
	/* Those met under two keys or more (SKETCH_MIN_KEYS), the
	 * smallest ids first, in the hits' own room. */
	if ((total = met_often(hits, nhits, hits)) >= 0) {
		qsort(hits, (size_t)total, sizeof(*hits), cmp_u32);
		memcpy(out, hits, ((size_t)total < max ? (size_t)total : max) *
		    sizeof(*out));
	}
	if (hits != stack)
		free(hits);
	return total;
}

/*
 * A bulk load's entries, gathered by shard: each shard's in a list of
 * blocks taken from the heap and given back as the shard is filed, so
 * that the buckets of the shards filed after it are made in memory the
 * process has already touched.  The first touch of a page is what a
 * start-up of millions of documents spends most on (the kernel clears
 * it, and a virtual machine's host may back it then: 0.3 to 1 GB/s on
 * the machines measured, against 7 GB/s and more for a copy), and the
 * entries take about as much as the buckets made from them.  (The
 * blocks are reused by threads that allocate from the heap they came
 * from: on up to 4 CPUs the daemon has one heap, main.c; with more, some
 * loaders' buckets take fresh pages, as before.)
 */
#define STAGE_BLOCK	8190	/* entries per block: 64 KiB with its header */
/* An entry: document id under key. */
#define STAGE_ENTRY(key, id)	((uint64_t)(key) << 32 | (uint32_t)(id))

struct stage_block {
	struct stage_block *next;
	size_t n;
	uint64_t e[STAGE_BLOCK];	/* STAGE_ENTRY */
};

struct sketchidx_stage {
	struct stage_block *head[SHARDS], *tail[SHARDS];
	size_t n[SHARDS];
	uint64_t entries;
};

struct sketchidx_stage *
sketchidx_stage_new(void)
{
	return calloc(1, sizeof(struct sketchidx_stage));
}

int
sketchidx_stage_add(struct sketchidx_stage *st, uint32_t id,
    const uint32_t *keys, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		unsigned sh = keys[k] >> (32 - SHARD_BITS);
		struct stage_block *b = st->tail[sh];

		if (b == NULL || b->n == STAGE_BLOCK) {
			if ((b = malloc(sizeof(*b))) == NULL)
				return -1;
			b->next = NULL;
			b->n = 0;
			if (st->tail[sh] != NULL)
				st->tail[sh]->next = b;
			else
				st->head[sh] = b;
			st->tail[sh] = b;
		}
		b->e[b->n++] = STAGE_ENTRY(keys[k], id);
		st->n[sh]++;
	}
	st->entries += n;
	return 0;
}

uint64_t
sketchidx_stage_entries(const struct sketchidx_stage *st)
{
	return st->entries;
}

void
sketchidx_stage_join(struct sketchidx_stage *st, struct sketchidx_stage *from)
{
	for (unsigned sh = 0; sh < SHARDS; sh++) {
		if (from->head[sh] == NULL)
			continue;
		if (st->tail[sh] != NULL)
			st->tail[sh]->next = from->head[sh];
		else
			st->head[sh] = from->head[sh];
		st->tail[sh] = from->tail[sh];
		st->n[sh] += from->n[sh];
		from->head[sh] = from->tail[sh] = NULL;
		from->n[sh] = 0;
	}
	st->entries += from->entries;
	from->entries = 0;
}

/* Gives back shard sh's blocks. */
static void
stage_drop(struct sketchidx_stage *st, unsigned sh)
{
	struct stage_block *b, *next;

	for (b = st->head[sh]; b != NULL; b = next) {
		next = b->next;
		free(b);
	}
	st->head[sh] = st->tail[sh] = NULL;
	st->n[sh] = 0;
}

void
sketchidx_stage_free(struct sketchidx_stage *st)
{
	if (st == NULL)
		return;
	for (unsigned sh = 0; sh < SHARDS; sh++)
		stage_drop(st, sh);
	free(st);
}

/*
 * Files shard s's entries, the list of blocks from b (write lock held):
 * counted by directory slot into count[] (room for the shard's slots),
 * each bucket made once at its size, then filled; the shard's buckets are
 * few enough to stay in the cache while they fill.  Adds what the buckets
 * grew by to *bytes.  -1 if memory is short.
 */
static int
load_shard(struct shard *s, const struct stage_block *first, uint32_t *count,
    uint64_t *bytes)
{
	size_t nb = (size_t)1 << s->dir_bits;
	unsigned shift = 64 - SHARD_BITS - s->dir_bits;
	const struct stage_block *b;

	if (first != NULL && dir_own(s, bytes) == -1)
		return -1;
	memset(count, 0, nb * sizeof(*count));
	for (b = first; b != NULL; b = b->next)
		for (size_t i = 0; i < b->n; i++)
			count[(b->e[i] >> shift) & (nb - 1)]++;
	for (size_t j = 0; j < nb; j++) {
		size_t c = count[j];
		struct bucket *nbk;

		if (c == 0)
			continue;
		c += s->dir[j] != NULL ? s->dir[j]->n : 0;
		if (c > UINT32_MAX / 2 || (nbk = bucket_resize(s->dir[j],
		    (uint32_t)(c + c / 16 + 1))) == NULL)
			return -1;
		*bytes += bucket_bytes(nbk) - bucket_bytes(s->dir[j]);
		free(s->dir[j]);
		s->dir[j] = nbk;
	}
	for (b = first; b != NULL; b = b->next) {
		for (size_t i = 0; i < b->n; i++) {
			struct bucket *t = s->dir[(b->e[i] >> shift) &
			    (nb - 1)];

			t->ids[t->n] = (uint32_t)b->e[i];
			frags(t)[t->n++] = FRAG((uint32_t)(b->e[i] >> 32));
		}
		s->entries += b->n;
	}
	return 0;
}

/* A bulk load shared by the threads that file it: each takes the next
 * shard not taken yet. */
struct bulk {
	struct sketchidx *x;
	struct sketchidx_stage *st;
	unsigned next;		/* the next shard to take */
	uint64_t bytes;		/* what the buckets grew by */
	int failed;		/* memory was short: the others stop */
};

static void *
bulk_run(void *arg)
{
	struct bulk *bk = arg;
	uint32_t *count = NULL;
	uint64_t bytes = 0;
	size_t room = 0;
	unsigned sh;
	int rc = 0;

	while (rc == 0 && (sh = __atomic_fetch_add(&bk->next, 1,
	    __ATOMIC_RELAXED)) < SHARDS && !__atomic_load_n(&bk->failed,
	    __ATOMIC_RELAXED)) {
		struct shard *s = &bk->x->shards[sh];
		size_t nb = (size_t)1 << s->dir_bits;

		if (bk->st->head[sh] == NULL)
			continue;
		if (nb > room) {
			free(count);
			room = nb;
			if ((count = malloc(nb * sizeof(*count))) == NULL) {
				rc = -1;
				break;
			}
		}
		if ((rc = load_shard(s, bk->st->head[sh], count, &bytes)) == 0)
			stage_drop(bk->st, sh);
	}
	free(count);
	__atomic_fetch_add(&bk->bytes, bytes, __ATOMIC_RELAXED);
	if (rc == -1)
		__atomic_store_n(&bk->failed, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Runs fn(arg) in this thread and up to threads - 1 more (at most
 * SKETCHIDX_LOAD_THREADS in all), until each returns: the loaders that
 * share a load's shards. */
static void
run_loaders(void *(*fn)(void *), void *arg, unsigned threads)
{
	pthread_t t[SKETCHIDX_LOAD_THREADS];
	unsigned started = 0;

	if (threads > SKETCHIDX_LOAD_THREADS)
		threads = SKETCHIDX_LOAD_THREADS;
	while (started + 1 < threads && pthread_create(&t[started], NULL, fn,
	    arg) == 0)
		started++;
	fn(arg);
	while (started > 0)
		pthread_join(t[--started], NULL);
}

int
sketchidx_bulk_load(struct sketchidx *x, struct sketchidx_stage *st,
    unsigned threads)
{
	struct bulk bk = { x, st, 0, 0, 0 };

	pthread_rwlock_wrlock(&x->lock);
	run_loaders(bulk_run, &bk, threads);
	x->entries = st->entries = 0;
	for (unsigned sh = 0; sh < SHARDS; sh++) {
		x->entries += x->shards[sh].entries;
		st->entries += st->n[sh];	/* what a failure left */
	}
	x->bytes += bk.bytes;
	pthread_rwlock_unlock(&x->lock);
	return bk.failed ? -1 : 0;
}

/*
 * The restart image.  A shard's part: its directory bits (4 bytes, then 4
 * of padding), its entries (8), a count per slot (4 each), the ids (4
 * each) and the fragments (2 each), padded to 8 bytes.
 */
#define IMAGE_TABLE	((uint64_t)SHARDS * sizeof(uint64_t))
#define IMAGE_SHARD_HEAD	16

static uint64_t
image_shard_bytes(unsigned bits, uint64_t entries)
{
	uint64_t n = IMAGE_SHARD_HEAD + ((uint64_t)4 << bits) + 6 * entries;

	return (n + 7) & ~(uint64_t)7;
}

uint64_t
sketchidx_image_bytes(struct sketchidx *x)
{
	uint64_t n = IMAGE_TABLE;

	pthread_rwlock_rdlock(&x->lock);
	for (unsigned sh = 0; sh < SHARDS; sh++)
		n += image_shard_bytes(x->shards[sh].dir_bits,
		    x->shards[sh].entries);
	pthread_rwlock_unlock(&x->lock);
	return n;
}

static bool
image_shard_write(const struct shard *s, FILE *f)
{
	static const uint8_t zeros[8];
	size_t nb = (size_t)1 << s->dir_bits;
	uint32_t head[2] = { s->dir_bits, 0 };
	uint64_t pad = image_shard_bytes(s->dir_bits, s->entries) -
	    (IMAGE_SHARD_HEAD + 4 * nb + 6 * s->entries);
	bool ok = fwrite(head, sizeof(head), 1, f) == 1 &&
	    fwrite(&s->entries, sizeof(s->entries), 1, f) == 1;

	for (size_t j = 0; j < nb && ok; j++) {
		uint32_t n = s->dir[j] != NULL ? s->dir[j]->n : 0;

		ok = fwrite(&n, sizeof(n), 1, f) == 1;
	}
	for (size_t j = 0; j < nb && ok; j++)
		if (s->dir[j] != NULL)
			ok = fwrite(s->dir[j]->ids, sizeof(uint32_t),
			    s->dir[j]->n, f) == s->dir[j]->n;
	for (size_t j = 0; j < nb && ok; j++)
		if (s->dir[j] != NULL)
			ok = fwrite(frags(s->dir[j]), sizeof(uint16_t),
			    s->dir[j]->n, f) == s->dir[j]->n;
	return ok && fwrite(zeros, 1, pad, f) == pad;
}

int
sketchidx_image_write(struct sketchidx *x, FILE *f)
{
	uint64_t off = IMAGE_TABLE;
	bool ok = true;

	pthread_rwlock_rdlock(&x->lock);
	for (unsigned sh = 0; sh < SHARDS && ok; sh++) {
		ok = fwrite(&off, sizeof(off), 1, f) == 1;
		off += image_shard_bytes(x->shards[sh].dir_bits,
		    x->shards[sh].entries);
	}
	for (unsigned sh = 0; sh < SHARDS && ok; sh++)
		ok = image_shard_write(&x->shards[sh], f);
	pthread_rwlock_unlock(&x->lock);
	return ok ? 0 : -1;
}

/* An image's load shared by the threads that fill it, as a bulk load. */
struct image_load {
	struct sketchidx *x;
	const uint8_t *p;
	size_t len;
	unsigned next;		/* the next shard to take */
	int64_t bytes;		/* what the index grew by */
	const char *why;	/* the first failure, or NULL */
};

/* Fills shard s (just made) from the len bytes at p; NULL, or why not.
 * Adds what the shard grew by to *bytes. */
static const char *
image_shard_load(struct shard *s, const uint8_t *p, size_t len,
    int64_t *bytes)
{
	const uint8_t *count, *ids, *fr;
	struct bucket **dir;
	uint64_t entries, sum = 0, at = 0;
	uint32_t bits;
	size_t nb;

	if (len < IMAGE_SHARD_HEAD)
		return "damaged";
	memcpy(&bits, p, sizeof(bits));
	memcpy(&entries, p + 8, sizeof(entries));
	if (bits < DIR_MIN || bits > DIR_MAX || entries > len ||
	    image_shard_bytes(bits, entries) > len)
		return "damaged";
	nb = (size_t)1 << bits;
	count = p + IMAGE_SHARD_HEAD;
	ids = count + 4 * nb;
	fr = ids + 4 * entries;
	for (size_t j = 0; j < nb; j++) {
		uint32_t c;

		memcpy(&c, count + 4 * j, sizeof(c));
		sum += c;
	}
	if (sum != entries)
		return "damaged";
	if (entries == 0)
		return NULL;	/* the shard as made */
	if ((dir = calloc(nb, sizeof(*dir))) == NULL)
		return "out of memory";
	*bytes += (int64_t)(nb * sizeof(*dir));
	if (s->dir != empty_dir)
		*bytes -= (int64_t)(((size_t)1 << s->dir_bits) *
		    sizeof(*s->dir));
	dir_free(s->dir);
	s->dir = dir;
	s->dir_bits = bits;
	for (size_t j = 0; j < nb; j++) {
		uint32_t c;

		memcpy(&c, count + 4 * j, sizeof(c));
		if (c == 0)
			continue;
		if (c > UINT32_MAX / 2)
			return "damaged";
		/* As a bulk load makes them: room for a few more. */
		if ((dir[j] = bucket_resize(NULL, c + c / 16 + 1)) == NULL)
			return "out of memory";
		memcpy(dir[j]->ids, ids + 4 * at, 4 * (size_t)c);
		memcpy(frags(dir[j]), fr + 2 * at, 2 * (size_t)c);
		dir[j]->n = c;
		at += c;
		s->entries += c;
		*bytes += (int64_t)bucket_bytes(dir[j]);
	}
	return NULL;
}

static void *
image_load_run(void *arg)
{
	struct image_load *il = arg;
	int64_t bytes = 0;
	const char *why = NULL;
	unsigned sh;

	while (why == NULL && (sh = __atomic_fetch_add(&il->next, 1,
	    __ATOMIC_RELAXED)) < SHARDS && __atomic_load_n(&il->why,
	    __ATOMIC_RELAXED) == NULL) {
		uint64_t off, end = il->len;

		memcpy(&off, il->p + 8 * sh, sizeof(off));
		if (sh + 1 < SHARDS)
			memcpy(&end, il->p + 8 * (sh + 1), sizeof(end));
		if (off < IMAGE_TABLE || off > end || end > il->len)
			why = "damaged";
		else
			why = image_shard_load(&il->x->shards[sh], il->p + off,
			    end - off, &bytes);
	}
	__atomic_fetch_add(&il->bytes, bytes, __ATOMIC_RELAXED);
	if (why != NULL)
		__atomic_store_n(&il->why, why, __ATOMIC_RELAXED);
	return NULL;
}

int
sketchidx_image_load(struct sketchidx *x, const void *p, size_t len,
    unsigned threads, const char **why)
{
	struct image_load il = { x, p, len, 0, 0, NULL };

	if (len < IMAGE_TABLE || x->entries != 0) {
		*why = "damaged";
		return -1;
	}
	pthread_rwlock_wrlock(&x->lock);
	run_loaders(image_load_run, &il, threads);
	for (unsigned sh = 0; sh < SHARDS; sh++)
		x->entries += x->shards[sh].entries;
	x->bytes = (uint64_t)((int64_t)x->bytes + il.bytes);
	pthread_rwlock_unlock(&x->lock);
	*why = il.why;
	return il.why != NULL ? -1 : 0;
}

int
sketchidx_has(struct sketchidx *x, uint32_t id, uint32_t key)
{
	struct shard *s = shard_of(x, key);
	struct bucket *b;
	int found = 0;

	pthread_rwlock_rdlock(&x->lock);
	if ((b = s->dir[slot_of(s, key)]) != NULL)
		for (uint32_t e = 0; e < b->n && !found; e++)
			found = b->ids[e] == id && frags(b)[e] == FRAG(key);
	pthread_rwlock_unlock(&x->lock);
	return found;
}

uint64_t
sketchidx_entries(struct sketchidx *x)
{
	uint64_t n;

	pthread_rwlock_rdlock(&x->lock);
	n = x->entries;
	pthread_rwlock_unlock(&x->lock);
	return n;
}

uint64_t
sketchidx_memory_bytes(struct sketchidx *x)
{
	uint64_t n;

	pthread_rwlock_rdlock(&x->lock);
	n = sizeof(*x) + x->bytes;
	pthread_rwlock_unlock(&x->lock);
	return n;
}
