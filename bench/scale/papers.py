#!/usr/bin/python3
"""The papers' headline experiments side by side: paper figure, SMPI figure, predicted figure (issue 20 part 5;
docs/scale-papers.md). Papers by their keys in docs/references.md; their figures in bench/scale/paper-results.json.

  bench/scale/papers.py predict [--only ID,...]     plancoll-predict at the papers' scales (and at the simulated
                                                    scales) -> bench/results/scale/papers-predict-<id>.json
  bench/scale/papers.py smpi [--only ID,...]        MPI's own collectives under SMPI (bench/scale/smpi-mpi-coll.c) on
                                                    the papers' platforms -> bench/results/scale/papers-smpi-<id>.jsonl
  bench/scale/papers.py smpi-plancoll [--only ID,...]  the papers' proposed algorithms: plancoll plans (forced, and
                                                    ESTIMATE's) in the same benchmark under SMPI, node-local work
                                                    charged at the machine file's rates -> papers-smpi-plancoll-<id>.jsonl
  bench/scale/papers.py tables                      the side-by-side tables (markdown) from those results
  bench/scale/papers.py tables-plancoll             the plancoll-under-SMPI tables (markdown)

Every SMPI run is wrapped in `flock -s /tmp/plancoll-quiet.lock` (simulations never share the machine with real
timings) and in /usr/bin/time, whose wall time and peak resident memory go into the result line with the exact
command. Environment: PLANCOLL_BUILD (default build), PLANCOLL_SMPI_BUILD (default build-smpi: smpi-paper-coll), SMPI_TIMEOUT seconds (default 660), PAPERS_NODES (a comma list: only
the simulations on those node counts).
"""
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("PLANCOLL_BUILD", os.path.join(ROOT, "build"))
PREDICT = os.path.join(BUILD, "predict", "plancoll-predict")
RESULTS = os.path.join(ROOT, "bench", "results", "scale")
WORK = os.environ.get("PAPERS_WORKDIR", "/tmp/plancoll-papers")
LOCK = "/tmp/plancoll-quiet.lock"

GLEX_SIZES = [8, 32, 128, 512, 2048, 8192]              # bytes per pair: the paper's axes are lost (paper-results.json)
DPML_BYTES = [16, 1024, 8192, 65536, 524288]              # MPI_FLOAT sums ([DPML17] 6.2); 8 KB and 512 KB are stated
BRUCK_N = [2, 8, 32, 128, 256, 1024]                      # [BruckNU] data scaling: block sizes uniform in [0, N]
QIAN_SIZES = [4, 256, 8192]                               # [Qian08] 6.5.1 names 4 B and 8 KB (and 256 B)

# id -> machine file, layouts (nodes, ppn) to predict, signatures
PREDICTIONS = {
    "glex-a": ("glex-hpc-a", [(256, 32), (32, 32), (4, 32)], [f"alltoall:{s}" for s in GLEX_SIZES]),
    "glex-b": ("glex-hpc-b", [(50, 24), (16, 24), (8, 24)], [f"alltoall:{s}" for s in GLEX_SIZES]),
    "dpml-a": ("dpml-cluster-a", [(16, 28)], [f"allreduce:float:sum:{b // 4}" for b in DPML_BYTES]),
    "dpml-b": ("dpml-cluster-b", [(64, 28)], [f"allreduce:float:sum:{b // 4}" for b in DPML_BYTES]),
    "bruck-data": ("bruck-theta", [(8, 64), (2, 64), (4, 64)], [f"alltoallv:random:{n}:1" for n in BRUCK_N]),
    "bruck-weak": ("bruck-theta", [(n, 64) for n in (2, 4, 8, 16, 32, 64, 128)], ["alltoallv:random:256:1"]),
    # the poster gives no ranks per node: the same P at 2 .. 64 per node (the machine file assumes 64)
    "bruck-ppn": ("bruck-theta", [(512 // k, k) for k in (2, 8, 16, 32, 64)] + [(8192 // k, k) for k in (2, 8, 16, 32, 64)],
                  ["alltoallv:random:256:1"]),
    "qian": ("qian-connectx-4node", [(4, 4)], [f"alltoall:{s}" for s in QIAN_SIZES]),
}

# Simulations: (id, machine, nodes, ppn, collective, sizes, SMPI collective selectors, extra program args (list of
# lists)). Scales: what finishes here in minutes. MPICH's medium-size alltoall (an Isend/Irecv to every rank at once)
# is the costly one to simulate: 512 B at 1,200 ranks ran past 13 minutes and at 384 ranks past 6, both stopped; so
# the medium sizes and the alltoallv (the same P^2 pattern) run on few nodes (and 512 B at 192 ranks was stopped
# after 7 minutes, 3.5 CPU minutes, on this loaded host: no medium-size alltoall here), Bruck's small sizes on many.
SIMULATIONS = [
    ("glex-b", "glex-hpc-b", 50, 24, "alltoall", [8], ["mpich"], [[]]),
    ("glex-b", "glex-hpc-b", 16, 24, "alltoall", [8], ["mpich"], [[]]),
    ("glex-a", "glex-hpc-a", 32, 32, "alltoall", [8], ["mpich"], [[]]),
    ("glex-a", "glex-hpc-a", 4, 32, "alltoall", [8], ["mpich"], [[]]),
    ("dpml-a", "dpml-cluster-a", 16, 28, "allreduce", [8192, 524288], ["mvapich2"], [[]]),
    ("dpml-b", "dpml-cluster-b", 64, 28, "allreduce", [8192, 524288], ["mvapich2"], [[]]),
    ("bruck-data", "bruck-theta", 2, 64, "alltoallv", [32, 256, 1024], ["mpich"], [[]]),
    ("bruck-data", "bruck-theta", 4, 64, "alltoallv", [256], ["mpich"], [[]]),
    ("qian", "qian-connectx-4node", 4, 4, "alltoall", [4, 256, 8192], ["mvapich2", "bruck", "pair"],
     [["--mif", "0"], ["--mif", "32"], ["--mif", "512"]]),
]


# plancoll's plans in the same benchmark (smpi-paper-coll --plancoll 1): (id, machine, nodes, ppn, collective, sizes,
# specs ("estimate": ESTIMATE's own choice; else forced by PLANCOLL_ALGORITHM), extra program args (list of lists)).
# Scales: those of the MPI runs above that finish here in minutes with plancoll's set-up ([GLEX]-A at 4 nodes,
# [GLEX]-B at 16, [DPML17] at Cluster A's 16 nodes = the paper's 448 ranks, [BruckNU] at 2 nodes, [Qian08] whole).
PLANCOLL_SIMULATIONS = [
    ("glex-a", "glex-hpc-a", 4, 32, "alltoall", [8], ["estimate", "alltoall.onmpml:leaders=4", "alltoall.mpml:leaders=4"], [[]]),
    ("glex-b", "glex-hpc-b", 16, 24, "alltoall", [8], ["estimate", "alltoall.onmpml:leaders=4", "alltoall.mpml:leaders=4"], [[]]),
    ("dpml-a", "dpml-cluster-a", 16, 28, "allreduce", [8192, 524288],
     ["estimate", "allreduce.leader", "allreduce.dpml:leaders=4", "allreduce.dpml:leaders=16",
      "allreduce.dpml_pipelined:leaders=16"], [[]]),
    ("bruck-data", "bruck-theta", 2, 64, "alltoallv", [32, 256, 1024],
     ["estimate", "alltoallv.padded_bruck", "alltoallv.twophase_bruck", "alltoallv.spreadout"], [[]]),
    ("qian", "qian-connectx-4node", 4, 4, "alltoall", [4, 256, 8192], ["estimate", "alltoall.pap"],
     [["--mif", "0"], ["--mif", "32"], ["--mif", "512"]]),
]
# plancoll's waits under SMPI (docs/smpi.md "Waits") and no host CPU timing: its node-local copies and reductions are
# charged at the machine file's rates instead (docs/smpi.md "Node-local work", as bench/scale/sim-vs-predict.sh
# --node-work model), a node's copies sharing its memory (make-platform.py --memory).
# MPI's own collectives that plancoll calls (at plan time, and the benchmark's barriers) are MPICH's algorithms
# (smpi/coll-selector:mpich, as tests/smpi and sim-vs-predict.sh run them): with SMPI's default selection every run
# from 128 ranks ended in SimGrid's max-min solver (SIGSEGV in MaxMin::do_solve) before the first timed call.
PLANCOLL_SMPI_FLAGS = ["--cfg=smpi/test:0", "--cfg=smpi/iprobe:0", "--cfg=smpi/grow-injected-times:no",
                       "--cfg=smpi/simulate-computation:no", "--cfg=smpi/coll-selector:mpich"]


# SMPI times the host CPU between MPI calls and injects it (smpi/simulate-computation, default yes): on this
# loaded 2-core host that made a 4-byte ping-pong 3-4 us instead of the platform's 1.4. The exchanges carry no
# computation, so they run without it (delays are explicit smpi_execute); allreduce keeps it, so that the reductions
# SMPI's collectives execute on this host count (host speed 1:1, make-platform.py's smpi/host-speed).
COMPUTATION = {"alltoall": ["--cfg=smpi/simulate-computation:no"], "alltoallv": ["--cfg=smpi/simulate-computation:no"],
               "allreduce": []}


def run_predict(only):
    os.makedirs(RESULTS, exist_ok=True)
    for pid, (machine, layouts, sigs) in PREDICTIONS.items():
        if only and pid not in only:
            continue
        merged = {"id": pid, "machine": f"machines/{machine}.machine", "commands": [], "results": [], "layouts": []}
        for nodes, ppn in layouts:
            cmd = [PREDICT, "--machine", f"machines/{machine}.machine", "--nodes", str(nodes), "--ppn", str(ppn),
                   "--json", "-"] + sigs
            out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
            d = json.loads(out)
            merged["commands"].append(" ".join(["build/predict/plancoll-predict"] + cmd[1:]))
            merged["results"] += d["results"]
            merged["layouts"] += d["layouts"]
        path = os.path.join(RESULTS, f"papers-predict-{pid}.json")
        with open(path, "w") as f:
            json.dump(merged, f, indent=0)
        print(f"{path}: {len(merged['results'])} predictions", file=sys.stderr)


def build_program():
    os.makedirs(WORK, exist_ok=True)
    exe = os.path.join(WORK, "smpi-mpi-coll")
    src = os.path.join(ROOT, "bench", "scale", "smpi-mpi-coll.c")
    subprocess.run(["smpicc", "-O2", "-Wall", "-Wextra", "-o", exe, src], check=True)
    return exe


def simulate(cmd, timeout, env=None):
    """Runs one simulation in its own session (on a timeout the whole of it, smpirun's smpimain too, is ended):
    (stdout, stderr, wall seconds from /usr/bin/time or the clock, peak RSS in KiB or None), stdout None on a timeout."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, env=env)
    try:
        so, se = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "", timeout, None
    m = re.search(r"TIME ([\d.]+) (\d+)", se)
    return so, se, float(m.group(1)) if m else time.time() - t0, int(m.group(2)) if m else None


def run_smpi(only):
    exe = build_program()
    timeout = int(os.environ.get("SMPI_TIMEOUT", "660"))
    for sid, machine, nodes, ppn, coll, sizes, selectors, extras in SIMULATIONS:
        if only and sid not in only:
            continue
        if os.environ.get("PAPERS_NODES") and str(nodes) not in os.environ["PAPERS_NODES"].split(","):
            continue
        plat = os.path.join(WORK, f"{machine}-{nodes}x{ppn}.xml")
        flags = subprocess.run([os.path.join(ROOT, "machines", "make-platform.py"), f"machines/{machine}.machine",
                                "--nodes", str(nodes), "--ppn", str(ppn), "-o", plat], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.split()
        hosts = plat[:-4] + ".hosts"
        path = os.path.join(RESULTS, f"papers-smpi-{sid}.jsonl")
        with open(path, "a") as out:
            for sel in selectors:
                for size in sizes:
                    for extra in extras:
                        iters = "3" if nodes * ppn > 256 else "20"
                        cmd = ["flock", "-s", LOCK, "/usr/bin/time", "-f", "TIME %e %M", "smpirun", "-platform", plat,
                               "-hostfile", hosts, "-np", str(nodes * ppn)] + flags + [
                               f"--cfg=smpi/{coll}:{sel}"] + COMPUTATION[coll] + [
                               "--log=root.thres:warning", exe, coll, str(size), "--iters", iters, "--warmup", "1",
                               "--ppn", str(ppn), "--label", sel] + extra
                        so, se, wall, rss = simulate(cmd, timeout)
                        if so is None:
                            rec = {"id": sid, "machine": machine, "nodes": nodes, "ppn": ppn, "selector": sel, "bytes": size,
                                   "extra": extra, "error": "timeout",
                                   "wall_s": timeout, "command": shlex.join(cmd)}
                            out.write(json.dumps(rec) + "\n"); out.flush()
                            print(json.dumps(rec), file=sys.stderr)
                            continue
                        res = [json.loads(line) for line in so.splitlines() if line.startswith("{")]
                        rec = {"id": sid, "machine": machine, "nodes": nodes, "ppn": ppn, "selector": sel,
                               "bytes": size, "extra": extra, "result": res[0] if res else None,
                               "wall_s": wall, "maxrss_kb": rss,
                               "command": shlex.join(cmd).replace(ROOT + "/", "").replace(WORK, "$WORK")}
                        if not res:
                            rec["error"] = se[-2000:]
                        out.write(json.dumps(rec) + "\n"); out.flush()
                        print(json.dumps({k: rec[k] for k in ("id", "selector", "bytes", "extra", "wall_s")} |
                                         {"r": rec["result"]}), file=sys.stderr)


def machine_number(machine, key):
    for line in open(os.path.join(ROOT, "machines", f"{machine}.machine")):
        m = re.match(rf"\s*{key}\s*=\s*([0-9.eE+-]+)", line)
        if m:
            return float(m.group(1))
    return None


def run_smpi_plancoll(only):
    exe = os.path.join(os.environ.get("PLANCOLL_SMPI_BUILD", os.path.join(ROOT, "build-smpi")), "bench", "smpi",
                       "smpi-paper-coll")
    if not os.path.exists(exe):
        sys.exit(f"papers.py: {exe} not built (meson setup build-smpi --cross-file meson/smpi.ini && ninja -C build-smpi)")
    os.makedirs(WORK, exist_ok=True)
    timeout = int(os.environ.get("SMPI_TIMEOUT", "660"))
    for sid, machine, nodes, ppn, coll, sizes, specs, extras in PLANCOLL_SIMULATIONS:
        if only and sid not in only:
            continue
        plat = os.path.join(WORK, f"{machine}-{nodes}x{ppn}-memory.xml")
        flags = subprocess.run([os.path.join(ROOT, "machines", "make-platform.py"), f"machines/{machine}.machine",
                                "--nodes", str(nodes), "--ppn", str(ppn), "--memory", "-o", plat], cwd=ROOT, check=True,
                               capture_output=True, text=True).stdout.split()
        hosts = plat[:-4] + ".hosts"
        copy = machine_number(machine, "shm_bandwidth_GBps")
        reduce = machine_number(machine, "reduce_GBps") or copy / 3
        env = dict(os.environ, PLANCOLL_SIM_COPY_GBPS=str(copy), PLANCOLL_SIM_REDUCE_GBPS=str(reduce))
        path = os.path.join(RESULTS, f"papers-smpi-plancoll-{sid}.jsonl")
        with open(path, "a") as out:
            for spec in specs:
                env["PLANCOLL_ALGORITHM"] = "" if spec == "estimate" else spec
                for size in sizes:
                    for extra in extras:
                        iters = "3" if nodes * ppn > 256 else "20"
                        cmd = ["flock", "-s", LOCK, "/usr/bin/time", "-f", "TIME %e %M", "smpirun", "-platform", plat,
                               "-hostfile", hosts, "-np", str(nodes * ppn)] + flags + PLANCOLL_SMPI_FLAGS + [
                               "--log=root.thres:warning", exe, coll, str(size), "--iters", iters, "--warmup", "1",
                               "--ppn", str(ppn), "--plancoll", "1"] + extra
                        rec = {"id": sid, "machine": machine, "nodes": nodes, "ppn": ppn, "spec": spec, "bytes": size,
                               "extra": extra, "copy_GBps": copy, "reduce_GBps": reduce,
                               "command": "PLANCOLL_ALGORITHM=" + shlex.quote(env["PLANCOLL_ALGORITHM"]) +
                               f" PLANCOLL_SIM_COPY_GBPS={copy} PLANCOLL_SIM_REDUCE_GBPS={reduce} " +
                               shlex.join(cmd).replace(ROOT + "/", "").replace(WORK, "$WORK")}
                        so, se, wall, rss = simulate(cmd, timeout, env)
                        if so is None:
                            rec |= {"error": "timeout", "wall_s": timeout}
                            out.write(json.dumps(rec) + "\n"); out.flush()
                            print(json.dumps(rec), file=sys.stderr)
                            continue
                        res = [json.loads(line) for line in so.splitlines() if line.startswith("{")]
                        rec |= {"result": res[0] if res else None, "wall_s": wall, "maxrss_kb": rss}
                        if not res:
                            rec["error"] = se[-2000:]
                        out.write(json.dumps(rec) + "\n"); out.flush()
                        print(json.dumps({k: rec[k] for k in ("id", "spec", "bytes", "extra", "wall_s")} |
                                         {"r": rec["result"]}), file=sys.stderr)


def tables_plancoll():
    """One table per paper: each simulated plancoll spec's time (the paper's metric) beside MPI's under SMPI on the same
    platform and scale (papers-smpi-<id>.jsonl), and the ratio MPI / plancoll."""
    metric = {"glex-a": "max_us", "glex-b": "max_us", "dpml-a": "avg_us", "bruck-data": "median_max_us", "qian": "avg_us"}
    for sid in dict.fromkeys(x[0] for x in PLANCOLL_SIMULATIONS):
        path = os.path.join(RESULTS, f"papers-smpi-plancoll-{sid}.jsonl")
        if not os.path.exists(path):
            continue
        mpi = {}
        mpath = os.path.join(RESULTS, f"papers-smpi-{sid}.jsonl")
        if os.path.exists(mpath):
            for line in open(mpath):
                r = json.loads(line)
                if r.get("result"):
                    key = (r["nodes"], r["bytes"], tuple(r.get("extra") or []))
                    mpi.setdefault(key, {})[r["selector"]] = r["result"][metric[sid]]
        rows = {}
        for line in open(path):
            r = json.loads(line)
            rows[(r["nodes"], r["bytes"], tuple(r.get("extra") or []), r["spec"])] = r  # the last run of each counts
        print(f"\n#### {sid} ({metric[sid]}, us)\n")
        print("| nodes x ppn | bytes | skew | spec (plan) | plancoll | MPI under SMPI | MPI / plancoll | wall s |")
        print("|---|---|---|---|---|---|---|---|")
        for (nodes, size, extra, spec), r in rows.items():
            skew = " ".join(extra) if extra else "-"
            ms = mpi.get((nodes, size, extra), {})
            if r.get("result"):
                t = r["result"][metric[sid]]
                plan = r["result"].get("label", "")
                best = min(ms.values()) if ms else None
                sel = min(ms, key=ms.get) if ms else ""
                ratio = f"{best / t:.2f}" if best else "-"
                print(f"| {nodes} x {r['ppn']} | {size} | {skew} | {spec} ({plan}) | {t:.1f} | "
                      f"{f'{best:.1f} ({sel})' if best else '-'} | {ratio} | {r['wall_s']:.0f} |")
            else:
                err = r.get("error", "")
                why = "timeout" if err == "timeout" else "failed"
                print(f"| {nodes} x {r['ppn']} | {size} | {skew} | {spec} | {why} | - | - | {r['wall_s']:.0f} |")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else ""
    only = set()
    if "--only" in sys.argv:
        only = set(sys.argv[sys.argv.index("--only") + 1].split(","))
    if what == "predict":
        run_predict(only)
    elif what == "smpi":
        run_smpi(only)
    elif what == "smpi-plancoll":
        run_smpi_plancoll(only)
    elif what == "tables-plancoll":
        tables_plancoll()
    elif what == "tables":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import papers_tables
        papers_tables.main()
    else:
        print(__doc__)
        sys.exit(3)
