/*
 * sketch: a document's shingle sketch.  See sketch.h.
 *
 * One pass over the text: terms are cut and folded as simhash cuts them,
 * stop words dropped, each kept term hashed; each window of SKETCH_SHINGLE
 * term hashes makes a shingle hash, which a set of the document's hashes
 * counts once and a max-heap of the SKETCH_K smallest keeps.  After the
 * first few hundred shingles a new hash is seldom below the heap's top,
 * so the heap costs little; the set is what costs, and is why the count
 * is exact.
 */
#include "sketch.h"

#include <stdlib.h>
#include <string.h>

#include "html.h"
#include "stopwords.h"

/* Bytes of HTML text stripped at a time. */
#define SKETCH_WINDOW 16384
/* Where a term longer than any stop word stops being kept. */
#define SKETCH_TERM_KEEP (STOPWORDS_MAX_LEN + 1)

struct sketch_scratch {
	uint8_t cls[256];	/* 0: separator, else the folded byte */
	uint32_t *set;		/* open addressing, 0 = empty */
	size_t set_cap;		/* a power of two */
	uint8_t win[SKETCH_WINDOW];
};

/* The state of one document's pass. */
struct pass {
	struct sketch_scratch *sc;
	const struct stopwords *sw;
	/* The term being read. */
	uint8_t term[SKETCH_TERM_KEEP];
	size_t term_len;
	uint64_t term_h;	/* sdbm so far */
	/* The last terms' hashes, and how many terms there were. */
	uint64_t ring[SKETCH_SHINGLE];
	uint64_t terms;
	/* The distinct hashes: counted, and the smallest kept in a heap. */
	size_t set_used;
	bool zero_seen;		/* hash 0, which the set cannot hold */
	bool overflow;		/* past SKETCH_EXACT_MAX */
	uint32_t distinct;
	uint32_t heap[SKETCH_K];
	uint32_t nheap;
};

struct sketch_scratch *
sketch_scratch_new(void)
{
	struct sketch_scratch *sc = calloc(1, sizeof(*sc));

	if (sc == NULL)
		return NULL;
	for (int c = 0; c < 256; c++)
		sc->cls[c] = simhash_byte_is_separator((uint8_t)c) ? 0 :
		    simhash_byte_fold((uint8_t)c);
	/* A byte 0 belongs to a term, and folds to 0 like the separators'
	 * mark: feed tells the two apart by the byte itself. */
	return sc;
}

void
sketch_scratch_free(struct sketch_scratch *sc)
{
	if (sc == NULL)
		return;
	free(sc->set);
	free(sc);
}

static inline uint64_t
rotl64(uint64_t x, unsigned r)
{
	return x << r | x >> (64 - r);
}

/* The hash of a shingle of terms a, b, c (in that order); a shorter
 * document's one shingle has 0 for its missing terms. */
static inline uint32_t
shingle_hash(uint64_t a, uint64_t b, uint64_t c)
{
	return (uint32_t)(simhash_fmix64(rotl64(a, 42) ^ rotl64(b, 21) ^ c ^
	    0x6e64646473686e67ULL) >> 32);
}

/* Sifts the heap's top down (a max-heap of the smallest hashes). */
static void
heap_down(uint32_t *h, uint32_t n, uint32_t i)
{
	uint32_t v = h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1] > h[c])
			c++;
		if (h[c] <= v)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = v;
}

static void
heap_up(uint32_t *h, uint32_t i)
{
	uint32_t v = h[i];

	while (i > 0 && h[(i - 1) / 2] < v) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

/* Whether v is a hash the heap already holds (the set's overflow only). */
static bool
heap_has(const struct pass *ps, uint32_t v)
{
	for (uint32_t i = 0; i < ps->nheap; i++)
		if (ps->heap[i] == v)
			return true;
	return false;
}

/* Counts v in the set; whether it is new there. */
static bool
set_add(struct pass *ps, uint32_t v)
{
	struct sketch_scratch *sc = ps->sc;
	size_t mask = sc->set_cap - 1, i;

	if (v == 0) {
		bool was = ps->zero_seen;

		ps->zero_seen = true;
		return !was;
	}
	i = (size_t)(v * 0x9E3779B1u) & mask;
	while (sc->set[i] != 0) {
		if (sc->set[i] == v)
			return false;
		i = (i + 1) & mask;
	}
	sc->set[i] = v;
	ps->set_used++;
	return true;
}

/* Doubles the set; -1 when memory is short. */
static int
set_grow(struct pass *ps)
{
	struct sketch_scratch *sc = ps->sc;
	size_t cap = sc->set_cap * 2, mask = cap - 1;
	uint32_t *old = sc->set, *set = calloc(cap, sizeof(*set));

	if (set == NULL)
		return -1;
	for (size_t j = 0; j < sc->set_cap; j++) {
		size_t i;

		if (old[j] == 0)
			continue;
		i = (size_t)(old[j] * 0x9E3779B1u) & mask;
		while (set[i] != 0)
			i = (i + 1) & mask;
		set[i] = old[j];
	}
	free(old);
	sc->set = set;
	sc->set_cap = cap;
	return 0;
}

/* One shingle hash of the document. */
static int
add_hash(struct pass *ps, uint32_t v)
{
	if (!ps->overflow) {
		if (!set_add(ps, v))
			return 0;
		ps->distinct++;
		if (ps->distinct >= SKETCH_EXACT_MAX)
			ps->overflow = true;
		else if (ps->set_used * 2 > ps->sc->set_cap &&
		    set_grow(ps) == -1)
			return -1;
	} else if ((ps->nheap == SKETCH_K && v >= ps->heap[0]) ||
	    heap_has(ps, v))
		return 0;
	if (ps->nheap < SKETCH_K) {
		ps->heap[ps->nheap] = v;
		heap_up(ps->heap, ps->nheap++);
	} else if (v < ps->heap[0]) {
		ps->heap[0] = v;
		heap_down(ps->heap, SKETCH_K, 0);
	}
	return 0;
}

/* The term just read ends: dropped if a stop word, else shingled. */
static int
end_term(struct pass *ps)
{
	uint64_t h;

	if (ps->term_len == 0)
		return 0;
	if (ps->term_len < SKETCH_TERM_KEEP && ps->sw != NULL &&
	    stopwords_contains(ps->sw, ps->term, ps->term_len)) {
		ps->term_len = 0;
		ps->term_h = 0;
		return 0;
	}
	h = simhash_fmix64(ps->term_h);
	ps->term_len = 0;
	ps->term_h = 0;
	ps->ring[ps->terms % SKETCH_SHINGLE] = h;
	ps->terms++;
	if (ps->terms < SKETCH_SHINGLE)
		return 0;
	return add_hash(ps, shingle_hash(
	    ps->ring[(ps->terms - 3) % SKETCH_SHINGLE],
	    ps->ring[(ps->terms - 2) % SKETCH_SHINGLE],
	    ps->ring[(ps->terms - 1) % SKETCH_SHINGLE]));
}

/* Reads n bytes of text: separators end terms, other bytes extend them.
 * preprocessed: only SPACE separates, and nothing is folded. */
static int
feed(struct pass *ps, const uint8_t *p, size_t n, bool preprocessed)
{
	const uint8_t *cls = ps->sc->cls;

	for (size_t i = 0; i < n; i++) {
		uint8_t c = p[i];
		bool sep = preprocessed ? c == ' ' : (cls[c] == 0 && c != 0);

		if (sep) {
			if (end_term(ps) == -1)
				return -1;
			continue;
		}
		if (!preprocessed)
			c = cls[c];
		ps->term_h = ps->term_h * SIMHASH_SDBM_MULT + c;
		if (ps->term_len < SKETCH_TERM_KEEP)
			ps->term[ps->term_len] = c;
		ps->term_len++;
	}
	return 0;
}

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Sizes and clears the set for a document of len bytes. */
static int
set_reset(struct sketch_scratch *sc, size_t len)
{
	size_t want = 1024;

	/* Every term and its separator take two bytes at least. */
	while (want < len && want < (size_t)SKETCH_EXACT_MAX * 2)
		want *= 2;
	if (sc->set_cap < want || sc->set_cap > 4 * want) {
		free(sc->set);
		sc->set_cap = 0;
		if ((sc->set = calloc(want, sizeof(*sc->set))) == NULL)
			return -1;
		sc->set_cap = want;
		return 0;
	}
	memset(sc->set, 0, sc->set_cap * sizeof(*sc->set));
	return 0;
}

int
sketch_compute(const struct stopwords *sw, struct sketch_scratch *sc,
    enum simhash_input input, const void *doc, size_t len,
    struct sketch *out)
{
	struct pass *ps;
	struct html_strip hs;
	size_t w;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if ((ps = calloc(1, sizeof(*ps))) == NULL)
		return -1;
	ps->sc = sc;
	ps->sw = input == SIMHASH_INPUT_PREPROCESSED ? NULL : sw;
	if (set_reset(sc, len) == -1)
		goto out;
	if (input == SIMHASH_INPUT_HTML) {
		html_strip_init(&hs, doc, len);
		while ((w = html_strip_next(&hs, sc->win, sizeof(sc->win))) > 0)
			if (feed(ps, sc->win, w, false) == -1)
				goto out;
	} else if (feed(ps, doc, len, input == SIMHASH_INPUT_PREPROCESSED) ==
	    -1)
		goto out;
	if (end_term(ps) == -1)
		goto out;
	/* Fewer terms than a shingle: one shingle of them all, its missing
	 * terms 0 (no term hashes to 0: fmix64 maps only 0 there). */
	if (ps->terms == 1 && add_hash(ps, shingle_hash(0, 0,
	    ps->ring[0])) == -1)
		goto out;
	if (ps->terms == 2 && add_hash(ps, shingle_hash(0, ps->ring[0],
	    ps->ring[1])) == -1)
		goto out;
	out->n = ps->nheap;
	memcpy(out->h, ps->heap, ps->nheap * sizeof(out->h[0]));
	qsort(out->h, out->n, sizeof(out->h[0]), cmp_u32);
	out->shingles = ps->distinct;
	if (ps->overflow && out->n == SKETCH_K) {
		/* k - 1 hashes below the k-th, spread evenly over 2^32. */
		double est = (double)(SKETCH_K - 1) * 4294967296.0 /
		    ((double)out->h[SKETCH_K - 1] + 1.0);

		if (est > (double)out->shingles)
			out->shingles = est >= 4294967295.0 ? UINT32_MAX :
			    (uint32_t)est;
	}
	rc = 0;
out:
	free(ps);
	return rc;
}

size_t
sketch_keys(const struct sketch *s, uint32_t keys[SKETCH_KEYS])
{
	size_t n = s->n < SKETCH_KEYS ? s->n : SKETCH_KEYS;

	memcpy(keys, s->h, n * sizeof(keys[0]));
	return n;
}

void
sketch_compare(const struct sketch *a, const struct sketch *b,
    struct sketch_similarity *out)
{
	/* A sketch that holds every hash of its set samples all of it;
	 * one that holds SKETCH_K samples those up to its largest. */
	uint64_t ta = a->shingles > a->n ? a->h[a->n - 1] : UINT64_MAX;
	uint64_t tb = b->shingles > b->n ? b->h[b->n - 1] : UINT64_MAX;
	uint64_t t = ta < tb ? ta : tb;
	uint32_t i = 0, j = 0, both = 0, either = 0;
	double jac, inter, small;

	out->resemblance = 0;
	out->containment = 0;
	if (a->n == 0 || b->n == 0)
		return;
	while ((i < a->n && a->h[i] <= t) || (j < b->n && b->h[j] <= t)) {
		bool ha = i < a->n && a->h[i] <= t;
		bool hb = j < b->n && b->h[j] <= t;

		either++;
		if (ha && hb && a->h[i] == b->h[j]) {
			both++;
			i++;
			j++;
		} else if (ha && (!hb || a->h[i] < b->h[j]))
			i++;
		else
			j++;
	}
	if (either == 0)
		return;
	jac = (double)both / either;
	/* |A n B| = J (|A| + |B|) / (1 + J). */
	inter = jac * ((double)a->shingles + b->shingles) / (1.0 + jac);
	small = a->shingles < b->shingles ? a->shingles : b->shingles;
	out->resemblance = (float)jac;
	out->containment = small > 0 ? (float)(inter >= small ? 1.0 :
	    inter / small) : 0;
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

size_t
sketch_encode(const struct sketch *s, uint8_t *out)
{
	out[0] = SKETCH_VERSION;
	out[1] = (uint8_t)s->n;
	put32(out + 2, s->shingles);
	for (uint32_t i = 0; i < s->n; i++)
		put32(out + 6 + 4 * i, s->h[i]);
	return 6 + 4 * (size_t)s->n;
}

int
sketch_decode(const void *data, size_t len, struct sketch *out)
{
	const uint8_t *p = data;
	uint32_t n;

	if (len < 6 || p[0] != SKETCH_VERSION || (n = p[1]) > SKETCH_K ||
	    len != 6 + 4 * (size_t)n)
		return -1;
	out->n = n;
	out->shingles = get32(p + 2);
	if (n != (out->shingles < SKETCH_K ? out->shingles : SKETCH_K))
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		out->h[i] = get32(p + 6 + 4 * i);
		if (i > 0 && out->h[i] <= out->h[i - 1])
			return -1;
	}
	return 0;
}
