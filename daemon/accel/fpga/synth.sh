#!/bin/sh
# synth.sh: synthesizes the fingerprint accelerator RTL with Yosys and
# reports its size; fails (exit 1) on any latch, on a design problem that
# Yosys's check finds (multiple drivers, combinational loops, undriven
# nets), or on a synthesis error.
#
#   synth.sh [-e ENGINES] [-o LOGDIR] [-g] [-t TOP FILE...]
#
#   -e  engines of 8 SimHash cores in simhash_top (default 1: one engine,
#       what one FPGA of the paper holds; the figures scale linearly)
#   -o  where the Yosys logs go (default: a temporary directory, removed)
#   -g  the generic flow only
#   -t  another top module and its files (the tests give it a design with a
#       latch, which must fail)
#
# Two flows:
#   generic  Yosys's technology-independent "synth": cells and flip-flops;
#   xc6v     "synth_xilinx -family xc6v" (Virtex-6, the family of the
#            paper's LX760 FPGAs): LUTs, flip-flops, carry chains, DSP48E1
#            slices.  An estimate from synthesis alone: no place and route,
#            no timing.
# The hierarchy is kept, so each module is synthesized once and the totals
# count its instances.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
engines=1
logdir=""
generic_only=0
top=simhash_top
files=""

while getopts "e:o:gt:" opt; do
	case "$opt" in
	e) engines=$OPTARG ;;
	o) logdir=$OPTARG ;;
	g) generic_only=1 ;;
	t) top=$OPTARG ;;
	*) echo "usage: synth.sh [-e ENGINES] [-o LOGDIR] [-g] [-t TOP FILE...]" >&2
	   exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ "$top" = simhash_top ]; then
	files="$here/rtl/simhash_top.v $here/rtl/simhash_engine.v \
$here/rtl/simhash_core.v $here/rtl/simhash_rr_arbiter.v"
	params="chparam -set ENGINES $engines simhash_top;"
else
	files="$*"
	params=""
fi
[ -n "$files" ] || { echo "synth.sh: no files" >&2; exit 2; }
command -v yosys >/dev/null || { echo "synth.sh: yosys not found" >&2; exit 2; }

cleanup=""
if [ -z "$logdir" ]; then
	logdir=$(mktemp -d)
	cleanup=$logdir
fi
mkdir -p "$logdir"
trap '[ -z "$cleanup" ] || rm -rf "$cleanup"' EXIT

# Reading, elaboration, processes to netlists; then no latch may be left
# and the netlist must pass check.  $dlatch and friends are what proc makes
# of a signal that keeps its value in some branch of a combinational block.
front="read_verilog -defer $files; $params hierarchy -check -top $top; \
proc; \
select -assert-none t:\$dlatch t:\$adlatch t:\$dlatchsr t:\$sr; \
opt_clean; check -assert;"
latch_cells="t:\$_DLATCH_* t:\$_DLATCHSR_* t:\$_SR_* t:LDCE t:LDPE"

run() {
	flow=$1
	shift
	if ! yosys -l "$logdir/$flow.log" -q -p "$front $*; \
	    select -assert-none $latch_cells; tee -o $logdir/$flow.stat stat" \
	    >/dev/null 2>&1; then
		echo "synth.sh: $flow: FAILED (latch, design problem or error);" \
		    "see below" >&2
		grep -E "ERROR|Assertion|Warning" "$logdir/$flow.log" | head -20 >&2
		exit 1
	fi
}

# The totals of a stat report: those of its "design hierarchy" block, or
# of its only module.  count FILE REGEX sums the cell types matching REGEX;
# cells FILE gives all cells.
stat_awk='
	/^=== / { blk++; if ($0 ~ /design hierarchy/) hier = blk; next }
	/Number of cells:/ { cur = blk; total[blk] = $4; next }
	cur == blk && NF == 2 && $2 ~ /^[0-9]+$/ {
		cnt[blk, $1] = $2; types[blk] = types[blk] " " $1
	}
	END {
		b = hier ? hier : blk
		if (pat == "") { print total[b]; exit }
		s = 0; n = split(types[b], t, " ")
		for (i = 1; i <= n; i++) if (t[i] ~ pat) s += cnt[b, t[i]]
		print s
	}'
count() {
	awk -v pat="$2" "$stat_awk" "$1"
}
cells() {
	awk -v pat="" "$stat_awk" "$1"
}

start=$(date +%s)
run generic "synth -top $top"
echo "synth.sh: $top ($engines engine(s) x 8 cores), generic synth:" \
    "$(cells "$logdir/generic.stat") cells," \
    "$(count "$logdir/generic.stat" 'DFF') flip-flops, no latch"
if [ "$generic_only" = 0 ]; then
	run xc6v "synth_xilinx -family xc6v -top $top -noiopad"
	s=$logdir/xc6v.stat
	echo "synth.sh: $top ($engines engine(s) x 8 cores), xc6v estimate:" \
	    "$(count "$s" '^LUT[1-6]$') LUTs," \
	    "$(count "$s" '^FD[RSCP]E') flip-flops," \
	    "$(count "$s" '^CARRY4$') CARRY4," \
	    "$(count "$s" '^DSP48E1$') DSP48E1," \
	    "$(count "$s" '^MUXF[78]$') MUXF7/8," \
	    "$(cells "$s") cells, no latch"
fi
echo "synth.sh: done in $(($(date +%s) - start)) s"
