#!/bin/sh
# mpi_domains.sh - the domain-decomposed tree (desc.decompose) on 1..4 CPU ranks x 1 thread
# against the replicated tree (every rank builds the whole tree) at the same ranks: ms per
# force evaluation and, for each rank of the decomposed runs, what it sent in the last step
# (positions to the domains, locally essential trees, accelerations back) and its walk, build
# and other times. The exchange volumes depend on N, P and the bodies only (not on the
# machine's load): they are the figures bench/domains_model.py fits.
# Writes bench/results/domains-<date>.md (and prints it).
# Usage: [NS="16384 32768 65536"] [RANKS="1 2 3 4"] [OUT=file.md] sh bench/mpi_domains.sh
cd "$(dirname "$0")/.." || exit 1
NS=${NS:-16384 32768 65536}
RANKS=${RANKS:-1 2 3 4}
make -s build/mpi_scaling || exit 1
ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-run-as-root"
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none \
    OMPI_MCA_mpi_yield_when_idle=${OMPI_MCA_mpi_yield_when_idle:-1} OMP_NUM_THREADS=1
out=${OUT:-bench/results/domains-$(date +%Y-%m-%d).md}
{
    echo "# CPU ranks: the domain-decomposed tree, Plummer, theta 0.5 monopoles ($(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD))"
    echo
    echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(getconf _NPROCESSORS_ONLN) cores, shared with other jobs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "Command: NS=\"$NS\" RANKS=\"$RANKS\" sh bench/mpi_domains.sh (mpirun --oversubscribe, 1 thread a rank)."
    echo "mpi: every rank builds the whole tree and walks a range of its leaves; mpi-dd: desc.decompose."
    echo "Times are wall clock on a machine with more ranks than cores and other jobs: only the"
    echo "volumes are robust."
    echo
    echo "| mode | ranks | threads | engine | N | ms / evaluation |"
    echo "|---|---:|---:|---|---:|---:|"
    for n in $NS; do
        for p in $RANKS; do
            mpirun $ROOT_FLAG --oversubscribe -np "$p" build/mpi_scaling "$n" 1 tree
            BENCH_DECOMPOSE=1 mpirun $ROOT_FLAG --oversubscribe -np "$p" build/mpi_scaling "$n" 1 tree
        done
    done
    echo
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out"
