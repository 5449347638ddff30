"""The side-by-side tables of docs/scale-papers.md from bench/results/scale/papers-*.json[l] (bench/scale/papers.py
tables). Markdown on standard output. Predicted figures: plancoll-predict's, per algorithm the best variant unless a
parameter is fixed (leaders=4 ...). SMPI figures: MPI's own collective under SMPI (smpi-mpi-coll.c), named by SMPI's
selector."""
import json
import os
import random
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "bench", "results", "scale")


def load_predict(pid):
    path = os.path.join(RESULTS, f"papers-predict-{pid}.json")
    return json.load(open(path)) if os.path.exists(path) else {"results": []}


def load_smpi(sid):
    path = os.path.join(RESULTS, f"papers-smpi-{sid}.jsonl")
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def pick(pred, sig, nodes, alg, ppn=None, **fixed):
    """Least predicted time of algorithm `alg` (every variant with the fixed parameters) on (sig, nodes[, ppn])."""
    best = None
    for r in pred["results"]:
        if r["signature"] != sig or r["nodes"] != nodes or r["algorithm"] != alg or (ppn and r["ppn"] != ppn):
            continue
        params = dict(kv.split("=") for kv in r["spec"].split(":")[1:])
        if any(params.get(k) != str(v) for k, v in fixed.items()):
            continue
        if best is None or r["predicted_us"] < best[0]:
            best = (r["predicted_us"], r["spec"])
    return best


def smpi_value(runs, selector, size, metric="max_us", mif=None):
    for r in runs:
        if r["selector"] == selector and r["bytes"] == size and r.get("result"):
            if mif is not None and r["result"]["mif"] != mif:
                continue
            return r["result"][metric], r
    return None, None


def fmt(x, nd=0):
    if x is None:
        return "-"
    if nd == 0:
        return f"{x:,.0f}" if x >= 100 else f"{x:.1f}"
    return f"{x:.{nd}f}"


def human(b):
    return f"{b // 1024} KiB" if b >= 1024 and b % 1024 == 0 else f"{b} B"


def glex(pid, machine, nodes, ppn, sim_nodes, paper_speedup):
    pred = load_predict(pid)
    runs = load_smpi(pid)
    sizes = sorted({int(r["signature"].split(":")[1]) for r in pred["results"]})
    print(f"\n**{machine}, {nodes} nodes x {ppn} (P = {nodes * ppn})**: predicted us (best variant) and ratios\n")
    print("| bytes/pair | MPI (native) | L-a2a (leader) | MPML 2 | MPML 4 | ONMPML 4 | ESTIMATE | ONMPML 4 / MPI "
          "speedup | MPML 4 vs L-a2a |")
    print("|---|---|---|---|---|---|---|---|---|")
    speedups = []
    for s in sizes:
        sig = f"alltoall:{s}"
        nat = pick(pred, sig, nodes, "alltoall.native")
        la = pick(pred, sig, nodes, "alltoall.leader")
        m2 = pick(pred, sig, nodes, "alltoall.mpml", leaders=2)
        m4 = pick(pred, sig, nodes, "alltoall.mpml", leaders=4)
        o4 = pick(pred, sig, nodes, "alltoall.onmpml", leaders=4)
        est = min((r for r in pred["results"] if r["signature"] == sig and r["nodes"] == nodes),
                  key=lambda r: r["predicted_us"])
        sp = nat[0] / o4[0]
        speedups.append(sp)
        print(f"| {s} | {fmt(nat[0])} | {fmt(la[0])} | {fmt(m2[0])} | {fmt(m4[0])} | {fmt(o4[0])} | "
              f"{est['algorithm'].split('.')[1]} {fmt(est['predicted_us'])} | {sp:.2f}x | "
              f"{(la[0] / m4[0] - 1) * 100:+.0f}% |")
    print(f"\nMean predicted ONMPML-4 speedup over MPI over these sizes: **{statistics.mean(speedups):.2f}x** "
          f"(paper: {paper_speedup}x on average over its sizes); over the sizes up to 128 B: "
          f"{statistics.mean(speedups[:3]):.2f}x.")
    if runs:
        print("\nMPI's alltoall at the simulated scales: SMPI vs predicted (alltoall.native's estimate at the same "
              "scale)\n")
        print("| nodes x ppn | bytes/pair | SMPI selector | SMPI max us | predicted native us | SMPI / predicted | predicted ONMPML 4 "
              "| SMPI MPI / predicted ONMPML 4 | sim wall s | sim peak RSS MiB |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in runs:
            if not r.get("result"):
                print(f"| {r['bytes']} | {r['selector']} | {r.get('error', 'failed')[:40]} | | | | | {r['wall_s']} | |")
                continue
            sig = f"alltoall:{r['bytes']}"
            nat = pick(pred, sig, r["nodes"], "alltoall.native")
            o4 = pick(pred, sig, r["nodes"], "alltoall.onmpml", leaders=4)
            v = r["result"]["max_us"]
            print(f"| {r['nodes']} x {r['ppn']} | {r['bytes']} | {r['selector']} | {fmt(v)} | {fmt(nat[0]) if nat else '-'} | "
                  f"{v / nat[0]:.2f} | {fmt(o4[0])} | {v / o4[0]:.2f}x | {r['wall_s']:.0f} | "
                  f"{r['maxrss_kb'] / 1024:.0f} |" if nat else "")


def dpml(pid, machine, nodes, ppn, paper):
    pred = load_predict(pid)
    runs = load_smpi(pid)
    counts = sorted({int(r["signature"].split(":")[3]) for r in pred["results"]})
    print(f"\n**{machine}, {nodes} nodes x {ppn} (P = {nodes * ppn})**, MPI_SUM of floats: predicted us; SMPI us "
          "(MPI's own allreduce at full scale, avg over ranks as OSU)\n")
    print("| bytes | MPI (native) | single leader | DPML 2-16 best (leaders) | DPML 16 | DPML-pipelined best | "
          "DPML / MPI | DPML 16 / single leader | SMPI mvapich2 | SMPI mvapich2 / predicted native | "
          "SMPI mvapich2 / DPML best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in counts:
        b = c * 4
        sig = f"allreduce:float:sum:{c}"
        nat = pick(pred, sig, nodes, "allreduce.native")
        sl = pick(pred, sig, nodes, "allreduce.leader")
        per = [(pick(pred, sig, nodes, "allreduce.dpml", leaders=L), L) for L in (2, 4, 8, 16)]
        per = [(x[0], L) for x, L in per if x]
        best = min(per)
        d16 = pick(pred, sig, nodes, "allreduce.dpml", leaders=16)
        pip = min(x for x in (pick(pred, sig, nodes, "allreduce.dpml_pipelined", leaders=L) for L in (2, 4, 8, 16))
                  if x)
        mv, _ = smpi_value(runs, "mvapich2", b, "avg_us")
        print(f"| {human(b)} | {fmt(nat[0])} | {fmt(sl[0])} | {fmt(best[0])} ({best[1]}) | {fmt(d16[0])} | "
              f"{fmt(pip[0])} | {nat[0] / best[0]:.2f}x | {sl[0] / d16[0]:.2f}x | {fmt(mv)} | "
              f"{f'{mv / nat[0]:.2f}' if mv else '-'} | {f'{mv / best[0]:.2f}x' if mv else '-'} |")
    for r in runs:
        if r.get("result"):
            print(f"\n- SMPI {r['selector']} {human(r['bytes'])}: simulation wall {r['wall_s']:.0f} s, peak RSS "
                  f"{r['maxrss_kb'] / 1024:.0f} MiB", end="")
    print(f"\n\nPaper: {paper}")


def bruck(paper):
    pred = load_predict("bruck-data")
    runs = load_smpi("bruck-data")
    print("\n**Theta, 8 nodes x 64 (P = 512; ppn assumed)**, block sizes uniform in [0, N] (seed 1): predicted us; "
          "SMPI MPI_Alltoallv (max over ranks)\n")
    print("| N | MPI_Alltoallv (native) | spread-out | padded Bruck r2 | padded Bruck best | two-phase Bruck best | "
          "padded r2 vs MPI | two-phase vs MPI |")
    print("|---|---|---|---|---|---|---|---|")
    for n in sorted({int(r["signature"].split(":")[2]) for r in pred["results"] if r["nodes"] == 8}):
        sig = f"alltoallv:random:{n}:1"
        nat = pick(pred, sig, 8, "alltoallv.native")
        so = pick(pred, sig, 8, "alltoallv.spreadout")
        p2 = pick(pred, sig, 8, "alltoallv.padded_bruck", radix=2)
        pb = pick(pred, sig, 8, "alltoallv.padded_bruck")
        tb = pick(pred, sig, 8, "alltoallv.twophase_bruck")
        print(f"| {n} | {fmt(nat[0])} | {fmt(so[0])} | {fmt(p2[0])} | {fmt(pb[0])} | {fmt(tb[0])} | "
              f"{nat[0] / p2[0]:.2f}x | {nat[0] / tb[0]:.2f}x |")
    if runs:
        print("\nMPI_Alltoallv at the simulated scale: SMPI (max over ranks, mean of iterations) vs predicted\n")
        print("| nodes x ppn | N | SMPI mpich | predicted native | SMPI / predicted | predicted padded r2 | "
              "predicted two-phase | sim wall s | sim peak RSS MiB |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in runs:
            if not r.get("result"):
                print(f"| {r.get('nodes')} x {r.get('ppn')} | {r['bytes']} | {r.get('error', 'failed')[:30]} | | | | | "
                      f"{r['wall_s']} | |")
                continue
            sig = f"alltoallv:random:{r['bytes']}:1"
            nat = pick(pred, sig, r["nodes"], "alltoallv.native")
            p2 = pick(pred, sig, r["nodes"], "alltoallv.padded_bruck", radix=2)
            tb = pick(pred, sig, r["nodes"], "alltoallv.twophase_bruck")
            v = r["result"]["max_us"]
            print(f"| {r['nodes']} x {r['ppn']} | {r['bytes']} | {fmt(v)} | {fmt(nat[0])} | {v / nat[0]:.2f} | "
                  f"{fmt(p2[0])} | {fmt(tb[0])} | {r['wall_s']:.0f} | {r['maxrss_kb'] / 1024:.0f} |")
    weak = load_predict("bruck-weak")
    print("\nWeak scaling, N = 256 (the paper's N per curve is lost), 64 ranks per node: predicted\n")
    print("| P | MPI (native) | padded Bruck r2 | two-phase Bruck best | padded r2 vs MPI |")
    print("|---|---|---|---|---|")
    for nodes in sorted({r["nodes"] for r in weak["results"]}):
        sig = "alltoallv:random:256:1"
        nat = pick(weak, sig, nodes, "alltoallv.native")
        p2 = pick(weak, sig, nodes, "alltoallv.padded_bruck", radix=2)
        tb = pick(weak, sig, nodes, "alltoallv.twophase_bruck")
        print(f"| {nodes * 64} | {fmt(nat[0])} | {fmt(p2[0])} | {fmt(tb[0])} | {nat[0] / p2[0]:.2f}x |")
    ppn = load_predict("bruck-ppn")
    if ppn["results"]:
        print("\nThe same at other ranks per node (N = 256): predicted\n")
        print("| P | ppn | MPI (native) | padded Bruck r2 | two-phase Bruck best | padded r2 vs MPI | two-phase vs MPI |")
        print("|---|---|---|---|---|---|---|")
        for nodes, k in sorted({(r["nodes"], r["ppn"]) for r in ppn["results"]}, key=lambda x: (x[0] * x[1], x[1])):
            sig = "alltoallv:random:256:1"
            nat = pick(ppn, sig, nodes, "alltoallv.native", k)
            p2 = pick(ppn, sig, nodes, "alltoallv.padded_bruck", k, radix=2)
            tb = pick(ppn, sig, nodes, "alltoallv.twophase_bruck", k)
            print(f"| {nodes * k} | {k} | {fmt(nat[0])} | {fmt(p2[0])} | {fmt(tb[0])} | {nat[0] / p2[0]:.2f}x | "
                  f"{nat[0] / tb[0]:.2f}x |")
    print(f"\nPaper: {paper}")


def arrival_bound(P, D, t_block, t0, trials=20000, seed=1):
    """Mean over ranks of max(A_max - a_i + t_block, t0) for arrivals a_i uniform in [0, D]: no alltoall that needs a
    block from every rank can end before the last rank arrived and sent one block, nor faster than without skew."""
    rng = random.Random(seed)
    total = 0.0
    for _ in range(trials // P + 1):
        a = [rng.uniform(0, D) for _ in range(P)]
        amax = max(a)
        total += sum(max(amax - x + t_block, t0) for x in a) / P
    return total / (trials // P + 1)


def qian(paper):
    pred = load_predict("qian")
    runs = load_smpi("qian")
    print("\n**4 nodes x 4 (P = 16)**, mean over ranks of the call time (the thesis' metric), us\n")
    print("| bytes | MIF | predicted native (skew-free) | predicted PAP (skew-free) | predicted pairwise | SMPI mvapich2 |"
          " SMPI bruck | SMPI pair | arrival bound | SMPI mvapich2 / bound |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for s in sorted({int(r["signature"].split(":")[1]) for r in pred["results"]}):
        sig = f"alltoall:{s}"
        nat = pick(pred, sig, 4, "alltoall.native")
        pap = pick(pred, sig, 4, "alltoall.pap")
        pw = pick(pred, sig, 4, "alltoall.pairwise")
        for mif in (0, 32, 512):
            mv, rec = smpi_value(runs, "mvapich2", s, "avg_us", mif)
            br, _ = smpi_value(runs, "bruck", s, "avg_us", mif)
            pa, _ = smpi_value(runs, "pair", s, "avg_us", mif)
            tb = rec["result"]["t_block_us"] if rec and mif else 0
            bound = arrival_bound(16, mif * tb, tb, pap[0]) if mif else pap[0]
            print(f"| {s} | {mif} | {fmt(nat[0], 1)} | {fmt(pap[0], 1)} | {fmt(pw[0], 1)} | {fmt(mv)} | {fmt(br)} | "
                  f"{fmt(pa)} | {fmt(bound)} | {(mv / bound) if mv else float('nan'):.2f}x |")
    print(f"\nPaper: {paper}")


def main():
    print("### [GLEX]")
    glex("glex-a", "HPC-A", 256, 32, 32, 3.53)
    glex("glex-b", "HPC-B", 50, 24, 50, 3.7)
    print("\n### [DPML17]")
    dpml("dpml-a", "Cluster A", 16, 28, "up to 3.59x over MVAPICH2 (Fig. 9(a), scale not stated); best leaders at "
         "8 KB: 4 (Fig. 4)")
    dpml("dpml-b", "Cluster B", 64, 28, "16 leaders 4.9x faster than 1 at 512 KB (Fig. 5); best leaders at 8 KB: 4; "
         "up to 3.08x over MVAPICH2 (Fig. 9(b))")
    print("\n### [BruckNU]")
    bruck("padded Bruck 32.52% faster than MPI_Alltoallv at N = 256, 512 processes (speedup 1.33x if 'faster' is "
          "T_MPI / T - 1, 1.48x if it is the time saved); 73.95% at 8,192 processes (1.74x or 3.84x)")
    print("\n### [Qian08]")
    qian("PAP_Direct 3.1x over MVAPICH at 8 KB, MIF 32; 1.5x at MIF 512; PAP_Shm_Direct 3.5x at 4 B, MIF 32, "
         "1.2x at MIF 512")


if __name__ == "__main__":
    main()
