/*
 * auth: who may do what.  A token file names tokens and their roles, one
 * "TOKEN ROLE" per line (blank lines and '#' comments allowed); roles nest:
 * read (checks, queries, basic stats) < write (read, plus submits) < admin
 * (everything: deletes, verify, full stats).  A line may add
 * "namespaces=NAME,NAME..." (an empty NAME: the default namespace): the
 * token then has its role in those URL namespaces only, none in the
 * others, and at most read on what spans them all (basic stats), so it
 * neither sees nor changes another's URLs.
 *
 * Tokens are kept only as SHA-256 digests and compared in constant time,
 * against every entry, so neither memory dumps nor timing reveal them.
 */
#ifndef NDDD_AUTH_H
#define NDDD_AUTH_H

#include <stdbool.h>
#include <stddef.h>

enum role {
	ROLE_NONE,
	ROLE_READ,
	ROLE_WRITE,
	ROLE_ADMIN,
};

/* Tokens shorter than this are refused: they could be guessed. */
#define AUTH_MIN_TOKEN_LEN 16

struct auth;

/*
 * Reads a token file.  Returns NULL with *errors set (caller frees) to
 * "file:line: reason" lines when the file cannot be read or a line is bad
 * (unknown role, columns swapped, short or duplicate token).  The reasons
 * never quote a line's fields: they are logged, and a field in the wrong
 * column may be a token.
 */
struct auth *auth_load(const char *path, char **errors);
void auth_free(struct auth *a);

/* Number of tokens. */
size_t auth_count(const struct auth *a);

/*
 * The role token[0..len) grants to a request acting in namespace ns (NULL:
 * on the whole daemon, as stats and verify do), or ROLE_NONE if it is not
 * in the file or does not reach ns; *outside (if non-NULL) says whether it
 * was limited for want of the namespace.
 */
enum role auth_role(const struct auth *a, const char *token, size_t len,
    const char *ns, bool *outside);

#endif
