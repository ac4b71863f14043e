#!/usr/bin/env python3
"""Where a seeds004_ab caller's latency goes, from the scheduler's view.

Usage: schedwait.py TRACE PERF_SCRIPT [MIN_US] [MAX_SHOWN]
TRACE: the library's debug trace of a seeds004_ab run (TREERCU_TRACE_FILE);
PERF_SCRIPT: `perf script -F comm,pid,tid,cpu,time,event,trace` text of a system-wide `perf record -k
CLOCK_MONOTONIC -e sched:sched_switch -e sched:sched_wakeup -e
sched:sched_migrate_task` of the same run (scripts/trace/sched.sh), so that
both carry CLOCK_MONOTONIC times.

For each sample, from the holder's release (or the call, if later) to the
caller's return: the time the caller ran, slept, and was runnable but not
running, the last split by what ran on the CPU it was queued on (and, of
its sleep, how long a library thread it may have waited for, the GP
driver, say, was itself runnable but not running): the
library's offload thread (trcu_nocb), its GP kthread (trcu_gp), the
experiment's other thread (the holder), another process, or nothing (idle).
Prints the slow samples (>= MIN_US, default 100) one line each, then the
totals and the p50/p99 of K=0 and K>0 samples.
"""
import bisect
import re
import sys

trace, pscript = sys.argv[1], sys.argv[2]
thr = float(sys.argv[3]) if len(sys.argv) > 3 else 100.0
maxn = int(sys.argv[4]) if len(sys.argv) > 4 else 20

marks = []
for line in open(trace):
    f = line.split()
    marks.append((int(f[0]), int(f[1]), f[2]))

RE = re.compile(r'^\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+(\d+)\.(\d+):\s+(\S+):\s+(.*)$')
ev = []   # (t_ns, cpu, kind, fields)
tgid = {}  # tid -> process id, from each event's running task
for line in open(pscript):
    m = RE.match(line)
    if not m:
        continue
    tgid[int(m.group(3))] = int(m.group(2))
    t = int(m.group(5)) * 1000000000 + int(m.group(6).ljust(9, '0')[:9])
    cpu, kind, rest = int(m.group(4)), m.group(7), m.group(8)
    fl = dict(re.findall(r'(\w+)=(\S+)', rest))
    ev.append((t, cpu, kind, fl))
ev.sort(key=lambda e: e[0])
ev_t = [e[0] for e in ev]

tid_comm = {}
for _, _, kind, fl in ev:
    if kind == 'sched:sched_switch':
        tid_comm[int(fl['prev_pid'])] = fl['prev_comm']
        tid_comm[int(fl['next_pid'])] = fl['next_comm']


# The experiment's process: the caller's (any tid of the library trace).
me = next((tgid[t] for _, t, _ in marks if t in tgid), None)


def who(tid):
    if tid == 0:
        return 'idle'
    if tgid.get(tid) != me:
        return 'other process'   # other programs' trcu_* threads too
    c = tid_comm.get(tid, '?')
    if c.startswith('trcu_nocb'):
        return 'offload'
    if c.startswith('trcu_gp'):
        return 'gp kthread'
    if c.startswith('seeds004_ab'):   # the caller never runs while it waits
        return 'holder'
    return 'other process'


CATS = ['offload', 'gp kthread', 'holder', 'other process', 'idle']


# Per CPU, the task switched in at each switch; per thread, the events that
# move it (switched in or out, woken, migrated): a window's state at its
# start is looked up, not replayed from the beginning.
cpu_sw = {}
tid_ev = {}
for i, (t, cpu, kind, fl) in enumerate(ev):
    if kind == 'sched:sched_switch':
        ts, ps = cpu_sw.setdefault(cpu, ([], []))
        ts.append(t)
        ps.append(int(fl['next_pid']))
        tid_ev.setdefault(int(fl['prev_pid']), []).append(i)
        tid_ev.setdefault(int(fl['next_pid']), []).append(i)
    elif kind in ('sched:sched_wakeup', 'sched:sched_migrate_task'):
        tid_ev.setdefault(int(fl['pid']), []).append(i)


def running_at(cpu, t):
    ts, ps = cpu_sw.get(cpu, ([], []))
    j = bisect.bisect_right(ts, t) - 1
    return ps[j] if j >= 0 else 0


def step(tid, cpu, kind, fl, state, qcpu):
    """The thread's (state, queued CPU) after one of its events."""
    if kind == 'sched:sched_switch':
        if int(fl['next_pid']) == tid:
            return 'run', cpu
        if int(fl['prev_pid']) == tid:
            return ('wait' if fl.get('prev_state', 'S').startswith('R') else 'sleep'), cpu
    elif kind == 'sched:sched_wakeup':
        if state != 'run':
            return 'wait', int(fl['target_cpu'])
    elif kind == 'sched:sched_migrate_task':
        return state, int(fl['dest_cpu'])
    return state, qcpu


def account(tid, t0, t1, spans=None):
    """ns running / sleeping / runnable-by-category of thread `tid` in
    [t0, t1]; with `spans` (a list), also its (start, end, state) intervals."""
    res = {'run': 0, 'sleep': 0}
    for c in CATS:
        res[c] = 0
    mine = tid_ev.get(tid, [])
    # The state at t0: from the thread's last switch before it, then the
    # wake-ups and migrations after that switch.
    k = bisect.bisect_left(mine, bisect.bisect_left(ev_t, t0)) - 1
    j = k
    while j >= 0 and ev[mine[j]][2] != 'sched:sched_switch':
        j -= 1
    state, qcpu = 'sleep', None
    for m in mine[max(j, 0):k + 1]:
        state, qcpu = step(tid, ev[m][1], ev[m][2], ev[m][3], state, qcpu)
    if j < 0 and k < 0:
        state = 'run'   # no event before the window: assume it was running
    last = t0
    for i in range(bisect.bisect_left(ev_t, t0), bisect.bisect_right(ev_t, t1)):
        t, cpu, kind, fl = ev[i]
        if t > last:
            cat = state if state != 'wait' else who(running_at(qcpu, last))
            if spans is not None:
                spans.append((last, t, cat))
            res[cat] += t - last
            last = t
        state, qcpu = step(tid, cpu, kind, fl, state, qcpu)
    if t1 > last:
        cat = state if state != 'wait' else who(running_at(qcpu, last))
        if spans is not None:
            spans.append((last, t1, cat))
        res[cat] += t1 - last
    return res


rel = [i for i, m in enumerate(marks) if m[2] == 'release']
rows = {'K=0': [], 'K>0': []}
shown = 0
tot = {'K=0': {}, 'K>0': {}}
for k, i in enumerate(rel):
    starts = [j for j in range(i) if marks[j][2] == 'sample']
    if not starts:
        continue
    s = starts[-1]
    caller = marks[s][1]
    ends = [j for j in range(i, len(marks)) if marks[j][2] == 'sr_ret' and marks[j][1] == caller]
    if not ends:
        continue
    t0 = max(marks[i][0], marks[s][0])
    t1 = marks[ends[0]][0]
    key = 'K>0' if marks[s][0] and k % 2 else 'K=0'
    lat = (t1 - t0) / 1e3
    rows[key].append(lat)
    csp = []
    r = account(caller, t0, t1, csp)
    # The caller asleep while a library thread that left a mark in the
    # window (the GP driver it waits for, say) was runnable, not running.
    others = sorted({m[1] for m in marks if t0 <= m[0] <= t1 and m[1] != caller
                     and who(m[1]) != 'holder'})
    osp = []
    for tid in others:
        account(tid, t0, t1, osp)
    blocked = 0
    for a, b, st in csp:
        if st != 'sleep':
            continue
        cov = sorted((max(a, x), min(b, y)) for x, y, st2 in osp
                     if st2 not in ('run', 'sleep') and min(b, y) > max(a, x))
        end = a
        for x, y in cov:   # union of the runnable spans inside [a, b]
            x = max(x, end)
            if y > x:
                blocked += y - x
                end = y
    r['blocked'] = blocked
    for c, v in r.items():
        tot[key][c] = tot[key].get(c, 0) + v
    if lat >= thr and shown < maxn:
        shown += 1
        print('%s sample %4d: %8.1f us (caller asleep while a library thread was '
              'runnable: %.1f us)' % (key, k, lat, r['blocked'] / 1e3))
        # The caller, then every other library thread that left a mark in
        # the window (a GP driver the caller waits for, the offload thread).
        tids = [caller] + sorted({m[1] for m in marks if t0 <= m[0] <= t1 and m[1] != caller
                                  and who(m[1]) != 'holder'})
        for tid in tids:
            r2 = r if tid == caller else account(tid, t0, t1)
            print('    %-10s ran %7.1f, slept %7.1f, runnable %7.1f (%s)' % (
                'caller' if tid == caller else who(tid), r2['run'] / 1e3, r2['sleep'] / 1e3,
                sum(r2[c] for c in CATS) / 1e3,
                ', '.join('behind %s %.1f' % (c, r2[c] / 1e3) for c in CATS if r2[c])))
for key in ('K=0', 'K>0'):
    v = sorted(rows[key])
    if not v:
        continue
    n = len(v)
    t = tot[key]
    print('%s: %d samples, p50 %.1f us, p99 %.1f us, max %.1f us; summed: ran %.1f us, '
          'slept %.1f us (of which a library thread was runnable: %.1f us), '
          'runnable behind: %s' % (
              key, n, v[n // 2], v[min(n - 1, int(n * .99))], v[-1], t['run'] / 1e3,
              t['sleep'] / 1e3, t['blocked'] / 1e3,
              ', '.join('%s %.1f us' % (c, t[c] / 1e3) for c in CATS)))
