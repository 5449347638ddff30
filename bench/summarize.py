#!/usr/bin/env python3
"""Summarises plancoll-bench JSON results: per size, every implementation's median, the best plancoll
algorithm, MPI's best (blocking only at 1n2p, where it is fair; persistent or nonblocking elsewhere, per
docs/measurement.md) and their ratio, and the planner's ESTIMATE choice with its ratio to the best.

Open MPI's configurations (ompi-*) count its blocking collective everywhere: its waits yield there
(OMPI_MCA_mpi_yield_when_idle=1 in bench/configurations.sh), so blocking is as fair as the other two forms.

usage: bench/summarize.py RESULT.json [...] [--all]"""
import json
import sys


def summarize(path, show_all):
    d = json.load(open(path))
    cfg = d.get("configuration", "?")
    title = f"{cfg} {d.get('collective', '?')}" + (f" ({d['pattern']})" if d.get("pattern") else "")
    choice = {int(c["bytes"]): c["algorithm"] for c in d.get("planner_choice", [])} if isinstance(d.get("planner_choice"), list) else {}
    by_size = {}
    for r in d["results"]:
        by_size.setdefault(int(r["bytes"]), {})[r["impl"]] = r["median_us"]
    with_blocking = cfg == "1n2p" or cfg.startswith("ompi-")
    print(f"== {title}: best plancoll vs MPI's best ({'blocking/persistent/nonblocking' if with_blocking else 'persistent/nonblocking, yield-waited'})")
    for size in sorted(by_size):
        impls = by_size[size]
        pc = {k: v for k, v in impls.items() if k.startswith("plancoll:")}
        mpi_keys = ["mpi:blocking", "mpi:persistent", "mpi:nonblocking"] if with_blocking else ["mpi:persistent", "mpi:nonblocking"]
        mpi = {k: impls[k] for k in mpi_keys if k in impls}
        if not pc or not mpi:
            continue
        bp = min(pc, key=pc.get)
        bm = min(mpi, key=mpi.get)
        line = f"{size:>9} B  best {bp[9:]:<44} {pc[bp]:>11.2f} us  MPI {bm[4:]:<12} {mpi[bm]:>11.2f} us  speed-up {mpi[bm] / pc[bp]:6.2f}x"
        if size in choice:
            ch = "plancoll:" + choice[size]
            if ch in pc:
                line += f"  ESTIMATE {choice[size]} {pc[ch] / pc[bp]:.2f}x of best"
        print(line)
        if show_all:
            for k in sorted(pc, key=pc.get):
                print(f"{'':14}{k[9:]:<48} {pc[k]:>11.2f} us  {mpi[bm] / pc[k]:6.2f}x")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--all"]
    for p in args:
        summarize(p, "--all" in sys.argv)
