# rebound_brouwer.py - REBOUND's IAS15 over the ensemble of `bench_orbital brouwer-ensemble`
# (REBOUND from pip, a benchmark tool only): K realisations of nbody.h's outer solar system,
# realisation r with Jupiter's x (particle 1) multiplied by (1 + r 1e-12), default IAS15, dE/E
# sampled at 10^(1 + i/20) yr (i = 0, 1, ...) up to YEARS. Writes lines "r yr dE/E", the format
# `bench_orbital brouwer-fit` reads, so that both integrators are fitted by the same code.
# Usage: python3 bench/rebound_brouwer.py IC YEARS K > SAMPLES   with IC from
#        `build/bench_orbital outer-ic`; then `build/bench_orbital brouwer-fit SAMPLES`.
import math, sys, time
import rebound

def realisation(rows, r, years, out):
    sim = rebound.Simulation()
    for i, (m, x, y, z, vx, vy, vz) in enumerate(rows):
        if i == 1:
            x = x * (1 + r * 1e-12)
        sim.add(m=m, x=x, y=y, z=z, vx=vx, vy=vy, vz=vz)
    sim.integrator = "ias15"
    e0, i = sim.energy(), 0
    while True:
        yr = math.pow(10.0, 1 + i / 20.0)
        if yr > years * 1.000001:
            break
        sim.integrate(yr * 2 * 3.14159265358979323846)
        out.write("%d %.17g %.17g\n" % (r, yr, (sim.energy() - e0) / e0))
        i += 1
    out.flush()
    return sim.steps_done

if __name__ == "__main__":
    rows = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
    years, k = float(sys.argv[2]), int(sys.argv[3])
    print("# rebound_brouwer.py %s %g %d: REBOUND %s ias15; realisation, yr, dE/E (Jupiter's x times 1 + r 1e-12)"
          % (sys.argv[1], years, k, rebound.__version__))
    w = time.time()
    for r in range(k):
        n = realisation(rows, r, years, sys.stdout)
        sys.stderr.write("realisation %d: %d steps, %.1f s so far\n" % (r, n, time.time() - w))
