/*
 * auth: who may do what.  See auth.h.
 */
#include "auth.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "log.h"
#include "urlns.h"

#define DIGEST_LEN 32

struct auth_entry {
	unsigned char digest[DIGEST_LEN];
	enum role role;
	char **namespaces;		/* NULL: every one */
	size_t nns;
};

struct auth {
	struct auth_entry *entries;
	size_t n;
};

static const struct auth_entry *find(const struct auth *a, const char *token,
    size_t len);

static int
digest(const char *token, size_t len, unsigned char out[DIGEST_LEN])
{
	unsigned int n;

	return EVP_Digest(token, len, out, &n, EVP_sha256(), NULL) && n ==
	    DIGEST_LEN ? 0 : -1;
}

static void
add_error(char **errors, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
add_error(char **errors, size_t *len, const char *fmt, ...)
{
	char line[512], *grown;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if ((grown = realloc(*errors, *len + (size_t)n + 2)) == NULL)
		return;
	*errors = grown;
	memcpy(*errors + *len, line, (size_t)n);
	(*errors)[*len + (size_t)n] = '\n';
	*len += (size_t)n + 1;
	(*errors)[*len] = '\0';
}

/* The namespaces of a "namespaces=A,B" field into e; -1 if one is bad. */
static int
parse_namespaces(const char *field, struct auth_entry *e)
{
	const char *p = field + strlen("namespaces=");

	for (;;) {
		size_t len = strcspn(p, ",");
		char **grown;

		if (urlns_check_name(p, len) != NULL ||
		    (grown = realloc(e->namespaces, (e->nns + 1) *
		    sizeof(*grown))) == NULL)
			return -1;
		e->namespaces = grown;
		if ((e->namespaces[e->nns] = strndup(p, len)) == NULL)
			return -1;
		e->nns++;
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

static void
entry_free(struct auth_entry *e)
{
	for (size_t i = 0; i < e->nns; i++)
		free(e->namespaces[i]);
	free(e->namespaces);
	e->namespaces = NULL;
	e->nns = 0;
}

static int
parse_role(const char *s, enum role *out)
{
	if (strcmp(s, "read") == 0)
		*out = ROLE_READ;
	else if (strcmp(s, "write") == 0)
		*out = ROLE_WRITE;
	else if (strcmp(s, "admin") == 0)
		*out = ROLE_ADMIN;
	else
		return -1;
	return 0;
}

struct auth *
auth_load(const char *path, char **errors)
{
	struct auth *a;
	FILE *f;
	char *line = NULL;
	size_t cap = 0, errlen = 0;
	int lineno = 0;
	struct stat sb;

	*errors = NULL;
	if ((f = fopen(path, "r")) == NULL) {
		add_error(errors, &errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & 0077) != 0)
		log_warnx("%s: %s is readable by others: its tokens are "
		    "secrets", __func__, path);
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		fclose(f);
		return NULL;
	}
	while (getline(&line, &cap, f) != -1) {
		char *tok, *role_s, *extra, *save = NULL;
		struct auth_entry e = { .namespaces = NULL }, *grown;

		lineno++;
		if ((tok = strtok_r(line, " \t\r\n", &save)) == NULL ||
		    *tok == '#')
			continue;
		role_s = strtok_r(NULL, " \t\r\n", &save);
		extra = strtok_r(NULL, " \t\r\n", &save);
		if (extra != NULL && strncmp(extra, "namespaces=",
		    strlen("namespaces=")) == 0) {
			if (parse_namespaces(extra, &e) == -1) {
				entry_free(&e);
				add_error(errors, &errlen, "%s:%d: bad "
				    "namespaces= (names of ASCII letters, "
				    "digits, '.', '_', '-', separated by ',')",
				    path, lineno);
				continue;
			}
			extra = strtok_r(NULL, " \t\r\n", &save);
		}
		if (role_s == NULL || (extra != NULL && *extra != '#')) {
			entry_free(&e);
			add_error(errors, &errlen, "%s:%d: want TOKEN ROLE "
			    "[namespaces=NAME,...]", path, lineno);
			continue;
		}
		/* The fields' text stays out of the message, which goes to
		 * the log: in a line whose columns are swapped, the "role"
		 * is the token. */
		if (parse_role(role_s, &e.role) == -1) {
			entry_free(&e);
			if (parse_role(tok, &e.role) == 0)
				add_error(errors, &errlen, "%s:%d: the role "
				    "comes first: want TOKEN ROLE", path,
				    lineno);
			else
				add_error(errors, &errlen, "%s:%d: unknown "
				    "role in the second field (read, write or "
				    "admin)", path, lineno);
			continue;
		}
		if (strlen(tok) < AUTH_MIN_TOKEN_LEN) {
			entry_free(&e);
			add_error(errors, &errlen, "%s:%d: token shorter than "
			    "%d characters", path, lineno, AUTH_MIN_TOKEN_LEN);
			continue;
		}
		if (digest(tok, strlen(tok), e.digest) == -1 ||
		    find(a, tok, strlen(tok)) != NULL) {
			entry_free(&e);
			add_error(errors, &errlen, "%s:%d: duplicate token",
			    path, lineno);
			continue;
		}
		if ((grown = realloc(a->entries, (a->n + 1) *
		    sizeof(*a->entries))) == NULL) {
			entry_free(&e);
			add_error(errors, &errlen, "%s: out of memory", path);
			break;
		}
		a->entries = grown;
		a->entries[a->n++] = e;
		/* The plain token leaves memory with the line buffer. */
		OPENSSL_cleanse(tok, strlen(tok));
	}
	if (line != NULL)
		OPENSSL_cleanse(line, cap);
	free(line);
	fclose(f);
	if (*errors == NULL && a->n == 0)
		add_error(errors, &errlen, "%s: no tokens", path);
	if (*errors != NULL) {
		auth_free(a);
		return NULL;
	}
	return a;
}

void
auth_free(struct auth *a)
{
	if (a == NULL)
		return;
	for (size_t i = 0; i < a->n; i++)
		entry_free(&a->entries[i]);
	if (a->entries != NULL)
		OPENSSL_cleanse(a->entries, a->n * sizeof(*a->entries));
	free(a->entries);
	free(a);
}

size_t
auth_count(const struct auth *a)
{
	return a->n;
}

/* The entry of token[0..len), or NULL. */
static const struct auth_entry *
find(const struct auth *a, const char *token, size_t len)
{
	unsigned char d[DIGEST_LEN];
	const struct auth_entry *found = NULL;

	if (digest(token, len, d) == -1)
		return NULL;
	/* Every entry is compared, match or not: no early exit. */
	for (size_t i = 0; i < a->n; i++) {
		int same = CRYPTO_memcmp(d, a->entries[i].digest,
		    DIGEST_LEN) == 0;

		found = same ? &a->entries[i] : found;
	}
	return found;
}

enum role
auth_role(const struct auth *a, const char *token, size_t len,
    const char *ns, bool *outside)
{
	const struct auth_entry *e = find(a, token, len);

	if (outside != NULL)
		*outside = false;
	if (e == NULL)
		return ROLE_NONE;
	if (e->namespaces == NULL)
		return e->role;
	if (ns == NULL)
		return e->role < ROLE_READ ? e->role : ROLE_READ;
	for (size_t i = 0; i < e->nns; i++)
		if (strcmp(e->namespaces[i], ns) == 0)
			return e->role;
	if (outside != NULL)
		*outside = true;
	return ROLE_NONE;
}
