/*
 * nearidx: the near-duplicate index.  See nearidx.h for the layout, the
 * query and the thread rules; this file keeps the reasons for the details.
 *
 * Publication.  Readers load a table's directory, a directory slot and a
 * bucket's length with acquire loads; the writer stores them with release
 * stores after filling what they point to.  A published bucket's first len
 * entries never change, so a reader may scan them at leisure.
 *
 * Reclamation.  A replaced bucket or directory goes on the pending list.
 * Now and then the writer moves pending to waiting and flips the epoch; a
 * reader counts itself in its thread's slot under the parity of the epoch
 * it saw, so once every slot's count for the old parity is zero, no
 * reader can still hold anything on the waiting list and it is freed.  The
 * writer only looks, never waits.
 */
#include "nearidx.h"

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "log.h"
#include "nearidx_scan.h"

#define TOP16		0xffff000000000000ULL
#define READER_SLOTS	64		/* threads share a slot beyond this */
#define RECLAIM_BYTES	(4u << 20)	/* retired bytes that call a reclaim */
#define RECLAIM_EVERY	64		/* mutations between drain checks */
#define DIR_HUGE	(2u << 20)	/* directories this large get THP */

/* The pipeline of a batch: probes are prefetched this many queries (or
 * inserts) ahead, twice over: directory slots, then buckets. */
#define QUERY_AHEAD_PROBES	48

/*
 * A bucket.  Entries follow the header as three arrays sized by cap, which
 * never changes once the bucket is published: hi[cap], lo[cap] and, in
 * table 0, id[cap].
 */
struct block {
	uint32_t len;		/* entries published; atomic */
	uint32_t cap;
};

/* One version of a table's directory: 2^bits bucket pointers. */
struct dir {
	unsigned bits;
	size_t bytes;		/* of slot */
	int mapped;		/* slot is mmap'ed, not malloc'ed */
	struct block **slot;	/* atomic pointers; NULL: empty bucket */
};

/*
 * A bit permutation as a few masked shifts: the blocks that move by the
 * same amount move together, so b = 4 needs at most 3 steps.
 */
struct perm {
	unsigned n;
	uint64_t mask[NEARIDX_MAX_TABLES];
	uint8_t left[NEARIDX_MAX_TABLES];
	uint8_t right[NEARIDX_MAX_TABLES];
};

struct table {
	struct dir *dir;	/* current version; atomic */
	unsigned key_bits;	/* width of the key blocks */
	unsigned max_bits;	/* directory bits allowed */
	uint64_t key_blocks;	/* bit j: block j is part of the key */
	uint64_t count;		/* entries; written by the writer only */
	uint64_t grow_at;	/* count at which the directory doubles */
	struct perm fwd;	/* fingerprint -> key-first order */
	struct perm inv;
};

struct reader_slot {
	uint64_t active[2];	/* readers inside, by epoch parity */
	char pad[64 - 2 * sizeof(uint64_t)];
};

enum retired_kind { RETIRED_MALLOC, RETIRED_MMAP };

struct retired {
	void *p;
	size_t bytes;		/* as counted in nearidx.bytes */
	enum retired_kind kind;
};

struct retire_list {
	struct retired *v;
	size_t n, cap;
	uint64_t bytes;
};

struct nearidx {
	unsigned k;
	unsigned b;
	unsigned ntables;
	unsigned width[64];	/* bits of block j */
	uint64_t bmask[64];	/* block j's bits in the fingerprint */
	struct table *t;
	const struct nearidx_kernel *kern;
	struct reader_slot *slots;
	uint64_t epoch;		/* atomic */
	struct retire_list pending;
	struct retire_list waiting;
	unsigned waiting_parity;
	unsigned since_reclaim;
	uint64_t docs;		/* atomic: written by the writer */
	uint64_t distinct;	/* atomic */
	uint64_t bytes;		/* atomic: dirs, buckets, retired */
	unsigned load;		/* mean bucket length that doubles a dir */
	size_t ahead;		/* queries prefetched ahead in a batch */
};

struct sink {
	struct nearidx_hit *out;
	size_t max;
	size_t n;
	uint64_t total;
};

/* Hits of one bucket, in the order the kernel found them. */
struct cands {
	uint32_t idx[NEARIDX_SCAN_OUT];
};

static __thread unsigned tls_slot;	/* reader slot + 1; 0: none yet */
static unsigned next_slot;

/* ---- memory ---- */

static size_t
alloc_size(void *p)
{
#ifdef __GLIBC__
	/* What the allocator really holds: usable size and its header. */
	return malloc_usable_size(p) + sizeof(size_t);
#else
	(void)p;
	return 0;
#endif
}

static void
bytes_add(struct nearidx *x, int64_t delta)
{
	__atomic_store_n(&x->bytes, x->bytes + (uint64_t)delta,
	    __ATOMIC_RELAXED);
}

static size_t
block_size(uint32_t cap, int ids)
{
	return sizeof(struct block) + (size_t)cap * (ids ? 10 : 6);
}

static uint32_t *
blk_hi(const struct block *bk)
{
	return (uint32_t *)(uintptr_t)(bk + 1);
}

static uint16_t *
blk_lo(const struct block *bk)
{
	return (uint16_t *)(blk_hi(bk) + bk->cap);
}

static uint32_t *
blk_id(const struct block *bk)
{
	return (uint32_t *)(blk_lo(bk) + bk->cap);
}

/* Room for len entries and growth: an eighth more, at least 4, rounded so
 * that the arrays stay 4-byte aligned.  Bulk loads leave half that. */
static uint32_t
cap_grow(uint64_t len)
{
	uint64_t c = (len + len / 8 + 4 + 3) & ~(uint64_t)3;

	return c > UINT32_MAX - 3 ? UINT32_MAX - 3 : (uint32_t)c;
}

static uint32_t
cap_bulk(uint64_t len)
{
	uint64_t c = (len + len / 16 + 2 + 3) & ~(uint64_t)3;

	return c > UINT32_MAX - 3 ? UINT32_MAX - 3 : (uint32_t)c;
}

static struct block *
block_new(struct nearidx *x, uint32_t cap, int ids)
{
	struct block *bk;

	if ((bk = malloc(block_size(cap, ids))) == NULL)
		return NULL;
	bk->len = 0;
	bk->cap = cap;
	bytes_add(x, (int64_t)alloc_size(bk));
	return bk;
}

static void
block_free(struct nearidx *x, struct block *bk)
{
	if (bk == NULL)
		return;
	bytes_add(x, -(int64_t)alloc_size(bk));
	free(bk);
}

/* Copies entries [from, to) of src to dst at position at. */
static void
block_copy(struct block *dst, uint32_t at, const struct block *src,
    uint32_t from, uint32_t to, int ids)
{
	uint32_t n = to - from;

	memcpy(blk_hi(dst) + at, blk_hi(src) + from, n * sizeof(uint32_t));
	memcpy(blk_lo(dst) + at, blk_lo(src) + from, n * sizeof(uint16_t));
	if (ids)
		memcpy(blk_id(dst) + at, blk_id(src) + from,
		    n * sizeof(uint32_t));
}

static struct dir *
dir_new(struct nearidx *x, unsigned bits)
{
	struct dir *d;
	size_t bytes = sizeof(struct block *) << bits;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return NULL;
	d->bits = bits;
	if (bytes >= DIR_HUGE) {
		/* Random probes into a large directory miss the TLB far less
		 * often on huge pages. */
		bytes = (bytes + DIR_HUGE - 1) & ~(size_t)(DIR_HUGE - 1);
		d->slot = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (d->slot == MAP_FAILED) {
			free(d);
			return NULL;
		}
		madvise(d->slot, bytes, MADV_HUGEPAGE);
		d->mapped = 1;
	} else if ((d->slot = calloc(1, bytes)) == NULL) {
		free(d);
		return NULL;
	}
	d->bytes = bytes;
	bytes_add(x, (int64_t)(bytes + alloc_size(d)));
	return d;
}

/* Frees a directory and, if blocks_too, every bucket it points to. */
static void
dir_free(struct nearidx *x, struct dir *d, int blocks_too)
{
	if (d == NULL)
		return;
	if (blocks_too)
		for (size_t s = 0; s < (size_t)1 << d->bits; s++)
			block_free(x, d->slot[s]);
	bytes_add(x, -(int64_t)(d->bytes + alloc_size(d)));
	if (d->mapped)
		munmap(d->slot, d->bytes);
	else
		free(d->slot);
	free(d);
}

/* ---- reclamation ---- */

static void
retire(struct nearidx *x, void *p, size_t bytes, enum retired_kind kind)
{
	struct retire_list *l = &x->pending;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct retired *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL) {
			/* Without room to remember it, the memory leaks: a
			 * reader may still be looking at it. */
			log_warnx("%s: out of memory; %zu bytes leaked",
			    __func__, bytes);
			bytes_add(x, -(int64_t)bytes);
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct retired){ p, bytes, kind };
	l->bytes += bytes;
}

static void
retire_block(struct nearidx *x, struct block *bk)
{
	if (bk != NULL)
		retire(x, bk, alloc_size(bk), RETIRED_MALLOC);
}

static void
retire_dir(struct nearidx *x, struct dir *d)
{
	retire(x, d->slot, d->bytes, d->mapped ? RETIRED_MMAP :
	    RETIRED_MALLOC);
	retire(x, d, alloc_size(d), RETIRED_MALLOC);
}

static void
retire_list_free(struct nearidx *x, struct retire_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		bytes_add(x, -(int64_t)l->v[i].bytes);
		if (l->v[i].kind == RETIRED_MMAP)
			munmap(l->v[i].p, l->v[i].bytes);
		else
			free(l->v[i].p);
	}
	l->n = 0;
	l->bytes = 0;
}

/* Frees the waiting list if no reader of its epoch is left, then starts
 * the next grace period for what is pending.  Never waits. */
static void
reclaim_step(struct nearidx *x)
{
	struct retire_list tmp;

	x->since_reclaim = 0;
	if (x->waiting.n > 0) {
		for (unsigned s = 0; s < READER_SLOTS; s++)
			if (__atomic_load_n(&x->slots[s].active[
			    x->waiting_parity], __ATOMIC_SEQ_CST) != 0)
				return;
		retire_list_free(x, &x->waiting);
	}
	if (x->pending.n == 0)
		return;
	tmp = x->waiting;
	x->waiting = x->pending;
	x->pending = tmp;
	x->waiting_parity = (unsigned)(x->epoch & 1);
	__atomic_store_n(&x->epoch, x->epoch + 1, __ATOMIC_SEQ_CST);
}

static void
reclaim_maybe(struct nearidx *x)
{
	if (x->pending.n == 0 && x->waiting.n == 0)
		return;
	if (x->pending.bytes + x->waiting.bytes >= RECLAIM_BYTES ||
	    ++x->since_reclaim >= RECLAIM_EVERY)
		reclaim_step(x);
}

uint64_t
nearidx_reclaim(struct nearidx *x)
{
	/* Twice: the first may only start the grace period of what is
	 * pending, the second then frees it if no query is running. */
	reclaim_step(x);
	reclaim_step(x);
	return x->pending.bytes + x->waiting.bytes;
}

static struct reader_slot *
reader_enter(const struct nearidx *x, unsigned *parity)
{
	struct reader_slot *rs;
	unsigned s = tls_slot;

	if (s == 0) {
		s = __atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) %
		    READER_SLOTS + 1;
		tls_slot = s;
	}
	rs = &x->slots[s - 1];
	for (;;) {
		uint64_t e = __atomic_load_n(&x->epoch, __ATOMIC_SEQ_CST);

		__atomic_fetch_add(&rs->active[e & 1], 1, __ATOMIC_SEQ_CST);
		/* Had the writer flipped meanwhile, it might have checked
		 * this parity before the count went up. */
		if (__atomic_load_n(&x->epoch, __ATOMIC_SEQ_CST) == e) {
			*parity = (unsigned)(e & 1);
			return rs;
		}
		__atomic_fetch_sub(&rs->active[e & 1], 1, __ATOMIC_RELEASE);
	}
}

static void
reader_exit(struct reader_slot *rs, unsigned parity)
{
	__atomic_fetch_sub(&rs->active[parity], 1, __ATOMIC_RELEASE);
}

/* ---- configuration and layout ---- */

void
nearidx_config_defaults(struct nearidx_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->k = NEARIDX_DEFAULT_K;
	cfg->blocks = NEARIDX_DEFAULT_BLOCKS;
	cfg->bucket_load = NEARIDX_LOAD_MAX;
	cfg->simd = "auto";
}

static uint64_t
binomial(unsigned n, unsigned r)
{
	uint64_t c = 1;

	/* Exact at every step; stops once past any limit we accept. */
	for (unsigned i = 1; i <= r; i++) {
		c = c * (n - r + i) / i;
		if (c > (uint64_t)1 << 40)
			return c;
	}
	return c;
}

int
nearidx_config_check(const struct nearidx_config *cfg, char **cause)
{
	const struct nearidx_kernel *kern;
	unsigned b = cfg->blocks, k = cfg->k, key_bits;
	uint64_t tables;

	*cause = NULL;
	if (b < 2 || b > 64) {
		if (asprintf(cause, "blocks = %u: must be between 2 and 64",
		    b) == -1)
			*cause = NULL;
		return -1;
	}
	if (k < 1 || k >= b) {
		if (asprintf(cause, "k = %u with %u blocks: k must be at "
		    "least 1 and below the number of blocks", k, b) == -1)
			*cause = NULL;
		return -1;
	}
	/* The narrowest key: the b - k last blocks, the narrow ones. */
	key_bits = (b - k) * (64 / b);
	if (64 % b > k)
		key_bits += 64 % b - k;
	if (key_bits < NEARIDX_MIN_KEY_BITS) {
		if (asprintf(cause, "k = %u with %u blocks keys tables on %u "
		    "bits; at least %u are needed (use fewer blocks or a "
		    "smaller k)", k, b, key_bits, NEARIDX_MIN_KEY_BITS) == -1)
			*cause = NULL;
		return -1;
	}
	if (cfg->bucket_load > 65536) {
		if (asprintf(cause, "bucket load %u: at most 65536",
		    cfg->bucket_load) == -1)
			*cause = NULL;
		return -1;
	}
	tables = binomial(b, k);
	if (tables > NEARIDX_MAX_TABLES) {
		if (asprintf(cause, "k = %u with %u blocks needs %llu tables; "
		    "at most %u are supported", k, b,
		    (unsigned long long)tables, NEARIDX_MAX_TABLES) == -1)
			*cause = NULL;
		return -1;
	}
	if ((kern = nearidx_kernel_lookup(cfg->simd, cause)) == NULL)
		return -1;
	return 0;
}

/* Builds the masked shifts moving the blocks in order[] to consecutive
 * places from the top; with inverse set, the moves back. */
static void
perm_build(struct perm *p, const struct nearidx *x, const unsigned *order,
    int inverse)
{
	unsigned dst = 64;

	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < x->b; i++) {
		unsigned j = order[i], src = 64, w = x->width[j];
		uint64_t mask;
		int delta;
		unsigned m;

		for (unsigned jj = 0; jj <= j; jj++)
			src -= x->width[jj];
		dst -= w;
		/* Forward: block j moves from src to dst. */
		mask = x->bmask[j];
		delta = (int)dst - (int)src;
		if (inverse) {
			mask = w == 64 ? ~0ULL : ((1ULL << w) - 1) << dst;
			delta = -delta;
		}
		for (m = 0; m < p->n; m++)
			if ((int)p->left[m] - (int)p->right[m] == delta)
				break;
		if (m == p->n) {
			p->n++;
			p->left[m] = (uint8_t)(delta > 0 ? delta : 0);
			p->right[m] = (uint8_t)(delta < 0 ? -delta : 0);
		}
		p->mask[m] |= mask;
	}
}

static inline uint64_t
perm_apply(const struct perm *p, uint64_t v)
{
	uint64_t r = 0;

	for (unsigned m = 0; m < p->n; m++)
		r |= ((v & p->mask[m]) << p->left[m]) >> p->right[m];
	return r;
}

/* Directory bits for n entries: buckets average at most x->load. */
static unsigned
bits_for(const struct nearidx *x, const struct table *t, uint64_t n)
{
	unsigned bits = NEARIDX_MIN_KEY_BITS;

	while (bits < t->max_bits && n > ((uint64_t)x->load << bits))
		bits++;
	return bits;
}

static uint64_t
grow_at(const struct nearidx *x, const struct table *t, unsigned bits)
{
	return bits < t->max_bits ? (uint64_t)x->load << bits : UINT64_MAX;
}

struct nearidx *
nearidx_new(const struct nearidx_config *cfg, char **cause)
{
	struct nearidx *x = NULL;
	unsigned key[64], order[64], nkey, r;

	if (nearidx_config_check(cfg, cause) == -1)
		return NULL;
	if ((x = calloc(1, sizeof(*x))) == NULL)
		goto err;
	x->k = cfg->k;
	x->b = cfg->blocks;
	x->load = cfg->bucket_load ? cfg->bucket_load : NEARIDX_LOAD_MAX;
	x->ntables = (unsigned)binomial(x->b, x->k);
	x->kern = nearidx_kernel_lookup(cfg->simd, cause);
	for (unsigned j = 0, top = 64; j < x->b; j++) {
		x->width[j] = 64 / x->b + (j < 64 % x->b);
		top -= x->width[j];
		x->bmask[j] = (x->width[j] == 64 ? ~0ULL :
		    (1ULL << x->width[j]) - 1) << top;
	}
	x->ahead = QUERY_AHEAD_PROBES / x->ntables;
	if (x->ahead < 1)
		x->ahead = 1;
	x->slots = aligned_alloc(64, READER_SLOTS * sizeof(*x->slots));
	x->t = calloc(x->ntables, sizeof(*x->t));
	if (x->slots == NULL || x->t == NULL)
		goto err;
	memset(x->slots, 0, READER_SLOTS * sizeof(*x->slots));
	bytes_add(x, (int64_t)(sizeof(*x) + READER_SLOTS *
	    sizeof(*x->slots) + x->ntables * sizeof(*x->t)));

	/* Key block sets in lexicographic order. */
	nkey = x->b - x->k;
	for (unsigned i = 0; i < nkey; i++)
		key[i] = i;
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		struct table *t = &x->t[ti];
		unsigned n = 0;

		t->key_blocks = 0;
		for (unsigned i = 0; i < nkey; i++) {
			t->key_blocks |= 1ULL << key[i];
			t->key_bits += x->width[key[i]];
			order[n++] = key[i];
		}
		for (unsigned j = 0; j < x->b; j++)
			if (!(t->key_blocks & (1ULL << j)))
				order[n++] = j;
		perm_build(&t->fwd, x, order, 0);
		perm_build(&t->inv, x, order, 1);
		t->max_bits = t->key_bits < NEARIDX_MAX_DIR_BITS ?
		    t->key_bits : NEARIDX_MAX_DIR_BITS;
		if ((t->dir = dir_new(x, bits_for(x, t, cfg->expected))) == NULL)
			goto err;
		t->grow_at = grow_at(x, t, t->dir->bits);

		/* Next combination. */
		for (r = nkey; r > 0 && key[r - 1] == x->b - nkey + r - 1; r--)
			;
		if (r == 0)
			break;
		key[r - 1]++;
		for (unsigned i = r; i < nkey; i++)
			key[i] = key[i - 1] + 1;
	}
	return x;

err:
	nearidx_free(x);
	if (*cause == NULL && asprintf(cause, "out of memory") == -1)
		*cause = NULL;
	return NULL;
}

void
nearidx_free(struct nearidx *x)
{
	if (x == NULL)
		return;
	retire_list_free(x, &x->waiting);
	retire_list_free(x, &x->pending);
	free(x->waiting.v);
	free(x->pending.v);
	if (x->t != NULL)
		for (unsigned ti = 0; ti < x->ntables; ti++)
			dir_free(x, x->t[ti].dir, 1);
	free(x->t);
	free(x->slots);
	free(x);
}

unsigned
nearidx_tables(const struct nearidx *x)
{
	return x->ntables;
}

unsigned
nearidx_blocks(const struct nearidx *x)
{
	return x->b;
}

const char *
nearidx_simd(const struct nearidx *x)
{
	return x->kern->name;
}

uint64_t
nearidx_count(const struct nearidx *x)
{
	return __atomic_load_n(&x->docs, __ATOMIC_RELAXED);
}

uint64_t
nearidx_distinct(const struct nearidx *x)
{
	return __atomic_load_n(&x->distinct, __ATOMIC_RELAXED);
}

uint64_t
nearidx_memory_bytes(const struct nearidx *x)
{
	return __atomic_load_n(&x->bytes, __ATOMIC_RELAXED);
}

/* ---- hits ---- */

static int
hit_less(const struct nearidx_hit *a, const struct nearidx_hit *b)
{
	return a->distance < b->distance ||
	    (a->distance == b->distance && a->doc_id < b->doc_id);
}

/* Max-heap on (distance, doc_id): the root is the worst hit kept. */
static void
heap_down(struct nearidx_hit *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		struct nearidx_hit tmp;

		if (l < n && hit_less(&h[m], &h[l]))
			m = l;
		if (l + 1 < n && hit_less(&h[m], &h[l + 1]))
			m = l + 1;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

static void
sink_push(struct sink *s, unsigned distance, uint64_t id, uint64_t fp)
{
	struct nearidx_hit h = { .doc_id = id, .fp = fp, .distance = distance };

	s->total++;
	if (s->n < s->max) {
		s->out[s->n++] = h;
		if (s->n == s->max)
			for (size_t i = s->n / 2; i-- > 0;)
				heap_down(s->out, s->n, i);
	} else if (s->max > 0 && hit_less(&h, &s->out[0])) {
		s->out[0] = h;
		heap_down(s->out, s->n, 0);
	}
}

static int
hit_cmp(const void *a, const void *b)
{
	if (hit_less(a, b))
		return -1;
	return hit_less(b, a);
}

static void
sink_finish(struct sink *s)
{
	if (s->n <= 16) {
		for (size_t i = 1; i < s->n; i++) {
			struct nearidx_hit h = s->out[i];
			size_t j = i;

			for (; j > 0 && hit_less(&h, &s->out[j - 1]); j--)
				s->out[j] = s->out[j - 1];
			s->out[j] = h;
		}
	} else
		qsort(s->out, s->n, sizeof(*s->out), hit_cmp);
}

/* ---- reading ---- */

static const struct block *
bucket_of(const struct table *t, uint64_t p)
{
	const struct dir *d = __atomic_load_n(&t->dir, __ATOMIC_ACQUIRE);

	return __atomic_load_n(&d->slot[p >> (64 - d->bits)],
	    __ATOMIC_ACQUIRE);
}

/* Reports the documents with fingerprint fp, found through another table:
 * table 0 has their ids. */
static void
report_ids(const struct nearidx *x, uint64_t fp, unsigned distance,
    struct sink *s)
{
	const struct block *bk;
	uint64_t p = perm_apply(&x->t[0].fwd, fp);
	struct cands c;
	size_t from = 0, n;

	if ((bk = bucket_of(&x->t[0], p)) == NULL)
		return;
	n = __atomic_load_n(&bk->len, __ATOMIC_ACQUIRE);
	while (from < n) {
		size_t got = x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, 0, c.idx);

		for (size_t i = 0; i < got; i++)
			sink_push(s, distance, blk_id(bk)[c.idx[i]], fp);
	}
}

/* The first table keyed by blocks that the two fingerprints share. */
static unsigned
first_table(const struct nearidx *x, uint64_t diff)
{
	uint64_t equal = 0;

	for (unsigned j = 0; j < x->b; j++)
		if ((diff & x->bmask[j]) == 0)
			equal |= 1ULL << j;
	for (unsigned ti = 0; ti < x->ntables; ti++)
		if ((x->t[ti].key_blocks & ~equal) == 0)
			return ti;
	return x->ntables;
}

/* Scans one bucket of table ti for query fp (permuted: p). */
static void
probe_scan(const struct nearidx *x, unsigned ti, const struct block *bk,
    uint64_t fp, uint64_t p, unsigned kq, struct sink *s)
{
	const struct table *t = &x->t[ti];
	struct cands c;
	size_t from = 0, n = __atomic_load_n(&bk->len, __ATOMIC_ACQUIRE);

	while (from < n) {
		size_t got = x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, kq, c.idx);

		for (size_t i = 0; i < got; i++) {
			uint32_t e = c.idx[i];
			uint64_t pc = (p & TOP16) |
			    (uint64_t)blk_hi(bk)[e] << 16 | blk_lo(bk)[e];
			uint64_t fc = perm_apply(&t->inv, pc);
			unsigned dist = (unsigned)__builtin_popcountll(fp ^ fc);

			/* Found in every table whose key it shares with the
			 * query; reported by the first only. */
			if (first_table(x, fp ^ fc) != ti)
				continue;
			if (ti == 0)
				sink_push(s, dist, blk_id(bk)[e], fc);
			else
				report_ids(x, fc, dist, s);
		}
	}
}

/*
 * One query in flight in a batch: stage 1 prefetches its directory slots,
 * stage 2 loads the bucket pointers and prefetches the buckets, stage 3
 * scans.
 */
struct inflight {
	uint64_t fp;
	uint64_t p[NEARIDX_MAX_TABLES];
	struct block *const *slotp[NEARIDX_MAX_TABLES];
	const struct block *bk[NEARIDX_MAX_TABLES];
};

static void
stage_slots(const struct nearidx *x, struct inflight *q, uint64_t fp)
{
	q->fp = fp;
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct table *t = &x->t[ti];
		const struct dir *d = __atomic_load_n(&t->dir,
		    __ATOMIC_ACQUIRE);
		uint64_t p = perm_apply(&t->fwd, fp);

		q->p[ti] = p;
		q->slotp[ti] = &d->slot[p >> (64 - d->bits)];
		__builtin_prefetch(q->slotp[ti]);
	}
}

static void
stage_buckets(const struct nearidx *x, struct inflight *q)
{
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct block *bk = __atomic_load_n(q->slotp[ti],
		    __ATOMIC_ACQUIRE);

		q->bk[ti] = bk;
		if (bk != NULL) {
			__builtin_prefetch(bk);
			__builtin_prefetch((const char *)bk + 64);
		}
	}
}

static void
stage_scan(const struct nearidx *x, struct inflight *q, unsigned kq,
    struct sink *s)
{
	for (unsigned ti = 0; ti < x->ntables; ti++)
		if (q->bk[ti] != NULL)
			probe_scan(x, ti, q->bk[ti], q->fp, q->p[ti], kq, s);
	sink_finish(s);
}

int64_t
nearidx_query(const struct nearidx *x, uint64_t fp, unsigned kq,
    struct nearidx_hit *out, size_t max)
{
	struct reader_slot *rs;
	struct inflight q;
	struct sink s = { .out = out, .max = max };
	unsigned parity;

	if (kq > x->k)
		return -1;
	rs = reader_enter(x, &parity);
	stage_slots(x, &q, fp);
	stage_buckets(x, &q);
	stage_scan(x, &q, kq, &s);
	reader_exit(rs, parity);
	return (int64_t)s.total;
}

#define RING 32		/* > 2 * the largest x->ahead */

int
nearidx_query_batch(const struct nearidx *x, const uint64_t *fps, size_t n,
    unsigned kq, struct nearidx_hit *out, size_t max_per, uint64_t *totals)
{
	struct inflight *ring;
	struct reader_slot *rs;
	size_t a = x->ahead < RING / 2 ? x->ahead : RING / 2 - 1;
	unsigned parity;

	if (kq > x->k)
		return -1;
	if (n == 0)
		return 0;
	/* 2 KiB per query in flight: on the heap, once per batch. */
	if ((ring = malloc(RING * sizeof(*ring))) == NULL) {
		for (size_t i = 0; i < n; i++) {
			int64_t r = nearidx_query(x, fps[i], kq,
			    out + i * max_per, max_per);

			totals[i] = (uint64_t)r;
		}
		return 0;
	}
	rs = reader_enter(x, &parity);
	for (size_t i = 0; i < n + 2 * a; i++) {
		if (i < n)
			stage_slots(x, &ring[i % RING], fps[i]);
		if (i >= a && i - a < n)
			stage_buckets(x, &ring[(i - a) % RING]);
		if (i >= 2 * a) {
			size_t j = i - 2 * a;
			struct sink s = { .out = out + j * max_per,
			    .max = max_per };

			stage_scan(x, &ring[j % RING], kq, &s);
			totals[j] = s.total;
		}
	}
	reader_exit(rs, parity);
	free(ring);
	return 0;
}

/* ---- writing ---- */

/* Index of the first entry of bk equal to p's low 48 bits with id (any id
 * if id is UINT64_MAX), or -1; *same counts the entries equal to p. */
static int64_t
block_find(const struct nearidx *x, const struct block *bk, uint64_t p,
    uint64_t id, size_t *same)
{
	struct cands c;
	size_t from = 0, n = bk->len;
	int64_t found = -1;

	*same = 0;
	while (from < n) {
		size_t got = x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, 0, c.idx);

		*same += got;
		for (size_t i = 0; i < got && found < 0; i++)
			if (id == UINT64_MAX || blk_id(bk)[c.idx[i]] == id)
				found = c.idx[i];
	}
	return found;
}

/* Whether bk holds p's fingerprint at all; stops at the first. */
static int
block_has(const struct nearidx *x, const struct block *bk, uint64_t p)
{
	struct cands c;
	size_t from = 0, n = bk->len;

	while (from < n)
		if (x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, 0, c.idx) > 0)
			return 1;
	return 0;
}

static void
entry_set(struct block *bk, uint32_t i, uint64_t p, uint32_t id, int ids)
{
	blk_hi(bk)[i] = (uint32_t)(p >> 16);
	blk_lo(bk)[i] = (uint16_t)p;
	if (ids)
		blk_id(bk)[i] = id;
}

/* Splits the directory of table ti in two per bucket: the writer copies
 * the table once; readers go on with the old one meanwhile. */
static int
table_double(struct nearidx *x, unsigned ti)
{
	struct table *t = &x->t[ti];
	struct dir *od = t->dir, *nd;
	unsigned bit = 63 - od->bits;	/* the new bit: within the 48 */
	int ids = ti == 0;

	if ((nd = dir_new(x, od->bits + 1)) == NULL)
		goto err;
	for (size_t s = 0; s < (size_t)1 << od->bits; s++) {
		const struct block *ob = od->slot[s];
		struct block *half[2] = { NULL, NULL };
		uint32_t cnt[2] = { 0, 0 };

		if (ob == NULL)
			continue;
		for (uint32_t i = 0; i < ob->len; i++) {
			uint64_t low = (uint64_t)blk_hi(ob)[i] << 16 |
			    blk_lo(ob)[i];

			cnt[low >> bit & 1]++;
		}
		for (int h = 0; h < 2; h++)
			if (cnt[h] > 0 &&
			    (half[h] = block_new(x, cap_grow(cnt[h]), ids)) ==
			    NULL)
				goto err;
		for (uint32_t i = 0; i < ob->len; i++) {
			uint64_t low = (uint64_t)blk_hi(ob)[i] << 16 |
			    blk_lo(ob)[i];
			struct block *dst = half[low >> bit & 1];

			entry_set(dst, dst->len++, low,
			    ids ? blk_id(ob)[i] : 0, ids);
		}
		nd->slot[2 * s] = half[0];
		nd->slot[2 * s + 1] = half[1];
	}
	__atomic_store_n(&t->dir, nd, __ATOMIC_RELEASE);
	t->grow_at = grow_at(x, t, nd->bits);
	for (size_t s = 0; s < (size_t)1 << od->bits; s++)
		retire_block(x, od->slot[s]);
	retire_dir(x, od);
	return 0;

err:
	/* Leave the table as it is and try again when it has doubled. */
	dir_free(x, nd, 1);
	t->grow_at = t->grow_at < UINT64_MAX / 2 ? t->grow_at * 2 :
	    UINT64_MAX;
	return -1;
}

/* Appends entry p (and id in table 0) to bucket *slotp, in place when
 * there is room, else in a copy: fresh, allocated by the caller. */
static void
bucket_append(struct nearidx *x, struct block **slotp, struct block *fresh,
    uint64_t p, uint32_t id, int ids)
{
	struct block *bk = *slotp;

	if (fresh == NULL) {
		entry_set(bk, bk->len, p, id, ids);
		__atomic_store_n(&bk->len, bk->len + 1, __ATOMIC_RELEASE);
		return;
	}
	if (bk != NULL)
		block_copy(fresh, 0, bk, 0, bk->len, ids);
	fresh->len = bk != NULL ? bk->len : 0;
	entry_set(fresh, fresh->len++, p, id, ids);
	__atomic_store_n(slotp, fresh, __ATOMIC_RELEASE);
	retire_block(x, bk);
}

static struct block **
slot_of(struct table *t, uint64_t p)
{
	return &t->dir->slot[p >> (64 - t->dir->bits)];
}

int
nearidx_insert(struct nearidx *x, uint64_t fp, uint64_t doc_id)
{
	struct block *fresh[NEARIDX_MAX_TABLES];
	struct block **slotp[NEARIDX_MAX_TABLES];
	uint64_t p[NEARIDX_MAX_TABLES];
	unsigned n, ti;

	if (doc_id > NEARIDX_MAX_DOC_ID)
		return -1;
	p[0] = perm_apply(&x->t[0].fwd, fp);
	slotp[0] = slot_of(&x->t[0], p[0]);
	/* A fingerprint already stored goes to table 0 only. */
	n = *slotp[0] != NULL && block_has(x, *slotp[0], p[0]) ? 1 :
	    x->ntables;
	for (ti = 1; ti < n; ti++) {
		p[ti] = perm_apply(&x->t[ti].fwd, fp);
		slotp[ti] = slot_of(&x->t[ti], p[ti]);
	}
	/* Every allocation first, so that a failure changes nothing. */
	for (ti = 0; ti < n; ti++) {
		struct block *bk = *slotp[ti];

		fresh[ti] = NULL;
		if (bk != NULL && bk->len < bk->cap)
			continue;
		if (bk != NULL && bk->len >= UINT32_MAX - 4)
			goto err;
		fresh[ti] = block_new(x, cap_grow(bk != NULL ?
		    (uint64_t)bk->len + 1 : 1), ti == 0);
		if (fresh[ti] == NULL)
			goto err;
	}
	for (ti = 0; ti < n; ti++)
		bucket_append(x, slotp[ti], fresh[ti], p[ti],
		    (uint32_t)doc_id, ti == 0);
	__atomic_store_n(&x->docs, x->docs + 1, __ATOMIC_RELAXED);
	if (n > 1)
		__atomic_store_n(&x->distinct, x->distinct + 1,
		    __ATOMIC_RELAXED);
	for (ti = 0; ti < n; ti++)
		if (++x->t[ti].count > x->t[ti].grow_at)
			table_double(x, ti);
	reclaim_maybe(x);
	return 0;

err:
	while (ti-- > 0)
		block_free(x, fresh[ti]);
	return -1;
}

size_t
nearidx_insert_batch(struct nearidx *x, const uint64_t *fps,
    const uint64_t *doc_ids, size_t n)
{
	size_t a = x->ahead;

	/* Prefetch only: every insert rereads the index, so the ones in
	 * between never leave it a stale pointer. */
	for (size_t i = 0; i < n; i++) {
		if (i + 2 * a < n)
			for (unsigned ti = 0; ti < x->ntables; ti++)
				__builtin_prefetch(slot_of(&x->t[ti],
				    perm_apply(&x->t[ti].fwd, fps[i + 2 * a])));
		if (i + a < n)
			for (unsigned ti = 0; ti < x->ntables; ti++) {
				const struct block *bk = *slot_of(&x->t[ti],
				    perm_apply(&x->t[ti].fwd, fps[i + a]));

				if (bk != NULL)
					__builtin_prefetch(bk);
			}
		if (nearidx_insert(x, fps[i], doc_ids[i]) == -1)
			return i;
	}
	return n;
}

/* Publishes a copy of *slotp without entry e (or no bucket, if it was the
 * last); fresh was allocated by the caller, NULL when len is 1. */
static void
bucket_remove(struct nearidx *x, struct block **slotp, struct block *fresh,
    uint32_t e, int ids)
{
	struct block *bk = *slotp;

	if (fresh != NULL) {
		block_copy(fresh, 0, bk, 0, e, ids);
		block_copy(fresh, e, bk, e + 1, bk->len, ids);
		fresh->len = bk->len - 1;
	}
	__atomic_store_n(slotp, fresh, __ATOMIC_RELEASE);
	retire_block(x, bk);
}

int
nearidx_delete(struct nearidx *x, uint64_t fp, uint64_t doc_id)
{
	struct block *fresh[NEARIDX_MAX_TABLES];
	struct block **slotp[NEARIDX_MAX_TABLES];
	int64_t e[NEARIDX_MAX_TABLES];
	unsigned n, ti;
	size_t same;
	uint64_t p;

	if (doc_id > NEARIDX_MAX_DOC_ID)
		return 0;
	p = perm_apply(&x->t[0].fwd, fp);
	slotp[0] = slot_of(&x->t[0], p);
	if (*slotp[0] == NULL ||
	    (e[0] = block_find(x, *slotp[0], p, doc_id, &same)) < 0)
		return 0;
	/* The last document with this fingerprint takes it out of the
	 * other tables too. */
	n = same == 1 ? x->ntables : 1;
	for (ti = 1; ti < n; ti++) {
		size_t one;

		p = perm_apply(&x->t[ti].fwd, fp);
		slotp[ti] = slot_of(&x->t[ti], p);
		if (*slotp[ti] == NULL || (e[ti] = block_find(x, *slotp[ti],
		    p, UINT64_MAX, &one)) < 0 || one != 1)
			fatalx("%s: table %u does not hold %016llx once",
			    __func__, ti, (unsigned long long)fp);
	}
	for (ti = 0; ti < n; ti++) {
		uint32_t len = (*slotp[ti])->len;

		fresh[ti] = NULL;
		if (len > 1 && (fresh[ti] = block_new(x, cap_grow(len - 1),
		    ti == 0)) == NULL)
			goto err;
	}
	for (ti = 0; ti < n; ti++) {
		bucket_remove(x, slotp[ti], fresh[ti], (uint32_t)e[ti],
		    ti == 0);
		x->t[ti].count--;
	}
	__atomic_store_n(&x->docs, x->docs - 1, __ATOMIC_RELAXED);
	if (n > 1)
		__atomic_store_n(&x->distinct, x->distinct - 1,
		    __ATOMIC_RELAXED);
	reclaim_maybe(x);
	return 1;

err:
	while (ti-- > 0)
		block_free(x, fresh[ti]);
	return -1;
}

/* ---- bulk load ---- */

static void
sort_u64(uint64_t *v, size_t n)
{
	/* Quicksort, median of three, insertion sort below 16; the
	 * smaller side recursed, so the stack stays logarithmic. */
	while (n > 16) {
		uint64_t a = v[0], b = v[n / 2], c = v[n - 1], pivot, tmp;
		size_t i = 0, j = n - 1;

		pivot = a < b ? (b < c ? b : (a < c ? c : a)) :
		    (a < c ? a : (b < c ? c : b));
		for (;;) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i >= j)
				break;
			tmp = v[i];
			v[i++] = v[j];
			v[j--] = tmp;
		}
		if (j + 1 < n - j - 1) {
			sort_u64(v, j + 1);
			v += j + 1;
			n -= j + 1;
		} else {
			sort_u64(v + j + 1, n - j - 1);
			n = j + 1;
		}
	}
	for (size_t i = 1; i < n; i++) {
		uint64_t t = v[i];
		size_t j = i;

		for (; j > 0 && v[j - 1] > t; j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

/* Fills a fresh directory of table ti with n entries: one counting pass,
 * buckets allocated once at their final size, one placing pass. */
static struct dir *
table_build(struct nearidx *x, unsigned ti, const uint64_t *fps,
    const uint64_t *ids, size_t n, unsigned bits)
{
	const struct table *t = &x->t[ti];
	struct dir *d;
	uint32_t *count = NULL;
	size_t nslots = (size_t)1 << bits;
	int with_ids = ti == 0;

	if ((d = dir_new(x, bits)) == NULL)
		goto err;
	if ((count = calloc(nslots, sizeof(*count))) == NULL)
		goto err;
	for (size_t i = 0; i < n; i++) {
		uint64_t p = perm_apply(&t->fwd, fps[i]);

		if (++count[p >> (64 - bits)] >= UINT32_MAX - 4)
			goto err;
	}
	for (size_t s = 0; s < nslots; s++)
		if (count[s] > 0 && (d->slot[s] = block_new(x,
		    cap_bulk(count[s]), with_ids)) == NULL)
			goto err;
	free(count);
	count = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t p = perm_apply(&t->fwd, fps[i]);
		struct block *bk = d->slot[p >> (64 - bits)];

		entry_set(bk, bk->len++, p, with_ids ? (uint32_t)ids[i] : 0,
		    with_ids);
	}
	return d;

err:
	free(count);
	dir_free(x, d, 1);
	return NULL;
}

/* The distinct fingerprints of table 0's directory d, into out. */
static size_t
distinct_of(const struct nearidx *x, const struct dir *d, uint64_t *out,
    uint64_t *scratch)
{
	size_t m = 0;

	for (size_t s = 0; s < (size_t)1 << d->bits; s++) {
		const struct block *bk = d->slot[s];
		uint64_t top;

		if (bk == NULL)
			continue;
		top = (uint64_t)(s >> (d->bits - 16)) << 48;
		for (uint32_t i = 0; i < bk->len; i++)
			scratch[i] = (uint64_t)blk_hi(bk)[i] << 16 |
			    blk_lo(bk)[i];
		sort_u64(scratch, bk->len);
		for (uint32_t i = 0; i < bk->len; i++)
			if (i == 0 || scratch[i] != scratch[i - 1])
				out[m++] = perm_apply(&x->t[0].inv,
				    top | scratch[i]);
	}
	return m;
}

int
nearidx_bulk_load(struct nearidx *x, const uint64_t *fps,
    const uint64_t *doc_ids, size_t n, char **cause)
{
	struct dir *nd[NEARIDX_MAX_TABLES] = { NULL };
	uint64_t *uniq = NULL, *scratch = NULL;
	size_t nu = 0, longest = 0;
	unsigned ti;

	*cause = NULL;
	if (x->docs != 0) {
		if (asprintf(cause, "bulk load into an index that holds %llu "
		    "documents", (unsigned long long)x->docs) == -1)
			*cause = NULL;
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		if (doc_ids[i] > NEARIDX_MAX_DOC_ID) {
			if (asprintf(cause, "document id %llu (item %zu) is "
			    "above %llu", (unsigned long long)doc_ids[i], i,
			    (unsigned long long)NEARIDX_MAX_DOC_ID) == -1)
				*cause = NULL;
			return -1;
		}
	if (n == 0)
		return 0;
	if ((nd[0] = table_build(x, 0, fps, doc_ids, n,
	    bits_for(x, &x->t[0], n))) == NULL)
		goto err;
	for (size_t s = 0; s < (size_t)1 << nd[0]->bits; s++)
		if (nd[0]->slot[s] != NULL && nd[0]->slot[s]->len > longest)
			longest = nd[0]->slot[s]->len;
	uniq = malloc(n * sizeof(*uniq));
	scratch = malloc(longest * sizeof(*scratch));
	if (uniq == NULL || scratch == NULL)
		goto err;
	nu = distinct_of(x, nd[0], uniq, scratch);
	free(scratch);
	scratch = NULL;
	for (ti = 1; ti < x->ntables; ti++)
		if ((nd[ti] = table_build(x, ti, uniq, NULL, nu,
		    bits_for(x, &x->t[ti], nu))) == NULL)
			goto err;
	free(uniq);
	/* Table 0 first: a query meanwhile sees no table without it. */
	for (ti = 0; ti < x->ntables; ti++) {
		struct table *t = &x->t[ti];
		struct dir *od = t->dir;

		__atomic_store_n(&t->dir, nd[ti], __ATOMIC_RELEASE);
		retire_dir(x, od);
		t->count = ti == 0 ? n : nu;
		t->grow_at = grow_at(x, t, nd[ti]->bits);
	}
	__atomic_store_n(&x->docs, n, __ATOMIC_RELAXED);
	__atomic_store_n(&x->distinct, nu, __ATOMIC_RELAXED);
	reclaim_step(x);
	return 0;

err:
	for (ti = 0; ti < x->ntables; ti++)
		dir_free(x, nd[ti], 1);
	free(uniq);
	free(scratch);
	if (asprintf(cause, "out of memory loading %zu fingerprints", n) ==
	    -1)
		*cause = NULL;
	return -1;
}

/* ---- verification ---- */

static int
u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Every fingerprint of table ti (sorted, into *out) after checking that
 * each entry sits in its bucket. */
static int
table_collect(const struct nearidx *x, unsigned ti, uint64_t **out,
    size_t *n, char **cause)
{
	const struct table *t = &x->t[ti];
	const struct dir *d = t->dir;
	uint64_t *v = NULL;
	size_t m = 0;

	if ((v = malloc((t->count + 1) * sizeof(*v))) == NULL)
		goto err;
	for (size_t s = 0; s < (size_t)1 << d->bits; s++) {
		const struct block *bk = d->slot[s];
		uint64_t top = (uint64_t)(s >> (d->bits - 16)) << 48;

		if (bk == NULL)
			continue;
		if (bk->len == 0 || bk->len > bk->cap) {
			if (asprintf(cause, "table %u bucket %zu: length %u, "
			    "room %u", ti, s, bk->len, bk->cap) == -1)
				*cause = NULL;
			goto err;
		}
		for (uint32_t i = 0; i < bk->len; i++) {
			uint64_t p = top | (uint64_t)blk_hi(bk)[i] << 16 |
			    blk_lo(bk)[i];

			if (p >> (64 - d->bits) != s || m == t->count) {
				if (asprintf(cause, "table %u bucket %zu: "
				    "misplaced entry or more than %llu", ti,
				    s, (unsigned long long)t->count) == -1)
					*cause = NULL;
				goto err;
			}
			v[m++] = perm_apply(&t->inv, p);
		}
	}
	if (m != t->count) {
		if (asprintf(cause, "table %u holds %zu entries, counted %llu",
		    ti, m, (unsigned long long)t->count) == -1)
			*cause = NULL;
		goto err;
	}
	qsort(v, m, sizeof(*v), u64_cmp);
	*out = v;
	*n = m;
	return 0;

err:
	free(v);
	return -1;
}

int
nearidx_verify(const struct nearidx *x, char **cause)
{
	uint64_t *all = NULL, *other = NULL;
	size_t n0, nu = 0, no;

	*cause = NULL;
	if (table_collect(x, 0, &all, &n0, cause) == -1)
		goto err;
	for (size_t i = 0; i < n0; i++)
		if (i == 0 || all[i] != all[i - 1])
			all[nu++] = all[i];
	if (n0 != x->docs || nu != x->distinct) {
		if (asprintf(cause, "%zu documents, %zu distinct; counted "
		    "%llu, %llu", n0, nu, (unsigned long long)x->docs,
		    (unsigned long long)x->distinct) == -1)
			*cause = NULL;
		goto err;
	}
	for (unsigned ti = 1; ti < x->ntables; ti++) {
		if (table_collect(x, ti, &other, &no, cause) == -1)
			goto err;
		if (no != nu || memcmp(other, all, nu * sizeof(*all)) != 0) {
			if (asprintf(cause, "table %u does not hold table 0's "
			    "%zu distinct fingerprints once each", ti, nu) ==
			    -1)
				*cause = NULL;
			goto err;
		}
		free(other);
		other = NULL;
	}
	free(all);
	return 0;

err:
	free(all);
	free(other);
	if (*cause == NULL && asprintf(cause, "out of memory") == -1)
		*cause = NULL;
	return -1;
}
