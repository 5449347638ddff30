#!/usr/bin/env python3
"""Checks that the reduction loops of src/exec/reduce.c come out vectorised with the flags the build compiles
that file with (taken from compile_commands.json, so the -O level and the per-file vectoriser flags are the
build's own). GCC writes, per function, whether a loop was vectorised into a vect dump; every loop must be,
except the 64-bit compare and multiply loops that plain x86-64 (SSE2) has no vector instructions for.

usage: check_vectorized.py BUILD_DIR/compile_commands.json
Exit 0: every required loop vectorised. 1: some were not (listed). 77 (meson's skip): no optimisation or
not GCC. reduce.c missing from the database is a failure (the file moved and this script was not told)."""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# Loops of reduce.c whose element operation has no SSE2 vector form (64-bit compares, 64-bit multiply):
# vectorised only on wider targets, so reported but not required. Likewise long double (real and complex),
# which is x87's 80-bit format on x86-64: no vector unit computes in it; and the complex products, C's operator,
# which calls a run-time routine to recover infinities (reduce.c).
OPTIONAL = re.compile(r"^((max|min|prod|land|lor|lxor)_[iu]64|(sum|prod|max|min)_[fc]80|prod_c(32|64))(_3d?)?$")
# Names that must be present, so an empty or unreadable dump cannot pass.
KEY_LOOPS = ["sum_f64", "sum_f64_3", "sum_f64_3d", "sum_f32", "max_f64", "min_f32", "min_f64_3", "max_f32_3d", "prod_f64",
             "sum_u32", "band_u64", "bxor_u8", "land_i32", "sum_c64", "sum_c32_3", "prod_fc64", "prod_fc32_3d"]


def reduce_command(db_path):
    with open(db_path) as f:
        db = json.load(f)
    for e in db:
        if e["file"].endswith(os.path.join("src", "exec", "reduce.c")):
            return e
    return None


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    entry = reduce_command(sys.argv[1])
    if entry is None:
        # The build always compiles it: missing means this script looks in the wrong place (a file moved).
        print("FAIL: src/exec/reduce.c is not in the compilation database")
        return 1
    args = entry.get("arguments") or shlex.split(entry["command"])
    levels = [a for a in args if re.fullmatch(r"-O.*", a)]
    level = levels[-1] if levels else "-O0"
    if level in ("-O0", "-Og"):
        print(f"build compiles reduce.c with {level}: no vectorisation to check, skipped")
        return 77
    compiler = args[0]
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    if "gcc" not in version.lower() and "free software foundation" not in version.lower():
        print(f"{compiler} is not GCC: the vect dump is GCC's, skipped")
        return 77
    # The build's command without its output and dependency-file options.
    keep, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MQ", "-MF", "-MT"):
            skip = True
            continue
        if a in ("-MD", "-MMD") or a.startswith("-fdiagnostics-color"):
            continue
        keep.append(a)
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "reduce.vect")
        cmd = [compiler] + keep + ["-o", os.path.join(tmp, "reduce.o"), f"-fdump-tree-vect-optimized={dump}"]
        r = subprocess.run(cmd, cwd=entry["directory"], capture_output=True, text=True)
        if r.returncode != 0:
            print("compiling reduce.c failed:\n" + " ".join(cmd) + "\n" + r.stderr)
            return 1
        vectorised, function = {}, None
        with open(dump) as f:
            for line in f:
                m = re.match(r";; Function (\S+)", line)
                if m:
                    function = m.group(1)
                    vectorised.setdefault(function, False)
                elif function and "loop vectorized" in line:
                    vectorised[function] = True
    loops = {k: v for k, v in vectorised.items() if re.match(r"^(sum|prod|max|min|band|bor|bxor|land|lor|lxor)_", k)}
    missing_keys = [k for k in KEY_LOOPS if k not in loops]
    required_scalar = sorted(k for k, v in loops.items() if not v and not OPTIONAL.match(k))
    optional_scalar = sorted(k for k, v in loops.items() if not v and OPTIONAL.match(k))
    print(f"reduce.c at {level} ({' '.join(a for a in keep if a.startswith('-f') and 'vect' in a) or 'no extra flags'}): "
          f"{sum(loops.values())} of {len(loops)} reduction loops vectorised")
    if optional_scalar:
        print("scalar, allowed (no SSE2 vector form): " + " ".join(optional_scalar))
    if missing_keys:
        print("FAIL: loops not found in the dump: " + " ".join(missing_keys))
    if required_scalar:
        print("FAIL: not vectorised: " + " ".join(required_scalar))
    return 1 if missing_keys or required_scalar else 0


if __name__ == "__main__":
    sys.exit(main())
