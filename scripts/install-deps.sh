#!/usr/bin/env bash
# Installs the Debian packages plancoll needs, only those missing; does nothing when all are present.
set -euo pipefail
# libfftw3-dev: the fft2d example (examples/fft2d) needs FFTW's serial library for its 1D transforms and its
# reference 2D transform; meson builds the example only when fftw3 is found, and installing it here makes CI
# build and run it.
packages=(mpich libmpich-dev libhwloc-dev libnuma-dev libcmocka-dev meson ninja-build pkg-config libfftw3-dev)
# gfortran: the drop-in layer's Fortran test (tests/dropin/test_dropin_fortran*.f90, built with MPICH's Fortran
# library) proves that Fortran programs' collectives reach the layer; meson builds it only when a Fortran compiler
# is found, and installing it here makes CI build and run it.
packages+=(gfortran)
# libopenmpi-dev openmpi-bin: plancoll is built and tested against Open MPI 4.1.4 as well as MPICH
# (scripts/test.sh's build-openmpi pass, meson -Dmpi=openmpi); both MPIs live side by side, every tool named by
# flavour (mpicc.openmpi, mpiexec.openmpi).
packages+=(libopenmpi-dev openmpi-bin)
# python3-mpi4py python3-numpy python3-pytest: the Python binding and its tests (mpi4py is Debian's, built on Open
# MPI; Debian's /usr/bin/python3 has them, a pyenv python3 on PATH does not).
packages+=(python3-mpi4py python3-numpy python3-pytest)
# python3-matplotlib: predict/plot-predict.py's PNG plots of plancoll-predict's predictions.
packages+=(python3-matplotlib)
# libsimgrid-dev: SimGrid SMPI 3.32 (it ships smpicc and smpirun; Debian's package `simgrid` has no candidate in this
# machine's sources and is not needed), plancoll's build and tests on simulated clusters (scripts/test.sh's build-smpi
# pass, meson/smpi.ini, docs/smpi.md).
packages+=(libsimgrid-dev)
# clang: the wisdom parser's libFuzzer target (tests/fuzz) needs clang's -fsanitize=fuzzer; the library builds with gcc.
packages+=(clang)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
