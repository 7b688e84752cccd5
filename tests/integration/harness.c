/*
 * harness: a real nddd for integration tests.  See harness.h.
 */
#include "harness.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "accel.h"
#include "nddd.pb-c.h"
#include "testutil.h"

/* The first port of the kernel's range for outgoing connections, 0 if
 * unknown. */
static int
ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int low = 0;

	if (f != NULL) {
		if (fscanf(f, "%d", &low) != 1)
			low = 0;
		fclose(f);
	}
	return low;
}

static int
bind_loopback(int fd, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	return bind(fd, (struct sockaddr *)&sin, sizeof(sin));
}

/*
 * A port below the kernel's range for outgoing connections when there is
 * room: a port of that range may become the local end of some client's
 * connection before the daemon binds it, and its start then fails with
 * "Address already in use".
 */
int
harness_free_port(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int low = ephemeral_low(), port;
	static unsigned seed;

	/* One sequence per process: two calls in a row give two ports. */
	if (seed == 0)
		seed = (unsigned)getpid() * 2654435761u ^ (unsigned)time(NULL);

	for (int i = 0; low > 11024 && i < 64; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		ck_assert_int_ne(fd, -1);
		port = 10000 + (int)(rand_r(&seed) % (unsigned)(low - 10000));
		if (bind_loopback(fd, port) == 0) {
			close(fd);
			return port;
		}
		close(fd);
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(bind_loopback(fd, 0), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
	close(fd);
	return port;
}

static void
write_conf(struct harness *h)
{
	FILE *f = fopen(h->conf_path, "w");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "[server]\nlisten = %s\nworkers = 2\n\n[store]\n"
	    "data_dir = %s\n\n[urls]\ncapacity = 100000\n\n[log]\n"
	    "level = debug\n", h->address, h->data_dir);
	if (h->extra_conf != NULL)
		fprintf(f, "\n%s\n", h->extra_conf);
	fclose(f);
}

void
harness_init(struct harness *h, const char *extra_conf)
{
	memset(h, 0, sizeof(*h));
	h->dir = tu_tmpdir();
	ck_assert_int_ne(asprintf(&h->data_dir, "%s/data", h->dir), -1);
	ck_assert_int_ne(asprintf(&h->conf_path, "%s/nddd.conf", h->dir), -1);
	ck_assert_int_ne(asprintf(&h->log_path, "%s/nddd.log", h->dir), -1);
	h->port = harness_free_port();
	snprintf(h->address, sizeof(h->address), "127.0.0.1:%d", h->port);
	h->extra_conf = extra_conf ? strdup(extra_conf) : NULL;
	write_conf(h);
}

static const char *
daemon_bin(void)
{
	const char *bin = getenv("NDDD_BIN");

	return bin && *bin ? bin : "daemon/nddd";
}

/* Forks the daemon with NOTIFY_SOCKET at a fresh socket; returns its fd. */
static int
spawn(struct harness *h)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	ck_assert_int_ne(fd, -1);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/notify", h->dir);
	unlink(sun.sun_path);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		int log = open(h->log_path, O_WRONLY | O_CREAT | O_APPEND,
		    0644);

		if (log >= 0) {
			dup2(log, STDERR_FILENO);
			dup2(log, STDOUT_FILENO);
		}
		/* A test that dies must not leave its daemon behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		setenv("NOTIFY_SOCKET", sun.sun_path, 1);
		/* Tests may run as root (CI machines do); the daemon refuses
		 * root unless told. */
		if (geteuid() == 0)
			execl(daemon_bin(), "nddd", "-c", h->conf_path,
			    "--allow-root", (char *)NULL);
		else
			execl(daemon_bin(), "nddd", "-c", h->conf_path,
			    (char *)NULL);
		_exit(127);
	}
	h->pid = pid;
	return fd;
}

static void
print_log(const struct harness *h)
{
	char *log = tu_read_file(h->log_path, NULL);

	fprintf(stderr, "--- %s ---\n%s--- end ---\n", h->log_path,
	    log ? log : "(none)\n");
	free(log);
}

/*
 * True when the daemon just failed because another process took its port
 * between harness_free_port() and its bind: tests run beside each other,
 * each picking ports at random.
 */
static int
port_taken(const struct harness *h)
{
	char *log = tu_read_file(h->log_path, NULL), *want = NULL;
	int taken;

	ck_assert_int_ne(asprintf(&want, "cannot listen on %s: %s",
	    h->address, strerror(EADDRINUSE)), -1);
	taken = log != NULL && strstr(log, want) != NULL;
	free(want);
	free(log);
	return taken;
}

/*
 * Gives the daemon a new port, changing only the listen line: tests may
 * have appended to the configuration since it was written.
 */
static void
move_port(struct harness *h)
{
	char *conf = tu_read_file(h->conf_path, NULL), *line = NULL, *at;
	FILE *f;

	ck_assert_ptr_nonnull(conf);
	ck_assert_int_ne(asprintf(&line, "listen = %s\n", h->address), -1);
	at = strstr(conf, line);
	ck_assert_ptr_nonnull(at);
	h->port = harness_free_port();
	snprintf(h->address, sizeof(h->address), "127.0.0.1:%d", h->port);
	f = fopen(h->conf_path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%.*slisten = %s\n%s", (int)(at - conf), conf, h->address,
	    at + strlen(line));
	fclose(f);
	free(line);
	free(conf);
}

void
harness_start(struct harness *h)
{
	int fd = spawn(h), status, tries = 0;
	char buf[512];
	time_t deadline = time(NULL) + 60;

	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (waitpid(h->pid, &status, WNOHANG) == h->pid) {
			h->pid = 0;
			/* Only a first start may move: once started, clients
			 * and peers know the address. */
			if (!h->started && ++tries < 8 && port_taken(h)) {
				close(fd);
				move_port(h);
				unlink(h->log_path);
				fd = spawn(h);
				continue;
			}
			print_log(h);
			ck_abort_msg("nddd exited during start-up (status %d)",
			    status);
		}
		if (time(NULL) > deadline) {
			print_log(h);
			ck_abort_msg("nddd did not become ready in 60 s");
		}
		if (poll(&pfd, 1, 100) != 1)
			continue;
		n = recv(fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		if (strstr(buf, "READY=1") != NULL)
			break;
	}
	close(fd);
	h->started = 1;
}

int
harness_start_failing(struct harness *h, char **output)
{
	int fd = spawn(h), status;

	close(fd);
	ck_assert_int_eq(waitpid(h->pid, &status, 0), h->pid);
	h->pid = 0;
	*output = tu_read_file(h->log_path, NULL);
	unlink(h->log_path);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int
harness_stop(struct harness *h)
{
	int status;

	if (h->pid == 0)
		return -1;
	kill(h->pid, SIGTERM);
	ck_assert_int_eq(waitpid(h->pid, &status, 0), h->pid);
	h->pid = 0;
	/* A stop that fails says why. */
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		print_log(h);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void
harness_kill(struct harness *h)
{
	if (h->pid == 0)
		return;
	kill(h->pid, SIGKILL);
	waitpid(h->pid, NULL, 0);
	h->pid = 0;
}

void
harness_cleanup(struct harness *h)
{
	harness_kill(h);
	tu_rmtree(h->dir);
	free(h->dir);
	free(h->data_dir);
	free(h->conf_path);
	free(h->log_path);
	free(h->extra_conf);
	memset(h, 0, sizeof(*h));
}

nddd_client *
harness_client(const struct harness *h)
{
	char *err = NULL;
	nddd_client *c = nddd_connect(h->address, 30000, &err);

	ck_assert_msg(c != NULL, "connect %s: %s", h->address, err);
	return c;
}

nddd_client *
harness_client_opts(const char *address, const struct nddd_options *opts)
{
	char *err = NULL;
	nddd_client *c = nddd_connect_opts(address, opts, &err);

	ck_assert_msg(c != NULL, "connect %s: %s", address, err);
	return c;
}

void
harness_add_conf(struct harness *h, const char *text)
{
	FILE *f = fopen(h->conf_path, "a");

	ck_assert_ptr_nonnull(f);
	fprintf(f, "\n%s\n", text);
	fclose(f);
}

long
harness_anon_bytes(const struct harness *h)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)h->pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Anonymous: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

/* Raw protocol frames, for what the client library does not send. */

int
harness_raw_connect(const struct harness *h)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_port = htons((uint16_t)h->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

void
harness_raw_send(int fd, const void *buf, size_t len)
{
	ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
}

void
harness_raw_frame(int fd, const void *payload, uint32_t len)
{
	uint8_t hdr[4] = { len >> 24, len >> 16, len >> 8, len };

	harness_raw_send(fd, hdr, 4);
	if (len > 0)
		harness_raw_send(fd, payload, len);
}

Nddd__V1__Response *
harness_raw_recv(int fd)
{
	uint8_t hdr[4], *buf;
	uint32_t len;
	size_t got = 0;
	Nddd__V1__Response *r;

	while (got < 4) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		ck_assert_msg(poll(&pfd, 1, 10000) == 1, "no reply in 10 s");
		n = recv(fd, hdr + got, 4 - got, 0);
		if (n <= 0)
			return NULL;
		got += (size_t)n;
	}
	len = (uint32_t)hdr[0] << 24 | hdr[1] << 16 | hdr[2] << 8 | hdr[3];
	buf = malloc(len + 1);
	for (got = 0; got < len;) {
		ssize_t n = recv(fd, buf + got, len - got, MSG_WAITALL);

		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	r = nddd__v1__response__unpack(NULL, len, buf);
	free(buf);
	ck_assert_ptr_nonnull(r);
	return r;
}

bool
harness_raw_closed(int fd)
{
	char c;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	if (poll(&pfd, 1, 10000) != 1)
		return false;
	return recv(fd, &c, 1, 0) <= 0;
}

Nddd__V1__Response *
harness_raw_call(const struct harness *h, const Nddd__V1__Request *req)
{
	size_t size = nddd__v1__request__get_packed_size(req);
	uint8_t *buf = malloc(size + 1);
	Nddd__V1__Response *r;
	int fd = harness_raw_connect(h);

	ck_assert_ptr_nonnull(buf);
	nddd__v1__request__pack(req, buf);
	harness_raw_frame(fd, buf, (uint32_t)size);
	free(buf);
	r = harness_raw_recv(fd);
	close(fd);
	ck_assert_ptr_nonnull(r);
	return r;
}

/*
 * A directory of the harness holding the test plugin from (built next to
 * this program, in ../plugins) as nddd-accel-NAME.so, with mode.
 */
char *
harness_plugin_dir(struct harness *h, const char *from, const char *name,
    mode_t mode)
{
	char exe[4096], src[4200], *dir, *dst;
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(src, sizeof(src), "%s/../plugins/%s%s%s", dirname(exe),
	    ACCEL_PLUGIN_PREFIX, from, ACCEL_PLUGIN_SUFFIX);
	ck_assert_int_ne(asprintf(&dir, "%s/plugins", h->dir), -1);
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ck_assert_int_ne(asprintf(&dst, "%s/%s%s%s", dir, ACCEL_PLUGIN_PREFIX,
	    name, ACCEL_PLUGIN_SUFFIX), -1);
	tu_copy_file(src, dst, mode);
	free(dst);
	return dir;
}

void
harness_expect_refused(Nddd__V1__Response *r, Nddd__V1__Code code,
    const char *part)
{
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, code);
	ck_assert_msg(strstr(r->status->message, part) != NULL, "%s",
	    r->status->message);
	nddd__v1__response__free_unpacked(r, NULL);
}

void
harness_assert_verified(const struct harness *h, uint64_t urls,
    const char *when)
{
	nddd_client *c = harness_client(h);
	struct nddd_verify v;

	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent && v.counter_mismatches == 0 &&
	    v.url_index_mismatches == 0, "%s: %s", when, v.detail);
	ck_assert_msg(v.urls == urls, "%s: %llu URL records, want %llu", when,
	    (unsigned long long)v.urls, (unsigned long long)urls);
	nddd_close(c);
}

bool
harness_log_has(const struct harness *h, const char *text)
{
	char *log = tu_read_file(h->log_path, NULL);
	bool has = log != NULL && strstr(log, text) != NULL;

	free(log);
	return has;
}
