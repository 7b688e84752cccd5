// latch_example: a design with a latch, for the synthesis check's test:
// daemon/accel/fpga/synth.sh must refuse it.  (q keeps its value while en
// is low: a combinational block that infers a latch.)
module latch_example (
	input  wire en,
	input  wire d,
	output reg  q
);
	always @*
		if (en)
			q = d;
endmodule
