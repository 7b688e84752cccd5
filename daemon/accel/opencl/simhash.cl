/*
 * simhash.cl: nddd's fingerprint kernel, OpenCL C 1.2, for any OpenCL
 * device.  The opencl plugin (opencl.c) builds it from the copy embedded in
 * nddd-accel-opencl.so; an FPGA toolchain compiles this file offline
 * (docs/accelerators.md).
 *
 * One work-group per piece: a piece is a whole document, or a part of one
 * that the host cut at a SPACE because the document did not fit in one
 * transfer.  Input is the accelerator format: terms separated by SPACE
 * bytes, every other byte part of a term.  The fingerprint is DESIGN
 * section 4's: sdbm over each term's bytes (h = h * 65599 + c), then
 * MurmurHash3's fmix64 unless fmix is 0; each occurrence counts once; bit i
 * is 1 iff at least as many terms have bit i set as clear (ties give 1).
 *
 * The work-items of a group share the piece: item j takes the terms that
 * start in its segment of the bytes, reading on past the segment's end to
 * finish its last one, and counts for each bit how many of its terms have
 * it set (eight bits at once, in the bytes of a word).  The counts meet in local memory; item 0 writes the piece's term
 * count and, for a whole document, its fingerprint, or for a part, the
 * counts themselves, which the host adds up across the parts.
 *
 * Arguments:
 *   pieces  per piece (off, len, flags, 0): its bytes are data[off, off +
 *           len); flags bit 0: a part of a document, whose counts go to
 *           counts[65 * (flags >> 1) ...] (64 bit counts, then the terms)
 *   data    the bytes of the pieces, each followed by a SPACE (not part
 *           of it) that ends its last term
 *   fmix    1: sdbm then fmix64; 0: sdbm alone (the paper's)
 *   fps     per piece: the fingerprint of a whole document
 *   nterms  per piece: its number of terms (0: an empty document)
 *   counts  the parts' counts
 *   lsum    65 uints of local memory
 */

#define NDDD_SPACE	((uchar)0x20)
#define NDDD_PART	1u

/* MurmurHash3's 64-bit finalizer. */
static ulong
nddd_fmix64(ulong h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdUL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53UL;
	h ^= h >> 33;
	return h;
}

/* Adds the byte counters of acc to ones and clears them. */
static void
nddd_flush(ulong *acc, uint *ones)
{
	uint r, j;

	for (r = 0; r < 8; r++) {
		for (j = 0; j < 8; j++)
			ones[8 * j + r] += (uint)(acc[r] >> (8 * j)) & 0xffu;
		acc[r] = 0;
	}
}

__kernel void
nddd_simhash(__global const uint4 *pieces, __global const uchar *data,
    const uint fmix, __global ulong *fps, __global uint *nterms,
    __global uint *counts, __local uint *lsum)
{
	const uint p = get_group_id(0);
	const uint lid = get_local_id(0);
	const uint ls = get_local_size(0);
	const uint4 pc = pieces[p];
	__global const uchar *d = data + pc.x;
	const uint len = pc.y;
	const uint seg = (len + ls - 1) / ls;
	/*
	 * Counts of set bits, 8 bits at a time: byte j of acc[r] counts bit
	 * 8 * j + r of the hashes, for up to 255 terms; then they go into
	 * ones[].
	 */
	ulong acc[8];
	uint ones[64];
	uint n = 0, pend = 0, i, k, r, b, e;

	for (k = 0; k < 64; k++)
		ones[k] = 0;
	for (r = 0; r < 8; r++)
		acc[r] = 0;
	for (k = lid; k < 65; k += ls)
		lsum[k] = 0;
	barrier(CLK_LOCAL_MEM_FENCE);

	/* This item's segment; a term begun before it is not its own. */
	b = min(lid * seg, len);
	e = min(b + seg, len);
	i = b;
	if (i > 0 && d[i - 1] != NDDD_SPACE)
		while (i < e && d[i] != NDDD_SPACE)
			i++;
	while (i < e) {
		uchar c = d[i];
		ulong h = 0;

		if (c == NDDD_SPACE) {
			i++;
			continue;
		}
		/* A term starts here: to its end, past e if need be (the
		 * SPACE after the piece stops the last one). */
		do {
			h = h * 65599UL + c;
			c = d[++i];
		} while (c != NDDD_SPACE);
		if (fmix)
			h = nddd_fmix64(h);
		n++;
		for (r = 0; r < 8; r++)
			acc[r] += (h >> r) & 0x0101010101010101UL;
		if (++pend == 255) {
			nddd_flush(acc, ones);
			pend = 0;
		}
	}
	nddd_flush(acc, ones);

	if (ls == 1) {
		for (k = 0; k < 64; k++)
			lsum[k] = ones[k];
		lsum[64] = n;
	} else if (n > 0) {
		for (k = 0; k < 64; k++)
			if (ones[k] != 0)
				atomic_add(&lsum[k], ones[k]);
		atomic_add(&lsum[64], n);
	}
	barrier(CLK_LOCAL_MEM_FENCE);
	if (lid != 0)
		return;

	n = lsum[64];
	nterms[p] = n;
	if (pc.z & NDDD_PART) {
		__global uint *out = counts + 65 * (pc.z >> 1);

		for (k = 0; k < 65; k++)
			out[k] = lsum[k];
	} else {
		ulong fp = 0;

		/* ones >= n - ones: ties give 1. */
		for (k = 0; k < 64; k++)
			if (2UL * lsum[k] >= (ulong)n)
				fp |= 1UL << k;
		fps[p] = fp;
	}
}
