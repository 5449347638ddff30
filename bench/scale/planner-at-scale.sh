#!/bin/bash
# What ESTIMATE chooses at 16 to 4,096 nodes on the papers' platforms (docs/scale-planner.md): plancoll-predict over
# the benchmark signatures, JSON and tables under bench/results/scale/planner/, PNG plots beside them.
#   bench/scale/planner-at-scale.sh [TAG]      (TAG names the files: before, after, ...)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
tag=${1:-after}
out=$here/bench/results/scale/planner
predict=${PLANCOLL_PREDICT:-$here/build/predict/plancoll-predict}
mkdir -p "$out"
# docs/benchmarks.md's sizes: alltoall 8 B .. 1 MiB blocks (here 8 B, 1 KiB, 64 KiB), allreduce 8 B .. 4 MiB
# (1, 1024, 131072, 524288 doubles), alltoallv uniform and random blocks
sigs="alltoall:8 alltoall:1024 alltoall:65536 alltoallv:uniform:1024 alltoallv:random:4096:1 allreduce:double:sum:1
allreduce:double:sum:1024 allreduce:double:sum:131072 allreduce:double:sum:524288"
for m in dpml-cluster-b glex-hpc-b; do
    ppn=$(sed -n 's/^cores_per_node *= *\([0-9]*\).*/\1/p' "$here/machines/$m.machine")
    "$predict" --machine "$here/machines/$m.machine" --nodes 16:4096:x2 --ppn "$ppn" --json "$out/$tag-$m.json" $sigs \
        >"$out/$tag-$m.txt" 2>&1
    /usr/bin/python3 "$here/bench/scale/planner-table.py" "$out/$tag-$m.json" >"$out/$tag-$m-choices.md"
done
# Plots: predicted time against node count, one line per algorithm (its best variant), ESTIMATE's pick circled
for m in dpml-cluster-b glex-hpc-b; do
    ppn=$(sed -n 's/^cores_per_node *= *\([0-9]*\).*/\1/p' "$here/machines/$m.machine")
    "$predict" --machine "$here/machines/$m.machine" --nodes 16:4096:x2 --ppn "$ppn" --json "$out/$tag-$m-plot.json" \
        alltoall:8 alltoall:1024 allreduce:double:sum:1024 allreduce:double:sum:131072 >/dev/null 2>&1
    /usr/bin/python3 "$here/predict/plot-predict.py" "$out/$tag-$m-plot.json" -o "$out/$tag-$m.png" \
        --title "$m, $ppn ranks per node: predicted time by node count ($tag)"
done
# Against the "before" files (made with PLANCOLL_PREDICT pointing at main's plancoll-predict): the summary and the
# tables with the old choice priced by this model
if [ "$tag" != before ]; then
    for m in dpml-cluster-b glex-hpc-b; do
        [ -f "$out/before-$m.json" ] || continue
        /usr/bin/python3 "$here/bench/scale/planner-summary.py" "$out/$tag-$m.json" "$out/before-$m.json" >"$out/summary-$m.md"
        /usr/bin/python3 "$here/bench/scale/planner-table.py" "$out/$tag-$m.json" --before "$out/before-$m.json" \
            >"$out/$tag-$m-choices.md"
    done
fi
