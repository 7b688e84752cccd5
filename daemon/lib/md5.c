/*
 * md5: MD5 (RFC 1321), one message at a time and many at a time.  See
 * md5.h for why nddd has its own.
 *
 * Many at a time: lane l of each AVX-512 (16 lanes) or AVX2 (8 lanes)
 * register holds message l's state, and a block of each lane's message
 * goes in per round of 64 steps, its 16 words transposed from the lanes'
 * blocks (one 16-by-16 or two 8-by-8 transposes of 32-bit words).  A lane
 * whose message ends gives its digest and takes the next message at once,
 * so URLs of one block and of ten mix without lanes idling behind the
 * longest; idle lanes (at the end) digest a block of zeros that nobody
 * reads.
 */
#include "md5.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "le.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MD5_HAVE_SIMD 1
#endif

static const uint32_t md5_iv[4] = {
	0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476
};

/* A message's last bytes and padding: the 0x80 byte, zeros and the
 * length in bits, little-endian; returns the blocks it makes (1 or 2). */
static size_t
md5_tail(const uint8_t *msg, size_t len, uint8_t tail[128])
{
	size_t rest = len % 64, blocks = rest < 56 ? 1 : 2, i = 0;
	const uint8_t *from = msg + len - rest;

	/* Fixed sizes, which the compiler inlines: for a URL's few bytes a
	 * call to memset or memcpy costs more than the copy. */
	memset(tail, 0, 64);
	if (blocks == 2)
		memset(tail + 64, 0, 64);
	if (rest >= 8) {
		for (; i + 8 <= rest; i += 8)
			memcpy(tail + i, from + i, 8);
		/* The last bytes, overlapping the copy before them. */
		memcpy(tail + rest - 8, from + rest - 8, 8);
	} else {
		for (; i < rest; i++)
			tail[i] = from[i];
	}
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

/* Many at a time. */

static pthread_once_t md5_once = PTHREAD_ONCE_INIT;
static int md5_cpu_lanes = 1;		/* what the CPU can do */
static int md5_max_lanes = MD5_LANES_MAX;	/* what we were told */

static void
md5_init(void)
{
#ifdef MD5_HAVE_SIMD
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		md5_cpu_lanes = 16;
	else if (__builtin_cpu_supports("avx2"))
		md5_cpu_lanes = 8;
#endif
}

int
md5_lanes(void)
{
	int max = __atomic_load_n(&md5_max_lanes, __ATOMIC_RELAXED);

	pthread_once(&md5_once, md5_init);
	return md5_cpu_lanes < max ? md5_cpu_lanes : max;
}

void
md5_limit_lanes(int lanes)
{
	__atomic_store_n(&md5_max_lanes, lanes, __ATOMIC_RELAXED);
}

#ifdef MD5_HAVE_SIMD
/* What a lane digests: its message's full blocks, then its tail's. */
struct md5_lane {
	const uint8_t *msg;
	size_t full;		/* the message's full blocks */
	size_t blocks;		/* those and the tail's */
	size_t block;		/* the one it is at */
	size_t idx;		/* the message's index */
	bool busy;
	uint8_t tail[128];
};

/*
 * One block of each lane's message: st[i][l] is state word i of lane l,
 * next[l] the lane's 64 bytes.
 */
typedef void md5_block_fn(uint32_t st[4][MD5_LANES_MAX],
    const uint8_t *const next[MD5_LANES_MAX]);

static const uint8_t md5_zero_block[64];

static const uint8_t *
lane_next(const struct md5_lane *l)
{
	if (!l->busy)
		return md5_zero_block;	/* digested; nobody reads it */
	return l->block < l->full ? l->msg + 64 * l->block :
	    l->tail + 64 * (l->block - l->full);
}

/* Lane l takes message i, from the initial state. */
static void
lane_take(struct md5_lane *l, uint32_t st[4][MD5_LANES_MAX], int li,
    const void *const *msgs, const size_t *lens, size_t i)
{
	l->msg = msgs[i];
	l->full = lens[i] / 64;
	l->blocks = l->full + md5_tail(l->msg, lens[i], l->tail);
	l->block = 0;
	l->idx = i;
	l->busy = true;
	for (int w = 0; w < 4; w++)
		st[w][li] = md5_iv[w];
}

/*
 * n messages through `lanes` lanes of block(): a lane whose message ends
 * gives its digest and takes the next message at once.
 */
static void
md5_run_lanes(md5_block_fn *block, int lanes, const void *const *msgs,
    const size_t *lens, size_t n, uint8_t *out)
{
	struct md5_lane lane[MD5_LANES_MAX];
	/* Idle lanes digest from zeros. */
	uint32_t st[4][MD5_LANES_MAX] = { { 0 } };
	const uint8_t *next[MD5_LANES_MAX];
	size_t taken = 0;
	int busy = 0;

	for (int l = 0; l < lanes; l++) {
		lane[l].busy = false;
		if (taken < n) {
			lane_take(&lane[l], st, l, msgs, lens, taken++);
			busy++;
		}
		next[l] = lane_next(&lane[l]);
	}
	while (busy > 0) {
		block(st, next);
		for (int l = 0; l < lanes; l++) {
			struct md5_lane *ln = &lane[l];

			if (!ln->busy)
				continue;
			if (++ln->block == ln->blocks) {
				uint32_t one[4];

				for (int w = 0; w < 4; w++)
					one[w] = st[w][l];
				md5_put(one, out + MD5_DIGEST_LEN * ln->idx);
				ln->busy = false;
				if (taken < n)
					lane_take(ln, st, l, msgs, lens,
					    taken++);
				else
					busy--;
			}
			next[l] = lane_next(ln);
		}
	}
}

#define AVX2	__attribute__((target("avx2")))
#define AVX512	__attribute__((target("avx512f")))

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

/* Eight lanes, in AVX2 registers. */
AVX2 static void
md5_block8(uint32_t st[4][MD5_LANES_MAX],
    const uint8_t *const next[MD5_LANES_MAX])
{
	const __m256i ones = _mm256_set1_epi32(-1);
	__m256i r[8], w[16], s[4], v[4];

	for (int half = 0; half < 2; half++) {
		for (int l = 0; l < 8; l++)
			r[l] = _mm256_loadu_si256((const __m256i *)
			    (const void *)(next[l] + 32 * half));
		transpose8(r, w + 8 * half);
	}
	for (int i = 0; i < 4; i++)
		s[i] = v[i] = _mm256_loadu_si256((const __m256i *)
		    (void *)st[i]);
#define W(i)	w[i]
#define K(k)	_mm256_set1_epi32((int)(k))
	MD5_ROUNDS(v[0], v[1], v[2], v[3]);
#undef W
#undef K
	for (int i = 0; i < 4; i++)
		_mm256_storeu_si256((__m256i *)(void *)st[i], ADD(s[i], v[i]));
}

/*
 * Rows r[0..15] (a lane's 16 words each) become the columns w[0..15]:
 * 32-bit and 64-bit interleaves within 128-bit chunks, then two rounds
 * of chunk shuffles.
 */
AVX512 static inline void
transpose16(const __m512i r[16], __m512i w[16])
{
	__m512i t[16], u[16];

	for (int i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	/* u[4g + j], chunk c: word 4c + j of rows 4g .. 4g + 3. */
	for (int g = 0; g < 4; g++) {
		u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
		u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
		u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1],
		    t[4 * g + 3]);
		u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1],
		    t[4 * g + 3]);
	}
	for (int j = 0; j < 4; j++) {
		__m512i lo01 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44);
		__m512i hi01 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xee);
		__m512i lo23 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
		__m512i hi23 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xee);

		w[j] = _mm512_shuffle_i32x4(lo01, lo23, 0x88);
		w[4 + j] = _mm512_shuffle_i32x4(lo01, lo23, 0xdd);
		w[8 + j] = _mm512_shuffle_i32x4(hi01, hi23, 0x88);
		w[12 + j] = _mm512_shuffle_i32x4(hi01, hi23, 0xdd);
	}
}

#undef ADD
#undef ROTL32
#undef F1
#undef F2
#undef F3
#undef F4
#undef STEP
/* AVX-512 rotates in one instruction and makes each round's function in
 * one (vpternlogd: the immediate is the function's truth table). */
#define ADD(x, y)	_mm512_add_epi32((x), (y))
#define ROTL32(x, s)	_mm512_rol_epi32((x), (s))
#define F1(b, c, d)	_mm512_ternarylogic_epi32((b), (c), (d), 0xca)
#define F2(b, c, d)	_mm512_ternarylogic_epi32((d), (b), (c), 0xca)
#define F3(b, c, d)	_mm512_ternarylogic_epi32((b), (c), (d), 0x96)
#define F4(b, c, d)	_mm512_ternarylogic_epi32((b), (c), (d), 0x39)
#define STEP(f, a, b, c, d, w, k, s) do {				\
	(a) = ADD((a), ADD(f((b), (c), (d)), ADD((w), (k))));		\
	(a) = ADD(ROTL32((a), (s)), (b));				\
} while (0)

/* Sixteen lanes, in AVX-512 registers. */
AVX512 static void
md5_block16(uint32_t st[4][MD5_LANES_MAX],
    const uint8_t *const next[MD5_LANES_MAX])
{
	__m512i r[16], w[16], s[4], v[4];

	for (int l = 0; l < 16; l++)
		r[l] = _mm512_loadu_si512((const void *)next[l]);
	transpose16(r, w);
	for (int i = 0; i < 4; i++)
		s[i] = v[i] = _mm512_loadu_si512((const void *)st[i]);
#define W(i)	w[i]
#define K(k)	_mm512_set1_epi32((int)(k))
	MD5_ROUNDS(v[0], v[1], v[2], v[3]);
#undef W
#undef K
	for (int i = 0; i < 4; i++)
		_mm512_storeu_si512((void *)st[i], ADD(s[i], v[i]));
}
#endif

void
md5_digests(const void *const *msgs, const size_t *lens, size_t n,
    uint8_t *out)
{
#ifdef MD5_HAVE_SIMD
	int lanes = md5_lanes();

	/* Below half the lanes' count of messages, they would mostly idle. */
	if (lanes == 16 && n >= 8) {
		md5_run_lanes(md5_block16, 16, msgs, lens, n, out);
		return;
	}
	if (lanes >= 8 && n >= 4) {
		md5_run_lanes(md5_block8, 8, msgs, lens, n, out);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		md5_digest(msgs[i], lens[i], out + MD5_DIGEST_LEN * i);
}
