#!/usr/bin/env python3
"""The peers table of docs/benchmarks.md from one run's JSON files.

Usage: scripts/bench/peers-table.py DIR
DIR holds refscale.json, scale.json and peers.json, written by
  build/treercu refscale --json DIR/refscale.json
  build/treercu peers --json DIR/peers.json
  build/treercu scale --no-callbacks --json DIR/scale.json
Prints two markdown tables: each peer's median with its spread
((max - min) / median over the repeats), then treercu's median divided by
each peer's (below 1: treercu's figure is the smaller; "-" where the
peer's figure is about zero, as ck_epoch's helper CPU: it has no helper
thread).
"""
import datetime
import json
import os
import sys

PEERS = ["treercu", "treercu qsbr", "liburcu memb", "liburcu qsbr", "liburcu mb",
         "liburcu bp", "ck_epoch"]


def load(d, name):
    with open(os.path.join(d, name)) as f:
        return json.load(f)


def rows(d):
    """(label, {peer: summary}, scale) for every figure."""
    out = []
    r = load(d, "refscale.json")
    for k in (1, 2):
        out.append((f"read pair ns, {k} reader{'s' if k > 1 else ''}",
                    {x["variant"]: x["ns_per_pair"] for x in r["results"] if x["readers"] == k}, 1))
    s = load(d, "scale.json")
    for rd in (0, 1, 2):
        for key, lab in (("p50_ns", "p50"), ("p99_ns", "p99")):
            out.append((f"synchronize_rcu() {lab} us, {rd} busy reader{'s' if rd != 1 else ''}",
                        {x["lib"]: x[key] for x in s["results"]
                         if x["readers"] == rd and x["callers"] == 1}, 1e3))
    p = load(d, "peers.json")
    labels = {
        "objects_per_s": ("deferred free: objects retired M/s", 1e6),
        "reader_sections_per_s": ("deferred free: reader sections M/s", 1e6),
        "cpu_ns_per_object": ("deferred free: CPU ns per object", 1),
        "helper_cpu_pct": ("helper threads CPU %", 1),
        "peak_unfreed_objects": ("deferred free: peak unfreed objects", 1),
        "ops_per_s": ("hash map: operations M/s", 1e6),
        "unfreed_bytes_peak": ("hash map: unfreed memory peak KiB", 1024),
        "unfreed_bytes_mean": ("hash map: unfreed memory mean KiB", 1024),
        "rss_growth_bytes_peak": ("hash map: RSS growth peak KiB", 1024),
    }
    for sec, prefix in (("deferred_free", "deferred free: "), ("hashmap", "hash map: ")):
        metrics = []
        for x in p.get(sec, []):
            if x["metric"] not in metrics:
                metrics.append(x["metric"])
        for m in metrics:
            lab, sc = labels[m]
            if m == "helper_cpu_pct":
                lab = prefix + ("helper threads CPU %" if sec == "deferred_free"
                                else "CPU outside workers %")
            out.append((lab, {x["peer"]: x["value"] for x in p[sec] if x["metric"] == m}, sc))
    return out, r, s, p


def num(v):
    return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    out, r, s, p = rows(d)
    # The run named in words (the docs carry no ISO dates or commit ids).
    for name, j in (("refscale", r), ("peers", p), ("scale", s)):
        m = j["machine"]
        when = datetime.datetime.strptime(j["date"], "%Y-%m-%dT%H:%M:%SZ")
        print(f"- `{name}`: {when.day} {when:%B %Y, %H:%M} UTC, treercu "
              f"{j['treercu_version']}, {m['cpus']} CPUs {m['model']}, "
              f"load average {' '.join(f'{x:.2f}' for x in m['loadavg'])} at its start")
    print()
    print("| figure | " + " | ".join(PEERS) + " |")
    print("|---|" + "---|" * len(PEERS))
    for lab, row, sc in out:
        cells = [f"{num(row[n]['median'] / sc)} ({row[n]['spread_pct']:.0f}%)" if n in row else "-"
                 for n in PEERS]
        print(f"| {lab} | " + " | ".join(cells) + " |")
    print()
    print("| treercu / peer | " + " | ".join(PEERS[1:]) + " |")
    print("|---|" + "---|" * (len(PEERS) - 1))
    for lab, row, sc in out:
        t = row.get("treercu")
        cells = [f"{t['median'] / row[n]['median']:.2f}x"
                 if t and n in row and row[n]["median"] > 0.01 and t["median"] > 0 else "-"
                 for n in PEERS[1:]]
        print(f"| {lab} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
