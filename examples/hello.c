/* hello.c - the smallest complete nbody.h program: 1000 stars in a Plummer sphere, advanced
   to t = 1 with the default engine and integrator, and the energy error it made.
   Build: cc -O2 -fopenmp -I. examples/hello.c -o hello -lm */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include <stdio.h>

int main(void) {
    nbody_system s = NBODY_ZERO;
    nbody_desc desc = NBODY_ZERO;                 /* all zero: block engine, leapfrog, dt = 1e-3 */
    nbody_invariants before, after;
    nbody_sim *sim;
    nbody_ic_plummer(&s, 1000, 42);        /* seed 42: the same stars on every machine */
    desc.softening = 0.01;
    if (nbody_create(&sim, &desc, &s) != NBODY_OK) return 1;
    nbody_measure(&s, 1, desc.softening, &before);
    nbody_advance(sim, 1.0);               /* lands exactly on t = 1 */
    nbody_get_state(sim, &s);
    nbody_measure(&s, 1, desc.softening, &after);
    printf("t = %g  E = %.9f  dE/E = %.2e\n", (double)s.t, (double)after.energy,
           (double)((after.energy - before.energy) / -before.energy));
    nbody_destroy(sim);
    nbody_system_free(&s);
    return 0;
}
