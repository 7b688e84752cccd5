/*
 * Tests for config: the shipped conf/nddd.conf states exactly the defaults,
 * values parse and are bounded, and every error of a file is reported with
 * its file:line.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "testutil.h"

struct shipped {
	char keys[64][3][128];	/* section, name, value */
	int n;
};

static int
collect(void *user, const char *section, const char *name, const char *value)
{
	struct shipped *s = user;

	ck_assert_int_lt(s->n, 64);
	snprintf(s->keys[s->n][0], 128, "%s", section);
	snprintf(s->keys[s->n][1], 128, "%s", name);
	snprintf(s->keys[s->n][2], 128, "%s", value);
	s->n++;
	return 1;
}

struct compare {
	struct shipped *shipped;
	int matched;
};

static void
compare_key(const char *section, const char *name, const char *dflt,
    void *arg)
{
	struct compare *c = arg;

	for (int i = 0; i < c->shipped->n; i++) {
		if (strcmp(c->shipped->keys[i][0], section) != 0 ||
		    strcmp(c->shipped->keys[i][1], name) != 0)
			continue;
		ck_assert_msg(strcmp(c->shipped->keys[i][2], dflt) == 0,
		    "conf/nddd.conf: %s.%s = %s, default is %s", section, name,
		    c->shipped->keys[i][2], dflt);
		c->matched++;
		return;
	}
	ck_abort_msg("conf/nddd.conf does not document %s.%s", section, name);
}

START_TEST(test_shipped_file_states_the_defaults)
{
	char *path = tu_source_path("conf/nddd.conf"), *errors;
	struct shipped shipped = { .n = 0 };
	struct compare c = { .shipped = &shipped };
	struct config cfg;
	const char *cause;

	ck_assert_int_eq(ini_parse(path, collect, &shipped), 0);
	config_foreach_key(compare_key, &c);
	ck_assert_int_eq(c.matched, shipped.n);	/* and nothing else */
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, &errors), 0);
	ck_assert_int_eq(config_validate(&cfg, &cause), 0);
	/* workers = 0: one per CPU, at least 4. */
	ck_assert_uint_ge(cfg.workers, 4);
	ck_assert_uint_ge(cfg.workers, (uint64_t)sysconf(_SC_NPROCESSORS_ONLN));
	config_clear(&cfg);
	free(path);
}
END_TEST

static char *
write_file(const char *dir, const char *text)
{
	char *path;
	FILE *f;

	ck_assert_int_ne(asprintf(&path, "%s/test.conf", dir), -1);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

START_TEST(test_values)
{
	char *dir = tu_tmpdir(), *errors = NULL, *path;
	struct config cfg;
	const char *cause;

	path = write_file(dir, "[server]\nlisten = [::1]:7000\n"
	    "max_frame = 16M\noutput_high_water = 65536\n"
	    "; a comment\n[store]\nsync = none\nmap_size = 2G\n"
	    "[urls]\ncapacity = 5\nsort_query = yes\n"
	    "strip_tracking = off\n[log]\nlevel = debug\n");
	config_defaults(&cfg);
	ck_assert_msg(config_load(&cfg, path, &errors) == 0, "%s", errors);
	ck_assert_str_eq(cfg.listen, "[::1]:7000");
	ck_assert_uint_eq(cfg.max_frame, 16u << 20);
	ck_assert_uint_eq(cfg.output_high_water, 65536);
	ck_assert_int_eq(cfg.sync, STORE_SYNC_NONE);
	ck_assert_uint_eq(cfg.map_size, 2ull << 30);
	ck_assert_uint_eq(cfg.capacity, 5);
	ck_assert(cfg.sort_query);
	ck_assert(!cfg.strip_tracking);
	ck_assert_int_eq(cfg.log_level, LOG_LEVEL_DEBUG);
	ck_assert_str_eq(cfg.data_dir, "var/nddd");	/* default kept */
	/* Command-line overrides go through the same parser. */
	ck_assert_int_eq(config_set(&cfg, "store", "data_dir", "/srv/x",
	    &cause), 0);
	ck_assert_str_eq(cfg.data_dir, "/srv/x");
	ck_assert_int_eq(config_set(&cfg, "server", "listen", "nohost",
	    &cause), -1);
	ck_assert_int_eq(config_set(&cfg, "server", "listen", "1.2.3.4:99999",
	    &cause), -1);
	ck_assert_int_eq(config_set(&cfg, "urls", "capacity", "0", &cause),
	    -1);
	/* Durations. */
	ck_assert_int_eq(config_set(&cfg, "server", "idle_timeout", "2m",
	    &cause), 0);
	ck_assert_uint_eq(cfg.idle_timeout_ms, 120000);
	ck_assert_int_eq(config_set(&cfg, "server", "frame_timeout", "250ms",
	    &cause), 0);
	ck_assert_uint_eq(cfg.frame_timeout_ms, 250);
	ck_assert_int_eq(config_set(&cfg, "server", "frame_timeout", "7",
	    &cause), 0);
	ck_assert_uint_eq(cfg.frame_timeout_ms, 7000);
	ck_assert_int_eq(config_set(&cfg, "server", "frame_timeout", "1d",
	    &cause), -1);
	/* Optional addresses: empty turns them off. */
	ck_assert_int_eq(config_set(&cfg, "metrics", "listen", "", &cause), 0);
	ck_assert_ptr_null(cfg.metrics_listen);
	ck_assert(config_is_loopback("127.0.0.2:1"));
	ck_assert(config_is_loopback("[::1]:1"));
	ck_assert(!config_is_loopback("0.0.0.0:1"));
	ck_assert(!config_is_loopback("[::]:1"));
	ck_assert_int_eq(config_set(&cfg, "urls", "capacity", "300000000",
	    &cause), -1);
	ck_assert_int_eq(config_set(&cfg, "server", "max_frame", "1Q",
	    &cause), -1);
	ck_assert_int_eq(config_set(&cfg, "server", "max_frame",
	    "99999999999999999999", &cause), -1);
	/* A frame too small for the batch limit is refused as a whole. */
	ck_assert_int_eq(config_set(&cfg, "server", "max_frame", "1K",
	    &cause), 0);
	ck_assert_int_eq(config_validate(&cfg, &cause), -1);
	config_clear(&cfg);
	free(path);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_every_error_with_its_line)
{
	char *dir = tu_tmpdir(), *errors = NULL, *path;
	struct config cfg;

	path = write_file(dir, "[server]\nmax_batch = -3\n\nlisten = nowhere\n"
	    "[store]\nsync = sometimes\n[bogus]\nkey = 1\nthis is not ini\n");
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, path, &errors), -1);
	ck_assert_ptr_nonnull(errors);
	ck_assert_msg(strstr(errors, "test.conf:2: max_batch") != NULL, "%s",
	    errors);
	ck_assert_msg(strstr(errors, "test.conf:4: listen") != NULL, "%s",
	    errors);
	ck_assert_msg(strstr(errors, "test.conf:6: sync") != NULL, "%s",
	    errors);
	ck_assert_msg(strstr(errors, "test.conf:8: unknown section [bogus]") !=
	    NULL, "%s", errors);
	ck_assert_msg(strstr(errors, "test.conf:9: syntax error") != NULL,
	    "%s", errors);
	free(errors);
	config_clear(&cfg);
	free(path);
	/* A missing file says so. */
	config_defaults(&cfg);
	ck_assert_int_eq(config_load(&cfg, "/nonexistent/nddd.conf", &errors),
	    -1);
	ck_assert_msg(strstr(errors, "No such file") != NULL, "%s", errors);
	free(errors);
	config_clear(&cfg);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

/* [tls] client_cn: a list of names, checked against client_ca and for
 * empty names; config_list_next walks it. */
START_TEST(test_client_cn)
{
	static const char *const want[] = { "crawler-1", "Ops Team", "x" };
	struct config cfg;
	const char *cause, *list = " crawler-1 ,Ops Team,\tx", *name;
	size_t len, n = 0;

	while ((name = config_list_next(&list, &len)) != NULL) {
		ck_assert_uint_lt(n, 3);
		ck_assert_uint_eq(len, strlen(want[n]));
		ck_assert(memcmp(name, want[n], len) == 0);
		n++;
	}
	ck_assert_uint_eq(n, 3);
	config_defaults(&cfg);
	ck_assert_ptr_null(cfg.tls_client_cn);
	ck_assert_int_eq(config_set(&cfg, "tls", "listen", "127.0.0.1:6465",
	    &cause), 0);
	ck_assert_int_eq(config_set(&cfg, "tls", "cert", "c.pem", &cause), 0);
	ck_assert_int_eq(config_set(&cfg, "tls", "key", "k.pem", &cause), 0);
	ck_assert_int_eq(config_set(&cfg, "tls", "client_cn", "crawler",
	    &cause), 0);
	ck_assert_int_eq(config_validate(&cfg, &cause), -1);
	ck_assert_str_eq(cause, "[tls] client_cn needs [tls] client_ca");
	ck_assert_int_eq(config_set(&cfg, "tls", "client_ca", "ca.pem",
	    &cause), 0);
	ck_assert_int_eq(config_validate(&cfg, &cause), 0);
	ck_assert_int_eq(config_set(&cfg, "tls", "client_cn", "a,, b",
	    &cause), 0);
	ck_assert_int_eq(config_validate(&cfg, &cause), -1);
	ck_assert_msg(strstr(cause, "empty name") != NULL, "%s", cause);
	ck_assert_int_eq(config_set(&cfg, "tls", "client_cn", "a, b,",
	    &cause), 0);
	ck_assert_int_eq(config_validate(&cfg, &cause), -1);
	ck_assert_int_eq(config_set(&cfg, "tls", "client_cn", "", &cause), 0);
	ck_assert_ptr_null(cfg.tls_client_cn);
	ck_assert_int_eq(config_validate(&cfg, &cause), 0);
	config_clear(&cfg);
}
END_TEST

Suite *config_suite(void);

Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_shipped_file_states_the_defaults);
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_every_error_with_its_line);
	tcase_add_test(tc, test_client_cn);
	suite_add_tcase(s, tc);
	return s;
}
