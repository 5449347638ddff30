#!/usr/bin/env python3
"""One line per signature: ESTIMATE's choice at every node count (after), bold where it differs from before, with
the earlier choice in parentheses (docs/scale-planner.md).   planner-summary.py AFTER.json BEFORE.json"""
import json
import sys


def short(spec):
    name, _, rest = spec.partition(":")
    keep = [kv.replace("leaders=", "l").replace("segments=", "k").replace("inter=", "").replace("radix=", "r")
            for kv in rest.split(":") if kv.split("=")[0] in ("leaders", "segments", "inter", "radix")]
    return name.split(".", 1)[1] + ("(" + ",".join(keep) + ")" if keep else "")


d, o = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
old = {(l["signature"], l["nodes"]): l for l in o["layouts"]}
sigs = list(dict.fromkeys(l["signature"] for l in d["layouts"]))
nodes = sorted({l["nodes"] for l in d["layouts"]})
print("| signature | " + " | ".join(str(n) for n in nodes) + " |")
print("|---|" + "---|" * len(nodes))
for s in sigs:
    cells = []
    for n in nodes:
        l = next(x for x in d["layouts"] if x["signature"] == s and x["nodes"] == n)
        c, oc = short(l["estimate"]), short(old[(s, n)]["estimate"])
        cells.append(c if c == oc else f"**{c}** (was {oc})")
    print(f"| {s} | " + " | ".join(cells) + " |")
