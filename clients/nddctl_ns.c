/*
 * nddctl ns-set, ns-drop: the namespaces (admin).  ns-set creates a
 * namespace or sets its default time to live for URLs; ns-drop drops one,
 * whose URLs and documents the daemon then forgets in the background.  A
 * namespace prints as its URLs, its default time to live, its documents
 * and its name, the name last.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "nddctl.h"

void
nddctl_print_namespace(const struct nddd_namespace *ns)
{
	printf("namespace\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%s\n",
	    ns->urls, ns->default_ttl_seconds, ns->docs, ns->name);
}

json_t *
nddctl_namespace_json(const struct nddd_namespace *ns)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(ns->name));
	json_object_set_new(o, "urls", json_integer((json_int_t)ns->urls));
	json_object_set_new(o, "default_ttl_seconds",
	    json_integer((json_int_t)ns->default_ttl_seconds));
	json_object_set_new(o, "docs", json_integer((json_int_t)ns->docs));
	return o;
}

/* ns-drop's line: the URLs and documents being forgotten. */
static void
print_dropped(const struct nddctl_common *co, const struct nddd_namespace *ns)
{
	json_t *o;

	if (!co->json) {
		printf("dropped\t%" PRIu64 "\t%" PRIu64 "\t%s\n", ns->urls,
		    ns->docs, ns->name);
		return;
	}
	o = json_object();
	json_object_set_new(o, "name", json_string(ns->name));
	json_object_set_new(o, "status", json_string("dropped"));
	json_object_set_new(o, "urls", json_integer((json_int_t)ns->urls));
	json_object_set_new(o, "docs", json_integer((json_int_t)ns->docs));
	nddctl_print_json(o);
}

/*
 * Waits for the reply to the request id (sent: what sending it returned)
 * about the namespace name and prints it.
 */
static int
finish(const struct nddctl_common *co, nddd_client *c, int sent,
    uint64_t id, const char *name, bool drop)
{
	struct nddd_reply *r;
	int status = NDDCTL_EXIT_OK;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		nddd_close(c);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	nddd_close(c);
	if (r->kind != NDDD_REPLY_NAMESPACE || r->nnamespaces != 1) {
		nddctl_print_failure(co, r->kind == NDDD_REPLY_ERROR ?
		    r->code : NDDD_INTERNAL, r->kind == NDDD_REPLY_ERROR ?
		    r->message : "unexpected reply", "name", name,
		    strlen(name));
		status = NDDCTL_EXIT_ITEMS;
	} else if (drop)
		print_dropped(co, &r->namespaces[0]);
	else if (co->json)
		nddctl_print_json(nddctl_namespace_json(&r->namespaces[0]));
	else
		nddctl_print_namespace(&r->namespaces[0]);
	nddd_reply_free(r);
	return status;
}

int
nddctl_ns_set(const struct nddctl_common *co, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "default-ttl", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ttl = 0, id = 0;
	nddd_client *c;
	int ch, sent;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (ch != 't')
			goto usage;
		if (!nddctl_parse_ttl("--default-ttl", optarg, &ttl))
			return NDDCTL_EXIT_USAGE;
	}
	if (optind != argc - 1)
		goto usage;
	if (!nddctl_namespace_ok(argv[optind]))
		return NDDCTL_EXIT_USAGE;
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = nddd_send_namespace_set(c, argv[optind], ttl, &id);
	return finish(co, c, sent, id, argv[optind], false);
usage:
	fprintf(stderr, "usage: nddctl ns-set NAME [--default-ttl SECONDS]\n");
	return NDDCTL_EXIT_USAGE;
}

int
nddctl_ns_drop(const struct nddctl_common *co, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ NULL, 0, NULL, 0 },
	};
	uint64_t id = 0;
	nddd_client *c;
	int sent;

	if (getopt_long(argc, argv, "", longopts, NULL) != -1 ||
	    optind != argc - 1) {
		fprintf(stderr, "usage: nddctl ns-drop NAME\n");
		return NDDCTL_EXIT_USAGE;
	}
	if (!nddctl_namespace_ok(argv[optind]))
		return NDDCTL_EXIT_USAGE;
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = nddd_send_namespace_drop(c, argv[optind], &id);
	return finish(co, c, sent, id, argv[optind], true);
}
