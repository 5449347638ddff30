# Sourced by the bench/run-*.sh drivers: the launch command of each configuration of docs/measurement.md,
# exactly as it gives them, in one place.
config_command() {
    local tcp=UCX_TLS=tcp,self
    case $1 in
        1n2p) echo "env mpiexec -n 2" ;;
        2n1p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 $tcp mpiexec -n 2" ;;
        2n2p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 4" ;;
        2n4p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 8" ;;
        4n2p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=4 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec -n 8" ;;
        *) return 1 ;;
    esac
}
all_configurations=1n2p,2n1p-tcp,2n2p-tcp,2n4p-tcp,4n2p-tcp
