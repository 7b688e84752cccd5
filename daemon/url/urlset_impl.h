/*
 * urlset_impl: the URL set's insides, shared by its files and nothing else:
 *
 *   urlset.c      opening (metadata, rebuild, replay), statistics
 *   urlkey.c      keys: canonical URL to MD5 and filter counters,
 *                 namespaces' masks
 *   urllookup.c   checks: the filter, the journal's table, the index, the
 *                 segments, batched so that memory and disk reads overlap
 *   urlwriter.c   the URL writer thread: groups, the journal, publishing
 *   urlsegs.c     the segments in the store: flush, merge, rebuild, verify
 *   urlsweep.c    forgetting in the background: expired records, and
 *                 those of dropped namespaces
 *   urlhostidx.c  the host index's write side: the texts into a run with
 *                 each flush, merges of runs
 *   urlforget.c   forgetting by host or prefix, through the host index
 *   urlmove.c     exports and imports of URLs between shards (resharding)
 *   urlmigrate.c  the upgrades from formats 1 and 2
 *
 * Their parts outside this set: cbf.c (the filter), urlmem.c (the
 * journal's table), urljournal.c (the journal file), urlrec.c (records
 * and segments' layout), urlidx.c (the index), urlhosts.c and
 * urlhostrun.c (the host index's keys and runs), urlns.c (namespaces),
 * urlcanon.c (canonical URLs), urldigest.c (a URL's digest, made the
 * same way by the request workers and by libnddd's clients).
 *
 * Ownership.  struct urlset's groups say whose each part is: those marked
 * "Writer" belong to the URL writer thread once it runs (to the opening
 * thread before); statistics are atomics; the filter, the index and the
 * journal's table are safe for concurrent readers by their own protocols
 * (cbf.h, urlidx.h, urlmem.h).
 *
 * The index may be replaced by a larger one (when the URLs outgrow it).
 * A reader takes the pointer between urlset_enter and urlset_leave, and
 * the writer frees a replaced index only once every reader has left or
 * entered again since (a grace period, as RCU's): readers register in
 * us->rd.readers, and publish the epoch they entered at.
 */
#ifndef NDDD_URLSET_IMPL_H
#define NDDD_URLSET_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "urlhostrun.h"
#include "urlidx.h"
#include "urljournal.h"
#include "urlmem.h"
#include "urlrec.h"
#include "urlset.h"

/*
 * How far ahead a loop over URLs asks for the memory of the URL it will
 * handle later (a filter line, an index bucket, a table slot): enough to
 * overlap the misses of several URLs, few enough that the prefetches land
 * before they are used.
 */
#define URLSET_PREFETCH		8

/* A segment's counts, in memory (the bitmap on disk is the truth). */
struct segdir {
	uint16_t nrec;			/* 0: no such segment */
	uint16_t nlive;
	uint32_t expires_s;		/* none of its live records expires
					   before this second; 0: none does */
};

/* A stored record found by a lookup. */
struct url_found {
	bool found;
	struct url_state st;
	uint32_t seg;
	uint32_t slot;
};

/* One URL of a group: its state before the group and after. */
struct stage_entry {
	struct url_key key;
	bool base_present;		/* a record before the group */
	struct urlmem_entry base;	/* its state then, and its record's
					   place in the store (orig_*) */
	bool need_lookup;		/* base still to be read from the store */
	struct url_state cur;		/* now; count 0: no record */
};

struct urlset {
	/* Set at opening, then only read: the store, the settings, and the
	 * parts that are safe for any thread by their own protocols (cbf.h,
	 * urlmem.h, urljournal.h). */
	struct store *st;
	struct urlns *ns;
	struct cbf *filter;
	uint64_t m;
	uint64_t capacity;
	struct urlcanon_options canon;
	char canon_id[URLCANON_ID_LEN];
	struct urlmem *mem;
	struct urljournal *journal;
	uint32_t seg_records;
	bool sync;
	uint64_t relaxed_sync_ms;
	uint64_t keep_expired_ms;
	bool host_index;

	/* The index and the readers (urllookup.c): see the top of this file. */
	struct {
		struct urlidx *idx;	/* replaced with seq_cst stores */
		uint64_t epoch;		/* of the last replacement */
		pthread_mutex_t readers_lock;	/* guards the list */
		struct urlset_reader *readers;
	} rd;

	/* The writer thread and its queue (urlwriter.c): lock guards the
	 * queue, stopping and pending; the writer waits on cond. */
	struct {
		pthread_t thread;
		bool started;
		pthread_mutex_t lock;
		pthread_cond_t cond;
		struct urlset_job *head, *tail;
		bool stopping;
		size_t pending;
		struct mailbox *mb;
	} q;

	/* Writer: the group being applied (urlwriter.c). */
	struct {
		struct urlset_reader *wrd;	/* its reader of the store */
		struct stage_entry *stage;
		size_t stage_len, stage_cap;
		uint32_t *stage_map;	/* fingerprint -> stage index + 1 */
		size_t stage_map_mask;
		struct urlmem_entry *frame;	/* the group's journal frame */
		uint32_t *lookup_which;
		struct url_found *lookup_found;
		uint32_t *lookup_retry;
		uint64_t unsynced_since_ms;	/* a relaxed frame awaits
						   fdatasync (monotonic) */
	} w;

	/* Writer: the host index (urlhostidx.c, urlforget.c). */
	struct {
		bool partial;		/* the store holds URLs the index never
					   saw (meta urls.hosts_partial) */
		uint8_t *texts;		/* the texts of this round's new URLs
					   (urlhosts.h records), not yet in
					   the index; the group's last */
		size_t texts_len, texts_cap;
		struct hostrun *runs;
		size_t nruns, runs_cap;
		uint32_t next_run;	/* the next run's id */
		struct hostrun run_pending;	/* written by a flush not yet
						   committed */
		bool run_is_pending;
		bool merge_failed;	/* no merge until the next flush */
		bool partial_pending;	/* the flush being written makes the
					   store partial */
		struct hosts_merge *merge;	/* under way, or NULL */
		struct hosts_round *round;	/* the keys of the texts, made
						   while a flush writes its
						   segments, or NULL */
	} hosts;

	/* Writer: the segments (urlsegs.c). */
	struct {
		struct segdir *dir;	/* by segment id */
		uint32_t dir_len;	/* ids below it have been used */
		uint32_t next_id;	/* never used yet, and above */
		uint32_t *free_ids;	/* ids below next_id no segment has */
		uint64_t *free_epoch;	/* the epoch (rd.epoch) each was
					   freed at; 0: no reader saw it */
		size_t nfree, free_cap;
		uint64_t count, small, sparse, records, dead;
		int full;		/* why the last flush or merge was
					   refused for want of room; 0: it
					   was not */
		uint64_t full_retry_ms;	/* none is tried before (monotonic) */
		uint64_t full_wait_ms;	/* the wait before the next try */
	} segs;

	/* Writer: the sweep of expired records (urlsweep.c). */
	struct {
		uint32_t next;		/* the next segment it reads */
		uint32_t slot;		/* ... from this record */
		uint64_t min;		/* the earliest expiry of the records
					   it keeps there so far */
		uint64_t last_ms;	/* its last step (monotonic) */
	} sweep;

	/* The export session (urlmove.c), or NULL: set by the writer under
	 * move_lock, which a page holds while it reads the session. */
	struct export_session *move;
	pthread_mutex_t move_lock;

	/* The transaction of the last flush, published before the journal's
	 * table is cleared (acquire, release). */
	uint64_t flush_txnid;
	/* Readers whose batch the writer's merges keep sending to newer
	 * snapshots (atomic): while there are any, merges wait. */
	uint32_t starving;

	/* Statistics, atomics: the writer's counts, and what it publishes
	 * of its own state for other threads. */
	struct {
		uint64_t live;		/* URLs stored */
		uint64_t checks, checks_filter_only, false_positives;
		uint64_t submits_new, submits_duplicate, deletes, expired;
		uint64_t groups, flushes, merges, merges_forced;
		uint64_t store_bytes_written;
		uint64_t segments, small, records, dead;
		uint64_t journal_bytes, journal_written, journal_syncs;
		uint64_t host_runs, host_keys, host_merging;
	} stats;
};

/*
 * A merge of the host index's runs, done a chunk of keys at a time between
 * the writer's groups, each chunk committed (the new run's blocks are no
 * one's until its directory is written, with the merged runs' removal).
 */
#define HOSTS_MERGE_MAX		64	/* runs merged at once, at most */
struct hosts_merge {
	size_t n;
	struct hostrun in[HOSTS_MERGE_MAX];	/* the runs (no fences) */
	struct hostrun_iter it[HOSTS_MERGE_MAX];
	bool done[HOSTS_MERGE_MAX];
	struct hostrun_writer w;
	bool prune;			/* leave out dead entries */
	uint32_t ns;			/* the namespace entry_live last asked */
	bool ns_known, ns_live;		/* ... about, and its answer */
	uint64_t in_keys;
};

/*
 * How far ahead of a missing record page a batch in key order asks for its
 * segment (urllookup.c): the pages of a store read in key order are used
 * in their order, but a segment's next ones only after every other
 * segment's, so the window, over every segment at once, is what must stay
 * in memory meanwhile: 195 MB for the 12,000 segments of 50 million URLs.
 * (32 KiB windows, 390 MB, outgrew the page cache a daemon of 50 million
 * URLs had in a cgroup a fifth of its store, and a third of the reads were
 * of pages read before.)
 */
#define URLSET_READ_AHEAD	(16 * 1024)

struct urlset_reader {
	struct urlset *us;
	struct urlset_reader *next;	/* us->rd.readers */
	uint64_t active;		/* the epoch entered at, 0: outside */
	struct urlidx *idx;		/* the index while inside */
	struct store_txn *txn;
	bool nowait;			/* urlset_reader_nowait */
	uint64_t read_ahead;		/* windows asked for batches in key
					   order (urllookup.c), for the tests */
	/* Scratch, grown as batches need. */
	struct lookup_cand *cands;
	const void **pages;		/* as many as cands */
	size_t cands_cap;
	struct lookup_seg *segs;	/* by segment id */
	size_t segs_len;
	uint32_t *which, *retry, *maybe;
	struct url_found *found;
	size_t keys_cap;
};

/*
 * Fault injection for the tests: where the write path can be cut short.
 * When urlset_crash_hook is set (never in the daemon) the writer calls it
 * at each point; when it returns true, the operation stops there as if the
 * process had died, leaving memory as it was at that moment: the caller
 * must then drop the set (urlset_free, no flush) and open it again.
 */
enum urlset_crash_point {
	URLSET_CRASH_STAGED,		/* group applied in scratch only */
	URLSET_CRASH_JOURNALED,		/* its frame written, not published */
	URLSET_CRASH_PUBLISHED,		/* published, jobs not yet answered */
	URLSET_CRASH_FLUSH_WRITTEN,	/* flush in a transaction not committed */
	URLSET_CRASH_FLUSH_COMMITTED,	/* flush committed, memory unchanged */
	URLSET_CRASH_MERGE_WRITTEN,
	URLSET_CRASH_MERGE_COMMITTED,
	URLSET_CRASH_MIGRATED_BATCH,	/* a format 1 batch moved, more left */
};
extern bool (*urlset_crash_hook)(enum urlset_crash_point point);

/* For the tests too: when set, whether a page of the store is in memory,
 * asked instead of mincore (so that a test can make pages missing). */
extern bool (*urlset_resident_hook)(const void *page);
#define URLSET_CRASH(point) \
	(urlset_crash_hook != NULL && urlset_crash_hook(point))

/* urllookup.c.  Looks up keys[which[0..n)] in the store through rd (begun),
 * setting found[which[i]]; the keys that need the read redone with a newer
 * snapshot (their segment moved since) go to retry[0..*nretry).  Returns a
 * store status. */
int urlset_lookup_store(struct urlset_reader *rd,
    const struct url_key *keys, const uint32_t *which, size_t n,
    struct url_found *found, uint32_t *retry, size_t *nretry);
/* Grows rd's per-key scratch to n keys.  -1 if memory is short. */
int urlset_reader_reserve(struct urlset_reader *rd, size_t n);
/* Frees rd's scratch (it grows again as needed). */
void urlset_reader_release(struct urlset_reader *rd);
/* A reader's use of the index, and the writer's wait for readers to be
 * done with a replaced one. */
void urlset_enter(struct urlset *us, struct urlset_reader *rd);
void urlset_leave(struct urlset_reader *rd);
void urlset_grace(struct urlset *us);

/* urlsegs.c. */
int urlset_rebuild(struct urlset *us, char **cause);
/* Replaces the index by a larger one, made from the store. */
int urlset_index_grow(struct urlset *us);
int urlset_flush(struct urlset *us, bool checkpoint);
/* One merge step if one is due (forced: the backlog is too large). */
int urlset_merge_step(struct urlset *us, bool *did, bool forced);
bool urlset_merge_due(const struct urlset *us, bool *forced);
int urlset_verify_store(struct urlset *us, struct urlset_verify *out);
void urlset_publish_seg_stats(struct urlset *us);

/* urlwriter.c.  Frees the memory groups use (it grows again as needed;
 * the daemon's idle trim returns the pages to the system). */
void urlset_release_scratch(struct urlset *us);
/* Applies a group of jobs (all of one durability) now, in this thread: what
 * the writer does; open and the tests call it directly. */
void urlset_apply_group(struct urlset *us, struct urlset_job *list);

/* The current state of keys[0..n) (count 0: no record), as a group would
 * find it; n at most URLSET_GROUP_MAX.  Writer, between groups.  A store
 * status. */
int urlset_current_states(struct urlset *us, const struct url_key *keys,
    size_t n, struct url_state *out);
/* URLs in one group, at most (a job larger than this is a group alone):
 * a group's scratch memory, about 250 bytes per URL, stays small, and its
 * fdatasync is still a small share of its time. */
#define URLSET_GROUP_MAX	8192

/* Whether a record in state st is to be reclaimed at now_ms for its time
 * to live: expired at least keep_expired_ms ago. */
static inline bool
urlset_reclaimable(const struct urlset *us, const struct url_state *st,
    uint64_t now_ms)
{
	return st->expires_ms != 0 &&
	    st->expires_ms + us->keep_expired_ms <= now_ms;
}

/* urlsweep.c.  One step of the sweep if one is due (idle: the writer has
 * nothing else to do); true if it did some work. */
bool urlset_sweep_step(struct urlset *us, bool idle);
/* The segment directory's expiry second for records whose earliest expiry
 * is min_ms (0: none), rounded down (the sweep may look early, never
 * late); and for the records recs[0..n). */
uint32_t urlset_expires_s_of(uint64_t min_ms);
uint32_t urlset_expires_s(const uint8_t *recs, size_t n);

/* urlforget.c.  Reads, or records, whether the store holds URLs the index
 * never saw (stored by a format before 4, or with host_index off); after
 * the rebuild, format being the store's before opening.  A store status. */
int urlset_hosts_open(struct urlset *us, int format);
/* Makes room for a group's texts: its jobs' text_bytes and
 * n records; -1 if memory is short. */
int urlset_texts_reserve(struct urlset *us, size_t text_bytes, size_t n);
/* The bytes a group of n URLs and text_bytes of texts adds to the journal's
 * frame, at most. */
size_t urlset_texts_bound(const struct urlset *us, size_t text_bytes,
    size_t n);
/* Frees the room of the round's texts if it holds none (a quiet writer,
 * after its flush). */
void urlset_texts_release(struct urlset *us);
/* Adds the text of a URL a group records as new (room reserved). */
void urlset_text_add(struct urlset *us, uint32_t ns,
    const uint8_t fp[CBF_FP_LEN], const struct url_text *t);
/* Adds the texts of a replayed frame.  -1 if memory is short. */
int urlset_texts_replay(const uint8_t *text, size_t len, void *arg);
/* Has the round's texts' keys made and sorted in a thread of their own,
 * for urlset_texts_put; no text may be added until then. */
void urlset_texts_prepare(struct urlset *us);
/* Writes the round's texts as a run of the index, in txn (a flush's);
 * once committed, urlset_texts_flushed, else urlset_texts_discard. */
int urlset_texts_put(struct urlset *us, struct store_txn *txn);
void urlset_texts_flushed(struct urlset *us);
void urlset_texts_discard(struct urlset *us);
/* Writer: a step of merging runs of one size, if enough have piled up
 * (idle: the writer has nothing else to do); true if it did one. */
bool urlset_hosts_merge_step(struct urlset *us, bool idle);
/* Abandons the merge under way, if any. */
void urlset_hosts_merge_end(struct urlset *us);
void urlset_hosts_free(struct urlset *us);
/* Writer: carries out a URLSET_FORGET job; a store status. */
int urlset_forget(struct urlset *us, struct urlset_job *job);

/* urlhostidx.c.  Records, durably, that the store holds URLs the index
 * never saw (an import without texts, or URLs submitted
 * as digests).  A store status. */
int urlset_hosts_mark_partial(struct urlset *us);

/* urlmove.c: the export session and imports (urlset.h).  Writer: begins
 * a session (the journal flushed), answers URLSET_EXPORT_CHANGED, ends it
 * (also at urlset_free), carries out URLSET_IMPORT; each a store status. */
int urlset_export_begin(struct urlset *us, struct urlset_job *job);
int urlset_export_changed(struct urlset *us, struct urlset_job *job);
void urlset_export_end(struct urlset *us);
int urlset_import(struct urlset *us, struct urlset_job *job);
/* Writer, publishing a group: notes a changed entry, then the texts the
 * group recorded, in the changed set while a session is open. */
void urlset_export_note(struct urlset *us, const struct stage_entry *e);
void urlset_export_note_texts(struct urlset *us, const uint8_t *texts,
    size_t len);

/* urlmigrate.c: upgrades a format 1 store to segments, in transactions of
 * urlset_migrate_batch records; a format 2 store's segments to format 3,
 * a few per transaction. */
extern size_t urlset_migrate_batch;
int urlset_migrate_v1(struct urlset *us, char **cause);
int urlset_migrate_v2(struct urlset *us, int format, char **cause);

#endif
