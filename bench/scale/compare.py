#!/usr/bin/python3
"""compare.py: measured vs SMPI-simulated vs predicted times of every plancoll algorithm (docs/scale-validate.md).

  compare.py specs PREDICT.json SIGNATURE
      The spec each algorithm runs in the validation: of plancoll-predict's candidates for SIGNATURE, each
      algorithm's least predicted variant (equal times: the first in enumeration order, as ESTIMATE breaks ties).
      Prints them comma-separated, in enumeration order (plancoll-bench -a takes the list as it is).
  compare.py table --config C --dir D --wisdom-predict W.json --machine-predict M.json [-o OUT.json] [--tolerance 0.25]
                   [--measured DIR] [--sizes B,B,...]
      Joins D/measured/*.json and D/simulated/*.json (plancoll-bench --json, one file per collective and size; a
      missing simulated directory leaves that column empty; D/simulated-mpi/*.json, MPI's collectives alone under SMPI,
      fill the mpi:blocking rows plancoll-bench's simulation lacks) with the two predictions (--wisdom and --machine models)
      by (signature, spec): plancoll-bench labels each forced row "plancoll:<spec>" with the very spec it was given,
      so rows match exactly. MPI's own rows (mpi:blocking) are kept beside alltoall.native & co. for the simulated
      column. Prints the table and the counts within the tolerance, and writes OUT.json.

Standard library only (Debian's /usr/bin/python3 or any python3).
"""

import argparse
import glob
import json
import os
import sys


def signature_of(collective, pattern, nbytes):
    """plancoll-predict's signature for one plancoll-bench problem: bench's size is the block (alltoall,
    alltoallv) or the whole vector of doubles (allreduce, MPI_SUM)."""
    if collective == "alltoall":
        return f"alltoall:{nbytes}"
    if collective == "allreduce":
        return f"allreduce:double:sum:{nbytes // 8}"
    if collective == "alltoallv" and pattern == "uniform":
        return f"alltoallv:uniform:{nbytes}"
    raise ValueError(f"no predict signature for {collective} {pattern}")


def best_specs(predict, signature):
    best = {}
    order = []
    for r in predict["results"]:
        if r["signature"] != signature:
            continue
        a = r["algorithm"]
        if a not in best:
            order.append(a)
            best[a] = r
        elif r["predicted_us"] < best[a]["predicted_us"]:
            best[a] = r
    return [best[a]["spec"] for a in order]


def predicted_by_spec(predict):
    return {(r["signature"], r["spec"]): r["predicted_us"] for r in predict["results"]}


def predicted_for(predict, table, signature, spec):
    """(predicted us, how matched). A whole spec, as validate-here.sh forces, matches exactly. A partial one (a
    plancoll-bench run of -a all forces the name alone, or a few parameters: allreduce.dpml:leaders=2) matches the
    least predicted of the candidates whose spec holds every given parameter: the variant ESTIMATE would plan with
    this model, which need not be the one the run planned with its own."""
    if (signature, spec) in table:
        return table[(signature, spec)], "exact"
    name, *params = spec.split(":")
    best = None
    for r in predict["results"]:
        if r["signature"] != signature or r["algorithm"] != name:
            continue
        have = r["spec"].split(":")[1:]
        if all(p in have for p in params) and (best is None or r["predicted_us"] < best):
            best = r["predicted_us"]
    return best, ("best variant" if best is not None else None)


def bench_rows(directory):
    """{(signature, impl): (median_us, record)} of every plancoll-bench JSON under directory."""
    rows = {}
    meta = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            d = json.load(f)
        pattern = d.get("pattern", "uniform")
        meta.append({"file": os.path.relpath(path), "load_average": d.get("load_average")})
        for r in d["results"]:
            sig = signature_of(d["collective"], pattern, r["bytes"])
            r = dict(r, program=os.path.basename(d.get("program", "plancoll-bench")))
            rows[(sig, r["impl"])] = r
    return rows, meta


# plancoll's algorithms that SMPI also implements (smpirun --cfg=smpi/<collective>:<name>): until plancoll-bench itself
# runs under SMPI, SMPI's implementation stands in the simulated column, and the row says so. plancoll's native ones
# are MPI's own collective (MPICH's selection: SMPI's coll-selector mpich).
SMPI_STAND_INS = {
    "alltoall.native": "mpi:blocking", "alltoallv.native": "mpi:blocking", "allreduce.native": "mpi:blocking",
    "alltoall.pairwise": "smpi:alltoall.pair", "alltoall.bruck": "smpi:alltoall.bruck",
    "allreduce.recursive_doubling": "smpi:allreduce.rdb", "allreduce.rabenseifner": "smpi:allreduce.rab_rdb",
    "alltoallv.spreadout": "smpi:alltoallv.ompi_basic_linear",
}


def simulated_variant(simulated, signature, spec):
    """The simulated row of the same algorithm whose spec holds every parameter the measured spec gives (an archived
    run of -a all names the algorithm alone; the simulate stage forces the whole spec the wisdom model prefers), or
    None. Several candidates: the one with the fewest extra parameters, then the first by spec."""
    name, *params = spec.split(":")
    found = []
    for (sig, impl), r in simulated.items():
        if sig != signature or not impl.startswith("plancoll:"):
            continue
        sname, *sparams = impl[len("plancoll:"):].split(":")
        if sname == name and all(p in sparams for p in params):
            found.append((len(sparams), impl, r))
    return min(found, key=lambda t: t[:2])[2] if found else None


def ratio(x, ref):
    return x / ref if x is not None and ref else None


def fmt(x, width=9, digits=1):
    return f"{x:{width}.{digits}f}" if x is not None else " " * (width - 1) + "-"


def table(args):
    wp = json.load(open(args.wisdom_predict))
    mp = json.load(open(args.machine_predict))
    pw, pm = predicted_by_spec(wp), predicted_by_spec(mp)
    measured, mmeta = bench_rows(args.measured or os.path.join(args.dir, "measured"))
    simulated, smeta = {}, []
    # plancoll-bench under SMPI first; MPI's collectives alone (mpi-coll-sim) fill the mpi:blocking rows it lacks
    for sub in ("simulated", "simulated-mpi"):
        simdir = os.path.join(args.dir, sub)
        if os.path.isdir(simdir):
            rows_here, meta_here = bench_rows(simdir)
            for key, r in rows_here.items():
                simulated.setdefault(key, r)
            smeta += meta_here
    rows = []
    for (sig, impl), r in measured.items():
        if impl.startswith("plancoll:"):
            spec = impl[len("plancoll:"):]
            algorithm = spec.split(":", 1)[0]  # the stand-in table's key
        elif impl == "mpi:blocking":
            spec = None
            algorithm = "mpi:blocking"
        else:
            continue  # persistent/nonblocking/memcpy columns are not validated here
        if r.get("median_us") is None:
            continue  # not applicable at this size
        s = simulated.get((sig, impl))
        if s is None and spec:
            s = simulated_variant(simulated, sig, spec)
        if s is None and algorithm in SMPI_STAND_INS:
            s = simulated.get((sig, SMPI_STAND_INS[algorithm]))
        sim_source = (s["program"] if s["program"] == "plancoll-bench" else s["impl"]) if s else None
        row = {
            "signature": sig, "bytes": r["bytes"], "algorithm": spec or algorithm, "spec": spec,
            "measured_us": r["median_us"],
            "simulated_us": s["median_us"] if s else None,
            "simulated_by": sim_source,
        }
        row["predicted_wisdom_us"], row["matched"] = predicted_for(wp, pw, sig, spec) if spec else (None, None)
        row["predicted_machine_us"], _ = predicted_for(mp, pm, sig, spec) if spec else (None, None)
        row["sim_over_meas"] = ratio(row["simulated_us"], row["measured_us"])
        row["predw_over_meas"] = ratio(row["predicted_wisdom_us"], row["measured_us"])
        row["predm_over_meas"] = ratio(row["predicted_machine_us"], row["measured_us"])
        row["predm_over_sim"] = ratio(row["predicted_machine_us"], row["simulated_us"])
        rows.append(row)
    coll_order = {"alltoall": 0, "alltoallv": 1, "allreduce": 2}
    if args.sizes:
        keep = {int(x) for x in args.sizes.split(",")}
        rows = [r for r in rows if r["bytes"] in keep]
    rows.sort(key=lambda r: (coll_order[r["signature"].split(":")[0]], r["bytes"], r["algorithm"]))

    tol = args.tolerance
    def is_mpis(r):
        # MPI's own collective, called by plancoll (*.native, *.native_blocking): its simulated figure is SMPI's
        # re-implementation of MPICH's algorithm, not MPICH's code, so it is counted apart from plancoll's algorithms
        return r["algorithm"].split(":")[0].split(".")[-1] in ("native", "native_blocking")

    def within(key, keep=lambda r: True):
        # MPI's blocking call is counted apart: MPICH's busy-polling blocking collectives on an oversubscribed host
        # measure the scheduler, not the collective (docs/scale-validate.md)
        vals = [r[key] for r in rows if r[key] is not None and r["algorithm"] != "mpi:blocking" and keep(r)]
        return (sum(1 for v in vals if abs(v - 1) <= tol), sum(1 for v in vals if 0.5 <= v <= 2), len(vals))

    keys = ("sim_over_meas", "predw_over_meas", "predm_over_meas", "predm_over_sim")
    summary = {k: dict(zip(("within", "within_2x", "of"), within(k))) for k in keys}
    by_kind = {"plancoll": {k: dict(zip(("within", "within_2x", "of"), within(k, lambda r: not is_mpis(r))))
                            for k in keys},
               "mpi_native": {k: dict(zip(("within", "within_2x", "of"), within(k, is_mpis))) for k in keys}}
    out = {"configuration": args.config, "tolerance": tol, "rows": rows, "summary": summary, "by_kind": by_kind,
           "measured_files": mmeta, "simulated_files": smeta,
           "predict": {"wisdom": args.wisdom_predict, "machine": args.machine_predict}}
    matched = sorted({r["matched"] for r in rows if r["matched"]})
    lines = [f"validation of {args.config}: times in us (measured = plancoll-bench median; simulated = the same "
             f"under SMPI; predicted = plancoll-predict, W wisdom model, M machine file)",
             "algorithms matched to predictions: " + (", ".join(matched) or "-")
             + (" (best variant: the run forced fewer parameters than a whole spec; the least predicted variant "
                "that has them)" if "best variant" in matched else ""),
             f"{'signature':28} {'algorithm':26} {'measured':>9} {'simulated':>9} {'pred W':>9} {'pred M':>9}"
             f" {'sim/meas':>8} {'W/meas':>7} {'M/meas':>7} {'M/sim':>7}"]
    for r in rows:
        lines.append(f"{r['signature']:28} {r['algorithm']:26} {fmt(r['measured_us'])} {fmt(r['simulated_us'])}"
                     f" {fmt(r['predicted_wisdom_us'])} {fmt(r['predicted_machine_us'])}"
                     f" {fmt(r['sim_over_meas'], 8, 2)} {fmt(r['predw_over_meas'], 7, 2)}"
                     f" {fmt(r['predm_over_meas'], 7, 2)} {fmt(r['predm_over_sim'], 7, 2)}"
                     + (f"  (simulated: {r['simulated_by']})" if r["simulated_by"] not in (None, "plancoll-bench") else ""))
    names = {"sim_over_meas": "simulated/measured", "predw_over_meas": "predicted (wisdom)/measured",
             "predm_over_meas": "predicted (machine)/measured", "predm_over_sim": "predicted (machine)/simulated"}
    for k, v in summary.items():
        p, m = by_kind["plancoll"][k], by_kind["mpi_native"][k]
        lines.append(f"{names[k]}: {v['within']} of {v['of']} within {tol * 100:.0f}%, {v['within_2x']} within 2x"
                     f" (mpi:blocking rows not counted; plancoll's algorithms {p['within']} of {p['of']},"
                     f" {p['within_2x']} within 2x; MPI's collective behind plancoll (native) {m['within']} of"
                     f" {m['of']}, {m['within_2x']} within 2x)")
    text = "\n".join(lines) + "\n"
    out["table"] = text
    sys.stdout.write(text)
    if args.output:
        with open(args.output, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("specs")
    s.add_argument("predict")
    s.add_argument("signature")
    t = sub.add_parser("table")
    t.add_argument("--config", required=True)
    t.add_argument("--dir", required=True)
    t.add_argument("--wisdom-predict", required=True)
    t.add_argument("--machine-predict", required=True)
    t.add_argument("-o", "--output")
    t.add_argument("--tolerance", type=float, default=0.25)
    t.add_argument("--measured", help="the measured plancoll-bench JSON files' directory (default DIR/measured)")
    t.add_argument("--sizes", help="keep only these sizes (comma-separated bytes)")
    args = ap.parse_args(argv)
    if args.cmd == "specs":
        specs = best_specs(json.load(open(args.predict)), args.signature)
        if not specs:
            print(f"compare.py: no candidate for {args.signature} in {args.predict}", file=sys.stderr)
            return 2
        print(",".join(specs))
        return 0
    return table(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
