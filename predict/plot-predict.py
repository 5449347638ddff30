#!/usr/bin/python3
"""Plots plancoll-predict's JSON: predicted time against node count, one line per algorithm (its best variant at
each node count), log-log, with ESTIMATE's pick circled at every node count (docs/predict.md).

    plot-predict.py PREDICT.json -o OUT.png [--signature SIG] [--title TEXT]

One panel per signature in the file (or only SIG). Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import json
import math
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or "results" not in doc:
        raise ValueError("%s is not plancoll-predict JSON (no \"results\")" % path)
    return doc


def series(doc, signature):
    """{algorithm: {nodes: (best us, spec)}}, {nodes: (estimate's algorithm, its us)}, ppn."""
    best, picks, ppn = {}, {}, None
    for r in doc["results"]:
        if r["signature"] != signature:
            continue
        ppn = r["ppn"]
        line = best.setdefault(r["algorithm"], {})
        n = r["nodes"]
        if n not in line or r["predicted_us"] < line[n][0]:
            line[n] = (r["predicted_us"], r["spec"])
        if r.get("estimate"):
            picks[n] = (r["algorithm"], r["predicted_us"])
    return best, picks, ppn


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json")
    ap.add_argument("-o", "--output", required=True, help="PNG file to write")
    ap.add_argument("--signature", help="plot only this signature")
    ap.add_argument("--title", help="figure title (default: the model's name)")
    args = ap.parse_args()
    try:
        doc = load(args.json)
    except (OSError, ValueError) as e:
        print("plot-predict: %s" % e, file=sys.stderr)
        return 2
    sigs = []
    for r in doc["results"]:
        if r["signature"] not in sigs and (args.signature is None or r["signature"] == args.signature):
            sigs.append(r["signature"])
    if not sigs:
        print("plot-predict: no results%s" % (" for " + args.signature if args.signature else ""), file=sys.stderr)
        return 2

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    cols = min(2, len(sigs))
    rows = math.ceil(len(sigs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(7.5 * cols, 5.2 * rows), squeeze=False)
    markers = "os^vD<>ph*Xd"
    for i, sig in enumerate(sigs):
        ax = axes[i // cols][i % cols]
        best, picks, ppn = series(doc, sig)
        for j, (alg, line) in enumerate(sorted(best.items())):
            xs = sorted(line)
            ax.plot(xs, [line[x][0] for x in xs], marker=markers[j % len(markers)], markersize=4, linewidth=1.4,
                    label=alg)
        if picks:
            xs = sorted(picks)
            ax.scatter(xs, [picks[x][1] for x in xs], s=140, facecolors="none", edgecolors="black", linewidths=1.6,
                       zorder=5, label="ESTIMATE's choice")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: "%g" % v))
        ax.set_yscale("log")
        ax.set_xlabel("nodes (%s ranks per node)" % ppn)
        ax.set_ylabel("predicted time (us)")
        ax.set_title(sig)
        ax.grid(True, which="both", linewidth=0.3, alpha=0.6)
        ax.legend(fontsize=7, loc="upper left")
    for k in range(len(sigs), rows * cols):
        axes[k // cols][k % cols].axis("off")
    model = doc.get("model", {})
    fig.suptitle(args.title or "plancoll-predict: %s model %s" % (model.get("source", "?"), model.get("name", "?")))
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
