#!/bin/bash
# The uniform alltoallv regret draws of docs/scale-planner.md ("Alltoallv with node-local work"): one model
# (revision ae808b0, given twice: before = after), every algorithm's best variant simulated, node-local work charged
# with a node's memory shared, MPI's own alltoallv not simulated separately (alltoallv.native is a candidate).
# PREDICT: a plancoll-predict build of ae808b0; the SMPI build of ae808b0, whose library keeps its own memory private under folding (docs/smpi.md "Globals") (this run: a copy under /tmp).
set -e
cd "$(dirname "$0")/../../../../.."
F="--cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/grow-injected-times:no --cfg=smpi/simulate-computation:no"
P=${PREDICT:?plancoll-predict of ae808b0}
common="--collective alltoallv --every-algorithm --no-mpi --nodes 2,4,8 --max-count 4096 --draw 5 --before $P --after $P --program build-smpi/bench/smpi/sim-collective --node-work model --timeout 300"
O=bench/results/scale/sim/regret-alltoallv
python3 bench/scale/regret-sim.py --machine machines/glex-hpc-b.machine --seed 3605551275 $common --smpi-flags "$F" --out $O/glex &
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --seed 4123105625 $common --smpi-flags "$F" --out $O/dpml
wait
