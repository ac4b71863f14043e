#!/usr/bin/env python3
"""Per-sample timelines from a seeds004_ab trace (TREERCU_TRACE_FILE).

Usage: timeline.py TRACE [MIN_US] [MAX_SHOWN]
Prints, for the K>0 samples slower than MIN_US (default 100), every event
from the sample's start to the caller's return, in us relative to the
reader's release, with T0, T1... naming threads in order of appearance and
the CPU each event ran on.
"""
import sys

path = sys.argv[1]
thr = float(sys.argv[2]) if len(sys.argv) > 2 else 100.0
maxn = int(sys.argv[3]) if len(sys.argv) > 3 else 5
ev = []
for line in open(path):
    f = line.split()
    t, tid, name, arg = f[:4]
    cpu = int(f[4]) if len(f) > 4 else -1
    ev.append((int(t), int(tid), name, int(arg), cpu))
rel = [i for i, e in enumerate(ev) if e[2] == 'release']
lats, shown = [], 0
for k, i in enumerate(rel):
    starts = [j for j in range(i) if ev[j][2] == 'sample']
    ends = [j for j in range(i, len(ev)) if ev[j][2] == 'sr_ret']
    if not starts or not ends or k % 2 == 0:
        continue
    s, e, t0 = starts[-1], ends[0], ev[i][0]
    lat = (ev[e][0] - max(t0, ev[s][0])) / 1e3
    lats.append(lat)
    if lat < thr or shown >= maxn:
        continue
    shown += 1
    tids = {}
    print('--- sample %d: %.1f us' % (k, lat))
    for j in range(s, min(e + 3, len(ev))):
        t, tid, name, arg, cpu = ev[j]
        tids.setdefault(tid, len(tids))
        print('%9.1f  T%d cpu%-2d %-16s %d' % ((t - t0) / 1e3, tids[tid], cpu, name, arg))
lats.sort()
if lats:
    n = len(lats)
    print('K>0 samples: %d, p50 %.1f us, p99 %.1f us' % (n, lats[n // 2], lats[int(n * .99)]))
