/* demo.c - `make demo`: the article's headline run, two galaxies with central bodies
   colliding, watched in the terminal. Needs nothing but a C compiler: every half time unit
   it draws the density of the bodies as characters (coloured by speed on a terminal, with
   the colour map of example.h) and prints the time, the wall clock and the energy drift.
   Built with libpng it also writes a PNG frame each time, beside the executable
   (build/demo_frame_NNNNNN.png). Default: 1000 bodies to t = 6, about 3000 leapfrog steps.
   Usage: demo [N [T_END]]
   Build: cc -O2 -fopenmp -I. examples/demo.c -o demo -lm
          (add -DNBODY_EX_PNG before the file and -lpng after it for the frames) */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

/* frames go beside the executable: "build/demo" -> "build/demo_frame_NNNNNN.png" */
static void frame_path(char *out, size_t size, const char *argv0, int k) {
    const char *slash = strrchr(argv0, '/');
    int dir = slash ? (int)(slash - argv0 + 1) : 0;
    snprintf(out, size, "%.*sdemo_frame_%06d.png", dir, argv0, k);
}

int main(int argc, char **argv) {
    const ex_scenario *sc = ex_find_scenario("collision");
    nbody_system s = NBODY_ZERO;
    nbody_desc desc = NBODY_ZERO;
    nbody_sim *sim;
    ex_image img = {0, 0, NULL};
    double t_end = argc > 2 ? atof(argv[2]) : sc->t_end, e0, v_ref, start = ex_now();
    long n = argc > 1 ? atol(argv[1]) : (long)sc->n;
    int terminal = ex_is_terminal(stdout), k;
    if (n < 2 || !(t_end > 0) || t_end > 1e6) {
        fprintf(stderr, "usage: demo [N >= 2 [T_END > 0]]\n");
        return 2;
    }
    if (ex_make_scenario(sc, &s, (size_t)n, 1) != NBODY_OK) return 1;
    desc.softening = (nbody_real)sc->softening;
    desc.dt = (nbody_real)sc->dt;                  /* leapfrog on the block engine: the defaults */
    if (nbody_create(&sim, &desc, &s) != NBODY_OK) return 1;
    e0 = ex_energy(&s, 1, sc->softening);
    v_ref = ex_speed_scale(&s);
    if (ex_have_png() && ex_image_alloc(&img, 640, 480) != 0) return 1;
    printf("two galaxies of %ld bodies each, central bodies of 90%% of their mass, until t = %g\n", n / 2, t_end);
    for (k = 0;; ++k) {
        double t = (double)s.t;
        if (terminal) printf("\033[H\033[2J");     /* redraw in place on a terminal */
        ex_print_density(stdout, &s, sc->view, v_ref, 78, 24, terminal);
        printf("t = %5.2f   wall %5.1f s   %4.1f ms/step   dE/E = %+.3e\n", t, ex_now() - start,
               k ? 1e3 * (ex_now() - start) / (double)nbody_get_stats(sim).steps : 0.0, ex_drift(&s, 1, sc->softening, e0));
        if (img.light) {
            char path[4096];
            ex_view v = ex_view_whole(&img, sc->view);
            ex_image_clear(&img);
            ex_draw_system(&img, &v, &s, v_ref, (float)(6000.0 / (double)n + 0.3));
            frame_path(path, sizeof path, argv[0], k);
            if (ex_write_png(&img, path, 1.5f) == 0) printf("wrote %s\n", path);
        }
        fflush(stdout);
        if (t >= t_end) break;
        if (nbody_advance(sim, (nbody_real)fmin(t_end, 0.5 * (k + 1))) != NBODY_OK ||
            nbody_get_state(sim, &s) != NBODY_OK) {
            fprintf(stderr, "demo: the simulation failed at t = %g\n", (double)nbody_get_stats(sim).t);
            return 1;
        }
    }
    nbody_destroy(sim);
    nbody_system_free(&s);
    ex_image_free(&img);
    return 0;
}
