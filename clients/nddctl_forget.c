/*
 * nddctl forget-host, forget-prefix: URLs forgotten by host or by URL
 * prefix (admin), in one namespace, in one request each (one per shard of
 * a shard list).  The daemon answers once the deletions are durable, with
 * how many URLs it deleted.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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

/* What a forget asks, for each daemon it is sent to. */
struct forget {
	const char *ns, *what;
	bool host, subdomains;
};

static int
send_forget(nddd_client *c, const struct forget *f, uint64_t *id)
{
	return f->host ? nddd_send_url_forget_host(c, f->ns, f->what,
	    f->subdomains, id) : nddd_send_url_forget_prefix(c, f->ns, f->what,
	    strlen(f->what), id);
}

/*
 * The forget on every shard of the list of -H, one after the other (a
 * host's URLs are on all of them): one result line with the sum,
 * complete when every shard's is.  A shard that cannot be asked, or
 * refuses, is said on stderr and sets the exit status (3, or 1 for a
 * refusal); the other shards' URLs are forgotten all the same.
 */
static int
forget_on_shards(const struct nddctl_common *co, const struct forget *f)
{
	struct nddctl_common one = *co;
	struct nddd_reply sum = { .kind = NDDD_REPLY_FORGET, .complete = 1 };
	char *list, *addr, *save = NULL;
	int status = NDDCTL_EXIT_OK;

	if ((list = strdup(co->address)) == NULL) {
		fprintf(stderr, "nddctl: out of memory\n");
		return NDDCTL_EXIT_USAGE;
	}
	for (addr = strtok_r(list, ",", &save); addr != NULL;
	    addr = strtok_r(NULL, ",", &save)) {
		struct nddd_reply *r;
		nddd_client *c;
		uint64_t id = 0;

		one.address = addr;
		if ((c = nddctl_connect(&one)) == NULL) {
			status = NDDCTL_EXIT_UNREACHABLE;
			continue;
		}
		if (send_forget(c, f, &id) == -1 ||
		    (r = nddd_call(c, id)) == NULL) {
			fprintf(stderr, "nddctl: %s: %s\n", addr,
			    nddd_errstr(c));
			nddd_close(c);
			status = NDDCTL_EXIT_UNREACHABLE;
			continue;
		}
		nddd_close(c);
		if (r->kind == NDDD_REPLY_FORGET) {
			sum.forgotten += r->forgotten;
			sum.complete &= r->complete;
		} else {
			fprintf(stderr, "nddctl: %s: %s: %s\n", addr,
			    nddd_code_name(r->kind == NDDD_REPLY_ERROR ?
			    r->code : NDDD_INTERNAL), r->message ? r->message :
			    "unexpected reply");
			if (status == NDDCTL_EXIT_OK)
				status = NDDCTL_EXIT_ITEMS;
		}
		nddd_reply_free(r);
	}
	free(list);
	print_forgotten(co, f->host ? "host" : "prefix", f->what, f->host,
	    f->subdomains, &sum);
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
	if (nddctl_sharded(co))
		return forget_on_shards(co, &(struct forget){ ns, host, true,
		    subdomains });
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
	if (nddctl_sharded(co))
		return forget_on_shards(co, &(struct forget){ ns, prefix,
		    false, false });
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = nddd_send_url_forget_prefix(c, ns, prefix, strlen(prefix),
	    &id);
	return finish(co, c, sent, id, "prefix", prefix, false, false);
}
