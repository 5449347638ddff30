#!/bin/sh
# probe-fortran.sh NM FC LINK-ARGS...
#
# Which Fortran bindings of the MPI miss the drop-in layer's C MPI_* definitions, read from the libraries the
# build links Fortran programs with (LINK-ARGS: the MPI Fortran dependency's -L/-l arguments or library paths;
# -lNAME is looked for in the -L directories, then where FC would find it). Prints one line per finding, for
# src/dropin/meson.build:
#   bypass KIND SYMBOL   the Fortran entry point SYMBOL (KIND: alltoall, alltoallv, allreduce) is defined by a
#                        library that does not call the C function (MPI_Alltoall, ...): Fortran calls reach MPI
#                        without passing the layer's C symbols, so the layer must define SYMBOL itself
#   f08 NAME SYMBOL      the mpi_f08 entry point SYMBOL (mpi_NAME_f08_) of a call without buffers (NAME: start,
#                        wait, init, comm_free, ...) is defined by a library whose code for it calls PMPI_<Name>
#                        and not MPI_<Name> (objdump -d): the layer must define SYMBOL itself (fortran_f08.c).
#                        Not printed when objdump is missing.
#   in_place SYMBOL      a data symbol whose address is the Fortran MPI_IN_PLACE
#   bottom SYMBOL        the same for MPI_BOTTOM
# MPICH 4.0.2: libmpichfort's mpi_alltoall_ calls MPI_Alltoall: no bypass line. Open MPI 4.1: libmpi_mpifh's
# mpi_alltoall_ (and libmpi_usempif08's mpi_alltoall_f08_) call PMPI_Alltoall: bypass lines, and libmpi defines
# mpi_fortran_in_place_ / mpi_fortran_bottom_. Nothing is inferred from the MPI's name.
set -u
nm=$1 fc=$2
shift 2
dirs=""
libs=""
for a in "$@"; do
  case "$a" in
    -L*) dirs="$dirs ${a#-L}" ;;
    -l*)
      n=${a#-l} f=""
      for d in $dirs; do
        if [ -e "$d/lib$n.so" ]; then f=$d/lib$n.so; break; fi
      done
      if [ -z "$f" ]; then
        p=$("$fc" -print-file-name="lib$n.so" 2>/dev/null)
        case "$p" in /*) [ -e "$p" ] && f=$p ;; esac
      fi
      [ -n "$f" ] && libs="$libs $(readlink -f "$f")"
      ;;
    /*.so*) [ -e "$a" ] && libs="$libs $(readlink -f "$a")" ;;
  esac
done

# Each library's dynamic symbols read once: "TYPE NAME" lines, U for undefined ones.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
i=0
for l in $libs; do
  i=$((i + 1))
  "$nm" -D "$l" 2>/dev/null | awk 'NF == 3 { print $2, $3 } NF == 2 { print $1, $2 }' >"$tmp/$i"
done
# which LIB: the index of LIB in $libs; defines N SYMBOL (text or weak), data N SYMBOL, calls N SYMBOL (undefined)
defines() { grep -qE "^[TWtw] $2\$" "$tmp/$1"; }
data() { grep -qE "^[BDCVbdv] $2\$" "$tmp/$1"; }
calls() { grep -qE "^U $2\$" "$tmp/$1"; }

for kind in alltoall alltoallv allreduce; do
  cname=MPI_$(printf '%s' "$kind" | cut -c1 | tr a-z A-Z)$(printf '%s' "$kind" | cut -c2-)
  upper=MPI_$(printf '%s' "$kind" | tr a-z A-Z)
  for sym in "mpi_${kind}_" "mpi_${kind}" "mpi_${kind}__" "$upper" "mpi_${kind}_f08_"; do
    i=0
    for l in $libs; do
      i=$((i + 1))
      if defines "$i" "$sym"; then
        calls "$i" "$cname" || echo "bypass $kind $sym"
        break
      fi
    done
  done
done
# mpi_f08's calls without buffers: which C function the entry point's own code calls (a PLT call by name).
objdump=$(command -v objdump 2>/dev/null || true)
if [ -n "$objdump" ]; then
  for pair in init:Init init_thread:Init_thread finalize:Finalize comm_free:Comm_free \
      comm_disconnect:Comm_disconnect start:Start startall:Startall wait:Wait test:Test waitall:Waitall \
      testall:Testall waitany:Waitany testany:Testany waitsome:Waitsome testsome:Testsome \
      request_free:Request_free request_get_status:Request_get_status cancel:Cancel probe:Probe mprobe:Mprobe \
      query_thread:Query_thread; do
    name=${pair%%:*} cname=MPI_${pair#*:}
    sym=mpi_${name}_f08_
    i=0
    for l in $libs; do
      i=$((i + 1))
      if defines "$i" "$sym"; then
        code=$("$objdump" -d --disassemble="$sym" "$l" 2>/dev/null)
        if printf '%s\n' "$code" | grep -q "<P$cname@plt>" && ! printf '%s\n' "$code" | grep -q "<$cname@plt>"; then
          echo "f08 $name $sym"
        fi
        break
      fi
    done
  done
fi
for pair in in_place:mpi_fortran_in_place bottom:mpi_fortran_bottom; do
  what=${pair%%:*} base=${pair#*:}
  for sym in "${base}_" "$base" "${base}__" "$(printf '%s' "$base" | tr a-z A-Z)"; do
    i=0
    for l in $libs; do
      i=$((i + 1))
      if data "$i" "$sym"; then echo "$what $sym"; break; fi
    done
  done
done
exit 0
