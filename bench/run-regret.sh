#!/usr/bin/env bash
# Runs plancoll-regret (the planner's choices against the best, on signatures drawn at random from a seed) in the
# planner-quality layouts of docs/benchmarks.md, all with the same seed, and writes
# RESULTS_DIR/<configuration>-regret-seed<N>.json (the printed table as .txt next to it, starting with the command)
# and RESULTS_DIR/regret-seed<N>-summary.txt (bench/summarize-regret.py over the layouts' files).
#
# usage: bench/run-regret.sh CONFIG[,CONFIG...]|all [--seed N] [--count K] [--quick] [-- plancoll-regret options]
#   CONFIG     1n2p 1n3p 2n5p-tcp 3n6p-tcp 2n4p-tcp (all: these five; bench/configurations.sh has the others)
#   --seed N   the draw (default: from the clock, printed; run again with it to repeat the draw exactly)
#   --count K  signatures per layout (default 30)
#   --quick    short batches and timing (a smoke run, not an evaluation)
# environment:
#   PLANCOLL_REGRET  the binary (default: build/bench/plancoll-regret of this checkout)
#   RESULTS_DIR      where the files go (default: bench/results of this checkout)
#   REGRET_TIMEOUT   seconds one layout may take before it is killed (default 3600)
#
# example: bench/run-regret.sh all --count 30
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=configurations.sh
. "$here/configurations.sh"
root=$(dirname "$here")
program=${PLANCOLL_REGRET:-$root/build/bench/plancoll-regret}
results=${RESULTS_DIR:-$here/results}
timeout_s=${REGRET_TIMEOUT:-3600}

usage() {
    sed -n '7,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ $# -ge 1 ] || usage
configs=$1
shift
seed="" count=30 quick=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case $1 in
        --seed) [ $# -ge 2 ] || usage; seed=$2; shift 2 ;;
        --count) [ $# -ge 2 ] || usage; count=$2; shift 2 ;;
        --quick) quick=(--quick); shift ;;
        *) usage ;;
    esac
done
[ $# -gt 0 ] && shift # the "--"
extra=("$@")
[[ $count =~ ^[1-9][0-9]*$ ]] || usage
# one seed for every layout, drawn here so the file names can carry it
[ -n "$seed" ] || seed=$(( $(date +%s%N) % 1000000000000 ))
[[ $seed =~ ^[0-9]+$ ]] || usage

if [ ! -x "$program" ]; then
    echo "run-regret: $program not found: build first (ninja -C build)" >&2
    exit 1
fi
[ "$configs" = all ] && configs=$regret_configurations
mkdir -p "$results"
# which code was measured (a dirty tree says so)
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)

status=0
IFS=, read -r -a config_list <<<"$configs"
for config in "${config_list[@]}"; do
    if ! launcher=$(config_command "$config"); then
        echo "run-regret: unknown configuration '$config'" >&2
        exit 2
    fi
    # an ompi- configuration runs the Open MPI build's binary unless PLANCOLL_REGRET names one
    [ -n "${PLANCOLL_REGRET:-}" ] || program=$root/$(config_build_dir "$config")/bench/plancoll-regret
    stem="$results/$config-regret-seed$seed"
    args=(--seed "$seed" --count "$count" "${quick[@]}" --config "$config" --revision "$revision" --json "$stem.json"
          "${extra[@]}")
    echo "== $config at $revision: $launcher $program ${args[*]}" | tee "$stem.txt"
    rm -f "$stem.json"
    start=$(date +%s)
    set +e
    # shellcheck disable=SC2086 # the launcher is a word list on purpose
    timeout --kill-after=10 "$timeout_s" $launcher "$program" "${args[@]}" 2>&1 | tee -a "$stem.txt"
    rc=${PIPESTATUS[0]}
    set -e
    echo "# wall time of the layout: $(( $(date +%s) - start )) s" | tee -a "$stem.txt"
    # Judge by the verdict printed before MPI_Finalize: MPICH 4.0.2 over UCX tcp sometimes hangs in finalize and is
    # then ended by the program's watchdog or the timeout, which changes the exit code after a complete run.
    verdict=$(sed -n 's/^# plancoll-regret finished: exit status \([0-9]*\)$/\1/p' "$stem.txt" | tail -n 1)
    if [ "$verdict" = 0 ] && [ -s "$stem.json" ]; then
        [ "$rc" -ne 0 ] && echo "note: exit code $rc after a complete run (MPI_Finalize hang over UCX tcp, tolerated)"
    else
        echo "run-regret: $config FAILED (exit $rc${verdict:+, status $verdict})" >&2
        status=1
    fi
done
# the summary covers every layout run with this seed in RESULTS_DIR (earlier invocations' included)
shopt -s nullglob
files=("$results"/*-regret-seed"$seed".json)
if [ ${#files[@]} -gt 0 ]; then
    python3 "$here/summarize-regret.py" "${files[@]}" | tee "$results/regret-seed$seed-summary.txt"
fi
exit $status
