/*
 * config: nddd's settings.  See config.h.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <event2/util.h>
#include <ini.h>

enum key_type {
	KEY_STRING,
	KEY_OPT_STRING,	/* empty: NULL */
	KEY_OPT_ADDRESS,	/* HOST:PORT, or empty: NULL */
	KEY_DURATION,	/* milliseconds; suffix ms, s (default), m or h */
	KEY_SIZE,	/* unsigned integer, optional K/M/G/T suffix (x1024) */
	KEY_UINT,
	KEY_BOOL,
	KEY_SYNC,
	KEY_LOG_LEVEL,
	KEY_TERM_HASH,
	KEY_SIMD,
	KEY_HTML,	/* main (true) or whole */
	KEY_ANSWER,	/* verified or hamming (true) */
	KEY_FRACTION,	/* a decimal from 0 to 1 */
};

struct key {
	const char *section;
	const char *name;
	enum key_type type;
	size_t offset;
	uint64_t min, max;	/* for KEY_SIZE and KEY_UINT */
	const char *dflt;	/* why this default: in the comment above it */
};

#define F(field) offsetof(struct config, field)
#define KiB (UINT64_C(1) << 10)
#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define TiB (UINT64_C(1) << 40)

static const struct key keys[] = {
	/* Loopback: without tokens anyone who can connect may delete, so the
	 * default reaches only this machine. */
	{ "server", "listen", KEY_OPT_ADDRESS, F(listen), 0, 0,
	  "127.0.0.1:6464" },
	/* 8 MiB holds a batch of ~100,000 URLs or a large HTML page. */
	{ "server", "max_frame", KEY_SIZE, F(max_frame), 64, GiB, "8M" },
	/* Bounds the work and memory of one request; crawlers batch by the
	 * thousand.  At most 32768 so one batch always fits one store
	 * transaction. */
	{ "server", "max_batch", KEY_UINT, F(max_batch), 1, 32768, "10000" },
	/* Each idle connection costs a few KiB; 4096 is far below memory and
	 * the usual file-descriptor limits. */
	{ "server", "max_connections", KEY_UINT, F(max_connections), 1,
	  1000000, "4096" },
	/* Enough pipelining to hide a commit's latency, few enough that a
	 * client cannot queue unbounded work. */
	{ "server", "max_inflight", KEY_UINT, F(max_inflight), 1, 65536,
	  "64" },
	/* Replies queued for a client plus the room its requests in flight
	 * hold for theirs.  16M keeps a pipelined client's 64 documents in
	 * flight (128 KiB of room each), which a store's group commit needs
	 * to be large; buffer_memory bounds all connections together. */
	{ "server", "output_high_water", KEY_SIZE, F(output_high_water), 4096,
	  GiB, "16M" },
	/* Canonicalizing, hashing and reading the store are CPU work that
	 * scales with cores; the event loop itself only moves bytes. */
	{ "server", "workers", KEY_UINT, F(workers), 0, 256, "0" },
	/* A crawler between crawls may idle for minutes; five is generous
	 * and still returns the descriptors of clients that vanished. */
	{ "server", "idle_timeout", KEY_DURATION, F(idle_timeout_ms), 0,
	  UINT32_MAX, "300s" },
	/* A frame of 8 MiB arrives in well under a second on any network a
	 * crawler uses; a client trickling bytes holds memory for nothing. */
	{ "server", "frame_timeout", KEY_DURATION, F(frame_timeout_ms), 0,
	  UINT32_MAX, "30s" },
	/* A client that takes no reply bytes for a minute has hung or is
	 * hostile; its buffers go back. */
	{ "server", "write_timeout", KEY_DURATION, F(write_timeout_ms), 0,
	  UINT32_MAX, "60s" },
	/* All connections' input, queued replies and replies in the making
	 * together: 256 clients at their bound, far below max_connections
	 * of them. */
	{ "server", "buffer_memory", KEY_SIZE, F(buffer_memory), 1024 * 1024,
	  1024 * GiB, "1G" },
	/* Within systemd's TimeoutStopSec (60 s): requests in flight always
	 * finish; only replies that clients do not take are given up. */
	{ "server", "shutdown_timeout", KEY_DURATION, F(shutdown_timeout_ms),
	  0, UINT32_MAX, "30s" },
	/* TLS is off until a certificate is given. */
	{ "tls", "listen", KEY_OPT_ADDRESS, F(tls_listen), 0, 0, "" },
	{ "tls", "cert", KEY_OPT_STRING, F(tls_cert), 0, 0, "" },
	{ "tls", "key", KEY_OPT_STRING, F(tls_key), 0, 0, "" },
	{ "tls", "client_ca", KEY_OPT_STRING, F(tls_client_ca), 0, 0, "" },
	/* Any certificate of the client CAs, until names are given: a CA of
	 * one's own signs only one's own clients. */
	{ "tls", "client_cn", KEY_OPT_STRING, F(tls_client_cn), 0, 0, "" },
	{ "auth", "tokens_file", KEY_OPT_STRING, F(tokens_file), 0, 0, "" },
	/* Listening beyond loopback without tokens or client certificates
	 * must be asked for in so many words. */
	{ "auth", "allow_unauthenticated", KEY_BOOL, F(allow_unauthenticated),
	  0, 0, "no" },
	/* Metrics are off: an HTTP listener is opened only when asked. */
	{ "metrics", "listen", KEY_OPT_ADDRESS, F(metrics_listen), 0, 0, "" },
	/* Relative to the working directory, so `make run` keeps its data in
	 * the source tree; the systemd unit passes --data-dir. */
	{ "store", "data_dir", KEY_STRING, F(data_dir), 0, 0, "var/nddd" },
	/* Address space, not memory: the file grows as data arrives.  64 GiB
	 * holds several hundred million URL records. */
	{ "store", "map_size", KEY_SIZE, F(map_size), MiB, 256 * TiB, "64G" },
	/* An acknowledged write must survive power loss. */
	{ "store", "sync", KEY_SYNC, F(sync), 0, 0, "full" },
	/* Redis's appendfsync everysec and MongoDB's journal commit bound
	 * what a power failure takes from writes that did not wait for the
	 * disk the same way: one second. */
	{ "store", "relaxed_sync_interval", KEY_DURATION,
	  F(relaxed_sync_interval_ms), 0, 3600 * 1000, "1s" },
	/* Documents' changes between commits of the store: 16 MiB holds the
	 * frames of about 80,000 documents of 100-byte URLs, the most a
	 * restart replays; it is zeroed once, and again at each start. */
	{ "store", "journal_size", KEY_SIZE, F(journal_size), 0, 4 * GiB,
	  "16M" },
	/* 10 million URLs: a 100 MB filter (10 bytes per URL).  The filter's
	 * 4-bit counters are indexed by 32 bits, so capacity x 20 must stay
	 * below 2^32. */
	{ "urls", "capacity", KEY_UINT, F(capacity), 1, UINT32_MAX / 20,
	  "10000000" },
	/* Crawler rules change which URLs are equal: off unless asked. */
	{ "urls", "strip_session_ids", KEY_BOOL, F(strip_session_ids), 0, 0,
	  "no" },
	{ "urls", "strip_tracking", KEY_BOOL, F(strip_tracking), 0, 0, "no" },
	{ "urls", "sort_query", KEY_BOOL, F(sort_query), 0, 0, "no" },
	/* URLs changed between flushes into the store: 85 bytes of memory
	 * each, 2.7 MiB; a flush then writes 8 full segments, and a restart
	 * replays at most this many.  At least max_batch: a batch is
	 * applied whole. */
	{ "urls", "journal_entries", KEY_UINT, F(journal_entries), 16,
	  1 << 24, "32768" },
	/* Records per segment: 192 KiB segments, whose live bitmaps are
	 * 512 bytes.  Smaller only to test merges. */
	{ "urls", "segment_records", KEY_UINT, F(segment_records), 4, 4096,
	  "4096" },
	/* A crawler that checks a URL whose time to live has passed learns
	 * how old it is for a day; then the record is reclaimed. */
	{ "urls", "keep_expired", KEY_DURATION, F(keep_expired_ms), 0,
	  (uint64_t)366 * 24 * 3600 * 1000, "24h" },
	/* url_forget by host or prefix needs the URLs' texts: about 100
	 * bytes of store per URL, and journal bytes per new URL. */
	{ "urls", "host_index", KEY_BOOL, F(host_index), 0, 0, "yes" },
	/* The URL digests' lanes (md5.c): every level gives the same keys;
	 * choosing one measures a slower CPU. */
	{ "urls", "simd", KEY_SIMD, F(url_simd), 0, 0, "auto" },
	/* A page's template outweighs its article: pages are judged by
	 * their main content.  whole: the paper's whole visible text. */
	{ "text", "html", KEY_HTML, F(html_main), 0, 0, "main" },
	/* The default term hash spreads short words over all 64 bits; the
	 * paper's plain sdbm stays for reproducing it.  Fixed per data
	 * directory once documents are stored. */
	{ "simhash", "term_hash", KEY_TERM_HASH, F(term_hash), 0, 0,
	  "sdbm-fmix64" },
	{ "simhash", "stopwords", KEY_STRING, F(stopwords), 0, 0,
	  "conf/stopwords.txt" },
	/* All levels give the same bits; choosing one is for diagnosis. */
	{ "simhash", "simd", KEY_SIMD, F(simd), 0, 0, "auto" },
	/* A device when a plugin finds one, the cpu otherwise. */
	{ "accel", "accelerator", KEY_STRING, F(accelerator), 0, 0, "auto" },
	{ "accel", "plugin_dir", KEY_OPT_STRING, F(accel_dir), 0, 0, "" },
	{ "accel", "params", KEY_OPT_STRING, F(accel_params), 0, 0, "" },
	/* Fingerprinting is CPU-bound: one worker per CPU. */
	{ "accel", "threads", KEY_UINT, F(accel_threads), 0, 256, "0" },
	/* Big enough to keep a device busy, small enough to spread. */
	{ "accel", "batch_docs", KEY_UINT, F(accel_batch_docs), 1, 1 << 20,
	  "1024" },
	/* A flaky device gets a few chances before the cpu takes over. */
	{ "accel", "max_failures", KEY_UINT, F(accel_max_failures), 1, 1000,
	  "3" },
	/* Manku et al.'s choice for 64-bit simhash at web scale: k = 3 with
	 * four tables on 16-bit keys. */
	{ "near", "k", KEY_UINT, F(near_k), 1, 16, "3" },
	{ "near", "blocks", KEY_UINT, F(near_blocks), 2, 64, "4" },
	/* Bounds a reply: thousands of exact copies of one page are one
	 * story, not a list anyone reads. */
	{ "near", "max_results", KEY_UINT, F(near_max_results), 1, 100000,
	  "1000" },
	/* Ordinary edits move a fingerprint past k, and a shared template
	 * brings unrelated pages within it: candidates are verified by
	 * their shingles unless a client asks for the Hamming answer. */
	{ "near", "answer", KEY_ANSWER, F(near_hamming), 0, 0, "verified" },
	/* Measured on labelled edits, pages and plagiarised answers
	 * (BENCHMARKS.md, "Near duplicates"): a copy cut, edited or framed
	 * keeps most of the shorter one's shingles, a lightly revised
	 * answer a fifth or more; unrelated documents share a tenth or less,
	 * even reports of one event.  The floor on resemblance keeps a
	 * snippet from being a copy of a whole book. */
	{ "near", "containment", KEY_FRACTION, F(near_containment), 0, 0,
	  "0.2" },
	{ "near", "resemblance", KEY_FRACTION, F(near_resemblance), 0, 0,
	  "0.05" },
	{ "log", "level", KEY_LOG_LEVEL, F(log_level), 0, 0, "info" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static int
parse_uint(const char *v, int allow_suffix, uint64_t *out)
{
	char *end;
	unsigned long long n;
	uint64_t mult = 1;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno != 0)
		return -1;
	if (allow_suffix && *end != '\0' && end[1] == '\0') {
		switch (toupper((unsigned char)*end)) {
		case 'K': mult = KiB; break;
		case 'M': mult = MiB; break;
		case 'G': mult = GiB; break;
		case 'T': mult = TiB; break;
		default: return -1;
		}
		end++;
	}
	if (*end != '\0' || (n != 0 && mult > UINT64_MAX / n))
		return -1;
	*out = (uint64_t)n * mult;
	return 0;
}

/* A decimal from 0 to 1: "0.5", "1", ".25". */
static int
parse_fraction(const char *v, double *out)
{
	char *end;
	double d;

	if (!isdigit((unsigned char)*v) && *v != '.')
		return -1;
	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || *end != '\0' || !(d >= 0 && d <= 1))
		return -1;
	*out = d;
	return 0;
}

static int
parse_duration(const char *v, uint64_t *ms)
{
	char *end;
	unsigned long long n;
	uint64_t mult;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno != 0)
		return -1;
	if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (*end == '\0' || strcmp(end, "s") == 0)
		mult = 1000;
	else if (strcmp(end, "m") == 0)
		mult = 60 * 1000;
	else if (strcmp(end, "h") == 0)
		mult = 3600 * 1000;
	else
		return -1;
	if (n > UINT64_MAX / mult)
		return -1;
	*ms = (uint64_t)n * mult;
	return 0;
}

int
config_parse_address(const char *v, struct sockaddr_storage *out)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss);

	if (evutil_parse_sockaddr_port(v, (struct sockaddr *)&ss, &len) == -1 ||
	    strrchr(v, ':') == NULL || strrchr(v, ']') > strrchr(v, ':'))
		return -1;
	if (out != NULL)
		*out = ss;
	return 0;
}

int
config_is_loopback(const char *address)
{
	struct sockaddr_storage ss;

	if (config_parse_address(address, &ss) == -1)
		return 0;
	if (ss.ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)&ss;

		return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss.ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)&ss;

		return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
	}
	return 0;
}

const char *
config_list_next(const char **list, size_t *len)
{
	const char *name = *list, *end;

	if (name == NULL)
		return NULL;
	end = name + strcspn(name, ",");
	*list = *end == ',' ? end + 1 : NULL;
	while (name < end && isblank((unsigned char)*name))
		name++;
	while (end > name && isblank((unsigned char)end[-1]))
		end--;
	*len = (size_t)(end - name);
	return name;
}

static int
set_key(struct config *cfg, const struct key *k, const char *v,
    const char **cause)
{
	void *field = (char *)cfg + k->offset;
	uint64_t n;

	switch (k->type) {
	case KEY_STRING:
	case KEY_OPT_STRING:
	case KEY_OPT_ADDRESS:
		if (*v == '\0') {
			if (k->type == KEY_STRING) {
				*cause = "empty value";
				return -1;
			}
			free(*(char **)field);
			*(char **)field = NULL;
			return 0;
		}
		if (k->type == KEY_OPT_ADDRESS &&
		    config_parse_address(v, NULL) == -1) {
			*cause = "not an address HOST:PORT (IPv4, or [IPv6])";
			return -1;
		}
		free(*(char **)field);
		if ((*(char **)field = strdup(v)) == NULL) {
			*cause = "out of memory";
			return -1;
		}
		return 0;
	case KEY_DURATION:
		if (parse_duration(v, &n) == -1) {
			*cause = "not a duration (digits, then ms, s, m or h)";
			return -1;
		}
		if (n < k->min || n > k->max) {
			*cause = "out of range";
			return -1;
		}
		*(uint64_t *)field = n;
		return 0;
	case KEY_SIZE:
	case KEY_UINT:
		if (parse_uint(v, k->type == KEY_SIZE, &n) == -1) {
			*cause = k->type == KEY_SIZE ?
			    "not a size (digits, optional K, M, G or T)" :
			    "not an unsigned integer";
			return -1;
		}
		if (n < k->min || n > k->max) {
			*cause = "out of range";
			return -1;
		}
		*(uint64_t *)field = n;
		return 0;
	case KEY_BOOL:
		if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") ||
		    !strcasecmp(v, "on") || !strcmp(v, "1"))
			*(bool *)field = true;
		else if (!strcasecmp(v, "no") || !strcasecmp(v, "false") ||
		    !strcasecmp(v, "off") || !strcmp(v, "0"))
			*(bool *)field = false;
		else {
			*cause = "not a boolean (yes or no)";
			return -1;
		}
		return 0;
	case KEY_SYNC:
		if (strcmp(v, "full") == 0)
			*(enum store_sync *)field = STORE_SYNC_FULL;
		else if (strcmp(v, "none") == 0)
			*(enum store_sync *)field = STORE_SYNC_NONE;
		else {
			*cause = "not a sync policy (full or none)";
			return -1;
		}
		return 0;
	case KEY_LOG_LEVEL:
		if (log_level_parse(v, (enum log_level *)field) == -1) {
			*cause = "not a log level (error, warn, info, debug)";
			return -1;
		}
		return 0;
	case KEY_TERM_HASH:
		if (simhash_term_hash_parse(v,
		    (enum simhash_term_hash *)field) == -1) {
			*cause = "not a term hash (sdbm-fmix64 or sdbm)";
			return -1;
		}
		return 0;
	case KEY_SIMD:
		if (simhash_simd_parse(v, (enum simhash_simd *)field) == -1) {
			*cause = "not a level (auto, avx512, avx2 or scalar)";
			return -1;
		}
		return 0;
	case KEY_HTML:
	case KEY_ANSWER:
		if (strcmp(v, k->type == KEY_HTML ? "main" : "verified") == 0)
			*(bool *)field = k->type == KEY_HTML;
		else if (strcmp(v, k->type == KEY_HTML ? "whole" :
		    "hamming") == 0)
			*(bool *)field = k->type != KEY_HTML;
		else {
			*cause = k->type == KEY_HTML ? "not a mode (main or "
			    "whole)" : "not an answer (verified or hamming)";
			return -1;
		}
		return 0;
	case KEY_FRACTION:
		if (parse_fraction(v, (double *)field) == -1) {
			*cause = "not a number from 0 to 1 (e.g. 0.5)";
			return -1;
		}
		return 0;
	}
	*cause = "unknown key type";
	return -1;
}

static const struct key *
find_key(const char *section, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].section, section) == 0 &&
		    strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

void
config_foreach_key(void (*fn)(const char *, const char *, const char *,
    void *), void *arg)
{
	for (size_t i = 0; i < NKEYS; i++)
		fn(keys[i].section, keys[i].name, keys[i].dflt, arg);
}

void
config_defaults(struct config *cfg)
{
	const char *cause;

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < NKEYS; i++)
		if (set_key(cfg, &keys[i], keys[i].dflt, &cause) == -1)
			fatalx("%s: default of %s.%s: %s", __func__,
			    keys[i].section, keys[i].name, cause);
}

void
config_clear(struct config *cfg)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].type == KEY_STRING ||
		    keys[i].type == KEY_OPT_STRING ||
		    keys[i].type == KEY_OPT_ADDRESS)
			free(*(char **)((char *)cfg + keys[i].offset));
	memset(cfg, 0, sizeof(*cfg));
}

int
config_set(struct config *cfg, const char *section, const char *key,
    const char *value, const char **cause)
{
	const struct key *k = find_key(section, key);

	if (k == NULL) {
		*cause = "unknown key";
		return -1;
	}
	return set_key(cfg, k, value, cause);
}

/* The parse state: inih tells the handler nothing of lines, so the reader
 * counts them. */
struct load {
	struct config *cfg;
	const char *path;
	FILE *f;
	int line;
	char *errors;
	size_t errors_len;
};

static void
load_error(struct load *ld, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
load_error(struct load *ld, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;
	char *grown;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = snprintf(NULL, 0, "%s:%d: %s\n", ld->path, ld->line, msg);
	if ((grown = realloc(ld->errors, ld->errors_len + n + 1)) == NULL)
		return;
	ld->errors = grown;
	snprintf(ld->errors + ld->errors_len, n + 1, "%s:%d: %s\n", ld->path,
	    ld->line, msg);
	ld->errors_len += n;
}

static char *
load_reader(char *str, int num, void *stream)
{
	struct load *ld = stream;
	char *s = fgets(str, num, ld->f);

	if (s != NULL && strchr(s, '\n') != NULL)
		ld->line++;
	return s;
}

static int
load_handler(void *user, const char *section, const char *name,
    const char *value)
{
	struct load *ld = user;
	const struct key *k;
	const char *cause;
	int known_section = 0;

	if ((k = find_key(section, name)) == NULL) {
		for (size_t i = 0; i < NKEYS; i++)
			known_section |= strcmp(keys[i].section, section) == 0;
		if (known_section)
			load_error(ld, "unknown key '%s' in [%s]", name,
			    section);
		else
			load_error(ld, "unknown section [%s]", section);
		return 1;
	}
	if (set_key(ld->cfg, k, value, &cause) == -1)
		load_error(ld, "%s: %s: '%s'", name, cause, value);
	return 1;	/* go on: report every error */
}

int
config_load(struct config *cfg, const char *path, char **errors)
{
	struct load ld = { .cfg = cfg, .path = path };
	int rc;

	*errors = NULL;
	if ((ld.f = fopen(path, "r")) == NULL) {
		if (asprintf(errors, "%s: %s\n", path, strerror(errno)) == -1)
			*errors = NULL;
		return -1;
	}
	rc = ini_parse_stream(load_reader, &ld, load_handler, &ld);
	fclose(ld.f);
	if (rc > 0) {
		ld.line = rc;
		load_error(&ld, "syntax error (want [section] or key = value)");
	} else if (rc < 0)
		load_error(&ld, "cannot parse: out of memory");
	*errors = ld.errors;
	return ld.errors ? -1 : 0;
}

/* The request workers by default: one per CPU, and at least this many,
 * for a worker whose batch waits for the disk holds its reads in flight
 * meanwhile: with two, a store past memory was checked 10% slower
 * (BENCHMARKS.md, "The second round's targets"). */
#define CONFIG_WORKERS_MIN		4

/*
 * Read transactions of the store held at once.  With MDB_NOTLS each holds
 * a reader slot from its creation to its end (store.c), and the daemon
 * creates them once per thread, so the count is fixed by the configuration:
 * two per request worker (its URL reader and its store reader; dispatch.c),
 * two of the URL writer (its reader,
 * and one while it rebuilds, grows or verifies the URL index; urlset.c,
 * urlsegs.c) and one of the store writer (while it verifies the documents;
 * docset.c).  The accelerator's threads read nothing of the store.  The
 * margin covers start-up's short-lived readers and one added without
 * counting here; a slot is 64 bytes of lock.mdb.  Never fewer than LMDB's
 * default.
 */
#define CONFIG_READERS_PER_WORKER	2
#define CONFIG_READERS_FIXED		(2 + 1)
#define CONFIG_READERS_MARGIN		32
#define CONFIG_READERS_LMDB_DEFAULT	126

unsigned
config_store_readers(const struct config *cfg)
{
	uint64_t n = cfg->workers * CONFIG_READERS_PER_WORKER +
	    CONFIG_READERS_FIXED + CONFIG_READERS_MARGIN;

	return n < CONFIG_READERS_LMDB_DEFAULT ? CONFIG_READERS_LMDB_DEFAULT :
	    (unsigned)n;
}

int
config_validate(struct config *cfg, const char **cause)
{
	if (cfg->workers == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		cfg->workers = n > CONFIG_WORKERS_MIN ? (uint64_t)n :
		    CONFIG_WORKERS_MIN;
	}
	if (cfg->max_batch * 16 > cfg->max_frame) {
		/* A batch of short URLs must fit one frame. */
		*cause = "[server] max_frame is too small for max_batch";
		return -1;
	}
	if (cfg->journal_size > 0 && cfg->journal_size < MiB) {
		/* Room for groups of a few documents at least. */
		*cause = "[store] journal_size must be 0 or at least 1M";
		return -1;
	}
	if (cfg->listen == NULL && cfg->tls_listen == NULL) {
		*cause = "nothing to listen on: set [server] listen or [tls] "
		    "listen";
		return -1;
	}
	if (cfg->tls_listen != NULL &&
	    (cfg->tls_cert == NULL || cfg->tls_key == NULL)) {
		*cause = "[tls] listen needs [tls] cert and key";
		return -1;
	}
	if (cfg->tls_listen == NULL && (cfg->tls_cert != NULL ||
	    cfg->tls_client_ca != NULL)) {
		*cause = "[tls] cert or client_ca set without [tls] listen";
		return -1;
	}
	if (cfg->tls_client_cn != NULL) {
		const char *list = cfg->tls_client_cn;
		size_t len;

		if (cfg->tls_client_ca == NULL) {
			*cause = "[tls] client_cn needs [tls] client_ca";
			return -1;
		}
		while (config_list_next(&list, &len) != NULL)
			if (len == 0) {
				*cause = "[tls] client_cn has an empty name "
				    "(names are separated by commas)";
				return -1;
			}
	}
	if (cfg->journal_entries < cfg->max_batch) {
		/* A batch is applied whole, so it must fit. */
		*cause = "[urls] journal_entries must be at least [server] "
		    "max_batch";
		return -1;
	}
	if (cfg->near_k >= cfg->near_blocks) {
		*cause = "[near] k must be below [near] blocks";
		return -1;
	}
	return 0;
}
