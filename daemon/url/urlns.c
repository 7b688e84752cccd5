/*
 * urlns: the URL namespaces.  See urlns.h.
 *
 * The entries live in an array; two open-addressing tables of indices find
 * them by name (live namespaces only) and by id.  Both tables are rebuilt
 * whenever the array changes shape, which happens only when a namespace
 * is created, dropped or retired: rare, next to the lookups.
 */
#include "urlns.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define NS_KEY		"urls.ns/"
#define NS_DROP_KEY	"urls.ns_drop/"
#define NS_NEXT_KEY	"urls.ns.next"

struct urlns {
	struct store *st;
	pthread_rwlock_t lock;		/* the shape: entries and tables */
	struct urlns_info *e;
	size_t n, cap;
	uint32_t *by_name, *by_id;	/* index + 1; 0: empty */
	size_t mask;
	uint32_t next_id;
	uint32_t last_id;		/* urlns_count's cache */
	size_t last;
};

const char *
urlns_check_name(const char *name, size_t len)
{
	if (len > URLNS_NAME_MAX)
		return "a namespace name has at most 64 bytes";
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-'))
			return "a namespace name has only ASCII letters, "
			    "digits, '.', '_' and '-'";
	}
	return NULL;
}

static size_t
name_hash(const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;	/* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 0x100000001b3ULL;
	return (size_t)(h ^ h >> 29);
}

static size_t
id_hash(uint32_t id)
{
	return (size_t)(id * 0x9e3779b97f4a7c15ULL >> 20);
}

/* Lock held (either way): the index of the live namespace name. */
static ssize_t
find_name(const struct urlns *r, const char *name, size_t len)
{
	for (size_t i = name_hash(name, len) & r->mask; r->by_name[i] != 0;
	    i = (i + 1) & r->mask) {
		const struct urlns_info *e = &r->e[r->by_name[i] - 1];

		if (strlen(e->name) == len && memcmp(e->name, name, len) == 0)
			return (ssize_t)r->by_name[i] - 1;
	}
	return -1;
}

static ssize_t
find_id(const struct urlns *r, uint32_t id)
{
	for (size_t i = id_hash(id) & r->mask; r->by_id[i] != 0;
	    i = (i + 1) & r->mask)
		if (r->e[r->by_id[i] - 1].id == id)
			return (ssize_t)r->by_id[i] - 1;
	return -1;
}

/* Write lock held: the tables for the entries as they are now. */
static int
reindex(struct urlns *r)
{
	size_t slots = 16;
	uint32_t *bn, *bi;

	while (slots < 2 * r->n)
		slots *= 2;
	if ((bn = calloc(slots, sizeof(*bn))) == NULL ||
	    (bi = calloc(slots, sizeof(*bi))) == NULL) {
		free(bn);
		return -1;
	}
	free(r->by_name);
	free(r->by_id);
	r->by_name = bn;
	r->by_id = bi;
	r->mask = slots - 1;
	for (size_t k = 0; k < r->n; k++) {
		const struct urlns_info *e = &r->e[k];
		size_t i;

		if (!e->dropping) {
			for (i = name_hash(e->name, strlen(e->name)) & r->mask;
			    bn[i] != 0; i = (i + 1) & r->mask)
				;
			bn[i] = (uint32_t)k + 1;
		}
		for (i = id_hash(e->id) & r->mask; bi[i] != 0;
		    i = (i + 1) & r->mask)
			;
		bi[i] = (uint32_t)k + 1;
	}
	r->last_id = URLNS_NONE;
	return 0;
}

/* Write lock held: a new entry (not yet indexed), or NULL. */
static struct urlns_info *
add_entry(struct urlns *r, const char *name, size_t len, uint32_t id)
{
	struct urlns_info *e;

	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;

		if ((e = realloc(r->e, cap * sizeof(*e))) == NULL)
			return NULL;
		r->e = e;
		r->cap = cap;
	}
	e = &r->e[r->n++];
	memset(e, 0, sizeof(*e));
	memcpy(e->name, name, len);
	e->id = id;
	return e;
}

/* The metadata scan at opening: one namespace or drop mark per key. */
struct load {
	struct urlns *r;
	const char *bad;
};

static int
load_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct load *l = arg;
	const char *k = key;
	char buf[64];
	struct urlns_info *e;
	unsigned long long id, ttl = 0;
	bool drop;

	if (klen > strlen(NS_DROP_KEY) && memcmp(k, NS_DROP_KEY, strlen(
	    NS_DROP_KEY)) == 0)
		drop = true;
	else if (klen >= strlen(NS_KEY) && memcmp(k, NS_KEY,
	    strlen(NS_KEY)) == 0)
		drop = false;
	else
		return 0;
	if (vlen >= sizeof(buf)) {
		l->bad = "a namespace's metadata is too long";
		return -1;
	}
	memcpy(buf, val, vlen);
	buf[vlen] = '\0';
	if (drop) {
		/* The key holds the id, the value the name. */
		char idbuf[16];
		size_t n = klen - strlen(NS_DROP_KEY);

		if (n == 0 || n >= sizeof(idbuf) || urlns_check_name(buf,
		    vlen) != NULL) {
			l->bad = "a dropped namespace's metadata is damaged";
			return -1;
		}
		memcpy(idbuf, k + strlen(NS_DROP_KEY), n);
		idbuf[n] = '\0';
		if (sscanf(idbuf, "%llu", &id) != 1 || id == 0 ||
		    id >= URLNS_NONE || (e = add_entry(l->r, buf, vlen,
		    (uint32_t)id)) == NULL) {
			l->bad = "a dropped namespace's metadata is damaged";
			return -1;
		}
		e->dropping = true;
		return 0;
	}
	klen -= strlen(NS_KEY);
	k += strlen(NS_KEY);
	if (urlns_check_name(k, klen) != NULL ||
	    sscanf(buf, "%llu %llu", &id, &ttl) != 2 || id >= URLNS_NONE ||
	    (id == URLNS_DEFAULT) != (klen == 0)) {
		l->bad = "a namespace's metadata is damaged";
		return -1;
	}
	if (klen == 0) {
		l->r->e[0].default_ttl_ms = ttl;	/* the default one */
		return 0;
	}
	if ((e = add_entry(l->r, k, klen, (uint32_t)id)) == NULL) {
		l->bad = "out of memory";
		return -1;
	}
	e->default_ttl_ms = ttl;
	return 0;
}

struct urlns *
urlns_open(struct store *st, char **cause)
{
	struct urlns *r;
	struct store_txn *txn = NULL;
	struct load l = { NULL, NULL };
	char buf[32];
	int rc;

	*cause = NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->st = st;
	pthread_rwlock_init(&r->lock, NULL);
	l.r = r;
	if (add_entry(r, "", 0, URLNS_DEFAULT) == NULL)
		goto nomem;
	r->next_id = 1;
	if ((txn = store_reader_new(st)) == NULL ||
	    store_reader_begin(txn) != STORE_OK)
		goto nostore;
	rc = store_meta_get(txn, NS_NEXT_KEY, buf, sizeof(buf));
	if (rc == STORE_OK) {
		unsigned long long next;

		if (sscanf(buf, "%llu", &next) != 1 || next == 0 ||
		    next >= URLNS_NONE) {
			l.bad = "the next namespace id is damaged";
			goto bad;
		}
		r->next_id = (uint32_t)next;
	} else if (rc != STORE_NOTFOUND)
		goto nostore;
	if ((rc = store_scan_txn(txn, STORE_META, load_one, &l)) != STORE_OK)
		goto bad;
	store_reader_end(txn);
	store_reader_free(txn);
	txn = NULL;
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].id >= r->next_id) {
			l.bad = "a namespace id is beyond the next one";
			goto bad;
		}
	if (reindex(r) == -1)
		goto nomem;
	return r;
bad:
	if (asprintf(cause, "URL namespaces: %s", l.bad ? l.bad :
	    "cannot read the store") == -1)
		*cause = NULL;
	goto err;
nostore:
	if (asprintf(cause, "URL namespaces: cannot read the store") == -1)
		*cause = NULL;
	goto err;
nomem:
	*cause = NULL;
err:
	if (txn != NULL) {
		store_reader_end(txn);
		store_reader_free(txn);
	}
	urlns_free(r);
	return NULL;
}

void
urlns_free(struct urlns *r)
{
	if (r == NULL)
		return;
	pthread_rwlock_destroy(&r->lock);
	free(r->e);
	free(r->by_name);
	free(r->by_id);
	free(r);
}

uint32_t
urlns_find(struct urlns *r, const char *name, size_t len,
    uint64_t *default_ttl_ms)
{
	uint32_t id = URLNS_NONE;
	ssize_t k;

	pthread_rwlock_rdlock(&r->lock);
	if ((k = find_name(r, name, len)) >= 0) {
		id = r->e[k].id;
		if (default_ttl_ms != NULL)
			*default_ttl_ms = r->e[k].default_ttl_ms;
	}
	pthread_rwlock_unlock(&r->lock);
	return id;
}

static void
ns_key(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s%s", NS_KEY, name);
}

static void
drop_key(char *buf, size_t size, uint32_t id)
{
	snprintf(buf, size, "%s%" PRIu32, NS_DROP_KEY, id);
}

/* One metadata transaction: its puts (val NULL: a delete), committed. */
struct meta_op {
	const char *key;
	const char *val;
};

static int
meta_commit(struct urlns *r, const struct meta_op *ops, size_t n)
{
	struct store_txn *txn;
	int rc;

	if ((rc = store_write_begin(r->st, &txn)) != STORE_OK)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (ops[i].val != NULL)
			rc = store_meta_put(txn, ops[i].key, ops[i].val);
		else if ((rc = store_del(txn, STORE_META, ops[i].key,
		    strlen(ops[i].key))) == STORE_NOTFOUND)
			rc = STORE_OK;
		if (rc != STORE_OK) {
			store_abort(txn);
			return rc;
		}
	}
	return store_commit(txn);
}

bool
urlns_full(struct urlns *r)
{
	return r->n >= URLNS_MAX || r->next_id == URLNS_NONE;
}

int
urlns_create(struct urlns *r, const char *name, uint32_t *id)
{
	char key[sizeof(NS_KEY) + URLNS_NAME_MAX], val[48], next[16];
	struct meta_op ops[2];
	struct urlns_info *e;
	size_t len = strlen(name);
	int rc;

	if (urlns_full(r))
		return STORE_FAILED;
	ns_key(key, sizeof(key), name);
	snprintf(val, sizeof(val), "%" PRIu32 " 0", r->next_id);
	snprintf(next, sizeof(next), "%" PRIu32, r->next_id + 1);
	ops[0] = (struct meta_op){ key, val };
	ops[1] = (struct meta_op){ NS_NEXT_KEY, next };
	if ((rc = meta_commit(r, ops, 2)) != STORE_OK)
		return rc;
	pthread_rwlock_wrlock(&r->lock);
	if ((e = add_entry(r, name, len, r->next_id)) == NULL ||
	    reindex(r) == -1)
		fatalx("%s: out of memory for namespace %s", __func__, name);
	pthread_rwlock_unlock(&r->lock);
	*id = r->next_id++;
	log_info("%s: URL namespace %s created (id %" PRIu32 ")", __func__,
	    name, *id);
	return STORE_OK;
}

int
urlns_set_ttl(struct urlns *r, uint32_t id, uint64_t default_ttl_ms)
{
	char key[sizeof(NS_KEY) + URLNS_NAME_MAX], val[48];
	struct meta_op op = { key, val };
	ssize_t k = find_id(r, id);
	int rc;

	if (k < 0 || r->e[k].dropping)
		return STORE_NOTFOUND;
	ns_key(key, sizeof(key), r->e[k].name);
	snprintf(val, sizeof(val), "%" PRIu32 " %" PRIu64, id, default_ttl_ms);
	if ((rc = meta_commit(r, &op, 1)) != STORE_OK)
		return rc;
	pthread_rwlock_wrlock(&r->lock);
	r->e[k].default_ttl_ms = default_ttl_ms;
	pthread_rwlock_unlock(&r->lock);
	return STORE_OK;
}

int
urlns_drop(struct urlns *r, uint32_t id)
{
	char key[sizeof(NS_KEY) + URLNS_NAME_MAX], dkey[32];
	struct meta_op ops[2];
	ssize_t k = find_id(r, id);
	int rc;

	if (id == URLNS_DEFAULT || k < 0 || r->e[k].dropping)
		return STORE_NOTFOUND;
	ns_key(key, sizeof(key), r->e[k].name);
	drop_key(dkey, sizeof(dkey), id);
	ops[0] = (struct meta_op){ key, NULL };
	ops[1] = (struct meta_op){ dkey, r->e[k].name };
	if ((rc = meta_commit(r, ops, 2)) != STORE_OK)
		return rc;
	pthread_rwlock_wrlock(&r->lock);
	r->e[k].dropping = true;
	r->e[k].default_ttl_ms = 0;
	if (reindex(r) == -1)
		fatalx("%s: out of memory", __func__);
	pthread_rwlock_unlock(&r->lock);
	log_info("%s: URL namespace %s (id %" PRIu32 ") dropped: forgetting "
	    "its %" PRIu64 " URLs", __func__, r->e[k].name, id,
	    __atomic_load_n(&r->e[k].urls, __ATOMIC_RELAXED));
	return STORE_OK;
}

int
urlns_retire(struct urlns *r, uint32_t id)
{
	char dkey[32];
	struct meta_op op = { dkey, NULL };
	ssize_t k = find_id(r, id);
	int rc;

	if (k < 0 || !r->e[k].dropping)
		return STORE_NOTFOUND;
	drop_key(dkey, sizeof(dkey), id);
	if ((rc = meta_commit(r, &op, 1)) != STORE_OK)
		return rc;
	log_info("%s: URL namespace %s (id %" PRIu32 ") forgotten", __func__,
	    r->e[k].name, id);
	pthread_rwlock_wrlock(&r->lock);
	r->e[k] = r->e[--r->n];
	if (reindex(r) == -1)
		fatalx("%s: out of memory", __func__);
	pthread_rwlock_unlock(&r->lock);
	return STORE_OK;
}

int
urlns_adopt(struct urlns *r, uint32_t id)
{
	char dkey[32], next[16];
	struct meta_op ops[2];
	struct urlns_info *e;
	uint32_t n = id >= r->next_id ? id + 1 : r->next_id;
	int rc;

	if (id == URLNS_NONE)
		return STORE_FAILED;
	drop_key(dkey, sizeof(dkey), id);
	snprintf(next, sizeof(next), "%" PRIu32, n);
	ops[0] = (struct meta_op){ dkey, "" };
	ops[1] = (struct meta_op){ NS_NEXT_KEY, next };
	if ((rc = meta_commit(r, ops, 2)) != STORE_OK)
		return rc;
	log_warnx("%s: URLs of namespace id %" PRIu32 ", which the store "
	    "does not name (its creation was lost), are forgotten", __func__,
	    id);
	pthread_rwlock_wrlock(&r->lock);
	if ((e = add_entry(r, "", 0, id)) == NULL || (e->dropping = true,
	    reindex(r) == -1))
		fatalx("%s: out of memory", __func__);
	pthread_rwlock_unlock(&r->lock);
	r->next_id = n;
	return STORE_OK;
}

bool
urlns_count(struct urlns *r, uint32_t id, int64_t delta)
{
	ssize_t k;

	if (id != r->last_id) {
		if ((k = find_id(r, id)) < 0)
			return false;
		r->last_id = id;
		r->last = (size_t)k;
	}
	__atomic_fetch_add(&r->e[r->last].urls, (uint64_t)delta,
	    __ATOMIC_RELAXED);
	return true;
}

bool
urlns_dropping(struct urlns *r, uint32_t id)
{
	ssize_t k = find_id(r, id);

	return k >= 0 && r->e[k].dropping;
}

size_t
urlns_dropped(struct urlns *r, uint32_t *ids, size_t max)
{
	size_t n = 0;

	for (size_t k = 0; k < r->n; k++)
		if (r->e[k].dropping) {
			if (n < max)
				ids[n] = r->e[k].id;
			n++;
		}
	return n;
}

uint64_t
urlns_dropping_urls(struct urlns *r)
{
	uint64_t sum = 0;

	pthread_rwlock_rdlock(&r->lock);
	for (size_t k = 0; k < r->n; k++)
		if (r->e[k].dropping)
			sum += __atomic_load_n(&r->e[k].urls, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&r->lock);
	return sum;
}

static int
cmp_info(const void *a, const void *b)
{
	const struct urlns_info *x = a, *y = b;

	if (x->dropping != y->dropping)
		return x->dropping ? 1 : -1;
	if (x->dropping)
		return x->id < y->id ? -1 : x->id > y->id;
	return strcmp(x->name, y->name);	/* "" first */
}

struct urlns_info *
urlns_list(struct urlns *r, size_t *n)
{
	struct urlns_info *out;

	pthread_rwlock_rdlock(&r->lock);
	if ((out = malloc((r->n + 1) * sizeof(*out))) != NULL) {
		for (size_t k = 0; k < r->n; k++) {
			out[k] = r->e[k];
			out[k].urls = __atomic_load_n(&r->e[k].urls,
			    __ATOMIC_RELAXED);
		}
		*n = r->n;
	}
	pthread_rwlock_unlock(&r->lock);
	if (out != NULL)
		qsort(out, *n, sizeof(*out), cmp_info);
	return out;
}

bool
urlns_info(struct urlns *r, uint32_t id, struct urlns_info *out)
{
	ssize_t k;

	pthread_rwlock_rdlock(&r->lock);
	if ((k = find_id(r, id)) >= 0) {
		*out = r->e[k];
		out->urls = __atomic_load_n(&r->e[k].urls, __ATOMIC_RELAXED);
	}
	pthread_rwlock_unlock(&r->lock);
	return k >= 0;
}
