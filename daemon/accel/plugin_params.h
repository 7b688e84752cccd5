/*
 * plugin_params: the syntax of the "[accel] params" string for nddd's own
 * plugins (opencl, fpga-sim).  A plugin includes this header and
 * accel_abi.h, nothing else of nddd.
 *
 * The string is settings "key=value" separated by spaces, tabs or commas:
 *
 *	params = platform=0 device=1 buffer=4M
 *
 * Numbers are decimal and may end in k, M or G (times 1024, 1024^2,
 * 1024^3).  Each plugin says which keys it takes; an unknown key or a bad
 * value is an error that keeps the plugin from starting (nddd then says so
 * and uses cpu).
 */
#ifndef NDDD_PLUGIN_PARAMS_H
#define NDDD_PLUGIN_PARAMS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PLUGIN_PARAMS_SEP " \t\n,"

/*
 * Takes the next setting from *pp into key and val (both NUL-terminated,
 * cut to their sizes).  Returns 1 with a setting, 0 at the end, or -1 with
 * the reason in err for a setting without "=" or one too long.
 */
static inline int
plugin_params_next(const char **pp, char *key, size_t keylen, char *val,
    size_t vallen, char *err, size_t errlen)
{
	const char *p = *pp, *eq;
	size_t n, kl;

	if (p == NULL)
		return 0;
	p += strspn(p, PLUGIN_PARAMS_SEP);
	if (*p == '\0') {
		*pp = p;
		return 0;
	}
	n = strcspn(p, PLUGIN_PARAMS_SEP);
	*pp = p + n;
	if ((eq = memchr(p, '=', n)) == NULL) {
		snprintf(err, errlen, "params: \"%.*s\" is not key=value",
		    (int)n, p);
		return -1;
	}
	kl = (size_t)(eq - p);
	if (kl >= keylen || n - kl - 1 >= vallen) {
		snprintf(err, errlen, "params: \"%.*s\" is too long", (int)n,
		    p);
		return -1;
	}
	memcpy(key, p, kl);
	key[kl] = '\0';
	memcpy(val, eq + 1, n - kl - 1);
	val[n - kl - 1] = '\0';
	return 1;
}

/*
 * Parses a number (with an optional k, M or G suffix) of at most max.
 * Returns 0, or -1 with the reason in err.
 */
static inline int
plugin_params_number(const char *key, const char *val,
    unsigned long long max, unsigned long long *out, char *err,
    size_t errlen)
{
	unsigned long long v, mult = 1;
	char *end;

	errno = 0;
	v = strtoull(val, &end, 10);
	if (end != val) {
		if (*end == 'k' || *end == 'K')
			mult = 1ULL << 10;
		else if (*end == 'm' || *end == 'M')
			mult = 1ULL << 20;
		else if (*end == 'g' || *end == 'G')
			mult = 1ULL << 30;
		if (mult != 1)
			end++;
	}
	if (end == val || *end != '\0' || val[0] == '-' || errno != 0 ||
	    v > max / mult || v * mult > max) {
		snprintf(err, errlen, "params: %s=%s: not a number from 0 to "
		    "%llu", key, val, max);
		return -1;
	}
	*out = v * mult;
	return 0;
}

#endif
