#!/usr/bin/env python3
"""Summarises plancoll-regret JSON results (bench/run-regret.sh writes them): per layout the shares of right
choices, strictly (MEASURE within 10%, ESTIMATE within 25% of the best) and within the noise (strict, or the
ratio's interval includes 1), each with its Wilson 95% interval over the layout's signatures; then the worst
regrets with their signatures and intervals. The shares are recomputed from the per-signature verdicts.

usage: bench/summarize-regret.py RESULT.json [...] [--worst N]"""
import json
import math
import sys

Z = 1.959964


def wilson(right, n):
    if n == 0:
        return 0.0, 1.0
    p = right / n
    d = 1 + Z * Z / n
    center = (p + Z * Z / (2 * n)) / d
    half = Z / d * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return max(0.0, center - half), min(1.0, center + half)


def share(right, n):
    lo, hi = wilson(right, n)
    pct = 100 * right / n if n else 0
    return f"{right:>3}/{n:<3} {pct:5.1f}% [{100 * lo:5.1f},{100 * hi:5.1f}]"


def counts(results):
    judged = [r for r in results if "error" not in r]
    c = {"n": len(judged), "failed": len(results) - len(judged)}
    for who in ("measure", "estimate"):
        c[who + "_strict"] = sum(r[who]["right_strict"] for r in judged)
        c[who + "_noise"] = sum(r[who]["right_within_noise"] for r in judged)
    return c


def main(argv):
    worst = 3
    paths = []
    i = 0
    while i < len(argv):
        if argv[i] == "--worst" and i + 1 < len(argv):
            worst = int(argv[i + 1])
            i += 2
        else:
            paths.append(argv[i])
            i += 1
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    runs = [json.load(open(p)) for p in paths]
    order = {c: k for k, c in enumerate(["1n2p", "1n3p", "2n5p-tcp", "3n6p-tcp", "2n4p-tcp"])}
    runs.sort(key=lambda d: (order.get(d.get("configuration"), 99), d.get("configuration", "")))
    seeds = sorted({str(d.get("seed")) if d.get("mode") == "random" else "list" for d in runs})
    revisions = sorted({d.get("revision", "?") for d in runs})
    quick = any(d.get("quick") for d in runs)
    print(f"plancoll-regret: seed {', '.join(seeds)}, revision {', '.join(revisions)}"
          f"{' (--quick: a smoke run, not an evaluation)' if quick else ''}")
    print("shares of right choices, Wilson 95% intervals in brackets")
    head = f"{'layout':<10} {'P':>2} {'K':>3} {'fail':>4}  {'MEASURE <=10%':<31} {'MEASURE in noise':<31} " \
           f"{'ESTIMATE <=25%':<31} {'ESTIMATE in noise':<31} {'wall s':>7}"
    print(head)
    total = {"n": 0, "failed": 0, "measure_strict": 0, "measure_noise": 0, "estimate_strict": 0, "estimate_noise": 0}
    for d in runs:
        c = counts(d["results"])
        for k in total:
            total[k] += c[k]
        print(f"{d.get('configuration', '?'):<10} {d.get('ranks', 0):>2} {c['n']:>3} {c['failed']:>4}  "
              f"{share(c['measure_strict'], c['n']):<31} {share(c['measure_noise'], c['n']):<31} "
              f"{share(c['estimate_strict'], c['n']):<31} {share(c['estimate_noise'], c['n']):<31} "
              f"{d.get('run_seconds', 0):>7.0f}")
    if len(runs) > 1:
        c = total
        print(f"{'all':<10} {'':>2} {c['n']:>3} {c['failed']:>4}  "
              f"{share(c['measure_strict'], c['n']):<31} {share(c['measure_noise'], c['n']):<31} "
              f"{share(c['estimate_strict'], c['n']):<31} {share(c['estimate_noise'], c['n']):<31}")
    for d in runs:
        judged = [r for r in d["results"] if "error" not in r]
        for r in d["results"]:
            if "error" in r:
                print(f"{d.get('configuration', '?')}: #{r['index']} {r['signature']} FAILED: {r['error']}")
        for who, tol in (("measure", "10%"), ("estimate", "25%")):
            bad = sorted(judged, key=lambda r: -r[who]["regret"])[:worst]
            bad = [r for r in bad if r[who]["regret"] > 0]
            if not bad:
                continue
            print(f"{d.get('configuration', '?')}: worst {who.upper()} regrets (tolerance {tol})")
            for r in bad:
                v = r[who]
                lo, hi = v["regret_interval"]
                mark = "strict" if v["right_strict"] else "tied" if v["right_within_noise"] else "wrong"
                print(f"  #{r['index']:<3} {100 * v['regret']:7.1f}% [{100 * lo:6.1f},{100 * hi:7.1f}] {mark:<6} "
                      f"{r['signature']}: {v['spec']} against {r['best']} ({r['best_us']:.2f} us)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
