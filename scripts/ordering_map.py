#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Print the ordering map: every comment in src/ and include/treercu/ that
names the pair of a barrier or atomic ("pairs with ..."), as one markdown
table row: where (file:function) and what the comment says.

  usage: scripts/ordering_map.py                 print the table
         scripts/ordering_map.py --write DOC     put it in DOC between the
                                                 ordering-map markers
         scripts/ordering_map.py --check DOC     exit 1 if DOC's copy differs
docs/design.md holds the table ("The ordering map"); the ctest
ordering_map_current runs --check, so a changed pairing comment needs
--write.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUNC = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*\(\),]*?\b(\w+)\([^;]*$")


def rows(path):
    rel = os.path.relpath(path, ROOT)
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    func, out, i = "(file scope)", [], 0
    while i < len(lines):
        line = lines[i]
        m = FUNC.match(line)
        if m and not line.startswith((" ", "\t", "#", "/", "*")):
            func = m.group(1)
        if "/*" in line:
            j = i
            while "*/" not in lines[j] and j + 1 < len(lines):
                j += 1
            text = " ".join(l.strip().lstrip("/*").rstrip("*/").strip()
                            for l in lines[i:j + 1])
            text = re.sub(r"\s+", " ", text).strip()
            if re.search(r"[Pp]airs? with", text):
                out.append((f"{rel}:{func}", text.replace("|", "\\|")))
            i = j + 1
            continue
        i += 1
    return out


BEGIN, END = "<!-- ordering-map: scripts/ordering_map.py --write -->", "<!-- /ordering-map -->"


def table():
    files = []
    for top in ("src", os.path.join("include", "treercu")):
        for d, _, names in sorted(os.walk(os.path.join(ROOT, top))):
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    out = ["| where | the ordering and its pair |", "|---|---|"]
    for f in files:
        out += [f"| `{where}` | {text} |" for where, text in rows(f)]
    return "\n".join(out) + "\n"


def main(argv):
    t = table()
    if not argv:
        sys.stdout.write(t)
        return 0
    mode, doc = argv[0], argv[1]
    with open(doc, encoding="utf-8") as fh:
        text = fh.read()
    a, b = text.index(BEGIN) + len(BEGIN) + 1, text.index(END)
    if mode == "--check":
        if text[a:b] != t:
            print(f"ordering_map: the table in {doc} is stale: run "
                  f"scripts/ordering_map.py --write {doc}", file=sys.stderr)
            return 1
        print(f"ordering_map: {doc} is current ({t.count(chr(10)) - 2} pairs)")
        return 0
    with open(doc, "w", encoding="utf-8") as fh:
        fh.write(text[:a] + t + text[b:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
