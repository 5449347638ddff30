#!/usr/bin/env bash
# run-fuzz.sh SOURCE_ROOT BUILD_DIR SECONDS CORE_SOURCE...: builds the wisdom parser's libFuzzer target with clang
# (-fsanitize=fuzzer,address,undefined; the main build uses gcc, hence a script) from tests/fuzz/fuzz_wisdom.c and
# the MPI-free core, CORE_SOURCE... (meson passes plancoll_pure_sources, so the list lives in one place; compiled
# without MPI on the include path, as the library compiles it). Then checks that every seed in tests/fuzz/corpus is
# what its name says (valid-* parse, invalid-* are rejected), and fuzzes for SECONDS (the suite gives 8) with leak
# detection on. New inputs go to a scratch directory, crashes to BUILD_DIR.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 SOURCE_ROOT BUILD_DIR SECONDS CORE_SOURCE..." >&2; exit 2; }
src=$1; build=$2; seconds=$3
shift 3
cc=$(command -v clang || command -v clang-14 || true)
[ -n "$cc" ] || { echo "clang not found: scripts/install-deps.sh installs it (the fuzz target needs libFuzzer)"; exit 1; }
mkdir -p "$build"
bin=$build/fuzz_wisdom
sources=("$src/tests/fuzz/fuzz_wisdom.c")
for f in "$@"; do
    case $f in /*) sources+=("$f") ;; *) sources+=("$src/$f") ;; esac
done
# Headers that can change what the sources compile to: the public ones, the MPI-free layers', and those next to
# each source (the schedules' and the local transpose's).
dirs=("$src/include" "$src/src/base" "$src/src/planner")
for f in "${sources[@]}"; do dirs+=("$(dirname "$f")"); done
mapfile -t headers < <(find "${dirs[@]}" -maxdepth 1 -name '*.h' | sort -u)
headers+=("$0")
# rebuilt only when a source or header is newer than the binary, or the list of sources changed (clang with
# sanitizers takes seconds)
stamp=$build/fuzz_wisdom.sources
stale=0
[ -x "$bin" ] || stale=1
[ "$(printf '%s\n' "${sources[@]}")" = "$(cat "$stamp" 2>/dev/null)" ] || stale=1
for f in "${sources[@]}" "${headers[@]}"; do [ "$f" -nt "$bin" ] && stale=1; done
if [ $stale -ne 0 ]; then
    rm -f "$bin" "$stamp"
    "$cc" -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -Wall -Wextra -Werror -I"$src/include" -I"$src/src" "${sources[@]}" -lm -o "$bin"
    printf '%s\n' "${sources[@]}" > "$stamp"
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
corpus=$src/tests/fuzz/corpus
FUZZ_EXPECT=valid "$bin" "$corpus"/valid-* 2>&1 | tail -n 2
FUZZ_EXPECT=invalid "$bin" "$corpus"/invalid-* 2>&1 | tail -n 2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$build/fuzz-artifacts"
"$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
  -dict="$src/tests/fuzz/wisdom.dict" -artifact_prefix="$build/fuzz-artifacts/" "$scratch" "$corpus" 2>&1 | tail -n 25
echo "fuzz-wisdom: PASS"
