#!/bin/sh
# The static library builds when it is the only target asked for: the
# custom command that links its one relocatable object depends on every
# object library it reads (a parallel or single-target build otherwise
# reaches it before those objects exist: "No rule to make target").
# Usage: static_target_alone.sh SOURCE_DIR SCRATCH_DIR
set -u
src=$1
dir=$2
rm -rf "$dir"
cmake -S "$src" -B "$dir" -DTREERCU_BUILD_TOOLS=OFF -DTREERCU_BUILD_TESTS=OFF \
	-DTREERCU_BUILD_EXAMPLES=OFF -DTREERCU_WORKQUEUE=ON >"$dir.log" 2>&1 &&
	cmake --build "$dir" --target treercu_static -j 2 >>"$dir.log" 2>&1
st=$?
if [ "$st" -ne 0 ]; then
	tail -n 20 "$dir.log"
	echo "static_target_alone: building treercu_static alone failed"
	exit 1
fi
rm -rf "$dir" "$dir.log"
echo "static_target_alone: ok"
