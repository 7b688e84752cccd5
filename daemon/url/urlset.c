/*
 * urlset: the set of seen URLs.  See urlset.h; this file opens it (settings
 * fixed per data directory, the rebuild of memory from the store, the
 * journal's replay) and gathers statistics; urlkey.c derives keys.
 */
#include "urlset.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "urlhosts.h"
#include "urlset_impl.h"

/* Counters per URL of capacity: 10 bytes of filter per URL (DESIGN 3). */
#define URLSET_COUNTERS_PER_URL	20
/* URLs changed between flushes, by default: a flush then writes 8
 * segments, and the journal's table takes 2 MiB. */
#define URLSET_JOURNAL_ENTRIES	32768
bool (*urlset_crash_hook)(enum urlset_crash_point point);

static double
now_seconds(void)
{
	return (double)clock_mono_ns() / 1e9;
}

/*
 * What a data directory fixes at creation: the filter's shape and the
 * canonicalization rules.  Each is checked against the configuration.
 */
struct fixed {
	const char *key;
	char value[64];
};

static int
set_cause(char **cause, int rc, const char *what)
{
	if (asprintf(cause, "URL store %s: %s", what, store_strstatus(rc)) ==
	    -1)
		*cause = NULL;
	return -1;
}

/* Ends urlset_metadata's transaction, nothing written. */
static void
metadata_end(struct store_txn *txn, bool check_only)
{
	if (check_only) {
		store_reader_end(txn);
		store_reader_free(txn);
	} else
		store_abort(txn);
}

/* The filter's counters for a capacity: whole blocks, rounded up. */
static uint64_t
counters_for(uint64_t capacity)
{
	return (capacity * URLSET_COUNTERS_PER_URL + CBF_BLOCK - 1) /
	    CBF_BLOCK * CBF_BLOCK;
}

/*
 * Checks (or, in a new store, records) the settings fixed per data
 * directory and the format.  *format is the store's format (0: new).  A
 * store of a newer format, or other settings, is refused before anything
 * is written.  With check_only, nothing is recorded: the refusals alone,
 * in a read transaction (urlset_refuses).
 */
static int
urlset_metadata(struct store *st, uint64_t m,
    const struct urlset_options *opts, bool check_only, int *format,
    char **cause)
{
	struct fixed fixed[] = {
		{ "urls.cbf_m", "" },
		{ "urls.cbf_k", "" },
		{ "urls.cbf_index", CBF_INDEX_SCHEME },
		{ "urls.strip_session_ids", "" },
		{ "urls.strip_tracking", "" },
		{ "urls.sort_query", "" },
	};
	struct store_txn *txn;
	char buf[64], *end;
	int rc, created = 0;
	long f;

	snprintf(fixed[0].value, sizeof(fixed[0].value), "%" PRIu64, m);
	snprintf(fixed[1].value, sizeof(fixed[1].value), "%d", CBF_K);
	snprintf(fixed[3].value, sizeof(fixed[3].value), "%s",
	    opts->canon.strip_session_ids ? "yes" : "no");
	snprintf(fixed[4].value, sizeof(fixed[4].value), "%s",
	    opts->canon.strip_tracking ? "yes" : "no");
	snprintf(fixed[5].value, sizeof(fixed[5].value), "%s",
	    opts->canon.sort_query ? "yes" : "no");

	if (check_only) {
		if ((txn = store_reader_new(st)) == NULL)
			return set_cause(cause, STORE_FAILED, "metadata");
		if ((rc = store_reader_begin(txn)) != STORE_OK) {
			store_reader_free(txn);
			return set_cause(cause, rc, "metadata");
		}
	} else if ((rc = store_write_begin(st, &txn)) != STORE_OK)
		return set_cause(cause, rc, "metadata");
	rc = store_meta_get(txn, "urls.format", buf, sizeof(buf));
	if (rc == STORE_NOTFOUND)
		*format = 0;
	else if (rc != STORE_OK)
		goto store_err;
	else {
		f = strtol(buf, &end, 10);
		if (*end != '\0' || f < 1 || f > URLSET_FORMAT) {
			metadata_end(txn, check_only);
			if (asprintf(cause, "the data directory holds a URL "
			    "store of format %s, which this nddd cannot read "
			    "(it reads formats 1 to %d): use the nddd that "
			    "wrote it; nothing was changed", buf,
			    URLSET_FORMAT) == -1)
				*cause = NULL;
			return -1;
		}
		*format = (int)f;
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		rc = store_meta_get(txn, fixed[i].key, buf, sizeof(buf));
		if (rc == STORE_NOTFOUND && check_only)
			continue;
		if (rc == STORE_NOTFOUND) {
			if ((rc = store_meta_put(txn, fixed[i].key,
			    fixed[i].value)) != STORE_OK)
				goto store_err;
			created = 1;
			continue;
		}
		if (rc != STORE_OK)
			goto store_err;
		if (strcmp(buf, fixed[i].value) != 0) {
			metadata_end(txn, check_only);
			if (asprintf(cause, "the data directory was created "
			    "with %s = %s, but the configuration gives %s; "
			    "this is fixed per data directory: restore the "
			    "setting or use a new data directory",
			    fixed[i].key, buf, fixed[i].value) == -1)
				*cause = NULL;
			return -1;
		}
	}
	if (check_only) {
		metadata_end(txn, true);
		return 0;
	}
	/* Format 4 added only the host index (urlhosts.h): a store of
	 * format 3 is one already, whose URLs the index lacks. */
	if (*format == 0 || *format == 3) {
		snprintf(buf, sizeof(buf), "%d", URLSET_FORMAT);
		if ((rc = store_meta_put(txn, "urls.format", buf)) != STORE_OK)
			goto store_err;
	}
	if ((rc = store_commit(txn)) != STORE_OK)
		return set_cause(cause, rc, "metadata");
	if (created && *format == 0)
		log_info("%s: new URL store: %" PRIu64 " filter counters",
		    __func__, m);
	return 0;
store_err:
	metadata_end(txn, check_only);
	return set_cause(cause, rc, "metadata");
}

bool
urlset_refuses(struct store *st, const struct urlset_options *opts,
    char **cause)
{
	int format;

	*cause = NULL;
	return urlset_metadata(st, counters_for(opts->capacity), opts, true,
	    &format, cause) == -1;
}

/* The store's last journal frame (0: none). */
static int
read_checkpoint(struct urlset *us, uint64_t *seq, char **cause)
{
	struct store_txn *txn = store_reader_new(us->st);
	char buf[32];
	int rc;

	if (txn == NULL || (rc = store_reader_begin(txn)) != STORE_OK) {
		store_reader_free(txn);
		return set_cause(cause, STORE_FAILED, "checkpoint");
	}
	rc = store_meta_get(txn, "urls.journal_seq", buf, sizeof(buf));
	store_reader_end(txn);
	store_reader_free(txn);
	if (rc == STORE_NOTFOUND) {
		*seq = 0;
		return 0;
	}
	if (rc != STORE_OK)
		return set_cause(cause, rc, "checkpoint");
	*seq = strtoull(buf, NULL, 10);
	return 0;
}

/*
 * One journal entry, a URL's state after a change that the store may not
 * hold: the same steps as publishing a group (urlwriter.c), against what
 * memory and the store hold now.  Replaying an entry twice changes nothing
 * more than once.
 */
static int
replay_one(const struct urlmem_entry *e, void *arg)
{
	struct urlset *us = arg;
	struct urlmem_entry cur = *e, old;
	struct url_key key;
	struct url_state was;
	struct urlns_info info;
	uint32_t which = 0, retry;
	size_t nretry;
	struct url_found found;

	if (urlmem_count(us->mem) >= urlmem_capacity(us->mem) &&
	    urlset_flush(us, false) != STORE_OK)
		return -1;
	urlset_key_digest(us, e->fp, &key);
	if (urlmem_get(us->mem, e->fp, &old)) {
		was = old.st;
		cur.orig_seg = old.orig_seg;
		cur.orig_slot = old.orig_slot;
	} else {
		memset(&found, 0, sizeof(found));
		us->w.wrd->idx = us->rd.idx;
		if (store_reader_begin(us->w.wrd->txn) != STORE_OK)
			return -1;
		if (urlset_lookup_store(us->w.wrd, &key, &which, 1, &found,
		    &retry, &nretry) != STORE_OK || nretry > 0) {
			store_reader_end(us->w.wrd->txn);
			return -1;
		}
		store_reader_end(us->w.wrd->txn);
		was = found.st;
		was.count = found.found ? was.count : 0;
		cur.orig_seg = found.found ? found.seg : 0;
		cur.orig_slot = found.found ? found.slot : 0;
	}
	/* A namespace whose creation the store lost (sync = none) is
	 * forgotten, as the rebuild does. */
	if (cur.st.count > 0 && !urlns_info(us->ns, cur.st.ns, &info) &&
	    urlns_adopt(us->ns, cur.st.ns) != STORE_OK)
		return -1;
	if (was.count == 0 && cur.st.count > 0)
		cbf_add(us->filter, key.idx);
	if (urlmem_put(us->mem, &cur) == -1)
		return -1;
	if (was.count > 0 && cur.st.count == 0)
		cbf_remove(us->filter, key.idx);
	if (was.count > 0)
		urlns_count(us->ns, was.ns, -1);
	if (cur.st.count > 0)
		urlns_count(us->ns, cur.st.ns, 1);
	us->stats.live += (cur.st.count > 0) - (was.count > 0);
	return 0;
}

static int
urlset_replay(struct urlset *us, char **cause)
{
	uint64_t checkpoint, frames, entries;
	double t0 = now_seconds();
	int rc;

	if (read_checkpoint(us, &checkpoint, cause) == -1)
		return -1;
	if (urljournal_replay(us->journal, checkpoint, replay_one,
	    urlset_texts_replay, us, &frames, &entries, cause) == -1)
		return -1;
	if (frames == 0)
		return 0;
	log_info("%s: %" PRIu64 " URL changes of %" PRIu64 " journal frames "
	    "replayed in %.3f s", __func__, entries, frames,
	    now_seconds() - t0);
	/* Into the store now, so that the next start replays nothing.  A full
	 * store keeps them in the journal: writes are refused until it has
	 * room, everything else works. */
	switch (rc = urlset_flush(us, true)) {
	case STORE_OK:
		return 0;
	case STORE_FULL:
	case STORE_NOSPACE:
	case STORE_TXN_FULL:
		log_warnx("%s: %s: %zu URL changes stay in the journal, and "
		    "submits and deletes are refused once its table is full, "
		    "until the store has room", __func__, store_strstatus(rc),
		    urlmem_count(us->mem));
		return 0;
	default:
		if (asprintf(cause, "cannot flush the replayed URL journal "
		    "into the store: %s", store_strstatus(rc)) == -1)
			*cause = NULL;
		return -1;
	}
}

struct urlset *
urlset_open(struct store *st, const char *dir,
    const struct urlset_options *opts, char **cause)
{
	struct urlset *us;
	size_t entries;
	int format, rc;
	double t0;

	*cause = NULL;
	if ((us = calloc(1, sizeof(*us))) == NULL)
		return NULL;
	us->st = st;
	us->canon = opts->canon;
	us->capacity = opts->capacity;
	us->sync = opts->sync;
	us->relaxed_sync_ms = opts->relaxed_sync_ms;
	us->keep_expired_ms = opts->keep_expired_ms;
	us->host_index = opts->host_index;
	us->seg_records = opts->segment_records ? opts->segment_records :
	    URLSEG_MAX;
	if (us->seg_records > URLSEG_MAX)
		us->seg_records = URLSEG_MAX;
	if (us->seg_records < 2)
		us->seg_records = 2;
	entries = opts->journal_entries ? opts->journal_entries :
	    URLSET_JOURNAL_ENTRIES;
	pthread_mutex_init(&us->q.lock, NULL);
	pthread_cond_init(&us->q.cond, NULL);
	pthread_mutex_init(&us->rd.readers_lock, NULL);
	pthread_mutex_init(&us->move_lock, NULL);
	us->rd.epoch = 1;
	urlcanon_id(&us->canon, us->canon_id);
	us->m = counters_for(opts->capacity);
	if (urlset_metadata(st, us->m, opts, false, &format, cause) == -1 ||
	    (us->ns = urlns_open(st, cause)) == NULL)
		goto err;
	if ((us->filter = cbf_new(us->m)) == NULL ||
	    (us->rd.idx = urlidx_new(opts->capacity)) == NULL ||
	    (us->mem = urlmem_new(entries)) == NULL ||
	    (us->w.wrd = urlset_reader_new(us)) == NULL) {
		if (asprintf(cause, "cannot allocate the URL filter (%" PRIu64
		    " bytes), index or journal table", us->m / 2) == -1)
			*cause = NULL;
		goto err;
	}
	/* Room for a round's frames: entries URLs, changed in groups of up to
	 * as many, and as many texts at their longest. */
	if ((us->journal = urljournal_open(dir, 2 * urljournal_frame_len(
	    entries) + urlset_texts_bound(us, entries * URLHOSTS_TEXT_MAX,
	    entries), cause)) == NULL)
		goto err;
	if ((format == 1 || format == 2) &&
	    urlset_migrate_v2(us, format, cause) == -1)
		goto err;
	if (format == 1 && urlset_migrate_v1(us, cause) == -1)
		goto err;

	t0 = now_seconds();
	if (urlset_rebuild(us, cause) == -1)
		goto err;
	log_info("%s: filter and index rebuilt from %" PRIu64 " URLs in "
	    "%" PRIu64 " segments in %.3f s (%" PRIu64 " of %" PRIu64
	    " counters non-zero)", __func__, us->stats.live, us->segs.count,
	    now_seconds() - t0, cbf_stat_nonzero(us->filter), us->m);
	if ((rc = urlset_hosts_open(us, format)) != STORE_OK) {
		set_cause(cause, rc, "host index");
		goto err;
	}
	if (urlset_replay(us, cause) == -1)
		goto err;
	if (us->stats.live > opts->capacity)
		log_warnx("%s: %" PRIu64 " URLs stored, above the capacity of "
		    "%" PRIu64 ": checks stay exact but read the store more",
		    __func__, us->stats.live, opts->capacity);
	return us;
err:
	urlset_free(us);
	return NULL;
}

void
urlset_free(struct urlset *us)
{
	if (us == NULL)
		return;
	if (us->q.started)
		urlset_stop(us);
	urlset_export_end(us);
	urlset_release_scratch(us);
	urljournal_close(us->journal);
	urlmem_free(us->mem);
	urlidx_free(us->rd.idx);
	cbf_free(us->filter);
	urlset_reader_free(us->w.wrd);
	urlns_free(us->ns);
	free(us->segs.dir);
	free(us->segs.free_ids);
	free(us->segs.free_epoch);
	free(us->hosts.texts);
	urlset_hosts_free(us);
	pthread_cond_destroy(&us->q.cond);
	pthread_mutex_destroy(&us->q.lock);
	pthread_mutex_destroy(&us->rd.readers_lock);
	pthread_mutex_destroy(&us->move_lock);
	free(us);
}

const struct cbf *
urlset_filter(const struct urlset *us)
{
	return us->filter;
}

const char *
urlset_canon_id(const struct urlset *us)
{
	return us->canon_id;
}

struct urlns *
urlset_namespaces(struct urlset *us)
{
	return us->ns;
}

bool
urlset_host_index(const struct urlset *us)
{
	return us->host_index;
}

bool
urlset_hosts_complete(struct urlset *us)
{
	/* The writer's flags, read as they stand. */
	return us->host_index &&
	    !__atomic_load_n(&us->hosts.partial, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&us->hosts.partial_pending, __ATOMIC_RELAXED);
}

void
urlset_prefetch(const struct urlset *us, const struct url_key *key)
{
	cbf_prefetch(us->filter, key->idx);
}

void
urlset_add_tally(struct urlset *us, const struct urlset_tally *tally)
{
	__atomic_fetch_add(&us->stats.checks, tally->checks, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.checks_filter_only, tally->filter_only,
	    __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.false_positives, tally->false_positives,
	    __ATOMIC_RELAXED);
}

static uint64_t
get(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void
urlset_stats(struct urlset *us, struct urlset_stats *out)
{
	struct urlidx_stats xs;

	memset(out, 0, sizeof(*out));
	out->urls = get(&us->stats.live);
	out->checks = get(&us->stats.checks);
	out->checks_filter_only = get(&us->stats.checks_filter_only);
	out->filter_false_positives = get(&us->stats.false_positives);
	out->submits_new = get(&us->stats.submits_new);
	out->submits_duplicate = get(&us->stats.submits_duplicate);
	out->deletes = get(&us->stats.deletes);
	out->expired = get(&us->stats.expired);
	out->dropping = urlns_dropping_urls(us->ns);
	out->journal_entries = urlmem_count(us->mem);
	out->journal_capacity = urlmem_capacity(us->mem);
	out->journal_bytes = get(&us->stats.journal_bytes);
	out->journal_bytes_written = get(&us->stats.journal_written);
	out->journal_syncs = get(&us->stats.journal_syncs);
	out->groups = get(&us->stats.groups);
	out->flushes = get(&us->stats.flushes);
	out->merges = get(&us->stats.merges);
	out->merges_forced = get(&us->stats.merges_forced);
	out->segments = get(&us->stats.segments);
	out->small_segments = get(&us->stats.small);
	out->records = get(&us->stats.records);
	out->dead_records = get(&us->stats.dead);
	out->store_bytes_written = get(&us->stats.store_bytes_written);
	pthread_mutex_lock(&us->q.lock);
	out->pending = us->q.pending;
	pthread_mutex_unlock(&us->q.lock);
	urlidx_stats(us->rd.idx, &xs);
	out->index_bytes = xs.bytes;
	out->journal_table_bytes = urlmem_bytes(us->mem);
	out->host_runs = get(&us->stats.host_runs);
	out->host_keys = get(&us->stats.host_keys);
	out->host_merging = get(&us->stats.host_merging) != 0;
}
