#!/bin/bash
# The alltoall regret draws of docs/scale-planner.md ("Alltoall with node-local work"): one model (revision 347e5a3,
# given twice: before = after), every algorithm's best variant simulated, node-local work charged with a node's
# memory shared, MPI's own alltoall not simulated (minutes of wall time from 8 nodes). PREDICT: a plancoll-predict
# build of 347e5a3 (this run: a copy under /tmp).
set -e
cd "$(dirname "$0")/../../../../.."
F="--cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/grow-injected-times:no --cfg=smpi/simulate-computation:no"
P=${PREDICT:?plancoll-predict of 347e5a3}
common="--collective alltoall --every-algorithm --no-mpi --nodes 2,4,8 --max-count 4096 --draw 5 --before $P --after $P --program build-smpi/bench/smpi/sim-collective --node-work model --timeout 300"
O=bench/results/scale/sim/regret-alltoall
python3 bench/scale/regret-sim.py --machine machines/glex-hpc-b.machine --seed 2236067977 $common --smpi-flags "$F" --out $O
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --seed 2645751311 $common --smpi-flags "$F" --out $O
