/*
 * urlset: the set of seen URLs, exact, behind a counting Bloom filter (the
 * IMP-CBFilter scheme), stored so that writes reach the disk sequentially.
 *
 * A URL's key is the MD5 of its canonical form (urlcanon) and the CBF_K
 * filter counter indices derived from it.  Where things are
 * (docs/urlstore.md tells the whole design):
 *
 *   filter   (cbf) in memory: a check whose counters include a zero is
 *            answered at once.  Each counter equals min(15, the number of
 *            stored URLs naming it).
 *   journal  the changes since the last flush: in memory (urlmem, exact,
 *            consulted first) and in the journal file (urljournal), where
 *            each group commit appends one frame.
 *   segments the store (LMDB): immutable arrays of up to
 *            [urls] segment_records records sorted by fingerprint, each
 *            with a live bitmap (urlrec).  A flush writes the journal's
 *            URLs as new segments and clears the bits of the records they
 *            replace; a merge rewrites small and sparse segments into full
 *            ones, in the background.
 *   index    (urlidx) in memory: which segment holds each stored URL, in 4
 *            bytes per URL.
 *
 * Namespaces (urlns.h) are independent sets in one: a URL's key in a
 * namespace other than the default one is derived from its name too, and
 * its record names the namespace's id.  A record answers as seen only to
 * readers of its namespace (so a dropped namespace's records, forgotten
 * in the background, are not seen under the name's next namespace) and
 * only until its time to live ends (then the writer reclaims it, in the
 * background too, exactly: a delete like any other, once it has been
 * expired for keep_expired_ms).
 *
 * A check reads the filter, the journal's table, the index and, for a URL
 * that is there, one page of one segment; a batch of checks asks the kernel
 * for all its pages at once when they are not in memory.  A submit or
 * delete is a journal entry: acknowledged once the group's frame is on
 * disk (durable) or written to the kernel (relaxed).
 *
 * Threads.  Request workers derive keys (each with its own url_keyer) and
 * check (each with its own urlset_reader), concurrently.  One URL writer
 * thread, started by urlset_start, applies submits and deletes in groups,
 * flushes and merges; it hands finished jobs back to the event loop
 * through a mailbox.  The store writer (documents) shares the store with
 * it: LMDB serializes their transactions.
 */
#ifndef NDDD_URLSET_H
#define NDDD_URLSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cbf.h"
#include "mailbox.h"
#include "store.h"
#include "urldigest.h"
#include "urlns.h"
#include "urlrec.h"

/* The version of the store format this code writes (meta urls.format). */
#define URLSET_FORMAT		4
/* The longest time to live: 100 years. */
#define URLSET_TTL_MAX_MS	(3155760000ULL * 1000)

struct event_base;

struct url_key {
	uint8_t fp[CBF_FP_LEN];
	uint32_t idx[CBF_K];
};

enum urlset_durability {
	URLSET_DURABLE,		/* acknowledged once on disk */
	URLSET_RELAXED,		/* acknowledged once written to the kernel:
				   survives a crash of nddd, may lose the
				   last relaxed_sync_ms on power loss */
};

struct urlset_options {
	uint64_t capacity;		/* the filter holds 20 counters per URL */
	struct urlcanon_options canon;
	size_t journal_entries;		/* URLs changed between flushes, at
					   most; 0: the default */
	uint32_t segment_records;	/* records per segment, at most
					   (URLSEG_MAX); 0: the default */
	bool sync;			/* fdatasync durable groups (false:
					   [store] sync = none, nothing is) */
	uint64_t relaxed_sync_ms;	/* fdatasync relaxed groups at least
					   this often; 0: only with the next
					   durable group or flush */
	uint64_t keep_expired_ms;	/* an expired URL's record is kept
					   this long (checks tell its times),
					   then reclaimed */
	bool host_index;		/* keep the URLs' texts by host, for
					   url_forget (urlhosts.h) */
};

struct urlset_stats {
	uint64_t urls;			/* stored */
	uint64_t checks;
	uint64_t checks_filter_only;
	uint64_t filter_false_positives;
	uint64_t submits_new;
	uint64_t submits_duplicate;
	uint64_t deletes;
	uint64_t expired;		/* reclaimed after their time to live */
	uint64_t dropping;		/* of dropped namespaces, still there */
	/* The store's write path. */
	uint64_t journal_entries;	/* URLs changed since the last flush */
	uint64_t journal_capacity;
	uint64_t journal_bytes;		/* in the journal file now */
	uint64_t journal_bytes_written;	/* since start */
	uint64_t journal_syncs;
	uint64_t groups;		/* group commits */
	uint64_t flushes;
	uint64_t merges;
	uint64_t merges_forced;		/* merges that held writers back */
	uint64_t segments;
	uint64_t small_segments;	/* below half of segment_records */
	uint64_t records;		/* in segments, live or not */
	uint64_t dead_records;		/* replaced or deleted, not merged */
	uint64_t store_bytes_written;	/* segments and bitmaps, since start */
	uint64_t pending;		/* jobs queued or in a group */
	/* Memory. */
	uint64_t index_bytes;
	uint64_t journal_table_bytes;
	/* The host index. */
	uint64_t host_runs;
	uint64_t host_keys;		/* dead ones included */
	bool host_merging;
};

/* What checks found, counted by the caller and added once per batch. */
struct urlset_tally {
	uint64_t checks;
	uint64_t filter_only;
	uint64_t false_positives;
};

struct urlset;
struct url_keyer;
struct urlset_reader;

/*
 * Whether urlset_open would refuse st at once (a newer format, settings
 * fixed per data directory that the options contradict), with *cause
 * (caller frees), asking only: nothing is written.  The daemon asks before
 * it opens anything else, so that a refused start changes nothing.
 */
bool urlset_refuses(struct store *st, const struct urlset_options *opts,
    char **cause);

/*
 * Opens the URL set on st: records the filter's size and the
 * canonicalization options in a new store, or checks them against an
 * existing one (they are fixed per data directory); upgrades a store of
 * format 1 (one record per URL in a B-tree) to segments, saying so in the
 * log; refuses a newer format, changing nothing.  Then rebuilds the filter
 * and the index from the segments, replays the journal file, and flushes.
 * Returns NULL with *cause (caller frees) on failure.
 */
struct urlset *urlset_open(struct store *st, const char *dir,
    const struct urlset_options *opts, char **cause);
/* Frees us; urlset_stop first if it was started. */
void urlset_free(struct urlset *us);

/*
 * Starts the URL writer, delivering finished jobs in base's loop.  Returns
 * -1 if the thread or its mailbox cannot be made.
 */
int urlset_start(struct urlset *us, struct event_base *base);
/*
 * Loop thread: finishes every queued job (delivering them), flushes, and
 * joins the writer.
 */
void urlset_stop(struct urlset *us);

/* The filter, for statistics. */
const struct cbf *urlset_filter(const struct urlset *us);
/*
 * Names the canonicalization in use, as digests made by clients must name
 * it: "urlcanon/1 strip_session_ids=no ...".  Static for us's life.
 */
const char *urlset_canon_id(const struct urlset *us);

/*
 * A canonicalizer and a batch's scratch memory (urldigest.h): what
 * deriving keys needs, for one thread.  Returns NULL if memory is short.
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
/*
 * The keys of n URLs (at most URLSET_KEY_BATCH) as urlset_key_canonical
 * makes them, their digests made eight at a time: for URL i, keys[i] and
 * causes[i] NULL, or causes[i] why it is invalid (keys[i] untouched); if
 * canon is not NULL, its canonical form in canon[i] and canon_len[i],
 * valid until the keyer's next call.  Returns how many are valid.
 */
#define URLSET_KEY_BATCH	URLDIGEST_BATCH
size_t urlset_keys_canonical(struct url_keyer *k, const char *const *urls,
    const size_t *lens, size_t n, struct url_key *keys, const char **canon,
    size_t *canon_len, const char **causes);
/* The key of a digest a client computed (the MD5 of a canonical URL). */
void urlset_key_digest(const struct urlset *us,
    const uint8_t digest[CBF_FP_LEN], struct url_key *key);
/*
 * A URL's key in a named namespace is its key in the default one with the
 * fingerprint XORed with the namespace's mask, the MD5 of "nddd.ns/" and
 * the name: made once per batch, applied for each URL at the cost of an
 * XOR.  Fingerprints stay uniform, and two namespaces never share a key
 * unless two MD5s differ by exactly their masks' difference.
 */
struct urlset_ns_mask {
	uint8_t m[CBF_FP_LEN];
};

/* The mask of the namespace named name[0..len) (zero for the default
 * one, ""); any thread. */
void urlset_ns_mask(const char *name, size_t len, struct urlset_ns_mask *out);
/* Turns key, a URL's key in the default namespace, into its key in the
 * namespace of mask. */
void urlset_key_masked(const struct urlset *us,
    const struct urlset_ns_mask *mask, struct url_key *key);

/* The namespaces. */
struct urlns *urlset_namespaces(struct urlset *us);
/* Whether the set keeps the host index, which url_forget needs. */
bool urlset_host_index(const struct urlset *us);
/* Whether its host index holds every stored URL's text.  Any thread. */
bool urlset_hosts_complete(struct urlset *us);
/* Hints the CPU to fetch key's filter counters ahead of a check. */
void urlset_prefetch(const struct urlset *us, const struct url_key *key);

/* What one thread needs to check: a store reader and scratch memory. */
struct urlset_reader *urlset_reader_new(struct urlset *us);
void urlset_reader_free(struct urlset_reader *rd);
/*
 * A reader that may not wait (the event loop's): its checks return
 * STORE_WOULD_BLOCK, having answered nothing, when they would read a page
 * that is not in memory or wait for the URL writer; the caller then hands
 * the batch to a reader that may.
 */
void urlset_reader_nowait(struct urlset_reader *rd);

/*
 * Sets states[i] to the stored state of keys[i] in namespace ns (an id, or
 * URLNS_NONE: none) at now_ms, for each i < n with valid[i] (valid may be
 * NULL: all): all zero when the namespace has no record of it, count 0
 * with its times when its time to live has passed.  Reads the store only
 * for URLs the filter and the journal do not settle, and counts the
 * outcomes in *tally.  Any thread, with its own reader.  Returns a store
 * status.
 */
int urlset_check(struct urlset *us, struct urlset_reader *rd, uint32_t ns,
    uint64_t now_ms, const struct url_key *keys, const bool *valid,
    size_t n, struct url_state *states, struct urlset_tally *tally);
/* Adds a batch's tally to the statistics.  Any thread. */
void urlset_add_tally(struct urlset *us, const struct urlset_tally *tally);

enum urlset_op {
	URLSET_SUBMIT,		/* states[i]: after (count 1: new) */
	URLSET_DELETE,		/* states[i]: before (count 0: not seen) */
	URLSET_VERIFY,		/* flush, then compare memory with the store */
	URLSET_NS_SET,		/* set ns's default ttl_ms (creating it) */
	URLSET_NS_DROP,		/* drop ns */
	URLSET_RECLAIM,		/* the writer's own: forget keys whose time
				   to live passed or whose namespace was
				   dropped */
	URLSET_FORGET,		/* forget ns's URLs of a host or prefix */
	URLSET_EXPORT_BEGIN,	/* start an export session (below) */
	URLSET_EXPORT_CHANGED,	/* the session's changed keys, n at most */
	URLSET_EXPORT_END,	/* end the session */
	URLSET_IMPORT,		/* set the states of moved, nmoved URLs */
};

/* A URL as resharding moves it (docs/sharding.md, "Adding a shard"). */
struct url_moved {
	uint8_t digest[CBF_FP_LEN];	/* its key in the default namespace */
	char ns[URLNS_NAME_MAX + 1];	/* its namespace's name ("": default) */
	struct url_state st;		/* count 0: no record; st.ns unused */
	const char *text;		/* its canonical URL, or NULL */
	size_t text_len;
	bool text_only;			/* only its text (the host index's):
					   its state is given elsewhere */
};

/* A URL's canonical form, for the host index. */
struct url_text {
	const char *p;			/* NULL: none (a digest) */
	size_t len;
};

/* What URLSET_FORGET forgets, and how many it did. */
struct urlset_forget {
	const char *host;		/* a host, or NULL */
	size_t hlen;
	bool subdomains;		/* ... and the hosts under it */
	const char *prefix;		/* or a canonical URL prefix */
	size_t plen;
	uint64_t forgotten;		/* records deleted */
	bool complete;			/* false: the store holds URLs the
					   index never saw */
};

struct urlset_verify {
	uint64_t records;		/* live URL records read */
	uint64_t counter_mismatches;	/* counters differing from the store */
	uint64_t index_mismatches;	/* records the index misses, entries
					   it has too many, records whose
					   indices are not their fingerprint's,
					   live counts off */
	char detail[256];		/* the first differences */
};

/*
 * A request to the URL writer.  The caller fills the first part, keeps keys
 * and states alive, and gets the job back through done, in the loop
 * thread, with status set (STORE_OK, or why the whole job failed: then no
 * change was made; STORE_NOTFOUND: no such namespace to drop; refused set:
 * a limit of the set's own, such as URLNS_MAX namespaces; a URLSET_FORGET
 * that fails midway keeps what it forgot, and says how much).  Jobs of one
 * connection are applied in the order submitted.  Jobs the writer makes
 * itself have no done.
 */
struct urlset_job {
	enum urlset_op op;
	enum urlset_durability durability;
	char ns[URLNS_NAME_MAX + 1];	/* its namespace (checked) */
	uint64_t ttl_ms;		/* submit: 0: the namespace's default;
					   URLSET_NS_SET: the default */
	const struct url_key *keys;	/* in namespace ns */
	size_t n;
	const struct url_text *texts;	/* submit: the keys' URLs, or NULL */
	size_t text_bytes;		/* the sum of their lengths */
	struct urlset_forget *forget;	/* URLSET_FORGET's */
	struct url_state *states;
	struct urlset_verify *verify;	/* URLSET_VERIFY's findings */
	struct urlns_info *info;	/* URLSET_NS_SET's and _DROP's */
	uint32_t shards, place;		/* URLSET_EXPORT_BEGIN's: the new
					   list's length, this set's place */
	struct url_moved *moved;	/* URLSET_IMPORT's URLs; the answer of
					   URLSET_EXPORT_CHANGED (the caller
					   frees it: urlset_moved_free) */
	size_t nmoved;
	bool more;			/* URLSET_EXPORT_CHANGED: keys left */
	bool texts_follow;		/* URLSET_IMPORT: the URLs' texts come
					   as text_only items of the same
					   export: one without its text leaves
					   the host index complete */
	void (*done)(struct urlset_job *job);
	int status;
	const char *refused;		/* RESOURCE_EXHAUSTED: why (static) */
	/* The writer's. */
	struct urlset_job *next;
	struct mailbox_msg msg;
};

/* Any thread: queues job for the URL writer. */
void urlset_submit_job(struct urlset *us, struct urlset_job *job);

/*
 * Moving URLs to a new shard (docs/urlstore.md, "Export and import").
 *
 * URLSET_EXPORT_BEGIN flushes the journal and, with nothing applied in
 * between, takes a snapshot of the store that the session keeps, and from
 * then on remembers every key a change touches whose owner among the new
 * list's job->shards places (jump_hash_owner of its digest) is not
 * job->place: the changed set, with the text a change records for it.  A
 * second BEGIN replaces the session.
 *
 * urlset_export_page reads the snapshot from *cursor on (0 at the start;
 * opaque otherwise, and a cursor given again reads the same page again):
 * first the live records of the keys that move, then the host index's
 * texts of such keys (text_only items); up to max URLs a call, in a new
 * array *out of *n (the caller frees it with urlset_moved_free), and
 * *done once both are read.  Records of dropped namespaces stay behind.
 * Any thread, one call at a time (a second one waits).  Returns a store
 * status; STORE_FAILED without a session (urlset_export_open tells).
 *
 * URLSET_EXPORT_CHANGED answers in job->moved (job->nmoved of them) the
 * current state of up to job->n keys of the changed set (count 0: no
 * record; an expired record not reclaimed yet keeps its count and times),
 * with the texts recorded for them, and takes them out of the set;
 * job->more says whether keys are left.  The set holds at most
 * URLSET_EXPORT_CHANGED_BYTES: past that (or when memory is short) the
 * session fails, so that no change is lost unsaid: CHANGED and pages
 * answer STORE_FAILED and urlset_export_open false, and the caller begins
 * again.
 *
 * URLSET_EXPORT_END ends the session (STORE_OK without one).
 *
 * URLSET_IMPORT sets each of job->moved[0..nmoved) to exactly its state
 * in its namespace (created as a submit would): a record made or
 * replaced with the count and times given, or removed (count 0), through
 * the journal like a delete or a submit; text_only items add their text
 * to the host index and change no state, the others add theirs when they
 * make a record.  A URL given a record without its text makes the host
 * index incomplete (urlset_forget's complete), as it is.  Any key,
 * whoever owns it.
 */
#define URLSET_EXPORT_CHANGED_BYTES	((size_t)256 << 20)

int urlset_export_page(struct urlset *us, uint64_t *cursor, size_t max,
    struct url_moved **out, size_t *n, bool *done);
/* Any thread: whether a session is open (and has not failed). */
bool urlset_export_open(struct urlset *us);
/* Frees an array of moved URLs and their texts (one allocation). */
void urlset_moved_free(struct url_moved *m);

/* Statistics.  Any thread. */
void urlset_stats(struct urlset *us, struct urlset_stats *out);

#endif
