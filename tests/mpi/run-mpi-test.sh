#!/usr/bin/env bash
# run-mpi-test.sh NP CLIQUES[:block|:emulate] PROGRAM [ARGS...]
# Runs an MPI test program on NP local ranks, on CLIQUES emulated nodes when CLIQUES > 1, the inter-node traffic
# over TCP loopback (mpi-launch.sh: MPICH's cliques round robin or in blocks with ":block", plancoll's own
# PLANCOLL_EMULATE_NODES with ":emulate"; under Open MPI blocks only, always PLANCOLL_EMULATE_NODES). Passes when
# rank 0 printed a PASS verdict. A non-zero exit after a PASS verdict is tolerated only under MPICH, as the MPICH
# 4.0.2 / UCX tcp finalize hang (see testlib.h); under Open MPI it fails; anything else fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/mpi-launch.sh"
np=$1; cliques=$2; shift 2
if ! pc_emulate_nodes "$cliques"; then
  echo "SKIP: $cliques: round-robin emulated nodes exist only under MPICH (its cliques); Open MPI runs blocks"
  exit 77
fi
# The algorithm tests plan with the default model: calibration is the subject of test_calibrate alone, and
# measuring the machine in every program would cost seconds per layout at 8 ranks on 2 cores.
export PLANCOLL_CALIBRATE=${PLANCOLL_CALIBRATE:-0}
out=$(mktemp)
timeout "${PLANCOLL_TEST_TIMEOUT:-300}" "${mpiexec_cmd[@]}" -n "$np" "$@" >"$out" 2>&1
rc=$?
cat "$out"
verdict=$(grep -E '^plancoll-test .*: (PASS|FAIL|SKIP)' "$out" | tail -n 1)
rm -f "$out"
case "$verdict" in
  *": PASS "*)
    if [ $rc -ne 0 ]; then
      if [ "$PLANCOLL_MPI" != mpich ]; then
        # the tolerance is for one known MPICH/UCX defect; elsewhere a failed exit (a hang in MPI_Finalize that the
        # watchdog ended, a crash after the verdict) is a failure to report
        echo "FAIL: exit code $rc after a PASS verdict under $PLANCOLL_MPI (not tolerated: only MPICH's UCX tcp finalize hang is)"
        exit 1
      fi
      echo "note: exit code $rc after a PASS verdict (MPI_Finalize hang over UCX tcp, tolerated)"
    fi
    exit 0 ;;
  *": FAIL "*) exit 1 ;;
  *": SKIP "*) exit 77 ;; # the program found the machine unfit for it (meson counts it as skipped)
  *) echo "no verdict: the program crashed or hung (exit code $rc)"; exit 1 ;;
esac
