#!/usr/bin/env bash
# The libraries export the documented API and nothing else.
# tests/api/abi/exported.txt is that API, one symbol per line: every function
# and variable declared TRCU_API in include/treercu/*.h.  Fails on
#   - a symbol exported by libtreercu.so (nm -D --defined-only) or global in
#     libtreercu.a that the list does not have (an internal leaking out: a
#     program's own symbol of that name would clash with it);
#   - a listed symbol that either library does not export (a broken API);
#   - a TRCU_API declaration in the headers that the list does not have, or
#     the reverse (the list and the headers drifting apart);
#   - with INTERNAL_A (the archive of the library's objects, hidden symbols
#     still global): a non-static symbol named trcu_* that the list does not
#     have.  trcu_ is the public prefix; internal functions and variables
#     shared between the sources take the kernel's name or a module prefix
#     (rcu_, wq_, sys_, tun_, ...), so that a name tells which side it is on.
#   TRCU_ABI_WITHOUT (environment): a public header whose part of the
#     library the build left out (workqueue.h with TREERCU_WORKQUEUE=OFF):
#     its declarations leave the list and the headers' names.
# Usage: check-exports.sh NM LIBTREERCU_SO LIBTREERCU_A EXPORTED_TXT INCLUDE_DIR [INTERNAL_A]
set -euo pipefail
nm=$1 so=$2 ar=$3 list=$4 inc=$5 internal=${6:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sort -u "$list" >"$tmp/list"
# (ASan adds an ODR indicator, __odr_asan.NAME, beside each global variable.)
# _init and _fini: the ELF init/fini entry points, dynamic symbols when the C
# library's start files make them so (musl's crti.o), not treercu's API.
"$nm" -D --defined-only "$so" |
  awk 'NF == 3 && $3 !~ /^__odr_asan/ && $3 != "_init" && $3 != "_fini" { print $3 }' |
  sort -u >"$tmp/so"
"$nm" --defined-only --extern-only "$ar" | awk 'NF == 3 && $3 !~ /^__odr_asan/ { print $3 }' | sort -u >"$tmp/ar"
# The name declared by each TRCU_API declaration (the identifier before its
# parameter list or its semicolon).
decls() { sed -n 's/^TRCU_API[^(;]*[^a-zA-Z0-9_(;]\([a-zA-Z_][a-zA-Z0-9_]*\) *[(;].*/\1/p' "$@"; }
decls "$inc"/treercu/*.h | sort -u >"$tmp/hdr"
if [ -n "${TRCU_ABI_WITHOUT:-}" ]; then
  decls "$inc/treercu/$TRCU_ABI_WITHOUT" | sort -u >"$tmp/without"
  comm -23 "$tmp/list" "$tmp/without" >"$tmp/list.kept" && mv "$tmp/list.kept" "$tmp/list"
  comm -23 "$tmp/hdr" "$tmp/without" >"$tmp/hdr.kept" && mv "$tmp/hdr.kept" "$tmp/hdr"
fi

rc=0
report() {   # report FILE_A FILE_B WHAT: names in A and not in B
  local extra
  extra=$(comm -23 "$1" "$2")
  if [ -n "$extra" ]; then
    echo "$3 ($(echo "$extra" | wc -l)):"
    echo "$extra" | sed 's/^/  /'
    rc=1
  fi
}
report "$tmp/so" "$tmp/list" "exported by $(basename "$so") but not in the documented API"
report "$tmp/ar" "$tmp/list" "global in $(basename "$ar") but not in the documented API"
report "$tmp/list" "$tmp/so" "documented but not exported by $(basename "$so")"
report "$tmp/list" "$tmp/ar" "documented but not defined in $(basename "$ar")"
report "$tmp/hdr" "$tmp/list" "declared TRCU_API in the headers but not in $(basename "$list")"
report "$tmp/list" "$tmp/hdr" "in $(basename "$list") but not declared TRCU_API in the headers"
if [ -n "$internal" ]; then
  "$nm" --defined-only --extern-only "$internal" |
    awk 'NF == 3 && $3 ~ /^trcu_/ { print $3 }' | sort -u >"$tmp/prefixed"
  report "$tmp/prefixed" "$tmp/list" \
    "internal symbols in $(basename "$internal") with the public trcu_ prefix"
fi
echo "check-exports: $(wc -l <"$tmp/so") symbols exported by $(basename "$so"), \
$(wc -l <"$tmp/ar") global in $(basename "$ar"), $(wc -l <"$tmp/list") documented"
exit $rc
