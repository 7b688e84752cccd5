/*
 * urljournal: the URL store's journal file.  See urljournal.h.
 *
 * Frame layout, little-endian: magic u32 ("UJF2"), entries u32, sequence
 * u64, crc32c u32 (of the entries count, the sequence and the payload),
 * text bytes u32; then per entry fp[16], count u32, first u64, last u64,
 * expires u64, namespace u32; then the texts (opaque here: urlhosts.h).  Frames of format 2 ("UJF1") lack the last
 * two fields (no time to live, the default namespace): a journal left by
 * the nddd before is replayed all the same.
 */
#include "urljournal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "le.h"
#include "log.h"

#define URLJOURNAL_MAGIC	0x32464a55u	/* "UJF2" */
#define URLJOURNAL_V2_MAGIC	0x31464a55u	/* "UJF1" */
#define URLJOURNAL_V2_ENTRY_LEN	36
#define URLJOURNAL_NAME		"urls.journal"
#define URLJOURNAL_ZERO_CHUNK	(1u << 20)

struct urljournal {
	int fd;
	size_t size;
	size_t offset;			/* where the next frame goes */
	uint64_t seq;			/* of the last frame written */
	uint8_t *buf;			/* one frame being built */
	size_t buf_len;
	uint64_t bytes_written, frames_written, syncs;
};

static int
write_all(int fd, const void *data, size_t len, off_t off)
{
	const uint8_t *p = data;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int
set_cause(char **cause, const char *what, const char *path)
{
	if (asprintf(cause, "%s %s: %s", what, path, strerror(errno)) == -1)
		*cause = NULL;
	return -1;
}

/* Zeroes the file from its end up to size, and makes that durable. */
static int
extend(int fd, const char *dir, const char *path, size_t size, char **cause)
{
	struct stat sb;
	uint8_t *zero;
	size_t at;
	int dfd;

	if (fstat(fd, &sb) == -1)
		return set_cause(cause, "cannot stat", path);
	if ((size_t)sb.st_size >= size)
		return 0;
	if ((zero = calloc(1, URLJOURNAL_ZERO_CHUNK)) == NULL) {
		*cause = NULL;
		return -1;
	}
	for (at = (size_t)sb.st_size; at < size; at += URLJOURNAL_ZERO_CHUNK) {
		size_t n = size - at < URLJOURNAL_ZERO_CHUNK ? size - at :
		    URLJOURNAL_ZERO_CHUNK;

		if (write_all(fd, zero, n, (off_t)at) == -1) {
			free(zero);
			return set_cause(cause, "cannot write", path);
		}
	}
	free(zero);
	if (fsync(fd) == -1)
		return set_cause(cause, "cannot sync", path);
	/* The new file's name must survive a power loss too. */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return set_cause(cause, "cannot open", dir);
	if (fsync(dfd) == -1) {
		close(dfd);
		return set_cause(cause, "cannot sync", dir);
	}
	close(dfd);
	return 0;
}

/* The file's length: at least the size asked for, more if it was made
 * larger once (what it holds is replayed whole). */
static int
file_size(int fd, const char *path, size_t *size, char **cause)
{
	struct stat sb;

	if (fstat(fd, &sb) == -1)
		return set_cause(cause, "cannot stat", path);
	if ((size_t)sb.st_size > *size)
		*size = (size_t)sb.st_size;
	return 0;
}

struct urljournal *
urljournal_open(const char *dir, size_t size, char **cause)
{
	struct urljournal *j;
	char *path = NULL;

	*cause = NULL;
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->fd = -1;
	j->size = size;
	if (asprintf(&path, "%s/%s", dir, URLJOURNAL_NAME) == -1) {
		path = NULL;
		goto err;
	}
	if ((j->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) == -1) {
		set_cause(cause, "cannot open", path);
		goto err;
	}
	if (extend(j->fd, dir, path, size, cause) == -1 ||
	    file_size(j->fd, path, &j->size, cause) == -1)
		goto err;
	free(path);
	return j;
err:
	free(path);
	urljournal_close(j);
	return NULL;
}

void
urljournal_close(struct urljournal *j)
{
	if (j == NULL)
		return;
	if (j->fd != -1)
		close(j->fd);
	free(j->buf);
	free(j);
}

static int
read_all(int fd, void *data, size_t len, off_t off)
{
	uint8_t *p = data;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 1;	/* short: the end of the file */
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* Zeroes the file from off to its end, durably. */
static int
zero_tail(struct urljournal *j, size_t off)
{
	uint8_t *zero = calloc(1, URLJOURNAL_ZERO_CHUNK);

	if (zero == NULL)
		return -1;
	for (size_t at = off; at < j->size; at += URLJOURNAL_ZERO_CHUNK) {
		size_t n = j->size - at < URLJOURNAL_ZERO_CHUNK ? j->size - at :
		    URLJOURNAL_ZERO_CHUNK;

		if (write_all(j->fd, zero, n, (off_t)at) == -1) {
			free(zero);
			return -1;
		}
	}
	free(zero);
	return fdatasync(j->fd);
}

static uint32_t
frame_crc(const uint8_t *hdr, const uint8_t *payload, size_t len)
{
	uint32_t crc = crc32c(0, hdr + 4, 12);	/* entries and sequence */

	return crc32c(crc, payload, len);
}

static void
entry_decode(const uint8_t *p, size_t entry_len, struct urlmem_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->fp, p, CBF_FP_LEN);
	e->st.count = le_get32(p + 16);
	e->st.first_seen_ms = le_get64(p + 20);
	e->st.last_seen_ms = le_get64(p + 28);
	if (entry_len == URLJOURNAL_ENTRY_LEN) {
		e->st.expires_ms = le_get64(p + 36);
		e->st.ns = le_get32(p + 44);
	}
}

int
urljournal_replay(struct urljournal *j, uint64_t after_seq,
    int (*fn)(const struct urlmem_entry *e, void *arg),
    int (*text_fn)(const uint8_t *text, size_t len, void *arg), void *arg,
    uint64_t *frames, uint64_t *entries, char **cause)
{
	uint8_t hdr[URLJOURNAL_FRAME_HEADER], *payload = NULL;
	size_t off = 0, cap = 0;
	uint64_t want = after_seq + 1, seq;
	int rc;

	*cause = NULL;
	*frames = *entries = 0;
	for (;;) {
		uint32_t n, magic, text_len;
		size_t len, entry_len;

		if (off + sizeof(hdr) > j->size)
			break;
		if ((rc = read_all(j->fd, hdr, sizeof(hdr), (off_t)off)) != 0) {
			if (rc == 1)
				break;
			goto read_err;
		}
		magic = le_get32(hdr);
		entry_len = magic == URLJOURNAL_V2_MAGIC ?
		    URLJOURNAL_V2_ENTRY_LEN : URLJOURNAL_ENTRY_LEN;
		n = le_get32(hdr + 4);
		seq = le_get64(hdr + 8);
		text_len = magic == URLJOURNAL_V2_MAGIC ? 0 : le_get32(hdr + 20);
		/* The first frame may come after the one the store expects
		 * only if the store lost commits ([store] sync = none and a
		 * power failure): its frames are all there is. */
		if ((magic != URLJOURNAL_MAGIC &&
		    magic != URLJOURNAL_V2_MAGIC) ||
		    (seq != want && (off != 0 || seq < want)) ||
		    n > (j->size - off - sizeof(hdr)) / entry_len ||
		    text_len > j->size - off - sizeof(hdr) - n * entry_len)
			break;
		len = (size_t)n * entry_len + text_len;
		if (len > cap) {
			free(payload);
			if ((payload = malloc(len)) == NULL)
				goto nomem;
			cap = len;
		}
		if ((rc = read_all(j->fd, payload, len, (off_t)(off +
		    sizeof(hdr)))) != 0) {
			if (rc == 1)
				break;
			goto read_err;
		}
		if (frame_crc(hdr, payload, len) != le_get32(hdr + 16))
			break;
		if (seq != want) {
			log_warnx("%s: the store holds the URL journal up to "
			    "frame %llu, but the journal begins at frame %llu: "
			    "the store lost commits, and the changes of the "
			    "frames between are lost", __func__,
			    (unsigned long long)after_seq,
			    (unsigned long long)seq);
			want = seq;
		}
		for (uint32_t i = 0; i < n; i++) {
			struct urlmem_entry e;

			entry_decode(payload + (size_t)i * entry_len,
			    entry_len, &e);
			if (fn(&e, arg) == -1) {
				if (asprintf(cause, "replaying the URL journal:"
				    " frame %llu cannot be applied",
				    (unsigned long long)want) == -1)
					*cause = NULL;
				free(payload);
				return -1;
			}
		}
		if (text_len > 0 && text_fn(payload + (size_t)n * entry_len,
		    text_len, arg) == -1) {
			if (asprintf(cause, "replaying the URL journal: the "
			    "texts of frame %llu cannot be kept",
			    (unsigned long long)want) == -1)
				*cause = NULL;
			free(payload);
			return -1;
		}
		(*frames)++;
		*entries += n;
		off += sizeof(hdr) + len;
		want++;
	}
	free(payload);
	/* Whole frames may lie beyond the one that ended the replay (written
	 * after it, never acknowledged as durable, or stale ones of an
	 * earlier round): zero the rest of the file, so that the next frames
	 * continue the numbering and none of those is ever taken for one. */
	if (zero_tail(j, off) == -1) {
		if (asprintf(cause, "cannot clear the URL journal's tail: %s",
		    strerror(errno)) == -1)
			*cause = NULL;
		return -1;
	}
	j->offset = off;
	j->seq = want - 1;
	return 0;
read_err:
	if (asprintf(cause, "cannot read the URL journal: %s",
	    strerror(errno)) == -1)
		*cause = NULL;
	free(payload);
	return -1;
nomem:
	free(payload);
	return -1;
}

size_t
urljournal_room(const struct urljournal *j)
{
	return j->size - j->offset;
}

int
urljournal_append(struct urljournal *j, const struct urlmem_entry *e,
    size_t n, const uint8_t *text, size_t text_len)
{
	size_t len = urljournal_frame_len(n) + text_len;
	uint8_t *p;

	if (len > urljournal_room(j)) {
		errno = ENOSPC;
		return -1;
	}
	if (len > j->buf_len) {
		free(j->buf);
		if ((j->buf = malloc(len)) == NULL) {
			j->buf_len = 0;
			errno = ENOMEM;
			return -1;
		}
		j->buf_len = len;
	}
	p = j->buf + URLJOURNAL_FRAME_HEADER;
	for (size_t i = 0; i < n; i++, p += URLJOURNAL_ENTRY_LEN) {
		memcpy(p, e[i].fp, CBF_FP_LEN);
		le_put32(p + 16, e[i].st.count);
		le_put64(p + 20, e[i].st.first_seen_ms);
		le_put64(p + 28, e[i].st.last_seen_ms);
		le_put64(p + 36, e[i].st.expires_ms);
		le_put32(p + 44, e[i].st.ns);
	}
	if (text_len > 0)
		memcpy(p, text, text_len);
	le_put32(j->buf, URLJOURNAL_MAGIC);
	le_put32(j->buf + 4, (uint32_t)n);
	le_put64(j->buf + 8, j->seq + 1);
	le_put32(j->buf + 16, frame_crc(j->buf, j->buf +
	    URLJOURNAL_FRAME_HEADER, len - URLJOURNAL_FRAME_HEADER));
	le_put32(j->buf + 20, (uint32_t)text_len);
	if (write_all(j->fd, j->buf, len, (off_t)j->offset) == -1)
		return -1;
	j->offset += len;
	j->seq++;
	j->bytes_written += len;
	j->frames_written++;
	return 0;
}

int
urljournal_sync(struct urljournal *j)
{
	j->syncs++;
	return fdatasync(j->fd);
}

uint64_t
urljournal_last_seq(const struct urljournal *j)
{
	return j->seq;
}

void
urljournal_restart(struct urljournal *j)
{
	j->offset = 0;
}

void
urljournal_stats(const struct urljournal *j, struct urljournal_stats *out)
{
	out->bytes = j->offset;
	out->bytes_written = j->bytes_written;
	out->frames_written = j->frames_written;
	out->syncs = j->syncs;
}
