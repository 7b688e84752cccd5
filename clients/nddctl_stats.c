/*
 * nddctl stats and verify: the daemon's statistics (with its namespaces),
 * and the check of its memory against its store; as text or one JSON
 * object.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nddctl.h"

/* The write paths' figures: their section and name, and where each is in
 * the stats. */
#define URL_STORE_FIELD(f) \
	{ "url_store", #f, offsetof(struct nddd_stats, url_store.f) }
#define DOC_STORE_FIELD(f) \
	{ "doc_store", #f, offsetof(struct nddd_stats, doc_store.f) }
static const struct {
	const char *section;
	const char *name;
	size_t off;
} store_fields[] = {
	URL_STORE_FIELD(journal_entries),
	URL_STORE_FIELD(journal_capacity),
	URL_STORE_FIELD(journal_bytes),
	URL_STORE_FIELD(journal_bytes_written),
	URL_STORE_FIELD(journal_syncs),
	URL_STORE_FIELD(groups),
	URL_STORE_FIELD(flushes),
	URL_STORE_FIELD(merges),
	URL_STORE_FIELD(merges_forced),
	URL_STORE_FIELD(segments),
	URL_STORE_FIELD(small_segments),
	URL_STORE_FIELD(records),
	URL_STORE_FIELD(dead_records),
	URL_STORE_FIELD(store_bytes_written),
	URL_STORE_FIELD(pending),
	URL_STORE_FIELD(index_bytes),
	URL_STORE_FIELD(journal_table_bytes),
	URL_STORE_FIELD(host_runs),
	URL_STORE_FIELD(host_keys),
	URL_STORE_FIELD(host_merging),
	DOC_STORE_FIELD(journal_bytes),
	DOC_STORE_FIELD(journal_bytes_written),
	DOC_STORE_FIELD(journal_syncs),
	DOC_STORE_FIELD(groups),
	DOC_STORE_FIELD(checkpoints),
	DOC_STORE_FIELD(pending),
	DOC_STORE_FIELD(failures),
};
#define N_STORE_FIELDS (sizeof(store_fields) / sizeof(store_fields[0]))

static uint64_t
store_value(const struct nddd_stats *s, size_t i)
{
	uint64_t v;

	memcpy(&v, (const char *)s + store_fields[i].off, sizeof(v));
	return v;
}

int
nddctl_stats(const struct nddctl_common *co, int argc, char **argv)
{
	struct nddd_stats s;
	struct nddd_reply *r;
	nddd_client *c;
	uint64_t id;
	json_t *o, *cbf, *near, *accel, *us, *nss;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: nddctl stats\n");
		return NDDCTL_EXIT_USAGE;
	}
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	/* The reply, not nddd_stats: it holds the namespaces. */
	if (nddd_send_stats(c, &id) == -1 || (r = nddd_call(c, id)) == NULL) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		nddd_close(c);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	nddd_close(c);
	if (r->kind != NDDD_REPLY_STATS) {
		fprintf(stderr, "nddctl: stats refused: %s: %s\n",
		    nddd_code_name(r->code), r->message ? r->message : "");
		nddd_reply_free(r);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	s = r->stats;
	if (!co->json) {
		printf("version\t%s\n", s.version);
		printf("uptime_seconds\t%" PRIu64 "\n", s.uptime_seconds);
		printf("urls\t%" PRIu64 "\n", s.urls);
		printf("urls_dropping\t%" PRIu64 "\n", s.urls_dropping);
		printf("urls_expired\t%" PRIu64 "\n", s.urls_expired);
		printf("docs\t%" PRIu64 "\n", s.docs);
		printf("docs_dropping\t%" PRIu64 "\n", s.docs_dropping);
		if (s.shard_count > 0)
			printf("shard.place\t%" PRIu32 "\nshard.shards\t%" PRIu32
			    "\nshard.importing\t%d\nshard.keep_moved_docs\t%d\n"
			    "shard.list\t%s\n", s.shard_place, s.shard_count,
			    s.shard_importing, s.shard_keep_moved_docs,
			    s.shard_list);
		printf("near.k\t%" PRIu32 "\n", s.near_k);
		printf("near.blocks\t%" PRIu32 "\n", s.near_blocks);
		printf("near.tables\t%" PRIu32 "\n", s.near_tables);
		printf("near.bytes\t%" PRIu64 "\n", s.near_bytes);
		printf("near.distinct\t%" PRIu64 "\n", s.near_distinct);
		printf("near.answer\t%s\nnear.html\t%s\n", s.near_answer,
		    s.near_html);
		printf("near.containment\t%.3g\nnear.resemblance\t%.3g\n",
		    (double)s.near_containment, (double)s.near_resemblance);
		printf("near.sketch_keys\t%" PRIu64 "\n", s.near_sketch_keys);
		printf("near.sketch_bytes\t%" PRIu64 "\n",
		    s.near_sketch_bytes);
		printf("near.candidates\t%" PRIu64 "\n", s.near_candidates);
		printf("near.verified\t%" PRIu64 "\n", s.near_verified);
		printf("near.keys_skipped\t%" PRIu64 "\n",
		    s.near_keys_skipped);
		printf("near.unsketched\t%" PRIu64 "\n", s.near_unsketched);
		printf("accel.backend\t%s%s\n", s.accel_backend,
		    s.accel_simulation ? " (simulation)" : "");
		printf("accel.batches\t%" PRIu64 "\n", s.accel_batches);
		printf("accel.batches_failed\t%" PRIu64 "\n",
		    s.accel_batches_failed);
		printf("accel.docs\t%" PRIu64 "\n", s.accel_docs);
		printf("accel.bytes\t%" PRIu64 "\n", s.accel_bytes);
		printf("cbf.counters\t%" PRIu64 "\n", s.cbf_counters);
		printf("cbf.nonzero\t%" PRIu64 "\n", s.cbf_nonzero);
		printf("cbf.saturated\t%" PRIu64 "\n", s.cbf_saturated);
		printf("cbf.k\t%" PRIu32 "\n", s.cbf_k);
		printf("cbf.bytes\t%" PRIu64 "\n", s.cbf_bytes);
		printf("checks\t%" PRIu64 "\n", s.checks);
		printf("checks_filter_only\t%" PRIu64 "\n",
		    s.checks_filter_only);
		printf("filter_false_positives\t%" PRIu64 "\n",
		    s.filter_false_positives);
		printf("submits_new\t%" PRIu64 "\n", s.submits_new);
		printf("submits_duplicate\t%" PRIu64 "\n", s.submits_duplicate);
		printf("deletes\t%" PRIu64 "\n", s.deletes);
		printf("commits\t%" PRIu64 "\n", s.commits);
		printf("store_bytes\t%" PRIu64 "\n", s.store_bytes);
		printf("connections\t%" PRIu32 "\n", s.connections);
		printf("canon\t%s\n", s.canon);
		for (size_t i = 0; i < N_STORE_FIELDS; i++)
			printf("%s.%s\t%" PRIu64 "\n", store_fields[i].section,
			    store_fields[i].name, store_value(&s, i));
		for (size_t i = 0; i < r->nnamespaces; i++)
			nddctl_print_namespace(&r->namespaces[i]);
		nddd_reply_free(r);
		return NDDCTL_EXIT_OK;
	}
	o = json_object();
	cbf = json_object();
	json_object_set_new(o, "version", json_string(s.version));
	json_object_set_new(o, "uptime_seconds",
	    json_integer((json_int_t)s.uptime_seconds));
	json_object_set_new(o, "urls", json_integer((json_int_t)s.urls));
	json_object_set_new(o, "urls_dropping",
	    json_integer((json_int_t)s.urls_dropping));
	json_object_set_new(o, "urls_expired",
	    json_integer((json_int_t)s.urls_expired));
	json_object_set_new(o, "docs", json_integer((json_int_t)s.docs));
	json_object_set_new(o, "docs_dropping",
	    json_integer((json_int_t)s.docs_dropping));
	if (s.shard_count > 0)
		json_object_set_new(o, "shard", json_pack("{s:I,s:I,s:b,s:b,s:s}",
		    "place", (json_int_t)s.shard_place, "shards",
		    (json_int_t)s.shard_count, "importing", s.shard_importing,
		    "keep_moved_docs", s.shard_keep_moved_docs, "list",
		    s.shard_list));
	near = json_object();
	json_object_set_new(near, "k", json_integer(s.near_k));
	json_object_set_new(near, "blocks", json_integer(s.near_blocks));
	json_object_set_new(near, "tables", json_integer(s.near_tables));
	json_object_set_new(near, "bytes", json_integer((json_int_t)s.near_bytes));
	json_object_set_new(near, "distinct",
	    json_integer((json_int_t)s.near_distinct));
	json_object_set_new(near, "answer", json_string(s.near_answer));
	json_object_set_new(near, "html", json_string(s.near_html));
	json_object_set_new(near, "containment",
	    json_real(s.near_containment));
	json_object_set_new(near, "resemblance",
	    json_real(s.near_resemblance));
	json_object_set_new(near, "sketch_keys",
	    json_integer((json_int_t)s.near_sketch_keys));
	json_object_set_new(near, "sketch_bytes",
	    json_integer((json_int_t)s.near_sketch_bytes));
	json_object_set_new(near, "candidates",
	    json_integer((json_int_t)s.near_candidates));
	json_object_set_new(near, "verified",
	    json_integer((json_int_t)s.near_verified));
	json_object_set_new(near, "keys_skipped",
	    json_integer((json_int_t)s.near_keys_skipped));
	json_object_set_new(near, "unsketched",
	    json_integer((json_int_t)s.near_unsketched));
	json_object_set_new(o, "near", near);
	accel = json_object();
	json_object_set_new(accel, "backend", json_string(s.accel_backend));
	json_object_set_new(accel, "simulation",
	    json_boolean(s.accel_simulation));
	json_object_set_new(accel, "batches",
	    json_integer((json_int_t)s.accel_batches));
	json_object_set_new(accel, "batches_failed",
	    json_integer((json_int_t)s.accel_batches_failed));
	json_object_set_new(accel, "docs",
	    json_integer((json_int_t)s.accel_docs));
	json_object_set_new(accel, "bytes",
	    json_integer((json_int_t)s.accel_bytes));
	json_object_set_new(o, "accel", accel);
	json_object_set_new(cbf, "counters",
	    json_integer((json_int_t)s.cbf_counters));
	json_object_set_new(cbf, "nonzero",
	    json_integer((json_int_t)s.cbf_nonzero));
	json_object_set_new(cbf, "saturated",
	    json_integer((json_int_t)s.cbf_saturated));
	json_object_set_new(cbf, "k", json_integer(s.cbf_k));
	json_object_set_new(cbf, "bytes", json_integer((json_int_t)s.cbf_bytes));
	json_object_set_new(o, "cbf", cbf);
	json_object_set_new(o, "checks", json_integer((json_int_t)s.checks));
	json_object_set_new(o, "checks_filter_only",
	    json_integer((json_int_t)s.checks_filter_only));
	json_object_set_new(o, "filter_false_positives",
	    json_integer((json_int_t)s.filter_false_positives));
	json_object_set_new(o, "submits_new",
	    json_integer((json_int_t)s.submits_new));
	json_object_set_new(o, "submits_duplicate",
	    json_integer((json_int_t)s.submits_duplicate));
	json_object_set_new(o, "deletes", json_integer((json_int_t)s.deletes));
	json_object_set_new(o, "commits", json_integer((json_int_t)s.commits));
	json_object_set_new(o, "store_bytes",
	    json_integer((json_int_t)s.store_bytes));
	json_object_set_new(o, "connections", json_integer(s.connections));
	json_object_set_new(o, "canon", json_string(s.canon));
	for (size_t i = 0; i < N_STORE_FIELDS; i++) {
		if ((us = json_object_get(o, store_fields[i].section)) ==
		    NULL) {
			us = json_object();
			json_object_set_new(o, store_fields[i].section, us);
		}
		json_object_set_new(us, store_fields[i].name,
		    json_integer((json_int_t)store_value(&s, i)));
	}
	nss = json_array();
	for (size_t i = 0; i < r->nnamespaces; i++)
		json_array_append_new(nss,
		    nddctl_namespace_json(&r->namespaces[i]));
	json_object_set_new(o, "namespaces", nss);
	nddd_reply_free(r);
	nddctl_print_json(o);
	return NDDCTL_EXIT_OK;
}

int
nddctl_verify(const struct nddctl_common *co, int argc, char **argv)
{
	struct nddd_verify v;
	nddd_client *c;
	json_t *o;

	(void)argv;
	if (argc != 1) {
		fprintf(stderr, "usage: nddctl verify\n");
		return NDDCTL_EXIT_USAGE;
	}
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	if (nddd_verify(c, &v) == -1) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		nddd_close(c);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	nddd_close(c);
	if (co->json) {
		o = json_object();
		json_object_set_new(o, "consistent", json_boolean(v.consistent));
		json_object_set_new(o, "urls", json_integer((json_int_t)v.urls));
		json_object_set_new(o, "counter_mismatches",
		    json_integer((json_int_t)v.counter_mismatches));
		json_object_set_new(o, "docs", json_integer((json_int_t)v.docs));
		json_object_set_new(o, "table_mismatches",
		    json_integer((json_int_t)v.table_mismatches));
		json_object_set_new(o, "url_index_mismatches",
		    json_integer((json_int_t)v.url_index_mismatches));
		json_object_set_new(o, "detail", json_string(v.detail));
		nddctl_print_json(o);
	} else {
		printf("%s: %" PRIu64 " URLs, %" PRIu64 " counters differ, %"
		    PRIu64 " url index mismatches; %" PRIu64 " documents, %"
		    PRIu64 " differ%s%s\n",
		    v.consistent ? "consistent" : "INCONSISTENT", v.urls,
		    v.counter_mismatches, v.url_index_mismatches, v.docs,
		    v.table_mismatches, v.detail[0] ? ": " : "", v.detail);
	}
	return v.consistent ? NDDCTL_EXIT_OK : NDDCTL_EXIT_ITEMS;
}
