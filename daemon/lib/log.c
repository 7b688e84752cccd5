/*
 * log: the daemon's diagnostics, on standard error.  See log.h.
 */
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

static enum log_level log_max = LOG_LEVEL_INFO;
static const char *log_progname = "nddd";
static int log_journal;

void
log_init(enum log_level level, const char *progname)
{
	log_max = level;
	log_progname = progname;
	/* journald adds its own timestamps and understands <N> prefixes. */
	log_journal = getenv("JOURNAL_STREAM") != NULL;
}

int
log_level_parse(const char *name, enum log_level *out)
{
	static const struct {
		const char *name;
		enum log_level level;
	} names[] = {
		{ "error", LOG_LEVEL_ERROR },
		{ "warn", LOG_LEVEL_WARN },
		{ "info", LOG_LEVEL_INFO },
		{ "debug", LOG_LEVEL_DEBUG },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*out = names[i].level;
			return 0;
		}
	}
	return -1;
}

static const char *
log_level_name(enum log_level level)
{
	switch (level) {
	case LOG_LEVEL_ERROR: return "error";
	case LOG_LEVEL_WARN: return "warn";
	case LOG_LEVEL_INFO: return "info";
	case LOG_LEVEL_DEBUG: return "debug";
	}
	return "?";
}

static void
log_vwrite(enum log_level level, const char *suffix, const char *fmt,
    va_list ap) __attribute__((format(printf, 3, 0)));

static void
log_vwrite(enum log_level level, const char *suffix, const char *fmt,
    va_list ap)
{
	char msg[2048], line[2200];
	int n;

	if (level > log_max)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_journal) {
		n = snprintf(line, sizeof(line), "<%d>%s%s%s\n", (int)level, msg,
		    suffix ? ": " : "", suffix ? suffix : "");
	} else {
		struct timespec ts;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		gmtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		n = snprintf(line, sizeof(line), "%s.%03ldZ %s[%d] %s: %s%s%s\n",
		    stamp, ts.tv_nsec / 1000000, log_progname, (int)getpid(),
		    log_level_name(level), msg, suffix ? ": " : "",
		    suffix ? suffix : "");
	}
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line)) {
		n = sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	/* One write per message keeps lines whole across threads. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere left to report it. */
	}
}

void
log_warn(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, strerror(saved), fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_WARN, NULL, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_INFO, NULL, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_DEBUG, NULL, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, strerror(saved), fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_LEVEL_ERROR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}

static void
log_libevent(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	default:
		log_warnx("libevent: %s", msg);
		break;
	}
}

void
log_route_libevent(void)
{
	event_set_log_callback(log_libevent);
}
