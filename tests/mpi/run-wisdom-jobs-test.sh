#!/usr/bin/env bash
# run-wisdom-jobs-test.sh PROGRAM [JOBS [ROUNDS [RECORDS]]]
# Several jobs that share one PLANCOLL_WISDOM file and reach MPI_Finalize together (test_wisdom_jobs.c): each
# round starts JOBS single-rank jobs (mpiexec -n 1 each) on a fresh file; after the round the file must hold
# every job's RECORDS records and its model, and the record of the key all jobs hold must be the one the file
# merge rule picks (the smallest measured time: job 0's) whichever job wrote last. Without the file's lock the
# last writer wins and the others' records are lost. Defaults: 8 jobs, 4 rounds, 3 records.
set -u
# The launcher of the MPI the build used and its environment (meson's default test setup names it).
. "$(cd "$(dirname "$0")" && pwd)/mpi-launch.sh"
prog=$1; jobs=${2:-8}; rounds=${3:-4}; records=${4:-3}
unset MPIR_CVAR_NUM_CLIQUES MPIR_CVAR_CLIQUES_BY_BLOCK PLANCOLL_EMULATE_NODES PLANCOLL_ALGORITHM
export PLANCOLL_CALIBRATE=0
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$dir"
  pc_ompi_cleanup
}
trap cleanup EXIT
failed=0
for ((round = 1; round <= rounds; round++)); do
  rdir=$dir/round-$round
  mkdir -p "$rdir"
  export PLANCOLL_WISDOM=$rdir/shared.wisdom
  pids=()
  for ((j = 0; j < jobs; j++)); do
    session=$(pc_ompi_session_dir "round-$round-job-$j")
    OMPI_MCA_orte_tmpdir_base=${session:-${OMPI_MCA_orte_tmpdir_base:-}} \
      timeout 120 "${mpiexec_cmd[@]}" -n 1 "$prog" "$j" "$jobs" "$records" "$rdir" >"$rdir/job-$j.out" 2>&1 &
    pids+=($!)
  done
  for ((j = 0; j < jobs; j++)); do
    wait "${pids[$j]}"
    rc=$?
    if [ $rc -ne 0 ] || ! grep -q "^plancoll-test wisdom-jobs job=$j of $jobs: PASS" "$rdir/job-$j.out"; then
      echo "round $round: job $j failed (exit code $rc):"
      cat "$rdir/job-$j.out"
      failed=1
    fi
  done
  pids=()
  file=$PLANCOLL_WISDOM
  if [ ! -s "$file" ]; then
    echo "round $round: no wisdom file was written"
    failed=1
    continue
  fi
  grep -q "plancoll: PLANCOLL_WISDOM" "$rdir"/job-*.out && { echo "round $round: a job warned:"; grep -h "plancoll: PLANCOLL_WISDOM" "$rdir"/job-*.out; failed=1; }
  missing=0
  for ((j = 0; j < jobs; j++)); do
    for ((k = 0; k < records; k++)); do
      grep -q "^record alltoall:P=1:nodes=1:ppn=1-1:block=$((1000000 + j * records + k)):inplace=0 " "$file" || missing=$((missing + 1))
    done
    grep -qx "shape P=1:N=1:ppn=1-1:job=$j" "$file" || missing=$((missing + 1))
  done
  shared=$(grep "^record alltoall:P=1:nodes=1:ppn=1-1:block=999999:inplace=0 " "$file")
  if [ $missing -ne 0 ]; then
    echo "round $round: $missing of $((jobs * (records + 1))) records and models of the $jobs jobs are missing from the file"
    failed=1
  else
    echo "round $round: all $((jobs * records)) records and $jobs models are in the file"
  fi
  case "$shared" in
    *" alltoall.pairwise "*" us=100.5 "*) ;;
    *) echo "round $round: the shared key holds '$shared', not job 0's record (us=100.5)"; failed=1 ;;
  esac
  ls -A "$rdir" | grep -q 'tmp-' && { echo "round $round: a temporary file was left behind"; failed=1; }
done
[ $failed -eq 0 ] || { echo "wisdom jobs test: FAIL"; exit 1; }
echo "wisdom jobs test: PASS ($rounds rounds of $jobs jobs)"
