/*
 * fuzz_dispatch: whole sequences of requests through the daemon's request
 * stack, as a client sees it, with a model of what the answers must be.
 *
 * The stack is the daemon's own, opened the way main.c opens it (config,
 * store, URL set, documents, the cpu accelerator, store writer, request
 * workers, dispatcher, server), on a temporary data directory (under
 * /dev/shm when there is one) with [store] sync = none, a tiny filter,
 * journal and segments (so that counters saturate and flushes and merges
 * happen), small batch, inflight and near-result limits, and a token file
 * with a token per role and one with admin's role in namespace "a" only.
 * The daemon's wall clock is the fuzzer's (clock_wall_source): it stands
 * still but where the input moves it on, between groups only, so every
 * request of a group sees the same time.  The seam is the socket: the
 * fuzzer is a client on a loopback TCP connection to the real server, a
 * bufferevent on the same event base, so frames take the server's way
 * (framing, backpressure, dispatch_frame, the workers, the writers,
 * reply_finish) and the loop is run until every reply is in.  Every
 * FX_REOPEN_EXECS executions (an epoch) an admin's verify must find memory
 * and store consistent, then the stack is closed and opened again on a
 * fresh directory, with the clock back at its start, which bounds the
 * store (and the time documents' queries take).
 *
 * Input: a sequence of requests.  Each starts with a byte choosing the
 * operation (low 4 bits), the token (read, write, admin, none, unknown,
 * the one limited to a namespace) and whether the requests so far are
 * sent before the next ones are built (a group: requests of one group are
 * pipelined, and may be answered in any order); the operation's fields
 * follow (URLs from a small dictionary in several spellings, of the
 * execution's own hosts (its host, subdomains of it, and look-alikes: one
 * that ends like it, one that begins like it, one whose first label
 * begins like its) or of shared ones, over http or https, on the default
 * port or another, or bytes; documents from a few texts, near copies of
 * each other, or bytes;
 * digests, durability, k, fingerprints; a URL batch's namespace, from a
 * few names, the default one and one that cannot be among them, its time
 * to live, from none, a few seconds, an hour, 100 years or more, and
 * whether it asks for times; a document operation's namespace, and each
 * document's of a doc_batch, from the same names).  One value of the low
 * bits takes the next byte to choose among a request naming no operation,
 * a namespace_set or namespace_drop (a namespace, a default time to live),
 * a url_forget (a namespace; a host: the execution's own, in upper case or
 * not, its subdomain or look-alikes, the shared one, their parents, or no
 * host at all, with a port, a path, user info, a scheme, spaces, bytes
 * above ASCII or too many, or input bytes; with or without subdomains; or
 * a prefix: a dictionary URL cut anywhere, in one of its spellings, or no
 * prefix the host index takes; or both, or neither), and a step of the
 * clock (seconds, milliseconds or hours, a few times per execution at
 * most), which ends the group.  A raw frame (arbitrary bytes,
 * or a request with bytes changed or cut, or an oversized length) ends the
 * sequence.
 *
 * What is checked, besides the sanitizers: every request gets exactly one
 * reply, with its id, that decodes as a Response; errors known in advance
 * (role, in or out of the limited token's namespace, validation, bad
 * namespace names and times to live, empty documents, k) are the ones
 * answered; a URL batch has a count per item (and times, when asked) and
 * an error exactly for the items that are not URLs; a doc_batch (up to 6
 * documents, stored or query_only) has a result per document and an error
 * exactly for those with a bad URL or no terms, the others answered as
 * doc_submits applied in request order.  URL counts follow a model of each
 * namespace, an independent set (a submit adds one, a delete forgets, a
 * check sees the count), and so do times: a URL recorded as new is first
 * and last seen now and expires after the batch's time to live, or its
 * namespace's default; a duplicate is last seen now, its expiry kept; once
 * the clock reaches that, it is unseen (count 0), a check answering its
 * times until the sweep reclaims it (then none), and a submit records it
 * anew.  A namespace_set answers the default it sets; a namespace_drop, of
 * a namespace the model knows exists (NOT_FOUND otherwise), empties it at
 * once; both, and an admin's stats, which list the namespaces the model
 * knows exist (a stored document creates its namespace too), the default
 * one first, then by name, with their defaults, give a namespace at least
 * the URLs and documents the model knows it holds; stats' urls_expired
 * never goes back.  Documents follow the model too, one set per namespace
 * (ids, fingerprints equal to the local simhash, groups, created, not
 * found after a delete or once their namespace is dropped); neighbours
 * are sorted, within k, at the right distance, not the document itself,
 * of the query's namespace, and complete when the reply says so; stats
 * tell the role only what it may know; verify finds memory and store
 * consistent (the sweep's reclaiming included); a frame that is not a
 * request closes the connection with an error.  URLs of a host made for
 * the execution start unseen in every namespace; others are learnt from
 * their first answer.  Namespaces outlive an execution: the model follows
 * them over the epoch, and forgets them after a raw frame made from a
 * request, until answers tell again.  Requests of one group that touch the
 * same URL in a namespace, one of them changing it, may be applied in
 * either order: their answers are not checked and the URL is learnt
 * again.  So with a namespace_drop: the answers about its namespace's URLs
 * and documents in its group are not checked, nor its own against a
 * namespace_set, a submit or another drop of it there; nor the expiry of
 * URLs recorded in its group by a submit without a time to live of its
 * own after a namespace_set.
 *
 * url_forget: its errors are known in advance (role, namespace, both or
 * neither of host and prefix, subdomains with a prefix, a host that is
 * not all host, a prefix that is no URL or longer than the host index
 * keeps of its host's URLs).  The stack keeps the host index and every
 * URL the fuzzer makes fits it, so a forget answers complete until a
 * submit of digests reaches the store (their texts are not in the
 * index: from then on it answers incomplete).  It deletes,
 * in its namespace, the URLs whose canonical host is the host (or ends
 * with "." and the host, with subdomains), or whose canonical form begins
 * with the canonical prefix, of those the index holds: the model knows,
 * per URL and namespace, whether its record was made by a submit of its
 * text (in the index) or of its digest (not in it, but an entry left by an
 * earlier record of its text may still find it, until a merge of the
 * index's runs drops that entry: unsure).  Its count is at least the
 * URLs the model knows visible and surely indexed; when every URL it can
 * take is of the execution's own hosts, at most those and the ones the
 * model does not know or is unsure of; 0 in a namespace the model knows
 * does not exist.  Afterwards what it surely found is deleted (no count,
 * no times) and what it may have found unknown; a URL of its host or
 * prefix met later in the execution starts deleted in that namespace,
 * unless a digest submit there in an earlier execution of the epoch (or a
 * raw frame's request, or a store that ran full) may have recorded it
 * without its text.  A forget changes each URL it takes, those that
 * requests of its group name after it included.  A violation aborts.
 *
 * FUZZ_DISPATCH_TRACE=1 in the environment prints each request and its
 * answer.  A failure of an epoch's verify says so: the input shown is then
 * only the last of the epoch's.
 */
#include <arpa/inet.h>
#include <ftw.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <openssl/evp.h>

#include "accel.h"
#include "arena.h"
#include "auth.h"
#include "clock.h"
#include "config.h"
#include "dispatch.h"
#include "docset.h"
#include "frame.h"
#include "log.h"
#include "metrics.h"
#include "nddd.pb-c.h"
#include "server.h"
#include "simhash.h"
#include "statsreq.h"
#include "store.h"
#include "urlcanon.h"
#include "urlhosts.h"
#include "urlset.h"
#include "writer.h"

/* Executions between reopenings of the stack on a fresh directory. */
#define FX_REOPEN_EXECS 256
/* Requests of one execution, at most; items of a batch built from input. */
#define FX_MAX_REQS 16
#define FX_MAX_ITEMS 20
/* Documents of a doc_batch, at most. */
#define FX_MAX_BATCH_DOCS 6
/* The stack's limits (config_set), small enough to be crossed. */
#define FX_MAX_BATCH 16
#define FX_MAX_RESULTS 4
#define FX_K 3
/* How long a group may wait for its replies before that is a failure. */
#define FX_REPLY_TIMEOUT_S 60
/* The sentinel's ids: apart from the requests' own. */
#define FX_SENTINEL_ID (UINT64_C(1) << 62)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fx_tokens[] = {
	[ROLE_READ] = "fuzz-read-token-0123456789",
	[ROLE_WRITE] = "fuzz-write-token-0123456789",
	[ROLE_ADMIN] = "fuzz-admin-token-0123456789",
};
#define FX_UNKNOWN_TOKEN "fuzz-unknown-token-0123456789"
/* A token with its role (admin) in one namespace only. */
#define FX_NS_TOKEN "fuzz-ns-token-0123456789"
#define FX_NS_TOKEN_SLOT 1

/* The namespaces URL operations work in: the model's slots. */
static const char *const fx_ns_names[] = {
	"", "a", "b", "Crawl.2024_x-1",
	/* The longest: 64 bytes. */
	("n64-012345678901234567890123456789"
	    "012345678901234567890123456789"),
};
#define FX_NNS (sizeof(fx_ns_names) / sizeof(fx_ns_names[0]))
/* A choice of 3 bits: a slot, or -1 for a name that cannot be. */
static const int fx_ns_pick[8] = { 0, 1, 2, 3, 4, 0, 1, -1 };
/* The names that cannot be: a byte not allowed, one byte too many. */
static const char *const fx_ns_bad[] = {
	"bad/name",
	("n65-012345678901234567890123456789"
	    "0123456789012345678901234567890"),
};
/* Times to live, in seconds, of a choice of 3 bits: the last is too long
 * (one of two values). */
#define FX_TTL_MAX (URLSET_TTL_MAX_MS / 1000)
static const uint64_t fx_ttls[8] = {
	0, 1, 2, 3, 60, 3600, FX_TTL_MAX, FX_TTL_MAX + 1,
};
/* The wall clock the daemon reads: fixed, advanced by the input. */
#define FX_CLOCK_START_MS UINT64_C(1700000000000)
/* Steps of the clock in one execution, at most: an epoch spans a few
 * years at most, however its inputs advance it. */
#define FX_MAX_CLOCK_STEPS 8

/* Paths of dictionary URLs; a URL is a host, a spelling and one of these. */
static const char *const fx_paths[] = {
	"/", "/a", "/b", "/a/b?x=1", "/%7euser/", "/caf%c3%a9",
	"/s?utm_source=x&id=2", "/p;jsessionid=1",
};
#define FX_NPATHS (sizeof(fx_paths) / sizeof(fx_paths[0]))

/* Documents: two pairs of near copies and one on its own. */
static const char *const fx_texts[] = {
	"the quick brown fox jumps over the lazy dog near the river bank "
	    "while the farmer watches from his tractor in the field",
	"the quick brown fox jumped over the lazy dog near the river bank "
	    "while the farmer watches from his tractor in the field",
	"stock markets fell sharply on tuesday as investors weighed new "
	    "data on inflation and the central bank held its rates",
	"stock markets fell sharply on wednesday as investors weighed new "
	    "data on inflation and the central bank held its rates",
	"a completely different story about football and the weather in "
	    "spring with rain expected over the whole weekend",
};
#define FX_NTEXTS (sizeof(fx_texts) / sizeof(fx_texts[0]))

enum fz_op {
	FZ_URL_SUBMIT,
	FZ_URL_CHECK,
	FZ_URL_DELETE,
	FZ_STATS,
	FZ_VERIFY,
	FZ_DOC_SUBMIT,
	FZ_DOC_WOULD_JOIN,
	FZ_DOC_QUERY_BODY,
	FZ_DOC_QUERY_FP,
	FZ_DOC_GET,
	FZ_DOC_DELETE,
	FZ_NO_OP,
	FZ_RAW,
	FZ_DOC_BATCH,
	FZ_NS_SET,
	FZ_NS_DROP,
	FZ_URL_FORGET,
	FZ_CLOCK,			/* not a request: the clock moves on */
	FZ_MORE,			/* one of the five above, by a byte */
};

/* The operation of each value of an input byte's low 4 bits. */
static const enum fz_op fz_op_of[16] = {
	FZ_URL_SUBMIT, FZ_URL_SUBMIT, FZ_URL_CHECK, FZ_URL_CHECK,
	FZ_URL_DELETE, FZ_STATS, FZ_VERIFY, FZ_DOC_SUBMIT, FZ_DOC_BATCH,
	FZ_DOC_WOULD_JOIN, FZ_DOC_QUERY_BODY, FZ_DOC_QUERY_FP, FZ_DOC_GET,
	FZ_DOC_DELETE, FZ_MORE, FZ_RAW,
};

/* FZ_MORE's operation by the low 3 bits of the byte after it. */
static const enum fz_op fz_more_of[8] = {
	FZ_NO_OP, FZ_NS_SET, FZ_NS_DROP, FZ_CLOCK,
	FZ_URL_FORGET, FZ_NS_SET, FZ_NS_DROP, FZ_CLOCK,
};

static const char *const fz_op_names[] = {
	"url_submit", "url_check", "url_delete", "stats", "verify",
	"doc_submit", "doc_submit query_only", "doc_query body",
	"doc_query simhash", "doc_get", "doc_delete", "no operation", "raw",
	"doc_batch", "namespace_set", "namespace_drop", "url_forget", "clock",
	"more",
};

/*
 * What the model knows of a key's URL in one namespace: its count, and
 * the times it was first and last submitted and expires (0: never), each
 * known or not.  A URL whose time to live has passed has count 0 and is
 * stale: its record, until the sweep reclaims it, answers with its times
 * (zeros once reclaimed).
 */
struct fz_url {
	bool known;			/* count */
	bool times_known;		/* first, last, expires (and stale) */
	bool stale;
	uint64_t count;
	uint64_t first, last, expires;
	/* This group's requests that read or change it; submits, and
	 * those of digests. */
	unsigned touch, mut, submits, dsubmits;
	/*
	 * Whether its record, while it lives, may have been made by a
	 * submit of its digest, which leaves it out of the host index
	 * (dig); whether an entry of the index may name it (txt: a record
	 * once made from its text leaves one, which a merge of the runs
	 * drops some time after the record is gone).  Not reset with the
	 * rest: what a forget finds outlives the records.
	 */
	bool dig, txt;
};

/* What the model knows of a URL's document in one namespace. */
struct fz_doc {
	bool known;
	bool present;
	uint64_t id, fp, group;
	/* This group's requests that read or change it. */
	unsigned touch, mut;
	int last_req;			/* the request that last counted */
};

/*
 * What the model knows of one key (the MD5 of a canonical URL) during an
 * execution: its URL and its document in each namespace, each known or
 * not.
 */
struct fz_ent {
	uint8_t key[16];
	const char *canon;		/* in the arena */
	size_t canon_len;
	int next;			/* the bucket's chain */
	struct fz_url url[FX_NNS];
	struct fz_doc doc[FX_NNS];
	int last_req;			/* the request that last counted */
};

/*
 * What the model knows of a namespace, from one opening of the stack to
 * the next (executions share them): whether it exists and its default
 * time to live (0 for one that does not exist: what it is created with).
 */
struct fz_ns {
	bool exists_known, exists;
	bool ttl_known;
	uint64_t ttl_ms;
	/* This group's requests in it: drops, namespace_sets (and the
	 * time to live they set, if they agree), submits that may create
	 * it. */
	unsigned drops, sets, submits;
	bool set_ttl_same;
	uint64_t set_ttl_ms;
	bool failed;			/* one of them, for want of room */
};

/* One URL of a request: a batch item, or a document's URL. */
struct fz_item {
	bool valid;
	int ent;			/* the model's, when valid */
	/* A document's namespace: its slot, or -1 for a name that cannot
	 * be. */
	int ns;
	/* A document of a doc_batch: its fingerprint, or it has no terms;
	 * stored or only answered. */
	uint64_t fp;
	bool empty;
	bool query_only;
	/* A stored document's DocSubmit.group (0: none) and new_group, and
	 * whether they are refused (both, or a group of 2^63 or more). */
	uint64_t join;
	bool new_group, bad_group;
};

struct fz_req {
	uint64_t id;
	enum fz_op op;
	enum role role;			/* its token's, for this request */
	bool ns_token;			/* FX_NS_TOKEN */
	/* URL, document and namespace operations': the namespace's slot,
	 * or -1 for a name that cannot be (a doc_batch's are its items');
	 * the time to live asked for; with_times. */
	int ns;
	const char *ns_name;
	uint64_t ttl_ms;
	bool with_times;
	bool digests;			/* a URL batch of digests */
	int forget;			/* a url_forget's, in fx.forgets */
	Nddd__V1__Code expect;		/* OK, or an error known before */
	size_t n;			/* items */
	struct fz_item *items;
	uint64_t fp;			/* the body's, or the query's */
	unsigned k;
	Nddd__V1__Response *resp;	/* the reply, once it is here */
};

/* A url_forget the model follows, of an execution. */
struct fz_forget {
	int slot;			/* its namespace's */
	const char *host;		/* in lower case; NULL: by prefix */
	size_t hlen;
	bool subdomains;
	const char *prefix;		/* canonical, in the arena */
	size_t plen;
	/* Every URL it may take is of the execution's own hosts. */
	bool closed;
	int req;			/* its request, in fx.reqs */
	bool done;			/* answered with a result */
};

/* The input, read a byte or a string at a time; 0 once it is spent. */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

struct fx {
	char *dir;			/* removed when the stack is closed */
	struct config cfg;
	struct metrics metrics;
	struct store *st;
	struct urlset *us;
	struct docset *ds;
	struct accel *acc;
	struct writer *w;
	struct dispatch *d;
	struct server *srv;
	struct event_base *base;
	struct event *tick;		/* wakes the loop while waiting */
	int port;
	unsigned long execs;		/* since the stack was opened */
	/* The client's connection. */
	struct bufferevent *cli;
	bool cli_eof;
	bool cli_spent;			/* a raw frame went over it */
	/* Local oracles: canonical forms, keys, fingerprints. */
	struct urlcanon *uc;
	EVP_MD_CTX *md;
	struct simhash *sh;
	struct simhash_scratch *sc;
	/* The execution. */
	uint64_t nonce;
	/* Its hosts: its own, subdomains of it, one ending like it, one
	 * beginning like it, one whose first label begins like its; the
	 * label they share, which no other execution's has. */
	char host[64], www[80], deep[80], bad[80], evil[80], ext[80];
	char label[24];
	struct arena arena;
	struct fz_req reqs[FX_MAX_REQS];
	int nreqs;
	struct fz_ent ents[FX_MAX_REQS * FX_MAX_ITEMS];
	int nents;
	int buckets[256];
	/* Its url_forgets, and the next one's (not counted yet). */
	struct fz_forget forgets[FX_MAX_REQS + 1];
	int nforgets;
	uint64_t max_doc_id;		/* the largest id answered so far */
	uint64_t group_max_doc_id;	/* ... before this group */
	int clock_steps;
	/* Since the stack was opened: the namespaces; stats' urls_expired,
	 * the largest before this group and in it. */
	struct fz_ns ns[FX_NNS];
	uint64_t expired, group_expired;
	/* Since the stack was opened: whether a submit of digests (or a raw
	 * frame's request) in each namespace may have recorded URLs without
	 * their text, in an earlier execution or in this one; whether a
	 * store that ran full may have lost texts of the index. */
	bool digests_seen[FX_NNS], exec_digests[FX_NNS];
	bool forget_unsure;
	/* A raw frame's phase. */
	bool raw_sent;
	bool raw_decodes;		/* as a Request, here */
	uint64_t raw_id;
	Nddd__V1__Response *raw_resp;
	Nddd__V1__Response *conn_error;	/* id 0, before closing */
	uint64_t sentinel_id;
	Nddd__V1__Response *sentinel_resp;
};

static struct fx fx;
/* The daemon's wall clock (fx_clock), which the input advances between
 * groups only: every request of a group sees the same time. */
static uint64_t fx_now_ms = FX_CLOCK_START_MS;
static uint64_t next_id = 1;
static uint64_t nonce_counter;
/* Said with a failure that the input alone may not reproduce. */
static const char *fx_context;
/* FUZZ_DISPATCH_TRACE set: each request and its answer on stderr. */
static bool fx_trace;
/* Requests [group_start, fx.nreqs) of the group being built or waited
 * for. */
static int group_start;

static void fx_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

static void
fx_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_dispatch: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	if (fx_context != NULL)
		fprintf(stderr, "fuzz_dispatch: %s\n", fx_context);
	abort();
}

/* ---- The stack. ---- */

static int
rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void
fx_set(const char *section, const char *key, const char *value)
{
	const char *cause;

	if (config_set(&fx.cfg, section, key, value, &cause) == -1)
		fx_fail("[%s] %s = %s: %s", section, key, value, cause);
}

/* A loopback port nobody listens on now. */
static int
free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd, port;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		fx_fail("no free loopback port");
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

/* The daemon's wall clock: what the input made it, any thread. */
static uint64_t
fx_clock(void)
{
	return __atomic_load_n(&fx_now_ms, __ATOMIC_ACQUIRE);
}

static void
tick_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* Opens the stack as daemon/main.c's open_everything does. */
static void
fx_open(void)
{
	const char *tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	struct dispatch_deps deps;
	struct server_handler handler;
	struct docset_options dopts;
	struct store_options so;
	struct urlset_options uo;
	struct accel_options ao;
	char path[512], buf[64];
	const char *why;
	char *cause = NULL, *errors = NULL;
	FILE *f;

	memset(&fx.cfg, 0, sizeof(fx.cfg));
	memset(&fx.metrics, 0, sizeof(fx.metrics));
	snprintf(path, sizeof(path), "%s/nddd-fuzz-XXXXXX", tmp);
	if ((fx.dir = strdup(path)) == NULL || mkdtemp(fx.dir) == NULL)
		fx_fail("mkdtemp %s failed", path);
	snprintf(path, sizeof(path), "%s/tokens", fx.dir);
	if ((f = fopen(path, "w")) == NULL)
		fx_fail("cannot write %s", path);
	fprintf(f, "%s read\n%s write\n%s admin\n%s admin namespaces=%s\n",
	    fx_tokens[ROLE_READ], fx_tokens[ROLE_WRITE],
	    fx_tokens[ROLE_ADMIN], FX_NS_TOKEN, fx_ns_names[FX_NS_TOKEN_SLOT]);
	fclose(f);
	/* A fresh store: the clock starts again, only the default namespace
	 * exists. */
	__atomic_store_n(&fx_now_ms, FX_CLOCK_START_MS, __ATOMIC_RELEASE);
	memset(fx.ns, 0, sizeof(fx.ns));
	for (size_t i = 0; i < FX_NNS; i++) {
		fx.ns[i].exists_known = fx.ns[i].ttl_known = true;
		fx.ns[i].exists = i == 0;
	}
	fx.expired = fx.group_expired = 0;
	memset(fx.digests_seen, 0, sizeof(fx.digests_seen));
	memset(fx.exec_digests, 0, sizeof(fx.exec_digests));
	fx.forget_unsure = false;

	config_defaults(&fx.cfg);
	fx.port = free_port();
	snprintf(buf, sizeof(buf), "127.0.0.1:%d", fx.port);
	fx_set("server", "listen", buf);
	fx_set("server", "max_frame", "1M");
	snprintf(buf, sizeof(buf), "%d", FX_MAX_BATCH);
	fx_set("server", "max_batch", buf);
	fx_set("server", "max_inflight", "4");
	fx_set("server", "workers", "2");
	fx_set("server", "idle_timeout", "0");
	/* The model predicts the paper's answer (every document within k,
	 * nearest first); the verified answer is checked against a model of
	 * its rule in tests/unit/check_docset.c and against brute force in
	 * tests/integration/check_docs.c. */
	fx_set("near", "answer", "hamming");
	fx_set("server", "frame_timeout", "0");
	fx_set("auth", "tokens_file", path);
	snprintf(path, sizeof(path), "%s/data", fx.dir);
	fx_set("store", "data_dir", path);
	fx_set("store", "map_size", "256M");
	fx_set("store", "sync", "none");
	fx_set("store", "relaxed_sync_interval", "0");
	fx_set("urls", "capacity", "1024");
	fx_set("urls", "journal_entries", "64");
	fx_set("urls", "segment_records", "8");
	fx_set("urls", "host_index", "yes");
	fx_set("simhash", "stopwords", "none");
	fx_set("accel", "accelerator", "cpu");
	fx_set("accel", "threads", "1");
	fx_set("accel", "batch_docs", "4");
	snprintf(buf, sizeof(buf), "%d", FX_K);
	fx_set("near", "k", buf);
	snprintf(buf, sizeof(buf), "%d", FX_MAX_RESULTS);
	fx_set("near", "max_results", buf);
	fx_set("log", "level", "error");
	if (config_validate(&fx.cfg, &why) == -1)
		fx_fail("config: %s", why);
	log_init(fx.cfg.log_level, "fuzz_dispatch");

	so = (struct store_options){
		.dir = fx.cfg.data_dir,
		.map_size = fx.cfg.map_size,
		.sync = fx.cfg.sync,
	};
	uo = (struct urlset_options){
		.capacity = fx.cfg.capacity,
		.journal_entries = fx.cfg.journal_entries,
		.segment_records = (uint32_t)fx.cfg.segment_records,
		.sync = fx.cfg.sync == STORE_SYNC_FULL,
		.relaxed_sync_ms = fx.cfg.relaxed_sync_interval_ms,
		.host_index = fx.cfg.host_index,
	};
	if ((fx.st = store_open(&so, &cause)) == NULL)
		fx_fail("store: %s", cause ? cause : "?");
	if ((fx.us = urlset_open(fx.st, fx.cfg.data_dir, &uo, &cause)) ==
	    NULL)
		fx_fail("URL set: %s", cause ? cause : "?");
	if ((fx.base = event_base_new()) == NULL ||
	    urlset_start(fx.us, fx.base) == -1)
		fx_fail("cannot start the URL writer");
	if (simhash_simd_select(fx.cfg.simd, &cause) == -1)
		fx_fail("simd: %s", cause ? cause : "?");
	dopts = (struct docset_options){
		.k = (unsigned)fx.cfg.near_k,
		.blocks = (unsigned)fx.cfg.near_blocks,
		.term_hash = fx.cfg.term_hash,
		.stopwords_digest = "none",
		.containment = (float)fx.cfg.near_containment,
		.resemblance = (float)fx.cfg.near_resemblance,
	};
	if ((fx.ds = docset_open(fx.st, &dopts, &cause)) == NULL)
		fx_fail("documents: %s", cause ? cause : "?");
	accel_options_defaults(&ao);
	snprintf(ao.accelerator, sizeof(ao.accelerator), "%s",
	    fx.cfg.accelerator);
	ao.threads = (unsigned)fx.cfg.accel_threads;
	ao.batch_docs = (unsigned)fx.cfg.accel_batch_docs;
	ao.max_failures = (unsigned)fx.cfg.accel_max_failures;
	if ((fx.acc = accel_new(fx.base, &ao, fx.cfg.term_hash, NULL,
	    &cause)) == NULL)
		fx_fail("accelerator: %s", cause ? cause : "?");
	if ((fx.w = writer_new(fx.st, fx.base)) == NULL)
		fx_fail("cannot start the store writer");
	deps = (struct dispatch_deps){
		.st = fx.st,
		.us = fx.us,
		.ds = fx.ds,
		.w = fx.w,
		.acc = fx.acc,
		.metrics = &fx.metrics,
		.auth = auth_load(fx.cfg.tokens_file, &errors),
	};
	if (deps.auth == NULL)
		fx_fail("tokens: %s", errors ? errors : "?");
	if ((fx.d = dispatch_new(&fx.cfg, fx.base, &deps)) == NULL)
		fx_fail("cannot start the request workers");
	dispatch_server_handler(fx.d, &handler);
	if ((fx.srv = server_new(fx.base, &fx.cfg, &handler, &fx.metrics,
	    &cause)) == NULL)
		fx_fail("server: %s", cause ? cause : "?");
	dispatch_set_server(fx.d, fx.srv);
	fx.tick = event_new(fx.base, -1, EV_PERSIST, tick_cb, NULL);
	if (fx.tick == NULL ||
	    event_add(fx.tick, &(struct timeval){ 1, 0 }) == -1)
		fx_fail("cannot arm the loop's timer");
	fx.execs = 0;
}

static void
fx_disconnect(void)
{
	if (fx.cli != NULL)
		bufferevent_free(fx.cli);
	fx.cli = NULL;
}

/* Closes the stack as main.c's close_everything does, and its directory. */
static void
fx_close(void)
{
	time_t t0 = time(NULL);

	fx_disconnect();
	while (dispatch_pending(fx.d) > 0) {
		event_base_loop(fx.base, EVLOOP_ONCE);
		if (time(NULL) - t0 > FX_REPLY_TIMEOUT_S)
			fx_fail("%zu requests still pending at close",
			    dispatch_pending(fx.d));
	}
	urlset_stop(fx.us);
	accel_free(fx.acc);
	dispatch_free(fx.d);
	writer_stop(fx.w);
	server_free(fx.srv);
	writer_free(fx.w);
	docset_free(fx.ds);
	event_free(fx.tick);
	event_base_free(fx.base);
	urlset_free(fx.us);
	store_close(fx.st);
	config_clear(&fx.cfg);
	nftw(fx.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(fx.dir);
	fx.dir = NULL;
}

static void
fx_at_exit(void)
{
	if (fx.dir != NULL)
		fx_close();
}

/* ---- The client. ---- */

/* The request a reply answers, by id; NULL if none of this execution's. */
static struct fz_req *
req_of(uint64_t id)
{
	for (int i = 0; i < fx.nreqs; i++)
		if (fx.reqs[i].id == id)
			return &fx.reqs[i];
	return NULL;
}

static void
take_reply(Nddd__V1__Response *r)
{
	struct fz_req *q;

	if (fx.raw_sent) {
		if (fx.raw_decodes && r->id == fx.raw_id &&
		    fx.raw_resp == NULL) {
			fx.raw_resp = r;
			return;
		}
		if (r->id == fx.sentinel_id && fx.sentinel_resp == NULL) {
			fx.sentinel_resp = r;
			return;
		}
		if (r->id == 0 && fx.conn_error == NULL) {
			fx.conn_error = r;
			return;
		}
	}
	if ((q = req_of(r->id)) == NULL)
		fx_fail("a reply to id %llu, which no request has (or not "
		    "any more)", (unsigned long long)r->id);
	if (q->resp != NULL)
		fx_fail("a second reply to request %llu (%s)",
		    (unsigned long long)q->id, fz_op_names[q->op]);
	q->resp = r;
}

static void
cli_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t *p;
	uint32_t len;
	enum frame_status st;

	(void)arg;
	while ((st = frame_peek(in, 64 << 20, &len)) == FRAME_READY) {
		Nddd__V1__Response *r;

		if ((p = malloc(len + 1)) == NULL)
			fx_fail("no memory for a reply of %u bytes", len);
		frame_copy(in, len, p);
		r = nddd__v1__response__unpack(NULL, len, p);
		free(p);
		if (r == NULL)
			fx_fail("a reply of %u bytes is not a Response", len);
		frame_consume(in, len);
		take_reply(r);
	}
	if (st == FRAME_OVERSIZED)
		fx_fail("a reply frame of %u bytes", len);
}

static void
cli_event_cb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)arg;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		fx.cli_eof = true;
}

static void
fx_connect(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)fx.port);
	if ((fx.cli = bufferevent_socket_new(fx.base, -1,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		fx_fail("bufferevent_socket_new failed");
	bufferevent_setcb(fx.cli, cli_read_cb, NULL, cli_event_cb, NULL);
	bufferevent_enable(fx.cli, EV_READ | EV_WRITE);
	if (bufferevent_socket_connect(fx.cli, (struct sockaddr *)&sin,
	    sizeof(sin)) == -1)
		fx_fail("cannot connect to 127.0.0.1:%d", fx.port);
	fx.cli_eof = false;
	fx.cli_spent = false;
}

/* Runs the loop until done() holds, or fails after a long wait. */
static void
fx_wait(bool (*done)(void), const char *what)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!done()) {
		event_base_loop(fx.base, EVLOOP_ONCE);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > FX_REPLY_TIMEOUT_S)
			fx_fail("no end to waiting for %s", what);
	}
}

/* ---- Reading the input. ---- */

static uint8_t
in_byte(struct fz_in *in)
{
	if (in->n == 0)
		return 0;
	in->n--;
	return *in->p++;
}

/* Up to max bytes of the input, their number given by the input. */
static size_t
in_string(struct fz_in *in, size_t max, const uint8_t **out)
{
	size_t len = in_byte(in) % (max + 1);

	if (len > in->n)
		len = in->n;
	*out = in->p;
	in->p += len;
	in->n -= len;
	return len;
}

static void *
fz_alloc(size_t size)
{
	void *p = arena_alloc(&fx.arena, size ? size : 1);

	if (p == NULL)
		fx_fail("out of memory");
	return p;
}

/* ---- The model. ---- */

/*
 * The host of URL url[0..len), as a canonical URL carries it: between
 * "://" (and any user info) and the port or the path; false if there is
 * none, or no path after it.
 */
static bool
url_host(const char *url, size_t len, const char **host, size_t *hlen)
{
	const char *end = url + len, *p = memchr(url, ':', len), *h, *q;

	if (p == NULL || end - p < 3 || p[1] != '/' || p[2] != '/')
		return false;
	h = p + 3;
	for (q = h; q < end && *q != '/' && *q != '?' && *q != '#'; q++)
		if (*q == '@')
			h = q + 1;
	if (q == end)
		return false;
	end = q;
	if (h < end && *h == '[') {
		if ((q = memchr(h, ']', (size_t)(end - h))) == NULL)
			return false;
		q++;
	} else
		for (q = h; q < end && *q != ':'; q++)
			;
	if (q == h)
		return false;
	*host = h;
	*hlen = (size_t)(q - h);
	return true;
}

/* Whether host[0..len) is one of this execution's: it has its label. */
static bool
own_host(const char *host, size_t len)
{
	return memmem(host, len, fx.label, strlen(fx.label)) != NULL;
}

/* Whether url_forget fg takes the URL of e (in its namespace). */
static bool
forget_takes(const struct fz_forget *fg, const struct fz_ent *e)
{
	const char *h;
	size_t hl;

	if (fg->host == NULL)
		return e->canon_len >= fg->plen &&
		    memcmp(e->canon, fg->prefix, fg->plen) == 0;
	if (!url_host(e->canon, e->canon_len, &h, &hl))
		return false;
	if (hl == fg->hlen && memcmp(h, fg->host, hl) == 0)
		return true;
	return fg->subdomains && hl > fg->hlen &&
	    h[hl - fg->hlen - 1] == '.' &&
	    memcmp(h + hl - fg->hlen, fg->host, fg->hlen) == 0;
}

/* Whether u's record, while it lives, may be out of the host index. */
static bool
url_dig(const struct fz_url *u)
{
	return u->dig || fx.forget_unsure;
}

/* u has no record: deleted, or never seen. */
static void
url_gone(struct fz_url *u)
{
	memset(u, 0, offsetof(struct fz_url, touch));
	u->known = u->times_known = true;
}

/*
 * A URL the execution meets for the first time, e, after url_forgets:
 * one of its group changes it, one of an earlier group deleted it unless
 * its record may be out of the index.
 */
static void
forget_new_ent(struct fz_ent *e)
{
	for (int f = 0; f < fx.nforgets; f++) {
		const struct fz_forget *fg = &fx.forgets[f];
		struct fz_url *u = &e->url[fg->slot];

		if (!forget_takes(fg, e))
			continue;
		if (fg->req >= group_start) {
			u->touch++;
			u->mut++;
		} else if (fg->done && !url_dig(u))
			url_gone(u);
	}
}

/*
 * The entry of key, made if new: known empty (in every namespace) for a
 * URL of one of this execution's hosts, unknown otherwise, but where a
 * url_forget deleted it.
 */
static int
ent_of(const uint8_t key[16], const char *canon, size_t canon_len)
{
	struct fz_ent *e;
	const char *h;
	size_t hl;
	bool own;
	int i;

	for (i = fx.buckets[key[0]]; i != -1; i = fx.ents[i].next)
		if (memcmp(fx.ents[i].key, key, 16) == 0)
			return i;
	if (fx.nents == (int)(sizeof(fx.ents) / sizeof(fx.ents[0])))
		fx_fail("too many URLs in one execution");
	i = fx.nents++;
	e = &fx.ents[i];
	memset(e, 0, sizeof(*e));
	memcpy(e->key, key, 16);
	e->canon = canon;
	e->canon_len = canon_len;
	e->next = fx.buckets[key[0]];
	e->last_req = -1;
	fx.buckets[key[0]] = i;
	own = url_host(canon, canon_len, &h, &hl) && own_host(h, hl);
	for (size_t s = 0; s < FX_NNS; s++) {
		if (own) {
			e->url[s].known = e->url[s].times_known = true;
			e->doc[s].known = true;
			e->doc[s].present = false;
		}
		/* Another's may have been recorded from its digest in an
		 * earlier execution. */
		e->url[s].dig = !own && fx.digests_seen[s];
		e->url[s].txt = !own;
		e->doc[s].last_req = -1;
	}
	forget_new_ent(e);
	return i;
}

/* The key of a canonical URL, as the daemon derives it: its MD5. */
static void
md5(const char *s, size_t len, uint8_t out[16])
{
	unsigned int mdlen;

	if (!EVP_DigestInit_ex(fx.md, EVP_md5(), NULL) ||
	    !EVP_DigestUpdate(fx.md, s, len) ||
	    !EVP_DigestFinal_ex(fx.md, out, &mdlen) || mdlen != 16)
		fx_fail("MD5 failed");
}

/* Canonicalizes url[0..len) for item it (valid, and its entry). */
static void
key_item(const char *url, size_t len, struct fz_item *it)
{
	const char *c, *cause;
	size_t clen;
	uint8_t key[16];
	char *copy;

	it->valid = false;
	it->ent = -1;
	if ((c = urlcanon_canonicalize(fx.uc, url, len, &clen, &cause)) ==
	    NULL)
		return;
	copy = fz_alloc(clen + 1);
	memcpy(copy, c, clen + 1);
	md5(copy, clen, key);
	it->valid = true;
	it->ent = ent_of(key, copy, clen);
}

/* A copy of s in upper case, in the arena. */
static char *
upper_dup(const char *s)
{
	size_t len = strlen(s);
	char *u = fz_alloc(len + 1);

	for (size_t i = 0; i <= len; i++)
		u[i] = s[i] >= 'a' && s[i] <= 'z' ? (char)(s[i] - 'a' + 'A') :
		    s[i];
	return u;
}

/*
 * The URL of host and path in one of 8 spellings, in the arena: 0 to 3
 * spell the same canonical URL, 4 to 7 other schemes or ports (the last
 * two spell 4's and 0's).
 */
static char *
spell_url(unsigned spelling, const char *host, const char *path)
{
	char *s = fz_alloc(strlen(host) + strlen(path) + 32);

	switch (spelling & 7) {
	case 0:
		sprintf(s, "http://%s%s", host, path);
		break;
	case 1:
		sprintf(s, "HTTP://%s:80%s#top", upper_dup(host), path);
		break;
	case 2:
		sprintf(s, "http://%s/.%s", host, path);
		break;
	case 3:
		sprintf(s, "  http://%s%s\t", host, path);
		break;
	case 4:
		sprintf(s, "https://%s%s", host, path);
		break;
	case 5:
		sprintf(s, "http://%s:8080%s", host, path);
		break;
	case 6:
		sprintf(s, "HTTPS://%s:443%s", upper_dup(host), path);
		break;
	default:
		sprintf(s, "http://%s:80%s", host, path);
		break;
	}
	return s;
}

/*
 * One URL from the input: a dictionary URL of this execution's host or of
 * a shared one, or of a subdomain of either, in one of several spellings
 * of the same canonical URL; or a path of input bytes on one of this
 * execution's hosts (bits 2, 3 and 6), over http or https, on the default
 * port or another (bits 4 and 5); or input bytes.
 */
static void
gen_url(struct fz_in *in, ProtobufCBinaryData *out, struct fz_item *it)
{
	static const unsigned spellings[4] = { 0, 4, 5, 6 };
	uint8_t b = in_byte(in);
	const char *path = fx_paths[(b >> 2) % FX_NPATHS];
	bool own = !(b & 1);
	const char *host = own ? fx.host : "example.com";
	const char *hosts[8] = { fx.host, fx.www, fx.bad, fx.evil, fx.ext,
	    fx.deep, fx.host, fx.www };
	const uint8_t *raw;
	size_t len, rawlen, plen;
	char *s, *pre;

	if ((b & 3) == 3) {
		/* Anything at all. */
		rawlen = in_string(in, 64, &raw);
		s = fz_alloc(rawlen);
		memcpy(s, raw, rawlen);
		len = rawlen;
	} else if ((b & 3) == 2) {
		pre = spell_url(spellings[(b >> 4) & 3],
		    hosts[((b >> 2) & 3) | ((b >> 4) & 4)], "/");
		plen = strlen(pre);
		rawlen = in_string(in, 32, &raw);
		len = plen + rawlen;
		s = fz_alloc(len + 1);
		memcpy(s, pre, plen);
		memcpy(s + plen, raw, rawlen);
	} else {
		if (b & 0x80)
			host = own ? fx.www : "www.example.com";
		s = spell_url((b >> 5) & 3, host, path);
		len = strlen(s);
	}
	out->data = (uint8_t *)s;
	out->len = len;
	key_item(s, len, it);
}

/* A document body from the input; *fp and the return value are the
 * local simhash's. */
static enum simhash_status
gen_body(struct fz_in *in, ProtobufCBinaryData *body,
    Nddd__V1__DocFormat *format, uint64_t *fp)
{
	static const char *const empty[] = { "", "  \n ", "<p> </p>" };
	uint8_t b = in_byte(in);
	const char *text = fx_texts[(b >> 2) % FX_NTEXTS];
	bool html = (b >> 5) & 1;
	const uint8_t *raw;
	size_t rawlen = 0, len;
	char *s;

	switch (b & 3) {
	case 0:
	case 1:
		if ((b & 3) == 1)
			rawlen = in_string(in, 32, &raw);
		s = fz_alloc(strlen(text) + rawlen + 64);
		sprintf(s, html ? "<html><body><p>%s</p>" : "%s ", text);
		len = strlen(s);
		if (rawlen > 0)
			memcpy(s + len, raw, rawlen);
		body->len = len + rawlen;
		break;
	case 2:
		rawlen = in_string(in, 64, &raw);
		s = fz_alloc(rawlen);
		memcpy(s, raw, rawlen);
		body->len = rawlen;
		break;
	default:
		s = (char *)empty[(b >> 2) % 3];
		body->len = strlen(s);
		break;
	}
	body->data = (uint8_t *)s;
	*format = html ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;
	*fp = 0;
	return simhash_compute(fx.sh, fx.sc, html ? SIMHASH_INPUT_HTML :
	    SIMHASH_INPUT_TEXT, body->data, body->len, fp);
}

/* The fingerprint of text i, as plain text. */
static uint64_t
text_fp(size_t i)
{
	const char *t = fx_texts[i % FX_NTEXTS];
	uint64_t fp = 0;

	simhash_compute(fx.sh, fx.sc, SIMHASH_INPUT_TEXT, t, strlen(t), &fp);
	return fp;
}

/* A document stored in namespace slot s creates the namespace, as a
 * URL submit does. */
static void
touch_doc_store(int s)
{
	fx.ns[s].submits++;
}

/*
 * A doc_batch touches the document of each valid URL in its namespace,
 * and changes it when one of its documents under that URL is stored (has
 * terms, not query_only, no refused group); the changes are counted
 * first, since a document counts once per request.
 */
static void
touch_doc_batch(struct fz_req *q)
{
	int qi = (int)(q - fx.reqs);

	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < q->n; i++) {
			const struct fz_item *it = &q->items[i];
			bool mut = !it->query_only && !it->empty &&
			    !it->bad_group;
			struct fz_doc *d;

			if (!it->valid || it->ns < 0 || mut != (pass == 0))
				continue;
			if (mut)
				touch_doc_store(it->ns);
			d = &fx.ents[it->ent].doc[it->ns];
			if (d->last_req == qi)
				continue;
			d->last_req = qi;
			d->touch++;
			d->mut += mut;
		}
}

/* Counts request q as touching (and maybe changing) each valid item. */
static void
touch(struct fz_req *q, bool url, bool mutation)
{
	int qi = (int)(q - fx.reqs);
	bool any = false;

	for (size_t i = 0; i < q->n; i++) {
		struct fz_ent *e;
		struct fz_url *u;
		struct fz_doc *d;

		if (!q->items[i].valid)
			continue;
		any = true;
		e = &fx.ents[q->items[i].ent];
		if (!url) {
			d = &e->doc[q->items[i].ns];
			if (q->op == FZ_DOC_SUBMIT)
				touch_doc_store(q->items[i].ns);
			if (d->last_req == qi)
				continue;
			d->last_req = qi;
			d->touch++;
			d->mut += mutation;
			continue;
		}
		if (e->last_req == qi)
			continue;
		e->last_req = qi;
		u = &e->url[q->ns];
		u->touch++;
		u->mut += mutation;
		u->submits += q->op == FZ_URL_SUBMIT;
		u->dsubmits += q->op == FZ_URL_SUBMIT && q->digests;
	}
	/* A submit with no URL to write is answered without reaching its
	 * namespace, which it does not create then. */
	if (url && q->op == FZ_URL_SUBMIT && any)
		fx.ns[q->ns].submits++;
}

/*
 * Counts url_forget q as changing each URL it takes that the model knows
 * (those met later in its group: forget_new_ent), and follows it.
 */
static void
touch_forget(struct fz_req *q)
{
	struct fz_forget *fg = &fx.forgets[q->forget];

	fg->req = (int)(q - fx.reqs);
	for (int i = 0; i < fx.nents; i++)
		if (forget_takes(fg, &fx.ents[i])) {
			fx.ents[i].url[fg->slot].touch++;
			fx.ents[i].url[fg->slot].mut++;
		}
	fx.nforgets++;
}

/* Counts namespace request q (set or drop) in its namespace's group. */
static void
touch_ns(const struct fz_req *q)
{
	struct fz_ns *g = &fx.ns[q->ns];

	if (q->op == FZ_NS_DROP) {
		g->drops++;
		return;
	}
	if (g->sets++ == 0) {
		g->set_ttl_same = true;
		g->set_ttl_ms = q->ttl_ms;
	} else if (g->set_ttl_ms != q->ttl_ms)
		g->set_ttl_same = false;
}

static enum role
role_needed(const struct fz_req *q)
{
	switch (q->op) {
	case FZ_DOC_BATCH:
		for (size_t i = 0; i < q->n; i++)
			if (!q->items[i].query_only)
				return ROLE_WRITE;
		return ROLE_READ;
	case FZ_URL_SUBMIT:
	case FZ_DOC_SUBMIT:
		return ROLE_WRITE;
	case FZ_URL_DELETE:
	case FZ_VERIFY:
	case FZ_DOC_DELETE:
	case FZ_NO_OP:
	case FZ_NS_SET:
	case FZ_NS_DROP:
	case FZ_URL_FORGET:
		return ROLE_ADMIN;
	default:
		return ROLE_READ;
	}
}

/*
 * The role FX_NS_TOKEN has for q: its own in its namespace, none in the
 * others, read at most on what spans them all; a doc_batch needs every
 * one of its documents' namespaces (one of no documents spans none).
 */
static enum role
ns_token_role(const struct fz_req *q)
{
	switch (q->op) {
	case FZ_STATS:
	case FZ_VERIFY:
	case FZ_NO_OP:
		return ROLE_READ;
	case FZ_DOC_BATCH:
		if (q->n == 0)
			return ROLE_READ;
		for (size_t i = 0; i < q->n; i++)
			if (q->items[i].ns != FX_NS_TOKEN_SLOT)
				return ROLE_NONE;
		return ROLE_ADMIN;
	default:
		return q->ns == FX_NS_TOKEN_SLOT ? ROLE_ADMIN : ROLE_NONE;
	}
}

/*
 * A namespace (*name, and q's slot, -1 if it cannot be one) and a time to
 * live from a byte: bits 0-2 the name, 3-5 the time to live, 7 which of
 * the bad ones when bad.
 */
static void
gen_ns(uint8_t b, struct fz_req *q, const char **name, uint64_t *ttl_s)
{
	q->ns = fx_ns_pick[b & 7];
	*name = q->ns >= 0 ? fx_ns_names[q->ns] : fx_ns_bad[b >> 7];
	q->ns_name = *name;
	*ttl_s = fx_ttls[(b >> 3) & 7];
	if (*ttl_s > FX_TTL_MAX && (b & 0x80))
		*ttl_s = UINT64_MAX;
	q->ttl_ms = *ttl_s <= FX_TTL_MAX ? *ttl_s * 1000 : 0;
}

/*
 * A document's namespace from a byte: bits 0-2 the name (a slot, or -1
 * for one that cannot be), 7 which of the bad ones; *name the name to
 * send.
 */
static int
gen_doc_ns(uint8_t b, char **name)
{
	int s = fx_ns_pick[b & 7];

	*name = (char *)(s >= 0 ? fx_ns_names[s] : fx_ns_bad[b >> 7]);
	return s;
}

/* ---- Building requests. ---- */

/*
 * The group fields of a document to store, from one input byte: mostly
 * none; a group given (an id of another shard's, as sharded clients give
 * them); new_group; or a refused pair (both, or a group of 2^63 or more).
 * A query-only document's are ignored by the daemon.
 */
static void
gen_group(uint8_t b, Nddd__V1__DocSubmit *ds, struct fz_item *it)
{
	it->join = 0;
	it->new_group = it->bad_group = false;
	switch (b % 8) {
	case 5:
		it->join = ds->group = UINT64_C(2) << 48 | (b >> 3);
		break;
	case 6:
		it->new_group = ds->new_group = true;
		break;
	case 7:
		if (b & 8) {
			ds->group = UINT64_C(1) << 63 | (b >> 4);
		} else {
			ds->group = 5;
			ds->new_group = true;
		}
		it->bad_group = !ds->query_only;
		break;
	default:
		break;
	}
	if (ds->query_only) {
		it->join = 0;
		it->new_group = false;
	}
}

/*
 * A doc_batch of up to FX_MAX_BATCH_DOCS documents, each stored or
 * query_only, with what each must get.
 */
static Nddd__V1__DocBatch *
gen_doc_batch(struct fz_in *in, struct fz_req *q)
{
	Nddd__V1__DocBatch *db = fz_alloc(sizeof(*db));
	size_t n = in_byte(in) % (FX_MAX_BATCH_DOCS + 1);
	uint8_t b;

	nddd__v1__doc_batch__init(db);
	q->n = n;
	q->items = fz_alloc((n + 1) * sizeof(*q->items));
	db->n_docs = n;
	db->docs = fz_alloc((n + 1) * sizeof(*db->docs));
	for (size_t i = 0; i < n; i++) {
		Nddd__V1__DocSubmit *ds = fz_alloc(sizeof(*ds));
		struct fz_item *it = &q->items[i];

		nddd__v1__doc_submit__init(ds);
		gen_url(in, &ds->url, it);
		it->empty = gen_body(in, &ds->body, &ds->format, &it->fp) ==
		    SIMHASH_EMPTY_DOCUMENT;
		b = in_byte(in);
		it->query_only = b & 1;
		ds->query_only = it->query_only;
		it->ns = gen_doc_ns(b >> 1 | (b & 0x80), &ds->namespace_);
		gen_group(in_byte(in), ds, it);
		db->docs[i] = ds;
	}
	return db;
}

/* A URL batch for q from the input, with the error it must get. */
static Nddd__V1__UrlBatch *
gen_batch(struct fz_in *in, struct fz_req *q)
{
	Nddd__V1__UrlBatch *b = fz_alloc(sizeof(*b));
	uint8_t nb = in_byte(in), mode = in_byte(in), nsb = in_byte(in);
	size_t n = nb % (FX_MAX_ITEMS + 1);
	unsigned form = mode & 15, dur = mode >> 4;
	bool digests = form >= 10, wrong_canon = form == 13,
	    odd_length = form == 14, both = form == 15;
	ProtobufCBinaryData *urls;
	const char *ns;

	nddd__v1__url_batch__init(b);
	/* Its namespace, time to live and whether it asks for times. */
	gen_ns(nsb, q, &ns, &b->ttl_seconds);
	b->namespace_ = (char *)ns;
	b->with_times = q->with_times = nsb & 0x40;
	q->n = n;
	q->items = fz_alloc(n * sizeof(*q->items));
	urls = fz_alloc(n * sizeof(*urls));
	for (size_t i = 0; i < n; i++) {
		if (n > FX_MAX_BATCH) {
			/* Refused whole: no need to spend the input. */
			urls[i].data = (uint8_t *)"http://example.com/";
			urls[i].len = strlen("http://example.com/");
			q->items[i] = (struct fz_item){ .valid = false, .ent = -1 };
			continue;
		}
		gen_url(in, &urls[i], &q->items[i]);
	}
	b->durability = dur < 14 ? (Nddd__V1__Durability)(dur % 3) :
	    (Nddd__V1__Durability)(dur == 14 ? 3 : 1000);
	if (!digests || both) {
		b->n_urls = n;
		b->urls = urls;
	}
	if (digests && n > 0) {
		/* The items' keys, or input bytes where it is no URL. */
		uint8_t *d = fz_alloc(n * 16 + 1);

		for (size_t i = 0; i < n; i++) {
			if (q->items[i].valid)
				memcpy(d + i * 16,
				    fx.ents[q->items[i].ent].key, 16);
			else {
				uint8_t key[16];

				for (int j = 0; j < 16; j++)
					key[j] = in_byte(in);
				memcpy(d + i * 16, key, 16);
				if (n <= FX_MAX_BATCH) {
					q->items[i].valid = true;
					q->items[i].ent = ent_of(key, "", 0);
				}
			}
		}
		b->digests.data = d;
		b->digests.len = n * 16 + odd_length;
		b->canon = (char *)(wrong_canon ? "urlcanon/0 "
		    "strip_session_ids=no strip_tracking=no sort_query=no" :
		    urlset_canon_id(fx.us));
	}
	/* Digests recorded in a namespace leave URLs out of the host index,
	 * which the executions to come cannot tell of theirs. */
	q->digests = b->digests.len > 0;
	if (q->op == FZ_URL_SUBMIT && q->digests && q->ns >= 0)
		fx.exec_digests[q->ns] = true;
	/* What urlreq_validate, then the handler, refuse, in their order. */
	if (b->n_urls > 0 && b->digests.len > 0)
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
	else if (b->digests.len % 16 != 0)
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
	else if (n > FX_MAX_BATCH)
		q->expect = NDDD__V1__CODE__RESOURCE_EXHAUSTED;
	else if (dur >= 14)
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
	else if (q->ns < 0 || b->ttl_seconds > FX_TTL_MAX)
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
	else if (b->digests.len > 0 && wrong_canon)
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
	return b;
}

/* A namespace_set or namespace_drop for q, with the error it must get. */
static void
gen_namespace(struct fz_in *in, struct fz_req *q, Nddd__V1__Request *m)
{
	const char *name;
	uint64_t ttl_s;

	gen_ns(in_byte(in), q, &name, &ttl_s);
	if (q->op == FZ_NS_SET) {
		m->op_case = NDDD__V1__REQUEST__OP_NAMESPACE_SET;
		m->namespace_set = fz_alloc(sizeof(*m->namespace_set));
		nddd__v1__namespace_set__init(m->namespace_set);
		m->namespace_set->name = (char *)name;
		m->namespace_set->default_ttl_seconds = ttl_s;
	} else {
		m->op_case = NDDD__V1__REQUEST__OP_NAMESPACE_DROP;
		m->namespace_drop = fz_alloc(sizeof(*m->namespace_drop));
		nddd__v1__namespace_drop__init(m->namespace_drop);
		m->namespace_drop->name = (char *)name;
		q->ttl_ms = 0;
	}
	if (q->ns < 0 || (q->op == FZ_NS_SET && ttl_s > FX_TTL_MAX) ||
	    (q->op == FZ_NS_DROP && q->ns == 0))
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
}

/*
 * Whether h[0..len) is a host url_forget takes: printable ASCII, no
 * spaces, at most URLHOSTS_HOST_MAX bytes, and all of it the host of
 * "http://h/" (no user info, port, path, query or fragment).
 */
static bool
host_ok(const char *h, size_t len)
{
	char url[URLHOSTS_HOST_MAX + 16];
	const char *uh;
	size_t ul;

	if (len == 0 || len > URLHOSTS_HOST_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)h[i] <= ' ' || (unsigned char)h[i] >= 0x7f ||
		    h[i] == '@')
			return false;
	snprintf(url, sizeof(url), "http://%.*s/", (int)len, h);
	return url_host(url, strlen(url), &uh, &ul) && ul == len;
}

/*
 * A url_forget's host from byte c (and maybe the input), in the arena:
 * this execution's hosts in lower or upper case, the shared one, a
 * subdomain, parents, look-alikes; hosts with a port, a path, spaces,
 * user info or a scheme, too long or with bytes above ASCII; input bytes.
 * *ok: whether url_forget takes it.
 */
static const char *
gen_forget_host(struct fz_in *in, uint8_t c, bool *ok)
{
	const uint8_t *raw;
	size_t len;
	char *s;

	*ok = true;
	switch (c & 15) {
	case 0:
		return fx.host;
	case 1:
		return upper_dup(fx.host);
	case 2:
		return "example.com";
	case 3:
		return "EXAMPLE.COM";
	case 4:
		return fx.www;
	case 5:
		/* The parent of every execution's own host. */
		return "example";
	case 6:
		return "www.example.com";
	case 7:
		return "com";
	case 8:
		return fx.evil;
	case 9:
		return fx.bad;
	case 14:
		switch ((c >> 4) & 3) {
		case 0:
			return "[::1]";
		case 1:
			return "127.0.0.1";
		case 2:
			*ok = false;
			return "[::1]:80";
		default:
			*ok = false;
			return "[::1";
		}
	case 15:
		len = in_string(in, 24, &raw);
		s = fz_alloc(len + 1);
		memcpy(s, raw, len);
		s[len] = '\0';
		/* Sent up to its first NUL. */
		*ok = host_ok(s, strlen(s));
		return s;
	default:
		break;
	}
	*ok = false;
	s = fz_alloc(2 * URLHOSTS_HOST_MAX);
	switch (c & 15) {
	case 10:
		sprintf(s, "%s:80", fx.host);
		break;
	case 11:
		sprintf(s, "%s/a", fx.host);
		break;
	case 12:
		switch ((c >> 4) & 3) {
		case 0:
			sprintf(s, " %s", fx.host);
			break;
		case 1:
			sprintf(s, "www %s", fx.host);
			break;
		case 2:
			sprintf(s, "user@%s", fx.host);
			break;
		default:
			sprintf(s, "http://%s", fx.host);
			break;
		}
		break;
	default:
		switch ((c >> 4) & 3) {
		case 0:
		case 1:
			/* The longest host there is, and one byte more. */
			len = URLHOSTS_HOST_MAX - strlen(fx.host) - 1 +
			    ((c >> 4) & 1);
			memset(s, 'a', len);
			sprintf(s + len, ".%s", fx.host);
			*ok = ((c >> 4) & 1) == 0;
			break;
		case 2:
			sprintf(s, "caf\xc3\xa9.%s", fx.host);
			break;
		default:
			/* None: with no prefix, neither is named. */
			s[0] = '\0';
			break;
		}
		break;
	}
	return s;
}

/*
 * A url_forget's prefix from byte c (and maybe the input), in the arena:
 * for kind 3 or 4, a dictionary URL of one of the hosts, cut anywhere in
 * its path (bit 7), in one of the dictionary's spellings or in another
 * scheme or port; for kind 5, input bytes, a path of input bytes, and
 * prefixes that are no URL or too long for the index, or take nothing.
 */
static const char *
gen_forget_prefix(struct fz_in *in, unsigned kind, uint8_t c, size_t *len)
{
	const char *hosts[4] = { fx.host, fx.www, "example.com", fx.bad };
	const uint8_t *raw;
	char *s, *path;
	const char *fixed;
	size_t n, rawlen;

	if (kind != 5) {
		path = fz_alloc(strlen(fx_paths[(c >> 4) & 7]) + 1);
		strcpy(path, fx_paths[(c >> 4) & 7]);
		if (c & 0x80)
			path[in_byte(in) % (strlen(path) + 1)] = '\0';
		s = spell_url((kind == 4 ? 4 : 0) + ((c >> 2) & 3),
		    hosts[c & 3], path);
		*len = strlen(s);
		return s;
	}
	switch (c & 7) {
	case 0:
		*len = in_string(in, 64, &raw);
		s = fz_alloc(*len);
		memcpy(s, raw, *len);
		return s;
	case 1:
		path = spell_url(0, hosts[(c >> 3) & 3], "/");
		rawlen = in_string(in, 32, &raw);
		*len = strlen(path) + rawlen;
		s = fz_alloc(*len);
		memcpy(s, path, strlen(path));
		memcpy(s + strlen(path), raw, rawlen);
		return s;
	case 2:
		s = fz_alloc(strlen(fx.host) + 16);
		sprintf(s, "ftp://%s/", fx.host);
		break;
	case 3:
		fixed = "not a url";
		*len = strlen(fixed);
		return fixed;
	case 4:
		/* Around the longest prefix the index takes of this host. */
		n = 420 + in_byte(in) % 32;
		s = fz_alloc(strlen(fx.host) + n + 16);
		n = (size_t)sprintf(s, "http://%s/", fx.host) + n;
		memset(s + strlen(s), 'a', n - strlen(s));
		s[n] = '\0';
		break;
	case 5:
		s = fz_alloc(strlen(fx.host) + 16);
		sprintf(s, "mailto:x@%s", fx.host);
		break;
	case 6:
		fixed = "http:///a";
		*len = strlen(fixed);
		return fixed;
	default:
		s = fz_alloc(strlen(fx.host) + 16);
		sprintf(s, "http://%s", fx.host);
		break;
	}
	*len = strlen(s);
	return s;
}

/*
 * A url_forget for q from the input, with the error it must get, and what
 * the model will follow of it when it is valid (fx.forgets[fx.nforgets],
 * counted once its request goes: touch_forget).  A byte: bits 0-2 the
 * namespace, 7 which bad one; bits 3-5 what it names: a host (0), with
 * subdomains (1, 2), a prefix (3, 4, 5), both (6), neither or a prefix
 * with subdomains (7).  Another byte chooses within that.
 */
static Nddd__V1__UrlForget *
gen_forget(struct fz_in *in, struct fz_req *q)
{
	Nddd__V1__UrlForget *f = fz_alloc(sizeof(*f));
	struct fz_forget *fg = &fx.forgets[fx.nforgets];
	uint8_t b = in_byte(in), c = in_byte(in);
	unsigned kind = (b >> 3) & 7;
	const char *host = "", *prefix = NULL, *canon, *cause, *h;
	char *lower;
	size_t plen = 0, clen, hl;
	bool ok = true;

	nddd__v1__url_forget__init(f);
	q->ns = fx_ns_pick[b & 7];
	q->ns_name = q->ns >= 0 ? fx_ns_names[q->ns] : fx_ns_bad[b >> 7];
	f->namespace_ = (char *)q->ns_name;
	q->forget = -1;
	switch (kind) {
	case 0:
	case 1:
	case 2:
		host = gen_forget_host(in, c, &ok);
		f->subdomains = kind > 0;
		break;
	case 3:
	case 4:
	case 5:
		prefix = gen_forget_prefix(in, kind, c, &plen);
		break;
	case 6:
		host = fx.host;
		prefix = spell_url(0, fx.host, "/");
		plen = strlen(prefix);
		f->subdomains = c & 1;
		break;
	default:
		if (c & 1) {
			prefix = spell_url(0, fx.host, "/");
			plen = strlen(prefix);
			f->subdomains = true;
		} else
			f->subdomains = c & 2;
		break;
	}
	f->host = (char *)host;
	f->prefix.data = (uint8_t *)prefix;
	f->prefix.len = plen;
	/* A host is named up to its first NUL, a prefix by its bytes. */
	memset(fg, 0, sizeof(*fg));
	fg->slot = q->ns;
	fg->subdomains = f->subdomains;
	if ((f->host[0] != '\0') == (plen > 0) || (plen > 0 && f->subdomains))
		ok = false;
	else if (f->host[0] != '\0') {
		fg->hlen = strlen(f->host);
		lower = fz_alloc(fg->hlen + 1);
		for (size_t i = 0; i <= fg->hlen; i++)
			lower[i] = f->host[i] >= 'A' && f->host[i] <= 'Z' ?
			    (char)(f->host[i] - 'A' + 'a') : f->host[i];
		fg->host = lower;
		fg->closed = own_host(fg->host, fg->hlen);
		if (kind <= 2 && (c & 15) != 15 && ok != host_ok(fg->host,
		    fg->hlen))
			fx_fail("the model takes host \"%s\" as %s", fg->host,
			    ok ? "valid" : "invalid");
	} else if ((canon = urlcanon_canonicalize(fx.uc, prefix, plen,
	    &clen, &cause)) == NULL || !url_host(canon, clen, &h, &hl) ||
	    hl > URLHOSTS_HOST_MAX || clen > URLHOSTS_TEXT_MAX - hl)
		ok = false;
	else {
		fg->prefix = lower = fz_alloc(clen + 1);
		memcpy(lower, canon, clen + 1);
		fg->plen = clen;
		fg->closed = own_host(h, hl);
	}
	if (q->ns < 0 || !ok)
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
	else
		q->forget = fx.nforgets;
	return f;
}

/* Builds q's message from the input into *m (its parts in the arena). */
static void
gen_request(struct fz_in *in, struct fz_req *q, Nddd__V1__Request *m)
{
	Nddd__V1__DocSubmit *ds;
	Nddd__V1__DocQuery *dq;
	Nddd__V1__DocRef *ref;
	Nddd__V1__Distance *dist;
	ProtobufCBinaryData url;
	enum simhash_status st;
	uint8_t b;

	q->expect = NDDD__V1__CODE__OK;
	q->k = FX_K;
	/* A verify reads all the daemon holds: milliseconds, many times the
	 * rest of an execution, and inputs that have one would soon fill the
	 * corpus.  So the slot asks for one only with a token that may not
	 * (refused), and for stats with an admin's; the admin's verify ends
	 * every epoch of the stack instead (fx_verify_epoch). */
	if (q->op == FZ_VERIFY && q->role >= ROLE_ADMIN && !q->ns_token)
		q->op = FZ_STATS;
	switch (q->op) {
	case FZ_URL_SUBMIT:
		m->op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
		m->url_submit = gen_batch(in, q);
		break;
	case FZ_URL_CHECK:
		m->op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
		m->url_check = gen_batch(in, q);
		break;
	case FZ_URL_DELETE:
		m->op_case = NDDD__V1__REQUEST__OP_URL_DELETE;
		m->url_delete = gen_batch(in, q);
		break;
	case FZ_STATS:
		m->op_case = NDDD__V1__REQUEST__OP_STATS;
		m->stats = fz_alloc(sizeof(*m->stats));
		nddd__v1__stats_request__init(m->stats);
		break;
	case FZ_VERIFY:
		m->op_case = NDDD__V1__REQUEST__OP_VERIFY;
		m->verify = fz_alloc(sizeof(*m->verify));
		nddd__v1__verify_request__init(m->verify);
		break;
	case FZ_DOC_SUBMIT:
	case FZ_DOC_WOULD_JOIN:
		ds = fz_alloc(sizeof(*ds));
		nddd__v1__doc_submit__init(ds);
		q->n = 1;
		q->items = fz_alloc(sizeof(*q->items));
		gen_url(in, &ds->url, &q->items[0]);
		st = gen_body(in, &ds->body, &ds->format, &q->fp);
		ds->query_only = q->op == FZ_DOC_WOULD_JOIN;
		q->ns = q->items[0].ns = gen_doc_ns(in_byte(in),
		    &ds->namespace_);
		q->ns_name = ds->namespace_;
		gen_group(in_byte(in), ds, &q->items[0]);
		/* The namespace is checked first, with the request. */
		if (q->ns < 0 || !q->items[0].valid ||
		    q->items[0].bad_group)
			q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
		else if (st == SIMHASH_EMPTY_DOCUMENT)
			q->expect = NDDD__V1__CODE__EMPTY_DOCUMENT;
		m->op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
		m->doc_submit = ds;
		break;
	case FZ_DOC_QUERY_BODY:
	case FZ_DOC_QUERY_FP:
		dq = fz_alloc(sizeof(*dq));
		nddd__v1__doc_query__init(dq);
		q->ns = gen_doc_ns(in_byte(in), &dq->namespace_);
		q->ns_name = dq->namespace_;
		b = in_byte(in);
		if (b % 8 >= 2) {
			dist = fz_alloc(sizeof(*dist));
			nddd__v1__distance__init(dist);
			dist->k = b % 8 < 6 ? b % 8 - 2u :
			    b % 8 == 6 ? FX_K + 1 : 1000;
			q->k = dist->k;
			dq->max_distance = dist;
		}
		if (q->op == FZ_DOC_QUERY_BODY) {
			dq->body = fz_alloc(sizeof(*dq->body));
			nddd__v1__doc_body__init(dq->body);
			st = gen_body(in, &dq->body->body, &dq->body->format,
			    &q->fp);
			dq->what_case = NDDD__V1__DOC_QUERY__WHAT_BODY;
			if (q->k > FX_K)
				q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
			else if (st == SIMHASH_EMPTY_DOCUMENT)
				q->expect = NDDD__V1__CODE__EMPTY_DOCUMENT;
		} else {
			b = in_byte(in);
			switch (b & 3) {
			case 0:
				/* A document stored in this run, if any. */
				q->fp = text_fp(b >> 2);
				for (int i = 0; i < fx.nents; i++) {
					const struct fz_doc *d = &fx.ents[(i +
					    (b >> 2)) % fx.nents].doc[q->ns >=
					    0 ? q->ns : 0];

					if (d->known && d->present) {
						q->fp = d->fp;
						break;
					}
				}
				break;
			case 1:
				q->fp = text_fp(b >> 2);
				break;
			case 2:
				q->fp = 0;
				for (int i = 0; i < 8; i++)
					q->fp = q->fp << 8 | in_byte(in);
				break;
			default:
				q->fp = text_fp(b >> 2) ^
				    (UINT64_C(1) << (b >> 2));
				break;
			}
			if (b == 0xff) {
				/* Neither a body nor a fingerprint. */
				q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
			} else {
				dq->what_case =
				    NDDD__V1__DOC_QUERY__WHAT_SIMHASH;
				dq->simhash = q->fp;
				if (q->k > FX_K)
					q->expect =
					    NDDD__V1__CODE__INVALID_ARGUMENT;
			}
		}
		if (q->ns < 0)
			q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
		m->op_case = NDDD__V1__REQUEST__OP_DOC_QUERY;
		m->doc_query = dq;
		break;
	case FZ_DOC_GET:
	case FZ_DOC_DELETE:
		ref = fz_alloc(sizeof(*ref));
		nddd__v1__doc_ref__init(ref);
		q->n = 1;
		q->items = fz_alloc(sizeof(*q->items));
		gen_url(in, &url, &q->items[0]);
		ref->url = url;
		q->ns = q->items[0].ns = gen_doc_ns(in_byte(in),
		    &ref->namespace_);
		q->ns_name = ref->namespace_;
		if (q->ns < 0 || !q->items[0].valid)
			q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
		if (q->op == FZ_DOC_GET) {
			m->op_case = NDDD__V1__REQUEST__OP_DOC_GET;
			m->doc_get = ref;
		} else {
			m->op_case = NDDD__V1__REQUEST__OP_DOC_DELETE;
			m->doc_delete = ref;
		}
		break;
	case FZ_NO_OP:
		q->expect = NDDD__V1__CODE__INVALID_ARGUMENT;
		break;
	case FZ_DOC_BATCH:
		m->op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
		m->doc_batch = gen_doc_batch(in, q);
		break;
	case FZ_NS_SET:
	case FZ_NS_DROP:
		gen_namespace(in, q, m);
		break;
	case FZ_URL_FORGET:
		m->op_case = NDDD__V1__REQUEST__OP_URL_FORGET;
		m->url_forget = gen_forget(in, q);
		break;
	default:
		break;
	}
	/* The role is checked before anything else. */
	if (q->ns_token)
		q->role = ns_token_role(q);
	if (q->role < role_needed(q))
		q->expect = NDDD__V1__CODE__PERMISSION_DENIED;
	if (q->expect != NDDD__V1__CODE__OK)
		return;
	switch (q->op) {
	case FZ_URL_SUBMIT:
	case FZ_URL_DELETE:
		touch(q, true, true);
		break;
	case FZ_URL_CHECK:
		touch(q, true, false);
		break;
	case FZ_DOC_SUBMIT:
	case FZ_DOC_DELETE:
		touch(q, false, true);
		break;
	case FZ_DOC_BATCH:
		touch_doc_batch(q);
		break;
	case FZ_DOC_GET:
	case FZ_DOC_WOULD_JOIN:
		touch(q, false, false);
		break;
	case FZ_NS_SET:
	case FZ_NS_DROP:
		touch_ns(q);
		break;
	case FZ_URL_FORGET:
		touch_forget(q);
		break;
	default:
		break;
	}
}

/* ---- Checking the replies. ---- */

static bool
conflicted_url(const struct fz_url *u)
{
	return u->mut > 1 || (u->mut == 1 && u->touch > 1);
}

/*
 * Whether the document d of namespace slot s may have changed in ways the
 * model cannot order: several requests of the group touch it, one of them
 * changing it, or its namespace is dropped in the group.
 */
static bool
conflicted_doc(const struct fz_doc *d, int s)
{
	return d->mut > 1 || (d->mut == 1 && d->touch > 1) ||
	    fx.ns[s].drops > 0;
}

/* The fewest documents namespace slot s holds while this group runs:
 * those the model knows stored, that no request of the group touches. */
static uint64_t
docs_least(int s)
{
	uint64_t n = 0;

	for (int i = 0; i < fx.nents; i++) {
		const struct fz_doc *d = &fx.ents[i].doc[s];

		n += d->known && d->present && d->touch == 0;
	}
	return n;
}

/*
 * Whether what namespace g held before its group is unsure to a drop of
 * it: another drop, a namespace_set or a submit may come first.
 */
static bool
drop_unsure(const struct fz_ns *g)
{
	return g->drops > 1 || g->sets > 0 || g->submits > 0;
}

/* The fewest URLs namespace slot s holds while this group runs: those
 * the model knows seen, that no request of the group touches. */
static uint64_t
urls_least(int s)
{
	uint64_t n = 0;

	for (int i = 0; i < fx.nents; i++) {
		const struct fz_url *u = &fx.ents[i].url[s];

		n += u->known && u->count > 0 && u->touch == 0;
	}
	return n;
}

/*
 * The times of item i of q (count c): a URL seen was first seen no later
 * than last, last no later than now (a submit's: now), and expires after
 * now, if ever; one unseen has none, or, for a check, those of its record
 * whose time to live has passed (after it was last seen).
 */
static void
check_times(const struct fz_req *q, size_t i, uint64_t c, uint64_t f,
    uint64_t l, uint64_t x)
{
	uint64_t now = fx_now_ms;
	bool ok;

	if (c > 0)
		ok = f != 0 && f <= l && l <= now && (x == 0 || x > now) &&
		    (x == 0 || x > f) && (q->op != FZ_URL_SUBMIT || l == now);
	else
		ok = (f == 0 && l == 0 && x == 0) || (q->op == FZ_URL_CHECK &&
		    f != 0 && f <= l && l < x && x <= now);
	if (!ok)
		fx_fail("request %llu (%s): item %zu, count %llu, first seen "
		    "%llu, last %llu, expires %llu at %llu",
		    (unsigned long long)q->id, fz_op_names[q->op], i,
		    (unsigned long long)c, (unsigned long long)f,
		    (unsigned long long)l, (unsigned long long)x,
		    (unsigned long long)now);
}

static void
times_fail(const struct fz_req *q, const struct fz_ent *en, uint64_t f,
    uint64_t l, uint64_t x, uint64_t wf, uint64_t wl, uint64_t wx)
{
	fx_fail("request %llu (%s) of %.*s in \"%s\": first seen %llu, last "
	    "%llu, expires %llu; not %llu %llu %llu (now %llu)",
	    (unsigned long long)q->id, fz_op_names[q->op], (int)en->canon_len,
	    en->canon, q->ns_name, (unsigned long long)f,
	    (unsigned long long)l, (unsigned long long)x,
	    (unsigned long long)wf, (unsigned long long)wl,
	    (unsigned long long)wx, (unsigned long long)fx_now_ms);
}

/*
 * A url_submit's item: one more than the model's count; a URL recorded as
 * new (count 1) first and last seen now, expiring after the batch's time
 * to live or its namespace's default (unsure when a namespace_set of the
 * group may come first); a duplicate last seen now, the rest unchanged.
 */
static void
check_submitted(const struct fz_req *q, const struct fz_ent *en,
    struct fz_url *u, uint64_t c, const uint64_t *t)
{
	const struct fz_ns *g = &fx.ns[q->ns];
	uint64_t now = fx_now_ms, ttl = q->ttl_ms ? q->ttl_ms : g->ttl_ms;
	uint64_t want[3];
	bool sure_first, sure_exp;

	if (u->known && c != u->count + 1)
		fx_fail("request %llu: url_submit of %.*s in \"%s\" counted "
		    "%llu, not %llu", (unsigned long long)q->id,
		    (int)en->canon_len, en->canon, q->ns_name,
		    (unsigned long long)c, (unsigned long long)u->count + 1);
	if (c == 0)
		fx_fail("request %llu: url_submit counted 0",
		    (unsigned long long)q->id);
	if (c == 1) {
		want[0] = now;
		want[2] = ttl != 0 ? now + ttl : 0;
		sure_first = true;
		sure_exp = q->ttl_ms != 0 || (g->ttl_known && g->sets == 0);
		/* Recorded anew: in the host index from its text only. */
		u->dig = q->digests;
		u->txt = u->txt || !q->digests;
	} else {
		want[0] = u->first;
		want[2] = u->expires;
		sure_first = sure_exp = u->known && u->times_known;
	}
	want[1] = now;
	if (t != NULL) {
		if ((sure_first && t[0] != want[0]) || t[1] != want[1] ||
		    (sure_exp && t[2] != want[2]))
			times_fail(q, en, t[0], t[1], t[2], want[0], want[1],
			    want[2]);
		memcpy(want, t, sizeof(want));
		sure_first = sure_exp = true;
	}
	u->known = true;
	u->count = c;
	u->stale = false;
	u->times_known = sure_first && sure_exp;
	u->first = want[0];
	u->last = want[1];
	u->expires = want[2];
}

/*
 * A url_check's item: the model's count; the times of a URL seen; for one
 * unseen, none, or, while the sweep has not reclaimed the record of an
 * expired one, that record's.
 */
static void
check_checked(const struct fz_req *q, const struct fz_ent *en,
    struct fz_url *u, uint64_t c, const uint64_t *t)
{
	if (u->known && c != u->count)
		fx_fail("request %llu: url_check of %.*s in \"%s\" says %llu, "
		    "not %llu", (unsigned long long)q->id, (int)en->canon_len,
		    en->canon, q->ns_name, (unsigned long long)c,
		    (unsigned long long)u->count);
	if (t != NULL && u->known && u->times_known) {
		bool same = t[0] == u->first && t[1] == u->last &&
		    t[2] == u->expires;
		bool none = t[0] == 0 && t[1] == 0 && t[2] == 0;

		if (c > 0 ? !same : !(none || (u->stale && same)))
			times_fail(q, en, t[0], t[1], t[2], u->first, u->last,
			    u->expires);
	}
	if (t != NULL) {
		u->times_known = true;
		u->first = t[0];
		u->last = t[1];
		u->expires = t[2];
		u->stale = c == 0 && t[0] != 0;
	} else if (!u->known)
		u->times_known = false;
	u->known = true;
	u->count = c;
}

/* A url_delete's item: the model's count and, if it had one, the URL's
 * times; then nothing is left. */
static void
check_deleted(const struct fz_req *q, const struct fz_ent *en,
    struct fz_url *u, uint64_t c, const uint64_t *t)
{
	if (u->known && c != u->count)
		fx_fail("request %llu: url_delete of %.*s in \"%s\" had %llu, "
		    "not %llu", (unsigned long long)q->id, (int)en->canon_len,
		    en->canon, q->ns_name, (unsigned long long)c,
		    (unsigned long long)u->count);
	if (t != NULL && c > 0 && u->known && u->times_known &&
	    (t[0] != u->first || t[1] != u->last || t[2] != u->expires))
		times_fail(q, en, t[0], t[1], t[2], u->first, u->last,
		    u->expires);
	url_gone(u);
}

static void
check_urls(struct fz_req *q)
{
	const Nddd__V1__UrlResults *res = q->resp->urls;
	size_t e = 0, nt = q->with_times ? q->n : 0;

	if (q->resp->result_case != NDDD__V1__RESPONSE__RESULT_URLS ||
	    res == NULL)
		fx_fail("request %llu (%s): no URL results",
		    (unsigned long long)q->id, fz_op_names[q->op]);
	if (res->n_counts != q->n)
		fx_fail("request %llu (%s): %zu counts for %zu URLs",
		    (unsigned long long)q->id, fz_op_names[q->op],
		    res->n_counts, q->n);
	if (res->n_first_seen_ms != nt || res->n_last_seen_ms != nt ||
	    res->n_expires_ms != nt)
		fx_fail("request %llu (%s): %zu, %zu and %zu times for %zu "
		    "URLs, %s", (unsigned long long)q->id, fz_op_names[q->op],
		    res->n_first_seen_ms, res->n_last_seen_ms,
		    res->n_expires_ms, q->n, nt ? "with times" :
		    "without times");
	for (size_t i = 0; i < q->n; i++) {
		uint64_t c = res->counts[i], t[3] = { 0, 0, 0 };
		const uint64_t *tp = nt ? t : NULL;
		struct fz_ent *en;
		struct fz_url *u;

		if (nt) {
			t[0] = res->first_seen_ms[i];
			t[1] = res->last_seen_ms[i];
			t[2] = res->expires_ms[i];
		}
		if (fx_trace)
			fprintf(stderr, "  %zu: %llu (%llu %llu %llu)\n", i,
			    (unsigned long long)c, (unsigned long long)t[0],
			    (unsigned long long)t[1], (unsigned long long)t[2]);
		if (!q->items[i].valid) {
			if (e >= res->n_errors || res->errors[e]->index != i ||
			    res->errors[e]->status == NULL ||
			    res->errors[e]->status->code !=
			    NDDD__V1__CODE__INVALID_ARGUMENT || c != 0 ||
			    t[0] != 0 || t[1] != 0 || t[2] != 0)
				fx_fail("request %llu (%s): item %zu is no URL "
				    "and has no error of its own",
				    (unsigned long long)q->id,
				    fz_op_names[q->op], i);
			e++;
			continue;
		}
		if (nt)
			check_times(q, i, c, t[0], t[1], t[2]);
		en = &fx.ents[q->items[i].ent];
		u = &en->url[q->ns];
		/* Another request of the group may come first: a change of
		 * the URL, or a drop of its namespace. */
		if (conflicted_url(u) || fx.ns[q->ns].drops > 0)
			continue;
		switch (q->op) {
		case FZ_URL_SUBMIT:
			check_submitted(q, en, u, c, tp);
			break;
		case FZ_URL_DELETE:
			check_deleted(q, en, u, c, tp);
			break;
		default:
			check_checked(q, en, u, c, tp);
			break;
		}
	}
	if (e != res->n_errors)
		fx_fail("request %llu (%s): %zu item errors, not %zu",
		    (unsigned long long)q->id, fz_op_names[q->op],
		    res->n_errors, e);
}

/*
 * A namespace_set's or namespace_drop's answer: the namespace, the default
 * time to live set (a dropped one has none), at least the URLs the model
 * knows it holds; a drop's, of one the model knows exists.
 */
static void
check_ns_info(const struct fz_req *q)
{
	const Nddd__V1__NamespaceInfo *ni = q->resp->namespace_;
	const struct fz_ns *g = &fx.ns[q->ns];
	bool drop = q->op == FZ_NS_DROP;

	if (q->resp->result_case != NDDD__V1__RESPONSE__RESULT_NAMESPACE ||
	    ni == NULL || ni->name == NULL || strcmp(ni->name, q->ns_name) != 0)
		fx_fail("request %llu (%s): not the information of namespace "
		    "\"%s\"", (unsigned long long)q->id, fz_op_names[q->op],
		    q->ns_name);
	if (ni->default_ttl_seconds * 1000 != q->ttl_ms)
		fx_fail("request %llu (%s): namespace \"%s\" has a default "
		    "time to live of %llu s, not %llu",
		    (unsigned long long)q->id, fz_op_names[q->op], q->ns_name,
		    (unsigned long long)ni->default_ttl_seconds,
		    (unsigned long long)q->ttl_ms / 1000);
	if (drop && g->exists_known && !g->exists && !drop_unsure(g))
		fx_fail("request %llu: namespace_drop of \"%s\", which does "
		    "not exist, did not answer NOT_FOUND",
		    (unsigned long long)q->id, q->ns_name);
	if ((drop ? !drop_unsure(g) : g->drops == 0) &&
	    ni->urls < urls_least(q->ns))
		fx_fail("request %llu (%s): namespace \"%s\" holds %llu URLs, "
		    "the model knows of %llu", (unsigned long long)q->id,
		    fz_op_names[q->op], q->ns_name,
		    (unsigned long long)ni->urls,
		    (unsigned long long)urls_least(q->ns));
	if ((drop ? !drop_unsure(g) : g->drops == 0) &&
	    ni->docs < docs_least(q->ns))
		fx_fail("request %llu (%s): namespace \"%s\" holds %llu "
		    "documents, the model knows of %llu",
		    (unsigned long long)q->id, fz_op_names[q->op], q->ns_name,
		    (unsigned long long)ni->docs,
		    (unsigned long long)docs_least(q->ns));
}

/*
 * An admin's stats: the namespaces, the default one first, then by name,
 * as the model knows those that no request of the group may change (and
 * learns them); urls_expired never going back.
 */
static void
check_stats_namespaces(const struct fz_req *q, const Nddd__V1__StatsResult *st)
{
	bool complete = st->n_namespaces < STATSREQ_NAMESPACES_MAX;

	if (fx_trace)
		fprintf(stderr, "  %zu namespaces, urls %llu, dropping %llu, "
		    "expired %llu\n", st->n_namespaces,
		    (unsigned long long)st->urls,
		    (unsigned long long)st->urls_dropping,
		    (unsigned long long)st->urls_expired);
	if (st->n_namespaces == 0 || st->namespaces[0]->name == NULL ||
	    st->namespaces[0]->name[0] != '\0')
		fx_fail("request %llu: stats without the default namespace "
		    "first", (unsigned long long)q->id);
	for (size_t i = 1; i < st->n_namespaces; i++)
		if (st->namespaces[i]->name == NULL ||
		    strcmp(st->namespaces[i - 1]->name,
		    st->namespaces[i]->name) >= 0)
			fx_fail("request %llu: stats' namespaces out of order",
			    (unsigned long long)q->id);
	if (st->urls_expired < fx.expired)
		fx_fail("request %llu: stats' urls_expired went back from %llu "
		    "to %llu", (unsigned long long)q->id,
		    (unsigned long long)fx.expired,
		    (unsigned long long)st->urls_expired);
	if (st->urls_expired > fx.group_expired)
		fx.group_expired = st->urls_expired;
	for (size_t s = 0; s < FX_NNS; s++) {
		struct fz_ns *g = &fx.ns[s];
		const Nddd__V1__NamespaceInfo *ni = NULL;

		if (g->drops > 0 || g->sets > 0 || g->submits > 0)
			continue;
		for (size_t i = 0; i < st->n_namespaces && ni == NULL; i++)
			if (strcmp(st->namespaces[i]->name, fx_ns_names[s]) ==
			    0)
				ni = st->namespaces[i];
		if (ni == NULL && !complete)
			continue;
		if (g->exists_known && g->exists != (ni != NULL))
			fx_fail("request %llu: stats list namespace \"%s\"%s",
			    (unsigned long long)q->id, fx_ns_names[s],
			    g->exists ? " not, which exists" :
			    ", which does not exist");
		if (ni != NULL && g->ttl_known &&
		    ni->default_ttl_seconds * 1000 != g->ttl_ms)
			fx_fail("request %llu: stats give namespace \"%s\" a "
			    "default time to live of %llu s, not %llu",
			    (unsigned long long)q->id, fx_ns_names[s],
			    (unsigned long long)ni->default_ttl_seconds,
			    (unsigned long long)g->ttl_ms / 1000);
		if (ni != NULL && ni->urls < urls_least((int)s))
			fx_fail("request %llu: stats give namespace \"%s\" "
			    "%llu URLs, the model knows of %llu",
			    (unsigned long long)q->id, fx_ns_names[s],
			    (unsigned long long)ni->urls,
			    (unsigned long long)urls_least((int)s));
		if (ni != NULL && ni->docs < docs_least((int)s))
			fx_fail("request %llu: stats give namespace \"%s\" "
			    "%llu documents, the model knows of %llu",
			    (unsigned long long)q->id, fx_ns_names[s],
			    (unsigned long long)ni->docs,
			    (unsigned long long)docs_least((int)s));
		g->exists_known = g->ttl_known = true;
		g->exists = ni != NULL;
		g->ttl_ms = ni != NULL ? ni->default_ttl_seconds * 1000 : 0;
	}
}

/*
 * The entry of the stored document id, if the model knows it for sure,
 * and its namespace's slot in *s.
 */
static const struct fz_ent *
ent_of_doc(uint64_t id, int *s)
{
	for (int i = 0; i < fx.nents; i++)
		for (int k = 0; k < (int)FX_NNS; k++) {
			const struct fz_doc *d = &fx.ents[i].doc[k];

			if (d->known && d->present && d->id == id &&
			    d->mut == 0 && fx.ns[k].drops == 0) {
				*s = k;
				return &fx.ents[i];
			}
		}
	return NULL;
}

/*
 * Neighbours of fp within k in namespace slot ns, from a reply: sorted
 * nearest then oldest, at most max_results, not self, of that namespace
 * and at their true distance where the model knows the document, and,
 * when the reply holds them all, every document the model knows there
 * within k.
 */
static void
check_near(const struct fz_req *q, Nddd__V1__Neighbour **near, size_t n,
    uint64_t total, uint64_t fp, unsigned k, uint64_t self, int ns)
{
	for (size_t i = 0; i < n; i++) {
		const Nddd__V1__Neighbour *nb = near[i];
		int es = 0;
		const struct fz_ent *e = ent_of_doc(nb->doc_id, &es);
		const struct fz_doc *d = e != NULL ? &e->doc[es] : NULL;

		if (nb->distance > k || nb->doc_id == 0 || nb->doc_id == self)
			fx_fail("request %llu (%s): neighbour %llu at %u, k %u",
			    (unsigned long long)q->id, fz_op_names[q->op],
			    (unsigned long long)nb->doc_id, nb->distance, k);
		if (i > 0 && (near[i - 1]->distance > nb->distance ||
		    (near[i - 1]->distance == nb->distance &&
		    near[i - 1]->doc_id >= nb->doc_id)))
			fx_fail("request %llu (%s): neighbours out of order",
			    (unsigned long long)q->id, fz_op_names[q->op]);
		if (e != NULL && (es != ns ||
		    (unsigned)__builtin_popcountll(d->fp ^ fp) !=
		    nb->distance || nb->url.len != e->canon_len ||
		    memcmp(nb->url.data, e->canon, e->canon_len) != 0 ||
		    nb->group != d->group))
			fx_fail("request %llu (%s): neighbour %llu is not the "
			    "document stored%s", (unsigned long long)q->id,
			    fz_op_names[q->op], (unsigned long long)nb->doc_id,
			    es != ns ? " in the query's namespace" : "");
		if (nb->doc_id > fx.max_doc_id)
			fx.max_doc_id = nb->doc_id;
	}
	if (n > FX_MAX_RESULTS || n > total)
		fx_fail("request %llu (%s): %zu neighbours of %llu",
		    (unsigned long long)q->id, fz_op_names[q->op], n,
		    (unsigned long long)total);
	if (n != total)
		return;
	for (int i = 0; i < fx.nents; i++) {
		const struct fz_ent *e = &fx.ents[i];
		const struct fz_doc *dd = &e->doc[ns];
		bool found = false;

		if (!dd->known || !dd->present || conflicted_doc(dd, ns) ||
		    dd->mut > 0 || dd->id == self ||
		    (unsigned)__builtin_popcountll(dd->fp ^ fp) > k)
			continue;
		for (size_t j = 0; j < n && !found; j++)
			found = near[j]->doc_id == dd->id;
		if (!found)
			fx_fail("request %llu (%s): document %llu (%.*s) "
			    "within k is not among all %zu neighbours",
			    (unsigned long long)q->id, fz_op_names[q->op],
			    (unsigned long long)dd->id, (int)e->canon_len,
			    e->canon, n);
	}
}

/*
 * The DocResult r of one document (op: submitted, query_only or got) with
 * URL item it and fingerprint fp (a submit's), of request q; in_batch: of
 * a doc_batch, whose results leave the URL out.
 */
static void
check_doc_result(const struct fz_req *q, enum fz_op op,
    const struct fz_item *it, uint64_t fp, const Nddd__V1__DocResult *r,
    bool in_batch)
{
	struct fz_ent *e = &fx.ents[it->ent];
	struct fz_doc *d = &e->doc[it->ns];
	bool sure = !conflicted_doc(d, it->ns);

	if (in_batch ? r->url.len != 0 : r->url.len != e->canon_len ||
	    memcmp(r->url.data, e->canon, e->canon_len) != 0)
		fx_fail("request %llu (%s): URL %.*s, not %.*s",
		    (unsigned long long)q->id, fz_op_names[q->op],
		    (int)r->url.len, (const char *)r->url.data,
		    in_batch ? 0 : (int)e->canon_len, e->canon);
	if (op == FZ_DOC_WOULD_JOIN) {
		if (r->doc_id != 0 || r->simhash != fp || r->created ||
		    r->group != (r->n_near > 0 ? r->near[0]->group : 0))
			fx_fail("request %llu (doc_submit query_only): id %llu "
			    "simhash %016llx (not %016llx) group %llu",
			    (unsigned long long)q->id,
			    (unsigned long long)r->doc_id,
			    (unsigned long long)r->simhash,
			    (unsigned long long)fp,
			    (unsigned long long)r->group);
		check_near(q, r->near, r->n_near, r->near_total, fp, FX_K,
		    sure && d->known && d->present ? d->id : 0, it->ns);
		return;
	}
	if (r->doc_id == 0 || r->group == 0)
		fx_fail("request %llu (%s): document id %llu, group %llu",
		    (unsigned long long)q->id, fz_op_names[q->op],
		    (unsigned long long)r->doc_id,
		    (unsigned long long)r->group);
	if (op == FZ_DOC_SUBMIT) {
		if (r->simhash != fp)
			fx_fail("request %llu: doc_submit's simhash %016llx, "
			    "not %016llx", (unsigned long long)q->id,
			    (unsigned long long)r->simhash,
			    (unsigned long long)fp);
		/* The group given, its own when told to found one, else its
		 * nearest neighbour's, or its own. */
		if (it->join != 0 ? r->group != it->join :
		    it->new_group ? r->group != r->doc_id :
		    r->n_near > 0 ? r->group != r->near[0]->group :
		    r->near_total == 0 && r->group != r->doc_id)
			fx_fail("request %llu: doc_submit's group %llu "
			    "(given %llu%s)", (unsigned long long)q->id,
			    (unsigned long long)r->group,
			    (unsigned long long)it->join,
			    it->new_group ? ", new_group" : "");
		if (sure && d->known && (r->created == d->present ||
		    (d->present && r->doc_id != d->id) ||
		    (!d->present && r->doc_id <= fx.group_max_doc_id)))
			fx_fail("request %llu: doc_submit of %.*s in \"%s\": "
			    "id %llu created %d; was %s %llu, ids so far up to "
			    "%llu", (unsigned long long)q->id,
			    (int)e->canon_len, e->canon, fx_ns_names[it->ns],
			    (unsigned long long)r->doc_id, r->created,
			    d->present ? "stored as" : "absent",
			    (unsigned long long)d->id,
			    (unsigned long long)fx.group_max_doc_id);
	} else if (sure && d->known && (!d->present ||
	    r->doc_id != d->id || r->simhash != d->fp ||
	    r->group != d->group || r->created))
		fx_fail("request %llu: doc_get of %.*s in \"%s\" gives id "
		    "%llu simhash %016llx group %llu, not %llu %016llx %llu",
		    (unsigned long long)q->id, (int)e->canon_len, e->canon,
		    fx_ns_names[it->ns], (unsigned long long)r->doc_id,
		    (unsigned long long)r->simhash,
		    (unsigned long long)r->group,
		    (unsigned long long)d->id,
		    (unsigned long long)d->fp,
		    (unsigned long long)d->group);
	check_near(q, r->near, r->n_near, r->near_total, r->simhash, FX_K,
	    r->doc_id, it->ns);
	if (!sure)
		return;
	d->known = d->present = true;
	d->id = r->doc_id;
	d->fp = r->simhash;
	d->group = r->group;
}

static void
check_doc(struct fz_req *q)
{
	if (q->resp->result_case != NDDD__V1__RESPONSE__RESULT_DOC ||
	    q->resp->doc == NULL)
		fx_fail("request %llu (%s): no document result",
		    (unsigned long long)q->id, fz_op_names[q->op]);
	check_doc_result(q, q->op, &q->items[0], q->fp, q->resp->doc, false);
}

/*
 * A doc_batch's results: one per document; an error exactly for those
 * with a bad URL or no terms; the others as a doc_submit's (query_only or
 * not) in request order, the model following each in turn.
 */
static void
check_docs(struct fz_req *q)
{
	const Nddd__V1__DocResults *res = q->resp->docs;
	Nddd__V1__Code want[FX_MAX_BATCH_DOCS], got[FX_MAX_BATCH_DOCS];

	if (q->resp->result_case != NDDD__V1__RESPONSE__RESULT_DOCS ||
	    res == NULL || res->n_docs != q->n)
		fx_fail("request %llu (doc_batch): not %zu results",
		    (unsigned long long)q->id, q->n);
	for (size_t i = 0; i < q->n; i++) {
		want[i] = q->items[i].ns < 0 || !q->items[i].valid ||
		    q->items[i].bad_group ?
		    NDDD__V1__CODE__INVALID_ARGUMENT : q->items[i].empty ?
		    NDDD__V1__CODE__EMPTY_DOCUMENT : NDDD__V1__CODE__OK;
		got[i] = NDDD__V1__CODE__OK;
	}
	for (size_t j = 0; j < res->n_errors; j++) {
		const Nddd__V1__ItemError *ie = res->errors[j];

		if (ie->index >= q->n || ie->status == NULL ||
		    got[ie->index] != NDDD__V1__CODE__OK ||
		    ie->status->code == NDDD__V1__CODE__OK)
			fx_fail("request %llu (doc_batch): a bad item error",
			    (unsigned long long)q->id);
		got[ie->index] = ie->status->code;
	}
	for (size_t i = 0; i < q->n; i++) {
		const Nddd__V1__DocResult *r = res->docs[i];

		if (got[i] != want[i])
			fx_fail("request %llu (doc_batch): document %zu "
			    "answered %d, not %d", (unsigned long long)q->id, i,
			    got[i], want[i]);
		if (want[i] != NDDD__V1__CODE__OK) {
			if (r->doc_id != 0 || r->simhash != 0 || r->n_near != 0)
				fx_fail("request %llu (doc_batch): document "
				    "%zu failed but has a result",
				    (unsigned long long)q->id, i);
			continue;
		}
		check_doc_result(q, q->items[i].query_only ? FZ_DOC_WOULD_JOIN :
		    FZ_DOC_SUBMIT, &q->items[i], q->items[i].fp, r, true);
		if (r->doc_id > fx.max_doc_id)
			fx.max_doc_id = r->doc_id;
	}
}

/*
 * A url_forget's answer: complete (unless digests may have landed); at
 * least the URLs the model knows visible and in the index, and, when all
 * it may take are of the execution's own hosts, at most those and the
 * ones the model does not know or is unsure of; none in a namespace that does not exist.  Then
 * what it surely found is deleted, what it may have found unknown, unless
 * another request of the group names it (end_group), or a drop of its
 * namespace comes (end_group_namespaces).
 */
/*
 * Whether a submit of digests (or a raw frame's request) may have reached
 * the store since it was opened, in any namespace: the first marks the
 * host index partial for good, and forgets answer incomplete from then on.
 */
static bool
digests_may_have_landed(void)
{
	for (size_t s = 0; s < FX_NNS; s++)
		if (fx.digests_seen[s] || fx.exec_digests[s])
			return true;
	return false;
}

static void
check_forget(struct fz_req *q)
{
	const Nddd__V1__UrlForgetResult *res = q->resp->forget;
	struct fz_forget *fg = &fx.forgets[q->forget];
	const struct fz_ns *g = &fx.ns[fg->slot];
	uint64_t sure = 0, maybe = 0;

	if (q->resp->result_case != NDDD__V1__RESPONSE__RESULT_FORGET ||
	    res == NULL)
		fx_fail("request %llu: url_forget without its result",
		    (unsigned long long)q->id);
	if (!res->complete && !digests_may_have_landed())
		fx_fail("request %llu: url_forget incomplete, though every URL "
		    "went in with the host index on and its text",
		    (unsigned long long)q->id);
	fg->done = true;
	if (g->drops > 0)
		return;
	for (int i = 0; i < fx.nents; i++) {
		const struct fz_url *u = &fx.ents[i].url[fg->slot];

		if (!forget_takes(fg, &fx.ents[i]))
			continue;
		if (u->mut > 1 || !u->known)
			maybe++;
		else if (u->count > 0 && !url_dig(u))
			sure++;
		else if (u->count > 0 && u->txt)
			maybe++;
	}
	if (fx_trace)
		fprintf(stderr, "  %s %.*s%s: forgot %llu, sure %llu, maybe "
		    "%llu%s\n", fg->host != NULL ? "host" : "prefix",
		    (int)(fg->host != NULL ? fg->hlen : fg->plen),
		    fg->host != NULL ? fg->host : fg->prefix,
		    fg->subdomains ? " and subdomains" : "",
		    (unsigned long long)res->forgotten,
		    (unsigned long long)sure, (unsigned long long)maybe,
		    fg->closed ? ", all known" : "");
	if (res->forgotten < sure || (fg->closed &&
	    res->forgotten > sure + maybe))
		fx_fail("request %llu: url_forget in \"%s\" of %s %.*s%s forgot "
		    "%llu URLs; the model knows %llu%s, and %llu more it is "
		    "unsure of", (unsigned long long)q->id, q->ns_name,
		    fg->host != NULL ? "host" : "prefix",
		    (int)(fg->host != NULL ? fg->hlen : fg->plen),
		    fg->host != NULL ? fg->host : fg->prefix,
		    fg->subdomains ? " and its subdomains" : "",
		    (unsigned long long)res->forgotten,
		    (unsigned long long)sure, fg->closed ? "" :
		    " at least", (unsigned long long)maybe);
	if (g->exists_known && !g->exists && g->submits == 0 &&
	    res->forgotten != 0)
		fx_fail("request %llu: url_forget forgot %llu URLs in "
		    "\"%s\", which does not exist", (unsigned long long)q->id,
		    (unsigned long long)res->forgotten, q->ns_name);
	for (int i = 0; i < fx.nents; i++) {
		struct fz_url *u = &fx.ents[i].url[fg->slot];

		if (!forget_takes(fg, &fx.ents[i]) || u->touch > 1)
			continue;
		if (!url_dig(u))
			url_gone(u);
		else if (u->txt && u->known && u->count > 0)
			u->known = false;
	}
}

static void
check_reply(struct fz_req *q)
{
	const Nddd__V1__Response *r = q->resp;
	Nddd__V1__Code code = r->status ? r->status->code :
	    NDDD__V1__CODE__OK;
	struct fz_ent *e = q->n > 0 && q->items[0].valid ?
	    &fx.ents[q->items[0].ent] : NULL;

	if (fx_trace && q->ns_name != NULL)
		fprintf(stderr, "request %llu %s in \"%s\" (ttl %llu ms%s, "
		    "role %d, %zu items, expected %d): %s %d%s%s\n",
		    (unsigned long long)q->id, fz_op_names[q->op], q->ns_name,
		    (unsigned long long)q->ttl_ms, q->with_times ?
		    ", with times" : "", q->role, q->n, q->expect,
		    r->status ? "error" : "result", r->status ? code :
		    (int)r->result_case, r->status ? " " : "",
		    r->status ? r->status->message : "");
	else if (fx_trace)
		fprintf(stderr, "request %llu %s (role %d, %zu items, expected "
		    "%d): %s %d%s%s\n", (unsigned long long)q->id,
		    fz_op_names[q->op], q->role, q->n, q->expect,
		    r->status ? "error" : "result", r->status ? code :
		    (int)r->result_case, r->status ? " " : "",
		    r->status ? r->status->message : "");

	if (r->status != NULL && (r->result_case !=
	    NDDD__V1__RESPONSE__RESULT__NOT_SET || r->status->message == NULL ||
	    r->status->message[0] == '\0'))
		fx_fail("request %llu (%s): an error with a result or without "
		    "a message", (unsigned long long)q->id,
		    fz_op_names[q->op]);
	if (q->expect != NDDD__V1__CODE__OK) {
		if (code != q->expect)
			fx_fail("request %llu (%s): answered %d (%s), not %d",
			    (unsigned long long)q->id, fz_op_names[q->op],
			    code, r->status ? r->status->message : "a result",
			    q->expect);
		return;
	}
	/* Data-dependent errors. */
	if (code == NDDD__V1__CODE__NOT_FOUND && q->op == FZ_DOC_GET) {
		struct fz_doc *d = e != NULL ? &e->doc[q->ns] : NULL;

		if (d != NULL && d->known && d->present &&
		    !conflicted_doc(d, q->ns))
			fx_fail("request %llu: doc_get of %.*s in \"%s\", "
			    "stored as %llu: not found",
			    (unsigned long long)q->id, (int)e->canon_len,
			    e->canon, q->ns_name, (unsigned long long)d->id);
		if (d != NULL && !conflicted_doc(d, q->ns)) {
			d->known = true;
			d->present = false;
		}
		return;
	}
	if (code == NDDD__V1__CODE__NOT_FOUND && q->op == FZ_NS_DROP) {
		const struct fz_ns *g = &fx.ns[q->ns];

		if (g->exists_known && g->exists && !drop_unsure(g))
			fx_fail("request %llu: namespace_drop of \"%s\", which "
			    "exists: not found", (unsigned long long)q->id,
			    q->ns_name);
		return;
	}
	if (code == NDDD__V1__CODE__RESOURCE_EXHAUSTED) {
		/* The store is full: what was asked may not have been done. */
		bool url = q->op == FZ_URL_SUBMIT || q->op == FZ_URL_CHECK ||
		    q->op == FZ_URL_DELETE;

		for (size_t i = 0; i < q->n; i++) {
			const struct fz_item *it = &q->items[i];
			struct fz_url *u = it->valid && url ?
			    &fx.ents[it->ent].url[q->ns] : NULL;

			if (u != NULL) {
				u->known = false;
				u->dig = u->dig || (q->op == FZ_URL_SUBMIT &&
				    q->digests);
				u->txt = u->txt || (q->op == FZ_URL_SUBMIT &&
				    !q->digests);
			} else if (it->valid && it->ns >= 0) {
				fx.ents[it->ent].doc[it->ns].known = false;
				/* A document not stored creates nothing. */
				if (!it->query_only && q->op != FZ_DOC_GET &&
				    q->op != FZ_DOC_WOULD_JOIN &&
				    q->op != FZ_DOC_DELETE)
					fx.ns[it->ns].failed = true;
			}
		}
		if (q->op == FZ_URL_SUBMIT || q->op == FZ_NS_SET ||
		    q->op == FZ_NS_DROP)
			fx.ns[q->ns].failed = true;
		if (q->op == FZ_URL_FORGET) {
			const struct fz_forget *fg = &fx.forgets[q->forget];

			for (int i = 0; i < fx.nents; i++)
				if (forget_takes(fg, &fx.ents[i]))
					fx.ents[i].url[fg->slot].known = false;
		}
		/* A flush that failed may have lost the texts of the host
		 * index's next run. */
		fx.forget_unsure = true;
		return;
	}
	if (code != NDDD__V1__CODE__OK)
		fx_fail("request %llu (%s): answered %d (%s)",
		    (unsigned long long)q->id, fz_op_names[q->op], code,
		    r->status->message);
	switch (q->op) {
	case FZ_URL_SUBMIT:
	case FZ_URL_CHECK:
	case FZ_URL_DELETE:
		check_urls(q);
		break;
	case FZ_STATS:
		if (r->result_case != NDDD__V1__RESPONSE__RESULT_STATS ||
		    r->stats->version == NULL || r->stats->canon == NULL ||
		    strcmp(r->stats->canon, urlset_canon_id(fx.us)) != 0 ||
		    r->stats->near == NULL || r->stats->near->k != FX_K)
			fx_fail("request %llu: stats without the basic figures",
			    (unsigned long long)q->id);
		if ((q->role >= ROLE_ADMIN) != (r->stats->url_store != NULL) ||
		    (q->role >= ROLE_ADMIN) != (r->stats->cbf != NULL) ||
		    (q->role >= ROLE_ADMIN) != (r->stats->accel != NULL) ||
		    (q->role < ROLE_ADMIN && r->stats->n_namespaces > 0))
			fx_fail("request %llu: stats in full for role %d, or "
			    "not for admin", (unsigned long long)q->id,
			    q->role);
		if (q->role >= ROLE_ADMIN)
			check_stats_namespaces(q, r->stats);
		break;
	case FZ_NS_SET:
	case FZ_NS_DROP:
		check_ns_info(q);
		break;
	case FZ_URL_FORGET:
		check_forget(q);
		break;
	case FZ_VERIFY:
		if (r->result_case != NDDD__V1__RESPONSE__RESULT_VERIFY)
			fx_fail("request %llu: verify without its result",
			    (unsigned long long)q->id);
		if (!r->verify->consistent)
			fx_fail("verify: memory and store disagree: %s",
			    r->verify->detail);
		break;
	case FZ_DOC_SUBMIT:
	case FZ_DOC_WOULD_JOIN:
	case FZ_DOC_GET:
		check_doc(q);
		break;
	case FZ_DOC_BATCH:
		check_docs(q);
		break;
	case FZ_DOC_DELETE:
		if (r->result_case != NDDD__V1__RESPONSE__RESULT_DOC_DELETE)
			fx_fail("request %llu: doc_delete without its result",
			    (unsigned long long)q->id);
		{
			struct fz_doc *d = &e->doc[q->ns];

			if (conflicted_doc(d, q->ns))
				break;
			if (d->known && r->doc_delete->doc_id !=
			    (d->present ? d->id : 0))
				fx_fail("request %llu: doc_delete of %.*s in "
				    "\"%s\" deleted %llu, not %llu",
				    (unsigned long long)q->id,
				    (int)e->canon_len, e->canon, q->ns_name,
				    (unsigned long long)r->doc_delete->doc_id,
				    (unsigned long long)(d->present ? d->id :
				    0));
			d->known = true;
			d->present = false;
		}
		break;
	case FZ_DOC_QUERY_BODY:
	case FZ_DOC_QUERY_FP:
		if (r->result_case != NDDD__V1__RESPONSE__RESULT_DOC_QUERY ||
		    r->doc_query->simhash != q->fp)
			fx_fail("request %llu (%s): not the query's result",
			    (unsigned long long)q->id, fz_op_names[q->op]);
		check_near(q, r->doc_query->near, r->doc_query->n_near,
		    r->doc_query->near_total, q->fp, q->k, 0, q->ns);
		break;
	default:
		fx_fail("request %llu (%s): answered with a result",
		    (unsigned long long)q->id, fz_op_names[q->op]);
	}
}

static bool
group_answered(void)
{
	if (fx.cli_eof)
		fx_fail("the server closed the connection with requests "
		    "unanswered");
	for (int i = group_start; i < fx.nreqs; i++)
		if (fx.reqs[i].resp == NULL)
			return false;
	return true;
}

/*
 * After a group: what its requests did to each namespace.  A drop empties
 * it, unless a submit or namespace_set of the group may have come after.
 */
static void
end_group_namespaces(void)
{
	for (size_t s = 0; s < FX_NNS; s++) {
		struct fz_ns *g = &fx.ns[s];

		for (int i = 0; i < fx.nents && g->drops > 0; i++) {
			struct fz_url *u = &fx.ents[i].url[s];
			struct fz_doc *d = &fx.ents[i].doc[s];

			if (u->submits > 0)
				u->known = false;
			else
				url_gone(u);
			/* Its documents are gone for every reader at once,
			 * but one the group stores may come after. */
			if (d->mut > 0)
				d->known = false;
			else {
				d->known = true;
				d->present = false;
			}
		}
		if (g->drops > 0 && g->sets == 0 && g->submits == 0) {
			g->exists_known = g->ttl_known = true;
			g->exists = false;
			g->ttl_ms = 0;
		} else if (g->drops > 0) {
			g->exists_known = false;
			g->ttl_known = g->sets == 0 ||
			    (g->set_ttl_same && g->set_ttl_ms == 0);
			g->ttl_ms = 0;
		} else {
			if (g->sets > 0) {
				g->ttl_known = g->set_ttl_same;
				g->ttl_ms = g->set_ttl_ms;
			}
			if (g->sets > 0 || g->submits > 0)
				g->exists_known = g->exists = true;
		}
		if (g->failed)
			g->exists_known = g->ttl_known = false;
		g->drops = g->sets = g->submits = 0;
		g->failed = false;
	}
	fx.expired = fx.group_expired;
}

/* Sends nothing more: waits for the group's replies and checks them. */
static void
end_group(void)
{
	if (group_start == fx.nreqs)
		return;
	fx.group_max_doc_id = fx.max_doc_id;
	fx_wait(group_answered, "a group's replies");
	for (int i = group_start; i < fx.nreqs; i++)
		check_reply(&fx.reqs[i]);
	for (int i = 0; i < fx.nents; i++) {
		struct fz_ent *e = &fx.ents[i];

		for (size_t s = 0; s < FX_NNS; s++) {
			struct fz_doc *d = &e->doc[s];
			struct fz_url *u = &e->url[s];

			/* Submits in an order the model does not know: the
			 * record may be any one's. */
			if (u->submits > 0 && (fx.ns[s].drops > 0 ||
			    conflicted_url(u))) {
				u->dig = u->dig || u->dsubmits > 0;
				u->txt = u->txt || u->dsubmits < u->submits;
			}
			if (fx.ns[s].drops == 0 && conflicted_url(u))
				u->known = false;
			if (fx.ns[s].drops == 0 && conflicted_doc(d, (int)s))
				d->known = false;
			if (d->known && d->present && d->id > fx.max_doc_id)
				fx.max_doc_id = d->id;
		}
	}
	end_group_namespaces();
	for (int i = 0; i < fx.nents; i++) {
		struct fz_ent *e = &fx.ents[i];

		for (size_t s = 0; s < FX_NNS; s++) {
			e->url[s].touch = e->url[s].mut = 0;
			e->url[s].submits = e->url[s].dsubmits = 0;
			e->doc[s].touch = e->doc[s].mut = 0;
			e->doc[s].last_req = -1;
		}
		e->last_req = -1;
	}
	for (int i = group_start; i < fx.nreqs; i++)
		if (fx.reqs[i].resp != NULL &&
		    fx.reqs[i].resp->result_case ==
		    NDDD__V1__RESPONSE__RESULT_DOC &&
		    fx.reqs[i].resp->doc->doc_id > fx.max_doc_id)
			fx.max_doc_id = fx.reqs[i].resp->doc->doc_id;
	group_start = fx.nreqs;
}

/* ---- A raw frame: the last of a sequence. ---- */

static bool
raw_done(void)
{
	if (fx.cli_eof)
		return true;
	return fx.raw_decodes && fx.raw_resp != NULL &&
	    fx.sentinel_resp != NULL;
}

/* A raw frame's request that submits digests, in a namespace of the
 * model's: its URLs may be out of the host index from then on. */
static void
note_digests(const Nddd__V1__Request *r)
{
	const Nddd__V1__UrlBatch *b = r->op_case ==
	    NDDD__V1__REQUEST__OP_URL_SUBMIT ? r->url_submit : NULL;

	if (b == NULL || b->digests.len == 0)
		return;
	for (size_t s = 0; s < FX_NNS; s++)
		if (strcmp(b->namespace_ != NULL ? b->namespace_ : "",
		    fx_ns_names[s]) == 0)
			fx.exec_digests[s] = true;
}

static void
send_raw(struct fz_in *in)
{
	struct evbuffer *out = bufferevent_get_output(fx.cli);
	uint8_t kind = in_byte(in), hdr[4];
	const uint8_t *raw;
	uint8_t *p = NULL;
	size_t len = 0;
	uint32_t wire;
	Nddd__V1__Request *dec;

	if ((kind & 3) == 1 || (kind & 3) == 2) {
		/* A request with bytes changed, or cut short. */
		struct fz_req *q = &fx.reqs[fx.nreqs];
		Nddd__V1__Request m = NDDD__V1__REQUEST__INIT;

		memset(q, 0, sizeof(*q));
		q->id = m.id = next_id++;
		q->op = fz_op_of[in_byte(in) & 15];
		if (q->op == FZ_MORE)
			q->op = fz_more_of[in_byte(in) & 7];
		if (q->op == FZ_RAW || q->op == FZ_CLOCK)
			q->op = FZ_URL_SUBMIT;
		q->role = ROLE_ADMIN;
		m.token = (char *)fx_tokens[ROLE_ADMIN];
		gen_request(in, q, &m);
		len = nddd__v1__request__get_packed_size(&m);
		p = fz_alloc(len);
		nddd__v1__request__pack(&m, p);
		if ((kind & 3) == 1) {
			for (int i = 0; i < 1 + (kind >> 6); i++) {
				uint8_t at = in_byte(in), x = in_byte(in);

				p[at % len] ^= x ? x : 0x80;
			}
		} else
			len = in_byte(in) % len;
		/* Its items are no model's business now, nor what it may do
		 * to the namespaces (the next executions'). */
		q->n = 0;
		for (size_t i = 0; i < FX_NNS; i++)
			fx.ns[i] = (struct fz_ns){ .exists_known = false };
	} else if ((kind & 3) == 0) {
		len = in_string(in, 255, &raw);
		p = fz_alloc(len);
		memcpy(p, raw, len);
	}
	if ((kind & 3) == 3) {
		/* Longer than the server takes: refused before it is read. */
		wire = htonl((uint32_t)fx.cfg.max_frame + 1 + kind);
		memcpy(hdr, &wire, 4);
		evbuffer_add(out, hdr, 4);
		fx.raw_decodes = false;
	} else {
		wire = htonl((uint32_t)len);
		memcpy(hdr, &wire, 4);
		evbuffer_add(out, hdr, 4);
		evbuffer_add(out, p, len);
		dec = nddd__v1__request__unpack(NULL, len, p);
		fx.raw_decodes = dec != NULL;
		fx.raw_id = dec != NULL ? dec->id : 0;
		if (dec != NULL) {
			note_digests(dec);
			nddd__v1__request__free_unpacked(dec, NULL);
		}
	}
	/* Then a request that shows whether the connection lives on. */
	{
		Nddd__V1__Request m = NDDD__V1__REQUEST__INIT;
		Nddd__V1__StatsRequest sr = NDDD__V1__STATS_REQUEST__INIT;

		fx.sentinel_id = m.id = FX_SENTINEL_ID | next_id++;
		m.op_case = NDDD__V1__REQUEST__OP_STATS;
		m.stats = &sr;
		if (frame_write(out, &m.base) != 0)
			fx_fail("out of memory");
	}
	fx.raw_sent = true;
	fx_wait(raw_done, "the replies to a raw frame");
	if (fx_trace)
		fprintf(stderr, "raw frame of %zu bytes (%s): %s%s%s\n", len,
		    fx.raw_decodes ? "a request" : "no request",
		    fx.raw_resp ? "answered, " : "",
		    fx.conn_error ? "error with id 0, " : "",
		    fx.cli_eof ? "closed" : "open");
	if (!fx.raw_decodes) {
		if (fx.raw_resp != NULL || fx.conn_error == NULL ||
		    fx.conn_error->status == NULL ||
		    (fx.conn_error->status->code !=
		    NDDD__V1__CODE__INVALID_ARGUMENT &&
		    fx.conn_error->status->code !=
		    NDDD__V1__CODE__RESOURCE_EXHAUSTED))
			fx_fail("a frame that is no request did not fail the "
			    "connection with an error");
	} else if (fx.cli_eof && fx.raw_resp == NULL) {
		/* Decoding it would take more memory than its size allows. */
		if (fx.conn_error == NULL || fx.conn_error->status == NULL ||
		    fx.conn_error->status->code !=
		    NDDD__V1__CODE__RESOURCE_EXHAUSTED)
			fx_fail("a request closed the connection without "
			    "saying why");
	} else if (fx.cli_eof && !(fx.raw_id == 0 && fx.raw_resp->status))
		fx_fail("the server closed the connection after answering "
		    "a request");
	fx.cli_spent = true;
}

/* ---- The clock. ---- */

/*
 * Moves the daemon's clock on, between groups, by a byte's worth: up to
 * 223 s, or 1 to 16 ms, or 1 to 16 hours (FX_MAX_CLOCK_STEPS times in an
 * execution at most); what the model knows has expired then.
 */
static void
advance_clock(uint8_t b)
{
	uint64_t step = b < 0xe0 ? b * UINT64_C(1000) : b < 0xf0 ?
	    b - UINT64_C(0xdf) : (b - UINT64_C(0xef)) * 3600 * 1000;

	end_group();
	if (fx.clock_steps++ >= FX_MAX_CLOCK_STEPS)
		return;
	__atomic_store_n(&fx_now_ms, fx_now_ms + step, __ATOMIC_RELEASE);
	if (fx_trace)
		fprintf(stderr, "clock +%llu ms: %llu\n",
		    (unsigned long long)step, (unsigned long long)fx_now_ms);
	for (int i = 0; i < fx.nents; i++)
		for (size_t s = 0; s < FX_NNS; s++) {
			struct fz_url *u = &fx.ents[i].url[s];

			if (!u->known || u->count == 0)
				continue;
			if (!u->times_known)
				u->known = false;
			else if (u->expires != 0 && u->expires <= fx_now_ms) {
				u->count = 0;
				u->stale = true;
			}
		}
}

/* ---- One execution. ---- */

static void
free_replies(void)
{
	for (int i = 0; i < fx.nreqs; i++)
		if (fx.reqs[i].resp != NULL)
			nddd__v1__response__free_unpacked(fx.reqs[i].resp,
			    NULL);
	if (fx.raw_resp != NULL)
		nddd__v1__response__free_unpacked(fx.raw_resp, NULL);
	if (fx.sentinel_resp != NULL)
		nddd__v1__response__free_unpacked(fx.sentinel_resp, NULL);
	if (fx.conn_error != NULL)
		nddd__v1__response__free_unpacked(fx.conn_error, NULL);
	fx.raw_resp = fx.sentinel_resp = fx.conn_error = NULL;
}

static void
fx_reconnect_if_needed(void)
{
	if (fx.cli != NULL && (fx.cli_eof || fx.cli_spent))
		fx_disconnect();
	if (fx.cli == NULL)
		fx_connect();
}

/*
 * Before the stack is closed: verify what the executions since it was
 * opened left in it.
 */
static void
fx_verify_epoch(void)
{
	Nddd__V1__Request m = NDDD__V1__REQUEST__INIT;
	Nddd__V1__VerifyRequest v = NDDD__V1__VERIFY_REQUEST__INIT;
	struct fz_req *q = &fx.reqs[0];

	fx_reconnect_if_needed();
	memset(q, 0, sizeof(*q));
	q->id = m.id = next_id++;
	q->op = FZ_VERIFY;
	q->role = ROLE_ADMIN;
	m.token = (char *)fx_tokens[ROLE_ADMIN];
	m.op_case = NDDD__V1__REQUEST__OP_VERIFY;
	m.verify = &v;
	fx.nreqs = 1;
	fx.nents = fx.nforgets = 0;
	fx.raw_sent = false;
	group_start = 0;
	if (frame_write(bufferevent_get_output(fx.cli), &m.base) != 0)
		fx_fail("out of memory");
	fx_context = "this was the verify after a whole epoch of executions "
	    "of the stack: the input below is only the last of them";
	end_group();
	fx_context = NULL;
	free_replies();
}

static void
fx_init_once(void)
{
	struct urlcanon_options o = { false, false, false };
	char *cause = NULL;

	signal(SIGPIPE, SIG_IGN);
	fx_trace = getenv("FUZZ_DISPATCH_TRACE") != NULL;
	clock_wall_source = fx_clock;
	arena_init(&fx.arena, 64 * 1024);
	if ((fx.uc = urlcanon_new(&o)) == NULL ||
	    (fx.md = EVP_MD_CTX_new()) == NULL ||
	    (fx.sc = simhash_scratch_new()) == NULL)
		fx_fail("out of memory");
	atexit(fx_at_exit);
	fx_open();
	if ((fx.sh = simhash_new(fx.cfg.term_hash, NULL, &cause)) == NULL)
		fx_fail("simhash: %s", cause ? cause : "?");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };

	if (fx.uc == NULL)
		fx_init_once();
	else if (fx.execs >= FX_REOPEN_EXECS) {
		fx_verify_epoch();
		fx_close();
		fx_open();
	}
	fx.execs++;
	/* The execution's own host: the counter mixed (a bijection), so that
	 * a request of a raw frame, a few bytes changed, does not name the
	 * host of an execution to come. */
	fx.nonce = ++nonce_counter;
	fx.nonce = (fx.nonce ^ fx.nonce >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
	fx.nonce = (fx.nonce ^ fx.nonce >> 27) * UINT64_C(0x94d049bb133111eb);
	fx.nonce ^= fx.nonce >> 31;
	snprintf(fx.label, sizeof(fx.label), "n%016" PRIx64, fx.nonce);
	snprintf(fx.host, sizeof(fx.host), "%s.example", fx.label);
	snprintf(fx.www, sizeof(fx.www), "www.%s", fx.host);
	snprintf(fx.deep, sizeof(fx.deep), "a.b.%s", fx.host);
	snprintf(fx.bad, sizeof(fx.bad), "bad%s", fx.host);
	snprintf(fx.evil, sizeof(fx.evil), "%s.evil.org", fx.host);
	snprintf(fx.ext, sizeof(fx.ext), "%sb.example", fx.label);
	fx_reconnect_if_needed();
	arena_reset(&fx.arena);
	fx.nreqs = fx.nents = fx.nforgets = 0;
	group_start = 0;
	fx.max_doc_id = 0;
	fx.clock_steps = 0;
	fx.raw_sent = fx.raw_decodes = false;
	memset(fx.buckets, 0xff, sizeof(fx.buckets));

	while (in.n > 0 && fx.nreqs < FX_MAX_REQS) {
		uint8_t b = in_byte(&in);
		unsigned tok = (b >> 4) & 7;
		enum fz_op op = fz_op_of[b & 15];
		struct fz_req *q = &fx.reqs[fx.nreqs];
		Nddd__V1__Request m = NDDD__V1__REQUEST__INIT;

		if (op == FZ_RAW) {
			end_group();
			send_raw(&in);
			break;
		}
		if (op == FZ_MORE)
			op = fz_more_of[in_byte(&in) & 7];
		if (op == FZ_CLOCK) {
			advance_clock(in_byte(&in));
			continue;
		}
		memset(q, 0, sizeof(*q));
		q->op = op;
		q->id = m.id = next_id++;
		switch (tok) {
		case 0:
			q->role = ROLE_NONE;
			break;
		case 1:
		case 2:
			q->role = tok == 1 ? ROLE_READ : ROLE_WRITE;
			m.token = (char *)fx_tokens[q->role];
			break;
		case 3:
			q->role = ROLE_NONE;
			m.token = (char *)FX_UNKNOWN_TOKEN;
			break;
		case 7:
			/* Its role depends on the request (ns_token_role). */
			q->role = ROLE_ADMIN;
			q->ns_token = true;
			m.token = (char *)FX_NS_TOKEN;
			break;
		default:
			q->role = ROLE_ADMIN;
			m.token = (char *)fx_tokens[ROLE_ADMIN];
			break;
		}
		gen_request(&in, q, &m);
		fx.nreqs++;
		if (frame_write(bufferevent_get_output(fx.cli), &m.base) != 0)
			fx_fail("out of memory");
		if (b & 0x80)
			end_group();
	}
	end_group();
	free_replies();
	for (size_t s = 0; s < FX_NNS; s++) {
		fx.digests_seen[s] = fx.digests_seen[s] || fx.exec_digests[s];
		fx.exec_digests[s] = false;
	}
	return 0;
}
