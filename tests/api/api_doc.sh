#!/bin/sh
# docs/api.md documents the whole public interface.  Fails, naming them, on
#   - a symbol the libraries export (tests/api/abi/exported.txt, when the build
#     has the list) that docs/api.md does not name;
#   - a name the public headers define (a function, an inline function, a
#     macro, an enumerator, a type; a class or function of rcu.hpp) that
#     docs/api.md does not name;
#   - a trcu_/TRCU_/TREERCU_ name docs/api.md gives that no header defines
#     (a stale entry).
# "Names" means: appears in a code span, `name` or `name(...)`.
# Usage: api_doc.sh API_MD INCLUDE_DIR [EXPORTED_TXT]
set -eu
api=$1 inc=$2 exported=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Names in code spans of api.md: the identifier that opens each span.
grep -o '`\(struct \|enum \|class \)\{0,1\}[A-Za-z_][A-Za-z0-9_:]*' "$api" |
	sed 's/^`//; s/^struct //; s/^enum //; s/^class //; s/^treercu:://' | sort -u >"$tmp/doc"

# Names the headers define.  Include guards excepted.
{
	# Macros.
	sed -n 's/^[[:space:]]*#[[:space:]]*define[[:space:]]\{1,\}\([A-Za-z_][A-Za-z0-9_]*\).*/\1/p' \
		"$inc"/treercu/*.h "$inc"/treercu/*.hpp
	# Functions declared or defined at the start of a line (C headers).
	sed -n 's/^\(TRCU_API \)\{0,1\}\(static inline \)\{0,1\}[a-z_][a-z0-9_ ]*[ *]\(trcu_[a-z0-9_]*\)(.*/\3/p' \
		"$inc"/treercu/*.h
	# Enumerators and struct tags.
	grep -ho '^[[:space:]]*TRCU_[A-Z0-9_]*' "$inc"/treercu/*.h | tr -d ' \t'
	grep -ho 'struct trcu_[a-z0-9_]* {' "$inc"/treercu/*.h | sed 's/struct //; s/ {//'
	grep -ho 'typedef [^;]*(\*\{0,1\}\(trcu_[a-z0-9_]*\))' "$inc"/treercu/*.h |
		sed 's/.*(\*\{0,1\}\(trcu_[a-z0-9_]*\))/\1/'
	# rcu.hpp: the classes and functions of namespace treercu.
	sed -n 's/^\(class\|struct\) \([a-z_]*\) .*/\2/p; s/^\(inline \)\{0,1\}\(void\|rcu_domain&\) \([a-z_]*\)(.*/\3/p' \
		"$inc"/treercu/rcu.hpp | grep -v '^$'
} | grep -v '^TREERCU_[A-Z_]*_H$\|^TREERCU_[A-Z_]*_HPP$' | sort -u >"$tmp/hdr"

rc=0
missing() {   # missing FILE WHAT: names of FILE that api.md does not give
	comm -23 "$1" "$tmp/doc" >"$tmp/miss"
	if [ -s "$tmp/miss" ]; then
		echo "$2 ($(wc -l <"$tmp/miss")):"
		sed 's/^/  /' "$tmp/miss"
		rc=1
	fi
}
if [ -n "$exported" ] && [ -f "$exported" ]; then
	sort -u "$exported" >"$tmp/exp"
	missing "$tmp/exp" "exported by the library but not in docs/api.md"
else
	: >"$tmp/exp"
fi
missing "$tmp/hdr" "defined by the public headers but not in docs/api.md"

# Stale: prefixed names in api.md that neither a header nor the export list has.
grep -x 'trcu_[a-z0-9_]*\|TRCU_[A-Z0-9_]*\|TREERCU_[A-Z0-9_]*' "$tmp/doc" >"$tmp/docp" || true
cat "$tmp/hdr" "$tmp/exp" | sort -u >"$tmp/known"
# Environment variables and CMake options are TREERCU_ names too: only a
# name that is neither in the headers nor in src/ nor in the CMake files
# (cmake/config.h.in makes <treercu/config.h>) is stale.
comm -23 "$tmp/docp" "$tmp/known" >"$tmp/cand"
: >"$tmp/stale"
while read -r name; do
	if ! grep -rqw -- "$name" "$inc" "$inc/../src" "$inc/../cmake" "$inc/../CMakeLists.txt" 2>/dev/null; then
		echo "$name" >>"$tmp/stale"
	fi
done <"$tmp/cand"
if [ -s "$tmp/stale" ]; then
	echo "in docs/api.md but defined nowhere ($(wc -l <"$tmp/stale")):"
	sed 's/^/  /' "$tmp/stale"
	rc=1
fi
echo "api_doc: $(wc -l <"$tmp/hdr") names in the headers, $(wc -l <"$tmp/exp") exported," \
     "$(wc -l <"$tmp/doc") named in docs/api.md"
exit $rc
