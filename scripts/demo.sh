#!/usr/bin/env bash
# Installs what is missing, builds, and runs the demo: plancoll plans alltoall, alltoallv and allreduce on
# local ranks and benchmarks them against MPI's own collectives, printing the table.
# DEMO_RANKS (default 2) sets the number of local ranks; DEMO_MPI=mpich (default) or openmpi picks the MPI (build
# directory build/ or build-openmpi/, launcher mpiexec.mpich or mpiexec.openmpi). The plans are made with PLANCOLL_MEASURE (what a
# solver that repeats a call thousands of times should ask for); extra arguments go to plancoll-bench.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
mpi=${DEMO_MPI:-mpich}
case "$mpi" in
  mpich) dir=build; launch=(mpiexec.mpich) ;;
  openmpi)
    dir=build-openmpi
    # run as root in containers; --oversubscribe only matters when DEMO_RANKS exceeds the cores
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    launch=(mpiexec.openmpi --oversubscribe) ;;
  *) echo "demo: DEMO_MPI must be mpich or openmpi, not '$mpi'" >&2; exit 2 ;;
esac
if [ -f "$dir/build.ninja" ]; then meson setup --reconfigure "$dir" -Dmpi="$mpi" >/dev/null; else meson setup "$dir" -Dmpi="$mpi" >/dev/null; fi
ninja -C "$dir" >/dev/null
exec "${launch[@]}" -n "${DEMO_RANKS:-2}" "$dir/bench/plancoll-bench" --rigor measure "$@"
