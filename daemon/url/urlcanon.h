/*
 * urlcanon: the canonical form of a URL, the key of URL deduplication.
 *
 * RFC 3986 section 6.2.2 syntax normalization, done by uriparser: lower-case
 * scheme and host, upper-case percent-escape hex digits, decoded escapes of
 * unreserved characters, dot segments removed.  Then the scheme-based rules
 * of section 6.2.3 for http, https and ftp: the default port (80, 443, 21)
 * and an empty port are dropped, a port keeps no leading zeros, an empty
 * path becomes "/".  The fragment is dropped: it never reaches the server.
 *
 * Before parsing, leading and trailing ASCII whitespace and control bytes
 * are trimmed and every byte above 0x7f is percent-encoded (the IRI-to-URI
 * mapping of RFC 3987 section 3.1), so UTF-8 in a path or query is accepted.
 * Anything else that is not RFC 3986 syntax is rejected, as is a URL that
 * is not absolute, has no host, or whose scheme is not http, https or ftp.
 *
 * Optional crawler rules, each off by default: remove session ids (query
 * parameters jsessionid, phpsessid, sid, aspsessionid*, cfid, cftoken and a
 * ";jsessionid=" path parameter), remove tracking parameters (utm_*, gclid,
 * fbclid, msclkid, dclid, yclid, mc_cid, mc_eid, _ga, igshid), and sort the
 * query parameters (byte order of the whole "name=value" pair, stable).
 *
 * The canonical form is idempotent: canonicalizing it again changes nothing.
 */
#ifndef NDDD_URLCANON_H
#define NDDD_URLCANON_H

#include <stdbool.h>
#include <stddef.h>

/* Longest URL accepted, in bytes, as given and in its canonical form. */
#define URLCANON_MAX_LEN 16384
/*
 * The version of the canonical form: it changes whenever the output of
 * urlcanon_canonicalize does for some input, so that digests of canonical
 * URLs made by clients of another version are told apart (urlcanon_id).
 */
#define URLCANON_VERSION 1
/* Room for urlcanon_id's string. */
#define URLCANON_ID_LEN 96

struct urlcanon_options {
	bool strip_session_ids;
	bool strip_tracking;
	bool sort_query;
};

struct urlcanon;

/* A canonicalizer: options plus scratch memory; one per thread. */
struct urlcanon *urlcanon_new(const struct urlcanon_options *opts);
void urlcanon_free(struct urlcanon *uc);

/*
 * For tests and benchmarks: with enabled false, every later call on uc
 * parses, even a URL that urlcanon_is_canonical takes.  On by default.
 */
void urlcanon_set_fast_path(struct urlcanon *uc, bool enabled);

/*
 * Canonicalizes url[0..len).  Returns the canonical form, NUL-terminated,
 * with its length in *outlen; it stays valid until the next call on uc.
 * Returns NULL for an invalid URL, with a static description in *cause.
 */
const char *urlcanon_canonicalize(struct urlcanon *uc, const char *url,
    size_t len, size_t *outlen, const char **cause);

/*
 * Names the canonical form under opts, version included:
 * "urlcanon/1 strip_session_ids=no strip_tracking=no sort_query=no".
 * Digests of canonical URLs are comparable exactly when their ids are
 * equal.  Writes at most URLCANON_ID_LEN bytes, NUL included.
 */
void urlcanon_id(const struct urlcanon_options *opts,
    char buf[URLCANON_ID_LEN]);
/*
 * The options an id names.  Returns -1 if it is not an id of this version
 * (another version's canonical form cannot be reproduced here).
 */
int urlcanon_parse_id(const char *id, struct urlcanon_options *opts);

/*
 * Whether url[0..len) is already its own canonical form under opts, by a
 * single scan that needs no parsing: the fast path of urlcanon_canonicalize.
 * It is conservative: true means canonicalizing would return the same bytes,
 * but false only means "parse it to find out".  It accepts http and https
 * URLs with a lower-case host name, no user info, a port only if it is not
 * the default, a path without dot segments and escapes that normalization
 * would leave alone, no fragment and, with any crawler option on, no query
 * and no ';'.  Allocates nothing.
 */
bool urlcanon_is_canonical(const struct urlcanon_options *opts,
    const char *url, size_t len);

#endif
