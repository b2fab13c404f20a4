/* arcade.c - a game-style loop: a fixed frame time of 1/60 s, each frame advancing the
   simulation by exactly one frame; the "player" (here a scripted cursor circling the
   field) pulls every ball with an extra force (desc.extra_force, velocity-free, so the
   default leapfrog accepts it); balls are hard spheres that bounce off each other
   (NBODY_COLLISION_BOUNCE, restitution 0.9), and a hook after each step keeps them inside
   the box by reflecting them at the walls. Writes arcade.png: the balls' trails.
   Usage: arcade [BALLS [FRAMES [PNG]]]               (defaults 200, 600, arcade.png)
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/arcade.c -o arcade -lpng -lm */
#define _POSIX_C_SOURCE 200809L    /* example.h: clock_gettime, fileno */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

typedef struct player { double x, y, pull; } player;

/* the player's pull: a softened spring towards the cursor */
static void pull(size_t n, nbody_real t, const nbody_real *x, const nbody_real *y, const nbody_real *z,
                 const nbody_real *vx, const nbody_real *vy, const nbody_real *vz, const nbody_real *m,
                 nbody_real *ax, nbody_real *ay, nbody_real *az, void *user) {
    const player *p = (const player *)user;
    size_t i;
    (void)t; (void)z; (void)vx; (void)vy; (void)vz; (void)m; (void)az;
    for (i = 0; i < n; ++i) {
        double dx = p->x - (double)x[i], dy = p->y - (double)y[i], d = sqrt(dx * dx + dy * dy + 0.01);
        ax[i] += (nbody_real)(p->pull * dx / d); ay[i] += (nbody_real)(p->pull * dy / d);
    }
}

/* walls at |x|, |y| = 1: reflect the balls that left (a change of state between steps) */
static int walls(nbody_sim *sim, void *user) {
    nbody_system *s = (nbody_system *)user;
    size_t i;
    int hit = 0;
    nbody_get_state(sim, s);
    for (i = 0; i < s->n; ++i) {
        if (s->x[i] > 1 && s->vx[i] > 0) { s->vx[i] = -s->vx[i]; hit = 1; }
        if (s->x[i] < -1 && s->vx[i] < 0) { s->vx[i] = -s->vx[i]; hit = 1; }
        if (s->y[i] > 1 && s->vy[i] > 0) { s->vy[i] = -s->vy[i]; hit = 1; }
        if (s->y[i] < -1 && s->vy[i] < 0) { s->vy[i] = -s->vy[i]; hit = 1; }
    }
    if (hit) nbody_set_state(sim, s);
    return 0;
}

int main(int argc, char **argv) {
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 200), i;
    int frames = argc > 2 ? atoi(argv[2]) : 600, f;
    const char *png = argc > 3 ? argv[3] : "arcade.png";
    const double frame = 1.0 / 60;
    nbody_system s = NBODY_ZERO, scratch = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_sim *sim;
    nbody_event ev = {NBODY_EVENT_NONE, 0, 0, 0, 0, 0, 0};
    player p = {0, 0, 2};
    nbody_real *r;
    ex_image im;
    ex_view view;
    if (n < 1 || nbody_ic_uniform_cube(&s, n, 3) != NBODY_OK || nbody_system_alloc(&scratch, n) != NBODY_OK) return 1;
    r = (nbody_real *)malloc(n * sizeof *r);
    for (i = 0; i < n; ++i) { s.z[i] = s.vz[i] = 0; s.m[i] = (nbody_real)(1e-4 / (double)n); r[i] = (nbody_real)0.02; }
    d.extra_force = pull; d.extra_force_user_data = &p; d.extra_force_velocity_free = 1;
    d.collision = NBODY_COLLISION_BOUNCE; d.restitution = (nbody_real)0.9;
    d.after_step = walls; d.hook_user_data = &scratch;
    d.dt = (nbody_real)(frame / 4);         /* 4 steps a frame */
    if (nbody_create(&sim, &d, &s) != NBODY_OK || nbody_set_radii(sim, r) != NBODY_OK) return 1;
    if (ex_image_alloc(&im, 768, 768) != 0) return 1;
    view = ex_view_whole(&im, 1.1);
    for (f = 1; f <= frames; ++f) {          /* the game loop: input, advance one frame, draw */
        double t = f * frame;
        p.x = 0.6 * cos(0.8 * t); p.y = 0.6 * sin(1.3 * t);
        if (nbody_advance(sim, (nbody_real)t) != NBODY_OK) return 1;
        if (f % 4 == 0) {
            nbody_get_state(sim, &s);
            ex_draw_system(&im, &view, &s, 1.5, 0.05f);
        }
    }
    nbody_get_event(sim, &ev);
    printf("%d frames, %llu bounces: %s\n", frames, ev.bounces, ex_write_png(&im, png, 2.0f) == 0 ? png : "no PNG (built without libpng)");
    ex_image_free(&im);
    free(r);
    nbody_destroy(sim);
    nbody_system_free(&s); nbody_system_free(&scratch);
    return 0;
}
