#!/bin/bash
# SMPI simulation against plancoll-predict at 64 to thousands of simulated ranks (docs/scale-planner.md).
#
#   bench/scale/sim-vs-predict.sh [--machine FILE] [--nodes LIST] [--ppn K] [--impl LIST] [--iters N]
#                                 [--timeout S] [--program PATH] [--smpi-flags "..."] [--out DIR] [--tag NAME] CASE...
#
# CASE: alltoall:BYTES (MPI_Alltoall, BYTES per block), alltoallv:BYTES (MPI_Alltoallv, BYTES between every pair:
# the predictor's alltoallv:uniform:BYTES), allreduce:COUNT (MPI_Allreduce of COUNT doubles, sum).
# For every case, node count and implementation it simulates bench/scale/sim-collective.c on the machine's SimGrid
# platform (machines/make-platform.py: the same numbers the prediction uses) under `/usr/bin/time -v` and a
# timeout, and appends one JSON line to OUT/sim-<machine>[-TAG].jsonl:
#   {"machine", "case", "nodes", "ppn", "ranks", "impl", "spec", "simulated_us", "wall_s", "max_rss_kb", "status",
#    "command"}
# status: ok, timeout (past --timeout seconds of wall time), or failed (exit code; the log is kept in OUT/logs/).
# It also writes the predictions of the same layouts (plancoll-predict --json) to OUT/predict-<machine>-<case>.json.
# bench/scale/sim-vs-predict.py turns both into the tables of docs/scale-planner.md.
#
# --impl: comma-separated; `mpi` is MPI's own collective (SMPI's implementation, selector smpi/coll-selector:mpich,
# MPICH's choice of algorithm by size), `mpi:ALG` SMPI's algorithm ALG (--cfg=smpi/<collective>:ALG, e.g. mpi:bruck);
# MPI's runs use --cfg=smpi/simulate-computation:no: the program computes nothing between its MPI calls, and on this
# loaded host SMPI's timing of that CPU time added 80% to a 112-rank alltoall (444 against 247 us); anything else is a PLANCOLL_ALGORITHM value (an algorithm name, which the
# planner completes with its best-estimated variant, or a full spec from plancoll-predict), run by a --program built
# against plancoll's SMPI build with -DWITH_PLANCOLL; `estimate` runs the planner's own ESTIMATE choice. Default mpi.
# --program: without it, sim-collective.c is compiled with smpicc into OUT/bin (MPI's collectives only).
# --smpi-flags: more smpirun flags (the plancoll SMPI build's: privatization of its library, its polling options).
# --node-work model: plancoll's copies and reductions advance the simulated clock at the machine file's rates
# (PLANCOLL_SIM_COPY_GBPS = shm_bandwidth_GBps, PLANCOLL_SIM_REDUCE_GBPS = reduce_GBps, else a third of the copy
# rate: the defaults of docs/machines.md), the copies of a node sharing its memory bandwidth (the platform made with
# make-platform.py --memory; src/shm/sim_work.h); `none` (default) leaves them free unless
# smpi/simulate-computation times them on this host. MPI's own collectives are not charged either way.
#
# Once a (case, implementation) times out, its larger node counts are skipped (recorded as status "skipped").
# Each simulation holds /tmp/plancoll-quiet.lock shared (HELPERS.md: never beside a timing on the real machine);
# one simulation at a time (a simulation runs every rank in one host process, on one core).
# Memory: --cfg=smpi/auto-shared-malloc-thresh:65536 folds every allocation of 64 KiB or more into one shared block
# per call site (SMPI's memory folding), so the buffers of thousands of ranks fit; their contents are garbage, which
# is why sim-collective only times.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
machine=$here/machines/dpml-cluster-b.machine
nodes=2,4,8,16,32,64,128
ppn=
impls=mpi
iters=3
timeout_s=600
program=
smpi_flags=
node_work=none
out=$here/bench/results/scale/sim
tag=
predict=${PLANCOLL_PREDICT:-$here/build/predict/plancoll-predict}
cases=()
timed_out=()
while [ $# -gt 0 ]; do
    case $1 in
    --machine) machine=$2; shift 2 ;;
    --nodes) nodes=$2; shift 2 ;;
    --ppn) ppn=$2; shift 2 ;;
    --impl) impls=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --program) program=$2; shift 2 ;;
    --smpi-flags) smpi_flags=$2; shift 2 ;;
    --node-work) node_work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tag) tag=-$2; shift 2 ;;
    -h|--help) sed -n 2,30p "$0"; exit 0 ;;
    -*) echo "sim-vs-predict: unknown option $1" >&2; exit 3 ;;
    *) cases+=("$1"); shift ;;
    esac
done
[ ${#cases[@]} -gt 0 ] || { echo "sim-vs-predict: no CASE (alltoall:1024, allreduce:1024, alltoallv:1024)" >&2; exit 3; }
command -v smpirun >/dev/null || { echo "sim-vs-predict: smpirun not found (SimGrid)" >&2; exit 77; }
mname=$(sed -n 's/^name *= *\([^ #]*\).*/\1/p' "$machine")
[ -n "$ppn" ] || ppn=$(sed -n 's/^cores_per_node *= *\([0-9]*\).*/\1/p' "$machine")
copy_gbps= reduce_gbps=
case $node_work in
none) ;;
model)
    copy_gbps=$(sed -n 's/^shm_bandwidth_GBps *= *\([0-9.eE+-]*\).*/\1/p' "$machine")
    reduce_gbps=$(sed -n 's/^reduce_GBps *= *\([0-9.eE+-]*\).*/\1/p' "$machine")
    [ -n "$copy_gbps" ] || { echo "sim-vs-predict: $machine has no shm_bandwidth_GBps" >&2; exit 3; }
    [ -n "$reduce_gbps" ] || reduce_gbps=$(python3 -c "print($copy_gbps / 3)")
    ;;
*) echo "sim-vs-predict: --node-work none|model, not '$node_work'" >&2; exit 3 ;;
esac
mkdir -p "$out/logs" "$out/platforms"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$program" ]; then
    mkdir -p "$out/bin"
    program=$out/bin/sim-collective
    smpicc -O2 -o "$program" "$here/bench/scale/sim-collective.c" || exit 2
fi
jsonl=$out/sim-$mname$tag.jsonl

signature() { # CASE -> plancoll-predict's signature
    case $1 in
    alltoall:*) echo "alltoall:${1#alltoall:}" ;;
    alltoallv:*) echo "alltoallv:uniform:${1#alltoallv:}" ;;
    allreduce:*) echo "allreduce:double:sum:${1#allreduce:}" ;;
    *) echo "sim-vs-predict: bad case $1" >&2; exit 3 ;;
    esac
}

for c in "${cases[@]}"; do
    sig=$(signature "$c") || exit 3
    "$predict" --machine "$machine" --nodes "$nodes" --ppn "$ppn" --json "$out/predict-$mname-${c/:/-}.json" "$sig" \
        >/dev/null 2>&1 || { echo "sim-vs-predict: plancoll-predict failed for $sig" >&2; exit 2; }
done

IFS=, read -ra node_list <<<"$nodes"
IFS=, read -ra impl_list <<<"$impls"
for N in "${node_list[@]}"; do
    P=$((N * ppn))
    plat=$out/platforms/$mname-${N}x$ppn.xml
    memory_flag=
    [ "$node_work" = model ] && memory_flag=--memory
    flags=$(python3 "$here/machines/make-platform.py" "$machine" --nodes "$N" --ppn "$ppn" -o "$plat" $memory_flag 2>/dev/null) || exit 2
    for c in "${cases[@]}"; do
        coll=${c%%:*} size=${c#*:}
        for impl in "${impl_list[@]}"; do
            mode=plancoll env_alg= impl_flags=
            case $impl in
            mpi) mode=mpi impl_flags="--cfg=smpi/simulate-computation:no" ;;
            mpi:*) mode=mpi impl_flags="--cfg=smpi/simulate-computation:no --cfg=smpi/$coll:${impl#mpi:}" ;;
            estimate) ;;
            *) env_alg=$impl ;;
            esac
            key="$c $impl"
            if [[ " ${timed_out[*]-} " == *" <$key> "* ]]; then
                echo "{\"machine\": \"$mname\", \"case\": \"$c\", \"nodes\": $N, \"ppn\": $ppn, \"ranks\": $P, \"impl\": \"$impl\", \"status\": \"skipped\"}" >>"$jsonl"
                continue
            fi
            log=$out/logs/$mname-$coll-$size-$N-${impl//[:=]/_}.log
            cmd="smpirun -platform $plat -hostfile ${plat%.xml}.hosts -np $P $flags --cfg=smpi/coll-selector:mpich \
--cfg=smpi/auto-shared-malloc-thresh:65536 --log=root.thr:warning $impl_flags $smpi_flags $program $coll $size $iters $mode"
            work_env=()
            [ -n "$copy_gbps" ] && [ "$mode" = plancoll ] &&
                work_env=(PLANCOLL_SIM_COPY_GBPS="$copy_gbps" PLANCOLL_SIM_REDUCE_GBPS="$reduce_gbps")
            env PLANCOLL_ALGORITHM="$env_alg" "${work_env[@]}" flock -s /tmp/plancoll-quiet.lock /usr/bin/time -v -o "$work/time" \
                timeout "$timeout_s" $cmd >"$log" 2>&1
            rc=$?
            line=$(grep '^sim-collective ' "$log" | tail -1)
            status=ok
            if [ $rc -eq 124 ]; then status=timeout timed_out+=("<$key>"); elif [ $rc -ne 0 ] || [ -z "$line" ]; then status="failed:$rc"; fi
            wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time" |
                awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
            rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time")
            spec=$(sed -n 's/.* impl=\([^ ]*\) .*/\1/p' <<<"$line")
            sim=$(sed -n 's/.* mean_us=\([^ ]*\) .*/\1/p' <<<"$line")
            python3 - "$jsonl" <<EOF
import json, sys
row = {"machine": "$mname", "case": "$c", "nodes": $N, "ppn": $ppn, "ranks": $P, "impl": "$impl",
       "spec": "$spec" or None, "simulated_us": float("${sim:-nan}") if "$sim" else None,
       "wall_s": float("${wall:-0}"), "max_rss_kb": int("${rss:-0}"), "status": "$status",
       "node_work": "model" if "${work_env[*]}" else "none",
       "command": "PLANCOLL_ALGORITHM=$env_alg ${work_env[*]} " + """$cmd""".replace("\\\\\n", "")}
open(sys.argv[1], "a").write(json.dumps(row) + "\n")
EOF
            echo "$mname $c N=$N P=$P $impl: $status sim=${sim:-} us wall=${wall}s rss=${rss}KB"
        done
    done
done
