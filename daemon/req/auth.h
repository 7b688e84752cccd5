/*
 * auth: who may do what.  A token file names tokens and their roles, one
 * "TOKEN ROLE" per line (blank lines and '#' comments allowed); roles nest:
 * read (checks, queries, basic stats) < write (read, plus submits) < admin
 * (everything: deletes, verify, full stats).
 *
 * Tokens are kept only as SHA-256 digests and compared in constant time,
 * against every entry, so neither memory dumps nor timing reveal them.
 */
#ifndef NDDD_AUTH_H
#define NDDD_AUTH_H

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

/* The role of token[0..len), or ROLE_NONE if it is not in the file. */
enum role auth_role(const struct auth *a, const char *token, size_t len);

#endif
