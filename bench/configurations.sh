# Sourced by the bench/run-*.sh drivers: the launch command of each configuration of docs/measurement.md,
# exactly as it gives them, in one place. "XnYp" is X (emulated) nodes of Y ranks each, except the two uneven
# layouts of issue 15's regret runs, named by their total: 2n5p-tcp is 5 ranks on 2 nodes in blocks (3 + 2) and
# 3n6p-tcp is 6 ranks on 3 nodes in blocks (2 + 2 + 2).
config_command() {
    local tcp=UCX_TLS=tcp,self
    case $1 in
        1n2p) echo "env mpiexec -n 2" ;;
        1n3p) echo "env mpiexec -n 3" ;;
        2n1p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 $tcp mpiexec -n 2" ;;
        2n2p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 4" ;;
        2n4p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 8" ;;
        2n5p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 5" ;;
        3n6p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=3 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 6" ;;
        4n2p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=4 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 8" ;;
        *) return 1 ;;
    esac
}
all_configurations=1n2p,2n1p-tcp,2n2p-tcp,2n4p-tcp,4n2p-tcp
# the planner-quality layouts (bench/run-regret.sh all): one node even and odd, uneven and three emulated nodes,
# and the oversubscribed two-node layout
regret_configurations=1n2p,1n3p,2n5p-tcp,3n6p-tcp,2n4p-tcp
