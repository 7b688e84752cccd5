/*
 * Integration tests of nddctl, the command-line client, against a real
 * daemon: output formats (text and JSON), standard input, exit statuses.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <jansson.h>

#include "corpus.h"
#include "harness.h"
#include "testutil.h"

static const char *
nddctl_bin(void)
{
	const char *bin = getenv("NDDCTL_BIN");

	return bin && *bin ? bin : "clients/nddctl";
}

/*
 * Runs nddctl with args (a shell word list), with env (shell assignments,
 * or NULL) in its environment and input on its standard input; returns
 * its exit status, its standard output in *out and, if err is not NULL,
 * its standard error in *err.
 */
static int
run_with(const char *env, const char *args, const char *input, char **out,
    char **err)
{
	char *cmd, *dir = tu_tmpdir(), *in_path, *out_path, *err_path;
	FILE *f;
	int status;

	ck_assert_int_ne(asprintf(&in_path, "%s/in", dir), -1);
	ck_assert_int_ne(asprintf(&out_path, "%s/out", dir), -1);
	ck_assert_int_ne(asprintf(&err_path, "%s/err", dir), -1);
	f = fopen(in_path, "w");
	fputs(input ? input : "", f);
	fclose(f);
	ck_assert_int_ne(asprintf(&cmd, "%s %s %s < %s > %s%s%s",
	    env ? env : "", nddctl_bin(), args, in_path, out_path,
	    err ? " 2> " : "", err ? err_path : ""), -1);
	status = system(cmd);
	*out = tu_read_file(out_path, NULL);
	ck_assert_ptr_nonnull(*out);
	if (err != NULL) {
		*err = tu_read_file(err_path, NULL);
		ck_assert_ptr_nonnull(*err);
	}
	free(cmd);
	free(in_path);
	free(out_path);
	free(err_path);
	tu_rmtree(dir);
	free(dir);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* run_with, without environment, and with standard error left alone. */
static int
run(const char *args, const char *input, char **out)
{
	return run_with(NULL, args, input, out, NULL);
}

START_TEST(test_json_lines)
{
	struct harness h;
	char *args, *out;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s --json url-submit "
	    "http://a.example/x HTTP://A.EXAMPLE:80/x nope", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);	/* one item failed */
	ck_assert_str_eq(out,
	    "{\"url\": \"http://a.example/x\", \"status\": \"new\", "
	    "\"count\": 1}\n"
	    "{\"url\": \"HTTP://A.EXAMPLE:80/x\", \"status\": \"duplicate\", "
	    "\"count\": 2}\n"
	    "{\"url\": \"nope\", \"error\": {\"code\": \"INVALID_ARGUMENT\", "
	    "\"message\": \"not an absolute URL\"}}\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s --json url-check -",
	    h.address), -1);
	ck_assert_int_eq(run(args, "http://a.example/x\n\nhttp://b.example/\n",
	    &out), 0);
	ck_assert_str_eq(out,
	    "{\"url\": \"http://a.example/x\", \"seen\": true, \"count\": 2}\n"
	    "{\"url\": \"http://b.example/\", \"seen\": false, \"count\": 0}\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s --json url-delete "
	    "http://a.example/x http://a.example/x", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out,
	    "{\"url\": \"http://a.example/x\", \"status\": \"deleted\"}\n"
	    "{\"url\": \"http://a.example/x\", \"status\": \"not_found\"}\n");
	free(out);
	free(args);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_text_and_stats)
{
	struct harness h;
	char *args, *out;
	json_t *stats, *cbf;
	json_error_t err;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s url-submit http://t.example/ "
	    "http://t.example/", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "new\t1\thttp://t.example/\n"
	    "duplicate\t2\thttp://t.example/\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s --json stats", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	stats = json_loads(out, 0, &err);
	ck_assert_msg(stats != NULL, "%s: %s", out, err.text);
	ck_assert_int_eq(json_integer_value(json_object_get(stats, "urls")), 1);
	cbf = json_object_get(stats, "cbf");
	ck_assert_ptr_nonnull(cbf);
	ck_assert_int_eq(json_integer_value(json_object_get(cbf, "k")), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(cbf, "nonzero")),
	    8);
	ck_assert_ptr_nonnull(json_object_get(cbf, "counters"));
	ck_assert_ptr_nonnull(json_object_get(cbf, "saturated"));
	ck_assert_ptr_nonnull(json_object_get(stats, "checks_filter_only"));
	json_decref(stats);
	free(out);
	free(args);
	harness_cleanup(&h);
}
END_TEST

/*
 * A document larger than a request may carry (--max-frame) is refused as
 * its item's RESOURCE_EXHAUSTED, before it is read into memory: a file by
 * its size, an endless device by reading no further than the limit; one
 * that fits goes through.
 */
START_TEST(test_document_over_the_limit)
{
	struct harness h;
	char *dir = tu_tmpdir(), *path, *args, *out;
	FILE *f;

	harness_init(&h, "[server]\nmax_frame = 1M\n");
	harness_start(&h);
	ck_assert_int_ne(asprintf(&path, "%s/big.txt", dir), -1);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 200000; i++)
		fputs("word ", f);	/* 1,000,000 bytes */
	fclose(f);

	ck_assert_int_ne(asprintf(&args, "-H %s --max-frame 512K doc-submit "
	    "--url http://big.example/ %s", h.address, path), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);
	ck_assert_msg(strncmp(out, "error\tRESOURCE_EXHAUSTED: ", 26) == 0 &&
	    strstr(out, "--max-frame 524288") != NULL &&
	    strstr(out, "\thttp://big.example/\n") != NULL, "%s", out);
	free(out);
	free(args);

	/* /dev/zero never ends: read up to the limit, no further. */
	ck_assert_int_ne(asprintf(&args, "-H %s --json --max-frame 512K "
	    "doc-query /dev/zero", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);
	ck_assert_msg(strstr(out, "\"code\": \"RESOURCE_EXHAUSTED\"") !=
	    NULL && strstr(out, "/dev/zero holds more than") != NULL, "%s",
	    out);
	free(out);
	free(args);

	/* Within the daemon's frames: stored. */
	ck_assert_int_ne(asprintf(&args, "-H %s --max-frame 1M doc-submit "
	    "--url http://big.example/ %s", h.address, path), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(strncmp(out, "doc\t1\t", 6) == 0, "%s", out);
	free(out);
	free(args);

	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	tu_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

START_TEST(test_large_stdin_keeps_order)
{
	struct harness h;
	char *args, *out, *in = NULL, *line, *save = NULL;
	size_t inlen = 0;
	FILE *f = open_memstream(&in, &inlen);
	int n = 0;

	for (int i = 0; i < 25000; i++)
		fprintf(f, "http://order.example/%d\n", i);
	fclose(f);
	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s --batch 700 --window 5 "
	    "url-submit -", h.address), -1);
	ck_assert_int_eq(run(args, in, &out), 0);
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save), n++) {
		char want[64];

		snprintf(want, sizeof(want), "new\t1\thttp://order.example/%d",
		    n);
		ck_assert_str_eq(line, want);
	}
	ck_assert_int_eq(n, 25000);
	free(out);
	free(args);
	free(in);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_unreachable_and_usage)
{
	char *out;
	struct harness h;
	char *args;

	/* Nothing listens on a harness port before it starts. */
	harness_init(&h, NULL);
	ck_assert_int_ne(asprintf(&args, "-H %s url-check http://x.example/",
	    h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 3);
	ck_assert_str_eq(out, "");
	free(out);
	free(args);
	ck_assert_int_eq(run("frobnicate", NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("url-submit", NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("--batch 0 url-submit -", NULL, &out), 2);
	free(out);
	harness_cleanup(&h);
}
END_TEST

/* Tab-separated fields of each line of text: the count of fields. */
static int
fields_of_line(const char *line, size_t len)
{
	int n = 1;

	for (size_t i = 0; i < len; i++)
		n += line[i] == '\t';
	return n;
}

/*
 * Text output stays one line of tab-separated fields per result whatever
 * the URLs hold (control characters and backslashes are escaped), and an
 * output that cannot be written is an error, not a success.
 */
START_TEST(test_text_escapes_and_unwritable_output)
{
	static const char input[] =
	    "http://esc.example/a\tb\n"		/* TAB */
	    "http://esc.example/c\rd\n"		/* CR */
	    "http://esc.example/e\\f\n"		/* backslash */
	    "http://esc.example/g\x01h\n";		/* another control */
	static const char *const shown[] = {
		"http://esc.example/a\\tb", "http://esc.example/c\\rd",
		"http://esc.example/e\\\\f", "http://esc.example/g\\x01h",
	};
	struct harness h;
	char *args, *out, *cmd, *line;
	size_t nlines = 0;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s url-submit -", h.address), -1);
	(void)run(args, input, &out);
	line = out;
	for (char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		size_t len = (size_t)(nl - line);

		ck_assert_uint_lt(nlines, 4);
		ck_assert_msg(fields_of_line(line, len) == 3,
		    "not 3 fields: %.*s", (int)len, line);
		ck_assert_msg(len >= strlen(shown[nlines]) &&
		    memcmp(nl - strlen(shown[nlines]), shown[nlines],
		    strlen(shown[nlines])) == 0, "line %zu ends not in %s: %.*s",
		    nlines, shown[nlines], (int)len, line);
		nlines++;
	}
	ck_assert_uint_eq(nlines, 4);
	ck_assert_str_eq(line, "");
	free(out);

	/* A full device: exit status 4, for a daemon command and for a
	 * local one. */
	ck_assert_int_ne(asprintf(&cmd, "echo http://full.example/ | %s %s "
	    "> /dev/full 2> /dev/null", nddctl_bin(), args), -1);
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 4);
	free(cmd);
	ck_assert_int_ne(asprintf(&cmd, "echo some words | %s simhash - "
	    "> /dev/full 2> /dev/null", nddctl_bin()), -1);
	ck_assert_int_eq(WEXITSTATUS(system(cmd)), 4);
	free(cmd);
	free(args);
	harness_cleanup(&h);
}
END_TEST

/*
 * The URL commands give the same output and exit status with --relaxed,
 * --durable and --digests as without: each list of options runs against a
 * daemon of its own, the plain commands against another.  Small batches
 * put the invalid URLs in batches of their own too, which --digests
 * answers without asking the daemon.
 */
START_TEST(test_url_options_same_output)
{
	static const char *const variants[] = {
		"--relaxed --digests", "--durable", "--digests --json",
		"--json", "--relaxed",
	};
	/* In batches of 2: a URL given twice is so in one batch, as
	 * batches in flight together may be carried out in any order. */
	static const char input[] =
	    "http://o.example/a\nHTTP://O.EXAMPLE:80/a#x\n"
	    "nope\nmailto:x@o.example\n"
	    "http://o.example/b\nhttp:///nohost\n"
	    "data:,x\nhttp://o.example/c?utm_source=z\n"
	    "http://o.example/%7Ea\nhttp://o.example/~a\n";
	static const char *const cmds[] = {
		"url-check -", "url-submit -", "url-submit -", "url-check -",
		"url-delete -", "url-delete -", "url-check -",
	};
	struct harness plain, h;
	char *args, *want, *got;
	int wrc, grc;

	for (size_t v = 0; v < sizeof(variants) / sizeof(*variants); v++) {
		bool json = strstr(variants[v], "--json") != NULL;

		harness_init(&plain, NULL);
		harness_start(&plain);
		/* Relaxed changes wait this long for their fdatasync. */
		harness_init(&h, "[store]\nrelaxed_sync_interval = 600s\n");
		harness_start(&h);
		for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
			ck_assert_int_ne(asprintf(&args, "-H %s %s --batch 2 "
			    "--window 3 %s", plain.address, json ? "--json" :
			    "", cmds[i]), -1);
			wrc = run(args, input, &want);
			free(args);
			ck_assert_int_ne(asprintf(&args, "-H %s %s --batch 2 "
			    "--window 3 %s", h.address, variants[v], cmds[i]),
			    -1);
			grc = run(args, input, &got);
			ck_assert_msg(grc == wrc && strcmp(got, want) == 0,
			    "nddctl %s: exit %d:\n%s\nwithout the options: "
			    "exit %d:\n%s", args, grc, got, wrc, want);
			/* Invalid URLs in it: some item fails. */
			ck_assert_int_eq(wrc, 1);
			ck_assert_ptr_nonnull(strstr(want, json ?
			    "\"message\": \"not an absolute URL\"" :
			    "error\tINVALID_ARGUMENT: not an absolute URL\t"
			    "nope\n"));
			free(args);
			free(want);
			free(got);
		}
		/* --relaxed reached the daemon: nothing was synced. */
		ck_assert_int_ne(asprintf(&args, "-H %s stats", h.address),
		    -1);
		ck_assert_int_eq(run(args, NULL, &got), 0);
		ck_assert_msg((strstr(got, "\nurl_store.journal_syncs\t0\n") !=
		    NULL) == (strstr(variants[v], "--relaxed") != NULL), "%s: "
		    "%s", variants[v], got);
		free(args);
		free(got);
		harness_cleanup(&plain);
		harness_cleanup(&h);
	}
}
END_TEST

/*
 * --bulk prints what the streamed commands print, in the input's order:
 * blank lines skipped, URLs no daemon takes answered on their line, a URL
 * given twice new and then a duplicate; also with its records spilled.
 */
START_TEST(test_bulk_same_output)
{
	static const char input[] =
	    "http://o.example/a\nHTTP://O.EXAMPLE:80/a#x\n\n"
	    "nope\nmailto:x@o.example\n"
	    "http://o.example/b\nhttp:///nohost\n"
	    "data:,x\nhttp://o.example/c?utm_source=z\n"
	    "http://o.example/%7Ea\nhttp://o.example/~a\n"
	    "http://p.example/1\nhttp://p.example/2\n";
	static const char *const cmds[] = {
		"url-check", "url-submit", "url-submit -n crawl", "url-check",
		"url-delete", "url-check -n crawl", "url-check",
	};
	struct harness a, b;
	char *args, *want, *got, *dir = tu_tmpdir();
	int wrc, grc;

	harness_init(&a, NULL);
	harness_start(&a);
	harness_init(&b, NULL);
	harness_start(&b);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		ck_assert_int_ne(asprintf(&args, "-H %s --window 1 %s -",
		    a.address, cmds[i]), -1);
		wrc = run(args, input, &want);
		free(args);
		ck_assert_int_ne(asprintf(&args, "-H %s --batch 3 --window 1 %s "
		    "--bulk - %s %s", b.address, cmds[i], i % 2 ? "" :
		    "--bulk-memory 1 --spill-dir", i % 2 ? "" : dir), -1);
		grc = run(args, input, &got);
		ck_assert_msg(grc == wrc && strcmp(got, want) == 0,
		    "nddctl %s: exit %d:\n%s\nstreamed: exit %d:\n%s", args,
		    grc, got, wrc, want);
		ck_assert_int_eq(wrc, 1);	/* invalid URLs in it */
		free(args);
		free(want);
		free(got);
	}
	/* A bulk request answers counts only, and asks one daemon. */
	ck_assert_int_ne(asprintf(&args, "-H %s url-check --bulk - --times",
	    b.address), -1);
	ck_assert_int_eq(run(args, input, &got), 2);
	free(args);
	free(got);
	ck_assert_int_ne(asprintf(&args, "-H %s,%s url-check --bulk -",
	    a.address, b.address), -1);
	ck_assert_int_eq(run(args, input, &got), 2);
	free(args);
	free(got);
	/* A spill directory it cannot write: said before any URL is read. */
	ck_assert_int_ne(asprintf(&args, "-H %s url-check --bulk - "
	    "--spill-dir %s/none", b.address, dir), -1);
	ck_assert_int_eq(run(args, input, &got), 2);
	ck_assert_str_eq(got, "");
	free(args);
	free(got);
	harness_cleanup(&a);
	harness_cleanup(&b);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_stats_url_store_and_verify)
{
	static const char *const url_store_keys[] = {
		"journal_entries", "journal_capacity", "journal_bytes",
		"journal_bytes_written", "journal_syncs", "groups", "flushes",
		"merges", "merges_forced", "segments", "small_segments",
		"records", "dead_records", "store_bytes_written", "pending",
		"index_bytes", "journal_table_bytes", "host_runs", "host_keys",
		"host_merging",
	};
	struct harness h;
	char *args, *out, key[64];
	json_t *o, *us, *val;
	json_error_t err;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s url-submit http://s.example/ "
	    "http://s.example/x", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s stats", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(strstr(out, "\ncanon\turlcanon/1 strip_session_ids=no "
	    "strip_tracking=no sort_query=no\n") != NULL, "%s", out);
	for (size_t i = 0; i < sizeof(url_store_keys) / sizeof(*url_store_keys);
	    i++) {
		snprintf(key, sizeof(key), "\nurl_store.%s\t",
		    url_store_keys[i]);
		ck_assert_msg(strstr(out, key) != NULL, "no %s in %s", key + 1,
		    out);
	}
	/* The submit was acknowledged once synced (sync = full). */
	ck_assert_msg(strtoull(strstr(out, "\nurl_store.journal_syncs\t") +
	    strlen("\nurl_store.journal_syncs\t"), NULL, 10) > 0, "%s", out);
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s --json stats", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	o = json_loads(out, 0, &err);
	ck_assert_msg(o != NULL, "%s: %s", out, err.text);
	ck_assert_str_eq(json_string_value(json_object_get(o, "canon")),
	    "urlcanon/1 strip_session_ids=no strip_tracking=no sort_query=no");
	us = json_object_get(o, "url_store");
	ck_assert_msg(json_is_object(us), "%s", out);
	ck_assert_uint_eq(json_object_size(us),
	    sizeof(url_store_keys) / sizeof(*url_store_keys));
	for (size_t i = 0; i < sizeof(url_store_keys) / sizeof(*url_store_keys);
	    i++) {
		val = json_object_get(us, url_store_keys[i]);
		ck_assert_msg(json_is_integer(val), "url_store.%s: %s",
		    url_store_keys[i], out);
	}
	ck_assert_int_eq(json_integer_value(json_object_get(us,
	    "journal_capacity")) > 0, 1);
	json_decref(o);
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s verify", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "consistent: 2 URLs, 0 counters differ, 0 url "
	    "index mismatches; 0 documents, 0 differ\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json verify", h.address),
	    -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	o = json_loads(out, 0, &err);
	ck_assert_msg(o != NULL, "%s: %s", out, err.text);
	ck_assert(json_is_true(json_object_get(o, "consistent")));
	val = json_object_get(o, "url_index_mismatches");
	ck_assert_msg(json_is_integer(val) && json_integer_value(val) == 0,
	    "%s", out);
	json_decref(o);
	free(out);
	free(args);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_option_usage)
{
	char *out;

	ck_assert_int_eq(run("--help", NULL, &out), 0);
	ck_assert_ptr_nonnull(strstr(out, "--relaxed"));
	ck_assert_ptr_nonnull(strstr(out, "--durable"));
	ck_assert_ptr_nonnull(strstr(out, "--digests"));
	ck_assert_ptr_nonnull(strstr(out, "--token-file"));
	free(out);
}
END_TEST

/*
 * Milliseconds since the epoch of an ISO 8601 time as nddctl prints it
 * (2026-11-24T20:40:30.123Z, 24 characters), read back independently of
 * how it was made; the test fails if it is not one.
 */
static uint64_t
iso_ms(const char *s)
{
	struct tm tm = { 0 };
	const char *rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	unsigned ms;

	ck_assert_msg(rest != NULL && sscanf(rest, ".%3uZ", &ms) == 1 &&
	    rest[4] == 'Z', "not an ISO 8601 time to the millisecond: %s", s);
	return (uint64_t)timegm(&tm) * 1000 + ms;
}

/* Field i (from 0) of a tab-separated line, in buf. */
static const char *
field(const char *line, int i, char *buf, size_t size)
{
	size_t len;

	for (; i > 0; i--) {
		line = strchr(line, '\t');
		ck_assert_ptr_nonnull(line);
		line++;
	}
	len = strcspn(line, "\t\n");
	ck_assert_uint_lt(len, size);
	memcpy(buf, line, len);
	buf[len] = '\0';
	return buf;
}

/* The JSON object of out's line i (from 0); the caller releases it. */
static json_t *
json_line(const char *out, int i)
{
	json_error_t err;
	json_t *o;

	for (; i > 0; i--) {
		out = strchr(out, '\n');
		ck_assert_ptr_nonnull(out);
		out++;
	}
	o = json_loadb(out, strcspn(out, "\n"), 0, &err);
	ck_assert_msg(o != NULL, "%s: %s", out, err.text);
	return o;
}

/*
 * -n, --ttl and --times of the URL commands (text and JSON, times in ISO
 * 8601 and milliseconds); ns-set, ns-drop and the namespaces in stats;
 * their usage errors.
 */
START_TEST(test_namespaces)
{
	struct harness h;
	char *args, *out, f[64], *line;
	uint64_t first;
	json_t *o, *nss;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s url-submit -n crawl-1 --ttl "
	    "3600 --times http://n.example/ http://n.example/", h.address),
	    -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	free(args);
	ck_assert_str_eq(field(out, 0, f, sizeof(f)), "new");
	first = iso_ms(field(out, 2, f, sizeof(f)));
	ck_assert_uint_eq(iso_ms(field(out, 3, f, sizeof(f))), first);
	ck_assert_uint_eq(iso_ms(field(out, 4, f, sizeof(f))),
	    first + 3600 * 1000);
	ck_assert_str_eq(field(out, 5, f, sizeof(f)), "http://n.example/");
	line = strchr(out, '\n') + 1;
	ck_assert_str_eq(field(line, 0, f, sizeof(f)), "duplicate");
	ck_assert_uint_eq(iso_ms(field(line, 2, f, sizeof(f))), first);
	free(out);

	ck_assert_int_ne(asprintf(&args, "-H %s --json url-check --times "
	    "--namespace crawl-1 http://n.example/ http://m.example/",
	    h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	free(args);
	o = json_line(out, 0);
	ck_assert(json_is_true(json_object_get(o, "seen")));
	ck_assert_int_eq(json_integer_value(json_object_get(o, "count")), 2);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(o,
	    "first_seen_ms")), first);
	ck_assert_uint_eq(iso_ms(json_string_value(json_object_get(o,
	    "first_seen"))), first);
	ck_assert_uint_eq((uint64_t)json_integer_value(json_object_get(o,
	    "expires_ms")), first + 3600 * 1000);
	ck_assert_uint_eq(iso_ms(json_string_value(json_object_get(o,
	    "expires"))), first + 3600 * 1000);
	json_decref(o);
	o = json_line(out, 1);
	ck_assert(json_is_false(json_object_get(o, "seen")));
	ck_assert_int_eq(json_integer_value(json_object_get(o,
	    "last_seen_ms")), 0);
	ck_assert(json_is_null(json_object_get(o, "last_seen")));
	json_decref(o);
	free(out);

	/* Another namespace, the default one: never seen there. */
	ck_assert_int_ne(asprintf(&args, "-H %s url-check --times "
	    "http://n.example/", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "unseen\t0\t-\t-\t-\thttp://n.example/\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s ns-set crawl-1 --default-ttl "
	    "60", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "namespace\t1\t60\t0\tcrawl-1\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json ns-set crawl-2",
	    h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "{\"name\": \"crawl-2\", \"urls\": 0, "
	    "\"default_ttl_seconds\": 0, \"docs\": 0}\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s stats", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(strstr(out, "\nnamespace\t0\t0\t0\t\n") != NULL &&
	    strstr(out, "\nnamespace\t1\t60\t0\tcrawl-1\n") != NULL &&
	    strstr(out, "\nnamespace\t0\t0\t0\tcrawl-2\n") != NULL &&
	    strstr(out, "\nurls_dropping\t0\n") != NULL &&
	    strstr(out, "\nurls_expired\t0\n") != NULL, "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json stats", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	o = json_line(out, 0);
	nss = json_object_get(o, "namespaces");
	ck_assert_msg(json_is_array(nss) && json_array_size(nss) == 3, "%s",
	    out);
	ck_assert_str_eq(json_string_value(json_object_get(json_array_get(nss,
	    0), "name")), "");
	ck_assert_int_eq(json_integer_value(json_object_get(o, "urls")), 1);
	ck_assert(json_is_integer(json_object_get(o, "urls_dropping")));
	ck_assert(json_is_integer(json_object_get(o, "urls_expired")));
	json_decref(o);
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s ns-drop crawl-1", h.address),
	    -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "dropped\t1\t0\tcrawl-1\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json ns-drop crawl-1",
	    h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);
	o = json_line(out, 0);
	ck_assert_str_eq(json_string_value(json_object_get(o, "name")),
	    "crawl-1");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o,
	    "error"), "code")), "NOT_FOUND");
	json_decref(o);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s ns-drop ''", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);
	ck_assert_msg(strncmp(out, "error\tINVALID_ARGUMENT: ", 24) == 0, "%s",
	    out);
	free(out);
	free(args);

	/* Usage errors, found before any daemon is asked. */
	ck_assert_int_eq(run("-H 127.0.0.1:1 url-check --ttl 5 http://x/",
	    NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 url-submit --ttl -1 http://x/",
	    NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 url-submit --ttl 3155760001 "
	    "http://x/", NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 url-submit -n 'a b' http://x/",
	    NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 ns-set "
	    "x12345678901234567890123456789012345678901234567890123456789012345",
	    NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 ns-set a --default-ttl x", NULL,
	    &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 ns-drop a b", NULL, &out), 2);
	free(out);
	ck_assert_int_eq(run("-H 127.0.0.1:1 ns-drop", NULL, &out), 2);
	free(out);
	harness_cleanup(&h);
}
END_TEST

/*
 * forget-host and forget-prefix: their usage errors, found before any
 * daemon is asked; their output (text and JSON), a look-alike host kept;
 * a refusal is an error line and exit status 1.
 */
START_TEST(test_forget)
{
	static const char *const usage[] = {
		"forget-host", "forget-host a b", "forget-host ''",
		"forget-host --bogus a", "forget-host -n 'a b' a",
		"forget-prefix", "forget-prefix ''",
		"forget-prefix --subdomains http://x/",
		"forget-prefix -n x12345678901234567890123456789012345678901234"
		"567890123456789012345 http://x/",
	};
	struct harness h;
	char *args, *out;

	for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
		ck_assert_int_ne(asprintf(&args, "-H 127.0.0.1:1 %s",
		    usage[i]), -1);
		ck_assert_msg(run(args, NULL, &out) == 2, "%s", usage[i]);
		ck_assert_str_eq(out, "");
		free(out);
		free(args);
	}
	ck_assert_int_eq(run("-H 127.0.0.1:1 forget-host a", NULL, &out), 3);
	free(out);

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s url-submit -n crawl-1 "
	    "http://example.com/x https://example.com:8443/y "
	    "http://www.example.com/a http://badexample.com/x", h.address),
	    -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s forget-host -n crawl-1 "
	    "example.com", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "forgotten\t2\texample.com\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json forget-host "
	    "--namespace crawl-1 --subdomains example.com", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "{\"host\": \"example.com\", \"subdomains\": "
	    "true, \"forgotten\": 1, \"complete\": true}\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s url-check -n crawl-1 "
	    "http://example.com/x http://www.example.com/a "
	    "http://badexample.com/x", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "unseen\t0\thttp://example.com/x\n"
	    "unseen\t0\thttp://www.example.com/a\n"
	    "seen\t1\thttp://badexample.com/x\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s url-submit "
	    "http://example.com/blog/a http://example.com/blog2", h.address),
	    -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json forget-prefix "
	    "http://example.com/blog/", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "{\"prefix\": \"http://example.com/blog/\", "
	    "\"forgotten\": 1, \"complete\": true}\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s forget-prefix "
	    "http://example.com/blog/", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "forgotten\t0\thttp://example.com/blog/\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s url-check "
	    "http://example.com/blog2", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "seen\t1\thttp://example.com/blog2\n");
	free(out);
	free(args);

	ck_assert_int_ne(asprintf(&args, "-H %s forget-prefix 'not a url'",
	    h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);
	ck_assert_msg(strncmp(out, "error\tINVALID_ARGUMENT: ", 24) == 0 &&
	    strstr(out, "\tnot a url\n") != NULL, "%s", out);
	free(out);
	free(args);
	harness_cleanup(&h);
}
END_TEST

#define WRITE_TOKEN "write-token-0123456789"

/* Writes text to dir/name with mode; returns the path (caller frees). */
static char *
write_mode(const char *dir, const char *name, const char *text, int mode)
{
	char *path;
	FILE *f;

	ck_assert_int_ne(asprintf(&path, "%s/%s", dir, name), -1);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(path, (mode_t)mode), 0);
	return path;
}

/*
 * --token-file: the token comes from a file, out of ps; it wins over
 * $NDDD_TOKEN; a file others may read is used with a warning; a file
 * that is missing, empty or not one token is a usage error that never
 * reaches the daemon.
 */
START_TEST(test_token_file)
{
	struct harness h;
	char conf[512], *args, *out, *err, *tf, *path;

	harness_init(&h, NULL);
	path = write_mode(h.dir, "tokens", WRITE_TOKEN " write\n", 0600);
	free(path);
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s/tokens", h.dir);
	harness_add_conf(&h, conf);
	harness_start(&h);

	/* Without a token: refused. */
	ck_assert_int_ne(asprintf(&args, "-H %s url-submit http://tf.example/",
	    h.address), -1);
	ck_assert_int_eq(run_with("NDDD_TOKEN=", args, NULL, &out, NULL), 1);
	ck_assert_msg(strstr(out, "PERMISSION_DENIED") != NULL, "%s", out);
	free(out);
	free(args);

	/* From the file, trailing blanks and newline stripped, over a wrong
	 * $NDDD_TOKEN; a private file gets no warning. */
	tf = write_mode(h.dir, "tf", WRITE_TOKEN " \t\r\n\nnext line\n",
	    0600);
	ck_assert_int_ne(asprintf(&args, "-H %s --token-file %s url-submit "
	    "http://tf.example/", h.address, tf), -1);
	ck_assert_int_eq(run_with("NDDD_TOKEN=not-the-right-token-at-all",
	    args, NULL, &out, &err), 0);
	ck_assert_str_eq(out, "new\t1\thttp://tf.example/\n");
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	free(tf);
	free(args);

	/* Readable by others: used, with a warning. */
	tf = write_mode(h.dir, "tf-open", WRITE_TOKEN "\n", 0644);
	ck_assert_int_ne(asprintf(&args, "-H %s --token-file %s url-check "
	    "http://tf.example/", h.address, tf), -1);
	ck_assert_int_eq(run_with(NULL, args, NULL, &out, &err), 0);
	ck_assert_str_eq(out, "seen\t1\thttp://tf.example/\n");
	ck_assert_msg(strstr(err, "readable by group or others") != NULL,
	    "%s", err);
	free(out);
	free(err);
	free(tf);
	free(args);

	/* Missing, empty, blank, "TOKEN ROLE": each said, exit 2, and the
	 * token never in the message. */
	{
		static const struct {
			const char *name, *text, *says;
		} bad[] = {
			{ "missing", NULL, "No such file" },
			{ "empty", "", "empty" },
			{ "blank", "  \n" WRITE_TOKEN "\n", "no token" },
			{ "two-words", WRITE_TOKEN " write\n", "more than a "
			  "token" },
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			if (bad[i].text != NULL)
				tf = write_mode(h.dir, bad[i].name,
				    bad[i].text, 0600);
			else
				ck_assert_int_ne(asprintf(&tf, "%s/%s", h.dir,
				    bad[i].name), -1);
			ck_assert_int_ne(asprintf(&args, "-H %s --token-file "
			    "%s url-check http://tf.example/", h.address, tf),
			    -1);
			ck_assert_int_eq(run_with(NULL, args, NULL, &out,
			    &err), 2);
			ck_assert_str_eq(out, "");
			ck_assert_msg(strstr(err, tf) != NULL &&
			    strstr(err, bad[i].says) != NULL &&
			    strstr(err, WRITE_TOKEN) == NULL, "%s: %s",
			    bad[i].name, err);
			free(out);
			free(err);
			free(tf);
			free(args);
		}
	}
	/* Both --token and --token-file: which one? A usage error. */
	ck_assert_int_ne(asprintf(&args, "-H %s --token x --token-file %s/tf "
	    "url-check http://tf.example/", h.address, h.dir), -1);
	ck_assert_int_eq(run_with(NULL, args, NULL, &out, &err), 2);
	ck_assert_msg(strstr(err, "--token-file") != NULL, "%s", err);
	free(out);
	free(err);
	free(args);
	harness_cleanup(&h);
}
END_TEST

static int
starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Does the line that starts at s (up to its newline) contain needle? */
static int
line_has(const char *s, const char *needle)
{
	const char *nl = strchr(s, '\n'), *p = strstr(s, needle);

	return p != NULL && (nl == NULL || p < nl);
}

START_TEST(test_doc_commands)
{
	struct harness h;
	char *args, *out, *line2, *line3, *earlier, *later;
	char near[128];

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-submit --url "
	    "http://news.example/a -", h.address), -1);
	ck_assert_int_eq(run(args, "Oil prices rose sharply on Monday after "
	    "the cartel cut output", &out), 0);
	ck_assert_msg(starts_with(out, "{\"url\": \"http://news.example/a\", "
	    "\"doc_id\": 1, \"simhash\": \""), "%s", out);
	ck_assert_msg(strstr(out, "\"group\": 1, \"near\": []}\n") != NULL,
	    "%s", out);
	free(out);
	free(args);
	/* The same story again, HTML this time: it joins group 1. */
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-submit --html "
	    "--url http://other.example/b -", h.address), -1);
	ck_assert_int_eq(run(args, "<html><script>var x;</script><p>Oil "
	    "prices rose <b>sharply</b> on Monday after the cartel cut "
	    "output</p></html>", &out), 0);
	ck_assert_msg(strstr(out, "\"doc_id\": 2,") && strstr(out,
	    "\"group\": 1, \"content\": \"whole\", \"near\": [{\"doc_id\": "
	    "1, \"url\": \"http://news.example/a\", \"distance\": 0, "
	    "\"resemblance\": 1.0, \"containment\": 1.0}]}\n"), "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-get --url "
	    "HTTP://NEWS.EXAMPLE:80/a", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(strstr(out, "\"url\": \"HTTP://NEWS.EXAMPLE:80/a\", "
	    "\"doc_id\": 1,") && strstr(out, "\"near\": [{\"doc_id\": 2,"),
	    "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-query --k 0 -",
	    h.address), -1);
	ck_assert_int_eq(run(args, "oil PRICES rose sharply, on monday; after "
	    "the cartel cut output", &out), 0);
	ck_assert_msg(starts_with(out, "{\"simhash\": \"") &&
	    strstr(out, "\"near\": [{\"doc_id\": 1, \"url\": "
	    "\"http://news.example/a\", \"distance\": 0}, {\"doc_id\": 2,"),
	    "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s doc-query --simhash 12345",
	    h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 2);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-delete --url "
	    "http://news.example/a", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "{\"url\": \"http://news.example/a\", "
	    "\"status\": \"deleted\"}\n");
	free(out);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "{\"url\": \"http://news.example/a\", "
	    "\"status\": \"not_found\"}\n");
	free(out);
	free(args);
	/* Bulk: one line out per line in, in order, errors included. */
	ck_assert_int_ne(asprintf(&args, "-H %s --json --window 3 doc-submit "
	    "--jsonl -", h.address), -1);
	ck_assert_int_eq(run(args,
	    "{\"url\": \"http://j.example/1\", \"text\": \"first story "
	    "about elections\"}\n"
	    "not json\n"
	    "{\"url\": \"http://j.example/2\", \"html\": \"<p>first "
	    "story about elections</p>\"}\n"
	    "{\"url\": \"http://j.example/3\"}\n"
	    "{\"url\": \"http://j.example/4\", \"text\": \"the and of\"}\n"
	    "{\"url\": \"nope\", \"text\": \"words here\"}\n", &out), 1);
	line2 = strchr(out, '\n') + 1;
	ck_assert_msg(starts_with(line2, "{\"url\": null, \"error\": {\"code\": "
	    "\"INVALID_ARGUMENT\", \"message\": \"line 2: not a JSON "
	    "object"), "%s", out);
	line3 = strchr(line2, '\n') + 1;
	ck_assert_msg(starts_with(out, "{\"url\": \"http://j.example/1\", ") &&
	    starts_with(line3, "{\"url\": \"http://j.example/2\", "),
	    "%s", out);
	/*
	 * Lines 1 and 3 tell the same story and are in flight together: the
	 * daemon may store them in either order.  The one stored first takes
	 * id 3 and founds group 3; the other takes id 4, joins it, and finds
	 * it at distance 0.  (A document's own id is followed by its simhash,
	 * a neighbour's by its URL.)
	 */
	earlier = line_has(out, "\"doc_id\": 3, \"simhash\"") ? out : line3;
	later = earlier == out ? line3 : out;
	ck_assert_msg(line_has(earlier, "\"doc_id\": 3, \"simhash\"") &&
	    line_has(earlier, "\"group\": 3,"), "%s", out);
	snprintf(near, sizeof(near), "\"near\": [{\"doc_id\": 3, \"url\": "
	    "\"http://j.example/%c\", \"distance\": 0, \"resemblance\": 1.0, "
	    "\"containment\": 1.0}]}", earlier == out ? '1' : '2');
	ck_assert_msg(line_has(later, "\"doc_id\": 4, \"simhash\"") &&
	    line_has(later, "\"group\": 3,") && line_has(later, near), "%s",
	    out);
	/* The page, short, has no article: judged by its whole text. */
	ck_assert_msg(line_has(line3, "\"content\": \"whole\""), "%s", out);
	line2 = strchr(line3, '\n') + 1;
	ck_assert_msg(starts_with(line2, "{\"url\": \"http://j.example/3\", "
	    "\"error\": {\"code\": \"INVALID_ARGUMENT\""), "%s",
	    out);
	line2 = strchr(line2, '\n') + 1;
	ck_assert_msg(starts_with(line2, "{\"url\": \"http://j.example/4\", "
	    "\"error\": {\"code\": \"EMPTY_DOCUMENT\""), "%s",
	    out);
	line2 = strchr(line2, '\n') + 1;
	ck_assert_msg(starts_with(line2, "{\"url\": \"nope\", \"error\": "
	    "{\"code\": \"INVALID_ARGUMENT\""), "%s", out);
	ck_assert_ptr_null(strchr(strchr(line2, '\n') + 1, '\n'));
	free(out);
	free(args);
	harness_cleanup(&h);
}
END_TEST

/* Lines of the doc batch tests, and what each line is. */
#define BULK_LINES 1000
enum bulk_kind { BULK_DOC, BULK_EMPTY, BULK_BAD_URL, BULK_NOT_JSON };

static enum bulk_kind
bulk_kind(size_t i)
{
	if (i % 97 == 50)
		return BULK_NOT_JSON;
	if (i % 89 == 10)
		return BULK_EMPTY;
	if (i % 101 == 20)
		return BULK_BAD_URL;
	return BULK_DOC;
}

/* Line i's URL and body: the first 400 Reuters bodies, over and over. */
static void
bulk_doc(const struct corpus *co, size_t i, char *url, size_t url_size,
    const char **body, size_t *len)
{
	snprintf(url, url_size, bulk_kind(i) == BULK_BAD_URL ?
	    "nope/%zu" : "http://r.example/%zu", i);
	if (bulk_kind(i) == BULK_EMPTY) {
		*body = "the and of";
		*len = strlen(*body);
	} else {
		*body = co->docs[i % 400].data;
		*len = co->docs[i % 400].len;
	}
}

/* The --jsonl input of the doc batch tests. */
static char *
bulk_input(const struct corpus *co)
{
	size_t cap = 1 << 20, len = 0;
	char *in = malloc(cap);

	for (size_t i = 0; i < BULK_LINES; i++) {
		char url[64], *line;
		const char *body;
		size_t blen, n;
		json_t *o;

		bulk_doc(co, i, url, sizeof(url), &body, &blen);
		if (bulk_kind(i) == BULK_NOT_JSON)
			line = strdup("{\"url\": \"http://r.example/x\", ");
		else {
			o = json_object();
			json_object_set_new(o, "url", json_string(url));
			json_object_set_new(o, "text", json_stringn(body, blen));
			line = json_dumps(o, 0);
			json_decref(o);
		}
		ck_assert_ptr_nonnull(line);
		n = strlen(line);
		while (len + n + 2 > cap)
			ck_assert_ptr_nonnull(in = realloc(in, cap *= 2));
		memcpy(in + len, line, n);
		len += n;
		in[len++] = '\n';
		free(line);
	}
	in[len] = '\0';
	return in;
}

/*
 * -n puts doc-submit, doc-get, doc-query and doc-delete (and the bulk
 * path) in a namespace: the same story is new in each, its neighbours
 * and group are its namespace's, and stats count each namespace's
 * documents.
 */
START_TEST(test_doc_namespaces)
{
	static const char story[] = "Oil prices rose sharply on Monday after "
	    "the cartel cut output";
	struct harness h;
	char *args, *out;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-submit --url "
	    "http://news.example/a -", h.address), -1);
	ck_assert_int_eq(run(args, story, &out), 0);
	ck_assert_msg(strstr(out, "\"doc_id\": 1,") && strstr(out,
	    "\"group\": 1, \"near\": []}\n"), "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-submit -n wire "
	    "--url http://news.example/a -", h.address), -1);
	ck_assert_int_eq(run(args, story, &out), 0);
	ck_assert_msg(strstr(out, "\"doc_id\": 2,") && strstr(out,
	    "\"group\": 2, \"near\": []}\n"), "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-submit "
	    "--namespace wire --jsonl -", h.address), -1);
	ck_assert_int_eq(run(args, "{\"url\": \"http://other.example/b\", "
	    "\"text\": \"Oil prices rose sharply on Monday after the cartel "
	    "cut output\"}\n", &out), 0);
	ck_assert_msg(strstr(out, "\"doc_id\": 3,") && strstr(out,
	    "\"group\": 2, \"near\": [{\"doc_id\": 2, "), "%s", out);
	free(out);
	free(args);
	/* Each namespace sees its own. */
	ck_assert_int_ne(asprintf(&args, "-H %s doc-get -n wire --url "
	    "http://news.example/a", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(starts_with(out, "doc\t2\t"), "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-query -n wire "
	    "--k 0 -", h.address), -1);
	ck_assert_int_eq(run(args, story, &out), 0);
	ck_assert_msg(strstr(out, "\"near\": [{\"doc_id\": 2, ") &&
	    strstr(out, "{\"doc_id\": 3, ") && !strstr(out,
	    "\"doc_id\": 1, "), "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s doc-get -n nowhere --url "
	    "http://news.example/a", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 1);
	ck_assert_msg(starts_with(out, "error\tNOT_FOUND"), "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s stats", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(strstr(out, "\nnamespace\t0\t0\t1\t\n") != NULL &&
	    strstr(out, "\nnamespace\t0\t0\t2\twire\n") != NULL &&
	    strstr(out, "\ndocs\t3\n") != NULL, "%s", out);
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s --json doc-delete -n wire "
	    "--url http://news.example/a", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_str_eq(out, "{\"url\": \"http://news.example/a\", "
	    "\"status\": \"deleted\"}\n");
	free(out);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s doc-get --url "
	    "http://news.example/a", h.address), -1);
	ck_assert_int_eq(run(args, NULL, &out), 0);
	ck_assert_msg(starts_with(out, "doc\t1\t"), "%s", out);
	free(out);
	free(args);
	/* A name that cannot be is a usage error, before any daemon. */
	ck_assert_int_eq(run("-H 127.0.0.1:1 doc-get -n 'a/b' --url "
	    "http://x/", NULL, &out), 2);
	free(out);
	harness_cleanup(&h);
}
END_TEST

/*
 * nddctl doc-submit --jsonl sends batches: with one batch in flight, each
 * line gets what the same documents sent one doc_submit at a time get
 * (ids, fingerprints, groups, errors); with several in flight, the same
 * fingerprints and errors, in input order; libnddd's nddd_docs, cut by a
 * small max frame, the same, and a document too large for a frame is
 * answered without being sent.  Every JSON line is as jansson prints it.
 */
START_TEST(test_jsonl_batches_as_single_submits)
{
	struct harness h1, h2, h3, h4;
	struct corpus *co;
	struct nddd_reply *single[BULK_LINES] = { 0 };
	struct nddd_doc_item items[BULK_LINES + 1];
	struct nddd_doc results[BULK_LINES + 1];
	char urls[BULK_LINES + 1][64], *dir, *in, *args, *out, *line, *big;
	size_t n = 0;
	nddd_client *c;
	uint64_t id;

	dir = tu_data_path("text_corpora/reuters21578");
	ck_assert_ptr_nonnull(co = corpus_reuters(dir, 400));
	free(dir);
	in = bulk_input(co);
	harness_init(&h1, NULL);
	harness_start(&h1);
	harness_init(&h2, NULL);
	harness_start(&h2);
	harness_init(&h3, NULL);
	harness_start(&h3);
	harness_init(&h4, NULL);
	harness_start(&h4);

	/* The reference: one document per request, in order. */
	c = harness_client(&h2);
	for (size_t i = 0; i < BULK_LINES; i++) {
		const char *body;
		size_t len;

		if (bulk_kind(i) == BULK_NOT_JSON)
			continue;
		bulk_doc(co, i, urls[i], sizeof(urls[i]), &body, &len);
		ck_assert_int_eq(nddd_send_doc_submit(c, urls[i],
		    strlen(urls[i]), body, len, NDDD_TEXT, 0, &id), 0);
		ck_assert_ptr_nonnull(single[i] = nddd_call(c, id));
	}
	nddd_close(c);

	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_ne(asprintf(&args, "-H %s --json %s doc-submit "
		    "--jsonl --batch 64 -", pass ? h3.address : h1.address,
		    pass ? "" : "--window 1"), -1);
		ck_assert_int_eq(run(args, in, &out), 1);
		line = out;
		for (size_t i = 0; i < BULK_LINES; i++) {
			char *nl = strchr(line, '\n'), *again, hex[17];
			const struct nddd_reply *r = single[i];
			json_error_t err;
			json_t *o, *e;

			ck_assert_ptr_nonnull(nl);
			*nl = '\0';
			o = json_loads(line, 0, &err);
			ck_assert_msg(o != NULL, "line %zu: %s", i + 1, line);
			/* Similarities are printed to three digits. */
			again = json_dumps(o, JSON_REAL_PRECISION(3));
			ck_assert_str_eq(again, line);
			free(again);
			e = json_object_get(o, "error");
			if (bulk_kind(i) == BULK_NOT_JSON) {
				ck_assert_ptr_nonnull(e);
				ck_assert_str_eq(json_string_value(json_object_get(
				    e, "code")), "INVALID_ARGUMENT");
				ck_assert_msg(strstr(json_string_value(
				    json_object_get(e, "message")),
				    "not a JSON object") != NULL, "%s", line);
			} else if (r->kind == NDDD_REPLY_ERROR) {
				ck_assert_int_eq(r->code, bulk_kind(i) ==
				    BULK_EMPTY ? NDDD_EMPTY_DOCUMENT :
				    NDDD_INVALID_ARGUMENT);
				ck_assert_ptr_nonnull(e);
				ck_assert_str_eq(json_string_value(json_object_get(
				    e, "code")), nddd_code_name(r->code));
				ck_assert_str_eq(json_string_value(json_object_get(
				    e, "message")), r->message);
				ck_assert_str_eq(json_string_value(json_object_get(
				    o, "url")), urls[i]);
			} else {
				ck_assert_ptr_null(e);
				ck_assert_str_eq(json_string_value(json_object_get(
				    o, "url")), urls[i]);
				snprintf(hex, sizeof(hex), "%016llx",
				    (unsigned long long)r->doc.simhash);
				ck_assert_str_eq(json_string_value(json_object_get(
				    o, "simhash")), hex);
				if (pass == 0) {
					ck_assert_uint_eq(json_integer_value(
					    json_object_get(o, "doc_id")),
					    r->doc.doc_id);
					ck_assert_uint_eq(json_integer_value(
					    json_object_get(o, "group")),
					    r->doc.group);
				}
			}
			json_decref(o);
			line = nl + 1;
		}
		ck_assert_str_eq(line, "");
		free(out);
		free(args);
	}

	/* libnddd, batches cut by bytes (a max frame of 64 KiB: 32 KiB of
	 * documents each), three in flight, and a document of 70 KB. */
	ck_assert_ptr_nonnull(big = malloc(70000));
	for (size_t i = 0; i < 70000; i++)
		big[i] = "word "[i % 5];
	for (size_t i = 0; i <= BULK_LINES; i++) {
		if (i < BULK_LINES && bulk_kind(i) == BULK_NOT_JSON)
			continue;
		items[n] = (struct nddd_doc_item){ .url = urls[i] };
		if (i == BULK_LINES) {
			snprintf(urls[i], sizeof(urls[i]), "http://r.example/big");
			items[n].body = big;
			items[n].body_len = 70000;
		} else
			bulk_doc(co, i, urls[i], sizeof(urls[i]),
			    (const char **)&items[n].body, &items[n].body_len);
		items[n++].url_len = strlen(urls[i]);
	}
	c = harness_client(&h4);
	nddd_set_max_frame(c, 64 << 10);
	ck_assert_int_eq(nddd_docs(c, items, n, results, 0, 3, NULL, NULL), 0);
	n = 0;
	for (size_t i = 0; i < BULK_LINES; i++) {
		const struct nddd_reply *r = single[i];

		if (bulk_kind(i) == BULK_NOT_JSON)
			continue;
		if (r->kind == NDDD_REPLY_ERROR) {
			ck_assert_int_eq(results[n].code, r->code);
			ck_assert_str_eq(results[n].message, r->message);
		} else {
			ck_assert_int_eq(results[n].code, NDDD_OK);
			ck_assert_uint_eq(results[n].simhash, r->doc.simhash);
			ck_assert_uint_ne(results[n].doc_id, 0);
		}
		n++;
	}
	ck_assert_int_eq(results[n].code, NDDD_RESOURCE_EXHAUSTED);
	ck_assert_uint_eq(results[n].doc_id, 0);
	nddd_docs_results_free(results, n + 1);
	nddd_close(c);

	for (size_t i = 0; i < BULK_LINES; i++)
		nddd_reply_free(single[i]);
	free(big);
	free(in);
	corpus_free(co);
	harness_cleanup(&h1);
	harness_cleanup(&h2);
	harness_cleanup(&h3);
	harness_cleanup(&h4);
}
END_TEST

/*
 * -H with a shard list: the URL commands print exactly what one daemon's
 * nddctl prints, in input order, and so do the forgets, sent to every
 * shard; a shard that is down fails its URLs (UNAVAILABLE, exit status 1)
 * and no others; other commands refuse a list.
 */
START_TEST(test_shard_list)
{
	struct harness sh[3], ref;
	char *list, *args, *in = NULL, *out, *want, *line;
	size_t len = 0, unavailable = 0, seen = 0;
	FILE *f = open_memstream(&in, &len);

	for (int i = 0; i < 2500; i++)
		fprintf(f, "http://www.site%d.example/page/%d.html%s\n",
		    i % 300, i % 1700, i % 7 == 0 ? "#top" : "");
	fputs("not a url\n", f);
	fclose(f);
	for (int i = 0; i < 3; i++) {
		harness_init(&sh[i], NULL);
		harness_start(&sh[i]);
	}
	harness_init(&ref, NULL);
	harness_start(&ref);
	ck_assert_int_ne(asprintf(&list, "%s,%s,%s", sh[0].address,
	    sh[1].address, sh[2].address), -1);

	for (int op = 0; op < 2; op++) {
		const char *cmd = op == 0 ? "url-submit" : "url-check";

		/* One batch in flight: a URL repeated in two batches a
		 * daemon applies together gets its counts in any order. */
		ck_assert_int_ne(asprintf(&args, "-H %s --batch 100 "
		    "--window 1 %s -", ref.address, cmd), -1);
		ck_assert_int_eq(run(args, in, &want), 1);	/* "not a url" */
		free(args);
		ck_assert_int_ne(asprintf(&args, "-H %s --batch 100 "
		    "--window 1 %s -", list, cmd), -1);
		ck_assert_int_eq(run(args, in, &out), 1);
		free(args);
		ck_assert_str_eq(out, want);
		free(out);
		free(want);
	}

	/* A host's URLs are forgotten on every shard: the sum is what one
	 * daemon forgets, and then both answer every URL alike. */
	for (int i = 0; i < 2; i++) {
		const char *cmd = i == 0 ? "forget-host --subdomains "
		    "site7.example" : "forget-prefix http://www.site8.example/";

		ck_assert_int_ne(asprintf(&args, "-H %s --json %s",
		    ref.address, cmd), -1);
		ck_assert_int_eq(run(args, NULL, &want), 0);
		free(args);
		ck_assert_int_ne(asprintf(&args, "-H %s --json %s", list, cmd),
		    -1);
		ck_assert_int_eq(run(args, NULL, &out), 0);
		free(args);
		ck_assert_str_eq(out, want);
		ck_assert(strstr(out, "\"forgotten\": 0") == NULL);
		free(out);
		free(want);
	}
	ck_assert_int_ne(asprintf(&args, "-H %s url-check -", ref.address),
	    -1);
	ck_assert_int_eq(run(args, in, &want), 1);
	free(args);
	ck_assert_int_ne(asprintf(&args, "-H %s url-check -", list), -1);
	ck_assert_int_eq(run(args, in, &out), 1);
	free(args);
	ck_assert_str_eq(out, want);
	ck_assert(strstr(out, "unseen\t0\thttp://www.site7.example/") !=
	    NULL);
	free(out);
	free(want);

	harness_kill(&sh[1]);
	ck_assert_int_ne(asprintf(&args, "-H %s url-check -", list), -1);
	ck_assert_int_eq(run(args, in, &out), 1);
	free(args);
	for (line = out; *line != '\0'; line = strchr(line, '\n') + 1) {
		if (starts_with(line, "error\tUNAVAILABLE: ")) {
			ck_assert(line_has(line, sh[1].address));
			unavailable++;
		} else if (starts_with(line, "seen\t") ||
		    starts_with(line, "unseen\t"))
			seen++;
		else
			ck_assert(starts_with(line, "error\tINVALID_ARGUMENT"));
	}
	ck_assert_uint_gt(unavailable, 0);
	ck_assert_uint_gt(seen, 0);
	ck_assert_uint_eq(unavailable + seen + 1, 2501);
	free(out);

	/* A forget with a shard down: the others' URLs forgotten, the
	 * shard said on stderr, exit status 3. */
	ck_assert_int_ne(asprintf(&args, "-H %s forget-host site9.example",
	    list), -1);
	ck_assert_int_eq(run(args, NULL, &out), 3);
	free(args);
	ck_assert(starts_with(out, "forgotten\t"));
	free(out);

	ck_assert_int_ne(asprintf(&args, "-H %s stats", list), -1);
	ck_assert_int_eq(run(args, NULL, &out), 2);
	free(args);
	free(out);
	free(list);
	free(in);
	for (int i = 0; i < 3; i++)
		harness_cleanup(&sh[i]);
	harness_cleanup(&ref);
}
END_TEST

Suite *nddctl_suite(void);

Suite *
nddctl_suite(void)
{
	Suite *s = suite_create("nddctl");
	TCase *tc = tcase_create("nddctl");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_json_lines);
	tcase_add_test(tc, test_text_and_stats);
	tcase_add_test(tc, test_large_stdin_keeps_order);
	tcase_add_test(tc, test_document_over_the_limit);
	tcase_add_test(tc, test_unreachable_and_usage);
	tcase_add_test(tc, test_text_escapes_and_unwritable_output);
	tcase_add_test(tc, test_doc_commands);
	tcase_add_test(tc, test_doc_namespaces);
	tcase_add_test(tc, test_url_options_same_output);
	tcase_add_test(tc, test_bulk_same_output);
	tcase_add_test(tc, test_stats_url_store_and_verify);
	tcase_add_test(tc, test_option_usage);
	tcase_add_test(tc, test_token_file);
	tcase_add_test(tc, test_jsonl_batches_as_single_submits);
	tcase_add_test(tc, test_namespaces);
	tcase_add_test(tc, test_forget);
	tcase_add_test(tc, test_shard_list);
	suite_add_tcase(s, tc);
	return s;
}
