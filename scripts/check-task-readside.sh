#!/usr/bin/env bash
# The task read side never stores through a thread pointer read before a
# call (arm64, where GCC keeps tpidr_el0 in a callee-saved register across a
# call that may move a fiber to another worker; docs/design.md section 15).
#
# Compiles tests/task/arm64/task_readside.c with the Debian cross compiler
# (gcc-aarch64-linux-gnu) at -O2 and reads the disassembly:
#   - trcu_task_read_lock()/unlock() (task_readside, task_readside_nested)
#     must not read tpidr_el0 at all, so no store can go through a stale
#     thread pointer;
#   - the plain names (plain_readside) are the control: the same analysis
#     must find their inline stores through the pre-call thread pointer
#     (each on a branch that a worker's TRCU_RF_TASK flag never takes), or
#     the analysis is blind and the check fails.
# Usage: check-task-readside.sh SOURCE_DIR BUILD_INCLUDE_DIR
# Exits 77 (skipped) when the cross compiler is absent.
set -euo pipefail
src=$1 binc=$2
cc=${AARCH64_CC:-aarch64-linux-gnu-gcc}
objdump=${AARCH64_OBJDUMP:-aarch64-linux-gnu-objdump}
if ! command -v "$cc" >/dev/null || ! command -v "$objdump" >/dev/null; then
	echo "skipped: $cc not found (Debian: apt-get install gcc-aarch64-linux-gnu)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The arm64 library's config: membarrier read side (no TREERCU_FENCED).
mkdir -p "$tmp/include/treercu"
sed 's/^#define TREERCU_FENCED 1$//' "$binc/treercu/config.h" >"$tmp/include/treercu/config.h"
"$cc" -O2 -std=gnu11 -I"$tmp/include" -I"$src/include" -c "$src/tests/task/arm64/task_readside.c" \
	-o "$tmp/t.o"
"$objdump" -d --no-show-raw-insn "$tmp/t.o" >"$tmp/t.dis"
python3 - "$tmp/t.dis" <<'PY'
import re, sys

funcs, cur = {}, None
for line in open(sys.argv[1]):
    m = re.match(r'^[0-9a-f]+ <(\w+)>:', line)
    if m:
        cur = funcs.setdefault(m.group(1), [])
        continue
    m = re.match(r'^\s*[0-9a-f]+:\s+(\S+)\s*(.*)$', line)
    if m and cur is not None:
        cur.append((m.group(1), m.group(2).split('//')[0].strip()))

CALLEE_SAVED = {f'x{i}' for i in range(19, 29)} | {'x29'}

def regs(ops):
    return re.findall(r'\b[xw](\d+)\b', ops)

def stale_stores(insns):
    """Stores whose base register derives from tpidr_el0 read before a bl."""
    tp, stale, found = set(), set(), []
    for op, args in insns:
        rs = ['x' + r for r in regs(args)]
        if op == 'mrs' and 'tpidr_el0' in args:
            tp.add(rs[0]); stale.discard(rs[0])
        elif op in ('bl', 'blr'):
            stale |= {r for r in tp if r in CALLEE_SAVED}
            tp = set()
            stale = {r for r in stale if r in CALLEE_SAVED}
        elif op.startswith('st'):
            m = re.search(r'\[([xw]\d+|sp)', args)
            base = m.group(1).replace('w', 'x') if m else None
            if base in stale:
                found.append(f'{op} {args}')
        elif rs and not op.startswith(('b', 'c', 't')):
            dst, srcs = rs[0], rs[1:]
            if op.startswith('ld'):
                tp.discard(dst); stale.discard(dst)
            elif any(s in stale for s in srcs):
                stale.add(dst); tp.discard(dst)
            elif any(s in tp for s in srcs):
                tp.add(dst); stale.discard(dst)
            else:
                tp.discard(dst); stale.discard(dst)
    return found

fail = False
for fn in ('task_readside', 'task_readside_nested'):
    insns = funcs.get(fn)
    if not insns:
        print(f'FAIL: {fn} not found in the disassembly'); fail = True; continue
    reads = [a for o, a in insns if o == 'mrs' and 'tpidr_el0' in a]
    bad = stale_stores(insns)
    if reads or bad:
        print(f'FAIL: {fn}: reads tpidr_el0 {len(reads)} times, stores through a '
              f'pre-call thread pointer: {bad}')
        fail = True
    else:
        print(f'ok: {fn}: no thread pointer read, no store through one '
              f'({len(insns)} instructions, {sum(o == "bl" for o, _ in insns)} calls)')
ctl = stale_stores(funcs.get('plain_readside', []))
if not ctl:
    print('FAIL: control plain_readside: the analysis found no store through the '
          'pre-call thread pointer (it should: the inline fast paths)')
    fail = True
else:
    print(f'ok: control plain_readside: {len(ctl)} inline stores through the pre-call '
          f'thread pointer found ({"; ".join(ctl)}), each behind a nest_flags test that '
          f'TRCU_RF_TASK fails on a worker')
sys.exit(1 if fail else 0)
PY
