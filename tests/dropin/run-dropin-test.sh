#!/usr/bin/env bash
# run-dropin-test.sh [--launcher PLANCOLL_RUN] [--expect COLL[,COLL...]] [--layer-env VAR=VALUE]... [--bad-env]
#                    NP CLIQUES[:block] PROGRAM [ARGS...]
#
# Runs a plain-MPI test program (tests/dropin) on NP ranks and CLIQUES emulated nodes with tests/mpi/run-mpi-test.sh
# (same layouts, same verdict rule, same tolerance of the MPICH/UCX tcp finalize hang) twice:
#   1. plain, without the drop-in layer;
#   2. under the layer (mpiexec ... PLANCOLL_RUN PROGRAM), with PLANCOLL_DROPIN_REPORT=<file>.
# Both must PASS. The second run must not print the layer's "plancoll-dropin: ... the layer is off" message, and
# its report must show that the layer planned: for every collective named by --expect (e.g.
# alltoall,alltoallv,allreduce or alltoall_init,...), a line collective=<name> with planned_calls > 0.
# With --bad-env, three more runs under the layer with a bad environment must still PASS (the layer turns itself
# off and passes every call to MPI) and print the "plancoll-dropin:" message: PLANCOLL_DROPIN_AFTER=abc,
# PLANCOLL_DROPIN_PROGRESS=sometimes, and
# PLANCOLL_DROPIN_AFTER differing across ranks (rank r gets r+1, set from the launcher's rank variable by a wrapper).
# --layer-env sets a variable for the second run only (e.g. PLANCOLL_DROPIN_MAX_PLANS=1: evictions).
# The layer: --launcher PATH (the build tree's src/dropin/plancoll-run), else $PLANCOLL_RUN.
set -u
here=$(cd "$(dirname "$0")" && pwd)
mpi_runner=$here/../mpi/run-mpi-test.sh
launcher=${PLANCOLL_RUN:-}
expect=""
bad_env=0
layer_env=()
while [ $# -gt 0 ]; do
  case "$1" in
    --launcher) launcher=$2; shift 2 ;;
    --expect) expect=$2; shift 2 ;;
    --bad-env) bad_env=1; shift ;;
    --layer-env) layer_env+=("$2"); shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 3 ]; then
  echo "usage: run-dropin-test.sh [--launcher PLANCOLL_RUN] [--expect COLLS] [--bad-env] NP CLIQUES PROGRAM [ARGS...]" >&2
  exit 2
fi
np=$1; cliques=$2; shift 2
if [ -z "$launcher" ] || [ ! -x "$launcher" ]; then
  echo "run-dropin-test: no launcher (--launcher or PLANCOLL_RUN): '$launcher'" >&2
  exit 1
fi
# Settings the user may have in the environment would change what is tested.
unset PLANCOLL_DROPIN PLANCOLL_DROPIN_AFTER PLANCOLL_DROPIN_RIGOR PLANCOLL_DROPIN_MAX_PLANS PLANCOLL_DROPIN_REPORT PLANCOLL_DROPIN_PROGRESS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

echo "== plain MPI"
"$mpi_runner" "$np" "$cliques" "$@" || { echo "run-dropin-test: FAIL without the layer"; failed=1; }

echo "== under the layer ($launcher) ${layer_env[*]+${layer_env[*]}}"
report=$tmp/report
env ${layer_env[@]+"${layer_env[@]}"} PLANCOLL_DROPIN_REPORT="$report" "$mpi_runner" "$np" "$cliques" "$launcher" "$@" \
  >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if [ $rc -ne 0 ]; then echo "run-dropin-test: FAIL under the layer"; failed=1; fi
if grep -q 'plancoll-dropin:.*the layer is off' "$tmp/out"; then
  echo "run-dropin-test: FAIL: the layer turned itself off with a good environment"
  failed=1
fi
if [ -n "$expect" ]; then
  if [ ! -s "$report" ]; then
    echo "run-dropin-test: FAIL: no report written to PLANCOLL_DROPIN_REPORT"
    failed=1
  else
    echo "-- report"
    cat "$report"
    for coll in ${expect//,/ }; do
      # the largest planned_calls over the collective's lines
      planned=$(awk -v c="$coll" '
        { p = -1; name = "" }
        { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "collective") name = kv[2];
                                       if (kv[1] == "planned_calls") p = kv[2] + 0 } }
        name == c && p > best { best = p }
        BEGIN { best = -1 } END { print best }' "$report")
      if [ "$planned" -gt 0 ] 2>/dev/null; then
        echo "report: $coll planned_calls $planned"
      else
        echo "run-dropin-test: FAIL: the report shows no planned call of $coll (planned_calls $planned)"
        failed=1
      fi
    done
  fi
fi

if [ $bad_env -eq 1 ]; then
  # a bad value of each setting: the layer turns itself off with a message naming it, and the program passes
  for bad in PLANCOLL_DROPIN_AFTER=abc PLANCOLL_DROPIN_PROGRESS=sometimes; do
    echo "== under the layer, $bad"
    env "$bad" "$mpi_runner" "$np" "$cliques" "$launcher" "$@" >"$tmp/out" 2>&1
    rc=$?
    cat "$tmp/out"
    if [ $rc -ne 0 ]; then echo "run-dropin-test: FAIL with $bad"; failed=1; fi
    if ! grep -q "plancoll-dropin:.*${bad%%=*}" "$tmp/out"; then
      echo "run-dropin-test: FAIL: no plancoll-dropin: message for $bad"
      failed=1
    fi
  done
  echo "== under the layer, PLANCOLL_DROPIN_AFTER = rank + 1"
  # the launcher gives every rank its rank (MPICH's hydra PMI_RANK, Open MPI's OMPI_COMM_WORLD_RANK); the wrapper
  # runs before the layer's launcher, so the value differs per rank
  cat >"$tmp/per-rank" <<'WRAP'
#!/bin/sh
PLANCOLL_DROPIN_AFTER=$((${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-0}} + 1))
export PLANCOLL_DROPIN_AFTER
exec "$@"
WRAP
  chmod +x "$tmp/per-rank"
  "$mpi_runner" "$np" "$cliques" "$tmp/per-rank" "$launcher" "$@" >"$tmp/out" 2>&1
  rc=$?
  cat "$tmp/out"
  if [ $rc -ne 0 ]; then echo "run-dropin-test: FAIL with PLANCOLL_DROPIN_AFTER differing across ranks"; failed=1; fi
  if [ "$np" -gt 1 ] && ! grep -q 'plancoll-dropin:.*the layer is off' "$tmp/out"; then
    echo "run-dropin-test: FAIL: no plancoll-dropin: message for PLANCOLL_DROPIN_AFTER differing across ranks"
    failed=1
  fi
fi

if [ $failed -ne 0 ]; then echo "run-dropin-test: FAIL"; exit 1; fi
echo "run-dropin-test: PASS"
exit 0
