#!/usr/bin/env bash
# Runs plancoll-transpose-bench in the configurations of docs/measurement.md and writes
# bench/results/<configuration>-transpose.json (and the printed table as .txt next to it).
#
# usage: bench/run-transpose-bench.sh CONFIG[,CONFIG...]|all [-- plancoll-transpose-bench options]
#   CONFIG   1n2p 2n1p-tcp 2n2p-tcp 2n4p-tcp 4n2p-tcp (all: every one of them)
#   options  e.g. -- -n 1024 -b 7, -- --in-place, -- -a all (every inner algorithm forced as well)
# environment:
#   BUILD_DIR       the Meson build directory (default: build of this checkout); reconfigured so the benchmark
#                   links the MPICH build of FFTW's MPI library
#   RESULTS_DIR     where the files go (default: bench/results of this checkout)
#   BENCH_TIMEOUT   seconds one run may take before it is killed (default 1800)
#   FFTW_MPI_CACHE  where bench/build-fftw-mpi.sh keeps that build (default: bench/.fftw-mpi of this checkout)
#   NO_FFTW=1       do not build FFTW's MPI library (the benchmark then runs without the FFTW reference)
#
# example: bench/run-transpose-bench.sh 1n2p,2n2p-tcp
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=configurations.sh
. "$here/configurations.sh"
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
results=${RESULTS_DIR:-$here/results}
timeout_s=${BENCH_TIMEOUT:-1800}

[ $# -ge 1 ] || { sed -n '5,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
configs=$1
shift
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
extra=("$@")

# FFTW's MPI part against MPICH (idempotent: returns at once when built; its last line is the prefix, which may
# be outside this checkout with FFTW_MPI_CACHE), then a build that links it.
fftw_option=()
if [ "${NO_FFTW:-0}" != 1 ]; then
    fftw_option=(-Dfftw_mpi="$("$here/build-fftw-mpi.sh" | tail -n 1)")
fi
if [ -d "$build" ]; then
    meson setup --reconfigure "$build" "$root" "${fftw_option[@]}" >/dev/null
else
    meson setup "$build" "$root" "${fftw_option[@]}" >/dev/null
fi
ninja -C "$build" bench/plancoll-transpose-bench >/dev/null
bench=$build/bench/plancoll-transpose-bench

[ "$configs" = all ] && configs=$all_configurations
mkdir -p "$results"
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)


status=0
IFS=, read -r -a config_list <<<"$configs"
for config in "${config_list[@]}"; do
    launcher=$(config_command "$config") || { echo "run-transpose-bench: unknown configuration '$config'" >&2; exit 2; }
    stem="$results/$config-transpose"
    args=(--config "$config" --json "$stem.json" "${extra[@]}")
    echo "== $config transpose at $revision: $launcher $bench ${args[*]}" | tee "$stem.txt"
    set +e
    # shellcheck disable=SC2086 # the launcher is a word list on purpose
    timeout --kill-after=10 "$timeout_s" $launcher "$bench" "${args[@]}" 2>&1 | tee -a "$stem.txt"
    rc=${PIPESTATUS[0]}
    set -e
    # Judged by the line printed before MPI_Finalize (MPICH 4.0.2 over UCX tcp may hang in finalize).
    verdict=$(sed -n 's/^# plancoll-transpose-bench finished: exit status \([0-9]*\)$/\1/p' "$stem.txt" | tail -n 1)
    if [ "$verdict" = 0 ]; then
        [ "$rc" -ne 0 ] && echo "note: exit code $rc after a complete run (MPI_Finalize hang over UCX tcp, tolerated)"
    else
        echo "run-transpose-bench: $config FAILED (exit $rc${verdict:+, status $verdict})" >&2
        status=1
    fi
done
exit $status
