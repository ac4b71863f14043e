#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# liburcu's own test suite on treercu.  Takes liburcu's source package from
# Debian (the version of the installed liburcu-dev), builds its regression,
# unit and benchmark programs against treercu's liburcu API (this tree,
# installed into WORKDIR/prefix, `pkg-config treercu-urcu`; liburcu-cds and
# the atomics stay liburcu's, as docs/from-liburcu.md says), and runs them:
# the rcutorture matrix (every flavor, perf/rperf/uperf/stress, the three
# call_rcu modes), test_urcu_fork, the multi-flavor unit tests, the
# benchmarks in a short matrix, and liburcu's doc/examples (built with
# -Wall -Werror).  Exit 1 when one fails.
#
# --compare also builds the benchmarks against liburcu and prints, per
# configuration, the median reads and writes of both over REPEATS
# interleaved runs and their ratio (treercu / liburcu).  --base SRC adds a
# third column: the same programs on the treercu of another source tree
# (a worktree of an earlier commit), interleaved with the other two.
#
#   usage: scripts/liburcu-suite.sh [--quick] [--compare] [--base SRC] [--repeats N]
#                                   [--programs "urcu urcu_qsbr ..."] [--workdir DIR]
# (--programs: the benchmarks --compare runs, by the names in $progs below)
#
# Needs Debian's source packages (a deb-src entry: `apt-get source liburcu`)
# and liburcu-dev; `--setup-apt` adds the deb-src entry when run as root.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$here/build-liburcu-suite quick=0 compare=0 repeats=5 setup_apt=0 base='' only=''
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1 ;;
	--compare) compare=1 ;;
	--repeats) repeats=$2; shift ;;
	--workdir) work=$2; shift ;;
	--base) base=$(cd "$2" && pwd); compare=1; shift ;;
	--programs) only=$2; shift ;;
	--setup-apt) setup_apt=1 ;;
	*) echo "liburcu-suite: unknown argument '$1'" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
ver=$(dpkg-query -W -f '${Version}' liburcu-dev 2>/dev/null | sed 's/-[^-]*$//') || true
if [ -z "$ver" ]; then
	echo "liburcu-suite: liburcu-dev is not installed (apt-get install liburcu-dev)" >&2
	exit 2
fi

# ---- liburcu's sources ----
src=$work/userspace-rcu-$ver
if [ ! -d "$src/tests" ]; then
	if [ "$setup_apt" = 1 ] && ! apt-get source --print-uris liburcu >/dev/null 2>&1; then
		# shellcheck disable=SC1091
		echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
			"http://deb.debian.org/debian $(. /etc/os-release; echo "$VERSION_CODENAME") main" \
			>/etc/apt/sources.list.d/treercu-deb-src.list
		apt-get update -qq
	fi
	if ! (cd "$work" && apt-get source -qq --download-only "liburcu=$ver-*" >/dev/null 2>&1 ||
	      apt-get source -qq --download-only liburcu >/dev/null 2>&1); then
		echo "liburcu-suite: 'apt-get source liburcu' failed: add a deb-src entry" \
			"(or run with --setup-apt as root)" >&2
		exit 2
	fi
	tar -C "$work" -xjf "$work"/liburcu_"$ver".orig.tar.bz2
fi

# ---- treercu, installed from this tree (and from --base's) ----
install_treercu() {   # SRC NAME: prints the pkg-config directory
	cmake -S "$1" -B "$work/$2-build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DTREERCU_BUILD_TESTS=OFF -DTREERCU_BUILD_EXAMPLES=OFF -DTREERCU_BUILD_TOOLS=OFF >/dev/null
	cmake --build "$work/$2-build" -j"$(nproc)" >/dev/null
	rm -rf "$work/$2-prefix"
	cmake --install "$work/$2-build" --prefix "$work/$2-prefix" >/dev/null
	dirname "$(find "$work/$2-prefix" -name treercu-urcu.pc | head -1)"
}
flags_of() {   # PKGCONFIG_DIR cflags|libs: each program finds its own library (runpath)
	if [ "$2" = cflags ]; then
		PKG_CONFIG_PATH=$1 pkg-config --cflags treercu-urcu
	else
		echo "$(PKG_CONFIG_PATH=$1 pkg-config --libs treercu-urcu) -Wl,-rpath,$(cd "$1/.." && pwd)"
	fi
}
pcdir=$(install_treercu "$here" treercu)
[ -n "$base" ] && base_pcdir=$(install_treercu "$base" base)

# ---- the programs: T_* on treercu, L_* on liburcu ----
bin=$work/bin
mkdir -p "$bin"
T=$src/tests
common="-I$T/utils -I$T/common -idirafter $src/src -g -O2 -D_GNU_SOURCE -DHAVE_RAND_R=1
	-DHAVE_SCHED_GETCPU=1 -DHAVE_SCHED_SETAFFINITY=1 -DHAVE_GETTID=1"
t_cflags="$(flags_of "$pcdir" cflags) $common"
t_libs="$(flags_of "$pcdir" libs) -lurcu-cds -lurcu-common -lpthread"
if [ -n "$base" ]; then
	b_cflags="$(flags_of "$base_pcdir" cflags) $common"
	b_libs="$(flags_of "$base_pcdir" libs) -lurcu-cds -lurcu-common -lpthread"
fi
l_cflags=$common
l_libs="-lurcu -lurcu-qsbr -lurcu-mb -lurcu-signal -lurcu-bp -lurcu-cds -lurcu-common -lpthread"
build_failed=0
build() {   # build PREFIX NAME FLAGS... SOURCES...
	local pfx=$1 name=$2 cflags libs
	shift 2
	case $pfx in
	T) cflags=$t_cflags libs=$t_libs ;;
	B) cflags=$b_cflags libs=$b_libs ;;
	*) cflags=$l_cflags libs=$l_libs ;;
	esac
	# shellcheck disable=SC2086
	if ! gcc $cflags "$@" "$bin/$pfx-tap.o" "$bin/$pfx-yield.o" $libs -o "$bin/${pfx}_$name" \
		2>"$bin/${pfx}_$name.err"; then
		echo "BUILD FAILED ${pfx}_$name: $(grep -m1 error "$bin/${pfx}_$name.err")"
		build_failed=$((build_failed + 1))
	fi
}
B=$T/benchmark U=$T/unit R=$T/regression
bench_progs() {   # PREFIX
	build "$1" urcu "$B/test_urcu.c"
	build "$1" urcu_mb -DRCU_MB "$B/test_urcu.c"
	build "$1" urcu_signal -DRCU_SIGNAL "$B/test_urcu.c"
	build "$1" urcu_qsbr "$B/test_urcu_qsbr.c"
	build "$1" urcu_bp "$B/test_urcu_bp.c"
	build "$1" urcu_gc "$B/test_urcu_gc.c"
	build "$1" urcu_lgc -DTEST_LOCAL_GC "$B/test_urcu_gc.c"
	build "$1" urcu_qsbr_gc "$B/test_urcu_qsbr_gc.c"
	build "$1" urcu_defer "$B/test_urcu_defer.c"
	build "$1" urcu_assign "$B/test_urcu_assign.c"
	build "$1" urcu_lfq "$B/test_urcu_lfq.c"
	build "$1" urcu_lfs_rcu "$B/test_urcu_lfs_rcu.c"
	build "$1" urcu_hash -DRCU_QSBR "$B/test_urcu_hash.c" "$B/test_urcu_hash_rw.c" \
		"$B/test_urcu_hash_unique.c"
}
pfxs=T
[ "$compare" = 1 ] && pfxs="T L"
[ -n "$base" ] && pfxs="T B L"
for pfx in $pfxs; do
	case $pfx in T) cf=$t_cflags ;; B) cf=$b_cflags ;; *) cf=$l_cflags ;; esac
	# shellcheck disable=SC2086
	gcc -c $cf "$T/utils/tap.c" -o "$bin/$pfx-tap.o"
	# shellcheck disable=SC2086
	gcc -c $cf "$T/common/debug-yield.c" -o "$bin/$pfx-yield.o"
	bench_progs "$pfx"
done
for f in MEMBARRIER SIGNAL MB BP; do build T rcutorture_$f -DRCU_$f "$R/urcutorture.c"; done
build T rcutorture_QSBR -DRCU_QSBR -DTORTURE_QSBR "$R/urcutorture.c"
build T urcu_fork "$R/test_urcu_fork.c"
build T multiflavor "$U"/test_urcu_multiflavor.c "$U"/test_urcu_multiflavor-{memb,mb,signal,qsbr,bp}.c
build T multiflavor_dynlink -DDYNAMIC_LINK_TEST "$U"/test_urcu_multiflavor.c \
	"$U"/test_urcu_multiflavor-{memb,mb,signal,qsbr,bp}.c
build T multiflavor_single "$U/test_urcu_multiflavor_single_unit.c"
# liburcu's examples: every flavor's API, the lists and the data structures
examples=()
for f in "$src"/doc/examples/*/*.c; do
	name=example_$(basename "$(dirname "$f")")_$(basename "$f" .c)
	# shellcheck disable=SC2086
	if gcc -Wall -Werror $t_cflags "$f" $t_libs -o "$bin/T_$name" 2>"$bin/T_$name.err"; then
		examples+=("T_$name")
	else
		echo "BUILD FAILED T_$name: $(grep -m1 error "$bin/T_$name.err")"
		build_failed=$((build_failed + 1))
	fi
done

# ---- the runs ----
failed=$build_failed runs=0
run() {   # run PROGRAM ARGS...: exit 0 and no "not ok" line
	local prog=$1 out rc
	shift
	runs=$((runs + 1))
	out=$(cd "$bin" && timeout 300 "./$prog" "$@" 2>&1) && rc=0 || rc=$?
	if [ "$rc" != 0 ] || printf '%s\n' "$out" | grep -q '^not ok'; then
		failed=$((failed + 1))
		echo "FAILED (exit $rc): $prog $*"
		printf '%s\n' "$out" | grep -v '^ok' | tail -5
	fi
}
nproc=$(nproc)
modes="perf rperf uperf stress" cbs="global percpu perthread"
[ "$quick" = 1 ] && modes="stress" cbs="global perthread"
for f in MEMBARRIER SIGNAL MB BP QSBR; do
	for m in $modes; do for c in $cbs; do run T_rcutorture_$f "$nproc" "$m" 1 "callrcu_$c"; done; done
done
run T_urcu_fork
for p in multiflavor multiflavor_dynlink multiflavor_single; do run "T_$p"; done
# (libtreercu-urcu's own dependency, libtreercu, comes from the path)
for e in "${examples[@]}"; do LD_LIBRARY_PATH=$work/treercu-prefix/lib run "$e"; done
configs=("1 1 1" "1 1 1 -d 0 -b 32768" "2 0 1" "1 2 1" "2 2 1 -d 100")
[ "$quick" = 1 ] && configs=("1 1 1" "2 2 1 -d 100")
progs="urcu urcu_mb urcu_signal urcu_qsbr urcu_bp urcu_gc urcu_lgc urcu_qsbr_gc urcu_defer urcu_assign"
for p in $progs; do for c in "${configs[@]}"; do
	# shellcheck disable=SC2086
	run T_$p $c
done; done
for p in urcu_lfq urcu_lfs_rcu; do run T_$p 2 2 1; done
for a in "" "-A" "-s" "-U"; do
	# shellcheck disable=SC2086
	run T_urcu_hash 2 2 1 $a
done
echo "liburcu $ver's tests on treercu: $runs runs, $failed failed (builds failed: $build_failed)"

# ---- side by side ----
if [ "$compare" = 1 ]; then
	echo
	echo "machine: $(nproc) CPUs, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "median of $repeats interleaved 1-s runs; x = treercu / liburcu${base:+; base: $base}"
	field() { awk -v k="$1" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'; }
	median() { sort -n | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : 0)}'; }
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print (b > 0 ? sprintf("%.2fx", a / b) : "-")}'; }
	cols() {   # KEY: "treercu [base] liburcu ratio" for one column group
		local t l b=
		t=$(field "$1" <"$bin/T.runs" | median) l=$(field "$1" <"$bin/L.runs" | median)
		[ -n "$base" ] && b="$(field "$1" <"$bin/B.runs" | median) "
		echo "$t $b$l $(ratio "$t" "$l")"
	}
	if [ -n "$base" ]; then
		printf '%-26s %11s %11s %11s %6s %9s %9s %9s %6s\n' program reads base liburcu x \
			writes base liburcu x
	else
		printf '%-26s %11s %11s %6s %9s %9s %6s\n' program reads liburcu x writes liburcu x
	fi
	for p in ${only:-$progs}; do for c in "${configs[@]}"; do
		for pfx in $pfxs; do : >"$bin/$pfx.runs"; done
		for _ in $(seq "$repeats"); do
			for pfx in $pfxs; do
				# shellcheck disable=SC2086
				(cd "$bin" && timeout 60 "./${pfx}_$p" $c 2>/dev/null | grep SUMMARY) \
					>>"$bin/$pfx.runs" || true
			done
		done
		# shellcheck disable=SC2046,SC2183
		if [ -n "$base" ]; then
			printf '%-26s %11s %11s %11s %6s %9s %9s %9s %6s\n' "$p $c" $(cols nr_reads) \
				$(cols nr_writes)
		else
			printf '%-26s %11s %11s %6s %9s %9s %6s\n' "$p $c" $(cols nr_reads) $(cols nr_writes)
		fi
	done; done
fi
[ "$failed" = 0 ]
