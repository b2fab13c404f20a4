# rebound_ias15.py - REBOUND's IAS15 on nbody.h's outer solar system to 10^4 yr, the run of
# `bench_orbital radau` (REBOUND from pip, a benchmark tool only): the same outputs (10 yr,
# then sqrt(10) apart), default IAS15 settings, R runs (default 3), one line each.
# Usage: python3 bench/rebound_ias15.py FILE [R]   with FILE from `build/bench_orbital outer-ic`
# (lines "m x y z vx vy vz"); bench/radau_rebound.sh alternates it with nbody.h.
import math, sys, time
import rebound

def run(path):
    sim = rebound.Simulation()
    for line in open(path):
        m, x, y, z, vx, vy, vz = map(float, line.split())
        sim.add(m=m, x=x, y=y, z=z, vx=vx, vy=vy, vz=vz)
    sim.integrator = "ias15"
    e0, mx, t = sim.energy(), 0.0, 10.0
    w, c = time.time(), time.process_time()
    while t <= 1e4 * 1.000001:
        sim.integrate(t * 2 * math.pi)
        mx = max(mx, abs((sim.energy() - e0) / e0))
        t *= math.sqrt(10.0)
    return mx, sim.steps_done, time.time() - w, time.process_time() - c

if __name__ == "__main__":
    for _ in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
        print("REBOUND %s ias15 1e4 yr: max abs(dE/E) %.3g, %d steps, wall %.3f s, cpu %.3f s"
              % ((rebound.__version__,) + run(sys.argv[1])))
