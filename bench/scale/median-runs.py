#!/usr/bin/python3
"""median-runs.py: several measured runs of the same plancoll-bench files merged into one, row by row the median of
the runs' medians, and the spread between the runs (docs/scale-validate.md: on this host the same run repeated
minutes later moves by more than the 25% the validation aims at, so one run is not a reference).

    bench/scale/median-runs.py -o OUT_DIR RUN_DIR RUN_DIR [RUN_DIR...]

Every RUN_DIR holds plancoll-bench --json files of the same names (validate-here.sh's measured/ directories). OUT_DIR
gets files of the same names and shape, each row's median_us the median over the runs that have the row (avg, min,
max: the median's run's), and "runs" listing each run's median. The spread table goes to standard output: per row
the largest over the smallest run median, then how many rows spread by more than 25% and by more than 2x."""
import argparse
import glob
import json
import os
import statistics
import sys


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("runs", nargs="+")
    args = ap.parse_args(argv)
    if len(args.runs) < 2:
        ap.error("want two runs or more")
    os.makedirs(args.output, exist_ok=True)
    names = sorted({os.path.basename(p) for d in args.runs for p in glob.glob(os.path.join(d, "*.json"))})
    spreads = []
    for name in names:
        docs = []
        for d in args.runs:
            path = os.path.join(d, name)
            if os.path.exists(path):
                with open(path) as f:
                    docs.append((d, json.load(f)))
        merged = dict(docs[0][1])
        merged["merged_from"] = [os.path.relpath(os.path.join(d, name)) for d, _ in docs]
        rows = []
        for r in docs[0][1]["results"]:
            same = [(d, x) for d, doc in docs for x in doc["results"]
                    if x["impl"] == r["impl"] and x["bytes"] == r["bytes"] and x.get("median_us") is not None]
            if not same:
                rows.append(r)
                continue
            values = sorted(x["median_us"] for _, x in same)
            mid = statistics.median_low(values)
            pick = next(x for _, x in same if x["median_us"] == mid)
            row = dict(pick, median_us=statistics.median(values), runs=[x["median_us"] for _, x in same])
            rows.append(row)
            if len(values) > 1 and values[0] > 0:
                spreads.append((name, r["impl"], r["bytes"], values[-1] / values[0]))
        merged["results"] = rows
        with open(os.path.join(args.output, name), "w") as f:
            json.dump(merged, f, indent=1)
            f.write("\n")
    print(f"{'file':28} {'implementation':70} {'bytes':>8} {'max/min':>8}")
    for name, impl, nbytes, s in spreads:
        print(f"{name:28} {impl[:70]:70} {nbytes:8d} {s:8.2f}")
    n = len(spreads)
    print(f"run-to-run spread (largest / smallest run median) over {n} rows: median "
          f"{statistics.median(s for *_, s in spreads):.2f}; over 1.25: {sum(1 for *_, s in spreads if s > 1.25)}; "
          f"over 2: {sum(1 for *_, s in spreads if s > 2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
