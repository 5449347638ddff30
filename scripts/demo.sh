#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo: plancoll plans alltoall, alltoallv and allreduce on
# local ranks and benchmarks them against MPI's own collectives, printing the table.
# DEMO_RANKS (default 2) sets the number of local ranks. The plans are made with PLANCOLL_MEASURE (what a
# solver that repeats a call thousands of times should ask for); extra arguments go to plancoll-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [ -f build/build.ninja ]; then meson setup --reconfigure build -Dmpi=mpich >/dev/null; else meson setup build -Dmpi=mpich >/dev/null; fi
ninja -C build >/dev/null
exec mpiexec.mpich -n "${DEMO_RANKS:-2}" build/bench/plancoll-bench --rigor measure "$@"
