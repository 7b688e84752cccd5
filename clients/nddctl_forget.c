/*
 * nddctl forget-host, forget-prefix: URLs forgotten by host or by URL
 * prefix (admin), in one namespace, in one request each.  The daemon
 * answers once the deletions are durable, with how many URLs it deleted.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nddctl.h"

/*
 * The result line: "forgotten<TAB>N<TAB>what", or with --json {key: what,
 * ..., "forgotten": N, "complete": bool}; subdomains is only said of a
 * host.  A store whose index misses URLs is said on stderr too.
 */
static void
print_forgotten(const struct nddctl_common *co, const char *key,
    const char *what, bool host, bool subdomains, const struct nddd_reply *r)
{
	json_t *o;

	if (!r->complete)
		fprintf(stderr, "nddctl: note: the store holds URLs its host "
		    "index never saw (stored by nddd 0.3 or with [urls] "
		    "host_index = no): those were not looked at\n");
	if (!co->json) {
		printf("forgotten\t%" PRIu64 "\t", r->forgotten);
		nddctl_put_field(what, strlen(what));
		putchar('\n');
		return;
	}
	o = json_object();
	json_object_set_new(o, key, nddctl_json_string(what, strlen(what)));
	if (host)
		json_object_set_new(o, "subdomains", json_boolean(subdomains));
	json_object_set_new(o, "forgotten",
	    json_integer((json_int_t)r->forgotten));
	json_object_set_new(o, "complete", json_boolean(r->complete));
	nddctl_print_json(o);
}

/*
 * Waits for the reply to the request id (sent: what sending it returned)
 * and prints it; a refusal is an error line and exit status 1.
 */
static int
finish(const struct nddctl_common *co, nddd_client *c, int sent,
    uint64_t id, const char *key, const char *what, bool host,
    bool subdomains)
{
	struct nddd_reply *r;
	int status = NDDCTL_EXIT_OK;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		nddd_close(c);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	nddd_close(c);
	if (r->kind != NDDD_REPLY_FORGET) {
		nddctl_print_failure(co, r->kind == NDDD_REPLY_ERROR ?
		    r->code : NDDD_INTERNAL, r->kind == NDDD_REPLY_ERROR ?
		    r->message : "unexpected reply", key, what, strlen(what));
		status = NDDCTL_EXIT_ITEMS;
	} else
		print_forgotten(co, key, what, host, subdomains, r);
	nddd_reply_free(r);
	return status;
}

/*
 * Parses the options and the one argument of a forget command into *ns,
 * *subdomains (only where subdomains is not NULL) and *arg.  Returns
 * false after saying why.
 */
static bool
parse(int argc, char **argv, const char **ns, bool *subdomains,
    const char **arg)
{
	static const struct option host_opts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ "subdomains", no_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	}, prefix_opts[] = {
		{ "namespace", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "n:", subdomains != NULL ?
	    host_opts : prefix_opts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!nddctl_namespace_ok(optarg))
				return false;
			*ns = optarg;
			break;
		case 's':
			*subdomains = true;
			break;
		default:
			goto usage;
		}
	}
	if (optind != argc - 1)
		goto usage;
	*arg = argv[optind];
	/* Neither a host nor a prefix: the daemon would refuse it. */
	if (**arg == '\0') {
		fprintf(stderr, "nddctl: %s: an empty %s\n", argv[0],
		    subdomains != NULL ? "host" : "prefix");
		return false;
	}
	return true;
usage:
	if (subdomains != NULL)
		fprintf(stderr, "usage: nddctl forget-host [-n NAMESPACE] "
		    "[--subdomains] HOST\n");
	else
		fprintf(stderr, "usage: nddctl forget-prefix [-n NAMESPACE] "
		    "URL\n");
	return false;
}

int
nddctl_forget_host(const struct nddctl_common *co, int argc, char **argv)
{
	const char *ns = NULL, *host;
	bool subdomains = false;
	uint64_t id = 0;
	nddd_client *c;
	int sent;

	if (!parse(argc, argv, &ns, &subdomains, &host))
		return NDDCTL_EXIT_USAGE;
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = nddd_send_url_forget_host(c, ns, host, subdomains, &id);
	return finish(co, c, sent, id, "host", host, true, subdomains);
}

int
nddctl_forget_prefix(const struct nddctl_common *co, int argc, char **argv)
{
	const char *ns = NULL, *prefix;
	uint64_t id = 0;
	nddd_client *c;
	int sent;

	if (!parse(argc, argv, &ns, NULL, &prefix))
		return NDDCTL_EXIT_USAGE;
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = nddd_send_url_forget_prefix(c, ns, prefix, strlen(prefix),
	    &id);
	return finish(co, c, sent, id, "prefix", prefix, false, false);
}
