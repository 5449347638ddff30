#!/usr/bin/env bash
# plancoll under SimGrid SMPI (docs/smpi.md).
#   scripts/smpi.sh                       builds build-smpi/ (meson/smpi.ini: smpicc, static) and runs the quick SMPI
#                                         tests (suite smpi-quick, the CI stage of scripts/test.sh)
#   scripts/smpi.sh --suite smpi          the same, every SMPI test (every algorithm forced, 16-64 simulated ranks)
#   scripts/smpi.sh run NODES PROG [ARGS] one program of build-smpi/ on simulated nodes of NODES cores ("6,6,4")
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -f build-smpi/build.ninja ]; then
  meson setup --reconfigure build-smpi --cross-file meson/smpi.ini >/dev/null || exit 1
else
  meson setup build-smpi --cross-file meson/smpi.ini >/dev/null || exit 1
fi
ninja -C build-smpi >/dev/null || { ninja -C build-smpi; exit 1; }
if [ "${1:-}" = run ]; then
  shift
  exec tests/smpi/run-smpi-test.sh "$@"
fi
[ $# -eq 0 ] && set -- --suite smpi-quick
# one simulation at a time: each runs every simulated rank in one process, on one core
meson test -C build-smpi --print-errorlogs --num-processes 1 "$@"
