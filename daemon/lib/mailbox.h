/*
 * mailbox: how other threads hand finished work back to the event loop.
 *
 * Worker threads (the store writer, accelerator backends) never touch a
 * connection.  They post a message; the event loop is woken through an
 * eventfd and delivers the messages, in the order they were posted, to the
 * callback given at creation.  Messages are intrusive: embed a struct
 * mailbox_msg in the object being handed over and recover it with
 * MAILBOX_CONTAINER.
 */
#ifndef NDDD_MAILBOX_H
#define NDDD_MAILBOX_H

#include <stddef.h>

struct event_base;

struct mailbox_msg {
	struct mailbox_msg *next;
};

#define MAILBOX_CONTAINER(msg, type, member) \
	((type *)(void *)((char *)(msg) - offsetof(type, member)))

typedef void (*mailbox_deliver_fn)(struct mailbox_msg *msg, void *arg);

/*
 * Creates a mailbox delivering into base's loop.  Returns NULL with errno set
 * when the eventfd or event cannot be created.
 */
struct mailbox *mailbox_new(struct event_base *base, mailbox_deliver_fn deliver,
    void *arg);
/* Frees the mailbox; messages still queued are not delivered. */
void mailbox_free(struct mailbox *mb);

/* Queues msg for delivery in the loop thread.  Callable from any thread. */
void mailbox_post(struct mailbox *mb, struct mailbox_msg *msg);

/* Delivers whatever is queued now, in the calling (loop) thread. */
void mailbox_drain(struct mailbox *mb);

#endif
