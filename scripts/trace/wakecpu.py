#!/usr/bin/env python3
"""The caller's wake-up after the reader's release, by CPU placement.

Usage: wakecpu.py TRACE   (a seeds004_ab trace: scripts/trace/run.sh)
For every sample, the time from the holder's rcu_read_unlock() ("release")
to the caller's first wake-up in the GP driver's sleep ("drv_wake"), split
by whether the caller woke on the CPU of the release (the holder then goes
to sleep and hands its CPU over) or on the other one (an IPI to an idle
vCPU), and by whether the caller had moved CPU since the sample began.
K=0 samples and K>0 samples alternate in the harness.
"""
import sys

ev = []
for line in open(sys.argv[1]):
    f = line.split()
    ev.append((int(f[0]), int(f[1]), f[2], int(f[3]), int(f[4]) if len(f) > 4 else -1))
rel = [i for i, e in enumerate(ev) if e[2] == 'release']
res = {}
for k, i in enumerate(rel):
    starts = [j for j in range(i) if ev[j][2] == 'sample']
    if not starts:
        continue
    s = starts[-1]
    caller = ev[s][1]
    wake = [j for j in range(i, len(ev)) if ev[j][1] == caller and ev[j][2] == 'drv_wake']
    last = [j for j in range(s, i) if ev[j][1] == caller]
    if not wake or not last:
        continue
    key = ('K>0' if k % 2 else 'K=0',
           'same CPU as the release' if ev[wake[0]][4] == ev[i][4] else 'other CPU',
           'moved' if ev[last[-1]][4] != ev[s][4] else 'stayed')
    res.setdefault(key, []).append((ev[wake[0]][0] - ev[i][0]) / 1e3)
for key, v in sorted(res.items()):
    v.sort()
    print('%-4s %-24s %-6s n=%4d  p50 %7.1f us  p90 %7.1f us  max %8.1f us' %
          (key + (len(v), v[len(v) // 2], v[int(len(v) * .9)], v[-1])))
