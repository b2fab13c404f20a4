/* star_cluster.c - a star cluster evolved towards core collapse with NBODY_HERMITE and
   individual block steps: a Plummer sphere of equal masses (Henon units) whose core
   contracts as two-body relaxation carries energy outwards, until it collapses after some
   15 to 30 half-mass relaxation times. Every output it writes a line "t r1% r5% r10% r25% r50% r75% r90% |dE/E|"
   (the Lagrangian radii: the spheres about the density centre of Casertano & Hut 1985 that
   hold those fractions of the mass) and, at the end, a picture of the radii against time in
   log scale above log10 |dE/E| (with libpng). A small softening (desc.softening) keeps the
   hard binaries that form at collapse from taking all the steps; 0 turns it off.
   Usage: star_cluster [N [T_END [DAT [PNG [SOFTENING]]]]]
          (defaults 1024, 650, star_cluster.dat, star_cluster.png, 0.004: about 30 half-mass
          relaxation times, through the collapse near t = 610, some 20 minutes on one core;
          256 stars collapse by t = 150 in two minutes: star_cluster 256 250)
   Build: cc -O2 -fopenmp -DNBODY_EX_PNG -I. examples/star_cluster.c -o star_cluster -lpng -lm */
#define _POSIX_C_SOURCE 200809L    /* example.h: clock_gettime, fileno */
#define NBODY_IMPLEMENTATION
#include "nbody.h"
#include "example.h"

#define NFRAC 7
static const double fractions[NFRAC] = {0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the density centre (Casertano & Hut 1985): positions weighted by the local density from
   each body's 6th nearest neighbour, rho_i ~ 1 / r6^3 (equal masses); O(n^2) */
static void density_centre(const nbody_system *s, double c[3]) {
    double *d2 = (double *)malloc(s->n * sizeof(double)), w, sw = 0;
    size_t i, j;
    c[0] = c[1] = c[2] = 0;
    if (!d2) return;
    for (i = 0; i < s->n; ++i) {
        for (j = 0; j < s->n; ++j) {
            double dx = (double)(s->x[j] - s->x[i]), dy = (double)(s->y[j] - s->y[i]), dz = (double)(s->z[j] - s->z[i]);
            d2[j] = dx * dx + dy * dy + dz * dz;
        }
        qsort(d2, s->n, sizeof(double), cmp_double);
        w = 1 / pow(d2[s->n > 6 ? 6 : s->n - 1] + 1e-30, 1.5);
        c[0] += w * (double)s->x[i]; c[1] += w * (double)s->y[i]; c[2] += w * (double)s->z[i];
        sw += w;
    }
    c[0] /= sw; c[1] /= sw; c[2] /= sw;
    free(d2);
}

/* the radii about the density centre holding fractions[k] of the bodies (equal masses) */
static void lagrangian_radii(const nbody_system *s, double *r) {
    double c[3], *d = (double *)malloc(s->n * sizeof(double));
    size_t i;
    int k;
    if (!d) return;
    density_centre(s, c);
    for (i = 0; i < s->n; ++i) {
        double dx = (double)s->x[i] - c[0], dy = (double)s->y[i] - c[1], dz = (double)s->z[i] - c[2];
        d[i] = sqrt(dx * dx + dy * dy + dz * dz);
    }
    qsort(d, s->n, sizeof(double), cmp_double);
    for (k = 0; k < NFRAC; ++k) r[k] = d[(size_t)(fractions[k] * (double)s->n)];
    free(d);
}

/* the picture: radii (log10 from -2 to 1) above log10 |dE/E| (-12 to -2), against time */
/* log10 r in the radii panel's range */
static double clamp_log(double r) {
    double l = log10(r);
    return l < -2 ? -2 : l > 1 ? 1 : l;
}

static void draw(const double *rows, int count, double t_end, const char *png) {
    const int W = 900, H = 700, L = 60, R = 20, T = 20, G = 40, HT = 430, HB = H - T - HT - G - 40;
    ex_image im;
    ex_view v;
    float grey[3] = {0.25f, 0.25f, 0.25f}, white[3] = {0.8f, 0.8f, 0.8f};
    int i, k, dec;
    char label[32];
    if (ex_image_alloc(&im, W, H) != 0) return;
    v = ex_view_whole(&im, H / 2.0); v.cx = W / 2.0; v.cy = H / 2.0;   /* world = pixels, y up */
    for (dec = -2; dec <= 1; ++dec) {        /* the radii panel: a line a decade */
        double y = H - T - HT + (dec + 2) / 3.0 * HT;
        ex_draw_line(&im, &v, L, y, W - R, y, grey, 1);
        snprintf(label, sizeof label, "%g", pow(10, dec));
        ex_draw_text(&im, 8, (int)(H - y) - 5, 2, label, white);
    }
    for (dec = -12; dec <= -2; dec += 2) {   /* the energy panel */
        double y = 40 + (dec + 12) / 10.0 * HB;
        ex_draw_line(&im, &v, L, y, W - R, y, grey, 1);
        snprintf(label, sizeof label, "%d", dec);
        ex_draw_text(&im, 8, (int)(H - y) - 5, 2, label, white);
    }
    for (k = 0; k <= 4; ++k) {               /* time labels */
        snprintf(label, sizeof label, "%g", t_end * k / 4);
        ex_draw_text(&im, L + k * (W - L - R) / 4 - (k == 4 ? 30 : 0), H - 34, 2, label, white);
    }
    ex_draw_text(&im, W / 2 - 80, H - 18, 2, "TIME (HENON UNITS)", white);
    ex_draw_text(&im, L + 10, T + 5, 2, "LAGRANGIAN RADII 1% 5% 10% 25% 50% 75% 90%", white);
    ex_draw_text(&im, L + 10, H - 40 - HB + 5, 2, "LOG10 ABS(DE/E)", white);
    for (i = 1; i < count; ++i) {
        const double *a = rows + (size_t)(i - 1) * (NFRAC + 2), *b = rows + (size_t)i * (NFRAC + 2);
        double xa = L + a[0] / t_end * (W - L - R), xb = L + b[0] / t_end * (W - L - R);
        for (k = 0; k < NFRAC; ++k) {
            float rgb[3];
            ex_colormap((double)k / (NFRAC - 1), rgb);
            ex_draw_line(&im, &v, xa, H - T - HT + (clamp_log(a[1 + k]) + 2) / 3 * HT, xb,
                         H - T - HT + (clamp_log(b[1 + k]) + 2) / 3 * HT, rgb, 3);
        }
        if (a[NFRAC + 1] > 0 && b[NFRAC + 1] > 0)
            ex_draw_line(&im, &v, xa, 40 + (log10(a[NFRAC + 1]) + 12) / 10 * HB, xb, 40 + (log10(b[NFRAC + 1]) + 12) / 10 * HB, white, 3);
    }
    if (ex_write_png(&im, png, 1.5f) != 0) fprintf(stderr, "star_cluster: no picture written to %s\n", png);
    ex_image_free(&im);
}

int main(int argc, char **argv) {
    size_t n = (size_t)(argc > 1 ? atol(argv[1]) : 1024);
    double t_end = argc > 2 ? atof(argv[2]) : 650, every = t_end / 200, radii[NFRAC], e0, wall0 = ex_now();
    const char *dat = argc > 3 ? argv[3] : "star_cluster.dat", *png = argc > 4 ? argv[4] : "star_cluster.png";
    nbody_system s = NBODY_ZERO;
    nbody_desc d = NBODY_ZERO;
    nbody_invariants inv;
    nbody_sim *sim;
    nbody_result r = NBODY_OK;
    double *rows;
    int count = 0, k, steps = 200;
    FILE *out;
    if (n < 16 || !(t_end > 0) || nbody_ic_plummer(&s, n, 2026) != NBODY_OK) return 1;
    d.method = NBODY_HERMITE;                  /* 4th order, block steps, eta 0.02 */
    d.softening = (nbody_real)(argc > 5 ? atof(argv[5]) : 0.004);
    rows = (double *)malloc((size_t)(steps + 1) * (NFRAC + 2) * sizeof(double));
    out = fopen(dat, "w");
    if (!rows || !out || nbody_create(&sim, &d, &s) != NBODY_OK) return 1;
    nbody_measure(&s, 1, d.softening, &inv);
    e0 = (double)inv.energy;
    fprintf(out, "# t r1%% r5%% r10%% r25%% r50%% r75%% r90%% |dE/E|   (N = %lu, Henon units)\n", (unsigned long)n);
    for (k = 0; k <= steps && r == NBODY_OK; ++k) {
        double *row = rows + (size_t)count * (NFRAC + 2);
        int j;
        if (k > 0) r = nbody_advance(sim, (nbody_real)(k * every));
        nbody_get_state(sim, &s);
        nbody_measure(&s, 1, d.softening, &inv);
        lagrangian_radii(&s, radii);
        row[0] = (double)s.t;
        for (j = 0; j < NFRAC; ++j) row[1 + j] = radii[j];
        row[NFRAC + 1] = fabs(((double)inv.energy - e0) / e0);
        fprintf(out, "%g", row[0]);
        for (j = 0; j < NFRAC + 1; ++j) fprintf(out, " %.5g", row[1 + j]);
        fprintf(out, "\n");
        fflush(out);
        ++count;
        if (k % 20 == 0)
            printf("t = %6.1f  r1%% = %.4f  r50%% = %.4f  |dE/E| = %.2e  body steps %llu  (%.0f s)\n", row[0], radii[0], radii[4],
                   row[NFRAC + 1], nbody_get_stats(sim).body_steps, ex_now() - wall0);
    }
    fclose(out);
    if (r != NBODY_OK) fprintf(stderr, "star_cluster: %s at t = %g\n", nbody_result_string(r), (double)nbody_get_stats(sim).t);
    if (ex_have_png()) draw(rows, count, t_end, png);
    nbody_destroy(sim);
    nbody_system_free(&s);
    free(rows);
    return r != NBODY_OK;
}
