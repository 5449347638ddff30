#!/usr/bin/env bash
# run-shm-limit-test.sh SIZE NP CLIQUES[:block] PROGRAM [ARGS...]
# Runs an MPI test program (through run-mpi-test.sh) in a private mount namespace whose /dev/shm is a tmpfs of
# SIZE (e.g. 48m), as in a container with a small /dev/shm. Needs root and unshare(1); otherwise it says why and
# exits 77, which Meson counts as a skipped test. The mount is private to the namespace: the host's /dev/shm is
# untouched.
set -u
size=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: a private /dev/shm needs root (unshare -m and mount); running as uid $(id -u)"
  exit 77
fi
if ! command -v unshare >/dev/null 2>&1; then
  echo "SKIP: unshare(1) is not installed (util-linux)"
  exit 77
fi
if ! unshare -m sh -c "mount -t tmpfs -o size=$size tmpfs /dev/shm" 2>/dev/null; then
  echo "SKIP: this system does not allow a private mount namespace with its own /dev/shm (unshare -m / mount failed)"
  exit 77
fi
exec unshare -m sh -c 'size=$1; shift; mount -t tmpfs -o "size=$size" tmpfs /dev/shm && exec "$@"' sh "$size" \
  "$here/run-mpi-test.sh" "$@"
