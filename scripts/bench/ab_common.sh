# SPDX-License-Identifier: MIT
# Shared steps of the A/B scripts: run two builds (A = before, B = after)
# alternately, so that both see the machine's load alike, either two builds
# of the tool or a small benchmark built against two build directories'
# libtreercu.a.  Sourced, not run.
#   ab_machine [DETAIL]             print the machine line (CPUs, arch, time, DETAIL)
#   ab_each ROUNDS A B FN           ROUNDS rounds of A then B, each "FN SIDE PATH"
#   ab_build SRC NAME A B           cc SRC against each side's archive into DIR/NAME
#   ab_alternate ROUNDS OUT A B NAME ARGS...
#                                   ROUNDS rounds of A then B, each "DIR/NAME ARGS";
#                                   prints "SIDE: output | load", appends "SIDE output" to OUT
#   ab_median_awk                   an awk function median(arr, n) to prepend to a program

ab_machine() {
	echo "machine: $(nproc) CPUs, $(uname -m), $(date -u '+%Y-%m-%d %H:%M UTC')${1:+; $1}"
}

ab_each() {
	_rounds=$1 _a=$2 _b=$3 _fn=$4
	_i=0
	while [ "$_i" -lt "$_rounds" ]; do
		"$_fn" A "$_a"
		"$_fn" B "$_b"
		_i=$((_i + 1))
	done
}

ab_build() {
	_src=$1 _name=$2
	shift 2
	for _d in "$@"; do
		cc -O2 -I"$(dirname "$0")/../../include" -I"$_d/include" "$_src" "$_d/libtreercu.a" \
		   -lpthread -o "$_d/$_name"
	done
}

ab_alternate() {
	_rounds=$1 _out=$2 _a=$3 _b=$4 _name=$5
	shift 5
	_i=0
	while [ "$_i" -lt "$_rounds" ]; do
		for _side in A B; do
			if [ "$_side" = A ]; then _d=$_a; else _d=$_b; fi
			_res=$("$_d/$_name" "$@")
			echo "$_side: $_res | $(cut -d' ' -f1-3 /proc/loadavg)"
			echo "$_side $_res" >>"$_out"
		done
		_i=$((_i + 1))
	done
}

ab_median_awk='
function median(arr, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && arr[j - 1] > arr[j]; j--) { t = arr[j]; arr[j] = arr[j - 1]; arr[j - 1] = t }
	return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
}'
