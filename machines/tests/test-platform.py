#!/usr/bin/python3
"""test-platform.py [MACHINE_FILE...]: checks that machines/make-platform.py gives SimGrid platforms whose
simulated MPI messages have the machine file's numbers.

For each machine file (default: every machines/*.machine), makes a 2-node, 2-ranks-per-node platform, runs
platform-probe (compiled with smpicc) under smpirun with the flags make-platform printed, and compares:
  between nodes: 1-byte one-way time  = net_latency_us + 2 net_overhead_us  (the cost model's net_time at 1 byte)
                 bandwidth 1 B..4 MiB = net_bandwidth_GBps
  inside a node: 1-byte one-way time  = shm_latency_us
                 bandwidth            = shm_msg_bandwidth_GBps (default shm_bandwidth_GBps)
  with net_large_threshold_B T: the one-way time between nodes at T / 2 bytes (no large-message term) and at T
  bytes (+ net_large_extra_us), the bandwidths then taken from T to 4 MiB
each within TOLERANCE, and that a 64-byte MPI_Alltoall over the platform delivers every byte. Also checks that
make-platform refuses malformed machine files (unknown key, missing key, bad number) with exit code 2, and that
fat-tree and torus platforms load and carry the alltoall.
Computation is not simulated here (smpi/simulate-computation:no), so the times are the platform's alone.
Exit 0: all passed; 1: a check failed; 77: SimGrid's smpicc/smpirun are not installed (skip).
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MACHINES = os.path.dirname(HERE)
MAKE = os.path.join(MACHINES, "make-platform.py")
TOLERANCE = 0.03

sys.path.insert(0, MACHINES)
import importlib.util  # noqa: E402

spec = importlib.util.spec_from_file_location("make_platform", MAKE)
make_platform = importlib.util.module_from_spec(spec)
spec.loader.exec_module(make_platform)

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def simulate(tmp, probe, machine_path, nodes, ppn, tag, threshold=0):
    xml = os.path.join(tmp, f"{tag}.xml")
    made = run([sys.executable, MAKE, machine_path, "--nodes", str(nodes), "--ppn", str(ppn), "-o", xml])
    if made.returncode != 0:
        check(False, f"{tag}: make-platform exit {made.returncode}: {made.stderr.strip()}")
        return None
    flags = made.stdout.split()
    out = run(["smpirun", "-platform", xml, "-hostfile", xml[:-4] + ".hosts", "-np", str(nodes * ppn), *flags,
               "--cfg=smpi/simulate-computation:no", probe, str(ppn)] + ([str(threshold)] if threshold else []))
    values = dict(re.findall(r"(\w+)=([\w.]+)", out.stdout))
    if out.returncode != 0 or values.get("alltoall") != "ok":
        check(False, f"{tag}: simulation exit {out.returncode}, alltoall={values.get('alltoall')}: "
                     f"{(out.stdout + out.stderr).strip()[-800:]}")
        return None
    check(True, f"{tag}: {nodes}x{ppn} simulation ran, MPI_Alltoall correct")
    return values


def near(got, want, what):
    rel = abs(got - want) / want
    check(rel <= TOLERANCE, f"{what}: simulated {got:.6g}, machine file {want:.6g} ({rel * 100:+.2f}%)")


def main(paths):
    if not shutil.which("smpicc") or not shutil.which("smpirun"):
        print("SKIP: SimGrid's smpicc/smpirun not installed")
        return 77
    paths = paths or sorted(glob.glob(os.path.join(MACHINES, "*.machine")))
    with tempfile.TemporaryDirectory(prefix="test-platform-") as tmp:
        probe = os.path.join(tmp, "platform-probe")
        cc = run(["smpicc", "-O2", "-o", probe, os.path.join(HERE, "platform-probe.c")])
        if cc.returncode != 0:
            print(cc.stdout + cc.stderr)
            check(False, "smpicc platform-probe.c")
            return 1

        for path in paths:
            name = os.path.basename(path)
            with open(path, encoding="utf-8") as f:
                m = make_platform.complete(make_platform.parse_machine(f.read(), path), 2)
            threshold = int(m["net_large_threshold_B"])
            values = simulate(tmp, probe, path, 2, 2, name, threshold)
            if values is None:
                continue
            # an oversubscribed node (2 ranks here against cores_per_node) adds (ranks per core - 1) turn_us to every
            # receive: the receiver waits for its turn on the core
            turn = make_platform.turn_overhead(m)
            small = m["net_latency_us"] + 2 * m["net_overhead_us"] + turn
            near(float(values["inter_latency_us"]), small, f"{name}: between nodes, 1-byte one-way us (L + 2o)")
            near(float(values["inter_bandwidth_GBps"]), m["net_bandwidth_GBps"], f"{name}: between nodes, GB/s")
            near(float(values["intra_latency_us"]), m["shm_latency_us"] + turn,
                 f"{name}: inside a node, 1-byte one-way us (+ {turn:.4g} us of scheduler turns)")
            near(float(values["intra_bandwidth_GBps"]), m["shm_msg_bandwidth_GBps"],
                 f"{name}: inside a node, GB/s (shm_msg_bandwidth_GBps)")
            if threshold:
                per_byte = 1e-3 / m["net_bandwidth_GBps"]
                near(float(values["inter_below_us"]), small + (threshold // 2 - 1) * per_byte,
                     f"{name}: between nodes, {threshold // 2} B one-way us (below net_large_threshold_B)")
                near(float(values["inter_at_us"]), small + (threshold - 1) * per_byte + m["net_large_extra_us"],
                     f"{name}: between nodes, {threshold} B one-way us (+ net_large_extra_us)")

        # malformed machine files: refused with exit code 2 and a message naming the problem
        base = "name = t\nnet_latency_us = 1\nnet_bandwidth_GBps = 10\nshm_latency_us = 0.3\nshm_bandwidth_GBps = 5\n"
        bad = {
            "unknown key": (base + "net_latncy_us = 2\n", "unknown key"),
            "missing key": (base.replace("net_bandwidth_GBps = 10\n", ""), "net_bandwidth_GBps is missing"),
            "bad number": (base.replace("= 10", "= 10GB"), "not a plain decimal"),
            "repeated key": (base + "shm_latency_us = 0.4\n", "given twice"),
            "bad topology": (base + "net_topology = ring\n", "net_topology"),
            "large extra alone": (base + "net_large_extra_us = 400\n", "go together"),
            "fractional threshold": (base + "net_large_threshold_B = 0.5\nnet_large_extra_us = 1\n", "whole number"),
            "zero message bandwidth": (base + "shm_msg_bandwidth_GBps = 0\n", "must be > 0"),
            "negative turn": (base + "turn_us = -2\n", "must be a finite number >= 0"),
        }
        for what, (text, message) in bad.items():
            path = os.path.join(tmp, "bad.machine")
            with open(path, "w") as f:
                f.write(text)
            r = run([sys.executable, MAKE, path, "--nodes", "2", "--ppn", "1", "-o", os.path.join(tmp, "bad.xml")])
            check(r.returncode == 2 and message in r.stderr and not os.path.exists(os.path.join(tmp, "bad.xml")),
                  f"malformed machine file ({what}) refused: exit {r.returncode}, {r.stderr.strip()}")

        # fat tree and torus: the platforms load in SimGrid and carry the alltoall, and node-0 and node-1 (under one
        # leaf switch: 2 links; torus neighbours: 1 link) see that many links' latency plus SMPI's two overheads
        # (o = 0.5 by default, capped at shm_latency_us / 2 = 0.15). The link latency is chosen so that the mean
        # route over all pairs carries L + 2 (o - 0.15) = 1.7 us.
        for topo, mean, links in (("fat-tree:2;4,4;1,2;1,2", make_platform.fat_tree_mean_links([4, 4]), 2),
                                  ("torus:4x4", make_platform.torus_mean_links([4, 4]), 1)):
            path = os.path.join(tmp, "topo.machine")
            with open(path, "w") as f:
                f.write(base + f"net_topology = {topo}\n")
            tag = topo.split(":")[0]
            values = simulate(tmp, probe, path, 16, 2, tag)
            if values is not None:
                near(float(values["inter_latency_us"]), 1.7 / mean * links + 0.3,
                     f"{tag}: node-0 to node-1, 1-byte one-way us ({links} links of a route whose mean is {mean:.3f})")
    print(f"{len(failures)} failure(s)" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
