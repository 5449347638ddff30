#!/usr/bin/env bash
# run-fuzz.sh SOURCE_ROOT BUILD_DIR [SECONDS]: builds the wisdom parser's libFuzzer target with clang
# (-fsanitize=fuzzer,address,undefined; the main build uses gcc, hence a script), checks that every seed in
# tests/fuzz/corpus is what its name says (valid-* parse, invalid-* are rejected), then fuzzes for a bounded
# time (default 20 s) with leak detection on. New inputs go to a scratch directory, crashes to BUILD_DIR.
set -euo pipefail
src=$1; build=$2; seconds=${3:-20}
cc=$(command -v clang || command -v clang-14 || true)
[ -n "$cc" ] || { echo "clang not found: scripts/install-deps.sh installs it (the fuzz target needs libFuzzer)"; exit 1; }
mkdir -p "$build"
bin=$build/fuzz_wisdom
sources=("$src/tests/fuzz/fuzz_wisdom.c" "$src/src/planner/wisdom_text.c" "$src/src/planner/wisdom.c"
         "$src/src/base/model.c")
headers=("$src/src/planner/wisdom_text.h" "$src/src/planner/planner.h" "$src/src/base/model.h"
         "$src/src/base/algorithm.h" "$src/src/base/problem.h" "$src/include/plancoll.h"
         "$src/include/plancoll_codes.h" "$0")
# rebuilt only when a source or header is newer than the binary (clang with sanitizers takes seconds)
stale=0
[ -x "$bin" ] || stale=1
for f in "${sources[@]}" "${headers[@]}"; do [ "$f" -nt "$bin" ] && stale=1; done
[ $stale -eq 0 ] || "$cc" -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Wall -Wextra -Werror -I"$src/include" -I"$src/src" $(pkg-config --cflags mpich) \
  "${sources[@]}" -lm -o "$bin"
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
