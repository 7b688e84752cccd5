/*
 * urlwriter: the URL writer thread.  See urlset.h.
 *
 * It takes the jobs queued while it was busy, as one group of one
 * durability, and applies them:
 *
 *   stage     each URL's state before the group (the journal's table, else
 *             the store, looked up in one batch), then the jobs' submits
 *             and deletes in order, results included;
 *   journal   one frame with the new state of every URL the group changed;
 *             written, and for a durable group fdatasync'ed;
 *   publish   new URLs' filter counters, the journal's table, then
 *             deleted URLs' counters (so the filter never says "absent"
 *             for a URL a reader could find): readers see the changes
 *             only now, after they are as durable as promised;
 *   deliver   the jobs back to the event loop.
 *
 * A frame that cannot be written (a full disk) fails the group, nothing
 * changed.  A failed fdatasync leaves nothing certain about what is on the
 * disk: the daemon stops, and a restart replays what the journal holds.
 *
 * A full disk or store.  The journal file is allocated once, so groups go
 * on into it while the store has no room; what cannot go on is the flush
 * that empties the journal's table into segments.  A flush (or merge)
 * refused for want of room is not tried again before a wait that doubles
 * from URLSET_FULL_WAIT_MIN_MS to URLSET_FULL_WAIT_MAX_MS, whoever asks
 * (a group that needs room, the idle flush, a merge): meanwhile a group
 * that needs room is refused at once with the same status, and a full
 * disk costs at most one failed transaction a second.  The wait is cut
 * short when the file system has room again (one statvfs per group that
 * needs room), so the next write after space is freed goes through, with
 * no restart; the store logs the episode (store.h).
 *
 * Between groups it flushes the journal's table into segments when it is
 * full (or the writer has been idle a while), merges segments when some
 * are small or sparse (first, holding the next group back, when the
 * backlog is large), and fdatasyncs relaxed frames that have waited
 * relaxed_sync_ms.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "urlset_impl.h"

/* Jobs in one group, at most. */
#define URLSET_GROUP_MAX_JOBS	256
/* Idle this long with changes in memory, the writer flushes them. */
#define URLSET_IDLE_FLUSH_MS	1000
/* The waits between tries of a flush or merge refused for want of room:
 * short at first (a merge's pages may be freed by the next commit), then
 * a second, within which writes resume once the disk has room. */
#define URLSET_FULL_WAIT_MIN_MS	50
#define URLSET_FULL_WAIT_MAX_MS	1000

static void
urlset_deliver(struct mailbox_msg *msg, void *arg)
{
	struct urlset *us = arg;
	struct urlset_job *job = MAILBOX_CONTAINER(msg, struct urlset_job,
	    msg);

	pthread_mutex_lock(&us->q.lock);
	us->q.pending--;
	pthread_mutex_unlock(&us->q.lock);
	job->done(job);
}

/* Hands a finished job back: to the loop, or at once when no thread runs
 * (the opening thread, the tests); the writer's own jobs stay with it. */
static void
finish(struct urlset *us, struct urlset_job *job, int status)
{
	job->status = status;
	if (job->done == NULL)
		return;		/* the writer's own */
	if (us->q.mb != NULL)
		mailbox_post(us->q.mb, &job->msg);
	else
		job->done(job);
}

static void
finish_all(struct urlset *us, struct urlset_job *list, int status)
{
	struct urlset_job *next;

	for (; list != NULL; list = next) {
		next = list->next;
		finish(us, list, status);
	}
}

static void
publish_journal_stats(struct urlset *us)
{
	struct journal_stats js;

	urljournal_stats(us->journal, &js);
	__atomic_store_n(&us->stats.journal_bytes, js.bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.journal_written, js.bytes_written,
	    __ATOMIC_RELAXED);
	__atomic_store_n(&us->stats.journal_syncs, js.syncs, __ATOMIC_RELAXED);
}

static int
stage_reserve(struct urlset *us, size_t n)
{
	size_t slots = 16;

	if (n > us->w.stage_cap) {
		struct stage_entry *s = realloc(us->w.stage, n * sizeof(*s));
		struct urlmem_entry *f;

		if (s == NULL)
			return -1;
		us->w.stage = s;
		if ((f = realloc(us->w.frame, n * sizeof(*f))) == NULL)
			return -1;
		us->w.frame = f;
		free(us->w.lookup_which);
		free(us->w.lookup_found);
		free(us->w.lookup_retry);
		us->w.lookup_which = malloc(n * sizeof(*us->w.lookup_which));
		us->w.lookup_found = malloc(n * sizeof(*us->w.lookup_found));
		us->w.lookup_retry = malloc(n * sizeof(*us->w.lookup_retry));
		if (us->w.lookup_which == NULL || us->w.lookup_found == NULL ||
		    us->w.lookup_retry == NULL) {
			us->w.stage_cap = 0;
			return -1;
		}
		us->w.stage_cap = n;
	}
	while (slots < 2 * n)
		slots *= 2;
	if (slots - 1 != us->w.stage_map_mask) {
		uint32_t *m = malloc(slots * sizeof(*m));

		if (m == NULL)
			return -1;
		free(us->w.stage_map);
		us->w.stage_map = m;
		us->w.stage_map_mask = slots - 1;
	}
	memset(us->w.stage_map, 0, slots * sizeof(*us->w.stage_map));
	us->w.stage_len = 0;
	return 0;
}

/* The group's entry for key, made with its state in the journal's table
 * (or marked for a lookup in the store) when new. */
static struct stage_entry *
stage_entry(struct urlset *us, const struct url_key *key)
{
	uint64_t h;
	size_t i;
	struct stage_entry *e;

	memcpy(&h, key->fp + 8, sizeof(h));
	for (i = (size_t)(h * 0x9e3779b97f4a7c15ULL >> 32) &
	    us->w.stage_map_mask; us->w.stage_map[i] != 0;
	    i = (i + 1) & us->w.stage_map_mask) {
		e = &us->w.stage[us->w.stage_map[i] - 1];
		if (urlrec_cmp_fp(e->key.fp, key->fp) == 0)
			return e;
	}
	e = &us->w.stage[us->w.stage_len++];
	us->w.stage_map[i] = (uint32_t)us->w.stage_len;
	memset(e, 0, sizeof(*e));
	e->key = *key;
	if (urlmem_get(us->mem, key->fp, &e->base)) {
		e->base_present = e->base.st.count > 0;
		e->cur = e->base.st;
	} else {
		/* Not changed since the last flush: the store decides, and
		 * the filter already knows most new URLs are not there. */
		memcpy(e->base.fp, key->fp, CBF_FP_LEN);
		e->need_lookup = cbf_maybe(us->filter, key->idx);
	}
	return e;
}

/* The store's state of the entries marked, in one batch. */
static int
stage_lookup(struct urlset *us)
{
	struct urlset_reader *rd = us->w.wrd;
	size_t n = 0, nretry = 0, tries = 0;
	struct url_key *keys;
	int rc;

	/* The lookup reads keys by index: a contiguous copy of the keys. */
	if ((keys = malloc(us->w.stage_len * sizeof(*keys) + 1)) == NULL)
		return STORE_FAILED;
	for (size_t i = 0; i < us->w.stage_len; i++) {
		keys[i] = us->w.stage[i].key;
		if (us->w.stage[i].need_lookup)
			us->w.lookup_which[n++] = (uint32_t)i;
	}
	if (n > 0 && urlset_reader_reserve(rd, us->w.stage_len) == -1) {
		free(keys);
		return STORE_FAILED;
	}
	rd->idx = us->rd.idx;	/* the writer's own: no grace needed */
	rc = n > 0 ? store_reader_begin(rd->txn) : STORE_OK;
	while (n > 0 && rc == STORE_OK) {
		rc = urlset_lookup_store(rd, keys, us->w.lookup_which, n,
		    us->w.lookup_found, us->w.lookup_retry, &nretry);
		for (size_t i = 0; rc == STORE_OK && i < n; i++) {
			uint32_t k = us->w.lookup_which[i];
			struct url_found *f = &us->w.lookup_found[k];
			struct stage_entry *e = &us->w.stage[k];

			if (!f->found)
				continue;
			e->base_present = true;
			e->base.st = e->cur = f->st;
			e->base.orig_seg = f->seg;
			e->base.orig_slot = f->slot;
		}
		if (rc != STORE_OK || nretry == 0)
			break;
		/* Only the writer moves segments, and it is here: a retry
		 * means the snapshot predates its own last commit. */
		if (++tries > 2) {
			log_warnx("%s: the index names segments the store "
			    "does not hold", __func__);
			rc = STORE_FAILED;
			break;
		}
		memcpy(us->w.lookup_which, us->w.lookup_retry,
		    nretry * sizeof(*us->w.lookup_which));
		n = nretry;
		store_reader_end(rd->txn);
		rc = store_reader_begin(rd->txn);
	}
	if (n > 0)
		store_reader_end(rd->txn);
	free(keys);
	return rc;
}

static bool
changed(const struct stage_entry *e)
{
	const struct url_state *a = &e->base.st, *b = &e->cur;

	if (e->base_present != (b->count > 0))
		return true;
	return b->count > 0 && (a->count != b->count || a->ns != b->ns ||
	    a->first_seen_ms != b->first_seen_ms ||
	    a->last_seen_ms != b->last_seen_ms ||
	    a->expires_ms != b->expires_ms);
}

/*
 * Whether a flush or merge may be tried now: not while the wait after one
 * refused for want of room runs, unless that was the disk and it has room
 * now (freed space is then used at once); else *rc is that refusal's
 * status.
 */
static bool
room_may_try(const struct urlset *us, int *rc)
{
	if (us->segs.full == 0 || clock_mono_ms() >= us->segs.full_retry_ms ||
	    (us->segs.full == STORE_NOSPACE && store_disk_has_room(us->st)))
		return true;
	*rc = us->segs.full;
	return false;
}

/* Notes how a flush or merge went, and returns rc. */
static int
room_tried(struct urlset *us, int rc)
{
	if (store_status_full(rc) || rc == STORE_TXN_FULL) {
		us->segs.full_wait_ms = us->segs.full == 0 ?
		    URLSET_FULL_WAIT_MIN_MS : us->segs.full_wait_ms * 2;
		if (us->segs.full_wait_ms > URLSET_FULL_WAIT_MAX_MS)
			us->segs.full_wait_ms = URLSET_FULL_WAIT_MAX_MS;
		us->segs.full = rc;
		us->segs.full_retry_ms = clock_mono_ms() +
		    us->segs.full_wait_ms;
		log_debug("%s: %s; the next try in %" PRIu64 " ms", __func__,
		    store_strstatus(rc), us->segs.full_wait_ms);
	} else if (rc == STORE_OK && us->segs.full != 0) {
		log_debug("%s: the store has room again", __func__);
		us->segs.full = 0;
	}
	return rc;
}

/* Flushes the journal's table, unless a refused flush's wait runs. */
static int
flush_if_room(struct urlset *us)
{
	int rc;

	if (!room_may_try(us, &rc))
		return rc;
	return room_tried(us, urlset_flush(us, true));
}

/* Makes room in the journal's table and file for a group of n URLs, text_n
 * of them with text_bytes of texts. */
static int
make_room(struct urlset *us, size_t n, size_t text_bytes, size_t text_n)
{
	if (urlmem_count(us->mem) + n <= urlmem_capacity(us->mem) &&
	    urljournal_frame_len(n) + urlset_texts_bound(us, text_bytes,
	    text_n) <=
	    urljournal_room(us->journal))
		return STORE_OK;
	return flush_if_room(us);
}

/* Creates job's namespace, or says why it cannot be. */
static int
create_namespace(struct urlset *us, struct urlset_job *job, uint32_t *id)
{
	if (urlns_full(us->ns)) {
		job->refused = "too many namespaces (16384): drop some first";
		return STORE_FAILED;
	}
	return urlns_create(us->ns, job->ns, id);
}

/*
 * The namespace id each job of a group works in (URLNS_NONE: it has none,
 * so nothing is seen in it), creating the namespaces submits name; a job
 * whose namespace cannot be created fails alone.  Returns the list of the
 * jobs that go on.
 */
static struct urlset_job *
resolve_namespaces(struct urlset *us, struct urlset_job *list, uint32_t *ids,
    uint64_t *ttls)
{
	struct urlset_job *job, *next, *keep = NULL, **tail = &keep;
	size_t j = 0;

	for (job = list; job != NULL; job = next) {
		uint64_t ttl = 0;
		uint32_t id = urlns_find(us->ns, job->ns, strlen(job->ns), &ttl);
		int rc;

		next = job->next;
		if (id == URLNS_NONE && job->op == URLSET_SUBMIT &&
		    (rc = create_namespace(us, job, &id)) != STORE_OK) {
			finish(us, job, rc);
			continue;
		}
		ids[j] = id;
		ttls[j++] = job->ttl_ms != 0 ? job->ttl_ms : ttl;
		*tail = job;
		tail = &job->next;
	}
	*tail = NULL;
	return keep;
}

/* Applies job, working in namespace ns, to the staged entries. */
static void
stage_job(struct urlset *us, struct urlset_job *job, uint32_t ns,
    uint64_t ttl_ms, uint64_t now, uint64_t *added, uint64_t *dup,
    uint64_t *deleted, uint64_t *expired)
{
	for (size_t i = 0; i < job->n; i++) {
		struct stage_entry *e = stage_entry(us, &job->keys[i]);
		struct url_state *st = &e->cur;
		bool seen = url_state_visible(st, ns, now);

		switch (job->op) {
		case URLSET_DELETE:
			/* A record not seen here (expired, or a dropped
			 * namespace's) goes too: it was bound to. */
			memset(&job->states[i], 0, sizeof(job->states[i]));
			if (seen)
				job->states[i] = *st;
			*deleted += seen;
			st->count = 0;
			break;
		case URLSET_IMPORT: {
			/* The state given, exactly (its namespace resolved
			 * by urlset_import); a text_only item changes
			 * nothing but the host index. */
			const struct url_moved *m = &job->moved[i];

			if (!m->text_only) {
				if (m->st.count == 0)
					st->count = 0;
				else
					*st = m->st;
			}
			if ((m->text_only || m->st.count > 0) &&
			    job->texts != NULL)
				urlset_text_add(us, m->st.ns, e->key.fp,
				    &job->texts[i]);
			break;
		}
		case URLSET_RECLAIM:
			if (st->count == 0)
				break;
			if (urlns_dropping(us->ns, st->ns))
				st->count = 0;
			else if (urlset_reclaimable(us, st, now)) {
				st->count = 0;
				(*expired)++;
			}
			break;
		default:
			if (seen) {
				if (st->count < UINT32_MAX)
					st->count++;
				st->last_seen_ms = now;
				(*dup)++;
			} else {
				/* New, or replacing a record no longer seen:
				 * a new time to live runs. */
				st->count = 1;
				st->ns = ns;
				st->first_seen_ms = st->last_seen_ms = now;
				st->expires_ms = ttl_ms != 0 ? now + ttl_ms : 0;
				(*added)++;
				if (job->texts != NULL)
					urlset_text_add(us, ns, e->key.fp,
					    &job->texts[i]);
			}
			job->states[i] = *st;
			break;
		}
	}
}

void
urlset_apply_group(struct urlset *us, struct urlset_job *list)
{
	struct urlset_job *job;
	uint64_t now = clock_wall_ms(), added = 0, dup = 0, deleted = 0;
	uint64_t expired = 0, ttls[URLSET_GROUP_MAX_JOBS];
	uint32_t ids[URLSET_GROUP_MAX_JOBS];
	size_t nkeys = 0, nframe = 0, text_bytes = 0, text_keys = 0;
	size_t texts_at, j;
	bool durable = list->durability == URLSET_DURABLE;
	int64_t live = 0;
	int rc;

	/* take_group makes no larger group; a caller that would is wrong. */
	for (job = list, j = 0; job != NULL; job = job->next)
		if (++j > URLSET_GROUP_MAX_JOBS)
			fatalx("%s: a group of more than %d jobs", __func__,
			    URLSET_GROUP_MAX_JOBS);
	if ((list = resolve_namespaces(us, list, ids, ttls)) == NULL)
		return;
	/* URLs submitted as digests carry no text for the host index: once
	 * any is, a forget cannot promise to find every URL of a host.
	 * Said in the store before the group can land. */
	for (job = list; job != NULL && us->host_index && !us->hosts.partial;
	    job = job->next)
		if (job->op == URLSET_SUBMIT && job->texts == NULL &&
		    (rc = urlset_hosts_mark_partial(us)) != STORE_OK) {
			finish_all(us, list, rc);
			return;
		}
	for (job = list; job != NULL; job = job->next) {
		nkeys += job->n;
		if (job->texts != NULL) {
			text_bytes += job->text_bytes;
			text_keys += job->n;
		}
	}
	if ((rc = make_room(us, nkeys, text_bytes, text_keys)) != STORE_OK) {
		finish_all(us, list, rc);
		return;
	}
	texts_at = us->hosts.texts_len;
	if (stage_reserve(us, nkeys) == -1 ||
	    urlset_texts_reserve(us, text_bytes, text_keys) == -1) {
		finish_all(us, list, STORE_FAILED);
		return;
	}
	for (job = list; job != NULL; job = job->next)
		for (size_t i = 0; i < job->n; i++) {
			if (i + URLSET_PREFETCH < job->n) {
				const struct url_key *k =
				    &job->keys[i + URLSET_PREFETCH];

				urlmem_prefetch(us->mem, k->fp);
				urlset_prefetch(us, k);
			}
			stage_entry(us, &job->keys[i]);
		}
	if ((rc = stage_lookup(us)) != STORE_OK) {
		finish_all(us, list, rc);
		return;
	}
	for (job = list, j = 0; job != NULL; job = job->next, j++)
		stage_job(us, job, ids[j], ttls[j], now, &added, &dup,
		    &deleted, &expired);
	if (URLSET_CRASH(URLSET_CRASH_STAGED))
		return;
	for (size_t i = 0; i < us->w.stage_len; i++) {
		struct stage_entry *e = &us->w.stage[i];

		if (!changed(e))
			continue;
		us->w.frame[nframe] = e->base;
		us->w.frame[nframe++].st = e->cur;
	}
	/* An import's texts may come without a change of state: the frame
	 * carries them all the same. */
	if (nframe > 0 || us->hosts.texts_len > texts_at) {
		if (urljournal_append(us->journal, us->w.frame, nframe,
		    us->hosts.texts_len > texts_at ? us->hosts.texts +
		    texts_at : NULL, us->hosts.texts_len - texts_at) == -1) {
			us->hosts.texts_len = texts_at;
			/* Only where writing in place takes new blocks (a
			 * copy-on-write file system): the store logs it. */
			if (errno == ENOSPC || errno == EDQUOT) {
				rc = STORE_NOSPACE;
				store_note_full(us->st, rc);
			} else {
				rc = STORE_FAILED;
				log_warnx("%s: cannot write the URL journal: %s",
				    __func__, strerror(errno));
			}
			finish_all(us, list, rc);
			return;
		}
		if (durable && us->sync) {
			if (urljournal_sync(us->journal) == -1)
				fatal("%s: cannot sync the URL journal: what "
				    "is on disk is unknown; stopping", __func__);
			us->w.unsynced_since_ms = 0;
		} else if (us->w.unsynced_since_ms == 0)
			us->w.unsynced_since_ms = clock_mono_ms();
	}
	if (URLSET_CRASH(URLSET_CRASH_JOURNALED))
		return;
	/* Publish: a new URL's counters before its entry, a deleted one's
	 * entry before its counters, so the filter never says "absent" for
	 * a URL a reader could find. */
	for (size_t i = 0; i < us->w.stage_len; i++) {
		struct stage_entry *e = &us->w.stage[i];
		struct urlmem_entry m;

		if (i + URLSET_PREFETCH < us->w.stage_len) {
			const struct url_key *k =
			    &us->w.stage[i + URLSET_PREFETCH].key;

			urlmem_prefetch(us->mem, k->fp);
			urlset_prefetch(us, k);
		}
		if (!changed(e))
			continue;
		if (!e->base_present)
			cbf_add(us->filter, e->key.idx);
		m = e->base;
		m.st = e->cur;
		if (urlmem_put(us->mem, &m) == -1)
			fatalx("%s: the journal's table is full", __func__);
		if (e->base_present && e->cur.count == 0)
			cbf_remove(us->filter, e->key.idx);
		if (e->base_present)
			urlns_count(us->ns, e->base.st.ns, -1);
		if (e->cur.count > 0)
			urlns_count(us->ns, e->cur.ns, 1);
		live += (e->cur.count > 0) - (int64_t)e->base_present;
		if (us->move != NULL)
			urlset_export_note(us, e);
	}
	if (us->move != NULL && us->hosts.texts_len > texts_at)
		urlset_export_note_texts(us, us->hosts.texts + texts_at,
		    us->hosts.texts_len - texts_at);
	__atomic_fetch_add(&us->stats.live, (uint64_t)live, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.submits_new, added, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.submits_duplicate, dup, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.deletes, deleted, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.expired, expired, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->stats.groups, 1, __ATOMIC_RELAXED);
	publish_journal_stats(us);
	if (URLSET_CRASH(URLSET_CRASH_PUBLISHED))
		return;
	finish_all(us, list, STORE_OK);
}

/* Writer: flushes, then compares memory with the store. */
static void
run_verify(struct urlset *us, struct urlset_job *job)
{
	int rc = flush_if_room(us);

	memset(job->verify, 0, sizeof(*job->verify));
	if (rc == STORE_OK)
		rc = urlset_verify_store(us, job->verify);
	finish(us, job, rc);
}

/* Writer: a namespace's settings, or its drop. */
static void
run_namespace(struct urlset *us, struct urlset_job *job)
{
	uint32_t id = urlns_find(us->ns, job->ns, strlen(job->ns), NULL);
	int rc;

	if (job->op == URLSET_NS_DROP)
		rc = id == URLNS_NONE ? STORE_NOTFOUND : urlns_drop(us->ns, id);
	else {
		rc = id == URLNS_NONE ? create_namespace(us, job, &id) :
		    STORE_OK;
		if (rc == STORE_OK)
			rc = urlns_set_ttl(us->ns, id, job->ttl_ms);
	}
	if (rc == STORE_OK && !urlns_info(us->ns, id, job->info))
		rc = STORE_FAILED;
	finish(us, job, rc);
}

/* Writer: a step of moving URLs between shards (urlmove.c). */
static void
run_export(struct urlset *us, struct urlset_job *job)
{
	int rc = STORE_OK;

	switch (job->op) {
	case URLSET_EXPORT_BEGIN:
		/* Everything in the segments, so that the snapshot holds
		 * every record and every text so far. */
		if ((rc = flush_if_room(us)) == STORE_OK)
			rc = urlset_export_begin(us, job);
		break;
	case URLSET_EXPORT_CHANGED:
		rc = urlset_export_changed(us, job);
		break;
	case URLSET_EXPORT_END:
		urlset_export_end(us);
		break;
	default:
		rc = urlset_import(us, job);
		break;
	}
	finish(us, job, rc);
}

int
urlset_current_states(struct urlset *us, const struct url_key *keys,
    size_t n, struct url_state *out)
{
	int rc;

	if (n > URLSET_GROUP_MAX)
		return STORE_FAILED;
	if (stage_reserve(us, n) == -1)
		return STORE_FAILED;
	for (size_t i = 0; i < n; i++)
		stage_entry(us, &keys[i]);
	if ((rc = stage_lookup(us)) != STORE_OK)
		return rc;
	/* Keys given twice share an entry. */
	for (size_t i = 0; i < n; i++)
		out[i] = stage_entry(us, &keys[i])->cur;
	us->w.stage_len = 0;
	return STORE_OK;
}

/* The relaxed frames have waited long enough for their fdatasync. */
static bool
relaxed_sync_due(const struct urlset *us, uint64_t now)
{
	return us->w.unsynced_since_ms != 0 && us->sync &&
	    us->relaxed_sync_ms != 0 &&
	    now - us->w.unsynced_since_ms >= us->relaxed_sync_ms;
}

static void
relaxed_sync(struct urlset *us)
{
	if (urljournal_sync(us->journal) == -1)
		fatal("%s: cannot sync the URL journal: what is on disk is "
		    "unknown; stopping", __func__);
	us->w.unsynced_since_ms = 0;
	publish_journal_stats(us);
}

/* Whether merges wait for readers that they keep sending to newer
 * snapshots (urllookup.c). */
static bool
merges_wait(struct urlset *us)
{
	return __atomic_load_n(&us->starving, __ATOMIC_SEQ_CST) > 0;
}

/* Writer, between groups: merges first when the backlog holds writers
 * back; fdatasyncs relaxed frames that are due; forgets, now and then, a
 * little of what expired or was dropped, so that a writer never idle
 * forgets it too. */
static void
after_group(struct urlset *us)
{
	bool forced, did;

	if (relaxed_sync_due(us, clock_mono_ms()))
		relaxed_sync(us);
	/* The backlog holds the next group back until it is below the
	 * bounds again: the store cannot grow without bound behind it (but
	 * not while a reader's batch needs the segments to hold still). */
	while (!merges_wait(us) && urlset_merge_due(us, &forced) && forced) {
		int rc;

		if (!room_may_try(us, &rc))
			break;
		if ((rc = room_tried(us, urlset_merge_step(us, &did,
		    true))) != STORE_OK) {
			if (!store_status_full(rc) && rc != STORE_TXN_FULL)
				log_warnx("%s: a merge failed; the writer "
				    "goes on", __func__);
			break;
		}
		if (!did)
			break;
	}
	urlset_sweep_step(us, false);
	urlset_hosts_merge_step(us, false);
}

void
urlset_release_scratch(struct urlset *us)
{
	free(us->w.stage);
	free(us->w.stage_map);
	free(us->w.frame);
	free(us->w.lookup_which);
	free(us->w.lookup_found);
	free(us->w.lookup_retry);
	us->w.stage = NULL;
	us->w.stage_map = NULL;
	us->w.frame = NULL;
	us->w.lookup_which = us->w.lookup_retry = NULL;
	us->w.lookup_found = NULL;
	us->w.stage_cap = 0;
	us->w.stage_map_mask = 0;
	if (us->w.wrd != NULL)
		urlset_reader_release(us->w.wrd);
	urlset_texts_release(us);
	urljournal_release(us->journal);
}

/*
 * Writer, idle: the work that waits for a quiet moment.  Returns true if
 * it did some (then it looks for more before sleeping).
 */
static bool
idle_work(struct urlset *us, uint64_t idle_since)
{
	bool forced, did = false, quiet;
	uint64_t now = clock_mono_ms();
	int rc;

	quiet = now - idle_since >= URLSET_IDLE_FLUSH_MS;
	if (relaxed_sync_due(us, now)) {
		relaxed_sync(us);
		return true;
	}
	/* While a refused flush or merge waits, so does the rest. */
	if (!room_may_try(us, &rc))
		return false;
	if (urlmem_count(us->mem) > 0 && quiet)
		return room_tried(us, urlset_flush(us, true)) == STORE_OK;
	if (urlmem_count(us->mem) == 0 && !merges_wait(us) &&
	    urlset_merge_due(us, &forced) &&
	    room_tried(us, urlset_merge_step(us, &did, forced)) == STORE_OK &&
	    did)
		return true;
	if (urlset_sweep_step(us, true) || urlset_hosts_merge_step(us, true))
		return true;
	if (quiet && us->w.stage_cap > 0)
		urlset_release_scratch(us);
	return false;
}

/* Whether jobs of op are applied in groups (the others go alone). */
static bool
grouped(enum urlset_op op)
{
	return op == URLSET_SUBMIT || op == URLSET_DELETE;
}

/* Lock held: the next group, one job alone or several of one durability. */
static struct urlset_job *
take_group(struct urlset *us)
{
	struct urlset_job *list = us->q.head, *last = list;
	size_t n = list->n, jobs = 1;

	if (grouped(list->op)) {
		while (last->next != NULL && grouped(last->next->op) &&
		    last->next->durability == list->durability &&
		    jobs < URLSET_GROUP_MAX_JOBS &&
		    n + last->next->n <= URLSET_GROUP_MAX &&
		    n + last->next->n <= urlmem_capacity(us->mem)) {
			last = last->next;
			n += last->n;
			jobs++;
		}
	}
	us->q.head = last->next;
	if (us->q.head == NULL)
		us->q.tail = NULL;
	last->next = NULL;
	return list;
}

static void *
writer_main(void *arg)
{
	struct urlset *us = arg;
	struct urlset_job *list;
	uint64_t idle_since = clock_mono_ms();
	bool worked = false;

	pthread_setname_np(pthread_self(), "nddd-urls");
	for (;;) {
		pthread_mutex_lock(&us->q.lock);
		while (us->q.head == NULL && !us->q.stopping && !worked) {
			struct timespec ts;

			/* Wake for the idle work's deadlines. */
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 100 * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&us->q.cond, &us->q.lock, &ts);
			if (us->q.head == NULL && !us->q.stopping)
				break;
		}
		if (us->q.head == NULL) {
			bool stopping = us->q.stopping;

			pthread_mutex_unlock(&us->q.lock);
			if (stopping)
				break;
			worked = idle_work(us, idle_since);
			continue;
		}
		list = take_group(us);
		pthread_mutex_unlock(&us->q.lock);
		switch (list->op) {
		case URLSET_VERIFY:
			run_verify(us, list);
			break;
		case URLSET_NS_SET:
		case URLSET_NS_DROP:
			run_namespace(us, list);
			break;
		case URLSET_FORGET:
			finish(us, list, urlset_forget(us, list));
			break;
		case URLSET_EXPORT_BEGIN:
		case URLSET_EXPORT_CHANGED:
		case URLSET_EXPORT_END:
		case URLSET_IMPORT:
			run_export(us, list);
			break;
		default:
			urlset_apply_group(us, list);
			break;
		}
		after_group(us);
		idle_since = clock_mono_ms();
		worked = false;
	}
	/* A clean stop leaves the journal empty: the next start replays
	 * nothing. */
	if (urlset_flush(us, true) != STORE_OK)
		log_warnx("%s: the last flush failed; the next start replays "
		    "the journal", __func__);
	return NULL;
}

int
urlset_start(struct urlset *us, struct event_base *base)
{
	if ((us->q.mb = mailbox_new(base, urlset_deliver, us)) == NULL)
		return -1;
	if (pthread_create(&us->q.thread, NULL, writer_main, us) != 0) {
		mailbox_free(us->q.mb);
		us->q.mb = NULL;
		return -1;
	}
	us->q.started = true;
	return 0;
}

void
urlset_stop(struct urlset *us)
{
	if (!us->q.started)
		return;
	pthread_mutex_lock(&us->q.lock);
	us->q.stopping = true;
	pthread_cond_signal(&us->q.cond);
	pthread_mutex_unlock(&us->q.lock);
	pthread_join(us->q.thread, NULL);
	us->q.started = false;
	/* Hand back what the thread finished after the loop last looked. */
	mailbox_drain(us->q.mb);
	mailbox_free(us->q.mb);
	us->q.mb = NULL;
}

void
urlset_submit_job(struct urlset *us, struct urlset_job *job)
{
	job->next = NULL;
	job->status = STORE_OK;
	job->refused = NULL;
	pthread_mutex_lock(&us->q.lock);
	if (us->q.tail != NULL)
		us->q.tail->next = job;
	else
		us->q.head = job;
	us->q.tail = job;
	us->q.pending++;
	pthread_cond_signal(&us->q.cond);
	pthread_mutex_unlock(&us->q.lock);
}
