/*
 * config: nddd's settings, read from an INI file (inih) into one struct
 * before anything is opened or bound.
 *
 * Every key, its default and the reason for that default live in one table
 * in config.c; conf/nddd.conf documents the same keys and a test checks
 * that the shipped file states exactly the defaults.  Errors are reported
 * as "file:line: reason", all of them, and stop start-up.
 */
#ifndef NDDD_CONFIG_H
#define NDDD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "simhash.h"
#include "store.h"

#define CONFIG_DEFAULT_PORT 6464

struct config {
	/* [server] */
	char *listen;			/* HOST:PORT, or NULL: no plain TCP */
	uint64_t max_frame;		/* bytes of one frame */
	uint64_t max_batch;		/* items in one batch request */
	uint64_t max_connections;
	uint64_t max_inflight;		/* requests awaiting replies, per
					   connection, before reading pauses */
	uint64_t output_high_water;	/* bytes queued to a client before
					   reading from it pauses */
	uint64_t workers;		/* request worker threads; 0: one per
					   online CPU */
	uint64_t idle_timeout_ms;	/* close a connection silent this long;
					   0: never */
	uint64_t frame_timeout_ms;	/* close a connection whose frame takes
					   longer to arrive; 0: never */
	uint64_t write_timeout_ms;	/* close a connection that takes none
					   of its replies this long; 0: never */
	uint64_t buffer_memory;		/* bytes of all connections' buffers
					   before new requests are refused */
	uint64_t shutdown_timeout_ms;	/* how long a shutdown waits for
					   clients to take their replies */
	/* [tls] */
	char *tls_listen;		/* HOST:PORT, or NULL: no TLS */
	char *tls_cert;
	char *tls_key;
	char *tls_client_ca;		/* NULL: client certificates unasked */
	char *tls_client_cn;		/* the subject common names allowed,
					   comma-separated; NULL: any */
	/* [auth] */
	char *tokens_file;		/* NULL: no tokens, everyone is admin */
	bool allow_unauthenticated;
	/* [metrics] */
	char *metrics_listen;		/* HOST:PORT, or NULL: off */
	/* [store] */
	char *data_dir;
	uint64_t map_size;
	enum store_sync sync;
	uint64_t relaxed_sync_interval_ms; /* the longest a relaxed write
					   waits for the disk; 0: until the
					   next durable one */
	uint64_t journal_size;		/* the store journal's bytes; 0: no
					   journal, a commit per group */
	/* [urls] */
	uint64_t capacity;
	bool strip_session_ids;
	bool strip_tracking;
	bool sort_query;
	uint64_t journal_entries;	/* URLs changed between flushes */
	uint64_t segment_records;	/* records per segment */
	uint64_t keep_expired_ms;	/* expired URLs kept this long */
	bool host_index;		/* URLs' texts kept by host */
	enum simhash_simd url_simd;	/* the URL digests' lanes */
	/* [text] */
	bool html_main;			/* HTML judged by its main content */
	/* [simhash] */
	enum simhash_term_hash term_hash;
	char *stopwords;		/* path, or "none" */
	enum simhash_simd simd;
	/* [accel] */
	char *accelerator;		/* auto | cpu | NAME */
	char *accel_dir;		/* plugins' directory, or NULL */
	char *accel_params;		/* handed to the plugin, or NULL */
	uint64_t accel_threads;		/* cpu backend workers; 0: one per CPU */
	uint64_t accel_batch_docs;
	uint64_t accel_max_failures;
	/* [near] */
	uint64_t near_k;
	uint64_t near_blocks;
	uint64_t near_max_results;	/* neighbours in one reply, at most */
	bool near_hamming;		/* answer: the paper's, unverified */
	double near_resemblance;	/* verified answers' thresholds */
	double near_containment;
	/* [log] */
	enum log_level log_level;
};

/*
 * Calls fn with each key's section, name and default (as text), in the
 * order of conf/nddd.conf.
 */
void config_foreach_key(void (*fn)(const char *section, const char *name,
    const char *dflt, void *arg), void *arg);

/* Fills every field with its default.  Free with config_clear. */
void config_defaults(struct config *cfg);
void config_clear(struct config *cfg);

/*
 * Reads path over the defaults already in cfg.  On error returns -1 and sets
 * *errors to the "file:line: reason" lines (caller frees); cfg is then
 * partially updated and should be cleared.
 */
int config_load(struct config *cfg, const char *path, char **errors);

/*
 * Sets one key from its text form, as the file would ("server", "listen",
 * "0.0.0.0:6464").  Used for command-line overrides.  Returns -1 with a
 * static *cause on a bad value.
 */
int config_set(struct config *cfg, const char *section, const char *key,
    const char *value, const char **cause);

struct sockaddr_storage;

/*
 * Parses "HOST:PORT" (an IPv4 address, or an IPv6 one in brackets) into
 * *out (if not NULL).  Returns -1 if it is not one.
 */
int config_parse_address(const char *address, struct sockaddr_storage *out);
/* 1 if address is on the loopback network (127/8 or ::1), else 0. */
int config_is_loopback(const char *address);

/*
 * Walks a comma-separated list of names ([tls] client_cn): returns the
 * next name, *len its length without the blanks around it (0: an empty
 * name), and moves *list past it; NULL after the last.
 */
const char *config_list_next(const char **list, size_t *len);

/*
 * Checks relations between keys and resolves automatic values (workers = 0
 * becomes the number of online CPUs).  Returns -1 with a static *cause.
 */
int config_validate(struct config *cfg, const char **cause);

/*
 * The store's reader slots (struct store_options max_readers) for cfg, once
 * validated: every read transaction the daemon holds at once, with a margin.
 */
unsigned config_store_readers(const struct config *cfg);

#endif
