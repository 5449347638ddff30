#!/usr/bin/env bash
# Runs plancoll-bench in the configurations of docs/measurement.md and writes
# bench/results/<configuration>-<collective>.json (plus the printed table as .txt next to it).
#
# usage: bench/run-benchmarks.sh CONFIG[,CONFIG...]|all COLLECTIVE... [-- plancoll-bench options]
#   CONFIG       1n2p 2n1p-tcp 2n2p-tcp 2n4p-tcp 4n2p-tcp (all: every one of them)
#   COLLECTIVE   alltoall | allreduce | alltoallv (all four patterns, one file each:
#                <configuration>-alltoallv-<pattern>.json) | alltoallv:PATTERN
#   options      passed to plancoll-bench after the defaults (-a all -c), e.g. -- -m 8:64K -b 7
# environment:
#   PLANCOLL_BENCH  the binary (default: build/bench/plancoll-bench of this checkout)
#   RESULTS_DIR     where the files go (default: bench/results of this checkout)
#   BENCH_TIMEOUT   seconds one run may take before it is killed (default 900)
#
# example: bench/run-benchmarks.sh 1n2p alltoall allreduce -- -m 8:1M -f 2
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=configurations.sh
. "$here/configurations.sh"
root=$(dirname "$here")
bench=${PLANCOLL_BENCH:-$root/build/bench/plancoll-bench}
results=${RESULTS_DIR:-$here/results}
timeout_s=${BENCH_TIMEOUT:-900}

usage() {
    sed -n '5,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ $# -ge 2 ] || usage
configs=$1
shift
collectives=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    collectives+=("$1")
    shift
done
[ $# -gt 0 ] && shift # the "--"
extra=("$@")
[ ${#collectives[@]} -gt 0 ] || usage

if [ ! -x "$bench" ]; then
    echo "run-benchmarks: $bench not found: build first (ninja -C build)" >&2
    exit 1
fi
[ "$configs" = all ] && configs=$all_configurations
[ "$configs" = ompi ] && configs=$ompi_configurations
mkdir -p "$results"
# which code was measured (a dirty tree says so)
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)


status=0
IFS=, read -r -a config_list <<<"$configs"
for config in "${config_list[@]}"; do
    if ! launcher=$(config_command "$config"); then
        echo "run-benchmarks: unknown configuration '$config'" >&2
        exit 2
    fi
    # an ompi- configuration runs the Open MPI build's binary unless PLANCOLL_BENCH names one
    [ -n "${PLANCOLL_BENCH:-}" ] || bench=$root/$(config_build_dir "$config")/bench/plancoll-bench
    for coll in "${collectives[@]}"; do
        runs=()
        case $coll in
            alltoall | allreduce) runs=("$coll:") ;;
            alltoallv) runs=(alltoallv:uniform alltoallv:random alltoallv:sparse alltoallv:hot) ;;
            alltoallv:uniform | alltoallv:random | alltoallv:sparse | alltoallv:hot) runs=("$coll") ;;
            *)
                echo "run-benchmarks: unknown collective '$coll'" >&2
                exit 2
                ;;
        esac
        for run in "${runs[@]}"; do
            name=${run%%:*}
            pattern=${run#*:}
            args=("$name" -a all -c --config "$config")
            stem="$results/$config-$name"
            if [ -n "$pattern" ]; then
                args+=(--pattern "$pattern")
                stem="$stem-$pattern"
            fi
            args+=(--json "$stem.json" "${extra[@]}")
            echo "== $config $name${pattern:+ ($pattern)} at $revision: $launcher $bench ${args[*]}" | tee "$stem.txt"
            set +e
            # shellcheck disable=SC2086 # the launcher is a word list on purpose
            timeout --kill-after=10 "$timeout_s" $launcher "$bench" "${args[@]}" 2>&1 | tee -a "$stem.txt"
            rc=${PIPESTATUS[0]}
            set -e
            # Judge by the verdict printed before MPI_Finalize: MPICH 4.0.2 over UCX tcp sometimes hangs in
            # finalize and is then killed, which changes the exit code after a complete run (docs/testing.md).
            verdict=$(sed -n 's/^# plancoll-bench finished: exit status \([0-9]*\)$/\1/p' "$stem.txt" | tail -n 1)
            if [ "$verdict" = 0 ]; then
                [ "$rc" -ne 0 ] && echo "note: exit code $rc after a complete run (MPI_Finalize hang over UCX tcp, tolerated)"
            else
                echo "run-benchmarks: $config $name${pattern:+ ($pattern)} FAILED (exit $rc${verdict:+, status $verdict})" >&2
                status=1
            fi
        done
    done
done
exit $status
