/*
 * urlrec: records and segments of the URL store.  See urlrec.h.
 */
#include "urlrec.h"

#include <stdlib.h>
#include <string.h>

#include "le.h"

/* Records walked from the interpolated guess before searching by halves. */
#define URLSEG_WALK 6

static uint32_t
fp_top32(const uint8_t *fp)
{
	return (uint32_t)fp[0] << 24 | (uint32_t)fp[1] << 16 |
	    (uint32_t)fp[2] << 8 | fp[3];
}

int
urlrec_encode(const struct url_record *r, uint8_t out[URLREC_LEN])
{
	uint32_t block = r->idx[0] / CBF_BLOCK;

	for (int i = 1; i < CBF_K; i++)
		if (r->idx[i] / CBF_BLOCK != block)
			return -1;
	memcpy(out, r->fp, CBF_FP_LEN);
	le_put32(out + 16, r->st.count);
	le_put32(out + 20, block);
	for (int i = 0; i < CBF_K; i++)
		out[24 + i] = (uint8_t)(r->idx[i] % CBF_BLOCK);
	le_put64(out + 32, r->st.first_seen_ms);
	le_put64(out + 40, r->st.last_seen_ms);
	le_put64(out + 48, r->st.expires_ms);
	le_put32(out + 56, r->st.ns);
	le_put32(out + 60, 0);
	return 0;
}

void
urlrec_decode_v2(const uint8_t in[URLREC_V2_LEN], struct url_record *r)
{
	uint32_t block = le_get32(in + 20);

	memcpy(r->fp, in, CBF_FP_LEN);
	for (int i = 0; i < CBF_K; i++)
		r->idx[i] = block * CBF_BLOCK + in[24 + i];
	r->st.count = le_get32(in + 16);
	r->st.first_seen_ms = le_get64(in + 32);
	r->st.last_seen_ms = le_get64(in + 40);
	r->st.expires_ms = 0;
	r->st.ns = 0;
}

void
urlrec_decode(const uint8_t in[URLREC_LEN], struct url_record *r)
{
	/* Format 3 begins as format 2 did. */
	urlrec_decode_v2(in, r);
	r->st.expires_ms = le_get64(in + 48);
	r->st.ns = le_get32(in + 56);
}

uint64_t
urlrec_expires_ms(const uint8_t in[URLREC_LEN])
{
	return le_get64(in + 48);
}

/* Items per bucket above which urlrec_sort sorts a bucket by halves: only
 * fingerprints made to share their leading bits fill one so. */
#define URLREC_SORT_BUCKET 16

static int
cmp_items(const void *a, const void *b)
{
	return urlrec_cmp_fp(a, b);
}

int
urlrec_sort(void *items, size_t n, size_t size, void *tmp)
{
	uint8_t *a = items, *t = tmp;
	unsigned bits = 1;
	size_t *start, nb;

	while (bits < 24 && ((size_t)1 << bits) < n)
		bits++;
	nb = (size_t)1 << bits;
	if ((start = calloc(nb + 1, sizeof(*start))) == NULL)
		return -1;
	for (size_t i = 0; i < n; i++)
		start[(urlrec_be64(a + i * size) >> (64 - bits)) + 1]++;
	for (size_t b = 1; b <= nb; b++)
		start[b] += start[b - 1];
	for (size_t i = 0; i < n; i++) {
		size_t b = urlrec_be64(a + i * size) >> (64 - bits);

		memcpy(t + start[b]++ * size, a + i * size, size);
	}
	/* start[b] is now where bucket b ends.  Each holds one item or so:
	 * insertion finishes it; a crowded one (fingerprints sharing their
	 * leading bits on purpose) is sorted by halves instead. */
	for (size_t b = 0, lo = 0; b < nb; lo = start[b++]) {
		size_t hi = start[b];

		if (hi - lo > URLREC_SORT_BUCKET) {
			qsort(t + lo * size, hi - lo, size, cmp_items);
			continue;
		}
		for (size_t i = lo + 1; i < hi; i++) {
			size_t j = i;

			if (urlrec_cmp_fp(t + (i - 1) * size, t + i * size) <=
			    0)
				continue;
			memcpy(a, t + i * size, size);	/* a[0]: scratch */
			while (j > lo && urlrec_cmp_fp(t + (j - 1) * size, a) >
			    0) {
				memcpy(t + j * size, t + (j - 1) * size, size);
				j--;
			}
			memcpy(t + j * size, a, size);
		}
	}
	free(start);
	memcpy(a, t, n * size);
	return 0;
}

const uint8_t *
urlseg_record(const uint8_t *seg, uint32_t i)
{
	return seg + URLSEG_HEADER + (size_t)i * URLREC_LEN;
}

void
urlseg_init(uint8_t *seg, uint32_t n)
{
	le_put32(seg, URLSEG_MAGIC);
	le_put32(seg + 4, n);
	for (uint32_t j = 0; j < URLSEG_FENCES; j++)
		le_put32(seg + 8 + 4 * j, j * URLSEG_RUN < n ?
		    fp_top32(urlseg_record(seg, j * URLSEG_RUN)) : UINT32_MAX);
}

static int64_t
check_header(const uint8_t *seg, size_t len, uint32_t magic, size_t reclen)
{
	uint32_t n;

	if (len < URLSEG_HEADER || le_get32(seg) != magic)
		return -1;
	n = le_get32(seg + 4);
	if (n > URLSEG_MAX || len != URLSEG_HEADER + (size_t)n * reclen)
		return -1;
	return n;
}

int64_t
urlseg_check(const uint8_t *seg, size_t len)
{
	return check_header(seg, len, URLSEG_MAGIC, URLREC_LEN);
}

int64_t
urlseg_check_v2(const uint8_t *seg, size_t len)
{
	return check_header(seg, len, URLSEG_V2_MAGIC, URLREC_V2_LEN);
}

uint32_t
urlseg_fence_guess(const uint8_t fp[CBF_FP_LEN], uint32_t n)
{
	uint32_t runs = (n + URLSEG_RUN - 1) / URLSEG_RUN;

	return runs == 0 ? 0 : (uint32_t)(((uint64_t)fp_top32(fp) * runs) >>
	    32);
}

static uint32_t
fence(const uint8_t *seg, uint32_t j)
{
	return j < URLSEG_FENCES ? le_get32(seg + 8 + 4 * j) : UINT32_MAX;
}

void
urlseg_locate(const uint8_t *seg, uint32_t n, const uint8_t fp[CBF_FP_LEN],
    uint32_t *lo, uint32_t *hi, uint32_t *guess)
{
	uint32_t k = fp_top32(fp), runs = (n + URLSEG_RUN - 1) / URLSEG_RUN;
	uint32_t a = urlseg_fence_guess(fp, n), first, last, f0, f1;

	/* first: the first run whose fence is >= k; the record can only lie
	 * in the run before it, or in runs whose fence equals k.  The keys
	 * are uniform: walk from where k should be, a step or none. */
	if (runs == 0)
		a = 0;
	else if (fence(seg, a) < k)
		while (a < runs && fence(seg, a) < k)
			a++;
	else
		while (a > 0 && fence(seg, a - 1) >= k)
			a--;
	first = a;
	while (a < runs && fence(seg, a) == k)
		a++;
	last = a;		/* runs [first - 1, last) may hold it */
	*lo = first > 0 ? (first - 1) * URLSEG_RUN : 0;
	*hi = last * URLSEG_RUN < n ? last * URLSEG_RUN : n;
	if (*hi <= *lo) {
		*guess = *lo;
		return;
	}
	/* Within one run, keys are uniform: interpolate between its fence
	 * and the next one. */
	if (first == 0 || last != first) {
		*guess = *lo;
		return;
	}
	f0 = fence(seg, first - 1);
	f1 = fence(seg, first);
	*guess = *lo + (uint32_t)((uint64_t)(k - f0) * (*hi - *lo) /
	    ((uint64_t)f1 - f0 + 1));
	if (*guess >= *hi)
		*guess = *hi - 1;
}

int64_t
urlseg_find(const uint8_t *seg, uint32_t lo, uint32_t hi, uint32_t guess,
    const uint8_t fp[CBF_FP_LEN])
{
	int c;

	if (hi <= lo)
		return -1;
	if (guess < lo || guess >= hi)
		guess = lo;
	/* Walk from the guess, a few records in the usual case (the same
	 * cache line or the next); far off, search what is left. */
	c = urlrec_cmp_fp(urlseg_record(seg, guess), fp);
	if (c == 0)
		return guess;
	if (c < 0) {
		lo = guess + 1;
		for (int step = 0; step < URLSEG_WALK && lo < hi; step++) {
			c = urlrec_cmp_fp(urlseg_record(seg, lo), fp);
			if (c == 0)
				return lo;
			if (c > 0)
				return -1;
			lo++;
		}
	} else {
		hi = guess;
		for (int step = 0; step < URLSEG_WALK && lo < hi; step++) {
			c = urlrec_cmp_fp(urlseg_record(seg, hi - 1), fp);
			if (c == 0)
				return hi - 1;
			if (c < 0)
				return -1;
			hi--;
		}
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		c = urlrec_cmp_fp(urlseg_record(seg, mid), fp);
		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
