/*
 * urlhosts: the host index's keys.  See urlhosts.h.
 */
#include "urlhosts.h"

#include <string.h>

#include "le.h"

size_t
urlhosts_rec_encode(uint32_t ns, const uint8_t fp[CBF_FP_LEN],
    const char *url, size_t len, uint8_t *out)
{
	if (len > URLHOSTS_TEXT_MAX)
		len = URLHOSTS_TEXT_MAX;
	le_put32(out, ns);
	memcpy(out + 4, fp, CBF_FP_LEN);
	out[4 + CBF_FP_LEN] = (uint8_t)(len & 0xff);
	out[4 + CBF_FP_LEN + 1] = (uint8_t)(len >> 8);
	memcpy(out + URLHOSTS_REC_HEADER, url, len);
	return URLHOSTS_REC_HEADER + len;
}

bool
urlhosts_url_host(const char *url, size_t len, const char **host,
    size_t *hlen)
{
	const char *p = memchr(url, ':', len), *end = url + len, *auth, *h, *q;

	if (p == NULL || end - p < 3 || p[1] != '/' || p[2] != '/')
		return false;
	auth = p + 3;
	for (q = auth; q < end && *q != '/' && *q != '?' && *q != '#'; q++)
		;
	/* A canonical URL has a path: without one, the text was cut. */
	if (q == end)
		return false;
	end = q;
	/* After the user info, if any. */
	for (h = auth, q = auth; q < end; q++)
		if (*q == '@')
			h = q + 1;
	if (h < end && *h == '[') {
		/* An IP literal: up to its bracket. */
		if ((q = memchr(h, ']', (size_t)(end - h))) == NULL)
			return false;
		q++;
	} else
		for (q = h; q < end && *q != ':'; q++)
			;
	if (q == h)
		return false;
	*host = h;
	*hlen = (size_t)(q - h);
	return true;
}

/* Writes host's labels in reverse order at out: "www.example.com" as
 * "com.example.www", as many bytes as the host. */
static void
reverse_labels(const char *host, size_t hlen, uint8_t *out)
{
	size_t at = 0, end = hlen;

	for (;;) {
		size_t start = end;

		while (start > 0 && host[start - 1] != '.')
			start--;
		memcpy(out + at, host + start, end - start);
		at += end - start;
		if (start == 0)
			break;
		out[at++] = '.';
		end = start - 1;
	}
}

size_t
urlhosts_host_prefix(uint32_t ns, const char *host, size_t hlen, char sep,
    uint8_t out[URLHOSTS_KEY_MAX])
{
	if (hlen == 0 || hlen > URLHOSTS_HOST_MAX)
		return 0;
	be_put32(out, ns);
	reverse_labels(host, hlen, out + 4);
	out[4 + hlen] = (uint8_t)sep;
	return 4 + hlen + 1;
}

/* The key prefix of prefix[0..len), whose host is host[0..hlen). */
static size_t
url_key(uint32_t ns, const char *prefix, size_t len, const char *host,
    size_t hlen, uint8_t out[URLHOSTS_KEY_MAX])
{
	size_t n;

	if (len > URLHOSTS_TEXT_MAX - hlen ||
	    (n = urlhosts_host_prefix(ns, host, hlen, '\0', out)) == 0)
		return 0;
	memcpy(out + n, prefix, len);
	return n + len;
}

size_t
urlhosts_url_prefix(uint32_t ns, const char *prefix, size_t len,
    uint8_t out[URLHOSTS_KEY_MAX])
{
	const char *host;
	size_t hlen;

	if (!urlhosts_url_host(prefix, len, &host, &hlen))
		return 0;
	return url_key(ns, prefix, len, host, hlen, out);
}

size_t
urlhosts_rec_key(const uint8_t *rec, size_t *reclen,
    uint8_t out[URLHOSTS_KEY_MAX])
{
	size_t len = rec[4 + CBF_FP_LEN] | (size_t)rec[4 + CBF_FP_LEN + 1] << 8;
	const char *url = (const char *)rec + URLHOSTS_REC_HEADER, *host;
	size_t n, hlen;

	*reclen = URLHOSTS_REC_HEADER + len;
	if (!urlhosts_url_host(url, len, &host, &hlen))
		return 0;
	/* The key keeps what room its host leaves of the text. */
	if (hlen <= URLHOSTS_HOST_MAX && len > URLHOSTS_TEXT_MAX - hlen)
		len = URLHOSTS_TEXT_MAX - hlen;
	if ((n = url_key(le_get32(rec), url, len, host, hlen, out)) == 0)
		return 0;
	memcpy(out + n, rec + 4, CBF_FP_LEN);
	return n + CBF_FP_LEN;
}
