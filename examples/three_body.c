/* three_body.c - two famous three-body orbits drawn as trajectories, side by side in
   three_body.png: the figure-eight of Chenciner & Montgomery (one period, T = 6.3259), and
   Burrau's Pythagorean problem (masses 3, 4, 5 at rest, t = 0..70), whose close encounters
   end in a binary and an escaping body. Close encounters need a small step where the bodies
   meet: it uses Dormand-Prince with adaptive steps when this build has it, and otherwise
   RK4 with its step reset every 20 steps to 1/500 of the closest pair's free-fall time
   (the label in the picture says which).
   Usage: three_body [OUTPUT.png]
   Build: cc -O2 -DNBODY_EX_PNG -I. examples/three_body.c -o three_body -lpng -lm */
#define _POSIX_C_SOURCE 200809L
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

static const float body_colour[3][3] = {{1.0f, 0.35f, 0.2f}, {0.3f, 1.0f, 0.35f}, {0.3f, 0.5f, 1.0f}};

/* RK4's step for state s: a fixed fraction of the shortest two-body time scale,
   min over pairs of sqrt(r^3 / (G (m_i + m_j))) (the free-fall time of the closest pair) */
static double rk4_step(const nbody_system *s) {
    double best = HUGE_VAL;
    size_t i, j;
    for (i = 0; i < s->n; ++i)
        for (j = i + 1; j < s->n; ++j) {
            double dx = (double)(s->x[j] - s->x[i]), dy = (double)(s->y[j] - s->y[i]), dz = (double)(s->z[j] - s->z[i]);
            double r = sqrt(dx * dx + dy * dy + dz * dz), tau = sqrt(r * r * r / (double)(s->m[i] + s->m[j]));
            if (tau < best) best = tau;
        }
    return 2e-3 * best;
}

/* s advanced to t_end with the best method this build offers: adaptive Dormand-Prince, or
   else RK4 restarted every 20 steps with a step from rk4_step. *sim is the running
   simulation (created on first use, NULL to start), what names the method. */
static nbody_result advance(nbody_sim **sim, nbody_system *s, double t_end, unsigned long long *steps, char *what, size_t size) {
    nbody_desc d = NBODY_ZERO;
    nbody_result r = NBODY_OK;
    d.engine = NBODY_ENGINE_SIMPLE;                     /* 3 bodies: threads would only cost */
    if (!*sim) {
        d.method = NBODY_RKDP; d.tolerance = (nbody_real)1e-13; d.dt = (nbody_real)1e-4;
        r = nbody_create(sim, &d, s);
        if (r == NBODY_OK) snprintf(what, size, "RKDP TOL 1E-13");
        if (r != NBODY_ERR_UNAVAILABLE && r != NBODY_OK) return r;
        r = NBODY_OK;
    }
    if (*sim && strcmp(what, "RK4") != 0) {
        if ((r = nbody_advance(*sim, (nbody_real)t_end)) == NBODY_OK) r = nbody_get_state(*sim, s);
        *steps = nbody_get_stats(*sim).steps;
        return r;
    }
    snprintf(what, size, "RK4");
    d.method = NBODY_RK4;
    while (r == NBODY_OK && (double)s->t < t_end) {
        double t_before = (double)s->t;
        d.dt = (nbody_real)rk4_step(s);
        nbody_destroy(*sim);
        if ((r = nbody_create(sim, &d, s)) != NBODY_OK) { *sim = NULL; break; }
        if ((r = nbody_advance(*sim, (nbody_real)fmin(t_end, (double)s->t + 20 * (double)d.dt))) == NBODY_OK)
            r = nbody_get_state(*sim, s);
        *steps += nbody_get_stats(*sim).steps;
        if (r == NBODY_OK && !((double)s->t > t_before)) r = NBODY_ERR_STEP_TOO_SMALL;   /* t no longer moves */
    }
    return r;
}

/* integrate to t_end, drawing each body's path as segments sample_dt apart into view v */
static int trace(ex_image *img, const ex_view *v, nbody_system *s, double t_end, double sample_dt, const char *name) {
    const float white[3] = {0.6f, 0.6f, 0.6f};
    nbody_sim *sim = NULL;
    unsigned long long steps = 0;
    double px[3], py[3], e0 = ex_energy(s, 1, 0);
    char method[32] = "", label[96];
    int k, i, samples = (int)ceil(t_end / sample_dt - 1e-9);
    for (i = 0; i < 3; ++i) { px[i] = (double)s->x[i]; py[i] = (double)s->y[i]; }
    for (k = 1; k <= samples; ++k) {
        nbody_result r = advance(&sim, s, fmin(t_end, k * sample_dt), &steps, method, sizeof method);
        if (r != NBODY_OK) {
            fprintf(stderr, "three_body: %s failed at t = %g: %s\n", name, (double)s->t, nbody_result_string(r));
            nbody_destroy(sim);
            return 1;
        }
        for (i = 0; i < 3; ++i) {
            ex_draw_line(img, v, px[i], py[i], (double)s->x[i], (double)s->y[i], body_colour[i], 0.6f);
            px[i] = (double)s->x[i]; py[i] = (double)s->y[i];
        }
    }
    for (i = 0; i < 3; ++i) ex_plot(img, v, px[i], py[i], body_colour[i], 40);   /* where they end */
    printf("%-12s t = %6.2f  %-15s %9llu steps  dE/E = %+.2e\n", name, (double)s->t, method,
           steps, ex_drift(s, 1, 0, e0));
    snprintf(label, sizeof label, "%s  T = 0..%.4G  %s", name, t_end, method);
    ex_draw_text(img, v->px + 12, 12, 2, label, white);
    nbody_destroy(sim);
    return 0;
}

int main(int argc, char **argv) {
    const char *out = argc > 1 ? argv[1] : "three_body.png";
    nbody_system s = NBODY_ZERO;
    ex_image img;
    ex_view v;
    int fail;
    if (ex_image_alloc(&img, 1280, 640) != 0) return 1;
    v = ex_view_whole(&img, 1.3);
    v.pw = 640;
    nbody_ic_figure_eight(&s);
    fail = trace(&img, &v, &s, 6.32591398, 0.002, "FIGURE EIGHT");
    nbody_system_free(&s);
    v.px = 640; v.half = 6; v.cy = -0.5;
    nbody_ic_pythagorean(&s);
    if (!fail) fail = trace(&img, &v, &s, 70, 0.002, "PYTHAGOREAN");
    nbody_system_free(&s);
    if (!fail && ex_write_png(&img, out, 2.0f) != 0) { fprintf(stderr, "three_body: cannot write %s\n", out); fail = 1; }
    if (!fail) printf("wrote %s\n", out);
    ex_image_free(&img);
    return fail;
}
