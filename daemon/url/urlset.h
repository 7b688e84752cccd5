/*
 * urlset: the set of seen URLs, exact, behind a counting Bloom filter (the
 * IMP-CBFilter scheme).
 *
 * A URL's key is the MD5 of its canonical form (urlcanon), and the k filter
 * counter indices derived from that MD5.  The store holds, per key, the
 * reference count, first and last seen times (Unix milliseconds) and the
 * k indices, so that a delete decrements exactly the counters its submit
 * incremented.  A check whose filter counters include a zero is answered
 * without reading the store; otherwise the store decides.
 *
 * Threads.  Request workers prepare keys (each with its own url_keyer) and
 * answer checks (urlset_check), concurrently.  The store writer applies submits and deletes inside its
 * transaction (urlset_submit, urlset_delete) and moves the filter only as
 * the transaction's fate allows: increments before commit (a check that
 * sees them early reads the store and finds nothing yet, which is right),
 * decrements after commit (until then the record may still be read), and
 * increments of an aborted transaction are taken back.  So the filter never
 * says "absent" for a stored URL, and after every commit each counter equals
 * min(15, number of stored records naming it).
 */
#ifndef NDDD_URLSET_H
#define NDDD_URLSET_H

#include <stdbool.h>
#include <stdint.h>

#include "cbf.h"
#include "store.h"
#include "urlcanon.h"

/* Bytes of one stored URL record. */
#define URLSET_RECORD_LEN 56

struct url_key {
	uint8_t fp[CBF_FP_LEN];
	uint32_t idx[CBF_K];
};

struct url_record {
	uint32_t count;
	uint64_t first_seen_ms;
	uint64_t last_seen_ms;
	uint32_t idx[CBF_K];
};

struct urlset_options {
	uint64_t capacity;		/* the filter holds 20 counters per URL */
	struct urlcanon_options canon;
};

struct urlset_stats {
	uint64_t urls;			/* stored records */
	uint64_t checks;
	uint64_t checks_filter_only;
	uint64_t filter_false_positives;
	uint64_t submits_new;
	uint64_t submits_duplicate;
	uint64_t deletes;
};

/* What checks found, counted by the caller and added once per batch. */
struct urlset_tally {
	uint64_t checks;
	uint64_t filter_only;
	uint64_t false_positives;
};

struct urlset;
struct url_keyer;

/*
 * Opens the URL set on st: records the filter's size and the canonicalization
 * options in a new store, or checks them against an existing one (they are
 * fixed per data directory), then rebuilds the filter from every stored
 * record.  Returns NULL with *cause (caller frees) on failure.
 */
struct urlset *urlset_open(struct store *st, const struct urlset_options *opts,
    char **cause);
void urlset_free(struct urlset *us);

/* The filter, for statistics and verification. */
const struct cbf *urlset_filter(const struct urlset *us);

/*
 * A canonicalizer and an MD5 context: what deriving keys needs, for one
 * thread.  Returns NULL if memory is short.
 */
struct url_keyer *urlset_keyer_new(struct urlset *us);
void urlset_keyer_free(struct url_keyer *k);

/*
 * Canonicalizes url[0..len) and derives its key.  Returns -1 with a static
 * *cause when the URL is invalid.
 */
int urlset_key(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **cause);
/*
 * The same, also giving the canonical form (valid until the keyer's next
 * call) in *canon and *canon_len.
 */
int urlset_key_canonical(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **canon, size_t *canon_len,
    const char **cause);
/* Hints the CPU to fetch key's filter counters ahead of urlset_check. */
void urlset_prefetch(const struct urlset *us, const struct url_key *key);

/*
 * Sets *count to the stored reference count of key (0 when absent), reading
 * through rd (a begun reader) only when the filter says maybe, and counts
 * the outcome in *tally.  Any thread.  Returns a store status.
 */
int urlset_check(struct urlset *us, struct store_txn *rd,
    const struct url_key *key, uint64_t *count, struct urlset_tally *tally);
/* Adds a batch's tally to the statistics.  Any thread. */
void urlset_add_tally(struct urlset *us, const struct urlset_tally *tally);

/*
 * Writer thread, in txn.  Records one submit of key at now_ms.  *count is
 * the count after it (1: new).  When the key was new, its filter counters
 * have been incremented and *added is set: pass the key to
 * urlset_undo_add if the transaction aborts.  Returns a store status.
 */
int urlset_submit(struct urlset *us, struct store_txn *txn,
    const struct url_key *key, uint64_t now_ms, uint64_t *count, bool *added);
/*
 * Writer thread, in txn.  Deletes key's record.  *count is the count it had
 * (0: not found).  When found, removed_idx holds its counter indices: pass
 * them to urlset_commit_remove once the transaction has committed.
 */
int urlset_delete(struct urlset *us, struct store_txn *txn,
    const struct url_key *key, uint64_t *count,
    uint32_t removed_idx[CBF_K]);
/* Writer thread.  Takes back a submit's increments after an abort. */
void urlset_undo_add(struct urlset *us, const struct url_key *key);
/* Writer thread.  Counts committed submits in the statistics. */
void urlset_count_committed(struct urlset *us, uint64_t submits_new,
    uint64_t submits_duplicate);
/* Writer thread.  Applies a committed delete's decrements (and counts it). */
void urlset_commit_remove(struct urlset *us, const uint32_t idx[CBF_K]);

/* Statistics; urls is read through rd (a begun reader).  Any thread. */
void urlset_stats(struct urlset *us, struct store_txn *rd,
    struct urlset_stats *out);

struct urlset_verify {
	uint64_t records;		/* URL records read */
	uint64_t counter_mismatches;	/* counters differing from the store */
	uint64_t index_mismatches;	/* records whose stored indices are not
					   their fingerprint's */
	char detail[256];		/* the first differences */
};

/*
 * Writer thread, with no transaction open: recomputes every filter counter
 * from the stored records and compares with memory.  Returns a store
 * status; the findings are in *out.
 */
int urlset_verify(struct urlset *us, struct urlset_verify *out);

/* Record codec, exposed for tests and verification. */
void urlset_record_encode(const struct url_record *r,
    uint8_t out[URLSET_RECORD_LEN]);
int urlset_record_decode(const void *data, size_t len, struct url_record *r);

#endif
