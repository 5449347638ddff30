#!/usr/bin/env python3
"""ESTIMATE's choice per signature and node count from plancoll-predict's JSON, as a Markdown table: the choice,
its predicted time, the best predicted time of every algorithm (its best variant), and the number of candidates.
With a second JSON (--before), a column of the earlier choice and its predicted time under this JSON's model
divided by this choice's ("old/new": what keeping the old choice would cost, by the new model).

    planner-table.py PREDICT.json [--before OLD.json]
"""
import argparse
import json
from collections import defaultdict


def load(path):
    d = json.load(open(path))
    best = defaultdict(dict)  # (sig, nodes) -> alg -> (us, spec)
    d["by_spec"] = {(r["signature"], r["nodes"], r["spec"]): r["predicted_us"] for r in d["results"]}
    for r in d["results"]:
        k = (r["signature"], r["nodes"])
        a = r["algorithm"]
        if a not in best[k] or r["predicted_us"] < best[k][a][0]:
            best[k][a] = (r["predicted_us"], r["spec"])
    return d, best


def short(spec):
    name, _, rest = spec.partition(":")
    keep = [kv for kv in rest.split(":") if kv and kv.split("=")[0] in ("leaders", "segments", "inter", "radix")]
    return name.split(".", 1)[1] + (":" + ":".join(keep) if keep else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--before")
    a = ap.parse_args()
    d, best = load(a.json)
    old = {}
    if a.before:
        od, _ = load(a.before)
        old = {(l["signature"], l["nodes"]): l for l in od["layouts"]}
    bysig = defaultdict(list)
    for l in d["layouts"]:
        bysig[l["signature"]].append(l)
    print(f"model: {d['model'].get('name', d['model'].get('source'))}\n")
    for sig, ls in bysig.items():
        algs = sorted({alg for l in ls for alg in best[(sig, l["nodes"])]})
        head = ["nodes", "P", "cands", "ESTIMATE's choice", "us"] + (["before", "old/new"] if old else [])
        head += [x.split(".", 1)[1] for x in algs]
        print(f"### {sig}\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for l in ls:
            k = (sig, l["nodes"])
            row = [str(l["nodes"]), str(l["ranks"]), str(l["candidates"]), short(l["estimate"]), f"{l['estimate_us']:.1f}"]
            if old:
                o = old.get(k)
                t = d["by_spec"].get((sig, l["nodes"], o["estimate"])) if o else None
                row += [short(o["estimate"]), f"{t / l['estimate_us']:.3f}" if t else "-"] if o else ["", ""]
            row += [f"{best[k][x][0]:.1f}" if x in best[k] else "-" for x in algs]
            print("| " + " | ".join(row) + " |")
        print()


if __name__ == "__main__":
    main()
