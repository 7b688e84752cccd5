/*
 * nddctl text: the text nddd judges a document by, printed, no daemon
 * needed (docs/neardup.md): a page's main content (or, when it has no
 * article or with --whole, all its visible text), as nddd's [text] html
 * makes it; a text document itself.  It is what the simhash and the
 * sketch are computed from, so a surprising answer can be looked at.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nddctl.h"
#include "nddd.h"

#define EXIT_USAGE 2

static void
nddctl_text_usage(FILE *f)
{
	fprintf(f,
"usage: nddctl text [--html [--whole]] [FILE|-]\n"
"\n"
"Prints the text nddd judges the document in FILE (or standard input)\n"
"by, which its simhash and sketch are computed from: with --html, the\n"
"page's main content, a line per block (paragraph, heading, list item),\n"
"as [text] html = main makes it; when the page has no article (a list of\n"
"links, an error page), its whole visible text, and a note on standard\n"
"error says so.  --whole: the whole page, as [text] html = whole reads\n"
"it (markup dropped, each tag a space).  Without --html, the text as it\n"
"is.\n"
"\n"
"Exit status: 0; 2 usage error or unreadable input; 4 the output could\n"
"not be written.\n");
}

/* Reads all of path ("-": standard input) into *data; -1 on error. */
static int
read_all(const char *path, char **data, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 0, n;
	char *p;

	*data = NULL;
	*len = 0;
	if (f == NULL)
		goto err;
	for (;;) {
		if (*len == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			if ((p = realloc(*data, cap)) == NULL)
				goto err;
			*data = p;
		}
		if ((n = fread(*data + *len, 1, cap - *len, f)) == 0)
			break;
		*len += n;
	}
	if (ferror(f))
		goto err;
	if (f != stdin)
		fclose(f);
	return 0;
err:
	fprintf(stderr, "nddctl text: %s: %s\n", strcmp(path, "-") == 0 ?
	    "standard input" : path, strerror(errno));
	if (f != NULL && f != stdin)
		fclose(f);
	free(*data);
	*data = NULL;
	return -1;
}

int
nddctl_text(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "html", no_argument, NULL, 'H' },
		{ "whole", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct nddd_engine_opts eo = { .stopwords = "none" };
	enum nddd_format format = NDDD_FORMAT_TEXT;
	enum nddd_content content;
	nddd_engine *engine = NULL;
	char *cause = NULL, *data = NULL;
	const char *text;
	size_t len, tlen;
	int c, rc = EXIT_USAGE;

	argv[0] = (char *)"nddctl text";
	optind = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'H':
			format = NDDD_FORMAT_HTML;
			break;
		case 'W':
			eo.html = "whole";
			break;
		case 'h':
			nddctl_text_usage(stdout);
			return 0;
		default:
			nddctl_text_usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind > 1 || (eo.html != NULL &&
	    format != NDDD_FORMAT_HTML)) {
		nddctl_text_usage(stderr);
		return EXIT_USAGE;
	}
	/* Stop words change terms, not the text: none are loaded. */
	if ((engine = nddd_engine_new(&eo, &cause)) == NULL) {
		fprintf(stderr, "nddctl text: %s\n", cause != NULL ? cause :
		    strerror(ENOMEM));
		goto out;
	}
	if (read_all(optind < argc ? argv[optind] : "-", &data, &len) == -1)
		goto out;
	if (nddd_engine_text(engine, data, len, format, &text, &tlen,
	    &content) != NDDD_OK) {
		fprintf(stderr, "nddctl text: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (format == NDDD_FORMAT_HTML && eo.html == NULL &&
	    content == NDDD_CONTENT_WHOLE)
		fprintf(stderr, "nddctl text: no article found: the page is "
		    "judged by its whole text\n");
	fwrite(text, 1, tlen, stdout);
	if (tlen > 0 && text[tlen - 1] != '\n')
		putchar('\n');
	/* A failure to write the output is nddctl's main's to report. */
	rc = 0;
out:
	free(data);
	nddd_engine_free(engine);
	free(cause);
	return rc;
}
