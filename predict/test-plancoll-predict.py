#!/usr/bin/python3
"""meson test predict-tool: runs plancoll-predict and checks its JSON's shape and figures with python's json module,
its node lists, its table, and its exit codes on bad usage and bad files.

    test-plancoll-predict.py PLANCOLL_PREDICT MACHINES_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

tool, machines = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "p.json")
    # one signature on one layout: the shape, "estimate" a spec string
    r = run("--machine", os.path.join(machines, "example.machine"), "--nodes", "4", "--ppn", "8", "--json", out,
            "alltoall:1024")
    check(r.returncode == 0, "one signature: exit 0 (got %d: %s)" % (r.returncode, r.stderr))
    doc = json.load(open(out))
    check(set(doc) >= {"results", "estimate", "layouts", "model"}, "top-level keys: %s" % sorted(doc))
    check(isinstance(doc["estimate"], str), "estimate is a spec string for one signature and layout")
    rows = doc["results"]
    check(len(rows) > 1, "several candidates")
    for row in rows:
        check(set(row) >= {"signature", "nodes", "ppn", "spec", "predicted_us"}, "row keys %s" % sorted(row))
        check(row["signature"] == "alltoall:1024" and row["nodes"] == 4 and row["ppn"] == 8, "row layout %s" % row)
        check(isinstance(row["predicted_us"], float) and row["predicted_us"] > 0, "positive time %s" % row)
        check(row["spec"].startswith(row["algorithm"]) and row["algorithm"].startswith("alltoall."), "spec %s" % row)
    specs = [row["spec"] for row in rows]
    check(len(specs) == len(set(specs)), "every spec once")
    chosen = [row for row in rows if row["estimate"]]
    check(len(chosen) == 1 and chosen[0]["spec"] == doc["estimate"], "one row marked, the estimate's")
    check(chosen[0]["predicted_us"] == min(row["predicted_us"] for row in rows), "ESTIMATE takes the least time")
    check(doc["model"] == {"source": "machine", "file": os.path.join(machines, "example.machine"),
                           "name": "example-edr"}, "model %s" % doc["model"])
    # the table names the estimate with '*'
    check(any(line.startswith("  * " + doc["estimate"]) for line in r.stdout.splitlines()), "table marks the choice")

    # several signatures and node lists: "estimate" keyed by "SIGNATURE nodes=N ppn=K"
    r = run("--nodes", "1,2,4,...,64", "--ppn", "4", "--json", out, "allreduce:double:sum:1024", "alltoallv:random:100:3")
    check(r.returncode == 0, "default model, two signatures: exit 0 (%s)" % r.stderr)
    doc = json.load(open(out))
    check(doc["model"]["source"] == "default" and doc["model"]["file"] is None, "default model")
    keys = ["%s nodes=%d ppn=4" % (s, n) for s in ("allreduce:double:sum:1024", "alltoallv:random:100:3")
            for n in (1, 2, 4, 8, 16, 32, 64)]
    check(isinstance(doc["estimate"], dict) and sorted(doc["estimate"]) == sorted(keys), "estimate per layout")
    check([(l["signature"], l["nodes"]) for l in doc["layouts"]] ==
          [(k.split(" ")[0], int(k.split("nodes=")[1].split(" ")[0])) for k in keys], "layouts in order")
    for l in doc["layouts"]:
        check(doc["estimate"]["%s nodes=%d ppn=4" % (l["signature"], l["nodes"])] == l["estimate"], "layout estimate")
    r = run("--nodes", "16:4096:x4", "--ppn", "2", "--json", out, "alltoall:8")
    check(r.returncode == 0 and [l["nodes"] for l in json.load(open(out))["layouts"]] == [16, 64, 256, 1024, 4096],
          "range 16:4096:x4")
    r = run("--nodes", "2:10:+4,100", "--ppn", "2", "--json", out, "alltoall:8")
    check(r.returncode == 0 and [l["nodes"] for l in json.load(open(out))["layouts"]] == [2, 6, 10, 100], "range +4")
    r = run("--nodes", "3,6,...,15", "--ppn", "1", "--json", out, "alltoall:8")
    check(r.returncode == 0 and [l["nodes"] for l in json.load(open(out))["layouts"]] == [3, 6, 12, 15],
          "3,6,...,15 continues by factor 2 below 15")

    # a wisdom file's calibrated model (the fuzz corpus's valid file holds one, of shape P=8:N=3:ppn=2-3:oversub=1)
    wisdom = os.path.join(machines, "..", "tests", "fuzz", "corpus", "valid-models-and-records.wisdom")
    r = run("--wisdom", wisdom, "--nodes", "2", "--ppn", "2", "--json", out, "alltoall:64")
    check(r.returncode == 0, "wisdom model: exit %d (%s)" % (r.returncode, r.stderr))
    doc = json.load(open(out))
    check(doc["model"]["source"] == "wisdom" and doc["model"]["name"] == "P=8:N=3:ppn=2-3:oversub=1",
          "wisdom model %s" % doc["model"])

    # bad usage: exit 3, nothing written
    os.remove(out)
    for args in (["--ppn", "4", "alltoall:8"], ["--nodes", "4", "alltoall:8"], ["--nodes", "4", "--ppn", "4"],
                 ["--nodes", "0", "--ppn", "4", "alltoall:8"], ["--nodes", "4,...", "--ppn", "4", "alltoall:8"],
                 ["--nodes", "4", "--ppn", "4", "--json", out, "alltoall:quad:8"],
                 ["--nodes", "4", "--ppn", "4", "--frobnicate", "alltoall:8"],
                 ["--machine", "a", "--wisdom", "b", "--nodes", "4", "--ppn", "4", "alltoall:8"]):
        r = run(*args)
        check(r.returncode == 3 and "usage:" in r.stderr, "usage error %s: exit %d" % (args, r.returncode))
    check(not os.path.exists(out), "no JSON after a usage error")
    # a bad machine file: exit 2, the line named
    bad = os.path.join(tmp, "bad.machine")
    with open(bad, "w") as f:
        f.write("name = x\nnet_latency_us = 1\nnet_bandwidth_GBps = ten\n")
    r = run("--machine", bad, "--nodes", "4", "--ppn", "4", "alltoall:8")
    check(r.returncode == 2 and "line 3" in r.stderr, "bad machine file: exit %d, %s" % (r.returncode, r.stderr))
    r = run("--wisdom", os.path.join(tmp, "absent"), "--nodes", "4", "--ppn", "4", "alltoall:8")
    check(r.returncode == 2, "absent wisdom file: exit %d" % r.returncode)
    r = run("--help")
    check(r.returncode == 0 and "usage:" in r.stdout, "--help")

print("%d failure(s)" % len(failures))
sys.exit(1 if failures else 0)
