#!/usr/bin/env bash
# Both MPIs' builds in one prefix, Debian style (meson option flavour_suffix; README "Building and testing"):
#   1. configures and builds what is installed, for MPICH and for Open MPI, with -Dflavour_suffix=true and one
#      prefix, and installs both there;
#   2. no file of one install is overwritten by the other with other contents, and the only paths both install are
#      the MPI-independent data files (the wisdom format, the prediction plot script);
#   3. for each MPI, a C program (consumer.c) built with that MPI's mpicc and `pkg-config plancoll-<mpi>` alone runs
#      at 2 ranks under that MPI's mpiexec and loads that MPI's libplancoll_<mpi>; a Fortran program (consumer.f90)
#      built with `pkg-config plancoll-fortran-<mpi>` runs; the tools carry the suffix and run;
#   4. Python: with PYTHONPATH at <libdir>/plancoll/openmpi/python (mpi4py is Debian's Open MPI build), the package
#      loads libplancoll_openmpi from the prefix and runs an allreduce at 2 ranks.
# Usage: one-prefix.sh WORKDIR (reused between runs: the builds reconfigure; the prefix is made anew). Prints
# "one-prefix: PASS" or "one-prefix: FAIL (N)" and exits 0 or 1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
work=${1:?usage: one-prefix.sh WORKDIR}
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=$work/prefix
failures=0
fail() { echo "one-prefix: FAIL: $*"; failures=$((failures + 1)); }

rm -rf "$prefix"
declare -A lists
for mpi in mpich openmpi; do
  dir=$work/build-$mpi
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$src" -Dmpi=$mpi -Dflavour_suffix=true --prefix="$prefix" >/dev/null || { fail "$mpi: configure"; continue; }
  else
    meson setup "$dir" "$src" -Dmpi=$mpi -Dflavour_suffix=true --prefix="$prefix" -Dbuildtype=release >/dev/null || { fail "$mpi: configure"; continue; }
  fi
  # only the installed targets (the tests, examples and benchmarks that are not installed are not needed here)
  targets=$(meson introspect --targets "$dir" | python3 -c '
import json, os, sys
build = sys.argv[1]
for t in json.load(sys.stdin):
    if t.get("installed"):
        for f in t["filename"]:
            print(os.path.relpath(f, build))' "$dir")
  # shellcheck disable=SC2086
  ninja -C "$dir" $targets >"$work/build-$mpi.log" 2>&1 || { fail "$mpi: build (log $work/build-$mpi.log)"; continue; }
  before=$(mktemp)
  (cd "$prefix" 2>/dev/null && find . -type f -exec sha256sum {} + | sort -k2) >"$before" || true
  meson install -C "$dir" --no-rebuild >"$work/install-$mpi.log" 2>&1 || { fail "$mpi: install"; continue; }
  lists[$mpi]=$(meson introspect --installed "$dir" | python3 -c '
import json, sys
print("\n".join(sorted(set(json.load(sys.stdin).values()))))')
  # nothing the earlier install wrote changed under this one
  while read -r sum path; do
    now=$(sha256sum "$prefix/$path" 2>/dev/null | cut -d' ' -f1)
    [ "$now" = "$sum" ] || fail "$mpi's install changed ${path#./}"
  done <"$before"
  rm -f "$before"
done
[ "$failures" -eq 0 ] || { echo "one-prefix: FAIL ($failures)"; exit 1; }

# paths both install: only the MPI-independent data files
shared=$(comm -12 <(echo "${lists[mpich]}") <(echo "${lists[openmpi]}"))
for path in $shared; do
  case "$path" in
    "$prefix"/share/doc/plancoll/FORMAT.md | "$prefix"/share/plancoll/plot-predict.py) ;;
    *) fail "both MPIs install $path" ;;
  esac
done
[ "$(echo "${lists[mpich]}" | grep -c .)" -gt 20 ] || fail "the MPICH install lists too few files"

libdir=$(meson introspect --buildoptions "$work/build-mpich" | python3 -c '
import json, sys
print({o["name"]: o["value"] for o in json.load(sys.stdin)}["libdir"])')
export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
for mpi in mpich openmpi; do
  launch=(mpiexec.$mpi -n 2)
  [ $mpi = openmpi ] && launch+=(--oversubscribe --allow-run-as-root --mca mpi_yield_when_idle 1)
  [ $mpi = openmpi ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  [ $mpi = mpich ] && export UCX_TLS=sm,self
  exe=$work/consumer-$mpi
  # shellcheck disable=SC2046
  if ! mpicc.$mpi -o "$exe" "$here/consumer.c" $(pkg-config --cflags --libs plancoll-$mpi) 2>"$work/cc-$mpi.log"; then
    fail "$mpi: consumer.c does not build from pkg-config plancoll-$mpi ($(head -c 300 "$work/cc-$mpi.log"))"
    continue
  fi
  loaded=$(LD_LIBRARY_PATH=$prefix/$libdir ldd "$exe" | awk '/libplancoll/ {print $1 " " $3}')
  [ "$loaded" = "libplancoll_$mpi.so.0 $prefix/$libdir/libplancoll_$mpi.so.0" ] || fail "$mpi: consumer loads '$loaded'"
  out=$(LD_LIBRARY_PATH=$prefix/$libdir timeout 60 "${launch[@]}" "$exe" 2>&1)
  echo "$out" | grep -q "consumer: PASS on 2 ranks" || fail "$mpi: consumer run: $(echo "$out" | tail -3)"
  case $mpi in mpich) want="MPICH" ;; openmpi) want="Open MPI" ;; esac
  echo "$out" | grep -q "consumer: PASS on 2 ranks, $want" || fail "$mpi: consumer ran on another MPI: $(echo "$out" | tail -1)"

  if pkg-config --exists plancoll-fortran-$mpi; then
    fexe=$work/consumer-f-$mpi
    # shellcheck disable=SC2046
    if mpifort.$mpi -o "$fexe" -J "$work" "$here/consumer.f90" $(pkg-config --cflags --libs plancoll-fortran-$mpi) \
        2>"$work/fc-$mpi.log"; then
      out=$(LD_LIBRARY_PATH=$prefix/$libdir timeout 60 "${launch[@]:0:1}" -n 1 "${launch[@]:3}" "$fexe" 2>&1)
      echo "$out" | grep -q "consumer_f: PASS" || fail "$mpi: Fortran consumer run: $(echo "$out" | tail -3)"
    else
      fail "$mpi: consumer.f90 does not build from pkg-config plancoll-fortran-$mpi ($(head -c 300 "$work/fc-$mpi.log"))"
    fi
  else
    fail "$mpi: no plancoll-fortran-$mpi.pc installed"
  fi

  for tool in plancoll-wisdom plancoll-predict plancoll-bench plancoll-run; do
    [ -x "$prefix/bin/$tool.$mpi" ] || fail "$mpi: $tool.$mpi not installed"
  done
  LD_LIBRARY_PATH=$prefix/$libdir "$prefix/bin/plancoll-wisdom.$mpi" --help >/dev/null 2>&1 ||
    fail "$mpi: plancoll-wisdom.$mpi --help"
  grep -q "$prefix/$libdir/libplancoll-mpi_$mpi.so" "$prefix/bin/plancoll-run.$mpi" ||
    fail "$mpi: plancoll-run.$mpi does not preload libplancoll-mpi_$mpi.so"
  unset UCX_TLS
done

# Python: Debian's mpi4py is built on Open MPI
pydir=$prefix/$libdir/plancoll/openmpi/python
if [ -f "$pydir/plancoll/__init__.py" ] && /usr/bin/python3 -c 'import mpi4py, numpy' 2>/dev/null; then
  out=$(PYTHONPATH=$pydir timeout 60 mpiexec.openmpi -n 2 --oversubscribe --allow-run-as-root \
        --mca mpi_yield_when_idle 1 /usr/bin/python3 -c '
import numpy as np
from mpi4py import MPI
import plancoll, plancoll._config as c
x = np.arange(5, dtype=np.float64) + MPI.COMM_WORLD.rank
y = np.empty_like(x)
with plancoll.plan_allreduce(x, y) as p:
    p.execute()
ok = np.array_equal(y, 2 * np.arange(5) + 1) and c.LIBRARY.endswith("libplancoll_openmpi.so.0.1.0") and c.LIBRARY.startswith(__import__("sys").argv[1])
ok = MPI.COMM_WORLD.allreduce(int(ok), op=MPI.MIN)
if MPI.COMM_WORLD.rank == 0:
    print("python:", "PASS" if ok else "FAIL", c.LIBRARY)' "$prefix" 2>&1)
  echo "$out" | grep -q "python: PASS" || fail "python: $(echo "$out" | tail -3)"
else
  fail "the Open MPI Python package is not in $pydir (or mpi4py/numpy missing)"
fi

if [ "$failures" -eq 0 ]; then echo "one-prefix: PASS"; exit 0; fi
echo "one-prefix: FAIL ($failures)"
exit 1
