#!/usr/bin/env bash
# run-smpi-test.sh NODES PROGRAM [ARGS...]
# Runs an MPI test program of the SMPI build (meson/smpi.ini) under SimGrid's smpirun on a generated platform of
# simulated nodes: NODES lists their core counts ("6,6,4": 16 ranks on three nodes, one rank per core, world
# ranks node after node; make-platform.py). Under SMPI the simulated hosts are the nodes: MPI_Comm_split_type
# groups ranks by host, so nothing is emulated. Passes when rank 0 printed a PASS verdict and the simulation
# ended cleanly: under SMPI a hang or a failed exit is a failure (there is no MPI finalize hang to tolerate).
#
# SMPI settings (docs/smpi.md): MPI_Test and MPI_Iprobe inject no simulated time (SMPI's default is 100 us,
# growing with every failed call, which mis-times every wait: plancoll's own waits sleep in simulated time),
# and the CPU time the ranks spend between MPI calls is not simulated (smpi/simulate-computation:no, below); with
# PLANCOLL_SMPI_COMPUTATION=yes it is injected as simulated computation at this host's speed (smpi/host-speed
# equal to the platform's 1 Gflop/s: a simulated core runs as fast as this machine's).
# PLANCOLL_SMPI_OPTS adds smpirun options.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nodes=$1; shift
program=$(readlink -f "$1"); shift
work=$(mktemp -d "${TMPDIR:-/tmp}/plancoll-smpi.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$here/make-platform.py" "$nodes" "$work/platform.xml" "$work/hosts" || exit 1
# one line per rank (smpirun would otherwise unroll `host:N` into a file of its own in the current directory)
awk -F: '{ for (i = 0; i < $2; i++) print $1 }' "$work/hosts" >"$work/ranks"
np=$(wc -l <"$work/ranks")
# The algorithm tests plan with the default model (calibration under simulation is not their subject).
export PLANCOLL_CALIBRATE=${PLANCOLL_CALIBRATE:-0}
# The exchange programs run their cross-section of cases on every forced algorithm (exchange_runner.h):
# PLANCOLL_TEST_FEW=0 runs the whole table.
export PLANCOLL_TEST_FEW=${PLANCOLL_TEST_FEW-1}
# MPI's own collectives are MPICH's algorithms (smpi/coll-selector:mpich), as in bench/scale: SMPI's default
# selection made plancoll's blocking plan-time collectives at 112 ranks run past 110 s (11 s with MPICH's).
# Correctness needs no compute timing: the CPU time between MPI calls is not injected as simulated time (with it,
# the host's own load becomes simulated time during which the peers poll, and a run is 10x longer).
# PLANCOLL_SMPI_COMPUTATION=yes injects it (timing runs).
compute="--cfg=smpi/simulate-computation:${PLANCOLL_SMPI_COMPUTATION:-no}"
out="$work/out"
start=$(date +%s.%N)
# shellcheck disable=SC2086
(cd "$work" && timeout "${PLANCOLL_TEST_TIMEOUT:-300}" "${PLANCOLL_MPIEXEC:-smpirun}" \
  -platform "$work/platform.xml" -hostfile "$work/ranks" -np "$np" \
  --cfg=smpi/test:0 --cfg=smpi/iprobe:0 --cfg=smpi/grow-injected-times:no --cfg=smpi/coll-selector:mpich \
  --cfg=smpi/host-speed:1Gf $compute --cfg=smpi/display-timing:yes --cfg=smpi/tmpdir:"$work" \
  --log=xbt_cfg.thres:warning --log=smpi_config.thres:warning ${PLANCOLL_SMPI_OPTS:-} \
  "$program" "$@") >"$out" 2>&1
rc=$?
end=$(date +%s.%N)
cat "$out"
simulated=$(grep -oE 'Simulated time: [0-9.e+-]+' "$out" | tail -n 1 | awk '{print $3}')
echo "smpi: nodes $nodes ($np ranks): wall $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }') s, simulated ${simulated:-?} s, exit $rc"
verdict=$(grep -E '^plancoll-test .*: (PASS|FAIL|SKIP)' "$out" | tail -n 1)
case "$verdict" in
  *": PASS "*)
    if [ $rc -ne 0 ]; then echo "FAIL: exit code $rc after a PASS verdict (under SMPI nothing is tolerated)"; exit 1; fi
    exit 0 ;;
  *": FAIL "*) exit 1 ;;
  *": SKIP "*) exit 77 ;;
  *) echo "no verdict: the program crashed or hung (exit code $rc)"; exit 1 ;;
esac
