#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The file-level call graph of src/, derived from the object files.

For each object, `nm` gives the global symbols it defines and the symbols it
leaves undefined; file A uses file B when A leaves undefined a symbol that B
defines (a function called or a variable read).  Prints every edge with the
symbols behind it, then the layers from the bottom up (a file sits one layer
above the highest file it uses), then the size of each source file.  A
subdirectory of src/ (src/wq/: a target of its own, on top of the core)
counts as one node, named after it: its inner structure is its own.

Exit status 1 when the graph has a circle (any two files that use each other,
directly or through others) or when a src/ C file other than the workqueue's
is longer than MAX_LINES (src/wq/ excepted); 0 otherwise.

  usage: scripts/callgraph.py [OBJECT...]
         (objects may also come as one ';'-separated argument, as CMake's
         $<TARGET_OBJECTS:...> gives them; without arguments, the objects
         of treercu_objects and treercu_wq under build/ are used)
"""
import os
import subprocess
import sys

MAX_LINES = 850
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src")
DEFINED = set("TDBRCVWGS")


def node_of(rel):
    """The graph node of a src/-relative source: a file, or its subdirectory."""
    return rel.split("/")[0] + "/" if "/" in rel else rel


def source_of(obj):
    """src/-relative source path of an object, or None if not from src/."""
    path = obj.replace(os.sep, "/")
    i = path.rfind("/src/")
    if i < 0 or not path.endswith(".c.o"):
        return None
    rel = path[i + len("/src/"):-len(".o")]
    return rel if os.path.exists(os.path.join(SRC, rel)) else None


def find_objects(argv):
    objs = []
    for a in argv:
        objs += [p for p in a.split(";") if p]
    if not objs:
        for target in ("treercu_objects", "treercu_wq"):
            top = os.path.join(ROOT, "build", "CMakeFiles", target + ".dir", "src")
            for d, _, files in os.walk(top):
                objs += [os.path.join(d, f) for f in files if f.endswith(".c.o")]
    return sorted(o for o in objs if source_of(o))


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True,
                         text=True).stdout
    defs, undef = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) < 2:
            continue
        if f[1] == "U":
            undef.add(f[0])
        elif f[1] in DEFINED:
            defs.add(f[0])
    return defs, undef


def circles(nodes, edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def layers(nodes, edges):
    level = {}

    def lv(v, seen=()):
        if v in level:
            return level[v]
        if v in seen:
            return 0
        below = [lv(w, seen + (v,)) for w in edges.get(v, {}) if w != v]
        level[v] = 1 + max(below, default=-1)
        return level[v]

    for v in nodes:
        lv(v)
    return level


def main(argv):
    objs = find_objects(argv)
    if not objs:
        print("callgraph: no object files of src/ found (build first)", file=sys.stderr)
        return 2
    defs, undef = {}, {}
    for o in objs:
        f = node_of(source_of(o))
        d, u = symbols(o)
        defs.setdefault(f, set()).update(d)
        undef.setdefault(f, set()).update(u)
    owner = {}
    for f, ds in defs.items():
        for s in ds:
            owner.setdefault(s, f)
    edges = {}
    for f, us in undef.items():
        for s in us:
            g = owner.get(s)
            if g and g != f:
                edges.setdefault(f, {}).setdefault(g, []).append(s)
    nodes = sorted(defs)
    for f in undef:
        undef[f] -= defs[f]
    print("file-level call graph of src/ (from nm: A -> B when A uses a symbol B defines)")
    for f in nodes:
        for g in sorted(edges.get(f, {})):
            names = sorted(edges[f][g])
            shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
            print(f"  {f} -> {g}  ({len(names)}: {shown})")
    level = layers(nodes, edges)
    print("layers, bottom first (each file uses only files on lower layers):")
    for lv in range(max(level.values()) + 1):
        print(f"  {lv}: " + " ".join(f for f in nodes if level[f] == lv))
    bad = 0
    for c in circles(nodes, edges):
        print("CIRCLE: " + " <-> ".join(c))
        bad = 1
    print(f"source sizes (limit {MAX_LINES} lines; src/wq/ excepted):")
    for d, _, files in sorted(os.walk(SRC)):
        for name in sorted(files):
            if not name.endswith(".c"):
                continue
            path = os.path.join(d, name)
            rel = os.path.relpath(path, SRC)
            with open(path, encoding="utf-8") as fh:
                n = sum(1 for _ in fh)
            exempt = rel.startswith("wq" + os.sep)
            over = n > MAX_LINES and not exempt
            print(f"  {rel:<16} {n:5}{'  TOO LONG' if over else ''}")
            bad |= over
    print("callgraph: " + ("FAIL" if bad else "OK: no circle, no file too long"))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
