// simhash_core: one SimHash core.  It computes the 64-bit simhash of one
// document at a time from the accelerator format (terms separated by SPACE
// bytes, every other byte part of a term), taking one byte per clock cycle.
//
// The fingerprint is the one of DESIGN section 4 (docs/simhash.md):
//   term hash  sdbm, h = h * 65599 + c (= c + (h << 6) + (h << 16) - h),
//              then MurmurHash3's fmix64 when fmix_en is 1;
//   weights    every occurrence of a term counts once: each term ending
//              adds +1 to counter i if bit i of its hash is 1, else -1;
//   bit i      1 iff counter i >= 0 (ties give 1);
//   empty      a document without a term is flagged, not fingerprinted.
//
// Input: 64-bit words of one document after the other, byte 0 of a word in
// bits 7:0 and first.  in_nbytes says how many bytes of the word are valid
// (1 to 8), in_last marks the last word of a document.  A document of no
// bytes is one word with in_nbytes = 0 and in_last = 1.  The end of a
// document is this side band, not a NUL byte: NUL is a term byte in the
// accelerator format.  The core holds one word in work and one waiting
// (in_ready while a slot is free), so a feeder that serves it once every
// eight cycles with full words keeps it at one byte per cycle.
//
// Pipeline (one slot per byte, moving every cycle unless held):
//   B   byte stage: sdbm update, or on the SPACE (or the document's last
//       byte) that ends a term, the term's hash goes out in slot P0;
//   P1  xor-shift and the first multiplication of fmix64;
//   P2  xor-shift and the second multiplication;
//   C   the last xor-shift, the 64 counter updates, and on the end of the
//       document the fingerprint into the result register.
// Slots carry "term" (a hash to count) and "eod" (the document ends after
// it); the counters are reset when the fingerprint is taken, so the next
// document's bytes follow the previous one's without a gap.  In sdbm mode
// the two multiplications are bypassed but the latency is the same.
//
// Result: res_valid with res_fp and res_empty, until the engine's output
// multiplexer takes it (res_take).  When an end of document reaches stage C
// while the result register is still full, the whole core holds (and stops
// taking words): no fingerprint is ever overwritten.
//
// Counters are COUNTER_W bits, two's complement.  A document of L bytes has
// at most (L + 1) / 2 terms, so any document of at most 2^COUNTER_W - 2 bytes
// gives exact bits; the host sends nothing longer.
`default_nettype none

module simhash_core #(
	parameter integer COUNTER_W = 32
) (
	input  wire        clk,
	input  wire        rst,		// synchronous, active high
	input  wire        fmix_en,	// registered; change it only when idle

	input  wire        in_valid,
	output wire        in_ready,
	input  wire [63:0] in_data,
	input  wire [3:0]  in_nbytes,
	input  wire        in_last,

	output reg         res_valid,
	output reg  [63:0] res_fp,
	output reg         res_empty,
	input  wire        res_take
);
	localparam [63:0] FMIX_C1 = 64'hff51afd7ed558ccd;
	localparam [63:0] FMIX_C2 = 64'hc4ceb9fe1a85ec53;
	localparam [7:0]  SPACE = 8'h20;

	// ---- word buffers: cur (in work), nxt (waiting) ----------------------
	reg        cur_valid, nxt_valid;
	reg [63:0] cur_data, nxt_data;
	reg [3:0]  cur_n, nxt_n;	// bytes left in cur; bytes in nxt
	reg        cur_last, nxt_last;

	// ---- pipeline slots -----------------------------------------------
	reg        p0_term, p0_eod;	// after B
	reg [63:0] p0_hash;
	reg        p1_term, p1_eod;
	reg [63:0] p1_hash;
	reg        p2_term, p2_eod;
	reg [63:0] p2_hash;

	// ---- byte stage state -----------------------------------------------
	reg [63:0] h;			// sdbm of the term so far
	reg        in_term;		// h holds a term's first bytes

	// ---- counter stage state (the counters are in g_bit) ---------------
	reg any_term;			// the document has a term

	// The mode, a configuration register next to the datapath.
	reg fmix;

	always @(posedge clk)
		fmix <= fmix_en;

	// An end of document waits at C for the result register.
	wire hold = p2_eod && res_valid;
	wire step = cur_valid && !hold;
	// cur is used up after this cycle (or is empty already).
	wire cur_done = !cur_valid || (step && cur_n <= 4'd1);
	assign in_ready = !nxt_valid || cur_done;

	// ---- byte stage B -----------------------------------------------------
	wire [7:0]  b = cur_data[7:0];
	wire        has_byte = cur_n != 4'd0;
	wire        is_term_byte = has_byte && b != SPACE;
	wire        final_byte = cur_last && cur_n <= 4'd1;
	// h * 65599 + c, written as the paper's shifts and adds.
	wire [63:0] h_next = {56'd0, b} + (h << 6) + (h << 16) - h;

	always @(posedge clk) begin
		if (rst) begin
			cur_valid <= 1'b0;
			nxt_valid <= 1'b0;
			cur_n <= 4'd0;
			cur_last <= 1'b0;
			nxt_n <= 4'd0;
			nxt_last <= 1'b0;
			cur_data <= 64'd0;
			nxt_data <= 64'd0;
		end else begin
			// cur: shift on, or take nxt (or the incoming word).
			if (cur_done) begin
				if (nxt_valid) begin
					cur_valid <= 1'b1;
					cur_data <= nxt_data;
					cur_n <= nxt_n;
					cur_last <= nxt_last;
				end else begin
					cur_valid <= 1'b0;
				end
			end else if (step) begin
				cur_data <= {8'd0, cur_data[63:8]};
				cur_n <= cur_n - 4'd1;
			end
			// nxt: filled when free or moving on to cur.
			if (in_valid && in_ready) begin
				nxt_valid <= 1'b1;
				nxt_data <= in_data;
				nxt_n <= in_nbytes > 4'd8 ? 4'd8 : in_nbytes;
				nxt_last <= in_last;
			end else if (cur_done) begin
				nxt_valid <= 1'b0;
			end
		end
	end

	always @(posedge clk) begin
		if (rst) begin
			h <= 64'd0;
			in_term <= 1'b0;
			p0_term <= 1'b0;
			p0_eod <= 1'b0;
			p0_hash <= 64'd0;
		end else if (!hold) begin
			p0_term <= 1'b0;
			p0_eod <= 1'b0;
			if (step) begin
				if (is_term_byte && !final_byte) begin
					h <= h_next;
					in_term <= 1'b1;
				end else if (has_byte || final_byte) begin
					// A SPACE, the last byte, or an empty last
					// word: the term in progress (if any) ends.
					// (An empty word that is not the last is
					// nothing.)
					p0_term <= is_term_byte || in_term;
					p0_hash <= is_term_byte ? h_next : h;
					p0_eod <= final_byte;
					h <= 64'd0;
					in_term <= 1'b0;
				end
			end
		end
	end

	// ---- fmix64 stages P1, P2 ---------------------------------------------
	wire [63:0] x0 = p0_hash ^ (p0_hash >> 33);
	wire [63:0] x1 = p1_hash ^ (p1_hash >> 33);

	always @(posedge clk) begin
		if (rst) begin
			p1_term <= 1'b0;
			p1_eod <= 1'b0;
			p1_hash <= 64'd0;
			p2_term <= 1'b0;
			p2_eod <= 1'b0;
			p2_hash <= 64'd0;
		end else if (!hold) begin
			p1_term <= p0_term;
			p1_eod <= p0_eod;
			p1_hash <= fmix ? x0 * FMIX_C1 : p0_hash;
			p2_term <= p1_term;
			p2_eod <= p1_eod;
			p2_hash <= fmix ? x1 * FMIX_C2 : p1_hash;
		end
	end

	// ---- counter stage C ------------------------------------------------
	wire [63:0] t = fmix ? p2_hash ^ (p2_hash >> 33) : p2_hash;
	reg  [63:0] fp_next;
	reg  [COUNTER_W-1:0] c;
	// Counter i is cnt[COUNTER_W * i +: COUNTER_W].
	reg  [64*COUNTER_W-1:0] cnt;
	integer k;

	always @(posedge clk) begin
		if (rst) begin
			cnt <= {64*COUNTER_W{1'b0}};
			any_term <= 1'b0;
			res_valid <= 1'b0;
			res_fp <= 64'd0;
			res_empty <= 1'b0;
		end else begin
			if (res_take)
				res_valid <= 1'b0;
			// The counters move only when a slot has something.
			if (!hold && (p2_term || p2_eod)) begin
				/* verilator lint_off BLKSEQ */
				for (k = 0; k < 64; k = k + 1) begin
					c = cnt[COUNTER_W * k +: COUNTER_W];
					// +1 for a 1 bit, -1 for a 0 bit.
					if (p2_term)
						c = t[k] ? c + 1'b1 : c - 1'b1;
					// Bit k: counter >= 0, with the
					// document's last term.
					fp_next[k] = !c[COUNTER_W-1];
					cnt[COUNTER_W * k +: COUNTER_W] <=
					    p2_eod ? {COUNTER_W{1'b0}} : c;
				end
				/* verilator lint_on BLKSEQ */
				if (p2_eod) begin
					res_valid <= 1'b1;
					res_fp <= fp_next;
					res_empty <= !(any_term || p2_term);
					any_term <= 1'b0;
				end else begin
					any_term <= 1'b1;
				end
			end
		end
	end
endmodule

`default_nettype wire
