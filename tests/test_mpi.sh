#!/bin/sh
# The distributed engine under mpirun: tests/mpi_engines.c on 1, 2, 3 and 4 ranks
# (--oversubscribe: more ranks than cores), one thread a rank. Skipped when mpicc/mpirun are
# absent (build/mpi_engines not built), failed then under NBODY_REQUIRE_MPI=1 (CI).
# Prints "RESULT passed failed skipped", the sums over the four runs.
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
T="$BUILD/mpi_engines"
if [ ! -x "$T" ] || ! command -v mpirun >/dev/null 2>&1; then
    if [ "${NBODY_REQUIRE_MPI:-0}" = 1 ]; then echo "FAIL (required by NBODY_REQUIRE_MPI) MPI tests: no mpicc/mpirun"; echo "RESULT 0 1 0"; exit 1; fi
    echo "SKIP MPI tests: no mpicc/mpirun (apt-get install openmpi-bin libopenmpi-dev)"; echo "RESULT 0 0 1"; exit 0
fi
ROOT_FLAG=""; [ "$(id -u)" -eq 0 ] && ROOT_FLAG="--allow-run-as-root"
# containers: no ptrace-based single copy, no binding; idle ranks yield the core (oversubscribed)
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_hwloc_base_binding_policy=none OMPI_MCA_rmaps_base_oversubscribe=1 \
    OMPI_MCA_mpi_yield_when_idle=1
export OMP_NUM_THREADS=1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=0
# build/mpi_domains (desc.decompose, the domain-decomposed tree) and build/mpi_hermite
# (NBODY_HERMITE, the sources split by rank) likewise, when built
progs="$T"
for D in "$BUILD/mpi_domains" "$BUILD/mpi_hermite"; do [ -x "$D" ] && progs="$progs $D"; done
for prog in $progs; do
for np in 1 2 3 4; do
    out=$(timeout 600 mpirun $ROOT_FLAG --oversubscribe -np $np "$prog" "$tmp" 2>&1); rc=$?
    printf '%s\n' "$out" | grep '^FAIL' | sort -u
    res=$(printf '%s\n' "$out" | grep '^RESULT ' | tail -n 1)
    if [ -z "$res" ]; then
        echo "FAIL mpirun -np $np ended without a RESULT line (exit $rc)"; printf '%s\n' "$out" | tail -n 5
        fail=$((fail + 1)); continue
    fi
    set -- $res; pass=$((pass + $2)); fail=$((fail + $3)); skip=$((skip + $4))
    if [ "$rc" -ne 0 ] && [ "$3" -eq 0 ]; then echo "FAIL mpirun -np $np exited with $rc"; fail=$((fail + 1)); fi
    echo "mpirun -np $np $(basename "$prog"): $res"
done
done
# the CLI under mpirun: 3 ranks end bitwise where one process ends; a checkpoint of 2 ranks
# (at t = 0.02) resumed on 3 too
NB="$BUILD/nbody"; NBM="$BUILD/nbody_mpi"
if [ -x "$NB" ] && [ -x "$NBM" ]; then
    args="--scenario plummer --n 301 --engine tree --method rkdp --tolerance 1e-6 --dt 0.004 --t-end 0.04 --snapshot-every 0.02"
    "$NB" $args --out "$tmp/one" >/dev/null 2>&1
    mpirun $ROOT_FLAG --oversubscribe -np 3 "$NBM" $args --out "$tmp/three" >/dev/null 2>&1
    mpirun $ROOT_FLAG --oversubscribe -np 2 "$NBM" $args --out "$tmp/two" >/dev/null 2>&1
    mpirun $ROOT_FLAG --oversubscribe -np 3 "$NBM" $args --resume "$tmp/two_snap_000001.ckpt" --out "$tmp/resumed" >/dev/null 2>&1
    for f in three resumed; do
        if [ -s "$tmp/one_final.snap" ] && cmp -s "$tmp/one_final.snap" "$tmp/${f}_final.snap"; then pass=$((pass + 1))
        else fail=$((fail + 1)); echo "FAIL nbody_mpi ($f) does not end bitwise where nbody ends"; fi
    done
else
    echo "FAIL $NBM or $NB missing"; fail=$((fail + 1))
fi
echo "RESULT $pass $fail $skip"
[ "$fail" -eq 0 ]
