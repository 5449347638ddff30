#!/bin/bash
# The runs of docs/scale-planner.md, "With node-local work timed on this host" (revision 610b2d0): the SMPI build's
# sim-collective (meson setup build-smpi --cross-file meson/smpi.ini && ninja -C build-smpi), computation simulated
# (SMPI's default: no smpi/simulate-computation:no among the flags). The alltoall was stopped after 8 nodes.
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=bench/results/scale/sim/plancoll-compute
F="--cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/grow-injected-times:no"
bench/scale/sim-vs-predict.sh --machine machines/dpml-cluster-b.machine --nodes 2,4,8,16 --tag compute --out $OUT \
  --program build-smpi/bench/smpi/sim-collective --smpi-flags "$F" --timeout 600 \
  --impl allreduce.dpml,allreduce.dpml_pipelined,allreduce.leader,estimate allreduce:1024 allreduce:131072
bench/scale/sim-vs-predict.sh --machine machines/glex-hpc-b.machine --nodes 2,4,8 --tag compute --out $OUT \
  --program build-smpi/bench/smpi/sim-collective --smpi-flags "$F" --timeout 600 \
  --impl alltoall.leader,alltoall.mpml,alltoall.onmpml,estimate alltoall:8
for m in dpml-cluster-b glex-hpc-b; do
  /usr/bin/python3 bench/scale/sim-vs-predict.py $OUT/sim-$m-compute.jsonl --predict-dir $OUT > $OUT/sim-$m-compute.md
done
