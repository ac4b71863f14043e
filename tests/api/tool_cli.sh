#!/usr/bin/env bash
# The treercu tool's command line: every subcommand documents every option
# it accepts (meaning, then unit/range/default), --version works, a bad
# option is refused by name with exit 2, every JSON output starts with the
# provenance header, and files are written only where asked (--out, --png).
# Usage: tests/api/tool_cli.sh PATH/TO/treercu
set -u
tool=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1

# Every option each subcommand has always accepted (scripts, tests and
# docs call them), plus the common ones.
declare -A opts=(
  [quick]="--png"
  [torture]="--duration --readers --qsbr-readers --fake-writers --churn --stall --busted --cb-writers --barrier --fwd --fwd-secs --fwd-max-gps --sync-path"
  [refscale]="--repeats --ms --peers"
  [scale]="--repeats --duration --readers --callers --idle --sync-path --callbacks --no-callbacks --cb-repeats --cb-count --flood-secs --flood-repeats --peers"
  [peers]="--repeats --duration --peers --workload --lookup-pct"
  [wq]="--producers --items --batch --reps --topology"
  [seeds 000]="--runs --calls --idle"
  [seeds 001]="--producers --items --batch --reps --topology"
  [seeds 003]="--threads --duration --repeats --idle --png --bg-cbs --seed-jobs"
  [seeds 004]="--repeats --kmax --cb-ns --hold"
)
for sub in "${!opts[@]}"; do
  # shellcheck disable=SC2086
  out=$(timeout 20 "$tool" $sub --help 2>&1); rc=$?
  [ $rc -eq 0 ] || fail "'treercu $sub --help' exit $rc (want 0): $(echo "$out" | head -2)"
  for o in ${opts[$sub]} --quick --json --out --help; do
    # The option starts a line and is followed by its meaning on that line.
    echo "$out" | grep -Eq -- "^ +(-h, )?$o( [^ ]+)? +[^ ]" ||
      fail "'treercu $sub --help' does not describe $o"
  done
  # Each value option's second line gives unit or range and the default.
  n_opt=$(echo "$out" | grep -Ec '^  --')
  n_def=$(echo "$out" | grep -Ec '^ {28}.*default')
  [ "$n_opt" -eq "$n_def" ] ||
    fail "'treercu $sub --help': $n_opt options but $n_def default lines"
done
timeout 20 "$tool" seeds --help | grep -q "003" || fail "'treercu seeds --help' does not list 003"

for v in --version version; do
  out=$(timeout 20 "$tool" $v 2>&1); rc=$?
  [ $rc -eq 0 ] && echo "$out" | grep -Eq '^treercu [0-9]+\.[0-9]+\.[0-9]+' ||
    fail "'treercu $v': exit $rc, '$out'"
done

# Bad input: exit 2, one message naming the problem and pointing at --help.
check_bad() {
  local want=$1; shift
  out=$(timeout 20 "$tool" "$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq 2 ] || fail "'treercu $*' exit $rc (want 2)"
  echo "$out" | grep -qF -- "$want" || fail "'treercu $*' says '$out' (want '$want')"
}
check_bad "unknown option '--bogus'" refscale --bogus
check_bad "'treercu refscale --help'" refscale --bogus
check_bad "unknown option '--bogus'" seeds 003 --bogus
check_bad "'--json' needs a value" scale --json
check_bad "--repeats abc: expected a number in [1, 101]" refscale --repeats abc
check_bad "--busted 1.5: expected an integer" torture --busted 1.5
check_bad "unexpected argument 'extra'" refscale extra
check_bad "unknown subcommand 'nosuch'" nosuch
check_bad "unknown ID '999'" seeds 999
for sub in refscale scale peers; do
  check_bad "--peers: unknown peer 'nosuch' (known: treercu," $sub --peers treercu,nosuch
done
check_bad "--workload nope: expected retire or hashmap" peers --workload nope
# --peers runs the peers named and no other.
out=$(timeout 120 "$tool" refscale --repeats 1 --ms 1 --peers memb,treercu-qsbr 2>&1) ||
  fail "refscale --peers memb,treercu-qsbr: exit $?"
echo "$out" | grep -q "| *liburcu memb |" && echo "$out" | grep -q "| *treercu qsbr |" ||
  fail "refscale --peers memb,treercu-qsbr: a named peer has no row"
echo "$out" | grep -Eq "\| *(treercu|liburcu qsbr|liburcu mb|liburcu bp|ck_epoch) \|" &&
  fail "refscale --peers memb,treercu-qsbr: a peer not named has a row"
# --callers N runs N callers for any N in its range, not only the matrix's.
out=$(timeout 120 "$tool" scale --readers 0 --callers 4 --peers treercu --repeats 1 \
      --duration 0.05 --no-callbacks 2>&1) || fail "scale --callers 4: exit $?"
echo "$out" | grep -Eq "^\| *treercu *\| *[0-9]+ \| *0 \| *4 \|" ||
  fail "scale --callers 4: no row with 4 callers"
check_bad "ambiguous option '--fw'" torture --fw 1
check_bad "option '--quick' takes no value" torture --quick=1
check_bad "--json $work/none/x.json: cannot write into $work/none" torture --json "$work/none/x.json"
check_bad "--png $work/none/x.png: cannot write into $work/none" seeds 003 --png "$work/none/x.png"

# A short run with --out writes DIR/refscale.json and nothing else.
mkdir run && cd run || exit 1
timeout 120 "$tool" refscale --repeats 1 --ms 1 --out res >/dev/null ||
  fail "refscale --out res: exit $?"
[ -f res/refscale.json ] || fail "refscale --out res wrote no res/refscale.json"
[ "$(ls)" = res ] || fail "refscale --out res: the current directory holds '$(ls)', want 'res'"
# --json FILE: the header every output starts with.
mkdir -p res
timeout 120 "$tool" refscale --repeats 1 --ms 1 --json res/refscale.json >/dev/null ||
  fail "refscale --json: exit $?"
if command -v python3 >/dev/null; then
  python3 - res/refscale.json <<'EOF' || fail "refscale.json header: see above"
import json, sys
d = json.load(open(sys.argv[1]))
want = {"schema": str, "treercu_version": str, "git_commit": str, "date": str,
        "compiler": str, "machine": dict}
for k, t in want.items():
    if not isinstance(d.get(k), t):
        sys.exit(f"key {k!r} missing or not {t.__name__}: {d.get(k)!r}")
if d["schema"] != "treercu.refscale/1":
    sys.exit(f"schema {d['schema']!r}")
m = d["machine"]
if not (isinstance(m.get("cpus"), int) and m["cpus"] > 0 and isinstance(m.get("model"), str)
        and isinstance(m.get("loadavg"), list) and len(m["loadavg"]) == 3):
    sys.exit(f"machine {m!r}")
import re
if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", d["date"]):
    sys.exit(f"date {d['date']!r}")
EOF
else
  for k in schema treercu_version git_commit date compiler machine cpus model loadavg; do
    grep -q "\"$k\":" res/refscale.json || fail "refscale.json lacks \"$k\""
  done
fi
cd .. || exit 1

# peers: every built-in peer runs both workloads (each run checks that no
# reader saw a freed object and that every retired object was freed); a
# peer the build lacks (ck_epoch without libck-dev) is named as not available.
mkdir peers && cd peers || exit 1
out=$(timeout 300 "$tool" peers --repeats 1 --duration 0.05 --json p.json 2>&1) ||
  fail "peers --repeats 1 --duration 0.05: exit $?: $(echo "$out" | tail -3)"
# Under ThreadSanitizer only the treercu peers run (the others are named).
for name in treercu "treercu qsbr" "liburcu memb" "liburcu qsbr" "liburcu mb" "liburcu bp"; do
  echo "$out" | grep -q "| *$name |" || echo "$out" | grep -q "^peer $name left out: " ||
    fail "peers: no row for $name"
done
echo "$out" | grep -q "| *ck_epoch |" || echo "$out" | grep -q "^peer ck_epoch \(not available\|left out\): " ||
  fail "peers: ck_epoch neither ran nor was named as not available"
if command -v python3 >/dev/null && [ -s p.json ]; then
  python3 - p.json <<'EOF' || fail "peers.json: see above"
import json, sys
d = json.load(open(sys.argv[1]))
if d.get("schema") != "treercu.peers/1":
    sys.exit(f"schema {d.get('schema')!r}")
for key, metric in (("deferred_free", "objects_per_s"), ("hashmap", "ops_per_s")):
    rows = [r for r in d.get(key, []) if r["metric"] == metric]
    if not any(r["peer"] == "treercu" for r in rows) or not all(r["value"]["n"] == 1 for r in rows):
        sys.exit(f"{key}: {metric} rows {rows!r}")
EOF
fi
cd .. || exit 1

# seeds 003 writes plots only when asked; then compressed PNGs.
mkdir plots && cd plots || exit 1
s3="seeds 003 --threads 2 --repeats 1 --duration 0.05 --seed-jobs 2"
# shellcheck disable=SC2086
timeout 120 "$tool" $s3 >/dev/null || fail "$s3: exit $?"
[ -z "$(ls)" ] || fail "$s3 without --out/--png wrote: $(ls)"
# shellcheck disable=SC2086
timeout 120 "$tool" $s3 --out o >/dev/null || fail "$s3 --out o: exit $?"
for f in o/seeds003.json o/seeds003.png o/seeds003-load.png; do
  [ -s "$f" ] || fail "$s3 --out o did not write $f"
done
if command -v python3 >/dev/null && [ -s o/seeds003.png ]; then
  python3 - o/seeds003.png <<'EOF' || fail "seeds003.png: see above"
import struct, sys, zlib
b = open(sys.argv[1], "rb").read()
if b[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit("not a PNG")
w, h = struct.unpack(">II", b[16:24])
idat, p = b"", 8
while p < len(b):
    n, = struct.unpack(">I", b[p:p + 4])
    if b[p + 4:p + 8] == b"IDAT":
        idat += b[p + 8:p + 8 + n]
    p += 12 + n
raw = zlib.decompress(idat)
if len(raw) != h * (3 * w + 1):
    sys.exit(f"{len(raw)} bytes of image data for {w}x{h}")
if len(b) * 10 > len(raw):
    sys.exit(f"{len(b)} bytes for {len(raw)} raw: not compressed")
EOF
fi

[ $fails -eq 0 ] && echo "tool_cli: all checks passed"
exit $((fails > 0))
