/*
 * nddctl: the command-line client of nddd.
 *
 *   nddctl [-H HOST:PORT] [--json] [options] COMMAND [ARGS]
 *
 * Commands are looked up by name in one table; each parses its own
 * arguments.  The commands that talk to a daemon share the options before
 * the command name.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "nddctl.h"

/*
 * The commands: a daemon's (given the common options) or a local one, and
 * whether -H may name a shard list for it (the URL commands route over
 * it, the forget commands go to every shard).
 */
static const struct command {
	const char *name;
	int (*daemon_cmd)(const struct nddctl_common *, int, char **);
	int (*local_cmd)(int, char **);
	bool shards;
	const char *help;
} commands[] = {
	{ "url-submit", nddctl_url_submit, NULL, true,
	  "[-n NAMESPACE] [--ttl SECONDS] [--times] URL...|-\n"
	  "                record URLs; prints new or duplicate and the count\n"
	  "                (--ttl: seen for that long; 0: the namespace's "
	  "default)" },
	{ "url-check", nddctl_url_check, NULL, true,
	  "[-n NAMESPACE] [--times] URL...|-\n"
	  "                has each URL been seen? prints seen or unseen" },
	{ "url-delete", nddctl_url_delete, NULL, true,
	  "[-n NAMESPACE] [--times] URL...|-\n"
	  "                forget URLs; prints deleted or not_found" },
	{ "forget-host", nddctl_forget_host, NULL, true,
	  "[-n NAMESPACE] [--subdomains] HOST\n"
	  "                forget every URL of HOST, any scheme or port "
	  "(--subdomains:\n"
	  "                those of the hosts under it too); prints how many "
	  "(admin)" },
	{ "forget-prefix", nddctl_forget_prefix, NULL, true,
	  "[-n NAMESPACE] URL\n"
	  "                forget every URL whose canonical form begins with "
	  "URL's;\n"
	  "                prints how many (admin)" },
	{ "ns-set", nddctl_ns_set, NULL, false,
	  "NAME [--default-ttl SECONDS]\n"
	  "                create a namespace, or set its default time to "
	  "live\n"
	  "                (0: none) for later submits (admin)" },
	{ "ns-drop", nddctl_ns_drop, NULL, false,
	  "NAME\n"
	  "                drop a namespace; its URLs are forgotten in the "
	  "background\n"
	  "                (admin)" },
	{ "doc-submit", nddctl_doc_submit, NULL, false,
	  "[--match ANSWER] --url URL [--html] [--query-only] [FILE|-]\n"
	  "                | --jsonl [--batch N] [--query-only] [FILE|-]\n"
	  "                store a document; prints its id, simhash, group and\n"
	  "                near duplicates with their similarity (--jsonl: one\n"
	  "                JSON document a line, sent in batches of N, default\n"
	  "                256; --match verified or hamming: by that answer)" },
	{ "doc-query", nddctl_doc_query, NULL, false,
	  "[--match ANSWER | --k N] [--html] [--simhash HEX] [FILE|-]\n"
	  "                the stored documents near a body or a fingerprint\n"
	  "                (--k, --simhash: the Hamming answer)" },
	{ "doc-get", nddctl_doc_get, NULL, false,
	  "[--match ANSWER] --url URL\n"
	  "                a stored document and its near duplicates" },
	{ "doc-delete", nddctl_doc_delete, NULL, false,
	  "--url URL    forget a document (admin)" },
	{ "reshard", nddctl_reshard, NULL, true,
	  "--add HOST:PORT\n"
	  "                add a shard at the end of -H's shard list, moving "
	  "the keys\n"
	  "                it takes over while every daemon serves (admin)" },
	{ "stats", nddctl_stats, NULL, false,
	  "                daemon statistics" },
	{ "verify", nddctl_verify, NULL, false,
	  "               check the daemon's filter against its store "
	  "(admin)" },
	{ "simhash", NULL, nddctl_simhash, false,
	  "[...] [FILE|-]  fingerprint documents locally (no daemon; "
	  "see simhash --help)" },
	{ "text", NULL, nddctl_text, false,
	  "[--html [--whole]] [FILE|-]\n"
	  "                the text nddd judges a document by: a page's main "
	  "content\n"
	  "                (no daemon; see text --help)" },
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static void
usage(FILE *out)
{
	fprintf(out,
	    "usage: nddctl [-H HOST:PORT] [--json] [--token TOKEN | "
	    "--token-file FILE]\n"
	    "              [--tls] [--ca FILE] [--cert FILE] [--key FILE] "
	    "[--timeout MS]\n"
	    "              [--batch N] [--window N] [--max-frame BYTES]\n"
	    "              [--relaxed|--durable] [--digests]\n"
	    "              COMMAND [ARGS]\n"
	    "\ncommands:\n");
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %s %s\n", commands[i].name, commands[i].help);
	fprintf(out,
	    "\nURLs come from the arguments, or one per line from standard "
	    "input when the\nonly argument is '-'.  Results are printed in "
	    "input order, one line each, as\nsoon as they are acknowledged "
	    "(tab-separated, or one JSON object per line\nwith --json).  "
	    "-n (--namespace) names the set of URLs to work in (none:\nthe "
	    "default one); --times prints when each URL was first and last "
	    "submitted\nand when its time to live ends (ISO 8601, UTC; with "
	    "--json, milliseconds too).\nforget-host and forget-prefix find "
	    "only URLs submitted as text, not those\nsent as digests "
	    "(--digests).\n"
	    "\noptions:\n"
	    "  -H, --host HOST:PORT  daemon address (default 127.0.0.1:%d); "
	    "for the URL\n"
	    "                        commands, a shard list too: "
	    "HOST:PORT,HOST:PORT,...\n"
	    "                        (URLs routed by their digests, "
	    "forgets sent to every\n"
	    "                        shard; docs/sharding.md)\n"
	    "  --json                one JSON object per result line\n"
	    "  --token TOKEN         send TOKEN with every request (default: "
	    "$NDDD_TOKEN);\n"
	    "                        other users see it in ps: prefer "
	    "--token-file\n"
	    "  --token-file FILE     send the token on FILE's first line "
	    "(warns if group or\n"
	    "                        others may read FILE)\n"
	    "  --tls                 speak TLS; the server's certificate must "
	    "verify\n"
	    "  --ca FILE             CA certificates for --tls (default: the "
	    "system's)\n"
	    "  --cert FILE, --key FILE  client certificate and key for --tls\n"
	    "  --timeout MS          give up on a silent daemon after MS "
	    "(default 30000; 0: never)\n"
	    "  --batch N             URLs per request (default 1000); "
	    "documents per request\n"
	    "                        of doc-submit --jsonl (default 256, "
	    "at most 4096)\n"
	    "  --window N            requests in flight (default 8)\n"
	    "  --max-frame BYTES     the daemon's [server] max_frame (default "
	    "8M; K and M\n"
	    "                        suffixes): doc batches stay within half "
	    "of it\n"
	    "  --no-progress         no progress bar on standard error\n"
	    "  --relaxed             url-submit, url-delete: answered once "
	    "applied and\n"
	    "                        written to the OS, before the disk "
	    "(survives a crash\n"
	    "                        of nddd, not of the machine; default: "
	    "[store] sync)\n"
	    "  --durable             url-submit, url-delete: answered once on "
	    "disk\n"
	    "  --digests             canonicalize and hash URLs here, send "
	    "their digests\n"
	    "                        (the daemon's rules, asked from it; "
	    "output unchanged)\n"
	    "\nexit status: 0 success, 1 some items failed, 2 usage error, "
	    "3 daemon unreachable\nor connection lost, 4 the output could not "
	    "be written.\n", NDDD_DEFAULT_PORT);
}

/*
 * The token on the first line of path, blanks around it stripped, for
 * --token-file: a token in the arguments is shown to every user by ps.
 * Returns NULL, having said why, when the file cannot be read or its first
 * line is empty or more than one word.  A file that others may read is
 * used, with a warning: nddd warns the same of its own tokens file, and a
 * group sharing a token is a choice an operator may make.  The caller
 * frees the token.
 */
static char *
read_token_file(const char *path)
{
	FILE *f;
	struct stat sb;
	char *line = NULL, *tok;
	size_t cap = 0, len;

	if ((f = fopen(path, "r")) == NULL) {
		fprintf(stderr, "nddctl: --token-file %s: %s\n", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fileno(f), &sb) == 0 && (sb.st_mode & (S_IRGRP | S_IROTH)))
		fprintf(stderr, "nddctl: warning: --token-file %s is readable "
		    "by group or others (mode %04o): a token is a secret\n",
		    path, (unsigned)(sb.st_mode & 07777));
	if (getline(&line, &cap, f) == -1) {
		if (ferror(f))
			fprintf(stderr, "nddctl: --token-file %s: %s\n", path,
			    strerror(errno));
		else
			fprintf(stderr, "nddctl: --token-file %s: empty\n",
			    path);
		goto err;
	}
	tok = line;
	while (isspace((unsigned char)*tok))
		tok++;
	len = strlen(tok);
	while (len > 0 && isspace((unsigned char)tok[len - 1]))
		len--;
	if (len == 0) {
		fprintf(stderr, "nddctl: --token-file %s: no token on its "
		    "first line\n", path);
		goto err;
	}
	tok[len] = '\0';
	/* Tokens have no blanks: this may be a line of nddd's own tokens
	 * file, "TOKEN ROLE". */
	if (strpbrk(tok, " \t\v\f\r") != NULL) {
		fprintf(stderr, "nddctl: --token-file %s: its first line is "
		    "more than a token (blanks inside)\n", path);
		goto err;
	}
	memmove(line, tok, len + 1);
	fclose(f);
	return line;
err:
	if (line != NULL)
		explicit_bzero(line, cap);
	free(line);
	fclose(f);
	return NULL;
}

/*
 * Whether all of standard output reached its file: a full disk or a closed
 * pipe must not pass for success.
 */
static bool
output_written(void)
{
	int failed_before = ferror(stdout);

	if (fflush(stdout) == EOF || ferror(stdout)) {
		fprintf(stderr, "nddctl: cannot write the output%s%s\n",
		    failed_before ? "" : ": ",
		    failed_before ? "" : strerror(errno));
		return false;
	}
	return true;
}

/*
 * A count for --timeout (0: never), --batch or --window (ch says which)
 * into co.  Returns false, having said why, for anything else.
 */
static bool
parse_count(int ch, const char *arg, struct nddctl_common *co)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v < 0 || (ch != 't' && v == 0) ||
	    v > 100000000) {
		fprintf(stderr, "nddctl: bad number '%s'\n", arg);
		return false;
	}
	if (ch == 't')
		co->conn.timeout_ms = (int)v;
	else if (ch == 'b') {
		co->batch = (size_t)v;
		co->batch_given = true;
	} else
		co->window = (unsigned)v;
	return true;
}

/* --max-frame: bytes, with a K or M suffix, 4K to 1024M. */
static bool
parse_max_frame(const char *arg, size_t *out)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (v < 0 || v > 1024L * 1024 * 1024)
		v = -1;		/* refused below */
	else if (*end == 'k' || *end == 'K') {
		v *= 1024;
		end++;
	} else if (*end == 'm' || *end == 'M') {
		v *= 1024 * 1024;
		end++;
	}
	if (end == arg || *end != '\0' || v < 4096 || v > 1024L * 1024 * 1024) {
		fprintf(stderr, "nddctl: --max-frame: 4K to 1024M, not '%s'\n",
		    arg);
		return false;
	}
	*out = (size_t)v;
	return true;
}

/* The options of the connection itself: the token and TLS. */
static void
set_conn_option(int ch, const char *arg, struct nddd_options *conn)
{
	switch (ch) {
	case 'T':
		conn->token = arg;
		break;
	case 'S':
		conn->tls = 1;
		break;
	case 'A':
		conn->tls_ca = arg;
		break;
	case 'C':
		conn->tls_cert = arg;
		break;
	case 'K':
		conn->tls_key = arg;
		break;
	}
}

/*
 * The options before the command name into co (--token-file's path into
 * *token_file).  Returns -1 when a command is to run (at argv[optind]), or
 * the status to exit with.
 */
static int
parse_options(int argc, char **argv, struct nddctl_common *co,
    const char **token_file)
{
	static const struct option longopts[] = {
		{ "host", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'b' },
		{ "window", required_argument, NULL, 'w' },
		{ "no-progress", no_argument, NULL, 'P' },
		{ "token", required_argument, NULL, 'T' },
		{ "token-file", required_argument, NULL, 'F' },
		{ "tls", no_argument, NULL, 'S' },
		{ "ca", required_argument, NULL, 'A' },
		{ "cert", required_argument, NULL, 'C' },
		{ "key", required_argument, NULL, 'K' },
		{ "relaxed", no_argument, NULL, 'R' },
		{ "durable", no_argument, NULL, 'D' },
		{ "digests", no_argument, NULL, 'G' },
		{ "max-frame", required_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool token_given = false;
	int ch;

	/* Options stop at the command name: the command parses the rest. */
	while ((ch = getopt_long(argc, argv, "+H:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			co->address = optarg;
			break;
		case 'j':
			co->json = true;
			break;
		case 't':
		case 'b':
		case 'w':
			if (!parse_count(ch, optarg, co))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'M':
			if (!parse_max_frame(optarg, &co->max_frame))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'P':
			co->progress = false;
			break;
		case 'T':
			token_given = true;
			/* FALLTHROUGH */
		case 'S':
		case 'A':
		case 'C':
		case 'K':
			set_conn_option(ch, optarg, &co->conn);
			break;
		case 'F':
			*token_file = optarg;
			break;
		case 'R':
			co->durability = NDDD_RELAXED;
			break;
		case 'D':
			co->durability = NDDD_DURABLE;
			break;
		case 'G':
			co->digests = true;
			break;
		case 'h':
			usage(stdout);
			return NDDCTL_EXIT_OK;
		default:
			usage(stderr);
			return NDDCTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return NDDCTL_EXIT_USAGE;
	}
	if (token_given && *token_file != NULL) {
		fprintf(stderr, "nddctl: --token and --token-file: give one\n");
		return NDDCTL_EXIT_USAGE;
	}
	return -1;
}

static const struct command *
command_lookup(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

/* Why cmd cannot take a shard list, with the commands that can. */
static void
refuse_shards(const struct command *cmd)
{
	size_t n = 0, said = 0;

	for (size_t i = 0; i < N_COMMANDS; i++)
		n += commands[i].shards;
	fprintf(stderr, "nddctl: %s: -H names one daemon here; a shard list "
	    "is for ", cmd->name);
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (!commands[i].shards)
			continue;
		said++;
		fprintf(stderr, "%s%s", said == 1 ? "" : said == n ? " and " :
		    ", ", commands[i].name);
	}
	fputc('\n', stderr);
}

/*
 * Runs cmd on its arguments argv[0..argc) (its name first), with the token
 * of token_file, if any, for a daemon's command.  Returns the exit status.
 */
static int
run_command(const struct command *cmd, struct nddctl_common *co,
    const char *token_file, int argc, char **argv)
{
	char *file_token = NULL;
	int status;

	if (cmd->daemon_cmd != NULL && nddctl_sharded(co) && !cmd->shards) {
		refuse_shards(cmd);
		return NDDCTL_EXIT_USAGE;
	}
	if (cmd->daemon_cmd != NULL && token_file != NULL) {
		if ((file_token = read_token_file(token_file)) == NULL)
			return NDDCTL_EXIT_USAGE;
		co->conn.token = file_token;
	}
	optind = 0;	/* the command's getopt starts afresh */
	status = cmd->local_cmd != NULL ? cmd->local_cmd(argc, argv) :
	    cmd->daemon_cmd(co, argc, argv);
	if (file_token != NULL) {
		explicit_bzero(file_token, strlen(file_token));
		free(file_token);
	}
	return output_written() ? status : NDDCTL_EXIT_OUTPUT;
}

int
main(int argc, char **argv)
{
	struct nddctl_common co = {
		.address = "127.0.0.1",
		.conn = {
			.timeout_ms = 30000,
			.token = getenv("NDDD_TOKEN"),
		},
		.batch = 1000,
		.window = 8,
		.max_frame = NDDD_DEFAULT_MAX_FRAME,
		.progress = isatty(STDERR_FILENO),
	};
	const char *token_file = NULL;
	const struct command *cmd;
	int status;

	if ((status = parse_options(argc, argv, &co, &token_file)) != -1)
		return status;
	if ((cmd = command_lookup(argv[optind])) == NULL) {
		fprintf(stderr, "nddctl: unknown command '%s'\n", argv[optind]);
		usage(stderr);
		return NDDCTL_EXIT_USAGE;
	}
	return run_command(cmd, &co, token_file, argc - optind, argv + optind);
}

bool
nddctl_sharded(const struct nddctl_common *co)
{
	return strchr(co->address, ',') != NULL;
}

nddd_shards *
nddctl_open_shards(const struct nddctl_common *co)
{
	char *list, *p, *err = NULL;
	const char **addr = NULL;
	size_t n = 0;
	nddd_shards *s = NULL;

	if ((list = strdup(co->address)) == NULL ||
	    (addr = calloc(strlen(list) / 2 + 2, sizeof(*addr))) == NULL) {
		fprintf(stderr, "nddctl: out of memory\n");
		goto out;
	}
	for (p = list; p != NULL; ) {
		char *comma = strchr(p, ',');

		if (comma != NULL)
			*comma = '\0';
		if (*p == '\0') {
			fprintf(stderr, "nddctl: -H: an empty address in the "
			    "shard list '%s'\n", co->address);
			goto out;
		}
		addr[n++] = p;
		p = comma != NULL ? comma + 1 : NULL;
	}
	if ((s = nddd_shards_open(addr, n, &co->conn, &err)) == NULL)
		fprintf(stderr, "nddctl: %s\n", err ? err : "out of memory");
	free(err);
out:
	free(addr);
	free(list);
	return s;
}

nddd_client *
nddctl_connect(const struct nddctl_common *co)
{
	nddd_client *c;
	char *err;

	if ((c = nddd_connect_opts(co->address, &co->conn, &err)) == NULL) {
		fprintf(stderr, "nddctl: %s\n", err ? err : "out of memory");
		free(err);
	}
	return c;
}

bool
nddctl_parse_ttl(const char *opt, const char *arg, uint64_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(arg, &end, 10);
	/* strtoull takes "-1" as the largest number: digits only. */
	if (!isdigit((unsigned char)*arg) || *end != '\0' || errno != 0 ||
	    v > NDDD_TTL_MAX) {
		fprintf(stderr, "nddctl: %s: 0 to %u seconds (100 years), not "
		    "'%s'\n", opt, NDDD_TTL_MAX, arg);
		return false;
	}
	*out = v;
	return true;
}

bool
nddctl_namespace_ok(const char *name)
{
	if (nddd_namespace_valid(name))
		return true;
	fprintf(stderr, "nddctl: '%s' is not a namespace name: at most %d "
	    "bytes of ASCII letters, digits, '.', '_' and '-'\n", name,
	    NDDD_NAMESPACE_MAX);
	return false;
}

/* Whether nddctl_put_field writes byte b as an escape. */
static bool
field_escaped(unsigned char b)
{
	return b < 0x20 || b == 0x7f || b == '\\';
}

#define ONES	0x0101010101010101ull
#define HIGHS	0x8080808080808080ull

/* Whether one of the 8 bytes of w (any order) may need an escape: one
 * below 0x20, or 0x7f or '\\' (a zero after an XOR), found eight at a
 * time (exact for bytes below 0x80, the others only send the word to the
 * byte-wise test). */
static bool
word_escaped(uint64_t w)
{
	uint64_t del = w ^ (0x7f * ONES), bsl = w ^ ('\\' * ONES);

	return (((w - 0x20 * ONES) | (del - ONES) | (bsl - ONES)) & HIGHS) !=
	    0;
}

/* Where the first byte of s[from..len) that needs an escape is (len if
 * none). */
static size_t
field_plain_run(const char *s, size_t from, size_t len)
{
	size_t i = from;
	uint64_t w;

	/* A URL is plain but for rare bytes: eight at a time first. */
	for (; i + 8 <= len; i += 8) {
		memcpy(&w, s + i, 8);
		if (word_escaped(w))
			break;
	}
	while (i < len && !field_escaped((unsigned char)s[i]))
		i++;
	return i;
}

void
nddctl_put_field(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		unsigned char b;
		size_t run = field_plain_run(s, i, len);

		/* The bytes that need no escape go out together. */
		fwrite_unlocked(s + i, 1, run - i, stdout);
		if (run == len)
			break;
		b = (unsigned char)s[run];
		switch (b) {
		case '\\':
			fputs("\\\\", stdout);
			break;
		case '\t':
			fputs("\\t", stdout);
			break;
		case '\r':
			fputs("\\r", stdout);
			break;
		case '\n':
			fputs("\\n", stdout);
			break;
		default:
			printf("\\x%02x", b);
		}
		i = run + 1;
	}
}

void
nddctl_print_failure(const struct nddctl_common *co, enum nddd_code code,
    const char *message, const char *key, const char *value, size_t len)
{
	json_t *o, *e;

	if (!co->json) {
		printf("error\t%s: ", nddd_code_name(code));
		if (message != NULL)
			nddctl_put_field(message, strlen(message));
		putchar('\t');
		if (value != NULL)
			nddctl_put_field(value, len);
		putchar('\n');
		return;
	}
	o = json_object();
	e = json_object();
	json_object_set_new(o, key, value ? nddctl_json_string(value, len) :
	    json_null());
	json_object_set_new(e, "code", json_string(nddd_code_name(code)));
	json_object_set_new(e, "message", nddctl_json_string(message ?
	    message : "", message ? strlen(message) : 0));
	json_object_set_new(o, "error", e);
	nddctl_print_json(o);
}

void
nddctl_print_json(json_t *obj)
{
	/* Similarities to three places, as nddctl_put_similarity writes
	 * them in the lines it prints itself. */
	char *s = json_dumps(obj, JSON_REAL_PRECISION(3));

	if (s != NULL) {
		fputs(s, stdout);
		fputc('\n', stdout);
		free(s);
	}
	json_decref(obj);
}

json_t *
nddctl_json_string(const char *s, size_t len)
{
	json_t *j = json_stringn(s, len);
	char *clean, *p;

	if (j != NULL)
		return j;
	/* Not UTF-8: keep what is, mark what is not. */
	if ((clean = malloc(len * 3 + 1)) == NULL)
		return json_string("");
	p = clean;
	for (size_t i = 0; i < len;) {
		size_t n = nddctl_utf8_seq((const unsigned char *)s + i,
		    len - i);

		if (n == 0) {
			memcpy(p, "\xef\xbf\xbd", 3);
			p += 3;
			i++;
		} else {
			memcpy(p, s + i, n);
			p += n;
			i += n;
		}
	}
	j = json_stringn(clean, (size_t)(p - clean));
	free(clean);
	return j ? j : json_string("");
}

double
nddctl_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void
progress_start(struct progress *p, bool enabled, const char *what)
{
	p->enabled = enabled;
	p->done = 0;
	p->started = p->last_drawn = nddctl_now();
	p->what = what;
}

static void
progress_draw(struct progress *p, double now)
{
	double secs = now - p->started;

	fprintf(stderr, "\r%zu %s, %.0f/s, %.1f s   ", p->done, p->what,
	    secs > 0 ? (double)p->done / secs : 0.0, secs);
	fflush(stderr);
	p->last_drawn = now;
}

void
progress_update(struct progress *p, size_t done)
{
	double now;

	p->done = done;
	if (!p->enabled)
		return;
	now = nddctl_now();
	/* Small inputs finish before the first redraw and never show one. */
	if (now - p->last_drawn >= 0.1 && now - p->started >= 0.5)
		progress_draw(p, now);
}

void
progress_finish(struct progress *p)
{
	double now = nddctl_now();

	if (!p->enabled || now - p->started < 0.5)
		return;
	progress_draw(p, now);
	fputc('\n', stderr);
}
