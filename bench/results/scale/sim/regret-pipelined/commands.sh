#!/bin/bash
# How the regret tables of this directory were made (docs/scale-planner.md "The pipelined DPML model, judged by
# simulation with node-local work"). Two plancoll-predict builds: before = revision 45232ee (the k exchanges of
# allreduce.dpml_pipelined charged one after another), after = revision 559faf3 (in flight together: the slower of
# the network's and the leader's core's view). Build each in a worktree:
#   git worktree add /tmp/rev REV && meson setup /tmp/rev/build /tmp/rev && ninja -C /tmp/rev/build predict/plancoll-predict
# and give them as BEFORE=... AFTER=... (this run: copies of the two builds under /tmp).
# The simulations: the SMPI build (build-smpi/bench/smpi/sim-collective: node-local work charged at the machine
# file's rates, waits late by at most 1/16), network-only flags otherwise. fresh/, seen/, fixed/: revision 559faf3,
# every copy at one core's rate; fresh-memory/, seen-memory/, fixed-memory/: revision 6aa5146, a node's copies
# sharing its memory bandwidth (make-platform.py --memory, which sim-vs-predict.sh --node-work model now passes).
# fresh: draws made after the model was final, looked at once (the judge); seen: the draws that showed the flaws
# fixed in 559faf3 (first-draw-posted-only/), re-run; fixed: the cases of the earlier regret table.
set -e
cd "$(dirname "$0")/../../../../.."
F="--cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/grow-injected-times:no --cfg=smpi/simulate-computation:no"
common="--before ${BEFORE:?plancoll-predict of 45232ee} --after ${AFTER:?plancoll-predict of 559faf3} --program build-smpi/bench/smpi/sim-collective --node-work model"
O=bench/results/scale/sim/regret-pipelined
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --draw 6 --seed 3141592653 $common --smpi-flags "$F" --out $O/fresh
python3 bench/scale/regret-sim.py --machine machines/glex-hpc-b.machine --draw 6 --seed 1732050807 $common --smpi-flags "$F" --out $O/fresh
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --draw 6 --seed 2718281828 $common --smpi-flags "$F" --out $O/seen
python3 bench/scale/regret-sim.py --machine machines/glex-hpc-b.machine --draw 6 --seed 1414213562 $common --smpi-flags "$F" --out $O/seen
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --cases 2:1024,4:1024,8:1024,16:1024,2:131072,4:131072,8:131072,16:131072 $common --smpi-flags "$F" --out $O/fixed
# with a node's memory shared (revision 6aa5146's build-smpi):
python3 bench/scale/regret-sim.py --machine machines/glex-hpc-b.machine --draw 6 --seed 1732050807 $common --smpi-flags "$F" --out $O/fresh-memory
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --draw 6 --seed 3141592653 $common --smpi-flags "$F" --out $O/fresh-memory
python3 bench/scale/regret-sim.py --machine machines/glex-hpc-b.machine --draw 6 --seed 1414213562 $common --smpi-flags "$F" --out $O/seen-memory
python3 bench/scale/regret-sim.py --machine machines/dpml-cluster-b.machine --cases 2:1024,4:1024,8:1024,16:1024,2:131072,4:131072,8:131072,16:131072 $common --smpi-flags "$F" --out $O/fixed-memory
