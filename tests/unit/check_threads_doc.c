/*
 * Unit tests that keep docs/threads.md complete: every lock of the daemon
 * (each pthread_mutex_t, pthread_rwlock_t, pthread_cond_t and
 * pthread_spinlock_t declared under daemon/, as a struct member or a
 * variable) is listed there by its stable name, `DIR/FILE:NAME` (the file
 * that declares it, relative to daemon/, and its member or variable name),
 * and every such name in the document still names one.
 *
 * The declarations are found by a scanner of C text, not a compiler: it
 * drops comments and literals, then reads the declarators that follow a
 * lock type up to their ';'.  A pointer to a lock, a cast, a sizeof or a
 * parameter is not a lock of its own and is passed over.
 */
#include <check.h>
#include <ctype.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define LOCKS_MAX	256
#define NAME_MAX_LEN	64

static const char *const lock_types[] = {
	"pthread_mutex_t", "pthread_rwlock_t", "pthread_cond_t",
	"pthread_spinlock_t",
};

struct lock_decl {
	char file[128];			/* relative to daemon/ */
	char name[NAME_MAX_LEN];
	int line;
};

struct lock_list {
	struct lock_decl d[LOCKS_MAX];
	size_t n;
};

/* Blanks out comments, string and character literals (newlines kept, so
 * that lines still count), in place. */
static void
strip_c(char *s)
{
	for (char *p = s; *p != '\0'; p++) {
		if (p[0] == '/' && p[1] == '*') {
			for (; *p != '\0' && !(p[0] == '*' && p[1] == '/');
			    p++)
				if (*p != '\n')
					*p = ' ';
			if (*p != '\0')
				p[0] = p[1] = ' ', p++;
		} else if (p[0] == '/' && p[1] == '/') {
			for (; *p != '\0' && *p != '\n'; p++)
				*p = ' ';
			if (*p == '\0')
				break;
		} else if (*p == '"' || *p == '\'') {
			char q = *p;

			for (p++; *p != '\0' && *p != q && *p != '\n'; p++) {
				if (*p == '\\' && p[1] != '\0' && p[1] != '\n')
					*p++ = ' ';
				*p = ' ';
			}
			if (*p == '\0')
				break;
		}
	}
}

static bool
ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static const char *
skip_space(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* Past the bracketed or braced part that opens at *p, or NULL. */
static const char *
skip_group(const char *p)
{
	int depth = 0;

	for (; *p != '\0'; p++) {
		if (*p == '[' || *p == '{' || *p == '(')
			depth++;
		else if ((*p == ']' || *p == '}' || *p == ')') && --depth == 0)
			return p + 1;
	}
	return NULL;
}

static int
line_of(const char *text, const char *p)
{
	int line = 1;

	for (; text < p; text++)
		line += *text == '\n';
	return line;
}

/*
 * The declarators after a lock type at p, up to their ';', into l (file
 * rel); nothing if they are not a declaration of locks.
 */
static void
scan_declarators(const char *text, const char *p, const char *rel,
    struct lock_list *l)
{
	size_t first = l->n;

	for (;;) {
		const char *name;
		size_t len;

		p = skip_space(p);
		if (!ident_char(*p) || isdigit((unsigned char)*p))
			break;		/* a pointer, a cast, a sizeof */
		for (name = p; ident_char(*p); p++)
			;
		len = (size_t)(p - name);
		p = skip_space(p);
		while (p != NULL && *p == '[')
			if ((p = skip_group(p)) != NULL)
				p = skip_space(p);
		if (p != NULL && *p == '=') {
			/* The initializer, to the next ',' or ';' outside
			 * its braces and parentheses. */
			for (p++; p != NULL && *p != '\0' && *p != ',' &&
			    *p != ';';)
				p = *p == '{' || *p == '(' ? skip_group(p) :
				    p + 1;
		}
		if (p == NULL || (*p != ',' && *p != ';'))
			break;		/* a parameter, or not C we know */
		ck_assert_msg(l->n < LOCKS_MAX && len < NAME_MAX_LEN,
		    "too many locks, or a long name, in %s", rel);
		snprintf(l->d[l->n].file, sizeof(l->d[l->n].file), "%s", rel);
		snprintf(l->d[l->n].name, sizeof(l->d[l->n].name), "%.*s",
		    (int)len, name);
		l->d[l->n++].line = line_of(text, name);
		if (*p++ == ';')
			return;
	}
	l->n = first;
}

/* Adds the locks declared in text (the contents of file rel) to l. */
static void
scan_text(char *text, const char *rel, struct lock_list *l)
{
	strip_c(text);
	for (size_t t = 0; t < sizeof(lock_types) / sizeof(lock_types[0]);
	    t++) {
		size_t tl = strlen(lock_types[t]);

		for (const char *p = text; (p = strstr(p, lock_types[t])) !=
		    NULL; p += tl)
			if ((p == text || !ident_char(p[-1])) &&
			    !ident_char(p[tl]))
				scan_declarators(text, p + tl, rel, l);
	}
}

/* nftw has no argument for its callback. */
static struct lock_list *walk_list;
static size_t walk_root_len;

static int
walk_one(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	const char *dot = strrchr(path, '.');
	char *text;

	(void)sb;
	(void)ftw;
	if (type != FTW_F || dot == NULL || (strcmp(dot, ".c") != 0 &&
	    strcmp(dot, ".h") != 0 && strcmp(dot, ".cpp") != 0))
		return 0;
	ck_assert_msg((text = tu_read_file(path, NULL)) != NULL,
	    "cannot read %s", path);
	scan_text(text, path + walk_root_len + 1, walk_list);
	free(text);
	return 0;
}

static void
scan_daemon(struct lock_list *l)
{
	char *dir = tu_source_path("daemon"), *root;

	/* The tree itself, should the path be a link to it. */
	ck_assert_msg((root = realpath(dir, NULL)) != NULL,
	    "no %s (is NDDD_SOURCE_DIR the source tree?)", dir);
	walk_list = l;
	walk_root_len = strlen(root);
	ck_assert_msg(nftw(root, walk_one, 16, FTW_PHYS) == 0,
	    "cannot walk %s", root);
	free(root);
	free(dir);
}

static bool
listed(const struct lock_list *l, const char *file, size_t flen,
    const char *name, size_t nlen)
{
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->d[i].file) == flen && strlen(l->d[i].name) ==
		    nlen && memcmp(l->d[i].file, file, flen) == 0 &&
		    memcmp(l->d[i].name, name, nlen) == 0)
			return true;
	return false;
}

START_TEST(test_scanner)
{
	char text[] =
	    "struct a {\n"
	    "\tpthread_mutex_t lock;\t/* pthread_mutex_t not_this; */\n"
	    "\tpthread_cond_t c1, c2[4];\n"
	    "\tpthread_mutex_t *borrowed;\n"
	    "\tpthread_rwlockattr_t attr;\n"
	    "};\n"
	    "static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;\n"
	    "static pthread_spinlock_t spin;\n"
	    "void f(pthread_mutex_t m, int x);\n"
	    "size_t n = sizeof(pthread_mutex_t);\n"
	    "const char *s = \"pthread_cond_t in_a_string;\";\n"
	    "// pthread_rwlock_t in_a_comment;\n"
	    "pthread_rwlock_t rw;\n";
	/* By type, then in order of appearance. */
	static const char *const want[] = {
		"lock", "once", "rw", "c1", "c2", "spin",
	};
	struct lock_list *l = calloc(1, sizeof(*l));

	ck_assert_ptr_nonnull(l);
	scan_text(text, "x/a.c", l);
	ck_assert_uint_eq(l->n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < l->n; i++)
		ck_assert_str_eq(l->d[i].name, want[i]);
	ck_assert_int_eq(l->d[0].line, 2);
	ck_assert_str_eq(l->d[0].file, "x/a.c");
	free(l);
}
END_TEST

START_TEST(test_every_lock_is_listed)
{
	struct lock_list *l = calloc(1, sizeof(*l));
	char *path = tu_source_path("docs/threads.md"), *doc;
	char *missing = NULL;
	size_t mlen = 0, nmissing = 0;
	FILE *m;

	ck_assert_ptr_nonnull(l);
	ck_assert_msg((doc = tu_read_file(path, NULL)) != NULL,
	    "cannot read %s", path);
	scan_daemon(l);
	/* The scanner found the daemon's locks, not a tree without them. */
	ck_assert_msg(l->n >= 10, "only %zu locks found under daemon/", l->n);
	ck_assert(listed(l, "req/shardstate.c", 16, "lock", 4));
	ck_assert_ptr_nonnull(m = open_memstream(&missing, &mlen));
	for (size_t i = 0; i < l->n; i++) {
		char want[sizeof(l->d[i].file) + NAME_MAX_LEN + 4];

		snprintf(want, sizeof(want), "`%s:%s`", l->d[i].file,
		    l->d[i].name);
		if (strstr(doc, want) == NULL) {
			fprintf(m, "\n  daemon/%s:%d: %s", l->d[i].file,
			    l->d[i].line, l->d[i].name);
			nmissing++;
		}
	}
	fclose(m);
	ck_assert_msg(nmissing == 0, "docs/threads.md does not list %zu "
	    "lock(s) (add a row naming `FILE:NAME`, FILE relative to "
	    "daemon/):%s", nmissing, missing);
	free(missing);
	free(doc);
	free(path);
	free(l);
}
END_TEST

START_TEST(test_every_listed_lock_is_one)
{
	struct lock_list *l = calloc(1, sizeof(*l));
	char *path = tu_source_path("docs/threads.md"), *doc;
	const char *p, *q;

	ck_assert_ptr_nonnull(l);
	ck_assert_msg((doc = tu_read_file(path, NULL)) != NULL,
	    "cannot read %s", path);
	scan_daemon(l);
	/* Each code span `DIR/FILE.c:NAME` (or .h, .cpp) names a lock. */
	for (p = doc; (p = strchr(p, '`')) != NULL &&
	    (q = strchr(p + 1, '`')) != NULL; p = q + 1) {
		const char *colon = memchr(p + 1, ':', (size_t)(q - p - 1));
		size_t flen;
		bool ident = true;

		if (colon == NULL)
			continue;
		flen = (size_t)(colon - p - 1);
		if (!((flen > 2 && memcmp(colon - 2, ".c", 2) == 0) ||
		    (flen > 2 && memcmp(colon - 2, ".h", 2) == 0) ||
		    (flen > 4 && memcmp(colon - 4, ".cpp", 4) == 0)))
			continue;
		for (const char *c = colon + 1; c < q; c++)
			ident = ident && ident_char(*c);
		if (!ident || colon + 1 == q)
			continue;
		ck_assert_msg(listed(l, p + 1, flen, colon + 1,
		    (size_t)(q - colon - 1)), "docs/threads.md names %.*s, "
		    "which no file under daemon/ declares as a lock",
		    (int)(q - p + 1), p);
	}
	free(doc);
	free(path);
	free(l);
}
END_TEST

Suite *threads_doc_suite(void);

Suite *
threads_doc_suite(void)
{
	Suite *s = suite_create("threads_doc");
	TCase *tc = tcase_create("threads_doc");

	tcase_add_test(tc, test_scanner);
	tcase_add_test(tc, test_every_lock_is_listed);
	tcase_add_test(tc, test_every_listed_lock_is_one);
	suite_add_tcase(s, tc);
	return s;
}
