#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check that docs/tunables.md describes the tunables the code has: every
row of a tunables table in src/ (`{ T(name), min, max, default,
kernel_default, ... }`) has a row in the document with the same range, and
the same default and kernel-profile default where the code gives a number
(-1 marks a default computed at init, which the document states in words).
Every row the document has names a tunable of the code.

  usage: scripts/tunables_doc.py DOC SRC_DIR     exit 1 and name each mismatch
"""
import os
import re
import sys

ROW_CODE = re.compile(r"\{\s*TN?\((\w+)(?:,\s*\w+)?\),\s*([^,]+),\s*([^,]+),\s*([^,]+),\s*([^,]+),")
ROW_WQ = re.compile(r"WQ_ROW\((\w+),\s*([^,]+),\s*([^,]+),\s*([^)]+)\)")
ROW_NAMED = re.compile(r"\{\s*\.name\s*=\s*\"(\w+)\"")
DEFINE = re.compile(r"^#define\s+(\w+)\s+(-?\d+)\b", re.M)
ROW_DOC = re.compile(r"^\|\s*`(\w+)`\s*\|\s*([^|]+)\|\s*([^|]+)\|\s*([^|]+)\|")


def sources(src_dir):
    for top, _, files in os.walk(src_dir):
        for name in sorted(files):
            if name.endswith((".c", ".h")):
                with open(os.path.join(top, name), encoding="utf-8") as fh:
                    yield name, fh.read()


def code_rows(src_dir):
    """name -> [min, max, default, kernel default] as text; a value that is
    a constant's name is replaced by its number, an expression is kept."""
    consts, rows = {}, {}
    for _, text in sources(src_dir):
        consts.update(DEFINE.findall(text))
    for name, text in sources(src_dir):
        if not name.endswith(".c"):
            continue
        for m in ROW_CODE.finditer(text):
            rows[m.group(1)] = [consts.get(x.strip(), x.strip()) for x in m.groups()[1:]]
        for m in ROW_WQ.finditer(text):
            if m.group(1).endswith("_"):
                continue   # the macro's own definition
            lo, hi, dflt = (consts.get(x.strip(), x.strip()) for x in m.groups()[1:])
            rows[m.group(1)] = [lo, hi, dflt, dflt]
        for m in ROW_NAMED.finditer(text):
            rows.setdefault(m.group(1), ["?", "?", "-1", "-1"])   # values by name
    return rows


def number(text):
    """The number a document cell starts with ('1e9' and '10000' alike), or None."""
    m = re.match(r"`?(-?\d+(?:\.\d+)?(?:e\d+)?)", text.strip())
    return int(float(m.group(1))) if m else None


def doc_rows(doc):
    rows = {}
    with open(doc, encoding="utf-8") as fh:
        for line in fh:
            m = ROW_DOC.match(line)
            if m and m.group(1) != "name":
                rows[m.group(1)] = [x.strip() for x in m.groups()[1:]]
    return rows


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    code, doc = code_rows(sys.argv[2]), doc_rows(sys.argv[1])
    bad = []
    if not code:
        bad.append("no tunables table found under %s" % sys.argv[2])
    for name, (lo, hi, dflt, kern) in sorted(code.items()):
        if name not in doc:
            bad.append("%s: in the code, not in the document" % name)
            continue
        rng, ddflt, dkern = doc[name]
        if lo.lstrip("-").isdigit() and hi.lstrip("-").isdigit():
            parts = rng.split("..")
            if len(parts) < 2 or number(parts[0]) != int(lo) or number(parts[1]) != int(hi):
                bad.append("%s: range %s..%s in the code, '%s' in the document"
                           % (name, lo, hi, rng))
        if dflt.lstrip("-").isdigit() and dflt != "-1" and number(ddflt) != int(dflt):
            bad.append("%s: default %s in the code, '%s' in the document" % (name, dflt, ddflt))
        # The workqueue's table has no kernel-profile column (its rows keep
        # their defaults in both profiles).
        if (not name.startswith("wq_") and kern.lstrip("-").isdigit() and kern != "-1"
                and number(dkern) != int(kern)):
            bad.append("%s: kernel-profile default %s in the code, '%s' in the document"
                       % (name, kern, dkern))
    for name in sorted(set(doc) - set(code)):
        bad.append("%s: in the document, not in the code" % name)
    for line in bad:
        print("tunables_doc: " + line)
    if not bad:
        print("tunables_doc: %d tunables, document current" % len(code))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
