/*
 * nddd: the near-duplicate detection daemon.
 *
 * Start-up order matters: the whole configuration is read and checked, the
 * store opened and the URL filter rebuilt from it before the listeners
 * open, so the first answer is already exact.  Then systemd hears READY=1.
 * SIGTERM or SIGINT starts a graceful shutdown: no new connections or
 * requests, in-flight requests finish and are answered, the store is closed,
 * exit status 0.  SIGHUP reloads the token file.
 */
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>
#include <systemd/sd-daemon.h>

#include <openssl/evp.h>

#include "accel.h"
#include "auth.h"
#include "clock.h"
#include "config.h"
#include "dispatch.h"
#include "docset.h"
#include "httpd.h"
#include "log.h"
#include "md5.h"
#include "metrics.h"
#include "server.h"
#include "simhash.h"
#include "stopwords.h"
#include "store.h"
#include "urlset.h"
#include "version.h"
#include "writer.h"

struct daemon {
	struct config cfg;
	bool allow_root;
	struct event_base *base;
	struct store *store;
	struct urlset *urls;
	struct stopwords *stopwords;
	char stopwords_digest[2 * 32 + 1];
	struct docset *docs;
	struct accel *accel;
	struct writer *writer;
	struct metrics metrics;
	struct dispatch *dispatch;
	struct server *server;
	struct httpd *httpd;
	struct event *sigterm, *sigint, *sighup;
	struct event *trim;
};

/* How often an idle daemon gives the free pages of its heaps back. */
#define NDDD_TRIM_INTERVAL_S 5

static void
usage(FILE *out)
{
	fprintf(out,
	    "usage: nddd [-c FILE] [--listen HOST:PORT] [--data-dir DIR]\n"
	    "            [--log-level LEVEL] [--allow-root] [--check-config]\n"
	    "            [--version]\n"
	    "\n"
	    "  -c, --config FILE     read settings from FILE (INI; see "
	    "conf/nddd.conf)\n"
	    "  --listen HOST:PORT    override [server] listen\n"
	    "  --data-dir DIR        override [store] data_dir\n"
	    "  --log-level LEVEL     override [log] level\n"
	    "  --allow-root          run even as root (not recommended)\n"
	    "  -t, --check-config    check the configuration and exit\n"
	    "  -V, --version         print the version and exit\n");
}

static void
load_config(struct daemon *d, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "listen", required_argument, NULL, 'l' },
		{ "data-dir", required_argument, NULL, 'd' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "allow-root", no_argument, NULL, 'R' },
		{ "check-config", no_argument, NULL, 't' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config *cfg = &d->cfg;
	const char *path = NULL, *listen = NULL, *data_dir = NULL;
	const char *level = NULL, *cause;
	char *errors;
	int ch, check_only = 0;

	while ((ch = getopt_long(argc, argv, "c:tVh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'c': path = optarg; break;
		case 'l': listen = optarg; break;
		case 'd': data_dir = optarg; break;
		case 'L': level = optarg; break;
		case 'R': d->allow_root = true; break;
		case 't': check_only = 1; break;
		case 'V': printf("nddd %s\n", NDDD_VERSION); exit(0);
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); exit(2);
		}
	}
	if (optind != argc) {
		usage(stderr);
		exit(2);
	}
	config_defaults(cfg);
	if (path != NULL && config_load(cfg, path, &errors) == -1) {
		fprintf(stderr, "%s", errors ? errors : "out of memory\n");
		fprintf(stderr, "nddd: invalid configuration; not starting\n");
		exit(1);
	}
	if ((listen && config_set(cfg, "server", "listen", listen, &cause)) ||
	    (data_dir && config_set(cfg, "store", "data_dir", data_dir,
	    &cause)) ||
	    (level && config_set(cfg, "log", "level", level, &cause))) {
		fprintf(stderr, "nddd: command line: %s\n", cause);
		exit(1);
	}
	if (config_validate(cfg, &cause) == -1) {
		fprintf(stderr, "nddd: %s: %s\n", path ? path : "defaults",
		    cause);
		exit(1);
	}
	if (check_only) {
		printf("nddd: configuration %s is valid\n",
		    path ? path : "(defaults)");
		exit(0);
	}
}

static struct auth *
load_tokens(const struct config *cfg)
{
	struct auth *a;
	char *errors;

	if (cfg->tokens_file == NULL)
		return NULL;
	if ((a = auth_load(cfg->tokens_file, &errors)) == NULL) {
		fprintf(stderr, "%s", errors ? errors : "out of memory\n");
		fatalx("invalid token file; not starting");
	}
	log_info("%s: %zu tokens from %s", __func__, auth_count(a),
	    cfg->tokens_file);
	return a;
}

/*
 * Without tokens, anyone who can connect may delete: that is allowed on
 * loopback, or on a TLS listener that checks client certificates, and
 * elsewhere only when the configuration says so in so many words.
 */
static void
check_exposure(const struct config *cfg, bool have_tokens)
{
	bool plain_open = cfg->listen && !config_is_loopback(cfg->listen);
	bool tls_open = cfg->tls_listen && !config_is_loopback(cfg->tls_listen)
	    && cfg->tls_client_ca == NULL;

	if (have_tokens)
		return;
	if (!plain_open && !tls_open) {
		log_info("no tokens configured: every client may read, write "
		    "and delete; listening on loopback%s only",
		    cfg->tls_client_ca ? " or for TLS clients with certificates"
		    : "");
		return;
	}
	if (!cfg->allow_unauthenticated)
		fatalx("refusing to listen on %s without [auth] tokens_file "
		    "or [tls] client_ca: anyone could delete; set [auth] "
		    "allow_unauthenticated = yes to insist",
		    plain_open ? cfg->listen : cfg->tls_listen);
	log_warnx("listening on %s with no authentication: anyone who can "
	    "connect may delete", plain_open ? cfg->listen : cfg->tls_listen);
}

/*
 * One descriptor per connection: raise the soft limit as far as the hard
 * one allows, so that max_connections can be reached.
 */
static void
raise_fd_limit(const struct config *cfg)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)cfg->max_connections + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur < want)
		log_warnx("%s: at most %llu open files: fewer connections "
		    "than max_connections = %llu can be held", __func__,
		    (unsigned long long)rl.rlim_cur,
		    (unsigned long long)cfg->max_connections);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	struct auth *a;
	char *errors;

	(void)what;
	if (sig == SIGHUP) {
		if (d->cfg.tokens_file == NULL) {
			log_info("%s: SIGHUP: no token file to reload",
			    __func__);
			return;
		}
		if ((a = auth_load(d->cfg.tokens_file, &errors)) == NULL) {
			log_warnx("%s: keeping the old tokens: %s", __func__,
			    errors ? errors : "out of memory");
			free(errors);
			return;
		}
		log_info("%s: reloaded %zu tokens", __func__, auth_count(a));
		dispatch_set_auth(d->dispatch, a);
		return;
	}
	log_info("%s: %s: shutting down", __func__, strsignal(sig));
	sd_notify(0, "STOPPING=1");
	server_shutdown(d->server);
}

/*
 * A burst of requests leaves free memory in the allocator's heaps that it
 * keeps for the next one: with nothing in flight, give it back, so that
 * memory at rest is the filter, the index and the tables.
 */
static void
trim_cb(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;

	(void)fd;
	(void)what;
	if (dispatch_pending(d->dispatch) == 0)
		malloc_trim(0);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Loads the stop words and names the list by the SHA-256 of its sorted
 * words (or "none"), for the data directory's records.
 */
static void
load_stopwords(struct daemon *d)
{
	const char *const *list;
	const char **sorted;
	unsigned char md[32];
	unsigned int mdlen;
	EVP_MD_CTX *ctx;
	char *cause = NULL;
	size_t n = 0;

	if (strcmp(d->cfg.stopwords, "none") == 0) {
		snprintf(d->stopwords_digest, sizeof(d->stopwords_digest),
		    "none");
		return;
	}
	if ((d->stopwords = stopwords_load(d->cfg.stopwords, &cause)) == NULL)
		fatalx("stop words: %s", cause ? cause : "out of memory");
	list = stopwords_list(d->stopwords);
	while (list[n] != NULL)
		n++;
	if ((sorted = malloc((n + 1) * sizeof(*sorted))) == NULL ||
	    (ctx = EVP_MD_CTX_new()) == NULL)
		fatalx("%s: out of memory", __func__);
	memcpy(sorted, list, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_str);
	EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	for (size_t i = 0; i < n; i++)
		EVP_DigestUpdate(ctx, sorted[i], strlen(sorted[i]) + 1);
	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	free(sorted);
	for (unsigned i = 0; i < mdlen && i < 32; i++)
		snprintf(d->stopwords_digest + 2 * i, 3, "%02x", md[i]);
	log_info("%s: %zu stop words from %s", __func__, n, d->cfg.stopwords);
}

/*
 * The documents' tables are rebuilt from the store in a thread of their
 * own while the URL set rebuilds its filter and index in the opening one:
 * the two read different tables, and a restart takes the longer of the
 * two rather than their sum.
 */
struct docs_opening {
	struct daemon *d;
	struct docset_options opts;
	pthread_t thread;
	char *cause;
};

static void *
docs_open_run(void *arg)
{
	struct docs_opening *o = arg;

	o->d->docs = docset_open(o->d->store, &o->opts, &o->cause);
	return NULL;
}

static void
docs_open_start(struct daemon *d, struct docs_opening *o)
{
	char *cause = NULL;
	int rc;

	if (simhash_simd_select(d->cfg.simd, &cause) == -1)
		fatalx("[simhash] simd: %s", cause ? cause : "unsupported");
	load_stopwords(d);
	o->d = d;
	o->cause = NULL;
	o->opts = (struct docset_options){
		.k = (unsigned)d->cfg.near_k,
		.blocks = (unsigned)d->cfg.near_blocks,
		.term_hash = d->cfg.term_hash,
		.stopwords_digest = d->stopwords_digest,
		.resemblance = (float)d->cfg.near_resemblance,
		.containment = (float)d->cfg.near_containment,
	};
	if ((rc = pthread_create(&o->thread, NULL, docs_open_run, o)) != 0)
		fatalx("%s: cannot start a thread: %s", __func__,
		    strerror(rc));
}

static void
docs_open_finish(struct docs_opening *o)
{
	pthread_join(o->thread, NULL);
	if (o->d->docs == NULL)
		fatalx("%s", o->cause ? o->cause :
		    "cannot open the documents");
}

static void
start_accel(struct daemon *d)
{
	struct accel_options ao;
	char *cause = NULL;

	accel_options_defaults(&ao);
	snprintf(ao.accelerator, sizeof(ao.accelerator), "%s",
	    d->cfg.accelerator);
	snprintf(ao.plugin_dir, sizeof(ao.plugin_dir), "%s",
	    d->cfg.accel_dir ? d->cfg.accel_dir : "");
	snprintf(ao.params, sizeof(ao.params), "%s",
	    d->cfg.accel_params ? d->cfg.accel_params : "");
	ao.threads = (unsigned)d->cfg.accel_threads;
	ao.batch_docs = (unsigned)d->cfg.accel_batch_docs;
	ao.max_failures = (unsigned)d->cfg.accel_max_failures;
	if ((d->accel = accel_new(d->base, &ao, d->cfg.term_hash,
	    d->stopwords, &cause)) == NULL)
		fatalx("accelerator: %s", cause ? cause : "cannot start");
}

/* [urls] simd: the lanes the URL digests use (md5.c). */
static void
select_url_lanes(enum simhash_simd level)
{
	static const int lanes[] = {
		[SIMHASH_SIMD_AUTO] = MD5_LANES_MAX,
		[SIMHASH_SIMD_AVX512] = 16,
		[SIMHASH_SIMD_AVX2] = 8,
		[SIMHASH_SIMD_SCALAR] = 1,
	};

	md5_limit_lanes(lanes[level]);
	if (level != SIMHASH_SIMD_AUTO && md5_lanes() != lanes[level])
		fatalx("[urls] simd: this CPU has no %s",
		    simhash_simd_name(level));
	log_info("URL digests: %d at a time", md5_lanes());
}

static void
open_everything(struct daemon *d)
{
	struct store_options so = {
		.dir = d->cfg.data_dir,
		.map_size = d->cfg.map_size,
		.sync = d->cfg.sync,
		.max_readers = config_store_readers(&d->cfg),
		.journal_size = (size_t)d->cfg.journal_size,
	};
	struct urlset_options uo = {
		.capacity = d->cfg.capacity,
		.canon = {
			.strip_session_ids = d->cfg.strip_session_ids,
			.strip_tracking = d->cfg.strip_tracking,
			.sort_query = d->cfg.sort_query,
		},
		.journal_entries = d->cfg.journal_entries,
		.segment_records = (uint32_t)d->cfg.segment_records,
		.sync = d->cfg.sync == STORE_SYNC_FULL,
		.relaxed_sync_ms = d->cfg.relaxed_sync_interval_ms,
		.keep_expired_ms = d->cfg.keep_expired_ms,
		.host_index = d->cfg.host_index,
	};
	struct auth *tokens = load_tokens(&d->cfg);
	struct dispatch_deps deps;
	struct server_handler handler;
	struct docs_opening docs;
	char *cause = NULL;

	check_exposure(&d->cfg, tokens != NULL);
	select_url_lanes(d->cfg.url_simd);
	if ((d->store = store_open(&so, &cause)) == NULL)
		fatalx("%s", cause ? cause : "cannot open the store");
	/* Before the documents open beside the URL set (their opening may
	 * write): a refused start changes nothing. */
	if (urlset_refuses(d->store, &uo, &cause))
		fatalx("%s", cause ? cause : "cannot open the URL set");
	docs_open_start(d, &docs);
	if ((d->urls = urlset_open(d->store, d->cfg.data_dir, &uo, &cause)) ==
	    NULL)
		fatalx("%s", cause ? cause : "cannot open the URL set");
	docs_open_finish(&docs);
	if ((d->base = event_base_new()) == NULL)
		fatalx("%s: event_base_new failed", __func__);
	if (urlset_start(d->urls, d->base) == -1)
		fatalx("%s: cannot start the URL writer", __func__);
	start_accel(d);
	if ((d->writer = writer_new(d->store, d->base)) == NULL)
		fatalx("%s: cannot start the store writer", __func__);
	deps.st = d->store;
	deps.us = d->urls;
	deps.ds = d->docs;
	deps.w = d->writer;
	deps.acc = d->accel;
	deps.metrics = &d->metrics;
	deps.auth = tokens;
	if ((d->dispatch = dispatch_new(&d->cfg, d->base, &deps)) == NULL)
		fatalx("%s: cannot start the request workers", __func__);
	dispatch_server_handler(d->dispatch, &handler);
	if ((d->server = server_new(d->base, &d->cfg, &handler, &d->metrics,
	    &cause)) == NULL)
		fatalx("%s", cause ? cause : "cannot start the server");
	dispatch_set_server(d->dispatch, d->server);
	if (d->cfg.metrics_listen != NULL && (d->httpd = httpd_new(d->base,
	    d->cfg.metrics_listen, &d->metrics, dispatch_render_gauges,
	    d->dispatch, d->server, &cause)) == NULL)
		fatalx("%s", cause ? cause : "cannot start the metrics "
		    "listener");
	d->sigterm = evsignal_new(d->base, SIGTERM, on_signal, d);
	d->sigint = evsignal_new(d->base, SIGINT, on_signal, d);
	d->sighup = evsignal_new(d->base, SIGHUP, on_signal, d);
	d->trim = event_new(d->base, -1, EV_PERSIST, trim_cb, d);
	if (d->trim == NULL || event_add(d->trim, &(struct timeval){
	    NDDD_TRIM_INTERVAL_S, 0 }) == -1)
		fatalx("%s: cannot arm the trim timer", __func__);
	if (d->sigterm == NULL || d->sigint == NULL || d->sighup == NULL ||
	    evsignal_add(d->sigterm, NULL) == -1 ||
	    evsignal_add(d->sigint, NULL) == -1 ||
	    evsignal_add(d->sighup, NULL) == -1)
		fatalx("%s: cannot handle signals", __func__);
}

static void
close_everything(struct daemon *d)
{
	char *cause = NULL;

	/*
	 * The loop ends only once every request accepted is finished
	 * (server_shutdown waits for them, however slow the disk), so no job
	 * is queued anywhere now.  Each stage still stops before the stages
	 * it hands work to and before what its work touches: the workers
	 * (they hand documents to the accelerator and submits to the
	 * writers), the accelerator (its results go to the writer), the
	 * writers, and only then the connections that replies are held for.
	 * The URL writer flushes its journal into the store as it stops.
	 */
	httpd_free(d->httpd);
	dispatch_free(d->dispatch);
	accel_free(d->accel);
	writer_stop(d->writer);
	urlset_stop(d->urls);
	server_free(d->server);
	writer_free(d->writer);
	stopwords_free(d->stopwords);
	event_free(d->sigterm);
	event_free(d->sigint);
	event_free(d->sighup);
	event_free(d->trim);
	event_base_free(d->base);
	urlset_free(d->urls);
	/* Last: nothing writes to the store after it. */
	if (docset_save_image(d->docs, &cause) == -1)
		log_warnx("%s: the documents' restart image: %s (the next "
		    "start reads the records)", __func__, cause ? cause :
		    "out of memory");
	free(cause);
	docset_free(d->docs);
	store_close(d->store);
	config_clear(&d->cfg);
}

/* The allocator's heaps: one per four CPUs. */
static int
arenas(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 4 ? (int)((n + 3) / 4) : 1;
}

int
main(int argc, char **argv)
{
	struct daemon d;

	memset(&d, 0, sizeof(d));
	/* Buffers past 16 MiB (a large group commit or flush) are mapped
	 * and unmapped whole (glibc would otherwise raise its threshold
	 * after the first such free and keep them); what requests leave in
	 * the heaps (frames up to max_frame, their decoded copies) is given
	 * back when the daemon is idle (trim_cb), not after each request: a
	 * stream of document batches otherwise mapped, faulted in, zeroed
	 * and unmapped every frame: a sixth of the daemon's time on HTML
	 * pages, in page faults. */
	mallopt(M_MMAP_THRESHOLD, 16 * 1024 * 1024);
	mallopt(M_TRIM_THRESHOLD, 32 * 1024 * 1024);
	/* One heap per four CPUs, not glibc's eight per CPU: each worker's
	 * heap keeps what a burst left in it, in pages half used that no trim
	 * gives back (5 million URLs on 2 CPUs: 21.2 bytes per URL of
	 * capacity with a heap per thread, 16.4 with one), and the threads'
	 * caches (tcache) take most allocations without the heap's lock. */
	mallopt(M_ARENA_MAX, arenas());
	load_config(&d, argc, argv);
	log_init(d.cfg.log_level, "nddd");
	log_route_libevent();
	if (geteuid() == 0 && !d.allow_root)
		fatalx("refusing to run as root: run as an unprivileged user "
		    "(the systemd unit does), or pass --allow-root");
	if (geteuid() == 0)
		log_warnx("running as root (--allow-root)");
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit(&d.cfg);
	/* Tests make times to live pass without waiting for them. */
	if (getenv("NDDD_TEST_CLOCK") != NULL) {
		if (clock_wall_from_file(getenv("NDDD_TEST_CLOCK")) == -1)
			fatal("NDDD_TEST_CLOCK %s", getenv("NDDD_TEST_CLOCK"));
		log_warnx("the wall clock is read from %s (NDDD_TEST_CLOCK): "
		    "for tests only", getenv("NDDD_TEST_CLOCK"));
	}

	open_everything(&d);
	log_info("nddd %s listening on %s%s%s%s, data in %s", NDDD_VERSION,
	    d.cfg.listen ? d.cfg.listen : "", d.cfg.tls_listen ? " (TLS: " :
	    "", d.cfg.tls_listen ? d.cfg.tls_listen : "",
	    d.cfg.tls_listen ? ")" : "", d.cfg.data_dir);
	sd_notifyf(0, "READY=1\nSTATUS=serving on %s\nMAINPID=%lu",
	    d.cfg.listen ? d.cfg.listen : d.cfg.tls_listen,
	    (unsigned long)getpid());

	if (event_base_dispatch(d.base) == -1)
		fatalx("event loop failed");

	close_everything(&d);
	log_info("nddd stopped");
	return 0;
}
