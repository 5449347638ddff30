#!/usr/bin/env python3
"""Tables of bench/scale/sim-vs-predict.sh's results (docs/scale-planner.md): for each case and node count, every
implementation's simulated time next to its prediction, and the simulation's own cost (wall seconds, peak RSS).

    sim-vs-predict.py OUT/sim-MACHINE.jsonl [--predict-dir OUT]

The prediction of MPI's own collective (impl mpi) is the planner's model of it: the <collective>.native candidate
(plancoll's cost function for the MPI library's algorithm at that size); of mpi:bruck, plancoll's <collective>.bruck
at radix 2 (the same schedule); a plancoll run is matched by its
spec (the plan's full PLANCOLL_ALGORITHM spec, which plancoll-predict lists). ratio = simulated / predicted.
"""
import argparse
import json
import math
import os
from collections import defaultdict

SIG = {"alltoall": "alltoall:{}", "alltoallv": "alltoallv:uniform:{}", "allreduce": "allreduce:double:sum:{}"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("--predict-dir")
    a = ap.parse_args()
    rows = [json.loads(l) for l in open(a.jsonl) if l.strip()]
    pdir = a.predict_dir or os.path.dirname(a.jsonl)
    preds = {}
    for r in rows:
        key = (r["machine"], r["case"])
        if key in preds:
            continue
        path = os.path.join(pdir, f"predict-{r['machine']}-{r['case'].replace(':', '-', 1)}.json")
        preds[key] = json.load(open(path)) if os.path.exists(path) else {"results": [], "layouts": []}
    bycase = defaultdict(list)
    for r in rows:
        bycase[(r["machine"], r["case"])].append(r)
    for (machine, case), rs in bycase.items():
        coll = case.split(":")[0]
        pr = preds[(machine, case)]
        print(f"### {case} on {machine}\n")
        print("| nodes | P | implementation | simulated us | predicted us | sim / pred | ESTIMATE's choice (predicted us) |"
              " wall s | peak RSS MiB | status |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(rs, key=lambda r: (r["nodes"], r["impl"])):
            N = r["nodes"]
            cands = [x for x in pr["results"] if x["nodes"] == N]
            if r["impl"] == "mpi:bruck":
                # SMPI's bruck is MPICH's radix-2 Bruck: plancoll's alltoall.bruck at radix 2 is the same schedule
                same = [x["predicted_us"] for x in cands if x["algorithm"] == f"{coll}.bruck" and "radix=2" in x["spec"]]
                pred = min(same) if same else None
            elif r["impl"].startswith("mpi"):
                native = [x["predicted_us"] for x in cands if x["algorithm"] == f"{coll}.native"]
                pred = min(native) if native else None
            else:
                m = [x["predicted_us"] for x in cands if x["spec"] == r.get("spec")]
                pred = m[0] if m else None
            lay = [l for l in pr["layouts"] if l["nodes"] == N]
            est = f"{lay[0]['estimate'].split(':')[0]} ({lay[0]['estimate_us']:.1f})" if lay else ""
            sim = r.get("simulated_us")
            ratio = f"{sim / pred:.2f}" if sim and pred else ""
            fmt = lambda v: "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.1f}"
            # a run ended by the timeout is reaped by nobody who reports it: its peak memory is not known
            rss = r.get("max_rss_kb") if r["status"] == "ok" else None
            print(f"| {N} | {r['ranks']} | {r['impl'] if r['impl'] != 'estimate' else 'plancoll ESTIMATE'}"
                  f"{'' if r['impl'].startswith('mpi') or not r.get('spec') else ' (' + r['spec'] + ')'} | {fmt(sim)} | "
                  f"{fmt(pred)} | {ratio} | {est} | {r.get('wall_s', '')} | {'' if rss is None else f'{rss / 1024:.0f}'} |"
                  f" {r['status']} |")
        print()
    # the simulation's own cost by P: wall seconds and peak RSS of every finished run
    print("### The simulation's own cost\n")
    print("| case | implementation | " + " | ".join(f"P={p}" for p in sorted({r["ranks"] for r in rows})) + " |")
    print("|---|---|" + "---|" * len({r["ranks"] for r in rows}))
    for (machine, case), rs in bycase.items():
        for impl in sorted({r["impl"] for r in rs}):
            cells = []
            for P in sorted({r["ranks"] for r in rows}):
                x = [r for r in rs if r["impl"] == impl and r["ranks"] == P]
                if not x:
                    cells.append("")
                elif x[0]["status"] == "ok":
                    cells.append(f"{x[0]['wall_s']:.1f} s, {x[0]['max_rss_kb'] / 1024:.0f} MiB")
                else:
                    cells.append(x[0]["status"] + (f" ({x[0]['wall_s']:.0f} s)" if x[0].get("wall_s") else ""))
            print(f"| {case} | {impl} | " + " | ".join(cells) + " |")
    print()


if __name__ == "__main__":
    main()
