/*
 * statsreq: the daemon's view of itself.  See statsreq.h.
 */
#include "statsreq.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include "cbf.h"
#include "docreq.h"
#include "metrics.h"
#include "reply.h"
#include "server.h"
#include "shardstate.h"
#include "store.h"
#include "version.h"
#include "workers.h"

/*
 * The namespaces as stats lists them: a URL namespace and a document
 * namespace of one name are one row; the default one first, then by name,
 * at most STATSREQ_NAMESPACES_MAX, the dropped ones left out.  In a new
 * array of *n (caller frees; its names point into the lists, which the
 * caller frees too); NULL when memory is short.
 */
struct ns_row {
	const char *name;
	uint64_t urls, default_ttl_ms, docs;
};

static struct ns_row *
namespace_rows(const struct req_services *svc, size_t *n,
    struct urlns_info **ul, struct docns_info **dl)
{
	size_t nu = 0, nd = 0, i = 0, j = 0, k = 0;
	struct ns_row *rows;

	*n = 0;
	*ul = urlns_list(urlset_namespaces(svc->us), &nu);
	*dl = docns_list(docset_namespaces(svc->ds), &nd);
	if (*ul == NULL || *dl == NULL ||
	    (rows = calloc(nu + nd + 1, sizeof(*rows))) == NULL)
		return NULL;
	/* Both lists: the default one, the others by name, the dropped
	 * ones last. */
	while (nu > 0 && (*ul)[nu - 1].dropping)
		nu--;
	while (nd > 0 && (*dl)[nd - 1].dropping)
		nd--;
	while ((i < nu || j < nd) && k < STATSREQ_NAMESPACES_MAX) {
		int c = i == nu ? 1 : j == nd ? -1 : strcmp((*ul)[i].name,
		    (*dl)[j].name);

		rows[k].name = c <= 0 ? (*ul)[i].name : (*dl)[j].name;
		if (c <= 0) {
			rows[k].urls = (*ul)[i].urls;
			rows[k].default_ttl_ms = (*ul)[i++].default_ttl_ms;
		}
		if (c >= 0)
			rows[k].docs = (*dl)[j++].docs;
		k++;
	}
	*n = k;
	return rows;
}

void
statsreq_gather(const struct req_services *svc, struct daemon_stats *out)
{
	const struct cbf *f = urlset_filter(svc->us);

	*out = (struct daemon_stats){ 0 };
	out->uptime_seconds = (uint64_t)(time(NULL) - svc->started);
	docset_stats(svc->ds, &out->docs);
	urlset_stats(svc->us, &out->urls);
	accel_stats(svc->acc, &out->accel);
	writer_stats(svc->w, &out->writer);
	defer_stats(svc->st, &out->doc_store);
	out->filter_counters = cbf_stat_counters(f);
	out->filter_nonzero = cbf_stat_nonzero(f);
	out->filter_saturated = cbf_stat_saturated(f);
	out->filter_bytes = cbf_stat_bytes(f);
	out->store_bytes = store_bytes_used(svc->st);
	out->store_full = store_full_state(svc->st, &out->store_refused_full);
	out->connections = svc->srv != NULL ? server_connections(svc->srv) : 0;
}

size_t
statsreq_pending(const struct req_services *svc)
{
	struct urlset_stats us;

	urlset_stats(svc->us, &us);
	return workers_pending(svc->workers) + writer_pending(svc->w) +
	    us.pending + svc->docs->npending + svc->docs->in_accel;
}

void
statsreq_run(struct op_call *call)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__StatsResult res = NDDD__V1__STATS_RESULT__INIT;
	Nddd__V1__FilterStats fs = NDDD__V1__FILTER_STATS__INIT;
	Nddd__V1__NearStats ns = NDDD__V1__NEAR_STATS__INIT;
	Nddd__V1__AccelStats as = NDDD__V1__ACCEL_STATS__INIT;
	Nddd__V1__UrlStoreStats uss = NDDD__V1__URL_STORE_STATS__INIT;
	Nddd__V1__DocStoreStats dss = NDDD__V1__DOC_STORE_STATS__INIT;
	Nddd__V1__ShardState shard;
	char shard_list[SHARD_LIST_MAX + 1];
	const struct urlset_stats *us;
	struct daemon_stats s;
	Nddd__V1__NamespaceInfo *nsi = NULL, **nsp = NULL;
	struct urlns_info *ul = NULL;
	struct docns_info *dl = NULL;
	struct ns_row *rows = NULL;
	size_t nns = 0;

	statsreq_gather(call->svc, &s);
	us = &s.urls;
	res.version = (char *)NDDD_VERSION;
	res.canon = (char *)urlset_canon_id(call->svc->us);
	res.uptime_seconds = s.uptime_seconds;
	res.urls = us->urls;
	res.docs = s.docs.docs;
	ns.k = s.docs.k;
	ns.blocks = s.docs.blocks;
	ns.tables = s.docs.tables;
	/* How neighbours are decided: what a client over shards decides
	 * by too. */
	ns.answer = (char *)(call->svc->docs->hamming ? "hamming" :
	    "verified");
	ns.html = (char *)(call->svc->docs->html_main ? "main" : "whole");
	ns.containment = s.docs.containment;
	ns.resemblance = s.docs.resemblance;
	res.near = &ns;
	/* Clients learn a shard list that grew from here. */
	shard_state_message(call->svc->shard, &shard, shard_list);
	if (shard.shards > 0)
		res.shard = &shard;
	/* The rest is for administrators. */
	if (call->role >= ROLE_ADMIN) {
		ns.bytes = s.docs.table_bytes;
		ns.distinct = s.docs.distinct;
		ns.sketch_keys = s.docs.sketch_entries;
		ns.sketch_bytes = s.docs.sketch_bytes;
		ns.candidates = s.docs.candidates;
		ns.verified = s.docs.verified;
		ns.keys_skipped = s.docs.keys_skipped;
		ns.unsketched = s.docs.unsketched;
		as.backend = s.accel.backend;
		as.simulation = s.accel.simulation;
		as.batches = s.accel.batches;
		as.batches_failed = s.accel.batches_failed;
		as.docs = s.accel.docs;
		as.bytes = s.accel.bytes;
		res.accel = &as;
		fs.counters = s.filter_counters;
		fs.nonzero = s.filter_nonzero;
		fs.saturated = s.filter_saturated;
		fs.k = CBF_K;
		fs.bytes = s.filter_bytes;
		res.cbf = &fs;
		res.checks = us->checks;
		res.checks_filter_only = us->checks_filter_only;
		res.filter_false_positives = us->filter_false_positives;
		res.submits_new = us->submits_new;
		res.submits_duplicate = us->submits_duplicate;
		res.deletes = us->deletes;
		res.commits = s.writer.commits;
		uss.journal_entries = us->journal_entries;
		uss.journal_capacity = us->journal_capacity;
		uss.journal_bytes = us->journal_bytes;
		uss.journal_bytes_written = us->journal_bytes_written;
		uss.journal_syncs = us->journal_syncs;
		uss.groups = us->groups;
		uss.flushes = us->flushes;
		uss.merges = us->merges;
		uss.merges_forced = us->merges_forced;
		uss.segments = us->segments;
		uss.small_segments = us->small_segments;
		uss.records = us->records;
		uss.dead_records = us->dead_records;
		uss.store_bytes_written = us->store_bytes_written;
		uss.pending = us->pending;
		uss.index_bytes = us->index_bytes;
		uss.journal_table_bytes = us->journal_table_bytes;
		uss.host_runs = us->host_runs;
		uss.host_keys = us->host_keys;
		uss.host_merging = us->host_merging;
		res.url_store = &uss;
		dss.journal_bytes = s.doc_store.journal_bytes;
		dss.journal_bytes_written = s.doc_store.journal_bytes_written;
		dss.journal_syncs = s.doc_store.syncs;
		dss.groups = s.doc_store.frames;
		dss.checkpoints = s.doc_store.checkpoints;
		dss.pending = s.doc_store.pending;
		dss.failures = s.doc_store.failures;
		res.doc_store = &dss;
		res.store_bytes = s.store_bytes;
		res.connections = s.connections;
		res.urls_dropping = us->dropping;
		res.urls_expired = us->expired;
		res.docs_dropping = s.docs.dropping;
		/* The dropped ones are counted in urls_dropping and
		 * docs_dropping. */
		rows = namespace_rows(call->svc, &nns, &ul, &dl);
		if (rows != NULL && nns > 0 &&
		    (nsi = calloc(nns, sizeof(*nsi))) != NULL &&
		    (nsp = calloc(nns, sizeof(*nsp))) != NULL) {
			for (size_t i = 0; i < nns; i++) {
				nddd__v1__namespace_info__init(&nsi[i]);
				nsi[i].name = (char *)rows[i].name;
				nsi[i].urls = rows[i].urls;
				nsi[i].default_ttl_seconds =
				    rows[i].default_ttl_ms / 1000;
				nsi[i].docs = rows[i].docs;
				nsp[i] = &nsi[i];
			}
			res.n_namespaces = nns;
			res.namespaces = nsp;
		}
	}
	resp.id = call->reply->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_STATS;
	resp.stats = &res;
	reply_message(call->reply, &resp.base);
	free(nsi);
	free(nsp);
	free(rows);
	free(ul);
	free(dl);
}

/* URLs and documents per namespace, as stats lists them (names need no
 * escaping: they are letters, digits, '.', '_' and '-'). */
static void
render_namespaces(const struct req_services *svc, struct evbuffer *out)
{
	struct urlns_info *ul;
	struct docns_info *dl;
	size_t n = 0;
	struct ns_row *rows = namespace_rows(svc, &n, &ul, &dl);

	if (rows != NULL) {
		evbuffer_add_printf(out, "# HELP nddd_namespace_urls URLs "
		    "stored in each namespace (\"\": the default one), expired "
		    "ones not yet reclaimed included.\n"
		    "# TYPE nddd_namespace_urls gauge\n");
		for (size_t i = 0; i < n; i++)
			evbuffer_add_printf(out, "nddd_namespace_urls"
			    "{namespace=\"%s\"} %" PRIu64 "\n", rows[i].name,
			    rows[i].urls);
		evbuffer_add_printf(out, "# HELP nddd_namespace_docs "
		    "Documents stored in each namespace (\"\": the default "
		    "one).\n# TYPE nddd_namespace_docs gauge\n");
		for (size_t i = 0; i < n; i++)
			evbuffer_add_printf(out, "nddd_namespace_docs"
			    "{namespace=\"%s\"} %" PRIu64 "\n", rows[i].name,
			    rows[i].docs);
	}
	free(rows);
	free(ul);
	free(dl);
}

/* The accelerator backend in use, as a label. */
static void
render_backend(const struct req_services *svc, const struct daemon_stats *s,
    struct evbuffer *out)
{
	(void)svc;
	evbuffer_add_printf(out, "# HELP nddd_accel_backend The accelerator "
	    "backend in use (1), and whether it is a simulation.\n"
	    "# TYPE nddd_accel_backend gauge\n"
	    "nddd_accel_backend{backend=\"%s\",simulation=\"%s\"} 1\n",
	    s->accel.backend, s->accel.simulation ? "yes" : "no");
}

static void
render_namespace_rows(const struct req_services *svc,
    const struct daemon_stats *s, struct evbuffer *out)
{
	(void)s;
	render_namespaces(svc, out);
}

/* The loop's own count (gauges are rendered in the loop), where there is
 * a server. */
static void
render_buffered(const struct req_services *svc, const struct daemon_stats *s,
    struct evbuffer *out)
{
	(void)s;
	if (svc->srv != NULL)
		metrics_render_value(out, "nddd_connection_buffer_bytes",
		    "gauge", "Connections' buffers and the replies reserved "
		    "for requests in flight ([server] buffer_memory bounds "
		    "them).", (double)server_buffered(svc->srv));
}

static double
get_tables(const struct req_services *svc, const struct daemon_stats *s)
{
	(void)svc;
	return (double)s->docs.tables;
}

static double
get_fill_ratio(const struct req_services *svc, const struct daemon_stats *s)
{
	(void)svc;
	return (double)s->filter_nonzero / (double)s->filter_counters;
}

static double
get_store_full(const struct req_services *svc, const struct daemon_stats *s)
{
	(void)svc;
	return s->store_full == STORE_NOSPACE ? 2.0 : s->store_full != 0 ?
	    1.0 : 0.0;
}

static double
get_connections(const struct req_services *svc, const struct daemon_stats *s)
{
	(void)svc;
	return (double)s->connections;
}

static double
get_pending(const struct req_services *svc, const struct daemon_stats *s)
{
	(void)s;
	return (double)statsreq_pending(svc);
}

/*
 * A row of /metrics' gauges and counters: its name, type and help, and its
 * value, one of a uint64_t of struct daemon_stats (stat, its offset: what
 * STAT names, checked to be a uint64_t), a value computed (get), or, for
 * a metric with labels or one that may be absent, the whole metric
 * rendered (render).
 */
struct gauge_row {
	const char *name;
	const char *type;
	const char *help;
	size_t stat;
	double (*get)(const struct req_services *svc,
	    const struct daemon_stats *s);
	void (*render)(const struct req_services *svc,
	    const struct daemon_stats *s, struct evbuffer *out);
};

#define STAT(f)	.stat = offsetof(struct daemon_stats, f) + 0 * \
	sizeof(_Generic(((struct daemon_stats *)0)->f, uint64_t: 0))
#define GAUGE	"gauge"
#define COUNTER	"counter"

/* In the order /metrics has always listed them: adding a metric is adding
 * a row. */
static const struct gauge_row gauge_rows[] = {
	{ "nddd_doc_candidates_total", COUNTER, "Candidates verified answers "
	    "looked at (a record read and compared each).",
	    STAT(docs.candidates) },
	{ "nddd_doc_verified_total", COUNTER,
	    "Candidates kept as neighbours.", STAT(docs.verified) },
	{ "nddd_doc_sketch_keys_skipped_total", COUNTER, "Sketch keys passed "
	    "over by queries as held by too many documents.",
	    STAT(docs.keys_skipped) },
	{ "nddd_doc_sketch_keys", GAUGE, "Keys in the sketch index (a "
	    "document under each of its keys).", STAT(docs.sketch_entries) },
	{ "nddd_doc_sketch_bytes", GAUGE, "Memory of the sketch index.",
	    STAT(docs.sketch_bytes) },
	{ "nddd_docs_unsketched", GAUGE, "Documents stored without a sketch "
	    "(by nddd 0.4): found by distance alone.", STAT(docs.unsketched) },
	{ "nddd_docs", GAUGE, "Documents stored.", STAT(docs.docs) },
	{ "nddd_docs_distinct_fingerprints", GAUGE,
	    "Distinct fingerprints among the stored documents.",
	    STAT(docs.distinct) },
	{ "nddd_tables_bytes", GAUGE, "Memory of the near-duplicate tables.",
	    STAT(docs.table_bytes) },
	{ "nddd_tables", GAUGE, "Near-duplicate tables.", .get = get_tables },
	{ "nddd_accel_batches_total", COUNTER,
	    "Document batches given to the accelerator backend.",
	    STAT(accel.batches) },
	{ "nddd_accel_batches_failed_total", COUNTER,
	    "Batches a plugin failed or refused (redone on the cpu).",
	    STAT(accel.batches_failed) },
	{ "nddd_accel_documents_total", COUNTER, "Documents fingerprinted.",
	    STAT(accel.docs) },
	{ "nddd_accel_bytes_total", COUNTER,
	    "Bytes of documents fingerprinted.", STAT(accel.bytes) },
	{ "nddd_accel_backend", .render = render_backend },
	{ "nddd_urls", GAUGE, "URLs stored.", STAT(urls.urls) },
	{ "nddd_filter_counters", GAUGE, "Counters of the URL filter (m).",
	    STAT(filter_counters) },
	{ "nddd_filter_nonzero", GAUGE, "Filter counters above zero.",
	    STAT(filter_nonzero) },
	{ "nddd_filter_saturated", GAUGE, "Filter counters at 15.",
	    STAT(filter_saturated) },
	{ "nddd_filter_fill_ratio", GAUGE,
	    "Share of filter counters above zero.", .get = get_fill_ratio },
	{ "nddd_filter_bytes", GAUGE, "Memory of the URL filter.",
	    STAT(filter_bytes) },
	{ "nddd_url_checks_total", COUNTER, "URLs checked.",
	    STAT(urls.checks) },
	{ "nddd_urls_expired_total", COUNTER,
	    "URLs reclaimed after their time to live.", STAT(urls.expired) },
	{ "nddd_urls_dropping", GAUGE,
	    "URLs of dropped namespaces not yet forgotten.",
	    STAT(urls.dropping) },
	{ "nddd_docs_dropping", GAUGE,
	    "Documents of dropped namespaces not yet forgotten.",
	    STAT(docs.dropping) },
	{ "nddd_namespace_urls", .render = render_namespace_rows },
	{ "nddd_url_checks_filter_only_total", COUNTER,
	    "URL checks answered by the filter alone.",
	    STAT(urls.checks_filter_only) },
	{ "nddd_filter_false_positives_total", COUNTER,
	    "URL checks the filter sent to the store in vain.",
	    STAT(urls.filter_false_positives) },
	{ "nddd_url_submits_new_total", COUNTER, "URL submits that were new.",
	    STAT(urls.submits_new) },
	{ "nddd_url_submits_duplicate_total", COUNTER,
	    "URL submits that were duplicates.", STAT(urls.submits_duplicate) },
	{ "nddd_url_deletes_total", COUNTER, "URL records deleted.",
	    STAT(urls.deletes) },
	{ "nddd_url_journal_entries", GAUGE,
	    "URLs changed since the last flush into the store.",
	    STAT(urls.journal_entries) },
	{ "nddd_url_journal_capacity", GAUGE,
	    "URLs changed between flushes, at most.",
	    STAT(urls.journal_capacity) },
	{ "nddd_url_journal_bytes", GAUGE, "Bytes in the URL journal file now.",
	    STAT(urls.journal_bytes) },
	{ "nddd_url_journal_written_bytes_total", COUNTER,
	    "Bytes written to the URL journal.",
	    STAT(urls.journal_bytes_written) },
	{ "nddd_url_journal_syncs_total", COUNTER,
	    "fdatasyncs of the URL journal.", STAT(urls.journal_syncs) },
	{ "nddd_url_host_runs", GAUGE,
	    "Runs of the host index that url_forget reads.",
	    STAT(urls.host_runs) },
	{ "nddd_url_host_keys", GAUGE, "Keys in the host index's runs, dead "
	    "ones not yet merged away included.", STAT(urls.host_keys) },
	{ "nddd_url_group_commits_total", COUNTER,
	    "Groups of URL submits and deletes committed to the journal.",
	    STAT(urls.groups) },
	{ "nddd_url_flushes_total", COUNTER,
	    "Flushes of the journal into store segments.",
	    STAT(urls.flushes) },
	{ "nddd_url_merges_total", COUNTER,
	    "Merges of small or sparse URL segments.", STAT(urls.merges) },
	{ "nddd_url_merges_forced_total", COUNTER,
	    "Merges that held URL writers back (back-pressure).",
	    STAT(urls.merges_forced) },
	{ "nddd_url_segments", GAUGE, "URL segments in the store.",
	    STAT(urls.segments) },
	{ "nddd_url_small_segments", GAUGE,
	    "URL segments below half the segment size (merge backlog).",
	    STAT(urls.small_segments) },
	{ "nddd_url_dead_records", GAUGE, "Replaced or deleted URL records "
	    "not merged away yet (merge backlog).", STAT(urls.dead_records) },
	{ "nddd_url_store_written_bytes_total", COUNTER,
	    "Bytes of URL segments and bitmaps written.",
	    STAT(urls.store_bytes_written) },
	{ "nddd_url_writes_pending", GAUGE,
	    "URL submits and deletes queued for the URL writer.",
	    STAT(urls.pending) },
	{ "nddd_url_index_bytes", GAUGE, "Memory of the URL index.",
	    STAT(urls.index_bytes) },
	{ "nddd_store_commits_total", COUNTER,
	    "Store writer groups committed or journaled.",
	    STAT(writer.commits) },
	{ "nddd_doc_journal_bytes", GAUGE, "Bytes in the store journal now.",
	    STAT(doc_store.journal_bytes) },
	{ "nddd_doc_journal_written_bytes_total", COUNTER,
	    "Bytes written to the store journal.",
	    STAT(doc_store.journal_bytes_written) },
	{ "nddd_doc_journal_syncs_total", COUNTER,
	    "fdatasyncs of the store journal.", STAT(doc_store.syncs) },
	{ "nddd_doc_journal_groups_total", COUNTER,
	    "Groups of document writes journaled.", STAT(doc_store.frames) },
	{ "nddd_doc_checkpoints_total", COUNTER,
	    "Commits of the store journal's groups into the store.",
	    STAT(doc_store.checkpoints) },
	{ "nddd_doc_journal_pending", GAUGE,
	    "Store keys changed since the last checkpoint.",
	    STAT(doc_store.pending) },
	{ "nddd_doc_journal_failures_total", COUNTER, "Groups or checkpoints "
	    "that lost what the store writer held (built again from the "
	    "journal).", STAT(doc_store.failures) },
	{ "nddd_store_failed_transactions_total", COUNTER,
	    "Store transactions that failed.", STAT(writer.failed_txns) },
	{ "nddd_store_bytes", GAUGE, "Bytes of the store in use.",
	    STAT(store_bytes) },
	{ "nddd_store_full", GAUGE, "Whether writes are refused for want of "
	    "room: 0 no, 1 the store reached map_size, 2 the disk is full.",
	    .get = get_store_full },
	{ "nddd_store_refused_full_total", COUNTER,
	    "Store writes refused for want of room (disk or map_size).",
	    STAT(store_refused_full) },
	{ "nddd_connections", GAUGE, "Client connections open.",
	    .get = get_connections },
	{ "nddd_connection_buffer_bytes", .render = render_buffered },
	{ "nddd_requests_pending", GAUGE,
	    "Requests accepted and not yet answered.", .get = get_pending },
};

void
statsreq_render_gauges(const struct req_services *svc,
    const struct daemon_stats *s, struct evbuffer *out)
{
	for (size_t i = 0; i < sizeof(gauge_rows) / sizeof(gauge_rows[0]);
	    i++) {
		const struct gauge_row *g = &gauge_rows[i];
		uint64_t v;

		if (g->render != NULL) {
			g->render(svc, s, out);
			continue;
		}
		if (g->get != NULL) {
			metrics_render_value(out, g->name, g->type, g->help,
			    g->get(svc, s));
			continue;
		}
		memcpy(&v, (const char *)s + g->stat, sizeof(v));
		metrics_render_value(out, g->name, g->type, g->help,
		    (double)v);
	}
}
