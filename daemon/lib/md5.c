/*
 * md5: MD5 (RFC 1321), one message at a time and eight at a time.  See
 * md5.h for why nddd has its own.
 *
 * Eight at a time: lane l of each AVX2 register holds message l's state,
 * and a block of each lane's message goes in per round of 64 steps, its
 * 16 words transposed from the lanes' 8 blocks (two 8-by-8 transposes of
 * 32-bit words).  A lane whose message ends gives its digest and takes
 * the next message at once, so URLs of one block and of ten mix without
 * lanes idling behind the longest; idle lanes (at the end) digest a block
 * of zeros that nobody reads.
 */
#include "md5.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "le.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MD5_HAVE_AVX2 1
#endif

static const uint32_t md5_iv[4] = {
	0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476
};

/* A message's last bytes and padding: the 0x80 byte, zeros and the
 * length in bits, little-endian; returns the blocks it makes (1 or 2). */
static size_t
md5_tail(const uint8_t *msg, size_t len, uint8_t tail[128])
{
	size_t rest = len % 64, blocks = rest < 56 ? 1 : 2;

	memset(tail, 0, 128);
	if (rest > 0)
		memcpy(tail, msg + len - rest, rest);
	tail[rest] = 0x80;
	le_put64(tail + blocks * 64 - 8, (uint64_t)len * 8);
	return blocks;
}

static void
md5_put(const uint32_t st[4], uint8_t out[MD5_DIGEST_LEN])
{
	for (int i = 0; i < 4; i++)
		le_put32(out + 4 * i, st[i]);
}

/* One at a time. */

#define ROTL32(x, s)	((x) << (s) | (x) >> (32 - (s)))
#define F1(b, c, d)	((d) ^ ((b) & ((c) ^ (d))))
#define F2(b, c, d)	((c) ^ ((d) & ((b) ^ (c))))
#define F3(b, c, d)	((b) ^ (c) ^ (d))
#define F4(b, c, d)	((c) ^ ((b) | ~(d)))
#define STEP(f, a, b, c, d, w, k, s) do {				\
	(a) += f((b), (c), (d)) + (w) + (k);				\
	(a) = ROTL32((a), (s)) + (b);					\
} while (0)

/* The 64 steps, for one lane (uint32_t) or eight (__m256i): F1..F4, STEP,
 * the words W(i) and the constant K(k) as each defines them. */
#define MD5_ROUNDS(a, b, c, d)						\
	STEP(F1, a, b, c, d, W(0), K(0xd76aa478), 7);			\
	STEP(F1, d, a, b, c, W(1), K(0xe8c7b756), 12);			\
	STEP(F1, c, d, a, b, W(2), K(0x242070db), 17);			\
	STEP(F1, b, c, d, a, W(3), K(0xc1bdceee), 22);			\
	STEP(F1, a, b, c, d, W(4), K(0xf57c0faf), 7);			\
	STEP(F1, d, a, b, c, W(5), K(0x4787c62a), 12);			\
	STEP(F1, c, d, a, b, W(6), K(0xa8304613), 17);			\
	STEP(F1, b, c, d, a, W(7), K(0xfd469501), 22);			\
	STEP(F1, a, b, c, d, W(8), K(0x698098d8), 7);			\
	STEP(F1, d, a, b, c, W(9), K(0x8b44f7af), 12);			\
	STEP(F1, c, d, a, b, W(10), K(0xffff5bb1), 17);			\
	STEP(F1, b, c, d, a, W(11), K(0x895cd7be), 22);			\
	STEP(F1, a, b, c, d, W(12), K(0x6b901122), 7);			\
	STEP(F1, d, a, b, c, W(13), K(0xfd987193), 12);			\
	STEP(F1, c, d, a, b, W(14), K(0xa679438e), 17);			\
	STEP(F1, b, c, d, a, W(15), K(0x49b40821), 22);			\
	STEP(F2, a, b, c, d, W(1), K(0xf61e2562), 5);			\
	STEP(F2, d, a, b, c, W(6), K(0xc040b340), 9);			\
	STEP(F2, c, d, a, b, W(11), K(0x265e5a51), 14);			\
	STEP(F2, b, c, d, a, W(0), K(0xe9b6c7aa), 20);			\
	STEP(F2, a, b, c, d, W(5), K(0xd62f105d), 5);			\
	STEP(F2, d, a, b, c, W(10), K(0x02441453), 9);			\
	STEP(F2, c, d, a, b, W(15), K(0xd8a1e681), 14);			\
	STEP(F2, b, c, d, a, W(4), K(0xe7d3fbc8), 20);			\
	STEP(F2, a, b, c, d, W(9), K(0x21e1cde6), 5);			\
	STEP(F2, d, a, b, c, W(14), K(0xc33707d6), 9);			\
	STEP(F2, c, d, a, b, W(3), K(0xf4d50d87), 14);			\
	STEP(F2, b, c, d, a, W(8), K(0x455a14ed), 20);			\
	STEP(F2, a, b, c, d, W(13), K(0xa9e3e905), 5);			\
	STEP(F2, d, a, b, c, W(2), K(0xfcefa3f8), 9);			\
	STEP(F2, c, d, a, b, W(7), K(0x676f02d9), 14);			\
	STEP(F2, b, c, d, a, W(12), K(0x8d2a4c8a), 20);			\
	STEP(F3, a, b, c, d, W(5), K(0xfffa3942), 4);			\
	STEP(F3, d, a, b, c, W(8), K(0x8771f681), 11);			\
	STEP(F3, c, d, a, b, W(11), K(0x6d9d6122), 16);			\
	STEP(F3, b, c, d, a, W(14), K(0xfde5380c), 23);			\
	STEP(F3, a, b, c, d, W(1), K(0xa4beea44), 4);			\
	STEP(F3, d, a, b, c, W(4), K(0x4bdecfa9), 11);			\
	STEP(F3, c, d, a, b, W(7), K(0xf6bb4b60), 16);			\
	STEP(F3, b, c, d, a, W(10), K(0xbebfbc70), 23);			\
	STEP(F3, a, b, c, d, W(13), K(0x289b7ec6), 4);			\
	STEP(F3, d, a, b, c, W(0), K(0xeaa127fa), 11);			\
	STEP(F3, c, d, a, b, W(3), K(0xd4ef3085), 16);			\
	STEP(F3, b, c, d, a, W(6), K(0x04881d05), 23);			\
	STEP(F3, a, b, c, d, W(9), K(0xd9d4d039), 4);			\
	STEP(F3, d, a, b, c, W(12), K(0xe6db99e5), 11);			\
	STEP(F3, c, d, a, b, W(15), K(0x1fa27cf8), 16);			\
	STEP(F3, b, c, d, a, W(2), K(0xc4ac5665), 23);			\
	STEP(F4, a, b, c, d, W(0), K(0xf4292244), 6);			\
	STEP(F4, d, a, b, c, W(7), K(0x432aff97), 10);			\
	STEP(F4, c, d, a, b, W(14), K(0xab9423a7), 15);			\
	STEP(F4, b, c, d, a, W(5), K(0xfc93a039), 21);			\
	STEP(F4, a, b, c, d, W(12), K(0x655b59c3), 6);			\
	STEP(F4, d, a, b, c, W(3), K(0x8f0ccc92), 10);			\
	STEP(F4, c, d, a, b, W(10), K(0xffeff47d), 15);			\
	STEP(F4, b, c, d, a, W(1), K(0x85845dd1), 21);			\
	STEP(F4, a, b, c, d, W(8), K(0x6fa87e4f), 6);			\
	STEP(F4, d, a, b, c, W(15), K(0xfe2ce6e0), 10);			\
	STEP(F4, c, d, a, b, W(6), K(0xa3014314), 15);			\
	STEP(F4, b, c, d, a, W(13), K(0x4e0811a1), 21);			\
	STEP(F4, a, b, c, d, W(4), K(0xf7537e82), 6);			\
	STEP(F4, d, a, b, c, W(11), K(0xbd3af235), 10);			\
	STEP(F4, c, d, a, b, W(2), K(0x2ad7d2bb), 15);			\
	STEP(F4, b, c, d, a, W(9), K(0xeb86d391), 21)

static void
md5_block(uint32_t st[4], const uint8_t *p)
{
	uint32_t w[16], a = st[0], b = st[1], c = st[2], d = st[3];

	for (int i = 0; i < 16; i++)
		w[i] = le_get32(p + 4 * i);
#define W(i)	w[i]
#define K(k)	(uint32_t)(k)
	MD5_ROUNDS(a, b, c, d);
#undef W
#undef K
	st[0] += a;
	st[1] += b;
	st[2] += c;
	st[3] += d;
}

void
md5_digest(const void *msg, size_t len, uint8_t out[MD5_DIGEST_LEN])
{
	const uint8_t *p = msg;
	uint32_t st[4];
	uint8_t tail[128];
	size_t tails = md5_tail(p, len, tail);

	memcpy(st, md5_iv, sizeof(st));
	for (size_t i = 0; i < len / 64; i++)
		md5_block(st, p + 64 * i);
	for (size_t i = 0; i < tails; i++)
		md5_block(st, tail + 64 * i);
	md5_put(st, out);
}

/* Eight at a time. */

static pthread_once_t md5_once = PTHREAD_ONCE_INIT;
static bool md5_cpu_avx2;
static int md5_simd_on = 1;

static void
md5_init(void)
{
#ifdef MD5_HAVE_AVX2
	__builtin_cpu_init();
	md5_cpu_avx2 = __builtin_cpu_supports("avx2");
#endif
}

int
md5_simd(void)
{
	pthread_once(&md5_once, md5_init);
	return md5_cpu_avx2 && __atomic_load_n(&md5_simd_on, __ATOMIC_RELAXED);
}

void
md5_use_simd(int on)
{
	__atomic_store_n(&md5_simd_on, on != 0, __ATOMIC_RELAXED);
}

#ifdef MD5_HAVE_AVX2
#define AVX2 __attribute__((target("avx2")))

/* What a lane digests: its message's full blocks, then its tail's. */
struct md5_lane {
	const uint8_t *msg;
	size_t full;		/* the message's full blocks */
	size_t blocks;		/* those and the tail's */
	size_t block;		/* the one it is at */
	size_t idx;		/* the message's index */
	const uint8_t *next;	/* that block's bytes */
	bool busy;
	uint8_t tail[128];
};

static const uint8_t md5_zero_block[64];

static void
lane_point(struct md5_lane *l)
{
	l->next = l->block < l->full ? l->msg + 64 * l->block :
	    l->tail + 64 * (l->block - l->full);
}

/* Lane l takes message i. */
static void
lane_take(struct md5_lane *l, const void *const *msgs, const size_t *lens,
    size_t i)
{
	l->msg = msgs[i];
	l->full = lens[i] / 64;
	l->blocks = l->full + md5_tail(l->msg, lens[i], l->tail);
	l->block = 0;
	l->idx = i;
	l->busy = true;
	lane_point(l);
}

/* Lane l idles: it digests zeros that nobody reads. */
static void
lane_idle(struct md5_lane *l)
{
	l->busy = false;
	l->next = md5_zero_block;
}

/* Rows r[0..7] (8 words of each lane) become the columns w[0..7]. */
AVX2 static inline void
transpose8(const __m256i r[8], __m256i w[8])
{
	__m256i t[8], u[8];

	for (int i = 0; i < 4; i++) {
		t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	for (int i = 0; i < 2; i++) {
		u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1],
		    t[4 * i + 3]);
		u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1],
		    t[4 * i + 3]);
	}
	for (int i = 0; i < 4; i++) {
		w[i] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
		w[i + 4] = _mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
	}
}

#undef ROTL32
#undef F1
#undef F2
#undef F3
#undef F4
#undef STEP
#define ADD(x, y)	_mm256_add_epi32((x), (y))
#define XOR(x, y)	_mm256_xor_si256((x), (y))
#define ROTL32(x, s)	_mm256_or_si256(_mm256_slli_epi32((x), (s)), \
			    _mm256_srli_epi32((x), 32 - (s)))
#define F1(b, c, d)	XOR((d), _mm256_and_si256((b), XOR((c), (d))))
#define F2(b, c, d)	XOR((c), _mm256_and_si256((d), XOR((b), (c))))
#define F3(b, c, d)	XOR(XOR((b), (c)), (d))
#define F4(b, c, d)	XOR((c), _mm256_or_si256((b), XOR((d), ones)))
#define STEP(f, a, b, c, d, w, k, s) do {				\
	(a) = ADD((a), ADD(f((b), (c), (d)), ADD((w), (k))));		\
	(a) = ADD(ROTL32((a), (s)), (b));				\
} while (0)

/* One block of each lane's message. */
AVX2 static void
md5_block8(__m256i st[4], const struct md5_lane lanes[8])
{
	const __m256i ones = _mm256_set1_epi32(-1);
	__m256i r[8], w[16];
	__m256i a = st[0], b = st[1], c = st[2], d = st[3];

	for (int half = 0; half < 2; half++) {
		for (int l = 0; l < 8; l++)
			r[l] = _mm256_loadu_si256((const __m256i *)
			    (const void *)(lanes[l].next + 32 * half));
		transpose8(r, w + 8 * half);
	}
#define W(i)	w[i]
#define K(k)	_mm256_set1_epi32((int)(k))
	MD5_ROUNDS(a, b, c, d);
#undef W
#undef K
	st[0] = ADD(st[0], a);
	st[1] = ADD(st[1], b);
	st[2] = ADD(st[2], c);
	st[3] = ADD(st[3], d);
}

AVX2 static void
md5_digests8(const void *const *msgs, const size_t *lens, size_t n,
    uint8_t *out)
{
	struct md5_lane lanes[8];
	__m256i st[4];
	uint32_t s[4][8];
	size_t taken = 0, busy = 0;

	for (int l = 0; l < 8; l++) {
		for (int i = 0; i < 4; i++)
			s[i][l] = md5_iv[i];
		if (taken < n) {
			lane_take(&lanes[l], msgs, lens, taken++);
			busy++;
		} else
			lane_idle(&lanes[l]);
	}
	for (int i = 0; i < 4; i++)
		st[i] = _mm256_loadu_si256((const __m256i *)(void *)s[i]);
	while (busy > 0) {
		bool ended = false;

		md5_block8(st, lanes);
		for (int l = 0; l < 8; l++) {
			if (!lanes[l].busy)
				continue;
			if (++lanes[l].block < lanes[l].blocks)
				lane_point(&lanes[l]);
			else
				ended = true;
		}
		if (!ended)
			continue;
		/* A lane done gives its digest and takes the next message,
		 * from the initial state. */
		for (int i = 0; i < 4; i++)
			_mm256_storeu_si256((__m256i *)(void *)s[i], st[i]);
		for (int l = 0; l < 8; l++) {
			uint32_t one[4];

			if (!lanes[l].busy || lanes[l].block < lanes[l].blocks)
				continue;
			for (int i = 0; i < 4; i++) {
				one[i] = s[i][l];
				s[i][l] = md5_iv[i];
			}
			md5_put(one, out + MD5_DIGEST_LEN * lanes[l].idx);
			if (taken < n)
				lane_take(&lanes[l], msgs, lens, taken++);
			else {
				lane_idle(&lanes[l]);
				busy--;
			}
		}
		for (int i = 0; i < 4; i++)
			st[i] = _mm256_loadu_si256((const __m256i *)(void *)
			    s[i]);
	}
}
#endif

/* Below this many messages, the lanes would mostly idle. */
#define MD5_SIMD_MIN	4

void
md5_digests(const void *const *msgs, const size_t *lens, size_t n,
    uint8_t *out)
{
#ifdef MD5_HAVE_AVX2
	if (n >= MD5_SIMD_MIN && md5_simd()) {
		md5_digests8(msgs, lens, n, out);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		md5_digest(msgs[i], lens[i], out + MD5_DIGEST_LEN * i);
}
