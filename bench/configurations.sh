# Sourced by the bench/run-*.sh drivers: the launch command of each configuration of docs/measurement.md,
# exactly as it gives them, in one place. "XnYp" is X (emulated) nodes of Y ranks each, except the two uneven
# layouts of issue 15's regret runs, named by their total: 2n5p-tcp is 5 ranks on 2 nodes in blocks (3 + 2) and
# 3n6p-tcp is 6 ranks on 3 nodes in blocks (2 + 2 + 2). MPICH's configurations have plain names; the same layouts
# under Open MPI are prefixed ompi- (ompi-2n2p-tcp), so their results files say which MPI ran them.
config_command() {
    local tcp=UCX_TLS=tcp,self
    # Open MPI: no cliques, so plancoll's own PLANCOLL_EMULATE_NODES (blocks) with MPI's traffic over the TCP BTL on
    # loopback (the ob1 PML); run as root in containers; --oversubscribe and yielding waits where ranks outnumber
    # cores; one-sided through osc sm,pt2pt (osc/rdma's MPI_Win_create fails over TCP). The ompi- configurations
    # need an Open MPI build (config_build_dir).
    local ompi="OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"
    local ompi_tcp="OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_osc=sm,pt2pt"
    case $1 in
        1n2p) echo "env mpiexec.mpich -n 2" ;;
        1n3p) echo "env mpiexec.mpich -n 3" ;;
        2n1p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 $tcp mpiexec.mpich -n 2" ;;
        2n2p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec.mpich -n 4" ;;
        2n4p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec.mpich -n 8" ;;
        2n5p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=2 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec.mpich -n 5" ;;
        3n6p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=3 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec.mpich -n 6" ;;
        4n2p-tcp) echo "env MPIR_CVAR_NUM_CLIQUES=4 MPIR_CVAR_CLIQUES_BY_BLOCK=1 $tcp mpiexec.mpich -n 8" ;;
        ompi-1n2p) echo "env $ompi mpiexec.openmpi -n 2" ;;
        ompi-1n3p) echo "env $ompi OMPI_MCA_mpi_yield_when_idle=1 mpiexec.openmpi --oversubscribe -n 3" ;;
        ompi-2n2p-tcp) echo "env $ompi PLANCOLL_EMULATE_NODES=2 $ompi_tcp OMPI_MCA_mpi_yield_when_idle=1 mpiexec.openmpi --oversubscribe -n 4" ;;
        ompi-2n4p-tcp) echo "env $ompi PLANCOLL_EMULATE_NODES=2 $ompi_tcp OMPI_MCA_mpi_yield_when_idle=1 mpiexec.openmpi --oversubscribe -n 8" ;;
        ompi-2n5p-tcp) echo "env $ompi PLANCOLL_EMULATE_NODES=2 $ompi_tcp OMPI_MCA_mpi_yield_when_idle=1 mpiexec.openmpi --oversubscribe -n 5" ;;
        ompi-3n6p-tcp) echo "env $ompi PLANCOLL_EMULATE_NODES=3 $ompi_tcp OMPI_MCA_mpi_yield_when_idle=1 mpiexec.openmpi --oversubscribe -n 6" ;;
        *) return 1 ;;
    esac
}
# The build directory whose binaries a configuration runs: an Open MPI build for the ompi- ones (meson setup
# build-openmpi -Dmpi=openmpi), the MPICH build otherwise.
config_build_dir() {
    case $1 in ompi-*) echo build-openmpi ;; *) echo build ;; esac
}
all_configurations=1n2p,2n1p-tcp,2n2p-tcp,2n4p-tcp,4n2p-tcp
# the planner-quality layouts (bench/run-regret.sh all): one node even and odd, uneven and three emulated nodes,
# and the oversubscribed two-node layout
regret_configurations=1n2p,1n3p,2n5p-tcp,3n6p-tcp,2n4p-tcp
# the same under Open MPI (bench/run-benchmarks.sh ompi)
ompi_configurations=ompi-1n2p,ompi-2n2p-tcp,ompi-2n4p-tcp
