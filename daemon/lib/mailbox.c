/*
 * mailbox: how other threads hand finished work back to the event loop.
 * See mailbox.h.
 *
 * Locking: the queue is guarded by mb->lock; the eventfd is written only
 * when the queue goes from empty to non-empty, so a burst of posts costs one
 * wake-up.
 */
#include "mailbox.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"

struct mailbox {
	pthread_mutex_t lock;
	struct mailbox_msg *head;
	struct mailbox_msg *tail;
	int fd;
	struct event *ev;
	mailbox_deliver_fn deliver;
	void *arg;
};

static void
mailbox_wake(evutil_socket_t fd, short what, void *arg)
{
	struct mailbox *mb = arg;
	uint64_t n;

	(void)what;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_warn("%s: read", __func__);
	mailbox_drain(mb);
}

struct mailbox *
mailbox_new(struct event_base *base, mailbox_deliver_fn deliver, void *arg)
{
	struct mailbox *mb;

	if ((mb = calloc(1, sizeof(*mb))) == NULL)
		return NULL;
	pthread_mutex_init(&mb->lock, NULL);
	mb->fd = -1;
	mb->deliver = deliver;
	mb->arg = arg;
	if ((mb->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) == -1)
		goto err;
	mb->ev = event_new(base, mb->fd, EV_READ | EV_PERSIST, mailbox_wake, mb);
	if (mb->ev == NULL || event_add(mb->ev, NULL) == -1) {
		errno = ENOMEM;
		goto err;
	}
	return mb;
err:
	mailbox_free(mb);
	return NULL;
}

void
mailbox_free(struct mailbox *mb)
{
	if (mb == NULL)
		return;
	if (mb->ev != NULL)
		event_free(mb->ev);
	if (mb->fd >= 0)
		close(mb->fd);
	pthread_mutex_destroy(&mb->lock);
	free(mb);
}

void
mailbox_post(struct mailbox *mb, struct mailbox_msg *msg)
{
	uint64_t one = 1;
	int was_empty;

	msg->next = NULL;
	pthread_mutex_lock(&mb->lock);
	was_empty = mb->head == NULL;
	if (was_empty)
		mb->head = msg;
	else
		mb->tail->next = msg;
	mb->tail = msg;
	pthread_mutex_unlock(&mb->lock);
	if (was_empty && write(mb->fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("%s: write", __func__);
}

void
mailbox_drain(struct mailbox *mb)
{
	struct mailbox_msg *msg, *next;

	pthread_mutex_lock(&mb->lock);
	msg = mb->head;
	mb->head = mb->tail = NULL;
	pthread_mutex_unlock(&mb->lock);
	for (; msg != NULL; msg = next) {
		next = msg->next;
		mb->deliver(msg, mb->arg);
	}
}
