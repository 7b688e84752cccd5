/*
 * fpga_drv: drives the Verilator model of the fingerprint accelerator RTL
 * (rtl/simhash_top.v) through its ports, cycle by cycle, as the host side of
 * the hardware would: documents go to the SimHash cores' lanes as 64-bit
 * words, fingerprints come back from the engines' output channels.  It is a
 * simulation of the hardware, not hardware.
 *
 * Scheduling: a lane takes the next document of the run as soon as it has
 * offered every word of its previous one, so the cores stay busy until the
 * documents run out; each lane's fingerprints come back in the order of its
 * documents, and the driver matches them up.
 *
 * The model's parameters are fixed when it is verilated (see the Makefile:
 * FPGA_ENGINES, FPGA_CORES, FPGA_COUNTER_W); fpga_drv_engines() and friends
 * report them.  Not thread-safe: one thread per struct fpga_drv.
 */
#ifndef NDDD_FPGA_DRV_H
#define NDDD_FPGA_DRV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct fpga_drv;

/* One document of a run. */
struct fpga_drv_doc {
	const uint8_t *data;		/* in: accelerator format */
	size_t len;			/* in */
	uint64_t fp;			/* out */
	int empty;			/* out: 1 if the document had no term */
};

/*
 * Stress for the test bench: with these set, lanes offer their words only
 * now and then, and the engines' outputs are not always taken, at random
 * (seeded); 0 for a probability means never.
 */
struct fpga_drv_stress {
	uint64_t seed;
	unsigned lane_idle_pct;		/* a lane with a word waits this often */
	unsigned out_stall_pct;		/* an output is not taken this often */
	unsigned out_stall_burst;	/* ... for this many cycles in a row */
};

/* What a run did. */
struct fpga_drv_stats {
	uint64_t cycles;		/* clock cycles from first word to last
					   fingerprint */
	uint64_t bytes;			/* document bytes */
	uint64_t words;			/* words taken by the engines */
	uint64_t docs;
};

/*
 * A model, reset, computing with fmix64 after sdbm (fmix = 1) or sdbm
 * alone.  Returns NULL with the reason in err when it cannot be made.
 */
struct fpga_drv *fpga_drv_new(int fmix, char *err, size_t errlen);
void fpga_drv_free(struct fpga_drv *d);

/*
 * Runs n documents through the model and fills in their fingerprints.
 * stress may be NULL.  Returns 0, or -1 with the reason in err if the model
 * stopped giving fingerprints (max_cycles without progress): it is then
 * reset, and the documents' outputs are meaningless.
 */
int fpga_drv_run(struct fpga_drv *d, struct fpga_drv_doc *docs, size_t n,
    const struct fpga_drv_stress *stress, struct fpga_drv_stats *st,
    char *err, size_t errlen);

/* The model's parameters. */
unsigned fpga_drv_engines(void);
unsigned fpga_drv_cores(void);		/* per engine */
unsigned fpga_drv_counter_bits(void);
/* The longest document whose bits the counters hold exactly. */
uint64_t fpga_drv_max_doc(void);
/* "Verilator 5.006 2023-01-22" or such. */
const char *fpga_drv_verilator(void);

#ifdef __cplusplus
}
#endif

#endif
