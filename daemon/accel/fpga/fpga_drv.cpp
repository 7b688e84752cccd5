/*
 * fpga_drv: the host side of the fingerprint accelerator, driving its
 * Verilator model.  See fpga_drv.h.
 *
 * Each cycle: the lanes without a word on offer put up their next one, the
 * clock's low phase is evaluated so that the combinational handshakes
 * (lane_ready, out_valid) settle, the words and fingerprints that pass in
 * this cycle are noted, and the rising edge is evaluated.  A lane's
 * document is in its in-flight queue from its first word to its
 * fingerprint; the engines give each lane's fingerprints in order, so the
 * queue's head is the one a fingerprint from that lane belongs to.
 */
#include "fpga_drv.h"

#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "Vsimhash_top.h"
#include "verilated.h"

#if !defined(FPGA_ENGINES) || !defined(FPGA_CORES) || !defined(FPGA_COUNTER_W)
#error "FPGA_ENGINES, FPGA_CORES and FPGA_COUNTER_W must match the model"
#endif

namespace {

constexpr unsigned NLANES = FPGA_ENGINES * FPGA_CORES;
static_assert(NLANES <= 64, "the driver keeps the lanes' handshakes in 64 bits");
static_assert(FPGA_CORES <= 256, "out_core is 8 bits");
/* Cycles without any word or fingerprint passing: the model is stuck. */
constexpr uint64_t STALL_LIMIT = 100000;
constexpr size_t NONE = static_cast<size_t>(-1);

/* Bits of a port, whatever C++ type Verilator gave it. */
template <typename T>
inline void
port_put(T &port, unsigned lsb, unsigned width, uint64_t v)
{
	const uint64_t mask = width >= 64 ? ~0ULL : (1ULL << width) - 1;

	port = static_cast<T>((static_cast<uint64_t>(port) & ~(mask << lsb)) |
	    ((v & mask) << lsb));
}

template <std::size_t N>
inline void
port_put(VlWide<N> &port, unsigned lsb, unsigned width, uint64_t v)
{
	for (unsigned i = 0; i < width; i++) {
		const unsigned bit = lsb + i;
		const EData m = static_cast<EData>(1U) << (bit % 32);

		if ((v >> i) & 1)
			port[bit / 32] |= m;
		else
			port[bit / 32] &= ~m;
	}
}

/* 64-bit fields at 64-bit boundaries: two whole words. */
template <std::size_t N>
inline void
port_put64(VlWide<N> &port, unsigned index, uint64_t v)
{
	port[2 * index] = static_cast<EData>(v);
	port[2 * index + 1] = static_cast<EData>(v >> 32);
}

template <typename T>
inline void
port_put64(T &port, unsigned index, uint64_t v)
{
	port_put(port, 64 * index, 64, v);
}

template <typename T>
inline uint64_t
port_get(const T &port, unsigned lsb, unsigned width)
{
	const uint64_t mask = width >= 64 ? ~0ULL : (1ULL << width) - 1;

	return (static_cast<uint64_t>(port) >> lsb) & mask;
}

template <std::size_t N>
inline uint64_t
port_get(const VlWide<N> &port, unsigned lsb, unsigned width)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < width; i++) {
		const unsigned bit = lsb + i;

		v |= static_cast<uint64_t>((port[bit / 32] >> (bit % 32)) & 1)
		    << i;
	}
	return v;
}

template <std::size_t N>
inline uint64_t
port_get64(const VlWide<N> &port, unsigned index)
{
	return static_cast<uint64_t>(port[2 * index]) |
	    static_cast<uint64_t>(port[2 * index + 1]) << 32;
}

template <typename T>
inline uint64_t
port_get64(const T &port, unsigned index)
{
	return port_get(port, 64 * index, 64);
}

struct lane {
	size_t doc = NONE;		/* the document being sent */
	size_t off = 0;			/* its bytes sent */
	unsigned nbytes = 0;		/* bytes in the word on offer */
	bool last = false;		/* the word on offer is its last */
	bool offering = false;
	std::deque<size_t> inflight;	/* sent, fingerprint not yet out */
};

/* splitmix64, for the stress options. */
inline uint64_t
drv_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

} // namespace

struct fpga_drv {
	std::unique_ptr<VerilatedContext> ctx;
	std::unique_ptr<Vsimhash_top> top;
	int fmix;
};

static void
drv_cycle(struct fpga_drv *d)
{
	d->top->clk = 0;
	d->top->eval();
	d->top->clk = 1;
	d->top->eval();
}

static void
drv_reset(struct fpga_drv *d)
{
	Vsimhash_top *t = d->top.get();

	t->rst = 1;
	t->fmix_en = d->fmix ? 1 : 0;
	t->lane_valid = 0;
	t->lane_last = 0;
	port_put(t->out_ready, 0, FPGA_ENGINES, ~0ULL);
	drv_cycle(d);
	drv_cycle(d);
	t->rst = 0;
	drv_cycle(d);
}

extern "C" struct fpga_drv *
fpga_drv_new(int fmix, char *err, size_t errlen)
{
	struct fpga_drv *d;

	static_assert(sizeof(Vsimhash_top::lane_data) * 8 >= 64 * NLANES,
	    "the model was verilated with other parameters");
	try {
		d = new fpga_drv;
		d->ctx.reset(new VerilatedContext);
		d->top.reset(new Vsimhash_top{d->ctx.get(), "simhash_top"});
	} catch (const std::exception &e) {
		snprintf(err, errlen, "cannot make the model: %s", e.what());
		return NULL;
	}
	d->fmix = fmix;
	drv_reset(d);
	return d;
}

extern "C" void
fpga_drv_free(struct fpga_drv *d)
{
	if (d == NULL)
		return;
	d->top->final();
	delete d;
}

/* Puts lane l's next word on offer. */
static void
drv_offer(Vsimhash_top *t, struct lane *ln, unsigned l,
    const struct fpga_drv_doc *docs)
{
	const struct fpga_drv_doc *doc = &docs[ln->doc];
	size_t left = doc->len - ln->off;
	uint64_t w = 0;

	ln->nbytes = left > 8 ? 8 : static_cast<unsigned>(left);
	ln->last = left <= 8;
	if (ln->nbytes > 0)
		memcpy(&w, doc->data + ln->off, ln->nbytes);	/* little end */
	port_put64(t->lane_data, l, w);
	port_put(t->lane_nbytes, 4 * l, 4, ln->nbytes);
	port_put(t->lane_last, l, 1, ln->last);
	port_put(t->lane_valid, l, 1, 1);
	ln->offering = true;
}

extern "C" int
fpga_drv_run(struct fpga_drv *d, struct fpga_drv_doc *docs, size_t n,
    const struct fpga_drv_stress *stress, struct fpga_drv_stats *st,
    char *err, size_t errlen)
{
	Vsimhash_top *t = d->top.get();
	std::vector<lane> lanes(NLANES);
	uint64_t seed = stress != NULL ? stress->seed : 0, idle = 0;
	uint64_t stall_left[FPGA_ENGINES] = { 0 };
	size_t next = 0, done = 0;
	struct fpga_drv_stats s = {};

	for (size_t i = 0; i < n; i++)
		s.bytes += docs[i].len;
	s.docs = n;
	while (done < n) {
		/* Offers for the lanes that have none up. */
		for (unsigned l = 0; l < NLANES; l++) {
			struct lane *ln = &lanes[l];

			if (ln->offering)
				continue;
			if (ln->doc == NONE) {
				if (next == n)
					continue;
				ln->doc = next++;
				ln->off = 0;
				ln->inflight.push_back(ln->doc);
			}
			if (stress != NULL && stress->lane_idle_pct > 0 &&
			    drv_rand(&seed) % 100 < stress->lane_idle_pct)
				continue;
			drv_offer(t, ln, l, docs);
		}
		if (stress != NULL && stress->out_stall_pct > 0) {
			for (unsigned e = 0; e < FPGA_ENGINES; e++) {
				if (stall_left[e] == 0 && drv_rand(&seed) % 100 <
				    stress->out_stall_pct)
					stall_left[e] = 1 + drv_rand(&seed) %
					    (stress->out_stall_burst + 1);
				port_put(t->out_ready, e, 1, stall_left[e] == 0);
				if (stall_left[e] > 0)
					stall_left[e]--;
			}
		}

		/* Low phase: the handshakes of this cycle settle. */
		t->clk = 0;
		t->eval();
		const uint64_t ready = port_get(t->lane_ready, 0, NLANES) &
		    port_get(t->lane_valid, 0, NLANES);
		const uint64_t out = port_get(t->out_valid, 0, FPGA_ENGINES) &
		    port_get(t->out_ready, 0, FPGA_ENGINES);
		for (unsigned e = 0; e < FPGA_ENGINES; e++) {
			if (!((out >> e) & 1))
				continue;
			const unsigned core = static_cast<unsigned>(
			    port_get(t->out_core, 8 * e, 8));
			struct lane *ln = &lanes[e * FPGA_CORES + core];

			if (core >= FPGA_CORES || ln->inflight.empty()) {
				snprintf(err, errlen, "engine %u gave a "
				    "fingerprint for lane %u, which has no "
				    "document in flight", e, core);
				drv_reset(d);
				return -1;
			}
			struct fpga_drv_doc *doc = &docs[ln->inflight.front()];
			ln->inflight.pop_front();
			doc->fp = port_get64(t->out_fp, e);
			doc->empty = static_cast<int>(
			    port_get(t->out_empty, e, 1));
			done++;
		}
		/* Rising edge. */
		t->clk = 1;
		t->eval();
		s.cycles++;

		/* The words taken: on to the next. */
		for (unsigned l = 0; l < NLANES && ready >> l != 0; l++) {
			struct lane *ln = &lanes[l];

			if (!((ready >> l) & 1))
				continue;
			s.words++;
			ln->off += ln->nbytes;
			ln->offering = false;
			port_put(t->lane_valid, l, 1, 0);
			if (ln->last)
				ln->doc = NONE;
		}
		if (ready != 0 || out != 0)
			idle = 0;
		else if (++idle > STALL_LIMIT) {
			snprintf(err, errlen, "the model gave no fingerprint "
			    "and took no word for %llu cycles (%zu of %zu "
			    "documents done)",
			    (unsigned long long)STALL_LIMIT, done, n);
			drv_reset(d);
			return -1;
		}
	}
	port_put(t->lane_valid, 0, NLANES, 0);
	port_put(t->out_ready, 0, FPGA_ENGINES, ~0ULL);
	if (st != NULL)
		*st = s;
	return 0;
}

extern "C" unsigned
fpga_drv_engines(void)
{
	return FPGA_ENGINES;
}

extern "C" unsigned
fpga_drv_cores(void)
{
	return FPGA_CORES;
}

extern "C" unsigned
fpga_drv_counter_bits(void)
{
	return FPGA_COUNTER_W;
}

extern "C" uint64_t
fpga_drv_max_doc(void)
{
	/* (L + 1) / 2 terms at most; counters hold +-(2^(W-1) - 1). */
	if (FPGA_COUNTER_W >= 33)
		return UINT64_MAX;
	return (1ULL << FPGA_COUNTER_W) - 2;
}

extern "C" const char *
fpga_drv_verilator(void)
{
	static const std::string name = std::string(Verilated::productName()) +
	    " " + Verilated::productVersion();

	return name.c_str();
}
