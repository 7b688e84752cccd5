/*
 * statsreq: the daemon's view of itself.  See statsreq.h.
 */
#include "statsreq.h"

#include <inttypes.h>
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

/* The metrics of verified answers and of the sketch index. */
static void
render_near(const struct daemon_stats *s, struct evbuffer *out)
{
	metrics_render_value(out, "nddd_doc_candidates_total", "counter",
	    "Candidates verified answers looked at (a record read and "
	    "compared each).", (double)s->docs.candidates);
	metrics_render_value(out, "nddd_doc_verified_total", "counter",
	    "Candidates kept as neighbours.", (double)s->docs.verified);
	metrics_render_value(out, "nddd_doc_sketch_keys_skipped_total",
	    "counter", "Sketch keys passed over by queries as held by too "
	    "many documents.", (double)s->docs.keys_skipped);
	metrics_render_value(out, "nddd_doc_sketch_keys", "gauge",
	    "Keys in the sketch index (a document under each of its keys).",
	    (double)s->docs.sketch_entries);
	metrics_render_value(out, "nddd_doc_sketch_bytes", "gauge",
	    "Memory of the sketch index.", (double)s->docs.sketch_bytes);
	metrics_render_value(out, "nddd_docs_unsketched", "gauge",
	    "Documents stored without a sketch (by nddd 0.4): found by "
	    "distance alone.", (double)s->docs.unsketched);
}

void
statsreq_render_gauges(const struct req_services *svc,
    const struct daemon_stats *s, struct evbuffer *out)
{
	render_near(s, out);
	metrics_render_value(out, "nddd_docs", "gauge", "Documents stored.",
	    (double)s->docs.docs);
	metrics_render_value(out, "nddd_docs_distinct_fingerprints", "gauge",
	    "Distinct fingerprints among the stored documents.",
	    (double)s->docs.distinct);
	metrics_render_value(out, "nddd_tables_bytes", "gauge",
	    "Memory of the near-duplicate tables.", (double)s->docs.table_bytes);
	metrics_render_value(out, "nddd_tables", "gauge",
	    "Near-duplicate tables.", (double)s->docs.tables);
	metrics_render_value(out, "nddd_accel_batches_total", "counter",
	    "Document batches given to the accelerator backend.",
	    (double)s->accel.batches);
	metrics_render_value(out, "nddd_accel_batches_failed_total", "counter",
	    "Batches a plugin failed or refused (redone on the cpu).",
	    (double)s->accel.batches_failed);
	metrics_render_value(out, "nddd_accel_documents_total", "counter",
	    "Documents fingerprinted.", (double)s->accel.docs);
	metrics_render_value(out, "nddd_accel_bytes_total", "counter",
	    "Bytes of documents fingerprinted.", (double)s->accel.bytes);
	evbuffer_add_printf(out, "# HELP nddd_accel_backend The accelerator "
	    "backend in use (1), and whether it is a simulation.\n"
	    "# TYPE nddd_accel_backend gauge\n"
	    "nddd_accel_backend{backend=\"%s\",simulation=\"%s\"} 1\n",
	    s->accel.backend, s->accel.simulation ? "yes" : "no");
	metrics_render_value(out, "nddd_urls", "gauge", "URLs stored.",
	    (double)s->urls.urls);
	metrics_render_value(out, "nddd_filter_counters", "gauge",
	    "Counters of the URL filter (m).", (double)s->filter_counters);
	metrics_render_value(out, "nddd_filter_nonzero", "gauge",
	    "Filter counters above zero.", (double)s->filter_nonzero);
	metrics_render_value(out, "nddd_filter_saturated", "gauge",
	    "Filter counters at 15.", (double)s->filter_saturated);
	metrics_render_value(out, "nddd_filter_fill_ratio", "gauge",
	    "Share of filter counters above zero.",
	    (double)s->filter_nonzero / (double)s->filter_counters);
	metrics_render_value(out, "nddd_filter_bytes", "gauge",
	    "Memory of the URL filter.", (double)s->filter_bytes);
	metrics_render_value(out, "nddd_url_checks_total", "counter",
	    "URLs checked.", (double)s->urls.checks);
	metrics_render_value(out, "nddd_urls_expired_total", "counter",
	    "URLs reclaimed after their time to live.",
	    (double)s->urls.expired);
	metrics_render_value(out, "nddd_urls_dropping", "gauge",
	    "URLs of dropped namespaces not yet forgotten.",
	    (double)s->urls.dropping);
	metrics_render_value(out, "nddd_docs_dropping", "gauge",
	    "Documents of dropped namespaces not yet forgotten.",
	    (double)s->docs.dropping);
	render_namespaces(svc, out);
	metrics_render_value(out, "nddd_url_checks_filter_only_total",
	    "counter", "URL checks answered by the filter alone.",
	    (double)s->urls.checks_filter_only);
	metrics_render_value(out, "nddd_filter_false_positives_total",
	    "counter", "URL checks the filter sent to the store in vain.",
	    (double)s->urls.filter_false_positives);
	metrics_render_value(out, "nddd_url_submits_new_total", "counter",
	    "URL submits that were new.", (double)s->urls.submits_new);
	metrics_render_value(out, "nddd_url_submits_duplicate_total",
	    "counter", "URL submits that were duplicates.",
	    (double)s->urls.submits_duplicate);
	metrics_render_value(out, "nddd_url_deletes_total", "counter",
	    "URL records deleted.", (double)s->urls.deletes);
	metrics_render_value(out, "nddd_url_journal_entries", "gauge",
	    "URLs changed since the last flush into the store.",
	    (double)s->urls.journal_entries);
	metrics_render_value(out, "nddd_url_journal_capacity", "gauge",
	    "URLs changed between flushes, at most.",
	    (double)s->urls.journal_capacity);
	metrics_render_value(out, "nddd_url_journal_bytes", "gauge",
	    "Bytes in the URL journal file now.", (double)s->urls.journal_bytes);
	metrics_render_value(out, "nddd_url_journal_written_bytes_total",
	    "counter", "Bytes written to the URL journal.",
	    (double)s->urls.journal_bytes_written);
	metrics_render_value(out, "nddd_url_journal_syncs_total", "counter",
	    "fdatasyncs of the URL journal.", (double)s->urls.journal_syncs);
	metrics_render_value(out, "nddd_url_host_runs", "gauge",
	    "Runs of the host index that url_forget reads.",
	    (double)s->urls.host_runs);
	metrics_render_value(out, "nddd_url_host_keys", "gauge",
	    "Keys in the host index's runs, dead ones not yet merged away "
	    "included.", (double)s->urls.host_keys);
	metrics_render_value(out, "nddd_url_group_commits_total", "counter",
	    "Groups of URL submits and deletes committed to the journal.",
	    (double)s->urls.groups);
	metrics_render_value(out, "nddd_url_flushes_total", "counter",
	    "Flushes of the journal into store segments.",
	    (double)s->urls.flushes);
	metrics_render_value(out, "nddd_url_merges_total", "counter",
	    "Merges of small or sparse URL segments.", (double)s->urls.merges);
	metrics_render_value(out, "nddd_url_merges_forced_total", "counter",
	    "Merges that held URL writers back (back-pressure).",
	    (double)s->urls.merges_forced);
	metrics_render_value(out, "nddd_url_segments", "gauge",
	    "URL segments in the store.", (double)s->urls.segments);
	metrics_render_value(out, "nddd_url_small_segments", "gauge",
	    "URL segments below half the segment size (merge backlog).",
	    (double)s->urls.small_segments);
	metrics_render_value(out, "nddd_url_dead_records", "gauge",
	    "Replaced or deleted URL records not merged away yet (merge "
	    "backlog).", (double)s->urls.dead_records);
	metrics_render_value(out, "nddd_url_store_written_bytes_total",
	    "counter", "Bytes of URL segments and bitmaps written.",
	    (double)s->urls.store_bytes_written);
	metrics_render_value(out, "nddd_url_writes_pending", "gauge",
	    "URL submits and deletes queued for the URL writer.",
	    (double)s->urls.pending);
	metrics_render_value(out, "nddd_url_index_bytes", "gauge",
	    "Memory of the URL index.", (double)s->urls.index_bytes);
	metrics_render_value(out, "nddd_store_commits_total", "counter",
	    "Store writer groups committed or journaled.",
	    (double)s->writer.commits);
	metrics_render_value(out, "nddd_doc_journal_bytes", "gauge",
	    "Bytes in the store journal now.",
	    (double)s->doc_store.journal_bytes);
	metrics_render_value(out, "nddd_doc_journal_written_bytes_total",
	    "counter", "Bytes written to the store journal.",
	    (double)s->doc_store.journal_bytes_written);
	metrics_render_value(out, "nddd_doc_journal_syncs_total", "counter",
	    "fdatasyncs of the store journal.", (double)s->doc_store.syncs);
	metrics_render_value(out, "nddd_doc_journal_groups_total", "counter",
	    "Groups of document writes journaled.",
	    (double)s->doc_store.frames);
	metrics_render_value(out, "nddd_doc_checkpoints_total", "counter",
	    "Commits of the store journal's groups into the store.",
	    (double)s->doc_store.checkpoints);
	metrics_render_value(out, "nddd_doc_journal_pending", "gauge",
	    "Store keys changed since the last checkpoint.",
	    (double)s->doc_store.pending);
	metrics_render_value(out, "nddd_doc_journal_failures_total",
	    "counter", "Groups or checkpoints that lost what the store writer "
	    "held (built again from the journal).",
	    (double)s->doc_store.failures);
	metrics_render_value(out, "nddd_store_failed_transactions_total",
	    "counter", "Store transactions that failed.",
	    (double)s->writer.failed_txns);
	metrics_render_value(out, "nddd_store_bytes", "gauge",
	    "Bytes of the store in use.", (double)s->store_bytes);
	metrics_render_value(out, "nddd_store_full", "gauge",
	    "Whether writes are refused for want of room: 0 no, 1 the store "
	    "reached map_size, 2 the disk is full.",
	    s->store_full == STORE_NOSPACE ? 2.0 : s->store_full != 0 ? 1.0 :
	    0.0);
	metrics_render_value(out, "nddd_store_refused_full_total", "counter",
	    "Store writes refused for want of room (disk or map_size).",
	    (double)s->store_refused_full);
	metrics_render_value(out, "nddd_connections", "gauge",
	    "Client connections open.", (double)s->connections);
	/* The loop's own count: gauges are rendered in the loop. */
	if (svc->srv != NULL)
		metrics_render_value(out, "nddd_connection_buffer_bytes",
		    "gauge", "Connections' buffers and the replies reserved "
		    "for requests in flight ([server] buffer_memory bounds "
		    "them).", (double)server_buffered(svc->srv));
	metrics_render_value(out, "nddd_requests_pending", "gauge",
	    "Requests accepted and not yet answered.",
	    (double)statsreq_pending(svc));
}
