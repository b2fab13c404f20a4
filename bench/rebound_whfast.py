# rebound_whfast.py - REBOUND's WHFast on nbody.h's outer solar system, the runs of
# bench/bench_orbital.c's whfast table (REBOUND from pip, a benchmark tool only).
# Usage: python3 bench/rebound_whfast.py FILE [R]   with FILE lines "m x y z vx vy vz" (nbody.h's
#   nbody_ic_outer_solar_system, printed with %.17g); R runs of each row (default 1): the
#   wall time is the smallest of them, and the processor time (cpu s) too (compare
#   `build/bench_orbital whfast R`; FILE from `build/bench_orbital outer-ic`). The rows with a
#   corrector run safe_mode 0 (synchronized only at outputs, the half drifts joined); three more
#   rows run the ones without a corrector in safe_mode 0 too (the default, 1, synchronizes
#   every step). bench/whfast_rebound.sh alternates the two programs.
import math, sys, time
import rebound

def run(path, dt_pj, corrector, coords="jacobi", repeat=1, safe=None):
    best, cpu = 1e9, 1e9
    for _ in range(repeat):
        de, mx, w, c = run1(path, dt_pj, corrector, coords, safe)
        best, cpu = min(best, w), min(cpu, c)
    label = coords if safe is None else "%s safe_mode %d" % (coords, safe)
    print("| rebound %s | %g P_J | %d | %.3e | %.3e | %.4f | %.4f |" % (label, dt_pj, corrector, de, mx, best, cpu))

def run1(path, dt_pj, corrector, coords, safe=None):
    sim = rebound.Simulation()
    for line in open(path):
        m, x, y, z, vx, vy, vz = map(float, line.split())
        sim.add(m=m, x=x, y=y, z=z, vx=vx, vy=vy, vz=vz)
    sim.integrator = "whfast"
    sim.integrator.coordinates = coords
    pj = 2 * math.pi * 5.2 ** 1.5
    sim.dt = dt_pj * pj
    if corrector:
        sim.integrator.corrector = corrector
        sim.integrator.safe_mode = 0
    if safe is not None:          # safe_mode 0 without a corrector: the half drifts joined too
        sim.integrator.safe_mode = safe
    e0, mx, t0, c0 = sim.energy(), 0.0, time.time(), time.process_time()
    for k in range(1, 11):
        sim.integrate(100 * k * pj, exact_finish_time=0)
        de = abs((sim.energy() - e0) / e0)
        mx = max(mx, de)
    return de, mx, time.time() - t0, time.process_time() - c0

if __name__ == "__main__":
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print("| REBOUND %s: coordinates | dt | corrector | abs(dE/E) end | max | wall s | cpu s |\n| --- | --- | --- | --- | --- | --- | --- |" % rebound.__version__)
    for dt, c, co in [(1 / 200, 0, "jacobi"), (0.0123, 0, "jacobi"), (0.0123, 3, "jacobi"), (0.0123, 11, "jacobi"),
                      (1 / 200, 0, "democraticheliocentric")]:
        run(sys.argv[1], dt, c, co, repeat)
    for dt, co in [(1 / 200, "jacobi"), (0.0123, "jacobi"), (1 / 200, "democraticheliocentric")]:
        run(sys.argv[1], dt, 0, co, repeat, 0)
