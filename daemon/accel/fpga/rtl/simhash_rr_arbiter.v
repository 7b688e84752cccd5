// simhash_rr_arbiter: a round-robin arbiter.  Each cycle it grants one of
// the requests, searching from the one after the last request served, so
// that every requester is served within N grants.  Combinational grant,
// registered pointer.
`default_nettype none

module simhash_rr_arbiter #(
	parameter integer N = 8
) (
	input  wire         clk,
	input  wire         rst,
	input  wire [N-1:0] req,
	input  wire         advance,	// the grant is used this cycle
	output reg          found,
	output reg  [7:0]   idx		// the granted request, when found
);
	reg [7:0] ptr;			// the first in line
	integer k, j;

	always @* begin
		found = 1'b0;
		idx = 8'd0;
		// From the last in line to the first: the first that asks wins.
		for (k = N - 1; k >= 0; k = k - 1) begin
			j = {24'd0, ptr} + k;
			if (j >= N)
				j = j - N;
			if (req[j]) begin
				found = 1'b1;
				idx = j[7:0];
			end
		end
	end

	always @(posedge clk) begin
		if (rst)
			ptr <= 8'd0;
		else if (advance && found)
			ptr <= {24'd0, idx} == N - 1 ? 8'd0 : idx + 8'd1;
	end
endmodule

`default_nettype wire
