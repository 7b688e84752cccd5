/*
 * nddctl stats and verify: the daemon's statistics (with its namespaces),
 * and the check of its memory against its store; as text or one JSON
 * object.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "nddctl.h"

/*
 * The figures of the stats, in the order they are printed: their section
 * (NULL: none), name and type, and where each is in struct nddd_stats.
 * As text, "SECTION.NAME<TAB>VALUE" a line; as JSON, each section an
 * object of its own, placed where its first figure comes.
 */
enum stat_type {
	STAT_U64,
	STAT_U32,
	STAT_BOOL,		/* an int: 0 or 1 as text */
	STAT_FLOAT,		/* to three places */
	STAT_STR,
};
/* Only when the daemon is a shard. */
#define STAT_SHARD	0x1
/* JSON only. */
#define STAT_JSON	0x2
/* accel.backend: " (simulation)" after it, as text. */
#define STAT_BACKEND	0x4

struct stat_field {
	const char *section;
	const char *name;
	enum stat_type type;
	size_t off;
	unsigned flags;
};

#define STAT(sec, name, type, member, flags) \
	{ sec, name, type, offsetof(struct nddd_stats, member), flags }
#define TOP(member, type) STAT(NULL, #member, type, member, 0)
#define NEAR(f, type) STAT("near", #f, type, near_##f, 0)
#define ACCEL(f, type) STAT("accel", #f, type, accel_##f, 0)
#define CBF(f, type) STAT("cbf", #f, type, cbf_##f, 0)
#define URL_STORE(f) STAT("url_store", #f, STAT_U64, url_store.f, 0)
#define DOC_STORE(f) STAT("doc_store", #f, STAT_U64, doc_store.f, 0)

static const struct stat_field stat_fields[] = {
	TOP(version, STAT_STR),
	TOP(uptime_seconds, STAT_U64),
	TOP(urls, STAT_U64),
	TOP(urls_dropping, STAT_U64),
	TOP(urls_expired, STAT_U64),
	TOP(docs, STAT_U64),
	TOP(docs_dropping, STAT_U64),
	STAT("shard", "place", STAT_U32, shard_place, STAT_SHARD),
	STAT("shard", "shards", STAT_U32, shard_count, STAT_SHARD),
	STAT("shard", "importing", STAT_BOOL, shard_importing, STAT_SHARD),
	STAT("shard", "keep_moved_docs", STAT_BOOL, shard_keep_moved_docs,
	    STAT_SHARD),
	STAT("shard", "list", STAT_STR, shard_list, STAT_SHARD),
	NEAR(k, STAT_U32),
	NEAR(blocks, STAT_U32),
	NEAR(tables, STAT_U32),
	NEAR(bytes, STAT_U64),
	NEAR(distinct, STAT_U64),
	NEAR(answer, STAT_STR),
	NEAR(html, STAT_STR),
	NEAR(containment, STAT_FLOAT),
	NEAR(resemblance, STAT_FLOAT),
	NEAR(sketch_keys, STAT_U64),
	NEAR(sketch_bytes, STAT_U64),
	NEAR(candidates, STAT_U64),
	NEAR(verified, STAT_U64),
	NEAR(keys_skipped, STAT_U64),
	NEAR(unsketched, STAT_U64),
	STAT("accel", "backend", STAT_STR, accel_backend, STAT_BACKEND),
	STAT("accel", "simulation", STAT_BOOL, accel_simulation, STAT_JSON),
	ACCEL(batches, STAT_U64),
	ACCEL(batches_failed, STAT_U64),
	ACCEL(docs, STAT_U64),
	ACCEL(bytes, STAT_U64),
	CBF(counters, STAT_U64),
	CBF(nonzero, STAT_U64),
	CBF(saturated, STAT_U64),
	CBF(k, STAT_U32),
	CBF(bytes, STAT_U64),
	TOP(checks, STAT_U64),
	TOP(checks_filter_only, STAT_U64),
	TOP(filter_false_positives, STAT_U64),
	TOP(submits_new, STAT_U64),
	TOP(submits_duplicate, STAT_U64),
	TOP(deletes, STAT_U64),
	TOP(commits, STAT_U64),
	TOP(store_bytes, STAT_U64),
	TOP(connections, STAT_U32),
	TOP(canon, STAT_STR),
	URL_STORE(journal_entries),
	URL_STORE(journal_capacity),
	URL_STORE(journal_bytes),
	URL_STORE(journal_bytes_written),
	URL_STORE(journal_syncs),
	URL_STORE(groups),
	URL_STORE(flushes),
	URL_STORE(merges),
	URL_STORE(merges_forced),
	URL_STORE(segments),
	URL_STORE(small_segments),
	URL_STORE(records),
	URL_STORE(dead_records),
	URL_STORE(store_bytes_written),
	URL_STORE(pending),
	URL_STORE(index_bytes),
	URL_STORE(journal_table_bytes),
	URL_STORE(host_runs),
	URL_STORE(host_keys),
	URL_STORE(host_merging),
	DOC_STORE(journal_bytes),
	DOC_STORE(journal_bytes_written),
	DOC_STORE(journal_syncs),
	DOC_STORE(groups),
	DOC_STORE(checkpoints),
	DOC_STORE(pending),
	DOC_STORE(failures),
};
#define N_STAT_FIELDS (sizeof(stat_fields) / sizeof(stat_fields[0]))

/* Whether field f of s is printed at all. */
static bool
stat_shown(const struct nddd_stats *s, const struct stat_field *f)
{
	return !(f->flags & STAT_SHARD) || s->shard_count > 0;
}

/* Field f of s as an unsigned number (not for strings and floats). */
static uint64_t
stat_number(const struct nddd_stats *s, const struct stat_field *f)
{
	const char *p = (const char *)s + f->off;
	uint32_t u32;
	uint64_t u64;
	int i;

	switch (f->type) {
	case STAT_U64:
		memcpy(&u64, p, sizeof(u64));
		return u64;
	case STAT_U32:
		memcpy(&u32, p, sizeof(u32));
		return u32;
	default:
		memcpy(&i, p, sizeof(i));
		return (uint64_t)i;
	}
}

static float
stat_float(const struct nddd_stats *s, const struct stat_field *f)
{
	float v;

	memcpy(&v, (const char *)s + f->off, sizeof(v));
	return v;
}

static const char *
stat_str(const struct nddd_stats *s, const struct stat_field *f)
{
	return (const char *)s + f->off;
}

static void
print_stats_text(const struct nddd_stats *s)
{
	for (size_t i = 0; i < N_STAT_FIELDS; i++) {
		const struct stat_field *f = &stat_fields[i];

		if (!stat_shown(s, f) || (f->flags & STAT_JSON))
			continue;
		if (f->section != NULL)
			printf("%s.", f->section);
		printf("%s\t", f->name);
		switch (f->type) {
		case STAT_STR:
			fputs(stat_str(s, f), stdout);
			if ((f->flags & STAT_BACKEND) && s->accel_simulation)
				fputs(" (simulation)", stdout);
			break;
		case STAT_FLOAT:
			printf("%.3g", (double)stat_float(s, f));
			break;
		case STAT_BOOL:
			printf("%d", (int)stat_number(s, f));
			break;
		default:
			printf("%" PRIu64, stat_number(s, f));
			break;
		}
		putchar('\n');
	}
}

static json_t *
stat_json(const struct nddd_stats *s, const struct stat_field *f)
{
	switch (f->type) {
	case STAT_STR:
		return json_string(stat_str(s, f));
	case STAT_FLOAT:
		return json_real(stat_float(s, f));
	case STAT_BOOL:
		return json_boolean(stat_number(s, f));
	default:
		return json_integer((json_int_t)stat_number(s, f));
	}
}

static json_t *
stats_json(const struct nddd_stats *s)
{
	json_t *o = json_object(), *in;

	for (size_t i = 0; i < N_STAT_FIELDS; i++) {
		const struct stat_field *f = &stat_fields[i];

		if (!stat_shown(s, f))
			continue;
		in = o;
		if (f->section != NULL &&
		    (in = json_object_get(o, f->section)) == NULL) {
			in = json_object();
			json_object_set_new(o, f->section, in);
		}
		json_object_set_new(in, f->name, stat_json(s, f));
	}
	return o;
}

int
nddctl_stats(const struct nddctl_common *co, int argc, char **argv)
{
	struct nddd_reply *r;
	nddd_client *c;
	uint64_t id;
	json_t *o, *nss;

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
	if (!co->json) {
		print_stats_text(&r->stats);
		for (size_t i = 0; i < r->nnamespaces; i++)
			nddctl_print_namespace(&r->namespaces[i]);
		nddd_reply_free(r);
		return NDDCTL_EXIT_OK;
	}
	o = stats_json(&r->stats);
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
