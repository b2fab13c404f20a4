/* planetesimals.c - test particles: a disc of 2000 massless planetesimals around a star and
   a Jupiter. Only the star and the planet attract (desc.n_active = 2), so every step costs
   2 x N interactions instead of N^2; the planetesimals feel both and sculpt the planet's
   gaps and resonances. Units: G = 1, star mass 1, the planet on a circular orbit at r = 1
   (period 2 pi). Writes planetesimals.png (positions after 10 orbits, coloured by speed).
   Usage: planetesimals [N [ORBITS [PNG]]]           (defaults 2000, 10, planetesimals.png)
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/planetesimals.c -o planetesimals -lpng -lm */
#define _POSIX_C_SOURCE 200809L    /* example.h: clock_gettime, fileno */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

int main(int argc, char **argv) {
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 2000) + 2, i;
    double orbits = argc > 2 ? atof(argv[2]) : 10, mp = 1e-3, v_ref;
    const char *png = argc > 3 ? argv[3] : "planetesimals.png";
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim;
    ex_image im;
    ex_view view;
    unsigned long long rng = 12345;
    if (n < 3 || nbody_system_alloc(&s, n) != NBODY_OK) return 1;
    /* the star and the planet first: they are the active bodies, centre of mass at rest */
    s.m[0] = 1; s.m[1] = (nbody_real)mp;
    s.x[0] = (nbody_real)-mp / (nbody_real)(1 + mp); s.x[1] = (nbody_real)(1 / (1 + mp));
    s.vy[1] = (nbody_real)sqrt(1 + mp) / (nbody_real)(1 + mp); s.vy[0] = (nbody_real)-mp * s.vy[1];
    for (i = 2; i < n; ++i) {   /* massless, circular orbits from r = 0.4 to 2.2 */
        double u, r, phi, v;
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL; u = (double)(rng >> 11) / 9007199254740992.0;
        r = 0.4 + 1.8 * u;
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL; phi = 6.283185307179586 * (double)(rng >> 11) / 9007199254740992.0;
        v = 1 / sqrt(r);
        s.x[i] = (nbody_real)(r * cos(phi)); s.y[i] = (nbody_real)(r * sin(phi));
        s.vx[i] = (nbody_real)(-v * sin(phi)); s.vy[i] = (nbody_real)(v * cos(phi));
    }
    d.n_active = 2;                        /* the rest are test particles */
    d.dt = (nbody_real)0.004;
    d.softening = (nbody_real)0.01;
    if (nbody_create(&sim, &d, &s) != NBODY_OK) return 1;
    if (nbody_advance(sim, (nbody_real)(orbits * 6.283185307179586)) != NBODY_OK) return 1;
    nbody_get_state(sim, &s);
    v_ref = 1;
    if (ex_image_alloc(&im, 768, 768) != 0) return 1;
    view = ex_view_whole(&im, 2.4);
    ex_draw_system(&im, &view, &s, v_ref, 0.6f);
    {
        const float planet[3] = {1.0f, 0.5f, 0.2f};
        ex_plot(&im, &view, (double)s.x[1], (double)s.y[1], planet, 40);
        ex_plot(&im, &view, (double)s.x[0], (double)s.y[0], planet, 80);
    }
    printf("%lu planetesimals, %g orbits: %s\n", (unsigned long)(n - 2), orbits,
           ex_write_png(&im, png, 1.5f) == 0 ? png : "no PNG (built without libpng)");
    ex_image_free(&im);
    nbody_destroy(sim);
    nbody_system_free(&s);
    return 0;
}
