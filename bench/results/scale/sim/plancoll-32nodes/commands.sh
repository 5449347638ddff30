#!/bin/bash
cd "$(dirname "$0")/../../../../.." || exit 2
OUT=bench/results/scale/sim/plancoll-32nodes
F="--cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/grow-injected-times:no --cfg=smpi/simulate-computation:no"
bench/scale/sim-vs-predict.sh --machine machines/dpml-cluster-b.machine --nodes 32 --tag p9 --out $OUT \
  --program build-smpi/bench/smpi/sim-collective --smpi-flags "$F" --timeout 480 \
  --impl estimate,allreduce.dpml,allreduce.dpml_pipelined,allreduce.leader,mpi allreduce:1024 allreduce:131072
/usr/bin/python3 bench/scale/sim-vs-predict.py $OUT/sim-dpml-cluster-b-p9.jsonl --predict-dir $OUT > $OUT/sim-dpml-cluster-b-p9.md
