#!/usr/bin/env bash
# calibration-stability.sh [-n RUNS] BUILD_DIR NP CLIQUES[:block]
# Run-to-run stability of calibration: calibrates the same layout RUNS times (default 10), each in a fresh
# process (PLANCOLL_CALIBRATE=1, no PLANCOLL_WISDOM), with BUILD_DIR/bench/calibration-probe on NP ranks and
# CLIQUES emulated nodes (as tests/mpi/run-mpi-test.sh sets them up: MPIR_CVAR_NUM_CLIQUES, UCX_TLS=tcp,self).
# Prints each calibrated figure's min / median / max over the runs and max/min, how many runs marked it
# unstable, clamped or disagreed (when the model says so), the check's measured/predicted ratios, and the share
# of the probe's fixed problems on which PLANCOLL_ESTIMATE chose the same algorithm (with the same parameters) in every run.
# Figures: the model text's lines (wisdom/FORMAT.md); a table row is split into its sizes (net 1 @8B ...).
# The per-(op, type) reduce table is summarised as one line (the worst ratio over its entries).
# The host can change state between runs (two virtual cores placed close, sharing a cache, or far apart: a flag
# signal costs several times more far apart), which is a change of the machine, not noise: when the runs' sync
# figures fall into two tight groups (each within 1.5x, more than 2x apart), the summary is also given for each.
set -u
runs=10
if [ "${1:-}" = "-n" ]; then runs=$2; shift 2; fi
if [ $# -ne 3 ]; then echo "usage: $0 [-n RUNS] BUILD_DIR NP CLIQUES[:block]" >&2; exit 3; fi
build=$1; np=$2; cliques=$3
probe=$build/bench/calibration-probe
[ -x "$probe" ] || { echo "$probe: not built (ninja -C $build)" >&2; exit 3; }
unset MPIR_CVAR_NUM_CLIQUES MPIR_CVAR_CLIQUES_BY_BLOCK PLANCOLL_WISDOM PLANCOLL_ALGORITHM
k=${cliques%%:*}
if [ "$k" -gt 1 ]; then
  export MPIR_CVAR_NUM_CLIQUES=$k UCX_TLS=tcp,self
  case "$cliques" in *:block) export MPIR_CVAR_CLIQUES_BY_BLOCK=1 ;; esac
fi
export PLANCOLL_CALIBRATE=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in $(seq 1 "$runs"); do
  # the output is complete before MPI_Finalize; a finalize hang over UCX tcp is cut by the timeout
  timeout 120 mpiexec.mpich -n "$np" "$probe" >"$dir/run$i.out" 2>"$dir/run$i.err"
  if ! grep -q '^model calibrated 1' "$dir/run$i.out"; then
    echo "run $i: no calibrated model in the output" >&2; cat "$dir/run$i.err" >&2; exit 2
  fi
done
python3 - "$dir" "$runs" "$np" "$cliques" <<'PY'
import sys, statistics, collections
d, runs, np_, cliques = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
sizes = ["8B", "64B", "512B", "4K", "32K", "256K", "2M"]
# lines of several values: each value is a figure of its own (a normal store and a streaming one differ many
# times over by design; putting them in one row would read as instability)
named = {"loggp": ["L", "o", "g", "G"], "shm_p2p": ["alpha", "beta"], "net_step": ["low", "high"],
         "stores": ["normal", "stream"], "shm_step": ["low", "high"],
         "stores_small": ["normal@256B", "stream@256B", "normal@16K", "stream@16K"]}
fig = collections.OrderedDict()
choices = collections.defaultdict(list)
margins = collections.defaultdict(list)  # problem -> per run, how much slower the runner-up's estimate was
marks = collections.Counter()
cal_s = []
reduce_ratios = collections.defaultdict(list)
run_of = collections.defaultdict(list)  # label -> run index of each value
checks = collections.defaultdict(list)  # probe -> (ratio, band) per run
for i in range(1, runs + 1):
    for line in open(f"{d}/run{i}.out"):
        t = line.split()
        if not t: continue
        if t[0] == "choice":
            choices[t[1]].append(t[2])
            if len(t) >= 6 and float(t[3]) > 0 and float(t[5]) > 0:
                margins[t[1]].append(float(t[5]) / float(t[3]) - 1)
            continue
        if t[0] != "model": continue
        t = t[1:]
        key = t[0]
        if key == "shape": continue
        if key == "calibrated": cal_s.append(float(t[2])); continue
        if key == "check":  # the check after calibration: probe, measured/predicted, band
            checks[t[1]].append((float(t[2]), float(t[3]))); continue
        if key in ("unstable", "clamped", "disagreed"):
            for name in t[1:]: marks[(key, name)] += 1
            continue
        if key == "spread": continue
        if key == "reduce":
            reduce_ratios[(t[1], t[2])].append(float(t[3])); continue
        if key == "net":
            name, vals = f"net {t[1]}", t[2].split(",")
        elif key == "taulop":
            name, vals = f"taulop {t[1]} {t[2]}", t[3].split(",")
        elif key == "taulop_stream":
            name, vals = f"taulop_stream {t[1]}", t[2].split(",")
        elif key == "shm_msg":  # the row of node messages at the table's sizes
            name, vals = "shm_msg", t[1].split(",")
        else:
            name, vals = key, t[1:]
        for j, v in enumerate(vals):
            if key in ("net", "taulop", "taulop_stream", "shm_msg"): label = f"{name} @{sizes[j]}"
            elif key in named: label = f"{key}.{named[key][j]}"
            else: label = name
            fig.setdefault(label, []).append(float(v))
            run_of[label].append(i)
print(f"calibration stability: {runs} fresh runs, {np_} ranks, cliques {cliques}")
if cal_s:
    print(f"calibration time (s): min {min(cal_s):.3f} median {statistics.median(cal_s):.3f} max {max(cal_s):.3f}")
print(f"{'figure':24s} {'min':>12s} {'median':>12s} {'max':>12s} {'max/min':>8s}  marks")
worst, within = 0.0, 0
def ratio(v):
    lo, hi = min(v), max(v)
    return hi / lo if lo > 0 else (1.0 if hi == 0 else float('inf'))
for label, v in fig.items():
    r = ratio(v); worst = max(worst, r); within += r <= 1.5
    base = label.split(" @")[0].split(".")[0]
    m = " ".join(f"{k}:{c}" for (k, n), c in marks.items() if n == base or n == label)
    print(f"{label:24s} {min(v):12.6g} {statistics.median(v):12.6g} {max(v):12.6g} {r:8.2f}  {m}")
if reduce_ratios:
    rr = [ratio(v) for v in reduce_ratios.values()]
    print(f"{'reduce (per op,type)':24s} {len(rr)} entries, max/min median {statistics.median(rr):.2f} worst {max(rr):.2f}")
print(f"figures within 1.5x over the runs: {within} of {len(fig)}; worst max/min {worst:.2f}")
for probe, v in checks.items():
    rs = [r for r, _ in v]
    out = sum(1 for r, b in v if r > b or r * b < 1)
    print(f"check {probe}: measured/predicted min {min(rs):.2f} median {statistics.median(rs):.2f} max {max(rs):.2f}; "
          f"outside its band in {out} of {len(v)} runs (after the re-measurement)")
if any(k == "disagreed" for k, _ in marks):
    print("disagreed after re-measurement: " + ", ".join(f"{n} x{c}" for (k, n), c in marks.items() if k == "disagreed"))
same = sum(1 for v in choices.values() if len(set(v)) == 1 and len(v) == runs)
print(f"ESTIMATE chose the same algorithm in every run on {same} of {len(choices)} problems "
      f"({100.0 * same / max(1, len(choices)):.0f}%)")
for sig, v in choices.items():
    if len(set(v)) > 1:
        c = collections.Counter(v)
        m = f" (runner-up's estimate {100 * statistics.median(margins[sig]):.1f}% above the choice's, median)" \
            if margins[sig] else ""
        print(f"  differs: {sig}: " + ", ".join(f"{a} x{n}" for a, n in c.most_common()) + m)
# machine states: split the runs at the largest gap between sorted sync figures when it exceeds 2x
if "sync" in fig and len(fig["sync"]) == runs and runs >= 2:
    by_sync = sorted(zip(fig["sync"], run_of["sync"]))
    gaps = [(by_sync[j + 1][0] / by_sync[j][0] if by_sync[j][0] > 0 else float('inf'), j) for j in range(runs - 1)]
    gap, at = max(gaps)
    print("sync by run (us): " + " ".join(f"{fig['sync'][j]:.3g}" for j in range(runs)))
    lo, hi = [v for v, _ in by_sync[:at + 1]], [v for v, _ in by_sync[at + 1:]]
    if gap > 2 and ratio(lo) <= 1.5 and ratio(hi) <= 1.5:  # two tight groups, not one wide spread
        groups = [("low sync", {r for _, r in by_sync[:at + 1]}), ("high sync", {r for _, r in by_sync[at + 1:]})]
        print(f"two machine states (sync gap {gap:.1f}x between {by_sync[at][0]:.3g} and {by_sync[at + 1][0]:.3g} us):")
        for name, members in groups:
            w, ok, worst_label = 0.0, 0, ""
            for label, v in fig.items():
                sub = [x for x, r in zip(v, run_of[label]) if r in members]
                r = ratio(sub)
                ok += r <= 1.5
                if r > w: w, worst_label = r, label
            same_g = sum(1 for ch in choices.values() if len({ch[r - 1] for r in members if r - 1 < len(ch)}) == 1)
            print(f"  {name}: {len(members)} runs; figures within 1.5x {ok} of {len(fig)}; worst max/min {w:.2f} "
                  f"({worst_label}); same ESTIMATE choice on {same_g} of {len(choices)} problems "
                  f"({100.0 * same_g / max(1, len(choices)):.0f}%)")
PY
