/*
 * log: the daemon's diagnostics, on standard error.
 *
 * Under systemd (JOURNAL_STREAM set) each line carries a "<N>" priority
 * prefix that journald understands; otherwise a timestamp and level name.
 * Messages start with the calling function's name by convention
 * ("%s: ...", __func__).  Safe to call from any thread: each message is one
 * write.
 */
#ifndef NDDD_LOG_H
#define NDDD_LOG_H

#include <stdarg.h>

/* Levels, in the order of syslog priorities. */
enum log_level {
	LOG_LEVEL_ERROR = 3,
	LOG_LEVEL_WARN = 4,
	LOG_LEVEL_INFO = 6,
	LOG_LEVEL_DEBUG = 7,
};

/* Sets the most verbose level printed and the program name. */
void log_init(enum log_level level, const char *progname);
/* Parses "error", "warn", "info" or "debug"; returns -1 for anything else. */
int log_level_parse(const char *name, enum log_level *out);
/* Routes libevent's own messages through this module. */
void log_route_libevent(void);

/* log_warn appends strerror(errno) and preserves errno; log_warnx does not. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* For start-up and broken invariants only: log at error level and exit(1). */
void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

#endif
