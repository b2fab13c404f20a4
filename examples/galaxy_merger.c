/* galaxy_merger.c - two galaxies collide and their central bodies merge: collisions with
   NBODY_COLLISION_MERGE, radii only on the two central bodies (the stars are points that a
   central body swallows when it passes over them). A merger keeps mass, momentum and the
   centre of mass; the body count shrinks and the run goes on. Writes galaxy_merger.png.
   Usage: galaxy_merger [N [T_END [PNG]]]             (defaults 2000, 4, galaxy_merger.png)
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/galaxy_merger.c -o galaxy_merger -lpng -lm */
#define _POSIX_C_SOURCE 200809L    /* example.h: clock_gettime, fileno */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

int main(int argc, char **argv) {
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 2000);
    double t_end = argc > 2 ? atof(argv[2]) : 4;
    const char *png = argc > 3 ? argv[3] : "galaxy_merger.png";
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim;
    nbody_event ev = {NBODY_EVENT_NONE, 0, 0, 0, 0, 0, 0};
    nbody_real *r;
    ex_image im;
    ex_view view;
    nbody_result res;
    if (n < 4 || nbody_ic_collision(&s, n, (nbody_real)0.5, 3, 7) != NBODY_OK) return 1;
    r = (nbody_real *)calloc(n, sizeof *r);
    if (!r) return 1;
    r[0] = r[n / 2] = (nbody_real)0.05;    /* the central bodies (first of each galaxy) */
    d.collision = NBODY_COLLISION_MERGE;
    d.softening = (nbody_real)0.02;
    d.dt = (nbody_real)0.002;
    if (nbody_create(&sim, &d, &s) != NBODY_OK || nbody_set_radii(sim, r) != NBODY_OK) return 1;
    res = nbody_advance(sim, (nbody_real)t_end);
    nbody_get_event(sim, &ev);
    nbody_system_free(&s);
    if (res != NBODY_OK || nbody_system_alloc(&s, nbody_get_n(sim)) != NBODY_OK) return 1;
    nbody_get_state(sim, &s);
    if (ex_image_alloc(&im, 1024, 768) != 0) return 1;
    view = ex_view_whole(&im, 2.5);
    ex_draw_system(&im, &view, &s, 1.0, 0.5f);
    printf("t = %g: %llu mergers, %lu bodies left: %s\n", t_end, ev.merges, (unsigned long)s.n,
           ex_write_png(&im, png, 1.2f) == 0 ? png : "no PNG (built without libpng)");
    ex_image_free(&im);
    free(r);
    nbody_destroy(sim);
    nbody_system_free(&s);
    return 0;
}
