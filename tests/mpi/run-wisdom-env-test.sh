#!/usr/bin/env bash
# run-wisdom-env-test.sh NP CLIQUES PROGRAM
# PLANCOLL_WISDOM across runs of test_wisdom: run 1 learns and the file appears at MPI_Finalize; run 2 plans
# from it (WISDOM_ONLY) and, having learned nothing new, leaves its records as they were; a corrupt file is
# reported, ignored and never overwritten; a stale file (another registry) is replaced at MPI_Finalize.
set -u
np=$1; cliques=$2; prog=$3
here=$(dirname "$0")
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export PLANCOLL_WISDOM=$dir/env.wisdom
fail() { echo "FAIL: $*"; exit 1; }

"$here/run-mpi-test.sh" "$np" "$cliques" "$prog" --env-write || fail "run 1 (learn)"
[ -s "$PLANCOLL_WISDOM" ] || fail "run 1 did not write $PLANCOLL_WISDOM at MPI_Finalize"
head -n 1 "$PLANCOLL_WISDOM" | grep -qx 'plancoll-wisdom 1' || fail "the file is not wisdom"
grep -q "^record alltoall:P=$np:" "$PLANCOLL_WISDOM" || fail "no alltoall record for P=$np in the file"
ls -A "$dir" | grep -q tmp- && fail "a temporary file was left behind"
records1=$(grep '^record ' "$PLANCOLL_WISDOM")

"$here/run-mpi-test.sh" "$np" "$cliques" "$prog" --env-read || fail "run 2 (plan from the file)"
records2=$(grep '^record ' "$PLANCOLL_WISDOM")
[ "$records1" = "$records2" ] || fail "run 2 changed the records though it learned nothing"

good=$(cat "$PLANCOLL_WISDOM")
printf 'not wisdom at all\n' > "$PLANCOLL_WISDOM"
out=$("$here/run-mpi-test.sh" "$np" "$cliques" "$prog" --env-ignored 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "run 3 (corrupt file)"
echo "$out" | grep -q "plancoll: PLANCOLL_WISDOM=.*not a plancoll wisdom text.*left alone" || fail "no warning about the corrupt file"
[ "$(cat "$PLANCOLL_WISDOM")" = "not wisdom at all" ] || fail "the corrupt file was overwritten"

printf '%s\n' "$good" | sed 's/^registry .*/registry 0000000000000001/' > "$PLANCOLL_WISDOM"
out=$("$here/run-mpi-test.sh" "$np" "$cliques" "$prog" --env-ignored 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "run 4 (stale file)"
echo "$out" | grep -q "plancoll: PLANCOLL_WISDOM=.*registry signature.*replaced at MPI_Finalize" || fail "no warning about the stale file"
grep -q '^registry 0000000000000001$' "$PLANCOLL_WISDOM" && fail "the stale file was not replaced"
grep -q "^record alltoall:P=$np:" "$PLANCOLL_WISDOM" || fail "the replacement has no alltoall record"
echo "wisdom env test: PASS"
