#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test under both MPIs:
#   build/            MPICH 4.0.2: the unit tests, the MPI tests at P in {1,2,3,4,5,7,8} and on 2-3 emulated nodes
#                     (MPICH's cliques, round robin and in blocks);
#   build-openmpi/    Open MPI 4.1.4: the lean matrix (meson option test_matrix, lean by default there): every MPI
#                     program with every algorithm forced at 1, 2, 3, 5 ranks on one node, 4 on 2 nodes, 5 on 2
#                     (3+2) and 7 on 3 (3+2+2), nodes emulated by PLANCOLL_EMULATE_NODES over TCP, plus the drop-in
#                     layer, the examples and the layering check of its objects (the unit tests and the fuzzer do
#                     not depend on the MPI: run once);
#   build-install/    both MPIs built with -Dflavour_suffix=true and installed in one prefix (tests/install/one-prefix.sh);
#   build-sanitize/   MPICH only: the unit tests and every MPI program at 3 ranks and at 5 ranks on 2 nodes again
#                     under AddressSanitizer and UndefinedBehaviorSanitizer.
#   build-smpi/       SimGrid SMPI (meson/smpi.ini, docs/smpi.md): the quick SMPI tests (suite smpi-quick), plancoll's
#                     MPI programs on simulated nodes of uneven sizes.
# PLANCOLL_SKIP_OPENMPI=1, PLANCOLL_SKIP_SANITIZERS=1 and PLANCOLL_SKIP_SMPI=1 skip those passes. Ends with one line "N passed, N failed"
# over everything it ran. Extra arguments go to `meson test` (e.g. --suite unit).
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh || exit 1

# configure DIR [meson options...]: set up once, reconfigure when the build files change.
configure() {
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null || return 1
  else
    meson setup "$dir" "$@" >/dev/null || return 1
  fi
  ninja -C "$dir" || return 1
}

# count DIR: prints "passed failed" from meson's machine-readable log of the last run, and appends each failed
# test's name, result and last lines of output to $failures, repeated at the very end of the run (CI keeps only
# the tail of a long log, and a flaky failure must be recognisable from it).
failures=$(mktemp)
trap 'rm -f "$failures"' EXIT
count() {
  python3 - "$1/meson-logs/testlog.json" "$1" "$failures" <<'PY'
import json, sys
passed = failed = 0
try:
    with open(sys.argv[3], "a") as out:
        for line in open(sys.argv[1]):
            r = json.loads(line)
            if r.get("result") in ("OK", "EXPECTEDFAIL", "SKIP"):
                passed += 1
                continue
            failed += 1
            text = (r.get("stdout") or "") + (r.get("stderr") or "")
            tail = "\n".join("    " + l for l in text.strip().splitlines()[-12:])
            out.write(f"FAILED {sys.argv[2]}: {r.get('name')} ({r.get('result')}, {r.get('duration', 0):.1f} s)\n{tail}\n")
except FileNotFoundError:
    pass
print(passed, failed)
PY
}

total_pass=0; total_fail=0; status=0
run_suite() {
  local dir=$1; shift
  if ! configure "$dir" "${config_args[@]}"; then
    echo "build of $dir failed"; total_fail=$((total_fail + 1)); status=1; return
  fi
  rm -f "$dir/meson-logs/testlog.json"
  meson test -C "$dir" --print-errorlogs --num-processes 2 "$@" || status=1
  read -r p f < <(count "$dir")
  total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
}

start=$(date +%s)
config_args=(-Dmpi=mpich)
run_suite build "$@"
mpich_end=$(date +%s)
if [ "${PLANCOLL_SKIP_OPENMPI:-0}" != "1" ]; then
  config_args=(-Dmpi=openmpi)
  run_suite build-openmpi --no-suite unit --no-suite fuzz "$@"
fi
# Both MPIs installed in one prefix with Debian's suffixes (tests/install/one-prefix.sh, ~1 min: builds only what
# is installed); only for the whole suite (no extra arguments) and when Open MPI's pass runs.
if [ "${PLANCOLL_SKIP_OPENMPI:-0}" != "1" ] && [ $# -eq 0 ]; then
  if tests/install/one-prefix.sh build-install >build-install.log 2>&1; then
    total_pass=$((total_pass + 1))
  else
    total_fail=$((total_fail + 1)); status=1
    { echo "FAILED build-install: one-prefix"; tail -12 build-install.log | sed 's/^/    /'; } >>"$failures"
  fi
  tail -1 build-install.log
fi
ompi_end=$(date +%s)
if [ "${PLANCOLL_SKIP_SANITIZERS:-0}" != "1" ]; then
  # MPICH and UCX keep allocations until exit that LeakSanitizer would report as plancoll's: leak checking
  # is left to the unit tests (no MPI) and to valgrind; ASan still checks every access.
  export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  config_args=(-Dmpi=mpich -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug)
  run_suite build-sanitize --suite unit --suite sanitize "$@"
fi
san_end=$(date +%s)
if [ "${PLANCOLL_SKIP_SMPI:-0}" != "1" ]; then
  # one simulation at a time (a simulation runs all its ranks in one process)
  config_args=(--cross-file meson/smpi.ini)
  unset ASAN_OPTIONS UBSAN_OPTIONS
  run_suite build-smpi --suite smpi-quick --num-processes 1 "$@"
fi
echo "test wall time: $(( $(date +%s) - start )) s (MPICH $(( mpich_end - start )) s, Open MPI and the one-prefix install $(( ompi_end - mpich_end )) s, sanitizers $(( san_end - ompi_end )) s, SMPI $(( $(date +%s) - san_end )) s)"
cat "$failures"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ] && [ $status -eq 0 ]
