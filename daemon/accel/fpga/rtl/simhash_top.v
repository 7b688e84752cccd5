// simhash_top: the fingerprint accelerator, ENGINES fingerprint engines of
// CORES SimHash cores each (the paper's Convey HC-2ex: four FPGAs, 32 cores
// in all, at 150 MHz).  Each engine has its own input lanes and output
// channel; engine e's lanes are lane bits [e * CORES, (e + 1) * CORES).
// Ports are the engines' ports side by side (see simhash_engine.v).
`default_nettype none

module simhash_top #(
	parameter integer ENGINES = 4,
	parameter integer CORES = 8,
	parameter integer COUNTER_W = 32
) (
	input  wire                         clk,
	input  wire                         rst,
	input  wire                         fmix_en,

	input  wire [ENGINES*CORES-1:0]     lane_valid,
	output wire [ENGINES*CORES-1:0]     lane_ready,
	input  wire [64*ENGINES*CORES-1:0]  lane_data,
	input  wire [4*ENGINES*CORES-1:0]   lane_nbytes,
	input  wire [ENGINES*CORES-1:0]     lane_last,

	output wire [ENGINES-1:0]           out_valid,
	input  wire [ENGINES-1:0]           out_ready,
	output wire [64*ENGINES-1:0]        out_fp,
	output wire [ENGINES-1:0]           out_empty,
	output wire [8*ENGINES-1:0]         out_core
);
	genvar e;
	generate
		for (e = 0; e < ENGINES; e = e + 1) begin : g_engine
			simhash_engine #(
				.CORES(CORES), .COUNTER_W(COUNTER_W)
			) engine (
				.clk(clk), .rst(rst), .fmix_en(fmix_en),
				.lane_valid(lane_valid[CORES * e +: CORES]),
				.lane_ready(lane_ready[CORES * e +: CORES]),
				.lane_data(lane_data[64 * CORES * e +: 64 * CORES]),
				.lane_nbytes(lane_nbytes[4 * CORES * e +: 4 * CORES]),
				.lane_last(lane_last[CORES * e +: CORES]),
				.out_valid(out_valid[e]),
				.out_ready(out_ready[e]),
				.out_fp(out_fp[64 * e +: 64]),
				.out_empty(out_empty[e]),
				.out_core(out_core[8 * e +: 8])
			);
		end
	endgenerate
endmodule

`default_nettype wire
