// simhash_engine: a fingerprint engine, after Luo, Najjar and Hristidis:
// CORES SimHash cores (eight in the paper) behind one 64-bit input channel
// and one output channel.
//
// Input: one stream of 64-bit words per core (lane), each a sequence of
// documents in the core's format (see simhash_core.v).  The engine takes one
// word per cycle, the channel's width, from the lanes in round-robin order
// (lanes whose core has room and that offer a word): with full words, each
// of eight cores gets a word every eight cycles and works at one byte per
// cycle, eight bytes per cycle for the engine.  lane_ready[i] is high in the
// cycle lane i's word is taken.
//
// Output: the output multiplexer takes the cores' fingerprints one per
// cycle, in round-robin order, into an output register (valid/ready).  A
// core whose fingerprint waits holds (simhash_core.v), so with out_ready
// low nothing is lost: the cores stop, then the lanes.  out_core names the
// core (lane) a fingerprint is from (so CORES is at most 256); each lane's
// fingerprints come out in the order of its documents.
`default_nettype none

module simhash_engine #(
	parameter integer CORES = 8,
	parameter integer COUNTER_W = 32
) (
	input  wire                 clk,
	input  wire                 rst,
	input  wire                 fmix_en,

	input  wire [CORES-1:0]     lane_valid,
	output wire [CORES-1:0]     lane_ready,
	input  wire [64*CORES-1:0]  lane_data,
	input  wire [4*CORES-1:0]   lane_nbytes,
	input  wire [CORES-1:0]     lane_last,

	output reg                  out_valid,
	input  wire                 out_ready,
	output reg  [63:0]          out_fp,
	output reg                  out_empty,
	output reg  [7:0]           out_core
);
	wire [CORES-1:0]    core_ready;
	wire [CORES-1:0]    res_valid;
	wire [CORES-1:0]    res_empty;
	wire [64*CORES-1:0] res_fp;
	wire [CORES-1:0]    res_take;

	// ---- input: one word per cycle, round robin ---------------------------
	wire       in_found;
	wire [7:0] in_idx;

	simhash_rr_arbiter #(.N(CORES)) in_arb (
		.clk(clk), .rst(rst),
		.req(lane_valid & core_ready),
		.advance(1'b1),
		.found(in_found), .idx(in_idx)
	);

	// The channel: the granted lane's word, offered to every core.
	wire [69*CORES-1:0] lane_word;
	wire [68:0] ch_word = lane_word[69 * in_idx +: 69];
	wire [63:0] ch_data = ch_word[63:0];
	wire [3:0]  ch_nbytes = ch_word[67:64];
	wire        ch_last = ch_word[68];

	// ---- output multiplexer -----------------------------------------------
	wire       out_found;
	wire [7:0] out_idx;
	wire       out_load = out_found && (!out_valid || out_ready);
	wire [65*CORES-1:0] res_word;	// {empty, fp} of each core
	wire [64:0] out_word = res_word[65 * out_idx +: 65];

	simhash_rr_arbiter #(.N(CORES)) out_arb (
		.clk(clk), .rst(rst),
		.req(res_valid),
		.advance(out_load),
		.found(out_found), .idx(out_idx)
	);

	always @(posedge clk) begin
		if (rst) begin
			out_valid <= 1'b0;
			out_fp <= 64'd0;
			out_empty <= 1'b0;
			out_core <= 8'd0;
		end else if (out_load) begin
			out_valid <= 1'b1;
			out_fp <= out_word[63:0];
			out_empty <= out_word[64];
			out_core <= out_idx;
		end else if (out_ready) begin
			out_valid <= 1'b0;
		end
	end

	// ---- the cores ------------------------------------------------------
	genvar i;
	generate
		for (i = 0; i < CORES; i = i + 1) begin : g_core
			wire granted = in_found && in_idx == i;

			assign lane_ready[i] = granted;
			assign lane_word[69 * i +: 69] = {lane_last[i],
			    lane_nbytes[4 * i +: 4], lane_data[64 * i +: 64]};
			assign res_word[65 * i +: 65] = {res_empty[i],
			    res_fp[64 * i +: 64]};
			assign res_take[i] = out_load && out_idx == i;

			simhash_core #(.COUNTER_W(COUNTER_W)) core (
				.clk(clk), .rst(rst), .fmix_en(fmix_en),
				.in_valid(granted),
				.in_ready(core_ready[i]),
				.in_data(ch_data),
				.in_nbytes(ch_nbytes),
				.in_last(ch_last),
				.res_valid(res_valid[i]),
				.res_fp(res_fp[64 * i +: 64]),
				.res_empty(res_empty[i]),
				.res_take(res_take[i])
			);
		end
	endgenerate
endmodule

`default_nettype wire
