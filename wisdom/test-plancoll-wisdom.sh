#!/usr/bin/env bash
# test-plancoll-wisdom.sh TOOL RUNNER: the plancoll-wisdom tool end to end on one node (3 and 2 ranks): precompute,
# show, check (valid, stale, corrupt, missing), plan from -i wisdom, merge (and a refused merge), bad signatures.
set -u
# The launcher of the MPI the build used and its environment (meson's default test setup names it).
. "$(cd "$(dirname "$0")" && pwd)/../tests/mpi/mpi-launch.sh"
tool=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"; pc_ompi_cleanup' EXIT
unset PLANCOLL_WISDOM PLANCOLL_ALGORITHM MPIR_CVAR_NUM_CLIQUES MPIR_CVAR_CLIQUES_BY_BLOCK PLANCOLL_EMULATE_NODES
fail() { echo "FAIL: $*"; exit 1; }
# expect CODE CMD...: runs CMD, shows its output, fails unless it exits with CODE
expect() {
  local want=$1; shift
  "$@" >"$dir/out" 2>&1
  local got=$?
  cat "$dir/out"
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want"
}

expect 0 timeout 120 "${mpiexec_cmd[@]}" -n 3 "$tool" -o "$dir/a.wisdom" alltoall:64 allreduce:double:sum:100 \
  alltoallv:uniform:32 alltoallv:random:64:7 alltoall:int:8:inplace
grep -q 'alltoall:64 .* measured among' "$dir/out" || fail "no measured alltoall line"
[ "$(grep -c '^record ' "$dir/a.wisdom")" -eq 5 ] || fail "expected 5 records in a.wisdom"
grep -q '^record alltoall:P=3:nodes=1:ppn=3-3:block=32:inplace=1 ' "$dir/a.wisdom" || fail "no in-place record (8 ints)"
grep -q '^record allreduce:P=3:.*:count=100:elem=8:' "$dir/a.wisdom" || fail "no allreduce record"

expect 0 "$tool" show "$dir/a.wisdom"
grep -q '^records: 5$' "$dir/out" || fail "show: record count"
grep -q 'usable here yes' "$dir/out" || fail "show: usable"
grep -q -- '-> alltoallv.' "$dir/out" || fail "show: alltoallv decision"
expect 0 "$tool" check "$dir/a.wisdom"

sed 's/^topology .*/topology packages=9 cores=99 pus=99 numa=9/' "$dir/a.wisdom" > "$dir/stale.wisdom"
expect 1 "$tool" check "$dir/stale.wisdom"
grep -q 'another machine' "$dir/out" || fail "check: stale reason"
expect 0 "$tool" show "$dir/stale.wisdom"
grep -q 'usable here no: made on another machine' "$dir/out" || fail "show: stale verdict"
sed 's/^plancoll-wisdom 1$/plancoll-wisdom 2/' "$dir/a.wisdom" > "$dir/v2.wisdom"
expect 1 "$tool" check "$dir/v2.wisdom"
head -n 5 "$dir/a.wisdom" > "$dir/cut.wisdom"
expect 2 "$tool" check "$dir/cut.wisdom"
grep -q "line 6: the text ends without the closing 'end'" "$dir/out" || fail "check: truncation reason"
expect 2 "$tool" check "$dir/missing.wisdom"
expect 2 "$tool" show "$dir/cut.wisdom"

# planning from existing wisdom: a hit, and the output keeps what it was given
expect 0 timeout 120 "${mpiexec_cmd[@]}" -n 3 "$tool" -i "$dir/a.wisdom" -o "$dir/c.wisdom" alltoall:64
grep -q 'alltoall:64 .* wisdom among' "$dir/out" || fail "-i: the plan did not come from wisdom"
[ "$(grep '^record ' "$dir/a.wisdom")" = "$(grep '^record ' "$dir/c.wisdom")" ] || fail "-i/-o changed the records"
expect 1 timeout 120 "${mpiexec_cmd[@]}" -n 3 "$tool" -i "$dir/stale.wisdom" alltoall:64

# another job size, then the union
expect 0 timeout 120 "${mpiexec_cmd[@]}" -n 2 "$tool" -p -o "$dir/b.wisdom" allreduce:int:max:10
grep -q '^record allreduce:P=2:.* rigor=patient ' "$dir/b.wisdom" || fail "-p: no patient record"
expect 0 "$tool" merge -o "$dir/m.wisdom" "$dir/a.wisdom" "$dir/b.wisdom"
[ "$(grep -c '^record ' "$dir/m.wisdom")" -eq 6 ] || fail "merge: expected 6 records"
expect 0 "$tool" check "$dir/m.wisdom"
expect 0 "$tool" merge "$dir/m.wisdom" "$dir/a.wisdom"
[ "$(grep -c '^record ' "$dir/out")" -eq 6 ] || fail "merge to stdout: expected 6 records"
expect 1 "$tool" merge -o "$dir/x.wisdom" "$dir/a.wisdom" "$dir/stale.wisdom"
[ -e "$dir/x.wisdom" ] && fail "a refused merge wrote its output"
expect 2 "$tool" merge -o "$dir/x.wisdom" "$dir/a.wisdom" "$dir/cut.wisdom"

# merges into one file from several processes at once ("merge -o acc acc new", as a batch would): the output's
# lock makes them take turns, so every process's records are kept (unlocked, the last rename wins)
cp "$dir/a.wisdom" "$dir/acc.wisdom"
pids=()
for i in 0 1 2 3 4 5 6 7; do
  sed "s/^record \([a-z]*\):/record \1:job$i:/" "$dir/a.wisdom" > "$dir/x$i.wisdom"
done
for i in 0 1 2 3 4 5 6 7; do
  "$tool" merge -o "$dir/acc.wisdom" "$dir/acc.wisdom" "$dir/x$i.wisdom" > "$dir/merge$i.out" 2>&1 &
  pids+=($!)
done
for i in 0 1 2 3 4 5 6 7; do
  wait "${pids[$i]}" || { cat "$dir/merge$i.out"; fail "concurrent merge $i failed"; }
done
expect 0 "$tool" check "$dir/acc.wisdom"
got=$(grep -c '^record ' "$dir/acc.wisdom")
[ "$got" -eq 45 ] || fail "concurrent merges: $got records in the file, expected 5 + 8 x 5 = 45"

# usage errors (the same on every rank under mpiexec)
expect 3 "$tool" merge
expect 3 "$tool" check
expect 3 timeout 60 "${mpiexec_cmd[@]}" -n 2 "$tool" alltoall:lots
grep -q "signature 'alltoall:lots'" "$dir/out" || fail "bad signature message"
# (signatures are checked before MPI_Init: no mpiexec needed to see the rest refused)
expect 3 "$tool" allreduce:double:avg:4
expect 3 "$tool" scatter:4
expect 3 "$tool" -o "$dir/y.wisdom"
expect 0 "$tool" -h
echo "plancoll-wisdom tool test: PASS"
