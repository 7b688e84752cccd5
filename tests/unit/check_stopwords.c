/*
 * Unit tests for stopwords: adding, matching, and loading list files with
 * their errors.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stopwords.h"
#include "testutil.h"

/* Writes text to a file in a fresh directory; returns its path. */
static char *
write_list(char **dir, const char *text)
{
	char *path;
	FILE *f;

	*dir = tu_tmpdir();
	ck_assert_int_ne(asprintf(&path, "%s/stop.txt", *dir), -1);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
	return path;
}

/* Loads text as a list and returns the error, or NULL if it loaded. */
static char *
load_error(const char *text)
{
	char *dir, *path = write_list(&dir, text), *cause = NULL, *msg;
	struct stopwords *sw = stopwords_load(path, &cause);

	stopwords_free(sw);
	if (cause != NULL) {
		/* Keep what follows the directory, e.g. "stop.txt:3: ...". */
		msg = strdup(cause + strlen(dir) + 1);
		free(cause);
	} else
		msg = NULL;
	tu_rmtree(dir);
	free(dir);
	free(path);
	return msg;
}

START_TEST(test_add_and_contains)
{
	struct stopwords *sw = stopwords_new();
	char *cause = NULL;

	ck_assert_int_eq(stopwords_add(sw, "The", 3, &cause), 0);
	ck_assert_int_eq(stopwords_add(sw, "the", 3, &cause), 0);
	ck_assert_int_eq(stopwords_add(sw, "caf\xc3\xa9", 5, &cause), 0);
	ck_assert_uint_eq(stopwords_count(sw), 2);
	ck_assert(stopwords_contains(sw, "the", 3));
	ck_assert(!stopwords_contains(sw, "The", 3));	/* terms are folded */
	ck_assert(!stopwords_contains(sw, "th", 2));
	ck_assert(!stopwords_contains(sw, "thee", 4));
	ck_assert(stopwords_contains(sw, "caf\xc3\xa9", 5));
	ck_assert_uint_eq(stopwords_max_len(sw), 5);
	ck_assert_str_eq(stopwords_list(sw)[0], "the");
	ck_assert_ptr_null(stopwords_list(sw)[2]);
	/* Words that no term could ever equal are refused. */
	ck_assert_int_eq(stopwords_add(sw, "don't", 5, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "separator"));
	free(cause);
	ck_assert_int_eq(stopwords_add(sw, "", 0, &cause), -1);
	free(cause);
	ck_assert_int_eq(stopwords_add(sw, "a\0b", 3, &cause), -1);
	ck_assert_ptr_nonnull(strstr(cause, "NUL"));
	free(cause);
	stopwords_free(sw);
}
END_TEST

START_TEST(test_many)
{
	struct stopwords *sw = stopwords_new();
	char w[32], *cause = NULL;
	int i;

	for (i = 0; i < 5000; i++) {
		snprintf(w, sizeof(w), "w%d", i);
		ck_assert_int_eq(stopwords_add(sw, w, strlen(w), &cause), 0);
	}
	ck_assert_uint_eq(stopwords_count(sw), 5000);
	for (i = 0; i < 5000; i++) {
		snprintf(w, sizeof(w), "w%d", i);
		ck_assert(stopwords_contains(sw, w, strlen(w)));
		snprintf(w, sizeof(w), "x%d", i);
		ck_assert(!stopwords_contains(sw, w, strlen(w)));
	}
	stopwords_free(sw);
}
END_TEST

START_TEST(test_load)
{
	char *dir, *path = write_list(&dir,
	    "# a comment\n\n  The  \n of # trailing comment\r\n\tAND\n"),
	    *cause = NULL;
	struct stopwords *sw = stopwords_load(path, &cause);

	ck_assert_msg(sw != NULL, "%s", cause);
	ck_assert_uint_eq(stopwords_count(sw), 3);
	ck_assert(stopwords_contains(sw, "the", 3));
	ck_assert(stopwords_contains(sw, "of", 2));
	ck_assert(stopwords_contains(sw, "and", 3));
	stopwords_free(sw);
	tu_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

START_TEST(test_load_errors)
{
	char *msg, *cause = NULL;

	msg = load_error("the\nnew york\n");
	ck_assert_ptr_nonnull(msg);
	ck_assert_msg(strncmp(msg, "stop.txt:2: more than one word", 30) == 0,
	    "%s", msg);
	free(msg);
	msg = load_error("a\nb\nc-d\n");
	ck_assert_msg(strncmp(msg, "stop.txt:3: stop word \"c-d\" contains "
	    "the separator '-'", 49) == 0, "%s", msg);
	free(msg);
	ck_assert_ptr_null(load_error(""));
	ck_assert_ptr_null(load_error("# only comments\n"));
	ck_assert_ptr_null(stopwords_load("/nonexistent/stop.txt", &cause));
	ck_assert_str_eq(cause, "/nonexistent/stop.txt: No such file or "
	    "directory");
	free(cause);
}
END_TEST

/* A list in memory reads as the same list in a file. */
START_TEST(test_parse)
{
	static const char text[] = "# a comment\n\n  The  \n of\r\n\tAND";
	char *path, *dir, *all, *cause = NULL;
	struct stopwords *a, *b;
	const char *const *wa, *const *wb;
	size_t len;

	path = tu_source_path("conf/stopwords.txt");
	ck_assert_ptr_nonnull(a = stopwords_load(path, &cause));
	ck_assert_ptr_nonnull(all = tu_read_file(path, &len));
	free(path);
	ck_assert_msg((b = stopwords_parse(all, len, "mem", &cause)) != NULL,
	    "%s", cause);
	free(all);
	ck_assert_uint_eq(stopwords_count(a), stopwords_count(b));
	ck_assert_uint_gt(stopwords_count(a), 100);
	for (wa = stopwords_list(a), wb = stopwords_list(b); *wa != NULL;
	    wa++, wb++)
		ck_assert_str_eq(*wa, *wb);
	ck_assert_ptr_null(*wb);
	stopwords_free(a);
	stopwords_free(b);
	/* Without a final newline; and nothing at all. */
	ck_assert_ptr_nonnull(a = stopwords_parse(text, sizeof(text) - 1,
	    "mem", &cause));
	ck_assert_uint_eq(stopwords_count(a), 3);
	ck_assert(stopwords_contains(a, "and", 3));
	stopwords_free(a);
	ck_assert_ptr_nonnull(a = stopwords_parse("", 0, "mem", &cause));
	ck_assert_uint_eq(stopwords_count(a), 0);
	stopwords_free(a);
	/* Errors name the text as given, with the line. */
	ck_assert_ptr_null(stopwords_parse("a\nb c\n", 6, "mem", &cause));
	ck_assert_msg(strncmp(cause, "mem:2: more than one word", 25) == 0,
	    "%s", cause);
	free(cause);
	/* The same words as the file of the same text. */
	path = write_list(&dir, text);
	ck_assert_ptr_nonnull(b = stopwords_load(path, &cause));
	ck_assert_uint_eq(stopwords_count(b), 3);
	stopwords_free(b);
	tu_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

Suite *stopwords_suite(void);

Suite *
stopwords_suite(void)
{
	Suite *s = suite_create("stopwords");
	TCase *tc = tcase_create("stopwords");

	tcase_add_test(tc, test_add_and_contains);
	tcase_add_test(tc, test_many);
	tcase_add_test(tc, test_load);
	tcase_add_test(tc, test_load_errors);
	tcase_add_test(tc, test_parse);
	suite_add_tcase(s, tc);
	return s;
}
