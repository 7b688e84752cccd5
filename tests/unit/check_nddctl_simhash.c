/*
 * Unit tests for "nddctl simhash": runs the nddctl next to this program
 * (or $NDDCTL_BIN) and checks its lines and exit status against the
 * engine, with files, standard input, --nul, --html, term hashes, stop
 * words, thread counts, plugins and bad usage.
 */
#include <check.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simhash.h"
#include "stopwords.h"
#include "testutil.h"

static char nddctl[4096], plugins[4096], *tmp;

static void
setup(void)
{
	const char *env = getenv("NDDCTL_BIN");
	char exe[4096];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ck_assert_int_gt(n, 0);
	exe[n] = '\0';
	snprintf(plugins, sizeof(plugins), "%s/../plugins", dirname(exe));
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n] = '\0';
	if (env != NULL && *env != '\0')
		snprintf(nddctl, sizeof(nddctl), "%s", env);
	else
		snprintf(nddctl, sizeof(nddctl), "%s/nddctl", dirname(exe));
	ck_assert_msg(access(nddctl, X_OK) == 0, "%s is missing", nddctl);
	tmp = tu_tmpdir();
}

static void
teardown(void)
{
	tu_rmtree(tmp);
	free(tmp);
}

static void
write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/*
 * Runs nddctl simhash ARGS with input on standard input; returns the exit
 * status, with *out and *err (the caller frees them).
 */
static int
run(const void *input, size_t len, char **out, char **err, ...)
{
	char in_path[4200], out_path[4200], err_path[4200], *argv[32];
	const char *a;
	va_list ap;
	pid_t pid;
	int st, n = 0;

	snprintf(in_path, sizeof(in_path), "%s/in", tmp);
	snprintf(out_path, sizeof(out_path), "%s/out", tmp);
	snprintf(err_path, sizeof(err_path), "%s/err", tmp);
	write_file(in_path, input, len);
	argv[n++] = nddctl;
	argv[n++] = (char *)"simhash";
	va_start(ap, err);
	while ((a = va_arg(ap, const char *)) != NULL && n < 31)
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		int fd0 = open(in_path, O_RDONLY);
		int fd1 = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int fd2 = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd0 == -1 || fd1 == -1 || fd2 == -1)
			_exit(127);
		dup2(fd0, 0);
		dup2(fd1, 1);
		dup2(fd2, 2);
		execv(nddctl, argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	*out = tu_read_file(out_path, NULL);
	*err = tu_read_file(err_path, NULL);
	return WEXITSTATUS(st);
}

/* The engine's answer, as nddctl prints it. */
static void
expect(const char *doc, size_t len, enum simhash_input in,
    enum simhash_term_hash th, int stop, char *line)
{
	static struct stopwords *sw;
	static struct simhash *engines[2][2];
	static struct simhash_scratch *sc;
	char *path, *cause = NULL;
	uint64_t fp;

	if (sc == NULL) {
		path = tu_source_path("conf/stopwords.txt");
		ck_assert_msg((sw = stopwords_load(path, &cause)) != NULL,
		    "%s", cause);
		free(path);
		ck_assert_ptr_nonnull(sc = simhash_scratch_new());
	}
	if (engines[th][stop] == NULL)
		ck_assert_ptr_nonnull(engines[th][stop] = simhash_new(th,
		    stop ? sw : NULL, &cause));
	if (simhash_compute(engines[th][stop], sc, in, doc, len, &fp) ==
	    SIMHASH_OK) {
		simhash_format(fp, line);
		strcat(line, "\n");
	} else
		strcpy(line, "EMPTY_DOCUMENT\n");
}

START_TEST(test_one_document)
{
	const char *doc = "The quick brown fox jumps over the lazy dog.";
	char want[64], *out, *err, path[4200];

	expect(doc, strlen(doc), SIMHASH_INPUT_TEXT,
	    SIMHASH_TERM_HASH_SDBM_FMIX64, 1, want);
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, NULL), 0);
	ck_assert_str_eq(out, want);
	ck_assert_str_eq(err, "");
	free(out);
	free(err);
	/* From a file, and "-" for standard input. */
	snprintf(path, sizeof(path), "%s/doc", tmp);
	write_file(path, doc, strlen(doc));
	ck_assert_int_eq(run("", 0, &out, &err, path, NULL), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, "-", "--threads",
	    "3", NULL), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
	/* The paper's term hash, no stop words. */
	expect(doc, strlen(doc), SIMHASH_INPUT_TEXT, SIMHASH_TERM_HASH_SDBM, 0,
	    want);
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, "--term-hash",
	    "sdbm", "--stopwords", "none", NULL), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
}
END_TEST

START_TEST(test_html_and_empty)
{
	const char *doc = "<html><script>x()</script><p>Caf&eacute; "
	    "&amp; bar</p></html>";
	char want[64], *out, *err;

	expect(doc, strlen(doc), SIMHASH_INPUT_HTML,
	    SIMHASH_TERM_HASH_SDBM_FMIX64, 1, want);
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, "--html", NULL), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
	ck_assert_int_eq(run("the of a", 8, &out, &err, NULL), 1);
	ck_assert_str_eq(out, "EMPTY_DOCUMENT\n");
	free(out);
	free(err);
	ck_assert_int_eq(run("", 0, &out, &err, NULL), 1);
	ck_assert_str_eq(out, "EMPTY_DOCUMENT\n");
	free(out);
	free(err);
}
END_TEST

START_TEST(test_nul)
{
	static const char input[] = "first doc\0\0the\0<b>last</b> one";
	const char *docs[4] = { "first doc", "", "the", "<b>last</b> one" };
	char want[256] = "", line[64], *out, *err;
	int i;

	for (i = 0; i < 4; i++) {
		expect(docs[i], strlen(docs[i]), SIMHASH_INPUT_TEXT,
		    SIMHASH_TERM_HASH_SDBM_FMIX64, 1, line);
		strcat(want, line);
	}
	ck_assert_int_eq(run(input, sizeof(input) - 1, &out, &err, "--nul",
	    NULL), 1);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
	/* A final NUL ends the last document; it does not start another. */
	ck_assert_int_eq(run("a cat\0dog\0", 10, &out, &err, "--nul", NULL), 0);
	ck_assert_uint_eq(strlen(out), 34);
	free(out);
	free(err);
	/* No input, no document. */
	ck_assert_int_eq(run("", 0, &out, &err, "--nul", NULL), 0);
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
}
END_TEST

START_TEST(test_many_documents)
{
	size_t n = 10000, i, len = 0;
	char *input = malloc(n * 32), *out, *err, line[64], *p;

	for (i = 0; i < n; i++)
		len += (size_t)sprintf(input + len, "word%zu w%zu", i % 97,
		    i) + 1;
	ck_assert_int_eq(run(input, len, &out, &err, "--nul", "--threads", "2",
	    NULL), 0);
	/* In input order. */
	for (i = 0, p = input; i < n; i++, p += strlen(p) + 1) {
		expect(p, strlen(p), SIMHASH_INPUT_TEXT,
		    SIMHASH_TERM_HASH_SDBM_FMIX64, 1, line);
		ck_assert_int_eq(memcmp(out + 17 * i, line, 17), 0);
	}
	free(out);
	free(err);
	free(input);
}
END_TEST

START_TEST(test_plugins)
{
	const char *doc = "Plugins give the same bits as the cpu.";
	char want[64], *out, *err;

	expect(doc, strlen(doc), SIMHASH_INPUT_TEXT,
	    SIMHASH_TERM_HASH_SDBM_FMIX64, 1, want);
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, "--accel", "test",
	    "--accel-dir", plugins, NULL), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
	/* One that cannot start: a warning, and cpu does it. */
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, "--accel", "badabi",
	    "--accel-dir", plugins, NULL), 0);
	ck_assert_str_eq(out, want);
	ck_assert_ptr_nonnull(strstr(err, "ABI version"));
	free(out);
	free(err);
	ck_assert_int_eq(run(doc, strlen(doc), &out, &err, "--accel", "test",
	    "--accel-dir", plugins, "--accel-params", "fail_every=1", NULL), 0);
	ck_assert_str_eq(out, want);
	free(out);
	free(err);
}
END_TEST

START_TEST(test_usage)
{
	char *out, *err;

	ck_assert_int_eq(run("", 0, &out, &err, "--bogus", NULL), 2);
	free(out);
	free(err);
	ck_assert_int_eq(run("", 0, &out, &err, "--term-hash", "md5", NULL), 2);
	free(out);
	free(err);
	ck_assert_int_eq(run("", 0, &out, &err, "/nonexistent/file", NULL), 2);
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	free(out);
	free(err);
	ck_assert_int_eq(run("", 0, &out, &err, "--stopwords",
	    "/nonexistent/stop", NULL), 2);
	free(out);
	free(err);
	ck_assert_int_eq(run("", 0, &out, &err, "a", "b", NULL), 2);
	free(out);
	free(err);
	ck_assert_int_eq(run("", 0, &out, &err, "--help", NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "Exit status"));
	free(out);
	free(err);
}
END_TEST

Suite *nddctl_simhash_suite(void);

Suite *
nddctl_simhash_suite(void)
{
	Suite *s = suite_create("nddctl_simhash");
	TCase *tc = tcase_create("nddctl_simhash");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_one_document);
	tcase_add_test(tc, test_html_and_empty);
	tcase_add_test(tc, test_nul);
	tcase_add_test(tc, test_many_documents);
	tcase_add_test(tc, test_plugins);
	tcase_add_test(tc, test_usage);
	suite_add_tcase(s, tc);
	return s;
}
