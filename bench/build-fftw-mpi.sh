#!/usr/bin/env bash
# Builds FFTW's MPI library (double precision) against MPICH into a local prefix, for the transpose benchmark's
# reference (fftw_mpi_plan_transpose).
#
# Why not Debian's libfftw3-mpi-dev: it is linked with Open MPI, and plancoll (and the benchmark) run on MPICH;
# one process cannot use both. So this script takes Debian's fftw3 source package (the same FFTW, with Debian's
# patches), configures it with --enable-mpi MPICC=mpicc, and installs libfftw3 + libfftw3_mpi (static) and the
# headers under the cache directory, outside git.
#
# usage: bench/build-fftw-mpi.sh [--force]
# environment:
#   FFTW_MPI_CACHE  where the source, build and prefix go (default: bench/.fftw-mpi of this checkout, gitignored)
# prints the prefix on its last line; bench/run-transpose-bench.sh and meson (-Dfftw_mpi_prefix=) use it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${FFTW_MPI_CACHE:-$here/.fftw-mpi}
prefix=$cache/prefix
force=0
[ "${1:-}" = --force ] && force=1

if [ $force -eq 0 ] && [ -f "$prefix/lib/libfftw3_mpi.a" ] && [ -f "$prefix/include/fftw3-mpi.h" ] \
    && [ -x "$prefix/bin/mpi-bench" ]; then
    echo "build-fftw-mpi: already built (--force rebuilds)"
    echo "$prefix"
    exit 0
fi

sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)

# apt-get source needs a deb-src entry. The existing Debian entry (deb822 format) gets deb-src added to its
# Types line, so the source comes from the same archive snapshot as the binaries.
sources=/etc/apt/sources.list.d/debian.sources
if ! apt-get source --print-uris fftw3 >/dev/null 2>&1; then
    if [ -f "$sources" ] && grep -q '^Types: deb$' "$sources"; then
        echo "build-fftw-mpi: adding deb-src to $sources"
        "${sudo_cmd[@]}" sed -i 's/^Types: deb$/Types: deb deb-src/' "$sources"
    elif [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list && ! grep -q '^deb-src ' /etc/apt/sources.list; then
        echo "build-fftw-mpi: adding deb-src lines to /etc/apt/sources.list"
        grep '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' | "${sudo_cmd[@]}" tee -a /etc/apt/sources.list >/dev/null
    fi
    "${sudo_cmd[@]}" apt-get update -qq
fi

# Build dependencies: only what the double-precision C library with MPI needs (a C compiler, make, MPICH's
# mpicc, dpkg-source to unpack). `apt-get build-dep fftw3` would pull Open MPI, gfortran and the docs toolchain,
# none of which this build uses.
need=(build-essential dpkg-dev libmpich-dev mpich)
missing=()
for p in "${need[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "build-fftw-mpi: installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

mkdir -p "$cache/src"
cd "$cache/src"
srcdir=$(find . -maxdepth 1 -type d -name 'fftw3-*' | sort | tail -n 1)
if [ -z "$srcdir" ]; then
    echo "build-fftw-mpi: fetching Debian's fftw3 source package"
    apt-get source -qq fftw3
    srcdir=$(find . -maxdepth 1 -type d -name 'fftw3-*' | sort | tail -n 1)
fi
[ -n "$srcdir" ] || { echo "build-fftw-mpi: no fftw3 source directory after apt-get source" >&2; exit 1; }
srcdir=$(cd "$srcdir" && pwd)

build=$cache/build-double-mpich
simd=()
[ "$(uname -m)" = x86_64 ] && simd=(--enable-sse2 --enable-avx)
if [ $force -eq 1 ] || ! grep -qs '^#define HAVE_MPI 1' "$build/config.h"; then
    rm -rf "$build"
    mkdir -p "$build"
    cd "$build"
    echo "build-fftw-mpi: configuring in $build"
    # Double precision is configure's default. SIMD codelets as Debian's own build enables them on amd64.
    "$srcdir/configure" --prefix="$prefix" --enable-mpi MPICC=mpicc CC=gcc --disable-fortran --disable-shared \
        --enable-static --with-pic "${simd[@]}" >configure.log 2>&1 || { tail -n 30 configure.log >&2; exit 1; }
    grep -q '^#define HAVE_MPI 1' config.h || { echo "build-fftw-mpi: configure did not enable MPI" >&2; exit 1; }
fi
cd "$build"
jobs=$(nproc 2>/dev/null || echo 2)
echo "build-fftw-mpi: building libfftw3, libfftw3_mpi and mpi-bench (make -j$jobs)"
# Only the libraries: the subdirectories libfftw3.la is made of, then it, then mpi/libfftw3_mpi.la; then FFTW's
# own MPI test program mpi/mpi-bench (libbench2.a + tests/fftw-bench.c + mpi/mpi-bench.c) for the drop-in
# layer's client test; FFTW's serial tests, bench program, tools and docs are not built.
: >make.log
for d in support kernel simd-support dft rdft reodft api; do
    make -j"$jobs" -C "$d" >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
done
make -j"$jobs" libfftw3.la >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
make -j"$jobs" -C mpi libfftw3_mpi.la >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
make -j"$jobs" -C libbench2 libbench2.a >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
make -j"$jobs" -C mpi mpi-bench >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
make install-libLTLIBRARIES >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
make -C mpi install-libLTLIBRARIES >>make.log 2>&1 || { tail -n 30 make.log >&2; exit 1; }
mkdir -p "$prefix/include"
cp "$srcdir/api/fftw3.h" "$srcdir/mpi/fftw3-mpi.h" "$prefix/include/"
[ -f "$prefix/lib/libfftw3_mpi.a" ] || { echo "build-fftw-mpi: libfftw3_mpi.a was not installed" >&2; exit 1; }
# mpi-bench is a noinst program: copied, not installed. FFTW is static in it, MPI is not: the MPI calls of
# libfftw3_mpi.a are undefined symbols resolved from libmpich.so at run time, so an LD_PRELOADed PMPI layer
# (plancoll-run) sees them. Checked here, since a static MPI would make the drop-in runs silently measure nothing.
mkdir -p "$prefix/bin"
cp mpi/mpi-bench "$prefix/bin/mpi-bench"
for sym in MPI_Alltoall MPI_Alltoallv MPI_Allreduce; do
    nm -D --undefined-only "$prefix/bin/mpi-bench" | grep -qw "$sym" \
        || { echo "build-fftw-mpi: mpi-bench does not import $sym dynamically" >&2; exit 1; }
done
ldd "$prefix/bin/mpi-bench" | grep -q 'libmpi' \
    || { echo "build-fftw-mpi: mpi-bench is not linked against a shared MPI library" >&2; exit 1; }
echo "build-fftw-mpi: installed FFTW $(basename "$srcdir" | sed 's/^fftw3-//') with MPI (MPICH) in"
echo "$prefix"
