/*
 * nearidx: the near-duplicate index.  See nearidx.h for the layout, the
 * query and the thread rules; this file keeps the reasons for the details.
 *
 * Memory access is the cost.  A query at 10 million entries finds every
 * bucket it reads in main memory, so each operation first computes all
 * its tables' directory slots and prefetches them, then loads the bucket
 * pointers and prefetches the buckets' lines, and only then scans: the
 * misses of all tables overlap.  Batches overlap neighbouring operations
 * the same way.  Buckets live on huge pages (nearidx_alloc) so that these
 * random reads seldom miss the TLB too.
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

#include <immintrin.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hugemap.h"
#include "log.h"
#include "nearidx_alloc.h"
#include "nearidx_scan.h"

#define TOP16		0xffff000000000000ULL
#define SEG_DEFAULT	((size_t)2 << 20)	/* segments: one huge page */
#define DIR_MAPPED	((size_t)64 << 10)	/* directories mapped apart */
#define GARBAGE_SHARE	10	/* compact past 1/10 garbage ... */
#define GARBAGE_MIN	(64u << 10)	/* ... and at least this much ... */
#define VICTIM_PERCENT	25	/* ... a segment at least 1/4 garbage */
#define VICTIM_RETRY	64	/* changes to a table between searches */
#define READER_SLOTS	64		/* threads share a slot beyond this */
#define RECLAIM_BYTES	(4u << 20)	/* retired bytes that call a reclaim */
#define RECLAIM_EVERY	64		/* mutations between drain checks */
#define MAX_LINES	16		/* lines prefetched per bucket */
#define INFLIGHT_LINES	64		/* lines a batch keeps in flight */
#define RING		16		/* operations in a batch's pipeline */
#define MAX_BUCKET	0xfffffff0u	/* entries in one bucket */
#define CACHE_LINE	64
#define BUILD_AHEAD	64	/* entries a bulk load fetches ahead */

/* Keeps what readers read off the lines that the writer dirties. */
#define ALIGNED_LINE __attribute__((aligned(CACHE_LINE)))

/*
 * A bucket.  Entries follow the header as arrays sized by cap: hi[cap],
 * lo[cap] and, in table 0, id[cap].  cap never changes once the bucket is
 * published; it is even so that id stays 4-byte aligned.  slot lets
 * compaction find the directory slot that points to the bucket.
 */
struct block {
	uint32_t len;		/* entries published; atomic */
	uint32_t cap;
	uint32_t slot;
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
 * same amount move together, so b = 4 needs at most 3 steps.  Used where
 * the CPU has no fast pext/pdep, and for the rare hits.
 */
struct perm {
	unsigned n;
	uint64_t mask[64];
	uint8_t left[64];
	uint8_t right[64];
};

struct table {
	/* Read by every query. */
	struct dir *dir;	/* current version; atomic */
	uint64_t key_mask;	/* the key blocks' bits in a fingerprint */
	unsigned key_bits;	/* width of the key */
	unsigned span;		/* atomic: bytes to prefetch per bucket */
	/* Written by the writer. */
	uint64_t count ALIGNED_LINE;	/* entries */
	struct nearidx_alloc *mem;	/* this table's buckets */
	unsigned compact_skip;	/* changes before looking for a victim */
	uint64_t grow_at;	/* count at which the directory doubles */
	unsigned max_bits;	/* directory bits allowed */
	uint64_t key_blocks;	/* bit j: block j is part of the key */
	struct perm fwd;	/* fingerprint -> key-first order */
	struct perm inv;
};

struct reader_slot {
	uint64_t active[2];	/* readers inside, by epoch parity */
} ALIGNED_LINE;

/* What waits for the readers: directories, and evacuated segments. */
struct retired {
	void *p;			/* struct dir or struct nearidx_seg */
	struct nearidx_alloc *seg_of;	/* a segment's allocator, or NULL */
};

struct retire_list {
	struct retired *v;
	size_t n, cap;
	uint64_t bytes;
};

/* One operation in flight: its permuted fingerprints, slots, buckets. */
struct inflight {
	uint64_t fp;
	uint64_t p[NEARIDX_MAX_TABLES];
	struct block **slotp[NEARIDX_MAX_TABLES];
	struct block *bk[NEARIDX_MAX_TABLES];
};

struct sink {
	struct nearidx_hit *out;
	size_t max;
	size_t n;
	uint64_t total;
};

struct nearidx {
	/* Read by every query. */
	unsigned k;
	unsigned b;
	unsigned ntables;
	struct table *t;
	const struct nearidx_kernel *kern;
	/* The two halves of a query that differ by CPU: every table's
	 * permuted fingerprint, and the scan of every table's bucket. */
	void (*keys)(const struct nearidx *, uint64_t, uint64_t *);
	void (*scan)(const struct nearidx *, const struct inflight *,
	    unsigned, struct sink *);
	struct reader_slot *slots;
	uint64_t epoch;		/* atomic */
	uint64_t bmask[64];	/* block j's bits in a fingerprint */
	unsigned width[64];	/* bits of block j */
	unsigned load;		/* mean bucket length that doubles a dir */
	/* Written by the writer. */
	uint64_t docs ALIGNED_LINE;	/* atomic */
	uint64_t distinct;	/* atomic */
	uint64_t fixed_bytes;	/* atomic: directories and fixed parts */
	uint64_t block_bytes;	/* atomic: the tables' segments */
	size_t seg_bytes;
	struct retire_list pending;
	struct retire_list waiting;
	unsigned waiting_parity;
	unsigned since_reclaim;
};

static __thread unsigned tls_slot;	/* reader slot + 1; 0: none yet */
static unsigned next_slot;

/* ---- memory ---- */

/* (A bulk load builds tables in threads of their own.) */
static void
fixed_add(struct nearidx *x, int64_t delta)
{
	__atomic_fetch_add(&x->fixed_bytes, (uint64_t)delta, __ATOMIC_RELAXED);
}

static void
blocks_sync(struct nearidx *x)
{
	uint64_t bytes = 0;

	for (unsigned ti = 0; ti < x->ntables; ti++)
		if (x->t[ti].mem != NULL)
			bytes += nearidx_alloc_bytes(x->t[ti].mem);
	if (bytes != x->block_bytes)
		__atomic_store_n(&x->block_bytes, bytes, __ATOMIC_RELAXED);
}

static size_t
entry_size(int ids)
{
	return ids ? 10 : 6;
}

/* Bytes of a bucket in its segment: header and arrays, to 16 bytes. */
static size_t
block_size(uint64_t cap, int ids)
{
	return (sizeof(struct block) + (size_t)cap * entry_size(ids) + 15) &
	    ~(size_t)15;
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

/*
 * A bucket of table ti for directory slot slot, with room for at least
 * want entries: an even want, plus what fits in the rounding to 16 bytes
 * (block_size of the result is that of want).
 */
static struct block *
block_new(struct nearidx *x, unsigned ti, uint64_t want, size_t slot)
{
	int ids = ti == 0;
	struct block *bk;
	size_t bytes;

	want += want & 1;
	if (want == 0)
		want = 2;
	if (want > MAX_BUCKET)
		return NULL;
	bytes = block_size(want, ids);
	if ((bk = nearidx_alloc_get(x->t[ti].mem, bytes)) == NULL)
		return NULL;
	bk->len = 0;
	bk->cap = (uint32_t)(((bytes - sizeof(struct block)) /
	    entry_size(ids)) & ~(size_t)1);
	bk->slot = (uint32_t)slot;
	return bk;
}

/* A bucket that no slot points to any more: garbage in its segment,
 * readable until compaction recycles the segment. */
static void
block_dead(struct nearidx *x, unsigned ti, struct block *bk)
{
	if (bk != NULL)
		nearidx_alloc_dead(x->t[ti].mem, bk, block_size(bk->cap,
		    ti == 0));
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
	if (bytes >= DIR_MAPPED) {
		/* A mapping of its own: its pages cost memory once a document
		 * is filed in them (an empty index, the smallest directory of
		 * 512 KiB a table, costs none), and random probes into a large
		 * directory miss the TLB far less often on huge pages. */
		if ((d->slot = hugemap_new(bytes, false, &bytes)) == NULL) {
			free(d);
			return NULL;
		}
		d->mapped = 1;
	} else if ((d->slot = calloc(1, bytes)) == NULL) {
		free(d);
		return NULL;
	}
	d->bytes = bytes;
	fixed_add(x, (int64_t)(bytes + sizeof(*d)));
	return d;
}

/* Frees a directory's own memory, not its buckets. */
static void
dir_unmap(struct nearidx *x, struct dir *d)
{
	fixed_add(x, -(int64_t)(d->bytes + sizeof(*d)));
	if (d->mapped)
		hugemap_free(d->slot, d->bytes);
	else
		free(d->slot);
	free(d);
}

/* Frees a directory never published, its buckets made garbage. */
static void
dir_free(struct nearidx *x, struct dir *d, unsigned ti)
{
	if (d == NULL)
		return;
	for (size_t s = 0; s < (size_t)1 << d->bits; s++)
		block_dead(x, ti, d->slot[s]);
	dir_unmap(x, d);
}

/* ---- reclamation ---- */

/* A directory (seg_of NULL) or an evacuated segment of allocator seg_of
 * waits for the readers. */
static void
retire(struct nearidx *x, void *p, struct nearidx_alloc *seg_of)
{
	struct retire_list *l = &x->pending;

	if (p == NULL)
		return;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct retired *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL) {
			/* Without room to remember it, the memory leaks: a
			 * reader may still be looking at it. */
			log_warnx("%s: out of memory; memory leaked",
			    __func__);
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct retired){ p, seg_of };
	l->bytes += seg_of != NULL ? x->seg_bytes : ((struct dir *)p)->bytes;
}

static void
retire_list_free(struct nearidx *x, struct retire_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].seg_of != NULL)
			nearidx_alloc_recycle(l->v[i].seg_of, l->v[i].p);
		else
			dir_unmap(x, l->v[i].p);
	}
	l->n = 0;
	l->bytes = 0;
	blocks_sync(x);
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

/* ---- permutations ---- */

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
		uint64_t mask = x->bmask[j];
		int delta;
		unsigned m;

		for (unsigned jj = 0; jj <= j; jj++)
			src -= x->width[jj];
		dst -= w;
		delta = (int)dst - (int)src;
		if (inverse) {
			mask = ((1ULL << w) - 1) << dst;
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

static uint64_t
perm_apply(const struct perm *p, uint64_t v)
{
	uint64_t r = 0;

	for (unsigned m = 0; m < p->n; m++)
		r |= ((v & p->mask[m]) << p->left[m]) >> p->right[m];
	return r;
}

static void
keys_shift(const struct nearidx *x, uint64_t fp, uint64_t *p)
{
	for (unsigned ti = 0; ti < x->ntables; ti++)
		p[ti] = perm_apply(&x->t[ti].fwd, fp);
}

/* The same permutation in two instructions: the key's bits gathered to
 * the top, the others below, each in order. */
__attribute__((target("bmi2")))
static void
keys_pext(const struct nearidx *x, uint64_t fp, uint64_t *p)
{
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct table *t = &x->t[ti];

		p[ti] = _pext_u64(fp, t->key_mask) << (64 - t->key_bits) |
		    _pext_u64(fp, ~t->key_mask);
	}
}

/* ---- configuration and layout ---- */

void
nearidx_config_defaults(struct nearidx_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->k = NEARIDX_DEFAULT_K;
	cfg->blocks = NEARIDX_DEFAULT_BLOCKS;
	cfg->bucket_load = NEARIDX_LOAD_MAX;
	cfg->segment_bytes = SEG_DEFAULT;
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
	if (cfg->segment_bytes != 0 && (cfg->segment_bytes < (64u << 10) ||
	    cfg->segment_bytes > ((size_t)1 << 30) ||
	    (cfg->segment_bytes & (cfg->segment_bytes - 1)) != 0)) {
		if (asprintf(cause, "segment bytes %zu: a power of two from "
		    "64 KiB to 1 GiB", cfg->segment_bytes) == -1)
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
	if (nearidx_kernel_lookup(cfg->simd, cause) == NULL)
		return -1;
	return 0;
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

/*
 * Bytes a query prefetches from the start of a bucket of table t: the
 * header and the hi words of a bucket a quarter longer than the mean.
 * Stored only on change: every query reads this line.
 */
static void
lines_update(struct table *t)
{
	uint64_t mean = t->count >> t->dir->bits;
	uint64_t span = sizeof(struct block) + 4 * (mean + mean / 4);

	if (span > MAX_LINES * CACHE_LINE)
		span = MAX_LINES * CACHE_LINE;
	if (span != t->span)
		__atomic_store_n(&t->span, (unsigned)span, __ATOMIC_RELAXED);
}

static void scan_generic(const struct nearidx *, const struct inflight *,
    unsigned, struct sink *);
static void scan_avx512(const struct nearidx *, const struct inflight *,
    unsigned, struct sink *);

struct nearidx *
nearidx_new(const struct nearidx_config *cfg, char **cause)
{
	struct nearidx *x = NULL;
	unsigned key[64], order[64], nkey, r;

	if (nearidx_config_check(cfg, cause) == -1)
		return NULL;
	if ((x = aligned_alloc(CACHE_LINE, sizeof(*x))) == NULL)
		goto err;
	memset(x, 0, sizeof(*x));
	x->k = cfg->k;
	x->b = cfg->blocks;
	x->load = cfg->bucket_load ? cfg->bucket_load : NEARIDX_LOAD_MAX;
	x->seg_bytes = cfg->segment_bytes ? cfg->segment_bytes : SEG_DEFAULT;
	x->ntables = (unsigned)binomial(x->b, x->k);
	x->kern = nearidx_kernel_lookup(cfg->simd, cause);
	/* The AVX-512 kernel implies a CPU with fast pext (Intel since
	 * Haswell, AMD since Zen 3): use it for the permutations. */
	if (strcmp(x->kern->name, "avx512") == 0) {
		x->keys = keys_pext;
		x->scan = scan_avx512;
	} else {
		x->keys = keys_shift;
		x->scan = scan_generic;
	}
	for (unsigned j = 0, top = 64; j < x->b; j++) {
		x->width[j] = 64 / x->b + (j < 64 % x->b);
		top -= x->width[j];
		x->bmask[j] = ((1ULL << x->width[j]) - 1) << top;
	}
	x->slots = aligned_alloc(CACHE_LINE, READER_SLOTS * sizeof(*x->slots));
	x->t = aligned_alloc(CACHE_LINE, x->ntables * sizeof(*x->t));
	if (x->slots == NULL || x->t == NULL)
		goto err;
	memset(x->slots, 0, READER_SLOTS * sizeof(*x->slots));
	memset(x->t, 0, x->ntables * sizeof(*x->t));
	fixed_add(x, (int64_t)(sizeof(*x) + READER_SLOTS * sizeof(*x->slots) +
	    x->ntables * sizeof(*x->t)));

	/* Key block sets in lexicographic order. */
	nkey = x->b - x->k;
	for (unsigned i = 0; i < nkey; i++)
		key[i] = i;
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		struct table *t = &x->t[ti];
		unsigned n = 0;

		for (unsigned i = 0; i < nkey; i++) {
			t->key_blocks |= 1ULL << key[i];
			t->key_mask |= x->bmask[key[i]];
			t->key_bits += x->width[key[i]];
			order[n++] = key[i];
		}
		for (unsigned j = 0; j < x->b; j++)
			if (!(t->key_blocks & (1ULL << j)))
				order[n++] = j;
		perm_build(&t->fwd, x, order, 0);
		perm_build(&t->inv, x, order, 1);
		if ((t->mem = nearidx_alloc_new(x->seg_bytes)) == NULL)
			goto err;
		t->max_bits = t->key_bits < NEARIDX_MAX_DIR_BITS ?
		    t->key_bits : NEARIDX_MAX_DIR_BITS;
		if ((t->dir = dir_new(x, bits_for(x, t, cfg->expected))) ==
		    NULL)
			goto err;
		t->grow_at = grow_at(x, t, t->dir->bits);
		lines_update(t);

		/* Next combination. */
		for (r = nkey; r > 0 && key[r - 1] == x->b - nkey + r - 1; r--)
			;
		if (r == 0)
			break;
		key[r - 1]++;
		for (unsigned i = r; i < nkey; i++)
			key[i] = key[i - 1] + 1;
	}
	blocks_sync(x);
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
	if (x->t != NULL) {
		retire_list_free(x, &x->waiting);
		retire_list_free(x, &x->pending);
	}
	free(x->waiting.v);
	free(x->pending.v);
	/* The allocators unmap the buckets wholesale. */
	if (x->t != NULL)
		for (unsigned ti = 0; ti < x->ntables; ti++) {
			if (x->t[ti].dir != NULL)
				dir_unmap(x, x->t[ti].dir);
			nearidx_alloc_destroy(x->t[ti].mem);
		}
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
	return __atomic_load_n(&x->fixed_bytes, __ATOMIC_RELAXED) +
	    __atomic_load_n(&x->block_bytes, __ATOMIC_RELAXED);
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

/* The first table keyed by blocks that two fingerprints share. */
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

/* Reports the documents with fingerprint fp, found through another table:
 * table 0 has their ids. */
static void
report_ids(const struct nearidx *x, uint64_t fp, unsigned distance,
    struct sink *s)
{
	const struct table *t = &x->t[0];
	const struct dir *d = __atomic_load_n(&t->dir, __ATOMIC_ACQUIRE);
	uint64_t p = perm_apply(&t->fwd, fp);
	const struct block *bk = __atomic_load_n(&d->slot[p >> (64 - d->bits)],
	    __ATOMIC_ACQUIRE);
	uint32_t idx[NEARIDX_SCAN_OUT];
	size_t from = 0, n;

	if (bk == NULL)
		return;
	n = __atomic_load_n(&bk->len, __ATOMIC_ACQUIRE);
	while (from < n) {
		size_t got = x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, 0, idx);

		for (size_t i = 0; i < got; i++)
			sink_push(s, distance, blk_id(bk)[idx[i]], fp);
	}
}

/* Entry e of table ti's bucket bk is within the query's distance: report
 * it, unless an earlier table holds it too. */
static void
probe_hit(const struct nearidx *x, unsigned ti, const struct block *bk,
    uint32_t e, uint64_t fp, uint64_t p, struct sink *s)
{
	uint64_t pc = (p & TOP16) | (uint64_t)blk_hi(bk)[e] << 16 |
	    blk_lo(bk)[e];
	uint64_t fc = perm_apply(&x->t[ti].inv, pc);
	unsigned dist = (unsigned)__builtin_popcountll(fp ^ fc);

	if (first_table(x, fp ^ fc) != ti)
		return;
	if (ti == 0)
		sink_push(s, dist, blk_id(bk)[e], fc);
	else
		report_ids(x, fc, dist, s);
}

static void
scan_generic(const struct nearidx *x, const struct inflight *q, unsigned kq,
    struct sink *s)
{
	uint32_t idx[NEARIDX_SCAN_OUT];

	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct block *bk = q->bk[ti];
		uint64_t p = q->p[ti];
		size_t from = 0, n;

		if (bk == NULL)
			continue;
		n = __atomic_load_n(&bk->len, __ATOMIC_ACQUIRE);
		while (from < n) {
			size_t got = x->kern->scan(blk_hi(bk), blk_lo(bk), n,
			    &from, (uint32_t)(p >> 16), (uint16_t)p, kq, idx);

			for (size_t i = 0; i < got; i++)
				probe_hit(x, ti, bk, idx[i], q->fp, p, s);
		}
	}
}

/* The same with the AVX-512 comparison inline: most buckets take one or
 * two masked loads and no branch taken. */
__attribute__((target("avx512f,avx512vpopcntdq,popcnt")))
static void
scan_avx512(const struct nearidx *x, const struct inflight *q, unsigned kq,
    struct sink *s)
{
	const __m512i vk = _mm512_set1_epi32((int)kq);

	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct block *bk = q->bk[ti];
		uint64_t p = q->p[ti];
		uint32_t qhi = (uint32_t)(p >> 16), n;
		uint16_t qlo = (uint16_t)p;
		const uint32_t *hi;
		__m512i vq;

		if (bk == NULL)
			continue;
		n = __atomic_load_n(&bk->len, __ATOMIC_ACQUIRE);
		hi = blk_hi(bk);
		vq = _mm512_set1_epi32((int)qhi);
		for (uint32_t i = 0; i < n; i += 16) {
			__mmask16 lanes = n - i >= 16 ? 0xffff :
			    (__mmask16)((1u << (n - i)) - 1);
			__m512i v = _mm512_xor_si512(
			    _mm512_maskz_loadu_epi32(lanes, hi + i), vq);
			unsigned m = _mm512_mask_cmple_epu32_mask(lanes,
			    _mm512_popcnt_epi32(v), vk);

			while (m != 0) {
				uint32_t e = i + (uint32_t)__builtin_ctz(m);

				m &= m - 1;
				if ((unsigned)__builtin_popcount(hi[e] ^ qhi) +
				    (unsigned)__builtin_popcount(
				    (uint32_t)(blk_lo(bk)[e] ^ qlo)) <= kq)
					probe_hit(x, ti, bk, e, q->fp, p, s);
			}
		}
	}
}

/* Stage 1: every table's slot for fp, prefetched. */
static void
stage_slots(const struct nearidx *x, struct inflight *q, uint64_t fp)
{
	q->fp = fp;
	x->keys(x, fp, q->p);
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct dir *d = __atomic_load_n(&x->t[ti].dir,
		    __ATOMIC_ACQUIRE);

		q->slotp[ti] = &d->slot[q->p[ti] >> (64 - d->bits)];
		__builtin_prefetch(q->slotp[ti]);
	}
}

/* Stage 2: the buckets, their hi words prefetched. */
static void
stage_buckets(const struct nearidx *x, struct inflight *q)
{
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		struct block *bk = __atomic_load_n(q->slotp[ti],
		    __ATOMIC_ACQUIRE);
		uintptr_t start = (uintptr_t)bk & ~(uintptr_t)(CACHE_LINE - 1);
		uintptr_t end = (uintptr_t)bk + __atomic_load_n(&x->t[ti].span,
		    __ATOMIC_RELAXED);

		/* Exactly the lines the span covers: a line fetched for
		 * nothing takes a fill buffer from one that matters. */
		q->bk[ti] = bk;
		if (bk != NULL)
			for (; start < end; start += CACHE_LINE)
				__builtin_prefetch((const void *)start);
	}
}

/* Stage 3: the scans. */
static int64_t
stage_scan(const struct nearidx *x, const struct inflight *q, unsigned kq,
    struct nearidx_hit *out, size_t max)
{
	struct sink s = { .out = out, .max = max };

	x->scan(x, q, kq, &s);
	sink_finish(&s);
	return (int64_t)s.total;
}

int64_t
nearidx_query(const struct nearidx *x, uint64_t fp, unsigned kq,
    struct nearidx_hit *out, size_t max)
{
	struct reader_slot *rs;
	struct inflight q;
	unsigned parity;
	int64_t total;

	if (kq > x->k)
		return -1;
	rs = reader_enter(x, &parity);
	stage_slots(x, &q, fp);
	stage_buckets(x, &q);
	total = stage_scan(x, &q, kq, out, max);
	reader_exit(rs, parity);
	return total;
}

/* How many operations ahead a batch prefetches, per stage: enough to keep
 * INFLIGHT_LINES lines coming. */
static size_t
batch_ahead(const struct nearidx *x)
{
	size_t lines = 0, a;

	for (unsigned ti = 0; ti < x->ntables; ti++)
		lines += __atomic_load_n(&x->t[ti].span, __ATOMIC_RELAXED) /
		    CACHE_LINE + 2;
	a = INFLIGHT_LINES / (lines ? lines : 1);
	if (a < 1)
		a = 1;
	if (a > RING / 2 - 1)
		a = RING / 2 - 1;
	return a;
}

int
nearidx_query_batch(const struct nearidx *x, const uint64_t *fps, size_t n,
    unsigned kq, struct nearidx_hit *out, size_t max_per, uint64_t *totals)
{
	struct inflight *ring;
	struct reader_slot *rs;
	size_t a = batch_ahead(x);
	unsigned parity;

	if (kq > x->k)
		return -1;
	if (n == 0)
		return 0;
	/* 1.5 KiB per operation in flight: on the heap, once per batch. */
	if ((ring = malloc(RING * sizeof(*ring))) == NULL) {
		for (size_t i = 0; i < n; i++)
			totals[i] = (uint64_t)nearidx_query(x, fps[i], kq,
			    out + i * max_per, max_per);
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

			totals[j] = (uint64_t)stage_scan(x, &ring[j % RING], kq,
			    out + j * max_per, max_per);
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
	uint32_t idx[NEARIDX_SCAN_OUT];
	size_t from = 0, n = bk->len;
	int64_t found = -1;

	*same = 0;
	while (from < n) {
		size_t got = x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, 0, idx);

		*same += got;
		for (size_t i = 0; i < got && found < 0; i++)
			if (id == UINT64_MAX || blk_id(bk)[idx[i]] == id)
				found = idx[i];
	}
	return found;
}

/* Whether bk holds p's fingerprint at all; stops at the first. */
static int
block_has(const struct nearidx *x, const struct block *bk, uint64_t p)
{
	uint32_t idx[NEARIDX_SCAN_OUT];
	size_t from = 0, n = bk->len;

	while (from < n)
		if (x->kern->scan(blk_hi(bk), blk_lo(bk), n, &from,
		    (uint32_t)(p >> 16), (uint16_t)p, 0, idx) > 0)
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

static void
count_set(struct table *t, uint64_t count)
{
	t->count = count;
	lines_update(t);
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
			if (cnt[h] > 0 && (half[h] = block_new(x, ti,
			    cnt[h] + cnt[h] / 8 + 2, 2 * s + (size_t)h)) ==
			    NULL) {
				block_dead(x, ti, half[0]);
				goto err;
			}
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
	lines_update(t);
	for (size_t s = 0; s < (size_t)1 << od->bits; s++)
		block_dead(x, ti, od->slot[s]);
	retire(x, od, NULL);
	return 0;

err:
	/* Leave the table as it is and try again when it has doubled. */
	dir_free(x, nd, ti);
	t->grow_at = t->grow_at < UINT64_MAX / 2 ? t->grow_at * 2 :
	    UINT64_MAX;
	return -1;
}

/* Appends entry p (and id in table 0) to bucket *slotp, in place when
 * there is room, else in a copy: fresh, allocated by the caller. */
static void
bucket_append(struct nearidx *x, unsigned ti, struct block **slotp,
    struct block *fresh, uint64_t p, uint32_t id)
{
	struct block *bk = *slotp;
	int ids = ti == 0;

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
	block_dead(x, ti, bk);
}

/* The writer's view of p's slot in table t. */
static struct block **
slot_now(struct table *t, uint64_t p)
{
	return &t->dir->slot[p >> (64 - t->dir->bits)];
}

/*
 * Writer stages, as for queries: slots, then bucket headers, then the
 * lines the operation will touch.  They only prefetch, and find slots and
 * buckets afresh each time: the operations in between may have replaced
 * a bucket or a whole directory, and freed it.
 */
static void
wstage_slots(struct nearidx *x, struct inflight *q, uint64_t fp)
{
	q->fp = fp;
	x->keys(x, fp, q->p);
	for (unsigned ti = 0; ti < x->ntables; ti++)
		__builtin_prefetch(slot_now(&x->t[ti], q->p[ti]), 1);
}

static void
wstage_headers(struct nearidx *x, struct inflight *q)
{
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		q->slotp[ti] = slot_now(&x->t[ti], q->p[ti]);
		q->bk[ti] = *q->slotp[ti];
		if (q->bk[ti] != NULL)
			__builtin_prefetch(q->bk[ti], 1);
	}
}

/* Table 0's hi words (the duplicate check), and where each append goes. */
static void
wstage_lines(struct nearidx *x, const struct inflight *q)
{
	for (unsigned ti = 0; ti < x->ntables; ti++) {
		const struct block *bk = *slot_now(&x->t[ti], q->p[ti]);
		uint32_t len;

		if (bk == NULL)
			continue;
		len = bk->len < bk->cap ? bk->len : bk->cap - 1;
		if (ti == 0) {
			for (uint32_t i = 0; i < len; i += 16)
				__builtin_prefetch(blk_hi(bk) + i);
			__builtin_prefetch(blk_id(bk) + len, 1);
		}
		__builtin_prefetch(blk_hi(bk) + len, 1);
		__builtin_prefetch(blk_lo(bk) + len, 1);
	}
}

/*
 * Evacuates the segment of table ti with the most garbage: its live
 * buckets are copied to the current segment and the segment waits for the
 * readers before it is reused.  One segment per call bounds the writer's
 * pause, and only one at least VICTIM_PERCENT garbage is worth it: then
 * every byte reclaimed costs at most 3 bytes copied, and garbage stays
 * near a quarter of the memory however the index is used.
 */
static void
table_compact(struct nearidx *x, unsigned ti)
{
	struct table *t = &x->t[ti];
	struct nearidx_seg *seg;
	size_t nslots = (size_t)1 << t->dir->bits;
	int ids = ti == 0;
	char *p, *end;

	if ((seg = nearidx_alloc_victim(t->mem, VICTIM_PERCENT, &p, &end)) ==
	    NULL) {
		/* None worth it yet: the search walks every segment, so
		 * not at every change. */
		t->compact_skip = VICTIM_RETRY;
		return;
	}
	while (p < end) {
		struct block *bk = (struct block *)(void *)p, *nb;
		uint32_t len = bk->len;

		p += block_size(bk->cap, ids);
		if (bk->slot >= nslots || t->dir->slot[bk->slot] != bk)
			continue;	/* garbage already */
		/* Same room: trimming it would only bring the next copy
		 * forward. */
		if ((nb = block_new(x, ti, bk->cap, bk->slot)) == NULL) {
			nearidx_alloc_keep(t->mem, seg);
			return;
		}
		block_copy(nb, 0, bk, 0, len, ids);
		nb->len = len;
		__atomic_store_n(&t->dir->slot[bk->slot], nb,
		    __ATOMIC_RELEASE);
		block_dead(x, ti, bk);
	}
	retire(x, seg, t->mem);
}

static void
compact_maybe(struct nearidx *x, unsigned ti)
{
	struct nearidx_alloc *a = x->t[ti].mem;
	uint64_t garbage = nearidx_alloc_garbage(a);

	if (x->t[ti].compact_skip > 0) {
		x->t[ti].compact_skip--;
		return;
	}
	if (garbage >= GARBAGE_MIN &&
	    garbage * GARBAGE_SHARE > nearidx_alloc_used(a))
		table_compact(x, ti);
}

/* Inserts q's fingerprint, its permutations computed by wstage_slots. */
static int
insert_one(struct nearidx *x, struct inflight *q, uint64_t doc_id)
{
	struct block *fresh[NEARIDX_MAX_TABLES];
	struct block **slotp[NEARIDX_MAX_TABLES];
	unsigned n, ti;

	if (doc_id > NEARIDX_MAX_DOC_ID)
		return -1;
	/* Slots again: a directory may have doubled since wstage_slots. */
	for (ti = 0; ti < x->ntables; ti++)
		slotp[ti] = slot_now(&x->t[ti], q->p[ti]);
	/* A fingerprint already stored goes to table 0 only. */
	n = x->ntables;
	if (*slot_now(&x->t[0], q->p[0]) != NULL &&
	    block_has(x, *slot_now(&x->t[0], q->p[0]), q->p[0]))
		n = 1;
	/* Every allocation first, so that a failure changes nothing. */
	for (ti = 0; ti < n; ti++) {
		struct block *bk = *slotp[ti];

		fresh[ti] = NULL;
		if (bk != NULL && bk->len < bk->cap)
			continue;
		if (bk != NULL && bk->len >= MAX_BUCKET - 1)
			goto err;
		fresh[ti] = block_new(x, ti, bk != NULL ? (uint64_t)bk->len +
		    1 + bk->len / 8 : 1, (size_t)(slotp[ti] -
		    x->t[ti].dir->slot));
		if (fresh[ti] == NULL)
			goto err;
	}
	for (ti = 0; ti < n; ti++)
		bucket_append(x, ti, slotp[ti], fresh[ti], q->p[ti],
		    (uint32_t)doc_id);
	__atomic_store_n(&x->docs, x->docs + 1, __ATOMIC_RELAXED);
	if (n > 1)
		__atomic_store_n(&x->distinct, x->distinct + 1,
		    __ATOMIC_RELAXED);
	for (ti = 0; ti < n; ti++) {
		struct table *t = &x->t[ti];

		count_set(t, t->count + 1);
		if (t->count > t->grow_at)
			table_double(x, ti);
		compact_maybe(x, ti);
	}
	reclaim_maybe(x);
	blocks_sync(x);
	return 0;

err:
	while (ti-- > 0)
		block_dead(x, ti, fresh[ti]);
	return -1;
}

int
nearidx_insert(struct nearidx *x, uint64_t fp, uint64_t doc_id)
{
	struct inflight q;

	wstage_slots(x, &q, fp);
	wstage_headers(x, &q);
	wstage_lines(x, &q);
	return insert_one(x, &q, doc_id);
}

size_t
nearidx_insert_batch(struct nearidx *x, const uint64_t *fps,
    const uint64_t *doc_ids, size_t n)
{
	struct inflight *ring;
	size_t a = batch_ahead(x);

	if ((ring = malloc(RING * sizeof(*ring))) == NULL) {
		for (size_t i = 0; i < n; i++)
			if (nearidx_insert(x, fps[i], doc_ids[i]) == -1)
				return i;
		return n;
	}
	a = a > RING / 3 - 1 ? RING / 3 - 1 : a;
	for (size_t i = 0; i < n + 3 * a; i++) {
		if (i < n)
			wstage_slots(x, &ring[i % RING], fps[i]);
		if (i >= a && i - a < n)
			wstage_headers(x, &ring[(i - a) % RING]);
		if (i >= 2 * a && i - 2 * a < n)
			wstage_lines(x, &ring[(i - 2 * a) % RING]);
		if (i >= 3 * a && insert_one(x, &ring[(i - 3 * a) % RING],
		    doc_ids[i - 3 * a]) == -1) {
			free(ring);
			return i - 3 * a;
		}
	}
	free(ring);
	return n;
}

/* Publishes a copy of *slotp without entry e (or no bucket, if it was the
 * last); fresh was allocated by the caller, NULL when len is 1. */
static void
bucket_remove(struct nearidx *x, unsigned ti, struct block **slotp,
    struct block *fresh, uint32_t e)
{
	struct block *bk = *slotp;
	int ids = ti == 0;

	if (fresh != NULL) {
		block_copy(fresh, 0, bk, 0, e, ids);
		block_copy(fresh, e, bk, e + 1, bk->len, ids);
		fresh->len = bk->len - 1;
	}
	__atomic_store_n(slotp, fresh, __ATOMIC_RELEASE);
	block_dead(x, ti, bk);
}

int
nearidx_delete(struct nearidx *x, uint64_t fp, uint64_t doc_id)
{
	struct block *fresh[NEARIDX_MAX_TABLES];
	int64_t e[NEARIDX_MAX_TABLES];
	struct inflight q;
	unsigned n, ti;
	size_t same;

	if (doc_id > NEARIDX_MAX_DOC_ID)
		return 0;
	wstage_slots(x, &q, fp);
	wstage_headers(x, &q);
	if (q.bk[0] == NULL ||
	    (e[0] = block_find(x, q.bk[0], q.p[0], doc_id, &same)) < 0)
		return 0;
	/* The last document with this fingerprint takes it out of the
	 * other tables too. */
	n = same == 1 ? x->ntables : 1;
	for (ti = 1; ti < n; ti++) {
		size_t one;

		if (q.bk[ti] == NULL || (e[ti] = block_find(x, q.bk[ti],
		    q.p[ti], UINT64_MAX, &one)) < 0 || one != 1)
			fatalx("%s: table %u does not hold %016llx once",
			    __func__, ti, (unsigned long long)fp);
	}
	for (ti = 0; ti < n; ti++) {
		uint32_t len = q.bk[ti]->len;

		fresh[ti] = NULL;
		if (len > 1 && (fresh[ti] = block_new(x, ti, len - 1,
		    (size_t)(q.slotp[ti] - x->t[ti].dir->slot))) == NULL)
			goto err;
	}
	for (ti = 0; ti < n; ti++) {
		struct table *t = &x->t[ti];

		bucket_remove(x, ti, q.slotp[ti], fresh[ti], (uint32_t)e[ti]);
		count_set(t, t->count - 1);
		compact_maybe(x, ti);
	}
	__atomic_store_n(&x->docs, x->docs - 1, __ATOMIC_RELAXED);
	if (n > 1)
		__atomic_store_n(&x->distinct, x->distinct - 1,
		    __ATOMIC_RELAXED);
	reclaim_maybe(x);
	blocks_sync(x);
	return 1;

err:
	while (ti-- > 0)
		block_dead(x, ti, fresh[ti]);
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

/*
 * Fills a fresh directory of table ti with n entries: one counting pass,
 * buckets allocated once, in slot order (so that they lie in memory in
 * that order), one placing pass.  Each pass permutes fps itself: a few
 * shifts cost less than an array of them to write and read back.  Touches
 * only table ti's memory, so tables build in threads of their own.
 */
static struct dir *
table_build(struct nearidx *x, unsigned ti, const uint64_t *fps,
    const uint64_t *ids, size_t n, unsigned bits)
{
	const struct perm *fwd = &x->t[ti].fwd;
	struct dir *d;
	uint32_t *count = NULL;
	size_t nslots = (size_t)1 << bits;
	int with_ids = ti == 0;

	if ((d = dir_new(x, bits)) == NULL)
		goto err;
	if ((count = calloc(nslots, sizeof(*count))) == NULL)
		goto err;
	for (size_t i = 0; i < n; i++)
		if (++count[perm_apply(fwd, fps[i]) >> (64 - bits)] >=
		    MAX_BUCKET - 1)
			goto err;
	for (size_t s = 0; s < nslots; s++)
		if (count[s] > 0 && (d->slot[s] = block_new(x, ti,
		    count[s] + count[s] / 16 + 1, s)) == NULL)
			goto err;
	free(count);
	count = NULL;
	/* Each entry goes to a bucket at random: its directory slot, the
	 * bucket's header and the lines it is written to are fetched
	 * ahead, in three stages, so that the misses overlap. */
	for (size_t i = 0; i < n; i++) {
		uint64_t p = perm_apply(fwd, fps[i]);
		struct block *bk = d->slot[p >> (64 - bits)];

		if (i + BUILD_AHEAD < n)
			__builtin_prefetch(&d->slot[perm_apply(fwd,
			    fps[i + BUILD_AHEAD]) >> (64 - bits)]);
		if (i + BUILD_AHEAD / 2 < n)
			__builtin_prefetch(d->slot[perm_apply(fwd,
			    fps[i + BUILD_AHEAD / 2]) >> (64 - bits)], 1);
		if (i + BUILD_AHEAD / 4 < n) {
			const struct block *ahead = d->slot[perm_apply(fwd,
			    fps[i + BUILD_AHEAD / 4]) >> (64 - bits)];

			__builtin_prefetch(blk_hi(ahead) + ahead->len, 1);
			__builtin_prefetch(blk_lo(ahead) + ahead->len, 1);
			if (with_ids)
				__builtin_prefetch(blk_id(ahead) + ahead->len,
				    1);
		}
		entry_set(bk, bk->len++, p, with_ids ? (uint32_t)ids[i] : 0,
		    with_ids);
	}
	return d;

err:
	free(count);
	dir_free(x, d, ti);
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

/* One table of a bulk load after the first, built in a thread. */
struct table_job {
	struct nearidx *x;
	unsigned ti;
	const uint64_t *uniq;
	size_t nu;
	struct dir *d;		/* NULL if memory was short */
	pthread_t thread;
	bool started;
};

static void *
table_job_run(void *arg)
{
	struct table_job *j = arg;

	j->d = table_build(j->x, j->ti, j->uniq, NULL, j->nu, bits_for(j->x,
	    &j->x->t[j->ti], j->nu));
	return NULL;
}

int
nearidx_bulk_load(struct nearidx *x, const uint64_t *fps,
    const uint64_t *doc_ids, size_t n, char **cause)
{
	struct dir *nd[NEARIDX_MAX_TABLES] = { NULL };
	struct table_job job[NEARIDX_MAX_TABLES];
	uint64_t *uniq = NULL, *scratch = NULL;
	size_t nu = 0, longest = 0;
	bool short_of_memory = false;
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
	/* The other tables at once, the last in this thread (each its own
	 * memory: table_build). */
	for (ti = 1; ti < x->ntables; ti++) {
		job[ti] = (struct table_job){ x, ti, uniq, nu, NULL, 0, false };
		if (ti + 1 < x->ntables)
			job[ti].started = pthread_create(&job[ti].thread, NULL,
			    table_job_run, &job[ti]) == 0;
		if (!job[ti].started)
			table_job_run(&job[ti]);
	}
	for (ti = 1; ti < x->ntables; ti++) {
		if (job[ti].started)
			pthread_join(job[ti].thread, NULL);
		short_of_memory |= (nd[ti] = job[ti].d) == NULL;
	}
	if (short_of_memory)
		goto err;
	free(uniq);
	/* Table 0 first: a query meanwhile sees no table without it. */
	for (ti = 0; ti < x->ntables; ti++) {
		struct table *t = &x->t[ti];

		retire(x, t->dir, NULL);
		__atomic_store_n(&t->dir, nd[ti], __ATOMIC_RELEASE);
		t->grow_at = grow_at(x, t, nd[ti]->bits);
		count_set(t, ti == 0 ? n : nu);
	}
	__atomic_store_n(&x->docs, n, __ATOMIC_RELAXED);
	__atomic_store_n(&x->distinct, nu, __ATOMIC_RELAXED);
	reclaim_step(x);
	blocks_sync(x);
	return 0;

err:
	for (ti = 0; ti < x->ntables; ti++)
		dir_free(x, nd[ti], ti);
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
 * each entry sits in its bucket and each bucket's size class. */
static int
table_collect(const struct nearidx *x, unsigned ti, uint64_t **out,
    size_t *n, char **cause)
{
	const struct table *t = &x->t[ti];
	const struct dir *d = t->dir;
	uint64_t *v = NULL, live = 0;
	size_t m = 0;

	if ((v = malloc((t->count + 1) * sizeof(*v))) == NULL)
		goto err;
	for (size_t s = 0; s < (size_t)1 << d->bits; s++) {
		const struct block *bk = d->slot[s];
		uint64_t top = (uint64_t)(s >> (d->bits - 16)) << 48;

		if (bk == NULL)
			continue;
		live += block_size(bk->cap, ti == 0);
		if (bk->len == 0 || bk->len > bk->cap || bk->cap % 2 != 0 ||
		    bk->slot != s) {
			if (asprintf(cause, "table %u bucket %zu: length %u, "
			    "room %u", ti, s, bk->len, bk->cap) == -1)
				*cause = NULL;
			goto err;
		}
		for (uint32_t i = 0; i < bk->len; i++) {
			uint64_t pc = top | (uint64_t)blk_hi(bk)[i] << 16 |
			    blk_lo(bk)[i];

			if (pc >> (64 - d->bits) != s || m == t->count) {
				if (asprintf(cause, "table %u bucket %zu: "
				    "misplaced entry or more than %llu", ti,
				    s, (unsigned long long)t->count) == -1)
					*cause = NULL;
				goto err;
			}
			v[m++] = perm_apply(&t->inv, pc);
		}
	}
	if (m != t->count) {
		if (asprintf(cause, "table %u holds %zu entries, counted %llu",
		    ti, m, (unsigned long long)t->count) == -1)
			*cause = NULL;
		goto err;
	}
	if (live + nearidx_alloc_garbage(t->mem) !=
	    nearidx_alloc_used(t->mem)) {
		if (asprintf(cause, "table %u: %llu bytes live and %llu "
		    "garbage of %llu used", ti, (unsigned long long)live,
		    (unsigned long long)nearidx_alloc_garbage(t->mem),
		    (unsigned long long)nearidx_alloc_used(t->mem)) == -1)
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
