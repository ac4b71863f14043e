#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The public headers in a user's file, with every compiler, language and
# standard a user may pick:
#   - each header alone, all of them together in both orders, and
#     tests/api/headers/use.c (every inline function and macro of the API), as C
#     (gcc, clang: -std=c11 -pedantic, -std=gnu11) and as C++ (g++, clang++:
#     -std=c++17, -std=c++20, -pedantic), all with -Wall -Wextra -Werror
#     -Wcast-qual -Wshadow -Wundef, with and without TREERCU_NO_SHORT_NAMES;
#     the C++ headers (*.hpp) alone and after all the C ones, as C++;
#   - beside liburcu's headers (when installed), in both orders, with
#     TREERCU_NO_SHORT_NAMES; without it, liburcu first is refused with a
#     message naming TREERCU_NO_SHORT_NAMES; tests/api/headers/beside_liburcu.c
#     linked with both libraries and run;
#   - tests/api/headers/strict_warnings.c (the inline code and macros in a
#     program's file) under the strictest warning sets: clang -Weverything
#     as C and C++, gcc and g++ with the cast, conversion and null-pointer
#     warnings (-Wold-style-cast, -Wzero-as-null-pointer-constant, ...);
#   - use.c linked with the library and run, as C and as C++;
#   - tests/api/headers/readside.c compiled as C and as C++ by each compiler
#     family at -O2: the two disassemblies must be identical.
# A compiler that is not installed is skipped with a note (scripts/deps.sh
# installs them all).  Exits 0 when everything passed, 1 otherwise, naming
# each failure.
#
# usage: header_matrix.sh SRC_DIR WORK_DIR [LIBRARY [SANITIZE [FENCED [CONFIG_INC]]]]
#   LIBRARY   the built treercu library to link use.c with ("" to skip)
#   SANITIZE  the build's TREERCU_SANITIZE (linking is skipped when set:
#             the sanitizer runtimes of gcc and clang do not mix)
#   FENCED    ON when the build forces the fenced read side (the header
#             then expands other code: compile it that way too)
#   CONFIG_INC the directory holding the build's generated treercu/config.h
#             (the build tree's include/; an installed copy has it beside
#             the other headers)
set -u

src=${1:?usage: header_matrix.sh SRC_DIR WORK_DIR [LIBRARY [SANITIZE [FENCED]]]}
work=${2:?usage: header_matrix.sh SRC_DIR WORK_DIR [LIBRARY [SANITIZE [FENCED]]]}
lib=${3:-}
sanitize=${4:-}
fenced=${5:-OFF}
config_inc=${6:-}

inc="$src/include"
mkdir -p "$work" || exit 1
fail=0
ran=0
defs=()
case "$fenced" in ON|on|1|TRUE|true) defs+=(-DTREERCU_FENCED=1) ;; esac
[ -n "$config_inc" ] && defs+=(-I"$config_inc")

warn=(-Wall -Wextra -Werror -Wcast-qual -Wshadow -Wundef)
c_modes=("-std=c11 -pedantic" "-std=gnu11")
cxx_modes=("-std=c++17 -pedantic" "-std=c++20 -pedantic")

have() { command -v "$1" >/dev/null 2>&1; }

# compile LABEL COMPILER LANG(c|c++) "MODE" FILE [extra flags...]
compile() {
	local label=$1 cc=$2 lang=$3 mode=$4 file=$5
	shift 5
	local log="$work/last.log"
	ran=$((ran + 1))
	# shellcheck disable=SC2086  # MODE is a list of flags
	if ! "$cc" -x "$lang" $mode "${warn[@]}" "${defs[@]}" -I"$inc" "$@" \
		-c "$file" -o "$work/out.o" >"$log" 2>&1; then
		echo "FAIL: $label: $cc -x $lang $mode $* $(basename "$file")"
		sed -n '1,12p' "$log"
		fail=1
		return 1
	fi
	return 0
}

# The translation units: each header alone, then together in both orders.
headers=()
for h in "$inc"/treercu/*.h; do
	headers+=("treercu/$(basename "$h")")
done
tus=()
for h in "${headers[@]}"; do
	f="$work/alone_$(basename "$h" .h).c"
	printf '#include <%s>\n#include <%s>\nint header_matrix_tu;\n' "$h" "$h" >"$f"
	tus+=("$f")
done
f="$work/together.c"
: >"$f"
for h in "${headers[@]}"; do printf '#include <%s>\n' "$h" >>"$f"; done
printf 'int header_matrix_tu;\n' >>"$f"
tus+=("$f")
f="$work/together_rev.c"
: >"$f"
for ((i = ${#headers[@]} - 1; i >= 0; i--)); do printf '#include <%s>\n' "${headers[i]}" >>"$f"; done
printf 'int header_matrix_tu;\n' >>"$f"
tus+=("$f")
tus+=("$src/tests/api/headers/use.c")
# C++ only: the C++ headers alone, and after every C header.
cxx_tus=()
for h in "$inc"/treercu/*.hpp; do
	[ -e "$h" ] || continue
	hb="treercu/$(basename "$h")"
	f="$work/alone_$(basename "$h" .hpp)_hpp.cc"
	printf '#include <%s>\n#include <%s>\nint header_matrix_tu;\n' "$hb" "$hb" >"$f"
	cxx_tus+=("$f")
	f="$work/together_$(basename "$h" .hpp)_hpp.cc"
	: >"$f"
	for c in "${headers[@]}"; do printf '#include <%s>\n' "$c" >>"$f"; done
	printf '#include <%s>\nint header_matrix_tu;\n' "$hb" >>"$f"
	cxx_tus+=("$f")
done

for names in short prefixed; do
	nd=()
	[ "$names" = prefixed ] && nd=(-DTREERCU_NO_SHORT_NAMES)
	for cc in gcc clang; do
		if ! have "$cc"; then echo "skip: $cc not installed"; continue; fi
		for mode in "${c_modes[@]}"; do
			for tu in "${tus[@]}"; do
				compile "C $names" "$cc" c "$mode" "$tu" "${nd[@]}"
			done
		done
	done
	for cxx in g++ clang++; do
		if ! have "$cxx"; then echo "skip: $cxx not installed"; continue; fi
		for mode in "${cxx_modes[@]}"; do
			for tu in "${tus[@]}" "${cxx_tus[@]}"; do
				compile "C++ $names" "$cxx" c++ "$mode" "$tu" "${nd[@]}"
			done
		done
	done
done

# Straight from the source tree, with no configured build on the include
# path (a program that vendors the headers): <treercu/options.h> supplies a
# default build's options.  Each header alone and all together, as C11
# and as C++11 and C++17 (rcu.hpp: C++17), with both compiler families.
for pair in "gcc c -std=c11" "clang c -std=c11" "g++ c++ -std=c++11" "g++ c++ -std=c++17" \
	    "clang++ c++ -std=c++11" "clang++ c++ -std=c++17"; do
	read -r cc lang std <<<"$pair"
	have "$cc" || continue
	for tu in "${tus[@]}" "${cxx_tus[@]}"; do
		case "$tu" in
		*.cc) [ "$lang" = c++ ] && [ "$std" = -std=c++17 ] || continue ;;
		*/use.c) continue ;;   # the API's macros and inline code: above
		esac
		ran=$((ran + 1))
		if ! "$cc" -x "$lang" "$std" -pedantic "${warn[@]}" -I"$inc" -c "$tu" \
			-o "$work/out.o" >"$work/last.log" 2>&1; then
			echo "FAIL: source tree alone: $cc -x $lang $std $(basename "$tu")"
			sed -n '1,12p' "$work/last.log"
			fail=1
		fi
	done
done

# The strictest warning sets a program may build with: nothing of ours in
# its file may warn (C++ casts and nullptr in C++, no reserved names).
strict=$src/tests/api/headers/strict_warnings.c
gstrict=(-Wall -Wextra -Wpedantic -Werror -Wcast-align=strict -Wcast-qual -Wshadow
	 -Wconversion -Wsign-conversion -Wundef)
if have clang; then
	compile "strict C" clang c "-std=c11" "$strict" -Weverything -Wno-padded \
		-Wno-declaration-after-statement -Wno-unknown-warning-option
fi
if have clang++; then
	compile "strict C++" clang++ c++ "-std=c++17" "$strict" -Weverything -Wno-padded \
		-Wno-c++98-compat -Wno-c++98-compat-pedantic -Wno-unknown-warning-option
fi
if have gcc; then
	compile "strict C" gcc c "-std=c11" "$strict" "${gstrict[@]}" -Wstrict-prototypes \
		-Wmissing-prototypes
fi
for tu in "$strict" "${cxx_tus[@]}"; do
	if have clang++ && [ "$tu" != "$strict" ]; then
		compile "strict C++" clang++ c++ "-std=c++17" "$tu" -Weverything -Wno-padded \
			-Wno-c++98-compat -Wno-c++98-compat-pedantic -Wno-unknown-warning-option \
			-Wno-missing-variable-declarations   # the generated file's own variable
	fi
	if have g++; then
		compile "strict C++" g++ c++ "-std=c++17" "$tu" "${gstrict[@]}" -Wold-style-cast \
			-Wzero-as-null-pointer-constant -Wuseless-cast
	fi
done

# A program's own list types before treercu/list.h: with the short names
# the kernel's tags are treercu's real ones, so the second definition is
# refused at compile time (never silently renamed to treercu's type); with
# TREERCU_NO_SHORT_NAMES the program's types and treercu's coexist.
if have gcc; then
	for tag in list_head hlist_head hlist_node; do
		f="$work/own_$tag.c"
		printf 'struct %s { int own; };\n#include <treercu/list.h>\nint own_%s(struct %s *p);\nint own_%s(struct %s *p) { return p->own; }\n' \
			"$tag" "$tag" "$tag" "$tag" "$tag" >"$f"
		ran=$((ran + 1))
		if gcc -x c -std=gnu11 "${warn[@]}" "${defs[@]}" -I"$inc" -c "$f" -o "$work/out.o" >"$work/last.log" 2>&1; then
			echo "FAIL: own struct $tag, then treercu/list.h with short names: compiled (expected a redefinition error)"
			fail=1
		elif ! grep -q "redefinition of .struct $tag" "$work/last.log"; then
			echo "FAIL: own struct $tag, then treercu/list.h with short names: not refused as a redefinition of struct $tag:"
			sed -n '1,8p' "$work/last.log"
			fail=1
		fi
		compile "own struct $tag beside treercu/list.h, prefixed" gcc c "-std=gnu11" "$f" -DTREERCU_NO_SHORT_NAMES
	done
fi

# Beside liburcu: its headers are not -pedantic clean in C++, so the plain
# warning set there.
if have gcc && printf '#include <urcu/urcu-memb.h>\n' | gcc -x c -E - >/dev/null 2>&1; then
	for order in treercu-first liburcu-first; do
		f="$work/coexist_$order.c"
		if [ "$order" = treercu-first ]; then
			printf '#include <treercu/treercu.h>\n#include <urcu/urcu-memb.h>\n' >"$f"
		else
			printf '#include <urcu/urcu-memb.h>\n#include <treercu/treercu.h>\n' >"$f"
		fi
		cat >>"$f" <<'EOF'
struct both { struct rcu_head lu; struct trcu_head tr; };
void both_use(struct both *b, void (*lf)(struct rcu_head *), void (*tf)(struct trcu_head *));
void both_use(struct both *b, void (*lf)(struct rcu_head *), void (*tf)(struct trcu_head *))
{
	urcu_memb_read_lock();
	trcu_read_lock();
	trcu_read_unlock();
	urcu_memb_read_unlock();
	urcu_memb_call_rcu(&b->lu, lf);
	trcu_call_rcu(&b->tr, tf);
}
EOF
		for cc in gcc clang; do
			have "$cc" || continue
			compile "beside liburcu ($order)" "$cc" c "-std=gnu11" "$f" -DTREERCU_NO_SHORT_NAMES
		done
		for cxx in g++ clang++; do
			have "$cxx" || continue
			compile "beside liburcu ($order)" "$cxx" c++ "-std=c++17" "$f" -DTREERCU_NO_SHORT_NAMES
		done
	done
	# Short names with liburcu's header first: a clear refusal.
	ran=$((ran + 1))
	if gcc -x c -std=gnu11 "${defs[@]}" -I"$inc" -c "$work/coexist_liburcu-first.c" -o "$work/out.o" \
		>"$work/last.log" 2>&1; then
		echo "FAIL: liburcu's header first, short names on: compiled (expected a refusal)"
		fail=1
	elif ! grep -q 'define TREERCU_NO_SHORT_NAMES' "$work/last.log"; then
		echo "FAIL: liburcu's header first, short names on: the error does not name TREERCU_NO_SHORT_NAMES:"
		sed -n '1,8p' "$work/last.log"
		fail=1
	fi
	# One program, both libraries.
	if [ -n "$lib" ] && [ -z "$sanitize" ]; then
		ran=$((ran + 1))
		if ! gcc -std=gnu11 "${warn[@]}" "${defs[@]}" -I"$inc" "$src/tests/api/headers/beside_liburcu.c" \
			"$lib" -Wl,-rpath,"$(dirname "$lib")" -lurcu-memb -lurcu-common -pthread \
			-o "$work/beside_liburcu" >"$work/last.log" 2>&1; then
			echo "FAIL: beside_liburcu.c does not build and link with both libraries:"
			sed -n '1,12p' "$work/last.log"
			fail=1
		elif ! out=$(timeout 120 "$work/beside_liburcu" 2>&1); then
			echo "FAIL: beside_liburcu ran and failed: $out"
			fail=1
		fi
	fi
else
	echo "skip: liburcu's headers not installed (the side-by-side check)"
fi

# use.c linked with the library and run, as C and as C++.
if [ -n "$lib" ] && [ -z "$sanitize" ]; then
	libdir=$(dirname "$lib")
	for pair in "gcc c" "g++ c++" "clang c" "clang++ c++"; do
		set -- $pair
		cc=$1 lang=$2
		have "$cc" || continue
		for names in short prefixed; do
			nd=()
			[ "$names" = prefixed ] && nd=(-DTREERCU_NO_SHORT_NAMES)
			exe="$work/use_${cc}_$names"
			ran=$((ran + 1))
			if ! "$cc" -x "$lang" -O2 "${warn[@]}" "${defs[@]}" "${nd[@]}" -I"$inc" \
				-c "$src/tests/api/headers/use.c" -o "$exe.o" >"$work/last.log" 2>&1 ||
				! "$cc" "$exe.o" "$lib" -Wl,-rpath,"$libdir" -pthread -o "$exe" \
				>>"$work/last.log" 2>&1; then
				echo "FAIL: use.c ($cc, $names names) does not build and link:"
				sed -n '1,12p' "$work/last.log"
				fail=1
				continue
			fi
			if ! out=$(timeout 120 "$exe" 2>&1); then
				echo "FAIL: use.c ($cc, $names names) ran and failed:"
				echo "$out" | sed -n '1,12p'
				fail=1
			fi
		done
	done
elif [ -n "$sanitize" ]; then
	echo "skip: linking use.c (sanitizer build)"
fi

# The read side compiles to the same instructions in C and in C++.
disasm() {
	# Instructions and relocations only: drop the file-name header.
	objdump -d -r --no-show-raw-insn "$1" | sed -n '/^Disassembly/,$p'
}
if have objdump; then
	for pair in "gcc g++" "clang clang++"; do
		set -- $pair
		cc=$1 cxx=$2
		if ! have "$cc" || ! have "$cxx"; then
			echo "skip: read-side C/C++ comparison with $cc/$cxx (not installed)"
			continue
		fi
		ran=$((ran + 1))
		if ! "$cc" -x c -std=gnu11 -O2 "${defs[@]}" -I"$inc" -c "$src/tests/api/headers/readside.c" \
			-o "$work/rs_c.o" >"$work/last.log" 2>&1 ||
			! "$cxx" -x c++ -std=c++17 -O2 "${defs[@]}" -I"$inc" -c "$src/tests/api/headers/readside.c" \
			-o "$work/rs_cxx.o" >>"$work/last.log" 2>&1; then
			echo "FAIL: readside.c does not compile with $cc/$cxx:"
			sed -n '1,12p' "$work/last.log"
			fail=1
			continue
		fi
		disasm "$work/rs_c.o" >"$work/rs_c.s"
		disasm "$work/rs_cxx.o" >"$work/rs_cxx.s"
		if ! grep -q 'rs_section' "$work/rs_c.s"; then
			echo "FAIL: no rs_section in the $cc disassembly (objdump?)"
			fail=1
		elif ! diff -u "$work/rs_c.s" "$work/rs_cxx.s" >"$work/rs.diff"; then
			echo "FAIL: the read side compiles differently as C ($cc) and C++ ($cxx):"
			sed -n '1,40p' "$work/rs.diff"
			fail=1
		else
			echo "read side: $cc and $cxx give the same $(grep -c '^ ' "$work/rs_c.s") instructions"
		fi
	done
else
	echo "skip: objdump not installed (the read-side C/C++ comparison)"
fi

if [ "$fail" -ne 0 ]; then
	echo "header matrix: FAILED ($ran checks)"
	exit 1
fi
echo "header matrix: ok ($ran checks)"
exit 0
