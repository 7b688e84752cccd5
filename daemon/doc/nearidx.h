/*
 * nearidx: the in-memory near-duplicate index of simhash fingerprints
 * (Manku, Jain, Das Sarma, "Detecting near-duplicates for web crawling",
 * WWW 2007): which stored documents lie within Hamming distance k of a
 * fingerprint.  Answers are exact, never approximate.
 *
 * Blocks and tables.  The 64 bits are cut into b blocks, block 0 holding
 * the most significant bits.  When b does not divide 64 the first 64 mod b
 * blocks are one bit wider than the others: b = 5 gives 13,13,13,13,12
 * bits, b = 6 gives 11,11,11,11,10,10.  Two fingerprints at distance <= k
 * agree on at least b - k whole blocks, so there is one table per choice of
 * b - k blocks (C(b, k) tables: 4 for b = 4, 10 for b = 5, 20 for b = 6,
 * with k = 3), in lexicographic order of the chosen blocks; table 0 is
 * keyed by blocks 0 .. b-k-1.  A table permutes each fingerprint so that
 * its key blocks come first, then the others, each group in block order.
 *
 * Layout.  A table is a directory of 2^d buckets indexed by the top d bits
 * of the permuted fingerprint, 16 <= d <= min(key width, 28).  With b = 4
 * the key is 16 bits and d = 16; wider keys start at the d that
 * config.expected or a bulk load calls for and double d (one table at a
 * time, copied in the writer while queries go on) when buckets average
 * more than NEARIDX_LOAD_MAX entries, so they average 16 to 32.  A bucket
 * is one block: a 12-byte header, then the low 48 bits of each permuted
 * fingerprint as two arrays, the high 32 bits (hi) and the low 16 (lo),
 * the top 16 being the bucket's own; in table 0 also the 32-bit document
 * ids.  Table 0 holds one entry per document; the other tables hold each
 * distinct fingerprint once and find its ids in table 0, so duplicates
 * cost 10 bytes each, not 10 per table.  A bucket has room to grow (a
 * sixteenth after a bulk load, an eighth after growing).  Buckets live in
 * per-table 2 MiB segments on transparent huge pages (nearidx_alloc): a
 * replaced bucket becomes garbage, and a segment at least a quarter
 * garbage is evacuated once garbage passes a fifth of the table.
 *
 * Memory per fingerprint: 6 bytes per table and 4 for the id (28 with
 * b = 4, 64 with b = 5, 124 with b = 6), plus slack, headers, directories
 * and garbage.  Measured with nearidx_bench at 10,000,000 fingerprints
 * (BENCHMARKS.md), everything the index holds, right after a bulk load /
 * after 11 million online inserts and deletes: b = 4: 30.1 / 34.0;
 * b = 5: 84.1 / 92.7; b = 6: 163.3 / 181.0 bytes.
 *
 * Query.  Every table's permuted query (pext where AVX-512 runs), all
 * directory slots prefetched, then the lines of all buckets, then the
 * scans: the memory misses of all tables overlap.  A scan compares the
 * hi words first, 16 at a time with AVX-512 (8 with AVX2, or one by one);
 * an unrelated word passes only with probability 5.5e3 / 2^32, and only
 * those get the lo test.  An entry found in table t is reported only if t
 * is the first table whose key blocks the query and the entry share, so
 * each fingerprint is reported once however many tables hold it; table 0
 * reports its entries' ids, the others look their fingerprint's ids up in
 * table 0.  Hits come out by (distance, doc_id): nearest first, then
 * oldest, since ids grow with age.  Batch queries run several queries in
 * a pipeline of these stages.
 *
 * Threads.  One writer, any number of readers, no lock:
 *   - writer functions (insert, insert_batch, delete, bulk_load, reclaim)
 *     are called by one thread at a time; a caller with several writers
 *     serializes them itself;
 *   - readers (query, query_batch, count, distinct, memory_bytes, tables,
 *     blocks, simd) may run in any thread at any time, also during writes
 *     and in the writer's own thread.  They never wait for the writer,
 *     and the writer never waits for them;
 *   - nearidx_free runs when nothing else does.
 * The writer never changes what a reader may be reading, except to append
 * beyond a bucket's published length: deletes, growth, compaction and
 * directory doubling write copies and publish them with release stores.
 * Replaced directories and evacuated segments are reused only once every
 * query that started before the replacement has finished (an epoch and
 * per-thread reader counts, see nearidx.c).  A query running during writes
 * reports every document that no concurrent write touches exactly as it
 * would alone; a document being inserted or deleted meanwhile may or may
 * not be among the hits; no document is ever reported twice.
 *
 * Start-up.  Read every (fingerprint, id) from the store into two arrays
 * and call nearidx_bulk_load once, before any insert: it sizes the
 * directories for the count, places every bucket once at its final size,
 * in slot order, and runs several times faster than inserting.  Pass the
 * expected count in config.expected when the index will instead be filled
 * by inserts.
 */
#ifndef NDDD_NEARIDX_H
#define NDDD_NEARIDX_H

#include <stddef.h>
#include <stdint.h>

#define NEARIDX_DEFAULT_K	3	/* [near] k */
#define NEARIDX_DEFAULT_BLOCKS	4	/* [near] blocks */
#define NEARIDX_MAX_TABLES	64	/* C(blocks, k) */
#define NEARIDX_MIN_KEY_BITS	16	/* narrowest table key accepted */
#define NEARIDX_MAX_DIR_BITS	28	/* directory of 2^28 buckets at most */
#define NEARIDX_LOAD_MAX	32	/* mean bucket length that doubles d */
#define NEARIDX_MAX_DOC_ID	UINT32_MAX	/* ids are kept in 32 bits */

struct nearidx;

struct nearidx_config {
	unsigned k;		/* largest distance a query may ask for */
	unsigned blocks;	/* b: the fingerprint is cut into b blocks */
	uint64_t expected;	/* fingerprints expected: sizes directories
				   up front; 0 lets them grow */
	unsigned bucket_load;	/* mean bucket length at which a directory
				   doubles; 0: NEARIDX_LOAD_MAX */
	size_t segment_bytes;	/* buckets are mapped in segments of this
				   size, a power of two from 64 KiB to 1 GiB;
				   0: 2 MiB, one huge page */
	const char *simd;	/* "auto" or NULL, "avx512", "avx2", "scalar" */
};

struct nearidx_hit {
	uint64_t doc_id;
	uint64_t fp;		/* the stored fingerprint */
	unsigned distance;	/* Hamming distance to the query */
};

/* Fills cfg with the defaults: k = 3, 4 blocks, nothing expected, bucket
 * load NEARIDX_LOAD_MAX, 2 MiB segments, simd auto. */
void nearidx_config_defaults(struct nearidx_config *cfg);

/*
 * Checks a configuration: 1 <= k < blocks <= 64, at most NEARIDX_MAX_TABLES
 * tables, every table keyed by at least NEARIDX_MIN_KEY_BITS bits, a bucket
 * load of at most 65536, a segment size as above, and a simd name this
 * CPU can run.  Returns 0, or -1 with *cause set to a sentence naming the
 * problem (caller frees).
 */
int nearidx_config_check(const struct nearidx_config *cfg, char **cause);

/*
 * Creates an empty index.  Returns NULL with *cause set (caller frees) if
 * the configuration is refused or memory is short.  Free with nearidx_free.
 */
struct nearidx *nearidx_new(const struct nearidx_config *cfg, char **cause);
/* Frees the index and everything it holds; NULL is ignored. */
void nearidx_free(struct nearidx *x);

/*
 * Adds document doc_id with fingerprint fp.  Several documents may share a
 * fingerprint; each is its own entry (adding the same pair twice stores it
 * twice).  Returns 0, or -1 if doc_id > NEARIDX_MAX_DOC_ID or memory is
 * short; on -1 the index is unchanged.  Writer only.
 */
int nearidx_insert(struct nearidx *x, uint64_t fp, uint64_t doc_id);

/*
 * Adds n documents as nearidx_insert would, in order, with memory accesses
 * overlapped across neighbouring items.  Returns the number added: n, or
 * fewer if one failed, in which case items from the returned index on were
 * not added.  Writer only.
 */
size_t nearidx_insert_batch(struct nearidx *x, const uint64_t *fps,
    const uint64_t *doc_ids, size_t n);

/*
 * Removes the entry of document doc_id with fingerprint fp.  Returns 1 if
 * it was there and is gone, 0 if there is no such entry (nothing changes),
 * -1 if memory is short (nothing changes).  Writer only.
 */
int nearidx_delete(struct nearidx *x, uint64_t fp, uint64_t doc_id);

/*
 * Loads n (fingerprint, id) pairs, in any order, into an empty index: the
 * start-up path, several times faster than inserting one by one (each
 * table is filled by one counting pass, with no copying of buckets).  The
 * directories are sized for n.  Returns 0, or -1 with *cause set (caller
 * frees) if the index is not empty, an id is above NEARIDX_MAX_DOC_ID, or
 * memory is short; the index is then left empty.  Writer only.
 */
int nearidx_bulk_load(struct nearidx *x, const uint64_t *fps,
    const uint64_t *doc_ids, size_t n, char **cause);

/*
 * Finds the stored documents within distance kq of fp (kq <= the
 * configured k).  Writes the min(total, max) first hits in (distance,
 * doc_id) order to out and returns total, the number of documents within
 * distance kq, which may exceed max: out then holds the nearest max of them
 * (the best by the same order, exactly), and a caller that wants them all
 * asks again with max >= total (the index may have changed meanwhile; ask
 * until total <= max).  max = 0 only counts.  Returns -1 if kq > k.  Any
 * thread; allocates nothing.
 */
int64_t nearidx_query(const struct nearidx *x, uint64_t fp, unsigned kq,
    struct nearidx_hit *out, size_t max);

/*
 * Queries fps[0 .. n-1] as nearidx_query would, with their memory accesses
 * overlapped: query i writes its hits to out[i * max_per ...] and its total
 * to totals[i] (a total above max_per means its hits were cut as above).
 * Returns 0, or -1 if kq > k.  Any thread.  Memory replaced by the writer
 * waits for the whole batch before it is freed: batches of thousands, not
 * of millions, keep that short.
 */
int nearidx_query_batch(const struct nearidx *x, const uint64_t *fps,
    size_t n, unsigned kq, struct nearidx_hit *out, size_t max_per,
    uint64_t *totals);

/* Documents stored, and distinct fingerprints among them.  Any thread. */
uint64_t nearidx_count(const struct nearidx *x);
uint64_t nearidx_distinct(const struct nearidx *x);

/*
 * Bytes of memory the index holds: directories, every table's segments as
 * mapped (live buckets, garbage not yet compacted, the segment being
 * filled, one spare per table), replaced directories and segments waiting
 * for queries, fixed parts.  Any thread.
 */
uint64_t nearidx_memory_bytes(const struct nearidx *x);

/*
 * Hands back the replaced directories and evacuated segments that no
 * running query can still see; mutations do this themselves from time to
 * time, so a writer calls it only when it goes idle after changes.
 * Returns the bytes still waiting for queries that started before their
 * replacement.  Writer only.
 */
uint64_t nearidx_reclaim(struct nearidx *x);

/* Number of tables, blocks, and the SIMD kernel in use ("avx512" ...). */
unsigned nearidx_tables(const struct nearidx *x);
unsigned nearidx_blocks(const struct nearidx *x);
const char *nearidx_simd(const struct nearidx *x);

/*
 * Checks every internal invariant (each entry in its right bucket, the
 * other tables holding exactly table 0's distinct fingerprints, counts,
 * every segment's bytes either live or counted as garbage).  For tests
 * and checks; slow.  Returns 0, or -1 with *cause set (caller frees).
 * Writer only (queries may run meanwhile).
 */
int nearidx_verify(const struct nearidx *x, char **cause);

#endif
