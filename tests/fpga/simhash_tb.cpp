/*
 * simhash_tb: the test bench of the fingerprint accelerator RTL
 * (daemon/accel/fpga/rtl), run on its Verilator model through the same
 * driver as the fpga-sim plugin (daemon/accel/fpga/fpga_drv.h).
 *
 * Every fingerprint is compared with the naive reference of tests/lib, in
 * both term-hash modes:
 *   - edge cases: empty documents, runs of spaces, terms across words,
 *     NUL and high bytes, one-term and two-term documents;
 *   - random documents, with the lanes and the output channels stalled at
 *     random (the output multiplexer must lose nothing);
 *   - bursts of tiny documents with the outputs stalled for long stretches;
 *   - a slice of Reuters-21578: the article bodies, preprocessed into the
 *     accelerator format by nddd's own code (simhash_preprocess, default
 *     stop words), against the reference computed from the raw text.
 * It then reports the cycles per byte per core measured in the simulation
 * and how fast the simulation ran (a simulation: not the hardware's speed).
 *
 *   simhash_tb [-d datadir] [-S stopwords] [-n random] [-r reuters]
 *       [-s seed] [-p]
 *
 * -p: performance only: the Reuters slice without stress, timed.
 * Exit status 0 when every fingerprint matched, 1 otherwise.
 */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "fpga_drv.h"

extern "C" {
#include "corpus.h"
#include "simhash.h"
#include "simhash_ref.h"
#include "stopwords.h"
}

namespace {

struct tb_doc {
	std::string text;	/* what the reference reads */
	std::string prep;	/* what the hardware reads */
	bool raw;		/* text is raw text (with stop words) */
};

int failures;

uint64_t
tb_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

double
now()
{
	return std::chrono::duration<double>(
	    std::chrono::steady_clock::now().time_since_epoch()).count();
}

/*
 * Runs docs through the model in one mode and checks every fingerprint.
 * Returns the run's statistics.
 */
struct fpga_drv_stats
tb_check(const char *what, const std::vector<tb_doc> &docs, int paper,
    const struct ref_stopwords *ref_sw, const struct fpga_drv_stress *stress,
    double *seconds)
{
	std::vector<struct fpga_drv_doc> in(docs.size());
	struct fpga_drv_stats st = {};
	struct fpga_drv *d;
	char err[256];
	size_t bad = 0;
	double t0;

	if ((d = fpga_drv_new(!paper, err, sizeof(err))) == NULL) {
		printf("simhash_tb: FAIL: %s\n", err);
		failures++;
		return st;
	}
	for (size_t i = 0; i < docs.size(); i++) {
		in[i].data = reinterpret_cast<const uint8_t *>(
		    docs[i].prep.data());
		in[i].len = docs[i].prep.size();
		in[i].fp = 0xdeadbeefdeadbeefULL;
		in[i].empty = -1;
	}
	t0 = now();
	if (fpga_drv_run(d, in.data(), in.size(), stress, &st, err,
	    sizeof(err)) == -1) {
		printf("simhash_tb: FAIL: %s, %s: %s\n", what,
		    paper ? "sdbm" : "sdbm-fmix64", err);
		failures++;
		fpga_drv_free(d);
		return st;
	}
	if (seconds != NULL)
		*seconds = now() - t0;
	fpga_drv_free(d);
	for (size_t i = 0; i < docs.size(); i++) {
		const tb_doc &doc = docs[i];
		uint64_t want = 0;
		int rc = doc.raw ?
		    ref_simhash(doc.text.data(), doc.text.size(), 0, paper,
		    ref_sw, &want) :
		    ref_simhash_preprocessed(doc.text.data(), doc.text.size(),
		    paper, &want);
		bool ok = rc == -1 ? in[i].empty == 1 :
		    in[i].empty == 0 && in[i].fp == want;

		if (ok)
			continue;
		if (bad++ < 5)
			printf("simhash_tb: FAIL: %s, %s: document %zu (%zu "
			    "bytes): rtl %s%016llx, reference %s%016llx\n",
			    what, paper ? "sdbm" : "sdbm-fmix64", i,
			    doc.prep.size(), in[i].empty ? "EMPTY " : "",
			    (unsigned long long)in[i].fp,
			    rc == -1 ? "EMPTY " : "", (unsigned long long)want);
	}
	if (bad > 0) {
		printf("simhash_tb: FAIL: %s, %s: %zu of %zu documents "
		    "wrong\n", what, paper ? "sdbm" : "sdbm-fmix64", bad,
		    docs.size());
		failures++;
	} else
		printf("simhash_tb: ok: %s, %s: %zu documents, %llu bytes, "
		    "%llu cycles\n", what, paper ? "sdbm" : "sdbm-fmix64",
		    docs.size(), (unsigned long long)st.bytes,
		    (unsigned long long)st.cycles);
	return st;
}

void
tb_both(const char *what, const std::vector<tb_doc> &docs,
    const struct ref_stopwords *ref_sw, const struct fpga_drv_stress *stress)
{
	tb_check(what, docs, 0, ref_sw, stress, NULL);
	tb_check(what, docs, 1, ref_sw, stress, NULL);
}

tb_doc
tb_pre(const std::string &s)
{
	return tb_doc{s, s, false};
}

std::vector<tb_doc>
tb_edge_cases()
{
	std::vector<tb_doc> v;
	std::string all;
	const char *fixed[] = {
		"", " ", "        ", "         ", "a", "a ", " a", "  a  ",
		"ab", "a b", "a  b", "a b ", "abcdefg", "abcdefgh", "abcdefghi",
		"abcdefg h", "abcdefgh i", "abcdefghijklmnop",
		"abcdefghijklmnopq", "       a", "        a", "school",
		"school school", "school students school teachers",
		"the cat sat on the mat", "a a a b b", "a b a b",
		"one two three four five six seven eight nine ten",
	};

	for (const char *s : fixed)
		v.push_back(tb_pre(s));
	/* Bytes that are terms in the accelerator format, SPACE aside. */
	v.push_back(tb_pre(std::string("a\0b", 3)));
	v.push_back(tb_pre(std::string("\0", 1)));
	v.push_back(tb_pre(std::string("\0 \0\0 \0", 6)));
	v.push_back(tb_pre("\xff\xfe \xc3\xa9t\xc3\xa9 \t\n\r,.!"));
	for (int c = 255; c >= 0; c--)
		if (c != ' ')
			all.push_back(static_cast<char>(c));
	v.push_back(tb_pre(all));
	for (size_t i = 0; i < all.size(); i += 3)
		all[i] = ' ';
	v.push_back(tb_pre(all));
	v.push_back(tb_pre(std::string(1000, 'x')));
	v.push_back(tb_pre(std::string(1000, 'x') + " " +
	    std::string(999, 'y')));
	/* Word boundaries at every position. */
	for (size_t k = 0; k < 18; k++)
		v.push_back(tb_pre(std::string(k, 'q') + " " +
		    std::string(17 - k, 'r')));
	return v;
}

std::vector<tb_doc>
tb_random(uint64_t *seed, size_t n)
{
	static const char alpha[] = "etaoinshrdlucmfwypvbgkjqxz0123456789";
	std::vector<tb_doc> v;

	for (size_t i = 0; i < n; i++) {
		uint64_t r = tb_rand(seed) % 100;
		size_t len = r < 40 ? tb_rand(seed) % 40 :
		    r < 90 ? tb_rand(seed) % 1500 : tb_rand(seed) % 12000;
		unsigned space_pct = 5 + tb_rand(seed) % 30;
		std::string s;

		for (size_t k = 0; k < len; k++) {
			uint64_t x = tb_rand(seed);

			if (x % 100 < space_pct)
				s.push_back(' ');
			else if ((x >> 8) % 50 == 0)
				s.push_back(static_cast<char>((x >> 16) & 0xff));
			else
				s.push_back(alpha[(x >> 16) % (sizeof(alpha) -
				    1)]);
		}
		v.push_back(tb_pre(s));
	}
	return v;
}

std::vector<tb_doc>
tb_tiny(uint64_t *seed, size_t n)
{
	std::vector<tb_doc> v;

	for (size_t i = 0; i < n; i++) {
		size_t len = tb_rand(seed) % 3;
		std::string s;

		for (size_t k = 0; k < len; k++)
			s.push_back(tb_rand(seed) % 3 == 0 ? ' ' : 'a' +
			    tb_rand(seed) % 4);
		v.push_back(tb_pre(s));
	}
	return v;
}

/* The Reuters bodies, raw for the reference, preprocessed for the rtl. */
std::vector<tb_doc>
tb_reuters(const char *dir, size_t max, const struct simhash *sh)
{
	struct simhash_scratch *sc = simhash_scratch_new();
	struct corpus *c = corpus_reuters(dir, max);
	std::vector<tb_doc> v;

	if (c == NULL || sc == NULL) {
		printf("simhash_tb: FAIL: no Reuters-21578 articles in %s\n",
		    dir);
		failures++;
		simhash_scratch_free(sc);
		return v;
	}
	for (size_t i = 0; i < c->n; i++) {
		uint8_t *out;
		size_t len;

		if (simhash_preprocess(sh, sc, SIMHASH_INPUT_TEXT,
		    c->docs[i].data, c->docs[i].len, &out, &len) == -1) {
			printf("simhash_tb: FAIL: out of memory\n");
			exit(1);
		}
		v.push_back(tb_doc{std::string(c->docs[i].data,
		    c->docs[i].len), std::string(reinterpret_cast<char *>(out),
		    len), true});
		free(out);
	}
	corpus_free(c);
	simhash_scratch_free(sc);
	return v;
}

void
usage()
{
	fprintf(stderr, "usage: simhash_tb [-d datadir] [-S stopwords] "
	    "[-n random] [-r reuters] [-s seed] [-p]\n");
	exit(2);
}

} // namespace

int
main(int argc, char **argv)
{
	const char *datadir = getenv("NDDD_TEST_DATA");
	const char *swpath = "conf/stopwords.txt";
	size_t nrandom = 3000, nreuters = 2000;
	uint64_t seed = 1;
	bool perf_only = false;
	struct stopwords *sw;
	struct ref_stopwords *ref_sw;
	struct simhash *sh;
	char *cause = NULL;
	int ch;

	while ((ch = getopt(argc, argv, "d:S:n:r:s:p")) != -1) {
		switch (ch) {
		case 'd':
			datadir = optarg;
			break;
		case 'S':
			swpath = optarg;
			break;
		case 'n':
			nrandom = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			nreuters = strtoull(optarg, NULL, 10);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			perf_only = true;
			break;
		default:
			usage();
		}
	}
	if (datadir == NULL)
		datadir = "../shared/data";
	if ((sw = stopwords_load(swpath, &cause)) == NULL) {
		fprintf(stderr, "simhash_tb: %s\n", cause);
		return 2;
	}
	ref_sw = ref_stopwords_new(stopwords_list(sw));
	if ((sh = simhash_new(SIMHASH_TERM_HASH_SDBM_FMIX64, sw, &cause)) ==
	    NULL) {
		fprintf(stderr, "simhash_tb: %s\n", cause);
		return 2;
	}
	printf("simhash_tb: model: %u engine(s) x %u SimHash cores, %u-bit "
	    "counters, simulated by %s\n", fpga_drv_engines(),
	    fpga_drv_cores(), fpga_drv_counter_bits(), fpga_drv_verilator());

	std::string rdir = std::string(datadir) +
	    "/text_corpora/reuters21578";
	std::vector<tb_doc> reuters = tb_reuters(rdir.c_str(), nreuters, sh);

	if (!perf_only) {
		struct fpga_drv_stress jitter = { seed, 30, 20, 8 };
		struct fpga_drv_stress blocked = { seed + 1, 5, 60, 400 };
		std::vector<tb_doc> edge = tb_edge_cases();
		std::vector<tb_doc> rnd = tb_random(&seed, nrandom);
		std::vector<tb_doc> tiny = tb_tiny(&seed, 3000);

		tb_both("edge cases", edge, ref_sw, NULL);
		tb_both("edge cases, stalls", edge, ref_sw, &jitter);
		tb_both("random documents", rnd, ref_sw, NULL);
		tb_both("random documents, stalls", rnd, ref_sw, &jitter);
		tb_both("tiny documents, outputs blocked", tiny, ref_sw,
		    &blocked);
		tb_check("Reuters-21578, stalls", reuters, 0, ref_sw, &jitter,
		    NULL);
	}

	/* The Reuters slice, as fast as it goes: cycles per byte. */
	if (!reuters.empty()) {
		const unsigned cores = fpga_drv_engines() * fpga_drv_cores();
		double sec[2] = { 0, 0 };
		struct fpga_drv_stats st[2];

		for (int paper = 0; paper <= 1; paper++) {
			st[paper] = tb_check("Reuters-21578", reuters, paper,
			    ref_sw, NULL, &sec[paper]);
			if (st[paper].bytes == 0)
				continue;
			printf("simhash_tb: Reuters-21578, %zu bodies, %.2f MB "
			    "preprocessed, %s: %llu cycles, %.4f cycles per "
			    "byte per core (%u cores; 1 is the ideal), "
			    "%.3f bytes per cycle per engine; %.1f%% of the "
			    "words full; simulated at %.2f MB/s (Verilator "
			    "model, not hardware)\n", reuters.size(),
			    (double)st[paper].bytes / 1e6,
			    paper ? "sdbm" : "sdbm-fmix64",
			    (unsigned long long)st[paper].cycles,
			    (double)st[paper].cycles * cores /
			    (double)st[paper].bytes, cores,
			    (double)st[paper].bytes / (double)st[paper].cycles /
			    fpga_drv_engines(),
			    100.0 * (double)st[paper].bytes /
			    (8.0 * (double)st[paper].words),
			    (double)st[paper].bytes / sec[paper] / 1e6);
		}
	}
	simhash_free(sh);
	ref_stopwords_free(ref_sw);
	stopwords_free(sw);
	printf("simhash_tb: %s\n", failures ? "FAILED" : "passed");
	return failures ? 1 : 0;
}
