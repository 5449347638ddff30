#!/usr/bin/env bash
# FFTW 3.3.10's MPI layer, unmodified, through plancoll's drop-in layer (issue 18 item 6): FFTW's own MPI test
# program mpi-bench (built by bench/build-fftw-mpi.sh against MPICH, FFTW static, libmpich.so dynamic) started
# with and without BUILD/src/dropin/plancoll-run.
#
# usage: bench/run-fftw-dropin.sh census|verify|bench CONFIG[,CONFIG...] [options]
#   census   which MPI collectives FFTW's transforms call, by shape (bench/mpi-call-census.c preloaded, no layer)
#   verify   mpi-bench --verify of distributed 2D/3D complex (and r2c/c2r) transforms, forward and backward,
#            in- and out-of-place, transposed in/out, sizes 1024x1024 down to odd ones (30x42x17); with the
#            layer and PLANCOLL_DROPIN_REPORT set (the report must show planned calls), or --without-layer
#   bench    mpi-bench -s (FFTW_MEASURE, FFTW's default) of the 2D 1024x1024 and 3D 128^3 complex DFT, one
#            process per measurement, with and without the layer alternating (A B, B A, ...), REPS of each;
#            writes bench/results/<date>-fftw-dropin.json and .txt
#   CONFIG   a name of bench/configurations.sh (1n2p, 2n1p-tcp, 2n2p-tcp = 4 ranks, ...) or 3n7p-tcp
#            (7 ranks on 3 emulated nodes in blocks 3+2+2) or 3n7p-tcp-rr (7 ranks, nodes round robin)
#   options  --without-layer (verify), --after N (PLANCOLL_DROPIN_AFTER for the layer runs), --problems "P ..."
# environment:
#   BUILD_DIR       Meson build directory with src/dropin/plancoll-run (default: build of this checkout)
#   FFTW_MPI_CACHE  where bench/build-fftw-mpi.sh keeps FFTW (default: bench/.fftw-mpi of this checkout)
#   RESULTS_DIR     where bench writes (default: bench/results of this checkout)
#   REPS            processes per variant and problem in bench (default 5)
#   FFTW_TIME_MIN   mpi-bench --time-min in seconds (default 0.1); FFTW_TIME_REPEAT: --time-repeat (default 9)
#   RUN_TIMEOUT     seconds one mpiexec may take (default 600)
#   RESULTS_SUFFIX  bench writes <date>-fftw-dropin-SUFFIX.{json,txt} (default: no suffix)
#
# What FFTW calls (mpi/*.c of FFTW 3.3.10, and `census` at the layouts below): a distributed transform of rank
# >= 2 is 1D/serial FFTs around global transposes (mpi/transpose-*.c), in double precision on a private
# MPI_Comm_dup of the user's communicator:
#   - transpose-alltoall.c: MPI_Alltoall(count = b*tb*vn MPI_DOUBLE) when every rank holds the same block
#     (n divisible by P), else MPI_Alltoallv with per-rank counts (db*bt*vn) and displacements;
#   - transpose-pairwise.c: P-1 MPI_Sendrecv (not a collective: the layer cannot take it);
#   - transpose-recurse.c: splits the communicator (MPI_Comm_split) and transposes recursively (P not prime);
#   - and in planning: MPI_Allreduce(1 int, MPI_LOR / MPI_LAND) (any-true.c, api.c), MPI_Allreduce(1 double,
#     MPI_SUM / MPI_MAX) for every cost measurement (api.c cost_hook), MPI_Bcast of the planner flags and wisdom.
#   mpi-bench itself: MPI_Scatterv / MPI_Gatherv / MPI_Bcast to move data, MPI_Allreduce(1 double, MPI_MAX) per
#   timing sample.
# Shapes (b = ceil(n0/P) rows, vn = 2 x product of the remaining dimensions for complex doubles):
#   2D 1024x1024, P=2: MPI_Alltoall 512*512*2 = 524288 doubles (4 MiB) per block
#                 P=4: MPI_Alltoall 256*256*2 = 131072 doubles (1 MiB) per block
#                 P=7: MPI_Alltoallv, blocks 147 rows (the last 142): 147*147*2 = 43218 doubles, 147*142*2,
#                      142*142*2 (338 KiB, 327 KiB, 315 KiB)
#   3D 128^3,     P=2: the 3D transform transposes the first two dimensions with vn = 2*128: MPI_Alltoall
#                      64*64*256 = 1048576 doubles (8 MiB) per block
#                 P=4: 32*32*256 = 262144 doubles (2 MiB)
#                 P=7: MPI_Alltoallv, 19 rows (the last 14): 19*19*256 = 92416, 19*14*256, 14*14*256 doubles
# Which transpose FFTW_MEASURE picks (alltoall or pairwise, one or two transposes, TRANSPOSED_OUT or not) is
# its own timing decision, measured with or without the layer: `census` prints it (docs/benchmarks.md).
#
# MPICH 4.0.2 over UCX tcp may hang in MPI_Finalize after a complete run: every run here is judged by its output
# (the verify lines, the timing line, the layer's report file) and is ended 15 s after that output is complete;
# mpi-bench runs under stdbuf -oL so its lines reach the file before such a hang.
set -euo pipefail
set -f # problem strings hold [ and ]: never globbed

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=configurations.sh
. "$here/configurations.sh"
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
results=${RESULTS_DIR:-$here/results}
reps=${REPS:-5}
time_min=${FFTW_TIME_MIN:-0.1}
time_repeat=${FFTW_TIME_REPEAT:-9}
run_timeout=${RUN_TIMEOUT:-600}
finalize_grace=15

usage() { sed -n '6,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1
configs=$2
shift 2
with_layer=1
after=
problems=
while [ $# -gt 0 ]; do
    case $1 in
        --without-layer) with_layer=0 ;;
        --after) after=$2; shift ;;
        --problems) problems=$2; shift ;;
        *) usage ;;
    esac
    shift
done

# The configurations of bench/configurations.sh, plus the two 7-rank layouts of issue 18's verification.
launch_command() {
    local tcp=UCX_TLS=tcp,self
    case $1 in
        3n7p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=3 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec.mpich -n 7" ;;
        3n7p-tcp-rr) echo "env MPIR_CVAR_NUM_CLIQUES=3 $tcp mpiexec.mpich -n 7" ;;
        *) config_command "$1" ;;
    esac
}

prefix=$("$here/build-fftw-mpi.sh" | tail -n 1)
mpi_bench=$prefix/bin/mpi-bench
[ -x "$mpi_bench" ] || { echo "run-fftw-dropin: no $mpi_bench" >&2; exit 1; }
dropin_run=$build/src/dropin/plancoll-run
need_layer() {
    [ -x "$dropin_run" ] || { echo "run-fftw-dropin: no drop-in launcher $dropin_run (build the layer first)" >&2; exit 1; }
}

work=$(mktemp -d "${TMPDIR:-/tmp}/fftw-dropin.XXXXXX")
running_group= # the process group of the run in progress, ended with the script
trap 'rm -rf "$work"' EXIT
trap '[ -n "$running_group" ] && kill -TERM -- "-$running_group" 2>/dev/null; exit 143' TERM INT

# run_guarded OUT DONE_TEST CMD...: runs CMD (its own process group) with output to OUT; DONE_TEST is a shell
# command that succeeds once the run's output is complete. Ends the run finalize_grace seconds after that (the
# UCX-tcp MPI_Finalize hang), or after run_timeout seconds in any case. Sets run_rc (the exit code, 124 when it
# had to be ended before its output was complete) and run_hung (1 when it was ended after complete output).
run_guarded() {
    local out=$1 done_test=$2
    shift 2
    run_hung=0
    setsid "$@" >"$out" 2>&1 &
    local pid=$! start=$SECONDS done_at=
    running_group=$pid
    while kill -0 "$pid" 2>/dev/null; do
        sleep 0.5
        if [ -z "$done_at" ] && eval "$done_test"; then done_at=$SECONDS; fi
        if { [ -n "$done_at" ] && [ $((SECONDS - done_at)) -ge $finalize_grace ]; } \
            || [ $((SECONDS - start)) -ge "$run_timeout" ]; then
            [ -n "$done_at" ] && run_hung=1
            kill -TERM -- "-$pid" 2>/dev/null || true
            sleep 2
            kill -KILL -- "-$pid" 2>/dev/null || true
            break
        fi
    done
    set +e
    wait "$pid"
    run_rc=$?
    set -e
    running_group=
    if [ -z "$done_at" ] && eval "$done_test"; then done_at=$SECONDS; fi
    if [ -z "$done_at" ] && [ "$run_rc" -eq 0 ]; then run_rc=1; fi # exited 0 without its output: a failure
    if [ -z "$done_at" ] && [ $((SECONDS - start)) -ge "$run_timeout" ]; then run_rc=124; fi
    [ "$run_hung" = 1 ] && run_rc=0
    return 0
}

layer_env() { # the layer's settings for one run with it
    local report=$1
    echo "PLANCOLL_DROPIN_REPORT=$report${after:+ PLANCOLL_DROPIN_AFTER=$after}"
}

# ---------------------------------------------------------------------------------------------------------- census
if [ "$mode" = census ]; then
    census_lib=$work/libmpi-call-census.so
    mpicc -O2 -Wall -Wextra -shared -fPIC -o "$census_lib" "$here/mpi-call-census.c"
    [ -n "$problems" ] || problems="ocf1024x1024 ocf128x128x128"
    IFS=, read -r -a config_list <<<"$configs"
    for config in "${config_list[@]}"; do
        launcher=$(launch_command "$config") || { echo "run-fftw-dropin: unknown configuration '$config'" >&2; exit 2; }
        np=$(echo "$launcher" | sed 's/.*-n \([0-9]*\).*/\1/')
        for problem in $problems; do
            out=$work/census.txt
            echo "== census $config $problem: $launcher env LD_PRELOAD=<census> $mpi_bench -v2 -s $problem"
            # shellcheck disable=SC2086
            run_guarded "$out" "[ \$(grep -c '^census\[[0-9]*\]: [0-9]* shapes' '$out') -ge $np ]" \
                $launcher env LD_PRELOAD="$census_lib" stdbuf -oL "$mpi_bench" -v2 --time-min="$time_min" -s "$problem"
            # the plan (printed by every rank: rank 0's copy), the timing line and every rank's census
            awk '/^\(/ && !done {on = 1} on && /^flops:/ {on = 0; done = 1} on {print}' "$out" | head -n 60
            grep -E '^Problem:|^census\[' "$out" | sort -t'[' -k2,2n -s
            [ "$run_hung" = 1 ] && echo "(ended ${finalize_grace}s after complete output: MPI_Finalize hang)"
            [ "$run_rc" -eq 0 ] || { echo "run-fftw-dropin: census $config $problem FAILED (exit $run_rc)" >&2; tail -n 20 "$out" >&2; exit 1; }
        done
    done
    exit 0
fi

# ---------------------------------------------------------------------------------------------------------- verify
if [ "$mode" = verify ]; then
    [ $with_layer = 1 ] && need_layer
    # o/i out-of-place/in-place, c complex, r real (r2c forward, c2r backward), f/b forward/backward,
    # ] output transposed (FFTW_MPI_TRANSPOSED_OUT), [ input transposed, vV: V interleaved transforms (FFTW's
    # MPI transforms take no "*V" batch of separate ones)
    # d: FFTW_DESTROY_INPUT. Only then does FFTW's out-of-place transpose (MPI_Alltoall / MPI_Alltoallv) apply:
    # with the input preserved (FFTW's default for complex transforms) or in place, every transpose is the
    # pairwise MPI_Sendrecv one (census), which the layer does not take. Both kinds are verified.
    # The small problems first; the 1024x1024 (minutes on a loaded machine: FFTW_MEASURE, then mpi-bench's
    # verification moves the whole array through rank 0) last.
    [ -n "$problems" ] || problems="docf30x42x17 docb30x42x17 ocf30x42x17 docf]30x42x17 docb[30x42x17
        icb30x42x17 docf64x64x64 docb17x19x23v3 docf31x29 dorf30x42x17 docb256x384 docf1024x1024"
    IFS=, read -r -a config_list <<<"$configs"
    status=0
    for config in "${config_list[@]}"; do
        launcher=$(launch_command "$config") || { echo "run-fftw-dropin: unknown configuration '$config'" >&2; exit 2; }
        args=()
        nproblems=0
        for problem in $problems; do args+=(--verify "$problem"); nproblems=$((nproblems + 1)); done
        out=$work/verify.txt
        report=$work/report.txt
        rm -f "$report"
        if [ $with_layer = 1 ]; then
            # shellcheck disable=SC2206,SC2207 # the launcher and the settings are word lists on purpose
            cmd=($launcher env $(layer_env "$report") stdbuf -oL "$dropin_run" "$mpi_bench" -v1 "${args[@]}")
            done_test="[ \$(grep -cE '^[^ ]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+\$' '$out') -ge $nproblems ] && [ -s '$report' ]"
        else
            # shellcheck disable=SC2206
            cmd=($launcher stdbuf -oL "$mpi_bench" -v1 "${args[@]}")
            done_test="[ \$(grep -cE '^[^ ]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+\$' '$out') -ge $nproblems ]"
        fi
        echo "== verify $config $([ $with_layer = 1 ] && echo "with the layer${after:+ (PLANCOLL_DROPIN_AFTER=$after)}" || echo "without the layer"): ${cmd[*]}"
        t0=$SECONDS
        run_guarded "$out" "$done_test" "${cmd[@]}"
        # mpi-bench prints "problem L I S" per verified problem (the relative errors of its linearity, impulse
        # and time-shift tests); a failed check prints "Found relative error ..." and exits non-zero.
        grep -E '^[^ ]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+$|Found relative error|plancoll|rror' "$out" || true
        verified=$(grep -cE '^[^ ]+ [0-9.e+-]+ [0-9.e+-]+ [0-9.e+-]+$' "$out" || true)
        echo "-- $config: $verified of $nproblems problems verified in $((SECONDS - t0)) s, exit $run_rc$([ "$run_hung" = 1 ] && echo ", ended after complete output (MPI_Finalize hang)")"
        ok=1
        [ "$run_rc" -eq 0 ] && [ "$verified" -eq "$nproblems" ] || ok=0
        if [ $with_layer = 1 ]; then
            if [ -s "$report" ]; then
                echo "-- the layer's report:"
                cat "$report"
                # the layer must have run something of FFTW's as a plan
                awk '{for (i = 1; i <= NF; i++) if ($i ~ /^planned_calls=/) {split($i, a, "="); if (a[2] > 0) found = 1}}
                     END {exit !found}' "$report" || { echo "run-fftw-dropin: the layer planned nothing" >&2; ok=0; }
                grep -qE '^collective=alltoallv? .*planned_calls=[1-9]' "$report" \
                    || echo "note: no alltoall/alltoallv of FFTW's ran as a plan (FFTW chose a transpose without them?)"
            else
                echo "run-fftw-dropin: no report from the layer at $report" >&2
                ok=0
            fi
        fi
        if [ $ok = 1 ]; then echo "-- $config: PASS"; else echo "-- $config: FAIL" >&2; tail -n 30 "$out" >&2; status=1; fi
    done
    exit $status
fi

# ----------------------------------------------------------------------------------------------------------- bench
[ "$mode" = bench ] || usage
need_layer
[ -n "$problems" ] || problems="ocf1024x1024 ocf128x128x128"
mkdir -p "$results"
stamp=$(date -u +%Y-%m-%d)
stem=$results/$stamp-fftw-dropin${RESULTS_SUFFIX:+-$RESULTS_SUFFIX}
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
samples=$work/samples.tsv
: >"$samples"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# One mpi-bench process per measurement: it plans (FFTW_MEASURE, timing its candidate transposes through the layer
# when the layer is on, so FFTW may choose differently), then times --time-repeat samples of at least --time-min
# each (a sample's time is the max over ranks, mpi-bench's bench_cost_postprocess); we keep its fastest sample,
# FFTW's own figure (libbench2's "median" is not one: its bubble sort stops early, so it is often the largest).
IFS=, read -r -a config_list <<<"$configs"
for config in "${config_list[@]}"; do
    launcher=$(launch_command "$config") || { echo "run-fftw-dropin: unknown configuration '$config'" >&2; exit 2; }
    for problem in $problems; do
        for rep in $(seq 1 "$reps"); do
            # A B, then B A: drift hits both variants alike
            if [ $((rep % 2)) = 1 ]; then order="without with"; else order="with without"; fi
            for variant in $order; do
                out=$work/bench.txt
                report=$work/report-$config-$problem-$rep.txt
                rm -f "$report"
                opts=(-v1 --time-min="$time_min" --time-repeat="$time_repeat" -s "$problem")
                if [ $variant = with ]; then
                    # shellcheck disable=SC2206,SC2207 # the launcher and the settings are word lists on purpose
                    cmd=($launcher env $(layer_env "$report") stdbuf -oL "$dropin_run" "$mpi_bench" "${opts[@]}")
                    done_test="grep -q '^Time: min' '$out' && [ -s '$report' ]"
                else
                    # shellcheck disable=SC2206
                    cmd=($launcher stdbuf -oL "$mpi_bench" "${opts[@]}")
                    done_test="grep -q '^Time: min' '$out'"
                fi
                run_guarded "$out" "$done_test" "${cmd[@]}"
                if [ "$run_rc" -ne 0 ] || ! grep -q '^Time: min' "$out"; then
                    echo "run-fftw-dropin: $config $problem $variant run $rep FAILED (exit $run_rc): ${cmd[*]}" >&2
                    tail -n 30 "$out" >&2
                    exit 1
                fi
                line=$(grep '^Problem:' "$out" | head -n 1)
                times=$(grep '^Time: min' "$out" | head -n 1)
                algo=-
                if [ $variant = with ]; then
                    algo=$(grep -E '^collective=alltoallv? ' "$report" \
                        | sed -n 's/.*collective=\([^ ]*\) .*shape=\([^ ]*\) .*calls=\([0-9]*\) planned_calls=\([0-9]*\) algorithm=\([^ ]*\) .*/\1:\2:\3:\4:\5/p' \
                        | tr '\n' ';' || true) # none: FFTW ran no alltoall(v) (pairwise transposes only)
                    [ -n "$algo" ] || algo=none
                    cp "$report" "$work/last-report-$config-$problem.txt"
                fi
                printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$config" "$problem" "$variant" "$rep" "$line" "$times" "$algo" >>"$samples"
                echo "$config $problem rep $rep $variant: $times | ${line#*setup: }$([ "$run_hung" = 1 ] && echo " (finalize hang ended)")"
            done
        done
        [ -f "$work/last-report-$config-$problem.txt" ] && { echo "-- the layer's report, last run:"; cat "$work/last-report-$config-$problem.txt"; }
    done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$samples" "$stem" "$revision" "$reps" "$time_min" "$time_repeat" "$load_before" "$load_after" <<'EOF'
import json, re, statistics, sys
samples, stem, revision, reps, time_min, time_repeat, load_before, load_after = sys.argv[1:]
unit = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
def us(text):
    value, u = text.split()
    return float(value) * unit[u]
runs = []
for row in open(samples):
    config, problem, variant, rep, line, times, algo = row.rstrip("\n").split("\t")
    m = re.search(r"setup: ([0-9.]+ [a-z]+), time: ([0-9.]+ [a-z]+)", line)
    t = re.search(r"min ([0-9.]+ [a-z]+), max ([0-9.]+ [a-z]+), avg ([0-9.]+ [a-z]+), median ([0-9.]+ [a-z]+)", times)
    runs.append({"configuration": config, "problem": problem, "variant": variant, "run": int(rep),
                 "setup_us": us(m.group(1)), "min_us": us(t.group(1)), "max_us": us(t.group(2)),
                 "avg_us": us(t.group(3)), "median_us": us(t.group(4)),
                 "layer_alltoall_shapes": [] if algo in ("-", "none") else [a for a in algo.split(";") if a]})
summary = []
keys = []
for r in runs:
    k = (r["configuration"], r["problem"])
    if k not in keys: keys.append(k)
for config, problem in keys:
    sel = lambda v: [r for r in runs if r["configuration"] == config and r["problem"] == problem and r["variant"] == v]
    a, b = sel("without"), sel("with")
    ma = statistics.median(r["min_us"] for r in a)
    mb = statistics.median(r["min_us"] for r in b)
    paired = sorted(x["min_us"] / y["min_us"] for x, y in zip(sorted(a, key=lambda r: r["run"]), sorted(b, key=lambda r: r["run"])))
    summary.append({"configuration": config, "problem": problem,
        "without_median_us": ma, "without_min_us": min(r["min_us"] for r in a), "without_max_us": max(r["min_us"] for r in a),
        "with_median_us": mb, "with_min_us": min(r["min_us"] for r in b), "with_max_us": max(r["min_us"] for r in b),
        "speedup_median": ma / mb, "speedup_paired_median": statistics.median(paired),
        "speedup_paired_min": paired[0], "speedup_paired_max": paired[-1],
        "setup_without_median_ms": statistics.median(r["setup_us"] for r in a) / 1e3,
        "setup_with_median_ms": statistics.median(r["setup_us"] for r in b) / 1e3})
doc = {"benchmark": "fftw-mpi-bench-dropin", "revision": revision,
       "program": "FFTW 3.3.10 mpi-bench (double, static FFTW, MPICH 4.0.2 shared), FFTW_MEASURE",
       "variants": {"without": "mpiexec ... mpi-bench -s PROBLEM", "with": "mpiexec ... plancoll-run mpi-bench -s PROBLEM (PLANCOLL_DROPIN_REPORT set)"},
       "statistic": "per run: the fastest of --time-repeat samples (each: mean time per transform over a sample of at least --time-min, max over ranks; FFTW's own figure); per variant: median over runs, min-max over runs; speedup = without/with; paired = without/with of the runs with the same index (adjacent in time)",
       "runs_per_variant": int(reps), "time_min_s": float(time_min), "time_repeat": int(time_repeat),
       "loadavg_before": load_before, "loadavg_after": load_after,
       "summary": summary, "runs": runs}
json.dump(doc, open(stem + ".json", "w"), indent=1)
with open(stem + ".txt", "w") as f:
    f.write(f"# FFTW 3.3.10 mpi-bench through plancoll's drop-in layer, revision {revision}; {reps} runs per variant, alternating;\n")
    f.write(f"# per run the fastest of {time_repeat} samples of >= {time_min} s (max over ranks); median (min-max) over runs; load average before {load_before}, after {load_after}\n")
    f.write(f"# {'configuration':<12} {'problem':<16} {'without us (min-max)':>30} {'with layer us (min-max)':>30} {'speedup':>8} {'paired (min-max)':>20} {'setup ms w/o':>12} {'setup ms with':>13}\n")
    for s in summary:
        f.write(f"  {s['configuration']:<12} {s['problem']:<16} {s['without_median_us']:>10.1f} ({s['without_min_us']:>8.1f}-{s['without_max_us']:>8.1f}) "
                f"{s['with_median_us']:>10.1f} ({s['with_min_us']:>8.1f}-{s['with_max_us']:>8.1f}) {s['speedup_median']:>8.3f} "
                f"{s['speedup_paired_median']:>7.3f} ({s['speedup_paired_min']:.3f}-{s['speedup_paired_max']:.3f}) "
                f"{s['setup_without_median_ms']:>12.1f} {s['setup_with_median_ms']:>13.1f}\n")
print(open(stem + ".txt").read())
EOF
echo "run-fftw-dropin: wrote $stem.json and $stem.txt"
