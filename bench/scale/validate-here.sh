#!/usr/bin/env bash
# Validation on this machine (issue 20, part 4; docs/scale-validate.md): for one benchmark configuration, every
# plancoll algorithm at the benchmark sizes measured (plancoll-bench under mpiexec), simulated (the same
# plancoll-bench built with smpicc, under smpirun on the platform machines/make-platform.py makes from
# machines/this-<config>.machine) and predicted (plancoll-predict with the calibration's wisdom and with the machine
# file). Writes bench/results/scale/validate-<config>/{measured,simulated}/*.json, the predictions, the commands run
# (commands.txt), and bench/results/scale/validate-<config>.json with its table (.txt) by bench/scale/compare.py.
#
# usage: bench/scale/validate-here.sh CONFIG [STAGE...]
#   CONFIG   2n1p-tcp | 2n2p-tcp | 2n4p-tcp | 3n6p-tcp (needs machines/this-CONFIG.machine and
#            bench/results/scale/calibration-CONFIG.wisdom)
#   STAGE    predict measure simulate simulate-mpi table (default: all five, in that order); simulate-mpi runs
#            MPI's own collectives alone (bench/scale/mpi-coll-sim.c, built here with smpicc) on the same platform:
#            the mpi:blocking rows' simulated column when plancoll-bench itself does not run under SMPI
# environment:
#   SIZES          bytes per block / per vector, comma-separated (default 64,1024,16384,262144)
#   COLLECTIVES    default "alltoall alltoallv:uniform allreduce"
#   PLANCOLL_BENCH the real binary (default build/bench/plancoll-bench, an MPICH build: meson setup build -Dmpi=mpich)
#   PLANCOLL_PREDICT default build/predict/plancoll-predict
#   SMPI_BENCH     plancoll-bench built with smpicc (default build-smpi/bench/smpi/plancoll-bench); simulate is skipped
#                  with a note when it is absent
#   SMPI_FLAGS     extra smpirun flags (default below: cheap polls, MPICH's collective selection)
#   BENCH_TIMEOUT  seconds per run (default 600)
#   MEASURED_DIR   the table stage's measured files (default bench/results/scale/validate-CONFIG/measured), e.g. an
#                  earlier bench/run-benchmarks.sh run's directory; TABLE_SUFFIX names that table's files apart
# The measure stage holds `flock -x /tmp/plancoll-quiet.lock` over all its runs, every simulation `flock -s`
# (HELPERS.md), so measurements never share the machine with simulations.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../configurations.sh
. "$root/bench/configurations.sh"
[ $# -ge 1 ] || { sed -n '8,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
config=$1
shift
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(predict measure simulate simulate-mpi table)

launcher=$(config_command "$config") || { echo "validate-here: unknown configuration '$config'" >&2; exit 2; }
nodes=${config%%n*}
ppn=${config#*n}
ppn=${ppn%%p*}
machine=$root/machines/this-$config.machine
wisdom=$root/bench/results/scale/calibration-$config.wisdom
for f in "$machine" "$wisdom"; do [ -f "$f" ] || { echo "validate-here: $f missing" >&2; exit 2; }; done

sizes=${SIZES:-64,1024,16384,262144}
collectives=${COLLECTIVES:-alltoall alltoallv:uniform allreduce}
bench=${PLANCOLL_BENCH:-$root/build/bench/plancoll-bench}
predict=${PLANCOLL_PREDICT:-$root/build/predict/plancoll-predict}
smpi_bench=${SMPI_BENCH:-$root/build-smpi/bench/smpi/plancoll-bench}
timeout_s=${BENCH_TIMEOUT:-600}
# smpi/test, smpi/iprobe: SMPI injects 100 us per MPI_Test/MPI_Iprobe by default, growing with every failed call,
# which would mis-time every polling wait (issue 20): 0.1 us, not growing. coll-selector mpich: MPI's own collectives
# (the mpi:blocking rows and the *.native algorithms) run MPICH's algorithm choices, as the measured MPICH does.
smpi_flags=${SMPI_FLAGS:---cfg=smpi/test:1e-7 --cfg=smpi/iprobe:1e-7 --cfg=smpi/grow-injected-times:no --cfg=smpi/coll-selector:mpich}
out=$root/bench/results/scale/validate-$config
mkdir -p "$out/measured" "$out/simulated" "$out/simulated-mpi"
log=$out/commands.txt
revision=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
compare=$here/compare.py

signature() { # collective[:pattern] bytes -> plancoll-predict signature
    case $1 in
        alltoall) echo "alltoall:$2" ;;
        allreduce) echo "allreduce:double:sum:$(($2 / 8))" ;;
        alltoallv:uniform) echo "alltoallv:uniform:$2" ;;
        *) echo "validate-here: no signature for $1" >&2; return 1 ;;
    esac
}
bench_args() { # collective[:pattern] bytes -> plancoll-bench's arguments but -a
    local name=${1%%:*} pattern=
    [ "$1" != "$name" ] && pattern=${1#*:}
    echo "$name -m $2:$2 -c --config $config${pattern:+ --pattern $pattern}"
}
stem() { echo "${1/:/-}-$2"; }
record() { echo "[$revision $(date -u +%FT%TZ)] $*" >>"$log"; }
# The quiet lock keeps simulations out, not compilers or tests that do not take it: before each measured run, wait
# (up to QUIET_WAIT seconds, default 300) for a second in which the host's cores were at least 90% idle, and record
# the idle share seen. With yield-waiting ranks a single busy process costs each dependency round a scheduler slice
# (milliseconds): a run beside one is not a measurement of plancoll.
idle_share() { # idle share of all cores over one second, in percent
    local a b
    read -r -a a < <(grep '^cpu ' /proc/stat)
    sleep 1
    read -r -a b < <(grep '^cpu ' /proc/stat)
    local total=0 i
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    echo $(((100 * (b[4] - a[4] + b[5] - a[5])) / (total > 0 ? total : 1)))
}
wait_quiet() {
    local waited=0 idle
    while :; do
        idle=$(idle_share)
        if [ "$idle" -ge 90 ] || [ "$waited" -ge "${QUIET_WAIT:-300}" ]; then break; fi
        waited=$((waited + 1))
    done
    echo "$idle"
}

sigs=()
for coll in $collectives; do
    for s in ${sizes//,/ }; do sigs+=("$(signature "$coll" "$s")"); done
done

# Both predictions see the node as oversubscribed as the emulation is: --cores from the machine file (the host's 2
# cores shared by the emulated nodes: 1 per node), so the wisdom model's scheduler turns count as they do in a
# real plan on this host (without --cores, a wisdom prediction takes a core per rank).
cores=$(sed -n 's/^cores_per_node *= *\([0-9]*\).*/\1/p' "$machine")
run_predict() {
    for model in wisdom machine; do
        local file=$wisdom
        [ $model = machine ] && file=$machine
        record "$predict --$model $file --cores ${cores:-$ppn} --nodes $nodes --ppn $ppn --json $out/predict-$model.json ${sigs[*]}"
        "$predict" --"$model" "$file" --cores "${cores:-$ppn}" --nodes "$nodes" --ppn "$ppn" \
            --json "$out/predict-$model.json" "${sigs[@]}" >"$out/predict-$model.txt" 2>&1
    done
}

# Runs every (collective, size) once with each algorithm's best variant under the wisdom model, forced by its whole
# spec, so that the measured, simulated and predicted rows are the same candidate.
run_bench() { # measure|simulate
    local mode=$1 status=0 pflags=
    if [ "$mode" = simulate ]; then
        if [ ! -x "$smpi_bench" ]; then
            echo "validate-here: $smpi_bench not built (the SMPI build, docs/smpi.md): simulate skipped" >&2
            return 0
        fi
        pflags=$(platform)
    fi
    for coll in $collectives; do
        for s in ${sizes//,/ }; do
            local sig specs json cmd
            sig=$(signature "$coll" "$s")
            specs=$("$compare" specs "$out/predict-wisdom.json" "$sig")
            json=$out/${mode/measure/measured}/$(stem "$coll" "$s").json
            [ "$mode" = simulate ] && json=$out/simulated/$(stem "$coll" "$s").json
            # shellcheck disable=SC2207
            local args=($(bench_args "$coll" "$s"))
            if [ "$mode" = measure ]; then
                # the caller holds flock -x for the whole stage (below): one wait for a quiet machine, not one per run
                cmd=(timeout --kill-after=10 "$timeout_s" $launcher "$bench"
                     "${args[@]}" -a "$specs" --json "$json")
            else
                # shellcheck disable=SC2086
                # --batch-ms 0: the simulated clock has no noise to average out, and batches of 20 simulated ms
                # (the real protocol) cost minutes of simulation per algorithm; 5 batches of 10 iterations
                cmd=(flock -s /tmp/plancoll-quiet.lock timeout --kill-after=10 "$timeout_s" smpirun
                     -platform "$out/platform.xml" -hostfile "$out/platform.hosts" -np $((nodes * ppn))
                     $pflags $smpi_flags "$smpi_bench" "${args[@]}" --batch-ms 0 -i 10 -a "$specs" --json "$json")
            fi
            if [ "$mode" = measure ]; then
                local idle
                idle=$(wait_quiet)
                if [ "$idle" -ge 90 ]; then record "host idle before the run: ${idle}%"
                else record "host idle before the run: ${idle}% (< 90%: not quiet after ${QUIET_WAIT:-300} s, timed anyway)"; fi
            fi
            record "${cmd[*]}"
            echo "== $mode $config $sig" >&2
            set +e
            "${cmd[@]}" >"${json%.json}.txt" 2>&1
            local rc=$?
            set -e
            # judged by the verdict printed before MPI_Finalize (MPICH over UCX tcp may hang in finalize)
            if ! grep -q '^# plancoll-bench finished: exit status 0$' "${json%.json}.txt"; then
                echo "validate-here: $mode $sig FAILED (exit $rc; ${json%.json}.txt)" >&2
                status=1
            fi
        done
    done
    return $status
}

platform() { # writes the platform and hostfile, prints the smpirun flags the machine implies
    local pflags
    pflags=$(/usr/bin/python3 "$root/machines/make-platform.py" "$machine" --nodes "$nodes" --ppn "$ppn" \
        -o "$out/platform.xml" 2>"$out/platform.notes")
    record "machines/make-platform.py $machine --nodes $nodes --ppn $ppn -o $out/platform.xml  # -> $pflags"
    echo "$pflags"
}

run_simulate_mpi() {
    local prog=$out/mpi-coll-sim status=0 pflags
    smpicc -O2 -o "$prog" "$here/mpi-coll-sim.c" 2>/dev/null || { echo "validate-here: smpicc failed" >&2; return 1; }
    pflags=$(platform)
    for coll in $collectives; do
        local name=${coll%%:*}
        # MPI's collective as MPICH selects it, then SMPI's implementations of the algorithms plancoll also has
        # (bench/scale/compare.py pairs them: pairwise ~ pair, bruck ~ bruck, recursive_doubling ~ rdb,
        # rabenseifner ~ rab_rdb, spreadout ~ ompi_basic_linear)
        local algos=(selector)
        case $name in
            alltoall) algos+=(pair bruck) ;;
            allreduce) algos+=(rdb rab_rdb) ;;
            alltoallv) algos+=(ompi_basic_linear) ;;
        esac
        for s in ${sizes//,/ }; do
            for algo in "${algos[@]}"; do
                local json=$out/simulated-mpi/$(stem "$coll" "$s")-$algo.json label=mpi:blocking choose=
                if [ "$algo" != selector ]; then
                    label=smpi:$name.$algo
                    choose=--cfg=smpi/$name:$algo
                fi
                # shellcheck disable=SC2086
                local cmd=(flock -s /tmp/plancoll-quiet.lock timeout --kill-after=10 "$timeout_s" smpirun
                    -platform "$out/platform.xml" -hostfile "$out/platform.hosts" -np $((nodes * ppn)) $pflags
                    $smpi_flags $choose "$prog" "$name" "$s" --json "$json" --config "$config" --label "$label")
                record "${cmd[*]}"
                "${cmd[@]}" >"${json%.json}.txt" 2>&1
                grep -q '^# mpi-coll-sim finished: exit status 0$' "${json%.json}.txt" ||
                    { echo "validate-here: simulate-mpi $coll $s $algo FAILED (${json%.json}.txt)" >&2; status=1; }
            done
        done
    done
    return $status
}

status=0
for stage in "${stages[@]}"; do
    case $stage in
        predict) run_predict ;;
        measure)
            # every real run under one exclusive hold of the quiet lock (simulations hold it shared)
            flock -x /tmp/plancoll-quiet.lock "${BASH_SOURCE[0]}" "$config" measure-locked || status=1
            ;;
        measure-locked) run_bench measure || status=1 ;;
        simulate) run_bench simulate || status=1 ;;
        simulate-mpi) run_simulate_mpi || status=1 ;;
        table)
            "$compare" table --config "$config" --dir "$out" --wisdom-predict "$out/predict-wisdom.json" \
                --machine-predict "$out/predict-machine.json" --sizes "$sizes" \
                ${MEASURED_DIR:+--measured "$MEASURED_DIR"} \
                -o "$root/bench/results/scale/validate-$config${TABLE_SUFFIX:-}.json" \
                | tee "$root/bench/results/scale/validate-$config${TABLE_SUFFIX:-}.txt"
            ;;
        *) echo "validate-here: unknown stage '$stage'" >&2; exit 2 ;;
    esac
done
exit $status
