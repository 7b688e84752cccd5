/*
 * harness: a real nddd for integration tests, on a free loopback port with
 * its own temporary directory and configuration.
 *
 * The daemon is started from $NDDD_BIN with NOTIFY_SOCKET pointing at a
 * socket of the harness, so "started" means the daemon said READY=1: its
 * filter is rebuilt and its listener open.  Its standard error goes to a log
 * file in the directory, printed when a start fails.
 */
#ifndef NDDD_HARNESS_H
#define NDDD_HARNESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "nddd.h"
#include "nddd.pb-c.h"

struct harness {
	char *dir;		/* temporary directory, removed at the end */
	char *data_dir;		/* dir/data */
	char *conf_path;	/* dir/nddd.conf */
	char *log_path;		/* dir/nddd.log */
	char address[64];	/* 127.0.0.1:PORT */
	int port;
	pid_t pid;		/* 0 when not running */
	int started;		/* has been ready once: the port is fixed */
	char *extra_conf;	/* appended to the generated configuration */
};

/*
 * Prepares a harness: directory, free port, configuration with listen and
 * data_dir plus extra_conf (INI text, may be NULL).  Does not start it.
 */
void harness_init(struct harness *h, const char *extra_conf);
/* Starts the daemon and waits for READY=1; fails the test otherwise. */
void harness_start(struct harness *h);
/*
 * Starts the daemon expecting it to fail: returns its exit status and
 * leaves its standard error in *output (caller frees).
 */
int harness_start_failing(struct harness *h, char **output);
/* SIGTERM and wait: returns the exit status (-1 if killed by a signal). */
int harness_stop(struct harness *h);
/* SIGKILL and wait. */
void harness_kill(struct harness *h);
/* Stops the daemon if running and removes the directory. */
void harness_cleanup(struct harness *h);

/* A connected client; fails the test if it cannot connect. */
nddd_client *harness_client(const struct harness *h);
/* The same with options (token, TLS) to address. */
nddd_client *harness_client_opts(const char *address,
    const struct nddd_options *opts);

/* A free loopback port, for a second listener. */
int harness_free_port(void);
/* Appends text to the harness's configuration file. */
void harness_add_conf(struct harness *h, const char *text);

/* The daemon's resident anonymous memory in bytes (from smaps_rollup). */
long harness_anon_bytes(const struct harness *h);

/*
 * Raw protocol frames, for what the client library does not send: a
 * connection to h's daemon, bytes and frames sent on it (the test fails
 * if they cannot be), one response frame read (10 s at most; NULL if the
 * connection closed first), whether the peer closed (EOF within 10 s),
 * and one request answered on a connection of its own.
 */
int harness_raw_connect(const struct harness *h);
void harness_raw_send(int fd, const void *buf, size_t len);
void harness_raw_frame(int fd, const void *payload, uint32_t len);
Nddd__V1__Response *harness_raw_recv(int fd);
bool harness_raw_closed(int fd);
Nddd__V1__Response *harness_raw_call(const struct harness *h,
    const Nddd__V1__Request *req);
/* r (then freed) must be refused with code, its message containing part. */
void harness_expect_refused(Nddd__V1__Response *r, Nddd__V1__Code code,
    const char *part);
/* Whether the daemon's log holds text. */
bool harness_log_has(const struct harness *h, const char *text);

/* A verify must find memory and store agreeing, with urls URL records. */
void harness_assert_verified(const struct harness *h, uint64_t urls,
    const char *when);

/*
 * A directory of the harness holding the test plugin from (built next to
 * the test program, in ../plugins) as nddd-accel-NAME.so, with mode; the
 * caller frees the path.
 */
char *harness_plugin_dir(struct harness *h, const char *from,
    const char *name, mode_t mode);

#endif
