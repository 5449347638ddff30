#!/usr/bin/env bash
# Runs plancoll-fft-bench (the 2D FFT of examples/fft2d against FFTW's fftw_mpi_plan_dft_2d) in the configurations
# of docs/measurement.md and writes bench/results/<configuration>-fft2d.json (and the printed table as .txt next
# to it).
#
# usage: bench/run-fft-bench.sh CONFIG[,CONFIG...]|all [-- plancoll-fft-bench options]
#   CONFIG   1n2p 2n1p-tcp 2n2p-tcp 2n4p-tcp 4n2p-tcp (all: every one of them)
#   options  e.g. -- -n 1024 -b 7, -- --in-place, -- --estimate
# environment:
#   BUILD_DIR       the Meson build directory (default: build of this checkout); reconfigured so the benchmark
#                   links the MPICH build of FFTW's MPI library, without which it is not built
#   FFTW_MPI_CACHE  where bench/build-fftw-mpi.sh keeps that build (default: bench/.fftw-mpi of this checkout)
#   RESULTS_DIR     where the files go (default: bench/results of this checkout)
#   BENCH_TIMEOUT   seconds one run may take before it is killed (default 1800)
#
# example: bench/run-fft-bench.sh 1n2p,2n2p-tcp
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=configurations.sh
. "$here/configurations.sh"
root=$(dirname "$here")
build=${BUILD_DIR:-$root/build}
results=${RESULTS_DIR:-$here/results}
timeout_s=${BENCH_TIMEOUT:-1800}

[ $# -ge 1 ] || { sed -n '6,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
configs=$1
shift
[ $# -gt 0 ] && [ "$1" = "--" ] && shift
extra=("$@")

# FFTW's MPI part against MPICH (idempotent: returns at once when built; its last line is the prefix), then a
# build that links it.
prefix=$("$here/build-fftw-mpi.sh" | tail -n 1)
if [ -d "$build" ]; then
    meson setup --reconfigure "$build" "$root" -Dfftw_mpi="$prefix" >/dev/null
else
    meson setup "$build" "$root" -Dfftw_mpi="$prefix" >/dev/null
fi
ninja -C "$build" bench/plancoll-fft-bench >/dev/null
bench=$build/bench/plancoll-fft-bench

[ "$configs" = all ] && configs=$all_configurations
mkdir -p "$results"
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)


status=0
IFS=, read -r -a config_list <<<"$configs"
for config in "${config_list[@]}"; do
    launcher=$(config_command "$config") || { echo "run-fft-bench: unknown configuration '$config'" >&2; exit 2; }
    stem="$results/$config-fft2d"
    args=(--config "$config" --revision "$revision" --json "$stem.json" "${extra[@]}")
    echo "== $config fft2d at $revision: $launcher $bench ${args[*]}" | tee "$stem.txt"
    set +e
    # shellcheck disable=SC2086 # the launcher is a word list on purpose
    timeout --kill-after=10 "$timeout_s" $launcher "$bench" "${args[@]}" 2>&1 | tee -a "$stem.txt"
    rc=${PIPESTATUS[0]}
    set -e
    # Judged by the line printed before MPI_Finalize (MPICH 4.0.2 over UCX tcp may hang in finalize).
    verdict=$(sed -n 's/^# plancoll-fft-bench finished: exit status \([0-9]*\)$/\1/p' "$stem.txt" | tail -n 1)
    if [ "$verdict" = 0 ]; then
        [ "$rc" -ne 0 ] && echo "note: exit code $rc after a complete run (MPI_Finalize hang over UCX tcp, tolerated)"
    else
        echo "run-fft-bench: $config FAILED (exit $rc${verdict:+, status $verdict})" >&2
        status=1
    fi
done
exit $status
