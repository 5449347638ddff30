#!/usr/bin/env bash
# run-dropin-overlap.sh [LAYOUT[,LAYOUT...]] [ROUNDS] [-- dropin-overlap ARGS...]
#
# What the drop-in layer's guard thread (src/dropin/guard.c) costs or gains a program that hides persistent
# collectives behind its computation: build/bench/dropin-overlap run plain (MPI's own persistent collectives), under
# the layer with PLANCOLL_DROPIN_PROGRESS=calls (plans, no guard) and under the layer with the guard (the default),
# one after the other, ROUNDS times (default 3), per layout (default 1n2p,2n2p-tcp; bench/configurations.sh). The
# thread level is a whole process's, so the three cannot share a process: they alternate run by run instead.
# Output: bench/results/dropin-overlap-<rev>/<layout>.txt (set RESULTS_DIR to write elsewhere).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
source "$here/configurations.sh"
layouts=${1:-1n2p,2n2p-tcp}
rounds=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
args=("$@")
build=$root/build
prog=$build/bench/dropin-overlap
run=$build/src/dropin/plancoll-run
[ -x "$prog" ] && [ -x "$run" ] || { echo "run-dropin-overlap: build first (meson compile -C build)" >&2; exit 1; }
rev=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
out_dir=${RESULTS_DIR:-$root/bench/results/dropin-overlap-$rev}
mkdir -p "$out_dir"
for layout in ${layouts//,/ }; do
  cmd=$(config_command "$layout")
  out=$out_dir/$layout.txt
  {
    echo "# dropin-overlap ${args[*]+${args[*]}}, layout $layout ($cmd), revision $rev, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
    for r in $(seq 1 "$rounds"); do
      echo "## round $r: plain MPI"
      $cmd timeout 300 "$prog" ${args[@]+"${args[@]}"} </dev/null || echo "## exit status $? (the results above stand: MPICH's multi-clique finalize hang ends in the program's watchdog)"
      echo "## round $r: layer, PLANCOLL_DROPIN_PROGRESS=calls"
      $cmd timeout 300 env PLANCOLL_DROPIN_PROGRESS=calls "$run" "$prog" ${args[@]+"${args[@]}"} </dev/null || echo "## exit status $? (the results above stand: MPICH's multi-clique finalize hang ends in the program's watchdog)"
      echo "## round $r: layer, guard (default)"
      $cmd timeout 300 "$run" "$prog" ${args[@]+"${args[@]}"} </dev/null || echo "## exit status $? (the results above stand: MPICH's multi-clique finalize hang ends in the program's watchdog)"
    done
  } 2>&1 | grep -v "^$" | tee "$out"
done
