#!/usr/bin/env python3
"""Regret by simulation on a random draw of allreduce (or alltoall, or uniform alltoallv) cases, for two builds of plancoll-predict (a model
change: before and after; or the same build twice, to judge one model) on one machine file (docs/scale-planner.md
"The pipelined DPML model").

For each drawn case (node count, vector length) both predictors rank every candidate from the machine file; the
union of their top --top specs, the single leader's best and MPI's own collective are simulated under SMPI with
bench/scale/sim-vs-predict.sh (same program, flags and node-work setting for all), and each predictor's choice is
judged against the fastest simulated spec: regret = simulated time of its choice / the best simulated time.

  bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine (--draw 6 --seed S | --cases 4:1024,...) \\
      --before OLD --after NEW \\
      --program build-smpi/bench/smpi/sim-collective --smpi-flags "..." [--node-work model] --out DIR

Writes DIR/draw.json (the seed and the cases), DIR/sim-<machine>-draw.jsonl (sim-vs-predict's lines),
DIR/predict-{before,after}-<case>.json, and DIR/regret-<machine>.md (the table). --table-only rebuilds the table.
The draw: nodes uniform over --nodes, vector length log-uniform over [1, --max-count] doubles (rounded to whole
elements; --collective alltoall or alltoallv: block bytes over [8, --max-count]; alltoallv is the uniform pattern,
sim-vs-predict's alltoallv:BYTES), from Python's random.Random(seed): the same
seed gives the same cases.
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(os.path.dirname(here))


def machine_field(path, key):
    for line in open(path):
        parts = line.split("#")[0].split("=")
        if len(parts) == 2 and parts[0].strip() == key:
            return parts[1].strip()
    return None


def draw_cases(seed, n, nodes, max_count, low=1):
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        N = rng.choice(nodes)
        count = max(low, round(math.exp(rng.uniform(math.log(low), math.log(max_count)))))
        cases.append({"nodes": N, "count": count})
    return cases


def predict(binary, machine, N, ppn, count, path, coll="allreduce"):
    sig = {"allreduce": f"allreduce:double:sum:{count}", "alltoall": f"alltoall:{count}",
           "alltoallv": f"alltoallv:uniform:{count}"}[coll]
    subprocess.run([binary, "--machine", machine, "--nodes", str(N), "--ppn", str(ppn), "--json", path, sig],
                   check=True, capture_output=True)
    d = json.load(open(path))
    rows = sorted(d["results"], key=lambda r: r["predicted_us"])
    return d["estimate"], rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machine", required=True)
    ap.add_argument("--draw", type=int, default=6)
    ap.add_argument("--seed", type=int, default=None, help="the draw's seed (or --cases)")
    ap.add_argument("--cases", default=None, help="a fixed list instead of a draw: NODES:DOUBLES,...")
    ap.add_argument("--nodes", default="2,4,8,16")
    ap.add_argument("--max-count", type=int, default=524288)
    ap.add_argument("--before", required=True, help="plancoll-predict of the model before the change")
    ap.add_argument("--after", required=True, help="plancoll-predict of the model after the change")
    ap.add_argument("--top", type=int, default=3)
    ap.add_argument("--program", required=True)
    ap.add_argument("--smpi-flags", default="")
    ap.add_argument("--node-work", default="none")
    ap.add_argument("--timeout", default="600")
    ap.add_argument("--out", required=True)
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--collective", default="allreduce", choices=["allreduce", "alltoall", "alltoallv"])
    ap.add_argument("--every-algorithm", action="store_true", help="also simulate every other algorithm's best "
                    "variant (by the after model)")
    ap.add_argument("--no-mpi", action="store_true", help="do not simulate MPI's own collective (SMPI's alltoall of "
                    "small blocks takes minutes of wall time from 8 nodes)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    mname = machine_field(a.machine, "name")
    ppn = int(machine_field(a.machine, "cores_per_node"))
    if a.cases:
        cases = [{"nodes": int(c.split(":")[0]), "count": int(c.split(":")[1])} for c in a.cases.split(",")]
    elif a.seed is not None:
        cases = draw_cases(a.seed, a.draw, [int(x) for x in a.nodes.split(",")], a.max_count,
                           1 if a.collective == "allreduce" else 8)
    else:
        ap.error("give --seed (a random draw) or --cases")
    json.dump({"machine": a.machine, "seed": a.seed, "fixed_cases": a.cases, "nodes": a.nodes, "max_count": a.max_count, "cases": cases,
               "node_work": a.node_work}, open(os.path.join(a.out, "draw.json"), "w"), indent=1)
    jsonl = os.path.join(a.out, f"sim-{mname}-draw.jsonl")
    coll = a.collective
    tagc = "" if coll == "allreduce" else coll + "-"  # file names of allreduce runs as before
    picks = []
    for c in cases:
        N, count = c["nodes"], c["count"]
        est, top = {}, {}
        for tag, binary in (("before", a.before), ("after", a.after)):
            est[tag], rows = predict(binary, a.machine, N, ppn, count,
                                     os.path.join(a.out, f"predict-{tag}-{mname}-{tagc}{N}x{count}.json"), coll)
            top[tag] = rows
        specs = []
        for tag in ("before", "after"):
            for r in [est[tag]] + [r["spec"] for r in top[tag][: a.top]]:
                if r not in specs:
                    specs.append(r)
        leader = [r["spec"] for r in top["after"] if r["spec"].startswith(f"{coll}.leader")]
        if leader and leader[0] not in specs:
            specs.append(leader[0])
        if a.every_algorithm:  # and each other algorithm's best variant by the after model
            seen_algs = {x.split(":")[0] for x in specs}
            for r in top["after"]:
                alg = r["spec"].split(":")[0]
                if alg not in seen_algs and not alg.endswith(".native_blocking"):
                    seen_algs.add(alg)
                    specs.append(r["spec"])
        picks.append({"case": c, "estimate": est, "specs": specs})
        if a.table_only:
            continue
        # specs this directory already simulated for the case (an earlier run, another pair of predictors) are not
        # run again: a simulated time does not depend on the model that picked the spec
        done = set()
        if os.path.exists(jsonl):
            for line in open(jsonl):
                r = json.loads(line)
                if r.get("status") == "ok" and r["nodes"] == N and r["case"] == f"{coll}:{count}":
                    done.add(r["impl"])
        todo = [x for x in specs + ([] if a.no_mpi else ["mpi"]) if x not in done]
        if not todo:
            continue
        cmd = [os.path.join(here, "sim-vs-predict.sh"), "--machine", a.machine, "--nodes", str(N), "--ppn", str(ppn),
               "--program", a.program, "--smpi-flags", a.smpi_flags, "--node-work", a.node_work, "--out", a.out,
               "--tag", "draw", "--timeout", a.timeout, "--impl", ",".join(todo), f"{coll}:{count}"]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=False)
    sims = {}
    if os.path.exists(jsonl):
        for line in open(jsonl):
            r = json.loads(line)
            if r.get("status") == "ok" and r.get("simulated_us") is not None:
                if r["case"].startswith(coll + ":"):
                    sims[(r["nodes"], int(r["case"].split(":")[1]), r["impl"])] = r["simulated_us"]
    what = f"seed {a.seed}" if not a.cases else f"cases {a.cases}"
    out = [f"# Regret by simulation, {coll}, {mname}, {what}, node work {a.node_work}", "",
           "Simulated us; `best` is the fastest simulated of the specs run (both models' top "
           f"{a.top}, their choices, the single leader's best"
           + (", every other algorithm's best" if a.every_algorithm else "") + "); regret = choice / best.", "",
           f"| nodes x ppn | {'doubles' if coll == 'allreduce' else 'bytes per pair'} | before: choice | sim | regret | after: choice | sim | regret | best | sim |"
           " MPI |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    summary = {"before": [], "after": []}
    short = lambda s: s.replace(coll + ".", "").replace("placement=first:", "").replace(":stores=auto", "")
    for p in picks:
        N, count = p["case"]["nodes"], p["case"]["count"]
        times = {s: sims.get((N, count, s)) for s in p["specs"]}
        ok = {s: t for s, t in times.items() if t is not None}
        if not ok:
            out.append(f"| {N} x {ppn} | {count} | (no simulation finished) |||||||||")
            continue
        best = min(ok, key=ok.get)
        row = [f"{N} x {ppn}", str(count)]
        for tag in ("before", "after"):
            s = p["estimate"][tag]
            t = ok.get(s)
            reg = t / ok[best] if t else None
            if reg:
                summary[tag].append(reg)
            row += [short(s), f"{t:.1f}" if t else "-", f"{reg:.2f}" if reg else "-"]
        mpi = sims.get((N, count, "mpi"))
        row += [short(best), f"{ok[best]:.1f}", f"{mpi:.1f}" if mpi else "-"]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    for tag in ("before", "after"):
        r = summary[tag]
        if r:
            gm = math.exp(sum(math.log(x) for x in r) / len(r))
            out.append(f"- {tag}: {len(r)} cases, regret geometric mean {gm:.3f}, worst {max(r):.2f}, "
                       f"within 1.10: {sum(x <= 1.10 for x in r)}")
    # The after model's prediction of every simulated spec: where both price node-local work alike (--node-work
    # model), what is left between them is the schedule
    ratios = []
    out += ["", "Simulated over predicted (after model), every plancoll spec simulated:", "",
            f"| nodes x ppn | {'doubles' if coll == 'allreduce' else 'bytes per pair'} | spec | predicted | simulated | sim / pred |", "|---|---|---|---|---|---|"]
    for p in picks:
        N, count = p["case"]["nodes"], p["case"]["count"]
        path = os.path.join(a.out, f"predict-after-{mname}-{tagc}{N}x{count}.json")
        if not os.path.exists(path):
            continue
        pred = {r["spec"]: r["predicted_us"] for r in json.load(open(path))["results"]}
        for spec in p["specs"]:
            t = sims.get((N, count, spec))
            if t is None or spec not in pred or pred[spec] <= 0:
                continue
            ratios.append(t / pred[spec])
            out.append(f"| {N} x {ppn} | {count} | {short(spec)} | {pred[spec]:.1f} | {t:.1f} | {t / pred[spec]:.2f} |")
    if ratios:
        ratios.sort()
        med = ratios[len(ratios) // 2]
        out += ["", f"- {len(ratios)} specs: sim / pred median {med:.2f}, within 25%: "
                f"{sum(0.8 <= r <= 1.25 for r in ratios)}, within 2x: {sum(0.5 <= r <= 2 for r in ratios)}"]
    text = "\n".join(out) + "\n"
    open(os.path.join(a.out, f"regret-{mname}{'' if coll == 'allreduce' else '-' + coll}.md"), "w").write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
