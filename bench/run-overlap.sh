#!/usr/bin/env bash
# Runs plancoll-bench --overlap --progress-thread (OSU's overlap method; docs/measurement.md's protocol) in the
# configurations of docs/measurement.md and writes bench/results/<configuration>-<collective>-overlap.json (and the
# printed table as .txt next to it).
#
# usage: bench/run-overlap.sh CONFIG[,CONFIG...] COLLECTIVE... [-- plancoll-bench options]
#   CONFIG       1n2p 2n2p-tcp 2n4p-tcp ... (bench/configurations.sh)
#   COLLECTIVE   alltoall | alltoallv | allreduce (alltoallv with the uniform pattern)
#   options      passed after the defaults (--overlap --progress-thread -c), e.g. -- -m 8:1M -f 128
# environment: PLANCOLL_BENCH, RESULTS_DIR, BENCH_TIMEOUT as bench/run-benchmarks.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=configurations.sh
. "$here/configurations.sh"
root=$(dirname "$here")
bench=${PLANCOLL_BENCH:-$root/build/bench/plancoll-bench}
results=${RESULTS_DIR:-$here/results}
timeout_s=${BENCH_TIMEOUT:-900}
[ $# -ge 2 ] || { sed -n '6,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
configs=$1
shift
collectives=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do collectives+=("$1"); shift; done
[ $# -gt 0 ] && shift
extra=("$@")
mkdir -p "$results"
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
status=0
IFS=, read -r -a config_list <<<"$configs"
for config in "${config_list[@]}"; do
    launcher=$(config_command "$config") || { echo "run-overlap: unknown configuration '$config'" >&2; exit 2; }
    for coll in "${collectives[@]}"; do
        stem="$results/$config-$coll-overlap"
        args=("$coll" --overlap --progress-thread -c --config "$config" --json "$stem.json" "${extra[@]}")
        echo "== $config $coll overlap at $revision: $launcher $bench ${args[*]}" | tee "$stem.txt"
        set +e
        # shellcheck disable=SC2086 # the launcher is a word list on purpose
        timeout --kill-after=10 "$timeout_s" $launcher "$bench" "${args[@]}" 2>&1 | tee -a "$stem.txt"
        rc=${PIPESTATUS[0]}
        set -e
        # the verdict printed before MPI_Finalize decides (MPICH 4.0.2 over UCX tcp may hang in finalize)
        verdict=$(sed -n 's/^# plancoll-bench finished: exit status \([0-9]*\)$/\1/p' "$stem.txt" | tail -n 1)
        if [ "$verdict" != 0 ]; then
            echo "run-overlap: $config $coll FAILED (exit $rc${verdict:+, status $verdict})" >&2
            status=1
        fi
    done
done
exit $status
