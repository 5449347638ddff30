# Sourced by the test runners (bash): the launcher and environment of the MPI the build uses, and emulated nodes.
#   PLANCOLL_MPIEXEC  the launcher (meson's default test setup sets it; by hand: mpiexec.mpich or mpiexec.openmpi)
#   PLANCOLL_MPI      mpich | openmpi (meson sets it; otherwise read from the launcher's name)
# Afterwards "${mpiexec_cmd[@]}" -n NP ... launches. Never the default `mpiexec`: installing the other MPI moves it.
PLANCOLL_MPIEXEC=${PLANCOLL_MPIEXEC:-mpiexec.mpich}
if [ -z "${PLANCOLL_MPI:-}" ]; then
  case "$PLANCOLL_MPIEXEC" in *openmpi*) PLANCOLL_MPI=openmpi ;; *) PLANCOLL_MPI=mpich ;; esac
fi
export PLANCOLL_MPIEXEC PLANCOLL_MPI
mpiexec_cmd=("$PLANCOLL_MPIEXEC")
if [ "$PLANCOLL_MPI" = openmpi ]; then
  # Up to 8 ranks on 2 cores (Open MPI refuses more ranks than slots without --oversubscribe), waits that yield
  # the core instead of spinning, and runs as root in containers and CI.
  mpiexec_cmd+=(--oversubscribe)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
  # Session directories of our own. Open MPI 4.1's launchers share one top session directory
  # (<tmp>/ompi.<host>.<uid>) and each removes it when it ends and finds it empty: a launcher starting at that
  # moment (another test run in parallel, or the concurrent jobs of run-wisdom-jobs-test.sh) fails with
  # "orte_session_dir failed" before any rank runs. A runner that launches jobs concurrently gives each its own
  # directory under this one (pc_ompi_session_dir). A runner that sets its own EXIT trap calls pc_ompi_cleanup.
  pc_ompi_sessions=$(mktemp -d "${TMPDIR:-/tmp}/plancoll-ompi.XXXXXX")
  export OMPI_MCA_orte_tmpdir_base=$pc_ompi_sessions
  pc_ompi_cleanup() { rm -rf "$pc_ompi_sessions"; }
  trap pc_ompi_cleanup EXIT
else
  pc_ompi_cleanup() { :; }
fi

# pc_ompi_session_dir NAME: the Open MPI session directory base for one of several concurrent launches (prints
# it, created); empty under MPICH.
pc_ompi_session_dir() {
  [ "$PLANCOLL_MPI" = openmpi ] || return 0
  mkdir -p "$pc_ompi_sessions/$1" && echo "$pc_ompi_sessions/$1"
}

# pc_emulate_nodes K[:block|:emulate]: K emulated nodes on this host, MPI's traffic between them over TCP loopback.
#   MPICH:    K (round robin) and K:block are MPICH's cliques (MPIR_CVAR_NUM_CLIQUES, MPIR_CVAR_CLIQUES_BY_BLOCK)
#             over UCX tcp; K:emulate is plancoll's own PLANCOLL_EMULATE_NODES (blocks) with MPI over UCX tcp.
#   Open MPI: no cliques: K:block and K:emulate are PLANCOLL_EMULATE_NODES=K with the ob1 PML over the TCP BTL
#             (loopback), one-sided through osc sm,pt2pt; round-robin nodes do not exist there: returns 2.
# K <= 1 leaves PLANCOLL_EMULATE_NODES as the caller set it (a test may set it itself).
pc_emulate_nodes() {
  unset MPIR_CVAR_NUM_CLIQUES MPIR_CVAR_CLIQUES_BY_BLOCK
  local spec=$1 k=${1%%:*}
  [ "$k" -gt 1 ] || return 0
  if [ "$PLANCOLL_MPI" = openmpi ]; then
    case "$spec" in *:block|*:emulate) ;; *) return 2 ;; esac
    # One-sided: with the TCP BTL, Open MPI 4.1.4 selects osc/rdma, whose MPI_Win_create then fails (MPI_ERR_WIN);
    # osc/sm serves the shared windows (MPI_Win_allocate_shared), osc/pt2pt the created ones (not under
    # MPI_THREAD_MULTIPLE: pt2pt refuses it, so the progress-thread runs stay on one node).
    export PLANCOLL_EMULATE_NODES=$k OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=lo \
      OMPI_MCA_osc=sm,pt2pt
  else
    export UCX_TLS=tcp,self
    case "$spec" in
      *:emulate) export PLANCOLL_EMULATE_NODES=$k ;;
      *:block) export MPIR_CVAR_NUM_CLIQUES=$k MPIR_CVAR_CLIQUES_BY_BLOCK=1 ;;
      *) export MPIR_CVAR_NUM_CLIQUES=$k ;;
    esac
  fi
}
