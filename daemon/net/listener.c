/*
 * listener: accepting connections without spinning.  See listener.h.
 */
#include "listener.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "config.h"
#include "log.h"

struct listener {
	struct evconnlistener *evl;
	struct event *retry;		/* accepting again after a failure */
	listener_cb cb;
	void *arg;
	const char *name;
	char *address;
	uint64_t spell;			/* failures since accepting worked */
};

static void
accept_cb(struct evconnlistener *evl, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct listener *l = arg;

	(void)evl;
	(void)salen;
	if (l->spell > 0) {
		log_info("%s %s: accepting again (%llu attempts failed)",
		    l->name, l->address, (unsigned long long)l->spell);
		l->spell = 0;
	}
	l->cb(l->arg, fd, sa);
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
	struct listener *l = arg;

	(void)fd;
	(void)what;
	evconnlistener_enable(l->evl);
}

static void
accept_error_cb(struct evconnlistener *evl, void *arg)
{
	struct listener *l = arg;
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = { 0, LISTENER_RETRY_MS * 1000 };

	/* Whatever the cause, the queued connection would wake the loop
	 * again at once: wait a little before the next attempt. */
	evconnlistener_disable(evl);
	evtimer_add(l->retry, &tv);
	if (l->spell++ > 0)
		return;
	if (err == EMFILE || err == ENFILE)
		log_warnx("%s %s: accept: %s: no new connections until "
		    "descriptors are free (the open ones are still served)",
		    l->name, l->address, strerror(err));
	else
		log_warnx("%s %s: accept: %s; retrying every %d ms", l->name,
		    l->address, strerror(err), LISTENER_RETRY_MS);
}

struct listener *
listener_new(struct event_base *base, const char *name, const char *address,
    listener_cb cb, void *arg, char **cause)
{
	struct sockaddr_storage ss;
	struct listener *l;

	*cause = NULL;
	if (config_parse_address(address, &ss) == -1) {
		if (asprintf(cause, "%s address %s is not HOST:PORT", name,
		    address) == -1)
			*cause = NULL;
		return NULL;
	}
	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->address = strdup(address)) == NULL ||
	    (l->retry = evtimer_new(base, retry_cb, l)) == NULL) {
		listener_free(l);
		return NULL;
	}
	l->cb = cb;
	l->arg = arg;
	l->name = name;
	l->evl = evconnlistener_new_bind(base, accept_cb, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    1024, (struct sockaddr *)&ss, ss.ss_family == AF_INET6 ?
	    (int)sizeof(struct sockaddr_in6) : (int)sizeof(struct sockaddr_in));
	if (l->evl == NULL) {
		if (asprintf(cause, "%s: cannot listen on %s: %s", name,
		    address, strerror(errno)) == -1)
			*cause = NULL;
		listener_free(l);
		return NULL;
	}
	evconnlistener_set_error_cb(l->evl, accept_error_cb);
	return l;
}

void
listener_free(struct listener *l)
{
	if (l == NULL)
		return;
	if (l->evl != NULL)
		evconnlistener_free(l->evl);
	if (l->retry != NULL)
		event_free(l->retry);
	free(l->address);
	free(l);
}
